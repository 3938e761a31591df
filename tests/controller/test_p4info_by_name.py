"""The driver finds everything in the P4Info by name, never by id or position
(one controller, one YAML, BMv2 or Tofino). Two P4Infos stand in for
the other target's: the golden one with every id renumbered and every list
reversed, and a TNA-shaped one (pkg_info.arch "tna", one algorithm in
port_policy, the digest named after its Digest<flow_digest_t> instance, as
p4src/tna/main.p4 names it)."""

from __future__ import annotations

import asyncio
import ipaddress
from pathlib import Path

import pytest
from google.protobuf import text_format

from fake_bfrt import tofino_bfrt
from fake_p4rt import FakeP4RuntimeServer, WrittenEntry, ipv4_int, load_p4info, run_async
from finsy.proto import p4r
from mmaqm.config import parse_config
from mmaqm.controller import SwitchController
from mmaqm.driver import CounterValue, FlowReport, SwitchDriver
from mmaqm import reconcile as R
from mmaqm.targets import tna as T
from mmaqm.encoding import PolicyAction

RED = PolicyAction("red", {"queue_limit_pkts": 60, "flow_epoch_shift": 17,
                           "policy_epoch": 4242, "ewma_shift": 9, "min_th_scaled": 5 << 16,
                           "max_th_scaled": 15 << 16, "red_slope_q24": 167772,
                           "idle_decay_q32": 0, "gentle": 0, "max_p_q16": 0,
                           "gentle_slope_q24": 0, "ecn": 0, "harddrop": 0, "wait": 0})
DCBT = PolicyAction("dcbt", {**RED.params, "tagged_share_q16": 16384,
                             "untagged_th_scaled": 3 << 16, "tag_guard_interval_us": 0})
FLOW = {"egress_port": 2, "class_id": 1, "src_addr": ipv4_int("10.0.1.10"),
        "dst_addr": ipv4_int("10.0.2.10"), "protocol": 17, "src_port": 5004, "dst_port": 5006,
        "ingress_ts_us": 1000}
REFERENCE_FIELDS = ("const_default_action_id", "implementation_id", "direct_table_id")
REFERENCE_LISTS = ("direct_resource_ids", "table_ids")


def renumbered(p4info_path: Path):
    """The P4Info with new object ids (same type prefix), match-field and
    parameter ids reversed, and every repeated list in reverse order."""
    info = load_p4info(p4info_path)
    objects = [obj for kind in ("tables", "actions", "counters", "direct_counters", "meters",
                                "registers", "digests", "action_profiles")
               for obj in getattr(info, kind)]
    new_id = {obj.preamble.id: (obj.preamble.id & 0xFF000000)
              | ((obj.preamble.id * 7919 + 12345) & 0xFFFFFF) for obj in objects}
    assert len(set(new_id.values())) == len(new_id)

    def remap(msg) -> None:
        for field, value in msg.ListFields():
            if field.message_type is not None:
                if field.message_type.GetOptions().map_entry:
                    subs = [v for v in value.values() if hasattr(v, "ListFields")]
                else:
                    subs = [value] if hasattr(value, "ListFields") else list(value)
                for sub in subs:
                    remap(sub)
            elif field.name == "id" and value in new_id:
                setattr(msg, field.name, new_id[value])
            elif field.name in REFERENCE_FIELDS and value in new_id:
                setattr(msg, field.name, new_id[value])
            elif field.name in REFERENCE_LISTS:
                value[:] = [new_id.get(v, v) for v in value]

    remap(info)
    for table in info.tables:
        n = len(table.match_fields)
        for mf in table.match_fields:
            mf.id = n + 1 - mf.id
        reversed_fields = list(reversed(table.match_fields))
        del table.match_fields[:]
        table.match_fields.extend(reversed_fields)
    for action in info.actions:
        n = len(action.params)
        for param in action.params:
            param.id = n + 1 - param.id
        reversed_params = list(reversed(action.params))
        del action.params[:]
        action.params.extend(reversed_params)
    for kind in ("tables", "actions", "counters", "digests"):
        items = list(reversed(getattr(info, kind)))
        del getattr(info, kind)[:]
        getattr(info, kind).extend(items)
    return info


def tna_shaped(p4info_path: Path):
    """A P4Info shaped like a TNA build of RED: arch tna, port_policy with red
    only, the digest named TnaIngressDeparser.flow_digest (type flow_digest_t)."""
    info = load_p4info(p4info_path)
    info.pkg_info.arch = "tna"
    red_id = next(a.preamble.id for a in info.actions if a.preamble.alias == "red")
    policy = next(t for t in info.tables if t.preamble.alias == "port_policy")
    kept = [ref for ref in policy.action_refs
            if ref.id == red_id or ref.scope == ref.DEFAULT_ONLY]
    del policy.action_refs[:]
    policy.action_refs.extend(kept)
    digest = info.digests[0]
    digest.preamble.name = "TnaIngressDeparser.flow_digest"
    digest.preamble.alias = "flow_digest"
    return info


