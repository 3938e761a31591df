"""The occupancy audit (docs/tofino.md "Counts that heal"): a count left high on
an idle Tofino port is cleared over P4Runtime; a busy port and a v1model program
are never written. On the fake switch with Stratum's rules, from the compiler's
P4Info of the TNA RED and D-CBT builds."""

from __future__ import annotations

from pathlib import Path

import pytest

from fake_bfrt import tofino_bfrt
from fake_p4rt import FakeP4RuntimeServer, run_async
from mmaqm import p4constants as C
from mmaqm.config import ConfigError, parse_config
from mmaqm.controller import SwitchController
from mmaqm.driver import SwitchDriver

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TNA_RED = FIXTURES / "tna-red.p4info.txtpb"
TNA_DCBT = FIXTURES / "tna-dcbt.p4info.txtpb"
OCCUPANCY = ("queue_pkts", "tcp_pkts", "tagged_pkts", "untagged_pkts")
ONE = 1 << C.AVG_FRAC_BITS          # a packet in the registers' units


def config(algorithm: str = "RED", interval_s: object = 1.0):
    policy = {"algorithm": algorithm, "queue_limit_pkts": 64, "min_th_pkts": 5,
              "max_th_pkts": 15, "max_p": 0.1, "bandwidth_pps": 1000}
    return parse_config({"switches": {"r1": {
        "p4runtime_addr": "127.0.0.1:9559", "occupancy_audit_interval_s": interval_s,
        "ports": {p: {"mac": f"02:01:00:00:01:0{p}"} for p in (1, 2)},
        "policies": {1: policy, 2: policy}}}})


def departures(server: FakeP4RuntimeServer, port: int, packets: int) -> None:
    """The port's departure counter (its TCP class index) at `packets`."""
    server.counters.setdefault("queue_departures", {})[C.class_index(port, 0)] = \
        (packets, packets * 1500)


def register_writes(server: FakeP4RuntimeServer) -> list:
    return [u.entity.register_entry for r in server.write_requests for u in r.updates
            if u.entity.WhichOneof("entity") == "register_entry"]


def audit(p4info: Path, device_config: Path, algorithm: str, between, periods: int = 2):
    """Install (on Tofino with the averages' BfRt writes), then audit `periods`
    times, calling between(server, i) before each audit; returns the server, the
    ports each audit reset and the events."""
    cfg = config(algorithm)
    events: list[dict] = []

    async def body():
        server = FakeP4RuntimeServer(stratum_rules=True)
        async with server.run(), tofino_bfrt(cfg.switches["r1"], p4info, device_config.parent,
                                             device_config) as (sw, build, _):
            async with SwitchDriver("r1", server.address, p4info=p4info,
                                    bmv2_json=build) as d:
                ctl = SwitchController(cfg, sw, d, clock_ms=lambda: 0.0,
                                       event_sink=events.append)
                await ctl.install()
                resets = []
                for i in range(periods):
                    between(server, i)
                    resets.append(await ctl.audit_occupancy())
        return server, ctl, resets

    server, ctl, resets = run_async(body())
    return server, ctl, resets, events


def test_a_stale_count_on_an_idle_tofino_port_is_reset_within_two_audits(
        device_config: Path) -> None:
    """Port 1 holds 3 packets by its counts and departs none: the first audit
    takes the baseline, the second clears every occupancy register of port 1
    (D-CBT's fifo_pkts too) with one MODIFY each, and emits one event naming
    the switch, port and stale values; port 2 (counts 0) is left alone."""
    def stale(server, i):
        if i == 0:
            departures(server, 1, 40)
            server.registers.update({"queue_pkts": {1: 3 * ONE}, "tcp_pkts": {1: 2 * ONE},
                                     "untagged_pkts": {1: ONE}, "fifo_pkts": {1: 3 * ONE}})

    server, ctl, resets, events = audit(TNA_DCBT, device_config, "DCBT", stale)
    assert resets == [[], [1]]
    for name in (*OCCUPANCY, "fifo_pkts"):
        assert server.registers.get(name, {}).get(1, 0) == 0, name
    writes = register_writes(server)
    assert len(writes) == len(OCCUPANCY) + 1
    assert {w.index.index for w in writes} == {1}
    assert all(int.from_bytes(w.data.bitstring, "big") == 0 for w in writes)
    [event] = events[-1:]
    assert event["event"] == "occupancy_reset"
    assert (event["switch"], event["port"], event["departures"]) == ("r1", 1, 40)
    assert event["stale"]["queue_pkts"] == 3 * ONE and event["stale"]["fifo_pkts"] == 3 * ONE
    assert ctl.occupancy_resets == 1
    assert ctl.controller_sample()["occupancy_resets"] == 1


def test_a_busy_tofino_port_is_never_reset(device_config: Path) -> None:
    """Departures advance every period while the count is not 0: no register write
    in five audits."""
    def busy(server, i):
        departures(server, 1, 100 * (i + 1))
        server.registers["queue_pkts"] = {1: 20 * ONE}

    server, ctl, resets, events = audit(TNA_RED, device_config, "RED", busy, periods=5)
    assert resets == [[]] * 5
    assert register_writes(server) == []
    assert not [e for e in events if e["event"] == "occupancy_reset"]


