"""encoding: a validated policy -> its port_policy action (aqm.p4), values worked out by hand."""

from __future__ import annotations

import pytest

from mmaqm import p4constants as C
from mmaqm.config import parse_policy
from mmaqm.encoding import PolicyAction, policy_action, policy_epoch_from_clock
from mmaqm.algorithms import red

RED_THRESHOLDS = {"min_th_pkts": 5, "max_th_pkts": 15, "max_p": 0.1, "queue_limit_pkts": 60}
# Every algorithm but DROP_TAIL: 5 * 2^16 = 327680; 15 * 2^16 = 983040;
# red_slope_q24 = round(0.1 / (15 - 5) * 2^24) = round(167772.16) = 167772; w = 2^-9.
# RED options off by default: no bandwidth_pps -> no idle decay; no gentle, ECN, harddrop, wait.
RED_OPTIONS_OFF = {"idle_decay_q32": 0, "gentle": 0, "max_p_q16": 0, "gentle_slope_q24": 0,
                   "ecn": 0, "harddrop": 0, "wait": 0}
RED_PARAMS = {"queue_limit_pkts": 60, "min_th_scaled": 327680, "max_th_scaled": 983040,
              "red_slope_q24": 167772, "ewma_shift": 9, **RED_OPTIONS_OFF}


def test_drop_tail_has_only_its_queue_limit_and_flow_epoch_shift() -> None:
    action = policy_action(parse_policy({"algorithm": "DROP_TAIL", "queue_limit_pkts": 100}),
                           policy_epoch=7, flow_epoch_shift=0)
    assert action.name == "drop_tail"
    assert dict(action.params) == {"queue_limit_pkts": 100, "flow_epoch_shift": 0}


def test_red() -> None:
    action = policy_action(parse_policy({"algorithm": "RED", **RED_THRESHOLDS}),
                           policy_epoch=3, flow_epoch_shift=17)
    assert action.name == "red"
    assert dict(action.params) == {**RED_PARAMS, "policy_epoch": 3, "flow_epoch_shift": 17}


def test_red_options_hand_computed() -> None:
    policy = parse_policy({"algorithm": "RED", **RED_THRESHOLDS, "bandwidth_pps": 3125,
                           "gentle": True, "ecn": True, "harddrop": True, "wait": True})
    action = policy_action(policy, policy_epoch=3, flow_epoch_shift=17)
    # idle decay: -log2(1 - 2^-9) * 3125 / 1e6 = 8.8141e-6 halvings per us; * 2^32 = 37856.37
    # gentle: max_p_q16 = round(0.1 * 65536) = round(6553.6) = 6554;
    #         gentle_slope_q24 = round((1 - 0.1) / 15 * 2^24) = round(1006632.96) = 1006633
    assert dict(action.params) == {**RED_PARAMS, "policy_epoch": 3, "flow_epoch_shift": 17,
                                   "idle_decay_q32": 37856, "gentle": 1, "max_p_q16": 6554,
                                   "gentle_slope_q24": 1006633, "ecn": 1, "harddrop": 1,
                                   "wait": 1}


# D-CBT at shares (0.5, 0.25): untagged 0.25 * (5 + 0.1 * (15 - 5)) = 0.25 * 6 = 1.5 pkts
# -> 98304; tagged share 0.5 -> 32768.
DCBT_HALF_QUARTER = {"tagged_share_q16": 32768, "untagged_th_scaled": 98304,
                     "tag_guard_interval_us": 0}


def test_dcbt_chips_is_dcbt_plus_the_chips_limit() -> None:
    policy = parse_policy({"algorithm": "DCBT_CHIPS", **RED_THRESHOLDS})
    action = policy_action(policy, policy_epoch=9, flow_epoch_shift=17,
                           share_tagged=0.5, share_untagged=0.25)
    # as test_dcbt_thresholds_come_from_the_shares, plus dcbt §5's 50 % tagged-to-other
    # ratio as a share: 0.5 / 1.5 = 1/3 -> round(21845.33) = 21845; EWMA 2^-9 -> shift 9
    assert action.name == "dcbt_chips"
    assert dict(action.params) == {**RED_PARAMS, "policy_epoch": 9, "flow_epoch_shift": 17,
                                   **DCBT_HALF_QUARTER, "chips_ewma_shift": 9,
                                   "chips_tagged_share_limit_q16": 21845}


@pytest.mark.parametrize("algorithm, action_name", [("CBT_RED_ALL", "cbt_red_all"),
                                                    ("CBT_RED_TCP_ONLY", "cbt_red_tcp_only")])
def test_cbt_static_class_thresholds(algorithm: str, action_name: str) -> None:
    policy = parse_policy({"algorithm": algorithm, **RED_THRESHOLDS, "ewma_weight": 0.25,
                           "tagged_th_pkts": 2.9, "untagged_th_pkts": 0.6})
    action = policy_action(policy, policy_epoch=1, flow_epoch_shift=17,
                           share_tagged=0.5, share_untagged=0.5)     # shares: D-CBT only
    # dcbt §5 thresholds: round(2.9 * 65536) = round(190054.4) = 190054,
    # round(0.6 * 65536) = round(39321.6) = 39322; w = 2^-2
    assert action.name == action_name
    assert dict(action.params) == {**RED_PARAMS, "ewma_shift": 2, "policy_epoch": 1,
                                   "flow_epoch_shift": 17, "tagged_th_scaled": 190054,
                                   "untagged_th_scaled": 39322, "tag_guard_interval_us": 0}


