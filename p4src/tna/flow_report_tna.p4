// Active-flow reports on Tofino (flow_report.p4 on v1model; dcbt §3.1).
// Same slots {crc32 signature, epoch}, same digest; differences:
//  * a Register of {signature, epoch} pairs, compared and replaced by one
//    RegisterAction (v1model: bit<64> read, compare, write);
//  * the signature is the Hash extern's CRC32 of the same 13 bytes for IPv4;
//    for IPv6 the CRC32 of the 37 bytes {source, destination, protocol, L4
//    ports} with the full addresses: v1model folds each address to 32 bits
//    with multiplications (flow_signature.p4), which a Tofino hash unit
//    (GF(2)-linear) cannot compute, so an IPv6 flow's signature and slots
//    differ from v1model's (docs/tofino.md);
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

// The flow's signature and slot, and the clock: hashes of the packet alone,
// applied to every packet before the AQM (main.p4), so that they take no stage
// of the AQM's chain.
control TnaFlowSignature(in headers_t hdr, inout tna_ingress_metadata_t md, in bit<48> now_ns) {
    Hash<bit<32>>(HashAlgorithm_t.CRC32) flow_hash;
#ifdef MMAQM_HAS_IPV6
    Hash<bit<32>>(HashAlgorithm_t.CRC32) flow_hash6;
#endif
    // now in units of 1.024 us, 32 bits (wraps after 73 min): bits 41..10 of the
    // ns timestamp, picked by an identity hash (a shift of the 48-bit timestamp
    // by 31 different amounts cannot be placed in PHV)
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) now_hash;

    // one action each: an action gets 32 bits of hash output
    action take_signature() {
        md.flow_signature = flow_hash.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                                            hdr.ipv4.protocol, md.base.l4_src_port,
                                            md.base.l4_dst_port });
    }
#ifdef MMAQM_HAS_IPV6
    // IPv6: the protocol after the extension headers (the parser's ip_proto)
    action take_signature6() {
        md.flow_signature = flow_hash6.get({ hdr.ipv6.src_addr, hdr.ipv6.dst_addr,
                                             md.base.ip_proto, md.base.l4_src_port,
                                             md.base.l4_dst_port });
    }
#endif
    action take_now() { md.now_1024ns = now_hash.get({ now_ns[41:10] }); }
    @hidden table flow_signature {
        actions = { take_signature; }
        const default_action = take_signature();
        size = 1;
    }
#ifdef MMAQM_HAS_IPV6
    @hidden table flow_signature6 {
        actions = { take_signature6; }
        const default_action = take_signature6();
        size = 1;
    }
#endif
    @hidden table now_clock {
        actions = { take_now; }
        const default_action = take_now();
        size = 1;
    }

    apply {
#ifdef MMAQM_HAS_IPV6
        if (hdr.ipv6.isValid()) {
            flow_signature6.apply();
        } else
#endif
        {
            flow_signature.apply();
        }
        now_clock.apply();
    }
}

// The report itself (flow_report.p4): the first packet of a flow in an epoch
// of 2^flow_epoch_shift units raises a digest. Applied by TnaAqm after
// port_policy, which gives the shift.
control TnaFlowReport(in headers_t hdr, inout tna_ingress_metadata_t md,
                      inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    // index: the signature's low 16 bits (CRC32 mod FLOW_SLOTS, as v1model's slot)
    Register<flow_slot_t, bit<16>>(FLOW_SLOTS) flow_slots;

    // Its output is the digest type itself (TNA_DIGEST_FLOW for the first packet
    // of the flow in the epoch, else 0): no stage of gateways after it.
    RegisterAction<flow_slot_t, bit<16>, DigestType_t>(flow_slots) first_in_epoch = {
        void apply(inout flow_slot_t value, out DigestType_t digest_type) {
            if (value.signature != md.flow_signature || value.epoch != md.flow_epoch) {
                value.signature = md.flow_signature;
                value.epoch = md.flow_epoch;
                digest_type = TNA_DIGEST_FLOW;
            } else {
                digest_type = 0;
            }
        }
    };

    // the epoch: the clock >> flow_epoch_shift, one action per shift amount
#define MMAQM_EPOCH(k) action epoch_##k() { md.flow_epoch = md.now_1024ns >> k; }
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
            flow_epoch.apply();
            ig_dprsr_md.digest_type = first_in_epoch.execute(md.flow_signature[15:0]);
            // the digest's fields, whatever the verdict (the deparser packs them
            // only when digest_type says so)
            md.digest.egress_port = md.base.routed_port;
            md.digest.class_id = (bit<8>)md.base.class_id;
            // either family in one digest (headers.p4 flow_digest_t): an IPv4
            // address zero-extended, the family in ip_version
#ifdef MMAQM_HAS_IPV6
            if (hdr.ipv6.isValid()) {
                md.digest.src_addr = hdr.ipv6.src_addr;
                md.digest.dst_addr = hdr.ipv6.dst_addr;
                md.digest.ip_version = 6;
            } else {
                md.digest.src_addr = (ipv6_addr_t)hdr.ipv4.src_addr;
                md.digest.dst_addr = (ipv6_addr_t)hdr.ipv4.dst_addr;
                md.digest.ip_version = 4;
            }
            md.digest.protocol = md.base.ip_proto;
#else
            // (the FRED and UPTA builds: IPv4 only, IPv4's digest form)
            md.digest.src_addr = hdr.ipv4.src_addr;
            md.digest.dst_addr = hdr.ipv4.dst_addr;
            md.digest.protocol = hdr.ipv4.protocol;
#endif
            md.digest.src_port = md.base.l4_src_port;
            md.digest.dst_port = md.base.l4_dst_port;
            // v1model reports microseconds; Tofino's timestamp is in ns and a
            // divide by 1000 is not available: units of 1.024 us (the driver
            // must scale by 1.024 on TNA; docs/tofino.md)
            md.digest.ingress_ts_us = (bit<48>)md.now_1024ns;
        }
    }
}

#endif
