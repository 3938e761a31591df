// AQM admission on Tofino: the port_policy table of aqm.p4, for the one
// algorithm this build carries (docs/tofino.md: a program per
// algorithm), and that algorithm's per-packet work, rewritten for a
// pipeline of stages (see occupancy_tna.p4 and red_tna.p4 for the why).
// The policy actions keep aqm.p4's names and parameters, so the controller
// writes the same entry on both targets; parameters the Tofino data plane
// takes elsewhere (the weight, the RED curve, the idle decay: red_tna.p4)
// are still accepted here and are ignored by the data plane.
#ifndef MMAQM_AQM_TNA_P4
#define MMAQM_AQM_TNA_P4

#include "tna_types.p4"
#include "occupancy_tna.p4"
#include "flow_report_tna.p4"
#if defined(MMAQM_TNA_RED_FAMILY) || defined(MMAQM_TNA_FRED)
#include "red_tna.p4"
#endif
#ifdef MMAQM_TNA_FRED
#include "fred_tna.p4"
#endif
#ifdef MMAQM_TNA_UPTA
#include "upta_tna.p4"
#endif

#define MMAQM_RED_PARAMS \
    policy_epoch_t policy_epoch, shift_t ewma_shift, \
    scaled_t min_th_scaled, scaled_t max_th_scaled, q24_t red_slope_q24, \
    q32_t idle_decay_q32, flag_t gentle, q16_t max_p_q16, q24_t gentle_slope_q24, \
    flag_t ecn, flag_t harddrop, flag_t wait
#define MMAQM_LOAD_RED_PARAMS \
    md.base.policy.policy_epoch = policy_epoch; \
    md.base.policy.ewma_shift = ewma_shift; \
    md.base.policy.min_th_scaled = min_th_scaled; \
    md.base.policy.max_th_scaled = max_th_scaled; \
    md.base.policy.red_slope_q24 = red_slope_q24; \
    md.base.policy.idle_decay_q32 = idle_decay_q32; \
    md.base.policy.gentle = gentle; \
    md.base.policy.max_p_q16 = max_p_q16; \
    md.base.policy.gentle_slope_q24 = gentle_slope_q24; \
    md.base.policy.ecn = ecn; \
    md.base.policy.harddrop = harddrop; \
    md.base.policy.wait = wait;

