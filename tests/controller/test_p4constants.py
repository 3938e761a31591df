"""p4constants: the generated P4 constants (mmaqm.p4generated), the parsers that
generate them (also used for $MMAQM_DEFINES_P4 / $MMAQM_P4INFO), and the counter
index helpers. tests/tools/test_gen_p4constants.py checks the generated module
against the P4 sources."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

from mmaqm import p4constants as C
from mmaqm import p4generated

from conftest import P4_SHARED, REPO_ROOT


def test_module_takes_the_generated_values_of_the_repository_sources() -> None:
    # the default paths name the generated values' sources (nothing is read at import)
    assert C.DEFINES_P4.resolve() == (P4_SHARED / "defines.p4").resolve()
    assert C.P4INFO.resolve() == (REPO_ROOT / "p4src/v1model/main.p4info.txtpb").resolve()
    assert C.CONSTANTS == p4generated.DEFINES_CONSTANTS
    assert C.DEFINES_ENUMS == p4generated.DEFINES_ENUMS
    assert C.ENUMS == p4generated.P4INFO_ENUMS
    # copies: a caller that changes them does not change the generated module
    assert C.CONSTANTS is not p4generated.DEFINES_CONSTANTS
    assert C.ENUMS["traffic_class_t"] is not p4generated.P4INFO_ENUMS["traffic_class_t"]


def test_the_parsers_read_the_real_sources_as_the_generated_module_holds_them() -> None:
    defines = (P4_SHARED / "defines.p4").read_text()
    assert C.parse_constants(defines) == C.CONSTANTS
    assert C.parse_enums(defines) == C.DEFINES_ENUMS
    assert C.load_serializable_enums(C.GOLDEN_P4INFO) == C.ENUMS


IMPORT_WITHOUT_FILES = textwrap.dedent("""\
    import builtins, io, pathlib
    def refuse(*args, **kwargs):
        raise AssertionError(f"file read at import: {args[:1]}")
    builtins.open = io.open = refuse
    pathlib.Path.read_text = pathlib.Path.read_bytes = pathlib.Path.open = refuse
    from mmaqm import p4constants as C
    from mmaqm.targets import tna as T
    print(C.NUM_PORTS, C.CLASSES["UNTAGGED"], T.RED_ZONE_SEGMENTS, T.TNA_RECIRC_PORT)
    """)


def test_importing_reads_no_file() -> None:
    # Python's own imports use io.open_code, not open(): only the package's reads fail.
    env = {k: v for k, v in os.environ.items() if k not in ("MMAQM_DEFINES_P4", "MMAQM_P4INFO")}
    proc = subprocess.run([sys.executable, "-c", IMPORT_WITHOUT_FILES], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "64 2 32 68\n"


# Every `const bit<N> NAME = VALUE;` of p4src/shared/defines.p4, in file order, as written
# there (update together with defines.p4 and `make gen-constants`).
DEFINES_P4_CONSTANTS = [
    ("CHIPS_ON_ADMITS", 0), ("CHIPS_OFF_ADMITS", 1), ("CHIPS_CUT_IN", 2),
    ("CHIPS_NO_CONGESTION", 3), ("CHIPS_SLOT_DEPARTED", 4), ("NUM_CHIPS_EVENTS", 5),
    ("NUM_PORTS", 64), ("CLASS_SLOTS", 4), ("NUM_DROP_REASONS", 10),
    ("NUM_DISCARD_REASONS", 8), ("FLOW_SLOTS", 65536), ("ROUTE_TABLE_SIZE", 1024),
    ("ROUTE6_TABLE_SIZE", 1024),
    ("CLASSIFIER_TABLE_SIZE", 64), ("FRED_SLOTS_PER_PORT", 4096),
    ("TAG_GUARD_SLOTS_PER_PORT", 4096), ("TAG_GUARD_SLOT_MASK", 4095), ("TAG_GUARD_BURST_PKTS", 4),
    ("ETHERTYPE_IPV4", 0x0800), ("IP_PROTO_ICMP", 1), ("IP_PROTO_TCP", 6), ("IP_PROTO_UDP", 17),
    ("ETHERTYPE_IPV6", 0x86DD), ("IP_PROTO_ICMPV6", 58), ("IPV6_EXT_HOP_BY_HOP", 0),
    ("IPV6_EXT_ROUTING", 43), ("IPV6_EXT_FRAGMENT", 44), ("IPV6_EXT_DEST_OPTS", 60),
    ("IPV6_HEADER_BYTES", 40), ("FLOW_FOLD_MUL0", 0x9E3779B1), ("FLOW_FOLD_MUL1", 0x85EBCA77),
    ("FLOW_FOLD_MUL2", 0xC2B2AE3D),
    ("ETHERNET_HEADER_BYTES", 14), ("IPV4_MIN_HEADER_BYTES", 20), ("IPV4_MIN_IHL", 5),
    ("DISCARD_NOT_IPV4", 0), ("DISCARD_MALFORMED", 1), ("DISCARD_BAD_CHECKSUM", 2),
    ("DISCARD_IPV4_OPTIONS", 3), ("DISCARD_TTL_EXPIRED", 4), ("DISCARD_NO_ROUTE", 5),
    ("DISCARD_NO_POLICY", 6), ("DISCARD_IPV6_EXT_LIMIT", 7),
    ("ECN_NOT_ECT", 0), ("ECN_CE", 3), ("PRIORITY_CUT_IN", 1),
    ("CHIPS_CLONE_SESSION_BASE", 100), ("CHIPS_SLOT_FIELD_LIST", 1),
    ("MAX_IDLE_US", 0xFFFFFFFF), ("IDLE_DECAY_MAX_HALVINGS", 32),
    ("AVG_FRAC_BITS", 16), ("SLOPE_FRAC_BITS", 24), ("PROB_FRAC_BITS", 16), ("PROB_ONE", 65536),
    ("MCDT_MODE_B", 1), ("MCDT_MODE_C", 2),
    ("FRED_MAXQ_CONGESTED_PKTS", 2), ("FRED_STRIKE_LIMIT", 1), ("FRED_STRIKE_MAX", 255),
    ("UPTA_SLOTS_PER_PORT", 4096), ("UPTA_RATE_FRAC_BITS", 4), ("UPTA_Q16_ONE", 65536),
    ("UPTA_Q_NONE", 0xFFFF), ("UPTA_FS_NONE", 0xFFFFFFFF), ("UPTA_MODE_P", 1), ("UPTA_MODE_C", 2),
    ("UPTA_STATE_U", 0), ("UPTA_STATE_I", 1), ("UPTA_OPTION_TYPE", 0x9E), ("UPTA_OPTION_LEN", 4),
    ("UPTA_OPTION_IHL", 6), ("UPTA_EVENT_FLOW_COLLISION", 0), ("UPTA_EVENT_I_TO_U", 1),
    ("UPTA_EVENT_PROBE_SENT", 2), ("UPTA_EVENT_PROBE_LOWERED", 3),
    ("UPTA_EVENT_PROBE_ANSWERED", 4), ("UPTA_EVENT_PROBE_FROM_EDGE", 5),
    ("UPTA_EVENT_PROBE_MALFORMED", 6), ("UPTA_EVENT_REPORT_ACCEPTED", 7),
    ("UPTA_EVENT_REPORT_FROM_EDGE", 8), ("UPTA_EVENT_REPORT_STALE", 9),
    ("UPTA_EVENT_REPORT_MALFORMED", 10), ("NUM_UPTA_EVENTS", 11),
    ("ICMP_QOS_PROBE", 20), ("ICMP_QOS_REPORT", 21), ("BFD_PATHS", 64), ("BFD_IP_LEN", 36),
    ("BFD_SPEC_BYTES", 16), ("BFD_REPORT_FRAME_BYTES", 50), ("BFD_REPORT_TTL", 64),
    ("BFD_SEQ_VALID", 0x10000),
    ("FLOW_DIGEST_RECEIVER", 1), ("BFD_SPEC_DIGEST_RECEIVER", 2), ("BFD_REPORT_DIGEST_RECEIVER", 3),
]


def test_every_const_line_of_the_real_defines_p4_is_parsed() -> None:
    assert list(C.CONSTANTS.items()) == DEFINES_P4_CONSTANTS
    for name, value in DEFINES_P4_CONSTANTS:
        assert getattr(C, name) == value, name          # also a module attribute


def test_real_enums() -> None:
    # defines.p4: enum bit<8> traffic_class_t and drop_reason_t, values as written there.
    classes = {"TCP": 0, "TAGGED": 1, "UNTAGGED": 2}
    drop_reasons = {"QUEUE_LIMIT": 0, "RED_EARLY": 1, "RED_FORCED": 2, "CLASS_THRESHOLD": 3,
                    "FRED_MAXQ": 4, "FRED_TWICE_AVGCQ": 5, "FRED_STRIKE": 6,
                    "UPTA_USELESS": 7, "UPTA_FAIR_SHARE": 8, "TAG_GUARD": 9}
    assert C.DEFINES_ENUMS == {"traffic_class_t": classes, "drop_reason_t": drop_reasons}
    # the golden P4Info carries traffic_class_t (the classifier's parameter type)
    assert C.ENUMS["traffic_class_t"] == classes


def test_name_maps() -> None:
    assert C.CLASSES == {"TCP": 0, "TAGGED": 1, "UNTAGGED": 2}  # CLASS_SLOTS is not a class
    assert (C.CLASS_TCP, C.CLASS_TAGGED, C.CLASS_UNTAGGED) == (0, 1, 2)
    assert C.DROP_REASONS == {"QUEUE_LIMIT": 0, "RED_EARLY": 1, "RED_FORCED": 2,
                              "CLASS_THRESHOLD": 3, "FRED_MAXQ": 4, "FRED_TWICE_AVGCQ": 5,
                              "FRED_STRIKE": 6, "UPTA_USELESS": 7, "UPTA_FAIR_SHARE": 8, "TAG_GUARD": 9}
    assert C.DISCARD_REASONS == {"NOT_IPV4": 0, "MALFORMED": 1, "BAD_CHECKSUM": 2,
                                 "IPV4_OPTIONS": 3, "TTL_EXPIRED": 4, "NO_ROUTE": 5,
                                 "NO_POLICY": 6, "IPV6_EXT_LIMIT": 7}
    assert C.CLASS_NAMES[2] == "UNTAGGED"
    assert C.DROP_REASON_NAMES[3] == "CLASS_THRESHOLD"
    assert C.DISCARD_REASON_NAMES[5] == "NO_ROUTE"
    # algorithms are P4 actions now (mmaqm.algorithms.ALGORITHMS), not constants
    assert not hasattr(C, "ALGORITHMS") and not hasattr(C, "ALGO_RED")


def test_every_name_maps_value_fits_its_counter() -> None:
    assert all(0 <= v < C.NUM_DROP_REASONS for v in C.DROP_REASONS.values())
    assert all(0 <= v < C.NUM_DISCARD_REASONS for v in C.DISCARD_REASONS.values())
    assert all(0 <= v < C.CLASS_SLOTS for v in C.CLASSES.values())


def test_parse_constants_decimal_hex_and_comments() -> None:
    text = textwrap.dedent("""\
        // const bit<8> COMMENTED = 1;
        const bit<8> A = 5;            // trailing comment
        const bit<16> B = 0x0800;
        /* const bit<8> IN_BLOCK = 3;
           const bit<8> ALSO_IN_BLOCK = 4; */
          const bit<32>   C_SPACED   =   1_000 ;
        const bit<8> D = 0xfF; /* inline */
        #define NOT_A_CONST 1
        const bool FLAG = true;
        """)
    assert C.parse_constants(text) == {"A": 5, "B": 2048, "C_SPACED": 1000, "D": 255}


@pytest.mark.parametrize("line, message", [
    ("const bit<8> X = ;", "cannot parse"),
    ("const bit<8> X = 1", "cannot parse"),           # missing semicolon
    ("const bit<8> X = 256;", "does not fit in bit<8>"),
    ("const bit<8> X = 1;\nconst bit<8> X = 2;", "defined twice"),
])
def test_parse_constants_rejects(line: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        C.parse_constants(line)


def test_parse_enums_explicit_values_and_comments() -> None:
    text = textwrap.dedent("""\
        // enum bit<8> commented_t { X = 1 }
        enum bit<8> a_t {
            P = 0,          // trailing comment
            Q = 0x2,        /* inline */
            R = 1_0
        }
        /* enum bit<8> in_block_t { Y = 2 } */
        enum color_t { RED, BLUE }
        typedef bit<8> x_t;
        enum bit<2> b_t { ONLY = 3 }
        """)
    # color_t is not serializable (no bit<N>): not a counter index, not parsed.
    assert C.parse_enums(text) == {"a_t": {"P": 0, "Q": 2, "R": 10}, "b_t": {"ONLY": 3}}
    assert C.parse_enums("const bit<8> A = 1;") == {}


@pytest.mark.parametrize("text, message", [
    ("enum bit<8> e_t { A = 0, B }", "enum e_t: cannot parse member 'B'"),        # no value
    ("enum bit<8> e_t { A = 0, A = 1 }", "enum e_t: bad or repeated member 'A = 1'"),
    ("enum bit<8> e_t { A = 0, B = 0 }", "enum e_t: bad or repeated member 'B = 0'"),
    ("enum bit<2> e_t { A = 3, B = 4 }", "enum e_t: bad or repeated member 'B = 4'"),  # 4 >= 2^2
])
def test_parse_enums_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="^x.p4: " + re.escape(message) + "$"):
        C.parse_enums(text, source="x.p4")


SMALL_P4INFO = r"""
pkg_info { arch: "v1model" }
type_info {
  serializable_enums {
    key: "color_t"
    value {
      underlying_type { bitwidth: 16 }
      members { name: "RED" value: "\000\001" }
      members { name: "BLUE" value: "\001\000" }
    }
  }
  serializable_enums {
    key: "empty_t"
    value { underlying_type { bitwidth: 8 } }
  }
}
"""


def test_load_serializable_enums(tmp_path) -> None:
    path = tmp_path / "small.p4info.txtpb"
    path.write_text(SMALL_P4INFO)
    # values are big-endian bytes: "\000\001" = 1, "\001\000" = 256
    assert C.load_serializable_enums(path) == {"color_t": {"RED": 1, "BLUE": 256},
                                               "empty_t": {}}
    assert C.load_serializable_enums(REPO_ROOT / "p4src/v1model/main.p4info.txtpb")[
        "traffic_class_t"] == {"TCP": 0, "TAGGED": 1, "UNTAGGED": 2}


def test_load_serializable_enums_rejects_bad_files(tmp_path) -> None:
    garbled = tmp_path / "garbled.txtpb"
    garbled.write_text("type_info { serializable_enums {")
    with pytest.raises(ImportError, match="cannot read the P4Info .*garbled.txtpb"):
        C.load_serializable_enums(garbled)
    with pytest.raises(ImportError, match="cannot read the P4Info .*absent.txtpb"):
        C.load_serializable_enums(tmp_path / "absent.txtpb")


REQUIRED_DEFINES = textwrap.dedent("""\
    const bit<32> CLASS_SLOTS = 4;
    const bit<32> NUM_DROP_REASONS = 4;
    const bit<32> NUM_DISCARD_REASONS = 8;
    const bit<8> AVG_FRAC_BITS = 16;
    const bit<8> PROB_FRAC_BITS = 16;
    const bit<8> SLOPE_FRAC_BITS = 24;
    const bit<32> PROB_ONE = 65536;
    const bit<32> CHIPS_ON_ADMITS = 0;
    const bit<32> NUM_CHIPS_EVENTS = 1;
    """)

TRAFFIC_CLASS_P4INFO = r"""
type_info {
  serializable_enums {
    key: "traffic_class_t"
    value {
      underlying_type { bitwidth: 8 }
      members { name: "TCP" value: "\000" }
      members { name: "TAGGED" value: "\002" }
      members { name: "UNTAGGED" value: "\%s" }
    }
  }
}
"""


def run_p4constants(env_overrides: dict[str, str], code: str) -> subprocess.CompletedProcess:
    """Import mmaqm.p4constants in a fresh interpreter (paths are read at import time)."""
    env = dict(os.environ, **env_overrides)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


def test_env_var_overrides_defines_path(tmp_path) -> None:
    defines = tmp_path / "defines.p4"
    defines.write_text("const bit<32> NUM_PORTS = 8;\nconst bit<8> EXTRA = 7;\n"
                       + REQUIRED_DEFINES
                       + "enum bit<8> drop_reason_t { QUEUE_LIMIT = 3, RED_EARLY = 0 }\n")
    proc = run_p4constants({"MMAQM_DEFINES_P4": str(defines)},
                           "from mmaqm import p4constants as C; "
                           "print(C.NUM_PORTS, C.EXTRA, C.DROP_REASONS)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "8 7 {'QUEUE_LIMIT': 3, 'RED_EARLY': 0}\n"


def test_defines_without_drop_reason_t_fails_import(tmp_path) -> None:
    defines = tmp_path / "defines.p4"
    defines.write_text("const bit<32> NUM_PORTS = 8;\n" + REQUIRED_DEFINES)
    proc = run_p4constants({"MMAQM_DEFINES_P4": str(defines)}, "import mmaqm.p4constants")
    assert proc.returncode != 0
    assert f"{defines}: no enum drop_reason_t" in proc.stderr


def test_missing_required_constant_fails_import(tmp_path) -> None:
    defines = tmp_path / "defines.p4"
    defines.write_text("const bit<32> NUM_PORTS = 8;\n")
    proc = run_p4constants({"MMAQM_DEFINES_P4": str(defines)}, "import mmaqm.p4constants")
    assert proc.returncode != 0
    assert "missing constants" in proc.stderr


def test_env_var_overrides_p4info_path(tmp_path) -> None:
    p4info = tmp_path / "main.p4info.txtpb"
    p4info.write_text(TRAFFIC_CLASS_P4INFO % "001")       # TAGGED = 2, UNTAGGED = 1
    proc = run_p4constants({"MMAQM_P4INFO": str(p4info)},
                           "from mmaqm import p4constants as C; "
                           "print(C.P4INFO, C.CLASSES, C.CLASS_TAGGED, C.CLASS_UNTAGGED)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{p4info} {{'TCP': 0, 'TAGGED': 2, 'UNTAGGED': 1}} 2 1\n"


@pytest.mark.parametrize("p4info_text, message", [
    (SMALL_P4INFO, "no serializable enum traffic_class_t"),
    (TRAFFIC_CLASS_P4INFO % "004", "exceed the counter slots 4"),    # UNTAGGED = 4 = CLASS_SLOTS
])
def test_bad_p4info_fails_import(tmp_path, p4info_text: str, message: str) -> None:
    p4info = tmp_path / "main.p4info.txtpb"
    p4info.write_text(p4info_text)
    proc = run_p4constants({"MMAQM_P4INFO": str(p4info)}, "import mmaqm.p4constants")
    assert proc.returncode != 0
    assert message in proc.stderr


def test_index_helpers_match_the_p4_expressions() -> None:
    # aqm.p4: class_index = port * CLASS_SLOTS + class            -> 2*4 + 1 = 9
    assert C.class_index(2, C.CLASS_TAGGED) == 9
    # queue_drops: class_index * NUM_DROP_REASONS + reason        -> 9*10 + 3 = 93
    assert C.drop_index(2, C.CLASS_TAGGED, C.DROP_REASONS["CLASS_THRESHOLD"]) == 93
    # main.p4 ingress_discards: port * NUM_DISCARD_REASONS + reason -> 3*8 + 5 = 29
    assert C.discard_index(3, C.DISCARD_NO_ROUTE) == 29
    # last slots: 63*4 + 3 = 255 = NUM_PORTS*CLASS_SLOTS - 1; 255*10 + 9 = 2559
    assert C.class_index(63, 3) == C.NUM_PORTS * C.CLASS_SLOTS - 1
    assert C.drop_index(63, 3, 9) == C.NUM_PORTS * C.CLASS_SLOTS * C.NUM_DROP_REASONS - 1 == 2559
    assert C.discard_index(63, 7) == C.NUM_PORTS * C.NUM_DISCARD_REASONS - 1


@pytest.mark.parametrize("call", [
    lambda: C.class_index(64, 0),
    lambda: C.class_index(-1, 0),
    lambda: C.class_index(0, 4),
    lambda: C.drop_index(0, 0, 10),
    lambda: C.discard_index(64, 0),
    lambda: C.discard_index(0, 8),
    lambda: C.class_index(True, 0),
])
def test_index_helpers_reject_out_of_range(call) -> None:
    with pytest.raises(ValueError):
        call()
