#!/usr/bin/env python3
"""The D-CBT paper's scenario (dcbt section 5, Fig. 7; metrics of section 6, Figs. 8
and 11) in ns-3, beside the BMv2 runs: an independent simulator with its own drop-tail,
RED and FQ-CoDel, under two TCP models, and the harness's MM_APP ported to ns-3
(tools/ns3sim/mm_app.h) (docs/ns3.md, docs/ns3/dcbt.md).

    tools/ns3_dcbt.py build          compile tools/ns3sim/dcbt.cc against the ns3 wheel
    tools/ns3_dcbt.py run            build, run 4 queues x 3 TCP models x --seeds, write
                                     docs/ns3/dcbt.json and the table in docs/ns3/dcbt.md
    tools/ns3_dcbt.py table          re-render docs/ns3/dcbt.md's table from
                                     docs/ns3/dcbt.json

The scenario's numbers come from the BMv2 experiment dcbt-fig7's own files
(topologies/experiments.yaml -> topology, scenario, policies); the metrics are computed
with the project's functions (mmaqm_exp.analysis.phase_flow_metrics, mmaqm_exp.metrics),
so the names match summary.json. Needs the ns3 wheel (make ns3-deps) and g++. Exit 2:
configuration problem (no wheel, a file unreadable or unsupported); 1: a build or a
simulation failed.
"""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "topologies"))
from mmaqm_exp import metrics  # noqa: E402
from mmaqm_exp.analysis import FlowData, phase_flow_metrics, tcp_ip_bytes  # noqa: E402
from mmaqm_exp.samples import RecvSample  # noqa: E402
from mmaqm_exp.scenario import CLASSES, Scenario, ScenarioError, load_scenario  # noqa: E402

sys.path.insert(0, str(REPO / "tools"))
import ns3common  # noqa: E402
from ns3common import ConfigError, cell as _cell, ns3_dirs, spread  # noqa: E402,F401

EXPERIMENTS = REPO / "topologies" / "experiments.yaml"
EXPERIMENT = "dcbt-fig7"
COMPARISON = REPO / "docs" / "paper-comparison.yaml"
RESULTS_DIR = REPO / "docs" / "results"
OUT_JSON = REPO / "docs" / "ns3" / "dcbt.json"
DOC_PAGE = REPO / "docs" / "ns3" / "dcbt.md"
MM_APP_HEADER = ns3common.SIM_DIR / "mm_app.h"

#: ns-3 queues: DROP_TAIL and RED as the experiment's policy file sets them, RED_WAIT
#: as its wait variant (RED with ns-2's wait between early drops, the paper's RED)
NS3_ALGORITHMS = ("DROP_TAIL", "RED", "RED_WAIT", "FQ_CODEL")
WAIT_POLICIES = REPO / "topologies" / "policies" / "dcbt-fig7-wait.yaml"
WAIT_SECTION = "dcbt-wait"  #: docs/paper-comparison.yaml: the wait runs' rows
#: FQ-CoDel (ns-3's defaults) with the drop-tail policy's limit: the baseline a user would pick
FQ_CODEL_LIMIT_FROM = "DROP_TAIL"
#: BMv2 columns: our drop-tail and RED (RED_WAIT: the wait runs' RED), our D-CBT for reference
BMV2_ALGORITHMS = ("DROP_TAIL", "RED", "RED_WAIT", "DCBT")
TABLE_ALGORITHMS = ("DROP_TAIL", "RED", "RED_WAIT", "FQ_CODEL", "DCBT")
#: the two shared TCP models (docs/ns3.md) and a variant of the ns-2 kind: NewReno with a
#: 1 s minimum RTO (RFC 2988's, ns-3's default) instead of 200 ms, the timer the blast
#: period's RED results turn on
TCP_MODELS = ("LinuxReno", "NewReno", "NewReno-RTO1s")
#: variant -> (the shared model it starts from, attribute overrides)
TCP_VARIANTS = {"NewReno-RTO1s": ("NewReno", {"ns3::TcpSocketBase::MinRto": "1s"})}
TCP_HEADERS = {"LinuxReno": "ns-3 TcpLinuxReno", "NewReno": "ns-3 TcpNewReno, ns-2 kind",
               "NewReno-RTO1s": "ns-3 TcpNewReno, min RTO 1 s"}
