"""fixedpoint: conversions and the bit-exact reference model of the P4 AQM."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmaqm import fixedpoint as F
from mmaqm import p4constants as C
from mmaqm.algorithms import ALGORITHMS, red
from mmaqm.config import parse_policy
from mmaqm.encoding import PolicyAction, policy_action
from mmaqm_oracle import fixedpoint_model as FM

from conftest import RandSequence

GOLDEN_P4INFO = C.GOLDEN_P4INFO

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
    assert FM.p4_to_scaled(1) == 65536
    assert FM.p4_to_scaled(65535) == 0xFFFF0000
    assert FM.p4_to_scaled(65536) == 0            # 2^32 wraps to 0
    assert FM.p4_to_scaled(65537) == 65536
    assert FM.p4_to_scaled(0xFFFFFFFF) == 0xFFFF0000


def test_ewma_hand_computed() -> None:
    # 0 + (10*65536 - 0) >> 9 = 655360 / 512 = 1280
    assert FM.ewma(0, 10 * PKT, 9) == 1280
    # 1280 - (1280 - 0) >> 9 = 1280 - 2 (2.5 truncated) = 1278
    assert FM.ewma(1280, 0, 9) == 1278
    # truncation is toward avg in both directions (not floor):
    assert FM.ewma(100, 99, 1) == 100             # 100 - (1 >> 1) = 100, floor would give 99
    assert FM.ewma(99, 100, 1) == 99              # 99 + (1 >> 1) = 99
    assert FM.ewma(5, 1000, 0) == 1000            # w = 1: avg = sample
    assert FM.ewma(5, 1000, 32) == 5              # a bit<32> shifted by 32 is 0
    assert FM.ewma(0xFFFFFFFF, 0, 1) == 0x80000000   # 0xFFFFFFFF - 0x7FFFFFFF
    assert FM.ewma(0, 0xFFFFFFFF, 0) == 0xFFFFFFFF


def test_ewma_rejects_values_outside_bit32() -> None:
    with pytest.raises(ValueError):
        FM.ewma(-1, 0, 1)
    with pytest.raises(ValueError):
        FM.ewma(0, 1 << 32, 1)


def test_red_p_b_q16_hand_computed() -> None:
    # min 15, max 30, max_p 0.1: slope 111848; avg 20 packets -> excess 5 * 65536 = 327680
    # 327680 * 111848 = 36650844160; >> 24 = 2184.5 -> 2184   (paper: 0.1 * 5/15 = 1/30 = 2184.5/65536)
    assert FM.red_p_b_q16(20 * PKT, 15 * PKT, 111848) == 2184
    assert FM.red_p_b_q16(15 * PKT, 15 * PKT, 111848) == 0
    # avg < min_th: (bit<32>)(0 - 1) = 2^32 - 1; * 2^24 >> 24 = 2^32 - 1
    assert FM.red_p_b_q16(0, 1, 1 << 24) == 0xFFFFFFFF


def test_red_p_b_q16_agrees_with_the_float_formula() -> None:
    slope = F.red_slope_q24(15, 30, 0.1)
    for avg_pkts in (15, 16.5, 20, 25, 29.9):
        fixed = FM.red_p_b_q16(F.to_scaled(avg_pkts), F.to_scaled(15), slope) / 65536
        assert fixed == pytest.approx(red.early_drop_probability(avg_pkts, 15, 30, 0.1), abs=2e-5)


def test_dcbt_tagged_th_scaled() -> None:
    assert FM.dcbt_tagged_th_scaled(20 * PKT, 32768) == 10 * PKT      # 20 * 1/2
    assert FM.dcbt_tagged_th_scaled(20 * PKT, 21845) == 436900        # 20 * 21845 exactly
    assert FM.dcbt_tagged_th_scaled(3, 32768) == 1                    # 98304 >> 16 = 1 (1.5 truncated)
    assert FM.dcbt_tagged_th_scaled(0xFFFFFFFF, 65536) == 0xFFFFFFFF  # share 1: threshold = red_avg


# ------------------------------------------------------------ red_decide
# min 15, max 30, max_p 0.1: slope 0.1 / 15 * 2^24 = 111848.1 -> 111848;
# avg 20 packets: p_b_q16 = 5 * 65536 * 111848 >> 24 = 2184 (see test_red_p_b_q16_hand_computed)
RED_15_30 = {"min_th_scaled": 15 * PKT, "max_th_scaled": 30 * PKT, "red_slope_q24": 111848}


def test_red_state_powers_up_restarted_with_r_0() -> None:
    assert FM.RedState() == FM.RedState(count=0, rand_q16=0)


def test_red_decide_below_min_restarts_without_drawing() -> None:
    rand = RandSequence([1234])
    reason, mark, state = FM.red_decide(14 * PKT, RED_15_30, FM.RedState(7, 99), rand)
    assert (reason, mark, state, rand.calls) == (None, False, FM.RedState(0, 99), 0)     # R kept


def test_red_decide_forced_at_max_th_without_drawing() -> None:
    rand = RandSequence([42])
    reason, mark, state = FM.red_decide(30 * PKT, RED_15_30, FM.RedState(3, 99), rand)
    assert (reason, mark, state, rand.calls) == ("RED_FORCED", False, FM.RedState(0, 99), 0)
    # One below max_th is the early zone, not forced. count 0: R = 42 is drawn now;
    # p_b = (30 * 65536 - 1 - 15 * 65536) * 111848 >> 24 = 983039 * 111848 >> 24 = 6553 > 42
    reason, mark, state = FM.red_decide(30 * PKT - 1, RED_15_30, FM.RedState(0, 65535), rand)
    assert (reason, mark, state, rand.calls) == ("RED_EARLY", False, FM.RedState(0, 42), 1)


def test_red_decide_draws_r_when_the_early_zone_is_entered_and_drops_on_the_third() -> None:
    # avg 20 packets -> p_b_q16 = 2184. From a restart (count 0):
    #   1st: draw R = 5000, count 1: 2184 <= 5000 keep
    #   2nd: count 2: 4368 <= 5000 keep            (no draw)
    #   3rd: count 3: 6552 >  5000 drop, restart   (no draw)
    #   4th: count 0 -> draw R = 777, count 1: 2184 > 777 drop
    rand = RandSequence([5000, 777])
    state = FM.RedState(0, 0)
    steps = []
    for _ in range(4):
        reason, mark, state = FM.red_decide(20 * PKT, RED_15_30, state, rand)
        steps.append((reason, mark, state, rand.calls))
    assert steps == [
        (None, False, FM.RedState(1, 5000), 1),
        (None, False, FM.RedState(2, 5000), 1),
        ("RED_EARLY", False, FM.RedState(0, 5000), 1),
        ("RED_EARLY", False, FM.RedState(0, 777), 2),
    ]


def test_red_decide_calls_rand_source_once_per_drop_cycle() -> None:
    # avg in packets -> expected (reason, state) and total rand_source calls after the packet.
    # p_b at 20 packets = 2184, R = 60000: no early drop in this sequence.
    rand = RandSequence([60000, 30000])
    script = [
        (0, None, FM.RedState(0, 0), 0),          # below min_th: no random() per packet
        (5, None, FM.RedState(0, 0), 0),
        (14, None, FM.RedState(0, 0), 0),
        (20, None, FM.RedState(1, 60000), 1),     # enters the early zone after a restart: 1 draw
        (20, None, FM.RedState(2, 60000), 1),     # stays: no draw
        (14, None, FM.RedState(0, 60000), 1),     # below min_th: restart, R kept, no draw
        (30, "RED_FORCED", FM.RedState(0, 60000), 1),   # forced: restart, no draw
        (20, None, FM.RedState(1, 30000), 2),     # early zone again after a restart: 1 draw
    ]
    state = FM.RedState()
    for avg_pkts, reason, expected_state, calls in script:
        got_reason, mark, state = FM.red_decide(avg_pkts * PKT, RED_15_30, state, rand)
        assert (got_reason, mark, state, rand.calls) == (reason, False, expected_state, calls), avg_pkts


def test_red_decide_early_drop_is_strict() -> None:
    # red.p4: drop when count * p_b_q16 > R. R = 4368 = 2 * 2184: count 2 keeps, count 3 drops.
    rand = RandSequence([0])
    reason, mark, state = FM.red_decide(20 * PKT, RED_15_30, FM.RedState(1, 4368), rand)
    assert (reason, mark, state) == (None, False, FM.RedState(2, 4368))
    reason, mark, state = FM.red_decide(20 * PKT, RED_15_30, state, rand)
    assert (reason, mark, state) == ("RED_EARLY", False, FM.RedState(0, 4368))
    assert rand.calls == 0                      # count != 0: R is reused, never redrawn


def test_red_decide_at_min_th_is_the_early_zone_and_never_drops() -> None:
    # avg == min_th: early zone (count moves), p_b = 0 and 0 > R is false even for R = 0
    rand = RandSequence([0])
    assert FM.red_decide(15 * PKT, RED_15_30, FM.RedState(0, 9), rand) \
        == (None, False, FM.RedState(1, 0))
    assert rand.calls == 1                      # count 0 in the early zone: R drawn (0)
    assert FM.red_decide(15 * PKT, RED_15_30, FM.RedState(4, 0), rand) \
        == (None, False, FM.RedState(5, 0))
    assert rand.calls == 1


def test_red_decide_checks_rand_source_range() -> None:
    # random(r, 0, PROB_ONE - 1): 65536 is out of range, checked when R is drawn
    with pytest.raises(ValueError, match="rand_source"):
        FM.red_decide(20 * PKT, RED_15_30, FM.RedState(), lambda: 65536)
    # below min_th nothing is drawn, so a bad source goes unnoticed there
    assert FM.red_decide(0, RED_15_30, FM.RedState(), lambda: 65536) == (None, False, FM.RedState())


# ------------------------------------------------- port_policy actions vs the compiled P4Info
# The golden P4Info is what p4c generates from p4src (`make build` fails when they differ),
# so these tests compare the encoder with the compiler's view of the program.
def p4info_actions(path: Path = GOLDEN_P4INFO) -> dict[str, list[tuple[str, int]]]:
    """{alias: [(param name, bitwidth), ...] in order} of every action of a P4Info file."""
    from fake_p4rt import load_p4info

    info = load_p4info(path)
    return {action.preamble.alias: [(param.name, param.bitwidth) for param in action.params]
            for action in info.actions}


def port_policy_actions(path: Path = GOLDEN_P4INFO) -> list[str]:
    """Aliases of the actions port_policy lists (the default-only one excluded)."""
    from fake_p4rt import load_p4info
    from finsy.proto import p4i

    info = load_p4info(path)
    names = {action.preamble.id: action.preamble.alias for action in info.actions}
    [table] = [t for t in info.tables if t.preamble.alias == "port_policy"]
    return [names[ref.id] for ref in table.action_refs
            if ref.scope != p4i.ActionRef.Scope.DEFAULT_ONLY]


def test_p4info_actions_reads_names_and_widths() -> None:
    actions = p4info_actions()
    assert actions["route"] == [("port", 9), ("src_mac", 48), ("dst_mac", 48)]
    assert actions["set_class"] == [("class_id", 8)]


# The largest values the configuration accepts (queue_limit_pkts <= 65535, w >= 2^-31).
WIDEST_RED = {"queue_limit_pkts": 65535, "min_th_pkts": 0, "max_th_pkts": 65535, "max_p": 1,
              "ewma_weight": 2**-31}
WIDEST_POLICIES = [
    ({"algorithm": "DROP_TAIL", "queue_limit_pkts": 65535}, "drop_tail"),
    ({"algorithm": "RED", **WIDEST_RED}, "red"),
    ({"algorithm": "CBT_RED_ALL", **WIDEST_RED, "tagged_th_pkts": 65535,
      "untagged_th_pkts": 65535}, "cbt_red_all"),
    ({"algorithm": "CBT_RED_TCP_ONLY", **WIDEST_RED, "tagged_th_pkts": 65535,
      "untagged_th_pkts": 65535}, "cbt_red_tcp_only"),
    ({"algorithm": "DCBT", **WIDEST_RED}, "dcbt"),
    ({"algorithm": "DCBT_CHIPS", **WIDEST_RED, "chips_max_tagged_ratio": 1e9,
      "chips_ewma_weight": 2**-31}, "dcbt_chips"),
    # every RED option at its widest: gentle slope, ECN flags, idle decay
    ({"algorithm": "RED", **WIDEST_RED, "max_th_pkts": 1, "max_p": 2**-16, "gentle": True, "ecn": True,
      "harddrop": True, "wait": True, "bandwidth_pps": 1e9}, "red"),
]


def encode_widest(raw_policy: dict[str, object]) -> PolicyAction:
    """The action with the widest values: epoch 2^32 - 1, flow_epoch_shift 40 (the maximum)."""
    return policy_action(parse_policy(raw_policy), policy_epoch=2**32 - 1,
                         flow_epoch_shift=40, share_tagged=1.0, share_untagged=1.0)


@pytest.mark.parametrize("raw_policy, action_name", WIDEST_POLICIES,
                         ids=[name for _, name in WIDEST_POLICIES])
def test_policy_action_params_are_the_p4_action_params(raw_policy: dict[str, object],
                                                       action_name: str) -> None:
    action = encode_widest(raw_policy)
    declared = p4info_actions()[action_name]
    assert action.name == action_name
    assert list(action.params) == [name for name, _ in declared]      # by name, in order
    for name, bits in declared:
        assert 0 <= action.params[name] < 1 << bits, f"{name} = {action.params[name]}"


def test_a_renamed_p4_param_breaks_the_match(tmp_path: Path) -> None:
    action = encode_widest(WIDEST_POLICIES[1][0])                      # red
    renamed = tmp_path / "renamed.p4info.txtpb"
    text = GOLDEN_P4INFO.read_text()
    assert text.count('name: "red_slope_q24"') >= 1
    renamed.write_text(text.replace('name: "red_slope_q24"', 'name: "red_slope"'))
    declared = p4info_actions(renamed)["red"]
    assert list(action.params) != [name for name, _ in declared]


def test_port_policy_table_has_one_action_per_algorithm() -> None:
    assert sorted(port_policy_actions()) == sorted(ALGORITHMS.values())


# ------------------------------------------------------------ PortModel
def drop_tail(queue_limit_pkts: int = 64) -> PolicyAction:
    return PolicyAction("drop_tail", {"queue_limit_pkts": queue_limit_pkts,
                                      "flow_epoch_shift": 0})


def red_action(name: str = "red", *, min_th_scaled: int, max_th_scaled: int,
               red_slope_q24: int, ewma_shift: int, queue_limit_pkts: int = 64,
               policy_epoch: int = 1, **extra: int) -> PolicyAction:
    """A RED-based action (red.p4 order); extra: the CBT / D-CBT parameters."""
    return PolicyAction(name, {
        "queue_limit_pkts": queue_limit_pkts, "flow_epoch_shift": 0,
        "policy_epoch": policy_epoch, "ewma_shift": ewma_shift,
        "min_th_scaled": min_th_scaled, "max_th_scaled": max_th_scaled,
        "red_slope_q24": red_slope_q24, **extra})


def occ(queue: int = 0, tcp: int = 0, tagged: int = 0, untagged: int = 0) -> FM.Occupancy:
    return FM.Occupancy(queue_pkts=queue, tcp_pkts=tcp, tagged_pkts=tagged, untagged_pkts=untagged)


def test_drop_tail_at_queue_limit_and_never_touches_averages() -> None:
    rand = RandSequence([0])
    model = FM.PortModel(drop_tail(queue_limit_pkts=3), rand)
    # Registers left by an earlier RED policy of epoch 9: drop_tail has no policy_epoch,
    # so it neither resets nor updates them.
    model.avg_policy_epoch = 9
    model.red_avg_scaled = 7 * PKT
    model.class_avg_scaled[TAGGED] = 3 * PKT
    model.red_state = FM.RedState(5, 99)
    decisions = [model.arrive(TCP, occ(queue=q, tcp=q)) for q in (0, 1, 2, 3, 4)]
    # admitted while occupancy < 3; drop at occupancy >= queue_limit_pkts
    assert decisions == ["ADMIT", "ADMIT", "ADMIT", "QUEUE_LIMIT", "QUEUE_LIMIT"]
    assert model.arrivals[TCP] == 5 and model.admits[TCP] == 3
    assert model.drops[(TCP, "QUEUE_LIMIT")] == 2
    assert (model.avg_policy_epoch, model.red_avg_scaled, model.class_avg_scaled[TAGGED],
            model.red_state) == (9, 7 * PKT, 3 * PKT, FM.RedState(5, 99))
    assert rand.calls == 0


def test_red_forced_at_max_th_with_shift_0() -> None:
    # min 2, max 4, max_p 0.1, w = 2^0: avg = current occupancy exactly.
    # slope = 0.1 / 2 * 2^24 = 838860.8 -> 838861
    action = red_action(min_th_scaled=2 * PKT, max_th_scaled=4 * PKT, red_slope_q24=838861,
                        ewma_shift=0, queue_limit_pkts=10)
    rand = RandSequence([60000])
    model = FM.PortModel(action, rand)
    # q=0: avg 0 < 2 -> admit, no draw.
    # q=3: avg 3, early zone from a restart: draw R = 60000; p_b = 65536 * 838861 >> 24 = 3276,
    #      1 * 3276 <= 60000 -> admit.
    # q=4: avg 4 >= max_th -> forced. q=12 (above the queue limit): still RED_FORCED (AQM wins).
    decisions = [model.arrive(TCP, occ(queue=q)) for q in (0, 3, 4, 12)]
    assert decisions == ["ADMIT", "ADMIT", "RED_FORCED", "RED_FORCED"]
    assert model.red_avg_scaled == 12 * PKT
    assert model.drops[(TCP, "RED_FORCED")] == 2
    assert (model.red_state, rand.calls) == (FM.RedState(0, 60000), 1)


def test_red_queue_limit_when_red_admits() -> None:
    # w = 2^-9: one sample of 5 packets moves avg to 5*65536 >> 9 = 640 (< min_th) -> RED admits,
    # but occupancy 5 >= queue_limit_pkts 5 -> QUEUE_LIMIT
    action = red_action(min_th_scaled=2 * PKT, max_th_scaled=4 * PKT, red_slope_q24=838861,
                        ewma_shift=9, queue_limit_pkts=5)
    rand = RandSequence([60000])
    model = FM.PortModel(action, rand)
    assert model.arrive(TCP, occ(queue=5)) == "QUEUE_LIMIT"
    assert model.red_avg_scaled == 640
    assert rand.calls == 0


def cbt_action(name: str) -> PolicyAction:
    # min 10, max 20 (RED idle below 10), max_p 0.1: slope 0.1 / 10 * 2^24 = 167772.16 -> 167772;
    # tagged_th 2, untagged_th 1 packets, w = 1
    return red_action(name, min_th_scaled=10 * PKT, max_th_scaled=20 * PKT,
                      red_slope_q24=167772, ewma_shift=0,
                      tagged_th_scaled=2 * PKT, untagged_th_scaled=1 * PKT)


def test_cbt_tagged_threshold() -> None:
    model = FM.PortModel(cbt_action("cbt_red_all"), RandSequence([60000]))
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
    model = FM.PortModel(cbt_action("cbt_red_all"), RandSequence([60000]))
    # tagged avg 1 <= 2 passes the class test; RED avg = queue 25 >= max_th 20 -> forced
    assert model.arrive(TAGGED, occ(queue=25, tagged=1)) == "RED_FORCED"


def test_cbt_red_for_tcp_only() -> None:
    model = FM.PortModel(cbt_action("cbt_red_tcp_only"), RandSequence([60000]))
    # TCP: RED's average counts TCP packets only (cbt §3): sample 3, not 25
    assert model.arrive(TCP, occ(queue=25, tcp=3, tagged=22)) == "ADMIT"
    assert model.red_avg_scaled == 3 * PKT
    assert model.arrive(TCP, occ(queue=25, tcp=20)) == "RED_FORCED"
    # UDP survivors skip RED (tcp 25 >= max_th 20 would be forced) and leave RED's average alone
    assert model.arrive(TAGGED, occ(queue=26, tcp=25, tagged=1)) == "ADMIT"
    assert model.red_avg_scaled == 20 * PKT


def dcbt_action(ewma_shift: int = 0) -> PolicyAction:
    # min 2, max 10, max_p 0.1: slope 0.1 / 8 * 2^24 = 209715.2 -> 209715;
    # shares: tagged 1/4 -> 16384, untagged 1/2:
    # untagged_th = 0.5 * (2 + 0.1 * (10 - 2)) = 1.4 packets -> round(91750.4) = 91750
    return red_action("dcbt", min_th_scaled=2 * PKT, max_th_scaled=10 * PKT,
                      red_slope_q24=209715, ewma_shift=ewma_shift,
                      tagged_share_q16=16384, untagged_th_scaled=91750)


def test_dcbt_threshold_inactive_at_or_below_min_th_and_active_above() -> None:
    model = FM.PortModel(dcbt_action(), RandSequence([60000]))
    # red_avg = 2 packets = min_th: not > min_th -> no class test, although untagged avg 2 > 1.4;
    # RED: early zone, draw R = 60000, p_b = 0: 1 * 0 <= 60000 -> admit
    assert model.arrive(UNTAGGED, occ(queue=2, untagged=2)) == "ADMIT"
    # red_avg = 3 > 2 -> active: untagged avg 2 packets = 131072 > 91750 -> drop
    assert model.arrive(UNTAGGED, occ(queue=3, untagged=2)) == "CLASS_THRESHOLD"
    # untagged avg 1 packet = 65536 <= 91750 -> passes to RED:
    # p_b = 65536 * 209715 >> 24 = 819, count 2: 1638 <= 60000 -> admit
    assert model.arrive(UNTAGGED, occ(queue=3, untagged=1)) == "ADMIT"
    assert model.red_state == FM.RedState(2, 60000)     # the class drop skipped the RED test


def test_dcbt_tagged_threshold_moves_with_red_avg() -> None:
    model = FM.PortModel(dcbt_action(), RandSequence([60000]))
    # red_avg 4 packets -> tagged_th = 4 * 1/4 = 1 packet; tagged avg 1 is not > 1
    assert model.arrive(TAGGED, occ(queue=4, tagged=1)) == "ADMIT"
    # tagged avg 2 > 1 -> drop
    assert model.arrive(TAGGED, occ(queue=4, tagged=2)) == "CLASS_THRESHOLD"
    # red_avg 8 -> tagged_th 2 packets: the same tagged avg 2 now passes
    assert model.arrive(TAGGED, occ(queue=8, tagged=2)) == "ADMIT"
    # TCP is never class-tested
    assert model.arrive(TCP, occ(queue=9, tcp=1, tagged=8)) == "ADMIT"


def test_dcbt_updates_all_averages_on_every_arrival() -> None:
    model = FM.PortModel(dcbt_action(ewma_shift=1), RandSequence([60000]))
    model.arrive(TCP, occ(queue=4, tcp=2, tagged=2, untagged=0))
    # w = 1/2 from 0: red 4/2 = 2, tagged 2/2 = 1, untagged 0 (dcbt §3.1 synchronised updates)
    assert model.red_avg_scaled == 2 * PKT
    assert model.class_avg_scaled[TAGGED] == 1 * PKT
    assert model.class_avg_scaled[UNTAGGED] == 0
    assert model.class_avg_scaled[TCP] == 0           # no TCP class average in D-CBT


def test_epoch_reset() -> None:
    # min 10, max 20, max_p 0.1: slope 167772; w = 1/2.
    # p_b at avg 12 packets = 2 * 65536 * 167772 >> 24 = 1310
    rand = RandSequence([60000, 200])
    action = red_action(min_th_scaled=10 * PKT, max_th_scaled=20 * PKT, red_slope_q24=167772,
                        ewma_shift=1, policy_epoch=1)
    model = FM.PortModel(action, rand)
    assert model.arrive(TCP, occ(queue=8)) == "ADMIT"   # new epoch 1; avg 8/2 = 4 < min_th
    assert (model.red_avg_scaled, model.avg_policy_epoch, rand.calls) == (4 * PKT, 1, 0)
    # same epoch (e.g. a shares-only update): averages and RED state survive
    model.set_policy(action.with_params(queue_limit_pkts=32))
    assert model.arrive(TCP, occ(queue=8)) == "ADMIT"   # avg 4 + (8 - 4)/2 = 6 packets
    assert model.red_avg_scaled == 6 * PKT
    assert model.arrive(TCP, occ(queue=18)) == "ADMIT"  # avg 6 + (18 - 6)/2 = 12: draw 60000,
    assert (model.red_state, rand.calls) == (FM.RedState(1, 60000), 1)  # 1310 <= 60000
    # new epoch: averages restart from 0 before this arrival's update, count restarts, R kept
    model.class_avg_scaled[TAGGED] = 5 * PKT
    model.set_policy(action.with_params(policy_epoch=2))
    # avg 0 + 24/2 = 12 packets (18 without the reset); count 0 -> draw R = 200,
    # count 1: 1310 > 200 -> early drop (without the reset: count 2, 2620 <= 60000, admit)
    assert model.arrive(TCP, occ(queue=24)) == "RED_EARLY"
    assert model.red_avg_scaled == 12 * PKT
    assert model.class_avg_scaled[TAGGED] == 0
    assert model.avg_policy_epoch == 2
    assert (model.red_state, rand.calls) == (FM.RedState(0, 200), 2)


@pytest.mark.parametrize("name, extra", [
    ("red", {}),
    ("cbt_red_all", {"tagged_th_scaled": 2 * PKT, "untagged_th_scaled": PKT}),
    ("cbt_red_tcp_only", {"tagged_th_scaled": 2 * PKT, "untagged_th_scaled": PKT}),
    ("dcbt", {"tagged_share_q16": 16384, "untagged_th_scaled": PKT}),
], ids=["red", "cbt_red_all", "cbt_red_tcp_only", "dcbt"])
@pytest.mark.parametrize("stored_epoch, policy_epoch, resets", [
    (1, 1, False),
    (1, 2, True),
    (0, 1, True),
    (0, 0, False),   # avg_policy_epoch powers up at 0: epoch 0 never resets (clock skips it)
], ids=["same", "new", "first", "power-up"])
def test_every_red_based_action_resets_on_a_new_epoch(
        name: str, extra: dict[str, int], stored_epoch: int, policy_epoch: int,
        resets: bool) -> None:
    # w = 2^-31: a 0-packet sample moves 9 * 65536 by (9 * 65536) >> 31 = 0, so the
    # averages stay as they were unless the epoch resets them. avg 9 < min_th 10: no draw.
    action = red_action(name, min_th_scaled=10 * PKT, max_th_scaled=20 * PKT,
                        red_slope_q24=167772, ewma_shift=31, policy_epoch=policy_epoch, **extra)
    rand = RandSequence([60000])
    model = FM.PortModel(action, rand)
    model.avg_policy_epoch = stored_epoch
    model.red_avg_scaled = 9 * PKT
    for cls in (TCP, TAGGED, UNTAGGED):
        model.class_avg_scaled[cls] = 9 * PKT
    model.red_state = FM.RedState(3, 777)
    assert model.arrive(TCP, occ()) == "ADMIT"
    kept = 0 if resets else 9 * PKT
    assert model.red_avg_scaled == kept
    assert [model.class_avg_scaled[cls] for cls in (TCP, TAGGED, UNTAGGED)] == [kept] * 3
    assert model.avg_policy_epoch == policy_epoch
    # count restarts (below min_th too), R is kept either way; nothing drawn
    assert (model.red_state, rand.calls) == (FM.RedState(0, 777), 0)


def test_unknown_action_is_rejected() -> None:
    model = FM.PortModel(PolicyAction("fq_codel", {"queue_limit_pkts": 64, "policy_epoch": 1}),
                         RandSequence([0]))
    with pytest.raises(ValueError, match="unknown port_policy action 'fq_codel'"):
        model.arrive(TCP, occ())


def test_occupancy_from_dict() -> None:
    model = FM.PortModel(drop_tail(queue_limit_pkts=2), RandSequence([0]))
    assert model.arrive(TCP, {"queue": 2, "tcp": 2}) == "QUEUE_LIMIT"
    assert model.arrive(TCP, {"queue_pkts": 1}) == "ADMIT"
    with pytest.raises(ValueError):
        model.arrive(TCP, {"queue_depth": 1})
    with pytest.raises(ValueError):
        model.arrive(TCP, {"queue": -1})
    with pytest.raises(ValueError):
        model.arrive(3, {"queue": 0})            # no class 3
