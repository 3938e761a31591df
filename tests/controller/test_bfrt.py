"""The averages of a Tofino build (Lpf filters) get their time constants over
BfRt (docs/tofino.md "The averages' time constants"): the controller works out
the Lpf entries a policy needs (targets.tna_lpf), checks them against the build's
bfrt.json and writes them through BfRt's gRPC API (p4rt.bfrt) after the policies;
without a BfRt address it refuses before any write. Against the fake P4Runtime
switch with Stratum's rules and the fake BfRt server (fake_bfrt.py, which
enforces subscribe-and-bind before Write and the tables' schema), with the
compiler's P4Infos and bfrt.json (cut to its Lpf tables and registers) of the RED, D-CBT and
UPTA builds."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import grpc
import pytest

from fake_bfrt import FakeBfrtServer, Spec, bfrt_fixture, float32, tna_build_dir
from fake_p4rt import FakeP4RuntimeServer, closed_port, run_async
from mmaqm import p4constants as C
from mmaqm.config import ConfigError, parse_config, parse_policy
from mmaqm.encoding import policy_action
from mmaqm.controller import SwitchController
from mmaqm.driver import SwitchConnectionError, SwitchDriver
from mmaqm.p4rt.bfrt import (BFRT_CLIENT_ID, BfrtClient, BfrtConnectionError, BfrtInfo,
                             BfrtRequestError, BfrtSchemaError, TableWrite)
from mmaqm.p4rt.proto import bfruntime_pb2 as pb
from mmaqm.p4rt.proto import bfruntime_pb2_grpc as pb_grpc
from mmaqm.targets.base import TargetRefusal
from mmaqm.targets.tna import TARGET as TNA
from mmaqm.targets.v1model import TARGET as V1MODEL
from mmaqm.targets.tna_lpf import LpfSpec

FIXTURES = Path(__file__).resolve().parent / "fixtures"
P4INFO = {"red": FIXTURES / "tna-red.p4info.txtpb", "dcbt": FIXTURES / "tna-dcbt.p4info.txtpb",
          "upta": FIXTURES / "tna-upta.p4info.txtpb"}
RED_AVG = "pipe.TnaIngress.aqm.red_average.red_avg"
TAGGED_AVG = "pipe.TnaIngress.aqm.tagged_avg"
UNTAGGED_AVG = "pipe.TnaIngress.aqm.untagged_avg"
UPTA_RATE = "pipe.TnaIngress.upta_flow.upta_rate"


def config(policy: dict, *, bfrt_address: str | None = "127.0.0.1:1", port: int = 3):
    sw = {"p4runtime_addr": "127.0.0.1:9559",
          "ports": {port: {"mac": "02:00:00:00:00:03"}, 1: {"mac": "02:00:00:00:00:01"}},
          "policies": {port: policy}}
    if bfrt_address is not None:
        sw["bfrt_address"] = bfrt_address
    return parse_config({"switches": {"s1": sw}})


RED_POLICY = {"algorithm": "RED", "min_th_pkts": 5, "max_th_pkts": 15, "max_p": 0.1,
              "queue_limit_pkts": 60, "ewma_weight": 2.0**-9, "bandwidth_pps": 1000}
DCBT_POLICY = {**RED_POLICY, "algorithm": "DCBT", "ewma_weight": 2.0**-4,
               "bandwidth_pps": 10_000}
UPTA_POLICY = {"algorithm": "UPTA", "upta_flow_slots": 8, "upta_k_shift": 17,
               "queue_limit_pkts": 60}


def install(tmp_path: Path, variant: str, cfg, *, bfrt_up: bool = True,
            bfrt_json: Path | None = None):
    """Install cfg's switch s1 on a fake P4Runtime switch with Stratum's rules
    and a fake BfRt server (bfrt_up False: none listens at the address); returns
    (P4Runtime server, BfRt server, the controller or the exception raised)."""
    build = tna_build_dir(tmp_path, variant)
    if bfrt_json is not None:
        (build / "bfrt.json").write_bytes(bfrt_json.read_bytes())
    bfrt = FakeBfrtServer(bfrt_fixture(variant), variant)
    p4rt = FakeP4RuntimeServer(stratum_rules=True)

    async def body():
        async with p4rt.run(), bfrt.run():
            sw = cfg.switches["s1"]
            if sw.bfrt_address is not None:
                address = bfrt.address if bfrt_up else f"127.0.0.1:{closed_port()}"
                sw = type(sw)(**{**sw.__dict__, "bfrt_address": address})
            async with SwitchDriver("s1", p4rt.address, p4info=P4INFO[variant],
                                    bmv2_json=build, connect_timeout_s=2,
                                    request_timeout_s=2) as d:
                try:
                    ctl = SwitchController(cfg, sw, d, clock_ms=lambda: 0.0)
                    await ctl.install()
                except (TargetRefusal, SwitchConnectionError) as exc:
                    return exc
                return ctl

    return p4rt, bfrt, run_async(body(), timeout_s=10)


def tau_series_ns(s_ns: float, w: float) -> float:
    """-s / ln(1 - w) by its series s (1/w - 1/2 - w/12 - w^2/24 - 19 w^3/720):
    the hand computation, independent of math.log1p."""
    return s_ns * (1 / w - 0.5 - w / 12 - w**2 / 24 - 19 * w**3 / 720)


def test_a_red_policy_writes_its_averages_time_constant_over_bfrt(tmp_path: Path) -> None:
    """RED on port 3, w = 2^-9 at 1000 packets/s (s = 1 ms): red_avg[3] is a
    sample-mode filter with gain = decay = tau = 1 ms * (512 - 1/2 - 1/6144 - ...)
    = 511 499 837 ns (as a 32-bit float), no scale-down; nothing else written,
    after the policy (the P4Runtime writes came first)."""
    p4rt, bfrt, ctl = install(tmp_path, "red", config(RED_POLICY))
    assert isinstance(ctl, SwitchController), ctl
    tau = tau_series_ns(1e6, 2.0**-9)
    assert abs(tau - 511_499_837.08) < 0.01
    assert bfrt.specs == {(RED_AVG, 3): Spec("SAMPLE", float32(tau), float32(tau), 0)}
    [sub] = bfrt.subscriptions
    assert sub.device_id == 0 and [b.config[0].p4_name for b in bfrt.binds] == ["red"]
    [write] = bfrt.writes
    assert write.client_id == BFRT_CLIENT_ID and write.p4_name == "red"
    assert [u.type for u in write.updates] == [pb.Update.MODIFY]
    [policy] = p4rt.table_entries("port_policy")
    assert policy.match["port"] == 3 and policy.params["ewma_shift"] == 9
    assert p4rt.write_requests     # the policies went first: the install returned after both


def test_a_dcbt_policy_writes_its_three_synchronised_averages(tmp_path: Path) -> None:
    """D-CBT on port 3, w = 2^-4 at 10 000 packets/s (s = 100 us): red_avg,
    tagged_avg and untagged_avg at index 3, each tau = 100 us / ln(16/15)
    = 1 549 462.2 ns (100 us * (16 - 1/2 - 1/192 - ...))."""
    p4rt, bfrt, ctl = install(tmp_path, "dcbt", config(DCBT_POLICY))
    assert isinstance(ctl, SwitchController), ctl
    tau = tau_series_ns(1e5, 2.0**-4)
    assert abs(tau - 1e5 / math.log(16 / 15)) < 0.5 and abs(tau - 1_549_462.25) < 0.01
    spec = Spec("SAMPLE", float32(tau), float32(tau), 0)
    assert bfrt.specs == {(RED_AVG, 3): spec, (TAGGED_AVG, 3): spec, (UNTAGGED_AVG, 3): spec}
    assert {e.match["port"] for e in p4rt.table_entries("dcbt_tagged_threshold")} == {3}


def test_a_upta_policy_sets_every_used_slots_rate_filter_in_rate_mode(tmp_path: Path) -> None:
    """UPTA with 8 flow slots on port 3, K = 2^17 us: upta_rate at 3 * 512 + 0..7,
    rate mode, tau = 131 072 000 ns; the other slots are not touched."""
    _, bfrt, ctl = install(tmp_path, "upta", config(UPTA_POLICY))
    assert isinstance(ctl, SwitchController), ctl
    spec = Spec("RATE", 131_072_000.0, 131_072_000.0, 0)
    assert bfrt.specs == {(UPTA_RATE, 3 * 512 + slot): spec for slot in range(8)}


def test_without_a_bfrt_address_a_policy_with_averages_is_refused_before_any_write(
        tmp_path: Path) -> None:
    p4rt, bfrt, refusal = install(tmp_path, "red", config(RED_POLICY, bfrt_address=None))
    assert isinstance(refusal, TargetRefusal)
    text = str(refusal)
    assert "switches.s1.policies.3" in text and "red_avg" in text
    assert "Stratum's P4Runtime server cannot write them" in text
    assert "switches.s1.bfrt_address" in text and "docs/tofino.md" in text
    assert p4rt.write_requests == [] and bfrt.writes == [] and bfrt.subscriptions == []


def test_only_algorithms_with_averages_need_lpf_entries() -> None:
    """Drop-tail and MCDT keep no average: no Lpf entry, so no BfRt address is
    needed for them; v1model never needs one."""
    for policy_raw, expected in (({"algorithm": "DROP_TAIL"}, 0),
                                 ({"algorithm": "MCDT", "mcdt_period_ms": 100}, 0),
                                 (RED_POLICY, 1), (DCBT_POLICY, 3)):
        policy = parse_policy({**policy_raw, "queue_limit_pkts": 60})
        action = policy_action(policy, policy_epoch=1, flow_epoch_shift=17)
        assert len(TNA.lpf_specs(3, policy, action)) == expected, policy_raw
        assert V1MODEL.lpf_specs(3, policy, action) == []


def test_a_red_policy_without_bandwidth_pps_is_refused_on_tofino(tmp_path: Path) -> None:
    policy = {k: v for k, v in RED_POLICY.items() if k != "bandwidth_pps"}
    p4rt, bfrt, refusal = install(tmp_path, "red", config(policy))
    assert isinstance(refusal, TargetRefusal)
    assert "switches.s1.policies.3" in str(refusal) and "set bandwidth_pps" in str(refusal)
    assert p4rt.write_requests == [] and bfrt.writes == []


def test_a_bfrt_server_that_is_down_stops_install_before_any_write(tmp_path: Path) -> None:
    p4rt, bfrt, error = install(tmp_path, "red", config(RED_POLICY), bfrt_up=False)
    assert isinstance(error, BfrtConnectionError)
    assert "s1: BfRt at 127.0.0.1:" in str(error)
    assert p4rt.write_requests == [] and bfrt.writes == []


def test_an_index_beyond_the_lpf_table_is_refused_before_any_write(tmp_path: Path) -> None:
    """A build whose red_avg holds 2 entries (a bfrt.json edited for the test):
    RED on port 3 needs index 3, refused before the switch is written."""
    doc = json.loads(bfrt_fixture("red").read_text())
    [red_avg] = [t for t in doc["tables"] if t["name"] == RED_AVG]
    red_avg["size"] = 2
    small = tmp_path / "small.bfrt.json"
    small.write_text(json.dumps(doc))
    p4rt, bfrt, refusal = install(tmp_path, "red", config(RED_POLICY), bfrt_json=small)
    assert isinstance(refusal, TargetRefusal)
    assert f"{RED_AVG}: index 3 is beyond the table (size 2: 0..1)" in str(refusal)
    assert p4rt.write_requests == [] and bfrt.writes == []


def test_a_filter_the_build_lacks_is_refused_before_any_write(tmp_path: Path) -> None:
    """D-CBT's policy with the RED build's bfrt.json: no tagged_avg."""
    p4rt, bfrt, refusal = install(tmp_path, "dcbt", config(DCBT_POLICY),
                                  bfrt_json=bfrt_fixture("red"))
    assert isinstance(refusal, TargetRefusal)
    assert "no Lpf table 'tagged_avg'" in str(refusal)
    assert p4rt.write_requests == [] and bfrt.writes == []


def test_the_client_checks_every_write_against_the_schema_before_sending() -> None:
    info = BfrtInfo.from_file(bfrt_fixture("red"))
    good = LpfSpec("red_avg", 63, False, 1e6)
    info.check([good])
    for bad, why in ((LpfSpec("red_avg", C.NUM_PORTS, False, 1e6), "index 64 is beyond"),
                     (LpfSpec("red_avg", -1, False, 1e6), "index -1 is beyond"),
                     (LpfSpec("no_such_avg", 0, False, 1e6), "no Lpf table 'no_such_avg'"),
                     (LpfSpec("red_avg", 0, False, math.inf), "not a finite 32-bit float"),
                     (LpfSpec("red_avg", 0, False, 1e39), "not a finite 32-bit float"),
                     (LpfSpec("red_avg", 0, False, 1e6, out_scale_down=1 << 32), "uint32")):
        with pytest.raises(BfrtSchemaError, match=why):
            info.check([good, bad])

    async def body():
        server = FakeBfrtServer(bfrt_fixture("red"), "red")
        async with server.run():
            async with BfrtClient("s1", server.address, info, "red") as client:
                with pytest.raises(BfrtSchemaError):
                    await client.write_lpf([good, LpfSpec("red_avg", 64, False, 1e6)])
                await client.write_lpf([good])
                back = await client.read_lpf([("red_avg", 63), ("red_avg", 0)])
        return server, back

    server, back = run_async(body())
    assert len(server.writes) == 1 and list(server.specs) == [(RED_AVG, 63)]
    assert back == [LpfSpec("red_avg", 63, False, 1e6), LpfSpec("red_avg", 0, False, 0.0)]


def test_the_fake_bfrt_server_enforces_subscribe_before_write_and_the_schema() -> None:
    """What the fake refuses, sent past the client: a Write from a client that
    never subscribed, an index beyond the table, a float field given as bytes."""
    info = BfrtInfo.from_file(bfrt_fixture("red"))
    entry = info.table_entry(LpfSpec("red_avg", 1, False, 1e6))

    def request(e):
        return pb.WriteRequest(client_id=7, p4_name="red", updates=[
            pb.Update(type=pb.Update.MODIFY, entity=pb.Entity(table_entry=e))])

    beyond = pb.TableEntry()
    beyond.CopyFrom(entry)
    beyond.key.fields[0].exact.value = (64).to_bytes(4, "big")
    as_bytes = pb.TableEntry()
    as_bytes.CopyFrom(entry)
    as_bytes.data.fields[1].stream = b"\x00\x00\x00\x01"

    async def body():
        server = FakeBfrtServer(bfrt_fixture("red"), "red")
        codes = []
        done = asyncio.Event()

        async def subscribe():          # the stream stays open: the client's heartbeat
            yield pb.StreamMessageRequest(client_id=7, subscribe=pb.Subscribe(device_id=0))
            await done.wait()

        async with server.run():
            async with grpc.aio.insecure_channel(server.address) as channel:
                stub = pb_grpc.BfRuntimeStub(channel)
                for e in (entry, None, beyond, as_bytes):
                    if e is None:           # now subscribe client 7
                        stream = stub.StreamChannel(subscribe())
                        answer = await stream.read()
                        assert answer.subscribe.status.code == 0
                        continue
                    try:
                        await stub.Write(request(e))
                        codes.append(grpc.StatusCode.OK)
                    except grpc.aio.AioRpcError as err:
                        codes.append(err.code())
                await stub.Write(request(entry))
                done.set()
                stream.cancel()
        return server, codes

    server, codes = run_async(body())
    assert codes == [grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT,
                     grpc.StatusCode.INVALID_ARGUMENT]
    assert len(server.writes) == 1 and list(server.specs) == [(RED_AVG, 1)]


def test_bfrt_address_is_validated_as_host_port() -> None:
    cfg = config(RED_POLICY, bfrt_address="[::1]:50052")
    assert cfg.switches["s1"].bfrt_address == "[::1]:50052"
    assert config(RED_POLICY, bfrt_address=None).switches["s1"].bfrt_address is None
    with pytest.raises(ConfigError, match=r"switches\.s1\.bfrt_address: "):
        config(RED_POLICY, bfrt_address="switch-1")


def _cli_config(tmp_path: Path, p4runtime_addr: str, bfrt_address: str | None) -> Path:
    import yaml
    sw = {"p4runtime_addr": p4runtime_addr, "ports": {3: {"mac": "02:00:00:00:00:03"}},
          "policies": {3: RED_POLICY}}
    if bfrt_address is not None:
        sw["bfrt_address"] = bfrt_address
    path = tmp_path / "tofino.yaml"
    path.write_text(yaml.safe_dump({"switches": {"s1": sw}}))
    return path


def test_mmaqm_ctl_install_without_bfrt_address_exits_2_before_connecting(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No switch listens at the P4Runtime address: the refusal comes first."""
    from mmaqm import cli
    path = _cli_config(tmp_path, f"127.0.0.1:{closed_port()}", None)
    build = tna_build_dir(tmp_path, "red")
    assert cli.main(["--config", str(path), "--p4info", str(P4INFO["red"]),
                     "--device-config", str(build), "--timeout-s", "0.5", "install"]) == 2
    err = capsys.readouterr().err
    assert "Stratum's P4Runtime server cannot write them" in err and "bfrt_address" in err


