"""Per-phase metrics of one run: summary.json + flows.csv.

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
  1 s windows, and of 8 s windows when at least two fit; and its standard
  deviation against the smoothing window, 0.1 to 8 s (feng Fig. 3);
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
from typing import Any, Callable, Collection, Mapping, Optional, Sequence, Union

from mmaqm import p4constants as C

from . import metrics
from .samples import RecvSample, read_jsonl, read_recv_csv, read_send_log
from .scenario import CLASSES, Flow, Scenario
from .traffic import TrafficResult

SCHEMA = "mmaqm-summary/1"
#: drop reasons every counter sample carries; FRED's (fred.p4) are reported when the
#: samples have them (runs recorded before FRED existed do not)
BASE_DROP_REASONS = ("QUEUE_LIMIT", "RED_EARLY", "RED_FORCED", "CLASS_THRESHOLD")
DROP_REASONS = tuple(sorted(C.DROP_REASONS, key=C.DROP_REASONS.__getitem__))   # defines.p4
COUNTER_KINDS = ("arrivals", "admits", "departures")
BW_WINDOWS_S = (1.0, 8.0)       #: feng section 3
MIN_BW_WINDOWS = 2              #: a window size is reported only if this many fit
#: feng section 3.2, Fig. 3: smoothing windows (s) of the variation-against-delay curve
SMOOTHING_WINDOWS_S = (0.1, 0.2, 0.5, 1.0, 2.0, 4.0, 8.0)
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


def bandwidth_variation_curve(fd: FlowData) -> dict[str, list[float]]:
    """feng section 3.2, Fig. 3: the flow's bandwidth variation (population std of
    the per-window throughput, kbit/s) against the smoothing window, over its
    active span; a window is included only if MIN_BW_WINDOWS fit."""
    a, b = fd.flow.start_s, fd.flow.stop_s
    ws = [w for w in SMOOTHING_WINDOWS_S if b - a + 1e-9 >= MIN_BW_WINDOWS * w]
    return {"windows_s": ws,
            "std_kbps": [_r(metrics.bandwidth_variation(fd.samples, w, a, b).std_bps / 1e3) for w in ws]}


# ---------------------------------------------------------------------------
# Switch counters
# ---------------------------------------------------------------------------


def read_counters(path: Union[str, Path]) -> list[dict[str, Any]]:
    """Counter JSONL samples sorted by t_ns (blank lines ignored)."""
    return read_jsonl(path)


def _flatten(reading: Mapping[str, Any]) -> dict[str, int]:
    """One class reading -> flat packet counts {arrivals, admits, departures, drop:<reason>}."""
    out = {k: int(reading.get(k, {}).get("packets", 0)) for k in COUNTER_KINDS}
    drops = reading.get("drops", {})
    for r in DROP_REASONS:
        if r in BASE_DROP_REASONS or r in drops:
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
    """The reasons a finished run's numbers may not measure the AQM:
    a phase with TCP flows whose bottleneck utilisation is below
    MIN_PHASE_UTILISATION (TCP should fill the link); the
    machine's CPU saturated (mean over the traffic >= CPU_SATURATED_FRACTION of
    nproc cores). Loss before the AQM is switch_keepup's check. Skips a check
    whose data is absent."""
    out: list[str] = []
    for name, ph in summary.get("phases", {}).items():
        u = ph.get("utilization")
        # A phase without TCP (cbt's ProShare-only start and tail: 1.26 of 10 Mbit/s)
        # is not meant to fill the link; its UDP is checked by udp_arrivals and loss.
        if not (ph.get("n_flows_by_class") or {"TCP": 1}).get("TCP"):
            continue
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


# ---------------------------------------------------------------------------
# Did every UDP packet reach the first switch? Did a delay element lose packets?
# ---------------------------------------------------------------------------

# Sent UDP packets against the first switch's AQM arrivals, per (switch, egress port,
# class). Both counts are exact: each sender counts the datagrams the kernel accepted
# (sent - send_errors; plus the hosts' ICMP messages, from their kernel counters: the
# untagged class holds every non-TCP packet), and the counters are read from a sample
# before the traffic (no UDP yet) to one after the network drained (experiment.py waits
# for it), so no sample edge cuts a packet off. Nothing on the way may lose one: a
# difference means packets lost between a host's socket and the AQM (the host's veth
# backlog, BMv2's port I/O) or classified into another class. Hence 0.
UDP_ARRIVAL_TOLERANCE_PKTS = 0


@dataclass(frozen=True)
class UdpStream:
    """Non-TCP packets that entered the network at one host, as their sender counted
    them: one flow's data, one receiver's feedback, or one host's ICMP messages (the
    kernel's count). ``first_hops`` are the (switch, egress port) pairs where they can
    first meet an AQM (one for a data flow; a receiver answering senders behind
    different ports has several, and its count cannot be split among them);
    ``later_hops`` every pair further along."""

    label: str
    cls: str
    packets: Optional[int]                  #: accepted by the kernel; None = unknown
    send_errors: int
    first_hops: frozenset
    later_hops: frozenset


def udp_streams(res: TrafficResult, hops: Callable[[str, str], Sequence[tuple[str, int]]],
                tagged_dscp: Sequence[int], feedback_dscp: int) -> list[UdpStream]:
    """Every UDP stream of a run from the programs' final JSON lines: each sender's
    sent - send_errors, each receiver's feedback_sent. hops(src, dst) -> the
    (switch, egress port) pairs a packet crosses (Topology.switch_hops)."""
    flows = {f.flow_id: f for f in res.scenario.flows}
    out = []
    for us in res.udp_senders:
        f = flows[us.flow_id]
        j = _last_json_line(res.path(us.out_json))
        path = tuple(hops(f.src, f.dst))
        sent, errors = j.get("sent"), int(j.get("send_errors", 0))
        out.append(UdpStream(f"flow {us.flow_id}", f.cls,
                             None if sent is None else int(sent) - errors, errors,
                             frozenset(path[:1]), frozenset(path[1:])))
    fb_cls = "TAGGED" if feedback_dscp in tagged_dscp else "UNTAGGED"
    for sink in res.udp_sinks:
        senders = sorted({flows[fid].src for fid in sink.flow_ids if flows[fid].kind == "mmapp"})
        if not senders:
            continue
        paths = [tuple(hops(sink.host, src)) for src in senders]
        j = _last_json_line(res.path(sink.recv_out))
        fb = j.get("feedback_sent")
        out.append(UdpStream(f"feedback of {sink.host}", fb_cls,
                             None if fb is None else int(fb), 0,
                             frozenset(p[0] for p in paths if p),
                             frozenset(h for p in paths for h in p[1:])))
    return out


def icmp_streams(icmp_out: Mapping[str, int], scenario: Scenario, hosts: Sequence[str],
                 hops: Callable[[str, str], Sequence[tuple[str, int]]]) -> list[UdpStream]:
    """ICMP messages each host sent (Icmp.OutMsgs deltas), an UNTAGGED stream each: the
    classifier puts every IPv4 packet that is neither TCP nor tagged UDP in the untagged
    class. An ICMP error goes back to the source of the packet that caused it, so its
    first hops are those toward the host's UDP peers in the scenario (every other host if
    it has none); with more than one, its count cannot be placed (udp_expected_arrivals)."""
    out = []
    for host, n in sorted(icmp_out.items()):
        if not n:
            continue
        peers = ({f.dst for f in scenario.flows if f.cls != "TCP" and f.src == host}
                 | {f.src for f in scenario.flows if f.cls != "TCP" and f.dst == host}
                 ) or {h for h in hosts if h != host}
        paths = [tuple(hops(host, p)) for p in sorted(peers)]
        out.append(UdpStream(f"ICMP of {host}", "UNTAGGED", int(n), 0,
                             frozenset(p[0] for p in paths if p),
                             frozenset(h for p in paths for h in p[1:])))
    return out


def udp_expected_arrivals(streams: Sequence[UdpStream],
                          bfd_ports: Collection[tuple[str, int]] = ()
                          ) -> dict[tuple[str, int, str], dict[str, Any]]:
    """{(switch, port, class): {"sent_pkts", "send_errors_pkts", "streams"}} for every first hop
    whose arrivals of that class can only be these streams' packets: no stream of the
    class reaches it from further away, and every stream there has an exact count
    for it (one first hop, a known count). bfd_ports: the (switch, port)s that C-UPTA's
    QoS Probes and Reports cross (ICMP from the routers, counted UNTAGGED, in numbers no
    host counts): their UNTAGGED arrivals are not these streams' alone either."""
    later = {(sw, port, s.cls) for s in streams for sw, port in s.later_hops}
    later |= {(sw, port, "UNTAGGED") for sw, port in bfd_ports}
    out: dict[tuple[str, int, str], dict[str, Any]] = {}
    unknown: set[tuple[str, int, str]] = set()
    for s in streams:
        for sw, port in s.first_hops:
            key = (sw, port, s.cls)
            if s.packets is None or len(s.first_hops) > 1:
                unknown.add(key)
                continue
            e = out.setdefault(key, {"sent_pkts": 0, "send_errors_pkts": 0, "streams": []})
            e["sent_pkts"] += s.packets
            e["send_errors_pkts"] += s.send_errors
            e["streams"].append(s.label)
    return {k: v for k, v in sorted(out.items()) if k not in later and k not in unknown}


