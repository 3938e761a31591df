#!/usr/bin/env python3
"""The feng scenario (feng section 3.1, Fig. 1; Fig. 2 and Fig. 3(a)) in ns-3, beside
the BMv2 runs: an independent simulator with its own drop-tail and RED, and FQ-CoDel as
the flow-queuing baseline, under two TCP models (docs/ns3.md).

    tools/ns3_feng.py build          compile tools/ns3sim/feng.cc against the ns3 wheel
    tools/ns3_feng.py run            build, run 4 queues x 2 TCP models x --seeds,
                                     write docs/ns3/feng.json and the table in
                                     docs/ns3/feng.md
    tools/ns3_feng.py table          re-render docs/ns3/feng.md's table from
                                     docs/ns3/feng.json

The scenario's numbers come from the BMv2 experiment's own files (topologies/topos/
feng-fig1.json, scenarios/feng-fig2.yaml, policies/feng.yaml); the metrics are computed
with the project's definitions (mmaqm_exp.metrics), so the names match summary.json.
Needs the ns3 wheel (make ns3-deps) and g++. Exit 2: configuration problem (no wheel,
a file unreadable); 1: a build or a simulation failed.
"""
from __future__ import annotations

import gzip
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "topologies"))
from mmaqm_exp import metrics  # noqa: E402
from mmaqm_exp.analysis import BW_WINDOWS_S, MIN_BW_WINDOWS, SMOOTHING_WINDOWS_S  # noqa: E402

sys.path.insert(0, str(REPO / "tools"))
import ns3common  # noqa: E402
from ns3common import ConfigError, cell as _cell, ns3_dirs, spread  # noqa: E402,F401

TOPOLOGY = REPO / "topologies" / "topos" / "feng-fig1.json"
SCENARIO = REPO / "topologies" / "scenarios" / "feng-fig2.yaml"
POLICIES = REPO / "topologies" / "policies" / "feng.yaml"
COMPARISON = REPO / "docs" / "paper-comparison.yaml"
OUT_JSON = REPO / "docs" / "ns3" / "feng.json"
DOC_PAGE = REPO / "docs" / "ns3" / "feng.md"

ALGORITHMS = ("DROP_TAIL", "RED", "RED_50KB")  #: the BMv2 experiment's policies
#: ns-3 only: FQ-CoDel (ns-3's defaults) with drop-tail's buffer, the flow-queuing
#: baseline a user would pick instead (the BMv2 runs have no counterpart)
FQ_CODEL = "FQ_CODEL"
NS3_QUEUES = (*ALGORITHMS, FQ_CODEL)
TCP_MODELS = ("LinuxReno", "NewReno")
NS3_VERSION = ns3common.NS3_VERSION
DEFAULT_SEEDS = 5
START_SPREAD_MS = 10.0  #: flows start uniformly in [0, 10) ms (seeded); BMv2's start within ~1 ms


def build(force: bool = False) -> Path:
    """Compile tools/ns3sim/feng.cc (only if a source is newer than the binary)."""
    return ns3common.build("feng", force)


# ---------------------------------------------------------------------------
# Scenario (from the BMv2 experiment's files)
# ---------------------------------------------------------------------------


def scenario_args() -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Per algorithm the queue arguments, and the common arguments, read from the
    BMv2 experiment's topology, scenario and policy files."""
    try:
        topo = json.loads(TOPOLOGY.read_text())
        scen = yaml.safe_load(SCENARIO.read_text())
        pols = yaml.safe_load(POLICIES.read_text())
    except (OSError, ValueError, yaml.YAMLError) as e:
        raise ConfigError(f"cannot read the feng scenario: {e}") from e
    b = topo["bottleneck"]
    links = {(a, c): (d, r) for a, c, d, r in topo["links"]}
    bott_delay, bott_mbps = links[(b["from"], b["to"])]
    access = [v for k, v in links.items() if k != (b["from"], b["to"])]
    if len({v for v in access}) != 1:
        raise ConfigError(f"{TOPOLOGY}: the two access links differ: {access}")
    acc_delay, acc_mbps = access[0]
    (flow,) = scen["flows"]
    common = {"flows": flow["count"], "durationS": scen["duration_s"],
              "bottleneckMbps": bott_mbps, "bottleneckDelayMs": bott_delay,
              "accessMbps": acc_mbps, "accessDelayMs": acc_delay,
              "packetBytes": flow.get("packet_bytes", b["packet_bytes"]),
              "maxWindowPkts": flow.get("max_window_pkts", 20), "startSpreadMs": START_SPREAD_MS}
    per: dict[str, dict[str, Any]] = {}
    for name in ALGORITHMS:
        p = pols[name]
        if p["algorithm"] == "DROP_TAIL":
            per[name] = {"queue": "fifo", "limitPkts": p["queue_limit_pkts"]}
        elif p["algorithm"] == "RED":
            if p.get("gentle") or p.get("wait") or p.get("ecn"):
                raise ConfigError(f"{name}: gentle/wait/ecn are not passed to ns-3 here")
            per[name] = {"queue": "red", "limitPkts": p["queue_limit_pkts"],
                         "minThPkts": p["min_th_pkts"], "maxThPkts": p["max_th_pkts"],
                         "maxP": p["max_p"], "qW": p["ewma_weight"]}
        else:
            raise ConfigError(f"{name}: algorithm {p['algorithm']} has no ns-3 counterpart here")
    per[FQ_CODEL] = {"queue": "fqcodel", "limitPkts": per["DROP_TAIL"]["limitPkts"]}
    return per, common


