#!/usr/bin/env python3
"""The mcdt scenarios (mcdt section III, scenarios 2 and 3; Figs. 6-8) in ns-3, beside the
BMv2 runs: an independent simulator with its own drop-tail, RED and FQ-CoDel, under two
TCP models (docs/ns3.md, docs/ns3/mcdt.md).

    tools/ns3_mcdt.py build          compile tools/ns3sim/mcdt.cc against the ns3 wheel
    tools/ns3_mcdt.py run            build, run 2 scenarios x 3 queues x 2 TCP models x
                                     --seeds, write docs/ns3/mcdt.json and the table in
                                     docs/ns3/mcdt.md
    tools/ns3_mcdt.py table          re-render docs/ns3/mcdt.md's table from
                                     docs/ns3/mcdt.json

Each scenario's numbers come from its BMv2 experiment's own files (topologies/
experiments.yaml mcdt-s2, mcdt-s3: the topology, scenario and policy files); the metrics
are the project's (mmaqm_exp.metrics, and tools/paper_compare.py's definitions of the
mcdt rows), on a summary with summary.json's names. Needs the ns3 wheel (make ns3-deps)
and g++. Exit 2: configuration problem (no wheel, a file unreadable); 1: a build or a
simulation failed.
"""
from __future__ import annotations

import gzip
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "topologies"))
from mmaqm_exp import metrics  # noqa: E402

sys.path.insert(0, str(REPO / "tools"))
import ns3common  # noqa: E402
from ns3common import ConfigError, cell, ns3_dirs, spread  # noqa: E402,F401

EXPERIMENTS = REPO / "topologies" / "experiments.yaml"
COMPARISON = REPO / "docs" / "paper-comparison.yaml"
OUT_JSON = REPO / "docs" / "ns3" / "mcdt.json"
DOC_PAGE = REPO / "docs" / "ns3" / "mcdt.md"
#: the scenario's own headers: a change in them rebuilds it (ns3common.build watches only
#: the scenario and mmaqm_ns3.h)
HEADERS = (ns3common.SIM_DIR / "mcdt_apps.h", ns3common.SIM_DIR / "mm_app.h")

SCENARIOS = ("mcdt-s2", "mcdt-s3")
QUEUES = ("DROP_TAIL", "RED", "FQ_CODEL")           #: run in ns-3
BMV2_ALGORITHMS = ("DROP_TAIL", "RED", "CBT_RED_ALL", "MCDT")
TABLE_QUEUES = ("DROP_TAIL", "RED", "FQ_CODEL", "MCDT")
TCP_MODELS = ("LinuxReno", "NewReno")
CLASSES = ("TCP", "TAGGED", "UNTAGGED")
NS3_VERSION = ns3common.NS3_VERSION
DEFAULT_SEEDS = 5
#: the BMv2 harness shapes only the bottleneck port (mmaqm_exp/network.py); the other
#: links are veths, so in ns-3 they run far above the bottleneck's rate
ACCESS_MBPS = 1000.0
START_SPREAD_MS = 10.0  #: a group's flows start uniformly in [start, start + 10 ms) (seeded)
BOTTLENECK_NAME = "r1:bottleneck"


def build(force: bool = False) -> Path:
    """Compile tools/ns3sim/mcdt.cc (when it, mmaqm_ns3.h or one of HEADERS is newer
    than the binary)."""
    binary = ns3common.BUILD_DIR / "mcdt"
    stale = binary.is_file() and any(h.is_file() and h.stat().st_mtime > binary.stat().st_mtime
                                     for h in HEADERS)
    return ns3common.build("mcdt", force or stale)


# ---------------------------------------------------------------------------
# Scenario (from the BMv2 experiments' files)
# ---------------------------------------------------------------------------


def experiment_files(name: str) -> tuple[Path, Path, Path]:
    try:
        reg = yaml.safe_load(EXPERIMENTS.read_text())
        e = reg["experiments"][name]
    except (OSError, KeyError, yaml.YAMLError) as err:
        raise ConfigError(f"{EXPERIMENTS}: no experiment {name}: {err}") from err
    return REPO / e["topology"], REPO / e["scenario"], REPO / e["policies"]


