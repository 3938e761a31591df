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
    and strike (a collision; see mmaqm_oracle.fred_model.flow_collision_probability), and
    nactive counts occupied slots.
  * strike saturates at 255 (bit<8>) in the data plane model.

Data plane form (fixed point; its reference model is the test oracle's
mmaqm_oracle.fred_model.arrive / depart): avg in packets
* 2^16 with w_q = 2^-ewma_shift (averages.p4 ewma), idle decay as red.p4
(averages.p4 idle_decay; without a configured rate A1 is one EWMA step with
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
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from .. import p4constants as C
from ..fixedpoint import check_int, ewma_shift_from_weight
from .. import validation as V
from . import red
from .base import Algorithm, LpfAverage, Param, PortInputs, PortPolicy

# Lin & Morris's constants (their algorithm figure).
DEFAULT_EWMA_WEIGHT = 2.0**-9     # 0.00195: the power of two nearest 0.002 (the P4 shifts)
DEFAULT_MINQ_PKTS = 2             # minq: 2 for small buffers, 4 for large ones

# Data plane widths (docs/mcdt-fred-plan.md).
QLEN_BITS = 16                    # fred_qlen: bit<16> per slot
MAX_TABLE_SLOTS: int = C.FRED_SLOTS_PER_PORT            # slots per port (defines.p4)
DEFAULT_TABLE_SLOTS = 4096        # 250 flows on a port: 5.9 % of them share a slot
FLOW_KEY_BYTES = 13


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


def _ipv6(what: str, value: object) -> bytes | None:
    """An IPv6 address's 16 bytes (an IPv6Address, or a string with a colon); None
    for anything else (IPv4)."""
    if isinstance(value, ipaddress.IPv6Address):
        return value.packed
    if isinstance(value, str) and ":" in value:
        try:
            return ipaddress.IPv6Address(value).packed
        except ValueError:
            raise ValueError(f"{what} must be an IPv6 address, got {value!r}") from None
    return None


def fold_ipv6(packed: bytes) -> int:
    """An IPv6 address (16 bytes) folded to 32 bits as flow_signature.p4 does
    (defines.p4 FLOW_FOLD): (w0 * MUL0 + w1 * MUL1 + w2 * MUL2 + w3) mod 2^32
    over its big-endian 32-bit words."""
    w = [int.from_bytes(packed[i:i + 4], "big") for i in range(0, 16, 4)]
    return (w[0] * C.FLOW_FOLD_MUL0 + w[1] * C.FLOW_FOLD_MUL1 + w[2] * C.FLOW_FOLD_MUL2
            + w[3]) & 0xFFFFFFFF


def flow_key_bytes(src_addr: str | int | ipaddress.IPv6Address,
                   dst_addr: str | int | ipaddress.IPv6Address, protocol: int,
                   src_port: int = 0, dst_port: int = 0) -> bytes:
    """The 13 bytes BMv2 hashes: src_addr(4) dst_addr(4) protocol(1) src_port(2)
    dst_port(2), each big-endian (flow_signature.p4's field list); an IPv6 flow's
    addresses (an IPv6Address or "2001:db8::1"; both or neither) folded to 4 bytes
    each by :func:`fold_ipv6`."""
    src6, dst6 = _ipv6("src_addr", src_addr), _ipv6("dst_addr", dst_addr)
    if (src6 is None) != (dst6 is None):
        raise ValueError(f"src_addr and dst_addr must be of one family, got {src_addr!r}, "
                         f"{dst_addr!r}")
    src, dst = (fold_ipv6(src6), fold_ipv6(dst6)) if src6 is not None and dst6 is not None \
        else (_ipv4("src_addr", src_addr), _ipv4("dst_addr", dst_addr))
    return (src.to_bytes(4, "big") + dst.to_bytes(4, "big")
            + check_int("protocol", protocol, 0, 0xFF).to_bytes(1, "big")
            + check_int("src_port", src_port, 0, 0xFFFF).to_bytes(2, "big")
            + check_int("dst_port", dst_port, 0, 0xFFFF).to_bytes(2, "big"))


def flow_hash(src_addr: str | int | ipaddress.IPv6Address,
              dst_addr: str | int | ipaddress.IPv6Address, protocol: int,
              src_port: int = 0, dst_port: int = 0) -> int:
    """BMv2's HashAlgorithm.crc32 of the 5-tuple: zlib.crc32 of :func:`flow_key_bytes`."""
    return zlib.crc32(flow_key_bytes(src_addr, dst_addr, protocol, src_port, dst_port))


def flow_slot(src_addr: str | int, dst_addr: str | int, protocol: int, src_port: int = 0,
              dst_port: int = 0, *, table_slots: int = DEFAULT_TABLE_SLOTS) -> int:
    """crc32 & (table_slots - 1): the flow's slot in its port's part of the table."""
    mask = check_table_slots(table_slots) - 1
    return flow_hash(src_addr, dst_addr, protocol, src_port, dst_port) & mask


# ---------------------------------------------------------------- slot sharing
def shared_slot_flows(flow_keys: Iterable[tuple[int, int, int, int, int]], table_slots: int
                      ) -> tuple[int, int]:
    """(flows, flows that share their slot with another of these flows) for 5-tuples
    (src, dst, protocol, src_port, dst_port), as the data plane would slot them: the
    collisions a run actually had, beside the expectation (the oracle's
    mmaqm_oracle.fred_model.flow_collision_probability)."""
    mask = check_table_slots(table_slots) - 1
    per_slot: dict[int, int] = {}
    n = 0
    for key in flow_keys:
        per_slot[flow_hash(*key) & mask] = per_slot.get(flow_hash(*key) & mask, 0) + 1
        n += 1
    return n, sum(c for c in per_slot.values() if c > 1)


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


# ------------------------------------------------------------------ the plug-in
class Fred(Algorithm):
    """FRED (Lin & Morris 1997; cbt §2.3): RED's average plus per-flow state in
    hashed slots, with the RED keys burst_pkts and bandwidth_pps."""

    name: ClassVar[str] = "FRED"
    p4_action: ClassVar[str] = "fred"
    summary: ClassVar[str] = "Flow Random Early Drop (Lin & Morris 1997; cbt §2.3)"
    doc_page: ClassVar[str] = "docs/algorithms/fred.md"
    range_tables: ClassVar[tuple[str, ...]] = ("red_zone",)
    # the average queue (fred_tna.p4 fred_avg), w = 2^-ewma_shift
    lpf_averages: ClassVar[tuple[LpfAverage, ...]] = (
        LpfAverage("fred_avg", weight_param="ewma_shift"),)
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
