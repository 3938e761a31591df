"""Topology files: loading, every validation error, derived routes/delays, controller config.

Pure: touches no system state. The controller config is checked with the
controller's own validator, ``mmaqm.config.parse_config``.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any, Callable

import pytest

import mmt_testenv

from mmaqm_exp import topology as T
from mmaqm_exp.topology import (MAX_TOPOLOGY_BYTES, TopologyError, controller_config,
                                 load_topology, parse_topology)

TOPOS = mmt_testenv.TOPO / "topos"
DCBT_POLICY = {"algorithm": "DCBT", "min_th_pkts": 5, "max_th_pkts": 15, "max_p": 0.1}


def _base() -> dict[str, Any]:
    """A small valid topology: h1 - s1 ==(bottleneck)== s2 - h2."""
    return {
        "hosts": {"h1": {}, "h2": {}},
        "switches": {"s1": {}, "s2": {}},
        "links": [["h1", "s1", 1, 100], ["s1", "s2", 10, 10], ["h2", "s2", 2, 100]],
        "bottleneck": {"from": "s1", "to": "s2"},
    }


def _errors(data: object) -> list[str]:
    with pytest.raises(TopologyError) as info:
        parse_topology(data)
    return info.value.errors


# ------------------------------------------------------------ shipped files
def test_dcbt_dumbbell_matches_the_paper():
    t = load_topology(TOPOS / "dcbt-dumbbell.json")
    assert t.name == "dcbt-dumbbell"
    assert set(t.hosts) == {"tcp1", "mm1", "cbr1", "tcp2", "mm2", "cbr2"}
    bn = t.bottleneck
    # dcbt §5, Fig. 7: 25 Mbit/s, 20 ms between the routers, 60-packet queue, 1 KB packets
    assert (bn.switch, bn.to_switch, bn.rate_mbps, bn.delay_ms) == ("r1", "r2", 25, 20)
    assert (bn.queue_limit_pkts, bn.packet_bytes, bn.rate_pps) == (60, 1000, 3125)
    for h in t.hosts.values():
        assert t.links[h.link].delay_ms == 5 and t.links[h.link].rate_mbps == 25
        assert h.switch == ("r1" if h.name.endswith("1") else "r2")
    assert t.rtt_ms("tcp1", "tcp2") == 60          # 2 x (5 + 20 + 5)
    assert t.one_way_delay_ms("mm1", "cbr2") == 30
    assert t.rtt_ms("tcp1", "cbr1") == 20          # same side: 2 x (5 + 5)
    assert [t.links[i].delay_ms for i in t.path("tcp1", "tcp2")] == [5, 20, 5]


def test_cbt_two_lan_matches_the_paper():
    t = load_topology(TOPOS / "cbt-two-lan.json")
    bn = t.bottleneck
    # cbt §4, Fig. 4: 100 Mbit/s LANs, 10 Mbit/s between the routers, 60-packet queues
    assert bn.rate_mbps == 10 and bn.rate_pps == 1250 and bn.queue_limit_pkts == 60
    assert all(t.links[h.link].rate_mbps == 100 for h in t.hosts.values())
    assert t.rtt_ms("tcp1", "tcp2") == 60
    assert t.notes and any("delay" in n.lower() for n in t.notes)


def test_max_switch_port_matches_the_p4_program():
    from mmaqm import p4constants
    from mmaqm import config as mcfg

    assert T.MAX_SWITCH_PORT == p4constants.NUM_PORTS - 1
    assert T.MAX_QUEUE_LIMIT_PKTS == mcfg.MAX_QUEUE_LIMIT_PKTS
    assert T.DEFAULT_QUEUE_LIMIT_PKTS == mcfg.DEFAULT_QUEUE_LIMIT_PKTS
    assert T.DEVICE_ID == mcfg.DEFAULT_DEVICE_ID


# ---------------------------------------------------------- derived values
def test_automatic_addresses_ports_and_macs():
    t = parse_topology(_base())
    h1, h2 = t.hosts["h1"], t.hosts["h2"]
    assert (h1.cidr, h1.gateway_ip, h1.mac) == ("10.0.1.1/24", "10.0.1.254", "02:00:0a:00:01:01")
    assert (h2.cidr, h2.gateway_ip) == ("10.0.2.1/24", "10.0.2.254")
    assert (h1.switch, h1.switch_port) == ("s1", 1)
    assert t.bottleneck.port == 2                 # s1's next free port, in link order
    s2 = t.switches["s2"]
    assert sorted(s2.ports) == [1, 2] and s2.ports[1].peer == "s1" and s2.ports[2].peer == "h2"
    assert s2.ports[1].ifname == "s2-p1" and s2.ports[1].mac == "02:01:00:00:02:01"
    assert s2.ports[1].peer_mac == t.switches["s1"].ports[2].mac
    assert t.egress_port("s1", "h2") == 2 and t.egress_port("s2", "h1") == 1
    assert t.rtt_ms("h1", "h2") == 2 * (1 + 10 + 2)


def test_explicit_ports_addresses_and_macs():
    data = _base()
    data["hosts"] = {"h1": {"ip": "10.0.1.7/24", "gateway": "10.0.1.1", "mac": "02:AA:00:00:00:01"},
                     "h2": {}}
    data["links"] = [["h1", "s1-p5"], ["s1-p9", "s2-p3", 10, 10], ["s2", "h2"]]
    t = parse_topology(data)
    h1, h2 = t.hosts["h1"], t.hosts["h2"]
    assert (h1.ip, h1.gateway_ip, h1.mac, h1.switch_port) == ("10.0.1.7", "10.0.1.1",
                                                            "02:aa:00:00:00:01", 5)
    assert h2.cidr == "10.0.2.1/24"               # 10.0.1.0/24 is taken: skipped
    assert h2.switch_port == 1 and t.bottleneck.port == 9
    assert t.links[0].delay_ms == 0 and t.links[0].rate_mbps is None    # defaults


def test_explicit_subnet_other_than_24_gets_last_address_as_gateway():
    data = _base()
    data["hosts"]["h1"] = {"ip": "192.168.5.1/30"}
    t = parse_topology(data)
    assert t.hosts["h1"].gateway_ip == "192.168.5.2"
    assert t.hosts["h1"].mac == "02:00:c0:a8:05:01"


def test_three_switch_chain_routes_and_delays():
    data = {
        "hosts": {"a": {}, "b": {}, "c": {}},
        "switches": {"s1": {}, "s2": {}, "s3": {}},
        "links": [["a", "s1", 1], ["s1", "s2", 10, 10], ["s2", "s3", 3], ["b", "s3", 2],
                  ["c", "s2", 4]],
        "bottleneck": {"from": "s1", "to": "s2", "queue_limit_pkts": 30, "packet_bytes": 1500},
    }
    t = parse_topology(data)
    assert t.one_way_delay_ms("a", "b") == 1 + 10 + 3 + 2
    assert t.one_way_delay_ms("b", "c") == 2 + 3 + 4
    assert t.bottleneck.rate_pps == round(10e6 / (8 * 1500))
    assert t.egress_port("s3", "a") == t.switches["s3"].ports[1].number
    assert t.switches["s3"].ports[t.egress_port("s3", "a")].peer == "s2"


def test_load_refuses_special_and_oversized_files_without_blocking(tmp_path: Path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(TopologyError, match="a FIFO, not a topology"):
        load_topology(fifo)                      # no writer: an open() would block
    with pytest.raises(TopologyError, match="a character device, not a topology"):
        load_topology("/dev/zero")
    big = tmp_path / "big.json"
    big.write_text(" " * (MAX_TOPOLOGY_BYTES + 1))
    with pytest.raises(TopologyError, match=f"larger than {MAX_TOPOLOGY_BYTES} bytes"):
        load_topology(big)


def test_load_reports_file_problems(tmp_path: Path):
    with pytest.raises(TopologyError, match="cannot read"):
        load_topology(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{\"hosts\": ")
    with pytest.raises(TopologyError, match="invalid JSON"):
        load_topology(bad)
    dup = tmp_path / "dup.json"
    dup.write_text('{"hosts": {"h1": {}, "h1": {}}}')
    with pytest.raises(TopologyError, match="duplicate key 'h1'"):
        load_topology(dup)
    ok = tmp_path / "small.json"
    ok.write_text(json.dumps(_base()))
    assert load_topology(ok).name == "small"       # default name: the file's stem


# ------------------------------------------------------- validation errors
def _set(path: list[Any], value: Any) -> Callable[[dict], None]:
    def apply(d: dict) -> None:
        for key in path[:-1]:
            d = d[key]
        if value is _DELETE:
            del d[path[-1]]
        else:
            d[path[-1]] = value
    return apply


_DELETE = object()

BAD_CASES: list[tuple[str, Callable[[dict], None], str]] = [
    ("unknown top key", _set(["link"], []), "link: unknown key"),
    ("missing hosts", _set(["hosts"], _DELETE), "hosts: required"),
    ("missing bottleneck", _set(["bottleneck"], _DELETE), "bottleneck: required"),
    ("notes not strings", _set(["notes"], [1]), "notes: must be a string or a list of strings"),
    ("name empty", _set(["name"], ""), "name: must be a non-empty string"),
    ("hosts not object", _set(["hosts"], ["h1"]), "hosts: must be an object"),
    ("switch unknown key", _set(["switches", "s1"], {"grpc": 1}), "switches.s1.grpc: unknown key"),
    ("host unknown key", _set(["hosts", "h1"], {"addr": "10.0.0.1/24"}), "hosts.h1.addr: unknown key"),
    ("host body not object", _set(["hosts", "h1"], "x"), "hosts.h1: must be an object"),
    ("host ip without prefix", _set(["hosts", "h1"], {"ip": "10.0.0.1"}),
     "hosts.h1.ip: must be an IPv4 address with prefix length"),
    ("host ip is network address", _set(["hosts", "h1"], {"ip": "10.0.0.0/24"}),
     "hosts.h1.ip: 10.0.0.0 is the network or broadcast address"),
    ("host ip public", _set(["hosts", "h1"], {"ip": "8.8.8.1/24"}), "hosts.h1.ip: must be a private"),
    ("host ip /31", _set(["hosts", "h1"], {"ip": "10.0.0.1/31"}), "hosts.h1.ip: prefix length must be in 8..30"),
    ("gateway outside subnet", _set(["hosts", "h1"], {"ip": "10.0.0.1/24", "gateway": "10.0.1.1"}),
     "hosts.h1.gateway: must be a host address in 10.0.0.0/24"),
    ("gateway equals ip", _set(["hosts", "h1"], {"ip": "10.0.0.1/24", "gateway": "10.0.0.1"}),
     "hosts.h1.gateway: must differ"),
    ("gateway without ip", _set(["hosts", "h1"], {"gateway": "10.0.0.1"}), "hosts.h1.gateway: needs an explicit ip"),
    ("multicast mac", _set(["hosts", "h1"], {"mac": "01:00:5e:00:00:01"}), "hosts.h1.mac: must be a unicast MAC"),
    ("bad mac", _set(["hosts", "h1"], {"mac": "02:00:00:00:01"}),
     "hosts.h1.mac: must be a MAC like \"02:00:00:00:00:01\", got string '02:00:00:00:01'"),
    ("mac as number", _set(["hosts", "h1"], {"mac": 2}),
     "hosts.h1.mac: must be a MAC like \"02:00:00:00:00:01\", got 2"),
    ("all-zero mac", _set(["hosts", "h1"], {"mac": "00:00:00:00:00:00"}),
     "hosts.h1.mac: must not be the all-zero MAC"),
    ("mac equals router port", _set(["hosts", "h1"], {"mac": "02:01:00:00:01:01"}),
     "hosts.h1.mac: 02:01:00:00:01:01 is also the MAC of router port s1-p1"),
    ("host name with dash", _set(["hosts"], {"h-1": {}, "h2": {}}), "hosts.h-1: name must match"),
    ("host name too long", _set(["hosts"], {"h1234567890": {}, "h2": {}}), "hosts.h1234567890: name must match"),
    ("switch name starts with digit", _set(["switches"], {"1s": {}, "s2": {}}), "switches.1s: name must match"),
    ("host name is a switch", _set(["hosts"], {"s1": {}, "h2": {}}), "hosts.s1: name is also a switch"),
    ("links not list", _set(["links"], {}), "links: must be a list"),
    ("link too short", _set(["links", 0], ["h1"]), "links[0]: must be a list [a, b, delay_ms, rate_mbps]"),
    ("unknown node", _set(["links", 0], ["hx", "s1"]), "links[0].a: unknown node 'hx'"),
    ("unknown switch in port", _set(["links", 0], ["h1", "s9-p1"]), "links[0].b: unknown switch 's9'"),
    ("host with port", _set(["links", 0], ["h1-p1", "s1"]), "links[0].a: 'h1-p1': a host has no port numbers"),
    ("port 0", _set(["links", 0], ["h1", "s1-p0"]), "links[0].b: port must be in 1..63, got 0"),
    ("port 64", _set(["links", 0], ["h1", "s1-p64"]), "links[0].b: port must be in 1..63, got 64"),
    ("delay negative", _set(["links", 0], ["h1", "s1", -1]), "links[0].delay_ms: must be >= 0, got -1"),
    ("delay as string", _set(["links", 0], ["h1", "s1", "5ms"]),
     "links[0].delay_ms: must be a number, got string '5ms'"),
    ("rate zero", _set(["links", 2], ["h2", "s2", 1, 0]), "links[2].rate_mbps: must be > 0, got 0"),
    ("rate bool", _set(["links", 2], ["h2", "s2", 1, True]),
     "links[2].rate_mbps: must be a number, got boolean true"),
    ("self link", _set(["links", 1], ["s1", "s1-p5"]), "links[1]: links 's1' to itself"),
    ("host to host", _set(["links", 1], ["h1", "h2"]), "links[1]: links two hosts"),
    ("port used twice", _set(["links"], [["h1", "s1-p1"], ["s1-p1", "s2", 10, 10], ["h2", "s2"]]),
     "links[1].a: port s1-p1 is also used by links[0]"),
    ("host two links", _set(["links"], [["h1", "s1"], ["h1", "s2"], ["s1", "s2", 10, 10], ["h2", "s2"]]),
     "hosts.h1: has 2 links"),
    ("host no link", _set(["links"], [["s1", "s2", 10, 10], ["h2", "s2"]]), "hosts.h1: has no link"),
    ("switch no link", _set(["switches", "s3"], {}), "switches.s3: has no link"),
    ("parallel switch links", _set(["links"], [["h1", "s1"], ["s1", "s2", 10, 10], ["s2", "s1", 1, 1],
                                               ["h2", "s2"]]),
     "links[2]: second link between s2 and s1"),
    ("bottleneck list", _set(["bottleneck"], [{"from": "s1", "to": "s2"}]),
     "bottleneck: must be one object"),
    ("bottleneck unknown key", _set(["bottleneck", "rate_mbps"], 10), "bottleneck.rate_mbps: unknown key"),
    ("bottleneck from missing", _set(["bottleneck", "from"], _DELETE), "bottleneck.from: required"),
    ("bottleneck from host", _set(["bottleneck", "from"], "h1"), "bottleneck.from: must be a switch name"),
    ("bottleneck same", _set(["bottleneck", "to"], "s1"), "bottleneck.to: must differ"),
    ("bottleneck queue 0", _set(["bottleneck", "queue_limit_pkts"], 0),
     "bottleneck.queue_limit_pkts: must be in 1..65535, got 0"),
    ("bottleneck queue float", _set(["bottleneck", "queue_limit_pkts"], 60.5),
     "bottleneck.queue_limit_pkts: must be an integer"),
    ("bottleneck packet too big", _set(["bottleneck", "packet_bytes"], 2000),
     "bottleneck.packet_bytes: must be in 64..1500, got 2000"),
    ("bottleneck link without rate", _set(["links", 1], ["s1", "s2", 10]),
     "links[1].rate_mbps: required: this link is the bottleneck"),
]


@pytest.mark.parametrize("mutate,expected", [(m, e) for _, m, e in BAD_CASES],
                         ids=[name for name, _, _ in BAD_CASES])
def test_bad_input_names_the_field(mutate, expected):
    data = _base()
    mutate(data)
    errors = _errors(data)
    assert any(expected in e for e in errors), errors


def test_json_values_get_no_yaml_hints():
    """The YAML 1.1 hints of mmaqm.validation (exponents, unquoted MACs) are not for JSON."""
    data = _base()
    data["links"][0] = ["h1", "s1", "1e3"]
    assert _errors(data) == ["links[0].delay_ms: must be a number, got string '1e3'"]
    data = _base()
    data["hosts"]["h1"] = {"mac": 9783936001}
    assert _errors(data) == ['hosts.h1.mac: must be a MAC like "02:00:00:00:00:01", got 9783936001']


def test_overlapping_subnets():
    data = _base()
    data["hosts"] = {"h1": {"ip": "10.0.0.1/16"}, "h2": {"ip": "10.0.5.1/24"}}
    assert any(e.startswith("hosts.h2.ip: subnet 10.0.5.0/24 overlaps hosts.h1's 10.0.0.0/16")
               for e in _errors(data))


def test_duplicate_host_mac():
    data = _base()
    data["hosts"] = {"h1": {"mac": "02:00:00:00:00:09"}, "h2": {"mac": "02:00:00:00:00:09"}}
    assert "hosts.h2.mac: 02:00:00:00:00:09 is also the MAC of hosts.h1" in _errors(data)


def test_bottleneck_between_unlinked_switches_and_disconnected_hosts():
    data = {"hosts": {"h1": {}, "h2": {}}, "switches": {"s1": {}, "s2": {}},
            "links": [["h1", "s1"], ["h2", "s2"]], "bottleneck": {"from": "s1", "to": "s2"}}
    assert "bottleneck: no link joins s1 and s2" in _errors(data)
    data["bottleneck"] = {"from": "s1", "to": "s3"}
    data["switches"]["s3"] = {}
    data["links"].append(["s1", "s3", 1, 1])
    errors = _errors(data)
    assert "hosts.h1: cannot reach hosts.h2 (the switches are not connected)" in errors


def test_not_an_object_and_every_error_at_once():
    assert _errors([]) == ["(top level): must be an object, got a list"]
    data = _base()
    data["links"][0] = ["h1", "s1", -1]
    data["links"][2] = ["h2", "s2", 1, 0]
    data["hosts"]["h1"] = {"mac": "ff:ff:ff:ff:ff:ff"}
    errors = _errors(data)
    assert len(errors) == 3, errors
    assert str(TopologyError(errors)).count("\n") == 3


def test_port_exhaustion():
    hosts = {f"h{i}": {} for i in range(64)}
    data = {"hosts": hosts, "switches": {"s1": {}, "s2": {}},
            "links": [[h, "s1"] for h in list(hosts)[:63]] + [["s1", "s2", 1, 1], ["h63", "s2"]],
            "bottleneck": {"from": "s1", "to": "s2"}}
    assert "links[63].a: switch s1 has no free port left (max 63)" in _errors(data)


def test_feng_fig1_and_its_policies_match_the_paper():
    """feng section 3.1: n0 -> n5, 10 Mbit/s bottleneck (fair share 2.5 Mbit/s for 4
    connections), five 1 ms links (RTT 10 ms); drop-tail 20 KB, RED 20 KB (5 / 15 KB),
    RED 50 KB (20 / 40 KB), with 1000-byte packets."""
    from mmaqm_exp.experiment import load_policies
    from mmaqm_exp.scenario import load_scenario

    t = load_topology(TOPOS / "feng-fig1.json")
    bn = t.bottleneck
    assert (bn.rate_mbps, bn.rate_pps, bn.packet_bytes, bn.queue_limit_pkts) == (10, 1250, 1000, 20)
    assert t.rtt_ms("n0", "n5") == 10 and t.one_way_delay_ms("n0", "n5") == 5
    pol = load_policies(mmt_testenv.TOPO / "policies" / "feng.yaml")
    got = {k: (v["algorithm"], v["queue_limit_pkts"], v.get("min_th_pkts"), v.get("max_th_pkts"))
           for k, v in pol.items()}
    assert got == {"DROP_TAIL": ("DROP_TAIL", 20, None, None), "RED": ("RED", 20, 5, 15),
                   "RED_50KB": ("RED", 50, 20, 40)}
    for v in pol.values():
        _parse(controller_config(t, v))        # the controller accepts each on this topology
    sc = load_scenario(mmt_testenv.TOPO / "scenarios" / "feng-fig2.yaml", hosts=t.hosts)
    assert [(f.kind, f.src, f.dst) for f in sc.flows] == [("tcp", "n0", "n5")] * 4
    mm = load_scenario(mmt_testenv.TOPO / "scenarios" / "feng-mm.yaml", hosts=t.hosts)
    assert [f.cls for f in mm.flows] == ["TCP"] * 3 + ["TAGGED"]
    many = load_scenario(mmt_testenv.TOPO / "scenarios" / "feng-fig3b.yaml", hosts=t.hosts)
    assert [(f.kind, f.src, f.dst) for f in many.flows] == [("tcp", "n0", "n5")] * 32
    assert sc.duration_s == mm.duration_s == many.duration_s == 64


# -------------------------------------------------------- controller config
def _parse(cfg: dict) -> Any:
    from mmaqm.config import load_yaml, parse_config

    # through YAML text, as mmaqm-ctl reads it
    return parse_config(load_yaml(T.dump_controller_config(cfg)))


@pytest.mark.parametrize("policy", [
    DCBT_POLICY,
    {"algorithm": "RED", "min_th_pkts": 5, "max_th_pkts": 15, "max_p": 0.1, "ewma_weight": 2**-9},
    {"algorithm": "CBT_RED_ALL", "min_th_pkts": 5, "max_th_pkts": 15, "max_p": 0.1,
     "tagged_th_pkts": 2.9, "untagged_th_pkts": 0.6},
    {"algorithm": "DROP_TAIL"},
], ids=lambda p: p["algorithm"])
def test_controller_config_is_valid_for_the_dumbbell(policy):
    t = load_topology(TOPOS / "dcbt-dumbbell.json")
    policy_before = copy.deepcopy(policy)
    cfg = controller_config(t, policy)
    assert policy == policy_before                            # the caller's dict is not mutated
    # The bottleneck (r1-p4) gets the policy with the topology's queue limit, every other
    # port the DROP_TAIL default; nothing else (the BMv2 depth and rate are the runner's).
    idle: dict = {}
    assert cfg["switches"]["r1"]["policies"] == {
        "default": {"algorithm": "DROP_TAIL", "queue_limit_pkts": 1000},
        4: {**policy_before, "queue_limit_pkts": 60, **idle}}
    assert cfg["switches"]["r2"]["policies"] == {
        "default": {"algorithm": "DROP_TAIL", "queue_limit_pkts": 1000}}
    parsed = _parse(cfg)
    assert set(parsed.switches) == {"r1", "r2"}
    r1, r2 = parsed.switches["r1"], parsed.switches["r2"]
    assert (r1.p4runtime_addr, r2.p4runtime_addr) == ("127.0.0.1:9559", "127.0.0.1:9560")
    assert r1.device_id == r2.device_id == 1
    bn = r1.policies[4]
    assert bn.algorithm == policy["algorithm"] and bn.queue_limit_pkts == 60
    for sw in (r1, r2):
        for port, pol in sw.policies.items():
            if (sw.name, port) != ("r1", 4):
                assert pol.algorithm == "DROP_TAIL" and pol.queue_limit_pkts == 1000
        assert set(sw.ports) == set(t.switches[sw.name].ports)


def test_controller_config_bandwidth_link_is_the_bottleneck_rate():
    t = load_topology(TOPOS / "dcbt-dumbbell.json")
    # "link": the bottleneck's 3125 pkt/s (25 Mbit/s of 1000-byte packets); a number or
    # null (no idle decay) is kept as written
    for given, expected in (("link", 3125), (1000, 1000), (None, None)):
        cfg = controller_config(t, {**DCBT_POLICY, "bandwidth_pps": given})
        assert cfg["switches"]["r1"]["policies"][4]["bandwidth_pps"] == expected
        assert _parse(cfg).switches["r1"].policies[4].settings.bandwidth_pps == expected


def test_controller_config_routes_and_macs():
    t = load_topology(TOPOS / "dcbt-dumbbell.json")
    parsed = _parse(controller_config(t, DCBT_POLICY, p4runtime_port_base=50001))
    r1, r2 = parsed.switches["r1"], parsed.switches["r2"]
    assert r2.p4runtime_addr == "127.0.0.1:50002"
    for sw in (r1, r2):
        routes = {str(r.prefix): r for r in sw.routes}
        assert len(routes) == 6
        for h in t.hosts.values():
            r = routes[f"{h.ip}/32"]
            if h.switch == sw.name:                 # local host: its own MAC on its port
                assert (r.port, r.next_hop_mac) == (h.switch_port, h.mac)
            else:                                   # remote: the other router's port MAC
                peer = t.switches[sw.name].ports[r.port]
                assert peer.peer in t.switches
                assert r.next_hop_mac == t.switches[peer.peer].ports[peer.peer_port].mac
        for p in t.switches[sw.name].ports.values():
            assert sw.ports[p.number].mac == p.mac
    # Each host's gateway MAC (the network's static ARP entry) is the MAC the controller
    # gives its router port: ROUTER_MAC_FMT 02:01:00:00:<switch index + 1>:<port>, with the
    # ports the links of dcbt-dumbbell.json get (r2-p1 is the inter-router link).
    gateway_macs = {"tcp1": ("r1", 1, "02:01:00:00:01:01"), "mm1": ("r1", 2, "02:01:00:00:01:02"),
                    "cbr1": ("r1", 3, "02:01:00:00:01:03"), "tcp2": ("r2", 2, "02:01:00:00:02:02"),
                    "mm2": ("r2", 3, "02:01:00:00:02:03"), "cbr2": ("r2", 4, "02:01:00:00:02:04")}
    assert set(gateway_macs) == set(t.hosts)
    for name, (switch, port, mac) in gateway_macs.items():
        assert (t.hosts[name].switch, t.hosts[name].switch_port) == (switch, port)
        assert parsed.switches[switch].ports[port].mac == mac


def test_controller_config_overrides_and_validation():
    t = load_topology(TOPOS / "cbt-two-lan.json")
    cfg = controller_config(t, {**DCBT_POLICY, "queue_limit_pkts": 200}, other_queue_limit_pkts=500,
                            classifier={"tagged_dscp": [46]},
                            active_flows={"expiry_interval_ms": 300, "update_interval_ms": 50})
    parsed = _parse(cfg)
    r1 = parsed.switches["r1"]
    assert r1.policies[t.bottleneck.port].queue_limit_pkts == 200
    assert parsed.switches["r2"].default_policy.queue_limit_pkts == 500
    assert parsed.classifier.tagged_dscp == (46,)

    from mmaqm.config import ConfigError

    with pytest.raises(ConfigError, match=r"switches\.r1\.policies\.4\.min_th_pkts"):
        controller_config(t, {**DCBT_POLICY, "min_th_pkts": 20})
    with pytest.raises(ConfigError, match="algorithm"):
        controller_config(t, {"algorithm": "WFQ"})
    assert controller_config(t, {"algorithm": "WFQ"}, validate=False)["switches"]["r1"]


def test_tm_queue_depth_is_the_p4_limit_plus_a_margin():
    """What the runners give BMv2's traffic manager: 64 packets above the P4 limit (docs/design.md §1.3)."""
    assert T.tm_queue_depth_pkts(60) == 124
    assert T.tm_queue_depth_pkts(1000) == 1064


