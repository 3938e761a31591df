"""tools/tna_recirc_budget.py: the recirculation budget table in docs/tofino.md is the
one the tool computes, and its arithmetic is the line-rate arithmetic."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import tna_recirc_budget as B  # noqa: E402


def test_line_rate_arithmetic() -> None:
    # 100 Gbit/s of 64-byte frames: 1e11 / (84 * 8) = 148.8 Mpps; of 1500-byte ones 8.22 Mpps
    assert B.pps(64) == pytest.approx(148.81e6, rel=1e-4)
    assert B.pps(1500) == pytest.approx(8.2237e6, rel=1e-4)
    assert B.share(1, 64) == pytest.approx(1.0)          # one 64-byte port fills it
    assert B.share(16, 1500) == pytest.approx(0.8837, rel=1e-3)


def test_the_docs_table_is_the_computed_one(tmp_path: Path) -> None:
    page = REPO / "docs" / "tofino.md"
    ok = subprocess.run([sys.executable, str(REPO / "tools" / "tna_recirc_budget.py"),
                         "--check", str(page)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    changed = tmp_path / "tofino.md"
    changed.write_text(page.read_text().replace("| 16 | 1600 % |", "| 16 | 1500 % |"))
    bad = subprocess.run([sys.executable, str(REPO / "tools" / "tna_recirc_budget.py"),
                          "--check", str(changed)], capture_output=True, text=True)
    assert bad.returncode == 1 and "differs" in bad.stderr
