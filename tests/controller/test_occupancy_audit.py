"""The occupancy audit (docs/tofino.md "Counts that heal"): a count left high on
an idle Tofino port is read and cleared over BfRt (pipe 0's copy judged, every
pipe's cleared), never over P4Runtime (bf_switchd's P4Runtime server refuses
register reads); a busy port and a v1model program are never written; a Tofino
switch without a BfRt address is refused unless the audit is off. On the fake
P4Runtime switch with Stratum's rules and the fake BfRt server, from the
compiler's P4Info and stripped bfrt.json of the TNA RED and D-CBT builds."""

from __future__ import annotations

from pathlib import Path

import pytest

from fake_bfrt import PIPES, tofino_bfrt
from fake_p4rt import FakeP4RuntimeServer, run_async
from mmaqm import p4constants as C
from mmaqm.config import ConfigError, parse_config
from mmaqm.controller import SwitchController
from mmaqm.driver import SwitchDriver
from mmaqm.p4rt.proto import bfruntime_pb2 as pb
from mmaqm.targets.base import TargetRefusal

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TNA_RED = FIXTURES / "tna-red.p4info.txtpb"
TNA_DCBT = FIXTURES / "tna-dcbt.p4info.txtpb"
OCCUPANCY = ("queue_pkts", "tcp_pkts", "tagged_pkts", "untagged_pkts")
ONE = 1 << C.AVG_FRAC_BITS          # a packet in the registers' units
PIPE = 0                            # the pipe whose copy counts (docs/tofino.md)


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


def field(register: str) -> tuple[str, str]:
    """An occupancy register's BfRt table and data field (the stripped bfrt.json's)."""
    return (f"pipe.TnaIngress.aqm.occupancy.{register}",
            f"TnaIngress.aqm.occupancy.{register}.f1")


def set_count(bfrt, register: str, port: int, *per_pipe: int) -> None:
    """register[port] on the fake BfRt switch: per_pipe[i] in pipe i (the rest 0)."""
    table, name = field(register)
    values = [*per_pipe, *[0] * (PIPES - len(per_pipe))]
    bfrt.registers[(table, port)] = {name: values}


def count(bfrt, register: str, port: int) -> list[int]:
    """register[port] in every pipe, as the fake BfRt switch holds it."""
    table, name = field(register)
    return bfrt.registers.get((table, port), {}).get(name, [0] * PIPES)


def p4rt_register_access(server: FakeP4RuntimeServer) -> list:
    """Every P4Runtime register read or write the controller sent."""
    writes = [u.entity for r in server.write_requests for u in r.updates
              if u.entity.WhichOneof("entity") == "register_entry"]
    reads = [e for r in server.read_requests for e in r.entities
             if e.WhichOneof("entity") == "register_entry"]
    return writes + reads


def bfrt_register_writes(bfrt) -> list:
    """Every register table entry written over BfRt: (table, index, {field: value})."""
    names = {t["id"]: t for t in bfrt.tables.values() if t["table_type"] == "Register"}
    out = []
    for request in bfrt.writes:
        for u in request.updates:
            e = u.entity.table_entry
            if e.table_id in names:
                t = names[e.table_id]
                fields = {d["singleton"]["id"]: d["singleton"]["name"] for d in t["data"]}
                out.append((t["name"], int.from_bytes(e.key.fields[0].exact.value, "big"),
                            {fields[f.field_id]: int.from_bytes(f.stream, "big")
                             for f in e.data.fields}))
    return out


def audit(p4info: Path, device_config: Path, algorithm: str, between, periods: int = 2):
    """Install (on Tofino with the averages' BfRt writes), then audit `periods`
    times, calling between(p4rt_server, bfrt_server, i) before each audit; returns
    the P4Runtime server, the BfRt server, the controller, the ports each audit
    reset and the events."""
    cfg = config(algorithm)
    events: list[dict] = []

    async def body():
        server = FakeP4RuntimeServer(stratum_rules=True)
        async with server.run(), tofino_bfrt(cfg.switches["r1"], p4info, device_config.parent,
                                             device_config) as (sw, build, bfrt):
            async with SwitchDriver("r1", server.address, p4info=p4info,
                                    bmv2_json=build) as d:
                ctl = SwitchController(cfg, sw, d, clock_ms=lambda: 0.0,
                                       event_sink=events.append)
                await ctl.install()
                resets = []
                for i in range(periods):
                    between(server, bfrt, i)
                    resets.append(await ctl.audit_occupancy())
        return server, bfrt, ctl, resets

    server, bfrt, ctl, resets = run_async(body())
    return server, bfrt, ctl, resets, events


