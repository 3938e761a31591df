#!/usr/bin/env python3
"""The cbt scenario (cbt section 4, Fig. 4: 6 ProShare, 240 TCP and one 10 Mbit/s
untagged blast on the two-LAN network) in ns-3, beside the BMv2 runs: an independent
simulator with its own drop-tail, RED and FQ-CoDel, under two TCP models (docs/ns3.md).

    tools/ns3_cbt.py build           compile tools/ns3sim/cbt.cc against the ns3 wheel
    tools/ns3_cbt.py run             build, run 3 queues x 2 TCP models x --seeds on the
                                     46 s schedule of experiment cbt-fig4, write
                                     docs/ns3/cbt.json and the table in docs/ns3/cbt.md
    tools/ns3_cbt.py table           re-render docs/ns3/cbt.md's tables from
                                     docs/ns3/cbt.json and cbt-full.json
    tools/ns3_cbt.py aggregate       recompute those JSONs' aggregates from their runs
                                     and the archived BMv2 runs (after a change of
                                     ROWS), then re-render
    --schedule full                  the paper's 115 s (cbt-fig4-full) instead of 46 s

The scenario's numbers come from the BMv2 experiment's own files (topologies/
experiments.yaml's cbt-fig4: topos/cbt-two-lan.json, scenarios/cbt-fig4.yaml scaled to
the experiment's duration, policies/cbt-fig4.yaml). Each ns-3 run becomes a summary with
the BMv2 summary.json's structure (phases, run, tagged_latency, switch counters and
occupancy, registers) built by the project's own functions (mmaqm_exp.analysis), and
the compared numbers are the paper-comparison metrics (tools/paper_compare.py) of those
summaries, so ns-3 and BMv2 are measured alike. Needs the ns3 wheel (make ns3-deps) and
g++. Exit 2: configuration problem (no wheel, a file unreadable); 1: a build or a
simulation failed.
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "topologies"))
sys.path.insert(0, str(REPO / "tools"))
from mmaqm_exp import analysis, metrics  # noqa: E402
from mmaqm_exp.samples import RecvSample  # noqa: E402
from mmaqm_exp.scenario import ScenarioError, load_scenario  # noqa: E402

import ns3common  # noqa: E402
import paper_compare  # noqa: E402
from ns3common import ConfigError, ns3_dirs, spread  # noqa: E402,F401

EXPERIMENTS = REPO / "topologies" / "experiments.yaml"
EXPERIMENT = "cbt-fig4"
COMPARISON = REPO / "docs" / "paper-comparison.yaml"
RESULTS = REPO / "docs" / "results"
OUT_JSON = REPO / "docs" / "ns3" / "cbt.json"
OUT_JSON_FULL = REPO / "docs" / "ns3" / "cbt-full.json"
DOC_PAGE = REPO / "docs" / "ns3" / "cbt.md"
#: the two schedules: the 46 s one the compared rows use, and the paper's 115 s
SCHEDULES = {"scaled": {"experiment": "cbt-fig4", "json": OUT_JSON, "table": "cbt"},
             "full": {"experiment": "cbt-fig4-full", "json": OUT_JSON_FULL, "table": "cbt-full"}}
FULL_ROW = "full-run-tagged-loss"  #: the paper-comparison row whose runs are the 115 s BMv2 runs

#: the queues ns-3 runs (its own queue discs), and the policy each takes its numbers from
NS3_QUEUES = {"DROP_TAIL": "DROP_TAIL", "RED": "RED", "FQ_CODEL": "DROP_TAIL"}
#: the BMv2 algorithms shown beside them (CBT for reference: ns-3 has none)
BMV2_ALGORITHMS = ("DROP_TAIL", "RED", "CBT_RED_ALL", "CBT_RED_TCP_ONLY")
TCP_MODELS = ("LinuxReno", "NewReno")
NS3_VERSION = ns3common.NS3_VERSION
DEFAULT_SEEDS = 5
TCP_START_SPREAD_MS = 10.0  #: the 240 transfers start uniformly in [start, start + 10 ms) (seeded)
LOSS_HOP = "r1:bottleneck"  #: the ns-3 summary's name of the bottleneck port


def build(force: bool = False) -> Path:
    """Compile tools/ns3sim/cbt.cc (only if a source is newer than the binary)."""
    return ns3common.build("cbt", force)


# ---------------------------------------------------------------------------
# Scenario (from the BMv2 experiment's files)
# ---------------------------------------------------------------------------


def experiment(name: str = EXPERIMENT) -> dict[str, Any]:
    """The experiment's entry of topologies/experiments.yaml (paths made absolute)."""
    try:
        exps = yaml.safe_load(EXPERIMENTS.read_text())["experiments"]
        e = dict(exps[name])
    except (OSError, KeyError, TypeError, yaml.YAMLError) as err:
        raise ConfigError(f"{EXPERIMENTS}: no experiment {name!r} ({err})") from err
    for k in ("topology", "scenario", "policies"):
        e[k] = REPO / e[k]
    return e


