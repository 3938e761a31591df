"""The one namespace/BMv2 lifecycle: the PTF runner, the bench, the experiment network and
the two-namespace test bed all build on it.

    with Lab("mmb") as lab:                 # first removes a killed run's mmb, mmb-* namespaces
        ns = lab.add_namespace("mmb-bench")
        lab.add_veths([(VethEnd(ns, "sw1", RAW_PORT), VethEnd(ns, "h1", RAW_PORT))])
        [sw] = lab.start_switches(ns, [SwitchSpec({1: "sw1"}, device_id=1, grpc_port=9559,
                                                  thrift_port=9090, out_path=out)])
        lab.run(ns, ["ip", "-br", "link"])
    # every process stopped, every namespace deleted: also after an exception or a stop signal

Every namespace of a Lab is named ``<prefix>`` or ``<prefix>-...``: that is how the next
run with the same prefix finds and removes what a crashed run left (killing every process
inside a namespace, then deleting it, which deletes its veths and iptables rules with it).

Processes run through ``ip netns exec`` (which execs: the pid is the program's own) in a
session of their own. :func:`stop_processes` is the one way to stop them: SIGTERM to each
process group, one deadline for all, SIGKILL to the groups still running, reap.
:func:`catch_stop_signals` is the one SIGTERM/SIGINT/SIGHUP handler: it turns a signal into
a clean stop (a flag that loops poll, or :class:`StopRequested` raised in the main thread
so that ``with``/``finally`` teardown runs); :func:`stop_signals_deferred` holds those
signals while a teardown runs; :class:`ExitOnStop` turns a stop or a LabError into the
tool's message and exit status.

Platform facts (checked on these machines; docs/design.md §1.5):

* IPv6 off in every namespace ("all" and "default" before any veth exists, which then
  inherits it) and on every veth explicitly: no router solicitations or MLD on the links.
  A dual-stack run turns it on again on the host interfaces alone (:func:`host_ipv6_script`):
  a static address without DAD, no link-local address, no router solicitations, a static
  neighbour for the gateway as for IPv4, and every IPv6 multicast packet the host would
  send (MLD reports for its solicited-node group) dropped on output, so that no packet
  but the experiment's enters the switch and its counters. The switch-side ends keep it off.
* TX checksum offload off on every veth end, else TCP/UDP through BMv2 arrive with bad
  checksums.
* BMv2 ports and raw test ports (PTF, the bench's udpgen) also have TSO, GSO and GRO off:
  with any segmentation/GRO offload on, libpcap (BMv2's port I/O) sizes its ring frames
  for 256 KiB packets, the 2 MiB ring holds a few dozen frames and bursts are lost before
  ingress (measured in the PTF suite: 47 of 121 back-to-back packets reached the pipeline;
  all 121 with offloads off). RX checksum offload is off there too, as the PTF suite and
  the bench have always been run.
* Host ends (a kernel TCP/UDP stack): TSO and GSO off as well, so TCP leaves in MSS-sized
  packets (a 64 KiB GSO segment would cross BMv2 as ONE packet and defeat a packets/s link
  model); GRO stays on (fewer packets for a receive-side delay element).
* simple_switch_grpc always gets ``--log-level`` (default "off"): without it BMv2 formats
  every trace message into a null sink (its default level is trace), which costs CPU. It
  gets no ``--notifications-addr``: simple_switch_grpc captures notifications itself and
  only warns about that option (targets/simple_switch_grpc/switch_runner.cpp).

Standard library only (the traffic generators import the signal helper). Needs root for
everything but the signal helpers.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NETNS_DIR = Path("/run/netns")              # where `ip netns add` binds named namespaces
REQUIRED_TOOLS = ("ip", "ethtool", "sysctl")
STOP_TIMEOUT_S = 5.0                        # SIGTERM -> SIGKILL grace (one deadline per call)
KILL_TIMEOUT_S = 5.0                        # SIGKILL -> gone
READY_TIMEOUT_S = 15.0                      # simple_switch_grpc start-up
POLL_S = 0.02
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
IFNAME_MAX_LEN = 15                         # Linux IFNAMSIZ - 1
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")       # namespace names and prefixes
IFNAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")      # no '.': it splits sysctl keys
BMV2_LOG_OFF = "off"
BMV2_LOG_LEVELS = ("trace", "debug", "info", "warn", "error", "off")
# Every switch has two traffic-manager queues per port: the FIFO (priority 0)
# and ChIPS's cut-in queue (priority 1, served first; p4src/v1model/chips.p4).
PRIORITY_QUEUES = 2
RAW_PORT = "raw"                            # a BMv2 port or a raw test port
HOST_PORT = "host"                          # a kernel TCP/UDP stack
OFFLOADS_OFF = {RAW_PORT: ("tx", "rx", "tso", "gso", "gro"), HOST_PORT: ("tx", "tso", "gso")}


class LabError(RuntimeError):
    """A namespace, veth or process could not be set up or removed."""


# ------------------------------------------------------------------ checks
def missing_prereqs(extra_tools: Sequence[str] = ()) -> str | None:
    """Why namespaces cannot be built here (not root, a command missing), or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, veths)"
    for tool in (*REQUIRED_TOOLS, *extra_tools):
        if shutil.which(tool) is None:
            return f"needs the {tool!r} command"
    return None


