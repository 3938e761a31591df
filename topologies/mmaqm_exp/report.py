"""Comparison table and plots over several runs (one summary.json per algorithm).

    summaries = {"RED": json.load(...), "DCBT": json.load(...)}
    print(comparison_table(summaries))
    write_report(summaries, "results/report")   # table.txt + the four PNGs

Plots (matplotlib, Agg, PNG):
  fig8_class_throughput.png  dcbt Fig. 8: per algorithm, average per-flow
                             throughput of each class per phase, fair share dashed
  fig11_jain.png             dcbt Fig. 11: Jain's index per phase, one bar per algorithm
  queue_occupancy.png        bottleneck queue per class over time (from the counters)
  mm_delay.png               dcbt Fig. 12-13: one MM_APP flow's one-way delay per packet
  mm_delay_cdf.png           the tagged class's one-way delay distribution (CDF), per
                             algorithm (issue 7: D-CBT with and without ChIPS)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CLASSES = ("TCP", "TAGGED", "UNTAGGED")
CLASS_SHORT = {"TCP": "TCP", "TAGGED": "TAG", "UNTAGGED": "UNT"}
CLASS_COLORS = {"TCP": "#1f77b4", "TAGGED": "#2ca02c", "UNTAGGED": "#d62728"}
FIG_DPI = 110
PLOT_FILES = {
    "fig8": "fig8_class_throughput.png",
    "fig11": "fig11_jain.png",
    "queue": "queue_occupancy.png",
    "delay": "mm_delay.png",
    "delay_cdf": "mm_delay_cdf.png",
}
TABLE_FILE = "table.txt"

Summary = Mapping[str, Any]


def _phase_names(s: Summary) -> list[str]:
    return [p["name"] for p in s["scenario"]["phases"]]


def _fmt(x: Optional[float], nd: int = 0) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def _get(d: Any, *keys: str) -> Any:
    for k in keys:
        if d is None:
            return None
        d = d.get(k)
    return d


# ---------------------------------------------------------------------------
# Table
# ---------------------------------------------------------------------------


def comparison_table(summaries: Mapping[str, Summary]) -> str:
    """Plain-text table, one row per algorithm.

    Columns: per phase the average per-flow throughput of TCP / TAGGED /
    UNTAGGED (kbit/s, dcbt Fig. 8); Jain per phase (Fig. 11); over the run the
    tagged (MM) class's loss %, mean RFC 3550 jitter (ms), one-way delay mean
    and max (ms), spread max - min (ms; dcbt §6.3's "maximum jitter") and
    standard deviation (ms; dcbt §4's jitter is the delay variance, its
    square); TCP's share of the delivered throughput during the blast phase (%).
    """
    if not summaries:
        return "(no runs)\n"
    first = next(iter(summaries.values()))
    phases = _phase_names(first)
    blast = first["scenario"].get("blast_phase")
    groups: list[tuple[str, list[str]]] = []
    for p in phases:
        groups.append((f"{p} kbit/s/flow", [CLASS_SHORT[c] for c in CLASSES]))
    groups.append(("Jain", list(phases)))
    groups.append(("MM (tagged), run",
                   ["loss%", "jit ms", "mean ms", "max ms", "sprd ms", "std ms"]))
    groups.append(("TCP share", [f"{blast or '-'} %"]))

    rows: list[list[str]] = []
    for algo, s in summaries.items():
        r: list[str] = []
        for p in phases:
            ph = s["phases"].get(p, {})
            for c in CLASSES:
                r.append(_fmt(_get(ph, "class_avg_per_flow_kbps", c)))
        for p in phases:
            r.append(_fmt(_get(s["phases"].get(p, {}), "jain"), 3))
        mm = _get(s, "run", "udp_class", "TAGGED")
        loss = _get(mm, "loss")
        r.append(_fmt(None if loss is None else 100 * loss, 2))
        r.append(_fmt(_get(mm, "jitter_ms_mean"), 2))
        r.append(_fmt(_get(mm, "mean_ms"), 1))
        r.append(_fmt(_get(mm, "max_ms"), 1))
        r.append(_fmt(_get(mm, "spread_ms"), 1))
        r.append(_fmt(_get(mm, "std_ms"), 2))
        share = _get(s["phases"].get(blast, {}) if blast else None, "class_share", "TCP")
        r.append(_fmt(None if share is None else 100 * share, 1))
        rows.append([algo, *r])

    sub = ["algorithm"] + [h for _, hs in groups for h in hs]
    widths = [max(len(sub[i]), *(len(r[i]) for r in rows)) for i in range(len(sub))]
    # widen each group so its title fits over its columns
    i = 1
    for title, hs in groups:
        span = sum(widths[i:i + len(hs)]) + 2 * (len(hs) - 1)
        for j in range(max(0, len(title) - span)):  # spread the extra width evenly
            widths[i + j % len(hs)] += 1
        i += len(hs)
    top = ["".ljust(widths[0])]
    i = 1
    for title, hs in groups:
        span = sum(widths[i:i + len(hs)]) + 2 * (len(hs) - 1)
        top.append(title.center(span))
        i += len(hs)

    def line(cells: Sequence[str]) -> str:
        out = [cells[0].ljust(widths[0])]
        out += [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]
        return "  ".join(out).rstrip()

    text = ["  ".join(top).rstrip(), line(sub)]
    text.append("-" * len(text[1]))
    text += [line(r) for r in rows]
    return "\n".join(text) + "\n"


def packet_accounting_table(summaries: Mapping[str, Summary], packet_bytes: int = 1000) -> str:
    """dcbt Tables 1-2 over the whole run, from the bottleneck's counters: TCP packets
    delivered (departed the bottleneck queue), TCP drop rate (drops / arrivals), TCP
    throughput (delivered * packet_bytes * 8 / run length), tagged packets delivered,
    tagged drop rate."""
    head = ["algorithm", "TCP delivered", "TCP drop %", "TCP kbit/s",
            "tagged delivered", "tagged drop %"]
    rows = []
    for algo, s in summaries.items():
        sw = s.get("switch") or {}
        bn = sw.get("bottleneck") or {}
        port = (sw.get("ports") or {}).get(f"{bn.get('switch')}:{bn.get('port')}")
        if not port:
            rows.append([algo] + ["-"] * (len(head) - 1))
            continue
        run, secs = port["run"], s["scenario"]["duration_s"]
        tcp, tagged = run["TCP"], run["TAGGED"]

        def pct(c: Mapping[str, Any]) -> str:
            return "-" if not c["arrivals"] else f"{100 * c['drops_total'] / c['arrivals']:.2f}"

        rows.append([algo, str(tcp["departures"]), pct(tcp),
                     f"{tcp['departures'] * packet_bytes * 8 / 1000 / secs:.0f}",
                     str(tagged["departures"]), pct(tagged)])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths))) for r in [head, *rows]]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------


def _phase_bounds(s: Summary) -> list[float]:
    ps = s["scenario"]["phases"]
    b = sorted({p["start_s"] for p in ps} | {p["end_s"] for p in ps})
    return b


def plot_class_throughput(summaries: Mapping[str, Summary], path: Union[str, Path]) -> Path:
    """dcbt Fig. 8: grouped bars per phase (TCP, TAGGED, UNTAGGED average per-flow
    throughput, kbit/s), one panel per algorithm, the fair share as a dashed line."""
    n = len(summaries)
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n + 0.6, 3.8), sharey=True, squeeze=False)
    ymax = 0.0
    for ax, (algo, s) in zip(axes[0], summaries.items()):
        phases = _phase_names(s)
        w = 0.8 / len(CLASSES)
        for k, c in enumerate(CLASSES):
            vals = [_get(s["phases"][p], "class_avg_per_flow_kbps", c) for p in phases]
            xs = [i + (k - 1) * w for i in range(len(phases))]
            ax.bar(xs, [v or 0 for v in vals], width=w, color=CLASS_COLORS[c], label=c)
            for x, v in zip(xs, vals):
                if v is None:
                    ax.text(x, 0, "n/a", ha="center", va="bottom", fontsize=6, rotation=90, color="0.4")
            ymax = max(ymax, *[v or 0 for v in vals])
        for i, p in enumerate(phases):
            fs = s["phases"][p].get("fair_share_kbps")
            if fs:
                ax.hlines(fs, i - 0.45, i + 0.45, colors="k", linestyles="--", linewidth=1,
                          label="fair share" if i == 0 else None)
                ymax = max(ymax, fs)
        ax.set_xticks(range(len(phases)))
        ax.set_xticklabels([f"{p}\n{s['phases'][p]['start_s']:g}-{s['phases'][p]['end_s']:g} s"
                            for p in phases], fontsize=8)
        ax.set_title(algo)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("average per-flow throughput (kbit/s)")
    axes[0][0].set_ylim(0, ymax * 1.12 if ymax > 0 else 1)
    h, lab = axes[0][0].get_legend_handles_labels()
    fig.legend(h, lab, loc="upper center", ncol=len(lab), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    return _save(fig, path)


def plot_jain(summaries: Mapping[str, Summary], path: Union[str, Path]) -> Path:
    """dcbt Fig. 11: Jain's fairness index per phase, one bar per algorithm."""
    first = next(iter(summaries.values()))
    phases = _phase_names(first)
    n = len(summaries)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(phases) * max(1, n) / 2 + 2), 3.6))
    w = 0.8 / max(1, n)
    for k, (algo, s) in enumerate(summaries.items()):
        vals = [_get(s["phases"].get(p), "jain") for p in phases]
        xs = [i - 0.4 + w * (k + 0.5) for i in range(len(phases))]
        bars = ax.bar(xs, [v or 0 for v in vals], width=w, label=algo)
        for b, v in zip(bars, vals):
            ax.text(b.get_x() + b.get_width() / 2, (v or 0) + 0.01, _fmt(v, 2), ha="center",
                    va="bottom", fontsize=7)
    ax.set_xticks(range(len(phases)))
    ax.set_xticklabels(phases)
    ax.set_ylim(0, 1.12)
    ax.set_ylabel("Jain's fairness index")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title("Fairness among all active flows per phase")
    fig.tight_layout()
    return _save(fig, path)


