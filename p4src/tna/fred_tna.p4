// FRED on Tofino (fred.p4 on v1model; Lin & Morris 1997; the rule numbers are
// fred.p4's). What fred.p4 does that a Tofino stage cannot, and what this does
// (docs/tofino.md lists each as a difference):
//  * qlen * n >= avg (avgcq tests of R2-R4) multiplies two run-time values:
//    compared as lg qlen + lg n >= lg avg with log2 in Q4 from ternary const
//    tables (log2_tna.p4, each within 7 %), so a flow near avgcq may be
//    classed either side. The sum is the lg n table's action (add to lg qlen).
//  * R1-R4's eight tests (each a saturating difference, 0 when it holds) are
//    one ternary decision table (fred_decision_tna.p4, generated and checked
//    against the rules for all 256 inputs), not a chain of gateways.
//  * avg moves only at departures (D1) and at arrivals to an empty queue
//    (A1), but every arrival reads it: the Lpf (red_tna.p4) runs on those two,
//    on the occupancy register's output as its sample, and its output is copied
//    into fred_avg_copy, which every other arrival reads.
//  * qlen: read and +1 at every arrival, before the AQM has decided, so that
//    the per-flow chain starts in the stage after the slot's hash: a packet
//    the AQM then drops (the queue limit included) is resubmitted as a cancel
//    (occupancy_tna.p4), which undoes the +1 (and occupancy's, if it counted).
//    An arrival in between sees one packet more.
//  * nactive is read before this arrival's join: n matters only to a flow
//    with qlen > 0, which does not join, so the tests see the same n.
//  * the slot: all TNA_FRED_SLOTS_PER_PORT (2048) slots of the port, by an
//    identity hash of {port, crc32 & 0x7FF} in main.p4 (the policy's
//    fred_slot_mask would cost two stages before the first register; it is
//    accepted and not applied). Half of v1model's 4096: a slot is 32 bits
//    ({qlen, epoch}, below), and 4096 of them a port do not fit the stage's
//    map RAMs (bf-p4c: "could not fit ... 262144 entries of Register fred_qlen").
//  * strike: R3 (strike > 1 and qlen >= avgcq) is decided inside the stateful
//    ALU from the decision's code, and the +1 of R1-R3 is the same access.
//  * R4-R6: red_tna.p4's budget register, beside the strike register rather
//    than after it: it is skipped when R1 or R2 holds (the packet is struck),
//    but it also runs for an R3 candidate that the strike count then drops.
//    A non-robust flow spends budget without dropping, as count grows without
//    a drop in fred.p4.
//  * D1/D2 run on the departure report, in ingress.
//  * healing (docs/tofino.md, "Counts that heal"): a report whose departure
//    left the FIFO empty advances the port's epoch (TnaFredEpoch, read by
//    every packet beside the slot's hash) and sets nactive to 0. Each slot
//    keeps the epoch of its last access beside its qlen; a slot of another
//    epoch reads as qlen 0 and is rewritten, so a lost report or a traffic-
//    manager drop leaves a flow's qlen wrong only until its queue next empties.
#ifndef MMAQM_FRED_TNA_P4
#define MMAQM_FRED_TNA_P4

#include "tna_types.p4"
#include "red_tna.p4"
#include "log2_tna.p4"
#include "fred_decision_tna.p4"


// The port's empty-epoch: +1 at each report whose departure left the FIFO
// empty (md.report_empty, the parser's copy of the report's queue_empty). Read
// by every packet of a port under AQM in the slot hash's stage, so that the
// qlen stage after it knows the epoch (no stage is added before it). The
// flagged report itself still belongs to the old epoch (it gets the value
// before the +1): its own flow's qlen goes down as usual, and when that was the
// flow's last packet D2 clears its strike count.
control TnaFredEpoch(inout tna_ingress_metadata_t md) {
    Register<bit<16>, tna_index_t>(NUM_PORTS, 0) fred_port_epoch;
    RegisterAction<bit<16>, tna_index_t, bit<16>>(fred_port_epoch) epoch_advance = {
        void apply(inout bit<16> value, out bit<16> epoch) { epoch = value; value = value + 1; }
    };
    RegisterAction<bit<16>, tna_index_t, bit<16>>(fred_port_epoch) epoch_read = {
        void apply(inout bit<16> value, out bit<16> epoch) { epoch = value; }
    };
    action advance_epoch() { md.fred_epoch = epoch_advance.execute(md.base.port_index); }
    action read_epoch() { md.fred_epoch = epoch_read.execute(md.base.port_index); }
    @placement_priority(10)
    @hidden table fred_epoch_count {
        key = { md.report_empty : exact; }
        actions = { advance_epoch; read_epoch; }
        const entries = {
            0 : read_epoch();
            1 : advance_epoch();
        }
        size = 2;
    }
    apply {
        fred_epoch_count.apply();
    }
}

