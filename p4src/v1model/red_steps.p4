// RED's steps on red.p4's and averages.p4's registers, included inside every
// control that runs them (RED, CBT, D-CBT, FRED; MCDT runs the epoch step).
// They read and write the control's own `meta`; their working values are
// meta.red (red_work_t), one set whatever the algorithm. As top-level actions
// with out parameters and locals, each control had its own copies, and BMv2
// resets every one of them on every packet (docs/profiles.md).
// Each step is @noWarn("unused"): a control includes all and runs the ones it
// needs. No include guard: each including control gets its own copy.

// A policy_epoch the port's packets have not carried before starts the port's
// averages and RED state from zero (the controller installed a new policy).
// Shares-only updates keep the epoch, so D-CBT's averages survive them.
@noWarn("unused") @hidden
action red_on_policy_epoch() {
    avg_policy_epoch.read(meta.red.stored_epoch, meta.port_index);
    if (meta.red.stored_epoch != meta.policy.policy_epoch) {
        avg_policy_epoch.write(meta.port_index, meta.policy.policy_epoch);
        red_avg_scaled.write(meta.port_index, 0);
        class_avg_scaled.write(meta.port_index * CLASS_SLOTS
                               + (bit<32>)(bit<8>)traffic_class_t.TCP, 0);
        class_avg_scaled.write(meta.port_index * CLASS_SLOTS
                               + (bit<32>)(bit<8>)traffic_class_t.TAGGED, 0);
        class_avg_scaled.write(meta.port_index * CLASS_SLOTS
                               + (bit<32>)(bit<8>)traffic_class_t.UNTAGGED, 0);
        chips_tagged_share_q16.write(meta.port_index, 0);
        red_count.write(meta.port_index, 0);
    }
}

#ifdef MMAQM_USES_RED_AVERAGE
// The RED average of the port (meta.red_avg_scaled) with a new sample, or, when
// the packet arrives at an empty queue and the policy has idle_decay_q32
// (tc-red's bandwidth), decayed for the time the queue has been empty
// (averages.p4 idle_decay; F&J 1993 §11: "if the queue is empty, avg <- (1 - w)^m
// avg"). The idle period then restarts at now, so a dropped arrival does not
// decay twice. meta.red.idled and idle_halvings_q32 let D-CBT decay its class
// averages alike.
@noWarn("unused") @hidden
action red_average_update(in pkts_t sample_pkts) {
    red_avg_scaled.read(meta.red_avg_scaled, meta.port_index);
    meta.red.idled = meta.occupancy.queue_pkts == 0 && meta.policy.idle_decay_q32 != 0;
    meta.red.idle_halvings_q32 = 0;
    if (meta.red.idled) {
        queue_idle_since_us.read(meta.red.idle_since_us, meta.port_index);
        timestamp_us_t idle_us = standard_metadata.ingress_global_timestamp
                                 - meta.red.idle_since_us;
        bit<32> idle_us_capped = idle_us > (timestamp_us_t)MAX_IDLE_US ? MAX_IDLE_US
                                                                       : (bit<32>)idle_us;
        meta.red.idle_halvings_q32 = (bit<64>)idle_us_capped
                                     * (bit<64>)meta.policy.idle_decay_q32;
        meta.red_avg_scaled = idle_decay(meta.red_avg_scaled, meta.red.idle_halvings_q32);
        queue_idle_since_us.write(meta.port_index, standard_metadata.ingress_global_timestamp);
    } else {
        meta.red_avg_scaled = ewma(meta.red_avg_scaled, to_scaled(sample_pkts),
                                   meta.policy.ewma_shift);
    }
    red_avg_scaled.write(meta.port_index, meta.red_avg_scaled);
}
#endif