def _mark_phases(ax: Any, s: Summary) -> None:
    for b in _phase_bounds(s)[1:-1]:
        ax.axvline(b, color="0.3", linestyle=":", linewidth=1)
    for p in s["scenario"]["phases"]:
        ax.text((p["start_s"] + p["end_s"]) / 2, 1.0, p["name"], transform=ax.get_xaxis_transform(),
                ha="center", va="bottom", fontsize=7, color="0.3")


def plot_queue_occupancy(summaries: Mapping[str, Summary], path: Union[str, Path]) -> Path:
    """Bottleneck queue occupancy per class (packets, stacked) over time, per algorithm."""
    n = len(summaries)
    fig, axes = plt.subplots(n, 1, figsize=(8, 2.3 * n + 0.5), sharex=True, squeeze=False)
    for ax, (algo, s) in zip(axes[:, 0], summaries.items()):
        occ = _get(s, "switch", "occupancy")
        if not occ or not occ.get("t_s"):
            ax.text(0.5, 0.5, "no counter data", transform=ax.transAxes, ha="center", color="0.4")
        else:
            ax.stackplot(occ["t_s"], *[occ[c] for c in CLASSES], labels=list(CLASSES),
                         colors=[CLASS_COLORS[c] for c in CLASSES], alpha=0.85, step="post")
            bn = s["switch"]["bottleneck"]
            ax.text(0.995, 0.95, f"{bn['switch']}:{bn['port']}", transform=ax.transAxes, ha="right",
                    va="top", fontsize=7, color="0.3")
        _mark_phases(ax, s)
        ax.set_xlim(0, s["scenario"]["duration_s"])
        ax.set_ylabel(f"{algo}\nqueued (pkts)")
        ax.grid(alpha=0.3)
    for ax in axes[:, 0]:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper left", ncol=3)
            break
    axes[-1, 0].set_xlabel("time (s)")
    fig.tight_layout()
    return _save(fig, path)


