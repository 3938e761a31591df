"""Experiment metrics, as pure functions over raw samples (no I/O).

Paper references are to the papers cited in docs/papers.md:

* dcbt  -- Chung, Claypool: "Dynamic-CBT and ChIPS" (2000), section 4 (metrics)
  and section 6 (results);
* feng  -- Feng, Feng: "The Impact of Active Queue Management on Multimedia
  Congestion Control", section 3 (bandwidth over 1 s and 8 s windows);
* RFC 3550 section 6.4.1 (interarrival jitter).

Units: timestamps and delays are in whatever unit the caller passes (the
tools write nanoseconds; convert to seconds first if you want seconds out),
except where a name says ``_s`` or ``_bps``. Throughputs are in bits per second
and are computed from the byte counts given (the mmapp receiver records IPv4
datagram bytes, so its throughputs are IP-level).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Iterable, Mapping, Optional, Sequence, TypeVar

K = TypeVar("K", bound=Hashable)
C = TypeVar("C", bound=Hashable)

#: A throughput sample: (arrival time in seconds, bytes received).
ThroughputSample = tuple[float, int]


# ---------------------------------------------------------------------------
# Throughput and fairness (dcbt section 4, section 6.1, section 6.2)
# ---------------------------------------------------------------------------


def flow_throughput_bps(samples: Iterable[ThroughputSample], t0: float, t1: float) -> float:
    """Throughput of one flow over the half-open interval [t0, t1), in bit/s.

    ``samples`` are (timestamp_s, bytes) pairs, e.g. receive time and IP
    datagram length of every packet the receiver got. A packet counts if
    ``t0 <= timestamp_s < t1``; the result is ``8 * sum(bytes) / (t1 - t0)``.
    This is the "average throughput of each individual flow" over a period
    (0-10 s, 10-20 s, 20-30 s) that dcbt section 6.1/6.2 feeds to its metrics.

    Raises ValueError if ``t1 <= t0``.
    """
    if not t1 > t0:
        raise ValueError(f"empty interval [{t0}, {t1})")
    total = sum(b for t, b in samples if t0 <= t < t1)
    return 8.0 * total / (t1 - t0)


def per_flow_throughputs_bps(
    samples_by_flow: Mapping[K, Iterable[ThroughputSample]], t0: float, t1: float
) -> dict[K, float]:
    """:func:`flow_throughput_bps` for every flow of a mapping flow -> samples."""
    return {f: flow_throughput_bps(s, t0, t1) for f, s in samples_by_flow.items()}


def class_average_per_flow_throughput(
    throughput_by_flow: Mapping[K, float], class_of_flow: Mapping[K, C]
) -> dict[C, float]:
    """Average per-flow throughput of each class (dcbt section 4, Fig. 8).

    dcbt section 4: "an average aggregated class throughput divided by the
    number of flows in the class". For each class c::

        avg(c) = sum(throughput of flows f with class_of_flow[f] == c)
                 / |{f : class_of_flow[f] == c}|

    ``class_of_flow`` is the authority on which flows exist: a flow listed there
    but missing from ``throughput_by_flow`` counts as 0 bit/s (a starved flow
    that delivered no packet still counts in its class's denominator). Flows in
    ``throughput_by_flow`` but not in ``class_of_flow`` are ignored.
    """
    sums: dict[C, float] = {}
    counts: dict[C, int] = {}
    for f, c in class_of_flow.items():
        sums[c] = sums.get(c, 0.0) + float(throughput_by_flow.get(f, 0.0))
        counts[c] = counts.get(c, 0) + 1
    return {c: sums[c] / counts[c] for c in sums}


def jain_index(xs: Sequence[float]) -> float:
    """Jain's fairness index (dcbt section 4, Fig. 5)::

        J(x_1..x_n) = (sum x_i)^2 / (n * sum x_i^2)

    with n the number of values (Fig. 5 indexes the sum from 0 to n but divides
    by n; we use n = number of flows, the standard form, so that equal
    allocations give exactly 1). J lies in [1/n, 1]: 1 when all x_i are equal,
    1/n when one flow gets everything.

    Defined edge cases:
      * all values zero -> 1.0 (every flow got the same, zero, share; this is
        also the limit of J along equal allocations);
      * empty input -> ValueError (fairness among no flows is undefined and
        asking for it is a caller bug);
      * a negative or non-finite value -> ValueError.
    """
    n = len(xs)
    if n == 0:
        raise ValueError("jain_index of no flows is undefined")
    for x in xs:
        if not math.isfinite(x) or x < 0:
            raise ValueError(f"jain_index needs finite non-negative values, got {x!r}")
    s = math.fsum(xs)
    s2 = math.fsum(x * x for x in xs)
    if s2 == 0.0:
        return 1.0
    return s * s / (n * s2)


def loss_rate(sent: int, received: int) -> float:
    """Packet loss rate ``(sent - received) / sent``, in [0, 1].

    ``sent == 0`` gives 0.0 (nothing sent, nothing lost). Raises ValueError for
    negative counts or ``received > sent`` (duplicates or mismatched counters).
    """
    if sent < 0 or received < 0:
        raise ValueError("counts must be non-negative")
    if received > sent:
        raise ValueError(f"received ({received}) > sent ({sent})")
    if sent == 0:
        return 0.0
    return (sent - received) / sent


# ---------------------------------------------------------------------------
# Delay and jitter (dcbt section 4 "variance in end-to-end delay", RFC 3550)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DelayStats:
    """One-way delay statistics, in the unit of the input timestamps."""

    count: int
    mean: float
    min: float
    max: float
    spread: float  #: max - min
    std: float  #: population standard deviation (ddof = 0)
    variance: float  #: population variance: dcbt section 4's jitter


def delay_stats(pairs: Iterable[tuple[float, float]]) -> DelayStats:
    """Statistics of one-way delay d_i = recv_ts_i - send_ts_i.

    dcbt section 4 measures multimedia jitter as the *variance in end-to-end
    delay* (r_i - s_i, Fig. 6), which needs one clock at both ends; our network
    namespaces share the host's CLOCK_REALTIME, so d_i is exact up to timestamp
    placement. ``std`` and ``variance`` are population statistics (divide by
    the count). Raises ValueError when there are no pairs.
    """
    d = [float(r) - float(s) for s, r in pairs]
    if not d:
        raise ValueError("delay_stats of no packets")
    n = len(d)
    mean = math.fsum(d) / n
    var = math.fsum((x - mean) ** 2 for x in d) / n
    lo, hi = min(d), max(d)
    return DelayStats(n, mean, lo, hi, hi - lo, math.sqrt(var), var)


def rfc3550_jitter_series(pairs: Sequence[tuple[float, float]]) -> list[float]:
    """RFC 3550 section 6.4.1 interarrival jitter after each packet.

    ``pairs`` are (send_ts, recv_ts) in *arrival order* (the order the receiver
    saw them). For consecutive packets i-1, i::

        D(i-1, i) = (R_i - R_{i-1}) - (S_i - S_{i-1})
        J_i = J_{i-1} + (|D(i-1, i)| - J_{i-1}) / 16,   J_0 = 0

    Returns J after each packet (the first packet gives 0.0), in the unit of
    the input (pass seconds to get seconds). Floating point instead of the
    RFC's integer RTP timestamp units.
    """
    out: list[float] = []
    j = 0.0
    prev: tuple[float, float] | None = None
    for s, r in pairs:
        if prev is not None:
            dd = (float(r) - prev[1]) - (float(s) - prev[0])
            j += (abs(dd) - j) / 16.0
        out.append(j)
        prev = (float(s), float(r))
    return out


def rfc3550_jitter(pairs: Sequence[tuple[float, float]]) -> float:
    """Final RFC 3550 interarrival jitter J (see :func:`rfc3550_jitter_series`).

    Returns 0.0 for fewer than two packets.
    """
    series = rfc3550_jitter_series(pairs)
    return series[-1] if series else 0.0


# ---------------------------------------------------------------------------
# Bandwidth variation (feng section 3, Fig. 2 and Fig. 3)
# ---------------------------------------------------------------------------


def window_throughputs_bps(
    samples: Iterable[ThroughputSample], window_s: float, t0: float, t1: float
) -> list[float]:
    """Per-window throughput of one flow, in bit/s.

    [t0, t1) is cut into ``k = floor((t1 - t0) / window_s)`` consecutive full
    windows [t0 + i*w, t0 + (i+1)*w); a trailing partial window is dropped so
    that every value covers the same length of time. Windows with no packet
    count as 0 bit/s. Raises ValueError if not even one full window fits.
    """
    if window_s <= 0:
        raise ValueError("window_s must be positive")
    k = int(math.floor((t1 - t0) / window_s + 1e-9))
    if k < 1:
        raise ValueError(f"[{t0}, {t1}) holds no full {window_s} s window")
    acc = [0] * k
    for t, b in samples:
        if t0 <= t < t1:
            i = int((t - t0) // window_s)
            if i < k:
                acc[i] += b
    return [8.0 * a / window_s for a in acc]


@dataclass(frozen=True)
class BandwidthVariation:
    """Bandwidth variation of one flow at one time scale (feng section 3)."""

    window_s: float
    windows_bps: tuple[float, ...]  #: throughput of each full window
    mean_bps: float
    std_bps: float  #: population standard deviation of windows_bps
    cov: float  #: coefficient of variation std_bps / mean_bps (0.0 if mean is 0)


def bandwidth_variation(
    samples: Iterable[ThroughputSample], window_s: float, t0: float, t1: float
) -> BandwidthVariation:
    """Bandwidth variation of one flow over ``window_s`` windows.

    feng section 3 plots the bandwidth one TCP flow receives over 1 s and 8 s
    intervals (Fig. 2) and reports how much it varies (Fig. 3). We define the
    variation precisely as the coefficient of variation of the per-window
    throughput::

        x_i = throughput in window i (see window_throughputs_bps)
        cov = std(x) / mean(x)      (population std, ddof = 0)

    ``cov`` is dimensionless, so flows with different fair shares compare;
    ``std_bps`` keeps the absolute figure (feng's Fig. 3 axis is in Mbit/s).
    A flow that delivered nothing (mean 0) has cov 0.0 by definition.
    """
    xs = window_throughputs_bps(samples, window_s, t0, t1)
    n = len(xs)
    mean = math.fsum(xs) / n
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / n)
    cov = std / mean if mean > 0 else 0.0
    return BandwidthVariation(window_s, tuple(xs), mean, std, cov)


def bandwidth_variation_1s_8s(
    samples: Sequence[ThroughputSample], t0: float, t1: float
) -> dict[float, BandwidthVariation]:
    """:func:`bandwidth_variation` at feng's two time scales, keyed 1.0 and 8.0.

    The 8 s entry is omitted when [t0, t1) is shorter than 8 s.
    """
    out = {1.0: bandwidth_variation(samples, 1.0, t0, t1)}
    if t1 - t0 >= 8.0 - 1e-9:
        out[8.0] = bandwidth_variation(samples, 8.0, t0, t1)
    return out


def smoothing_to_reach_s(curve: Sequence[tuple[float, float]], target: float) -> Optional[float]:
    """feng section 3.2, Fig. 3: the smoothing (playback) delay after which a flow's
    bandwidth variation has fallen to ``target``.

    ``curve`` is (window_s, variation) for increasing window_s: the variation of
    the throughput averaged over windows of that length (a receiver that buffers
    window_s of video sees that variation). Returns the first window_s whose
    variation is <= target, linearly interpolated between it and the previous
    point (the variation falls between them); curve[0]'s window if the curve
    already starts at or below target; None if it never gets there. feng reads
    this "horizontal distance" off Fig. 3 (drop-tail's unsmoothed variation is
    reached by RED after about 0.9 s).
    """
    pts = list(curve)
    for (w0, _), (w1, _) in zip(pts, pts[1:]):
        if w1 <= w0:
            raise ValueError("window lengths must increase")
    for i, (w, v) in enumerate(pts):
        if v <= target:
            if i == 0:
                return w
            w_prev, v_prev = pts[i - 1]
            return w_prev + (w - w_prev) * (v_prev - target) / (v_prev - v)
    return None


# ---------------------------------------------------------------------------
# Queue occupancy time series
# ---------------------------------------------------------------------------


def _check_series(times: Sequence[float], values: Sequence[float]) -> None:
    if len(times) != len(values):
        raise ValueError("times and values differ in length")
    for a, b in zip(times, times[1:]):
        if b < a:
            raise ValueError("times must be non-decreasing")


def resample_hold(
    times: Sequence[float],
    values: Sequence[float],
    interval: float,
    t0: float,
    t1: float,
    initial: float = 0.0,
) -> tuple[list[float], list[float]]:
    """Sample a step function (e.g. queue length in packets) on a fixed grid.

    The series (times[i], values[i]) is read as "the queue became values[i] at
    times[i]" and held until the next change (zero-order hold). Returns
    (grid, samples) with grid = t0, t0 + interval, ... < t1 and each sample the
    last value at or before that grid time; ``initial`` before the first
    observation.
    """
    _check_series(times, values)
    if interval <= 0 or t1 <= t0:
        raise ValueError("need interval > 0 and t1 > t0")
    n = int(math.ceil((t1 - t0) / interval - 1e-9))
    grid = [t0 + k * interval for k in range(n)]
    out: list[float] = []
    j = 0
    cur = initial
    for g in grid:
        while j < len(times) and times[j] <= g:
            cur = values[j]
            j += 1
        out.append(float(cur))
    return grid, out


def time_weighted_mean(
    times: Sequence[float], values: Sequence[float], t0: float, t1: float, initial: float = 0.0
) -> float:
    """Time-weighted mean of a step function over [t0, t1).

    Same reading of (times, values) as :func:`resample_hold`. This is the
    "average queue occupancy" of a period, weighting each level by how long the
    queue stayed there (not by how many changes were logged).
    """
    _check_series(times, values)
    if t1 <= t0:
        raise ValueError("need t1 > t0")
    cur = initial
    j = 0
    while j < len(times) and times[j] <= t0:
        cur = values[j]
        j += 1
    acc = 0.0
    t = t0
    while j < len(times) and times[j] < t1:
        acc += cur * (times[j] - t)
        t = times[j]
        cur = values[j]
        j += 1
    acc += cur * (t1 - t)
    return acc / (t1 - t0)


def resample_mean(
    times: Sequence[float],
    values: Sequence[float],
    interval: float,
    t0: float,
    t1: float,
    initial: float = 0.0,
) -> tuple[list[float], list[float]]:
    """Time-weighted mean of a step function in each bin [t0 + k*interval, ...).

    Returns (bin start times, bin means). The last bin is cut at t1. Unlike
    :func:`resample_hold`, a level held only between two grid points still
    contributes, in proportion to how long it lasted.
    """
    _check_series(times, values)
    if interval <= 0 or t1 <= t0:
        raise ValueError("need interval > 0 and t1 > t0")
    n = int(math.ceil((t1 - t0) / interval - 1e-9))
    starts = [t0 + k * interval for k in range(n)]
    means: list[float] = []
    cur = initial
    j = 0
    while j < len(times) and times[j] <= t0:
        cur = values[j]
        j += 1
    for s in starts:
        e = min(s + interval, t1)
        acc = 0.0
        t = s
        while j < len(times) and times[j] < e:
            acc += cur * (times[j] - t)
            t = times[j]
            cur = values[j]
            j += 1
        acc += cur * (e - t)
        means.append(acc / (e - s))
    return starts, means
