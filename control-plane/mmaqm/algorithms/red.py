"""RED (Floyd & Jacobson 1993; docs/design.md §2 RED card; cbt §2.1) and its options.

  avg < min_th            : enqueue
  min_th <= avg < max_th  : p_b = max_p * (avg - min_th) / (max_th - min_th),
                            p_a = p_b / (1 - count * p_b)
                            (option wait, ns-2 wait_: 0 while count * p_b < 1,
                            then p_b / (2 - count * p_b))
  avg >= max_th           : forced drop

The data plane works on packets * 2^AVG_FRAC_BITS and gets p_b from one
multiply by red_slope_q24 (red.p4); the float functions here are the paper's
formulas, for checking the fixed-point model against.
"""

from __future__ import annotations

import math

from collections.abc import Mapping
from typing import Any, ClassVar

from .. import p4constants as C
from .. import validation as V
from ..fixedpoint import MASK32, PROB_ONE, ewma_shift_from_weight, red_slope_q24, to_scaled
from .base import (MAX_QUEUE_LIMIT_PKTS, REQUIRED, Algorithm, LpfAverage, Param, PortInputs,
                   PortPolicy)

SLOPE_ONE = 1 << 24          # SLOPE_FRAC_BITS
Q32_ONE = 1 << 32
MAX_TC_WLOG = 31             # tc_red_eval_ewma tries W = 2^-1 .. 2^-31
DEFAULT_EWMA_WEIGHT = 2.0**-9   # cbt §2.1 "typical weighting of 1/512"


def thresholds_scaled(min_th_pkts: float, max_th_pkts: float) -> tuple[int, int]:
    """(min_th_scaled, max_th_scaled), packets * 2^AVG_FRAC_BITS."""
    return to_scaled(min_th_pkts), to_scaled(max_th_pkts)


def action_params(min_th_pkts: float, max_th_pkts: float, max_p: float) -> dict[str, int]:
    """The RED part of the port_policy actions: min_th_scaled, max_th_scaled, red_slope_q24.

    The policy was validated by mmaqm.config (0 <= min_th < max_th, 0 < max_p <= 1)."""
    min_th_scaled, max_th_scaled = thresholds_scaled(min_th_pkts, max_th_pkts)
    return {
        "min_th_scaled": min_th_scaled,
        "max_th_scaled": max_th_scaled,
        "red_slope_q24": red_slope_q24(min_th_pkts, max_th_pkts, max_p),
    }


def early_drop_probability(avg_pkts: float, min_th_pkts: float, max_th_pkts: float,
                           max_p: float) -> float:
    """p_b: 0 below min_th, max_p * (avg - min_th) / (max_th - min_th) between, 1 at/above max_th."""
    if avg_pkts < min_th_pkts:
        return 0.0
    if avg_pkts >= max_th_pkts:
        return 1.0
    return max_p * (avg_pkts - min_th_pkts) / (max_th_pkts - min_th_pkts)


def spread_drop_probability(p_b: float, count: int, wait: bool = False) -> float:
    """p_a = p_b / (1 - count * p_b), count = packets since the last drop; 1 once count * p_b >= 1.

    wait (ns-2 wait_, red.cc modify_p): 0 while count * p_b < 1, then
    p_b / (2 - count * p_b); 1 once count * p_b >= 2. The gap between drops is
    then uniform on 1/p_b + 1..2/p_b packets instead of 1..1/p_b (red.p4)."""
    if wait and count * p_b < 1.0:
        return 0.0
    denominator = (2.0 if wait else 1.0) - count * p_b
    return 1.0 if denominator <= p_b else p_b / denominator


def gentle_early_drop_probability(avg_pkts: float, max_th_pkts: float, max_p: float) -> float:
    """Gentle RED (Floyd 2000, ns-2 gentle_) above max_th:
    p_b = max_p + (1 - max_p) * (avg - max_th) / max_th, 1 at and above 2 * max_th."""
    if avg_pkts >= 2 * max_th_pkts:
        return 1.0
    return max_p + (1 - max_p) * (avg_pkts - max_th_pkts) / max_th_pkts


