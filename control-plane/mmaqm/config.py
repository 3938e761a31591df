"""mmaqm controller configuration: YAML loading and complete validation.

Everything is validated before anything is written to a switch, and only
here: the result is a tree of frozen dataclasses that the rest of the
controller trusts. Errors are collected, not raised one at a time:
:class:`ConfigError` carries them all in ``.errors``, each starting with the
path of the offending field (mapping keys dotted, list indices in brackets;
:mod:`mmaqm.validation`), e.g.
``switches.s1.policies.2.min_th_pkts: must be < max_th_pkts (15), got 20``.
Unknown keys are errors everywhere (they are usually typos), and so are
duplicate keys in one YAML mapping (PyYAML would silently keep the last one).
A config file is UTF-8, at most MAX_CONFIG_BYTES, MAX_YAML_NODES values and
MAX_YAML_DEPTH levels deep; lists and mappings longer than the tables they fill
are one error each (input bounds: a wrong or hostile file costs neither memory
nor time).

The schema, every key with its type, range, default and meaning, is
docs/configuration.md, generated (tools/gen_config_reference.py, ``make
config-reference``) from :data:`FIELDS` (the keys outside the policies) and
:data:`COMMON_POLICY_PARAMS` at the end of this module and from the algorithm
plug-ins' parameter declarations. tests/controller/test_config_fields.py keeps
FIELDS equal to the keys the readers below accept.

Policy keys: ``algorithm`` (required; one of ``mmaqm.algorithms.REGISTRY``),
``queue_limit_pkts`` (every algorithm; the P4 queue limit), and the keys of the
algorithm's plug-in, each declared there with its type, unit, range and default.
A key that another algorithm takes is an error naming who takes it; an unknown
key is an error with a suggestion.

The BMv2 traffic manager's queue depth and rate are not controller settings:
whoever starts simple_switch sets them (topologies: mmaqm_exp.network, from
the topology file). Every port that a route uses must end up with a policy
(its own or default). In the result every port's effective policy is
resolved; :func:`mmaqm.encoding.policy_action` turns a policy into its P4
action of table ``port_policy`` (aqm.p4) through the algorithm's plug-in. Code that builds a policy from a
mapping (tests, PTF) uses :func:`parse_policy`, the same checks.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from . import p4constants as C
from . import validation as V
from . import algorithms as A
from .algorithms import (DEFAULT_QUEUE_LIMIT_PKTS, MAX_QUEUE_LIMIT_PKTS, MIN_LOOP_INTERVAL_MS,
                         PortPolicy, Settings)
from .flows import DEFAULT_MAX_FLOWS

DEFAULT_TAGGED_DSCP: tuple[int, ...] = (46, 34)      # EF, AF41
DEFAULT_EXPIRY_INTERVAL_MS = 300.0                   # dcbt §3.1
DEFAULT_UPDATE_INTERVAL_MS = 50.0
MAX_MAX_FLOWS = 1 << 24          # active_flows.max_flows: ~5 GB of flow entries at most
DEFAULT_DEVICE_ID = 1
MAX_FLOW_EPOCH_SHIFT = 40
MIN_EXPIRY_INTERVAL_MS = 2 * 2**1 / 1000             # flow_epoch_shift_for() >= 1
MAX_DEVICE_ID = 2**64 - 1
# Input bounds (docs/configuration.md): a config is a few kB; these stop
# a wrong or hostile file before it costs memory or time. PyYAML needs ~0.7 kB and
# ~5 us per value (libyaml's events, Python's nodes: _StrictLoader); a full switch
# (NUM_PORTS ports, ROUTE_TABLE_SIZE routes, a policy per port) is ~10k values.
MAX_CONFIG_BYTES = 1 << 20                           # 1 MiB
MAX_YAML_NODES = 50_000                              # scalars, lists and mappings, with
                                                     # every alias (and merge key) counted
                                                     # as the nodes it repeats
MAX_YAML_DEPTH = 32                                  # a config nests 6 levels
MAX_YAML_INT_BITS = 128                              # device_id is the largest: 64 bits
MAX_DUPLICATE_KEYS = 100                             # reported; then the file is refused
# The occupancy audit (Tofino only; docs/tofino.md "Counts that heal"): its
# period must stay far above the longest queueing delay (queue_limit_pkts x
# the largest frame's time: 1024 1500-byte frames take 1.2 ms at 10 Gbit/s, a
# Tofino port's slowest common speed); 0 turns it off.
DEFAULT_OCCUPANCY_AUDIT_INTERVAL_S = 1.0
MIN_OCCUPANCY_AUDIT_INTERVAL_S = 0.1
MAX_OCCUPANCY_AUDIT_INTERVAL_S = 3600.0
MAX_SWITCHES = 64                                    # switches in one config (one process)

LOCALHOST_ADDRESSES = ("127.0.0.1", "::1")

_SWITCH_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")       # fullmatch


class ConfigError(ValueError):
    """Invalid configuration. ``errors`` lists every problem, "<field path>: <message>"."""

    def __init__(self, errors: list[str]) -> None:
        # control characters escaped, each line cut: a message never forges a line
        self.errors = [V.safe_line(str(line)) for line in errors]
        super().__init__("\n".join(self.errors))


# ------------------------------------------------------------- result types
@dataclass(frozen=True)
class PortConfig:
    port: int
    mac: str                       # lower case, "02:00:00:00:00:01"


@dataclass(frozen=True)
class Route:
    prefix: ipaddress.IPv4Network | ipaddress.IPv6Network   # ipv4_lpm or ipv6_lpm
    port: int
    next_hop_mac: str              # lower case


@dataclass(frozen=True)
class SwitchConfig:
    name: str
    p4runtime_addr: str
    device_id: int
    ports: Mapping[int, PortConfig]
    routes: tuple[Route, ...]
    policies: Mapping[int, PortPolicy]        # effective policy of every port that has one
    default_policy: PortPolicy | None = None
    bfd: "BfdConfig | None" = None
    tls: "TlsSettings | None" = None
    occupancy_audit_interval_s: float = DEFAULT_OCCUPANCY_AUDIT_INTERVAL_S   # 0: off
    bfrt_address: str | None = None           # the switch's BfRt gRPC server (Tofino)


@dataclass(frozen=True)
class TlsSettings:
    """TLS to one switch's P4Runtime server (driver.TlsConfig): files as given."""

    ca_cert: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    server_name: str = ""


