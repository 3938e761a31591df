"""MCDT's references (the test oracle; moved from mmaqm.algorithms.mcdt).

  * :func:`reference_period_update`: eqs. 5-10 in plain floats, straight from the
    equation functions of :mod:`mmaqm.algorithms.mcdt`, to check its exact
    ``period_update``;
  * :func:`decide`: the decision of the mcdt action for one packet, in mode A,
    B or C (Fig. 2, as read in :mod:`mmaqm.algorithms.mcdt`).

The paper's classes, equations and the choices where it is silent are described in
:mod:`mmaqm.algorithms.mcdt`.
"""

from __future__ import annotations

from collections.abc import Mapping

from mmaqm import p4constants as C
from mmaqm.algorithms.mcdt import (_CLASS_FIELD, DEFAULT_BUFFER_PKTS, MCDT_CLASSES, MMU,
                                   PAPER_WEIGHTS, TCP, UDP, Weights, alpha_mmu, alpha_tcp,
                                   alpha_udp, class_threshold, residue, smoothed_threshold)
from mmaqm.fixedpoint import check_int

from .fixedpoint_model import ADMIT, CLASS_THRESHOLD, QUEUE_LIMIT, OccupancyLike, as_occupancy


def reference_period_update(arrivals: Mapping[int, int], queue_pkts: float,
                            last_th_pkts: Mapping[int, float] | None = None, *,
                            buffer_pkts: float = DEFAULT_BUFFER_PKTS,
                            weights: Weights = PAPER_WEIGHTS) -> dict[int, float]:
    """The same update in plain floats, straight from the equation functions
    (for checking :func:`period_update`; no validation beyond the classes)."""
    counts = {c: arrivals.get(c, 0) for c in MCDT_CLASSES}
    last = dict(last_th_pkts) if last_th_pkts is not None \
        else {c: float(buffer_pkts) for c in MCDT_CLASSES}
    active = [c for c in MCDT_CLASSES if counts[c] > 0]
    if not active:
        return last
    alpha = {TCP: alpha_tcp(counts[TCP], counts[MMU], counts[UDP], weights),
             MMU: alpha_mmu(counts[MMU], weights), UDP: alpha_udp(counts[UDP], weights)}
    sum_alpha = sum(alpha.values())
    t5 = {c: class_threshold(alpha[c], sum_alpha, buffer_pkts, queue_pkts) for c in MCDT_CLASSES}
    r = residue(buffer_pkts, list(t5.values()), len(active))
    return {c: float(smoothed_threshold(t5[c], r if c in active else 0.0, last[c], weights))
            for c in MCDT_CLASSES}


def decide(class_id: int, occupancy: OccupancyLike, th_pkts: Mapping[int, int],
           queue_limit_pkts: int, mode: str = "A") -> str:
    """Reference model of the mcdt action for one arriving packet -> ADMIT,
    CLASS_THRESHOLD or QUEUE_LIMIT.

    Threshold test first (mcdt §II.2: drop when the class's logical queue
    exceeds th_class, i.e. its length before this packet is > th), then the
    physical limit that applies under every algorithm (queue_pkts >= limit).
    The logical queue (Fig. 2's modes): A and C, the class's own packets; B, the
    whole queue. In mode C the test binds only while the queue holds at least
    the three thresholds together (the logical buffers are full).
    The caller counts the arrival and applies the decision to the occupancy.
    """
    if class_id not in MCDT_CLASSES:
        raise ValueError(f"class_id must be one of {MCDT_CLASSES}, got {class_id!r}")
    if mode not in ("A", "B", "C"):
        raise ValueError(f"mode must be A, B or C, got {mode!r}")
    occ = as_occupancy(occupancy)
    queue_limit_pkts = check_int("queue_limit_pkts", queue_limit_pkts, 0, (1 << 32) - 1)
    th = check_int(f"th_pkts[{C.CLASS_NAMES[class_id]}]", th_pkts.get(class_id), 0,
                    (1 << 32) - 1)
    logical_pkts = occ.queue_pkts if mode == "B" else \
        getattr(occ, f"{_CLASS_FIELD[class_id]}_pkts")
    buffers_full = mode != "C" or occ.queue_pkts >= sum(th_pkts[c] for c in MCDT_CLASSES)
    if logical_pkts > th and buffers_full:
        return CLASS_THRESHOLD
    if occ.queue_pkts >= queue_limit_pkts:
        return QUEUE_LIMIT
    return ADMIT