def test_mmaqm_ctl_install_with_its_bfrt_server_down_exits_1_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from fake_p4rt import serve_in_thread
    from mmaqm import cli
    with serve_in_thread(FakeP4RuntimeServer(stratum_rules=True)) as threaded:
        path = _cli_config(tmp_path, threaded.server.address, f"127.0.0.1:{closed_port()}")
        build = tna_build_dir(tmp_path, "red")
        assert cli.main(["--config", str(path), "--p4info", str(P4INFO["red"]),
                         "--device-config", str(build), "--timeout-s", "1", "install"]) == 1
        assert threaded.server.write_requests == []
    assert "s1: BfRt at 127.0.0.1:" in capsys.readouterr().err


FULL_POLICIES = {
    "RED": RED_POLICY,
    "CBT_RED_ALL": {**RED_POLICY, "algorithm": "CBT_RED_ALL", "tagged_th_pkts": 10,
                    "untagged_th_pkts": 5},
    "CBT_RED_TCP_ONLY": {**RED_POLICY, "algorithm": "CBT_RED_TCP_ONLY", "tagged_th_pkts": 10,
                         "untagged_th_pkts": 5},
    "DCBT": DCBT_POLICY,
    "DCBT_CHIPS": {**DCBT_POLICY, "algorithm": "DCBT_CHIPS"},
    "FRED": {**RED_POLICY, "algorithm": "FRED"},
    "UPTA": {**UPTA_POLICY, "upta_flow_slots": 512},
}
# the build each algorithm runs on (CBT_RED_TCP_ONLY's has CBT_RED_ALL's filters)
FIXTURE_OF = {"CBT_RED_TCP_ONLY": "cbt_red_all"}


