"""config: schema validation, resolved policies, parse_policy."""

from __future__ import annotations

import copy
import textwrap
from typing import Any

import pytest

from mmaqm.fixedpoint import ewma_shift_from_weight
from mmaqm.config import (
    ConfigError,
    flow_epoch_shift_for,
    load_config,
    parse_config,
    parse_policy,
)

RED_POLICY = {"algorithm": "RED", "min_th_pkts": 15, "max_th_pkts": 30, "max_p": 0.1,
              "queue_limit_pkts": 60}
BASE: dict[str, Any] = {
    "switches": {
        "s1": {
            "p4runtime_addr": "127.0.0.1:9559",
            "ports": {
                1: {"mac": "02:00:00:00:00:01"},
                2: {"mac": "02:00:00:00:00:02"},
                3: {"mac": "02:00:00:00:00:03"},
            },
            "routes": [
                {"prefix": "10.0.1.0/24", "port": 1, "next_hop_mac": "02:00:00:01:00:01"},
                {"prefix": "10.0.2.0/24", "port": 2, "next_hop_mac": "02:00:00:02:00:01"},
            ],
            "policies": {
                "default": {"algorithm": "DROP_TAIL"},
                2: dict(RED_POLICY),
            },
        }
    }
}


def base() -> dict[str, Any]:
    return copy.deepcopy(BASE)


def s1(cfg: dict[str, Any]) -> dict[str, Any]:
    return cfg["switches"]["s1"]


def errors_of(cfg: object) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(cfg)
    assert isinstance(info.value, ValueError)
    assert str(info.value) == "\n".join(info.value.errors)
    return info.value.errors


def assert_error(cfg: object, expected: str) -> None:
    errors = errors_of(cfg)
    assert expected in errors, errors


# ------------------------------------------------------------------ valid
def test_valid_config_and_defaults() -> None:
    config = parse_config(base())
    assert config.classifier.tagged_dscp == (46, 34)
    assert config.active_flows.expiry_interval_ms == 300
    assert config.active_flows.update_interval_ms == 50
    assert config.active_flows.flow_epoch_shift == 17
    switch = config.switches["s1"]
    assert switch.name == "s1" and switch.device_id == 1
    assert switch.p4runtime_addr == "127.0.0.1:9559"
    assert sorted(switch.ports) == [1, 2, 3]
    assert switch.ports[1].mac == "02:00:00:00:00:01"
    assert [str(r.prefix) for r in switch.routes] == ["10.0.1.0/24", "10.0.2.0/24"]
    # own policy wins; the default covers every other port in ports
    assert switch.policies[2].algorithm == "RED"
    assert switch.policies[1].algorithm == "DROP_TAIL"
    assert switch.policies[3].algorithm == "DROP_TAIL"
    red = switch.policies[2]
    assert red.queue_limit_pkts == 60
    assert red.settings.ewma_weight == 2**-9 and ewma_shift_from_weight(red.settings.ewma_weight) == 9     # default weight 1/512
    assert switch.policies[1].queue_limit_pkts == 64             # default queue limit
    assert dict(switch.policies[1].settings) == {}                # DROP_TAIL keeps no average


def test_valid_boundaries_are_accepted() -> None:
    cfg = base()
    s1(cfg)["policies"][2] = {"algorithm": "CBT_RED_ALL", "min_th_pkts": 0, "max_th_pkts": 60,
                              "max_p": 1.0, "queue_limit_pkts": 60, "tagged_th_pkts": 60,
                              "untagged_th_pkts": 0, "ewma_weight": 1}
    cfg["classifier"] = {"tagged_dscp": [0, 63]}
    cfg["active_flows"] = {"expiry_interval_ms": 100, "update_interval_ms": 100}
    s1(cfg)["ports"][63] = {"mac": "02:00:00:00:00:3f"}
    s1(cfg)["device_id"] = 0
    config = parse_config(cfg)
    policy = config.switches["s1"].policies[2]
    assert (policy.settings.min_th_pkts, policy.settings.max_th_pkts, ewma_shift_from_weight(policy.settings.ewma_weight)) == (0, 60, 0)
    assert config.classifier.tagged_dscp == (0, 63)
    assert config.switches["s1"].device_id == 0


def test_mac_is_normalised_to_lower_case() -> None:
    cfg = base()
    s1(cfg)["ports"][1]["mac"] = "02:AB:00:00:00:01"
    assert parse_config(cfg).switches["s1"].ports[1].mac == "02:ab:00:00:00:01"


# ------------------------------------------------------------------ errors
def test_example_error_message() -> None:
    cfg = base()
    s1(cfg)["policies"][2].update(min_th_pkts=20, max_th_pkts=15)
    assert errors_of(cfg) == [
        "switches.s1.policies.2.min_th_pkts: must be < max_th_pkts (15), got 20"]


def test_min_th_equal_max_th() -> None:
    cfg = base()
    s1(cfg)["policies"][2].update(min_th_pkts=15, max_th_pkts=15)
    assert_error(cfg, "switches.s1.policies.2.min_th_pkts: must be < max_th_pkts (15), got 15")


def test_all_errors_are_reported_together() -> None:
    cfg = base()
    s1(cfg)["policies"][2]["max_p"] = 2
    s1(cfg)["routes"][0]["prefix"] = "10.0.1.1/24"
    cfg["classifier"] = {"tagged_dscp": [46, 46]}
    errors = errors_of(cfg)
    assert len(errors) == 3, errors
    assert set(errors) == {
        "classifier.tagged_dscp[1]: duplicate DSCP 46 (also at index 0)",
        "switches.s1.routes[0].prefix: host bits set in '10.0.1.1/24' (the network is 10.0.1.0/24)",
        "switches.s1.policies.2.max_p: must be in (0, 1], got 2",
    }


def test_unknown_port_in_route() -> None:
    cfg = base()
    s1(cfg)["routes"][1]["port"] = 5
    assert_error(cfg, "switches.s1.routes[1].port: unknown port 5 (not in switches.s1.ports)")


