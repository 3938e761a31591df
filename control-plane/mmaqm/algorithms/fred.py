"""Flow Random Early Drop, FRED (Lin & Morris, SIGCOMM '97; described in cbt §2.3).

FRED is RED with per-active-flow accounting: a flow is active while it has
packets queued ("statistics must be maintained for every flow that currently
has packets in the outbound queue", cbt §2.3). Source: the FRED paper's
algorithm figure (its pseudo-code); that paper is not among the project's
papers (only cbt §2.3 summarises it), so the rules below are
reconstructed from it and cross-checked with cbt §2.3; docs/mcdt-fred-plan.md
lists what could not be checked.

State. Per port: avg (RED's average, packets), nactive (flows with qlen > 0),
count (RED's packets since the last drop). Per flow: qlen (its packets in
the queue) and strike (times it was caught over its limit). avgcq = avg /
nactive, the average per-flow share (avg when nactive = 0). Parameters:
min_th, max_th, max_p, w_q as RED; minq, the packets every flow may queue
without early drop (2 for small buffers, 4 for large).

Rules, in the order they are applied to an arriving packet of flow i:
  A1  queue empty on arrival -> avg decays over the idle time, (1 - w_q)^m avg
      (RED's idle rule; FRED updates avg on arrivals only in that case).
  A2  maxq = min_th, or 2 packets while avg >= max_th.
  R1  qlen_i >= maxq                                   -> drop, strike_i += 1  (FRED_MAXQ)
  R2  avg >= max_th and qlen_i > 2 avgcq               -> drop, strike_i += 1  (FRED_TWICE_AVGCQ)
  R3  qlen_i >= avgcq and strike_i > 1                 -> drop, strike_i += 1  (FRED_STRIKE)
      ("flows with high strike values are not allowed to queue more than
      avgcq packets"; cbt §2.3: "constrained to its share (without the
      multiplier) until it has no more packets in the queue").
  R4  min_th <= avg < max_th: count += 1; only if qlen_i >= max(minq, avgcq)
      ("robust" flows) drop with p_a = p_b / (1 - count p_b),
      p_b = max_p (avg - min_th) / (max_th - min_th); a drop sets count = 0 (RED_EARLY)
  R5  avg < min_th: count = -1, no drop
  R6  avg >= max_th: drop, count = 0 (drop-tail mode)                  (RED_FORCED)
  R7  (every algorithm here) queue_pkts >= queue_limit_pkts -> drop    (QUEUE_LIMIT)
  A3  accept: if qlen_i == 0 then nactive += 1; qlen_i += 1.
On each departure of a packet of flow i:
  D1  avg = (1 - w_q) avg + w_q q, q the queue after the departure (every departure);
  D2  qlen_i -= 1; at 0: nactive -= 1 and the flow's state is deleted (strike_i = 0).

Choices (the paper's, or ours where it is silent):
  * R3 uses avgcq, not max(minq, avgcq): the FRED text says a high-strike
    flow may not queue more than avgcq. (max(minq, avgcq) belongs to R4.)
  * avgcq is computed when needed from avg and nactive, not kept in a
    variable updated at each event; the two agree except right after A1, where
    ours uses the decayed average (nactive is 0 then, so avgcq = avg).
  * Flows are hash slots, not exact flows: two flows in one slot share qlen
    and strike (a collision; see :func:`flow_collision_probability`), and
    nactive counts occupied slots.
  * strike saturates at 255 (bit<8>) in the data plane model.

Data plane form (fixed point, :func:`arrive` / :func:`depart`): avg in packets
* 2^16 with w_q = 2^-ewma_shift (fixedpoint.ewma), idle decay as red.p4
(fixedpoint.idle_decay; without a configured rate A1 is one EWMA step with
sample 0, m = 1). Comparisons with avgcq are cross-multiplied, so there is no
division: qlen >= avg / n  <=>  (qlen << 16) * n >= avg_scaled, n = max(nactive, 1),
exact in bit<64>. R4's random drop is red.p4's: one uniform R in [0, 2^16) drawn
when count restarts, drop when count * p_b_q16 > R (the uniform-gap form of
p_a); count = 0 means restarted, so the paper's -1 and 0 both map to 0.

Flow slots: slot = crc32(src_addr . dst_addr . protocol . src_port . dst_port)
& (table_slots - 1), over the 13 bytes big-endian (4 + 4 + 1 + 2 + 2; ports 0
for packets without TCP/UDP header), the field list flow_report.p4 already
hashes. BMv2's crc32 (behavioral-model src/bm_sim/calculations.cpp: polynomial
0x04C11DB7, reflected in and out, init and final xor 0xFFFFFFFF) is the
standard CRC-32, i.e. zlib.crc32; the fields are deparsed MSB first; the hash
is taken over 2^32 and masked, so no modulo by a run-time value.
"""