@pytest.mark.parametrize("algorithm", sorted(FULL_POLICIES))
def test_each_plugins_averages_are_its_builds_lpf_tables(algorithm: str) -> None:
    """The averages a plug-in declares (Algorithm.lpf_averages) are exactly the Lpf
    tables of its build's bfrt.json (the compiler's, cut to them), and its highest
    port's entries fit them: an average added to the P4 and not declared (left
    as the raw sample) or a wrong name or index fails here."""
    policy = parse_policy(FULL_POLICIES[algorithm])
    variant = FIXTURE_OF.get(algorithm, policy.plugin.p4_action)
    info = BfrtInfo.from_file(bfrt_fixture(variant))
    port = C.NUM_PORTS - 1
    specs = TNA.lpf_specs(port, policy, policy_action(policy, policy_epoch=1,
                                                      flow_epoch_shift=17))
    info.check(specs)
    assert {info.lpf_table(s.lpf).name for s in specs} == set(info.lpf_tables)
    assert {a.lpf for a in policy.plugin.lpf_averages} == {t.instance
                                                          for t in info.lpf_tables.values()}


def test_the_client_names_a_refused_subscription_or_binding() -> None:
    """A second client of this controller's id is refused its subscription; a
    program the server does not have is refused its binding: both are
    BfrtConnectionError naming the switch, the address and why."""
    info = BfrtInfo.from_file(bfrt_fixture("red"))

    async def body():
        server = FakeBfrtServer(bfrt_fixture("red"), "red")
        errors = []
        async with server.run():
            async with BfrtClient("s1", server.address, info, "red", connect_timeout_s=2):
                try:
                    await BfrtClient("s2", server.address, info, "red",
                                     connect_timeout_s=2).open()
                except BfrtConnectionError as exc:
                    errors.append(str(exc))
            try:
                await BfrtClient("s1", server.address, info, "blue", connect_timeout_s=2).open()
            except BfrtConnectionError as exc:
                errors.append(str(exc))
        return errors

    same_id, other_program = run_async(body())
    assert same_id.startswith("s2: BfRt at 127.0.0.1:") and "same client id" in same_id
    assert "binding program 'blue' failed: NOT_FOUND" in other_program


