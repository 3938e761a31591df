"""Counter reads at v1model's names and indexes, whatever the target's layout
(a mixin of driver.SwitchDriver)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import finsy as fy

from .codec import CounterValue


class CounterReads:
    # ---- counters -----------------------------------------------------
    async def read_counters(self, names: Iterable[str]) -> dict[str, dict[int, CounterValue]]:
        """Every index of several counters in ONE ReadRequest (one consistent-ish
        snapshot instead of one round trip per counter), at v1model's names and
        indexes; a counter the program lacks reads as no values."""
        names = list(names)
        entities = [fy.P4CounterEntry(c) for name in names
                    for c, _ in self.target.counter_reads(name, None, self._counter_names)]
        return await self._read_counter_entities(names, entities)

    async def read_counter_indexes(
        self, wanted: Mapping[str, Iterable[int]]
    ) -> dict[str, dict[int, CounterValue]]:
        """Selected indexes of several counters in ONE P4Runtime ReadRequest
        (a time series samples a few ports, not all NUM_PORTS)."""
        entities = [fy.P4CounterEntry(c, index=j) for name, idx in wanted.items() for i in idx
                    for c, j in self.target.counter_reads(name, i, self._counter_names)]
        return await self._read_counter_entities(list(wanted), entities)

    async def _read_counter_entities(
        self, names: list[str], entities: list[fy.P4CounterEntry]
    ) -> dict[str, dict[int, CounterValue]]:
        """The read entries, reported at v1model's names and indexes (the target
        translates; entries of one position add up)."""
        result: dict[str, dict[int, CounterValue]] = {name: {} for name in names}
        if not entities:
            return result
        for entry in await self.read(entities):
            if entry.index is None:
                continue
            try:
                name, index = self.target.counter_position(entry.counter_id, entry.index)
            except (ValueError, TypeError, KeyError) as exc:
                self.malformed.add("read counter_entry", str(exc))
                continue
            if index is None or name not in result:   # a slot v1model has no index for
                continue
            value = CounterValue(entry.packet_count, entry.byte_count)
            old = result[name].get(index)
            if old is not None:
                value = CounterValue(old.packets + value.packets, old.bytes + value.bytes)
            result[name][index] = value
        return result
