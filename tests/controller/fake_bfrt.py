"""A BfRt gRPC server for the control-plane tests: the tables of a bfrt.json
fixture (tests/controller/fixtures/tna-<variant>.bfrt.json, cut from the
compiler's bfrt.json by tools/strip_bfrt_json.py: its Lpf tables and the
occupancy and flow-slot registers) and, as the device's fixed tables, a
stand-in for two of the traffic manager's (FIXED_TABLES: the port shaper's
tables with the names, keys and field types of bf-drivers' Tofino 1 TM
schema, not its ids), served over the generated stubs of bfruntime.proto with
the rules of open-p4studio's server (bf_rt_server_impl.cpp,
bf_rt_server_mgr.cpp) that the clients meet:

- a client subscribes first, on StreamChannel (``Subscribe``, answered with a
  ``subscribe`` message of status OK); a second client of one id is refused;
- SetForwardingPipelineConfig BIND binds a subscribed client to the program,
  by its name (``p4_name``): an unknown client is refused (FAILED_PRECONDITION),
  another program's name NOT_FOUND, a program another client owns ALREADY_EXISTS;
- GetForwardingPipelineConfig answers the program's bfrt.json and the fixed
  tables' (``non_p4_config``);
- Write and Read come from a subscribed client bound to the program, or naming it
  in the request (a newer server also serves a client that never subscribed and
  names the program: this fake is the older, stricter rule, which the clients
  meet either way);
- a TableEntry names a table by id (the schema's), its key is exactly the
  table's key fields, exact, each value of its width (an index below the
  table's size), its data fields the table's with the value kind of their type
  (string with one of its choices, float_val, bool_val, a byte stream of the
  width) and every mandatory one (an Lpf's or a register's: all of them);
  INSERT and MODIFY both set the entry (an Lpf table or a register has one at
  every index), DELETE is refused; every update is checked before any is
  applied (a refused request changes nothing);
- ``writes`` records each accepted WriteRequest; ``specs`` what each Lpf entry
  (table name, index) holds, ``registers`` each register index's fields (one
  value per pipe, PIPES of them: a write sets every pipe), ``entries`` each
  fixed table's entry (table name, key values) by field name. Read answers the
  keys asked from them (an Lpf all zero, SAMPLE, and a register 0 where nothing
  was written, as a switch's reset state); a register field comes back as one
  DataField per pipe, as the server sends it (populateReadResponseWithRegisterFields).

Binds 127.0.0.1 on a free port only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from mmaqm.p4rt.proto import bfruntime_pb2 as pb
from mmaqm.p4rt.proto import bfruntime_pb2_grpc as pb_grpc

FIXTURES = Path(__file__).resolve().parent / "fixtures"
_WIDTHS = {"uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8}
PIPES = 4               # a Tofino 1's pipes: a register holds a value in each


def _width_bytes(type_: dict) -> int:
    kind = type_["type"]
    return _WIDTHS[kind] if kind in _WIDTHS else (int(type_.get("width", 0)) + 7) // 8


def _fixed_table(name: str, table_id: int, kind: str, size: int,
                 fields: list[tuple[str, dict]]) -> dict:
    """A fixed table in bfrt.json's form, keyed by dev_port (uint32, exact), its
    data fields optional (a modify sets those given)."""
    return {"name": name, "id": table_id, "table_type": kind, "size": size,
            "key": [{"id": 1, "name": "dev_port", "match_type": "Exact",
                     "type": {"type": "uint32"}}],
            "data": [{"mandatory": False, "read_only": False,
                      "singleton": {"id": i, "name": n, "type": t}}
                     for i, (n, t) in enumerate(fields, 1)]}


# The device's fixed tables this fake serves: the two port-shaper tables the PTF
# harness writes (mmaqm_tofino.port_rate_writes), with the names, key and data
# field types of bf-drivers' Tofino 1 traffic-manager schema; ids are this fake's.
FIXED_TABLES = {"schema_version": "1.0.0", "tables": [
    _fixed_table("tf1.tm.port.sched_shaping", 0xFF000001, "TmPortSchedShaping", 288, [
        ("unit", {"type": "string", "choices": ["PPS", "BPS"]}),
        ("provisioning", {"type": "string", "choices": ["UPPER", "LOWER", "MIN_ERROR"]}),
        ("max_rate", {"type": "uint32"}), ("max_burst_size", {"type": "uint32"})]),
    _fixed_table("tf1.tm.port.sched_cfg", 0xFF000002, "TmPortSchedCfg", 288, [
        ("max_rate_enable", {"type": "bool"}),
        ("scheduling_speed", {"type": "string", "choices": ["BF_SPEED_NONE", "BF_SPEED_100G"]})]),
], "learn_filters": []}


def bfrt_fixture(variant: str) -> Path:
    return FIXTURES / f"tna-{variant.replace('_', '-')}.bfrt.json"


@dataclass(frozen=True)
class Spec:
    """What one Lpf entry holds, by field name."""

    type: str
    gain_ns: float
    decay_ns: float
    scale_down: int


class _Refused(Exception):
    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def float32(value: float) -> float:
    """value as a 32-bit float holds it (BfRt's float fields)."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


class FakeBfrtServer(pb_grpc.BfRuntimeServicer):
    """See the module docstring. ``async with server.run():``."""

    def __init__(self, bfrt_json: Path, p4_name: str, *, device_id: int = 0,
                 fixed_tables: dict | None = None) -> None:
        self.bfrt_json = Path(bfrt_json).read_bytes()
        self.fixed_json = json.dumps(FIXED_TABLES if fixed_tables is None
                                     else fixed_tables).encode()
        self.tables = {t["id"]: t for doc in (json.loads(self.bfrt_json),
                                              json.loads(self.fixed_json))
                       for t in doc["tables"]}
        self.p4_name = p4_name
        self.device_id = device_id
        self.port = 0
        self.subscribed: dict[int, Any] = {}       # client id -> its stream's context
        self.bound: dict[int, str] = {}            # client id -> program
        self.subscriptions: list[pb.Subscribe] = []
        self.binds: list[pb.SetForwardingPipelineConfigRequest] = []
        self.writes: list[pb.WriteRequest] = []
        self.refused: list[tuple[str, str]] = []   # (rpc, why)
        self.reads: list[pb.ReadRequest] = []
        self.specs: dict[tuple[str, int], Spec] = {}
        self.registers: dict[tuple[str, int], dict[str, list[int]]] = {}
        self.entries: dict[tuple[str, tuple[int, ...]], dict[str, Any]] = {}
        self._server: grpc.aio.Server | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def table_named(self, name: str) -> dict:
        return next(t for t in self.tables.values() if t["name"] == name)

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator["FakeBfrtServer"]:
        server = grpc.aio.server()
        pb_grpc.add_BfRuntimeServicer_to_server(self, server)
        self.port = server.add_insecure_port(f"127.0.0.1:{self.port}")
        await server.start()
        self._server = server
        try:
            yield self
        finally:
            await server.stop(None)
            self._server = None

    # ---- the stream: subscription -----------------------------------
    async def StreamChannel(self, request_iter, context):  # type: ignore[override]
        client_id = None
        try:
            async for request in request_iter:
                if request.WhichOneof("update") != "subscribe" or client_id is not None:
                    continue
                if request.client_id in self.subscribed:
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                        "Can't have two clients with the same client id")
                client_id = request.client_id
                self.subscribed[client_id] = context
                self.subscriptions.append(request.subscribe)
                answer = pb.StreamMessageResponse(subscribe=pb.Subscribe(
                    device_id=request.subscribe.device_id))
                answer.subscribe.status.code = 0
                await context.write(answer)
        finally:
            if client_id is not None:      # the stream is the client's heartbeat
                self.subscribed.pop(client_id, None)
                self.bound.pop(client_id, None)

    async def SetForwardingPipelineConfig(self, request, context):  # type: ignore[override]
        self.binds.append(request)
        if request.action != pb.SetForwardingPipelineConfigRequest.BIND:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "only BIND in this fake")
        if request.client_id not in self.subscribed:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                                f"Unknown client. Client_id:{request.client_id}")
        if len(request.config) != 1:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                "Exactly one config message required.")
        name = request.config[0].p4_name
        if name != self.p4_name:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no program {name!r}")
        owner = next((c for c, p in self.bound.items() if p == name), None)
        if owner is not None and owner != request.client_id:
            await context.abort(grpc.StatusCode.ALREADY_EXISTS,
                                f"Client ID {request.client_id} trying to bind but Client "
                                f"ID {owner} already owns this P4")
        self.bound[request.client_id] = name
        return pb.SetForwardingPipelineConfigResponse()

    async def GetForwardingPipelineConfig(self, request, context):  # type: ignore[override]
        if request.device_id != self.device_id:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                f"device {request.device_id}: not {self.device_id}")
        return pb.GetForwardingPipelineConfigResponse(
            config=[pb.ForwardingPipelineConfig(p4_name=self.p4_name,
                                                bfruntime_info=self.bfrt_json)],
            non_p4_config=pb.NonP4Config(bfruntime_info=self.fixed_json))

    # ---- Write and Read ---------------------------------------------
    def _check_client(self, request: Any) -> None:
        if request.client_id not in self.subscribed:
            raise _Refused(grpc.StatusCode.FAILED_PRECONDITION,
                           f"Unknown client. Client_id:{request.client_id} (subscribe first)")
        program = request.p4_name or self.bound.get(request.client_id)
        if program is None:
            raise _Refused(grpc.StatusCode.FAILED_PRECONDITION, "Unable to get bound_program")
        if program != self.p4_name:
            raise _Refused(grpc.StatusCode.NOT_FOUND, f"Unable to obtain BF_RT info for "
                                                      f"({program})")
        if request.target.device_id != self.device_id:
            raise _Refused(grpc.StatusCode.INVALID_ARGUMENT,
                           f"device {request.target.device_id}: not {self.device_id}")

    def _table(self, entry: pb.TableEntry) -> dict:
        table = self.tables.get(entry.table_id)
        if table is None:
            raise _Refused(grpc.StatusCode.NOT_FOUND, f"Table not found for id {entry.table_id}")
        return table

    def _key(self, table: dict, entry: pb.TableEntry) -> tuple[int, ...]:
        """The key's values in the table's key order: exactly its fields, exact,
        each of its width; an index below the table's size."""
        keys = table["key"]
        fields = {f.field_id: f for f in entry.key.fields}
        if sorted(fields) != sorted(k["id"] for k in keys) \
                or len(fields) != len(entry.key.fields) \
                or any(f.WhichOneof("match_type") != "exact" for f in fields.values()):
            raise _Refused(grpc.StatusCode.INVALID_ARGUMENT,
                           f"{table['name']}: the key must be "
                           f"{[k['name'] for k in keys]}, exact")
        values = []
        for k in keys:
            value = fields[k["id"]].exact.value
            if len(value) != _width_bytes(k["type"]):
                raise _Refused(grpc.StatusCode.INVALID_ARGUMENT,
                               f"{table['name']}: key {k['name']} of {len(value)} bytes")
            number = int.from_bytes(value, "big")
            if k["name"].endswith("_INDEX") and number >= table["size"]:
                raise _Refused(grpc.StatusCode.INVALID_ARGUMENT,
                               f"{table['name']}: index {number} >= size {table['size']}")
            values.append(number)
        return tuple(values)

    def _index(self, table: dict, entry: pb.TableEntry) -> int:
        [index] = self._key(table, entry)
        return index

    def _data(self, table: dict, entry: pb.TableEntry) -> dict[str, Any]:
        """The data fields by name, each of its type's kind; every mandatory one."""
        meta = {d["singleton"]["id"]: (d["singleton"], d.get("mandatory", False))
                for d in table["data"] if "singleton" in d}
        got: dict[str, Any] = {}
        for field in entry.data.fields:
            single = meta.get(field.field_id, (None, False))[0]
            if single is None:
                raise _Refused(grpc.StatusCode.INVALID_ARGUMENT,
                               f"{table['name']}: no data field {field.field_id}")
            kind, ftype = field.WhichOneof("value"), single["type"]["type"]
            if ftype == "string":
                ok = kind == "str_val" and field.str_val in single["type"].get("choices", ())
                value: Any = field.str_val
            elif ftype == "float":
                ok, value = kind == "float_val", field.float_val
            elif ftype == "bool":
                ok, value = kind == "bool_val", field.bool_val
            else:
                ok = kind == "stream" and len(field.stream) == _width_bytes(single["type"])
                value = int.from_bytes(field.stream, "big")
            if not ok:
                raise _Refused(grpc.StatusCode.INVALID_ARGUMENT,
                               f"{table['name']} {single['name']}: a {kind} value for a "
                               f"{ftype} field")
            got[single["name"]] = value
        missing = sorted(s["name"] for s, mandatory in meta.values()
                         if mandatory and s["name"] not in got)
        if missing:
            raise _Refused(grpc.StatusCode.INVALID_ARGUMENT,
                           f"{table['name']}: missing data fields {missing}")
        return got

    def _spec(self, table: dict, entry: pb.TableEntry) -> Spec:
        got = self._data(table, entry)
        return Spec(got["$LPF_SPEC_TYPE"], got["$LPF_SPEC_GAIN_TIME_CONSTANT_NS"],
                    got["$LPF_SPEC_DECAY_TIME_CONSTANT_NS"],
                    got["$LPF_SPEC_OUT_SCALE_DOWN_FACTOR"])

    def _stage(self, table: dict, entry: pb.TableEntry) -> Any:
        """What applying the entry does, checked: () -> None, run after every
        update of the request is checked."""
        name, kind = table["name"], table["table_type"]
        if kind == "Lpf":
            where, spec = (name, self._index(table, entry)), self._spec(table, entry)
            return lambda: self.specs.__setitem__(where, spec)
        if kind == "Register":
            where, data = (name, self._index(table, entry)), self._data(table, entry)
            return lambda: self.registers.__setitem__(
                where, {f: [v] * PIPES for f, v in data.items()})
        key, data = (name, self._key(table, entry)), self._data(table, entry)
        return lambda: self.entries.setdefault(key, {}).update(data)

    async def Write(self, request, context):  # type: ignore[override]
        try:
            self._check_client(request)
            staged = []
            for update in request.updates:
                if update.type not in (pb.Update.INSERT, pb.Update.MODIFY):
                    raise _Refused(grpc.StatusCode.INVALID_ARGUMENT,
                                   f"update type {update.type} on an Lpf table")
                if update.entity.WhichOneof("entity") != "table_entry":
                    raise _Refused(grpc.StatusCode.INVALID_ARGUMENT, "not a table entry")
                entry = update.entity.table_entry
                staged.append(self._stage(self._table(entry), entry))
        except _Refused as refused:
            self.refused.append(("Write", str(refused)))
            await context.abort(refused.code, str(refused))
        for apply in staged:
            apply()
        self.writes.append(request)
        return pb.WriteResponse()

    async def Read(self, request, context):  # type: ignore[override]
        self.reads.append(request)
        answer = pb.ReadResponse()
        try:
            self._check_client(request)
            for entity in request.entities:
                entry = entity.table_entry
                table = self._table(entry)
                out = answer.entities.add().table_entry
                out.CopyFrom(pb.TableEntry(table_id=entry.table_id, key=entry.key))
                by_name = {d["singleton"]["name"]: d["singleton"]
                           for d in table["data"] if "singleton" in d}
                if table["table_type"] == "Register":
                    held = self.registers.get((table["name"], self._index(table, entry)), {})
                    for name, single in by_name.items():
                        for value in held.get(name, [0] * PIPES):   # one a pipe
                            out.data.fields.add(field_id=single["id"], stream=value.to_bytes(
                                _width_bytes(single["type"]), "big"))
                    continue
                if table["table_type"] != "Lpf":
                    held = self.entries.get((table["name"], self._key(table, entry)), {})
                    for name, value in held.items():
                        single = by_name[name]
                        kind = single["type"]["type"]
                        if kind == "string":
                            out.data.fields.add(field_id=single["id"], str_val=value)
                        elif kind == "bool":
                            out.data.fields.add(field_id=single["id"], bool_val=value)
                        elif kind == "float":
                            out.data.fields.add(field_id=single["id"], float_val=value)
                        else:
                            out.data.fields.add(field_id=single["id"], stream=value.to_bytes(
                                _width_bytes(single["type"]), "big"))
                    continue
                index = self._index(table, entry)
                spec = self.specs.get((table["name"], index), Spec("SAMPLE", 0.0, 0.0, 0))
                by_name = {n: single["id"] for n, single in by_name.items()}
                out.data.fields.add(field_id=by_name["$LPF_SPEC_TYPE"], str_val=spec.type)
                out.data.fields.add(field_id=by_name["$LPF_SPEC_GAIN_TIME_CONSTANT_NS"],
                                    float_val=spec.gain_ns)
                out.data.fields.add(field_id=by_name["$LPF_SPEC_DECAY_TIME_CONSTANT_NS"],
                                    float_val=spec.decay_ns)
                out.data.fields.add(field_id=by_name["$LPF_SPEC_OUT_SCALE_DOWN_FACTOR"],
                                    stream=spec.scale_down.to_bytes(4, "big"))
        except _Refused as refused:
            self.refused.append(("Read", str(refused)))
            await context.abort(refused.code, str(refused))
        yield answer


