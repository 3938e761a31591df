#!/usr/bin/env python3
"""The upta scenarios (upta §6–7.3, the seven-router Fig. 1 chain, scenarios 1–6) in ns-3,
beside the BMv2 runs: an independent simulator with its own drop-tail, RED, FQ-CoDel and
FQ (FQ-CoDel's flow queuing with CoDel off, the closest ns-3 has to the paper's WFQ) at
every router, and our FAIR_SHARE scheme rebuilt in ns-3 (FAIR_SHARE_NS3: the scheme
without the BMv2 harness), under two TCP models (docs/ns3.md, docs/ns3/upta.md).

    tools/ns3_upta.py build          compile tools/ns3sim/upta.cc against the ns3 wheel
    tools/ns3_upta.py run            build, run 6 scenarios x 5 queues x 2 TCP models x
                                     --seeds, write docs/ns3/upta.json and the table in
                                     docs/ns3/upta.md
    tools/ns3_upta.py bmv2           recompute the BMv2 columns of docs/ns3/upta.json from
                                     the archived runs (after new runs are archived)
    tools/ns3_upta.py table          re-render docs/ns3/upta.md's table from
                                     docs/ns3/upta.json

The scenarios' numbers come from the BMv2 experiments' own files (topologies/topos/
upta-fig1.json, scenarios/upta-s1.yaml … upta-s6.yaml, policies/upta.yaml); the metrics
are the compared upta rows' (docs/paper-comparison.yaml: tcp_mbps, video_hop_loss_pct,
video_e2e_loss_pct), computed as mmaqm_exp.upta_tables computes them from the BMv2
counters. Needs the ns3 wheel (make ns3-deps) and g++. Exit 2: configuration problem
(no wheel, a file unreadable or not the chain this scenario builds); 1: a build or a
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
sys.path.insert(0, str(REPO / "control-plane"))
from mmaqm_exp import upta_tables  # noqa: E402
from mmaqm_exp.topology import load_topology  # noqa: E402

sys.path.insert(0, str(REPO / "tools"))
import ns3common  # noqa: E402
from ns3common import ConfigError, cell, ns3_dirs, num, spread  # noqa: E402,F401

TOPOLOGY = REPO / "topologies" / "topos" / "upta-fig1.json"
SCENARIO_DIR = REPO / "topologies" / "scenarios"
POLICIES = REPO / "topologies" / "policies" / "upta.yaml"
COMPARISON = REPO / "docs" / "paper-comparison.yaml"
OUT_JSON = REPO / "docs" / "ns3" / "upta.json"
DOC_PAGE = REPO / "docs" / "ns3" / "upta.md"

SCENARIOS = (1, 2, 3, 4, 5, 6)
#: the ns-3 queue discs at every router's egress toward the next router
QUEUES = {"DROP_TAIL": "fifo", "RED": "red", "FQ_CODEL": "fqcodel", "FQ": "fq",
          "FAIR_SHARE_NS3": "fairshare"}
TCP_MODELS = ("LinuxReno", "NewReno")
BMV2_ALGORITHMS = ("FAIR_SHARE", "B_UPTA")
NS3_VERSION = ns3common.NS3_VERSION
DEFAULT_SEEDS = 5
START_JITTER_MS = 10.0  #: each source starts uniformly within 10 ms of its start (seeded)
#: RED: policies/upta.yaml has none (the paper's routers run WFQ). The 100-packet buffer
#: with the proportions of the project's cbt RED policy (policies/cbt-fig4.yaml: 15 / 30 of
#: 60 packets, max_p 0.1): min_th a quarter, max_th half the buffer; Floyd & Jacobson's
#: w_q = 0.002; no gentle, no wait, hard drops.
RED_MIN_TH_FRACTION, RED_MAX_TH_FRACTION = 0.25, 0.5
RED_MAX_P, RED_W_Q = 0.1, 0.002
#: the flows of the scenarios, by source host (topologies/topos/upta-fig1.json)
TCP_SRC, VIDEO_SRC, BG_SRC = "s1", "s2", "s3"
TCP_DST, VIDEO_DST, BG_DST = "d1", "d2", "d3"


def build(force: bool = False) -> Path:
    """Compile tools/ns3sim/upta.cc (only if a source is newer than the binary)."""
    return ns3common.build("upta", force)


# ---------------------------------------------------------------------------
# Scenario (from the BMv2 experiments' files)
# ---------------------------------------------------------------------------


def _chain(topo: Mapping[str, Any]) -> tuple[list[str], dict[str, str]]:
    """The routers in chain order and each host's router, from the topology's links
    (ConfigError unless it is one chain with every host on one router)."""
    routers = sorted(topo["switches"], key=lambda s: int(s[1:]))
    nxt: dict[str, str] = {}
    attach: dict[str, str] = {}
    for a, b, *_ in topo["links"]:
        sa, sb = a.split("-")[0], b.split("-")[0]
        if sa in topo["hosts"]:
            attach[sa] = sb
        elif sb in topo["hosts"]:
            attach[sb] = sa
        else:
            nxt[sa] = sb
    chain = [routers[0]]
    while chain[-1] in nxt:
        chain.append(nxt[chain[-1]])
    if chain != routers or set(attach) != set(topo["hosts"]):
        raise ConfigError(f"{TOPOLOGY}: not the chain r1 … r{len(routers)} with every host on one router")
    return chain, attach


def scenario_args(k: int) -> dict[str, Any]:
    """The arguments of tools/ns3sim/upta.cc for scenario k, read from the BMv2
    experiment's topology, scenario and policy files."""
    path = SCENARIO_DIR / f"upta-s{k}.yaml"
    try:
        topo = json.loads(TOPOLOGY.read_text())
        scen = yaml.safe_load(path.read_text())
        pols = yaml.safe_load(POLICIES.read_text())
    except (OSError, ValueError, yaml.YAMLError) as e:
        raise ConfigError(f"cannot read the upta scenario {k}: {e}") from e
    chain, attach = _chain(topo)
    if (attach[TCP_SRC], attach[VIDEO_SRC], attach[TCP_DST], attach[VIDEO_DST]) != \
            (chain[0], chain[0], chain[-1], chain[-1]):
        raise ConfigError(f"{TOPOLOGY}: s1, s2 must attach to {chain[0]} and d1, d2 to {chain[-1]}")
    links = {(a.split("-")[0], b.split("-")[0]): (float(d), float(r)) for a, b, d, r in topo["links"]}
    hops = list(zip(chain, chain[1:]))
    access = {links[(a, b)] for (a, b) in links if a in topo["hosts"] or b in topo["hosts"]}
    if len(access) != 1:
        raise ConfigError(f"{TOPOLOGY}: the host links differ: {sorted(access)}")
    (acc_delay, acc_mbps), = access
    bn = topo["bottleneck"]
    if "DROP_TAIL" not in pols or "FAIR_SHARE" not in pols:
        raise ConfigError(f"{POLICIES}: no DROP_TAIL / FAIR_SHARE policy")
    by_src: dict[str, list[Mapping[str, Any]]] = {}
    for f in scen["flows"]:
        if f.get("count", 1) != 1:
            raise ConfigError(f"{path}: a flow with count {f['count']}")
        by_src.setdefault(f["src"], []).append(f)
    (tcp,), (video,) = by_src[TCP_SRC], by_src[VIDEO_SRC]
    bg = by_src.get(BG_SRC, [])
    sizes = {f["packet_bytes"] for fs in by_src.values() for f in fs}
    if tcp["kind"] != "tcp" or video["kind"] != "cbr" or any(f["kind"] != "cbr" for f in bg) \
            or len(sizes) != 1 or len({f["rate_kbps"] for f in bg}) > 1 \
            or any((f["dst"] != BG_DST) for f in bg) or tcp["dst"] != TCP_DST or video["dst"] != VIDEO_DST:
        raise ConfigError(f"{path}: not the upta flows (tcp s1 -> d1, cbr s2 -> d2, cbr s3 -> d3, one packet size)")
    limit = int(bn["queue_limit_pkts"])
    return {"chainMbps": ",".join(f"{links[h][1]:g}" for h in hops),
            "chainDelayMs": ",".join(f"{links[h][0]:g}" for h in hops),
            "accessMbps": acc_mbps, "accessDelayMs": acc_delay, "limitPkts": limit,
            "packetBytes": sizes.pop(), "maxWindowPkts": tcp["max_window_pkts"],
            "durationS": scen["duration_s"], "tcpStartS": tcp["start_s"], "tcpStopS": tcp["stop_s"],
            "videoKbps": video["rate_kbps"], "videoStartS": video["start_s"],
            "videoStopS": video["stop_s"],
            "bgKbps": bg[0]["rate_kbps"] if bg else 1,
            "bgOn": ",".join(f"{f['start_s']:g}-{f['stop_s']:g}" for f in bg),
            "bgInRouter": chain.index(attach[BG_SRC]) + 1,
            "bgOutRouter": chain.index(attach[BG_DST]) + 1,
            "startJitterMs": START_JITTER_MS}