def write(tmp_path: Path, info, name: str) -> Path:
    path = tmp_path / name
    path.write_text(text_format.MessageToString(info))
    return path


def exercise(p4info: Path, device_config: Path, switch_drop_index: int = 63):
    """Policy write and read-back, classifier, counters and a flow report.
    switch_drop_index: where the switch keeps queue_drops' v1model index 63."""
    async def body():
        server = FakeP4RuntimeServer()
        async with server.run():
            async with SwitchDriver("s1", server.address, p4info=p4info,
                                    bmv2_json=device_config) as d:
                await d.write_port_policy(2, RED)
                read_back = await d.read_port_policy(2)
                await d.install_classifier([46])
                server.counters = {"queue_drops": {switch_drop_index: (1, 1500)}}
                counters = await d.read_counters(["queue_drops"])
                await d.enable_flow_reports()
                reports = d.flow_reports()
                next_list = asyncio.ensure_future(anext(reports))
                await asyncio.sleep(0.05)
                server.send_digest(d.flow_digest,
                                   [FLOW], list_id=3)
                received = await next_list
                await reports.aclose()
        return server, read_back, counters, received

    return run_async(body())


def check(server, read_back, counters, received, info, ingress_ts_us: int = 1000) -> None:
    assert read_back == RED
    assert server.table_entries("port_policy") == [
        WrittenEntry("port_policy", {"port": 2}, "red", dict(RED.params))]
    assert server.table_entries("classifier")[1] == WrittenEntry(
        "classifier", {"ip_proto": (17, 0xFF), "dscp": (46, 0x3F)}, "set_class",
        {"class_id": 1}, 50)
    assert counters["queue_drops"][63] == CounterValue(1, 1500)
    assert received == [FlowReport(egress_port=2, class_id=1, flow_key=(
        ipv4_int("10.0.1.10"), ipv4_int("10.0.2.10"), 17, 5004, 5006),
        ingress_ts_us=ingress_ts_us)]
    # the wire carried this P4Info's ids
    policy_id = next(t.preamble.id for t in info.tables if t.preamble.alias == "port_policy")
    assert policy_id in {e.table_id for e in server.entries.values()}


def test_a_p4info_with_other_ids_and_order_drives_the_same_entries(
        p4info_path: Path, device_config: Path, tmp_path: Path) -> None:
    info = renumbered(p4info_path)
    golden = load_p4info(p4info_path)
    assert {t.preamble.id for t in info.tables}.isdisjoint({t.preamble.id for t in golden.tables})
    check(*exercise(write(tmp_path, info, "renumbered.p4info.txtpb"), device_config), info)


def test_a_tna_build_of_one_algorithm_is_driven_by_name(
        p4info_path: Path, device_config: Path, tmp_path: Path) -> None:
    info = tna_shaped(p4info_path)
    # the report's 1000 is in TNA's 1.024 us units: 1024 us; queue_drops' index 63
    # (class_index 6, reason 3) is 3 * 256 + 6 on TNA
    check(*exercise(write(tmp_path, info, "tna.p4info.txtpb"), device_config, 3 * 256 + 6),
          info, 1024)


# The P4Info the Tofino compiler wrote for p4src/tna's RED build (make build-tna,
# p4c v1.2.5.16 tofino back end, --p4runtime-force-std-externs), as committed.
TNA_RED_P4INFO = Path(__file__).resolve().parent / "fixtures" / "tna-red.p4info.txtpb"


def test_the_tofino_compilers_p4info_of_the_red_build_is_driven_by_name(
        device_config: Path) -> None:
    info = load_p4info(TNA_RED_P4INFO)
    assert info.pkg_info.arch == "tna"
    check(*exercise(TNA_RED_P4INFO, device_config, 3 * 256 + 6), info, 1024)


def test_a_tna_build_refuses_another_algorithms_policy_by_name(
        p4info_path: Path, device_config: Path, tmp_path: Path) -> None:
    p4info = write(tmp_path, tna_shaped(p4info_path), "tna.p4info.txtpb")

    async def body() -> None:
        server = FakeP4RuntimeServer()
        async with server.run():
            async with SwitchDriver("s1", server.address, p4info=p4info,
                                    bmv2_json=device_config) as d:
                await d.write_port_policy(2, DCBT)

    with pytest.raises(ValueError, match="no action 'dcbt'"):
        run_async(body())


def test_a_v1model_program_still_needs_every_algorithm(
        p4info_path: Path, device_config: Path, tmp_path: Path) -> None:
    info = tna_shaped(p4info_path)
    info.pkg_info.arch = "v1model"
    p4info = write(tmp_path, info, "partial.p4info.txtpb")

    async def body() -> None:
        async with SwitchDriver("s1", "127.0.0.1:1", p4info=p4info, bmv2_json=device_config):
            pass

    with pytest.raises(RuntimeError, match="lacks the actions"):
        run_async(body())


