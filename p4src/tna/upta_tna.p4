// UPTA and the BFD endpoint on Tofino (upta.p4 on v1model; Wu & Hassan 2002,
// Fig. 7, eq. 17, §5.3). The same decisions, reshaped for a pipeline of
// stages (docs/tofino.md lists each difference):
//  * the slot: port * TNA_UPTA_SLOTS_PER_PORT + (crc32 & slot_mask), the mask
//    applied in the policy's action, the concatenation an identity hash;
//    512 slots a port (v1model 4096: the filter and registers of 1024 slots
//    a port do not fit a stage's map RAMs);
//  * the rate R: a per-slot Lpf in rate mode (time constant K, set through
//    BfRt, not P4Runtime) on the sample total_length << 4, in place of
//    v1model's first-order step R + 16 l - dt R / K (a product of two run-time
//    values); both are exponential averages of 16 bytes per K;
//  * FLOW_COLLISION: the slot's last signature and arrival time, two registers,
//    and K in the clock's 1.024 us units (2.4 % longer);
//  * Fig. 7's R (2^16 - x) > fs 2^16, x = q or a random u, as
//    lg R + lg(2^16 - x) > lg fs + 256 with log2 in Q4 (log2_tna.p4): the
//    headroom h = (lg fs + 256) |-| (lg R + lg(2^16 - x)) is 0 when exceeded;
//  * the flow's state and the verdict: one RegisterAction that writes the
//    code of the flow's old state (upta_codes, from the three headrooms);
//  * eq. 17's q' = 2^16 - (2^16 - q) R / fs from the same headroom, by an
//    antilog table (log2_tna.p4 TnaUptaAntilog), unchanged when R <= fs
//    (exact: R |-| fs);
//  * C-UPTA's path minima: the path's registers read, min(local, path) taken
//    in the log domain (a stateful ALU's min must write back);
//  * a report's sequence check and store: one RegisterAction per share on a
//    {sequence, share} pair (each keeps the probe's sequence);
//  * BFD: the ICMP checksum is verified by the parser's Checksum and rewritten
//    by the deparser's; this router's addresses are v1model's table
//    upta_local_addr, in routing's stage (routing.p4 MMAQM_ROUTE_ANSWERS: its
//    hit routes a probe on its source, where the answer goes); the answer
//    leaves the probe's flow specs unemitted instead of truncating the frame.
#ifndef MMAQM_UPTA_TNA_P4
#define MMAQM_UPTA_TNA_P4

#include "tna_types.p4"
#include "log2_tna.p4"

// The state register's value: bit 7 the flow's state after this packet (1 = I),
// bit 6 its state before it (1 = I), bit 2 I -> U, bits 1-0 the verdict.
// A slot never used reads 0: U (Fig. 7 treats a new flow as U).
const bit<8> UPTA_CODE_NOW_I = 0x80;
const bit<8> UPTA_CODE_WAS_I = 0x40;
const bit<8> UPTA_CODE_I_TO_U = 0x04;
const bit<2> UPTA_VERDICT_USELESS = 1;
const bit<2> UPTA_VERDICT_FAIR_SHARE = 2;
// the codes, by old state and tests (upta_codes)
const bit<8> UPTA_I_USELESS = 0x45;     // I, q exceeded: -> U, UPTA_USELESS
const bit<8> UPTA_I_FAIR_SHARE = 0xC2;  // I, u exceeded: stays I, UPTA_FAIR_SHARE
const bit<8> UPTA_I_ADMIT = 0xC0;       // I, neither: admitted
const bit<8> UPTA_U_USELESS = 0x01;     // U, q exceeded with fs_U: UPTA_USELESS
const bit<8> UPTA_U_ADMIT = 0x80;       // U otherwise: -> I, admitted

// The endpoint's register operation (TnaBfdEndpoint)
const bit<2> BFD_SEQ_STORE = 1;   // a probe from the controller's port: remember its sequence
const bit<2> BFD_SEQ_CHECK = 2;   // a report to this router: its path's last sequence?
const bit<8> BFD_NO_EVENT = 0xFF;

