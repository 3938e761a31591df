"""FRED (Lin & Morris 1997; cbt §2.3): one test per rule of algorithms.fred
(A1-A3, R1-R7, D1-D2), each run on both the paper form (floats) and the data
plane form (fixed point); flow hashing, collisions and register memory.
Values worked out by hand.

Common setting: min_th 4, max_th 8 packets, max_p 0.5 (p_b = (avg - 4) / 8),
minq 2, w_q = 1/2, queue limit 60, 16 slots; the queue holds 5 packets unless
a test says otherwise (so A1 does not touch the average).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import pytest

from mmaqm.algorithms import fred
from mmaqm_oracle.fred_model import DROP, Slot
from mmaqm_oracle import fixedpoint_model as FM
from mmaqm_oracle import fred_model
from conftest import RandSequence

ONE = 65536
PARAMS = {**fred.action_params(4, 8, 0.5, minq_pkts=2, ewma_weight=0.5, table_slots=16),
          "queue_limit_pkts": 60}
FLOAT_PARAMS = fred_model.FredParams(4, 8, 0.5, w_q=0.5, minq_pkts=2, queue_limit_pkts=60)
Q = 5


def test_action_params_hand_computed() -> None:
    # 4 * 65536, 8 * 65536, 0.5 / 4 * 2^24 = 2097152, w 1/2 -> shift 1, mask 16 - 1
    assert PARAMS == {"min_th_scaled": 262144, "max_th_scaled": 524288,
                      "red_slope_q24": 2097152, "ewma_shift": 1, "minq_pkts": 2,
                      "fred_slot_mask": 15, "queue_limit_pkts": 60}
    defaults = fred.action_params(15, 30, 0.02)
    assert (defaults["ewma_shift"], defaults["minq_pkts"], defaults["fred_slot_mask"]) \
        == (9, 2, 4095)                                      # w 2^-9 ~ 0.002, 4096 slots


# ------------------------------------------------------------ one harness, two forms
@dataclass
class Outcome:
    decision: str
    reason: str | None
    state: object

    def slot(self, i: int) -> Slot:
        return self.state.slot(i)  # type: ignore[attr-defined]


class Fixed:
    """Data plane form. coin 'drop' -> R = 0, 'keep' -> R = 65535."""

    name = "fixed"

    def state(self, avg: float, nactive: int = 0, slots: dict | None = None,
              count: int = 0, rand_q16: int = 0) -> fred_model.FredState:
        return fred_model.FredState(avg_scaled=round(avg * ONE), nactive=nactive, count=count,
                                    rand_q16=rand_q16, slots=dict(slots or {}))

    def arrive(self, st, slot: int, queue: int = Q, coin: str = "keep") -> Outcome:
        rand = RandSequence([0 if coin == "drop" else 65535])
        return Outcome(*fred_model.arrive(st, slot, queue, PARAMS, rand))

    def depart(self, st, slot: int, queue_after: int):
        return fred_model.depart(st, slot, queue_after, PARAMS)

    @staticmethod
    def avg(st) -> float:
        return st.avg_scaled / ONE

    @staticmethod
    def restarted(st) -> bool:
        return st.count == 0


class Float:
    """Paper form. coin 'drop' -> u = 0.0, 'keep' -> u = 0.999999."""

    name = "float"

    def state(self, avg: float, nactive: int = 0, slots: dict | None = None,
              count: int = -1, rand_q16: int = 0) -> fred_model.FredFloatState:
        return fred_model.FredFloatState(avg_pkts=avg, nactive=nactive,
                                         count=count if count != 0 else -1, slots=dict(slots or {}))

    def arrive(self, st, slot: int, queue: int = Q, coin: str = "keep") -> Outcome:
        u = 0.0 if coin == "drop" else 0.999999
        return Outcome(*fred_model.reference_arrive(st, slot, queue, FLOAT_PARAMS, lambda: u))

    def depart(self, st, slot: int, queue_after: int):
        return fred_model.reference_depart(st, slot, queue_after, FLOAT_PARAMS)

    @staticmethod
    def avg(st) -> float:
        return st.avg_pkts

    @staticmethod
    def restarted(st) -> bool:
        return st.count == -1


@pytest.fixture(params=[Fixed(), Float()], ids=lambda m: m.name)
def m(request):
    return request.param


# ------------------------------------------------------------ R1: qlen >= maxq
def test_r1_maxq_is_min_th(m) -> None:
    # avg 2 < min_th: no RED drop at all, yet a flow with min_th = 4 queued packets is
    # dropped (FRED_MAXQ) and struck; with 3 queued it is admitted.
    st = m.state(2, nactive=1, slots={3: Slot(4, 0)})
    out = m.arrive(st, 3)
    assert (out.decision, out.reason) == (DROP, fred_model.FRED_MAXQ)
    assert out.slot(3) == Slot(4, 1)                       # strike + 1, qlen unchanged
    out = m.arrive(m.state(2, nactive=1, slots={3: Slot(3, 0)}), 3)
    assert (out.decision, out.reason) == (fred_model.ADMIT, None)


def test_r1_maxq_is_2_while_avg_at_or_above_max_th(m) -> None:
    # avg 8 = max_th: maxq = 2, so a flow with 2 queued is FRED_MAXQ (struck), not the
    # RED forced drop (R6) that a flow with 1 queued gets (nactive 2: avgcq 4, 2 avgcq 8).
    st = m.state(8, nactive=2, slots={0: Slot(2, 0), 1: Slot(1, 0)})
    out = m.arrive(st, 0)
    assert (out.reason, out.slot(0).strike) == (fred_model.FRED_MAXQ, 1)
    out = m.arrive(st, 1)
    assert (out.reason, out.slot(1).strike) == (FM.RED_FORCED, 0)


# ------------------------------------------------------------ R2: avg >= max_th, qlen > 2 avgcq
def test_r2_twice_avgcq_when_congested(m) -> None:
    # avg 8, nactive 17: avgcq = 8/17 = 0.47, 2 avgcq = 0.94 < qlen 1 -> FRED_TWICE_AVGCQ.
    # nactive 16: 2 avgcq = 1.0, not < 1 -> not R2; R6 drops it as RED_FORCED, no strike.
    slots = {i: Slot(1, 0) for i in range(16)}
    out = m.arrive(m.state(8, nactive=17, slots=slots), 0)
    assert (out.decision, out.reason, out.slot(0)) == (DROP, fred_model.FRED_TWICE_AVGCQ,
                                                       Slot(1, 1))
    out = m.arrive(m.state(8, nactive=16, slots=slots), 0)
    assert (out.reason, out.slot(0)) == (FM.RED_FORCED, Slot(1, 0))


def test_r2_needs_avg_at_or_above_max_th(m) -> None:
    # avg 7.5 < max_th, nactive 16: qlen 1 > 2 avgcq = 0.94 but R2 does not apply;
    # qlen 1 < minq: not robust either -> admitted even with a losing coin.
    st = m.state(7.5, nactive=16, slots={i: Slot(1, 0) for i in range(16)})
    out = m.arrive(st, 0, coin="drop")
    assert (out.decision, out.reason) == (fred_model.ADMIT, None)


# ------------------------------------------------------------ R3: strike > 1 and qlen >= avgcq
def test_r3_struck_flow_held_to_avgcq(m) -> None:
    # avg 6, nactive 2: avgcq 3. qlen 3, strike 2 -> FRED_STRIKE, strike 3.
    out = m.arrive(m.state(6, nactive=2, slots={0: Slot(3, 2), 1: Slot(1, 0)}), 0)
    assert (out.decision, out.reason, out.slot(0)) == (DROP, fred_model.FRED_STRIKE, Slot(3, 3))
    # strike 1 is not "> 1": robust flow, R4 with a winning coin -> admitted
    out = m.arrive(m.state(6, nactive=2, slots={0: Slot(3, 1), 1: Slot(1, 0)}), 0)
    assert (out.decision, out.slot(0)) == (fred_model.ADMIT, Slot(4, 1))
    # qlen 2 < avgcq 3: not R3 (and not robust) -> admitted
    out = m.arrive(m.state(6, nactive=2, slots={0: Slot(2, 5), 1: Slot(1, 0)}), 0)
    assert (out.decision, out.slot(0)) == (fred_model.ADMIT, Slot(3, 5))


def test_r3_uses_avgcq_not_minq(m) -> None:
    # avg 6, nactive 6: avgcq 1 < minq 2. qlen 1, strike 2: 1 >= avgcq -> dropped.
    # (With max(minq, avgcq) = 2 it would be admitted.)
    st = m.state(6, nactive=6, slots={i: Slot(1, 2 if i == 0 else 0) for i in range(6)})
    out = m.arrive(st, 0)
    assert out.reason == fred_model.FRED_STRIKE


def test_r3_applies_below_min_th_too(m) -> None:
    # avg 2 < min_th (R5 would never drop): a struck flow is still held to avgcq 2 / 1.
    out = m.arrive(m.state(2, nactive=1, slots={0: Slot(2, 2)}), 0)
    assert out.reason == fred_model.FRED_STRIKE


# ------------------------------------------------------------ R4: early drop of robust flows
def test_r4_robust_flow_early_dropped(m) -> None:
    # avg 6: p_b = 0.5 * 2 / 4 = 0.25. nactive 2: avgcq 3; qlen 3 >= max(2, 3): robust.
    st = m.state(6, nactive=2, slots={0: Slot(3, 0), 1: Slot(1, 0)})
    out = m.arrive(st, 0, coin="drop")
    assert (out.decision, out.reason, out.slot(0)) == (DROP, FM.RED_EARLY, Slot(3, 0))
    assert out.state.count == 0                            # count = 0 after a drop
    out = m.arrive(st, 0, coin="keep")
    assert (out.decision, out.slot(0)) == (fred_model.ADMIT, Slot(4, 0))


@pytest.mark.parametrize("slots, why", [
    ({0: Slot(1, 0), 1: Slot(1, 0)}, "qlen 1 < minq 2"),
    ({0: Slot(2, 0), 1: Slot(1, 0)}, "qlen 2 < avgcq 6 / 2 = 3"),
])
def test_r4_fragile_flows_never_early_dropped(m, slots: dict, why: str) -> None:
    out = m.arrive(m.state(6, nactive=2, slots=slots), 0, coin="drop")
    assert (out.decision, out.reason) == (fred_model.ADMIT, None), why


def test_r4_counts_every_early_zone_arrival(m) -> None:
    # A fragile flow's packet is not tested but still counts toward p_a.
    st = m.state(6, nactive=2, slots={0: Slot(1, 0), 1: Slot(1, 0)})
    out = m.arrive(st, 0)
    assert not m.restarted(out.state)
    out2 = m.arrive(out.state, 1)
    assert out2.state.count == out.state.count + 1


def test_r4_drop_probability_grows_with_count() -> None:
    # Three robust packets at avg 6 (p_b = 0.25, 16384 in Q16); nactive 3: avgcq 2.
    # Fixed: R = 40000: count 1: 16384, 2: 32768 (<= R, kept), 3: 49152 > R -> drop.
    # Float: u = 0.4 vs p_a = 0.25, 0.25/0.75 = 0.33, 0.25/0.5 = 0.5 -> third dropped too.
    slots = {i: Slot(3, 0) for i in range(3)}
    st = fred_model.FredState(avg_scaled=6 * ONE, nactive=3, slots=slots)
    rand = RandSequence([40000])
    decisions = []
    for i in range(3):
        decision, _, st = fred_model.arrive(st, i, Q, PARAMS, rand)
        decisions.append(decision)
    assert decisions == [fred_model.ADMIT, fred_model.ADMIT, DROP] and rand.calls == 1
    fst = fred_model.FredFloatState(avg_pkts=6.0, nactive=3, slots=slots)
    decisions = []
    for i in range(3):
        decision, _, fst = fred_model.reference_arrive(fst, i, Q, FLOAT_PARAMS, lambda: 0.4)
        decisions.append(decision)
    assert decisions == [fred_model.ADMIT, fred_model.ADMIT, DROP]


# ------------------------------------------------------------ R5, R6: RED's other zones
def test_r5_below_min_th_no_early_drop(m) -> None:
    # avg 3.9 < 4: a robust-looking flow (qlen 3, avgcq 1.95) is admitted, count restarted.
    st = m.state(3.9, nactive=2, slots={0: Slot(3, 0), 1: Slot(1, 0)}, count=5)
    out = m.arrive(st, 0, coin="drop")
    assert (out.decision, out.reason) == (fred_model.ADMIT, None)
    assert m.restarted(out.state)
    # at avg = min_th exactly the early zone starts: the arrival counts toward p_a
    # (p_b is 0 there, so nothing is dropped yet)
    out = m.arrive(m.state(4, nactive=2, slots={0: Slot(3, 0), 1: Slot(1, 0)}), 0, coin="drop")
    assert out.decision == fred_model.ADMIT and not m.restarted(out.state)


def test_r6_forced_drop_at_max_th(m) -> None:
    # avg 8 = max_th, a new flow (qlen 0): R1-R3 pass (0 < 2, 0 > 16 no) -> RED_FORCED;
    # avg 7.99: early zone, qlen 0 not robust -> admitted.
    out = m.arrive(m.state(8), 7)
    assert (out.decision, out.reason, out.slot(7)) == (DROP, FM.RED_FORCED, Slot(0, 0))
    assert out.state.count == 0                            # count = 0 in drop-tail mode
    out = m.arrive(m.state(7.99), 7, coin="drop")
    assert (out.decision, out.slot(7)) == (fred_model.ADMIT, Slot(1, 0))


# ------------------------------------------------------------ R7: physical queue limit
def test_r7_queue_limit(m) -> None:
    out = m.arrive(m.state(0), 0, queue=60)
    assert (out.decision, out.reason, out.slot(0), out.state.nactive) == \
        (DROP, FM.QUEUE_LIMIT, Slot(0, 0), 0)
    out = m.arrive(m.state(0), 0, queue=59)
    assert out.decision == fred_model.ADMIT


# ------------------------------------------------------------ A1-A3, D1-D2
def test_a1_average_moves_on_arrival_only_at_an_empty_queue(m) -> None:
    # queue 5: avg stays 6 (FRED samples the queue at departures);
    # queue 0: one idle step (m = 1, no idle rate): (1 - 1/2) * 6 = 3.
    assert m.avg(m.arrive(m.state(6), 0, queue=5).state) == 6
    assert m.avg(m.arrive(m.state(6), 0, queue=0).state) == 3


def test_a1_idle_decay_with_a_rate() -> None:
    # idle_decay_q32 = 2^31: half a halving per microsecond; 4 us idle: 6 -> 1.5
    params = {**PARAMS, "idle_decay_q32": 1 << 31}
    st = fred_model.FredState(avg_scaled=6 * ONE, idle_since_us=100)
    _, _, new = fred_model.arrive(st, 0, 0, params, RandSequence([0]), now_us=104)
    assert new.avg_scaled == round(1.5 * ONE)              # 4 us * 0.5 = 2 halvings
    assert new.idle_since_us == 104
    # float form: m = 2 packet times at w 1/2: 6 * 0.25 = 1.5
    _, _, fnew = fred_model.reference_arrive(fred_model.FredFloatState(avg_pkts=6.0), 0, 0,
                                             FLOAT_PARAMS, lambda: 0.5, idle_pkt_times=2)
    assert fnew.avg_pkts == 1.5


def test_a3_admission_counts_the_flow_once(m) -> None:
    out = m.arrive(m.state(0), 9)
    assert (out.slot(9), out.state.nactive) == (Slot(1, 0), 1)     # new flow: nactive + 1
    out = m.arrive(out.state, 9)
    assert (out.slot(9), out.state.nactive) == (Slot(2, 0), 1)     # same flow: no change


def test_d1_average_sampled_at_departure(m) -> None:
    # avg 6, w 1/2, 2 packets left after the departure: 6 + (2 - 6) / 2 = 4
    st = m.state(6, nactive=1, slots={0: Slot(3, 0)})
    assert m.avg(m.depart(st, 0, 2)) == 4


def test_d2_last_packet_frees_the_flow_state(m) -> None:
    st = m.state(6, nactive=2, slots={0: Slot(1, 3), 1: Slot(2, 4)})
    after = m.depart(st, 0, 2)
    assert (after.slot(0), after.nactive) == (Slot(0, 0), 1)        # strike forgotten
    after = m.depart(st, 1, 2)
    assert (after.slot(1), after.nactive) == (Slot(1, 4), 2)        # still queued: kept
    after = m.depart(m.state(6), 5, 0)                              # nothing there: no wrap
    assert (after.slot(5), after.nactive) == (Slot(0, 0), 0)


# ------------------------------------------------------------ fixed-point specifics
def test_avgcq_comparisons_are_exact_without_division() -> None:
    # avg 7, nactive 3: avgcq = 2.33. qlen 2 is not >= avgcq, qlen 3 is
    # (R3 with strike 2 tells which): 2 * 3 = 6 < 7; 3 * 3 = 9 >= 7.
    st = fred_model.FredState(avg_scaled=7 * ONE, nactive=3,
                              slots={0: Slot(2, 2), 1: Slot(3, 2), 2: Slot(1, 0)})
    assert fred_model.arrive(st, 0, Q, PARAMS, RandSequence([65535]))[1] is None
    assert fred_model.arrive(st, 1, Q, PARAMS, RandSequence([65535]))[1] == fred_model.FRED_STRIKE
    # the boundary itself: avg 6, nactive 3 -> avgcq exactly 2, qlen 2 >= 2
    st = fred_model.FredState(avg_scaled=6 * ONE, nactive=3, slots={0: Slot(2, 2)})
    assert fred_model.arrive(st, 0, Q, PARAMS, RandSequence([65535]))[1] == fred_model.FRED_STRIKE


def test_strike_saturates_at_8_bits() -> None:
    st = fred_model.FredState(avg_scaled=2 * ONE, nactive=1, slots={0: Slot(4, 255)})
    assert fred_model.arrive(st, 0, Q, PARAMS, RandSequence([0]))[2].slot(0) == Slot(4, 255)


def test_port_model_follows_a_fifo() -> None:
    # Empty queue, avg 0: flow 0 sends 4 packets back to back; the 5th hits maxq = 4
    # (avg is only sampled at departures, so it stays 0 < min_th: no RED at all).
    port = fred_model.FredPortModel(PARAMS, RandSequence([0]))
    assert [port.arrive(0)[0] for _ in range(4)] == [fred_model.ADMIT] * 4
    assert port.arrive(0) == (DROP, fred_model.FRED_MAXQ)
    assert port.arrive(1) == (fred_model.ADMIT, None)
    assert (port.state.nactive, port.state.slot(0), port.state.slot(1)) == (2, Slot(4, 1),
                                                                             Slot(1, 0))
    # departures: queue after 4, 3: avg 0 -> 2 -> 2.5
    assert port.depart() == 0 and port.state.avg_scaled == 2 * ONE
    assert port.depart() == 0 and port.state.avg_scaled == round(2.5 * ONE)
    for _ in range(3):
        port.depart()
    assert (port.state.nactive, dict(port.state.slots), len(port.fifo)) == (0, {}, 0)
    assert port.state.nactive == sum(1 for s in port.state.slots.values() if s.qlen_pkts)


# ------------------------------------------------------------ validation
@pytest.mark.parametrize("call, message", [
    (lambda: fred_model.arrive(fred_model.FredState(), 16, 0, PARAMS, RandSequence([0])), "slot"),
    (lambda: fred_model.arrive(fred_model.FredState(), 0, -1, PARAMS, RandSequence([0])),
     "queue_pkts"),
    (lambda: fred_model.arrive(fred_model.FredState(), 0, 0, {**PARAMS, "fred_slot_mask": 12},
                               RandSequence([0])), "fred_slot_mask"),
    (lambda: fred_model.arrive(fred_model.FredState(), 0, 0,
                               {k: v for k, v in PARAMS.items() if k != "minq_pkts"},
                               RandSequence([0])),
     "minq_pkts"),
    (lambda: fred_model.arrive(fred_model.FredState(avg_scaled=5 * ONE, nactive=1,
                                                    slots={0: Slot(3, 0)}),
                               0, Q, PARAMS, RandSequence([65536])), r"rand_source\(\)"),
    (lambda: fred_model.depart(fred_model.FredState(), 0, -2, PARAMS), "queue_pkts_after"),
    (lambda: fred.action_params(8, 4, 0.1), "max_th_pkts"),
    (lambda: fred.action_params(4, 8, 0), "max_p"),
    (lambda: fred.action_params(4, 8, 0.1, ewma_weight=0.002), "not a power of two"),
    (lambda: fred.action_params(4, 8, 0.1, table_slots=1000), "power of two"),
    (lambda: fred.action_params(4, 8, 0.1, table_slots=8192), "table_slots"),
    (lambda: fred_model.FredParams(4, 8, w_q=0), "w_q"),
    (lambda: fred_model.FredParams(4, 4), "max_th_pkts"),
    (lambda: fred_model.FredParams(-1, 4), "min_th_pkts"),
    (lambda: fred.flow_key_bytes("10.0.0.300", "10.0.0.1", 6), "src_addr"),
    (lambda: fred.flow_key_bytes("10.0.0.1", "10.0.0.1", 256), "protocol"),
    (lambda: fred.flow_key_bytes("10.0.0.1", "10.0.0.1", 6, 65536), "src_port"),
    (lambda: fred_model.flow_collision_probability(10, 0), "slots"),
    (lambda: fred_model.slots_for_collision_probability(10, 0), "max_probability"),
    (lambda: fred_model.register_bytes_per_1000_flows(0), "slots_per_flow"),
])
def test_rejects(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


# ------------------------------------------------------------ flow slots
def test_flow_key_layout_and_crc32() -> None:
    # 10.0.0.1 -> 10.0.0.2, UDP (17), 1234 -> 5678: 0a000001 0a000002 11 04d2 162e
    key = fred.flow_key_bytes("10.0.0.1", "10.0.0.2", 17, 1234, 5678)
    assert key.hex() == "0a0000010a0000021104d2162e" and len(key) == fred.FLOW_KEY_BYTES
    assert fred.flow_key_bytes(0x0A000001, 0x0A000002, 17, 1234, 5678) == key
    assert zlib.crc32(b"123456789") == 0xCBF43926      # the CRC-32 check value BMv2 computes
    assert fred.flow_hash("10.0.0.1", "10.0.0.2", 17, 1234, 5678) == zlib.crc32(key)
    h = zlib.crc32(key)
    assert fred.flow_slot("10.0.0.1", "10.0.0.2", 17, 1234, 5678, table_slots=16) == h & 15
    assert fred.flow_slot("10.0.0.1", "10.0.0.2", 17, 1234, 5678, table_slots=1) == 0


def test_collision_formulas_hand_computed() -> None:
    # two flows, two slots: occupied 2 (1 - 1/4) = 1.5; a flow shares with p 1/2;
    # any collision: 1 - 1 * 1/2 = 0.5; three flows in two slots: certain (pigeonhole)
    assert fred_model.expected_occupied_slots(2, 2) == pytest.approx(1.5)
    assert fred_model.flow_collision_probability(2, 2) == pytest.approx(0.5)
    assert fred_model.any_collision_probability(2, 2) == pytest.approx(0.5)
    assert fred_model.any_collision_probability(3, 2) == 1.0
    assert fred_model.any_collision_probability(23, 365) == pytest.approx(0.5073, abs=1e-4)  # birthday
    assert fred_model.flow_collision_probability(1, 8) == 0.0
    # 1000 flows in 1024 slots: 1 - (1023/1024)^999 = 1 - e^-0.9761 = 0.623
    assert fred_model.flow_collision_probability(1000, 1024) == pytest.approx(0.6232, abs=1e-4)
    # <= 10 %: (1 - 1/m)^999 >= 0.9 needs m >= 9482 -> 16384
    assert fred_model.slots_for_collision_probability(1000, 0.1) == 16384
    # 250 flows in the default 4096 slots: 1 - (4095/4096)^249 = 5.9 %
    assert fred_model.flow_collision_probability(250, 4096) == pytest.approx(0.059, abs=1e-3)


def test_register_memory() -> None:
    # fred_qlen bit<16> + fred_strike bit<8> = 24 bits = 3 bytes per slot
    assert fred_model.register_bits_per_slot() == 24
    assert fred_model.register_bytes_per_1000_flows() == 3000
    assert fred_model.register_bytes_per_1000_flows(16.384) == pytest.approx(49152)   # 16384 slots
    assert fred_model.table_register_bytes(4096) == 12288
    assert fred_model.REGISTERS["fred_qlen"] == (16, fred.MAX_TABLE_SLOTS)


def test_paper_constants() -> None:
    assert (fred_model.PAPER_W_Q, fred_model.DEFAULT_MAX_P, fred.DEFAULT_MINQ_PKTS,
            fred_model.MAXQ_CONGESTED_PKTS) == (0.002, 0.02, 2, 2)
    assert fred_model.default_thresholds(60) == (15, 30)     # buffer / 4, 2 min_th (cbt §4: 60 pkts)
    assert math.isclose(fred.DEFAULT_EWMA_WEIGHT, 0.002, rel_tol=0.03)


def test_shared_slot_flows_counts_the_flows_in_shared_slots() -> None:
    # 8 slots; flows with source ports 1..40: a slot holding k > 1 flows adds k.
    keys = [(0x0A000102, 0x0A000202, 6, sport, 2000) for sport in range(1, 41)]
    slots = [fred.flow_hash(*k) & 7 for k in keys]
    want = sum(slots.count(s) for s in set(slots) if slots.count(s) > 1)
    assert fred.shared_slot_flows(keys, 8) == (40, want) and want == 40   # 40 flows, 8 slots
    assert fred.shared_slot_flows(keys[:1], 8) == (1, 0)
    assert fred.shared_slot_flows([], 4096) == (0, 0)
    # two flows in one slot, one alone
    a = keys[0]
    b = next(k for k in keys[1:] if fred.flow_hash(*k) & 7 == fred.flow_hash(*a) & 7)
    c = next(k for k in keys[1:] if fred.flow_hash(*k) & 7 != fred.flow_hash(*a) & 7)
    assert fred.shared_slot_flows([a, b, c], 8) == (3, 2)


def test_an_ipv6_flow_hashes_its_addresses_folded_to_13_bytes() -> None:
    """flow_signature.p4's field list for IPv6: each address folded to 32 bits
    (defines.p4 FLOW_FOLD, worked here by hand from the words), the next header,
    the ports: 13 bytes like IPv4's."""
    import ipaddress
    import zlib

    from mmaqm.algorithms import fred as F
    mask = 0xFFFFFFFF
    # 2001:db8:1::2 -> words 0x20010DB8, 0x00010000, 0, 2
    src = (0x20010DB8 * 0x9E3779B1 + 0x00010000 * 0x85EBCA77 + 0 * 0xC2B2AE3D + 2) & mask
    dst = (0x20010DB8 * 0x9E3779B1 + 0x00020000 * 0x85EBCA77 + 2) & mask
    assert F.fold_ipv6(ipaddress.IPv6Address("2001:db8:1::2").packed) == src
    key = F.flow_key_bytes("2001:db8:1::2", "2001:db8:2::2", 6, 1000, 2000)
    assert key == (src.to_bytes(4, "big") + dst.to_bytes(4, "big")
                   + bytes([6]) + (1000).to_bytes(2, "big") + (2000).to_bytes(2, "big"))
    assert F.flow_hash(ipaddress.IPv6Address("2001:db8:1::2"), "2001:db8:2::2", 6, 1000,
                       2000) == zlib.crc32(key)
    # a subnet and a host number swapped between words do not fold alike
    assert F.fold_ipv6(ipaddress.IPv6Address("2001:db8:0:1::5").packed) != \
        F.fold_ipv6(ipaddress.IPv6Address("2001:db8:0:5::1").packed)
    with pytest.raises(ValueError, match="one family"):
        F.flow_key_bytes("2001:db8:1::2", "10.0.2.2", 6)
    with pytest.raises(ValueError, match="IPv6 address"):
        F.flow_key_bytes("2001:zz::2", "2001:db8:2::2", 6)
