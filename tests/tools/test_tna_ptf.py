"""The PTF suite's Tofino side without a Tofino (docs/tofino-model.md): the BF
Runtime writes and reads TnaTarget makes, the bf_switchd conf and model port map,
run_ptf.py --target tna's ptf command and test params (parsed as ptf parses
them), and test_tna's skips on BMv2 and on a build a test does not fit."""

from __future__ import annotations

import argparse
import ipaddress
import json
import re
import sys
import unittest
import zlib
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


TNA_TESTS = {"TnaReportRoundTripTest", "TnaCancelPathTest", "TnaCountersAtV1modelIndexesTest",
             "TnaFlowReportDigestTest", "TnaIpv4ChecksumTest", "TnaBfdChecksumTest",
             "TnaIpv6RoutingTest", "TnaIpv6HopLimitTest", "TnaIpv6ExtensionLimitTest",
             "TnaIpv6TaggedTest", "TnaIpv6FlowReportDigestTest", "TnaIpv6NotIpv4Test"}


def ptf_collected(module) -> dict[str, type]:
    """The tests ptf collects from a module (ptf's load_test_modules: every
    TestCase class in its namespace with a runTest)."""
    return {k: v for k, v in vars(module).items()
            if type(v) == type and issubclass(v, unittest.TestCase) and hasattr(v, "runTest")}


def test_on_bmv2_every_tna_test_skips_before_touching_a_switch() -> None:
    test_tna = tna_test_module()
    collected = ptf_collected(test_tna)
    # only test_tna's own (it shares mmaqm_base's IPv6 packets with test_ipv6)
    assert set(collected) == TNA_TESTS
    tests = list(collected.values())
    assert all(issubclass(c, test_tna.TnaTest) for c in tests)
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


# ---- the IPv6 tests (docs/ipv6.md, "On Tofino"), as far as they go without a model
TNA_MAIN_P4 = REPO / "p4src" / "tna" / "main.p4"


def p4info_aliases(fixture: str, kind: str) -> set[str]:
    text = (FIXTURES / fixture).read_text()
    return {b.split('alias: "', 1)[1].split('"', 1)[0] for b in text.split(f"\n{kind} {{")[1:]}


def test_the_ipv6_tests_run_on_the_ipv6_builds_and_the_not_ipv4_test_on_the_others() -> None:
    test_tna = tna_test_module()
    # the builds without IPv6 are the ones main.p4 leaves MMAQM_HAS_IPV6 out of
    source = TNA_MAIN_P4.read_text()
    guard = source[:source.index("#define MMAQM_HAS_IPV6")].rsplit("#if ", 1)[1].split("\n")[0]
    assert sorted(n.lower() for n in re.findall(r"!defined\(MMAQM_TNA_(\w+)\)", guard)) \
        == sorted(test_tna.IPV4_ONLY_VARIANTS) == ["fred", "upta"]
    assert test_tna.IPV6_VARIANTS == ("drop_tail", "red")
    # ... and the compiler's P4Infos say so: no ipv6_lpm in FRED's and UPTA's
    ipv4_only = {f: p4info_aliases(f, "tables") for f in ("tna-fred.p4info.txtpb",
                                                          "tna-upta.p4info.txtpb")}
    dual = {f: p4info_aliases(f, "tables") for f in ("tna-red.p4info.txtpb",
                                                     "tna-dcbt.p4info.txtpb")}
    assert all("ipv6_lpm" not in a and "ipv4_lpm" in a for a in ipv4_only.values())
    assert all("ipv6_lpm" in a for a in dual.values())
    # the setup writes the IPv6 routes only where the program has ipv6_lpm
    v4 = [r for r in test_tna.SWITCH.routes if r.prefix.version == 4]
    assert len(v4) == 4 and len(test_tna.SWITCH.routes) == 8
    for aliases in ipv4_only.values():
        assert test_tna.baseline_routes(aliases) == v4
    for aliases in dual.values():
        assert test_tna.baseline_routes(aliases) == list(test_tna.SWITCH.routes)
    # each test names the builds it runs on
    for name in ("TnaIpv6RoutingTest", "TnaIpv6HopLimitTest", "TnaIpv6ExtensionLimitTest",
                 "TnaIpv6TaggedTest"):
        assert run_setup(getattr(test_tna, name), {"target": "tna", "tna_variant": "fred"}) \
            == "needs the drop_tail or red build (tna_variant=...); this run loads fred", name
    assert run_setup(test_tna.TnaIpv6FlowReportDigestTest,
                     {"target": "tna", "tna_variant": "upta"}).startswith(
                         "needs the drop_tail build")
    assert run_setup(test_tna.TnaIpv6NotIpv4Test, {"target": "tna", "tna_variant": "drop_tail"}) \
        == "needs the fred or upta build (tna_variant=...); this run loads drop_tail"
    # the IPv4 checksum test keeps its three builds (FRED's baseline is new)
    assert test_tna.TnaIpv4ChecksumTest.VARIANTS == ("drop_tail", "red", "upta")


