"""Useless Packet Transmission Avoidance (UPTA) and Bottleneck Fairshare
Discovery (BFD): Wu & Hassan 2002, upta §3-5, Fig. 7, Fig. 8 (design:
docs/upta-plan.md). Registered as ``UPTA`` in ``algorithms.ALGORITHMS``: the
data plane is p4src/include/upta.p4 (action ``upta`` of port_policy).

Pure functions, each in the paper's form (floats) and, where the data plane
computes it, the data plane form (upta.p4) (fixed point, bit-exact):

  * loss over a path: eqs. 5-6;
  * arrival-rate estimator: upta §5.3.3 names its parameter K and defers the
    estimator to the authors' ref. [16], whose text we do not have; we take
    core-stateless fair queueing's exponential average (CSFQ, upta's [14],
    Stoica et al. 1998 eq. 3), which has exactly one constant K:
        r_new = (1 - e^(-dt/K)) l/dt + e^(-dt/K) r_old;
    data plane: its first-order form with K = 2^k us and the rate in bytes
    per K, so no division and no exponential (``rate_step_fixed``);
  * drop_prob = max(0, 1 - fs/rate) and the I/U rules of Fig. 7; the data
    plane cross-multiplies: drop_prob > q  <=>  rate (1 - q) > fs;
  * P-UPTA threshold update q_k = (q_{k-1} - p_{k-1}) / (1 - p_{k-1}) (eq. 17),
    which with p = 1 - fs/rate is 1 - q_k = (1 - q_{k-1}) rate/fs; the data
    plane multiplies by a controller-supplied reciprocal of fs;
  * fair shares alpha (eq. 18) and alpha' (eq. 19) as Fig. 7 counts N, S, M;
    the TCP gain rho (eqs. 20-22);
  * BFD: the path minima (eqs. 23-26), QoS Probe / Report ICMP messages
    (Fig. 8, types 20 / 21) with RFC 1071 checksums and the RFC 1624
    incremental update a router applies when it lowers a field;
  * ``UptaPortModel``: one egress port's per-flow registers, as the P4 will
    keep them (like ``fred.FredPortModel``); ``BfdEndpoint``: a switch's BFD
    state as ingress and egress edge; ``FloatFlow``: one flow in floats;
  * ``shared_slot_flows`` (from fred): flows that share a slot, to report.

Which fair share is which (upta §5.1, §5.3.3): alpha (eq. 18) counts the U
flows among the flows sharing the link; it is what a U flow would get if it
were admitted again, so it is fs_U, the value Fig. 7 tests U and new flows
with, and it travels in the probe's "Path Minimum Fairshare (U Flows)" field
(§5.3.3: the U and I fields are "set to the value of alpha_min and
alpha'_min respectively"). alpha' (eq. 19) leaves the M U flows out; it is
what the I flows get, fs_I, the "(I Flows)" field.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .. import p4constants as C
from ..fixedpoint import (MASK32, MASK64, QUEUE_LIMIT, UPTA_FAIR_SHARE, UPTA_USELESS,
                          check_int)
# The same crc32 of the 5-tuple (flow_report.p4's field list) and slot sharing as FRED.
from .base import Algorithm, Param, PortInputs, PortPolicy
from .fred import flow_hash, shared_slot_flows

# ---------------------------------------------------------------- constants
PAPER_LOSS_THRESHOLD = 0.12       # the MPEG-2 video's q_0 (upta §2, §7)
PAPER_BUFFER_PKTS = 100           # every router (upta §6)
PAPER_ACCESS_LINK_BPS = 10_000_000
PAPER_VIDEO_PAYLOAD_BYTES = 188   # MPEG-2 TS packet (upta §6)
PAPER_VIDEO_IP_BYTES = 188 + 4 + 8 + 20   # + TS, UDP, IP headers (upta §2): 220 bytes
PAPER_VIDEO_BPS = 1_500_000       # encoded rate; 1.76 Mbit/s with headers (upta §2)
PAPER_OTHER_PACKET_BYTES = 512    # TCP and ON-OFF source (upta §6)
PAPER_ONOFF_BPS = 10_000_000      # S3 while ON (upta §6)
PAPER_DURATION_S = 15.0
# CSFQ's K (Stoica et al. 1998 use 100 ms); upta gives no value of K, it sets
# the probe interval T = K (§5.3.3). The data plane needs K = 2^k us:
DEFAULT_K_SHIFT = 17              # 2^17 us = 131.072 ms, the power of two nearest 100 ms
MAX_K_SHIFT = 24                  # 16.8 s

# Data plane widths (docs/upta-plan.md).
RATE_FRAC_BITS: int = C.UPTA_RATE_FRAC_BITS  # rate registers: bytes per K * 2^4, bit<32>
RATE_BITS = 32
Q16_ONE: int = C.UPTA_Q16_ONE     # loss thresholds and random draws: [0, 1) * 2^16
Q_FIELD_MAX: int = C.UPTA_Q_NONE         # the option's bit<16> value; q = 1 is not representable
RECIP_MANT_BITS = 32
FS_INFINITE = MASK32              # "no constraint": N - S - M = 0, or no report yet

# Registers (upta.p4; the BFD ones are planned): name -> (bits per entry, entries). Per flow slot (each port
# owns UPTA_SLOTS_PER_PORT of them, index port * UPTA_SLOTS_PER_PORT + slot) and
# per BFD path (identifier) of the switch.
UPTA_SLOTS_PER_PORT: int = C.UPTA_SLOTS_PER_PORT
BFD_PATHS: int = C.BFD_PATHS
REGISTERS: dict[str, tuple[int, int]] = {
    "upta_rate": (RATE_BITS, UPTA_SLOTS_PER_PORT),
    "upta_last_us": (48, UPTA_SLOTS_PER_PORT),
    "upta_state": (1, UPTA_SLOTS_PER_PORT),
    "upta_sig": (32, UPTA_SLOTS_PER_PORT),
    "upta_probe_seq": (17, BFD_PATHS),     # BFD_SEQ_VALID | sequence; 0 = no probe sent
    "upta_path_fs_u": (32, BFD_PATHS),
    "upta_path_fs_i": (32, BFD_PATHS),
}
PER_SLOT_REGISTERS = ("upta_rate", "upta_last_us", "upta_state", "upta_sig")
# upta_events counter (per port; index port * len(EVENTS) + position).
EVENTS = ("FLOW_COLLISION", "I_TO_U", "PROBE_SENT", "PROBE_LOWERED", "PROBE_ANSWERED",
          "PROBE_FROM_EDGE", "PROBE_MALFORMED", "REPORT_ACCEPTED", "REPORT_FROM_EDGE",
          "REPORT_STALE", "REPORT_MALFORMED")
# upta.p4's events (defines.p4 UPTA_EVENT_*), in this order.
if tuple(C.UPTA_EVENTS) != EVENTS or list(C.UPTA_EVENTS.values()) != list(range(len(EVENTS))):
    raise ImportError(f"defines.p4 UPTA_EVENT_* {C.UPTA_EVENTS} differ from EVENTS {EVENTS}")


def register_bits_per_slot() -> int:
    """Per-flow register bits per slot: rate 32 + last arrival 48 + state 1 + signature 32."""
    return sum(REGISTERS[name][0] for name in PER_SLOT_REGISTERS)


def register_bytes_per_1000_flows(slots_per_flow: float = 1.0) -> float:
    """Per-flow register bytes for 1000 flows at slots_per_flow slots each."""
    spf = _positive("slots_per_flow", slots_per_flow)
    return 1000 * spf * register_bits_per_slot() / 8


# Flow states (register upta_state, bit<1>; power-up 0 = new flow = Fig. 7's U branch).
STATE_U: int = C.UPTA_STATE_U
STATE_I: int = C.UPTA_STATE_I

# Modes (action parameter upta_mode).
MODE_B = 0      # basic: every router decides alone (upta §2, [16])
MODE_P: int = C.UPTA_MODE_P  # partial: q travels in the packet and is rewritten (upta §4)
MODE_C: int = C.UPTA_MODE_C  # centralised: packets from edge ports get UPTA with the path minima
                # (ingress edge), the others fair-share drops only (core) (upta §5)
MODES = (MODE_B, MODE_P, MODE_C)
MODE_NAMES = {"B": MODE_B, "P": MODE_P, "C": MODE_C}   # the configuration's upta_mode

ADMIT = "ADMIT"
# Drop reasons UPTA adds (drop_reason_t members, defines.p4): UPTA_USELESS, the flow
# is U: drop at once (Fig. 7); UPTA_FAIR_SHARE, an I flow's probabilistic drop.
UPTA_DROP_REASONS = (UPTA_USELESS, UPTA_FAIR_SHARE)

# P-UPTA's field: an IPv4 option (RFC 791), type 0x9E = copied 1, class 0,
# number 30 (RFC 4727's experimental option number), length 4, then q in Q16.
OPTION_TYPE: int = C.UPTA_OPTION_TYPE
OPTION_LEN: int = C.UPTA_OPTION_LEN

# BFD (upta §5.3, Fig. 8).
ICMP_QOS_PROBE: int = C.ICMP_QOS_PROBE
ICMP_QOS_REPORT: int = C.ICMP_QOS_REPORT
CODE_BANDWIDTH = 0
BFD_HEADER_BYTES = 16             # type, code, checksum, identifier, sequence, 2 fair shares
FLOW_SPEC_BYTES = 16              # src(4) dst(4) sport(2) dport(2) proto(1) flags(1) reserved(2)
FLOW_SPEC_S_BIT = 0x80            # flags bit 7: S = 1 I flow, 0 U flow (§5.3.2)
BFD_MAX_SPECS = 4                 # flow specs the P4 parses / digests per probe


def _number(what: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, got {value!r}")
    return float(value)


def _prob(what: str, value: object, *, closed: bool = True) -> float:
    v = _number(what, value)
    if not (0 <= v <= 1 if closed else 0 <= v < 1):
        raise ValueError(f"{what} must be in [0, 1{']' if closed else ')'}, got {value!r}")
    return v


def _positive(what: str, value: object) -> float:
    v = _number(what, value)
    if v <= 0:
        raise ValueError(f"{what} must be > 0, got {value!r}")
    return v


def _nonneg(what: str, value: object) -> float:
    v = _number(what, value)
    if v < 0:
        raise ValueError(f"{what} must be >= 0, got {value!r}")
    return v


# ---------------------------------------------------------------- §3: loss over a path
def cumulative_loss(local_losses: Iterable[float]) -> float:
    """P_k = 1 - prod (1 - p_i) (eqs. 5, 6): the loss after routers with local losses p_i."""
    kept = 1.0
    for i, p in enumerate(local_losses):
        kept *= 1 - _prob(f"local_losses[{i}]", p)
    return 1 - kept


def local_loss(arrival_rate: float, departure_rate: float) -> float:
    """p_k = 1 - mu_k / lambda_k (upta §3)."""
    lam = _positive("arrival_rate", arrival_rate)
    mu = _nonneg("departure_rate", departure_rate)
    if mu > lam:
        raise ValueError(f"departure_rate ({departure_rate!r}) exceeds arrival_rate ({lam!r})")
    return 1 - mu / lam


# ---------------------------------------------------------------- rate estimator
def estimate_rate(rate_old: float, length: float, dt: float, k: float) -> float:
    """CSFQ's exponential average (upta's [14], Stoica et al. eq. 3; upta's own
    estimator is in its [16], not in our text, see docs/upta-plan.md §1.3):
    r_new = (1 - e^(-dt/K)) l/dt + e^(-dt/K) r_old, in length units per time unit
    of dt and K. dt = 0 (two packets at once) is its limit, r_old + l/K."""
    r = _nonneg("rate_old", rate_old)
    ln = _nonneg("length", length)
    t = _nonneg("dt", dt)
    kk = _positive("k", k)
    if t == 0:
        return r + ln / kk
    w = math.exp(-t / kk)
    return (1 - w) * ln / t + w * r


def k_us(k_shift: int) -> int:
    """K in microseconds: 2^k_shift."""
    return 1 << check_int("k_shift", k_shift, 0, MAX_K_SHIFT)


def rate_step_fixed(rate_scaled: int, length_bytes: int, dt_us: int, k_shift: int) -> int:
    """The data plane estimator (upta.p4), rate in bytes per K * 2^RATE_FRAC_BITS:
        dt < K:  R += (l << F) - (dt * R >> k)      (first-order e^(-dt/K) = 1 - dt/K)
        dt >= K: R = l << F                         (the old rate has decayed; restart)
    bit<64> product, bit<32> result saturating at 2^32 - 1. Steady state under a
    constant packet rate is the exact rate, R = l K / dt, as for the paper's form."""
    check_int("rate_scaled", rate_scaled, 0, MASK32)
    check_int("length_bytes", length_bytes, 0, 0xFFFF)
    check_int("dt_us", dt_us, 0, (1 << 48) - 1)
    k = check_int("k_shift", k_shift, 0, MAX_K_SHIFT)
    sample = length_bytes << RATE_FRAC_BITS
    if dt_us >= 1 << k:
        return sample
    decay = ((dt_us * rate_scaled) & MASK64) >> k
    return min(MASK32, rate_scaled - decay + sample)