// aqm.p4's port_policy table, for the one algorithm this build carries: sets
// md.base.aqm_applied and the policy's parameters. A control of its own so that
// main.p4 applies it before the AQM: the ingress discards are known, and
// counted, without waiting for the AQM's stages (Tofino 1 keeps table order).
control TnaPortPolicy(inout tna_ingress_metadata_t md) {
    Hash<tna_index_t>(HashAlgorithm_t.IDENTITY) class_index_hash;

    action load_policy(pkts_t queue_limit_pkts, shift_t flow_epoch_shift) {
        md.base.aqm_applied = true;
        md.base.flow_epoch_shift = flow_epoch_shift;
        md.base.policy.queue_limit_pkts = queue_limit_pkts;
    }

#ifdef MMAQM_TNA_DROP_TAIL
    @name(".drop_tail")
    action drop_tail(pkts_t queue_limit_pkts, shift_t flow_epoch_shift) {
        load_policy(queue_limit_pkts, flow_epoch_shift);
    }
#define MMAQM_POLICY_ACTION drop_tail
#endif
#ifdef MMAQM_TNA_RED
    @name(".red")
    action red(pkts_t queue_limit_pkts, shift_t flow_epoch_shift, MMAQM_RED_PARAMS) {
        load_policy(queue_limit_pkts, flow_epoch_shift);
        MMAQM_LOAD_RED_PARAMS
    }
#define MMAQM_POLICY_ACTION red
#endif
// tag_guard_interval_us (CBT, D-CBT, ChIPS): the v1model tag guard's parameter
// (p4src/v1model/tag_guard.p4), here only so that the actions have the same
// parameters on both targets; the guard is not in this build, and the
// controller's Tofino target refuses a value other than 0 (guard off).
#ifdef MMAQM_TNA_CBT_RED_ALL
    @name(".cbt_red_all")
    action cbt_red_all(pkts_t queue_limit_pkts, shift_t flow_epoch_shift, MMAQM_RED_PARAMS,
                       scaled_t tagged_th_scaled, scaled_t untagged_th_scaled,
                       bit<32> tag_guard_interval_us) {
        load_policy(queue_limit_pkts, flow_epoch_shift);
        MMAQM_LOAD_RED_PARAMS
        md.base.policy.tagged_th_scaled = tagged_th_scaled;
        md.base.policy.untagged_th_scaled = untagged_th_scaled;
    }
#define MMAQM_POLICY_ACTION cbt_red_all
#endif
#ifdef MMAQM_TNA_CBT_RED_TCP_ONLY
    @name(".cbt_red_tcp_only")
    action cbt_red_tcp_only(pkts_t queue_limit_pkts, shift_t flow_epoch_shift, MMAQM_RED_PARAMS,
                            scaled_t tagged_th_scaled, scaled_t untagged_th_scaled,
                            bit<32> tag_guard_interval_us) {
        load_policy(queue_limit_pkts, flow_epoch_shift);
        MMAQM_LOAD_RED_PARAMS
        md.base.policy.tagged_th_scaled = tagged_th_scaled;
        md.base.policy.untagged_th_scaled = untagged_th_scaled;
    }
#define MMAQM_POLICY_ACTION cbt_red_tcp_only
#endif
#if defined(MMAQM_TNA_DCBT) && !defined(MMAQM_TNA_DCBT_CHIPS)
    @name(".dcbt")
    action dcbt(pkts_t queue_limit_pkts, shift_t flow_epoch_shift, MMAQM_RED_PARAMS,
                q16_t tagged_share_q16, scaled_t untagged_th_scaled,
                bit<32> tag_guard_interval_us) {
        load_policy(queue_limit_pkts, flow_epoch_shift);
        MMAQM_LOAD_RED_PARAMS
        md.base.policy.tagged_share_q16 = tagged_share_q16;
        md.base.policy.untagged_th_scaled = untagged_th_scaled;
    }
#define MMAQM_POLICY_ACTION dcbt
#endif
#ifdef MMAQM_TNA_DCBT_CHIPS
    @name(".dcbt_chips")
    action dcbt_chips(pkts_t queue_limit_pkts, shift_t flow_epoch_shift, MMAQM_RED_PARAMS,
                      q16_t tagged_share_q16, scaled_t untagged_th_scaled,
                      shift_t chips_ewma_shift, q16_t chips_tagged_share_limit_q16,
                      bit<32> tag_guard_interval_us) {
        load_policy(queue_limit_pkts, flow_epoch_shift);
        MMAQM_LOAD_RED_PARAMS
        md.base.policy.tagged_share_q16 = tagged_share_q16;
        md.base.policy.untagged_th_scaled = untagged_th_scaled;
        md.base.policy.chips_ewma_shift = chips_ewma_shift;
        md.base.policy.chips_tagged_share_limit_q16 = chips_tagged_share_limit_q16;
    }
#define MMAQM_POLICY_ACTION dcbt_chips
#endif
#ifdef MMAQM_TNA_MCDT
    @name(".mcdt")
    action mcdt(pkts_t queue_limit_pkts, shift_t flow_epoch_shift,
                policy_epoch_t policy_epoch, pkts_t tcp_th_pkts, pkts_t tagged_th_pkts,
                pkts_t untagged_th_pkts, bit<8> mcdt_mode) {
        load_policy(queue_limit_pkts, flow_epoch_shift);
        md.base.policy.policy_epoch = policy_epoch;
        md.base.policy.tcp_th_pkts = tcp_th_pkts;
        md.base.policy.tagged_th_pkts = tagged_th_pkts;
        md.base.policy.untagged_th_pkts = untagged_th_pkts;
        md.base.policy.mcdt_mode = mcdt_mode;
    }
#define MMAQM_POLICY_ACTION mcdt
#endif
#ifdef MMAQM_TNA_FRED
    @name(".fred")
    action fred(pkts_t queue_limit_pkts, shift_t flow_epoch_shift,
                policy_epoch_t policy_epoch, shift_t ewma_shift,
                scaled_t min_th_scaled, scaled_t max_th_scaled, q24_t red_slope_q24,
                q32_t idle_decay_q32, pkts_t minq_pkts, bit<32> fred_slot_mask) {
        load_policy(queue_limit_pkts, flow_epoch_shift);
        md.base.policy.policy_epoch = policy_epoch;
        md.base.policy.ewma_shift = ewma_shift;
        md.base.policy.min_th_scaled = min_th_scaled;
        md.base.policy.max_th_scaled = max_th_scaled;
        md.base.policy.red_slope_q24 = red_slope_q24;
        md.base.policy.idle_decay_q32 = idle_decay_q32;
        md.base.policy.minq_pkts = minq_pkts;
        md.base.policy.fred_slot_mask = fred_slot_mask;
    }
#define MMAQM_POLICY_ACTION fred
#endif

#ifdef MMAQM_TNA_UPTA
    // upta_tna.p4: the slot mask is applied here (crc32 & mask, the slot's low
    // bits); the reciprocals of eq. 17 are accepted and not used (the rewrite
    // is an antilog of the headroom, log2_tna.p4).
    @name(".upta")
    action upta(pkts_t queue_limit_pkts, shift_t flow_epoch_shift,
                policy_epoch_t policy_epoch, bit<8> upta_mode, shift_t k_shift,
                bit<32> slot_mask, bit<32> fs_i_scaled, bit<32> fs_u_scaled,
                bit<32> inv_fs_i_mant, bit<32> inv_fs_u_mant, shift_t inv_fs_i_shift,
                shift_t inv_fs_u_shift, bit<16> tagged_q16) {
        load_policy(queue_limit_pkts, flow_epoch_shift);
        md.base.policy.policy_epoch = policy_epoch;
        md.base.policy.upta_mode = upta_mode;
        md.base.policy.upta_k_shift = k_shift;
        md.base.policy.upta_fs_i_scaled = fs_i_scaled;
        md.base.policy.upta_fs_u_scaled = fs_u_scaled;
        md.base.policy.upta_tagged_q16 = tagged_q16;
        md.upta_fs_i = fs_i_scaled;
        md.upta_fs_u = fs_u_scaled;
        md.upta_slot_low = md.flow_signature[15:0] & slot_mask[15:0];
    }
#define MMAQM_POLICY_ACTION upta
#endif

    action no_policy() {}

    table port_policy {
        key = { md.base.routed_port : exact @name("port"); }
        actions = { MMAQM_POLICY_ACTION; @defaultonly no_policy; }
        const default_action = no_policy();
        size = NUM_PORTS;
    }

    // port * CLASS_SLOTS + class, as an identity hash (main.p4), in a table of
    // its own: the class waits for main.p4's ip_keys and the classifier, the
    // policy for routing only
    action take_class_index() {
        bit<8> class_bits = (bit<8>)md.base.class_id;
        md.base.class_index = class_index_hash.get({ md.base.port_index[5:0], class_bits[1:0] });
    }
    @hidden table class_index {
        actions = { take_class_index; }
        const default_action = take_class_index();
        size = 1;
    }

    apply {
        port_policy.apply();
        class_index.apply();
    }
}

