"""The dual-stack experiment's table (scenarios/dual-stack.yaml; docs/experiments/dual-stack.md):
per run (algorithm), per address family and per class, the flows' throughput, their
share of the link, loss (UDP: packets sent and not received; TCP: retransmitted
segments, TCP_INFO at the stop), and for the UDP classes one-way delay and RFC 3550
jitter (the per-flow values the analysis measures, averaged over the family's flows);
then the controller's active-flow counts at the bottleneck per phase, by family and
class, against the flows the scenario runs there (analysis.controller_flow_counts).

    python -m mmaqm_exp.dual_stack_report --run RED=runs/x/RED --run DCBT=runs/x/DCBT --out DIR

reads each run's summary.json (mmaqm_exp.analysis) and writes dual_stack.json and
dual_stack.txt into DIR; mmaqm-exp writes them itself for a scenario with ipv6 flows.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from .analysis import FAMILIES, RUN, SUMMARY_FILE
from .scenario import CLASSES, DEFAULT_FAMILY

OUT_JSON, OUT_TEXT = "dual_stack.json", "dual_stack.txt"


def _r(x: Optional[float], nd: int = 3) -> Optional[float]:
    return None if x is None else round(x, nd)


def _mean(xs: Sequence[float]) -> Optional[float]:
    return sum(xs) / len(xs) if xs else None


def family_class_rows(summary: Mapping[str, Any], block: str = RUN) -> list[dict[str, Any]]:
    """One row per (family, class) with flows in ``block`` (RUN: the whole run, else a
    phase name): flows, total and per-flow kbit/s, share of the link, loss, delay and
    jitter. A flow without ``family`` (a summary from before IPv6) is IPv4."""
    ph = summary["run"] if block == RUN else summary["phases"][block]
    rate = summary.get("bottleneck_rate_kbps")
    flows = summary["flows"]
    rows = []
    for fam in FAMILIES:
        for cls in CLASSES:
            ids = [fid for fid in ph["per_flow_kbps"]
                   if flows[fid].get("family", DEFAULT_FAMILY) == fam and flows[fid]["class"] == cls]
            if not ids:
                continue
            kbps = [ph["per_flow_kbps"][fid] or 0.0 for fid in ids]
            total = sum(kbps)
            row: dict[str, Any] = {
                "family": fam, "class": cls, "flows": len(ids),
                "total_kbps": _r(total, 1), "per_flow_kbps": _r(total / len(ids), 1),
                "link_share": _r(total / rate, 4) if rate else None,
                "loss": None, "loss_kind": None, "delay_ms": None, "jitter_ms": None}
            if cls == "TCP":
                retx = segs = 0
                for fid in ids:
                    tcp = flows[fid].get("tcp") or {}
                    mss, sent = tcp.get("snd_mss"), tcp.get("sent_bytes")
                    if mss and sent is not None:
                        segs += sent / mss
                        retx += tcp.get("total_retrans") or 0
                # the whole run's (TCP_INFO is read once, at the stop)
                row.update(loss=_r(retx / segs, 6) if segs else None, loss_kind="retransmitted")
            else:
                udp = [ph["udp_flows"][fid] for fid in ids if fid in ph["udp_flows"]]
                sent = sum(u["sent"] for u in udp)
                recv = sum(u["received"] for u in udp)
                row.update(
                    loss=_r(1 - recv / sent, 6) if sent else None, loss_kind="lost",
                    delay_ms=_r(_mean([u["mean_ms"] for u in udp if u.get("mean_ms") is not None]), 2),
                    jitter_ms=_r(_mean([u["jitter_ms"] for u in udp
                                        if u.get("jitter_ms") is not None]), 3))
            rows.append(row)
    return rows


def flow_count_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per phase: the controller's median active flows per family and class
    in the phase's middle against the scenario's flows there, and whether they agree
    (None when the run has no per-family counts)."""
    counts = summary.get("controller_flow_counts") or {}
    rows = []
    for p in summary["scenario"]["phases"]:
        c = counts.get(p["name"])
        if c is None:
            continue
        counted = c.get("counted")
        rows.append({
            "phase": p["name"], "window_s": c["window_s"], "samples": c["samples"],
            "expected": c["expected"], "counted": counted, "counted_total": c["counted_total"],
            "agree": None if counted is None else all(
                counted[f][k] == c["expected"][f][k] for f in FAMILIES for k in CLASSES),
        })
    return rows


