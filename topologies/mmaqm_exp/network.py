"""Bring a topology up on this machine (namespaces, veths, BMv2, delay elements), always tear it down.

    topo = load_topology("topologies/topos/dcbt-dumbbell.json")
    with Network(topo, run_dir, bmv2_json) as net:
        net.run_switch_ns([".venv/bin/mmaqm-ctl", "--config", cfg, "install"], timeout=60)
        net.configure_bottleneck()
        srv = net.popen("tcp2", ["iperf3", "-s", "-1"])
        net.run("tcp1", ["iperf3", "-c", net.host_ip("tcp2"), "-t", "3"], timeout=20)

Layout (every name starts with ``name_prefix``, default "mmx"):

* one namespace per host, ``<prefix>-h-<host>``, holding its one interface
  (topology.HOST_IFNAME), a default route via the router's address on the link
  and a permanent neighbour entry for it (the P4 router answers no ARP); TCP
  congestion control Reno (dcbt §5), not the machine's default;
* one namespace ``<prefix>-sw`` holding every switch-side veth end (``r1-p3``)
  and every ``simple_switch_grpc``: switch i (file order) serves gRPC on
  127.0.0.1:(9559+i) and Thrift on 9090+i, reachable only inside it (Thrift has
  no authentication, docs/design.md §1.1). BMv2 starts with ``--no-p4``; the controller
  pushes the pipeline (``mmaqm-ctl install``);
* propagation delay on the receive side: in every host namespace, an iptables
  INPUT rule per remote source sends its packets to an NFQUEUE served by
  ``topologies/delay/nfq_delay`` holding them for the one-way path delay
  (sum of the link delays). Sources with equal delay share one element.
  (The kernel has no netem; delay on the sender's OUTPUT chain throttles TCP,
  docs/design.md §1.5.) Each element writes its stats JSON into run_dir at teardown;
* the bottleneck egress port gets BMv2 queue rate = rate_mbps*1e6/(8*packet_bytes)
  packets/s and a queue depth above the P4 queue limit; every other port a
  depth above topology.OTHER_PORT_QUEUE_LIMIT_PKTS and no rate limit.

Namespaces, veths, simple_switch_grpc and the stopping of processes are
:mod:`mmaqm_exp.lab`'s (its docstring lists the offload and IPv6 settings and why).
On entering, leftovers of a killed run with the same prefix (namespaces and
every process inside them) are removed first. On leaving (normal exit, an
exception, or a stop signal turned into an exception by
lab.catch_stop_signals) the traffic processes, then the delay elements, then
the switches are stopped (SIGTERM, then SIGKILL, by process group), every
process still inside one of our namespaces is killed, and the namespaces are
deleted (which deletes the veths and iptables rules with them). SIGINT,
SIGTERM and SIGHUP arriving during teardown are held until it has finished.
Needs root.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import lab as L
from . import topology as T
from .cpu import process_cpu_s
from .topology import Topology

DEFAULT_PREFIX = "mmx"
PREFIX_MAX_LEN = 12
DELAY_DIR = Path(__file__).resolve().parents[1] / "delay"
NFQ_DELAY_BIN = DELAY_DIR / "nfq_delay"
NFQUEUE_BASE = 10               # queue numbers are per network namespace (checked)
STOP_TIMEOUT_S = 3.0            # SIGTERM -> SIGKILL grace per group of processes
READY_TIMEOUT_S = 15.0          # BMv2 / delay element start-up
SWITCH_NS_SUFFIX = "sw"
# dcbt §5: "FTP used TCP Reno". Set explicitly in every host namespace: a new namespace
# inherits the machine's default (bbr on these VMs), which paces and ignores loss.
TCP_CONGESTION_CONTROL = "reno"
BMV2_LOG_LEVEL = "warn"         # BMv2 log file run_dir/bmv2-<switch>.txt; "trace" for packet traces
HOST_NS_INFIX = "h"
REQUIRED_TOOLS = ("simple_switch_grpc", "iptables-restore")    # besides lab.REQUIRED_TOOLS


class NetworkError(L.LabError):
    """Bring-up or teardown failed (a failed bring-up has been torn down)."""


@dataclass(frozen=True)
class NetHost:
    """A running host: its namespace and addresses."""

    name: str
    ns: str
    ip: str
    mac: str
    ifname: str
    gateway_ip: str
    gateway_mac: str
    ip6: str = ""               # a dual-stack network's (Network(ipv6=True)) only
    gateway_ip6: str = ""


@dataclass(frozen=True)
class BottleneckPort:
    switch: str
    port: int
    ifname: str
    rate_pps: int
    queue_depth_pkts: int


@dataclass
class DelayElement:
    """One nfq_delay process: delays packets from ``sources`` arriving at ``host``."""

    name: str                   # "<host>-<delay>ms"
    host: str
    queue_num: int
    delay_ms: float
    sources: tuple[str, ...]
    stats_path: Path
    proc: subprocess.Popen | None = None


@dataclass
class _Switch:
    name: str
    grpc_port: int
    thrift_port: int
    proc: subprocess.Popen | None = None


def parse_proc_net_dev_rx_packets(text: str) -> dict[str, int]:
    """{interface: received packets} from /proc/net/dev (the 2nd number after 'name:')."""
    rx = {}
    for line in text.splitlines():
        name, sep, numbers = line.partition(":")
        fields = numbers.split()
        if sep and len(fields) >= 2 and fields[1].isdigit():
            rx[name.strip()] = int(fields[1])
    return rx


# /proc/net/netfilter/nfnetlink_queue, one line per bound queue (net/netfilter/nfnetlink_queue.c)
NFQUEUE_COLUMNS = ("queue_num", "peer_portid", "queue_total", "copy_mode", "copy_range",
                   "queue_dropped", "user_dropped", "id_sequence")


def parse_nfnetlink_queue(text: str) -> dict[int, dict[str, int]]:
    """{queue number: {column: value}} from /proc/net/netfilter/nfnetlink_queue (columns
    NFQUEUE_COLUMNS, then a constant 1). queue_dropped counts packets dropped because the
    queue was full, user_dropped those netlink could not deliver to the element's socket,
    id_sequence the packets queued so far."""
    out = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= len(NFQUEUE_COLUMNS) and all(f.isdigit() for f in fields):
            row = dict(zip(NFQUEUE_COLUMNS, map(int, fields)))
            out[row.pop("queue_num")] = row
    return out


def nfqueue_counters(pid: int, queue_num: int) -> dict[str, int] | None:
    """The kernel counters of NFQUEUE queue_num in the network namespace of process pid
    (/proc/<pid>/net/netfilter/nfnetlink_queue: no helper has to enter it); None if no
    process has bound that queue there."""
    text = Path(f"/proc/{pid}/net/netfilter/nfnetlink_queue").read_text()
    return parse_nfnetlink_queue(text).get(queue_num)


def parse_snmp(text: str) -> dict[str, dict[str, int]]:
    """{protocol: {counter: value}} from /proc/net/snmp (a header line and a value line
    per protocol: "Udp: InDatagrams ..." then "Udp: 57 ...")."""
    out: dict[str, dict[str, int]] = {}
    header: dict[str, list[str]] = {}
    for line in text.splitlines():
        proto, sep, rest = line.partition(":")
        fields = rest.split()
        if not sep or not fields:
            continue
        if proto in header and all(f.lstrip("-").isdigit() for f in fields):
            out[proto] = dict(zip(header.pop(proto), map(int, fields)))
        else:
            header[proto] = fields
    return out


# /proc/net/snmp6's names of the /proc/net/snmp counters the runs read (an IPv6
# flow's datagrams and ICMPv6 messages count with IPv4's: Network.snmp_counters)
SNMP6_KEYS = {"Udp.SndbufErrors": "Udp6SndbufErrors", "Icmp.OutMsgs": "Icmp6OutMsgs"}


def parse_snmp6(text: str) -> dict[str, int]:
    """{counter: value} from /proc/net/snmp6 (one "Name value" pair per line)."""
    out = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1].isdigit():
            out[fields[0]] = int(fields[1])
    return out


def missing_prereqs() -> str | None:
    """Why a Network cannot be brought up here, or None."""
    return L.missing_prereqs(REQUIRED_TOOLS)


def _check_prefix(prefix: str) -> None:
    """A name_prefix: 1..PREFIX_MAX_LEN lower-case letters/digits, a letter first."""
    if not (prefix.isascii() and prefix[:1].isalpha() and prefix.isalnum()
            and prefix.islower() and len(prefix) <= PREFIX_MAX_LEN):
        raise ValueError(f"name_prefix must be 1..{PREFIX_MAX_LEN} lower-case letters/digits "
                         f"starting with a letter, got {prefix!r}")


def clean_leftovers(prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Kill every process in a ``<prefix>-*`` namespace, delete those namespaces; return them."""
    _check_prefix(prefix)
    return L.clean_leftovers(prefix)