// For a packet of a port with a policy (TnaPortPolicy), decides:
// md.base.aqm_drop / drop_reason / ecn_mark and cut_in (both meaningful only
// when not dropped).
// report: main.p4's hdr.report: the departure report or cancel when md.is_report,
// else the bridged header being built for the packet (ChIPS writes its events).
// The flow report (flow_report_tna.p4) is applied here, right after port_policy
// that gives its epoch shift: it reads nothing the algorithm decides, and on
// Tofino 1 a table that follows another in the control flow cannot sit in an
// earlier stage, so applied after the algorithm it would add its 4 stages.
control TnaAqm(inout headers_t hdr, inout tna_report_h report, inout tna_ingress_metadata_t md,
               inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
               inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    TnaFlowReport() flow_report;
    TnaOccupancy() occupancy;
#ifdef MMAQM_TNA_RED_FAMILY
    TnaRedAverage() red_average;
    TnaRedDropTest() red_drop_test;
#endif
#ifdef MMAQM_TNA_FRED
    TnaFred() fred_algorithm;
#endif
#ifdef MMAQM_TNA_UPTA
    TnaUpta() upta_algorithm;
#endif
#if defined(MMAQM_TNA_CBT_RED_ALL) || defined(MMAQM_TNA_CBT_RED_TCP_ONLY)
    Lpf<scaled_t, tna_index_t>(NUM_PORTS * CLASS_SLOTS) class_avg;   // cbt §3, per class
#endif
#ifdef MMAQM_TNA_DCBT
    Lpf<scaled_t, tna_index_t>(NUM_PORTS) tagged_avg;    // dcbt §3.1: synchronised,
    Lpf<scaled_t, tna_index_t>(NUM_PORTS) untagged_avg;  // one filter per class
    // The class thresholds as functions of RED's average, without a multiply
    // (dcbt §3.1: tagged red_avg * share_tagged; both only once red_avg >
    // min_th): the controller fills, per port, avg segments with the tagged
    // threshold at the segment's lower end * share and the untagged threshold,
    // both 0xFFFFFFFF (never) up to min_th (tna_encoding.py).
    action set_class_thresholds(scaled_t tagged_th_scaled, scaled_t untagged_th_scaled) {
        md.dcbt_tagged_th_scaled = tagged_th_scaled;
        md.dcbt_untagged_th_scaled = untagged_th_scaled;
    }
    table dcbt_tagged_threshold {
        key = {
            md.base.routed_port : exact @name("port");
            md.base.red_avg_scaled[27:8] : range @name("avg_key");   // red_tna.p4 AVG_KEY_SHIFT
        }
        actions = { set_class_thresholds; }
        const default_action = set_class_thresholds(0xFFFFFFFF, 0xFFFFFFFF);
        size = NUM_PORTS * RED_ZONE_SEGMENTS;
    }
#endif
#ifdef MMAQM_TNA_DCBT_CHIPS
    Lpf<q16_t, tna_index_t>(NUM_PORTS) chips_tagged_share;  // dcbt §3.2 enqueue ratio
    // chips.p4's chips_events (index port * NUM_CHIPS_EVENTS + event), one
    // Counter per event here, indexed by port: a counter's index must be a PHV
    // field or a hash, and each packet touches at most two of them.
    Counter<bit<64>, tna_index_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) chips_on_admits;
    Counter<bit<64>, tna_index_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) chips_off_admits;
    Counter<bit<64>, tna_index_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) chips_cut_ins;
    Counter<bit<64>, tna_index_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) chips_no_congestion;

    // share - limit and queue - RED average, saturating (two-field compares)
    action chips_differences() {
        md.chips_share_over_q16 = md.chips_share_q16 |-| md.base.policy.chips_tagged_share_limit_q16;
        md.chips_queue_over_avg = md.queue_scaled |-| md.base.red_avg_scaled;
    }
    @hidden table chips_compare {
        actions = { chips_differences; }
        const default_action = chips_differences();
        size = 1;
    }
    // The slot clone's mirror session: TNA_CHIPS_SESSION_BASE (64) + port, as the
    // identity hash of {1, port[5:0]} (an add of the 32-bit port index into the
    // 10-bit session cannot be placed in PHV; v1model: 100 + port).
    Hash<MirrorId_t>(HashAlgorithm_t.IDENTITY) chips_session_hash;
    action chips_slot_session() {
        md.mirror_session = chips_session_hash.get({ md.one_bit, md.base.port_index[5:0] });
    }
    @hidden table chips_session {
        actions = { chips_slot_session; }
        const default_action = chips_slot_session();
        size = 1;
    }
