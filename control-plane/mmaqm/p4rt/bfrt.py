"""A small BfRt gRPC client: table entries written and read by name in a Tofino
build's BfRt schema, for what no P4Runtime server (Stratum's included) carries:
the Lpf settings of the averages (targets.tna_lpf, written and read back by the
controller), and for the PTF harness on the Tofino model the traffic manager's
port shapers and register reads (ptf-tests/tests/mmaqm_tofino.py).

The schema is the build's ``bfrt.json`` (the compiler's, beside ``p4info.txtpb``
in ``build/tna/<variant>/``), to which the device's fixed tables (the traffic
manager's) can be added from the server (``load_fixed_tables``). Each Lpf filter
is a table of ``table_type`` "Lpf", named ``pipe.<control path>.<instance>``,
key ``$LPF_INDEX`` (uint32, exact) and data ``$LPF_SPEC_TYPE`` (string: "RATE"
or "SAMPLE"), ``$LPF_SPEC_GAIN_TIME_CONSTANT_NS`` and
``$LPF_SPEC_DECAY_TIME_CONSTANT_NS`` (float) and
``$LPF_SPEC_OUT_SCALE_DOWN_FACTOR`` (uint32); a register is a table of
``table_type`` "Register", key ``$REGISTER_INDEX``, whose data fields the server
answers once per pipe. Tables and fields are found by name, never by id; every
write and read key is checked against the schema (the table, the key fields,
an index below the table's size, each field's type) before anything is sent.

The protocol, as open-p4studio's server (bf_rt_server_impl.cpp,
bf_rt_server_mgr.cpp) serves it, over the stubs of bfruntime.proto
(p4rt/proto, tools/gen_bfrt_stubs.py):

1. StreamChannel, whose first message is ``Subscribe`` with this client's id; the
   server answers with a ``subscribe`` message whose status is OK (the stream is
   also the client's heartbeat: it stays open while the client works);
2. SetForwardingPipelineConfig with action BIND and the program's name, which
   makes the client the program's (the server lets one client bind a program;
   a newer server also serves a client that names the program in each request,
   which this client does too);
3. Write: one WriteRequest of MODIFY updates (an Lpf table has an entry at every
   index; the server's add and modify both set it), data fields by type: a
   string as ``str_val``, a float as ``float_val``, a bool as ``bool_val``, an
   integer as a big-endian byte ``stream`` of the field's width; Read: the
   entries asked, by key (``from_hw`` for a register's current value);
   GetForwardingPipelineConfig: the device's fixed tables (``non_p4_config``).

The device is the ASIC's (BfRt device 0, every pipe): not P4Runtime's device id.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import grpc

from ..targets.tna_lpf import FLOAT32_MAX, LpfSpec
from .session import CONNECT_TIMEOUT_S, REQUEST_TIMEOUT_S, SwitchConnectionError, within
from .proto import bfruntime_pb2 as bfrt_pb2
from .proto import bfruntime_pb2_grpc as bfrt_grpc

LPF_TABLE_TYPE = "Lpf"
REGISTER_TABLE_TYPE = "Register"
PIPE_PREFIX = "pipe."       # the compiler's tables of main.p4's Pipeline instance
KEY_INDEX = "$LPF_INDEX"
FIELD_TYPE = "$LPF_SPEC_TYPE"
FIELD_GAIN_NS = "$LPF_SPEC_GAIN_TIME_CONSTANT_NS"
FIELD_DECAY_NS = "$LPF_SPEC_DECAY_TIME_CONSTANT_NS"
FIELD_SCALE_DOWN = "$LPF_SPEC_OUT_SCALE_DOWN_FACTOR"
LPF_FIELDS = (FIELD_TYPE, FIELD_GAIN_NS, FIELD_DECAY_NS, FIELD_SCALE_DOWN)
TYPE_RATE, TYPE_SAMPLE = "RATE", "SAMPLE"
# bf_rt's targets: device 0 (one ASIC), every pipe (BF_DEV_PIPE_ALL), both
# directions and every parser (0xff: what BfRt's own Python client sends)
BFRT_DEVICE_ID = 0
PIPE_ALL = 0xFFFF
DIRECTION_ALL = 0xFF
PARSER_ALL = 0xFF
# This controller's BfRt client id (the server refuses a second client of one id)
BFRT_CLIENT_ID = 10
MAX_BFRT_JSON_BYTES = 64 << 20
# How long close() waits for the server to end the stream it half-closed
CLOSE_WAIT_S = 1.0
_INT_TYPES = {"uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8}


class BfrtSchemaError(ValueError):
    """A bfrt.json that is not a compiler's, or a write it does not allow
    (an unknown table, an index beyond the table): found before any write."""


class BfrtConnectionError(SwitchConnectionError):
    """The BfRt server is not there, or refused this client."""


class BfrtRequestError(RuntimeError):
    """The BfRt server refused a Write or a Read."""


@dataclass(frozen=True)
class KeyField:
    name: str
    id: int
    match_type: str            # "Exact", ...: this client writes and reads exact keys
    type: str                  # "uint32", "bytes", ...
    width_bits: int


@dataclass(frozen=True)
class DataField:
    name: str
    id: int
    type: str                  # "string", "float", "bool", "uint32", "bytes", ...
    choices: tuple[str, ...] = ()
    width_bits: int = 0        # of "bytes" and the integer types
    register: bool = False     # a register's data: one value per pipe when read
    mandatory: bool = False


@dataclass(frozen=True)
class Table:
    """One BfRt table, as bfrt.json describes it (the program's, or the device's
    fixed tables: the traffic manager's, the ports')."""

    name: str                  # pipe.TnaIngress.aqm.red_average.red_avg, tf1.tm.port.sched_cfg
    id: int
    table_type: str            # "Lpf", "Register", "TmPortSchedCfg", ...
    size: int
    keys: tuple[KeyField, ...]
    fields: Mapping[str, DataField]

    @property
    def instance(self) -> str:
        """The extern's name in the P4 program (the name's last part)."""
        return self.name.rsplit(".", 1)[-1]

    @property
    def p4_name(self) -> str:
        """The name without the pipeline's prefix, as the P4Info names it
        (TnaIngress.aqm.occupancy.queue_pkts): a register's fields start with it."""
        return self.name.split(".", 1)[1] if self.name.startswith(PIPE_PREFIX) else self.name

    @property
    def key_id(self) -> int:
        return self.keys[0].id