TNA_DCBT_P4INFO = Path(__file__).resolve().parent / "fixtures" / "tna-dcbt.p4info.txtpb"
DCBT = PolicyAction("dcbt", {k: v for k, v in RED.params.items()
                             if k not in ("gentle", "max_p_q16", "gentle_slope_q24")}
                    | {"gentle": 0, "max_p_q16": RED.params["max_p_q16"],
                       "gentle_slope_q24": RED.params["gentle_slope_q24"],
                       "tagged_share_q16": 16384, "untagged_th_scaled": 3 << 16,
                       "tag_guard_interval_us": 0})


def write_policies(p4info: Path, device_config: Path, *writes: tuple[int, PolicyAction]):
    async def body():
        server = FakeP4RuntimeServer()
        async with server.run():
            async with SwitchDriver("s1", server.address, p4info=p4info,
                                    bmv2_json=device_config) as d:
                for port, action in writes:
                    await d.write_port_policy(port, action)
        return server

    return run_async(body())


def read_counters_from(p4info: Path, device_config: Path, counters: dict,
                       names: list[str], wanted: dict[str, list[int]]):
    """Through a driver on the fake switch holding these counters: read_counters(names)
    and read_counter_indexes(wanted)."""
    async def body():
        server = FakeP4RuntimeServer()
        async with server.run():
            async with SwitchDriver("s1", server.address, p4info=p4info,
                                    bmv2_json=device_config) as d:
                server.counters = counters
                return await d.read_counters(names), await d.read_counter_indexes(wanted)

    return run_async(body())


def range_entries(server, table: str, port: int) -> list:
    return sorted((e for e in server.table_entries(table) if e.match["port"] == port),
                  key=lambda e: e.match["avg_key"])


def expected(table: str, port: int, action: PolicyAction) -> list:
    return sorted(((dict(e.match)["avg_key"], e.action, dict(e.params))
                   for e in T.range_entries(port, action) if e.table == table))


def written(server, table: str, port: int) -> list:
    return [(e.match["avg_key"], e.action, e.params) for e in range_entries(server, table, port)]


def test_on_tofino_a_red_policy_writes_its_red_zone_range_entries(device_config: Path) -> None:
    server = write_policies(TNA_RED_P4INFO, device_config, (2, RED))
    assert written(server, "red_zone", 2) == expected("red_zone", 2, RED)
    assert len(written(server, "red_zone", 2)) >= 30   # below, 32 early segments, forced
    # the tables' entries cover every average key once (tna_encoding's contract)
    keys = [k for k, _, _ in written(server, "red_zone", 2)]
    assert keys[0][0] == 0 and all(a[1] + 1 == b[0] for a, b in zip(keys, keys[1:]))


def test_a_new_policy_replaces_the_ports_range_entries_and_no_other_ports(
        device_config: Path) -> None:
    moved = RED.with_params(min_th_scaled=8 << 16, max_th_scaled=20 << 16)
    server = write_policies(TNA_RED_P4INFO, device_config, (2, RED), (3, RED), (2, moved))
    assert written(server, "red_zone", 2) == expected("red_zone", 2, moved)
    assert written(server, "red_zone", 3) == expected("red_zone", 3, RED)


def test_on_tofino_a_dcbt_policy_writes_both_range_tables(device_config: Path) -> None:
    server = write_policies(TNA_DCBT_P4INFO, device_config, (1, DCBT),
                            (1, DCBT.with_params(tagged_share_q16=30000)))
    assert written(server, "red_zone", 1) == expected("red_zone", 1, DCBT)
    assert written(server, "dcbt_tagged_threshold", 1) == expected(
        "dcbt_tagged_threshold", 1, DCBT.with_params(tagged_share_q16=30000))


def test_on_tofino_drop_counters_are_read_and_reported_in_v1models_layout(
        device_config: Path) -> None:
    # class_index 9 (port 2, class 1): RED_EARLY-like reason 4 and reason 0;
    # a slot no reason uses (reason 12) is not reported
    every, some = read_counters_from(
        TNA_RED_P4INFO, device_config,
        {"queue_drops": {4 * 256 + 9: (5, 5000), 0 * 256 + 9: (2, 2000), 12 * 256 + 9: (7, 7000)}},
        ["queue_drops"], {"queue_drops": [9 * 10 + 4]})
    drops = every["queue_drops"]
    assert drops[9 * 10 + 4] == CounterValue(5, 5000) and drops[9 * 10] == CounterValue(2, 2000)
    # every v1model index once (64 ports * 4 classes * 10 reasons), nothing else: the
    # counts in unused reason slots (12 here) are not reported
    assert set(drops) == set(range(64 * 4 * 10))
    assert sum(v.packets for v in drops.values()) == 7
    assert some["queue_drops"] == {9 * 10 + 4: CounterValue(5, 5000)}