def test_unknown_port_in_policy() -> None:
    cfg = base()
    s1(cfg)["policies"][7] = dict(RED_POLICY)
    assert errors_of(cfg) == ["switches.s1.policies.7: unknown port 7 (not in switches.s1.ports)"]


def test_port_at_or_above_num_ports() -> None:
    cfg = base()
    s1(cfg)["ports"][64] = {"mac": "02:00:00:00:00:40"}
    assert errors_of(cfg) == ["switches.s1.ports.64: must be in 0..63, got 64"]
    cfg = base()
    s1(cfg)["routes"][0]["port"] = 64
    assert errors_of(cfg) == ["switches.s1.routes[0].port: must be in 0..63, got 64"]
    cfg = base()
    s1(cfg)["policies"][64] = dict(RED_POLICY)
    assert errors_of(cfg) == ["switches.s1.policies.64: must be in 0..63, got 64"]


def test_port_key_must_be_an_integer() -> None:
    cfg = base()
    s1(cfg)["ports"]["eth1"] = {"mac": "02:00:00:00:00:09"}
    assert_error(cfg, "switches.s1.ports.eth1: must be an integer, got string 'eth1'")


@pytest.mark.parametrize("max_p", [0, -0.1, 1.5, 2])
def test_max_p_outside_0_1(max_p: float) -> None:
    cfg = base()
    s1(cfg)["policies"][2]["max_p"] = max_p
    assert errors_of(cfg) == [f"switches.s1.policies.2.max_p: must be in (0, 1], got {max_p!r}"]


def test_max_th_above_queue_limit() -> None:
    cfg = base()
    s1(cfg)["policies"][2]["max_th_pkts"] = 61
    assert errors_of(cfg) == [
        "switches.s1.policies.2.max_th_pkts: must be <= queue_limit_pkts (60), got 61"]


def test_max_th_above_default_queue_limit() -> None:
    cfg = base()
    del s1(cfg)["policies"][2]["queue_limit_pkts"]
    s1(cfg)["policies"][2]["max_th_pkts"] = 65
    assert errors_of(cfg) == [
        "switches.s1.policies.2.max_th_pkts: must be <= queue_limit_pkts (64), got 65"]


@pytest.mark.parametrize("key", ["tagged_th_pkts", "untagged_th_pkts"])
def test_cbt_thresholds_above_queue_limit_or_negative(key: str) -> None:
    cfg = base()
    s1(cfg)["policies"][2] = {**RED_POLICY, "algorithm": "CBT_RED_ALL", "tagged_th_pkts": 10,
                              "untagged_th_pkts": 2}
    s1(cfg)["policies"][2][key] = 60.5
    assert errors_of(cfg) == [
        f"switches.s1.policies.2.{key}: must be <= queue_limit_pkts (60), got 60.5"]
    s1(cfg)["policies"][2][key] = -1
    assert errors_of(cfg) == [f"switches.s1.policies.2.{key}: must be >= 0, got -1"]


def test_negative_min_th() -> None:
    cfg = base()
    s1(cfg)["policies"][2]["min_th_pkts"] = -1
    assert errors_of(cfg) == ["switches.s1.policies.2.min_th_pkts: must be >= 0, got -1"]


@pytest.mark.parametrize("limit", [0, 65536, 100000])
def test_queue_limit_range(limit: int) -> None:
    cfg = base()
    s1(cfg)["policies"]["default"]["queue_limit_pkts"] = limit
    assert errors_of(cfg) == [
        f"switches.s1.policies.default.queue_limit_pkts: must be in 1..65535 (averages are "
        f"bit<32> packets * 2^16), got {limit}"]


def test_unknown_algorithm() -> None:
    cfg = base()
    s1(cfg)["policies"][2]["algorithm"] = "REDD"
    assert errors_of(cfg) == [
        "switches.s1.policies.2.algorithm: must be one of DROP_TAIL, RED, CBT_RED_ALL, "
        "CBT_RED_TCP_ONLY, DCBT, DCBT_CHIPS, MCDT, FRED, UPTA, got string 'REDD'"]


@pytest.mark.parametrize("mac, message", [
    ("02:00:00:00:00", 'must be a MAC like "02:00:00:00:00:01", got string \'02:00:00:00:00\''),
    ("02-00-00-00-00-01", 'must be a MAC like "02:00:00:00:00:01", got string \'02-00-00-00-00-01\''),
    ("zz:00:00:00:00:01", 'must be a MAC like "02:00:00:00:00:01", got string \'zz:00:00:00:00:01\''),
    ("01:00:5e:00:00:01", "must be a unicast MAC (first octet even), got '01:00:5e:00:00:01'"),
    ("ff:ff:ff:ff:ff:ff", "must be a unicast MAC (first octet even), got 'ff:ff:ff:ff:ff:ff'"),
    ("00:00:00:00:00:00", "must not be the all-zero MAC, got '00:00:00:00:00:00'"),
    (9783936001, "must be a quoted string: YAML read the unquoted MAC as the number 9783936001"),
])
def test_bad_mac(mac: object, message: str) -> None:
    cfg = base()
    s1(cfg)["ports"][3]["mac"] = mac
    assert errors_of(cfg) == [f"switches.s1.ports.3.mac: {message}"]
    cfg = base()
    s1(cfg)["routes"][0]["next_hop_mac"] = mac
    assert errors_of(cfg) == [f"switches.s1.routes[0].next_hop_mac: {message}"]