def tna_build_dir(root: Path, variant: str) -> Path:
    """A Tofino build directory for the fake switches: the variant's bfrt.json
    fixture and stand-ins for the pipe's context.json and tofino.bin (the fake
    P4Runtime switch takes any device config)."""
    build = Path(root) / variant
    (build / "pipe").mkdir(parents=True, exist_ok=True)
    (build / "bfrt.json").write_bytes(bfrt_fixture(variant).read_bytes())
    (build / "pipe" / "context.json").write_text('{"fake": "context"}')
    (build / "pipe" / "tofino.bin").write_bytes(b"fake tofino.bin")
    return build



@contextlib.asynccontextmanager
async def tofino_bfrt(switch: Any, p4info: Path, root: Path,
                      device_config: Path) -> AsyncIterator[tuple[Any, Path, Any]]:
    """For a test that installs `switch` (a SwitchConfig) from `p4info`: when that is
    a TNA fixture (fixtures/tna-<variant>.p4info.txtpb), a fake BfRt server of the
    variant's bfrt.json, the switch with its address as bfrt_address and the
    variant's build directory as device config; otherwise the switch and
    device_config as given (and no server). Yields (switch, device config, server)."""
    name = Path(p4info).name
    if not (name.startswith("tna-") and name.endswith(".p4info.txtpb")):
        yield switch, device_config, None
        return
    variant = name[len("tna-"):-len(".p4info.txtpb")].replace("-", "_")
    server = FakeBfrtServer(bfrt_fixture(variant), variant)
    async with server.run():
        yield (dataclasses.replace(switch, bfrt_address=server.address),
               tna_build_dir(root, variant), server)