def test_describe_mentions_bottleneck_and_rtts():
    text = T.describe(load_topology(TOPOS / "dcbt-dumbbell.json"))
    assert "3125 pkt/s" in text and "rtt tcp1 <-> tcp2: 60 ms" in text


def test_cli_check(capsys):
    from mmaqm_exp import topology_cli

    assert topology_cli.main(["check", str(TOPOS / "dcbt-dumbbell.json")]) == 0
    assert "dcbt-dumbbell" in capsys.readouterr().out


def test_cli_check_reports_errors(tmp_path: Path, capsys):
    from mmaqm_exp import topology_cli

    data = copy.deepcopy(_base())
    data["links"][2] = ["h2", "s2", 1, 0]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    assert topology_cli.main(["check", str(bad)]) == 2
    assert "links[2].rate_mbps: must be > 0, got 0" in capsys.readouterr().err


def test_cli_config_writes_valid_yaml(tmp_path: Path):
    from mmaqm.config import load_config
    from mmaqm_exp import topology_cli

    out = tmp_path / "ctl.yaml"
    assert topology_cli.main(["config", str(TOPOS / "dcbt-dumbbell.json"), "--policy",
                              json.dumps(DCBT_POLICY), "-o", str(out)]) == 0
    assert load_config(out).switches["r1"].policies[4].algorithm == "DCBT"