NS3_VERSION = ns3common.NS3_VERSION
DEFAULT_SEEDS = 5
START_SPREAD_MS = 10.0  #: every flow starts uniformly in [start, start + 10 ms) (seeded)
#: the BMv2 harness rate-limits only r1's egress (topologies/topos/dcbt-dumbbell.json
#: notes); the hosts' links in ns-3 are 1 Gbit/s, so they never queue
ACCESS_MBPS = 1000.0
RUN = "run"  #: pseudo-phase: the whole scenario
PHASE_LABELS = {"tcp+mm": "0–10 s", "blast": "10–20 s", "blast+tcp": "20–30 s", RUN: "0–30 s"}


def build(force: bool = False) -> Path:
    """Compile tools/ns3sim/dcbt.cc (also when mm_app.h is newer than the binary)."""
    binary = ns3common.BUILD_DIR / "dcbt"
    stale = binary.is_file() and binary.stat().st_mtime < MM_APP_HEADER.stat().st_mtime
    return ns3common.build("dcbt", force or stale)


# ---------------------------------------------------------------------------
# Scenario (from the BMv2 experiment's files)
# ---------------------------------------------------------------------------


def experiment_files() -> tuple[Path, Path, Path]:
    """The topology, scenario and policy files of the BMv2 experiment dcbt-fig7."""
    try:
        exp = yaml.safe_load(EXPERIMENTS.read_text())["experiments"][EXPERIMENT]
    except (OSError, KeyError, TypeError, yaml.YAMLError) as e:
        raise ConfigError(f"{EXPERIMENTS}: no experiment {EXPERIMENT}: {e}") from e
    return tuple(REPO / exp[k] for k in ("topology", "scenario", "policies"))  # type: ignore[return-value]


def load_dcbt_scenario() -> Scenario:
    _, scen, _ = experiment_files()
    try:
        return load_scenario(scen)
    except (OSError, ScenarioError) as e:
        raise ConfigError(f"cannot read {scen}: {e}") from e


