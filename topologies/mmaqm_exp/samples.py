"""Readers for the CSV files that mmapp writes and for the runs' JSON-lines files
(counter, register and event series), and adapters to metrics inputs.

    rows = read_recv_csv("recv.csv")
    flows = by_flow(rows)
    thr = metrics.flow_throughput_bps(throughput_samples(flows[1]), 0.0, 10.0)
    d = metrics.delay_stats(delay_pairs_s(flows[1]))

Times in the files are CLOCK_REALTIME nanoseconds; the adapters return seconds,
optionally relative to an origin ``t0_ns`` (e.g. the experiment start).
"""

from __future__ import annotations

import csv
import json
from typing import Iterable, NamedTuple, Union
from os import PathLike

Path_ = Union[str, PathLike]


def parse_jsonl(text: str, source: object) -> list[dict]:
    """One JSON object per non-blank line, in file order; a bad line raises
    ValueError naming source:line."""
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError as e:
                raise ValueError(f"{source}:{i}: not JSON: {e}") from None
    return out


def read_jsonl(path: Path_) -> list[dict]:
    """A run's JSON-lines series (counters.jsonl, registers.jsonl, share_events.jsonl)
    sorted by t_ns."""
    with open(path) as f:
        out = parse_jsonl(f.read(), path)
    out.sort(key=lambda s: s["t_ns"])
    return out


class RecvSample(NamedTuple):
    """One received data packet (a row of ``mmapp recv --out``)."""

    flow_id: int
    seq: int
    send_ts_ns: int
    recv_ts_ns: int
    bytes: int  #: IPv4 datagram length
    scale: int  #: sender's scale index, 255 for CBR
    dscp: int


class SendLogRow(NamedTuple):
    """One row of ``mmapp send --log``."""

    t_ns: int
    event: str
    scale: int
    rate_kbps: float
    srtt_us: int  #: -1 = no estimate yet
    rtt_sample_us: int  #: -1 = none in this row
    sent: int
    fb_highest_seq: int
    fb_received: int
    fb_lost: int


def _csv_rows(path: Path_, fields: tuple[str, ...]) -> list[list[str]]:
    """Data rows of a CSV file whose header must be exactly `fields`."""
    with open(path, newline="") as f:
        r = csv.reader(f)
        header = next(r)
        if tuple(header) != fields:
            raise ValueError(f"{path}: unexpected header {header}")
        return list(r)


def read_recv_csv(path: Path_) -> list[RecvSample]:
    return [RecvSample(*(int(x) for x in row)) for row in _csv_rows(path, RecvSample._fields)]


def read_send_log(path: Path_) -> list[SendLogRow]:
    return [SendLogRow(int(row[0]), row[1], int(row[2]), float(row[3]), *(int(x) for x in row[4:]))
            for row in _csv_rows(path, SendLogRow._fields)]


def by_flow(rows: Iterable[RecvSample]) -> dict[int, list[RecvSample]]:
    """Group rows by flow id, keeping arrival order."""
    out: dict[int, list[RecvSample]] = {}
    for r in rows:
        out.setdefault(r.flow_id, []).append(r)
    return out


def throughput_samples(rows: Iterable[RecvSample], t0_ns: int = 0) -> list[tuple[float, int]]:
    """(receive time in s since t0_ns, IP bytes) pairs for metrics' throughput functions."""
    return [((r.recv_ts_ns - t0_ns) / 1e9, r.bytes) for r in rows]


def delay_pairs_s(rows: Iterable[RecvSample], t0_ns: int = 0) -> list[tuple[float, float]]:
    """(send time, receive time) in s since t0_ns, in arrival order (for delay/jitter)."""
    return [((r.send_ts_ns - t0_ns) / 1e9, (r.recv_ts_ns - t0_ns) / 1e9) for r in rows]
