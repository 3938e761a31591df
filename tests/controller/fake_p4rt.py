"""A P4Runtime server for the control-plane tests, built on finsy's test server.

finsy.test.p4runtime_server.P4RuntimeServer answers arbitration after 0.5 s
(then sends a stray PacketIn), accepts every Write, answers every Read with
nothing and keeps no pipeline. FakeP4RuntimeServer keeps its stream handling
and adds what the driver needs, the way simple_switch_grpc behaves:

- several clients at once, as simple_switch_grpc: arbitration answered at once;
  the highest election id is primary (``other_primary_election_id``: a controller
  that never connects), an election id in use is refused, a change of primary
  is announced to every client; digests go to the primary only;
- SetForwardingPipelineConfig stored (GetForwardingPipelineConfig returns its
  cookie, so a second connection need not push again); a new pipeline clears
  the table entries;
- Write checks device id, primary election id, table/action/param ids and bit
  widths, priority; applies each update on its own (INSERT of an existing
  entry -> ALREADY_EXISTS, MODIFY/DELETE of a missing one -> NOT_FOUND) and
  reports failures per update, as P4Runtime does;
- Read (from any client, primary or not: spec "Read RPC") answers table entries (all,
  one table, or one match), digest configs (by id; NOT_FOUND when not configured,
  as simple_switch_grpc), counters (every index, or the
  ones asked) from ``counters`` and registers (likewise) from ``registers``;
- a register is written only by MODIFY (P4Runtime's rule; Stratum's Tofino
  server too), at an index in range with a value of the register's bit width; clone sessions and multicast groups: none;
- ``send_digest`` pushes a DigestList on the stream; DigestListAcks are recorded;
  ``send_stream`` pushes any StreamMessageResponse (malformed ones too);
- ``extra_read_entities`` are added to every Read's answer (entities the P4Info
  does not know); an RPC named in ``stalled_rpcs`` ("Write", "Read") is accepted and
  never answered (a wedged switch).

Entries are decoded for assertions with the raw P4Info (names, ints), not with
finsy's encoder: a test compares what went over the wire with values worked
out by hand. Binds 127.0.0.1 on a free port only.

For unbounded waits: ``answer_arbitration=False`` never answers arbitration,
:func:`blackhole_address` is an address whose SYNs go unanswered,
:func:`mute_tcp_listener` accepts TCP and says nothing, :func:`http_listener`
answers HTTP/1.1 (no gRPC).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import text_format
from finsy import pbutil
from finsy.proto import U128, p4d, p4i, p4r, p4r_grpc, rpc_code, rpc_status
from finsy.test.p4runtime_server import P4RuntimeServer

Match = dict[str, Any]          # field name -> int (exact), (value, prefix_len) or (value, mask)
TableKey = tuple[int, frozenset[bytes], int]


def load_p4info(path: Path) -> p4i.P4Info:
    info = p4i.P4Info()
    text_format.Parse(path.read_text(), info)
    return info


def p4info_has_tables(path: Path) -> bool:
    """False while the golden P4Info is the enums-only placeholder (no p4c yet)."""
    return bool(load_p4info(path).tables)


def closed_port() -> int:
    """A 127.0.0.1 TCP port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def ipv4_int(addr: str) -> int:
    return int.from_bytes(bytes(int(b) for b in addr.split(".")), "big")


@contextlib.contextmanager
def blackhole_address() -> Iterator[str]:
    """A 127.0.0.1 address that drops SYNs, like a host behind a dropping firewall:
    a listener with backlog 0 whose one queued connection is never accepted
    (Linux drops a SYN while the accept queue is full). Deterministic, no root."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        fillers = []
        try:
            while True:
                filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                fillers.append(filler)
                filler.settimeout(0.2)
                try:
                    filler.connect(listener.getsockname())   # queued until the queue is full
                except TimeoutError:
                    break                                      # the SYN was dropped: full
                if len(fillers) > 8:
                    raise RuntimeError("the kernel does not drop SYNs on a full accept queue")
            yield f"127.0.0.1:{listener.getsockname()[1]}"
        finally:
            for filler in fillers:
                filler.close()


@contextlib.contextmanager
def _tcp_listener(handle: Any) -> Iterator[str]:
    """A thread accepting TCP connections on 127.0.0.1, calling handle(conn) on each."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return                     # closed
            held.append(conn)
            try:
                handle(conn)
            except OSError:
                pass                       # the client left first (wait_for_grpc's probe)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(5)
        for conn in held:
            conn.close()


