// Cut-In Packet Scheduling, ChIPS (dcbt §3.2), on top of D-CBT: DCBT_CHIPS.
//
// dcbt §3.2: "ChIPS monitors the average enqueue rates of tagged and the other
// flows, and is activated when the tagged flows are using a relatively smaller
// fraction of bandwidth than the TCP flows. On transient congestion in which
// the queue length is greater than the average queue length, ChIPS awards
// tagged flows by allowing their packets to cut in the line of queue."
//   * the average enqueue ratio: an EWMA, per port and per admitted packet, of
//     the tagged share of enqueues, s <- s + (tagged - s) * 2^-chips_ewma_shift
//     (a ratio tagged/other of r is a share r / (1 + r)); ChIPS is on while
//     s <= chips_tagged_share_limit_q16 (the paper's 50 % ratio: share 1/3);
//   * transient congestion: the queue the packet finds is above the RED average;
//   * the cut-in: BMv2 has no insert at a queue position. The packet goes to
//     the traffic manager's higher-priority queue (PRIORITY_CUT_IN), so it
//     leaves before every queued FIFO packet, not after avg of them: it
//     overtakes more than the paper's insert does (docs/algorithms/chips.md).
//   * the link rate stays the link rate: BMv2's priority queues each have their
//     own rate limiter, which fixes a packet's departure time when it is queued.
//     A clone of the cut-in packet (CHIPS_CLONE_SESSION_BASE + port, to the same
//     port) enters the FIFO queue where the packet would have been and is
//     dropped in egress when its turn comes: it spends the FIFO departure slot
//     the packet used, so the FIFO's schedule is exactly the one without cut-in
//     and the port's departures stay at the link rate (measured by
//     topologies/tests/test_chips_rate.py);
//   * the virtual FIFO (dcbt §3.2 "we used a virtual FIFO queue for counting
//     the number of enqueued packets for the UDP classes"): the same clone is
//     the packet's place in the FIFO, so the packet's class count drops when
//     the clone leaves (egress, chips_slot_departure), not when the packet
//     does: cutting in never makes the tagged class look smaller to D-CBT.
#ifndef MMAQM_CHIPS_P4
#define MMAQM_CHIPS_P4

#include <v1model.p4>
#include "dcbt.p4"

counter(NUM_PORTS * NUM_CHIPS_EVENTS, CounterType.packets_and_bytes) chips_events;

control DcbtChips(inout headers_t hdr, inout local_metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    Dcbt() dcbt;

    @hidden
    action chips_schedule() {
        q16_t tagged_share_q16;
        chips_tagged_share_q16.read(tagged_share_q16, meta.port_index);
        tagged_share_q16 = ewma(tagged_share_q16,
                                meta.class_id == traffic_class_t.TAGGED ? PROB_ONE : 0,
                                meta.policy.chips_ewma_shift);
        chips_tagged_share_q16.write(meta.port_index, tagged_share_q16);
        bit<32> base = meta.port_index * NUM_CHIPS_EVENTS;
        if (tagged_share_q16 > meta.policy.chips_tagged_share_limit_q16) {
            chips_events.count(base + CHIPS_OFF_ADMITS);
        } else {
            chips_events.count(base + CHIPS_ON_ADMITS);
            if (meta.class_id == traffic_class_t.TAGGED) {
                // The queue ahead of the packet (admission counted it in).
                if (to_scaled(meta.occupancy.queue_pkts - 1) > meta.red_avg_scaled) {
                    meta.cut_in = true;
                    standard_metadata.priority = PRIORITY_CUT_IN;
                    clone_preserving_field_list(CloneType.I2E,
                                                CHIPS_CLONE_SESSION_BASE + meta.port_index,
                                                CHIPS_SLOT_FIELD_LIST);
                    chips_events.count(base + CHIPS_CUT_IN);
                } else {
                    chips_events.count(base + CHIPS_NO_CONGESTION);
                }
            }
        }
    }

    apply {
        dcbt.apply(hdr, meta, standard_metadata);
        if (meta.admitted) {
            chips_schedule();
        }
    }
}

// Egress: the FIFO slot of a cut-in packet left (the clone, which carries only
// the CHIPS_SLOT_FIELD_LIST fields): release the packet's class count. The
// caller drops the clone.
action chips_slot_departure(in bit<32> port_index, in bit<32> class_index) {
    pkts_t per_class;
    class_queue_pkts.read(per_class, class_index);
    class_queue_pkts.write(class_index, per_class - 1);
    chips_events.count(port_index * NUM_CHIPS_EVENTS + CHIPS_SLOT_DEPARTED);
}

#endif
