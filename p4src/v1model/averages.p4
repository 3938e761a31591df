// Fixed-point exponentially weighted moving averages (RED, Floyd & Jacobson 1993):
//   avg <- (1 - w) * avg + w * q,  w = 2^-ewma_shift,
// with avg and q in packets * 2^AVG_FRAC_BITS, as Linux include/net/red.h does.
// Registers are per egress port (RED) and per port and class (CBT, D-CBT);
// only ingress touches them.
#ifndef MMAQM_AVERAGES_P4
#define MMAQM_AVERAGES_P4

#include <v1model.p4>
#include "../shared/headers.p4"

register<scaled_t>(NUM_PORTS) red_avg_scaled;
register<scaled_t>(NUM_PORTS * CLASS_SLOTS) class_avg_scaled;
register<policy_epoch_t>(NUM_PORTS) avg_policy_epoch;
// ChIPS (chips.p4): the EWMA of the tagged share of the port's enqueues,
// PROB_ONE = all tagged. Here so that a new policy epoch resets it as well.
register<q16_t>(NUM_PORTS) chips_tagged_share_q16;

#ifdef MMAQM_USES_AVERAGES
scaled_t to_scaled(in pkts_t pkts) {
    return pkts << AVG_FRAC_BITS;
}

// One expression, so that p4c inlines it without a return-value field.
scaled_t ewma(in scaled_t avg_scaled, in scaled_t sample_scaled, in shift_t shift) {
    return sample_scaled >= avg_scaled ? avg_scaled + ((sample_scaled - avg_scaled) >> shift)
                                       : avg_scaled - ((avg_scaled - sample_scaled) >> shift);
}

// Idle-time decay (Floyd & Jacobson 1993 §11; Linux red_calc_qavg_from_idle_time):
// after an idle period the average is decayed as if m = idle / s packets of
// transmission time s had arrived to an empty queue: avg * (1 - w)^m. The
// controller turns w and s into a rate, halvings of the average per
// microsecond (idle_decay_q32 = -log2(1 - w) / s_us * 2^32), so that
//   avg * (1 - w)^m = avg * 2^-h,  h = idle_us * idle_decay_q32 / 2^32.
// The whole halvings are a shift; the fractional one f uses the chord
// 2^-f ~ 1 - f/2, exact at f = 0 and f = 1 and at most 6.1 % high between
// (Linux approximates with an integer shift table).
scaled_t idle_decay(in scaled_t avg_scaled, in bit<64> halvings_q32) {
    if (halvings_q32 >= ((bit<64>)IDLE_DECAY_MAX_HALVINGS << 32)) {
        return 0;
    }
    shift_t whole = (shift_t)(halvings_q32 >> 32);
    bit<64> frac_q16 = (halvings_q32 >> 16) & 0xFFFF;
    scaled_t halved = avg_scaled >> whole;
    return halved - (bit<32>)(((bit<64>)halved * frac_q16) >> 17);
}
#endif

// The class average step (class_average_update) is in red_steps.p4.

#endif
