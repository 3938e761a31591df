"""mmaqm-exp: one scenario on one topology under a list of AQM algorithms.

    mmaqm-exp --topology topologies/topos/dcbt-dumbbell.json \\
              --scenario topologies/scenarios/dcbt-fig7.yaml \\
              --policies topologies/policies/dcbt-fig7.yaml \\
              --algorithms DROP_TAIL,RED,CBT_RED_ALL,DCBT --out results/dcbt-fig7
    mmaqm-exp --experiment cbt-fig4     # a named experiment (topologies/experiments.yaml);
                                        # explicit options override its entries

The topology comes up once (namespaces, veths, one simple_switch_grpc per
switch, receive-side delay elements) and is always torn down, also on errors
and Ctrl-C. For each algorithm, in the same network and with the same
traffic:
  1. the controller config is generated from the topology with that
     algorithm's policy on the bottleneck port, validated by the controller's
     own checks, and written to <out>/<algo>/controller.yaml;
  2. `mmaqm-ctl run --stats-out counters.jsonl` starts in the switches'
     namespace: it pushes the pipeline, installs every table with a fresh
     policy epoch (averages start from zero), runs the D-CBT loop and logs
     cumulative per-class counters every 100 ms;
  3. the bottleneck's BMv2 queue rate and depth are set;
  4. the scenario's traffic runs (mmaqm_exp.traffic) while the CPU of every
     switch, delay element and the controller is sampled;
  5. after one more counter sample (the network has drained) the controller
     stops; raw files stay; summary.json and flows.csv are derived from them
     (mmaqm_exp.analysis), with the run's validity checks: UDP packets sent
     against the first switch's arrivals, the delay elements' kernel drops
     (read before and after the traffic), the switches' keep-up.
Then the comparison table and plots go to <out> (mmaqm_exp.report); for a scenario
with ipv6 flows also the per-family table, dual_stack.txt (mmaqm_exp.dual_stack_report).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import yaml

from mmaqm import algorithms as mmaqm_algorithms
from mmaqm.algorithms import ALGORITHMS

from . import analysis, dual_stack_report, flowlag, mmapp, registers, report
from .cpu import CpuSampler
from .experiments import RegistryError, load_registry
from .lab import LabError, StopRequested, catch_stop_signals, stop_processes
from .network import DEFAULT_PREFIX, Network, missing_prereqs
from .scenario import load_scenario
from .topology import BFD_CPU_PORT as T_BFD_CPU_PORT
from .topology import controller_config, load_topology, tm_queue_depth_pkts, uses_bfd
from .traffic import run_scenario

REPO = Path(__file__).resolve().parents[2]
DEFAULT_BMV2_JSON = REPO / "build" / "main.json"
DEFAULT_P4INFO = REPO / "build" / "main.p4info.txtpb"
DEFAULT_TOPOLOGY = REPO / "topologies" / "topos" / "dcbt-dumbbell.json"
DEFAULT_SCENARIO = REPO / "topologies" / "scenarios" / "dcbt-fig7.yaml"
DEFAULT_POLICIES = REPO / "topologies" / "policies" / "dcbt-fig7.yaml"
# Every single-switch algorithm the controller implements. UPTA needs the multi-router
# chain and the controller's fair-share loop: not a D-CBT dumbbell algorithm.
DEFAULT_ALGORITHMS = tuple(a for a in ALGORITHMS if a != "UPTA")
STATS_INTERVAL_MS = 100
CONTROLLER_READY_TIMEOUT_S = 60.0
CONTROLLER_STOP_TIMEOUT_S = 10.0
SETTLE_S = 1.0          # between algorithms: the queue drains, old flows are forgotten
FINAL_SAMPLE_TIMEOUT_S = 3.0   # after the traffic: wait this long at most for a counter sample


class ExperimentError(RuntimeError):
    pass


def git_state(repo: Path = REPO) -> Optional[dict[str, Any]]:
    """{"commit", "uncommitted_files"} of the checkout the run used (experiment.json, for
    tools/archive_run.py's COMMAND.txt), or None outside a git checkout."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              timeout=10, check=True).stdout
    try:
        return {"commit": git("rev-parse", "HEAD").strip(),
                "uncommitted_files": len(git("status", "--porcelain").splitlines())}
    except (OSError, subprocess.SubprocessError):
        return None


def load_policies(path: Path) -> dict[str, dict[str, Any]]:
    """{algorithm: policy dict} from a policies YAML file (see topologies/policies/)."""
    data = yaml.safe_load(Path(path).read_text())
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ExperimentError(f"{path}: must map algorithm names to policy mappings")
    return {str(k): dict(v) for k, v in data.items()}


def run_program(algorithms: Sequence[str], policies: dict[str, dict[str, Any]],
                all_in_one: bool = False) -> tuple[Path, Path, str]:
    """(BMv2 JSON, P4Info, description) of the program a run loads: the BMv2 profile
    of the one algorithm family the run's policies use (every profile also carries
    DROP_TAIL, which the non-bottleneck ports run; docs/profiles.md), else, or with
    all_in_one, the all-in-one program. A missing profile is built first."""
    families = {str(policies[a].get("algorithm", a)) for a in algorithms} - {"DROP_TAIL"}
    if all_in_one or len(families) > 1:
        why = "forced" if all_in_one else f"{len(families)} algorithm families"
        return DEFAULT_BMV2_JSON, DEFAULT_P4INFO, f"the all-in-one program ({why})"
    profile = families.pop() if families else "DROP_TAIL"
    folder = REPO / "build" / profile.lower()
    bmv2_json, p4info = folder / "main.json", folder / "main.p4info.txtpb"
    r = subprocess.run([sys.executable, str(REPO / "tools" / "build_profiles.py"),
                        "--profile", profile], capture_output=True, text=True)
    if r.returncode != 0:
        raise ExperimentError(f"building the {profile} profile failed:\n{r.stdout}{r.stderr}")
    return bmv2_json, p4info, f"the {profile} profile"


def controller_yaml(topo, policy: dict[str, Any], ipv6: bool = False) -> str:
    """The controller config for this policy, validated like any user config; ipv6: with
    the hosts' IPv6 routes (a scenario with ipv6 flows)."""
    from mmaqm.config import ConfigError, parse_config

    cfg = controller_config(topo, policy, ipv6=ipv6)
    try:
        parse_config(cfg)
    except ConfigError as err:
        raise ExperimentError("invalid policy:\n  " + "\n  ".join(err.errors)) from err
    return yaml.safe_dump(cfg, sort_keys=False)


def _wait_controller(ctl: subprocess.Popen, counters: Path, log: Path,
                     switches: Sequence[str]) -> None:
    """Ready = the controller has installed every switch and logged a sample of each
    (the keep-up and delivery checks need one before the traffic; the switches are
    installed one after another, so the first sample in the file is not enough)."""
    deadline = time.monotonic() + CONTROLLER_READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if ctl.poll() is not None:
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise ExperimentError(f"mmaqm-ctl exited {ctl.returncode}:\n{tail}")
        if counters.exists() and counters.stat().st_size > 0:
            seen = set()
            for line in counters.read_text(errors="replace").splitlines():
                try:
                    seen.add(json.loads(line).get("switch"))
                except ValueError:
                    continue
            if seen >= set(switches):
                return
        time.sleep(0.1)
    raise ExperimentError(f"mmaqm-ctl not ready after {CONTROLLER_READY_TIMEOUT_S} s; see {log}")


def _progress_printer(algorithm: str, stream) -> Callable[..., None]:
    def show(elapsed_s: float, phase: Optional[str], rates_kbps: dict[str, float], *_: Any) -> None:
        rates = "  ".join(f"{cls} {kbps / 1000:5.2f} Mb/s" for cls, kbps in sorted(rates_kbps.items()))
        print(f"  [{algorithm:<16}] t={elapsed_s:5.1f} s  phase {phase or '-':<10} {rates}",
              file=stream, flush=True)
    return show


def _wait_sample_after(ctl: subprocess.Popen, counters: Path, t_ns: int,
                       switches: Sequence[str]) -> None:
    """Until the controller has logged a sample stamped at or after t_ns for every switch
    (the final sample: the UDP and keep-up checks count up to it), at most
    FINAL_SAMPLE_TIMEOUT_S; a missing one is reported by those checks."""
    deadline = time.monotonic() + FINAL_SAMPLE_TIMEOUT_S
    while time.monotonic() < deadline and ctl.poll() is None:
        with open(counters, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 256 * 1024))
            tail = f.read().decode(errors="replace").splitlines()[1:]
        seen = set()
        for line in tail:
            try:
                s = json.loads(line)
            except ValueError:
                continue
            if s.get("t_ns", 0) >= t_ns:
                seen.add(s.get("switch"))
        if seen >= set(switches):
            return
        time.sleep(STATS_INTERVAL_MS / 1000 / 2)