def _arrivals(sample: Mapping[str, Any], port: int, cls: str) -> int:
    """The hosts' arrivals of a class at a port: the class counter's, less (UNTAGGED) the
    QoS Probes and Reports the routers sent through it (the sample's bfd_arrivals, a
    program with C-UPTA's BFD; upta §5.3), which no host sent."""
    n = sum(int(r["arrivals"]["packets"]) for r in sample.get("readings", [])
            if int(r["port"]) == port and r["class"] == cls)
    return n - _bfd_arrivals(sample, port) if cls == "UNTAGGED" else n


def _bfd_arrivals(sample: Mapping[str, Any], port: int) -> int:
    return int(sample.get("bfd_arrivals", {}).get(str(port), 0))


def samples_count_bfd(samples: Sequence[Mapping[str, Any]]) -> bool:
    """Every sample carries the switch's BFD arrivals (the program counts them)."""
    return bool(samples) and all("bfd_arrivals" in s for s in samples)


def _discards(sample: Mapping[str, Any]) -> int:
    return sum(int(n) for n in sample.get("ingress_discards", {}).values())


def udp_arrival_check(expected: Mapping[tuple[str, int, str], Mapping[str, Any]],
                      samples: Sequence[Mapping[str, Any]], baseline_t_ns: int,
                      final_t_ns: int) -> dict[str, Any]:
    """Per expected (switch, port, class): the UDP packets sent against the AQM
    arrivals that switch counted between its last sample at or before baseline_t_ns
    (before the first packet) and its first sample at or after final_t_ns (the
    network drained). UNTAGGED arrivals leave out the QoS Probes and Reports the switch
    counted (bfd_pkts, _arrivals). difference_pkts = sent - arrivals; discards_before_aqm_pkts are that
    switch's ingress discards over the same samples (every class and port: the
    counter has no class)."""
    rows = []
    for (sw, port, cls), e in expected.items():
        mine = [s for s in samples if s.get("switch") == sw]
        before = [s for s in mine if s["t_ns"] <= baseline_t_ns]
        after = [s for s in mine if s["t_ns"] >= final_t_ns]
        row: dict[str, Any] = {"switch": sw, "port": port, "class": cls, **e}
        if not before or not after:
            row.update(checked=False, why="no counter sample before the traffic" if not before
                       else "no counter sample after the network drained")
        else:
            b, a = before[-1], after[0]
            arrivals = _arrivals(a, port, cls) - _arrivals(b, port, cls)
            if cls == "UNTAGGED":     # the routers' probes and reports, left out of arrivals
                row["bfd_pkts"] = _bfd_arrivals(a, port) - _bfd_arrivals(b, port)
            row.update(checked=True, arrivals_pkts=arrivals, difference_pkts=e["sent_pkts"] - arrivals,
                       discards_before_aqm_pkts=_discards(a) - _discards(b),
                       samples_t_ns=[b["t_ns"], a["t_ns"]])
        rows.append(row)
    return {"tolerance_pkts": UDP_ARRIVAL_TOLERANCE_PKTS, "baseline_t_ns": baseline_t_ns,
            "final_t_ns": final_t_ns, "checks": rows}


