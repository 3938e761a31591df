"""tools/ns3_cbt.py: the ns-3 reference of the cbt scenario (docs/ns3/cbt.md).

The committed results (docs/ns3/cbt.json) must agree with their table (docs/ns3/cbt.md),
with their own per-run summaries and with the archived BMv2 runs; a hand-worked raw run
gives the metrics worked out by hand; the compiled scenario must run (skipped when the
ns3 wheel or g++ is absent).
"""
from __future__ import annotations

import copy
import json
import shutil
import subprocess

import pytest

import ns3_cbt
import ns3common
from mmaqm_exp.scenario import parse_scenario

RESULTS = json.loads(ns3_cbt.OUT_JSON.read_text())
RESULTS_FULL = json.loads(ns3_cbt.OUT_JSON_FULL.read_text())
BOTH = pytest.mark.parametrize("schedule,results", [("scaled", RESULTS), ("full", RESULTS_FULL)],
                               ids=["46s", "115s"])


def _ns3_or_skip():
    try:
        ns3_cbt.ns3_dirs()
    except ns3_cbt.ConfigError as e:
        pytest.skip(f"ns-3 not installed ({e}); `make ns3-deps` installs it")
    if shutil.which("g++") is None:
        pytest.skip("g++ not found: the ns-3 scenario is compiled C++")


@BOTH
def test_page_table_is_the_rendering_of_the_json(schedule, results):
    assert results["schedule"] == schedule
    page = ns3_cbt.DOC_PAGE.read_text()
    table = ns3_cbt.SCHEDULES[schedule]["table"]
    assert ns3common.marked_table(page, table) == ns3_cbt.render_table(results).strip()


def test_a_changed_number_changes_the_table():
    bad = copy.deepcopy(RESULTS)
    bad["ns3"]["NewReno"]["RED"]["tagged_loss_run_pct"]["median"] += 1.0
    assert ns3_cbt.render_table(bad) != ns3_cbt.render_table(RESULTS)
    bad = copy.deepcopy(RESULTS)
    bad["bmv2"]["metrics"]["CBT_RED_ALL"]["queue_delay_blast_ms"]["max"] += 1.0
    assert ns3_cbt.render_table(bad) != ns3_cbt.render_table(RESULTS)


@BOTH
def test_ns3_aggregate_recomputes_from_the_committed_runs(schedule, results):
    assert ns3_cbt.ns3_aggregate(results["runs"]) == results["ns3"]
    assert len(results["runs"]) == (len(ns3_cbt.NS3_QUEUES) * len(ns3_cbt.TCP_MODELS)
                                    * results["seeds"])
    assert results["seeds"] >= 3
    assert {s["duration_s"] for s in results["runs"]} == {results["duration_s"]}


def test_a_changed_run_changes_the_aggregate():
    runs = copy.deepcopy(RESULTS["runs"])
    red = next(s for s in runs if s["algorithm"] == "RED" and s["tcp"] == "LinuxReno")
    red["run"]["udp_class"]["TAGGED"]["loss"] = 0.99
    assert ns3_cbt.ns3_aggregate(runs) != RESULTS["ns3"]


@BOTH
def test_bmv2_column_recomputes_from_the_archived_runs(schedule, results):
    assert results["bmv2"]["runs"] == ns3_cbt.cbt_runs(schedule)
    assert ns3_cbt.bmv2_aggregate(results["bmv2"]["runs"]) == results["bmv2"]


def test_bmv2_column_is_the_paper_comparison_rows():
    # the table's BMv2 RED tagged loss and CBT transit time are the paper-comparison
    # rows t1-red and s4-transit of the same runs (tools/paper_compare.py)
    import paper_compare
    for run in ns3_cbt.cbt_runs():
        runs = paper_compare.load_run(paper_compare.RESULTS, run)
        red = ns3_cbt.compared(runs["RED"])
        assert f"{red['tagged_loss_run_pct']:.2f} %" == paper_compare.value(
            runs, {"fn": "udp_loss_pct", "algorithm": "RED", "phase": "run", "cls": "TAGGED"})
        cbt = ns3_cbt.compared(runs["CBT_RED_ALL"])
        assert f"{cbt['queue_delay_blast_ms']:.1f} ms" == paper_compare.value(
            runs, {"fn": "queue_delay_ms", "algorithm": "CBT_RED_ALL", "phase": "blast"})


