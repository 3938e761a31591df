"""tools/ns3_dcbt.py and tools/ns3sim/mm_app.h: the ns-3 reference of the D-CBT paper's
scenario (docs/ns3/dcbt.md).

The committed results (docs/ns3/dcbt.json) must agree with their table, with their own
per-run data and with the archived BMv2 runs; MM_APP's ns-3 port must decide as
mmapp.py does on the same events, climb to its top scale without loss and step down
under loss; the compiled scenario must run (the compiled checks are skipped when the
ns3 wheel or g++ is absent).
"""
from __future__ import annotations

import copy
import json
import shutil
import subprocess

import pytest

import ns3_dcbt
import ns3common
from mmaqm_exp import mmapp
from mmaqm_exp.scenario import parse_scenario

RESULTS = json.loads(ns3_dcbt.OUT_JSON.read_text())


def _ns3_or_skip():
    try:
        ns3_dcbt.ns3_dirs()
    except ns3_dcbt.ConfigError as e:
        pytest.skip(f"ns-3 not installed ({e}); `make ns3-deps` installs it")
    if shutil.which("g++") is None:
        pytest.skip("g++ not found: the ns-3 scenario is compiled C++")


# ---------------------------------------------------------------------------
# The committed results
# ---------------------------------------------------------------------------


def test_page_table_is_the_rendering_of_the_json():
    page = ns3_dcbt.DOC_PAGE.read_text()
    assert ns3common.marked_table(page, "dcbt") == ns3_dcbt.render_table(RESULTS).strip()


def test_a_changed_number_changes_the_table():
    bad = copy.deepcopy(RESULTS)
    bad["ns3"]["NewReno"]["RED"]["kbps_TCP@blast"]["median"] += 1.0
    assert ns3_dcbt.render_table(bad) != ns3_dcbt.render_table(RESULTS)
    bad = copy.deepcopy(RESULTS)
    bad["bmv2"]["metrics"]["DCBT"]["jain@blast+tcp"]["min"] -= 0.01
    assert ns3_dcbt.render_table(bad) != ns3_dcbt.render_table(RESULTS)


def test_ns3_aggregate_recomputes_from_the_committed_runs():
    assert ns3_dcbt.ns3_aggregate(RESULTS["runs"]) == RESULTS["ns3"]
    assert len(RESULTS["runs"]) == (len(ns3_dcbt.NS3_ALGORITHMS) * len(ns3_dcbt.TCP_MODELS)
                                   * RESULTS["seeds"])
    assert RESULTS["seeds"] >= 3


def test_a_changed_run_changes_the_aggregate():
    bad = copy.deepcopy(RESULTS["runs"])
    run = next(s for s in bad if s["algorithm"] == "FQ_CODEL")
    run["phases"]["blast"]["jain"] = 0.1
    assert ns3_dcbt.ns3_aggregate(bad) != RESULTS["ns3"]


def test_bmv2_column_recomputes_from_the_archived_runs():
    assert RESULTS["bmv2"]["runs"] == ns3_dcbt.dcbt_runs()
    assert RESULTS["bmv2"]["wait_runs"] == ns3_dcbt.wait_runs()
    assert len(RESULTS["bmv2"]["wait_runs"]) >= 3
    assert ns3_dcbt.bmv2_aggregate(RESULTS["bmv2"]["runs"], RESULTS["bmv2"]["wait_runs"]) == RESULTS["bmv2"]


def test_committed_runs_are_internally_consistent():
    cls = {str(f.flow_id): f.cls for f in ns3_dcbt.load_dcbt_scenario().flows}
    for s in RESULTS["runs"]:
        for name, ph in s["phases"].items():
            # Jain's index and the class averages recompute from the per-flow throughputs
            thr = ph["per_flow_kbps"]
            assert ph["jain"] == pytest.approx(ns3_dcbt.metrics.jain_index(list(thr.values())),
                                               abs=2e-6)
            avg = ns3_dcbt.metrics.class_average_per_flow_throughput(thr, {f: cls[f] for f in thr})
            for c, v in ph["class_avg_per_flow_kbps"].items():
                assert v == (None if c not in avg else pytest.approx(avg[c], abs=0.002)), (name, c)
            assert sum(thr.values()) == pytest.approx(ph["total_kbps"], abs=0.05 * len(thr))
            assert ph["total_kbps"] <= 25000 * 1.01  # never above the bottleneck
            for c, blk in ph["bottleneck"].items():
                assert blk["drops_total"] == sum(blk["drops"].values()) <= blk["arrivals"]
                assert blk["loss"] == (round(blk["drops_total"] / blk["arrivals"], 6)
                                       if blk["arrivals"] else None)
        run = s["run"]["bottleneck"]
        assert sum(b["arrivals"] for b in run.values()) <= s["bottleneck_totals"]["arrivals"]