def bps_to_rate_scaled(bits_per_s: float, k_shift: int = DEFAULT_K_SHIFT) -> int:
    """bit/s -> bytes per K * 2^RATE_FRAC_BITS (rounded), the data plane's rate unit."""
    bps = _nonneg("bits_per_s", bits_per_s)
    value = round(bps / 8 * k_us(k_shift) / 1e6 * (1 << RATE_FRAC_BITS))
    if value > MASK32:
        raise ValueError(f"{bits_per_s!r} bit/s does not fit bit<32> at k_shift {k_shift}")
    return value


def rate_scaled_to_bps(rate_scaled: int, k_shift: int = DEFAULT_K_SHIFT) -> float:
    check_int("rate_scaled", rate_scaled, 0, MASK32)
    return rate_scaled / (1 << RATE_FRAC_BITS) * 8 * 1e6 / k_us(k_shift)


# ---------------------------------------------------------------- drop probability, I/U
def drop_probability(fair_share: float, rate: float) -> float:
    """drop_prob = max(0, 1 - fs / rate) (Fig. 7); 0 for a rate of 0."""
    fs = _nonneg("fair_share", fair_share)
    r = _nonneg("rate", rate)
    if r == 0:
        return 0.0
    return max(0.0, 1 - fs / r)


def exceeds_fixed(rate_scaled: int, fs_scaled: int, q16: int) -> bool:
    """Data plane: drop_prob > q  <=>  R (2^16 - q16) > FS 2^16 (bit<64>, exact; for a
    U test q16 is the loss threshold, for Fig. 7's random drop it is the draw u16)."""
    check_int("rate_scaled", rate_scaled, 0, MASK32)
    check_int("fs_scaled", fs_scaled, 0, MASK32)
    check_int("q16", q16, 0, Q16_ONE)
    return rate_scaled * (Q16_ONE - q16) > fs_scaled * Q16_ONE