def test_scenario_arguments_come_from_the_bmv2_experiment_files():
    per, common = ns3_cbt.scenario_args()
    assert per["DROP_TAIL"] == {"queue": "fifo", "limitPkts": 60}
    assert per["FQ_CODEL"] == {"queue": "fqcodel", "limitPkts": 60}
    assert per["RED"] == {"queue": "red", "limitPkts": 60, "minThPkts": 15, "maxThPkts": 30,
                          "maxP": 0.1, "qW": 0.001953125, "gentle": "false", "wait": "false",
                          "redIdleLinkMbps": 0.0}
    # the 115 s schedule scaled to cbt-fig4's 46 s (x 0.4)
    assert common["durationS"] == 46
    assert (common["nTcp"], common["tcpStartS"], common["tcpStopS"]) == (240, 8, 38)
    assert (common["nTagged"], common["taggedKbps"], common["taggedStopS"]) == (6, 210, 46)
    assert (common["blastKbps"], common["blastStartS"], common["blastStopS"]) == (10000, 20, 38)
    assert (common["bottleneckMbps"], common["bottleneckDelayMs"]) == (10, 28)
    assert (common["lanMbps"], common["lanDelayMs"], common["maxWindowPkts"]) == (100, 1, 20)
    assert ns3_cbt.tcp_model_args("LinuxReno") == {"initCwndPkts": 2}
    assert ns3_cbt.tcp_model_args("NewReno") == {"initCwndPkts": 1}
    assert RESULTS["scenario"]["common"] == common and RESULTS["scenario"]["queues"] == per
    assert RESULTS["duration_s"] == 46
    # the paper's own schedule: experiment cbt-fig4-full
    per_f, full = ns3_cbt.scenario_args(exp="cbt-fig4-full")
    assert per_f == per and full["durationS"] == 115
    assert (full["tcpStartS"], full["tcpStopS"], full["blastStartS"], full["blastStopS"]) == \
        (20, 95, 50, 95)
    assert RESULTS_FULL["scenario"]["common"] == full


def test_red_policy_options_reach_ns3():
    p = {"queue_limit_pkts": 60, "min_th_pkts": 15, "max_th_pkts": 30, "max_p": 0.1,
         "ewma_weight": 0.002, "gentle": True, "wait": True, "bandwidth_pps": "link"}
    a = ns3_cbt._red_args(p, 10.0, 1000)
    assert (a["gentle"], a["wait"], a["redIdleLinkMbps"]) == ("true", "true", 10.0)
    assert ns3_cbt._red_args({**p, "bandwidth_pps": 625}, 10.0, 1000)["redIdleLinkMbps"] == 5.0
    with pytest.raises(ns3_cbt.ConfigError, match="ECN"):
        ns3_cbt._red_args({**p, "ecn": True}, 10.0, 1000)


TINY = {"name": "tiny", "duration_s": 2.0,
        "phases": [{"name": "a", "start_s": 0.0, "end_s": 1.0},
                   {"name": "b", "start_s": 1.0, "end_s": 2.0}],
        "flows": [{"kind": "cbr", "count": 1, "src": "mm1", "dst": "mm2", "start_s": 0, "stop_s": 2,
                   "dscp": 46, "rate_kbps": 80},
                  {"kind": "tcp", "count": 1, "src": "tcp1", "dst": "tcp2", "start_s": 0, "stop_s": 2},
                  {"kind": "cbr", "count": 1, "src": "udp1", "dst": "udp2", "start_s": 1, "stop_s": 2,
                   "dscp": 0, "rate_kbps": 800}]}