def load_cbt_scenario(duration_s: Optional[float]):
    """The cbt-fig4 scenario, scaled to duration_s (None: the file's own 115 s; both
    experiments use the same file)."""
    e = experiment()
    try:
        return load_scenario(e["scenario"], duration_s=duration_s)
    except (OSError, ScenarioError) as err:
        raise ConfigError(f"cannot read {e['scenario']}: {err}") from err


def _red_args(p: Mapping[str, Any], bottleneck_mbps: float, packet_bytes: int) -> dict[str, Any]:
    """ns-3 RED's arguments from our RED policy: thresholds, max_p, w_q, gentle, wait, and
    idle decay only where the policy has bandwidth_pps (cbt-fig4's has none)."""
    if p.get("ecn"):
        raise ConfigError("RED with ECN: the ns-3 runs use hard drops")
    bw = p.get("bandwidth_pps")
    idle_mbps = 0.0 if bw is None else (bottleneck_mbps if bw == "link"
                                        else float(bw) * 8 * packet_bytes / 1e6)
    return {"queue": "red", "limitPkts": p["queue_limit_pkts"], "minThPkts": p["min_th_pkts"],
            "maxThPkts": p["max_th_pkts"], "maxP": p["max_p"], "qW": p["ewma_weight"],
            "gentle": str(bool(p.get("gentle", False))).lower(),
            "wait": str(bool(p.get("wait", False))).lower(), "redIdleLinkMbps": idle_mbps}