def plot_mm_delay(summaries: Mapping[str, Summary], path: Union[str, Path]) -> Path:
    """dcbt Fig. 12-13: one MM_APP flow's one-way delay per packet, per algorithm."""
    n = len(summaries)
    fig, axes = plt.subplots(n, 1, figsize=(8, 2.3 * n + 0.5), sharex=True, sharey=True, squeeze=False)
    for ax, (algo, s) in zip(axes[:, 0], summaries.items()):
        ser = s.get("mm_delay_series")
        if not ser or not ser.get("t_s"):
            ax.text(0.5, 0.5, "no MM_APP packets", transform=ax.transAxes, ha="center", color="0.4")
        else:
            ax.plot(ser["t_s"], ser["delay_ms"], ".", markersize=1.5, color=CLASS_COLORS["TAGGED"])
            ax.text(0.995, 0.95, f"flow {ser['flow_id']}", transform=ax.transAxes, ha="right",
                    va="top", fontsize=7, color="0.3")
        _mark_phases(ax, s)
        ax.set_xlim(0, s["scenario"]["duration_s"])
        ax.set_ylabel(f"{algo}\ndelay (ms)")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("send time (s)")
    fig.tight_layout()
    return _save(fig, path)


def plot_mm_delay_cdf(summaries: Mapping[str, Summary], path: Union[str, Path]) -> Path:
    """The tagged class's one-way delay CDF over the run, one line per algorithm."""
    fig, ax = plt.subplots(figsize=(7, 4))
    drawn = 0
    for algo, s in summaries.items():
        cdf = _get(s, "run", "udp_class", "TAGGED", "delay_cdf_ms")
        if not cdf:
            continue
        ax.plot(cdf, [i / (len(cdf) - 1) for i in range(len(cdf))], label=algo,
                linewidth=2.2 if "CHIPS" in algo else 1.2)
        drawn += 1
    if not drawn:
        ax.text(0.5, 0.5, "no MM_APP packets", transform=ax.transAxes, ha="center", color="0.4")
    else:
        ax.legend(fontsize=8, loc="lower right")
    ax.set_xlabel("tagged one-way delay (ms)")
    ax.set_ylabel("fraction of tagged packets")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)


