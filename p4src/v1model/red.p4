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

register<bit<32>>(NUM_PORTS) red_count;     // early-zone arrivals since R was drawn; 0 = restarted
#if defined(MMAQM_USES_RED_OPTIONS) || defined(MMAQM_USES_FRED)
register<bit<32>>(NUM_PORTS) red_rand_q16;  // R
#endif

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
        chips_tagged_share_q16.write(port_index, 0);
        red_count.write(port_index, 0);
    }
}

#if defined(MMAQM_USES_RED_OPTIONS) || defined(MMAQM_USES_FRED)  // the drop cycle (FRED's R4 too)
// The next early-zone arrival of the port's drop cycle: count + 1, and R, drawn
// by the cycle's first arrival (count 0 = restarted) and kept until the next
// restart. FRED's R4 (fred.p4) shares it.
action red_next_count(in bit<32> port_index, out bit<32> count, out bit<32> rand_q16) {
    red_count.read(count, port_index);
    if (count == 0) {
        random(rand_q16, 0, PROB_ONE - 1);
        red_rand_q16.write(port_index, rand_q16);
    } else {
        red_rand_q16.read(rand_q16, port_index);
    }
    count = count + 1;
}

// p_b in Q16 below max_th: (avg - min_th) * max_p / (max_th - min_th), with the
// controller's red_slope_q24 (header); the caller ensures avg >= min_th.
bit<64> red_p_b_q16(in scaled_t avg_scaled, in scaled_t min_th_scaled, in q24_t red_slope_q24) {
    return ((bit<64>)(avg_scaled - min_th_scaled) * (bit<64>)red_slope_q24) >> SLOPE_FRAC_BITS;
}
#endif

#ifdef MMAQM_USES_RED_AVERAGE
// The RED average of the port with a new sample, or, when the packet arrives
// at an empty queue and the policy has idle_decay_q32 (tc-red's bandwidth),
// decayed for the time the queue has been empty (averages.p4 idle_decay;
// F&J 1993 §11: "if the queue is empty, avg <- (1 - w)^m avg"). The idle
// period then restarts at now, so a dropped arrival does not decay twice.
// idled and idle_halvings_q32 let D-CBT decay its class averages alike.
action red_average_update(in bit<32> port_index, in pkts_t sample_pkts, in pkts_t queue_pkts_seen,
                          in timestamp_us_t now_us, in shift_t ewma_shift,
                          in q32_t idle_decay_q32, out scaled_t red_avg,
                          out bool idled, out bit<64> idle_halvings_q32) {
    red_avg_scaled.read(red_avg, port_index);
    idled = queue_pkts_seen == 0 && idle_decay_q32 != 0;
    idle_halvings_q32 = 0;
    if (idled) {
        timestamp_us_t idle_since_us;
        queue_idle_since_us.read(idle_since_us, port_index);
        timestamp_us_t idle_us = now_us - idle_since_us;
        bit<32> idle_us_capped = idle_us > (timestamp_us_t)MAX_IDLE_US ? MAX_IDLE_US
                                                                       : (bit<32>)idle_us;
        idle_halvings_q32 = (bit<64>)idle_us_capped * (bit<64>)idle_decay_q32;
        red_avg = idle_decay(red_avg, idle_halvings_q32);
        queue_idle_since_us.write(port_index, now_us);
    } else {
        red_avg = ewma(red_avg, to_scaled(sample_pkts), ewma_shift);
    }
    red_avg_scaled.write(port_index, red_avg);
}
#endif

