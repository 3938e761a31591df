"""Scenario files: loading, expansion, classes, validation errors that name their field."""

from __future__ import annotations

from pathlib import Path

import pytest

import mmt_testenv

from mmaqm_exp.scenario import (
    ScenarioError,
    check_congestion_control,
    load_scenario,
    parse_scenario,
    parse_scenario_dict,
)

SCEN = mmt_testenv.TOPO / "scenarios"
HOSTS = ["tcp1", "tcp2", "mm1", "mm2", "cbr1", "cbr2"]


def _base(**over):
    d = {
        "name": "t",
        "duration_s": 10,
        "phases": [{"name": "a", "start_s": 0, "end_s": 5}, {"name": "b", "start_s": 5, "end_s": 10}],
        "flows": [{"kind": "tcp", "count": 2, "src": "tcp1", "dst": "tcp2"}],
    }
    d.update(over)
    return d


def _errors(data, **kw) -> list[str]:
    with pytest.raises(ScenarioError) as ei:
        parse_scenario(data, **kw)
    return ei.value.errors


# --------------------------------------------------------------------------- the shipped files


def test_dcbt_fig7_matches_the_paper_schedule():
    sc = load_scenario(SCEN / "dcbt-fig7.yaml", hosts=HOSTS)
    assert sc.duration_s == 30
    assert [(p.name, p.start_s, p.end_s) for p in sc.phases] == [
        ("tcp+mm", 0, 10), ("blast", 10, 20), ("blast+tcp", 20, 30)]
    flows = sc.flows
    assert len(flows) == 67  # dcbt section 5: 55 FTP + 10 MM_APP + 2 CBR
    assert [f.flow_id for f in flows] == list(range(1, 68))  # unique, dense
    by = lambda cls: [f for f in flows if f.cls == cls]  # noqa: E731
    assert len(by("TCP")) == 55 and len(by("TAGGED")) == 10 and len(by("UNTAGGED")) == 2
    # active flow counts per phase give the paper's fair shares 25000/35, /37, /67
    for p, n in zip(sc.phases, (35, 37, 67)):
        assert sum(f.active_in(p.start_s, p.end_s) for f in flows) == n
    mm = sc.groups[1]
    assert mm.kind == "mmapp" and mm.dscp == 46 and mm.params["scales_kbps"] == [300, 500, 700, 900, 1100]
    cbr = sc.groups[2]
    assert cbr.cls == "UNTAGGED" and cbr.dscp == 0 and cbr.cbr_rate_kbps() == 5000
    assert (cbr.start_s, cbr.stop_s) == (10, 30)
    late_tcp = sc.groups[3]
    assert (late_tcp.start_s, late_tcp.count, late_tcp.first_flow_id) == (20, 30, 38)
    tcp = sc.groups[0]
    # 1000-byte IP packets: TCP_MAXSEG 960 (timestamps inside), payload 948; 20-packet window
    assert (tcp.params["cc"], tcp.tcp_mss_option, tcp.tcp_payload_bytes, tcp.tcp_window_bytes) == (
        "reno", 960, 948, 18960)
    assert sc.blast().name == "blast"


def test_smoke_is_short_and_blast_is_a_fraction_of_the_bottleneck():
    sc = load_scenario(SCEN / "smoke.yaml", hosts=HOSTS)
    assert 15 <= sc.duration_s <= 20
    cbr = [g for g in sc.groups if g.kind == "cbr"][0]
    assert cbr.cbr_rate_kbps(10000) == pytest.approx(6000)
    with pytest.raises(ScenarioError, match="rate_fraction_of_bottleneck: needs the bottleneck rate"):
        cbr.cbr_rate_kbps(None)
    assert sc.blast().name == "blast" and sc.blast().start_s == cbr.start_s


def _active(sc, phase):
    return {cls: sum(f.active_in(phase.start_s, phase.end_s) for f in sc.flows if f.cls == cls)
            for cls in ("TCP", "TAGGED", "UNTAGGED")}


def test_mcdt_scenario1_mixes_the_three_classes_at_two_cbr_steps():
    # mcdt section III, scenario 1 (modes A, B, C): scenario 2's cbr2 and cbr4 steps, 15 s each
    sc = load_scenario(SCEN / "mcdt-scenario1.yaml", hosts=HOSTS)
    assert sc.duration_s == 30 and sc.blast().name == "cbr4"
    assert [(p.name, p.start_s, p.end_s) for p in sc.phases] == [("cbr2", 0, 15), ("cbr4", 15, 30)]
    assert [_active(sc, p) for p in sc.phases] == [
        {"TCP": 10, "TAGGED": 10, "UNTAGGED": 2}, {"TCP": 10, "TAGGED": 10, "UNTAGGED": 4}]
    mm = [g for g in sc.groups if g.kind == "mmapp"]
    assert [g.params["scales_kbps"] for g in mm] == [[160, 170, 180, 190, 200]]
    assert all(g.cbr_rate_kbps() == 1000 for g in sc.groups if g.kind == "cbr")
    tcp = sc.groups[0]
    assert (tcp.params["cc"], tcp.tcp_window_bytes, tcp.params["packet_bytes"]) == ("reno", 18960, 1000)


