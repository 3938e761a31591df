"""tools/ns3_upta.py: the ns-3 reference of the upta scenarios (docs/ns3/upta.md).

The committed results (docs/ns3/upta.json) must agree with their table (docs/ns3/upta.md),
with their own per-run data and with the archived BMv2 runs; the metrics must follow the
project's definitions on hand-worked counts; the compiled scenario must run (skipped when
the ns3 wheel or g++ is absent).
"""
from __future__ import annotations

import copy
import json
import shutil
import subprocess

import pytest

import ns3_upta
import ns3common

RESULTS = json.loads(ns3_upta.OUT_JSON.read_text())


def _ns3_or_skip():
    try:
        ns3_upta.ns3_dirs()
    except ns3_upta.ConfigError as e:
        pytest.skip(f"ns-3 not installed ({e}); `make ns3-deps` installs it")
    if shutil.which("g++") is None:
        pytest.skip("g++ not found: the ns-3 scenario is compiled C++")


def test_page_table_is_the_rendering_of_the_json():
    page = ns3_upta.DOC_PAGE.read_text()
    assert ns3common.marked_table(page, "upta") == ns3_upta.render_table(RESULTS).strip()


def test_a_changed_number_changes_the_table():
    bad = copy.deepcopy(RESULTS)
    bad["ns3"]["6"]["FQ"]["NewReno"]["tcp_mbps"]["median"] += 0.01
    assert ns3_upta.render_table(bad) != ns3_upta.render_table(RESULTS)
    bad = copy.deepcopy(RESULTS)
    bad["bmv2"]["metrics"]["t1"]["FAIR_SHARE"]["video_hop_loss_pct"][4]["median"] += 1.0
    assert ns3_upta.render_table(bad) != ns3_upta.render_table(RESULTS)


def test_ns3_aggregate_recomputes_from_the_committed_runs():
    assert ns3_upta.ns3_aggregate(RESULTS["runs"]) == RESULTS["ns3"]
    assert len(RESULTS["runs"]) == (len(ns3_upta.SCENARIOS) * len(ns3_upta.QUEUES)
                                   * len(ns3_upta.TCP_MODELS) * RESULTS["seeds"])
    assert RESULTS["seeds"] >= 3


def test_bmv2_column_recomputes_from_the_archived_runs():
    assert RESULTS["bmv2"]["runs"] == ns3_upta.bmv2_runs()
    assert ns3_upta.bmv2_aggregate(RESULTS["bmv2"]["runs"]) == RESULTS["bmv2"]


def test_scenario_arguments_come_from_the_bmv2_experiment_files():
    a1, a6 = ns3_upta.scenario_args(1), ns3_upta.scenario_args(6)
    assert a6["chainMbps"] == "10,4.8,4.3,3.9,3.5,10" and a6["chainDelayMs"] == "1,1,1,1,1,1"
    assert (a6["accessMbps"], a6["accessDelayMs"], a6["limitPkts"], a6["packetBytes"]) == (10, 0.001, 100, 512)
    assert (a6["videoKbps"], a6["bgKbps"], a6["maxWindowPkts"], a6["durationS"]) == (1760, 10000, 200, 15)
    assert (a6["bgInRouter"], a6["bgOutRouter"], a6["bgOn"]) == (2, 6, "0-15")
    assert a1["bgOn"] == "6.5-8.5"
    assert ns3_upta.scenario_args(5)["bgOn"].count("-") == 5
    assert RESULTS["scenario"] == {str(k): ns3_upta.scenario_args(k) for k in ns3_upta.SCENARIOS}
    assert ns3_upta.queue_args("RED", 100) == {"queue": "red", "minThPkts": 25.0, "maxThPkts": 50.0,
                                               "maxP": 0.1, "qW": 0.002}


