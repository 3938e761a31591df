"""bench/callgrind_table.py: the committed callgrind result page's tables are the ones its
raw runs give (nothing typed by hand), and a changed digit in a run is caught."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "bench" / "callgrind_table.py"
PAGES = sorted((REPO / "docs" / "results" / "bench").glob("callgrind-*.md"))


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True)


def test_every_committed_callgrind_page_matches_its_runs():
    assert PAGES
    for page in PAGES:
        r = run("--check", str(page))
        assert r.returncode == 0, r.stderr


def test_a_changed_digit_in_a_run_fails_the_check(tmp_path):
    page = PAGES[-1]
    text = page.read_text()
    first = text.split("callgrind_table: ", 1)[1].split()[0]      # LABEL=FILE
    label, rel = first.split("=", 1)
    run_copy = tmp_path / Path(rel).name
    data = json.loads(gzip.decompress((REPO / rel).read_bytes()))
    data["results"][1]["ir_per_packet"] += 1000
    run_copy.write_bytes(gzip.compress(json.dumps(data).encode()))
    sabotaged = tmp_path / page.name
    sabotaged.write_text(text.replace(f"{label}={rel}", f"{label}={run_copy}"))
    r = run("--check", str(sabotaged))
    assert r.returncode == 1 and "differ" in r.stderr
    shutil.rmtree(tmp_path)
