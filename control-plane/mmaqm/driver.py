"""P4Runtime access to one mmaqm switch, over finsy.

The driver hides how each input arrives (counters, digests) and how each
output leaves (table entries). BMv2's P4Runtime server cannot read or write
registers (docs/design.md §1.1), so nothing here touches a register.

Names are the P4Info aliases of p4src/v1model/main.p4; the Tofino programs of
p4src/tna (one per algorithm) keep them, and where their P4Info differs (the
digest's name, port_policy's action list) the driver resolves it by name, never
by id or position (:func:`flow_digest_alias`, :func:`policy_actions_missing`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import finsy as fy
from google.protobuf import text_format
from finsy.proto import p4r
from google.protobuf.empty_pb2 import Empty

from . import reconcile as R
from . import targets
from .algorithms import ALGORITHMS
from .encoding import PolicyAction, policy_epoch_from_clock

LOG = logging.getLogger(__name__)

TABLE_ROUTES = R.TABLE_ROUTES
TABLE_CLASSIFIER = R.TABLE_CLASSIFIER
TABLE_POLICY = R.TABLE_POLICY
DIGEST_FLOW = R.DIGEST_FLOW
# Flow digest lists that may wait for the controller (flow_reports; finsy's own
# queue, 50 lists of up to 64 reports, overflowed under 100 000 flows: issue 9).
DIGEST_QUEUE_LISTS = 2048
TABLE_UPTA_EDGE_PORT = R.TABLE_UPTA_EDGE_PORT
TABLE_UPTA_LOCAL_ADDR = R.TABLE_UPTA_LOCAL_ADDR
TABLE_UPTA_BFD_PATH = R.TABLE_UPTA_BFD_PATH

# Every network wait has a deadline (issue 9); cli.py's flags override the first two.
GRPC_WAIT_TIMEOUT_S = 20.0     # wait_for_grpc: a switch just started may not listen yet
CONNECT_TIMEOUT_S = 20.0       # channel, arbitration, pipeline check or push: SwitchDriver entry
TCP_CONNECT_TIMEOUT_S = 2.0    # one TCP connect of wait_for_grpc (a SYN-dropping address)
# finsy bounds every unary RPC (Write, Read, pipeline) at 10 s itself (p4client.py).
# Election ids (P4Runtime spec "Client Arbitration"): the highest connected one is
# primary and alone may write; a Read needs none ("Read RPC").
CONTROLLER_ELECTION_ID = 10    # run, install
READER_ELECTION_ID = 1         # stats: below the controller's, so a backup beside it

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_P4INFO = REPO_ROOT / "build" / "main.p4info.txtpb"
DEFAULT_BMV2_JSON = REPO_ROOT / "build" / "main.json"


class SwitchConnectionError(RuntimeError):
    """The P4Runtime server could not be reached or refused the connection."""


class PrimaryLostError(RuntimeError):
    """A higher election id took the primary role from this connection (it still
    reads, and may become primary again)."""


@dataclass(frozen=True)
class FlowReport:
    """One active-flow digest entry (flow_report.p4)."""

    egress_port: int
    class_id: int
    flow_key: tuple[int, int, int, int, int]  # src, dst, proto, sport, dport
    # when the reporting packet arrived: BMv2 ingress_global_timestamp, us since the
    # switch started (None: a program whose digest has no such field)
    ingress_ts_us: int | None = None


@dataclass(frozen=True)
class CounterValue:
    packets: int = 0
    bytes: int = 0


_check_port = R.check_port


def flow_digest_alias(schema: fy.P4Schema) -> str:
    """The flow digest's alias. v1model names a digest after its struct
    (flow_digest_t); TNA after its Digest<flow_digest_t> instance: found by the
    digest's type_spec struct name."""
    if schema.digests.get(DIGEST_FLOW) is not None:
        return DIGEST_FLOW
    for digest in schema.digests:
        spec = digest.pbuf.type_spec
        if spec.WhichOneof("type_spec") == "struct" and spec.struct.name == DIGEST_FLOW:
            return digest.alias
    raise ValueError(f"the P4Info has no digest of type {DIGEST_FLOW}")