def udp_arrival_warnings(check: Mapping[str, Any],
                         sndbuf_errors: Optional[Mapping[str, int]] = None) -> list[str]:
    """Warnings of udp_arrival_check: a difference beyond the tolerance, a check that
    could not be made, send errors, and datagrams a host's kernel accepted from the
    sender but dropped (Udp SndbufErrors deltas per host, if given)."""
    out = []
    for r in check.get("checks", []):
        where = f"{r['switch']} port {r['port']} {r['class']}"
        if not r["checked"]:
            out.append(f"UDP arrivals at {where} not checked: {r['why']}")
            continue
        if r["send_errors_pkts"]:
            out.append(f"UDP senders to {where} failed to send {r['send_errors_pkts']} packets "
                       f"(ENOBUFS etc.)")
        if abs(r["difference_pkts"]) > check["tolerance_pkts"]:
            out.append(f"UDP packets sent toward {where} ({', '.join(r['streams'])}): "
                       f"{r['sent_pkts']}, counted arriving there {r['arrivals_pkts']} "
                       f"(difference {r['difference_pkts']:+d}; {r['discards_before_aqm_pkts']} packets "
                       f"of any class discarded before the AQM at {r['switch']})")
    for host, n in sorted((sndbuf_errors or {}).items()):
        if n:
            out.append(f"host {host}: the kernel dropped {n} UDP datagrams after the sender "
                       f"handed them over (Udp SndbufErrors)")
    return out