# An Lpf filter's table (the controller's averages): a Table of table_type "Lpf"
LpfTable = Table


@dataclass(frozen=True)
class TableWrite:
    """One BfRt entry modification: a table (by name), its key fields and the data
    fields set (the others keep their values)."""

    table: str
    key: Mapping[str, int]
    data: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", MappingProxyType(dict(self.key)))
        object.__setattr__(self, "data", MappingProxyType(dict(self.data)))


@dataclass(frozen=True)
class ReadEntry:
    """One entry read: its table's full name, key and data fields by name (a
    register's field: a list, one value per pipe)."""

    table: str
    key: Mapping[str, int]
    data: Mapping[str, Any]


class BfrtInfo:
    """The tables of one build's bfrt.json (and, merged, the device's fixed tables),
    by name."""

    def __init__(self, tables: Iterable[Table], source: str = "bfrt.json") -> None:
        self.source = source
        self.tables: Mapping[str, Table] = MappingProxyType({t.name: t for t in tables})
        self._by_id = {t.id: t for t in self.tables.values()}

    @property
    def lpf_tables(self) -> Mapping[str, Table]:
        """The Lpf filters' tables, by name."""
        return MappingProxyType({n: t for n, t in self.tables.items()
                                 if t.table_type == LPF_TABLE_TYPE})

    @classmethod
    def from_file(cls, path: Path) -> "BfrtInfo":
        path = Path(path)
        try:
            if path.stat().st_size > MAX_BFRT_JSON_BYTES:
                raise BfrtSchemaError(f"{path}: larger than {MAX_BFRT_JSON_BYTES} bytes")
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise BfrtSchemaError(f"{path}: no such file (the Tofino build's bfrt.json: "
                                  f"run 'make build-tna')") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise BfrtSchemaError(f"{path}: cannot be read: {exc}") from None
        return cls.from_json(text, str(path))

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "bfrt.json") -> "BfrtInfo":
        try:
            doc = json.loads(text)
            tables = [t for t in (_table(raw) for raw in doc["tables"]) if t is not None]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise BfrtSchemaError(f"{source}: not a compiler's bfrt.json "
                                  f"({type(exc).__name__}: {exc})") from None
        return cls(tables, source)

    def merged(self, other: "BfrtInfo") -> "BfrtInfo":
        """This schema with other's tables added (the device's fixed tables)."""
        return BfrtInfo([*self.tables.values(),
                         *(t for n, t in other.tables.items() if n not in self.tables)],
                        f"{self.source} + {other.source}")

    def table(self, name: str) -> Table:
        """A table by its full name, or by the P4 name (without ``pipe.``), or by a
        dotted suffix that exactly one table ends with."""
        if name in self.tables:
            return self.tables[name]
        hits = [t for t in self.tables.values()
                if t.p4_name == name or t.name.endswith("." + name)]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            raise BfrtSchemaError(f"{self.source}: no table {name!r}")
        raise BfrtSchemaError(f"{self.source}: {len(hits)} tables end in {name!r}: "
                              f"{', '.join(t.name for t in hits)}")

    def lpf_table(self, lpf: str) -> Table:
        """The table of filter `lpf`: a full table name, or the instance's name when
        exactly one Lpf table ends with it."""
        tables = self.lpf_tables
        if lpf in tables:
            return tables[lpf]
        hits = [t for t in tables.values() if t.instance == lpf]
        if len(hits) == 1:
            return hits[0]
        known = ", ".join(sorted(tables)) or "none"
        if not hits:
            raise BfrtSchemaError(f"{self.source}: no Lpf table {lpf!r} (the build's Lpf "
                                  f"tables: {known}): is it the build of this algorithm?")
        raise BfrtSchemaError(f"{self.source}: {len(hits)} Lpf tables end in {lpf!r}: "
                              f"{', '.join(t.name for t in hits)}")

    # ---- generic entries
    def key_entry(self, table: str | Table, key: Mapping[str, int] | int) -> bfrt_pb2.TableEntry:
        """A TableEntry with the key only (a Read's), checked. key: the key fields by
        name, or the index of an indexed table (a register, an Lpf, a counter)."""
        t = table if isinstance(table, Table) else self.table(table)
        return bfrt_pb2.TableEntry(table_id=t.id, key=_table_key(t, key))

    def entry(self, write: TableWrite) -> bfrt_pb2.TableEntry:
        """The TableEntry that makes `write` (checked first: its table, every key
        field, each data field's name and type)."""
        t = self.table(write.table)
        entry = bfrt_pb2.TableEntry(table_id=t.id, key=_table_key(t, write.key))
        for name, value in write.data.items():
            if name not in t.fields:
                raise BfrtSchemaError(f"{t.name}: no data field {name!r} (it has "
                                      f"{', '.join(sorted(t.fields))})")
            entry.data.fields.append(_data_field(t, name, value))
        return entry

    def decode_entry(self, entry: bfrt_pb2.TableEntry) -> ReadEntry:
        """A read entry by name (its table found by id in this schema, the id being
        the server's answer to a request by name)."""
        t = self._by_id.get(entry.table_id)
        if t is None:
            raise BfrtSchemaError(f"an answer names table id {entry.table_id}, no table "
                                  f"of {self.source}")
        keys = {k.id: k for k in t.keys}
        key: dict[str, int] = {}
        for kf in entry.key.fields:
            meta = keys.get(kf.field_id)
            if meta is None or kf.WhichOneof("match_type") != "exact":
                raise BfrtSchemaError(f"{t.name}: an answer's key field {kf.field_id} is "
                                      f"not an exact key of the table")
            key[meta.name] = int.from_bytes(kf.exact.value, "big")
        by_id = {f.id: f for f in t.fields.values()}
        data: dict[str, Any] = {}
        for df in entry.data.fields:
            meta = by_id.get(df.field_id)
            if meta is None:
                raise BfrtSchemaError(f"{t.name}: unknown data field id {df.field_id}")
            value = _field_value(meta, df)
            if meta.register:          # one value per pipe, in the pipes' order
                data.setdefault(meta.name, []).append(value)
            else:
                data[meta.name] = value
        return ReadEntry(t.name, MappingProxyType(key), MappingProxyType(data))

    # ---- the Lpf filters' specs
    def check(self, specs: Iterable[LpfSpec]) -> None:
        """Every spec writable: its table, its index below the table's size, its
        values of the fields' types. BfrtSchemaError listing what is not."""
        problems = []
        for spec in specs:
            try:
                self.table_entry(spec)
            except BfrtSchemaError as exc:
                problems.append(str(exc))
        if problems:
            more = f"; ... {len(problems) - 5} more" if len(problems) > 5 else ""
            raise BfrtSchemaError("; ".join(problems[:5]) + more)

    def lpf_write(self, spec: LpfSpec) -> TableWrite:
        """The generic write that sets spec's Lpf entry."""
        return TableWrite(self.lpf_table(spec.lpf).name, {KEY_INDEX: spec.index}, {
            FIELD_TYPE: TYPE_RATE if spec.rate_mode else TYPE_SAMPLE,
            FIELD_GAIN_NS: spec.time_constant_ns, FIELD_DECAY_NS: spec.time_constant_ns,
            FIELD_SCALE_DOWN: spec.out_scale_down})

    def table_entry(self, spec: LpfSpec) -> bfrt_pb2.TableEntry:
        """The BfRt TableEntry that sets spec (checked first)."""
        return self.entry(self.lpf_write(spec))

    def lpf_key_entry(self, lpf: str, index: int) -> bfrt_pb2.TableEntry:
        """An Lpf entry's key (a Read's)."""
        return self.key_entry(self.lpf_table(lpf), index)

    def decode(self, entry: bfrt_pb2.TableEntry) -> LpfSpec:
        """A read Lpf entry back as an LpfSpec."""
        got = self.decode_entry(entry)
        table = self.tables[got.table]
        if table.table_type != LPF_TABLE_TYPE:
            raise BfrtSchemaError(f"{table.name}: not an Lpf table")
        index, data = got.key[KEY_INDEX], got.data
        if data.get(FIELD_GAIN_NS) != data.get(FIELD_DECAY_NS):
            raise BfrtSchemaError(f"{table.name}[{index}]: gain and decay time constants "
                                  f"differ ({data.get(FIELD_GAIN_NS)}, {data.get(FIELD_DECAY_NS)})")
        return LpfSpec(table.instance, index, data[FIELD_TYPE] == TYPE_RATE,
                       data[FIELD_GAIN_NS], data[FIELD_SCALE_DOWN])


