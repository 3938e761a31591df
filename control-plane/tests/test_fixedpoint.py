"""fixedpoint: conversions and the bit-exact reference model of the P4 AQM."""

from __future__ import annotations

import re

import pytest

from mmaqm import fixedpoint as F
from mmaqm import p4constants as C
from mmaqm.algorithms import red

from conftest import P4_INCLUDE, RandSequence

TCP, TAGGED, UNTAGGED = C.CLASS_TCP, C.CLASS_TAGGED, C.CLASS_UNTAGGED
PKT = 1 << 16  # one packet, scaled


# ------------------------------------------------------------ conversions
def test_to_and_from_scaled() -> None:
    assert F.to_scaled(15) == 983040            # 15 * 65536
    assert F.to_scaled(0.5) == 32768            # 0.5 * 65536
    assert F.to_scaled(1 / 3) == 21845          # 21845.33 -> 21845
    assert F.to_scaled(2 / 3) == 43691          # 43690.67 -> 43691 (rounds, not truncates)
    assert F.to_scaled(65535) == 65535 * 65536  # 4294901760 < 2^32
    assert F.from_scaled(32768) == 0.5
    assert F.from_scaled(F.to_scaled(15)) == 15.0


@pytest.mark.parametrize("bad", [-1, 65536, float("nan"), float("inf")])
def test_to_scaled_rejects(bad: float) -> None:
    with pytest.raises(ValueError):             # 65536 * 2^16 = 2^32 does not fit bit<32>
        F.to_scaled(bad)


def test_prob_to_q16() -> None:
    assert F.prob_to_q16(0.1) == 6554           # 6553.6 -> 6554
    assert F.prob_to_q16(1) == 65536
    assert F.prob_to_q16(0) == 0
    with pytest.raises(ValueError):
        F.prob_to_q16(1.5)


def test_red_slope_q24() -> None:
    # 0.1 / (30 - 15) * 2^24 = 16777216 / 150 = 111848.107 -> 111848
    assert F.red_slope_q24(15, 30, 0.1) == 111848
    # 1.0 / (15 - 5) * 2^24 = 1677721.6 -> 1677722
    assert F.red_slope_q24(5, 15, 1.0) == 1677722
    with pytest.raises(ValueError):
        F.red_slope_q24(15, 15, 0.1)
    with pytest.raises(ValueError, match="does not fit"):   # 1/2^-10 * 2^24 = 2^34
        F.red_slope_q24(1, 1 + 2**-10, 1.0)


@pytest.mark.parametrize("weight, shift", [
    (1, 0), (1.0, 0), (0.5, 1), (2**-9, 9), (0.001953125, 9), (2**-31, 31),
    (2**-9 * (1 + 1e-13), 9),                    # inside the 1e-12 relative tolerance
])
def test_ewma_shift_from_weight(weight: float, shift: int) -> None:
    assert F.ewma_shift_from_weight(weight) == shift


def test_ewma_shift_error_names_the_two_nearest_weights() -> None:
    with pytest.raises(ValueError) as info:
        F.ewma_shift_from_weight(0.002)
    assert str(info.value) == (
        "0.002 is not a power of two; nearest are 2^-9 = 0.001953125 and 2^-8 = 0.00390625")
    with pytest.raises(ValueError, match=r"nearest are 2\^-1 = 0.5 and 2\^0 = 1.0"):
        F.ewma_shift_from_weight(0.75)


@pytest.mark.parametrize("bad", [
    2**-9 * (1 + 1e-9),      # outside the tolerance
    2**-32, 2.0, 3, 0, -0.5, float("nan"), True, "0.5",
])
def test_ewma_shift_rejects(bad: object) -> None:
    with pytest.raises(ValueError):
        F.ewma_shift_from_weight(bad)  # type: ignore[arg-type]


# ------------------------------------------------------------ P4 arithmetic
def test_p4_to_scaled_wraps_like_bit32() -> None:
    assert F.p4_to_scaled(1) == 65536
    assert F.p4_to_scaled(65535) == 0xFFFF0000
    assert F.p4_to_scaled(65536) == 0            # 2^32 wraps to 0
    assert F.p4_to_scaled(65537) == 65536
    assert F.p4_to_scaled(0xFFFFFFFF) == 0xFFFF0000


