#!/usr/bin/env python3
"""Instructions per packet through BMv2, counted by callgrind, vs the minimal router.

bench/run_bench.py measures packets per second, which moves with the host, the
build and whatever else the machine runs (its spread is 2-70 % per variant).
This tool counts instead: it runs simple_switch_grpc under
``valgrind --tool=callgrind`` in the bench's namespace (same program, same
config, same traffic as run_bench.py), then for each variant

1. zeroes callgrind's counters and waits ``--seconds`` with no traffic (the
   switch's own idle work: gRPC, timers, polling threads);
2. zeroes them again and sends ``--packets`` bench frames at ``--rate`` pps,
   waits until the receiver's count stops rising, and dumps.

instructions per packet = (Ir with traffic - Ir idle, scaled to the same
duration) / packets delivered. Instruction counts do not depend on the CPU's
speed or on other load (callgrind counts executed instructions, not time), so
the ratio to the minimal router is repeatable. It is a proxy for speed, not a
measurement of it: it ignores cache misses, lock contention and the thread
hand-offs between BMv2's ingress and egress threads. The per-function table
says where the instructions go (self cost, per packet, top ``--top``).

Needs root and valgrind (Debian: valgrind). Slow: each variant takes about a
minute. Output: a table on stdout and a JSON file in --out-dir.

  .venv/bin/python bench/callgrind_cost.py --variants minimal_ipv4,DROP_TAIL,prof-DROP_TAIL
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_bench as rb  # noqa: E402  (the bench's namespace, configs and bring-up)

lab = rb.lab
OUT_DIR = rb.REPO / "build" / "bench" / "callgrind"


def callgrind_control(*args: str) -> str:
    r = subprocess.run(["callgrind_control", *args], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"callgrind_control {' '.join(args)} failed: {r.stderr.strip()}")
    return r.stdout


def dump_files(base: Path) -> set[Path]:
    return set(base.parent.glob(base.name + "*"))


def dump(pid: int, base: Path) -> Path:
    """Dump callgrind's counters since the last zero; the new dump file."""
    before = dump_files(base)
    callgrind_control("--dump", str(pid))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        new = dump_files(base) - before
        if new:
            path = max(new, key=lambda p: p.stat().st_mtime)
            time.sleep(0.5)             # let valgrind finish writing it
            return path
        time.sleep(0.2)
    raise RuntimeError(f"callgrind wrote no dump for pid {pid}")


def total_ir(path: Path) -> int:
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise RuntimeError(f"{path}: no summary line")


def self_cost_by_function(path: Path) -> dict[str, int]:
    """Self Ir per function, from callgrind_annotate."""
    r = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", str(path)],
                       capture_output=True, text=True, timeout=120)
    costs: dict[str, int] = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*)$", line)
        if not m or ":" not in m.group(2):
            continue
        name = m.group(2).split(":", 1)[1].strip()
        name = re.sub(r"\s*\[[^\]]*\]$", "", name)       # drop the object file
        costs[name] = costs.get(name, 0) + int(m.group(1).replace(",", ""))
    return costs


# Inclusive cost of these functions, per packet: BMv2's three packet threads and the
# parts of their work (simple_switch.cpp: the receive thread resets the metadata of
# every new packet; the ingress thread parses and runs the ingress pipeline; the
# egress thread runs the egress pipeline, deparses and transmits).
PARTS = {
    "receive thread": "bm::packet_handler(",
    "  reset_metadata": "bm::PHV::reset_metadata()",
    "ingress thread": "SimpleSwitch::ingress_thread()",
    "  parser": "bm::Parser::parse(",
    "  pipelines": "bm::Pipeline::apply(",
    "egress thread": "SimpleSwitch::egress_thread(",
    "  deparser": "bm::Deparser::deparse(",
}


def inclusive_parts(path: Path) -> dict[str, int]:
    """Inclusive Ir of PARTS (Pipeline::apply: ingress and egress together)."""
    r = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(path)],
                       capture_output=True, text=True, timeout=120)
    found = {part: 0 for part in PARTS}
    for line in r.stdout.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?\S*?:(.*)$", line)
        if not m:
            continue
        for part, needle in PARTS.items():
            if m.group(2).startswith(needle) and not found[part]:
                found[part] = int(m.group(1).replace(",", ""))
    return found


