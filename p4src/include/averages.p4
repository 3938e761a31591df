// Fixed-point exponentially weighted moving averages (RED, Floyd & Jacobson 1993):
//   avg <- (1 - w) * avg + w * q,  w = 2^-ewma_shift,
// with avg and q in packets * 2^AVG_FRAC_BITS, as Linux include/net/red.h does.
// Registers are per egress port (RED) and per port and class (CBT, D-CBT);
// only ingress touches them.
#ifndef MMAQM_AVERAGES_P4
#define MMAQM_AVERAGES_P4

#include <v1model.p4>
#include "headers.p4"

register<scaled_t>(NUM_PORTS) red_avg_scaled;
register<scaled_t>(NUM_PORTS * CLASS_SLOTS) class_avg_scaled;
register<policy_epoch_t>(NUM_PORTS) avg_policy_epoch;

scaled_t to_scaled(in pkts_t pkts) {
    return pkts << AVG_FRAC_BITS;
}

scaled_t ewma(in scaled_t avg_scaled, in scaled_t sample_scaled, in shift_t shift) {
    if (sample_scaled >= avg_scaled) {
        return avg_scaled + ((sample_scaled - avg_scaled) >> shift);
    }
    return avg_scaled - ((avg_scaled - sample_scaled) >> shift);
}

// Update one class average of a port with a class occupancy.
action class_average_update(in bit<32> port_index, in traffic_class_t class_id,
                            in pkts_t class_pkts, in shift_t ewma_shift,
                            out scaled_t class_avg) {
    bit<32> index = port_index * CLASS_SLOTS + (bit<32>)(bit<8>)class_id;
    class_avg_scaled.read(class_avg, index);
    class_avg = ewma(class_avg, to_scaled(class_pkts), ewma_shift);
    class_avg_scaled.write(index, class_avg);
}

#endif