def queue_args(queue: str, limit_pkts: int) -> dict[str, Any]:
    """The queue disc's arguments (RED: RED_* above, scaled to the buffer)."""
    a: dict[str, Any] = {"queue": QUEUES[queue]}
    if queue == "RED":
        a.update(minThPkts=RED_MIN_TH_FRACTION * limit_pkts, maxThPkts=RED_MAX_TH_FRACTION * limit_pkts,
                 maxP=RED_MAX_P, qW=RED_W_Q)
    return a


def run_one(binary: Path, args: Mapping[str, Any], tcp: str, seed: int,
            duration_s: Optional[float] = None) -> dict[str, Any]:
    """Run the compiled scenario once; return its raw JSON."""
    a = dict(args, tcp=tcp, seed=seed)
    if duration_s is not None:
        a["durationS"] = duration_s
        a["tcpStopS"] = min(float(a["tcpStopS"]), duration_s)
        a["videoStopS"] = min(float(a["videoStopS"]), duration_s)
        periods = [tuple(map(float, p.split("-"))) for p in str(a["bgOn"]).split(",") if p]
        a["bgOn"] = ",".join(f"{s:g}-{min(e, duration_s):g}" for s, e in periods if s < duration_s)
    return ns3common.run_binary(binary, a)


# ---------------------------------------------------------------------------
# Metrics (the compared upta rows' names)
# ---------------------------------------------------------------------------