def enforce_after_install(tmp_path: Path, variant: str, cfg, tamper=None):
    """Install cfg's switch s1 (fake P4Runtime switch with Stratum's rules, fake
    BfRt server), let tamper(bfrt server) change what the switch holds, then run
    the controller's periodic check (enforce) twice; returns (BfRt server, the
    entries each enforce rewrote, the events)."""
    build = tna_build_dir(tmp_path, variant)
    bfrt = FakeBfrtServer(bfrt_fixture(variant), variant)
    p4rt = FakeP4RuntimeServer(stratum_rules=True)
    events: list[dict] = []

    async def body():
        async with p4rt.run(), bfrt.run():
            sw = cfg.switches["s1"]
            sw = type(sw)(**{**sw.__dict__, "bfrt_address": bfrt.address})
            async with SwitchDriver("s1", p4rt.address, p4info=P4INFO[variant],
                                    bmv2_json=build, connect_timeout_s=2,
                                    request_timeout_s=2) as d:
                ctl = SwitchController(cfg, sw, d, clock_ms=lambda: 0.0,
                                       event_sink=events.append)
                await ctl.install()
                if tamper is not None:
                    tamper(bfrt)
                bfrt_writes = []
                for _ in range(2):
                    reads, writes = len(bfrt.reads), len(bfrt.writes)
                    plan = await ctl.enforce()
                    assert not plan.writes              # P4Runtime: nothing differed
                    assert len(bfrt.reads) == reads + 1  # one BfRt Read per check
                    bfrt_writes.append(len(bfrt.writes) - writes)
                return ctl, bfrt_writes

    ctl, bfrt_writes = run_async(body(), timeout_s=15)
    return bfrt, ctl, bfrt_writes, events