from __future__ import annotations

import ipaddress
import math
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from .. import p4constants as C
from ..fixedpoint import (FRED_MAXQ, FRED_STRIKE, FRED_TWICE_AVGCQ, MASK32, MASK64, QUEUE_LIMIT,
                          RED_EARLY, RED_FORCED, check_int, ewma,
                          ewma_shift_from_weight, idle_decay, idle_halvings_q32, p4_to_scaled,
                          red_p_b_q16)
from .. import validation as V
from . import red
from .base import Algorithm, Param, PortInputs, PortPolicy

ADMIT = "ADMIT"
DROP = "DROP"
# Drop reasons FRED adds (drop_reason_t members of defines.p4).
FRED_DROP_REASONS = (FRED_MAXQ, FRED_TWICE_AVGCQ, FRED_STRIKE)

# Lin & Morris's constants (their algorithm figure).
PAPER_W_Q = 0.002                 # wq, as RED
DEFAULT_EWMA_WEIGHT = 2.0**-9     # 0.00195: the power of two nearest 0.002 (the P4 shifts)
DEFAULT_MAX_P = 0.02              # maxp
DEFAULT_MINQ_PKTS = 2             # minq: 2 for small buffers, 4 for large ones
MAXQ_CONGESTED_PKTS: int = C.FRED_MAXQ_CONGESTED_PKTS   # maxq while avg >= maxth (defines.p4)
STRIKE_LIMIT: int = C.FRED_STRIKE_LIMIT                 # R3 applies when strike > 1

# Data plane widths (docs/mcdt-fred-plan.md).
QLEN_BITS = 16                    # fred_qlen: bit<16> per slot
STRIKE_BITS = 8                   # fred_strike: bit<8> per slot, saturating
NACTIVE_BITS = 32                 # fred_nactive: bit<32> per port
STRIKE_MAX = (1 << STRIKE_BITS) - 1
MAX_TABLE_SLOTS: int = C.FRED_SLOTS_PER_PORT            # slots per port (defines.p4)
DEFAULT_TABLE_SLOTS = 4096        # 250 flows on a port: 5.9 % of them share a slot
FLOW_KEY_BYTES = 13
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


# ---------------------------------------------------------------- flow slots
def check_table_slots(table_slots: object) -> int:
    """A power of two in 1..MAX_TABLE_SLOTS, or ValueError."""
    n = check_int("table_slots", table_slots, 1, MAX_TABLE_SLOTS)
    if n & (n - 1):
        raise ValueError(f"table_slots must be a power of two, got {n}")
    return n


def _ipv4(what: str, value: object) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{what} must be an IPv4 address, got {value!r}")
    try:
        return int(ipaddress.IPv4Address(value))   # type: ignore[arg-type]
    except (ipaddress.AddressValueError, ValueError, TypeError):
        raise ValueError(f"{what} must be an IPv4 address, got {value!r}") from None


def flow_key_bytes(src_addr: str | int, dst_addr: str | int, protocol: int,
                   src_port: int = 0, dst_port: int = 0) -> bytes:
    """The 13 bytes BMv2 hashes: src_addr(4) dst_addr(4) protocol(1) src_port(2)
    dst_port(2), each big-endian (flow_report.p4's field list)."""
    return (_ipv4("src_addr", src_addr).to_bytes(4, "big")
            + _ipv4("dst_addr", dst_addr).to_bytes(4, "big")
            + check_int("protocol", protocol, 0, 0xFF).to_bytes(1, "big")
            + check_int("src_port", src_port, 0, 0xFFFF).to_bytes(2, "big")
            + check_int("dst_port", dst_port, 0, 0xFFFF).to_bytes(2, "big"))


def flow_hash(src_addr: str | int, dst_addr: str | int, protocol: int,
              src_port: int = 0, dst_port: int = 0) -> int:
    """BMv2's HashAlgorithm.crc32 of the 5-tuple: zlib.crc32 of :func:`flow_key_bytes`."""
    return zlib.crc32(flow_key_bytes(src_addr, dst_addr, protocol, src_port, dst_port))


def flow_slot(src_addr: str | int, dst_addr: str | int, protocol: int, src_port: int = 0,
              dst_port: int = 0, *, table_slots: int = DEFAULT_TABLE_SLOTS) -> int:
    """crc32 & (table_slots - 1): the flow's slot in its port's part of the table."""
    mask = check_table_slots(table_slots) - 1
    return flow_hash(src_addr, dst_addr, protocol, src_port, dst_port) & mask


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


