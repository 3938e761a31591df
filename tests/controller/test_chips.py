"""ChIPS (dcbt §3.2): the controller's arithmetic and the reference model of chips.p4."""

from __future__ import annotations

import math

import pytest

from mmaqm import p4constants as C
from mmaqm.algorithms import chips
from mmaqm.config import ConfigError, parse_policy
from mmaqm.encoding import policy_action
from mmaqm_oracle import fixedpoint_model as FM

DCBT_CHIPS = {"algorithm": "DCBT_CHIPS", "queue_limit_pkts": 200, "min_th_pkts": 6,
              "max_th_pkts": 100, "max_p": (100 - 6) / 2**24, "ewma_weight": 0.5}


def test_share_limit_from_the_papers_ratio() -> None:
    # tagged / other = 0.5 -> tagged / all = 1/3 -> round(65536 / 3) = 21845
    assert chips.tagged_share_limit_q16(0.5) == 21845
    assert chips.tagged_share_limit_q16(0.001) == round(0.001 / 1.001 * 65536) == 65
    assert chips.tagged_share_limit_q16(math.inf) == 65536
    assert chips.ratio_of_share(1 / 3) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        chips.share_of_ratio(0)


def test_defaults_and_params() -> None:
    policy = parse_policy(DCBT_CHIPS)
    assert (policy.settings.chips_max_tagged_ratio, policy.settings.chips_ewma_weight) == (0.5, 2**-9)
    action = policy_action(policy, policy_epoch=1, flow_epoch_shift=0)
    assert action.name == "dcbt_chips"
    assert (action.params["chips_ewma_shift"], action.params["chips_tagged_share_limit_q16"]) \
        == (9, 21845)