def _width_bits(type_: Mapping[str, Any]) -> int:
    kind = type_["type"]
    if kind in _INT_TYPES:
        return 8 * _INT_TYPES[kind]
    return int(type_.get("width", 0))


def _table(raw: Mapping[str, Any]) -> Table | None:
    """A table of bfrt.json; None for one this client has no use for (keys or data
    it cannot express). An Lpf table must be the compiler's shape."""
    lpf = raw.get("table_type") == LPF_TABLE_TYPE
    try:
        keys = tuple(KeyField(str(k["name"]), int(k["id"]), str(k["match_type"]),
                              str(k["type"]["type"]), _width_bits(k["type"]))
                     for k in raw.get("key", []))
        fields = {}
        for item in raw.get("data", []):
            single = item.get("singleton")
            if single is None:
                continue               # a oneof: not written by this client
            annotations = {(a.get("name"), a.get("value")) for a in single.get("annotations", [])}
            fields[single["name"]] = DataField(
                single["name"], int(single["id"]), single["type"]["type"],
                tuple(single["type"].get("choices", ())), _width_bits(single["type"]),
                ("$bfrt_field_class", "register_data") in annotations,
                bool(item.get("mandatory", False)))
    except (KeyError, TypeError, ValueError, AttributeError):
        if lpf:
            raise
        return None
    if lpf:
        if len(keys) != 1 or keys[0].name != KEY_INDEX or keys[0].match_type != "Exact" \
                or keys[0].type != "uint32":
            raise ValueError(f"{raw['name']}: key is not {KEY_INDEX} (uint32, exact)")
        missing = [name for name in LPF_FIELDS if name not in fields]
        if missing:
            raise ValueError(f"{raw['name']}: no data fields {missing}")
    return Table(str(raw["name"]), int(raw["id"]), str(raw.get("table_type", "")),
                 int(raw.get("size", 0)), keys, MappingProxyType(fields))


