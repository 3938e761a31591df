// FRED on Tofino (fred.p4 on v1model; Lin & Morris 1997; the rule numbers are
// fred.p4's). What fred.p4 does that a Tofino stage cannot, and what this does:
//  * qlen * n >= avg (avgcq tests of R2-R4) multiplies two run-time values:
//    compared as lg qlen + lg n >= lg avg with log2 in Q4 from ternary const
//    tables (log2_tna.p4, each within 7 %), so a flow near avgcq may be
//    classed either side;
//  * avg moves only at departures (D1) and at arrivals to an empty queue
//    (A1), but every arrival reads it: the Lpf (red_tna.p4) runs on those two
//    and copies its output into fred_avg_copy, which every other arrival reads;
//  * qlen, nactive: read, test, then +1 on admission (A3) would be two
//    accesses. They count every arrival below the queue limit, and a packet
//    the AQM then drops is cancelled (occupancy_tna.p4's resubmit), which
//    undoes the +1; an arrival in between sees one packet more;
//  * strike: R3 (strike > 1 and qlen >= avgcq) is decided inside the stateful
//    ALU from a code computed before it, and the +1 of R1-R3 is the same access;
//  * R4's count * p_b > R: red_tna.p4's budget register; a non-robust flow
//    spends budget without dropping, as count grows without a drop in fred.p4;
//  * D1/D2 run on the departure report, in ingress.
#ifndef MMAQM_FRED_TNA_P4
#define MMAQM_FRED_TNA_P4

#include "tna_types.p4"
#include "red_tna.p4"
#include "log2_tna.p4"