@pytest.mark.parametrize("extra, message", [
    ({"chips_max_tagged_ratio": 0}, "chips_max_tagged_ratio: must be > 0"),
    ({"chips_ewma_weight": 0.3}, "chips_ewma_weight: 0.3 is not a power of two"),
])
def test_bad_chips_keys(extra: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_policy({**DCBT_CHIPS, **extra})


def model(**extra) -> FM.PortModel:
    action = policy_action(parse_policy({**DCBT_CHIPS, **extra}), policy_epoch=1,
                           flow_epoch_shift=0, share_tagged=1.0, share_untagged=1.0)
    return FM.PortModel(action, lambda: 0)


def fill_tcp(m: FM.PortModel, n: int) -> None:
    for q in range(n):
        assert m.arrive(C.CLASS_TCP, FM.Occupancy(queue_pkts=q, tcp_pkts=q)) == FM.ADMIT


def test_cut_in_on_transient_congestion_hand_computed() -> None:
    # Weight 1/2: after q = 0..7 the RED average is 6.0078125; the tagged packet at
    # q = 8 makes it 7.00390625 < 8: the queue is above its average -> cut in.
    m = model()
    fill_tcp(m, 8)
    assert m.red_avg_scaled == round(6.0078125 * 65536)
    assert m.arrive(C.CLASS_TAGGED, FM.Occupancy(queue_pkts=8, tcp_pkts=8)) == FM.CUT_IN
    assert m.chips_tagged_share_q16 == 128                          # 65536 >> 9
    assert m.chips_events == {"CHIPS_ON_ADMITS": 9, "CHIPS_CUT_IN": 1}


def test_no_cut_in_when_the_queue_is_not_above_its_average() -> None:
    m = model(ewma_weight=1.0)                                      # avg = q
    fill_tcp(m, 8)
    assert m.arrive(C.CLASS_TAGGED, FM.Occupancy(queue_pkts=8, tcp_pkts=8)) == FM.ADMIT
    assert m.chips_events["CHIPS_NO_CONGESTION"] == 1


def test_off_above_the_ratio_and_back_on_below_it() -> None:
    m = model(chips_ewma_weight=0.5)                                # share moves by halves
    fill_tcp(m, 8)
    # share 0 -> 32768 > 21845 (ratio 0.5): off, no cut-in though q > avg
    assert m.arrive(C.CLASS_TAGGED, FM.Occupancy(queue_pkts=8, tcp_pkts=8)) == FM.ADMIT
    assert m.chips_events["CHIPS_OFF_ADMITS"] == 1
    # a TCP packet halves it: 16384 <= 21845: on again (not tagged: no cut-in)
    m.arrive(C.CLASS_TCP, FM.Occupancy(queue_pkts=9, tcp_pkts=8, tagged_pkts=1))
    assert m.chips_tagged_share_q16 == 16384
    assert m.chips_events["CHIPS_ON_ADMITS"] == 8 + 1


def test_virtual_fifo_keeps_a_departed_cut_in_packet_in_its_class() -> None:
    # After the cut-in packet left (physical q 8) its slot still counts (tagged 1):
    # weight 1, tagged share 0.1: threshold 0.8 < tagged_avg 1 -> class threshold drop.
    m = model()
    fill_tcp(m, 8)
    assert m.arrive(C.CLASS_TAGGED, FM.Occupancy(queue_pkts=8, tcp_pkts=8)) == FM.CUT_IN
    m.set_policy(policy_action(parse_policy({**DCBT_CHIPS, "ewma_weight": 1.0}), policy_epoch=1,
                               flow_epoch_shift=0, share_tagged=0.1, share_untagged=1.0))
    assert m.arrive(C.CLASS_TAGGED, FM.Occupancy(queue_pkts=8, tcp_pkts=8, tagged_pkts=1)) \
        == FM.CLASS_THRESHOLD
    m2 = model()
    fill_tcp(m2, 8)
    m2.arrive(C.CLASS_TAGGED, FM.Occupancy(queue_pkts=8, tcp_pkts=8))
    m2.set_policy(m.action)
    # the same arrival counted without the virtual FIFO (tagged 0) is admitted
    assert m2.arrive(C.CLASS_TAGGED, FM.Occupancy(queue_pkts=8, tcp_pkts=8)) != FM.CLASS_THRESHOLD


def test_queue_limit_applies_to_the_virtual_fifo() -> None:
    m = model(queue_limit_pkts=10, max_th_pkts=8, max_p=2 / 2**24)
    # physical 5 (cut-in packets left), virtual 10 = the FIFO's real length with slots
    assert m.arrive(C.CLASS_TCP, FM.Occupancy(queue_pkts=5, tcp_pkts=5, tagged_pkts=5)) \
        == FM.QUEUE_LIMIT


def test_a_new_policy_epoch_restarts_the_tagged_share() -> None:
    # red_on_policy_epoch (red.p4) zeroes chips_tagged_share_q16 with the averages:
    # a port that was off under the old policy starts the new one from share 0.
    m = model(chips_ewma_weight=0.5)
    fill_tcp(m, 8)
    m.arrive(C.CLASS_TAGGED, FM.Occupancy(queue_pkts=8, tcp_pkts=8))
    assert m.chips_tagged_share_q16 == 32768
    same_epoch = policy_action(parse_policy({**DCBT_CHIPS, "chips_ewma_weight": 0.5}),
                               policy_epoch=1, flow_epoch_shift=0)
    m.set_policy(same_epoch)                      # shares-only update: share kept
    m.arrive(C.CLASS_TCP, FM.Occupancy(queue_pkts=9, tcp_pkts=8, tagged_pkts=1))
    assert m.chips_tagged_share_q16 == 16384
    m.set_policy(policy_action(parse_policy({**DCBT_CHIPS, "chips_ewma_weight": 0.5}),
                               policy_epoch=2, flow_epoch_shift=0))
    m.arrive(C.CLASS_TCP, FM.Occupancy(queue_pkts=10, tcp_pkts=9, tagged_pkts=1))
    assert m.chips_tagged_share_q16 == 0          # reset to 0, then a TCP packet: 0
