"""Run a scenario's traffic on a network and collect the raw files.

    with network_up(...) as net:                       # anything implementing Net
        res = run_scenario(net, scenario, "results/red", bottleneck_rate_kbps=25000)
    summary = analysis.analyze(res.out_dir)            # or analysis.analyze(res)

Order of events:
  1. checks: each TCP group's congestion control is available; CBR fractions of
     the bottleneck are resolved to kbit/s; ``net.ipv4.tcp_no_metrics_save=1`` in
     every TCP source host (no cached RTT/cwnd from an earlier run leaks in);
  2. receivers start first and must report ready: one ``tcpbulk recv`` per TCP
     group on its own port (the 20-packet window clamp is set there), one
     ``mmapp-recv`` per sink host of MM_APP/CBR flows, each writing a CSV;
  3. senders start and set themselves up *before* the scenario: each TCP group's
     ``tcpbulk send`` opens all its connections now (idle path, no SYN loss);
     each MM_APP/CBR flow is a Python process that has already imported mmapp;
  4. when every sender is ready, t0 (CLOCK_REALTIME ns) = now + GO_LEAD_S and
     ``go <t0>`` goes to every sender's stdin; each starts at t0 + start_s on its
     own (so start times do not depend on this process being scheduled);
  5. about once a second ``progress(elapsed_s, phase, live_rates_kbps)``;
  6. at the end: wait for the senders to stop (they stop themselves at
     t0 + stop_s), wait DRAIN_S, SIGTERM the receivers (they write their CSVs),
     check every file; ``traffic.json`` in out_dir lists everything (the
     analysis reads it). A ``finally`` stops whatever is still running.

Why not iperf3 (as first planned): its client connects the -P streams one
after another with a blocking connect, so a 30-stream group over a 60 ms RTT
starts ~2 s after launch (measured 2.07 s, iperf3 3.12), and a SYN lost at a
congested bottleneck adds 1 s more. ``tcpbulk`` pre-connects and starts on
time; see its docstring for the window and MSS settings.

Every process is started with ``net.popen`` (so the network's teardown kills
it on errors) and its pid must be the program's own (``ip netns exec`` execs):
the run signals it by pid and reads its CPU time from /proc/<pid>/stat.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Protocol, Sequence, Union

from .cpu import process_stat
from .lab import stop_processes
from .samples import read_send_log
from .scenario import (CLASSES, Scenario, check_congestion_control, initcwnd_routes,
                       parse_scenario_dict)

# ---------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------

TCP_BASE_PORT = 5201          #: TCP group i listens on TCP_BASE_PORT + i
UDP_BASE_PORT = 5001          #: UDP sink host j listens on UDP_BASE_PORT + j
READY_TIMEOUT_S = 20.0        #: receivers and senders must be set up within this
GO_LEAD_S = 0.3               #: t0 = (all senders ready) + this
PROGRESS_PERIOD_S = 1.0
SENDER_GRACE_S = 5.0          #: senders must exit this long after their stop time
DRAIN_S = 0.5                 #: after the last sender, before stopping receivers
STOP_TIMEOUT_S = 10.0         #: SIGTERM -> exit (a receiver writes its CSV then)
CLEANUP_STOP_TIMEOUT_S = 3.0  #: SIGTERM -> SIGKILL for what is left after a failure
START_TOLERANCE_MS = 50.0     #: a flow starting later than this is a warning
MANIFEST = "traffic.json"
TCP_RECV_TICK_MS = 2.0


class Net(Protocol):
    """What run_scenario needs from a network (topologies' network module)."""

    def popen(self, host: str, argv: list[str], **popen_kwargs: Any) -> subprocess.Popen:
        """Start argv in the host's namespace; tracked and killed at teardown."""
        ...

    def run(self, host: str, argv: list[str], timeout: float = ...) -> subprocess.CompletedProcess:
        """Run argv in the host's namespace to completion."""
        ...

    def host_ip(self, host: str) -> str:
        """The host's IPv4 address (no prefix length). A network for a scenario with
        ipv6 flows takes ``host_ip(host, "ipv6")`` too (network.Network(ipv6=True))."""
        ...


def flow_ips(net: Net, scenario: Scenario) -> dict[tuple[str, str], str]:
    """{(host, family): address} of every host the scenario's flows use, per family
    they use it in."""
    out = {}
    for g in scenario.groups:
        for h in (g.src, g.dst):
            out[(h, g.family)] = (net.host_ip(h) if g.family == "ipv4"
                                  else net.host_ip(h, g.family))  # type: ignore[call-arg]
    return out


#: the address a receiver binds to: any of its family (IPv6's "::" takes both families)
ANY_ADDR = {"ipv4": "0.0.0.0", "ipv6": "::"}


#: progress(elapsed_s, phase name or None, live receive rates in kbit/s by class label)
ProgressFn = Callable[[float, Optional[str], dict[str, float]], None]


class TrafficError(RuntimeError):
    """A traffic process failed or an expected output file is missing."""


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


@dataclass
class TcpGroupFiles:
    group: int
    host_src: str
    host_dst: str
    port: int
    flow_ids: list[int]
    recv_csv: str      #: t_ns,flow_id,bytes (TCP payload bytes)
    recv_out: str      #: receiver stdout: live lines + final JSON summary
    send_json: str     #: sender summary (per-flow start, sport, TCP_INFO)
    packet_bytes: int
    mss_option: int
    window_clamp_bytes: int


@dataclass
class UdpSinkFiles:
    host: str
    port: int
    flow_ids: list[int]
    recv_csv: str      #: mmapp recv CSV (one row per packet)
    recv_out: str      #: mmapp recv JSON summary


@dataclass
class UdpSenderFiles:
    flow_id: int
    group: int
    kind: str
    rate_kbps: Optional[float]  #: CBR rate (resolved), None for MM_APP
    log_csv: str       #: mmapp send --log
    out_json: str      #: mmapp send JSON summary (stdout)


@dataclass
class TrafficResult:
    """Everything a run produced. Paths are relative to ``out_dir``."""

    out_dir: Path
    t0_ns: int                      #: CLOCK_REALTIME ns of scenario time 0
    scenario: Scenario
    bottleneck_rate_kbps: Optional[float]
    tcp_groups: list[TcpGroupFiles]
    udp_sinks: list[UdpSinkFiles]
    udp_senders: list[UdpSenderFiles]
    #: flow id -> {"scheduled_ns", "actual_ns", "late_ms"} (actual = first send)
    starts: dict[int, dict[str, float]] = field(default_factory=dict)
    cpu_s: dict[str, float] = field(default_factory=dict)  #: process label -> CPU seconds
    end_ns: int = 0                 #: when the receivers were told to stop
    warnings: list[str] = field(default_factory=list)

    def path(self, rel: str) -> Path:
        return self.out_dir / rel

    def files(self) -> list[Path]:
        """Every raw file of the run."""
        out = []
        for g in self.tcp_groups:
            out += [self.path(g.recv_csv), self.path(g.recv_out), self.path(g.send_json)]
        for s in self.udp_sinks:
            out += [self.path(s.recv_csv), self.path(s.recv_out)]
        for u in self.udp_senders:
            out += [self.path(u.log_csv), self.path(u.out_json)]
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "mmaqm-traffic/1",
            "t0_ns": self.t0_ns, "end_ns": self.end_ns,
            "bottleneck_rate_kbps": self.bottleneck_rate_kbps,
            "scenario": self.scenario.to_dict(),
            "tcp_groups": [asdict(g) for g in self.tcp_groups],
            "udp_sinks": [asdict(s) for s in self.udp_sinks],
            "udp_senders": [asdict(u) for u in self.udp_senders],
            "starts": {str(k): v for k, v in self.starts.items()},
            "cpu_s": self.cpu_s,
            "warnings": self.warnings,
        }

    @classmethod
    def load(cls, out_dir: Union[str, Path]) -> "TrafficResult":
        """Read ``traffic.json`` written by run_scenario."""
        d = Path(out_dir)
        j = json.loads((d / MANIFEST).read_text())
        return cls(
            out_dir=d, t0_ns=int(j["t0_ns"]), end_ns=int(j.get("end_ns", 0)),
            scenario=parse_scenario_dict(j["scenario"]),
            bottleneck_rate_kbps=j.get("bottleneck_rate_kbps"),
            tcp_groups=[TcpGroupFiles(**g) for g in j["tcp_groups"]],
            udp_sinks=[UdpSinkFiles(**s) for s in j["udp_sinks"]],
            udp_senders=[UdpSenderFiles(**u) for u in j["udp_senders"]],
            starts={int(k): v for k, v in j.get("starts", {}).items()},
            cpu_s=j.get("cpu_s", {}), warnings=list(j.get("warnings", [])),
        )


