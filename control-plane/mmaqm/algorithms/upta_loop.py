"""UPTA's per-interval loop of one switch (upta Fig. 7 "On est_timer expiration",
eqs. 18-19; docs/upta-plan.md §2) and, at a C-UPTA ingress edge, its QoS Probes (§5.3.2).

The UPTA plug-in makes one UptaLoop per switch with ``upta`` ports (Upta.switch_loop),
and the controller runs it beside its own loops. Every T = K, for every such port:

1. the flow slots: the active flows of the port (flow reports, flow_report.p4) mapped
   to their slot as the data plane maps them (crc32 & slot_mask), plus the slots of
   the last interval (a flow that stopped reporting still has an arrival count);
2. ONE ReadRequest of those upta_flow_bytes entries; the deltas since the last read
   (upta_control.arrival_ip_bytes) over the measured time between the two reads;
3. the U flows: upta_state of those slots (0 = U or new; a slot with arrivals and
   state 0 after admission is U), read as registers where the switch serves register
   reads; BMv2's P4Runtime server does not ("Register reads are not supported yet"),
   and the plan's state digests are not in the P4 yet, so there the controller applies
   Fig. 7 itself to the measured rates (upta_control.infer_useless); C-UPTA cores add
   the U specs of recent probes that left through the port (the data plane's
   bfd_spec_digest_t, ``receive_probe_specs`` -> ``observe_probe_specs``,
   upta_control.RemoteUseless; upta §5.3.2);
4. eqs. 18-19 -> the action's parameters, written (keeping the policy epoch) when
   they changed;
5. C-UPTA ingress edges: one probe per BFD path (``bfd_paths``), its U flows as specs,
   sent by ``driver.send_probe(port, datagram)`` (a P4Runtime PacketOut through the CPU
   port, with the P4Info's packet_out header where the program has one: Tofino).

The arithmetic is upta_control's; this module only moves data. Every interval
also goes to the event sink ("upta_interval": N, S, M, alpha, alpha', the writes).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from .. import p4constants as C
from ..encoding import PolicyAction
from ..fixedpoint import MASK32, check_int
from . import bfd_codec, upta, upta_control

LOG = logging.getLogger(__name__)
COUNTER = "upta_flow_bytes"
STATE_REGISTER = "upta_state"
EVENTS_COUNTER = "upta_events"
PROBE_EVERY_INTERVALS = upta_control.PROBE_EVERY_INTERVALS   # (why: upta_control)


class UptaHost(Protocol):
    """What UptaLoop needs of SwitchController (duck-typed: tests pass a fake)."""

    switch: Any
    driver: Any
    flows: Any
    pushed: dict[int, PolicyAction]
    event_sink: Callable[[dict[str, Any]], None] | None

    def policy_action(self, port: int) -> PolicyAction: ...

    async def _push(self, port: int, action: PolicyAction) -> None: ...


async def read_register_indexes(driver: Any, name: str, indexes: Iterable[int]) -> dict[int, int]:
    """Selected indexes of a register in one ReadRequest; the driver's own method when it
    has one, else through its finsy switch (P4Runtime RegisterEntry reads; BMv2 serves them)."""
    indexes = list(indexes)
    if not indexes:
        return {}
    own = getattr(driver, "read_register_indexes", None)
    if own is not None:
        return await own(name, indexes)
    import finsy as fy
    out: dict[int, int] = {}
    async for entry in driver.switch.read([fy.P4RegisterEntry(name, index=i) for i in indexes]):
        if entry.index is not None and entry.data is not None:
            out[entry.index] = int(entry.data)
    return out


class UptaLoop:
    """The UPTA ports of one switch (see the module docstring)."""

    def __init__(self, host: UptaHost, *, clock_s: Callable[[], float] = time.monotonic,
                 router_addr: str | None = None,
                 bfd_paths: Iterable[upta_control.BfdPath] = ()) -> None:
        self.host = host
        self.clock_s = clock_s
        self.settings: dict[int, upta_control.PortSettings] = {
            port: settings for port, policy in sorted(host.switch.policies.items())
            if (settings := policy.plugin.fair_share_loop(policy)) is not None}
        # per port: (packets, bytes) per slot at the last read, and when it was
        self.counts: dict[int, dict[int, tuple[int, int]]] = {p: {} for p in self.settings}
        self.read_at: dict[int, float] = {}
        self.params: dict[int, Mapping[str, int]] = {}
        self.shares_bps: dict[int, tuple[float, float]] = {}   # port -> (fs_I, fs_U), bit/s
        self.useless: dict[int, set[int]] = {p: set() for p in self.settings}
        self.last: dict[int, upta_control.IntervalResult] = {}
        # per mode-C port: the U flows of the probes that left through it (§5.3.2)
        self.remote: dict[int, upta_control.RemoteUseless] = {
            port: upta_control.RemoteUseless(
                window_s=upta_control.REMOTE_USELESS_INTERVALS * s.interval_s)
            for port, s in self.settings.items() if s.mode == upta.MODE_C}
        self.spec_digests = 0                  # bfd_spec_digest_t received
        # C-UPTA ingress edge: path id -> (fs_I, fs_U) bit/s of the last accepted report,
        # the path minima (eqs. 23-24) its data plane applies to the path (upta_path)
        self.path_minima_bps: dict[int, tuple[float, float]] = {}
        self.reports_accepted = 0              # bfd_report_digest_t received
        self.router_addr = router_addr
        self.bfd_paths = list(bfd_paths)
        self.sequence: dict[int, int] = {}     # path id -> next sequence number
        self.probe_every = PROBE_EVERY_INTERVALS
        self.intervals = 0                     # step() calls so far
        self.period_s = self.interval_s        # run()'s sleep between intervals
        self.read_states = True                # False once the switch refused a register read

    @property
    def interval_s(self) -> float:
        """T = K of the ports (the smallest, if they differ)."""
        return min((s.interval_s for s in self.settings.values()), default=0.131072)

    def active_slots(self, port: int) -> set[int]:
        """Slots of the port's reported flows and of the last read (plan §2 step 1)."""
        mask_slots = self.settings[port].table_slots
        slots = {upta_control.flow_slot(key, mask_slots)
                 for key in self.host.flows.flow_keys(port)}
        return slots | set(self.counts[port])

    async def read_port(self, port: int) -> tuple[dict[int, int], set[int], float]:
        """(slot -> IP bytes since the last read, slots in state U among those with
        arrivals, seconds since the last read) of one port."""
        slots = sorted(self.active_slots(port))
        index = {upta_control.slot_index(port, s): s for s in slots}
        values = await self.host.driver.read_counter_indexes({COUNTER: list(index)})
        now = self.clock_s()
        current = {index[i]: (v.packets, v.bytes) for i, v in values.get(COUNTER, {}).items()
                   if i in index}
        arrivals = upta_control.arrival_ip_bytes(self.counts[port], current)
        elapsed = now - self.read_at.get(port, now - self.settings[port].interval_s)
        # every slot ever read stays in the read set: a slot read again after a pause
        # would otherwise charge the pause's bytes to one interval
        self.counts[port].update(current)
        self.read_at[port] = now
        busy = [upta_control.slot_index(port, s) for s, b in arrivals.items() if b]
        useless = None
        if self.read_states:
            try:
                states = await read_register_indexes(self.host.driver, STATE_REGISTER, busy)
                useless = {index[i] for i, st in states.items() if st == upta.STATE_U}
            except Exception as err:      # BMv2: "Register reads are not supported yet"
                if "UNIMPLEMENTED" not in str(err) and "not supported" not in str(err):
                    raise
                LOG.warning("%s: cannot read %s (%s): U states inferred from the rates "
                            "from now on", self.host.switch.name, STATE_REGISTER, err)
                self.read_states = False
        if useless is None:
            useless = self.infer_useless(port, arrivals, elapsed)
        self.useless[port] = useless
        return arrivals, useless, elapsed

    def infer_useless(self, port: int, arrivals: Mapping[int, int], elapsed: float) -> set[int]:
        """U slots by Fig. 7 on the measured rates (upta_control.infer_useless): tagged
        flows (flow reports' class) have the policy's threshold, others none."""
        s = self.settings[port]
        if s.tagged_q >= 1:
            return set()
        t = max(elapsed, 1e-3)
        rates = {slot: b * 8 / t for slot, b in arrivals.items() if b}
        # C-UPTA: only a flow at its ingress edge can be U here (upta.p4 tests only
        # packets from edge ports; §5.2: "UPTA is needed at the ingress router only");
        # a core's U flows are the probes' (observe_probe_specs)
        thresholds = {upta_control.flow_slot(key, s.table_slots): s.tagged_q
                      for key in self.host.flows.flow_keys(port)
                      if self.host.flows.flow_class(port, key) == C.CLASS_TAGGED
                      and (s.mode != upta.MODE_C or self.enters_at_edge(key))}
        fs_i, fs_u = self.shares_bps.get(port, (math.inf, math.inf))
        if s.mode != upta.MODE_C or not self.path_minima_bps:
            return upta_control.infer_useless(rates, thresholds, self.useless[port], fs_i, fs_u)
        # C-UPTA ingress edge: a flow's shares are the smaller of the port's and its
        # path's reported minima, as the data plane applies them (upta.p4, eqs. 23-24)
        by_shares: dict[tuple[float, float], dict[int, float]] = {}
        for key in self.host.flows.flow_keys(port):
            slot = upta_control.flow_slot(key, s.table_slots)
            if slot not in thresholds:
                continue
            path_fs_i, path_fs_u = self.path_minima_bps.get(self.path_of(key), (math.inf, math.inf))
            by_shares.setdefault((min(fs_i, path_fs_i), min(fs_u, path_fs_u)), {})[slot] = \
                thresholds[slot]
        out: set[int] = set()
        for (flow_fs_i, flow_fs_u), group in by_shares.items():
            out |= upta_control.infer_useless(rates, group, self.useless[port],
                                              flow_fs_i, flow_fs_u)
        return out

    def path_of(self, flow_key: tuple) -> int | None:
        """The BFD path of a flow's destination (the longest of the paths' prefixes, as
        the data plane's upta_bfd_path); None outside every path."""
        bfd = getattr(self.host.switch, "bfd", None)
        if bfd is None:
            return None
        return upta_control.longest_prefix(
            ((prefix, path.path_id) for path in bfd.paths for prefix in path.prefixes),
            flow_key[1])

    def observe_report(self, path_id: int, fs_u_scaled: int, fs_i_scaled: int) -> None:
        """An accepted report's path minima (scaled as the data plane holds them; 0 or
        FS_INFINITE: none), kept in bit/s for infer_useless."""
        port = next((p.port for p in self.bfd_paths if p.path_id == path_id), None)
        k_shift = self.settings[port].k_shift if port in self.settings else upta.DEFAULT_K_SHIFT

        def bps(v: int) -> float:
            return math.inf if v in (0, upta.FS_INFINITE) else upta.rate_scaled_to_bps(v, k_shift)
        self.path_minima_bps[path_id] = (bps(fs_i_scaled), bps(fs_u_scaled))

    def enters_at_edge(self, flow_key: tuple) -> bool:
        """The flow's source is behind one of this switch's edge ports (its route, longest
        prefix; upta_control.route_port): this switch is the flow's ingress edge."""
        bfd = getattr(self.host.switch, "bfd", None)
        if bfd is None:
            return False
        port = upta_control.route_port(self.host.switch.routes, flow_key[0])
        return port is not None and port in bfd.edge_ports

    async def update_port(self, port: int) -> bool:
        """One interval of one port; True when the entry was rewritten."""
        s = self.settings[port]
        arrivals, useless, elapsed = await self.read_port(port)
        remote = 0
        if port in self.remote:
            remote = self.remote[port].count(self.clock_s(),
                                             [a for a, b in arrivals.items() if b],
                                             s.table_slots)
        result = upta_control.port_interval(s, arrivals, useless,
                                            interval_s=max(elapsed, 1e-3),
                                            remote_useless=remote)
        self.last[port] = result
        changed = result.params != self.params.get(port)
        self.params[port] = result.params
        self.shares_bps[port] = (result.shares.alpha_prime, result.shares.alpha)
        if changed:
            await self.host._push(port, self.host.policy_action(port))
        sink = self.host.event_sink
        if sink is not None:
            sh = result.shares
            sink({"event": "upta_interval", "t_ns": time.time_ns(),
                  "switch": self.host.switch.name, "port": port, "n": sh.n, "s": sh.s,
                  "m": sh.m, "remote_useless": remote,
                  "alpha_bps": None if sh.alpha == float("inf") else sh.alpha,
                  "alpha_prime_bps": None if sh.alpha_prime == float("inf") else sh.alpha_prime,
                  "fs_u_scaled": result.params["fs_u_scaled"],
                  "fs_i_scaled": result.params["fs_i_scaled"], "written": changed})
        return changed

    def observe_probe_specs(self, port: int, specs: Iterable[bfd_codec.FlowSpec]) -> bool:
        """The specs of a probe that left through ``port`` (a core's bfd_spec_digest_t,
        §5.3.2): its U flows count in that port's N and M (eqs. 18-19) for
        REMOTE_USELESS_INTERVALS T; an I spec withdraws its flow. False (ignored) when
        the port is not a mode-C port of this switch."""
        remote = self.remote.get(port)
        if remote is None:
            return False
        now = self.clock_s()
        for spec in specs:
            remote.observe(spec, now)
        return True

    async def receive_probe_specs(self) -> None:
        """Forever: the switch's bfd_spec_digest_t lists (driver.digest_items), each
        digest to observe_probe_specs; a malformed one is logged and changes nothing."""
        async for members_list in self.host.driver.digest_items(self.host.driver.bfd_spec_digest):
            for members in members_list:
                try:
                    d = upta_control.decode_spec_digest(members)
                except ValueError as err:
                    LOG.warning("%s: malformed bfd_spec_digest_t: %s", self.host.switch.name, err)
                    continue
                self.spec_digests += 1
                self.observe_probe_specs(d.egress_port, d.specs)

    def path_useless_flows(self, path: upta_control.BfdPath) -> list[tuple[int, ...]]:
        """U flows leaving on the path's port, by 5-tuple (the reported flows whose slot
        was U in the last interval). Flows to other egress routers share the port's
        state: the controller does not split them by destination here."""
        port = path.port
        if port not in self.settings:
            return []
        slots_u = self.useless[port]
        table_slots = self.settings[port].table_slots
        return [key for key in self.host.flows.flow_keys(port)
                if upta_control.flow_slot(key, table_slots) in slots_u]

    async def send_probes(self) -> int:
        """C-UPTA ingress edge: one probe (more with > 4 specs) per BFD path."""
        if not self.bfd_paths or self.router_addr is None:
            return 0
        sent = 0
        for path in self.bfd_paths:
            specs = upta_control.useless_specs(self.path_useless_flows(path))
            first = self.sequence.get(path.path_id, 0)
            probes = upta_control.probe_datagrams(self.router_addr, path, first, specs)
            for _seq, datagram in probes:
                await self.host.driver.send_probe(path.port, datagram)
                sent += 1
            self.sequence[path.path_id] = (first + len(probes)) & 0xFFFF
        return sent

    async def bfd_events(self) -> dict[str, dict[str, int]]:
        """The switch's nonzero upta_events of its ports and CPU port, {port: {event: packets}}
        (cumulative; one ReadRequest): where probes were sent, lowered and answered, and
        reports accepted or refused (upta.p4 BfdEndpoint)."""
        bfd = getattr(self.host.switch, "bfd", None)
        ports = sorted(set(self.host.switch.ports)
                       | ({bfd.cpu_port} if bfd is not None and bfd.cpu_port is not None else set()))
        wanted = {C.upta_event_index(p, e): (p, name)
                  for p in ports for name, e in C.UPTA_EVENTS.items()}
        values = await self.host.driver.read_counter_indexes({EVENTS_COUNTER: list(wanted)})
        out: dict[str, dict[str, int]] = {}
        for i, v in values.get(EVENTS_COUNTER, {}).items():
            if i in wanted and v.packets:
                port, name = wanted[i]
                out.setdefault(str(port), {})[name] = v.packets
        return out

    async def step(self) -> list[int]:
        """One interval of every port, then the probes; the ports rewritten. A switch with
        BFD settings also logs its upta_events ("upta_bfd") to the event sink."""
        changed = [port for port in self.settings if await self.update_port(port)]
        sent = await self.send_probes() if self.intervals % self.probe_every == 0 else 0
        self.intervals += 1
        sink = self.host.event_sink
        if sink is not None and getattr(self.host.switch, "bfd", None) is not None:
            sink({"event": "upta_bfd", "t_ns": time.time_ns(), "switch": self.host.switch.name,
                  "probes_sent": sent, "spec_digests": self.spec_digests,
                  "reports_digested": self.reports_accepted,
                  "events": await self.bfd_events()})
        return changed

    def port_inputs(self, port: int) -> dict[str, Any]:
        """What this loop feeds into the port's action (algorithms.PortInputs)."""
        return {"upta_shares_bps": self.shares_bps.get(port)}

    async def receive_reports(self) -> None:
        """Forever: the reports this ingress edge accepted (bfd_report_digest_t, §5.3.3),
        each logged as an "upta_report" event: the path minima (eqs. 23-24) the data
        plane now applies to the path (upta_path)."""
        async for members_list in self.host.driver.digest_items(
                self.host.driver.bfd_report_digest):
            for m in members_list:
                try:
                    report = {"path": check_int("identifier", m["identifier"], 0, 0xFFFF),
                              "sequence": check_int("sequence", m["sequence"], 0, 0xFFFF),
                              "fs_u_scaled": check_int("fs_u", m["fs_u"], 0, MASK32),
                              "fs_i_scaled": check_int("fs_i", m["fs_i"], 0, MASK32)}
                except (KeyError, ValueError) as err:
                    LOG.warning("%s: malformed bfd_report_digest_t: %s",
                                self.host.switch.name, err)
                    continue
                self.reports_accepted += 1
                self.observe_report(report["path"], report["fs_u_scaled"], report["fs_i_scaled"])
                sink = self.host.event_sink
                if sink is not None:
                    sink({"event": "upta_report", "t_ns": time.time_ns(),
                          "switch": self.host.switch.name, **report})

    def receives_probe_specs(self) -> bool:
        """A mode-C port here and a program that digests probe specs."""
        return bool(self.remote) and getattr(self.host.driver, "bfd_spec_digest", None) is not None

    def receives_reports(self) -> bool:
        """An ingress edge (BFD paths) and a program that digests accepted reports."""
        return bool(self.bfd_paths) and self.router_addr is not None \
            and getattr(self.host.driver, "bfd_report_digest", None) is not None

    def digests(self) -> list[str]:
        """The digests this loop reads, for the controller to configure."""
        return [name for name, on in ((getattr(self.host.driver, "bfd_spec_digest", None),
                                       self.receives_probe_specs()),
                                      (getattr(self.host.driver, "bfd_report_digest", None),
                                       self.receives_reports())) if on]

    async def run(self) -> None:
        """Every T, forever (the first read only starts the counts); beside it, the
        probe-spec digests of a switch with a mode-C port (receive_probe_specs)."""
        readers = [asyncio.create_task(c()) for c, on in (
            (self.receive_probe_specs, self.receives_probe_specs()),
            (self.receive_reports, self.receives_reports())) if on]
        try:
            for port in self.settings:
                await self.read_port(port)
            while True:
                await asyncio.sleep(self.period_s)
                for task in readers:
                    if task.done():
                        task.result()
                        raise RuntimeError(f"{self.host.switch.name}: a digest reader ended")
                await self.step()
        finally:
            for task in readers:
                task.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
