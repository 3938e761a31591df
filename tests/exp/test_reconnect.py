"""On a real BMv2: the controller survives switch restarts; a backup takes over.

The bed (mmaqm_exp.lab, removed on leaving, also on a failure): a switch namespace
running simple_switch_grpc (started without a pipeline, as the experiments do) with
ports 1 and 2 on veths to two host namespaces; h1 sends two UDP flows to h2 through
it (200 packets/s each, one DSCP 46 = tagged, one DSCP 0 = untagged), h2 timestamps
every packet it receives; `mmaqm-ctl run` (a real process) runs in the switch
namespace with DROP_TAIL on port 1 and DCBT (RED 5/15/0.1, limit 60) on port 2.
p4rt_probe.py reads the running pipeline's cookie and the port_policy entries
over P4Runtime every 50 ms without arbitrating.

* five times in a row: kill -9 simple_switch_grpc and start it again (empty: no
  pipeline); each time the pipeline (cookie) and both ports' policies with every
  threshold and the D-CBT shares of the two flows (tagged_share_q16 = 1/2) come
  back, and h2 receives packets again; recovery times printed and bounded;
* a second `run` with election id 5 waits as the backup of the first (10) and writes
  nothing; kill -9 of the first: the backup becomes primary, writes the policies
  (reconciles: the same policies, their epoch kept), follows the flows (its own share push of
  1/2), and traffic is forwarded.

Needs root, simple_switch_grpc and the compiled program (make build); skipped otherwise.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import mmt_testenv

from mmaqm_exp import lab as L

REPO = mmt_testenv.TOPO.parent
BMV2_JSON = REPO / "build" / "main.json"
P4INFO = REPO / "build" / "main.p4info.txtpb"
VENV_BIN = Path(sys.executable).parent
PROBE = Path(__file__).with_name("p4rt_probe.py")

RESTARTS = 5
# Bounds, about 3x what was measured (docs/reliability.md, 15 restarts with the
# build paused; each run prints its times): after the restarted switch listens, the
# controller has noticed the loss (within update_interval_ms, 50 ms) and retries at
# most 1 s apart; pipeline push and install take about 0.25 s. Measured: forwarding
# 0.13-0.42 s, policies with the D-CBT shares of both flows 0.52-1.55 s after the
# switch listened; BMv2 listened 0.13-0.21 s after the kill.
RECOVERY_BOUND_S = 5.0           # switch listening -> thresholds and D-CBT shares back
FORWARD_BOUND_S = 5.0            # switch listening -> h2 receives again
TAKEOVER_BOUND_S = 5.0           # primary killed -> the backup's policy, its share push
SETTLE_TIMEOUT_S = 30.0          # first install and both flows seen
SENDER_INTERVAL_S = 0.005        # per flow: 200 packets/s
UDP_PORT = 5004
TAGGED_SPORT, UNTAGGED_SPORT = 40001, 40002
HALF_Q16 = 32768                 # tagged_share_q16 of 1 tagged + 1 untagged flow (dcbt §3.1)

SW_MACS = {1: "02:00:00:00:00:01", 2: "02:00:00:00:00:02"}
H1_MAC, H2_MAC = "02:00:00:01:00:01", "02:00:00:02:00:01"
GRPC_PORT, THRIFT_PORT = 9559, 9090
PREFIX_RE = re.compile(r"^rc(\d+)-")

CONTROLLER_CONFIG = {
    "switches": {"r1": {
        "p4runtime_addr": f"127.0.0.1:{GRPC_PORT}",
        "device_id": 1,
        "ports": {p: {"mac": mac} for p, mac in SW_MACS.items()},
        "routes": [{"prefix": "10.0.1.0/24", "port": 1, "next_hop_mac": H1_MAC},
                   {"prefix": "10.0.2.0/24", "port": 2, "next_hop_mac": H2_MAC}],
        "policies": {"default": {"algorithm": "DROP_TAIL"},
                     2: {"algorithm": "DCBT", "min_th_pkts": 5, "max_th_pkts": 15,
                         "max_p": 0.1, "queue_limit_pkts": 60}},
    }},
}

RECEIVER = f"""
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", {UDP_PORT}))
print("ready", flush=True)
while True:
    _, (src, sport) = s.recvfrom(2048)
    sys.stdout.write(f"{{time.time_ns()}} {{sport}}\\n")
    sys.stdout.flush()