def host_ipv6_script(ifname: str, cidr6: str, gateway6: str, gateway_mac: str,
                     default_route: bool = True) -> str:
    """The shell commands that give ifname (IPv6 off since creation) an IPv6 address
    cidr6, a permanent neighbour entry for gateway6 (with default_route, a default
    route through it; without, gateway6 is an on-link peer), and nothing else
    (module docstring): the per-interface knobs are set while IPv6 is
    still off, so it comes up without a link-local address (addr_gen_mode 1), without
    router solicitations and without DAD (the address is added with nodad); the one
    ip6tables rule drops any multicast the host sends (MLD reports on joining the
    address's solicited-node group; neighbour discovery is not needed: the neighbour is
    static). Run inside the host's namespace."""
    conf = f"net.ipv6.conf.{ifname}"
    knobs = " ".join(f"{conf}.{k}={v}" for k, v in (
        ("addr_gen_mode", 1), ("accept_ra", 0), ("router_solicitations", 0),
        ("accept_dad", 0), ("dad_transmits", 0), ("disable_ipv6", 0)))
    return (f"ip6tables -A OUTPUT -o {ifname} -d ff00::/8 -j DROP"
            f" && sysctl -qw {knobs}"
            f" && ip -6 addr add {cidr6} dev {ifname} nodad"
            f" && ip -6 neigh add {gateway6} lladdr {gateway_mac} dev {ifname} nud permanent"
            + (f" && ip -6 route add default via {gateway6} dev {ifname}" if default_route
               else ""))


def _check_name(value: str, field: str) -> None:
    if not NAME_RE.match(value):
        raise ValueError(f"{field} must match {NAME_RE.pattern}, got {value!r}")


def _check_ifname(value: str, field: str) -> None:
    if not IFNAME_RE.match(value) or len(value) > IFNAME_MAX_LEN:
        raise ValueError(f"{field} must match {IFNAME_RE.pattern} with at most "
                         f"{IFNAME_MAX_LEN} characters, got {value!r}")


# --------------------------------------------------------------- processes
def in_ns(ns: str, argv: Sequence[object]) -> list[str]:
    """argv run inside ns (``ip netns exec`` execs it: the pid is argv's)."""
    return ["ip", "netns", "exec", ns, *map(str, argv)]


def alive(pid: int) -> bool:
    """True if pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def exited(p: subprocess.Popen) -> bool:
    """True if p has exited; does not reap it (its /proc entry keeps its final CPU times)."""
    if p.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:       # reaped elsewhere
        return p.poll() is not None


def _signal_group(p: subprocess.Popen, sig: int) -> None:
    """sig to p's process group if p leads one (started in its own session), else to p."""
    try:
        if os.getpgid(p.pid) == p.pid:
            os.killpg(p.pid, sig)
        else:
            os.kill(p.pid, sig)
    except ProcessLookupError:
        pass


def _command(p: subprocess.Popen) -> str:
    return p.args if isinstance(p.args, str) else shlex.join(map(str, p.args))