def _save(fig: Any, path: Union[str, Path]) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, dpi=FIG_DPI)
    plt.close(fig)
    return p


def write_report(summaries: Mapping[str, Summary], out_dir: Union[str, Path]) -> dict[str, Path]:
    """table.txt and the five PNGs into out_dir; returns {key: path}."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    (d / TABLE_FILE).write_text(comparison_table(summaries) + "\nPacket accounting at the "
                                "bottleneck over the run (dcbt Tables 1-2):\n"
                                + packet_accounting_table(summaries))
    return {
        "table": d / TABLE_FILE,
        "fig8": plot_class_throughput(summaries, d / PLOT_FILES["fig8"]),
        "fig11": plot_jain(summaries, d / PLOT_FILES["fig11"]),
        "queue": plot_queue_occupancy(summaries, d / PLOT_FILES["queue"]),
        "delay": plot_mm_delay(summaries, d / PLOT_FILES["delay"]),
        "delay_cdf": plot_mm_delay_cdf(summaries, d / PLOT_FILES["delay_cdf"]),
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mmaqm_exp.report",
                                description="comparison table + plots from summary.json files")
    p.add_argument("--run", action="append", required=True, metavar="NAME=PATH",
                   help="algorithm name and its run directory or summary.json (repeat)")
    p.add_argument("--out", required=True, help="output directory")
    a = p.parse_args(argv)
    summaries = {}
    for item in a.run:
        name, _, path = item.partition("=")
        f = Path(path)
        if f.is_dir():
            f = f / "summary.json"
        summaries[name] = json.loads(f.read_text())
    paths = write_report(summaries, a.out)
    print(paths["table"].read_text(), end="")
    for k, v in paths.items():
        if k != "table":
            print(v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