// What the packet alone decides, in the first stage (main.p4 applies it to
// every packet): the edge and controller ports (upta.p4 UptaEdge), C-UPTA's
// BFD path (upta.p4 upta_bfd_path), the rate filter's sample and Fig. 7's
// random draw.
control TnaUptaLookup(in headers_t hdr, inout tna_ingress_metadata_t md,
                      in PortId_t ingress_port) {
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) sample_hash;
    Random<bit<16>>() rand16;

    action upta_edge() { md.base.upta_from_edge = true; }
    action upta_cpu() { md.base.upta_from_cpu = true; }

    table upta_edge_port {
        key = { ingress_port : exact @name("port"); }
        actions = { upta_edge; upta_cpu; @defaultonly NoAction; }
        const default_action = NoAction();
        size = NUM_PORTS;
    }

    action upta_path(bit<32> path) {
        md.upta_path_index = path;
        md.upta_path_hit = true;
    }
    action upta_no_path() {}

    // C-UPTA ingress edge: the BFD path of the packet's destination
    table upta_bfd_path {
        key = { hdr.ipv4.dst_addr : lpm @name("ipv4_dst"); }
        actions = { upta_path; @defaultonly upta_no_path; }
        const default_action = upta_no_path();
        size = BFD_PATHS;
    }

    // the sample total_length << UPTA_RATE_FRAC_BITS (4), as an identity hash
    // of {total_length, 4w0} (a shift into a wider field cannot be placed)
    action take_sample() { md.upta_sample = sample_hash.get({ hdr.ipv4.total_len, 4w0 }); }
    @hidden table upta_sample {
        actions = { take_sample; }
        const default_action = take_sample();
        size = 1;
    }
    // Fig. 7's random draw, as 2^16 - 1 - u (u uniform: so is the draw)
    action take_draw() { md.upta_draw = rand16.get(); }
    @hidden table upta_random {
        actions = { take_draw; }
        const default_action = take_draw();
        size = 1;
    }

    // A report's minima as TnaUptaPath stores them: v1model reads a stored 0
    // as no report (UPTA_FS_NONE)
    action report_shares() {
        md.bfd_report_fs_u = hdr.bfd.fs_u;
        md.bfd_report_fs_i = hdr.bfd.fs_i;
    }
    action report_shares_none_u() {
        md.bfd_report_fs_u = UPTA_FS_NONE;
        md.bfd_report_fs_i = hdr.bfd.fs_i;
    }
    action report_shares_none_i() {
        md.bfd_report_fs_u = hdr.bfd.fs_u;
        md.bfd_report_fs_i = UPTA_FS_NONE;
    }
    action report_shares_none() {
        md.bfd_report_fs_u = UPTA_FS_NONE;
        md.bfd_report_fs_i = UPTA_FS_NONE;
    }
    @hidden table bfd_report_shares {
        key = { hdr.bfd.fs_u : ternary; hdr.bfd.fs_i : ternary; }
        actions = { report_shares; report_shares_none; report_shares_none_u; report_shares_none_i; }
        const entries = {
            (0, 0) : report_shares_none();
            (0, _) : report_shares_none_u();
            (_, 0) : report_shares_none_i();
        }
        const default_action = report_shares();
        size = 4;
    }

    apply {
        upta_edge_port.apply();
        if (hdr.bfd.isValid()) {
            bfd_report_shares.apply();
        }
        if (hdr.ipv4.isValid() && !hdr.bfd.isValid()) {
            upta_bfd_path.apply();
            upta_sample.apply();
            upta_random.apply();
        }
    }
}