def gentle_slope_q24(max_th_pkts: float, max_p: float) -> int:
    """round((1 - max_p) / max_th * 2^24): p_b per packet above max_th (red.p4, gentle)."""
    if not max_th_pkts > 0:
        raise ValueError(f"max_th_pkts must be > 0 for gentle RED, got {max_th_pkts!r}")
    exact = (1 - max_p) / max_th_pkts * SLOPE_ONE      # inf for a tiny max_th: no round()
    if not exact < MASK32 + 0.5:
        raise ValueError(f"gentle slope (1 - max_p) / max_th = {exact:.6g} * 2^-24 does not "
                         f"fit bit<32>: max_th_pkts {max_th_pkts!r} is too small")
    return round(exact)


def max_p_q16(max_p: float) -> int:
    """round(max_p * 2^16): p_b at max_th, where the gentle ramp starts (red.p4)."""
    return round(max_p * PROB_ONE)


def ewma_weight_from_burst(burst_pkts: float, min_th_pkts: float) -> float:
    """tc-red's burst -> the EWMA weight, as iproute2's tc_red_eval_ewma() computes it.

    The smallest Wlog (largest W = 2^-Wlog) with
        burst + 1 - min_th <= (1 - (1 - W)^burst) / W,
    i.e. a burst of `burst` packets arriving at an empty queue just reaches
    min_th (packets here, so tc's avpkt is 1). Raises ValueError where tc fails.
    """
    a = burst_pkts + 1 - min_th_pkts
    if a < 1:
        raise ValueError(f"burst {burst_pkts!r} is too small for min_th {min_th_pkts!r}: "
                         f"burst must be >= min_th_pkts (tc-red: burst >= min / avpkt)")
    weight = 0.5
    for _wlog in range(1, MAX_TC_WLOG + 1):
        if a <= (1 - (1 - weight) ** burst_pkts) / weight:
            return weight
        weight /= 2
    raise ValueError(f"burst {burst_pkts!r} needs a weight below 2^-{MAX_TC_WLOG}")


def idle_decay_q32(ewma_weight: float, bandwidth_pps: float) -> int:
    """Halvings of the average per idle microsecond * 2^32 (averages.p4 idle_decay).

    F&J 1993 §11: after an idle time t the average is multiplied by (1 - w)^m,
    m = t / s, s = 1 / bandwidth_pps the transmission time of a packet (tc-red:
    avpkt / bandwidth). (1 - w)^m = 2^(-t * rate) with rate = -log2(1 - w) / s.
    0 when ewma_weight is 1 (the average is the last sample: nothing to decay).
    """
    if not bandwidth_pps > 0 or not math.isfinite(bandwidth_pps):
        raise ValueError(f"bandwidth_pps must be > 0, got {bandwidth_pps!r}")
    if ewma_weight >= 1:
        return 0
    halvings_per_us = -math.log2(1 - ewma_weight) * bandwidth_pps / 1e6
    if not halvings_per_us * Q32_ONE < MASK32 + 0.5:    # before round(): it may be inf
        rate = MASK32 + 1
    else:
        rate = round(halvings_per_us * Q32_ONE)
    if rate > MASK32:
        raise ValueError(
            f"idle decay {halvings_per_us:.6g} halvings/us does not fit idle_decay_q32 "
            f"(< 1 halving per microsecond): bandwidth_pps {bandwidth_pps!r} with weight "
            f"{ewma_weight!r} decays faster than the data plane can represent")
    return max(rate, 1)


def idle_decay_factor(idle_us: float, ewma_weight: float, bandwidth_pps: float) -> float:
    """(1 - w)^(idle_us * bandwidth_pps / 1e6): the exact F&J decay, for comparison."""
    return (1 - ewma_weight) ** (idle_us * bandwidth_pps / 1e6)


def option_params(settings: Mapping[str, Any]) -> dict[str, int]:
    """The RED options of every RED-based port_policy action (red.p4), for
    validated RED settings: idle_decay_q32 (0 = no bandwidth_pps: no idle decay),
    gentle, max_p_q16, gentle_slope_q24 (0 unless gentle), ecn, harddrop, wait."""
    bandwidth_pps = settings["bandwidth_pps"]
    decay = 0 if bandwidth_pps is None else idle_decay_q32(settings["ewma_weight"],
                                                            bandwidth_pps)
    gentle = bool(settings.get("gentle", False))
    return {
        "idle_decay_q32": decay,
        "gentle": int(gentle),
        "max_p_q16": max_p_q16(settings["max_p"]) if gentle else 0,
        "gentle_slope_q24": gentle_slope_q24(settings["max_th_pkts"], settings["max_p"])
        if gentle else 0,
        "ecn": int(settings.get("ecn", False)),
        "harddrop": int(settings.get("harddrop", False)),
        "wait": int(settings.get("wait", False)),
    }


