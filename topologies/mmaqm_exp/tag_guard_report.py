"""The tag guard's scenario (scenarios/tag-guard-abuse.yaml; docs/algorithms/tag-guard.md):
per run (algorithm) and per phase, each honest tagged flow's throughput and the
abuser's as multiples of the phase's per-flow fair share, Jain's index, and
whether the guard's targets hold (each honest tagged flow >= HONEST_MIN_SHARE of
its fair share, the abuser <= ABUSER_MAX_SHARE). Honest tagged flows are the
MM_APP flows; the abuser is the tagged CBR flow active in the phase.

    python -m mmaqm_exp.tag_guard_report --run DCBT=runs/x/DCBT ... --out DIR

reads each run's summary.json (mmaqm_exp.analysis) and writes tag_guard.json,
tag_guard.txt and tag_guard.png (throughput against the abuser's rate) into DIR.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from .analysis import SUMMARY_FILE

HONEST_MIN_SHARE = 0.8      # each honest tagged flow keeps >= 80 % of its fair share
ABUSER_MAX_SHARE = 1.5      # the abuser gets <= 1.5x its fair share
OUT_JSON, OUT_TEXT, OUT_PLOT = "tag_guard.json", "tag_guard.txt", "tag_guard.png"


def _r(x: Optional[float], nd: int = 3) -> Optional[float]:
    return None if x is None else round(x, nd)


def phase_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per phase of one run: fair share, honest and abuser shares, Jain."""
    flows = summary["flows"]
    rows = []
    for p in summary["scenario"]["phases"]:
        ph = summary["phases"][p["name"]]
        fair = ph["fair_share_kbps"]
        if not fair:
            raise ValueError(f"phase {p['name']}: no fair share (no bottleneck rate?)")
        kbps = {fid: v for fid, v in ph["per_flow_kbps"].items()}
        honest = {fid: v / fair for fid, v in kbps.items()
                  if flows[fid]["kind"] == "mmapp" and flows[fid]["class"] == "TAGGED"}
        abusers = {fid: v / fair for fid, v in kbps.items()
                   if flows[fid]["kind"] == "cbr" and flows[fid]["class"] == "TAGGED"}
        tcp = [v / fair for fid, v in kbps.items() if flows[fid]["kind"] == "tcp"]
        if len(abusers) > 1:
            raise ValueError(f"phase {p['name']}: {len(abusers)} tagged CBR flows, expected 0 or 1")
        abuser = next(iter(abusers.values()), None)
        honest_min = min(honest.values()) if honest else None
        rows.append({
            "phase": p["name"], "fair_share_kbps": fair, "jain": ph["jain"],
            "honest_share": {fid: _r(v) for fid, v in sorted(honest.items(), key=lambda x: int(x[0]))},
            "honest_min_share": _r(honest_min),
            "honest_mean_share": _r(sum(honest.values()) / len(honest)) if honest else None,
            "abuser_share": _r(abuser),
            "tcp_mean_share": _r(sum(tcp) / len(tcp)) if tcp else None,
            "targets_met": None if abuser is None else bool(
                honest_min is not None and honest_min >= HONEST_MIN_SHARE
                and abuser <= ABUSER_MAX_SHARE),
        })
    return rows


def report(runs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """{run name: {phases: rows, validity_warnings: the run's warnings (mmaqm-exp)}}."""
    return {name: {"phases": phase_rows(s), "validity_warnings": list(s.get("warnings", []))}
            for name, s in runs.items()}


def format_text(rep: Mapping[str, Any]) -> str:
    lines = [f"{'run':<12} {'phase':<11} {'fair kbps':>9} {'honest min':>10} {'honest mean':>11} "
             f"{'abuser':>7} {'TCP mean':>8} {'Jain':>6}  targets"]
    for name, r in rep.items():
        for row in r["phases"]:
            def f(x: Optional[float]) -> str:
                return "-" if x is None else f"{x:.2f}"
            met = {None: "-", True: "met", False: "MISSED"}[row["targets_met"]]
            lines.append(f"{name:<12} {row['phase']:<11} {row['fair_share_kbps']:>9.0f} "
                         f"{f(row['honest_min_share']):>10} {f(row['honest_mean_share']):>11} "
                         f"{f(row['abuser_share']):>7} {f(row['tcp_mean_share']):>8} "
                         f"{f(row['jain']):>6}  {met}")
        for w in r["validity_warnings"]:
            lines.append(f"{name:<12} VALIDITY: {w}")
    lines.append(f"(shares: throughput / the phase's per-flow fair share; targets: every honest "
                 f"tagged flow >= {HONEST_MIN_SHARE}, the abuser <= {ABUSER_MAX_SHARE})")
    return "\n".join(lines) + "\n"


def plot(rep: Mapping[str, Any], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(rep), figsize=(4 * len(rep), 3.5), squeeze=False, sharey=True)
    for ax, (name, r) in zip(axes[0], rep.items()):
        rows = [row for row in r["phases"] if row["abuser_share"] is not None]
        xs = list(range(len(rows)))
        fids = sorted({fid for row in rows for fid in row["honest_share"]}, key=int)
        for fid in fids:
            ax.plot(xs, [row["honest_share"].get(fid) for row in rows], color="tab:blue",
                    alpha=0.5, marker=".")
        ax.plot([], [], color="tab:blue", marker=".", label="honest MM_APP")
        ax.plot(xs, [row["abuser_share"] for row in rows], color="tab:red", marker="o",
                label="abuser")
        ax.axhline(HONEST_MIN_SHARE, color="tab:blue", linestyle=":")
        ax.axhline(ABUSER_MAX_SHARE, color="tab:red", linestyle=":")
        ax.set_xticks(xs, [row["phase"].replace("abuser-", "") for row in rows])
        ax.set_title(name)
        ax.set_xlabel("abuser's rate (x fair share)")
    axes[0][0].set_ylabel("throughput / fair share")
    axes[0][0].legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", action="append", required=True, metavar="NAME=DIR",
                   help="a run's name and its directory (with summary.json)")
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args(argv)
    runs = {}
    for item in args.run:
        name, sep, d = item.partition("=")
        if not sep or not name:
            print(f"tag_guard_report: --run wants NAME=DIR, got {item!r}", file=sys.stderr)
            return 2
        path = Path(d) / SUMMARY_FILE
        try:
            runs[name] = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            print(f"tag_guard_report: {path}: {exc}", file=sys.stderr)
            return 2
    try:
        rep = report(runs)
    except (KeyError, ValueError) as exc:
        print(f"tag_guard_report: not a tag guard run: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / OUT_JSON).write_text(json.dumps(rep, indent=1))
    text = format_text(rep)
    (args.out / OUT_TEXT).write_text(text)
    plot(rep, args.out / OUT_PLOT)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
