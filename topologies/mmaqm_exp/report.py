"""Comparison table and plots over several runs (one summary.json per algorithm).

    summaries = {"RED": json.load(...), "DCBT": json.load(...)}
    print(comparison_table(summaries))
    write_report(summaries, "results/report")   # table.txt + the PNGs

Re-render a run's plots (live or archived under docs/results, summary.json(.gz)) without
touching its tables:
    python -m mmaqm_exp.report --from-run docs/results/<run> --plots-only

Plots (matplotlib, Agg, PNG), each page width (FIG_WIDTH_IN at FIG_DPI, 1248 px) with the
algorithms, phases or classes as small multiples (a grid of at most MAX_COLS columns,
shared axes, fonts >= 9 pt, one legend per figure):
  fig8_class_throughput.png  dcbt Fig. 8: per algorithm, average per-flow
                             throughput of each class per phase, fair share dashed
  fig11_jain.png             dcbt Fig. 11: Jain's index per phase, one bar per algorithm
  queue_occupancy.png        bottleneck queue per class over time (from the counters)
  mm_delay.png               dcbt Fig. 12-13: one MM_APP flow's one-way delay per packet
  mm_delay_cdf.png           the tagged class's one-way delay distribution (CDF), per
                             algorithm (D-CBT with and without ChIPS, dcbt Fig. 12)
  bandwidth_variation.png    feng Fig. 3: per class, bandwidth variation against the
                             smoothing window, one line per algorithm
  class_averages.png         dcbt Fig. 10: per RED-based algorithm, RED's and the UDP
                             class averages over time (BMv2 registers, mmaqm_exp.registers),
                             min_th / max_th and the class thresholds
and bandwidth_variation.txt (feng section 3: 1 s / 8 s variation per class, and the
smoothing each algorithm needs to match the first one's unsmoothed variation).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import sys
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

from .metrics import smoothing_to_reach_s  # noqa: E402

CLASSES = ("TCP", "TAGGED", "UNTAGGED")
CLASS_SHORT = {"TCP": "TCP", "TAGGED": "TAG", "UNTAGGED": "UNT"}
CLASS_COLORS = {"TCP": "#1f77b4", "TAGGED": "#2ca02c", "UNTAGGED": "#d62728"}
PLOT_FILES = {
    "fig8": "fig8_class_throughput.png",
    "fig11": "fig11_jain.png",
    "queue": "queue_occupancy.png",
    "delay": "mm_delay.png",
    "delay_cdf": "mm_delay_cdf.png",
    "tcp_throughput": "tcp_throughput.png",
    "tagged_latency": "tagged_latency.png",
    "bw_variation": "bandwidth_variation.png",
    "class_averages": "class_averages.png",
}
TABLE_FILE = "table.txt"
PAPER_TABLE_FILE = "paper_table.txt"
BW_TABLE_FILE = "bandwidth_variation.txt"

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


def packet_accounting(s: Summary, packet_bytes: int = 1000) -> Optional[dict[str, Any]]:
    """dcbt Tables 1-2 of one run from the bottleneck's counters: tcp_delivered /
    tagged_delivered (departed the bottleneck queue), tcp_drop_pct / tagged_drop_pct
    (drops / arrivals, None without arrivals), tcp_kbps (delivered * packet_bytes * 8 /
    run length). None without the bottleneck's counters."""
    sw = s.get("switch") or {}
    bn = sw.get("bottleneck") or {}
    port = (sw.get("ports") or {}).get(f"{bn.get('switch')}:{bn.get('port')}")
    if not port:
        return None
    run, secs = port["run"], s["scenario"]["duration_s"]
    tcp, tagged = run["TCP"], run["TAGGED"]

    def pct(c: Mapping[str, Any]) -> Optional[float]:
        return 100 * c["drops_total"] / c["arrivals"] if c["arrivals"] else None

    return {"tcp_delivered": tcp["departures"], "tcp_drop_pct": pct(tcp),
            "tcp_kbps": tcp["departures"] * packet_bytes * 8 / 1000 / secs,
            "tagged_delivered": tagged["departures"], "tagged_drop_pct": pct(tagged)}


def packet_accounting_table(summaries: Mapping[str, Summary], packet_bytes: int = 1000) -> str:
    """dcbt Tables 1-2 over the whole run, from the bottleneck's counters: TCP packets
    delivered (departed the bottleneck queue), TCP drop rate (drops / arrivals), TCP
    throughput (delivered * packet_bytes * 8 / run length), tagged packets delivered,
    tagged drop rate."""
    head = ["algorithm", "TCP delivered", "TCP drop %", "TCP kbit/s",
            "tagged delivered", "tagged drop %"]
    rows = []
    for algo, s in summaries.items():
        acc = packet_accounting(s, packet_bytes)
        if acc is None:
            rows.append([algo] + ["-"] * (len(head) - 1))
            continue
        rows.append([algo, str(acc["tcp_delivered"]), _fmt(acc["tcp_drop_pct"], 2),
                     f"{acc['tcp_kbps']:.0f}", str(acc["tagged_delivered"]),
                     _fmt(acc["tagged_drop_pct"], 2)])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths))) for r in [head, *rows]]
    return "\n".join(lines) + "\n"


