"""flows.ActiveFlowTable (dcbt §3.1 active flow counting)."""

from __future__ import annotations

import pytest

from mmaqm import p4constants as C
from mmaqm.flows import DEFAULT_MAX_FLOWS, ActiveFlowTable, FlowEntry, SwitchClock

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


def test_counts_by_family_splits_ipv6_flows_from_ipv4_and_follows_expiry() -> None:
    import ipaddress
    a6 = ipaddress.IPv6Address("2001:db8:a00:100::1")
    b6 = ipaddress.IPv6Address("2001:db8:a00:400::1")
    flow6_tcp = (a6, b6, 6, 40000, 5201)
    flow6_tagged = (a6, b6, 17, 40001, 5001)
    # the same integers as an IPv4 key: a different flow (docs/ipv6.md)
    flow4_same_ints = (int(a6), int(b6), 6, 40000, 5201)
    table = ActiveFlowTable()
    assert table.counts_by_family(2) == {"ipv4": {TCP: 0, TAGGED: 0, UNTAGGED: 0},
                                         "ipv6": {TCP: 0, TAGGED: 0, UNTAGGED: 0}}
    table.observe(2, TCP, FLOW_A, now_ms=0)
    table.observe(2, TCP, flow6_tcp, now_ms=0)
    table.observe(2, TCP, flow4_same_ints, now_ms=0)
    table.observe(2, TAGGED, flow6_tagged, now_ms=100)
    table.observe(2, TAGGED, FLOW_B, now_ms=100)
    table.observe(2, TCP, flow6_tcp, now_ms=100)       # again: still one flow
    assert table.counts(2) == {TCP: 3, TAGGED: 2, UNTAGGED: 0}
    assert table.counts_by_family(2) == {"ipv4": {TCP: 2, TAGGED: 1, UNTAGGED: 0},
                                         "ipv6": {TCP: 1, TAGGED: 1, UNTAGGED: 0}}
    table.observe(2, UNTAGGED, flow6_tagged, now_ms=150)   # reclassified
    assert table.counts_by_family(2)["ipv6"] == {TCP: 1, TAGGED: 0, UNTAGGED: 1}
    table.expire(now_ms=350, expiry_interval_ms=300)       # FLOW_A, flow4_same_ints go
    assert table.counts_by_family(2) == {"ipv4": {TCP: 0, TAGGED: 1, UNTAGGED: 0},
                                         "ipv6": {TCP: 1, TAGGED: 0, UNTAGGED: 1}}
    table.expire(now_ms=1000, expiry_interval_ms=300)
    assert table.counts_by_family(2)["ipv6"] == {TCP: 0, TAGGED: 0, UNTAGGED: 0}
    assert len(table) == 0


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


# ------------------------------------------------------------------- the cap
def test_the_table_refuses_new_flows_beyond_max_flows_and_counts_them() -> None:
    table = ActiveFlowTable(max_flows=2)
    assert table.observe(1, TCP, FLOW_A, now_ms=0) is True
    assert table.observe(2, TAGGED, FLOW_B, now_ms=10) is True
    assert table.observe(1, UNTAGGED, FLOW_C, now_ms=20) is False      # full: refused
    assert table.observe(3, UNTAGGED, FLOW_C, now_ms=20) is False      # a new port too
    assert table.refused == 2
    assert len(table) == 2 and table.ports() == {1, 2}
    assert table.counts(1) == {TCP: 1, TAGGED: 0, UNTAGGED: 0}
    assert table.observe(1, TCP, FLOW_A, now_ms=200) is True           # a known flow: kept
    assert table.expire(now_ms=311, expiry_interval_ms=300) == 1       # FLOW_B (10) goes
    assert table.observe(1, UNTAGGED, FLOW_C, now_ms=311) is True      # room again
    assert table.refused == 2
    assert table.counts(1) == {TCP: 1, TAGGED: 0, UNTAGGED: 1}


def test_max_flows_default_and_bounds() -> None:
    assert ActiveFlowTable().max_flows == DEFAULT_MAX_FLOWS == 262_144
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="max_flows"):
            ActiveFlowTable(max_flows=bad)  # type: ignore[arg-type]


def test_counts_follow_reclassification_and_expiry() -> None:
    table = ActiveFlowTable()
    table.observe(1, UNTAGGED, FLOW_A, now_ms=0)
    table.observe(1, UNTAGGED, FLOW_B, now_ms=50)
    table.observe(1, TAGGED, FLOW_A, now_ms=100)       # moves class and to the newest place
    assert table.counts(1) == {TCP: 0, TAGGED: 1, UNTAGGED: 1}
    assert table.entry(1, FLOW_A) == FlowEntry(class_id=TAGGED, last_seen_ms=100)
    assert table.expire(now_ms=351, expiry_interval_ms=300) == 1       # FLOW_B (50)
    assert table.counts(1) == {TCP: 0, TAGGED: 1, UNTAGGED: 0}
    assert table.flow_keys(1) == [FLOW_A]