control TnaFred(in headers_t hdr, in tna_report_h report, inout tna_ingress_metadata_t md) {
    // {qlen, the port's epoch when the slot was last written}: a qlen of an
    // older epoch is 0 (the port's queue has emptied since)
    Register<tna_fred_slot_t, tna_index_t>(NUM_PORTS * TNA_FRED_SLOTS_PER_PORT,
                                           {0, 0}) fred_qlen;
    Register<bit<8>, tna_index_t>(NUM_PORTS * TNA_FRED_SLOTS_PER_PORT, 0) fred_strike;
    Register<bit<16>, tna_index_t>(NUM_PORTS, 0) fred_nactive;
    Register<scaled_t, tna_index_t>(NUM_PORTS, 0) fred_avg_copy;
    Register<bit<32>, tna_index_t>(NUM_PORTS, 0) red_budget_q16;
    Lpf<scaled_t, tna_index_t>(NUM_PORTS) fred_avg;
    Random<bit<16>>() rand16;
    TnaLog2Q4W16() lg_qlen;
    TnaLog2Q4W16Share() lg_share;
    TnaLog2Q4W32Compare() lg_avg_compare;
    TnaRedZone() zone;
    TnaFredDecision() decision;

    RegisterAction<tna_fred_slot_t, tna_index_t, bit<16>>(fred_qlen) qlen_arrive = {
        void apply(inout tna_fred_slot_t value, out bit<16> seen) {
            if (value.epoch == md.fred_epoch) {
                seen = value.qlen;
                value.qlen = value.qlen |+| 1;
            } else {
                seen = 0;            // stale: the queue emptied since
                value.qlen = 1;
            }
            value.epoch = md.fred_epoch;
        }
    };
    RegisterAction<tna_fred_slot_t, tna_index_t, bit<16>>(fred_qlen) qlen_leave = {
        void apply(inout tna_fred_slot_t value, out bit<16> before) {
            if (value.epoch == md.fred_epoch) {
                before = value.qlen;
                value.qlen = value.qlen |-| 1;
            } else {
                before = 0;          // stale: counted before the queue emptied
                value.qlen = 0;
            }
            value.epoch = md.fred_epoch;
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
    // healing: the queue is empty, so no flow is active (every slot's epoch is old)
    RegisterAction<bit<16>, tna_index_t, bit<16>>(fred_nactive) nactive_heal = {
        void apply(inout bit<16> value) { value = 0; }
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

    // The tests as saturating differences, 0 when the test holds (a gateway
    // compares a field with a constant only; the decision table reads them).
    action qlen_scale() {
        md.fred_qlen_scaled = (scaled_t)md.fred_qlen_seen << AVG_FRAC_BITS;
    }
    @hidden table fred_qlen_scale {
        actions = { qlen_scale; }
        const default_action = qlen_scale();
        size = 1;
    }
    action qlen_compare() {
        md.fred_maxq_short = md.base.policy.min_th_scaled |-| md.fred_qlen_scaled;   // A2
        md.fred_maxq_congested_short = (FRED_MAXQ_CONGESTED_PKTS << AVG_FRAC_BITS)
                                       |-| md.fred_qlen_scaled;
        md.fred_minq_short = md.fred_minq_scaled |-| md.fred_qlen_scaled;           // R4
    }
    @hidden table fred_qlen_compare {
        actions = { qlen_compare; }
        const default_action = qlen_compare();
        size = 1;
    }
    action avg_compare() {
        md.fred_congested_short = md.base.policy.max_th_scaled |-| md.fred_avg;      // avg >= max_th
    }
    @hidden table fred_avg_compare {
        actions = { avg_compare; }
        const default_action = avg_compare();
        size = 1;
    }
    // The per-flow chain (qlen, nactive, the logs, the decision, the strike) is
    // the longest of the program: its first register is placed first, in the
    // stage of occupancy's, ahead of tables that have stages to spare.
    action arrive() {
        md.fred_qlen_seen = qlen_arrive.execute(md.base.fred_slot_index);
    }
    action leave() {
        md.fred_qlen_before = qlen_leave.execute(md.base.fred_slot_index);
    }
    @placement_priority(10)
    @hidden table fred_qlen_count {
        key = { md.is_report : exact; }
        actions = { arrive; leave; }
        const entries = {
            false : arrive();
            true : leave();
        }
        size = 2;
    }

    // nactive: +1 when the arrival found its flow empty, -1 when a report
    // empties it (fred.p4 A3, D2); what an arrival read is its n
    action join() { md.fred_nactive_seen = nactive_join.execute(md.base.port_index); }
    action read() { md.fred_nactive_seen = nactive_read.execute(md.base.port_index); }
    action part() { nactive_leave.execute(md.base.port_index); }
    action heal() { nactive_heal.execute(md.base.port_index); }
    action keep() {}
    @placement_priority(10)
    @hidden table fred_nactive_count {
        key = {
            md.is_report : exact;
            md.report_empty : ternary;
            md.fred_qlen_seen : ternary;
            md.fred_qlen_before : ternary;
        }
        actions = { join; read; part; heal; keep; }
        const entries = {
            (false, _, 0, _) : join();
            (false, _, _, _) : read();
            (true, 1, _, _) : heal();
            (true, _, _, 1) : part();
        }
        const default_action = keep();
        size = 5;
    }

    apply {
        tna_index_t port = md.base.port_index;
        // ---- per-flow counts: A3 at an arrival; D2 (or A3's cancel) at a report
        // (md.base.fred_slot_index: main.p4's, the report's for a report;
        // fred_tna.p4 counts every arrival, so every report undoes one)
        fred_qlen_count.apply();
        fred_nactive_count.apply();
        if (!md.is_report) {
            // the flow's side of the tests, while the average is computed
            // (Tofino 1 places tables in the order the control applies them)
            fred_qlen_scale.apply();
            lg_qlen.apply(md.fred_qlen_seen, md.lg_qlen);
            // lg n + lg qlen + 256 (n = 0 counts as 1)
            lg_share.apply(md.fred_nactive_seen, md.lg_qlen, md.fred_lg_share);
            fred_qlen_compare.apply();
        }
        // ---- the average: D1 at a departure, A1 at an arrival to an empty
        // queue (sample: the occupancy register's output, 0 for A1); the one
        // place the filter runs, every other arrival reads its copy
        // (one condition, not a flag: a flag would cost a stage; a count is a
        // multiple of AVG_ONE, so bits 31..16 are 0 for an empty queue)
        if ((md.is_report && report.pkt_type == TNA_PKT_DEPARTURE)
                || (!md.is_report && md.queue_scaled[31:16] == 0)) {
            md.fred_avg = fred_avg.execute(md.queue_scaled, port);
            avg_store.execute(port);
        } else {
            md.fred_avg = avg_load.execute(port);
        }
        if (!md.is_report) {
            md.base.red_avg_scaled = md.fred_avg;
            md.red_rand_q16 = (bit<32>)rand16.get();
            // qlen * n >= avg / 2^16 and qlen * n > 2 avg / 2^16, in Q4 logs (16
            // an octave; the share carries the 2^16 as + 256)
            lg_avg_compare.apply(md.fred_avg, md.fred_lg_share,
                                 md.fred_avgcq_short, md.fred_over_twice_short);
            fred_avg_compare.apply();
            zone.apply(md, md.fred_avg);
            decision.apply(md);    // fred_code, fred_r3_threshold, fred_strike_reason, fred_robust
            md.fred_struck = strike_arrive.execute(md.base.fred_slot_index);    // R1-R3
            // R4-R6, beside the strike (skipped when R1 or R2 strikes for sure)
            md.red_early_hit = 0;
            if (md.fred_code != 2) {
                if (md.red_zone == RED_ZONE_EARLY) {                                    // R4
                    if (md.fred_robust == 0) {
                        red_spend.execute(port);
                    } else {
                        md.red_early_hit = red_early.execute(port);
                    }
                } else {
                    red_restart.execute(port);                                          // R5
                }
            }
            if (md.fred_struck == 1) {
                md.base.aqm_drop = true;
                md.base.drop_reason = md.fred_strike_reason;
            } else if (md.red_early_hit == 1) {
                md.base.aqm_drop = true;
                md.base.drop_reason = drop_reason_t.RED_EARLY;
            } else if (md.red_zone == RED_ZONE_FORCED) {                                // R6
                md.base.aqm_drop = true;
                md.base.drop_reason = drop_reason_t.RED_FORCED;
            }
        } else if (md.fred_qlen_before == 1 && report.pkt_type == TNA_PKT_DEPARTURE) {
            // D2: the flow's last packet left (here, beside strike_arrive: a
            // register's actions share its stage, and Tofino 1 places tables in
            // the control's order)
            strike_clear.execute(md.base.fred_slot_index);
        }
    }
}

#endif
