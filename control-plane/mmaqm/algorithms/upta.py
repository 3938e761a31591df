"""Useless Packet Transmission Avoidance (UPTA) and Bottleneck Fairshare
Discovery (BFD): Wu & Hassan 2002, upta §3-5, Fig. 7, Fig. 8 (design:
docs/upta-plan.md). Registered as ``UPTA`` in ``algorithms.ALGORITHMS``: the
data plane is p4src/v1model/upta.p4 (action ``upta`` of port_policy).

What the controller computes, in the paper's form (floats) and in the data
plane's units (fixed point):

  * arrival-rate estimator: upta §5.3.3 names its parameter K and defers the
    estimator to the authors' ref. [16], whose text we do not have; we take
    core-stateless fair queueing's exponential average (CSFQ, upta's [14],
    Stoica et al. 1998 eq. 3), which has exactly one constant K:
        r_new = (1 - e^(-dt/K)) l/dt + e^(-dt/K) r_old;
    data plane: its first-order form with K = 2^k us and the rate in bytes
    per K, so no division and no exponential; here K and the rate unit
    (``k_us``, ``bps_to_rate_scaled``);
  * P-UPTA threshold update q_k = (q_{k-1} - p_{k-1}) / (1 - p_{k-1}) (eq. 17),
    which with p = 1 - fs/rate is 1 - q_k = (1 - q_{k-1}) rate/fs; the data
    plane multiplies by a controller-supplied reciprocal of fs (``reciprocal``);
    the option's encoding (``encode_q``, ``option_bytes``);
  * fair shares alpha (eq. 18) and alpha' (eq. 19) as Fig. 7 counts N, S, M;
    the measured TCP gain rho (eq. 20);
  * the ``upta`` action's parameters and the plug-in;
  * ``shared_slot_flows`` (from fred): flows that share a slot, to report.

The BFD wire format (Fig. 8) is :mod:`mmaqm.algorithms.bfd_codec`. The test
oracle (oracle/, never imported here) holds the paper's float forms and theory
(mmaqm_oracle.upta_theory: eqs. 5-6, Fig. 7's drop_prob = max(0, 1 - fs/rate)
and I/U rules, eqs. 21-26) and the bit-exact models of upta.p4
(mmaqm_oracle.upta_model: ``UptaPortModel``, ``BfdEndpoint``, the probe
rewrite, ``FloatFlow``).

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from .. import p4constants as C
from .. import validation as V
from ..fixedpoint import MASK32, check_int
from .base import Algorithm, LpfAverage, Param, PortInputs, PortPolicy
# The same crc32 of the 5-tuple (flow_report.p4's field list) and slot sharing as FRED.
# (re-exported: upta.flow_hash, upta.shared_slot_flows)
from .fred import flow_hash, shared_slot_flows  # noqa: F401

# ---------------------------------------------------------------- constants
PAPER_LOSS_THRESHOLD = 0.12       # the MPEG-2 video's q_0 (upta §2, §7)
PAPER_BUFFER_PKTS = 100           # every router (upta §6)
# CSFQ's K (Stoica et al. 1998 use 100 ms); upta gives no value of K, it sets
# the probe interval T = K (§5.3.3). The data plane needs K = 2^k us:
DEFAULT_K_SHIFT = 17              # 2^17 us = 131.072 ms, the power of two nearest 100 ms
MAX_K_SHIFT = 24                  # 16.8 s

# Data plane widths (docs/upta-plan.md).
RATE_FRAC_BITS: int = C.UPTA_RATE_FRAC_BITS  # rate registers: bytes per K * 2^4, bit<32>
Q16_ONE: int = C.UPTA_Q16_ONE     # loss thresholds and random draws: [0, 1) * 2^16
Q_FIELD_MAX: int = C.UPTA_Q_NONE         # the option's bit<16> value; q = 1 is not representable
RECIP_MANT_BITS = 32
FS_INFINITE = MASK32              # "no constraint": N - S - M = 0, or no report yet

# Per flow slot (each port owns UPTA_SLOTS_PER_PORT of them, index port *
# UPTA_SLOTS_PER_PORT + slot) and per BFD path (identifier) of the switch.
UPTA_SLOTS_PER_PORT: int = C.UPTA_SLOTS_PER_PORT
BFD_PATHS: int = C.BFD_PATHS

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

# P-UPTA's field: an IPv4 option (RFC 791), type 0x9E = copied 1, class 0,
# number 30 (RFC 4727's experimental option number), length 4, then q in Q16.
OPTION_TYPE: int = C.UPTA_OPTION_TYPE
OPTION_LEN: int = C.UPTA_OPTION_LEN


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


# ---------------------------------------------------------------- rate estimator
def k_us(k_shift: int) -> int:
    """K in microseconds: 2^k_shift."""
    return 1 << check_int("k_shift", k_shift, 0, MAX_K_SHIFT)


def bps_to_rate_scaled(bits_per_s: float, k_shift: int = DEFAULT_K_SHIFT) -> int:
    """bit/s -> bytes per K * 2^RATE_FRAC_BITS (rounded), the data plane's rate unit."""
    bps = _nonneg("bits_per_s", bits_per_s)
    value = round(bps / 8 * k_us(k_shift) / 1e6 * (1 << RATE_FRAC_BITS))
    if value > MASK32:
        raise ValueError(f"{bits_per_s!r} bit/s does not fit bit<32> at k_shift {k_shift}")
    return value


