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
  no authentication, DESIGN §1). BMv2 starts with ``--no-p4``; the controller
  pushes the pipeline (``mmaqm-ctl install``);
* propagation delay on the receive side: in every host namespace, an iptables
  INPUT rule per remote source sends its packets to an NFQUEUE served by
  ``topologies/delay/nfq_delay`` holding them for the one-way path delay
  (sum of the link delays). Sources with equal delay share one element.
  (The kernel has no netem; delay on the sender's OUTPUT chain throttles TCP,
  DESIGN §1.) Each element writes its stats JSON into run_dir at teardown;
* the bottleneck egress port gets BMv2 queue rate = rate_mbps*1e6/(8*packet_bytes)
  packets/s and a queue depth above the P4 queue limit; every other port a
  depth above topology.OTHER_PORT_QUEUE_LIMIT_PKTS and no rate limit.

On entering, leftovers of a killed run with the same prefix (namespaces and
every process inside them) are removed first. On leaving (normal exit, an
exception, or KeyboardInterrupt / SystemExit from the caller's signal
handling) every tracked process is stopped (SIGTERM, then SIGKILL, by process
group), every process still inside one of our namespaces is killed, and the
namespaces are deleted (which deletes the veths and iptables rules with them).
SIGINT and SIGTERM arriving during teardown are held until it has finished.
Needs root.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyroute2 import IPRoute, netns

from . import topology as T
from .cpu import process_cpu_s
from .topology import Topology

DEFAULT_PREFIX = "mmx"
PREFIX_MAX_LEN = 12
DELAY_DIR = Path(__file__).resolve().parents[1] / "delay"
NFQ_DELAY_BIN = DELAY_DIR / "nfq_delay"
NFQUEUE_BASE = 10               # queue numbers are per network namespace (checked)
STOP_TIMEOUT_S = 3.0            # SIGTERM -> SIGKILL grace per process group
READY_TIMEOUT_S = 15.0          # BMv2 / delay element start-up
SWITCH_NS_SUFFIX = "sw"
# dcbt §5: "FTP used TCP Reno". Set explicitly in every host namespace: a new namespace
# inherits the machine's default (bbr on these VMs), which paces and ignores loss.
TCP_CONGESTION_CONTROL = "reno"
BMV2_LOG_LEVEL = "warn"         # BMv2 log file run_dir/bmv2-<switch>.txt; "trace" for packet traces
HOST_NS_INFIX = "h"
_REQUIRED_TOOLS = ("ip", "simple_switch_grpc", "ethtool", "sysctl", "iptables-restore")


class NetworkError(RuntimeError):
    """Bring-up failed (the partial network has been torn down)."""


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


