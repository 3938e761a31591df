// RED (Floyd & Jacobson 1993), the average and drop test every RED-based
// algorithm shares, and the RED algorithm itself.
//   avg < min_th            : enqueue
//   min_th <= avg < max_th  : p_b = max_p * (avg - min_th) / (max_th - min_th),
//                             drop with p_a = p_b / (1 - count * p_b)
//   avg >= max_th           : forced drop
// Fixed point, no division in the data plane (Linux include/net/red.h):
//   p_b_q16 = (avg_scaled - min_th_scaled) * red_slope_q24 >> 24, where the
//   controller computes red_slope_q24 = max_p / (max_th - min_th) * 2^24;
//   instead of dividing for p_a, one uniform threshold R in {0..2^16-1} is
//   drawn when the early zone is entered after a restart, and the packet is
//   dropped when count * p_b_q16 > R, i.e. with probability min(1, count * p_b)
//   for this count (strict '>', so p_b = 0 never drops). For a constant p_b
//   this makes the gap between drops uniform on 1..1/p_b, which is exactly
//   the distribution p_a produces.
// red_count = 0 means "restarted": no R drawn yet (power-up, after a drop, below
// min_th, new policy). R is drawn lazily, by the first packet that needs it, so
// a port that sits below min_th costs no random() per packet.
#ifndef MMAQM_RED_P4
#define MMAQM_RED_P4

#include <v1model.p4>
#include "averages.p4"
#include "occupancy.p4"

register<bit<32>>(NUM_PORTS) red_count;     // early-zone arrivals since R was drawn; 0 = restarted
register<bit<32>>(NUM_PORTS) red_rand_q16;  // R

// A policy_epoch the port's packets have not carried before starts the port's
// averages and RED state from zero (the controller installed a new policy).
// Shares-only updates keep the epoch, so D-CBT's averages survive them.
action red_on_policy_epoch(in bit<32> port_index, in policy_epoch_t policy_epoch) {
    policy_epoch_t stored_epoch;
    avg_policy_epoch.read(stored_epoch, port_index);
    if (stored_epoch != policy_epoch) {
        bit<32> base = port_index * CLASS_SLOTS;
        avg_policy_epoch.write(port_index, policy_epoch);
        red_avg_scaled.write(port_index, 0);
        class_avg_scaled.write(base + (bit<32>)(bit<8>)traffic_class_t.TCP, 0);
        class_avg_scaled.write(base + (bit<32>)(bit<8>)traffic_class_t.TAGGED, 0);
        class_avg_scaled.write(base + (bit<32>)(bit<8>)traffic_class_t.UNTAGGED, 0);
        red_count.write(port_index, 0);
    }
}

// The RED average of the port with a new sample.
action red_average_update(in bit<32> port_index, in pkts_t sample_pkts,
                          in shift_t ewma_shift, out scaled_t red_avg) {
    red_avg_scaled.read(red_avg, port_index);
    red_avg = ewma(red_avg, to_scaled(sample_pkts), ewma_shift);
    red_avg_scaled.write(port_index, red_avg);
}

// The RED drop test on the port's average (Floyd & Jacobson 1993 §4). Used by
// RED, CBT and D-CBT.
action red_drop_test(in bit<32> port_index, in scaled_t red_avg,
                     in scaled_t min_th_scaled, in scaled_t max_th_scaled,
                     in q24_t red_slope_q24,
                     inout bool aqm_drop, inout drop_reason_t drop_reason) {
    if (red_avg < min_th_scaled) {
        red_count.write(port_index, 0);
    } else if (red_avg >= max_th_scaled) {
        aqm_drop = true;
        drop_reason = drop_reason_t.RED_FORCED;
        red_count.write(port_index, 0);
    } else {
        bit<32> count;
        bit<32> rand_q16;
        red_count.read(count, port_index);
        if (count == 0) {
            random(rand_q16, 0, PROB_ONE - 1);
            red_rand_q16.write(port_index, rand_q16);
        } else {
            red_rand_q16.read(rand_q16, port_index);
        }
        count = count + 1;
        bit<64> p_b_q16 = ((bit<64>)(red_avg - min_th_scaled)
                           * (bit<64>)red_slope_q24) >> SLOPE_FRAC_BITS;
        if ((bit<64>)count * p_b_q16 > (bit<64>)rand_q16) {
            aqm_drop = true;
            drop_reason = drop_reason_t.RED_EARLY;
            count = 0;
        }
        red_count.write(port_index, count);
    }
}

// The RED algorithm: the average of the whole queue, updated on every arrival.
control Red(inout local_metadata_t meta, inout standard_metadata_t standard_metadata) {
    @hidden  // applied by the control, never by the controller: not in the P4Info
    action red_admission() {
        queue_arrival(meta.port_index, meta.class_index,
                      meta.occupancy.queue_pkts, meta.occupancy.class_pkts);
        red_on_policy_epoch(meta.port_index, meta.policy.policy_epoch);
        red_average_update(meta.port_index, meta.occupancy.queue_pkts,
                           meta.policy.ewma_shift, meta.red_avg_scaled);
        red_drop_test(meta.port_index, meta.red_avg_scaled, meta.policy.min_th_scaled,
                      meta.policy.max_th_scaled, meta.policy.red_slope_q24,
                      meta.aqm_drop, meta.drop_reason);
        queue_admit_or_drop(meta.port_index, meta.class_index,
                            meta.occupancy.queue_pkts, meta.occupancy.class_pkts,
                            meta.policy.queue_limit_pkts,
                            meta.aqm_drop, meta.drop_reason, meta.admitted);
        if (meta.aqm_drop) {
            mark_to_drop(standard_metadata);
        }
    }

    apply {
        red_admission();
    }
}

#endif