def test_ewma_hand_computed() -> None:
    # 0 + (10*65536 - 0) >> 9 = 655360 / 512 = 1280
    assert F.ewma(0, 10 * PKT, 9) == 1280
    # 1280 - (1280 - 0) >> 9 = 1280 - 2 (2.5 truncated) = 1278
    assert F.ewma(1280, 0, 9) == 1278
    # truncation is toward avg in both directions (not floor):
    assert F.ewma(100, 99, 1) == 100             # 100 - (1 >> 1) = 100, floor would give 99
    assert F.ewma(99, 100, 1) == 99              # 99 + (1 >> 1) = 99
    assert F.ewma(5, 1000, 0) == 1000            # w = 1: avg = sample
    assert F.ewma(5, 1000, 32) == 5              # a bit<32> shifted by 32 is 0
    assert F.ewma(0xFFFFFFFF, 0, 1) == 0x80000000   # 0xFFFFFFFF - 0x7FFFFFFF
    assert F.ewma(0, 0xFFFFFFFF, 0) == 0xFFFFFFFF


def test_ewma_rejects_values_outside_bit32() -> None:
    with pytest.raises(ValueError):
        F.ewma(-1, 0, 1)
    with pytest.raises(ValueError):
        F.ewma(0, 1 << 32, 1)


def test_red_p_b_q16_hand_computed() -> None:
    # min 15, max 30, max_p 0.1: slope 111848; avg 20 packets -> excess 5 * 65536 = 327680
    # 327680 * 111848 = 36650844160; >> 24 = 2184.5 -> 2184   (paper: 0.1 * 5/15 = 1/30 = 2184.5/65536)
    assert F.red_p_b_q16(20 * PKT, 15 * PKT, 111848) == 2184
    assert F.red_p_b_q16(15 * PKT, 15 * PKT, 111848) == 0
    # avg < min_th: (bit<32>)(0 - 1) = 2^32 - 1; * 2^24 >> 24 = 2^32 - 1
    assert F.red_p_b_q16(0, 1, 1 << 24) == 0xFFFFFFFF


def test_red_p_b_q16_agrees_with_the_float_formula() -> None:
    slope = F.red_slope_q24(15, 30, 0.1)
    for avg_pkts in (15, 16.5, 20, 25, 29.9):
        fixed = F.red_p_b_q16(F.to_scaled(avg_pkts), F.to_scaled(15), slope) / 65536
        assert fixed == pytest.approx(red.early_drop_probability(avg_pkts, 15, 30, 0.1), abs=2e-5)


def test_dcbt_tagged_th_scaled() -> None:
    assert F.dcbt_tagged_th_scaled(20 * PKT, 32768) == 10 * PKT      # 20 * 1/2
    assert F.dcbt_tagged_th_scaled(20 * PKT, 21845) == 436900        # 20 * 21845 exactly
    assert F.dcbt_tagged_th_scaled(3, 32768) == 1                    # 98304 >> 16 = 1 (1.5 truncated)
    assert F.dcbt_tagged_th_scaled(0xFFFFFFFF, 65536) == 0xFFFFFFFF  # share 1: threshold = red_avg


# ------------------------------------------------------------ red_decide
RED_15_30 = {"min_th_scaled": 15 * PKT, "max_th_scaled": 30 * PKT, "red_slope_q24": 111848}


def test_red_decide_below_min_restarts_and_draws() -> None:
    rand = RandSequence([1234])
    reason, state = F.red_decide(14 * PKT, RED_15_30, F.RedState(7, 99), rand)
    assert (reason, state, rand.calls) == (None, F.RedState(0, 1234), 1)