class Network:
    """A running topology; see the module docstring. Use as a context manager."""

    def __init__(self, topo: Topology, run_dir: str | Path, bmv2_json: str | Path | None, *,
                 name_prefix: str = DEFAULT_PREFIX, nfq_delay_bin: str | Path = NFQ_DELAY_BIN,
                 bmv2_log_level: str = BMV2_LOG_LEVEL,
                 tcp_congestion_control: str = TCP_CONGESTION_CONTROL,
                 grpc_port_base: int = T.GRPC_PORT_BASE,
                 thrift_port_base: int = T.THRIFT_PORT_BASE,
                 cpu_port: int | None = None, ipv6: bool = False) -> None:
        _check_prefix(name_prefix)
        # ipv6: the hosts get IPv6 addresses too (Host.ip6; lab.host_ipv6_script says
        # what else is set and why); otherwise IPv6 stays off everywhere
        self.ipv6 = ipv6
        self.cpu_port = cpu_port       # BMv2 --cpu-port of every switch (C-UPTA's PacketOut probes)
        self.topo = topo
        self.run_dir = Path(run_dir)
        self.bmv2_json = Path(bmv2_json) if bmv2_json is not None else None
        self.prefix = name_prefix
        self.nfq_delay_bin = Path(nfq_delay_bin)
        self.bmv2_log_level = bmv2_log_level
        self.tcp_congestion_control = tcp_congestion_control
        self.switch_ns = f"{name_prefix}-{SWITCH_NS_SUFFIX}"
        gw_mac = {h: topo.switches[topo.hosts[h].switch].ports[topo.hosts[h].switch_port].mac
                  for h in topo.hosts}
        self.hosts: Mapping[str, NetHost] = {
            h.name: NetHost(h.name, f"{name_prefix}-{HOST_NS_INFIX}-{h.name}", h.ip, h.mac,
                            T.HOST_IFNAME, h.gateway_ip, gw_mac[h.name],
                            h.ip6 if ipv6 else "", h.gateway_ip6 if ipv6 else "")
            for h in topo.hosts.values()}
        self._switches = {s.name: _Switch(s.name, grpc_port_base + s.index,
                                          thrift_port_base + s.index)
                          for s in topo.switches.values()}
        bn = topo.bottleneck
        self.bottleneck = BottleneckPort(bn.switch, bn.port, f"{bn.switch}-p{bn.port}", bn.rate_pps,
                                         T.tm_queue_depth_pkts(bn.queue_limit_pkts))
        # the other rate-limited ports (topology "shaped"; empty for a single bottleneck)
        self.shaped_ports: list[BottleneckPort] = [
            BottleneckPort(s.switch, s.port, f"{s.switch}-p{s.port}", s.rate_pps,
                           T.tm_queue_depth_pkts(s.queue_limit_pkts))
            for s in topo.shaped[1:]]
        self.delay_elements: list[DelayElement] = self._plan_delays()
        self.timings: dict[str, float] = {}
        self._lab = L.Lab(name_prefix)
        self._is_up = False

    # ------------------------------------------------------------ public API
    def host_ip(self, host: str, family: str = "ipv4") -> str:
        """The host's address of family "ipv4" or "ipv6" (ValueError if the network
        was brought up without IPv6)."""
        h = self._host(host)
        if family == "ipv4":
            return h.ip
        if family == "ipv6" and h.ip6:
            return h.ip6
        raise ValueError(f"host {host!r} has no {family} address (Network(ipv6=True) gives "
                         f"the hosts IPv6 addresses)")

    def grpc_addr(self, switch: str) -> str:
        return f"127.0.0.1:{self._switch(switch).grpc_port}"

    def thrift_port(self, switch: str) -> int:
        return self._switch(switch).thrift_port

    def switch_pids(self) -> dict[str, int]:
        """{switch: pid of its simple_switch_grpc} (for CPU sampling)."""
        return {s.name: s.proc.pid for s in self._switches.values() if s.proc is not None}

    def delay_pids(self) -> dict[str, int]:
        """{delay element name ("<host>-<delay>ms"): pid of its nfq_delay}."""
        return {d.name: d.proc.pid for d in self.delay_elements if d.proc is not None}

    def cpu_seconds(self) -> dict[str, float]:
        """utime + stime seconds of every switch and delay element still running."""
        pids = {f"switch:{k}": v for k, v in self.switch_pids().items()}
        pids.update({f"delay:{k}": v for k, v in self.delay_pids().items()})
        seconds = {name: process_cpu_s(pid) for name, pid in pids.items()}
        return {name: s for name, s in seconds.items() if s is not None}

    def switch_rx_packets(self) -> dict[str, int]:
        """{switch: packets its veth ends have received}: the kernel's count of what was
        offered to BMv2, before its port I/O and ingress queue (lost there if BMv2 falls
        behind). Compared with the pipeline's own counters by analysis.switch_keepup."""
        dev = self.run_switch_ns(["cat", "/proc/net/dev"], timeout=10, check=True).stdout
        rx = parse_proc_net_dev_rx_packets(dev)
        return {sw.name: sum(rx.get(p.ifname, 0) for p in sw.ports.values())
                for sw in self.topo.switches.values()}

    def delay_queue_counters(self) -> dict[str, dict[str, int]]:
        """{delay element: its kernel queue's counters (parse_nfnetlink_queue)}, read in the
        element's namespace through /proc/<its pid>/net; elements not running are left out."""
        out = {}
        for d in self.delay_elements:
            if d.proc is None or d.proc.poll() is not None:
                continue
            row = nfqueue_counters(d.proc.pid, d.queue_num)
            if row is not None:
                out[d.name] = row
        return out

    def snmp_counters(self) -> dict[str, dict[str, int]]:
        """{host: {"Udp.<counter>", "Icmp.<counter>": value}} of its namespace's
        /proc/net/snmp. Udp.SndbufErrors: datagrams a socket handed over and the kernel
        dropped (a full veth backlog; without IP_RECVERR the sender is not told);
        Icmp.OutMsgs: ICMP the host sent (e.g. port unreachable for feedback reaching a
        sender that has exited), which the switches classify UNTAGGED."""
        out = {}
        for h in self.hosts:
            snmp = parse_snmp(self.run(h, ["cat", "/proc/net/snmp"], timeout=10, check=True).stdout)
            out[h] = {f"{proto}.{k}": v for proto in ("Udp", "Icmp")
                      for k, v in snmp.get(proto, {}).items()}
            if self.ipv6:   # IPv6's own counters (snmp6), added to the same keys
                six = parse_snmp6(self.run(h, ["cat", "/proc/net/snmp6"], timeout=10,
                                           check=True).stdout)
                for key, key6 in SNMP6_KEYS.items():
                    out[h][key] = out[h].get(key, 0) + six.get(key6, 0)
        return out

    def popen(self, host: str, argv: Sequence[str], **popen_kwargs: Any) -> subprocess.Popen:
        """Start argv in host's namespace in its own process group; stopped at teardown.

        stdin/stdout/stderr are inherited unless given (pass files or DEVNULL for long runs)."""
        return self._popen(self._host(host).ns, argv, **popen_kwargs)

    def popen_switch_ns(self, argv: Sequence[str], **popen_kwargs: Any) -> subprocess.Popen:
        """Start argv in the switch namespace (e.g. the controller); stopped at teardown."""
        return self._popen(self.switch_ns, argv, **popen_kwargs)

    def run(self, host: str, argv: Sequence[str], timeout: float = 30.0, *, check: bool = False,
            **run_kwargs: Any) -> subprocess.CompletedProcess:
        """Run argv in host's namespace to completion (text output captured)."""
        return self._run_ns(self._host(host).ns, argv, timeout, check, **run_kwargs)

    def run_switch_ns(self, argv: Sequence[str], timeout: float = 60.0, *, check: bool = False,
                      **run_kwargs: Any) -> subprocess.CompletedProcess:
        return self._run_ns(self.switch_ns, argv, timeout, check, **run_kwargs)

    def wait_listening(self, proc: subprocess.Popen, port: int, timeout_s: float = 5.0) -> None:
        """Wait until proc's namespace has a TCP listener on port (e.g. an iperf3 server)."""
        deadline = time.monotonic() + timeout_s
        while not L.listening(proc.pid, port):
            if proc.poll() is not None:
                raise NetworkError(f"{proc.args} exited ({proc.returncode}) before listening on {port}")
            if time.monotonic() >= deadline:
                raise TimeoutError(f"nothing listens on TCP port {port} after {timeout_s} s")
            time.sleep(0.02)

    def configure_bottleneck(self, queue_depth_pkts: int | None = None) -> BottleneckPort:
        """Set the bottleneck port's BMv2 queue rate and depth (again: safe to repeat).

        queue_depth_pkts defaults to the topology's queue limit + TM_DEPTH_MARGIN_PKTS; pass
        a larger one if the P4 policy's queue_limit_pkts is larger than the topology's."""
        from mmaqm import bmv2_tm   # runs simple_switch_CLI in its own process

        bn = self.bottleneck
        if queue_depth_pkts is not None:
            bn = BottleneckPort(bn.switch, bn.port, bn.ifname, bn.rate_pps, queue_depth_pkts)
            self.bottleneck = bn
            # the policy's queue limit applies to every shaped port (controller_config)
            self.shaped_ports = [BottleneckPort(s.switch, s.port, s.ifname, s.rate_pps,
                                                queue_depth_pkts) for s in self.shaped_ports]
        for port in (bn, *self.shaped_ports):
            thrift = self.thrift_port(port.switch)
            bmv2_tm.set_queue_depth(thrift, port.port, port.queue_depth_pkts, netns=self.switch_ns)
            bmv2_tm.set_queue_rate(thrift, port.port, port.rate_pps, netns=self.switch_ns)
        return bn

    def __enter__(self) -> Network:
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    # -------------------------------------------------------------- bring-up
    def up(self) -> None:
        """Create everything. On failure the caller (or __enter__) must call down()."""
        t0 = time.monotonic()
        self._preflight()
        removed = self._lab.open()
        if removed:
            (self.run_dir / "leftovers-removed.txt").write_text("\n".join(removed) + "\n")
        self._is_up = True
        self._create_namespaces()
        self._create_links()
        self._start_delay_elements()
        self._start_switches()
        self._set_queue_depths()
        self.timings["up_s"] = time.monotonic() - t0
        self._write_manifest()

    def _preflight(self) -> None:
        """Check everything that can be checked before creating anything."""
        why = missing_prereqs()
        if why:
            raise NetworkError(why)
        # a namespace's default may only be one of the "allowed" algorithms (the kernel
        # answers EPERM otherwise); others can still be chosen per socket (iperf3 -C)
        allowed = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text().split()
        if self.tcp_congestion_control not in allowed:
            raise NetworkError(f"tcp_congestion_control {self.tcp_congestion_control!r} cannot be "
                               f"a namespace default here (net.ipv4.tcp_allowed_congestion_control"
                               f" = {' '.join(allowed)}); choose it per socket instead")
        if self.bmv2_json is not None and not self.bmv2_json.is_file():
            raise NetworkError(f"bmv2_json {self.bmv2_json} does not exist (make build)")
        src = DELAY_DIR / "nfq_delay.c"
        if self.delay_elements and self.nfq_delay_bin == NFQ_DELAY_BIN and (
                not NFQ_DELAY_BIN.exists() or NFQ_DELAY_BIN.stat().st_mtime < src.stat().st_mtime):
            r = subprocess.run(["make", "-C", str(DELAY_DIR)], capture_output=True, text=True,
                               timeout=120)
            if r.returncode != 0:
                raise NetworkError(f"make -C {DELAY_DIR} failed:\n{r.stdout}{r.stderr}")
        if self.delay_elements and not os.access(self.nfq_delay_bin, os.X_OK):
            raise NetworkError(f"{self.nfq_delay_bin} missing: make -C {DELAY_DIR}")
        self.run_dir.mkdir(parents=True, exist_ok=True)

    def _namespaces(self) -> list[str]:
        return [self.switch_ns] + [h.ns for h in self.hosts.values()]

    def _create_namespaces(self) -> None:
        for ns in self._namespaces():
            cc = {} if ns == self.switch_ns else {
                "net.ipv4.tcp_congestion_control": self.tcp_congestion_control}
            self._lab.add_namespace(ns, cc)

    def _create_links(self) -> None:
        topo = self.topo
        self._lab.add_veths([(self._end(link.a, link.a_port), self._end(link.b, link.b_port))
                             for link in topo.links])
        for h in self.hosts.values():
            th = topo.hosts[h.name]
            # the P4 router answers no ARP: a permanent entry for the gateway
            self._lab.run(h.ns, ["sh", "-c",
                                 f"ip addr add {h.ip}/{th.prefixlen} dev {h.ifname}"
                                 f" && ip neigh add {h.gateway_ip} lladdr {h.gateway_mac}"
                                 f" dev {h.ifname} nud permanent"
                                 f" && ip route add default via {h.gateway_ip} dev {h.ifname}"],
                          timeout_s=10)
            if self.ipv6:
                self._lab.run(h.ns, ["sh", "-c", L.host_ipv6_script(
                    h.ifname, f"{h.ip6}/{T.IPV6_HOST_PREFIXLEN}", h.gateway_ip6, h.gateway_mac)],
                              timeout_s=10)

    def _end(self, node: str, port: int | None) -> L.VethEnd:
        if node in self.hosts:
            h = self.hosts[node]
            return L.VethEnd(h.ns, h.ifname, L.HOST_PORT, h.mac, T.MTU_BYTES)
        assert port is not None
        p = self.topo.switches[node].ports[port]
        return L.VethEnd(self.switch_ns, p.ifname, L.RAW_PORT, p.mac, T.MTU_BYTES)

    def _plan_delays(self) -> list[DelayElement]:
        """Per receiving host: sources grouped by one-way path delay (> 0), one element each."""
        elements = []
        for dst in self.topo.hosts:
            groups: dict[float, list[str]] = {}
            for src in self.topo.hosts:
                if src != dst:
                    d = round(self.topo.one_way_delay_ms(src, dst), 6)
                    if d > 0:
                        groups.setdefault(d, []).append(src)
            for q, (d, srcs) in enumerate(sorted(groups.items())):
                name = f"{dst}-{d:g}ms"
                elements.append(DelayElement(name, dst, NFQUEUE_BASE + q, d, tuple(srcs),
                                             self.run_dir / f"delay-{name}.json"))
        return elements

    def _start_delay_elements(self) -> None:
        for d in self.delay_elements:
            log = open(self.run_dir / f"delay-{d.name}.log", "w")
            d.proc = self._popen(self.hosts[d.host].ns, [
                str(self.nfq_delay_bin), "--queue", str(d.queue_num), "--delay-ms", f"{d.delay_ms:g}",
                "--stats-file", str(d.stats_path)], stdout=log, stderr=subprocess.STDOUT)
            log.close()
        deadline = time.monotonic() + READY_TIMEOUT_S
        for d in self.delay_elements:
            logf = self.run_dir / f"delay-{d.name}.log"
            while "nfq_delay: ready" not in logf.read_text():
                assert d.proc is not None
                if d.proc.poll() is not None or time.monotonic() > deadline:
                    raise NetworkError(f"delay element {d.name} did not start: {logf.read_text()}")
                time.sleep(0.01)
        # the element first, then the rule (--queue-bypass would let packets pass undelayed
        # while nothing is bound). iptables-restore: one process per namespace.
        # With IPv6, the source's IPv6 address goes to the same element (NFQUEUE holds
        # packets of either family).
        by_host: dict[str, list[str]] = {}
        by_host6: dict[str, list[str]] = {}
        for d in self.delay_elements:
            for src in d.sources:
                by_host.setdefault(d.host, []).append(
                    f"-A INPUT -i {T.HOST_IFNAME} -s {self.hosts[src].ip}/32 -j NFQUEUE "
                    f"--queue-num {d.queue_num} --queue-bypass")
                if self.ipv6:
                    by_host6.setdefault(d.host, []).append(
                        f"-A INPUT -i {T.HOST_IFNAME} -s {self.hosts[src].ip6}/128 -j NFQUEUE "
                        f"--queue-num {d.queue_num} --queue-bypass")
        for tool, rules_of in (("iptables-restore", by_host), ("ip6tables-restore", by_host6)):
            for host, rules in rules_of.items():
                text = "*filter\n" + "\n".join(rules) + "\nCOMMIT\n"
                self._lab.run(self.hosts[host].ns, [tool, "--noflush"], input=text)

    def _switch_spec(self, sw: Any, suffix: str = "") -> L.SwitchSpec:
        return L.SwitchSpec({p.number: p.ifname for p in sw.ports.values()},
                            device_id=T.DEVICE_ID,
                            grpc_port=self._switches[sw.name].grpc_port,
                            thrift_port=self._switches[sw.name].thrift_port,
                            out_path=self.run_dir / f"bmv2-{sw.name}{suffix}.out",
                            log_file=self.run_dir / f"bmv2-{sw.name}{suffix}",
                            log_level=self.bmv2_log_level, cpu_port=self.cpu_port)

    def _start_switches(self) -> None:
        switches = list(self.topo.switches.values())
        specs = [self._switch_spec(sw) for sw in switches]
        for sw, proc in zip(switches, self._lab.start_switches(self.switch_ns, specs,
                                                               READY_TIMEOUT_S)):
            self._switches[sw.name].proc = proc

    def restart_switch(self, switch: str, suffix: str = ".restarted") -> subprocess.Popen:
        """Kill a switch's simple_switch_grpc with SIGKILL (a crash: no cleanup) and start
        it again on the same ports and addresses, without a pipeline (a controller must
        push it again); its TM queue depths and the bottleneck's rate are set again.
        Its new output goes to bmv2-<switch><suffix>.out. Returns the new process."""
        sw = self._switch(switch)
        if sw.proc is not None:
            try:
                os.killpg(sw.proc.pid, signal.SIGKILL)  # started in a session of its own
            except ProcessLookupError:
                pass
            self._lab.stop([sw.proc])                   # reaped, no longer tracked
        [sw.proc] = self._lab.start_switches(
            self.switch_ns, [self._switch_spec(self.topo.switches[switch], suffix)],
            READY_TIMEOUT_S)
        self._set_queue_depths()
        return sw.proc

    def _set_queue_depths(self) -> None:
        """BMv2 TM depth above the P4 limit on every port; the bottleneck's rate too.

        Works before a pipeline is pushed, and a pushed pipeline keeps them (checked by
        tests/exp/test_network.py); configure_bottleneck() sets the bottleneck again."""
        from mmaqm import bmv2_tm

        other = T.tm_queue_depth_pkts(T.OTHER_PORT_QUEUE_LIMIT_PKTS)
        for sw in self.topo.switches.values():
            for p in sw.ports.values():
                if self.topo.shaped_port(sw.name, p.number) is None and \
                        (sw.name, p.number) != (self.bottleneck.switch, self.bottleneck.port):
                    bmv2_tm.set_queue_depth(self.thrift_port(sw.name), p.number, other,
                                            netns=self.switch_ns)
        self.configure_bottleneck()

    def _write_manifest(self) -> None:
        manifest = {
            "topology": self.topo.name, "prefix": self.prefix, "switch_ns": self.switch_ns,
            "tcp_congestion_control": self.tcp_congestion_control,
            "bmv2_log_level": self.bmv2_log_level,
            "ipv6": self.ipv6,
            "hosts": {h.name: {"ns": h.ns, "ip": h.ip, "mac": h.mac, "gateway_ip": h.gateway_ip,
                               "gateway_mac": h.gateway_mac,
                               **({"ip6": h.ip6, "gateway_ip6": h.gateway_ip6} if self.ipv6 else {})}
                      for h in self.hosts.values()},
            "switches": {s.name: {"grpc": self.grpc_addr(s.name), "thrift": s.thrift_port,
                                  "pid": s.proc.pid if s.proc else None}
                         for s in self._switches.values()},
            "bottleneck": {"switch": self.bottleneck.switch, "port": self.bottleneck.port,
                           "rate_pps": self.bottleneck.rate_pps,
                           "queue_depth_pkts": self.bottleneck.queue_depth_pkts},
            "shaped": [{"switch": p.switch, "port": p.port, "rate_pps": p.rate_pps,
                        "queue_depth_pkts": p.queue_depth_pkts} for p in self.shaped_ports],
            "delay_elements": [{"name": d.name, "host": d.host, "queue": d.queue_num,
                                "delay_ms": d.delay_ms, "sources": list(d.sources),
                                "stats": str(d.stats_path)} for d in self.delay_elements],
            "timings": self.timings,
        }
        (self.run_dir / "network.json").write_text(json.dumps(manifest, indent=2) + "\n")

    # -------------------------------------------------------------- teardown
    def down(self) -> None:
        """Stop everything and delete the namespaces. Idempotent; never raises for cleanup
        trouble (it is written to run_dir/teardown-errors.txt) except when something survives."""
        if not self._is_up and not self._lab.namespaces:
            return
        with L.stop_signals_deferred():
            t0 = time.monotonic()
            problems: list[str] = []
            survived = ""
            delay_procs = [d.proc for d in self.delay_elements if d.proc is not None]
            switch_procs = [s.proc for s in self._switches.values() if s.proc is not None]
            others = {id(p) for p in delay_procs + switch_procs}
            # traffic first, then delay elements (SIGTERM: they write their stats), then BMv2
            for group in ([p for p in self._lab.procs if id(p) not in others],
                          delay_procs, switch_procs):
                problems += self._lab.stop(group, STOP_TIMEOUT_S)
            try:
                problems += self._lab.close()
            except L.LabError as err:
                survived = str(err)
                problems.append(survived)
            self._is_up = False
            self.timings["down_s"] = time.monotonic() - t0
            if problems:
                try:
                    (self.run_dir / "teardown-errors.txt").write_text("\n".join(problems) + "\n")
                except OSError:
                    pass
            try:
                (self.run_dir / "timings.json").write_text(json.dumps(self.timings) + "\n")
            except OSError:
                pass
            if survived:
                raise NetworkError(survived)

    # ---------------------------------------------------------------- helpers
    def _host(self, host: str) -> NetHost:
        try:
            return self.hosts[host]
        except KeyError:
            raise KeyError(f"unknown host {host!r}; hosts: {', '.join(self.hosts)}") from None

    def _switch(self, switch: str) -> _Switch:
        try:
            return self._switches[switch]
        except KeyError:
            raise KeyError(f"unknown switch {switch!r}; switches: {', '.join(self._switches)}") from None

    def _popen(self, ns: str, argv: Sequence[str], **kw: Any) -> subprocess.Popen:
        if not self._is_up:
            raise NetworkError("network is not up")
        return self._lab.popen(ns, argv, **kw)

    def _run_ns(self, ns: str, argv: Sequence[str], timeout: float, check: bool,
                **kw: Any) -> subprocess.CompletedProcess:
        return self._lab.run(ns, argv, timeout_s=timeout, check=check, **kw)