def fred_slot_lines(summaries: Mapping[str, Summary]) -> str:
    """For each run with FRED at the bottleneck, the flow-slot collisions it had (the
    controller's samples of the active flows' slots; analysis.fred_slot_summary)."""
    out = []
    for algo, s in summaries.items():
        fs = _get(s, "switch", "fred_slots")
        if fs:
            frac = fs["sharing_fraction"]
            out.append(f"FRED's flow slots ({algo}): at most {fs['peak_flows']} active flows, "
                       f"at most {fs['peak_sharing']} of them sharing a slot; "
                       f"{_fmt(None if frac is None else 100 * frac, 2)} % of active flows "
                       f"shared a slot, averaged over {fs['samples']} samples\n")
    return ("\n" + "".join(out)) if out else ""


SWITCH_COST_FILE = "switch_cost.txt"
CAPACITY_BENCH_FILE = "capacity-bench.json"   # the bench JSON switch_cost.txt was made from
BENCH_BASELINE = "minimal_ipv4"
BENCH_SATURATED_LOSS_PCT = 2.0   # bench/run_bench.py's own warning: below this, not saturated


def switch_cost_table(bench: Mapping[str, Any], algorithms: Sequence[str]) -> str:
    """The switch's per-packet cost of each algorithm from a `make bench` JSON
    (bench/run_bench.py; `make run` measures one before the experiment): the median
    packet rate BMv2 forwarded through the mmaqm program under that algorithm, its
    inverse in microseconds per packet, and its ratio to the minimal IPv4 router
    measured in the same bench run."""
    rows = {r["variant"]: r for r in bench.get("summary", [])}
    head = ["algorithm", "kpps", "us/pkt", f"x {BENCH_BASELINE}"]
    out = []
    for name in (BENCH_BASELINE, *algorithms):
        r = rows.get(name)
        if r is None:
            out.append([name, "-", "-", "-"])
            continue
        pps = float(r["pps_median"])
        out.append([name, f"{pps / 1000:.1f}", f"{1e6 / pps:.1f}" if pps else "-",
                    f"{float(r['ratio']):.2f}"])
    widths = [max(len(r[i]) for r in [head, *out]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths))) for r in [head, *out]]
    base = rows.get(BENCH_BASELINE)
    if base is not None and float(base.get("loss_pct_median", 100)) < BENCH_SATURATED_LOSS_PCT:
        lines.append(f"note: {BENCH_BASELINE} lost {float(base['loss_pct_median']):.1f} % of the "
                     f"offered {float(base.get('offered_pps_median', 0)):.0f} pps, so it was not "
                     f"saturated: its capacity is higher, and the ratios are upper bounds")
    drops = [name for name in algorithms if (rows.get(name) or {}).get("aqm_drops")]
    if drops:
        lines.append(f"note: the AQM dropped packets under {', '.join(drops)} (the queue grew "
                     f"past a threshold while ingress outran egress); their kpps count only "
                     f"delivered packets")
    return "\n".join(lines) + "\n"


def _class_flows(s: Summary, cls: str) -> list[Mapping[str, Any]]:
    return [f for f in s["flows"].values() if f["class"] == cls]


def class_variation_curve(s: Summary, cls: str) -> list[tuple[float, float]]:
    """feng Fig. 3 for a class: (window_s, mean over the class's flows of their
    bandwidth variation in kbit/s) at every smoothing window all its flows have."""
    curves = [f.get("bandwidth_variation_curve") for f in _class_flows(s, cls)]
    if not curves or any(not c for c in curves):
        return []
    common = [w for w in curves[0]["windows_s"] if all(w in c["windows_s"] for c in curves)]
    return [(w, sum(c["std_kbps"][c["windows_s"].index(w)] for c in curves) / len(curves))
            for w in common]


def bandwidth_variation_table(summaries: Mapping[str, Summary]) -> str:
    """feng section 3, one row per algorithm and class that has flows: flows, average
    per-flow throughput over the run (kbit/s); bandwidth variation of 1 s and 8 s
    windows (population std in kbit/s, the absolute measure of feng Fig. 3, and
    std / mean), each the mean over the class's flows; the variation of the shortest
    smoothing window; and the smoothing (s) after which the class's variation falls
    to the *first* algorithm's shortest-window variation of the same class (feng
    section 3.2: the delay RED needs to match drop-tail; "-" if not within 8 s)."""
    head = ["algorithm", "class", "flows", "kbit/s", "1s std", "1s cov", "8s std", "8s cov",
            "min-window std", "smoothing s"]
    rows: list[list[str]] = []
    first = next(iter(summaries.values()), None)
    for algo, s in summaries.items():
        for cls in CLASSES:
            flows = _class_flows(s, cls)
            if not flows:
                continue

            def mean(w: str, k: str) -> Optional[float]:
                xs = [_get(f, "bandwidth_variation", w, k) for f in flows]
                return None if any(x is None for x in xs) else sum(xs) / len(xs)

            curve = class_variation_curve(s, cls)
            ref = class_variation_curve(first, cls) if first is not None else []
            smooth = smoothing_to_reach_s(curve, ref[0][1]) if curve and ref else None
            rows.append([algo, cls, str(len(flows)),
                         _fmt(_get(s, "run", "class_avg_per_flow_kbps", cls)),
                         _fmt(mean("1s", "std_kbps")), _fmt(mean("1s", "cov"), 3),
                         _fmt(mean("8s", "std_kbps")), _fmt(mean("8s", "cov"), 3),
                         "-" if not curve else f"{curve[0][1]:.0f} ({curve[0][0]:g} s)",
                         _fmt(smooth, 2)])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths))).rstrip() for r in [head, *rows]]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------