def mute_tcp_listener() -> contextlib.AbstractContextManager[str]:
    """Accepts TCP and never sends a byte (no HTTP/2 settings: a stuck server)."""
    return _tcp_listener(lambda conn: None)


def http_listener() -> contextlib.AbstractContextManager[str]:
    """Answers every connection with an HTTP/1.1 400 and closes it (a web server)."""
    def answer(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        conn.shutdown(socket.SHUT_WR)
    return _tcp_listener(answer)


@dataclass
class _Client:
    """One StreamChannel: its outgoing queue and, once arbitrated, its election id."""

    queue: asyncio.Queue[p4r.StreamMessageResponse]
    device_id: int = 0
    election_id: int | None = None


@dataclass(frozen=True)
class WrittenEntry:
    """A table entry decoded by P4Info name: what the switch would hold."""

    table: str
    match: Match
    action: str
    params: dict[str, int]
    priority: int = 0


@dataclass(frozen=True)
class WrittenUpdate:
    type: str                   # "INSERT", "MODIFY", "DELETE"
    entity: WrittenEntry | tuple[str, str]   # a table entry or ("digest", name)


class _P4Error(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class FakeP4RuntimeServer(P4RuntimeServer):
    """See the module docstring. Serve with ``async with server.run():`` on the
    current event loop, or with serve_in_thread."""

    def __init__(self, *, device_id: int = 1, p4info: p4i.P4Info | None = None,
                 other_primary_election_id: int | None = None,
                 answer_arbitration: bool = True, port: int = 0,
                 stratum_rules: bool = False) -> None:
        super().__init__("127.0.0.1:0")
        self.device_id = device_id
        self.port = port            # 0: a free one; another: a restarted switch's
        # p4info: a program already running (cookie 0: a pushing client pushes anyway)
        self.config: p4r.ForwardingPipelineConfig | None = None
        if p4info is not None:
            self.config = p4r.ForwardingPipelineConfig(
                p4info=p4info, cookie=p4r.ForwardingPipelineConfig.Cookie(cookie=0))
        self.other_primary_election_id = other_primary_election_id
        self.answer_arbitration = answer_arbitration
        self.primary_election_id: int | None = None   # the last primary's (kept after it left)
        self.clients: list[_Client] = []
        self.arbitrations: list[p4r.MasterArbitrationUpdate] = []
        self.pipeline_pushes: list[p4r.SetForwardingPipelineConfigRequest] = []
        self.write_requests: list[p4r.WriteRequest] = []
        self.read_requests: list[p4r.ReadRequest] = []
        self.digest_acks: list[tuple[int, int]] = []
        self.entries: dict[TableKey, p4r.TableEntry] = {}
        self.digest_configs: dict[int, p4r.DigestEntry] = {}
        self.value_sets: dict[int, list] = {}      # value set id -> members [(field, bytes)]
        self.clone_sessions: dict[int, p4r.CloneSessionEntry] = {}
        # stratum_rules: refuse what Stratum refuses (its P4Runtime server): a clone
        # session replica with an instance other than 0 or egress port 0, and any
        # parser value set write (UNIMPLEMENTED).
        self.stratum_rules = stratum_rules
        self.counters: dict[str, dict[int, tuple[int, int]]] = {}   # name -> index -> (pkts, bytes)
        self.registers: dict[str, dict[int, int]] = {}   # alias -> index -> value (absent: 0)
        self.extra_read_entities: list[p4r.Entity] = []
        self.stalled_rpcs: set[str] = set()
        # PacketOuts of the primary the switch took, and those it refused (with
        # stratum_rules: metadata that is not the P4Info's packet_out header)
        self.packets_out: list[p4r.PacketOut] = []
        self.refused_packets_out: list[tuple[p4r.PacketOut, str]] = []

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    # ---- P4Info lookups (raw protobuf) ------------------------------
    @property
    def p4info(self) -> p4i.P4Info:
        if self.config is None:
            raise RuntimeError("the fake switch has no P4Info (no pipeline pushed)")
        return self.config.p4info

    def _table(self, table_id: int) -> p4i.Table:
        for table in self.p4info.tables:
            if table.preamble.id == table_id:
                return table
        raise _P4Error(rpc_code.NOT_FOUND, f"no table id {table_id}")

    def _action(self, action_id: int) -> p4i.Action:
        for action in self.p4info.actions:
            if action.preamble.id == action_id:
                return action
        raise _P4Error(rpc_code.NOT_FOUND, f"no action id {action_id}")

    def _counter_by_id(self, counter_id: int) -> p4i.Counter:
        for counter in self.p4info.counters:
            if counter.preamble.id == counter_id:
                return counter
        raise _P4Error(rpc_code.NOT_FOUND, f"no counter id {counter_id}")

    def _register_by_id(self, register_id: int) -> p4i.Register:
        for register in self.p4info.registers:
            if register.preamble.id == register_id:
                return register
        raise _P4Error(rpc_code.NOT_FOUND, f"no register id {register_id}")

    def _digest(self, name: str) -> p4i.Digest:
        for digest in self.p4info.digests:
            if digest.preamble.alias == name or digest.preamble.name == name:
                return digest
        raise KeyError(f"the P4Info has no digest {name!r}")

    def decode_entry(self, entry: p4r.TableEntry) -> WrittenEntry:
        table = self._table(entry.table_id)
        fields = {f.id: f for f in table.match_fields}
        match: Match = {}
        for fm in entry.match:
            name = fields[fm.field_id].name
            kind = fm.WhichOneof("field_match_type")
            if kind == "exact":
                match[name] = int.from_bytes(fm.exact.value, "big")
            elif kind == "lpm":
                match[name] = (int.from_bytes(fm.lpm.value, "big"), fm.lpm.prefix_len)
            elif kind == "ternary":
                match[name] = (int.from_bytes(fm.ternary.value, "big"),
                               int.from_bytes(fm.ternary.mask, "big"))
            elif kind == "range":
                match[name] = (int.from_bytes(fm.range.low, "big"),
                               int.from_bytes(fm.range.high, "big"))
            else:
                raise AssertionError(f"unexpected match kind {kind}")
        action = self._action(entry.action.action.action_id)
        names = {p.id: p.name for p in action.params}
        params = {names[p.param_id]: int.from_bytes(p.value, "big")
                  for p in entry.action.action.params}
        return WrittenEntry(table.preamble.alias, match, action.preamble.alias, params,
                            entry.priority)

    # ---- what the switch holds, decoded ------------------------------
    def table_entries(self, table: str | None = None) -> list[WrittenEntry]:
        decoded = [self.decode_entry(e) for e in self.entries.values()]
        return [e for e in decoded if table is None or e.table == table]

    def written_updates(self) -> list[WrittenUpdate]:
        """Every update of every WriteRequest, in order (failed ones included)."""
        result = []
        for request in self.write_requests:
            for update in request.updates:
                kind = p4r.Update.Type.Name(update.type)
                if update.entity.HasField("table_entry"):
                    result.append(WrittenUpdate(kind, self.decode_entry(update.entity.table_entry)))
                else:
                    digest_id = update.entity.digest_entry.digest_id
                    name = next(d.preamble.alias for d in self.p4info.digests
                                if d.preamble.id == digest_id)
                    result.append(WrittenUpdate(kind, ("digest", name)))
        return result

    # ---- digests ------------------------------------------------------
    def send_digest(self, name: str, items: list[Mapping[str, int]], *, list_id: int) -> None:
        """Push one DigestList; members as full-width bitstrings, like simple_switch_grpc.
        Call it on the server's event loop (serve_in_thread: ThreadedServer.call)."""
        digest = self._digest(name)
        struct = self.p4info.type_info.structs[digest.type_spec.struct.name]
        data = []
        for item in items:
            members = []
            for member in struct.members:
                width = member.type_spec.bitstring.bit.bitwidth
                # an item without ip_version is an IPv4 flow's (the v1model digest
                # carries either family; TNA's has no such member)
                value = item.get(member.name, 4) if member.name == "ip_version" \
                    else item[member.name]
                members.append(p4d.P4Data(
                    bitstring=int(value).to_bytes((width + 7) // 8, "big")))
            data.append(p4d.P4Data(struct=p4d.P4StructLike(members=members)))
        self._send(p4r.StreamMessageResponse(digest=p4r.DigestList(
            digest_id=digest.preamble.id, list_id=list_id, data=data,
            timestamp=time.time_ns())))

    def send_stream(self, response: p4r.StreamMessageResponse) -> None:
        """Push any message to the primary's stream, as it is (call on the server's loop)."""
        self._send(response)

    def notify_arbitration(self) -> None:
        """Tell every client who is primary again (the truth after forged updates)."""
        self._notify_all()

    async def _stall(self, rpc: str) -> None:
        if rpc in self.stalled_rpcs:
            await asyncio.Event().wait()          # accepted, never answered

    # ---- gRPC plumbing ------------------------------------------------
    def _create_server(self) -> grpc.aio.Server:
        server = grpc.aio.server()
        p4r_grpc.add_P4RuntimeServicer_to_server(self, server)
        self.port = server.add_insecure_port(f"127.0.0.1:{self.port}")
        return server

    async def StreamChannel(self, request_iter, context):  # type: ignore[override]
        client = _Client(asyncio.Queue())
        self.clients.append(client)
        writer = self._tasks.create_task(self._stream_write_to(client, context))
        problem = None
        try:
            async for request in request_iter:
                kind = request.WhichOneof("update")
                if kind == "arbitration":
                    problem = self._arbitrate(client, request.arbitration)
                    if problem is not None:
                        break
                elif kind == "packet" and client is self._primary_client():
                    self._packet_out(request.packet)
                elif kind == "digest_ack" and client is self._primary_client():
                    self.digest_acks.append((request.digest_ack.digest_id,
                                             request.digest_ack.list_id))
        except grpc.RpcError:
            pass                             # the client went away
        finally:
            writer.cancel()
            was_primary = client is self._primary_client()
            self.clients.remove(client)
            if was_primary:
                self._notify_all()
        if problem is not None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)

    def _packet_out(self, packet: p4r.PacketOut) -> None:
        problem = self._packet_out_problem(packet) if self.stratum_rules else None
        if problem is None:
            self.packets_out.append(packet)
        else:
            self.refused_packets_out.append((packet, problem))

    def _packet_out_problem(self, packet: p4r.PacketOut) -> str | None:
        """Stratum builds the packet_out header from the P4Info: every field of it,
        each value within its bitwidth, nothing else (a program without the header
        takes no metadata)."""
        p4info = self.config.p4info if self.config is not None else p4i.P4Info()
        header = next((c for c in p4info.controller_packet_metadata
                       if c.preamble.name == "packet_out"), None)
        fields = {m.id: m for m in header.metadata} if header is not None else {}
        given = {m.metadata_id: m.value for m in packet.metadata}
        if set(given) != set(fields):
            return (f"PacketOut metadata ids {sorted(given)}, the P4Info's packet_out "
                    f"header has {sorted(fields)}")
        for mid, value in given.items():
            if int.from_bytes(value, "big") >> fields[mid].bitwidth:
                return f"packet_out.{fields[mid].name} wider than {fields[mid].bitwidth} bits"
        return None

    async def _stream_write_to(self, client: _Client,
                               context: grpc.aio.ServicerContext) -> None:
        while True:     # one write() at a time, or gRPC raises ExecuteBatchError
            await context.write(await client.queue.get())

    def _primary_id(self) -> int | None:
        """The highest election id: of a connected client or other_primary_election_id."""
        ids = [c.election_id for c in self.clients if c.election_id is not None]
        if self.other_primary_election_id is not None:
            ids.append(self.other_primary_election_id)
        return max(ids, default=None)

    def _primary_client(self) -> _Client | None:
        primary = self._primary_id()
        return next((c for c in self.clients
                     if primary is not None and c.election_id == primary), None)

    def _arbitrate(self, client: _Client, update: p4r.MasterArbitrationUpdate) -> str | None:
        """simple_switch_grpc's arbitration (PI pi_server.cpp): an error message for an
        election id in use; otherwise the answer(s), unless answer_arbitration is off."""
        self.arbitrations.append(update)
        election_id = U128.decode(update.election_id)
        if any(c is not client and c.election_id == election_id for c in self.clients):
            return "Election id already exists"
        before = self._primary_client()
        client.election_id, client.device_id = election_id, update.device_id
        if not self.answer_arbitration:
            return None
        if self._primary_client() is not before:
            self._notify_all()
        else:
            self._notify(client)
        return None

    def _notify(self, client: _Client) -> None:
        primary = self._primary_id()
        if client is self._primary_client():
            code = rpc_code.OK
            self.primary_election_id = client.election_id
        else:
            code = rpc_code.ALREADY_EXISTS
        assert primary is not None
        client.queue.put_nowait(p4r.StreamMessageResponse(arbitration=p4r.MasterArbitrationUpdate(
            device_id=client.device_id, election_id=U128.encode(primary),
            status=rpc_status.Status(code=code))))

    def _notify_all(self) -> None:
        if self.answer_arbitration:
            for client in self.clients:
                if client.election_id is not None:
                    self._notify(client)

    def _send(self, response: p4r.StreamMessageResponse) -> None:
        """To the primary only, as simple_switch_grpc (digests, packet-ins)."""
        primary = self._primary_client()
        if primary is not None:
            primary.queue.put_nowait(response)

    async def _check_primary(self, request: Any, context: grpc.aio.ServicerContext) -> None:
        if request.device_id != self.device_id:
            await context.abort(grpc.StatusCode.NOT_FOUND, "Invalid device id")
        if self.primary_election_id is None \
                or U128.decode(request.election_id) != self.primary_election_id:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "Not primary")

    async def _check_pipeline(self, request: Any, context: grpc.aio.ServicerContext) -> None:
        if request.device_id != self.device_id:
            await context.abort(grpc.StatusCode.NOT_FOUND, "Invalid device id")
        if self.config is None:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                                "No forwarding pipeline config set for this device")

    async def GetForwardingPipelineConfig(self, request, context):  # type: ignore[override]
        await self._check_pipeline(request, context)
        assert self.config is not None
        kind = request.response_type
        config = p4r.ForwardingPipelineConfig(cookie=self.config.cookie)
        if kind in (request.ALL, request.P4INFO_AND_COOKIE):
            config.p4info.CopyFrom(self.config.p4info)
        if kind in (request.ALL, request.DEVICE_CONFIG_AND_COOKIE):
            config.p4_device_config = self.config.p4_device_config
        return p4r.GetForwardingPipelineConfigResponse(config=config)

    async def SetForwardingPipelineConfig(self, request, context):  # type: ignore[override]
        self.pipeline_pushes.append(request)
        await self._check_primary(request, context)
        if request.action != request.VERIFY_AND_COMMIT:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "fake: VERIFY_AND_COMMIT only")
        self.config = request.config
        self.entries.clear()
        self.digest_configs.clear()
        return p4r.SetForwardingPipelineConfigResponse()

    async def Write(self, request, context):  # type: ignore[override]
        self.write_requests.append(request)
        await self._stall("Write")
        await self._check_primary(request, context)
        await self._check_pipeline(request, context)
        errors = []
        for update in request.updates:
            try:
                self._apply(update)
                errors.append(p4r.Error(canonical_code=rpc_code.OK))
            except _P4Error as err:
                errors.append(p4r.Error(canonical_code=err.code, message=err.message))
        if any(e.canonical_code != rpc_code.OK for e in errors):
            status = rpc_status.Status(code=rpc_code.UNKNOWN, message="Write failure.",
                                       details=[pbutil.to_any(e) for e in errors])
            await context.abort(grpc.StatusCode.UNKNOWN, "Write failure.", trailing_metadata=(
                ("grpc-status-details-bin", status.SerializeToString()),))
        return p4r.WriteResponse()

    def _apply(self, update: p4r.Update) -> None:
        kind = update.entity.WhichOneof("entity")
        if kind == "table_entry":
            self._apply_table_entry(update.type, update.entity.table_entry)
        elif kind == "digest_entry":
            self._apply_digest_entry(update.type, update.entity.digest_entry)
        elif kind == "register_entry":
            self._apply_register_entry(update.type, update.entity.register_entry)
        elif kind == "value_set_entry":
            if self.stratum_rules:
                raise _P4Error(rpc_code.UNIMPLEMENTED, "Stratum: value sets are not supported")
            self._apply_value_set_entry(update.type, update.entity.value_set_entry)
        elif kind == "packet_replication_engine_entry" and \
                update.entity.packet_replication_engine_entry.WhichOneof("type") == \
                "clone_session_entry":
            self._apply_clone_session(update.type,
                                      update.entity.packet_replication_engine_entry
                                      .clone_session_entry)
        else:
            raise _P4Error(rpc_code.UNIMPLEMENTED, f"fake: cannot write {kind}")

    def _table_key(self, entry: p4r.TableEntry) -> TableKey:
        return (entry.table_id,
                frozenset(fm.SerializeToString(deterministic=True) for fm in entry.match),
                entry.priority)

    def _check_table_entry(self, entry: p4r.TableEntry) -> None:
        table = self._table(entry.table_id)
        if entry.is_default_action:
            raise _P4Error(rpc_code.INVALID_ARGUMENT, "fake: default actions are const")
        fields = {f.id: f for f in table.match_fields}
        for fm in entry.match:
            if fm.field_id not in fields:
                raise _P4Error(rpc_code.INVALID_ARGUMENT, f"no match field {fm.field_id}")
        ternary = any(f.match_type in (p4i.MatchField.TERNARY, p4i.MatchField.RANGE)
                      for f in table.match_fields)
        if ternary != (entry.priority > 0):
            raise _P4Error(rpc_code.INVALID_ARGUMENT, "priority must be > 0 exactly "
                              "for tables with ternary or range keys")
        refs = {ref.id: ref for ref in table.action_refs}
        action_id = entry.action.action.action_id
        if action_id not in refs or refs[action_id].scope == p4i.ActionRef.DEFAULT_ONLY:
            raise _P4Error(rpc_code.INVALID_ARGUMENT, f"action {action_id} not in table")
        widths = {p.id: p.bitwidth for p in self._action(action_id).params}
        given = {p.param_id: p.value for p in entry.action.action.params}
        if set(given) != set(widths):
            raise _P4Error(rpc_code.INVALID_ARGUMENT, f"params {sorted(given)} != "
                              f"{sorted(widths)}")
        for param_id, value in given.items():
            if int.from_bytes(value, "big") >> widths[param_id]:
                raise _P4Error(rpc_code.INVALID_ARGUMENT, f"param {param_id} too wide")

    def _apply_table_entry(self, kind: int, entry: p4r.TableEntry) -> None:
        key = self._table_key(entry)
        if kind == p4r.Update.DELETE:
            if self.entries.pop(key, None) is None:
                raise _P4Error(rpc_code.NOT_FOUND, "no such entry")
            return
        self._check_table_entry(entry)
        if kind == p4r.Update.INSERT and key in self.entries:
            raise _P4Error(rpc_code.ALREADY_EXISTS, "entry exists")
        if kind == p4r.Update.MODIFY and key not in self.entries:
            raise _P4Error(rpc_code.NOT_FOUND, "no such entry")
        stored = p4r.TableEntry()
        stored.CopyFrom(entry)
        self.entries[key] = stored

    def _apply_value_set_entry(self, kind: int, entry: p4r.ValueSetEntry) -> None:
        """P4Runtime: a value set is only MODIFYed, its members replaced whole,
        at most its size."""
        sets = {v.preamble.id: v for v in self.p4info.value_sets}
        if entry.value_set_id not in sets:
            raise _P4Error(rpc_code.NOT_FOUND, f"no value set id {entry.value_set_id}")
        if kind != p4r.Update.MODIFY:
            raise _P4Error(rpc_code.INVALID_ARGUMENT, "value sets are only modified")
        if len(entry.members) > sets[entry.value_set_id].size:
            raise _P4Error(rpc_code.RESOURCE_EXHAUSTED, "more members than the set's size")
        self.value_sets[entry.value_set_id] = [
            [(fm.field_id, fm.exact.value) for fm in member.match] for member in entry.members]

    def _apply_digest_entry(self, kind: int, entry: p4r.DigestEntry) -> None:
        if entry.digest_id not in {d.preamble.id for d in self.p4info.digests}:
            raise _P4Error(rpc_code.NOT_FOUND, f"no digest id {entry.digest_id}")
        exists = entry.digest_id in self.digest_configs
        if kind == p4r.Update.INSERT and exists:
            raise _P4Error(rpc_code.ALREADY_EXISTS, "digest already configured")
        if kind in (p4r.Update.MODIFY, p4r.Update.DELETE) and not exists:
            raise _P4Error(rpc_code.NOT_FOUND, "digest not configured")
        if kind == p4r.Update.DELETE:
            del self.digest_configs[entry.digest_id]
        else:
            stored = p4r.DigestEntry()
            stored.CopyFrom(entry)
            self.digest_configs[entry.digest_id] = stored

    def _apply_register_entry(self, kind: int, entry: p4r.RegisterEntry) -> None:
        if kind != p4r.Update.MODIFY:
            raise _P4Error(rpc_code.INVALID_ARGUMENT, "a register entry is only modified")
        register = self._register_by_id(entry.register_id)
        if not entry.HasField("index") or not 0 <= entry.index.index < register.size:
            raise _P4Error(rpc_code.OUT_OF_RANGE, "register index missing or out of range")
        width = register.type_spec.bitstring.bit.bitwidth
        value = int.from_bytes(entry.data.bitstring, "big")
        if entry.data.WhichOneof("data") != "bitstring" or value >> width:
            raise _P4Error(rpc_code.INVALID_ARGUMENT, f"register value is not bit<{width}>")
        self.registers.setdefault(register.preamble.alias, {})[entry.index.index] = value

    def _apply_clone_session(self, kind: int, entry: p4r.CloneSessionEntry) -> None:
        if self.stratum_rules:
            for r in entry.replicas:
                port = int.from_bytes(r.port, "big") if r.port else r.egress_port
                if r.instance != 0:
                    raise _P4Error(rpc_code.INVALID_ARGUMENT, f"Stratum: clone session "
                                   f"{entry.session_id}: replica instance must be 0")
                if port == 0:
                    raise _P4Error(rpc_code.INVALID_ARGUMENT, f"Stratum: clone session "
                                   f"{entry.session_id}: egress port 0")
        if kind == p4r.Update.DELETE:
            if self.clone_sessions.pop(entry.session_id, None) is None:
                raise _P4Error(rpc_code.NOT_FOUND, f"no clone session {entry.session_id}")
            return
        if (kind == p4r.Update.INSERT) == (entry.session_id in self.clone_sessions):
            raise _P4Error(rpc_code.ALREADY_EXISTS if kind == p4r.Update.INSERT
                           else rpc_code.NOT_FOUND, f"clone session {entry.session_id}")
        stored = p4r.CloneSessionEntry()
        stored.CopyFrom(entry)
        self.clone_sessions[entry.session_id] = stored

    async def Read(self, request, context):  # type: ignore[override]
        self.read_requests.append(request)
        await self._stall("Read")
        await self._check_pipeline(request, context)
        entities: list[p4r.Entity] = []
        try:
            for wanted in request.entities:
                kind = wanted.WhichOneof("entity")
                if kind == "table_entry":
                    entities += self._read_table_entries(wanted.table_entry)
                elif kind == "counter_entry":
                    entities += self._read_counter_entries(wanted.counter_entry)
                elif kind == "register_entry":
                    entities += self._read_register_entries(wanted.register_entry)
                elif kind == "digest_entry":   # by id only, as P4Runtime (no wildcard)
                    stored = self.digest_configs.get(wanted.digest_entry.digest_id)
                    if stored is None:      # simple_switch_grpc fails the whole request
                        raise _P4Error(rpc_code.NOT_FOUND, f"Digest "
                                       f"{wanted.digest_entry.digest_id} not configured")
                    entities.append(p4r.Entity(digest_entry=stored))
                elif kind == "packet_replication_engine_entry" and \
                        wanted.packet_replication_engine_entry.WhichOneof("type") == \
                        "clone_session_entry":
                    entities += [p4r.Entity(packet_replication_engine_entry=
                                            p4r.PacketReplicationEngineEntry(
                                                clone_session_entry=e))
                                 for _, e in sorted(self.clone_sessions.items())]
                elif kind not in ("packet_replication_engine_entry", "action_profile_member",
                                  "action_profile_group"):   # none in this program
                    raise _P4Error(rpc_code.UNIMPLEMENTED, f"fake: cannot read {kind}")
        except _P4Error as err:
            await context.abort(_grpc_code(err.code), err.message)
        yield p4r.ReadResponse(entities=entities + self.extra_read_entities)

    def _read_table_entries(self, wanted: p4r.TableEntry) -> list[p4r.Entity]:
        result = []
        for key, entry in self.entries.items():
            if wanted.table_id and entry.table_id != wanted.table_id:
                continue
            if wanted.match and key[1:] != self._table_key(wanted)[1:]:
                continue
            result.append(p4r.Entity(table_entry=entry))
        return result

    def _read_counter_entries(self, wanted: p4r.CounterEntry) -> list[p4r.Entity]:
        counters = ([self._counter_by_id(wanted.counter_id)] if wanted.counter_id
                    else list(self.p4info.counters))
        result = []
        for counter in counters:
            if wanted.HasField("index"):
                if not 0 <= wanted.index.index < counter.size:
                    raise _P4Error(rpc_code.OUT_OF_RANGE, "counter index out of range")
                indexes = [wanted.index.index]
            else:
                indexes = list(range(counter.size))
            values = self.counters.get(counter.preamble.alias, {})
            for index in indexes:
                packets, byte_count = values.get(index, (0, 0))
                result.append(p4r.Entity(counter_entry=p4r.CounterEntry(
                    counter_id=counter.preamble.id, index=p4r.Index(index=index),
                    data=p4r.CounterData(packet_count=packets, byte_count=byte_count))))
        return result


    def _read_register_entries(self, wanted: p4r.RegisterEntry) -> list[p4r.Entity]:
        registers = ([self._register_by_id(wanted.register_id)] if wanted.register_id
                     else list(self.p4info.registers))
        result = []
        for register in registers:
            if wanted.HasField("index"):
                if not 0 <= wanted.index.index < register.size:
                    raise _P4Error(rpc_code.OUT_OF_RANGE, "register index out of range")
                indexes = [wanted.index.index]
            else:
                indexes = list(range(register.size))
            width = register.type_spec.bitstring.bit.bitwidth
            values = self.registers.get(register.preamble.alias, {})
            for index in indexes:
                result.append(p4r.Entity(register_entry=p4r.RegisterEntry(
                    register_id=register.preamble.id, index=p4r.Index(index=index),
                    data=p4d.P4Data(bitstring=values.get(index, 0).to_bytes(
                        max(1, (width + 7) // 8), "big")))))
        return result


def _grpc_code(code: int) -> grpc.StatusCode:
    return next(c for c in grpc.StatusCode if c.value[0] == code)


class ThreadedServer:
    """The fake server on its own event loop in a thread, for synchronous callers
    (BlockingSwitch, cli.main, which runs asyncio.run itself)."""

    def __init__(self, server: FakeP4RuntimeServer) -> None:
        self.server = server
        self.loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self.loop.run_until_complete,
                                        args=(self._serve(),), daemon=True)

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        async with self.server.run():
            self._started.set()
            await self._stop.wait()

    def call(self, fn: Any, *args: Any, **kwargs: Any) -> None:
        """Run fn(*args, **kwargs) on the server's loop and wait for it."""
        async def run() -> None:
            fn(*args, **kwargs)
        asyncio.run_coroutine_threadsafe(run(), self.loop).result(5)

    def start(self) -> None:
        self._thread.start()
        if not self._started.wait(5):
            raise RuntimeError("the fake P4Runtime server did not start")

    def stop(self) -> None:
        if self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(5)
        self.loop.close()


@contextlib.contextmanager
def serve_in_thread(server: FakeP4RuntimeServer) -> Iterator[ThreadedServer]:
    threaded = ThreadedServer(server)
    threaded.start()
    try:
        yield threaded
    finally:
        threaded.stop()


def run_async(coro: Any, timeout_s: float = 5.0) -> Any:
    """asyncio.run with a deadline, so a hang fails the test instead of CI."""
    return asyncio.run(asyncio.wait_for(coro, timeout_s))