def scenario_args() -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Per ns-3 queue its arguments, and the common arguments, from the BMv2
    experiment's topology, scenario and policy files."""
    topo_p, _, pol_p = experiment_files()
    try:
        topo = json.loads(topo_p.read_text())
        pols = yaml.safe_load(pol_p.read_text())
        wait_pols = yaml.safe_load(WAIT_POLICIES.read_text())
    except (OSError, ValueError, yaml.YAMLError) as e:
        raise ConfigError(f"cannot read the dcbt-fig7 files: {e}") from e
    sc = load_dcbt_scenario()
    b = topo["bottleneck"]
    links = {(a, c): (d, r) for a, c, d, r in topo["links"]}
    bott_delay, bott_mbps = links[(b["from"], b["to"])]
    groups, access_delays = [], set()
    mm: dict[str, Any] = {}
    cbr: dict[str, Any] = {}
    tcp: dict[str, Any] = {}
    for g in sc.groups:
        for host, router in ((g.src, b["from"]), (g.dst, b["to"])):
            if (host, router) not in links:
                raise ConfigError(f"{topo_p}: {host} is not on {router}'s side")
            access_delays.add(links[(host, router)][0])
        groups.append(f"{g.kind}:{g.count}:{g.start_s:g}:{g.stop_s:g}:{g.src}:{g.dst}")
        p = dict(g.params)
        if g.kind == "tcp":
            if p["cc"] != "reno":
                raise ConfigError(f"flows[{g.index}]: cc {p['cc']} (ns-3 runs Reno models only)")
            tcp.setdefault("packetBytes", p["packet_bytes"])
            tcp.setdefault("maxWindowPkts", p["max_window_pkts"])
            if (tcp["packetBytes"], tcp["maxWindowPkts"]) != (p["packet_bytes"], p["max_window_pkts"]):
                raise ConfigError("TCP groups with different packet sizes or windows")
        elif g.kind == "mmapp":
            want = {"scales": ",".join(f"{x:g}" for x in p["scales_kbps"]),
                    "mmInitialScale": p["initial_scale"], "mmFbTimeoutS": p["fb_timeout_s"],
                    "udpPacketBytes": p["packet_bytes"], "taggedDscp": g.dscp}
            if mm and mm != want:
                raise ConfigError("MM_APP groups with different parameters")
            mm = want
        else:
            want = {"cbrKbps": g.cbr_rate_kbps(bott_mbps * 1e3), "cbrDscp": g.dscp,
                    "udpPacketBytes": p["packet_bytes"]}
            if cbr and cbr != want:
                raise ConfigError("CBR groups with different parameters")
            cbr = want
    if len(access_delays) != 1:
        raise ConfigError(f"{topo_p}: the hosts' links differ in delay: {sorted(access_delays)}")
    if mm and cbr and mm["udpPacketBytes"] != cbr["udpPacketBytes"]:
        raise ConfigError("MM_APP and CBR packet sizes differ")
    # ns-3's classifier tags one DSCP: the MM_APP flows'; the CBR flows' must be untagged
    if mm.get("taggedDscp", 46) not in sc.tagged_dscp or cbr.get("cbrDscp", 0) in sc.tagged_dscp:
        raise ConfigError(f"MM_APP must be tagged and CBR not (tagged DSCPs {list(sc.tagged_dscp)})")
    common = {"groups": ";".join(groups), "durationS": sc.duration_s,
              "bottleneckMbps": bott_mbps, "bottleneckDelayMs": bott_delay,
              "accessMbps": ACCESS_MBPS, "accessDelayMs": access_delays.pop(),
              **tcp, **mm, **cbr, "startSpreadMs": START_SPREAD_MS}
    per: dict[str, dict[str, Any]] = {}
    for name in NS3_ALGORITHMS:
        if name == "RED_WAIT":
            p = wait_pols["RED"]
            if not p.get("wait"):
                raise ConfigError(f"{WAIT_POLICIES}: RED has no wait")
        else:
            p = pols[FQ_CODEL_LIMIT_FROM if name == "FQ_CODEL" else name]
        if name == "FQ_CODEL":
            per[name] = {"queue": "fqcodel", "limitPkts": p["queue_limit_pkts"]}
        elif p["algorithm"] == "DROP_TAIL":
            per[name] = {"queue": "fifo", "limitPkts": p["queue_limit_pkts"]}
        elif p["algorithm"] == "RED":
            if p.get("ecn"):
                raise ConfigError(f"{name}: ECN is not passed to ns-3 here")
            # our RED's options as the policy sets them (absent = off): gentle, wait
            # (ns-2's spacing of early drops), idle decay (bandwidth_pps)
            per[name] = {"queue": "red", "limitPkts": p["queue_limit_pkts"],
                         "minThPkts": p["min_th_pkts"], "maxThPkts": p["max_th_pkts"],
                         "maxP": p["max_p"], "qW": p["ewma_weight"],
                         "gentle": str(bool(p.get("gentle", False))).lower(),
                         "wait": str(bool(p.get("wait", False))).lower(),
                         "idleDecay": str(p.get("bandwidth_pps") is not None).lower()}
        else:
            raise ConfigError(f"{name}: algorithm {p['algorithm']} has no ns-3 counterpart")
    return per, common


def run_one(binary: Path, args: Mapping[str, Any], tcp: str, seed: int,
            duration_s: Optional[float] = None) -> dict[str, Any]:
    """Run the compiled scenario once with TCP model (or variant) ``tcp``; return its raw
    JSON, whose "tcp" is ``tcp``."""
    base, extra = TCP_VARIANTS.get(tcp, (tcp, {}))
    a = dict(args, tcp=base, seed=seed, **extra)
    if duration_s is not None:
        a["durationS"] = duration_s
    raw = ns3common.run_binary(binary, a)
    raw["tcp"] = tcp
    return raw


# ---------------------------------------------------------------------------
# Metrics (summary.json's names)
# ---------------------------------------------------------------------------


def bottleneck_block(bins: Mapping[str, Any], bin_s: float, a_s: float, b_s: float
                     ) -> dict[str, Any]:
    """Per class: arrivals, drops by reason and the loss over the bins in [a_s, b_s),
    as the BMv2 summary's switch.ports[...].phases[...] (drops / arrivals)."""
    lo, hi = int(round(a_s / bin_s)), int(round(b_s / bin_s))
    out: dict[str, Any] = {}
    for c in CLASSES:
        blk = bins[c]
        arr = sum(blk["arrivals"][lo:hi])
        drops: dict[str, int] = {}
        for reason, v in blk["drops"].items():
            k = ns3common.drop_reason(reason)
            drops[k] = drops.get(k, 0) + sum(v[lo:hi])
        tot = sum(drops.values())
        out[c] = {"arrivals": arr, "drops": drops, "drops_total": tot,
                  "loss": round(tot / arr, 6) if arr > 0 else None}
    return out