def test_the_fred_builds_baseline_policy_fits_its_p4info() -> None:
    import finsy as fy
    from mmaqm.config import parse_policy
    from mmaqm.encoding import policy_action
    from mmaqm.p4rt.codec import TABLE_POLICY, check_action
    test_tna = tna_test_module()
    action = policy_action(parse_policy(test_tna.BASELINES["fred"]), policy_epoch=1,
                           flow_epoch_shift=0)
    assert action.name == "fred"
    check_action(fy.P4Schema(FIXTURES / "tna-fred.p4info.txtpb"), TABLE_POLICY, action)
    tna.TARGET.check_action(action)


IPV6_EXT = (0, 43, 44, 60)      # hop-by-hop, routing, fragment, destination options


def ipv6_chain(frame: bytes) -> tuple[list[int], list[bytes]]:
    """(the next-header chain from the fixed header, each extension header's bytes)."""
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    ip = Ether(frame)[IPv6]
    chain, headers, layer = [ip.nh], [], ip.payload
    while chain[-1] in IPV6_EXT:
        chain.append(layer.nh)
        size = 8 if chain[-2] == 44 else 8 + 8 * layer.len
        headers.append(bytes(layer)[:size])
        layer = layer.payload
    return chain, headers


def classify(protocol: int, dscp: int) -> str:
    """The class the controller's classifier entries give (ternary, highest
    priority first; UNTAGGED the default)."""
    from mmaqm import p4constants as C
    from mmaqm import reconcile as R
    test_tna = tna_test_module()
    keys = {"ip_proto": protocol, "dscp": dscp}
    hits = [e for e in R.classifier_entries(test_tna.CONFIG.classifier.tagged_dscp)
            if all(keys[k] & mask == value for k, (value, mask) in dict(e.match).items())]
    if not hits:
        return "UNTAGGED"
    best = max(hits, key=lambda e: e.priority)
    return C.CLASS_NAMES[dict(best.params)["class_id"]]


def check_ipv6_frame(frame: bytes, *, hlim: int, tc: int, chain: list[int]) -> None:
    """The frame is an IPv6 packet from the host behind port 1 to 2001:db8:2::2,
    with this hop limit, traffic class and next-header chain, its payload length
    the rest of the frame."""
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    pkt = Ether(frame)
    assert (pkt.src, pkt.dst, pkt.type) == ("02:00:00:00:01:01", "02:00:00:00:00:01", 0x86DD)
    ip = pkt[IPv6]
    assert (ip.version, ip.src, ip.dst) == (6, "2001:db8:1::2", "2001:db8:2::2")
    assert (ip.hlim, ip.tc, ip.plen) == (hlim, tc, len(frame) - 14 - 40)
    assert ipv6_chain(frame)[0] == chain


def routed_port(dst: str) -> int:
    test_tna = tna_test_module()
    [route] = [r for r in test_tna.SWITCH.routes
               if r.prefix.version == 6 and ipaddress.IPv6Address(dst) in r.prefix]
    return route.port


def test_the_ipv6_routing_and_tagged_tests_send_what_their_docstrings_say() -> None:
    from mmaqm import p4constants as C
    test_tna = tna_test_module()
    assert routed_port("2001:db8:2::2") == 2 and routed_port("2001:db8:1::2") == 1
    assert [C.class_index(2, C.CLASSES[c]) for c in ("TCP", "TAGGED", "UNTAGGED")] == [8, 9, 10]
    cases = [(test_tna.TnaIpv6RoutingTest, [(64, 0, [6]), (2, 0, [17]), (64, 0, [0, 60, 6])]),
             (test_tna.TnaIpv6TaggedTest, [(64, 0xB8, [17]), (64, 0x88, [43, 17]),
                                            (64, 0xB8, [58])])]
    max_rest_bytes = int(re.search(r"#define IPV6_EXT_MAX_REST_BITS (\d+)",
                                   TNA_MAIN_P4.read_text()).group(1)) // 8
    for cls, want in cases:
        frames = cls.frames()
        assert len(frames) == len(want)
        for (pkt, klass), (hlim, tc, chain) in zip(frames, want):
            frame = bytes(pkt)
            check_ipv6_frame(frame, hlim=hlim, tc=tc, chain=chain)
            # the class the docstring names is the classifier's for (protocol, DSCP)
            assert classify(chain[-1], tc >> 2) == klass, (cls.__name__, chain, tc)
            headers = ipv6_chain(frame)[1]
            assert all(len(h) - 8 <= max_rest_bytes for h in headers)
            # by hand: the MACs and the hop limit change, nothing else
            routed = test_tna.routed6_bytes(frame)
            assert [i for i in range(len(frame)) if routed[i] != frame[i]] == \
                [i for i in range(12) if routed[i] != frame[i]] + [21]
            assert routed[:12] == bytes.fromhex("020000000201" "020000000002")
            assert routed[21] == hlim - 1
            assert routed == bytes(test_tna.forwarded6(pkt))      # test_ipv6's expectation
    # the depth-2 case: two 8-byte headers; the tagged test's routing header: 24
    # bytes (Hdr Ext Len 2), the longest rest (16 bytes) the TNA parser takes
    routing_frames = test_tna.TnaIpv6RoutingTest.frames()
    assert [len(h) for h in ipv6_chain(bytes(routing_frames[2][0]))[1]] == [8, 8]
    [rh] = ipv6_chain(bytes(test_tna.TnaIpv6TaggedTest.frames()[1][0]))[1]
    assert (len(rh), rh[1], len(rh) - 8) == (24, 2, max_rest_bytes)


