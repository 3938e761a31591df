"""RED options (red.p4, algorithms.red, config): tc-red's burst, idle-time decay,
gentle RED, ECN, harddrop and ns-2's wait; values worked out by hand."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from mmaqm import fixedpoint as F
from mmaqm.algorithms import red
from mmaqm.fixedpoint import ewma_shift_from_weight
from mmaqm.config import ConfigError, parse_policy
from mmaqm.encoding import policy_action
from mmaqm_oracle import fixedpoint_model as FM

RED = {"algorithm": "RED", "queue_limit_pkts": 60, "min_th_pkts": 5, "max_th_pkts": 15,
       "max_p": 0.1}


def encode(raw: dict):
    return policy_action(parse_policy(raw), policy_epoch=1, flow_epoch_shift=0)


# ------------------------------------------------------------ burst (tc_red_eval_ewma)
def test_burst_gives_the_weight_tc_computes() -> None:
    # a = burst + 1 - min = 7 + 1 - 5 = 3. W = 1/2: (1 - 2^-7) / (1/2) = 1.98 < 3;
    # W = 1/4: (1 - 0.75^7) / 0.25 = 3.47 >= 3 -> W = 1/4 (tc: Wlog 2).
    assert red.ewma_weight_from_burst(7, 5) == 0.25
    # The tc-red man page's rule of thumb, burst = (2 min + max) / 3 = 8.33 for 5/15:
    # a = 4.33; W = 1/4 gives 3.59 < a, W = 1/8 gives (1 - (7/8)^8.33) / (1/8) = 5.37 -> 1/8.
    assert red.ewma_weight_from_burst((2 * 5 + 15) / 3, 5) == 0.125
    policy = parse_policy({**RED, "burst_pkts": 7})
    assert (policy.settings.ewma_weight, ewma_shift_from_weight(policy.settings.ewma_weight)) == (0.25, 2)


def test_burst_errors_like_tc() -> None:
    with pytest.raises(ValueError, match="burst must be >= min_th_pkts"):
        red.ewma_weight_from_burst(3, 5)
    with pytest.raises(ConfigError, match="burst_pkts: give burst_pkts or ewma_weight, not both"):
        parse_policy({**RED, "burst_pkts": 7, "ewma_weight": 0.25})
    with pytest.raises(ConfigError, match="burst_pkts: burst 2 is too small for min_th 5"):
        parse_policy({**RED, "burst_pkts": 2})


# ------------------------------------------------------------ idle-time decay
def test_idle_decay_rate_hand_computed() -> None:
    # -log2(15/16) = 0.0931094; * 1000 pkt/s / 1e6 us/s * 2^32 = 399 902.2 -> 399 902
    assert red.idle_decay_q32(1 / 16, 1000) == 399902
    # w = 2^-9 at 1250 pkt/s (the 10 Mbit/s dumbbell): -log2(511/512) = 0.0028208 per packet
    assert red.idle_decay_q32(2**-9, 1250) == round(-math.log2(511 / 512) * 1250 / 1e6 * 2**32)
    assert red.idle_decay_q32(1.0, 1000) == 0          # avg = last sample: nothing to decay
    with pytest.raises(ValueError, match="does not fit idle_decay_q32"):
        red.idle_decay_q32(0.5, 2e6)                   # 2 halvings per microsecond


def test_idle_decay_of_the_average_hand_computed() -> None:
    eight = 8 << 16
    assert FM.idle_decay(eight, 0) == eight
    assert FM.idle_decay(eight, 1 << 32) == 4 << 16                  # one halving
    # 1.5 halvings: 8 >> 1 = 4, then the chord 1 - 0.5/2: 4 - 4 * 0.5 / 2 = 3 packets
    # (exact 8 * 2^-1.5 = 2.83: the chord is 6.1 % high at f = 1/2)
    assert FM.idle_decay(eight, 3 << 31) == 3 << 16
    assert FM.idle_decay(eight, 32 << 32) == 0
    assert FM.idle_decay(0xFFFFFFFF, (31 << 32) + (1 << 31)) == 1    # 1.99.. >> ... chord
    # halvings = idle_us * rate, the idle time capped at 2^32 - 1 us
    assert FM.idle_halvings_q32(1000, 399902) == 399902000
    assert FM.idle_halvings_q32(2**40, 1) == 2**32 - 1


def test_idle_decay_tracks_floyd_jacobson_within_the_chord_error() -> None:
    w, bandwidth, avg = 2**-9, 1250, 10 << 16
    rate = red.idle_decay_q32(w, bandwidth)
    for idle_us in (100, 1_000, 10_000, 100_000, 1_000_000):
        exact = avg * red.idle_decay_factor(idle_us, w, bandwidth)
        got = FM.idle_decay(avg, FM.idle_halvings_q32(idle_us, rate))
        assert exact * 0.999 - 2 <= got <= exact * 1.062 + 2, (idle_us, got, exact)


def test_model_decays_only_on_an_arrival_at_an_empty_queue() -> None:
    action = encode({**RED, "ewma_weight": 1 / 16, "bandwidth_pps": 1000})
    model = FM.PortModel(action, lambda: 0)
    model.avg_policy_epoch = action.params["policy_epoch"]        # no epoch reset
    model.red_avg_scaled = 8 << 16
    model.arrive(0, FM.Occupancy(queue_pkts=3, tcp_pkts=3), now_us=10**6)   # not idle: EWMA
    assert model.red_avg_scaled == (8 << 16) - ((5 << 16) >> 4)
    before = model.red_avg_scaled
    model.queue_emptied(2 * 10**6)
    model.arrive(0, FM.Occupancy(), now_us=2 * 10**6 + 10_740)     # 10.74 ms: 1.0000 halvings
    halvings = FM.idle_halvings_q32(10_740, action.params["idle_decay_q32"])
    assert model.red_avg_scaled == FM.idle_decay(before, halvings)
    assert abs(model.red_avg_scaled - before / 2) < before * 0.01
    assert model.queue_idle_since_us == 2 * 10**6 + 10_740        # decayed up to now


def test_no_bandwidth_no_decay() -> None:
    action = encode(RED)
    assert action.params["idle_decay_q32"] == 0
    model = FM.PortModel(action, lambda: 0)
    model.avg_policy_epoch = action.params["policy_epoch"]
    model.red_avg_scaled = 8 << 16
    model.arrive(0, FM.Occupancy(), now_us=10**9)
    assert model.red_avg_scaled == (8 << 16) - ((8 << 16) >> 9)    # one EWMA step with 0


# ------------------------------------------------------------ gentle, ECN, harddrop
def test_gentle_params_hand_computed() -> None:
    params = encode({**RED, "gentle": True}).params
    # max_p_q16 = 0.1 * 65536 = 6553.6 -> 6554; slope (1 - 0.1) / 15 * 2^24 = 1006632.96
    assert (params["gentle"], params["max_p_q16"], params["gentle_slope_q24"]) == (1, 6554, 1006633)
    off = encode(RED).params
    assert (off["gentle"], off["max_p_q16"], off["gentle_slope_q24"]) == (0, 0, 0)


def test_gentle_ramp_probability() -> None:
    # avg 22.5 = max_th + 7.5: p_b = 0.1 + 0.9 * 7.5 / 15 = 0.55
    assert red.gentle_early_drop_probability(22.5, 15, 0.1) == pytest.approx(0.55)
    params = encode({**RED, "gentle": True}).params
    avg = round(22.5 * 65536)
    # red_decide with R = 36044 (just below 0.55 * 65536 = 36044.8): count 1 -> drop
    reason, mark, _ = FM.red_decide(avg, params, FM.RedState(), lambda: 36043)
    assert (reason, mark) == ("RED_EARLY", False)
    reason, mark, state = FM.red_decide(avg, params, FM.RedState(), lambda: 36045)
    assert (reason, mark, state.count) == (None, False, 1)
    # and at 2 * max_th the forced zone starts
    assert FM.red_decide(30 << 16, params, FM.RedState(), lambda: 0)[0] == "RED_FORCED"
    assert FM.red_decide((30 << 16) - 1, params, FM.RedState(), lambda: 65535)[0] != "RED_FORCED"


def test_ecn_marks_ect_packets_and_harddrop_drops_in_the_forced_zone() -> None:
    params = encode({**RED, "ecn": True}).params
    assert FM.red_decide(15 << 16, params, FM.RedState(), lambda: 0, ecn_capable=True)[:2] == \
        ("RED_FORCED", True)
    assert FM.red_decide(15 << 16, params, FM.RedState(), lambda: 0, ecn_capable=False)[:2] == \
        ("RED_FORCED", False)
    early = FM.red_decide(14 << 16, params, FM.RedState(count=1000), lambda: 0, ecn_capable=True)
    assert early[:2] == ("RED_EARLY", True) and early[2].count == 0      # a mark restarts count
    hard = encode({**RED, "ecn": True, "harddrop": True}).params
    assert FM.red_decide(15 << 16, hard, FM.RedState(), lambda: 0, ecn_capable=True)[:2] == \
        ("RED_FORCED", False)
    assert FM.red_decide(14 << 16, hard, FM.RedState(count=1000), lambda: 0,
                         ecn_capable=True)[:2] == ("RED_EARLY", True)


def test_model_marked_packets_are_admitted_and_counted() -> None:
    model = FM.PortModel(encode({**RED, "ecn": True, "ewma_weight": 1.0}), lambda: 0)
    assert model.arrive(0, FM.Occupancy(queue_pkts=20, tcp_pkts=20), ecn_capable=True) \
        == "MARK_RED_FORCED"
    assert model.arrive(0, FM.Occupancy(queue_pkts=60, tcp_pkts=60), ecn_capable=True) \
        == "QUEUE_LIMIT"                                    # the queue limit still drops
    assert model.ecn_marks == {(0, "RED_FORCED"): 1}
    assert model.admits == {0: 1}


@pytest.mark.parametrize("extra, message", [
    ({"adaptive": True}, r"adaptive: adaptive RED \(tc-red adaptive\) is not implemented"),
    ({"harddrop": True}, "harddrop: only with ecn: true"),
    ({"wait": "true"}, "wait: must be true or false"),
    ({"ecn": 1}, "ecn: must be true or false, got 1"),
    ({"gentle": "yes"}, "gentle: must be true or false"),
    ({"bandwidth_pps": 0}, "bandwidth_pps: must be > 0"),
    ({"bandwidth_pps": 1e12, "ewma_weight": 0.5}, "bandwidth_pps: idle decay"),
    ({"chips_max_tagged_ratio": 0.5}, "chips_max_tagged_ratio: only for DCBT_CHIPS"),
])
def test_bad_red_options_are_errors_naming_the_field(extra: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_policy({**RED, **extra})


@pytest.mark.parametrize("key", ["gentle", "ecn", "harddrop", "wait", "adaptive", "burst_pkts",
                                 "bandwidth_pps"])
def test_red_options_are_not_for_drop_tail(key: str) -> None:
    value = 5 if key in ("burst_pkts", "bandwidth_pps") else False
    with pytest.raises(ConfigError, match=f"{key}: not used by DROP_TAIL"):
        parse_policy({"algorithm": "DROP_TAIL", key: value})


def test_adaptive_false_is_accepted() -> None:
    assert parse_policy({**RED, "adaptive": False}).settings.ecn is False


# ------------------------------------------------------------ wait (ns-2 wait_)
# red_decide at a constant p_b: min_th 0 and slope 2^24 make p_b_q16 = avg_scaled.
CONSTANT_P_B = {"min_th_scaled": 0, "max_th_scaled": 1 << 16, "red_slope_q24": 1 << 24}


def test_wait_is_off_by_default_and_sent_as_a_flag() -> None:
    assert parse_policy(RED).settings.wait is False
    assert encode(RED).params["wait"] == 0
    assert encode({**RED, "wait": True}).params["wait"] == 1
    for algorithm, extra in (("CBT_RED_ALL", {"tagged_th_pkts": 3, "untagged_th_pkts": 3}),
                             ("CBT_RED_TCP_ONLY", {"tagged_th_pkts": 3, "untagged_th_pkts": 3}),
                             ("DCBT", {}), ("DCBT_CHIPS", {})):
        assert encode({**RED, "algorithm": algorithm, **extra, "wait": True}).params["wait"] == 1


def test_wait_float_formula_hand_computed() -> None:
    # ns-2 modify_p with wait, p_b = 1/4: count * p_b < 1 -> 0 (count 0..3);
    # count 4: 0.25 / (2 - 1) = 1/4; 5: 0.25 / 0.75 = 1/3; 6: 0.25 / 0.5 = 1/2; 7: 1.
    got = [red.spread_drop_probability(0.25, count, wait=True) for count in range(9)]
    assert got == pytest.approx([0, 0, 0, 0, 1 / 4, 1 / 3, 1 / 2, 1, 1])
    # without wait: 1/4, 1/3, 1/2, 1
    assert [red.spread_drop_probability(0.25, c) for c in range(4)] == \
        pytest.approx([1 / 4, 1 / 3, 1 / 2, 1])


def test_wait_hand_traced_in_the_model() -> None:
    # p_b = 1/4 (p_b_q16 16384). R = 0: without wait count 1 drops (16384 > 0); with wait
    # counts 1..4 keep (4 * 16384 = 65536 > 65536 + 0 is false), count 5 drops (81920).
    # R = 65535: without wait count 4 drops (65536 > 65535); with wait count 8 (131072 > 131071).
    def drop_count(r: int, wait: int) -> int:
        params, state = {**CONSTANT_P_B, "wait": wait}, FM.RedState()
        for count in range(1, 20):
            reason, _, state = FM.red_decide(16384, params, state, lambda: r)
            if reason is not None:
                assert (reason, state.count) == ("RED_EARLY", 0)
                return count
        raise AssertionError("no drop")

    assert [drop_count(0, 0), drop_count(0, 1), drop_count(65535, 0), drop_count(65535, 1)] == \
        [1, 5, 4, 8]


def model_gap_distribution(p_b_q16: int, wait: int) -> dict[int, float]:
    """P(gap = n) at a constant p_b from the reference model: every R in 0..2^16-1
    (random() is uniform there), each run from a restart to its first drop."""
    params, gaps = {**CONSTANT_P_B, "wait": wait}, Counter()
    for r in range(F.PROB_ONE):
        state, n = FM.RedState(), 0
        while True:
            n += 1
            reason, _, state = FM.red_decide(p_b_q16, params, state, lambda: r)
            if reason is not None:
                break
        gaps[n] += 1
    return {n: k / F.PROB_ONE for n, k in gaps.items()}


def float_gap_distribution(p_b: float, wait: bool) -> dict[int, float]:
    """P(gap = n) from p_a (algorithms.red), n - 1 packets kept since the last drop."""
    dist, survive, count = {}, 1.0, 0
    while survive > 1e-12:
        p_a = red.spread_drop_probability(p_b, count, wait=wait)
        if p_a > 0:
            dist[count + 1] = survive * p_a
        survive *= 1 - p_a
        count += 1
    return dist


@pytest.mark.parametrize("inverse_p_b", [2, 4, 8])
@pytest.mark.parametrize("wait", [False, True])
def test_gap_between_drops_is_uniform_exactly(inverse_p_b: int, wait: bool) -> None:
    # p_b = 1/k: without wait the gap is uniform on 1..k, with wait on k+1..2k (red.p4),
    # each 1/k; the float formula (F&J's p_a; ns-2's modify_p with wait) gives the same.
    p_b = 1 / inverse_p_b
    first = inverse_p_b + 1 if wait else 1
    uniform = {n: p_b for n in range(first, first + inverse_p_b)}
    assert model_gap_distribution(F.PROB_ONE // inverse_p_b, int(wait)) == uniform
    assert float_gap_distribution(p_b, wait) == pytest.approx(uniform, abs=1e-12)


def test_wait_applies_in_the_gentle_ramp() -> None:
    # gentle, avg = max_th = 15: p_b = max_p = 0.25 (16384). R = 0: without wait count 1
    # drops; with wait counts 1..4 keep and count 5 drops, as in the linear zone.
    params = encode({**RED, "max_p": 0.25, "gentle": True}).params
    assert params["max_p_q16"] == 16384
    for wait, first_drop in ((0, 1), (1, 5)):
        state = FM.RedState()
        reasons = []
        for _ in range(first_drop):
            reason, _, state = FM.red_decide(15 << 16, {**params, "wait": wait}, state, lambda: 0)
            reasons.append(reason)
        assert reasons == [None] * (first_drop - 1) + ["RED_EARLY"], wait