// The BFD endpoint roles (upta.p4 BfdEndpoint), for a QoS Probe or Report that
// passed the ingress checks (md.ipv4_forwardable): one decision list in
// BfdEndpoint's order (the first matching entry wins). A consumed message is
// dropped here; main.p4 keeps it from the AQM and from the ingress discards.
// Its sequence register and its events follow in their own stages
// (TnaBfdSequence, TnaBfdEvents).
control TnaBfdEndpoint(inout headers_t hdr, inout tna_ingress_metadata_t md,
                       inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    action consume(bit<8> event) {
        md.base.bfd_consumed = true;
        md.bfd_event = event;
        ig_dprsr_md.drop_ctl = 1;
    }

    action send_probe() {
        md.bfd_seq_op = BFD_SEQ_STORE;
        md.upta_path_index = (tna_index_t)hdr.bfd.identifier;
        md.bfd_seq_key = (bit<32>)hdr.bfd.sequence | (bit<32>)BFD_SEQ_VALID;
        md.bfd_event = (bit<8>)UPTA_EVENT_PROBE_SENT;
    }

    // The egress edge's answer (§5.3.3, upta.p4 answer_probe): routing has
    // already taken the probe's source (the parser's route_dst_addr) and
    // decremented the TTL, so the TTL written is v1model's after routing.
    action answer_probe() {
        hdr.icmp.icmp_type = ICMP_QOS_REPORT;
        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = md.base.route_dst_addr;
        hdr.ipv4.ttl = BFD_REPORT_TTL - 1;
        hdr.ipv4.total_len = BFD_IP_LEN;
        hdr.bfd_specs[0].setInvalid();
        hdr.bfd_specs[1].setInvalid();
        hdr.bfd_specs[2].setInvalid();
        hdr.bfd_specs[3].setInvalid();
        md.bfd_rewritten = true;
        md.bfd_event = (bit<8>)UPTA_EVENT_PROBE_ANSWERED;
    }

    // (its event, accepted or stale, is TnaUptaPath's)
    action check_report() {
        md.base.bfd_consumed = true;
        ig_dprsr_md.drop_ctl = 1;
        md.bfd_seq_op = BFD_SEQ_CHECK;
        md.bfd_seq_key = (bit<32>)hdr.bfd.sequence | (bit<32>)BFD_SEQ_VALID;
        md.upta_path_index = (tna_index_t)hdr.bfd.identifier;
    }

    action transit() {}

    table bfd_endpoint {
        key = {
            md.base.upta_from_edge : ternary;
            md.base.upta_from_cpu : ternary;
            hdr.icmp.icmp_type : ternary;
            md.base.bfd_to_local : ternary;
            md.base.bfd_complete : ternary;
            md.bfd_checksum_error : ternary;
            hdr.bfd.identifier[15:6] : ternary;   // identifier < BFD_PATHS (64)
        }
        actions = { consume; send_probe; answer_probe; check_report; transit; }
        const entries = {
            (true, _, ICMP_QOS_PROBE, _, _, _, _) : consume((bit<8>)UPTA_EVENT_PROBE_FROM_EDGE);
            (true, _, _, _, _, _, _) : consume((bit<8>)UPTA_EVENT_REPORT_FROM_EDGE);
            (_, true, ICMP_QOS_PROBE, _, _, _, 0) : send_probe();
            (_, _, ICMP_QOS_PROBE, true, true, false, _) : answer_probe();
            (_, _, ICMP_QOS_PROBE, true, _, _, _) : consume((bit<8>)UPTA_EVENT_PROBE_MALFORMED);
            (_, _, ICMP_QOS_REPORT, true, true, false, 0) : check_report();
            (_, _, ICMP_QOS_REPORT, true, true, false, _) : consume((bit<8>)UPTA_EVENT_REPORT_STALE);
            (_, _, ICMP_QOS_REPORT, true, _, _, _) : consume((bit<8>)UPTA_EVENT_REPORT_MALFORMED);
        }
        const default_action = transit();
        size = 16;
    }

    apply { bfd_endpoint.apply(); }
}

// Per BFD path (upta.p4's upta_probe_seq, upta_path_fs_u and _fs_i): the
// sequence of the path's last probe and the minimum of its last accepted
// report, as a {seq, fs} pair per share, each pair with its own copy of the
// sequence: a report is checked and stored by one RegisterAction a share, in
// the stage after the endpoint's decision, where C-UPTA packets read the
// minima too (v1model: a sequence register, then the two share registers).
struct upta_path_t {
    bit<32> seq;   // BFD_SEQ_VALID | sequence of the last probe; 0 none
    bit<32> fs;    // the last accepted report's minimum; UPTA_FS_NONE none
}

