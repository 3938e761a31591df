"""MCDT's control loop (mcdt §II.2, eqs. 5-10): every period the controller reads
the period's arrivals per class and the queue, computes the class thresholds and
pushes them (a mixin of mmaqm.controller.SwitchController: it uses the
controller's switch, driver, policy_action, _push and event_sink)."""

from __future__ import annotations

import asyncio
import logging
import time

from .. import p4constants as C
from . import mcdt

LOG = logging.getLogger("mmaqm.controller")
# What one MCDT period reads (occupancy.p4), for the port's three classes.
MCDT_COUNTERS = ("queue_arrivals", "queue_admits", "queue_departures")


class McdtPeriods:
    """Per port, eq. 10's memory T_c * 2^16 (mcdt_th_scaled) and the cumulative
    queue_arrivals of the last period boundary (mcdt_arrivals)."""

    def _init_periods(self) -> None:
        self.mcdt_th_scaled: dict[int, dict[int, int]] = {}
        self.mcdt_arrivals: dict[int, dict[int, int]] = {}

    def _prepare_periods(self, port: int, continues: bool) -> None:
        """At install: eq. 10's memory and the running period go on only where the
        switch still holds the policy this controller has been updating (continues);
        otherwise the thresholds start at B and a new period starts."""
        policy = self.switch.policies[port]
        periodic = policy.plugin.period_ms(policy) is not None
        if not (periodic and continues and port in self.mcdt_th_scaled):
            self.mcdt_th_scaled.pop(port, None)
            self.mcdt_arrivals.pop(port, None)
            if periodic:
                self.mcdt_th_scaled[port] = mcdt.initial_th_scaled(policy.queue_limit_pkts)

    def period_thresholds_pkts(self, port: int) -> dict[int, int] | None:
        """The port's class thresholds of the last period, in whole packets (None
        before the first)."""
        th_scaled = self.mcdt_th_scaled.get(port)
        return None if th_scaled is None else \
            {c: th >> C.AVG_FRAC_BITS for c, th in th_scaled.items()}

    async def start_periods(self, ports: list[int]) -> None:
        """The first period of each of these ports starts now."""
        for port in ports:
            self.mcdt_arrivals[port], _ = await self._read_mcdt_counters(port)

    async def _read_mcdt_counters(self, port: int) -> tuple[dict[int, int], int]:
        """(cumulative arrivals per class, queue occupancy = admits - departures) of
        the port, from ONE ReadRequest."""
        indexes = [C.class_index(port, c) for c in mcdt.MCDT_CLASSES]
        values = await self.driver.read_counter_indexes(
            {name: indexes for name in MCDT_COUNTERS})

        def packets(name: str, class_id: int) -> int:
            value = values[name].get(C.class_index(port, class_id))
            return 0 if value is None else value.packets

        arrivals = {c: packets("queue_arrivals", c) for c in mcdt.MCDT_CLASSES}
        queue_pkts = sum(packets("queue_admits", c) - packets("queue_departures", c)
                         for c in mcdt.MCDT_CLASSES)
        return arrivals, queue_pkts

    async def mcdt_update(self, port: int) -> bool:
        """One MCDT period of a port (mcdt §II.2, eqs. 5-10): the arrivals per class
        since the last update (queue_arrivals counts drops too: the paper counts
        before its threshold test) and Q(t) = admits - departures now, through
        mcdt.period_update; the new whole-packet thresholds modify the port's
        entry, keeping its policy epoch. True when something was written."""
        policy = self.switch.policies[port]
        totals, queue_pkts = await self._read_mcdt_counters(port)
        previous = self.mcdt_arrivals.get(port)
        self.mcdt_arrivals[port] = totals
        if previous is None:
            return False
        try:
            arrivals = mcdt.period_arrivals(previous, totals)
        except ValueError as exc:    # a pipeline push reset the counters: a new period
            LOG.warning("%s port %d: MCDT period skipped: %s", self.switch.name, port, exc)
            return False
        # Q(t): the three counters are read one after another within the request, so
        # admits - departures may be off by packets that moved meanwhile; the data
        # plane keeps the queue below queue_limit_pkts = B.
        queue_pkts = min(max(queue_pkts, 0), policy.queue_limit_pkts)
        result = mcdt.period_update(arrivals, queue_pkts, self.mcdt_th_scaled[port],
                                    buffer_pkts=policy.queue_limit_pkts)
        self.mcdt_th_scaled[port] = result.th_scaled
        action = self.policy_action(port)
        if action == self.pushed.get(port):
            return False
        await self._push(port, action)
        if self.event_sink is not None:
            self.event_sink({"event": "mcdt_push", "t_ns": time.time_ns(),
                             "switch": self.switch.name, "port": port,
                             "arrivals": {C.CLASS_NAMES[c]: n for c, n in arrivals.items()},
                             "queue_pkts": queue_pkts,
                             "th_pkts": {C.CLASS_NAMES[c]: n
                                         for c, n in result.th_pkts.items()}})
        LOG.debug("%s port %d: MCDT arrivals %s, queue %d -> thresholds %s", self.switch.name,
                  port, arrivals, queue_pkts, result.th_pkts)
        return True

    async def _mcdt_loop(self, port: int) -> None:
        policy = self.switch.policies[port]
        period_ms = policy.plugin.period_ms(policy)
        assert period_ms is not None
        while True:
            await asyncio.sleep(period_ms / 1000)
            await self.mcdt_update(port)