def run_one(binary: Path, args: Mapping[str, Any], tcp: str, seed: int,
            duration_s: Optional[float] = None) -> dict[str, Any]:
    """Run the compiled scenario once; return its raw JSON."""
    a = dict(args, tcp=tcp, seed=seed)
    if duration_s is not None:
        a["durationS"] = duration_s
    return ns3common.run_binary(binary, a)


# ---------------------------------------------------------------------------
# Metrics (summary.json's names)
# ---------------------------------------------------------------------------

def summarize(raw: Mapping[str, Any]) -> dict[str, Any]:
    """One run's metrics, named as in the BMv2 summary.json: flows.<i>.bandwidth_variation
    (1 s / 8 s: windows, mean_kbps, std_kbps, cov), bandwidth_variation_curve, the
    bottleneck's TCP loss, and the queue length sampled every bin_s."""
    dur, bin_s = float(raw["duration_s"]), float(raw["bin_s"])
    flows: dict[str, Any] = {}
    for i, bins in enumerate(raw["rx_bytes_ip"]):
        samples = [((k + 0.5) * bin_s, float(b)) for k, b in enumerate(bins)]
        bv: dict[str, Any] = {}
        for w in BW_WINDOWS_S:
            if dur + 1e-9 >= MIN_BW_WINDOWS * w:
                v = metrics.bandwidth_variation(samples, w, 0.0, dur)
                bv[f"{w:g}s"] = {"windows": len(v.windows_bps), "mean_kbps": round(v.mean_bps / 1e3, 3),
                                 "std_kbps": round(v.std_bps / 1e3, 3), "cov": round(v.cov, 6)}
        ws = [w for w in SMOOTHING_WINDOWS_S if dur + 1e-9 >= MIN_BW_WINDOWS * w]
        flows[str(i)] = {"class": "TCP", "start_s": raw["start_s"][i],
                         "received_bytes_ip": float(sum(bins)), "bandwidth_variation": bv,
                         "bandwidth_variation_curve": {
                             "windows_s": ws,
                             "std_kbps": [round(metrics.bandwidth_variation(samples, w, 0.0, dur)
                                                .std_bps / 1e3, 3) for w in ws]}}
    b = raw["bottleneck"]
    drops = ns3common.drop_counts(b["drops"])
    q = [float(x) for x in raw["queue_pkts"]]
    return {"queue": raw["queue"], "tcp": raw["tcp"], "seed": raw["seed"], "duration_s": dur,
            "segment_bytes": raw["segment_bytes"], "params": raw["params"], "flows": flows,
            "bottleneck": {"arrivals": b["arrivals"], "drops_total": b["drops_total"], "drops": drops,
                           "loss": round(b["drops_total"] / b["arrivals"], 6) if b["arrivals"] else None},
            "queue_occupancy": {"sample_s": bin_s, "mean_pkts": round(statistics.fmean(q), 3),
                                "std_pkts": round(statistics.pstdev(q), 3), "max_pkts": max(q)}}


def class_curve(flows: Sequence[Mapping[str, Any]]) -> list[tuple[float, float]]:
    """feng Fig. 3: (window_s, mean over the flows of their variation), as report.py's."""
    curves = [f["bandwidth_variation_curve"] for f in flows]
    common = [w for w in curves[0]["windows_s"] if all(w in c["windows_s"] for c in curves)]
    return [(w, statistics.fmean(c["std_kbps"][c["windows_s"].index(w)] for c in curves))
            for w in common]


