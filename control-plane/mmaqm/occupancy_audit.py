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

The departures are a P4Runtime counter read; the registers are read and
cleared over BfRt (the build's bfrt.json names them), because bf_switchd's
P4Runtime server refuses register reads and writes. A Tofino register is per
pipe: the audit judges the copy of Target.occupancy_pipe (pipe 0, where every
configured port's arrivals and every report are counted) and its write sets
every pipe's copy to 0 (one BfRt write, every pipe: the other copies count
nothing for a configured port). Without a BfRt address the controller refuses
to start the audit (controller._bfrt_schema): set one, or the interval to 0.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from .p4rt.bfrt import REGISTER_TABLE_TYPE, BfrtInfo, BfrtRequestError, BfrtSchemaError, \
    Table, TableWrite

LOG = logging.getLogger(__name__)


def occupancy_tables(info: BfrtInfo, registers: Sequence[str],
                     ports: Sequence[int]) -> dict[str, Table]:
    """register (its P4Info name) -> its BfRt table, each checked: a register
    table of one data field, every port an index of it. BfrtSchemaError naming
    what is not."""
    tables = {}
    for name in registers:
        table = info.table(name)
        if table.table_type != REGISTER_TABLE_TYPE:
            raise BfrtSchemaError(f"{table.name}: a {table.table_type} table, not the "
                                  f"register {name}")
        if len(table.fields) != 1:
            raise BfrtSchemaError(f"{table.name}: {len(table.fields)} data fields, not the "
                                  f"one of an occupancy count")
        for port in ports:
            info.key_entry(table, port)
        tables[name] = table
    return tables


class OccupancyAudit:
    def _init_audit(self) -> None:
        target = self.driver.target
        self.audit_interval_s = (self.switch.occupancy_audit_interval_s
                                 if target.audits_occupancy else 0.0)
        self.audit_pipe = target.occupancy_pipe
        # port -> (departures, total count) at the last audit
        self._audit_last: dict[int, tuple[int, int]] = {}
        self.occupancy_resets = 0

    @property
    def audited_registers(self) -> tuple[str, ...]:
        """The occupancy registers the audit reads (none: no audit)."""
        if not self.audit_interval_s or not self.switch.policies:
            return ()
        return self.driver.occupancy_register_names

    async def audit_occupancy(self) -> list[int]:
        """One audit of every port under AQM: one P4Runtime Read (departures), one
        BfRt Read (registers) and, when a port is stale, one BfRt Write clearing
        every stale port's registers. Returns the ports reset."""
        registers = self.audited_registers
        if not registers:
            return []
        ports = sorted(self.switch.policies)
        departures = await self.driver.read_departures(ports)
        bfrt = await self._open_bfrt()
        if bfrt is None:        # refused at construction (_bfrt_schema): not reached
            raise RuntimeError(f"{self.switch.name}: the occupancy audit has no BfRt "
                               f"connection")
        try:
            values = await self._read_occupancy_bfrt(bfrt, registers, ports)
            stale = []
            for port in ports:
                count = values[port].get(registers[0], 0)
                last = self._audit_last.get(port)
                self._audit_last[port] = (departures[port], count)
                if last is None or departures[port] != last[0] or count == 0 or last[1] == 0:
                    continue
                stale.append(port)
            if stale:
                tables = occupancy_tables(self.bfrt_info, registers, stale)
                await bfrt.write(
                    TableWrite(t.name, {t.keys[0].name: port}, {f: 0 for f in t.fields})
                    for port in stale for t in tables.values())
        finally:
            await bfrt.close()
        for port in stale:
            self._audit_last[port] = (departures[port], 0)
            self.occupancy_resets += 1
            self._occupancy_reset_event(port, departures[port], values[port])
        return stale

    async def _read_occupancy_bfrt(self, bfrt: Any, registers: Sequence[str],
                                   ports: Sequence[int]) -> dict[int, dict[str, int]]:
        """port -> {register: its count in the audited pipe}, in one BfRt Read
        (from the device: the server answers each field once per pipe)."""
        tables = occupancy_tables(self.bfrt_info, registers, ports)
        entries = await bfrt.read([(t.name, port) for port in ports for t in tables.values()],
                                  from_hw=True)
        by_table = {t.name: name for name, t in tables.items()}
        pipe = self.audit_pipe or 0
        values: dict[int, dict[str, int]] = {port: {} for port in ports}
        for entry in entries:
            name = by_table.get(entry.table)
            port = next(iter(entry.key.values()), None)
            if name is None or port not in values:
                raise BfrtRequestError(f"{self.switch.name}: a BfRt Read answered "
                                       f"{entry.table}[{port}], which was not asked")
            [per_pipe] = entry.data.values() or [[0]]
            if len(per_pipe) <= pipe:
                raise BfrtRequestError(f"{self.switch.name}: {entry.table}[{port}]: "
                                       f"{len(per_pipe)} pipes' values, no pipe {pipe}")
            values[port][name] = int(per_pipe[pipe])
        return values

    def _occupancy_reset_event(self, port: int, departures: int,
                               stale: dict[str, Any]) -> None:
        LOG.warning("%s: port %d: occupancy counts left high on an idle port (no "
                    "departures in %g s, %d departed in all): %s (pipe %s); cleared to 0 "
                    "over BfRt", self.switch.name, port, self.audit_interval_s, departures,
                    ", ".join(f"{k} {v}" for k, v in stale.items()), self.audit_pipe)
        if self.event_sink is not None:
            self.event_sink({"event": "occupancy_reset", "t_ns": time.time_ns(),
                             "switch": self.switch.name, "port": port, "pipe": self.audit_pipe,
                             "departures": departures, "stale": dict(stale)})