def scenario_args(duration_s: Optional[float] = None, exp: str = EXPERIMENT
                  ) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Per ns-3 queue its arguments, and the common arguments, read from the BMv2
    experiment's topology, scenario (scaled to the experiment's duration, if it has
    one, unless duration_s is given) and policy files."""
    e = experiment(exp)
    dur = duration_s if duration_s is not None else e.get("duration_s")
    try:
        topo = json.loads(e["topology"].read_text())
        pols = yaml.safe_load(e["policies"].read_text())
    except (OSError, ValueError, yaml.YAMLError) as err:
        raise ConfigError(f"cannot read the cbt scenario: {err}") from err
    sc = load_cbt_scenario(dur)
    b = topo["bottleneck"]
    links = {(a, c): (d, r) for a, c, d, r in topo["links"]}
    bott_delay, bott_mbps = links[(b["from"], b["to"])]
    lan = {v for k, v in links.items() if k != (b["from"], b["to"])}
    if len(lan) != 1:
        raise ConfigError(f"{e['topology']}: the LAN links differ: {sorted(lan)}")
    ((lan_delay, lan_mbps),) = lan
    by_cls: dict[str, list[Any]] = {}
    for g in sc.groups:
        by_cls.setdefault(g.cls, []).append(g)
    if sorted(by_cls) != ["TAGGED", "TCP", "UNTAGGED"] or any(len(v) != 1 for v in by_cls.values()):
        raise ConfigError(f"{sc.source}: expected one TCP, one TAGGED and one UNTAGGED group")
    (tcp,), (tag,), (blast,) = by_cls["TCP"], by_cls["TAGGED"], by_cls["UNTAGGED"]
    if tag.kind != "cbr" or blast.kind != "cbr" or blast.count != 1:
        raise ConfigError(f"{sc.source}: ProShare and the blast must be CBR (the blast one flow)")
    pkt = int(tcp.params["packet_bytes"])
    if {int(tag.params["packet_bytes"]), int(blast.params["packet_bytes"])} != {pkt}:
        raise ConfigError(f"{sc.source}: every flow's packets must be {pkt} bytes")
    common = {"durationS": sc.duration_s, "bottleneckMbps": bott_mbps,
              "bottleneckDelayMs": bott_delay, "lanMbps": lan_mbps, "lanDelayMs": lan_delay,
              "packetBytes": pkt, "maxWindowPkts": tcp.params["max_window_pkts"],
              "nTcp": tcp.count, "tcpStartS": tcp.start_s, "tcpStopS": tcp.stop_s,
              "tcpStartSpreadMs": TCP_START_SPREAD_MS,
              "nTagged": tag.count, "taggedKbps": tag.cbr_rate_kbps(bott_mbps * 1e3),
              "taggedStartS": tag.start_s, "taggedStopS": tag.stop_s,
              "blastKbps": blast.cbr_rate_kbps(bott_mbps * 1e3),
              "blastStartS": blast.start_s, "blastStopS": blast.stop_s}
    per: dict[str, dict[str, Any]] = {}
    for name, pol in NS3_QUEUES.items():
        p = pols[pol]
        if name == "FQ_CODEL":
            per[name] = {"queue": "fqcodel", "limitPkts": p["queue_limit_pkts"]}
        elif p["algorithm"] == "DROP_TAIL":
            per[name] = {"queue": "fifo", "limitPkts": p["queue_limit_pkts"]}
        elif p["algorithm"] == "RED":
            per[name] = _red_args(p, bott_mbps, pkt)
        else:
            raise ConfigError(f"{name}: algorithm {p['algorithm']} has no ns-3 counterpart here")
    return per, common


def tcp_model_args(tcp: str, duration_s: Optional[float] = None) -> dict[str, Any]:
    """The initial window: LinuxReno starts with the scenario's initcwnd_pkts (2, as the
    BMv2 runs' Linux); NewReno with 1, the paper's 1999 FreeBSD TCP (the scenario file)."""
    if tcp == "NewReno":
        return {"initCwndPkts": 1}
    sc = load_cbt_scenario(duration_s)
    (g,) = [g for g in sc.groups if g.cls == "TCP"]
    iw = g.params.get("initcwnd_pkts")
    return {"initCwndPkts": int(iw) if iw is not None else 0}


def run_one(binary: Path, args: Mapping[str, Any], tcp: str, seed: int) -> dict[str, Any]:
    """Run the compiled scenario once; return its raw JSON."""
    return ns3common.run_binary(binary, dict(args, tcp=tcp, seed=seed))


# ---------------------------------------------------------------------------
# A run as a BMv2-shaped summary (the project's functions)
# ---------------------------------------------------------------------------

PHASE_KEYS = ("n_flows_by_class", "class_avg_per_flow_kbps", "class_total_kbps", "total_kbps",
              "class_share", "utilization", "jain", "udp_class")


def flow_data(raw: Mapping[str, Any], sc) -> dict[int, analysis.FlowData]:
    """The scenario's flows with the ns-3 run's data, as analysis.FlowData (times from
    0): TCP receive bytes as the IP packets that carried them (analysis.tcp_ip_bytes),
    every UDP packet received, and each UDP sender's log (first send, last send + one
    interval: a CBR's two rows)."""
    bin_s, seg, pkt = float(raw["bin_s"]), int(raw["segment_bytes"]), int(raw["packet_bytes"])
    groups = {g.cls: g for g in sc.groups}
    flows = {f.flow_id: f for f in sc.flows}
    tcp_ids = list(groups["TCP"].flow_ids)
    udp_ids = list(groups["TAGGED"].flow_ids) + list(groups["UNTAGGED"].flow_ids)
    if len(raw["tcp_rx_payload_bytes"]) != len(tcp_ids) or len(raw["udp_tx"]) != len(udp_ids):
        raise RuntimeError("the ns-3 run's flows do not match the scenario's")
    out: dict[int, analysis.FlowData] = {}
    for fid, bins in zip(tcp_ids, raw["tcp_rx_payload_bytes"]):
        out[fid] = analysis.FlowData(flows[fid], [((k + 0.5) * bin_s, analysis.tcp_ip_bytes(b, seg, pkt))
                                                  for k, b in enumerate(bins) if b])
    rows: dict[int, list[RecvSample]] = {fid: [] for fid in udp_ids}
    for i, seq, snd, rcv, nbytes in raw["udp_rx"]:
        fid = udp_ids[i]
        rows[fid].append(RecvSample(fid, seq, snd, rcv, nbytes, 255, flows[fid].dscp))
    for fid, tx in zip(udp_ids, raw["udp_tx"]):
        n = int(tx["sent"])
        log = []
        if n:
            iv = (tx["last_ns"] - tx["first_ns"]) / (n - 1) if n > 1 else 0
            log = [(int(tx["first_ns"]), 0), (int(round(tx["last_ns"] + iv)), n)]
        fd = analysis.FlowData(flows[fid], [(r.recv_ts_ns / 1e9, r.bytes) for r in rows[fid]],
                               udp_rows=rows[fid], send_log=log, sent_pkts=n)
        out[fid] = fd
    return out


