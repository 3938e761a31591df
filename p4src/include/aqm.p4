// AQM admission for one packet on its egress port: policy lookup, per-algorithm
// drop decision, queue limit, occupancy and counters.
// The per-port policy table selects the algorithm at run time, so one compiled
// program serves DROP_TAIL, RED, CBT (both variants) and D-CBT.
#ifndef MMAQM_AQM_P4
#define MMAQM_AQM_P4

#include <v1model.p4>
#include "occupancy.p4"
#include "averages.p4"
#include "red.p4"
#include "cbt.p4"
#include "dcbt.p4"

// Per egress port and class (index port * CLASS_SLOTS + class).
counter(NUM_PORTS * CLASS_SLOTS, CounterType.packets_and_bytes) queue_arrivals;
counter(NUM_PORTS * CLASS_SLOTS, CounterType.packets_and_bytes) queue_admits;
// Index (port * CLASS_SLOTS + class) * NUM_DROP_REASONS + reason.
counter(NUM_PORTS * CLASS_SLOTS * NUM_DROP_REASONS, CounterType.packets_and_bytes) queue_drops;

control Aqm(inout local_metadata_t meta,
            inout standard_metadata_t standard_metadata,
            out bool has_policy) {
    AveragesResetOnNewPolicy() averages_reset;
    RedResetState() red_reset;
    OccupancyRead() occupancy_read;
    OccupancyAdmit() occupancy_admit;
    Red() red;
    Cbt() cbt;
    Dcbt() dcbt;

    action set_port_policy(bit<8> algorithm,
                           bit<32> queue_limit_pkts,
                           bit<32> min_th_scaled,
                           bit<32> max_th_scaled,
                           bit<32> red_slope_q24,
                           bit<8> ewma_shift,
                           bit<32> tagged_th_scaled,
                           bit<32> untagged_th_scaled,
                           bit<32> dcbt_tagged_share_q16,
                           bit<32> policy_epoch,
                           bit<8> flow_epoch_shift) {
        meta.policy.algorithm = algorithm;
        meta.policy.queue_limit_pkts = queue_limit_pkts;
        meta.policy.min_th_scaled = min_th_scaled;
        meta.policy.max_th_scaled = max_th_scaled;
        meta.policy.red_slope_q24 = red_slope_q24;
        meta.policy.ewma_shift = ewma_shift;
        meta.policy.tagged_th_scaled = tagged_th_scaled;
        meta.policy.untagged_th_scaled = untagged_th_scaled;
        meta.policy.dcbt_tagged_share_q16 = dcbt_tagged_share_q16;
        meta.policy.policy_epoch = policy_epoch;
        meta.policy.flow_epoch_shift = flow_epoch_shift;
    }

    action no_policy() {}

    table port_policy {
        key = { standard_metadata.egress_spec : exact @name("port"); }
        actions = { set_port_policy; @defaultonly no_policy; }
        const default_action = no_policy();
        size = NUM_PORTS;
    }

    apply {
        has_policy = port_policy.apply().hit;
        if (!has_policy) {
            return;
        }
        meta.class_index = meta.port_index * CLASS_SLOTS + (bit<32>)meta.class_id;
        queue_arrivals.count(meta.class_index);

        bool policy_reset;
        averages_reset.apply(meta, policy_reset);
        if (policy_reset) {
            red_reset.apply(meta);
        }
        occupancy_read.apply(meta);

        if (meta.policy.algorithm == ALGO_RED) {
            red.apply(meta);
        } else if (meta.policy.algorithm == ALGO_CBT_RED_ALL
                   || meta.policy.algorithm == ALGO_CBT_RED_TCP_ONLY) {
            cbt.apply(meta);
        } else if (meta.policy.algorithm == ALGO_DCBT) {
            dcbt.apply(meta);
        }
        // ALGO_DROP_TAIL: only the queue limit below.

        // The physical queue: ingress is the only place that drops, because the
        // traffic manager's queue depth is set above queue_limit_pkts. The
        // controller caps queue_limit_pkts at 65535 (config.MAX_QUEUE_LIMIT_PKTS)
        // so that every threshold scaled by 2^AVG_FRAC_BITS fits in bit<32>.
        if (!meta.aqm_drop && meta.occupancy.queue_pkts >= meta.policy.queue_limit_pkts) {
            meta.aqm_drop = true;
            meta.drop_reason = DROP_QUEUE_LIMIT;
        }

        if (meta.aqm_drop) {
            mark_to_drop(standard_metadata);
            queue_drops.count(meta.class_index * NUM_DROP_REASONS + (bit<32>)meta.drop_reason);
        } else {
            occupancy_admit.apply(meta);
            queue_admits.count(meta.class_index);
        }
    }
}

#endif