def counter_deltas(before: Mapping[str, Mapping[str, int]],
                   after: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    """{name: {counter: after - before}} for the names and counters present in both."""
    return {name: {k: int(v) - int(before[name][k]) for k, v in after[name].items()
                   if k in before[name]}
            for name in sorted(after) if name in before}


# nfnetlink_queue drops: queue_dropped = the queue was full (queue_total at its
# maximum), user_dropped = netlink could not deliver to the element's socket.
DELAY_DROP_COUNTERS = ("queue_dropped", "user_dropped")


def delay_drop_warnings(deltas: Mapping[str, Mapping[str, int]]) -> list[str]:
    """One warning per delay element whose kernel queue dropped packets."""
    out = []
    for name, d in sorted(deltas.items()):
        lost = {k: d.get(k, 0) for k in DELAY_DROP_COUNTERS if d.get(k, 0)}
        if lost:
            out.append(f"delay element {name} lost packets in the kernel: "
                       + ", ".join(f"{k} {n}" for k, n in lost.items())
                       + (f" of {d['id_sequence']} queued" if "id_sequence" in d else ""))
    return out


def _delta(ser: Mapping[str, Any], cls: str, a_ns: int, b_ns: int) -> dict[str, Any]:
    va = value_at(ser["t_ns"], ser[cls], a_ns)
    vb = value_at(ser["t_ns"], ser[cls], b_ns)
    d = {k: vb[k] - va[k] for k in va}
    drops = {r: d[f"drop:{r}"] for r in DROP_REASONS if f"drop:{r}" in d}
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
        **fred_slot_summary(samples, bottleneck),
    }


def fred_slot_summary(samples: Sequence[Mapping[str, Any]], port: tuple[str, int]) -> dict[str, Any]:
    """FRED's flow-slot collisions at a port, from the controller's samples
    ({"fred_slots": {port: {flows, sharing}}}: active flows, and how many of them share
    their slot with another): {"fred_slots": {peak_flows, peak_sharing, sharing_fraction}},
    sharing_fraction = sum of sharing / sum of flows over the samples; {} without FRED."""
    rows = [s["fred_slots"][str(port[1])] for s in samples
            if s.get("switch") == port[0] and str(port[1]) in s.get("fred_slots", {})]
    if not rows:
        return {}
    flows = sum(int(r["flows"]) for r in rows)
    return {"fred_slots": {
        "samples": len(rows),
        "peak_flows": max(int(r["flows"]) for r in rows),
        "peak_sharing": max(int(r["sharing"]) for r in rows),
        "sharing_fraction": _r(sum(int(r["sharing"]) for r in rows) / flows, 4) if flows else None}}