#endif


    // A gateway compares a field with a constant only: "a > b" of two fields is
    // taken as the saturating difference a |-| b in an action (a hidden table, so
    // that it is not folded back into the if), then tested against 0.
#ifdef MMAQM_TNA_MCDT
    action mcdt_excess_tcp() { md.excess = md.class_scaled |-| md.mcdt_tcp_th_scaled; }
    action mcdt_excess_tagged() { md.excess = md.class_scaled |-| md.mcdt_tagged_th_scaled; }
    action mcdt_excess_untagged() { md.excess = md.class_scaled |-| md.mcdt_untagged_th_scaled; }
    // mode B (mcdt.p4): the whole queue against T_c. queue_scaled's bit 0 (TNA_NOT_COUNTED)
    // adds at most 1 to the difference: the verdict reads excess[31:16], whole packets.
    action mcdt_queue_excess_tcp() { md.excess = md.queue_scaled |-| md.mcdt_tcp_th_scaled; }
    action mcdt_queue_excess_tagged() { md.excess = md.queue_scaled |-| md.mcdt_tagged_th_scaled; }
    action mcdt_queue_excess_untagged() { md.excess = md.queue_scaled |-| md.mcdt_untagged_th_scaled; }
    @hidden table mcdt_excess {     // the class's logical queue - T_c of the packet's class (mcdt.p4)
        key = { md.base.class_id : exact; md.base.policy.mcdt_mode : ternary; }
        actions = { mcdt_excess_tcp; mcdt_excess_tagged; mcdt_excess_untagged;
                    mcdt_queue_excess_tcp; mcdt_queue_excess_tagged; mcdt_queue_excess_untagged; }
        const entries = {   // in order: the first match wins
            (traffic_class_t.TCP, MCDT_MODE_B) : mcdt_queue_excess_tcp();
            (traffic_class_t.TAGGED, MCDT_MODE_B) : mcdt_queue_excess_tagged();
            (traffic_class_t.UNTAGGED, MCDT_MODE_B) : mcdt_queue_excess_untagged();
            (traffic_class_t.TCP, _) : mcdt_excess_tcp();
            (traffic_class_t.TAGGED, _) : mcdt_excess_tagged();
        }
        const default_action = mcdt_excess_untagged();
        size = 8;
    }
    // mode C (mcdt.p4): the thresholds' sum, then its room above the queue; room 0
    // <=> queue >= sum (bit 0 of queue_scaled cannot make a whole packet of room).
    action mcdt_sum_untagged() {
        md.mcdt_logical_buffers_pkts = md.mcdt_logical_buffers_pkts + md.base.policy.untagged_th_pkts;
    }
    @hidden table mcdt_sum {
        actions = { mcdt_sum_untagged; }
        const default_action = mcdt_sum_untagged();
        size = 1;
    }
    action mcdt_sum_scale() {
        md.mcdt_logical_buffers_scaled = md.mcdt_logical_buffers_pkts << AVG_FRAC_BITS;
    }
    @hidden table mcdt_sum_scaled {
        actions = { mcdt_sum_scale; }
        const default_action = mcdt_sum_scale();
        size = 1;
    }
    action mcdt_take_room() {
        md.mcdt_room_scaled = md.mcdt_logical_buffers_scaled |-| md.queue_scaled;
    }
    @hidden table mcdt_room {
        actions = { mcdt_take_room; }
        const default_action = mcdt_take_room();
        size = 1;
    }