@pytest.mark.parametrize("prefix, message", [
    ("10.0.1.1/24", "host bits set in '10.0.1.1/24' (the network is 10.0.1.0/24)"),
    ("10.0.1.0", "must be an IPv4 network like 10.0.1.0/24, got string '10.0.1.0'"),
    ("10.0.1.0/33", "must be an IPv4 network like 10.0.1.0/24, got '10.0.1.0/33'"),
    ("300.0.0.0/8", "must be an IPv4 network like 10.0.1.0/24, got '300.0.0.0/8'"),
    ("2001:db8:1::1/64", "host bits set in '2001:db8:1::1/64' (the network is 2001:db8:1::/64)"),
    ("2001:db8::/129", "must be an IPv6 network like 2001:db8:1::/64, got '2001:db8::/129'"),
    ("2001:db8::1", "must be an IPv6 network like 2001:db8:1::/64, got '2001:db8::1' "
                    "(no prefix length)"),
    ("2001:zz8::/64", "must be an IPv6 network like 2001:db8:1::/64, got '2001:zz8::/64'"),
    (10, "must be an IPv4 network like 10.0.1.0/24, got 10"),
])
def test_bad_prefix(prefix: object, message: str) -> None:
    cfg = base()
    s1(cfg)["routes"][0]["prefix"] = prefix
    errors = errors_of(cfg)
    assert len(errors) == 1 and errors[0].startswith(f"switches.s1.routes[0].prefix: {message}")


def test_ipv6_routes_sit_beside_ipv4_ones_and_become_ipv6_lpm_entries() -> None:
    from mmaqm import reconcile as R
    cfg = base()
    route = dict(s1(cfg)["routes"][0])
    s1(cfg)["routes"].append({**route, "prefix": "2001:db8:1::/64"})
    routes = parse_config(cfg).switches["s1"].routes
    assert [str(r.prefix) for r in routes][-1] == "2001:db8:1::/64"
    entry = R.route_entry(str(routes[-1].prefix), routes[-1].port, "02:00:00:00:00:01",
                          routes[-1].next_hop_mac)
    assert (entry.table, entry.action) == ("ipv6_lpm", "route6")
    assert dict(entry.match) == {"ipv6_dst": (0x20010DB8000100000000000000000000, 64)}
    # the same network twice is refused like an IPv4 duplicate
    s1(cfg)["routes"].append({**route, "prefix": "2001:db8:1::/64"})
    errors = errors_of(cfg)
    assert len(errors) == 1 and "duplicate prefix 2001:db8:1::/64" in errors[0]


def test_default_route_is_a_valid_prefix() -> None:
    cfg = base()
    s1(cfg)["routes"][0]["prefix"] = "0.0.0.0/0"
    assert str(parse_config(cfg).switches["s1"].routes[0].prefix) == "0.0.0.0/0"


def test_duplicate_route_prefix() -> None:
    cfg = base()
    s1(cfg)["routes"].append({"prefix": "10.0.1.0/24", "port": 2,
                              "next_hop_mac": "02:00:00:02:00:01"})
    assert errors_of(cfg) == [
        "switches.s1.routes[2].prefix: duplicate prefix 10.0.1.0/24 (also switches.s1.routes[0])"]


def test_same_network_different_length_is_not_a_duplicate() -> None:
    cfg = base()
    s1(cfg)["routes"].append({"prefix": "10.0.1.0/25", "port": 2,
                              "next_hop_mac": "02:00:00:02:00:01"})
    assert len(parse_config(cfg).switches["s1"].routes) == 3


def test_tagged_dscp_duplicate_and_range() -> None:
    cfg = base()
    cfg["classifier"] = {"tagged_dscp": [46, 34, 46, 64, -1]}
    assert errors_of(cfg) == [
        "classifier.tagged_dscp[2]: duplicate DSCP 46 (also at index 0)",
        "classifier.tagged_dscp[3]: must be in 0..63, got 64",
        "classifier.tagged_dscp[4]: must be in 0..63, got -1",
    ]


def test_tagged_dscp_may_be_empty() -> None:
    cfg = base()
    cfg["classifier"] = {"tagged_dscp": []}
    assert parse_config(cfg).classifier.tagged_dscp == ()


@pytest.mark.parametrize("where, path", [
    (lambda c: c, "clasifier"),
    (lambda c: c.setdefault("classifier", {}), "classifier.tagged"),
    (lambda c: c.setdefault("active_flows", {}), "active_flows.expiry_ms"),
    (lambda c: s1(c), "switches.s1.policy"),
    (lambda c: s1(c)["ports"][1], "switches.s1.ports.1.vlan"),
    (lambda c: s1(c)["routes"][0], "switches.s1.routes[0].gateway"),
    (lambda c: s1(c)["policies"][2], "switches.s1.policies.2.max_th"),
    (lambda c: s1(c)["policies"]["default"], "switches.s1.policies.default.queue_limit"),
])
def test_unknown_key(where, path: str) -> None:
    cfg = base()
    where(cfg)[path.rsplit(".", 1)[-1]] = 1
    errors = errors_of(cfg)
    assert any(e.startswith(f"{path}: unknown key (allowed: ") for e in errors), errors


def test_unknown_policy_key_lists_the_allowed_keys() -> None:
    cfg = base()
    s1(cfg)["policies"][2]["max_th"] = 30
    assert errors_of(cfg) == [
        "switches.s1.policies.2.max_th: unknown key (allowed: algorithm, queue_limit_pkts, "
        "min_th_pkts, max_th_pkts, max_p, ewma_weight, burst_pkts, bandwidth_pps, gentle, ecn, "
        "harddrop, wait, adaptive, tagged_th_pkts, untagged_th_pkts, tag_guard, "
        "tag_guard_tolerance, tag_guard_link_pps, chips_max_tagged_ratio, "
        "chips_ewma_weight, mcdt_period_ms, mcdt_mode, fred_minq_pkts, fred_flow_slots, upta_mode, "
        "upta_flow_slots, upta_k_shift, upta_tagged_loss_threshold, capacity_mbps); "
        "did you mean 'max_th_pkts'?"]


