"""Per-phase metrics of one run: summary.json + flows.csv (issue 3 section 4).

    summary = analyze("results/red", counters_jsonl="results/red/counters.jsonl")
    write_outputs(summary, "results/red")      # summary.json, flows.csv

Inputs are the raw files listed in ``traffic.json`` (traffic.run_scenario) and
optionally the controller's counter JSONL. Metrics, per phase [start_s, end_s)
of the scenario (dcbt section 6 uses 0-10, 10-20, 20-30 s):

* per-flow throughput, receive side, IP level (TCP payload bytes are scaled by
  packet_bytes / snd_mss, i.e. counted as the full-size IP packets that carried
  them; UDP receivers record IP datagram bytes). A flow counts in a phase if
  its scheduled activity overlaps the phase; its throughput is over the overlap;
* per-class average per-flow throughput (dcbt section 4, Fig. 8), Jain's index
  over every flow active in the phase (dcbt Fig. 11; a starved flow counts as
  0), each class's share of the delivered total, utilisation of the bottleneck
  rate when known, the fair share (bottleneck rate / active flows);
* UDP flows (MM_APP and CBR), per flow and per class: loss = (sent - received)
  / sent counting the packets *sent* in the phase (sequence numbers mapped to
  send times through the sender log), one-way delay mean/min/max/spread/std
  (dcbt section 4 "variance in end-to-end delay"), RFC 3550 jitter;
* per flow over its whole active span: bandwidth variation (feng section 3) of
  1 s windows, and of 8 s windows when at least two fit;
* from the counter JSONL (cumulative counters; a value at time t is the last
  sample at or before t): per port and class, arrival/admit/departure/drop
  deltas by reason over the run and per phase, the loss rate at the switch,
  and for the bottleneck port the queue occupancy (admits - departures) over
  time with its time-weighted mean per phase.
"""

from __future__ import annotations

import argparse
import bisect
import csv
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from . import metrics
from .samples import RecvSample, read_recv_csv, read_send_log
from .scenario import CLASSES, Flow, Scenario
from .traffic import TrafficResult

SCHEMA = "mmaqm-summary/1"
DROP_REASONS = ("QUEUE_LIMIT", "RED_EARLY", "RED_FORCED", "CLASS_THRESHOLD")
COUNTER_KINDS = ("arrivals", "admits", "departures")
BW_WINDOWS_S = (1.0, 8.0)       #: feng section 3
MIN_BW_WINDOWS = 2              #: a window size is reported only if this many fit
MAX_SERIES_POINTS = 20000       #: cap of each time series kept in summary.json
SUMMARY_FILE = "summary.json"
FLOWS_CSV = "flows.csv"
FLOWS_CSV_HEADER = (
    "phase", "start_s", "end_s", "flow_id", "kind", "class", "src", "dst", "active_s",
    "throughput_kbps", "sent_pkts", "received_pkts", "loss", "delay_mean_ms", "delay_min_ms",
    "delay_max_ms", "delay_spread_ms", "delay_std_ms", "jitter_ms", "bw_cov_1s", "bw_cov_8s",
)
RUN = "run"  #: pseudo-phase name for the whole scenario in flows.csv


# ---------------------------------------------------------------------------
# Small pure helpers (unit-tested with hand-computed values)
# ---------------------------------------------------------------------------


def tcp_ip_bytes(payload_bytes: float, snd_mss: int, packet_bytes: int) -> float:
    """IP bytes that carried ``payload_bytes`` of TCP payload in full segments.

    Each snd_mss-byte segment travels in a packet_bytes IP packet, so
    ip = payload * packet_bytes / snd_mss (e.g. 948 B payload -> 1000 B).
    """
    return payload_bytes * packet_bytes / snd_mss


def interp_sent(log: Sequence[tuple[int, int]], t_ns: int) -> float:
    """Packets sent before t from a sender log of (t_ns, sent-so-far) rows.

    Linear interpolation between neighbouring rows (for a CBR flow the log has
    only start and end, and the rate is constant); 0 before the first row, the
    last count after the last row.
    """
    if not log or t_ns < log[0][0]:
        return 0.0
    if t_ns >= log[-1][0]:
        return float(log[-1][1])
    i = bisect.bisect_right([t for t, _ in log], t_ns)
    (ta, sa), (tb, sb) = log[i - 1], log[i]
    if tb == ta:
        return float(sb)
    return sa + (sb - sa) * (t_ns - ta) / (tb - ta)


