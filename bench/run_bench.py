#!/usr/bin/env python3
"""BMv2 packet rate through the mmaqm program vs a minimal IPv4 (and IPv6) forwarder.

One run measures, on the same simple_switch_grpc binary with the same flags,
the maximum forwarding rate of 1000-byte UDP packets through
bench/minimal_ipv4.p4 (the baseline), through build/main.json (the all-in-one
program) under each AQM algorithm, and through each algorithm's BMv2 profile
(build/<name>/main.json, tools/build_profiles.py) under that algorithm (variants
prof-<ALGORITHM>), and reports each variant's median packets per second and its
ratio to the baseline, the two programs' ratios side by side. With IPv6 (--family
ipv6 or both, the default) the same again with 1000-byte IPv6/UDP packets: the
baseline bench/minimal_ipv6.p4 (minimal_ipv6) and the variants <NAME>-v6, each
against the IPv6 baseline, and each IPv6 variant's rate against its IPv4 one.
See bench/README.md for what the numbers mean.

Topology (one namespace, mmb-bench):

    udpgen --> h1 ==veth== sw1 [BMv2 port 1]   [BMv2 port 2] sw2 ==veth== h2 --> counted

udpgen (bench/udpgen.c) sends paced raw frames on h1 and samples the
interface counters once a second; "delivered" is h2's rx_packets. h2's own
MAC differs from the next hop the switch writes, so its kernel drops every
delivered frame at once (no socket, no ICMP back into the switch).

Every variant gets a freshly started switch; rounds are interleaved
(round-robin, rotated each round) so that drift affects all variants alike.
The namespace, veths and every process are removed on exit, on failure and
on Ctrl-C, SIGTERM or SIGHUP; leftovers of a killed run (namespaces named
mmb-*) are removed first. All of that is topologies/mmaqm_exp/lab.py, the
project's one namespace lifecycle. Needs root.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
BUILD = REPO / "build" / "bench"
MAIN_JSON = REPO / "build" / "main.json"
MAIN_P4INFO = REPO / "build" / "main.p4info.txtpb"
MIN_P4 = BENCH / "minimal_ipv4.p4"
MIN_JSON = BUILD / "minimal_ipv4.json"
MIN_P4INFO = BUILD / "minimal_ipv4.p4info.txtpb"
MIN6_P4 = BENCH / "minimal_ipv6.p4"
MIN6_JSON = BUILD / "minimal_ipv6.json"
MIN6_P4INFO = BUILD / "minimal_ipv6.p4info.txtpb"
BUILD_PROFILES = REPO / "tools" / "build_profiles.py"
UDPGEN_C = BENCH / "udpgen.c"
UDPGEN = BUILD / "udpgen"

PREFIX = "mmb"
NETNS = PREFIX + "-bench"
GRPC_PORT = 9559
GRPC_ADDR = f"127.0.0.1:{GRPC_PORT}"
THRIFT_PORT = 9090
DEVICE_ID = 1
CLK_TCK = os.sysconf("SC_CLK_TCK")
# mmaqm and mmaqm_exp, also without the editable installs
sys.path[:0] = [str(REPO / "control-plane"), str(REPO / "topologies")]
from mmaqm_exp import lab  # noqa: E402
from mmaqm.algorithms import ALGORITHMS as POLICY_ACTION_OF  # noqa: E402
from mmaqm.algorithms import REGISTRY  # noqa: E402

from mmaqm_exp import pipeline_stats as bmv2_pipeline_stats

# Port 1 faces the sender, port 2 the receiver.
ROUTER_MAC = {1: "02:00:00:00:00:01", 2: "02:00:00:00:00:02"}
NEXT_HOP_MAC = {1: "02:00:00:00:01:01", 2: "02:00:00:00:02:01"}
HOST_IF_MAC = {1: "02:00:00:00:01:01", 2: "02:00:00:00:02:fe"}  # h2 != next hop: dropped at once
PREFIXES = {1: "10.0.1.0/24", 2: "10.0.2.0/24"}
SRC_IP, DST_IP = "10.0.1.1", "10.0.2.1"
PREFIXES6 = {1: "2001:db8:1::/64", 2: "2001:db8:2::/64"}
SRC_IP6, DST_IP6 = "2001:db8:1::1", "2001:db8:2::1"
IPV6_HEADER_BYTES = 40       # RFC 8200 §3; udpgen --size is the whole IP packet in both families

# UPTA's modes are variants of one action (upta.p4): B, P and C are benched apart. With
# no fair share (the controller's loop does not run here) UPTA still runs its whole
# per-packet path (estimator, Fig. 7 tests) and never drops.
UPTA_VARIANTS = {"UPTA_B": "B", "UPTA_P": "P", "UPTA_C": "C"}
# D-CBT with the tag guard on (docs/algorithms/tag-guard.md), its packets tagged
# (TAGGED_DSCP) so that every one is tested and every admitted one moves its flow's
# theoretical arrival time: one register read and one write per packet. Its link
# rate, GUARD_LINK_PPS, gives an interval of 1 us, so the guard never drops at the
# bench's rates. D-CBT treats a tagged packet as an untagged one while red_avg stays
# below min_th, as here: the guard's work is the difference from DCBT.
GUARD_VARIANTS = {"DCBT_GUARD": "DCBT"}
GUARD_LINK_PPS = 1_000_000
TAGGED_DSCP = 46
# every algorithm the program has, in registry order (UPTA as its variants; D-CBT
# also with its guard on)
ALGORITHMS = tuple(v for a in POLICY_ACTION_OF
                   for v in (UPTA_VARIANTS if a == "UPTA"
                             else (a, *(g for g, b in GUARD_VARIANTS.items() if b == a))))


# A variant prof-<A> is algorithm variant A on its BMv2 profile (the program with only
# that algorithm, make build PROFILE=<algorithm>) instead of the all-in-one program.
PROFILE_TAG = "prof-"


# IPv6: a variant <V>-v6 is variant V (prof- included) sending IPv6/UDP through the same
# program and config (its routes IPv6); its baseline is minimal_ipv6, the IPv6 router.
FAMILIES = ("ipv4", "ipv6")
V6_TAG = "-v6"
BASELINES = {"ipv4": "minimal_ipv4", "ipv6": "minimal_ipv6"}
BASELINE = BASELINES["ipv4"]


def family_of(variant: str) -> str:
    """'ipv6' for minimal_ipv6 and every <V>-v6 variant, else 'ipv4'."""
    return "ipv6" if variant == BASELINES["ipv6"] or variant.endswith(V6_TAG) else "ipv4"


def is_baseline(variant: str) -> bool:
    return variant in BASELINES.values()


def baseline_of(variant: str) -> str:
    """The minimal router a variant's ratio is against: its own family's."""
    return BASELINES[family_of(variant)]


def ipv4_variant(variant: str) -> str:
    """The IPv4 variant of the same program and config (itself for an IPv4 one)."""
    if variant == BASELINES["ipv6"]:
        return BASELINES["ipv4"]
    return variant[:-len(V6_TAG)] if variant.endswith(V6_TAG) else variant


def in_family(variant: str, family: str) -> str:
    """An IPv4 variant's name in a family: itself, or its IPv6 counterpart."""
    if family == "ipv4":
        return variant
    return BASELINES["ipv6"] if variant == BASELINES["ipv4"] else variant + V6_TAG


