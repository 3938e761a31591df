"""report.py's figures are page-width small multiples, not strips.

Eight synthetic algorithms over three phases (the shape of the dcbt-fig7 run): every
figure is at most ~1400 px wide, lays its algorithms / phases / classes out as a grid
of at most report.MAX_COLS columns (more than one row where a single row would be a
strip), and writes no text under 9 pt. The run's per-algorithm summaries re-render
from a run directory through report.main (--from-run --plots-only), gzip or not.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import matplotlib.text
import pytest
from PIL import Image

import mmt_testenv  # noqa: F401  (import paths)

from mmaqm_exp import report

ALGOS = ["DROP_TAIL", "RED", "CBT_RED_ALL", "CBT_RED_TCP_ONLY", "DCBT", "DCBT_CHIPS", "MCDT", "FRED"]
PHASES = [("tcp+mm", 0.0, 10.0), ("blast", 10.0, 20.0), ("blast+tcp", 20.0, 30.0)]
MAX_PX = 1400
MIN_PX = 1000
MIN_PT = 9.0


def _summary(k: int, algo: str) -> dict[str, Any]:
    t = [i * 0.5 for i in range(61)]
    windows = [0.1, 0.2, 0.5, 1.0, 2.0, 4.0]
    curve = {"windows_s": windows, "std_kbps": [300.0 / (1 + w) + 10 * k for w in windows]}
    lat = {"series": {"bin_s": 1.0, "mean_ms": [30.0 + k + (i % 3) for i in range(30)]},
           "count": 300, "mean_ms": 31.0 + k, "queueing_mean_ms": 1.0 + k, "std_ms": 0.8,
           "min_ms": 30.0}
    return {
        "algorithm": algo,
        "scenario": {"duration_s": 30.0,
                     "phases": [{"name": n, "start_s": a, "end_s": b} for n, a, b in PHASES]},
        "bottleneck_rate_kbps": 25000,
        "phases": {n: {"start_s": a, "end_s": b, "jain": 0.3 + 0.08 * k,
                       "fair_share_kbps": 700.0,
                       "class_avg_per_flow_kbps": {"TCP": 500.0 + 10 * k, "TAGGED": 700.0,
                                                   "UNTAGGED": None if n == "tcp+mm" else 4000.0 - 300 * k}}
                   for n, a, b in PHASES},
        "switch": {"bottleneck": {"switch": "r1", "port": 4},
                   "occupancy": {"t_s": t, "TCP": [(i * 7 + k) % 20 for i in range(61)],
                                 "TAGGED": [(i * 3) % 5 for i in range(61)],
                                 "UNTAGGED": [0 if x < 10 else (i % 7) for i, x in enumerate(t)]}},
        "mm_delay_series": {"flow_id": 26, "t_s": t, "delay_ms": [30.0 + (i % 11) + k for i in range(61)]},
        "run": {"udp_class": {"TAGGED": {"delay_cdf_ms": [30.0 + k + i for i in range(21)]}}},
        "flows": {"1": {"class": "TCP", "bandwidth_variation_curve": curve},
                  "2": {"class": "TAGGED", "bandwidth_variation_curve": curve},
                  "3": {"class": "UNTAGGED", "bandwidth_variation_curve": curve}},
        "tcp_throughput": {"bin_s": 1.0, "kbps": [12000.0 + 100 * k + (i % 4) * 500 for i in range(30)]},
        "tagged_latency": {"26": lat, "27": lat},
        "policy": ({"algorithm": algo, "min_th_pkts": 5, "max_th_pkts": 15}
                   if algo not in ("DROP_TAIL", "MCDT") else {"algorithm": algo}),
        "registers": {"series": {"t_s": t, "red_avg_pkts": [8.0 + (i % 5) for i in range(61)],
                                 "tagged_avg_pkts": [2.0] * 61, "untagged_avg_pkts": [0.5] * 61,
                                 "tagged_th_pkts": [2.9] * 61, "untagged_th_pkts": [0.6] * 61}},
    }


SUMMARIES = {a: _summary(k, a) for k, a in enumerate(ALGOS)}
RED_BASED = [a for a in ALGOS if a not in ("DROP_TAIL", "MCDT")]

#: (plot function, number of panels it draws for SUMMARIES, at least this many rows)
GRIDS = [
    (report.plot_class_throughput, len(ALGOS), 2),
    (report.plot_jain, len(PHASES), 1),
    (report.plot_queue_occupancy, len(ALGOS), 2),
    (report.plot_mm_delay, len(ALGOS), 2),
    (report.plot_tcp_throughput, len(ALGOS), 2),
    (report.plot_tagged_latency, len(ALGOS), 2),
    (report.plot_class_averages, len(RED_BASED), 2),
    (report.plot_bandwidth_variation, 3, 1),
]


@pytest.fixture
def figures(monkeypatch):
    """The figures report._save writes, kept for inspection after they are closed."""
    kept: list[Any] = []
    save = report._save

    def keep(fig, path):
        kept.append(fig)
        return save(fig, path)

    monkeypatch.setattr(report, "_save", keep)
    return kept


def _panels(fig) -> list[Any]:
    return [ax for ax in fig.axes if ax.get_visible() and ax.axison]


def _check_page_width(png: Path, fig) -> None:
    w, h = Image.open(png).size
    assert MIN_PX <= w <= MAX_PX, f"{png.name}: {w} px wide"
    assert h <= 1.2 * w, f"{png.name}: {w}x{h} px, a column strip"
    small = {(t.get_text(), t.get_fontsize()) for t in fig.findobj(matplotlib.text.Text)
             if t.get_visible() and t.get_text().strip() and t.get_fontsize() < MIN_PT}
    assert not small, f"{png.name}: text under {MIN_PT} pt: {sorted(small)[:5]}"


@pytest.mark.parametrize("fn,panels,min_rows", GRIDS, ids=[g[0].__name__ for g in GRIDS])
def test_figures_are_page_width_grids(tmp_path, figures, fn, panels, min_rows):
    png = fn(SUMMARIES, tmp_path / "f.png")
    (fig,) = figures
    _check_page_width(png, fig)
    axes = _panels(fig)
    assert len(axes) == panels
    cells = {(ax.get_subplotspec().rowspan.start, ax.get_subplotspec().colspan.start) for ax in axes}
    assert len(cells) == panels                       # one panel per grid cell
    cols = {c for _, c in cells}
    rows = {r for r, _ in cells}
    assert 1 <= len(cols) <= report.MAX_COLS
    assert len(rows) >= min_rows
    assert len(rows) == math.ceil(panels / len(cols))  # filled row by row, no strip


def test_jain_panels_per_phase_share_axes(tmp_path, figures):
    report.plot_jain(SUMMARIES, tmp_path / "j.png")
    (fig,) = figures
    axes = _panels(fig)
    assert [ax.get_title().split(" ")[0] for ax in axes] == [p for p, _, _ in PHASES]
    assert all(ax.get_shared_y_axes().joined(axes[0], ax) for ax in axes)
    assert all(ax.get_shared_x_axes().joined(axes[0], ax) for ax in axes)
    # one bar per algorithm in each panel, named once on the shared y axis
    assert all(len(ax.patches) == len(ALGOS) for ax in axes)
    assert [t.get_text() for t in axes[0].get_yticklabels()] == ALGOS


def test_single_panel_cdf_is_page_width(tmp_path, figures):
    png = report.plot_mm_delay_cdf(SUMMARIES, tmp_path / "c.png")
    (fig,) = figures
    _check_page_width(png, fig)


def test_rerender_plots_from_a_run_directory(tmp_path, capsys):
    run = tmp_path / "run"
    for i, a in enumerate(ALGOS[:3]):
        (run / a).mkdir(parents=True)
        data = json.dumps(SUMMARIES[a]).encode()
        if i % 2:      # an archived run keeps summary.json gzip-compressed
            (run / a / "summary.json.gz").write_bytes(gzip.compress(data))
        else:
            (run / a / "summary.json").write_bytes(data)
    (run / "experiment.json").write_text(json.dumps({"algorithms": ALGOS[:3]}))
    (run / report.TABLE_FILE).write_text("kept\n")
    assert list(report.load_run(run)) == ALGOS[:3]
    assert report.main(["--from-run", str(run), "--plots-only"]) == 0
    written = {Path(line).name for line in capsys.readouterr().out.split()}
    assert written == set(report.PLOT_FILES.values())
    assert all(Image.open(run / f).size[0] <= MAX_PX for f in written)
    assert (run / report.TABLE_FILE).read_text() == "kept\n"    # tables untouched