# ---------------------------------------------------------------------------
# The CBT paper's figures (cbt section 4): TCP throughput over time (Figs. 5-6),
# ProShare latency (Fig. 7), the effective RED queue limit (section 4.2)
# ---------------------------------------------------------------------------

SERIES_BIN_S = 1.0            #: bin of the throughput and latency time series
LATENCY_PERCENTILES = (50, 95, 99)


def aggregate_throughput_kbps(sample_lists: Sequence[Sequence[tuple[float, float]]],
                              t0_s: float, t1_s: float, bin_s: float = SERIES_BIN_S) -> list[float]:
    """cbt Figs. 5-6: the aggregate throughput of some flows in consecutive bins of
    bin_s over [t0_s, t1_s) (a trailing partial bin dropped), kbit/s. Samples are
    (time_s, bytes) per flow; an empty bin is 0."""
    if t1_s - t0_s + 1e-9 < bin_s:
        return []
    merged = [smp for samples in sample_lists for smp in samples]
    return [_r(bps / 1e3, 1) for bps in metrics.window_throughputs_bps(merged, bin_s, t0_s, t1_s)]


def binned_mean(points: Sequence[tuple[float, float]], t0_s: float, t1_s: float,
                bin_s: float = SERIES_BIN_S) -> list[Optional[float]]:
    """Mean value of the (time_s, value) points in each bin_s bin of [t0_s, t1_s); None
    for a bin without points (full bins only, as aggregate_throughput_kbps)."""
    k = int(math.floor((t1_s - t0_s) / bin_s + 1e-9))
    sums, counts = [0.0] * k, [0] * k
    for t, v in points:
        i = int((t - t0_s) // bin_s) if t >= t0_s else -1
        if 0 <= i < k:
            sums[i] += v
            counts[i] += 1
    return [sums[i] / counts[i] if counts[i] else None for i in range(k)]


def latency_block(delays_ms: Sequence[float]) -> dict[str, Optional[float]]:
    """One flow's one-way delay: count, mean, min, percentiles (nearest rank), max,
    population std (its delay variation), and the mean queueing delay = mean - min
    (the minimum is the flow's propagation plus transmission time: cbt section 4.3
    compares latencies on a LAN, where that is ~0)."""
    if not delays_ms:
        return {"count": 0, "mean_ms": None, "min_ms": None, "max_ms": None, "std_ms": None,
                "queueing_mean_ms": None, **{f"p{q}_ms": None for q in LATENCY_PERCENTILES}}
    xs = sorted(delays_ms)
    n = len(xs)
    mean = sum(xs) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / n)
    pct = {f"p{q}_ms": _r(xs[min(n - 1, max(0, math.ceil(q / 100 * n) - 1))], 3)
           for q in LATENCY_PERCENTILES}
    return {"count": n, "mean_ms": _r(mean, 3), "min_ms": _r(xs[0], 3), **pct,
            "max_ms": _r(xs[-1], 3), "std_ms": _r(std, 3), "queueing_mean_ms": _r(mean - xs[0], 3)}


def tagged_latency(fds: Mapping[int, FlowData], t0_ns: int, duration_s: float,
                   bin_s: float = SERIES_BIN_S) -> dict[str, Any]:
    """cbt Fig. 7 per tagged (ProShare) flow over the run: latency_block of its received
    packets (each sequence number once), RFC 3550 jitter, and the mean latency per bin
    of send time (ms; None where nothing arrived)."""
    out: dict[str, Any] = {}
    for fid, fd in sorted(fds.items()):
        if fd.flow.cls != "TAGGED":
            continue
        seen: set[int] = set()
        pairs = []
        for r in fd.udp_rows or []:
            if r.seq not in seen:
                seen.add(r.seq)
                pairs.append(((r.send_ts_ns - t0_ns) / 1e9, (r.recv_ts_ns - t0_ns) / 1e9))
        block = latency_block([(b - a) * 1e3 for a, b in pairs])
        block["jitter_ms"] = _r(metrics.rfc3550_jitter(pairs) * 1e3, 4) if pairs else None
        block["series"] = {"bin_s": bin_s, "mean_ms": [
            None if v is None else _r(v, 2)
            for v in binned_mean([(a, (b - a) * 1e3) for a, b in pairs], 0.0, duration_s, bin_s)]}
        out[str(fid)] = block
    return out