def report(summaries: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """{algorithm: {"run": rows, "phases": {phase: rows}, "flow_counts": rows}}."""
    out = {}
    for algo, s in summaries.items():
        out[algo] = {
            "bottleneck_rate_kbps": s.get("bottleneck_rate_kbps"),
            "run": family_class_rows(s),
            "phases": {p["name"]: family_class_rows(s, p["name"])
                       for p in s["scenario"]["phases"]},
            "flow_counts": flow_count_rows(s),
        }
    return out


def _f(x: Optional[float], fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def format_family_table(rep: Mapping[str, Any], block: str = RUN) -> str:
    """The per-family, per-class table of one block (the whole run or a phase)."""
    lines = [f"Per family and class, {'the whole run' if block == RUN else 'phase ' + block} "
             "(loss: UDP packets lost; TCP segments retransmitted, over the run):",
             f"{'algorithm':<17}{'family':<7}{'class':<9}{'flows':>5}{'kbit/s':>9}{'link %':>8}"
             f"{'kbit/s/flow':>12}{'loss %':>8}{'delay ms':>9}{'jitter ms':>10}"]
    lines.append("-" * len(lines[-1]))
    for algo, r in rep.items():
        rows = r["run"] if block == RUN else r["phases"].get(block, [])
        for row in rows:
            loss = None if row["loss"] is None else 100 * row["loss"]
            share = None if row["link_share"] is None else 100 * row["link_share"]
            lines.append(f"{algo:<17}{row['family']:<7}{row['class']:<9}{row['flows']:>5}"
                         f"{_f(row['total_kbps'], '.0f'):>9}{_f(share, '.1f'):>8}"
                         f"{_f(row['per_flow_kbps'], '.0f'):>12}"
                         f"{_f(loss, '.2f') + ('r' if row['loss_kind'] == 'retransmitted' and loss is not None else ''):>8}"
                         f"{_f(row['delay_ms'], '.1f'):>9}{_f(row['jitter_ms'], '.2f'):>10}")
    return "\n".join(lines) + "\n"


def format_flow_counts(rep: Mapping[str, Any]) -> str:
    """The controller's counts against the scenario's flows, per algorithm and phase."""
    lines = ["Controller's active flows at the bottleneck, median over each phase's middle "
              "half, IPv4 + IPv6 (the scenario's flows there in brackets):",
              f"{'algorithm':<17}{'phase':<10}" + "".join(f"{c:>20}" for c in CLASSES)
              + f"{'agree':>7}"]
    lines.append("-" * len(lines[-1]))
    for algo, r in rep.items():
        for row in r["flow_counts"]:
            cells = []
            for c in CLASSES:
                e4, e6 = row["expected"]["ipv4"][c], row["expected"]["ipv6"][c]
                if row["counted"] is None:
                    tot = (row["counted_total"] or {}).get(c)
                    cells.append(f"{_f(tot, 'g')} ({e4 + e6})")
                else:
                    n4, n6 = row["counted"]["ipv4"][c], row["counted"]["ipv6"][c]
                    cells.append(f"{n4:g}+{n6:g} ({e4}+{e6})")
            agree = "-" if row["agree"] is None else ("yes" if row["agree"] else "NO")
            lines.append(f"{algo:<17}{row['phase']:<10}" + "".join(f"{x:>20}" for x in cells)
                         + f"{agree:>7}")
    return "\n".join(lines) + "\n"


def is_dual_stack(summaries: Mapping[str, Mapping[str, Any]]) -> bool:
    """True if a run's flows include IPv6 ones (its summaries need dual_stack.txt)."""
    return any(f.get("family") == "ipv6" for s in summaries.values()
               for f in s.get("flows", {}).values())


def report_text(summaries: Mapping[str, Mapping[str, Any]]) -> str:
    """dual_stack.txt: the whole run's table, the flow counts, then each phase's table
    (tools/check_results.py recomputes it from the summaries)."""
    rep = report(summaries)
    phases = next(iter(rep.values()))["phases"] if rep else {}
    return "\n".join([format_family_table(rep), format_flow_counts(rep),
                      *(format_family_table(rep, p) for p in phases)])


def write_report(summaries: Mapping[str, Mapping[str, Any]], out_dir: Path) -> Path:
    """dual_stack.json and dual_stack.txt in out_dir; returns the text file's path."""
    out_dir = Path(out_dir)
    (out_dir / OUT_JSON).write_text(json.dumps(report(summaries), indent=1) + "\n")
    path = out_dir / OUT_TEXT
    path.write_text(report_text(summaries))
    return path


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mmaqm_exp.dual_stack_report",
                                description="the dual-stack experiment's per-family table")
    p.add_argument("--run", action="append", required=True, metavar="ALGO=DIR",
                   help="an algorithm's run folder (with summary.json); repeat")
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    summaries = {}
    for item in a.run:
        algo, sep, d = item.partition("=")
        path = Path(d) / SUMMARY_FILE
        if not sep or not path.is_file():
            print(f"dual_stack_report: --run {item}: expected ALGO=DIR with {SUMMARY_FILE}",
                  file=sys.stderr)
            return 2
        summaries[algo] = json.loads(path.read_text())
    a.out.mkdir(parents=True, exist_ok=True)
    print(write_report(summaries, a.out).read_text(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