def _table_key(table: Table, key: Mapping[str, int] | int) -> bfrt_pb2.TableKey:
    if isinstance(key, int) and not isinstance(key, bool):
        if len(table.keys) != 1:
            raise BfrtSchemaError(f"{table.name}: a key of {len(table.keys)} fields, not an index")
        key = {table.keys[0].name: key}
    names = {k.name for k in table.keys}
    unknown = sorted(set(key) - names)
    if unknown or set(key) != names:
        raise BfrtSchemaError(f"{table.name}: key fields {sorted(key)}, the table's are "
                              f"{sorted(names)}")
    fields = []
    for k in table.keys:
        value = key[k.name]
        if k.match_type != "Exact":
            raise BfrtSchemaError(f"{table.name}: key {k.name} is {k.match_type}; this "
                                  f"client writes exact keys only")
        if k.name.startswith("$") and k.name.endswith("_INDEX") and table.size \
                and not (isinstance(value, int) and 0 <= value < table.size):
            raise BfrtSchemaError(f"{table.name}: index {value} is beyond the table "
                                  f"(size {table.size}: 0..{table.size - 1})")
        nbytes = (k.width_bits + 7) // 8
        if not (isinstance(value, int) and not isinstance(value, bool) and nbytes
                and 0 <= value < 1 << k.width_bits):
            raise BfrtSchemaError(f"{table.name} key {k.name}: {value!r} does not fit "
                                  f"{k.type} of {k.width_bits} bits")
        fields.append(bfrt_pb2.KeyField(field_id=k.id, exact=bfrt_pb2.KeyField.Exact(
            value=value.to_bytes(nbytes, "big"))))
    return bfrt_pb2.TableKey(fields=fields)


