"""The dual-stack experiment (scenarios/dual-stack.yaml, docs/experiments/dual-stack.md):
the scenario's ``family`` key, the hosts' IPv6 addresses and routes, the address-family
helpers of the traffic generators (real sockets on the loopback), the controller's
per-family flow counts against the scenario (analysis.controller_flow_counts) and the
per-family table (dual_stack_report), hand-computed. The real run through BMv2 is the
smoke run in docs/experiments/dual-stack.md."""

from __future__ import annotations

import ipaddress
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import mmt_testenv  # noqa: F401  (puts topologies/ on the path)
from mmaqm_exp import analysis, inet, lab
from mmaqm_exp import dual_stack_report as D
from mmaqm_exp.scenario import (ScenarioError, load_scenario, parse_scenario,
                                parse_scenario_dict)
from mmaqm_exp.topology import controller_config, ipv6_of, load_topology

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "topologies" / "scenarios" / "dual-stack.yaml"
TOPO = REPO / "topologies" / "topos" / "dcbt-dumbbell-10mbit.json"
DCBT = {"algorithm": "DCBT", "min_th_pkts": 5, "max_th_pkts": 15, "max_p": 0.1}


def _scenario(**group) -> dict:
    return {"name": "t", "duration_s": 10, "phases": [{"name": "all", "start_s": 0, "end_s": 10}],
            "flows": [{"kind": "tcp", "src": "a", "dst": "b", **group}]}


# -- scenario -----------------------------------------------------------------------------

def test_family_defaults_to_ipv4_and_ipv6_payloads_are_20_bytes_shorter() -> None:
    v4 = parse_scenario(_scenario()).groups[0]
    v6 = parse_scenario(_scenario(family="ipv6")).groups[0]
    assert (v4.family, v6.family) == ("ipv4", "ipv6")
    # 1000-byte IP packets: MSS option 960 (IPv4 + TCP 40), 940 (IPv6 + TCP 60)
    assert (v4.tcp_mss_option, v6.tcp_mss_option) == (960, 940)
    assert (v4.tcp_payload_bytes, v6.tcp_payload_bytes) == (948, 928)
    assert parse_scenario(_scenario(family="ipv6")).flows[0].family == "ipv6"
    assert parse_scenario(_scenario(family="ipv6")).families() == {"ipv6"}


def test_family_errors_name_their_field() -> None:
    with pytest.raises(ScenarioError) as e:
        parse_scenario(_scenario(family="IPv6"))
    assert "flows[0].family: must be one of ipv4, ipv6, got string 'IPv6'" in str(e.value)
    with pytest.raises(ScenarioError) as e:
        parse_scenario(_scenario(family="ipv6", initcwnd_pkts=4))
    assert "flows[0].initcwnd_pkts: is set on IPv4 routes only" in str(e.value)
    cbr = {"name": "t", "duration_s": 10, "phases": [{"name": "p", "start_s": 0, "end_s": 10}],
           "flows": [{"kind": "cbr", "src": "a", "dst": "b", "rate_kbps": 100,
                      "upta_loss_threshold": 0.1, "family": "ipv6"}]}
    with pytest.raises(ScenarioError) as e:
        parse_scenario(cbr)
    assert "flows[0].upta_loss_threshold: is an IPv4 option" in str(e.value)


def test_family_survives_the_traffic_manifest_and_old_manifests_are_ipv4() -> None:
    sc = load_scenario(SCENARIO)
    back = parse_scenario_dict(json.loads(json.dumps(sc.to_dict())))
    assert [g.family for g in back.groups] == [g.family for g in sc.groups]
    old = sc.to_dict()
    for g in old["groups"]:
        del g["family"]
    assert parse_scenario_dict(old).families() == {"ipv4"}