def _path_ports(raw: Mapping[str, Any], dst: str) -> list[Mapping[str, Any]]:
    """The counted egress ports on the path to dst, in path order: the chain's forward
    ports from r1, then the last router's port to dst."""
    by = {(p["switch"], p["to"]): p for p in raw["ports"]}
    last = next(p["switch"] for p in raw["ports"] if p["to"] == dst)
    out, sw = [], "r1"
    while sw != last:
        nxt = f"r{int(sw[1:]) + 1}"
        out.append(by[(sw, nxt)])
        sw = nxt
    out.append(by[(last, dst)])
    return out


def check_counts(raw: Mapping[str, Any]) -> None:
    """Every counted port's per-flow counts add up to its queue disc's own statistics
    (RuntimeError otherwise: a trace missed or double-counted packets)."""
    for p in raw["ports"]:
        fl = p["flows"].values()
        got = (sum(f["arrivals"] for f in fl), sum(f["departures"] for f in fl),
               sum(sum(f["drops"].values()) for f in fl))
        want = (p["arrivals"], p["sent"], p["drops_total"])
        if got != want:
            raise RuntimeError(f"{p['switch']}->{p['to']}: per-flow arrivals/departures/drops "
                               f"{got} != the queue disc's {want}")


#: the drop reason of upta.cc's FairShareQueueDisc (our FAIR_SHARE scheme) -> the
#: project's counter name
FAIR_SHARE_REASONS = {"Fair share drop": "UPTA_FAIR_SHARE"}


def _own_reasons(drops: Mapping[str, int]) -> dict[str, int]:
    """Drops by reason under the project's counter names, the FairShareQueueDisc's
    (our FAIR_SHARE scheme) among them (ns3common.drop_counts)."""
    return ns3common.drop_counts(drops, FAIR_SHARE_REASONS)


def flow_hops(raw: Mapping[str, Any], flow: str, dst: str) -> list[dict[str, Any]]:
    """A flow's counts at each router of its path, as mmaqm_exp.upta_tables.per_hop
    gives them from the BMv2 counters: switch, arrivals, departures, drops by reason
    (the project's counter names), local loss = drops / arrivals."""
    rows = []
    for p in _path_ports(raw, dst):
        c = p["flows"][flow]
        drops = {k: v for k, v in _own_reasons(c["drops"]).items() if v}
        rows.append({"switch": p["switch"], "arrivals": c["arrivals"], "departures": c["departures"],
                     "drops": drops,
                     "loss": sum(drops.values()) / c["arrivals"] if c["arrivals"] else None})
    return rows


