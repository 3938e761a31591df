"""Active-flow counting for D-CBT (dcbt §3.1 "active flow counting unit").

A flow is active if a packet of it arrived in the last expiry interval (300 ms
in the paper). The switch reports each flow at least twice per interval
(flow_report.p4, config.flow_epoch_shift_for); the controller feeds every
report to :meth:`ActiveFlowTable.observe`, calls :meth:`expire` at its update
interval, and reads :meth:`counts` to compute the class shares
(algorithms.dcbt.class_shares). Flows are kept per egress port: the same
5-tuple on two ports is two flows. A flow belongs to one class: a report with
another class moves it there.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from . import p4constants as C

# The classes counted (CLASS_TCP, CLASS_TAGGED, CLASS_UNTAGGED of defines.p4).
COUNTED_CLASSES: tuple[int, ...] = tuple(sorted(C.CLASSES.values()))


@dataclass(frozen=True)
class FlowEntry:
    class_id: int
    last_seen_ms: float


class ActiveFlowTable:
    """Last report time and class of every flow, per egress port."""

    def __init__(self) -> None:
        self._flows: dict[int, dict[Hashable, FlowEntry]] = {}

    def observe(self, port: int, class_id: int, flow_key: tuple[Hashable, ...], now_ms: float) -> None:
        """A report of flow_key, class class_id, on egress port at now_ms.

        The class is replaced by the latest report's; the time never moves
        backwards (a late, reordered report does not shorten the flow's life).
        """
        if class_id not in COUNTED_CLASSES:
            raise ValueError(f"class_id {class_id!r} is not one of {C.CLASSES}")
        flows = self._flows.setdefault(port, {})
        old = flows.get(flow_key)
        last_seen_ms = now_ms if old is None else max(old.last_seen_ms, now_ms)
        flows[flow_key] = FlowEntry(class_id=class_id, last_seen_ms=last_seen_ms)

    def expire(self, now_ms: float, expiry_interval_ms: float) -> int:
        """Forget flows whose last report is older than expiry_interval_ms; return how many."""
        if not expiry_interval_ms > 0:
            raise ValueError(f"expiry_interval_ms must be > 0, got {expiry_interval_ms!r}")
        removed = 0
        for port in list(self._flows):
            flows = self._flows[port]
            stale = [key for key, entry in flows.items()
                     if now_ms - entry.last_seen_ms > expiry_interval_ms]
            for key in stale:
                del flows[key]
            removed += len(stale)
            if not flows:
                del self._flows[port]
        return removed

    def counts(self, port: int) -> dict[int, int]:
        """{class_id: active flows} for TCP, TAGGED and UNTAGGED, zeros included."""
        result = dict.fromkeys(COUNTED_CLASSES, 0)
        for entry in self._flows.get(port, {}).values():
            result[entry.class_id] += 1
        return result

    def flow_keys(self, port: int) -> list[Hashable]:
        """The active flows' keys on port (5-tuples, as the reports carry them)."""
        return list(self._flows.get(port, {}))

    def ports(self) -> set[int]:
        """Ports with at least one active flow."""
        return set(self._flows)

    def flow_class(self, port: int, flow_key: tuple[Hashable, ...]) -> int | None:
        entry = self._flows.get(port, {}).get(flow_key)
        return None if entry is None else entry.class_id

    def __len__(self) -> int:
        return sum(len(flows) for flows in self._flows.values())
