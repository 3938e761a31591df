#!/usr/bin/env python3
"""The docs' "paper value / mmaqm value / verdict / why they differ" tables, from committed data.

docs/paper-comparison.yaml lists, per paper, the committed runs of its experiment
(docs/results/<run>/) and one row per number or claim the paper reports: what it
is, the paper's value and where it comes from (stated, read off a figure,
derived), its kind (number, ordering, shape), expectation and tolerance, how to
compute mmaqm's value from the runs' summary.json files (a metric below), and why
they differ; or why the row is declined, or what it waits for. The mmaqm cell is
the median over the runs with the range; the verdict is computed from the
tolerance (docs/verdicts.md). Each paper's table sits in one documentation page
(usually docs/experiments/<paper>.md) between the markers

    <!-- paper-compare:NAME -->  ...  <!-- /paper-compare:NAME -->

and the tables of measured values of docs/run-tables.yaml between
<!-- run-table:NAME --> markers. A page may say "reproduced" only in such a table
or in a verdict span <!-- verdict:PAPER/ID -->WORD<!-- /verdict --> whose WORD is
the row's computed verdict. A number the prose quotes from the runs sits in a value
span <!-- value:PAPER/ID -->TEXT<!-- /value --> (or value:run-table/NAME/ROW/COL), whose
TEXT must be the row's or the cell's rendering; on PROSE_PAGES a number with a unit
outside a span must be a paper's value or on docs/prose-numbers.yaml (docs/verdicts.md,
"Numbers in prose"). The table's "Data:" links are relative to its page.

  python tools/paper_compare.py            # check: each table equals its rendering
  python tools/paper_compare.py --write    # rewrite the tables and spans from the data

A changed number in a summary, a row added to the YAML, or a hand edit of a
table, verdict or value span makes the check fail (it is part of `make check-results`, hence
`make test`).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import statistics
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Optional


import yaml
from archive_run import read_text  # noqa: E402
from ns3common import cell as ns3_cell, num as ns3_num  # noqa: E402
from mmaqm.config import load_yaml  # noqa: E402

from mmaqm_exp import report  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "docs" / "paper-comparison.yaml"
RESULTS = REPO / "docs" / "results"
PACKET_BYTES = 1000          # every packet of the paper scenarios (dcbt §5, cbt §4)

Summaries = Mapping[str, Mapping[str, Any]]


class CompareError(Exception):
    """A metric that cannot be computed from the run (missing algorithm, phase, key)."""


def _summary(runs: Summaries, algorithm: str) -> Mapping[str, Any]:
    if algorithm not in runs:
        raise CompareError(f"no summary for {algorithm} (run has {sorted(runs)})")
    return runs[algorithm]


def _phase(runs: Summaries, algorithm: str, phase: str) -> Mapping[str, Any]:
    s = _summary(runs, algorithm)
    if phase == "run":
        return s["run"]
    if phase not in s["phases"]:
        raise CompareError(f"{algorithm}: no phase {phase!r} (has {sorted(s['phases'])})")
    return s["phases"][phase]


def _bottleneck_port(runs: Summaries, algorithm: str) -> Mapping[str, Any]:
    sw = _summary(runs, algorithm)["switch"]
    bn = sw["bottleneck"]
    return sw["ports"][f"{bn['switch']}:{bn['port']}"]


def class_kbps(runs: Summaries, algorithm: str, phase: str, cls: str) -> float:
    """Average per-flow throughput of a class in a phase, kbit/s (dcbt Fig. 8)."""
    v = _phase(runs, algorithm, phase)["class_avg_per_flow_kbps"][cls]
    if v is None:
        raise CompareError(f"{algorithm} {phase}: no {cls} flow")
    return float(v)


def _counts(runs: Summaries, algorithm: str, cls: str, phase: str = "run") -> Mapping[str, Any]:
    port = _bottleneck_port(runs, algorithm)
    return port["run"][cls] if phase == "run" else port["phases"][phase][cls]


def accounting(runs: Summaries, algorithm: str, field: str) -> float:
    """dcbt Tables 1-2 over the run, as table.txt has them (report.packet_accounting):
    tcp_delivered, tcp_drop_pct, tcp_kbps, tagged_delivered, tagged_drop_pct."""
    acc = report.packet_accounting(_summary(runs, algorithm), PACKET_BYTES)
    if acc is None:
        raise CompareError(f"{algorithm}: no bottleneck counters")
    if field not in acc:
        raise CompareError(f"unknown accounting field {field!r}; known: {sorted(acc)}")
    if acc[field] is None:
        raise CompareError(f"{algorithm}: {field} undefined (no arrivals)")
    return float(acc[field])


def _fmt(v: float, nd: int) -> str:
    return f"{v:,.{nd}f}".replace(",", " ")


Metric = Callable[..., str]


def m_class_kbps(runs: Summaries, algorithm: str, phase: str, cls: str) -> str:
    return f"{_fmt(class_kbps(runs, algorithm, phase, cls), 0)} kbit/s"


def m_class_ratio_pct(runs: Summaries, algorithm: str, phase: str, num: str, den: str) -> str:
    """How much more (+) or less (-) a num-class flow got than a den-class flow, %."""
    r = class_kbps(runs, algorithm, phase, num) / class_kbps(runs, algorithm, phase, den)
    return f"{100 * (r - 1):+.0f} %"


def m_class_share_of_fair_pct(runs: Summaries, algorithm: str, phase: str, cls: str) -> str:
    fair = float(_phase(runs, algorithm, phase)["fair_share_kbps"])
    return f"{100 * class_kbps(runs, algorithm, phase, cls) / fair:.0f} % of fair"


def m_fair_share_kbps(runs: Summaries, algorithm: str, phase: str) -> str:
    return f"{_fmt(float(_phase(runs, algorithm, phase)['fair_share_kbps']), 0)} kbit/s"


def m_jain(runs: Summaries, algorithm: str, phase: str) -> str:
    return f"{float(_phase(runs, algorithm, phase)['jain']):.3f}"


def m_accounting(runs: Summaries, algorithm: str, field: str) -> str:
    v = accounting(runs, algorithm, field)
    if field.endswith("_pct"):
        return f"{v:.2f} %"
    return _fmt(v, 0) + (" kbit/s" if field.endswith("_kbps") else "")


def m_accounting_ratio_pct(runs: Summaries, algorithm: str, baseline: str, field: str) -> str:
    return f"{100 * accounting(runs, algorithm, field) / accounting(runs, baseline, field):.1f} %"


def m_tagged_delay_ms(runs: Summaries, algorithm: str, stat: str) -> str:
    """Tagged one-way delay over the run: mean_ms, max_ms, or pNN from the CDF."""
    udp = _phase(runs, algorithm, "run")["udp_class"]["TAGGED"]
    if stat.startswith("p"):
        cdf = udp["delay_cdf_ms"]
        q = int(stat[1:])
        v = cdf[round(q / 100 * (len(cdf) - 1))]
    else:
        v = udp[stat]
    return f"{float(v):.1f} ms"


def m_class_loss_pct(runs: Summaries, algorithm: str, phase: str, cls: str) -> str:
    """Drops / arrivals of a class at the bottleneck in a phase (switch counters)."""
    c = _counts(runs, algorithm, cls, phase)
    if not c["arrivals"]:
        raise CompareError(f"{algorithm} {phase}: no {cls} arrivals")
    return f"{100 * c['drops_total'] / c['arrivals']:.1f} %"


def m_flow_share_pct(runs: Summaries, algorithm: str, phase: str, cls: str) -> str:
    """The class's share of the phase's active flows, % (dcbt §6.2: ChIPS's on/off ratio)."""
    n = _phase(runs, algorithm, phase)["n_flows_by_class"]
    return f"{100 * n[cls] / sum(n.values()):.0f} %"


def m_class_avg_pkts(runs: Summaries, algorithm: str, phase: str, cls: str) -> str:
    """Mean of a sampled average register over a phase, packets (dcbt Fig. 10)."""
    regs = _summary(runs, algorithm).get("registers")
    if not regs:
        raise CompareError(f"{algorithm}: no register samples in the summary")
    try:
        v = regs["phase_mean_pkts"][phase][cls]
    except KeyError:
        raise CompareError(f"{algorithm}: no register mean for {phase}/{cls}") from None
    return f"{float(v):.2f} pkts"


def m_udp_loss_pct(runs: Summaries, algorithm: str, phase: str, cls: str) -> str:
    """Receiver-side loss of a UDP class (sent - received) / sent, % (cbt Table 1)."""
    v = _phase(runs, algorithm, phase)["udp_class"][cls]["loss"]
    return f"{100 * float(v):.2f} %"


def m_class_share_pct(runs: Summaries, algorithm: str, phase: str, cls: str) -> str:
    """A class's share of the bytes delivered in a phase, %."""
    return f"{100 * float(_phase(runs, algorithm, phase)['class_share'][cls]):.1f} %"


def m_tagged_queueing_ms(runs: Summaries, algorithm: str, phase: str) -> str:
    """The tagged queueing delay in a phase (report.tagged_queueing_ms, cbt §4.3)."""
    _phase(runs, algorithm, phase)
    v = report.tagged_queueing_ms(_summary(runs, algorithm), phase)
    if v is None:
        raise CompareError(f"{algorithm} {phase}: no tagged packets")
    return f"{v:.1f} ms"


def m_red_queue_limit(runs: Summaries, algorithm: str) -> str:
    """cbt §4.2's effective RED queue limit and RED's thresholds, packets."""
    lim = _summary(runs, algorithm)["red_queue_limit"]
    return (f"{lim['effective_red_limit_pkts']:.0f} pkts "
            f"({lim['min_th_pkts']:.0f}/{lim['max_th_pkts']:.0f})")


def m_tcp_queue_pkts(runs: Summaries, algorithm: str, stat: str) -> str:
    """cbt §4.2: the TCP class's queue at the bottleneck beside the RED limit (counters,
    summary red_queue_limit): stat max, max_blast or mean_blast."""
    lim = _summary(runs, algorithm).get("red_queue_limit") or {}
    key = f"measured_tcp_{stat}_pkts"
    if lim.get(key) is None:
        raise CompareError(f"{algorithm}: no {key} in red_queue_limit")
    return f"{float(lim[key]):.0f} pkts"


def m_udp_delay_ms(runs: Summaries, algorithm: str, phase: str, cls: str, stat: str) -> str:
    """A UDP class's one-way delay in a phase: mean_ms, max_ms, jitter_ms_mean (RFC 3550)
    or pNN from the phase's CDF."""
    udp = (_phase(runs, algorithm, phase).get("udp_class") or {}).get(cls)
    if not udp:
        raise CompareError(f"{algorithm} {phase}: no {cls} packets")
    if stat.startswith("p"):
        cdf = udp["delay_cdf_ms"]
        v = cdf[round(int(stat[1:]) / 100 * (len(cdf) - 1))]
    else:
        v = udp[stat]
    return f"{float(v):.1f} ms"


def m_idle_pct(runs: Summaries, algorithm: str, phase: str) -> str:
    """The share of a phase the bottleneck link was idle: 1 - its utilisation, %."""
    u = _phase(runs, algorithm, phase).get("utilization")
    if u is None:
        raise CompareError(f"{algorithm} {phase}: no utilization")
    return f"{100 * (1 - float(u)):.1f} %"


def _register_phase(runs: Summaries, algorithm: str, phase: str) -> Mapping[str, Any]:
    regs = _summary(runs, algorithm).get("registers") or {}
    if phase not in (regs.get("phases") or {}):
        raise CompareError(f"{algorithm}: no register samples for phase {phase!r}")
    return regs["phases"][phase]


def m_register(runs: Summaries, algorithm: str, phase: str, key: str,
               cls: Optional[str] = None) -> str:
    """A phase statistic of the sampled registers (dcbt Figs. 9-10): red_avg_mean_pkts,
    queue_mean_pkts, or a class's avg_mean_pkts, ... (registers.py)."""
    ph = _register_phase(runs, algorithm, phase)
    v = ph[cls][key] if cls else ph[key]
    if v is None:
        raise CompareError(f"{algorithm} {phase}: {cls or ''} {key} is undefined")
    return f"{float(v):.2f} pkts" if key.endswith("_pkts") else f"{float(v):.2f}"


def m_threshold_predicted_kbps(runs: Summaries, algorithm: str, phase: str, cls: str) -> str:
    """What a class threshold buys per flow if the class holds its threshold in a queue
    of the measured mean length (dcbt §5's design rule: 25 Mbit/s * 2.9 / 10 packets):
    threshold / mean queue * link rate / flows of the class."""
    s = _summary(runs, algorithm)
    ph = _register_phase(runs, algorithm, phase)
    n = _phase(runs, algorithm, phase)["n_flows_by_class"][cls]
    kbps = (ph[cls]["threshold_mean_pkts"] / ph["queue_mean_pkts"]
            * s["bottleneck"]["rate_kbps"] / n)
    return f"{_fmt(kbps, 0)} kbit/s"


def m_bw_variation_kbps(runs: Summaries, algorithm: str, cls: str, window: str) -> str:
    """feng §3: the bandwidth variation of a class, the mean over its flows of the
    standard deviation of the flow's throughput over consecutive windows (1s, 8s)."""
    flows = [f["bandwidth_variation"][window] for f in _summary(runs, algorithm)["flows"].values()
             if f["class"] == cls and (f.get("bandwidth_variation") or {}).get(window)]
    if not flows:
        raise CompareError(f"{algorithm}: no {cls} flow with {window} windows")
    return f"{_fmt(sum(f['std_kbps'] for f in flows) / len(flows), 0)} kbit/s"


def m_flow_mean_kbps(runs: Summaries, algorithm: str, cls: str) -> str:
    """Mean over a class's flows of their throughput over the run."""
    flows = [f["bandwidth_variation"]["1s"]["mean_kbps"]
             for f in _summary(runs, algorithm)["flows"].values() if f["class"] == cls]
    if not flows:
        raise CompareError(f"{algorithm}: no {cls} flow")
    return f"{_fmt(sum(flows) / len(flows), 0)} kbit/s"


def m_total_loss_pct(runs: Summaries, algorithm: str, phase: str) -> str:
    """Drops / arrivals of all classes together at the bottleneck (switch counters);
    phase "run" for the whole run (mcdt Fig. 7's total drop rate)."""
    port = _bottleneck_port(runs, algorithm)
    counts = port["run"] if phase == "run" else port["phases"][phase]
    arrivals = sum(c["arrivals"] for c in counts.values())
    if not arrivals:
        raise CompareError(f"{algorithm} {phase}: no arrivals")
    return f"{100 * sum(c['drops_total'] for c in counts.values()) / arrivals:.1f} %"


def m_class_total_kbps(runs: Summaries, algorithm: str, phase: str, cls: str) -> str:
    """A class's total receive-side throughput in a phase (or "run"), kbit/s (mcdt Fig. 8)."""
    return f"{_fmt(float(_phase(runs, algorithm, phase)['class_total_kbps'][cls]), 0)} kbit/s"


def m_queue_delay_ms(runs: Summaries, algorithm: str, phase: str) -> str:
    """The bottleneck's mean queueing delay in a phase: the time-average queue (all
    classes, admits - departures from the counters, sampled every 100 ms) over the
    link's packet rate (mcdt Fig. 6: one FIFO, so every class waits the same)."""
    s = _summary(runs, algorithm)
    q = s["switch"]["occupancy"]["mean_pkts_by_phase"][phase]["total"]
    return f"{1000 * float(q) / float(s['bottleneck']['rate_pps']):.1f} ms"


def _propagation_floor_ms(runs: Summaries) -> float:
    """The smallest one-way delay any UDP packet saw under any algorithm of the run: the
    path's propagation (an algorithm whose queue never empties, drop-tail's, does not
    show it; neither does a class that starts into a full queue)."""
    mins = [c["min_ms"] for s in runs.values() for c in s["run"]["udp_class"].values()
            if c and c.get("min_ms") is not None]
    if not mins:
        raise CompareError("no UDP packets in the run")
    return float(min(mins))


def m_udp_queueing_ms(runs: Summaries, algorithm: str, phase: str, cls: str) -> str:
    """A UDP class's measured queueing delay in a phase: its packets' mean one-way
    delay minus the propagation floor (_propagation_floor_ms)."""
    udp = _phase(runs, algorithm, phase)["udp_class"].get(cls)
    if not udp or udp.get("mean_ms") is None:
        raise CompareError(f"{algorithm} {phase}: no {cls} packets")
    return f"{float(udp['mean_ms']) - _propagation_floor_ms(runs):.1f} ms"


def m_accounting_diff_pts(runs: Summaries, algorithm: str, baseline: str, field: str) -> str:
    """A Tables 1-2 rate under algorithm minus the same under baseline, percentage points."""
    return f"{accounting(runs, algorithm, field) - accounting(runs, baseline, field):+.2f} pts"


def m_udp_loss_gap_pts(runs: Summaries, algorithm: str, baseline: str, phase: str,
                       cls: str) -> str:
    """Receiver-side loss of a UDP class under baseline minus under algorithm, points."""
    def loss(a: str) -> float:
        return 100 * float(_phase(runs, a, phase)["udp_class"][cls]["loss"])
    return f"{loss(baseline) - loss(algorithm):+.2f} pts"


def _tcp_mbps(runs: Summaries, algorithm: str) -> float:
    """upta §7: TCP's received IP bytes over the run's duration (mmaqm_exp.upta_tables)."""
    s = _summary(runs, algorithm)
    tcp = [f["received_bytes_ip"] for f in s["flows"].values() if f["kind"] == "tcp"]
    if not tcp:
        raise CompareError(f"{algorithm}: no TCP flow")
    return sum(tcp) * 8 / float(s["scenario"]["duration_s"]) / 1e6


def m_tcp_mbps(runs: Summaries, algorithm: str) -> str:
    return f"{_tcp_mbps(runs, algorithm):.3f} Mbit/s"


def m_tcp_gain_rho(runs: Summaries, algorithm: str, baseline: str) -> str:
    """upta eq. 22's rho = tau' / tau - 1: TCP's throughput under algorithm over baseline's."""
    return f"{_tcp_mbps(runs, algorithm) / _tcp_mbps(runs, baseline) - 1:+.3f}"


def _video_hops(runs: Summaries, algorithm: str) -> list[dict[str, Any]]:
    from mmaqm_exp import upta_tables
    return upta_tables.per_hop(Path(_summary(runs, algorithm)["_run_dir"]))


def m_video_hop_loss_pct(runs: Summaries, algorithm: str, hops: list[str]) -> str:
    """upta Tables 1-2: the video's local loss rate at each router of its path (counters)."""
    by = {h["switch"]: h for h in _video_hops(runs, algorithm)}
    out = []
    for hop in hops:
        if by.get(hop, {}).get("loss") is None:
            raise CompareError(f"{algorithm}: no video counts at {hop}")
        out.append(f"{100 * by[hop]['loss']:.1f} %")
    return " / ".join(out)


def m_video_hop_q_pct(runs: Summaries, algorithm: str, hops: list[str]) -> str:
    """upta Table 2: the loss threshold eq. 17 gives at each router from the measured
    losses of the hops before (mmaqm_exp.upta_tables.per_hop)."""
    by = {h["switch"]: h for h in _video_hops(runs, algorithm)}
    if any(by.get(h, {}).get("q_eq17") is None for h in hops):
        raise CompareError(f"{algorithm}: no eq. 17 threshold at {hops}")
    return " / ".join(f"{100 * by[h]['q_eq17']:.1f} %" for h in hops)


def m_video_e2e_loss_pct(runs: Summaries, algorithm: str) -> str:
    """upta Table 1's D_2 row: the video's end-to-end loss (first hop's arrivals, last
    hop's departures)."""
    hops = [h for h in _video_hops(runs, algorithm) if h.get("arrivals") is not None]
    if not hops or not hops[0]["arrivals"]:
        raise CompareError(f"{algorithm}: no video counts")
    return f"{100 * (1 - hops[-1]['departures'] / hops[0]['arrivals']):.1f} %"


def m_bw_variation_unsmoothed_kbps(runs: Summaries, algorithm: str, cls: str) -> str:
    """feng Fig. 3(a) at no smoothing: the class's bandwidth variation at the smallest
    window of its curve (report.class_variation_curve)."""
    curve = report.class_variation_curve(_summary(runs, algorithm), cls)
    if not curve:
        raise CompareError(f"{algorithm}: no {cls} variation curve")
    return f"{_fmt(curve[0][1], 0)} kbit/s"


def m_bw_delay_to_match_s(runs: Summaries, algorithm: str, baseline: str, cls: str) -> str:
    """feng Fig. 3(a): the smoothing window (delay) at which algorithm's variation first
    falls to baseline's unsmoothed variation; 0 if it starts at or below it."""
    target = report.class_variation_curve(_summary(runs, baseline), cls)
    curve = report.class_variation_curve(_summary(runs, algorithm), cls)
    if not target or not curve:
        raise CompareError(f"{algorithm}/{baseline}: no {cls} variation curve")
    for w, v in curve:
        if v <= target[0][1]:
            return f"{w:.2f} s"
    raise CompareError(f"{algorithm}: variation never falls to {baseline}'s")


def m_queue_mean_pkts(runs: Summaries, algorithm: str, phase: str) -> str:
    """The bottleneck's time-average queue in a phase, packets (counters, every 100 ms)."""
    q = _summary(runs, algorithm)["switch"]["occupancy"]["mean_pkts_by_phase"][phase]["total"]
    return f"{float(q):.1f} pkts"


def m_tagged_delay_variance_ms2(runs: Summaries, algorithm: str) -> str:
    """The tagged class's one-way delay variance over the run (dcbt §4's jitter measure)."""
    return f"{float(_phase(runs, algorithm, 'run')['udp_class']['TAGGED']['variance_ms2']):.1f} ms²"


def m_tagged_jitter_ms(runs: Summaries, algorithm: str) -> str:
    """The tagged flows' mean RFC 3550 jitter over the run."""
    return f"{float(_phase(runs, algorithm, 'run')['udp_class']['TAGGED']['jitter_ms_mean']):.2f} ms"


def m_class_queue_pkts(runs: Summaries, algorithm: str, phase: str, cls: str) -> str:
    """A class's time-average queue at the bottleneck in a phase, packets (counters)."""
    occ = _summary(runs, algorithm)["switch"]["occupancy"]["mean_pkts_by_phase"][phase]
    return f"{float(occ[cls]):.1f} pkts"


def m_class_drop_reason_pct(runs: Summaries, algorithm: str, phase: str, cls: str,
                            reason: str) -> str:
    """A class's drops of one reason over its arrivals at the bottleneck in a phase, %."""
    c = _counts(runs, algorithm, cls, phase)
    if not c["arrivals"]:
        return "–"
    return f"{100 * c['drops'].get(reason, 0) / c['arrivals']:.1f} %"


def m_class_arrival_share_pct(runs: Summaries, algorithm: str, phase: str, cls: str) -> str:
    """A class's share of all arrivals at the bottleneck in a phase, %."""
    port = _bottleneck_port(runs, algorithm)
    counts = port["run"] if phase == "run" else port["phases"][phase]
    total = sum(c["arrivals"] for c in counts.values())
    return f"{100 * counts[cls]['arrivals'] / total:.0f} %"


def m_mcdt_threshold_pkts(runs: Summaries, algorithm: str, phase: str, cls: str) -> str:
    """MCDT's class threshold, mean over the controller's pushes (share_events.jsonl,
    mcdt_push) within the phase, packets; cls ALL: the classes' thresholds added up."""
    s = _summary(runs, algorithm)
    ph = next((p for p in s["scenario"]["phases"] if p["name"] == phase), None)
    if ph is None:
        raise CompareError(f"{algorithm}: no phase {phase!r}")
    lo = s["t0_ns"] + ph["start_s"] * 1e9
    hi = s["t0_ns"] + ph["end_s"] * 1e9
    path = Path(s["_run_dir"]) / "share_events.jsonl"
    ths = [sum(e["th_pkts"].values()) if cls == "ALL" else e["th_pkts"][cls]
           for line in read_text(path).splitlines() if line.strip()
           for e in [json.loads(line)] if e.get("event") == "mcdt_push" and lo <= e["t_ns"] < hi]
    if not ths:
        raise CompareError(f"{algorithm} {phase}: no mcdt_push events")
    return f"{sum(ths) / len(ths):.1f} pkts"


def m_cpu_pct(runs: Summaries, algorithm: str, process: str = "machine",
              stat: str = "mean_pct") -> str:
    """CPU over the traffic, % of one core (the run's cpu.txt): a process ("bmv2 r1",
    "controller", ...), the whole machine, or with a trailing * the sum of the
    processes whose names start so ("bmv2 *": every switch); stat mean_pct or max_pct
    (of a sum: the sum of the means only)."""
    cpu = _summary(runs, algorithm).get("cpu") or {}
    if process.endswith("*"):
        names = [k for k in cpu if k.startswith(process[:-1])]
        if not names or stat != "mean_pct":
            raise CompareError(f"{algorithm}: no mean CPU of {process!r} (has {sorted(cpu)})")
        return f"{sum(float(cpu[k][stat]) for k in names):.0f} %"
    if process not in cpu:
        raise CompareError(f"{algorithm}: no CPU samples of {process!r} (has {sorted(cpu)})")
    return f"{float(cpu[process][stat]):.0f} %"


def m_flow_lag_ms(runs: Summaries, algorithm: str, cls: str, direction: str, at_s: float) -> str:
    """How long after a class's flows started or stopped (the scenario's time at_s) the
    controller's shares counted them (summary.json active_flow_lag, flowlag.py)."""
    changes = (_summary(runs, algorithm).get("active_flow_lag") or {}).get("changes") or []
    hits = [c for c in changes if c["class"] == cls and c["direction"] == direction
            and abs(float(c["t_s"]) - float(at_s)) < 0.5]
    if len(hits) != 1 or hits[0].get("lag_ms") is None:
        raise CompareError(f"{algorithm}: no single {cls} {direction} at {at_s} s in "
                           f"active_flow_lag")
    return f"{float(hits[0]['lag_ms']):.0f} ms"


def m_tcp_end(runs: Summaries, algorithm: str, field: str) -> str:
    """The TCP flows' state at the end of the run (the senders' tcp_info in summary.json
    flows[].tcp), one value per TCP flow: rtt_ms, cwnd_pkts, or window_mbps (the
    congestion window's payload per RTT, cwnd x MSS / RTT)."""
    tcp = [f["tcp"] for f in _summary(runs, algorithm)["flows"].values()
           if f["kind"] == "tcp" and f.get("tcp")]
    if not tcp:
        raise CompareError(f"{algorithm}: no TCP flow with tcp_info")
    if field == "rtt_ms":
        return " / ".join(f"{t['rtt_us'] / 1000:.0f} ms" for t in tcp)
    if field == "cwnd_pkts":
        return " / ".join(f"{t['snd_cwnd']} pkts" for t in tcp)
    if field == "window_mbps":
        return " / ".join(f"{t['snd_cwnd'] * t['snd_mss'] * 8 / t['rtt_us']:.2f} Mbit/s"
                          for t in tcp)
    raise CompareError(f"unknown tcp_end field {field!r}; known: rtt_ms, cwnd_pkts, "
                       f"window_mbps")


def m_class_drops_pkts(runs: Summaries, algorithm: str, cls: str, reason: str,
                       switch: Optional[str] = None) -> str:
    """A class's drops of one reason over the run, packets, at every port of one switch
    or (switch omitted) of every switch (summary.json switch.ports, counters)."""
    ports = [p for p in _summary(runs, algorithm)["switch"]["ports"].values()
             if switch is None or p["switch"] == switch]
    if not ports:
        raise CompareError(f"{algorithm}: no counters of switch {switch!r}")
    n = sum(int((p["run"].get(cls) or {}).get("drops", {}).get(reason, 0)) for p in ports)
    return f"{_fmt(n, 0)} pkts"


def m_video_drops_pkts(runs: Summaries, algorithm: str) -> str:
    """upta: the video's drops along its path, packets (every reason, every hop)."""
    hops = [h for h in _video_hops(runs, algorithm) if h.get("arrivals") is not None]
    if not hops:
        raise CompareError(f"{algorithm}: no video counts")
    return f"{_fmt(sum(sum(h['drops'].values()) for h in hops), 0)} pkts"


def m_video_useless_pkts(runs: Summaries, algorithm: str) -> str:
    """upta: video packets sent over a link and dropped further on, summed over the links
    (mmaqm_exp.upta_tables.run_numbers: the hops' departures minus the delivered
    packets' own crossings)."""
    hops = [h for h in _video_hops(runs, algorithm) if h.get("arrivals") is not None]
    if not hops:
        raise CompareError(f"{algorithm}: no video counts")
    return _fmt(sum(h["departures"] for h in hops) - hops[-1]["departures"] * len(hops), 0)


def m_video_hop_arrival_mbps(runs: Summaries, algorithm: str, hop: str) -> str:
    """upta: the rate at which the video arrives at a router of its path, Mbit/s: its
    sending rate (its flows' rate_kbps) times the share of its packets that reach the
    router (arrivals there over arrivals at the first router, counters)."""
    from mmaqm_exp import upta_tables
    s = _summary(runs, algorithm)
    hops = [h for h in _video_hops(runs, algorithm) if h.get("arrivals")]
    at = next((h for h in hops if h["switch"] == hop), None)
    rate_kbps = sum(float(f.get("rate_kbps") or 0) for f in s["flows"].values()
                    if f["src"] == upta_tables.VIDEO_SRC)
    if at is None or not rate_kbps:
        raise CompareError(f"{algorithm}: no video counts at {hop} or no video rate")
    return f"{rate_kbps * at['arrivals'] / hops[0]['arrivals'] / 1000:.2f} Mbit/s"


def m_upta_interval(runs: Summaries, algorithm: str, switch: "str | list[str]", port: int,
                    field: str, stat: str = "median") -> str:
    """A field of UPTA's per-interval state at a router's egress port (the controller's
    upta_interval events, share_events.jsonl): its median or mean over the intervals
    with flows (n > 0) that have it; alpha_bps (the fair-share rate α) in Mbit/s, others
    (s: the flows counted as unconstrained, S) as they are. A list of switches: "a / b"."""
    if isinstance(switch, list):
        return " / ".join(m_upta_interval(runs, algorithm, sw, port, field, stat)
                          for sw in switch)
    if stat not in ("median", "mean"):
        raise CompareError(f"upta_interval stat is median or mean, not {stat!r}")
    path = Path(_summary(runs, algorithm)["_run_dir"]) / "share_events.jsonl"
    xs = [float(e[field]) for line in read_text(path).splitlines() if line.strip()
          for e in [json.loads(line)] if e.get("event") == "upta_interval"
          and e.get("switch") == switch and e.get("port") == port and e.get("n")
          and e.get(field) is not None]
    if not xs:
        raise CompareError(f"{algorithm}: no upta_interval {field} at {switch}:{port}")
    v = statistics.median(xs) if stat == "median" else statistics.fmean(xs)
    return f"{v / 1e6:.2f} Mbit/s" if field.endswith("_bps") else f"{v:.2f}"


def m_fred_slots(runs: Summaries, algorithm: str, field: str) -> str:
    """FRED's flow-slot collisions at the bottleneck, from the controller's samples
    (summary switch.fred_slots, analysis.fred_slot_summary): peak_flows, peak_sharing,
    samples, or sharing_pct (the share of the active flows that shared a slot, over all
    samples)."""
    fs = (_summary(runs, algorithm).get("switch") or {}).get("fred_slots")
    if not fs:
        raise CompareError(f"{algorithm}: no fred_slots in the summary (not FRED?)")
    if field == "sharing_pct":
        if fs.get("sharing_fraction") is None:
            raise CompareError(f"{algorithm}: no active flow in any sample")
        return f"{100 * float(fs['sharing_fraction']):.2f} %"
    if field not in ("peak_flows", "peak_sharing", "samples"):
        raise CompareError(f"unknown fred_slots field {field!r}; known: peak_flows, "
                           f"peak_sharing, samples, sharing_pct")
    return _fmt(float(fs[field]), 0)


METRICS: dict[str, Metric] = {
    "fred_slots": m_fred_slots,
    "tcp_end": m_tcp_end,
    "class_drops_pkts": m_class_drops_pkts,
    "video_drops_pkts": m_video_drops_pkts,
    "video_useless_pkts": m_video_useless_pkts,
    "upta_interval": m_upta_interval,
    "video_hop_arrival_mbps": m_video_hop_arrival_mbps,
    "udp_delay_ms": m_udp_delay_ms,
    "idle_pct": m_idle_pct,
    "tcp_queue_pkts": m_tcp_queue_pkts,
    "flow_lag_ms": m_flow_lag_ms,
    "cpu_pct": m_cpu_pct,
    "bw_variation_kbps": m_bw_variation_kbps,
    "flow_mean_kbps": m_flow_mean_kbps,
    "register": m_register,
    "threshold_predicted_kbps": m_threshold_predicted_kbps,
    "udp_loss_pct": m_udp_loss_pct,
    "class_share_pct": m_class_share_pct,
    "tagged_queueing_ms": m_tagged_queueing_ms,
    "red_queue_limit": m_red_queue_limit,
    "class_kbps": m_class_kbps,
    "class_ratio_pct": m_class_ratio_pct,
    "class_share_of_fair_pct": m_class_share_of_fair_pct,
    "fair_share_kbps": m_fair_share_kbps,
    "jain": m_jain,
    "accounting": m_accounting,
    "accounting_ratio_pct": m_accounting_ratio_pct,
    "tagged_delay_ms": m_tagged_delay_ms,
    "class_loss_pct": m_class_loss_pct,
    "flow_share_pct": m_flow_share_pct,
    "class_avg_pkts": m_class_avg_pkts,
    "total_loss_pct": m_total_loss_pct,
    "class_total_kbps": m_class_total_kbps,
    "queue_delay_ms": m_queue_delay_ms,
    "udp_queueing_ms": m_udp_queueing_ms,
    "accounting_diff_pts": m_accounting_diff_pts,
    "udp_loss_gap_pts": m_udp_loss_gap_pts,
    "tcp_mbps": m_tcp_mbps,
    "tcp_gain_rho": m_tcp_gain_rho,
    "video_hop_loss_pct": m_video_hop_loss_pct,
    "video_e2e_loss_pct": m_video_e2e_loss_pct,
    "video_hop_q_pct": m_video_hop_q_pct,
    "queue_mean_pkts": m_queue_mean_pkts,
    "tagged_delay_variance_ms2": m_tagged_delay_variance_ms2,
    "tagged_jitter_ms": m_tagged_jitter_ms,
    "class_queue_pkts": m_class_queue_pkts,
    "class_drop_reason_pct": m_class_drop_reason_pct,
    "class_arrival_share_pct": m_class_arrival_share_pct,
    "mcdt_threshold_pkts": m_mcdt_threshold_pkts,
    "bw_variation_unsmoothed_kbps": m_bw_variation_unsmoothed_kbps,
    "bw_delay_to_match_s": m_bw_delay_to_match_s,
}


def load_run(results: Path, run: "str | list[str]") -> dict[str, Mapping[str, Any]]:
    """{algorithm: summary} of docs/results/<run>/, or of several folders together (a
    list: one measurement whose algorithms ran in separate folders, e.g. FAIR_SHARE and
    P_UPTA). Each summary gets "_run_dir", the folder of its algorithm."""
    out: dict[str, Mapping[str, Any]] = {}
    for name in ([run] if isinstance(run, str) else run):
        d = results / name
        found = sorted([*d.glob("*/summary.json"), *d.glob("*/summary.json.gz")])
        if not found:
            raise CompareError(f"{d}: no <ALGORITHM>/summary.json")
        for p in found:
            if p.parent.name in out:
                raise CompareError(f"{p.parent.name} in more than one folder of {run}")
            s = json.loads(read_text(p.parent / "summary.json"))
            s["_run_dir"] = str(p.parent)
            out[p.parent.name] = s
    return out


def value(runs: Summaries, spec: Mapping[str, Any]) -> str:
    """mmaqm's value of one row: its metric over the run, or a fixed text for a row
    the setup cannot measure (text: ...)."""
    if "text" in spec:
        return str(spec["text"])
    args = dict(spec)
    name = args.pop("fn", None)
    if name not in METRICS:
        raise CompareError(f"unknown metric {name!r}; known: {sorted(METRICS)}")
    if "algorithms" in args:       # the same metric under several algorithms: "a / b / c"
        algorithms = args.pop("algorithms")
        return " / ".join(value(runs, {"fn": name, **args, "algorithm": a}) for a in algorithms)
    if "phases" in args:           # the same metric over several phases: "a / b / c"
        phases = args.pop("phases")
        return " / ".join(value(runs, {"fn": name, **args, "phase": p}) for p in phases)
    if "classes" in args:          # the same metric over several classes: "a / b / c"
        classes = args.pop("classes")
        return " / ".join(value(runs, {"fn": name, **args, "cls": c}) for c in classes)
    try:
        return METRICS[name](runs, **args)
    except TypeError as e:
        raise CompareError(f"metric {name}: {e}") from None
    except KeyError as e:
        raise CompareError(f"metric {name} {args}: missing key {e}") from None


# ------------------------------------------------------------ verdicts
# A row's verdict is computed (docs/verdicts.md): from the row's kind, its expectation
# and tolerance, and its value in each of its runs. Nothing else may call a row
# reproduced: the `why` texts may not use the word, and a page may use it only in a
# computed table or in a verdict span <!-- verdict:PAPER/ID -->WORD<!-- /verdict -->.
MIN_RUNS = 3
KINDS = ("number", "ordering", "shape", "none")
SOURCES = {"stated": "stated", "figure": "read off a figure", "derived": "derived",
           "design": "design value", "none": ""}
VERDICT_WORD = re.compile(r"\breproduced\b", re.I)
NUMBER = re.compile(r"[+\-−]?\d{1,3}(?: \d{3})+(?:\.\d+)?(?![\d.])|[+\-−]?\d+(?:\.\d+)?")


def _number(text: str) -> tuple[float, "re.Match[str]"]:
    m = NUMBER.search(text)
    if not m:
        raise CompareError(f"no number in the metric's value {text!r}")
    return float(m.group(0).replace(" ", "").replace("−", "-")), m


def _like(sample: str, v: float) -> str:
    """v formatted as the number in sample is (decimals, sign, thousands separator)."""
    decimals = len(sample.split(".", 1)[1]) if "." in sample else 0
    sign = "+" if sample[0] in "+-−" else ""
    sep = " " in sample or (abs(v) >= 1000 and "." not in sample)
    s = f"{v:{sign},.{decimals}f}" if sep else f"{v:{sign}.{decimals}f}"
    return s.replace(",", " ").replace("-", "−") if sample[0] == "−" else s.replace(",", " ")


def _positions(text: str) -> list[str]:
    return [p.strip() for p in text.split(" / ")]


def _algorithm_names(spec: Mapping[str, Any]) -> list[str]:
    names = list(spec.get("algorithms") or [])
    names += [spec[k] for k in ("algorithm", "baseline") if k in spec]
    return names


def _tolerance_text(tol: Mapping[str, Any], kind: str = "number") -> str:
    if kind == "ordering" and "abs" in tol:
        return f"margin {tol['abs']:g}" + (f" {tol['unit']}" if tol.get("unit") else "")
    if "rel_pct" in tol:
        return f"±{tol['rel_pct']:g} %"
    if "abs" in tol:
        return f"±{tol['abs']:g}" + (f" {tol['unit']}" if tol.get("unit") else "")
    return ""


def _within(v: float, target: float, tol: Mapping[str, Any]) -> bool:
    if "rel_pct" in tol:
        return abs(v - target) <= abs(target) * float(tol["rel_pct"]) / 100 + 1e-9
    return abs(v - target) <= float(tol.get("abs", 0)) + 1e-9


def _holds(row: Mapping[str, Any], vals: list[float]) -> list[bool]:
    """Per position, whether one run's values meet the row's expectation."""
    kind, exp, tol = row["kind"], row.get("expect") or {}, row.get("tolerance") or {}
    if kind == "number":
        targets = exp.get("values", [exp.get("value")] * len(vals))
        if len(targets) != len(vals) or any(t is None for t in targets):
            raise CompareError(f"{row['quantity']!r}: expect.value(s) must give one number per "
                               f"value ({len(vals)})")
        return [_within(v, float(t), tol) for v, t in zip(vals, targets)]
    if kind == "shape" and ("decreasing" in exp or "increasing" in exp):
        sign = -1 if "decreasing" in exp else 1
        return [all(sign * (b - a) > 0 for a, b in zip(vals, vals[1:]))]
    if kind == "shape":
        def ok(v: float) -> bool:
            if "below" in exp:
                return v < float(exp["below"])
            if "above" in exp:
                return v > float(exp["above"])
            if "between" in exp:
                return float(exp["between"][0]) <= v <= float(exp["between"][1])
            raise CompareError(f"{row['quantity']!r}: shape needs below, above or between")
        return [ok(v) for v in vals]
    # ordering: among the algorithms of the cell, per phase (algorithms outer, phases inner)
    algos = list(row["mmaqm"].get("algorithms") or [])
    n_ph = len(row["mmaqm"].get("phases") or [None])
    if len(algos) * n_ph != len(vals):
        raise CompareError(f"{row['quantity']!r}: an ordering needs `algorithms` in mmaqm")
    margin = float(tol.get("abs", 0))
    out = []
    for j in range(n_ph):
        by = {a: vals[i * n_ph + j] for i, a in enumerate(algos)}
        if "lowest" in exp:
            x = by[exp["lowest"]]
            out.append(all(x + margin < v for a, v in by.items() if a != exp["lowest"]))
        elif "highest" in exp:
            x = by[exp["highest"]]
            out.append(all(x - margin > v for a, v in by.items() if a != exp["highest"]))
        elif "greater" in exp:
            a, b = exp["greater"]
            out.append(by[a] - margin > by[b])
        else:
            raise CompareError(f"{row['quantity']!r}: ordering needs lowest, highest or greater")
    return out


def verdict(row: Mapping[str, Any], per_run: list[list[float]]) -> str:
    """The row's verdict word from the runs' values (docs/verdicts.md). Per value (an
    ordering: per phase): the expectation met by the median over the runs and by every
    run: reproduced; by the median but not every run: partly; not by the median: not
    reproduced. A row is reproduced (not reproduced) if every value is, else partly;
    with fewer than MIN_RUNS runs it is "not established", with the number of runs in
    which it held."""
    if row.get("declined"):
        return "declined"
    if row.get("needs"):
        return f"needs runs: {row['needs']}"
    if row["kind"] == "none":
        return "— (no paper value)"
    n = len(per_run)
    if n == 0:
        raise CompareError(f"{row['quantity']!r}: no runs")
    checks = [_holds(row, vals) for vals in per_run]
    if n < MIN_RUNS:
        held = sum(all(c) for c in checks)
        return f"not established ({n} run{'s' if n != 1 else ''}, held in {held})"
    medians = [statistics.median(col) for col in zip(*per_run)]
    words = ["reproduced" if m and all(c[i] for c in checks) else "partly" if m
             else "not reproduced" for i, m in enumerate(_holds(row, medians))]
    return words[0] if len(set(words)) == 1 else "partly"


def measure(loaded: Mapping[str, Summaries], row: Mapping[str, Any],
            runs: list[Any]) -> tuple[str, list[list[float]], list[str]]:
    """(the mmaqm cell, each run's values, validity notes) of one row over its runs."""
    texts = [value(loaded[_key(r)], row["mmaqm"]) for r in runs]
    if "text" in row["mmaqm"] or row["kind"] == "none" and row["mmaqm"].get("fn") is None:
        return texts[0], [], []
    per_run = [[_number(p)[0] for p in _positions(t)] for t in texts]
    samples = _positions(texts[0])
    cells = []
    for i, sample in enumerate(samples):
        xs = [vals[i] for vals in per_run]
        v, m = _number(sample)
        med = statistics.median(xs)
        text = _like(m.group(0), med)
        if len(xs) > 1:
            text += f" [{_like(m.group(0), min(xs))}–{_like(m.group(0), max(xs))}]"
        cells.append(sample[:m.start()] + text + sample[m.end():])
    cell = " / ".join(cells)
    cell += f" ({len(runs)} run{'s' if len(runs) != 1 else ''}" + \
        (", median [range])" if len(runs) > 1 else ")")
    notes = []
    for r in runs:
        for a in _algorithm_names(row["mmaqm"]):
            s = loaded[_key(r)].get(a) or {}
            if s.get("warnings"):
                notes.append(f"⚠ {_key(r)} {a}: {len(s['warnings'])} validity warning"
                             f"{'s' if len(s['warnings']) != 1 else ''}")
    return cell, per_run, notes


def _key(run: Any) -> str:
    return run if isinstance(run, str) else "+".join(run)


def row_runs(paper: Mapping[str, Any], row: Mapping[str, Any]) -> list[Any]:
    runs = row.get("runs", paper.get("runs"))
    if not runs:
        raise CompareError(f"{row['quantity']!r}: no runs (give `runs` to the paper or the row)")
    return list(runs)


@functools.lru_cache(maxsize=1024)
def _parsed_yaml(path: str, mtime_ns: int, size: int) -> Any:
    """A YAML file parsed once per content (rows pool the same runs again and again),
    with libyaml's loader when PyYAML has it."""
    return yaml.load(Path(path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def same_scenario(results: Path, row: Mapping[str, Any], runs: list[Any]) -> None:
    """A row pools runs of one scenario only: the i-th folder of every run must hold the
    same scenario.yaml (as parsed; a legacy run without one is not compared)."""
    groups = [[r] if isinstance(r, str) else list(r) for r in runs]
    for i in range(max(len(g) for g in groups)):
        seen: dict[str, Any] = {}
        for g in groups:
            if i >= len(g):
                raise CompareError(f"{row['quantity']!r}: runs of different shapes {runs}")
            f = results / g[i] / "scenario.yaml"
            if f.is_file():
                st = f.stat()
                seen[g[i]] = _parsed_yaml(str(f.resolve()), st.st_mtime_ns, st.st_size)
        if len({json.dumps(v, sort_keys=True) for v in seen.values()}) > 1:
            raise CompareError(f"{row['quantity']!r}: pools runs of different scenarios "
                               f"({', '.join(seen)})")


def check_row(row: Mapping[str, Any]) -> list[str]:
    """The fields every row must state (docs/verdicts.md)."""
    q = row.get("quantity", "?")
    required = ("id", "quantity", "paper", "kind", "source") + \
        (() if row.get("declined") or row.get("needs") else ("mmaqm",))
    problems = [f"{q!r}: no `{k}`" for k in required if k not in row]
    if row.get("kind") not in KINDS:
        problems.append(f"{q!r}: kind must be one of {KINDS}")
    if row.get("source") not in SOURCES:
        problems.append(f"{q!r}: source must be one of {sorted(SOURCES)}")
    if row.get("kind") in ("number", "ordering") and not row.get("declined") and \
            not row.get("needs") and "tolerance" not in row:
        problems.append(f"{q!r}: a {row['kind']} row states its tolerance")
    if row.get("kind") == "number" and "tolerance" in row and not _tolerance_text(row["tolerance"]):
        problems.append(f"{q!r}: tolerance is {{abs: X}} or {{rel_pct: X}}")
    for k in ("why", "quantity", "paper"):
        if VERDICT_WORD.search(str(row.get(k, ""))):
            problems.append(f"{q!r}: `{k}` says 'reproduced'; the verdict column is computed")
    return problems


def evaluate(paper: Mapping[str, Any], results: Path = RESULTS) -> list[dict[str, Any]]:
    """Each row of one paper with its mmaqm cell, per-run values, verdict and notes."""
    loaded: dict[str, Summaries] = {}
    out = []
    ids = set()
    for row in paper["rows"]:
        problems = check_row(row)
        if problems:
            raise CompareError("; ".join(problems))
        if row["id"] in ids:
            raise CompareError(f"row id {row['id']!r} twice")
        ids.add(row["id"])
        if row.get("needs") or row.get("declined"):
            out.append({"row": row, "cell": "—", "per_run": [], "notes": [], "runs": [],
                        "verdict": verdict(row, [])})
            continue
        runs = row_runs(paper, row)
        same_scenario(results, row, runs)
        for r in runs:
            if _key(r) not in loaded:
                loaded[_key(r)] = load_run(results, r)
        cell, per_run, notes = measure(loaded, row, runs)
        out.append({"row": row, "cell": cell, "per_run": per_run, "notes": notes,
                    "runs": runs, "verdict": verdict(row, per_run)})
    return out


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def link_base(page: Path, results: Path = RESULTS) -> str:
    """The relative path from a page's folder to the results folder, for its links."""
    return Path(os.path.relpath(os.path.abspath(results),
                                os.path.dirname(os.path.abspath(page)))).as_posix()


def _paper_cell(row: Mapping[str, Any]) -> str:
    label = SOURCES[row["source"]]
    return f"{row['paper']} ({label})" if label else str(row["paper"])


def render(paper: Mapping[str, Any], results: Path = RESULTS, base: str = "docs/results") -> str:
    """One paper's markdown table (without the markers); its run links start with base
    (the results folder as seen from the page that holds the table)."""
    rows = evaluate(paper, results)
    names = list(dict.fromkeys(n for r in rows for run in r["runs"]
                               for n in ([run] if isinstance(run, str) else run)))
    lines = ["Data: " + (", ".join(f"[docs/results/{n}/]({base}/{n}/)" for n in names)
                         or "no committed run yet"), "",
             "| what the paper reports | paper | mmaqm | tolerance | verdict | why they differ |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        row = r["row"]
        mm = r["cell"] + ("; " + "; ".join(r["notes"]) if r["notes"] else "")
        why = row.get("declined") or row.get("why", "")
        lines.append(f"| {_cell(row['quantity'])} | {_cell(_paper_cell(row))} | {_cell(mm)} | "
                     f"{_cell(_tolerance_text(row.get('tolerance') or {}, row['kind']) or '—')} | "
                     f"{_cell(r['verdict'])} | {_cell(why)} |")
    return "\n".join(lines)


def evaluated_rows(spec: Mapping[str, Any], results: Path = RESULTS) -> dict[str, dict[str, Any]]:
    """{"PAPER/ID": the row as evaluate() gives it} of every row."""
    return {f"{name}/{r['row']['id']}": r
            for name, paper in spec.items() for r in evaluate(paper, results)}


def verdicts(spec: Mapping[str, Any], results: Path = RESULTS) -> dict[str, str]:
    """{"PAPER/ID": verdict} of every row."""
    return {k: r["verdict"] for k, r in evaluated_rows(spec, results).items()}


# Pages that describe the verdict words rather than use them.
WORD_DEFINING_PAGES = ("docs/verdicts.md", "docs/testing.md")
SPAN = re.compile(r"<!-- verdict:([\w.-]+/[\w.-]+) -->(.*?)<!-- /verdict -->", re.S)


def check_words(text: str, page: str, computed: Mapping[str, str], write: bool = False
                ) -> tuple[str, list[str]]:
    """A page may say 'reproduced' only inside a computed table (paper-compare markers)
    or in a verdict span whose word is the row's computed verdict; --write updates the
    spans."""
    problems = []

    def span(m: "re.Match[str]") -> str:
        key, word = m.group(1), m.group(2)
        if key not in computed:
            problems.append(f"{page}: verdict span of unknown row {key}")
            return m.group(0)
        if word != computed[key]:
            if write:
                return f"<!-- verdict:{key} -->{computed[key]}<!-- /verdict -->"
            problems.append(f"{page}: verdict span {key} says {word!r}, computed "
                            f"{computed[key]!r}")
        return m.group(0)

    text = SPAN.sub(span, text)
    stripped = re.sub(r"<!-- paper-compare:([\w-]+) -->.*?<!-- /paper-compare:\1 -->", "",
                      SPAN.sub("", text), flags=re.S)
    for n, line in enumerate(stripped.splitlines(), 1):
        if VERDICT_WORD.search(line):
            problems.append(f"{page}: says 'reproduced' outside a computed table or verdict "
                            f"span: {line.strip()[:120]!r}")
    return text, problems


# ------------------------------------------------------------ measured numbers in prose
# A number a page quotes from the runs sits in a value span, rendered from the same data
# as the tables (docs/verdicts.md, "Numbers in prose"):
#   <!-- value:PAPER/ROW-ID[ OPTIONS] -->TEXT<!-- /value -->       a paper-comparison row's
#       mmaqm cell without its run count: "356 [353–358] kbit/s"
#   <!-- value:run-table/NAME/ROW/COL[ OPTIONS] -->TEXT<!-- /value -->   a run-table cell
#       (ROW and COL count from 1, the label column not counted): "0.98 / 0.97"; COL *:
#       the row's cells together (with median or range: across the row)
#   <!-- value:ns3/PAPER/KEY/...[ OPTIONS] -->TEXT<!-- /value -->   an ns-3 reference
#       number of docs/ns3/PAPER.json (ns3_text): "738 [719–771] kbit/s"
# OPTIONS, in any order: #N (the N-th value of a cell "a / b / c", from 1), median or
# range (of a row's cell: its median, or its range over the runs; of a run-table cell: of
# its values), .N (N decimals), bare (the number(s) without the unit).
VALUE_SPAN = re.compile(r"<!-- value:([\w.-]+(?:/[\w.*@+-]+)+)((?: [^\s>]+)*) -->(.*?)<!-- /value -->",
                        re.S)
_POSITION = re.compile(rf"^(?P<pre>.*?)(?P<med>{NUMBER.pattern})"
                       rf"(?: \[(?P<lo>{NUMBER.pattern})–(?P<hi>{NUMBER.pattern})\])?"
                       r"(?P<suf>.*)$", re.S)


def _to_float(text: str) -> float:
    return float(text.replace(" ", "").replace("−", "-"))


def _split_position(text: str) -> "re.Match[str]":
    m = _POSITION.match(text)
    if not m:
        raise CompareError(f"no number in {text!r}")
    return m


def _row_core(r: Mapping[str, Any]) -> str:
    """A row's mmaqm cell without the run count and the validity notes."""
    cell, n = r["cell"], len(r["runs"])
    cut = cell.rfind(f" ({n} run")
    if not r["per_run"] or cut < 0:
        raise CompareError(f"row {r['row']['id']} has no measured value")
    return cell[:cut]


# <!-- value:ns3/PAPER/KEY[/KEY...][ OPTIONS] -->: a number of the ns-3 reference runs
# (docs/ns3.md), at that JSON path in docs/ns3/PAPER.json (keys, or list indices counted
# from 0). A spread {median, min, max, n} (ns3common.spread) renders as the ns-3 tables'
# cells, "738 [719–771] kbit/s"; a plain number as itself. The unit and the default
# decimals follow the name of the path's last key that has a suffix of NS3_UNITS; the
# options are a paper row's (median, range, #N, .N, bare).
NS3_DIR = REPO / "docs" / "ns3"
NS3_UNITS = (("_kbps", "kbit/s", 0), ("_mbps", "Mbit/s", 2), ("_pct", "%", 1),
             ("_pkts", "pkts", 1), ("_ms", "ms", 1), ("_s", "s", 2))


def _ns3_unit(keys: list[str]) -> tuple[str, Optional[int]]:
    for k in reversed(keys):
        name = k.split("@")[0]          # a metric of a period: "delay_mean_ms@blast"
        for suffix, unit, nd in NS3_UNITS:
            if name.endswith(suffix):
                return unit, nd
    return "", None


@functools.lru_cache(maxsize=64)
def _ns3_json(path: str, mtime_ns: int, size: int) -> Any:
    return json.loads(Path(path).read_text())


def ns3_text(key: str, nd: Optional[int] = None, ns3_dir: Path = NS3_DIR) -> str:
    """What the ns-3 value at key (ns3/PAPER/KEY/...) renders as (a spread: its cell)."""
    parts = key.split("/")
    if len(parts) < 3 or parts[0] != "ns3":
        raise CompareError(f"{key}: not ns3/PAPER/KEY[/KEY...] of docs/ns3/PAPER.json")
    f = ns3_dir / f"{parts[1]}.json"
    if not f.is_file():
        raise CompareError(f"{key}: no {f.name} in {ns3_dir}")
    st = f.stat()
    node = _ns3_json(str(f.resolve()), st.st_mtime_ns, st.st_size)
    for i, k in enumerate(parts[2:]):
        if isinstance(node, dict) and k in node:
            node = node[k]
        elif isinstance(node, list) and k.isdigit() and int(k) < len(node):
            node = node[int(k)]
        else:
            raise CompareError(f"{key}: {f.name} has no {k!r} at /{'/'.join(parts[2:2 + i])}")
    unit, default_nd = _ns3_unit(parts[2:])
    if isinstance(node, dict) and {"median", "min", "max"} <= set(node):
        spread = {"n": 0, **node}
        return ns3_cell(spread, nd if nd is not None else default_nd or 0, unit).rstrip()
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise CompareError(f"{key}: {f.name} holds {type(node).__name__} there, not a number "
                           f"or a spread {{median, min, max}}")
    if nd is None:
        nd = default_nd if default_nd is not None else 0 if isinstance(node, int) else 3
    return (ns3_num(float(node), nd) + (f" {unit}" if unit else ""))


def span_text(key: str, options: list[str], rows: Mapping[str, Mapping[str, Any]],
              tables: Mapping[str, Any], results: Path = RESULTS,
              ns3_dir: Path = NS3_DIR) -> str:
    """What a value span with this key and these options must say."""
    pos, form, nd, bare = None, "cell", None, False
    for o in options:
        if re.fullmatch(r"#\d+", o):
            pos = int(o[1:])
        elif o in ("median", "range"):
            form = o
        elif re.fullmatch(r"\.\d", o):
            nd = int(o[1:])
        elif o == "bare":
            bare = True
        else:
            raise CompareError(f"unknown option {o!r} (#N, median, range, .N, bare)")
    if key.startswith("run-table/"):
        parts = key.split("/")
        if len(parts) != 4 or parts[1] not in tables or not parts[2].isdigit() \
                or not (parts[3].isdigit() or parts[3] == "*"):
            raise CompareError(f"{key}: not run-table/NAME/ROW/COL of docs/run-tables.yaml")
        cells = run_table_cells(tables[parts[1]], results)
        i, j = int(parts[2]) - 1, (-1 if parts[3] == "*" else int(parts[3]) - 1)
        if not (0 <= i < len(cells) and (parts[3] == "*" or 0 <= j < len(cells[i]))):
            raise CompareError(f"{key}: the table has {len(cells)} rows of "
                               f"{len(cells[0]) if cells else 0} columns")
        # COL *: every cell of the row, one value list (a median or range across the row)
        values = [v for c in (cells[i] if parts[3] == "*" else [cells[i][j]])
                  for v in _positions(c)]
    elif key.startswith("ns3/"):
        values = _positions(ns3_text(key, nd, ns3_dir))
    else:
        if key not in rows:
            raise CompareError(f"{key}: no such row in docs/paper-comparison.yaml")
        values = _positions(_row_core(rows[key]))
    if pos is not None:
        if not 1 <= pos <= len(values):
            raise CompareError(f"{key}: #{pos}, but the cell has {len(values)} values")
        values = [values[pos - 1]]
    ms = [_split_position(v) for v in values]
    if form == "cell":
        out = []
        for m in ms:
            t = m.group("med") + (f" [{m.group('lo')}–{m.group('hi')}]" if m.group("lo") else "")
            out.append(t if bare else m.group("pre") + t + m.group("suf"))
        text = " / ".join(out)
    else:
        if key.startswith("run-table/"):      # over the cell's values
            if len({m.group("pre") + m.group("suf") for m in ms}) != 1:
                raise CompareError(f"{key}: {form} of values with different units")
            xs = [_to_float(m.group("med")) for m in ms]
            sample = [m.group("med") for m in ms]
            lo, hi = min(xs), max(xs)
            med = statistics.median(xs)
            m = ms[0]
            num = (_like(sample[0], med) if form == "median"
                   else f"{_like(sample[0], lo)}–{_like(sample[0], hi)}")
            text = num if bare else m.group("pre") + num + m.group("suf")
        else:                                 # over the runs, per value
            out = []
            for m in ms:
                num = m.group("med") if form == "median" or not m.group("lo") \
                    else f"{m.group('lo')}–{m.group('hi')}"
                out.append(num if bare else m.group("pre") + num + m.group("suf"))
            text = " / ".join(out)
    return _decimals(text, nd)


def check_values(text: str, page: str, rows: Mapping[str, Mapping[str, Any]],
                 tables: Mapping[str, Any], results: Path = RESULTS, write: bool = False,
                 partial: bool = False, ns3_dir: Path = NS3_DIR) -> tuple[str, list[str]]:
    """Each value span must say what its row or run-table cell renders; --write updates
    the spans. partial: a check with part of the spec, which skips the spans of papers
    it does not hold."""
    problems = []
    papers = {k.split("/")[0] for k in rows}

    def span(m: "re.Match[str]") -> str:
        key, options, said = m.group(1), m.group(2).split(), m.group(3)
        if partial and not key.startswith(("run-table/", "ns3/")) \
                and key.split("/")[0] not in papers:
            return m.group(0)
        try:
            want = span_text(key, options, rows, tables, results, ns3_dir)
        except (CompareError, OSError, ValueError, KeyError) as e:
            problems.append(f"{page}: value span {key}: {e}")
            return m.group(0)
        if said != want:
            if write:
                return f"<!-- value:{key}{m.group(2)} -->{want}<!-- /value -->"
            problems.append(f"{page}: value span {key}{m.group(2)} says {said!r}, the data "
                            f"give {want!r}")
        return m.group(0)

    return VALUE_SPAN.sub(span, text), problems


# A measured number outside a table and a span is unchecked: on the pages of
# PROSE_PAGES, every number with a unit of UNITS in prose must be in a value span, be a
# paper's value (the word "paper" shortly before it, or <!-- paper --> right before it),
# or be on the page's allowlist in docs/prose-numbers.yaml, with a reason.
PROSE_NUMBERS = REPO / "docs" / "prose-numbers.yaml"
PROSE_PAGES = ("README.md", "docs/experiments/dcbt.md", "docs/experiments/cbt.md",
               "docs/experiments/feng.md", "docs/experiments/mcdt.md",
               "docs/experiments/upta.md")
UNITS = r"(?:%|kbit/s|Mbit/s|ms|packets|pkts|points|pts)"
_NUM = r"[+\-−]?\d(?:[\d,.]|\s(?=\d{3}\b))*"
PROSE_NUMBER = re.compile(rf"(?<![\w.])({_NUM}(?:\s?[–-]\s?{_NUM})?)\s?{UNITS}(?![\w/])")
PAPER_MARK = "<!-- paper -->"
# "the paper's 318 kbit/s", "where the paper has 0.4 %", "(paper: 35.7 %)"
PAPER_BEFORE = re.compile(r"\bpaper(?:'s|s')?(?: [\w-]+){0,2}\s*[:(]?\s*$", re.I)


def prose(text: str) -> str:
    """The page's prose: without code blocks, tables, computed tables and spans (each
    replaced by blank lines or nothing, so line numbers stay)."""
    def blank(m: "re.Match[str]") -> str:
        return "\n" * m.group(0).count("\n")
    text = re.sub(r"```.*?```", blank, text, flags=re.S)
    text = re.sub(r"<!-- (paper-compare|run-table):([\w-]+) -->.*?<!-- /\1:\2 -->", blank,
                  text, flags=re.S)
    text = VALUE_SPAN.sub(lambda m: "⟨value⟩" + blank(m), text)
    text = SPAN.sub(lambda m: "⟨verdict⟩" + blank(m), text)
    return "\n".join("" if line.lstrip().startswith("|") else line
                     for line in text.splitlines())


def unmarked_numbers(text: str, allowed: Mapping[str, str] = {}) -> list[tuple[int, str]]:
    """(line, number with unit) of each number in the prose that is in no value span, not
    a paper's value and not allowed."""
    out = []
    for n, line in enumerate(prose(text).splitlines(), 1):
        for m in PROSE_NUMBER.finditer(line):
            before = line[max(0, m.start() - 40):m.start()]
            if PAPER_BEFORE.search(before) or before.endswith(PAPER_MARK):
                continue
            found = " ".join(m.group(0).split())
            if found not in allowed:
                out.append((n, found))
    return out


def check_prose(texts: Mapping[Path, str], allowlist: Mapping[str, Any]) -> list[str]:
    """The PROSE_PAGES among texts: every measured number in a span or allowed."""
    problems = []
    for name, entries in (allowlist or {}).items():
        if name not in PROSE_PAGES:
            problems.append(f"prose-numbers.yaml: {name} is not one of the checked pages")
        for k, why in (entries or {}).items():
            if not str(why or "").strip():
                problems.append(f"prose-numbers.yaml: {name}: {k!r} has no reason")
            elif str(why).lstrip().lower().startswith("unchecked"):
                problems.append(f"prose-numbers.yaml: {name}: {k!r} is a run number left "
                                f"unchecked; put it in a value span, or do not quote it")
    for page, text in texts.items():
        name = _page_name(page)
        if name not in PROSE_PAGES:
            continue
        allowed = {str(k): v for k, v in ((allowlist or {}).get(name) or {}).items()}
        on_page = {found for _, found in unmarked_numbers(text)}
        for k in allowed:
            if k not in on_page:
                problems.append(f"prose-numbers.yaml: {name}: {k!r} is no longer in the page's "
                                f"prose; remove the entry")
        for n, found in unmarked_numbers(text, allowed):
            problems.append(f"{name}:{n}: {found!r} is a number in prose outside a value span "
                            f"(docs/verdicts.md); put it in one, or mark a paper value "
                            f"{PAPER_MARK}, or allow it in docs/prose-numbers.yaml with a reason")
    return problems


# ------------------------------------------------------------ tables of run values
# docs/run-tables.yaml: the tables of measured values that are not paper comparisons (the
# README's headline, per-run detail tables of the experiment pages). Each sits between
# <!-- run-table:NAME --> markers and must equal its rendering, as the paper tables do.
# NAME: {runs: [...], corner: "...", columns: [{header, args}], rows: [{label, args}],
#        decimals: N (optional)}; a cell is the metric of row args updated by column args,
#        in every run, joined by " / "; `decimals` reformats each number. A run may be a
#        list of folders, one measurement whose algorithms ran apart (load_run).
RUN_TABLES = REPO / "docs" / "run-tables.yaml"


def _decimals(text: str, nd: Optional[int]) -> str:
    if nd is None:
        return text
    return NUMBER.sub(lambda m: _like(m.group(0).split(".")[0] + ("." + "0" * nd if nd else ""),
                                      float(m.group(0).replace(" ", "").replace("−", "-"))),
                      text)


def run_table_cells(table: Mapping[str, Any], results: Path = RESULTS,
                    loaded: Optional[Mapping[str, Summaries]] = None) -> list[list[str]]:
    """The table's cells, row by row (without the label column): the metric in every run,
    joined by " / "."""
    loaded = loaded if loaded is not None else {_key(r): load_run(results, r)
                                                for r in table["runs"]}
    out = []
    for row in table["rows"]:
        nd = row.get("decimals", table.get("decimals"))
        cells = []
        for col in table["columns"]:
            spec = {**row.get("args", {}), **col.get("args", {})}
            if "text" in spec:
                cells.append(str(spec["text"]))
                continue
            cells.append(" / ".join(_decimals(value(loaded[_key(r)], spec), nd)
                                    for r in table["runs"]))
        out.append(cells)
    return out


def render_run_table(table: Mapping[str, Any], results: Path = RESULTS,
                     base: str = "docs/results") -> str:
    loaded = {_key(r): load_run(results, r) for r in table["runs"]}
    lines = ["| " + " | ".join([table.get("corner", "")] + [c["header"] for c in table["columns"]])
             + " |", "|---" + "|---:" * len(table["columns"]) + "|"]
    for row, cells in zip(table["rows"], run_table_cells(table, results, loaded)):
        lines.append("| " + " | ".join([row["label"]] + [_cell(c) for c in cells]) + " |")
    used = {spec.get("algorithm") for row in table["rows"] for col in table["columns"]
            for spec in [{**row.get("args", {}), **col.get("args", {})}]}
    warned = [f"⚠ {r} {a}: {len(s['warnings'])} validity warning"
              f"{'s' if len(s['warnings']) != 1 else ''}"
              for r in map(_key, table["runs"]) for a, s in loaded[r].items()
              if a in used and s.get("warnings")]
    lines += ["", "; ".join(warned) + "."] if warned else []
    folders = list(dict.fromkeys(n for r in table["runs"]
                                 for n in ([r] if isinstance(r, str) else r)))
    lines += ["", "Data: " + ", ".join(f"[docs/results/{n}/]({base}/{n}/)" for n in folders)
              + " (`docs/run-tables.yaml`, rendered by `tools/paper_compare.py`)."]
    return "\n".join(lines)


def _run_table_re(name: str) -> "re.Pattern[str]":
    return re.compile(rf"(<!-- run-table:{re.escape(name)} -->\n)(.*?)(\n<!-- /run-table:"
                      rf"{re.escape(name)} -->)", re.S)


def process_run_tables(texts: Mapping[Path, str], tables: Mapping[str, Any], results: Path,
                       write: bool, require: bool = True) -> tuple[dict[Path, str], list[str]]:
    """Each run table re-rendered in the one page that holds its markers (require=False:
    a table no given page holds is skipped, for a check of some pages only)."""
    out, problems = dict(texts), []
    for name, table in tables.items():
        holders = [p for p, t in out.items() if f"<!-- run-table:{name} -->" in t]
        if not holders and not require:
            continue
        if len(holders) != 1:
            problems.append(f"run table {name}: its markers must be in exactly one page, found "
                            f"in {len(holders)}")
            continue
        page = holders[0]
        try:
            rendered = render_run_table(table, results, link_base(page, results))
        except (CompareError, OSError, ValueError, KeyError) as e:
            problems.append(f"run table {name}: {e}")
            continue
        m = _run_table_re(name).search(out[page])
        if not m:
            problems.append(f"run table {name}: malformed markers in {_page_name(page)}")
        elif m.group(2) != rendered:
            if write:
                out[page] = out[page][:m.start(2)] + rendered + out[page][m.end(2):]
            else:
                problems.append(f"run table {name}: the table in {_page_name(page)} differs "
                                f"from its data; run 'python tools/paper_compare.py --write'")
    return out, problems


def _marker_re(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- paper-compare:{re.escape(name)} -->\n)(.*?)(\n<!-- /paper-compare:"
                      rf"{re.escape(name)} -->)", re.S)


def process(text: str, spec: Mapping[str, Any], results: Path, write: bool,
            base: str = "docs/results", page: str = "README.md") -> tuple[str, list[str]]:
    """(the page's text with every table of the spec re-rendered, problems). A problem:
    a paper in the spec whose markers the page lacks, a table that differs, a metric
    error. base: the results folder as the page's links see it (link_base)."""
    problems = []
    for name, paper in spec.items():
        try:
            table = render(paper, results, base)
        except (CompareError, OSError, ValueError) as e:
            problems.append(f"{name}: {e}")
            continue
        m = _marker_re(name).search(text)
        if not m:
            problems.append(f"{name}: {page} has no <!-- paper-compare:{name} --> block")
            continue
        if m.group(2) != table:
            if write:
                text = text[:m.start(2)] + table + text[m.end(2):]
            else:
                problems.append(f"{name}: the table in {page} differs from its data; run "
                                f"'python tools/paper_compare.py --write' and review the diff")
    return text, problems


def default_pages(root: Path = REPO) -> list[Path]:
    """README.md and docs/**/*.md, without the run data under docs/results."""
    docs = root / "docs"
    pages = [root / "README.md"] + sorted(p for p in docs.rglob("*.md")
                                         if (docs / "results") not in p.parents)
    return [p for p in pages if p.is_file()]


def locate(spec: Mapping[str, Any], texts: Mapping[Path, str]) -> tuple[dict[Path, dict[str, Any]],
                                                                       list[str]]:
    """-> ({page: the part of the spec whose markers it holds}, problems): a paper whose
    markers no page holds, or more than one page holds, is a problem."""
    by_page: dict[Path, dict[str, Any]] = {}
    problems = []
    for name, paper in spec.items():
        holders = [p for p, t in texts.items() if f"<!-- paper-compare:{name} -->" in t]
        if len(holders) != 1:
            where = ", ".join(_page_name(p) for p in holders) or "no page"
            problems.append(f"{name}: <!-- paper-compare:{name} --> must be in exactly one "
                            f"page, found in {where}")
            continue
        by_page.setdefault(holders[0], {})[name] = paper
    return by_page, problems


def _page_name(page: Path) -> str:
    p = page.resolve()
    return p.relative_to(REPO).as_posix() if p.is_relative_to(REPO) else str(page)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=Path, nargs="+",
                    help="pages holding the tables (default: README.md and docs/**/*.md "
                         "but docs/results)")
    ap.add_argument("--spec", type=Path, default=SPEC)
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--run-tables", type=Path, default=RUN_TABLES)
    ap.add_argument("--prose-numbers", type=Path, default=PROSE_NUMBERS)
    ap.add_argument("--ns3", type=Path, default=NS3_DIR,
                    help="the ns-3 references' JSON files (value spans ns3/PAPER/...)")
    ap.add_argument("--write", action="store_true", help="rewrite the tables in their pages")
    a = ap.parse_args(argv)
    try:   # the controller's strict loader: a duplicated key is an error, not "last wins"
        spec = load_yaml(a.spec.read_text(), source=str(a.spec)) or {}
    except ValueError as err:
        print(f"paper_compare: {err}", file=sys.stderr)
        return 2
    texts = {page: page.read_text() for page in (a.pages or default_pages())}
    by_page, problems = locate(spec, texts)
    try:
        tables = load_yaml(a.run_tables.read_text(), source=str(a.run_tables)) or {} \
            if a.run_tables.is_file() else {}
    except ValueError as err:
        print(f"paper_compare: {err}", file=sys.stderr)
        return 2
    try:
        allowlist = load_yaml(a.prose_numbers.read_text(), source=str(a.prose_numbers)) or {} \
            if a.prose_numbers.is_file() else {}
    except ValueError as err:
        print(f"paper_compare: {err}", file=sys.stderr)
        return 2
    new_texts, run_table_problems = process_run_tables(texts, tables, a.results, a.write,
                                                       require=a.pages is None)
    problems += run_table_problems
    texts_before = texts
    texts = new_texts
    new_texts = dict(texts)
    for page, part in by_page.items():
        new, page_problems = process(texts[page], part, a.results, a.write,
                                     base=link_base(page, a.results), page=_page_name(page))
        problems += page_problems
        new_texts[page] = new
    try:
        rows = evaluated_rows(spec, a.results)
    except (CompareError, OSError, ValueError) as e:
        rows = {}
        problems.append(str(e))
    computed = {k: r["verdict"] for k, r in rows.items()}
    for page, text in new_texts.items():
        if any(Path(os.path.abspath(page)).as_posix().endswith("/" + w)
               for w in WORD_DEFINING_PAGES):
            new, word_problems = text, []
        else:
            new, word_problems = check_words(text, _page_name(page), computed, a.write)
        problems += word_problems
        if not any(Path(os.path.abspath(page)).as_posix().endswith("/" + w)
                   for w in WORD_DEFINING_PAGES):
            new, value_problems = check_values(
                new, _page_name(page), rows, tables, a.results, a.write,
                partial=a.spec != SPEC, ns3_dir=a.ns3)
            problems += value_problems
        if a.write and new != texts_before[page]:
            page.write_text(new)
            print(f"paper_compare: rewrote {_page_name(page)}")
    problems += check_prose({p: p.read_text() if a.write else new_texts[p] for p in new_texts},
                            allowlist)
    for p in problems:
        print(f"paper_compare: {p}", file=sys.stderr)
    if not problems:
        counts: dict[str, int] = {}
        for v in computed.values():
            counts[v.split(" (")[0].split(":")[0]] = counts.get(v.split(" (")[0].split(":")[0], 0) + 1
        print(f"paper_compare: {len(spec)} paper tables match their data; verdicts: "
              + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
