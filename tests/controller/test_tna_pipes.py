"""On Tofino every configured port is in pipe 0 (docs/tofino.md, "State on every
pipe"): the departure reports return to pipe 0's registers only, so a port of
another pipe would be counted in a copy that is never decremented. The Tofino
target refuses such a configuration before the switch is written (and the CLI
exits 2); v1model has no pipes."""

from __future__ import annotations

import dataclasses
import ipaddress
from pathlib import Path

import pytest

from fake_bfrt import FakeBfrtServer, bfrt_fixture, tna_build_dir
from fake_p4rt import FakeP4RuntimeServer, run_async
from mmaqm.config import PortConfig, Route, parse_config
from mmaqm.controller import SwitchController, configured_ports
from mmaqm.driver import SwitchDriver
from mmaqm.targets import tna as T
from mmaqm.targets.base import TargetRefusal
from mmaqm.targets.v1model import TARGET as V1MODEL_TARGET
from test_p4info_by_name import upta_bfd_config

TNA_RED_P4INFO = Path(__file__).resolve().parent / "fixtures" / "tna-red.p4info.txtpb"


def red_config(bfrt_address: str = "127.0.0.1:50052"):
    """One switch, ports 1 and 2 (pipe 0), a route to port 2, RED on port 2 (its
    average's time constant written over BfRt at bfrt_address)."""
    return parse_config({"switches": {"s1": {
        "p4runtime_addr": "127.0.0.1:9559", "bfrt_address": bfrt_address,
        "ports": {1: {"mac": "02:00:00:00:00:01"}, 2: {"mac": "02:00:00:00:00:02"}},
        "routes": [{"prefix": "10.0.2.0/24", "port": 2, "next_hop_mac": "02:00:00:02:00:01"}],
        "policies": {2: {"algorithm": "RED", "min_th_pkts": 5, "max_th_pkts": 15,
                         "max_p": 0.1, "queue_limit_pkts": 60, "bandwidth_pps": 1000}}}}})


def with_port(cfg, port: int, as_route: bool):
    """The configuration with dev port `port` added as a port, or as a route's
    egress port only. (The YAML's port range, 0..NUM_PORTS - 1, keeps every port
    in pipe 0 today: a configuration built in code is the way past it.)"""
    sw = cfg.switches["s1"]
    if as_route:
        sw = dataclasses.replace(sw, routes=sw.routes + (Route(
            ipaddress.ip_network("10.0.3.0/24"), port, "02:00:00:03:00:01"),))
    else:
        sw = dataclasses.replace(sw, ports={**sw.ports, port: PortConfig(port,
                                                                         "02:00:00:00:01:30")})
    return dataclasses.replace(cfg, switches={"s1": sw})


def test_the_pipe_rule_names_each_port_its_pipe_and_the_rule() -> None:
    T.TARGET.check_ports({0: "a", 63: "b", 127: "c"})        # pipe 0's dev ports
    with pytest.raises(TargetRefusal) as err:
        T.TARGET.check_ports({2: "switches.s1.ports", 128: "switches.s1.ports",
                              452: "switches.s1.routes: 10.0.3.0/24"})
    text = str(err.value)
    assert "dev port 128 (switches.s1.ports) is in pipe 1" in text
    assert "dev port 452 (switches.s1.routes: 10.0.3.0/24) is in pipe 3" in text
    assert "dev port 2 " not in text
    assert "must be in pipe 0 (dev ports 0..127)" in text and "dev port 68" in text
    assert T.dev_port_pipe(T.TNA_RECIRC_PORT) == T.TNA_STATE_PIPE == 0
    V1MODEL_TARGET.check_ports({128: "switches.s1.ports"})   # v1model: no pipes


