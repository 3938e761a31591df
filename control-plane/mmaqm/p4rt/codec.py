"""P4Runtime data as mmaqm reads and writes it, over finsy: reconcile's plain
entities <-> finsy's, the flow report and counter value types, and the checks of
a program's P4Info (by name, never by id or position)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

import finsy as fy
from finsy.proto import p4i, p4r

from .. import reconcile as R
from .. import targets
from ..algorithms import ALGORITHMS
from ..encoding import PolicyAction

TABLE_POLICY = R.TABLE_POLICY
DIGEST_FLOW = R.DIGEST_FLOW


@dataclass(frozen=True)
class FlowReport:
    """One active-flow digest entry (flow_report.p4)."""

    egress_port: int
    class_id: int
    # src, dst, proto, sport, dport; an IPv6 flow's src and dst are IPv6Address
    flow_key: tuple[int | ipaddress.IPv6Address, int | ipaddress.IPv6Address, int, int, int]
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


# A BMv2 profile (p4src/v1model/profile.p4: one algorithm, make build PROFILE=<NAME>)
# names itself in its P4Info: pkg_info.name "mmaqm-<NAME>"; the all-in-one program
# names none.
PROFILE_PKG_PREFIX = "mmaqm-"
_ALGORITHM_OF_ACTION = {action: algorithm for algorithm, action in ALGORITHMS.items()}


def program_profile(schema: fy.P4Schema) -> str | None:
    """The profile the program was built as (an algorithm's name), from its P4Info's
    pkg_info.name; None for the all-in-one program or any other."""
    info = getattr(schema, "p4info", schema)       # P4Schema -> p4info protobuf
    name = info.pkg_info.name
    if name.startswith(PROFILE_PKG_PREFIX) and name[len(PROFILE_PKG_PREFIX):] in ALGORITHMS:
        return name[len(PROFILE_PKG_PREFIX):]
    return None


def check_policy_in_program(schema: fy.P4Schema, switch: str, port: int,
                            action: PolicyAction) -> None:
    """Refuse (ValueError), before any write, a policy whose algorithm the loaded
    profile lacks, naming the profile that has it. Other programs: check_action."""
    table = schema.tables.get(TABLE_POLICY)
    profile = program_profile(schema)
    if table is None or profile is None or action.name in {ref.alias for ref in table.actions}:
        return
    algorithm = _ALGORITHM_OF_ACTION.get(action.name)
    if algorithm is None:
        return          # not an algorithm's action: check_action names it
    raise ValueError(f"{switch}: port {port}'s algorithm {algorithm} is not in this program "
                     f"(profile {profile}); build PROFILE={algorithm} or the all-in-one "
                     f"program ('make build')")


def policy_actions_missing(schema: fy.P4Schema) -> list[str]:
    """Algorithm actions port_policy lacks. A target whose one program carries every
    algorithm must have them all, unless the program is a profile (program_profile),
    which needs its own; a program per algorithm needs one (a policy of another
    algorithm then fails check_policy_in_program or check_action, naming it)."""
    table = schema.tables.get(TABLE_POLICY)
    if table is None:
        return []
    refs = {ref.alias for ref in table.actions}
    algorithms = set(ALGORITHMS.values())
    profile = program_profile(schema)
    if profile is not None:
        return [] if ALGORITHMS[profile] in refs else [ALGORITHMS[profile]]
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


_UPDATE = {R.INSERT: lambda e: +e, R.MODIFY: lambda e: ~e, R.DELETE: lambda e: -e}


def _replicas(replicas: Iterable[object]) -> tuple[tuple[int, int], ...]:
    """(egress port, instance) pairs; finsy decodes a replica of instance 0 as its
    port alone."""
    return tuple((int(r), 0) if isinstance(r, int) else (int(r.port), int(r.instance))
                 for r in replicas)


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
    """A P4ClientError in one line (its str() is a repr): the gRPC code and message,
    the request that failed (WriteRequest, ReadRequest, ...) and, for a Write, each
    refused update's code and message."""
    text = f"{err.code.name}: {err.message}"
    operation = getattr(err, "_operation", "")
    if operation:
        text += f" ({operation}"
        failed = [f"update {i}: {d.canonical_code.name} {d.message}".strip()
                  for i, d in sorted((err.details or {}).items())]
        text += (": " + "; ".join(failed[:3]) if failed else "") + ")"
    return text.replace("\n", " ")




PACKET_OUT_HEADER = "packet_out"   # the @controller_header name of a PacketOut's metadata


def _is_padding(meta: p4i.ControllerPacketMetadata.Metadata) -> bool:
    return any(a.strip() == "@padding" for a in meta.annotations)


def packet_out_metadata(p4info: p4i.P4Info,
                        values: dict[str, int]) -> list[p4r.PacketMetadata]:
    """A PacketOut's metadata: the P4Info's packet_out header, field by field by
    name, each value in its bitwidth (padding fields 0). `values` must name
    exactly the header's other fields; a program without the header takes none.
    ValueError when they do not match, before anything is sent."""
    header = next((c for c in p4info.controller_packet_metadata
                   if c.preamble.name == PACKET_OUT_HEADER), None)
    if header is None:
        if values:
            raise ValueError(f"the program has no {PACKET_OUT_HEADER} header, but a PacketOut "
                             f"needs metadata {sorted(values)}")
        return []
    fields = {m.name: m for m in header.metadata}
    wanted = {name for name, m in fields.items() if not _is_padding(m)}
    if set(values) != wanted:
        raise ValueError(f"the program's {PACKET_OUT_HEADER} header has fields "
                         f"{sorted(wanted)}, the PacketOut gives {sorted(values)}")
    metadata = []
    for m in header.metadata:
        value = values.get(m.name, 0)
        if not 0 <= value < (1 << m.bitwidth):
            raise ValueError(f"{PACKET_OUT_HEADER}.{m.name} = {value} does not fit "
                             f"in {m.bitwidth} bits")
        metadata.append(p4r.PacketMetadata(
            metadata_id=m.id, value=value.to_bytes((m.bitwidth + 7) // 8, "big")))
    return metadata
