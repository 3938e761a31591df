"""The PTF suite's Tofino side without a Tofino (docs/tofino-model.md): the BF
Runtime writes and reads TnaTarget makes, the bf_switchd conf and model port map,
run_ptf.py --target tna's ptf command and test params (parsed as ptf parses
them), and test_tna's skips on BMv2 and on a build a test does not fit."""

from __future__ import annotations

import argparse
import json
import sys
import unittest
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "ptf-tests"))
sys.path.insert(0, str(REPO / "ptf-tests" / "tests"))
sys.path.insert(0, str(REPO / "tests" / "controller"))
import mmaqm_tofino as tofino  # noqa: E402
import run_ptf  # noqa: E402
import tofino_model_files  # noqa: E402
from fake_bfrt import FakeBfrtServer, bfrt_fixture, tna_build_dir  # noqa: E402
from fake_p4rt import serve_in_thread  # noqa: E402
from mmaqm.p4rt.bfrt import BfrtSchemaError, TableWrite  # noqa: E402
from mmaqm.targets import tna  # noqa: E402

FIXTURES = REPO / "tests" / "controller" / "fixtures"


def test_a_port_rate_is_the_port_shaper_in_packets_with_a_one_packet_burst() -> None:
    assert tofino.port_rate_writes(2, 4) == [
        TableWrite("tf1.tm.port.sched_shaping", {"dev_port": 2},
                   {"unit": "PPS", "provisioning": "LOWER", "max_rate": 4,
                    "max_burst_size": 1}),
        TableWrite("tf1.tm.port.sched_cfg", {"dev_port": 2}, {"max_rate_enable": True})]
    assert tofino.port_rate_writes(3, 0) == [   # 0: unlimited, as BMv2's set_queue_rate
        TableWrite("tf1.tm.port.sched_cfg", {"dev_port": 3}, {"max_rate_enable": False})]
    for port, rate in ((-1, 4), (512, 4), (2, -1)):
        with pytest.raises(ValueError):
            tofino.port_rate_writes(port, rate)


def test_a_register_read_gives_pipe_0s_value_of_each_field() -> None:
    name = "TnaIngress.aqm.flow_report.flow_slots"
    data = {"signature": [7, 8, 9, 10], "epoch": [3, 0, 0, 0]}
    assert tofino.pipe_fields(data, name) == {"signature": 7, "epoch": 3}
    assert tofino.pipe_fields(data, name, pipe=1) == {"signature": 8, "epoch": 0}
    with pytest.raises(ValueError, match="one value per pipe"):
        tofino.pipe_fields({"epoch": 3}, name)
    with pytest.raises(ValueError, match="no field"):
        tofino.pipe_fields({}, name)


QUEUE_PKTS = "pipe." + tofino.OCCUPANCY_REGISTER_PREFIX + "queue_pkts"


def test_the_harness_shapes_ports_and_reads_registers_with_the_controllers_bfrt_client(
        tmp_path: Path) -> None:
    """TnaTarget's BF Runtime session (mmaqm_tofino.BfRtSession: the controller's
    mmaqm.p4rt.bfrt client, blocking) against the fake BfRt server, over real
    gRPC: it subscribes and binds as the suite's client, learns the traffic
    manager's tables from the server, writes the port shapers in one Write, and
    reads a register's pipe-0 value (the server answers one per pipe) from the
    device; a write the schema refuses is not sent."""
    build = tna_build_dir(tmp_path, "red")
    server = FakeBfrtServer(bfrt_fixture("red"), tofino.program_name("red"))
    with serve_in_thread(server) as threaded:
        session = tofino.BfRtSession(server.address, build, tofino.program_name("red"))
        try:
            session.apply(tofino.port_rate_writes(2, 4) + tofino.port_rate_writes(3, 0))
            threaded.call(server.registers.__setitem__, (QUEUE_PKTS, 2),
                          {QUEUE_PKTS[len("pipe."):] + ".f1": [3 << 16, 5 << 16, 0, 0]})
            queue = session.read_register(tofino.OCCUPANCY_REGISTER_PREFIX + "queue_pkts", 2)
            slot = session.read_register(tofino.FLOW_SLOTS_REGISTER, 5)   # never written
            with pytest.raises(BfrtSchemaError, match="'KPPS' is not one of"):
                session.apply([TableWrite(tofino.TM_PORT_SHAPING, {"dev_port": 2},
                                          {"unit": "KPPS"})])
            with pytest.raises(BfrtSchemaError, match="index 64 is beyond the table"):
                session.read_register(tofino.OCCUPANCY_REGISTER_PREFIX + "queue_pkts", 64)
        finally:
            session.close()
    assert [s.device_id for s in server.subscriptions] == [tofino.DEVICE_ID]
    assert [b.config[0].p4_name for b in server.binds] == ["mmaqm_red"]
    [write] = server.writes
    assert write.client_id == tofino.BFRT_CLIENT_ID and len(write.updates) == 3
    assert server.entries == {
        ("tf1.tm.port.sched_shaping", (2,)): {"unit": "PPS", "provisioning": "LOWER",
                                              "max_rate": 4, "max_burst_size": 1},
        ("tf1.tm.port.sched_cfg", (2,)): {"max_rate_enable": True},
        ("tf1.tm.port.sched_cfg", (3,)): {"max_rate_enable": False}}
    assert queue == {"f1": 3 << 16}
    assert slot == {"signature": 0, "epoch": 0}
    assert all(e.table_entry.table_flags.from_hw for r in server.reads for e in r.entities)


