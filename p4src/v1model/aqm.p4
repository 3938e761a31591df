// AQM admission of one packet on its egress port.
// The port_policy table selects the port's algorithm at run time, so one
// compiled program serves every algorithm (a profile, profile.p4, has one). Each algorithm has one
// port_policy action with only its own parameters (the P4Info lists them),
// which loads them into meta.policy; the switch on the action that ran then
// applies that algorithm's control, which does the whole per-packet work
// (arrival, averages, drop test, queue limit, admit or drop) in one action.
// BMv2 lowers the switch to the table's next-table map: the AQM costs two
// table applies per packet, whatever the algorithm (bench/README.md).
#ifndef MMAQM_AQM_P4
#define MMAQM_AQM_P4

#include <v1model.p4>
#include "profile.p4"
#ifdef MMAQM_HAS_DROP_TAIL
#include "drop_tail.p4"
#endif
#ifdef MMAQM_HAS_RED
#include "red.p4"
#endif
#if defined(MMAQM_HAS_CBT_RED_ALL) || defined(MMAQM_HAS_CBT_RED_TCP_ONLY)
#include "cbt.p4"
#endif
#ifdef MMAQM_HAS_DCBT
#include "dcbt.p4"
#endif
#ifdef MMAQM_HAS_DCBT_CHIPS
#include "chips.p4"
#endif
#ifdef MMAQM_HAS_MCDT
#include "mcdt.p4"
#endif
#ifdef MMAQM_HAS_FRED
#include "fred.p4"
#endif
#ifdef MMAQM_HAS_UPTA
#include "upta.p4"
#endif

