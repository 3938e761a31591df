// RED's average and drop test on Tofino (red.p4 and averages.p4 on v1model).
// Three things v1model does cannot be done by a Tofino stage, so this differs:
//  * the average: avg += (q - avg) >> ewma_shift needs a shift of the register
//    value by a run-time amount inside the stateful ALU, which has no shifter
//    (add, subtract, logic, compare only). The average is the hardware EWMA,
//    the Lpf extern (a low-pass filter per index, Tofino's own RED building
//    block): sample mode, time constant set by the control plane per port from
//    the policy's weight and packet time, tau = s / w, so that it weighs a
//    packet like the per-packet EWMA at the link's packet rate; the filter's
//    decay over idle time is F&J 1993 §11's idle decay (idle_decay_q32 is then
//    implicit). The epoch reset (red_on_policy_epoch) is the control plane's:
//    it clears the filter state when it installs a new policy.
//  * p_b = (avg - min_th) * slope: a multiply of two run-time values. The
//    control plane fills red_zone, a range table on (port, avg) that gives the
//    zone (below min_th, early, forced) and p_b per avg segment: p_b is exact at
//    each segment's lower end (RED_ZONE_SEGMENTS per port); the gentle ramp is
//    more early segments.
//  * count * p_b > R: a multiply again. The register holds the remaining
//    budget D = R - sum of p_b since R was drawn: an early-zone packet drops
//    when D < p_b, else D -= p_b, one stateful-ALU comparison and subtraction.
//    For a constant p_b this is count * p_b > R exactly; when p_b moves
//    between arrivals it integrates p_b instead of scaling the last one.
//    R (+ 2^16 with wait) is drawn by the Random extern at every restart.
#ifndef MMAQM_RED_TNA_P4
#define MMAQM_RED_TNA_P4

#include "tna_types.p4"

const bit<32> RED_ZONE_SEGMENTS = 32;  // red_zone entries per port (controller)
// A range key fits in 5 PHV nibbles: red_zone and dcbt_tagged_threshold match
// avg_scaled[27:8], the average in 1/256 packet up to 4096 packets (the TNA
// controller keeps queue_limit_pkts below 4096, so the average stays inside).
const bit<32> AVG_KEY_SHIFT = 8;
const bit<2> RED_ZONE_BELOW = 0;
const bit<2> RED_ZONE_EARLY = 1;
const bit<2> RED_ZONE_FORCED = 2;

// red_zone: the zone and p_b of an average (controller-filled; see above).
// RED, CBT, D-CBT and FRED's R4-R6 (fred_tna.p4) share it.
control TnaRedZone(inout tna_ingress_metadata_t md, in scaled_t avg_scaled) {
    action red_below() { md.red_zone = RED_ZONE_BELOW; }
    action red_early_p_b(q16_t p_b_q16) {
        md.red_zone = RED_ZONE_EARLY;
        md.red_p_b_q16 = p_b_q16;
    }
    action red_forced() { md.red_zone = RED_ZONE_FORCED; }

    table red_zone {
        key = {
            md.base.routed_port : exact @name("port");
            avg_scaled[27:8] : range @name("avg_key");
        }
        actions = { red_below; red_early_p_b; red_forced; }
        const default_action = red_below();
        size = NUM_PORTS * RED_ZONE_SEGMENTS;
    }

    apply {
        red_zone.apply();
    }
}

#ifdef MMAQM_TNA_RED_FAMILY
// The RED average of the port with a new sample (packets << AVG_FRAC_BITS).
// The sample must be a PHV field written in an earlier stage, not an
// expression: the callers scale it in a table of their own (aqm_tna.p4).
control TnaRedAverage(inout tna_ingress_metadata_t md, in scaled_t sample_scaled) {
    Lpf<scaled_t, tna_index_t>(NUM_PORTS) red_avg;

    apply {
        md.base.red_avg_scaled = red_avg.execute(sample_scaled, md.base.port_index);
    }
}

// The RED drop test (red.p4 red_drop_test) on md.base.red_avg_scaled, with
// the options gentle (in red_zone), ecn, harddrop and wait.
control TnaRedDropTest(in headers_t hdr, inout tna_ingress_metadata_t md) {
    Register<bit<32>, tna_index_t>(NUM_PORTS, 0) red_budget_q16;
    Random<bit<16>>() rand16;

    RegisterAction<bit<32>, tna_index_t, bit<1>>(red_budget_q16) red_restart = {
        void apply(inout bit<32> value) {
            value = md.red_rand_q16;
        }
    };
    RegisterAction<bit<32>, tna_index_t, bit<1>>(red_budget_q16) red_early = {
        void apply(inout bit<32> value, out bit<1> drop) {
            if (value < md.red_p_b_q16) {
                value = md.red_rand_q16;
                drop = 1;
            } else {
                value = value - md.red_p_b_q16;
                drop = 0;
            }
        }
    };

    TnaRedZone() zone;

    apply {
        md.red_rand_q16 = (bit<32>)rand16.get();
        if (md.base.policy.wait == 1) {
            md.red_rand_q16 = md.red_rand_q16 + PROB_ONE;
        }
        // Whether a RED action may mark instead of drop, in each zone: decided
        // beside the average, off the critical path of stages.
        md.red_mark_early = 0;
        md.red_mark_forced = 0;
        // md.ip_ecn: either family's ECN field (the parser's copy, IPv4's TOS or
        // IPv6's traffic class low bits)
        if (md.base.policy.ecn == 1 && md.ip_ecn != ECN_NOT_ECT) {
            md.red_mark_early = 1;
            if (md.base.policy.harddrop == 0) {
                md.red_mark_forced = 1;
            }
        }
        zone.apply(md, md.base.red_avg_scaled);
        md.red_early_hit = 0;
        // md.excess != 0: CBT's class test dropped the packet, RED does not see
        // it (cbt.p4); 0 for every other algorithm. D-CBT's class verdict comes
        // a stage too late for the budget (aqm_tna.p4): there it only decides.
#ifndef MMAQM_TNA_DCBT
        if (md.excess != 0) {
            // no RED for this packet
        } else
#endif
        if (md.red_zone == RED_ZONE_EARLY) {
            md.red_early_hit = red_early.execute(md.base.port_index);
        } else {
            red_restart.execute(md.base.port_index);
        }
        // one stage of gateways: the zone, the budget's verdict, the ECN choice
        // (a packet the queue limit already dropped is not marked: its reason
        // stays QUEUE_LIMIT, as v1model's limit test after a mark gives)
        if (md.excess != 0) {
            // the class test's drop (CBT, D-CBT), in the same stage as RED's
            md.base.aqm_drop = true;
            md.base.drop_reason = drop_reason_t.CLASS_THRESHOLD;
        } else if (md.red_zone == RED_ZONE_EARLY && md.red_early_hit == 1) {
            if (md.red_mark_early == 0) {
                md.base.aqm_drop = true;
                md.base.drop_reason = drop_reason_t.RED_EARLY;
            } else if (!md.base.aqm_drop) {
                md.base.ecn_mark = true;
                md.base.drop_reason = drop_reason_t.RED_EARLY;
            }
        } else if (md.red_zone == RED_ZONE_FORCED) {
            if (md.red_mark_forced == 0) {
                md.base.aqm_drop = true;
                md.base.drop_reason = drop_reason_t.RED_FORCED;
            } else if (!md.base.aqm_drop) {
                md.base.ecn_mark = true;
                md.base.drop_reason = drop_reason_t.RED_FORCED;
            }
        }
    }
}

#endif  // MMAQM_TNA_RED_FAMILY

#endif