def max_capacity_mbps(k_shift: int = DEFAULT_K_SHIFT) -> float:
    """The largest link rate C (Mbit/s) whose fair shares fit the data plane's
    bit<32> rate at K = 2^k_shift us (a share is at most C, eqs. 18-19)."""
    return rate_scaled_to_bps(MASK32, k_shift) / 1e6


def rate_scaled_to_bps(rate_scaled: int, k_shift: int = DEFAULT_K_SHIFT) -> float:
    check_int("rate_scaled", rate_scaled, 0, MASK32)
    return rate_scaled / (1 << RATE_FRAC_BITS) * 8 * 1e6 / k_us(k_shift)



# ---------------------------------------------------------------- P-UPTA (eq. 17)
def threshold_update(q: float, p: float) -> float:
    """q_k = (q_{k-1} - p_{k-1}) / (1 - p_{k-1}) (eq. 17). Negative when p > q: the
    router should already have dropped the packet (Fig. 4); 1 - p must be > 0."""
    qq = _prob("q", q)
    pp = _prob("p", p, closed=False)
    return (qq - pp) / (1 - pp)


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


def improvement_measured(tau: float, tau_prime: float) -> float:
    """rho = tau'/tau - 1 (§5.1, the first line of eq. 20)."""
    return _nonneg("tau_prime", tau_prime) / _positive("tau", tau) - 1




# ---------------------------------------------------------------- action parameters
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



# ------------------------------------------------------------------ the plug-in
def _tagged_q(settings: Mapping[str, Any]) -> float:
    """The loss threshold of tagged packets without an option; 1 (never U) when unset."""
    q = settings["upta_tagged_loss_threshold"]
    return 1.0 if q is None else q


