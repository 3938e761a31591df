"""flows.ActiveFlowTable (dcbt §3.1 active flow counting)."""

from __future__ import annotations

import pytest

from mmaqm import p4constants as C
from mmaqm.flows import ActiveFlowTable

TCP, TAGGED, UNTAGGED = C.CLASS_TCP, C.CLASS_TAGGED, C.CLASS_UNTAGGED
FLOW_A = (0x0A000101, 0x0A000201, 6, 40000, 5001)
FLOW_B = (0x0A000102, 0x0A000201, 17, 40001, 5002)
FLOW_C = (0x0A000103, 0x0A000201, 17, 40002, 5003)


def test_counts_include_zeros() -> None:
    table = ActiveFlowTable()
    assert table.counts(2) == {TCP: 0, TAGGED: 0, UNTAGGED: 0}
    table.observe(2, TCP, FLOW_A, now_ms=0)
    table.observe(2, TAGGED, FLOW_B, now_ms=1)
    table.observe(2, TAGGED, FLOW_C, now_ms=2)
    table.observe(2, TCP, FLOW_A, now_ms=3)           # same flow again: still one flow
    assert table.counts(2) == {TCP: 1, TAGGED: 2, UNTAGGED: 0}
    assert len(table) == 3


def test_flows_are_counted_per_port() -> None:
    table = ActiveFlowTable()
    table.observe(1, UNTAGGED, FLOW_B, now_ms=0)
    table.observe(2, UNTAGGED, FLOW_B, now_ms=0)      # same 5-tuple on another port
    assert table.counts(1)[UNTAGGED] == 1
    assert table.counts(2)[UNTAGGED] == 1
    assert table.counts(3)[UNTAGGED] == 0
    assert table.ports() == {1, 2}


def test_expire_removes_flows_older_than_the_interval() -> None:
    table = ActiveFlowTable()
    table.observe(1, TCP, FLOW_A, now_ms=0)
    table.observe(1, TAGGED, FLOW_B, now_ms=100)
    # at 300: FLOW_A is exactly 300 ms old, not older -> stays (active in the last interval)
    assert table.expire(now_ms=300, expiry_interval_ms=300) == 0
    assert table.counts(1) == {TCP: 1, TAGGED: 1, UNTAGGED: 0}
    # at 300.5: FLOW_A is 300.5 ms old -> gone; FLOW_B (200.5 ms) stays
    assert table.expire(now_ms=300.5, expiry_interval_ms=300) == 1
    assert table.counts(1) == {TCP: 0, TAGGED: 1, UNTAGGED: 0}
    assert table.expire(now_ms=1000, expiry_interval_ms=300) == 1
    assert table.ports() == set()                     # empty ports are dropped
    assert len(table) == 0


def test_a_new_report_keeps_a_flow_alive() -> None:
    table = ActiveFlowTable()
    table.observe(1, TCP, FLOW_A, now_ms=0)
    table.observe(1, TCP, FLOW_A, now_ms=250)
    assert table.expire(now_ms=500, expiry_interval_ms=300) == 0   # 250 ms since last report
    assert table.counts(1)[TCP] == 1


def test_a_late_report_does_not_move_time_backwards() -> None:
    table = ActiveFlowTable()
    table.observe(1, TCP, FLOW_A, now_ms=250)
    table.observe(1, TCP, FLOW_A, now_ms=10)          # reordered report
    assert table.expire(now_ms=500, expiry_interval_ms=300) == 0


def test_reclassified_flow_moves_to_its_new_class() -> None:
    table = ActiveFlowTable()
    table.observe(1, UNTAGGED, FLOW_B, now_ms=0)
    table.observe(1, TAGGED, FLOW_B, now_ms=1)        # DSCP changed: a flow is in one class
    assert table.counts(1) == {TCP: 0, TAGGED: 1, UNTAGGED: 0}
    assert table.flow_class(1, FLOW_B) == TAGGED
    assert table.flow_class(1, FLOW_C) is None


def test_rejects_unknown_class_and_bad_interval() -> None:
    table = ActiveFlowTable()
    with pytest.raises(ValueError):
        table.observe(1, 3, FLOW_A, now_ms=0)
    with pytest.raises(ValueError):
        table.expire(now_ms=0, expiry_interval_ms=0)