@pytest.mark.parametrize("remove, path", [
    (lambda c: c.pop("switches"), "switches"),
    (lambda c: s1(c).pop("p4runtime_addr"), "switches.s1.p4runtime_addr"),
    (lambda c: s1(c).pop("ports"), "switches.s1.ports"),
    (lambda c: s1(c)["ports"][1].pop("mac"), "switches.s1.ports.1.mac"),
    (lambda c: s1(c)["routes"][0].pop("prefix"), "switches.s1.routes[0].prefix"),
    (lambda c: s1(c)["routes"][0].pop("port"), "switches.s1.routes[0].port"),
    (lambda c: s1(c)["routes"][0].pop("next_hop_mac"), "switches.s1.routes[0].next_hop_mac"),
    (lambda c: s1(c)["policies"][2].pop("algorithm"), "switches.s1.policies.2.algorithm"),
    (lambda c: s1(c)["policies"][2].pop("min_th_pkts"), "switches.s1.policies.2.min_th_pkts"),
    (lambda c: s1(c)["policies"][2].pop("max_th_pkts"), "switches.s1.policies.2.max_th_pkts"),
    (lambda c: s1(c)["policies"][2].pop("max_p"), "switches.s1.policies.2.max_p"),
])
def test_missing_required_key(remove, path: str) -> None:
    cfg = base()
    remove(cfg)
    errors = errors_of(cfg)
    assert any(e.startswith(f"{path}: required") for e in errors), errors


@pytest.mark.parametrize("algorithm", ["CBT_RED_ALL", "CBT_RED_TCP_ONLY"])
def test_cbt_requires_class_thresholds(algorithm: str) -> None:
    cfg = base()
    s1(cfg)["policies"][2]["algorithm"] = algorithm
    assert errors_of(cfg) == [
        f"switches.s1.policies.2.tagged_th_pkts: required for {algorithm}",
        f"switches.s1.policies.2.untagged_th_pkts: required for {algorithm}",
    ]


@pytest.mark.parametrize("algorithm", ["RED", "DCBT"])
def test_class_thresholds_forbidden_outside_cbt(algorithm: str) -> None:
    cfg = base()
    s1(cfg)["policies"][2].update(algorithm=algorithm, untagged_th_pkts=2)
    assert errors_of(cfg) == [
        "switches.s1.policies.2.untagged_th_pkts: only for CBT_RED_ALL and CBT_RED_TCP_ONLY"]


def test_drop_tail_takes_no_red_parameters() -> None:
    cfg = base()
    s1(cfg)["policies"]["default"].update(max_p=0.1, ewma_weight=0.5)
    assert errors_of(cfg) == [
        "switches.s1.policies.default.max_p: not used by DROP_TAIL",
        "switches.s1.policies.default.ewma_weight: not used by DROP_TAIL",
    ]


def test_routed_port_needs_a_policy() -> None:
    cfg = base()
    del s1(cfg)["policies"]["default"]
    assert errors_of(cfg) == [
        "switches.s1.routes[0].port: port 1 has no policy (add policies.1 or policies.default)"]


def test_unrouted_port_without_policy_is_fine() -> None:
    cfg = base()
    del s1(cfg)["policies"]["default"]
    s1(cfg)["routes"].pop(0)
    switch = parse_config(cfg).switches["s1"]
    assert sorted(switch.policies) == [2]


def test_ewma_weight_must_be_a_power_of_two() -> None:
    cfg = base()
    s1(cfg)["policies"][2]["ewma_weight"] = 0.002
    assert errors_of(cfg) == [
        "switches.s1.policies.2.ewma_weight: 0.002 is not a power of two; nearest are "
        "2^-9 = 0.001953125 and 2^-8 = 0.00390625"]


def test_ewma_weight_power_of_two_gives_shift() -> None:
    cfg = base()
    s1(cfg)["policies"][2]["ewma_weight"] = 0.0078125   # 2^-7
    assert ewma_shift_from_weight(parse_config(cfg).switches["s1"].policies[2].settings.ewma_weight) == 7


@pytest.mark.parametrize("key", ["tm_queue_depth_pkts", "link_rate_pps"])
def test_traffic_manager_settings_are_not_policy_keys(key: str) -> None:
    """BMv2's queue depth and rate belong to whoever starts the switch, not to the controller."""
    cfg = base()
    s1(cfg)["policies"][2][key] = 100
    errors = errors_of(cfg)
    assert len(errors) == 1 and errors[0].startswith(
        f"switches.s1.policies.2.{key}: unknown key (allowed: algorithm, "), errors


@pytest.mark.parametrize("flows, message", [
    ({"expiry_interval_ms": 0}, "active_flows.expiry_interval_ms: must be >= 0.004 (two 2 us flow "
                                "epochs), got 0"),
    ({"update_interval_ms": 0}, "active_flows.update_interval_ms: must be >= 1 (below a "
                                "P4Runtime read and write the loop only spins), got 0"),
    # a micro-second interval was accepted and busy-spun the share loop
    ({"update_interval_ms": 0.000001}, "active_flows.update_interval_ms: must be >= 1 (below "
                                       "a P4Runtime read and write the loop only spins), "
                                       "got 1e-06"),
    ({"update_interval_ms": 301}, "active_flows.update_interval_ms: must be <= "
                                  "expiry_interval_ms (300), got 301"),
    ({"expiry_interval_ms": 40}, "active_flows.update_interval_ms: must be <= "
                                 "expiry_interval_ms (40), got 50"),
    # the flow table is capped
    ({"max_flows": 0}, "active_flows.max_flows: must be in 1..16777216, got 0"),
    ({"max_flows": 16777217}, "active_flows.max_flows: must be in 1..16777216, got 16777217"),
    ({"max_flows": 1.5}, "active_flows.max_flows: must be an integer, got 1.5"),
])
def test_active_flows_intervals(flows: dict, message: str) -> None:
    cfg = base()
    cfg["active_flows"] = flows
    assert errors_of(cfg) == [message]


def test_active_flows_max_flows_default_and_value() -> None:
    cfg = base()
    assert parse_config(cfg).active_flows.max_flows == 262_144
    cfg["active_flows"] = {"max_flows": 100_000}
    assert parse_config(cfg).active_flows.max_flows == 100_000