@dataclass(frozen=True)
class BfdPathConfig:
    path_id: int
    port: int
    egress_addr: str
    prefixes: tuple[ipaddress.IPv4Network, ...]


@dataclass(frozen=True)
class BfdConfig:
    """C-UPTA's BFD settings of one switch (topology.bfd_plan writes them)."""

    router_addr: str
    edge_ports: tuple[int, ...] = ()
    cpu_port: int | None = None
    paths: tuple[BfdPathConfig, ...] = ()


@dataclass(frozen=True)
class ClassifierConfig:
    tagged_dscp: tuple[int, ...] = DEFAULT_TAGGED_DSCP


@dataclass(frozen=True)
class ActiveFlowsConfig:
    expiry_interval_ms: float = DEFAULT_EXPIRY_INTERVAL_MS
    update_interval_ms: float = DEFAULT_UPDATE_INTERVAL_MS
    max_flows: int = DEFAULT_MAX_FLOWS

    @property
    def flow_epoch_shift(self) -> int:
        return flow_epoch_shift_for(self.expiry_interval_ms)


@dataclass(frozen=True)
class Config:
    switches: Mapping[str, SwitchConfig]
    classifier: ClassifierConfig = ClassifierConfig()
    active_flows: ActiveFlowsConfig = ActiveFlowsConfig()


# ---------------------------------------------------------- derived values
def flow_epoch_shift_for(expiry_interval_ms: float) -> int:
    """Largest k with 2^k us <= expiry_interval_ms * 1000 / 2, capped at 40.

    flow_report.p4 reports a flow on its first packet of each 2^k us epoch, so a
    continuously active flow is reported at least twice per expiry interval.
    """
    if isinstance(expiry_interval_ms, bool) or not isinstance(expiry_interval_ms, (int, float)):
        raise ValueError(f"expiry_interval_ms must be a number, got {expiry_interval_ms!r}")
    half_us = expiry_interval_ms * 1000 / 2
    if not half_us >= 2:
        raise ValueError(f"expiry_interval_ms must be >= {MIN_EXPIRY_INTERVAL_MS!r}, "
                         f"got {expiry_interval_ms!r}")
    if math.isinf(half_us):
        return MAX_FLOW_EPOCH_SHIFT
    _, exponent = math.frexp(half_us)          # half_us = m * 2^exponent, 0.5 <= m < 1: exact
    return min(exponent - 1, MAX_FLOW_EPOCH_SHIFT)


def endpoint_keys(address: str, device_id: int) -> set[tuple[str, int, int]]:
    """The (host, port, device id) spellings of one validated P4Runtime endpoint that
    reach the same server: host names in lower case, IP addresses in their
    canonical form ([0:0::1] is ::1), port 09559 is 9559, and localhost is both
    127.0.0.1 and ::1 (it resolves to either). Without a DNS lookup: two different
    names of one host are not caught."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]").lower()
    try:
        hosts = {str(ipaddress.ip_address(host))}
    except ValueError:
        hosts = set(LOCALHOST_ADDRESSES) if host == "localhost" else {host}
    return {(h, int(port), device_id) for h in hosts}


# ------------------------------------------------------------ validation
def _section(raw: Mapping[Any, Any], key: str, default: Any) -> Any:
    """An optional section; absent or empty (YAML null) means the default."""
    value = raw.get(key)
    return default if value is None else value


# --- policy
_COMMON_POLICY_KEYS = ("algorithm", "queue_limit_pkts")
_POLICY_KEYS = (*_COMMON_POLICY_KEYS, *A.all_keys())


def parse_policy(value: object, path: str = "policy") -> PortPolicy:
    """One policy mapping (as in a config's ``policies``) -> PortPolicy.

    Raises ConfigError listing every problem, with paths under ``path``.
    """
    errs = V.Errors()
    policy = _read_policy(value, path, errs)
    if errs.items:
        raise ConfigError(errs.items)
    assert policy is not None
    return policy


def _read_policy(value: object, path: str, errs: V.Errors) -> PortPolicy | None:
    """A policy through its algorithm's plug-in: the common keys, keys of other
    plug-ins refused, then each of the plug-in's parameters (its default when
    absent), then the plug-in's rules between its parameters."""
    raw = V.mapping(value, path, errs, allowed=_POLICY_KEYS)
    if raw is None:
        return None
    before = len(errs)
    name = V.one_of(V.require(raw, "algorithm", path, errs), V.join(path, "algorithm"),
                    errs, tuple(A.REGISTRY))
    limit = V.integer(raw.get("queue_limit_pkts", DEFAULT_QUEUE_LIMIT_PKTS),
                      V.join(path, "queue_limit_pkts"), errs, lo=1, hi=MAX_QUEUE_LIMIT_PKTS,
                      note=f"averages are bit<32> packets * 2^{C.AVG_FRAC_BITS}")
    given = frozenset(key for key in A.all_keys() if raw.get(key) is not None)  # null = absent
    if name is None:
        return None
    plugin = A.get(name)
    for key in sorted(given - set(plugin.keys), key=_POLICY_KEYS.index):
        note, users = plugin.unused_key_notes.get(key), A.users_of(key)
        if note:
            errs.add(V.join(path, key), f"not used by {name} ({note})")
        elif len(users) <= 2:            # a key of one algorithm (family)
            errs.add(V.join(path, key), f"only for {' and '.join(users)}")
        else:                            # a RED key
            errs.add(V.join(path, key), f"not used by {name}")
    values: dict[str, Any] = {}
    for param in plugin.params:
        key_path = V.join(path, param.key)
        if param.key in given:
            values[param.key] = param.read(raw[param.key], key_path, errs)
        elif param.required:
            errs.add(key_path, f"required for {name}")
            values[param.key] = None
        else:
            values[param.key] = param.default
    plugin.check(values, given, limit, path, errs)
    if len(errs) > before or limit is None:
        return None
    return PortPolicy(algorithm=name, queue_limit_pkts=limit, settings=Settings(values))