def test_scenario_arguments_come_from_the_bmv2_experiment_files():
    per, common = ns3_dcbt.scenario_args()
    assert per["DROP_TAIL"] == {"queue": "fifo", "limitPkts": 60}
    # our RED for dcbt-fig7: no gentle, no wait, no idle decay (policies/dcbt-fig7.yaml)
    assert per["RED"] == {"queue": "red", "limitPkts": 60, "minThPkts": 5, "maxThPkts": 15,
                          "maxP": 0.1, "qW": 0.001953125, "gentle": "false", "wait": "false",
                          "idleDecay": "false"}
    assert per["RED_WAIT"] == {**per["RED"], "wait": "true"}  # policies/dcbt-fig7-wait.yaml
    assert per["FQ_CODEL"] == {"queue": "fqcodel", "limitPkts": 60}
    assert common["groups"] == ("tcp:25:0:30:tcp1:tcp2;mmapp:10:0:30:mm1:mm2;"
                                "cbr:2:10:30:cbr1:cbr2;tcp:30:20:30:tcp1:tcp2")
    assert (common["bottleneckMbps"], common["bottleneckDelayMs"], common["accessDelayMs"]) == (25, 20, 5)
    assert (common["scales"], common["cbrKbps"], common["maxWindowPkts"]) == ("300,500,700,900,1100", 5000, 20)
    assert (common["taggedDscp"], common["cbrDscp"], common["mmFbTimeoutS"]) == (46, 0, 1.0)
    assert RESULTS["scenario"] == {"common": common, "queues": per}


# ---------------------------------------------------------------------------
# Metrics, hand-worked
# ---------------------------------------------------------------------------

_TINY = {"name": "tiny", "duration_s": 2, "phases": [{"name": "a", "start_s": 0, "end_s": 1},
                                                     {"name": "b", "start_s": 1, "end_s": 2}],
         "flows": [{"kind": "tcp", "count": 1, "src": "h1", "dst": "h2", "start_s": 0, "stop_s": 2},
                   {"kind": "mmapp", "count": 1, "src": "h1", "dst": "h2", "start_s": 0, "stop_s": 2,
                    "dscp": 46, "class": "tagged"}]}


def _tiny_raw():
    # 1 s bins; queue samples every 0.5 s (2, 2, 4, 4). TCP (flow 1): 96 000 payload bytes (100 segments of 960) in each
    # second = 100 000 IP bytes = 800 kbit/s.
    # MM_APP (flow 2): 4 packets sent, 2 in each second (the log: 0 at 0 s, 4 at 2 s);
    # seq 1 lost; the others arrive 30 ms after sending (seq 3: 50 ms).
    # Bottleneck second a: TCP 10 arrivals, 1 RED early drop (10 %); tagged 2 arrivals,
    # 1 drop (50 %). Queue 2 packets in a, 4 in b.
    return {"queue": "red", "tcp": "NewReno", "seed": 1, "duration_s": 2.0, "bin_s": 1.0,
            "queue_sample_s": 0.5, "segment_bytes": 960, "packet_bytes": 1000,
            "tcp_rx_bytes_payload": {"1": [96000, 96000]},
            "udp": {"2": {"kind": "mmapp",
                          "summary": {"sent": 4, "final_scale": 0, "cuts": 1, "ups": 0, "timeouts": 0},
                          "log": [[0, "start", 0, 300, -1, 0], [2_000_000_000, "end", 0, 300, -1, 4]],
                          "rows": {"seq": [0, 2, 3], "send_ts_ns": [0, 1_000_000_000, 1_500_000_000],
                                   "recv_ts_ns": [30_000_000, 1_030_000_000, 1_550_000_000],
                                   "bytes": [1000, 1000, 1000], "scale": [0, 0, 0],
                                   "dscp": [46, 46, 46]}}},
            "receivers": {"h2": {"packets": 3, "feedback_sent": 3, "malformed": 0}},
            "bottleneck_bins": {
                "TCP": {"arrivals": [10, 0], "drops": {"Unforced drop": [1, 0]}},
                "TAGGED": {"arrivals": [2, 0], "drops": {"Forced drop": [1, 0]}},
                "UNTAGGED": {"arrivals": [0, 0], "drops": {}}},
            "queue_pkts": [2, 2, 4, 4],
            "bottleneck": {"arrivals": 12, "drops_total": 2, "drops": {}}}