def _delivery_checks(summary: dict[str, Any], result, topo, scenario, counters: Path,
                     window_ns: tuple[int, int], delay: tuple[dict, dict],
                     snmp: tuple[dict, dict], bfd: bool = False) -> list[str]:
    """summary["udp_arrivals"] (non-TCP packets sent against the first switch's arrivals)
    and summary["delay_elements"] (kernel queue drops of each delay element); their
    warnings. snmp: the hosts' Udp/Icmp counters before and after the traffic. bfd: the
    policy runs C-UPTA's BFD, whose probes and reports cross every router-facing port."""
    hosts = analysis.counter_deltas(*snmp)
    sndbuf = {h: d.get("Udp.SndbufErrors", 0) for h, d in hosts.items()}
    icmp = {h: d.get("Icmp.OutMsgs", 0) for h, d in hosts.items()}
    streams = (analysis.udp_streams(result, topo.switch_hops, scenario.tagged_dscp,
                                    mmapp.DEFAULT_FB_DSCP)
               + analysis.icmp_streams(icmp, scenario, list(topo.hosts), topo.switch_hops))
    samples = analysis.read_counters(counters)
    # a program that counts the BFD messages (bfd_arrivals) has them left out of the
    # UNTAGGED arrivals; one that does not leaves that class unchecked where they cross
    bfd_ports = sorted((sw.name, p.number) for sw in topo.switches.values()
                       for p in sw.ports.values() if p.peer in topo.switches) \
        if bfd and not analysis.samples_count_bfd(samples) else []
    check = analysis.udp_arrival_check(analysis.udp_expected_arrivals(streams, bfd_ports),
                                       samples, *window_ns)
    check["bfd_ports_untagged_not_checked"] = [list(p) for p in bfd_ports]
    summary["udp_arrivals"] = {**check, "host_sndbuf_errors": sndbuf, "host_icmp_out": icmp}
    summary["delay_elements"] = analysis.counter_deltas(*delay)
    return (analysis.udp_arrival_warnings(check, sndbuf)
            + analysis.delay_drop_warnings(summary["delay_elements"]))