def _phase_block(fds, a: float, b: float, rate_kbps: float) -> dict[str, Any]:
    m = analysis.phase_flow_metrics(fds, 0, a, b, rate_kbps)
    out = {k: m[k] for k in PHASE_KEYS}
    out["udp_class"] = {c: (None if v is None else {k: x for k, x in v.items() if k != "delay_cdf_ms"})
                        for c, v in m["udp_class"].items()}
    return out


def _counts(counters: Mapping[str, Any], a: int, b: int) -> dict[str, Any]:
    """Arrivals and drops (project names) of each class over bins [a, b)."""
    out = {}
    for cls, c in counters.items():
        arrivals = sum(c["arrivals"][a:b])
        drops = ns3common.drop_counts({r: sum(v[a:b]) for r, v in c["drops"].items()})
        tot = sum(drops.values())
        out[cls] = {"arrivals": arrivals, "drops": drops, "drops_total": tot,
                    "loss": round(tot / arrivals, 6) if arrivals else None}
    return out


def summarize(raw: Mapping[str, Any], sc) -> dict[str, Any]:
    """One ns-3 run as a summary with the BMv2 summary.json's keys for what is compared:
    phases and run (analysis.phase_flow_metrics), tagged_latency (analysis.
    tagged_latency), switch.ports[LOSS_HOP] counters per phase and the run,
    switch.occupancy.mean_pkts_by_phase (time-weighted mean of the bin_s samples, as
    the BMv2 counters'), registers.phases.<phase>.red_avg_mean_pkts (mean of the RED
    average's bin_s samples, as the BMv2 register sampler's), bottleneck.rate_pps."""
    dur, bin_s = float(raw["duration_s"]), float(raw["bin_s"])
    if abs(dur - sc.duration_s) > 1e-9:
        raise RuntimeError(f"the run is {dur} s, the scenario {sc.duration_s} s")
    rate_kbps = float(raw["bottleneck_mbps"]) * 1e3
    fds = flow_data(raw, sc)
    phases = {p.name: _phase_block(fds, p.start_s, p.end_s, rate_kbps) for p in sc.phases}
    lat = analysis.tagged_latency(fds, 0, dur)
    for v in lat.values():
        v.pop("series", None)

    def bins(t: float) -> int:
        return int(round(t / bin_s))
    nb = len(raw["queue_pkts"])
    t_s = [round(k * bin_s, 9) for k in range(nb)]
    q = [float(x) for x in raw["queue_pkts"]]
    red = [float(x) for x in raw["red_avg_pkts"]]
    occ, regs = {}, {}
    for p in sc.phases:
        occ[p.name] = {"total": round(metrics.time_weighted_mean(t_s, q, p.start_s, p.end_s), 4)}
        sel = [red[k] for k in range(nb) if p.start_s <= t_s[k] < p.end_s]
        regs[p.name] = {"samples": len(sel),
                        "red_avg_mean_pkts": round(sum(sel) / len(sel), 4) if sel else None}
    counters = raw["counters"]
    port = {"run": _counts(counters, 0, bins(dur)),
            "phases": {p.name: _counts(counters, bins(p.start_s), bins(p.end_s)) for p in sc.phases}}
    b = raw["bottleneck"]
    return {"queue": raw["queue"], "tcp": raw["tcp"], "seed": raw["seed"], "duration_s": dur,
            "segment_bytes": raw["segment_bytes"],
            "scenario": {"phases": [{"name": p.name, "start_s": p.start_s, "end_s": p.end_s}
                                    for p in sc.phases]},
            "phases": phases, "run": _phase_block(fds, 0.0, dur, rate_kbps),
            "tagged_latency": lat,
            "switch": {"bottleneck": {"switch": "r1", "port": "bottleneck"},
                       "ports": {LOSS_HOP: port},
                       "occupancy": {"mean_pkts_by_phase": occ}},
            "registers": {"phases": regs},
            "bottleneck": {"rate_pps": round(rate_kbps * 1e3 / 8 / int(raw["packet_bytes"]), 6),
                           "rate_kbps": rate_kbps, "arrivals": b["arrivals"],
                           "drops_total": b["drops_total"], "drops": ns3common.drop_counts(b["drops"])}}


