#!/usr/bin/env python3
"""Run every mmaqm test and print one summary line that counts all of them.

  1. unit tests (pytest): tests/
  2. the PTF conformance suite on a real BMv2 (ptf-tests/run_ptf.py, root): on the
     all-in-one program, then each algorithm's modules on its BMv2 profile
     (run_ptf.py --profile NAME, built by tools/build_profiles.py)

Both write JUnit XML under build/test-results; the last line printed is
"TOTAL: N passed, N failed[, N skipped]". Exit status is 0 only when nothing failed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "build" / "test-results"
UNIT_DIRS = [d for d in ("tests",)
             if (REPO / d).is_dir()]


def count_junit(paths: list[Path]) -> tuple[int, int, int]:
    """(passed, failed, skipped) over JUnit XML files; errors count as failed."""
    passed = failed = skipped = 0
    for path in paths:
        root = ET.parse(path).getroot()
        for case in root.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    return passed, failed, skipped


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unit-only", action="store_true")
    parser.add_argument("--ptf-only", action="store_true")
    parser.add_argument("--ptf-test", action="append", default=[], help="one PTF test")
    parser.add_argument("--no-profiles", action="store_true",
                        help="the PTF suite on the all-in-one program only")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    for old in RESULTS.rglob("*.xml"):
        old.unlink()

    totals = [0, 0, 0]
    broken = []
    if not args.ptf_only:
        started = time.monotonic()
        xml = RESULTS / "unit.xml"
        rc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             f"--junitxml={xml}", *UNIT_DIRS], cwd=REPO).returncode
        if rc not in (0, 1) or not xml.exists():
            broken.append(f"pytest exited {rc}")
        else:
            totals = [a + b for a, b in zip(totals, count_junit([xml]))]
        print(f"unit tests: {time.monotonic() - started:.0f} s")
    if not args.unit_only:
        started = time.monotonic()
        xdir = RESULTS / "ptf"
        rc = subprocess.run([sys.executable, str(REPO / "ptf-tests" / "run_ptf.py"),
                             "--xunit-dir", str(xdir), *args.ptf_test], cwd=REPO).returncode
        files = sorted(xdir.glob("*.xml")) if xdir.exists() else []
        if not files:
            broken.append(f"PTF produced no results (exit {rc})")
        else:
            counts = count_junit(files)
            totals = [a + b for a, b in zip(totals, counts)]
            if rc != 0 and counts[1] == 0:
                broken.append(f"PTF exited {rc}")
        print(f"PTF suite: {time.monotonic() - started:.0f} s")
    if not args.unit_only and not args.ptf_test and not args.no_profiles:
        started = time.monotonic()
        sys.path.insert(0, str(REPO / "ptf-tests" / "tests"))
        import mmaqm_profiles
        rc = subprocess.run([sys.executable, str(REPO / "tools" / "build_profiles.py")],
                            cwd=REPO).returncode
        if rc != 0:
            broken.append(f"tools/build_profiles.py exited {rc}")
        for profile in mmaqm_profiles.TESTS if rc == 0 else ():
            xdir = RESULTS / f"ptf-{profile.lower()}"
            rc_p = subprocess.run([sys.executable, str(REPO / "ptf-tests" / "run_ptf.py"),
                                   "--profile", profile, "--xunit-dir", str(xdir),
                                   "--log-dir", str(REPO / "build" / f"ptf-{profile.lower()}")],
                                  cwd=REPO).returncode
            files = sorted(xdir.glob("*.xml")) if xdir.exists() else []
            if not files:
                broken.append(f"PTF on profile {profile} produced no results (exit {rc_p})")
                continue
            counts = count_junit(files)
            totals = [a + b for a, b in zip(totals, counts)]
            if rc_p != 0 and counts[1] == 0:
                broken.append(f"PTF on profile {profile} exited {rc_p}")
        print(f"PTF on the profiles: {time.monotonic() - started:.0f} s")

    passed, failed, skipped = totals
    failed += len(broken)
    for why in broken:
        print(f"run_tests: {why}", file=sys.stderr)
    line = f"TOTAL: {passed} passed, {failed} failed"
    print(line + (f", {skipped} skipped" if skipped else ""))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