def policy_actions_missing(schema: fy.P4Schema) -> list[str]:
    """Algorithm actions port_policy lacks. A target whose one program carries every
    algorithm must have them all; a program per algorithm needs one (a policy of
    another algorithm then fails check_action, naming it)."""
    table = schema.tables.get(TABLE_POLICY)
    if table is None:
        return []
    refs = {ref.alias for ref in table.actions}
    algorithms = set(ALGORITHMS.values())
    if not targets.for_p4info(schema).every_algorithm_in_one_program:
        return [] if refs & algorithms else sorted(algorithms)
    return sorted(algorithms - refs)


def check_action(schema: fy.P4Schema, table: str, action: PolicyAction) -> None:
    """The action is one of the table's, with exactly its P4Info parameters, each
    fitting its bit width (by name, not position). Raises ValueError."""
    table_info = schema.tables.get(table)
    if table_info is None:
        raise ValueError(f"the P4Info has no table {table!r}: not an mmaqm program")
    refs = {ref.alias for ref in table_info.actions}
    if action.name not in refs:
        raise ValueError(f"{table}: the P4Info has no action {action.name!r} "
                         f"(it has {', '.join(sorted(refs))})")
    params = schema.actions[action.name].params
    names = {param.name for param in params}
    if set(action.params) != names:
        raise ValueError(f"{action.name}: parameters {sorted(action.params)} differ from the "
                         f"P4Info's {sorted(names)}")
    for param in params:
        value = action.params[param.name]
        if isinstance(value, bool) or not isinstance(value, int) \
                or not 0 <= value < 1 << param.bitwidth:
            raise ValueError(f"{action.name}.{param.name} must be an int in "
                             f"0..2^{param.bitwidth}-1, got {value!r}")


