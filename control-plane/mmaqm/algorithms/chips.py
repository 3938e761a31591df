"""Cut-In Packet Scheduling, ChIPS (dcbt §3.2), on top of D-CBT (chips.p4).

ChIPS is on while the tagged flows' average enqueue rate is a small fraction
of the others' (dcbt §3.2; §5 sets the switch-off ratio at 50 %). The data
plane keeps the tagged *share* of enqueues, s = tagged / (tagged + other), as
a per-packet EWMA; a ratio r = tagged / other is the share r / (1 + r), so the
paper's 50 % is a share of 1/3. The controller sends that limit in Q16.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .. import validation as V
from ..fixedpoint import PROB_ONE, ewma_shift_from_weight
from . import tag_guard
from .base import LpfAverage, Param, PortInputs, PortPolicy
from .dcbt import Dcbt

DEFAULT_MAX_TAGGED_RATIO = 0.5     # dcbt §5: "turn off ... when the ratio ... is greater than 50%"
DEFAULT_EWMA_WEIGHT = 2.0**-9      # about 512 enqueues of memory


def share_of_ratio(ratio: float) -> float:
    """tagged / other -> tagged / (tagged + other)."""
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not ratio > 0 \
            or math.isnan(ratio):
        raise ValueError(f"ratio must be > 0, got {ratio!r}")
    if math.isinf(ratio):
        return 1.0
    return ratio / (1 + ratio)


def ratio_of_share(share: float) -> float:
    """tagged / (tagged + other) -> tagged / other (inf when every enqueue is tagged)."""
    if not 0 <= share <= 1:
        raise ValueError(f"share must be in [0, 1], got {share!r}")
    return math.inf if share == 1 else share / (1 - share)


def tagged_share_limit_q16(max_tagged_ratio: float) -> int:
    """round(r / (1 + r) * 2^16): ChIPS is on while the tagged share <= this."""
    return min(PROB_ONE, round(share_of_ratio(max_tagged_ratio) * PROB_ONE))


def action_params(max_tagged_ratio: float, ewma_weight: float) -> dict[str, int]:
    """The ChIPS part of the dcbt_chips action."""
    return {
        "chips_ewma_shift": ewma_shift_from_weight(ewma_weight),
        "chips_tagged_share_limit_q16": tagged_share_limit_q16(max_tagged_ratio),
    }


# ------------------------------------------------------------------ the plug-in
class DcbtChips(Dcbt):
    """D-CBT with ChIPS cut-in scheduling of tagged packets (dcbt §3.1 + §3.2)."""

    name: ClassVar[str] = "DCBT_CHIPS"
    p4_action: ClassVar[str] = "dcbt_chips"
    summary: ClassVar[str] = "D-CBT with Cut-In Packet Scheduling (dcbt §3.2)"
    doc_page: ClassVar[str] = "docs/algorithms/chips.md"
    needs_cut_in_sessions: ClassVar[bool] = True
    # D-CBT's, and the tagged share of enqueues (dcbt §3.2; aqm_tna.p4 chips_tagged_share)
    lpf_averages: ClassVar[tuple[LpfAverage, ...]] = Dcbt.lpf_averages + (
        LpfAverage("chips_tagged_share", weight_param="chips_ewma_shift",
                   independent_samples=True),)
    params: ClassVar[tuple[Param, ...]] = Dcbt.params + (
        Param("chips_max_tagged_ratio", "number", "", "ChIPS is on while tagged / other "
              "enqueues <= this (dcbt §5: 50 %)", DEFAULT_MAX_TAGGED_RATIO, gt=0),
        Param("chips_ewma_weight", "number", "", "weight of that average per enqueue, 2^-k",
              DEFAULT_EWMA_WEIGHT),
    )

    def check(self, values: dict[str, Any], given: frozenset[str], queue_limit_pkts: int | None,
              path: str, errs: V.Errors) -> None:
        super().check(values, given, queue_limit_pkts, path, errs)
        if values["chips_ewma_weight"] is not None:
            try:
                ewma_shift_from_weight(values["chips_ewma_weight"])
            except ValueError as exc:
                errs.add(V.join(path, "chips_ewma_weight"), str(exc))

    def action_params(self, policy: PortPolicy, inputs: PortInputs,
                      policy_epoch: int) -> dict[str, int]:
        s = policy.settings
        params = {**super().action_params(policy, inputs, policy_epoch),
                  **action_params(s["chips_max_tagged_ratio"], s["chips_ewma_weight"])}
        params[tag_guard.PARAM_KEY] = params.pop(tag_guard.PARAM_KEY)   # the P4 order: last
        return params


PLUGIN = DcbtChips()
