"""FRED's reference models (the test oracle; moved from mmaqm.algorithms.fred).

The rules (A1-A3, R1-R7, D1-D2), the choices where the paper is silent and the
data plane form are described in :mod:`mmaqm.algorithms.fred`, which keeps what
the controller needs (flow slots, action parameters, the plug-in). Here:

  * the data plane form, bit-exact with fred.p4: :func:`arrive`, :func:`depart`,
    :class:`FredPortModel` (one port's FIFO);
  * the paper's form in floats: :func:`reference_arrive`, :func:`reference_depart`;
  * slot collision probabilities and the registers' memory.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from mmaqm import p4constants as C
from mmaqm.algorithms import red
from mmaqm.algorithms.fred import DEFAULT_MINQ_PKTS, MAX_TABLE_SLOTS, QLEN_BITS
from mmaqm.fixedpoint import MASK32, MASK64, check_int

from .fixedpoint_model import (FRED_MAXQ, FRED_STRIKE, FRED_TWICE_AVGCQ, QUEUE_LIMIT, RED_EARLY,
                               RED_FORCED, ewma, idle_decay, idle_halvings_q32, p4_to_scaled,
                               red_p_b_q16)

ADMIT = "ADMIT"
DROP = "DROP"
# Drop reasons FRED adds (drop_reason_t members of defines.p4).
FRED_DROP_REASONS = (FRED_MAXQ, FRED_TWICE_AVGCQ, FRED_STRIKE)

# Lin & Morris's constants (their algorithm figure).
PAPER_W_Q = 0.002                 # wq, as RED
DEFAULT_MAX_P = 0.02              # maxp
MAXQ_CONGESTED_PKTS: int = C.FRED_MAXQ_CONGESTED_PKTS   # maxq while avg >= maxth (defines.p4)
STRIKE_LIMIT: int = C.FRED_STRIKE_LIMIT                 # R3 applies when strike > 1

# Data plane widths (docs/mcdt-fred-plan.md).
STRIKE_BITS = 8                   # fred_strike: bit<8> per slot, saturating
NACTIVE_BITS = 32                 # fred_nactive: bit<32> per port
STRIKE_MAX = (1 << STRIKE_BITS) - 1
# Registers FRED adds; name -> (bits per entry, entries per port). FRED also
# uses red.p4's red_avg_scaled, red_count, red_rand_q16 and occupancy.p4's
# queue_pkts and queue_idle_since_us, which exist already.
REGISTERS: dict[str, tuple[int, int]] = {
    "fred_qlen": (QLEN_BITS, MAX_TABLE_SLOTS),
    "fred_strike": (STRIKE_BITS, MAX_TABLE_SLOTS),
    "fred_nactive": (NACTIVE_BITS, 1),
}
PER_SLOT_REGISTERS = ("fred_qlen", "fred_strike")


def default_thresholds(buffer_pkts: float) -> tuple[float, float]:
    """(min_th, max_th) = (buffer / 4, 2 min_th): Lin & Morris's minth = min(buffer / 4,
    RTT * bandwidth) without the RTT term, maxth = 2 minth."""
    if not buffer_pkts > 0 or not math.isfinite(buffer_pkts):
        raise ValueError(f"buffer_pkts must be > 0, got {buffer_pkts!r}")
    return buffer_pkts / 4, buffer_pkts / 2


# ---------------------------------------------------------------- collisions and memory
def _check_nm(n_flows: object, slots: object) -> tuple[int, int]:
    return (check_int("n_flows", n_flows, 0, 1 << 40), check_int("slots", slots, 1, 1 << 40))


def expected_occupied_slots(n_flows: int, slots: int) -> float:
    """m (1 - (1 - 1/m)^n): occupied slots, i.e. what nactive counts for n active flows."""
    n, m = _check_nm(n_flows, slots)
    return m * -math.expm1(n * math.log1p(-1 / m)) if m > 1 else float(min(n, 1))


def flow_collision_probability(n_flows: int, slots: int) -> float:
    """1 - (1 - 1/m)^(n - 1): the chance that a given flow shares its slot with
    at least one of the other n - 1 flows (the expected fraction of flows whose
    qlen and strike are mixed with another flow's)."""
    n, m = _check_nm(n_flows, slots)
    if n <= 1:
        return 0.0
    return 1.0 if m == 1 else -math.expm1((n - 1) * math.log1p(-1 / m))


def any_collision_probability(n_flows: int, slots: int) -> float:
    """Birthday bound: 1 - prod_{k<n} (1 - k/m), the chance that any two flows share a slot."""
    n, m = _check_nm(n_flows, slots)
    if n > m:
        return 1.0
    log_none = sum(math.log1p(-k / m) for k in range(n))
    return -math.expm1(log_none)


def slots_for_collision_probability(n_flows: int, max_probability: float) -> int:
    """Smallest power of two m with flow_collision_probability(n, m) <= max_probability."""
    n = check_int("n_flows", n_flows, 0, 1 << 40)
    if isinstance(max_probability, bool) or not isinstance(max_probability, (int, float)) \
            or not 0 < max_probability <= 1:
        raise ValueError(f"max_probability must be in (0, 1], got {max_probability!r}")
    m = 1
    while flow_collision_probability(n, m) > max_probability:
        m <<= 1
    return m


def register_bits_per_slot() -> int:
    """Bits of per-flow register state per slot: fred_qlen + fred_strike = 24."""
    return sum(REGISTERS[name][0] for name in PER_SLOT_REGISTERS)


def table_register_bytes(slots: int) -> float:
    """Per-flow register bytes of a table of `slots` slots (at the registers' widths)."""
    return check_int("slots", slots, 0, 1 << 40) * register_bits_per_slot() / 8


def register_bytes_per_1000_flows(slots_per_flow: float = 1.0) -> float:
    """Per-flow register bytes for 1000 flows with slots_per_flow slots each
    (1.0: one slot per flow, 3000 bytes). Per-port registers are not included
    (fred_nactive: 4 bytes per port)."""
    if isinstance(slots_per_flow, bool) or not isinstance(slots_per_flow, (int, float)) \
            or not slots_per_flow > 0 or not math.isfinite(slots_per_flow):
        raise ValueError(f"slots_per_flow must be > 0, got {slots_per_flow!r}")
    return 1000 * slots_per_flow * register_bits_per_slot() / 8


# ---------------------------------------------------------------- state
@dataclass(frozen=True)
class Slot:
    """fred_qlen and fred_strike of one slot (one flow, barring collisions)."""

    qlen_pkts: int = 0
    strike: int = 0


EMPTY_SLOT = Slot()


@dataclass(frozen=True)
class FredState:
    """One port's FRED registers (data plane form). Power-up: all zero.

    slots holds the non-empty slots only (absent = Slot(0, 0)); treat as read-only.
    """

    avg_scaled: int = 0          # red_avg_scaled
    nactive: int = 0             # fred_nactive
    count: int = 0               # red_count: early-zone arrivals since R was drawn; 0 = restarted
    rand_q16: int = 0            # red_rand_q16: R
    idle_since_us: int = 0       # queue_idle_since_us: when the queue last emptied
    slots: Mapping[int, Slot] = field(default_factory=dict)

    def slot(self, index: int) -> Slot:
        return self.slots.get(index, EMPTY_SLOT)


def _with_slot(slots: Mapping[int, Slot], index: int, value: Slot) -> dict[int, Slot]:
    new = dict(slots)
    if value == EMPTY_SLOT:
        new.pop(index, None)
    else:
        new[index] = value
    return new


_REQUIRED_PARAMS = ("min_th_scaled", "max_th_scaled", "red_slope_q24", "ewma_shift",
                    "minq_pkts", "fred_slot_mask", "queue_limit_pkts")


def _check_params(params: Mapping[str, int]) -> None:
    for name in _REQUIRED_PARAMS:
        if name not in params:
            raise ValueError(f"params: missing {name!r}")
        check_int(f"params[{name!r}]", params[name], 0, MASK32)
    check_int("params['ewma_shift']", params["ewma_shift"], 0, 31)
    mask = params["fred_slot_mask"]
    if mask & (mask + 1) or mask >= MAX_TABLE_SLOTS:
        raise ValueError(f"params['fred_slot_mask'] must be 2^k - 1 < {MAX_TABLE_SLOTS}, "
                         f"got {mask}")
    check_int("params['idle_decay_q32']", params.get("idle_decay_q32", 0), 0, MASK32)


def _qlen_vs_avgcq(qlen_pkts: int, nactive: int) -> int:
    """(qlen << 16) * max(nactive, 1) in bit<64>, to compare with avg_scaled
    (qlen >= avgcq) or 2 avg_scaled (qlen > 2 avgcq)."""
    return (p4_to_scaled(qlen_pkts) * max(nactive, 1)) & MASK64


# ---------------------------------------------------------------- data plane (fixed point)
def arrive(state: FredState, slot: int, queue_pkts: int, params: Mapping[str, int],
           rand_source: Callable[[], int], *, now_us: int = 0
           ) -> tuple[str, str | None, FredState]:
    """One packet of the flow in `slot` arrives at a queue holding queue_pkts
    -> (ADMIT or DROP, drop reason or None, new state). Reference model of the
    planned fred action; rules as in the module docstring. rand_source() plays
    random(0, 2^16 - 1), called by the first R4 packet after a restart."""
    _check_params(params)
    slot = check_int("slot", slot, 0, params["fred_slot_mask"])
    queue_pkts = check_int("queue_pkts", queue_pkts, 0, MASK32)
    now_us = check_int("now_us", now_us, 0, (1 << 48) - 1)
    flow = state.slot(slot)
    avg = state.avg_scaled
    idle_since = state.idle_since_us
    if queue_pkts == 0:                                        # A1: idle-time average
        decay_q32 = params.get("idle_decay_q32", 0)
        if decay_q32:
            idle_us = (now_us - idle_since) & ((1 << 48) - 1)
            avg = idle_decay(avg, idle_halvings_q32(idle_us, decay_q32))
            idle_since = now_us
        else:                                                  # m = 1: one step toward 0
            avg = ewma(avg, 0, params["ewma_shift"])
    min_th, max_th = params["min_th_scaled"], params["max_th_scaled"]
    state = replace(state, avg_scaled=avg, idle_since_us=idle_since)

    maxq_scaled = p4_to_scaled(MAXQ_CONGESTED_PKTS) if avg >= max_th else min_th   # A2
    share = _qlen_vs_avgcq(flow.qlen_pkts, state.nactive)
    at_avgcq = share >= avg                                    # qlen >= avgcq
    reason = None
    if p4_to_scaled(flow.qlen_pkts) >= maxq_scaled:           # R1
        reason = FRED_MAXQ
    elif avg >= max_th and share > avg << 1:                   # R2 (bit<64>: 2 avg fits)
        reason = FRED_TWICE_AVGCQ
    elif at_avgcq and flow.strike > STRIKE_LIMIT:              # R3
        reason = FRED_STRIKE
    if reason is not None:
        struck = Slot(flow.qlen_pkts, min(flow.strike + 1, STRIKE_MAX))
        return DROP, reason, replace(state, slots=_with_slot(state.slots, slot, struck))

    if avg >= max_th:                                          # R6: drop-tail mode
        return DROP, RED_FORCED, replace(state, count=0)
    if avg < min_th:                                           # R5: no drop, restart
        state = replace(state, count=0)
    else:                                                      # R4: random drop mode
        rand_q16 = state.rand_q16
        if state.count == 0:
            rand_q16 = rand_source()
            check_int("rand_source()", rand_q16, 0, C.PROB_ONE - 1)
        count = (state.count + 1) & MASK32
        state = replace(state, count=count, rand_q16=rand_q16)
        if flow.qlen_pkts >= params["minq_pkts"] and at_avgcq:   # robust flow
            p_b_q16 = red_p_b_q16(avg, min_th, params["red_slope_q24"])
            if (count * p_b_q16) & MASK64 > rand_q16:
                return DROP, RED_EARLY, replace(state, count=0)
    if queue_pkts >= params["queue_limit_pkts"]:               # R7
        return DROP, QUEUE_LIMIT, state
    nactive = state.nactive + (1 if flow.qlen_pkts == 0 else 0)   # A3
    if flow.qlen_pkts >= (1 << QLEN_BITS) - 1:
        raise ValueError(f"slot {slot}: qlen {flow.qlen_pkts} would overflow bit<{QLEN_BITS}>")
    accepted = Slot(flow.qlen_pkts + 1, flow.strike)
    return ADMIT, None, replace(state, nactive=nactive & MASK32,
                                slots=_with_slot(state.slots, slot, accepted))


def depart(state: FredState, slot: int, queue_pkts_after: int, params: Mapping[str, int], *,
           now_us: int = 0) -> FredState:
    """A packet FRED admitted from `slot` leaves; queue_pkts_after packets remain
    (egress). D1: avg = ewma(avg, q); D2: qlen - 1, and at 0 the slot is freed
    (nactive - 1, strike = 0). A departure from an empty slot changes no count
    (guards, as the P4 must: never wrap)."""
    _check_params(params)
    slot = check_int("slot", slot, 0, params["fred_slot_mask"])
    queue_pkts_after = check_int("queue_pkts_after", queue_pkts_after, 0, MASK32)
    now_us = check_int("now_us", now_us, 0, (1 << 48) - 1)
    avg = ewma(state.avg_scaled, p4_to_scaled(queue_pkts_after), params["ewma_shift"])   # D1
    idle_since = now_us if queue_pkts_after == 0 else state.idle_since_us
    flow = state.slot(slot)
    nactive = state.nactive
    if flow.qlen_pkts == 0:
        new_flow = flow
    elif flow.qlen_pkts == 1:                                  # D2: state deleted
        new_flow = EMPTY_SLOT
        nactive = max(nactive - 1, 0)
    else:
        new_flow = Slot(flow.qlen_pkts - 1, flow.strike)
    return replace(state, avg_scaled=avg, nactive=nactive, idle_since_us=idle_since,
                   slots=_with_slot(state.slots, slot, new_flow))


class FredPortModel:
    """One port's FIFO under FRED (data plane form): queue length and departure
    order are modelled here, so a test can drive arrivals and departures only."""

    def __init__(self, params: Mapping[str, int], rand_source: Callable[[], int]) -> None:
        _check_params(params)
        self.params = dict(params)
        self.rand_source = rand_source
        self.state = FredState()
        self.fifo: deque[int] = deque()

    def arrive(self, slot: int, *, now_us: int = 0) -> tuple[str, str | None]:
        decision, reason, self.state = arrive(self.state, slot, len(self.fifo), self.params,
                                              self.rand_source, now_us=now_us)
        if decision == ADMIT:
            self.fifo.append(slot)
        return decision, reason

    def depart(self, *, now_us: int = 0) -> int:
        slot = self.fifo.popleft()
        self.state = depart(self.state, slot, len(self.fifo), self.params, now_us=now_us)
        return slot


# ---------------------------------------------------------------- paper form (floats)
@dataclass(frozen=True)
class FredParams:
    """Lin & Morris's parameters, in packets and probabilities."""

    min_th_pkts: float
    max_th_pkts: float
    max_p: float = DEFAULT_MAX_P
    w_q: float = PAPER_W_Q
    minq_pkts: float = DEFAULT_MINQ_PKTS
    queue_limit_pkts: float = math.inf

    def __post_init__(self) -> None:
        for name in ("min_th_pkts", "max_th_pkts", "max_p", "w_q", "minq_pkts"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if not self.min_th_pkts < self.max_th_pkts:
            raise ValueError(f"max_th_pkts ({self.max_th_pkts!r}) must be > min_th_pkts "
                             f"({self.min_th_pkts!r})")
        if not 0 < self.max_p <= 1:
            raise ValueError(f"max_p must be in (0, 1], got {self.max_p!r}")
        if not 0 < self.w_q <= 1:
            raise ValueError(f"w_q must be in (0, 1], got {self.w_q!r}")
        if isinstance(self.queue_limit_pkts, bool) or not self.queue_limit_pkts >= 0:
            raise ValueError(f"queue_limit_pkts must be >= 0, got {self.queue_limit_pkts!r}")


@dataclass(frozen=True)
class FredFloatState:
    """The paper's variables: avg (packets), nactive, count (-1 = below min_th), per-flow state."""

    avg_pkts: float = 0.0
    nactive: int = 0
    count: int = -1
    slots: Mapping[int, Slot] = field(default_factory=dict)

    def slot(self, index: int) -> Slot:
        return self.slots.get(index, EMPTY_SLOT)


def avgcq_pkts(avg_pkts: float, nactive: int) -> float:
    """avgcq = avg / nactive, or avg when no flow is active."""
    return avg_pkts / nactive if nactive else avg_pkts


def reference_arrive(state: FredFloatState, slot: int, queue_pkts: int, params: FredParams,
                     uniform: Callable[[], float], *, idle_pkt_times: float = 1.0
                     ) -> tuple[str, str | None, FredFloatState]:
    """The paper's arrival rules in floats (module docstring A1-A3, R1-R7).
    uniform() in [0, 1) is called for R4's coin only; idle_pkt_times is A1's m
    (the idle time in packet transmission times), used when queue_pkts == 0."""
    check_int("slot", slot, 0, 1 << 32)
    check_int("queue_pkts", queue_pkts, 0, MASK32)
    if isinstance(idle_pkt_times, bool) or not isinstance(idle_pkt_times, (int, float)) \
            or not idle_pkt_times >= 0:
        raise ValueError(f"idle_pkt_times must be >= 0, got {idle_pkt_times!r}")
    p = params
    flow = state.slot(slot)
    avg = state.avg_pkts
    if queue_pkts == 0:                                        # A1
        avg = (1 - p.w_q) ** idle_pkt_times * avg
    state = replace(state, avg_pkts=avg)
    maxq = MAXQ_CONGESTED_PKTS if avg >= p.max_th_pkts else p.min_th_pkts   # A2
    avgcq = avgcq_pkts(avg, state.nactive)
    reason = None
    if flow.qlen_pkts >= maxq:                                 # R1
        reason = FRED_MAXQ
    elif avg >= p.max_th_pkts and flow.qlen_pkts > 2 * avgcq:  # R2
        reason = FRED_TWICE_AVGCQ
    elif flow.qlen_pkts >= avgcq and flow.strike > STRIKE_LIMIT:   # R3
        reason = FRED_STRIKE
    if reason is not None:
        struck = Slot(flow.qlen_pkts, flow.strike + 1)
        return DROP, reason, replace(state, slots=_with_slot(state.slots, slot, struck))
    if p.min_th_pkts <= avg < p.max_th_pkts:                   # R4
        state = replace(state, count=state.count + 1)
        if flow.qlen_pkts >= max(p.minq_pkts, avgcq):
            p_b = red.early_drop_probability(avg, p.min_th_pkts, p.max_th_pkts, p.max_p)
            if uniform() < red.spread_drop_probability(p_b, state.count):
                return DROP, RED_EARLY, replace(state, count=0)
    elif avg < p.min_th_pkts:                                  # R5
        state = replace(state, count=-1)
    else:                                                      # R6
        return DROP, RED_FORCED, replace(state, count=0)
    if queue_pkts >= p.queue_limit_pkts:                       # R7
        return DROP, QUEUE_LIMIT, state
    nactive = state.nactive + (1 if flow.qlen_pkts == 0 else 0)   # A3
    accepted = Slot(flow.qlen_pkts + 1, flow.strike)
    return ADMIT, None, replace(state, nactive=nactive,
                                slots=_with_slot(state.slots, slot, accepted))


def reference_depart(state: FredFloatState, slot: int, queue_pkts_after: int,
                     params: FredParams) -> FredFloatState:
    """D1 and D2 in floats."""
    check_int("slot", slot, 0, 1 << 32)
    check_int("queue_pkts_after", queue_pkts_after, 0, MASK32)
    avg = (1 - params.w_q) * state.avg_pkts + params.w_q * queue_pkts_after   # D1
    flow = state.slot(slot)
    nactive = state.nactive
    if flow.qlen_pkts == 1:                                    # D2
        new_flow, nactive = EMPTY_SLOT, max(nactive - 1, 0)
    elif flow.qlen_pkts > 1:
        new_flow = Slot(flow.qlen_pkts - 1, flow.strike)
    else:
        new_flow = flow
    return replace(state, avg_pkts=avg, nactive=nactive,
                   slots=_with_slot(state.slots, slot, new_flow))
