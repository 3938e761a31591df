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
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import finsy as fy

from . import p4constants as C
from . import reconcile as R
from . import algorithms as A
from .algorithms import dcbt, mcdt, upta_control
from .config import Config, SwitchConfig
from .encoding import PolicyAction, policy_action
from .driver import (CONNECT_TIMEOUT_S, CONTROLLER_ELECTION_ID, DEFAULT_BMV2_JSON,
                     DEFAULT_P4INFO, TCP_CONNECT_TIMEOUT_S, PrimaryLostError,
                     SwitchConnectionError, SwitchDriver, describe_error, tcp_connect_once,
                     wait_for_grpc)
from .flows import ActiveFlowTable, SwitchClock
from .stats import counter_sample, sample_indexes
from .upta_loop import UptaLoop

StatsSink = Callable[[dict[str, Any]], None]

LOG = logging.getLogger(__name__)
# Flow reports handled before the report task yields to the other loops (issue 9:
# a backlog of digests stalled the share and stats loops for seconds).
REPORT_BATCH = 256
# How far back the report lag is remembered (SwitchController.report_lag_ms).
REPORT_LAG_WINDOW_MS = 1000.0
# What one MCDT period reads (occupancy.p4), for the port's three classes.
MCDT_COUNTERS = ("queue_arrivals", "queue_admits", "queue_departures")
# Reconnecting after a lost switch (SwitchSupervisor): the first attempt 0.1 s after
# the loss, then doubling up to 1 s between attempts (a restarted BMv2 is back within
# 1 s of listening; an attempt costs one TCP connect).
RECONNECT_INITIAL_S = 0.1
RECONNECT_MAX_S = 1.0


