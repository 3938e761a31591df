"""UPTA on Tofino (p4src/tna/upta_tna.p4) against the v1model data plane's exact
arithmetic (mmaqm_oracle.upta_model, bit for bit upta.p4).

The TNA tables are read from the committed P4 (log2_tna.p4's FairShare, W16,
W32 sums and antilog tables; upta_tna.p4's Fig. 7 code table and its state
codes), and the pipeline's arithmetic is replayed in Python:
  head = (lg fs + 256) |-| (lg R + lg(2^16 - x))   0: exceeded (Fig. 7)
  q'   = antilog(head)                                   eq. 17
Each lg is within 1.5 Q4 steps (gen_tna_log2), so three of them are within
4.5 steps: a factor 2^(4.5/16) = 1.22. Away from that band (and its
rounding) the TNA decision must equal the exact one; inside it either is
allowed (docs/tofino.md)."""

from __future__ import annotations

import random
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
from mmaqm.algorithms import upta  # noqa: E402
from mmaqm_oracle import upta_model

LOG2 = (REPO / "p4src" / "tna" / "log2_tna.p4").read_text()
UPTA_TNA = (REPO / "p4src" / "tna" / "upta_tna.p4").read_text()
BAND = 1.25        # outside [1/BAND, BAND] of the exact ratio, TNA must agree
MASK32 = (1 << 32) - 1


def control_text(name: str) -> str:
    start = LOG2.index(f"control {name}(")
    return LOG2[start:LOG2.index("\n}\n", start)]


def ternary_table(name: str) -> tuple[list[tuple[int, int, list[int]]], list[int]]:
    """(value, mask, action args) of each const entry, and the default's args."""
    text = control_text(name)
    rows = [(int(m.group(1), 16), int(m.group(2), 16), [int(a) for a in m.group(3).split(",")])
            for m in re.finditer(r"\d+w(0x[0-9a-f]+) &&& \d+w(0x[0-9a-f]+) : \w+\(([^)]*)\);",
                                 text)]
    default = re.search(r"const default_action = \w+\(([^)]*)\);", text).group(1)
    return rows, [int(a) for a in default.split(",")]


def lookup(table, x: int) -> int:
    rows, default = table
    for value, mask, args in rows:
        if x & mask == value:
            return args[0]
    return default[0]


LG16_PLUS_ONE = ternary_table("TnaLog2Q4W16PlusOne")
LG32_SUMS = ternary_table("TnaLog2Q4W32Sums")      # its action adds lg R to both sums
FS_PLUS = ternary_table("TnaLog2Q4W32FairShare")
ANTILOG = {int(m.group(1)): int(m.group(2)) for m in re.finditer(
    r"^\s*(\d+) : set_q16\((\d+)\);", control_text("TnaUptaAntilog"), re.M)}
ANTILOG_DEFAULT = int(re.search(r"const default_action = set_q16\((\d+)\);",
                                control_text("TnaUptaAntilog")).group(1))


def headroom(rate: int, fs: int, x16: int) -> int:
    """upta_tna.p4: (lg fs + 256) |-| (lg R + lg(2^16 - x)), in bit<16>; the
    second lg from the field 2^16 - 1 - x (~q, or the random draw)."""
    total = (lookup(LG32_SUMS, rate) + lookup(LG16_PLUS_ONE, 0xFFFF - x16)) & 0xFFFF
    return max(0, lookup(FS_PLUS, fs) - total)


def tna_exceeds(rate: int, fs: int, x16: int) -> bool:
    return headroom(rate, fs, x16) == 0


def tna_rewrite(q16: int, rate: int, fs: int) -> int:
    """eq. 17 as upta_tna.p4 does it (an admitted packet; q unchanged when R <= fs)."""
    if rate <= fs:
        return q16
    return ANTILOG.get(headroom(rate, fs, q16), ANTILOG_DEFAULT)


def log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    return int(2 ** rng.uniform(lo.bit_length() - 1, hi.bit_length() - 1))


def test_the_tables_are_read_from_the_committed_p4() -> None:
    assert len(LG16_PLUS_ONE[0]) > 100 and len(LG32_SUMS[0]) > 300 and len(FS_PLUS[0]) > 300
    assert len(ANTILOG) == 256 and ANTILOG[0] == 0 and ANTILOG_DEFAULT == 0xFFFF


def test_fig7_tests_agree_with_the_exact_cross_multiplication_outside_the_band() -> None:
    rng = random.Random(20261125)
    checked = decided = 0
    for _ in range(20000):
        rate = log_uniform(rng, 16, MASK32)
        fs = log_uniform(rng, 16, MASK32 - 1)
        x16 = rng.randrange(0, 1 << 16)
        ratio = rate * (65536 - x16) / (fs * 65536)
        exact = upta_model.exceeds_fixed(rate, fs, x16)
        if 1 / BAND < ratio < BAND:
            continue
        checked += 1
        decided += exact
        assert tna_exceeds(rate, fs, x16) == exact, (rate, fs, x16, ratio)
    assert checked > 15000 and 0.2 < decided / checked < 0.8


def test_no_fair_share_is_never_exceeded_and_a_zero_share_always_is() -> None:
    for rate in (1, 320, 1 << 20, MASK32):
        for x16 in (0, 1, 0x8000, 0xFFFE, 0xFFFF):
            assert not tna_exceeds(rate, upta.FS_INFINITE, x16)
            assert not upta_model.exceeds_fixed(rate, upta.FS_INFINITE, x16)
            assert tna_exceeds(rate, 0, x16)