def _tiny_raw():
    # tagged: 10 pkt/s (80 kbit/s of 1000 B), sent at 0.0, 0.1, ..., 1.9 (20); 15
    # arrive, seq 0-9 after 30 ms, seq 10-14 after 50 ms: phase a loses 0 of 10,
    # phase b 5 of 10; the run 5 of 20 = 25 %. Queueing in b: mean 50 - floor 30 = 20 ms.
    rx = [[0, k, k * 100_000_000, k * 100_000_000 + 30_000_000, 1000] for k in range(10)]
    rx += [[0, k, k * 100_000_000, k * 100_000_000 + 50_000_000, 1000] for k in range(10, 15)]
    # TCP: 948 payload bytes in each 0.1 s bin of phase a only (1000 IP bytes each):
    # 10 000 B in 1 s = 80 kbit/s in a, 0 in b.
    tcp = [[948] * 10 + [0] * 10]
    return {"queue": "red", "tcp": "LinuxReno", "seed": 1, "duration_s": 2.0, "bin_s": 0.1,
            "segment_bytes": 948, "packet_bytes": 1000, "bottleneck_mbps": 10.0,
            "tcp_start_s": [0.0], "tcp_rx_payload_bytes": tcp,
            "udp_tx": [{"first_ns": 0, "last_ns": 1_900_000_000, "sent": 20},
                       {"first_ns": 1_000_000_000, "last_ns": 1_990_000_000, "sent": 100}],
            "udp_rx": rx,
            # bottleneck: in phase b 8 of 40 TCP arrivals dropped early, 2 forced
            "counters": {"TCP": {"arrivals": [0] * 10 + [4] * 10,
                                 "drops": {"Unforced drop": [0] * 10 + [1] * 8 + [0] * 2,
                                           "Forced drop": [0] * 18 + [1] * 2}},
                         "TAGGED": {"arrivals": [1] * 20, "drops": {}},
                         "UNTAGGED": {"arrivals": [0] * 10 + [10] * 10,
                                      "drops": {"Forced drop": [0] * 10 + [10] * 10}}},
            # queue 0 in a; in b 10 for the first half, 30 for the second: mean 20
            "queue_pkts": [0] * 10 + [10] * 5 + [30] * 5,
            "red_avg_pkts": [0.0] * 10 + [4.0] * 10,
            "bottleneck": {"arrivals": 160, "drops_total": 110,
                           "drops": {"Unforced drop": 8, "Forced drop": 102}}}


def test_summarize_hand_worked():
    sc = parse_scenario(TINY)
    s = ns3_cbt.summarize(_tiny_raw(), sc)
    s["algorithm"] = "RED"
    c = ns3_cbt.compared(s)
    assert s["phases"]["a"]["class_total_kbps"]["TCP"] == 80.0
    assert s["phases"]["b"]["class_total_kbps"]["TCP"] == 0.0
    assert s["phases"]["a"]["udp_class"]["TAGGED"]["loss"] == 0.0
    assert s["phases"]["b"]["udp_class"]["TAGGED"]["loss"] == 0.5
    assert c["tagged_loss_run_pct"] == 25.0
    port = s["switch"]["ports"][ns3_cbt.LOSS_HOP]
    assert port["phases"]["b"]["TCP"] == {"arrivals": 40, "drops": {"RED_EARLY": 8, "RED_FORCED": 2},
                                          "drops_total": 10, "loss": 0.25}
    assert port["run"]["UNTAGGED"]["loss"] == 1.0
    assert s["switch"]["occupancy"]["mean_pkts_by_phase"]["b"]["total"] == 20.0
    assert s["registers"]["phases"]["b"]["red_avg_mean_pkts"] == 4.0
    assert s["bottleneck"]["rate_pps"] == 1250.0
    # 20 packets over 1 250 pkt/s = 16 ms
    assert c["queue_delay_blast_ms"] is None  # no phase named blast in TINY
    assert paper_value(s, {"fn": "queue_delay_ms", "phase": "b"}) == "16.0 ms"
    assert paper_value(s, {"fn": "tagged_queueing_ms", "phase": "b"}) == "20.0 ms"
    assert paper_value(s, {"fn": "class_loss_pct", "phase": "b", "cls": "TCP"}) == "25.0 %"