def test_the_ipv6_discard_tests_send_what_their_docstrings_say() -> None:
    from scapy.layers.inet6 import IPv6ExtHdrFragment
    from scapy.layers.l2 import Ether
    from mmaqm import p4constants as C
    test_tna = tna_test_module()
    reasons = C.DISCARD_REASONS
    assert (reasons["TTL_EXPIRED"], reasons["IPV6_EXT_LIMIT"], reasons["NOT_IPV4"]) == (4, 7, 0)
    assert [C.discard_index(1, reasons[r]) for r in ("TTL_EXPIRED", "IPV6_EXT_LIMIT",
                                                     "NOT_IPV4")] == [12, 15, 8]
    hop = [bytes(f) for f in test_tna.TnaIpv6HopLimitTest.frames()]
    for frame, hlim in zip(hop, (1, 0), strict=True):
        check_ipv6_frame(frame, hlim=hlim, tc=0, chain=[17])
    ext = [bytes(f) for f in test_tna.TnaIpv6ExtensionLimitTest.frames()]
    for frame, chain in zip(ext, ([0, 60, 43, 6], [0, 43, 44, 6]), strict=True):
        check_ipv6_frame(frame, hlim=64, tc=0, chain=chain)
        headers = ipv6_chain(frame)[1]
        assert [len(h) for h in headers] == [8, 8, 8]       # Hdr Ext Len 0 each
        assert len(headers) > 2                              # beyond the depth of 2
    frag = Ether(ext[1])[IPv6ExtHdrFragment]
    assert (frag.offset, frag.m, frag.id) == (0, 1, 7)
    not_ipv4 = [bytes(f) for f in test_tna.TnaIpv6NotIpv4Test.frames()]
    for frame, chain in zip(not_ipv4, ([17], [6]), strict=True):
        check_ipv6_frame(frame, hlim=64, tc=0, chain=chain)


def test_the_ipv6_digest_test_expects_the_tna_signature_of_its_flows() -> None:
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    from mmaqm import p4constants as C
    from mmaqm.algorithms.fred import flow_hash
    test_tna = tna_test_module()
    cls = test_tna.TnaIpv6FlowReportDigestTest
    keys = cls.flow_keys()
    src, dst = ipaddress.IPv6Address("2001:db8:1::2"), ipaddress.IPv6Address("2001:db8:2::2")
    assert keys == {(src, dst, 6, 1000, 2000): "TCP", (src, dst, 17, 3000, 2000): "TAGGED"}
    for pkt, (key, klass) in zip(cls.frames(), keys.items(), strict=True):
        frame = bytes(pkt)
        ip = Ether(frame)[IPv6]
        l4 = ip.payload
        assert (ipaddress.IPv6Address(ip.src), ipaddress.IPv6Address(ip.dst), ip.nh,
                l4.sport, l4.dport) == key
        check_ipv6_frame(frame, hlim=64, tc=0xB8 if klass == "TAGGED" else 0, chain=[key[2]])
        assert classify(key[2], ip.tc >> 2) == klass
    # the signature by hand: 37 bytes, full addresses
    tcp = (src, dst, 6, 1000, 2000)
    by_hand = bytes.fromhex("20010db8000100000000000000000002" "20010db8000200000000000000000002"
                            "06" "03e8" "07d0")
    assert len(by_hand) == 37
    assert test_tna.tna_flow_signature6(*tcp) == zlib.crc32(by_hand)
    sigs = {key: test_tna.tna_flow_signature6(*key) for key in keys}
    assert all(sig != flow_hash(*key) for key, sig in sigs.items())    # not v1model's fold
    slots = {sig & (C.CONSTANTS["FLOW_SLOTS"] - 1) for sig in sigs.values()}
    assert len(slots) == 2 and C.CONSTANTS["FLOW_SLOTS"] == 1 << 16
