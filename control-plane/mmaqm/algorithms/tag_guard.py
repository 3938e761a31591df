"""The per-flow guard inside the tagged class (docs/algorithms/tag-guard.md;
p4src/v1model/tag_guard.p4), an option of CBT, D-CBT and D-CBT with ChIPS.

The class-based algorithms protect the tagged class as a whole (cbt §3, dcbt
§3.1); a sender sets its own DSCP. With the guard on, a tagged flow may send
tolerance times the per-flow fair share of the link, C / n_all (the tagged
class's share n_tagged / n_all of C over its n_tagged flows, counted as for
D-CBT's shares, dcbt §3.1), and run TAG_GUARD_BURST_PKTS packets ahead of it; a
tagged packet beyond that is dropped early (drop reason TAG_GUARD). The switch
polices each flow slot with the generic cell rate algorithm (ITU-T I.371) in
packets; the controller sends the interval between a flow's packets at its
allowed rate, n_all / (tolerance * link_pps), in microseconds, as
tag_guard_interval_us; 0 is "guard off", which leaves the papers' algorithms
exactly as published.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import validation as V
from .base import Param

# A flow may send its fair share (plus a burst of TAG_GUARD_BURST_PKTS). Chosen by
# measurement (docs/algorithms/tag-guard.md): at 1.25 the abuser's excess filled the
# tagged class and honest flows fell to 0.76-0.81 of their share; at 1 they kept
# 0.84-0.91, and the D-CBT paper's scenario barely moved either way.
DEFAULT_TOLERANCE = 1.0
MIN_TOLERANCE = 1.0          # below 1 an honest flow at exactly its fair share would be policed
MAX_TOLERANCE = 16.0
MAX_INTERVAL_US = 2**32 - 1  # tag_guard_interval_us is bit<32>
PARAM_KEY = "tag_guard_interval_us"

PARAMS = (
    Param("tag_guard", "bool", "", "the per-flow guard inside the tagged class "
          "(docs/algorithms/tag-guard.md): a tagged flow sending faster than tolerance x "
          "link_pps / (active flows), by more than a burst of packets, is dropped early "
          "(TAG_GUARD); off = the paper's algorithm", False),
    Param("tag_guard_tolerance", "number", "", "a tagged flow's allowed rate is tolerance "
          "times the per-flow fair share of the link; used when tag_guard is on",
          DEFAULT_TOLERANCE, lo=MIN_TOLERANCE, hi=MAX_TOLERANCE),
    Param("tag_guard_link_pps", "number", "packets/s", "the port's link rate, for the "
          "per-flow fair share; required when tag_guard is on", None, gt=0),
)


def check(values: Mapping[str, Any], path: str, errs: V.Errors) -> None:
    """tag_guard: true needs tag_guard_link_pps."""
    if values["tag_guard"] and values["tag_guard_link_pps"] is None:
        errs.add(V.join(path, "tag_guard_link_pps"),
                 "required when tag_guard is true (the link rate, packets/s)")


def interval_us(enabled: bool, tolerance: float, link_pps: float | None,
                active_flows: int) -> int:
    """tag_guard_interval_us: round(max(active_flows, 1) * 10^6 / (tolerance *
    link_pps)), in 1 .. 2^32 - 1, when enabled; 0 when not (the guard is off)."""
    if isinstance(active_flows, bool) or not isinstance(active_flows, int) or active_flows < 0:
        raise ValueError(f"active_flows must be an int >= 0, got {active_flows!r}")
    if not enabled:
        return 0
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) \
            or not MIN_TOLERANCE <= tolerance <= MAX_TOLERANCE:
        raise ValueError(f"tolerance must be in [{MIN_TOLERANCE}, {MAX_TOLERANCE}], "
                         f"got {tolerance!r}")
    if isinstance(link_pps, bool) or not isinstance(link_pps, (int, float)) \
            or not link_pps > 0:
        raise ValueError(f"link_pps must be a number > 0, got {link_pps!r}")
    return min(MAX_INTERVAL_US,
               max(1, round(max(active_flows, 1) * 1e6 / (tolerance * link_pps))))


def action_params(settings: Mapping[str, Any], active_flows: int) -> dict[str, int]:
    """The guard's part of a port_policy action: tag_guard_interval_us."""
    return {PARAM_KEY: interval_us(settings["tag_guard"], settings["tag_guard_tolerance"],
                                   settings["tag_guard_link_pps"], active_flows)}


def allowed_rate_pps(tolerance: float, link_pps: float, active_flows: int) -> float:
    """A tagged flow's allowed rate (packets/s), for docs and analysis; the switch
    uses the interval, rounded to a microsecond."""
    return tolerance * link_pps / max(active_flows, 1)