def test_max_min_hand_worked():
    # upta §6: l5 = 3.5 Mbit/s shared by TCP, the video and the background -> 3.5 / 3 each;
    # with the background off by TCP and the video -> 1.75 each (the video wants 1.76,
    # more than its share): scenario 1 has 13 s off, 2 s on.
    a6 = ns3_upta.scenario_args(6)
    assert ns3_upta.fluid_tcp_mbps(a6) == pytest.approx(3.5 / 3)
    a1 = ns3_upta.scenario_args(1)
    assert ns3_upta.fluid_tcp_mbps(a1) == pytest.approx((13 * 3.5 / 2 + 2 * 3.5 / 3) / 15)
    r = ns3_upta.max_min_rates({"a": 1.0, "b": 3.0}, {"x": ["a", "b"], "y": ["b"]},
                               {"x": float("inf"), "y": float("inf")})
    assert r == pytest.approx({"x": 1.0, "y": 2.0})
    assert RESULTS["fluid_tcp_mbps"]["6"] == pytest.approx(3.5 / 3, abs=1e-6)


def _port(sw, to, flows, arrivals=None, sent=None, drops_total=None):
    fl = {f: {"arrivals": a, "departures": d, "drops": dr} for f, (a, d, dr) in flows.items()}
    return {"switch": sw, "to": to,
            "arrivals": arrivals if arrivals is not None else sum(a for a, _, _ in flows.values()),
            "sent": sent if sent is not None else sum(d for _, d, _ in flows.values()),
            "drops_total": drops_total if drops_total is not None else
            sum(sum(dr.values()) for _, _, dr in flows.values()), "drops": {}, "flows": fl}


def _raw(ports):
    return {"queue": "fq", "tcp": "NewReno", "seed": 1, "duration_s": 2.0, "bin_s": 0.1,
            "segment_bytes": 472, "tcp_start_s": 0.0,
            "params": {"packet_bytes": 512},
            "tcp_rx_bytes_ip": [5120] * 20, "rx_pkts": {"tcp": 200, "video": 80, "bg": 40},
            "tcp_sender": {"max_cwnd_bytes": 4720, "srtt_mean_ms": 12.345, "srtt_max_ms": 20,
                           "cong_state_entries": {"CA_RECOVERY": 3, "CA_LOSS": 1}},
            "ports": ports}


def test_summarize_hand_worked():
    # a three-router chain: the video loses 10 of 100 at r2 (local 10 %), 9 of 90 at
    # r3 -> d2 (10 %): end to end 1 - 81 / 100 = 19 %. TCP: 2 of 200 sent.
    e = {}
    ports = [_port("r1", "r2", {"tcp": (200, 200, e), "video": (100, 100, e), "bg": (0, 0, e)}),
             _port("r2", "r3", {"tcp": (200, 198, {"Queue disc limit exceeded": 2}),
                                "video": (100, 90, {"Queue disc limit exceeded": 10}),
                                "bg": (50, 40, {"Overlimit drop": 10})}),
             _port("r3", "d1", {"tcp": (198, 198, e), "video": (0, 0, e), "bg": (0, 0, e)}),
             _port("r3", "d2", {"tcp": (0, 0, e), "bg": (0, 0, e),
                                "video": (90, 81, {"Unforced drop": 5, "Fair share drop": 3,
                                                   "(Dropped by child queue disc) Target exceeded drop": 1})})]
    s = ns3_upta.summarize(_raw(ports))
    # 20 bins of 5 120 B over 2 s: 102 400 B * 8 / 2 s = 0.4096 Mbit/s
    assert s["tcp_mbps"] == 0.4096
    assert s["video_hop_loss_pct"] == [0.0, 10.0, 10.0]
    assert [h["switch"] for h in s["video_hops"]] == ["r1", "r2", "r3"]
    assert s["video_hops"][1]["drops"] == {"QUEUE_LIMIT": 10}
    # ns-3's reasons under the project's names; our scheme's and a child CoDel's too
    assert s["video_hops"][2]["drops"] == {"RED_EARLY": 5, "UPTA_FAIR_SHARE": 3, "CODEL": 1}
    assert s["video_e2e_loss_pct"] == 19.0
    assert (s["tcp_drops"], s["tcp_loss_pct"]) == (2, 1.0)
    assert (s["tcp_max_cwnd_pkts"], s["tcp_recoveries"], s["tcp_rtos"]) == (10.0, 3, 1)
    assert s["tcp_srtt_mean_ms"] == 12.35
    # 80 video packets of 512 B over 2 s
    assert s["video_rx_mbps"] == pytest.approx(80 * 512 * 8 / 2 / 1e6)