# ---------------------------------------------------------------------------
# Process bookkeeping
# ---------------------------------------------------------------------------


@dataclass
class _Proc:
    label: str
    role: str                      #: tcp-recv, udp-recv, tcp-send, udp-send
    popen: subprocess.Popen
    err_path: Path
    out_path: Path
    stop_ns: int = 0               #: senders: scheduled stop (0 = unknown yet)
    cpu_s: float = 0.0
    ns_inode: int = 0
    done: bool = False

    def tail(self, n: int = 800) -> str:
        try:
            return self.err_path.read_text()[-n:].strip()
        except OSError:
            return ""


def _sample_cpu(p: _Proc) -> None:
    st = process_stat(p.popen.pid)
    if st is not None:
        p.cpu_s = max(p.cpu_s, st[1])


def _stop(procs: Sequence[_Proc], timeout_s: float = STOP_TIMEOUT_S) -> None:
    """Stop the processes together (lab.stop_processes), recording each one's CPU time
    after it exited and before it is reaped."""
    by_popen = {id(p.popen): p for p in procs}
    stop_processes([p.popen for p in procs], timeout_s,
                   on_exit=lambda popen: _sample_cpu(by_popen[id(popen)]))
    for p in procs:
        p.done = True


def _reap_if_exited(p: _Proc) -> Optional[int]:
    """If the process has exited, record its final CPU time, reap it, return rc."""
    st = process_stat(p.popen.pid)
    if st is not None and st[0] != "Z":
        p.cpu_s = max(p.cpu_s, st[1])
        return None
    if st is not None:
        p.cpu_s = max(p.cpu_s, st[1])
    rc = p.popen.wait(timeout=5)
    p.done = True
    return rc