# The Tofino compiler's P4Info of the FRED build (make build-tna), as committed.
TNA_FRED_P4INFO = Path(__file__).resolve().parent / "fixtures" / "tna-fred.p4info.txtpb"
FRED = PolicyAction("fred", {k: RED.params[k] for k in (
    "queue_limit_pkts", "flow_epoch_shift", "policy_epoch", "ewma_shift", "min_th_scaled",
    "max_th_scaled", "red_slope_q24", "idle_decay_q32")} | {"minq_pkts": 2,
                                                              "fred_slot_mask": 4095})


def test_on_tofino_a_fred_policy_writes_its_action_and_red_zone_by_name(
        device_config: Path) -> None:
    assert load_p4info(TNA_FRED_P4INFO).pkg_info.arch == "tna"
    server = write_policies(TNA_FRED_P4INFO, device_config, (2, FRED))
    [policy] = [e for e in server.table_entries("port_policy") if e.match["port"] == 2]
    assert policy.action == "fred" and dict(policy.params) == FRED.params
    # R4-R6's zones (fred_tna.p4 shares red_tna.p4's red_zone)
    assert written(server, "red_zone", 2) == expected("red_zone", 2, FRED)
    assert not server.table_entries("dcbt_tagged_threshold")


def tna_build_dir(tmp_path: Path) -> Path:
    """A make build-tna directory's three files (their content is opaque here)."""
    build = tmp_path / "red"
    (build / "pipe").mkdir(parents=True)
    (build / "bfrt.json").write_bytes(b'{"schema_version": "1.0.0", "tables": []}')
    (build / "pipe" / "context.json").write_bytes(b'{"program_name": "main"}' * 100)
    (build / "pipe" / "tofino.bin").write_bytes(bytes(range(256)) * 700)   # > 2^14: 3-byte varint
    return build