#if defined(MMAQM_USES_RED_OPTIONS) || defined(MMAQM_USES_FRED)
// The next early-zone arrival of the port's drop cycle: meta.red.count + 1, and
// R (meta.red.rand_q16), drawn by the cycle's first arrival (count 0 =
// restarted) and kept until the next restart. FRED's R4 (fred.p4) shares it.
@noWarn("unused") @hidden
action red_next_count() {
    red_count.read(meta.red.count, meta.port_index);
    if (meta.red.count == 0) {
        random(meta.red.rand_q16, 0, PROB_ONE - 1);
        red_rand_q16.write(meta.port_index, meta.red.rand_q16);
    } else {
        red_rand_q16.read(meta.red.rand_q16, meta.port_index);
    }
    meta.red.count = meta.red.count + 1;
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
//   wait     (ns-2 wait_): early drops start once count * p_b > 1 (red.p4).
// meta.drop_reason says why RED acted, for a drop or a mark.
@noWarn("unused") @hidden
action red_drop_test() {
    bool ecn_capable = (hdr.ipv4.isValid() && hdr.ipv4.ecn != ECN_NOT_ECT)
                       || (hdr.ipv6.isValid() && hdr.ipv6.ecn != ECN_NOT_ECT);
    bool forced_zone = meta.red_avg_scaled >= meta.policy.max_th_scaled
        && (meta.policy.gentle == 0
            || (bit<64>)meta.red_avg_scaled >= ((bit<64>)meta.policy.max_th_scaled << 1));
    if (meta.red_avg_scaled < meta.policy.min_th_scaled) {
        red_count.write(meta.port_index, 0);
    } else if (forced_zone) {
        meta.drop_reason = drop_reason_t.RED_FORCED;
        if (meta.policy.ecn == 1 && meta.policy.harddrop == 0 && ecn_capable) {
            meta.ecn_mark = true;
        } else {
            meta.aqm_drop = true;
        }
        red_count.write(meta.port_index, 0);
    } else {
        red_next_count();
        if (meta.red_avg_scaled < meta.policy.max_th_scaled) {
            meta.red.p_b_q16 = red_p_b_q16(meta.red_avg_scaled, meta.policy.min_th_scaled,
                                           meta.policy.red_slope_q24);
        } else {  // gentle ramp
            meta.red.p_b_q16 = (bit<64>)meta.policy.max_p_q16
                + (((bit<64>)(meta.red_avg_scaled - meta.policy.max_th_scaled)
                    * (bit<64>)meta.policy.gentle_slope_q24) >> SLOPE_FRAC_BITS);
        }
        // wait: the threshold is 2^16 + R (no drop while count * p_b <= 1)
        bit<64> threshold_q16 = (bit<64>)meta.red.rand_q16
                                + ((bit<64>)meta.policy.wait << PROB_FRAC_BITS);
        if ((bit<64>)meta.red.count * meta.red.p_b_q16 > threshold_q16) {
            meta.drop_reason = drop_reason_t.RED_EARLY;
            if (meta.policy.ecn == 1 && ecn_capable) {
                meta.ecn_mark = true;
            } else {
                meta.aqm_drop = true;
            }
            meta.red.count = 0;
        }
        red_count.write(meta.port_index, meta.red.count);
    }
}
#endif

#ifdef MMAQM_USES_CLASS_AVERAGES
// Update one class average of the port (meta.red.class_avg_scaled after) with a
// class occupancy, or, on an arrival that ends an idle period
// (red_average_update: meta.red.idled), decay it by the same factor as the RED
// average (D-CBT keeps its averages synchronised).
@noWarn("unused") @hidden
action class_average_update(in traffic_class_t class_id, in pkts_t class_pkts) {
    bit<32> index = meta.port_index * CLASS_SLOTS + (bit<32>)(bit<8>)class_id;
    class_avg_scaled.read(meta.red.class_avg_scaled, index);
    if (meta.red.idled) {
        meta.red.class_avg_scaled = idle_decay(meta.red.class_avg_scaled,
                                               meta.red.idle_halvings_q32);
    } else {
        meta.red.class_avg_scaled = ewma(meta.red.class_avg_scaled, to_scaled(class_pkts),
                                         meta.policy.ewma_shift);
    }
    class_avg_scaled.write(index, meta.red.class_avg_scaled);
}
#endif
