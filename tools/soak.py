#!/usr/bin/env python3
"""Soak: mixed traffic through a real topology for minutes, policy changes, a switch
restart; afterwards every queue is empty and nothing is left behind.

  sudo tools/soak.py [--duration-s 600] [--policy-interval-s 30] [--restart-switch]
  (`make soak`; under the shared BMv2 lock)

  1. The 10 Mbit/s D-CBT dumbbell (topologies/topos/dcbt-dumbbell-10mbit.json) comes up
     with mmaqm_exp.network (namespaces, veths, two simple_switch_grpc, delay elements).
  2. The controller runs for the whole soak in ONE long-lived process (this file's
     --controller-host mode): the controller library's run_switches (what `mmaqm-ctl run`
     runs) on a config file; whenever the soak rewrites the file, the process cancels
     run_switches and starts it again on the new config, which reinstalls every switch
     (pipeline kept, tables and policies written again) and restarts the loops.
  3. Traffic for the whole soak, iperf3: 4 TCP streams tcp1 -> tcp2, tagged UDP
     (DSCP 46) mm1 -> mm2 and untagged UDP cbr1 -> cbr2, all across the bottleneck r1 -> r2.
  4. Every --policy-interval-s the bottleneck's policy changes: the next algorithm of
     topologies/policies/cbt-fig4.yaml (all eight), every other round with its
     thresholds halved and a 40-packet queue limit.
  5. With --restart-switch, at --restart-at-s r1's simple_switch_grpc is killed with
     SIGKILL and started again (without a pipeline); the controller must notice,
     push the pipeline and reinstall. Until the controller reconnects on its own the
     soak records that run_switches ended, and the next policy change starts it again.
  6. With --foreign-write-interval-s N, every N s (half an interval after a policy
     change) a second client writes a different queue limit into r1's port policies
     (`mmaqm-ctl install --election-id 11`, the controller's is 10): the controller,
     primary again when it leaves, must repair it (a `repaired` event) before the
     next foreign write.
  7. The controller's (and each switch's) RSS is sampled every --rss-interval-s; every
     60 s the controller host also writes a `heap` event: its live Python objects
     by type (the types that grew most since the first sample) and, when run with
     PYTHONTRACEMALLOC=1 in the environment, Python's traced heap.

Checks afterwards (summary.json, and the exit status):
  * every occupancy register of every switch is 0 (queue_pkts, class_queue_pkts,
    fred_qlen, fred_nactive, read over Thrift) and queue_admits == queue_departures for
    every port and class (P4Runtime counters);
  * the controller process lived through the soak; with --restart-switch, run_switches
    never ended on its own (it survived the restart);
  * the traffic ran to its end (every iperf3 client exited 0);
  * every foreign write was followed by a repair (its latency in summary.json);
  * afterwards no namespace with the prefix, no process started here and no veth of
    the topology is left.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import gc
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

PREFIX = "mmsoak"
TOPOLOGY = REPO / "topologies" / "topos" / "dcbt-dumbbell-10mbit.json"
POLICIES = REPO / "topologies" / "policies" / "cbt-fig4.yaml"
BMV2_JSON = REPO / "build" / "main.json"
P4INFO = REPO / "build" / "main.p4info.txtpb"
OCCUPANCY_REGISTERS = ("queue_pkts", "class_queue_pkts", "fred_qlen", "fred_nactive")
THRESHOLD_KEYS = ("min_th_pkts", "max_th_pkts", "tagged_th_pkts", "untagged_th_pkts")
IPERF_PORT = 5201
TCP_STREAMS = 4
TAGGED_UDP_BPS = "1.5M"
UNTAGGED_UDP_BPS = "3M"
UDP_LEN = 1000
TAGGED_TOS = 46 << 2
DRAIN_TIMEOUT_S = 30
HEAP_INTERVAL_S = 60          # the controller host's heap event


# ------------------------------------------------------------ controller host
def controller_host(config_path: Path, events_path: Path) -> int:
    """run_switches on config_path, started again whenever the file changes."""
    from mmaqm.config import load_config
    from mmaqm.memory import limit_malloc_growth
    from mmaqm.supervisor import run_switches

    malloc_set = limit_malloc_growth()      # as `mmaqm-ctl run` does

    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    events = open(events_path, "a")

    def event(kind: str, **fields: Any) -> None:
        events.write(json.dumps({"t_ns": time.time_ns(), "event": kind, **fields}) + "\n")
        events.flush()

    def controller_event(e: dict[str, Any]) -> None:     # the controller's own events
        events.write(json.dumps({"t_ns": time.time_ns(), **e}, default=str) + "\n")
        events.flush()

    event("malloc settings", set_here=malloc_set,
          env={k: os.environ.get(k) for k in ("MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_")})
    heap_started = time.monotonic()
    first_types: dict[str, int] = {}

    def heap_event() -> None:
        """What the process holds: RSS, Python's own heap (tracemalloc, when on) and
        the live objects by type, with the types that grew most since the first
        sample: growth in Python objects is ours to find, growth outside them is
        in native code (gRPC, protobuf)."""
        gc.collect()
        types: dict[str, int] = {}
        for obj in gc.get_objects():
            name = type(obj).__qualname__
            types[name] = types.get(name, 0) + 1
        if not first_types:
            first_types.update(types)
        grew = sorted(((n - first_types.get(t, 0), t) for t, n in types.items()), reverse=True)
        event("heap", t_s=round(time.monotonic() - heap_started, 1),
              rss_kib=rss_kib(os.getpid()),
              traced_kib=(tracemalloc.get_traced_memory()[0] // 1024
                          if tracemalloc.is_tracing() else None),
              gc_objects=sum(types.values()),
              grew={t: d for d, t in grew[:12] if d > 0})

    async def heap_probe() -> None:
        while True:
            heap_event()
            await asyncio.sleep(HEAP_INTERVAL_S)

    async def main() -> None:
        mtime, task, generation, reported = None, None, 0, False
        probe = asyncio.create_task(heap_probe())   # noqa: F841 (runs until the end)
        while True:
            m = config_path.stat().st_mtime_ns
            if m != mtime:
                mtime = m
                if task is not None:
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
                generation += 1
                cfg = load_config(config_path)
                task = asyncio.create_task(run_switches(cfg, p4info=P4INFO, bmv2_json=BMV2_JSON,
                                                        event_sink=controller_event))
                reported = False
                event("run_switches started", generation=generation)
            elif task is not None and task.done() and not reported:
                exc = task.exception() if not task.cancelled() else None
                event("run_switches ended", generation=generation, error=repr(exc))
                logging.error("run_switches ended: %r", exc)
                reported = True
            await asyncio.sleep(0.2)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        asyncio.run(main())
    except SystemExit:
        pass
    return 0


# ------------------------------------------------------------ final check
def cli_lines(thrift_port: int, commands: list[str]) -> str:
    cli = shutil.which("simple_switch_CLI")
    r = subprocess.run([sys.executable, cli, "--thrift-port", str(thrift_port)],
                       input="\n".join(commands) + "\n", capture_output=True, text=True,
                       timeout=300)
    return r.stdout + r.stderr


def parse_register_arrays(text: str) -> dict[str, list[int]]:
    """{register: values} from simple_switch_CLI's `register_read NAME` (whole array)."""
    out = {}
    for m in re.finditer(r"(\w+)=\s*([0-9, ]+)", text):
        out[m.group(1)] = [int(x) for x in m.group(2).replace(" ", "").split(",") if x]
    return out