class LoopLateness:
    """How late a periodic loop woke up (ms past its due time): the values since
    the last take(), and the largest since the start."""

    def __init__(self) -> None:
        self._values: list[float] = []
        self.max_ms = 0.0

    async def sleep(self, interval_s: float) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time() + interval_s
        await asyncio.sleep(interval_s)
        late_ms = max(loop.time() - due, 0.0) * 1000
        if len(self._values) < 10_000:
            self._values.append(round(late_ms, 3))
        self.max_ms = max(self.max_ms, late_ms)

    def take(self) -> list[float]:
        values, self._values = self._values, []
        return values


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
        self.flows = ActiveFlowTable(config.active_flows.max_flows)
        # Report times: the switch's clock mapped to clock_ms (flows.SwitchClock).
        self.switch_clock = SwitchClock()
        self.flow_reports = 0            # reports received since the start
        self.report_age_max_ms = 0.0     # the oldest report handled since the last sample
        self._report_ages: deque[tuple[float, float]] = deque()   # (handled at, oldest age)
        self.update_lateness = LoopLateness()
        self.stats_lateness = LoopLateness()
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
        if switch.bfd is not None or any(p.plugin.fair_share_loop(p) is not None
                                         for p in switch.policies.values()):
            # (a switch with BFD settings but no upta port, e.g. an egress edge, runs the
            # loop for its BFD event log only)
            bfd = switch.bfd
            c_ports = {port for port, p in switch.policies.items()
                       if p.plugin.probes_bfd_paths(p)}
            # C-UPTA ingress edge: probes on the paths that leave through a mode-C port
            paths = [] if bfd is None else [
                upta_control.BfdPath(p.path_id, p.port, p.egress_addr)
                for p in bfd.paths if p.port in c_ports]
            self.upta = UptaLoop(self, router_addr=None if bfd is None else bfd.router_addr,
                                 bfd_paths=paths)

    async def install(self) -> R.WritePlan:
        """Make the switch hold exactly the configuration (validated already): read
        what it has (one ReadRequest), write only the difference (reconcile.plan_writes:
        inserts and modifies before deletes, so a running flow always has its route
        and policy). An unchanged configuration is zero writes. Returns the plan sent.

        Policy epochs (red.p4 red_on_policy_epoch): a port whose installed policy is
        the same (reconcile.same_policy: the same algorithm and configured parameters)
        keeps its epoch, so its averages survive a reinstall; a new or changed policy
        gets a new epoch (policy_epoch_from_clock, never the installed one), which
        resets them. MCDT (mcdt §II.2): the thresholds start at B and a new period
        starts, unless the switch still holds the policy this controller has been
        updating (a reinstall): then eq. 10's memory and the period go on. D-CBT
        shares come from this controller's active flows (none yet in a new one)."""
        d = self.driver
        self.switch_clock.reset()        # a (re)installed switch may have restarted: new clock
        current = await d.read_state()
        installed = current.port_policies()
        new_mcdt_periods = []
        for port, policy in sorted(self.switch.policies.items()):
            self._prepare_policy(port, installed.get(port))
            if policy.plugin.period_ms(policy) is not None and port not in self.mcdt_arrivals:
                new_mcdt_periods.append(port)
        desired = self.desired_state()
        plan = R.plan_writes(current, desired)
        await d.apply_writes(plan)
        resets = await d.reset_defaults()
        self.pushed = {port: self.policy_action(port) for port in sorted(self.switch.policies)}
        for port in new_mcdt_periods:       # the first period starts now
            self.mcdt_arrivals[port], _ = await self._read_mcdt_counters(port)
        LOG.info("%s: installed %d routes, %d port policies: %d inserted, %d modified, "
                 "%d deleted, %d defaults reset", self.switch.name, len(self.switch.routes),
                 len(self.switch.policies), plan.count(R.INSERT), plan.count(R.MODIFY),
                 plan.count(R.DELETE), resets)
        return plan

    def _prepare_policy(self, port: int, installed: PolicyAction | None) -> None:
        """The port's policy epoch and MCDT state for install (see install)."""
        policy = self.switch.policies[port]
        template = self.policy_action(port, policy_epoch=0)
        kept = installed.params.get("policy_epoch") if installed is not None else None
        continues = R.same_policy(installed, template)
        if continues:       # DROP_TAIL has no epoch: any will do
            self.epochs[port] = kept if kept is not None else self.epochs.get(port, 0)
        else:
            self.epochs[port] = self.driver.new_policy_epoch(port, kept)
        # MCDT: eq. 10's memory and the running period go on only where the switch
        # still holds the policy this controller has been updating
        periodic = policy.plugin.period_ms(policy) is not None
        if not (periodic and continues and port in self.mcdt_th_scaled
                and R.same_policy(self.pushed.get(port), template)):
            self.mcdt_th_scaled.pop(port, None)
            self.mcdt_arrivals.pop(port, None)
            if periodic:
                self.mcdt_th_scaled[port] = mcdt.initial_th_scaled(policy.queue_limit_pkts)

    def desired_state(self) -> R.SwitchState:
        """What the switch should hold: the flow digest config, ChIPS's clone
        sessions, the classifier, the routes, a policy for every configured port."""
        sw = self.switch
        entries = R.classifier_entries(self.config.classifier.tagged_dscp)
        entries += [R.route_entry(str(r.prefix), r.port, sw.ports[r.port].mac, r.next_hop_mac)
                    for r in sw.routes]
        entries += [R.policy_entry(port, self.policy_action(port))
                    for port in sorted(sw.policies)]
        # the range tables that encode each policy on a target that has them
        entries += [e for port in sorted(sw.policies)
                    for e in self.driver.range_entries(port, self.policy_action(port))]
        if sw.bfd is not None:      # C-UPTA / BFD (upta.p4, docs/upta-plan.md §1.6-1.7)
            entries += R.bfd_entries(sw.bfd)
        # ChIPS's slot sessions (and on Tofino the departure reports' session)
        clones = self.driver.clone_sessions(port for port, policy in sorted(sw.policies.items())
                                            if policy.plugin.needs_cut_in_sessions)
        return R.SwitchState(digests=(R.flow_digest_config(
            digest=self.driver.flow_digest),), clone_sessions=tuple(clones),
                             entries=tuple(entries))

    def policy_action(self, port: int, policy_epoch: int | None = None) -> PolicyAction:
        """The port's port_policy action, with D-CBT shares from the active flows
        and MCDT thresholds from the last period update; the port's policy epoch
        unless policy_epoch is given."""
        policy = self.switch.policies[port]
        counts = self.flows.counts(port)
        share_tagged, share_untagged = dcbt.class_shares(
            counts[C.CLASS_TCP], counts[C.CLASS_TAGGED], counts[C.CLASS_UNTAGGED])
        th_scaled = self.mcdt_th_scaled.get(port)
        th_pkts = None if th_scaled is None else \
            {c: th >> C.AVG_FRAC_BITS for c, th in th_scaled.items()}
        return policy_action(
            policy, policy_epoch=self.epochs[port] if policy_epoch is None else policy_epoch,
            flow_epoch_shift=self.flow_epoch_shift,
            share_tagged=share_tagged, share_untagged=share_untagged, mcdt_th_pkts=th_pkts,
            upta_shares_bps=None if self.upta is None else self.upta.shares_bps.get(port))

    async def _push(self, port: int, action: PolicyAction) -> None:
        await self.driver.write_port_policy(port, action)
        self.pushed[port] = action

    def report_lag_ms(self, now_ms: float) -> float:
        """How far behind the switch the reports are: the age of the oldest report in
        any list handled in the last REPORT_LAG_WINDOW_MS (0 when none was). A report
        made now may take that long to arrive (BMv2 batches digests, a backlog
        delays them), so the flows are judged as of now minus the lag: judged at
        now, a flow whose next report is still on its way would expire early."""
        ages = self._report_ages
        while ages and now_ms - ages[0][0] > REPORT_LAG_WINDOW_MS:
            ages.popleft()
        return max((age for _, age in ages), default=0.0)

    async def update_shares(self) -> list[int]:
        """Expire flows (as of now minus the report lag), recompute D-CBT shares,
        push the ports whose params changed."""
        now_ms = self.clock_ms()
        self.flows.expire(now_ms - self.report_lag_ms(now_ms),
                          self.config.active_flows.expiry_interval_ms)
        changed = []
        for port, policy in sorted(self.switch.policies.items()):
            if not policy.plugin.follows_flow_shares:
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
        policy = self.switch.policies[port]
        period_ms = policy.plugin.period_ms(policy)
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
        """Count each report at the time its packet arrived at the switch (mapped
        by switch_clock; a report without one at the time it is handled), and
        yield to the other loops after every REPORT_BATCH reports."""
        observe = self.flows.observe
        to_local_ms = self.switch_clock.to_local_ms
        handled = 0
        async for reports in self.driver.flow_reports():
            now_ms = self.clock_ms()
            oldest_ms = now_ms
            for report in reports:
                ts_us = report.ingress_ts_us
                made_ms = now_ms if ts_us is None else to_local_ms(ts_us, now_ms)
                oldest_ms = min(oldest_ms, made_ms)
                observe(report.egress_port, report.class_id, report.flow_key, made_ms)
            self.flow_reports += len(reports)
            self.report_age_max_ms = max(self.report_age_max_ms, now_ms - oldest_ms)
            self._report_ages.append((now_ms, now_ms - oldest_ms))
            handled += len(reports)
            if handled >= REPORT_BATCH:
                handled = 0
                await asyncio.sleep(0)

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
            "controller": self.controller_sample(),
        }

    def controller_sample(self) -> dict[str, Any]:
        """The controller's own load (issue 9): flow reports received and refused
        (table full), flows tracked, digest lists dropped (the driver's queue full),
        the report lag the flows are judged with (report_lag_ms), the oldest report handled since the last
        sample (ms between its packet and its handling), and how late the share
        and stats loops woke up since the last sample (ms, one value per wake-up)."""
        age, self.report_age_max_ms = self.report_age_max_ms, 0.0
        return {"flow_reports": self.flow_reports, "flows_refused": self.flows.refused,
                "flows": len(self.flows), "report_age_max_ms": round(age, 3),
                "report_lag_ms": round(self.report_lag_ms(self.clock_ms()), 3),
                "clock_restarts": self.switch_clock.restarts,
                "digest_lists_dropped": getattr(self.driver, "digest_lists_dropped", 0),
                "lateness_ms": {"update": self.update_lateness.take(),
                                "stats": self.stats_lateness.take()}}

    def fred_slot_sample(self) -> dict[str, Any]:
        """For ports whose algorithm keeps per-flow slots (FRED): the active flows (from
        the flow reports) and how many of them share a flow slot in the data plane,
        {"fred_slots": {port: {flows, sharing}}}."""
        out: dict[str, dict[str, Any]] = {}
        for port, action in sorted(self.pushed.items()):
            sample = A.of_action(action.name).slot_sample(action.params,
                                                          self.flows.flow_keys(port))
            if sample is not None:
                key, value = sample
                out.setdefault(key, {})[str(port)] = value
        return out

    async def _stats_loop(self) -> None:
        assert self.stats_sink is not None
        while True:
            self.stats_sink(await self.sample_stats())
            await self.stats_lateness.sleep(self.stats_interval_ms / 1000)

    def extra_tasks(self) -> list[Any]:
        """Coroutines run() adds beside its own loops: the UPTA interval loop."""
        return [] if self.upta is None else [self.upta.run()]

    async def run(self) -> None:
        """Receive flow reports and update shares every update_interval_ms, forever;
        update each MCDT port every mcdt_period_ms; with a stats sink, also sample
        counters every stats_interval_ms. Ends with SwitchConnectionError when the
        switch goes away and PrimaryLostError when another controller takes the
        primary role (SwitchSupervisor reconnects, or waits as a backup)."""
        tasks = [asyncio.create_task(self.receive_flow_reports())]
        tasks += [asyncio.create_task(self._mcdt_loop(port))
                  for port, policy in sorted(self.switch.policies.items())
                  if policy.plugin.period_ms(policy) is not None]
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
                await self.update_lateness.sleep(self.config.active_flows.update_interval_ms / 1000)
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