def paper_value(summary, spec):
    import paper_compare
    return paper_compare.value({"X": summary}, {**spec, "algorithm": "X"})


def test_summarize_rejects_an_unknown_drop_reason():
    raw = _tiny_raw()
    raw["counters"]["TCP"]["drops"]["Mystery"] = [0] * 20
    with pytest.raises(RuntimeError, match="unknown ns-3 drop reason"):
        ns3_cbt.summarize(raw, parse_scenario(TINY))


def test_summarize_rejects_a_run_of_another_length():
    raw = _tiny_raw()
    raw["duration_s"] = 3.0
    with pytest.raises(RuntimeError, match="scenario"):
        ns3_cbt.summarize(raw, parse_scenario(TINY))


def test_compiled_scenario_short_run():
    _ns3_or_skip()
    binary = ns3_cbt.build()
    per, common = ns3_cbt.scenario_args(duration_s=4.6)   # the schedule at a tenth
    raw = ns3_cbt.run_one(binary, {**common, **per["RED"], **ns3_cbt.tcp_model_args("LinuxReno", 4.6)},
                          "LinuxReno", 1)
    sc = ns3_cbt.load_cbt_scenario(4.6)
    s = ns3_cbt.summarize(raw, sc)
    assert len(raw["queue_pkts"]) == 46 and max(raw["queue_pkts"]) <= 60
    tag = s["run"]["udp_class"]["TAGGED"]
    assert tag["flows"] == 6 and abs(tag["sent"] - 6 * 26.25 * 4.6) <= 6
    blast = s["phases"]["blast"]
    # the 10 Mbit/s link: busy in the blast, never above its rate
    assert 9000 < blast["total_kbps"] <= 10000 * 1.01
    assert s["phases"]["proshare"]["class_total_kbps"]["TCP"] == 0
    assert s["phases"]["tcp"]["class_total_kbps"]["TCP"] > 5000
    port = s["switch"]["ports"][ns3_cbt.LOSS_HOP]["phases"]["blast"]
    assert abs(port["UNTAGGED"]["arrivals"] - 1250 * 1.8) <= 2
    assert port["UNTAGGED"]["drops_total"] > 0
    b = s["bottleneck"]
    assert b["arrivals"] == sum(c["arrivals"] for c in s["switch"]["ports"][ns3_cbt.LOSS_HOP]["run"].values())
    assert set(b["drops"]) <= {"RED_EARLY", "RED_FORCED", "QUEUE_LIMIT"}
    # the sampled RED average stays within the queue's range
    assert 0 < max(raw["red_avg_pkts"]) <= 60


def test_compiled_scenario_rejects_bad_arguments():
    _ns3_or_skip()
    binary = ns3_cbt.build()
    r = subprocess.run([str(binary), "--queue=red", "--minThPkts=30", "--maxThPkts=15",
                        "--durationS=1", "--out=/dev/null"], capture_output=True, text=True)
    assert r.returncode == 2 and "invalid arguments" in r.stderr
    r = subprocess.run([str(binary), "--queue=pie", "--durationS=1", "--out=/dev/null"],
                       capture_output=True, text=True)
    assert r.returncode == 2


def test_drop_reasons_of_fq_codels_flow_queues_are_named():
    assert ns3common.drop_counts({"(Dropped by child queue disc) Target exceeded drop": 3,
                                "Overlimit drop": 1, "Target exceeded drop": 2}) == \
        {"CODEL": 5, "QUEUE_LIMIT": 1}
    with pytest.raises(RuntimeError, match="unknown ns-3 drop reason"):
        ns3common.drop_counts({"(Dropped by child queue disc) Mystery": 1})