#endif
#if defined(MMAQM_TNA_CBT_RED_ALL) || defined(MMAQM_TNA_CBT_RED_TCP_ONLY)
    action cbt_excess_tagged() { md.excess = md.class_avg_scaled |-| md.base.policy.tagged_th_scaled; }
    action cbt_excess_untagged() { md.excess = md.class_avg_scaled |-| md.base.policy.untagged_th_scaled; }
    @hidden table cbt_excess {      // class average - the class's threshold (cbt.p4)
        key = { md.base.class_id : exact; }
        actions = { cbt_excess_tagged; cbt_excess_untagged; }
        const entries = { traffic_class_t.TAGGED : cbt_excess_tagged(); }
        const default_action = cbt_excess_untagged();
        size = 4;
    }
#endif

#ifdef MMAQM_TNA_DCBT
    action dcbt_excess_tagged() { md.excess = md.tagged_avg_scaled |-| md.dcbt_tagged_th_scaled; }
    action dcbt_excess_untagged() {
        md.excess = md.untagged_avg_scaled |-| md.dcbt_untagged_th_scaled;
    }
    action dcbt_excess_none() {}
    @hidden table dcbt_excess {     // the class average - its threshold (dcbt.p4)
        key = { md.base.class_id : exact; }
        actions = { dcbt_excess_tagged; dcbt_excess_untagged; dcbt_excess_none; }
        const entries = {
            traffic_class_t.TAGGED : dcbt_excess_tagged();
            traffic_class_t.UNTAGGED : dcbt_excess_untagged();
        }
        const default_action = dcbt_excess_none();
        size = 4;
    }
    action fifo_room() {
        md.fifo_room_scaled = md.queue_limit_scaled |-| md.virtual_fifo_scaled;
    }
    @hidden table take_fifo_room {  // 0: the virtual FIFO is at the queue limit
        actions = { fifo_room; }
        const default_action = fifo_room();
        size = 1;
    }
