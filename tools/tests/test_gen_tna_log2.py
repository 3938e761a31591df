"""gen_tna_log2: the log2 tables FRED uses on Tofino (p4src/tna/log2_tna.p4)."""

import math
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
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