# Every figure is page width (FIG_WIDTH_IN x FIG_DPI = 1248 px) and lays several
# algorithms, phases or classes out as small multiples: a grid of at most MAX_COLS panels
# per row (TIME_COLS for time series, which need the width), shared axes where the panels
# compare the same quantity, fonts of at least 9 pt, one legend for the figure.

FIG_WIDTH_IN = 9.6
FIG_DPI = 130
MAX_COLS = 4
TIME_COLS = 2
PLOT_STYLE = {
    "font.size": 10, "axes.titlesize": 10, "axes.labelsize": 10, "xtick.labelsize": 9,
    "ytick.labelsize": 9, "legend.fontsize": 9, "figure.titlesize": 11,
    "legend.title_fontsize": 9,
}
NOTE_PT = 9        #: annotations inside the panels
PHASE_PT = 9       #: the phase names above the top row's panels
ALGO_CMAP = "tab10"
BW_WINDOW_TICKS_S = (0.1, 0.2, 0.5, 1, 2, 5, 10)


def _algo_colors(names: Sequence[str]) -> dict[str, Any]:
    """One colour per algorithm, in the summaries' order (the same in every figure)."""
    cmap = plt.get_cmap(ALGO_CMAP)
    return {a: cmap(i % cmap.N) for i, a in enumerate(names)}


def _styled(fn: Any) -> Any:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with plt.rc_context(PLOT_STYLE):
            return fn(*args, **kwargs)
    return wrapper