def test_the_fair_share_drop_probability_is_within_the_band() -> None:
    """An I flow at R = k fs is dropped with probability 1 - 1/k (Fig. 7): the
    fraction of the 2^16 draws that exceed, TNA against exact."""
    fs = 40000
    for k in (1.5, 2.0, 3.0, 5.0, 10.0):
        rate = int(fs * k)
        exact = upta_model.fair_drop_count_q16(rate, fs) / 65536
        tna = sum(tna_exceeds(rate, fs, u) for u in range(0, 65536, 16)) / 4096
        # the drop probability 1 - fs'/R for an fs' within the band of fs
        assert 1 - BAND / k - 0.01 <= tna <= 1 - 1 / (BAND * k) + 0.01, (k, tna, exact)
    assert not any(tna_exceeds(fs // 2, fs, u) for u in range(0, 65536, 64))


def test_eq17_rewrite_is_within_the_band_of_the_exact_rewrite() -> None:
    rng = random.Random(17)
    checked = 0
    for _ in range(20000):
        fs = log_uniform(rng, 64, 1 << 30)
        rate = int(fs * rng.uniform(1.01, 3.0))
        q16 = rng.randrange(0, 0xFFFF)
        mant, shift = upta.reciprocal(fs)
        exact = upta_model.threshold_update_fixed(q16, rate, fs, mant, shift)
        if exact == 0:          # margin >= 2^16: the packet was dropped as useless
            continue
        got = tna_rewrite(q16, rate, fs)
        margin_exact, margin_tna = 65536 - exact, 65536 - got
        assert margin_tna >= 1
        # (a few units of rounding where the margin itself is a few units)
        assert (1 / BAND <= margin_tna / margin_exact <= BAND
                or abs(margin_tna - margin_exact) <= 2), (q16, rate, fs, exact, got)
        checked += 1
    assert checked > 10000
    assert tna_rewrite(1000, 500, 600) == 1000   # R <= fs: unchanged


# ---- Fig. 7's state and verdict: upta_codes and the state register's action
def code_constants() -> dict[str, int]:
    return {m.group(1): int(m.group(2), 0)
            for m in re.finditer(r"const bit<\d+> (UPTA_\w+) = (\w+);", UPTA_TNA)}


def codes_table() -> list[tuple[list[str], tuple[str, str]]]:
    start = UPTA_TNA.index("table upta_codes {")
    body = UPTA_TNA[start:UPTA_TNA.index("\n    }\n", start)]
    rows = [([k.strip() for k in m.group(1).split(",")], (m.group(2), m.group(3)))
            for m in re.finditer(r"\(([^)]*)\) : codes\((\w+), (\w+)\);", body)]
    default = re.search(r"const default_action = codes\((\w+), (\w+)\);", body)
    return rows + [(["_", "_", "_", "_"], (default.group(1), default.group(2)))]


def tna_step(state_value: int, q_none: bool, q_i: bool, u_i: bool, q_u: bool) -> int:
    """The code the register writes and returns (upta_tna.p4 state_step)."""
    const = code_constants()
    keys = (0 if q_none else 1, 0 if q_i else 1, 0 if u_i else 1, 0 if q_u else 1)
    for row, (if_i, if_u) in codes_table():
        if all(k == "_" or int(k) == v for k, v in zip(row, keys)):
            break
    return const[if_i] if state_value >= const["UPTA_CODE_NOW_I"] else const[if_u]


def test_fig7_state_and_verdict_as_upta_p4_for_every_input() -> None:
    const = code_constants()
    verdicts = {0: upta_model.ADMIT, const["UPTA_VERDICT_USELESS"]: upta_model.UPTA_USELESS,
                const["UPTA_VERDICT_FAIR_SHARE"]: upta_model.UPTA_FAIR_SHARE}
    seen = set()
    for state_value in (0, const["UPTA_U_USELESS"], const["UPTA_I_ADMIT"],
                        const["UPTA_I_FAIR_SHARE"], const["UPTA_I_USELESS"], const["UPTA_U_ADMIT"]):
        was_i = state_value >= const["UPTA_CODE_NOW_I"]
        for q_none in (False, True):
            for q_i in (False, True):
                for u_i in (False, True):
                    for q_u in (False, True):
                        code = tna_step(state_value, q_none, q_i, u_i, q_u)
                        # upta.p4: I: q exceeded -> U, useless (I_TO_U); else u -> fair
                        # share; U/new: q exceeded with fs_U -> useless; else -> I
                        if was_i:
                            if not q_none and q_i:
                                want = (upta_model.UPTA_USELESS, upta.STATE_U, True)
                            elif u_i:
                                want = (upta_model.UPTA_FAIR_SHARE, upta.STATE_I, False)
                            else:
                                want = (upta_model.ADMIT, upta.STATE_I, False)
                        elif not q_none and q_u:
                            want = (upta_model.UPTA_USELESS, upta.STATE_U, False)
                        else:
                            want = (upta_model.ADMIT, upta.STATE_I, False)
                        got = (verdicts[code & 3],
                               upta.STATE_I if code >= const["UPTA_CODE_NOW_I"] else upta.STATE_U,
                               bool(code & const["UPTA_CODE_I_TO_U"]))
                        assert got == want, (state_value, q_none, q_i, u_i, q_u, code)
                        assert bool(code & const["UPTA_CODE_WAS_I"]) == was_i
                        seen.add(got)
    assert len(seen) == 4
