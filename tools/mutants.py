#!/usr/bin/env python3
"""Mutation runner: does each test fail when the rule it guards is broken?

Every mutant in tools/mutants.yaml replaces one exact snippet (which must
occur exactly once in its file) with a broken version of a rule, in a fresh
copy of the working tree. The copy's program is compiled (p4c errors only,
no warning gate: a mutant may leave a parameter unused), then the mutant's
listed tests run against it: PTF tests on a real
BMv2 (ptf-tests/run_ptf.py in its own namespace) and unit tests (pytest). A
mutant is CAUGHT when at least one of its tests fails, SURVIVED when all
pass, INCONCLUSIVE when none fails but one skipped (a test that skipped, e.g.
on a missed timing precondition, judged nothing), INVALID when it does not
build or its tests did not run. The same tests first run on the
unmutated copy; a failing baseline stops the run (a test that already fails
judges nothing).

  tools/mutants.py                 every mutant; writes docs/results/mutants.md
  tools/mutants.py --only ID[,ID]  some mutants (no report file unless --out)
  tools/mutants.py --list          the list, nothing run

Needs root and the P4 toolchain (as `make test-ptf`). Exit 0 when every
mutant run was caught.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
MUTANTS_YAML = REPO / "tools" / "mutants.yaml"
DEFAULT_OUT = REPO / "docs" / "results" / "mutants.md"
# The mutated copy of the tree, which root builds and runs: <private dir>/tree. The
# private directory is a fresh mkdtemp one, or $MMAQM_MUTANT_DIR if it is (or can be
# made) a 0700 directory of this user (mmaqm_exp.private_dir): never a fixed /tmp path.
ENV_WORK_DIR = "MMAQM_MUTANT_DIR"
WORK = Path("/nonexistent-mmaqm-mutant")      # set by use_private_work_dir()


def use_private_work_dir() -> Path:
    """Point WORK at <a private directory>/tree and return the private directory."""
    global WORK
    from mmaqm_exp.private_dir import private_dir
    given = os.environ.get(ENV_WORK_DIR)
    root = private_dir(Path(given) if given else None, prefix="mmaqm-mutant-")
    WORK = root / "tree"
    return root
NETNS = os.environ.get("MMAQM_MUTANT_NETNS", "mmaqm-mutant")   # one per concurrent runner
TEST_TIMEOUT_S = 900


@dataclass(frozen=True)
class Mutant:
    id: str
    rule: str
    file: str
    find: str
    replace: str
    tests: tuple[str, ...]     # "ptf:test_red.RedForcedDropTest" or "unit:tests/controller/x.py::t"


def load_mutants(path: Path = MUTANTS_YAML) -> list[Mutant]:
    raw = yaml.safe_load(path.read_text())
    mutants, seen = [], set()
    for i, item in enumerate(raw):
        m = Mutant(id=item["id"], rule=item["rule"], file=item["file"], find=item["find"],
                   replace=item["replace"], tests=tuple(item["tests"]))
        if m.id in seen:
            raise ValueError(f"{path}: mutant {i}: duplicate id {m.id}")
        seen.add(m.id)
        bad = [t for t in m.tests if not t.startswith(("ptf:", "unit:"))]
        if not m.tests or bad:
            raise ValueError(f"{path}: mutant {m.id}: tests must be ptf:... or unit:..., got {bad}")
        text = (REPO / m.file).read_text()
        if text.count(m.find) != 1:
            raise ValueError(f"{path}: mutant {m.id}: the snippet occurs {text.count(m.find)} "
                             f"times in {m.file} (must be exactly once): {m.find!r}")
        mutants.append(m)
    return mutants


def fresh_copy() -> None:
    """WORK = the tracked and untracked-not-ignored files of the working tree."""
    if WORK.exists():
        shutil.rmtree(WORK)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = REPO / name
        if src.is_file():
            dst = WORK / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)


def env() -> dict[str, str]:
    # The copy's packages (the product, the test oracle, the experiment tooling) before
    # the editable installs of the main venv.
    return dict(os.environ, PYTHONPATH=f"{WORK / 'control-plane'}:{WORK / 'oracle'}:"
                                       f"{WORK / 'topologies'}",
                MMAQM_PTF_NETNS=NETNS)


def build(log: Path) -> bool:
    """Compile the copy's program into its build/ (p4c errors only: a mutant may leave a
    parameter unused, which `make build`'s warning-free rule would reject)."""
    (WORK / "build").mkdir(exist_ok=True)
    with open(log, "w") as out:
        return subprocess.run(
            ["p4c-bm2-ss", "--arch", "v1model", "--std", "p4-16",
             "-o", str(WORK / "build" / "main.json"),
             "--p4runtime-files", str(WORK / "build" / "main.p4info.txtpb"),
             str(WORK / "p4src" / "v1model" / "main.p4")],
            stdout=out, stderr=subprocess.STDOUT, env=env()).returncode == 0


class RunError(Exception):
    """The tests could not judge the mutant (a run that did not happen)."""


def verdict_of(failed: list[str], skipped: list[str]) -> tuple[str, str]:
    """(verdict, detail) of a mutant whose tests ran: any failure catches it; a skip
    without a failure judges nothing."""
    if failed:
        return "CAUGHT", ", ".join(failed)
    if skipped:
        return "INCONCLUSIVE", "skipped: " + ", ".join(skipped)
    return "SURVIVED", ""


