// Flow Random Early Drop, FRED (Lin & Morris, SIGCOMM '97; cbt §2.3).
// RED with per-active-flow accounting: a flow is "active" while it has packets
// in the queue; each holds qlen packets and a strike count, and the port keeps
// nactive, the number of active flows. avgcq = avg / nactive is the average
// per-flow share. Rules (the numbering of mmaqm.algorithms.fred, the
// reference model this control must match bit for bit):
//   arrival (ingress, fred_admission)
//     A1  queue empty: avg decays over the idle time (red.p4's idle decay, or
//         one EWMA step towards 0 without a configured rate);
//     A2  maxq = min_th, or FRED_MAXQ_CONGESTED_PKTS while avg >= max_th;
//     R1  qlen >= maxq                        -> drop FRED_MAXQ,        strike + 1
//     R2  avg >= max_th and qlen > 2 avgcq    -> drop FRED_TWICE_AVGCQ, strike + 1
//     R3  qlen >= avgcq and strike > 1        -> drop FRED_STRIKE,      strike + 1
//     R4  min_th <= avg < max_th: count + 1; a "robust" flow
//         (qlen >= max(minq, avgcq)) is dropped RED_EARLY as RED would
//     R5  avg < min_th: count restarts, no drop
//     R6  avg >= max_th: drop RED_FORCED
//     R7  the queue limit (occupancy.p4)
//     A3  admitted: qlen + 1, nactive + 1 when qlen was 0
//   departure (egress, fred_departure)
//     D1  avg = EWMA of the queue left behind, at every departure
//     D2  qlen - 1; at 0 the flow is gone: nactive - 1, strike = 0.
// avg is only updated by A1 and D1 (FRED's figure: at departures, and at
// arrivals to an idle queue), so in a frozen queue it stays put.
// Flows are slots: compute_flow_signature (flow_signature.p4) of the 5-tuple masked by
// the policy's fred_slot_mask, in the port's own region of FRED_SLOTS_PER_PORT
// slots; flows that share a slot share qlen and strike.
// No division in the data plane: qlen >= avgcq  <=>  (qlen << 16) * n >= avg_scaled,
// n = max(nactive, 1), exact in bit<64>.
// Every ingress increment has its egress decrement: egress runs D1/D2 only for
// packets this control admitted (meta.fred_admitted), and the traffic manager
// never drops (its depth is above queue_limit_pkts), so per-flow state returns to
// 0 when the queue drains; a policy epoch cannot clear 2^18 slots, and need not.
#ifndef MMAQM_FRED_P4
#define MMAQM_FRED_P4

#include <v1model.p4>
#include "averages.p4"
#include "occupancy.p4"
#include "red.p4"

register<bit<16>>(NUM_PORTS * FRED_SLOTS_PER_PORT) fred_qlen;   // packets of the flow queued
register<bit<8>>(NUM_PORTS * FRED_SLOTS_PER_PORT) fred_strike;  // saturating at 255
register<bit<32>>(NUM_PORTS) fred_nactive;                      // slots with qlen > 0

// Egress, for a packet fred_admission admitted: D1 and D2. Runs after
// queue_departure, so queue_pkts is the queue the packet left behind.
action fred_departure(in bit<32> port_index, in bit<32> slot_index, in shift_t ewma_shift) {
    pkts_t queue_after;
    queue_pkts.read(queue_after, port_index);
    scaled_t avg;
    red_avg_scaled.read(avg, port_index);
    red_avg_scaled.write(port_index, ewma(avg, to_scaled(queue_after), ewma_shift));   // D1
    bit<16> qlen;
    fred_qlen.read(qlen, slot_index);
    if (qlen == 1) {                                                                  // D2
        fred_qlen.write(slot_index, 0);
        fred_strike.write(slot_index, 0);
        bit<32> nactive;
        fred_nactive.read(nactive, port_index);
        fred_nactive.write(port_index, nactive == 0 ? 0 : nactive - 1);
    } else if (qlen > 1) {
        fred_qlen.write(slot_index, qlen - 1);
    }
}