def flow_data(raw: Mapping[str, Any], sc: Scenario) -> dict[int, FlowData]:
    """The run's flows as mmaqm_exp.analysis FlowData (times relative to t0 = 0):
    TCP: the payload bytes its sink read per bin, at the bin's centre, as the IP bytes
    of the full-size packets that carried them (analysis.tcp_ip_bytes, as the BMv2
    runs count); UDP: the receiver's rows, the sender's log (t_ns, sent so far)."""
    bin_s = float(raw["bin_s"])
    seg, pkt = int(raw["segment_bytes"]), int(raw["packet_bytes"])
    out: dict[int, FlowData] = {}
    for f in sc.flows:
        fid = str(f.flow_id)
        if f.kind == "tcp":
            bins = raw["tcp_rx_bytes_payload"][fid]
            out[f.flow_id] = FlowData(f, [((k + 0.5) * bin_s, tcp_ip_bytes(b, seg, pkt))
                                          for k, b in enumerate(bins) if b])
            continue
        u = raw["udp"][fid]
        r = u["rows"]
        rows = [RecvSample(f.flow_id, s, ts, tr, by, scl, d) for s, ts, tr, by, scl, d in
                zip(r["seq"], r["send_ts_ns"], r["recv_ts_ns"], r["bytes"], r["scale"], r["dscp"])]
        fd = FlowData(f, [(row.recv_ts_ns / 1e9, row.bytes) for row in rows], udp_rows=rows,
                      send_log=[(int(t), int(sent)) for t, _ev, _sc, _rate, _srtt, sent in u["log"]],
                      sent_pkts=int(u["summary"]["sent"]))
        out[f.flow_id] = fd
    return out


def summarize(raw: Mapping[str, Any], sc: Scenario, bottleneck_kbps: float) -> dict[str, Any]:
    """One run's metrics, named as in the BMv2 summary.json, per phase and over the run."""
    fds = flow_data(raw, sc)
    bin_s, qs = float(raw["bin_s"]), float(raw["queue_sample_s"])
    q = [float(x) for x in raw["queue_pkts"]]
    q_t = [(k + 0.5) * qs for k in range(len(q))]
    phases: dict[str, Any] = {}
    for p in sc.phases:
        pm = phase_flow_metrics(fds, 0, p.start_s, p.end_s, bottleneck_kbps)
        udp = {}
        for c in ("TAGGED", "UNTAGGED"):
            u = pm["udp_class"][c]
            udp[c] = None if u is None else {
                k: u[k] for k in ("flows", "sent", "received", "loss", "count", "mean_ms",
                                  "min_ms", "max_ms", "std_ms")}
            if u is not None:
                cdf = u["delay_cdf_ms"]
                udp[c]["p95_ms"] = cdf[95] if cdf else None
        phases[p.name] = {
            "per_flow_kbps": pm["per_flow_kbps"],
            "class_avg_per_flow_kbps": pm["class_avg_per_flow_kbps"],
            "class_total_kbps": pm["class_total_kbps"], "total_kbps": pm["total_kbps"],
            "utilization": pm["utilization"], "fair_share_kbps": pm["fair_share_kbps"],
            "jain": pm["jain"], "udp_class": udp,
            "bottleneck": bottleneck_block(raw["bottleneck_bins"], bin_s, p.start_s, p.end_s),
            "queue_mean_pkts": round(metrics.time_weighted_mean(q_t, q, p.start_s, p.end_s,
                                                                initial=q[0] if q else 0.0), 4),
        }
    b = raw["bottleneck"]
    mm = {fid: {k: u["summary"][k] for k in ("sent", "final_scale", "cuts", "ups", "timeouts")}
          for fid, u in raw["udp"].items() if u["kind"] == "mmapp"}
    return {"queue": raw["queue"], "tcp": raw["tcp"], "seed": raw["seed"],
            "duration_s": raw["duration_s"], "segment_bytes": raw["segment_bytes"],
            "phases": phases,
            "run": {"bottleneck": bottleneck_block(raw["bottleneck_bins"], bin_s, 0.0,
                                                   float(raw["duration_s"]))},
            "bottleneck_totals": {"arrivals": b["arrivals"], "drops_total": b["drops_total"]},
            "mmapp": mm, "receivers": raw["receivers"]}


