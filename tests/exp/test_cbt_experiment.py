"""The CBT paper's experiment (cbt section 4): the named-experiment registry, the TCP
initial window of a scenario, and the paper's figures computed from a run
(Figs. 5-7, section 4.2's effective RED queue limit), on hand-worked numbers.

The synthetic run is test_analysis's (t0 = T0, phases [0, 1) and [1, 2) s):
  flows 1, 2 (TCP): 125 000 IP bytes each at 0.5 s, flow 1 125 000 more at 1.5 s;
  flow 3 (tagged): seq k sent at k * 0.1 s, received 10 ms later (seq 5: 30 ms),
  seqs 3, 15, 16 lost; bottleneck TCP occupancy 0 0 4 0 3 0 0 at -0.5 .. 2.5 s.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest
import yaml

import mmt_testenv

from mmaqm_exp import analysis, experiment, report
from mmaqm_exp.experiments import RegistryError, load_registry, parse_registry
from mmaqm_exp.scenario import ScenarioError, initcwnd_routes, load_scenario, parse_scenario
from mmaqm_exp.traffic import TrafficError, initcwnd_route_argv, parse_route_get
from test_analysis import run_dir  # noqa: F401  (the synthetic run fixture)

REPO = mmt_testenv.TOPO.parent


# --------------------------------------------------------------------------- registry


def test_shipped_registry_entries_exist_and_load():
    reg = load_registry()
    assert reg.default == "dcbt-fig7"
    assert {"dcbt-fig7", "cbt-fig4", "cbt-fig4-full"} <= set(reg.names())
    for name in reg.names():
        e = reg.get(name)
        assert e.topology.exists() and e.scenario.exists() and e.policies.exists(), name
        sc = load_scenario(e.scenario)
        policies = experiment.load_policies(e.policies)
        assert set(e.algorithms) <= set(policies), name
        assert set(e.paper_tagged_loss_pct) <= set(e.algorithms), name
        assert sc.duration_s > 0


def test_registry_default_is_the_d_cbt_scenario_of_the_module_constants():
    e = load_registry().get(load_registry().default)
    assert (e.topology, e.scenario, e.policies) == (
        experiment.DEFAULT_TOPOLOGY, experiment.DEFAULT_SCENARIO, experiment.DEFAULT_POLICIES)
    assert e.algorithms == experiment.DEFAULT_ALGORITHMS and e.duration_s is None


def test_cbt_entries_short_and_full():
    reg = load_registry()
    short, full = reg.get("cbt-fig4"), reg.get("cbt-fig4-full")
    assert short.duration_s == 46 and full.duration_s is None
    assert short.scenario == full.scenario == REPO / "topologies/scenarios/cbt-fig4.yaml"
    assert short.algorithms == ("DROP_TAIL", "RED", "CBT_RED_ALL", "CBT_RED_TCP_ONLY", "DCBT",
                                "DCBT_CHIPS", "MCDT", "FRED")   # every algorithm
    assert short.paper_tagged_loss_pct == {"RED": 30.0, "CBT_RED_ALL": 23.8, "CBT_RED_TCP_ONLY": 1.3,
                                           "FRED": 35.7}


def test_mcdt_entries_and_policies():
    # mcdt section III: RED, CBT, FIFO and MCDT (mode A) on a 100-packet queue
    reg = load_registry()
    for name, scen in (("mcdt-s2", "mcdt-scenario2.yaml"), ("mcdt-s3", "mcdt-scenario3.yaml")):
        e = reg.get(name)
        assert e.algorithms == ("DROP_TAIL", "RED", "CBT_RED_ALL", "MCDT") and e.duration_s is None
        assert (e.topology.name, e.scenario.name) == ("mcdt-dumbbell.json", scen)
    pol = experiment.load_policies(REPO / "topologies/policies/mcdt.yaml")
    assert {p["queue_limit_pkts"] for p in pol.values()} == {100}
    assert (pol["CBT_RED_ALL"]["tagged_th_pkts"], pol["CBT_RED_ALL"]["untagged_th_pkts"]) == (16, 5)
    assert pol["MCDT"] == {"algorithm": "MCDT", "queue_limit_pkts": 100, "mcdt_period_ms": 100}
    # scenario 1 (Figs. 4-5): the three modes of Fig. 2, otherwise MCDT's policy
    s1 = reg.get("mcdt-s1")
    assert s1.algorithms == ("MCDT_A", "MCDT_B", "MCDT_C") and s1.duration_s is None
    assert (s1.topology.name, s1.scenario.name) == ("mcdt-dumbbell.json", "mcdt-scenario1.yaml")
    for mode in "ABC":
        assert pol[f"MCDT_{mode}"] == {**pol["MCDT"], "mcdt_mode": mode}
    topo = experiment.load_topology(reg.get("mcdt-s2").topology)
    assert (topo.bottleneck.rate_pps, topo.bottleneck.queue_limit_pkts) == (1250, 100)
    for p in pol.values():
        experiment.controller_yaml(topo, p)      # valid for the controller


def test_unknown_name_lists_the_known_ones():
    reg = load_registry()
    with pytest.raises(RegistryError, match=r"unknown experiment 'cbt-fig5'; known: dcbt-fig7, "
                                            r"cbt-fig4, cbt-fig4-full"):
        reg.get("cbt-fig5")


def test_registry_validation_names_every_field():
    bad = {"default": "nope", "experiments": {
        "a": {"topology": "t.json", "scenario": 3, "algorithms": [], "duration_s": 0,
              "colour": "red", "paper_tagged_loss_pct": {"RED": 130}}}}
    with pytest.raises(RegistryError) as ei:
        parse_registry(bad, source="x.yaml", root=Path("/r"))
    msg = str(ei.value)
    for part in ("experiments.a.colour: unknown key", "experiments.a.scenario: must be a non-empty string",
                 "experiments.a.policies: required", "experiments.a.algorithms: must list at least one",
                 "experiments.a.duration_s: must be > 0", "experiments.a.paper_tagged_loss_pct.RED: must be <= 100",
                 "default: must name an experiment (a), got 'nope'"):
        assert part in msg, part
    ok = parse_registry({"default": "a", "experiments": {"a": {
        "topology": "t.json", "scenario": "s.yaml", "policies": "p.yaml", "algorithms": ["RED"]}}},
        root=Path("/r"))
    assert ok.get("a").topology == Path("/r/t.json") and ok.get("a").duration_s is None


def _args(**kw) -> argparse.Namespace:
    reg = load_registry()
    return experiment.build_parser(reg).parse_args(
        [x for k, v in kw.items() for x in (f"--{k.replace('_', '-')}", str(v))])


def test_resolve_plan_default_named_and_overrides():
    reg = load_registry()
    plan = experiment.resolve_plan(_args(), reg, "STAMP")
    assert plan.experiment == "dcbt-fig7" and plan.scenario == experiment.DEFAULT_SCENARIO
    assert plan.algorithms == list(experiment.DEFAULT_ALGORITHMS) and plan.duration_s is None
    assert plan.out == REPO / "results" / "dcbt-fig7-STAMP"
    plan = experiment.resolve_plan(_args(experiment="cbt-fig4"), reg, "STAMP")
    assert (plan.topology.name, plan.duration_s, plan.out.name) == ("cbt-two-lan.json", 46, "cbt-fig4-STAMP")
    assert plan.paper_tagged_loss_pct["CBT_RED_TCP_ONLY"] == 1.3
    plan = experiment.resolve_plan(_args(experiment="cbt-fig4-full"), reg, "S")
    assert plan.duration_s is None
    # explicit options win over the entry
    plan = experiment.resolve_plan(_args(experiment="cbt-fig4", duration=20, algorithms="RED, DCBT",
                                         scenario="x.yaml", out="/tmp/o"), reg, "S")
    assert (plan.duration_s, plan.algorithms, plan.scenario, plan.out) == (
        20, ["RED", "DCBT"], Path("x.yaml"), Path("/tmp/o"))
    assert plan.policies.name == "cbt-fig4.yaml"
    with pytest.raises(experiment.ExperimentError, match="names no algorithm"):
        experiment.resolve_plan(_args(algorithms=" , "), reg, "S")


def test_main_rejects_an_unknown_experiment_before_anything_starts(capsys):
    assert experiment.main(["--experiment", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown experiment 'nope'; known: dcbt-fig7, cbt-fig4, cbt-fig4-full" in err


def test_help_lists_the_experiments(capsys, monkeypatch):
    # argparse wraps help to the terminal width and may break "dcbt-fig7" at its hyphen
    monkeypatch.setenv("COLUMNS", "1000")
    with pytest.raises(SystemExit):
        experiment.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    for name in ("dcbt-fig7 (default)", "cbt-fig4:", "cbt-fig4-full:"):
        assert name in out


# --------------------------------------------------------------------------- initcwnd


def _scen(*groups):
    return {"name": "t", "duration_s": 10, "phases": [{"name": "a", "start_s": 0, "end_s": 10}],
            "flows": list(groups)}


def test_initcwnd_parsed_validated_and_shared_per_host_pair():
    sc = parse_scenario(_scen({"kind": "tcp", "count": 3, "src": "tcp1", "dst": "tcp2", "initcwnd_pkts": 2},
                              {"kind": "tcp", "src": "tcp1", "dst": "tcp3"}))
    assert sc.groups[0].params["initcwnd_pkts"] == 2 and sc.groups[1].params["initcwnd_pkts"] is None
    assert initcwnd_routes(sc) == {("tcp1", "tcp2"): 2}
    # survives the round trip through traffic.json
    from mmaqm_exp.scenario import parse_scenario_dict
    assert initcwnd_routes(parse_scenario_dict(json.loads(json.dumps(sc.to_dict())))) == {("tcp1", "tcp2"): 2}
    for bad, msg in ((0, "must be in 1..100 (segments), got 0"), ("2", "must be an integer")):
        with pytest.raises(ScenarioError, match=r"flows\[0\]\.initcwnd_pkts: " + re_escape(msg)):
            parse_scenario(_scen({"kind": "tcp", "src": "a", "dst": "b", "initcwnd_pkts": bad}))
    with pytest.raises(ScenarioError, match=r"flows\[1\]\.initcwnd_pkts: must equal flows\[0\]'s \(2\)"):
        parse_scenario(_scen({"kind": "tcp", "src": "a", "dst": "b", "initcwnd_pkts": 2},
                             {"kind": "tcp", "src": "a", "dst": "b"}))
    with pytest.raises(ScenarioError, match="unknown key"):
        parse_scenario(_scen({"kind": "cbr", "src": "a", "dst": "b", "rate_kbps": 5, "initcwnd_pkts": 2}))


def re_escape(s: str) -> str:
    import re
    return re.escape(s)


def test_cbt_scenario_sets_the_1999_initial_window():
    sc = load_scenario(REPO / "topologies/scenarios/cbt-fig4.yaml")
    assert initcwnd_routes(sc) == {("tcp1", "tcp2"): 2}


def test_route_get_parsing_and_the_route_command():
    assert parse_route_get("10.0.2.2 via 10.0.1.1 dev eth0 src 10.0.1.2 uid 0 \\    cache ") == \
        ("10.0.1.1", "eth0")
    assert parse_route_get("10.0.2.2 dev veth1 src 10.0.2.1 uid 0") == (None, "veth1")
    with pytest.raises(TrafficError, match="no device"):
        parse_route_get("RTNETLINK answers: Network is unreachable")
    assert initcwnd_route_argv("10.0.2.2", "10.0.1.1", "eth0", 2) == [
        "ip", "route", "replace", "10.0.2.2/32", "via", "10.0.1.1", "dev", "eth0", "initcwnd", "2"]
    assert initcwnd_route_argv("10.0.2.2", None, "v", 1) == [
        "ip", "route", "replace", "10.0.2.2/32", "dev", "v", "initcwnd", "1"]


# --------------------------------------------------------------------------- figures


def test_aggregate_throughput_and_binned_mean():
    a = [(0.5, 125_000), (1.5, 125_000)]
    b = [(0.5, 125_000), (2.2, 999)]          # 2.2 s: outside [0, 2)
    assert analysis.aggregate_throughput_kbps([a, b], 0.0, 2.0) == [2000.0, 1000.0]
    assert analysis.aggregate_throughput_kbps([a], 0.0, 2.5) == [1000.0, 1000.0]  # partial bin dropped
    assert analysis.aggregate_throughput_kbps([a], 0.0, 0.5) == []
    assert analysis.binned_mean([(0.1, 10), (0.9, 20), (2.5, 4), (-0.1, 99)], 0.0, 3.0) == [15.0, None, 4.0]


def test_latency_block_hand_computed():
    d = [10.0] * 16 + [30.0]
    b = analysis.latency_block(d)
    mean = 190 / 17
    assert b["count"] == 17 and b["mean_ms"] == pytest.approx(mean, abs=1e-3)
    assert (b["min_ms"], b["p50_ms"], b["p95_ms"], b["p99_ms"], b["max_ms"]) == (10.0, 10.0, 30.0, 30.0, 30.0)
    assert b["std_ms"] == pytest.approx(math.sqrt((16 * (10 - mean) ** 2 + (30 - mean) ** 2) / 17), abs=1e-3)
    assert b["queueing_mean_ms"] == pytest.approx(mean - 10, abs=1e-3)
    assert analysis.latency_block([])["mean_ms"] is None


def test_summary_has_the_tcp_series_and_tagged_latency(run_dir):  # noqa: F811
    s = analysis.analyze(run_dir, counters_jsonl=run_dir / "counters.jsonl")
    # 1 s bins: 250 000 IP bytes in [0, 1) = 2000 kbit/s, 125 000 in [1, 2) = 1000
    assert s["tcp_throughput"] == {"bin_s": 1.0, "kbps": [2000.0, 1000.0]}
    t = s["tagged_latency"]
    assert list(t) == ["3"]
    f = t["3"]
    assert f["count"] == 17 and f["min_ms"] == 10.0 and f["max_ms"] == 30.0
    assert f["queueing_mean_ms"] == pytest.approx(190 / 17 - 10, abs=1e-3)
    # send-time bins: [0, 1) s seqs 0-9 without 3, one of them 30 ms: 110 / 9; [1, 2) eight of 10 ms
    assert f["series"] == {"bin_s": 1.0, "mean_ms": [pytest.approx(110 / 9, abs=0.01), 10.0]}
    assert f["jitter_ms"] == s["run"]["udp_flows"]["3"]["jitter_ms"]
    json.dumps(s)


CBT_POLICIES = REPO / "topologies/policies/cbt-fig4.yaml"


def test_effective_red_limit_of_the_cbt_policies():
    pol = experiment.load_policies(CBT_POLICIES)
    only = analysis.red_queue_limit(pol["CBT_RED_TCP_ONLY"])
    # cbt section 4.2: 60 - 10 - 2 = 48, thresholds 12 and 24 = 25 % and 50 % of it
    assert (only["effective_red_limit_pkts"], only["class_reserved_pkts"]) == (48.0, 12.0)
    assert (only["min_th_fraction"], only["max_th_fraction"]) == (0.25, 0.5)
    red = analysis.red_queue_limit(pol["RED"])
    assert (red["effective_red_limit_pkts"], red["min_th_fraction"], red["max_th_fraction"]) == (60.0, 0.25, 0.5)
    assert analysis.red_queue_limit(pol["CBT_RED_ALL"])["effective_red_limit_pkts"] == 60.0
    assert analysis.red_queue_limit(pol["DCBT"]) is None
    assert analysis.red_queue_limit(pol["DROP_TAIL"]) is None


def test_red_limit_block_beside_the_measured_tcp_queue(run_dir):  # noqa: F811
    s = analysis.analyze(run_dir, counters_jsonl=run_dir / "counters.jsonl")
    pol = experiment.load_policies(CBT_POLICIES)["CBT_RED_TCP_ONLY"]
    # no blast phase in this run: the run's maximum only (TCP 0 0 4 0 3 0 0; 2.5 s is after it)
    b = analysis.red_queue_limit_block(pol, s)
    assert (b["measured_tcp_max_pkts"], b["measured_tcp_max_blast_pkts"], b["measured_tcp_mean_blast_pkts"]) == \
        (4, None, None)
    s["scenario"]["blast_phase"] = "p2"     # [1, 2): samples at 1.0 (0) and 1.5 (3); mean 1.5
    b = analysis.red_queue_limit_block(pol, s)
    assert (b["measured_tcp_max_blast_pkts"], b["measured_tcp_mean_blast_pkts"]) == (3, 1.5)
    assert analysis.max_occupancy(None, "TCP", 0, 1) is None


def test_paper_table_and_plots(run_dir, tmp_path):  # noqa: F811
    s = analysis.analyze(run_dir, counters_jsonl=run_dir / "counters.jsonl")
    s["scenario"]["blast_phase"] = "p2"
    s["red_queue_limit"] = analysis.red_queue_limit_block(
        experiment.load_policies(CBT_POLICIES)["CBT_RED_TCP_ONLY"], s)
    s["switch_keepup"] = {"r1": {"checked": True, "ok": True, "lost_before_aqm_pkts": 0}}
    other = json.loads(json.dumps(s))
    other["switch_keepup"]["r1"].update(ok=False, lost_before_aqm_pkts=42)
    other["warnings"] = ["w1", "w2"]
    other["red_queue_limit"] = None
    lines = report.paper_table({"CBT_RED_TCP_ONLY": s, "DCBT": other}, {"CBT_RED_TCP_ONLY": 1.3}).splitlines()
    assert lines[0].split()[:4] == ["algorithm", "tag", "loss", "%"]
    # loss 15 % (3 of 20); TCP share of p2 = 1000 / 1064; Jain p2; latency of flow 3
    row = lines[1].split()
    assert row[:5] == ["CBT_RED_TCP_ONLY", "15.00", "1.3", f"{100000 / 1064:.1f}", "0.376"]
    assert row[5:8] == [f"{190 / 17:.1f}", f"{190 / 17 - 10:.1f}", f"{s['tagged_latency']['3']['std_ms']:.2f}"]
    # blast (p2): eight packets of 10 ms, the floor 10 ms: queueing 0
    assert row[8:10] == ["10.0", "0.0"]
    assert row[10:] == ["48", "12/24", "4", "3", "1.5", "yes", "0"]
    row = lines[2].split()
    assert row[2] == "-" and row[10:] == ["-", "-", "-", "-", "-", "NO", "(42", "lost)", "2"]
    p = report.write_paper_table({"A": s}, tmp_path, {})
    assert p.name == "paper_table.txt" and "cbt section 4" in p.read_text()
    for fn, name in ((report.plot_tcp_throughput, "t.png"), (report.plot_tagged_latency, "l.png")):
        out = fn({"A": s, "B": other}, tmp_path / name)
        assert out.read_bytes()[:4] == b"\x89PNG" and out.stat().st_size > 5000


# --------------------------------------------------------------------------- initcwnd, real kernel

_SERVER = ("import socket, sys, time; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, "
           "socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', int(sys.argv[1]))); s.listen(8); "
           "print('ready', flush=True); conns = [s.accept() for _ in range(2)]; time.sleep(30)")
_CLIENT = ("import socket, sys, time; c = socket.create_connection((sys.argv[1], int(sys.argv[2]))); "
           "print(c.getsockname()[1], flush=True); time.sleep(30)")


def _cwnd_of_new_connection(net, port: int) -> int:
    """Connect tcp1 -> tcp2 and read the connection's cwnd from the kernel (ss -ti)."""
    import re
    import subprocess
    import sys
    cli = net.popen("tcp1", [sys.executable, "-c", _CLIENT, net.host_ip("tcp2"), str(port)],
                    stdout=subprocess.PIPE, text=True)
    sport = int(cli.stdout.readline())
    ss = net.run("tcp1", ["ss", "-tin", "dst", f"{net.host_ip('tcp2')}:{port}", "sport", f"= :{sport}"]).stdout
    m = re.search(r"\bcwnd:(\d+)", ss)
    assert m, ss
    return int(m.group(1))


@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="needs root (namespaces)")
def test_set_initcwnd_gives_new_connections_that_window():
    """traffic.set_initcwnd on a real namespace pair: a connection opened before it has
    Linux's default initial window (10), one opened after it the route's (2)."""
    import subprocess
    import sys
    from mmaqm_exp import traffic
    from mmaqm_exp.netns import ns_pair_net
    with ns_pair_net("iw") as net:
        port = 5999
        srv = net.popen("tcp2", [sys.executable, "-c", _SERVER, str(port)], stdout=subprocess.PIPE,
                        text=True)
        assert srv.stdout.readline().strip() == "ready"
        assert _cwnd_of_new_connection(net, port) == 10
        traffic.set_initcwnd(net, "tcp1", net.host_ip("tcp2"), 2)
        assert _cwnd_of_new_connection(net, port) == 2
        assert "initcwnd 2" in net.run("tcp1", ["ip", "route", "show", f"{net.host_ip('tcp2')}/32"]).stdout