class Upta(Algorithm):
    """UPTA (Wu & Hassan 2002): per-flow rate estimates against the port's fair
    shares, which the controller computes (eqs. 18-19) and writes into the action;
    until then there is none (nothing is dropped for fairness)."""

    name: ClassVar[str] = "UPTA"
    p4_action: ClassVar[str] = "upta"
    summary: ClassVar[str] = "Useless Packet Transmission Avoidance, modes B, P, C (upta Fig. 7, §4, §5)"
    doc_page: ClassVar[str] = "docs/algorithms/upta.md"
    # each flow slot's rate estimate E (upta_tna.p4 upta_rate), a rate-mode filter
    # with time constant K = 2^k_shift us
    lpf_averages: ClassVar[tuple[LpfAverage, ...]] = (
        LpfAverage("upta_rate", index="slot", rate_k_shift_param="k_shift"),)
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
              "shares stay none; below 2^32 * 2^-4 bytes per K (16383.999 at the default "
              "upta_k_shift 17, 127.999 at 24): the shares are bit<32>", gt=0),
    )

    def check(self, values: dict[str, Any], given: frozenset[str], queue_limit_pkts: int | None,
              path: str, errs: V.Errors) -> None:
        """C's fair shares (<= C) fit the bit<32> rate in bytes per K (eqs. 18-19)."""
        capacity, k_shift = values["capacity_mbps"], values["upta_k_shift"]
        if capacity is None or k_shift is None:
            return
        try:
            bps_to_rate_scaled(capacity * 1e6, k_shift)
        except (ValueError, OverflowError):
            errs.add(V.join(path, "capacity_mbps"),
                     f"must be <= {V.fmt(math.floor(max_capacity_mbps(k_shift) * 1e3) / 1e3)} "
                     f"at upta_k_shift {k_shift} "
                     f"(a fair share is bytes per 2^k us * 2^{RATE_FRAC_BITS} in bit<32>), "
                     f"got {V.fmt(capacity)}")

    def action_params(self, policy: PortPolicy, inputs: PortInputs,
                      policy_epoch: int) -> dict[str, int]:
        s = policy.settings
        fs_i, fs_u = inputs.upta_shares_bps if inputs.upta_shares_bps is not None \
            else (math.inf, math.inf)
        return {"policy_epoch": policy_epoch,
                **action_params(MODE_NAMES[s["upta_mode"]], fs_i, fs_u,
                                table_slots=s["upta_flow_slots"], k_shift=s["upta_k_shift"],
                                tagged_q=_tagged_q(s),
                                queue_limit_pkts=policy.queue_limit_pkts)}

    def fair_share_loop(self, policy: PortPolicy) -> Any:
        """The fair-share loop's settings of the port (upta_control.PortSettings), or
        None without capacity_mbps."""
        from . import upta_control
        s = policy.settings
        if s["capacity_mbps"] is None:
            return None
        return upta_control.PortSettings(capacity_bps=s["capacity_mbps"] * 1e6,
                                         mode=MODE_NAMES[s["upta_mode"]],
                                         table_slots=s["upta_flow_slots"],
                                         k_shift=s["upta_k_shift"],
                                         tagged_q=_tagged_q(s),
                                         queue_limit_pkts=policy.queue_limit_pkts)

    def switch_loop(self, host: Any, switch: Any) -> Any:
        """UptaLoop (the fair-share intervals, eqs. 18-19, and C-UPTA's probes) for a
        switch with BFD settings or an upta port with capacity_mbps (a switch with
        BFD settings but no upta port, e.g. an egress edge, runs it for its BFD
        event log only)."""
        from . import upta_control
        from .upta_loop import UptaLoop
        if switch.bfd is None and not any(p.plugin.fair_share_loop(p) is not None
                                          for p in switch.policies.values()):
            return None
        bfd = switch.bfd
        c_ports = {port for port, p in switch.policies.items() if p.plugin.probes_bfd_paths(p)}
        # C-UPTA ingress edge: probes on the paths that leave through a mode-C port
        paths = [] if bfd is None else [upta_control.BfdPath(p.path_id, p.port, p.egress_addr)
                                        for p in bfd.paths if p.port in c_ports]
        return UptaLoop(host, router_addr=None if bfd is None else bfd.router_addr,
                        bfd_paths=paths)

    def probes_bfd_paths(self, policy: PortPolicy) -> bool:
        return policy.settings["upta_mode"] == "C"        # C-UPTA (upta §5.3)


PLUGIN = Upta()
