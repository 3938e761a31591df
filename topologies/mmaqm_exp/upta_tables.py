"""The upta paper's tables from runs on the Fig. 1 chain (topologies/topos/upta-fig1.json).

    python -m mmaqm_exp.upta_tables RUN_DIR [RUN_DIR ...]      # experiment output folders

For each algorithm folder (RUN_DIR/<algorithm>/ with counters.jsonl, summary.json):

* per hop (Table 1 / Table 2 / Figs. 12-13): the video's (TAGGED class) arrivals,
  departures and drops by reason at each router's egress port on its path, between
  the first and the last counter sample of the run, and the local loss rate;
  with the P-UPTA threshold each router would see by eq. 17 from the measured
  losses (q_k = (q_{k-1} - p_{k-1}) / (1 - p_{k-1}), q_1 = 0.12);
* the run: TCP throughput tau (received IP bytes * 8 / duration), the video's
  delivered rate and end-to-end loss, and the video packets carried over a link and
  dropped further on (useless transmissions: sum over hops of departures, minus
  what arrived, times the hops it crossed);
* across runs of the same scenario: rho = tau' / tau - 1 against FAIR_SHARE (the
  paper's WFQ) and eq. 22's rho = 0.5 phi (Tables 3 and 5).

Pure reading of files: nothing here touches a switch.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from mmaqm.algorithms import upta

from .topology import load_topology

REPO = Path(__file__).resolve().parents[2]
TOPOLOGY = REPO / "topologies" / "topos" / "upta-fig1.json"
VIDEO_SRC, VIDEO_DST = "s2", "d2"
VIDEO_CLASS = "TAGGED"
BASELINE = "FAIR_SHARE"
# Tables 3 and 5 (upta §7.2, §7.3): scenario -> (phi, rho theory (eq. 22), P-UPTA sim, C-UPTA sim)
PAPER_RHO = {1: (0.133, 0.067, 0.048, 0.062), 2: (0.267, 0.134, 0.097, 0.132),
             3: (0.4, 0.2, 0.146, 0.194), 4: (0.533, 0.267, 0.194, 0.256),
             5: (0.667, 0.334, 0.243, 0.313), 6: (1.0, 0.5, 0.365, 0.483)}
# Table 2: router -> (loss threshold %, loss rate %) of the video under P-UPTA, scenario 6
PAPER_TABLE2 = {"r1": (12.0, 0.0), "r2": (12.0, 9.1), "r3": (3.2, 10.0)}


def _open(path: Path):
    """path, or its .gz as tools/archive_run.py stores it in docs/results/."""
    if not path.exists() and path.with_name(path.name + ".gz").exists():
        return gzip.open(path.with_name(path.name + ".gz"), "rt")
    return open(path)


def _samples(counters: Path) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    with _open(counters) as f:
        for line in f:
            try:
                s = json.loads(line)
            except ValueError:
                continue
            if "readings" in s:
                out.setdefault(s["switch"], []).append(s)
    return out


def _reading(sample: dict[str, Any], port: int, cls: str) -> dict[str, Any]:
    for r in sample["readings"]:
        if r["port"] == port and r["class"] == cls:
            return r
    return {}


def _pk(r: dict[str, Any], key: str) -> int:
    return int(r.get(key, {}).get("packets", 0))


def per_hop(run: Path, topo=None) -> list[dict[str, Any]]:
    """The video's counts at each hop of its path (first to last sample)."""
    topo = topo or load_topology(TOPOLOGY)
    samples = _samples(run / "counters.jsonl")
    rows = []
    for switch, port in topo.switch_hops(VIDEO_SRC, VIDEO_DST):
        ss = samples.get(switch, [])
        if len(ss) < 2:
            rows.append({"switch": switch, "port": port, "arrivals": None})
            continue
        a, b = _reading(ss[0], port, VIDEO_CLASS), _reading(ss[-1], port, VIDEO_CLASS)
        drops = {reason: b.get("drops", {}).get(reason, {}).get("packets", 0)
                 - a.get("drops", {}).get(reason, {}).get("packets", 0)
                 for reason in b.get("drops", {})}
        drops = {k: v for k, v in drops.items() if v}
        arrivals = _pk(b, "arrivals") - _pk(a, "arrivals")
        rows.append({"switch": switch, "port": port, "arrivals": arrivals,
                     "departures": _pk(b, "departures") - _pk(a, "departures"),
                     "drops": drops,
                     "loss": (sum(drops.values()) / arrivals) if arrivals else None})
    q = upta.PAPER_LOSS_THRESHOLD
    for row in rows:     # the threshold each hop sees by eq. 17 from the measured losses
        row["q_eq17"] = q
        p = row.get("loss")
        if p is not None and q is not None:
            # p > q: the threshold is exceeded here (the flow is U): nothing is left
            q = 0.0 if p >= q else upta.threshold_update(q, p)
    return rows