def test_configured_ports_are_every_port_the_configuration_names() -> None:
    cfg = upta_bfd_config()          # test_p4info_by_name's UPTA switch with BFD
    assert configured_ports(cfg.switches["r1"]) == {
        1: "switches.r1.ports", 2: "switches.r1.ports", 3: "switches.r1.ports",
        63: "switches.r1.bfd.cpu_port"}
    only_routed = with_port(red_config(), 129, as_route=True).switches["s1"]
    assert configured_ports(only_routed)[129] == "switches.s1.routes: 10.0.3.0/24"


def install_on_tofino(cfg, tmp_path: Path):
    """Construct the controller for the TNA RED build and install, on a fake switch
    with Stratum's rules and a fake BfRt server; (server, plan, the refusal or None)."""
    server = FakeP4RuntimeServer(stratum_rules=True)
    bfrt = FakeBfrtServer(bfrt_fixture("red"), "red")

    async def body():
        async with server.run(), bfrt.run():
            sw = dataclasses.replace(cfg.switches["s1"], bfrt_address=bfrt.address)
            async with SwitchDriver("s1", server.address, p4info=TNA_RED_P4INFO,
                                    bmv2_json=tna_build_dir(tmp_path, "red")) as d:
                try:
                    ctl = SwitchController(cfg, sw, d, clock_ms=lambda: 0.0)
                except TargetRefusal as refusal:
                    return None, refusal
                return await ctl.install(), None

    plan, refusal = run_async(body())
    return server, plan, refusal


@pytest.mark.parametrize("as_route", [False, True], ids=["port", "route-egress-port"])
def test_on_tofino_a_port_in_pipe_1_is_refused_before_any_write(
        tmp_path: Path, as_route: bool) -> None:
    server, plan, refusal = install_on_tofino(with_port(red_config(), 130, as_route),
                                              tmp_path)
    assert plan is None and refusal is not None
    assert "dev port 130" in str(refusal) and "is in pipe 1" in str(refusal)
    assert ("routes: 10.0.3.0/24" in str(refusal)) == as_route
    assert server.write_requests == []
    assert server.table_entries() == [] and server.clone_sessions == {}


def test_on_tofino_a_config_of_pipe_0_ports_installs(tmp_path: Path) -> None:
    server, plan, refusal = install_on_tofino(red_config(), tmp_path)
    assert refusal is None and plan.writes
    [policy] = server.table_entries("port_policy")
    assert policy.match["port"] == 2 and policy.action == "red"
    assert {e.match["port"] for e in server.table_entries("red_zone")} == {2}
    assert sorted(server.clone_sessions) == [T.TNA_REPORT_SESSION]


def test_install_refuses_another_pipes_port_before_contacting_the_switch(
        tmp_path: Path) -> None:
    """`mmaqm-ctl install`'s path (supervisor.run_switches) raises the refusal
    before it connects: no switch listens at the address, and the error is the
    refusal, not a connection failure (the CLI exits 2 on it)."""
    from mmaqm.supervisor import run_switches
    device_config = tna_build_dir(tmp_path, "red")
    cfg = with_port(red_config(), 200, as_route=False)
    cfg = dataclasses.replace(cfg, switches={"s1": dataclasses.replace(
        cfg.switches["s1"], p4runtime_addr="127.0.0.1:1")})
    with pytest.raises(TargetRefusal, match=r"dev port 200 \(switches.s1.ports\) is in pipe 1"):
        run_async(run_switches(cfg, p4info=TNA_RED_P4INFO, bmv2_json=device_config,
                               install_only=True, timeout_s=0.5))
    unreachable = red_config()
    unreachable = dataclasses.replace(unreachable, switches={"s1": dataclasses.replace(
        unreachable.switches["s1"], p4runtime_addr="127.0.0.1:1")})
    with pytest.raises(Exception) as err:         # the same path, pipe-0 ports: it connects
        run_async(run_switches(unreachable, p4info=TNA_RED_P4INFO, bmv2_json=device_config,
                               install_only=True, timeout_s=0.5))
    assert not isinstance(err.value, TargetRefusal)