# --- switch
_SWITCH_KEYS = ("p4runtime_addr", "device_id", "ports", "routes", "policies", "bfd", "tls",
                "occupancy_audit_interval_s", "bfrt_address")
_TLS_FILES = ("ca_cert", "cert", "key")
_TLS_KEYS = (*_TLS_FILES, "server_name")
_BFD_KEYS = ("router_addr", "edge_ports", "cpu_port", "paths")
_BFD_PATH_KEYS = ("id", "port", "egress_addr", "prefixes")
_ROUTE_KEYS = ("prefix", "port", "next_hop_mac")
_MAX_PORT = C.NUM_PORTS - 1


def _read_ports(value: object, path: str, errs: V.Errors) -> dict[int, PortConfig] | None:
    raw = V.mapping(value, path, errs, at_least_one="port", max_entries=C.NUM_PORTS,
                    entries="ports", capacity="NUM_PORTS")
    if raw is None:
        return None
    ports: dict[int, PortConfig] = {}
    port_of_mac: dict[str, object] = {}
    for key, port_raw in raw.items():
        port_path = V.join(path, key)
        port = V.integer(key, port_path, errs, lo=0, hi=_MAX_PORT)
        body = V.mapping(port_raw, port_path, errs, allowed=("mac",))
        if body is None:
            continue
        mac_path = V.join(port_path, "mac")
        mac = V.mac(V.require(body, "mac", port_path, errs), mac_path, errs)
        if mac is not None and mac in port_of_mac:   # the router's own MAC: one per port
            errs.add(mac_path, f"duplicate MAC {mac} (also port {port_of_mac[mac]})")
            mac = None
        elif mac is not None:
            port_of_mac[mac] = key
        if port is not None and mac is not None:
            ports[port] = PortConfig(port=port, mac=mac)
    return ports


def _read_routes(value: object, path: str, ports_path: str, known_ports: set[int] | None,
                 errs: V.Errors) -> list[tuple[str, Route]]:
    items = V.sequence(value, path, errs, max_items=C.ROUTE_TABLE_SIZE, item="route",
                       capacity="the ipv4_lpm table size")
    routes: list[tuple[str, Route]] = []
    seen: dict[ipaddress.IPv4Network | ipaddress.IPv6Network, str] = {}
    ipv6_routes = 0
    for i, item in enumerate(items or []):
        route_path = V.index(path, i)
        raw = V.mapping(item, route_path, errs, allowed=_ROUTE_KEYS)
        if raw is None:
            continue
        prefix_path = V.join(route_path, "prefix")
        prefix = V.ip_network(V.require(raw, "prefix", route_path, errs), prefix_path, errs)
        if prefix is not None and prefix.version == 6:
            ipv6_routes += 1
            if ipv6_routes > C.ROUTE6_TABLE_SIZE:
                errs.add(prefix_path, f"more than {C.ROUTE6_TABLE_SIZE} IPv6 routes "
                                      "(the ipv6_lpm table size)")
                prefix = None
        if prefix is not None and prefix in seen:
            errs.add(prefix_path, f"duplicate prefix {prefix} (also {seen[prefix]})")
            prefix = None
        elif prefix is not None:
            seen[prefix] = route_path
        port_path = V.join(route_path, "port")
        port = V.integer(V.require(raw, "port", route_path, errs), port_path, errs,
                         lo=0, hi=_MAX_PORT)
        if port is not None and known_ports is not None and port not in known_ports:
            errs.add(port_path, f"unknown port {port} (not in {ports_path})")
            port = None
        mac = V.mac(V.require(raw, "next_hop_mac", route_path, errs),
                    V.join(route_path, "next_hop_mac"), errs)
        if prefix is not None and port is not None and mac is not None:
            routes.append((route_path, Route(prefix=prefix, port=port, next_hop_mac=mac)))
    return routes


_DEFAULT_KEY = -1      # the default policy's entry in the set of broken policies


def _read_policies(value: object, path: str, ports_path: str, known_ports: set[int] | None,
                   errs: V.Errors) -> tuple[dict[int, PortPolicy], PortPolicy | None, set[int]]:
    """(own policies, default policy, ports whose policy is invalid)."""
    raw = V.mapping(value, path, errs, max_entries=C.NUM_PORTS + 1, entries="policies",
                    capacity="one per port (NUM_PORTS) and a default:")
    own: dict[int, PortPolicy] = {}
    default: PortPolicy | None = None
    broken: set[int] = set()
    if raw is None:           # reported: no "port has no policy" for the routes too
        return own, None, {_DEFAULT_KEY}
    for key, policy_raw in raw.items():
        policy_path = V.join(path, key)
        if key == "default":
            default = _read_policy(policy_raw, policy_path, errs)
            if default is None:
                broken.add(_DEFAULT_KEY)
            continue
        if isinstance(key, bool) or not isinstance(key, int):
            errs.add(policy_path, "must be 'default' or a port number"
                     + (f", got {key.describe()}" if isinstance(key, V.NonDecimal) else ""))
            continue
        port = V.integer(key, policy_path, errs, lo=0, hi=_MAX_PORT)
        if port is not None and known_ports is not None and port not in known_ports:
            errs.add(policy_path, f"unknown port {port} (not in {ports_path})")
        policy = _read_policy(policy_raw, policy_path, errs)
        if port is not None:
            if policy is None:
                broken.add(port)
            else:
                own[port] = policy
    return own, default, broken


def _ipv4_address(value: object, path: str, errs: V.Errors) -> str | None:
    if not isinstance(value, str):
        errs.add(path, f"must be an IPv4 address, got {V.describe(value)}")
        return None
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        errs.add(path, f"must be an IPv4 address, got {V.describe(value)}")
        return None