def _pct(x: Optional[float]) -> Optional[float]:
    return None if x is None else 100.0 * x


def run_metrics(phases: Mapping[str, Any], run_loss: Mapping[str, Optional[float]],
                queue_mean: Mapping[str, Optional[float]],
                bottleneck: Mapping[str, Mapping[str, Any]]) -> dict[str, Optional[float]]:
    """The compared numbers of one run of one algorithm, keyed "<metric>@<phase>".
    ``phases``: summary.json-shaped phase blocks (class_avg_per_flow_kbps, jain,
    udp_class); ``bottleneck``: per phase, per class {"loss": ...}; ``run_loss``: per
    class over the run; ``queue_mean``: per phase."""
    out: dict[str, Optional[float]] = {}
    for name, ph in phases.items():
        avg = ph["class_avg_per_flow_kbps"]
        for c in CLASSES:
            out[f"kbps_{c}@{name}"] = avg.get(c)
            out[f"loss_{c}@{name}"] = _pct(bottleneck[name][c]["loss"])
        tag, tcp = avg.get("TAGGED"), avg.get("TCP")
        out[f"tagged_over_tcp@{name}"] = (100.0 * (tag / tcp - 1.0)) if tag is not None and tcp else None
        out[f"jain@{name}"] = ph["jain"]
        t = ph["udp_class"].get("TAGGED")
        out[f"delay_mean_ms@{name}"] = None if t is None else t["mean_ms"]
        out[f"delay_p95_ms@{name}"] = None if t is None else t["p95_ms"]
        out[f"queue_mean_pkts@{name}"] = queue_mean[name]
    for c in CLASSES:
        out[f"loss_{c}@{RUN}"] = _pct(run_loss[c])
    return out


def ns3_run_metrics(s: Mapping[str, Any]) -> dict[str, Optional[float]]:
    return run_metrics(s["phases"], {c: s["run"]["bottleneck"][c]["loss"] for c in CLASSES},
                       {n: p["queue_mean_pkts"] for n, p in s["phases"].items()},
                       {n: p["bottleneck"] for n, p in s["phases"].items()})


def _agg(per: Sequence[Mapping[str, Optional[float]]]) -> dict[str, Any]:
    return {k: spread([p[k] for p in per]) for k in per[0]} if per else {}