def test_the_shipped_scenario_runs_the_same_mix_over_each_family() -> None:
    sc = load_scenario(SCENARIO, hosts=load_topology(TOPO).hosts)
    assert sc.paper.startswith("none")
    per = {(f.family, f.cls): 0 for f in sc.flows}
    for f in sc.flows:
        per[(f.family, f.cls)] += 1
    assert per == {("ipv4", "TCP"): 3, ("ipv6", "TCP"): 3, ("ipv4", "TAGGED"): 3,
                   ("ipv6", "TAGGED"): 3, ("ipv4", "UNTAGGED"): 1, ("ipv6", "UNTAGGED"): 1}
    assert all(f.dscp == 46 for f in sc.flows if f.cls == "TAGGED")
    assert 30 <= sc.duration_s <= 40 and sc.blast().name == "blast"
    # each family's flows use the same hosts: the same RTT
    assert {(f.src, f.dst) for f in sc.flows if f.family == "ipv4"} == \
        {(f.src, f.dst) for f in sc.flows if f.family == "ipv6"}


def test_the_experiment_is_registered_with_every_class_based_algorithm() -> None:
    from mmaqm_exp import experiment
    from mmaqm_exp.experiments import load_registry
    reg = load_registry()
    plan = experiment.resolve_plan(
        experiment.build_parser(reg).parse_args(["--experiment", "dual-stack"]), reg, "S")
    assert plan.algorithms == ["RED", "CBT_RED_ALL", "CBT_RED_TCP_ONLY", "DCBT", "DCBT_CHIPS",
                               "MCDT", "FRED"]
    policies = experiment.load_policies(plan.policies)
    topo = load_topology(plan.topology)
    for algo in plan.algorithms:                    # every policy valid with IPv6 routes
        cfg = experiment.controller_yaml(topo, policies[algo], ipv6=True)
        assert "2001:db8:a00:400::/64" in cfg


# -- addresses and routes ---------------------------------------------------------------

def test_ipv6_addresses_follow_the_ipv4_ones_one_64_per_link() -> None:
    net = ipaddress.IPv4Network("10.0.1.0/24")
    assert str(ipv6_of(ipaddress.IPv4Address("10.0.1.1"), net)) == "2001:db8:a00:100::1"
    assert str(ipv6_of(ipaddress.IPv4Address("10.0.1.254"), net)) == "2001:db8:a00:100::fe"
    topo = load_topology(TOPO)
    subnets = {str(h.subnet6) for h in topo.hosts.values()}
    assert len(subnets) == len(topo.hosts)
    for h in topo.hosts.values():
        assert ipaddress.IPv6Address(h.ip6) in h.subnet6
        assert ipaddress.IPv6Address(h.gateway_ip6) in h.subnet6


def test_controller_config_adds_ipv6_routes_only_when_asked() -> None:
    from mmaqm.config import parse_config
    topo = load_topology(TOPO)
    plain = controller_config(topo, DCBT)
    assert all(":" not in r["prefix"] for sw in plain["switches"].values() for r in sw["routes"])
    cfg = controller_config(topo, DCBT, ipv6=True)
    for sw_name, sw in cfg["switches"].items():
        v4 = {r["prefix"]: (r["port"], r["next_hop_mac"]) for r in sw["routes"] if ":" not in r["prefix"]}
        v6 = {r["prefix"]: (r["port"], r["next_hop_mac"]) for r in sw["routes"] if ":" in r["prefix"]}
        assert len(v6) == len(v4) == len(topo.hosts)
        for h in topo.hosts.values():          # the same port and next hop as the host's /32
            assert v6[str(h.subnet6)] == v4[f"{h.ip}/32"], (sw_name, h.name)
    parsed = parse_config(cfg)
    assert any(r.prefix.version == 6 for r in parsed.switches["r1"].routes)


