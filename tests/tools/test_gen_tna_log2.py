"""gen_tna_log2: the log2 tables FRED uses on Tofino (p4src/tna/log2_tna.p4)."""

import math
import re
import subprocess
import sys
from pathlib import Path

import gen_tna_log2  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def lookup(width: int, x: int) -> list[int]:
    return [lg for value, mask, lg in gen_tna_log2.entries(width) if x & mask == value]


def test_every_nonzero_value_matches_one_entry_within_seven_percent() -> None:
    for width in gen_tna_log2.WIDTHS:
        xs = list(range(1, 4096)) + [(1 << width) - 1, 1 << (width - 1), 40000, 123456789 % (1 << width)]
        for x in xs:
            match = lookup(width, x)
            assert len(match) == 1, (width, x, match)
            assert abs(match[0] - 16 * math.log2(x)) <= 1.5, (width, x, match[0])
        assert lookup(width, 0) == []


def test_the_committed_p4_file_is_the_generators_output() -> None:
    out = subprocess.run([sys.executable, str(REPO / "tools" / "gen_tna_log2.py")],
                         capture_output=True, text=True, check=True).stdout
    assert (REPO / "p4src" / "tna" / "log2_tna.p4").read_text() == out


def p4_table(control: str) -> tuple[list[tuple[int, int, list[int]]], list[int]]:
    """(value, mask, action args) of each entry of a control in the committed
    log2_tna.p4, and its default action's args: what the switch looks up."""
    text = (REPO / "p4src" / "tna" / "log2_tna.p4").read_text()
    body = text[text.index(f"control {control}("):]
    body = body[:body.index("\n}\n")]
    entries = []
    for m in re.finditer(r"(\d+)w(0x[0-9a-f]+) &&& \d+w(0x[0-9a-f]+) : \w+\(([\d, ]+)\);", body):
        entries.append((int(m.group(2), 16), int(m.group(3), 16),
                        [int(a) for a in m.group(4).split(",")]))
    default = re.search(r"const default_action = \w+\(([\d, ]+)\);", body).group(1)
    return entries, [int(a) for a in default.split(",")]


def p4_lookup(table: tuple[list[tuple[int, int, list[int]]], list[int]], x: int) -> list[int]:
    entries, default = table
    hits = [args for value, mask, args in entries if x & mask == value]
    assert len(hits) <= 1, (x, hits)
    return hits[0] if hits else default


def test_fred_share_and_compare_tables_carry_the_offsets_the_arithmetic_assumes() -> None:
    """The share table adds lg n + 256 (the average's 2^16 scale) to lg qlen, and
    the compare table holds lg avg and lg avg + 17 (R2: share > lg avg + 16):
    the values test_gen_tna_fred_decision's model of fred_tna.p4 uses."""
    share = p4_table("TnaLog2Q4W16Share")
    compare = p4_table("TnaLog2Q4W32Compare")
    plain = p4_table("TnaLog2Q4W16")
    assert gen_tna_log2.SHARE_OFFSET == 256 and gen_tna_log2.TWICE_OFFSET == 16
    for x in list(range(0, 3000)) + [65535, 40000, 1 << 15]:
        lg = p4_lookup(plain, x)[0]
        assert lg == gen_tna_log2.lg_of(16, x)
        assert p4_lookup(share, x) == [lg + 256], x       # n = 0 counts as 1: lg 0
    for x in [0, 1, 2, 3, 255, 256, 65535, 65536, 3 << 16, 123456789, (1 << 32) - 1]:
        lg = gen_tna_log2.lg_of(32, x)
        assert p4_lookup(compare, x) == [lg, lg + 17], x
        if x:
            assert abs(lg - 16 * math.log2(x)) <= 1.5