"""
SENDER = f"""
import socket, time
socks = []
for tos, sport in ((46 << 2, {TAGGED_SPORT}), (0, {UNTAGGED_SPORT})):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    s.bind(("10.0.1.1", sport))
    socks.append(s)
seq, t = 0, time.monotonic()
while True:
    for s in socks:
        try:
            s.sendto(seq.to_bytes(8, "big") + bytes(92), ("10.0.2.1", {UDP_PORT}))
        except OSError:
            pass
    seq += 1
    t += {SENDER_INTERVAL_S}
    time.sleep(max(t - time.monotonic(), 0))
"""


def _skip_reason() -> str | None:
    why = L.missing_prereqs(("simple_switch_grpc",))
    if why:
        return why
    if not (BMV2_JSON.exists() and P4INFO.exists()):
        return f"needs {BMV2_JSON} and {P4INFO}: run 'make build'"
    return None


SKIP = _skip_reason()
pytestmark = pytest.mark.skipif(SKIP is not None, reason=SKIP or "")


@pytest.fixture(scope="module", autouse=True)
def _remove_stale_beds():
    """Namespaces of earlier runs of this module whose pytest process is gone."""
    names = os.listdir(L.NETNS_DIR) if L.NETNS_DIR.exists() else []
    for prefix in sorted({m.group(0)[:-1] for ns in names if (m := PREFIX_RE.match(ns))
                          and not os.path.exists(f"/proc/{m.group(1)}")}):
        L.clean_leftovers(prefix)


def _expected_cookie() -> int:
    import finsy as fy
    return fy.P4Schema(P4INFO, BMV2_JSON).p4cookie


class _Lines:
    """The stdout lines of a process, read by a daemon thread, each with a parser."""

    def __init__(self, proc: subprocess.Popen, parse: Callable[[str], Any]) -> None:
        self.items: list[Any] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, args=(proc, parse), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen, parse: Callable[[str], Any]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                item = parse(line)
            except ValueError:
                continue
            with self._lock:
                self.items.append(item)

    def snapshot(self) -> list[Any]:
        with self._lock:
            return list(self.items)


def _wait(what: str, timeout_s: float, find: Callable[[], Any], alive: Callable[[], None]) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        alive()
        found = find()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s: {what}")
        time.sleep(0.02)


def _without_epoch(policies: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {port: {k: v for k, v in p.items() if k != "policy_epoch"}
            for port, p in policies.items()}


class Bed:
    """See the module docstring. Leaving it (also on an exception) stops every process
    and deletes the namespaces with their veths (mmaqm_exp.lab.Lab)."""

    def __init__(self, tmp: Path) -> None:
        pid = os.getpid()
        self.tmp = tmp
        self.lab = L.Lab(f"rc{pid}")
        short = f"rc{pid % 100000}"
        self.ifs = {"p1": f"{short}p1", "p2": f"{short}p2", "h1": f"{short}h1",
                    "h2": f"{short}h2"}
        self.switch: subprocess.Popen | None = None
        self.starts = 0
        self.controllers: dict[str, subprocess.Popen] = {}
        self.cookie = _expected_cookie()

    # ------------------------------------------------------------- building
    def __enter__(self) -> Bed:
        self.lab.__enter__()
        try:
            self._build()
        except BaseException:
            self.lab.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.lab.__exit__(*exc)

    def _build(self) -> None:
        lab, ifs = self.lab, self.ifs
        self.sw = lab.add_namespace(f"{lab.prefix}-sw")
        self.h1 = lab.add_namespace(f"{lab.prefix}-h1")
        self.h2 = lab.add_namespace(f"{lab.prefix}-h2")
        lab.add_veths([
            (L.VethEnd(self.sw, ifs["p1"], L.RAW_PORT, mac=SW_MACS[1]),
             L.VethEnd(self.h1, ifs["h1"], L.HOST_PORT, mac=H1_MAC)),
            (L.VethEnd(self.sw, ifs["p2"], L.RAW_PORT, mac=SW_MACS[2]),
             L.VethEnd(self.h2, ifs["h2"], L.HOST_PORT, mac=H2_MAC))])
        for ns, ifname, net, port in ((self.h1, ifs["h1"], "10.0.1", 1),
                                      (self.h2, ifs["h2"], "10.0.2", 2)):
            lab.run(ns, ["sh", "-c",
                         f"ip addr add {net}.1/24 dev {ifname} && "
                         f"ip neigh add {net}.254 lladdr {SW_MACS[port]} dev {ifname} "
                         f"nud permanent && ip route add default via {net}.254"])
        self.config_path = self.tmp / "controller.yaml"
        self.config_path.write_text(yaml.safe_dump(CONTROLLER_CONFIG))
        self.start_switch()
        receiver = lab.popen(self.h2, [sys.executable, "-c", RECEIVER],
                             stdout=subprocess.PIPE, text=True)
        self.received = _Lines(receiver, lambda line: tuple(map(int, line.split())))
        self.sender = lab.popen(self.h1, [sys.executable, "-c", SENDER])
        probe = lab.popen(self.sw, [sys.executable, PROBE, f"127.0.0.1:{GRPC_PORT}", P4INFO,
                                    "1", "2"], stdout=subprocess.PIPE, text=True)
        self.probe = _Lines(probe, json.loads)
        self.aux = [receiver, self.sender, probe]

    def start_switch(self) -> None:
        self.starts += 1
        spec = L.SwitchSpec(ports={1: self.ifs["p1"], 2: self.ifs["p2"]}, device_id=1,
                            grpc_port=GRPC_PORT, thrift_port=THRIFT_PORT,
                            out_path=self.tmp / f"bmv2-{self.starts}.out")
        self.switch, = self.lab.start_switches(self.sw, [spec])

    def kill_switch(self) -> None:
        assert self.switch is not None and self.switch.poll() is None
        os.kill(self.switch.pid, signal.SIGKILL)
        self.switch.wait(5)
        self.lab.stop([self.switch])
        self.switch = None

    def start_controller(self, name: str, *args: str) -> subprocess.Popen:
        with open(self.tmp / f"ctl-{name}.log", "w") as log:
            proc = self.lab.popen(self.sw, [
                VENV_BIN / "mmaqm-ctl", "-c", self.config_path, "--p4info", P4INFO,
                "--bmv2-json", BMV2_JSON, "--events-out", self.tmp / f"ctl-{name}.events",
                *args, "run"], stdout=log, stderr=subprocess.STDOUT)
        self.controllers[name] = proc
        return proc

    # -------------------------------------------------------------- looking
    def events(self, name: str) -> list[dict[str, Any]]:
        path = self.tmp / f"ctl-{name}.events"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def log(self, name: str) -> str:
        return (self.tmp / f"ctl-{name}.log").read_text()

    def check_alive(self, *names: str) -> None:
        for name in names:
            proc = self.controllers[name]
            assert proc.poll() is None, f"controller {name} exited {proc.returncode}:\n" \
                                        f"{self.log(name)[-3000:]}"
        for proc in self.aux:
            assert proc.poll() is None, f"{proc.args} exited {proc.returncode}"

    def latest(self) -> dict[str, Any]:
        samples = self.probe.snapshot()
        assert samples, "no probe sample yet"
        return samples[-1]

    def probe_after(self, t_ns: int, ok: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
        return next((s for s in self.probe.snapshot() if s["t_ns"] > t_ns and ok(s)), None)

    def received_after(self, t_ns: int, sport: int | None = None) -> int | None:
        return next((t for t, port in self.received.snapshot()
                     if t > t_ns and (sport is None or port == sport)), None)

    def settled(self, s: dict[str, Any]) -> bool:
        """The pipeline runs, both ports have a policy, port 2's shares are 1/2."""
        port2 = s.get("policies", {}).get("2")
        return s.get("cookie") == self.cookie and "1" in s["policies"] \
            and port2 is not None and port2.get("tagged_share_q16") == HALF_Q16