def shared_slot_flows(flow_keys: Iterable[tuple[int, int, int, int, int]], table_slots: int
                      ) -> tuple[int, int]:
    """(flows, flows that share their slot with another of these flows) for 5-tuples
    (src, dst, protocol, src_port, dst_port), as the data plane would slot them: the
    collisions a run actually had, beside :func:`flow_collision_probability`'s expectation."""
    mask = check_table_slots(table_slots) - 1
    per_slot: dict[int, int] = {}
    n = 0
    for key in flow_keys:
        per_slot[flow_hash(*key) & mask] = per_slot.get(flow_hash(*key) & mask, 0) + 1
        n += 1
    return n, sum(c for c in per_slot.values() if c > 1)


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


# ---------------------------------------------------------------- action parameters
def action_params(min_th_pkts: float, max_th_pkts: float, max_p: float, *,
                  minq_pkts: int = DEFAULT_MINQ_PKTS, ewma_weight: float = DEFAULT_EWMA_WEIGHT,
                  table_slots: int = DEFAULT_TABLE_SLOTS) -> dict[str, int]:
    """The FRED part of the planned ``fred`` port_policy action: the RED part
    (min_th_scaled, max_th_scaled, red_slope_q24), ewma_shift, minq_pkts and
    fred_slot_mask. queue_limit_pkts, policy_epoch and idle_decay_q32 come as
    for RED (red.option_params)."""
    for name, value in (("min_th_pkts", min_th_pkts), ("max_th_pkts", max_th_pkts),
                        ("max_p", max_p)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    if not min_th_pkts < max_th_pkts:
        raise ValueError(f"max_th_pkts ({max_th_pkts!r}) must be > min_th_pkts ({min_th_pkts!r})")
    if not 0 < max_p <= 1:
        raise ValueError(f"max_p must be in (0, 1], got {max_p!r}")
    params = red.action_params(min_th_pkts, max_th_pkts, max_p)
    params["ewma_shift"] = ewma_shift_from_weight(ewma_weight)
    params["minq_pkts"] = check_int("minq_pkts", minq_pkts, 0, (1 << QLEN_BITS) - 1)
    params["fred_slot_mask"] = check_table_slots(table_slots) - 1
    return params


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


# ------------------------------------------------------------------ the plug-in
class Fred(Algorithm):
    """FRED (Lin & Morris 1997; cbt §2.3): RED's average plus per-flow state in
    hashed slots, with the RED keys burst_pkts and bandwidth_pps."""

    name: ClassVar[str] = "FRED"
    p4_action: ClassVar[str] = "fred"
    summary: ClassVar[str] = "Flow Random Early Drop (Lin & Morris 1997; cbt §2.3)"
    doc_page: ClassVar[str] = "docs/algorithms/fred.md"
    range_tables: ClassVar[tuple[str, ...]] = ("red_zone",)
    params: ClassVar[tuple[Param, ...]] = red.THRESHOLD_PARAMS + (
        Param("fred_minq_pkts", "int", "packets", "a flow holding fewer packets than "
              "max(minq, avgcq) is never dropped early (2 for small buffers, 4 for large)",
              DEFAULT_MINQ_PKTS, lo=0, hi=(1 << QLEN_BITS) - 1, note="fred_qlen is bit<16>"),
        Param("fred_flow_slots", "int", "slots", "per-flow slots of the port; flows that hash "
              "to one slot share its state", DEFAULT_TABLE_SLOTS, lo=1, hi=MAX_TABLE_SLOTS,
              power_of_two=True, note="FRED_SLOTS_PER_PORT slots per port (defines.p4)"),
    )
    unused_key_notes = {key: "its rules have no gentle ramp, ECN marking or wait; burst_pkts "
                        "and bandwidth_pps apply" for key in ("gentle", "ecn", "harddrop", "wait")}

    def check(self, values: dict[str, Any], given: frozenset[str], queue_limit_pkts: int | None,
              path: str, errs: V.Errors) -> None:
        red.check_thresholds(values, given, queue_limit_pkts, path, errs)

    def action_params(self, policy: PortPolicy, inputs: PortInputs,
                      policy_epoch: int) -> dict[str, int]:
        s = policy.settings
        decay = 0 if s["bandwidth_pps"] is None else red.idle_decay_q32(s["ewma_weight"],
                                                                         s["bandwidth_pps"])
        return {"policy_epoch": policy_epoch,
                **action_params(s["min_th_pkts"], s["max_th_pkts"], s["max_p"],
                                minq_pkts=s["fred_minq_pkts"], ewma_weight=s["ewma_weight"],
                                table_slots=s["fred_flow_slots"]),
                "idle_decay_q32": decay}


    def slot_sample(self, params: Mapping[str, int], flow_keys: Any
                    ) -> tuple[str, dict[str, int]] | None:
        flows, sharing = shared_slot_flows(flow_keys, params["fred_slot_mask"] + 1)
        return "fred_slots", {"flows": flows, "sharing": sharing}


PLUGIN = Fred()