@pytest.mark.parametrize("addr, message", [
    ("localhost", "must be host:port, got 'localhost'"),
    ("localhost:99999", "port must be 1..65535, in ASCII decimal digits, got 'localhost:99999'"),
    ("::1:9559", "an IPv6 address must be in brackets: [addr]:port, got '::1:9559'"),
    ("[zz::1]:9559", "bad IPv6 address '[zz::1]', got '[zz::1]:9559'"),
    ("bad host:9559", "bad host 'bad host', got 'bad host:9559'"),
    # a numeric last label is an IPv4 address, and these are none
    ("999.1.1.1:9559", "bad IPv4 address '999.1.1.1', got '999.1.1.1:9559'"),
    ("10.1:9559", "bad IPv4 address '10.1', got '10.1:9559'"),
    ("127.0.0.01:9559", "bad IPv4 address '127.0.0.01', got '127.0.0.01:9559'"),
    ("sw.123:9559", "bad host 'sw.123' (a hostname's last label is not numeric), "
                    "got 'sw.123:9559'"),
])
def test_bad_p4runtime_addr(addr: str, message: str) -> None:
    cfg = base()
    s1(cfg)["p4runtime_addr"] = addr
    assert errors_of(cfg) == [f"switches.s1.p4runtime_addr: {message}"]


@pytest.mark.parametrize("addr", ["localhost:9559", "[::1]:9559", "s1.example:50001"])
def test_good_p4runtime_addr(addr: str) -> None:
    cfg = base()
    s1(cfg)["p4runtime_addr"] = addr
    assert parse_config(cfg).switches["s1"].p4runtime_addr == addr


def test_two_switches_on_one_endpoint() -> None:
    cfg = base()
    cfg["switches"]["s2"] = copy.deepcopy(s1(cfg))
    assert errors_of(cfg) == [
        "switches.s2.p4runtime_addr: 127.0.0.1:9559 device_id 1 is also switch s1"]
    cfg["switches"]["s2"]["device_id"] = 2
    assert sorted(parse_config(cfg).switches) == ["s1", "s2"]


@pytest.mark.parametrize("first, second", [
    ("127.0.0.1:9559", "localhost:9559"),          # localhost resolves to 127.0.0.1 ...
    ("[::1]:9559", "localhost:9559"),              # ... or to ::1
    ("localhost:9559", "LocalHost:9559"),          # host names ignore case
    ("[::1]:9559", "[0:0::1]:9559"),               # one IPv6 address, two spellings
    ("127.0.0.1:9559", "127.0.0.1:09559"),         # one port
    ("sw1.lab:9559", "SW1.lab:9559"),
])
def test_one_switch_under_two_names_and_spellings_of_its_endpoint(first: str,
                                                                  second: str) -> None:
    """Two controllers' worth of writes to one switch were accepted when its
    address was spelled two ways."""
    cfg = base()
    s1(cfg)["p4runtime_addr"] = first
    cfg["switches"]["s2"] = copy.deepcopy(s1(cfg))
    cfg["switches"]["s2"]["p4runtime_addr"] = second
    assert errors_of(cfg) == [
        f"switches.s2.p4runtime_addr: {second} device_id 1 is also switch s1 at {first}"]


@pytest.mark.parametrize("first, second", [
    ("127.0.0.1:9559", "127.0.0.2:9559"),          # two loopback addresses: two servers
    ("127.0.0.1:9559", "[::1]:9559"),
    ("localhost:9559", "localhost:9560"),
])
def test_different_endpoints_are_two_switches(first: str, second: str) -> None:
    cfg = base()
    s1(cfg)["p4runtime_addr"] = first
    cfg["switches"]["s2"] = copy.deepcopy(s1(cfg))
    cfg["switches"]["s2"]["p4runtime_addr"] = second
    assert sorted(parse_config(cfg).switches) == ["s1", "s2"]


def test_two_ports_with_one_router_mac() -> None:
    """The router's own MAC of each port (the source of routed packets) was
    not checked for duplicates."""
    cfg = base()
    s1(cfg)["ports"][3]["mac"] = "02:00:00:00:00:01"
    assert errors_of(cfg) == [
        "switches.s1.ports.3.mac: duplicate MAC 02:00:00:00:00:01 (also port 1)"]
    s1(cfg)["ports"][3]["mac"] = "02:00:00:00:00:0A"          # case does not matter
    s1(cfg)["ports"][2]["mac"] = "02:00:00:00:00:0a"
    assert errors_of(cfg) == [
        "switches.s1.ports.3.mac: duplicate MAC 02:00:00:00:00:0a (also port 2)"]


def test_bad_switch_name_and_empty_sections() -> None:
    cfg = base()
    cfg["switches"]["s 1"] = cfg["switches"].pop("s1")
    assert_error(cfg, "switches.'s 1': switch name must be 1..64 of A-Z a-z 0-9 _ -, got "
                      "string 's 1'")
    assert_error({"switches": {}}, "switches: must list at least one switch")
    cfg = base()
    s1(cfg)["ports"] = {}
    assert_error(cfg, "switches.s1.ports: must list at least one port")


@pytest.mark.parametrize("value, message", [
    (True, "must be an integer, got boolean true"),
    ("64", "must be an integer, got string '64'"),
    (6.5, "must be an integer, got 6.5"),
    (None, "must be an integer, got nothing (null)"),
])
def test_integer_fields_reject_other_types(value: object, message: str) -> None:
    cfg = base()
    s1(cfg)["policies"][2]["queue_limit_pkts"] = value
    assert errors_of(cfg) == [f"switches.s1.policies.2.queue_limit_pkts: {message}"]


def test_number_given_as_yaml_1_1_exponent_string() -> None:
    cfg = base()
    s1(cfg)["policies"][2]["max_p"] = "1e-1"
    assert errors_of(cfg) == [
        "switches.s1.policies.2.max_p: must be a number, got string '1e-1' (YAML 1.1 reads "
        "exponents without a dot as text: write 1.0e-3)"]