control TnaUptaPath(in headers_t hdr, inout tna_ingress_metadata_t md,
                    in PortId_t ingress_port) {
    Register<upta_path_t, tna_index_t>(BFD_PATHS, {0, UPTA_FS_NONE}) upta_path_u;
    Register<upta_path_t, tna_index_t>(BFD_PATHS, {0, UPTA_FS_NONE}) upta_path_i;
    // the endpoint's events (upta.p4's upta_events): index ingress port *
    // TNA_BFD_EVENT_SLOTS + event; a report's outcome per port (the driver
    // gives v1model's layout)
    Counter<bit<64>, bit<10>>(NUM_PORTS * TNA_BFD_EVENT_SLOTS,
                              CounterType_t.PACKETS) upta_bfd_events;
    Counter<bit<64>, tna_index_t>(NUM_PORTS, CounterType_t.PACKETS) upta_reports_accepted;
    Counter<bit<64>, tna_index_t>(NUM_PORTS, CounterType_t.PACKETS) upta_reports_stale;
    Hash<bit<10>>(HashAlgorithm_t.IDENTITY) event_index_hash;
    bit<1> matched = 0;

    RegisterAction<upta_path_t, tna_index_t, bit<1>>(upta_path_u) probe_sent_u = {
        void apply(inout upta_path_t value) { value.seq = md.bfd_seq_key; }
    };
    RegisterAction<upta_path_t, tna_index_t, bit<1>>(upta_path_i) probe_sent_i = {
        void apply(inout upta_path_t value) { value.seq = md.bfd_seq_key; }
    };
    RegisterAction<upta_path_t, tna_index_t, bit<1>>(upta_path_u) report_u = {
        void apply(inout upta_path_t value, out bit<1> same_seq) {
            if (value.seq == md.bfd_seq_key) {
                value.fs = md.bfd_report_fs_u;
                same_seq = 1;
            } else {
                same_seq = 0;
            }
        }
    };
    RegisterAction<upta_path_t, tna_index_t, bit<1>>(upta_path_i) report_i = {
        void apply(inout upta_path_t value) {
            if (value.seq == md.bfd_seq_key) {
                value.fs = md.bfd_report_fs_i;
            }
        }
    };
    // C-UPTA's read; the minimum with the local share is TnaUpta's, in the
    // log domain (lg is monotone: lg min(a, b) = min(lg a, lg b))
    RegisterAction<upta_path_t, tna_index_t, bit<32>>(upta_path_u) read_u = {
        void apply(inout upta_path_t value, out bit<32> fs) { fs = value.fs; }
    };
    RegisterAction<upta_path_t, tna_index_t, bit<32>>(upta_path_i) read_i = {
        void apply(inout upta_path_t value, out bit<32> fs) { fs = value.fs; }
    };

    action count_event() {
        upta_bfd_events.count(event_index_hash.get({ ingress_port[5:0], md.bfd_event[3:0] }));
    }
    @hidden table bfd_event_count {
        actions = { count_event; }
        const default_action = count_event();
        size = 1;
    }

    // a table per register for its operations (fewer logical tables and
    // gateways in the stage than a gated call each; one stateful operation
    // on an address per action)
    action probe_sent_to_u() { probe_sent_u.execute(md.upta_path_index); }
    action probe_sent_to_i() { probe_sent_i.execute(md.upta_path_index); }
    action report_to_u() { matched = report_u.execute(md.upta_path_index); }
    action report_to_i() { report_i.execute(md.upta_path_index); }
    action read_u_minimum() {
        md.base.upta_path_fs_u = read_u.execute(md.upta_path_index);
        md.upta_path_read = true;
    }
    action read_i_minimum() { md.base.upta_path_fs_i = read_i.execute(md.upta_path_index); }
#define MMAQM_UPTA_PATH_OP_TABLE(share) \
    @hidden table upta_path_op_##share { \
        key = { \
            md.bfd_seq_op : ternary; \
            md.upta_path_hit : ternary; \
            md.base.upta_from_edge : ternary; \
            md.base.aqm_applied : ternary; \
            md.base.policy.upta_mode : ternary; \
        } \
        actions = { probe_sent_to_##share; report_to_##share; read_##share##_minimum; NoAction; } \
        const entries = { \
            (BFD_SEQ_STORE, _, _, _, _) : probe_sent_to_##share(); \
            (BFD_SEQ_CHECK, _, _, _, _) : report_to_##share(); \
            (0, true, true, true, UPTA_MODE_C) : read_##share##_minimum(); \
        } \
        const default_action = NoAction(); \
        size = 4; \
    }
    // (C-UPTA's read: an ingress edge packet with a BFD path)
    MMAQM_UPTA_PATH_OP_TABLE(u)
    MMAQM_UPTA_PATH_OP_TABLE(i)

    apply {
        upta_path_op_u.apply();
        upta_path_op_i.apply();
        // events per ingress port < NUM_PORTS, as on v1model
        if (hdr.bfd.isValid() && ingress_port[8:6] == 0) {
            if (md.bfd_event != BFD_NO_EVENT) {
                bfd_event_count.apply();
            }
            if (md.bfd_seq_op == BFD_SEQ_CHECK) {
                if (matched == 1) {
                    upta_reports_accepted.count((tna_index_t)ingress_port);
                } else {
                    upta_reports_stale.count((tna_index_t)ingress_port);
                }
            }
        }
    }
}

