"""mmaqm_exp.registers: parsing simple_switch_CLI output and the averages' statistics,
on hand-computed values (no switch)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


from mmaqm_exp import registers as R
from mmaqm_exp import report

ONE = 1 << 16  # 1 packet in packets * 2^AVG_FRAC_BITS

# What simple_switch_CLI 1.15 prints for one sample of port 4 (the prompt precedes every
# answer because stdin is a pipe; the banner comes first).
CLI_OUT = """Obtaining JSON from switch...
Done
Control utility for runtime P4 table manipulation
RuntimeCmd: red_avg_scaled[4]= 327680
RuntimeCmd: class_avg_scaled[17]= 98304
RuntimeCmd: class_avg_scaled[18]= 0
RuntimeCmd: queue_pkts[4]= 7
RuntimeCmd: class_queue_pkts[16]= 5
RuntimeCmd: class_queue_pkts[17]= 2
RuntimeCmd: class_queue_pkts[18]= 0
RuntimeCmd: hello
"""


def test_reads_and_commands_for_port_4():
    # class index = port * CLASS_SLOTS (4) + class (TCP 0, TAGGED 1, UNTAGGED 2)
    assert R.register_reads(4) == [
        ("red_avg_scaled", 4), ("class_avg_scaled", 17), ("class_avg_scaled", 18),
        ("queue_pkts", 4), ("class_queue_pkts", 16), ("class_queue_pkts", 17),
        ("class_queue_pkts", 18)]
    text = R.commands(R.register_reads(4))
    assert text.splitlines()[0] == "register_read red_avg_scaled 4"
    assert text.splitlines()[-1] == "greet" and text.endswith("\n")


def test_parse_and_convert_to_packets():
    values = R.parse_register_output(CLI_OUT)
    assert values[("red_avg_scaled", 4)] == 327680
    assert len(values) == 7
    rec = R.sample_record(values, 4)
    assert rec == {"red_avg_pkts": 5.0, "class_avg_pkts": {"TAGGED": 1.5, "UNTAGGED": 0.0},
                   "queue_pkts": 7, "class_queue_pkts": {"TCP": 5, "TAGGED": 2, "UNTAGGED": 0}}


def test_parse_errors_and_missing_reads():
    with pytest.raises(R.RegisterReadError, match="Invalid register operation"):
        R.parse_register_output("RuntimeCmd: Invalid register operation (INVALID_INDEX)\n")
    with pytest.raises(R.RegisterReadError, match="Error: Invalid register name"):
        R.parse_register_output("RuntimeCmd: Error: Invalid register name (red_avg)\nhello\n")
    values = R.parse_register_output(CLI_OUT.replace("RuntimeCmd: queue_pkts[4]= 7\n", ""))
    with pytest.raises(R.RegisterReadError, match=r"queue_pkts\[4\]"):
        R.sample_record(values, 4)


def test_unchanged_while_red_moved():
    red = [1.0, 2.0, 2.0, 3.0, 4.0]     # changes in intervals 1, 3, 4
    cls = [0.5, 0.5, 0.7, 0.7, 0.9]     # unchanged in 1 and 3, changed in 2 and 4
    assert R.unchanged_while_red_moved(cls, red) == pytest.approx(2 / 3)
    assert R.unchanged_while_red_moved(cls, [1.0] * 5) is None   # RED never moved


def test_ages_since_last_change():
    t = [0.0, 0.05, 0.10, 0.15, 0.20]
    v = [1.0, 1.0, 2.0, 2.0, 2.0]
    assert R.ages_s(t, v) == pytest.approx([0.0, 0.05, 0.0, 0.05, 0.10])


def test_correlation():
    assert R.correlation([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert R.correlation([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # x = -1, 0, 1 around 2; y = 0, 1, 0 around 1/3: covariance 0
    assert R.correlation([1, 2, 3], [0, 1, 0]) == pytest.approx(0.0)
    assert R.correlation([1, 2, 3], [5, 5, 5]) is None and R.correlation([1], [1]) is None


def test_downsample_first_sample_per_bin():
    assert R.downsample([0.0, 0.04, 0.09, 0.11, 0.15, 0.31], 10) == [0, 3, 5]


def test_threshold_in_force():
    cbt = {"tagged_th_scaled": int(2.9 * ONE), "untagged_th_scaled": int(0.6 * ONE)}
    assert R.threshold_at(cbt, {}, "TAGGED", 9.0) == pytest.approx(2.9, abs=1e-4)
    assert R.threshold_at(cbt, {}, "UNTAGGED", 9.0) == pytest.approx(0.6, abs=1e-4)
    # D-CBT: tagged = red_avg * share (q16), untagged pushed
    dcbt = {"tagged_share_q16": ONE // 4, "untagged_th_scaled": 3 * ONE // 10}
    assert R.threshold_at(dcbt, {}, "TAGGED", 8.0) == 2.0
    assert R.threshold_at(dcbt, {}, "UNTAGGED", 8.0) == pytest.approx(0.3, abs=1e-4)
    # nothing pushed: the policy's static thresholds, else none
    assert R.threshold_at({}, {"tagged_th_pkts": 2.9}, "TAGGED", 1.0) == 2.9
    assert R.threshold_at({}, {}, "UNTAGGED", 1.0) is None


def _row(t, red, tag, unt, occ_tag, occ_unt, th_tag, th_unt, tested=True):
    return {"t_s": t, "red": red, "queue": occ_tag + occ_unt,
            "avg": {"TAGGED": tag, "UNTAGGED": unt}, "occ": {"TAGGED": occ_tag, "UNTAGGED": occ_unt},
            "th": {"TAGGED": th_tag, "UNTAGGED": th_unt}, "tested": tested}


def test_phase_stats_by_hand():
    rows = [
        _row(0.00, 4.0, 1.0, 0.5, 1, 0, 2.0, 0.6),
        _row(0.05, 6.0, 1.0, 0.5, 0, 1, 2.0, 0.6),   # RED moved, both classes stale
        _row(0.10, 8.0, 3.0, 0.5, 2, 1, 2.0, 0.6),   # RED moved, tagged moved
        _row(0.15, 6.0, 3.0, 0.7, 1, 0, 2.0, 0.6, tested=False),
        _row(1.00, 9.0, 9.0, 9.0, 9, 9, 2.0, 0.6),   # outside [0, 1)
    ]
    st = R.phase_stats(rows, 0.0, 1.0, {"TAGGED": 0.25, "UNTAGGED": 0.1},
                       {"TAGGED": 500.0, "UNTAGGED": 250.0}, {"TAGGED": 10, "UNTAGGED": 2})
    assert st["samples"] == 4
    assert st["red_avg_mean_pkts"] == 6.0 and st["red_avg_changed_share"] == 1.0
    tag, unt = st["TAGGED"], st["UNTAGGED"]
    assert tag["avg_mean_pkts"] == 2.0 and tag["occupancy_mean_pkts"] == 1.0
    assert tag["avg_over_occupancy"] == 2.0
    assert tag["unchanged_while_red_moved"] == pytest.approx(2 / 3, abs=1e-4)  # intervals 1 and 3
    # tagged 1 1 3 3 against RED 4 6 8 6: deviations -1 -1 1 1 and -2 0 2 0 -> 4 / sqrt(4 * 8)
    assert tag["corr_with_red"] == pytest.approx(4 / 32 ** 0.5, abs=1e-3)
    assert tag["age_mean_ms"] == pytest.approx(1000 * (0 + 0.05 + 0 + 0.05) / 4)
    assert tag["avg_share_of_red"] == pytest.approx(2 / 6, abs=1e-4)
    assert tag["avg_share_over_throughput_share"] == pytest.approx((2 / 6) / 0.25, abs=1e-3)
    assert tag["avg_pkts_per_flow"] == 0.2 and tag["kbps_per_flow"] == 500.0
    assert tag["avg_over_threshold_mean"] == pytest.approx((0.5 + 0.5 + 1.5 + 1.5) / 4)
    # tested samples: the first three; above 2.0 only the third
    assert tag["tested_share"] == 0.75 and tag["above_threshold_share"] == pytest.approx(1 / 3, abs=1e-4)
    assert unt["unchanged_while_red_moved"] == pytest.approx(2 / 3, abs=1e-4)  # moved in the 3rd
    assert unt["avg_over_occupancy"] == pytest.approx(0.55 / 0.5)
    assert R.phase_stats(rows[:1], 0.0, 1.0, {}, {}, {}) == {"samples": 1}


def _summary(algorithm: str, policy: dict) -> dict:
    return {"t0_ns": 0, "policy": {"algorithm": algorithm, **policy},
            "scenario": {"duration_s": 1.0, "phases": [{"name": "p1", "start_s": 0.0, "end_s": 1.0}]},
            "phases": {"p1": {"class_share": {"TAGGED": 0.5, "UNTAGGED": 0.25},
                              "class_avg_per_flow_kbps": {"TAGGED": 100.0, "UNTAGGED": 50.0},
                              "n_flows_by_class": {"TAGGED": 1, "UNTAGGED": 1}}}}


def _write_registers(path: Path, n: int = 20) -> None:
    with open(path, "w") as f:
        for i in range(n):
            t = i * 0.05
            f.write(json.dumps({"t_s": t, "t_ns": int(t * 1e9), "read_ms": 2.0, "switch": "r1",
                                "port": 4, "red_avg_pkts": 8.0 + (i % 2),
                                "class_avg_pkts": {"TAGGED": 2.0, "UNTAGGED": 1.0},
                                "queue_pkts": 3, "class_queue_pkts": {"TCP": 1, "TAGGED": 1,
                                                                      "UNTAGGED": 1}}) + "\n")


def test_summary_block_dcbt_thresholds_from_pushed_shares(tmp_path):
    reg = tmp_path / R.REGISTERS_FILE
    _write_registers(reg)
    counters = tmp_path / "counters.jsonl"
    counters.write_text(json.dumps({"t_ns": 0, "switch": "r1", "readings": [],
                                    "policies": {"4": {"algorithm": "DCBT",
                                                       "tagged_share_q16": ONE // 2,
                                                       "untagged_th_scaled": ONE // 2}}}) + "\n")
    s = _summary("DCBT", {"min_th_pkts": 5, "max_th_pkts": 15})
    b = R.summary_block(reg, s, counters)
    assert b["sampler"] is None                       # no meta file written
    assert b["series"]["t_s"] == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]  # 10 Hz
    assert b["series"]["tagged_th_pkts"][:2] == [4.0, 4.0]          # 8.0 * 0.5 (even samples)
    st = b["phases"]["p1"]["TAGGED"]
    # thresholds 4.0 and 4.5 alternate: mean 2 / 4 and 2 / 4.5
    assert st["avg_over_threshold_mean"] == pytest.approx((0.5 + 2 / 4.5) / 2, abs=1e-4)
    assert st["above_threshold_share"] == 0.0 and st["tested_share"] == 1.0  # red 8-9 > min_th 5
    assert st["avg_over_occupancy"] == 2.0 and st["unchanged_while_red_moved"] == 1.0
    assert b["phases"]["p1"]["UNTAGGED"]["above_threshold_share"] == 1.0     # 1.0 > 0.5
    assert R.summary_block(tmp_path / "none.jsonl", s) is None


def test_summary_block_cbt_policy_thresholds_and_plot(tmp_path):
    reg = tmp_path / R.REGISTERS_FILE
    _write_registers(reg)
    s = _summary("CBT_RED_ALL", {"min_th_pkts": 5, "max_th_pkts": 15,
                                 "tagged_th_pkts": 2.9, "untagged_th_pkts": 0.6})
    s["switch"] = {"ports": {"r1:4": {"phases": {"p1": {
        "TCP": {"arrivals": 80}, "TAGGED": {"arrivals": 30, "drops": {"CLASS_THRESHOLD": 10}},
        "UNTAGGED": {"arrivals": 10, "drops": {"CLASS_THRESHOLD": 10}}}}}}}
    s["registers"] = R.summary_block(reg, s)          # no counters: the policy's thresholds
    assert s["registers"]["phases"]["p1"]["TAGGED"]["updates_per_red_update"] == 0.3  # 30 / (120 - 20)
    assert set(s["registers"]["series"]["untagged_th_pkts"]) == {0.6}
    st = s["registers"]["phases"]["p1"]["UNTAGGED"]
    assert st["above_threshold_share"] == 1.0 and st["threshold_mean_pkts"] == 0.6
    # share of RED's average 1 / 8.5 against a throughput share of 0.25
    assert st["avg_share_over_throughput_share"] == pytest.approx((1 / 8.5) / 0.25, abs=1e-3)
    p = report.plot_class_averages({"CBT_RED_ALL": s, "DROP_TAIL": {"policy": {}}},
                                   tmp_path / "ca.png")
    assert p.read_bytes()[:4] == b"\x89PNG" and p.stat().st_size > 5000
    empty = report.plot_class_averages({"DROP_TAIL": {"policy": {}}}, tmp_path / "none.png")
    assert empty.read_bytes()[:4] == b"\x89PNG"


def test_updates_per_red_update_from_counters():
    counts = {"TCP": {"arrivals": 600, "drops": {"RED_EARLY": 10}},
              "TAGGED": {"arrivals": 300, "drops": {"CLASS_THRESHOLD": 50}},
              "UNTAGGED": {"arrivals": 200, "drops": {"CLASS_THRESHOLD": 50}}}
    # RED for all: RED sees 1100 - 100 class drops = 1000 packets; tagged updates on its 300
    assert R.updates_per_red_update("CBT_RED_ALL", counts, "TAGGED") == 0.3
    assert R.updates_per_red_update("CBT_RED_ALL", counts, "UNTAGGED") == 0.2
    assert R.updates_per_red_update("CBT_RED_TCP_ONLY", counts, "TAGGED") == 0.5   # 300 / 600 TCP
    assert R.updates_per_red_update("DCBT", counts, "UNTAGGED") == 1.0
    assert R.updates_per_red_update("RED", counts, "TAGGED") is None
    assert R.updates_per_red_update("CBT_RED_TCP_ONLY", {"TAGGED": {"arrivals": 5}}, "TAGGED") is None
