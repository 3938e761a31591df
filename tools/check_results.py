#!/usr/bin/env python3
"""Recompute the documented result tables from the run data committed under docs/results.

A run is a folder docs/results/<run>/ with <ALGORITHM>/summary.json files (what
`make run` / mmaqm-exp writes per algorithm). For every run:

  1. each row of its committed table.txt whose algorithm has a summary (the
     comparison table and the dcbt Tables 1-2 packet accounting) is recomputed
     from the summaries with the experiment's own report code
     (mmaqm_exp.report) and must be the same row;
  2. each table row of the documentation (README.md and docs/**/*.md but the
     run data under docs/results) in a section that links the run (a row of a
     fenced block that starts with an algorithm name, or a markdown row
     "| mmaqm <ALGORITHM> | ..." of Tables 1-2) must equal a recomputed row of
     one of the runs its section links. A section runs from one '## ' or '### '
     heading to the next; a run is linked by a relative link into docs/results
     (resolved from the page's folder) or by the text docs/results/<run>/;
  3. every run folder a page links must hold the archive tools/archive_run.py
     writes (LEGACY_RUNS: older runs only reported).

Exit status 1 on any mismatch (each is printed). Rows in sections that link no
run with data are printed as "unbacked" (exit status 0: older results quoted
from table files only).

  python tools/check_results.py [--docs PAGE ...] [--results docs/results]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
from mmaqm.algorithms import ALGORITHMS as CONTROLLER_ALGORITHMS  # noqa: E402
from mmaqm_exp import report  # noqa: E402
from archive_run import (REQUIRED_ALGORITHM_FILES, REQUIRED_TOP_FILES, has_file,  # noqa: E402
                         read_text, switch_deltas_match)

ALGORITHMS = tuple(CONTROLLER_ALGORITHMS)   # every algorithm the controller knows
ACCOUNTING_TITLE = "Packet accounting at the bottleneck"
RUN_LINK = re.compile(r"docs/results/([A-Za-z0-9._-]+)/")   # a run named in text
LINK_TARGET = re.compile(r"\]\(\s*<?([^)\s>]+)>?")            # a markdown link's target
# Runs the documentation links that were committed before tools/archive_run.py existed: their
# summaries and tables are checked, but they lack the counter series, the input files and
# the recorded command and commit (the raw data is gone). Replace each by an archived
# re-run and delete it here; a listed run that is complete is an error (stale entry).
LEGACY_RUNS = {
    "dcbt-fig7-20261124": "committed 2026-11-24 before tools/archive_run.py",
}


def _norm(line: str) -> str:
    """A row's cells, whitespace-insensitive (column widths depend on the other rows)."""
    return " ".join(line.split())


@dataclass
class Run:
    name: str
    comparison: dict[str, str] = field(default_factory=dict)   # algorithm -> normalised row
    accounting: dict[str, str] = field(default_factory=dict)


def _rows(text: str) -> dict[str, str]:
    return {line.split()[0]: _norm(line) for line in text.splitlines()
            if line.split() and line.split()[0] in ALGORITHMS}


def _split_table(text: str) -> tuple[str, str]:
    """table.txt -> (comparison part, accounting part)."""
    head, _, tail = text.partition(ACCOUNTING_TITLE)
    return head, tail


def load_runs(results: Path) -> dict[str, Run]:
    runs = {}
    for d in sorted(p for p in results.iterdir() if p.is_dir()):
        summaries = {a: json.loads(read_text(d / a / "summary.json"))
                     for a in ALGORITHMS if has_file(d / a / "summary.json")}
        if not summaries:
            continue
        runs[d.name] = Run(d.name, _rows(report.comparison_table(summaries)),
                           _rows(report.packet_accounting_table(summaries)))
    return runs


def check_table_files(results: Path, runs: dict[str, Run]) -> list[str]:
    errors = []
    for name, run in runs.items():
        table = results / name / report.TABLE_FILE
        if not table.is_file():
            errors.append(f"{name}: no {report.TABLE_FILE} beside the summaries")
            continue
        comparison, accounting = (_rows(part) for part in _split_table(table.read_text()))
        for kind, committed, recomputed in (("comparison", comparison, run.comparison),
                                            ("accounting", accounting, run.accounting)):
            for algorithm, row in recomputed.items():
                if committed.get(algorithm) != row:
                    errors.append(f"{name}/{report.TABLE_FILE} {kind} row {algorithm}: committed "
                                  f"{committed.get(algorithm)!r}, recomputed {row!r}")
    return errors


def default_pages(root: Path = REPO) -> list[Path]:
    """README.md and docs/**/*.md, without the run data under docs/results."""
    docs = root / "docs"
    pages = [root / "README.md"] + sorted(p for p in docs.rglob("*.md")
                                         if (docs / "results") not in p.parents)
    return [p for p in pages if p.is_file()]