def variants_for(algorithms: list[str], families: tuple[str, ...], profiles: bool) -> list[str]:
    """Every variant of a run, each IPv4 one followed by its IPv6 counterpart (so that the
    two are measured one after the other in every round): the baselines, the algorithms on
    the all-in-one program, then on their profiles."""
    v4 = [BASELINE, *algorithms, *([PROFILE_TAG + a for a in algorithms] if profiles else [])]
    return [in_family(v, f) for v in v4 for f in families]


def table_order(variants: list[str]) -> list[str]:
    """The report's order: the IPv4 variants, then the IPv6 ones, each in run order."""
    return sorted(variants, key=lambda v: FAMILIES.index(family_of(v)))


def round_order(variants: list[str], rnd: int, families: int = 1) -> list[str]:
    """The run's variants rotated by one variant (both families: one IPv4/IPv6 pair) per
    round, so that each round starts elsewhere and every pair stays together."""
    k = rnd * families % len(variants)
    return variants[k:] + variants[:k]


def base_variant(variant: str) -> str:
    """The algorithm variant, without the profile and IPv6 tags."""
    variant = ipv4_variant(variant)
    return variant[len(PROFILE_TAG):] if variant.startswith(PROFILE_TAG) else variant


def policy_algorithm(variant: str) -> str:
    """The configuration algorithm of a bench variant."""
    variant = base_variant(variant)
    if variant in UPTA_VARIANTS:
        return "UPTA"
    return GUARD_VARIANTS.get(variant, variant)


def variant_dscp(variant: str) -> int:
    """The DSCP of the bench's packets for a variant: tagged for the guard's."""
    return TAGGED_DSCP if base_variant(variant) in GUARD_VARIANTS else 0


def profile_of(variant: str) -> str | None:
    """The profile a variant runs on; None: the all-in-one program (or the baseline)."""
    return policy_algorithm(variant) if variant.startswith(PROFILE_TAG) else None


def program_files(variant: str) -> tuple[Path, Path]:
    """(BMv2 JSON, P4Info) of the program a variant runs."""
    if variant == BASELINES["ipv4"]:
        return MIN_JSON, MIN_P4INFO
    if variant == BASELINES["ipv6"]:
        return MIN6_JSON, MIN6_P4INFO
    profile = profile_of(variant)
    if profile is None:
        return MAIN_JSON, MAIN_P4INFO
    d = REPO / "build" / profile.lower()
    return d / "main.json", d / "main.p4info.txtpb"


# AQM settings under which no AQM decision can drop at the bench load: the
# queue the P4 program sees never comes near these (checked after every
# measurement from the program's own drop counters).
QUEUE_LIMIT_PKTS = 1000
MIN_TH_PKTS, MAX_TH_PKTS = 900, 1000
CLASS_TH_PKTS = 1000
# BMv2 traffic-manager depth on both ports (bmv2_tm, not the controller config):
# > queue limit, so the traffic manager never drops first (docs/design.md §1.3)
TM_QUEUE_DEPTH_PKTS = 1024


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def sh(argv: list[str], check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    """argv in this (the root) namespace: build steps, udpgen --dump-frame."""
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): "
                           f"{(r.stderr or r.stdout).strip()}")
    return r


# ------------------------------------------------------------ build steps
def stale(target: Path, *sources: Path) -> bool:
    return not target.exists() or any(s.stat().st_mtime > target.stat().st_mtime for s in sources)


def build_profiles(profiles: list[str]) -> None:
    """Compile the profiles (checked against their golden P4Infos; ~1 s each)."""
    if profiles:
        log(f"compiling the profiles {', '.join(profiles)}")
        argv = [sys.executable, str(BUILD_PROFILES)]
        for profile in profiles:
            argv += ["--profile", profile]
        sh(argv, timeout=600)


def build_tools() -> None:
    BUILD.mkdir(parents=True, exist_ok=True)
    for p4, json_path, p4info in ((MIN_P4, MIN_JSON, MIN_P4INFO), (MIN6_P4, MIN6_JSON, MIN6_P4INFO)):
        if not (stale(json_path, p4) or stale(p4info, p4)):
            continue
        log(f"compiling {p4.relative_to(REPO)}")
        r = subprocess.run(["p4c-bm2-ss", "--arch", "v1model", "--std", "p4-16",
                            "-o", str(json_path), "--p4runtime-files", str(p4info), str(p4)],
                           capture_output=True, text=True)
        out = (r.stdout + r.stderr).strip()
        if r.returncode != 0 or "warning" in out.lower():
            json_path.unlink(missing_ok=True)
            raise RuntimeError(f"p4c-bm2-ss on {p4.name} "
                               f"{'failed' if r.returncode else 'warned (must be warning-free)'}:\n{out}")
    if stale(UDPGEN, UDPGEN_C):
        log(f"compiling {UDPGEN_C.relative_to(REPO)}")
        sh(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(UDPGEN), str(UDPGEN_C)])


# ------------------------------------------------------------ namespace
def setup_namespace(bed: lab.Lab) -> None:
    """mmb-bench with sw1 <-> h1 and sw2 <-> h2; every end a raw port (lab.RAW_PORT)."""
    bed.add_namespace(NETNS)
    bed.add_veths([(lab.VethEnd(NETNS, f"sw{n}", lab.RAW_PORT),
                    lab.VethEnd(NETNS, f"h{n}", lab.RAW_PORT, mac=HOST_IF_MAC[n]))
                   for n in (1, 2)])