def test_red_decide_forced_at_max_th() -> None:
    rand = RandSequence([42])
    reason, state = F.red_decide(30 * PKT, RED_15_30, F.RedState(3, 99), rand)
    assert (reason, state, rand.calls) == ("RED_FORCED", F.RedState(0, 42), 1)
    # one below max_th is the early zone, not forced
    reason, _ = F.red_decide(30 * PKT - 1, RED_15_30, F.RedState(0, 65535), rand)
    assert reason is None


def test_red_decide_early_drop_on_the_third_packet() -> None:
    # avg 20 packets -> p_b_q16 = 2184, R = 5000:
    #   count 1: 2184 <= 5000 keep; count 2: 4368 <= 5000 keep; count 3: 6552 > 5000 drop
    rand = RandSequence([777])
    state = F.RedState(0, 5000)
    reasons = []
    for _ in range(3):
        reason, state = F.red_decide(20 * PKT, RED_15_30, state, rand)
        reasons.append(reason)
    assert reasons == [None, None, "RED_EARLY"]
    assert state == F.RedState(0, 777)
    assert rand.calls == 1                      # R is drawn only at the drop


def test_red_decide_early_drop_is_strict() -> None:
    # red.p4: drop when count * p_b_q16 > R. R = 4368 = 2 * 2184: count 2 keeps, count 3 drops.
    rand = RandSequence([0])
    reason, state = F.red_decide(20 * PKT, RED_15_30, F.RedState(1, 4368), rand)
    assert (reason, state) == (None, F.RedState(2, 4368))
    reason, state = F.red_decide(20 * PKT, RED_15_30, state, rand)
    assert (reason, state) == ("RED_EARLY", F.RedState(0, 0))


def test_red_decide_at_min_th_is_the_early_zone_and_never_drops() -> None:
    # avg == min_th: early zone (count moves, no redraw), p_b = 0 and 0 > R is false even for R = 0
    rand = RandSequence([5])
    assert F.red_decide(15 * PKT, RED_15_30, F.RedState(0, 1), rand) == (None, F.RedState(1, 1))
    assert F.red_decide(15 * PKT, RED_15_30, F.RedState(4, 0), rand) == (None, F.RedState(5, 0))
    assert rand.calls == 0


def test_red_decide_checks_rand_source_range() -> None:
    with pytest.raises(ValueError):
        F.red_decide(0, RED_15_30, F.RedState(), lambda: 65536)


# ------------------------------------------------------------ action signature
def test_policy_param_bits_match_set_port_policy_in_aqm_p4() -> None:
    text = (P4_INCLUDE / "aqm.p4").read_text()
    signature = re.search(r"action\s+set_port_policy\s*\(([^)]*)\)", text)
    assert signature is not None
    params = re.findall(r"bit<(\d+)>\s+(\w+)", signature.group(1))
    assert [(name, int(bits)) for bits, name in params] == list(F.POLICY_PARAM_BITS.items())


def test_check_policy_params() -> None:
    params = dict.fromkeys(F.POLICY_PARAM_BITS, 0)
    assert F.check_policy_params(params) == params
    with pytest.raises(ValueError, match="policy_epoch"):
        F.check_policy_params({**params, "policy_epoch": 2**32})
    with pytest.raises(ValueError, match="unknown"):
        F.check_policy_params({**params, "bogus": 1})
    with pytest.raises(ValueError, match="missing"):
        F.check_policy_params({k: v for k, v in params.items() if k != "algorithm"})


# ------------------------------------------------------------ PortModel
def policy(algorithm: str, **overrides: int) -> dict[str, int]:
    params = dict.fromkeys(F.POLICY_PARAM_BITS, 0)
    params.update(algorithm=C.ALGORITHMS[algorithm], queue_limit_pkts=64, policy_epoch=1)
    params.update(overrides)
    return params


def occ(queue: int = 0, tcp: int = 0, tagged: int = 0, untagged: int = 0) -> F.Occupancy:
    return F.Occupancy(queue_pkts=queue, tcp_pkts=tcp, tagged_pkts=tagged, untagged_pkts=untagged)


