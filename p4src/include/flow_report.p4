// Active-flow reports for the controller (dcbt §3.1 "active flow counting unit").
// A flow (5-tuple) is reported by a digest on its first arrival in each epoch of
// 2^flow_epoch_shift microseconds. The controller counts a flow as active while
// its last report is younger than its expiry interval (300 ms in the paper).
// Slots hold {crc32 signature, epoch}: two flows that share a slot both keep
// being reported (more digests, never a missed flow).
#ifndef MMAQM_FLOW_REPORT_P4
#define MMAQM_FLOW_REPORT_P4

#include <v1model.p4>
#include "headers.p4"

control FlowReport(in headers_t hdr,
                   in local_metadata_t meta,
                   in standard_metadata_t standard_metadata) {
    register<bit<64>>(FLOW_SLOTS) flow_slots;

    apply {
        if (meta.policy.flow_epoch_shift != 0) {
            bit<32> epoch = (bit<32>)(standard_metadata.ingress_global_timestamp
                                      >> meta.policy.flow_epoch_shift);
            bit<16> slot;
            bit<32> signature;
            hash(slot, HashAlgorithm.crc16, (bit<16>)0,
                 { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                   meta.l4_src_port, meta.l4_dst_port }, (bit<32>)FLOW_SLOTS);
            hash(signature, HashAlgorithm.crc32, (bit<32>)0,
                 { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                   meta.l4_src_port, meta.l4_dst_port }, (bit<64>)0x100000000);
            bit<64> stored;
            bit<64> current = signature ++ epoch;
            flow_slots.read(stored, (bit<32>)slot);
            if (stored != current) {
                flow_slots.write((bit<32>)slot, current);
                digest<flow_digest_t>(FLOW_DIGEST_RECEIVER, {
                    standard_metadata.egress_spec, meta.class_id,
                    hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                    meta.l4_src_port, meta.l4_dst_port });
            }
        }
    }
}

#endif
