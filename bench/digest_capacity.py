#!/usr/bin/env python3
"""Flow-report (digest) capacity of the controller, with real BMv2 and the real
controller: can it keep up with a flood of flow reports?

For each number of distinct flows N (default 10 000, 30 000, 100 000) and each
expiry interval (default the paper's 300 ms, and one long enough that all N
flows are active), one run:

    udpgen --> h1 ==veth== sw1 [BMv2 port 1]   [BMv2 port 2] sw2 ==veth== h2

- a fresh simple_switch_grpc (build/main.json, D-CBT on both ports, logging off)
  and `mmaqm.cli run --stats-out` (the controller, as an experiment runs it),
  both in the namespace mmd-digest;
- udpgen sends --rate packets/s of minimum-size UDP frames, round-robin over
  N flows (flow i: source port 10000 + i % 50000, destination 9 + i / 50000),
  for --duration seconds: IPv4 (10.0.1.1 -> 10.0.2.1, 60-byte frames) or, with
  --family ipv6, IPv6 (2001:db8:1::1 -> 2001:db8:2::1, 62-byte frames: the
  smallest IPv6/UDP packet, 48 bytes), the config's routes of that family;
- measured: packets delivered (h2), flow reports the controller received
  (its stats samples, every 100 ms) per second, flows it tracked against the
  truth, the lateness of its share (50 ms) and stats (100 ms) loops, the age of
  the oldest report it handled, flows refused by the table cap, BMv2 and
  controller CPU.

The truth. Packet n is flow n % N, sent at n / R. A flow is active while a packet
of it arrived in the last expiry interval X; each flow has a packet every N / R
seconds, so in steady state min(N, R * X) flows are active (R: the packets BMv2
processed per second; the run is valid only if it lost < 1 % of them). The
controller sees a flow by its reports: one on the first packet of each
2^flow_epoch_shift us epoch, so its count equals the truth when every report
arrives and is counted at the time its packet arrived.

Digests and FLOW_SLOTS collisions: flow_report.p4 keeps {signature, epoch} in
FLOW_SLOTS (65 536) slots indexed by the CRC-32's low bits; flows that share a
slot overwrite each other and are reported again. The tool replays the run's
packet sequence through that logic (timestamps n / R) with the real slots and
with one slot per flow: the difference is the digests the collisions cost. It
also replays a dense case no BMv2 here can carry (every flow every 100 ms).

Needs root; run it on an otherwise idle machine (other BMv2 runs, builds and
tests paused), e.g. for the committed figures:

    .venv/bin/python bench/digest_capacity.py --out docs/results/digest-capacity.json

Prints a table; --out writes the summary as JSON (raw samples stay in build/digest/).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path

import run_bench as rb   # bench/run_bench.py: build steps, config, MACs (sets sys.path)
from mmaqm_exp import lab  # noqa: E402

from mmaqm import bmv2_tm  # noqa: E402
from mmaqm import p4constants as C  # noqa: E402
from mmaqm.algorithms.fred import flow_key_bytes  # noqa: E402
from mmaqm.config import ConfigError, flow_epoch_shift_for, parse_config  # noqa: E402

OUT = rb.REPO / "build" / "digest"
PREFIX = "mmd"
NETNS = PREFIX + "-digest"
FLOW_SLOTS = C.CONSTANTS["FLOW_SLOTS"]
# udpgen --size, the IP packet's length: IPv4 46 (60-byte frames, the Ethernet minimum);
# IPv6 40 + 8, a UDP header and no payload (62-byte frames)
FRAME_SIZE = {"ipv4": 46, "ipv6": 48}
DPORT = 9
STATS_INTERVAL_MS = 100
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg: str) -> None:
    print(f"[digest] {msg}", file=sys.stderr, flush=True)


def pid_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def config(expiry_ms: float, max_flows: int, family: str = "ipv4") -> dict:
    """D-CBT on both ports, the routes of the family (run_bench.py's DCBT or DCBT-v6)."""
    cfg = rb.aqm_config(rb.in_family("DCBT", family))
    cfg["active_flows"] = {"expiry_interval_ms": expiry_ms,
                           "update_interval_ms": min(50.0, expiry_ms), "max_flows": max_flows}
    try:
        parse_config(cfg)
    except ConfigError as err:
        raise SystemExit(f"invalid config: {err}")
    return cfg


# ------------------------------------------------------------------ truth
def flow_signatures(n_flows: int, family: str = "ipv4") -> list[int]:
    """crc32 of each flow's 5-tuple as udpgen builds it (flow_report.p4's signature; an
    IPv6 flow's addresses folded to 32 bits each, flow_signature.p4)."""
    if family == "ipv6":
        src, dst = rb.SRC_IP6, rb.DST_IP6
    else:
        src = int.from_bytes(bytes(map(int, rb.SRC_IP.split("."))), "big")
        dst = int.from_bytes(bytes(map(int, rb.DST_IP.split("."))), "big")
    return [zlib.crc32(flow_key_bytes(src, dst, 17, 10000 + i % 50000, DPORT + i // 50000))
            for i in range(n_flows)]


def replay_digests(sigs: list[int], packets: int, rate_pps: float, shift: int) -> dict:
    """Digests of packets 0..packets-1 (flow n % N at n / rate), through
    flow_report.p4's slots and through one slot per flow."""
    n = len(sigs)
    slots: dict[int, int] = {}
    own: dict[int, int] = {}
    real = ideal = 0
    us_per_pkt = 1e6 / rate_pps
    mask = FLOW_SLOTS - 1
    for k in range(packets):
        flow = k % n
        sig = sigs[flow]
        epoch = int(k * us_per_pkt) >> shift
        cur = sig << 32 | epoch
        slot = sig & mask
        if slots.get(slot) != cur:
            slots[slot] = cur
            real += 1
        if own.get(flow) != epoch:
            own[flow] = epoch
            ideal += 1
    return {"packets": packets, "digests": real, "digests_one_slot_per_flow": ideal,
            "collision_digests": real - ideal}


def shared_slot_flows(sigs: list[int]) -> int:
    used: dict[int, int] = {}
    for sig in sigs:
        used[sig & (FLOW_SLOTS - 1)] = used.get(sig & (FLOW_SLOTS - 1), 0) + 1
    return sum(c for c in used.values() if c > 1)


# ------------------------------------------------------------------ one run
def one_run(bed: lab.Lab, n_flows: int, expiry_ms: float, rate: float, duration: float,
            max_flows: int, tag: str, family: str = "ipv4") -> dict:
    cfg_path = OUT / f"config-{tag}.yaml"
    import yaml
    cfg_path.write_text(yaml.safe_dump(config(expiry_ms, max_flows, family), sort_keys=False))
    stats_path = OUT / f"stats-{tag}.jsonl"
    stats_path.unlink(missing_ok=True)
    [switch] = bed.start_switches(NETNS, [rb.lab.SwitchSpec(
        {1: "sw1", 2: "sw2"}, device_id=rb.DEVICE_ID, grpc_port=rb.GRPC_PORT,
        thrift_port=rb.THRIFT_PORT, out_path=OUT / f"bmv2-{tag}.stdout")])
    ctl_log = open(OUT / f"controller-{tag}.log", "w")
    ctl = bed.popen(NETNS, [sys.executable, "-m", "mmaqm.cli", "--config", str(cfg_path),
                            "--p4info", str(rb.MAIN_P4INFO), "--bmv2-json", str(rb.MAIN_JSON),
                            "run", "--stats-out", str(stats_path),
                            "--stats-interval-ms", str(STATS_INTERVAL_MS)],
                    stdout=ctl_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (stats_path.exists() and stats_path.stat().st_size > 0):
            if ctl.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"controller not ready ({ctl.poll()}): "
                                   f"{(OUT / f'controller-{tag}.log').read_text()[-1500:]}")
            time.sleep(0.1)
        for port in (1, 2):
            bmv2_tm.set_queue_depth(rb.THRIFT_PORT, port, rb.TM_QUEUE_DEPTH_PKTS, netns=NETNS)
        time.sleep(1.0)
        cpu0 = {"bmv2": pid_cpu_s(switch.pid), "controller": pid_cpu_s(ctl.pid)}
        argv = rb.udpgen_argv(rate, duration, watch_pid=switch.pid, ifstats=("h1", "h2"),
                              flows=n_flows, size=FRAME_SIZE[family], dport=DPORT,
                              family=family)
        t_start_ns = time.time_ns()
        samples = rb.run_udpgen(bed, argv, duration, netns=NETNS)
        t_end_ns = time.time_ns()
        cpu1 = {"bmv2": pid_cpu_s(switch.pid), "controller": pid_cpu_s(ctl.pid)}
        time.sleep(3.0)              # let the controller drain what is queued
        if switch.poll() is not None or ctl.poll() is not None:
            raise RuntimeError(f"switch ({switch.poll()}) or controller ({ctl.poll()}) died")
    finally:
        bed.stop([ctl, switch])
        ctl_log.close()
    stats = [json.loads(line) for line in stats_path.read_text().splitlines() if line.strip()]
    return analyse(n_flows, expiry_ms, rate, duration, samples, stats, t_start_ns, t_end_ns,
                   {k: round(cpu1[k] - cpu0[k], 2) for k in cpu0},
                   (OUT / f"controller-{tag}.log").read_text(), family)


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def analyse(n_flows: int, expiry_ms: float, rate: float, duration: float, samples: list[dict],
            stats: list[dict], t0_ns: int, t1_ns: int, cpu_s: dict, ctl_log: str,
            family: str = "ipv4") -> dict:
    first, last = samples[0], samples[-1]
    span = last["t"] - first["t"]
    sent = last["sent"] - first["sent"]
    delivered = last["if"]["h2"][0] - first["if"]["h2"][0]
    processed_pps = delivered / span
    loss_pct = 100 * (1 - delivered / sent) if sent else 0.0
    shift = flow_epoch_shift_for(expiry_ms)
    period_s = n_flows / processed_pps if processed_pps else float("inf")
    truth = min(n_flows, processed_pps * expiry_ms / 1000)
    # steady window: from one full round of flows or one expiry interval (+ 1 s), to the end
    settle_s = min(period_s, expiry_ms / 1000) + 1.0
    w0 = t0_ns + int(settle_s * 1e9)
    during = [s for s in stats if t0_ns <= s["t_ns"] <= t1_ns]
    window = [s for s in during if s["t_ns"] >= w0]
    ctl = [s["controller"] for s in during]
    tracked = [s["controller"]["flows"] for s in window]
    if len(window) >= 2:
        dt_s = (window[-1]["t_ns"] - window[0]["t_ns"]) / 1e9
        reports_ps = (window[-1]["controller"]["flow_reports"]
                      - window[0]["controller"]["flow_reports"]) / dt_s
    else:
        reports_ps = None
    before = [s for s in stats if s["t_ns"] < t0_ns]
    reports_total = stats[-1]["controller"]["flow_reports"] - (
        before[-1]["controller"]["flow_reports"] if before else 0)
    upd = [v for c in ctl for v in c["lateness_ms"]["update"]]
    sts = [v for c in ctl for v in c["lateness_ms"]["stats"]]
    sigs = flow_signatures(n_flows, family)
    replay = replay_digests(sigs, sent, sent / span if span else rate, shift)
    digest_drops = stats[-1]["controller"]["digest_lists_dropped"] + ctl_log.count("digest ignored")
    res = {
        "family": family, "frame_bytes": FRAME_SIZE[family] + 14,
        "flows": n_flows, "expiry_interval_ms": expiry_ms, "flow_epoch_shift": shift,
        "offered_pps": round(sent / span, 1), "delivered_pps": round(processed_pps, 1),
        "loss_pct": round(loss_pct, 3), "valid": loss_pct < 1.0,
        "flow_period_s": round(period_s, 3),
        "truth_active_flows": round(truth),
        "tracked_median": statistics.median(tracked) if tracked else None,
        "tracked_min": min(tracked) if tracked else None,
        "tracked_max": max(tracked) if tracked else None,
        "tracked_error_pct": (round(100 * (statistics.median(tracked) - truth) / truth, 2)
                              if tracked and truth else None),
        "reports_per_s": round(reports_ps, 1) if reports_ps is not None else None,
        "reports_total": reports_total, "digests_replayed": replay["digests"],
        "reports_missing_pct": round(100 * (1 - reports_total / replay["digests"]), 2)
        if replay["digests"] else None,
        "digest_lists_dropped": digest_drops,
        "flows_refused": stats[-1]["controller"]["flows_refused"],
        "report_age_max_ms": max((c["report_age_max_ms"] for c in ctl), default=None),
        "update_lateness_ms": {"p50": pct(upd, 0.5), "p99": pct(upd, 0.99),
                               "max": max(upd, default=None), "n": len(upd)},
        "stats_lateness_ms": {"p50": pct(sts, 0.5), "p99": pct(sts, 0.99),
                              "max": max(sts, default=None), "n": len(sts)},
        "cpu_s": cpu_s, "cpu_pct": {k: round(100 * v / span, 1) for k, v in cpu_s.items()},
        "flows_sharing_a_slot": shared_slot_flows(sigs),
        "collision_digests": replay["collision_digests"],
        "window_samples": len(window),
    }
    return res


def format_rows(rows: list[dict]) -> str:
    head = ("flows  expiry  delivered  loss   truth  tracked(min-max)     err   reports/s  "
            "missing  update late p50/p99/max  stats late p50/p99/max  age max  refused  "
            "CPU bmv2/ctl  collision digests")
    lines = [head]
    for r in rows:
        u, s = r["update_lateness_ms"], r["stats_lateness_ms"]
        lines.append(
            f"{r['flows']:>6} {r['expiry_interval_ms']:>6.0f}ms {r['delivered_pps']:>9.0f} "
            f"{r['loss_pct']:>5.2f}% {r['truth_active_flows']:>7} "
            f"{r['tracked_median']!s:>7}({r['tracked_min']}-{r['tracked_max']}) "
            f"{r['tracked_error_pct']!s:>6}% {r['reports_per_s']!s:>9} "
            f"{r['reports_missing_pct']!s:>6}%  {u['p50']}/{u['p99']}/{u['max']:.1f} ms"
            f"  {s['p50']}/{s['p99']}/{s['max']:.1f} ms  {r['report_age_max_ms']:.0f} ms"
            f"  {r['flows_refused']}  {r['cpu_pct']['bmv2']:.0f}/{r['cpu_pct']['controller']:.0f} %"
            f"  {r['collision_digests']}{'' if r['valid'] else '  INVALID: loss >= 1 %'}")
    return "\n".join(lines)


def dense_collisions(n_flows: int, every_ms: float, expiry_ms: float, seconds: float,
                     family: str = "ipv4") -> dict:
    """A replay no BMv2 here can carry: every flow every every_ms."""
    rate = n_flows * 1000 / every_ms
    res = replay_digests(flow_signatures(n_flows, family), int(rate * seconds), rate,
                         flow_epoch_shift_for(expiry_ms))
    res.update(family=family, flows=n_flows, every_ms=every_ms, expiry_interval_ms=expiry_ms,
               rate_pps=rate, seconds=seconds,
               collision_digests_per_s=round(res["collision_digests"] / seconds, 1),
               digests_per_s=round(res["digests"] / seconds, 1))
    return res


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flows", default="10000,30000,100000")
    ap.add_argument("--expiry-ms", default="300,auto",
                    help="expiry intervals; 'auto' = long enough for all flows (2 x N / rate, "
                         "at least 300)")
    ap.add_argument("--rate", type=float, default=10000, help="offered packets/s")
    ap.add_argument("--duration", type=float, default=25)
    ap.add_argument("--max-flows", type=int, default=262_144)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--no-dense", action="store_true", help="skip the dense-case replay")
    ap.add_argument("--family", choices=("ipv4", "ipv6"), default="ipv4",
                    help="the flows' family: IPv4/UDP (60-byte frames) or IPv6/UDP (62-byte "
                         "frames), with routes of that family [ipv4]")
    args = ap.parse_args(argv)
    try:
        args.flow_list = [int(x) for x in args.flows.split(",")]
    except ValueError:
        ap.error(f"--flows: comma-separated integers, got {args.flows!r}")
    if not args.flow_list or min(args.flow_list) < 1 or args.rate <= 0 or args.duration <= 0:
        ap.error("--flows >= 1 each, --rate > 0, --duration > 0")
    return args


def main() -> int:
    args = parse_args()
    why = lab.missing_prereqs(["simple_switch_grpc"])
    if why:
        raise SystemExit(f"digest_capacity: {why}")
    OUT.mkdir(parents=True, exist_ok=True)
    rb.build_tools()
    flows = args.flow_list
    rows = []
    with lab.Lab(PREFIX) as bed:
        bed.add_namespace(NETNS)
        bed.add_veths([(lab.VethEnd(NETNS, f"sw{n}", lab.RAW_PORT),
                        lab.VethEnd(NETNS, f"h{n}", lab.RAW_PORT, mac=rb.HOST_IF_MAC[n]))
                       for n in (1, 2)])
        for expiry in args.expiry_ms.split(","):
            for n in flows:
                expiry_ms = (max(300.0, 2000.0 * n / args.rate) if expiry == "auto"
                             else float(expiry))
                tag = f"{args.family}-{n}-{expiry_ms:.0f}"
                log(f"{n} {args.family} flows, expiry {expiry_ms:.0f} ms, {args.rate:.0f} pps "
                    f"offered, {args.duration:.0f} s")
                row = one_run(bed, n, expiry_ms, args.rate, args.duration, args.max_flows, tag,
                              args.family)
                log(json.dumps(row))
                rows.append(row)
    print(f"{args.family}/UDP flows, {FRAME_SIZE[args.family] + 14}-byte frames")
    print(format_rows(rows))
    summary = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
               "machine": {"cpus": os.cpu_count(), "uname": " ".join(os.uname())},
               "args": {k: str(v) for k, v in vars(args).items()}, "runs": rows}
    if not args.no_dense:
        summary["dense_replay"] = [dense_collisions(100_000, 100.0, 300.0, 1.0, args.family)]
        print(json.dumps(summary["dense_replay"]))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(summary, indent=1) + "\n")
        args.out.with_suffix(".txt").write_text(format_rows(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
