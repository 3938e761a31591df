"""Reconciling a switch with its configuration: the diff, as pure functions.

Deleting every entry and inserting it again would leave a window with no route
and no port policy (packets discarded as DISCARD_NO_ROUTE / NO_POLICY). The
controller reads what the switch has (one ReadRequest, driver.read_state), builds
what the configuration wants (desired_state) and writes only the difference
(plan_writes). An unchanged configuration is zero writes.

Everything here is plain data, in the form finsy decodes a read into: match fields as
ints, LPM as (value, prefix_len), ternary as (value, mask); action parameters as ints
(MACs too). Nothing here talks to a switch.

Write order (plan_writes), so that traffic always has a route and a policy:
  1. digest configs: INSERT missing, MODIFY changed; never DELETE (driver.clear:
     deleting the digest config while PI builds a digest list aborts simple_switch_grpc);
  2. clone sessions INSERT/MODIFY (a DCBT_CHIPS policy clones to its session);
  3. table entries INSERT/MODIFY (a changed action keeps its match key: one atomic MODIFY);
  4. table entries DELETE (only after everything that replaces them exists);
  5. clone sessions and multicast groups DELETE (after the policies that used them).
Each step is its own Write RPC (driver.apply_writes): P4Runtime may reorder the updates
of one batch ("Batching and Ordering of Updates"), not the batches of one client.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Union

from . import p4constants as C
from .encoding import PolicyAction

TABLE_ROUTES = "ipv4_lpm"
TABLE_ROUTES6 = "ipv6_lpm"     # v1model only (docs/ipv6.md)
# Tofino's UPTA build: a copy of ipv4_lpm's entries, routing packets to this
# router's addresses (routing.p4 MMAQM_ROUTE_ANSWERS; docs/tofino.md)
TABLE_ANSWER_ROUTES = "ipv4_answer_lpm"
TABLE_CLASSIFIER = "classifier"
TABLE_POLICY = "port_policy"
# UPTA / BFD (upta.p4)
TABLE_UPTA_EDGE_PORT = "upta_edge_port"
TABLE_UPTA_LOCAL_ADDR = "upta_local_addr"
TABLE_UPTA_BFD_PATH = "upta_bfd_path"
DIGEST_FLOW = "flow_digest_t"
DIGEST_BFD_SPEC = "bfd_spec_digest_t"   # upta.p4: a probe's specs at a C-UPTA core
DIGEST_BFD_REPORT = "bfd_report_digest_t"   # upta.p4: a report the ingress edge accepted
PRIO_TCP = 100          # classifier priorities: TCP wins over any DSCP rule
PRIO_TAGGED = 50
IP_PROTO_MASK = 0xFF
DSCP_MASK = 0x3F

MatchValue = Union[int, tuple[int, int]]
INSERT, MODIFY, DELETE = "INSERT", "MODIFY", "DELETE"

# port_policy parameters the controller's loops change while the policy stays the
# same: D-CBT's shares (dcbt §3.1), the tag guard's interval and MCDT's class thresholds (mcdt §II.2, eq. 10).
DYNAMIC_PARAMS: dict[str, frozenset[str]] = {
    "dcbt": frozenset({"tagged_share_q16", "untagged_th_scaled", "tag_guard_interval_us"}),
    "dcbt_chips": frozenset({"tagged_share_q16", "untagged_th_scaled", "tag_guard_interval_us"}),
    # the tag guard's per-flow interval follows the active flows (tag_guard.p4)
    "cbt_red_all": frozenset({"tag_guard_interval_us"}),
    "cbt_red_tcp_only": frozenset({"tag_guard_interval_us"}),
    "mcdt": frozenset({"tcp_th_pkts", "tagged_th_pkts", "untagged_th_pkts"}),
    # UPTA's fair shares (eqs. 18-19), pushed by the controller's interval loop
    "upta": frozenset({"fs_i_scaled", "fs_u_scaled", "inv_fs_i_mant", "inv_fs_i_shift",
                       "inv_fs_u_mant", "inv_fs_u_shift"}),
}


@dataclass(frozen=True)
class TableEntry:
    table: str
    match: tuple[tuple[str, MatchValue], ...]     # sorted by field name
    action: str
    params: tuple[tuple[str, int], ...] = ()      # sorted by parameter name
    priority: int = 0

    @staticmethod
    def make(table: str, match: Mapping[str, MatchValue], action: str,
             params: Mapping[str, int] | None = None, priority: int = 0) -> "TableEntry":
        return TableEntry(table, tuple(sorted(match.items())), action,
                          tuple(sorted((params or {}).items())), priority)

    @property
    def key(self) -> tuple[str, tuple[tuple[str, MatchValue], ...], int]:
        return (self.table, self.match, self.priority)


@dataclass(frozen=True)
class CloneSession:
    session_id: int
    replicas: tuple[tuple[int, int], ...]         # (egress port, instance)
    class_of_service: int = 0
    packet_length_bytes: int = 0

    @property
    def key(self) -> int:
        return self.session_id


@dataclass(frozen=True)
class MulticastGroup:
    group_id: int
    replicas: tuple[tuple[int, int], ...]

    @property
    def key(self) -> int:
        return self.group_id


@dataclass(frozen=True)
class DigestConfig:
    digest: str
    max_list_size: int
    max_timeout_ns: int
    ack_timeout_ns: int

    @property
    def key(self) -> str:
        return self.digest


Entity = Union[TableEntry, CloneSession, MulticastGroup, DigestConfig]


@dataclass(frozen=True)
class SwitchState:
    """What a switch holds (read) or should hold (desired), in write order."""

    digests: tuple[DigestConfig, ...] = ()
    clone_sessions: tuple[CloneSession, ...] = ()
    multicast_groups: tuple[MulticastGroup, ...] = ()
    entries: tuple[TableEntry, ...] = ()

    def port_policies(self) -> dict[int, PolicyAction]:
        """The port_policy entries as {port: action}."""
        return {int(dict(e.match)["port"]): PolicyAction(e.action, dict(e.params))  # type: ignore[arg-type]
                for e in self.entries if e.table == TABLE_POLICY}


@dataclass(frozen=True)
class Write:
    type: str            # INSERT, MODIFY, DELETE
    entity: Entity


@dataclass(frozen=True)
class WritePlan:
    """The writes, in batches to send one after another (see the module docstring)."""

    batches: tuple[tuple[Write, ...], ...] = field(default_factory=tuple)

    @property
    def writes(self) -> list[Write]:
        return [w for batch in self.batches for w in batch]

    def count(self, kind: str) -> int:
        return sum(w.type == kind for w in self.writes)


# ---------------------------------------------------------------- desired
def check_port(port: int) -> None:
    if not 0 <= port < C.NUM_PORTS:
        raise ValueError(f"port {port} outside 0..{C.NUM_PORTS - 1}")


def mac_int(mac: str) -> int:
    parts = mac.split(":")
    if len(parts) != 6 or not all(len(p) == 2 for p in parts):
        raise ValueError(f"bad MAC address {mac!r}")
    return int("".join(parts), 16)


def classifier_entries(tagged_dscp: Iterable[int]) -> list[TableEntry]:
    """(IP protocol, DSCP) -> class (cbt §3): TCP, tagged UDP, else untagged (the
    table's default)."""
    entries = [TableEntry.make(TABLE_CLASSIFIER, {"ip_proto": (C.IP_PROTO_TCP, IP_PROTO_MASK)},
                               "set_class", {"class_id": C.CLASS_TCP}, PRIO_TCP)]
    for dscp in tagged_dscp:
        if not 0 <= dscp <= 63:
            raise ValueError(f"DSCP {dscp} outside 0..63")
        entries.append(TableEntry.make(
            TABLE_CLASSIFIER, {"ip_proto": (C.IP_PROTO_UDP, IP_PROTO_MASK),
                               "dscp": (dscp, DSCP_MASK)},
            "set_class", {"class_id": C.CLASS_TAGGED}, PRIO_TAGGED))
    return entries


def route_entry(prefix: str, port: int, src_mac: str, next_hop_mac: str) -> TableEntry:
    check_port(port)
    network = ipaddress.ip_network(prefix)       # raises on a bad prefix
    if network.version == 6:
        return TableEntry.make(TABLE_ROUTES6,
                               {"ipv6_dst": (int(network.network_address), network.prefixlen)},
                               "route6", {"port": port, "src_mac": mac_int(src_mac),
                                          "dst_mac": mac_int(next_hop_mac)})
    return TableEntry.make(TABLE_ROUTES,
                           {"ipv4_dst": (int(network.network_address), network.prefixlen)},
                           "route", {"port": port, "src_mac": mac_int(src_mac),
                                     "dst_mac": mac_int(next_hop_mac)})


def policy_entry(port: int, action: PolicyAction) -> TableEntry:
    check_port(port)
    return TableEntry.make(TABLE_POLICY, {"port": port}, action.name, action.params)


def answer_route_entry(route: TableEntry) -> TableEntry:
    """An IPv4 route's copy in ipv4_answer_lpm (the same match, action and parameters)."""
    if route.table != TABLE_ROUTES:
        raise ValueError(f"not an IPv4 route: {route.table}")
    return TableEntry.make(TABLE_ANSWER_ROUTES, dict(route.match), route.action,
                           dict(route.params), route.priority)


def upta_edge_port_entry(port: int, *, cpu: bool = False) -> TableEntry:
    """UPTA/BFD (upta.p4): `port` faces hosts or another domain (an edge port: QoS
    Probes and Reports arriving on it are dropped and counted; C-UPTA's ingress
    edge), or, with cpu, is the controller's port (the only origin of probes)."""
    check_port(port)
    return TableEntry.make(TABLE_UPTA_EDGE_PORT, {"port": port},
                           "upta_cpu" if cpu else "upta_edge")


def upta_local_addr_entry(addr: str) -> TableEntry:
    """BFD (upta.p4): one of this router's own addresses (probes to it are answered,
    reports to it accepted)."""
    return TableEntry.make(TABLE_UPTA_LOCAL_ADDR, {"addr": int(ipaddress.IPv4Address(addr))},
                           "upta_local")


def upta_bfd_path_entry(prefix: str, path: int) -> TableEntry:
    """C-UPTA (upta.p4): packets to `prefix` take BFD path `path` (< BFD_PATHS)."""
    if not 0 <= path < C.BFD_PATHS:
        raise ValueError(f"path {path} outside 0..{C.BFD_PATHS - 1}")
    network = ipaddress.IPv4Network(prefix)
    return TableEntry.make(TABLE_UPTA_BFD_PATH,
                           {"ipv4_dst": (int(network.network_address), network.prefixlen)},
                           "upta_path", {"path": path})


def bfd_entries(bfd) -> list[TableEntry]:      # config.BfdConfig
    """A router's BFD tables (docs/upta-plan.md §1.6-1.7): its own address, its edge
    ports and the controller's port, the destination -> BFD path map."""
    entries = [upta_local_addr_entry(bfd.router_addr)]
    entries += [upta_edge_port_entry(port) for port in bfd.edge_ports]
    if bfd.cpu_port is not None:
        entries.append(upta_edge_port_entry(bfd.cpu_port, cpu=True))
    entries += [upta_bfd_path_entry(str(prefix), path.path_id)
                for path in bfd.paths for prefix in path.prefixes]
    return entries


# A clone session's replica instance. P4Runtime leaves its meaning to the target;
# Stratum accepts only 0 in a clone session (and a non-zero egress port), BMv2 any.
CLONE_REPLICA_INSTANCE = 0


def cut_in_slot_session(port: int) -> CloneSession:
    """ChIPS's FIFO slot clones of one port (chips.p4): session
    CHIPS_CLONE_SESSION_BASE + port replicates to the port itself."""
    check_port(port)
    return CloneSession(C.CHIPS_CLONE_SESSION_BASE + port, ((port, CLONE_REPLICA_INSTANCE),))


def flow_digest_config(max_list_size: int = 64, max_timeout_ms: int = 10, *,
                       digest: str = DIGEST_FLOW) -> DigestConfig:
    """The flow digest's configuration; digest: its P4Info alias (driver.flow_digest_alias:
    the struct's name on v1model, the Digest instance's on a target that names it
    after the instance)."""
    return DigestConfig(digest, max_list_size, max_timeout_ms * 1_000_000, 1_000_000_000)


def same_policy(a: PolicyAction | None, b: PolicyAction | None) -> bool:
    """The same algorithm with the same configured parameters: they differ at most in
    policy_epoch and in what the controller's loops change (DYNAMIC_PARAMS). Such a
    port keeps its policy epoch, so its averages survive a reinstall."""
    if a is None or b is None or a.name != b.name:
        return False
    ignore = DYNAMIC_PARAMS.get(a.name, frozenset()) | {"policy_epoch"}
    return {k: v for k, v in a.params.items() if k not in ignore} == \
        {k: v for k, v in b.params.items() if k not in ignore}


# ------------------------------------------------------------------- diff
def diff_entities(current: Iterable[Entity], desired: Iterable[Entity]
          ) -> tuple[list[Write], list[Write]]:
    """(INSERT and MODIFY writes in desired's order, DELETE writes in current's order)."""
    have = {e.key: e for e in current}
    want_keys = set()
    upserts = []
    for entity in desired:
        if entity.key in want_keys:
            raise ValueError(f"two desired entities with one key: {entity.key!r}")
        want_keys.add(entity.key)
        old = have.get(entity.key)
        if old is None:
            upserts.append(Write(INSERT, entity))
        elif old != entity:
            upserts.append(Write(MODIFY, entity))
    deletes = [Write(DELETE, e) for key, e in have.items() if key not in want_keys]
    return upserts, deletes


def plan_writes(current: SwitchState, desired: SwitchState) -> WritePlan:
    """The writes that turn current into desired, in batches (module docstring)."""
    digest_upserts, _ = diff_entities(current.digests, desired.digests)   # digest configs: never DELETE
    clone_upserts, clone_deletes = diff_entities(current.clone_sessions, desired.clone_sessions)
    group_upserts, group_deletes = diff_entities(current.multicast_groups, desired.multicast_groups)
    entry_upserts, entry_deletes = diff_entities(current.entries, desired.entries)
    batches = (digest_upserts + clone_upserts + group_upserts, entry_upserts, entry_deletes,
               clone_deletes + group_deletes)
    return WritePlan(tuple(tuple(b) for b in batches if b))


def describe_writes(current: SwitchState, plan: WritePlan) -> list[dict[str, object]]:
    """Each write of a plan as plain JSON data naming what it changes: the entity
    (a table entry's table and match, a clone session's or group's id, a digest's
    name), and for a MODIFY of a table entry the action parameters that differ
    ({param: [on the switch, written]}, or the action's name when it differs)."""
    have: dict[object, Entity] = {e.key: e for e in (*current.digests, *current.clone_sessions,
                                                     *current.multicast_groups, *current.entries)}
    described = []
    for write in plan.writes:
        entity = write.entity
        item: dict[str, object] = {"type": write.type}
        if isinstance(entity, TableEntry):
            item["table"] = entity.table
            item["match"] = {name: list(v) if isinstance(v, tuple) else v
                             for name, v in entity.match}
            old = have.get(entity.key)
            if write.type == MODIFY and isinstance(old, TableEntry):
                if old.action != entity.action:
                    item["action"] = [old.action, entity.action]
                else:
                    before, after = dict(old.params), dict(entity.params)
                    item["changed"] = {k: [before.get(k), after.get(k)]
                                       for k in sorted(set(before) | set(after))
                                       if before.get(k) != after.get(k)}
        else:
            item[type(entity).__name__] = entity.key
        described.append(item)
    return described