def test_summarize_hand_worked():
    sc = parse_scenario(_TINY)
    s = ns3_dcbt.summarize(_tiny_raw(), sc, 25000.0)
    a, b = s["phases"]["a"], s["phases"]["b"]
    assert a["class_avg_per_flow_kbps"]["TCP"] == 800.0
    # phase a: MM_APP's seq 0 (1 000 B received in [0, 1)) = 8 kbit/s
    assert a["class_avg_per_flow_kbps"]["TAGGED"] == 8.0
    # phase b: seq 2 and 3 received = 16 kbit/s
    assert b["class_avg_per_flow_kbps"]["TAGGED"] == 16.0
    # Jain of (800, 8): 808^2 / (2 (800^2 + 8^2))
    assert a["jain"] == round(808 ** 2 / (2 * (800 ** 2 + 8 ** 2)), 6)
    # loss by send time: seq 0, 1 sent in a (1 lost); seq 2, 3 in b
    assert a["udp_class"]["TAGGED"]["loss"] == 0.5 and b["udp_class"]["TAGGED"]["loss"] == 0.0
    assert a["udp_class"]["TAGGED"]["mean_ms"] == 30.0
    assert b["udp_class"]["TAGGED"]["mean_ms"] == 40.0 and b["udp_class"]["TAGGED"]["p95_ms"] == 50.0
    assert a["bottleneck"]["TCP"] == {"arrivals": 10, "drops": {"RED_EARLY": 1}, "drops_total": 1,
                                      "loss": 0.1}
    assert a["bottleneck"]["TAGGED"]["drops"] == {"RED_FORCED": 1}
    assert a["bottleneck"]["UNTAGGED"]["loss"] is None
    assert b["bottleneck"]["TCP"]["loss"] is None
    # samples at 0.25, 0.75, 1.25, 1.75 s, each held until the next (time-weighted, as
    # the BMv2 occupancy): b = 0.25 s at 2 + 0.75 s at 4
    assert a["queue_mean_pkts"] == 2.0 and b["queue_mean_pkts"] == 3.5
    m = ns3_dcbt.ns3_run_metrics(s)
    assert m["loss_TCP@a"] == 10.0 and m["loss_TAGGED@run"] == 50.0
    assert m["tagged_over_tcp@a"] == pytest.approx(100 * (8 / 800 - 1))


def test_drop_reasons_of_a_child_queue_disc_and_unknown_ones():
    assert ns3common.drop_reason("(Dropped by child queue disc) Target exceeded drop") == "CODEL"
    assert ns3common.drop_reason("Overlimit drop") == "QUEUE_LIMIT"
    with pytest.raises(RuntimeError, match="unknown ns-3 drop reason"):
        ns3common.drop_reason("Mystery")


# ---------------------------------------------------------------------------
# MM_APP: the port against mmapp.py, and its rate adaptation in ns-3
# ---------------------------------------------------------------------------


def _check_binary():
    _ns3_or_skip()
    return ns3common.build("mm_app_check")