def linked_runs(text: str, page: Path, results: Path) -> list[str]:
    """The docs/results folders a page's text links, in order of appearance: the first
    folder under results of each relative link (resolved from the page's folder), and
    every docs/results/<name>/ written out. Links to files directly under results
    (docs/results/mutants.md) name no folder."""
    names = []
    base = Path(os.path.abspath(results))
    folder = Path(os.path.abspath(page)).parent
    for target in LINK_TARGET.findall(text):
        path = target.split("#", 1)[0]
        if not path or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", path):
            continue
        try:
            rel = Path(os.path.normpath(folder / path)).relative_to(base)
        except ValueError:
            continue
        if rel.parts and not (base / rel.parts[0]).is_file():
            names.append(rel.parts[0])
    names += RUN_LINK.findall(text)
    return list(dict.fromkeys(names))


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) per '## '/'### ' section."""
    parts = re.split(r"^(#{2,3} .*)$", text, flags=re.M)
    return [(parts[i].strip(), parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def _result_rows(body: str) -> list[tuple[str, str, str]]:
    """(kind, algorithm, normalised row) of the result rows of one section."""
    rows, fenced = [], False
    for line in body.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        cells = line.split()
        if fenced and cells and cells[0] in ALGORITHMS and len(cells) > 5:
            rows.append(("comparison", cells[0], _norm(line)))
        m = re.match(r"^\|\s*mmaqm\s+([A-Z_]+)\s*\|(.*)\|\s*$", line)
        if m and m.group(1) in ALGORITHMS:
            values = [c.strip().replace(" ", "") for c in m.group(2).split("|")]
            rows.append(("accounting", m.group(1), " ".join([m.group(1), *values])))
    return rows


def _pages(pages: "list[tuple[Path, str]] | str") -> list[tuple[Path, str]]:
    """(path, text) pairs; a bare text is README.md's."""
    return [(REPO / "README.md", pages)] if isinstance(pages, str) else pages


def _name(page: Path) -> str:
    return page.resolve().relative_to(REPO).as_posix() if page.resolve().is_relative_to(REPO) \
        else str(page)


def check_docs(pages: "list[tuple[Path, str]] | str", runs: dict[str, Run],
               results: Path) -> tuple[list[str], list[str], int]:
    """-> (mismatches, unbacked rows, number of documented rows checked)."""
    errors, unbacked, checked = [], [], 0
    for page, text in _pages(pages):
        for heading, body in _sections(text):
            linked = [runs[n] for n in linked_runs(body, page, results) if n in runs]
            for kind, algorithm, row in _result_rows(body):
                if not linked:
                    unbacked.append(f"{_name(page)} {heading}: {row}")
                    continue
                checked += 1
                candidates = [getattr(r, kind).get(algorithm) for r in linked]
                if row not in candidates:
                    errors.append(f"{_name(page)} {heading}: {kind} row {row!r} matches no "
                                  f"recomputed row of {[r.name for r in linked]}: "
                                  f"{[c for c in candidates if c]}")
    return errors, unbacked, checked


def missing_evidence(run_dir: Path) -> list[str]:
    """The files tools/archive_run.py writes that run_dir lacks (per algorithm that has a
    summary), and the algorithms whose counters.jsonl does not recompute the counter
    deltas of their summary.json."""
    missing = [n for n in REQUIRED_TOP_FILES if not (run_dir / n).is_file()]
    for a in ALGORITHMS:
        if not has_file(run_dir / a / "summary.json"):
            continue
        missing += [f"{a}/{n}" for n in REQUIRED_ALGORITHM_FILES if not has_file(run_dir / a / n)]
        counters = run_dir / a / "counters.jsonl"
        if has_file(counters):
            summary = json.loads(read_text(run_dir / a / "summary.json"))
            bad = switch_deltas_match(summary, [json.loads(line) for line in
                                                read_text(counters).splitlines() if line.strip()])
            missing += [f"{a}/counters.jsonl recomputing {b}" for b in bad]
    return missing


def check_evidence(pages: "list[tuple[Path, str]] | str", results: Path, runs: dict[str, Run],
                   legacy: dict[str, str] = LEGACY_RUNS) -> tuple[list[str], list[str]]:
    """Every run folder the pages link must hold the archive (tools/archive_run.py).
    -> (errors, notes on the LEGACY_RUNS that still lack files)."""
    errors, notes = [], []
    linked: dict[str, Path] = {}
    for page, text in _pages(pages):
        for name in linked_runs(text, page, results):
            linked.setdefault(name, page)
    for name, page in linked.items():
        if not (results / name).is_dir():
            errors.append(f"{_name(page)} links docs/results/{name}/, which does not exist")
            continue
        if name not in runs:
            continue                     # not a run (e.g. bench/)
        missing = missing_evidence(results / name)
        if name in legacy:
            if missing:
                notes.append(f"{name} ({legacy[name]}) lacks {', '.join(missing)}")
            else:
                errors.append(f"{name} is complete: remove it from LEGACY_RUNS")
        elif missing:
            errors.append(f"{name} lacks {', '.join(missing)} (archive runs with "
                          f"tools/archive_run.py)")
    return errors, notes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", type=Path, nargs="+",
                   help="pages to check (default: README.md and docs/**/*.md but docs/results)")
    p.add_argument("--results", type=Path, default=REPO / "docs" / "results")
    a = p.parse_args(argv)
    pages = [(page, page.read_text()) for page in (a.docs or default_pages())]
    runs = load_runs(a.results)
    errors = check_table_files(a.results, runs)
    doc_errors, unbacked, doc_checked = check_docs(pages, runs, a.results)
    errors += doc_errors
    evidence_errors, legacy_notes = check_evidence(pages, a.results, runs)
    errors += evidence_errors
    for line in legacy_notes:
        print(f"legacy run, incomplete evidence: {line}")
    for line in unbacked:
        print(f"unbacked (no run data linked in its section): {line}")
    for line in errors:
        print(f"MISMATCH {line}")
    checked = sum(len(r.comparison) + len(r.accounting) for r in runs.values())
    print(f"check-results: {len(runs)} runs, {checked} recomputed rows, {len(pages)} pages, "
          f"{doc_checked} documentation rows checked, {len(errors)} mismatches, "
          f"{len(unbacked)} unbacked documentation rows, "
          f"{len(legacy_notes)} legacy runs with incomplete evidence")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