def _grid(n: int, ncols: int, panel_h: float, *, extra_h: float = 0.6, sharex: Any = False,
          sharey: Any = False) -> tuple[Any, list[Any], list[Any]]:
    """A page-wide figure with n panels in rows of at most ncols (constrained layout);
    returns (figure, the n panels in reading order, the spare cells of the last row,
    switched off: a place for the legend)."""
    n = max(1, n)
    ncols = max(1, min(n, ncols, MAX_COLS))
    nrows = -(-n // ncols)
    fig, axs = plt.subplots(nrows, ncols, figsize=(FIG_WIDTH_IN, panel_h * nrows + extra_h),
                            sharex=sharex, sharey=sharey, squeeze=False, layout="constrained")
    flat = list(axs.flat)
    for ax in flat[n:]:
        ax.axis("off")
    return fig, flat[:n], flat[n:]


def _label_outer(axes: Sequence[Any], ncols: int, xlabel: Optional[str],
                 ylabel: Optional[str]) -> None:
    """Axis labels on the outer panels only: the x label (and tick labels, which shared
    axes hide under a panel) on the lowest panel of each column, the y label on the
    first column."""
    ncols = max(1, min(len(axes), ncols, MAX_COLS))
    for i, ax in enumerate(axes):
        if i + ncols >= len(axes):
            ax.tick_params(labelbottom=True)
            if xlabel:
                ax.set_xlabel(xlabel)
        if i % ncols == 0 and ylabel:
            ax.set_ylabel(ylabel)


def _fig_legend(fig: Any, spare: Sequence[Any], handles: Sequence[Any], labels: Sequence[str],
                *, ncol: Optional[int] = None, where: str = "upper center") -> None:
    """The figure's one legend: in a spare grid cell if there is one, else outside the
    panels (one row, or ncol columns)."""
    if not handles:
        return
    if spare:
        spare[0].legend(handles, labels, loc="center", frameon=False)
    else:
        fig.legend(handles, labels, loc=f"outside {where}", ncol=ncol or len(labels),
                   frameon=False)


def _phase_bounds(s: Summary) -> list[float]:
    ps = s["scenario"]["phases"]
    b = sorted({p["start_s"] for p in ps} | {p["end_s"] for p in ps})
    return b


def _mark_phases(ax: Any, s: Summary, names: bool = True) -> None:
    """The phase boundaries dotted; with names, each phase's name above the panel."""
    for b in _phase_bounds(s)[1:-1]:
        ax.axvline(b, color="0.3", linestyle=":", linewidth=1)
    if names:
        for p in s["scenario"]["phases"]:
            ax.text((p["start_s"] + p["end_s"]) / 2, 1.01, p["name"],
                    transform=ax.get_xaxis_transform(), ha="center", va="bottom",
                    fontsize=PHASE_PT, color="0.3", clip_on=False)


def _time_panel_title(ax: Any, i: int, ncols: int, title: str) -> None:
    """A time-series panel's title; the top row's sits above the phase names."""
    ax.set_title(title, pad=16 if i < ncols else 4)


@_styled
def plot_class_throughput(summaries: Mapping[str, Summary], path: Union[str, Path]) -> Path:
    """dcbt Fig. 8: grouped bars per phase (TCP, TAGGED, UNTAGGED average per-flow
    throughput, kbit/s), one panel per algorithm in a grid (shared y), the fair share
    as a dashed line."""
    n = len(summaries)
    ncols = MAX_COLS
    fig, axes, spare = _grid(n, ncols, 2.5, extra_h=0.7, sharey=True)
    ymax = 0.0
    for ax, (algo, s) in zip(axes, summaries.items()):
        phases = _phase_names(s)
        w = 0.8 / len(CLASSES)
        for k, c in enumerate(CLASSES):
            vals = [_get(s["phases"][p], "class_avg_per_flow_kbps", c) for p in phases]
            xs = [i + (k - 1) * w for i in range(len(phases))]
            ax.bar(xs, [v or 0 for v in vals], width=w, color=CLASS_COLORS[c], label=c)
            for x, v in zip(xs, vals):
                if v is None:
                    ax.text(x, 0, "n/a", ha="center", va="bottom", fontsize=NOTE_PT, rotation=90,
                            color="0.4")
            ymax = max(ymax, *[v or 0 for v in vals])
        for i, p in enumerate(phases):
            fs = s["phases"][p].get("fair_share_kbps")
            if fs:
                ax.hlines(fs, i - 0.45, i + 0.45, colors="k", linestyles="--", linewidth=1,
                          label="fair share" if i == 0 else None)
                ymax = max(ymax, fs)
        ax.set_xticks(range(len(phases)))
        ax.set_xticklabels([f"{p}\n{s['phases'][p]['start_s']:g}-{s['phases'][p]['end_s']:g} s"
                            for p in phases])
        ax.set_title(algo)
        ax.grid(axis="y", alpha=0.3)
    _label_outer(axes, ncols, None, "per-flow throughput (kbit/s)")
    axes[0].set_ylim(0, ymax * 1.12 if ymax > 0 else 1)
    h, lab = max((ax.get_legend_handles_labels() for ax in axes), key=lambda x: len(x[1]))
    order = [*CLASSES, "fair share"]          # the classes first, as in the bars
    h, lab = zip(*sorted(zip(h, lab), key=lambda x: order.index(x[1]))) if lab else ((), ())
    _fig_legend(fig, spare, list(h), list(lab))
    return _save(fig, path)


@_styled
def plot_jain(summaries: Mapping[str, Summary], path: Union[str, Path]) -> Path:
    """dcbt Fig. 11: Jain's fairness index, one panel per phase (shared axes), one
    horizontal bar per algorithm, the value at its end."""
    first = next(iter(summaries.values()))
    phases = _phase_names(first)
    algos = list(summaries)
    colors = _algo_colors(algos)
    ncols = min(len(phases), 3) if len(phases) != 4 else 4
    fig, axes, spare = _grid(len(phases), ncols, 0.3 * len(algos) + 0.8, extra_h=0.4,
                             sharex=True, sharey=True)
    bounds = {p["name"]: p for p in first["scenario"]["phases"]}
    ys = list(range(len(algos)))
    for ax, p in zip(axes, phases):
        vals = [_get(summaries[a]["phases"].get(p), "jain") for a in algos]
        ax.barh(ys, [v or 0 for v in vals], height=0.7, color=[colors[a] for a in algos])
        for y, v in zip(ys, vals):
            ax.text((v or 0) + 0.015, y, _fmt(v, 2), va="center", ha="left", fontsize=NOTE_PT)
        b = bounds.get(p)
        ax.set_title(p if b is None else f"{p} ({b['start_s']:g}-{b['end_s']:g} s)")
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(ys)
    axes[0].set_yticklabels(algos)
    axes[0].set_ylim(len(algos) - 0.5, -0.5)     # the first algorithm on top
    axes[0].set_xlim(0, 1.2)
    axes[0].set_xticks([0, 0.25, 0.5, 0.75, 1.0])
    _label_outer(axes, ncols, "Jain's fairness index", None)
    fig.suptitle("Fairness among all active flows, per phase")
    return _save(fig, path)


@_styled
def plot_queue_occupancy(summaries: Mapping[str, Summary], path: Union[str, Path]) -> Path:
    """Bottleneck queue occupancy per class (packets, stacked) over time, one panel per
    algorithm in a grid (shared axes)."""
    n = len(summaries)
    fig, axes, spare = _grid(n, TIME_COLS, 1.9, extra_h=0.5, sharex=True, sharey=True)
    for i, (ax, (algo, s)) in enumerate(zip(axes, summaries.items())):
        occ = _get(s, "switch", "occupancy")
        title = algo
        if not occ or not occ.get("t_s"):
            ax.text(0.5, 0.5, "no counter data", transform=ax.transAxes, ha="center", color="0.4")
        else:
            ax.stackplot(occ["t_s"], *[occ[c] for c in CLASSES], labels=list(CLASSES),
                         colors=[CLASS_COLORS[c] for c in CLASSES], alpha=0.85, step="post")
            bn = s["switch"]["bottleneck"]
            title = f"{algo} ({bn['switch']}:{bn['port']})"
        _mark_phases(ax, s, names=i < TIME_COLS)
        ax.set_xlim(0, s["scenario"]["duration_s"])
        _time_panel_title(ax, i, TIME_COLS, title)
        ax.grid(alpha=0.3)
    _label_outer(axes, TIME_COLS, "time (s)", "queued (pkts)")
    h, lab = max((ax.get_legend_handles_labels() for ax in axes), key=lambda x: len(x[1]))
    _fig_legend(fig, spare, h, lab)
    return _save(fig, path)


@_styled
def plot_mm_delay(summaries: Mapping[str, Summary], path: Union[str, Path]) -> Path:
    """dcbt Fig. 12-13: one MM_APP flow's one-way delay per packet, one panel per
    algorithm in a grid (shared axes)."""
    n = len(summaries)
    fig, axes, spare = _grid(n, TIME_COLS, 1.9, extra_h=0.3, sharex=True, sharey=True)
    for i, (ax, (algo, s)) in enumerate(zip(axes, summaries.items())):
        ser = s.get("mm_delay_series")
        if not ser or not ser.get("t_s"):
            ax.text(0.5, 0.5, "no MM_APP packets", transform=ax.transAxes, ha="center", color="0.4")
        else:
            ax.plot(ser["t_s"], ser["delay_ms"], ".", markersize=1.5, color=CLASS_COLORS["TAGGED"])
            ax.text(0.995, 0.95, f"flow {ser['flow_id']}", transform=ax.transAxes, ha="right",
                    va="top", fontsize=NOTE_PT, color="0.3")
        _mark_phases(ax, s, names=i < TIME_COLS)
        ax.set_xlim(0, s["scenario"]["duration_s"])
        _time_panel_title(ax, i, TIME_COLS, algo)
        ax.grid(alpha=0.3)
    _label_outer(axes, TIME_COLS, "send time (s)", "delay (ms)")
    return _save(fig, path)


@_styled
def plot_mm_delay_cdf(summaries: Mapping[str, Summary], path: Union[str, Path]) -> Path:
    """The tagged class's one-way delay CDF over the run, one line per algorithm (one
    panel: the distributions compare best on one axis)."""
    fig, ax = plt.subplots(figsize=(FIG_WIDTH_IN, 4.2), layout="constrained")
    colors = _algo_colors(list(summaries))
    drawn = 0
    for algo, s in summaries.items():
        cdf = _get(s, "run", "udp_class", "TAGGED", "delay_cdf_ms")
        if not cdf:
            continue
        ax.plot(cdf, [i / max(1, len(cdf) - 1) for i in range(len(cdf))], label=algo,
                color=colors[algo], linewidth=2.2 if "CHIPS" in algo else 1.3)
        drawn += 1
    if not drawn:
        ax.text(0.5, 0.5, "no MM_APP packets", transform=ax.transAxes, ha="center", color="0.4")
    else:
        ax.legend(loc="lower right", frameon=True, framealpha=0.9)
    ax.set_xlabel("tagged one-way delay (ms)")
    ax.set_ylabel("fraction of tagged packets")
    ax.grid(alpha=0.3)
    return _save(fig, path)


@_styled
def plot_bandwidth_variation(summaries: Mapping[str, Summary], path: Union[str, Path]) -> Path:
    """feng Fig. 3: bandwidth variation (kbit/s) against the smoothing window, one
    panel per class that has flows (shared x), one line per algorithm."""
    classes = [c for c in CLASSES if any(_class_flows(s, c) for s in summaries.values())] or ["TCP"]
    colors = _algo_colors(list(summaries))
    ncols = 3
    fig, axes, spare = _grid(len(classes), ncols, 3.0, extra_h=0.9, sharex=True)
    for ax, cls in zip(axes, classes):
        drawn = 0
        for algo, s in summaries.items():
            curve = class_variation_curve(s, cls)
            if curve:
                ax.plot([w for w, _ in curve], [v / 1000 for _, v in curve], marker="o",
                        markersize=3.5, color=colors[algo], label=algo)
                drawn += 1
        if drawn:
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(BW_WINDOW_TICKS_S))
            ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set_ylim(bottom=0)
        else:
            ax.text(0.5, 0.5, "no flows", transform=ax.transAxes, ha="center", color="0.4")
        ax.set_title(f"{cls}: variation per flow")
        ax.grid(alpha=0.3)
    _label_outer(axes, ncols, "smoothing window (s)", "std of throughput (Mbit/s)")
    h, lab = max((ax.get_legend_handles_labels() for ax in axes), key=lambda x: len(x[1]))
    _fig_legend(fig, spare, h, lab, ncol=min(len(lab), 4), where="lower center")
    return _save(fig, path)