control TnaFred(in headers_t hdr, in tna_report_h report, inout tna_ingress_metadata_t md) {
    Register<bit<16>, tna_index_t>(NUM_PORTS * FRED_SLOTS_PER_PORT, 0) fred_qlen;
    Register<bit<8>, tna_index_t>(NUM_PORTS * FRED_SLOTS_PER_PORT, 0) fred_strike;
    Register<bit<16>, tna_index_t>(NUM_PORTS, 0) fred_nactive;
    Register<scaled_t, tna_index_t>(NUM_PORTS, 0) fred_avg_copy;
    Register<bit<32>, tna_index_t>(NUM_PORTS, 0) red_budget_q16;
    Lpf<scaled_t, tna_index_t>(NUM_PORTS) fred_avg;
    Random<bit<16>>() rand16;
    TnaLog2Q4W16() lg_qlen;
    TnaLog2Q4W16() lg_flows;
    TnaLog2Q4W32() lg_avg;
    TnaRedZone() zone;

    RegisterAction<bit<16>, tna_index_t, bit<16>>(fred_qlen) qlen_arrive = {
        void apply(inout bit<16> value, out bit<16> seen) { seen = value; value = value + 1; }
    };
    RegisterAction<bit<16>, tna_index_t, bit<16>>(fred_qlen) qlen_read = {
        void apply(inout bit<16> value, out bit<16> seen) { seen = value; }
    };
    RegisterAction<bit<16>, tna_index_t, bit<16>>(fred_qlen) qlen_leave = {
        void apply(inout bit<16> value, out bit<16> before) {
            before = value;
            if (value != 0) {
                value = value - 1;
            }
        }
    };
    RegisterAction<bit<16>, tna_index_t, bit<16>>(fred_nactive) nactive_join = {
        void apply(inout bit<16> value, out bit<16> seen) { seen = value; value = value + 1; }
    };
    RegisterAction<bit<16>, tna_index_t, bit<16>>(fred_nactive) nactive_read = {
        void apply(inout bit<16> value, out bit<16> seen) { seen = value; }
    };
    RegisterAction<bit<16>, tna_index_t, bit<16>>(fred_nactive) nactive_leave = {
        void apply(inout bit<16> value) {
            if (value != 0) {
                value = value - 1;
            }
        }
    };
    RegisterAction<scaled_t, tna_index_t, scaled_t>(fred_avg_copy) avg_store = {
        void apply(inout scaled_t value) { value = md.fred_avg; }
    };
    RegisterAction<scaled_t, tna_index_t, scaled_t>(fred_avg_copy) avg_load = {
        void apply(inout scaled_t value, out scaled_t avg) { avg = value; }
    };
    // R1-R3: struck when R1 or R2 holds (code 2), or R3: strike > 1 with
    // qlen >= avgcq (code 1: threshold FRED_STRIKE_LIMIT, else 255 = never).
    RegisterAction<bit<8>, tna_index_t, bit<1>>(fred_strike) strike_arrive = {
        void apply(inout bit<8> value, out bit<1> struck) {
            if (md.fred_code == 2 || value > md.fred_r3_threshold) {
                value = value |+| 1;
                struck = 1;
            } else {
                struck = 0;
            }
        }
    };
    RegisterAction<bit<8>, tna_index_t, bit<1>>(fred_strike) strike_clear = {
        void apply(inout bit<8> value) { value = 0; }
    };
    RegisterAction<bit<32>, tna_index_t, bit<1>>(red_budget_q16) red_restart = {
        void apply(inout bit<32> value) { value = md.red_rand_q16; }
    };
    // A robust flow: red_tna.p4's test. Two PHV operands a RegisterAction.
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
    // Any other flow spends budget and is never dropped early; the budget stops
    // at 0, so the next robust arrival drops (fred.p4: count * p_b > R holds).
    RegisterAction<bit<32>, tna_index_t, bit<1>>(red_budget_q16) red_spend = {
        void apply(inout bit<32> value) {
            value = value |-| md.red_p_b_q16;
        }
    };

    action mask_signature() {
        md.fred_signature_masked = md.flow_signature & md.base.policy.fred_slot_mask;
    }
    @hidden table fred_mask_signature {
        actions = { mask_signature; }
        const default_action = mask_signature();
        size = 1;
    }
    action lg_sum() {
        md.fred_lg_share = md.lg_qlen + md.lg_flows;
        md.fred_qlen_scaled = (scaled_t)md.fred_qlen_seen << AVG_FRAC_BITS;
    }
    @hidden table fred_lg_sum {
        actions = { lg_sum; }
        const default_action = lg_sum();
        size = 1;
    }
    action lg_share() {
        md.fred_lg_share = md.fred_lg_share + 256;
        md.fred_lg_avg_twice = md.lg_avg + 16;
    }
    @hidden table fred_lg_share {
        actions = { lg_share; }
        const default_action = lg_share();
        size = 1;
    }
    action compare() {
        md.fred_avgcq_short = md.lg_avg |-| md.fred_lg_share;           // 0: share >= avg
        md.fred_over_twice = md.fred_lg_share |-| md.fred_lg_avg_twice;  // != 0: share > 2 avg
        md.fred_congested_short = md.base.policy.max_th_scaled |-| md.fred_avg;
        md.fred_maxq_short = md.base.policy.min_th_scaled |-| md.fred_qlen_scaled;
        md.fred_maxq_congested_short = (FRED_MAXQ_CONGESTED_PKTS << AVG_FRAC_BITS)
                                       |-| md.fred_qlen_scaled;
        md.fred_minq_short = md.fred_minq_scaled |-| md.fred_qlen_scaled;
    }
    @hidden table fred_compare {
        actions = { compare; }
        const default_action = compare();
        size = 1;
    }
    Hash<tna_index_t>(HashAlgorithm_t.IDENTITY) slot_hash;
    action take_slot() {
        md.base.fred_slot_index = slot_hash.get({ md.base.port_index[5:0],
                                                  md.fred_signature_masked[11:0] });   // 4096 slots a port
    }
    @hidden table fred_slot {
        actions = { take_slot; }
        const default_action = take_slot();
        size = 1;
    }

    apply {
        tna_index_t port = md.base.port_index;
        bool move_avg = false;
        if (md.is_report) {
            // D1, D2 for a departure; the undo of A3 for a cancel
            if (report.fred_admitted == 1) {
                tna_index_t slot = report.fred_slot_index;
                bit<16> before = qlen_leave.execute(slot);
                if (before == 1) {
                    nactive_leave.execute(port);
                    if (report.pkt_type == TNA_PKT_DEPARTURE) {
                        strike_clear.execute(slot);
                    }
                }
                if (report.pkt_type == TNA_PKT_DEPARTURE) {
                    md.fred_sample_scaled = md.queue_scaled;   // D1
                    move_avg = true;
                }
            }
        } else {
            // slot = port * FRED_SLOTS_PER_PORT + (crc32 & fred_slot_mask): the
            // mask in an action, the concatenation as an identity hash
            fred_mask_signature.apply();
            fred_slot.apply();
            tna_index_t slot = md.base.fred_slot_index;
            md.base.fred_admitted = md.counted;   // qlen counted: a cancel or D2 undoes it
            if (md.counted) {
                md.fred_qlen_seen = qlen_arrive.execute(slot);
            } else {
                md.fred_qlen_seen = qlen_read.execute(slot);
            }
            if (md.counted && md.fred_qlen_seen == 0) {
                md.fred_nactive_seen = nactive_join.execute(port);
            } else {
                md.fred_nactive_seen = nactive_read.execute(port);
            }
            // A1: only an arrival at an empty queue moves the average (sample 0)
            if (md.queue_scaled == 0) {
                move_avg = true;
            }
        }
        // the one place the filter runs (D1, A1); every other arrival reads its copy
        if (move_avg) {
            md.fred_avg = fred_avg.execute(md.fred_sample_scaled, port);
            avg_store.execute(port);
        } else {
            md.fred_avg = avg_load.execute(port);
        }
        if (!md.is_report) {
            md.base.red_avg_scaled = md.fred_avg;
            md.fred_flows = md.fred_nactive_seen;
            if (md.fred_nactive_seen == 0) {
                md.fred_flows = 1;
            }
            lg_qlen.apply(md.fred_qlen_seen, md.lg_qlen);
            lg_flows.apply(md.fred_flows, md.lg_flows);
            lg_avg.apply(md.fred_avg, md.lg_avg);
            // qlen * n >= avg / 2^16 and qlen * n > 2 avg / 2^16, in Q4 logs
            // (16 an octave: 2^16 is 256, a factor 2 is 16). A gateway compares a
            // field with a constant only: sums and saturating differences first,
            // one ALU operation per field and action (the tables below).
            fred_lg_sum.apply();        // share = lg qlen + lg n; qlen, scaled
            fred_lg_share.apply();      // share + 256; lg avg + 16
            fred_compare.apply();       // the differences
            // each test as a bit (a gateway reads 4 bytes at most), then combined
            bit<1> avg_zero = 0;
            bit<1> qlen_zero = 0;
            bit<1> share_reaches_avg = 0;
            bit<1> share_over_twice = 0;
            bit<1> avg_at_max_th = 0;
            bit<1> qlen_at_maxq = 0;
            bit<1> qlen_at_maxq_congested = 0;
            if (md.fred_avg == 0) { avg_zero = 1; }
            if (md.fred_qlen_seen == 0) { qlen_zero = 1; }
            if (md.fred_avgcq_short == 0) { share_reaches_avg = 1; }
            if (md.fred_over_twice != 0) { share_over_twice = 1; }
            if (md.fred_congested_short == 0) { avg_at_max_th = 1; }
            if (md.fred_maxq_short == 0) { qlen_at_maxq = 1; }
            if (md.fred_maxq_congested_short == 0) { qlen_at_maxq_congested = 1; }
            if (md.fred_minq_short == 0) { md.fred_qlen_at_minq = 1; }
            bool at_avgcq = avg_zero == 1 || (qlen_zero == 0 && share_reaches_avg == 1);
            bool over_twice = qlen_zero == 0 && share_over_twice == 1;
            bool congested = avg_at_max_th == 1;                  // avg >= max_th
            bool r1 = (!congested && qlen_at_maxq == 1)                                  // A2
                      || (congested && qlen_at_maxq_congested == 1);
            bool r2 = congested && over_twice;
            md.fred_code = 0;
            md.fred_r3_threshold = 255;
            if (r1 || r2) {
                md.fred_code = 2;
            } else if (at_avgcq) {
                md.fred_code = 1;
                md.fred_r3_threshold = FRED_STRIKE_LIMIT;
            }
            md.fred_robust = 0;
            if (md.fred_qlen_at_minq == 1 && at_avgcq) {     // qlen >= minq
                md.fred_robust = 1;
            }
            md.red_rand_q16 = (bit<32>)rand16.get();
            zone.apply(md, md.fred_avg);
            if (strike_arrive.execute(md.base.fred_slot_index) == 1) {                                  // R1-R3
                md.base.aqm_drop = true;
                if (r1) {
                    md.base.drop_reason = drop_reason_t.FRED_MAXQ;
                } else if (r2) {
                    md.base.drop_reason = drop_reason_t.FRED_TWICE_AVGCQ;
                } else {
                    md.base.drop_reason = drop_reason_t.FRED_STRIKE;
                }
            } else if (md.red_zone == RED_ZONE_EARLY) {                              // R4
                if (md.fred_robust == 0) {
                    red_spend.execute(port);
                } else if (red_early.execute(port) == 1) {
                    md.base.aqm_drop = true;
                    md.base.drop_reason = drop_reason_t.RED_EARLY;
                }
            } else {
                red_restart.execute(port);                                           // R5
                if (md.red_zone == RED_ZONE_FORCED) {                                // R6
                    md.base.aqm_drop = true;
                    md.base.drop_reason = drop_reason_t.RED_FORCED;
                }
            }
        }
    }
}

#endif
