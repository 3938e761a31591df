"""P4Runtime access to one mmaqm switch, over finsy.

The driver hides how each input arrives (counters, digests) and how each
output leaves (table entries). BMv2's P4Runtime server cannot read or write
registers (docs/design.md §1.1), so nothing here touches a register.

Names are the P4Info aliases of p4src/v1model/main.p4.
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

from . import p4constants as C
from .algorithms import ALGORITHMS
from .encoding import PolicyAction, policy_epoch_from_clock

LOG = logging.getLogger(__name__)

TABLE_ROUTES = "ipv4_lpm"
TABLE_CLASSIFIER = "classifier"
TABLE_POLICY = "port_policy"
# UPTA / BFD (upta.p4)
TABLE_UPTA_EDGE_PORT = "upta_edge_port"
TABLE_UPTA_LOCAL_ADDR = "upta_local_addr"
TABLE_UPTA_BFD_PATH = "upta_bfd_path"
DIGEST_FLOW = "flow_digest_t"
# Priorities of classifier entries: TCP wins over any DSCP rule.
_PRIO_TCP = 100
_PRIO_TAGGED = 50

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


@dataclass(frozen=True)
class FlowReport:
    """One active-flow digest entry (flow_report.p4)."""

    egress_port: int
    class_id: int
    flow_key: tuple[int, int, int, int, int]  # src, dst, proto, sport, dport


@dataclass(frozen=True)
class CounterValue:
    packets: int = 0
    bytes: int = 0


def _check_port(port: int) -> None:
    if not 0 <= port < C.NUM_PORTS:
        raise ValueError(f"port {port} outside 0..{C.NUM_PORTS - 1}")


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
        options = fy.SwitchOptions(
            p4info=Path(p4info),
            p4blob=Path(bmv2_json) if push_pipeline else None,
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
        self.connect_timeout_s = connect_timeout_s
        try:
            self.switch = fy.Switch(name, address, options)     # reads the P4Info
        except (text_format.ParseError, UnicodeDecodeError) as err:
            raise RuntimeError(f"{p4info}: not a P4Info text file ({err})") from None

    async def __aenter__(self) -> "SwitchDriver":
        # A program without port_policy (the bench's minimal router) is driven as a
        # plain router; an mmaqm program must have every algorithm's action.
        table = self.switch.p4info.tables.get(TABLE_POLICY)
        refs = set() if table is None else {ref.alias for ref in table.actions}
        missing = sorted(set(ALGORITHMS.values()) - refs)
        if table is not None and missing:
            raise RuntimeError(f"{self.name}: the P4Info's {TABLE_POLICY} lacks the actions "
                               f"{missing}: rebuild the program ('make build')")
        await self._connect()
        if self.require_primary and not self.switch.is_primary:
            ids = f"election id {self.switch.primary_id} > {self.switch.election_id}"
            await self.switch.__aexit__(None, None, None)
            raise RuntimeError(f"{self.name}: another controller is primary ({ids})")
        if not self.switch.is_primary:
            LOG.info("%s: connected as a backup (primary election id %d)", self.name,
                     self.switch.primary_id)
        return self

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
        await self.switch.__aexit__(None, None, None)

    def check_connected(self) -> None:
        """Raise SwitchConnectionError once the P4Runtime stream is gone (the switch
        stopped): finsy notices, but a digest reader waits for digests forever."""
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
        entries = [
            +fy.P4TableEntry(
                TABLE_CLASSIFIER,
                match=fy.Match(ip_proto=C.IP_PROTO_TCP),
                action=fy.Action("set_class", class_id=C.CLASS_TCP),
                priority=_PRIO_TCP,
            )
        ]
        for dscp in tagged_dscp:
            if not 0 <= dscp <= 63:
                raise ValueError(f"DSCP {dscp} outside 0..63")
            entries.append(
                +fy.P4TableEntry(
                    TABLE_CLASSIFIER,
                    match=fy.Match(ip_proto=C.IP_PROTO_UDP, dscp=dscp),
                    action=fy.Action("set_class", class_id=C.CLASS_TAGGED),
                    priority=_PRIO_TAGGED,
                )
            )
        await self.switch.write(entries)

    async def install_route(self, prefix: str, port: int, src_mac: str, next_hop_mac: str) -> None:
        _check_port(port)
        network = ipaddress.IPv4Network(prefix)  # raises on a bad prefix
        await self.switch.write([
            +fy.P4TableEntry(
                TABLE_ROUTES,
                match=fy.Match(ipv4_dst=str(network)),
                action=fy.Action("route", port=port, src_mac=src_mac, dst_mac=next_hop_mac),
            )
        ])

    async def install_upta_edge_port(self, port: int, *, cpu: bool = False) -> None:
        """UPTA/BFD (upta.p4): `port` faces hosts or another domain (an edge port: QoS
        Probes and Reports arriving on it are dropped and counted; C-UPTA's ingress
        edge), or, with cpu, is the controller's port (the only origin of probes)."""
        if not 0 <= port < 512:
            raise ValueError(f"port {port} outside 0..511")
        await self.switch.write([+fy.P4TableEntry(
            TABLE_UPTA_EDGE_PORT, match=fy.Match(port=port),
            action=fy.Action("upta_cpu" if cpu else "upta_edge"))])

    async def install_upta_local_addr(self, addr: str) -> None:
        """BFD (upta.p4): one of this router's own addresses (probes to it are answered,
        reports to it accepted)."""
        await self.switch.write([+fy.P4TableEntry(
            TABLE_UPTA_LOCAL_ADDR, match=fy.Match(addr=str(ipaddress.IPv4Address(addr))),
            action=fy.Action("upta_local"))])

    async def install_upta_bfd_path(self, prefix: str, path: int) -> None:
        """C-UPTA (upta.p4): packets to `prefix` take BFD path `path` (< BFD_PATHS)."""
        if not 0 <= path < C.BFD_PATHS:
            raise ValueError(f"path {path} outside 0..{C.BFD_PATHS - 1}")
        network = ipaddress.IPv4Network(prefix)
        await self.switch.write([+fy.P4TableEntry(
            TABLE_UPTA_BFD_PATH, match=fy.Match(ipv4_dst=str(network)),
            action=fy.Action("upta_path", path=path))])

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
        _check_port(port)
        await self.switch.write([
            +fy.P4CloneSessionEntry(C.CHIPS_CLONE_SESSION_BASE + port, replicas=[(port, 1)])
        ])

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
        """Insert or modify the port's policy entry (one atomic table write)."""
        _check_port(port)
        check_action(self.switch.p4info, TABLE_POLICY, action)
        exists = await self.read_port_policy(port) is not None
        entry = fy.P4TableEntry(
            TABLE_POLICY,
            match=fy.Match(port=port),
            action=fy.Action(action.name, **dict(action.params)),
        )
        await self.switch.write([~entry if exists else +entry])

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
        snapshot instead of one round trip per counter)."""
        names = list(names)
        return await self._read_counter_entities(names, [fy.P4CounterEntry(n) for n in names])

    async def read_counter_indexes(
        self, wanted: Mapping[str, Iterable[int]]
    ) -> dict[str, dict[int, CounterValue]]:
        """Selected indexes of several counters in ONE P4Runtime ReadRequest
        (a time series samples a few ports, not all NUM_PORTS)."""
        entities = [fy.P4CounterEntry(name, index=i) for name, idx in wanted.items() for i in idx]
        return await self._read_counter_entities(list(wanted), entities)

    async def _read_counter_entities(
        self, names: list[str], entities: list[fy.P4CounterEntry]
    ) -> dict[str, dict[int, CounterValue]]:
        result: dict[str, dict[int, CounterValue]] = {name: {} for name in names}
        if not entities:
            return result
        async for entry in self.switch.read(entities):
            if entry.index is not None and entry.counter_id in result:
                result[entry.counter_id][entry.index] = CounterValue(
                    entry.packet_count, entry.byte_count)
        return result

    # ---- digests ------------------------------------------------------
    async def enable_flow_reports(self, *, max_list_size: int = 64, max_timeout_ms: int = 10) -> None:
        """Configure the flow digest: insert it, or, when an earlier controller left it
        configured (clear() keeps it), modify it to these settings (a MODIFY never
        resets PI's digest state, unlike a DELETE)."""
        def entry() -> fy.P4DigestEntry:
            return fy.P4DigestEntry(DIGEST_FLOW, max_list_size=max_list_size,
                                    max_timeout_ns=max_timeout_ms * 1_000_000,
                                    ack_timeout_ns=1_000_000_000)
        try:
            await self.switch.write([+entry()])
        except fy.P4ClientError as err:
            if err.code != fy.GRPCStatusCode.UNKNOWN or not _already_exists(err):
                raise
            await self.switch.write([~entry()])

    async def flow_reports(self) -> AsyncIterator[list[FlowReport]]:
        """Digest lists as FlowReports; each list is acknowledged once decoded."""
        async for digest_list in self.switch.read_digests(DIGEST_FLOW):
            reports = [
                FlowReport(
                    egress_port=int(item["egress_port"]),
                    class_id=int(item["class_id"]),
                    flow_key=(int(item["src_addr"]), int(item["dst_addr"]), int(item["protocol"]),
                              int(item["src_port"]), int(item["dst_port"])),
                )
                for item in digest_list
            ]
            await self.switch.write([digest_list.ack()])
            yield reports


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
    host, _, port = address.rpartition(":")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        remaining = deadline - loop.time()
        try:
            _, writer = await asyncio.wait_for(
                asyncio.open_connection(host.strip("[]"), int(port)),
                max(min(attempt_timeout_s, remaining), 0.001))
            writer.close()
            await writer.wait_closed()
            return
        except (OSError, TimeoutError):
            if loop.time() >= deadline:
                raise TimeoutError(f"no P4Runtime server at {address} after {timeout_s:g} s") \
                    from None
            await asyncio.sleep(min(0.1, max(deadline - loop.time(), 0)))