# ------------------------------------------------------- rate-limited chains (upta Fig. 1)
def test_upta_fig1_chain_matches_the_plan():
    """upta §6 / Fig. 1 (link speeds inferred, docs/upta-plan.md §4): seven routers, l1..l6 of
    1 ms, forward directions rate-limited in 512-byte packets, l5 = 3.5 Mbit/s the bottleneck,
    100-packet buffers; s1, s2 at R1 -> d1, d2 at R7; s3 at R2 -> d3 at R6."""
    t = load_topology(TOPOS / "upta-fig1.json")
    assert list(t.switches) == [f"r{k}" for k in range(1, 8)]
    shaped = [(s.switch, s.to_switch, s.rate_mbps, s.rate_pps, s.queue_limit_pkts, s.delay_ms)
              for s in t.shaped]
    assert shaped == [("r5", "r6", 3.5, 854, 100, 1), ("r1", "r2", 10, 2441, 100, 1),
                      ("r2", "r3", 4.8, 1172, 100, 1), ("r3", "r4", 4.3, 1050, 100, 1),
                      ("r4", "r5", 3.9, 952, 100, 1), ("r6", "r7", 10, 2441, 100, 1)]
    assert t.shaped[0] == t.bottleneck and t.bottleneck.packet_bytes == 512
    # video and TCP cross every router; the background l2..l5 (R2 -> R6)
    assert [sw for sw, _ in t.switch_hops("s2", "d2")] == [f"r{k}" for k in range(1, 8)]
    assert [sw for sw, _ in t.switch_hops("s3", "d3")] == ["r2", "r3", "r4", "r5", "r6"]
    assert all(t.links[h.link].rate_mbps == 10 for h in t.hosts.values())
    assert t.rtt_ms("s1", "d1") == pytest.approx(12.004)     # 2 x (6 x 1 ms + 2 x 1 us)
    assert t.shaped_port("r2", 3) is t.shaped[2] and t.shaped_port("r2", 2) is None


