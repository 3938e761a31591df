// Active-flow reports for the controller (dcbt §3.1 "active flow counting unit").
// A flow (5-tuple, IPv4 or IPv6, one flow_digest_t) is reported by a digest on its first arrival in each epoch of
// 2^flow_epoch_shift microseconds. The controller counts a flow as active while
// its last report is younger than its expiry interval (300 ms in the paper).
// It runs after the AQM, for admitted and dropped packets alike, and reports
// the routed port: D-CBT counts active flows from arrivals (dcbt §3.1), so a
// class whose packets are all dropped must not vanish from the count.
// Slots hold {crc32 signature, epoch}, indexed by the signature's low bits: two
// flows that share a slot both keep being reported (more digests, never a
// missed flow).
// Each report carries the time its packet arrived (ingress_global_timestamp,
// us since the switch started, the time its epoch is computed from): the
// controller counts a flow from when it was seen, not from when a possibly
// backlogged report was processed (mmaqm.flows.SwitchClock maps the time).
#ifndef MMAQM_FLOW_REPORT_P4
#define MMAQM_FLOW_REPORT_P4

#include <v1model.p4>
#include "../shared/headers.p4"

control FlowReport(in headers_t hdr,
                   inout local_metadata_t meta,
                   in standard_metadata_t standard_metadata) {
#include "flow_signature.p4"

    register<bit<64>>(FLOW_SLOTS) flow_slots;

    action report_first_arrival_in_epoch() {
        bit<32> epoch = (bit<32>)(standard_metadata.ingress_global_timestamp
                                  >> meta.flow_epoch_shift);
        compute_flow_signature();
        bit<32> slot = meta.flow_signature & (FLOW_SLOTS - 1);
        bit<64> stored;
        bit<64> current = meta.flow_signature ++ epoch;
        flow_slots.read(stored, slot);
        if (stored != current) {
            flow_slots.write(slot, current);
            // One digest call for both families (p4c copies every member into a
            // PHV field, per call). The family selects by multiplying with a
            // header's validity rather than by ?:, which p4c lowers to one more
            // PHV field per member; evaluated only when a report is sent, and
            // exact whatever an invalid header's fields hold.
            digest<flow_digest_t>(FLOW_DIGEST_RECEIVER, {
                meta.routed_port, (bit<8>)meta.class_id,
                (bit<128>)(bit<1>)hdr.ipv6.isValid() * hdr.ipv6.src_addr
                    + (bit<128>)(bit<1>)hdr.ipv4.isValid() * (bit<128>)hdr.ipv4.src_addr,
                (bit<128>)(bit<1>)hdr.ipv6.isValid() * hdr.ipv6.dst_addr
                    + (bit<128>)(bit<1>)hdr.ipv4.isValid() * (bit<128>)hdr.ipv4.dst_addr,
                meta.ip_proto, meta.l4_src_port, meta.l4_dst_port,
                standard_metadata.ingress_global_timestamp,
                8w4 + ((bit<8>)(bit<1>)hdr.ipv6.isValid() << 1) });
        }
    }

    apply {
        if (meta.flow_epoch_shift != 0) {
            report_first_arrival_in_epoch();
        }
    }
}

#endif