def test_a_stale_count_on_an_idle_tofino_port_is_reset_within_two_audits(
        device_config: Path) -> None:
    """Port 1 holds 3 packets by its counts (pipe 0's copy, over BfRt) and departs
    none: the first audit takes the baseline, the second clears every occupancy
    register of port 1 (D-CBT's fifo_pkts too) in one BfRt Write, every pipe's
    copy, and emits one event naming the switch, port, pipe and stale values;
    port 2 (counts 0) is left alone. No P4Runtime register read or write."""
    def stale(server, bfrt, i):
        if i == 0:
            departures(server, 1, 40)
            set_count(bfrt, "queue_pkts", 1, 3 * ONE)
            set_count(bfrt, "tcp_pkts", 1, 2 * ONE)
            set_count(bfrt, "untagged_pkts", 1, ONE)
            set_count(bfrt, "fifo_pkts", 1, 3 * ONE)

    server, bfrt, ctl, resets, events = audit(TNA_DCBT, device_config, "DCBT", stale)
    assert resets == [[], [1]]
    for name in (*OCCUPANCY, "fifo_pkts"):
        assert count(bfrt, name, 1) == [0] * PIPES, name
    writes = bfrt_register_writes(bfrt)
    assert sorted(t for t, _, _ in writes) == sorted(field(r)[0]
                                                     for r in (*OCCUPANCY, "fifo_pkts"))
    assert {i for _, i, _ in writes} == {1}
    assert all(set(v.values()) == {0} for _, _, v in writes)
    [clear] = [w for w in bfrt.writes if any(u.entity.table_entry.table_id in
               {bfrt.table_named(field(r)[0])["id"] for r in OCCUPANCY} for u in w.updates)]
    assert all(u.type == pb.Update.MODIFY for u in clear.updates)
    assert clear.target.pipe_id == 0xFFFF            # every pipe's copy
    register_reads = [r for r in bfrt.reads if any(
        e.table_entry.table_id == bfrt.table_named(field("queue_pkts")[0])["id"]
        for e in r.entities)]
    assert len(register_reads) == 2                  # one Read an audit
    assert all(e.table_entry.table_flags.from_hw for r in register_reads for e in r.entities)
    assert p4rt_register_access(server) == []
    [event] = events[-1:]
    assert event["event"] == "occupancy_reset"
    assert (event["switch"], event["port"], event["pipe"], event["departures"]) == \
        ("r1", 1, PIPE, 40)
    assert event["stale"]["queue_pkts"] == 3 * ONE and event["stale"]["fifo_pkts"] == 3 * ONE
    assert ctl.occupancy_resets == 1
    assert ctl.controller_sample()["occupancy_resets"] == 1


def test_the_audit_reads_bfrt_not_p4runtime_on_tofino(device_config: Path) -> None:
    """The fake P4Runtime switch holds a stale count on port 1 and the BfRt
    switch holds none; the BfRt switch holds one on port 2 and P4Runtime none:
    only port 2 is reset (an audit still reading P4Runtime would reset port 1),
    and the P4Runtime switch's registers are untouched."""
    def split(server, bfrt, i):
        if i == 0:
            server.registers["queue_pkts"] = {1: 5 * ONE}
            set_count(bfrt, "queue_pkts", 2, 4 * ONE)

    server, bfrt, _, resets, _ = audit(TNA_RED, device_config, "RED", split)
    assert resets == [[], [2]]
    assert count(bfrt, "queue_pkts", 2) == [0] * PIPES
    assert server.registers == {"queue_pkts": {1: 5 * ONE}}
    assert p4rt_register_access(server) == []