def run_tests(tests: tuple[str, ...], log_dir: Path,
              skipped: list[str] | None = None) -> tuple[bool, list[str]]:
    """(all passed, the failed tests); RunError when PTF did not run every test.
    The PTF tests that skipped are appended to `skipped` when it is given."""
    failed: list[str] = []
    ptf = [t[4:] for t in tests if t.startswith("ptf:")]
    unit = [t[5:] for t in tests if t.startswith("unit:")]
    if unit:
        with open(log_dir / "unit.log", "w") as out:
            rc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                 *unit], cwd=WORK, env=env(), stdout=out,
                                stderr=subprocess.STDOUT, timeout=TEST_TIMEOUT_S).returncode
        if rc != 0:
            failed.append("unit")
    if ptf:
        xunit = log_dir / "xunit"
        shutil.rmtree(xunit, ignore_errors=True)
        with open(log_dir / "ptf.log", "w") as out:
            subprocess.run([sys.executable, str(WORK / "ptf-tests" / "run_ptf.py"),
                            "--xunit-dir", str(xunit), "--log-dir", str(log_dir / "bmv2"), *ptf],
                           cwd=WORK, env=env(), stdout=out, stderr=subprocess.STDOUT,
                           timeout=TEST_TIMEOUT_S)
        cases = [c for f in sorted(xunit.glob("*.xml")) for c in ET.parse(f).getroot().iter("testcase")]
        if len(cases) != len(ptf):
            raise RunError(f"ptf ran {len(cases)} of {len(ptf)} tests; see {log_dir}")
        failed += [f"{c.get('classname', '?')}" for c in cases
                   if c.find("failure") is not None or c.find("error") is not None]
        if skipped is not None:
            skipped += [f"{c.get('classname', '?')}" for c in cases
                        if c.find("skipped") is not None]
    return not failed, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated mutant ids")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--out", type=Path, help=f"report file [{DEFAULT_OUT} for a full run]")
    args = parser.parse_args()
    try:
        mutants = load_mutants()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"mutants: {exc}", file=sys.stderr)
        return 2
    if args.only:
        wanted = args.only.split(",")
        unknown = sorted(set(wanted) - {m.id for m in mutants})
        if unknown:
            print(f"mutants: unknown ids {unknown}", file=sys.stderr)
            return 2
        mutants = [m for m in mutants if m.id in wanted]
    if args.list:
        for m in mutants:
            print(f"{m.id:28} {m.file}: {m.rule}")
        return 0
    if os.geteuid() != 0:
        print("mutants: needs root (PTF on BMv2)", file=sys.stderr)
        return 2
    out = args.out or (None if args.only else DEFAULT_OUT)
    try:
        work_root = use_private_work_dir()
    except OSError as exc:
        print(f"mutants: ${ENV_WORK_DIR}: {exc}", file=sys.stderr)
        return 2
    if not os.environ.get(ENV_WORK_DIR):            # our own mkdtemp: removed at exit
        atexit.register(shutil.rmtree, work_root, ignore_errors=True)
    print(f"mutants: working copy in {WORK}", file=sys.stderr)
    logs = REPO / "build" / "mutants"
    logs.mkdir(parents=True, exist_ok=True)

    fresh_copy()
    if not build(logs / "baseline-build.log"):
        print(f"mutants: the unmutated tree does not build; see {logs}", file=sys.stderr)
        return 2
    all_tests = tuple(dict.fromkeys(t for m in mutants for t in m.tests))
    (logs / "baseline").mkdir(exist_ok=True)
    try:
        ok, failed = run_tests(all_tests, logs / "baseline")
    except RunError as exc:
        ok, failed = False, [str(exc)]
    if not ok:
        print(f"mutants: the baseline fails {failed}; see {logs / 'baseline'}", file=sys.stderr)
        return 2
    print(f"baseline: {len(all_tests)} tests pass", flush=True)

    rows = []
    for m in mutants:
        started = time.monotonic()
        fresh_copy()
        path = WORK / m.file
        path.write_text(path.read_text().replace(m.find, m.replace, 1))
        mlog = logs / m.id
        mlog.mkdir(exist_ok=True)
        if not build(mlog / "build.log"):
            verdict, detail = "INVALID", "does not build"
        else:
            try:
                skips: list[str] = []
                _, failed = run_tests(m.tests, mlog, skips)
                verdict, detail = verdict_of(failed, skips)
            except RunError as exc:
                verdict, detail = "INVALID", str(exc)
        seconds = time.monotonic() - started
        rows.append((m, verdict, detail))
        print(f"{m.id:28} {verdict:8} {seconds:5.0f} s  {detail}", flush=True)

    caught = sum(1 for _, v, _ in rows if v == "CAUGHT")
    summary = f"{caught} of {len(rows)} mutants caught"
    print(summary)
    if out is not None:
        lines = [f"# Mutation run ({time.strftime('%Y-%m-%d')}): {summary}", "",
                 "`tools/mutants.py` output: each mutant breaks one rule; its tests must fail.", "",
                 "| mutant | file | rule | verdict | failing tests |", "|---|---|---|---|---|"]
        lines += [f"| {m.id} | {m.file} | {m.rule} | {v} | {d} |" for m, v, d in rows]
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(lines) + "\n")
        print(f"report: {out}")
    return 0 if caught == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
