"""The targets (targets.v1model, targets.tna): the tables p4src/tna reads instead of multiplying, against
v1model's arithmetic (red.p4 red_drop_test, dcbt.p4's tagged threshold)."""

from __future__ import annotations

import math

import pytest

from mmaqm.encoding import PolicyAction
from mmaqm.targets import tna as T
from mmaqm.targets.tna import (tna_drop_counter_index, tna_ts_to_us, v1_drop_counter_index,
                                AVG_KEY_MAX, AVG_KEY_SHIFT, AVG_MAX, RED_ZONE_SEGMENTS,
                                TNA_MAX_QUEUE_LIMIT_PKTS, dcbt_tagged_threshold_entries,
                                lookup, lpf_time_constant_ns, red_zone_entries)

RED = PolicyAction("red", {"queue_limit_pkts": 60, "flow_epoch_shift": 0, "policy_epoch": 1,
                           "ewma_shift": 9, "min_th_scaled": 5 << 16, "max_th_scaled": 15 << 16,
                           "red_slope_q24": 167772, "idle_decay_q32": 0, "gentle": 0,
                           "max_p_q16": 6553, "gentle_slope_q24": 1006632, "ecn": 0,
                           "harddrop": 0, "wait": 0})
GENTLE = RED.with_params(gentle=1)


def v1model_zone(p, avg: int) -> tuple[str, int]:
    """red.p4 red_drop_test's zone and p_b_q16 for avg."""
    forced = avg >= p["max_th_scaled"] and (p["gentle"] == 0 or avg >= 2 * p["max_th_scaled"])
    if avg < p["min_th_scaled"]:
        return "red_below", 0
    if forced:
        return "red_forced", 0
    if avg < p["max_th_scaled"]:
        return "red_early_p_b", ((avg - p["min_th_scaled"]) * p["red_slope_q24"]) >> 24
    return "red_early_p_b", p["max_p_q16"] + (((avg - p["max_th_scaled"])
                                              * p["gentle_slope_q24"]) >> 24)


@pytest.mark.parametrize("action", [RED, GENTLE], ids=["plain", "gentle"])
def test_red_zone_covers_every_average_once_with_v1models_zone(action) -> None:
    entries = red_zone_entries(action)
    assert entries[0].low == 0 and entries[-1].high == AVG_KEY_MAX
    assert all(a.high + 1 == b.low for a, b in zip(entries, entries[1:]))
    assert len(entries) <= RED_ZONE_SEGMENTS + 2
    p = action.params
    for avg in range(0, 3 * p["max_th_scaled"], 997):
        entry = lookup(entries, avg)
        zone, exact = v1model_zone(p, avg)
        assert entry.action == zone, avg
        if zone == "red_early_p_b":
            # exact at the segment's lower end, below it inside the segment
            low_avg = entry.low << AVG_KEY_SHIFT
            assert entry.params["p_b_q16"] == v1model_zone(p, low_avg)[1]
            assert entry.params["p_b_q16"] <= exact


def test_fred_has_no_gentle_parameter_and_gets_plain_red_zones() -> None:
    fred = PolicyAction("fred", {k: RED.params[k] for k in (
        "queue_limit_pkts", "flow_epoch_shift", "policy_epoch", "ewma_shift", "min_th_scaled",
        "max_th_scaled", "red_slope_q24", "idle_decay_q32")} | {"minq_pkts": 2,
                                                                  "fred_slot_mask": 4095})
    assert red_zone_entries(fred) == red_zone_entries(RED)


def test_dcbt_class_thresholds_start_above_min_th_with_avg_times_share() -> None:
    dcbt = PolicyAction("dcbt", RED.with_params(tagged_share_q16=16384,
                                                untagged_th_scaled=3 << 16).params)
    entries = dcbt_tagged_threshold_entries(dcbt)
    assert entries[0].low == 0 and entries[-1].high == AVG_KEY_MAX
    assert all(a.high + 1 == b.low for a, b in zip(entries, entries[1:]))
    assert len(entries) <= RED_ZONE_SEGMENTS
    min_th = RED.params["min_th_scaled"]
    for avg in range(0, 70 << 16, 4099):
        params = lookup(entries, avg).params
        # dcbt.p4: no class test unless red_avg > min_th (rounded up to the key's
        # 1/256 packet: the first key whose every average is above min_th)
        if (avg >> AVG_KEY_SHIFT) < -(-(min_th + 1) >> AVG_KEY_SHIFT):
            assert params == {"tagged_th_scaled": AVG_MAX, "untagged_th_scaled": AVG_MAX}
        else:
            low_avg = lookup(entries, avg).low << AVG_KEY_SHIFT
            exact = (avg * 16384) >> 16
            assert params["tagged_th_scaled"] == (low_avg * 16384) >> 16 <= exact
            assert params["untagged_th_scaled"] == 3 << 16