def test_the_audit_judges_pipe_0s_copy(device_config: Path) -> None:
    """Port 1's count is stale only in pipe 1's copy (pipe 0's is 0): not reset,
    nothing written. Port 2's is stale in pipe 0's copy and pipe 2's holds
    another value: reset, and every pipe's copy is 0 after the one write."""
    def pipes(server, bfrt, i):
        if i == 0:
            set_count(bfrt, "queue_pkts", 1, 0, 7 * ONE)
            set_count(bfrt, "queue_pkts", 2, 4 * ONE, 0, 9 * ONE)

    _, bfrt, _, resets, events = audit(TNA_RED, device_config, "RED", pipes)
    assert resets == [[], [2]]
    assert count(bfrt, "queue_pkts", 1) == [0, 7 * ONE, 0, 0]
    assert count(bfrt, "queue_pkts", 2) == [0] * PIPES
    assert {i for _, i, _ in bfrt_register_writes(bfrt)} == {2}
    assert events[-1]["stale"]["queue_pkts"] == 4 * ONE


def test_a_busy_tofino_port_is_never_reset(device_config: Path) -> None:
    """Departures advance every period while the count is not 0: no register write
    in five audits."""
    def busy(server, bfrt, i):
        departures(server, 1, 100 * (i + 1))
        set_count(bfrt, "queue_pkts", 1, 20 * ONE)

    server, bfrt, ctl, resets, events = audit(TNA_RED, device_config, "RED", busy, periods=5)
    assert resets == [[]] * 5
    assert bfrt_register_writes(bfrt) == []
    assert not [e for e in events if e["event"] == "occupancy_reset"]


def test_a_count_that_drains_between_audits_is_not_reset(device_config: Path) -> None:
    """A count not 0 at one audit only (the queue drained, or a packet just
    arrived): nothing is written."""
    def once(server, bfrt, i):
        set_count(bfrt, "queue_pkts", 1, ONE if i == 1 else 0)

    _, bfrt, _, resets, _ = audit(TNA_RED, device_config, "RED", once, periods=3)
    assert resets == [[]] * 3 and bfrt_register_writes(bfrt) == []


def _construct(p4info: Path, device_config: Path, cfg, switch=None):
    """The controller of cfg's r1 on a fake P4Runtime switch, or the
    TargetRefusal its construction raised; and the server (never written)."""
    server = FakeP4RuntimeServer(stratum_rules=True)

    async def body():
        async with server.run():
            async with SwitchDriver("r1", server.address, p4info=p4info,
                                    bmv2_json=device_config) as d:
                try:
                    return SwitchController(cfg, switch or cfg.switches["r1"], d,
                                            clock_ms=lambda: 0.0)
                except TargetRefusal as exc:
                    return exc

    return run_async(body()), server


def test_a_tofino_switch_without_a_bfrt_address_is_refused_unless_the_audit_is_off(
        tmp_path: Path) -> None:
    """Drop-tail needs no Lpf entry, so only the audit needs BfRt: without a
    bfrt_address the controller refuses (before any write), naming the field and
    both ways out; with occupancy_audit_interval_s 0 it is accepted and audits
    nothing."""
    from fake_bfrt import tna_build_dir
    build = tna_build_dir(tmp_path, "red")
    policy = {"algorithm": "DROP_TAIL", "queue_limit_pkts": 64}

    def cfg(interval_s):
        return parse_config({"switches": {"r1": {
            "p4runtime_addr": "127.0.0.1:9559", "occupancy_audit_interval_s": interval_s,
            "ports": {1: {"mac": "02:01:00:00:01:01"}}, "policies": {1: policy}}}})

    refusal, server = _construct(TNA_RED, build, cfg(1.0))
    assert isinstance(refusal, TargetRefusal), refusal
    text = str(refusal)
    assert "switches.r1.occupancy_audit_interval_s (1)" in text
    assert "queue_pkts" in text and "refuses register reads" in text
    assert "switches.r1.bfrt_address" in text and "occupancy_audit_interval_s: 0" in text
    assert server.write_requests == []
    ctl, _ = _construct(TNA_RED, build, cfg(0))
    assert isinstance(ctl, SwitchController), ctl
    assert ctl.audit_interval_s == 0 and ctl.bfrt_info is None
    assert run_async(ctl.audit_occupancy()) == []