def test_drop_tail_at_queue_limit() -> None:
    rand = RandSequence([0])
    model = F.PortModel(policy("DROP_TAIL", queue_limit_pkts=3), rand)
    decisions = [model.arrive(TCP, occ(queue=q, tcp=q)) for q in (0, 1, 2, 3, 4)]
    # admitted while occupancy < 3; drop at occupancy >= queue_limit_pkts
    assert decisions == ["ADMIT", "ADMIT", "ADMIT", "QUEUE_LIMIT", "QUEUE_LIMIT"]
    assert model.arrivals[TCP] == 5 and model.admits[TCP] == 3
    assert model.drops[(TCP, "QUEUE_LIMIT")] == 2
    assert model.red_avg_scaled == 0            # drop tail keeps no average
    assert rand.calls == 1                      # only RedResetState on the new epoch 1


def test_red_forced_at_max_th_with_shift_0() -> None:
    # min 2, max 4, max_p 0.1, w = 2^0: avg = current occupancy exactly.
    # slope = 0.1 / 2 * 2^24 = 838860.8 -> 838861
    params = policy("RED", min_th_scaled=2 * PKT, max_th_scaled=4 * PKT,
                    red_slope_q24=838861, ewma_shift=0, queue_limit_pkts=10)
    rand = RandSequence([60000])
    model = F.PortModel(params, rand)
    # q=0: avg 0 < 2 -> admit. q=3: avg 3, p_b = 65536 * 838861 >> 24 = 3276, 1 * 3276 < 60000 -> admit.
    # q=4: avg 4 >= max_th -> forced. q=12 (above the queue limit): still RED_FORCED (AQM reason wins).
    decisions = [model.arrive(TCP, occ(queue=q)) for q in (0, 3, 4, 12)]
    assert decisions == ["ADMIT", "ADMIT", "RED_FORCED", "RED_FORCED"]
    assert model.red_avg_scaled == 12 * PKT
    assert model.drops[(TCP, "RED_FORCED")] == 2


def test_red_queue_limit_when_red_admits() -> None:
    # w = 2^-9: one sample of 5 packets moves avg to 5*65536 >> 9 = 640 (< min_th) -> RED admits,
    # but occupancy 5 >= queue_limit_pkts 5 -> QUEUE_LIMIT
    params = policy("RED", min_th_scaled=2 * PKT, max_th_scaled=4 * PKT,
                    red_slope_q24=838861, ewma_shift=9, queue_limit_pkts=5)
    model = F.PortModel(params, RandSequence([60000]))
    assert model.arrive(TCP, occ(queue=5)) == "QUEUE_LIMIT"
    assert model.red_avg_scaled == 640


def cbt_params(algorithm: str) -> dict[str, int]:
    # min 10, max 20 (RED idle below 10), tagged_th 2, untagged_th 1, w = 1
    return policy(algorithm, min_th_scaled=10 * PKT, max_th_scaled=20 * PKT,
                  red_slope_q24=F.red_slope_q24(10, 20, 0.1), ewma_shift=0,
                  tagged_th_scaled=2 * PKT, untagged_th_scaled=1 * PKT)


def test_cbt_tagged_threshold() -> None:
    model = F.PortModel(cbt_params("CBT_RED_ALL"), RandSequence([60000]))
    # tagged avg = 2 packets: not > 2 -> passes, RED samples the whole queue (5)
    assert model.arrive(TAGGED, occ(queue=5, tagged=2)) == "ADMIT"
    assert model.red_avg_scaled == 5 * PKT
    # tagged avg = 3 packets > 2 -> class threshold drop; RED average untouched (never reached)
    assert model.arrive(TAGGED, occ(queue=7, tagged=3)) == "CLASS_THRESHOLD"
    assert model.class_avg_scaled[TAGGED] == 3 * PKT
    assert model.red_avg_scaled == 5 * PKT
    # untagged threshold is separate: untagged avg 1 is not > 1
    assert model.arrive(UNTAGGED, occ(queue=7, tagged=3, untagged=1)) == "ADMIT"
    # class averages move only on their own class's arrivals (cbt §3, "unsynchronized")
    assert model.class_avg_scaled[TAGGED] == 3 * PKT
    assert model.arrive(UNTAGGED, occ(queue=8, untagged=2)) == "CLASS_THRESHOLD"
    # TCP is never threshold-tested, even with big UDP class occupancy
    assert model.arrive(TCP, occ(queue=9, tagged=9, untagged=9)) == "ADMIT"
    assert model.drops[(TAGGED, "CLASS_THRESHOLD")] == 1
    assert model.drops[(UNTAGGED, "CLASS_THRESHOLD")] == 1