#ifdef MMAQM_USES_RED_OPTIONS
// The RED drop test on the port's average (Floyd & Jacobson 1993 §4). Used by
// RED, CBT, D-CBT and D-CBT with ChIPS. Options, with Linux tc-red's semantics:
//   gentle   (Floyd 2000, ns-2 gentle_): between max_th and 2 * max_th,
//            p_b = max_p + (1 - max_p) * (avg - max_th) / max_th, early-drop
//            style; the forced zone starts at 2 * max_th;
//   ecn      (RFC 3168; tc-red ecn): an ECN-capable packet (ECT or CE) that
//            RED would drop is marked CE and admitted, in both zones;
//   harddrop (tc-red harddrop): with ecn, the forced zone drops anyway;
//   wait     (ns-2 wait_): early drops start once count * p_b > 1 (header).
// drop_reason says why RED acted, for a drop or a mark.
action red_drop_test(in bit<32> port_index, in scaled_t red_avg,
                     in scaled_t min_th_scaled, in scaled_t max_th_scaled,
                     in q24_t red_slope_q24, in flag_t gentle, in q16_t max_p_q16,
                     in q24_t gentle_slope_q24, in flag_t ecn, in flag_t harddrop,
                     in flag_t wait, in bool ecn_capable,
                     inout bool aqm_drop, inout drop_reason_t drop_reason,
                     inout bool ecn_mark) {
    bool forced_zone = red_avg >= max_th_scaled
        && (gentle == 0 || (bit<64>)red_avg >= ((bit<64>)max_th_scaled << 1));
    if (red_avg < min_th_scaled) {
        red_count.write(port_index, 0);
    } else if (forced_zone) {
        drop_reason = drop_reason_t.RED_FORCED;
        if (ecn == 1 && harddrop == 0 && ecn_capable) {
            ecn_mark = true;
        } else {
            aqm_drop = true;
        }
        red_count.write(port_index, 0);
    } else {
        bit<32> count;
        bit<32> rand_q16;
        red_next_count(port_index, count, rand_q16);
        bit<64> p_b_q16;
        if (red_avg < max_th_scaled) {
            p_b_q16 = red_p_b_q16(red_avg, min_th_scaled, red_slope_q24);
        } else {  // gentle ramp
            p_b_q16 = (bit<64>)max_p_q16
                      + (((bit<64>)(red_avg - max_th_scaled) * (bit<64>)gentle_slope_q24)
                         >> SLOPE_FRAC_BITS);
        }
        // wait: the threshold is 2^16 + R (no drop while count * p_b <= 1)
        bit<64> threshold_q16 = (bit<64>)rand_q16 + ((bit<64>)wait << PROB_FRAC_BITS);
        if ((bit<64>)count * p_b_q16 > threshold_q16) {
            drop_reason = drop_reason_t.RED_EARLY;
            if (ecn == 1 && ecn_capable) {
                ecn_mark = true;
            } else {
                aqm_drop = true;
            }
            count = 0;
        }
        red_count.write(port_index, count);
    }
}
#endif

#ifdef MMAQM_HAS_RED  // FRED and MCDT use the functions above, not the control
// The RED algorithm: the average of the whole queue, updated on every arrival.
control Red(inout headers_t hdr, inout local_metadata_t meta,
            inout standard_metadata_t standard_metadata) {
#include "occupancy_steps.p4"

    @hidden  // applied by the control, never by the controller: not in the P4Info
    action red_admission() {
        queue_arrival();
        red_on_policy_epoch(meta.port_index, meta.policy.policy_epoch);
        bool idled;
        bit<64> idle_halvings_q32;
        red_average_update(meta.port_index, meta.occupancy.queue_pkts, meta.occupancy.queue_pkts,
                           standard_metadata.ingress_global_timestamp, meta.policy.ewma_shift,
                           meta.policy.idle_decay_q32, meta.red_avg_scaled,
                           idled, idle_halvings_q32);
        red_drop_test(meta.port_index, meta.red_avg_scaled, meta.policy.min_th_scaled,
                      meta.policy.max_th_scaled, meta.policy.red_slope_q24,
                      meta.policy.gentle, meta.policy.max_p_q16, meta.policy.gentle_slope_q24,
                      meta.policy.ecn, meta.policy.harddrop, meta.policy.wait,
                      hdr.ipv4.ecn != ECN_NOT_ECT,
                      meta.aqm_drop, meta.drop_reason, meta.ecn_mark);
        queue_admit_or_drop();
        if (meta.aqm_drop) {
            mark_to_drop(standard_metadata);
        }
        if (meta.ecn_mark) {
            hdr.ipv4.ecn = ECN_CE;
        }
    }

    apply {
        red_admission();
    }
}
#endif

#endif