def test_root_must_be_a_mapping() -> None:
    assert errors_of(None) == ["(top level): must be a mapping, got nothing (null)"]
    assert errors_of([]) == ["(top level): must be a mapping, got a list"]


def test_parse_policy_checks_like_a_config_entry() -> None:
    with pytest.raises(ConfigError) as info:
        parse_policy({"algorithm": "RED", "min_th_pkts": 5, "max_th_pkts": 4, "max_p": 0.1})
    assert info.value.errors == ["policy.min_th_pkts: must be < max_th_pkts (4), got 5"]
    with pytest.raises(ConfigError) as info:
        parse_policy({"algorithm": "DCBT", "max_th_pkts": 4, "max_p": 0.1}, path="bn")
    assert info.value.errors == ["bn.min_th_pkts: required for DCBT"]
    with pytest.raises(ConfigError) as info:
        parse_policy([], path="bn")
    assert info.value.errors == ["bn: must be a mapping, got a list"]


def test_parse_policy_fills_defaults_and_derives_the_shift() -> None:
    red = parse_policy({"algorithm": "RED", "min_th_pkts": 4, "max_th_pkts": 5, "max_p": 0.1})
    assert (red.queue_limit_pkts, red.settings.ewma_weight, ewma_shift_from_weight(red.settings.ewma_weight)) == (64, 2**-9, 9)
    assert "tagged_th_pkts" not in red.settings and "untagged_th_pkts" not in red.settings
    drop_tail = parse_policy({"algorithm": "DROP_TAIL", "queue_limit_pkts": 100})
    assert (drop_tail.queue_limit_pkts, dict(drop_tail.settings)) == (100, {})   # no average


def test_huge_threshold_is_an_error_not_a_crash() -> None:
    """A max_th beyond bit<32> packets * 2^16 used to escape as a bare ValueError."""
    cfg = base()
    s1(cfg)["policies"][2].update(min_th_pkts=0, max_th_pkts=1e9)
    assert errors_of(cfg) == [
        "switches.s1.policies.2.max_th_pkts: must be <= queue_limit_pkts (60), got 1000000000"]


def test_thresholds_closer_than_the_fixed_point_step() -> None:
    cfg = base()
    s1(cfg)["policies"][2].update(min_th_pkts=15, max_th_pkts=15 + 2**-18)
    assert errors_of(cfg) == [
        "switches.s1.policies.2.max_th_pkts: must exceed min_th_pkts by at least 2^-16 packets, "
        "got 15.000003814697266 vs 15"]


def test_bad_value_type_is_reported_once() -> None:
    """A mistyped value is not also "required", and checks that need it are skipped."""
    cfg = base()
    s1(cfg)["policies"][2].update(min_th_pkts="15", max_th_pkts=[30])
    assert errors_of(cfg) == [
        "switches.s1.policies.2.min_th_pkts: must be a number, got string '15'",
        "switches.s1.policies.2.max_th_pkts: must be a number, got a list",
    ]


# ------------------------------------------------------------------ YAML files
def test_load_config_from_yaml(tmp_path) -> None:
    path = tmp_path / "lab.yaml"
    path.write_text(textwrap.dedent("""\
        classifier:
          tagged_dscp: [46]
        switches:
          s1:
            p4runtime_addr: 127.0.0.1:9559
            ports:
              1: {mac: "02:00:00:00:00:01"}
            routes:
              - {prefix: 10.0.1.0/24, port: 1, next_hop_mac: "02:00:00:01:00:01"}
            policies:
              1: {algorithm: DCBT, min_th_pkts: 15, max_th_pkts: 30, max_p: 0.1}
        """))
    config = load_config(path)
    assert config.classifier.tagged_dscp == (46,)
    assert config.switches["s1"].policies[1].algorithm == "DCBT"