def run_metrics(flows: Sequence[Mapping[str, Any]], loss: Optional[float], queue_mean: float,
                queue_std: Optional[float], baseline_flows: Sequence[Mapping[str, Any]]
                ) -> dict[str, Optional[float]]:
    """The compared numbers of one run of one algorithm (means over its TCP flows)."""
    def m(w: str, k: str) -> float:
        return statistics.fmean(f["bandwidth_variation"][w][k] for f in flows)
    curve, ref = class_curve(flows), class_curve(baseline_flows)
    smooth = metrics.smoothing_to_reach_s(curve, ref[0][1]) if curve and ref else None
    return {"kbps_per_flow": m("1s", "mean_kbps"), "var_0.1s_kbps": curve[0][1] if curve else None,
            "var_1s_kbps": m("1s", "std_kbps"),
            "var_8s_kbps": m("8s", "std_kbps") if all("8s" in f["bandwidth_variation"] for f in flows) else None,
            "loss_pct": None if loss is None else 100 * loss, "queue_mean_pkts": queue_mean,
            "queue_std_pkts": queue_std, "smoothing_to_droptail_s": smooth}


def ns3_aggregate(summaries: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per TCP model and algorithm, median [range] over seeds of run_metrics; the
    smoothing is to the same model and seed's DROP_TAIL 0.1 s variation."""
    by = {(s["tcp"], s["algorithm"], s["seed"]): s for s in summaries}
    out: dict[str, dict[str, Any]] = {}
    for tcp in TCP_MODELS:
        out[tcp] = {}
        for algo in NS3_QUEUES:
            seeds = sorted(seed for (t, a, seed) in by if t == tcp and a == algo)
            per = []
            for seed in seeds:
                s, base = by[(tcp, algo, seed)], by[(tcp, "DROP_TAIL", seed)]
                per.append(run_metrics(list(s["flows"].values()), s["bottleneck"]["loss"],
                                       s["queue_occupancy"]["mean_pkts"],
                                       s["queue_occupancy"]["std_pkts"], list(base["flows"].values())))
            out[tcp][algo] = {k: spread([p[k] for p in per]) for k in per[0]} if per else {}
    return out


def bmv2_aggregate(runs: Sequence[str]) -> dict[str, Any]:
    """The same metrics from the archived BMv2 feng-fig2 runs (docs/results/<run>/)."""
    per: dict[str, list[dict[str, Optional[float]]]] = {a: [] for a in ALGORITHMS}
    for run in runs:
        s_by = {}
        for algo in ALGORITHMS:
            path = REPO / "docs" / "results" / run / algo / "summary.json.gz"
            try:
                with gzip.open(path, "rt") as f:
                    s_by[algo] = json.load(f)
            except OSError as e:
                raise ConfigError(f"cannot read {path}: {e}") from e
        for algo, s in s_by.items():
            flows = [f for f in s["flows"].values() if f["class"] == "TCP"]
            base = [f for f in s_by["DROP_TAIL"]["flows"].values() if f["class"] == "TCP"]
            bt = s["bottleneck"]
            port = s["switch"]["ports"][f"{bt['switch']}:{bt['port']}"]
            occ = s["switch"]["occupancy"]
            # the queue samples (every ~100 ms) within the run, as ns-3's
            q = [float(x) for t, x in zip(occ["t_s"], occ["total"])
                 if 0 <= t < float(s["scenario"]["duration_s"])]
            per[algo].append(run_metrics(flows, port["run"]["TCP"]["loss"], statistics.fmean(q),
                                         statistics.pstdev(q), base))
    return {"runs": list(runs),
            "metrics": {a: {k: spread([p[k] for p in per[a]]) for k in per[a][0]} for a in ALGORITHMS}}


def feng_runs() -> list[str]:
    spec = yaml.safe_load(COMPARISON.read_text())
    return list(spec["feng"]["runs"])


# ---------------------------------------------------------------------------
# Table
# ---------------------------------------------------------------------------

ROWS = (  # (metric key, label, digits, unit)
    ("kbps_per_flow", "throughput per flow", 0, "kbit/s"),
    ("var_0.1s_kbps", "variation, 0.1 s windows (Fig. 3(a) unsmoothed)", 0, "kbit/s"),
    ("var_1s_kbps", "variation, 1 s windows (Fig. 2)", 0, "kbit/s"),
    ("var_8s_kbps", "variation, 8 s windows (Fig. 2)", 0, "kbit/s"),
    ("smoothing_to_droptail_s", "smoothing to drop-tail's 0.1 s variation (Fig. 3(a))", 2, "s"),
    ("loss_pct", "TCP loss at the bottleneck", 1, "%"),
    ("queue_mean_pkts", "queue length, mean", 1, "pkts"),
    ("queue_std_pkts", "queue length, std (variation)", 1, "pkts"),
)

#: what the feng paper states for these rows (docs/paper-comparison.yaml, feng)
PAPER = {("var_0.1s_kbps", "DROP_TAIL"): "≈ 800 kbit/s",
         ("var_1s_kbps", "RED"): "larger than drop-tail's",
         ("var_8s_kbps", "RED"): "larger than drop-tail's",
         ("kbps_per_flow", "RED"): "2 500 kbit/s (fair share)",
         ("smoothing_to_droptail_s", "RED"): "≈ 0.9 s"}


def render_table(results: Mapping[str, Any]) -> str:
    """The Markdown table of docs/ns3/feng.md from feng.json."""
    ns3, bm = results["ns3"], results["bmv2"]
    n_seeds = results["seeds"]
    head = (f"| metric (mean over the 4 flows) | queue | ns-3 TcpLinuxReno ({n_seeds} seeds) | "
            f"ns-3 TcpNewReno, ns-2 kind ({n_seeds} seeds) | BMv2, Linux TCP ({len(bm['runs'])} runs) | paper |")
    lines = [head, "|---|---|---:|---:|---:|---|"]
    for key, label, nd, unit in ROWS:
        for algo in NS3_QUEUES:
            if key == "smoothing_to_droptail_s" and algo == "DROP_TAIL":
                continue
            bmv2 = bm["metrics"].get(algo)
            lines.append(f"| {label} | {algo} | {_cell(ns3['LinuxReno'][algo].get(key), nd, unit)} | "
                         f"{_cell(ns3['NewReno'][algo].get(key), nd, unit)} | "
                         f"{_cell(bmv2.get(key), nd, unit) if bmv2 else 'no BMv2 counterpart'} | "
                         f"{PAPER.get((key, algo), '')} |")
    lines.append("")
    lines.append("Median [range]. Variation: the population standard deviation of a flow's "
                 "throughput over consecutive windows (summary.json `bandwidth_variation`). "
                 f"BMv2 runs: {', '.join(bm['runs'])}. Data: docs/ns3/feng.json "
                 "(`tools/ns3_feng.py run`).")
    return "\n".join(lines) + "\n"


def write_table(results: Mapping[str, Any]) -> None:
    """Put the table into docs/ns3/feng.md between its markers."""
    ns3common.splice_table(DOC_PAGE, "feng", render_table(results))


# ---------------------------------------------------------------------------


def cmd_run(seeds: int, duration_s: Optional[float]) -> dict[str, Any]:
    binary = build()
    per, common = scenario_args()
    summaries = []
    for algo in NS3_QUEUES:
        for tcp in TCP_MODELS:
            for seed in range(1, seeds + 1):
                raw = run_one(binary, {**common, **per[algo]}, tcp, seed, duration_s)
                s = summarize(raw)
                s["algorithm"] = algo
                summaries.append(s)
                print(f"ns3-feng: {algo} {tcp} seed {seed}: loss "
                      f"{100 * (s['bottleneck']['loss'] or 0):.2f} %, queue "
                      f"{s['queue_occupancy']['mean_pkts']:.1f} pkts", file=sys.stderr)
    return {"schema": "mmaqm-ns3-feng/1", "ns3_version": NS3_VERSION, "seeds": seeds,
            "scenario": {"common": common, "queues": per},
            "tcp_models": dict(ns3common.TCP_MODELS),
            "runs": summaries, "ns3": ns3_aggregate(summaries), "bmv2": bmv2_aggregate(feng_runs())}


def main(argv: Optional[Sequence[str]] = None) -> int:
    return ns3common.cli("feng", __doc__, argv, build=build,
                          run=lambda seeds: cmd_run(seeds, None),
                          render_table=render_table, write_table=write_table,
                          out_json=OUT_JSON, default_seeds=DEFAULT_SEEDS)


if __name__ == "__main__":
    sys.exit(main())
