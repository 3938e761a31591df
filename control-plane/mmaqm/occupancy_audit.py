"""The occupancy audit (docs/tofino.md "Counts that heal"): on a target whose
occupancy counts a lost departure report can leave too high (Tofino), clear a
port's counts when it is idle (a mixin of controller.SwitchController).

A port is stale when, between two audits, its departures did not advance while
its total count (queue_pkts) was not 0 at both: a queued packet would have left
within the period (far above the longest queueing delay), so the count holds
packets the queue does not. The controller then writes 0 to every occupancy
register of the port and emits an `occupancy_reset` event. A busy port's
departures advance, so it is never reset. On a target without such registers
(v1model: its counts are exact) the audit does not run.
"""

from __future__ import annotations

import logging
import time
from typing import Any

LOG = logging.getLogger(__name__)


class OccupancyAudit:
    def _init_audit(self) -> None:
        target = self.driver.target
        self.audit_interval_s = (self.switch.occupancy_audit_interval_s
                                 if target.audits_occupancy else 0.0)
        # port -> (departures, total count) at the last audit
        self._audit_last: dict[int, tuple[int, int]] = {}
        self.occupancy_resets = 0

    async def audit_occupancy(self) -> list[int]:
        """One audit of every port under AQM (one Read; a Write per stale port).
        Returns the ports reset."""
        if not self.audit_interval_s or not self.switch.policies:
            return []
        total = self.driver.occupancy_register_names[:1]
        if not total:                   # the program has no occupancy registers
            return []
        sample = await self.driver.read_occupancy(self.switch.policies)
        reset = []
        for port, (departures, values) in sorted(sample.items()):
            count = values.get(total[0], 0)
            last = self._audit_last.get(port)
            self._audit_last[port] = (departures, count)
            if last is None or departures != last[0] or count == 0 or last[1] == 0:
                continue
            await self.driver.clear_occupancy(port)
            self._audit_last[port] = (departures, 0)
            self.occupancy_resets += 1
            reset.append(port)
            self._occupancy_reset_event(port, departures, values)
        return reset

    def _occupancy_reset_event(self, port: int, departures: int,
                               stale: dict[str, Any]) -> None:
        LOG.warning("%s: port %d: occupancy counts left high on an idle port (no "
                    "departures in %g s, %d departed in all): %s; cleared to 0",
                    self.switch.name, port, self.audit_interval_s, departures,
                    ", ".join(f"{k} {v}" for k, v in stale.items()))
        if self.event_sink is not None:
            self.event_sink({"event": "occupancy_reset", "t_ns": time.time_ns(),
                             "switch": self.switch.name, "port": port,
                             "departures": departures, "stale": dict(stale)})