def test_summarize_rejects_counts_that_do_not_add_up():
    e = {}
    ports = [_port("r1", "r2", {"tcp": (10, 10, e), "video": (10, 10, e), "bg": (0, 0, e)}, sent=21),
             _port("r2", "d1", {"tcp": (10, 10, e), "video": (0, 0, e), "bg": (0, 0, e)}),
             _port("r2", "d2", {"tcp": (0, 0, e), "video": (10, 10, e), "bg": (0, 0, e)})]
    with pytest.raises(RuntimeError, match="per-flow"):
        ns3_upta.summarize(_raw(ports))


def test_every_committed_run_is_internally_consistent():
    for s in RESULTS["runs"]:
        v = s["video_hops"]
        assert [h["switch"] for h in v] == [f"r{i}" for i in range(1, 8)]
        for a, b in zip(v, v[1:]):   # what leaves a router arrives at the next, less what is in flight
            assert 0 <= a["departures"] - b["arrivals"] <= 10
        assert 0 < s["tcp_mbps"] <= 3.5 and 0 <= s["video_e2e_loss_pct"] < 100


def test_compiled_scenario_short_run():
    _ns3_or_skip()
    binary = ns3_upta.build()
    args = {**ns3_upta.scenario_args(6), **ns3_upta.queue_args("FQ", 100)}
    raw = ns3_upta.run_one(binary, args, "NewReno", 1, duration_s=2.0)
    s = ns3_upta.summarize(raw)
    # l5 (3.5 Mbit/s) is shared three ways by a fair scheduler: TCP gets a share of it,
    # never more than the link
    assert 0.3 < s["tcp_mbps"] <= 3.5
    # the video (1.76 Mbit/s) loses something at the congested routers, nothing at R1
    assert s["video_hop_loss_pct"][0] == 0.0 and 5 < s["video_e2e_loss_pct"] < 60
    # the background fills l2 ... l5: at most l5's rate arrives at d3
    assert 0.5 < s["bg_rx_mbps"] <= 3.5 * 1.001


def test_compiled_fair_share_scheme_drops_to_the_share():
    _ns3_or_skip()
    binary = ns3_upta.build()
    args = {**ns3_upta.scenario_args(6), **ns3_upta.queue_args("FAIR_SHARE_NS3", 100)}
    raw = ns3_upta.run_one(binary, args, "NewReno", 1, duration_s=2.0)
    s = ns3_upta.summarize(raw)
    r2 = next(p for p in raw["ports"] if (p["switch"], p["to"]) == ("r2", "r3"))
    bg = r2["flows"]["bg"]
    # the 10 Mbit/s background meets l2 (4.8 Mbit/s): after the first interval (131 ms)
    # R2 drops it to its share, most of it by the scheme, not by the full FIFO
    assert bg["drops"].get("Fair share drop", 0) > bg["drops"].get("Queue disc limit exceeded", 0)
    assert bg["departures"] * 512 * 8 / 2.0 <= 4.8e6 * 1.001
    # every background packet R2 takes is sent, dropped, or still in its 100-packet FIFO
    assert 0 <= bg["arrivals"] - bg["departures"] - sum(bg["drops"].values()) <= 100
    assert 0 < s["tcp_mbps"] <= 3.5


def test_compiled_scenario_rejects_bad_arguments():
    _ns3_or_skip()
    binary = ns3_upta.build()
    r = subprocess.run([str(binary), "--queue=red", "--minThPkts=60", "--maxThPkts=50",
                        "--durationS=1", "--out=/dev/null"], capture_output=True, text=True)
    assert r.returncode == 2 and "invalid arguments" in r.stderr
    r = subprocess.run([str(binary), "--bgOn=3-2", "--durationS=1", "--out=/dev/null"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "invalid arguments" in r.stderr
