"""The mmaqm controller of one switch: installs it from the configuration and runs
what its algorithms need (flow reports and D-CBT shares, MCDT's periods, UPTA's
fair shares, counter samples).

One asyncio process drives any number of switches (one SwitchController each;
mmaqm.supervisor keeps each connected). Inputs arrive as digests (active flows,
flow_report.p4) and counters; outputs leave as table entries (port_policy action
parameters). The arithmetic lives in mmaqm.algorithms and mmaqm.config; the
controller only moves data. Its loops are one module each: flow_loop (reports and
shares), algorithms.mcdt_loop (MCDT periods), algorithms.upta_loop (UPTA's intervals),
stats_loop (samples), occupancy_audit (Tofino's counts left high on an idle port);
this module installs and runs them.
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
from . import targets
from .algorithms.mcdt_loop import McdtPeriods
from .config import Config, SwitchConfig
from .driver import PrimaryLostError, SwitchDriver
from .encoding import PolicyAction, policy_action
from .flow_loop import FlowReportLoop
from .flows import ActiveFlowTable, SwitchClock
from .occupancy_audit import OccupancyAudit, occupancy_tables
from .p4rt.bfrt import BfrtClient, BfrtInfo, BfrtSchemaError
from .stats_loop import StatsLoop, StatsSink
from .targets.base import TargetRefusal

LOG = logging.getLogger(__name__)
# Desired state enforced (run): every ENFORCE_INTERVAL_S the controller reads the switch
# and writes back any difference from its configuration (0: never; cli --enforce-interval-s).
ENFORCE_INTERVAL_S = 2.0


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


def configured_ports(switch: SwitchConfig) -> dict[int, str]:
    """Every port the switch's configuration names -> where it is named (the
    first place): its ports, its policies, its routes' egress ports, BFD's."""
    at = f"switches.{switch.name}"
    named: list[tuple[int, str]] = [(p, f"{at}.ports") for p in switch.ports]
    named += [(p, f"{at}.policies") for p in switch.policies]
    named += [(r.port, f"{at}.routes: {r.prefix}") for r in switch.routes]
    if switch.bfd is not None:
        named += [(p, f"{at}.bfd.edge_ports") for p in switch.bfd.edge_ports]
        named += [(p.port, f"{at}.bfd.paths: id {p.path_id}") for p in switch.bfd.paths]
        if switch.bfd.cpu_port is not None:
            named.append((switch.bfd.cpu_port, f"{at}.bfd.cpu_port"))
    ports: dict[int, str] = {}
    for port, where in named:
        ports.setdefault(port, where)
    return ports


class SwitchController(FlowReportLoop, McdtPeriods, StatsLoop, OccupancyAudit):
    """Keeps one switch configured, and its algorithms' inputs (D-CBT shares, MCDT
    thresholds, UPTA fair shares) current."""

    def __init__(self, config: Config, switch: SwitchConfig, driver: SwitchDriver,
                 clock_ms: Callable[[], float] = lambda: time.monotonic() * 1000,
                 stats_sink: StatsSink | None = None, stats_interval_ms: float = 100,
                 event_sink: StatsSink | None = None,
                 enforce_interval_s: float = ENFORCE_INTERVAL_S) -> None:
        # ports the target cannot hold: refused before the switch is contacted
        driver.target.check_ports(configured_ports(switch))
        for port, policy in sorted(switch.policies.items()):
            driver.target.check_policy(port, policy, policy_action(policy, policy_epoch=1,
                                                                   flow_epoch_shift=0))
        self.config = config
        self.switch = switch
        self.driver = driver
        self.clock_ms = clock_ms
        self.flows = ActiveFlowTable(config.active_flows.max_flows)
        # Report times: the switch's clock mapped to clock_ms (flows.SwitchClock).
        self.switch_clock = SwitchClock(modulus_us=driver.target.report_ts_modulus_us)
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
        self.enforce_interval_s = enforce_interval_s
        self.repairs = 0                 # repairing writes sent (foreign writes undone)
        self._primary_changes = driver.primary_changes   # as of the last install
        # one port_policy writer at a time: a loop's push, or enforce's read-compare-write
        # (else enforce could read a push that `pushed` does not hold yet, and undo it)
        self._write_lock = asyncio.Lock()
        self._init_periods()             # MCDT's period state (algorithms.mcdt_loop)
        self._init_audit()               # the occupancy audit (occupancy_audit; Tofino only)
        # the loops the switch's algorithms run for the whole switch (UPTA's intervals)
        self.loops: dict[str, Any] = {
            name: loop for name, plugin in A.REGISTRY.items()
            if (loop := plugin.switch_loop(self, switch)) is not None}
        # averages the target keeps outside the P4Info (Tofino's Lpf filters), whose
        # time constants go over BfRt: worked out and checked before the switch is
        # contacted (TargetRefusal)
        self.lpf_specs = self._lpf_specs()
        self.bfrt_info, self.bfrt_p4_name = self._bfrt_schema()

    def _lpf_specs(self) -> dict[int, list[Any]]:
        """port -> the Lpf entries its policy needs (targets.tna_lpf), ports without
        left out. A policy the target refuses anyway (Target.check_action) is left
        to the write, which names why."""
        at = f"switches.{self.switch.name}.policies"
        out = {}
        for port, policy in sorted(self.switch.policies.items()):
            action = self.policy_action(port, policy_epoch=0)
            try:
                self.driver.target.check_action(action)
            except ValueError:
                continue
            try:
                specs = self.driver.target.lpf_specs(port, policy, action)
            except TargetRefusal as exc:
                raise TargetRefusal(f"{at}.{port}: {exc}") from None
            if specs:
                out[port] = specs
        return out

    def _bfrt_schema(self) -> tuple[BfrtInfo | None, str]:
        """The BfRt schema the Lpf entries are written and the occupancy registers
        audited with, and the program's name there; (None, "") when neither needs
        one. TargetRefusal, before the switch is contacted, when they cannot be:
        no BfRt address (Stratum's P4Runtime server cannot write an Lpf: it is not
        in the P4Info; bf_switchd's refuses register reads), no bfrt.json, or
        entries it does not have (an unknown filter or register, an index beyond
        its table)."""
        sw = self.switch
        registers = self.audited_registers
        if not self.lpf_specs and not registers:
            return None, ""
        whats = []
        if self.lpf_specs:
            lpfs = sorted({s.lpf for specs in self.lpf_specs.values() for s in specs})
            whats.append(
                f"switches.{sw.name}.policies.{','.join(map(str, self.lpf_specs))}: the "
                f"averages {', '.join(lpfs)} of this {self.driver.target.name} build are "
                f"Lpf filters whose time constants are BfRt settings, outside the P4Info")
        if registers:
            whats.append(
                f"switches.{sw.name}.occupancy_audit_interval_s "
                f"({self.audit_interval_s:g}): the occupancy audit reads and clears the "
                f"registers {', '.join(registers)} of this {self.driver.target.name} build "
                f"over BfRt (bf_switchd's P4Runtime server refuses register reads)")
        what = "; ".join(whats)
        if sw.bfrt_address is None:
            if self.lpf_specs:
                raise TargetRefusal(
                    f"{whats[0]}: Stratum's P4Runtime server cannot write them, and left "
                    f"unset every average is the last sample. Set switches.{sw.name}."
                    f"bfrt_address to the switch's BfRt gRPC server (host:port; bf_switchd "
                    f"listens on 50052) so that the controller writes them (docs/tofino.md)")
            raise TargetRefusal(
                f"{whats[0]}. Set switches.{sw.name}.bfrt_address to the switch's BfRt "
                f"gRPC server (host:port; bf_switchd listens on 50052), or "
                f"occupancy_audit_interval_s: 0 to run without the audit (a count left "
                f"high on an idle port then stays until the port is busy again, at the "
                f"queue limit for ever; docs/tofino.md)")
        schema = targets.bfrt_schema(self.driver.device_config_path)
        if schema is None:
            raise TargetRefusal(
                f"{what}: BfRt needs the build's bfrt.json: give the Tofino build "
                f"directory (build/tna/<variant>) as the device config (--device-config), "
                f"not {self.driver.device_config_path}")
        path, p4_name = schema
        try:
            info = BfrtInfo.from_file(path)
            info.check(s for specs in self.lpf_specs.values() for s in specs)
            occupancy_tables(info, registers, sorted(sw.policies))
        except BfrtSchemaError as exc:
            raise TargetRefusal(f"{what}: {exc}") from None
        return info, p4_name

    async def _open_bfrt(self) -> BfrtClient | None:
        """A BfRt connection for the Lpf writes and the occupancy audit (subscribed
        and bound), when they need one; BfrtConnectionError when the server is not there."""
        if self.bfrt_info is None or self.switch.bfrt_address is None:
            return None
        client = BfrtClient(self.switch.name, self.switch.bfrt_address, self.bfrt_info,
                            self.bfrt_p4_name, connect_timeout_s=self.driver.connect_timeout_s,
                            request_timeout_s=self.driver.request_timeout_s)
        await client.open()
        return client

    async def install(self, reason: str | None = None) -> R.WritePlan:
        """_install_p4runtime with, on a target whose averages are Lpf filters, their
        time constants written over BfRt after the policies (connected first: a
        BfRt server that is not there stops install before any write)."""
        bfrt = await self._open_bfrt()
        try:
            plan = await self._install_p4runtime(reason)
            if bfrt is not None:
                specs = [s for port in sorted(self.lpf_specs) for s in self.lpf_specs[port]]
                await bfrt.write_lpf(specs)
                LOG.info("%s: wrote %d Lpf entries over BfRt (%s)", self.switch.name,
                         len(specs), self.switch.bfrt_address)
        finally:
            if bfrt is not None:
                await bfrt.close()
        return plan

    async def _install_p4runtime(self, reason: str | None = None) -> R.WritePlan:
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
        shares come from this controller's active flows (none yet in a new one).

        reason: why a switch this controller had installed is installed again
        (primary regained, reconnected): a difference found is then a repair,
        logged as a `repaired` event naming each write (reconcile.describe_writes)."""
        d = self.driver
        self._primary_changes = d.primary_changes
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
        if reason is not None and plan.writes:
            self._repaired(current, plan, reason)
        resets = await d.reset_defaults()
        self.pushed = {port: self.policy_action(port) for port in sorted(self.switch.policies)}
        await self.start_periods(new_periods)
        LOG.info("%s: installed %d routes, %d port policies: %d inserted, %d modified, "
                 "%d deleted, %d defaults reset", self.switch.name, len(self.switch.routes),
                 len(self.switch.policies), plan.count(R.INSERT), plan.count(R.MODIFY),
                 plan.count(R.DELETE), resets)
        return plan

    async def enforce(self, reason: str = "periodic") -> R.WritePlan:
        """Read the switch, compare with the desired state (the configuration, with
        the loops' current shares and thresholds), write back any difference with
        install's reconcile writes, and log it (`repaired`). Nothing differs:
        one Read, no write. The port policies wanted are the ones the loops last
        pushed (`pushed`), so a share or threshold the loops have not pushed yet is
        not taken for a difference."""
        async with self._write_lock:
            current = await self.driver.read_state()
            plan = R.plan_writes(current, self.desired_state(as_pushed=True))
            if plan.writes:
                await self.driver.apply_writes(plan)
                self._repaired(current, plan, reason)
            await self.enforce_lpf(reason)
        return plan

    async def enforce_lpf(self, reason: str = "periodic") -> list[Any]:
        """On a target whose averages are Lpf filters (written over BfRt at install):
        read back every Lpf entry written (one BfRt Read), and write again, in one
        Write, each one the switch no longer holds (Target.lpf_spec_holds), logged
        as a `repaired` event as enforce's P4Runtime repairs. Returns the entries
        rewritten ([]: nothing differs, or nothing to check)."""
        specs = [s for port in sorted(self.lpf_specs) for s in self.lpf_specs[port]]
        bfrt = await self._open_bfrt() if specs else None
        if bfrt is None:
            return []
        try:
            held = await bfrt.read_lpf((s.lpf, s.index) for s in specs)
            held_at = {(h.lpf, h.index): h for h in held}
            pairs = [(s, held_at.get((s.lpf, s.index))) for s in specs]
            stale = [(s, h) for s, h in pairs
                     if h is None or not self.driver.target.lpf_spec_holds(s, h)]
            if stale:
                await bfrt.write_lpf(s for s, _ in stale)
        finally:
            await bfrt.close()
        if stale:
            changes = [_lpf_change(self.bfrt_info, want, got) for want, got in stale]
            self.repairs += len(changes)
            LOG.warning("%s: %d Lpf entries differed from what was written (%s); "
                        "rewritten over BfRt: %s", self.switch.name, len(changes), reason,
                        "; ".join(_change_text(c) for c in changes[:10])
                        + (f"; ... {len(changes) - 10} more" if len(changes) > 10 else ""))
            if self.event_sink is not None:
                self.event_sink({"event": "repaired", "t_ns": time.time_ns(),
                                 "switch": self.switch.name, "reason": reason,
                                 "writes": changes})
        return [s for s, _ in stale]

    def _repaired(self, current: R.SwitchState, plan: R.WritePlan, reason: str) -> None:
        changes = R.describe_writes(current, plan)
        self.repairs += len(changes)
        LOG.warning("%s: the switch differed from the configuration (%s): %d writes "
                    "repaired it: %s", self.switch.name, reason, len(changes),
                    "; ".join(_change_text(c) for c in changes[:10])
                    + (f"; ... {len(changes) - 10} more" if len(changes) > 10 else ""))
        if self.event_sink is not None:
            self.event_sink({"event": "repaired", "t_ns": time.time_ns(),
                             "switch": self.switch.name, "reason": reason, "writes": changes})

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

    def desired_state(self, as_pushed: bool = False) -> R.SwitchState:
        """What the switch should hold: the flow digest config, ChIPS's clone
        sessions, the classifier, the routes, a policy for every configured port
        (as_pushed: the action last pushed, where there is one)."""
        sw = self.switch

        def action(port: int) -> PolicyAction:
            pushed = self.pushed.get(port) if as_pushed else None
            return pushed if pushed is not None else self.policy_action(port)
        entries = R.classifier_entries(self.config.classifier.tagged_dscp)
        # (a route and, where the program has one, its copy: driver.route_entries)
        entries += [e for r in sw.routes for e in self.driver.route_entries(
            R.route_entry(str(r.prefix), r.port, sw.ports[r.port].mac, r.next_hop_mac))]
        entries += [R.policy_entry(port, action(port)) for port in sorted(sw.policies)]
        # the range tables that encode each policy on a target that has them
        entries += [e for port in sorted(sw.policies)
                    for e in self.driver.range_entries(port, action(port))]
        if sw.bfd is not None:      # C-UPTA / BFD (upta.p4, docs/upta-plan.md §1.6-1.7)
            entries += R.bfd_entries(sw.bfd)
        # ChIPS's slot sessions (and on Tofino the departure reports' session)
        clones = self.driver.clone_sessions(port for port, policy in sorted(sw.policies.items())
                                            if policy.plugin.needs_cut_in_sessions)
        digests = [R.flow_digest_config(digest=self.driver.flow_digest)]
        # the digests a switch loop reads (C-UPTA's probe specs)
        digests += [R.flow_digest_config(digest=name) for loop in self.loops.values()
                    for name in getattr(loop, "digests", lambda: ())()]
        return R.SwitchState(digests=tuple(digests), clone_sessions=tuple(clones),
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
            active_flows=sum(self.flows.counts(port).values()),
            mcdt_th_pkts=self.period_thresholds_pkts(port),
            **{k: v for loop in self.loops.values() for k, v in loop.port_inputs(port).items()})

    async def _push(self, port: int, action: PolicyAction) -> None:
        async with self._write_lock:
            await self.driver.write_port_policy(port, action, self.switch.policies[port])
            self.pushed[port] = action

    def extra_tasks(self) -> list[Any]:
        """Coroutines run() adds beside its own loops: the algorithms' switch loops."""
        return [loop.run() for loop in self.loops.values()]

    async def run(self) -> None:
        """Receive flow reports and update shares every update_interval_ms, forever;
        update each MCDT port every mcdt_period_ms; with a stats sink, also sample
        counters every stats_interval_ms; on Tofino, audit the occupancy counts every
        switch.occupancy_audit_interval_s (occupancy_audit). Ends with SwitchConnectionError when the
        switch goes away and PrimaryLostError when another controller takes the
        primary role (SwitchSupervisor reconnects, or waits as a backup)."""
        tasks = [asyncio.create_task(self.receive_flow_reports())]
        tasks += [asyncio.create_task(self._mcdt_loop(port))
                  for port, policy in sorted(self.switch.policies.items())
                  if policy.plugin.period_ms(policy) is not None]
        if self.stats_sink is not None:
            tasks.append(asyncio.create_task(self._stats_loop()))
        tasks += [asyncio.create_task(c) for c in self.extra_tasks()]
        clock = asyncio.get_running_loop().time
        next_enforce = clock() + self.enforce_interval_s
        next_audit = clock() + self.audit_interval_s      # 0: the target is not audited
        try:
            while True:
                for task in tasks:  # a failed reader must not go unnoticed
                    if task.done():
                        task.result()
                        raise RuntimeError(f"{self.switch.name}: background task ended")
                self.driver.check_connected()   # nor a switch that went away
                if self.driver.primary_changes != self._primary_changes:
                    # backup even for a moment (another client may have written):
                    # the supervisor installs again, which repairs
                    raise PrimaryLostError(f"{self.switch.name}: the primary role was lost "
                                           f"and regained")
                if self.enforce_interval_s > 0 and clock() >= next_enforce:
                    await self.enforce()
                    next_enforce = clock() + self.enforce_interval_s
                if self.audit_interval_s > 0 and clock() >= next_audit:
                    await self.audit_occupancy()
                    next_audit = clock() + self.audit_interval_s
                await self.update_shares()
                await self.update_lateness.sleep(self.config.active_flows.update_interval_ms / 1000)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def _lpf_change(info: BfrtInfo | None, want: Any, got: Any) -> dict[str, Any]:
    """One Lpf entry rewritten, as reconcile.describe_writes describes a table write."""
    table = info.lpf_table(want.lpf).name if info is not None else want.lpf
    fields = ("rate_mode", "time_constant_ns", "out_scale_down")
    return {"type": "MODIFY", "table": table, "match": {"index": want.index},
            "changed": {f: (None if got is None else getattr(got, f), getattr(want, f))
                        for f in fields if got is None or getattr(got, f) != getattr(want, f)}}


def _change_text(change: dict[str, Any]) -> str:
    """One repairing write in a log line (reconcile.describe_writes)."""
    what = change.get("table") or next(
        (f"{k} {v}" for k, v in change.items() if k != "type"), "")
    text = f"{change['type']} {what}"
    if "match" in change:
        text += f" {change['match']}"
    if "changed" in change:
        text += " " + ", ".join(f"{k} {a}->{b}" for k, (a, b) in change["changed"].items())
    if "action" in change:
        text += f" action {change['action'][0]}->{change['action'][1]}"
    return text