def seq_range_sent_in(log: Sequence[tuple[int, int]], a_ns: int, b_ns: int) -> tuple[int, int]:
    """[lo, hi) of sequence numbers sent in [a_ns, b_ns) (seq k = the k-th packet)."""
    return int(round(interp_sent(log, a_ns))), int(round(interp_sent(log, b_ns)))


def value_at(times: Sequence[int], values: Sequence[Any], t: int) -> Any:
    """Last value at or before t of a cumulative counter series; the first one
    if t precedes every sample (counters start at the pipeline push)."""
    if not times:
        raise ValueError("empty series")
    i = bisect.bisect_right(times, t)
    return values[max(0, i - 1)]


def _decimate(xs: list, cap: int = MAX_SERIES_POINTS) -> list:
    if len(xs) <= cap:
        return xs
    step = math.ceil(len(xs) / cap)
    return xs[::step]


def _r(x: Optional[float], nd: int = 3) -> Optional[float]:
    return None if x is None else round(float(x), nd)


# ---------------------------------------------------------------------------
# Loading the raw files
# ---------------------------------------------------------------------------


@dataclass
class FlowData:
    """Raw data of one flow, times relative to t0."""

    flow: Flow
    samples: list[tuple[float, float]]          #: (recv time s, IP bytes)
    udp_rows: Optional[list[RecvSample]] = None  #: UDP: received packets, arrival order
    send_log: Optional[list[tuple[int, int]]] = None  #: UDP: (t_ns, sent so far)
    sent_pkts: Optional[int] = None              #: UDP: sender's final count
    tcp: Optional[dict[str, Any]] = None         #: TCP: sender's TCP_INFO at the stop


def _last_json_line(path: Path) -> dict[str, Any]:
    try:
        lines = [ln for ln in path.read_text().splitlines() if ln.strip().startswith("{")]
    except OSError:
        return {}
    for ln in reversed(lines):
        try:
            j = json.loads(ln)
        except ValueError:
            continue
        if not j.get("live"):
            return j
    return {}


def load_flow_data(res: TrafficResult) -> dict[int, FlowData]:
    flows = {f.flow_id: f for f in res.scenario.flows}
    out = {fid: FlowData(f, []) for fid, f in flows.items()}
    t0 = res.t0_ns
    for tg in res.tcp_groups:
        send = json.loads(res.path(tg.send_json).read_text())
        mss: dict[int, int] = {}
        for fid_s, info in send.get("flows", {}).items():
            fid = int(fid_s)
            mss[fid] = int(info.get("snd_mss") or tg.mss_option - 12)
            if fid in out:
                out[fid].tcp = info
        with open(res.path(tg.recv_csv), newline="") as f:
            r = csv.reader(f)
            header = next(r)
            if tuple(header) != ("t_ns", "flow_id", "bytes"):
                raise ValueError(f"{tg.recv_csv}: unexpected header {header}")
            for t_ns, fid_s, b in r:
                fid = int(fid_s)
                if fid in out:
                    out[fid].samples.append(((int(t_ns) - t0) / 1e9,
                                             tcp_ip_bytes(int(b), mss.get(fid, tg.mss_option - 12),
                                                          tg.packet_bytes)))
    for sink in res.udp_sinks:
        for row in read_recv_csv(res.path(sink.recv_csv)):
            fd = out.get(row.flow_id)
            if fd is None:
                continue
            if fd.udp_rows is None:
                fd.udp_rows = []
            fd.udp_rows.append(row)
    for us in res.udp_senders:
        fd = out[us.flow_id]
        log = read_send_log(res.path(us.log_csv))
        fd.send_log = [(r.t_ns, r.sent) for r in log]
        j = _last_json_line(res.path(us.out_json))
        fd.sent_pkts = int(j["sent"]) if "sent" in j else (log[-1].sent if log else 0)
        if fd.udp_rows is None:
            fd.udp_rows = []
        fd.samples = [((r.recv_ts_ns - t0) / 1e9, r.bytes) for r in fd.udp_rows]
    return out


# ---------------------------------------------------------------------------
# Per-phase flow metrics
# ---------------------------------------------------------------------------


