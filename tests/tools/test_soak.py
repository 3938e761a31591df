"""tools/soak.py: its helpers, and (opt-in: MMAQM_SOAK=1, root) a one-minute soak."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
import soak  # noqa: E402


def test_register_arrays_parsed():
    text = ("Obtaining JSON from switch...\nDone\nControl utility for runtime P4 table "
            "manipulation\nRuntimeCmd: queue_pkts= 0, 0, 3, 0\nRuntimeCmd: fred_nactive= 0, 1\n"
            "RuntimeCmd: \n")
    assert soak.parse_register_arrays(text) == {"queue_pkts": [0, 0, 3, 0], "fred_nactive": [0, 1]}


def test_schedule_covers_every_algorithm_in_both_variants():
    from mmaqm.config import parse_config
    from mmaqm_exp.topology import controller_config, load_topology

    topo = load_topology(soak.TOPOLOGY)
    schedule = soak.policy_schedule(20)
    seen = {(pol["algorithm"], "limit 40" in name) for name, pol in schedule}
    algorithms = {pol["algorithm"] for _, pol in schedule}
    assert len(algorithms) == 8
    assert seen == {(a, v) for a in algorithms for v in (False, True)}
    for _, pol in schedule:
        parse_config(controller_config(topo, pol))     # each one a valid controller config


def test_rss_summary_slope():
    rows = [{"t_s": t, "controller": 1000 + 2 * t} for t in range(0, 600, 5)]
    s = soak.rss_summary(rows, "controller")
    assert s["first_kib"] == 1000 and s["max_kib"] == 1000 + 2 * 595
    assert s["second_half_slope_kib_per_min"] == pytest.approx(120.0)


def test_rss_floors_ignore_a_held_block_and_see_growth():
    # 10-s samples for an hour: 50 MB, a 2.7 MB block held for 10 s every minute
    # (the per-minute floor never sees it), and in one case a steady +20 KiB/min.
    def rows(growth_kib_per_min: float) -> list[dict]:
        return [{"t_s": t, "controller": int(51200 + growth_kib_per_min * t / 60
                                             + (2765 if t % 60 == 30 else 0))}
                for t in range(0, 3600, 10)]
    flat = soak.rss_floors(rows(0))
    assert flat["judged"] and flat["flat"]
    assert flat["minute_floor_slope_kib_per_min"] == 0 and flat["drift_kib"] == 0
    growing = soak.rss_floors(rows(20))
    assert not growing["flat"]
    assert growing["minute_floor_slope_kib_per_min"] == pytest.approx(20, abs=0.5)
    # a block held through one whole minute moves that minute's floor: the slope sees it
    held = rows(0)
    for r in held:
        if 3000 <= r["t_s"] < 3060:
            r["controller"] += 2765
    assert soak.rss_floors(held)["minute_floor_slope_kib_per_min"] > 0


def test_rss_floors_of_the_committed_hour_runs():
    """The figures docs/reliability.md quotes, from the committed rss.csv files."""
    import csv

    def floors(name: str) -> dict:
        with open(REPO / "docs" / "results" / "soak" / name, newline="") as f:
            return soak.rss_floors(list(csv.DictReader(f)))
    run2 = floors("soak-20261127-3600s-restart-foreign-run2-rss.csv")
    assert run2["minute_floor_slope_kib_per_min"] == pytest.approx(89.6)
    assert run2["drift_kib"] == 1720 and not run2["flat"]
    run4 = floors("soak-20261127-3600s-restart-foreign-run4-arenas2-rss.csv")
    assert run4["minute_floor_slope_kib_per_min"] == pytest.approx(14.3)
    assert run4["drift_kib"] == 104 and not run4["flat"]       # the slope is over 10
    run5 = floors("soak-20261127-3600s-restart-foreign-run5-mmap-rss.csv")
    assert run5["minute_floor_slope_kib_per_min"] == pytest.approx(1.1)
    assert run5["drift_kib"] == 56 and run5["flat"]


@pytest.mark.skipif(os.environ.get("MMAQM_SOAK") != "1" or os.geteuid() != 0
                    or shutil.which("simple_switch_grpc") is None
                    or not (REPO / "build" / "main.json").exists(),
                    reason="opt-in (MMAQM_SOAK=1), needs root, BMv2 and make build")
def test_one_minute_soak(tmp_path):
    r = subprocess.run([sys.executable, str(REPO / "tools" / "soak.py"), "--duration-s", "60",
                        "--policy-interval-s", "10", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
    summary = json.loads((tmp_path / "summary.json").read_text())
    failed = [k for k, ok in summary["checks"].items() if not ok]
    assert not failed, (failed, r.stdout[-2000:])