// UPTA's per-flow slot (the policy's mask applied, port * 1024 + slot as an
// identity hash), K, the packet's loss threshold and lg of the draw: the
// stage after the policy (main.p4, for a packet the AQM takes).
control TnaUptaSlot(in headers_t hdr, inout tna_ingress_metadata_t md) {
    Hash<tna_index_t>(HashAlgorithm_t.IDENTITY) slot_hash;
    TnaLog2Q4W16PlusOne() lg_draw;     // lg(2^16 - u)

    action take_slot() {
        md.upta_slot_index = slot_hash.get({ md.base.port_index[5:0], md.upta_slot_low[8:0] });
    }
    @hidden table upta_slot {
        actions = { take_slot; }
        const default_action = take_slot();
        size = 1;
    }

    // q: the option's, else tagged packets', else none (q_comp = 0: UPTA_Q_NONE);
    // C-UPTA's core ignores q (§5.2). q_comp = ~q = 2^16 - 1 - q.
    action q_option() { md.upta_q_comp = ~hdr.upta_option.q16; }
    action q_tagged() { md.upta_q_comp = ~md.base.policy.upta_tagged_q16; }
    action q_none() { md.upta_q_comp = 0; }
    @hidden table upta_threshold {
        key = {
            md.base.policy.upta_mode : ternary;
            md.base.upta_from_edge : ternary;
            hdr.upta_option.isValid() : ternary;
            md.base.class_id : ternary;
        }
        actions = { q_option; q_tagged; q_none; }
        const entries = {
            (UPTA_MODE_C, false, _, _) : q_none();
            (_, _, true, _) : q_option();
            (_, _, false, traffic_class_t.TAGGED) : q_tagged();
        }
        const default_action = q_none();
        size = 4;
    }

    // K = 2^k_shift us in the clock's 1.024 us units (no variable shift in an ALU)
    action set_k(bit<32> k_units) { md.upta_k_units = k_units; }
    @hidden table upta_k {
        key = { md.base.policy.upta_k_shift : exact; }
        actions = { set_k; }
        const entries = {
            0 : set_k(1); 1 : set_k(2); 2 : set_k(4); 3 : set_k(8); 4 : set_k(16);
            5 : set_k(32); 6 : set_k(64); 7 : set_k(128); 8 : set_k(256); 9 : set_k(512);
            10 : set_k(1024); 11 : set_k(2048); 12 : set_k(4096); 13 : set_k(8192);
            14 : set_k(16384); 15 : set_k(32768); 16 : set_k(65536); 17 : set_k(131072);
            18 : set_k(262144); 19 : set_k(524288); 20 : set_k(1048576); 21 : set_k(2097152);
            22 : set_k(4194304); 23 : set_k(8388608); 24 : set_k(16777216);
            25 : set_k(33554432); 26 : set_k(67108864); 27 : set_k(134217728);
            28 : set_k(268435456); 29 : set_k(536870912); 30 : set_k(1073741824);
            31 : set_k(2147483648);
        }
        const default_action = set_k(0);
        size = 32;
    }

    apply {
        if (!hdr.bfd.isValid()) {
            upta_slot.apply();
            upta_threshold.apply();
            upta_k.apply();
            lg_draw.apply(md.upta_draw, md.upta_lg_draw);
        }
    }
}

