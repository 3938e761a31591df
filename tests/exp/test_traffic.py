"""run_scenario with real traffic between two namespaces (no switch), then the analysis.

Scenario: 2 TCP flows for 3 s, 1 MM_APP flow for 3 s, 1 CBR flow (2000 kbit/s) from
1 s; the sender's veth is shaped to 20 Mbit/s with tbf (when available) so the run
is light and the throughput sum has an upper bound. Root only.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import mmt_testenv

from mmaqm_exp import analysis, traffic
from mmaqm_exp.netns import DEFAULT_HOSTS_A, DEFAULT_HOSTS_B, missing_prereqs, ns_pair_net
from mmaqm_exp.scenario import ScenarioError, parse_scenario

SKIP = missing_prereqs()
pytestmark = pytest.mark.skipif(SKIP is not None, reason=SKIP or "")
SHAPE_KBPS = 20000


def _scenario(**cbr):
    return parse_scenario({
        "name": "tiny", "duration_s": 3,
        "phases": [{"name": "pre", "start_s": 0, "end_s": 1}, {"name": "blast", "start_s": 1, "end_s": 3}],
        "flows": [
            {"kind": "tcp", "count": 2, "src": "tcp1", "dst": "tcp2"},
            {"kind": "mmapp", "count": 1, "src": "mm1", "dst": "mm2"},
            {"kind": "cbr", "count": 1, "src": "cbr1", "dst": "cbr2", "start_s": 1, **(cbr or {"rate_kbps": 2000})},
        ],
    }, hosts=list(DEFAULT_HOSTS_A + DEFAULT_HOSTS_B))


def test_tiny_scenario_end_to_end(tmp_path: Path):
    calls = []
    with ns_pair_net("trf") as net:
        pair = net.pair
        shaped = net.run("tcp1", ["tc", "qdisc", "replace", "dev", pair.if_a, "root", "tbf", "rate",
                                  f"{SHAPE_KBPS}kbit", "burst", "4000", "limit", "100000"]).returncode == 0
        res = traffic.run_scenario(net, _scenario(), tmp_path, bottleneck_rate_kbps=SHAPE_KBPS,
                                   progress=lambda el, ph, rates: calls.append((el, ph, rates)))
        assert all(p.poll() is not None for p in pair.procs)  # everything stopped on return

    # every raw file exists; the manifest reloads
    for f in res.files():
        assert f.exists() and f.stat().st_size > 0, f
    back = traffic.TrafficResult.load(tmp_path)
    assert back.t0_ns == res.t0_ns and back.scenario == res.scenario
    assert not res.warnings, res.warnings

    # starts: every flow within the tolerance of its scheduled time (sender side)
    assert sorted(res.starts) == [1, 2, 3, 4]
    for fid, st in res.starts.items():
        assert -1.0 < st["late_ms"] < traffic.START_TOLERANCE_MS, (fid, st)
    assert res.starts[4]["scheduled_ns"] == res.t0_ns + 1_000_000_000  # CBR from 1 s

    # progress about once a second, with phase names and live rates
    assert len(calls) >= 2
    for el, ph, _ in calls:  # the phase at that elapsed time; ~1 s apart
        want = res.scenario.phase_at(el)
        assert ph == (want.name if want else None)
    assert [round(c[0]) for c in calls[:2]] == [1, 2] and calls[1][1] == "blast"
    assert calls[1][2].get("TCP", 0) > 1000 and "TAGGED+UNTAGGED" in calls[1][2]

    # TCP per-flow receive-side samples for both flows across the run
    with open(tmp_path / res.tcp_groups[0].recv_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    for fid in ("1", "2"):
        ts = [int(r["t_ns"]) for r in rows if r["flow_id"] == fid]
        assert len(ts) > 50 and (ts[-1] - ts[0]) / 1e9 > 2.5, fid
    send = json.loads((tmp_path / res.tcp_groups[0].send_json).read_text())
    for f in send["flows"].values():
        assert f["snd_mss"] == 948  # 1000-byte IP packets with timestamps
        assert f["sport"] > 0
    assert all(pc >= 0 for pc in res.cpu_s.values()) and len(res.cpu_s) == 6

    # analysis end to end
    s = analysis.analyze(res)
    analysis.write_outputs(s, tmp_path)
    blast = s["phases"]["blast"]
    total = blast["total_kbps"]
    assert blast["n_flows"] == 4 and s["phases"]["pre"]["n_flows"] == 3
    for fid in ("1", "2"):
        assert blast["per_flow_kbps"][fid] > 1000
    mm = blast["per_flow_kbps"]["3"]
    assert 100 < mm < 1100 * 1.1
    cbr = blast["per_flow_kbps"]["4"]
    assert 2000 * 0.5 < cbr < 2000 * 1.1
    if shaped:
        assert 0.6 * SHAPE_KBPS < total < 1.05 * SHAPE_KBPS, total
    else:
        assert total > 3000
    u = blast["udp_flows"]["4"]
    assert u["sent"] == pytest.approx(500, abs=5) and 0 <= u["loss"] < 0.5  # 2 s at 250 pkt/s
    assert u["min_ms"] >= 0 and u["mean_ms"] < 200
    assert s["flows"]["4"]["rate_kbps"] == 2000
    assert (tmp_path / "summary.json").exists() and (tmp_path / "flows.csv").exists()


def test_failures_stop_everything(tmp_path: Path):
    with ns_pair_net("trf") as net:
        # a fraction of the bottleneck without the rate: nothing is started
        with pytest.raises(ScenarioError, match="needs the bottleneck rate"):
            traffic.run_scenario(net, _scenario(rate_fraction_of_bottleneck=0.5), tmp_path / "a")
        assert net.pair.procs == []

        def boom(el, ph, rates):
            raise RuntimeError("progress failed")

        with pytest.raises(RuntimeError, match="progress failed"):
            traffic.run_scenario(net, _scenario(), tmp_path / "b", progress=boom)
        assert len(net.pair.procs) == 6  # 2 receivers per kind of sink + 1 TCP + 2 UDP senders
        assert all(p.poll() is not None for p in net.pair.procs)