def _read_bfd(value: object, path: str, known_ports: set[int] | None,
              errs: V.Errors) -> BfdConfig | None:
    """The switch's `bfd` section (C-UPTA, upta §5.3)."""
    raw = V.mapping(value, path, errs, allowed=_BFD_KEYS)
    if raw is None:
        return None
    before = len(errs)
    addr = _ipv4_address(V.require(raw, "router_addr", path, errs),
                         V.join(path, "router_addr"), errs)

    def port_of(item: object, item_path: str) -> int | None:
        port = V.integer(item, item_path, errs, lo=0, hi=_MAX_PORT)
        if port is not None and known_ports is not None and port not in known_ports:
            errs.add(item_path, f"unknown port {port} (not in ports)")
        return port

    edge_path = V.join(path, "edge_ports")
    edges = V.sequence(raw.get("edge_ports", []), edge_path, errs,
                       max_items=C.NUM_PORTS, item="port", capacity="NUM_PORTS") or []
    edge_ports = [port_of(item, V.index(edge_path, i)) for i, item in enumerate(edges)]
    cpu_port = None
    if raw.get("cpu_port") is not None:
        cpu_port = V.integer(raw["cpu_port"], V.join(path, "cpu_port"), errs, lo=1, hi=_MAX_PORT)
        if cpu_port is not None and known_ports is not None and cpu_port in known_ports:
            errs.add(V.join(path, "cpu_port"), f"port {cpu_port} is a switch port (in ports)")
    paths_path = V.join(path, "paths")
    items = V.sequence(raw.get("paths", []), paths_path, errs, max_items=C.BFD_PATHS,
                       item="path", capacity="BFD_PATHS") or []
    paths: list[BfdPathConfig] = []
    ids: set[int] = set()
    for i, item in enumerate(items):
        ipath = V.index(paths_path, i)
        praw = V.mapping(item, ipath, errs, allowed=_BFD_PATH_KEYS)
        if praw is None:
            continue
        pid = V.integer(V.require(praw, "id", ipath, errs), V.join(ipath, "id"), errs,
                        lo=0, hi=C.BFD_PATHS - 1)
        if pid is not None and pid in ids:
            errs.add(V.join(ipath, "id"), f"duplicate path id {pid}")
        port = port_of(V.require(praw, "port", ipath, errs), V.join(ipath, "port"))
        egress = _ipv4_address(V.require(praw, "egress_addr", ipath, errs),
                               V.join(ipath, "egress_addr"), errs)
        pre_path = V.join(ipath, "prefixes")
        prefixes = [V.ipv4_network(p, V.index(pre_path, j), errs)
                    for j, p in enumerate(V.sequence(praw.get("prefixes", []), pre_path, errs,
                                                     max_items=C.BFD_PATHS, item="prefix",
                                                     capacity="BFD_PATHS") or [])]
        if pid is not None and port is not None and egress is not None \
                and all(p is not None for p in prefixes):
            ids.add(pid)
            paths.append(BfdPathConfig(pid, port, egress, tuple(prefixes)))  # type: ignore[arg-type]
    if len(errs) > before or addr is None:
        return None
    return BfdConfig(router_addr=addr, edge_ports=tuple(sorted({p for p in edge_ports
                                                                  if p is not None})),
                     cpu_port=cpu_port, paths=tuple(paths))


def _read_switch(name: object, value: object, path: str, errs: V.Errors) -> SwitchConfig | None:
    if not isinstance(name, str) or not _SWITCH_NAME_RE.fullmatch(name):
        errs.add(path, f"switch name must be 1..64 of A-Z a-z 0-9 _ -, got "
                       f"{V.describe(name)}")
    raw = V.mapping(value, path, errs, allowed=_SWITCH_KEYS)
    if raw is None:
        return None
    before = len(errs)
    addr = V.host_port(V.require(raw, "p4runtime_addr", path, errs),
                       V.join(path, "p4runtime_addr"), errs)
    device_id = V.integer(raw.get("device_id", DEFAULT_DEVICE_ID), V.join(path, "device_id"), errs,
                          lo=0, hi=MAX_DEVICE_ID)
    bfrt_address = None if raw.get("bfrt_address") is None else \
        V.host_port(raw["bfrt_address"], V.join(path, "bfrt_address"), errs)

    ports_path = V.join(path, "ports")
    before_ports = len(errs)
    ports = _read_ports(V.require(raw, "ports", path, errs), ports_path, errs)
    # Membership checks only against a port list without errors (no cascades).
    known_ports = set(ports) if ports is not None and len(errs) == before_ports else None

    routes = _read_routes(_section(raw, "routes", []), V.join(path, "routes"), ports_path,
                          known_ports, errs)
    own, default, broken = _read_policies(_section(raw, "policies", {}), V.join(path, "policies"),
                                          ports_path, known_ports, errs)
    bfd = None if raw.get("bfd") is None else \
        _read_bfd(raw["bfd"], V.join(path, "bfd"), known_ports, errs)
    tls = None if raw.get("tls") is None else _read_tls(raw["tls"], V.join(path, "tls"), errs)
    audit_path = V.join(path, "occupancy_audit_interval_s")
    audit_s = V.number(raw.get("occupancy_audit_interval_s", DEFAULT_OCCUPANCY_AUDIT_INTERVAL_S),
                       audit_path, errs, ge=0, le=MAX_OCCUPANCY_AUDIT_INTERVAL_S)
    if audit_s is not None and 0 < audit_s < MIN_OCCUPANCY_AUDIT_INTERVAL_S:
        errs.add(audit_path, f"must be 0 (off) or >= {V.fmt(MIN_OCCUPANCY_AUDIT_INTERVAL_S)}, "
                             f"got {V.fmt(audit_s)}")

    effective: dict[int, PortPolicy] = {}
    for port in sorted(ports or {}):
        policy = own.get(port, default)
        if policy is not None:
            effective[port] = policy
    reported: set[int] = set()
    for route_path, route in routes:
        if route.port in effective or route.port in reported:
            continue
        if route.port in broken or (_DEFAULT_KEY in broken and route.port not in own):
            continue  # its policy is invalid: already reported
        reported.add(route.port)
        errs.add(V.join(route_path, "port"),
                 f"port {route.port} has no policy (add policies.{route.port} or policies.default)")
    if len(errs) > before or addr is None or device_id is None or ports is None:
        return None
    return SwitchConfig(
        name=str(name),
        p4runtime_addr=addr,
        device_id=device_id,
        ports=MappingProxyType(dict(sorted(ports.items()))),
        routes=tuple(route for _, route in routes),
        policies=MappingProxyType(effective),
        default_policy=default,
        bfd=bfd,
        tls=tls,
        occupancy_audit_interval_s=float(audit_s if audit_s is not None
                                         else DEFAULT_OCCUPANCY_AUDIT_INTERVAL_S),
        bfrt_address=bfrt_address,
    )