@_styled
def plot_tcp_throughput(summaries: Mapping[str, Summary], path: Union[str, Path]) -> Path:
    """cbt Figs. 5-6: aggregate TCP throughput (receiver side, kbit/s) per 1 s bin over
    the run, one panel per algorithm in a grid (shared axes); the bottleneck rate
    dashed, phases dotted."""
    n = len(summaries)
    colors = _algo_colors(list(summaries))
    fig, axes, spare = _grid(n, TIME_COLS, 1.8, extra_h=0.5, sharex=True, sharey=True)
    first = next(iter(summaries.values()))
    rate = first.get("bottleneck_rate_kbps")
    for i, (ax, (algo, s)) in enumerate(zip(axes, summaries.items())):
        ser = s.get("tcp_throughput") or {}
        kbps, w = ser.get("kbps") or [], ser.get("bin_s", 1.0)
        ax.plot([(k + 0.5) * w for k in range(len(kbps))], kbps, color=colors[algo],
                linewidth=1.4, label="aggregate TCP")
        if rate:
            ax.axhline(rate, color="k", linestyle="--", linewidth=0.9, label="bottleneck rate")
        _mark_phases(ax, s, names=i < TIME_COLS)
        ax.set_xlim(0, s["scenario"]["duration_s"])
        ax.set_ylim(bottom=0)
        _time_panel_title(ax, i, TIME_COLS, algo)
        ax.grid(alpha=0.3)
    _label_outer(axes, TIME_COLS, "time (s)", "TCP (kbit/s)")
    h, lab = axes[0].get_legend_handles_labels()
    _fig_legend(fig, spare, h, lab)
    return _save(fig, path)


