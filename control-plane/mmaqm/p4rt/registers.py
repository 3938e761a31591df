"""The occupancy audit's reads and writes: a port's departures and occupancy
registers, and the write that clears the registers (a mixin of
driver.SwitchDriver). Only a target whose ``occupancy_registers`` are not empty
(Tofino) is audited; BMv2's P4Runtime server cannot read or write registers."""

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

    async def read_occupancy(
        self, ports: Iterable[int]
    ) -> dict[int, tuple[int, dict[str, int]]]:
        """Each port's departures (packets, every class) and occupancy register
        values, in ONE ReadRequest: port -> (departures, {register: value})."""
        ports = sorted(ports)
        registers = self.occupancy_register_names
        wanted = counter_indexes(ports)[DEPARTURES_COUNTER]
        counters = [fy.P4CounterEntry(c, index=j) for i in wanted
                    for c, j in self.target.counter_reads(DEPARTURES_COUNTER, i,
                                                          self._counter_names)]
        entities: list[fy.P4Entity] = list(counters)
        entities += [fy.P4RegisterEntry(r, index=p) for p in ports for r in registers]
        departures = {p: 0 for p in ports}
        values: dict[int, dict[str, int]] = {p: {} for p in ports}
        per_port = {i: p for p in ports for i in counter_indexes([p])[DEPARTURES_COUNTER]}
        for entry in await self.read(entities) if entities else []:
            if isinstance(entry, fy.P4CounterEntry) and entry.index is not None:
                try:
                    name, index = self.target.counter_position(entry.counter_id, entry.index)
                except (ValueError, TypeError, KeyError) as exc:
                    self.malformed.add("read counter_entry", str(exc))
                    continue
                if name == DEPARTURES_COUNTER and index in per_port:
                    departures[per_port[index]] += entry.packet_count
            elif isinstance(entry, fy.P4RegisterEntry) and entry.index in values:
                values[entry.index][entry.register_id] = int(entry.data or 0)
        return {p: (departures[p], values[p]) for p in ports}

    async def clear_occupancy(self, port: int) -> None:
        """Write 0 to every occupancy register of the port (one WriteRequest,
        RegisterEntry MODIFY: the only update P4Runtime allows a register)."""
        await self.write([~fy.P4RegisterEntry(r, index=port, data=0)
                          for r in self.occupancy_register_names])