def ns3_aggregate(summaries: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per TCP model and algorithm, median [range] over seeds of run_metrics."""
    out: dict[str, dict[str, Any]] = {}
    for tcp in TCP_MODELS:
        out[tcp] = {}
        for algo in NS3_ALGORITHMS:
            runs = sorted((s for s in summaries if s["tcp"] == tcp and s["algorithm"] == algo),
                          key=lambda s: s["seed"])
            out[tcp][algo] = _agg([ns3_run_metrics(s) for s in runs])
    return out


def load_summary(run: str, algo: str) -> dict[str, Any]:
    d = RESULTS_DIR / run / algo
    try:
        if (d / "summary.json.gz").is_file():
            with gzip.open(d / "summary.json.gz", "rt") as f:
                return json.load(f)
        return json.loads((d / "summary.json").read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"cannot read {d}/summary.json(.gz): {e}") from e


def bmv2_run_metrics(s: Mapping[str, Any]) -> dict[str, Optional[float]]:
    """run_metrics of one archived BMv2 summary.json."""
    bt = s["switch"]["bottleneck"]
    port = s["switch"]["ports"][f"{bt['switch']}:{bt['port']}"]
    phases = {}
    for name, ph in s["phases"].items():
        t = ph["udp_class"].get("TAGGED")
        tag = None if t is None else {"mean_ms": t["mean_ms"],
                                      "p95_ms": t["delay_cdf_ms"][95] if t.get("delay_cdf_ms") else None}
        phases[name] = {"class_avg_per_flow_kbps": ph["class_avg_per_flow_kbps"], "jain": ph["jain"],
                        "udp_class": {"TAGGED": tag}}
    occ = s["switch"]["occupancy"]["mean_pkts_by_phase"]
    return run_metrics(phases, {c: port["run"][c]["loss"] for c in CLASSES},
                       {n: occ[n]["total"] for n in phases}, port["phases"])


def bmv2_aggregate(runs: Sequence[str], wait_runs: Sequence[str]) -> dict[str, Any]:
    """The same metrics from the archived BMv2 dcbt-fig7 runs (docs/results/<run>/); RED_WAIT
    from the wait runs' RED (policies/dcbt-fig7-wait.yaml)."""
    per = {}
    for a in BMV2_ALGORITHMS:
        if a == "RED_WAIT":
            sums = [load_summary(r, "RED") for r in wait_runs]
            if not all(s["policy"].get("wait") for s in sums):
                raise ConfigError(f"a run of {list(wait_runs)} has RED without wait")
        else:
            sums = [load_summary(r, a) for r in runs]
        per[a] = [bmv2_run_metrics(s) for s in sums]
    return {"runs": list(runs), "wait_runs": list(wait_runs),
            "metrics": {a: _agg(per[a]) for a in BMV2_ALGORITHMS}}


def dcbt_runs() -> list[str]:
    spec = yaml.safe_load(COMPARISON.read_text())
    return list(spec["dcbt"]["runs"])


def wait_runs() -> list[str]:
    """The archived runs with ns-2's wait (docs/paper-comparison.yaml's dcbt-wait rows:
    the runs its rows name besides the section's own, which are the runs without)."""
    sec = yaml.safe_load(COMPARISON.read_text())[WAIT_SECTION]
    own = set(sec["runs"])
    return sorted({r for row in sec["rows"] for r in row.get("runs", []) if r not in own})


# ---------------------------------------------------------------------------
# Table
# ---------------------------------------------------------------------------

PHASES = ("tcp+mm", "blast", "blast+tcp")
ROWS = (  # (metric key, label, digits, unit, phases)
    ("kbps_TCP", "TCP, per flow", 0, "kbit/s", PHASES),
    ("kbps_TAGGED", "tagged (MM_APP), per flow", 0, "kbit/s", PHASES),
    ("kbps_UNTAGGED", "untagged (CBR), per flow", 0, "kbit/s", ("blast", "blast+tcp")),
    ("tagged_over_tcp", "tagged flow over TCP flow", 0, "%", ("tcp+mm",)),
    ("jain", "Jain's index (Fig. 11)", 3, "", PHASES),
    ("loss_TCP", "TCP loss at the bottleneck", 1, "%", (*PHASES, RUN)),
    ("loss_TAGGED", "tagged loss at the bottleneck", 1, "%", (*PHASES, RUN)),
    ("loss_UNTAGGED", "untagged loss at the bottleneck", 1, "%", ("blast", "blast+tcp")),
    ("delay_mean_ms", "tagged one-way delay, mean", 1, "ms", PHASES),
    ("delay_p95_ms", "tagged one-way delay, 95th percentile", 1, "ms", PHASES),
    ("queue_mean_pkts", "queue length, mean", 1, "pkts", PHASES),
)

#: what the dcbt paper states for these cells (docs/paper-comparison.yaml, dcbt)
PAPER = {
    ("tagged_over_tcp", "tcp+mm", "RED"): "+37 % (§6.1)",
    ("kbps_TCP", "blast", "RED"): "293 kbit/s (§6.1)",
    ("kbps_UNTAGGED", "blast", "RED"): "4 680 kbit/s (§6.1)",
    ("kbps_UNTAGGED", "blast", "DCBT"): "most of 675 kbit/s (§6.1)",
    ("kbps_UNTAGGED", "blast+tcp", "DCBT"): "most of 373 kbit/s (§6.1)",
    ("jain", "blast", "RED"): "unfair from 10 s (§6.2)",
    ("jain", "blast+tcp", "RED"): "lower still (§6.2)",
    ("jain", "blast+tcp", "DCBT"): "≈ 1, very fair (Fig. 11, read off)",
    ("loss_TCP", RUN, "DCBT"): "4.46 % (Table 1)",
    ("loss_TAGGED", RUN, "DCBT"): "11.85 % (Table 2)",
}


def render_table(results: Mapping[str, Any]) -> str:
    """The Markdown table of docs/ns3/dcbt.md from dcbt.json."""
    ns3, bm = results["ns3"], results["bmv2"]
    n = results["seeds"]
    lines = ["| metric | period | queue | "
             + " | ".join(f"{TCP_HEADERS[t]} ({n} seeds)" for t in TCP_MODELS)
             + f" | BMv2, Linux TCP ({len(bm['runs'])} runs) | paper |",
             "|---|---|---|" + "---:|" * (len(TCP_MODELS) + 1) + "---|"]
    for key, label, nd, unit, phases in ROWS:
        for ph in phases:
            k = f"{key}@{ph}"
            for algo in TABLE_ALGORITHMS:
                cells = [_cell(ns3[t][algo].get(k), nd, unit).rstrip() if algo in NS3_ALGORITHMS
                         else "—" for t in TCP_MODELS]
                b = (_cell(bm["metrics"][algo].get(k), nd, unit).rstrip()
                     if algo in BMV2_ALGORITHMS else "—")
                lines.append(f"| {label} | {PHASE_LABELS[ph]} | {algo} | {' | '.join(cells)} | "
                             f"{b} | {PAPER.get((key, ph, algo), '')} |")
    lines.append("")
    lines.append("Median [range]. Periods as dcbt §6 (fair share per flow 714 / 675 / 373 kbit/s); "
                 "loss = drops / arrivals at r1's egress; delay: MM_APP packets sent in the period. "
                 "—: not run there (ns-3 has no D-CBT; the BMv2 runs have no FQ-CoDel). "
                 "RED_WAIT: RED with ns-2's wait between early drops (policies/dcbt-fig7-wait.yaml). "
                 f"BMv2 runs: {', '.join(bm['runs'])}; RED_WAIT: {', '.join(bm['wait_runs'])}. "
                 "Data: docs/ns3/dcbt.json "
                 "(`tools/ns3_dcbt.py run`).")
    return "\n".join(lines) + "\n"


def write_table(results: Mapping[str, Any]) -> None:
    """Put the table into docs/ns3/dcbt.md between its markers."""
    ns3common.splice_table(DOC_PAGE, "dcbt", render_table(results))


# ---------------------------------------------------------------------------


def cmd_run(seeds: int, duration_s: Optional[float]) -> dict[str, Any]:
    binary = build()
    per, common = scenario_args()
    sc = load_dcbt_scenario()
    kbps = float(common["bottleneckMbps"]) * 1e3
    summaries = []
    for algo in NS3_ALGORITHMS:
        for tcp in TCP_MODELS:
            for seed in range(1, seeds + 1):
                raw = run_one(binary, {**common, **per[algo]}, tcp, seed, duration_s)
                s = summarize(raw, sc, kbps)
                s["algorithm"] = algo
                summaries.append(s)
                m = ns3_run_metrics(s)
                print(f"ns3-dcbt: {algo} {tcp} seed {seed}: Jain "
                      + " / ".join(f"{m[f'jain@{p}']:.3f}" for p in PHASES)
                      + ", TCP " + " / ".join(f"{m[f'kbps_TCP@{p}']:.0f}" for p in PHASES)
                      + " kbit/s", file=sys.stderr, flush=True)
    return {"schema": "mmaqm-ns3-dcbt/1", "ns3_version": NS3_VERSION, "seeds": seeds,
            "experiment": EXPERIMENT, "scenario": {"common": common, "queues": per},
            "tcp_models": {**ns3common.TCP_MODELS,
                           "NewReno-RTO1s": ns3common.TCP_MODELS["NewReno"].replace(
                               "min RTO 200 ms", "min RTO 1 s")},
            "runs": summaries, "ns3": ns3_aggregate(summaries),
            "bmv2": bmv2_aggregate(dcbt_runs(), wait_runs())}


def main(argv: Optional[Sequence[str]] = None) -> int:
    return ns3common.cli("dcbt", __doc__, argv, build=build,
                          run=lambda seeds: cmd_run(seeds, None),
                          render_table=render_table, write_table=write_table,
                          out_json=OUT_JSON, default_seeds=DEFAULT_SEEDS)


if __name__ == "__main__":
    sys.exit(main())
