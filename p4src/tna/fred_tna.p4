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

const bit<32> FRED_SLOT_SHIFT = 12;   // log2(FRED_SLOTS_PER_PORT)

control TnaFred(in headers_t hdr, in tna_report_h report, inout tna_ingress_metadata_t md) {
    Register<bit<16>, tna_index_t>(NUM_PORTS * FRED_SLOTS_PER_PORT, 0) fred_qlen;
    Register<bit<8>, tna_index_t>(NUM_PORTS * FRED_SLOTS_PER_PORT, 0) fred_strike;
    Register<bit<16>, tna_index_t>(NUM_PORTS, 0) fred_nactive;
    Register<scaled_t, tna_index_t>(NUM_PORTS, 0) fred_avg_copy;
    Register<bit<32>, tna_index_t>(NUM_PORTS, 0) red_budget_q16;
    Lpf<scaled_t, tna_index_t>(NUM_PORTS) fred_avg;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) flow_hash;
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

    apply {
        tna_index_t port = md.base.port_index;
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
                    md.fred_avg = fred_avg.execute(md.queue_scaled,
                                                   port);
                    avg_store.execute(port);
                }
            }
        } else {
            bit<32> signature = flow_hash.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                                                hdr.ipv4.protocol, md.base.l4_src_port,
                                                md.base.l4_dst_port });
            tna_index_t slot = (port << FRED_SLOT_SHIFT)
                               + (signature & md.base.policy.fred_slot_mask);
            md.base.fred_slot_index = slot;
            md.base.fred_admitted = md.counted;   // qlen counted: a cancel or D2 undoes it
            bit<16> nactive;
            if (md.counted) {
                md.fred_qlen_seen = qlen_arrive.execute(slot);
            } else {
                md.fred_qlen_seen = qlen_read.execute(slot);
            }
            if (md.counted && md.fred_qlen_seen == 0) {
                nactive = nactive_join.execute(port);
            } else {
                nactive = nactive_read.execute(port);
            }
            // A1: only an arrival at an empty queue moves the average
            if (md.queue_scaled == 0) {
                md.fred_avg = fred_avg.execute(0, port);
                avg_store.execute(port);
            } else {
                md.fred_avg = avg_load.execute(port);
            }
            md.base.red_avg_scaled = md.fred_avg;
            md.fred_flows = nactive;
            if (nactive == 0) {
                md.fred_flows = 1;
            }
            lg_qlen.apply(md.fred_qlen_seen, md.lg_qlen);
            lg_flows.apply(md.fred_flows, md.lg_flows);
            lg_avg.apply(md.fred_avg, md.lg_avg);
            // qlen * n >= avg / 2^16 and qlen * n > 2 avg / 2^16, in Q4 logs
            // (16 an octave: 2^16 is 256, a factor 2 is 16)
            bit<16> lg_share = md.lg_qlen + md.lg_flows + 256;
            bool at_avgcq = md.fred_avg == 0 || (md.fred_qlen_seen != 0 && lg_share >= md.lg_avg);
            bool over_twice = md.fred_qlen_seen != 0 && lg_share > md.lg_avg + 16;
            bool congested = md.fred_avg >= md.base.policy.max_th_scaled;
            scaled_t maxq_scaled = md.base.policy.min_th_scaled;                     // A2
            if (congested) {
                maxq_scaled = FRED_MAXQ_CONGESTED_PKTS << AVG_FRAC_BITS;
            }
            bool r1 = ((scaled_t)md.fred_qlen_seen << AVG_FRAC_BITS) >= maxq_scaled;
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
            if ((pkts_t)md.fred_qlen_seen >= md.base.policy.minq_pkts && at_avgcq) {
                md.fred_robust = 1;
            }
            md.red_rand_q16 = (bit<32>)rand16.get();
            zone.apply(md, md.fred_avg);
            if (strike_arrive.execute(slot) == 1) {                                  // R1-R3
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