def _read_tls(value: object, path: str, errs: V.Errors) -> TlsSettings | None:
    """TLS settings: file paths (relative to the working directory) that exist, a
    certificate with its key, the name to verify."""
    raw = V.mapping(value, path, errs, allowed=_TLS_KEYS)
    if raw is None:
        return None
    before = len(errs)
    files: dict[str, Path | None] = {}
    for key in _TLS_FILES:
        text = None if raw.get(key) is None else \
            V.string(raw[key], V.join(path, key), errs, non_empty=True)
        files[key] = None if text is None else Path(text)
        if text is not None and "\0" not in text and not Path(text).is_file():
            errs.add(V.join(path, key), f"no such file: {V.describe(text)}")
    name = V.string(raw.get("server_name", ""), V.join(path, "server_name"), errs) or ""
    if (files["cert"] is None) != (files["key"] is None) and len(errs) == before:
        errs.add(path, "cert and key go together (a client certificate and its private key)")
    if len(errs) > before:
        return None
    return TlsSettings(ca_cert=files["ca_cert"], cert=files["cert"], key=files["key"],
                       server_name=name)


# --- top level
def _read_classifier(value: object, errs: V.Errors) -> ClassifierConfig:
    path = "classifier"
    raw = V.mapping(value, path, errs, allowed=("tagged_dscp",))
    if raw is None:
        return ClassifierConfig()
    list_path = V.join(path, "tagged_dscp")
    before = len(errs)
    dscps = V.sequence(raw.get("tagged_dscp", list(DEFAULT_TAGGED_DSCP)), list_path, errs,
                       max_items=C.CLASSIFIER_TABLE_SIZE, item="DSCP",
                       capacity="the classifier table size")
    if dscps is None:
        return ClassifierConfig()
    too_long = len(errs) > before
    first_index: dict[int, int] = {}
    for i, item in enumerate(dscps):
        item_path = V.index(list_path, i)
        dscp = V.integer(item, item_path, errs, lo=0, hi=63)
        if dscp is None:
            continue
        if dscp in first_index:
            errs.add(item_path, f"duplicate DSCP {dscp} (also at index {first_index[dscp]})")
        else:
            first_index[dscp] = i
    if not too_long and 1 + len(first_index) > C.CLASSIFIER_TABLE_SIZE:  # + the TCP entry
        errs.add(list_path, f"{len(first_index)} DSCPs + the TCP entry exceed the "
                            f"classifier table size {C.CLASSIFIER_TABLE_SIZE}")
    return ClassifierConfig(tagged_dscp=tuple(first_index))


def _read_active_flows(value: object, errs: V.Errors) -> ActiveFlowsConfig:
    path = "active_flows"
    raw = V.mapping(value, path, errs,
                    allowed=("expiry_interval_ms", "update_interval_ms", "max_flows"))
    if raw is None:
        return ActiveFlowsConfig()
    expiry = V.number(raw.get("expiry_interval_ms", DEFAULT_EXPIRY_INTERVAL_MS),
                      V.join(path, "expiry_interval_ms"), errs, ge=MIN_EXPIRY_INTERVAL_MS,
                      note="two 2 us flow epochs")
    update_path = V.join(path, "update_interval_ms")
    update = V.number(raw.get("update_interval_ms", DEFAULT_UPDATE_INTERVAL_MS), update_path,
                      errs, ge=MIN_LOOP_INTERVAL_MS,
                      note="below a P4Runtime read and write the loop only spins")
    if update is not None and expiry is not None and update > expiry:
        errs.add(update_path,
                 f"must be <= expiry_interval_ms ({V.fmt(expiry)}), got {V.fmt(update)}")
    max_flows = V.integer(raw.get("max_flows", DEFAULT_MAX_FLOWS), V.join(path, "max_flows"),
                          errs, lo=1, hi=MAX_MAX_FLOWS)
    return ActiveFlowsConfig(
        expiry_interval_ms=float(expiry if expiry is not None else DEFAULT_EXPIRY_INTERVAL_MS),
        update_interval_ms=float(update if update is not None else DEFAULT_UPDATE_INTERVAL_MS),
        max_flows=max_flows if max_flows is not None else DEFAULT_MAX_FLOWS,
    )


def parse_config(data: object) -> Config:
    """Validate a config tree (as loaded from YAML); raise ConfigError listing every problem."""
    errs = V.Errors()
    raw = V.mapping(data, "", errs, allowed=("classifier", "active_flows", "switches"))
    if raw is None:
        raise ConfigError(errs.items)
    classifier = _read_classifier(_section(raw, "classifier", {}), errs)
    active_flows = _read_active_flows(_section(raw, "active_flows", {}), errs)
    switches_raw = V.mapping(V.require(raw, "switches", "", errs), "switches", errs,
                             at_least_one="switch", max_entries=MAX_SWITCHES,
                             entries="switches", capacity="the maximum")
    switches: dict[str, SwitchConfig] = {}
    endpoints: dict[tuple[str, int, int], SwitchConfig] = {}
    for name, switch_raw in (switches_raw or {}).items():
        path = V.join("switches", name)
        switch = _read_switch(name, switch_raw, path, errs)
        if switch is None:
            continue
        keys = endpoint_keys(switch.p4runtime_addr, switch.device_id)
        other = next((endpoints[key] for key in keys if key in endpoints), None)
        if other is not None:
            alias = "" if other.p4runtime_addr == switch.p4runtime_addr \
                else f" at {other.p4runtime_addr}"
            errs.add(V.join(path, "p4runtime_addr"),
                     f"{switch.p4runtime_addr} device_id {switch.device_id} is also switch "
                     f"{other.name}{alias}")
        endpoints.update(dict.fromkeys(keys, switch))
        switches[switch.name] = switch
    if errs.items:
        raise ConfigError(errs.items)
    return Config(switches=MappingProxyType(switches), classifier=classifier,
                  active_flows=active_flows)