def scenario_args(name: str) -> tuple[dict[str, dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    """Per queue the ns-3 queue arguments, the common arguments, and the phases, read
    from the BMv2 experiment's topology, scenario and policy files."""
    topo_p, scen_p, pol_p = experiment_files(name)
    try:
        topo = json.loads(topo_p.read_text())
        scen = yaml.safe_load(scen_p.read_text())
        pols = yaml.safe_load(pol_p.read_text())
    except (OSError, ValueError, yaml.YAMLError) as e:
        raise ConfigError(f"cannot read the {name} scenario: {e}") from e
    b = topo["bottleneck"]
    links = {(a, c): (d, r) for a, c, d, r in topo["links"]}
    bott_delay, bott_mbps = links[(b["from"], b["to"])]
    access = {d for k, (d, _r) in links.items() if k != (b["from"], b["to"])}
    if len(access) != 1:
        raise ConfigError(f"{topo_p}: the access links' delays differ: {sorted(access)}")
    tcp = [f for f in scen["flows"] if f["kind"] == "tcp"]
    if len(tcp) != 1:
        raise ConfigError(f"{scen_p}: expected one TCP group, got {len(tcp)}")
    (t,) = tcp
    udp = []
    for f in scen["flows"]:
        if f["kind"] == "mmapp":
            rate = "/".join(f"{s:g}" for s in f["scales_kbps"])
        elif f["kind"] == "cbr":
            rate = f"{f['rate_kbps']:g}"
        elif f["kind"] == "tcp":
            continue
        else:
            raise ConfigError(f"{scen_p}: flow kind {f['kind']} has no ns-3 counterpart here")
        udp.append(f"{f['kind']},{f['count']},{f['start_s']:g},{f['stop_s']:g},{rate}")
    packet_bytes = t.get("packet_bytes", b["packet_bytes"])
    common = {"durationS": scen["duration_s"], "tcpFlows": t["count"], "tcpStartS": t["start_s"],
              "tcpStopS": t["stop_s"], "maxWindowPkts": t.get("max_window_pkts", 20),
              "packetBytes": packet_bytes, "udp": ";".join(udp),
              "bottleneckMbps": bott_mbps, "bottleneckDelayMs": bott_delay,
              "accessMbps": ACCESS_MBPS, "accessDelayMs": access.pop(),
              "startSpreadMs": START_SPREAD_MS}
    per: dict[str, dict[str, Any]] = {}
    dt = pols["DROP_TAIL"]
    if dt["algorithm"] != "DROP_TAIL":
        raise ConfigError(f"{pol_p}: DROP_TAIL is {dt['algorithm']}")
    per["DROP_TAIL"] = {"queue": "fifo", "limitPkts": dt["queue_limit_pkts"]}
    red = pols["RED"]
    if red["algorithm"] != "RED" or red.get("ecn"):
        raise ConfigError(f"{pol_p}: RED must be RED without ECN")
    per["RED"] = {"queue": "red", "limitPkts": red["queue_limit_pkts"],
                  "minThPkts": red["min_th_pkts"], "maxThPkts": red["max_th_pkts"],
                  "maxP": red["max_p"], "qW": red["ewma_weight"],
                  # our RED's defaults (docs/configuration.md): no gentle, no wait, no
                  # idle decay without bandwidth_pps
                  "gentle": str(bool(red.get("gentle", False))).lower(),
                  "wait": str(bool(red.get("wait", False))).lower(),
                  "idleDecay": str("bandwidth_pps" in red).lower()}
    # FQ-CoDel: ns-3's defaults and the policies' (drop-tail's) buffer
    per["FQ_CODEL"] = {"queue": "fqcodel", "limitPkts": dt["queue_limit_pkts"]}
    phases = [dict(p) for p in scen["phases"]]
    return per, common, phases


#: a 50 s run takes about 5 s; far beyond this the simulation has stopped advancing
#: (docs/ns3/mcdt.md: mm_app.h's timeout re-arm)
RUN_TIMEOUT_S = 300


def run_one(binary: Path, args: Mapping[str, Any], tcp: str, seed: int,
            duration_s: Optional[float] = None, timeout_s: float = RUN_TIMEOUT_S) -> dict[str, Any]:
    """Run the compiled scenario once; return its raw JSON (ns3common.run_binary, with a
    time limit: RuntimeError when the simulation does not finish)."""
    a = dict(args, tcp=tcp, seed=seed)
    if duration_s is not None:
        a["durationS"] = duration_s
    with tempfile.TemporaryDirectory() as td:
        out = Path(td) / "raw.json"
        cmd = [str(binary), *[f"--{k}={v}" for k, v in a.items()], f"--out={out}"]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{' '.join(cmd)} did not finish in {timeout_s} s") from None
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr[-2000:]}")
        return json.loads(out.read_text())


# ---------------------------------------------------------------------------
# One run's summary, with summary.json's names
# ---------------------------------------------------------------------------


def _active(f: Mapping[str, Any], a: float, b: float) -> bool:
    return f["start_s"] < b and f["stop_s"] > a


def summarize(raw: Mapping[str, Any], phases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One run's summary with the BMv2 summary.json's names where the mcdt rows read them
    (tools/paper_compare.py): phases.<p> and run: class_total_kbps,
    class_avg_per_flow_kbps, n_flows_by_class, jain, udp_class.<cls> (sent, received,
    loss, mean_ms, min_ms, by send time); switch.ports.<bottleneck>.run / .phases.<p>.<cls>
    (arrivals, drops by reason, drops_total, loss at the queue disc, by arrival time);
    switch.occupancy.mean_pkts_by_phase.<p>.total; bottleneck.rate_pps."""
    dur, bin_s = float(raw["duration_s"]), float(raw["bin_s"])
    nb = round(dur / bin_s)
    if raw.get("unclassified"):
        raise RuntimeError(f"{raw['unclassified']} packets at the bottleneck from no known host")
    flows = raw["flows"]
    samples = [[((k + 0.5) * bin_s, float(x)) for k, x in enumerate(f["rx_bytes_ip"])] for f in flows]
    cls_raw = raw["classes"]
    q = raw["queue_pkts"]

    def bins(a: float, b: float) -> range:
        return range(max(0, round(a / bin_s)), min(nb, round(b / bin_s)))

    def block(a: float, b: float) -> dict[str, Any]:
        act = [i for i, f in enumerate(flows) if _active(f, a, b)]
        thr = {i: metrics.flow_throughput_bps(samples[i], max(a, flows[i]["start_s"]),
                                              min(b, flows[i]["stop_s"])) for i in act}
        class_of = {i: flows[i]["class"] for i in act}
        avg = metrics.class_average_per_flow_throughput(thr, class_of) if act else {}
        totals = {c: sum(v for i, v in thr.items() if class_of[i] == c) for c in CLASSES}
        udp: dict[str, Any] = {}
        for c in ("TAGGED", "UNTAGGED"):
            if not any(class_of[i] == c for i in act):
                udp[c] = None
                continue
            r = cls_raw[c]
            ks = bins(a, b)
            sent = sum(r["udp_sent"][k] for k in ks)
            recv = min(sent, sum(r["udp_received"][k] for k in ks))
            mins = [r["udp_delay_min_s"][k] for k in ks if r["udp_delay_min_s"][k] >= 0]
            udp[c] = {"flows": sum(1 for i in act if class_of[i] == c), "sent": sent, "received": recv,
                      "loss": round(metrics.loss_rate(sent, recv), 6),
                      "mean_ms": round(1e3 * sum(r["udp_delay_sum_s"][k] for k in ks) / recv, 3)
                      if recv else None,
                      "min_ms": round(1e3 * min(mins), 3) if mins else None}
        return {"start_s": a, "end_s": b,
                "n_flows_by_class": {c: sum(1 for v in class_of.values() if v == c) for c in CLASSES},
                "class_avg_per_flow_kbps": {c: round(avg[c] / 1e3, 3) if c in avg else None
                                            for c in CLASSES},
                "class_total_kbps": {c: round(totals[c] / 1e3, 3) for c in CLASSES},
                "total_kbps": round(sum(totals.values()) / 1e3, 3),
                "jain": round(metrics.jain_index(list(thr.values())), 6) if thr else None,
                "udp_class": udp}

    def counts(a: float, b: float) -> dict[str, Any]:
        out = {}
        ks = bins(a, b)
        for c in CLASSES:
            r = cls_raw[c]
            arrivals = sum(r["arrivals"][k] for k in ks)
            drops = ns3common.drop_counts({reason: sum(v[k] for k in ks) for reason, v in r["drops"].items()})
            total = sum(drops.values())
            out[c] = {"arrivals": arrivals, "drops": drops, "drops_total": total,
                      "loss": round(total / arrivals, 6) if arrivals else None}
        return out

    def occupancy(a: float, b: float) -> float:
        xs = [q[k] for k in bins(a, b) if k < len(q)]
        return round(statistics.fmean(xs), 4)

    spans = [(p["name"], float(p["start_s"]), float(p["end_s"])) for p in phases]
    bott = raw["bottleneck"]
    rate_pps = raw["params"]["bottleneck_mbps"] * 1e6 / (8 * raw["params"]["packet_bytes"])
    run_counts = counts(0, dur)
    in_bins = sum(run_counts[c]["arrivals"] for c in CLASSES)
    if in_bins > bott["arrivals"]:
        raise RuntimeError(f"class arrivals {in_bins} > the queue disc's {bott['arrivals']}")
    return {
        "queue": raw["queue"], "tcp": raw["tcp"], "seed": raw["seed"], "duration_s": dur,
        "segment_bytes": raw["segment_bytes"], "params": raw["params"],
        "phases": {n: block(a, b) for n, a, b in spans},
        "run": block(0.0, dur),
        "switch": {"bottleneck": {"switch": "r1", "port": "bottleneck"},
                   "ports": {BOTTLENECK_NAME: {"run": run_counts,
                                               "phases": {n: counts(a, b) for n, a, b in spans}}},
                   "occupancy": {"mean_pkts_by_phase": {n: {"total": occupancy(a, b)}
                                                        for n, a, b in spans + [("run", 0.0, dur)]}}},
        "bottleneck": {"rate_pps": rate_pps, "arrivals": bott["arrivals"],
                       "drops_total": bott["drops_total"],
                       "drops": ns3common.drop_counts(bott["drops"])},
        "mmapp": mmapp_totals(raw.get("udp_senders", [])),
    }


def mmapp_totals(senders: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The MM_APP senders' counters summed (mm_app.h Summary: mmapp.py run_sender's keys)."""
    mm = [u["summary"] for u in senders if u["summary"]["mode"] == "mmapp"]
    return {"flows": len(mm), **{k: sum(int(m[k]) for m in mm)
                                 for k in ("sent", "cuts", "ups", "timeouts")}}


# ---------------------------------------------------------------------------
# The compared metrics: tools/paper_compare.py's definitions of the mcdt rows, as numbers
# ---------------------------------------------------------------------------

Runs = Mapping[str, Mapping[str, Any]]  #: algorithm -> summary, one run (or one ns-3 seed)


def _port(s: Mapping[str, Any]) -> Mapping[str, Any]:
    bn = s["switch"]["bottleneck"]
    return s["switch"]["ports"][f"{bn['switch']}:{bn['port']}"]


def _phase(s: Mapping[str, Any], phase: str) -> Mapping[str, Any]:
    return s["run"] if phase == "run" else s["phases"][phase]


def queue_delay_ms(runs: Runs, algo: str, phase: str) -> float:
    """paper_compare m_queue_delay_ms: the phase's mean queue over the link's packet rate."""
    s = runs[algo]
    q = s["switch"]["occupancy"]["mean_pkts_by_phase"][phase]["total"]
    return 1000 * float(q) / float(s["bottleneck"]["rate_pps"])


def propagation_floor_ms(runs: Runs) -> float:
    """paper_compare _propagation_floor_ms: the smallest one-way delay of any UDP packet
    under any algorithm of the run."""
    return min(float(c["min_ms"]) for s in runs.values() for c in s["run"]["udp_class"].values()
               if c and c.get("min_ms") is not None)


def udp_queueing_ms(runs: Runs, algo: str, phase: str, cls: str) -> Optional[float]:
    """paper_compare m_udp_queueing_ms: a UDP class's mean one-way delay minus the floor."""
    u = _phase(runs[algo], phase)["udp_class"].get(cls)
    if not u or u.get("mean_ms") is None:
        return None
    return float(u["mean_ms"]) - propagation_floor_ms(runs)


def class_loss_pct(runs: Runs, algo: str, phase: str, cls: str) -> Optional[float]:
    """paper_compare m_class_loss_pct: a class's drops / arrivals at the bottleneck."""
    p = _port(runs[algo])
    c = p["run"][cls] if phase == "run" else p["phases"][phase][cls]
    return 100 * c["drops_total"] / c["arrivals"] if c["arrivals"] else None


def total_loss_pct(runs: Runs, algo: str, phase: str) -> Optional[float]:
    """paper_compare m_total_loss_pct: all classes' drops / arrivals at the bottleneck."""
    p = _port(runs[algo])
    counts = p["run"] if phase == "run" else p["phases"][phase]
    arr = sum(c["arrivals"] for c in counts.values())
    return 100 * sum(c["drops_total"] for c in counts.values()) / arr if arr else None


def class_total_kbps(runs: Runs, algo: str, phase: str, cls: str) -> float:
    """paper_compare m_class_total_kbps: a class's receive-side throughput."""
    return float(_phase(runs[algo], phase)["class_total_kbps"][cls])


def class_kbps(runs: Runs, algo: str, phase: str, cls: str) -> Optional[float]:
    """paper_compare class_kbps: a class's average per-flow throughput."""
    v = _phase(runs[algo], phase)["class_avg_per_flow_kbps"][cls]
    return None if v is None else float(v)


FUNCTIONS: dict[str, Callable[..., Optional[float]]] = {
    "queue_delay_ms": queue_delay_ms, "udp_queueing_ms": udp_queueing_ms,
    "class_loss_pct": class_loss_pct, "total_loss_pct": total_loss_pct,
    "class_total_kbps": class_total_kbps, "class_kbps": class_kbps}

CLASS_LABEL = {"TCP": "FTP-TCP", "TAGGED": "MM-UDP (MM_APP, tagged)", "UNTAGGED": "CBR-UDP (untagged)"}


def metric_rows(scenario: str, phases: Sequence[str]) -> list[tuple[str, str, int, str]]:
    """(metric id, label, digits, unit) of a scenario's table; the id is
    "fn/phase[/class]", the paper_compare function and its arguments."""
    rows: list[tuple[str, str, int, str]] = []
    if scenario == "mcdt-s2":
        rows += [(f"queue_delay_ms/{p}", f"queueing delay, mean (Fig. 6), step {p}", 1, "ms")
                 for p in phases]
    if scenario == "mcdt-s3":
        rows += [(f"total_loss_pct/{p}", f"total drop rate (Fig. 7), {'the run' if p == 'run' else 'step ' + p}",
                  1, "%") for p in ["run", *phases]]
        rows += [(f"class_loss_pct/{p}/TAGGED",
                  f"MM-UDP drop rate (Fig. 7), {'the run' if p == 'run' else 'step ' + p}", 1, "%")
                 for p in ["run", *phases]]
    for c in CLASSES:
        if not (scenario == "mcdt-s3" and c == "TAGGED"):
            rows.append((f"class_loss_pct/run/{c}", f"{CLASS_LABEL[c]} drop rate (Fig. 7), the run", 1, "%"))
    if scenario == "mcdt-s2":
        rows.append(("total_loss_pct/run", "total drop rate, the run", 1, "%"))
    for c in CLASSES:
        rows.append((f"class_total_kbps/run/{c}", f"{CLASS_LABEL[c]} throughput (Fig. 8), the run", 0, "kbit/s"))
    if scenario == "mcdt-s3":
        rows.append((f"class_total_kbps/{phases[-1]}/TCP", f"FTP-TCP throughput (Fig. 8), step {phases[-1]}",
                     0, "kbit/s"))
    if scenario == "mcdt-s2":
        rows.append((f"class_kbps/{phases[-1]}/UNTAGGED",
                     f"a CBR flow's throughput, step {phases[-1]} (of 1 000)", 0, "kbit/s"))
    rows.append(("udp_queueing_ms/run/TAGGED", "MM-UDP queueing delay (one-way minus the floor), the run",
                 1, "ms"))
    return rows


def all_metric_ids(phases: Sequence[str]) -> list[str]:
    """Every metric the JSON keeps per run and queue: the table's and, per step, each
    class's throughput and drop rate."""
    ids = [f"queue_delay_ms/{p}" for p in ["run", *phases]]
    for p in ["run", *phases]:
        ids.append(f"total_loss_pct/{p}")
        for c in CLASSES:
            ids += [f"class_loss_pct/{p}/{c}", f"class_total_kbps/{p}/{c}", f"class_kbps/{p}/{c}"]
        ids += [f"udp_queueing_ms/{p}/TAGGED", f"udp_queueing_ms/{p}/UNTAGGED"]
    return ids


def compute(runs: Runs, algo: str, metric_id: str) -> Optional[float]:
    fn, *args = metric_id.split("/")
    try:
        v = FUNCTIONS[fn](runs, algo, *args)
    except KeyError:
        return None
    return None if v is None else round(float(v), 4)


def run_metrics(runs: Runs, algo: str, ids: Sequence[str]) -> dict[str, Optional[float]]:
    return {m: compute(runs, algo, m) for m in ids}


def _agg(per: Sequence[Mapping[str, Optional[float]]], ids: Sequence[str]) -> dict[str, Any]:
    out = {}
    for m in ids:
        xs = [p[m] for p in per]
        out[m] = spread(xs) if xs and all(x is not None for x in xs) else None
    return out


def per_run_metrics(scenario_runs: Sequence[Mapping[str, Any]], phases: Sequence[str]) -> list[dict[str, Any]]:
    """Every metric of every ns-3 run (queue, TCP model, seed); a seed's propagation floor
    is over its three queues, as a BMv2 run's over its algorithms."""
    ids = all_metric_ids(phases)
    by: dict[tuple[str, int], dict[str, Any]] = {}
    for s in scenario_runs:
        by.setdefault((s["tcp"], s["seed"]), {})[s["algorithm"]] = s
    return [{"queue": s["algorithm"], "tcp": s["tcp"], "seed": s["seed"],
             "metrics": run_metrics(by[(s["tcp"], s["seed"])], s["algorithm"], ids)}
            for s in scenario_runs]


def ns3_aggregate(per_run: Sequence[Mapping[str, Any]], phases: Sequence[str]) -> dict[str, Any]:
    """Per TCP model and queue, median [range] over seeds of every metric (per_run_metrics)."""
    ids = all_metric_ids(phases)
    out: dict[str, Any] = {}
    for tcp in TCP_MODELS:
        out[tcp] = {}
        for q in QUEUES:
            runs = sorted((r for r in per_run if r["tcp"] == tcp and r["queue"] == q),
                          key=lambda r: r["seed"])
            if runs:
                out[tcp][q] = _agg([r["metrics"] for r in runs], ids)
    return out


def load_bmv2_run(run: str) -> dict[str, Any]:
    out = {}
    for algo in BMV2_ALGORITHMS:
        path = REPO / "docs" / "results" / run / algo / "summary.json.gz"
        try:
            with gzip.open(path, "rt") as f:
                out[algo] = json.load(f)
        except OSError as e:
            raise ConfigError(f"cannot read {path}: {e}") from e
    return out


def bmv2_aggregate(runs: Sequence[str], phases: Sequence[str]) -> dict[str, Any]:
    """The same metrics from the archived BMv2 runs (docs/results/<run>/<algorithm>/)."""
    ids = all_metric_ids(phases)
    per = {a: [] for a in BMV2_ALGORITHMS}
    for run in runs:
        summaries = load_bmv2_run(run)
        for a in BMV2_ALGORITHMS:
            per[a].append(run_metrics(summaries, a, ids))
    return {"runs": list(runs), "metrics": {a: _agg(per[a], ids) for a in BMV2_ALGORITHMS}}


def comparison_runs(scenario: str) -> list[str]:
    spec = yaml.safe_load(COMPARISON.read_text())
    return list(spec[scenario]["runs"])


# ---------------------------------------------------------------------------
# Table
# ---------------------------------------------------------------------------

#: what the mcdt paper states for these rows (docs/paper-comparison.yaml, mcdt-s2/-s3)
PAPER = {
    ("mcdt-s2", "queue_delay_ms/*", "MCDT"): "< 40 ms",
    ("mcdt-s2", "udp_queueing_ms/run/TAGGED", "MCDT"): "lowest (§V)",
    ("mcdt-s2", "class_loss_pct/run/TAGGED", "MCDT"): "lowest (§V)",
    ("mcdt-s2", "class_loss_pct/run/TCP", "MCDT"): "low (§III)",
    ("mcdt-s2", "class_total_kbps/run/TCP", "MCDT"): "high (§III)",
    ("mcdt-s2", "class_kbps/cbr8/UNTAGGED", "MCDT"): "restricted (§III)",
    ("mcdt-s3", "total_loss_pct/*", "MCDT"): "highest (Fig. 7)",
    ("mcdt-s3", "class_loss_pct/*/TAGGED", "MCDT"): "low (Fig. 7)",
    ("mcdt-s3", "class_total_kbps/run/TCP", "MCDT"): "high (Fig. 8)",
    ("mcdt-s3", "class_total_kbps/mm30/TCP", "MCDT"): "high (Fig. 8)",
}


def paper_cell(scenario: str, metric_id: str, queue: str) -> str:
    fn, *rest = metric_id.split("/")
    for key in (metric_id, "/".join([fn, "*", *rest[1:]])):
        if (scenario, key, queue) in PAPER:
            return PAPER[(scenario, key, queue)]
    return ""


def render_table(results: Mapping[str, Any]) -> str:
    """The Markdown tables of docs/ns3/mcdt.md from mcdt.json."""
    n_seeds = results["seeds"]
    lines: list[str] = []
    for scen in SCENARIOS:
        r = results["scenarios"][scen]
        ns3, bm = r["ns3"], r["bmv2"]
        phases = [p["name"] for p in r["scenario"]["phases"]]
        lines.append(f"**{scen}** ({r['scenario']['title']})")
        lines.append("")
        lines.append(f"| metric | queue | ns-3 TcpLinuxReno ({n_seeds} seeds) | "
                     f"ns-3 TcpNewReno, ns-2 kind ({n_seeds} seeds) | "
                     f"BMv2, Linux TCP ({len(bm['runs'])} runs) | paper |")
        lines.append("|---|---|---:|---:|---:|---|")
        for mid, label, nd, unit in metric_rows(scen, phases):
            for q in TABLE_QUEUES:
                def c(block: Optional[Mapping[str, Any]]) -> str:
                    return cell(None if block is None else block.get(mid), nd, unit)
                lines.append(f"| {label} | {q} | {c(ns3['LinuxReno'].get(q))} | "
                             f"{c(ns3['NewReno'].get(q))} | {c(bm['metrics'].get(q))} | "
                             f"{paper_cell(scen, mid, q)} |")
        lines.append("")
        lines.append(f"BMv2 runs: {', '.join(bm['runs'])}.")
        lines.append("")
    lines.append("Median [range]. FQ_CODEL runs in ns-3 only, MCDT on BMv2 only (—). Drop rates: "
                 "drops / arrivals at the bottleneck queue; throughput: received IP bytes; "
                 "queueing delay: the mean queue over the link's 1 250 packets/s (Fig. 6), or "
                 "the MM-UDP packets' mean one-way delay minus the smallest of the run "
                 "(tools/paper_compare.py's definitions). Data: docs/ns3/mcdt.json "
                 "(`tools/ns3_mcdt.py run`).")
    return "\n".join(lines) + "\n"


def write_table(results: Mapping[str, Any]) -> None:
    """Put the table into docs/ns3/mcdt.md between its markers."""
    ns3common.splice_table(DOC_PAGE, "mcdt", render_table(results))


# ---------------------------------------------------------------------------


def cmd_run(seeds: int, scenarios: Sequence[str]) -> dict[str, Any]:
    binary = build()
    out: dict[str, Any] = {"schema": "mmaqm-ns3-mcdt/1", "ns3_version": NS3_VERSION, "seeds": seeds,
                           "tcp_models": dict(ns3common.TCP_MODELS), "scenarios": {}}
    for scen in scenarios:
        per, common, phases = scenario_args(scen)
        _t, scen_p, _p = experiment_files(scen)
        title = yaml.safe_load(scen_p.read_text()).get("description", "").strip()
        names = [p["name"] for p in phases]
        summaries = []
        for q in QUEUES:
            for tcp in TCP_MODELS:
                for seed in range(1, seeds + 1):
                    s = summarize(run_one(binary, {**common, **per[q]}, tcp, seed), phases)
                    s["algorithm"] = q
                    summaries.append(s)
                    print(f"ns3-mcdt: {scen} {q} {tcp} seed {seed}: loss TCP "
                          f"{class_loss_pct({q: s}, q, 'run', 'TCP'):.1f} %, total "
                          f"{total_loss_pct({q: s}, q, 'run'):.1f} %", file=sys.stderr)
        per_run = per_run_metrics(summaries, names)
        out["scenarios"][scen] = {
            "scenario": {"title": title, "common": common, "queues": per, "phases": phases},
            "runs": summaries, "run_metrics": per_run, "ns3": ns3_aggregate(per_run, names),
            "bmv2": bmv2_aggregate(comparison_runs(scen), names)}
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    return ns3common.cli("mcdt", __doc__, argv, build=build,
                          run=lambda seeds: cmd_run(seeds, SCENARIOS),
                          render_table=render_table, write_table=write_table,
                          out_json=OUT_JSON, default_seeds=DEFAULT_SEEDS)


if __name__ == "__main__":
    sys.exit(main())