def test_mcdt_scenario2_adds_cbr_two_at_a_time():
    # mcdt section III, scenario 2: increasing CBR-UDP (1 Mbit/s each) beside FTP and MM_APP
    sc = load_scenario(SCEN / "mcdt-scenario2.yaml", hosts=HOSTS)
    assert sc.duration_s == 50 and sc.blast().name == "cbr8"
    assert [(p.name, p.start_s, p.end_s) for p in sc.phases] == [
        (f"cbr{2 * i}", 10 * i, 10 * (i + 1)) for i in range(5)]
    assert [_active(sc, p) for p in sc.phases] == [
        {"TCP": 10, "TAGGED": 10, "UNTAGGED": 2 * i} for i in range(5)]
    mm = [g for g in sc.groups if g.kind == "mmapp"]
    cbr = [g for g in sc.groups if g.kind == "cbr"]
    assert [g.params["scales_kbps"] for g in mm] == [[160, 170, 180, 190, 200]]
    assert all(g.cbr_rate_kbps() == 1000 and g.stop_s == 50 for g in cbr)
    tcp = sc.groups[0]
    assert (tcp.params["cc"], tcp.tcp_window_bytes, tcp.params["packet_bytes"]) == ("reno", 18960, 1000)


def test_mcdt_scenario3_adds_mm_app_six_at_a_time():
    # mcdt section III, scenario 3: increasing MM-UDP beside FTP and two CBR flows
    sc = load_scenario(SCEN / "mcdt-scenario3.yaml", hosts=HOSTS)
    assert sc.duration_s == 50 and sc.blast().name == "mm30"
    assert [(p.name, p.start_s, p.end_s) for p in sc.phases] == [
        (f"mm{6 * (i + 1)}", 10 * i, 10 * (i + 1)) for i in range(5)]
    assert [_active(sc, p) for p in sc.phases] == [
        {"TCP": 10, "TAGGED": 6 * (i + 1), "UNTAGGED": 2} for i in range(5)]
    mm = [g for g in sc.groups if g.kind == "mmapp"]
    assert all(g.params["scales_kbps"] == [160, 170, 180, 190, 200] and g.dscp == 46 for g in mm)
    assert [g.cbr_rate_kbps() for g in sc.groups if g.kind == "cbr"] == [1000]


# --------------------------------------------------------------------------- expansion, scaling


def test_classes_follow_the_switch_classifier():
    sc = parse_scenario(_base(flows=[
        {"kind": "mmapp", "src": "mm1", "dst": "mm2"},                # default DSCP 46 -> TAGGED
        {"kind": "mmapp", "src": "mm1", "dst": "mm2", "dscp": 34},    # AF41 -> TAGGED
        {"kind": "mmapp", "src": "mm1", "dst": "mm2", "dscp": 0},     # -> UNTAGGED
        {"kind": "cbr", "src": "cbr1", "dst": "cbr2", "rate_kbps": 100, "dscp": 46, "class": "tagged"},
        {"kind": "tcp", "src": "tcp1", "dst": "tcp2", "dscp": 46},    # TCP whatever the DSCP
    ]))
    assert [g.cls for g in sc.groups] == ["TAGGED", "TAGGED", "UNTAGGED", "TAGGED", "TCP"]
    sc2 = parse_scenario(_base(tagged_dscp=[10], flows=[{"kind": "mmapp", "src": "a", "dst": "b"}]))
    assert sc2.groups[0].cls == "UNTAGGED"


def test_defaults_spread_and_flow_ids():
    sc = parse_scenario(_base(flows=[
        {"kind": "tcp", "count": 4, "src": "tcp1", "dst": "tcp2", "start_s": 2, "start_spread_s": 1.0},
        {"kind": "cbr", "src": "cbr1", "dst": "cbr2", "rate_kbps": 500},
    ]))
    fl = sc.flows
    assert [f.flow_id for f in fl] == [1, 2, 3, 4, 5]
    assert [f.start_s for f in fl[:4]] == [2.0, 2.25, 2.5, 2.75]  # start + i * spread / n
    assert all(f.stop_s == 10 for f in fl)  # stop_s defaults to duration_s
    assert fl[4].start_s == 0 and fl[4].dscp == 0