def iface_count(bed: lab.Lab, ifname: str, what: str) -> int:
    r = bed.run(rb.NETNS, ["cat", f"/sys/class/net/{ifname}/statistics/{what}"])
    return int(r.stdout)


def measure(bench: rb.Bench, variant: str, args: argparse.Namespace) -> dict:
    tag = f"cg-{variant}"
    base = args.out_dir / f"{tag}.out"
    for old in dump_files(base):
        old.unlink()
    bench.wrapper = ("valgrind", "--tool=callgrind", f"--callgrind-out-file={base}",
                     "--dump-instr=no", "--collect-jumps=no")
    switch, info = bench.bring_up(variant, tag)
    try:
        time.sleep(2)
        callgrind_control("--zero", str(switch.pid))
        t0 = time.monotonic()
        time.sleep(args.seconds)
        idle_ir = total_ir(dump(switch.pid, base))
        idle_s = time.monotonic() - t0

        sent0, got0 = iface_count(bench.bed, "h1", "tx_packets"), iface_count(bench.bed, "h2", "rx_packets")
        callgrind_control("--zero", str(switch.pid))
        t0 = time.monotonic()
        duration = args.packets / args.rate
        rb.run_udpgen(bench.bed, rb.udpgen_argv(args.rate, duration, ifstats=("h1",), size=args.size,
                                                dscp=rb.variant_dscp(variant),
                                                family=rb.family_of(variant)), duration)
        last, stable_since = -1, time.monotonic()
        while time.monotonic() - stable_since < 2.0:          # the switch drains its queue
            got = iface_count(bench.bed, "h2", "rx_packets")
            if got != last:
                last, stable_since = got, time.monotonic()
            time.sleep(0.25)
        path = dump(switch.pid, base)
        busy_s = time.monotonic() - t0
        busy_ir = total_ir(path)
        sent = iface_count(bench.bed, "h1", "tx_packets") - sent0
        delivered = iface_count(bench.bed, "h2", "rx_packets") - got0
        if switch.poll() is not None:
            raise RuntimeError(f"simple_switch_grpc ({variant}) died under valgrind")
        idle_rate = idle_ir / idle_s
        per_packet = (busy_ir - idle_rate * busy_s) / max(delivered, 1)
        parts = {k: round(v / max(delivered, 1)) for k, v in inclusive_parts(path).items()}
        functions = self_cost_by_function(path)
        top = sorted(functions.items(), key=lambda kv: -kv[1])[:args.top]
        return {"variant": variant, "program": info.get("program", f"bench/{variant}.p4"),
                "sent": sent, "delivered": delivered, "idle_ir_per_s": round(idle_rate),
                "busy_ir": busy_ir, "busy_s": round(busy_s, 2),
                "ir_per_packet": round(per_packet), "parts_ir_per_packet": parts,
                "top_self_ir_per_packet": [(name, round(ir / max(delivered, 1))) for name, ir in top],
                "cost": rb.program_cost(variant)}
    finally:
        bench.bed.stop([switch], timeout_s=30)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = ",".join([rb.BASELINE, *rb.ALGORITHMS,
                        *(rb.PROFILE_TAG + a for a in rb.ALGORITHMS)])
    ap.add_argument("--variants", default=default,
                    help="comma-separated variants (run_bench.py's names; <NAME>-v6 and "
                         "minimal_ipv6 send IPv6/UDP) [every IPv4 variant]")
    ap.add_argument("--packets", type=int, default=2000, help="packets per variant [2000]")
    ap.add_argument("--rate", type=float, default=200.0, help="offered pps under valgrind [200]")
    ap.add_argument("--seconds", type=float, default=5.0, help="idle window, s [5]")
    ap.add_argument("--size", type=int, default=1000,
                    help="IP packet size, bytes (IPv4 or IPv6, the same frame) [1000]")
    ap.add_argument("--top", type=int, default=25, help="functions listed per variant [25]")
    ap.add_argument("--out-dir", type=Path, default=OUT_DIR)
    ap.add_argument("--netns-prefix", default=rb.PREFIX,
                    help=f"namespace prefix, to run beside another bench [{rb.PREFIX}]")
    args = ap.parse_args()
    args.variant_list = [v for v in args.variants.split(",") if v]
    known = set(rb.variants_for(list(rb.ALGORITHMS), rb.FAMILIES, True))
    unknown = [v for v in args.variant_list if v not in known]
    if unknown:
        ap.error(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    # each family's minimal router first: the ratios of its variants are against it
    needed = [b for b in rb.BASELINES.values()
              if any(rb.baseline_of(v) == b for v in args.variant_list)]
    args.variant_list = needed + [v for v in args.variant_list if v not in needed]
    return args


def main() -> int:
    args = parse_args()
    if os.geteuid() != 0:
        print("callgrind_cost: needs root (namespaces, veths)", file=sys.stderr)
        return 2
    why = lab.missing_prereqs(("simple_switch_grpc", "valgrind", "callgrind_control",
                               "callgrind_annotate", "p4c-bm2-ss", "gcc"))
    if why:
        print(f"callgrind_cost: {why}", file=sys.stderr)
        return 2
    rb.PREFIX, rb.NETNS = args.netns_prefix, args.netns_prefix + "-bench"
    lab.catch_stop_signals(interrupt=True)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now()
    results = []
    try:
        rb.build_tools()
        rb.build_profiles(sorted({rb.policy_algorithm(v) for v in args.variant_list
                                  if rb.profile_of(v)}))
        configs = rb.write_aqm_configs([v for v in args.variant_list if not rb.is_baseline(v)])
        with lab.Lab(rb.PREFIX) as bed:
            rb.setup_namespace(bed)
            bench = rb.Bench(args, bed, configs, wrapper=("valgrind",))   # set per variant
            for variant in args.variant_list:
                r = measure(bench, variant, args)
                results.append(r)
                rb.log(f"{variant:22s} {r['ir_per_packet']:9d} instructions/packet "
                       f"({r['delivered']}/{r['sent']} delivered)")
    except lab.StopRequested as stop:
        print("callgrind_cost: interrupted; cleaned up", file=sys.stderr)
        return stop.exit_status
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as err:
        print(f"callgrind_cost: {err}", file=sys.stderr)
        return 1
    bases = {r["variant"]: r["ir_per_packet"] for r in results if rb.is_baseline(r["variant"])}
    print(f"mmaqm callgrind cost {started.isoformat(timespec='seconds')}: instructions per "
          f"{args.size}-byte IP/UDP packet (IPv6 for minimal_ipv6 and <NAME>-v6, else IPv4) "
          f"through simple_switch_grpc ({shutil.which('simple_switch_grpc')}); minimal/variant: "
          f"against the minimal router of the variant's family")
    print(f"{'variant':22s} {'Ir/packet':>10s} {'minimal/variant':>16s} {'tables':>7s} {'fields':>7s}")
    for r in results:
        c = r["cost"] or {}
        base = bases[rb.baseline_of(r["variant"])]
        print(f"{r['variant']:22s} {r['ir_per_packet']:10d} {base / r['ir_per_packet']:16.3f} "
              f"{c.get('bmv2_tables', '-'):>7} {c.get('phv_fields', '-'):>7}")
    print("\nwhere they go, instructions per packet (inclusive; the receive thread includes "
          "reset_metadata, the ingress thread the parser and the pipelines' ingress part):")
    print(f"{'variant':22s} " + " ".join(f"{k.strip():>15s}" for k in PARTS))
    for r in results:
        print(f"{r['variant']:22s} " + " ".join(f"{r['parts_ir_per_packet'][k]:15d}" for k in PARTS))
    for r in results:
        print(f"\n{r['variant']}: self instructions per packet, top {args.top}")
        for name, ir in r["top_self_ir_per_packet"]:
            print(f"  {ir:8d}  {name[:150]}")
    out = args.out_dir / f"callgrind-{started.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"started": started.isoformat(timespec="seconds"),
                               "args": {k: str(v) for k, v in vars(args).items()},
                               "results": results}, indent=1))
    print(f"\nraw: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