def bf_pipeline_config_class():
    """Stratum's BfPipelineConfig (stratum/hal/lib/barefoot/bf.proto), declared
    here from its field numbers and parsed by the protobuf runtime: an
    implementation independent of tna_encoding's hand-written encoder."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="test_bf.proto", package="stratum.hal.barefoot",
                                             syntax="proto3")
    msg = fdp.message_type.add(name="BfPipelineConfig")
    profile = msg.nested_type.add(name="Profile")
    for name, number, ftype in (("profile_name", 1, F.TYPE_STRING), ("context", 2, F.TYPE_BYTES),
                                ("binary", 3, F.TYPE_BYTES)):
        profile.field.add(name=name, number=number, type=ftype, label=F.LABEL_OPTIONAL)
    profile.field.add(name="pipe_scope", number=4, type=F.TYPE_UINT32, label=F.LABEL_REPEATED)
    msg.field.add(name="p4_name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    msg.field.add(name="bfruntime_info", number=2, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    msg.field.add(name="profiles", number=3, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                  type_name=".stratum.hal.barefoot.BfPipelineConfig.Profile")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("stratum.hal.barefoot.BfPipelineConfig"))


def pushed_pipeline(device_config: Path, p4info: Path = TNA_RED_P4INFO):
    """The one SetForwardingPipelineConfig a driver makes on connecting to the fake
    switch over real gRPC with `device_config` (a file or a Tofino build directory)."""
    async def body():
        server = FakeP4RuntimeServer()
        async with server.run():
            async with SwitchDriver("s1", server.address, p4info=p4info,
                                    bmv2_json=device_config):
                pass
        return server

    [push] = run_async(body()).pipeline_pushes
    return push


def test_a_tna_build_directory_is_pushed_as_stratums_bf_pipeline_config(
        tmp_path: Path) -> None:
    build = tna_build_dir(tmp_path)
    push = pushed_pipeline(build)
    config = bf_pipeline_config_class().FromString(push.config.p4_device_config)
    assert config.p4_name == "red"
    assert config.bfruntime_info == (build / "bfrt.json").read_bytes()
    [profile] = config.profiles
    assert profile.profile_name == "pipe" and list(profile.pipe_scope) == []   # every pipe
    assert profile.context == (build / "pipe" / "context.json").read_bytes()
    assert profile.binary == (build / "pipe" / "tofino.bin").read_bytes()
    assert push.config.p4info == load_p4info(TNA_RED_P4INFO)


def test_an_uncompiled_tna_directory_is_refused_before_connecting(tmp_path: Path) -> None:
    build = tna_build_dir(tmp_path)
    (build / "pipe" / "tofino.bin").unlink()
    with pytest.raises(FileNotFoundError, match="tofino.bin.*make build-tna"):
        SwitchDriver("s1", "127.0.0.1:1", p4info=TNA_RED_P4INFO, bmv2_json=build)


TNA_DCBT_CHIPS_P4INFO = Path(__file__).resolve().parent / "fixtures" / "tna-dcbt-chips.p4info.txtpb"


def test_on_tofino_chips_event_counters_are_reported_as_v1models_chips_events(
        device_config: Path) -> None:
    # port 2: 7 admitted while on, 3 while off, 2 cut in, 5 tagged in order
    every, some = read_counters_from(
        TNA_DCBT_CHIPS_P4INFO, device_config,
        {"chips_on_admits": {2: (7, 7000)}, "chips_off_admits": {2: (3, 3000)},
         "chips_cut_ins": {2: (2, 2000)}, "chips_no_congestion": {2: (5, 5000)}},
        ["chips_events"], {"chips_events": [2 * 5 + 2, 2 * 5 + 4, 3 * 5 + 0]})
    events = every["chips_events"]
    # v1model's index port * 5 + event (chips.p4): on 0, off 1, cut-in 2, no congestion 3
    assert {i: v.packets for i, v in events.items() if v.packets} == {10: 7, 11: 3, 12: 2, 13: 5}
    # every port's four counted events, nothing for the slot event (4) TNA does not count
    assert set(events) == {p * 5 + e for p in range(64) for e in range(4)}
    assert some["chips_events"] == {12: CounterValue(2, 2000), 15: CounterValue(0, 0)}


def test_on_tofino_the_clone_sessions_are_the_report_session_and_tnas_slot_sessions(
        p4info_path: Path, device_config: Path) -> None:
    from mmaqm.targets import tna as T
    tna = SwitchDriver("s1", "127.0.0.1:1", p4info=TNA_DCBT_CHIPS_P4INFO, bmv2_json=device_config)
    v1 = SwitchDriver("s1", "127.0.0.1:1", p4info=p4info_path, bmv2_json=device_config)
    # tna_types.p4: report session 1 to dev port 68 (recirculation), slot sessions 64 + port
    assert (T.TNA_REPORT_SESSION, T.TNA_RECIRC_PORT, T.TNA_CHIPS_SESSION_BASE) == (1, 68, 64)
    assert tna.clone_sessions([2, 5]) == [
        R.CloneSession(1, ((68, 0),), packet_length_bytes=T.TNA_REPORT_COPY_BYTES),
        R.CloneSession(66, ((2, 0),)), R.CloneSession(69, ((5, 0),))]
    assert tna.clone_sessions([]) == [T.report_session()]     # every algorithm needs it
    assert v1.clone_sessions([2]) == [R.cut_in_slot_session(2)]   # 100 + port, no report session


def test_a_counter_the_tna_build_lacks_reads_as_no_values(device_config: Path) -> None:
    """A RED build has no ChIPS and no UPTA counters: the stats sample that asks
    for them gets nothing for them, and its other counters as usual."""
    every, some = read_counters_from(
        TNA_RED_P4INFO, device_config, {"queue_arrivals": {9: (4, 400)}},
        ["chips_events", "upta_events"],
        {"chips_events": [10, 12], "upta_events": [5], "queue_arrivals": [9]})
    assert some == {"chips_events": {}, "upta_events": {}, "queue_arrivals": {9: CounterValue(4, 400)}}
    assert every == {"chips_events": {}, "upta_events": {}}


def test_on_tofino_frames_from_other_pipes_are_read_and_reported_by_pipe(
        p4info_path: Path, device_config: Path) -> None:
    """main.p4's other_pipe_discards (frames from a port outside pipe 0, by pipe):
    read in the stats sample's one request, reported per pipe 1..3 on a TNA build,
    and absent ({}) on v1model, which has no such counter."""
    from mmaqm import stats
    wanted = stats.sample_indexes([2])
    assert wanted[stats.OTHER_PIPE_COUNTER] == [1, 2, 3]      # TNA_PIPES 4, pipe 0's pass
    _, tna = read_counters_from(
        TNA_RED_P4INFO, device_config,
        {"other_pipe_discards": {1: (6, 600), 3: (2, 128)}, "queue_arrivals": {8: (1, 100)}},
        [], wanted)
    sample = stats.counter_sample(0, "s1", [2], tna)
    assert sample["other_pipe_discards"] == {"1": 6, "2": 0, "3": 2}
    assert stats.format_other_pipe(stats.other_pipe_discards(tna["other_pipe_discards"])) == (
        "frames from ports outside pipe 0, discarded: 8 (pipe 1 6, pipe 2 0, pipe 3 2)\n")
    _, v1 = read_counters_from(p4info_path, device_config, {"queue_arrivals": {8: (1, 100)}},
                               [], wanted)
    assert v1["other_pipe_discards"] == {}
    assert stats.counter_sample(0, "s1", [2], v1)["other_pipe_discards"] == {}
    assert stats.format_other_pipe({}) == ""


# The Tofino compiler's P4Info of the UPTA build (make build-tna), as committed.
TNA_UPTA_P4INFO = Path(__file__).resolve().parent / "fixtures" / "tna-upta.p4info.txtpb"
UPTA = PolicyAction("upta", {
    "queue_limit_pkts": 100, "flow_epoch_shift": 20, "policy_epoch": 7, "upta_mode": 1,
    "k_shift": 16, "slot_mask": 511, "fs_i_scaled": 40000, "fs_u_scaled": 30000,
    "inv_fs_i_mant": 3435973837, "inv_fs_u_mant": 2290649225, "inv_fs_i_shift": 15,
    "inv_fs_u_shift": 15, "tagged_q16": 7864})


def test_on_tofino_a_upta_policy_writes_its_action_by_name(device_config: Path) -> None:
    assert load_p4info(TNA_UPTA_P4INFO).pkg_info.arch == "tna"
    server = write_policies(TNA_UPTA_P4INFO, device_config, (3, UPTA))
    [policy] = [e for e in server.table_entries("port_policy") if e.match["port"] == 3]
    assert policy.action == "upta" and dict(policy.params) == UPTA.params


def test_on_tofino_a_upta_slot_mask_beyond_the_builds_slots_is_refused_before_writing(
        device_config: Path) -> None:
    """upta_tna.p4 has 512 slots a port (v1model 4096): mask 1023 is refused,
    and nothing is written."""
    async def body():
        server = FakeP4RuntimeServer()
        async with server.run():
            async with SwitchDriver("s1", server.address, p4info=TNA_UPTA_P4INFO,
                                    bmv2_json=device_config) as d:
                with pytest.raises(ValueError, match="512 flow slots a port"):
                    await d.write_port_policy(3, UPTA.with_params(slot_mask=1023))
        return server

    assert run_async(body()).table_entries("port_policy") == []


def test_on_tofino_upta_counters_are_reported_in_v1models_layout(device_config: Path) -> None:
    # port 3: 2 collisions, 4 I -> U; a stale report by sequence (1) and by
    # identifier (2, the endpoint's counter, index 3 * 16 + 9); 5 probes answered
    # (event 4); slot 17 of port 3 counted 6 packets (TNA index 3 * 512 + 17)
    counters = {"upta_flow_collisions": {3: (2, 0)}, "upta_i_to_u": {3: (4, 0)},
                "upta_reports_stale": {3: (1, 0)},
                "upta_bfd_events": {3 * 16 + 9: (2, 0), 3 * 16 + 4: (5, 0), 3 * 16 + 15: (8, 0)},
                "upta_flow_bytes": {3 * 512 + 17: (6, 900)}}
    every, some = read_counters_from(
        TNA_UPTA_P4INFO, device_config, counters, ["upta_events", "upta_flow_bytes"],
        {"upta_events": [3 * 11 + 9, 3 * 11 + 1], "upta_flow_bytes": [3 * 4096 + 17]})
    events = {i: v.packets for i, v in every["upta_events"].items() if v.packets}
    # v1model's index port * 11 + event: collision 0, I -> U 1, answered 4, stale 9
    assert events == {33: 2, 34: 4, 37: 5, 42: 3}          # the unused slot 15 is dropped
    assert every["upta_flow_bytes"][3 * 4096 + 17] == CounterValue(6, 900)
    assert some["upta_events"] == {42: CounterValue(3, 0), 34: CounterValue(4, 0)}
    assert some["upta_flow_bytes"] == {3 * 4096 + 17: CounterValue(6, 900)}


def upta_bfd_config():
    """One switch with a UPTA port (512 flow slots: the Tofino build's) and C-UPTA's
    BFD section: its address, an edge port, the controller's port, one BFD path."""
    return parse_config({"switches": {"r1": {
        "p4runtime_addr": "127.0.0.1:9559",
        "ports": {p: {"mac": f"02:01:00:00:01:0{p}"} for p in (1, 2, 3)},
        "routes": [{"prefix": "10.0.2.0/24", "port": 3, "next_hop_mac": "02:01:00:00:02:03"}],
        "policies": {3: {"algorithm": "UPTA", "capacity_mbps": 10, "upta_mode": "C",
                         "queue_limit_pkts": 100, "upta_flow_slots": 512}},
        "bfd": {"router_addr": "10.255.0.1", "edge_ports": [1], "cpu_port": 63,
                "paths": [{"id": 3, "port": 3, "egress_addr": "10.255.0.2",
                           "prefixes": ["10.0.2.0/24"]}]}}}})


def test_on_tofino_a_upta_config_installs_through_stratums_rules(device_config: Path) -> None:
    """upta_local_addr is a table on both targets (v1model's name, key and action):
    a UPTA configuration with BFD installs through the fake switch that refuses
    what Stratum refuses (a parser value set write among it), the router's
    address is an upta_local_addr entry, each route is also in ipv4_answer_lpm
    (the build routes packets to this router there), and a second install
    writes nothing (over P4Runtime: the rate filters' time constants, each slot's
    K = 2^17 us in rate mode, are written over BfRt at each install)."""
    assert not load_p4info(TNA_UPTA_P4INFO).value_sets
    cfg = upta_bfd_config()

    async def body():
        server = FakeP4RuntimeServer(stratum_rules=True)
        async with server.run(), tofino_bfrt(cfg.switches["r1"], TNA_UPTA_P4INFO,
                                             device_config.parent, device_config) as (
                sw, build, bfrt):
            async with SwitchDriver("r1", server.address, p4info=TNA_UPTA_P4INFO,
                                    bmv2_json=build) as d:
                ctl = SwitchController(cfg, sw, d, clock_ms=lambda: 0.0)
                first = await ctl.install()
                again = await ctl.install()
                await d.install_upta_local_addr("10.255.0.9")
        return server, first, again, bfrt

    server, first, again, bfrt = run_async(body())
    assert first.writes and not again.writes
    assert len(bfrt.writes) == 2 and len(bfrt.specs) == 512
    assert {(s.type, s.gain_ns) for s in bfrt.specs.values()} == {("RATE", 131_072_000.0)}
    assert server.value_sets == {}
    local = server.table_entries("upta_local_addr")
    assert sorted(e.match["addr"] for e in local) == [ipv4_int("10.255.0.1"),
                                                      ipv4_int("10.255.0.9")]
    assert {e.action for e in local} == {"upta_local"}
    assert sorted((e.match["port"], e.action) for e in server.table_entries("upta_edge_port")) \
        == [(1, "upta_edge"), (63, "upta_cpu")]
    [bfd_path] = server.table_entries("upta_bfd_path")
    assert bfd_path.action == "upta_path" and bfd_path.params == {"path": 3}
    [policy] = [e for e in server.table_entries("port_policy") if e.match["port"] == 3]
    assert policy.action == "upta"
    [route] = server.table_entries("ipv4_lpm")
    [answer_route] = server.table_entries("ipv4_answer_lpm")
    assert route.match == answer_route.match == {"ipv4_dst": (ipv4_int("10.0.2.0"), 24)}
    assert (answer_route.action, answer_route.params) == (route.action, route.params)
    assert route.params["port"] == 3


def test_routes_are_copied_to_ipv4_answer_lpm_only_where_the_program_has_it(
        p4info_path: Path, device_config: Path) -> None:
    """install_route writes the copy on Tofino's UPTA build, and on v1model (no such
    table) the route alone."""
    async def body(p4info: Path):
        server = FakeP4RuntimeServer()
        async with server.run():
            async with SwitchDriver("r1", server.address, p4info=p4info,
                                    bmv2_json=device_config) as d:
                await d.install_route("10.0.7.0/24", 2, "02:00:00:00:00:02",
                                      "02:00:00:07:00:01")
        return server

    tna = run_async(body(TNA_UPTA_P4INFO))
    assert [(e.match, e.params) for e in tna.table_entries("ipv4_answer_lpm")] \
        == [(e.match, e.params) for e in tna.table_entries("ipv4_lpm")] != []
    v1 = run_async(body(p4info_path))
    assert len(v1.table_entries("ipv4_lpm")) == 1
    assert v1.table_entries("ipv4_answer_lpm") == []


def test_the_fake_switch_with_stratums_rules_refuses_a_value_set_write(
        device_config: Path) -> None:
    """The value-set rule is enforced, not assumed: the MODIFY the controller wrote for
    the Tofino build's former upta_local_addr value set is refused (UNIMPLEMENTED)."""
    update = p4r.Update(type=p4r.Update.MODIFY, entity=p4r.Entity(
        value_set_entry=p4r.ValueSetEntry(value_set_id=1, members=[p4r.ValueSetMember(
            match=[p4r.FieldMatch(field_id=1, exact=p4r.FieldMatch.Exact(value=b"\x0a"))])])))

    async def body():
        server = FakeP4RuntimeServer(stratum_rules=True)
        async with server.run():
            async with SwitchDriver("r1", server.address, p4info=TNA_UPTA_P4INFO,
                                    bmv2_json=device_config) as d:
                with pytest.raises(Exception, match="value sets are not supported"):
                    await d.write([update])
        return server

    assert run_async(body()).value_sets == {}


def test_an_ipv6_route_is_refused_before_any_write_by_a_program_without_ipv6_lpm(
        device_config: Path) -> None:
    """The Tofino UPTA build routes IPv4 only (docs/ipv6.md, "On Tofino"): a plan
    with an IPv6 route is refused whole, naming the missing table, and nothing
    is written (the compiler's P4Info of that build)."""
    assert "ipv6_lpm" not in {t.preamble.alias for t in load_p4info(TNA_UPTA_P4INFO).tables}
    v4 = R.route_entry("10.0.2.0/24", 2, "02:00:00:00:00:02", "02:00:00:02:00:01")
    v6 = R.route_entry("2001:db8:2::/64", 2, "02:00:00:00:00:02", "02:00:00:02:00:01")
    server = FakeP4RuntimeServer()

    async def body() -> None:
        async with server.run():
            async with SwitchDriver("s1", server.address, p4info=TNA_UPTA_P4INFO,
                                    bmv2_json=device_config) as d:
                await d.apply_writes(R.plan_writes(R.SwitchState(),
                                                   R.SwitchState(entries=(v4, v6))))

    with pytest.raises(ValueError, match="no ipv6_lpm table, so it cannot take IPv6 routes"):
        run_async(body())
    assert server.write_requests == []


@pytest.mark.parametrize("p4info", [TNA_RED_P4INFO, TNA_DCBT_CHIPS_P4INFO],
                         ids=["red", "dcbt_chips"])
def test_on_tofino_an_ipv6_route_is_an_ipv6_lpm_entry_as_on_v1model(
        p4info: Path, device_config: Path) -> None:
    """The Tofino builds but FRED's and UPTA's route IPv6 (docs/ipv6.md): the
    compiler's P4Info has ipv6_lpm with v1model's key and action, so the same
    YAML route becomes the same entry through Stratum's rules."""
    async def body():
        server = FakeP4RuntimeServer(stratum_rules=True)
        async with server.run():
            async with SwitchDriver("r1", server.address, p4info=p4info,
                                    bmv2_json=device_config) as d:
                await d.install_route("10.0.7.0/24", 2, "02:00:00:00:00:02",
                                      "02:00:00:07:00:01")
                await d.install_route("2001:db8:7::/64", 3, "02:00:00:00:00:03",
                                      "02:00:00:07:00:02")
        return server

    server = run_async(body())
    [route6] = server.table_entries("ipv6_lpm")
    assert route6.match == {"ipv6_dst": (int(ipaddress.IPv6Address("2001:db8:7::")), 64)}
    assert route6.action == "route6"
    assert route6.params == {"port": 3, "src_mac": 0x020000000003, "dst_mac": 0x020000070002}
    assert len(server.table_entries("ipv4_lpm")) == 1


def apply_clone_sessions(p4info: Path, device_config: Path, cut_in_ports: list[int], *,
                         stratum_rules: bool):
    """The clone sessions install writes for ChIPS on cut_in_ports, written to a fake
    switch (with Stratum's rules or not); the server, or the ValueError raised before
    any write."""
    async def body():
        server = FakeP4RuntimeServer(stratum_rules=stratum_rules)
        async with server.run():
            async with SwitchDriver("s1", server.address, p4info=p4info,
                                    bmv2_json=device_config) as d:
                desired = R.SwitchState(clone_sessions=tuple(d.clone_sessions(cut_in_ports)))
                await d.apply_writes(R.plan_writes(await d.read_state(), desired))
                assert (await d.read_state()).clone_sessions == desired.clone_sessions
        return server

    return run_async(body())


def test_clone_sessions_are_ones_stratum_accepts(p4info_path: Path, device_config: Path) -> None:
    """Stratum refuses a clone session replica with an instance other than 0 or egress
    port 0: the TNA report session (to dev port 68) and ChIPS's slot sessions are
    written with instance 0, and the v1model ones too (BMv2 ignores it)."""
    server = apply_clone_sessions(TNA_DCBT_CHIPS_P4INFO, device_config, [2, 5],
                                  stratum_rules=True)
    assert sorted(server.clone_sessions) == [1, 66, 69]
    assert all(r.instance == 0 for e in server.clone_sessions.values() for r in e.replicas)
    server = apply_clone_sessions(p4info_path, device_config, [3], stratum_rules=True)
    assert sorted(server.clone_sessions) == [103]


def test_the_fake_switch_with_stratums_rules_refuses_what_stratum_refuses(
        device_config: Path) -> None:
    """The rule is enforced, not assumed: instance 1 (what the controller wrote before)
    is refused by the Stratum-rule fake switch."""
    async def body():
        server = FakeP4RuntimeServer(stratum_rules=True)
        async with server.run():
            async with SwitchDriver("s1", server.address, p4info=TNA_DCBT_CHIPS_P4INFO,
                                    bmv2_json=device_config) as d:
                desired = R.SwitchState(clone_sessions=(R.CloneSession(66, ((2, 1),)),))
                with pytest.raises(Exception, match="instance must be 0"):
                    await d.apply_writes(R.plan_writes(await d.read_state(), desired))
        return server

    assert run_async(body()).clone_sessions == {}


def test_chips_on_dev_port_0_is_refused_on_tofino_before_any_write(device_config: Path) -> None:
    with pytest.raises(ValueError, match="dev port 0, which Stratum refuses"):
        apply_clone_sessions(TNA_DCBT_CHIPS_P4INFO, device_config, [0], stratum_rules=True)