def _drive(binary, lines):
    r = subprocess.run([str(binary)], input="\n".join(lines) + "\n", capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return [json.loads(x) for x in r.stdout.splitlines()]


def test_flow_control_port_decides_as_mmapp_py():
    binary = _check_binary()
    # a scripted life: start at scale 0, feedback every 70 ms with RTT 60 ms, a loss,
    # an old loss (same congestion event), silence, a timeout
    events = [("fb", 0.07, 10, 0.060, -1), ("fb", 0.14, 20, 0.062, -1), ("fb", 0.21, 30, 0.061, -1),
              ("fb", 0.28, 40, 0.065, -1), ("fb", 0.35, 50, 0.070, -1), ("fb", 0.42, 60, 0.060, -1),
              ("fb", 0.49, 70, 0.060, 55), ("fb", 0.56, 80, 0.060, 65), ("fb", 0.63, 90, 0.060, 85),
              ("fb", 0.70, 100, -1, -1), ("to", 1.2, 120), ("to", 1.71, 130), ("fb", 1.8, 140, 0.2, -1),
              ("to", 2.9, 150)]
    py = mmapp.FlowControl(5, 0, 0.0, 1.0)
    out = _drive(binary, ["init 5 0 0 1"] + [" ".join(str(x) for x in e) for e in events])
    assert out[0] == {"scale": 0}
    kinds = []
    for e, c in zip(events, out[1:]):
        if e[0] == "fb":
            rtt = None if e[3] < 0 else e[3]
            ev = py.on_feedback(e[1], e[2], rtt, e[4])
        else:
            ev = "timeout" if py.check_timeout(e[1], e[2]) else "none"
        kinds.append(ev)
        assert c["event"] == ev, (e, c)
        assert (c["scale"], c["cut_seq"], c["cuts"], c["ups"], c["timeouts"]) == \
            (py.scale, py.cut_seq, py.cuts, py.ups, py.timeouts), (e, c)
        assert c["srtt_exact"] == pytest.approx(py.srtt if py.srtt is not None else -1, rel=1e-12)
        assert c["timeout_due"] == pytest.approx(py.timeout_due(e[1]), rel=1e-12)
    # the script exercises every rule
    assert {"up", "cut", "fb", "timeout", "none"} <= set(kinds)


def test_receiver_state_and_wire_format_port_mmapp_py():
    binary = _check_binary()
    seqs = [0, 1, 2, 5, 4, 3, 6, 9, 10, 8]
    out = _drive(binary, [f"seq {s}" for s in seqs]
                 + ["wire 26 123456789 1795615606916568797 3 900 61234 0",
                    "wire 36 7 42 255 5000 0 1"])
    st = mmapp.RecvFlowState()
    for s, c in zip(seqs, out):
        gap = st.update(s)
        assert (c["gap"], c["highest"], c["received"], c["lost"], c["last_lost_seq"]) == \
            (gap, st.highest, st.received, st.lost, st.last_lost_seq), (s, c)
    assert out[-2]["hex"] == mmapp.DataHeader(26, 123456789, 1795615606916568797, 3, 900, 61234).pack().hex()
    assert out[-1]["hex"] == mmapp.DataHeader(36, 7, 42, 255, 5000, 0, mmapp.F_NO_FEEDBACK).pack().hex()


def _mm_alone(bottleneck_mbps: float, duration_s: float, limit_pkts: int = 60):
    """One MM_APP flow alone on the dumbbell (drop-tail of limit_pkts)."""
    _ns3_or_skip()
    binary = ns3_dcbt.build()
    per, common = ns3_dcbt.scenario_args()
    args = {**common, **per["DROP_TAIL"], "groups": f"mmapp:1:0:{duration_s:g}:mm1:mm2",
            "bottleneckMbps": bottleneck_mbps, "limitPkts": limit_pkts}
    return ns3_dcbt.run_one(binary, args, "LinuxReno", 1, duration_s)


def test_mm_app_climbs_to_its_top_scale_without_loss():
    raw = _mm_alone(25.0, 6.0)
    u = raw["udp"]["1"]
    ups = [row for row in u["log"] if row[1] == "up"]
    # one step per RTT (60 ms): 0 -> 4 in four steps, then it stays at the top
    assert [r[2] for r in ups] == [1, 2, 3, 4]
    assert ups[-1][0] < 1e9  # at the top within the first second
    s = u["summary"]
    assert (s["final_scale"], s["cuts"], s["timeouts"]) == (4, 0, 0)
    assert s["srtt_us"] == pytest.approx(60_000, rel=0.05)
    assert raw["bottleneck"]["drops_total"] == 0
    # the receiver saw every packet, tagged (DSCP 46), 1 000-byte IP datagrams
    assert len(u["rows"]["seq"]) == s["sent"]
    assert set(u["rows"]["dscp"]) == {46} and set(u["rows"]["bytes"]) == {1000}
    # 6 s at 1 100 kbit/s less the climb: 1 000 B packets
    assert 780 < s["sent"] < 6 * 1100 / 8 + 2


def test_mm_app_steps_down_under_heavy_loss():
    # 0.6 Mbit/s with a 10-packet drop-tail: 700 kbit/s (scale 2) and above overflow it
    raw = _mm_alone(0.6, 10.0, limit_pkts=10)
    u = raw["udp"]["1"]
    s = u["summary"]
    assert s["cuts"] >= 3 and raw["bottleneck"]["drops_total"] > 0
    prev = None
    for t_ns, ev, scale, rate, _srtt, _sent in u["log"]:
        if ev in ("cut", "timeout"):
            assert scale == prev // 2, (t_ns, ev, prev, scale)  # halved: 4 -> 2 -> 1 -> 0
        prev = scale
    # it uses the link without exceeding it, and sends well below its top rate
    received_kbps = sum(u["rows"]["bytes"]) * 8 / 10.0 / 1e3
    assert 300 < received_kbps <= 600 * 1.01
    assert s["sent"] * 8 / 10.0 < 900


def test_compiled_scenario_short_run():
    _ns3_or_skip()
    binary = ns3_dcbt.build()
    per, common = ns3_dcbt.scenario_args()
    sc = ns3_dcbt.load_dcbt_scenario()
    # the first 3 s of the scenario, RED, NewReno
    raw = ns3_dcbt.run_one(binary, {**common, **per["RED"]}, "NewReno", 1, duration_s=3.0)
    assert sorted(map(int, raw["tcp_rx_bytes_payload"])) == list(range(1, 26)) + list(range(38, 68))
    assert sorted(map(int, raw["udp"])) == list(range(26, 38))
    assert len(raw["queue_pkts"]) == 300 and max(raw["queue_pkts"]) <= 60
    tcp_kbps = sum(sum(v) for v in raw["tcp_rx_bytes_payload"].values()) * 8 / 3.0 / 1e3
    mm_kbps = sum(sum(raw["udp"][str(f)]["rows"]["bytes"]) for f in range(26, 36)) * 8 / 3.0 / 1e3
    assert 8000 < tcp_kbps + mm_kbps <= 25000 * 1.01
    assert mm_kbps > 3000  # ten MM_APP flows of at least 300 kbit/s each
    # the blast starts at 10 s: no CBR packet, no untagged arrival yet
    assert raw["udp"]["36"]["summary"]["sent"] == 0
    assert sum(raw["bottleneck_bins"]["UNTAGGED"]["arrivals"]) == 0
    # the queue disc's own counter also holds the last 0.5 s (the simulation runs on
    # so that packets in flight arrive); the per-class bins stop at the duration
    binned = sum(sum(b["arrivals"]) for b in raw["bottleneck_bins"].values())
    assert binned > 5000 and binned < raw["bottleneck"]["arrivals"] <= binned * 1.3
    # the full scenario's metrics over 3 s: its first phase's fairness and delay
    s = ns3_dcbt.summarize(raw, sc, 25000.0)
    assert 0.5 < s["phases"]["tcp+mm"]["jain"] <= 1.0
    assert s["phases"]["tcp+mm"]["udp_class"]["TAGGED"]["mean_ms"] >= 30.0


def test_compiled_scenario_rejects_bad_arguments():
    _ns3_or_skip()
    binary = ns3_dcbt.build()
    for bad in (["--queue=red", "--minThPkts=15", "--maxThPkts=5"], ["--groups=tcp:0:0:1:a:b"],
                ["--queue=sfq"], ["--scales=300,-1"]):
        r = subprocess.run([str(binary), *bad, "--durationS=1", "--out=/dev/null"],
                           capture_output=True, text=True)
        assert r.returncode == 2 and "invalid arguments" in r.stderr, bad
