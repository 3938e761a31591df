"""p4constants: parsing defines.p4 and the counter index helpers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

from mmaqm import p4constants as C

from conftest import P4_INCLUDE


def test_module_reads_the_repository_defines_p4() -> None:
    assert C.DEFINES_P4.resolve() == (P4_INCLUDE / "defines.p4").resolve()


def test_every_const_line_of_the_real_defines_p4_is_parsed() -> None:
    # Independent count: every line that starts with "const bit<" in defines.p4.
    text = (P4_INCLUDE / "defines.p4").read_text()
    names = re.findall(r"^const bit<\d+> (\w+) =", text, flags=re.M)
    assert names, "defines.p4 has no constants?"
    for name in names:
        assert name in C.CONSTANTS
        assert getattr(C, name) == C.CONSTANTS[name]


def test_real_defines_values() -> None:
    # Values as written in p4src/include/defines.p4.
    assert C.NUM_PORTS == 64
    assert C.CLASS_SLOTS == 4
    assert C.NUM_DROP_REASONS == 4
    assert C.NUM_DISCARD_REASONS == 8
    assert C.FLOW_SLOTS == 65536
    assert C.ALGO_RED == 1
    assert C.AVG_FRAC_BITS == 16
    assert C.PROB_FRAC_BITS == 16
    assert C.SLOPE_FRAC_BITS == 24
    assert C.PROB_ONE == 1 << 16
    assert C.FLOW_DIGEST_RECEIVER == 1


def test_name_maps() -> None:
    assert C.ALGORITHMS == {"DROP_TAIL": 0, "RED": 1, "CBT_RED_ALL": 2,
                            "CBT_RED_TCP_ONLY": 3, "DCBT": 4}
    assert C.CLASSES == {"TCP": 0, "TAGGED": 1, "UNTAGGED": 2}  # CLASS_SLOTS is not a class
    assert C.DROP_REASONS == {"QUEUE_LIMIT": 0, "RED_EARLY": 1, "RED_FORCED": 2,
                              "CLASS_THRESHOLD": 3}
    assert C.DISCARD_REASONS == {"NOT_IPV4": 0, "MALFORMED": 1, "BAD_CHECKSUM": 2,
                                 "IPV4_OPTIONS": 3, "TTL_EXPIRED": 4, "NO_ROUTE": 5,
                                 "NO_POLICY": 6}
    assert C.CLASS_NAMES[2] == "UNTAGGED"
    assert C.DROP_REASON_NAMES[3] == "CLASS_THRESHOLD"


def test_protocol_constants_come_from_defines_p4() -> None:
    # defines.p4: const bit<8> IP_PROTO_TCP = 6; IP_PROTO_UDP = 17; ETHERTYPE_IPV4 = 0x0800.
    assert C.IP_PROTO_TCP == 6
    assert C.IP_PROTO_UDP == 17
    assert C.ETHERTYPE_IPV4 == 0x0800


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


def test_env_var_overrides_defines_path(tmp_path) -> None:
    defines = tmp_path / "defines.p4"
    defines.write_text(textwrap.dedent("""\
        const bit<32> NUM_PORTS = 8;
        const bit<32> CLASS_SLOTS = 4;
        const bit<32> NUM_DROP_REASONS = 4;
        const bit<32> NUM_DISCARD_REASONS = 8;
        const bit<8> ALGO_RED = 7;
        const bit<8> AVG_FRAC_BITS = 16;
        const bit<8> PROB_FRAC_BITS = 16;
        const bit<8> SLOPE_FRAC_BITS = 24;
        const bit<32> PROB_ONE = 65536;
        """))
    env = dict(os.environ, MMAQM_DEFINES_P4=str(defines))
    out = subprocess.run(
        [sys.executable, "-c",
         "from mmaqm import p4constants as C; print(C.NUM_PORTS, C.ALGO_RED, C.ALGORITHMS)"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout.split(maxsplit=2)
    assert out == ["8", "7", "{'RED': 7}\n"]


def test_missing_required_constant_fails_import(tmp_path) -> None:
    defines = tmp_path / "defines.p4"
    defines.write_text("const bit<32> NUM_PORTS = 8;\n")
    env = dict(os.environ, MMAQM_DEFINES_P4=str(defines))
    proc = subprocess.run([sys.executable, "-c", "import mmaqm.p4constants"],
                          env=env, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "missing constants" in proc.stderr


def test_index_helpers_match_the_p4_expressions() -> None:
    # aqm.p4: class_index = port * CLASS_SLOTS + class            -> 2*4 + 1 = 9
    assert C.class_index(2, C.CLASS_TAGGED) == 9
    # queue_drops: class_index * NUM_DROP_REASONS + reason        -> 9*4 + 3 = 39
    assert C.drop_index(2, C.CLASS_TAGGED, C.DROP_CLASS_THRESHOLD) == 39
    # main.p4 ingress_discards: port * NUM_DISCARD_REASONS + reason -> 3*8 + 5 = 29
    assert C.discard_index(3, C.DISCARD_NO_ROUTE) == 29
    # last slots: 63*4 + 3 = 255 = NUM_PORTS*CLASS_SLOTS - 1; 255*4 + 3 = 1023
    assert C.class_index(63, 3) == C.NUM_PORTS * C.CLASS_SLOTS - 1
    assert C.drop_index(63, 3, 3) == C.NUM_PORTS * C.CLASS_SLOTS * C.NUM_DROP_REASONS - 1
    assert C.discard_index(63, 7) == C.NUM_PORTS * C.NUM_DISCARD_REASONS - 1


@pytest.mark.parametrize("call", [
    lambda: C.class_index(64, 0),
    lambda: C.class_index(-1, 0),
    lambda: C.class_index(0, 4),
    lambda: C.drop_index(0, 0, 4),
    lambda: C.discard_index(64, 0),
    lambda: C.discard_index(0, 8),
    lambda: C.class_index(True, 0),
])
def test_index_helpers_reject_out_of_range(call) -> None:
    with pytest.raises(ValueError):
        call()