def test_dcbt_thresholds_come_from_the_shares() -> None:
    policy = parse_policy({"algorithm": "DCBT", **RED_THRESHOLDS})
    action = policy_action(policy, policy_epoch=65535, flow_epoch_shift=17,
                           share_tagged=0.5, share_untagged=0.25)
    assert action.name == "dcbt"
    assert dict(action.params) == {**RED_PARAMS, "policy_epoch": 65535, "flow_epoch_shift": 17,
                                   **DCBT_HALF_QUARTER}


@pytest.mark.parametrize("share_tagged, share_untagged, tagged_q16, untagged_scaled", [
    (1 / 3, 2 / 3, 21845, 262144),    # round(65536 / 3 = 21845.33); 2/3 * 6 = 4 pkts
    (0.0, 0.0, 0, 0),
])
def test_dcbt_share_encoding(share_tagged: float, share_untagged: float, tagged_q16: int,
                             untagged_scaled: int) -> None:
    policy = parse_policy({"algorithm": "DCBT", **RED_THRESHOLDS})
    action = policy_action(policy, policy_epoch=1, flow_epoch_shift=17,
                           share_tagged=share_tagged, share_untagged=share_untagged)
    assert (action.params["tagged_share_q16"], action.params["untagged_th_scaled"]) == (
        tagged_q16, untagged_scaled)


def test_dcbt_default_shares_are_one() -> None:
    policy = parse_policy({"algorithm": "DCBT", **RED_THRESHOLDS})
    action = policy_action(policy, policy_epoch=1, flow_epoch_shift=17)
    # a lone class: tagged 1.0 -> 65536; untagged the whole allowance 6 pkts -> 393216
    assert (action.params["tagged_share_q16"], action.params["untagged_th_scaled"]) == (
        65536, 393216)


def test_policy_epoch_from_clock_is_ms_mod_2_32_never_0_nor_installed() -> None:
    assert policy_epoch_from_clock(1_234_567_891_000_000, None) == 1_234_567_891 % 2**32
    assert policy_epoch_from_clock(5_000_000, 5) == 6          # skips the installed epoch
    assert policy_epoch_from_clock(2**32 * 1_000_000, None) == 1   # skips 0 (power-up value)
    assert policy_epoch_from_clock((2**32 - 1) * 1_000_000, 2**32 - 1) == 1  # wraps, skips 0
    # Two installs 1 ms apart get different epochs even after the tables were cleared
    # (the bug a restarting counter had: clear() + epoch 1 repeated an old epoch).
    assert policy_epoch_from_clock(10_000_000, None) != policy_epoch_from_clock(11_000_000, None)


def test_mcdt_carries_the_epoch_and_whole_packet_thresholds() -> None:
    policy = parse_policy({"algorithm": "MCDT", "queue_limit_pkts": 100})
    assert "ewma_weight" not in policy.settings and policy.settings.mcdt_period_ms == 100.0
    first = policy_action(policy, policy_epoch=7, flow_epoch_shift=3)
    assert first == PolicyAction("mcdt", {
        "queue_limit_pkts": 100, "flow_epoch_shift": 3, "policy_epoch": 7,
        "tcp_th_pkts": 100, "tagged_th_pkts": 100, "untagged_th_pkts": 100,   # T_c = B
        "mcdt_mode": 0})                                                       # mode A
    later = policy_action(policy, policy_epoch=7, flow_epoch_shift=3,
                          mcdt_th_pkts={0: 59, 1: 59, 2: 41})
    assert later == first.with_params(tcp_th_pkts=59, tagged_th_pkts=59, untagged_th_pkts=41)
    with pytest.raises(ValueError, match=r"th_pkts\[TCP\] must be an int in 0..100, got 101"):
        policy_action(policy, policy_epoch=7, flow_epoch_shift=3,
                      mcdt_th_pkts={0: 101, 1: 0, 2: 0})
    for mode, code in (("A", 0), ("B", C.MCDT_MODE_B), ("C", C.MCDT_MODE_C)):
        moded = parse_policy({"algorithm": "MCDT", "queue_limit_pkts": 100, "mcdt_mode": mode})
        assert policy_action(moded, policy_epoch=7, flow_epoch_shift=3) == \
            first.with_params(mcdt_mode=code)
    assert (C.MCDT_MODE_B, C.MCDT_MODE_C) == (1, 2)


def test_fred_carries_red_thresholds_minq_slot_mask_and_idle_decay() -> None:
    policy = parse_policy({"algorithm": "FRED", "queue_limit_pkts": 60, "min_th_pkts": 5,
                           "max_th_pkts": 15, "max_p": 0.1, "fred_minq_pkts": 4,
                           "fred_flow_slots": 1024, "bandwidth_pps": 3125})
    action = policy_action(policy, policy_epoch=9, flow_epoch_shift=0)
    # 5 and 15 packets * 2^16; slope 0.1 / 10 * 2^24 = 167772.16 -> 167772; w = 2^-9;
    # idle decay: -log2(1 - 2^-9) / 320 us * 2^32 = 37857.7 -> as red.idle_decay_q32
    assert action == PolicyAction("fred", {
        "queue_limit_pkts": 60, "flow_epoch_shift": 0, "policy_epoch": 9, "ewma_shift": 9,
        "min_th_scaled": 327680, "max_th_scaled": 983040, "red_slope_q24": 167772,
        "minq_pkts": 4, "fred_slot_mask": 1023,
        "idle_decay_q32": red.idle_decay_q32(2**-9, 3125)})
    defaults = policy_action(parse_policy({"algorithm": "FRED", **RED_THRESHOLDS}),
                             policy_epoch=1, flow_epoch_shift=0)
    assert (defaults.params["minq_pkts"], defaults.params["fred_slot_mask"],
            defaults.params["idle_decay_q32"]) == (2, 4095, 0)