def run_numbers(run: Path, hops: Sequence[dict[str, Any]]) -> dict[str, Any]:
    with _open(run / "summary.json") as f:
        s = json.load(f)
    dur = float(s["scenario"]["duration_s"]) if isinstance(s.get("scenario"), dict) \
        and "duration_s" in s["scenario"] else 15.0
    flows = s["flows"]
    tcp = sum(f["received_bytes_ip"] for f in flows.values() if f["kind"] == "tcp") * 8 / dur
    video = [f for f in flows.values() if f["src"] == VIDEO_SRC]
    v_rx = sum(f["received_bytes_ip"] for f in video) * 8 / dur
    delivered = None
    rows = [h for h in hops if h.get("arrivals") is not None]
    wasted = None
    if rows:
        delivered = rows[-1]["departures"]
        # link transmissions of video packets dropped further on: every departure that
        # is not one of the delivered packets' own crossings
        wasted = sum(h["departures"] for h in rows) - delivered * len(rows)
    sent = rows[0]["arrivals"] if rows else None
    return {"tcp_bps": tcp, "video_rx_bps": v_rx, "video_sent_pkts": sent,
            "video_delivered_pkts": delivered,
            "video_e2e_loss": None if not sent or delivered is None else 1 - delivered / sent,
            "video_useless_link_pkts": wasted, "warnings": s.get("warnings", []),
            "keepup_ok": all(k.get("ok", True) for k in s.get("switch_keepup", {}).values())}


def _pct(x: Optional[float]) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def format_run(name: str, hops: Sequence[dict[str, Any]], nums: dict[str, Any]) -> str:
    lines = [f"{name}: TCP {nums['tcp_bps'] / 1e6:.3f} Mbit/s, video received "
             f"{nums['video_rx_bps'] / 1e6:.3f} Mbit/s, end-to-end loss "
             f"{_pct(nums['video_e2e_loss'])} %, useless video link transmissions "
             f"{nums['video_useless_link_pkts']}, switches kept up: "
             f"{'yes' if nums['keepup_ok'] else 'NO'}, warnings {len(nums['warnings'])}",
             "  hop   arrivals  departures  loss %  q by eq. 17 %  drops by reason   paper (q %, loss %)"]
    for h in hops:
        if h.get("arrivals") is None:
            lines.append(f"  {h['switch']:<4}  (no samples)")
            continue
        paper = PAPER_TABLE2.get(h["switch"])
        lines.append(f"  {h['switch']:<4}  {h['arrivals']:>8}  {h['departures']:>10}  "
                     f"{_pct(h['loss']):>6}  {_pct(h['q_eq17']):>13}  "
                     f"{json.dumps(h['drops']):<16}  "
                     f"{'' if paper is None else f'{paper[0]:g}, {paper[1]:g}'}")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="experiment output folders")
    a = ap.parse_args(argv)
    topo = load_topology(TOPOLOGY)
    tau: dict[tuple[str, str], float] = {}
    for run_dir in a.runs:
        exp = json.loads((run_dir / "experiment.json").read_text()) \
            if (run_dir / "experiment.json").exists() else {}
        scen = Path(str(exp.get("scenario", "?"))).stem
        for algo_dir in sorted(p for p in run_dir.iterdir()
                               if (p / "summary.json").exists() or (p / "summary.json.gz").exists()):
            hops = per_hop(algo_dir, topo)
            nums = run_numbers(algo_dir, hops)
            tau[(scen.removesuffix("-p"), algo_dir.name)] = nums["tcp_bps"]
            print(format_run(f"{run_dir.name}/{algo_dir.name} ({scen})", hops, nums))
            print()
    lines = ["scenario  algorithm   tau Mbit/s  rho  (eq. 22, paper P / C)"]
    for (scen, algo), t in sorted(tau.items()):
        base = tau.get((scen, BASELINE))
        k = int(scen[len("upta-s"):]) if scen.startswith("upta-s") and \
            scen[len("upta-s"):].isdigit() else None
        paper = PAPER_RHO.get(k) if k else None
        rho = "-" if not base or algo == BASELINE else f"{upta.improvement_measured(base, t):.3f}"
        ref = "" if paper is None else f"({paper[1]:g}, {paper[2]:g} / {paper[3]:g})"
        lines.append(f"{scen:<9} {algo:<10} {t / 1e6:10.3f}  {rho:>5}  {ref}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
