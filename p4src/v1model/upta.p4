// Useless Packet Transmission Avoidance, UPTA (Wu & Hassan, UNSW-CSE-TR-0215,
// 2002; docs/upta-plan.md §1). The paper runs UPTA inside WFQ routers; BMv2 has
// no WFQ scheduler, so the fair share fs comes from the controller (eqs. 18-19,
// written as this port's `upta` action parameters) and is enforced by per-flow
// probabilistic dropping, drop_prob = max(0, 1 - fs/rate) (Fig. 7), in the style
// of core-stateless fair queueing (the paper's [14]).
// The reference model, bit for bit: mmaqm.algorithms.upta.UptaPortModel.
//
// Per packet, in one action (BMv2 runs an action atomically, so the
// read-modify-write of a flow's registers cannot interleave):
//   slot   crc32 of the 5-tuple (compute_flow_signature, as FRED) & slot_mask, in the
//          port's region of UPTA_SLOTS_PER_PORT slots (plan §1.1);
//   E      arrival-rate estimate, R in bytes per K * 2^4, K = 2^k_shift us
//          (plan §1.3, CSFQ's exponential average to first order):
//            dt <  K:  R <- R + (l << 4) - ((dt * R) >> k_shift)
//            dt >= K or slot never used:  R <- l << 4
//          l = IPv4 total length; every arrival counts, dropped or not;
//   C      FLOW_COLLISION: the slot's last packet, less than K ago, was another flow;
//   q      the loss threshold: the P-UPTA option's, else tagged_q16 for tagged
//          packets, else none (UPTA_Q_NONE: never made U) (plan §1.5);
//   Fig. 7, without division: drop_prob > x  <=>  R (2^16 - x) > FS 2^16:
//     I    q exceeded with fs_I   -> U, drop UPTA_USELESS, event I_TO_U;
//          else u = random(0, 2^16 - 1); exceeded with u -> drop UPTA_FAIR_SHARE;
//     U/new q exceeded with fs_U  -> drop UPTA_USELESS;
//          else -> I, admitted without a random drop;
//   then the queue limit (occupancy.p4);
//   P      an admitted packet of a P-UPTA port carrying the option has q
//          rewritten per eq. 17 (plan §1.5): with p = 1 - FS/R,
//          1 - q_k = (1 - q_{k-1}) R / FS, the division by FS done with the
//          controller's reciprocal (mant, s): ratio = (R mant) >> s,
//          margin = ((2^16 - q) ratio) >> 16, q' = margin >= 2^16 ? 0 : 2^16 - margin;
//          unchanged when R <= FS (p = 0) or FS is none.
//   C-UPTA (mode C): only packets that came in on an edge port (upta_edge_port)
//          can become U, tested against min(local, path) shares of their BFD
//          path; the others get fair-share drops only (the paper's core runs
//          WFQ, not UPTA, §5.2).
#ifndef MMAQM_UPTA_P4
#define MMAQM_UPTA_P4

#include <v1model.p4>
#include "occupancy.p4"

register<bit<32>>(NUM_PORTS * UPTA_SLOTS_PER_PORT) upta_rate;            // R
register<timestamp_us_t>(NUM_PORTS * UPTA_SLOTS_PER_PORT) upta_last_us;  // 0 = never
register<bit<1>>(NUM_PORTS * UPTA_SLOTS_PER_PORT) upta_state;            // UPTA_STATE_*
register<bit<32>>(NUM_PORTS * UPTA_SLOTS_PER_PORT) upta_sig;             // crc32 of the last flow
// Bytes and packets that arrived per slot (dropped included): the controller's
// lambda_i (eqs. 18-19, plan §2).
counter(NUM_PORTS * UPTA_SLOTS_PER_PORT, CounterType.packets_and_bytes) upta_flow_bytes;
// Index port * NUM_UPTA_EVENTS + UPTA_EVENT_*.
counter(NUM_PORTS * NUM_UPTA_EVENTS, CounterType.packets) upta_events;
// QoS Probes and Reports that reached a port's AQM (index: the egress port), whatever
// its algorithm: among that port's UNTAGGED arrivals (main.p4), not a host's packets.
counter(NUM_PORTS, CounterType.packets) bfd_arrivals;