def _data_field(table: Table, name: str, value: Any) -> bfrt_pb2.DataField:
    meta = table.fields[name]
    where = f"{table.name} {name}"
    if meta.type == "string":
        if not isinstance(value, str) or (meta.choices and value not in meta.choices):
            raise BfrtSchemaError(f"{where}: {value!r} is not one of {list(meta.choices)}")
        return bfrt_pb2.DataField(field_id=meta.id, str_val=value)
    if meta.type == "float":
        if not (isinstance(value, (int, float)) and not isinstance(value, bool)
                and math.isfinite(value) and abs(value) <= FLOAT32_MAX):
            raise BfrtSchemaError(f"{where}: {value!r} is not a finite 32-bit float")
        return bfrt_pb2.DataField(field_id=meta.id, float_val=value)
    if meta.type == "bool":
        if not isinstance(value, bool):
            raise BfrtSchemaError(f"{where}: {value!r} is not a bool")
        return bfrt_pb2.DataField(field_id=meta.id, bool_val=value)
    if meta.type in _INT_TYPES or meta.type == "bytes":
        nbytes = (meta.width_bits + 7) // 8
        if not (isinstance(value, int) and not isinstance(value, bool) and nbytes
                and 0 <= value < 1 << meta.width_bits):
            bits = "" if meta.type in _INT_TYPES else f" of {meta.width_bits} bits"
            raise BfrtSchemaError(f"{where}: {value!r} does not fit {meta.type}{bits}")
        return bfrt_pb2.DataField(field_id=meta.id, stream=value.to_bytes(nbytes, "big"))
    raise BfrtSchemaError(f"{where}: field type {meta.type!r} is not one this client writes")


