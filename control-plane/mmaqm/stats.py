"""Counter readings -> plain-text table (pure formatting, no switch).

A reading is keyed by (port, class name) and holds packet/byte counts::

    {(2, "TCP"): {
        "arrivals":   {"packets": 100, "bytes": 100000},
        "admits":     {"packets": 90,  "bytes": 90000},
        "departures": {"packets": 85,  "bytes": 85000},
        "drops": {"RED_EARLY": {"packets": 10, "bytes": 10000}},   # missing reasons = 0
        "ecn_marks": {"RED_EARLY": {"packets": 3, "bytes": 3000}}, # optional: RED's CE marks
    }}

ChIPS (chips.p4) has its own per-port events, :func:`chips_summary`.

Counts may also be objects with ``packets`` / ``bytes`` attributes (the
driver's CounterValue). Counter index arithmetic lives in p4constants.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from . import p4constants as C
from . import p4generated

COUNTERS = ("arrivals", "admits", "departures")
UNITS = ("packets", "bytes")
_DROP_REASONS = tuple(sorted(C.DROP_REASONS, key=C.DROP_REASONS.__getitem__))
_MARK_REASONS = ("RED_EARLY", "RED_FORCED")   # the reasons RED can mark for (red.p4)

Readings = Mapping[tuple[int, str], Mapping[str, Any]]


def _count(value: Any, unit: str) -> int:
    """packets or bytes of one counter value (mapping or object); absent = 0."""
    if value is None:
        return 0
    if isinstance(value, Mapping):
        return int(value.get(unit, 0))
    return int(getattr(value, unit))


def loss_percent(dropped: int, arrivals: int) -> float | None:
    """100 * dropped / arrivals; None without arrivals."""
    return None if arrivals == 0 else 100.0 * dropped / arrivals


def _row(port: int, class_name: str, reading: Mapping[str, Any], unit: str) -> list[str]:
    unknown = set(reading) - set(COUNTERS) - {"drops", "ecn_marks"}
    if unknown:
        raise ValueError(f"({port}, {class_name}): unknown counters {sorted(unknown)}")
    drops: Mapping[str, Any] = reading.get("drops") or {}
    unknown = set(drops) - set(_DROP_REASONS)
    if unknown:
        raise ValueError(f"({port}, {class_name}): unknown drop reasons {sorted(unknown)}")
    marks: Mapping[str, Any] = reading.get("ecn_marks") or {}
    unknown = set(marks) - set(_MARK_REASONS)
    if unknown:
        raise ValueError(f"({port}, {class_name}): unknown ECN mark reasons {sorted(unknown)}")
    arrivals = _count(reading.get("arrivals"), unit)
    admitted = _count(reading.get("admits"), unit)
    departed = _count(reading.get("departures"), unit)
    drop_counts = [_count(drops.get(reason), unit) for reason in _DROP_REASONS]
    marked = sum(_count(marks.get(reason), unit) for reason in _MARK_REASONS)
    loss = loss_percent(sum(drop_counts), arrivals)
    return [str(port), class_name, str(arrivals), str(admitted), str(departed),
            str(admitted - departed), *map(str, drop_counts), str(marked),
            "-" if loss is None else f"{loss:.2f}"]


def _sort_key(key: tuple[int, str]) -> tuple[int, int, str]:
    port, class_name = key
    return port, C.CLASSES.get(class_name, len(C.CLASSES)), class_name


def format_table(readings: Readings, *, unit: str = "packets") -> str:
    """One row per (port, class), sorted by port then class id.

    Columns: port, class, arrivals, admitted, departed, queued (= admitted -
    departed), one column per drop reason, ecn_marked (RED's CE marks; those
    packets are admitted), loss% (all drops / arrivals).
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    header = ["port", "class", "arrivals", "admitted", "departed", "queued",
              *_DROP_REASONS, "ecn_marked", "loss%"]
    rows = [_row(port, class_name, readings[(port, class_name)], unit)
            for port, class_name in sorted(readings, key=_sort_key)]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        # Text columns (port is a number but reads better left-aligned) left, numbers right.
        return "  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                         for i, (cell, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join(line(cells) for cells in [header, *rows]) + "\n"