def stop_processes(procs: Sequence[subprocess.Popen], timeout_s: float = STOP_TIMEOUT_S,
                   on_exit: Callable[[subprocess.Popen], None] | None = None) -> list[str]:
    """Stop and reap every process: SIGTERM each running one's process group, wait until
    all have exited or timeout_s has passed (one deadline for all), SIGKILL the groups
    still running, reap. on_exit(p) runs for each process that had not been reaped, after
    it exited and before it is reaped. Returns one line per process that needed SIGKILL or
    did not go away."""
    running = [p for p in procs if not exited(p)]
    for p in running:
        _signal_group(p, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while running and time.monotonic() < deadline:
        time.sleep(POLL_S)
        running = [p for p in running if not exited(p)]
    problems = []
    for p in running:
        problems.append(f"{_command(p)}: running {timeout_s:g} s after SIGTERM, killed")
        _signal_group(p, signal.SIGKILL)
    for p in procs:
        if p.returncode is not None:
            continue
        kill_deadline = time.monotonic() + KILL_TIMEOUT_S
        while not exited(p) and time.monotonic() < kill_deadline:
            time.sleep(POLL_S)
        if not exited(p):
            problems.append(f"{_command(p)}: survived SIGKILL for {KILL_TIMEOUT_S:g} s")
            continue
        if on_exit is not None:
            on_exit(p)
        p.wait()
    return problems


# ----------------------------------------------------------------- signals
class StopRequested(KeyboardInterrupt):
    """A stop signal arrived (raised in the main thread by :func:`catch_stop_signals`).
    A KeyboardInterrupt, so ``except Exception`` does not swallow it."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum

    @property
    def exit_status(self) -> int:
        """The shell's convention for a process ended by that signal."""
        return 128 + self.signum


@dataclass
class StopSignals:
    """What :func:`catch_stop_signals` saw: the first stop signal, or None."""

    signum: int | None = None

    @property
    def requested(self) -> bool:
        return self.signum is not None


def catch_stop_signals(*, interrupt: bool) -> StopSignals:
    """Turn SIGINT, SIGTERM and SIGHUP into a clean stop (call from the main thread).

    The first signal is recorded in the returned StopSignals (loops poll
    ``.requested``); with interrupt=True it also raises StopRequested, so that a blocking
    call unwinds through the caller's ``with``/``finally`` teardown. Later signals are only
    recorded: they do not interrupt that teardown."""
    state = StopSignals()

    def handler(signum: int, _frame: object) -> None:
        if state.signum is not None:
            return
        state.signum = signum
        if interrupt:
            raise StopRequested(signum)

    for sig in STOP_SIGNALS:
        signal.signal(sig, handler)
    return state


class ExitOnStop:
    """A tool's last line of defence around its Lab (``with ExitOnStop("fuzz") as end:``):
    a stop signal (StopRequested) or a LabError that leaves the block is reported on
    stderr as "<tool>: interrupted; cleaned up" or "<tool>: <error>" and swallowed, and
    ``end.exit_status`` is set to the exit status to return (128 + the signal; 2). The
    Lab inside the block has cleaned up by then. Other exceptions propagate; after a
    normal exit ``exit_status`` stays None."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.exit_status: int | None = None

    def __enter__(self) -> ExitOnStop:
        return self

    def __exit__(self, _typ: object, exc: BaseException | None, _tb: object) -> bool:
        if isinstance(exc, StopRequested):
            print(f"{self.tool}: interrupted; cleaned up", file=sys.stderr)
            self.exit_status = exc.exit_status
        elif isinstance(exc, LabError):
            print(f"{self.tool}: {exc}", file=sys.stderr)
            self.exit_status = 2
        else:
            return False
        return True


@contextmanager
def stop_signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP during the block (main thread only; elsewhere a no-op),
    then deliver the ones that arrived, once each, to the handlers in place before."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    saved = {sig: signal.signal(sig, lambda s, _f: pending.append(s)) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        for sig in dict.fromkeys(pending):
            signal.raise_signal(sig)


# -------------------------------------------------------------- namespaces
def namespaces(prefix: str) -> list[str]:
    """Named namespaces ``prefix`` or ``prefix-...`` (a run's own or a killed run's)."""
    _check_name(prefix, "prefix")
    try:
        names = os.listdir(NETNS_DIR)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if n == prefix or n.startswith(prefix + "-"))


def namespace_pids(names: Sequence[str]) -> dict[str, list[int]]:
    """Pids of the processes inside each named namespace (as ``ip netns pids``)."""
    by_inode: dict[tuple[int, int], str] = {}
    for ns in names:
        try:
            st = os.stat(NETNS_DIR / ns)
        except FileNotFoundError:
            continue
        by_inode[(st.st_dev, st.st_ino)] = ns
    out: dict[str, list[int]] = {ns: [] for ns in by_inode.values()}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            st = os.stat(f"/proc/{entry}/ns/net")
        except OSError:
            continue
        ns = by_inode.get((st.st_dev, st.st_ino))
        if ns is not None:
            out[ns].append(int(entry))
    return out


def remove_namespaces(names: Sequence[str]) -> tuple[list[int], list[str]]:
    """SIGKILL every process inside the namespaces, then delete them (which deletes their
    veths and iptables rules too). Returns (pids that survived SIGKILL, problems deleting
    namespaces); a namespace already gone is no problem."""
    pids = [p for ps in namespace_pids(names).values() for p in ps]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + KILL_TIMEOUT_S
    still = [p for p in pids if alive(p)]
    while still and time.monotonic() < deadline:
        time.sleep(POLL_S)
        still = [p for p in still if alive(p)]
    problems = []
    for ns in names:
        if not (NETNS_DIR / ns).exists():
            continue
        r = subprocess.run(["ip", "netns", "delete", ns], capture_output=True, text=True,
                           timeout=30)
        if r.returncode != 0:
            problems.append(f"ip netns delete {ns}: {r.stderr.strip()}")
    return still, problems


def clean_leftovers(prefix: str) -> list[str]:
    """Remove the namespaces ``prefix`` / ``prefix-...`` and every process inside them
    (what a killed run left); return their names."""
    names = namespaces(prefix)
    if not names:
        return []
    still, problems = remove_namespaces(names)
    if still or problems:
        raise LabError(f"cleaning {names}: processes {still} survived SIGKILL; {problems}")
    return names


def listening(pid: int, port: int) -> bool:
    """True if the network namespace of pid has a TCP socket listening on port.

    /proc/<pid>/net/tcp{,6} show the sockets of *that process's* namespace, so no helper
    process has to enter the namespace."""
    want = f":{port:04X}"
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if cols[1].endswith(want) and cols[3] == "0A":   # 0A = LISTEN
                        return True
        except OSError:
            return False
    return False


# ------------------------------------------------------------------- specs
@dataclass(frozen=True)
class VethEnd:
    """One end of a veth pair: its namespace, name, kind (RAW_PORT or HOST_PORT: which
    offloads go off, see the module docstring) and optional MAC and MTU."""

    ns: str
    ifname: str
    kind: str
    mac: str | None = None
    mtu: int | None = None

    def check(self, field: str) -> None:
        _check_ifname(self.ifname, f"{field}.ifname")
        if self.kind not in OFFLOADS_OFF:
            raise ValueError(f"{field}.kind must be one of {', '.join(OFFLOADS_OFF)}, "
                             f"got {self.kind!r}")

    def ip_args(self) -> list[str]:
        """``NAME [address MAC] [mtu MTU] netns NS`` for ``ip link add``."""
        args = [self.ifname]
        if self.mac is not None:
            args += ["address", self.mac]
        if self.mtu is not None:
            args += ["mtu", str(self.mtu)]
        return args + ["netns", self.ns]


@dataclass(frozen=True)
class SwitchSpec:
    """One simple_switch_grpc, started without a pipeline (--no-p4: the controller pushes
    it), its P4Runtime server on 127.0.0.1:grpc_port and Thrift on thrift_port, both
    reachable only inside its namespace (Thrift has no authentication, docs/design.md §1.1).
    stdout/stderr go to out_path; log_file (if any) gets BMv2's log at log_level."""

    ports: Mapping[int, str]            # BMv2 port number -> interface name
    device_id: int                      # must equal the controller's device_id (docs/design.md §1.1)
    grpc_port: int
    thrift_port: int
    out_path: Path
    log_file: Path | None = None
    log_level: str = BMV2_LOG_OFF
    cpu_port: int | None = None         # --cpu-port: P4Runtime PacketOut/PacketIn (C-UPTA probes)
    wrapper: tuple[str, ...] = ()       # a command the switch runs under (bench: valgrind)

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def argv(self) -> list[str]:
        if self.log_level not in BMV2_LOG_LEVELS:
            raise ValueError(f"log_level must be one of {', '.join(BMV2_LOG_LEVELS)}, "
                             f"got {self.log_level!r}")
        argv = [*self.wrapper, "simple_switch_grpc", "--device-id", str(self.device_id),
                "--thrift-port", str(self.thrift_port)]
        for number, ifname in sorted(self.ports.items()):
            argv += ["-i", f"{number}@{ifname}"]
        if self.log_file is not None:
            argv += ["--log-file", str(self.log_file), "--log-flush"]
        cpu = [] if self.cpu_port is None else ["--cpu-port", str(self.cpu_port)]
        return argv + ["--log-level", self.log_level, "--no-p4",
                       "--", "--grpc-server-addr", self.grpc_addr, *cpu,
                       "--priority-queues", str(PRIORITY_QUEUES)]


# --------------------------------------------------------------------- Lab
class Lab:
    """The namespaces and processes of one run; see the module docstring.

    Entering removes leftovers with the same prefix (their names: ``leftovers_removed``);
    leaving (also on an exception or StopRequested) stops every process started here and
    deletes every namespace created here."""

    def __init__(self, prefix: str) -> None:
        _check_name(prefix, "prefix")
        self.prefix = prefix
        self.namespaces: list[str] = []
        self.procs: list[subprocess.Popen] = []
        self.leftovers_removed: list[str] = []
        self._open = False

    def __enter__(self) -> Lab:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> list[str]:
        """Remove leftovers with this prefix (returned, also kept in ``leftovers_removed``);
        then namespaces and processes can be added. Entering the Lab calls it."""
        self.leftovers_removed = clean_leftovers(self.prefix)
        self._open = True
        return self.leftovers_removed

    # ----------------------------------------------------------- building
    def add_namespace(self, name: str, sysctls: Mapping[str, str] | None = None) -> str:
        """Create namespace name (``prefix`` or ``prefix-...``): loopback up, IPv6 off
        (inherited by every veth created in it later), plus the given sysctls."""
        self._check_open()
        _check_name(name, "namespace")
        if name != self.prefix and not name.startswith(self.prefix + "-"):
            raise ValueError(f"namespace {name!r} must be {self.prefix!r} or start with "
                             f"{self.prefix + '-'!r}")
        r = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True,
                           timeout=30)
        if r.returncode != 0:
            raise LabError(f"ip netns add {name}: {r.stderr.strip()}")
        self.namespaces.append(name)
        keys = {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1",
                **(sysctls or {})}
        self.run(name, ["sh", "-c", "ip link set lo up && sysctl -qw "
                        + " ".join(shlex.quote(f"{k}={v}") for k, v in keys.items())])
        return name

    def add_veths(self, pairs: Sequence[tuple[VethEnd, VethEnd]]) -> None:
        """Create each veth pair with its ends directly in their namespaces (of this Lab);
        IPv6 off on every end, offloads off by kind, every end up."""
        self._check_open()
        for i, (a, b) in enumerate(pairs):
            for end, field in ((a, f"pairs[{i}][0]"), (b, f"pairs[{i}][1]")):
                end.check(field)
                if end.ns not in self.namespaces:
                    raise ValueError(f"{field}.ns {end.ns!r} is not a namespace of this lab")
        for a, b in pairs:
            r = subprocess.run(["ip", "link", "add", *a.ip_args(), "type", "veth",
                                "peer", "name", *b.ip_args()],
                               capture_output=True, text=True, timeout=30)
            if r.returncode != 0:
                raise LabError(f"veth {a.ns}/{a.ifname} <-> {b.ns}/{b.ifname}: "
                               f"{r.stderr.strip()}")
        by_ns: dict[str, list[VethEnd]] = {}
        for a, b in pairs:
            by_ns.setdefault(a.ns, []).append(a)
            by_ns.setdefault(b.ns, []).append(b)
        for ns, ends in by_ns.items():      # one shell per namespace, not one per command
            steps = ["sysctl -qw " + " ".join(f"net.ipv6.conf.{e.ifname}.disable_ipv6=1"
                                              for e in ends)]
            for e in ends:
                offs = " ".join(f"{feature} off" for feature in OFFLOADS_OFF[e.kind])
                steps.append(f"ethtool -K {e.ifname} {offs} >/dev/null")
                steps.append(f"ip link set {e.ifname} up")
            self.run(ns, ["sh", "-c", " && ".join(steps)])

    # ---------------------------------------------------------- processes
    def popen(self, ns: str, argv: Sequence[object], **popen_kwargs: Any) -> subprocess.Popen:
        """Start argv inside ns in its own session; stopped when the Lab closes.
        stdin/stdout/stderr are inherited unless given."""
        self._check_open()
        p = subprocess.Popen(in_ns(ns, argv), start_new_session=True, **popen_kwargs)
        self.procs.append(p)
        return p

    def run(self, ns: str, argv: Sequence[object], *, timeout_s: float = 30.0, check: bool = True,
            **run_kwargs: Any) -> subprocess.CompletedProcess:
        """Run argv inside ns to completion; output captured as text unless stdout or
        stderr is given. check: raise LabError (naming ns, argv, stderr) if it fails."""
        if "stdout" not in run_kwargs and "stderr" not in run_kwargs:
            run_kwargs["capture_output"] = True
        run_kwargs.setdefault("text", True)
        r = subprocess.run(in_ns(ns, argv), timeout=timeout_s, **run_kwargs)
        if check and r.returncode != 0:
            err = r.stderr.strip() if isinstance(r.stderr, str) else ""
            raise LabError(f"[{ns}] {shlex.join(map(str, argv))} failed ({r.returncode}): {err}")
        return r

    def start_switches(self, ns: str, specs: Sequence[SwitchSpec],
                       timeout_s: float = READY_TIMEOUT_S) -> list[subprocess.Popen]:
        """Start one simple_switch_grpc per spec inside ns; return when each listens on its
        gRPC and Thrift ports (LabError with its output otherwise)."""
        procs = []
        for spec in specs:
            argv = spec.argv()
            with open(spec.out_path, "w") as out:
                procs.append(self.popen(ns, argv, stdout=out, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + timeout_s
        for spec, p in zip(specs, procs):
            while not (listening(p.pid, spec.grpc_port) and listening(p.pid, spec.thrift_port)):
                if p.poll() is not None or time.monotonic() > deadline:
                    raise LabError(f"simple_switch_grpc in {ns} did not start (gRPC "
                                   f"{spec.grpc_port}, Thrift {spec.thrift_port}): "
                                   f"{spec.out_path.read_text()[-2000:]}")
                time.sleep(POLL_S)
        return procs

    def stop(self, procs: Sequence[subprocess.Popen], timeout_s: float = STOP_TIMEOUT_S,
             on_exit: Callable[[subprocess.Popen], None] | None = None) -> list[str]:
        """:func:`stop_processes` on processes started here; they are no longer tracked."""
        problems = stop_processes(procs, timeout_s, on_exit)
        for p in procs:
            if p in self.procs:
                self.procs.remove(p)
        return problems

    # ----------------------------------------------------------- teardown
    def close(self) -> list[str]:
        """Stop every process started here, then delete every namespace (killing whatever
        else runs inside). Idempotent; stop signals are held until it is done. Returns the
        problems met (a process that needed SIGKILL, a namespace that could not be deleted);
        raises LabError after everything else is done if a process survived SIGKILL."""
        with stop_signals_deferred():
            self._open = False
            problems = stop_processes(self.procs)
            for p in self.procs:
                for stream in (p.stdin, p.stdout, p.stderr):
                    if stream is not None:
                        try:
                            stream.close()
                        except OSError:         # unflushed stdin of a dead process
                            pass
            self.procs.clear()
            still, ns_problems = remove_namespaces(self.namespaces[::-1])
            self.namespaces.clear()
            problems += ns_problems
        if still:
            raise LabError(f"processes {still} survived SIGKILL; {problems}")
        return problems

    def _check_open(self) -> None:
        if not self._open:
            raise LabError(f"lab {self.prefix!r} is not open (use it as a context manager)")