@_styled
def plot_tagged_latency(summaries: Mapping[str, Summary], path: Union[str, Path]) -> Path:
    """cbt Fig. 7: each tagged flow's mean one-way latency per 1 s of send time, one
    panel per algorithm in a grid (shared axes), with the class's mean latency and mean
    queueing delay."""
    n = len(summaries)
    fig, axes, spare = _grid(n, TIME_COLS, 1.9, extra_h=0.3, sharex=True, sharey=True)
    for i, (ax, (algo, s)) in enumerate(zip(axes, summaries.items())):
        flows = s.get("tagged_latency") or {}
        for fid, f in flows.items():
            ys = f["series"]["mean_ms"]
            w = f["series"]["bin_s"]
            ax.plot([(k + 0.5) * w for k in range(len(ys))],
                    [float("nan") if y is None else y for y in ys], linewidth=0.9, label=f"flow {fid}")
        if not flows:
            ax.text(0.5, 0.5, "no tagged flows", transform=ax.transAxes, ha="center", color="0.4")
        else:
            m = tagged_latency_means(s)
            ax.text(0.99, 0.95, f"mean {_fmt(m['mean_ms'], 1)}, queueing "
                                f"{_fmt(m['queueing_mean_ms'], 1)}, std {_fmt(m['std_ms'], 1)} ms",
                    transform=ax.transAxes, ha="right", va="top", fontsize=NOTE_PT, color="0.2",
                    bbox={"facecolor": "white", "alpha": 0.75, "edgecolor": "none", "pad": 1})
        _mark_phases(ax, s, names=i < TIME_COLS)
        ax.set_xlim(0, s["scenario"]["duration_s"])
        _time_panel_title(ax, i, TIME_COLS, algo)
        ax.grid(alpha=0.3)
    _label_outer(axes, TIME_COLS, "send time (s)", "latency (ms)")
    return _save(fig, path)


def tagged_queueing_ms(s: Summary, phase: str) -> Optional[float]:
    """The tagged class's mean one-way delay in a phase minus the smallest delay any
    tagged packet saw (the propagation floor): its queueing delay (cbt §4.3); None
    without tagged packets."""
    mean = _get(s["phases"].get(phase, {}), "udp_class", "TAGGED", "mean_ms")
    floor = min((f["min_ms"] for f in (s.get("tagged_latency") or {}).values()
                 if f.get("min_ms") is not None), default=None)
    return None if mean is None or floor is None else mean - floor


def tagged_latency_means(s: Summary) -> dict[str, Optional[float]]:
    """The mean over the tagged flows of their mean latency, mean queueing delay and
    delay standard deviation (ms); None without tagged packets."""
    flows = [f for f in (s.get("tagged_latency") or {}).values() if f.get("count")]
    return {k: (sum(f[k] for f in flows) / len(flows) if flows else None)
            for k in ("mean_ms", "queueing_mean_ms", "std_ms")}