# ---------------------------------------------------------------------------
# The compared numbers: tools/paper_compare.py's metrics, on either kind of summary
# ---------------------------------------------------------------------------

#: (key, paper_compare metric and its arguments, label, digits, unit, queues shown)
Q4 = ("DROP_TAIL", "RED", "FQ_CODEL", "CBT_RED_ALL")
ROWS: tuple[tuple[str, dict[str, Any], str, int, str, tuple[str, ...]], ...] = (
    ("tagged_loss_run_pct", {"fn": "udp_loss_pct", "phase": "run", "cls": "TAGGED"},
     "tagged (ProShare) loss over the run, receiver side (Table 1)", 1, "%",
     Q4 + ("CBT_RED_TCP_ONLY",)),
    ("tagged_loss_blast_pct", {"fn": "class_loss_pct", "phase": "blast", "cls": "TAGGED"},
     "tagged loss at the bottleneck, blast phase", 1, "%", Q4),
    ("tagged_loss_tcp_pct", {"fn": "class_loss_pct", "phase": "tcp", "cls": "TAGGED"},
     "tagged loss at the bottleneck, TCP phase (before the blast)", 1, "%", Q4),
    ("tcp_loss_tcp_pct", {"fn": "class_loss_pct", "phase": "tcp", "cls": "TCP"},
     "TCP loss at the bottleneck, TCP phase (before the blast)", 1, "%", Q4),
    ("tcp_loss_blast_pct", {"fn": "class_loss_pct", "phase": "blast", "cls": "TCP"},
     "TCP loss at the bottleneck, blast phase", 1, "%", Q4),
    ("untagged_loss_blast_pct", {"fn": "class_loss_pct", "phase": "blast", "cls": "UNTAGGED"},
     "blast (untagged) loss at the bottleneck", 1, "%", Q4),
    ("tcp_kbps_tcp", {"fn": "class_total_kbps", "phase": "tcp", "cls": "TCP"},
     "TCP throughput, all transfers, TCP phase (Fig. 5)", 0, "kbit/s", Q4),
    ("tcp_kbps_blast", {"fn": "class_total_kbps", "phase": "blast", "cls": "TCP"},
     "TCP throughput, all transfers, blast phase (Fig. 5)", 0, "kbit/s", Q4),
    ("untagged_share_blast_pct", {"fn": "class_share_pct", "phase": "blast", "cls": "UNTAGGED"},
     "the blast's share of the link, blast phase", 1, "%", Q4),
    ("queue_tcp_pkts", {"fn": "queue_mean_pkts", "phase": "tcp"},
     "queue length, time-average, TCP phase", 1, "pkts", Q4),
    ("queue_blast_pkts", {"fn": "queue_mean_pkts", "phase": "blast"},
     "queue length, time-average, blast phase", 1, "pkts", Q4),
    ("red_avg_tcp_pkts", {"fn": "register", "phase": "tcp", "key": "red_avg_mean_pkts"},
     "RED average (w_q 2⁻⁹ at each arrival), TCP phase", 1, "pkts", ("RED", "CBT_RED_ALL")),
    ("red_avg_blast_pkts", {"fn": "register", "phase": "blast", "key": "red_avg_mean_pkts"},
     "RED average (w_q 2⁻⁹ at each arrival), blast phase", 1, "pkts", ("RED", "CBT_RED_ALL")),
    ("tcp_forced_blast_pct", {"fn": "class_drop_reason_pct", "phase": "blast", "cls": "TCP",
                              "reason": "RED_FORCED"},
     "TCP's forced drops (RED average ≥ max_th) over its arrivals, blast phase", 1, "%",
     ("RED", "CBT_RED_ALL")),
    ("queue_delay_blast_ms", {"fn": "queue_delay_ms", "phase": "blast"},
     "transit time of the mean queue at 1 250 pkt/s, blast phase", 1, "ms", Q4),
    ("tagged_queueing_blast_ms", {"fn": "tagged_queueing_ms", "phase": "blast"},
     "tagged queueing delay (mean one-way − smallest), blast phase", 1, "ms", Q4),
)

