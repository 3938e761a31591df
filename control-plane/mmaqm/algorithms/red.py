"""RED (Floyd & Jacobson 1993; docs/design.md §2 RED card; cbt §2.1).

  avg < min_th            : enqueue
  min_th <= avg < max_th  : p_b = max_p * (avg - min_th) / (max_th - min_th),
                            p_a = p_b / (1 - count * p_b)
  avg >= max_th           : forced drop

The data plane works on packets * 2^AVG_FRAC_BITS and gets p_b from one
multiply by red_slope_q24 (red.p4); the float functions here are the paper's
formulas, for checking the fixed-point model against.
"""

from __future__ import annotations

from ..fixedpoint import red_slope_q24, to_scaled


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


def spread_drop_probability(p_b: float, count: int) -> float:
    """p_a = p_b / (1 - count * p_b), count = packets since the last drop; 1 once count * p_b >= 1."""
    denominator = 1.0 - count * p_b
    return 1.0 if denominator <= p_b else p_b / denominator