def paper_table(summaries: Mapping[str, Summary], paper_loss_pct: Mapping[str, float]) -> str:
    """cbt section 4, one row per algorithm: the tagged class's loss over the run (%)
    beside the paper's (Table 1; "-" where it has none), TCP's share of the blast phase
    (%), Jain's index of the blast phase, the tagged flows' mean latency, queueing delay
    (mean - min) and delay std over the run (ms, cbt Fig. 7), their mean latency and
    queueing delay in the blast phase (the paper's "CBT averages around 25ms" is under
    congestion), the effective RED queue limit and RED's
    thresholds (packets, cbt section 4.2) beside the measured TCP queue (sampled max
    over the run and the blast, time-weighted mean in the blast), whether every switch
    kept up, and the number of validity warnings."""
    head = ["algorithm", "tag loss %", "paper %", "TCP blast %", "Jain blast", "lat ms",
            "queue ms", "std ms", "lat blast", "queue blast", "RED limit", "min/max th", "TCP q max", "max blast",
            "mean blast", "kept up", "warnings"]
    rows = []
    for algo, s in summaries.items():
        blast = s["scenario"].get("blast_phase")
        ph = s["phases"].get(blast, {}) if blast else {}
        loss = _get(s, "run", "udp_class", "TAGGED", "loss")
        share = _get(ph, "class_share", "TCP")
        lat = tagged_latency_means(s)
        lat_blast = _get(ph, "udp_class", "TAGGED", "mean_ms")
        q_blast = tagged_queueing_ms(s, blast) if blast else None
        lim = s.get("red_queue_limit") or {}
        keep = s.get("switch_keepup") or {}
        lost = sum(k.get("lost_before_aqm_pkts", 0) for k in keep.values() if k.get("checked"))
        kept = ("-" if not keep else "yes" if all(k.get("checked") and k.get("ok")
                                                  for k in keep.values()) else f"NO ({lost} lost)")
        rows.append([algo, _fmt(None if loss is None else 100 * loss, 2),
                     _fmt(paper_loss_pct.get(algo), 1), _fmt(None if share is None else 100 * share, 1),
                     _fmt(_get(ph, "jain"), 3), _fmt(lat["mean_ms"], 1),
                     _fmt(lat["queueing_mean_ms"], 1), _fmt(lat["std_ms"], 2),
                     _fmt(lat_blast, 1), _fmt(q_blast, 1),
                     _fmt(lim.get("effective_red_limit_pkts")),
                     "-" if not lim else f"{lim['min_th_pkts']:g}/{lim['max_th_pkts']:g}",
                     _fmt(lim.get("measured_tcp_max_pkts")), _fmt(lim.get("measured_tcp_max_blast_pkts")),
                     _fmt(lim.get("measured_tcp_mean_blast_pkts"), 1), kept,
                     str(len(s.get("warnings", [])))])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths))) for r in [head, *rows]]
    return "\n".join(lines) + "\n"