def missing_prereqs() -> str | None:
    """Why a Network cannot be brought up here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, veths, iptables)"
    for tool in _REQUIRED_TOOLS:
        if shutil.which(tool) is None:
            return f"needs the {tool!r} command"
    return None


def _check_prefix(prefix: str) -> None:
    if not (prefix.isascii() and prefix[:1].isalpha() and prefix.isalnum()
            and prefix.islower() and len(prefix) <= PREFIX_MAX_LEN):
        raise ValueError(f"name_prefix must be 1..{PREFIX_MAX_LEN} lower-case letters/digits "
                         f"starting with a letter, got {prefix!r}")


def prefixed_namespaces(prefix: str) -> list[str]:
    """Namespaces named ``<prefix>-...`` (ours or a killed run's)."""
    _check_prefix(prefix)
    return sorted(n for n in netns.listnetns() if n.startswith(prefix + "-"))


def namespace_pids(names: Sequence[str]) -> dict[str, list[int]]:
    """Pids of the processes inside each named namespace (as ``ip netns pids``)."""
    wanted = set(names)
    return {ns: pids for ns, pids in netns.ns_pids().items() if ns in wanted}


def _kill_pids(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _wait_gone(pids: Sequence[int], timeout_s: float) -> list[int]:
    """Wait until the pids no longer exist (or are zombies); return those still alive."""
    deadline = time.monotonic() + timeout_s
    alive = list(pids)
    while alive:
        alive = [p for p in alive if _alive(p)]
        if not alive or time.monotonic() >= deadline:
            break
        time.sleep(0.02)
    return alive


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def _purge_namespaces(names: Sequence[str]) -> tuple[list[int], list[str]]:
    """SIGKILL every process inside the namespaces, then delete them (which also
    removes their veths and iptables rules). Returns (pids that survived SIGKILL,
    problems deleting namespaces); a namespace already gone is not a problem."""
    pids = [p for ps in namespace_pids(names).values() for p in ps]
    _kill_pids(pids, signal.SIGKILL)
    still = _wait_gone(pids, STOP_TIMEOUT_S)
    problems = []
    for ns in names:
        try:
            netns.remove(ns)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                problems.append(f"netns remove {ns}: {exc}")
    return still, problems


def clean_leftovers(prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Kill every process in a ``<prefix>-*`` namespace, delete those namespaces; return them."""
    names = prefixed_namespaces(prefix)
    if not names:
        return []
    still, problems = _purge_namespaces(names)
    if still or problems:
        raise NetworkError(f"cleaning {names}: processes {still} survived SIGKILL; {problems}")
    return names


def _listening(pid: int, port: int) -> bool:
    """True if the process's network namespace has a TCP socket listening on port.

    /proc/<pid>/net/tcp{,6} show the sockets of *that process's* namespace, so no
    helper process has to enter the namespace."""
    want = f":{port:04X}"
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if cols[1].endswith(want) and cols[3] == "0A":   # 0A = LISTEN
                        return True
        except (FileNotFoundError, ProcessLookupError):
            return False
    return False


class Network:
    """A running topology; see the module docstring. Use as a context manager."""

    def __init__(self, topo: Topology, run_dir: str | Path, bmv2_json: str | Path | None, *,
                 name_prefix: str = DEFAULT_PREFIX, nfq_delay_bin: str | Path = NFQ_DELAY_BIN,
                 bmv2_log_level: str = BMV2_LOG_LEVEL,
                 tcp_congestion_control: str = TCP_CONGESTION_CONTROL,
                 grpc_port_base: int = T.GRPC_PORT_BASE,
                 thrift_port_base: int = T.THRIFT_PORT_BASE) -> None:
        _check_prefix(name_prefix)
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
                            T.HOST_IFNAME, h.gateway_ip, gw_mac[h.name])
            for h in topo.hosts.values()}
        self._switches = {s.name: _Switch(s.name, grpc_port_base + s.index,
                                          thrift_port_base + s.index)
                          for s in topo.switches.values()}
        bn = topo.bottleneck
        self.bottleneck = BottleneckPort(bn.switch, bn.port, f"{bn.switch}-p{bn.port}", bn.rate_pps,
                                         T.tm_queue_depth_pkts(bn.queue_limit_pkts))
        self.delay_elements: list[DelayElement] = self._plan_delays()
        self.timings: dict[str, float] = {}
        self._procs: list[subprocess.Popen] = []
        self._created_ns: list[str] = []
        self._is_up = False

    # ------------------------------------------------------------ public API
    def host_ip(self, host: str) -> str:
        return self._host(host).ip

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
        while not _listening(proc.pid, port):
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
        thrift = self.thrift_port(bn.switch)
        bmv2_tm.set_queue_depth(thrift, bn.port, bn.queue_depth_pkts, netns=self.switch_ns)
        bmv2_tm.set_queue_rate(thrift, bn.port, bn.rate_pps, netns=self.switch_ns)
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
        removed = clean_leftovers(self.prefix)
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
            netns.create(ns)
            self._created_ns.append(ns)
            # IPv6 off before any veth exists ("default" is inherited by new interfaces):
            # no router solicitations or MLD on the links (DESIGN §1). sysctl has no
            # netlink equivalent in pyroute2, and /proc/sys/net is per namespace of the
            # reader, so it runs inside the namespace.
            keys = ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]
            if ns != self.switch_ns:
                keys.append(f"net.ipv4.tcp_congestion_control={self.tcp_congestion_control}")
            self._run_ns(ns, ["sysctl", "-qw", *keys], 10, True)
            with IPRoute(netns=ns) as ipr:
                ipr.link("set", index=ipr.link_lookup(ifname="lo")[0], state="up")

    def _create_links(self) -> None:
        topo = self.topo
        with IPRoute() as ipr:
            # both ends are created directly in their namespaces: nothing appears in ours
            for link in topo.links:
                a_ns, a_if = self._end(link.a, link.a_port)
                b_ns, b_if = self._end(link.b, link.b_port)
                ipr.link("add", ifname=a_if, kind="veth", net_ns_fd=a_ns,
                         peer={"ifname": b_if, "net_ns_fd": b_ns})
        with IPRoute(netns=self.switch_ns) as ipr:
            for sw in topo.switches.values():
                for p in sw.ports.values():
                    idx = ipr.link_lookup(ifname=p.ifname)[0]
                    ipr.link("set", index=idx, address=p.mac, mtu=T.MTU_BYTES)
                    ipr.link("set", index=idx, state="up")
        for h in self.hosts.values():
            th = topo.hosts[h.name]
            with IPRoute(netns=h.ns) as ipr:
                idx = ipr.link_lookup(ifname=h.ifname)[0]
                ipr.link("set", index=idx, address=h.mac, mtu=T.MTU_BYTES)
                ipr.addr("add", index=idx, address=h.ip, prefixlen=th.prefixlen)
                ipr.link("set", index=idx, state="up")
                # the P4 router answers no ARP: a permanent entry for the gateway
                ipr.neigh("add", dst=h.gateway_ip, lladdr=h.gateway_mac, ifindex=idx,
                          state="permanent")
                ipr.route("add", dst="0.0.0.0/0", gateway=h.gateway_ip, oif=idx)
        # TX checksum offload off on both ends of every veth, else TCP/UDP through BMv2
        # arrive with bad checksums (DESIGN §1). pyroute2's ethtool support works only in
        # the caller's namespace, so the ethtool command runs inside each namespace.
        # Hosts: TSO/GSO off too, so TCP leaves in MSS-sized packets (a 64 KiB GSO
        # segment would cross BMv2 as ONE packet and defeat the packets/s link model);
        # GRO stays on at hosts (fewer packets for the receive-side delay element).
        for h in self.hosts.values():
            self._run_ns(h.ns, ["ethtool", "-K", h.ifname, "tx", "off", "tso", "off",
                                "gso", "off"], 10, True)
        # Switch side: with any segmentation/GRO offload on, libpcap (BMv2's port I/O)
        # sizes its ring frames for 256 KiB packets, the 2 MiB ring holds a few dozen
        # frames and bursts are lost before ingress (measured in the PTF suite: 47 of
        # 121 back-to-back packets reached the pipeline; all 121 with offloads off).
        ifnames = [p.ifname for s in topo.switches.values() for p in s.ports.values()]
        script = " && ".join(f"ethtool -K {name} tx off tso off gso off gro off >/dev/null"
                             for name in ifnames)
        self._run_ns(self.switch_ns, ["sh", "-c", script], 30, True)

    def _end(self, node: str, port: int | None) -> tuple[str, str]:
        if node in self.hosts:
            return self.hosts[node].ns, self.hosts[node].ifname
        return self.switch_ns, f"{node}-p{port}"

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
        # while nothing is bound). iptables-restore: one process per namespace; pyroute2's
        # nftables API is too low level to be worth it for a few rules.
        by_host: dict[str, list[str]] = {}
        for d in self.delay_elements:
            for src in d.sources:
                by_host.setdefault(d.host, []).append(
                    f"-A INPUT -i {T.HOST_IFNAME} -s {self.hosts[src].ip}/32 -j NFQUEUE "
                    f"--queue-num {d.queue_num} --queue-bypass")
        for host, rules in by_host.items():
            text = "*filter\n" + "\n".join(rules) + "\nCOMMIT\n"
            self._run_ns(self.hosts[host].ns, ["iptables-restore", "--noflush"], 30, True,
                         input=text)

    def _start_switches(self) -> None:
        for sw in self.topo.switches.values():
            s = self._switches[sw.name]
            argv = ["simple_switch_grpc", "--device-id", str(T.DEVICE_ID),
                    "--thrift-port", str(s.thrift_port)]
            for p in sw.ports.values():
                argv += ["-i", f"{p.number}@{p.ifname}"]
            # Always a level: without --log-level BMv2 formats every trace message per
            # packet into a null sink (its default level is trace), which costs CPU.
            argv += ["--log-file", str(self.run_dir / f"bmv2-{sw.name}"), "--log-flush",
                     "--log-level", self.bmv2_log_level]
            argv += ["--no-p4", "--", "--grpc-server-addr", f"127.0.0.1:{s.grpc_port}"]
            out = open(self.run_dir / f"bmv2-{sw.name}.out", "w")
            s.proc = self._popen(self.switch_ns, argv, stdout=out, stderr=subprocess.STDOUT)
            out.close()
        deadline = time.monotonic() + READY_TIMEOUT_S
        for s in self._switches.values():
            assert s.proc is not None
            while not (_listening(s.proc.pid, s.grpc_port) and _listening(s.proc.pid, s.thrift_port)):
                if s.proc.poll() is not None or time.monotonic() > deadline:
                    out = (self.run_dir / f"bmv2-{s.name}.out").read_text()
                    raise NetworkError(f"simple_switch_grpc {s.name} did not start "
                                       f"(gRPC {s.grpc_port}, Thrift {s.thrift_port}): {out}")
                time.sleep(0.05)

    def _set_queue_depths(self) -> None:
        """BMv2 TM depth above the P4 limit on every port; the bottleneck's rate too.

        Works before a pipeline is pushed, and a pushed pipeline keeps them (checked by
        topologies/tests/test_network.py); configure_bottleneck() sets the bottleneck again."""
        from mmaqm import bmv2_tm

        other = T.tm_queue_depth_pkts(T.OTHER_PORT_QUEUE_LIMIT_PKTS)
        for sw in self.topo.switches.values():
            for p in sw.ports.values():
                if (sw.name, p.number) != (self.bottleneck.switch, self.bottleneck.port):
                    bmv2_tm.set_queue_depth(self.thrift_port(sw.name), p.number, other,
                                            netns=self.switch_ns)
        self.configure_bottleneck()

    def _write_manifest(self) -> None:
        manifest = {
            "topology": self.topo.name, "prefix": self.prefix, "switch_ns": self.switch_ns,
            "tcp_congestion_control": self.tcp_congestion_control,
            "bmv2_log_level": self.bmv2_log_level,
            "hosts": {h.name: {"ns": h.ns, "ip": h.ip, "mac": h.mac, "gateway_ip": h.gateway_ip,
                               "gateway_mac": h.gateway_mac} for h in self.hosts.values()},
            "switches": {s.name: {"grpc": self.grpc_addr(s.name), "thrift": s.thrift_port,
                                  "pid": s.proc.pid if s.proc else None}
                         for s in self._switches.values()},
            "bottleneck": {"switch": self.bottleneck.switch, "port": self.bottleneck.port,
                           "rate_pps": self.bottleneck.rate_pps,
                           "queue_depth_pkts": self.bottleneck.queue_depth_pkts},
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
        if not self._is_up and not self._created_ns:
            return
        with _SignalsHeld():
            t0 = time.monotonic()
            problems: list[str] = []
            delay_procs = {id(d.proc) for d in self.delay_elements if d.proc is not None}
            switch_procs = {id(s.proc) for s in self._switches.values() if s.proc is not None}
            # traffic first, then delay elements (SIGTERM: they write their stats), then BMv2
            for group in (
                    [p for p in self._procs if id(p) not in delay_procs | switch_procs],
                    [p for p in self._procs if id(p) in delay_procs],
                    [p for p in self._procs if id(p) in switch_procs]):
                problems += _stop_group(group)
            self._procs.clear()
            ours = [ns for ns in self._namespaces() if ns in netns.listnetns()]
            still, purge_problems = _purge_namespaces(ours)
            problems += purge_problems
            self._created_ns.clear()
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
            if still:
                raise NetworkError(f"processes {still} survived SIGKILL in {ours}")

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
        # `ip netns exec` execs argv: the pid is argv's, its own session and process group
        p = subprocess.Popen(["ip", "netns", "exec", ns, *map(str, argv)], start_new_session=True,
                             **kw)
        self._procs.append(p)
        return p

    def _run_ns(self, ns: str, argv: Sequence[str], timeout: float, check: bool,
                **kw: Any) -> subprocess.CompletedProcess:
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        r = subprocess.run(["ip", "netns", "exec", ns, *map(str, argv)], timeout=timeout, **kw)
        if check and r.returncode != 0:
            raise NetworkError(f"[{ns}] {' '.join(map(str, argv))} failed ({r.returncode}): "
                               f"{(r.stderr or '').strip()}")
        return r


def _stop_group(procs: list[subprocess.Popen]) -> list[str]:
    """SIGTERM every process group, wait up to STOP_TIMEOUT_S, SIGKILL the rest."""
    problems = []
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            problems.append(f"{p.args}: no exit {STOP_TIMEOUT_S} s after SIGTERM, killed")
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=STOP_TIMEOUT_S)
    return problems


class _SignalsHeld:
    """Defer SIGINT/SIGTERM while cleaning up (main thread only); re-deliver them afterwards."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __enter__(self) -> None:
        self.pending: list[int] = []
        self.saved: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self.saved[sig] = signal.signal(sig, lambda s, _f: self.pending.append(s))

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        for sig in dict.fromkeys(self.pending):
            signal.raise_signal(sig)