def p4info_names(fixture: str, kind: str) -> set[str]:
    text = (FIXTURES / fixture).read_text()
    blocks = text.split(f"\n{kind} {{")[1:]
    return {b.split('name: "', 1)[1].split('"', 1)[0] for b in blocks}


@pytest.mark.parametrize("fixture", ["tna-red.p4info.txtpb", "tna-dcbt.p4info.txtpb"])
def test_the_registers_read_over_bf_runtime_are_the_compilers_names(fixture: str) -> None:
    registers = p4info_names(fixture, "registers")
    assert tofino.FLOW_SLOTS_REGISTER in registers
    occupancy = {tofino.OCCUPANCY_REGISTER_PREFIX + r for r in tna.TARGET.occupancy_registers}
    assert {"TnaIngress.aqm.occupancy.queue_pkts",
            "TnaIngress.aqm.occupancy.tcp_pkts"} <= registers & occupancy


def test_the_model_port_map_and_the_ptf_interfaces_are_the_same_veth_pairs() -> None:
    pairs = tofino.ports_json()["PortToVeth"]
    assert [p["device_port"] for p in pairs] == list(tofino.PTF_PORTS) == [1, 2, 3, 4]
    for p in pairs:
        assert f"veth{p['veth1']}" == tofino.model_veth(p["device_port"])
        assert f"veth{p['veth2']}" == tofino.ptf_veth(p["device_port"])
    # every port under AQM in pipe 0 (targets.tna.check_tna_ports)
    tna.check_tna_ports({p: "ptf" for p in tofino.PTF_PORTS})


def test_the_conf_loads_the_builds_files_by_absolute_path(tmp_path: Path) -> None:
    build = tofino.build_dir(tmp_path, "red")
    (build / "pipe").mkdir(parents=True)
    for f in ("bfrt.json", "pipe/context.json", "pipe/tofino.bin"):
        (build / f).write_text("{}")
    conf, ports, device_config = tofino_model_files.write_files(tmp_path, "red")
    assert conf == build / "mmaqm_red.conf"
    assert device_config.read_bytes() == tna.pi_device_config(build, "mmaqm_red")
    raw = json.loads(conf.read_text())
    [device] = raw["p4_devices"]
    [program] = device["p4_programs"]
    [pipeline] = program["p4_pipelines"]
    assert device["device-id"] == 0 and program["program-name"] == "mmaqm_red"
    assert program["bfrt-config"] == str(build.resolve() / "bfrt.json")
    assert pipeline == {"p4_pipeline_name": tna.TNA_PIPE_NAME,
                        "context": str(build.resolve() / "pipe" / "context.json"),
                        "config": str(build.resolve() / "pipe" / "tofino.bin"),
                        "pipe_scope": [0, 1, 2, 3], "path": str(build.resolve())}
    assert json.loads(ports.read_text()) == tofino.ports_json()
    (build / "pipe" / "tofino.bin").unlink()
    with pytest.raises(FileNotFoundError, match="make build-tna TNA_VARIANTS=RED"):
        tofino_model_files.write_files(tmp_path, "red")
    assert tofino_model_files.main(["upta"]) == 2     # no build of it here


def ptf_params(text: str) -> dict:
    """--test-params as ptf parses them (ptf's test_params_parse)."""
    namespace: dict = {}
    exec("class _TestParams:\n    " + text, namespace)
    return {k: v for k, v in vars(namespace["_TestParams"]).items() if k[:2] != "__"}