def test_thresholds_between_keys_round_up_to_the_next_256th_of_a_packet() -> None:
    odd = RED.with_params(min_th_scaled=(5 << 16) + 1, max_th_scaled=(15 << 16) + 300)
    entries = red_zone_entries(odd)
    assert entries[0].action == "red_below" and entries[0].high == ((5 << 16) >> 8)
    assert entries[-1].action == "red_forced" and entries[-1].low == ((15 << 16) >> 8) + 2


def test_queue_limits_the_average_key_cannot_hold_are_refused() -> None:
    assert TNA_MAX_QUEUE_LIMIT_PKTS == 4095
    red_zone_entries(RED.with_params(queue_limit_pkts=4095))
    with pytest.raises(ValueError, match="4095"):
        red_zone_entries(RED.with_params(queue_limit_pkts=4096))
    with pytest.raises(ValueError, match="4095"):
        dcbt_tagged_threshold_entries(PolicyAction("dcbt", RED.with_params(
            queue_limit_pkts=5000, tagged_share_q16=1).params))


def test_lpf_time_constant_weighs_one_packet_like_the_ewma() -> None:
    tau = lpf_time_constant_ns(9, 1200.0)
    assert 1 - math.exp(-1200.0 / tau) == pytest.approx(2 ** -9)
    assert tau == pytest.approx(1200.0 * 511.5, rel=1e-3)
    with pytest.raises(ValueError):
        lpf_time_constant_ns(0, 1200.0)


def test_a_tna_timestamp_counts_1024_ns() -> None:
    assert tna_ts_to_us(1000) == 1024
    assert tna_ts_to_us(0) == 0
    assert tna_ts_to_us(1) == 1            # 1.024 us, rounded down
    assert tna_ts_to_us((1 << 32) - 1) == ((1 << 32) - 1) * 1024 // 1000


def test_drop_counter_indexes_map_both_ways_over_every_class_and_reason() -> None:
    # v1model: class_index * 10 + reason; TNA: reason * 256 + class_index
    assert tna_drop_counter_index(6 * 10 + 3) == 3 * 256 + 6
    for v1 in range(64 * 4 * 10):
        assert v1_drop_counter_index(tna_drop_counter_index(v1)) == v1
    assert v1_drop_counter_index(10 * 256 + 1) is None    # no reason 10
    with pytest.raises(ValueError):
        tna_drop_counter_index(64 * 4 * 10)


def test_chips_events_map_to_the_tna_event_counters_and_back() -> None:
    from mmaqm.targets.tna import tna_chips_counter, v1_chips_index
    assert tna_chips_counter(2 * 5 + 0) == ("chips_on_admits", 2)
    assert tna_chips_counter(63 * 5 + 3) == ("chips_no_congestion", 63)
    assert tna_chips_counter(2 * 5 + 4) is None          # slot departures: not counted on TNA
    for index in range(64 * 5):
        target = tna_chips_counter(index)
        if target is not None:
            assert v1_chips_index(*target) == index
    with pytest.raises(ValueError):
        tna_chips_counter(64 * 5)


def test_range_entries_exist_for_the_red_family_only_and_check_the_port() -> None:
    from mmaqm.encoding import PolicyAction
    red = PolicyAction("red", {"queue_limit_pkts": 60, "min_th_scaled": 5 << 16,
                               "max_th_scaled": 15 << 16, "red_slope_q24": 167772,
                               "gentle": 0, "max_p_q16": 6553, "gentle_slope_q24": 0})
    entries = T.range_entries(4, red)
    assert {e.table for e in entries} == {"red_zone"}
    assert all(dict(e.match)["port"] == 4 and e.priority == 1 for e in entries)
    assert T.range_entries(4, PolicyAction("mcdt", {"queue_limit_pkts": 60})) == []
    assert T.range_entries(4, PolicyAction("drop_tail", {"queue_limit_pkts": 60})) == []
    with pytest.raises(ValueError):
        T.range_entries(64, red)
