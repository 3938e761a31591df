// Class-Based Threshold (cbt §3, §4.1-4.2): two port_policy actions.
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

// The class threshold test of a UDP packet (cbt §3).
action cbt_class_test(inout local_metadata_t meta, in shift_t ewma_shift,
                      in scaled_t tagged_th_scaled, in scaled_t untagged_th_scaled) {
    scaled_t class_avg;
    class_average_update(meta, meta.class_id, meta.occupancy.class_pkts, ewma_shift, class_avg);
    scaled_t threshold = meta.class_id == traffic_class_t.TAGGED ? tagged_th_scaled
                                                                 : untagged_th_scaled;
    if (class_avg > threshold) {
        aqm_drop(meta, drop_reason_t.CLASS_THRESHOLD);
    }
}

// port_policy action: CBT with RED for all.
action cbt_red_all(inout local_metadata_t meta, inout standard_metadata_t standard_metadata,
                   pkts_t queue_limit_pkts, shift_t flow_epoch_shift,
                   policy_epoch_t policy_epoch, shift_t ewma_shift,
                   scaled_t min_th_scaled, scaled_t max_th_scaled, q24_t red_slope_q24,
                   scaled_t tagged_th_scaled, scaled_t untagged_th_scaled) {
    queue_arrival(meta, flow_epoch_shift);
    red_on_policy_epoch(meta, policy_epoch);
    if (meta.class_id != traffic_class_t.TCP) {
        cbt_class_test(meta, ewma_shift, tagged_th_scaled, untagged_th_scaled);
    }
    if (!meta.aqm_drop) {
        red_average_update(meta, meta.occupancy.queue_pkts, ewma_shift);
        red_drop_test(meta, min_th_scaled, max_th_scaled, red_slope_q24);
    }
    queue_admit_or_drop(meta, standard_metadata, queue_limit_pkts);
}

// port_policy action: CBT with RED for TCP only. A TCP packet's own class
// occupancy is the TCP occupancy RED averages here (cbt §3).
action cbt_red_tcp_only(inout local_metadata_t meta, inout standard_metadata_t standard_metadata,
                        pkts_t queue_limit_pkts, shift_t flow_epoch_shift,
                        policy_epoch_t policy_epoch, shift_t ewma_shift,
                        scaled_t min_th_scaled, scaled_t max_th_scaled, q24_t red_slope_q24,
                        scaled_t tagged_th_scaled, scaled_t untagged_th_scaled) {
    queue_arrival(meta, flow_epoch_shift);
    red_on_policy_epoch(meta, policy_epoch);
    if (meta.class_id != traffic_class_t.TCP) {
        cbt_class_test(meta, ewma_shift, tagged_th_scaled, untagged_th_scaled);
    } else {
        red_average_update(meta, meta.occupancy.class_pkts, ewma_shift);
        red_drop_test(meta, min_th_scaled, max_th_scaled, red_slope_q24);
    }
    queue_admit_or_drop(meta, standard_metadata, queue_limit_pkts);
}

#endif
