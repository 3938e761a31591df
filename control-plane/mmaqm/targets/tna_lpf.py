"""The time constants of a Tofino build's averages (TNA ``Lpf`` filters), from a
port's policy: which filter entries a policy needs and what to write in them.

A TNA build keeps each average that v1model computes as a per-packet EWMA
(avg += (q - avg) w, w = 2^-k) in an ``Lpf`` extern, a low-pass filter in time:
y += (x - y)(1 - e^(-dt/tau)). Its settings (mode, time constants) are BfRt
table entries, not in the P4Info: Stratum's P4Runtime server cannot write them,
the controller writes them over BfRt (p4rt.bfrt). Which averages an algorithm
has, and what sets their time constant, its plug-in declares
(``Algorithm.lpf_averages``):

* sample mode, weight w = 2^-k a packet: tau = -s / ln(1 - w)
  (``tna.lpf_time_constant_ns``), s the port's packet time, 1 / bandwidth_pps
  of the policy (F&J §11's s: tc-red's avpkt / bandwidth). Without
  bandwidth_pps the policy cannot be held: refused before any write;
* rate mode (UPTA's rate estimate E): tau = K = 2^k_shift us.

Both time constants (gain and decay) are the same tau: the EWMA weighs a
rising and a falling sample alike. The output scale-down factor is 0 (none).
Pure functions; the controller calls them before it contacts the switch.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from .. import p4constants as C
from ..algorithms.base import LpfAverage, PortPolicy
from ..encoding import PolicyAction
from .base import TargetRefusal

NS_PER_S = 1e9
NS_PER_US = 1000
# The BfRt data fields of an Lpf table are 32-bit floats (bfruntime.proto DataField
# float_val): a time constant must be finite there.
FLOAT32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
LPF_OUT_SCALE_DOWN = 0


class LpfRefusal(TargetRefusal):
    """A policy whose averages a Tofino build cannot be given (no packet rate, a
    time constant out of range): found before the switch is contacted."""


@dataclass(frozen=True)
class LpfSpec:
    """One Lpf entry: filter instance `lpf` at `index`, rate or sample mode, its
    gain and decay time constant (ns), its output scale-down factor."""

    lpf: str
    index: int
    rate_mode: bool
    time_constant_ns: float
    out_scale_down: int = LPF_OUT_SCALE_DOWN


def packet_time_ns(policy: PortPolicy) -> float | None:
    """The port's packet time s (ns) from the policy's bandwidth_pps, or None."""
    bandwidth_pps = policy.settings.get("bandwidth_pps")
    return None if bandwidth_pps is None else NS_PER_S / bandwidth_pps


def _indexes(average: LpfAverage, port: int, action: PolicyAction,
             slots_per_port: int) -> list[int]:
    if average.index == "port":
        return [port]
    if average.index == "class":
        return [port * C.CLASS_SLOTS + c for c in average.classes]
    # every flow slot the policy uses (slot = hash & slot_mask)
    return [port * slots_per_port + slot for slot in range(action.params["slot_mask"] + 1)]


def lpf_specs(port: int, policy: PortPolicy, action: PolicyAction,
              slots_per_port: int) -> list[LpfSpec]:
    """Every Lpf entry the port's policy needs (none for an algorithm without
    averages); action: its port_policy action (the shifts); slots_per_port: the
    build's flow slots a port (UPTA). LpfRefusal when they cannot be set."""
    from .tna import check_lpf_filter, lpf_filters

    specs: list[LpfSpec] = []
    # the filters' time constants as the early check saw them (Tna.check_policy)
    filters = lpf_filters(policy, action)
    for average, f in zip(policy.plugin.lpf_averages, filters, strict=True):
        rate_mode = f.ewma_shift is None
        if f.tau_ns is None:
            raise LpfRefusal(
                f"{policy.algorithm}'s average {average.lpf} is a Tofino Lpf filter whose "
                f"time constant tau = -s / ln(1 - w) needs the port's packet time s: set "
                f"bandwidth_pps (packets/s: the link rate / the mean packet size, "
                f"tc-red's bandwidth / avpkt)")
        if not (math.isfinite(f.tau_ns) and 0 < f.tau_ns <= FLOAT32_MAX):
            raise LpfRefusal(f"{policy.algorithm}'s average {average.lpf}: time constant "
                             f"{f.tau_ns:g} ns is not a positive 32-bit float")
        try:
            check_lpf_filter(port, f)
        except TargetRefusal as refusal:
            raise LpfRefusal(str(refusal)) from None
        specs += [LpfSpec(average.lpf, index, rate_mode, f.tau_ns)
                  for index in _indexes(average, port, action, slots_per_port)]
    return specs


def lpf_spec_holds(desired: LpfSpec, held: LpfSpec) -> bool:
    """Whether the entry read back from the switch (held) is the one written
    (desired): the same filter, index, mode and scale-down, and the time constant
    within the hardware's resolution. BfRt carries it as a 32-bit float, and the
    driver keeps tau as 2^e (1 + m / 2^9) (tna.LPF_MANTISSA_BITS): a server that
    answers from the hardware's encoding gives back tau to within 2^-9, which
    is not a change."""
    from .tna import LPF_MANTISSA_BITS

    return (desired.lpf == held.lpf and desired.index == held.index
            and desired.rate_mode == held.rate_mode
            and desired.out_scale_down == held.out_scale_down
            and math.isclose(desired.time_constant_ns, held.time_constant_ns,
                             rel_tol=2.0 ** -LPF_MANTISSA_BITS))
