"""Class-Based Thresholds (cbt §3; docs/design.md §2 CBT card).

Static thresholds on the weighted average number of enqueued packets of the
tagged and untagged UDP classes; a UDP packet whose class average exceeds its
threshold is dropped. The RED part uses algorithms.red.
"""

from __future__ import annotations

from ..fixedpoint import to_scaled


def thresholds_scaled(tagged_th_pkts: float, untagged_th_pkts: float) -> tuple[int, int]:
    """(tagged_th_scaled, untagged_th_scaled), packets * 2^AVG_FRAC_BITS (cbt §3)."""
    return to_scaled(tagged_th_pkts), to_scaled(untagged_th_pkts)


def action_params(tagged_th_pkts: float, untagged_th_pkts: float) -> dict[str, int]:
    """The CBT part of the port_policy actions: tagged_th_scaled, untagged_th_scaled."""
    tagged_th_scaled, untagged_th_scaled = thresholds_scaled(tagged_th_pkts, untagged_th_pkts)
    return {"tagged_th_scaled": tagged_th_scaled, "untagged_th_scaled": untagged_th_scaled}