def switch_spec(tag: str, wrapper: tuple[str, ...] = ()) -> lab.SwitchSpec:
    """simple_switch_grpc, same flags for every variant; logging off. wrapper: a command
    the switch runs under (bench/callgrind_cost.py: valgrind)."""
    return lab.SwitchSpec({1: "sw1", 2: "sw2"}, device_id=DEVICE_ID, grpc_port=GRPC_PORT,
                          thrift_port=THRIFT_PORT, out_path=BUILD / f"bmv2-{tag}.stdout",
                          wrapper=wrapper)


def ctl(bed: lab.Lab, *args: str, timeout: float = 90) -> dict:
    """bench/bench_ctl.py inside the namespace; its JSON result."""
    r = bed.run(NETNS, [sys.executable, str(BENCH / "bench_ctl.py"), *args], timeout_s=timeout,
                check=False)
    try:
        result = json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise RuntimeError(f"bench_ctl {args[0]} failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    if r.returncode != 0:
        raise RuntimeError(f"bench_ctl {args[0]}: {result}")
    return result


# ------------------------------------------------------------ configuration
def routes_of(family: str) -> list[dict]:
    """The two routes (port 1: the sender's side, port 2: the receiver's) of a family."""
    prefixes = PREFIXES if family == "ipv4" else PREFIXES6
    return [{"prefix": prefixes[n], "port": n, "next_hop_mac": NEXT_HOP_MAC[n]} for n in (1, 2)]


def aqm_config(variant: str) -> dict:
    """The config of a variant: its algorithm's policy, the routes of its family (an IPv6
    variant's config has IPv6 routes only, an IPv4 one's IPv4 routes only)."""
    family = family_of(variant)
    variant = base_variant(variant)      # a profile or IPv6 variant: its algorithm's config
    algorithm = policy_algorithm(variant)
    policy: dict = {"algorithm": algorithm, "queue_limit_pkts": QUEUE_LIMIT_PKTS}
    if variant in UPTA_VARIANTS:
        policy.update(upta_mode=UPTA_VARIANTS[variant], upta_tagged_loss_threshold=0.12)
    if variant in GUARD_VARIANTS:
        policy.update(tag_guard=True, tag_guard_link_pps=GUARD_LINK_PPS)
    if "min_th_pkts" in REGISTRY[algorithm].keys:      # RED's thresholds (FRED's too)
        policy.update(min_th_pkts=MIN_TH_PKTS, max_th_pkts=MAX_TH_PKTS, max_p=0.1)
    if algorithm in ("CBT_RED_ALL", "CBT_RED_TCP_ONLY"):
        policy.update(tagged_th_pkts=CLASS_TH_PKTS, untagged_th_pkts=CLASS_TH_PKTS)
    return {
        "switches": {"bench": {
            "p4runtime_addr": GRPC_ADDR,
            "device_id": DEVICE_ID,
            "ports": {n: {"mac": ROUTER_MAC[n]} for n in (1, 2)},
            "routes": routes_of(family),
            "policies": {"default": policy},
        }},
    }


def write_aqm_configs(algorithms: list[str]) -> dict[str, Path]:
    import yaml
    from mmaqm.config import ConfigError, parse_config

    paths = {}
    for algorithm in algorithms:
        data = aqm_config(algorithm)
        try:
            parse_config(data)
        except ConfigError as err:
            raise RuntimeError(f"bench config for {algorithm} is invalid:\n{err}") from None
        path = BUILD / f"aqm-{algorithm}.yaml"
        path.write_text("# generated by bench/run_bench.py\n" + yaml.safe_dump(data, sort_keys=False))
        paths[algorithm] = path
    return paths


# ------------------------------------------------------------ traffic
def udpgen_argv(rate: float, duration: float, *, watch_pid: int | None = None,
                ifstats: tuple[str, ...] = ("h1", "sw1", "sw2", "h2"), flows: int = 1,
                size: int = 1000, dump: bool = False, dport: int | None = None,
                dscp: int = 0, family: str = "ipv4") -> list[str]:
    """udpgen's command line; size: the IP packet's length (IPv4 total length, or IPv6's
    40-byte header + payload: the same frame size in both families)."""
    src, dst = (SRC_IP, DST_IP) if family == "ipv4" else (SRC_IP6, DST_IP6)
    argv = [str(UDPGEN), "--iface", "h1", "--src-mac", HOST_IF_MAC[1], "--dst-mac", ROUTER_MAC[1],
            "--src-ip", src, "--dst-ip", dst, "--size", str(size), "--flows", str(flows),
            "--rate", str(rate), "--duration", str(duration), "--sample-ms", "1000",
            "--dscp", str(dscp)]
    for ifname in ifstats:
        argv += ["--ifstat", ifname]
    if watch_pid:
        argv += ["--watch-pid", str(watch_pid)]
    if dump:
        argv += ["--dump-frame", "1"]
    if dport is not None:
        argv += ["--dport", str(dport)]
    return argv


def run_udpgen(bed: lab.Lab, argv: list[str], duration: float,
               netns: str | None = None) -> list[dict]:
    """udpgen in netns (default: the bench's namespace); its samples."""
    p = bed.popen(netns or NETNS, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=duration + 30)
    finally:
        bed.stop([p])
    if p.returncode != 0:
        raise RuntimeError(f"udpgen exited {p.returncode}: {err.strip()}")
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def window_stats(samples: list[dict], warmup: float) -> dict:
    """Rates over the samples from the first one at or after warmup to the last."""
    win = [s for s in samples if s["t"] >= warmup - 0.05]
    if len(win) < 2:
        raise RuntimeError(f"measurement too short: {len(samples)} samples")
    a, b = win[0], win[-1]
    span = b["t"] - a["t"]

    def d(ifname: str, k: int) -> int:
        return b["if"][ifname][k] - a["if"][ifname][k]

    RX, RXD, TX, TXD = range(4)
    sent = b["sent"] - a["sent"]
    delivered = d("h2", RX)
    per_second = [(y["if"]["h2"][RX] - x["if"]["h2"][RX]) / (y["t"] - x["t"])
                  for x, y in zip(win, win[1:])]
    res = {
        "window_s": round(span, 3),
        "sent": sent,
        "send_err": b["send_err"] - a["send_err"],
        "delivered": delivered,
        "offered_pps": sent / span,
        "pps": delivered / span,
        "pps_per_second": [round(x, 1) for x in per_second],
        "loss_pct": 100.0 * (1 - delivered / sent) if sent else None,
        # where the missing packets went
        "h1_tx_dropped": d("h1", TXD),        # veth could not hand them to sw1's side
        "sw1_rx": d("sw1", RX),
        "sw2_tx": d("sw2", TX),                # what BMv2 transmitted
        "lost_in_bmv2": d("sw1", RX) - d("sw2", TX),   # socket ring overflow or program drops
        "gen_cpu_pct": 100.0 * (b["self_cpu_s"] - a["self_cpu_s"]) / span,
    }
    # Machine CPU in % of one core (all cores together: 2 cores = 200 %).
    ticks = [y - x for x, y in zip(a["cpu_ticks"], b["cpu_ticks"])]
    pct = lambda t: 100.0 * t / CLK_TCK / span  # noqa: E731
    user, nice, system, idle, iowait, irq, softirq, steal = ticks
    res["machine_busy_pct"] = pct(user + nice + system + irq + softirq)
    res["machine_softirq_pct"] = pct(softirq + irq)
    res["machine_steal_pct"] = pct(steal)
    if a["pid_cpu_ticks"] >= 0 and b["pid_cpu_ticks"] >= 0:
        res["bmv2_cpu_pct"] = pct(b["pid_cpu_ticks"] - a["pid_cpu_ticks"])
        threads = {tid: pct(b["threads"][tid] - a["threads"].get(tid, 0))
                   for tid in b.get("threads", {})}
        res["bmv2_thread_cpu_pct"] = dict(sorted(threads.items(), key=lambda kv: -kv[1]))
        res["bmv2_busiest_thread_pct"] = max(threads.values(), default=None)
        # everything else: the generator's kernel work shows up in its own time,
        # softirq, other processes on the machine
        res["other_cpu_pct"] = res["machine_busy_pct"] - res["bmv2_cpu_pct"] - res["gen_cpu_pct"]
    else:
        res["bmv2_cpu_pct"] = res["bmv2_busiest_thread_pct"] = res["other_cpu_pct"] = None
    return res


def generator_alone(bed: lab.Lab, seconds: float, size: int) -> dict:
    """udpgen unpaced into h1 with no switch on sw1 (the kernel drops at sw1)."""
    samples = run_udpgen(bed, udpgen_argv(0, seconds + 1, ifstats=("h1", "sw1"), size=size),
                         seconds + 1)
    win = [s for s in samples if s["t"] >= 1 - 0.05]
    a, b = win[0], win[-1]
    span = b["t"] - a["t"]
    return {
        "pps": (b["sent"] - a["sent"]) / span,
        "sw1_rx_pps": (b["if"]["sw1"][0] - a["if"]["sw1"][0]) / span,
        "cpu_pct": 100.0 * (b["self_cpu_s"] - a["self_cpu_s"]) / span,
        "window_s": round(span, 3),
    }


def machine_busy_pct(seconds: float = 1.0) -> float:
    """Busy CPU of the whole machine over `seconds`, % of one core."""
    def ticks() -> list[int]:
        return [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    a = ticks()
    time.sleep(seconds)
    d = [y - x for x, y in zip(a, ticks())]
    return 100.0 * (d[0] + d[1] + d[2] + d[5] + d[6]) / CLK_TCK / seconds


def wait_quiet(limit_pct: float, max_wait_s: float) -> dict:
    """Wait (up to max_wait_s) until the machine is nearly idle before timing."""
    started = time.monotonic()
    while True:
        busy = machine_busy_pct()
        waited = time.monotonic() - started
        if busy <= limit_pct:
            return {"busy_pct": round(busy, 1), "waited_s": round(waited, 1), "quiet": True}
        if waited >= max_wait_s:
            log(f"machine still {busy:.0f} % busy after {waited:.0f} s; measuring anyway")
            return {"busy_pct": round(busy, 1), "waited_s": round(waited, 1), "quiet": False}
        time.sleep(2)


# ------------------------------------------------------------ one variant
class Bench:
    def __init__(self, args: argparse.Namespace, bed: lab.Lab, configs: dict[str, Path],
                 wrapper: tuple[str, ...] = ()) -> None:
        self.args = args
        self.bed = bed
        self.configs = configs
        self.wrapper = wrapper
        # connect + pipeline push: a switch under valgrind takes minutes
        self.ctl_timeout = ["--connect-timeout-s", "600"] if wrapper else []
        self.frame_hex = {(family, dscp): sh(udpgen_argv(1, 1, size=args.size, dump=True,
                                                         dscp=dscp, family=family)).stdout.strip()
                          for family in FAMILIES for dscp in (0, TAGGED_DSCP)}

    def bring_up(self, variant: str, tag: str) -> tuple[subprocess.Popen, dict]:
        [switch] = self.bed.start_switches(NETNS, [switch_spec(tag, self.wrapper)],
                                           timeout_s=120 if self.wrapper else lab.READY_TIMEOUT_S)
        t0 = time.monotonic()
        family = family_of(variant)
        if is_baseline(variant):
            routes = [{**r, "src_mac": ROUTER_MAC[r["port"]]} for r in routes_of(family)]
            json_path, p4info = program_files(variant)
            info = ctl(self.bed, "push-baseline", "--grpc", GRPC_ADDR, "--p4info", str(p4info),
                       "--bmv2-json", str(json_path), "--routes", json.dumps(routes),
                       *self.ctl_timeout, timeout=900 if self.wrapper else 90)
        else:
            argv = ["install-aqm", "--config", str(self.configs[variant]), *self.ctl_timeout]
            if profile_of(variant):
                json_path, p4info = program_files(variant)
                argv += ["--p4info", str(p4info), "--bmv2-json", str(json_path)]
            info = ctl(self.bed, *argv, timeout=900 if self.wrapper else 90)
            info["program"] = str(program_files(variant)[0].relative_to(REPO))
        from mmaqm import bmv2_tm
        for port in (1, 2):   # same traffic-manager depth for every variant
            bmv2_tm.set_queue_depth(THRIFT_PORT, port, TM_QUEUE_DEPTH_PKTS, netns=NETNS)
        check = ctl(self.bed, "verify", "--tx-if", "h1", "--rx-if", "h2",
                    "--frame-hex", self.frame_hex[family, variant_dscp(variant)],
                    "--expect", json.dumps({"src_mac": ROUTER_MAC[2], "dst_mac": NEXT_HOP_MAC[2]}))
        info.update(ready_s=round(time.monotonic() - t0, 2), verify=check)
        if switch.poll() is not None:
            raise RuntimeError(f"simple_switch_grpc ({variant}) exited during setup")
        return switch, info

    def measure(self, variant: str, rate: float, tag: str, *, warmup: float,
                duration: float) -> dict:
        """Fresh switch, quiet machine, then rate pps for warmup + duration seconds."""
        switch, info = self.bring_up(variant, tag)
        a = self.args
        try:
            time.sleep(a.settle)
            info["quiet_gate"] = wait_quiet(a.quiet_pct, a.quiet_wait)
            samples = run_udpgen(self.bed, udpgen_argv(rate, warmup + duration, watch_pid=switch.pid,
                                                         flows=a.flows, size=a.size,
                                                         dscp=variant_dscp(variant),
                                                         family=family_of(variant)),
                                 warmup + duration)
            if switch.poll() is not None:
                raise RuntimeError(f"simple_switch_grpc ({variant}) died during the measurement")
            res = window_stats(samples, warmup)
            res.update(variant=variant, offered_rate_pps=rate, setup=info, samples=samples)
            if not is_baseline(variant):
                time.sleep(0.5)   # let the queue drain before reading the counters
                counters = ctl(self.bed, "aqm-counters", "--config", str(self.configs[variant]),
                               "--p4info", str(program_files(variant)[1]))
                res["aqm_counters"] = counters
                res["aqm_drops"] = sum(counters["queue_drops"].values())
                res["ingress_discards"] = sum(counters["ingress_discards"].values())
            return res
        finally:
            self.bed.stop([switch])

    def pilot(self, gen_max_pps: float, baseline: str = BASELINE) -> tuple[float, list[dict]]:
        """Stepped offered rates through a baseline; its highest delivered rate."""
        switch, _ = self.bring_up(baseline, f"pilot-{baseline}")
        steps = []
        try:
            rate = 2000.0
            while rate <= gen_max_pps:
                for attempt in range(self.args.retries + 1):
                    wait_quiet(self.args.quiet_pct, self.args.quiet_wait)
                    samples = run_udpgen(self.bed, udpgen_argv(rate, 4, watch_pid=switch.pid,
                                                                 flows=self.args.flows,
                                                                 size=self.args.size,
                                                                 family=family_of(baseline)), 4)
                    st = window_stats(samples, 1)
                    if (st["other_cpu_pct"] or 0) <= self.args.max_other_cpu:
                        break
                steps.append({"baseline": baseline,
                              "offered_rate_pps": rate, "pps": round(st["pps"], 1),
                              "loss_pct": round(st["loss_pct"], 3),
                              "bmv2_cpu_pct": st["bmv2_cpu_pct"],
                              "other_cpu_pct": st["other_cpu_pct"]})
                log(f"pilot ({baseline}): offered {rate:8.0f} pps -> delivered {st['pps']:8.0f} pps, "
                    f"loss {st['loss_pct']:.2f} %, BMv2 CPU {st['bmv2_cpu_pct']:.0f} %")
                if st["loss_pct"] > 10:
                    break
                rate *= 1.5
        finally:
            self.bed.stop([switch])
        return max(s["pps"] for s in steps), steps


# ------------------------------------------------------------ report
def machine_info() -> dict:
    def out(argv: list[str]) -> str:
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=20)
            return " ".join((r.stdout + r.stderr).split()) or "?"
        except (OSError, subprocess.TimeoutExpired):
            return "?"

    model = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    try:
        from importlib.metadata import version
        finsy = version("finsy")
    except Exception:  # noqa: BLE001 - informational only
        finsy = "?"
    return {
        "nproc": out(["nproc"]),
        "cpu_model": model,
        "kernel": platform.release(),
        "bmv2": out(["simple_switch_grpc", "--version"]),
        "p4c": out(["p4c-bm2-ss", "--version"]),
        "python": platform.python_version(),
        "finsy": finsy,
        "simple_switch_grpc": shutil.which("simple_switch_grpc"),
    }


def program_cost(variant: str) -> dict:
    """What BMv2 interprets for the variant, from the compiled JSON: tables, PHV fields,
    and the primitives of the actions a forwarded packet runs that the other variants
    do not (the router's route action; the port_policy action and the algorithm's
    admission action)."""
    data = json.loads(program_files(variant)[0].read_text())
    primitives = bmv2_pipeline_stats.action_primitives(data)
    if is_baseline(variant):
        own = [name for name in primitives if name.endswith((".route", ".route6"))]
    else:
        alias = POLICY_ACTION_OF[policy_algorithm(variant)]
        own = [alias] + [name for name in primitives if name.endswith(f".{alias}_admission")]
    return {
        "bmv2_tables": sum(s["tables"] for s in bmv2_pipeline_stats.pipeline_stats(data).values()),
        "phv_fields": bmv2_pipeline_stats.phv_fields(data),
        "aqm_actions": own,
        "aqm_action_primitives": sum(primitives[name] for name in own),
    }


def _median(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _pair_ratios(ms: list[dict], other: list[dict]) -> tuple[float, float, float]:
    """(median pps of ms / median pps of other, min and max over the rounds both have of
    ms's pps / other's pps in the same round)."""
    by_round = {m["round"]: m["pps"] for m in other}
    per_round = [m["pps"] / by_round[m["round"]] for m in ms
                 if by_round.get(m["round"])]
    med = statistics.median(m["pps"] for m in other)
    return (statistics.median(m["pps"] for m in ms) / med if med else None,
            min(per_round) if per_round else None, max(per_round) if per_round else None)


def summarize(measurements: list[dict], variants: list[str],
              cost=None) -> list[dict]:
    """One row per variant, in table_order: medians over the rounds, the ratio to the
    minimal router of the variant's own family (its median and per-round range), and for
    an IPv6 variant whose IPv4 variant was measured too, IPv6 / IPv4 (v6_over_v4, the
    medians' ratio; its per-round range). cost: program_cost (a stand-in in tests)."""
    cost = cost or program_cost
    by_variant = {v: [m for m in measurements if m["variant"] == v] for v in variants}
    rows = []
    for v in table_order(variants):
        ms = by_variant[v]
        pps = [m["pps"] for m in ms]
        med = statistics.median(pps)
        ratio, ratio_min, ratio_max = _pair_ratios(ms, by_variant[baseline_of(v)])
        cpu = [m["bmv2_cpu_pct"] for m in ms if m["bmv2_cpu_pct"] is not None]
        pair = {}
        if family_of(v) == "ipv6" and by_variant.get(ipv4_variant(v)):
            r, lo, hi = _pair_ratios(ms, by_variant[ipv4_variant(v)])
            pair = {"ipv4_variant": ipv4_variant(v), "v6_over_v4": r,
                    "v6_over_v4_per_round_min": lo, "v6_over_v4_per_round_max": hi}
        rows.append({
            "variant": v,
            "family": family_of(v),
            "baseline": baseline_of(v),
            "n": len(ms),
            "pps_median": med,
            "us_per_pkt": 1e6 / med if med else None,
            **cost(v),
            "pps_min": min(pps),
            "pps_max": max(pps),
            "spread_pct": 100.0 * (max(pps) - min(pps)) / med if med else None,
            "ratio": ratio,
            "ratio_per_round_min": ratio_min,
            "ratio_per_round_max": ratio_max,
            **pair,
            "loss_pct_median": statistics.median(m["loss_pct"] for m in ms),
            "bmv2_cpu_pct_median": statistics.median(cpu) if cpu else None,
            "bmv2_busiest_thread_pct_median": _median(m["bmv2_busiest_thread_pct"] for m in ms),
            "gen_cpu_pct_median": statistics.median(m["gen_cpu_pct"] for m in ms),
            "other_cpu_pct_median": _median(m["other_cpu_pct"] for m in ms),
            "machine_busy_pct_median": statistics.median(m["machine_busy_pct"] for m in ms),
            "offered_pps_median": statistics.median(m["offered_pps"] for m in ms),
            "aqm_drops": None if is_baseline(v) else sum(m["aqm_drops"] for m in ms),
            "ingress_discards": None if is_baseline(v) else sum(m["ingress_discards"] for m in ms),
        })
    return rows


def ratio_header(rows: list[dict]) -> str:
    """'ratio vs <the baseline>', or with both families, against each one's own."""
    baselines = sorted({baseline_of(r["variant"]) for r in rows})
    return "ratio vs " + (baselines[0] if len(baselines) == 1 else "minimal_ipv4/6")


def _format(header: list[str], lines: list[list[str]]) -> str:
    widths = [max(len(x) for x in col) for col in zip(header, *lines)]
    fmt = lambda row: "  ".join(x.ljust(w) if i == 0 else x.rjust(w)  # noqa: E731
                                for i, (x, w) in enumerate(zip(row, widths)))
    return "\n".join([fmt(header), fmt(["-" * w for w in widths]), *map(fmt, lines)])


def format_table(rows: list[dict]) -> str:
    header = ["variant", "pps median", "us/pkt", "min-max", "spread", ratio_header(rows),
              "per-round ratio", "offered", "loss", "BMv2 CPU", "busiest thread", "gen CPU",
              "other CPU", "AQM drops", "tables", "fields", "primitives"]
    pct = lambda v: "?" if v is None else f"{v:.0f} %"  # noqa: E731
    lines = []
    for r in rows:
        lines.append([
            r["variant"],
            f"{r['pps_median']:.0f}",
            "?" if r["us_per_pkt"] is None else f"{r['us_per_pkt']:.1f}",
            f"{r['pps_min']:.0f}-{r['pps_max']:.0f}",
            f"{r['spread_pct']:.1f} %",
            f"{r['ratio']:.3f}",
            f"{r['ratio_per_round_min']:.3f}-{r['ratio_per_round_max']:.3f}",
            f"{r['offered_pps_median']:.0f}",
            f"{r['loss_pct_median']:.1f} %",
            pct(r["bmv2_cpu_pct_median"]),
            pct(r["bmv2_busiest_thread_pct_median"]),
            pct(r["gen_cpu_pct_median"]),
            pct(r["other_cpu_pct_median"]),
            "-" if r["aqm_drops"] is None else str(r["aqm_drops"]),
            str(r["bmv2_tables"]),
            str(r["phv_fields"]),
            str(r["aqm_action_primitives"]),
        ])
    return _format(header, lines)


def format_side_by_side(rows: list[dict]) -> str:
    """Each algorithm's ratio on the all-in-one program and on its profile, with the
    two programs' tables and PHV fields (only algorithms measured on both)."""
    by = {r["variant"]: r for r in rows}
    header = ["algorithm", "all-in-one ratio", "profile ratio", "profile / all-in-one",
              "all-in-one tables/fields", "profile tables/fields"]
    lines = []
    for v, r in by.items():
        p = by.get(PROFILE_TAG + v)
        if is_baseline(v) or v.startswith(PROFILE_TAG) or p is None:
            continue
        lines.append([v, f"{r['ratio']:.3f}", f"{p['ratio']:.3f}",
                      f"{p['ratio'] / r['ratio']:.2f}" if r["ratio"] else "?",
                      f"{r['bmv2_tables']}/{r['phv_fields']}",
                      f"{p['bmv2_tables']}/{p['phv_fields']}"])
    if not lines:
        return ""
    return _format(header, lines)


def format_families(rows: list[dict]) -> str:
    """Each variant measured in both families: its IPv4 and IPv6 rates, IPv6 / IPv4 (the
    medians' ratio and its per-round range), and each family's ratio to its own minimal
    router. The first row is the two minimal routers themselves."""
    by = {r["variant"]: r for r in rows}
    header = ["variant (IPv4 name)", "IPv4 pps", "IPv6 pps", "IPv6 / IPv4",
              "per-round IPv6 / IPv4", "IPv4 ratio", "IPv6 ratio"]
    num = lambda v, f: "?" if v is None else format(v, f)  # noqa: E731
    lines = []
    for v6, r6 in by.items():
        r4 = by.get(r6.get("ipv4_variant", ""))
        if family_of(v6) != "ipv6" or r4 is None:
            continue
        lines.append([r4["variant"], f"{r4['pps_median']:.0f}", f"{r6['pps_median']:.0f}",
                      num(r6["v6_over_v4"], ".3f"),
                      f"{num(r6['v6_over_v4_per_round_min'], '.3f')}-"
                      f"{num(r6['v6_over_v4_per_round_max'], '.3f')}",
                      f"{r4['ratio']:.3f}", f"{r6['ratio']:.3f}"])
    return _format(header, lines) if lines else ""


# ------------------------------------------------------------ main
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=3, help="measurements per variant [3]")
    p.add_argument("--duration", type=float, default=10.0, help="steady window, s [10]")
    p.add_argument("--warmup", type=float, default=3.0, help="traffic before the window, s [3]")
    p.add_argument("--settle", type=float, default=1.0,
                   help="idle time after install, before traffic, s [1]")
    p.add_argument("--algorithms", default=",".join(ALGORITHMS),
                   help=f"comma-separated subset of {','.join(ALGORITHMS)}")
    p.add_argument("--no-profiles", dest="profiles", action="store_false",
                   help="measure the all-in-one program only, not each algorithm's profile "
                        "(prof-<ALGORITHM> variants)")
    p.add_argument("--family", choices=("ipv4", "ipv6", "both"), default="both",
                   help="IPv4/UDP variants (against minimal_ipv4), IPv6/UDP ones (<NAME>-v6, "
                        "against minimal_ipv6), or both [both]")
    p.add_argument("--offered-pps", type=float,
                   help="rate offered to every variant; default: --offer-factor x the "
                        "baseline's best rate in a stepped pilot")
    p.add_argument("--offer-factor", type=float, default=1.5,
                   help="offered rate / the pilot's best baseline rate [1.5]")
    p.add_argument("--size", type=int, default=1000,
                   help="IP packet size, bytes: IPv4's total length, IPv6's 40-byte header + "
                        "payload (the same frame in both families) [1000]")
    p.add_argument("--flows", type=int, default=1, help="UDP flows (source ports) [1]")
    p.add_argument("--quiet-pct", type=float, default=25.0,
                   help="before each measurement wait until the machine's busy CPU is at most "
                        "this (%% of one core; the idle switch included) [25]")
    p.add_argument("--quiet-wait", type=float, default=120.0,
                   help="longest wait for a quiet machine, s [120]")
    p.add_argument("--max-other-cpu", type=float, default=25.0,
                   help="a measurement during which processes other than BMv2 and the "
                        "generator used more CPU than this (%% of one core) is repeated [25]")
    p.add_argument("--retries", type=int, default=2,
                   help="repeats of a disturbed measurement; all attempts are kept in the JSON [2]")
    p.add_argument("--out-dir", type=Path, default=REPO / "results" / "bench")
    args = p.parse_args(argv)
    algos = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    unknown = [a for a in algos if a not in ALGORITHMS]
    if unknown or not algos:
        p.error(f"--algorithms: unknown {unknown}; choose from {', '.join(ALGORITHMS)}")
    if args.reps < 1 or args.duration < 2 or args.warmup < 1 or args.retries < 0:
        p.error("--reps >= 1, --duration >= 2, --warmup >= 1, --retries >= 0")
    if args.offer_factor <= 1:
        p.error("--offer-factor must be > 1 (the offered rate must exceed capacity)")
    args.families = FAMILIES if args.family == "both" else (args.family,)
    min_size = IPV6_HEADER_BYTES + 8 if "ipv6" in args.families else 28
    if not min_size <= args.size <= 9000:
        p.error(f"--size: {min_size}..9000 bytes (an IP packet with a UDP header)")
    args.algorithm_list = algos
    args.variant_list = variants_for(algos, args.families, args.profiles)
    return args


def main() -> int:
    args = parse_args()
    if os.geteuid() != 0:
        print("run_bench: needs root (network namespaces, veths, raw sockets); "
              "run 'sudo make bench'", file=sys.stderr)
        return 2
    why = lab.missing_prereqs(("simple_switch_grpc", "simple_switch_CLI", "p4c-bm2-ss", "gcc"))
    if why:
        print(f"run_bench: {why} (see docs/install.md)", file=sys.stderr)
        return 2
    try:
        import finsy  # noqa: F401  (only checked here; used by bench_ctl.py)
        import mmaqm.config  # noqa: F401
    except ImportError as err:
        print(f"run_bench: {err}; run it with the project venv ('make bench')", file=sys.stderr)
        return 2
    for path in (MAIN_JSON, MAIN_P4INFO):
        if not path.exists():
            print(f"run_bench: {path} not found; run 'make build'", file=sys.stderr)
            return 2

    lab.catch_stop_signals(interrupt=True)   # SIGINT too: a background shell may have ignored it
    started = dt.datetime.now()
    try:
        build_tools()
        variants = args.variant_list
        build_profiles(sorted({policy_algorithm(v) for v in variants if profile_of(v)}))
        configs = write_aqm_configs([v for v in variants if not is_baseline(v)])
        with lab.Lab(PREFIX) as bed:
            for ns in bed.leftovers_removed:
                log(f"removed leftover namespace {ns}")
            setup_namespace(bed)
            bench = Bench(args, bed, configs)
            machine = machine_info()
            log(f"machine: {machine['nproc']} CPUs, {machine['cpu_model']}, "
                f"kernel {machine['kernel']}")
            log(f"BMv2: {machine['bmv2']}; p4c: {machine['p4c']}")

            wait_quiet(args.quiet_pct, args.quiet_wait)
            gen = generator_alone(bed, 3.0, args.size)
            log(f"generator alone (unpaced, no switch): {gen['pps']:.0f} pps at "
                f"{gen['cpu_pct']:.0f} % CPU")

            pilot_steps: list[dict] = []
            if args.offered_pps:
                rate = args.offered_pps
            else:   # each family's baseline; the faster one sets the rate offered to all
                caps = {}
                for family in args.families:
                    caps[family], steps = bench.pilot(gen["pps"], BASELINES[family])
                    pilot_steps += steps
                cap = max(caps.values())
                rate = round(args.offer_factor * cap, -2)
                log(f"pilot: " + ", ".join(f"{BASELINES[f]} delivered at most {c:.0f} pps"
                                           for f, c in caps.items())
                    + f"; offering {rate:.0f} pps")
            if rate > 0.9 * gen["pps"]:
                log(f"warning: offered rate near what the generator alone can do "
                    f"({gen['pps']:.0f} pps)")

            measurements = []
            for rnd in range(args.reps):
                for variant in round_order(variants, rnd, len(args.families)):
                    tag = f"{variant}-r{rnd}"
                    discarded = []
                    for attempt in range(args.retries + 1):
                        m = bench.measure(variant, rate, f"{tag}-a{attempt}", warmup=args.warmup,
                                          duration=args.duration)
                        other = m["other_cpu_pct"]
                        if other is None or other <= args.max_other_cpu or attempt == args.retries:
                            break
                        log(f"{variant}: other processes used {other:.0f} % CPU during the window "
                            f"({m['pps']:.0f} pps); repeating")
                        discarded.append(m)
                    m["round"] = rnd
                    m["disturbed"] = m["other_cpu_pct"] is not None and \
                        m["other_cpu_pct"] > args.max_other_cpu
                    m["discarded_attempts"] = discarded
                    measurements.append(m)
                    extra = "" if is_baseline(variant) else \
                        f", AQM drops {m['aqm_drops']}, discards {m['ingress_discards']}"
                    log(f"round {rnd + 1}/{args.reps} {variant:22s} {m['pps']:8.0f} pps "
                        f"(offered {m['offered_pps']:.0f}, "
                        f"loss {m['loss_pct']:.1f} %), BMv2 CPU {m['bmv2_cpu_pct']:.0f} % "
                        f"(busiest thread {m['bmv2_busiest_thread_pct']:.0f} %), "
                        f"gen {m['gen_cpu_pct']:.0f} %, other {m['other_cpu_pct']:.0f} %, "
                        f"machine {m['machine_busy_pct']:.0f} %{extra}")
    except lab.StopRequested as stop:
        print("run_bench: interrupted; cleaned up", file=sys.stderr)
        return stop.exit_status
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as err:   # LabError too
        print(f"run_bench: {err}", file=sys.stderr)
        return 1

    rows = summarize(measurements, variants)
    families = format_families(rows)
    stamp = started.strftime("%Y%m%d-%H%M%S")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out_path = args.out_dir / f"bench-{stamp}.json"
    unsaturated = [r["variant"] for r in rows if r["loss_pct_median"] < 2.0]
    disturbed = sum(m["disturbed"] for m in measurements)
    retried = sum(len(m["discarded_attempts"]) for m in measurements)
    aqm_dropped = [r["variant"] for r in rows if r["aqm_drops"]]
    discarded = [r["variant"] for r in rows if r["ingress_discards"]]
    result = {
        "started": started.isoformat(timespec="seconds"),
        "machine": machine,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "packet": {"ipv4_bytes": args.size, "frame_bytes": args.size + 14,
                   "udp_payload_bytes": args.size - 28, "flows": args.flows, "dscp": 0,
                   "families": list(args.families),
                   "ipv6": {"ipv6_bytes": args.size, "frame_bytes": args.size + 14,
                            "udp_payload_bytes": args.size - IPV6_HEADER_BYTES - 8,
                            "src": SRC_IP6, "dst": DST_IP6, "hop_limit": 64, "flow_label": 0}},
        "aqm_settings": {"queue_limit_pkts": QUEUE_LIMIT_PKTS, "min_th_pkts": MIN_TH_PKTS,
                         "max_th_pkts": MAX_TH_PKTS, "max_p": 0.1,
                         "class_th_pkts": CLASS_TH_PKTS},
        "tm_queue_depth_pkts": TM_QUEUE_DEPTH_PKTS,
        "switch_argv": switch_spec("<tag>").argv(),
        "generator_alone": gen,
        "pilot": pilot_steps,
        "offered_rate_pps": rate,
        "summary": rows,
        "measurements": measurements,
    }
    out_path.write_text(json.dumps(result, indent=1))
    latest = args.out_dir / "latest.json"     # what `make run` reads (the capacity check)
    latest.unlink(missing_ok=True)
    latest.symlink_to(out_path.name)

    kinds = " and ".join({"ipv4": "IPv4/UDP", "ipv6": "IPv6/UDP"}[f] for f in args.families)
    print(f"mmaqm bench {result['started']}: BMv2 packet rate, {args.size}-byte {kinds} packets "
          f"({args.size + 14}-byte frames), {args.flows} flow(s)")
    print(f"machine: nproc {machine['nproc']}, {machine['cpu_model']}, kernel {machine['kernel']}")
    print(f"BMv2: {machine['bmv2']} ({machine['simple_switch_grpc']}); p4c: {machine['p4c']}")
    print(f"generator alone: {gen['pps']:.0f} pps unpaced at {gen['cpu_pct']:.0f} % of one core")
    for baseline in dict.fromkeys(s["baseline"] for s in pilot_steps):
        steps = [s for s in pilot_steps if s["baseline"] == baseline]
        clean = [s["offered_rate_pps"] for s in steps if s["loss_pct"] < 0.1]
        print(f"pilot ({baseline}, offered -> delivered pps): " + ", ".join(
            f"{s['offered_rate_pps']:.0f}->{s['pps']:.0f}" for s in steps)
            + (f"; highest step with < 0.1 % loss: {max(clean):.0f} pps" if clean else ""))
    print(f"each measurement: fresh switch, {rate:.0f} pps offered (every variant), "
          f"{args.warmup:g} s warm-up + {args.duration:g} s window; {args.reps} rounds, "
          f"round-robin")
    print(f"AQM settings: queue_limit {QUEUE_LIMIT_PKTS}, RED min/max_th {MIN_TH_PKTS}/"
          f"{MAX_TH_PKTS} pkts, CBT class thresholds {CLASS_TH_PKTS}: the AQM only drops when "
          f"BMv2's egress thread falls behind its ingress thread and the queue reaches "
          f"them ('AQM drops' column, from the program's counters)")
    print()
    print(format_table(rows))
    print()
    side = format_side_by_side(rows)
    if side:
        print("each algorithm on the all-in-one program (build/main.json) and on its profile "
              "(build/<name>/main.json), ratio vs " + " / ".join(
                  BASELINES[f] for f in args.families) + ":")
        print(side)
        print()
    if families:
        print("each variant with IPv4/UDP and with IPv6/UDP (<name>-v6; minimal_ipv6 for the "
              "baseline), the same program and config:")
        print(families)
        print()
    print("pps = packets/s delivered to the receiver; ratio = variant median / "
          + " or ".join(f"{BASELINES[f]} median" for f in args.families)
          + ("" if len(args.families) == 1 else " (each family's own baseline)")
          + "; per-round ratio = min-max of variant/baseline within a round;")
    print("offered = median offered pps in the window; loss = offered packets not delivered (the "
          "switch could not keep up);")
    print("us/pkt = 1e6 / pps median; tables, fields = BMv2 tables and PHV fields of the program; "
          "primitives = in the actions only this variant runs per packet (mmaqm_exp/pipeline_stats.py);")
    print("CPU = % of one core (2 cores = 200 %): BMv2 all threads, its busiest thread, the "
          "generator, and everything else on the machine.")
    if unsaturated:
        print(f"WARNING: {', '.join(unsaturated)} lost < 2 %: the offered load may not have "
              "exceeded capacity; rerun with a higher --offer-factor")
    if retried or disturbed:
        print(f"note: {retried} measurement(s) repeated because other processes used more than "
              f"{args.max_other_cpu:g} % CPU; {disturbed} kept although still disturbed")
    if aqm_dropped:
        print(f"note: the AQM dropped packets in {', '.join(aqm_dropped)} (egress behind ingress; "
              f"a dropped packet cost ingress work but is not delivered); see the JSON")
    if discarded:
        print(f"WARNING: the program discarded packets at ingress in {', '.join(discarded)} "
              f"(ingress_discards by reason in the JSON): those rows did not measure forwarding")
    print(f"raw measurements: {out_path.relative_to(REPO) if out_path.is_relative_to(REPO) else out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
