"""Class-Based Thresholds (cbt §3; docs/design.md §2 CBT card).

Static thresholds on the weighted average number of enqueued packets of the
tagged and untagged UDP classes; a UDP packet whose class average exceeds its
threshold is dropped. The RED part uses algorithms.red.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .. import p4constants as C
from .. import validation as V
from ..fixedpoint import to_scaled
from . import tag_guard
from .base import REQUIRED, LpfAverage, Param, PortInputs, PortPolicy
from .red import RED_AVERAGE, Red, red_action_params


def thresholds_scaled(tagged_th_pkts: float, untagged_th_pkts: float) -> tuple[int, int]:
    """(tagged_th_scaled, untagged_th_scaled), packets * 2^AVG_FRAC_BITS (cbt §3)."""
    return to_scaled(tagged_th_pkts), to_scaled(untagged_th_pkts)


def action_params(tagged_th_pkts: float, untagged_th_pkts: float) -> dict[str, int]:
    """The CBT part of the port_policy actions: tagged_th_scaled, untagged_th_scaled."""
    tagged_th_scaled, untagged_th_scaled = thresholds_scaled(tagged_th_pkts, untagged_th_pkts)
    return {"tagged_th_scaled": tagged_th_scaled, "untagged_th_scaled": untagged_th_scaled}


# ------------------------------------------------------------------ the plug-ins
CLASS_THRESHOLD_PARAMS = (
    Param("tagged_th_pkts", "number", "packets", "threshold on the tagged UDP class's "
          "average (cbt §3); <= queue_limit_pkts", REQUIRED, lo=0),
    Param("untagged_th_pkts", "number", "packets", "threshold on the untagged UDP class's "
          "average (cbt §3); <= queue_limit_pkts", REQUIRED, lo=0),
)


class CbtRedAll(Red):
    """CBT: static class thresholds on UDP, RED on every packet (cbt §3)."""

    name: ClassVar[str] = "CBT_RED_ALL"
    p4_action: ClassVar[str] = "cbt_red_all"
    summary: ClassVar[str] = "Class-Based Thresholds, RED for all (cbt §3)"
    doc_page: ClassVar[str] = "docs/algorithms/cbt.md"
    params: ClassVar[tuple[Param, ...]] = (Red.params + CLASS_THRESHOLD_PARAMS
                                           + tag_guard.PARAMS)
    # RED's average and the UDP classes' averages (cbt §3; aqm_tna.p4 class_avg,
    # indexed port * CLASS_SLOTS + class), both with RED's weight
    lpf_averages: ClassVar[tuple[LpfAverage, ...]] = (
        RED_AVERAGE, LpfAverage("class_avg", index="class", weight_param="ewma_shift",
                                classes=(C.CLASS_TAGGED, C.CLASS_UNTAGGED)))

    def check(self, values: dict[str, Any], given: frozenset[str], queue_limit_pkts: int | None,
              path: str, errs: V.Errors) -> None:
        super().check(values, given, queue_limit_pkts, path, errs)
        tag_guard.check(values, path, errs)
        for key in ("tagged_th_pkts", "untagged_th_pkts"):
            th = values[key]
            if th is not None and queue_limit_pkts is not None and th > queue_limit_pkts:
                errs.add(V.join(path, key),
                         f"must be <= queue_limit_pkts ({queue_limit_pkts}), got {V.fmt(th)}")

    def action_params(self, policy: PortPolicy, inputs: PortInputs,
                      policy_epoch: int) -> dict[str, int]:
        s = policy.settings
        return {**red_action_params(s, policy_epoch),
                **action_params(s["tagged_th_pkts"], s["untagged_th_pkts"]),
                **tag_guard.action_params(s, inputs.active_flows)}

    def follows_flow_counts(self, policy: PortPolicy) -> bool:
        return bool(policy.settings["tag_guard"])   # its interval follows n_all


class CbtRedTcpOnly(CbtRedAll):
    """CBT: static class thresholds on UDP, RED on TCP only (cbt §3)."""

    name: ClassVar[str] = "CBT_RED_TCP_ONLY"
    p4_action: ClassVar[str] = "cbt_red_tcp_only"
    summary: ClassVar[str] = "Class-Based Thresholds, RED only for TCP (cbt §3)"


RED_ALL = CbtRedAll()
RED_TCP_ONLY = CbtRedTcpOnly()