def test_load_config_reports_duplicate_yaml_keys(tmp_path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(textwrap.dedent("""\
        switches:
          s1:
            p4runtime_addr: 127.0.0.1:9559
            ports:
              1: {mac: "02:00:00:00:00:01"}
              1: {mac: "02:00:00:00:00:02"}
        """))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.errors == [f"{path}: line 6: duplicate key 1"]


def test_load_config_reports_yaml_syntax_errors(tmp_path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("switches: [\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_config(path)


# ------------------------------------------------------------------ derived values
@pytest.mark.parametrize("expiry_ms, shift", [
    (300, 17),          # 150000 us: 2^17 = 131072 <= 150000 < 2^18 = 262144
    (0.512, 8),         # 256 us = 2^8 exactly (<= is inclusive)
    (0.51, 7),          # 255 us
    (0.004, 1),         # 2 us = 2^1
    (0.0079, 1),        # 3.95 us
    (2**20 / 500, 20),  # 2^20 us exactly
    (2**20 / 500 * (1 - 1e-15), 19),  # a hair below 2^20 us
    (1e12, 40),         # capped
])
def test_flow_epoch_shift_for(expiry_ms: float, shift: int) -> None:
    assert flow_epoch_shift_for(expiry_ms) == shift
    assert 2**shift <= expiry_ms * 1000 / 2


def test_flow_epoch_shift_for_rejects_tiny_intervals() -> None:
    with pytest.raises(ValueError):
        flow_epoch_shift_for(0.003)             # 1.5 us: no k >= 1


def test_empty_optional_sections_mean_their_defaults(tmp_path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text(textwrap.dedent("""\
        classifier:
        active_flows:
        switches:
          s1:
            p4runtime_addr: 127.0.0.1:9559
            ports:
              1: {mac: "02:00:00:00:00:01"}
            routes:
            policies:
        """))
    config = load_config(path)
    assert config.classifier.tagged_dscp == (46, 34)
    assert config.switches["s1"].routes == () and dict(config.switches["s1"].policies) == {}


def test_table_sizes_from_defines_p4_are_enforced() -> None:
    """Config that could not fit the P4 tables is rejected before any write."""
    from mmaqm import p4constants as C
    assert C.ROUTE_TABLE_SIZE == 1024 and C.CLASSIFIER_TABLE_SIZE == 64
    raw = {"classifier": {"tagged_dscp": list(range(64))},
           "switches": {"s1": {"p4runtime_addr": "127.0.0.1:9559", "ports": {1: {"mac": "02:00:00:00:00:01"}},
                               "routes": [{"prefix": f"10.{i // 256}.{i % 256}.0/24", "port": 1,
                                           "next_hop_mac": "02:00:00:00:01:01"} for i in range(1025)],
                               "policies": {"default": {"algorithm": "DROP_TAIL"}}}}}
    with pytest.raises(ConfigError) as err:
        parse_config(raw)
    text = "\n".join(err.value.errors)
    assert "switches.s1.routes: 1025 routes exceed the ipv4_lpm table size 1024" in text
    assert "classifier.tagged_dscp: 64 DSCPs + the TCP entry exceed the classifier table size 64" in text
    raw["classifier"]["tagged_dscp"] = list(range(63))
    raw["switches"]["s1"]["routes"] = raw["switches"]["s1"]["routes"][:1024]
    parse_config(raw)  # exactly full tables are fine


@pytest.mark.parametrize("update, slope", [
    ({"min_th_pkts": 0, "max_th_pkts": 2**-10, "max_p": 1}, "1.71799e+10"),   # 2^34
    ({"max_p": 1e-9}, "0.00111848"),                                        # 1e-9 / 15 * 2^24
])
def test_red_slope_must_fit_its_register(update: dict, slope: str) -> None:
    cfg = base()
    s1(cfg)["policies"][2].update(update)
    assert errors_of(cfg) == [
        f"switches.s1.policies.2.max_p: max_p / (max_th_pkts - min_th_pkts) = {slope} * 2^-24 "
        "does not fit red_slope_q24 (1..2^32-1)"]


def test_fred_keys_defaults_and_errors() -> None:
    red_keys = {"min_th_pkts": 5, "max_th_pkts": 15, "max_p": 0.1}
    policy = parse_policy({"algorithm": "FRED", **red_keys})
    assert (policy.settings.fred_minq_pkts, policy.settings.fred_flow_slots, ewma_shift_from_weight(policy.settings.ewma_weight)) == (2, 4096, 9)
    assert "fred_flow_slots" not in parse_policy({"algorithm": "RED", **red_keys}).settings
    with pytest.raises(ConfigError) as info:
        parse_policy({"algorithm": "FRED", **red_keys, "fred_flow_slots": 6000,
                      "fred_minq_pkts": -1, "gentle": True, "ecn": True})
    assert info.value.errors == [
        "policy.gentle: not used by FRED (its rules have no gentle ramp, ECN marking or wait; "
        "burst_pkts and bandwidth_pps apply)",
        "policy.ecn: not used by FRED (its rules have no gentle ramp, ECN marking or wait; "
        "burst_pkts and bandwidth_pps apply)",
        "policy.fred_minq_pkts: must be in 0..65535 (fred_qlen is bit<16>), got -1",
        "policy.fred_flow_slots: must be in 1..4096 (FRED_SLOTS_PER_PORT slots per port "
        "(defines.p4)), got 6000"]
    with pytest.raises(ConfigError, match="fred_flow_slots: must be a power of two, got 48"):
        parse_policy({"algorithm": "FRED", **red_keys, "fred_flow_slots": 48})
    with pytest.raises(ConfigError, match="min_th_pkts: required for FRED"):
        parse_policy({"algorithm": "FRED", "max_th_pkts": 15, "max_p": 0.1})
    with pytest.raises(ConfigError, match="fred_minq_pkts: only for FRED"):
        parse_policy({"algorithm": "DCBT", **red_keys, "fred_minq_pkts": 2})


# ---------------------------------------------------------- hostile or broken input
@pytest.mark.parametrize("update, message", [
    # 1.0e+308 * 2^16 is inf: round() raised OverflowError
    ({"max_th_pkts": 1.0e+308}, "switches.s1.policies.2.max_th_pkts: must be <= "
                                "queue_limit_pkts (60), got 1e+308"),
    ({"queue_limit_pkts": 65535, "max_th_pkts": 70000},
     "switches.s1.policies.2.max_th_pkts: must be <= queue_limit_pkts (65535), got 70000"),
    # an invalid queue limit: max_th_pkts still cannot exceed the largest one
    ({"queue_limit_pkts": 70000, "max_th_pkts": 1.0e+308}, None),
    ({"bandwidth_pps": 1.0e+308}, "switches.s1.policies.2.bandwidth_pps: idle decay "),
    ({"min_th_pkts": 1.0e+308}, "switches.s1.policies.2.min_th_pkts: must be < max_th_pkts "),
])
def test_huge_numbers_are_errors_not_overflows(update: dict, message: str | None) -> None:
    cfg = base()
    s1(cfg)["policies"][2].update(update)
    errors = errors_of(cfg)
    if message is None:
        assert errors == [
            "switches.s1.policies.2.queue_limit_pkts: must be in 1..65535 (averages are "
            "bit<32> packets * 2^16), got 70000",
            "switches.s1.policies.2.max_th_pkts: must be <= queue_limit_pkts (65535), "
            "got 1e+308"]
    else:
        assert len(errors) == 1 and errors[0].startswith(message), errors


def test_lists_and_mappings_longer_than_the_tables_are_one_error() -> None:
    """Every item of a 12.5-million-item list was checked (and reported);
    now a list or mapping longer than its table is one error, and only the first
    table-size items are checked."""
    from mmaqm import p4constants as C
    cfg = base()
    cfg["classifier"] = {"tagged_dscp": ["x"] * 100_000}
    s1(cfg)["routes"] = [{"prefix": "bad"}] * 5000
    s1(cfg)["ports"] = {port: {"mac": "02:00:00:00:00:01"} for port in range(1000)}
    errors = errors_of(cfg)
    assert errors[0] == "classifier.tagged_dscp: 100000 DSCPs exceed the classifier table size 64"
    assert sum(e.startswith("classifier.tagged_dscp[") for e in errors) == C.CLASSIFIER_TABLE_SIZE
    assert "switches.s1.ports: 1000 ports exceed NUM_PORTS 64" in errors
    assert not any(e.startswith("switches.s1.ports.") for e in errors)
    assert "switches.s1.routes: 5000 routes exceed the ipv4_lpm table size 1024" in errors
    assert sum(e.startswith("switches.s1.routes[") for e in errors) == 3 * C.ROUTE_TABLE_SIZE


def test_too_many_policies_and_switches() -> None:
    from mmaqm import config as config_module
    cfg = base()
    s1(cfg)["policies"] = {port: dict(RED_POLICY) for port in range(66)}
    assert errors_of(cfg) == ["switches.s1.policies: 66 policies exceed one per port "
                              "(NUM_PORTS) and a default: 65"]
    cfg = base()
    cfg["switches"] = {f"s{i}": {} for i in range(config_module.MAX_SWITCHES + 1)}
    assert errors_of(cfg) == ["switches: 65 switches exceed the maximum 64"]


def write_bytes(tmp_path, data: bytes):
    path = tmp_path / "cfg.yaml"
    path.write_bytes(data)
    return path


VALID_YAML = textwrap.dedent("""\
    switches:
      s1:
        p4runtime_addr: 127.0.0.1:9559
        ports:
          1: {mac: "02:00:00:00:00:01"}
    """)


@pytest.mark.parametrize("data, message", [
    (VALID_YAML.encode("utf-16"), "UTF-16 text (byte order mark fffe): save it as UTF-8"),
    (VALID_YAML.encode("utf-16-be"), "a NUL byte at offset 0: UTF-16 or binary, not UTF-8 text"),
    (VALID_YAML.encode() + b"# caf\xe9\n", f"line 6: not UTF-8 text (byte 0xe9 at offset "
                                           f"{len(VALID_YAML) + 5}): save it as UTF-8"),
], ids=["UTF-16 with BOM", "UTF-16 without BOM", "Latin-1"])
def test_a_file_that_is_not_utf8_is_a_config_error(tmp_path, data: bytes, message: str) -> None:
    """A Latin-1 or UTF-16 file raised UnicodeDecodeError."""
    path = write_bytes(tmp_path, data)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.errors == [f"{path}: {message}"]


def test_a_utf8_byte_order_mark_is_fine(tmp_path) -> None:
    path = write_bytes(tmp_path, VALID_YAML.encode("utf-8-sig"))
    assert list(load_config(path).switches) == ["s1"]


def test_the_config_file_size_is_capped(tmp_path) -> None:
    """A 50 MB config (a 12.5-million-item tagged_dscp) took 4.4 GB. A file
    over MAX_CONFIG_BYTES is refused before it is parsed."""
    import time
    from mmaqm.config import MAX_CONFIG_BYTES
    items = "0, " * (MAX_CONFIG_BYTES // 3)
    path = write_bytes(tmp_path, f"classifier:\n  tagged_dscp: [{items}]\n".encode())
    started = time.monotonic()
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.errors == [
        f"{path}: larger than {MAX_CONFIG_BYTES} bytes: not an mmaqm config"]
    assert time.monotonic() - started < 0.5


def test_yaml_values_are_capped_below_the_size_cap(tmp_path) -> None:
    """Under the size cap a flow list of 1-digit items is still ~500k values (~350 MB
    in PyYAML): MAX_YAML_NODES stops it while composing."""
    from mmaqm.config import MAX_YAML_NODES
    path = write_bytes(tmp_path, f"a: [{'0,' * (MAX_YAML_NODES + 1)}]\n".encode())
    with pytest.raises(ConfigError, match=f"{path}: invalid YAML: line 1, column [0-9]+: more "
                                          f"than {MAX_YAML_NODES} values: not an mmaqm config"):
        load_config(path)


@pytest.mark.parametrize("text", [
    "a: " + "[" * 300 + "]" * 300 + "\n",
    "a:\n" + "".join(" " * level + "b:\n" for level in range(1, 300)),
], ids=["flow style", "block style"])
def test_deep_nesting_is_a_config_error(tmp_path, text: str) -> None:
    """YAML nested 300 levels deep raised RecursionError."""
    path = write_bytes(tmp_path, text.encode())
    with pytest.raises(ConfigError, match="nested deeper than 32 levels: not an mmaqm config"):
        load_config(path)


@pytest.mark.parametrize("text, message", [
    ("a: " + "9" * 5000, "integer of 5000 digits: too large"),   # str(int) raises above 4300
    ("a: 0x1" + "0" * 32, r"integer >= 2\^128: too large"),
    ("a: 2001-02-30", "invalid YAML value: day is out of range for month"),
], ids=["5000 digits", "2^128", "February 30"])
def test_yaml_scalars_python_cannot_convert(tmp_path, text: str, message: str) -> None:
    path = write_bytes(tmp_path, text.encode())
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_upta_capacity_is_optional_and_positive():
    """capacity_mbps (C of eqs. 18-19) turns on the controller's fair-share loop for the
    port; without it the entry keeps "none" (as the PTF tests use it)."""
    from mmaqm.config import parse_policy
    assert parse_policy({"algorithm": "UPTA"}).settings.capacity_mbps is None
    assert parse_policy({"algorithm": "UPTA", "capacity_mbps": 3.5}).settings.capacity_mbps == 3.5
    with pytest.raises(ConfigError) as info:
        parse_policy({"algorithm": "UPTA", "capacity_mbps": 0})
    assert info.value.errors == ["policy.capacity_mbps: must be > 0, got 0"]
    with pytest.raises(ConfigError) as info:
        parse_policy({"algorithm": "RED", "min_th_pkts": 1, "max_th_pkts": 3, "max_p": 0.1,
                      "capacity_mbps": 3.5})
    assert info.value.errors == ["policy.capacity_mbps: only for UPTA"]