def test_the_periodic_check_reads_back_the_lpf_entries_and_leaves_them_when_they_hold(
        tmp_path: Path) -> None:
    """D-CBT on port 3: its three Lpf entries are read back (one Read of the three
    keys) at each check; they hold what install wrote: no BfRt write beyond
    install's, no repair."""
    bfrt, ctl, bfrt_writes, events = enforce_after_install(tmp_path, "dcbt",
                                                           config(DCBT_POLICY))
    assert len(bfrt.writes) == 1 and bfrt_writes == [0, 0]     # install's only
    read = bfrt.reads[-1]
    assert read.p4_name == "dcbt" and len(read.entities) == 3
    assert ctl.repairs == 0 and not [e for e in events if e["event"] == "repaired"]


def test_the_periodic_check_rewrites_an_lpf_entry_changed_behind_its_back(
        tmp_path: Path) -> None:
    """RED on port 3; another client sets red_avg[3] to a 1 ms filter in rate
    mode: the next check rewrites that one entry (one MODIFY) with the configured
    tau, logs a `repaired` event naming the table, the index and what changed;
    the check after finds it held."""
    tau = float32(tau_series_ns(1e6, 2.0**-9))

    def tamper(server):
        server.specs[(RED_AVG, 3)] = Spec("RATE", 1e6, 1e6, 0)

    bfrt, ctl, bfrt_writes, events = enforce_after_install(tmp_path, "red",
                                                           config(RED_POLICY), tamper)
    assert bfrt_writes == [1, 0]
    assert bfrt.specs == {(RED_AVG, 3): Spec("SAMPLE", tau, tau, 0)}
    install_write, repair = bfrt.writes
    assert [u.type for u in repair.updates] == [pb.Update.MODIFY]
    assert ctl.repairs == 1
    [event] = [e for e in events if e["event"] == "repaired"]
    [change] = event["writes"]
    assert change["table"] == RED_AVG and change["match"] == {"index": 3}
    assert change["changed"]["rate_mode"] == (True, False)
    assert change["changed"]["time_constant_ns"][0] == 1e6