# ---------------------------------------------------------- the switch clock
def test_switch_clock_maps_by_the_fastest_report_seen() -> None:
    clock = SwitchClock()
    # The first report: received at 5000 ms, made at switch time 2 s -> offset 3000 ms.
    assert clock.to_local_ms(2_000_000, now_ms=5000.0) == 5000.0
    # A backlog: made at switch 2.5 s, handled 4 s late. It counts from when it was
    # made, 5500 ms, plus what the offset may rise meanwhile: 1000 ppm of the 4500 ms
    # since the offset was set, 4.5 ms (not the 9500 ms a handling-time stamp gives).
    assert clock.to_local_ms(2_500_000, now_ms=9500.0) == 2500.0 + 3004.5
    # A report that came faster (1 ms after it was made) lowers the offset to 2999.
    assert clock.to_local_ms(7_000_000, now_ms=9999.0) == 9999.0
    # 501 ms on, the offset may rise by 0.501 ms; the report is 500 ms late
    assert clock.to_local_ms(7_000_100, now_ms=10_500.0) == pytest.approx(7000.1 + 2999.501)


def test_switch_clock_never_maps_into_the_future() -> None:
    clock = SwitchClock(max_drift_ppm=0)
    clock.to_local_ms(1_000_000, now_ms=1000.0)          # offset 0
    # the controller's clock ran slower than the switch's by 2 ms: now is the limit
    assert clock.to_local_ms(1_010_000, now_ms=1008.0) == 1008.0


def test_switch_clock_unwraps_the_timestamp_field() -> None:
    clock = SwitchClock(modulus_us=float(1 << 16), restart_us=1000, max_drift_ppm=0)  # 65.536 ms
    assert clock.to_local_ms(65_000, now_ms=100.0) == 100.0         # offset 35 ms
    # 1 ms later the field has wrapped: 65 000 + 1000 - 65 536 = 464
    assert clock.to_local_ms(464, now_ms=101.0) == 101.0
    # on past the second wrap (every report within half the field of the last one)
    assert clock.to_local_ms(30_000, now_ms=131.0) == pytest.approx(65.536 + 30.0 + 35.0)
    assert clock.to_local_ms(60_000, now_ms=161.0) == pytest.approx(65.536 + 60.0 + 35.0)
    assert clock.to_local_ms(10_000, now_ms=177.0) == pytest.approx(2 * 65.536 + 10.0 + 35.0)
    # a reordered report, 0.5 ms before the newest (within restart_us): mapped before it
    assert clock.to_local_ms(9_500, now_ms=177.5) == pytest.approx(2 * 65.536 + 9.5 + 35.0)
    assert clock.restarts == 0


def test_a_tofino_report_clock_crosses_its_73_minute_wrap_without_a_restart() -> None:
    """A TNA flow report's time is a bit<32> of 1.024 us units (tna_ts_to_us): it wraps
    every 4398 s. A report just after the wrap is 2 ms after the one just before it,
    not a switch that restarted."""
    from mmaqm.targets.tna import TARGET, tna_ts_to_us

    clock = SwitchClock(modulus_us=TARGET.report_ts_modulus_us, max_drift_ppm=0)
    last_tick = (1 << 32) - 1000                       # 1.024 ms before the wrap
    before = tna_ts_to_us(last_tick)
    assert clock.to_local_ms(before, now_ms=5_000_000.0) == 5_000_000.0
    after = tna_ts_to_us(954)                          # 954 ticks after it: 2 ticks short of 2 ms
    # (1000 + 954) * 1.024 us = 2.000896 ms later; the truncation to whole us costs < 1.2 us
    assert clock.to_local_ms(after, now_ms=5_000_002.5) == pytest.approx(5_000_002.000896,
                                                                          abs=0.0012)
    assert clock.restarts == 0
    # with BMv2's 48-bit modulus the same two reports look like a restart
    bmv2 = SwitchClock(max_drift_ppm=0)
    bmv2.to_local_ms(before, now_ms=5_000_000.0)
    bmv2.to_local_ms(after, now_ms=5_000_002.5)
    assert bmv2.restarts == 1


def test_switch_clock_starts_afresh_when_the_switch_restarted() -> None:
    clock = SwitchClock()
    clock.to_local_ms(50_000_000, now_ms=60_000.0)       # switch up 50 s; offset 10 s
    # the switch restarted: its clock is at 0.2 s, 2 s later -> a new offset
    assert clock.to_local_ms(200_000, now_ms=62_000.0) == 62_000.0
    assert clock.restarts == 1
    assert clock.to_local_ms(300_000, now_ms=62_100.0) == 62_100.0
    clock.reset()                                         # install(): also afresh
    assert clock.to_local_ms(10, now_ms=70_000.0) == 70_000.0