def test_time_scale_and_duration_override():
    sc = load_scenario(SCEN / "dcbt-fig7.yaml", duration_s=6.0)
    assert sc.duration_s == pytest.approx(6.0) and sc.time_scale == pytest.approx(0.2)
    assert [(p.start_s, p.end_s) for p in sc.phases] == [(0, 2), (2, 4), (4, 6)]
    assert sc.groups[2].start_s == pytest.approx(2.0) and sc.groups[3].start_s == pytest.approx(4.0)
    assert sc.groups[2].cbr_rate_kbps() == 5000  # rates do not scale
    sc2 = load_scenario(SCEN / "dcbt-fig7.yaml", time_scale=0.5)
    assert sc2.duration_s == 15 and sc2.phase_at(7.4).name == "blast"
    with pytest.raises(ScenarioError, match="one, not both"):
        load_scenario(SCEN / "dcbt-fig7.yaml", time_scale=0.5, duration_s=3)


def test_to_dict_roundtrip():
    sc = load_scenario(SCEN / "dcbt-fig7.yaml", duration_s=3.0)
    back = parse_scenario_dict(sc.to_dict())
    assert back == sc
    assert back.flows == sc.flows


# --------------------------------------------------------------------------- validation


def test_every_error_names_its_field():
    errs = _errors(_base(
        bogus=1,
        duration_s=10,
        phases=[{"name": "a", "start_s": 0, "end_s": 6}, {"name": "b", "start_s": 5, "end_s": 12},
                {"name": "a", "start_s": 8, "end_s": 7}],
        flows=[
            {"kind": "tcp", "count": 0, "src": "tcp1", "dst": "tcp1", "start_s": 5, "stop_s": 5, "cwnd": 3},
            {"kind": "udp", "src": "x", "dst": "y"},
            {"kind": "cbr", "src": "cbr1", "dst": "nowhere", "rate_kbps": 10,
             "rate_fraction_of_bottleneck": 0.5},
            {"kind": "mmapp", "src": "mm1", "dst": "mm2", "class": "untagged"},
            {"kind": "mmapp", "src": "mm1", "dst": "mm2", "scales_kbps": [500, 300], "initial_scale": 7},
            {"kind": "cbr", "src": "cbr1", "dst": "cbr2", "stop_s": 11},
        ]), hosts=HOSTS)
    text = "\n".join(errs)
    for needle in (
        "bogus: unknown key",
        "phases[1].start_s: phases must be in time order without overlap",
        "phases[1].end_s: must be <= duration_s (10.0), got 12",
        "phases[2].name: duplicate phase name 'a'",
        "phases[2].end_s: must be > start_s (8.0), got 7",
        "flows[0].cwnd: unknown key",
        "flows[0].count: must be >= 1, got 0",
        "flows[0].dst: must differ from src ('tcp1')",
        "flows[0].stop_s: must be > start_s (5.0), got 5",
        "flows[1].kind: must be one of tcp, mmapp, cbr, got string 'udp'",
        "flows[2].dst: unknown host 'nowhere'",
        "flows[2].rate_kbps: give exactly one of rate_kbps, rate_fraction_of_bottleneck",
        "flows[3].class: says 'untagged' but a mmapp flow with DSCP 46 is classified TAGGED",
        "flows[4].scales_kbps: must be increasing (kbit/s), got [500, 300]",
        "flows[4].initial_scale: must be in 0..4, got 7",
        "flows[5].rate_kbps: give exactly one of",
        "flows[5].stop_s: must be <= duration_s (10.0), got 11",
    ):
        assert needle in text, f"missing {needle!r} in:\n{text}"


