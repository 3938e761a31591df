"""The tag guard (algorithms.tag_guard, tag_guard.p4): its interval, its options
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
ON = {"tag_guard": True, "tag_guard_link_pps": 1250}


@pytest.mark.parametrize("enabled, tolerance, link_pps, flows, interval_us", [
    (False, 1.5, None, 4, 0),           # off: 0, whatever the flows
    (True, 1.0, 2, 2, 1_000_000),       # 2 * 10^6 / 2
    (True, 1.25, 1250, 11, 7040),       # the experiment: 11 * 10^6 / 1562.5
    (True, 1.5, 1250, 0, 533),          # no active flow known: as if one (533.33)
    (True, 1.0, 3, 2, 666_667),         # 666666.67 -> 666667 (round, not truncate)
    (True, 16.0, 1e9, 1, 1),            # never 0 while on (0 is "off")
    (True, 1.0, 1e-3, 10, 2**32 - 1),   # capped at bit<32>
])
def test_interval_us(enabled: bool, tolerance: float, link_pps: float | None, flows: int,
                     interval_us: int) -> None:
    assert tag_guard.interval_us(enabled, tolerance, link_pps, flows) == interval_us


@pytest.mark.parametrize("args", [(True, 0.5, 10, 1), (True, 17.0, 10, 1), (True, True, 10, 1),
                                  (True, 1.0, 10, -1), (True, 1.0, 10, 1.5),
                                  (False, 1.0, 10, True), (True, 1.0, None, 1),
                                  (True, 1.0, 0, 1), (True, 1.0, True, 1)])
def test_interval_us_rejects(args: tuple) -> None:
    with pytest.raises(ValueError):
        tag_guard.interval_us(*args)


def test_allowed_rate_pps() -> None:
    assert tag_guard.allowed_rate_pps(1.25, 1250, 11) == pytest.approx(142.045, abs=1e-3)
    assert tag_guard.allowed_rate_pps(1.0, 100, 0) == 100.0


@pytest.mark.parametrize("raw", [CBT, {**CBT, "algorithm": "CBT_RED_TCP_ONLY"}, DCBT, CHIPS])
def test_off_by_default_and_last_in_the_action(raw: dict) -> None:
    policy = parse_policy(raw)
    assert policy.settings["tag_guard"] is False
    assert policy.settings["tag_guard_tolerance"] == tag_guard.DEFAULT_TOLERANCE
    action = policy_action(policy, policy_epoch=1, flow_epoch_shift=17, active_flows=5)
    assert action.params["tag_guard_interval_us"] == 0
    assert list(action.params)[-1] == "tag_guard_interval_us"     # the P4 actions' order


@pytest.mark.parametrize("raw", [CBT, DCBT, CHIPS])
def test_on_the_interval_follows_the_active_flows(raw: dict) -> None:
    policy = parse_policy({**raw, **ON, "tag_guard_tolerance": 2.0})
    for flows, interval in ((1, 400), (4, 1600), (11, 4400)):
        action = policy_action(policy, policy_epoch=1, flow_epoch_shift=17, active_flows=flows)
        assert action.params["tag_guard_interval_us"] == interval
    assert policy.plugin.follows_flow_counts(policy)


def test_cbt_follows_the_flow_counts_only_with_the_guard() -> None:
    off, on = parse_policy(CBT), parse_policy({**CBT, **ON})
    assert not off.plugin.follows_flow_counts(off)
    assert on.plugin.follows_flow_counts(on)
    red = parse_policy({"algorithm": "RED", "queue_limit_pkts": 100, "min_th_pkts": 10,
                        "max_th_pkts": 30, "max_p": 0.1})
    assert not red.plugin.follows_flow_counts(red)


@pytest.mark.parametrize("raw", [CBT, DCBT, CHIPS])
@pytest.mark.parametrize("extra, message", [
    ({**ON, "tag_guard_tolerance": 0.9}, "tag_guard_tolerance"),
    ({**ON, "tag_guard_tolerance": 16.5}, "tag_guard_tolerance"),
    ({"tag_guard": "yes"}, "tag_guard"),
    ({"tag_guard": True}, "tag_guard_link_pps: required when tag_guard is true"),
    ({**ON, "tag_guard_link_pps": 0}, "tag_guard_link_pps"),
])
def test_bad_options_are_refused(raw: dict, extra: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_policy({**raw, **extra})


def test_other_algorithms_do_not_take_the_option() -> None:
    with pytest.raises(ConfigError, match="tag_guard"):
        parse_policy({"algorithm": "FRED", "queue_limit_pkts": 100, "min_th_pkts": 10,
                      "max_th_pkts": 30, "max_p": 0.1, "tag_guard": True})


def test_the_tofino_target_refuses_the_guard_on_and_takes_it_off() -> None:
    off = policy_action(parse_policy(DCBT), policy_epoch=1, flow_epoch_shift=17)
    Tna().check_action(off)
    on = policy_action(parse_policy({**DCBT, **ON}), policy_epoch=1,
                       flow_epoch_shift=17, active_flows=2)
    with pytest.raises(ValueError, match="not in the Tofino build"):
        Tna().check_action(on)


# ------------------------------------------------------------ reference model
@pytest.mark.parametrize("tat, now, interval, drops", [
    (0, 0, 100, False),           # a fresh slot
    (400, 0, 100, False),         # 4 intervals ahead: the burst allows it
    (401, 0, 100, True),          # beyond now + 4 T
    (1_000_400, 1_000_000, 100, False),
    (1_000_401, 1_000_000, 100, True),
    (5, 1 << 40, 100, False),     # a stale TAT, long past
    ((1 << 48) - 1, (1 << 48) - 500, 100, True),   # the sum wraps at 2^48, as in bit<48>
])
def test_tag_guard_drops(tat: int, now: int, interval: int, drops: bool) -> None:
    assert FM.tag_guard_drops(tat, now, interval) is drops


def test_tag_guard_next_tat() -> None:
    assert FM.tag_guard_next_tat(0, 1000, 100) == 1100            # max(TAT, now) + T
    assert FM.tag_guard_next_tat(5000, 1000, 100) == 5100
    assert FM.tag_guard_next_tat((1 << 48) - 50, 0, 100) == 50    # bit<48>


def test_tag_guard_drops_checks_widths() -> None:
    with pytest.raises(ValueError):
        FM.tag_guard_drops(1 << 48, 0, 1)       # TAT is bit<48>
    with pytest.raises(ValueError):
        FM.tag_guard_drops(0, 0, 1 << 32)       # the interval is bit<32>


def _model(raw: dict, **inputs) -> FM.PortModel:
    action = policy_action(parse_policy(raw), policy_epoch=1, flow_epoch_shift=0, **inputs)
    return FM.PortModel(action, lambda: 0)


def test_model_cbt_guard_polices_each_flow_with_its_reason() -> None:
    # tolerance 1, 1 000 packets/s, 2 flows: T = 2 000 us; a burst of 4 ahead
    raw = {**CBT, "ewma_weight": 1.0, "min_th_pkts": 90, "max_th_pkts": 99, **ON,
           "tag_guard_link_pps": 1000, "tag_guard_tolerance": 1.0}
    model = _model(raw, active_flows=2)
    assert model.action.params["tag_guard_interval_us"] == 2000
    tagged = C.CLASS_TAGGED
    for _ in range(5):        # 1 + the burst of 4, at t = 0
        assert model.arrive(tagged, {"queue": 0}, flow_slot=7) == FM.ADMIT
    assert model.tag_guard_tat_us[7] == 10_000
    assert model.arrive(tagged, {"queue": 0}, flow_slot=7) == FM.TAG_GUARD
    assert model.tag_guard_tat_us[7] == 10_000                 # a drop leaves TAT
    assert model.arrive(tagged, {"queue": 0}, flow_slot=8) == FM.ADMIT     # another flow
    assert model.arrive(tagged, {"queue": 0}, now_us=2000, flow_slot=7) == FM.ADMIT
    assert model.tag_guard_tat_us[7] == 12_000
    assert model.drops[(tagged, FM.TAG_GUARD)] == 1
    # the class test comes first: over the class threshold is CLASS_THRESHOLD, TAT kept
    assert model.arrive(tagged, {"queue": 9, "tagged": 9}, now_us=2000,
                        flow_slot=7) == FM.CLASS_THRESHOLD
    assert model.tag_guard_tat_us[7] == 12_000
    # TCP and untagged packets are never the guard's
    assert model.arrive(C.CLASS_UNTAGGED, {"queue": 0}, flow_slot=7) == FM.ADMIT
    assert model.tag_guard_tat_us[7] == 12_000


def test_model_a_flow_at_its_rate_is_never_dropped() -> None:
    raw = {**CBT, "ewma_weight": 1.0, "min_th_pkts": 90, "max_th_pkts": 99, **ON,
           "tag_guard_link_pps": 1000, "tag_guard_tolerance": 1.0}
    model = _model(raw, active_flows=2)                           # T = 2 000 us
    decisions = [model.arrive(C.CLASS_TAGGED, {"queue": 0}, now_us=2000 * k, flow_slot=3)
                 for k in range(100)]
    assert decisions == [FM.ADMIT] * 100
    # twice its rate for 99 ms: 99 000 / 2 000 = 49.5 intervals, so 49 + 5 (the first
    # packet and the burst of 4) admitted; packet k passes while 2 000 k <= 1 000 k + 8 000
    model = _model(raw, active_flows=2)
    decisions = [model.arrive(C.CLASS_TAGGED, {"queue": 0}, now_us=1000 * k, flow_slot=3)
                 for k in range(100)]
    assert decisions.count(FM.ADMIT) == 49 + 5
    assert decisions[:10] == [FM.ADMIT] * 9 + [FM.TAG_GUARD]


def test_model_dcbt_guard_runs_below_min_th_too() -> None:
    # D-CBT's class test runs only while red_avg > min_th (dcbt §3.1); the guard, a
    # rate bound, runs on every tagged packet: 5 pass at t = 0 (1 + the burst of 4)
    # with red_avg 6 <= min_th 6, the sixth is the guard's.
    raw = {**DCBT, "ewma_weight": 1.0, "min_th_pkts": 6, "max_th_pkts": 100,
           "max_p": 94 / 2**24, "queue_limit_pkts": 200, **ON,
           "tag_guard_link_pps": 1000, "tag_guard_tolerance": 1.0}
    model = _model(raw, share_tagged=1.0, share_untagged=0.0, active_flows=2)
    tagged = C.CLASS_TAGGED
    for _ in range(5):
        assert model.arrive(tagged, {"queue": 6, "tagged": 6}, flow_slot=1) == FM.ADMIT
    assert model.tag_guard_tat_us[1] == 10_000
    assert model.arrive(tagged, {"queue": 6, "tagged": 6}, flow_slot=1) == FM.TAG_GUARD
    # above min_th the class test comes first: tagged_avg 7 > red_avg 7 * share 1 is
    # false, so the guard again (TAT kept by the drop)
    assert model.arrive(tagged, {"queue": 7, "tagged": 7}, flow_slot=1) == FM.TAG_GUARD
    assert model.arrive(tagged, {"queue": 7, "tagged": 7}, now_us=2000,
                        flow_slot=1) == FM.ADMIT
    # untagged packets never meet it
    assert model.arrive(C.CLASS_UNTAGGED, {"queue": 6}, flow_slot=1) == FM.ADMIT


def test_model_guard_off_ignores_the_flow() -> None:
    raw = {**CBT, "ewma_weight": 1.0, "min_th_pkts": 90, "max_th_pkts": 99}
    model = _model(raw, active_flows=2)
    for _ in range(20):
        assert model.arrive(C.CLASS_TAGGED, {"queue": 0}, flow_slot=1) == FM.ADMIT
    assert model.tag_guard_tat_us == {}
