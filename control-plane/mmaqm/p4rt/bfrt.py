"""A small BfRt gRPC client: the Lpf settings of a Tofino build (targets.tna_lpf),
which are BfRt table entries outside the P4Info that no P4Runtime server (Stratum's
included) writes.

The schema is the build's ``bfrt.json`` (the compiler's, beside ``p4info.txtpb``
in ``build/tna/<variant>/``): each Lpf filter is a table of ``table_type``
"Lpf", named ``pipe.<control path>.<instance>``, key ``$LPF_INDEX`` (uint32,
exact) and data ``$LPF_SPEC_TYPE`` (string: "RATE" or "SAMPLE"),
``$LPF_SPEC_GAIN_TIME_CONSTANT_NS`` and ``$LPF_SPEC_DECAY_TIME_CONSTANT_NS``
(float) and ``$LPF_SPEC_OUT_SCALE_DOWN_FACTOR`` (uint32). Tables and fields are
found by name, never by id; every write is checked against the schema (the
table, the index below its size, each field's type) before anything is sent.

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
   string as ``str_val``, a float as ``float_val``, an integer as a big-endian
   byte ``stream`` of the field's width; Read: the entries asked, by key.

The device is the ASIC's (BfRt device 0, every pipe): not P4Runtime's device id.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import grpc

from ..targets.tna_lpf import FLOAT32_MAX, LpfSpec
from .session import CONNECT_TIMEOUT_S, REQUEST_TIMEOUT_S, SwitchConnectionError, within
from .proto import bfruntime_pb2 as bfrt_pb2
from .proto import bfruntime_pb2_grpc as bfrt_grpc

LPF_TABLE_TYPE = "Lpf"
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
class DataField:
    name: str
    id: int
    type: str                  # "string", "float", "uint32", ...
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class LpfTable:
    """One Lpf filter's BfRt table, as bfrt.json describes it."""

    name: str                  # pipe.TnaIngress.aqm.red_average.red_avg
    id: int
    size: int
    key_id: int
    fields: Mapping[str, DataField]

    @property
    def instance(self) -> str:
        """The filter's name in the P4 program (the name's last part)."""
        return self.name.rsplit(".", 1)[-1]


class BfrtInfo:
    """The Lpf tables of one build's bfrt.json, by name."""

    def __init__(self, tables: Iterable[LpfTable], source: str = "bfrt.json") -> None:
        self.source = source
        self.tables: Mapping[str, LpfTable] = MappingProxyType({t.name: t for t in tables})

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
    def from_json(cls, text: str, source: str = "bfrt.json") -> "BfrtInfo":
        try:
            doc = json.loads(text)
            tables = [_lpf_table(t) for t in doc["tables"]
                      if t.get("table_type") == LPF_TABLE_TYPE]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise BfrtSchemaError(f"{source}: not a compiler's bfrt.json "
                                  f"({type(exc).__name__}: {exc})") from None
        return cls(tables, source)

    def lpf_table(self, lpf: str) -> LpfTable:
        """The table of filter `lpf`: a full table name, or the instance's name when
        exactly one Lpf table ends with it."""
        if lpf in self.tables:
            return self.tables[lpf]
        hits = [t for t in self.tables.values() if t.instance == lpf]
        if len(hits) == 1:
            return hits[0]
        known = ", ".join(sorted(self.tables)) or "none"
        if not hits:
            raise BfrtSchemaError(f"{self.source}: no Lpf table {lpf!r} (the build's Lpf "
                                  f"tables: {known}): is it the build of this algorithm?")
        raise BfrtSchemaError(f"{self.source}: {len(hits)} Lpf tables end in {lpf!r}: "
                              f"{', '.join(t.name for t in hits)}")

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

    def table_entry(self, spec: LpfSpec) -> bfrt_pb2.TableEntry:
        """The BfRt TableEntry that sets spec (checked first)."""
        table = self.lpf_table(spec.lpf)
        if not 0 <= spec.index < table.size:
            raise BfrtSchemaError(f"{table.name}: index {spec.index} is beyond the table "
                                  f"(size {table.size}: 0..{table.size - 1})")
        values: dict[str, Any] = {
            FIELD_TYPE: TYPE_RATE if spec.rate_mode else TYPE_SAMPLE,
            FIELD_GAIN_NS: spec.time_constant_ns, FIELD_DECAY_NS: spec.time_constant_ns,
            FIELD_SCALE_DOWN: spec.out_scale_down}
        entry = bfrt_pb2.TableEntry(table_id=table.id, key=_index_key(table, spec.index))
        for name, value in values.items():
            entry.data.fields.append(_data_field(table, name, value))
        return entry

    def key_entry(self, lpf: str, index: int) -> bfrt_pb2.TableEntry:
        """A TableEntry with the key only (a Read's)."""
        table = self.lpf_table(lpf)
        if not 0 <= index < table.size:
            raise BfrtSchemaError(f"{table.name}: index {index} is beyond the table "
                                  f"(size {table.size})")
        return bfrt_pb2.TableEntry(table_id=table.id, key=_index_key(table, index))

    def decode(self, entry: bfrt_pb2.TableEntry) -> LpfSpec:
        """A read entry back as an LpfSpec (its table found by id in this schema,
        the id being the server's answer to a request by name)."""
        table = next((t for t in self.tables.values() if t.id == entry.table_id), None)
        if table is None:
            raise BfrtSchemaError(f"an answer names table id {entry.table_id}, no Lpf "
                                  f"table of {self.source}")
        [key] = entry.key.fields
        index = int.from_bytes(key.exact.value, "big")
        by_id = {f.id: f for f in table.fields.values()}
        got: dict[str, Any] = {}
        for field in entry.data.fields:
            meta = by_id.get(field.field_id)
            if meta is None:
                raise BfrtSchemaError(f"{table.name}: unknown data field id {field.field_id}")
            got[meta.name] = _field_value(meta, field)
        if got.get(FIELD_GAIN_NS) != got.get(FIELD_DECAY_NS):
            raise BfrtSchemaError(f"{table.name}[{index}]: gain and decay time constants "
                                  f"differ ({got.get(FIELD_GAIN_NS)}, {got.get(FIELD_DECAY_NS)})")
        return LpfSpec(table.instance, index, got[FIELD_TYPE] == TYPE_RATE,
                       got[FIELD_GAIN_NS], got[FIELD_SCALE_DOWN])