@pytest.mark.parametrize("over, needle", [
    ({"name": ""}, "name: must be a non-empty string, got string ''"),
    ({"duration_s": 0}, "duration_s: must be > 0, got 0"),
    ({"duration_s": "30"}, "duration_s: must be a number, got string '30'"),
    ({"duration_s": "3e1"}, "duration_s: must be a number, got string '3e1' (YAML 1.1 reads "
                            "exponents without a dot as text: write 1.0e-3)"),
    ({"phases": []}, "phases: must list at least one phase"),
    ({"phases": ["a"]}, "phases[0]: must be a mapping, got string 'a'"),
    ({"flows": []}, "flows: must list at least one flow group"),
    ({"blast_phase": "nope"}, "blast_phase: must name a phase (a, b), got string 'nope'"),
    ({"tagged_dscp": [46, 64]}, "tagged_dscp[1]: must be in 0..63, got 64"),
    ({"tagged_dscp": 46}, "tagged_dscp: must be a list, got 46"),
    ({"flows": [{"kind": "tcp", "src": "tcp1", "dst": "tcp2", "count": 1.5}]},
     "flows[0].count: must be an integer, got 1.5"),
    ({"flows": [{"kind": "tcp", "src": "tcp1", "dst": "tcp2", "max_window_pkts": 1}]},
     "flows[0].max_window_pkts: must be >= 2, got 1"),
    ({"flows": [{"kind": "tcp", "src": "tcp1", "dst": "tcp2", "packet_bytes": 1600}]},
     "flows[0].packet_bytes: must be in 100..1500 (IP packet, either family), got 1600"),
    ({"flows": [{"kind": "tcp", "src": "tcp1", "dst": "tcp2", "cc": "re no"}]},
     "flows[0].cc: must be a congestion-control name like reno, got string 're no'"),
    ({"flows": [{"kind": "tcp", "src": "tcp1", "dst": "tcp2", "class": "voice"}]},
     "flows[0].class: must be one of tcp, tagged, untagged, got string 'voice'"),
    ({"flows": [{"kind": "cbr", "src": "cbr1", "dst": "cbr2", "rate_kbps": -5}]},
     "flows[0].rate_kbps: must be > 0, got -5"),
    ({"flows": [{"kind": "cbr", "src": "cbr1", "dst": "cbr2", "rate_fraction_of_bottleneck": 12}]},
     "flows[0].rate_fraction_of_bottleneck: must be <= 10 (a fraction of the bottleneck rate), "
     "got 12"),
    ({"flows": [{"kind": "mmapp", "src": "mm1", "dst": "mm2", "scales_kbps": [300, -1]}]},
     "flows[0].scales_kbps[1]: must be > 0, got -1"),
    ({"flows": [{"kind": "tcp", "src": "tcp1"}]}, "flows[0].dst: required (a host name)"),
    ({"flows": [{"src": "tcp1", "dst": "tcp2"}]}, "flows[0].kind: required"),
])
def test_single_errors(over, needle):
    assert any(needle in e for e in _errors(_base(**over))), _errors(_base(**over))


@pytest.mark.parametrize("key", ["name", "duration_s", "phases", "flows"])
def test_required_keys(key):
    data = _base()
    del data[key]
    assert any(e.startswith(f"{key}: required") for e in _errors(data)), _errors(data)


def test_top_level_must_be_a_mapping():
    assert _errors([]) == ["(top level): must be a mapping, got a list"]


def test_hosts_are_checked_against_the_topology():
    data = _base()
    parse_scenario(data)  # no host list: not checked
    errs = _errors(data, hosts=["tcp1", "h9"])
    assert errs == ["flows[0].dst: unknown host 'tcp2' (topology hosts: h9, tcp1)"]
    sc = parse_scenario(data)
    with pytest.raises(ScenarioError, match=r"flows\[0\].src: unknown host 'tcp1'"):
        sc.check_hosts(["tcp2"])


def test_yaml_errors_name_the_file(tmp_path: Path):
    f = tmp_path / "bad.yaml"
    f.write_text("name: [unclosed\n")
    with pytest.raises(ScenarioError, match="bad.yaml: not valid YAML"):
        load_scenario(f)


def test_congestion_control_must_be_available(tmp_path: Path):
    sc = parse_scenario(_base())
    avail = tmp_path / "avail"
    avail.write_text("cubic bbr\n")
    with pytest.raises(ScenarioError, match=r"flows\[0\].cc: 'reno' is not in .*\(cubic bbr\).*modprobe"):
        check_congestion_control(sc, str(avail))
    avail.write_text("reno cubic\n")
    check_congestion_control(sc, str(avail))
    with pytest.raises(ScenarioError, match="unreadable"):
        check_congestion_control(sc, str(tmp_path / "missing"))


def test_upta_scenarios_phi_and_the_p_upta_option(tmp_path):
    """upta §6: scenario k has k ON periods of 2 s in 15 s (phi = 2k/15), scenario 6 is ON
    throughout; the -p variants give the video the P-UPTA option's q0 = 0.12."""
    from mmaqm_exp.scenario import load_scenario as load
    scen = mmt_testenv.TOPO / "scenarios"
    hosts = ["s1", "s2", "s3", "d1", "d2", "d3"]
    for k in range(1, 7):
        for suffix in ("", "-p"):
            sc = load(scen / f"upta-s{k}{suffix}.yaml", hosts=hosts)
            on = [g for g in sc.groups if g.src == "s3"]
            phi = sum(g.stop_s - g.start_s for g in on) / sc.duration_s
            assert phi == pytest.approx(1.0 if k == 6 else 2 * k / 15)
            video = [g for g in sc.groups if g.src == "s2"]
            assert video[0].params["upta_loss_threshold"] == (0.12 if suffix else None)
            assert video[0].params["rate_kbps"] == 1760
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nduration_s: 1\nflows:\n  - {kind: cbr, count: 1, src: a, dst: b, "
                   "rate_kbps: 10, upta_loss_threshold: 1}\n")
    with pytest.raises(Exception) as info:
        load(bad, hosts=["a", "b"])
    assert "flows[0].upta_loss_threshold: must be < 1" in str(info.value)