def test_cbt_red_for_all_red_tests_udp_survivors() -> None:
    model = F.PortModel(cbt_params("CBT_RED_ALL"), RandSequence([60000]))
    # tagged avg 1 <= 2 passes the class test; RED avg = queue 25 >= max_th 20 -> forced
    assert model.arrive(TAGGED, occ(queue=25, tagged=1)) == "RED_FORCED"


def test_cbt_red_for_tcp_only() -> None:
    model = F.PortModel(cbt_params("CBT_RED_TCP_ONLY"), RandSequence([60000]))
    # TCP: RED's average counts TCP packets only (cbt §3): sample 3, not 25
    assert model.arrive(TCP, occ(queue=25, tcp=3, tagged=22)) == "ADMIT"
    assert model.red_avg_scaled == 3 * PKT
    assert model.arrive(TCP, occ(queue=25, tcp=20)) == "RED_FORCED"
    # UDP survivors skip RED (tcp 25 >= max_th 20 would be forced) and leave RED's average alone
    assert model.arrive(TAGGED, occ(queue=26, tcp=25, tagged=1)) == "ADMIT"
    assert model.red_avg_scaled == 20 * PKT


def dcbt_params(**overrides: int) -> dict[str, int]:
    # min 2, max 10, max_p 0.1, w = 1; shares: tagged 1/4, untagged 1/2
    # untagged_th = 0.5 * (2 + 0.1 * (10 - 2)) = 1.4 packets -> round(91750.4) = 91750
    params = policy("DCBT", min_th_scaled=2 * PKT, max_th_scaled=10 * PKT,
                    red_slope_q24=F.red_slope_q24(2, 10, 0.1), ewma_shift=0,
                    untagged_th_scaled=91750, dcbt_tagged_share_q16=16384)
    params.update(overrides)
    return params


def test_dcbt_threshold_inactive_at_or_below_min_th_and_active_above() -> None:
    model = F.PortModel(dcbt_params(), RandSequence([60000]))
    # red_avg = 2 packets = min_th: not > min_th -> no class test, although untagged avg 2 > 1.4;
    # RED: early zone with p_b = 0, 1 * 0 < R = 60000 -> admit
    assert model.arrive(UNTAGGED, occ(queue=2, untagged=2)) == "ADMIT"
    # red_avg = 3 > 2 -> active: untagged avg 2 packets = 131072 > 91750 -> drop
    assert model.arrive(UNTAGGED, occ(queue=3, untagged=2)) == "CLASS_THRESHOLD"
    # untagged avg 1 packet = 65536 <= 91750 -> passes to RED
    assert model.arrive(UNTAGGED, occ(queue=3, untagged=1)) == "ADMIT"


def test_dcbt_tagged_threshold_moves_with_red_avg() -> None:
    model = F.PortModel(dcbt_params(), RandSequence([60000]))
    # red_avg 4 packets -> tagged_th = 4 * 1/4 = 1 packet; tagged avg 1 is not > 1
    assert model.arrive(TAGGED, occ(queue=4, tagged=1)) == "ADMIT"
    # tagged avg 2 > 1 -> drop
    assert model.arrive(TAGGED, occ(queue=4, tagged=2)) == "CLASS_THRESHOLD"
    # red_avg 8 -> tagged_th 2 packets: the same tagged avg 2 now passes
    assert model.arrive(TAGGED, occ(queue=8, tagged=2)) == "ADMIT"
    # TCP is never class-tested
    assert model.arrive(TCP, occ(queue=9, tcp=1, tagged=8)) == "ADMIT"


