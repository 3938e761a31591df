"""The per-flow guard inside the tagged class (docs/algorithms/tag-guard.md;
p4src/v1model/tag_guard.p4), an option of CBT, D-CBT and D-CBT with ChIPS.

The class-based algorithms protect the tagged class as a whole (cbt §3, dcbt
§3.1); a sender sets its own DSCP. With the guard on, a tagged flow may queue
its part of the tagged class threshold,

    allowance = class threshold * tolerance / n_tagged

(n_tagged: the port's tagged active flows, counted as for D-CBT's shares,
dcbt §3.1), and at least TAG_GUARD_MIN_PKTS packets; a tagged packet whose
flow holds that many already is dropped early (drop reason TAG_GUARD). The
class threshold is the one the packet faced: tagged_th (CBT) or red_avg *
share_tagged (D-CBT). The controller sends tolerance / n_tagged in Q16 as
tag_guard_flow_q16; 0 is "guard off", which leaves the papers' algorithms
exactly as published.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import p4constants as C
from ..fixedpoint import PROB_ONE
from .base import Param

DEFAULT_TOLERANCE = 1.5      # a flow may queue 1.5x its equal part before the guard drops
MIN_TOLERANCE = 1.0          # below 1 an honest flow at exactly its part would be dropped
MAX_TOLERANCE = 16.0         # 16 * 2^16 / 1 flow fits q16_t (bit<32>) many times over
PARAM_KEY = "tag_guard_flow_q16"

PARAMS = (
    Param("tag_guard", "bool", "", "the per-flow guard inside the tagged class "
          "(docs/algorithms/tag-guard.md): a tagged flow holding more than its part of the "
          "tagged class threshold is dropped early (TAG_GUARD); off = the paper's algorithm",
          False),
    Param("tag_guard_tolerance", "number", "", "a tagged flow's part of the tagged class "
          "threshold is tolerance / (tagged active flows); used when tag_guard is on",
          DEFAULT_TOLERANCE, lo=MIN_TOLERANCE, hi=MAX_TOLERANCE),
)


def flow_q16(enabled: bool, tolerance: float, tagged_flows: int) -> int:
    """tag_guard_flow_q16: round(tolerance / max(tagged_flows, 1) * 2^16), at least 1
    when enabled; 0 when not (the guard is off)."""
    if isinstance(tagged_flows, bool) or not isinstance(tagged_flows, int) or tagged_flows < 0:
        raise ValueError(f"tagged_flows must be an int >= 0, got {tagged_flows!r}")
    if not enabled:
        return 0
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) \
            or not MIN_TOLERANCE <= tolerance <= MAX_TOLERANCE:
        raise ValueError(f"tolerance must be in [{MIN_TOLERANCE}, {MAX_TOLERANCE}], "
                         f"got {tolerance!r}")
    return max(1, round(tolerance * PROB_ONE / max(tagged_flows, 1)))


def action_params(settings: Mapping[str, Any], tagged_flows: int) -> dict[str, int]:
    """The guard's part of a port_policy action: tag_guard_flow_q16."""
    return {PARAM_KEY: flow_q16(settings["tag_guard"], settings["tag_guard_tolerance"],
                                tagged_flows)}


def allowance_pkts(class_th_pkts: float, tolerance: float, tagged_flows: int) -> float:
    """What a tagged flow may queue (in packets) for a class threshold: its part,
    at least TAG_GUARD_MIN_PKTS (for docs and analysis; the switch uses Q16)."""
    return max(float(C.CONSTANTS["TAG_GUARD_MIN_PKTS"]), class_th_pkts * tolerance / max(tagged_flows, 1))