# ------------------------------------------------------------------ the plug-in
# The parameters every RED-based algorithm takes (F&J 1993 §4; tc-red's options).
THRESHOLD_PARAMS = (
    Param("min_th_pkts", "number", "packets", "RED's min_th: no early drop while the "
          "average is below it (F&J §4)", REQUIRED, lo=0),
    Param("max_th_pkts", "number", "packets", "RED's max_th: at and above it every packet "
          "is dropped; min_th_pkts < max_th_pkts <= queue_limit_pkts", REQUIRED),
    Param("max_p", "number", "", "the early-drop probability p_b at max_th, in (0, 1]",
          REQUIRED),
    Param("ewma_weight", "number", "", "weight w of the average queue, 2^-k with k in 0..31 "
          "(the data plane shifts); not with burst_pkts", DEFAULT_EWMA_WEIGHT),
    Param("burst_pkts", "number", "packets", "tc-red burst: derive ewma_weight as tc does "
          "(not with ewma_weight); >= min_th_pkts"),
    Param("bandwidth_pps", "number", "packets/s", "tc-red bandwidth: the average decays "
          "while the queue is idle (F&J §11); absent: no idle decay. Required on Tofino, "
          "where the packet time 1 / bandwidth_pps sets the averages' Lpf time constants "
          "(docs/tofino.md)", gt=0),
)
OPTION_PARAMS = (
    Param("gentle", "bool", "", "gentle RED: p_b ramps max_p..1 between max_th and "
          "2 * max_th instead of jumping to 1", False),
    Param("ecn", "bool", "", "tc-red ecn: mark ECN-capable packets CE instead of dropping "
          "them early", False),
    Param("harddrop", "bool", "", "tc-red harddrop: with ecn, drop in the forced zone "
          "anyway", False),
    Param("wait", "bool", "", "ns-2 wait_: no early drop while count * p_b <= 1, so drops "
          "are spaced 1/p_b + 1..2/p_b packets apart", False),
    Param("adaptive", "bool", "", "tc-red adaptive: not implemented; true is an error",
          False),
)
RED_PARAMS = THRESHOLD_PARAMS + OPTION_PARAMS
# RED's average on Tofino (red_tna.p4's Lpf red_avg, per port), shared by the
# RED-based plug-ins
RED_AVERAGE = LpfAverage("red_avg", weight_param="ewma_shift")


