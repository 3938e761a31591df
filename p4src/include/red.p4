// RED (Floyd & Jacobson 1993; the RED card of DESIGN §2).
//   avg < min_th            : enqueue
//   min_th <= avg < max_th  : p_b = max_p * (avg - min_th) / (max_th - min_th),
//                             drop with p_a = p_b / (1 - count * p_b)
//   avg >= max_th           : forced drop
// Fixed point, no division in the data plane (Linux include/net/red.h):
//   p_b_q16 = (avg_scaled - min_th_scaled) * red_slope_q24 >> 24, where the
//   controller computes red_slope_q24 = max_p / (max_th - min_th) * 2^24;
//   instead of dividing for p_a, one uniform threshold R in {0..2^16-1} is
//   drawn after every drop and the packet is dropped when count * p_b_q16 > R,
//   i.e. with probability min(1, count * p_b) for this count (strict '>', so
//   p_b = 0 never drops). For a
//   constant p_b this makes the gap between drops uniform on 1..1/p_b, which
//   is exactly the distribution p_a produces.
#ifndef MMAQM_RED_P4
#define MMAQM_RED_P4

#include <v1model.p4>
#include "averages.p4"

register<bit<32>>(NUM_PORTS) red_count;     // arrivals in the early zone since the last drop
register<bit<32>>(NUM_PORTS) red_rand_q16;  // R, drawn after every drop

// The RED drop test on a given average. Used by RED, CBT and D-CBT.
// Restart the count and R of a port (policy reset).
control RedResetState(in local_metadata_t meta) {
    apply {
        bit<32> fresh_rand_q16;
        random(fresh_rand_q16, 0, PROB_ONE - 1);
        red_count.write(meta.port_index, 0);
        red_rand_q16.write(meta.port_index, fresh_rand_q16);
    }
}

control RedDrop(inout local_metadata_t meta, in bit<32> avg_scaled) {
    bit<32> fresh_rand_q16;

    action restart_count() {
        random(fresh_rand_q16, 0, PROB_ONE - 1);
        red_count.write(meta.port_index, 0);
        red_rand_q16.write(meta.port_index, fresh_rand_q16);
    }

    action drop(bit<8> reason) {
        meta.aqm_drop = true;
        meta.drop_reason = reason;
        restart_count();
    }

    apply {
        if (avg_scaled < meta.policy.min_th_scaled) {
            restart_count();
        } else if (avg_scaled >= meta.policy.max_th_scaled) {
            drop(DROP_RED_FORCED);
        } else {
            bit<32> count;
            bit<32> rand_q16;
            red_count.read(count, meta.port_index);
            red_rand_q16.read(rand_q16, meta.port_index);
            count = count + 1;
            bit<64> p_b_q16 = ((bit<64>)(avg_scaled - meta.policy.min_th_scaled)
                               * (bit<64>)meta.policy.red_slope_q24) >> SLOPE_FRAC_BITS;
            if ((bit<64>)count * p_b_q16 > (bit<64>)rand_q16) {
                drop(DROP_RED_EARLY);
            } else {
                red_count.write(meta.port_index, count);
            }
        }
    }
}

// Plain RED: the average of the whole queue, updated on every arrival.
control Red(inout local_metadata_t meta) {
    RedDrop() red_drop;
    apply {
        bit<32> avg;
        red_avg_scaled.read(avg, meta.port_index);
        avg = ewma(avg, to_scaled(meta.occupancy.queue_pkts), meta.policy.ewma_shift);
        red_avg_scaled.write(meta.port_index, avg);
        red_drop.apply(meta, avg);
    }
}

#endif