// Sets meta.aqm_applied when the port has a policy.
control Aqm(inout headers_t hdr, inout local_metadata_t meta,
            inout standard_metadata_t standard_metadata) {
#ifdef MMAQM_HAS_DROP_TAIL
    DropTail() drop_tail_algorithm;
#endif
#ifdef MMAQM_HAS_RED
    Red() red_algorithm;
#endif
#ifdef MMAQM_HAS_CBT_RED_ALL
    CbtRedAll() cbt_red_all_algorithm;
#endif
#ifdef MMAQM_HAS_CBT_RED_TCP_ONLY
    CbtRedTcpOnly() cbt_red_tcp_only_algorithm;
#endif
#ifdef MMAQM_HAS_DCBT
    Dcbt() dcbt_algorithm;
#endif
#ifdef MMAQM_HAS_DCBT_CHIPS
    DcbtChips() dcbt_chips_algorithm;
#endif
#ifdef MMAQM_HAS_MCDT
    Mcdt() mcdt_algorithm;
#endif
#ifdef MMAQM_HAS_FRED
    Fred() fred_algorithm;
#endif
#ifdef MMAQM_HAS_UPTA
    Upta() upta_algorithm;
#endif

#ifdef MMAQM_USES_TAG_GUARD
    // The tag guard's flow slots (tag_guard.p4) need the flow signature of a
    // tagged packet: hashed here, at one call site for every algorithm (each
    // call site costs five PHV fields); flow_report.p4, FRED and UPTA reuse it.
#include "flow_signature.p4"
#endif

    // What every policy loads.
    action load_policy(pkts_t queue_limit_pkts, shift_t flow_epoch_shift) {
        meta.aqm_applied = true;
        meta.class_index = meta.port_index * CLASS_SLOTS + (bit<32>)(bit<8>)meta.class_id;
        meta.flow_epoch_shift = flow_epoch_shift;
        meta.policy.queue_limit_pkts = queue_limit_pkts;
    }

#ifdef MMAQM_HAS_RED_FAMILY
    // What every RED-based policy loads (red.p4: the average, the drop test
    // and its options).
    action load_red_policy(pkts_t queue_limit_pkts, shift_t flow_epoch_shift,
                           policy_epoch_t policy_epoch, shift_t ewma_shift,
                           scaled_t min_th_scaled, scaled_t max_th_scaled,
                           q24_t red_slope_q24, q32_t idle_decay_q32, flag_t gentle,
                           q16_t max_p_q16, q24_t gentle_slope_q24, flag_t ecn,
                           flag_t harddrop, flag_t wait) {
        load_policy(queue_limit_pkts, flow_epoch_shift);
        meta.policy.policy_epoch = policy_epoch;
        meta.policy.ewma_shift = ewma_shift;
        meta.policy.min_th_scaled = min_th_scaled;
        meta.policy.max_th_scaled = max_th_scaled;
        meta.policy.red_slope_q24 = red_slope_q24;
        meta.policy.idle_decay_q32 = idle_decay_q32;
        meta.policy.gentle = gentle;
        meta.policy.max_p_q16 = max_p_q16;
        meta.policy.gentle_slope_q24 = gentle_slope_q24;
        meta.policy.ecn = ecn;
        meta.policy.harddrop = harddrop;
        meta.policy.wait = wait;
    }
#endif

    // ---- port_policy actions: one per algorithm, named at the top level of
    // the P4Info (the controller's algorithms.ALGORITHMS); a profile
    // (profile.p4) has its algorithm's only.
#ifdef MMAQM_HAS_DROP_TAIL
    @name(".drop_tail")
    action drop_tail(pkts_t queue_limit_pkts, shift_t flow_epoch_shift) {
        load_policy(queue_limit_pkts, flow_epoch_shift);
    }
#endif

#ifdef MMAQM_HAS_RED
    @name(".red")
    action red(pkts_t queue_limit_pkts, shift_t flow_epoch_shift,
               policy_epoch_t policy_epoch, shift_t ewma_shift,
               scaled_t min_th_scaled, scaled_t max_th_scaled, q24_t red_slope_q24,
               q32_t idle_decay_q32, flag_t gentle, q16_t max_p_q16, q24_t gentle_slope_q24,
               flag_t ecn, flag_t harddrop, flag_t wait) {
        load_red_policy(queue_limit_pkts, flow_epoch_shift, policy_epoch, ewma_shift,
                        min_th_scaled, max_th_scaled, red_slope_q24, idle_decay_q32, gentle,
                        max_p_q16, gentle_slope_q24, ecn, harddrop, wait);
    }
#endif

#ifdef MMAQM_HAS_CBT_RED_ALL
    @name(".cbt_red_all")
    action cbt_red_all(pkts_t queue_limit_pkts, shift_t flow_epoch_shift,
                       policy_epoch_t policy_epoch, shift_t ewma_shift,
                       scaled_t min_th_scaled, scaled_t max_th_scaled, q24_t red_slope_q24,
                       q32_t idle_decay_q32, flag_t gentle, q16_t max_p_q16,
                       q24_t gentle_slope_q24, flag_t ecn, flag_t harddrop, flag_t wait,
                       scaled_t tagged_th_scaled, scaled_t untagged_th_scaled,
                       bit<32> tag_guard_interval_us) {
        load_red_policy(queue_limit_pkts, flow_epoch_shift, policy_epoch, ewma_shift,
                        min_th_scaled, max_th_scaled, red_slope_q24, idle_decay_q32, gentle,
                        max_p_q16, gentle_slope_q24, ecn, harddrop, wait);
        meta.policy.tagged_th_scaled = tagged_th_scaled;
        meta.policy.untagged_th_scaled = untagged_th_scaled;
        meta.policy.tag_guard_interval_us = tag_guard_interval_us;
    }
#endif

#ifdef MMAQM_HAS_CBT_RED_TCP_ONLY
    @name(".cbt_red_tcp_only")
    action cbt_red_tcp_only(pkts_t queue_limit_pkts, shift_t flow_epoch_shift,
                            policy_epoch_t policy_epoch, shift_t ewma_shift,
                            scaled_t min_th_scaled, scaled_t max_th_scaled,
                            q24_t red_slope_q24,
                            q32_t idle_decay_q32, flag_t gentle, q16_t max_p_q16,
                       q24_t gentle_slope_q24, flag_t ecn, flag_t harddrop, flag_t wait,
                       scaled_t tagged_th_scaled, scaled_t untagged_th_scaled,
                       bit<32> tag_guard_interval_us) {
        load_red_policy(queue_limit_pkts, flow_epoch_shift, policy_epoch, ewma_shift,
                        min_th_scaled, max_th_scaled, red_slope_q24, idle_decay_q32, gentle,
                        max_p_q16, gentle_slope_q24, ecn, harddrop, wait);
        meta.policy.tagged_th_scaled = tagged_th_scaled;
        meta.policy.untagged_th_scaled = untagged_th_scaled;
        meta.policy.tag_guard_interval_us = tag_guard_interval_us;
    }
#endif

#ifdef MMAQM_HAS_DCBT
    @name(".dcbt")
    action dcbt(pkts_t queue_limit_pkts, shift_t flow_epoch_shift,
                policy_epoch_t policy_epoch, shift_t ewma_shift,
                scaled_t min_th_scaled, scaled_t max_th_scaled, q24_t red_slope_q24,
                q32_t idle_decay_q32, flag_t gentle, q16_t max_p_q16,
                q24_t gentle_slope_q24, flag_t ecn, flag_t harddrop, flag_t wait,
                q16_t tagged_share_q16, scaled_t untagged_th_scaled,
                bit<32> tag_guard_interval_us) {
        load_red_policy(queue_limit_pkts, flow_epoch_shift, policy_epoch, ewma_shift,
                        min_th_scaled, max_th_scaled, red_slope_q24, idle_decay_q32, gentle,
                        max_p_q16, gentle_slope_q24, ecn, harddrop, wait);
        meta.policy.tagged_share_q16 = tagged_share_q16;
        meta.policy.untagged_th_scaled = untagged_th_scaled;
        meta.policy.tag_guard_interval_us = tag_guard_interval_us;
    }
#endif

#ifdef MMAQM_HAS_DCBT_CHIPS
    @name(".dcbt_chips")
    action dcbt_chips(pkts_t queue_limit_pkts, shift_t flow_epoch_shift,
                      policy_epoch_t policy_epoch, shift_t ewma_shift,
                      scaled_t min_th_scaled, scaled_t max_th_scaled, q24_t red_slope_q24,
                      q32_t idle_decay_q32, flag_t gentle, q16_t max_p_q16,
                      q24_t gentle_slope_q24, flag_t ecn, flag_t harddrop, flag_t wait,
                      q16_t tagged_share_q16, scaled_t untagged_th_scaled,
                      shift_t chips_ewma_shift, q16_t chips_tagged_share_limit_q16,
                      bit<32> tag_guard_interval_us) {
        load_red_policy(queue_limit_pkts, flow_epoch_shift, policy_epoch, ewma_shift,
                        min_th_scaled, max_th_scaled, red_slope_q24, idle_decay_q32, gentle,
                        max_p_q16, gentle_slope_q24, ecn, harddrop, wait);
        meta.policy.tagged_share_q16 = tagged_share_q16;
        meta.policy.untagged_th_scaled = untagged_th_scaled;
        meta.policy.chips_ewma_shift = chips_ewma_shift;
        meta.policy.chips_tagged_share_limit_q16 = chips_tagged_share_limit_q16;
        meta.policy.tag_guard_interval_us = tag_guard_interval_us;
    }
#endif

#ifdef MMAQM_HAS_MCDT
    // MCDT (mcdt §II.2): the controller rewrites the thresholds every period,
    // keeping the policy epoch.
    @name(".mcdt")
    action mcdt(pkts_t queue_limit_pkts, shift_t flow_epoch_shift,
                policy_epoch_t policy_epoch, pkts_t tcp_th_pkts, pkts_t tagged_th_pkts,
                pkts_t untagged_th_pkts, bit<8> mcdt_mode) {
        load_policy(queue_limit_pkts, flow_epoch_shift);
        meta.policy.policy_epoch = policy_epoch;
        meta.policy.tcp_th_pkts = tcp_th_pkts;
        meta.policy.tagged_th_pkts = tagged_th_pkts;
        meta.policy.untagged_th_pkts = untagged_th_pkts;
        meta.policy.mcdt_mode = mcdt_mode;
    }
#endif

#ifdef MMAQM_HAS_FRED
    // FRED (Lin & Morris 1997; cbt §2.3): RED's thresholds, slope, weight and
    // idle decay, plus minq and the size of the port's flow table.
    @name(".fred")
    action fred(pkts_t queue_limit_pkts, shift_t flow_epoch_shift,
                policy_epoch_t policy_epoch, shift_t ewma_shift,
                scaled_t min_th_scaled, scaled_t max_th_scaled, q24_t red_slope_q24,
                q32_t idle_decay_q32, pkts_t minq_pkts, bit<32> fred_slot_mask) {
        load_policy(queue_limit_pkts, flow_epoch_shift);
        meta.policy.policy_epoch = policy_epoch;
        meta.policy.ewma_shift = ewma_shift;
        meta.policy.min_th_scaled = min_th_scaled;
        meta.policy.max_th_scaled = max_th_scaled;
        meta.policy.red_slope_q24 = red_slope_q24;
        meta.policy.idle_decay_q32 = idle_decay_q32;
        meta.policy.minq_pkts = minq_pkts;
        meta.policy.fred_slot_mask = fred_slot_mask;
    }
#endif

#ifdef MMAQM_HAS_UPTA
    // UPTA (upta.p4; docs/upta-plan.md §1.8): mode, the estimator's K, the flow
    // table size, and the fair shares the controller computes each interval
    // (eqs. 18-19) with their reciprocals (eq. 17's rewrite).
    @name(".upta")
    action upta(pkts_t queue_limit_pkts, shift_t flow_epoch_shift,
                policy_epoch_t policy_epoch, bit<8> upta_mode, shift_t k_shift,
                bit<32> slot_mask, bit<32> fs_i_scaled, bit<32> fs_u_scaled,
                bit<32> inv_fs_i_mant, bit<32> inv_fs_u_mant, shift_t inv_fs_i_shift,
                shift_t inv_fs_u_shift, bit<16> tagged_q16) {
        load_policy(queue_limit_pkts, flow_epoch_shift);
        meta.policy.policy_epoch = policy_epoch;
        meta.policy.upta_mode = upta_mode;
        meta.policy.upta_k_shift = k_shift;
        meta.policy.upta_slot_mask = slot_mask;
        meta.policy.upta_fs_i_scaled = fs_i_scaled;
        meta.policy.upta_fs_u_scaled = fs_u_scaled;
        meta.policy.upta_inv_fs_i_mant = inv_fs_i_mant;
        meta.policy.upta_inv_fs_u_mant = inv_fs_u_mant;
        meta.policy.upta_inv_fs_i_shift = inv_fs_i_shift;
        meta.policy.upta_inv_fs_u_shift = inv_fs_u_shift;
        meta.policy.upta_tagged_q16 = tagged_q16;
    }
#endif

    action no_policy() {}

    table port_policy {
        key = { meta.routed_port : exact @name("port"); }
        actions = {
#ifdef MMAQM_HAS_DROP_TAIL
            drop_tail;
#endif
#ifdef MMAQM_HAS_RED
            red;
#endif
#ifdef MMAQM_HAS_CBT_RED_ALL
            cbt_red_all;
#endif
#ifdef MMAQM_HAS_CBT_RED_TCP_ONLY
            cbt_red_tcp_only;
#endif
#ifdef MMAQM_HAS_DCBT
            dcbt;
#endif
#ifdef MMAQM_HAS_DCBT_CHIPS
            dcbt_chips;
#endif
#ifdef MMAQM_HAS_MCDT
            mcdt;
#endif
#ifdef MMAQM_HAS_FRED
            fred;
#endif
#ifdef MMAQM_HAS_UPTA
            upta;
#endif
            @defaultonly no_policy;
        }
        const default_action = no_policy();
        size = NUM_PORTS;
    }

    apply {
#ifdef MMAQM_USES_TAG_GUARD
        if (meta.class_id == traffic_class_t.TAGGED) {
            compute_flow_signature();
        }
#endif
        switch (port_policy.apply().action_run) {
#ifdef MMAQM_HAS_DROP_TAIL
            drop_tail:        { drop_tail_algorithm.apply(hdr, meta, standard_metadata); }
#endif
#ifdef MMAQM_HAS_RED
            red:              { red_algorithm.apply(hdr, meta, standard_metadata); }
#endif
#ifdef MMAQM_HAS_CBT_RED_ALL
            cbt_red_all:      { cbt_red_all_algorithm.apply(hdr, meta, standard_metadata); }
#endif
#ifdef MMAQM_HAS_CBT_RED_TCP_ONLY
            cbt_red_tcp_only: { cbt_red_tcp_only_algorithm.apply(hdr, meta, standard_metadata); }
#endif
#ifdef MMAQM_HAS_DCBT
            dcbt:             { dcbt_algorithm.apply(hdr, meta, standard_metadata); }
#endif
#ifdef MMAQM_HAS_DCBT_CHIPS
            dcbt_chips:       { dcbt_chips_algorithm.apply(hdr, meta, standard_metadata); }
#endif
#ifdef MMAQM_HAS_MCDT
            mcdt:             { mcdt_algorithm.apply(hdr, meta, standard_metadata); }
#endif
#ifdef MMAQM_HAS_FRED
            fred:             { fred_algorithm.apply(hdr, meta, standard_metadata); }
#endif
#ifdef MMAQM_HAS_UPTA
            upta:             { upta_algorithm.apply(hdr, meta, standard_metadata); }
#endif
        }
    }
}

#endif