def check_thresholds(values: dict[str, Any], given: frozenset[str], limit: int | None,
                     path: str, errs: V.Errors) -> None:
    """min_th < max_th <= queue_limit_pkts, max_p in (0, 1] with a slope that fits
    red_slope_q24, a power-of-two weight (or one derived from burst_pkts as tc-red
    does), a representable idle decay."""
    min_th, max_th, max_p = values["min_th_pkts"], values["max_th_pkts"], values["max_p"]
    one_pkt_scaled = 1 << C.AVG_FRAC_BITS
    bound = MAX_QUEUE_LIMIT_PKTS if limit is None else limit
    thresholds_ok = False
    if max_th is not None and max_th > bound:
        errs.add(V.join(path, "max_th_pkts"),
                 f"must be <= queue_limit_pkts ({bound}), got {V.fmt(max_th)}")
    elif min_th is not None and max_th is not None:   # both in 0..65535 now: no overflow
        if min_th >= max_th:
            errs.add(V.join(path, "min_th_pkts"),
                     f"must be < max_th_pkts ({V.fmt(max_th)}), got {V.fmt(min_th)}")
        elif round(max_th * one_pkt_scaled) - round(min_th * one_pkt_scaled) < 1:
            errs.add(V.join(path, "max_th_pkts"),
                     f"must exceed min_th_pkts by at least 2^-{C.AVG_FRAC_BITS} packets, "
                     f"got {V.fmt(max_th)} vs {V.fmt(min_th)}")
        else:
            thresholds_ok = True
    if max_p is not None and not 0 < max_p <= 1:
        errs.add(V.join(path, "max_p"), f"must be in (0, 1], got {V.fmt(max_p)}")
    elif max_p is not None and thresholds_ok:
        slope = max_p / (max_th - min_th) * (1 << C.SLOPE_FRAC_BITS)   # red.p4's red_slope_q24
        if round(slope) < 1 or round(slope) > MASK32:
            errs.add(V.join(path, "max_p"),
                     f"max_p / (max_th_pkts - min_th_pkts) = {slope:.6g} * 2^-"
                     f"{C.SLOPE_FRAC_BITS} does not fit red_slope_q24 (1..2^32-1)")
    weight = values["ewma_weight"] if "ewma_weight" in given else None
    if weight is not None:
        try:
            ewma_shift_from_weight(weight)
        except ValueError as exc:
            errs.add(V.join(path, "ewma_weight"), str(exc))
            weight = None
    if "burst_pkts" in given and values["burst_pkts"] is not None:
        if "ewma_weight" in given:
            errs.add(V.join(path, "burst_pkts"),
                     "give burst_pkts or ewma_weight, not both (tc-red derives the weight "
                     "from burst)")
        elif min_th is not None:
            try:
                weight = ewma_weight_from_burst(values["burst_pkts"], min_th)
            except ValueError as exc:
                errs.add(V.join(path, "burst_pkts"), str(exc))
    values["ewma_weight"] = DEFAULT_EWMA_WEIGHT if weight is None else weight
    if values["bandwidth_pps"] is not None:
        try:
            idle_decay_q32(values["ewma_weight"], values["bandwidth_pps"])
        except ValueError as exc:
            errs.add(V.join(path, "bandwidth_pps"), str(exc))


def check_options(values: dict[str, Any], path: str, errs: V.Errors) -> None:
    """The RED options' own rules (tc-red's)."""
    if values["adaptive"]:
        errs.add(V.join(path, "adaptive"),
                 "adaptive RED (tc-red adaptive) is not implemented; remove it or set false")
    if values["harddrop"] and not values["ecn"]:
        errs.add(V.join(path, "harddrop"), "only with ecn: true (without ecn RED drops anyway)")
    max_th, max_p = values["max_th_pkts"], values["max_p"]
    if values["gentle"] and max_th is not None and max_p is not None and 0 < max_p <= 1:
        try:
            gentle_slope_q24(max_th, max_p)
        except ValueError as exc:
            errs.add(V.join(path, "gentle"), str(exc))


def red_action_params(settings: Mapping[str, Any], policy_epoch: int) -> dict[str, int]:
    """The parameters every RED-based action shares: the epoch, the average's
    shift, the thresholds and slope, the options."""
    return {"policy_epoch": policy_epoch,
            "ewma_shift": ewma_shift_from_weight(settings["ewma_weight"]),
            **action_params(settings["min_th_pkts"], settings["max_th_pkts"], settings["max_p"]),
            **option_params(settings)}


class Red(Algorithm):
    """RED with tc-red's options; the base of the class-based algorithms."""

    name: ClassVar[str] = "RED"
    p4_action: ClassVar[str] = "red"
    summary: ClassVar[str] = "Random Early Detection (Floyd & Jacobson 1993), with tc-red's options"
    doc_page: ClassVar[str] = "docs/algorithms/red.md"
    params: ClassVar[tuple[Param, ...]] = RED_PARAMS
    range_tables: ClassVar[tuple[str, ...]] = ("red_zone",)
    # the average of F&J §4 (red_tna.p4 red_avg), weight w = 2^-ewma_shift a packet
    lpf_averages: ClassVar[tuple[LpfAverage, ...]] = (RED_AVERAGE,)

    def check(self, values: dict[str, Any], given: frozenset[str], queue_limit_pkts: int | None,
              path: str, errs: V.Errors) -> None:
        check_thresholds(values, given, queue_limit_pkts, path, errs)
        check_options(values, path, errs)

    def action_params(self, policy: PortPolicy, inputs: PortInputs,
                      policy_epoch: int) -> dict[str, int]:
        return red_action_params(policy.settings, policy_epoch)


PLUGIN = Red()