def _wait_ready(procs: Sequence[_Proc], marker: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    pending = list(procs)
    while pending:
        for p in list(pending):
            try:
                text = p.err_path.read_text()
            except OSError:
                text = ""
            if marker in text:
                pending.remove(p)
            elif p.popen.poll() is not None:
                raise TrafficError(f"{p.label} exited ({p.popen.returncode}) before it was ready: {p.tail()}")
        if pending and time.monotonic() > deadline:
            raise TrafficError(f"not ready within {timeout} s: "
                               + "; ".join(f"{p.label}: {p.tail(200)!r}" for p in pending))
        if pending:
            time.sleep(0.02)


# ---------------------------------------------------------------------------
# Live rates (cheap: receiver's own totals for TCP, per-namespace UDP MIB for UDP)
# ---------------------------------------------------------------------------


class _LiveRates:
    """Per-class receive rates for progress reports.

    TCP: the tcpbulk receivers print their byte total once a second (exact,
    TCP payload). MM_APP/CBR: UDP ``InDatagrams`` of the sink namespace from
    /proc/<receiver pid>/net/snmp times the flows' packet size; a namespace
    receiving both tagged and untagged flows is reported as one label
    ("TAGGED+UNTAGGED"): the counter cannot tell them apart.
    """

    def __init__(self, tcp_outs: list[Path], udp: list[tuple[int, str, float]]) -> None:
        self.tcp_outs = {p: 0 for p in tcp_outs}  # path -> read offset
        self.tcp_bytes = {p: 0 for p in tcp_outs}
        self.udp = udp  # (pid, label, bytes per datagram), one per namespace
        self.last: Optional[tuple[float, dict[str, float]]] = None

    def _totals(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for p, off in self.tcp_outs.items():
            try:
                with open(p) as f:
                    f.seek(off)
                    chunk = f.read()
            except OSError:
                continue
            end = chunk.rfind("\n") + 1
            self.tcp_outs[p] = off + end
            for line in chunk[:end].splitlines():
                try:
                    j = json.loads(line)
                except ValueError:
                    continue
                if j.get("live"):
                    self.tcp_bytes[p] = int(j["bytes"])
        if self.tcp_outs:
            out["TCP"] = float(sum(self.tcp_bytes.values()))
        for pid, label, size in self.udp:
            n = _udp_in_datagrams(pid)
            if n is not None:
                out[label] = out.get(label, 0.0) + n * size
        return out

    def rates_kbps(self) -> dict[str, float]:
        now = time.monotonic()
        tot = self._totals()
        prev, self.last = self.last, (now, tot)
        if prev is None or now <= prev[0]:
            return {k: 0.0 for k in tot}
        dt = now - prev[0]
        return {k: round(max(0.0, v - prev[1].get(k, 0.0)) * 8 / dt / 1000.0, 1) for k, v in tot.items()}


def _udp_in_datagrams(pid: int) -> Optional[int]:
    """UDP datagrams the process's namespace received, IPv4 (snmp) and IPv6 (snmp6)."""
    try:
        with open(f"/proc/{pid}/net/snmp") as f:
            lines = [ln.split() for ln in f if ln.startswith("Udp:")]
    except OSError:
        return None
    if len(lines) < 2:
        return None
    n = int(lines[1][lines[0].index("InDatagrams")])
    try:
        with open(f"/proc/{pid}/net/snmp6") as f:
            n += sum(int(ln.split()[1]) for ln in f if ln.startswith("Udp6InDatagrams"))
    except (OSError, IndexError, ValueError):
        pass        # IPv6 off in the namespace: no snmp6
    return n


def _netns_inode(pid: int) -> int:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return 0


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------


def _py_env() -> dict[str, str]:
    """Environment for child Pythons: mmaqm_exp importable even if not pip-installed."""
    env = dict(os.environ)
    topo = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = topo + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _py(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def _fmt(x: float) -> str:
    return repr(float(x))


def run_scenario(
    net: Net,
    scenario: Scenario,
    out_dir: Union[str, Path],
    *,
    progress: Optional[ProgressFn] = None,
    bottleneck_rate_kbps: Optional[float] = None,
) -> TrafficResult:
    """Run every flow of ``scenario`` on ``net``; raw files go to ``out_dir``.

    Returns the TrafficResult (also written as ``out_dir/traffic.json``) with
    t0_ns, the files, actual start times and the CPU time of each generator.
    Raises ScenarioError before starting anything if a congestion control is
    unavailable or a CBR fraction needs ``bottleneck_rate_kbps``; raises
    TrafficError if a process fails or a file is missing. All processes are
    stopped when it returns or raises.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    check_congestion_control(scenario)
    cbr_rates = {g.index: g.cbr_rate_kbps(bottleneck_rate_kbps) for g in scenario.groups if g.kind == "cbr"}
    ips = flow_ips(net, scenario)
    (out / "scenario.json").write_text(json.dumps(scenario.to_dict(), indent=1))
    warnings: list[str] = []
    env = _py_env()

    for host in sorted({g.src for g in scenario.groups if g.kind == "tcp"}):
        try:
            ok = getattr(net.run(host, ["sysctl", "-qw", "net.ipv4.tcp_no_metrics_save=1"],
                                 timeout=10), "returncode", 0) == 0
        except Exception:  # noqa: BLE001 - a Net whose run raises on failure
            ok = False
        if not ok:
            warnings.append(f"{host}: could not set net.ipv4.tcp_no_metrics_save=1")
    # before any sender starts: tcpbulk connects at setup, and a connection takes its
    # initial (and restart-after-idle) window from the route when it is established
    for (src, dst), pkts in sorted(initcwnd_routes(scenario).items()):
        set_initcwnd(net, src, ips[(dst, "ipv4")], pkts)   # ipv4 groups only (scenario)

    procs: list[_Proc] = []
    with ExitStack() as stack:

        def start(label: str, role: str, host: str, argv: list[str], stdin: bool = False) -> _Proc:
            out_path, err_path = out / f"{label}.out", out / f"{label}.err"
            fo = stack.enter_context(open(out_path, "w"))
            fe = stack.enter_context(open(err_path, "w"))
            kw: dict[str, Any] = {"stdout": fo, "stderr": fe, "env": env}
            kw["stdin"] = subprocess.PIPE if stdin else subprocess.DEVNULL
            kw["text"] = True   # "go <t0>" is written as text, whatever the Net's default
            p = _Proc(label, role, net.popen(host, argv, **kw), err_path, out_path)
            procs.append(p)
            return p

        try:
            return _run(net, scenario, out, progress, bottleneck_rate_kbps, cbr_rates, ips,
                        warnings, start, procs)
        finally:
            _stop([p for p in procs if not p.done], timeout_s=CLEANUP_STOP_TIMEOUT_S)
            for p in procs:
                if p.popen.stdin is not None:
                    try:
                        p.popen.stdin.close()
                    except OSError:
                        pass


def parse_route_get(text: str) -> tuple[Optional[str], str]:
    """(gateway or None, device) from `ip -o route get DST`'s output
    ("10.0.2.2 via 10.0.1.1 dev eth0 src 10.0.1.2 uid 0 \\    cache")."""
    words = text.split()
    if "dev" not in words or words.index("dev") + 1 >= len(words):
        raise TrafficError(f"no device in 'ip route get' output: {text.strip()!r}")
    via = words[words.index("via") + 1] if "via" in words[:-1] else None
    return via, words[words.index("dev") + 1]


def initcwnd_route_argv(dst_ip: str, via: Optional[str], dev: str, initcwnd_pkts: int) -> list[str]:
    """`ip route replace DST/32 [via GW] dev DEV initcwnd N`: a host route carrying the
    initial congestion window of new connections toward DST."""
    return (["ip", "route", "replace", f"{dst_ip}/32"] + (["via", via] if via else [])
            + ["dev", dev, "initcwnd", str(initcwnd_pkts)])


def set_initcwnd(net: Net, host: str, dst_ip: str, initcwnd_pkts: int) -> None:
    """Give host's connections toward dst_ip an initial window of initcwnd_pkts segments,
    then read the route back; TrafficError if it does not say so."""
    got = net.run(host, ["ip", "-o", "route", "get", dst_ip], timeout=10)
    via, dev = parse_route_get(getattr(got, "stdout", "") or "")
    argv = initcwnd_route_argv(dst_ip, via, dev, initcwnd_pkts)
    done = net.run(host, argv, timeout=10)
    shown = net.run(host, ["ip", "route", "show", f"{dst_ip}/32"], timeout=10)
    if f"initcwnd {initcwnd_pkts}" not in (getattr(shown, "stdout", "") or ""):
        err = (getattr(done, "stderr", "") or "").strip()
        raise TrafficError(f"{host}: '{' '.join(argv)}' did not take effect"
                           + (f": {err}" if err else ""))


def _run(net: Net, scenario: Scenario, out: Path, progress: Optional[ProgressFn],
         bottleneck_rate_kbps: Optional[float], cbr_rates: dict[int, float],
         ips: dict[tuple[str, str], str],
         warnings: list[str], start: Callable[..., _Proc], procs: list[_Proc]) -> TrafficResult:
    tcp_groups = [g for g in scenario.groups if g.kind == "tcp"]
    udp_groups = [g for g in scenario.groups if g.kind != "tcp"]
    flows = {f.flow_id: f for f in scenario.flows}

    # -- 1. receivers ------------------------------------------------------------
    tcp_files: list[TcpGroupFiles] = []
    recv: list[_Proc] = []
    for g in tcp_groups:
        port = TCP_BASE_PORT + g.index
        label = f"tcp-g{g.index}-recv"
        tf = TcpGroupFiles(g.index, g.src, g.dst, port, g.flow_ids, f"{label}.csv", f"{label}.out",
                           f"tcp-g{g.index}-send.json", int(g.params["packet_bytes"]),
                           g.tcp_mss_option, g.tcp_window_bytes)
        tcp_files.append(tf)
        recv.append(start(label, "tcp-recv", g.dst, _py(
            "mmaqm_exp.tcpbulk", "recv", "--bind", ANY_ADDR[g.family],
            "--port", str(port), "--out", str(out / tf.recv_csv),
            "--window-clamp-bytes", str(tf.window_clamp_bytes), "--tick-ms", str(TCP_RECV_TICK_MS))))
    sinks: list[UdpSinkFiles] = []
    sink_port: dict[str, int] = {}
    for j, host in enumerate(sorted({g.dst for g in udp_groups})):
        port = UDP_BASE_PORT + j
        sink_port[host] = port
        label = f"udp-recv-{host}"
        fids = [fid for g in udp_groups if g.dst == host for fid in g.flow_ids]
        sinks.append(UdpSinkFiles(host, port, fids, f"{label}.csv", f"{label}.out"))
        # one sink per host; a dual-stack one ("::") when an ipv6 flow goes there
        bind = ANY_ADDR["ipv6" if any(g.family == "ipv6" for g in udp_groups if g.dst == host)
                        else "ipv4"]
        recv.append(start(label, "udp-recv", host, _py(
            "mmaqm_exp.mmapp", "recv", "--bind", bind, "--port", str(port),
            "--out", str(out / f"{label}.csv"))))
    _wait_ready([p for p in recv if p.role == "tcp-recv"], "tcpbulk-recv: ready", READY_TIMEOUT_S)
    _wait_ready([p for p in recv if p.role == "udp-recv"], "mmapp-recv: ready", READY_TIMEOUT_S)
    for p in recv:
        p.ns_inode = _netns_inode(p.popen.pid)

    # -- 2. senders, set up ahead of t0 ------------------------------------------
    senders: list[_Proc] = []
    for g, tf in zip(tcp_groups, tcp_files):
        p = start(f"tcp-g{g.index}-send", "tcp-send", g.src, _py(
            "mmaqm_exp.tcpbulk", "send", "--dst", ips[(g.dst, g.family)], "--port", str(tf.port),
            "--flow-ids", ",".join(map(str, g.flow_ids)), "--cc", str(g.params["cc"]),
            "--mss", str(tf.mss_option), "--dscp", str(g.dscp),
            "--start-s", _fmt(g.start_s), "--stop-s", _fmt(g.stop_s),
            "--spread-s", _fmt(float(g.params.get("start_spread_s", 0.0))),
            "--go-stdin", "--out", str(out / tf.send_json)), stdin=True)
        p.stop_ns = int(g.stop_s * 1e9)
        senders.append(p)
    udp_files: list[UdpSenderFiles] = []
    for g in udp_groups:
        for fid in g.flow_ids:
            label = f"udp-send-{fid}"
            uf = UdpSenderFiles(fid, g.index, g.kind, cbr_rates.get(g.index), f"{label}.csv", f"{label}.out")
            udp_files.append(uf)
            args = ["--dst", ips[(g.dst, g.family)], "--port", str(sink_port[g.dst]),
                    "--flow-id", str(fid),
                    "--duration", _fmt(g.stop_s - g.start_s), "--size", str(g.params["packet_bytes"]),
                    "--dscp", str(g.dscp), "--log", str(out / uf.log_csv)]
            if g.kind == "cbr":
                args += ["--cbr-kbps", _fmt(cbr_rates[g.index])]
                if g.params.get("upta_loss_threshold") is not None:   # P-UPTA's IPv4 option
                    from mmaqm.algorithms.upta import option_bytes
                    args += ["--ip-option", option_bytes(g.params["upta_loss_threshold"]).hex()]
            else:
                args += ["--scales", ",".join(f"{x:g}" for x in g.params["scales_kbps"]),
                         "--initial-scale", str(g.params["initial_scale"]),
                         "--fb-timeout", _fmt(g.params["fb_timeout_s"])]
            p = start(label, "udp-send", g.src, _py("mmaqm_exp.traffic", "mmapp-send-at",
                                                     "--start-s", _fmt(g.start_s), "--", *args), stdin=True)
            p.stop_ns = int(g.stop_s * 1e9)
            senders.append(p)
    _wait_ready([p for p in senders if p.role == "tcp-send"], "tcpbulk-send: ready", READY_TIMEOUT_S)
    _wait_ready([p for p in senders if p.role == "udp-send"], "mmapp-send-at: ready", READY_TIMEOUT_S)

    # -- 3. go ----------------------------------------------------------------------
    t0_ns = time.time_ns() + int(GO_LEAD_S * 1e9)
    for p in senders:
        assert p.popen.stdin is not None
        p.popen.stdin.write(f"go {t0_ns}\n")
        p.popen.stdin.flush()
        p.popen.stdin.close()
        p.stop_ns += t0_ns

    # -- 4. monitor ---------------------------------------------------------------
    # one UDP counter per sink namespace (several sink hosts may share one)
    by_ns: dict[int, tuple[int, set[str]]] = {}
    for p, sink in zip([p for p in recv if p.role == "udp-recv"], sinks):
        pid, hosts = by_ns.setdefault(p.ns_inode or -p.popen.pid, (p.popen.pid, set()))
        hosts.add(sink.host)
    udp_live: list[tuple[int, str, float]] = []
    for pid, hosts in by_ns.values():
        gs = [g for g in udp_groups if g.dst in hosts]
        label = "+".join(sorted({g.cls for g in gs}, key=CLASSES.index))
        size = sum(int(g.params["packet_bytes"]) * g.count for g in gs) / max(1, sum(g.count for g in gs))
        udp_live.append((pid, label, size))
    live = _LiveRates([out / tf.recv_out for tf in tcp_files], udp_live)
    live.rates_kbps()
    end_ns = t0_ns + int(scenario.duration_s * 1e9)
    next_report = t0_ns + int(PROGRESS_PERIOD_S * 1e9)
    while True:
        now = time.time_ns()
        for p in procs:
            if p.done:
                continue
            rc = _reap_if_exited(p)
            if rc is None:
                continue
            if p.role in ("tcp-recv", "udp-recv"):
                raise TrafficError(f"{p.label} exited ({rc}) during the run: {p.tail()}")
            if rc != 0:
                raise TrafficError(f"{p.label} failed ({rc}): {p.tail()}")
            if now < p.stop_ns - int(0.2e9):
                warnings.append(f"{p.label} exited {(p.stop_ns - now) / 1e9:.2f} s before its stop time")
        if all(p.done for p in senders) and now >= end_ns:
            break
        if now > end_ns + int(SENDER_GRACE_S * 1e9):
            late = [p.label for p in senders if not p.done]
            raise TrafficError(f"senders still running {SENDER_GRACE_S} s after the end: {late}")
        if now >= next_report and now < end_ns + int(PROGRESS_PERIOD_S * 1e9):
            for p in procs:
                if not p.done:
                    _sample_cpu(p)
            if progress is not None:
                el = (now - t0_ns) / 1e9
                ph = scenario.phase_at(el)
                progress(round(el, 3), ph.name if ph else None, live.rates_kbps())
            next_report += int(PROGRESS_PERIOD_S * 1e9)
        wake = min(next_report, max(end_ns, now + int(0.05e9)))
        time.sleep(min(0.1, max(0.005, (wake - time.time_ns()) / 1e9)))

    # -- 5. stop receivers, check files ---------------------------------------------
    time.sleep(DRAIN_S)
    stop_ns = time.time_ns()
    _stop(recv)
    for p in recv:
        if p.popen.returncode not in (0, -signal.SIGTERM):
            raise TrafficError(f"{p.label} exited {p.popen.returncode}: {p.tail()}")
    res = TrafficResult(out, t0_ns, scenario, bottleneck_rate_kbps, tcp_files, sinks, udp_files,
                        end_ns=stop_ns, warnings=warnings)
    missing = [str(f) for f in res.files() if not f.exists()]
    if missing:
        raise TrafficError(f"missing output files: {missing}")
    res.cpu_s = {p.label: round(p.cpu_s, 3) for p in procs}
    res.starts = _actual_starts(res, flows)
    late = {fid: s["late_ms"] for fid, s in res.starts.items() if s["late_ms"] > START_TOLERANCE_MS}
    if late:
        warnings.append(f"{len(late)} flow(s) started > {START_TOLERANCE_MS:g} ms late: "
                        + ", ".join(f"{k}: {v:.1f} ms" for k, v in sorted(late.items())[:10]))
    missing_starts = sorted(set(flows) - set(res.starts))
    if missing_starts:
        warnings.append(f"no start time recorded for flows {missing_starts} (never sent?)")
    (out / MANIFEST).write_text(json.dumps(res.to_json(), indent=1))
    return res


def _actual_starts(res: TrafficResult, flows: dict) -> dict[int, dict[str, float]]:
    """Scheduled vs actual first-send time of every flow (sender side)."""
    out: dict[int, dict[str, float]] = {}
    for tf in res.tcp_groups:
        j = json.loads(res.path(tf.send_json).read_text())
        for fid, f in j["flows"].items():
            if f.get("first_send_ns"):
                sched = int(f["scheduled_start_ns"])
                out[int(fid)] = {"scheduled_ns": sched, "actual_ns": int(f["first_send_ns"]),
                                 "late_ms": round((int(f["first_send_ns"]) - sched) / 1e6, 3)}
    for uf in res.udp_senders:
        rows = read_send_log(res.path(uf.log_csv))
        st = [r for r in rows if r.event == "start"]
        if st:
            sched = res.t0_ns + int(round(flows[uf.flow_id].start_s * 1e9))
            out[uf.flow_id] = {"scheduled_ns": sched, "actual_ns": st[0].t_ns,
                               "late_ms": round((st[0].t_ns - sched) / 1e6, 3)}
    return out


# ---------------------------------------------------------------------------
# CLI: the delayed MM_APP/CBR sender
# ---------------------------------------------------------------------------


def _mmapp_send_at(argv: Sequence[str]) -> int:
    """Import mmapp, say ready, wait for 'go <t0_ns>' and t0 + start_s, then send.

    Python start-up and imports (~0.1-0.3 s on a busy machine) happen before
    t0, so the first packet leaves within a few ms of its scheduled time.
    """
    p = argparse.ArgumentParser(prog="mmapp-send-at")
    p.add_argument("--start-s", type=float, required=True)
    p.add_argument("rest", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    rest = a.rest[1:] if a.rest and a.rest[0] == "--" else a.rest
    from . import mmapp  # noqa: PLC0415

    mmapp.send_main  # noqa: B018 - imported and resolved before the go
    print("mmapp-send-at: ready", file=sys.stderr, flush=True)
    line = sys.stdin.readline().split()
    if len(line) != 2 or line[0] != "go":
        print(f"mmapp-send-at: expected 'go <t0_ns>', got {line!r}", file=sys.stderr)
        return 2
    at = int(line[1]) + int(round(a.start_s * 1e9))
    while True:
        d = at - time.time_ns()
        if d <= 0:
            break
        time.sleep(min(d / 1e9, 0.2))
    return mmapp.send_main(rest)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "mmapp-send-at":
        return _mmapp_send_at(argv[1:])
    print("usage: python -m mmaqm_exp.traffic mmapp-send-at --start-s S -- MMAPP_SEND_ARGS "
          "(a dry run without a switch: python -m mmaqm_exp.netns run)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
