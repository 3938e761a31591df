"""The mmaqm controller of one switch: installs it from the configuration and runs
what its algorithms need (flow reports and D-CBT shares, MCDT's periods, UPTA's
fair shares, counter samples).

One asyncio process drives any number of switches (one SwitchController each;
mmaqm.supervisor keeps each connected). Inputs arrive as digests (active flows,
flow_report.p4) and counters; outputs leave as table entries (port_policy action
parameters). The arithmetic lives in mmaqm.algorithms and mmaqm.config; the
controller only moves data. Its loops are one module each: flow_loop (reports and
shares), algorithms.mcdt_loop (MCDT periods), algorithms.upta_loop (UPTA's intervals),
stats_loop (samples); this module installs and runs them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from . import p4constants as C
from . import reconcile as R
from . import algorithms as A
from .algorithms.mcdt_loop import McdtPeriods
from .config import Config, SwitchConfig
from .driver import SwitchDriver
from .encoding import PolicyAction, policy_action
from .flow_loop import FlowReportLoop
from .flows import ActiveFlowTable, SwitchClock
from .stats_loop import StatsLoop, StatsSink

LOG = logging.getLogger(__name__)


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


class SwitchController(FlowReportLoop, McdtPeriods, StatsLoop):
    """Keeps one switch configured, and its algorithms' inputs (D-CBT shares, MCDT
    thresholds, UPTA fair shares) current."""

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
        self._init_periods()             # MCDT's period state (algorithms.mcdt_loop)
        # the loops the switch's algorithms run for the whole switch (UPTA's intervals)
        self.loops: dict[str, Any] = {
            name: loop for name, plugin in A.REGISTRY.items()
            if (loop := plugin.switch_loop(self, switch)) is not None}

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
        new_periods = []
        for port, policy in sorted(self.switch.policies.items()):
            self._prepare_policy(port, installed.get(port))
            if policy.plugin.period_ms(policy) is not None and port not in self.mcdt_arrivals:
                new_periods.append(port)
        desired = self.desired_state()
        plan = R.plan_writes(current, desired)
        await d.apply_writes(plan)
        resets = await d.reset_defaults()
        self.pushed = {port: self.policy_action(port) for port in sorted(self.switch.policies)}
        await self.start_periods(new_periods)
        LOG.info("%s: installed %d routes, %d port policies: %d inserted, %d modified, "
                 "%d deleted, %d defaults reset", self.switch.name, len(self.switch.routes),
                 len(self.switch.policies), plan.count(R.INSERT), plan.count(R.MODIFY),
                 plan.count(R.DELETE), resets)
        return plan

    def _prepare_policy(self, port: int, installed: PolicyAction | None) -> None:
        """The port's policy epoch and MCDT state for install (see install)."""
        template = self.policy_action(port, policy_epoch=0)
        kept = installed.params.get("policy_epoch") if installed is not None else None
        continues = R.same_policy(installed, template)
        if continues:       # DROP_TAIL has no epoch: any will do
            self.epochs[port] = kept if kept is not None else self.epochs.get(port, 0)
        else:
            self.epochs[port] = self.driver.new_policy_epoch(port, kept)
        # MCDT: eq. 10's memory and the running period go on only where the switch
        # still holds the policy this controller has been updating
        self._prepare_periods(port, continues and R.same_policy(self.pushed.get(port), template))

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
        share_tagged, share_untagged = self.flow_shares(port)
        return policy_action(
            policy, policy_epoch=self.epochs[port] if policy_epoch is None else policy_epoch,
            flow_epoch_shift=self.flow_epoch_shift,
            share_tagged=share_tagged, share_untagged=share_untagged,
            tagged_flows=self.flows.counts(port)[C.CLASS_TAGGED],
            mcdt_th_pkts=self.period_thresholds_pkts(port),
            **{k: v for loop in self.loops.values() for k, v in loop.port_inputs(port).items()})

    async def _push(self, port: int, action: PolicyAction) -> None:
        await self.driver.write_port_policy(port, action)
        self.pushed[port] = action

    def extra_tasks(self) -> list[Any]:
        """Coroutines run() adds beside its own loops: the algorithms' switch loops."""
        return [loop.run() for loop in self.loops.values()]

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