# --- YAML
# The events come from libyaml when PyYAML has it (yaml.cyaml.CParser: ~4x faster than the
# pure-Python scanner, so a file of MAX_YAML_NODES values is refused in ~0.25 s),
# the nodes from PyYAML's Python composer either way, so that every node passes
# through _StrictLoader.compose_node (CSafeLoader would compose in C, unbounded).
if getattr(yaml, "__with_libyaml__", False):
    _LOADER_BASES: tuple[type, ...] = (yaml.composer.Composer, yaml.cyaml.CParser,
                                       yaml.constructor.SafeConstructor,
                                       yaml.resolver.Resolver)
else:                                                     # pragma: no cover
    _LOADER_BASES = (yaml.SafeLoader,)


class _StrictLoader(*_LOADER_BASES):  # type: ignore[misc]
    """SafeLoader that records duplicate keys instead of keeping the last one, and
    stops at MAX_YAML_DEPTH levels of nesting or MAX_YAML_NODES nodes, before
    anything deeper or bigger is built (PyYAML recurses per level and keeps every
    node). Nodes are counted as the document reads once every alias is expanded:
    an alias costs the nodes of its anchor, so anchors that repeat anchors (a
    "billion laughs", through merge keys or not) stop at MAX_YAML_NODES after
    composing at most that many real nodes. An alias inside its own anchor is
    refused (a config has no cycles)."""

    def __init__(self, stream: str) -> None:
        if _LOADER_BASES[0] is yaml.SafeLoader:           # pragma: no cover
            yaml.SafeLoader.__init__(self, stream)
        else:
            yaml.cyaml.CParser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
        self.duplicates: list[str] = []
        self._depth = 0
        self._nodes = 0                       # the expanded count
        self._weight: dict[int, int] = {}     # id(node) -> its expanded node count
        self._kept: list[yaml.Node] = []      # keeps the ids of _weight valid

    def _limit(self, what: str) -> None:
        raise yaml.composer.ComposerError(None, None, f"{what}: not an mmaqm config",
                                          self.peek_event().start_mark)

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        event = self.peek_event()
        if self._depth >= MAX_YAML_DEPTH:
            self._limit(f"nested deeper than {MAX_YAML_DEPTH} levels")
        if isinstance(event, yaml.AliasEvent):
            node = super().compose_node(parent, index)
            weight = self._weight.get(id(node))
            if weight is None:                # its anchor is still being composed
                raise yaml.composer.ComposerError(
                    None, None, "an alias inside its own anchor (a cycle): not an mmaqm "
                    "config", event.start_mark)
            self._nodes += weight
            if self._nodes > MAX_YAML_NODES:
                raise yaml.composer.ComposerError(
                    None, None, f"more than {MAX_YAML_NODES} values once aliases are "
                    f"expanded: not an mmaqm config", event.start_mark)
            return node
        self._nodes += 1
        if self._nodes > MAX_YAML_NODES:
            self._limit(f"more than {MAX_YAML_NODES} values")
        start = self._nodes
        self._depth += 1
        node = super().compose_node(parent, index)   # an error ends the whole load
        self._depth -= 1
        if event.anchor is not None:          # only an anchored node can be repeated
            self._weight[id(node)] = self._nodes - start + 1
            self._kept.append(node)
        return node


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    """The mapping; a key written twice in it is recorded as a duplicate. Keys that a
    merge key (<<) brings in are not: the mapping's own keys override them (YAML's
    merge), and the merged mapping's own duplicates were checked where it is."""
    own = [key_node for key_node, _ in node.value if key_node.tag != _MERGE_TAG]
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node in own:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:
            continue  # unhashable key: construct_mapping reports it
        if duplicate:
            loader.duplicates.append(f"line {key_node.start_mark.line + 1}: duplicate key "
                                     f"{V.shown(key)}")
            if len(loader.duplicates) > MAX_DUPLICATE_KEYS:
                raise yaml.constructor.ConstructorError(
                    None, None, f"more than {MAX_DUPLICATE_KEYS} duplicate keys",
                    key_node.start_mark)
    return loader.construct_mapping(node, deep=True)


_MERGE_TAG = "tag:yaml.org,2002:merge"
_DECIMAL_INT_RE = re.compile(r"[-+]?(0|[1-9][0-9_]*)")


def _construct_int(loader: _StrictLoader, node: yaml.ScalarNode) -> int | V.NonDecimal:
    """An int below 2^MAX_YAML_INT_BITS: a longer one is no config value, and Python
    cannot even print one of more than 4300 digits (int_max_str_digits). YAML 1.1's
    other forms of an int (base 60 1:00, 0b111111, 0x3f, octal 010) become a
    V.NonDecimal, which every reader refuses with what YAML made of it."""
    text = str(node.value).replace("_", "").lstrip("+-")
    if len(text) > MAX_YAML_INT_BITS + 2:   # binary digits and "0b": longer is >= 2^128
        raise yaml.constructor.ConstructorError(
            None, None, f"integer of {len(text)} digits: too large", node.start_mark)
    value = loader.construct_yaml_int(node)
    if abs(value) >> MAX_YAML_INT_BITS:
        raise yaml.constructor.ConstructorError(
            None, None, f"integer >= 2^{MAX_YAML_INT_BITS}: too large", node.start_mark)
    if not _DECIMAL_INT_RE.fullmatch(str(node.value)):
        return V.NonDecimal(str(node.value), value)
    return value


