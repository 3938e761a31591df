"""The mmaqm controller: installs a switch from config and runs the D-CBT and MCDT loops.

One asyncio process drives any number of switches (one SwitchController each).
Inputs arrive as digests (active flows, flow_report.p4) and counters (MCDT's
per-period arrivals and queue); outputs leave as table entries (port_policy
action parameters). The arithmetic lives in
mmaqm.algorithms and mmaqm.config; this module only moves data.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from . import p4constants as C
from .algorithms import DCBT_ALGORITHMS, dcbt, fred, mcdt, upta_control
from .config import Config, SwitchConfig
from .encoding import PolicyAction, policy_action
from .driver import (CONNECT_TIMEOUT_S, CONTROLLER_ELECTION_ID, DEFAULT_BMV2_JSON,
                     DEFAULT_P4INFO, SwitchDriver, wait_for_grpc)
from .flows import ActiveFlowTable
from .stats import counter_sample, sample_indexes
from .upta_loop import UptaLoop

StatsSink = Callable[[dict[str, Any]], None]

LOG = logging.getLogger(__name__)
# What one MCDT period reads (occupancy.p4), for the port's three classes.
MCDT_COUNTERS = ("queue_arrivals", "queue_admits", "queue_departures")


class SwitchController:
    """Keeps one switch configured, its D-CBT shares and MCDT thresholds current."""

    def __init__(self, config: Config, switch: SwitchConfig, driver: SwitchDriver,
                 clock_ms: Callable[[], float] = lambda: time.monotonic() * 1000,
                 stats_sink: StatsSink | None = None, stats_interval_ms: float = 100,
                 event_sink: StatsSink | None = None) -> None:
        self.config = config
        self.switch = switch
        self.driver = driver
        self.clock_ms = clock_ms
        self.flows = ActiveFlowTable()
        self.epochs: dict[int, int] = {}
        self.pushed: dict[int, PolicyAction] = {}
        self.flow_epoch_shift = config.active_flows.flow_epoch_shift
        self.stats_sink = stats_sink
        self.stats_interval_ms = stats_interval_ms
        self.event_sink = event_sink
        # MCDT (mcdt §II.2): per port, eq. 10's memory T_c * 2^16 and the
        # cumulative queue_arrivals of the last period boundary.
        self.mcdt_th_scaled: dict[int, dict[int, int]] = {}
        self.mcdt_arrivals: dict[int, dict[int, int]] = {}
        # UPTA (upta §5.1, eqs. 18-19): the fair-share loop of this switch's upta ports
        self.upta: UptaLoop | None = None
        if switch.bfd is not None or any(p.algorithm == "UPTA" and p.capacity_mbps is not None
                                         for p in switch.policies.values()):
            # (a switch with BFD settings but no upta port, e.g. an egress edge, runs the
            # loop for its BFD event log only)
            bfd = switch.bfd
            c_ports = {port for port, p in switch.policies.items()
                       if p.algorithm == "UPTA" and p.upta_mode == "C"}
            # C-UPTA ingress edge: probes on the paths that leave through a mode-C port
            paths = [] if bfd is None else [
                upta_control.BfdPath(p.path_id, p.port, p.egress_addr)
                for p in bfd.paths if p.port in c_ports]
            self.upta = UptaLoop(self, router_addr=None if bfd is None else bfd.router_addr,
                                 bfd_paths=paths)

    async def install(self) -> None:
        """Replace every table entry with the configuration (validated already)."""
        d = self.driver
        await d.clear()
        await d.install_classifier(self.config.classifier.tagged_dscp)
        for route in self.switch.routes:
            await d.install_route(str(route.prefix), route.port,
                                  self.switch.ports[route.port].mac, route.next_hop_mac)
        bfd = self.switch.bfd
        if bfd is not None:      # C-UPTA / BFD (upta.p4, docs/upta-plan.md §1.6-1.7)
            await d.install_upta_local_addr(bfd.router_addr)
            for port in bfd.edge_ports:
                await d.install_upta_edge_port(port)
            if bfd.cpu_port is not None:
                await d.install_upta_edge_port(bfd.cpu_port, cpu=True)
            for path in bfd.paths:
                for prefix in path.prefixes:
                    await d.install_upta_bfd_path(str(prefix), path.path_id)
        for port, policy in sorted(self.switch.policies.items()):
            if policy.algorithm == "DCBT_CHIPS":
                await d.install_cut_in_slot_session(port)
            self.epochs[port] = await d.next_policy_epoch(port)
            if policy.algorithm == "MCDT":
                self.mcdt_th_scaled[port] = mcdt.initial_th_scaled(policy.queue_limit_pkts)
            await self._push(port, self.policy_action(port))
            if policy.algorithm == "MCDT":   # the first period starts now
                self.mcdt_arrivals[port], _ = await self._read_mcdt_counters(port)
        await d.enable_flow_reports()
        LOG.info("%s: installed %d routes, %d port policies", self.switch.name,
                 len(self.switch.routes), len(self.switch.policies))

    def policy_action(self, port: int) -> PolicyAction:
        """The port's port_policy action, with D-CBT shares from the active flows
        and MCDT thresholds from the last period update."""
        policy = self.switch.policies[port]
        counts = self.flows.counts(port)
        share_tagged, share_untagged = dcbt.class_shares(
            counts[C.CLASS_TCP], counts[C.CLASS_TAGGED], counts[C.CLASS_UNTAGGED])
        th_scaled = self.mcdt_th_scaled.get(port)
        th_pkts = None if th_scaled is None else \
            {c: th >> C.AVG_FRAC_BITS for c, th in th_scaled.items()}
        return policy_action(
            policy, policy_epoch=self.epochs[port], flow_epoch_shift=self.flow_epoch_shift,
            share_tagged=share_tagged, share_untagged=share_untagged, mcdt_th_pkts=th_pkts,
            upta_shares_bps=None if self.upta is None else self.upta.shares_bps.get(port))

    async def _push(self, port: int, action: PolicyAction) -> None:
        await self.driver.write_port_policy(port, action)
        self.pushed[port] = action

    async def update_shares(self) -> list[int]:
        """Expire flows, recompute D-CBT shares, push the ports whose params changed."""
        self.flows.expire(self.clock_ms(), self.config.active_flows.expiry_interval_ms)
        changed = []
        for port, policy in sorted(self.switch.policies.items()):
            if policy.algorithm not in DCBT_ALGORITHMS:
                continue
            action = self.policy_action(port)
            if action != self.pushed.get(port):
                await self._push(port, action)
                changed.append(port)
                if self.event_sink is not None:
                    self.event_sink(self.share_push_event(port, action))
                LOG.debug("%s port %d: flows %s -> tagged_share_q16 %d untagged_th %d",
                          self.switch.name, port, self.flows.counts(port),
                          action.params["tagged_share_q16"], action.params["untagged_th_scaled"])
        return changed

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
        period_ms = self.switch.policies[port].mcdt_period_ms
        assert period_ms is not None
        while True:
            await asyncio.sleep(period_ms / 1000)
            await self.mcdt_update(port)

    def share_push_event(self, port: int, action: PolicyAction) -> dict[str, Any]:
        """One share_push event: when (CLOCK_REALTIME, after the write returned) the
        switch got D-CBT shares from which active-flow counts. It times how far the
        shares lag behind flows that start or stop (README "Active-flow counting")."""
        return {"event": "share_push", "t_ns": time.time_ns(), "switch": self.switch.name,
                "port": port,
                "active_flows": {C.CLASS_NAMES[c]: n for c, n in self.flows.counts(port).items()},
                "tagged_share_q16": action.params["tagged_share_q16"],
                "untagged_th_scaled": action.params["untagged_th_scaled"]}

    async def receive_flow_reports(self) -> None:
        async for reports in self.driver.flow_reports():
            now_ms = self.clock_ms()
            for report in reports:
                self.flows.observe(report.egress_port, report.class_id, report.flow_key, now_ms)

    async def sample_stats(self) -> dict[str, Any]:
        """One time-series sample: cumulative queue counters of every configured
        port (one ReadRequest), active-flow counts and the pushed D-CBT shares."""
        ports = sorted(self.switch.ports)
        t_ns = time.time_ns()  # CLOCK_REALTIME: namespaces and hosts share it
        values = await self.driver.read_counter_indexes(sample_indexes(ports))
        return {
            **counter_sample(t_ns, self.switch.name, ports, values),
            "active_flows": {str(p): {C.CLASS_NAMES[c]: n for c, n in self.flows.counts(p).items()}
                             for p in ports},
            "policies": {str(p): {"algorithm": self.pushed[p].algorithm,
                                  **{k: v for k, v in self.pushed[p].params.items() if k in (
                                      "tagged_share_q16", "tagged_th_scaled",
                                      "untagged_th_scaled", "tcp_th_pkts", "tagged_th_pkts",
                                      "untagged_th_pkts")}}
                         for p in sorted(self.pushed)},
            **self.fred_slot_sample(),
        }

    def fred_slot_sample(self) -> dict[str, Any]:
        """For FRED ports: the active flows (from the flow reports) and how many of them
        share a flow slot in the data plane, {"fred_slots": {port: {flows, sharing}}}."""
        out = {}
        for port, action in sorted(self.pushed.items()):
            if action.algorithm == "FRED":
                flows, sharing = fred.shared_slot_flows(
                    self.flows.flow_keys(port), action.params["fred_slot_mask"] + 1)
                out[str(port)] = {"flows": flows, "sharing": sharing}
        return {"fred_slots": out} if out else {}

    async def _stats_loop(self) -> None:
        assert self.stats_sink is not None
        while True:
            self.stats_sink(await self.sample_stats())
            await asyncio.sleep(self.stats_interval_ms / 1000)

    def extra_tasks(self) -> list[Any]:
        """Coroutines run() adds beside its own loops: the UPTA interval loop."""
        return [] if self.upta is None else [self.upta.run()]

    async def run(self) -> None:
        """Receive flow reports and update shares every update_interval_ms, forever;
        update each MCDT port every mcdt_period_ms; with a stats sink, also sample
        counters every stats_interval_ms."""
        tasks = [asyncio.create_task(self.receive_flow_reports())]
        tasks += [asyncio.create_task(self._mcdt_loop(port))
                  for port, policy in sorted(self.switch.policies.items())
                  if policy.algorithm == "MCDT"]
        if self.stats_sink is not None:
            tasks.append(asyncio.create_task(self._stats_loop()))
        tasks += [asyncio.create_task(c) for c in self.extra_tasks()]
        try:
            while True:
                for task in tasks:  # a failed reader must not go unnoticed
                    if task.done():
                        task.result()
                        raise RuntimeError(f"{self.switch.name}: background task ended")
                self.driver.check_connected()   # nor a switch that went away
                await self.update_shares()
                await asyncio.sleep(self.config.active_flows.update_interval_ms / 1000)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def jsonl_sink(stream: TextIO) -> StatsSink:
    """A stats sink writing one JSON object per line, flushed at once."""
    def write(sample: dict[str, Any]) -> None:
        stream.write(json.dumps(sample, separators=(",", ":")) + "\n")
        stream.flush()
    return write


async def run_switches(config: Config, *, p4info: Path = DEFAULT_P4INFO,
                       bmv2_json: Path = DEFAULT_BMV2_JSON, install_only: bool = False,
                       names: list[str] | None = None, stats_sink: StatsSink | None = None,
                       stats_interval_ms: float = 100,
                       event_sink: StatsSink | None = None,
                       election_id: int = CONTROLLER_ELECTION_ID, role: str = "",
                       timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Connect to every (or the named) switch, install it, then run the loops.
    timeout_s bounds each connection step: the switch listening, then the
    P4Runtime connection (arbitration, pipeline)."""
    selected = [config.switches[n] for n in (names or sorted(config.switches))]

    async def one(sw: SwitchConfig) -> None:
        # a switch just started may not listen yet
        await wait_for_grpc(sw.p4runtime_addr, timeout_s=timeout_s)
        async with SwitchDriver(sw.name, sw.p4runtime_addr, device_id=sw.device_id,
                                p4info=p4info, bmv2_json=bmv2_json, election_id=election_id,
                                role=role, connect_timeout_s=timeout_s) as driver:
            controller = SwitchController(config, sw, driver, stats_sink=stats_sink,
                                          stats_interval_ms=stats_interval_ms,
                                          event_sink=event_sink)
            await controller.install()
            if not install_only:
                await controller.run()

    await asyncio.gather(*(one(sw) for sw in selected))
