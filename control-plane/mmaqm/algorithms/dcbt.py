"""Dynamic Class-Based Thresholds (dcbt §3.1; docs/design.md §2 D-CBT card).

While red_avg > min_th, UDP packets face class thresholds:
  tagged   : tagged_avg   > red_avg * share_tagged                    (computed in dcbt.p4)
  untagged : untagged_avg > share_untagged * (min_th + max_p * (max_th - min_th))
with share_c = n_c / n_all from the active-flow counts (dcbt §3.1 footnote 3).
The untagged threshold changes only when the shares do, so the controller
computes it; the tagged share goes to the switch as a Q16 fraction.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .. import validation as V
from ..fixedpoint import PROB_ONE, to_scaled
from . import tag_guard
from .base import LpfAverage, Param, PortInputs, PortPolicy
from .red import RED_AVERAGE, Red, red_action_params


def class_shares(n_tcp: int, n_tagged: int, n_untagged: int) -> tuple[float, float]:
    """(share_tagged, share_untagged) = n_c / n_all (dcbt §3.1 footnote 3).

    With no active flow at all (n_all == 0) this returns (1.0, 1.0): the
    controller knows nothing yet, so neither UDP class is given a smaller
    share than if it were alone. That is "no class restriction" for the
    tagged class (tagged_avg can never exceed red_avg); the untagged class is
    still held to its allowance min_th + max_p * (max_th - min_th), the
    threshold a lone untagged class gets (dcbt §3.1).
    """
    for name, n in (("n_tcp", n_tcp), ("n_tagged", n_tagged), ("n_untagged", n_untagged)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"{name} must be an int >= 0, got {n!r}")
    n_all = n_tcp + n_tagged + n_untagged
    if n_all == 0:
        return 1.0, 1.0
    return n_tagged / n_all, n_untagged / n_all


def _check_share(share: float) -> None:
    if isinstance(share, bool) or not isinstance(share, (int, float)) or math.isnan(share):
        raise ValueError(f"share must be a number, got {share!r}")


def tagged_share_q16(share: float) -> int:
    """round(share * 2^16) clamped to [0, 65536]: tagged_share_q16."""
    _check_share(share)
    if share <= 0:
        return 0
    if share >= 1:
        return PROB_ONE
    return round(share * PROB_ONE)


def untagged_threshold_scaled(share_untagged: float, min_th_pkts: float, max_th_pkts: float,
                              max_p: float) -> int:
    """to_scaled(share_untagged * (min_th + max_p * (max_th - min_th))) (dcbt §3.1).

    max_p * (max_th - min_th) is the allowance of the impending-congestion
    buffers ("10 % of (red_max - red_min) * untagged_UDP_share" for max_p = 0.1).
    """
    _check_share(share_untagged)
    if not 0 <= share_untagged <= 1:
        raise ValueError(f"share_untagged must be in [0, 1], got {share_untagged!r}")
    return to_scaled(share_untagged * (min_th_pkts + max_p * (max_th_pkts - min_th_pkts)))


def action_params(share_tagged: float, share_untagged: float, min_th_pkts: float,
                  max_th_pkts: float, max_p: float) -> dict[str, int]:
    """The D-CBT part of the dcbt action: tagged_share_q16, untagged_th_scaled."""
    if not 0 <= share_tagged <= 1:
        raise ValueError(f"share_tagged must be in [0, 1], got {share_tagged!r}")
    return {
        "tagged_share_q16": tagged_share_q16(share_tagged),
        "untagged_th_scaled": untagged_threshold_scaled(share_untagged, min_th_pkts,
                                                        max_th_pkts, max_p),
    }


# ------------------------------------------------------------------ the plug-in
class Dcbt(Red):
    """D-CBT: class thresholds that follow the active-flow shares (dcbt §3.1)."""

    name: ClassVar[str] = "DCBT"
    p4_action: ClassVar[str] = "dcbt"
    summary: ClassVar[str] = "Dynamic Class-Based Thresholds (dcbt §3.1)"
    doc_page: ClassVar[str] = "docs/algorithms/dcbt.md"
    follows_flow_shares: ClassVar[bool] = True
    range_tables: ClassVar[tuple[str, ...]] = ("red_zone", "dcbt_tagged_threshold")
    # RED's and the two classes' synchronised averages (dcbt §3.1; aqm_tna.p4
    # tagged_avg, untagged_avg), each with RED's weight
    lpf_averages: ClassVar[tuple[LpfAverage, ...]] = (
        RED_AVERAGE, LpfAverage("tagged_avg", weight_param="ewma_shift"),
        LpfAverage("untagged_avg", weight_param="ewma_shift"))
    params: ClassVar[tuple[Param, ...]] = Red.params + tag_guard.PARAMS

    def check(self, values: dict[str, Any], given: frozenset[str], queue_limit_pkts: int | None,
              path: str, errs: V.Errors) -> None:
        super().check(values, given, queue_limit_pkts, path, errs)
        tag_guard.check(values, path, errs)

    def action_params(self, policy: PortPolicy, inputs: PortInputs,
                      policy_epoch: int) -> dict[str, int]:
        s = policy.settings
        return {**red_action_params(s, policy_epoch),
                **action_params(inputs.share_tagged, inputs.share_untagged, s["min_th_pkts"],
                                s["max_th_pkts"], s["max_p"]),
                **tag_guard.action_params(s, inputs.active_flows)}


PLUGIN = Dcbt()