def _construct_float(loader: _StrictLoader, node: yaml.ScalarNode) -> float | V.NonDecimal:
    """A float; one written in base 60 (1:30.5) becomes a V.NonDecimal."""
    value = loader.construct_yaml_float(node)
    if ":" in str(node.value):
        return V.NonDecimal(str(node.value), value)
    return value


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_StrictLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's error on one line: what, and where (line and column). PyYAML's own
    text spans lines and quotes the file's line, which may hold anything."""
    if isinstance(exc, yaml.reader.ReaderError):
        what = (f"character #x{exc.character:04x}" if isinstance(exc.character, int)
                else f"byte #x{exc.character[0]:02x}" if exc.character else "input")
        return f"offset {exc.position}: unacceptable {what}: {exc.reason}"
    if not isinstance(exc, yaml.MarkedYAMLError):
        return " ".join(str(exc).split())
    parts = [part for part in (exc.context, exc.problem) if part]
    mark = exc.problem_mark or exc.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return where + "; ".join(" ".join(str(part).split()) for part in parts)


def load_yaml(text: str, *, source: str = "<config>") -> object:
    loader = None
    try:
        loader = _StrictLoader(text)     # its reader refuses control characters at once
        loader.name = source             # in the marks of PyYAML's messages
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        raise ConfigError([f"{V.escape(source)}: invalid YAML: {_yaml_problem(exc)}"]) from exc
    except ValueError as exc:          # a scalar PyYAML cannot convert, e.g. 2001-02-30
        raise ConfigError([f"{V.escape(source)}: invalid YAML value: {exc}"]) from exc
    except RecursionError as exc:      # a safety net: MAX_YAML_DEPTH stops nesting first
        raise ConfigError([f"{V.escape(source)}: invalid YAML: nested too deeply"]) from exc
    finally:
        if loader is not None:
            loader.dispose()
    if loader.duplicates:
        raise ConfigError([f"{V.escape(source)}: {message}" for message in loader.duplicates])
    return data


def read_config_text(path: str | Path) -> str:
    """The file's text: at most MAX_CONFIG_BYTES, UTF-8 (V.read_utf8). Raises
    ConfigError naming the cause, OSError if it cannot be read."""
    try:
        return V.read_utf8(path, MAX_CONFIG_BYTES, what="an mmaqm config")
    except V.InputFileError as exc:
        raise ConfigError([str(exc)]) from None


def load_config(path: str | Path) -> Config:
    """Read and validate a YAML config file."""
    return parse_config(load_yaml(read_config_text(path), source=str(path)))


# --- the configuration reference (docs/configuration.md)
@dataclass(frozen=True)
class FieldDoc:
    """One key outside the policies, for the generated reference
    (tools/gen_config_reference.py). path: the dotted field path as errors name it,
    ``<name>`` / ``<port>`` where the user chooses the key, ``[]`` for every item of
    a list; kind: what the value is; unit; allowed: its range in words; default:
    "required", "none" (absent: not used) or the value when absent; doc: one line."""

    path: str
    kind: str
    unit: str
    allowed: str
    default: str
    doc: str