#: what the cbt paper states for these rows (docs/paper-comparison.yaml, cbt)
PAPER = {("tagged_loss_run_pct", "RED"): "30.0 %",
         ("tagged_loss_run_pct", "CBT_RED_ALL"): "23.8 %",
         ("tagged_loss_run_pct", "CBT_RED_TCP_ONLY"): "1.3 %",
         ("tcp_kbps_blast", "RED"): "collapses (Fig. 5b)",
         ("untagged_share_blast_pct", "CBT_RED_ALL"): "≈ 7.7 % (2/26, derived)",
         ("red_avg_blast_pkts", "RED"): "26 pkts (expected, §4)",
         ("red_avg_blast_pkts", "CBT_RED_ALL"): "26 pkts (expected, §4)",
         ("queue_delay_blast_ms", "RED"): "22 ms (§4)",
         ("queue_delay_blast_ms", "CBT_RED_ALL"): "22 ms (§4)",
         ("tagged_queueing_blast_ms", "CBT_RED_ALL"): "≈ 25 ms (§4.3, Fig. 7)"}


def compared(summary: Mapping[str, Any]) -> dict[str, Optional[float]]:
    """The table's numbers of one run of one queue: each row's paper_compare metric
    (the function the docs/paper-comparison.yaml rows use) of the summary; None where
    the summary lacks it (e.g. a BMv2 run recorded without register samples)."""
    runs = {"X": summary}
    out: dict[str, Optional[float]] = {}
    for key, spec, *_ in ROWS:
        try:
            text = paper_compare.value(runs, {**spec, "algorithm": "X"})
            out[key] = paper_compare._number(text)[0]
        except paper_compare.CompareError:
            out[key] = None
    return out


