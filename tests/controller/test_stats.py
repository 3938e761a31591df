"""stats: counter readings -> text table."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mmaqm import p4constants as C
from mmaqm.stats import (chips_summary, counter_indexes, format_chips, format_table, loss_percent,
                         readings_from_counters, readings_to_json)


def pb(packets: int, bytes_: int | None = None) -> dict[str, int]:
    return {"packets": packets, "bytes": packets * 1000 if bytes_ is None else bytes_}


READINGS = {
    (2, "UNTAGGED"): {"arrivals": pb(0), "admits": pb(0), "departures": pb(0), "drops": {}},
    (2, "TCP"): {
        "arrivals": pb(200), "admits": pb(150), "departures": pb(140),
        "drops": {"RED_EARLY": pb(30), "RED_FORCED": pb(10), "QUEUE_LIMIT": pb(10)},
        "ecn_marks": {"RED_EARLY": pb(4), "RED_FORCED": pb(2)},
    },
    (1, "TAGGED"): {
        "arrivals": pb(8), "admits": pb(7), "departures": pb(7),
        "drops": {"CLASS_THRESHOLD": pb(1)},
    },
}


def test_format_table_packets() -> None:
    # port 2 TCP: queued = 150 - 140 = 10; loss = (10 + 30 + 10) / 200 = 25.00 %
    # port 1 TAGGED: queued 0; loss = 1 / 8 = 12.50 %; no arrivals -> "-"
    # port 2 TCP: 4 + 2 ECN marks (admitted packets: not loss)
    # rows sorted by port, then class id (TCP 0, TAGGED 1, UNTAGGED 2)
    assert format_table(READINGS) == (
        "port  class     arrivals  admitted  departed  queued  QUEUE_LIMIT  RED_EARLY  RED_FORCED  CLASS_THRESHOLD  FRED_MAXQ  FRED_TWICE_AVGCQ  FRED_STRIKE  UPTA_USELESS  UPTA_FAIR_SHARE  TAG_GUARD  ecn_marked  loss%\n"
        "1     TAGGED           8         7         7       0            0          0           0                1          0                 0            0             0                0          0           0  12.50\n"
        "2     TCP            200       150       140      10           10         30          10                0          0                 0            0             0                0          0           6  25.00\n"
        "2     UNTAGGED         0         0         0       0            0          0           0                0          0                 0            0             0                0          0           0      -\n"
    )


def test_format_table_bytes() -> None:
    table = format_table({(1, "TCP"): {"arrivals": pb(2, 3000), "admits": pb(1, 1000),
                                       "departures": pb(0, 0),
                                       "drops": {"QUEUE_LIMIT": pb(1, 2000)}}}, unit="bytes")
    # bytes: 3000 arrived, 1000 admitted, 0 departed -> queued 1000; loss 2000 / 3000 = 66.67 %
    assert table.splitlines()[1].split() == ["1", "TCP", "3000", "1000", "0", "1000", "2000",
                                             "0", "0", "0", "0", "0", "0", "0", "0", "0",
                                             "0", "66.67"]


def test_loss_percent() -> None:
    assert loss_percent(1, 8) == 12.5
    assert loss_percent(0, 0) is None


def test_unknown_reason_or_counter_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown drop reasons"):
        format_table({(1, "TCP"): {"arrivals": pb(1), "drops": {"RED_EARLY_TYPO": pb(1)}}})
    with pytest.raises(ValueError, match="unknown counters"):
        format_table({(1, "TCP"): {"arivals": pb(1)}})
    with pytest.raises(ValueError):
        format_table(READINGS, unit="frames")


@dataclass(frozen=True)
class CounterValue:           # shape of driver.CounterValue
    packets: int = 0
    bytes: int = 0


def test_readings_from_counters_uses_the_p4_indexes() -> None:
    # port 2 TAGGED: class index 2*4+1 = 9; CLASS_THRESHOLD drop index 9*10+3 = 93
    readings = readings_from_counters(
        [2],
        arrivals={9: CounterValue(5, 500)},
        admits={9: CounterValue(4, 400)},
        departures={9: CounterValue(3, 300)},
        drops={93: CounterValue(1, 100)},
    )
    assert set(readings) == {(2, "TCP"), (2, "TAGGED"), (2, "UNTAGGED")}
    assert readings[(2, "TAGGED")]["drops"]["CLASS_THRESHOLD"] == CounterValue(1, 100)
    lines = format_table(readings).splitlines()
    assert lines[2].split() == ["2", "TAGGED", "5", "4", "3", "1", "0", "0", "0", "1", "0", "0", "0", "0", "0",
                                "0", "0", "20.00"]
    assert lines[1].split()[-1] == "-"          # TCP: no arrivals
    assert C.drop_index(2, C.CLASS_TAGGED, C.DROP_REASONS["CLASS_THRESHOLD"]) == 93


def test_counter_indexes_cover_exactly_what_readings_need() -> None:
    idx = counter_indexes([2], classes=("TAGGED",))
    # port 2 TAGGED: class index 9; drop indexes 9*10 + reason 0..9 = 90..99
    # ECN marks: same indexes as drops, reasons RED_EARLY 1 and RED_FORCED 2: 91, 92
    assert idx == {"queue_arrivals": [9], "queue_admits": [9], "queue_departures": [9],
                   "queue_drops": list(range(90, 100)), "queue_ecn_marks": [91, 92]}
    full = counter_indexes([1, 3])
    assert len(full["queue_arrivals"]) == 2 * 3 and len(full["queue_drops"]) == 2 * 3 * 10


def test_readings_to_json_fills_missing_reasons_with_zero() -> None:
    readings = readings_from_counters(
        [2], arrivals={9: CounterValue(5, 500)}, admits={9: CounterValue(4, 400)},
        departures={9: CounterValue(3, 300)}, drops={93: CounterValue(1, 100)},
        classes=("TAGGED", "TCP"))
    rows = readings_to_json(readings)
    assert [r["class"] for r in rows] == ["TCP", "TAGGED"]      # sorted by class id
    tagged = rows[1]
    assert tagged["arrivals"] == {"packets": 5, "bytes": 500}
    assert tagged["departures"] == {"packets": 3, "bytes": 300}
    assert tagged["drops"]["CLASS_THRESHOLD"] == {"packets": 1, "bytes": 100}
    assert tagged["drops"]["RED_EARLY"] == {"packets": 0, "bytes": 0}
    assert set(tagged["drops"]) == set(C.DROP_REASONS)
    assert rows[0]["admits"] == {"packets": 0, "bytes": 0}      # absent index reads 0


def test_chips_summary_hand_computed() -> None:
    # port 2: index 2 * 5 + event; on 90, off 10 -> on 90 %; tagged admits 7 (port 1 has
    # the TAGGED row in READINGS, port 2 none) -> port 2 ratio 0 / (150 + 0) = 0
    values = {C.chips_index(2, C.CHIPS_ON_ADMITS): CounterValue(90),
              C.chips_index(2, C.CHIPS_OFF_ADMITS): CounterValue(10),
              C.chips_index(2, C.CHIPS_CUT_IN): CounterValue(12),
              C.chips_index(2, C.CHIPS_SLOT_DEPARTED): CounterValue(11),
              C.chips_index(2, C.CHIPS_NO_CONGESTION): CounterValue(3)}
    assert C.chips_index(2, C.CHIPS_CUT_IN) == 12
    readings = {**READINGS, (2, "TAGGED"): {"admits": pb(30)}}
    summary = chips_summary(values, readings, [1, 2])
    assert list(summary) == [2]                               # port 1: no ChIPS events
    row = summary[2]
    assert (row["on_admits"], row["off_admits"], row["cut_in"], row["slot_departed"],
            row["no_congestion"]) == (90, 10, 12, 11, 3)
    assert row["on_fraction"] == 0.9
    assert row["enqueue_ratio"] == 30 / 150                   # tagged / (TCP + untagged)
    assert format_chips(summary) == (
        "port 2 ChIPS: on for 90.0 % of admits, tagged/other enqueue ratio 0.200, cut-ins 12, "
        "slots left 11, tagged FIFO (queue <= average) 3\n")
    assert format_chips({}) == ""


def test_counter_sample_carries_bfd_arrivals_only_where_the_program_counts_them() -> None:
    """bfd_arrivals (upta.p4: QoS Probes and Reports per egress port, among the
    UNTAGGED arrivals) is read in the sample's one request; a program without the
    counter (the read returns {} for it) gives no key, so the UDP delivery check
    knows it cannot subtract them."""
    from mmaqm import stats
    from mmaqm.driver import CounterValue
    assert stats.sample_indexes([2, 3])[stats.BFD_COUNTER] == [2, 3]
    empty = {name: {} for name in stats.sample_indexes([2, 3])}
    assert "bfd_arrivals" not in stats.counter_sample(0, "r2", [2, 3], empty)
    values = {**empty, stats.BFD_COUNTER: {2: CounterValue(5, 0), 3: CounterValue(37, 0)}}
    assert stats.counter_sample(0, "r2", [2, 3], values)["bfd_arrivals"] == {"2": 5, "3": 37}
