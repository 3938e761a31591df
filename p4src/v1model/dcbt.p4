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

control Dcbt(inout headers_t hdr, inout local_metadata_t meta,
             inout standard_metadata_t standard_metadata) {
#include "occupancy_steps.p4"

    @hidden  // applied by the control, never by the controller: not in the P4Info
    action dcbt_admission() {
        queue_arrival();
        red_on_policy_epoch(meta.port_index, meta.policy.policy_epoch);
        bool idled;
        bit<64> idle_halvings_q32;
        red_average_update(meta.port_index, meta.occupancy.queue_pkts, meta.occupancy.queue_pkts,
                           standard_metadata.ingress_global_timestamp, meta.policy.ewma_shift,
                           meta.policy.idle_decay_q32, meta.red_avg_scaled,
                           idled, idle_halvings_q32);

        bit<32> base = meta.port_index * CLASS_SLOTS;
        pkts_t tcp_pkts;
        pkts_t tagged_pkts;
        pkts_t untagged_pkts;
        class_queue_pkts.read(tcp_pkts, base + (bit<32>)(bit<8>)traffic_class_t.TCP);
        class_queue_pkts.read(tagged_pkts, base + (bit<32>)(bit<8>)traffic_class_t.TAGGED);
        class_queue_pkts.read(untagged_pkts, base + (bit<32>)(bit<8>)traffic_class_t.UNTAGGED);
        scaled_t tagged_avg;
        scaled_t untagged_avg;
        class_average_update(meta.port_index, traffic_class_t.TAGGED, tagged_pkts,
                             meta.policy.ewma_shift, idled, idle_halvings_q32, tagged_avg);
        class_average_update(meta.port_index, traffic_class_t.UNTAGGED, untagged_pkts,
                             meta.policy.ewma_shift, idled, idle_halvings_q32, untagged_avg);

        if (meta.red_avg_scaled > meta.policy.min_th_scaled) {
            if (meta.class_id == traffic_class_t.TAGGED) {
                scaled_t tagged_th_scaled = (bit<32>)(((bit<64>)meta.red_avg_scaled
                        * (bit<64>)meta.policy.tagged_share_q16) >> PROB_FRAC_BITS);
                if (tagged_avg > tagged_th_scaled) {
                    meta.aqm_drop = true;
                    meta.drop_reason = drop_reason_t.CLASS_THRESHOLD;
                }
            } else if (meta.class_id == traffic_class_t.UNTAGGED) {
                if (untagged_avg > meta.policy.untagged_th_scaled) {
                    meta.aqm_drop = true;
                    meta.drop_reason = drop_reason_t.CLASS_THRESHOLD;
                }
            }
        }
        if (!meta.aqm_drop) {
            red_drop_test(meta.port_index, meta.red_avg_scaled, meta.policy.min_th_scaled,
                          meta.policy.max_th_scaled, meta.policy.red_slope_q24,
                          meta.policy.gentle, meta.policy.max_p_q16,
                          meta.policy.gentle_slope_q24, meta.policy.ecn, meta.policy.harddrop,
                          meta.policy.wait, hdr.ipv4.ecn != ECN_NOT_ECT,
                          meta.aqm_drop, meta.drop_reason, meta.ecn_mark);
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
        if (meta.aqm_drop) {
            mark_to_drop(standard_metadata);
        }
        if (meta.ecn_mark) {
            hdr.ipv4.ecn = ECN_CE;
        }
    }

    apply {
        dcbt_admission();
    }
}

#endif
