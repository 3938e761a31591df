"""Topology files: load and validate them, derive addresses, routes and the controller config.

A topology file is JSON, close to p4lang/tutorials' ``topology.json`` (see
topologies/README.md "Topology files" for every field)::

    {"name": "dcbt-dumbbell",
     "hosts": {"tcp1": {}, "tcp2": {"ip": "10.0.9.1/24"}},
     "switches": {"r1": {}, "r2": {}},
     "links": [["tcp1", "r1", 5, 25], ["r1-p3", "r2", 20, 25], ["tcp2", "r2", 5, 25]],
     "bottleneck": {"from": "r1", "to": "r2", "queue_limit_pkts": 60}}

Links are ``[a, b, delay_ms, rate_mbps]`` (the last two optional); a switch
end is ``"r1"`` (next free port) or ``"r1-p3"`` (port 3). :func:`load_topology`
returns frozen dataclasses; every problem is reported with its field path,
e.g. ``links[3].rate_mbps: must be > 0, got 0``, all of them in one
:class:`TopologyError`, before anything is created (the readers and messages
are the controller config's: :mod:`mmaqm.validation`). Unknown keys are errors.

Nothing here touches the system: :mod:`mmaqm_exp.network` brings a topology
up. :func:`controller_config` turns a topology plus an AQM policy into the
mmaqm controller's config (schema: control-plane/mmaqm/config.py).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mmaqm import validation as V

# ------------------------------------------------------------------ constants
HOST_IFNAME = "eth0"                 # the one interface of every host namespace
MTU_BYTES = 1500
GRPC_PORT_BASE = 9559                # switch i (file order, from 0): 127.0.0.1:GRPC_PORT_BASE+i
THRIFT_PORT_BASE = 9090              # ... and Thrift port THRIFT_PORT_BASE+i
DEVICE_ID = 1                        # simple_switch_grpc --device-id = controller device_id
DEFAULT_PACKET_BYTES = 1000          # dcbt §5: 1 KB packets, "all ... the same size"
MIN_PACKET_BYTES = 64
DEFAULT_QUEUE_LIMIT_PKTS = 64        # mmaqm.config default (BMv2's default queue depth too)
MAX_QUEUE_LIMIT_PKTS = 65535         # mmaqm.config.MAX_QUEUE_LIMIT_PKTS
OTHER_PORT_QUEUE_LIMIT_PKTS = 1000   # DROP_TAIL limit of every port but the bottleneck
TM_DEPTH_MARGIN_PKTS = 64            # BMv2 depth = P4 limit + this: only P4 drops (docs/design.md §1.3)
MAX_SWITCH_PORT = 63                 # NUM_PORTS - 1 in p4src/shared/defines.p4 (a test checks)
MIN_SWITCH_PORT = 1                  # port 0 is where v1model sends undecided packets: never used
MAX_TOPOLOGY_BYTES = 1 << 20          # a topology is a few kB
MAX_NAME_LEN = 10                    # "<switch>-p<port>" must fit Linux's 15-character IFNAMSIZ
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
SWITCH_PORT_RE = re.compile(r"^(?P<switch>[A-Za-z][A-Za-z0-9_]*)-p(?P<port>[0-9]+)$")
# Automatic addresses: the k-th host without "ip" gets 10.0.k.1/24 (k = 1, 2, ... skipping
# subnets given explicitly), gateway 10.0.k.254; a host's MAC is 02:00 + its IPv4 address.
AUTO_SUBNET_FMT = "10.0.{k}.0/24"
AUTO_SUBNET_MAX_K = 255
# A dual-stack run's IPv6 addresses (Host.ip6, ipv6_of): the documentation prefix
# (RFC 3849), one /64 per host link below it
IPV6_SITE_PREFIX = "2001:db8::/32"
IPV6_HOST_PREFIXLEN = 64
ROUTER_MAC_FMT = "02:01:00:00:{switch:02x}:{port:02x}"   # switch index + 1, port number

_TOP_KEYS = ("name", "notes", "hosts", "switches", "links", "bottleneck", "shaped")
_HOST_KEYS = ("ip", "gateway", "mac")
_SWITCH_KEYS: tuple[str, ...] = ()    # a switch body is {}: no settings
_LINK_FIELDS = ("a", "b", "delay_ms", "rate_mbps")
_BOTTLENECK_KEYS = ("from", "to", "queue_limit_pkts", "packet_bytes")
_SHAPED_KEYS = ("from", "to", "queue_limit_pkts")


class TopologyError(ValueError):
    """Invalid topology. ``errors`` lists every problem as "<field path>: <message>"."""

    def __init__(self, errors: list[str], source: str = "<topology>") -> None:
        self.errors = list(errors)
        self.source = source
        super().__init__(f"{source}: invalid topology:\n  " + "\n  ".join(self.errors))


# --------------------------------------------------------------- result types
@dataclass(frozen=True)
class Host:
    """A host: one namespace with one interface (HOST_IFNAME) linked to one switch port."""

    name: str
    index: int                # file order, from 0
    ip: str                   # "10.0.1.1"
    prefixlen: int
    gateway_ip: str           # the router's address on this link (default route, static ARP)
    mac: str                  # lower case
    switch: str
    switch_port: int
    link: int                 # index into Topology.links

    @property
    def subnet(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Interface(f"{self.ip}/{self.prefixlen}").network

    @property
    def cidr(self) -> str:
        return f"{self.ip}/{self.prefixlen}"

    # IPv6 (a dual-stack run only, Network(ipv6=True)): derived from the IPv4 ones,
    # ipv6_of(); the host's link is one /64 of IPV6_SITE_PREFIX
    @property
    def subnet6(self) -> ipaddress.IPv6Network:
        return ipaddress.IPv6Network(
            f"{ipv6_of(self.subnet.network_address, self.subnet)}/{IPV6_HOST_PREFIXLEN}")

    @property
    def ip6(self) -> str:
        return str(ipv6_of(ipaddress.IPv4Address(self.ip), self.subnet))

    @property
    def gateway_ip6(self) -> str:
        return str(ipv6_of(ipaddress.IPv4Address(self.gateway_ip), self.subnet))


def ipv6_of(addr: ipaddress.IPv4Address, subnet: ipaddress.IPv4Network) -> ipaddress.IPv6Address:
    """The IPv6 address of an IPv4 address on a host link: the /64 is IPV6_SITE_PREFIX
    followed by the 32 bits of the link's IPv4 network address, the interface id the
    address's offset in that network (10.0.1.1 on 10.0.1.0/24 -> 2001:db8:a00:100::1,
    its gateway 10.0.1.254 -> 2001:db8:a00:100::fe). Distinct IPv4 links give distinct
    /64s; documentation addresses (RFC 3849)."""
    site = int(ipaddress.IPv6Network(IPV6_SITE_PREFIX).network_address)
    return ipaddress.IPv6Address(site | (int(subnet.network_address) << 64)
                                 | (int(addr) - int(subnet.network_address)))


@dataclass(frozen=True)
class Port:
    """One switch port: a veth end named ``ifname`` in the switch namespace."""

    switch: str
    number: int
    mac: str                  # the router's MAC on this port
    ifname: str               # "r1-p3"
    peer: str                 # host or switch at the other end
    peer_port: int | None     # None when the peer is a host
    peer_mac: str             # host MAC or the peer router port's MAC
    link: int


@dataclass(frozen=True)
class Switch:
    name: str
    index: int                # file order, from 0: selects the gRPC and Thrift ports
    ports: Mapping[int, Port]


@dataclass(frozen=True)
class Link:
    index: int
    a: str
    a_port: int | None        # None for a host end
    b: str
    b_port: int | None
    delay_ms: float           # one-way propagation delay, both directions
    rate_mbps: float | None   # None: not stated (only the bottleneck's is enforced)


@dataclass(frozen=True)
class Bottleneck:
    """The one rate-limited, AQM-managed egress queue (dcbt §5: r1 -> r2)."""

    switch: str
    port: int
    to_switch: str
    link: int
    rate_mbps: float
    delay_ms: float
    queue_limit_pkts: int
    packet_bytes: int

    @property
    def rate_pps(self) -> int:
        """BMv2 queue rate: BMv2 meters packets, not bytes, so rate = bits/s / (8 * packet size)."""
        return max(1, round(self.rate_mbps * 1e6 / (8 * self.packet_bytes)))


@dataclass(frozen=True)
class Topology:
    name: str
    notes: tuple[str, ...]
    hosts: Mapping[str, Host]
    switches: Mapping[str, Switch]
    links: tuple[Link, ...]
    bottleneck: Bottleneck
    # (switch, destination host) -> egress port on a shortest path (hop count, file order)
    routes: Mapping[tuple[str, str], int]
    # Every rate-limited link direction: the bottleneck first, then the "shaped" list in
    # file order (a chain of congested links, upta Fig. 1). Each runs the policy under study.
    shaped: tuple[Bottleneck, ...] = ()

    def shaped_port(self, switch: str, port: int) -> Bottleneck | None:
        for s in self.shaped:
            if (s.switch, s.port) == (switch, port):
                return s
        return None

    def egress_port(self, switch: str, dst_host: str) -> int:
        return self.routes[(switch, dst_host)]

    def path(self, src_host: str, dst_host: str) -> tuple[int, ...]:
        """Link indices a packet from src_host to dst_host crosses, in order."""
        if src_host == dst_host:
            return ()
        src = self.hosts[src_host]
        links = [src.link]
        node = src.switch
        while True:
            port = self.switches[node].ports[self.routes[(node, dst_host)]]
            links.append(port.link)
            if port.peer == dst_host:
                return tuple(links)
            node = port.peer

    def switch_hops(self, src_host: str, dst_host: str) -> tuple[tuple[str, int], ...]:
        """(switch, egress port) of every switch a packet from src_host to dst_host
        crosses, in order: where its AQM counts it (the first is src_host's switch)."""
        hops: list[tuple[str, int]] = []
        node = self.hosts[src_host].switch
        while src_host != dst_host:
            number = self.routes[(node, dst_host)]
            hops.append((node, number))
            peer = self.switches[node].ports[number].peer
            if peer == dst_host:
                break
            node = peer
        return tuple(hops)

    def one_way_delay_ms(self, src_host: str, dst_host: str) -> float:
        """Sum of the link delays along the path (no queueing, no processing)."""
        return sum(self.links[i].delay_ms for i in self.path(src_host, dst_host))

    def rtt_ms(self, a: str, b: str) -> float:
        return self.one_way_delay_ms(a, b) + self.one_way_delay_ms(b, a)


def tm_queue_depth_pkts(queue_limit_pkts: int) -> int:
    """BMv2 traffic-manager depth for a port whose P4 queue limit is queue_limit_pkts."""
    return queue_limit_pkts + TM_DEPTH_MARGIN_PKTS


# ------------------------------------------------------------------- loading
def load_topology(path: str | Path) -> Topology:
    """Read and validate a topology JSON file; raise TopologyError listing every problem."""
    path = Path(path)
    try:
        text = V.read_utf8(path, MAX_TOPOLOGY_BYTES, what="a topology")
    except OSError as exc:
        raise TopologyError([f"cannot read: {exc.strerror}"], str(path)) from exc
    except V.InputFileError as exc:         # a FIFO, a device, too large, not UTF-8
        raise TopologyError([str(exc)], str(path)) from exc
    return parse_topology(load_json(text, source=str(path)), source=str(path),
                          default_name=path.stem)


def load_json(text: str, *, source: str = "<topology>") -> object:
    """json.loads that reports duplicate keys (json keeps the last one silently)."""
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                duplicates.append(f"duplicate key {key!r}")
            seen[key] = value
        return seen

    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise TopologyError([f"invalid JSON: {exc}"], source) from exc
    if duplicates:
        raise TopologyError(duplicates, source)
    return data


def _name(name: str, path: str, errs: V.Errors) -> bool:
    if not NAME_RE.match(name) or len(name) > MAX_NAME_LEN:
        errs.add(path, f"name must match {NAME_RE.pattern} and have at most {MAX_NAME_LEN} "
                       f"characters (it names Linux namespaces and interfaces), got {name!r}")
        return False
    return True


def _mac_of_ip(ip: ipaddress.IPv4Address) -> str:
    return "02:00:" + ":".join(f"{b:02x}" for b in ip.packed)


@dataclass
class _HostSpec:
    name: str
    index: int
    iface: ipaddress.IPv4Interface | None = None
    gateway: ipaddress.IPv4Address | None = None
    mac: str | None = None


def _parse_host(name: str, index: int, raw: object, errs: V.Errors) -> _HostSpec:
    path = f"hosts.{name}"
    spec = _HostSpec(name, index)
    body = V.mapping(raw, path, errs, allowed=_HOST_KEYS)
    if body is None:
        return spec
    if "ip" in body:
        value = body["ip"]
        try:
            if not isinstance(value, str) or "/" not in value:
                raise ValueError
            iface = ipaddress.IPv4Interface(value)
        except ValueError:
            errs.add(f"{path}.ip", f"must be an IPv4 address with prefix length like "
                                   f"\"10.0.1.1/24\", got {errs.describe(value)}")
        else:
            net = iface.network
            if not 8 <= net.prefixlen <= 30:
                errs.add(f"{path}.ip", f"prefix length must be in 8..30, got {net.prefixlen}")
            elif iface.ip in (net.network_address, net.broadcast_address):
                errs.add(f"{path}.ip", f"{iface.ip} is the network or broadcast address of {net}")
            elif not iface.ip.is_private or iface.ip.is_loopback:
                errs.add(f"{path}.ip", f"must be a private (RFC 1918) address, got {iface.ip}")
            else:
                spec.iface = iface
    if "gateway" in body:
        value = body["gateway"]
        if "ip" not in body:
            errs.add(f"{path}.gateway", "needs an explicit ip")
        else:
            try:
                gateway = ipaddress.IPv4Address(value) if isinstance(value, str) else None
            except ValueError:
                gateway = None
            if gateway is None:
                errs.add(f"{path}.gateway", f"must be an IPv4 address, got {errs.describe(value)}")
            elif spec.iface is not None:
                net = spec.iface.network
                if gateway not in net or gateway in (net.network_address, net.broadcast_address):
                    errs.add(f"{path}.gateway", f"must be a host address in {net}, got {gateway}")
                elif gateway == spec.iface.ip:
                    errs.add(f"{path}.gateway", f"must differ from the host's own address {gateway}")
                else:
                    spec.gateway = gateway
    if "mac" in body:
        spec.mac = V.mac(body["mac"], f"{path}.mac", errs)
    return spec


@dataclass
class _End:
    node: str
    port: int | None      # explicit port, filled in for switches by auto assignment


def _parse_end(value: object, path: str, hosts: Mapping[str, Any], switches: Mapping[str, Any],
               errs: V.Errors) -> _End | None:
    if not isinstance(value, str):
        errs.add(path, f"must be a host, a switch or \"<switch>-p<port>\", "
                       f"got {errs.describe(value)}")
        return None
    if value in hosts or value in switches:
        return _End(value, None)
    m = SWITCH_PORT_RE.match(value)
    if m:
        switch = m.group("switch")
        if switch in hosts:
            errs.add(path, f"{value!r}: a host has no port numbers; write {switch!r}")
            return None
        if switch not in switches:
            errs.add(path, f"unknown switch {switch!r} in {value!r}")
            return None
        port = int(m.group("port"))
        if not MIN_SWITCH_PORT <= port <= MAX_SWITCH_PORT:
            errs.add(path, f"port must be in {MIN_SWITCH_PORT}..{MAX_SWITCH_PORT}, got {port}")
            return None
        return _End(switch, port)
    errs.add(path, f"unknown node {value!r} (not in hosts or switches)")
    return None


def parse_topology(data: object, *, source: str = "<topology>",
                   default_name: str = "topology") -> Topology:
    """Validate a topology tree (as loaded from JSON); raise TopologyError listing every problem."""
    errs = V.Errors(syntax="json")
    top = V.mapping(data, "", errs, allowed=_TOP_KEYS)
    if top is None:
        raise TopologyError(errs.items, source)

    name = V.string(top.get("name", default_name), "name", errs, non_empty=True) or default_name
    notes_raw = top.get("notes", [])
    notes: tuple[str, ...] = ()
    if isinstance(notes_raw, str):
        notes = (notes_raw,)
    elif isinstance(notes_raw, list) and all(isinstance(n, str) for n in notes_raw):
        notes = tuple(notes_raw)
    else:
        errs.add("notes", f"must be a string or a list of strings, got {errs.describe(notes_raw)}")

    # --- switches and hosts (names first: links refer to them)
    switch_names: dict[str, int] = {}
    switches_raw = V.mapping(V.require(top, "switches", "", errs), "switches", errs,
                             at_least_one="switch")
    for sname, sraw in (switches_raw or {}).items():
        V.mapping(sraw, f"switches.{sname}", errs, allowed=_SWITCH_KEYS)
        if _name(sname, f"switches.{sname}", errs):
            switch_names[sname] = len(switch_names)

    specs: dict[str, _HostSpec] = {}
    hosts_raw = V.mapping(V.require(top, "hosts", "", errs), "hosts", errs, at_least_one="host")
    for hname, hraw in (hosts_raw or {}).items():
        ok = _name(hname, f"hosts.{hname}", errs)
        if hname in switch_names:
            errs.add(f"hosts.{hname}", "name is also a switch")
            ok = False
        spec = _parse_host(hname, len(specs), hraw, errs)
        if ok:
            specs[hname] = spec

    # --- links
    links_raw = V.sequence(V.require(top, "links", "", errs), "links", errs,
                           at_least_one="link") or []
    ends: list[tuple[int, _End, _End, float, float | None]] = []
    host_links: dict[str, list[int]] = {h: [] for h in specs}
    used_ports: dict[tuple[str, int], int] = {}
    switch_pairs: dict[frozenset[str], int] = {}
    linked_pairs: set[frozenset[str]] = set()      # also from links with other errors
    for i, item in enumerate(links_raw):
        path = V.index("links", i)
        if not isinstance(item, list) or not 2 <= len(item) <= 4:
            size = f" of {len(item)}" if isinstance(item, list) else ""
            errs.add(path, f"must be a list [a, b, delay_ms, rate_mbps] (2 to 4 items), "
                           f"got {errs.describe(item)}{size}")
            continue
        a = _parse_end(item[0], f"{path}.a", specs, switch_names, errs)
        b = _parse_end(item[1], f"{path}.b", specs, switch_names, errs)
        delay = V.number(item[2], f"{path}.delay_ms", errs, ge=0) if len(item) > 2 else 0
        rate: float | None = None
        if len(item) > 3 and item[3] is not None:
            rate = V.number(item[3], f"{path}.rate_mbps", errs, gt=0)
        if a is None or b is None:
            continue
        linked_pairs.add(frozenset((a.node, b.node)))
        if a.node == b.node:
            errs.add(path, f"links {a.node!r} to itself")
            continue
        if a.node in specs and b.node in specs:
            errs.add(path, f"links two hosts ({a.node}, {b.node}); a host links to a switch")
            continue
        for end in (a, b):
            if end.node in specs:
                host_links[end.node].append(i)   # counted even if delay/rate are bad
        if delay is None or (len(item) > 3 and item[3] is not None and rate is None):
            continue
        bad = False
        for field_name, end in (("a", a), ("b", b)):
            if end.node not in specs and end.port is not None:
                key = (end.node, end.port)
                if key in used_ports:
                    errs.add(f"{path}.{field_name}", f"port {end.node}-p{end.port} is also used by "
                                                     f"links[{used_ports[key]}]")
                    bad = True
                else:
                    used_ports[key] = i
        if a.node in switch_names and b.node in switch_names:
            pair = frozenset((a.node, b.node))
            if pair in switch_pairs:
                errs.add(path, f"second link between {a.node} and {b.node} (also "
                               f"links[{switch_pairs[pair]}]); at most one link joins two switches")
                bad = True
            else:
                switch_pairs[pair] = i
        if not bad:
            ends.append((i, a, b, float(delay), None if rate is None else float(rate)))
    for hname, idx in host_links.items():
        if not idx and links_raw:
            errs.add(f"hosts.{hname}", "has no link (every host needs exactly one link to a switch)")
        elif len(idx) > 1:
            errs.add(f"hosts.{hname}",
                     f"has {len(idx)} links (links{idx}); every host needs exactly one")
    linked_switches = {e.node for _, a, b, _, _ in ends for e in (a, b) if e.node in switch_names}
    for sname in switch_names:
        if links_raw and sname not in linked_switches:
            errs.add(f"switches.{sname}", "has no link")

    # --- automatic ports: the lowest free number, in link order
    if not errs.items:
        for i, a, b, _, _ in ends:
            for field_name, end in (("a", a), ("b", b)):
                if end.node in switch_names and end.port is None:
                    port = MIN_SWITCH_PORT
                    while (end.node, port) in used_ports:
                        port += 1
                    if port > MAX_SWITCH_PORT:
                        errs.add(f"links[{i}].{field_name}", f"switch {end.node} has no free port "
                                                             f"left (max {MAX_SWITCH_PORT})")
                        break
                    end.port = port
                    used_ports[(end.node, port)] = i
                    ifname = f"{end.node}-p{port}"
                    assert len(ifname) <= 15, ifname  # MAX_NAME_LEN + "-p" + 2 digits

    # --- addresses
    hosts: dict[str, Host] = {}
    if not errs.items:
        _assign_addresses(specs, errs)
    if not errs.items:
        links = tuple(Link(i, a.node, a.port if a.node in switch_names else None,
                           b.node, b.port if b.node in switch_names else None, delay, rate)
                      for i, a, b, delay, rate in ends)
        for spec in specs.values():
            link = links[host_links[spec.name][0]]
            sw, port = (link.b, link.b_port) if link.a == spec.name else (link.a, link.a_port)
            assert spec.iface is not None and spec.gateway is not None and spec.mac is not None
            assert port is not None
            hosts[spec.name] = Host(spec.name, spec.index, str(spec.iface.ip),
                                    spec.iface.network.prefixlen, str(spec.gateway), spec.mac,
                                    sw, port, link.index)
        switches = _build_switches(switch_names, links, hosts)
        owner: dict[str, str] = {p.mac: f"router port {p.ifname}"
                                 for s in switches.values() for p in s.ports.values()}
        for h in hosts.values():
            if h.mac in owner:
                errs.add(f"hosts.{h.name}.mac", f"{h.mac} is also the MAC of {owner[h.mac]}")
            owner[h.mac] = f"hosts.{h.name}"

    # --- bottleneck
    bottleneck: Bottleneck | None = None
    braw = V.require(top, "bottleneck", "", errs)
    if isinstance(braw, list):
        errs.add("bottleneck", "must be one object {\"from\": switch, \"to\": switch}: exactly "
                               "one link direction is the bottleneck")
    else:
        body = V.mapping(braw, "bottleneck", errs, allowed=_BOTTLENECK_KEYS)
        if body is not None:
            bottleneck = _parse_bottleneck(body, switch_names, ends, linked_pairs, errs)

    # --- further rate-limited link directions (optional)
    shaped: list[Bottleneck] = []
    if "shaped" in top:
        items = V.sequence(top["shaped"], "shaped", errs) or []
        seen: dict[tuple[str, str], str] = {}
        if bottleneck is not None:
            seen[(bottleneck.switch, bottleneck.to_switch)] = "bottleneck"
        for i, sraw in enumerate(items):
            spath = V.index("shaped", i)
            body = V.mapping(sraw, spath, errs, allowed=_SHAPED_KEYS)
            if body is None or bottleneck is None:
                continue
            one = _parse_bottleneck(
                {"queue_limit_pkts": bottleneck.queue_limit_pkts, **body,
                 "packet_bytes": bottleneck.packet_bytes}, switch_names, ends, linked_pairs,
                errs, path=spath)
            if one is None:
                continue
            key = (one.switch, one.to_switch)
            if key in seen:
                errs.add(spath, f"{one.switch} -> {one.to_switch} is already {seen[key]}")
                continue
            seen[key] = spath
            shaped.append(one)

    # --- routes and connectivity
    routes: dict[tuple[str, str], int] = {}
    if not errs.items:
        routes = _compute_routes(switches, hosts, errs)
    if errs.items:
        raise TopologyError(errs.items, source)
    assert bottleneck is not None
    return Topology(name=name, notes=notes, hosts=MappingProxyType(hosts),
                    switches=MappingProxyType(switches), links=links, bottleneck=bottleneck,
                    routes=MappingProxyType(routes), shaped=(bottleneck, *shaped))


def _assign_addresses(specs: dict[str, _HostSpec], errs: V.Errors) -> None:
    """Explicit subnets must not overlap (one host per link subnet: the P4 router answers no ARP,
    so a host must never think another host is on its link); the others get 10.0.k.0/24."""
    taken: list[tuple[ipaddress.IPv4Network, str]] = []
    for spec in specs.values():
        if spec.iface is None:
            continue
        net = spec.iface.network
        for other, who in taken:
            if net.overlaps(other):
                errs.add(f"hosts.{spec.name}.ip", f"subnet {net} overlaps hosts.{who}'s {other} "
                                                  f"(every host link is its own subnet)")
        taken.append((net, spec.name))
    k = 1
    for spec in specs.values():
        if spec.iface is not None:
            continue
        while True:
            if k > AUTO_SUBNET_MAX_K:
                errs.add(f"hosts.{spec.name}", "no free automatic subnet left; give an ip")
                return
            net = ipaddress.IPv4Network(AUTO_SUBNET_FMT.format(k=k))
            k += 1
            if not any(net.overlaps(other) for other, _ in taken):
                break
        spec.iface = ipaddress.IPv4Interface(f"{net.network_address + 1}/{net.prefixlen}")
        taken.append((net, spec.name))
    for spec in specs.values():
        assert spec.iface is not None
        if spec.gateway is None:
            net = spec.iface.network
            last = net.broadcast_address - 1
            spec.gateway = last if last != spec.iface.ip else net.network_address + 1
        if spec.mac is None:
            spec.mac = _mac_of_ip(spec.iface.ip)


def _build_switches(switch_names: dict[str, int], links: tuple[Link, ...],
                    hosts: dict[str, Host]) -> dict[str, Switch]:
    def router_mac(switch: str, port: int) -> str:
        return ROUTER_MAC_FMT.format(switch=switch_names[switch] + 1, port=port)

    ports: dict[str, dict[int, Port]] = {s: {} for s in switch_names}
    for link in links:
        for node, port, peer, peer_port in ((link.a, link.a_port, link.b, link.b_port),
                                            (link.b, link.b_port, link.a, link.a_port)):
            if node not in switch_names or port is None:
                continue
            peer_mac = hosts[peer].mac if peer in hosts else router_mac(peer, peer_port or 0)
            ports[node][port] = Port(node, port, router_mac(node, port), f"{node}-p{port}",
                                     peer, peer_port, peer_mac, link.index)
    return {s: Switch(s, i, MappingProxyType(dict(sorted(ports[s].items()))))
            for s, i in switch_names.items()}


def _parse_bottleneck(body: dict, switch_names: Mapping[str, int],
                      ends: list[tuple[int, _End, _End, float, float | None]],
                      linked_pairs: set[frozenset[str]], errs: V.Errors,
                      path: str = "bottleneck") -> Bottleneck | None:
    names = {}
    for key in ("from", "to"):
        value = V.require(body, key, path, errs, note="a switch name")
        if value is V.MISSING:
            continue
        if not isinstance(value, str) or value not in switch_names:
            errs.add(f"{path}.{key}", f"must be a switch name, got {errs.describe(value)}")
        else:
            names[key] = value
    limit = V.integer(body.get("queue_limit_pkts", DEFAULT_QUEUE_LIMIT_PKTS),
                      f"{path}.queue_limit_pkts", errs, lo=1, hi=MAX_QUEUE_LIMIT_PKTS)
    size = V.integer(body.get("packet_bytes", DEFAULT_PACKET_BYTES), f"{path}.packet_bytes",
                     errs, lo=MIN_PACKET_BYTES, hi=MTU_BYTES)
    if len(names) < 2 or limit is None or size is None:
        return None
    src, dst = names["from"], names["to"]
    if src == dst:
        errs.add(f"{path}.to", f"must differ from {path}.from ({src})")
        return None
    for i, a, b, delay, rate in ends:
        if {a.node, b.node} == {src, dst}:
            if rate is None:
                errs.add(f"links[{i}].rate_mbps", "required: this link is the bottleneck"
                         if path == "bottleneck" else f"required: this link is rate-limited "
                                                      f"({path})")
                return None
            port = a.port if a.node == src else b.port
            if port is None:     # ports are assigned only when the links are valid
                return None
            return Bottleneck(src, port, dst, i, rate, delay, limit, size)
    if frozenset((src, dst)) not in linked_pairs:     # else that link's own error says why
        errs.add(path, f"no link joins {src} and {dst}")
    return None


def _compute_routes(switches: Mapping[str, Switch], hosts: Mapping[str, Host],
                    errs: V.Errors) -> dict[tuple[str, str], int]:
    """BFS from every destination host: each switch's egress port toward it (fewest hops,
    ties broken by port order)."""
    routes: dict[tuple[str, str], int] = {}
    for dst, h in hosts.items():
        routes[(h.switch, dst)] = h.switch_port
        queue = deque([h.switch])
        seen = {h.switch}
        while queue:
            node = queue.popleft()
            for port in switches[node].ports.values():
                nxt = port.peer
                if nxt in switches and nxt not in seen and port.peer_port is not None:
                    seen.add(nxt)
                    routes[(nxt, dst)] = port.peer_port    # nxt reaches node through its peer_port
                    queue.append(nxt)
        for src, s in hosts.items():
            if s.switch not in seen:
                errs.add(f"hosts.{src}", f"cannot reach hosts.{dst} (the switches are not connected)")
    return routes


# --------------------------------------------------------- controller config
# BMv2's --cpu-port for C-UPTA runs (P4Runtime PacketOut probes enter there): a port
# number below NUM_PORTS (upta_events count per ingress port) that no topology uses.
BFD_CPU_PORT = 63


def uses_bfd(policy: Mapping[str, Any]) -> bool:
    """C-UPTA needs BFD: router addresses, edge ports, the CPU port, probes."""
    return policy.get("algorithm") == "UPTA" and policy.get("upta_mode") == "C"


def controller_config(topo: Topology, policy: Mapping[str, Any], *,
                      ipv6: bool = False,
                      p4runtime_port_base: int = GRPC_PORT_BASE, device_id: int = DEVICE_ID,
                      other_queue_limit_pkts: int = OTHER_PORT_QUEUE_LIMIT_PKTS,
                      classifier: Mapping[str, Any] | None = None,
                      active_flows: Mapping[str, Any] | None = None,
                      validate: bool = True) -> dict[str, Any]:
    """The mmaqm controller config (control-plane/mmaqm/config.py) for topo, as a dict.

    ``policy`` goes on the bottleneck egress port and on every other rate-limited
    (``shaped``) port; its ``queue_limit_pkts`` defaults to that port's;
    ``bandwidth_pps: link`` (RED idle-time decay) becomes the port's rate_pps and
    ``capacity_mbps: link`` (UPTA's C) its rate_mbps. Every other port gets DROP_TAIL with other_queue_limit_pkts. Routes: one
    /32 per host, next hop = the host's MAC on its own port, else the next router's port
    MAC; with ipv6, also one IPv6 /64 per host link (Host.subnet6) with the same port
    and next hop (static neighbours, docs/ipv6.md). A C-UPTA policy (``uses_bfd``) adds each switch's ``bfd`` section from
    ``bfd_plan`` (router address, edge ports, BFD_CPU_PORT, BFD paths) and routes to
    the other routers' addresses. With validate, ``mmaqm.config.parse_config`` checks the result (raises
    mmaqm.config.ConfigError). The BMv2 queue depths and the bottleneck rate are not
    controller settings: the runner sets them (tm_queue_depth_pkts(), Bottleneck.rate_pps).
    """
    def port_policy(bn: Bottleneck) -> dict[str, Any]:
        out = {"queue_limit_pkts": bn.queue_limit_pkts, **policy}
        if out.get("bandwidth_pps") == "link":
            # RED's idle-time decay needs the link's packet rate (tc-red's bandwidth): a
            # policy file asks for the bottleneck's with `bandwidth_pps: link`.
            out["bandwidth_pps"] = bn.rate_pps
        if out.get("capacity_mbps") == "link":
            # UPTA's C (upta eqs. 18-19): the port's own link rate
            out["capacity_mbps"] = bn.rate_mbps
        return out

    other = {"algorithm": "DROP_TAIL", "queue_limit_pkts": other_queue_limit_pkts}
    plans = bfd_plan(topo) if uses_bfd(policy) else None
    switches: dict[str, Any] = {}
    for sw in topo.switches.values():
        routes = []
        for dst, h in topo.hosts.items():
            port = sw.ports[topo.egress_port(sw.name, dst)]
            routes.append({"prefix": f"{h.ip}/32", "port": port.number,
                           "next_hop_mac": port.peer_mac})
        if ipv6:
            for dst, h in topo.hosts.items():
                port = sw.ports[topo.egress_port(sw.name, dst)]
                routes.append({"prefix": str(h.subnet6), "port": port.number,
                               "next_hop_mac": port.peer_mac})
        policies: dict[Any, Any] = {"default": dict(other)}
        for shaped in topo.shaped or (topo.bottleneck,):
            if sw.name == shaped.switch:
                policies[shaped.port] = port_policy(shaped)
        switches[sw.name] = {
            "p4runtime_addr": f"127.0.0.1:{p4runtime_port_base + sw.index}",
            "device_id": device_id,
            "ports": {p.number: {"mac": p.mac} for p in sw.ports.values()},
            "routes": routes,
            "policies": policies,
        }
        if plans is not None:    # C-UPTA: BFD settings and routes to the router addresses
            plan = plans[sw.name]
            by_number = {p.number: p for p in sw.ports.values()}
            routes += [{"prefix": prefix, "port": port, "next_hop_mac": by_number[port].peer_mac}
                       for prefix, port in plan.router_routes.items()]
            switches[sw.name]["bfd"] = {
                "router_addr": plan.router_addr,
                "edge_ports": list(plan.edge_ports),
                "cpu_port": BFD_CPU_PORT,
                "paths": [{"id": path.path_id, "port": path.port,
                           "egress_addr": path.egress_addr,
                           "prefixes": sorted(pre for pre, pid in plan.path_of_prefix.items()
                                              if pid == path.path_id)}
                          # only an ingress edge (a router with edge ports) probes
                          for path in (plan.paths if plan.edge_ports else ())]}
    cfg: dict[str, Any] = {}
    if classifier is not None:
        cfg["classifier"] = dict(classifier)
    if active_flows is not None:
        cfg["active_flows"] = dict(active_flows)
    cfg["switches"] = switches
    if validate:
        from mmaqm.config import parse_config  # the controller's own validation
        parse_config(cfg)
    return cfg


def dump_controller_config(cfg: Mapping[str, Any]) -> str:
    """YAML text of a controller_config() dict (ports stay integer keys)."""
    import yaml

    return yaml.safe_dump(cfg, sort_keys=False, default_flow_style=None)


def describe(topo: Topology) -> str:
    """Human-readable summary: hosts, ports, bottleneck, RTTs."""
    bn = topo.bottleneck
    lines = [f"topology {topo.name}: {len(topo.hosts)} hosts, {len(topo.switches)} switches, "
             f"{len(topo.links)} links",
             f"bottleneck {bn.switch}-p{bn.port} -> {bn.to_switch}: {bn.rate_mbps:g} Mbit/s = "
             f"{bn.rate_pps} pkt/s of {bn.packet_bytes} B, {bn.delay_ms:g} ms, queue "
             f"{bn.queue_limit_pkts} pkts"]
    for s in topo.shaped[1:]:
        lines.append(f"shaped {s.switch}-p{s.port} -> {s.to_switch}: {s.rate_mbps:g} Mbit/s = "
                     f"{s.rate_pps} pkt/s, {s.delay_ms:g} ms, queue {s.queue_limit_pkts} pkts")
    for h in topo.hosts.values():
        lines.append(f"  host {h.name:<10} {h.cidr:<18} gw {h.gateway_ip:<15} {h.mac}  "
                     f"-> {h.switch}-p{h.switch_port}")
    names = list(topo.hosts)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            lines.append(f"  rtt {a} <-> {b}: {topo.rtt_ms(a, b):g} ms")
    return "\n".join(lines)


# --------------------------------------------------------- C-UPTA / BFD (upta §5.3)
@dataclass(frozen=True)
class BfdSwitchPlan:
    """What a switch needs for C-UPTA's BFD (docs/upta-plan.md §1.6-1.7), from the topology:
    its own address, its edge ports (those facing hosts: a probe or report arriving there
    is from outside the domain; a data packet arriving there is at its ingress edge), the
    routes to the other routers' addresses (probes and reports are routed like data), and
    as an ingress edge its BFD paths (output port, egress router) with the destination
    prefixes that take each."""

    switch: str
    router_addr: str
    edge_ports: tuple[int, ...]
    router_routes: Mapping[str, int]          # "10.255.0.k/32" -> egress port
    paths: tuple[Any, ...]                    # upta_control.BfdPath, ids from 0
    path_of_prefix: Mapping[str, int]         # "host ip/32" -> path id


def bfd_plan(topo: Topology) -> dict[str, BfdSwitchPlan]:
    """Every switch's BfdSwitchPlan (switch index i -> address 10.255.0.(i + 1))."""
    from mmaqm.algorithms import upta_control as UC

    addr = {s.name: UC.router_address(s.index) for s in topo.switches.values()}
    plans: dict[str, BfdSwitchPlan] = {}
    for sw in topo.switches.values():
        # BFS over the switches from sw: the first port toward every other router
        first: dict[str, int] = {}
        queue = deque([(sw.name, None)])
        seen = {sw.name}
        while queue:
            node, via = queue.popleft()
            for p in topo.switches[node].ports.values():
                if p.peer in topo.switches and p.peer not in seen:
                    seen.add(p.peer)
                    port = p.number if via is None else via
                    first[p.peer] = port
                    queue.append((p.peer, port))
        pairs = {(topo.egress_port(sw.name, h.name), addr[h.switch]): h
                 for h in topo.hosts.values() if h.switch != sw.name}
        paths = UC.assign_bfd_paths(pairs)
        path_id = {(p.port, p.egress_addr): p.path_id for p in paths}
        plans[sw.name] = BfdSwitchPlan(
            switch=sw.name, router_addr=addr[sw.name],
            edge_ports=tuple(sorted(p.number for p in sw.ports.values() if p.peer in topo.hosts)),
            router_routes=MappingProxyType({f"{addr[t]}/32": port
                                            for t, port in sorted(first.items())}),
            paths=tuple(paths),
            path_of_prefix=MappingProxyType({
                f"{h.ip}/32": path_id[(topo.egress_port(sw.name, h.name), addr[h.switch])]
                for h in topo.hosts.values() if h.switch != sw.name}))
    return plans
