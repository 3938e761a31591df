"""tools/ns3_feng.py: the ns-3 reference of the feng scenario (docs/ns3.md).

The committed results (docs/ns3/feng.json) must agree with their table (docs/ns3/feng.md),
with their own per-run data and with the archived BMv2 runs; the compiled scenario must run (skipped when the ns3 wheel or g++ is absent).
"""
from __future__ import annotations

import copy
import json
import shutil
import subprocess

import pytest

import ns3_feng
import ns3common

RESULTS = json.loads(ns3_feng.OUT_JSON.read_text())


def _ns3_or_skip():
    try:
        ns3_feng.ns3_dirs()
    except ns3_feng.ConfigError as e:
        pytest.skip(f"ns-3 not installed ({e}); `make ns3-deps` installs it")
    if shutil.which("g++") is None:
        pytest.skip("g++ not found: the ns-3 scenario is compiled C++")


def test_page_table_is_the_rendering_of_the_json():
    page = ns3_feng.DOC_PAGE.read_text()
    assert ns3common.marked_table(page, "feng") == ns3_feng.render_table(RESULTS).strip()


def test_a_changed_number_changes_the_table():
    bad = copy.deepcopy(RESULTS)
    bad["ns3"]["LinuxReno"]["RED"]["var_1s_kbps"]["median"] += 1.0
    assert ns3_feng.render_table(bad) != ns3_feng.render_table(RESULTS)


def test_ns3_aggregate_recomputes_from_the_committed_runs():
    assert ns3_feng.ns3_aggregate(RESULTS["runs"]) == RESULTS["ns3"]
    assert len(RESULTS["runs"]) == (len(ns3_feng.NS3_QUEUES) * len(ns3_feng.TCP_MODELS)
                                   * RESULTS["seeds"])


def test_bmv2_column_recomputes_from_the_archived_runs():
    assert RESULTS["bmv2"]["runs"] == ns3_feng.feng_runs()
    assert ns3_feng.bmv2_aggregate(RESULTS["bmv2"]["runs"]) == RESULTS["bmv2"]


def test_scenario_arguments_come_from_the_bmv2_experiment_files():
    per, common = ns3_feng.scenario_args()
    assert per["DROP_TAIL"] == {"queue": "fifo", "limitPkts": 20}
    assert per["RED"] == {"queue": "red", "limitPkts": 20, "minThPkts": 5, "maxThPkts": 15,
                          "maxP": 0.1, "qW": 0.001953125}
    assert per["RED_50KB"]["limitPkts"] == 50 and per["RED_50KB"]["minThPkts"] == 20
    # FQ-CoDel (ns-3 only) gets drop-tail's buffer
    assert per["FQ_CODEL"] == {"queue": "fqcodel", "limitPkts": 20}
    assert (common["flows"], common["durationS"], common["bottleneckMbps"]) == (4, 64, 10)
    assert (common["accessDelayMs"], common["bottleneckDelayMs"]) == (2, 1)
    assert RESULTS["scenario"] == {"common": common, "queues": per}


def test_summarize_hand_worked():
    # one flow: 1000 B in every odd 0.1 s bin, nothing in even ones, over 2 s:
    # 1 s windows each hold 5 000 B = 40 kbit/s (std 0); 0.1 s windows alternate
    # 0 and 80 kbit/s (mean 40, population std 40).
    raw = {"queue": "red", "tcp": "NewReno", "seed": 1, "duration_s": 2.0, "bin_s": 0.1,
           "segment_bytes": 960, "params": {}, "start_s": [0.0],
           "rx_bytes_ip": [[0, 1000] * 10], "queue_pkts": [0, 2] * 10,
           "bottleneck": {"arrivals": 100, "drops_total": 4,
                          "drops": {"Unforced drop": 3, "Dropped by internal queue": 1}}}
    s = ns3_feng.summarize(raw)
    f = s["flows"]["0"]
    assert f["bandwidth_variation"]["1s"] == {"windows": 2, "mean_kbps": 40.0, "std_kbps": 0.0,
                                              "cov": 0.0}
    assert "8s" not in f["bandwidth_variation"]
    curve = dict(zip(f["bandwidth_variation_curve"]["windows_s"],
                     f["bandwidth_variation_curve"]["std_kbps"]))
    assert curve[0.1] == 40.0 and curve[0.2] == 0.0
    assert s["bottleneck"]["drops"] == {"RED_EARLY": 3, "QUEUE_LIMIT": 1}
    assert s["bottleneck"]["loss"] == 0.04
    assert s["queue_occupancy"]["mean_pkts"] == 1.0 and s["queue_occupancy"]["std_pkts"] == 1.0


def test_summarize_rejects_an_unknown_drop_reason():
    raw = {"queue": "fifo", "tcp": "NewReno", "seed": 1, "duration_s": 2.0, "bin_s": 0.1,
           "segment_bytes": 960, "params": {}, "start_s": [0.0], "rx_bytes_ip": [[0] * 20],
           "queue_pkts": [0] * 20,
           "bottleneck": {"arrivals": 1, "drops_total": 1, "drops": {"Mystery": 1}}}
    with pytest.raises(RuntimeError, match="unknown ns-3 drop reason"):
        ns3_feng.summarize(raw)


def test_compiled_scenario_short_run():
    _ns3_or_skip()
    binary = ns3_feng.build()
    per, common = ns3_feng.scenario_args()
    raw = ns3_feng.run_one(binary, {**common, **per["RED"]}, "LinuxReno", 1, duration_s=2.0)
    s = ns3_feng.summarize(raw)
    assert len(s["flows"]) == 4 and len(raw["queue_pkts"]) == 20
    total_kbps = sum(f["received_bytes_ip"] for f in s["flows"].values()) * 8 / 2.0 / 1e3
    # the 10 Mbit/s bottleneck, less the slow-start second: busy, never above the link
    assert 5000 < total_kbps <= 10000 * 1.001
    assert max(raw["queue_pkts"]) <= 20
    b = s["bottleneck"]
    assert b["arrivals"] > 1000 and 0 <= b["drops_total"] <= b["arrivals"]
    assert set(b["drops"]) <= {"RED_EARLY", "RED_FORCED", "QUEUE_LIMIT"}


def test_compiled_scenario_rejects_bad_arguments():
    _ns3_or_skip()
    binary = ns3_feng.build()
    r = subprocess.run([str(binary), "--queue=red", "--minThPkts=15", "--maxThPkts=5",
                        "--durationS=1", "--out=/dev/null"], capture_output=True, text=True)
    assert r.returncode == 2 and "invalid arguments" in r.stderr


def test_requirements_ns3_is_pinned_hashed_and_installed_so():
    req = (ns3_feng.REPO / "requirements-ns3.txt").read_text()
    lines = [ln for ln in req.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert lines[0].startswith(f"ns3=={ns3_feng.NS3_VERSION}.") or \
        lines[0].startswith(f"ns3=={ns3_feng.NS3_VERSION} ")
    assert any("--hash=sha256:" in ln for ln in lines)
    makefile = (ns3_feng.REPO / "Makefile").read_text()
    assert "pip install -q --no-deps --require-hashes -r requirements-ns3.txt" in makefile
    # large: kept out of the main lock
    assert not any(ln.startswith("ns3==") for ln in
                   (ns3_feng.REPO / "requirements.txt").read_text().splitlines())