#endif
    // The policy's packet counts in occupancy_tna.p4's unit. A Tofino ALU
    // cannot shift action data, so not in port_policy's action: here, from PHV.
    action scale_policy() {
        md.queue_limit_scaled = md.base.policy.queue_limit_pkts << AVG_FRAC_BITS;
#ifdef MMAQM_TNA_FRED
        md.fred_minq_scaled = md.base.policy.minq_pkts << AVG_FRAC_BITS;
#endif
#ifdef MMAQM_TNA_MCDT
        md.mcdt_tcp_th_scaled = md.base.policy.tcp_th_pkts << AVG_FRAC_BITS;
        md.mcdt_tagged_th_scaled = md.base.policy.tagged_th_pkts << AVG_FRAC_BITS;
        md.mcdt_untagged_th_scaled = md.base.policy.untagged_th_pkts << AVG_FRAC_BITS;
        md.mcdt_logical_buffers_pkts = md.base.policy.tcp_th_pkts + md.base.policy.tagged_th_pkts;
#endif
    }
    @hidden table scale_policy_counts {
        actions = { scale_policy; }
        const default_action = scale_policy();
        size = 1;
    }

    apply {
        // Each table and register action is applied at one place: Tofino places
        // it once, in one stage (main.p4 applies TnaAqm once for the same reason).
        // main.p4 applies TnaAqm to a report, or to a packet that passed every
        // ingress test (so its port has a policy: TnaPortPolicy's parameters)
        if (!md.is_report) {
            scale_policy_counts.apply();
#ifdef MMAQM_TNA_MCDT
            // mode C's sum of thresholds needs only the policy: here, beside the
            // occupancy registers' stages (Tofino 1 keeps the tables' order)
            mcdt_sum.apply();
            mcdt_sum_scaled.apply();
#endif
#if !defined(MMAQM_TNA_FRED) && !defined(MMAQM_TNA_UPTA)
            flow_report.apply(hdr, md, ig_dprsr_md);
#endif
        }
        {   // every report and packet
            // A report is main.p4's MmaqmEgress, applied where the registers are:
            // a departure, a cut-in packet's FIFO slot, or a cancel (occupancy_tna.p4).
            occupancy.apply(md, report);
#ifdef MMAQM_TNA_DCBT_CHIPS
            if (md.is_report && report.pkt_type == TNA_PKT_DEPARTURE) {
                if (report.chips_off == 1) {
                    chips_off_admits.count(md.base.port_index);
                } else if (report.chips_on == 1) {
                    chips_on_admits.count(md.base.port_index);
                    if (report.class_id == (bit<2>)(bit<8>)traffic_class_t.TAGGED) {
                        if (report.chips_congested == 1) {
                            chips_cut_ins.count(md.base.port_index);
                        } else {
                            chips_no_congestion.count(md.base.port_index);
                        }
                    }
                }
            }
#endif
#ifdef MMAQM_TNA_FRED
            fred_algorithm.apply(hdr, report, md);   // arrivals A1-A3; reports D1, D2 or A3's cancel
            // FRED's build applies the flow report after the algorithm: Tofino 1
            // places tables in the control's order, and before occupancy its
            // register would take the stage FRED's per-flow register needs
            if (!md.is_report) {
                flow_report.apply(hdr, md, ig_dprsr_md);
            }
#endif
        }
        if (!md.is_report) {
            // occupancy.p4 queue_admit_or_drop's physical queue limit, which
            // occupancy_tna.p4 decided (it did not count the packet). v1model tests
            // it last, after the algorithm; here it is written first and every
            // algorithm's own drop below overwrites the reason, which gives the
            // same (drop, reason), a stage earlier. An ECN mark is not made on a
            // packet already dropped (red_tna.p4).
            if (md.queue_scaled[0:0] == 1) {
                md.base.aqm_drop = true;
                md.base.drop_reason = drop_reason_t.QUEUE_LIMIT;
            }
#ifdef MMAQM_TNA_MCDT
            // mcdt.p4: the class's logical queue (before this packet) exceeds T_c
            // (modes A and C: the class's count; B: the whole queue); in mode C
            // only while the queue holds the thresholds' sum
            mcdt_excess.apply();
            mcdt_room.apply();
            if (md.excess[31:16] != 0) {
                if (md.base.policy.mcdt_mode != MCDT_MODE_C || md.mcdt_room_scaled == 0) {
                    md.base.aqm_drop = true;
                    md.base.drop_reason = drop_reason_t.CLASS_THRESHOLD;
                }
            }
#endif
#if defined(MMAQM_TNA_RED)
            red_average.apply(md, md.queue_scaled);   // the register's output is the sample
            red_drop_test.apply(hdr, md);
#endif
#ifdef MMAQM_TNA_CBT_RED_ALL
            // cbt.p4: a UDP packet's own class average against its threshold, then
            // RED on the whole queue for what the class test let through. Written
            // side by side (Tofino 1 keeps the tables' order): both samples, both
            // averages, the class excess beside RED's zone; RED's budget and verdict
            // skip a packet the class test drops (md.excess != 0). Unlike v1model,
            // RED's average samples that packet too (its Lpf runs a stage before
            // the class verdict).
            red_average.apply(md, md.queue_scaled);   // the registers' outputs are the samples
            if (md.base.class_id != traffic_class_t.TCP) {
                md.class_avg_scaled = class_avg.execute(md.class_scaled,
                                                        md.base.class_index);
                cbt_excess.apply();
            }
            red_drop_test.apply(hdr, md);    // the class drop when md.excess != 0, else RED
#endif
#ifdef MMAQM_TNA_CBT_RED_TCP_ONLY
            // cbt.p4 with RED for TCP only: the class test for UDP, RED (on the TCP
            // class's occupancy) for TCP: exclusive branches, so the same stages.
            if (md.base.class_id == traffic_class_t.TCP) {
                red_average.apply(md, md.class_scaled);
                red_drop_test.apply(hdr, md);
            } else {
                md.class_avg_scaled = class_avg.execute(md.class_scaled,
                                                        md.base.class_index);
                cbt_excess.apply();
                if (md.excess != 0) {
                    md.base.aqm_drop = true;
                    md.base.drop_reason = drop_reason_t.CLASS_THRESHOLD;
                }
            }
#endif
#ifdef MMAQM_TNA_DCBT
            // dcbt.p4: synchronised averages (every arrival samples the three),
            // the class thresholds once RED's average is above min_th (in the
            // range table), the virtual FIFO's limit, then RED. The class verdict
            // comes with RED's (red_tna.p4, md.excess); RED's budget register runs
            // beside the class test, so unlike v1model it also sees the packets
            // the class test drops (waiting for the verdict would cost a stage).
            red_average.apply(md, md.queue_scaled);   // the registers' outputs are the samples
            md.tagged_avg_scaled = tagged_avg.execute(md.tagged_seen_scaled,
                                                      md.base.port_index);
            md.untagged_avg_scaled = untagged_avg.execute(md.untagged_seen_scaled,
                                                          md.base.port_index);
            dcbt_tagged_threshold.apply();
            dcbt_excess.apply();
            // dcbt.p4: the queue limit holds for the virtual FIFO too (reason
            // QUEUE_LIMIT, as the physical limit; RED's and the class's verdicts
            // overwrite it, as v1model's order gives)
            take_fifo_room.apply();
            if (md.fifo_room_scaled == 0) {
                md.base.aqm_drop = true;
                md.base.drop_reason = drop_reason_t.QUEUE_LIMIT;
            }
            red_drop_test.apply(hdr, md);
#endif
#ifdef MMAQM_TNA_UPTA
            upta_algorithm.apply(hdr, md);   // Fig. 7 and eq. 17, or a BFD message in transit
            // after the algorithm, as FRED's build (see there)
            flow_report.apply(hdr, md, ig_dprsr_md);
#endif
            // (md.base.admitted and the clearing of ecn_mark on a drop: main.p4
            // reads aqm_drop first, so neither is needed here)
#ifdef MMAQM_TNA_DCBT_CHIPS
            // chips.p4 chips_schedule. Its inputs beside the AQM (the tagged share's
            // filter, the two comparisons), its decision for an admitted packet
            // once the verdict is in. Unlike v1model the share's filter also
            // samples the packets the AQM drops (waiting would cost stages).
            if (md.base.class_id == traffic_class_t.TAGGED) {
                md.chips_sample_q16 = PROB_ONE;
            }
            md.chips_share_q16 = chips_tagged_share.execute(md.chips_sample_q16,
                                                            md.base.port_index);
            chips_compare.apply();
            chips_session.apply();
            // the cut-in, decided before the verdict: main.p4 acts on it (cut-in
            // queue, slot clone) only for an admitted packet
            // The events, as bits of the bridged header: counted when the
            // departure report returns (the admission stage has no stats ALU
            // left), so the same packets as v1model's, a queueing delay later.
            // (report: the bridged header main.p4 has set up for this packet)
            if (md.chips_share_over_q16 != 0) {
                report.chips_off = 1;
            } else if (md.base.class_id == traffic_class_t.TAGGED) {
                report.chips_on = 1;
                if (md.chips_queue_over_avg != 0) {
                    report.chips_congested = 1;
                    md.base.cut_in = true;
                }
            } else {
                report.chips_on = 1;
            }
#endif
        }
    }
}

#endif
