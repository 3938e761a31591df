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
#ifndef MMAQM_DCBT_P4
#define MMAQM_DCBT_P4

#include <v1model.p4>
#include "red.p4"

control Dcbt(inout local_metadata_t meta) {
    RedDrop() red_drop;

    apply {
        bit<32> base = meta.port_index * CLASS_SLOTS;
        bit<32> red_avg;
        bit<32> tagged_avg;
        bit<32> untagged_avg;
        red_avg_scaled.read(red_avg, meta.port_index);
        class_avg_scaled.read(tagged_avg, base + (bit<32>)CLASS_TAGGED);
        class_avg_scaled.read(untagged_avg, base + (bit<32>)CLASS_UNTAGGED);
        red_avg = ewma(red_avg, to_scaled(meta.occupancy.queue_pkts), meta.policy.ewma_shift);
        tagged_avg = ewma(tagged_avg, to_scaled(meta.occupancy.tagged_pkts), meta.policy.ewma_shift);
        untagged_avg = ewma(untagged_avg, to_scaled(meta.occupancy.untagged_pkts), meta.policy.ewma_shift);
        red_avg_scaled.write(meta.port_index, red_avg);
        class_avg_scaled.write(base + (bit<32>)CLASS_TAGGED, tagged_avg);
        class_avg_scaled.write(base + (bit<32>)CLASS_UNTAGGED, untagged_avg);

        if (red_avg > meta.policy.min_th_scaled) {
            if (meta.class_id == CLASS_TAGGED) {
                bit<32> tagged_th = (bit<32>)(((bit<64>)red_avg
                        * (bit<64>)meta.policy.dcbt_tagged_share_q16) >> PROB_FRAC_BITS);
                if (tagged_avg > tagged_th) {
                    meta.aqm_drop = true;
                    meta.drop_reason = DROP_CLASS_THRESHOLD;
                }
            } else if (meta.class_id == CLASS_UNTAGGED) {
                if (untagged_avg > meta.policy.untagged_th_scaled) {
                    meta.aqm_drop = true;
                    meta.drop_reason = DROP_CLASS_THRESHOLD;
                }
            }
        }

        if (!meta.aqm_drop) {
            red_drop.apply(meta, red_avg);
        }
    }
}

#endif