@dataclass(frozen=True)
class ReconnectPolicy:
    """How a controller run comes back after its switch went away: attempts
    (a TCP connect within TCP_CONNECT_TIMEOUT_S, then the P4Runtime connection within
    connect_timeout_s) with a backoff from initial_s doubling up to max_s; give_up_s:
    the time without a connection after which the switch is given up (None: never)."""

    initial_s: float = RECONNECT_INITIAL_S
    max_s: float = RECONNECT_MAX_S
    give_up_s: float | None = None

    def delays(self) -> Iterator[float]:
        delay = self.initial_s
        while True:
            yield delay
            delay = min(delay * 2, self.max_s)


class SwitchGivenUp(SwitchConnectionError):
    """A lost switch did not come back within ReconnectPolicy.give_up_s."""


class SwitchSupervisor:
    """One switch's whole run: connect, (as a backup: wait to become primary),
    install, run the loops; when the P4Runtime connection goes down (the switch
    restarted or the channel broke), reconnect with backoff, let finsy push the
    pipeline again if the switch has lost it (it compares the P4Info cookie on
    every connection), reinstall and resume the loops; when another controller
    takes the primary role, stop writing and wait as its backup.

    Why not finsy's own Switch.run() loop: it waits a fixed 10 s after a connection
    that failed within 2 s (switch.py _throttle_failure), has no deadline on its
    connection steps and no give-up bound; its per-connection lifecycle (arbitration,
    pipeline by cookie, BECOME_PRIMARY/CHANNEL_READY events) is what this uses."""

    def __init__(self, controller: SwitchController, driver: SwitchDriver, *,
                 connect_timeout_s: float = CONNECT_TIMEOUT_S,
                 reconnect: ReconnectPolicy = ReconnectPolicy(),
                 install_only: bool = False, wait_as_backup: bool = True,
                 event_sink: StatsSink | None = None) -> None:
        self.controller = controller
        self.driver = driver
        self.connect_timeout_s = connect_timeout_s
        self.reconnect = reconnect
        self.install_only = install_only
        self.wait_as_backup = wait_as_backup
        self.event_sink = event_sink
        self.installs = 0                 # completed installs (the first one, then each recovery)
        self.name = controller.switch.name

    def _event(self, event: str, **fields: Any) -> None:
        LOG.debug("%s: %s %s", self.name, event, fields)
        if self.event_sink is not None:
            self.event_sink({"event": event, "t_ns": time.time_ns(), "switch": self.name,
                             **fields})

    async def run(self) -> None:
        """Until cancelled (run) or installed once (install_only). The first
        connection has connect_timeout_s, as `install`; errors other than a lost
        connection (a request the switch refused) end it."""
        address = self.driver.address
        await wait_for_grpc(address, timeout_s=self.connect_timeout_s)
        await self.driver.open()
        try:
            while True:
                try:
                    await self._serve()
                    return                                     # install_only: done
                except Exception as exc:     # noqa: BLE001 - sorted below
                    if self.install_only:
                        if self.driver.connection_lost(exc) \
                                and not isinstance(exc, SwitchConnectionError):
                            # e.g. finsy's bare AssertionError once its channel is closed
                            raise SwitchConnectionError(
                                f"{self.name}: lost the P4Runtime connection to {address} "
                                f"({_why(exc)})") from exc
                        raise
                    if not self.driver.connection_lost(exc) and (
                            isinstance(exc, PrimaryLostError)
                            or not self.driver.switch.is_primary):
                        # a write can fail (PERMISSION_DENIED) before the check sees it
                        LOG.warning("%s: another controller became primary (election id "
                                    "%d); stopped writing, waiting as its backup", self.name,
                                    self.driver.switch.primary_id)
                        self._event("primary_lost", error=_why(exc))
                        continue
                    if not self.driver.connection_lost(exc):
                        raise
                    lost_at = time.monotonic()
                    why = _why(exc) if isinstance(exc, SwitchConnectionError) else \
                        f"{self.name}: lost the P4Runtime connection to {address} ({_why(exc)})"
                    LOG.warning("%s; reconnecting", why)
                    self._event("connection_lost", error=why)
                await self.driver.close()
                await self._reconnect(lost_at)
        finally:
            await self.driver.close()

    async def _serve(self) -> None:
        """On an open connection: wait to be primary, install, run the loops."""
        d = self.driver
        if not d.ready_as_primary:
            if not self.wait_as_backup:
                raise RuntimeError(f"{self.name}: another controller is primary "
                                   f"(election id {d.switch.primary_id})")
            LOG.warning("%s: another controller is primary (election id %d > %d); waiting "
                        "as its backup", self.name, d.switch.primary_id, d.switch.election_id)
            self._event("backup_waiting", primary_election_id=d.switch.primary_id)
            await d.wait_primary()
            LOG.warning("%s: now primary (election id %d); installing", self.name,
                        d.switch.election_id)
            self._event("became_primary", election_id=d.switch.election_id)
        started = time.monotonic()
        await self.controller.install()
        self.installs += 1
        LOG.info("%s: installed in %.2f s (install %d)", self.name,
                 time.monotonic() - started, self.installs)
        self._event("installed", install=self.installs,
                    duration_s=round(time.monotonic() - started, 4))
        if self.install_only:
            return
        LOG.info("%s: running the D-CBT/MCDT%s loops", self.name,
                 "/stats" if self.controller.stats_sink is not None else "")
        await self.controller.run()

    async def _reconnect(self, lost_at: float) -> None:
        """Attempts with backoff until one connects; SwitchGivenUp after give_up_s."""
        address = self.driver.address
        give_up_s = self.reconnect.give_up_s
        for attempt, delay in enumerate(self.reconnect.delays(), start=1):
            waited = time.monotonic() - lost_at
            if give_up_s is not None and waited >= give_up_s:
                raise SwitchGivenUp(f"{self.name}: no P4Runtime connection to {address} "
                                    f"for {waited:.1f} s after it was lost; giving up "
                                    f"(--reconnect-timeout-s {give_up_s:g})")
            if give_up_s is not None:
                delay = min(delay, max(give_up_s - waited, 0))
            await asyncio.sleep(delay)
            LOG.info("%s: reconnect attempt %d to %s (%.1f s after the loss)", self.name,
                     attempt, address, time.monotonic() - lost_at)
            try:
                await tcp_connect_once(address, TCP_CONNECT_TIMEOUT_S)
                await self.driver.open()
            except (OSError, SwitchConnectionError, RuntimeError, ValueError,
                    fy.P4ClientError) as exc:
                LOG.info("%s: attempt %d failed: %s", self.name, attempt, _why(exc))
                continue
            LOG.warning("%s: reconnected to %s after %.2f s (%d attempts), %s; pipeline "
                        "checked by its cookie (finsy logs a push); reinstalling", self.name,
                        address, time.monotonic() - lost_at, attempt,
                        "primary" if self.driver.switch.is_primary else "backup")
            self._event("reconnected", attempts=attempt,
                        after_s=round(time.monotonic() - lost_at, 4),
                        primary=self.driver.switch.is_primary)
            return