def test_shaped_links_get_the_policy_with_their_own_rate():
    data = _base()
    data["switches"]["s3"] = {}
    data["hosts"]["h2"] = {}
    data["links"] = [["h1", "s1", 1, 100], ["s1", "s2", 10, 10], ["s2", "s3", 1, 5],
                     ["h2", "s3", 2, 100]]
    data["shaped"] = [{"from": "s2", "to": "s3", "queue_limit_pkts": 30}]
    t = parse_topology(data)
    assert [(s.switch, s.rate_pps, s.queue_limit_pkts) for s in t.shaped] == \
        [("s1", 1250, 64), ("s2", 625, 30)]
    cfg = controller_config(t, {"algorithm": "RED", "min_th_pkts": 5, "max_th_pkts": 15,
                                "max_p": 0.1, "bandwidth_pps": "link"})
    s1 = cfg["switches"]["s1"]["policies"][t.shaped[0].port]
    s2 = cfg["switches"]["s2"]["policies"][t.shaped[1].port]
    assert (s1["bandwidth_pps"], s1["queue_limit_pkts"]) == (1250, 64)
    assert (s2["bandwidth_pps"], s2["queue_limit_pkts"]) == (625, 30)
    assert cfg["switches"]["s3"]["policies"] == {"default": {"algorithm": "DROP_TAIL",
                                                             "queue_limit_pkts": 1000}}
    # a policy's own queue limit applies to every shaped port
    cfg = controller_config(t, {"algorithm": "DROP_TAIL", "queue_limit_pkts": 7})
    assert cfg["switches"]["s2"]["policies"][t.shaped[1].port]["queue_limit_pkts"] == 7