#: RED-based algorithms whose RED average counts only TCP (cbt section 4.2)
RED_TCP_ONLY_ALGORITHMS = ("CBT_RED_TCP_ONLY",)
RED_ALL_ALGORITHMS = ("RED", "CBT_RED_ALL")


def red_queue_limit(policy: Mapping[str, Any]) -> Optional[dict[str, Any]]:
    """cbt section 4.2: with RED for TCP only, the queue slots the tagged and untagged
    thresholds allocate are not TCP's, so "the effective RED queue limit" is the queue
    limit minus both class thresholds (60 - 10 - 2 = 48), and RED's thresholds keep
    their fractions of it (12 and 24 of 48 = 15 and 30 of 60). RED and CBT with RED
    for all: RED's average counts every packet, its limit is the whole queue. None for
    other algorithms (D-CBT's class limits move with the flow counts)."""
    algo = policy.get("algorithm")
    if algo not in RED_TCP_ONLY_ALGORITHMS + RED_ALL_ALGORITHMS:
        return None
    limit = float(policy["queue_limit_pkts"])
    reserved = 0.0
    if algo in RED_TCP_ONLY_ALGORITHMS:
        reserved = float(policy["tagged_th_pkts"]) + float(policy["untagged_th_pkts"])
    eff = limit - reserved
    return {"queue_limit_pkts": limit, "class_reserved_pkts": reserved,
            "effective_red_limit_pkts": eff,
            "min_th_pkts": float(policy["min_th_pkts"]), "max_th_pkts": float(policy["max_th_pkts"]),
            "min_th_fraction": _r(float(policy["min_th_pkts"]) / eff, 4) if eff > 0 else None,
            "max_th_fraction": _r(float(policy["max_th_pkts"]) / eff, 4) if eff > 0 else None}


def max_occupancy(occupancy: Optional[Mapping[str, Any]], cls: str,
                  a_s: float, b_s: float) -> Optional[int]:
    """The largest sampled queue occupancy of a class (packets, admits - departures at
    the counter samples, every 100 ms) with a_s <= t < b_s; None without samples."""
    if not occupancy or not occupancy.get("t_s"):
        return None
    vals = [v for t, v in zip(occupancy["t_s"], occupancy[cls]) if a_s <= t < b_s]
    return max(vals) if vals else None


