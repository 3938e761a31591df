"""analysis.py on a synthetic run directory whose every number is worked out by hand.

The run (t0 = T0, two phases p1 = [0, 1) s, p2 = [1, 2) s, bottleneck 3000 kbit/s):

  flow 1 (TCP): 118 500 payload bytes (125 segments of 948) received at 0.5 s and at 1.5 s
  flow 2 (TCP): 118 500 bytes at 0.5 s only            (starved in p2: counts as 0)
  flow 3 (MM_APP, tagged): seq k sent at k * 0.1 s, 20 packets of 1000 bytes, received
          10 ms later (seq 5: 30 ms later); seqs 3, 15, 16 lost.

TCP bytes count at IP level: 118 500 * 1000 / 948 = 125 000 bytes -> 1000 kbit/s over 1 s.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

import mmt_testenv

from mmaqm_exp import analysis, metrics, report
from mmaqm_exp.analysis import interp_sent, seq_range_sent_in, tcp_ip_bytes, value_at
from mmaqm_exp.network import parse_proc_net_dev_rx_packets
from mmaqm_exp.scenario import parse_scenario
from mmaqm_exp.traffic import MANIFEST, TcpGroupFiles, TrafficResult, UdpSenderFiles, UdpSinkFiles

T0 = 1_700_000_000_000_000_000
S = 1_000_000_000  # ns per second
LOST = {3, 15, 16}


# --------------------------------------------------------------------------- pure helpers


def test_tcp_ip_bytes():
    assert tcp_ip_bytes(948, 948, 1000) == 1000  # one full segment -> one 1000-byte packet
    assert tcp_ip_bytes(118_500, 948, 1000) == 125_000
    assert tcp_ip_bytes(960, 960, 1000) == 1000  # timestamps off: 960-byte payload


def test_interp_sent_and_seq_ranges():
    log = [(0, 0), (1000, 10), (3000, 10), (4000, 30)]
    assert interp_sent(log, -5) == 0.0          # before the start row
    assert interp_sent(log, 500) == 5.0         # halfway between 0 and 10
    assert interp_sent(log, 2000) == 10.0       # flat while nothing was sent
    assert interp_sent(log, 3500) == 20.0
    assert interp_sent(log, 9999) == 30.0       # after the end row: the total
    assert interp_sent([], 10) == 0.0
    # packets sent in [500, 3500): seq 5 .. 19
    assert seq_range_sent_in(log, 500, 3500) == (5, 20)


def test_value_at_is_last_sample_at_or_before():
    ts = [10, 20, 30]
    assert value_at(ts, "abc", 20) == "b"
    assert value_at(ts, "abc", 29) == "b"
    assert value_at(ts, "abc", 99) == "c"
    assert value_at(ts, "abc", 0) == "a"  # before the first sample: the first
    with pytest.raises(ValueError):
        value_at([], [], 0)


# --------------------------------------------------------------------------- synthetic run


def _scenario():
    return parse_scenario({
        "name": "syn", "duration_s": 2,
        "phases": [{"name": "p1", "start_s": 0, "end_s": 1}, {"name": "p2", "start_s": 1, "end_s": 2}],
        "flows": [{"kind": "tcp", "count": 2, "src": "tcp1", "dst": "tcp2"},
                  {"kind": "mmapp", "count": 1, "src": "mm1", "dst": "mm2"}],
    })


def _write_csv(path: Path, header, rows) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def _cls_reading(port, cls, arr, admits, deps, drops):
    return {"port": port, "class": cls, "arrivals": {"packets": arr, "bytes": 1000 * arr},
            "admits": {"packets": admits, "bytes": 1000 * admits},
            "departures": {"packets": deps, "bytes": 1000 * deps},
            "drops": {r: {"packets": drops.get(r, 0), "bytes": 1000 * drops.get(r, 0)}
                      for r in analysis.DROP_REASONS}}


def _write_counters(path: Path) -> None:
    """Port 3 (the bottleneck: it drops) and port 1 (no drops); UNTAGGED never reported.

    t (s)          -0.5  0   0.5  1   1.5  2   2.5
    TCP arrivals     0  10   30  50   80 100  100
        RED_EARLY    0   0    2   3    6   8    8
        QUEUE_LIMIT  0   0    0   1    1   1    1
        admits       0  10   28  46   73  91   91
        departures   0  10   24  46   70  91   91   -> occupancy 0 0 4 0 3 0 0
    TAGGED arrivals  0   5   10  15   20  25   25
        CLASS_TH.    0   0    1   1    2   2    2
        admits       0   5    9  14   18  23   23
        departures   0   5    8  14   18  23   23   -> occupancy 0 0 1 0 0 0 0
    """
    ts = [-0.5, 0, 0.5, 1, 1.5, 2, 2.5]
    tcp = dict(arr=[0, 10, 30, 50, 80, 100, 100], red=[0, 0, 2, 3, 6, 8, 8], ql=[0, 0, 0, 1, 1, 1, 1],
               adm=[0, 10, 28, 46, 73, 91, 91], dep=[0, 10, 24, 46, 70, 91, 91])
    tag = dict(arr=[0, 5, 10, 15, 20, 25, 25], ct=[0, 0, 1, 1, 2, 2, 2],
               adm=[0, 5, 9, 14, 18, 23, 23], dep=[0, 5, 8, 14, 18, 23, 23])
    p1 = [0, 1, 2, 3, 4, 5, 5]
    with open(path, "w") as f:
        for i, t in enumerate(ts):
            rd = [
                _cls_reading(3, "TCP", tcp["arr"][i], tcp["adm"][i], tcp["dep"][i],
                             {"RED_EARLY": tcp["red"][i], "QUEUE_LIMIT": tcp["ql"][i]}),
                _cls_reading(3, "TAGGED", tag["arr"][i], tag["adm"][i], tag["dep"][i],
                             {"CLASS_THRESHOLD": tag["ct"][i]}),
                _cls_reading(1, "TCP", p1[i], p1[i], p1[i], {}),
            ]
            f.write(json.dumps({"t_ns": T0 + int(t * S), "switch": "r1", "readings": rd,
                                "active_flows": {"3": {"TCP": 2, "TAGGED": 1, "UNTAGGED": 0}}}) + "\n")
            if i == 3:
                f.write("\n")  # blank lines are ignored


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    sc = _scenario()
    tg = TcpGroupFiles(0, "tcp1", "tcp2", 5201, [1, 2], "tcp-g0-recv.csv", "tcp-g0-recv.out",
                       "tcp-g0-send.json", 1000, 960, 18960)
    sink = UdpSinkFiles("mm2", 5001, [3], "udp-recv-mm2.csv", "udp-recv-mm2.out")
    us = UdpSenderFiles(3, 1, "mmapp", None, "udp-send-3.csv", "udp-send-3.out")
    res = TrafficResult(tmp_path, T0, sc, 3000.0, [tg], [sink], [us],
                        starts={1: {"scheduled_ns": T0, "actual_ns": T0 + 1_000_000, "late_ms": 1.0},
                                3: {"scheduled_ns": T0, "actual_ns": T0 + 2_500_000, "late_ms": 2.5}},
                        cpu_s={"tcp-g0-recv": 0.5}, end_ns=T0 + 2 * S)
    _write_csv(tmp_path / tg.recv_csv, ("t_ns", "flow_id", "bytes"),
               [(T0 + S // 2, 1, 118_500), (T0 + S // 2, 2, 118_500), (T0 + 3 * S // 2, 1, 118_500)])
    (tmp_path / tg.recv_out).write_text('{"live": true, "t_ns": 1, "bytes": 5}\n{"role": "tcp-recv"}\n')
    (tmp_path / tg.send_json).write_text(json.dumps(
        {"flows": {"1": {"snd_mss": 948, "sport": 40001, "total_retrans": 2},
                   "2": {"snd_mss": 948, "sport": 40002, "total_retrans": 0}}}))
    rows = []
    for k in range(20):
        if k in LOST:
            continue
        send = T0 + k * S // 10
        rows.append((3, k, send, send + (30 if k == 5 else 10) * 1_000_000, 1000, 4, 46))
    _write_csv(tmp_path / sink.recv_csv, ("flow_id", "seq", "send_ts_ns", "recv_ts_ns", "bytes", "scale", "dscp"), rows)
    (tmp_path / sink.recv_out).write_text("{}\n")
    hdr = ("t_ns", "event", "scale", "rate_kbps", "srtt_us", "rtt_sample_us", "sent",
           "fb_highest_seq", "fb_received", "fb_lost")
    _write_csv(tmp_path / us.log_csv, hdr, [(T0, "start", 0, 300.0, -1, -1, 0, -1, -1, -1),
                                            (T0 + 2 * S, "end", 4, 1100.0, 20000, -1, 20, -1, -1, -1)])
    (tmp_path / us.out_json).write_text(json.dumps({"role": "send", "sent": 20}) + "\n")
    (tmp_path / MANIFEST).write_text(json.dumps(res.to_json()))
    _write_counters(tmp_path / "counters.jsonl")
    return tmp_path


def test_throughput_and_fairness_per_phase(run_dir: Path):
    s = analysis.analyze(run_dir, counters_jsonl=run_dir / "counters.jsonl")
    p1, p2, run = s["phases"]["p1"], s["phases"]["p2"], s["run"]
    # p1: flows 1 and 2 got 125 000 IP bytes in 1 s = 1000 kbit/s; flow 3 got 9 packets = 72 kbit/s
    assert p1["per_flow_kbps"] == {"1": 1000.0, "2": 1000.0, "3": 72.0}
    # p2: flow 2 is active but got nothing -> 0; flow 3 got 8 packets = 64 kbit/s
    assert p2["per_flow_kbps"] == {"1": 1000.0, "2": 0.0, "3": 64.0}
    # Jain p1 = 2072^2 / (3 * (1000^2 + 1000^2 + 72^2)) = 4293184 / 6015552
    assert p1["jain"] == pytest.approx(4293184 / 6015552, abs=1e-6)
    # Jain p2 = 1064^2 / (3 * (1000^2 + 0 + 64^2)) = 1132096 / 3012288
    assert p2["jain"] == pytest.approx(1132096 / 3012288, abs=1e-6)
    # class averages: p2 TCP = (1000 + 0) / 2
    assert p2["class_avg_per_flow_kbps"] == {"TCP": 500.0, "TAGGED": 64.0, "UNTAGGED": None}
    assert p1["class_total_kbps"] == {"TCP": 2000.0, "TAGGED": 72.0, "UNTAGGED": 0.0}
    assert p1["class_share"]["TCP"] == pytest.approx(2000 / 2072, abs=1e-6)
    assert p1["class_share"]["TAGGED"] == pytest.approx(72 / 2072, abs=1e-6)
    assert p1["fair_share_kbps"] == 1000.0 and p1["utilization"] == pytest.approx(2072 / 3000, abs=1e-6)
    assert p1["n_flows_by_class"] == {"TCP": 2, "TAGGED": 1, "UNTAGGED": 0}
    # whole run: flow 1 250 000 B / 2 s = 1000, flow 2 500, flow 3 17 packets = 68 kbit/s
    assert run["per_flow_kbps"] == {"1": 1000.0, "2": 500.0, "3": 68.0}


def test_mm_loss_delay_jitter(run_dir: Path):
    s = analysis.analyze(run_dir)
    u1 = s["phases"]["p1"]["udp_flows"]["3"]
    # p1: seqs 0..9 sent (sender log: 10 packets by 1 s), seq 3 lost
    assert (u1["sent"], u1["received"], u1["loss"]) == (10, 9, 0.1)
    # delays: eight of 10 ms and one of 30 ms: mean 110/9, population std sqrt(355.5556/9)
    assert u1["mean_ms"] == pytest.approx(110 / 9, abs=1e-3)
    assert (u1["min_ms"], u1["max_ms"], u1["spread_ms"]) == (10.0, 30.0, 20.0)
    assert u1["std_ms"] == pytest.approx(math.sqrt((8 * (10 - 110 / 9) ** 2 + (30 - 110 / 9) ** 2) / 9), abs=1e-3)
    assert u1["std_ms"] == pytest.approx(6.285, abs=1e-3)
    # RFC 3550: |D| = 20 at 4->5 and 5->6, else 0:
    # J = 20/16 = 1.25; 1.25 + (20 - 1.25)/16 = 2.421875; then three times * 15/16 = 1.995564
    assert u1["jitter_ms"] == pytest.approx(2.421875 * (15 / 16) ** 3, abs=1e-4)
    u2 = s["phases"]["p2"]["udp_flows"]["3"]
    assert (u2["sent"], u2["received"], u2["loss"]) == (10, 8, 0.2)
    assert (u2["mean_ms"], u2["spread_ms"], u2["std_ms"], u2["jitter_ms"]) == (10.0, 0.0, 0.0, 0.0)
    c = s["run"]["udp_class"]["TAGGED"]
    assert (c["flows"], c["sent"], c["received"], c["loss"]) == (1, 20, 17, 0.15)
    assert c["spread_ms"] == 20.0 and c["jitter_ms_mean"] == c["jitter_ms_max"]
    assert s["run"]["udp_class"]["UNTAGGED"] is None
    ser = s["mm_delay_series"]
    assert ser["flow_id"] == 3 and len(ser["t_s"]) == 17 and ser["delay_ms"][4] == 30.0  # seq 3 lost: index 4 = seq 5


def test_bandwidth_variation_and_flow_entries(run_dir: Path):
    s = analysis.analyze(run_dir)
    f1, f2, f3 = (s["flows"][k] for k in ("1", "2", "3"))
    # two 1 s windows fit in the 2 s span, 8 s windows do not
    assert f1["bandwidth_variation"] == {"1s": {"windows": 2, "mean_kbps": 1000.0, "std_kbps": 0.0, "cov": 0.0}}
    # flow 2: windows 1000, 0 -> mean 500, std 500, cov 1
    assert f2["bandwidth_variation"]["1s"] == {"windows": 2, "mean_kbps": 500.0, "std_kbps": 500.0, "cov": 1.0}
    # flow 3: 72, 64 -> mean 68, std 4, cov 4/68
    assert f3["bandwidth_variation"]["1s"]["cov"] == pytest.approx(4 / 68, abs=1e-6)
    assert s["bandwidth_variation_by_class"]["TCP"]["1s"] == {"flows": 2, "cov_mean": 0.5}
    assert f1["tcp"]["total_retrans"] == 2 and f1["start_late_ms"] == 1.0 and f2["start_late_ms"] is None
    assert f1["received_bytes_ip"] == 250_000
    assert s["start_late_ms_max"] == 2.5 and s["traffic_cpu_s"] == {"tcp-g0-recv": 0.5}
    assert s["scenario"]["blast_phase"] is None  # no untagged flow
    json.dumps(s)  # JSON-serialisable


def test_bandwidth_variation_curve(run_dir: Path):
    """feng Fig. 3. Flow 1 got 125 000 IP bytes at 0.5 s and at 1.5 s of its 2 s span.
    0.1 s windows: 20, two of them 10 000 kbit/s: mean 1000, E[x^2] = 2 * 10000^2 / 20
    = 1e7, std = sqrt(1e7 - 1e6) = 3000; 0.2 s: two of 10 at 5000: sqrt(5e6 - 1e6) = 2000;
    0.5 s: two of 4 at 2000: sqrt(2e6 - 1e6) = 1000; 1 s: 1000, 1000: 0. 2 s: only one fits."""
    s = analysis.analyze(run_dir)
    c = s["flows"]["1"]["bandwidth_variation_curve"]
    assert c == {"windows_s": [0.1, 0.2, 0.5, 1.0], "std_kbps": [3000.0, 2000.0, 1000.0, 0.0]}
    # the smoothing that brings it to 1500 kbit/s: between 0.2 s and 0.5 s, 0.2 + 0.3 * 500 / 1000
    assert metrics.smoothing_to_reach_s(list(zip(c["windows_s"], c["std_kbps"])), 1500.0) == \
        pytest.approx(0.35)


def test_switch_counters(run_dir: Path):
    s = analysis.analyze(run_dir, counters_jsonl=run_dir / "counters.jsonl")
    sw = s["switch"]
    assert sw["bottleneck"] == {"switch": "r1", "port": 3, "inferred": True}  # the port that drops
    run = sw["ports"]["r1:3"]["run"]
    # run = value at 2 s - value at 0 s
    assert run["TCP"] == {"arrivals": 90, "admits": 81, "departures": 81,
                          "drops": {"QUEUE_LIMIT": 1, "RED_EARLY": 8, "RED_FORCED": 0, "CLASS_THRESHOLD": 0,
                                    "FRED_MAXQ": 0, "FRED_TWICE_AVGCQ": 0, "FRED_STRIKE": 0,
                                    "UPTA_USELESS": 0, "UPTA_FAIR_SHARE": 0, "TAG_GUARD": 0},
                          "drops_total": 9, "loss": 0.1}
    assert run["TAGGED"]["drops"]["CLASS_THRESHOLD"] == 2 and run["TAGGED"]["loss"] == 0.1
    assert run["UNTAGGED"]["arrivals"] == 0 and run["UNTAGGED"]["loss"] is None
    ph = sw["ports"]["r1:3"]["phases"]
    assert (ph["p1"]["TCP"]["arrivals"], ph["p1"]["TCP"]["drops"]["RED_EARLY"], ph["p1"]["TCP"]["drops_total"]) == (40, 3, 4)
    assert (ph["p2"]["TCP"]["arrivals"], ph["p2"]["TCP"]["drops"]["RED_EARLY"], ph["p2"]["TCP"]["loss"]) == (50, 5, 0.1)
    assert sw["ports"]["r1:1"]["run"]["TCP"]["arrivals"] == 4
    occ = sw["occupancy"]
    assert occ["t_s"] == [-0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5]
    assert occ["TCP"] == [0, 0, 4, 0, 3, 0, 0] and occ["TAGGED"] == [0, 0, 1, 0, 0, 0, 0]
    assert occ["total"] == [0, 0, 5, 0, 3, 0, 0]
    # time-weighted: p1 TCP 4 for half the phase = 2.0, TAGGED 0.5; p2 TCP 3 for half = 1.5
    assert occ["mean_pkts_by_phase"]["p1"] == {"TCP": 2.0, "TAGGED": 0.5, "UNTAGGED": 0.0, "total": 2.5}
    assert occ["mean_pkts_by_phase"]["p2"] == {"TCP": 1.5, "TAGGED": 0.0, "UNTAGGED": 0.0, "total": 1.5}
    assert sw["active_flows"]["TCP"][0] == 2
    # an explicit bottleneck is used as given
    s2 = analysis.analyze(run_dir, counters_jsonl=run_dir / "counters.jsonl", bottleneck=("r1", 1))
    assert s2["switch"]["bottleneck"]["inferred"] is False and set(s2["switch"]["occupancy"]["TCP"]) == {0}
    with pytest.raises(ValueError, match="r1:7 has no counter samples"):
        analysis.analyze(run_dir, counters_jsonl=run_dir / "counters.jsonl", bottleneck=("r1", 7))


def test_write_outputs_and_report(run_dir: Path, tmp_path: Path):
    s = analysis.analyze(run_dir, counters_jsonl=run_dir / "counters.jsonl")
    sj, fc = analysis.write_outputs(s, run_dir)
    assert (sj, fc) == (run_dir / "summary.json", run_dir / "flows.csv")
    # the file holds the summary: its schema name and the hand-worked numbers, read back
    written = json.loads(sj.read_text())
    assert written["schema"] == "mmaqm-summary/1"
    assert written["phases"]["p1"]["per_flow_kbps"] == {"1": 1000.0, "2": 1000.0, "3": 72.0}
    assert written["run"]["udp_class"]["TAGGED"]["loss"] == 0.15
    with open(fc, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["phase"], r["flow_id"]) for r in rows] == [
        (p, str(i)) for p in ("p1", "p2", "run") for i in (1, 2, 3)]
    r = rows[2]  # p1, flow 3
    assert (r["throughput_kbps"], r["sent_pkts"], r["received_pkts"], r["loss"], r["delay_spread_ms"]) == (
        "72.0", "10", "9", "0.1", "20.0")
    assert rows[0]["sent_pkts"] == "" and rows[0]["bw_cov_1s"] == ""  # TCP; per-phase row
    assert rows[7]["bw_cov_1s"] == "1.0"  # run row of flow 2

    other = json.loads(json.dumps(s))
    other["phases"]["p1"]["jain"] = 0.5
    table = report.comparison_table({"RED": s, "DCBT": other})
    lines = table.splitlines()
    assert lines[1].split()[:4] == ["algorithm", "TCP", "TAG", "UNT"]
    red = lines[3].split()
    # p1 TCP TAG UNT | p2 TCP TAG UNT | Jain p1 p2 | loss% jitter mean max spread std |
    # TCP share (no blast)
    assert red[:7] == ["RED", "1000", "72", "-", "500", "64", "-"]
    assert red[7:9] == ["0.714", "0.376"] and red[9] == "15.00" and red[13] == "20.0"
    mm = s["run"]["udp_class"]["TAGGED"]
    assert red[11:13] == [f"{mm['mean_ms']:.1f}", f"{mm['max_ms']:.1f}"]
    assert red[14] == f"{mm['std_ms']:.2f}" and red[15] == "-"
    assert lines[4].split()[7] == "0.500"
    # feng section 3 table. TCP flows 1 and 2: 1 s std 0 and 500 (mean 250), cov 0 and 1;
    # 0.1 s std 3000 (see test_bandwidth_variation_curve) and, for flow 2 (one 10 000 kbit/s
    # window of 20), sqrt(1e8 / 20 - 500^2) = sqrt(4.75e6) = 2179.45: mean 2589.7
    bw = report.bandwidth_variation_table({"RED": s}).splitlines()
    assert bw[0].split()[:4] == ["algorithm", "class", "flows", "kbit/s"]
    assert bw[1].split() == ["RED", "TCP", "2", "750", "250", "0.500", "-", "-", "2590", "(0.1", "s)", "0.10"]
    assert bw[2].split()[:3] == ["RED", "TAGGED", "1"] and len(bw) == 3  # no UNTAGGED flow
    # DCBT's TCP curve, mean of the two flows: 5000, 3500, 2000, 500 at 0.1, 0.2, 0.5, 1 s;
    # RED's 2589.7 is reached at 0.2 + 0.3 * (3500 - 2589.72) / (3500 - 2000) = 0.382 s
    other["flows"]["1"]["bandwidth_variation_curve"]["std_kbps"] = [4000.0, 3000.0, 2000.0, 1000.0]
    other["flows"]["2"]["bandwidth_variation_curve"]["std_kbps"] = [6000.0, 4000.0, 2000.0, 0.0]
    bw2 = report.bandwidth_variation_table({"RED": s, "DCBT": other}).splitlines()
    assert bw2[3].split()[:2] == ["DCBT", "TCP"] and bw2[3].split()[-1] == "0.38"
    paths = report.write_report({"RED": s, "DCBT": other}, tmp_path / "rep")
    assert paths["bw_table"].read_text() == "\n".join(bw2) + "\n"
    for k in ("fig8", "fig11", "queue", "delay", "bw_variation"):
        assert paths[k].stat().st_size > 5000 and paths[k].read_bytes()[:4] == b"\x89PNG"
    # runs without counter data still plot (a note instead of the queue)
    s_nc = analysis.analyze(run_dir)
    assert s_nc["switch"] is None
    report.plot_queue_occupancy({"RED": s_nc}, tmp_path / "q.png")


# ---------------------------------------------------------------- switch keep-up check
def _sample(switch: str, t_s: float, arrivals: list[int], discards: dict[str, int]) -> dict:
    return {"switch": switch, "t_ns": int(t_s * 1e9),
            "readings": [{"port": i, "class": "TCP", "arrivals": {"packets": n, "bytes": 0}}
                         for i, n in enumerate(arrivals)],
            "ingress_discards": discards}


KEEPUP_SAMPLES = [
    _sample("r1", 0.0, [100, 5], {"1": 2}),       # before the traffic: 107 seen
    _sample("r1", 1.0, [600, 5], {"1": 2}),       # 500 in the first second
    _sample("r1", 2.0, [1600, 5], {"1": 2}),      # 1000 in the second
    _sample("r1", 3.0, [2100, 5], {"1": 3}),      # 501 in the third: 2107 - 107 = 2001
]


def test_pipeline_packets_counts_arrivals_and_discards():
    assert analysis.pipeline_packets(KEEPUP_SAMPLES[0]) == 107
    assert analysis.pipeline_packets({"readings": []}) == 0


def test_switch_keepup_passes_when_every_received_packet_was_counted():
    keepup = analysis.switch_keepup(KEEPUP_SAMPLES, {"r1": 5000}, {"r1": 7001}, int(0.5e9), 3.0)
    k = keepup["r1"]
    assert (k["ok"], k["kernel_rx_pkts"], k["pipeline_pkts"], k["lost_before_aqm_pkts"]) == (
        True, 2001, 2001, 0)
    assert k["processed_pps"] == pytest.approx(2001 / 3, abs=0.1)
    assert k["peak_processed_pps"] == pytest.approx(1000.0)
    assert analysis.keepup_problem(keepup) is None


def test_switch_keepup_fails_beyond_the_tolerance_and_says_how_much():
    # 2001 counted of 2101 received: 100 lost > max(20, 0.1 %)
    keepup = analysis.switch_keepup(KEEPUP_SAMPLES, {"r1": 0}, {"r1": 2101}, int(0.5e9), 3.0)
    assert keepup["r1"]["ok"] is False and keepup["r1"]["lost_before_aqm_pkts"] == 100
    problem = analysis.keepup_problem(keepup)
    assert "r1 fell behind" in problem and "100 = 4.8 % lost before the AQM" in problem
    assert "forwarded 667 pps on average (1000 pps in its busiest second)" in problem
    assert "offered it 700 pps" in problem
    # 20 lost is within the tolerance
    assert analysis.switch_keepup(KEEPUP_SAMPLES, {"r1": 0}, {"r1": 2021}, int(0.5e9), 3.0)["r1"]["ok"]


def test_switch_keepup_needs_a_sample_before_the_traffic():
    keepup = analysis.switch_keepup(KEEPUP_SAMPLES, {"r1": 0}, {"r1": 2001}, int(-1e9), 3.0)
    assert keepup["r1"]["checked"] is False
    assert "not checked" in analysis.keepup_problem(keepup)


def test_parse_proc_net_dev_rx_packets():
    text = ("Inter-|   Receive                            |  Transmit\n"
            " face |bytes    packets errs drop fifo frame compressed multicast|bytes packets\n"
            "    lo:       0       0    0    0    0     0          0         0        0       0\n"
            " r1-p1: 1514000    1000    0    0    0     0          0         0     6000     100\n")
    assert parse_proc_net_dev_rx_packets(text) == {"lo": 0, "r1-p1": 1000}


def test_packet_accounting_table_hand_computed():
    # dcbt Tables 1-2: 30 s run; TCP 1000 arrivals, 40 dropped, 950 departed ->
    # 4.00 %, 950 * 1000 B * 8 / 30 s = 253 kbit/s; tagged 200 arrivals, 25 dropped -> 12.50 %
    def cls(arrivals, drops, departures):
        return {"arrivals": arrivals, "drops_total": drops, "departures": departures}
    s = {"scenario": {"duration_s": 30},
         "switch": {"bottleneck": {"switch": "r1", "port": 4},
                    "ports": {"r1:4": {"run": {"TCP": cls(1000, 40, 950),
                                               "TAGGED": cls(200, 25, 175),
                                               "UNTAGGED": cls(0, 0, 0)}}}}}
    text = report.packet_accounting_table({"DCBT": s, "none": {"scenario": {"duration_s": 30}}})
    rows = [line.split() for line in text.splitlines()]
    assert rows[1] == ["DCBT", "950", "4.00", "253", "175", "12.50"]
    assert rows[2] == ["none", "-", "-", "-", "-", "-"]


def test_validity_warnings_for_low_utilisation_and_a_saturated_machine():
    summary = {"phases": {"a": {"utilization": 0.95}, "b": {"utilization": 0.79}},
               "cpu": {"machine": {"mean_pct": 190.0, "max_pct": 200.0, "samples": 3}}}
    assert analysis.validity_warnings(summary, nproc=2) == [
        "phase b: bottleneck utilisation 0.790 < 0.8",
        "machine CPU saturated: 190 % mean of 200 % over the traffic"]
    # 189 % of 200 is below 95 %; 0.80 is not below the bound; no nproc: no CPU check
    summary["phases"]["b"]["utilization"] = 0.80
    summary["cpu"]["machine"]["mean_pct"] = 189.0
    assert analysis.validity_warnings(summary, nproc=2) == []
    summary["cpu"]["machine"]["mean_pct"] = 400.0
    assert analysis.validity_warnings(summary) == []


def test_a_phase_without_tcp_is_not_held_to_the_utilisation_bound():
    # cbt's ProShare-only phases: six 210 kbit/s flows on a 10 Mbit/s link
    summary = {"phases": {
        "proshare": {"utilization": 0.12, "n_flows_by_class": {"TCP": 0, "TAGGED": 6}},
        "tcp": {"utilization": 0.12, "n_flows_by_class": {"TCP": 240, "TAGGED": 6}}}}
    assert analysis.validity_warnings(summary) == [
        "phase tcp: bottleneck utilisation 0.120 < 0.8"]


def test_samples_recorded_before_fred_report_only_their_own_drop_reasons() -> None:
    """Runs archived before FRED existed have no FRED reasons in their counter
    samples; their per-class deltas keep the four reasons they had, so that the
    archived summaries recompute exactly (tools/archive_run.py)."""
    old = {"port": 3, "class": "TCP", "arrivals": {"packets": 5}, "admits": {"packets": 4},
           "departures": {"packets": 4},
           "drops": {r: {"packets": int(r == "RED_EARLY")} for r in analysis.BASE_DROP_REASONS}}
    flat = analysis._flatten(old)
    assert [k for k in flat if k.startswith("drop:")] == [f"drop:{r}" for r in analysis.BASE_DROP_REASONS]
    new = {**old, "drops": {**old["drops"], "FRED_STRIKE": {"packets": 2}}}
    assert analysis._flatten(new)["drop:FRED_STRIKE"] == 2


def test_drop_reasons_are_the_programs() -> None:
    from mmaqm import p4constants as C
    assert set(analysis.DROP_REASONS) == set(C.DROP_REASONS)


def test_fred_slot_summary_from_controller_samples() -> None:
    samples = [{"switch": "r1", "fred_slots": {"3": {"flows": 10, "sharing": 0}}},
               {"switch": "r1", "fred_slots": {"3": {"flows": 30, "sharing": 2}}},
               {"switch": "r2", "fred_slots": {"3": {"flows": 99, "sharing": 99}}},   # other switch
               {"switch": "r1"}]                                                        # no FRED
    # 2 of 40 flow-samples shared a slot: 0.05
    assert analysis.fred_slot_summary(samples, ("r1", 3)) == {"fred_slots": {
        "samples": 2, "peak_flows": 30, "peak_sharing": 2, "sharing_fraction": 0.05}}
    assert analysis.fred_slot_summary(samples, ("r1", 4)) == {}


def test_switch_cost_table_from_a_bench_json() -> None:
    from mmaqm_exp import report
    bench = {"summary": [{"variant": "minimal_ipv4", "pps_median": 20000.0, "ratio": 1.0},
                         {"variant": "RED", "pps_median": 12500.0, "ratio": 0.625}]}
    # RED: 12.5 kpps, 1e6 / 12500 = 80.0 us per packet, 0.625 of the minimal router
    assert report.switch_cost_table(bench, ["RED", "FRED"]).splitlines() == [
        "algorithm     kpps  us/pkt  x minimal_ipv4",
        "minimal_ipv4  20.0    50.0            1.00",
        "RED           12.5    80.0            0.62",
        "FRED             -       -               -"]


def test_fred_slot_lines_only_for_runs_with_fred() -> None:
    from mmaqm_exp import report
    fred = {"switch": {"fred_slots": {"samples": 300, "peak_flows": 67, "peak_sharing": 2,
                                      "sharing_fraction": 0.0123}}}
    assert report.fred_slot_lines({"RED": {"switch": {}}, "FRED": fred}) == (
        "\nFRED's flow slots (FRED): at most 67 active flows, at most 2 of them sharing a "
        "slot; 1.23 % of active flows shared a slot, averaged over 300 samples\n")
    assert report.fred_slot_lines({"RED": {"switch": {}}}) == ""


def test_switch_cost_table_says_when_the_baseline_was_not_saturated() -> None:
    from mmaqm_exp import report
    bench = {"summary": [{"variant": "minimal_ipv4", "pps_median": 60000.0, "ratio": 1.0,
                          "loss_pct_median": 0.0, "offered_pps_median": 60003.0},
                         {"variant": "FRED", "pps_median": 18000.0, "ratio": 0.3,
                          "loss_pct_median": 70.0, "aqm_drops": 743}]}
    lines = report.switch_cost_table(bench, ["FRED"]).splitlines()
    assert lines[-2] == ("note: minimal_ipv4 lost 0.0 % of the offered 60003 pps, so it was not "
                         "saturated: its capacity is higher, and the ratios are upper bounds")
    assert lines[-1].startswith("note: the AQM dropped packets under FRED")
