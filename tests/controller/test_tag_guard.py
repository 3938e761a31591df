"""The tag guard (algorithms.tag_guard, tag_guard.p4): its Q16 value, its options
in the CBT, D-CBT and ChIPS plug-ins, its reference model and the Tofino refusal."""

from __future__ import annotations

import pytest

from mmaqm import p4constants as C
from mmaqm.algorithms import tag_guard
from mmaqm.config import ConfigError, parse_policy
from mmaqm.encoding import policy_action
from mmaqm.targets.tna import Tna
from mmaqm_oracle import fixedpoint_model as FM

DCBT = {"algorithm": "DCBT", "queue_limit_pkts": 100, "min_th_pkts": 10, "max_th_pkts": 30,
        "max_p": 0.1}
CBT = {"algorithm": "CBT_RED_ALL", "queue_limit_pkts": 100, "min_th_pkts": 10,
       "max_th_pkts": 30, "max_p": 0.1, "tagged_th_pkts": 8, "untagged_th_pkts": 4}
CHIPS = {**DCBT, "algorithm": "DCBT_CHIPS"}


@pytest.mark.parametrize("enabled, tolerance, flows, q16", [
    (False, 1.5, 4, 0),                 # off: 0, whatever the flows
    (True, 1.0, 2, 32768),              # 2^16 / 2
    (True, 1.5, 4, 24576),              # 1.5 * 65536 / 4
    (True, 1.5, 0, 98304),              # no tagged flow known: as if one
    (True, 1.0, 3, 21845),              # 21845.33 -> 21845
    (True, 2.0, 3, 43691),              # 43690.67 -> 43691 (round, not truncate)
    (True, 1.0, 200_000, 1),            # never 0 while on (0 is "off")
    (True, 16.0, 1, 1 << 20),           # the largest: fits q16_t (bit<32>)
])
def test_flow_q16(enabled: bool, tolerance: float, flows: int, q16: int) -> None:
    assert tag_guard.flow_q16(enabled, tolerance, flows) == q16


@pytest.mark.parametrize("args", [(True, 0.5, 1), (True, 17.0, 1), (True, True, 1),
                                  (True, 1.0, -1), (True, 1.0, 1.5), (False, 1.0, True)])
def test_flow_q16_rejects(args: tuple) -> None:
    with pytest.raises(ValueError):
        tag_guard.flow_q16(*args)


def test_allowance_pkts() -> None:
    assert tag_guard.allowance_pkts(8, 1.0, 2) == 4.0
    assert tag_guard.allowance_pkts(8, 1.0, 8) == 2.0      # TAG_GUARD_MIN_PKTS
    assert tag_guard.allowance_pkts(3, 1.5, 0) == 4.5


@pytest.mark.parametrize("raw", [CBT, {**CBT, "algorithm": "CBT_RED_TCP_ONLY"}, DCBT, CHIPS])
def test_off_by_default_and_last_in_the_action(raw: dict) -> None:
    policy = parse_policy(raw)
    assert policy.settings["tag_guard"] is False
    assert policy.settings["tag_guard_tolerance"] == tag_guard.DEFAULT_TOLERANCE
    action = policy_action(policy, policy_epoch=1, flow_epoch_shift=17, tagged_flows=5)
    assert action.params["tag_guard_flow_q16"] == 0
    assert list(action.params)[-1] == "tag_guard_flow_q16"     # the P4 actions' order


@pytest.mark.parametrize("raw", [CBT, DCBT, CHIPS])
def test_on_the_part_follows_the_tagged_flows(raw: dict) -> None:
    policy = parse_policy({**raw, "tag_guard": True, "tag_guard_tolerance": 2.0})
    for flows, q16 in ((1, 131072), (4, 32768), (5, 26214)):
        action = policy_action(policy, policy_epoch=1, flow_epoch_shift=17, tagged_flows=flows)
        assert action.params["tag_guard_flow_q16"] == q16
    assert policy.plugin.follows_flow_counts(policy)


def test_cbt_follows_the_flow_counts_only_with_the_guard() -> None:
    off, on = parse_policy(CBT), parse_policy({**CBT, "tag_guard": True})
    assert not off.plugin.follows_flow_counts(off)
    assert on.plugin.follows_flow_counts(on)
    red = parse_policy({"algorithm": "RED", "queue_limit_pkts": 100, "min_th_pkts": 10,
                        "max_th_pkts": 30, "max_p": 0.1})
    assert not red.plugin.follows_flow_counts(red)