def red_queue_limit_block(policy: Mapping[str, Any], summary: Mapping[str, Any]) -> Optional[dict[str, Any]]:
    """red_queue_limit beside the measured TCP queue at the bottleneck: its sampled
    maximum over the run and over the blast phase, and its time-weighted mean in the blast."""
    lim = red_queue_limit(policy)
    if lim is None:
        return None
    occ = (summary.get("switch") or {}).get("occupancy")
    sc = summary["scenario"]
    blast = next((p for p in sc["phases"] if p["name"] == sc.get("blast_phase")), None)
    lim["measured_tcp_max_pkts"] = max_occupancy(occ, "TCP", 0.0, sc["duration_s"])
    lim["measured_tcp_max_blast_pkts"] = (max_occupancy(occ, "TCP", blast["start_s"], blast["end_s"])
                                          if blast else None)
    lim["measured_tcp_mean_blast_pkts"] = (
        (occ or {}).get("mean_pkts_by_phase", {}).get(blast["name"], {}).get("TCP") if blast else None)
    return lim


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
            "kind": f.kind, "class": f.cls, "family": f.family, "group": f.group,
            "src": f.src, "dst": f.dst,
            "dscp": f.dscp, "start_s": f.start_s, "stop_s": f.stop_s,
            "start_late_ms": st.get("late_ms"),
            "received_bytes_ip": _r(sum(b for _, b in fd.samples), 0),
            "bandwidth_variation": bandwidth_variation_block(fd),
            "bandwidth_variation_curve": bandwidth_variation_curve(fd),
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
        "tcp_throughput": {"bin_s": SERIES_BIN_S, "kbps": aggregate_throughput_kbps(
            [fd.samples for fd in fds.values() if fd.flow.cls == "TCP"], 0.0, sc.duration_s)},
        "tagged_latency": tagged_latency(fds, t0, sc.duration_s),
        "start_late_ms_max": _r(max((s["late_ms"] for s in res.starts.values()), default=0.0)),
        "traffic_cpu_s": res.cpu_s,
        "switch": None,
        "warnings": list(res.warnings),
    }
    if counters_jsonl is not None:
        samples = read_counters(counters_jsonl)
        summary["switch"] = switch_metrics(samples, t0, sc, bottleneck)
        bn = summary["switch"].get("bottleneck")
        if bn is not None:
            summary["controller_flow_counts"] = controller_flow_counts(
                samples, (bn["switch"], bn["port"]), t0, sc)
    return summary


#: controller_flow_counts reads each phase's middle: this fraction of the phase is
#: left out at either end (a start is counted within ~60 ms, a stop only after the
#: 300 ms expiry: docs/experiments/dcbt.md "Active-flow counting")
FLOW_COUNT_EDGE_FRACTION = 0.25
FAMILIES = ("ipv4", "ipv6")


def controller_flow_counts(samples: Sequence[Mapping[str, Any]], port: tuple[str, int],
                           t0_ns: int, scenario: Scenario) -> dict[str, Any]:
    """Per phase, the controller's active-flow counts at the port (its counters.jsonl
    samples: ``active_flows``, and ``active_flows_by_family`` where the controller
    logs it) against the flows the scenario runs there throughout the phase's middle
    half ({"phase": {"expected": {family: {class: n}}, "counted": {family: {class:
    median}}, "counted_total": {class: median}, "counted_max": {class: max},
    "samples": n}}). The flows of every family and class cross the one bottleneck of
    a dumbbell, so every scenario flow is expected there."""
    sw, p = port
    mine = [(int(x["t_ns"]), x) for x in samples if x.get("switch") == sw and "t_ns" in x]
    out: dict[str, Any] = {}
    for ph in scenario.phases:
        cut = FLOW_COUNT_EDGE_FRACTION * ph.length_s
        a, b = ph.start_s + cut, ph.end_s - cut
        expected = {fam: {c: 0 for c in CLASSES} for fam in FAMILIES}
        for f in scenario.flows:
            if f.start_s <= a and f.stop_s >= b:
                expected[f.family][f.cls] += 1
        win = [x for t, x in mine if t0_ns + a * 1e9 <= t <= t0_ns + b * 1e9]
        tot = [x.get("active_flows", {}).get(str(p)) for x in win]
        tot = [t for t in tot if t is not None]
        fam = [x.get("active_flows_by_family", {}).get(str(p)) for x in win]
        fam = [f for f in fam if f is not None]
        out[ph.name] = {
            "window_s": [_r(a), _r(b)], "samples": len(tot),
            "expected": expected,
            "counted_total": {c: _median([t.get(c, 0) for t in tot]) for c in CLASSES} if tot else None,
            "counted_max": {c: max(t.get(c, 0) for t in tot) for c in CLASSES} if tot else None,
            "counted": {f_: {c: _median([x[f_].get(c, 0) for x in fam]) for c in CLASSES}
                        for f_ in FAMILIES} if fam else None,
        }
    return out


def _median(xs: Sequence[float]) -> Optional[float]:
    if not xs:
        return None
    ys = sorted(xs)
    n = len(ys)
    return float(ys[n // 2]) if n % 2 else (ys[n // 2 - 1] + ys[n // 2]) / 2


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