def _delay_block(pairs: list[tuple[float, float]]) -> dict[str, Optional[float]]:
    if not pairs:
        return {"count": 0, "mean_ms": None, "min_ms": None, "max_ms": None, "spread_ms": None,
                "std_ms": None, "jitter_ms": None}
    d = metrics.delay_stats(pairs)
    return {"count": d.count, "mean_ms": _r(d.mean * 1e3), "min_ms": _r(d.min * 1e3),
            "max_ms": _r(d.max * 1e3), "spread_ms": _r(d.spread * 1e3), "std_ms": _r(d.std * 1e3),
            "jitter_ms": _r(metrics.rfc3550_jitter(pairs) * 1e3, 4)}


CDF_POINTS = 101   # delay percentiles 0, 1, ..., 100 % (the CDF plot)


def delay_percentiles_ms(delays_s: Sequence[float]) -> Optional[list[float]]:
    """The 0th..100th percentiles (nearest rank) of one-way delays, in ms; None if empty."""
    if not delays_s:
        return None
    ordered = sorted(delays_s)
    n = len(ordered)
    return [_r(ordered[min(n - 1, max(0, math.ceil(q / 100 * n) - 1))] * 1e3, 3)
            for q in range(CDF_POINTS)]


def _udp_window(fd: FlowData, t0_ns: int, a_s: float, b_s: float) -> dict[str, Any]:
    """Loss, delay and jitter of the packets a UDP flow sent in [a_s, b_s)."""
    lo, hi = seq_range_sent_in(fd.send_log or [], t0_ns + int(round(a_s * 1e9)),
                               t0_ns + int(round(b_s * 1e9)))
    rows = [r for r in (fd.udp_rows or []) if lo <= r.seq < hi]
    seen: set[int] = set()
    uniq = []
    for r in rows:
        if r.seq not in seen:
            seen.add(r.seq)
            uniq.append(r)
    sent = max(0, hi - lo)
    recv = min(len(uniq), sent)
    pairs = [((r.send_ts_ns - t0_ns) / 1e9, (r.recv_ts_ns - t0_ns) / 1e9) for r in uniq]
    return {"sent": sent, "received": recv, "loss": _r(metrics.loss_rate(sent, recv), 6),
            **_delay_block(pairs)}


def _class_udp(blocks: Mapping[int, dict[str, Any]], fds: Mapping[int, FlowData],
               t0_ns: int, a_s: float, b_s: float, cls: str) -> Optional[dict[str, Any]]:
    ids = [fid for fid in blocks if fds[fid].flow.cls == cls]
    if not ids:
        return None
    sent = sum(blocks[f]["sent"] for f in ids)
    recv = sum(blocks[f]["received"] for f in ids)
    pairs = []
    for fid in ids:
        fd = fds[fid]
        lo, hi = seq_range_sent_in(fd.send_log or [], t0_ns + int(round(a_s * 1e9)),
                                   t0_ns + int(round(b_s * 1e9)))
        pairs += [((r.send_ts_ns - t0_ns) / 1e9, (r.recv_ts_ns - t0_ns) / 1e9)
                  for r in (fd.udp_rows or []) if lo <= r.seq < hi]
    d = _delay_block(pairs)
    jit = [blocks[f]["jitter_ms"] for f in ids if blocks[f]["jitter_ms"] is not None]
    d["jitter_ms"] = None  # pooled packets of different flows have no RFC 3550 jitter
    d["variance_ms2"] = None if d["std_ms"] is None else _r(d["std_ms"] ** 2, 4)  # dcbt §4
    d["delay_cdf_ms"] = delay_percentiles_ms([b - a for a, b in pairs])
    return {"flows": len(ids), "sent": sent, "received": recv,
            "loss": _r(metrics.loss_rate(sent, recv), 6), **d,
            "jitter_ms_mean": _r(sum(jit) / len(jit), 4) if jit else None,
            "jitter_ms_max": _r(max(jit), 4) if jit else None}


