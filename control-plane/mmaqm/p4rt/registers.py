"""The occupancy audit's P4Runtime reads: a port's departures (a mixin of
driver.SwitchDriver), and the names of the occupancy registers the program has.
Only a target whose ``occupancy_registers`` are not empty (Tofino) is audited;
its registers are read and cleared over BfRt (occupancy_audit), because
bf_switchd's P4Runtime server refuses register reads and writes, and BMv2's
cannot read registers either."""

from __future__ import annotations

from collections.abc import Iterable

import finsy as fy

from ..stats import counter_indexes

DEPARTURES_COUNTER = "queue_departures"


class OccupancyRegisters:
    @property
    def occupancy_register_names(self) -> tuple[str, ...]:
        """The target's occupancy registers the program has, the total first."""
        have = {r.alias for r in self.switch.p4info.registers}
        return tuple(r for r in self.target.occupancy_registers if r in have)

    async def read_departures(self, ports: Iterable[int]) -> dict[int, int]:
        """Each port's departures (packets, every class), in ONE ReadRequest of
        counter entries: port -> packets."""
        ports = sorted(ports)
        wanted = counter_indexes(ports)[DEPARTURES_COUNTER]
        counters = [fy.P4CounterEntry(c, index=j) for i in wanted
                    for c, j in self.target.counter_reads(DEPARTURES_COUNTER, i,
                                                          self._counter_names)]
        departures = {p: 0 for p in ports}
        per_port = {i: p for p in ports for i in counter_indexes([p])[DEPARTURES_COUNTER]}
        for entry in await self.read(counters) if counters else []:
            if isinstance(entry, fy.P4CounterEntry) and entry.index is not None:
                try:
                    name, index = self.target.counter_position(entry.counter_id, entry.index)
                except (ValueError, TypeError, KeyError) as exc:
                    self.malformed.add("read counter_entry", str(exc))
                    continue
                if name == DEPARTURES_COUNTER and index in per_port:
                    departures[per_port[index]] += entry.packet_count
        return departures