// drop_prob = 1 - fs/R > x/2^16, cross-multiplied (exact in bit<64>).
// fs = UPTA_FS_NONE never exceeds: R (2^16 - x) <= (2^32 - 1) 2^16.
bool upta_exceeds(in bit<32> rate, in bit<32> fs, in bit<32> x_q16) {
    return (bit<64>)rate * (bit<64>)(UPTA_Q16_ONE - x_q16) > ((bit<64>)fs << 16);
}

// Eq. 17 in fixed point (mmaqm.algorithms.upta.threshold_update_fixed).
bit<16> upta_threshold_update(in bit<16> q16, in bit<32> rate, in bit<32> fs,
                              in bit<32> mant, in shift_t shift) {
    bit<16> q_out = q16;
    if (rate > fs && mant != 0) {
        bit<64> ratio_q16 = ((bit<64>)rate * (bit<64>)mant) >> shift;
        bit<64> margin = ((bit<64>)(UPTA_Q16_ONE - (bit<32>)q16) * ratio_q16) >> 16;
        q_out = margin >= (bit<64>)UPTA_Q16_ONE ? 16w0 : (bit<16>)(UPTA_Q16_ONE - (bit<32>)margin);
    }
    return q_out;
}

// ---- BFD (upta §5.3, Fig. 8; plan §1.7)
// The ingress edge's state per BFD path (the messages' identifier, < BFD_PATHS):
register<bit<17>>(BFD_PATHS) upta_probe_seq;   // BFD_SEQ_VALID | sequence of the last probe; 0 none
register<bit<32>>(BFD_PATHS) upta_path_fs_u;   // alpha_min of the last accepted report; 0 none
register<bit<32>>(BFD_PATHS) upta_path_fs_i;   // alpha'_min

// RFC 1071 checksum arithmetic: the one's complement sum of 16-bit words, folded.
bit<16> ones_fold(in bit<32> sum) {
    bit<32> once = (sum & 0xFFFF) + (sum >> 16);
    return (bit<16>)((once & 0xFFFF) + (once >> 16));
}

// The two 16-bit words of a 32-bit field, added.
bit<32> bfd_words32(in bit<32> x) {
    return (bit<32>)x[31:16] + (bit<32>)x[15:0];
}

// The 16-bit words of a parsed flow spec, added (0 when the spec is not there).
bit<32> bfd_spec_sum(in bfd_spec_t spec) {
    bit<32> sum = 0;
    if (spec.isValid()) {
        sum = bfd_words32(spec.src_addr) + bfd_words32(spec.dst_addr)
              + (bit<32>)spec.src_port + (bit<32>)spec.dst_port
              + (bit<32>)(spec.protocol ++ spec.flags) + (bit<32>)spec.reserved;
    }
    return sum;
}

// Edge ports (configuration, table upta_edge_port): ports facing hosts or other
// domains. A packet that came in on one is at its ingress edge (C-UPTA), and a
// QoS Probe or Report that came in on one is outside the UPTA domain: dropped and
// counted, whatever its address (plan §1.7 "Security").
control UptaEdge(in headers_t hdr, inout local_metadata_t meta,
                 in standard_metadata_t standard_metadata) {
    action upta_edge() {
        meta.upta_from_edge = true;
    }

    // The controller's port (BMv2 --cpu-port, P4Runtime PacketOut): probes from it
    // originate here (plan §1.7 "Probe generation"); only it may originate probes.
    action upta_cpu() {
        meta.upta_from_cpu = true;
    }

    table upta_edge_port {
        key = { standard_metadata.ingress_port : exact @name("port"); }
        actions = { upta_edge; upta_cpu; @defaultonly NoAction; }
        const default_action = NoAction();
        size = NUM_PORTS;
    }

    apply {
        upta_edge_port.apply();
    }
}