def test_the_periodic_check_takes_a_tau_within_the_hardwares_resolution_as_held() -> None:
    """A server may answer tau from the driver's encoding 2^e (1 + m / 2^9): within
    2^-9 of what was written is the same setting; beyond it, a change."""
    want = LpfSpec("red_avg", 3, False, 511_499_837.0)
    assert TNA.lpf_spec_holds(want, LpfSpec("red_avg", 3, False, 511_499_837.0 * (1 + 2**-10)))
    assert not TNA.lpf_spec_holds(want, LpfSpec("red_avg", 3, False, 511_499_837.0 * 1.01))
    assert not TNA.lpf_spec_holds(want, LpfSpec("red_avg", 3, True, 511_499_837.0))
    assert not TNA.lpf_spec_holds(want, LpfSpec("red_avg", 3, False, 511_499_837.0, 1))


def test_the_fake_bfrt_server_enforces_register_and_fixed_table_schemas() -> None:
    """Past the client: a register value of the wrong width, a fixed table's bool
    sent as bytes, an unknown fixed-table choice are refused; a good register
    write sets every pipe, and reads back one DataField per pipe; the fixed
    tables come from GetForwardingPipelineConfig's non_p4_config."""
    info = BfrtInfo.from_file(bfrt_fixture("red"))
    queue_pkts = "pipe.TnaIngress.aqm.occupancy.queue_pkts"

    async def body():
        server = FakeBfrtServer(bfrt_fixture("red"), "red")
        codes = []
        async with server.run():
            async with BfrtClient("s1", server.address, info, "red") as client:
                await client.load_fixed_tables()
                good = client.info.entry(TableWrite(queue_pkts, {"$REGISTER_INDEX": 2},
                                                    {queue_pkts[5:] + ".f1": 7}))
                narrow = pb.TableEntry()
                narrow.CopyFrom(good)
                narrow.data.fields[0].stream = b"\x07"
                cfg = client.info.entry(TableWrite("tf1.tm.port.sched_cfg", {"dev_port": 2},
                                                   {"max_rate_enable": True}))
                as_bytes = pb.TableEntry()
                as_bytes.CopyFrom(cfg)
                as_bytes.data.fields[0].stream = b"\x01"
                shaping = client.info.entry(TableWrite(
                    "tf1.tm.port.sched_shaping", {"dev_port": 2}, {"unit": "PPS"}))
                shaping.data.fields[0].str_val = "KPPS"
                for e in (narrow, as_bytes, shaping, good):
                    try:
                        await client._write_entries([e])
                        codes.append(grpc.StatusCode.OK)
                    except BfrtRequestError as exc:
                        codes.append(str(exc).split("refused: ", 1)[1].split(":")[0])
                held = await client.read_register(queue_pkts, 2)
        return server, codes, held

    server, codes, held = run_async(body())
    assert codes == ["INVALID_ARGUMENT"] * 3 + [grpc.StatusCode.OK]
    assert server.registers == {(queue_pkts, 2): {queue_pkts[5:] + ".f1": [7, 7, 7, 7]}}
    assert held == {"f1": [7, 7, 7, 7]} and server.entries == {}