def readings_from_counters(
    ports: Iterable[int],
    *,
    arrivals: Mapping[int, Any],
    admits: Mapping[int, Any],
    departures: Mapping[int, Any],
    drops: Mapping[int, Any],
    ecn_marks: Mapping[int, Any] | None = None,
    classes: Iterable[str] = tuple(C.CLASSES),
) -> dict[tuple[int, str], dict[str, Any]]:
    """Readings from whole-counter reads {index: value} of queue_arrivals,
    queue_admits, queue_departures, queue_drops and queue_ecn_marks; absent
    indexes read 0."""
    ecn_marks = ecn_marks or {}
    result: dict[tuple[int, str], dict[str, Any]] = {}
    for port in ports:
        for class_name in classes:
            class_id = C.CLASSES[class_name]
            index = C.class_index(port, class_id)
            result[(port, class_name)] = {
                "arrivals": arrivals.get(index),
                "admits": admits.get(index),
                "departures": departures.get(index),
                "drops": {reason: drops.get(C.drop_index(port, class_id, reason_id))
                          for reason, reason_id in C.DROP_REASONS.items()},
                "ecn_marks": {reason: ecn_marks.get(
                    C.drop_index(port, class_id, C.DROP_REASONS[reason]))
                    for reason in _MARK_REASONS},
            }
    return result


QUEUE_COUNTERS = {  # P4 counter name -> reading key (aqm.p4, occupancy.p4)
    "queue_arrivals": "arrivals",
    "queue_admits": "admits",
    "queue_departures": "departures",
    "queue_drops": "drops",
    "queue_ecn_marks": "ecn_marks",
}
CHIPS_COUNTER = "chips_events"         # chips.p4: ChIPS on/off, cut-ins, slots, per port
# upta.p4/main.p4: QoS Probes and Reports that reached a port's AQM (per egress port),
# counted among its UNTAGGED arrivals: the routers' control traffic, not a host's
BFD_COUNTER = "bfd_arrivals"


def chips_indexes(ports: Iterable[int]) -> list[int]:
    """chips_events indexes of every event for these ports."""
    return [C.chips_index(p, e) for p in ports for e in C.CHIPS_EVENTS.values()]


def chips_summary(values: Mapping[int, Any], readings: Readings,
                  ports: Iterable[int]) -> dict[int, dict[str, Any]]:
    """Per port: the ChIPS event counts (packets) and what they mean.

    on_fraction: admitted packets that found ChIPS on / all admitted under
    DCBT_CHIPS (None without any); enqueue_ratio: tagged / other admitted
    packets over the same counts (the ratio ChIPS averages, dcbt §3.2), None
    without other packets. Ports without ChIPS events are left out.
    """
    out: dict[int, dict[str, Any]] = {}
    for port in ports:
        events = {name: _count(values.get(C.chips_index(port, e)), "packets")
                  for name, e in C.CHIPS_EVENTS.items()}
        if not any(events.values()):
            continue
        admitted = events["on_admits"] + events["off_admits"]
        tagged = _count((readings.get((port, "TAGGED")) or {}).get("admits"), "packets")
        other = sum(_count((readings.get((port, cls)) or {}).get("admits"), "packets")
                    for cls in C.CLASSES if cls != "TAGGED")
        out[port] = {
            **events,
            "on_fraction": None if admitted == 0 else events["on_admits"] / admitted,
            "enqueue_ratio": None if other == 0 else tagged / other,
        }
    return out


def format_chips(summary: Mapping[int, Mapping[str, Any]]) -> str:
    """One line per ChIPS port, for mmaqm-ctl stats ("" without any)."""
    lines = []
    for port, row in sorted(summary.items()):
        on = "-" if row["on_fraction"] is None else f"{100 * row['on_fraction']:.1f} %"
        ratio = "-" if row["enqueue_ratio"] is None else f"{row['enqueue_ratio']:.3f}"
        lines.append(f"port {port} ChIPS: on for {on} of admits, tagged/other enqueue ratio "
                     f"{ratio}, cut-ins {row['cut_in']}, slots left {row['slot_departed']}, "
                     f"tagged FIFO (queue <= average) {row['no_congestion']}")
    return "".join(line + "\n" for line in lines)


DISCARD_COUNTER = "ingress_discards"   # main.p4: discards before the AQM, per ingress port


def discard_indexes(ports: Iterable[int]) -> list[int]:
    """ingress_discards indexes of every reason for these ingress ports (main.p4)."""
    return [C.discard_index(p, r) for p in ports for r in C.DISCARD_REASONS.values()]


def discards_per_port(values: Mapping[int, Any], ports: Iterable[int]) -> dict[int, int]:
    """{ingress port: packets discarded before the AQM, every reason} from ingress_discards."""
    return {p: sum(_count(values.get(C.discard_index(p, r)), "packets")
                   for r in C.DISCARD_REASONS.values()) for p in ports}


# TNA main.p4: frames from a port outside pipe 0 (where the AQM state is),
# discarded before the AQM and counted by their pipe (dev port bits 8..7);
# ingress_discards has no reason slot left for them. v1model has no pipes and
# no such counter: it reads as no values (the target reads what the program has).
OTHER_PIPE_COUNTER = "other_pipe_discards"
TNA_PIPES: int = p4generated.TNA_TYPES_CONSTANTS["TNA_PIPES"]


