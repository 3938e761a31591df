// Dynamic Class-Based Threshold (dcbt §3.1): the dcbt port_policy action.
// Every arrival updates the RED average and both UDP class averages with the
// same weight (synchronised updates). While red_avg > min_th, UDP packets face
// a class threshold test:
//   tagged   : tagged_avg   > red_avg * share_tagged                   -> drop
//   untagged : untagged_avg > share_untagged * (min_th + max_p * (max_th - min_th))
// share_c = n_c / n_all comes from the controller's active-flow counts. The
// untagged threshold changes only when shares change, so the controller
// computes it (untagged_th_scaled); the tagged one moves with red_avg and is
// computed here. Survivors go on to the RED test.
#ifndef MMAQM_DCBT_P4
#define MMAQM_DCBT_P4

#include <v1model.p4>
#include "averages.p4"
#include "red.p4"

action dcbt(inout local_metadata_t meta, inout standard_metadata_t standard_metadata,
            pkts_t queue_limit_pkts, shift_t flow_epoch_shift,
            policy_epoch_t policy_epoch, shift_t ewma_shift,
            scaled_t min_th_scaled, scaled_t max_th_scaled, q24_t red_slope_q24,
            q16_t tagged_share_q16, scaled_t untagged_th_scaled) {
    queue_arrival(meta, flow_epoch_shift);
    red_on_policy_epoch(meta, policy_epoch);
    red_average_update(meta, meta.occupancy.queue_pkts, ewma_shift);

    bit<32> base = meta.port_index * CLASS_SLOTS;
    pkts_t tagged_pkts;
    pkts_t untagged_pkts;
    class_queue_pkts.read(tagged_pkts, base + (bit<32>)(bit<8>)traffic_class_t.TAGGED);
    class_queue_pkts.read(untagged_pkts, base + (bit<32>)(bit<8>)traffic_class_t.UNTAGGED);
    scaled_t tagged_avg;
    scaled_t untagged_avg;
    class_average_update(meta, traffic_class_t.TAGGED, tagged_pkts, ewma_shift, tagged_avg);
    class_average_update(meta, traffic_class_t.UNTAGGED, untagged_pkts, ewma_shift, untagged_avg);

    if (meta.red_avg_scaled > min_th_scaled) {
        if (meta.class_id == traffic_class_t.TAGGED) {
            scaled_t tagged_th_scaled = (bit<32>)(((bit<64>)meta.red_avg_scaled
                    * (bit<64>)tagged_share_q16) >> PROB_FRAC_BITS);
            if (tagged_avg > tagged_th_scaled) {
                aqm_drop(meta, drop_reason_t.CLASS_THRESHOLD);
            }
        } else if (meta.class_id == traffic_class_t.UNTAGGED) {
            if (untagged_avg > untagged_th_scaled) {
                aqm_drop(meta, drop_reason_t.CLASS_THRESHOLD);
            }
        }
    }
    if (!meta.aqm_drop) {
        red_drop_test(meta, min_th_scaled, max_th_scaled, red_slope_q24);
    }
    queue_admit_or_drop(meta, standard_metadata, queue_limit_pkts);
}

#endif