def test_a_bfrt_json_without_the_occupancy_registers_is_refused(tmp_path: Path) -> None:
    """A build directory whose bfrt.json lacks queue_pkts (another program's):
    refused at construction, naming the register, before any write."""
    import json
    from fake_bfrt import tna_build_dir
    build = tna_build_dir(tmp_path, "red")
    doc = json.loads((build / "bfrt.json").read_text())
    doc["tables"] = [t for t in doc["tables"] if not t["name"].endswith(".queue_pkts")]
    (build / "bfrt.json").write_text(json.dumps(doc))
    cfg = parse_config({"switches": {"r1": {
        "p4runtime_addr": "127.0.0.1:9559", "bfrt_address": "127.0.0.1:1",
        "ports": {1: {"mac": "02:01:00:00:01:01"}},
        "policies": {1: {"algorithm": "DROP_TAIL", "queue_limit_pkts": 64}}}}})
    refusal, server = _construct(TNA_RED, build, cfg)
    assert isinstance(refusal, TargetRefusal), refusal
    assert "occupancy audit" in str(refusal) and "no table 'queue_pkts'" in str(refusal)
    assert server.write_requests == []


def test_a_v1model_program_never_gets_a_register_write(
        p4info_path: Path, device_config: Path) -> None:
    """On v1model the counts are exact: the target has no occupancy registers, the
    audit is off (interval 0, so run() never calls it) and, called anyway, neither
    reads nor writes a register."""
    def stale(server, bfrt, i):
        assert bfrt is None                 # no BfRt on v1model
        server.registers["queue_pkts"] = {1: 5 * ONE}

    server, _, ctl, resets, events = audit(p4info_path, device_config, "RED", stale)
    assert not ctl.driver.target.audits_occupancy
    assert ctl.audit_interval_s == 0 and ctl.bfrt_info is None
    assert resets == [[], []]
    assert p4rt_register_access(server) == []


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
                                             device_config) as (sw, build, bfrt):
            async with SwitchDriver("r1", server.address, p4info=TNA_RED,
                                    bmv2_json=build) as d:
                ctl = SwitchController(cfg, sw, d, clock_ms=lambda: 0.0,
                                       enforce_interval_s=0)
                await ctl.install()
                set_count(bfrt, "queue_pkts", 2, 9 * ONE)
                loop = asyncio.get_running_loop()
                start = loop.time()
                task = asyncio.create_task(ctl.run())
                while count(bfrt, "queue_pkts", 2)[PIPE] and loop.time() - start < 2:
                    await asyncio.sleep(0.01)
                elapsed = loop.time() - start
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
        return bfrt, elapsed

    bfrt, elapsed = run_async(body())
    assert count(bfrt, "queue_pkts", 2) == [0] * PIPES
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


def test_mmaqm_ctl_install_of_a_tofino_switch_without_bfrt_address_exits_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A drop-tail policy (no average) on the TNA RED build, the audit on by
    default, no bfrt_address, no switch at the P4Runtime address: exit 2 with the
    refusal (the switch is never contacted); with the audit off the same
    command gets as far as connecting (exit 1: no switch there)."""
    import yaml
    from fake_bfrt import tna_build_dir
    from fake_p4rt import closed_port
    from mmaqm import cli
    build = tna_build_dir(tmp_path, "red")

    def run(extra: dict) -> int:
        path = tmp_path / "tofino.yaml"
        path.write_text(yaml.safe_dump({"switches": {"s1": {
            "p4runtime_addr": f"127.0.0.1:{closed_port()}",
            "ports": {3: {"mac": "02:00:00:00:00:03"}},
            "policies": {3: {"algorithm": "DROP_TAIL", "queue_limit_pkts": 64}}, **extra}}}))
        return cli.main(["--config", str(path), "--p4info", str(TNA_RED), "--device-config",
                         str(build), "--timeout-s", "0.5", "install"])

    assert run({}) == 2
    err = capsys.readouterr().err
    assert "occupancy_audit_interval_s" in err and "bfrt_address" in err
    assert run({"occupancy_audit_interval_s": 0}) == 1
    assert "occupancy" not in capsys.readouterr().err