def e2e_loss(hops: Sequence[Mapping[str, Any]]) -> Optional[float]:
    """upta Table 1's D_2 row (paper_compare m_video_e2e_loss_pct): 1 − the last hop's
    departures / the first hop's arrivals."""
    rows = [h for h in hops if h.get("arrivals") is not None]
    if not rows or not rows[0]["arrivals"]:
        return None
    return 1 - rows[-1]["departures"] / rows[0]["arrivals"]


def summarize(raw: Mapping[str, Any]) -> dict[str, Any]:
    """One run's metrics under the compared rows' names: tcp_mbps (TCP's received IP
    bytes × 8 / the run's duration), the video's local loss per router and end-to-end
    loss, and for attribution TCP's drops per router, its loss, its sender's largest
    window, its smoothed RTT (time-weighted mean from the first sample) and its entries
    into fast recovery and RTO loss recovery."""
    check_counts(raw)
    dur = float(raw["duration_s"])
    video = flow_hops(raw, "video", VIDEO_DST)
    tcp = flow_hops(raw, "tcp", TCP_DST)
    tcp_sent = tcp[0]["arrivals"]
    tcp_drops = sum(sum(h["drops"].values()) for h in tcp)
    cs = raw["tcp_sender"]["cong_state_entries"]
    return {"queue": raw["queue"], "tcp": raw["tcp"], "seed": raw["seed"], "duration_s": dur,
            "segment_bytes": raw["segment_bytes"],
            "tcp_mbps": round(sum(raw["tcp_rx_bytes_ip"]) * 8 / dur / 1e6, 6),
            "video_hops": video,
            "video_hop_loss_pct": [None if h["loss"] is None else round(100 * h["loss"], 4) for h in video],
            "video_e2e_loss_pct": round(100 * e2e_loss(video), 4),
            "video_rx_mbps": round(raw["rx_pkts"]["video"] * raw["params"]["packet_bytes"] * 8 / dur / 1e6, 6),
            "bg_rx_mbps": round(raw["rx_pkts"]["bg"] * raw["params"]["packet_bytes"] * 8 / dur / 1e6, 6),
            "tcp_hops": tcp, "tcp_drops": tcp_drops,
            "tcp_loss_pct": round(100 * tcp_drops / tcp_sent, 4) if tcp_sent else None,
            "tcp_max_cwnd_pkts": round(raw["tcp_sender"]["max_cwnd_bytes"] / raw["segment_bytes"], 1),
            "tcp_srtt_mean_ms": round(float(raw["tcp_sender"]["srtt_mean_ms"]), 2),
            "tcp_recoveries": int(cs.get("CA_RECOVERY", 0)), "tcp_rtos": int(cs.get("CA_LOSS", 0))}


#: the scalar metrics aggregated over seeds (and the per-hop list video_hop_loss_pct)
SCALARS = ("tcp_mbps", "video_e2e_loss_pct", "video_rx_mbps", "bg_rx_mbps", "tcp_loss_pct",
           "tcp_drops", "tcp_max_cwnd_pkts", "tcp_srtt_mean_ms", "tcp_recoveries", "tcp_rtos")