// The slot's rate filter (E), fed by every arrival, and lg of 2^16 - 1 - q
// (the slot's other per-flow state is TnaUpta's: a stage's map RAMs hold the
// filter or the registers, not both).
control TnaUptaFlow(in headers_t hdr, inout tna_ingress_metadata_t md) {
    Lpf<bit<32>, tna_index_t>(NUM_PORTS * TNA_UPTA_SLOTS_PER_PORT) upta_rate;   // R
    TnaLog2Q4W16PlusOne() lg_q_comp;   // lg(2^16 - q)

    apply {
        if (!hdr.bfd.isValid()) {
            md.upta_rate = upta_rate.execute(md.upta_sample, md.upta_slot_index);
            lg_q_comp.apply(md.upta_q_comp, md.upta_lg_q_comp);
        }
    }
}

// UPTA's decision (upta.p4 Upta) for a packet TnaAqm admits to the AQM: a QoS
// Probe or Report in transit (the queue limit only; a probe has its minima
// lowered), or a flow's packet (Fig. 7, eq. 17). Sets md.base.aqm_drop and
// drop_reason; the queue limit is TnaAqm's.
control TnaUpta(inout headers_t hdr, inout tna_ingress_metadata_t md) {
    Register<bit<8>, tna_index_t>(NUM_PORTS * TNA_UPTA_SLOTS_PER_PORT, 0) upta_state;
    // C: the slot's last signature and arrival time (1.024 us units, 0 never)
    Register<bit<32>, tna_index_t>(NUM_PORTS * TNA_UPTA_SLOTS_PER_PORT, 0) upta_sig;
    Register<bit<32>, tna_index_t>(NUM_PORTS * TNA_UPTA_SLOTS_PER_PORT, 0) upta_last;
    // Bytes and packets that arrived per slot, dropped included (the
    // controller's lambda_i, eqs. 18-19)
    Counter<bit<64>, tna_index_t>(NUM_PORTS * TNA_UPTA_SLOTS_PER_PORT,
                                  CounterType_t.PACKETS_AND_BYTES) upta_flow_bytes;
    // upta.p4's upta_events, the per-flow ones: a counter each, on the port
    Counter<bit<64>, tna_index_t>(NUM_PORTS, CounterType_t.PACKETS) upta_flow_collisions;
    Counter<bit<64>, tna_index_t>(NUM_PORTS, CounterType_t.PACKETS) upta_i_to_u;
    Counter<bit<64>, tna_index_t>(NUM_PORTS, CounterType_t.PACKETS) upta_probes_lowered;
    TnaLog2Q4W32FairShare() lg_fs_i;
    TnaLog2Q4W32FairShare() lg_fs_u;
    TnaLog2Q4W32FairShare() lg_path_fs_i;
    TnaLog2Q4W32FairShare() lg_path_fs_u;
    TnaLog2Q4W32Sums() lg_rate;
    TnaUptaAntilog() antilog_i;
    TnaUptaAntilog() antilog_u;

    RegisterAction<bit<32>, tna_index_t, bit<1>>(upta_sig) sig_swap = {
        void apply(inout bit<32> value, out bit<1> changed) {
            if (value != md.flow_signature) {
                changed = 1;
            } else {
                changed = 0;
            }
            value = md.flow_signature;
        }
    };
    RegisterAction<bit<32>, tna_index_t, bit<32>>(upta_last) last_swap = {
        void apply(inout bit<32> value, out bit<32> last) {
            last = value;
            value = md.now_1024ns;
        }
    };


    // Fig. 7's transition: the code for the flow's state before this packet
    RegisterAction<bit<8>, tna_index_t, bit<8>>(upta_state) state_step = {
        void apply(inout bit<8> value, out bit<8> code) {
            if (value >= UPTA_CODE_NOW_I) {
                value = md.upta_code_if_i;
            } else {
                value = md.upta_code_if_u;
            }
            code = value;
        }
    };

    action rate_compare() {
        md.upta_age = md.now_1024ns - md.upta_last;
        md.upta_rate_over_fs_i = md.upta_rate |-| md.upta_fs_i;
        md.upta_rate_over_fs_u = md.upta_rate |-| md.upta_fs_u;
    }
    @hidden table upta_rate_compare {
        actions = { rate_compare; }
        const default_action = rate_compare();
        size = 1;
    }

    // C-UPTA's ingress edge: min(local, path) shares (eqs. 23-24), as logs
    action path_minima() {
        md.upta_lg_fs_i_plus = min(md.upta_lg_fs_i_plus, md.upta_lg_path_fs_i_plus);
        md.upta_lg_fs_u_plus = min(md.upta_lg_fs_u_plus, md.upta_lg_path_fs_u_plus);
    }
    @hidden table upta_path_minima {
        actions = { path_minima; }
        const default_action = path_minima();
        size = 1;
    }

    // the headrooms: 0 when R (2^16 - x) exceeds fs 2^16
    action headrooms() {
        md.upta_head_q_i = md.upta_lg_fs_i_plus |-| md.upta_sum_q;
        md.upta_head_q_u = md.upta_lg_fs_u_plus |-| md.upta_sum_q;
        md.upta_head_u_i = md.upta_lg_fs_i_plus |-| md.upta_sum_u;
        md.upta_k_short = md.upta_k_units |-| md.upta_age;
    }
    @hidden table upta_headrooms {
        actions = { headrooms; }
        const default_action = headrooms();
        size = 1;
    }

    // Fig. 7 as codes for either old state (the register picks one):
    // q_comp = 0: no loss threshold; a headroom of 0: exceeded.
    action codes(bit<8> if_i, bit<8> if_u) {
        md.upta_code_if_i = if_i;
        md.upta_code_if_u = if_u;
    }
    @hidden table upta_codes {
        key = {
            md.upta_q_comp : ternary;
            md.upta_head_q_i : ternary;
            md.upta_head_u_i : ternary;
            md.upta_head_q_u : ternary;
        }
        actions = { codes; }
        const entries = {
            (0, _, 0, _) : codes(UPTA_I_FAIR_SHARE, UPTA_U_ADMIT);
            (0, _, _, _) : codes(UPTA_I_ADMIT, UPTA_U_ADMIT);
            (_, 0, _, 0) : codes(UPTA_I_USELESS, UPTA_U_USELESS);
            (_, 0, _, _) : codes(UPTA_I_USELESS, UPTA_U_ADMIT);
            (_, _, 0, 0) : codes(UPTA_I_FAIR_SHARE, UPTA_U_USELESS);
            (_, _, 0, _) : codes(UPTA_I_FAIR_SHARE, UPTA_U_ADMIT);
            (_, _, _, 0) : codes(UPTA_I_ADMIT, UPTA_U_USELESS);
        }
        const default_action = codes(UPTA_I_ADMIT, UPTA_U_ADMIT);
        size = 8;
    }

    // eq. 25-26: a probe's minima lowered to this port's shares (saturating
    // differences first: a gateway compares with a constant only)
    bit<32> probe_over_u = 0;
    bit<32> probe_over_i = 0;
    action probe_compare() {
        probe_over_u = hdr.bfd.fs_u |-| md.base.policy.upta_fs_u_scaled;
        probe_over_i = hdr.bfd.fs_i |-| md.base.policy.upta_fs_i_scaled;
    }
    @hidden table upta_probe_compare {
        actions = { probe_compare; }
        const default_action = probe_compare();
        size = 1;
    }

    apply {
        if (hdr.bfd.isValid()) {
            // in transit: the queue limit only (TnaAqm); a probe is lowered
            if (!md.base.aqm_drop && hdr.icmp.icmp_type == ICMP_QOS_PROBE
                    && hdr.ipv4.frag_offset == 0) {   // (main.p4 parse_ipv4_l4)
                upta_probe_compare.apply();
                if (probe_over_u != 0) {
                    hdr.bfd.fs_u = md.base.policy.upta_fs_u_scaled;
                }
                if (probe_over_i != 0) {
                    hdr.bfd.fs_i = md.base.policy.upta_fs_i_scaled;
                }
                md.bfd_rewritten = true;
                upta_probes_lowered.count(md.base.port_index);
            }
        } else if (hdr.ipv4.isValid()) {
            // (an IPv6 packet: the queue limit only, upta.p4's upta_ipv6_fifo)
            md.upta_sig_changed = sig_swap.execute(md.upta_slot_index);
            md.upta_last = last_swap.execute(md.upta_slot_index);
            upta_flow_bytes.count(md.upta_slot_index);
            lg_fs_i.apply(md.upta_fs_i, md.upta_lg_fs_i_plus);
            lg_fs_u.apply(md.upta_fs_u, md.upta_lg_fs_u_plus);
            if (md.upta_path_read) {
                lg_path_fs_i.apply(md.base.upta_path_fs_i, md.upta_lg_path_fs_i_plus);
                lg_path_fs_u.apply(md.base.upta_path_fs_u, md.upta_lg_path_fs_u_plus);
                upta_path_minima.apply();
            }
            lg_rate.apply(md.upta_rate, md.upta_lg_q_comp, md.upta_lg_draw,
                          md.upta_sum_q, md.upta_sum_u);
            upta_rate_compare.apply();
            upta_headrooms.apply();
            // C: another flow used the slot less than K ago
            if (md.upta_sig_changed == 1 && md.upta_last != 0 && md.upta_k_short != 0) {
                upta_flow_collisions.count(md.base.port_index);
            }
            upta_codes.apply();
            antilog_i.apply(md.upta_head_q_i, md.upta_q_new_i);
            antilog_u.apply(md.upta_head_q_u, md.upta_q_new_u);
            md.upta_code = state_step.execute(md.upta_slot_index);
            // Fig. 7's verdict (TnaAqm tests the queue limit after it, as
            // v1model: the UPTA reason wins)
            if (md.upta_code[1:0] == UPTA_VERDICT_USELESS) {
                md.base.aqm_drop = true;
                md.base.drop_reason = drop_reason_t.UPTA_USELESS;
            } else if (md.upta_code[1:0] == UPTA_VERDICT_FAIR_SHARE) {
                md.base.aqm_drop = true;
                md.base.drop_reason = drop_reason_t.UPTA_FAIR_SHARE;
            }
            if (md.upta_code[2:2] == 1) {
                upta_i_to_u.count(md.base.port_index);
            }
            // P: eq. 17, for a packet carrying the option (a dropped one's
            // rewrite is never seen); q' of the fair share of the old state
            if (md.base.policy.upta_mode == UPTA_MODE_P && hdr.upta_option.isValid()
                    && md.upta_q_comp != 0) {
                if (md.upta_code[6:6] == 1) {
                    if (md.upta_rate_over_fs_i != 0) {
                        hdr.upta_option.q16 = md.upta_q_new_i;
                    }
                } else if (md.upta_rate_over_fs_u != 0) {
                    hdr.upta_option.q16 = md.upta_q_new_u;
                }
            }
        }
    }
}

#endif