def test_host_ipv6_script_sets_the_quiet_knobs_before_ipv6_comes_up() -> None:
    script = lab.host_ipv6_script("eth0", "2001:db8:a00:100::1/64", "2001:db8:a00:100::fe",
                                  "02:01:00:00:01:01")
    steps = script.split(" && ")
    assert steps[0] == "ip6tables -A OUTPUT -o eth0 -d ff00::/8 -j DROP"
    knobs = steps[1].split()[2:]
    assert knobs[-1] == "net.ipv6.conf.eth0.disable_ipv6=0"       # last: after every knob
    for k in ("addr_gen_mode=1", "accept_ra=0", "router_solicitations=0", "accept_dad=0",
              "dad_transmits=0"):
        assert f"net.ipv6.conf.eth0.{k}" in knobs[:-1]
    assert steps[2] == "ip -6 addr add 2001:db8:a00:100::1/64 dev eth0 nodad"
    assert "nud permanent" in steps[3] and "lladdr 02:01:00:00:01:01" in steps[3]
    assert steps[4] == "ip -6 route add default via 2001:db8:a00:100::fe dev eth0"


# -- the generators' sockets ----------------------------------------------------------------

def test_family_helpers() -> None:
    assert inet.family_of("10.0.1.1") == socket.AF_INET
    assert inet.family_of("2001:db8::1") == socket.AF_INET6
    assert inet.family_of("::") == socket.AF_INET6
    with pytest.raises(ValueError):
        inet.family_of("2001:db8:::1")
    assert inet.udp_overhead_bytes(socket.AF_INET) == 28
    assert inet.udp_overhead_bytes(socket.AF_INET6) == 48
    assert inet.is_ipv6_peer(("2001:db8::1", 5000, 0, 0))
    assert not inet.is_ipv6_peer(("::ffff:10.0.1.1", 5000, 0, 0))
    assert not inet.is_ipv6_peer(("10.0.1.1", 5000))