def final_check(config_path: Path, thrift_ports: dict[str, int]) -> int:
    """Registers and counters of every switch (runs in the switch namespace); JSON out."""
    from mmaqm import p4constants as C
    from mmaqm.blocking import BlockingSwitch
    from mmaqm.config import load_config
    from mmaqm.driver import SwitchDriver

    logging.getLogger("finsy").setLevel(logging.ERROR)
    cfg = load_config(config_path)
    result: dict[str, Any] = {}
    for name, sw in sorted(cfg.switches.items()):
        thrift = thrift_ports[name]
        regs = parse_register_arrays(cli_lines(thrift, [f"register_read {r}"
                                                        for r in OCCUPANCY_REGISTERS]))
        drv = BlockingSwitch(SwitchDriver(name, sw.p4runtime_addr, device_id=sw.device_id,
                                          p4info=P4INFO, read_only=True,
                                          push_pipeline=False, require_primary=False))
        try:
            values = drv.read_counters(("queue_arrivals", "queue_admits", "queue_departures",
                                        "queue_drops", "ingress_discards"))
        finally:
            drv.close()
        pk = {n: {i: v.packets for i, v in vals.items() if v.packets} for n, vals in values.items()}
        in_queue = {i: n - pk["queue_departures"].get(i, 0) for i, n in pk["queue_admits"].items()
                    if n != pk["queue_departures"].get(i, 0)}
        result[name] = {
            "registers_read": {r: len(regs.get(r, [])) for r in OCCUPANCY_REGISTERS},
            "registers_nonzero": {r: {i: v for i, v in enumerate(regs.get(r, [])) if v}
                                  for r in OCCUPANCY_REGISTERS},
            "admits_minus_departures": in_queue,
            "totals": {n: sum(v.values()) for n, v in pk.items()},
            "ingress_discards_by_reason": {
                name: sum(n for i, n in pk["ingress_discards"].items()
                          if i % C.NUM_DISCARD_REASONS == r)
                for name, r in C.DISCARD_REASONS.items()},
        }
    print(json.dumps(result))
    return 0