def test_dcbt_updates_all_averages_on_every_arrival() -> None:
    params = dcbt_params(ewma_shift=1)
    model = F.PortModel(params, RandSequence([60000]))
    model.arrive(TCP, occ(queue=4, tcp=2, tagged=2, untagged=0))
    # w = 1/2 from 0: red 4/2 = 2, tagged 2/2 = 1, untagged 0 (dcbt §3.1 synchronised updates)
    assert model.red_avg_scaled == 2 * PKT
    assert model.class_avg_scaled[TAGGED] == 1 * PKT
    assert model.class_avg_scaled[UNTAGGED] == 0
    assert model.class_avg_scaled[TCP] == 0           # no TCP class average in D-CBT


def test_epoch_reset() -> None:
    rand = RandSequence([100, 200, 300])
    params = policy("RED", min_th_scaled=10 * PKT, max_th_scaled=20 * PKT,
                    red_slope_q24=F.red_slope_q24(10, 20, 0.1), ewma_shift=1, policy_epoch=1)
    model = F.PortModel(params, rand)
    model.arrive(TCP, occ(queue=8))          # reset (draw 100), avg = 8/2 = 4 pkts, < min: draw 200
    assert model.red_avg_scaled == 4 * PKT
    assert model.avg_policy_epoch == 1 and rand.calls == 2
    # same epoch (e.g. a shares-only update): averages survive
    model.set_policy({**params, "queue_limit_pkts": 32})
    model.arrive(TCP, occ(queue=8))          # avg = 4 + (8-4)/2 = 6 pkts; draw 300
    assert model.red_avg_scaled == 6 * PKT and rand.calls == 3
    # new epoch: averages restart from 0 before this arrival's update, R is redrawn
    model.class_avg_scaled[TAGGED] = 5 * PKT
    model.red_state = F.RedState(7, 1)
    model.set_policy({**params, "policy_epoch": 2})
    model.arrive(TCP, occ(queue=8))          # reset: draw; avg = 0 + 8/2 = 4 pkts; < min: draw
    assert model.red_avg_scaled == 4 * PKT
    assert model.class_avg_scaled[TAGGED] == 0
    assert model.avg_policy_epoch == 2
    assert rand.calls == 5
    assert model.red_state == F.RedState(0, 300)


@pytest.mark.parametrize("epoch, decision, draws", [
    (0, "RED_EARLY", 1),    # no reset: R stays at its power-up 0, 655 > 0 drops; the drop draws
    (1, "ADMIT", 1),        # reset draws R = 60000; 655 <= 60000 admits
])
def test_epoch_0_does_not_reset_power_up_registers(epoch: int, decision: str, draws: int) -> None:
    # avg_policy_epoch powers up at 0, so a first policy with epoch 0 never runs
    # RedResetState: R keeps its power-up value 0.
    # min 0, max 10, max_p 0.1, w = 1: slope = 0.01 * 2^24 = 167772.16 -> 167772;
    # avg 1 packet: p_b = 65536 * 167772 >> 24 = 655.36 -> 655
    params = policy("RED", min_th_scaled=0, max_th_scaled=10 * PKT,
                    red_slope_q24=F.red_slope_q24(0, 10, 0.1), ewma_shift=0, policy_epoch=epoch)
    rand = RandSequence([60000])
    model = F.PortModel(params, rand)
    assert model.arrive(TCP, occ(queue=1)) == decision
    assert rand.calls == draws


def test_occupancy_from_dict() -> None:
    model = F.PortModel(policy("DROP_TAIL", queue_limit_pkts=2), RandSequence([0]))
    assert model.arrive(TCP, {"queue": 2, "tcp": 2}) == "QUEUE_LIMIT"
    assert model.arrive(TCP, {"queue_pkts": 1}) == "ADMIT"
    with pytest.raises(ValueError):
        model.arrive(TCP, {"queue_depth": 1})
    with pytest.raises(ValueError):
        model.arrive(TCP, {"queue": -1})
    with pytest.raises(ValueError):
        model.arrive(3, {"queue": 0})            # no class 3