@pytest.mark.parametrize("extra, message", [
    ({"tag_guard_tolerance": 0.9}, "tag_guard_tolerance"),
    ({"tag_guard_tolerance": 16.5}, "tag_guard_tolerance"),
    ({"tag_guard": "yes"}, "tag_guard"),
])
def test_bad_options_are_refused(extra: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_policy({**DCBT, **extra})


def test_other_algorithms_do_not_take_the_option() -> None:
    with pytest.raises(ConfigError, match="tag_guard"):
        parse_policy({"algorithm": "FRED", "queue_limit_pkts": 100, "min_th_pkts": 10,
                      "max_th_pkts": 30, "max_p": 0.1, "tag_guard": True})


def test_the_tofino_target_refuses_the_guard_on_and_takes_it_off() -> None:
    off = policy_action(parse_policy(DCBT), policy_epoch=1, flow_epoch_shift=17)
    Tna().check_action(off)
    on = policy_action(parse_policy({**DCBT, "tag_guard": True}), policy_epoch=1,
                       flow_epoch_shift=17, tagged_flows=2)
    with pytest.raises(ValueError, match="not in the Tofino build"):
        Tna().check_action(on)


# ------------------------------------------------------------ reference model
@pytest.mark.parametrize("qlen, th_pkts, q16, drops", [
    (4, 8, 32768, True),          # 4 << 32 == (8 << 16) * 2^15: at the part
    (3, 8, 32768, False),
    (1, 0, 32768, False),         # below TAG_GUARD_MIN_PKTS, even with a 0 threshold
    (2, 0, 32768, True),
    (7, 7, 32768, True),          # 7 >= 3.5
    (2, 9, 32768, False),         # 2 < 4.5
    (65535, 65535, 1 << 20, False),   # 65535 < 16 * 65535: no overflow in bit<64>
])
def test_tag_guard_drops(qlen: int, th_pkts: int, q16: int, drops: bool) -> None:
    assert FM.tag_guard_drops(qlen, th_pkts << 16, q16) is drops


def test_tag_guard_drops_checks_widths() -> None:
    with pytest.raises(ValueError):
        FM.tag_guard_drops(1 << 16, 0, 1)       # qlen is bit<16>
    with pytest.raises(ValueError):
        FM.tag_guard_drops(0, 1 << 32, 1)


def test_model_cbt_guard_drops_the_flow_over_its_part_with_its_reason() -> None:
    # tagged_th 8, tolerance 1, 2 flows: part 4 packets; weight 1: class avg = occupancy
    raw = {**CBT, "ewma_weight": 1.0, "min_th_pkts": 90, "max_th_pkts": 99, "tag_guard": True,
           "tag_guard_tolerance": 1.0}
    action = policy_action(parse_policy(raw), policy_epoch=1, flow_epoch_shift=0, tagged_flows=2)
    model = FM.PortModel(action, lambda: 0)
    tagged = C.CLASS_TAGGED
    assert model.arrive(tagged, {"queue": 3, "tagged": 3}, flow_pkts=3) == FM.ADMIT
    assert model.arrive(tagged, {"queue": 4, "tagged": 4}, flow_pkts=4) == FM.TAG_GUARD
    assert model.arrive(tagged, {"queue": 4, "tagged": 4}, flow_pkts=0) == FM.ADMIT
    assert model.drops[(tagged, FM.TAG_GUARD)] == 1
    # the class test comes first: over the class threshold is CLASS_THRESHOLD
    assert model.arrive(tagged, {"queue": 9, "tagged": 9}, flow_pkts=9) == FM.CLASS_THRESHOLD
    # TCP and untagged packets are never the guard's
    assert model.arrive(C.CLASS_UNTAGGED, {"queue": 9}, flow_pkts=9) == FM.ADMIT


def test_model_dcbt_guard_only_while_red_avg_is_above_min_th() -> None:
    raw = {**DCBT, "ewma_weight": 1.0, "min_th_pkts": 6, "max_th_pkts": 100,
           "max_p": 94 / 2**24, "queue_limit_pkts": 200, "tag_guard": True,
           "tag_guard_tolerance": 1.0}
    action = policy_action(parse_policy(raw), policy_epoch=1, flow_epoch_shift=0,
                           share_tagged=1.0, share_untagged=0.0, tagged_flows=2)
    model = FM.PortModel(action, lambda: 0)
    tagged = C.CLASS_TAGGED
    assert model.arrive(tagged, {"queue": 6, "tagged": 6}, flow_pkts=6) == FM.ADMIT    # 6 <= 6
    assert model.arrive(tagged, {"queue": 7, "tagged": 7}, flow_pkts=7) == FM.TAG_GUARD
    assert model.arrive(tagged, {"queue": 7, "tagged": 7}, flow_pkts=3) == FM.ADMIT    # 3 < 3.5


def test_model_guard_off_ignores_the_flow() -> None:
    raw = {**CBT, "ewma_weight": 1.0, "min_th_pkts": 90, "max_th_pkts": 99}
    action = policy_action(parse_policy(raw), policy_epoch=1, flow_epoch_shift=0, tagged_flows=2)
    model = FM.PortModel(action, lambda: 0)
    assert model.arrive(C.CLASS_TAGGED, {"queue": 8, "tagged": 8}, flow_pkts=8) == FM.ADMIT