control Fred(inout headers_t hdr, inout local_metadata_t meta,
             inout standard_metadata_t standard_metadata) {
#include "occupancy_steps.p4"
#include "flow_signature.p4"
#include "red_steps.p4"

    @hidden  // applied by the control, never by the controller: not in the P4Info
    action fred_admission() {
        queue_arrival();
        red_on_policy_epoch();

        compute_flow_signature();
        bit<32> slot_index = meta.port_index * FRED_SLOTS_PER_PORT
                             + (meta.flow_signature & meta.policy.fred_slot_mask);
        bit<16> qlen;
        bit<8> strike;
        bit<32> nactive;
        fred_qlen.read(qlen, slot_index);
        fred_strike.read(strike, slot_index);
        fred_nactive.read(nactive, meta.port_index);

        // A1: only an arrival at an empty queue moves the average.
        if (meta.occupancy.queue_pkts == 0) {
            red_average_update(0);
        } else {
            red_avg_scaled.read(meta.red_avg_scaled, meta.port_index);
        }
        scaled_t avg = meta.red_avg_scaled;
        scaled_t min_th = meta.policy.min_th_scaled;
        scaled_t max_th = meta.policy.max_th_scaled;

        scaled_t maxq_scaled = avg >= max_th ? to_scaled(FRED_MAXQ_CONGESTED_PKTS) : min_th;  // A2
        bit<32> flows = nactive == 0 ? 1 : nactive;
        bit<64> share = (bit<64>)to_scaled((pkts_t)qlen) * (bit<64>)flows;  // qlen * avg/avgcq
        bool at_avgcq = share >= (bit<64>)avg;                              // qlen >= avgcq
        bool struck = true;
        if (to_scaled((pkts_t)qlen) >= maxq_scaled) {                                    // R1
            meta.drop_reason = drop_reason_t.FRED_MAXQ;
        } else if (avg >= max_th && share > ((bit<64>)avg << 1)) {                       // R2
            meta.drop_reason = drop_reason_t.FRED_TWICE_AVGCQ;
        } else if (at_avgcq && strike > FRED_STRIKE_LIMIT) {                             // R3
            meta.drop_reason = drop_reason_t.FRED_STRIKE;
        } else {
            struck = false;
        }
        if (struck) {
            meta.aqm_drop = true;
            fred_strike.write(slot_index, strike == FRED_STRIKE_MAX ? strike : strike + 1);
        } else if (avg >= max_th) {                                                      // R6
            meta.aqm_drop = true;
            meta.drop_reason = drop_reason_t.RED_FORCED;
            red_count.write(meta.port_index, 0);
        } else if (avg < min_th) {                                                       // R5
            red_count.write(meta.port_index, 0);
        } else {                                                                         // R4
            red_next_count();
            // robust flow: qlen >= max(minq, avgcq); then red.p4's uniform-gap p_a
            if ((pkts_t)qlen >= meta.policy.minq_pkts && at_avgcq) {
                meta.red.p_b_q16 = red_p_b_q16(avg, min_th, meta.policy.red_slope_q24);
                if ((bit<64>)meta.red.count * meta.red.p_b_q16 > (bit<64>)meta.red.rand_q16) {
                    meta.aqm_drop = true;
                    meta.drop_reason = drop_reason_t.RED_EARLY;
                    meta.red.count = 0;
                }
            }
            red_count.write(meta.port_index, meta.red.count);
        }
        queue_admit_or_drop(); // R7
        if (meta.admitted) {                                                             // A3
            fred_qlen.write(slot_index, qlen + 1);
            if (qlen == 0) {
                fred_nactive.write(meta.port_index, nactive + 1);
            }
            meta.fred_admitted = true;
            meta.fred_slot_index = slot_index;
        } else {
            mark_to_drop(standard_metadata);
        }
    }

    apply {
        fred_admission();
    }
}

#endif
