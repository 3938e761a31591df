"""bench/run_bench.py, bench/digest_capacity.py, bench/bench_ctl.py and bench/udpgen.c
without a switch: the IPv4 and IPv6 variants and their names, the --family option, each
variant's config, the summary's ratios (each against its own family's minimal router,
IPv6 against IPv4), the printed tables (the IPv4-only table unchanged), the IPv6 frame
udpgen builds (compiled and run, checked with scapy) and the forwarding check of an IPv6
copy. The real path (BMv2, veths) is the bench itself: bench/README.md."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tools"))

import bench_ctl  # noqa: E402
import digest_capacity  # noqa: E402
import run_bench as rb  # noqa: E402
from mmaqm.algorithms.fred import flow_key_bytes  # noqa: E402
from mmaqm.config import parse_config  # noqa: E402


# ------------------------------------------------------------ names and options
def test_every_variant_has_an_ipv6_counterpart_measured_right_after_it():
    args = rb.parse_args(["--algorithms", "DCBT,UPTA_B"])
    assert args.family == "both" and args.families == ("ipv4", "ipv6")
    assert args.variant_list == [
        "minimal_ipv4", "minimal_ipv6", "DCBT", "DCBT-v6", "UPTA_B", "UPTA_B-v6",
        "prof-DCBT", "prof-DCBT-v6", "prof-UPTA_B", "prof-UPTA_B-v6"]
    assert rb.table_order(args.variant_list) == [
        "minimal_ipv4", "DCBT", "UPTA_B", "prof-DCBT", "prof-UPTA_B",
        "minimal_ipv6", "DCBT-v6", "UPTA_B-v6", "prof-DCBT-v6", "prof-UPTA_B-v6"]


def test_rounds_rotate_by_one_variant_or_one_pair():
    v = rb.parse_args(["--no-profiles", "--algorithms", "RED,DCBT"]).variant_list
    assert rb.round_order(v, 0, 2) == v
    assert rb.round_order(v, 1, 2) == ["RED", "RED-v6", "DCBT", "DCBT-v6",
                                       "minimal_ipv4", "minimal_ipv6"]
    assert rb.round_order(v, 3, 2) == v
    v4 = ["minimal_ipv4", "RED", "DCBT"]
    assert rb.round_order(v4, 1) == ["RED", "DCBT", "minimal_ipv4"]


def test_family_option_picks_one_family():
    assert rb.parse_args(["--family", "ipv6", "--no-profiles", "--algorithms", "DCBT"]
                         ).variant_list == ["minimal_ipv6", "DCBT-v6"]
    assert rb.parse_args(["--family", "ipv4", "--no-profiles", "--algorithms", "RED,FRED"]
                         ).variant_list == ["minimal_ipv4", "RED", "FRED"]
    full = rb.parse_args([]).variant_list
    assert len(full) == 2 * (1 + 2 * len(rb.ALGORITHMS))
    assert len(set(full)) == len(full)


@pytest.mark.parametrize("argv", [["--family", "ipv5"], ["--family", "ipv6", "--size", "47"],
                                  ["--algorithms", "DCBT-v6"], ["--size", "27"]])
def test_bad_options_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        rb.parse_args(argv)
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err


def test_an_ipv4_run_may_use_packets_too_small_for_ipv6():
    assert rb.parse_args(["--family", "ipv4", "--size", "40"]).size == 40


@pytest.mark.parametrize("variant, family, base, algorithm, profile, dscp, program", [
    ("minimal_ipv4", "ipv4", "minimal_ipv4", None, None, 0, rb.MIN_JSON),
    ("minimal_ipv6", "ipv6", "minimal_ipv6", None, None, 0, rb.MIN6_JSON),
    ("DCBT", "ipv4", "minimal_ipv4", "DCBT", None, 0, rb.MAIN_JSON),
    ("DCBT-v6", "ipv6", "minimal_ipv6", "DCBT", None, 0, rb.MAIN_JSON),
    ("prof-DCBT_GUARD-v6", "ipv6", "minimal_ipv6", "DCBT", "DCBT", rb.TAGGED_DSCP,
     REPO / "build" / "dcbt" / "main.json"),
    ("prof-UPTA_C-v6", "ipv6", "minimal_ipv6", "UPTA", "UPTA", 0,
     REPO / "build" / "upta" / "main.json"),
])
def test_variant_names(variant, family, base, algorithm, profile, dscp, program):
    assert rb.family_of(variant) == family
    assert rb.baseline_of(variant) == base
    assert rb.is_baseline(variant) == (algorithm is None)
    if algorithm:
        assert rb.policy_algorithm(variant) == algorithm
    assert rb.profile_of(variant) == profile
    assert rb.variant_dscp(variant) == dscp
    assert rb.program_files(variant)[0] == program
    assert rb.in_family(rb.ipv4_variant(variant), family) == variant


def test_an_ipv6_variant_has_its_ipv4_variants_policy_and_ipv6_routes_only():
    for v4 in rb.ALGORITHMS:
        c4, c6 = rb.aqm_config(v4), rb.aqm_config(v4 + rb.V6_TAG)
        sw4, sw6 = c4["switches"]["bench"], c6["switches"]["bench"]
        assert sw6["policies"] == sw4["policies"]
        assert {r["prefix"] for r in sw4["routes"]} == set(rb.PREFIXES.values())
        assert {r["prefix"] for r in sw6["routes"]} == set(rb.PREFIXES6.values())
        cfg = parse_config(c6)                  # what write_aqm_configs validates
        assert [r.port for r in cfg.switches["bench"].routes] == [1, 2]


def test_udpgen_command_line_by_family():
    v4 = rb.udpgen_argv(100, 1)
    v6 = rb.udpgen_argv(100, 1, family="ipv6", dscp=46)
    assert v4[v4.index("--src-ip") + 1] == rb.SRC_IP
    assert v6[v6.index("--src-ip") + 1] == rb.SRC_IP6
    assert v6[v6.index("--dst-ip") + 1] == rb.DST_IP6
    assert v6[v6.index("--size") + 1] == v4[v4.index("--size") + 1] == "1000"
    assert v6[v6.index("--dscp") + 1] == "46"


# ------------------------------------------------------------ summary and tables
def _m(variant: str, rnd: int, pps: float) -> dict:
    return {"variant": variant, "round": rnd, "pps": pps, "bmv2_cpu_pct": 150.0,
            "bmv2_busiest_thread_pct": 90.0, "gen_cpu_pct": 10.0, "other_cpu_pct": 2.0,
            "machine_busy_pct": 190.0, "offered_pps": 90000.0, "loss_pct": 50.0,
            "aqm_drops": 0, "ingress_discards": 0}


def _cost(variant: str) -> dict:
    return {"bmv2_tables": 2 if rb.is_baseline(variant) else 46,
            "phv_fields": 30 if rb.is_baseline(variant) else 450,
            "aqm_actions": [], "aqm_action_primitives": 4}


PPS = {   # two rounds
    "minimal_ipv4": (50000, 40000), "minimal_ipv6": (40000, 40000),
    "DCBT": (20000, 16000), "DCBT-v6": (12000, 14000),
    "prof-DCBT": (25000, 20000), "prof-DCBT-v6": (20000, 18000),
}


def _rows(variants=tuple(PPS)) -> list[dict]:
    ms = [_m(v, r, PPS[v][r]) for r in (0, 1) for v in variants]
    return rb.summarize(ms, list(variants), cost=_cost)


def test_each_variant_against_its_own_familys_baseline_and_ipv6_against_ipv4():
    by = {r["variant"]: r for r in _rows()}
    assert [r["variant"] for r in _rows()] == [
        "minimal_ipv4", "DCBT", "prof-DCBT", "minimal_ipv6", "DCBT-v6", "prof-DCBT-v6"]
    assert by["DCBT"]["ratio"] == pytest.approx(18000 / 45000)
    assert (by["DCBT"]["ratio_per_round_min"], by["DCBT"]["ratio_per_round_max"]) == (0.4, 0.4)
    assert by["DCBT-v6"]["baseline"] == "minimal_ipv6"
    assert by["DCBT-v6"]["ratio"] == pytest.approx(13000 / 40000)
    assert by["DCBT-v6"]["ratio_per_round_min"] == pytest.approx(0.3)
    assert by["DCBT-v6"]["ratio_per_round_max"] == pytest.approx(0.35)
    assert by["DCBT-v6"]["v6_over_v4"] == pytest.approx(13000 / 18000)
    assert by["DCBT-v6"]["v6_over_v4_per_round_min"] == pytest.approx(0.6)
    assert by["DCBT-v6"]["v6_over_v4_per_round_max"] == pytest.approx(14000 / 16000)
    assert by["minimal_ipv6"]["ratio"] == 1.0
    assert by["minimal_ipv6"]["v6_over_v4"] == pytest.approx(40000 / 45000)
    assert by["minimal_ipv6"]["aqm_drops"] is None and by["DCBT-v6"]["aqm_drops"] == 0
    assert "v6_over_v4" not in by["DCBT"]


def test_an_ipv6_only_run_has_no_ipv6_over_ipv4():
    rows = _rows(("minimal_ipv6", "DCBT-v6"))
    assert all("v6_over_v4" not in r for r in rows)
    assert rows[1]["ratio"] == pytest.approx(13000 / 40000)
    assert rb.format_families(rows) == ""
    assert "ratio vs minimal_ipv6" in rb.format_table(rows).splitlines()[0]


def test_tables_with_both_families():
    rows = _rows()
    head = rb.format_table(rows).splitlines()[0]
    assert "ratio vs minimal_ipv4/6" in head
    side = rb.format_side_by_side(rows).splitlines()
    assert [line.split()[0] for line in side[2:]] == ["DCBT", "DCBT-v6"]
    fam = rb.format_families(rows).splitlines()
    assert fam[0].split("  ")[0] == "variant (IPv4 name)"
    assert [line.split() for line in fam[2:]] == [
        ["minimal_ipv4", "45000", "40000", "0.889", "0.800-1.000", "1.000", "1.000"],
        ["DCBT", "18000", "13000", "0.722", "0.600-0.875", "0.400", "0.325"],
        ["prof-DCBT", "22500", "19000", "0.844", "0.800-0.900", "0.500", "0.475"]]


def test_an_ipv4_only_table_is_printed_as_before():
    rows = _rows(("minimal_ipv4", "DCBT", "prof-DCBT"))
    head = rb.format_table(rows).splitlines()[0]
    assert "ratio vs minimal_ipv4 " in head and "ipv6" not in head
    assert rb.format_families(rows) == ""


def test_committed_bench_tables_still_render():
    """Every committed docs/results/bench table (IPv4 only) is what the changed
    format functions print from its JSON."""
    import check_results
    errors, checked = check_results.check_bench(REPO / "docs" / "results")
    assert checked > 0 and errors == []


# ------------------------------------------------------------ udpgen's IPv6 frame
@pytest.fixture(scope="module")
def udpgen(tmp_path_factory) -> Path:
    if not shutil.which("gcc"):
        pytest.skip("gcc not installed")
    exe = tmp_path_factory.mktemp("udpgen") / "udpgen"
    subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe),
                    str(rb.UDPGEN_C)], check=True)
    return exe


def _dump(exe: Path, **kw) -> subprocess.CompletedProcess:
    argv = rb.udpgen_argv(1, 1, dump=True, **kw)
    return subprocess.run([str(exe), *argv[1:]], capture_output=True, text=True)


@pytest.mark.parametrize("size, dscp", [(1000, 0), (1000, 46), (48, 0), (333, 63)])
def test_udpgen_builds_a_valid_ipv6_udp_frame(udpgen, size, dscp):
    from scapy.layers.inet import UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether

    r6, r4 = _dump(udpgen, family="ipv6", size=size, dscp=dscp), _dump(udpgen, size=size)
    assert r6.returncode == 0, r6.stderr
    raw6 = bytes.fromhex(r6.stdout.strip())
    assert len(raw6) == len(bytes.fromhex(r4.stdout.strip())) == 14 + size
    pkt = Ether(raw6)
    assert pkt[Ether].dst == rb.ROUTER_MAC[1] and pkt[Ether].type == 0x86DD
    ip = pkt[IPv6]
    assert (ip.version, ip.tc, ip.fl, ip.plen, ip.nh, ip.hlim) == (6, dscp << 2, 0, size - 40,
                                                                   17, 64)
    assert (ip.src, ip.dst) == (rb.SRC_IP6, rb.DST_IP6)
    udp = pkt[UDP]
    assert (udp.sport, udp.dport, udp.len) == (10000, 9, size - 40)
    sent_chksum = udp.chksum
    del udp.chksum                            # scapy recomputes it from the pseudo-header
    assert Ether(bytes(pkt))[UDP].chksum == sent_chksum


@pytest.mark.parametrize("kw", [{"family": "ipv6", "size": 47}, {"family": "ipv4", "size": 27}])
def test_udpgen_refuses_a_packet_too_small_for_its_family(udpgen, kw):
    assert _dump(udpgen, **kw).returncode == 2


def test_udpgen_refuses_mixed_families(udpgen):
    argv = rb.udpgen_argv(1, 1, dump=True)
    argv[argv.index("--dst-ip") + 1] = rb.DST_IP6
    assert subprocess.run([str(udpgen), *argv[1:]], capture_output=True).returncode == 2


# ------------------------------------------------------------ bench_ctl's IPv6 check
def _forwarded(frame: bytes, *, hop_delta: int = 1) -> bytearray:
    got = bytearray(frame)
    got[0:6] = bytes.fromhex(rb.NEXT_HOP_MAC[2].replace(":", ""))
    got[6:12] = bytes.fromhex(rb.ROUTER_MAC[2].replace(":", ""))
    got[bench_ctl.IPV6_HOP_LIMIT] -= hop_delta
    return got


EXPECT = {"src_mac": rb.ROUTER_MAC[2], "dst_mac": rb.NEXT_HOP_MAC[2]}


def test_the_forwarding_check_of_an_ipv6_copy(udpgen):
    frame = bytes.fromhex(_dump(udpgen, family="ipv6").stdout.strip())
    assert bench_ctl.check_forwarded6(frame, bytes(_forwarded(frame)), EXPECT) == []
    assert any("hop limit" in p for p in
               bench_ctl.check_forwarded6(frame, bytes(_forwarded(frame, hop_delta=0)), EXPECT))
    bad = _forwarded(frame)
    bad[-1] ^= 1
    assert bench_ctl.check_forwarded6(frame, bytes(bad), EXPECT) == ["UDP part differs"]
    bad = _forwarded(frame)
    bad[14 + 1] ^= 0x10                       # the flow label
    assert bench_ctl.check_forwarded6(frame, bytes(bad), EXPECT) == [
        "IPv6 header differs beyond the hop limit"]
    assert any("dst MAC" in p for p in bench_ctl.check_forwarded6(frame, frame, EXPECT))


# ------------------------------------------------------------ digest_capacity
def test_digest_capacity_family_option():
    assert digest_capacity.parse_args([]).family == "ipv4"
    args = digest_capacity.parse_args(["--family", "ipv6", "--flows", "100,200"])
    assert args.family == "ipv6" and args.flow_list == [100, 200]
    with pytest.raises(SystemExit) as exc:
        digest_capacity.parse_args(["--family", "ipv7"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        digest_capacity.parse_args(["--flows", "10,x"])
    assert exc.value.code == 2


def test_digest_capacity_ipv6_config_and_signatures():
    cfg = digest_capacity.config(300.0, 1000, "ipv6")
    assert {r["prefix"] for r in cfg["switches"]["bench"]["routes"]} == set(rb.PREFIXES6.values())
    assert cfg["switches"]["bench"]["policies"]["default"]["algorithm"] == "DCBT"
    assert digest_capacity.FRAME_SIZE == {"ipv4": 46, "ipv6": 48}
    sig6 = digest_capacity.flow_signatures(3, "ipv6")
    assert sig6 == [zlib.crc32(flow_key_bytes(rb.SRC_IP6, rb.DST_IP6, 17, 10000 + i, 9))
                    for i in range(3)]
    assert sig6 != digest_capacity.flow_signatures(3, "ipv4")
    assert len(set(digest_capacity.flow_signatures(1000, "ipv6"))) == 1000


# ------------------------------------------------------------ callgrind_cost / callgrind_table
def test_callgrind_cost_adds_each_familys_minimal_router_first(monkeypatch):
    import callgrind_cost

    monkeypatch.setattr(sys, "argv", ["callgrind_cost.py", "--variants", "DCBT-v6,prof-DCBT"])
    assert callgrind_cost.parse_args().variant_list == [
        "minimal_ipv4", "minimal_ipv6", "DCBT-v6", "prof-DCBT"]
    monkeypatch.setattr(sys, "argv", ["callgrind_cost.py", "--variants", "DCBT"])
    assert callgrind_cost.parse_args().variant_list == ["minimal_ipv4", "DCBT"]
    monkeypatch.setattr(sys, "argv", ["callgrind_cost.py", "--variants", "DCBT-v4"])
    with pytest.raises(SystemExit) as exc:
        callgrind_cost.parse_args()
    assert exc.value.code == 2


def test_callgrind_table_ratios_against_each_familys_minimal_router(tmp_path):
    import json

    import callgrind_table

    parts = {"receive": 1, "ingress": 2, "egress": 3}
    run = {"results": [{"variant": v, "ir_per_packet": ir, "parts_ir_per_packet": parts,
                        "cost": {"phv_fields": 1}}
                       for v, ir in (("minimal_ipv4", 100_000), ("minimal_ipv6", 80_000),
                                     ("DCBT", 250_000), ("DCBT-v6", 320_000))]}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    first_table = callgrind_table.tables([("now", path)]).split("\n\n")[1]
    rows = {line.split(" | ")[0].lstrip("| "): line for line in first_table.splitlines()}
    assert "(0.400; 1)" in rows["DCBT"]           # 100 000 / 250 000
    assert "(0.250; 1)" in rows["DCBT-v6"]        # 80 000 / 320 000, not 100 000 / 320 000
    assert "(1.000; 1)" in rows["minimal_ipv6"]