def run_algorithm(net: Network, topo, scenario, algorithm: str, policy: dict[str, Any],
                  out: Path, *, p4info: Path, bmv2_json: Path, stream=sys.stdout,
                  register_samples: bool = True) -> dict[str, Any]:
    """One algorithm on a running network; returns its summary (also written to out).
    register_samples: sample the bottleneck's averages over Thrift (mmaqm_exp.registers)."""
    out.mkdir(parents=True, exist_ok=True)
    cfg_path = out / "controller.yaml"
    cfg_path.write_text(controller_yaml(topo, policy, ipv6="ipv6" in scenario.families()))
    counters = out / "counters.jsonl"
    counters.unlink(missing_ok=True)
    share_events = out / "share_events.jsonl"    # every D-CBT share push: the flow-count lag
    share_events.unlink(missing_ok=True)
    log = out / "controller.log"
    with open(log, "w") as log_file:
        ctl = net.popen_switch_ns(
            [sys.executable, "-m", "mmaqm.cli", "--config", str(cfg_path), "--p4info", str(p4info),
             "--bmv2-json", str(bmv2_json), "run", "--stats-out", str(counters),
             "--stats-interval-ms", str(STATS_INTERVAL_MS), "--events-out", str(share_events)],
            stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    sampler = regs = None
    try:
        _wait_controller(ctl, counters, log, list(topo.switches))
        # the BMv2 queue above the policy's P4 limit (the topology's unless the policy says)
        bn = net.configure_bottleneck(tm_queue_depth_pkts(
            policy.get("queue_limit_pkts", topo.bottleneck.queue_limit_pkts)))
        pids = {f"bmv2 {name}": pid for name, pid in net.switch_pids().items()}
        pids.update({f"delay {name}": pid for name, pid in net.delay_pids().items()})
        pids["controller"] = ctl.pid
        if register_samples:
            regs = registers.start_sampler(net, bn.switch, bn.port)
            pids["registers"] = regs.pid
        sampler = CpuSampler(pids).start()
        rate_kbps = bn.rate_pps * topo.bottleneck.packet_bytes * 8 / 1000
        delay_before, snmp_before = net.delay_queue_counters(), net.snmp_counters()
        rx_before, t_before_ns, t0 = net.switch_rx_packets(), time.time_ns(), time.monotonic()
        result = run_scenario(net, scenario, out / "traffic",
                              progress=_progress_printer(algorithm, stream),
                              bottleneck_rate_kbps=rate_kbps)
        rx_after, traffic_s = net.switch_rx_packets(), time.monotonic() - t0
        drained_ns = time.time_ns()     # run_scenario waited traffic.DRAIN_S after the senders
        delay_after, snmp_after = net.delay_queue_counters(), net.snmp_counters()
        _wait_sample_after(ctl, counters, drained_ns, list(topo.switches))
    finally:
        if regs is not None:
            regs.stop()
        if sampler is not None:
            sampler.stop()
            sampler.write_csv(out / "cpu.csv")
        stop_processes([ctl], CONTROLLER_STOP_TIMEOUT_S)
    if regs is not None:
        registers.finish_sampler(regs, out, result.t0_ns, stream)
    summary = analysis.analyze(result, counters_jsonl=counters, bottleneck=(bn.switch, bn.port),
                               bottleneck_rate_kbps=rate_kbps)
    summary["switch_keepup"] = analysis.switch_keepup(
        analysis.read_counters(counters), rx_before, rx_after, t_before_ns, traffic_s)
    problem = analysis.keepup_problem(summary["switch_keepup"])
    if problem:
        print(f"mmaqm-exp: WARNING, {algorithm}: PRECONDITION MISSED, the results measure BMv2, "
              f"not the AQM: {problem}. Lower the scenario's rate or use a faster BMv2 build "
              f"(docs/install.md).", file=stream, flush=True)
    else:
        kept = ", ".join(f"{sw} {k['processed_pps']:.0f} pps (busiest second "
                         f"{k['peak_processed_pps'] or 0:.0f})"
                         for sw, k in summary["switch_keepup"].items())
        print(f"  [{algorithm:<16}] every switch kept up (no packet lost before the AQM): {kept}",
              file=stream, flush=True)
    summary["algorithm"] = algorithm
    summary["policy"] = policy
    summary["red_queue_limit"] = analysis.red_queue_limit_block(policy, summary)  # cbt §4.2
    summary["registers"] = (registers.summary_block(out / registers.REGISTERS_FILE, summary, counters)
                            if regs is not None else None)
    # the run's policy names the controller's algorithm (a run name such as C_UPTA is
    # the experiment's, not the controller's)
    plugin = mmaqm_algorithms.REGISTRY.get(str(policy.get("algorithm", algorithm)))
    if plugin is not None and plugin.follows_flow_shares:
        lags = flowlag.class_lags(flowlag.read_events(share_events), summary["flows"],
                                  summary["t0_ns"], bn.switch, bn.port)
        summary["active_flow_lag"] = {"changes": lags, **flowlag.lag_summary(lags)}
    summary["cpu"] = sampler.summary()
    validity = analysis.validity_warnings(summary, os.cpu_count()) + _delivery_checks(
        summary, result, topo, scenario, counters, (t_before_ns, drained_ns),
        (delay_before, delay_after), (snmp_before, snmp_after), bfd=uses_bfd(policy))
    summary["warnings"] = list(summary.get("warnings", [])) + validity
    for w in validity:
        print(f"mmaqm-exp: WARNING, {algorithm}: {w}", file=stream, flush=True)
    summary["bottleneck"] = {"switch": bn.switch, "port": bn.port, "rate_pps": bn.rate_pps,
                             "rate_kbps": rate_kbps, "queue_depth_pkts": bn.queue_depth_pkts}
    analysis.write_outputs(summary, out)
    return summary


# What r1 processes per second, per bottleneck packet/s: data up to the link rate plus what
# the AQM drops, plus ACKs (the D-CBT experiment: 5 400-6 600 pps in its busiest second for
# a 3 125 pps bottleneck). A measured capacity below CAPACITY_MARGIN x that is warned about.
LOAD_PER_BOTTLENECK_PPS = 2.1
CAPACITY_MARGIN = 1.5


def capacity_warning(bench_json: Path, topo, algorithms: Sequence[str]) -> tuple[str, bool]:
    """(a line comparing the bench's measured packet rate of the slowest of these algorithms
    with what the topology's bottleneck needs at r1, whether it is short of the margin)."""
    try:
        rows = {r["variant"]: r for r in json.loads(bench_json.read_text())["summary"]}
    except (OSError, ValueError, KeyError) as err:
        return f"capacity not measured ({bench_json}: {err})", True
    measured = {a: rows[a]["pps_median"] for a in algorithms if a in rows}
    if not measured:
        return f"capacity not measured for {list(algorithms)} ({bench_json})", True
    slowest = min(measured, key=measured.get)
    need_pps = LOAD_PER_BOTTLENECK_PPS * topo.bottleneck.rate_pps
    short = measured[slowest] < CAPACITY_MARGIN * need_pps
    line = (f"capacity: this machine's BMv2 forwards {measured[slowest]:.0f} pps through the "
            f"mmaqm program ({slowest}, the slowest here, make bench); this scenario needs about "
            f"{need_pps:.0f} pps at its busiest switch ({LOAD_PER_BOTTLENECK_PPS:g} x the "
            f"{topo.bottleneck.rate_pps} pps bottleneck)")
    if short:
        line += (f". WARNING: less than {CAPACITY_MARGIN:g} x that: BMv2 may decide the results. "
                 f"Each run checks it (packets lost before the AQM); consider a lower-rate "
                 f"topology (topologies/topos/dcbt-dumbbell-10mbit.json) or a faster BMv2 build")
    return line, short


def run_experiment(topology: Path, scenario_path: Path, policies_path: Path,
                   algorithms: Sequence[str], out: Path, *, duration_s: Optional[float] = None,
                   p4info: Path = DEFAULT_P4INFO, bmv2_json: Path = DEFAULT_BMV2_JSON,
                   stream=sys.stdout, experiment: Optional[str] = None,
                   paper_tagged_loss_pct: Optional[dict[str, float]] = None,
                   register_samples: bool = True,
                   capacity_json: Optional[Path] = None,
                   name_prefix: str = DEFAULT_PREFIX) -> dict[str, dict[str, Any]]:
    """Every algorithm on one network; returns {algorithm: summary}. Validates all
    inputs before creating anything. capacity_json: the `make bench` measurement
    taken before the run, written into the run as the algorithms' per-packet cost
    (report.SWITCH_COST_FILE). name_prefix: the network's namespace names (network.py),
    so that runs beside each other do not meet."""
    topo = load_topology(topology)
    scenario = load_scenario(scenario_path)
    scenario.check_hosts(topo.hosts)
    if duration_s is not None:
        scenario = scenario.with_duration(duration_s)
    policies = load_policies(policies_path)
    # the hosts get IPv6 addresses (and the switches IPv6 routes) only for a scenario
    # with ipv6 flows: otherwise IPv6 stays off on every link (lab.py says why)
    ipv6 = "ipv6" in scenario.families()
    unknown = [a for a in algorithms if a not in policies]
    if unknown:
        raise ExperimentError(f"{policies_path} has no policy for {unknown}; it has {sorted(policies)}")
    for a in algorithms:
        controller_yaml(topo, policies[a], ipv6)   # every policy is valid before anything starts
    for path in (p4info, bmv2_json):
        if not Path(path).exists():
            raise ExperimentError(f"{path} not found: run 'make build'")
    why = missing_prereqs()
    if why:
        raise ExperimentError(why)

    out.mkdir(parents=True, exist_ok=True)
    (out / "experiment.json").write_text(json.dumps({
        "experiment": experiment, "topology": str(topology), "scenario": str(scenario_path), "policies": str(policies_path),
        "algorithms": list(algorithms), "duration_s": scenario.duration_s,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "nproc": os.cpu_count(),
        "command": shlex.join(sys.argv), "cwd": os.getcwd(), "git": git_state(),
        "bmv2_json": str(bmv2_json), "p4info": str(p4info),
    }, indent=1))
    if capacity_json is not None:
        try:
            bench = json.loads(Path(capacity_json).read_text())
            (out / report.CAPACITY_BENCH_FILE).write_text(json.dumps(bench, indent=1))
            (out / report.SWITCH_COST_FILE).write_text(
                f"Switch per-packet cost, measured by make bench ({capacity_json}, started "
                f"{bench.get('started', '?')}) just before this run:\n"
                + report.switch_cost_table(bench, algorithms))
        except (OSError, ValueError, KeyError, TypeError) as err:
            print(f"mmaqm-exp: no per-packet cost table ({capacity_json}: {err})",
                  file=stream, flush=True)
    summaries: dict[str, dict[str, Any]] = {}
    started = time.monotonic()
    # C-UPTA's probes are P4Runtime PacketOuts: BMv2 needs a CPU port
    cpu_port = T_BFD_CPU_PORT if any(uses_bfd(policies[a]) for a in algorithms) else None
    with Network(topo, out / "network", bmv2_json, cpu_port=cpu_port,
                 name_prefix=name_prefix, ipv6=ipv6) as net:
        print(f"mmaqm-exp: network up in {time.monotonic() - started:.1f} s; bottleneck "
              f"{net.bottleneck.switch} port {net.bottleneck.port} at {net.bottleneck.rate_pps} pkt/s",
              file=stream, flush=True)
        for i, algorithm in enumerate(algorithms):
            if i:
                time.sleep(SETTLE_S)
            print(f"mmaqm-exp: {algorithm} ({i + 1}/{len(algorithms)}), "
                  f"{scenario.duration_s:g} s of traffic", file=stream, flush=True)
            summaries[algorithm] = run_algorithm(net, topo, scenario, algorithm, policies[algorithm],
                                                 out / algorithm, p4info=p4info,
                                                 bmv2_json=bmv2_json, stream=stream,
                                                 register_samples=register_samples)
    paths = report.write_report(summaries, out)
    print(paths["table"].read_text(), file=stream, end="")
    print("\nBandwidth variation (feng section 3):\n" + paths["bw_table"].read_text(),
          file=stream, end="")
    paper = report.write_paper_table(summaries, out, paper_tagged_loss_pct or {})
    print(paper.read_text(), file=stream, end="")
    if ipv6:    # both families' flows per class, the controller's counts of each
        print("\n" + dual_stack_report.write_report(summaries, out).read_text(),
              file=stream, end="")
    for algorithm, summary in summaries.items():
        problem = analysis.keepup_problem(summary["switch_keepup"])
        for w in summary["warnings"] + ([f"PRECONDITION MISSED: {problem}"] if problem else []):
            print(f"warning, {algorithm}: {w} (not a result to quote)", file=stream)
    cpu_lines = []
    for algorithm, summary in summaries.items():
        parts = [f"{name} {v['mean_pct']:.0f}% (max {v['max_pct']:.0f}%)"
                 for name, v in sorted(summary["cpu"].items())]
        cpu_lines.append(f"  {algorithm:<16} " + ", ".join(parts))
    cpu_text = "CPU, percent of one core, mean (max) over the traffic:\n" + "\n".join(cpu_lines) + "\n"
    (out / "cpu.txt").write_text(cpu_text)
    print(cpu_text, file=stream, end="")
    print(f"mmaqm-exp: results in {out} ({time.monotonic() - started:.0f} s)", file=stream)
    return summaries


@dataclass(frozen=True)
class RunPlan:
    """What one mmaqm-exp invocation runs: a named experiment, with explicit options
    overriding its entries (resolve_plan)."""

    experiment: str
    topology: Path
    scenario: Path
    policies: Path
    algorithms: list[str]
    duration_s: Optional[float]
    out: Path
    paper_tagged_loss_pct: dict[str, float]


def build_parser(registry) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mmaqm-exp", description=__doc__.splitlines()[0])
    p.add_argument("--experiment", metavar="NAME",
                   help=f"a named experiment of {registry.source} [{registry.default}]: "
                        + registry.help_text())
    p.add_argument("--topology", type=Path, help="overrides the experiment's")
    p.add_argument("--scenario", type=Path, help="overrides the experiment's")
    p.add_argument("--policies", type=Path,
                   help="YAML mapping algorithm -> bottleneck policy (overrides the experiment's)")
    p.add_argument("--algorithms",
                   help="comma-separated, run in this order (overrides the experiment's)")
    p.add_argument("--duration", type=float,
                   help="scale the scenario to this many seconds (overrides the experiment's)")
    p.add_argument("--out", type=Path, help="results folder [results/<experiment>-<time>]")
    p.add_argument("--p4info", type=Path,
                   help="a program's P4Info (with --bmv2-json) instead of the automatic choice")
    p.add_argument("--bmv2-json", type=Path)
    p.add_argument("--all-in-one", action="store_true",
                   help="load the all-in-one program even when every algorithm of the run is "
                        "one family (default: that family's BMv2 profile, docs/profiles.md)")
    p.add_argument("--capacity-json", type=Path,
                   help="a bench result (bench/run_bench.py); warn when the machine's measured "
                        "packet rate leaves too little margin for this topology (make run)")
    p.add_argument("--no-register-samples", dest="register_samples", action="store_false",
                   help="do not sample the bottleneck's RED and class averages over BMv2's "
                        "Thrift CLI (registers.jsonl, class_averages.png)")
    p.add_argument("--prefix", default=DEFAULT_PREFIX,
                   help=f"namespace name prefix [{DEFAULT_PREFIX}]: another for a run beside "
                        "another one on the same machine")
    return p


def resolve_plan(a: argparse.Namespace, registry, stamp: str) -> RunPlan:
    """The named experiment (the registry's default without --experiment) with every
    explicitly given option in place of its entry. RegistryError for an unknown name."""
    exp = registry.get(a.experiment or registry.default)
    algorithms = ([x.strip() for x in a.algorithms.split(",") if x.strip()]
                  if a.algorithms is not None else list(exp.algorithms))
    if not algorithms:
        raise ExperimentError("--algorithms: names no algorithm")
    return RunPlan(
        experiment=exp.name, topology=a.topology or exp.topology,
        scenario=a.scenario or exp.scenario, policies=a.policies or exp.policies,
        algorithms=algorithms,
        duration_s=a.duration if a.duration is not None else exp.duration_s,
        out=a.out or REPO / "results" / f"{exp.name}-{stamp}",
        paper_tagged_loss_pct=dict(exp.paper_tagged_loss_pct))


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        registry = load_registry()
    except RegistryError as err:
        print(f"mmaqm-exp: {err}", file=sys.stderr)
        return 2
    a = build_parser(registry).parse_args(argv)
    try:
        plan = resolve_plan(a, registry, time.strftime("%Y%m%d-%H%M%S"))
    except (RegistryError, ExperimentError) as err:
        print(f"mmaqm-exp: {err}", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("mmaqm-exp: needs root (network namespaces, veths, BMv2)", file=sys.stderr)
        return 2
    out = plan.out
    print(f"mmaqm-exp: experiment {plan.experiment}: {plan.topology.name}, "
          f"{plan.scenario.name}, {plan.policies.name}, {','.join(plan.algorithms)}"
          + (f", {plan.duration_s:g} s" if plan.duration_s is not None else ""), flush=True)

    if a.capacity_json is not None:
        try:
            topo = load_topology(plan.topology)
        except (OSError, ValueError) as err:
            print(f"mmaqm-exp: {err}", file=sys.stderr)
            return 1
        line, _ = capacity_warning(a.capacity_json, topo, plan.algorithms)
        print(f"mmaqm-exp: {line}", flush=True)

    try:
        if (a.p4info is None) != (a.bmv2_json is None):
            raise ExperimentError("--p4info and --bmv2-json go together")
        if a.p4info is not None:
            bmv2_json, p4info, program = a.bmv2_json, a.p4info, f"{a.bmv2_json} (given)"
        else:
            bmv2_json, p4info, program = run_program(
                plan.algorithms, load_policies(plan.policies), a.all_in_one)
    except (ExperimentError, OSError, ValueError) as err:
        print(f"mmaqm-exp: {err}", file=sys.stderr)
        return 2
    print(f"mmaqm-exp: program: {program}, {bmv2_json}", flush=True)

    catch_stop_signals(interrupt=True)
    try:
        run_experiment(plan.topology, plan.scenario, plan.policies, plan.algorithms, out,
                       duration_s=plan.duration_s, p4info=p4info, bmv2_json=bmv2_json,
                       experiment=plan.experiment,
                       paper_tagged_loss_pct=plan.paper_tagged_loss_pct,
                       register_samples=a.register_samples, capacity_json=a.capacity_json,
                       name_prefix=a.prefix)
    except StopRequested as stop:
        print("mmaqm-exp: interrupted; network torn down", file=sys.stderr)
        return stop.exit_status
    except (ExperimentError, LabError, ValueError, OSError) as err:
        print(f"mmaqm-exp: {err}", file=sys.stderr)
        return 1
    latest = out.parent / "latest"
    if latest.is_symlink() or not latest.exists():
        latest.unlink(missing_ok=True)
        latest.symlink_to(out.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