def phase_flow_metrics(
    fds: Mapping[int, FlowData], t0_ns: int, a_s: float, b_s: float,
    bottleneck_rate_kbps: Optional[float] = None,
) -> dict[str, Any]:
    """Throughput, fairness and UDP metrics of the flows active in [a_s, b_s)."""
    active = {fid: fd for fid, fd in fds.items() if fd.flow.active_in(a_s, b_s)}
    thr: dict[int, float] = {}
    span: dict[int, float] = {}
    for fid, fd in active.items():
        lo, hi = max(a_s, fd.flow.start_s), min(b_s, fd.flow.stop_s)
        span[fid] = hi - lo
        thr[fid] = metrics.flow_throughput_bps(fd.samples, lo, hi)
    class_of = {fid: fd.flow.cls for fid, fd in active.items()}
    avg = metrics.class_average_per_flow_throughput(thr, class_of) if active else {}
    totals = {c: sum(v for f, v in thr.items() if class_of[f] == c) for c in CLASSES}
    total = sum(totals.values())
    n_by = {c: sum(1 for f in class_of.values() if f == c) for c in CLASSES}
    udp = {fid: _udp_window(fd, t0_ns, max(a_s, fd.flow.start_s), min(b_s, fd.flow.stop_s))
           for fid, fd in active.items() if fd.flow.cls != "TCP"}
    return {
        "start_s": a_s, "end_s": b_s,
        "n_flows": len(active), "n_flows_by_class": n_by,
        "fair_share_kbps": _r(bottleneck_rate_kbps / len(active)) if bottleneck_rate_kbps and active else None,
        "per_flow_kbps": {str(f): _r(v / 1e3) for f, v in sorted(thr.items())},
        "active_s": {str(f): _r(v, 6) for f, v in sorted(span.items())},
        "class_avg_per_flow_kbps": {c: _r(avg[c] / 1e3) if c in avg else None for c in CLASSES},
        "class_total_kbps": {c: _r(totals[c] / 1e3) for c in CLASSES},
        "total_kbps": _r(total / 1e3),
        "class_share": {c: _r(totals[c] / total, 6) if total > 0 else None for c in CLASSES},
        "utilization": _r(total / 1e3 / bottleneck_rate_kbps, 6) if bottleneck_rate_kbps else None,
        "jain": _r(metrics.jain_index(list(thr.values())), 6) if thr else None,
        "udp_flows": {str(f): b for f, b in sorted(udp.items())},
        "udp_class": {c: _class_udp(udp, fds, t0_ns, a_s, b_s, c) for c in ("TAGGED", "UNTAGGED")},
    }


def bandwidth_variation_block(fd: FlowData) -> dict[str, Any]:
    """feng section 3 over the flow's active span: 1 s and 8 s windows (each only
    if MIN_BW_WINDOWS fit); cov = std / mean of the per-window throughput."""
    a, b = fd.flow.start_s, fd.flow.stop_s
    out: dict[str, Any] = {}
    for w in BW_WINDOWS_S:
        if b - a + 1e-9 < MIN_BW_WINDOWS * w:
            continue
        bv = metrics.bandwidth_variation(fd.samples, w, a, b)
        out[f"{w:g}s"] = {"windows": len(bv.windows_bps), "mean_kbps": _r(bv.mean_bps / 1e3),
                          "std_kbps": _r(bv.std_bps / 1e3), "cov": _r(bv.cov, 6)}
    return out


# ---------------------------------------------------------------------------
# Switch counters
# ---------------------------------------------------------------------------


def read_counters(path: Union[str, Path]) -> list[dict[str, Any]]:
    """Counter JSONL samples sorted by t_ns (blank lines ignored)."""
    out = []
    with open(path) as f:
        for i, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except ValueError as e:
                raise ValueError(f"{path}:{i}: not JSON: {e}") from None
    out.sort(key=lambda s: s["t_ns"])
    return out


def _flatten(reading: Mapping[str, Any]) -> dict[str, int]:
    """One class reading -> flat packet counts {arrivals, admits, departures, drop:<reason>}."""
    out = {k: int(reading.get(k, {}).get("packets", 0)) for k in COUNTER_KINDS}
    drops = reading.get("drops", {})
    for r in DROP_REASONS:
        out[f"drop:{r}"] = int(drops.get(r, {}).get("packets", 0))
    return out