def _lpf_table(raw: Mapping[str, Any]) -> LpfTable:
    [key] = raw["key"]
    if key["name"] != KEY_INDEX or key["match_type"] != "Exact" \
            or key["type"]["type"] != "uint32":
        raise ValueError(f"{raw['name']}: key {key['name']} is not {KEY_INDEX} (uint32, exact)")
    fields = {}
    for item in raw["data"]:
        single = item["singleton"]
        fields[single["name"]] = DataField(single["name"], int(single["id"]),
                                           single["type"]["type"],
                                           tuple(single["type"].get("choices", ())))
    missing = [name for name in LPF_FIELDS if name not in fields]
    if missing:
        raise ValueError(f"{raw['name']}: no data fields {missing}")
    return LpfTable(str(raw["name"]), int(raw["id"]), int(raw["size"]), int(key["id"]),
                    MappingProxyType(fields))


def _index_key(table: LpfTable, index: int) -> bfrt_pb2.TableKey:
    return bfrt_pb2.TableKey(fields=[bfrt_pb2.KeyField(
        field_id=table.key_id, exact=bfrt_pb2.KeyField.Exact(value=index.to_bytes(4, "big")))])


def _data_field(table: LpfTable, name: str, value: Any) -> bfrt_pb2.DataField:
    meta = table.fields[name]
    where = f"{table.name} {name}"
    if meta.type == "string":
        if meta.choices and value not in meta.choices:
            raise BfrtSchemaError(f"{where}: {value!r} is not one of {list(meta.choices)}")
        return bfrt_pb2.DataField(field_id=meta.id, str_val=value)
    if meta.type == "float":
        if not (isinstance(value, (int, float)) and math.isfinite(value)
                and abs(value) <= FLOAT32_MAX):
            raise BfrtSchemaError(f"{where}: {value!r} is not a finite 32-bit float")
        return bfrt_pb2.DataField(field_id=meta.id, float_val=value)
    if meta.type in _INT_TYPES:
        width = _INT_TYPES[meta.type]
        if not (isinstance(value, int) and 0 <= value < 1 << (8 * width)):
            raise BfrtSchemaError(f"{where}: {value!r} does not fit {meta.type}")
        return bfrt_pb2.DataField(field_id=meta.id, stream=value.to_bytes(width, "big"))
    raise BfrtSchemaError(f"{where}: field type {meta.type!r} is not one this client writes")


def _field_value(meta: DataField, field: bfrt_pb2.DataField) -> Any:
    kind = field.WhichOneof("value")
    expected = {"string": "str_val", "float": "float_val"}.get(
        meta.type, "stream" if meta.type in _INT_TYPES else None)
    if kind != expected:
        raise BfrtSchemaError(f"{meta.name}: a {kind} value for a {meta.type} field")
    if kind == "stream":
        return int.from_bytes(field.stream, "big")
    return getattr(field, kind)


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

    async def write_lpf(self, specs: Iterable[LpfSpec]) -> None:
        """Set each spec's Lpf entry, in one Write; every spec is checked against
        the schema first (BfrtSchemaError: nothing is sent)."""
        specs = list(specs)
        self.info.check(specs)
        if not specs:
            return
        if self._stub is None:
            raise BfrtConnectionError(f"{self._where()}: not connected")
        request = bfrt_pb2.WriteRequest(
            target=self._target(), client_id=self.client_id, p4_name=self.p4_name,
            updates=[bfrt_pb2.Update(type=bfrt_pb2.Update.MODIFY,
                                     entity=bfrt_pb2.Entity(table_entry=self.info.table_entry(s)))
                     for s in specs])
        await self._call("Write", self._stub.Write(request))

    async def read_lpf(self, keys: Iterable[tuple[str, int]]) -> list[LpfSpec]:
        """The Lpf entries at (filter, index) keys, as the switch holds them."""
        keys = list(keys)
        entities = [bfrt_pb2.Entity(table_entry=self.info.key_entry(lpf, index))
                    for lpf, index in keys]
        if self._stub is None:
            raise BfrtConnectionError(f"{self._where()}: not connected")
        request = bfrt_pb2.ReadRequest(target=self._target(), client_id=self.client_id,
                                       p4_name=self.p4_name, entities=entities)

        async def read_all() -> list[bfrt_pb2.ReadResponse]:
            return [answer async for answer in self._stub.Read(request)]

        answers = await self._call("Read", read_all())
        try:
            return [self.info.decode(e.table_entry) for a in answers for e in a.entities]
        except (BfrtSchemaError, ValueError) as exc:
            raise BfrtRequestError(f"{self._where()}: a Read's answer: {exc}") from None


def _describe(err: grpc.RpcError) -> str:
    code = err.code() if hasattr(err, "code") else None
    details = err.details() if hasattr(err, "details") else str(err)
    return f"{code.name if code is not None else 'error'}: {details}"
