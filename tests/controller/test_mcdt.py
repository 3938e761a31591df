"""MCDT (mcdt §II.2, eqs. 5-10, Fig. 2's modes A, B, C): the controller's period
update, its encoding and the reference model of the per-packet test; values worked
out by hand."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from mmaqm.algorithms import mcdt
from mmaqm.algorithms.mcdt import MMU, TCP, UDP
from mmaqm_oracle import fixedpoint_model as FM
from mmaqm_oracle import mcdt_reference

ONE = 65536   # 1 packet, scaled


# ------------------------------------------------------------ the equations
def test_alphas_eqs_6_to_8() -> None:
    # eq. 6: 60 + 0.2 * 20 + 0.4 * 20 = 72; eq. 7: 0.8 * 20 = 16; eq. 8: 0.6 * 20 = 12
    assert mcdt.alpha_tcp(60, 20, 20) == pytest.approx(72)
    assert mcdt.alpha_mmu(20) == pytest.approx(16)
    assert mcdt.alpha_udp(20) == pytest.approx(12)
    # TCP gets 0.2 of the MMU count and 0.4 of the UDP count, not the other way round
    assert mcdt.alpha_tcp(0, 10, 0) == pytest.approx(2)
    assert mcdt.alpha_tcp(0, 0, 10) == pytest.approx(4)
    # the weights conserve the arrivals: sum alpha = 60 + 20 + 20
    assert mcdt.alpha_tcp(60, 20, 20) + mcdt.alpha_mmu(20) + mcdt.alpha_udp(20) \
        == pytest.approx(100)


def test_class_threshold_eq_5() -> None:
    # 72 * (100 - 40) / (1 + 100) = 4320 / 101 = 42.772
    assert mcdt.class_threshold(72, 100, 100, 40) == pytest.approx(4320 / 101)
    assert mcdt.class_threshold(Fraction(72), Fraction(100), 100, 40) == Fraction(4320, 101)
    assert mcdt.class_threshold(72, 100, 100, 100) == 0        # full buffer: no free space


def test_residue_eq_9() -> None:
    # (100 - 6000/101) / 3 = 4100 / 303 = 13.53
    t5 = [Fraction(4320, 101), Fraction(960, 101), Fraction(720, 101)]
    assert mcdt.residue(100, t5, 3) == Fraction(4100, 303)
    assert mcdt.residue(100, [10.0, 20.0, 30.0], 2) == pytest.approx(20.0)   # divided by S
    with pytest.raises(ValueError, match="active_classes"):
        mcdt.residue(100, t5, 0)


def test_smoothed_threshold_eq_10() -> None:
    # 0.7 * (10 + 2) + 0.3 * 20 = 8.4 + 6 = 14.4
    assert mcdt.smoothed_threshold(10, 2, 20) == pytest.approx(14.4)
    # the 0.3 weight is on the last threshold, the 0.7 on the new one
    assert mcdt.smoothed_threshold(0, 0, 10) == pytest.approx(3.0)
    assert mcdt.smoothed_threshold(10, 0, 0) == pytest.approx(7.0)


# ------------------------------------------------------------ the period update
def test_period_update_all_classes_active_hand_computed() -> None:
    # Arrivals TCP 60, MMU 20, UDP 20; B = 100, Q = 40, last = B (first update).
    # alpha = 72, 16, 12 (sum 100); T5 = alpha * 60 / 101 = 4320/101, 960/101, 720/101;
    # R = (100 - 6000/101) / 3 = 4100/303; targets 17060/303, 6980/303, 6260/303 (sum 100);
    # eq. 10: 0.7 * target + 30 = 21032/303 = 69.41, 13976/303 = 46.13, 13472/303 = 44.46.
    # th_scaled = floor(T * 65536): 1378353152/303 = 4549020.3, 915931136/303 = 3022875.04,
    # 882900992/303 = 2913864.7.
    result = mcdt.period_update({TCP: 60, MMU: 20, UDP: 20}, 40)
    assert result.th_scaled == {TCP: 4549020, MMU: 3022875, UDP: 2913864}
    assert result.th_pkts == {TCP: 69, MMU: 46, UDP: 44}
    assert result.active == {TCP, MMU, UDP}
    assert result.alpha == {TCP: 72, MMU: 16, UDP: 12}
    assert result.class_th == {TCP: Fraction(4320, 101), MMU: Fraction(960, 101),
                               UDP: Fraction(720, 101)}
    assert result.residue_pkts == Fraction(4100, 303)


def test_residue_goes_to_the_classes_with_arrivals_only() -> None:
    # Only MMU arrives (10 packets); B = 100, Q = 0. alpha: TCP 0.2 * 10 = 2, MMU 8, UDP 0.
    # T5 = 200/11 (TCP), 800/11 (MMU), 0. S = 1 (TCP had no arrival, though alpha_tcp > 0):
    # R = (100 - 1000/11) / 1 = 100/11, to MMU only. Targets 200/11, 900/11, 0 (sum 100).
    # eq. 10 with last = 100: TCP 140/11 + 30 = 42.73, MMU 630/11 + 30 = 87.27, UDP 30.
    # (With "active = alpha > 0", S = 2 and TCP would get 0.7 * (200 + 50)/11 + 30 = 45.9.)
    result = mcdt.period_update({MMU: 10}, 0)
    assert result.active == {MMU}
    assert result.residue_pkts == Fraction(100, 11)
    assert result.th_pkts == {TCP: 42, MMU: 87, UDP: 30}
    assert result.th_scaled == {TCP: 2800174, MMU: 5719505, UDP: 30 * ONE}   # 470/11, 960/11


def test_smoothing_keeps_0_3_of_the_last_threshold() -> None:
    # Only TCP arrives: alpha_tcp = 10 = sum; T5 = 10 * 100 / 11 = 1000/11, R = 100/11:
    # TCP's target is the whole buffer, 100; the others' targets are 0.
    # last = 0 everywhere: T = 0.7 * 100 = 70, 0, 0.
    zero = {TCP: 0, MMU: 0, UDP: 0}
    assert mcdt.period_update({TCP: 10}, 0, zero).th_pkts == {TCP: 70, MMU: 0, UDP: 0}
    # last = B everywhere: T = 70 + 30 = 100 for TCP, 0 + 30 = 30 for the idle classes
    assert mcdt.period_update({TCP: 10}, 0).th_scaled == {TCP: 100 * ONE, MMU: 30 * ONE,
                                                          UDP: 30 * ONE}


def test_the_last_thresholds_feed_the_next_period() -> None:
    # Two equal periods: the second starts from the first's th_scaled, not from B.
    first = mcdt.period_update({TCP: 10}, 0, {TCP: 0, MMU: 0, UDP: 0})    # 70, 0, 0
    second = mcdt.period_update({TCP: 10}, 0, first.th_scaled)
    # TCP: 0.7 * 100 + 0.3 * 70 = 91; MMU, UDP: 0.7 * 0 + 0.3 * 0 = 0
    assert second.th_scaled == {TCP: 91 * ONE, MMU: 0, UDP: 0}


def test_full_buffer_splits_it_by_the_residue() -> None:
    # Q = B = 100: every T5 = 0, R = 100 / 3; with last = 100: 0.7 * 33.33 + 30 = 53.33
    result = mcdt.period_update({TCP: 5, MMU: 5, UDP: 5}, 100)
    assert result.class_th == {TCP: 0, MMU: 0, UDP: 0}
    assert result.residue_pkts == Fraction(100, 3)
    assert result.th_pkts == {TCP: 53, MMU: 53, UDP: 53}


def test_no_arrivals_keeps_the_thresholds() -> None:
    last = {TCP: 5 * ONE + 7, MMU: 3 * ONE, UDP: 0}
    result = mcdt.period_update({}, 20, last)
    assert result.th_scaled == last and result.th_pkts == {TCP: 5, MMU: 3, UDP: 0}
    assert result.active == frozenset() and result.residue_pkts is None


def test_first_update_starts_from_the_buffer_size() -> None:
    assert mcdt.initial_th_scaled(100) == {TCP: 100 * ONE, MMU: 100 * ONE, UDP: 100 * ONE}
    arrivals = {TCP: 3, MMU: 7, UDP: 1}
    assert mcdt.period_update(arrivals, 17) == \
        mcdt.period_update(arrivals, 17, mcdt.initial_th_scaled(100))


def test_unsmoothed_targets_sum_to_the_buffer() -> None:
    # eq. 9 shares exactly what eq. 5 leaves: sum_c (T5_c + R [active]) = B.
    weights = mcdt.Weights(new=1, last=0)
    rng = random.Random(5)
    for _ in range(200):
        arrivals = {c: rng.choice([0, 0, rng.randrange(1, 500)]) for c in (TCP, MMU, UDP)}
        if not any(arrivals.values()):
            continue
        buffer_pkts = rng.randrange(1, 300)
        result = mcdt.period_update(arrivals, rng.randrange(buffer_pkts + 1),
                                    buffer_pkts=buffer_pkts, weights=weights)
        total = sum(result.class_th.values()) + len(result.active) * result.residue_pkts
        assert total == buffer_pkts
        assert sum(result.th_scaled.values()) > (buffer_pkts << 16) - 3   # three floors


def test_exact_update_matches_the_float_reference() -> None:
    # 300 chained periods: each starts from the previous th_scaled; the exact update
    # and the float equations agree to within the final rounding down (1 / 65536 packet).
    rng = random.Random(7)
    last_scaled = None
    for _ in range(300):
        arrivals = {c: rng.choice([0, rng.randrange(1, 1000)]) for c in (TCP, MMU, UDP)}
        queue = rng.randrange(101)
        result = mcdt.period_update(arrivals, queue, last_scaled)
        ref = mcdt_reference.reference_period_update(
            arrivals, queue, None if last_scaled is None
            else {c: v / ONE for c, v in last_scaled.items()})
        for c in (TCP, MMU, UDP):
            assert abs(result.th_scaled[c] - ref[c] * ONE) <= 1.0001
        last_scaled = result.th_scaled


# ------------------------------------------------------------ validation
@pytest.mark.parametrize("kwargs, message", [
    (dict(arrivals={TCP: -1}, queue_pkts=0), r"arrivals\[TCP\]"),
    (dict(arrivals={TCP: 1.5}, queue_pkts=0), r"arrivals\[TCP\]"),
    (dict(arrivals={MMU: True}, queue_pkts=0), r"arrivals\[TAGGED\]"),
    (dict(arrivals={7: 1}, queue_pkts=0), "unknown class id 7"),
    (dict(arrivals=[1, 2, 3], queue_pkts=0), "arrivals must be a mapping"),
    (dict(arrivals={}, queue_pkts=101), "queue_pkts"),
    (dict(arrivals={}, queue_pkts=-1), "queue_pkts"),
    (dict(arrivals={}, queue_pkts=0, buffer_pkts=0), "buffer_pkts"),
    (dict(arrivals={}, queue_pkts=0, buffer_pkts=65536), "buffer_pkts"),
    (dict(arrivals={}, queue_pkts=0, last_th_scaled={TCP: 0, MMU: 0}), "last_th_scaled"),
    (dict(arrivals={}, queue_pkts=0, last_th_scaled={TCP: 0, MMU: 0, UDP: 100 * ONE + 1}),
     r"last_th_scaled\[UNTAGGED\]"),
    (dict(arrivals={TCP: 1}, queue_pkts=0, weights=mcdt.Weights(last=0.4)),
     "weights.new \\+ weights.last must be 1"),
    (dict(arrivals={TCP: 1}, queue_pkts=0, weights=mcdt.Weights(mmu=1.2)), "weights.mmu"),
    (dict(arrivals={TCP: 1}, queue_pkts=0, weights=mcdt.Weights(udp=math.nan)), "weights.udp"),
])
def test_period_update_rejects(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mcdt.period_update(**kwargs)


def test_period_arrivals_from_cumulative_counters() -> None:
    assert mcdt.period_arrivals({TCP: 100, MMU: 5, UDP: 0}, {TCP: 160, MMU: 25, UDP: 20}) \
        == {TCP: 60, MMU: 20, UDP: 20}
    with pytest.raises(ValueError, match=r"current_total\[TAGGED\] \(4\) is below"):
        mcdt.period_arrivals({TCP: 1, MMU: 5, UDP: 0}, {TCP: 1, MMU: 4, UDP: 0})


# ------------------------------------------------------------ encoding
def test_action_params_are_whole_packets() -> None:
    result = mcdt.period_update({TCP: 60, MMU: 20, UDP: 20}, 40)
    assert mcdt.action_params(result.th_pkts) == {
        "tcp_th_pkts": 69, "tagged_th_pkts": 46, "untagged_th_pkts": 44, "mcdt_mode": 0}
    assert mcdt.action_params(result.th_pkts, mode="B")["mcdt_mode"] == 1
    assert mcdt.action_params(result.th_pkts, mode="C")["mcdt_mode"] == 2
    with pytest.raises(ValueError, match="mode must be one of A, B, C, got 'D'"):
        mcdt.action_params(result.th_pkts, mode="D")
    with pytest.raises(ValueError, match=r"th_pkts\[TCP\]"):
        mcdt.action_params({TCP: 101, MMU: 0, UDP: 0})           # above B
    with pytest.raises(ValueError, match="th_pkts must map"):
        mcdt.action_params({TCP: 1})


def test_floor_encoding_is_exact_for_whole_packet_counts() -> None:
    # q > T <=> q > floor(T) for integer q: T = 46.125 is installed as 46.
    th = 46.125
    for q in range(100):
        assert (q > th) == (q > math.floor(th))


# ------------------------------------------------------------ the data plane (mode A)
TH = {TCP: 69, MMU: 46, UDP: 44}


def test_drop_only_when_the_class_queue_exceeds_its_threshold() -> None:
    # "exceeds": 46 tagged packets queued (= threshold) -> admit; 47 -> drop
    assert mcdt_reference.decide(MMU, FM.Occupancy(queue_pkts=50, tagged_pkts=46), TH, 100) \
        == FM.ADMIT
    assert mcdt_reference.decide(MMU, FM.Occupancy(queue_pkts=51, tagged_pkts=47), TH, 100) \
        == FM.CLASS_THRESHOLD


def test_each_class_uses_its_own_count_and_threshold() -> None:
    occ = FM.Occupancy(queue_pkts=90, tcp_pkts=45, tagged_pkts=0, untagged_pkts=45)
    assert mcdt_reference.decide(UDP, occ, TH, 100) == FM.CLASS_THRESHOLD    # 45 > 44
    assert mcdt_reference.decide(TCP, occ, TH, 100) == FM.ADMIT              # 45 <= 69
    assert mcdt_reference.decide(MMU, occ, TH, 100) == FM.ADMIT              # 0 <= 46


def test_physical_queue_limit_still_applies() -> None:
    occ = FM.Occupancy(queue_pkts=100, tcp_pkts=40, tagged_pkts=30, untagged_pkts=30)
    assert mcdt_reference.decide(TCP, occ, TH, 100) == FM.QUEUE_LIMIT        # 40 <= 69 but queue full
    assert mcdt_reference.decide(TCP, {"queue": 99, "tcp": 40}, TH, 100) == FM.ADMIT
    # the class test comes first: the drop is charged to the threshold
    assert mcdt_reference.decide(UDP, occ, {**TH, UDP: 29}, 100) == FM.CLASS_THRESHOLD


def test_mode_b_judges_the_whole_queue() -> None:
    # mode B: the logical queue is the FIFO the packet joins: 47 queued > 46 drops a
    # tagged packet even with no tagged packet queued; 46 queued admits it
    occ = FM.Occupancy(queue_pkts=47, tcp_pkts=47)
    assert mcdt_reference.decide(MMU, occ, TH, 100, "B") == FM.CLASS_THRESHOLD
    assert mcdt_reference.decide(MMU, occ, TH, 100, "A") == FM.ADMIT
    assert mcdt_reference.decide(MMU, FM.Occupancy(queue_pkts=46, tcp_pkts=46), TH, 100,
                                 "B") == FM.ADMIT
    assert mcdt_reference.decide(TCP, occ, TH, 100, "B") == FM.ADMIT          # 47 <= 69
    assert mcdt_reference.decide(TCP, FM.Occupancy(queue_pkts=100, tcp_pkts=100), TH, 100,
                                 "B") == FM.CLASS_THRESHOLD                   # class test first


def test_mode_c_binds_only_when_the_queue_holds_the_thresholds_sum() -> None:
    th = {TCP: 10, MMU: 5, UDP: 5}                                            # sum 20
    over = {"tcp_pkts": 0, "tagged_pkts": 6, "untagged_pkts": 0}              # tagged 6 > 5
    assert mcdt_reference.decide(MMU, FM.Occupancy(queue_pkts=19, **over), th, 100, "C") \
        == FM.ADMIT                                                           # 19 < 20
    assert mcdt_reference.decide(MMU, FM.Occupancy(queue_pkts=20, **over), th, 100, "C") \
        == FM.CLASS_THRESHOLD                                                 # 20 >= 20
    assert mcdt_reference.decide(MMU, FM.Occupancy(queue_pkts=19, **over), th, 100, "A") \
        == FM.CLASS_THRESHOLD
    # at the queue limit a class under its sum is cut by the limit, not the threshold
    assert mcdt_reference.decide(MMU, FM.Occupancy(queue_pkts=8, **over),
                                 {TCP: 10, MMU: 5, UDP: 5}, 8, "C") == FM.QUEUE_LIMIT


def test_decide_rejects() -> None:
    with pytest.raises(ValueError, match="class_id"):
        mcdt_reference.decide(3, FM.Occupancy(), TH, 100)
    with pytest.raises(ValueError, match=r"th_pkts\[TAGGED\]"):
        mcdt_reference.decide(MMU, FM.Occupancy(), {TCP: 1}, 100)
    with pytest.raises(ValueError, match="queue_limit_pkts"):
        mcdt_reference.decide(TCP, FM.Occupancy(), TH, -1)
    with pytest.raises(ValueError, match="mode must be A, B or C"):
        mcdt_reference.decide(TCP, FM.Occupancy(), TH, 100, "a")


def test_paper_defaults() -> None:
    assert mcdt.DEFAULT_BUFFER_PKTS == 100                         # mcdt §III
    w = mcdt.PAPER_WEIGHTS
    assert (w.mmu_to_tcp, w.udp_to_tcp, w.mmu, w.udp, w.new, w.last) == \
        (0.2, 0.4, 0.8, 0.6, 0.7, 0.3)                              # eqs. 6-8, 10
    assert w.exact().mmu_to_tcp == Fraction(1, 5)


@pytest.mark.parametrize("mode", ["A", "B", "C"])
def test_port_model_mcdt_action_agrees_with_decide(mode: str) -> None:
    """fixedpoint_model.PortModel's mcdt action (what PTF predictions use) and decide()
    give the same outcome for every mode, class, count and queue around the
    boundaries (the thresholds' sum, 7, is below the limit, 8)."""
    from mmaqm.encoding import PolicyAction
    from mmaqm_oracle.fixedpoint_model import Occupancy, PortModel

    th = {TCP: 2, MMU: 0, UDP: 5}
    action = PolicyAction("mcdt", {"queue_limit_pkts": 8, "flow_epoch_shift": 0,
                                   "policy_epoch": 1, **mcdt.action_params(th, 8, mode)})
    model = PortModel(action, lambda: 0)
    outcomes = set()
    for class_id in mcdt.MCDT_CLASSES:
        for count in range(8):
            for queue in range(count, 10):
                occ = Occupancy(queue_pkts=queue, **{
                    f"{name}_pkts": count if c == class_id else 0
                    for c, name in ((TCP, "tcp"), (MMU, "tagged"), (UDP, "untagged"))})
                want = mcdt_reference.decide(class_id, occ, th, 8, mode)
                assert model.arrive(class_id, occ) == want, (class_id, count, queue)
                outcomes.add(want)
    # in mode B every threshold (at most 5) is below the limit: the whole queue
    # passes one first, so the limit is never the reason
    assert outcomes == {FM.ADMIT, FM.CLASS_THRESHOLD} | \
        (set() if mode == "B" else {FM.QUEUE_LIMIT})


def test_mcdt_mode_is_a_validated_policy_key() -> None:
    from mmaqm.config import ConfigError, parse_policy
    assert parse_policy({"algorithm": "MCDT", "queue_limit_pkts": 100}).settings["mcdt_mode"] \
        == "A"                                              # the paper's choice (§III)
    assert parse_policy({"algorithm": "MCDT", "queue_limit_pkts": 100,
                         "mcdt_mode": "C"}).settings["mcdt_mode"] == "C"
    with pytest.raises(ConfigError, match="policy.mcdt_mode: must be one of A, B, C, got string 'D'"):
        parse_policy({"algorithm": "MCDT", "queue_limit_pkts": 100, "mcdt_mode": "D"})
    with pytest.raises(ConfigError, match="policy.mcdt_mode: only for MCDT"):
        parse_policy({"algorithm": "DROP_TAIL", "queue_limit_pkts": 100, "mcdt_mode": "B"})