def _settle(bed: Bed, name: str) -> dict[str, Any]:
    """The first controller's install with both flows seen: the reference policies."""
    t0 = time.time_ns()
    sample = _wait("install and both flows in the D-CBT shares", SETTLE_TIMEOUT_S,
                   lambda: bed.probe_after(t0, bed.settled), lambda: bed.check_alive(name))
    _wait("forwarding", SETTLE_TIMEOUT_S, lambda: bed.received_after(sample["t_ns"]),
          lambda: bed.check_alive(name))
    ref = sample["policies"]
    # what the config says (encoding.policy_action; dcbt §3.1: untagged allowance
    # min_th + max_p (max_th - min_th) = 6 packets, times the untagged share 1/2)
    assert ref["1"]["action"] == "drop_tail" and ref["1"]["queue_limit_pkts"] == 64
    assert ref["2"]["action"] == "dcbt"
    assert (ref["2"]["min_th_scaled"], ref["2"]["max_th_scaled"], ref["2"]["queue_limit_pkts"]) \
        == (5 << 16, 15 << 16, 60)
    assert ref["2"]["untagged_th_scaled"] == 3 << 16
    return ref


def test_the_controller_survives_five_switch_restarts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Bed(tmp_path) as bed:
        bed.start_controller("a")
        ref = _without_epoch(_settle(bed, "a"))
        rows = []
        for i in range(1, RESTARTS + 1):
            before = bed.latest()
            t_kill = time.time_ns()
            bed.kill_switch()
            bed.start_switch()
            t_listen = time.time_ns()
            policy_back = _wait(
                f"restart {i}: pipeline and policies back", RECOVERY_BOUND_S,
                lambda: bed.probe_after(t_listen, lambda s: s.get("cookie") == bed.cookie
                                        and _without_epoch(s["policies"]) == ref),
                lambda: bed.check_alive("a"))
            t_forward = _wait(f"restart {i}: h2 receives again", FORWARD_BOUND_S,
                              lambda: bed.received_after(t_listen), lambda: bed.check_alive("a"))
            # a new policy epoch: the policies were written again, not left over
            assert policy_back["policies"]["2"]["policy_epoch"] != \
                before.get("policies", {}).get("2", {}).get("policy_epoch")
            rows.append({"restart": i, "bmv2_start_s": (t_listen - t_kill) / 1e9,
                         "policies_s": (policy_back["t_ns"] - t_listen) / 1e9,
                         "forwarding_s": (t_forward - t_listen) / 1e9,
                         "outage_s": (t_forward - t_kill) / 1e9})
            # both flows forwarded again before the next kill
            _wait(f"restart {i}: both flows forwarded", FORWARD_BOUND_S,
                  lambda: bed.received_after(t_forward, TAGGED_SPORT)
                  and bed.received_after(t_forward, UNTAGGED_SPORT),
                  lambda: bed.check_alive("a"))
        bed.check_alive("a")
        events = bed.events("a")
        log = bed.log("a")
    assert L.namespaces(bed.lab.prefix) == [] and bed.lab.procs == []   # all cleaned up

    with capsys.disabled():          # the times, also in a quiet `make test`
        print("\nrecovery after kill -9 of simple_switch_grpc (s; policies+shares and "
              "forwarding from the restarted switch listening, outage from the kill):")
        print("restart  bmv2_start  policies+shares  forwarding  outage")
        for r in rows:
            print(f"{r['restart']:7d}  {r['bmv2_start_s']:10.3f}  {r['policies_s']:15.3f}  "
                  f"{r['forwarding_s']:10.3f}  {r['outage_s']:6.3f}")
    (tmp_path / "recovery.json").write_text(json.dumps(rows))
    kinds = [e["event"] for e in events if e["event"] in
             ("installed", "connection_lost", "reconnected")]
    assert kinds == ["installed"] + ["connection_lost", "reconnected", "installed"] * RESTARTS
    assert log.count("Pipeline installed") == RESTARTS + 1, log[-3000:]   # finsy's push
    assert "Traceback" not in log
    assert max(r["policies_s"] for r in rows) < RECOVERY_BOUND_S
    assert max(r["forwarding_s"] for r in rows) < FORWARD_BOUND_S


