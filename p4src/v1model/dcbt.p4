// Dynamic Class-Based Threshold (dcbt §3.1).
// Every arrival updates the RED average and both UDP class averages with the
// same weight (synchronised updates). While red_avg > min_th, UDP packets face
// a class threshold test:
//   tagged   : tagged_avg   > red_avg * share_tagged                   -> drop
//   untagged : untagged_avg > share_untagged * (min_th + max_p * (max_th - min_th))
// share_c = n_c / n_all comes from the controller's active-flow counts. The
// untagged threshold changes only when shares change, so the controller
// computes it (untagged_th_scaled); the tagged one moves with red_avg and is
// computed here. Survivors go on to the RED test.
// The class occupancies are those of the virtual FIFO (occupancy.p4), so the
// same control serves D-CBT with ChIPS (chips.p4), which applies it first.
#ifndef MMAQM_DCBT_P4
#define MMAQM_DCBT_P4

#include <v1model.p4>
#include "averages.p4"
#include "red.p4"
#include "tag_guard.p4"

control Dcbt(inout headers_t hdr, inout local_metadata_t meta,
             inout standard_metadata_t standard_metadata) {
#include "occupancy_steps.p4"
#include "red_steps.p4"
// The tagged class threshold, red_avg * share_tagged (dcbt §3.1).
#ifndef DCBT_TAGGED_TH_SCALED
#define DCBT_TAGGED_TH_SCALED \
    (bit<32>)(((bit<64>)meta.red_avg_scaled * (bit<64>)meta.policy.tagged_share_q16) \
              >> PROB_FRAC_BITS)
#endif
#include "tag_guard_steps.p4"

    @hidden  // applied by the control, never by the controller: not in the P4Info
    action dcbt_admission() {
        queue_arrival();
        red_on_policy_epoch();
        red_average_update(meta.occupancy.queue_pkts);

        pkts_t tcp_pkts;
        pkts_t tagged_pkts;
        pkts_t untagged_pkts;
        class_queue_pkts.read(tcp_pkts,
                              meta.port_index * CLASS_SLOTS + (bit<32>)(bit<8>)traffic_class_t.TCP);
        class_queue_pkts.read(tagged_pkts,
                              meta.port_index * CLASS_SLOTS
                              + (bit<32>)(bit<8>)traffic_class_t.TAGGED);
        class_queue_pkts.read(untagged_pkts,
                              meta.port_index * CLASS_SLOTS
                              + (bit<32>)(bit<8>)traffic_class_t.UNTAGGED);
        // Both class averages move with every arrival; a packet is tested
        // against its own class's, while the RED average is above min_th.
        bool congested = meta.red_avg_scaled > meta.policy.min_th_scaled;
        class_average_update(traffic_class_t.TAGGED, tagged_pkts);
        // A tagged packet that its class test did not drop faces the tag guard
        // when it is on, congested or not: a rate bound must hold at all times
        // (tag_guard.p4).
        if (meta.class_id == traffic_class_t.TAGGED) {
            if (congested && meta.red.class_avg_scaled > DCBT_TAGGED_TH_SCALED) {
                meta.aqm_drop = true;
                meta.drop_reason = drop_reason_t.CLASS_THRESHOLD;
            } else if (meta.policy.tag_guard_interval_us != 0) {
                tag_guard_test();
            }
        }
        class_average_update(traffic_class_t.UNTAGGED, untagged_pkts);
        if (congested && meta.class_id == traffic_class_t.UNTAGGED
            && meta.red.class_avg_scaled > meta.policy.untagged_th_scaled) {
            meta.aqm_drop = true;
            meta.drop_reason = drop_reason_t.CLASS_THRESHOLD;
        }
        if (!meta.aqm_drop) {
            red_drop_test();
        }
        // The queue limit holds for the virtual FIFO too: under ChIPS it is the
        // traffic manager's FIFO queue (packets plus cut-in slots), which must
        // never overflow (a traffic-manager drop is invisible to the program).
        // Without ChIPS the two occupancies are equal.
        if (!meta.aqm_drop && tcp_pkts + tagged_pkts + untagged_pkts
                              >= meta.policy.queue_limit_pkts) {
            meta.aqm_drop = true;
            meta.drop_reason = drop_reason_t.QUEUE_LIMIT;
        }
        queue_admit_or_drop();
        if (meta.tag_guard_slot != 0) {
            tag_guard_admit();
        }
        if (meta.aqm_drop) {
            mark_to_drop(standard_metadata);
        }
        if (meta.ecn_mark) {
            hdr.ipv4.ecn = ECN_CE;   // the invalid family's write is never emitted
            hdr.ipv6.ecn = ECN_CE;
        }
    }

    apply {
        dcbt_admission();
    }
}

#endif