@pytest.mark.parametrize("shaped, expected", [
    ([{"from": "s1", "to": "s2"}], "shaped[0]: s1 -> s2 is already bottleneck"),
    ([{"from": "s2", "to": "s1", "packet_bytes": 512}],
     "shaped[0].packet_bytes: unknown key"),
    ([{"from": "s2", "to": "s9"}], "shaped[0].to: must be a switch name"),
    ([{"from": "s2", "to": "s1"}, {"from": "s2", "to": "s1"}],
     "shaped[1]: s2 -> s1 is already shaped[0]"),
    ({"from": "s2", "to": "s1"}, "shaped: must be a list"),
])
def test_shaped_errors_name_the_field(shaped, expected):
    data = _base()
    data["shaped"] = shaped
    errors = _errors(data)
    assert any(e.startswith(expected) for e in errors), errors


def test_bfd_plan_of_the_upta_chain():
    """C-UPTA on Fig. 1 (plan §1.6-1.7): R1's edge ports face s1, s2; its BFD paths all
    leave on port 3, one per egress router (R2 for s3, R6 for d3, R7 for d1, d2: the
    paper's "identifier = output port" would merge them); every router reaches every
    other router's address; a core router (R4) has no edge port."""
    from mmaqm.algorithms.upta_control import BfdPath
    plans = T.bfd_plan(load_topology(TOPOS / "upta-fig1.json"))
    r1, r4, r7 = plans["r1"], plans["r4"], plans["r7"]
    assert r1.router_addr == "10.255.0.1" and r7.router_addr == "10.255.0.7"
    assert r1.edge_ports == (1, 2) and r4.edge_ports == () and r7.edge_ports == (1, 2)
    assert r1.paths == (BfdPath(0, 3, "10.255.0.2"), BfdPath(1, 3, "10.255.0.6"),
                        BfdPath(2, 3, "10.255.0.7"))
    assert dict(r1.path_of_prefix) == {"10.0.3.1/32": 0, "10.0.6.1/32": 1,
                                       "10.0.4.1/32": 2, "10.0.5.1/32": 2}
    assert dict(r1.router_routes) == {f"10.255.0.{k}/32": 3 for k in range(2, 8)}
    # R4: toward R1-R3 on port 2, toward R5-R7 on port 3
    assert dict(r4.router_routes) == {**{f"10.255.0.{k}/32": 2 for k in (1, 2, 3)},
                                      **{f"10.255.0.{k}/32": 3 for k in (5, 6, 7)}}
    # R7 answers probes toward R1 and R2 (the reports go back on port 3)
    assert {p.egress_addr for p in r7.paths} == {"10.255.0.1", "10.255.0.2", "10.255.0.6"}