_REQUIRED = "required"
# Every key that parse_config's readers accept outside the policies, in the
# reference's order. Ranges and defaults are formatted from the constants above.
FIELDS: tuple[FieldDoc, ...] = (
    FieldDoc("classifier", "mapping", "", "", "{}",
             "the packet classifier (cbt §3); absent or empty: its defaults"),
    FieldDoc("classifier.tagged_dscp", "list of int", "",
             f"DSCPs 0..63, no duplicates, at most {C.CLASSIFIER_TABLE_SIZE - 1} (the "
             f"classifier table's {C.CLASSIFIER_TABLE_SIZE} entries hold one for TCP too); "
             f"may be []", str(list(DEFAULT_TAGGED_DSCP)),
             "the DSCPs of tagged (multimedia) UDP; 46, 34 are EF, AF41"),
    FieldDoc("active_flows", "mapping", "", "", "{}",
             "D-CBT's active-flow counting (dcbt §3.1); absent or empty: its defaults"),
    FieldDoc("active_flows.expiry_interval_ms", "number", "ms",
             f">= {V.fmt(MIN_EXPIRY_INTERVAL_MS)} (two 2 us flow epochs)",
             V.fmt(DEFAULT_EXPIRY_INTERVAL_MS),
             "a flow is active if a packet of it arrived in the last interval"),
    FieldDoc("active_flows.update_interval_ms", "number", "ms",
             f">= {V.fmt(MIN_LOOP_INTERVAL_MS)}, <= expiry_interval_ms",
             V.fmt(DEFAULT_UPDATE_INTERVAL_MS),
             "how often the controller recomputes the active-flow class shares"),
    FieldDoc("active_flows.max_flows", "int", "flows", f"1..{MAX_MAX_FLOWS}",
             V.fmt(DEFAULT_MAX_FLOWS),
             "flows the controller tracks at most; reports of new flows beyond it are "
             "refused and counted (stats \"controller\")"),
    FieldDoc("switches", "mapping", "", f"1..{MAX_SWITCHES} switches", _REQUIRED,
             "the switches this controller programs, by name"),
    FieldDoc("switches.<name>", "mapping", "",
             "name: 1..64 of A-Z a-z 0-9 _ -", "",
             "one switch (names appear in logs and stats)"),
    FieldDoc("switches.<name>.p4runtime_addr", "string", "",
             "host:port, [v6addr]:port for IPv6; no two switches on one address and "
             "device_id (localhost = 127.0.0.1 = [::1], host names in any case)", _REQUIRED,
             "the switch's P4Runtime server"),
    FieldDoc("switches.<name>.device_id", "int", "",
             f"0..2^{MAX_DEVICE_ID.bit_length()} - 1", V.fmt(DEFAULT_DEVICE_ID),
             "the P4Runtime device id"),
    FieldDoc("switches.<name>.ports", "mapping", "", f"1..{C.NUM_PORTS} ports", _REQUIRED,
             "the switch's ports the controller programs, by port number"),
    FieldDoc("switches.<name>.ports.<port>", "mapping", "", f"port 0..{_MAX_PORT}", "",
             "one port"),
    FieldDoc("switches.<name>.ports.<port>.mac", "MAC string", "",
             "unicast, not all-zero, one port each; quote it (YAML reads some unquoted MACs "
             "as numbers)", _REQUIRED, "the router's own MAC on this port"),
    FieldDoc("switches.<name>.routes", "list", "",
             f"at most {C.ROUTE_TABLE_SIZE} routes (the ipv4_lpm table size; of them at most "
             f"{C.ROUTE6_TABLE_SIZE} IPv6, the ipv6_lpm table size)", "[]",
             "the switch's IPv4 and IPv6 routes (docs/ipv6.md)"),
    FieldDoc("switches.<name>.routes[].prefix", "IPv4 or IPv6 network", "",
             "10.0.1.0/24 or 2001:db8:1::/64; no host bits set, unique in the switch; IPv6 "
             "needs a BMv2 program (the Tofino build has no ipv6_lpm)", _REQUIRED,
             "the destination prefix"),
    FieldDoc("switches.<name>.routes[].port", "int", "",
             "in ports, and the port has a policy (its own or default)", _REQUIRED,
             "the egress port"),
    FieldDoc("switches.<name>.routes[].next_hop_mac", "MAC string", "", "unicast, not all-zero",
             _REQUIRED, "the next hop's MAC (the packet's new destination MAC)"),
    FieldDoc("switches.<name>.policies", "mapping", "",
             f"at most {C.NUM_PORTS + 1} entries: one per port and default", "{}",
             "the AQM policy of each port"),
    FieldDoc("switches.<name>.policies.default", "policy", "", "a policy", "none",
             "the policy of every port in ports without its own entry"),
    FieldDoc("switches.<name>.policies.<port>", "policy", "", "a policy; the port is in ports",
             "", "the port's own policy"),
    FieldDoc("switches.<name>.tls", "mapping", "", "", "none",
             "TLS to the switch's P4Runtime server (docs/controller.md \"TLS\"); absent: "
             "plaintext; the CLI's --ca-cert, --cert, --key, --tls-server-name replace it"),
    FieldDoc("switches.<name>.tls.ca_cert", "file path", "", "an existing PEM file", "none",
             "the CA that signed the switch's certificate (none: the system's roots)"),
    FieldDoc("switches.<name>.tls.cert", "file path", "", "an existing PEM file; with key",
             "none", "this controller's certificate, for a switch that requires client "
             "authentication (mutual TLS)"),
    FieldDoc("switches.<name>.tls.key", "file path", "", "an existing PEM file; with cert",
             "none", "the private key of cert"),
    FieldDoc("switches.<name>.tls.server_name", "string", "", "", "the address's host",
             "the name to verify in the switch's certificate"),
    FieldDoc("switches.<name>.occupancy_audit_interval_s", "number", "s",
             f"0 (off) or {V.fmt(MIN_OCCUPANCY_AUDIT_INTERVAL_S)}.."
             f"{V.fmt(MAX_OCCUPANCY_AUDIT_INTERVAL_S)}; far above the longest queueing delay",
             V.fmt(DEFAULT_OCCUPANCY_AUDIT_INTERVAL_S),
             "Tofino only: how often the controller clears a port's occupancy counts "
             "left high on an idle port, reading and clearing them over BfRt, so a Tofino "
             "switch with the audit on needs bfrt_address (docs/tofino.md \"Counts that "
             "heal\"); BMv2's counts are exact and never audited"),
    FieldDoc("switches.<name>.bfrt_address", "string", "",
             "host:port, [v6addr]:port for IPv6", "none",
             "Tofino only: the switch's BfRt gRPC server (bf_switchd's, port 50052 by "
             "default), through which the controller sets the time constants of the "
             "averages (Lpf filters), which Stratum's P4Runtime cannot write, and reads "
             "and clears the occupancy registers (the audit); required on a Tofino build "
             "whose policies have averages or whose occupancy audit is on (docs/tofino.md "
             "\"The averages' time constants\", \"Counts that heal\")"),
    FieldDoc("switches.<name>.bfd", "mapping", "", "", "none",
             "C-UPTA's Bottleneck Fairshare Discovery (upta §5.3); absent: no BFD"),
    FieldDoc("switches.<name>.bfd.router_addr", "IPv4 address", "", "", _REQUIRED,
             "this router's own address: probes to it are answered, reports to it accepted"),
    FieldDoc("switches.<name>.bfd.edge_ports", "list of int", "", "ports in ports", "[]",
             "the ports facing hosts or other domains"),
    FieldDoc("switches.<name>.bfd.cpu_port", "int", "", f"1..{_MAX_PORT}, not in ports", "none",
             "BMv2's --cpu-port, where PacketOut probes enter"),
    FieldDoc("switches.<name>.bfd.paths", "list", "", f"at most {C.BFD_PATHS} paths", "[]",
             "this router's BFD paths as ingress edge"),
    FieldDoc("switches.<name>.bfd.paths[].id", "int", "", f"0..{C.BFD_PATHS - 1}, unique",
             _REQUIRED, "the path's id"),
    FieldDoc("switches.<name>.bfd.paths[].port", "int", "", "in ports", _REQUIRED,
             "the port the path leaves by"),
    FieldDoc("switches.<name>.bfd.paths[].egress_addr", "IPv4 address", "", "", _REQUIRED,
             "the router_addr of the path's egress edge router"),
    FieldDoc("switches.<name>.bfd.paths[].prefixes", "list of IPv4 network", "",
             f"at most {C.BFD_PATHS}", "[]", "the destinations whose packets take the path"),
)

# The keys every policy has, whatever its algorithm (_read_policy reads them).
COMMON_POLICY_PARAMS: tuple[A.Param, ...] = (
    A.Param("algorithm", "choice", "", "the port's AQM algorithm; its plug-in's keys follow",
            A.REQUIRED, choices=tuple(A.REGISTRY)),
    A.Param("queue_limit_pkts", "int", "packets", "the P4 queue limit: an arriving packet "
            "is dropped when the port's queue holds this many (after the algorithm's own "
            "tests)", DEFAULT_QUEUE_LIMIT_PKTS, lo=1, hi=MAX_QUEUE_LIMIT_PKTS,
            note=f"averages are bit<32> packets * 2^{C.AVG_FRAC_BITS}"),
)