def _spread(xs: Sequence[Optional[float]]) -> Optional[dict[str, float]]:
    """Median [range] over the runs that have the value (n says how many)."""
    return spread([x for x in xs if x is not None]) if any(x is not None for x in xs) else None


def ns3_aggregate(summaries: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per TCP model and ns-3 queue, median [range] over seeds of compared()."""
    out: dict[str, dict[str, Any]] = {}
    for tcp in TCP_MODELS:
        out[tcp] = {}
        for q in NS3_QUEUES:
            per = [compared(s) for s in summaries if s["tcp"] == tcp and s["algorithm"] == q]
            out[tcp][q] = {k: _spread([p[k] for p in per]) for k in per[0]} if per else {}
    return out


def read_bmv2(run: str, algo: str) -> Optional[dict[str, Any]]:
    """docs/results/<run>/<algo>/summary.json.gz (None if the run has no such folder)."""
    d = RESULTS / run / algo
    if not d.is_dir():
        return None
    path = d / "summary.json.gz"
    try:
        with gzip.open(path, "rt") as f:
            return json.load(f)
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e}") from e


def bmv2_aggregate(runs: Sequence[str]) -> dict[str, Any]:
    """compared() of the archived BMv2 cbt-fig4 runs, median [range] per algorithm."""
    out: dict[str, Any] = {}
    for algo in BMV2_ALGORITHMS:
        per = [compared(s) for s in (read_bmv2(r, algo) for r in runs) if s is not None]
        if algo == "DROP_TAIL":     # its registers hold no RED average (always 0)
            for p in per:
                p.update({k: None for k in p if k.startswith("red_avg")})
        out[algo] = {k: _spread([p[k] for p in per]) for k in per[0]} if per else {}
    return {"runs": list(runs), "metrics": out}


def cbt_runs(schedule: str = "scaled") -> list[str]:
    """The archived BMv2 runs of a schedule: docs/paper-comparison.yaml's cbt runs (46 s),
    or the runs of its full-length row (115 s)."""
    spec = yaml.safe_load(COMPARISON.read_text())["cbt"]
    if schedule == "scaled":
        return list(spec["runs"])
    (row,) = [r for r in spec["rows"] if r["id"] == FULL_ROW]
    return list(row["runs"])


# ---------------------------------------------------------------------------
# Table
# ---------------------------------------------------------------------------


def _cell(sp: Optional[Mapping[str, float]], nd: int, unit: str, n_all: int) -> str:
    c = ns3common.cell(sp, nd, unit)
    if sp is not None and sp["n"] < n_all:
        c += f" ({sp['n']} of {n_all} runs)"
    return c


def render_table(results: Mapping[str, Any]) -> str:
    """The Markdown table of docs/ns3/cbt.md from cbt.json."""
    ns3, bm = results["ns3"], results["bmv2"]
    n_seeds, n_runs = results["seeds"], len(bm["runs"])
    head = (f"| metric | queue | ns-3 TcpLinuxReno ({n_seeds} seeds) | ns-3 TcpNewReno "
            f"({n_seeds} seeds) | BMv2, Linux TCP ({n_runs} run{'s' if n_runs != 1 else ''}) | paper |")
    lines = [head, "|---|---|---:|---:|---:|---|"]
    for key, _spec, label, nd, unit, queues in ROWS:
        for q in queues:
            cells = [_cell(ns3[t][q].get(key), nd, unit, n_seeds) if q in ns3[t] else "—"
                     for t in TCP_MODELS]
            b = bm["metrics"].get(q, {})
            cells.append(_cell(b.get(key), nd, unit, n_runs) if b else "—")
            lines.append(f"| {label} | {q} | {' | '.join(cells)} | {PAPER.get((key, q), '')} |")
    lines.append("")
    sched = (f"cbt §4's 115 s scaled to {results['duration_s']:g} s"
             if results["schedule"] == "scaled" else "cbt §4's full 115 s")
    lines.append(f"Median [range]. Schedule: {sched} (experiment {results['experiment']}). "
                 "ns-3 has no CBT (— in its columns) and BMv2 no "
                 f"FQ-CoDel. BMv2 runs: {', '.join(bm['runs'])}. Data: "
                 f"docs/ns3/{SCHEDULES[results['schedule']]['json'].name} (`tools/ns3_cbt.py run"
                 f"{'' if results['schedule'] == 'scaled' else ' --schedule full'}`).")
    return "\n".join(lines) + "\n"


def write_table(results: Mapping[str, Any]) -> None:
    """Put the table into docs/ns3/cbt.md between its markers."""
    ns3common.splice_table(DOC_PAGE, SCHEDULES[results["schedule"]]["table"], render_table(results))


# ---------------------------------------------------------------------------


def cmd_run(seeds: int, schedule: str = "scaled") -> dict[str, Any]:
    binary = build()
    exp = SCHEDULES[schedule]["experiment"]
    per, common = scenario_args(exp=exp)
    sc = load_cbt_scenario(common["durationS"])
    summaries = []
    for q in NS3_QUEUES:
        for tcp in TCP_MODELS:
            for seed in range(1, seeds + 1):
                raw = run_one(binary, {**common, **per[q], **tcp_model_args(tcp, common["durationS"])},
                              tcp, seed)
                s = summarize(raw, sc)
                s["algorithm"] = q
                summaries.append(s)
                c = compared(s)
                print(f"ns3-cbt: {q} {tcp} seed {seed}: tagged loss {c['tagged_loss_run_pct']} %, "
                      f"TCP {c['tcp_kbps_blast']} kbit/s in the blast, queue "
                      f"{c['queue_blast_pkts']} pkts", file=sys.stderr)
    return {"schema": "mmaqm-ns3-cbt/1", "ns3_version": NS3_VERSION, "seeds": seeds,
            "schedule": schedule, "experiment": exp, "duration_s": common["durationS"],
            "scenario": {"common": common, "queues": per,
                         "initial_window": {t: tcp_model_args(t, common["durationS"])["initCwndPkts"]
                                            for t in TCP_MODELS}},
            "tcp_models": dict(ns3common.TCP_MODELS),
            "runs": summaries, "ns3": ns3_aggregate(summaries), "bmv2": bmv2_aggregate(cbt_runs(schedule))}


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("build", "run", "table", "aggregate"))
    ap.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, help="seeds per configuration")
    ap.add_argument("--schedule", choices=sorted(SCHEDULES), default="scaled",
                    help="scaled: cbt-fig4's 46 s (the compared rows'); full: the paper's 115 s")
    ap.add_argument("--out", type=Path, default=None,
                    help="results JSON (run; default docs/ns3/cbt.json or cbt-full.json)")
    a = ap.parse_args(argv)
    default_out = SCHEDULES[a.schedule]["json"]
    out = a.out or default_out
    try:
        if a.command == "build":
            print(build(force=True))
        elif a.command == "run":
            if a.seeds < 1:
                raise ConfigError("--seeds must be >= 1")
            res = cmd_run(a.seeds, a.schedule)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
            if out.resolve() == default_out.resolve():
                write_table(res)
            print(render_table(res))
        else:
            for name, sch in SCHEDULES.items():
                if not sch["json"].is_file():
                    continue
                res = json.loads(sch["json"].read_text())
                if a.command == "aggregate":
                    res["ns3"] = ns3_aggregate(res["runs"])
                    res["bmv2"] = bmv2_aggregate(cbt_runs(name))
                    sch["json"].write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
                write_table(res)
    except ConfigError as e:
        print(f"ns3-cbt: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"ns3-cbt: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
