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

from typing import TYPE_CHECKING

from ..fixedpoint import MASK32, PROB_ONE, red_slope_q24, to_scaled

if TYPE_CHECKING:
    from ..config import PortPolicy

SLOPE_ONE = 1 << 24          # SLOPE_FRAC_BITS
Q32_ONE = 1 << 32
MAX_TC_WLOG = 31             # tc_red_eval_ewma tries W = 2^-1 .. 2^-31


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
    slope = round((1 - max_p) / max_th_pkts * SLOPE_ONE)
    if slope > MASK32:
        raise ValueError(f"gentle slope (1 - max_p) / max_th = {slope} * 2^-24 does not fit "
                         f"bit<32>: max_th_pkts {max_th_pkts!r} is too small")
    return slope


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


def option_params(policy: "PortPolicy") -> dict[str, int]:
    """The RED options of every RED-based port_policy action (red.p4), for a
    validated policy: idle_decay_q32 (0 = no bandwidth_pps: no idle decay),
    gentle, max_p_q16, gentle_slope_q24 (0 unless gentle), ecn, harddrop, wait."""
    assert policy.max_th_pkts is not None and policy.max_p is not None
    assert policy.ewma_weight is not None
    decay = 0 if policy.bandwidth_pps is None else idle_decay_q32(policy.ewma_weight,
                                                                   policy.bandwidth_pps)
    return {
        "idle_decay_q32": decay,
        "gentle": int(policy.gentle),
        "max_p_q16": max_p_q16(policy.max_p) if policy.gentle else 0,
        "gentle_slope_q24": gentle_slope_q24(policy.max_th_pkts, policy.max_p)
        if policy.gentle else 0,
        "ecn": int(policy.ecn),
        "harddrop": int(policy.harddrop),
        "wait": int(policy.wait),
    }
