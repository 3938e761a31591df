"""A BMv2 profile (p4src/v1model/profile.p4, make build PROFILE=<NAME>) carries one
algorithm. Its P4Info (the committed golden file, which tests/tools/test_profiles.py
keeps equal to p4c's output) names it: the controller drives it for its own algorithm
and refuses, before any write, a policy of another, naming the profile that has it."""

from __future__ import annotations

from pathlib import Path

import finsy as fy
import pytest

from fake_p4rt import FakeP4RuntimeServer, load_p4info, run_async
from mmaqm.config import parse_config
from mmaqm.controller import SwitchController
from mmaqm.driver import SwitchDriver
from mmaqm.p4rt.codec import policy_actions_missing, program_profile

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "p4src" / "v1model" / "profiles"
RED_PROFILE = PROFILES / "red.p4info.txtpb"


def config(address: str, port2: dict):
    return parse_config({"switches": {"s1": {
        "p4runtime_addr": address,
        "ports": {1: {"mac": "02:00:00:00:00:01"}, 2: {"mac": "02:00:00:00:00:02"}},
        "routes": [{"prefix": "10.0.2.0/24", "port": 2, "next_hop_mac": "02:00:00:02:00:01"}],
        "policies": {1: {"algorithm": "RED", "min_th_pkts": 5, "max_th_pkts": 15, "max_p": 0.1},
                     2: port2}}}})


def install(p4info: Path, device_config: Path, port2: dict) -> FakeP4RuntimeServer:
    """SwitchController.install of the config through a driver on a fake switch; the
    server even when install raises (server.error)."""
    server = FakeP4RuntimeServer()

    async def body() -> None:
        async with server.run():
            cfg = config(server.address, port2)
            async with SwitchDriver("s1", server.address, p4info=p4info,
                                    bmv2_json=device_config) as d:
                await SwitchController(cfg, cfg.switches["s1"], d).install()

    try:
        run_async(body())
        server.error = None
    except ValueError as err:
        server.error = err
    return server


def test_every_golden_profile_names_its_algorithm_and_the_all_in_one_program_none(
        p4info_path: Path) -> None:
    for path in sorted(PROFILES.glob("*.p4info.txtpb")):
        schema = fy.P4Schema(path)
        assert program_profile(schema) == path.name.split(".")[0].upper()
        assert policy_actions_missing(schema) == []
    assert program_profile(load_p4info(p4info_path)) is None


def test_the_red_profile_is_installed_for_red_policies(device_config: Path) -> None:
    server = install(RED_PROFILE, device_config,
                     {"algorithm": "RED", "min_th_pkts": 5, "max_th_pkts": 15, "max_p": 0.1})
    assert server.error is None
    assert {e.match["port"]: e.action for e in server.table_entries("port_policy")} == \
        {1: "red", 2: "red"}


def test_a_dcbt_policy_on_the_red_profile_is_refused_before_any_write(
        device_config: Path) -> None:
    server = install(RED_PROFILE, device_config,
                     {"algorithm": "DCBT", "min_th_pkts": 5, "max_th_pkts": 15, "max_p": 0.1})
    assert isinstance(server.error, ValueError)
    assert str(server.error) == (
        "s1: port 2's algorithm DCBT is not in this program (profile RED); "
        "build PROFILE=DCBT or the all-in-one program ('make build')")
    assert server.write_requests == []
    assert server.table_entries() == []


def test_a_runtime_policy_write_of_another_algorithm_is_refused_by_name(
        device_config: Path) -> None:
    from mmaqm.encoding import PolicyAction

    async def body() -> FakeP4RuntimeServer:
        server = FakeP4RuntimeServer()
        async with server.run():
            async with SwitchDriver("s1", server.address, p4info=PROFILES / "dcbt.p4info.txtpb",
                                    bmv2_json=device_config) as d:
                with pytest.raises(ValueError, match=r"algorithm MCDT is not in this program "
                                                     r"\(profile DCBT\); build PROFILE=MCDT"):
                    await d.write_port_policy(3, PolicyAction("mcdt", {}))
        return server

    assert run_async(body()).write_requests == []