def _agg(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {k: spread([r[k] for r in runs]) for k in SCALARS if k in runs[0]}
    n_hops = len(runs[0]["video_hop_loss_pct"])
    out["video_hop_loss_pct"] = [spread([r["video_hop_loss_pct"][i] for r in runs]) for i in range(n_hops)]
    return out


def ns3_aggregate(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per scenario, queue and TCP model, median [range] over seeds."""
    out: dict[str, Any] = {}
    for k in SCENARIOS:
        out[str(k)] = {}
        for q in QUEUES:
            out[str(k)][q] = {}
            for tcp in TCP_MODELS:
                runs = [s for s in summaries if s["scenario"] == k and s["algorithm"] == q and s["tcp"] == tcp]
                if runs:
                    out[str(k)][q][tcp] = _agg(sorted(runs, key=lambda s: s["seed"]))
    return out


# ---------------------------------------------------------------------------
# The BMv2 column (archived runs) and the fluid max-min reference
# ---------------------------------------------------------------------------


def bmv2_runs() -> dict[str, dict[str, list[str]]]:
    """Per table block the archived runs of the compared upta rows (docs/paper-comparison.yaml):
    scenario k: FAIR_SHARE of Table 4's t4-wfq-sK, B_UPTA of Fig. 18's fig18-b-sK; Table 1
    ("t1"): FAIR_SHARE of t1-hop-loss, B_UPTA of fig12-b-upta."""
    rows = {r["id"]: r for r in yaml.safe_load(COMPARISON.read_text())["upta"]["rows"]}
    out = {str(k): {"FAIR_SHARE": list(rows[f"t4-wfq-s{k}"]["runs"]),
                    "B_UPTA": list(rows[f"fig18-b-s{k}"]["runs"])} for k in SCENARIOS}
    out["t1"] = {"FAIR_SHARE": list(rows["t1-hop-loss"]["runs"]),
                 "B_UPTA": list(rows["fig12-b-upta"]["runs"])}
    return out


def _bmv2_one(run_dir: Path, topo) -> dict[str, Any]:
    """One archived BMv2 run's numbers: τ, the video's losses (mmaqm_exp.upta_tables),
    and TCP's drops on its path from the summary's per-port counts."""
    hops = upta_tables.per_hop(run_dir, topo)
    nums = upta_tables.run_numbers(run_dir, hops)
    gz = run_dir / "summary.json.gz"
    summary = json.loads(gzip.decompress(gz.read_bytes()) if gz.is_file()
                         else (run_dir / "summary.json").read_text())
    ports = summary["switch"]["ports"]
    tcp = [ports[f"{sw}:{port}"]["run"]["TCP"] for sw, port in topo.switch_hops(TCP_SRC, TCP_DST)]
    drops = sum(int(c["drops_total"]) for c in tcp)
    return {"tcp_mbps": round(nums["tcp_bps"] / 1e6, 6),
            "video_e2e_loss_pct": None if nums["video_e2e_loss"] is None else round(100 * nums["video_e2e_loss"], 4),
            "video_hop_loss_pct": [None if h.get("loss") is None else round(100 * h["loss"], 4) for h in hops],
            "tcp_drops": drops,
            "tcp_loss_pct": round(100 * drops / tcp[0]["arrivals"], 4) if tcp[0]["arrivals"] else None,
            "warnings": len(nums["warnings"])}


def bmv2_aggregate(runs: Mapping[str, Mapping[str, Sequence[str]]]) -> dict[str, Any]:
    """Per block and algorithm, median [range] over the archived runs
    (docs/results/<run>/<ALGORITHM>/, read with mmaqm_exp.upta_tables), with the runs
    whose summaries carry validity warnings named."""
    out: dict[str, Any] = {"runs": {k: {a: list(r) for a, r in v.items()} for k, v in runs.items()},
                           "metrics": {}}
    topo = load_topology(TOPOLOGY)
    for key, by_algo in runs.items():
        out["metrics"][key] = {}
        for algo, names in by_algo.items():
            per, warned = [], []
            for run in names:
                d = REPO / "docs" / "results" / run / algo
                if not (d / "summary.json.gz").is_file() and not (d / "summary.json").is_file():
                    raise ConfigError(f"{d}: no summary.json(.gz)")
                one = _bmv2_one(d, topo)
                per.append(one)
                if one["warnings"]:
                    warned.append(run)
            agg = _agg(per)
            agg["runs"] = len(per)
            agg["warned_runs"] = warned
            out["metrics"][key][algo] = agg
    return out


def max_min_rates(capacity: Mapping[str, float], paths: Mapping[str, Sequence[str]],
                  demand: Mapping[str, float]) -> dict[str, float]:
    """Max-min fair rates (progressive filling, [8] of upta §2): every flow's rate rises
    together until its demand or a full link on its path freezes it."""
    rate = {f: 0.0 for f in paths}
    active = set(paths)
    left = dict(capacity)
    while active:
        users = {l: [f for f in active if l in paths[f]] for l in left}
        steps = [left[l] / len(u) for l, u in users.items() if u]
        steps += [demand[f] - rate[f] for f in active]
        step = max(0.0, min(steps))
        for f in active:
            rate[f] += step
            for l in paths[f]:
                left[l] -= step
        frozen = {f for f in active if rate[f] >= demand[f] - 1e-12
                  or any(left[l] <= 1e-9 for l in paths[f])}
        active -= frozen
    return rate


def fluid_tcp_mbps(args: Mapping[str, Any]) -> float:
    """TCP's time-averaged max-min fair rate over the run (the background ON or OFF),
    from the scenario's links and flows: what an ideal fair network gives it."""
    mbps = [float(x) for x in str(args["chainMbps"]).split(",")]
    links = {f"l{i + 1}": c for i, c in enumerate(mbps)}
    bg_links = [f"l{i}" for i in range(int(args["bgInRouter"]), int(args["bgOutRouter"]))]
    on = [tuple(map(float, p.split("-"))) for p in str(args["bgOn"]).split(",") if p]
    dur = float(args["durationS"])
    t_on = sum(e - s for s, e in on)
    rates = []
    for bg in (False, True):
        paths = {"tcp": list(links), "video": list(links)}
        demand = {"tcp": float("inf"), "video": float(args["videoKbps"]) / 1e3}
        if bg:
            paths["bg"], demand["bg"] = bg_links, float(args["bgKbps"]) / 1e3
        rates.append(max_min_rates(links, paths, demand)["tcp"])
    return ((dur - t_on) * rates[0] + t_on * rates[1]) / dur


# ---------------------------------------------------------------------------
# Table
# ---------------------------------------------------------------------------

PHI = {1: "0.133", 2: "0.267", 3: "0.4", 4: "0.533", 5: "0.667", 6: "1.0"}
#: the paper's values for these rows (docs/paper-comparison.yaml, upta; Table 1 is the
#: paper's max-min calculation, §2)
PAPER_TAU = {1: 1.62, 2: 1.52, 3: 1.44, 4: 1.37, 5: 1.31, 6: 1.16}
PAPER_E2E = "33.5 %"
PAPER_HOPS = "0 / 9.1 / 10 / 9.1 / 10 / 0 / 0 %"
QUEUE_LABEL = {"DROP_TAIL": "drop-tail", "RED": "RED", "FQ_CODEL": "FQ-CoDel", "FQ": "FQ (DRR, CoDel off)",
               "FAIR_SHARE_NS3": "our FAIR_SHARE scheme, rebuilt in ns-3"}


def hop_cell(sps: Optional[Sequence[Optional[Mapping[str, float]]]]) -> str:
    """Per-router local losses: median [range] per router, ' / '-separated, in %."""
    if not sps:
        return "—"
    return " / ".join(cell(sp, 1, "").strip() for sp in sps) + " %"


def _bm(results: Mapping[str, Any], key: str, algo: str) -> Optional[Mapping[str, Any]]:
    return results["bmv2"]["metrics"].get(key, {}).get(algo)


def _warn(agg: Optional[Mapping[str, Any]]) -> str:
    return f" ⚠{len(agg['warned_runs'])}" if agg and agg.get("warned_runs") else ""


def render_table(results: Mapping[str, Any]) -> str:
    """The Markdown table of docs/ns3/upta.md from upta.json."""
    ns3, n_seeds = results["ns3"], results["seeds"]
    lines = [f"| metric | scenario | ns-3 queue at every router | ns-3 TcpLinuxReno ({n_seeds} seeds) | "
             f"ns-3 TcpNewReno ({n_seeds} seeds) | BMv2 FAIR_SHARE | BMv2 B_UPTA | max-min (fluid) | paper (WFQ) |",
             "|---|---|---|---:|---:|---:|---:|---:|---|"]

    def block(metric: str, k: int, fmt, paper: str, bm_key: str, fluid: str = "") -> None:
        for i, q in enumerate(QUEUES):
            a = ns3[str(k)][q]
            bm = [_bm(results, bm_key, algo) for algo in BMV2_ALGORITHMS]
            bm_cells = [fmt(b) + (f" ({b['runs']} runs){_warn(b)}" if b else "") for b in bm] if i == 0 else ["", ""]
            lines.append(f"| {metric if i == 0 else ''} | {f'{k} (φ = {PHI[k]})' if i == 0 else ''} | "
                         f"{QUEUE_LABEL[q]} | {fmt(a.get('LinuxReno'))} | {fmt(a.get('NewReno'))} | "
                         f"{bm_cells[0]} | {bm_cells[1]} | {fluid if i == 0 else ''} | {paper if i == 0 else ''} |")

    def scalar(key: str, nd: int, unit: str):
        return lambda a: "—" if a is None else cell(a.get(key), nd, unit)

    for k in SCENARIOS:
        block("Table 4: TCP throughput τ", k, scalar("tcp_mbps", 3, "Mbit/s"),
              f"{PAPER_TAU[k]:.2f} Mbit/s", str(k), f"{num(results['fluid_tcp_mbps'][str(k)], 3)} Mbit/s")
    block("Table 1: the video's end-to-end loss", 6, scalar("video_e2e_loss_pct", 1, "%"), PAPER_E2E, "t1")
    block("Table 1: the video's local loss at R1 / R2 / R3 / R4 / R5 / R6 / R7", 6, lambda a: "—" if a is None else hop_cell(a.get("video_hop_loss_pct")), PAPER_HOPS, "t1")
    for k in (1, 6):
        block("TCP's loss (drops on the path / packets sent)", k, scalar("tcp_loss_pct", 2, "%"), "", str(k))
        block("TCP's smoothed RTT, time-weighted mean", k, scalar("tcp_srtt_mean_ms", 0, "ms"), "", "none")
    lines.append("")
    bm_runs = results["bmv2"]["runs"]
    lines.append(
        "Median [range] over seeds (ns-3) or archived runs (BMv2). τ: TCP's received IP bytes × 8 / 15 s. "
        "Local loss: the video's drops / arrivals at each router's egress on its path; end-to-end: 1 − "
        "R7's departures / R1's arrivals (mmaqm_exp.upta_tables' definitions). BMv2: FAIR_SHARE is our "
        "stand-in for the paper's WFQ, B_UPTA for reference; ⚠n: n of the runs carry validity warnings. "
        "Max-min (fluid): TCP's max-min fair rate from the links and flows, time-averaged over the ON/OFF "
        "phases. Paper: Table 4 (simulation) and Table 1 (the paper's max-min calculation, §2). "
        "BMv2 runs: " + "; ".join(f"{'scenario ' + k if k != 't1' else 'Table 1'} {algo}: "
                                  f"{', '.join(bm_runs[k][algo])}"
                                  for k in [*map(str, SCENARIOS), "t1"] if k in bm_runs
                                  for algo in BMV2_ALGORITHMS if algo in bm_runs[k])
        + ". Data: docs/ns3/upta.json (`tools/ns3_upta.py run`).")
    return "\n".join(lines) + "\n"


def write_table(results: Mapping[str, Any]) -> None:
    """Put the table into docs/ns3/upta.md between its markers."""
    ns3common.splice_table(DOC_PAGE, "upta", render_table(results))


# ---------------------------------------------------------------------------


def cmd_run(seeds: int, scenarios: Sequence[int], queues: Sequence[str]) -> dict[str, Any]:
    binary = build()
    args = {k: scenario_args(k) for k in scenarios}
    summaries = []
    for k in scenarios:
        for q in queues:
            qa = queue_args(q, int(args[k]["limitPkts"]))
            for tcp in TCP_MODELS:
                for seed in range(1, seeds + 1):
                    s = summarize(run_one(binary, {**args[k], **qa}, tcp, seed))
                    s["scenario"], s["algorithm"] = k, q
                    summaries.append(s)
                    print(f"ns3-upta: s{k} {q} {tcp} seed {seed}: τ {s['tcp_mbps']:.3f} Mbit/s, video "
                          f"e2e loss {s['video_e2e_loss_pct']:.1f} %, TCP loss {s['tcp_loss_pct']:.2f} %, "
                          f"RTOs {s['tcp_rtos']}", file=sys.stderr)
    limit = int(args[scenarios[0]]["limitPkts"])
    return {"schema": "mmaqm-ns3-upta/1", "ns3_version": NS3_VERSION, "seeds": seeds,
            "scenario": {str(k): v for k, v in args.items()},
            "queues": {q: queue_args(q, limit) for q in queues},
            "tcp_models": dict(ns3common.TCP_MODELS),
            "fluid_tcp_mbps": {str(k): round(fluid_tcp_mbps(args[k]), 6) for k in scenarios},
            "runs": summaries, "ns3": ns3_aggregate(summaries), "bmv2": bmv2_aggregate(bmv2_runs())}


def _refresh_bmv2(res: dict[str, Any]) -> dict[str, Any]:
    """The `bmv2` command: the BMv2 columns again, from the runs the rows list now."""
    res["bmv2"] = bmv2_aggregate(bmv2_runs())
    return res


def main(argv: Optional[Sequence[str]] = None) -> int:
    return ns3common.cli("upta", __doc__, argv, build=build,
                          run=lambda seeds: cmd_run(seeds, SCENARIOS, tuple(QUEUES)),
                          render_table=render_table, write_table=write_table,
                          out_json=OUT_JSON, default_seeds=DEFAULT_SEEDS,
                          extra={"bmv2": _refresh_bmv2})


if __name__ == "__main__":
    sys.exit(main())
