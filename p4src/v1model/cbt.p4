// Class-Based Threshold (cbt §3, §4.1-4.2): two algorithms, one control each.
// Static thresholds on the weighted average number of enqueued packets of the
// tagged and untagged UDP classes. A class average is updated on arrivals of
// that class only, as published (dcbt §6.1 calls this "unsynchronized").
// A UDP packet whose class average exceeds its threshold is dropped. Otherwise:
//   CBT with RED for all      : it goes on to the RED test; RED's average counts
//                               every packet that reaches the RED unit (TCP and
//                               threshold survivors);
//   CBT with RED for TCP only : it is enqueued; only TCP is RED-tested and
//                               RED's average counts TCP packets only.
#ifndef MMAQM_CBT_P4
#define MMAQM_CBT_P4

#include <v1model.p4>
#include "averages.p4"
#include "red.p4"

// The class threshold test of a UDP packet (cbt §3): its own class average,
// updated with its class occupancy, against its class threshold.
action cbt_class_test(in bit<32> port_index, in traffic_class_t class_id,
                      in pkts_t class_pkts, in shift_t ewma_shift,
                      in scaled_t tagged_th_scaled, in scaled_t untagged_th_scaled,
                      inout bool aqm_drop, inout drop_reason_t drop_reason) {
    scaled_t class_avg;
    class_average_update(port_index, class_id, class_pkts, ewma_shift, false, 0, class_avg);
    scaled_t threshold = class_id == traffic_class_t.TAGGED ? tagged_th_scaled
                                                            : untagged_th_scaled;
    if (class_avg > threshold) {
        aqm_drop = true;
        drop_reason = drop_reason_t.CLASS_THRESHOLD;
    }
}

#ifdef MMAQM_HAS_CBT_RED_ALL
// CBT with RED for all.
control CbtRedAll(inout headers_t hdr, inout local_metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
#include "occupancy_steps.p4"

    @hidden  // applied by the control, never by the controller: not in the P4Info
    action cbt_red_all_admission() {
        queue_arrival();
        red_on_policy_epoch(meta.port_index, meta.policy.policy_epoch);
        if (meta.class_id != traffic_class_t.TCP) {
            cbt_class_test(meta.port_index, meta.class_id, meta.occupancy.class_pkts,
                           meta.policy.ewma_shift, meta.policy.tagged_th_scaled,
                           meta.policy.untagged_th_scaled, meta.aqm_drop, meta.drop_reason);
        }
        if (!meta.aqm_drop) {
            bool idled;
            bit<64> idle_halvings_q32;
            red_average_update(meta.port_index, meta.occupancy.queue_pkts,
                               meta.occupancy.queue_pkts,
                               standard_metadata.ingress_global_timestamp,
                               meta.policy.ewma_shift, meta.policy.idle_decay_q32,
                               meta.red_avg_scaled, idled, idle_halvings_q32);
            red_drop_test(meta.port_index, meta.red_avg_scaled, meta.policy.min_th_scaled,
                          meta.policy.max_th_scaled, meta.policy.red_slope_q24,
                          meta.policy.gentle, meta.policy.max_p_q16,
                          meta.policy.gentle_slope_q24, meta.policy.ecn, meta.policy.harddrop,
                          meta.policy.wait, hdr.ipv4.ecn != ECN_NOT_ECT,
                          meta.aqm_drop, meta.drop_reason, meta.ecn_mark);
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
        cbt_red_all_admission();
    }
}
#endif

#ifdef MMAQM_HAS_CBT_RED_TCP_ONLY
// CBT with RED for TCP only. A TCP packet's own class occupancy is the TCP
// occupancy RED averages here (cbt §3).
control CbtRedTcpOnly(inout headers_t hdr, inout local_metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
#include "occupancy_steps.p4"

    @hidden  // applied by the control, never by the controller: not in the P4Info
    action cbt_red_tcp_only_admission() {
        queue_arrival();
        red_on_policy_epoch(meta.port_index, meta.policy.policy_epoch);
        if (meta.class_id != traffic_class_t.TCP) {
            cbt_class_test(meta.port_index, meta.class_id, meta.occupancy.class_pkts,
                           meta.policy.ewma_shift, meta.policy.tagged_th_scaled,
                           meta.policy.untagged_th_scaled, meta.aqm_drop, meta.drop_reason);
        } else {
            bool idled;
            bit<64> idle_halvings_q32;
            red_average_update(meta.port_index, meta.occupancy.class_pkts,
                               meta.occupancy.queue_pkts,
                               standard_metadata.ingress_global_timestamp,
                               meta.policy.ewma_shift, meta.policy.idle_decay_q32,
                               meta.red_avg_scaled, idled, idle_halvings_q32);
            red_drop_test(meta.port_index, meta.red_avg_scaled, meta.policy.min_th_scaled,
                          meta.policy.max_th_scaled, meta.policy.red_slope_q24,
                          meta.policy.gentle, meta.policy.max_p_q16,
                          meta.policy.gentle_slope_q24, meta.policy.ecn, meta.policy.harddrop,
                          meta.policy.wait, hdr.ipv4.ecn != ECN_NOT_ECT,
                          meta.aqm_drop, meta.drop_reason, meta.ecn_mark);
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
        cbt_red_tcp_only_admission();
    }
}
#endif

#endif