def test_run_ptf_target_tna_runs_test_tna_on_the_models_veths_with_its_params() -> None:
    args = run_ptf.make_parser().parse_args(["--target", "tna", "--tna-variant", "RED",
                                             "--xunit-dir", "/tmp/x"])
    argv = run_ptf.tna_ptf_argv(args, "ptf")
    assert argv[-1:] == ["test_tna"]
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "-i"] == [
        "1@veth3", "2@veth5", "3@veth7", "4@veth9"]
    params = ptf_params(argv[argv.index("--test-params") + 1])
    assert params == {"target": "tna", "tna_variant": "red", "grpc_addr": "127.0.0.1:9559",
                      "device_id": 0, "bfrt_addr": "127.0.0.1:50052",
                      "p4rt_server": "bf_switchd", "repo": str(REPO)}
    assert "--xunit" in argv
    one = run_ptf.make_parser().parse_args(["--target", "tna", "test_tna.TnaCancelPathTest"])
    assert run_ptf.tna_ptf_argv(one, "ptf")[-1:] == ["test_tna.TnaCancelPathTest"]


def test_run_ptf_refuses_a_missing_build_a_profile_or_tna_flags_on_bmv2(capsys,
                                                                        monkeypatch) -> None:
    monkeypatch.setattr(run_ptf, "REPO", Path("/nonexistent"))
    args = argparse.Namespace(tna_variant="red")
    assert run_ptf.run_tna(args) == 2
    assert "make build-tna TNA_VARIANTS=RED" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["run_ptf.py", "--target", "tna", "--profile", "RED"])
    assert run_ptf.main() == 2
    assert "--profile is BMv2's" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["run_ptf.py", "--grpc-addr", "127.0.0.1:9560"])
    assert run_ptf.main() == 2          # a TNA flag on a BMv2 run: refused, nothing started
    assert "--target tna's" in capsys.readouterr().err


def tna_test_module():
    pytest.importorskip("ptf")
    import test_tna
    return test_tna


def run_setup(cls, params: dict) -> str:
    import ptf.testutils as tu
    saved = tu.TEST_PARAMS
    tu.TEST_PARAMS = params
    try:
        with pytest.raises(unittest.SkipTest) as skipped:
            cls().setUp()
    finally:
        tu.TEST_PARAMS = saved
    return str(skipped.value)


def test_on_bmv2_every_tna_test_skips_before_touching_a_switch() -> None:
    test_tna = tna_test_module()
    tests = [c for c in vars(test_tna).values()
             if isinstance(c, type) and issubclass(c, test_tna.TnaTest) and "runTest" in vars(c)]
    assert len(tests) == 6
    for cls in tests:
        # no grpc_addr, no switch: a test that went further would fail, not skip
        assert "docs/tofino-model.md" in run_setup(cls, {"target": "bmv2"}), cls
        assert "docs/tofino-model.md" in run_setup(cls, {}), cls
        assert set(cls.VARIANTS) <= set(test_tna.BASELINES), cls


def test_on_a_build_a_test_does_not_fit_it_skips_naming_the_build_it_needs() -> None:
    test_tna = tna_test_module()
    reason = run_setup(test_tna.TnaCancelPathTest, {"target": "tna", "tna_variant": "dcbt"})
    assert reason == "needs the red build (tna_variant=...); this run loads dcbt"
    reason = run_setup(test_tna.TnaBfdChecksumTest, {"target": "tna", "tna_variant": "red"})
    assert "needs the upta build" in reason


def test_tna_target_pipeline_is_pis_device_data_beside_the_build(tmp_path, monkeypatch) -> None:
    pytest.importorskip("ptf")
    import mmaqm_base
    build = tmp_path / "red"                         # the compiler's files, stand-ins
    (build / "pipe").mkdir(parents=True)
    (build / "bfrt.json").write_text('{"tables": []}')
    (build / "pipe" / "context.json").write_text('{"program_name": "main"}')
    (build / "pipe" / "tofino.bin").write_bytes(bytes(range(256)))
    monkeypatch.setattr(tofino, "build_dir", lambda repo, variant: tmp_path / variant)
    target = mmaqm_base.TnaTarget({"tna_variant": "red", "device_id": 0})
    files = target.pipeline()
    assert files["p4info"] == build / "p4info.txtpb"
    assert files["bmv2_json"].read_bytes() == tna.pi_device_config(build, "mmaqm_red")
    stratum = mmaqm_base.TnaTarget({"tna_variant": "red", "p4rt_server": "stratum"})
    assert stratum.pipeline()["bmv2_json"] == build
    with pytest.raises(ValueError, match="p4rt_server"):
        mmaqm_base.TnaTarget({"p4rt_server": "pi"})
    with pytest.raises(NotImplementedError, match="tf1.tm.queue.buffer"):
        target.set_queue_depth(2, 64)
    (build / "pipe" / "tofino.bin").unlink()
    with pytest.raises(FileNotFoundError, match="make build-tna TNA_VARIANTS=RED"):
        target.pipeline()