def test_controller_config_of_c_upta_has_bfd_settings_and_router_routes():
    """A C-UPTA policy adds every switch's `bfd` section from bfd_plan: its
    address, edge ports, the CPU port (PacketOut probes), and BFD paths only at ingress
    edges (routers with edge ports); every switch gets routes to the other routers'
    addresses; parse_config accepts it. Other policies get none of it."""
    from mmaqm.config import parse_config
    topo = load_topology(TOPOS / "upta-fig1.json")
    policy = {"algorithm": "UPTA", "upta_mode": "C", "capacity_mbps": "link",
              "upta_tagged_loss_threshold": 0.12}
    cfg = T.controller_config(topo, policy)
    r1, r4 = cfg["switches"]["r1"], cfg["switches"]["r4"]
    assert r1["bfd"]["router_addr"] == "10.255.0.1" and r1["bfd"]["edge_ports"] == [1, 2]
    assert r1["bfd"]["cpu_port"] == T.BFD_CPU_PORT
    assert r1["bfd"]["paths"][2] == {"id": 2, "port": 3, "egress_addr": "10.255.0.7",
                                     "prefixes": ["10.0.4.1/32", "10.0.5.1/32"]}
    assert r4["bfd"]["paths"] == [] and r4["bfd"]["edge_ports"] == []
    assert {r["prefix"]: r["port"] for r in r4["routes"]}["10.255.0.7/32"] == 3
    parsed = parse_config(cfg).switches["r1"].bfd
    assert parsed is not None and [p.path_id for p in parsed.paths] == [0, 1, 2]
    plain = T.controller_config(topo, {**policy, "upta_mode": "B"})
    assert all("bfd" not in s for s in plain["switches"].values())
    assert not any(r["prefix"].startswith("10.255.") for r in plain["switches"]["r1"]["routes"])


def test_bfd_config_errors_name_the_field():
    from mmaqm.config import ConfigError, parse_config
    cfg = {"switches": {"r1": {
        "p4runtime_addr": "127.0.0.1:9559",
        "ports": {1: {"mac": "02:00:00:00:00:01"}, 3: {"mac": "02:00:00:00:00:03"}},
        "policies": {"default": {"algorithm": "DROP_TAIL"}},
        "bfd": {"router_addr": "x", "edge_ports": [5], "cpu_port": 3,
                "paths": [{"id": 99, "port": 3, "egress_addr": "10.255.0.7"}]}}}}
    with pytest.raises(ConfigError) as err:
        parse_config(cfg)
    assert set(err.value.errors) == {
        "switches.r1.bfd.router_addr: must be an IPv4 address, got string 'x'",
        "switches.r1.bfd.edge_ports[0]: unknown port 5 (not in ports)",
        "switches.r1.bfd.cpu_port: port 3 is a switch port (in ports)",
        "switches.r1.bfd.paths[0].id: must be in 0..63, got 99"}