def write_paper_table(summaries: Mapping[str, Summary], out_dir: Union[str, Path],
                      paper_loss_pct: Mapping[str, float]) -> Path:
    """paper_table.txt (paper_table) into out_dir."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    p = d / PAPER_TABLE_FILE
    p.write_text("Tagged loss, TCP share, latency and RED queue limit (cbt section 4, Table 1, "
                 "Figs. 5-7):\n" + paper_table(summaries, paper_loss_pct))
    return p


def _save(fig: Any, path: Union[str, Path]) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, dpi=FIG_DPI)
    plt.close(fig)
    return p


@_styled
def plot_class_averages(summaries: Mapping[str, Summary], path: Union[str, Path]) -> Path:
    """dcbt Fig. 10 (CBT's queue averages): one panel per RED-based algorithm with register
    samples, in a grid (shared axes); RED's average and the tagged / untagged class
    averages (packets) over time, min_th and max_th dashed, the class thresholds dotted in
    the class's colour (CBT: the policy's; D-CBT: from the pushed shares, the tagged one
    moving with RED's average)."""
    runs = [(a, s) for a, s in summaries.items()
            if _get(s, "registers", "series", "t_s") and (s.get("policy") or {}).get("min_th_pkts")
            is not None]
    fig, axes, spare = _grid(len(runs), TIME_COLS, 2.0, extra_h=0.5, sharex=True, sharey=True)
    if not runs:
        axes[0].text(0.5, 0.5, "no register samples", transform=axes[0].transAxes,
                     ha="center", color="0.4")
    for i, (ax, (algo, s)) in enumerate(zip(axes, runs)):
        ser, pol = s["registers"]["series"], s["policy"]
        t = ser["t_s"]
        ax.plot(t, ser["red_avg_pkts"], color="k", linewidth=1.1, label="RED average")
        for c in ("TAGGED", "UNTAGGED") if pol.get("algorithm") != "RED" else ():  # RED: none
            ax.plot(t, ser[f"{c.lower()}_avg_pkts"], color=CLASS_COLORS[c], linewidth=1.1,
                    label=f"{c.lower()} average")
            th = ser.get(f"{c.lower()}_th_pkts") or []
            if any(v is not None for v in th):
                ax.step(t, [float("nan") if v is None else v for v in th], where="post",
                        color=CLASS_COLORS[c], linestyle=":", linewidth=1.0,
                        label=f"{c.lower()} threshold")
        for key, name in (("min_th_pkts", "min_th"), ("max_th_pkts", "max_th")):
            ax.axhline(pol[key], color="0.45", linestyle="--", linewidth=0.8)
            ax.text(0.995, pol[key], name, transform=ax.get_yaxis_transform(), fontsize=NOTE_PT,
                    ha="right", va="center", color="0.3",
                    bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none", "pad": 1})
        _mark_phases(ax, s, names=i < TIME_COLS)
        ax.set_xlim(0, s["scenario"]["duration_s"])
        ax.set_ylim(bottom=0)
        _time_panel_title(ax, i, TIME_COLS, algo)
        ax.grid(alpha=0.3)
    _label_outer(axes, TIME_COLS, "time since traffic start (s)", "average (pkts)")
    if runs:   # the legend of the panel with the most lines (a RED panel has no class lines)
        h, lab = max((ax.get_legend_handles_labels() for ax in axes), key=lambda x: len(x[1]))
        _fig_legend(fig, spare, h, lab)
    return _save(fig, path)


def write_plots(summaries: Mapping[str, Summary], out_dir: Union[str, Path]) -> dict[str, Path]:
    """The nine PNGs (PLOT_FILES) into out_dir; returns {key: path}."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    return {
        "bw_variation": plot_bandwidth_variation(summaries, d / PLOT_FILES["bw_variation"]),
        "fig8": plot_class_throughput(summaries, d / PLOT_FILES["fig8"]),
        "fig11": plot_jain(summaries, d / PLOT_FILES["fig11"]),
        "queue": plot_queue_occupancy(summaries, d / PLOT_FILES["queue"]),
        "delay": plot_mm_delay(summaries, d / PLOT_FILES["delay"]),
        "delay_cdf": plot_mm_delay_cdf(summaries, d / PLOT_FILES["delay_cdf"]),
        "tcp_throughput": plot_tcp_throughput(summaries, d / PLOT_FILES["tcp_throughput"]),
        "tagged_latency": plot_tagged_latency(summaries, d / PLOT_FILES["tagged_latency"]),
        "class_averages": plot_class_averages(summaries, d / PLOT_FILES["class_averages"]),
    }


def write_report(summaries: Mapping[str, Summary], out_dir: Union[str, Path]) -> dict[str, Path]:
    """table.txt, bandwidth_variation.txt and the PNGs (write_plots) into out_dir;
    returns {key: path}."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    (d / TABLE_FILE).write_text(comparison_table(summaries) + "\nPacket accounting at the "
                                "bottleneck over the run (dcbt Tables 1-2):\n"
                                + packet_accounting_table(summaries)
                                + fred_slot_lines(summaries))
    (d / BW_TABLE_FILE).write_text(bandwidth_variation_table(summaries))
    return {"table": d / TABLE_FILE, "bw_table": d / BW_TABLE_FILE, **write_plots(summaries, d)}


def load_summary(path: Union[str, Path]) -> dict[str, Any]:
    """A summary.json: the file, or a run directory's summary.json, or its gzip-compressed
    archive copy summary.json.gz (tools/archive_run.py)."""
    f = Path(path)
    if f.is_dir():
        f = f / "summary.json"
    if not f.exists() and f.with_name(f.name + ".gz").exists():
        f = f.with_name(f.name + ".gz")
    raw = f.read_bytes()
    return json.loads(gzip.decompress(raw) if f.suffix == ".gz" else raw)


def load_run(run_dir: Union[str, Path]) -> dict[str, dict[str, Any]]:
    """{algorithm: summary} of an experiment's run directory (live or archived under
    docs/results), in experiment.json's algorithm order."""
    d = Path(run_dir)
    meta = d / "experiment.json"
    order = json.loads(meta.read_text()).get("algorithms", []) if meta.exists() else \
        sorted(p.name for p in d.iterdir() if p.is_dir())
    runs = {a: d / a for a in order
            if (d / a / "summary.json").exists() or (d / a / "summary.json.gz").exists()}
    if not runs:
        raise FileNotFoundError(f"{d}: no <ALGORITHM>/summary.json(.gz)")
    return {a: load_summary(p) for a, p in runs.items()}


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mmaqm_exp.report",
                                description="comparison table + plots from summary.json files")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--run", action="append", metavar="NAME=PATH",
                     help="algorithm name and its run directory or summary.json(.gz) (repeat)")
    src.add_argument("--from-run", metavar="DIR", type=Path,
                     help="an experiment's run directory (e.g. an archived docs/results/<run>): "
                          "every <ALGORITHM>/summary.json(.gz), in experiment.json's order")
    p.add_argument("--out", help="output directory (with --from-run: that directory)")
    p.add_argument("--plots-only", action="store_true",
                   help="write only the PNGs (re-render a run's plots, leaving its tables)")
    a = p.parse_args(argv)
    if a.from_run is not None:
        summaries = load_run(a.from_run)
        out = Path(a.out) if a.out else a.from_run
    else:
        if not a.out:
            p.error("--out is required with --run")
        summaries = {}
        for item in a.run:
            name, _, path = item.partition("=")
            summaries[name] = load_summary(path)
        out = Path(a.out)
    if a.plots_only:
        for v in write_plots(summaries, out).values():
            print(v)
        return 0
    paths = write_report(summaries, out)
    print(paths["table"].read_text(), end="")
    for k, v in paths.items():
        if k != "table":
            print(v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