def other_pipe_indexes() -> list[int]:
    """other_pipe_discards indexes: pipes 1..TNA_PIPES - 1 (pipe 0's frames pass)."""
    return list(range(1, TNA_PIPES))


def other_pipe_discards(values: Mapping[int, Any]) -> dict[int, int]:
    """{pipe: frames discarded} from other_pipe_discards; {} when the program has
    no such counter (v1model), so a sample tells "none counted" from "no counter"."""
    if not values:
        return {}
    return {pipe: _count(values.get(pipe), "packets") for pipe in other_pipe_indexes()}


def format_other_pipe(counts: Mapping[int, int]) -> str:
    """One line for mmaqm-ctl stats ("" without the counter)."""
    if not counts:
        return ""
    per_pipe = ", ".join(f"pipe {pipe} {n}" for pipe, n in sorted(counts.items()))
    return (f"frames from ports outside pipe 0, discarded: {sum(counts.values())} "
            f"({per_pipe})\n")


def counter_indexes(ports: Iterable[int],
                    classes: Iterable[str] = tuple(C.CLASSES)) -> dict[str, list[int]]:
    """The counter indexes that readings_from_counters needs for these ports."""
    class_ids = [C.CLASSES[name] for name in classes]
    per_class = [C.class_index(p, c) for p in ports for c in class_ids]
    drops = [C.drop_index(p, c, r) for p in ports for c in class_ids
             for r in C.DROP_REASONS.values()]
    marks = [C.drop_index(p, c, C.DROP_REASONS[r]) for p in ports for c in class_ids
             for r in _MARK_REASONS]
    return {"queue_arrivals": per_class, "queue_admits": per_class,
            "queue_departures": per_class, "queue_drops": drops, "queue_ecn_marks": marks}


def readings_to_json(readings: Readings) -> list[dict[str, Any]]:
    """Readings as JSON-ready rows: one per (port, class), packets and bytes,
    every drop reason present (0 when absent). Sorted by port, then class id."""
    def both(value: Any) -> dict[str, int]:
        return {unit: _count(value, unit) for unit in UNITS}

    rows = []
    for port, class_name in sorted(readings, key=_sort_key):
        reading = readings[(port, class_name)]
        drops = reading.get("drops") or {}
        marks = reading.get("ecn_marks") or {}
        rows.append({
            "port": port, "class": class_name,
            **{name: both(reading.get(name)) for name in COUNTERS},
            "drops": {reason: both(drops.get(reason)) for reason in _DROP_REASONS},
            "ecn_marks": {reason: both(marks.get(reason)) for reason in _MARK_REASONS},
        })
    return rows


def sample_indexes(ports: Iterable[int]) -> dict[str, list[int]]:
    """Every counter index one sample reads (one ReadRequest): the queue counters of
    these ports, their ingress discards, and (TNA) the frames of other pipes' ports."""
    ports = list(ports)
    return {**counter_indexes(ports), DISCARD_COUNTER: discard_indexes(ports),
            CHIPS_COUNTER: chips_indexes(ports), OTHER_PIPE_COUNTER: other_pipe_indexes(),
            BFD_COUNTER: ports}


def counter_sample(t_ns: int, switch: str, ports: Iterable[int],
                   values: Mapping[str, Mapping[int, Any]]) -> dict[str, Any]:
    """One switch's counters as a JSON-ready sample (mmaqm-ctl --stats-out and stats --json):
    queue readings per port and class, and discards before the AQM by ingress port, which
    with the arrivals are every packet the pipeline saw."""
    ports = sorted(ports)
    readings = readings_from_counters(
        ports, **{key: values[name] for name, key in QUEUE_COUNTERS.items()})
    return {
        "t_ns": t_ns,
        "switch": switch,
        "readings": readings_to_json(readings),
        "ingress_discards": {str(p): n for p, n in
                             discards_per_port(values[DISCARD_COUNTER], ports).items()},
        "chips": {str(p): row for p, row in
                  chips_summary(values.get(CHIPS_COUNTER, {}), readings, ports).items()},
        # TNA: frames from ports outside pipe 0, by pipe ({} on v1model)
        "other_pipe_discards": {str(pipe): n for pipe, n in
                                other_pipe_discards(values.get(OTHER_PIPE_COUNTER, {})).items()},
        # a program with the counter (UPTA's BFD): per port; else no key
        **({"bfd_arrivals": {str(p): int(values[BFD_COUNTER][p].packets) for p in ports
                             if p in values[BFD_COUNTER]}}
           if values.get(BFD_COUNTER) else {}),
    }