# ------------------------------------------------------------------ the soak
def policy_schedule(rounds: int) -> list[tuple[str, dict[str, Any]]]:
    from mmaqm_exp.experiment import load_policies
    policies = load_policies(POLICIES)
    names = list(policies)
    out = []
    for i in range(rounds):
        name = names[i % len(names)]
        pol = dict(policies[name])
        if (i + i // len(names)) % 2 == 1:    # every other round (each algorithm gets both)
            for k in THRESHOLD_KEYS:
                if k in pol:
                    pol[k] = pol[k] / 2
            pol["queue_limit_pkts"] = 40
            name += " (thresholds / 2, limit 40)"
        out.append((name, pol))
    return out


def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


class RssSampler(threading.Thread):
    def __init__(self, pids: dict[str, Any], interval_s: float, t0: float) -> None:
        super().__init__(daemon=True)
        self.pids, self.interval_s, self.t0 = pids, interval_s, t0
        self.rows: list[dict[str, Any]] = []
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.is_set():
            row = {"t_s": round(time.monotonic() - self.t0, 1)}
            for name, get_pid in self.pids.items():
                row[name] = rss_kib(get_pid())
            self.rows.append(row)
            self.stop_event.wait(self.interval_s)


def rss_summary(rows: list[dict[str, Any]], name: str) -> dict[str, Any]:
    pts = [(r["t_s"], r[name]) for r in rows if r.get(name)]
    if len(pts) < 4:
        return {"samples": len(pts)}
    half = pts[len(pts) // 2:]
    n = len(half)
    mt = sum(t for t, _ in half) / n
    mv = sum(v for _, v in half) / n
    var = sum((t - mt) ** 2 for t, _ in half)
    slope = sum((t - mt) * (v - mv) for t, v in half) / var if var else 0.0
    values = [v for _, v in pts]
    return {"samples": len(pts), "first_kib": values[0], "last_kib": values[-1],
            "min_kib": min(values), "max_kib": max(values),
            "second_half_slope_kib_per_min": round(slope * 60, 1)}


FOREIGN_ELECTION_ID = 11         # above the controller's 10: the foreign client is primary
FOREIGN_QUEUE_LIMIT_PKTS = 999   # what it writes into r1's port policies (valid for any policy)


def foreign_write(net, config_path: Path, out: Path, now_s: float) -> dict[str, Any]:
    """Another P4Runtime client installs r1 with FOREIGN_QUEUE_LIMIT_PKTS on every port
    policy; t_ns: when it started, client_s: how long it ran (the controller regains
    primary, and repairs, as soon as the client's stream closes, before its process
    has exited)."""
    import yaml

    cfg = yaml.safe_load(config_path.read_text())
    for policy in cfg["switches"]["r1"]["policies"].values():
        policy["queue_limit_pkts"] = FOREIGN_QUEUE_LIMIT_PKTS
    foreign = out / "foreign.yaml"
    foreign.write_text(yaml.safe_dump(cfg, sort_keys=False))
    started_ns = time.time_ns()
    r = net.run_switch_ns([sys.executable, "-m", "mmaqm.cli", "install", "-c", str(foreign),
                           "--switch", "r1", "--p4info", str(P4INFO), "--bmv2-json",
                           str(BMV2_JSON), "--election-id", str(FOREIGN_ELECTION_ID)],
                          timeout=120)
    return {"t_s": round(now_s, 1), "t_ns": started_ns,
            "client_s": round((time.time_ns() - started_ns) / 1e9, 3), "exit": r.returncode,
            "output": (r.stdout + r.stderr)[-500:]}


def run_soak(args: argparse.Namespace) -> int:
    import yaml

    from mmaqm_exp import lab
    from mmaqm_exp.network import Network, missing_prereqs
    from mmaqm_exp.topology import controller_config, load_topology, tm_queue_depth_pkts

    why = missing_prereqs()
    if why or shutil.which("iperf3") is None:
        print(f"soak: {why or 'needs iperf3'}", file=sys.stderr)
        return 2
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    topo = load_topology(TOPOLOGY)
    rounds = max(1, int(args.duration_s // args.policy_interval_s))
    schedule = policy_schedule(rounds)
    config_path = out / "controller.yaml"

    def write_config(policy: dict[str, Any]) -> None:
        tmp = config_path.with_suffix(".tmp")
        tmp.write_text(yaml.safe_dump(controller_config(topo, policy), sort_keys=False))
        os.replace(tmp, config_path)      # one rename: the controller reads whole files

    summary: dict[str, Any] = {"duration_s": args.duration_s,
                               "policy_interval_s": args.policy_interval_s,
                               "restart_switch": args.restart_switch, "policy_changes": [],
                               "topology": TOPOLOGY.name}
    lab.catch_stop_signals(interrupt=True)
    started_pids: list[int] = []
    ctl_log = out / "controller.log"
    events_path = out / "controller-events.jsonl"
    events_path.unlink(missing_ok=True)
    with lab.ExitOnStop("soak") as end:
        with Network(topo, out, BMV2_JSON, name_prefix=PREFIX) as net:
            t_up = time.monotonic()
            write_config(schedule[0][1])
            with open(ctl_log, "w") as log:
                host = net.popen_switch_ns(
                    [sys.executable, __file__, "--controller-host", str(config_path),
                     "--events", str(events_path)], stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL)
            started_pids.append(host.pid)

            def installs() -> int:
                return ctl_log.read_text().count(": installed ")

            deadline = time.monotonic() + 60
            while installs() < len(topo.switches):
                if host.poll() is not None or time.monotonic() > deadline:
                    print(f"soak: the controller did not install; see {ctl_log}", file=sys.stderr)
                    return 2
                time.sleep(0.2)
            net.configure_bottleneck(tm_queue_depth_pkts(60))
            summary["policy_changes"].append({"t_s": 0.0, "policy": schedule[0][0]})
            sampler = RssSampler({"controller": lambda: host.pid,
                                  **{f"bmv2 {s}": (lambda s=s: net.switch_pids().get(s, 0))
                                     for s in topo.switches}}, args.rss_interval_s, time.monotonic())
            sampler.start()
            # traffic
            servers, clients = [], {}
            for h in ("tcp2", "mm2", "cbr2"):
                p = net.popen(h, ["iperf3", "-s", "-1", "-p", str(IPERF_PORT)],
                              stdout=open(out / f"iperf3-server-{h}.txt", "w"),
                              stderr=subprocess.STDOUT)
                net.wait_listening(p, IPERF_PORT)
                servers.append(p)
            t = str(int(args.duration_s))
            client_argv = {
                "tcp1": ["iperf3", "-c", net.host_ip("tcp2"), "-t", t, "-P", str(TCP_STREAMS)],
                "mm1": ["iperf3", "-c", net.host_ip("mm2"), "-t", t, "-u", "-b", TAGGED_UDP_BPS,
                        "-l", str(UDP_LEN), "--tos", str(TAGGED_TOS)],
                "cbr1": ["iperf3", "-c", net.host_ip("cbr2"), "-t", t, "-u", "-b",
                         UNTAGGED_UDP_BPS, "-l", str(UDP_LEN)],
            }
            for h, argv in client_argv.items():
                clients[h] = net.popen(h, argv + ["-p", str(IPERF_PORT), "-J"],
                                       stdout=open(out / f"iperf3-{h}.json", "w"),
                                       stderr=subprocess.STDOUT)
            started_pids += [p.pid for p in servers] + [p.pid for p in clients.values()]
            t0 = time.monotonic()
            summary["bringup_s"] = round(t0 - t_up, 1)
            restart_at = args.restart_at_s if args.restart_at_s is not None else args.duration_s / 2
            restarted = False
            next_round = 1
            foreign_writes: list[dict[str, Any]] = []
            next_foreign = (args.foreign_write_interval_s + args.policy_interval_s / 2
                            if args.foreign_write_interval_s else None)
            while time.monotonic() - t0 < args.duration_s:
                now = time.monotonic() - t0
                if next_round < rounds and now >= next_round * args.policy_interval_s:
                    name, pol = schedule[next_round]
                    write_config(pol)
                    summary["policy_changes"].append({"t_s": round(now, 1), "policy": name})
                    print(f"soak: t={now:5.0f} s policy {name}", flush=True)
                    next_round += 1
                if next_foreign is not None and now >= next_foreign:
                    next_foreign += args.foreign_write_interval_s
                    foreign_writes.append(foreign_write(net, config_path, out, now))
                    print(f"soak: t={now:5.0f} s foreign write on r1 "
                          f"(exit {foreign_writes[-1]['exit']})", flush=True)
                if args.restart_switch and not restarted and now >= restart_at:
                    bmv2_pid = net.switch_pids()["r1"]
                    started_pids.append(bmv2_pid)
                    t_kill = time.monotonic()
                    new = net.restart_switch("r1")
                    started_pids.append(new.pid)
                    summary["switch_restart"] = {"t_s": round(now, 1), "switch": "r1",
                                                 "killed_pid": bmv2_pid, "new_pid": new.pid,
                                                 "restart_s": round(time.monotonic() - t_kill, 2)}
                    print(f"soak: t={now:5.0f} s r1 killed (SIGKILL) and restarted", flush=True)
                    restarted = True
                time.sleep(0.2)
            # the end: clients finish, queues drain
            exits = {}
            for h, p in clients.items():
                try:
                    exits[h] = p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    exits[h] = None
            summary["traffic_s"] = round(time.monotonic() - t0, 1)
            time.sleep(3)
            controller_alive = host.poll() is None
            started_pids += list(net.switch_pids().values())
            lab.stop_processes([host])
            sampler.stop_event.set()
            sampler.join()
            # registers and counters, until drained (at most DRAIN_TIMEOUT_S)
            thrift_ports = {name: net.thrift_port(name) for name in topo.switches}
            deadline = time.monotonic() + DRAIN_TIMEOUT_S
            while True:
                r = net.run_switch_ns([sys.executable, __file__, "--final-check", str(config_path),
                                       "--thrift-ports", json.dumps(thrift_ports)], timeout=300)
                try:
                    final = json.loads(r.stdout.strip().splitlines()[-1])
                except (ValueError, IndexError):
                    final = {"error": (r.stdout + r.stderr)[-2000:]}
                empty = "error" not in final and all(
                    not s["admits_minus_departures"] and not any(s["registers_nonzero"].values())
                    for s in final.values())
                if empty or time.monotonic() > deadline:
                    break
                time.sleep(2)
    if end.exit_status is not None:
        return end.exit_status

    # ---- afterwards: nothing left
    time.sleep(0.5)
    left_ns = lab.namespaces(PREFIX)
    left_pids = [p for p in started_pids if lab.alive(p)]
    ifnames = {p.ifname for sw in topo.switches.values() for p in sw.ports.values()}
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    left_links = sorted(n for n in ifnames if re.search(rf"^\d+: {re.escape(n)}[@:]", links, re.M))

    events = [json.loads(line) for line in events_path.read_text().splitlines()] \
        if events_path.exists() else []
    ended = [e for e in events if e["event"] == "run_switches ended"]
    clients_ok = {}
    for h in client_argv:
        try:
            data = json.loads((out / f"iperf3-{h}.json").read_text())
            end = data.get("end", {})
            s = end.get("sum_received") or end.get("sum") or {}
            clients_ok[h] = {"exit": exits.get(h), "error": data.get("error"),
                             "received_mbps": round(s.get("bits_per_second", 0) / 1e6, 3),
                             "lost_percent": s.get("lost_percent")}
        except (OSError, ValueError) as err:
            clients_ok[h] = {"exit": exits.get(h), "error": f"no JSON: {err}"}
    summary["traffic"] = clients_ok
    repairs = [e for e in events if e.get("event") == "repaired"]
    for i, fw in enumerate(foreign_writes):
        until = foreign_writes[i + 1]["t_ns"] if i + 1 < len(foreign_writes) else float("inf")
        after = [e["t_ns"] for e in repairs if fw["t_ns"] <= e["t_ns"] < until]
        fw["repaired_after_s"] = round((after[0] - fw["t_ns"]) / 1e9, 3) if after else None
    summary["foreign_writes"] = foreign_writes
    summary["repairs"] = len(repairs)
    summary["final"] = final
    summary["controller_events"] = events
    summary["heap"] = [e for e in events if e.get("event") == "heap"]
    summary["rss"] = {name: rss_summary(sampler.rows, name) for name in sampler.pids}
    with open(out / "rss.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(sampler.rows[0]))
        w.writeheader()
        w.writerows(sampler.rows)
    checks = {
        "occupancy registers all 0": "error" not in final and all(
            not any(s["registers_nonzero"].values()) and all(s["registers_read"].values())
            for s in final.values()),
        "admits - departures == 0 everywhere": "error" not in final and all(
            not s["admits_minus_departures"] for s in final.values()),
        "controller process lived through the soak": controller_alive,
        "run_switches never ended on its own": not ended,
        "traffic ran to the end (iperf3 exit 0)": all(exits.get(h) == 0 for h in client_argv),
        "every foreign write repaired": all(fw["exit"] == 0 and fw["repaired_after_s"] is not None
                                            for fw in foreign_writes),
        "no namespace left": not left_ns,
        "no process left": not left_pids,
        "no veth left": not left_links,
    }
    summary["left"] = {"namespaces": left_ns, "pids": left_pids, "links": left_links}
    summary["checks"] = checks
    summary["passed"] = all(checks.values())
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    print(f"soak: {args.duration_s:g} s, {len(summary['policy_changes'])} policies, "
          f"restart {summary.get('switch_restart', 'no')}")
    print(f"  traffic: {clients_ok}")
    print(f"  controller RSS: {summary['rss']['controller']}")
    if foreign_writes:
        print(f"  foreign writes: {len(foreign_writes)}, repaired after (s): "
              f"{[fw['repaired_after_s'] for fw in foreign_writes]}")
    for name, ok in checks.items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    print(f"soak: {out / 'summary.json'}")
    return 0 if summary["passed"] else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=600)
    parser.add_argument("--policy-interval-s", type=float, default=30)
    parser.add_argument("--restart-switch", action="store_true",
                        help="kill -9 r1's simple_switch_grpc once and start it again")
    parser.add_argument("--restart-at-s", type=float, help="default: half the duration")
    parser.add_argument("--foreign-write-interval-s", type=float, default=0.0,
                        help="every this many seconds another client writes r1's port "
                             "policies; the controller must repair them [0: none]")
    parser.add_argument("--rss-interval-s", type=float, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "build" / "soak")
    parser.add_argument("--controller-host", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--events", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--final-check", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--thrift-ports", type=json.loads, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.controller_host:
        return controller_host(args.controller_host, args.events)
    if args.final_check:
        return final_check(args.final_check, args.thrift_ports)
    if args.duration_s <= 0 or args.policy_interval_s <= 0:
        parser.error("--duration-s and --policy-interval-s must be > 0")
    return run_soak(args)


if __name__ == "__main__":
    sys.exit(main())
