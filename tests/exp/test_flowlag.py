"""The active-flow lag arithmetic (flowlag.py) on hand-made schedules and events."""

from __future__ import annotations

import json

import pytest

from mmaqm_exp import flowlag

T0 = 1_000_000_000_000


def ev(t_s: float, tcp: int, tagged: int, untagged: int, port: int = 4, switch: str = "r1") -> dict:
    return {"event": "share_push", "t_ns": T0 + round(t_s * 1e9), "switch": switch, "port": port,
            "active_flows": {"TCP": tcp, "TAGGED": tagged, "UNTAGGED": untagged},
            "tagged_share_q16": 0, "untagged_th_scaled": 0}


FLOWS = {
    "1": {"class": "TCP", "start_s": 0.0, "stop_s": 30.0, "start_late_ms": 5.0},
    "2": {"class": "TCP", "start_s": 0.0, "stop_s": 30.0, "start_late_ms": 20.0},
    "3": {"class": "UNTAGGED", "start_s": 10.0, "stop_s": 20.0, "start_late_ms": 0.0},
}


def test_starts_and_stops_closer_than_a_second_are_one_change() -> None:
    steps = flowlag.truth_steps(FLOWS)
    assert steps["TCP"] == [(0.005, 1), (0.02, 1), (30.0, -1), (30.0, -1)]
    assert flowlag.changes(steps["TCP"]) == [
        {"direction": 1, "first_s": 0.005, "last_s": 0.02, "from": 0, "to": 2},
        {"direction": -1, "first_s": 30.0, "last_s": 30.0, "from": 2, "to": 0}]


def test_lag_runs_from_the_last_step_to_the_first_push_that_reached_the_truth() -> None:
    events = [ev(0.050, 1, 0, 0), ev(0.100, 2, 0, 0),          # TCP: 80 ms after the 2nd start
              ev(10.060, 2, 0, 1),                              # untagged start: 60 ms
              ev(20.200, 2, 0, 0) | {"port": 5},                # another port: ignored
              ev(20.350, 2, 0, 0),                              # untagged stop: 350 ms
              ev(10.500, 2, 0, 1, switch="r2")]                 # another switch: ignored
    rows = {(r["class"], r["direction"]): r
            for r in flowlag.class_lags(sorted(events, key=lambda e: e["t_ns"]), FLOWS, T0, "r1", 4)}
    assert rows[("TCP", "start")]["lag_ms"] == 80.0
    assert rows[("TCP", "start")]["first_step_lag_ms"] == 45.0
    assert rows[("UNTAGGED", "start")]["lag_ms"] == 60.0
    assert rows[("UNTAGGED", "stop")]["lag_ms"] == 350.0
    # the controller stopped before the TCP flows' stop could be seen
    assert rows[("TCP", "stop")]["lag_ms"] is None
    s = flowlag.lag_summary(list(rows.values()))
    assert s == {"start_lag_ms_max": 80.0, "stop_lag_ms_max": 350.0, "unobserved": 1}


def test_a_push_that_only_moved_toward_the_truth_is_not_the_lag() -> None:
    rows = flowlag.class_lags([ev(0.030, 1, 0, 0)], FLOWS, T0, "r1", 4)
    tcp = next(r for r in rows if r["class"] == "TCP" and r["direction"] == "start")
    assert tcp["lag_ms"] is None and tcp["first_step_lag_ms"] == 25.0


def test_read_events_keeps_share_pushes_sorted_and_rejects_garbage(tmp_path) -> None:
    p = tmp_path / "events.jsonl"
    p.write_text(json.dumps(ev(2.0, 1, 0, 0)) + "\n\n" + json.dumps(ev(1.0, 0, 0, 0)) + "\n"
                 + json.dumps({"event": "other", "t_ns": 0}) + "\n")
    assert [e["t_ns"] for e in flowlag.read_events(p)] == [T0 + 1_000_000_000, T0 + 2_000_000_000]
    assert flowlag.read_events(tmp_path / "absent.jsonl") == []
    p.write_text("{not json\n")
    with pytest.raises(ValueError, match="events.jsonl:1: not JSON"):
        flowlag.read_events(p)