// A QoS Probe or Report (hdr.bfd valid) before routing: the BFD endpoint roles.
//   from an edge port: dropped, PROBE_FROM_EDGE / REPORT_FROM_EDGE;
//   a probe from the controller's port (upta_cpu) with identifier < BFD_PATHS:
//     this router is the path's ingress edge: its sequence is remembered for the
//     report, PROBE_SENT, and it is routed (and lowered) like any probe;
//   probe to this router (upta_local_addr) from a domain port: egress edge; with
//     a correct checksum over every parsed spec it becomes the report in place
//     (type 21, addresses swapped, TTL 64, 16 bytes; at most one packet per
//     probe) and is routed back, PROBE_ANSWERED; else dropped, PROBE_MALFORMED;
//   report to this router from a domain port: ingress edge; consumed: correct
//     checksum and length, else REPORT_MALFORMED; identifier < BFD_PATHS and the
//     sequence of the path's last probe, else REPORT_STALE; then the path's
//     minima are written, REPORT_ACCEPTED;
//   anything else is in transit: routed (a probe is lowered by the upta port it
//     leaves through, Upta below).
// Events count at index ingress port * NUM_UPTA_EVENTS + event.
control BfdEndpoint(inout headers_t hdr, inout local_metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    action upta_local() {}

    // This router's own addresses (a /32 each, plan §1.7 "Router addresses").
    table upta_local_addr {
        key = { hdr.ipv4.dst_addr : exact @name("addr"); }
        actions = { upta_local; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 4;
    }

    @hidden
    action count_event(bit<32> event) {
        if ((bit<32>)standard_metadata.ingress_port < NUM_PORTS) {
            upta_events.count((bit<32>)standard_metadata.ingress_port * NUM_UPTA_EVENTS + event);
        }
    }

    @hidden
    action consume(bit<32> event) {
        meta.bfd_consumed = true;
        count_event(event);
    }

    // The ICMP checksum check (RFC 1071): the one's complement sum of every parsed
    // 16-bit word, the checksum included, is 0xFFFF for a correct message. Summed
    // word by word (BMv2's csum16 hash over the spec stack did not give it).
    @hidden
    action icmp_check(out bool correct) {
        bit<32> sum = (bit<32>)(hdr.icmp.icmp_type ++ hdr.icmp.icmp_code)
                      + (bit<32>)hdr.icmp.checksum + (bit<32>)hdr.bfd.identifier
                      + (bit<32>)hdr.bfd.sequence + bfd_words32(hdr.bfd.fs_u)
                      + bfd_words32(hdr.bfd.fs_i) + bfd_spec_sum(hdr.bfd_specs[0])
                      + bfd_spec_sum(hdr.bfd_specs[1]) + bfd_spec_sum(hdr.bfd_specs[2])
                      + bfd_spec_sum(hdr.bfd_specs[3]);
        correct = ones_fold(sum) == 0xFFFF;
    }

    // The egress edge's answer (§5.3.3, mmaqm.algorithms.upta.report_for).
    @hidden
    action answer_probe() {
        hdr.icmp.icmp_type = ICMP_QOS_REPORT;
        ipv4_addr_t probe_src = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = probe_src;
        hdr.ipv4.ttl = BFD_REPORT_TTL;
        hdr.ipv4.total_len = BFD_IP_LEN;
        hdr.bfd_specs[0].setInvalid();
        hdr.bfd_specs[1].setInvalid();
        hdr.bfd_specs[2].setInvalid();
        hdr.bfd_specs[3].setInvalid();
        truncate(BFD_REPORT_FRAME_BYTES);
        hdr.icmp.checksum = ~ones_fold((bit<32>)(ICMP_QOS_REPORT ++ hdr.icmp.icmp_code)
                                       + (bit<32>)hdr.bfd.identifier + (bit<32>)hdr.bfd.sequence
                                       + bfd_words32(hdr.bfd.fs_u) + bfd_words32(hdr.bfd.fs_i));
        count_event(UPTA_EVENT_PROBE_ANSWERED);
    }

    @hidden
    action send_probe() {
        upta_probe_seq.write((bit<32>)hdr.bfd.identifier,
                             BFD_SEQ_VALID | (bit<17>)hdr.bfd.sequence);
        count_event(UPTA_EVENT_PROBE_SENT);
    }

    @hidden
    action accept_report() {
        bit<32> path = (bit<32>)hdr.bfd.identifier;
        bit<17> last_seq;
        upta_probe_seq.read(last_seq, path);
        if (last_seq == (BFD_SEQ_VALID | (bit<17>)hdr.bfd.sequence)) {
            upta_path_fs_u.write(path, hdr.bfd.fs_u);
            upta_path_fs_i.write(path, hdr.bfd.fs_i);
            consume(UPTA_EVENT_REPORT_ACCEPTED);
            digest<bfd_report_digest_t>(BFD_REPORT_DIGEST_RECEIVER, {
                hdr.bfd.identifier, hdr.bfd.sequence, hdr.bfd.fs_u, hdr.bfd.fs_i });
        } else {
            consume(UPTA_EVENT_REPORT_STALE);
        }
    }

    apply {
        bool is_probe = hdr.icmp.icmp_type == ICMP_QOS_PROBE;
        if (meta.upta_from_edge) {
            consume(is_probe ? UPTA_EVENT_PROBE_FROM_EDGE : UPTA_EVENT_REPORT_FROM_EDGE);
        } else if (meta.upta_from_cpu && is_probe && (bit<32>)hdr.bfd.identifier < BFD_PATHS) {
            send_probe();
        } else if (upta_local_addr.apply().hit) {
            bool correct;
            icmp_check(correct);
            bool wellformed = meta.bfd_complete && correct;
            if (is_probe) {
                if (wellformed) {
                    answer_probe();
                } else {
                    consume(UPTA_EVENT_PROBE_MALFORMED);
                }
            } else if (!wellformed) {
                consume(UPTA_EVENT_REPORT_MALFORMED);
            } else if ((bit<32>)hdr.bfd.identifier >= BFD_PATHS) {
                consume(UPTA_EVENT_REPORT_STALE);
            } else {
                accept_report();
            }
        }
    }
}

control Upta(inout headers_t hdr, inout local_metadata_t meta,
             inout standard_metadata_t standard_metadata) {
#include "occupancy_steps.p4"
#include "flow_signature.p4"

    @hidden  // applied by the control, never by the controller: not in the P4Info
    action upta_admission() {
        queue_arrival();

        compute_flow_signature();
        bit<32> slot_index = meta.port_index * UPTA_SLOTS_PER_PORT
                             + (meta.flow_signature & meta.policy.upta_slot_mask);
        upta_flow_bytes.count(slot_index);
        bit<32> rate;
        timestamp_us_t last_us;
        bit<1> state;
        bit<32> last_sig;
        upta_rate.read(rate, slot_index);
        upta_last_us.read(last_us, slot_index);
        upta_state.read(state, slot_index);
        upta_sig.read(last_sig, slot_index);

        // E: the estimator; C: a collision.
        timestamp_us_t now_us = standard_metadata.ingress_global_timestamp;
        timestamp_us_t dt_us = now_us - last_us;
        shift_t k_shift = meta.policy.upta_k_shift;
        bool fresh = last_us != 0 && (dt_us >> k_shift) == 0;   // dt < K
        if (fresh && last_sig != meta.flow_signature) {
            upta_events.count(meta.port_index * NUM_UPTA_EVENTS + UPTA_EVENT_FLOW_COLLISION);
        }
        bit<32> sample = (bit<32>)hdr.ipv4.total_len << UPTA_RATE_FRAC_BITS;
        if (fresh) {
            bit<64> decay = ((bit<64>)dt_us * (bit<64>)rate) >> k_shift;
            bit<64> next = (bit<64>)rate - decay + (bit<64>)sample;
            rate = next > (bit<64>)0xFFFFFFFF ? 32w0xFFFFFFFF : (bit<32>)next;
        } else {
            rate = sample;
        }
        upta_rate.write(slot_index, rate);
        upta_last_us.write(slot_index, now_us);
        upta_sig.write(slot_index, meta.flow_signature);

        // q: the option's, else tagged packets', else none.
        bit<16> q16 = UPTA_Q_NONE;
        if (hdr.upta_option.isValid()) {
            q16 = hdr.upta_option.q16;
        } else if (meta.class_id == traffic_class_t.TAGGED) {
            q16 = meta.policy.upta_tagged_q16;
        }
        bit<32> fs_i = meta.policy.upta_fs_i_scaled;
        bit<32> fs_u = meta.policy.upta_fs_u_scaled;
        if (meta.policy.upta_mode == UPTA_MODE_C) {
            if (meta.upta_from_edge) {   // ingress edge: the path minima (eqs. 23-24)
                fs_i = meta.upta_path_fs_i < fs_i ? meta.upta_path_fs_i : fs_i;
                fs_u = meta.upta_path_fs_u < fs_u ? meta.upta_path_fs_u : fs_u;
            } else {                     // core: fair-share drops only (§5.2)
                q16 = UPTA_Q_NONE;
            }
        }

        // Fig. 7
        bit<32> fs;
        bit<32> mant;
        shift_t inv_shift;
        if (state == UPTA_STATE_I) {
            fs = fs_i;
            mant = meta.policy.upta_inv_fs_i_mant;
            inv_shift = meta.policy.upta_inv_fs_i_shift;
            if (q16 != UPTA_Q_NONE && upta_exceeds(rate, fs, (bit<32>)q16)) {
                upta_state.write(slot_index, UPTA_STATE_U);
                upta_events.count(meta.port_index * NUM_UPTA_EVENTS + UPTA_EVENT_I_TO_U);
                meta.aqm_drop = true;
                meta.drop_reason = drop_reason_t.UPTA_USELESS;
            } else {
                bit<32> u_q16;
                random(u_q16, 0, PROB_ONE - 1);
                if (upta_exceeds(rate, fs, u_q16)) {
                    meta.aqm_drop = true;
                    meta.drop_reason = drop_reason_t.UPTA_FAIR_SHARE;
                }
            }
        } else {
            fs = fs_u;
            mant = meta.policy.upta_inv_fs_u_mant;
            inv_shift = meta.policy.upta_inv_fs_u_shift;
            if (q16 != UPTA_Q_NONE && upta_exceeds(rate, fs, (bit<32>)q16)) {
                meta.aqm_drop = true;
                meta.drop_reason = drop_reason_t.UPTA_USELESS;
            } else {
                upta_state.write(slot_index, UPTA_STATE_I);
            }
        }
        queue_admit_or_drop();
        if (!meta.admitted) {
            mark_to_drop(standard_metadata);
        } else if (meta.policy.upta_mode == UPTA_MODE_P && hdr.upta_option.isValid()
                   && hdr.upta_option.q16 != UPTA_Q_NONE) {   // P: eq. 17
            hdr.upta_option.q16 = upta_threshold_update(hdr.upta_option.q16, rate, fs,
                                                        mant, inv_shift);
        }
    }

    // A QoS Probe or Report in transit: BFD control traffic, not a flow. Only the
    // queue limit applies; a probe leaving through this port has its path minima
    // lowered to the port's shares (eqs. 25-26) with the ICMP checksum updated
    // incrementally (RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m'), for the four changed
    // words; mmaqm.algorithms.upta.lower_probe); at a mode-C port its flow specs
    // are digested (bfd_spec_digest_t, mmaqm_oracle.upta_model.spec_digest).
    @hidden
    action upta_bfd_transit() {
        queue_arrival();
        queue_admit_or_drop();
        if (!meta.admitted) {
            mark_to_drop(standard_metadata);
        } else if (hdr.icmp.icmp_type == ICMP_QOS_PROBE) {
            bit<32> old_u = hdr.bfd.fs_u;
            bit<32> old_i = hdr.bfd.fs_i;
            bit<32> new_u = meta.policy.upta_fs_u_scaled < old_u ? meta.policy.upta_fs_u_scaled : old_u;
            bit<32> new_i = meta.policy.upta_fs_i_scaled < old_i ? meta.policy.upta_fs_i_scaled : old_i;
            bit<32> sum = (bit<32>)(~hdr.icmp.checksum)
                          + (bit<32>)(~old_u[31:16]) + (bit<32>)new_u[31:16]
                          + (bit<32>)(~old_u[15:0]) + (bit<32>)new_u[15:0]
                          + (bit<32>)(~old_i[31:16]) + (bit<32>)new_i[31:16]
                          + (bit<32>)(~old_i[15:0]) + (bit<32>)new_i[15:0];
            hdr.icmp.checksum = ~ones_fold(sum);
            hdr.bfd.fs_u = new_u;
            hdr.bfd.fs_i = new_i;
            upta_events.count(meta.port_index * NUM_UPTA_EVENTS + UPTA_EVENT_PROBE_LOWERED);
            // C-UPTA core (§5.3.2): the specs' S bits go to this router's controller,
            // which counts the U flows in N and M (eqs. 18-19) although their packets
            // no longer arrive; not for the ingress edge's own probes (from_cpu: its
            // controller wrote the specs), nor for a probe without specs.
            bit<8> spec_count = (bit<8>)(bit<1>)hdr.bfd_specs[0].isValid()
                                + (bit<8>)(bit<1>)hdr.bfd_specs[1].isValid()
                                + (bit<8>)(bit<1>)hdr.bfd_specs[2].isValid()
                                + (bit<8>)(bit<1>)hdr.bfd_specs[3].isValid();
            if (meta.policy.upta_mode == UPTA_MODE_C && !meta.upta_from_cpu && spec_count != 0) {
                digest<bfd_spec_digest_t>(BFD_SPEC_DIGEST_RECEIVER, {
                meta.routed_port, hdr.bfd.identifier, hdr.bfd.sequence, spec_count,
                hdr.bfd_specs[0].src_addr, hdr.bfd_specs[0].dst_addr, hdr.bfd_specs[0].src_port,
                hdr.bfd_specs[0].dst_port, hdr.bfd_specs[0].protocol, hdr.bfd_specs[0].flags,
                hdr.bfd_specs[1].src_addr, hdr.bfd_specs[1].dst_addr, hdr.bfd_specs[1].src_port,
                hdr.bfd_specs[1].dst_port, hdr.bfd_specs[1].protocol, hdr.bfd_specs[1].flags,
                hdr.bfd_specs[2].src_addr, hdr.bfd_specs[2].dst_addr, hdr.bfd_specs[2].src_port,
                hdr.bfd_specs[2].dst_port, hdr.bfd_specs[2].protocol, hdr.bfd_specs[2].flags,
                hdr.bfd_specs[3].src_addr, hdr.bfd_specs[3].dst_addr, hdr.bfd_specs[3].src_port,
                hdr.bfd_specs[3].dst_port, hdr.bfd_specs[3].protocol, hdr.bfd_specs[3].flags });
            }
        }
    }

    action upta_path(bit<32> path) {
        bit<32> fs_u;
        bit<32> fs_i;
        upta_path_fs_u.read(fs_u, path);
        upta_path_fs_i.read(fs_i, path);
        meta.upta_path_fs_u = fs_u == 0 ? UPTA_FS_NONE : fs_u;
        meta.upta_path_fs_i = fs_i == 0 ? UPTA_FS_NONE : fs_i;
    }

    action upta_no_path() {
        meta.upta_path_fs_u = UPTA_FS_NONE;
        meta.upta_path_fs_i = UPTA_FS_NONE;
    }

    // C-UPTA ingress edge: the BFD path of the packet's destination (plan §1.6).
    table upta_bfd_path {
        key = { hdr.ipv4.dst_addr : lpm @name("ipv4_dst"); }
        actions = { upta_path; @defaultonly upta_no_path; }
        const default_action = upta_no_path();
        size = BFD_PATHS;
    }

    // IPv6 on a UPTA port: UPTA's rate estimator, loss thresholds and BFD are
    // IPv4's (upta §4: q travels in an IPv4 option). An IPv6 packet gets the
    // port's queue limit only, like DROP_TAIL: no flow slot, no UPTA event.
    @hidden
    action upta_ipv6_fifo() {
        queue_arrival();
        queue_admit_or_drop();
        if (!meta.admitted) {
            mark_to_drop(standard_metadata);
        }
    }

    apply {
        if (hdr.ipv6.isValid()) {
            upta_ipv6_fifo();
        } else if (hdr.bfd.isValid()) {
            upta_bfd_transit();
        } else {
            if (meta.policy.upta_mode == UPTA_MODE_C && meta.upta_from_edge) {
                upta_bfd_path.apply();
            }
            upta_admission();
        }
    }
}

#endif