def counter_series(samples: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    """(switch, port) -> {"t_ns": [...], class: [flat counts per sample], "active": [...]}.

    A class missing from a sample repeats its previous counts (0 before the first)."""
    series: dict[tuple[str, int], dict[str, Any]] = {}
    for s in samples:
        per_port: dict[int, dict[str, dict[str, int]]] = {}
        for rd in s.get("readings", []):
            per_port.setdefault(int(rd["port"]), {})[rd["class"]] = _flatten(rd)
        for port, by_cls in per_port.items():
            key = (s["switch"], port)
            ser = series.setdefault(key, {"t_ns": [], "active": [], **{c: [] for c in CLASSES}})
            ser["t_ns"].append(int(s["t_ns"]))
            for c in CLASSES:
                prev = ser[c][-1] if ser[c] else {k: 0 for k in _flatten({})}
                ser[c].append(by_cls.get(c, prev))
            af = s.get("active_flows", {}).get(str(port), {})
            ser["active"].append({c: int(af.get(c, 0)) for c in CLASSES})
    return series


# ---------------------------------------------------------------------------
# Did the switch keep up? (a precondition of every real-network result)
# ---------------------------------------------------------------------------

# Packets the kernel delivered to a switch's veths but its pipeline never counted were
# lost in BMv2's port I/O or ingress queue: BMv2, not the AQM, dropped them. A few
# stray packets may straddle the two reads (the kernel's and the controller's).
# Validity of a run (validity_warnings): a run with any of these is not quoted as a result.
MIN_PHASE_UTILISATION = 0.80      # bottleneck utilisation of every phase
CPU_SATURATED_FRACTION = 0.95     # machine CPU, mean over the traffic, of nproc * 100 %


def validity_warnings(summary: Mapping[str, Any], nproc: Optional[int] = None) -> list[str]:
    """The reasons a finished run's numbers may not measure the AQM (issue 11):
    a phase whose bottleneck utilisation is below MIN_PHASE_UTILISATION; the
    machine's CPU saturated (mean over the traffic >= CPU_SATURATED_FRACTION of
    nproc cores). Loss before the AQM is switch_keepup's check. Skips a check
    whose data is absent."""
    out: list[str] = []
    for name, ph in summary.get("phases", {}).items():
        u = ph.get("utilization")
        if u is not None and u < MIN_PHASE_UTILISATION:
            out.append(f"phase {name}: bottleneck utilisation {u:.3f} < {MIN_PHASE_UTILISATION}")
    machine = (summary.get("cpu") or {}).get("machine")
    if machine and nproc:
        if machine["mean_pct"] >= CPU_SATURATED_FRACTION * 100 * nproc:
            out.append(f"machine CPU saturated: {machine['mean_pct']:.0f} % mean of "
                       f"{100 * nproc} % over the traffic")
    return out


KEEPUP_TOLERANCE_PKTS = 20
KEEPUP_TOLERANCE_FRACTION = 0.001
KEEPUP_PEAK_WINDOW_NS = 1_000_000_000


def pipeline_packets(sample: Mapping[str, Any]) -> int:
    """Every packet one counter sample says the pipeline saw: arrivals at the AQM of
    every port and class, plus the discards before the AQM (by ingress port)."""
    arrivals = sum(int(r["arrivals"]["packets"]) for r in sample.get("readings", []))
    return arrivals + sum(int(n) for n in sample.get("ingress_discards", {}).values())


def _peak_rate(times_ns: Sequence[int], counts: Sequence[int], window_ns: int) -> Optional[float]:
    """Highest (count[j] - count[i]) / (t[j] - t[i]) over sample pairs >= window_ns apart,
    taking for each i the first j that far (per second)."""
    best, j = None, 0
    for i, t in enumerate(times_ns):
        j = max(j, i + 1)
        while j < len(times_ns) and times_ns[j] - t < window_ns:
            j += 1
        if j == len(times_ns):
            break
        rate = (counts[j] - counts[i]) * 1e9 / (times_ns[j] - t)
        best = rate if best is None else max(best, rate)
    return best


def switch_keepup(samples: Sequence[Mapping[str, Any]], rx_before: Mapping[str, int],
                  rx_after: Mapping[str, int], t_before_ns: int,
                  seconds: float) -> dict[str, dict[str, Any]]:
    """Per switch: packets its veths received (kernel, rx_after - rx_before) against the
    packets its pipeline counted over the same traffic (the last counter sample taken
    before t_before_ns, when no traffic ran, to the last sample, after it drained)."""
    out: dict[str, dict[str, Any]] = {}
    for switch in sorted(rx_after):
        mine = sorted((s for s in samples if s.get("switch") == switch), key=lambda s: s["t_ns"])
        before = [s for s in mine if s["t_ns"] <= t_before_ns]
        if not before or switch not in rx_before:
            out[switch] = {"checked": False, "why": "no counter sample before the traffic"}
            continue
        offered = rx_after[switch] - rx_before[switch]
        counted = pipeline_packets(mine[-1]) - pipeline_packets(before[-1])
        lost = max(0, offered - counted)
        during = [s for s in mine if s["t_ns"] >= before[-1]["t_ns"]]
        peak = _peak_rate([s["t_ns"] for s in during], [pipeline_packets(s) for s in during],
                          KEEPUP_PEAK_WINDOW_NS)
        out[switch] = {
            "checked": True,
            "ok": lost <= max(KEEPUP_TOLERANCE_PKTS, KEEPUP_TOLERANCE_FRACTION * offered),
            "kernel_rx_pkts": offered, "pipeline_pkts": counted, "lost_before_aqm_pkts": lost,
            "lost_before_aqm": _r(lost / offered if offered else 0.0, 6),
            "offered_pps": _r(offered / seconds if seconds > 0 else None, 1),
            "processed_pps": _r(counted / seconds if seconds > 0 else None, 1),
            "peak_processed_pps": _r(peak, 1),
        }
    return out


def fell_behind(keepup: Mapping[str, Mapping[str, Any]]) -> bool:
    """Some switch was checked and lost packets before its AQM."""
    return any(k.get("checked") and not k["ok"] for k in keepup.values())


def keepup_problem(keepup: Mapping[str, Mapping[str, Any]]) -> Optional[str]:
    """None when every switch kept up; else what fell behind, in numbers."""
    lines = []
    for switch, k in sorted(keepup.items()):
        if not k.get("checked"):
            lines.append(f"{switch}: not checked ({k.get('why')})")
        elif not k["ok"]:
            peak = k["peak_processed_pps"]
            lines.append(
                f"{switch} fell behind: its veths received {k['kernel_rx_pkts']} packets, its "
                f"pipeline counted {k['pipeline_pkts']} ({k['lost_before_aqm_pkts']} = "
                f"{100 * k['lost_before_aqm']:.1f} % lost before the AQM). This machine's BMv2 "
                f"forwarded {k['processed_pps']:.0f} pps on average"
                + (f" ({peak:.0f} pps in its busiest second)" if peak is not None else "")
                + f"; this scenario offered it {k['offered_pps']:.0f} pps on average")
    return "; ".join(lines) if lines else None


def _delta(ser: Mapping[str, Any], cls: str, a_ns: int, b_ns: int) -> dict[str, Any]:
    va = value_at(ser["t_ns"], ser[cls], a_ns)
    vb = value_at(ser["t_ns"], ser[cls], b_ns)
    d = {k: vb[k] - va[k] for k in va}
    drops = {r: d[f"drop:{r}"] for r in DROP_REASONS}
    tot = sum(drops.values())
    return {"arrivals": d["arrivals"], "admits": d["admits"], "departures": d["departures"],
            "drops": drops, "drops_total": tot,
            "loss": _r(tot / d["arrivals"], 6) if d["arrivals"] > 0 else None}


def switch_metrics(
    samples: Sequence[Mapping[str, Any]], t0_ns: int, scenario: Scenario,
    bottleneck: Optional[tuple[str, int]] = None,
) -> dict[str, Any]:
    """Counter deltas per port/class/phase, the bottleneck's occupancy over time."""
    series = counter_series(samples)
    if not series:
        return {"bottleneck": None, "ports": {}, "note": "no counter samples"}
    run_a, run_b = t0_ns, t0_ns + int(round(scenario.duration_s * 1e9))
    ports: dict[str, Any] = {}
    score: dict[tuple[str, int], tuple[int, int]] = {}
    for key, ser in series.items():
        run = {c: _delta(ser, c, run_a, run_b) for c in CLASSES}
        score[key] = (sum(run[c]["drops_total"] for c in CLASSES), sum(run[c]["arrivals"] for c in CLASSES))
        phases = {p.name: {c: _delta(ser, c, t0_ns + int(round(p.start_s * 1e9)),
                                     t0_ns + int(round(p.end_s * 1e9))) for c in CLASSES}
                  for p in scenario.phases}
        ports[f"{key[0]}:{key[1]}"] = {
            "switch": key[0], "port": key[1], "samples": len(ser["t_ns"]),
            "coverage_s": [_r((ser["t_ns"][0] - t0_ns) / 1e9), _r((ser["t_ns"][-1] - t0_ns) / 1e9)],
            "run": run, "phases": phases,
        }
    inferred = bottleneck is None
    if bottleneck is None:
        bottleneck = max(score, key=lambda k: score[k])
    if bottleneck not in series:
        raise ValueError(f"bottleneck {bottleneck[0]}:{bottleneck[1]} has no counter samples "
                         f"(ports: {sorted(ports)})")
    ser = series[bottleneck]
    t_s = [(t - t0_ns) / 1e9 for t in ser["t_ns"]]
    occ = {c: [v["admits"] - v["departures"] for v in ser[c]] for c in CLASSES}
    occ_total = [sum(occ[c][i] for c in CLASSES) for i in range(len(t_s))]
    mean_occ = {}
    for p in scenario.phases:
        mean_occ[p.name] = {c: _r(metrics.time_weighted_mean(t_s, occ[c], p.start_s, p.end_s,
                                                             initial=occ[c][0]), 4)
                            for c in CLASSES}
        mean_occ[p.name]["total"] = _r(metrics.time_weighted_mean(t_s, occ_total, p.start_s, p.end_s,
                                                                  initial=occ_total[0]), 4)
    keep = [i for i, t in enumerate(t_s) if -1.0 <= t <= scenario.duration_s + 1.0]
    keep = _decimate(keep)
    return {
        "bottleneck": {"switch": bottleneck[0], "port": bottleneck[1], "inferred": inferred},
        "ports": ports,
        "occupancy": {
            "t_s": [_r(t_s[i], 4) for i in keep],
            **{c: [occ[c][i] for i in keep] for c in CLASSES},
            "total": [occ_total[i] for i in keep],
            "mean_pkts_by_phase": mean_occ,
        },
        "active_flows": {"t_s": [_r(t_s[i], 4) for i in keep],
                         **{c: [ser["active"][i][c] for i in keep] for c in CLASSES}},
    }


# ---------------------------------------------------------------------------
# The whole run
# ---------------------------------------------------------------------------


def analyze(
    run: Union[TrafficResult, str, Path],
    *,
    counters_jsonl: Union[str, Path, None] = None,
    bottleneck: Optional[tuple[str, int]] = None,
    bottleneck_rate_kbps: Optional[float] = None,
    delay_series_flow: Optional[int] = None,
) -> dict[str, Any]:
    """Compute summary.json's dict for one run (a TrafficResult or its out_dir).

    ``bottleneck``: (switch, port) whose queue is reported; inferred from the
    counters (most drops, then most arrivals) if None. ``bottleneck_rate_kbps``
    defaults to the one given to run_scenario. ``delay_series_flow``: the MM flow
    whose per-packet delay is kept for mm_delay.png (default: lowest TAGGED id).
    """
    res = run if isinstance(run, TrafficResult) else TrafficResult.load(run)
    sc = res.scenario
    rate = bottleneck_rate_kbps if bottleneck_rate_kbps is not None else res.bottleneck_rate_kbps
    fds = load_flow_data(res)
    t0 = res.t0_ns
    phases = {p.name: phase_flow_metrics(fds, t0, p.start_s, p.end_s, rate) for p in sc.phases}
    run_block = phase_flow_metrics(fds, t0, 0.0, sc.duration_s, rate)
    blast = sc.blast()

    flows: dict[str, Any] = {}
    for fid, fd in sorted(fds.items()):
        f = fd.flow
        st = res.starts.get(fid, {})
        entry: dict[str, Any] = {
            "kind": f.kind, "class": f.cls, "group": f.group, "src": f.src, "dst": f.dst,
            "dscp": f.dscp, "start_s": f.start_s, "stop_s": f.stop_s,
            "start_late_ms": st.get("late_ms"),
            "received_bytes_ip": _r(sum(b for _, b in fd.samples), 0),
            "bandwidth_variation": bandwidth_variation_block(fd),
        }
        if fd.tcp is not None:
            entry["tcp"] = {k: fd.tcp.get(k) for k in ("sport", "snd_mss", "snd_cwnd", "rtt_us",
                                                       "total_retrans", "sent_bytes")}
        if f.kind == "cbr":
            entry["rate_kbps"] = next((u.rate_kbps for u in res.udp_senders if u.flow_id == fid), None)
        flows[str(fid)] = entry

    bw_class: dict[str, Any] = {}
    for c in CLASSES:
        for w in BW_WINDOWS_S:
            k = f"{w:g}s"
            covs = [e["bandwidth_variation"][k]["cov"] for e in flows.values()
                    if e["class"] == c and k in e["bandwidth_variation"]]
            if covs:
                bw_class.setdefault(c, {})[k] = {"flows": len(covs), "cov_mean": _r(sum(covs) / len(covs), 6)}

    tagged = sorted(fid for fid, fd in fds.items() if fd.flow.cls == "TAGGED")
    sid = delay_series_flow if delay_series_flow is not None else (tagged[0] if tagged else None)
    series = None
    if sid is not None and fds.get(sid) and fds[sid].udp_rows:
        rows = _decimate(fds[sid].udp_rows)
        series = {"flow_id": sid,
                  "t_s": [_r((r.send_ts_ns - t0) / 1e9, 5) for r in rows],
                  "delay_ms": [_r((r.recv_ts_ns - r.send_ts_ns) / 1e6, 4) for r in rows]}

    summary: dict[str, Any] = {
        "schema": SCHEMA,
        "scenario": {"name": sc.name, "duration_s": sc.duration_s, "time_scale": sc.time_scale,
                     "phases": [{"name": p.name, "start_s": p.start_s, "end_s": p.end_s} for p in sc.phases],
                     "blast_phase": blast.name if blast else None},
        "t0_ns": t0,
        "bottleneck_rate_kbps": rate,
        "flows": flows,
        "phases": phases,
        "run": run_block,
        "bandwidth_variation_by_class": bw_class,
        "mm_delay_series": series,
        "start_late_ms_max": _r(max((s["late_ms"] for s in res.starts.values()), default=0.0)),
        "traffic_cpu_s": res.cpu_s,
        "switch": None,
        "warnings": list(res.warnings),
    }
    if counters_jsonl is not None:
        summary["switch"] = switch_metrics(read_counters(counters_jsonl), t0, sc, bottleneck)
    return summary


def flows_csv_rows(summary: Mapping[str, Any]) -> list[list[Any]]:
    """One row per (phase, active flow), then one per flow for the whole run."""
    rows: list[list[Any]] = []
    blocks = [(name, summary["phases"][name]) for name in [p["name"] for p in summary["scenario"]["phases"]]]
    blocks.append((RUN, summary["run"]))
    for name, ph in blocks:
        for fid, kbps in ph["per_flow_kbps"].items():
            f = summary["flows"][fid]
            u = ph["udp_flows"].get(fid)
            bv = f["bandwidth_variation"] if name == RUN else {}
            rows.append([
                name, ph["start_s"], ph["end_s"], int(fid), f["kind"], f["class"], f["src"], f["dst"],
                ph["active_s"][fid], kbps,
                *(("", "", "", "", "", "", "", "", "") if u is None else
                  (u["sent"], u["received"], u["loss"], u["mean_ms"], u["min_ms"], u["max_ms"],
                   u["spread_ms"], u["std_ms"], u["jitter_ms"])),
                bv.get("1s", {}).get("cov", ""), bv.get("8s", {}).get("cov", ""),
            ])
    return [[("" if v is None else v) for v in r] for r in rows]


def write_outputs(summary: Mapping[str, Any], out_dir: Union[str, Path]) -> tuple[Path, Path]:
    """Write summary.json and flows.csv into out_dir; return their paths."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    sj, fc = d / SUMMARY_FILE, d / FLOWS_CSV
    sj.write_text(json.dumps(summary, indent=1))
    with open(fc, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FLOWS_CSV_HEADER)
        w.writerows(flows_csv_rows(summary))
    return sj, fc


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mmaqm_exp.analysis",
                                description="summary.json + flows.csv from a run directory")
    p.add_argument("run_dir")
    p.add_argument("--counters", default=None, help="counter JSONL of the controller")
    p.add_argument("--bottleneck", default=None, help="SWITCH:PORT (default: inferred)")
    p.add_argument("--bottleneck-kbps", type=float, default=None)
    a = p.parse_args(argv)
    bn = None
    if a.bottleneck:
        sw, port = a.bottleneck.rsplit(":", 1)
        bn = (sw, int(port))
    s = analyze(a.run_dir, counters_jsonl=a.counters, bottleneck=bn, bottleneck_rate_kbps=a.bottleneck_kbps)
    for path in write_outputs(s, a.run_dir):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