def test_a_backup_controller_takes_over_when_the_primary_dies(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Bed(tmp_path) as bed:
        bed.start_controller("primary")
        ref = _settle(bed, "primary")
        bed.start_controller("backup", "--election-id", "5")
        _wait("the backup waiting", SETTLE_TIMEOUT_S,
              lambda: any(e["event"] == "backup_waiting" for e in bed.events("backup")) or None,
              lambda: bed.check_alive("primary", "backup"))
        time.sleep(1.0)
        now = bed.latest()
        assert now["policies"]["2"]["policy_epoch"] == ref["2"]["policy_epoch"], \
            "the backup wrote"
        assert not any(e["event"] in ("installed", "share_push") for e in bed.events("backup"))
        t_kill = time.time_ns()
        primary = bed.controllers["primary"]
        os.kill(primary.pid, signal.SIGKILL)
        primary.wait(5)
        bed.lab.stop([primary])
        written = _wait(
            "the backup's install", TAKEOVER_BOUND_S,
            lambda: next((e for e in bed.events("backup") if e["event"] == "installed"), None),
            lambda: bed.check_alive("backup"))
        # the install reconciles: the unchanged policies keep their epoch (their RED
        # averages), so a takeover does not reset the switch's state
        kept = _wait("a probe after the backup's install", TAKEOVER_BOUND_S,
                     lambda: bed.probe_after(written["t_ns"],
                                             lambda s: s.get("cookie") == bed.cookie),
                     lambda: bed.check_alive("backup"))
        assert kept["policies"]["2"]["policy_epoch"] == ref["2"]["policy_epoch"]
        shares = _wait(
            "the backup's D-CBT share push of the two flows", TAKEOVER_BOUND_S,
            lambda: next((e for e in bed.events("backup") if e["event"] == "share_push"
                          and e["tagged_share_q16"] == HALF_Q16), None),
            lambda: bed.check_alive("backup"))
        followed = _wait(
            "the backup's policies with the shares", SETTLE_TIMEOUT_S,
            lambda: bed.probe_after(shares["t_ns"], lambda s: _without_epoch(s["policies"])
                                    == _without_epoch(ref)),
            lambda: bed.check_alive("backup"))
        t_forward = _wait("forwarding after the takeover", FORWARD_BOUND_S,
                          lambda: bed.received_after(followed["t_ns"]),
                          lambda: bed.check_alive("backup"))
        kinds = [e["event"] for e in bed.events("backup") if e["event"] != "share_push"]
        log = bed.log("backup")
    assert L.namespaces(bed.lab.prefix) == [] and bed.lab.procs == []
    with capsys.disabled():
        print(f"\nbackup takeover: policies written {(written['t_ns'] - t_kill) / 1e9:.3f} s "
              f"after kill -9 of the primary; shares of both flows pushed after "
              f"{(shares['t_ns'] - t_kill) / 1e9:.3f} s; packets received at "
              f"{(t_forward - t_kill) / 1e9:.3f} s")
    assert kinds == ["backup_waiting", "became_primary", "installed"]
    assert "waiting as its backup" in log and "now primary" in log
    assert "Traceback" not in log
