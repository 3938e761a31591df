// Fixed-point exponentially weighted moving averages (RED, Floyd & Jacobson 1993):
//   avg <- (1 - w) * avg + w * q,  w = 2^-ewma_shift,
// with avg and q in packets * 2^AVG_FRAC_BITS, as Linux include/net/red.h does.
// Registers are per egress port; only ingress touches them.
#ifndef MMAQM_AVERAGES_P4
#define MMAQM_AVERAGES_P4

#include <v1model.p4>
#include "headers.p4"

register<bit<32>>(NUM_PORTS) red_avg_scaled;
register<bit<32>>(NUM_PORTS * CLASS_SLOTS) class_avg_scaled;
register<bit<32>>(NUM_PORTS) avg_policy_epoch;

bit<32> to_scaled(in bit<32> pkts) {
    return pkts << AVG_FRAC_BITS;
}

bit<32> ewma(in bit<32> avg_scaled, in bit<32> sample_scaled, in bit<8> shift) {
    if (sample_scaled >= avg_scaled) {
        return avg_scaled + ((sample_scaled - avg_scaled) >> shift);
    }
    return avg_scaled - ((avg_scaled - sample_scaled) >> shift);
}

// A new policy_epoch in the port's policy entry (the controller installed a
// new policy) starts the port's averages from zero. Shares-only updates keep
// the epoch, so D-CBT's averages survive them.
control AveragesResetOnNewPolicy(in local_metadata_t meta, out bool reset) {
    apply {
        bit<32> stored_epoch;
        avg_policy_epoch.read(stored_epoch, meta.port_index);
        reset = stored_epoch != meta.policy.policy_epoch;
        if (reset) {
            bit<32> base = meta.port_index * CLASS_SLOTS;
            avg_policy_epoch.write(meta.port_index, meta.policy.policy_epoch);
            red_avg_scaled.write(meta.port_index, 0);
            class_avg_scaled.write(base + (bit<32>)CLASS_TCP, 0);
            class_avg_scaled.write(base + (bit<32>)CLASS_TAGGED, 0);
            class_avg_scaled.write(base + (bit<32>)CLASS_UNTAGGED, 0);
        }
    }
}

#endif
