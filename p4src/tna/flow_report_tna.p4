// Active-flow reports on Tofino (flow_report.p4 on v1model; dcbt §3.1).
// Same slots {crc32 signature, epoch}, same digest; differences:
//  * a Register of {signature, epoch} pairs, compared and replaced by one
//    RegisterAction (v1model: bit<64> read, compare, write);
//  * the signature is the Hash extern's CRC32 of the same 13 bytes;
//  * Tofino's global timestamp counts nanoseconds: an epoch of 2^k us is
//    2^(k+10) ns here (1.024 us units, epochs 2.4 % longer), and the run-time
//    shift is a const table with one action per shift amount (no variable
//    shift in a Tofino ALU);
//  * the digest is emitted by the ingress deparser (Digest extern) from
//    md.digest when md's digest_type is TNA_DIGEST_FLOW.
#ifndef MMAQM_FLOW_REPORT_TNA_P4
#define MMAQM_FLOW_REPORT_TNA_P4

#include "tna_types.p4"

struct flow_slot_t {
    bit<32> signature;
    bit<32> epoch;
}

control TnaFlowReport(in headers_t hdr, inout tna_ingress_metadata_t md,
                      in bit<48> now_ns,
                      inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Register<flow_slot_t, tna_index_t>(FLOW_SLOTS) flow_slots;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) flow_hash;

    RegisterAction<flow_slot_t, tna_index_t, bit<1>>(flow_slots) first_in_epoch = {
        void apply(inout flow_slot_t value, out bit<1> first) {
            if (value.signature != md.flow_signature || value.epoch != md.flow_epoch) {
                value.signature = md.flow_signature;
                value.epoch = md.flow_epoch;
                first = 1;
            } else {
                first = 0;
            }
        }
    };

#define MMAQM_EPOCH(k) action epoch_##k() { md.flow_epoch = (bit<32>)(now_ns >> (k + 10)); }
    MMAQM_EPOCH(1) MMAQM_EPOCH(2) MMAQM_EPOCH(3) MMAQM_EPOCH(4) MMAQM_EPOCH(5)
    MMAQM_EPOCH(6) MMAQM_EPOCH(7) MMAQM_EPOCH(8) MMAQM_EPOCH(9) MMAQM_EPOCH(10)
    MMAQM_EPOCH(11) MMAQM_EPOCH(12) MMAQM_EPOCH(13) MMAQM_EPOCH(14) MMAQM_EPOCH(15)
    MMAQM_EPOCH(16) MMAQM_EPOCH(17) MMAQM_EPOCH(18) MMAQM_EPOCH(19) MMAQM_EPOCH(20)
    MMAQM_EPOCH(21) MMAQM_EPOCH(22) MMAQM_EPOCH(23) MMAQM_EPOCH(24) MMAQM_EPOCH(25)
    MMAQM_EPOCH(26) MMAQM_EPOCH(27) MMAQM_EPOCH(28) MMAQM_EPOCH(29) MMAQM_EPOCH(30)
    MMAQM_EPOCH(31)
#undef MMAQM_EPOCH
    action no_reports() {}

    @hidden
    table flow_epoch {
        key = { md.base.flow_epoch_shift : exact; }
        actions = {
            epoch_1; epoch_2; epoch_3; epoch_4; epoch_5; epoch_6; epoch_7; epoch_8;
            epoch_9; epoch_10; epoch_11; epoch_12; epoch_13; epoch_14; epoch_15; epoch_16;
            epoch_17; epoch_18; epoch_19; epoch_20; epoch_21; epoch_22; epoch_23; epoch_24;
            epoch_25; epoch_26; epoch_27; epoch_28; epoch_29; epoch_30; epoch_31; no_reports;
        }
        const entries = {
            1 : epoch_1(); 2 : epoch_2(); 3 : epoch_3(); 4 : epoch_4(); 5 : epoch_5();
            6 : epoch_6(); 7 : epoch_7(); 8 : epoch_8(); 9 : epoch_9(); 10 : epoch_10();
            11 : epoch_11(); 12 : epoch_12(); 13 : epoch_13(); 14 : epoch_14(); 15 : epoch_15();
            16 : epoch_16(); 17 : epoch_17(); 18 : epoch_18(); 19 : epoch_19(); 20 : epoch_20();
            21 : epoch_21(); 22 : epoch_22(); 23 : epoch_23(); 24 : epoch_24(); 25 : epoch_25();
            26 : epoch_26(); 27 : epoch_27(); 28 : epoch_28(); 29 : epoch_29(); 30 : epoch_30();
            31 : epoch_31();
        }
        const default_action = no_reports();
        size = 32;
    }

    apply {
        if (md.base.flow_epoch_shift != 0) {
            md.flow_signature = flow_hash.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                                                hdr.ipv4.protocol, md.base.l4_src_port,
                                                md.base.l4_dst_port });
            flow_epoch.apply();
            if (first_in_epoch.execute(md.flow_signature & (FLOW_SLOTS - 1)) == 1) {
                ig_dprsr_md.digest_type = TNA_DIGEST_FLOW;
                md.digest.egress_port = md.base.routed_port;
                md.digest.class_id = (bit<8>)md.base.class_id;
                md.digest.src_addr = hdr.ipv4.src_addr;
                md.digest.dst_addr = hdr.ipv4.dst_addr;
                md.digest.protocol = hdr.ipv4.protocol;
                md.digest.src_port = md.base.l4_src_port;
                md.digest.dst_port = md.base.l4_dst_port;
                // v1model reports microseconds; Tofino's timestamp is in ns and a
                // divide by 1000 is not available: units of 1.024 us (the driver
                // must scale by 1.024 on TNA; README "Tofino (TNA)")
                md.digest.ingress_ts_us = now_ns >> 10;
            }
        }
    }
}

#endif
