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
// Option wait (ns-2 wait_, on by default there; red.cc modify_p): p_a = 0
//   while count * p_b < 1, p_b / (2 - count * p_b) while count * p_b < 2, then
//   1, which makes the gap between drops uniform on about 1/p_b..2/p_b
//   instead of 1..1/p_b: at least about 1/p_b packets between drops.
//   Same R, one more PROB_ONE: drop when count * p_b_q16 > 2^16 + R, i.e.
//   with probability min(1, max(0, count * p_b - 1)); in the gentle ramp too
//   (ns-2 spreads its p_b alike). Gaps, counting the dropped packet: 1..1/p_b
//   without wait, 1/p_b+1..2/p_b with it. ns-2 counts the arriving packet
//   before its test, so its gaps are one packet shorter in both modes.
// red_count = 0 means "restarted": no R drawn yet (power-up, after a drop, below
// min_th, new policy). R is drawn lazily, by the first packet that needs it, so
// a port that sits below min_th costs no random() per packet.
#ifndef MMAQM_RED_P4
#define MMAQM_RED_P4

#include <v1model.p4>
#include "averages.p4"
#include "occupancy.p4"
// The steps (red_on_policy_epoch, red_average_update, red_drop_test, ...) are in
// red_steps.p4, included inside each control that runs them.

register<bit<32>>(NUM_PORTS) red_count;     // early-zone arrivals since R was drawn; 0 = restarted
#if defined(MMAQM_USES_RED_OPTIONS) || defined(MMAQM_USES_FRED)
register<bit<32>>(NUM_PORTS) red_rand_q16;  // R
#endif

#if defined(MMAQM_USES_RED_OPTIONS) || defined(MMAQM_USES_FRED)
// p_b in Q16 below max_th: (avg - min_th) * max_p / (max_th - min_th), with the
// controller's red_slope_q24 (header); the caller ensures avg >= min_th.
bit<64> red_p_b_q16(in scaled_t avg_scaled, in scaled_t min_th_scaled, in q24_t red_slope_q24) {
    return ((bit<64>)(avg_scaled - min_th_scaled) * (bit<64>)red_slope_q24) >> SLOPE_FRAC_BITS;
}
#endif

#ifdef MMAQM_HAS_RED  // FRED and MCDT use the functions above, not the control
// The RED algorithm: the average of the whole queue, updated on every arrival.
control Red(inout headers_t hdr, inout local_metadata_t meta,
            inout standard_metadata_t standard_metadata) {
#include "occupancy_steps.p4"
#include "red_steps.p4"

    @hidden  // applied by the control, never by the controller: not in the P4Info
    action red_admission() {
        queue_arrival();
        red_on_policy_epoch();
        red_average_update(meta.occupancy.queue_pkts);
        red_drop_test();
        queue_admit_or_drop();
        if (meta.aqm_drop) {
            mark_to_drop(standard_metadata);
        }
        if (meta.ecn_mark) {
            hdr.ipv4.ecn = ECN_CE;   // the invalid family's write is never emitted
            hdr.ipv6.ecn = ECN_CE;
        }
    }

    apply {
        red_admission();
    }
}
#endif

#endif