def _why(exc: BaseException) -> str:
    if isinstance(exc, fy.P4ClientError):
        return describe_error(exc)
    return str(exc) or type(exc).__name__


async def run_switches(config: Config, *, p4info: Path = DEFAULT_P4INFO,
                       bmv2_json: Path = DEFAULT_BMV2_JSON, install_only: bool = False,
                       names: list[str] | None = None, stats_sink: StatsSink | None = None,
                       stats_interval_ms: float = 100,
                       event_sink: StatsSink | None = None,
                       election_id: int = CONTROLLER_ELECTION_ID, role: str = "",
                       timeout_s: float = CONNECT_TIMEOUT_S,
                       reconnect: ReconnectPolicy = ReconnectPolicy()) -> None:
    """Connect to every (or the named) switch, install it, then run the loops, each
    switch under its own SwitchSupervisor: a switch that fails (its first connection
    within timeout_s, a refused request, a lost switch given up after
    reconnect.give_up_s) is logged and the others go on; once every switch has ended
    (install: all installed), the first failure is raised. timeout_s bounds each
    connection step: the switch listening, then the P4Runtime connection
    (arbitration, pipeline). `install` never waits as a backup: another primary is
    an error; `run` waits as its backup and takes over when it goes."""
    selected = [config.switches[n] for n in (names or sorted(config.switches))]

    async def one(sw: SwitchConfig) -> None:
        driver = SwitchDriver(sw.name, sw.p4runtime_addr, device_id=sw.device_id,
                              p4info=p4info, bmv2_json=bmv2_json, election_id=election_id,
                              role=role, connect_timeout_s=timeout_s,
                              require_primary=install_only)
        controller = SwitchController(config, sw, driver, stats_sink=stats_sink,
                                      stats_interval_ms=stats_interval_ms,
                                      event_sink=event_sink)
        supervisor = SwitchSupervisor(controller, driver, connect_timeout_s=timeout_s,
                                      reconnect=reconnect, install_only=install_only,
                                      wait_as_backup=not install_only, event_sink=event_sink)
        try:
            await supervisor.run()
        except Exception as exc:
            if len(selected) > 1:
                LOG.error("%s: stopped: %s; the other switches go on", sw.name, _why(exc))
            raise

    results = await asyncio.gather(*(one(sw) for sw in selected), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