def _field_value(meta: DataField, field_: bfrt_pb2.DataField) -> Any:
    kind = field_.WhichOneof("value")
    expected = {"string": "str_val", "float": "float_val", "bool": "bool_val"}.get(
        meta.type, "stream" if meta.type in _INT_TYPES or meta.type == "bytes" else None)
    if kind != expected:
        raise BfrtSchemaError(f"{meta.name}: a {kind} value for a {meta.type} field")
    if kind == "stream":
        return int.from_bytes(field_.stream, "big")
    return getattr(field_, kind)


class BfrtClient:
    """One BfRt gRPC connection (see the module): open() subscribes and binds the
    program, then write_lpf() and read_lpf(); close() ends the stream. Use as an
    async context manager. Every wait has a deadline; a server that is absent or
    refuses is BfrtConnectionError, naming the switch and the address."""

    def __init__(self, name: str, address: str, info: BfrtInfo, p4_name: str, *,
                 client_id: int = BFRT_CLIENT_ID, device_id: int = BFRT_DEVICE_ID,
                 connect_timeout_s: float = CONNECT_TIMEOUT_S,
                 request_timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        self.name = name
        self.address = address
        self.info = info
        self.p4_name = p4_name
        self.client_id = client_id
        self.device_id = device_id
        self.connect_timeout_s = connect_timeout_s
        self.request_timeout_s = request_timeout_s
        self._channel: grpc.aio.Channel | None = None
        self._stub: bfrt_grpc.BfRuntimeStub | None = None
        self._stream: Any = None
        self._requests: asyncio.Queue[bfrt_pb2.StreamMessageRequest | None] = asyncio.Queue()
        self.bound = False

    async def __aenter__(self) -> "BfrtClient":
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _where(self) -> str:
        return f"{self.name}: BfRt at {self.address}"

    async def _queued(self) -> Any:
        while (request := await self._requests.get()) is not None:
            yield request

    async def open(self) -> None:
        self._channel = grpc.aio.insecure_channel(self.address)
        self._stub = bfrt_grpc.BfRuntimeStub(self._channel)
        try:
            await within(self._open(), self.connect_timeout_s)
        except TimeoutError:
            await self.close()
            raise BfrtConnectionError(
                f"{self._where()}: no answer within {self.connect_timeout_s:g} s (is "
                f"bf_switchd's BfRt gRPC server running there? the Lpf filters' time "
                f"constants can only be written through it)") from None
        except grpc.RpcError as err:
            await self.close()
            raise BfrtConnectionError(f"{self._where()}: {_describe(err)}") from None
        except BfrtConnectionError:
            await self.close()
            raise

    async def _open(self) -> None:
        assert self._stub is not None
        await self._channel.channel_ready()
        self._stream = self._stub.StreamChannel(self._queued())
        self._requests.put_nowait(bfrt_pb2.StreamMessageRequest(
            client_id=self.client_id,
            subscribe=bfrt_pb2.Subscribe(device_id=self.device_id,
                                         notifications=bfrt_pb2.Subscribe.Notifications())))
        answer = await self._stream.read()
        if answer is grpc.aio.EOF:
            raise BfrtConnectionError(f"{self._where()}: the stream ended before the "
                                      f"subscription was answered")
        if answer.WhichOneof("update") != "subscribe" or answer.subscribe.status.code != 0:
            raise BfrtConnectionError(f"{self._where()}: the subscription was refused: "
                                      f"{answer.subscribe.status.message or answer}")
        try:
            await self._stub.SetForwardingPipelineConfig(
                bfrt_pb2.SetForwardingPipelineConfigRequest(
                    client_id=self.client_id, device_id=self.device_id,
                    action=bfrt_pb2.SetForwardingPipelineConfigRequest.BIND,
                    config=[bfrt_pb2.ForwardingPipelineConfig(p4_name=self.p4_name)]))
            self.bound = True
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.ALREADY_EXISTS:
                raise BfrtConnectionError(
                    f"{self._where()}: binding program {self.p4_name!r} failed: "
                    f"{_describe(err)} (is the program loaded, under that name?)") from None
            # another client owns the program: requests that name it are still served

    async def close(self) -> None:
        """End the stream (the server then drops this client's subscription and
        binding: waited for, briefly, so that a new connection of the same client
        id is not refused as a second client), then the channel."""
        self._requests.put_nowait(None)
        if self._stream is not None:
            stream, self._stream = self._stream, None
            try:
                await within(stream.code(), min(self.request_timeout_s, CLOSE_WAIT_S))
            except (TimeoutError, grpc.RpcError):
                pass
            stream.cancel()
        if self._channel is not None:
            channel, self._channel = self._channel, None
            await channel.close()

    def _target(self) -> bfrt_pb2.TargetDevice:
        return bfrt_pb2.TargetDevice(device_id=self.device_id, pipe_id=PIPE_ALL,
                                     direction=DIRECTION_ALL, prsr_id=PARSER_ALL)

    async def _call(self, rpc: str, call: Any) -> Any:
        try:
            return await within(call, self.request_timeout_s)
        except TimeoutError:
            raise BfrtConnectionError(f"{self._where()}: no answer to a {rpc} within "
                                      f"{self.request_timeout_s:g} s") from None
        except grpc.RpcError as err:
            if err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise BfrtConnectionError(f"{self._where()}: {_describe(err)}") from None
            raise BfrtRequestError(f"{self._where()}: the {rpc} was refused: "
                                   f"{_describe(err)}") from None

    async def write(self, writes: Iterable[TableWrite]) -> None:
        """Modify each entry, in one Write of MODIFY updates (an Lpf or register
        table has an entry at every index; a fixed table's entry sets the fields
        given); every write is checked against the schema first (BfrtSchemaError:
        nothing is sent)."""
        await self._write_entries([self.info.entry(w) for w in writes])

    async def _write_entries(self, entries: list[bfrt_pb2.TableEntry]) -> None:
        if not entries:
            return
        if self._stub is None:
            raise BfrtConnectionError(f"{self._where()}: not connected")
        request = bfrt_pb2.WriteRequest(
            target=self._target(), client_id=self.client_id, p4_name=self.p4_name,
            updates=[bfrt_pb2.Update(type=bfrt_pb2.Update.MODIFY,
                                     entity=bfrt_pb2.Entity(table_entry=e)) for e in entries])
        await self._call("Write", self._stub.Write(request))

    async def read(self, keys: Iterable[tuple[str, Mapping[str, int] | int]], *,
                   from_hw: bool = False) -> list[ReadEntry]:
        """The entries at (table, key) keys (key: the key fields by name, or an
        indexed table's index), in one Read, as the switch holds them (from_hw:
        read from the device rather than the driver's copy, as a register's
        current value needs)."""
        entries = [self.info.key_entry(table, key) for table, key in keys]
        answers = await self._read_entries(entries, from_hw)
        try:
            return [self.info.decode_entry(e) for e in answers]
        except (BfrtSchemaError, ValueError) as exc:
            raise BfrtRequestError(f"{self._where()}: a Read's answer: {exc}") from None

    async def _read_entries(self, entries: list[bfrt_pb2.TableEntry],
                            from_hw: bool) -> list[bfrt_pb2.TableEntry]:
        if self._stub is None:
            raise BfrtConnectionError(f"{self._where()}: not connected")
        for e in entries:
            e.table_flags.from_hw = from_hw
        request = bfrt_pb2.ReadRequest(target=self._target(), client_id=self.client_id,
                                       p4_name=self.p4_name,
                                       entities=[bfrt_pb2.Entity(table_entry=e) for e in entries])

        async def read_all() -> list[bfrt_pb2.ReadResponse]:
            return [answer async for answer in self._stub.Read(request)]

        answers = await self._call("Read", read_all())
        return [e.table_entry for a in answers for e in a.entities]

    async def read_register(self, register: str, index: int) -> dict[str, list[int]]:
        """{field: [its value in pipe 0, 1, ...]} of a register's index, read from the
        device (a register is per pipe: the server answers one value per pipe). The
        field names are the register's data fields without the register's name
        (f1 for a plain register, signature and epoch for a pair)."""
        table = self.info.table(register)
        if table.table_type != REGISTER_TABLE_TYPE:
            raise BfrtSchemaError(f"{table.name}: a {table.table_type} table, not a register")
        [entry] = await self.read([(table.name, index)], from_hw=True)
        prefix = table.p4_name + "."
        return {name[len(prefix):] if name.startswith(prefix) else name: list(values)
                for name, values in entry.data.items()}

    async def load_fixed_tables(self) -> None:
        """Add the device's fixed tables (the traffic manager's, the ports': not in
        a program's bfrt.json) to this client's schema, from the server's
        GetForwardingPipelineConfig (its non_p4_config), as the SDE's own client
        learns them."""
        if self._stub is None:
            raise BfrtConnectionError(f"{self._where()}: not connected")
        answer = await self._call("GetForwardingPipelineConfig",
                                  self._stub.GetForwardingPipelineConfig(
                                      bfrt_pb2.GetForwardingPipelineConfigRequest(
                                          device_id=self.device_id, client_id=self.client_id)))
        fixed = answer.non_p4_config.bfruntime_info
        if not fixed:
            raise BfrtRequestError(f"{self._where()}: the server gave no fixed tables "
                                   f"(non_p4_config)")
        self.info = self.info.merged(BfrtInfo.from_json(fixed, f"{self.address} fixed tables"))

    async def write_lpf(self, specs: Iterable[LpfSpec]) -> None:
        """Set each spec's Lpf entry, in one Write; every spec is checked against
        the schema first (BfrtSchemaError: nothing is sent)."""
        specs = list(specs)
        self.info.check(specs)
        await self._write_entries([self.info.table_entry(s) for s in specs])

    async def read_lpf(self, keys: Iterable[tuple[str, int]]) -> list[LpfSpec]:
        """The Lpf entries at (filter, index) keys, as the switch holds them."""
        entries = [self.info.lpf_key_entry(lpf, index) for lpf, index in keys]
        answers = await self._read_entries(entries, from_hw=False)
        try:
            return [self.info.decode(e) for e in answers]
        except (BfrtSchemaError, ValueError) as exc:
            raise BfrtRequestError(f"{self._where()}: a Read's answer: {exc}") from None


def _describe(err: grpc.RpcError) -> str:
    code = err.code() if hasattr(err, "code") else None
    details = err.details() if hasattr(err, "details") else str(err)
    return f"{code.name if code is not None else 'error'}: {details}"
