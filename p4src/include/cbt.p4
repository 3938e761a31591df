// Class-Based Threshold (cbt §3, §4.1-4.2).
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
#include "red.p4"

control Cbt(inout local_metadata_t meta) {
    RedDrop() red_drop;

    apply {
        bool red_for_all = meta.policy.algorithm == ALGO_CBT_RED_ALL;
        bool is_udp_class = meta.class_id != CLASS_TCP;

        if (is_udp_class) {
            bit<32> class_avg;
            bit<32> class_pkts;
            bit<32> threshold;
            if (meta.class_id == CLASS_TAGGED) {
                class_pkts = meta.occupancy.tagged_pkts;
                threshold = meta.policy.tagged_th_scaled;
            } else {
                class_pkts = meta.occupancy.untagged_pkts;
                threshold = meta.policy.untagged_th_scaled;
            }
            class_avg_scaled.read(class_avg, meta.class_index);
            class_avg = ewma(class_avg, to_scaled(class_pkts), meta.policy.ewma_shift);
            class_avg_scaled.write(meta.class_index, class_avg);
            if (class_avg > threshold) {
                meta.aqm_drop = true;
                meta.drop_reason = DROP_CLASS_THRESHOLD;
            }
        }

        if (!meta.aqm_drop && (red_for_all || !is_udp_class)) {
            bit<32> red_sample_pkts = red_for_all ? meta.occupancy.queue_pkts
                                                  : meta.occupancy.tcp_pkts;
            bit<32> avg;
            red_avg_scaled.read(avg, meta.port_index);
            avg = ewma(avg, to_scaled(red_sample_pkts), meta.policy.ewma_shift);
            red_avg_scaled.write(meta.port_index, avg);
            red_drop.apply(meta, avg);
        }
    }
}

#endif