class SwitchDriver:
    """One P4Runtime connection to an mmaqm BMv2 switch.

    Use as an async context manager. On entry it arbitrates with election_id and,
    when primary and the switch runs a different program (P4Info cookie), pushes
    the pipeline; all of it within connect_timeout_s (TimeoutError after). With
    require_primary (writers) another primary is a RuntimeError; without it (readers:
    P4Runtime serves a Read from any client, spec "Read RPC") a backup connection is fine.
    Connection failures are SwitchConnectionError, naming the switch and address.

    open() and close() are the same steps as entering and leaving; a driver may be
    closed and opened again (reconnect: a fresh gRPC channel, arbitration and
    pipeline check on the same finsy Switch, see mmaqm.controller.SwitchSupervisor).
    """

    def __init__(
        self,
        name: str,
        address: str,
        *,
        device_id: int = 1,
        p4info: Path = DEFAULT_P4INFO,
        bmv2_json: Path = DEFAULT_BMV2_JSON,
        election_id: int = CONTROLLER_ELECTION_ID,
        push_pipeline: bool = True,
        require_primary: bool = True,
        role: str = "",
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> None:
        for path in (p4info, bmv2_json) if push_pipeline else (p4info,):
            if not Path(path).exists():
                raise FileNotFoundError(f"{path} not found: run 'make build' first")
        # the device config: BMv2's JSON file, or a Tofino build directory (make
        # build-tna) packed as Stratum's BfPipelineConfig (targets.device_config)
        device_config: Path | bytes | None = None
        if push_pipeline:
            device_config = targets.device_config(Path(bmv2_json))
        options = fy.SwitchOptions(
            p4info=Path(p4info),
            p4blob=device_config,
            device_id=device_id,
            initial_election_id=election_id,
            # finsy sends a role name only with a role config: an empty one (the spec's
            # "Role Config": its scheme is the target's; simple_switch_grpc ignores roles)
            role_name=role,
            role_config=Empty() if role else None,
        )
        self.name = name
        self.address = address
        self.require_primary = require_primary
        self.digest_lists_dropped = 0    # flow digest lists dropped: the queue was full
        self.connect_timeout_s = connect_timeout_s
        try:
            self.switch = fy.Switch(name, address, options)     # reads the P4Info
        except (text_format.ParseError, UnicodeDecodeError) as err:
            raise RuntimeError(f"{p4info}: not a P4Info text file ({err})") from None
        self.target = targets.for_p4info(self.switch.p4info)
        self._counter_names = frozenset({c.alias for c in self.switch.p4info.counters}
                                        | {c.name for c in self.switch.p4info.counters})
        # the flow digest's P4Info alias (v1model: its struct's name; TNA: the instance's);
        # the bench's minimal router has none, and the controller then enables no reports
        self.flow_digest = (flow_digest_alias(self.switch.p4info)
                            if self.switch.p4info.digests else R.DIGEST_FLOW)
        self._open = False
        self._local_addrs: set[int] = set()     # a target's upta_local_addr value set
        # finsy announces the pipeline ready (CHANNEL_READY) after its arbitration and,
        # when primary, its pipeline check or push (switch.py Switch._ready); it runs
        # that again after a backup connection becomes primary (BECOME_PRIMARY).
        self._ready_as_primary = asyncio.Event()
        self.switch.ee.on(fy.SwitchEvent.CHANNEL_READY, self._on_ready)
        for event in (fy.SwitchEvent.BECOME_PRIMARY, fy.SwitchEvent.BECOME_BACKUP,
                      fy.SwitchEvent.CHANNEL_DOWN):
            self.switch.ee.on(event, self._on_not_ready)

    def _on_ready(self, switch: fy.Switch) -> None:
        if switch.is_primary:
            self._ready_as_primary.set()

    def _on_not_ready(self, _switch: fy.Switch) -> None:
        self._ready_as_primary.clear()

    @property
    def is_open(self) -> bool:
        return self._open

    @property
    def ready_as_primary(self) -> bool:
        """Primary, and finsy has checked (or pushed) the pipeline since it became so."""
        return self.switch.is_primary and self._ready_as_primary.is_set()

    async def __aenter__(self) -> "SwitchDriver":
        await self.open()
        return self

    async def open(self) -> None:
        """Connect: arbitration and, when primary, the pipeline (see the class)."""
        if self._open:
            raise RuntimeError(f"{self.name}: the driver is open already")
        # A program without port_policy (the bench's minimal router) is driven as a
        # plain router; an mmaqm program must have every algorithm's action.
        missing = policy_actions_missing(self.switch.p4info)
        if missing:
            raise RuntimeError(f"{self.name}: the P4Info's {TABLE_POLICY} lacks the actions "
                               f"{missing}: rebuild the program ('make build')")
        self._ready_as_primary.clear()
        await self._connect()
        self._open = True
        if self.require_primary and not self.switch.is_primary:
            ids = f"election id {self.switch.primary_id} > {self.switch.election_id}"
            await self.close()
            raise RuntimeError(f"{self.name}: another controller is primary ({ids})")
        if not self.switch.is_primary:
            LOG.info("%s: connected as a backup (primary election id %d)", self.name,
                     self.switch.primary_id)

    async def _connect(self) -> None:
        """finsy's Switch entry under a deadline: it waits for the arbitration answer
        without one (a server that accepts and never answers), and a SYN-dropping
        address takes the kernel's ~2 min of SYN retries."""
        try:
            await asyncio.wait_for(self.switch.__aenter__(), self.connect_timeout_s)
        except TimeoutError:     # finsy's __aenter__ cleans up on the cancellation
            raise TimeoutError(
                f"{self.name}: no P4Runtime answer from {self.address} within "
                f"{self.connect_timeout_s:g} s (connect, arbitration, pipeline)") from None
        except fy.P4ClientError as err:
            raise SwitchConnectionError(
                f"{self.name}: P4Runtime at {self.address} failed: {describe_error(err)}"
            ) from None

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Leave the connection (its finsy tasks and gRPC channel); idempotent."""
        if self._open:
            self._open = False
            self._ready_as_primary.clear()
            await self.switch.__aexit__(None, None, None)

    def check_connected(self) -> None:
        """For a writer: raise SwitchConnectionError once the P4Runtime stream is gone
        (the switch stopped: finsy notices, but a digest reader waits for digests
        forever), PrimaryLostError when the connection is no longer primary."""
        self.check_connected_stream()
        if not self.switch.is_primary:
            raise PrimaryLostError(f"{self.name}: another controller became primary "
                                   f"(election id {self.switch.primary_id})")

    def connection_lost(self, exc: BaseException | None = None) -> bool:
        """Whether the P4Runtime stream is gone, or exc says the server is unavailable
        (a request can fail before finsy has noticed that the stream ended) or did not
        answer within finsy's 10 s (a stopped switch keeps its TCP connections)."""
        if not self.switch.is_up:
            return True
        return isinstance(exc, fy.P4ClientError) and exc.code in (
            fy.GRPCStatusCode.UNAVAILABLE, fy.GRPCStatusCode.DEADLINE_EXCEEDED)

    async def wait_primary(self) -> None:
        """Wait, without a deadline (a backup waits as long as the primary lives),
        until this connection is primary and finsy has checked or pushed the pipeline
        for it; SwitchConnectionError if the stream goes down meanwhile."""
        while not self.ready_as_primary:
            self.check_connected_stream()
            try:
                await asyncio.wait_for(self._ready_as_primary.wait(), 0.1)
            except TimeoutError:
                pass
        self.check_connected_stream()

    def check_connected_stream(self) -> None:
        """SwitchConnectionError once the P4Runtime stream is gone."""
        if not self.switch.is_up:
            raise SwitchConnectionError(f"{self.name}: lost the P4Runtime connection to "
                                        f"{self.address}")

    # ---- table writes -------------------------------------------------
    async def clear(self) -> None:
        """Delete every table entry and clone session this program has (not the
        pipeline), and reset the tables' default actions: finsy's delete_all, except
        that the digest configuration stays. Deleting it while PI is building a digest
        list aborts simple_switch_grpc (PI digest_mgr.cpp DigestData::reset():
        `assert(cache.empty())` fails while entries of the unsent list are cached),
        which a controller restarted under traffic did to a switch. The digest config
        is rewritten by enable_flow_reports."""
        await self.switch.delete_many([fy.P4TableEntry(), fy.P4MulticastGroupEntry(),
                                       fy.P4CloneSessionEntry()])
        defaults = [fy.P4TableEntry(table.alias, is_default_action=True)
                    for table in self.switch.p4info.tables
                    if table.const_default_action is None and table.action_profile is None]
        if defaults:
            await self.switch.modify(defaults)

    async def install_classifier(self, tagged_dscp: Iterable[int]) -> None:
        """(IP protocol, DSCP) -> class (cbt §3): TCP, tagged UDP, else untagged."""
        await self.switch.write([+to_finsy(e) for e in R.classifier_entries(tagged_dscp)])

    async def install_route(self, prefix: str, port: int, src_mac: str, next_hop_mac: str) -> None:
        await self.switch.write([+to_finsy(R.route_entry(prefix, port, src_mac, next_hop_mac))])

    async def install_upta_edge_port(self, port: int, *, cpu: bool = False) -> None:
        await self.switch.write([+to_finsy(R.upta_edge_port_entry(port, cpu=cpu))])

    async def install_upta_local_addr(self, addr: str) -> None:
        """One of this router's addresses (BFD endpoint). Where the target keeps them
        in a parser value set, its members are rewritten whole: this driver's
        addresses so far."""
        if self.target.local_addr_value_set is not None:
            self._local_addrs.add(int(ipaddress.IPv4Address(addr)))
            await self._write_local_addrs(self._local_addrs)
            return
        await self.switch.write([+to_finsy(R.upta_local_addr_entry(addr))])

    async def _write_local_addrs(self, addrs: Iterable[int]) -> None:
        """The target's value set of this router's addresses, one MODIFY of every member."""
        name = self.target.local_addr_value_set
        assert name is not None
        members = self.target.local_addr_members(addrs)      # validated before any write
        value_set = self._value_set(name)
        update = p4r.Update(type=p4r.Update.MODIFY, entity=p4r.Entity(
            value_set_entry=p4r.ValueSetEntry(value_set_id=value_set.id, members=[
                p4r.ValueSetMember(match=[p4r.FieldMatch(
                    field_id=1, exact=p4r.FieldMatch.Exact(value=m))]) for m in members])))
        await self.switch.write([update])

    def _value_set(self, name: str):
        """The P4Info value set whose name ends with `name` (a parser's, qualified)."""
        for value_set in self.switch.p4info.value_sets:
            if value_set.name.split(".")[-1] == name:
                return value_set
        raise ValueError(f"the program has no value set {name}")

    async def install_upta_bfd_path(self, prefix: str, path: int) -> None:
        await self.switch.write([+to_finsy(R.upta_bfd_path_entry(prefix, path))])

    async def send_probe(self, port: int, datagram: bytes) -> None:
        """C-UPTA ingress edge: one QoS Probe (an IPv4 datagram, upta_control.probe_datagrams)
        as a P4Runtime PacketOut. BMv2 (--cpu-port) injects the payload as a frame arriving on
        its CPU port, an `upta_cpu` entry of upta_edge_port; the P4 routes it like data
        (port is the path's output port, for the log: routing decides) and lowers it on
        every upta port (eqs. 25-26). The program has no packet_out header, so the
        PacketOut carries no metadata and finsy's P4PacketOut (which requires one) is
        bypassed. The Ethernet addresses are placeholders: the route rewrites them."""
        _check_port(port)
        frame = b"\x02\x00\x00\x00\x00\x01" + b"\x02\x00\x00\x00\x00\x02" + b"\x08\x00" + datagram
        await self.switch.write([p4r.StreamMessageRequest(packet=p4r.PacketOut(payload=frame))])

    async def install_cut_in_slot_session(self, port: int) -> None:
        """The clone session of ChIPS's FIFO slot clones for one port (chips.p4):
        session CHIPS_CLONE_SESSION_BASE + port replicates to the port itself."""
        await self.switch.write([+to_finsy(R.cut_in_slot_session(port))])

    def clone_sessions(self, cut_in_ports: Iterable[int]) -> list[R.CloneSession]:
        """The clone sessions this program needs (ChIPS's slot sessions of these
        ports, and whatever else the target needs: targets)."""
        return self.target.clone_sessions(cut_in_ports)

    # ---- reconciling (install) ---------------------------------------
    async def read_state(self) -> R.SwitchState:
        """Every table entry, clone session and multicast group of the program in ONE
        ReadRequest (a wildcard read of each kind), then each digest config in one
        more (they cannot be read by wildcard, and simple_switch_grpc fails a whole
        ReadRequest with NOT_FOUND when one is not configured), as reconcile's data."""
        wanted: list[fy.P4Entity] = [fy.P4TableEntry(), fy.P4CloneSessionEntry(),
                                     fy.P4MulticastGroupEntry()]
        entries, clones, groups, digests = [], [], [], []
        async for entity in self.switch.read(wanted):
            if isinstance(entity, fy.P4TableEntry):
                if not entity.is_default_action and not entity.is_const:
                    entries.append(from_finsy_entry(entity))
            elif isinstance(entity, fy.P4CloneSessionEntry):
                clones.append(R.CloneSession(entity.session_id, _replicas(entity.replicas),
                                             entity.class_of_service, entity.packet_length_bytes))
            elif isinstance(entity, fy.P4MulticastGroupEntry):
                groups.append(R.MulticastGroup(entity.multicast_group_id,
                                               _replicas(entity.replicas)))
        for digest in self.switch.p4info.digests:
            try:
                async for entity in self.switch.read(fy.P4DigestEntry(digest.alias)):
                    digests.append(R.DigestConfig(str(entity.digest_id), entity.max_list_size,
                                                  entity.max_timeout_ns, entity.ack_timeout_ns))
            except fy.P4ClientError as err:
                if err.code != fy.GRPCStatusCode.NOT_FOUND:
                    raise
        return R.SwitchState(tuple(digests), tuple(clones), tuple(groups), tuple(entries))

    async def apply_writes(self, plan: R.WritePlan) -> None:
        """Send each batch of the plan as one Write RPC, in order (each must succeed
        before the next is sent). Port policies are checked against the P4Info first.
        Where the target keeps this router's addresses in a parser value set, the
        upta_local_addr entries are its members, written last in one MODIFY."""
        value_set = self.target.local_addr_value_set is not None
        local_addrs = []
        for write in plan.writes:
            entity = write.entity
            if write.type != R.DELETE and isinstance(entity, R.TableEntry) \
                    and entity.table == TABLE_POLICY:
                action = PolicyAction(entity.action, dict(entity.params))
                check_action(self.switch.p4info, TABLE_POLICY, action)
                self.target.check_action(action)
            if value_set and write.type != R.DELETE and isinstance(entity, R.TableEntry) \
                    and entity.table == TABLE_UPTA_LOCAL_ADDR:
                local_addrs.append(dict(entity.match)["addr"])
        if local_addrs:
            self.target.local_addr_members(local_addrs)    # validated before any write
        for batch in plan.batches:
            updates = [_UPDATE[w.type](to_finsy(w.entity)) for w in batch
                       if not (value_set and isinstance(w.entity, R.TableEntry)
                               and w.entity.table == TABLE_UPTA_LOCAL_ADDR)]
            if updates:
                await self.switch.write(updates)
        if local_addrs:
            self._local_addrs = set(local_addrs)
            await self._write_local_addrs(self._local_addrs)

    async def reset_defaults(self) -> int:
        """Reset the default action of every table whose default is not const (P4Info
        does not say what its initial one is, so this cannot tell whether it changed:
        it resets them all; the mmaqm program has none). Returns how many."""
        defaults = [fy.P4TableEntry(table.alias, is_default_action=True)
                    for table in self.switch.p4info.tables
                    if table.const_default_action is None and table.action_profile is None]
        if defaults:
            await self.switch.modify(defaults)
        return len(defaults)

    async def read_port_policy(self, port: int) -> PolicyAction | None:
        """The port's installed port_policy action, or None."""
        _check_port(port)
        async for entry in self.switch.read(
            fy.P4TableEntry(TABLE_POLICY, match=fy.Match(port=port))
        ):
            action = entry.action
            assert isinstance(action, fy.P4TableAction)
            return PolicyAction(action.name, {k: int(v) for k, v in (action.args or {}).items()})
        return None

    async def write_port_policy(self, port: int, action: PolicyAction) -> None:
        """Insert or modify the port's policy entry (one atomic table write); then,
        on a target with range tables, the port's entries that encode it
        (targets: old ones deleted first, so that no two overlap; meanwhile the
        tables' defaults hold: no RED drop, no class test)."""
        _check_port(port)
        check_action(self.switch.p4info, TABLE_POLICY, action)
        self.target.check_action(action)
        ranges = self.range_entries(port, action)
        exists = await self.read_port_policy(port) is not None
        entry = fy.P4TableEntry(
            TABLE_POLICY,
            match=fy.Match(port=port),
            action=fy.Action(action.name, **dict(action.params)),
        )
        await self.switch.write([~entry if exists else +entry])
        if self.target.range_tables:
            await self._write_range_entries(port, ranges)

    def range_entries(self, port: int, action: PolicyAction) -> list[R.TableEntry]:
        """The target's range-table entries of the port's policy, for the range
        tables this program has (none on v1model)."""
        have = {t.alias for t in self.switch.p4info.tables}
        return [e for e in self.target.range_entries(port, action) if e.table in have]

    async def _write_range_entries(self, port: int, desired: list[R.TableEntry]) -> None:
        have = {t.alias for t in self.switch.p4info.tables}
        tables = [t for t in self.target.range_tables if t in have]
        current = []
        async for entity in self.switch.read([fy.P4TableEntry(t) for t in tables]):
            entry = from_finsy_entry(entity)
            if dict(entry.match).get("port") == port:
                current.append(entry)
        upserts, deletes = R.diff_entities(current, desired)
        if deletes:
            await self.switch.write([-to_finsy(w.entity) for w in deletes])
        if upserts:
            await self.switch.write([_UPDATE[w.type](to_finsy(w.entity)) for w in upserts])

    def new_policy_epoch(self, port: int, installed: int | None) -> int:
        """A new epoch for the port, whose installed entry has epoch `installed` (None:
        no entry or no epoch); see encoding.policy_epoch_from_clock."""
        _check_port(port)
        return policy_epoch_from_clock(time.time_ns(), installed)

    async def next_policy_epoch(self, port: int) -> int:
        """An epoch that the port's packets have never carried, so a new policy
        resets its averages (red.p4 red_on_policy_epoch); see
        encoding.policy_epoch_from_clock."""
        current = await self.read_port_policy(port)
        installed = None if current is None else current.params.get("policy_epoch")
        return policy_epoch_from_clock(time.time_ns(), installed)

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
        async for entry in self.switch.read(entities):
            if entry.index is None:
                continue
            name, index = self.target.counter_position(entry.counter_id, entry.index)
            if index is None or name not in result:   # a slot v1model has no index for
                continue
            value = CounterValue(entry.packet_count, entry.byte_count)
            old = result[name].get(index)
            if old is not None:
                value = CounterValue(old.packets + value.packets, old.bytes + value.bytes)
            result[name][index] = value
        return result

    # ---- digests ------------------------------------------------------
    async def enable_flow_reports(self, *, max_list_size: int = 64, max_timeout_ms: int = 10) -> None:
        """Configure the flow digest: insert it, or, when an earlier controller left it
        configured (clear() keeps it), modify it to these settings (a MODIFY never
        resets PI's digest state, unlike a DELETE)."""
        config = R.flow_digest_config(max_list_size, max_timeout_ms,
                                      digest=self.flow_digest)
        try:
            await self.switch.write([+to_finsy(config)])
        except fy.P4ClientError as err:
            if err.code != fy.GRPCStatusCode.UNKNOWN or not _already_exists(err):
                raise
            await self.switch.write([~to_finsy(config)])

    async def flow_reports(self) -> AsyncIterator[list[FlowReport]]:
        """Digest lists as FlowReports, each list acknowledged as soon as it is taken.

        finsy (0.30) decodes every digest member through its P4Info type as the
        stream delivers it, about 50-90 us per report on this machine, in the task
        that also reads the stream: that capped the controller near 10 000 reports/s
        (issue 9). Here the flow digest's lists bypass it: the stream task only
        queues the raw DigestList (other digests still go to finsy's handler);
        this iterator acks each list, then decodes its bitstrings directly (about
        10 us per report). At most DIGEST_QUEUE_LISTS lists wait; one arriving
        beyond them is dropped unacknowledged and counted in digest_lists_dropped."""
        schema = self.switch.p4info
        digest = schema.digests[self.flow_digest]
        names = list(digest.type_spec.members)
        index = {name: names.index(name) for name in (
            "egress_port", "class_id", "src_addr", "dst_addr", "protocol", "src_port",
            "dst_port")}
        ts_index = names.index("ingress_ts_us") if "ingress_ts_us" in names else None
        to_us = self.target.ts_to_us          # the target's clock unit -> us
        queue: asyncio.Queue = asyncio.Queue(DIGEST_QUEUE_LISTS)
        switch = self.switch
        finsy_handler = switch._stream_digest_message

        def on_digest(msg) -> None:     # in finsy's stream task: no decoding here
            if msg.digest.digest_id != digest.id:
                finsy_handler(msg)
            elif queue.full():
                self.digest_lists_dropped += 1
            else:
                queue.put_nowait(msg.digest)

        switch._stream_digest_message = on_digest
        port_i, class_i, src_i, dst_i, proto_i, sport_i, dport_i = index.values()
        from_bytes = int.from_bytes
        try:
            while True:
                digest_list = await queue.get()
                await switch.write([fy.P4DigestListAck(self.flow_digest, digest_list.list_id)])
                reports = []
                for item in digest_list.data:
                    m = [from_bytes(member.bitstring, "big") for member in item.struct.members]
                    reports.append(FlowReport(
                        m[port_i], m[class_i],
                        (m[src_i], m[dst_i], m[proto_i], m[sport_i], m[dport_i]),
                        None if ts_index is None else to_us(m[ts_index])))
                yield reports
        finally:
            switch._stream_digest_message = finsy_handler


_UPDATE = {R.INSERT: lambda e: +e, R.MODIFY: lambda e: ~e, R.DELETE: lambda e: -e}


def _replicas(replicas: Iterable[fy.P4Replica]) -> tuple[tuple[int, int], ...]:
    return tuple((int(r.port), int(r.instance)) for r in replicas)


def from_finsy_entry(entry: fy.P4TableEntry) -> R.TableEntry:
    """A table entry as finsy decoded it (match values as ints or tuples of ints)."""
    action = entry.action
    if not isinstance(action, fy.P4TableAction):
        raise ValueError(f"{entry.table_id}: an entry without a direct action: {entry!r}")
    return R.TableEntry.make(str(entry.table_id), dict(entry.match or {}), action.name,
                             {k: int(v) for k, v in (action.args or {}).items()},
                             entry.priority)


def to_finsy(entity: R.Entity) -> fy.P4Entity:
    """reconcile's plain data as the finsy entity to write."""
    if isinstance(entity, R.TableEntry):
        return fy.P4TableEntry(entity.table, match=fy.Match(dict(entity.match)),
                               action=fy.Action(entity.action, **dict(entity.params)),
                               priority=entity.priority)
    if isinstance(entity, R.CloneSession):
        return fy.P4CloneSessionEntry(entity.session_id, class_of_service=entity.class_of_service,
                                      packet_length_bytes=entity.packet_length_bytes,
                                      replicas=list(entity.replicas))
    if isinstance(entity, R.MulticastGroup):
        return fy.P4MulticastGroupEntry(entity.group_id, replicas=list(entity.replicas))
    return fy.P4DigestEntry(entity.digest, max_list_size=entity.max_list_size,
                            max_timeout_ns=entity.max_timeout_ns,
                            ack_timeout_ns=entity.ack_timeout_ns)


def _already_exists(err: fy.P4ClientError) -> bool:
    """The write failed only because an entity already exists (P4Runtime reports a
    batch's per-update errors as UNKNOWN with details)."""
    details = err.details
    return bool(details) and all(d.canonical_code == fy.GRPCStatusCode.ALREADY_EXISTS
                                 for d in details.values())


def describe_error(err: fy.P4ClientError) -> str:
    """A P4ClientError in one line: the gRPC code and message (its str() is a repr)."""
    return f"{err.code.name}: {err.message}".replace("\n", " ")


async def wait_for_grpc(address: str, timeout_s: float = GRPC_WAIT_TIMEOUT_S,
                        attempt_timeout_s: float = TCP_CONNECT_TIMEOUT_S) -> None:
    """Wait until a TCP connect to the P4Runtime address succeeds, at most timeout_s
    (each connect attempt at most attempt_timeout_s: an address that drops SYNs
    would otherwise hold one attempt for the kernel's ~2 min of SYN retries)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        remaining = deadline - loop.time()
        try:
            await tcp_connect_once(address, max(min(attempt_timeout_s, remaining), 0.001))
            return
        except (OSError, TimeoutError):
            if loop.time() >= deadline:
                raise TimeoutError(f"no P4Runtime server at {address} after {timeout_s:g} s") \
                    from None
            await asyncio.sleep(min(0.1, max(deadline - loop.time(), 0)))


async def tcp_connect_once(address: str, timeout_s: float = TCP_CONNECT_TIMEOUT_S) -> None:
    """One TCP connect to host:port within timeout_s (OSError or TimeoutError)."""
    host, _, port = address.rpartition(":")
    _, writer = await asyncio.wait_for(asyncio.open_connection(host.strip("[]"), int(port)),
                                       timeout_s)
    writer.close()
    await writer.wait_closed()