def _loopback6() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _loopback6(), reason="no IPv6 loopback here")
def test_one_dual_stack_sink_receives_both_families_with_their_packet_sizes_and_dscp(
        tmp_path: Path) -> None:
    """mmapp over real sockets: a 1000-byte IP packet either way (payload 972 / 952),
    the DSCP from IP_TOS and IPV6_TCLASS, feedback back to the IPv6 sender."""
    with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
        s.bind(("::", 0))
        port = s.getsockname()[1]
    py = [sys.executable, "-m", "mmaqm_exp.mmapp"]
    env = {"PYTHONPATH": str(mmt_testenv.TOPO)}
    rx = subprocess.Popen(py + ["recv", "--bind", "::", "--port", str(port), "--duration", "4",
                                "--out", str(tmp_path / "r.csv")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 10
        assert rx.stderr is not None
        while "ready" not in rx.stderr.readline():
            assert time.monotonic() < deadline and rx.poll() is None
        s6 = subprocess.run(py + ["send", "--dst", "::1", "--port", str(port), "--flow-id", "6",
                                  "--duration", "0.5", "--dscp", "46"],
                            capture_output=True, text=True, env=env, timeout=20)
        s4 = subprocess.run(py + ["send", "--dst", "127.0.0.1", "--port", str(port),
                                  "--flow-id", "4", "--duration", "0.5", "--cbr-kbps", "400",
                                  "--dscp", "10"], capture_output=True, text=True, env=env,
                            timeout=20)
        assert s6.returncode == 0 and s4.returncode == 0, s6.stderr + s4.stderr
        out, _ = rx.communicate(timeout=20)
    finally:
        rx.kill()
    sent6 = json.loads(s6.stdout.splitlines()[-1])
    assert sent6["srtt_us"] is not None          # feedback reached the IPv6 sender
    rows = (tmp_path / "r.csv").read_text().splitlines()[1:]
    seen = {(r.split(",")[0], r.split(",")[4], r.split(",")[6]) for r in rows}
    assert seen == {("6", "1000", "46"), ("4", "1000", "10")}
    summary = json.loads(out.splitlines()[-1])
    assert summary["flows"]["4"]["src"].startswith("::ffff:127.0.0.1")


# -- controller counts and the report --------------------------------------------------------

def _counter_samples(t0: int, v6_tagged: int) -> list[dict]:
    """r1 port 4, one sample per 0.5 s over 0..10 s: 2+2 TCP, 1+v6_tagged TAGGED."""
    out = []
    for i in range(21):
        fam = {"ipv4": {"TCP": 2, "TAGGED": 1, "UNTAGGED": 0},
               "ipv6": {"TCP": 2, "TAGGED": v6_tagged, "UNTAGGED": 0}}
        tot = {c: fam["ipv4"][c] + fam["ipv6"][c] for c in ("TCP", "TAGGED", "UNTAGGED")}
        out.append({"switch": "r1", "t_ns": t0 + i * 500_000_000, "active_flows": {"4": tot},
                    "active_flows_by_family": {"4": fam}})
        out.append({"switch": "r2", "t_ns": t0 + i * 500_000_000,
                    "active_flows": {"4": {"TCP": 99, "TAGGED": 99, "UNTAGGED": 99}}})
    return out


def _two_family_scenario():
    return parse_scenario({
        "name": "t", "duration_s": 10, "phases": [{"name": "all", "start_s": 0, "end_s": 10}],
        "flows": [{"kind": "tcp", "count": 2, "src": "a", "dst": "b"},
                  {"kind": "tcp", "count": 2, "src": "a", "dst": "b", "family": "ipv6"},
                  {"kind": "mmapp", "src": "c", "dst": "d"},
                  {"kind": "mmapp", "src": "c", "dst": "d", "family": "ipv6"},
                  {"kind": "cbr", "src": "e", "dst": "f", "rate_kbps": 100, "start_s": 9,
                   "family": "ipv6"}]})


def test_controller_flow_counts_against_the_flows_started() -> None:
    t0 = 10**18
    sc = _two_family_scenario()
    got = analysis.controller_flow_counts(_counter_samples(t0, 1), ("r1", 4), t0, sc)["all"]
    assert got["window_s"] == [2.5, 7.5] and got["samples"] == 11    # the middle half
    # the CBR starts at 9 s, outside the window: not expected there
    assert got["expected"] == {"ipv4": {"TCP": 2, "TAGGED": 1, "UNTAGGED": 0},
                               "ipv6": {"TCP": 2, "TAGGED": 1, "UNTAGGED": 0}}
    assert got["counted"] == got["expected"]
    assert got["counted_total"] == {"TCP": 4, "TAGGED": 2, "UNTAGGED": 0}
    missed = analysis.controller_flow_counts(_counter_samples(t0, 0), ("r1", 4), t0, sc)["all"]
    assert missed["counted"]["ipv6"]["TAGGED"] == 0
    # samples of a controller without per-family counts: totals only
    old = [{k: v for k, v in s.items() if k != "active_flows_by_family"}
           for s in _counter_samples(t0, 1)]
    assert analysis.controller_flow_counts(old, ("r1", 4), t0, sc)["all"]["counted"] is None


def _summary(v6_tagged_counted: int) -> dict:
    t0 = 10**18
    flows = {
        "1": {"class": "TCP", "family": "ipv4", "tcp": {"snd_mss": 948, "sent_bytes": 948_000,
                                                        "total_retrans": 10}},
        "2": {"class": "TCP", "family": "ipv6", "tcp": {"snd_mss": 928, "sent_bytes": 928_000,
                                                        "total_retrans": 30}},
        "3": {"class": "TAGGED", "family": "ipv4"},
        "4": {"class": "TAGGED", "family": "ipv6"},
        "5": {"class": "TAGGED", "family": "ipv6"},
        "6": {"class": "TCP"},                       # no family: an IPv4 flow
    }
    udp = {"3": {"sent": 100, "received": 90, "mean_ms": 30.0, "jitter_ms": 1.0},
           "4": {"sent": 100, "received": 80, "mean_ms": 32.0, "jitter_ms": 2.0},
           "5": {"sent": 300, "received": 300, "mean_ms": 34.0, "jitter_ms": 4.0}}
    block = {"per_flow_kbps": {"1": 1000.0, "2": 1500.0, "3": 500.0, "4": 250.0, "5": 750.0,
                               "6": 2000.0},
             "udp_flows": udp}
    sc = _two_family_scenario()
    return {"bottleneck_rate_kbps": 10000.0, "flows": flows, "run": block,
            "phases": {"all": block},
            "scenario": {"phases": [{"name": "all", "start_s": 0, "end_s": 10}]},
            "controller_flow_counts": analysis.controller_flow_counts(
                _counter_samples(t0, v6_tagged_counted), ("r1", 4), t0, sc)}


def test_family_class_rows_hand_computed() -> None:
    rows = {(r["family"], r["class"]): r for r in D.family_class_rows(_summary(1))}
    assert set(rows) == {("ipv4", "TCP"), ("ipv6", "TCP"), ("ipv4", "TAGGED"), ("ipv6", "TAGGED")}
    v4tcp = rows[("ipv4", "TCP")]
    assert (v4tcp["flows"], v4tcp["total_kbps"], v4tcp["per_flow_kbps"]) == (2, 3000.0, 1500.0)
    assert v4tcp["link_share"] == 0.3
    assert v4tcp["loss"] == 0.01 and v4tcp["loss_kind"] == "retransmitted"   # 10 of 1000 segments
    assert rows[("ipv6", "TCP")]["loss"] == 0.03                              # 30 of 1000
    v6tag = rows[("ipv6", "TAGGED")]
    assert (v6tag["flows"], v6tag["total_kbps"], v6tag["link_share"]) == (2, 1000.0, 0.1)
    assert v6tag["loss"] == 0.05                        # 20 of 400 packets
    assert (v6tag["delay_ms"], v6tag["jitter_ms"]) == (33.0, 3.0)
    assert rows[("ipv4", "TAGGED")]["loss"] == 0.1


def test_the_report_text_shows_both_families_and_flags_a_miscount(tmp_path: Path) -> None:
    rep = D.report({"DCBT": _summary(1), "RED": _summary(0)})
    assert rep["DCBT"]["flow_counts"][0]["agree"] is True
    assert rep["RED"]["flow_counts"][0]["agree"] is False
    path = D.write_report({"DCBT": _summary(1), "RED": _summary(0)}, tmp_path)
    text = path.read_text()
    assert "DCBT             ipv6   TAGGED       2     1000    10.0         500    5.00" in text
    assert "3.00r" in text                      # the IPv6 TCP retransmissions
    line = next(x for x in text.splitlines() if x.startswith("RED") and "all" in x)
    assert "1+0 (1+1)" in line and line.rstrip().endswith("NO")
    assert json.loads((tmp_path / D.OUT_JSON).read_text())["DCBT"]["run"]


def test_the_report_cli_refuses_a_folder_without_a_summary(tmp_path: Path) -> None:
    assert D.main(["--run", f"DCBT={tmp_path}", "--out", str(tmp_path / "o")]) == 2
    run = tmp_path / "DCBT"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps(_summary(1)))
    assert D.main(["--run", f"DCBT={run}", "--out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / D.OUT_TEXT).exists()


# -- the hosts' IPv6, brought up for real (root; no pipeline) ------------------------------

def _network_skip() -> "str | None":
    from mmaqm_exp import network as N
    return N.missing_prereqs() or mmt_testenv.nfq_delay_build_missing()


@pytest.mark.skipif(_network_skip() is not None, reason=str(_network_skip()))
def test_hosts_get_quiet_ipv6_and_nothing_else_reaches_the_switch(tmp_path: Path) -> None:
    """Network(ipv6=True): each host has its one global address (no link-local), the
    static gateway neighbour and default route, the multicast drop rule and the delay
    rules for IPv6 sources; the switch-side ends keep IPv6 off; and in 1.5 s of an idle
    network no packet reaches a switch port (no router solicitation, MLD or DAD)."""
    from mmaqm_exp.network import Network

    topo = load_topology(TOPO)
    with Network(topo, tmp_path, None, name_prefix=f"ds{__import__('os').getpid() % 100000}",
                 ipv6=True) as net:
        rx0 = net.switch_rx_packets()
        # nothing since the veths came up (without the multicast rule: the hosts' MLD
        # reports, 6 per switch, checked by hand)
        assert rx0 == {"r1": 0, "r2": 0}
        h = net.hosts["tcp1"]
        assert (h.ip6, h.gateway_ip6) == ("2001:db8:a00:100::1", "2001:db8:a00:100::fe")
        assert net.host_ip("tcp2", "ipv6") == "2001:db8:a00:400::1"
        addrs = net.run("tcp1", ["ip", "-6", "-o", "addr", "show", "dev", "eth0"]).stdout
        assert addrs.count("inet6") == 1 and "2001:db8:a00:100::1/64" in addrs, addrs
        assert "fe80" not in net.run("tcp1", ["ip", "-6", "addr"]).stdout
        assert "default via 2001:db8:a00:100::fe dev eth0" in \
            net.run("tcp1", ["ip", "-6", "route"]).stdout
        neigh = net.run("tcp1", ["ip", "-6", "neigh", "show", "2001:db8:a00:100::fe"]).stdout
        assert h.gateway_mac in neigh and "PERMANENT" in neigh
        assert "-A OUTPUT -d ff00::/8 -o eth0 -j DROP" in \
            net.run("tcp1", ["ip6tables", "-S", "OUTPUT"]).stdout
        rules6 = net.run("tcp2", ["ip6tables", "-S", "INPUT"]).stdout
        assert "-s 2001:db8:a00:100::1/128" in rules6 and "NFQUEUE" in rules6
        for p in ("r1-p1", "r1-p4", "r2-p1"):
            v6 = net.run_switch_ns(["sysctl", "-n", f"net.ipv6.conf.{p}.disable_ipv6"]).stdout
            assert v6.strip() == "1", p
        time.sleep(1.5)
        assert net.switch_rx_packets() == rx0
        # an IPv6 packet does leave the host toward the router (the route and the neighbour)
        send = net.run("tcp1", [sys.executable, "-c",
                                "import socket; s = socket.socket(socket.AF_INET6, "
                                "socket.SOCK_DGRAM); [s.sendto(b'x', ('2001:db8:a00:400::1', 9)) "
                                "for _ in range(2)]"], timeout=10)
        assert send.returncode == 0, send.stderr
        time.sleep(0.2)
        assert net.switch_rx_packets()["r1"] == rx0["r1"] + 2
        with pytest.raises(ValueError):
            Network(topo, tmp_path, None).host_ip("tcp1", "ipv6")


@pytest.mark.skipif(_network_skip() is not None, reason=str(_network_skip()))
def test_a_dual_stack_scenario_runs_both_families_between_two_namespaces(tmp_path: Path) -> None:
    """traffic.run_scenario over the two-namespace test bed with IPv6 (no switch): each
    family's TCP, MM_APP and CBR flow delivers, in 1000-byte IP packets either way."""
    from mmaqm_exp.netns import ns_pair_net
    from mmaqm_exp.traffic import run_scenario

    flows = []
    for fam in ("ipv4", "ipv6"):
        flows += [{"kind": "tcp", "src": "tcp1", "dst": "tcp2", "family": fam},
                  {"kind": "mmapp", "src": "mm1", "dst": "mm2", "family": fam},
                  {"kind": "cbr", "src": "cbr1", "dst": "cbr2", "rate_kbps": 400, "family": fam}]
    sc = parse_scenario({"name": "ds", "duration_s": 2,
                         "phases": [{"name": "all", "start_s": 0, "end_s": 2}], "flows": flows})
    with ns_pair_net("ds", ipv6=True) as net:
        assert net.host_ip("tcp2", "ipv6").endswith("::2")
        res = run_scenario(net, sc, tmp_path)
    s = analysis.analyze(res)
    got = {(s["flows"][fid]["family"], s["flows"][fid]["class"]): kbps
           for fid, kbps in s["run"]["per_flow_kbps"].items()}
    assert set(got) == {(f, c) for f in ("ipv4", "ipv6") for c in ("TCP", "TAGGED", "UNTAGGED")}
    assert all(v > 100 for v in got.values()), got
    assert 380 <= got[("ipv6", "UNTAGGED")] <= 420          # the CBR's 400 kbit/s, IP bytes
    sizes = {line.split(",")[4] for line in
             (tmp_path / "udp-recv-cbr2.csv").read_text().splitlines()[1:]}
    assert sizes == {"1000"}


# -- the criteria stated before the runs (docs/experiments/dual-stack.md) ------------------

def _class_summary(v6_tagged_kbps: float, v6_untagged_lost: int, warnings: tuple = (),
                   v6_counted_tagged: int = 1) -> dict:
    """Both families, one flow per class each: IPv4 TAGGED 1000 kbit/s, UNTAGGED
    500 kbit/s with 10 of 100 packets lost; IPv6's as given (UNTAGGED sends 100)."""
    t0 = 10**18
    flows = {str(i): {"class": c, "family": f} for i, (f, c) in enumerate(
        [(f, c) for f in ("ipv4", "ipv6") for c in ("TCP", "TAGGED", "UNTAGGED")])}
    for fid in ("0", "3"):
        flows[fid]["tcp"] = {"snd_mss": 1000, "sent_bytes": 1_000_000, "total_retrans": 0}
    kbps = {"0": 2000.0, "1": 1000.0, "2": 500.0, "3": 2200.0, "4": v6_tagged_kbps, "5": 500.0}
    udp = {"1": {"sent": 100, "received": 100}, "2": {"sent": 100, "received": 90},
           "4": {"sent": 100, "received": 100},
           "5": {"sent": 100, "received": 100 - v6_untagged_lost}}
    block = {"per_flow_kbps": kbps, "udp_flows": udp}
    return {"bottleneck_rate_kbps": 10000.0, "flows": flows, "run": block,
            "phases": {"all": block}, "warnings": list(warnings),
            "scenario": {"phases": [{"name": "all", "start_s": 0, "end_s": 10}]},
            "controller_flow_counts": analysis.controller_flow_counts(
                _counter_samples(t0, v6_counted_tagged), ("r1", 4), t0, _two_family_scenario())}


def test_the_criteria_take_the_median_over_runs_and_hold_at_their_bounds() -> None:
    # TAGGED v6/v4 per flow 1.10, 0.80, 1.05 -> median 1.05 (within 10 %); UNTAGGED loss
    # v6 - v4: 13 - 10 = +3 points, 0 - 10 = -10, 13 - 10 = +3 -> +3, the bound itself.
    runs = {"a": {"DCBT": _class_summary(1100.0, 13)}, "b": {"DCBT": _class_summary(800.0, 0)},
            "c": {"DCBT": _class_summary(1050.0, 13)}}
    e = D.criteria(runs)["DCBT"]
    tagged, untagged = e["classes"]["TAGGED"], e["classes"]["UNTAGGED"]
    assert tagged["ratio"] == pytest.approx([1.1, 0.8, 1.05])
    assert tagged["ratio_median"] == pytest.approx(1.05)
    assert untagged["loss_diff_pts"] == pytest.approx([3.0, -10.0, 3.0])
    assert untagged["loss_diff_median"] == pytest.approx(3.0)
    assert e["classes"]["TCP"]["ratio_median"] == pytest.approx(1.1)   # shown, never judged
    assert tagged["holds"] and untagged["holds"] and e["counts_agree"] and e["met"]
    # one step past a bound fails it: a median ratio of 1.11, or a median loss gap of 4 points
    over = {"a": {"DCBT": _class_summary(1110.0, 10)}, "b": {"DCBT": _class_summary(1110.0, 10)},
            "c": {"DCBT": _class_summary(1000.0, 10)}}
    assert not D.criteria(over)["DCBT"]["classes"]["TAGGED"]["holds"]
    assert not D.criteria(over)["DCBT"]["met"]
    lossy = {n: {"DCBT": _class_summary(1000.0, 14)} for n in "abc"}
    assert D.criteria(lossy)["DCBT"]["classes"]["TAGGED"]["holds"]
    assert not D.criteria(lossy)["DCBT"]["classes"]["UNTAGGED"]["holds"]
    # fewer than three counted runs is never "met"
    assert not D.criteria({"a": runs["a"], "c": runs["c"]})["DCBT"]["met"]


def test_the_criteria_leave_out_a_warned_run_and_fail_on_a_miscount() -> None:
    good = {n: {"DCBT": _class_summary(1000.0, 10)} for n in "abc"}
    warned = dict(good, d={"DCBT": _class_summary(100.0, 90, warnings=("switch fell behind",))})
    e = D.criteria(warned)["DCBT"]
    assert e["runs"] == ["a", "b", "c"] and e["left_out"] == ["d"] and e["met"]
    miscount = dict(good, c={"DCBT": _class_summary(1000.0, 10, v6_counted_tagged=0)})
    e = D.criteria(miscount)["DCBT"]
    assert not e["counts_agree"] and not e["met"]
    # RED is class-blind: only its counts are judged
    blind = D.criteria({n: {"RED": _class_summary(500.0, 60)} for n in "abc"})["RED"]
    assert not blind["judged"] and blind["met"]
    text = D.format_criteria(D.criteria({n: {"RED": _class_summary(500.0, 60)} for n in "abc"}))
    assert "| RED | 3 | 0.500 [0.500 to 0.500] |" in text
    assert text.rstrip().endswith("| yes | yes (counts only: class-blind) |")


def test_the_pages_criteria_table_is_the_rendering_of_the_committed_runs() -> None:
    """docs/experiments/dual-stack.md's criteria table, between its markers, equals
    `python -m mmaqm_exp.dual_stack_report --criteria` over the runs the marker names."""
    repo = Path(__file__).resolve().parents[2]
    page = (repo / "docs/experiments/dual-stack.md").read_text()
    m = re.search(r"<!-- dual-stack-criteria: ([^>]+?) -->\n(.*?)<!-- /dual-stack-criteria -->",
                  page, re.S)
    assert m, "the page has no criteria table"
    runs = m.group(1).split()
    assert len(runs) >= D.MIN_RUNS
    loaded = {r: D.load_run(repo / "docs/results" / r) for r in runs}
    assert all(len(v) == 7 for v in loaded.values()), "every run has the seven algorithms"
    assert m.group(2) == D.format_criteria(D.criteria(loaded)), (
        "stale: regenerate with python -m mmaqm_exp.dual_stack_report --criteria "
        + " ".join(f"docs/results/{r}" for r in runs))


def test_the_criteria_table_names_each_count_that_missed() -> None:
    runs = {n: {"DCBT": _class_summary(1000.0, 10)} for n in "ab"}
    runs["c"] = {"DCBT": _class_summary(1000.0, 10, v6_counted_tagged=0)}
    text = D.format_criteria(D.criteria(runs))
    assert "| no (c all TAGGED 1+0 of 1+1) | no |" in text
    old = _class_summary(1000.0, 10)
    for c in old["controller_flow_counts"].values():
        c["counted"] = None                     # a controller without per-family counts
    text = D.format_criteria(D.criteria({"a": {"DCBT": old}}))
    assert "no (a all TCP not logged; a all TAGGED not logged; a all UNTAGGED not logged)" in text