def test_a_count_that_drains_between_audits_is_not_reset(device_config: Path) -> None:
    """A count not 0 at one audit only (the queue drained, or a packet just
    arrived): nothing is written."""
    def once(server, i):
        server.registers["queue_pkts"] = {1: ONE} if i == 1 else {}

    server, _, resets, _ = audit(TNA_RED, device_config, "RED", once, periods=3)
    assert resets == [[]] * 3 and register_writes(server) == []


def test_a_v1model_program_never_gets_a_register_write(
        p4info_path: Path, device_config: Path) -> None:
    """On v1model the counts are exact: the target has no occupancy registers, the
    audit is off (interval 0, so run() never calls it) and, called anyway, neither
    reads nor writes a register."""
    def stale(server, i):
        server.registers["queue_pkts"] = {1: 5 * ONE}

    server, ctl, resets, events = audit(p4info_path, device_config, "RED", stale)
    assert not ctl.driver.target.audits_occupancy
    assert ctl.audit_interval_s == 0
    assert resets == [[], []]
    assert register_writes(server) == []
    assert not any(e.WhichOneof("entity") == "register_entry"
                   for r in server.read_requests for e in r.entities)


def test_the_fake_switch_writes_a_register_only_by_modify(device_config: Path) -> None:
    """P4Runtime (and Stratum) allow a register MODIFY only: an INSERT is refused."""
    import finsy as fy
    from finsy.proto import p4r

    async def body():
        server = FakeP4RuntimeServer(stratum_rules=True)
        async with server.run():
            async with SwitchDriver("r1", server.address, p4info=TNA_RED,
                                    bmv2_json=device_config) as d:
                entity = fy.P4RegisterEntry("queue_pkts", index=1, data=7).encode(
                    d.switch.p4info)
                with pytest.raises(fy.P4ClientError):
                    await d.write([p4r.Update(type=p4r.Update.INSERT, entity=entity)])
                await d.write([p4r.Update(type=p4r.Update.MODIFY, entity=entity)])
        return server

    assert run_async(body()).registers == {"queue_pkts": {1: 7}}


@pytest.mark.parametrize("value, problem", [
    (0.05, "must be 0 (off) or >= 0.1"), (-1, ">= 0"), (7200, "<= 3600"),
    ("1s", "must be a number")])
def test_a_bad_audit_interval_is_refused_at_check_time(value: object, problem: str) -> None:
    with pytest.raises(ConfigError) as err:
        config(interval_s=value)
    [message] = err.value.errors
    assert message.startswith("switches.r1.occupancy_audit_interval_s")
    assert problem in message


def test_the_audit_interval_defaults_to_one_second_and_zero_turns_it_off() -> None:
    raw = {"p4runtime_addr": "127.0.0.1:9559", "ports": {1: {"mac": "02:01:00:00:01:01"}}}
    assert parse_config({"switches": {"r1": raw}}).switches["r1"].occupancy_audit_interval_s \
        == 1.0
    assert config(interval_s=0).switches["r1"].occupancy_audit_interval_s == 0


def test_run_audits_a_tofino_switch_every_interval(device_config: Path) -> None:
    """run() itself calls the audit: with a 0.1 s interval a stale idle count is
    cleared within about two periods (a 2 s bound against a loaded machine)."""
    import asyncio
    cfg = config(interval_s=0.1)

    async def body():
        server = FakeP4RuntimeServer(stratum_rules=True)
        async with server.run(), tofino_bfrt(cfg.switches["r1"], TNA_RED, device_config.parent,
                                             device_config) as (sw, build, _):
            async with SwitchDriver("r1", server.address, p4info=TNA_RED,
                                    bmv2_json=build) as d:
                ctl = SwitchController(cfg, sw, d, clock_ms=lambda: 0.0,
                                       enforce_interval_s=0)
                await ctl.install()
                server.registers["queue_pkts"] = {2: 9 * ONE}
                loop = asyncio.get_running_loop()
                start = loop.time()
                task = asyncio.create_task(ctl.run())
                while server.registers["queue_pkts"][2] and loop.time() - start < 2:
                    await asyncio.sleep(0.01)
                elapsed = loop.time() - start
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
        return server, elapsed

    server, elapsed = run_async(body())
    assert server.registers["queue_pkts"][2] == 0
    assert elapsed < 2


def test_check_refuses_a_bad_audit_interval_with_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`mmaqm-ctl check` exits 2 naming the field (the switch is never contacted)."""
    import yaml
    from mmaqm import cli
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"switches": {"r1": {
        "p4runtime_addr": "127.0.0.1:1", "occupancy_audit_interval_s": 0.01,
        "ports": {1: {"mac": "02:01:00:00:01:01"}}}}}))
    assert cli.main(["--config", str(path), "check"]) == 2
    assert ("  switches.r1.occupancy_audit_interval_s: must be 0 (off) or >= 0.1, got 0.01\n"
            in capsys.readouterr().err)