def fair_drop_count_q16(rate_scaled: int, fs_scaled: int) -> int:
    """How many of the 2^16 draws u16 drop a packet (exceeds_fixed true): the data
    plane's drop probability * 2^16. Equals ceil(2^16 (1 - FS/R)) clipped at 0."""
    check_int("rate_scaled", rate_scaled, 0, MASK32)
    check_int("fs_scaled", fs_scaled, 0, MASK32)
    if rate_scaled <= fs_scaled:
        return 0
    # exceeds_fixed(u) <=> u < 2^16 - FS 2^16 / R; the largest such integer u is
    # ceil(2^16 - FS 2^16 / R) - 1, so the count is ceil(2^16 (R - FS) / R).
    return -(-(Q16_ONE * (rate_scaled - fs_scaled)) // rate_scaled)


@dataclass(frozen=True)
class Decision:
    """One arrival's outcome under Fig. 7."""

    decision: str            # ADMIT, UPTA_USELESS or UPTA_FAIR_SHARE
    state: int               # the flow's state afterwards (STATE_I / STATE_U)
    drop_prob: float         # the p the router computed (eq. 17's p_{k})


def fig7_decide(state: int, rate: float, fs_i: float, fs_u: float, loss_threshold: float,
                u: float) -> Decision:
    """Fig. 7 on one arrival (the paper's form). state: STATE_I, or STATE_U for U and
    new flows; rate: the flow's arrival-rate estimate including this packet; u: the
    unif_rand(0, 1) draw, used only by an I flow that is not made U."""
    check_int("state", state, 0, 1)
    q = _prob("loss_threshold", loss_threshold)
    uu = _prob("u", u, closed=False)
    if state == STATE_I:
        p = drop_probability(fs_i, rate)
        if p > q:
            return Decision(UPTA_USELESS, STATE_U, p)
        return Decision(UPTA_FAIR_SHARE if p > uu else ADMIT, STATE_I, p)
    p = drop_probability(fs_u, rate)
    if p > q:
        return Decision(UPTA_USELESS, STATE_U, p)
    return Decision(ADMIT, STATE_I, p)


# ---------------------------------------------------------------- P-UPTA (eq. 17)
def threshold_update(q: float, p: float) -> float:
    """q_k = (q_{k-1} - p_{k-1}) / (1 - p_{k-1}) (eq. 17). Negative when p > q: the
    router should already have dropped the packet (Fig. 4); 1 - p must be > 0."""
    qq = _prob("q", q)
    pp = _prob("p", p, closed=False)
    return (qq - pp) / (1 - pp)


def threshold_chain(q0: float, local_losses: Sequence[float]) -> list[float]:
    """[q_1, q_2, ...]: q_1 = q_0 and eq. 17 at each router; stops after the first
    router whose loss exceeds its threshold (Fig. 4: the packet is dropped there)."""
    q = _prob("q0", q0)
    out = [q]
    for i, p in enumerate(local_losses[:-1] if local_losses else []):
        if _prob(f"local_losses[{i}]", p, closed=False) > q:
            break
        q = threshold_update(q, p)
        out.append(q)
    return out


def encode_q(q: float) -> int:
    """Loss threshold -> the option's bit<16>: floor(q 2^16), capped at 2^16 - 1.
    Rounding down keeps the encoded threshold no more lenient than q."""
    return min(Q_FIELD_MAX, math.floor(_prob("q", q) * Q16_ONE))


def decode_q(q16: int) -> float:
    return check_int("q16", q16, 0, Q_FIELD_MAX) / Q16_ONE


def option_bytes(q: float) -> bytes:
    """The P-UPTA IPv4 option: type 0x9E, length 4, q as bit<16> big-endian."""
    return struct.pack("!BBH", OPTION_TYPE, OPTION_LEN, encode_q(q))


def parse_option(data: bytes) -> int:
    """The option's q16; ValueError unless it is exactly our option."""
    if not isinstance(data, (bytes, bytearray)) or len(data) != OPTION_LEN:
        raise ValueError(f"data must be {OPTION_LEN} bytes, got {data!r}")
    typ, length, q16 = struct.unpack("!BBH", data)
    if typ != OPTION_TYPE or length != OPTION_LEN:
        raise ValueError(f"data is not the UPTA option (type {typ:#x}, length {length})")
    return q16


def reciprocal(fs_scaled: int) -> tuple[int, int]:
    """(mant, shift) with mant = round(2^(16 + shift) / FS) in [2^31, 2^32): the
    controller's reciprocal of a fair share, so (R * mant) >> shift = R/FS * 2^16.
    FS_INFINITE and 0 give (0, 0): no rewrite (FS = 0 is never used as a share)."""
    fs = check_int("fs_scaled", fs_scaled, 0, MASK32)
    if fs == 0 or fs == FS_INFINITE:
        return 0, 0
    shift = 0
    while (1 << (16 + shift)) // fs < 1 << (RECIP_MANT_BITS - 1):
        shift += 1
    mant = round((1 << (16 + shift)) / fs)
    if mant >> RECIP_MANT_BITS:   # rounding up to 2^32: one shift less
        shift -= 1
        mant = round((1 << (16 + shift)) / fs)
    return mant, shift


def share_params(fs_i_scaled: int, fs_u_scaled: int) -> dict[str, int]:
    """The ``upta`` action's share parameters for scaled fair shares (fs_to_scaled,
    eqs. 18-19; FS_INFINITE for none): both shares and their reciprocals
    (reciprocal: mant = round(2^(16 + shift) / FS) in [2^31, 2^32))."""
    mi, si = reciprocal(fs_i_scaled)
    mu, su = reciprocal(fs_u_scaled)
    return {"fs_i_scaled": fs_i_scaled, "fs_u_scaled": fs_u_scaled, "inv_fs_i_mant": mi,
            "inv_fs_i_shift": si, "inv_fs_u_mant": mu, "inv_fs_u_shift": su}


def threshold_update_fixed(q16: int, rate_scaled: int, fs_scaled: int, mant: int,
                           shift: int) -> int:
    """Data plane eq. 17: with p = 1 - FS/R, 1 - q_k = (1 - q_{k-1}) R / FS. When R <= FS
    (p = 0) q is unchanged. Else ratio_q16 = (R * mant) >> shift (bit<64>), margin =
    ((2^16 - q16) * ratio_q16) >> 16, q_k = 2^16 - margin, 0 when margin >= 2^16."""
    check_int("q16", q16, 0, Q_FIELD_MAX)
    check_int("rate_scaled", rate_scaled, 0, MASK32)
    check_int("fs_scaled", fs_scaled, 0, MASK32)
    check_int("mant", mant, 0, MASK32)
    check_int("shift", shift, 0, 63)
    if rate_scaled <= fs_scaled or mant == 0:
        return q16
    ratio_q16 = ((rate_scaled * mant) & MASK64) >> shift
    margin = (((Q16_ONE - q16) * ratio_q16) & MASK64) >> 16
    return 0 if margin >= Q16_ONE else Q16_ONE - margin


# ---------------------------------------------------------------- fair shares (eqs. 18-22)
@dataclass(frozen=True)
class FairShares:
    alpha: float          # eq. 18: fs_U, the "(U Flows)" field
    alpha_prime: float    # eq. 19: fs_I, the "(I Flows)" field
    n: int                # flows
    s: int                # unconstrained flows (rate < C/N, Fig. 7)
    m: int                # U flows (not counted in S)
    unconstrained_sum: float


def fairshares(capacity: float, rates: Sequence[float], useless: Sequence[bool]) -> FairShares:
    """Eqs. 18-19 with N, S, M counted as Fig. 7 counts them: N flows; S those with
    rate < C/N, Sigma lambda over them; M the U flows (a U flow is never also counted
    in S: such a flow's drop probability is 0 at any share >= C/N, so it is about to
    turn I; counting it twice would make N - S - M too small). A denominator of 0
    gives math.inf (nobody to share among)."""
    c = _positive("capacity", capacity)
    if len(rates) != len(useless):
        raise ValueError(f"rates ({len(rates)}) and useless ({len(useless)}) differ in length")
    n = len(rates)
    s = m = 0
    total = 0.0
    for i, (r, u) in enumerate(zip(rates, useless)):
        rr = _nonneg(f"rates[{i}]", r)
        if not isinstance(u, bool):
            raise ValueError(f"useless[{i}] must be a bool, got {u!r}")
        if u:
            m += 1
        elif rr < c / n:
            s += 1
            total += rr
    free = c - total
    alpha = free / (n - s) if n - s > 0 else math.inf
    alpha_prime = free / (n - s - m) if n - s - m > 0 else math.inf
    return FairShares(alpha, alpha_prime, n, s, m, total)


def interval_shares(capacity_bps: float, interval_s: float,
                    arrival_bytes: Mapping[object, int], useless: Iterable[object] = (),
                    remote_useless: int = 0) -> FairShares:
    """The controller's per-interval step (Fig. 7 "On est_timer expiration") in bit/s.
    arrival_bytes: flow -> bytes that arrived in the interval (the upta_flow_bytes
    counter deltas, dropped packets included: lambda is an arrival rate); flows with
    0 bytes are idle and not counted. useless: the flows in U state here (state
    digests). remote_useless: U flows that probes listed but that do not reach this
    router (C-UPTA drops them at the ingress, §5.3.2): counted in N and M."""
    c = _positive("capacity_bps", capacity_bps)
    t = _positive("interval_s", interval_s)
    check_int("remote_useless", remote_useless, 0, 1 << 31)
    u = set(useless)
    rates: list[float] = []
    flags: list[bool] = []
    for key, nbytes in arrival_bytes.items():
        check_int(f"arrival_bytes[{key!r}]", nbytes, 0, 1 << 62)
        if nbytes:
            rates.append(nbytes * 8 / t)
            flags.append(key in u)
    rates += [0.0] * remote_useless
    flags += [True] * remote_useless
    if not rates:
        return FairShares(math.inf, math.inf, 0, 0, 0, 0.0)
    return fairshares(c, rates, flags)


def fs_to_scaled(fair_share_bps: float, k_shift: int = DEFAULT_K_SHIFT) -> int:
    """A fair share in bit/s -> the action parameter / BFD field (FS_INFINITE for inf)."""
    if isinstance(fair_share_bps, float) and math.isinf(fair_share_bps) and fair_share_bps > 0:
        return FS_INFINITE
    return min(FS_INFINITE - 1, bps_to_rate_scaled(fair_share_bps, k_shift))


def improvement_theory(m: int, n: int, s: int, phi: float) -> float:
    """rho = M / (N - S - M) phi (eq. 21); eq. 22 is N = 3, M = 1, S = 0."""
    mm = check_int("m", m, 0, 1 << 31)
    nn = check_int("n", n, 1, 1 << 31)
    ss = check_int("s", s, 0, 1 << 31)
    ph = _prob("phi", phi)
    if nn - ss - mm <= 0:
        raise ValueError(f"n - s - m must be > 0, got n={n}, s={s}, m={m}")
    return mm / (nn - ss - mm) * ph


def improvement_measured(tau: float, tau_prime: float) -> float:
    """rho = tau'/tau - 1 (§5.1, the first line of eq. 20)."""
    return _nonneg("tau_prime", tau_prime) / _positive("tau", tau) - 1


def tcp_throughput_with_upta(alpha: float, alpha_prime: float, phi: float) -> float:
    """tau' = (1 - phi) alpha + phi alpha' (§5.1)."""
    return (1 - _prob("phi", phi)) * _nonneg("alpha", alpha) + phi * _nonneg("alpha_prime",
                                                                           alpha_prime)


# ---------------------------------------------------------------- BFD (§5.3)
def path_min_update(field_u: int, field_i: int, local_u: int, local_i: int) -> tuple[int, int]:
    """Eqs. 25-26 at one router: each field becomes the local share if that is lower."""
    fu = check_int("field_u", field_u, 0, MASK32)
    fi = check_int("field_i", field_i, 0, MASK32)
    lu = check_int("local_u", local_u, 0, MASK32)
    li = check_int("local_i", local_i, 0, MASK32)
    return (lu if lu < fu else fu), (li if li < fi else fi)


def path_min(local_shares: Iterable[tuple[int, int]]) -> tuple[int, int]:
    """Eqs. 23-24: (alpha_min, alpha'_min) over (alpha_l, alpha'_l) of the path's routers,
    as the probe accumulates it (the ingress starts from its own values)."""
    fields_ = (FS_INFINITE, FS_INFINITE)
    seen = False
    for i, (u, v) in enumerate(local_shares):
        check_int(f"local_shares[{i}][0]", u, 0, MASK32)
        check_int(f"local_shares[{i}][1]", v, 0, MASK32)
        fields_ = path_min_update(*fields_, u, v)
        seen = True
    if not seen:
        raise ValueError("local_shares must not be empty")
    return fields_


def internet_checksum(data: bytes) -> int:
    """RFC 1071 one's-complement checksum (an odd length is padded with a zero byte)."""
    if not isinstance(data, (bytes, bytearray)):
        raise ValueError(f"data must be bytes, got {data!r}")
    if len(data) % 2:
        data = bytes(data) + b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def checksum_update(checksum: int, old_word: int, new_word: int) -> int:
    """RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), for one changed 16-bit word; the P4
    applies it to the four words of the two fair-share fields."""
    hc = check_int("checksum", checksum, 0, 0xFFFF)
    m = check_int("old_word", old_word, 0, 0xFFFF)
    m2 = check_int("new_word", new_word, 0, 0xFFFF)
    total = (~hc & 0xFFFF) + (~m & 0xFFFF) + m2
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def checksum_update32(checksum: int, old: int, new: int) -> int:
    """checksum_update for a 32-bit field (its two words)."""
    check_int("old", old, 0, MASK32)
    check_int("new", new, 0, MASK32)
    hc = checksum_update(checksum, old >> 16, new >> 16)
    return checksum_update(hc, old & 0xFFFF, new & 0xFFFF)


@dataclass(frozen=True)
class FlowSpec:
    """One Flow Spec of a QoS Probe (§5.3.2) with its S bit (True = I flow)."""

    src_addr: int
    dst_addr: int
    src_port: int
    dst_port: int
    protocol: int
    intelligible: bool

    def pack(self) -> bytes:
        check_int("src_addr", self.src_addr, 0, MASK32)
        check_int("dst_addr", self.dst_addr, 0, MASK32)
        check_int("src_port", self.src_port, 0, 0xFFFF)
        check_int("dst_port", self.dst_port, 0, 0xFFFF)
        check_int("protocol", self.protocol, 0, 0xFF)
        flags = FLOW_SPEC_S_BIT if self.intelligible else 0
        return struct.pack("!IIHHBBH", self.src_addr, self.dst_addr, self.src_port,
                           self.dst_port, self.protocol, flags, 0)

    @classmethod
    def unpack(cls, data: bytes) -> FlowSpec:
        if len(data) != FLOW_SPEC_BYTES:
            raise ValueError(f"a flow spec is {FLOW_SPEC_BYTES} bytes, got {len(data)}")
        src, dst, sport, dport, proto, flags, _ = struct.unpack("!IIHHBBH", data)
        return cls(src, dst, sport, dport, proto, bool(flags & FLOW_SPEC_S_BIT))

    def slot(self, table_slots: int) -> int:
        return flow_hash(self.src_addr, self.dst_addr, self.protocol, self.src_port,
                         self.dst_port) & (table_slots - 1)


@dataclass(frozen=True)
class BfdMessage:
    """A QoS Probe (type 20) or Report (type 21), Fig. 8; fs fields in the data
    plane's rate unit (bytes per K * 2^RATE_FRAC_BITS, K domain-wide)."""

    icmp_type: int
    identifier: int          # the ingress router's output port (§5.3.1)
    sequence: int
    fs_u: int                # Path Minimum Fairshare (U Flows): alpha_min
    fs_i: int                # Path Minimum Fairshare (I Flows): alpha'_min
    specs: tuple[FlowSpec, ...] = ()
    code: int = CODE_BANDWIDTH

    def pack(self) -> bytes:
        if self.icmp_type not in (ICMP_QOS_PROBE, ICMP_QOS_REPORT):
            raise ValueError(f"icmp_type must be 20 or 21, got {self.icmp_type!r}")
        if self.icmp_type == ICMP_QOS_REPORT and self.specs:
            raise ValueError("a QoS Report carries no flow specs (Fig. 8b)")
        check_int("code", self.code, 0, 0xFF)
        check_int("identifier", self.identifier, 0, 0xFFFF)
        check_int("sequence", self.sequence, 0, 0xFFFF)
        check_int("fs_u", self.fs_u, 0, MASK32)
        check_int("fs_i", self.fs_i, 0, MASK32)
        body = struct.pack("!HHII", self.identifier, self.sequence, self.fs_u, self.fs_i) \
            + b"".join(s.pack() for s in self.specs)
        unsummed = struct.pack("!BBH", self.icmp_type, self.code, 0) + body
        return struct.pack("!BBH", self.icmp_type, self.code,
                           internet_checksum(unsummed)) + body

    @classmethod
    def unpack(cls, data: bytes, *, verify: bool = True) -> BfdMessage:
        if not isinstance(data, (bytes, bytearray)) or len(data) < BFD_HEADER_BYTES:
            raise ValueError(f"data must be >= {BFD_HEADER_BYTES} bytes, got {data!r}")
        typ, code, _csum, ident, seq, fs_u, fs_i = struct.unpack("!BBHHHII",
                                                                 data[:BFD_HEADER_BYTES])
        if typ not in (ICMP_QOS_PROBE, ICMP_QOS_REPORT):
            raise ValueError(f"ICMP type {typ} is not a QoS Probe (20) or Report (21)")
        rest = data[BFD_HEADER_BYTES:]
        if len(rest) % FLOW_SPEC_BYTES or (typ == ICMP_QOS_REPORT and rest):
            raise ValueError(f"bad payload length {len(rest)} for ICMP type {typ}")
        if verify and internet_checksum(data) != 0:
            raise ValueError("ICMP checksum is wrong")
        specs = tuple(FlowSpec.unpack(rest[i:i + FLOW_SPEC_BYTES])
                      for i in range(0, len(rest), FLOW_SPEC_BYTES))
        return cls(typ, ident, seq, fs_u, fs_i, specs, code)


def lower_probe(data: bytes, local_u: int, local_i: int) -> bytes:
    """A router's in-place update of a QoS Probe (eqs. 25-26), with the RFC 1624
    checksum update of the changed fields, as the P4 does it (it does not parse
    the flow specs for the checksum)."""
    if len(data) < BFD_HEADER_BYTES or data[0] != ICMP_QOS_PROBE:
        raise ValueError("data is not a QoS Probe")
    csum, = struct.unpack("!H", data[2:4])
    fs_u, fs_i = struct.unpack("!II", data[8:16])
    new_u, new_i = path_min_update(fs_u, fs_i, local_u, local_i)
    csum = checksum_update32(checksum_update32(csum, fs_u, new_u), fs_i, new_i)
    return data[:2] + struct.pack("!H", csum) + data[4:8] + struct.pack("!II", new_u, new_i) \
        + data[16:]


def report_for(probe: bytes) -> bytes:
    """The egress edge's answer (§5.3.3): one Report with the probe's identifier,
    sequence and path minima; the flow specs are not returned."""
    msg = BfdMessage.unpack(probe)
    if msg.icmp_type != ICMP_QOS_PROBE:
        raise ValueError("only a QoS Probe is answered")
    return BfdMessage(ICMP_QOS_REPORT, msg.identifier, msg.sequence, msg.fs_u, msg.fs_i).pack()


# ---------------------------------------------------------------- reference model
@dataclass
class FlowSlot:
    """Per-slot registers (upta.p4)."""

    rate_scaled: int = 0      # upta_rate, bit<32>
    last_us: int = 0          # upta_last_us, bit<48>
    state: int = STATE_U      # upta_state, bit<1>; 0 = new or U
    signature: int = 0        # upta_sig, bit<32>: the full crc32 of the last flow seen


@dataclass(frozen=True)
class Outcome:
    decision: str                 # ADMIT, UPTA_USELESS, UPTA_FAIR_SHARE, QUEUE_LIMIT
    q16_out: int | None           # P-UPTA: the rewritten option value, else None
    collision: bool


# The action's parameters and their bit widths (docs/upta-plan.md §1.8).
PARAM_BITS: dict[str, int] = {
    "upta_mode": 8, "k_shift": 8, "slot_mask": 32, "fs_i_scaled": 32, "fs_u_scaled": 32,
    "inv_fs_i_mant": 32, "inv_fs_i_shift": 8, "inv_fs_u_mant": 32, "inv_fs_u_shift": 8,
    "tagged_q16": 16, "queue_limit_pkts": 32,
}
REQUIRED_PARAMS = tuple(PARAM_BITS)


def action_params(mode: int, fs_i_bps: float, fs_u_bps: float, *, table_slots: int = 1024,
                  k_shift: int = DEFAULT_K_SHIFT, tagged_q: float = 1.0,
                  queue_limit_pkts: int = PAPER_BUFFER_PKTS) -> dict[str, int]:
    """The ``upta`` port_policy action's parameters (docs/upta-plan.md).
    fs_*_bps: the local fair shares (eqs. 18-19) in bit/s, math.inf for none;
    tagged_q: the loss threshold of tagged packets that carry no option (1: none)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    slots = check_int("table_slots", table_slots, 1, UPTA_SLOTS_PER_PORT)
    if slots & (slots - 1):
        raise ValueError(f"table_slots must be a power of two, got {slots}")
    shares = share_params(fs_to_scaled(fs_i_bps, k_shift), fs_to_scaled(fs_u_bps, k_shift))
    tq = encode_q(tagged_q)
    return {"upta_mode": mode, "k_shift": k_shift, "slot_mask": slots - 1, **shares,
            "tagged_q16": tq,
            "queue_limit_pkts": check_int("queue_limit_pkts", queue_limit_pkts, 0, MASK32)}


class UptaPortModel:
    """Reference model of one egress port under the ``upta`` action
    (docs/upta-plan.md "Per packet"), bit-exact with upta.p4.

    arrive() takes the packet's crc32 of the 5-tuple (the slot is its low bits),
    IP length, arrival time, its P-UPTA option value (None: no option), whether
    the classifier tagged it (multimedia DSCP), whether it came in on an edge
    (host-facing) port, the path minima BFD reported for its path (C-UPTA) and
    the queue occupancy. The loss threshold is the option's, else tagged_q16
    for tagged packets, else none (Q_FIELD_MAX: never U). In mode C only
    packets from an edge port can make a flow U, and they are tested against
    min(local, path) shares; packets from domain ports get fair-share drops only
    (the core runs the fair scheduler, not UPTA, §5.2). Slots with last_us 0
    count as never seen (registers power up at 0, timestamps start at 0 with the
    switch). rand_source() plays random(0, 2^16 - 1) and is called only for an
    I flow's probabilistic drop test.
    """

    def __init__(self, params: Mapping[str, int], rand_source: Callable[[], int]) -> None:
        self.params: dict[str, int] = {}
        self.set_policy(params)
        self.rand_source = rand_source
        self.slots: dict[int, FlowSlot] = {}
        self.events: dict[str, int] = {}

    def set_policy(self, params: Mapping[str, int]) -> None:
        """The controller modifies the port_policy entry (registers untouched)."""
        missing = [k for k in REQUIRED_PARAMS if k not in params]
        if missing:
            raise ValueError(f"params lacks {missing}")
        for name, bits in PARAM_BITS.items():
            check_int(f"params[{name!r}]", params[name], 0, (1 << bits) - 1)
        if params["upta_mode"] not in MODES:
            raise ValueError(f"params['upta_mode'] must be one of {MODES}")
        check_int("params['k_shift']", params["k_shift"], 0, MAX_K_SHIFT)
        mask = params["slot_mask"]
        if mask & (mask + 1) or mask >= UPTA_SLOTS_PER_PORT:
            raise ValueError(f"params['slot_mask'] must be 2^k - 1 < {UPTA_SLOTS_PER_PORT}, "
                             f"got {mask}")
        self.params = dict(params)

    def _count(self, name: str) -> None:
        assert name in EVENTS, name
        self.events[name] = self.events.get(name, 0) + 1

    def shares(self, path: tuple[int, int] | None = None) -> tuple[int, int]:
        """(fs_I, fs_U): the local shares, or with path = (alpha_min, alpha'_min) of a
        report the lower of each (eqs. 23-24 include this router; the report may be
        up to one probe interval old)."""
        fs_i, fs_u = self.params["fs_i_scaled"], self.params["fs_u_scaled"]
        if path is not None:
            path_u, path_i = path
            fs_i, fs_u = min(fs_i, path_i), min(fs_u, path_u)
        return fs_i, fs_u

    def arrive(self, flow_hash_value: int, length_bytes: int, now_us: int, *,
               option_q16: int | None = None, tagged: bool = False,
               from_edge_port: bool = True, path: tuple[int, int] | None = None,
               queue_pkts: int = 0) -> Outcome:
        check_int("flow_hash_value", flow_hash_value, 0, MASK32)
        check_int("length_bytes", length_bytes, 0, 0xFFFF)
        check_int("now_us", now_us, 0, (1 << 48) - 1)
        check_int("queue_pkts", queue_pkts, 0, MASK32)
        if option_q16 is not None:
            check_int("option_q16", option_q16, 0, Q_FIELD_MAX)
        if path is not None:
            check_int("path[0]", path[0], 0, MASK32)
            check_int("path[1]", path[1], 0, MASK32)
        p = self.params
        mode = p["upta_mode"]
        index = flow_hash_value & p["slot_mask"]
        slot = self.slots.setdefault(index, FlowSlot())
        k = p["k_shift"]
        dt = (now_us - slot.last_us) & ((1 << 48) - 1)
        fresh = slot.last_us != 0 and dt < 1 << k
        collision = fresh and slot.signature != flow_hash_value
        if collision:
            self._count("FLOW_COLLISION")
        if slot.last_us == 0:
            dt = 1 << k                      # never seen: restart the estimate
        slot.rate_scaled = rate_step_fixed(slot.rate_scaled, length_bytes, dt, k)
        slot.last_us = now_us
        slot.signature = flow_hash_value
        rate = slot.rate_scaled
        if option_q16 is not None:
            q16 = option_q16
        else:
            q16 = p["tagged_q16"] if tagged else Q_FIELD_MAX
        edge = mode == MODE_C and from_edge_port
        if mode == MODE_C and not from_edge_port:
            q16 = Q_FIELD_MAX                # the core never makes a flow U (§5.2)
        fs_i, fs_u = self.shares(path if edge else None)
        out_q: int | None = None
        if slot.state == STATE_I:
            fs = fs_i
            if q16 != Q_FIELD_MAX and exceeds_fixed(rate, fs, q16):
                slot.state = STATE_U
                self._count("I_TO_U")
                return Outcome(UPTA_USELESS, None, collision)
            if exceeds_fixed(rate, fs, self.rand_source()):
                return Outcome(UPTA_FAIR_SHARE, None, collision)
            mant, shift = p["inv_fs_i_mant"], p["inv_fs_i_shift"]
        else:
            fs = fs_u
            if q16 != Q_FIELD_MAX and exceeds_fixed(rate, fs, q16):
                return Outcome(UPTA_USELESS, None, collision)
            slot.state = STATE_I
            mant, shift = p["inv_fs_u_mant"], p["inv_fs_u_shift"]
        if queue_pkts >= p["queue_limit_pkts"]:
            return Outcome(QUEUE_LIMIT, None, collision)
        if mode == MODE_P and option_q16 is not None and option_q16 != Q_FIELD_MAX:
            # 0xFFFF ("no threshold") stays: lowering it would create a threshold
            out_q = threshold_update_fixed(option_q16, rate, fs, mant, shift)
        return Outcome(ADMIT, out_q, collision)

    def lower_probe(self, probe: bytes) -> bytes:
        """A probe leaving through this port: eqs. 25-26 with the local shares. The
        ingress's own probe starts at FS_INFINITE, so this also sets it to the local
        shares (§5.3.2)."""
        self._count("PROBE_LOWERED")
        return lower_probe(probe, self.params["fs_u_scaled"], self.params["fs_i_scaled"])


class BfdEndpoint:
    """A switch's BFD state (planned registers upta_probe_seq, upta_path_fs_u,
    upta_path_fs_i, indexed by path id = the messages' Identifier, < BFD_PATHS).

    As ingress edge: the controller's probe for a path goes out with a sequence
    number, which is remembered. A report sets the path's minima only if it came
    in on a domain port, has a correct checksum and length, and answers that
    path's last probe; otherwise it is ignored and counted (a spoofed report).
    As egress edge: a probe addressed to this switch from a domain port is turned
    into exactly one report; from an edge port it is dropped and counted.
    """

    def __init__(self, paths: int = 64) -> None:
        self.paths = check_int("paths", paths, 1, 1 << 16)
        self.probe_seq: dict[int, int] = {}
        self.path_fs: dict[int, tuple[int, int]] = {}
        self.events: dict[str, int] = {}

    def _count(self, name: str) -> None:
        assert name in EVENTS, name
        self.events[name] = self.events.get(name, 0) + 1

    def probe_template(self, path_id: int, sequence: int,
                       specs: Sequence[FlowSpec] = ()) -> bytes:
        """The controller's packet-out: fields FS_INFINITE, to be lowered by the
        first port (the ingress's own shares)."""
        check_int("path_id", path_id, 0, self.paths - 1)
        self.probe_seq[path_id] = check_int("sequence", sequence, 0, 0xFFFF)
        self._count("PROBE_SENT")
        return BfdMessage(ICMP_QOS_PROBE, path_id, sequence, FS_INFINITE, FS_INFINITE,
                          tuple(specs)).pack()

    def path_shares(self, path_id: int) -> tuple[int, int] | None:
        """(alpha_min, alpha'_min) of the path's last accepted report, or None."""
        return self.path_fs.get(check_int("path_id", path_id, 0, self.paths - 1))

    def answer_probe(self, probe: bytes, *, from_edge_port: bool) -> bytes | None:
        """Egress edge: at most one packet back, never for a report or from outside."""
        if from_edge_port:
            self._count("PROBE_FROM_EDGE")
            return None
        try:
            report = report_for(probe)
        except ValueError:
            self._count("PROBE_MALFORMED")
            return None
        self._count("PROBE_ANSWERED")
        return report

    def accept_report(self, report: bytes, *, from_edge_port: bool) -> bool:
        if from_edge_port:
            self._count("REPORT_FROM_EDGE")
            return False
        try:
            msg = BfdMessage.unpack(report)
        except ValueError:
            self._count("REPORT_MALFORMED")
            return False
        if msg.icmp_type != ICMP_QOS_REPORT or msg.identifier >= self.paths \
                or self.probe_seq.get(msg.identifier) != msg.sequence:
            self._count("REPORT_STALE")
            return False
        self.path_fs[msg.identifier] = (msg.fs_u, msg.fs_i)
        self._count("REPORT_ACCEPTED")
        return True


# ---------------------------------------------------------------- float reference flow
@dataclass
class FloatFlow:
    """The paper's form of one flow at one router: estimator and Fig. 7 in floats."""

    rate: float = 0.0
    last_t: float | None = None
    state: int = STATE_U
    history: list[Decision] = field(default_factory=list)

    def arrive(self, length: float, t: float, fs_i: float, fs_u: float, q: float, u: float,
               k: float) -> Decision:
        if self.last_t is None:           # first packet: l / K, as the data plane restarts
            self.rate = _nonneg("length", length) / _positive("k", k)
        else:
            self.rate = estimate_rate(self.rate, length, _nonneg("t - last_t", t - self.last_t), k)
        self.last_t = t
        d = fig7_decide(self.state, self.rate, fs_i, fs_u, q, u)
        self.state = d.state
        self.history.append(d)
        return d


# ------------------------------------------------------------------ the plug-in
class Upta(Algorithm):
    """UPTA (Wu & Hassan 2002): per-flow rate estimates against the port's fair
    shares, which the controller computes (eqs. 18-19) and writes into the action;
    until then there is none (nothing is dropped for fairness)."""

    name: ClassVar[str] = "UPTA"
    p4_action: ClassVar[str] = "upta"
    summary: ClassVar[str] = "Useless Packet Transmission Avoidance, modes B, P, C (upta Fig. 7, §4, §5)"
    doc_page: ClassVar[str] = "docs/algorithms/upta.md"
    params: ClassVar[tuple[Param, ...]] = (
        Param("upta_mode", "choice", "", "B: every router decides alone; P: the loss "
              "threshold travels in an IPv4 option, rewritten per eq. 17; C: the ingress edge "
              "decides with the path minima BFD discovers", "B", choices=tuple(MODE_NAMES)),
        Param("upta_flow_slots", "int", "slots", "per-flow slots of the port; flows that hash "
              "to one slot share its state", UPTA_SLOTS_PER_PORT, lo=1, hi=UPTA_SLOTS_PER_PORT,
              power_of_two=True, note="UPTA_SLOTS_PER_PORT slots per port (defines.p4)"),
        Param("upta_k_shift", "int", "", "the rate estimator's K = 2^k microseconds (2^17 us = "
              "131 ms, CSFQ's 100 ms to the nearest power of two)", DEFAULT_K_SHIFT, lo=0,
              hi=MAX_K_SHIFT),
        Param("upta_tagged_loss_threshold", "number", "", "loss threshold q of tagged packets "
              "that carry no UPTA option (the paper's video: 0.12); absent: never made U",
              lo=0, hi=1),
        Param("capacity_mbps", "number", "Mbit/s", "C of eqs. 18-19, the port's link rate: "
              "the controller's fair-share loop runs every T = K; absent: no loop, the "
              "shares stay none", gt=0),
    )

    def action_params(self, policy: PortPolicy, inputs: PortInputs,
                      policy_epoch: int) -> dict[str, int]:
        s = policy.settings
        fs_i, fs_u = inputs.upta_shares_bps if inputs.upta_shares_bps is not None \
            else (math.inf, math.inf)
        q = s["upta_tagged_loss_threshold"]
        return {"policy_epoch": policy_epoch,
                **action_params(MODE_NAMES[s["upta_mode"]], fs_i, fs_u,
                                table_slots=s["upta_flow_slots"], k_shift=s["upta_k_shift"],
                                tagged_q=1.0 if q is None else q,
                                queue_limit_pkts=policy.queue_limit_pkts)}

    def fair_share_loop(self, policy: PortPolicy) -> Any:
        """The fair-share loop's settings of the port (upta_control.PortSettings), or
        None without capacity_mbps."""
        from . import upta_control
        s = policy.settings
        if s["capacity_mbps"] is None:
            return None
        q = s["upta_tagged_loss_threshold"]
        return upta_control.PortSettings(capacity_bps=s["capacity_mbps"] * 1e6,
                                         mode=MODE_NAMES[s["upta_mode"]],
                                         table_slots=s["upta_flow_slots"],
                                         k_shift=s["upta_k_shift"],
                                         tagged_q=1.0 if q is None else q,
                                         queue_limit_pkts=policy.queue_limit_pkts)

    def probes_bfd_paths(self, policy: PortPolicy) -> bool:
        return policy.settings["upta_mode"] == "C"        # C-UPTA (upta §5.3)


PLUGIN = Upta()
