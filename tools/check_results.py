#!/usr/bin/env python3
"""Recompute the documented result tables from the run data committed under docs/results.

A run is a folder docs/results/<run>/ with <ALGORITHM>/summary.json files (what
`make run` / mmaqm-exp writes per algorithm; <ALGORITHM> is a controller algorithm or
a policy name of the run's policies.yaml, e.g. FAIR_SHARE, RED_50KB). Every folder
under docs/results is read: a run, one of NON_RUN_FOLDERS, or an error (as is an
algorithm folder the run does not define, a folder without a summary, and an
algorithm experiment.json lists without a folder). For every run:

  1. its committed table.txt, bandwidth_variation.txt and paper_table.txt are
     recomputed whole from the summaries with the experiment's own report code
     (mmaqm_exp.report) and must be the same text (paper_table.txt's "paper %"
     column is the paper's, not the run's: it is read back from the file); a run
     with IPv6 flows (the dual-stack experiment) must hold dual_stack.txt, recomputed
     whole the same way (mmaqm_exp.dual_stack_report), and its rows are result rows
     the documentation may quote too;
  2. each table row of the documentation (README.md and docs/**/*.md but the
     run data under docs/results) in a section that links the run (a row of a
     fenced block that starts with an algorithm name, or a markdown row
     "| mmaqm <ALGORITHM> | ..." of Tables 1-2) must equal a recomputed row of
     one of the runs its section links. A section runs from one '## ' or '### '
     heading to the next; a run is linked by a relative link into docs/results
     (resolved from the page's folder) or by the text docs/results/<run>/;
  3. every run folder must hold the archive tools/archive_run.py writes
     (LEGACY_RUNS: older runs only reported);
  4. every bench table docs/results/bench/<name>.txt must hold the tables
     bench/run_bench.py prints from <name>.json(.gz) (BENCH_LEGACY: older files
     without one of the two).

Exit status 1 on any mismatch (each is printed). Rows in sections that link no
run with data are printed as "unbacked" (exit status 0: older results quoted
from table files only).

  python tools/check_results.py [--docs PAGE ...] [--results docs/results]
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

REPO = Path(__file__).resolve().parents[1]
from mmaqm.algorithms import ALGORITHMS as CONTROLLER_ALGORITHMS  # noqa: E402
from mmaqm_exp import dual_stack_report, report  # noqa: E402
from archive_run import (REQUIRED_ALGORITHM_FILES, REQUIRED_TOP_FILES, has_file,  # noqa: E402
                         read_text, switch_deltas_match)

ALGORITHMS = tuple(CONTROLLER_ALGORITHMS)   # every algorithm the controller knows
# Folders under docs/results that are not experiment runs, and what checks them.
NON_RUN_FOLDERS = {
    "bench": "bench tables against their JSON (check_bench)",
    "fuzz": "tools/fuzz.py reports (tests/tools/test_fuzz.py)",
    "soak": "tools/soak.py reports (tests/tools/test_soak.py)",
    "tna-build": "the Tofino compiler's resource reports (tests/tools/test_tna_resources.py)",
}
# Bench files committed before the JSON held what bench/run_bench.py prints its table from,
# or printed before the JSON existed: listed, not checked.
BENCH_LEGACY = {
    "bench-20261122-234819.json": "an older JSON layout (no us_per_pkt), no table committed",
    "bench-20261123-000425.json": "no table committed beside it",
    "bench-20261123-round1-of-3.txt": "a progress log of one round, no JSON",
}
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
    summaries: dict[str, Any] = field(default_factory=dict, repr=False)
    # a dual-stack run's dual_stack.txt rows: algorithm -> normalised rows (several each)
    dual_stack: dict[str, list[str]] = field(default_factory=dict)


def _rows(text: str, names: "Iterable[str]" = ALGORITHMS) -> dict[str, str]:
    names = set(names)
    return {line.split()[0]: _norm(line) for line in text.splitlines()
            if line.split() and line.split()[0] in names}


def known_algorithms(run_dir: Path) -> set[str]:
    """The algorithm folder names a run may hold: the controller's algorithms and the
    policy names its committed policies.yaml defines."""
    names = set(ALGORITHMS)
    policies = run_dir / "policies.yaml"
    if policies.is_file():
        data = yaml.safe_load(policies.read_text()) or {}
        names |= {k for k in data if isinstance(k, str)}
    return names


def scan_results(results: Path) -> tuple[dict[str, list[str]], list[str]]:
    """-> ({run: its algorithm folders in experiment.json's order}, errors): every folder
    under results is a run or one of NON_RUN_FOLDERS; every algorithm folder of a run is
    one it defines and holds a summary; every algorithm experiment.json lists has one."""
    runs, errors = {}, []
    for d in sorted(p for p in results.iterdir() if p.is_dir()):
        if d.name in NON_RUN_FOLDERS:
            continue
        subdirs = sorted(p.name for p in d.iterdir() if p.is_dir())
        with_summary = [a for a in subdirs if has_file(d / a / "summary.json")]
        if not with_summary:
            errors.append(f"{d.name}: not a run (no <ALGORITHM>/summary.json) and not one of "
                          f"the known other folders {sorted(NON_RUN_FOLDERS)}")
            continue
        known = known_algorithms(d)
        for a in subdirs:
            if a not in known:
                errors.append(f"{d.name}/{a}: an algorithm folder the checker does not know "
                              f"(neither a controller algorithm nor a policy of the run's "
                              f"policies.yaml)")
            elif a not in with_summary:
                errors.append(f"{d.name}/{a}: no summary.json")
        order = with_summary
        meta = d / "experiment.json"
        if meta.is_file():
            listed = json.loads(meta.read_text()).get("algorithms") or []
            errors += [f"{d.name}: experiment.json lists {a}, which has no summary"
                       for a in listed if a not in with_summary]
            order = [a for a in listed if a in with_summary] + \
                [a for a in with_summary if a not in listed]
        runs[d.name] = [a for a in order if a in known]
    return runs, errors


def _split_table(text: str) -> tuple[str, str]:
    """table.txt -> (comparison part, accounting part)."""
    head, _, tail = text.partition(ACCOUNTING_TITLE)
    return head, tail


def load_runs(results: Path) -> dict[str, Run]:
    runs = {}
    for name, algorithms in scan_results(results)[0].items():
        d = results / name
        summaries = {a: json.loads(read_text(d / a / "summary.json")) for a in algorithms}
        runs[name] = Run(name, _rows(report.comparison_table(summaries), summaries),
                         _rows(report.packet_accounting_table(summaries), summaries),
                         summaries, dual_stack_rows(summaries))
    return runs


def dual_stack_rows(summaries: dict[str, Any]) -> dict[str, list[str]]:
    """{algorithm: normalised rows of the recomputed dual_stack.txt} ({} unless the run
    has IPv6 flows)."""
    if not dual_stack_report.is_dual_stack(summaries):
        return {}
    out: dict[str, list[str]] = {}
    for line in dual_stack_report.report_text(summaries).splitlines():
        cells = line.split()
        if cells and cells[0] in summaries:
            out.setdefault(cells[0], []).append(_norm(line))
    return out


def table_text(summaries: dict[str, Any]) -> str:
    """table.txt as mmaqm_exp.report.write_report writes it."""
    return (report.comparison_table(summaries) + "\nPacket accounting at the bottleneck over "
            "the run (dcbt Tables 1-2):\n" + report.packet_accounting_table(summaries)
            + report.fred_slot_lines(summaries))


PAPER_TABLE_TITLE = ("Tagged loss, TCP share, latency and RED queue limit (cbt section 4, "
                     "Table 1, Figs. 5-7):\n")


def _paper_loss_column(text: str) -> dict[str, float]:
    """paper_table.txt's "paper %" column (the paper's Table 1 values, not run data)."""
    lines = text.splitlines()
    head = next((ln for ln in lines if ln.startswith("algorithm")), "")
    cols = re.split(r"\s{2,}", head.strip())
    if "paper %" not in cols:
        return {}
    i = cols.index("paper %")
    out = {}
    for ln in lines[lines.index(head) + 1:]:
        cells = re.split(r"\s{2,}", ln.strip())
        if len(cells) > i and cells[i] != "-":
            try:
                out[cells[0]] = float(cells[i])
            except ValueError:
                pass
    return out


def _first_difference(committed: str, recomputed: str) -> str:
    for n, (a, b) in enumerate(zip(committed.splitlines(), recomputed.splitlines()), 1):
        if a != b:
            return f"line {n}: committed {_norm(a)!r}, recomputed {_norm(b)!r}"
    return (f"{len(committed.splitlines())} committed lines, "
            f"{len(recomputed.splitlines())} recomputed")


def check_table_files(results: Path, runs: dict[str, Run]) -> list[str]:
    """Each run's table.txt, bandwidth_variation.txt and paper_table.txt, recomputed whole."""
    errors = []
    for name, run in runs.items():
        d = results / name
        table = d / report.TABLE_FILE
        if not table.is_file():
            errors.append(f"{name}: no {report.TABLE_FILE} beside the summaries")
        expected = {report.TABLE_FILE: lambda: table_text(run.summaries),
                    report.BW_TABLE_FILE: lambda: report.bandwidth_variation_table(run.summaries)}
        paper = d / report.PAPER_TABLE_FILE
        if paper.is_file():
            loss = _paper_loss_column(paper.read_text())
            expected[report.PAPER_TABLE_FILE] = lambda: PAPER_TABLE_TITLE + report.paper_table(
                run.summaries, loss)
        if run.dual_stack:
            ds = dual_stack_report.OUT_TEXT
            if not (d / ds).is_file():
                errors.append(f"{name}: no {ds} beside the summaries of a run with IPv6 flows")
            expected[ds] = lambda: dual_stack_report.report_text(run.summaries)
        for fname, make in expected.items():
            if not (d / fname).is_file():
                continue
            committed, recomputed = (d / fname).read_text(), make()
            if committed != recomputed:
                errors.append(f"{name}/{fname} differs from its recomputation from the "
                              f"summaries: {_first_difference(committed, recomputed)}")
    return errors


def check_bench(results: Path) -> tuple[list[str], int]:
    """-> (errors, tables checked): each bench-*.txt must contain the tables
    bench/run_bench.py prints from the JSON of the same name (format_table, and
    format_side_by_side and format_families when it prints them); every bench file has its pair or is in
    BENCH_LEGACY."""
    bench = results / "bench"
    if not bench.is_dir():
        return [], 0
    sys.path.insert(0, str(REPO / "bench"))
    import run_bench  # noqa: E402  (bench/ is not a package)
    errors, checked = [], 0
    files = {p.name for p in bench.iterdir() if p.is_file()}
    stems = {re.sub(r"\.(json(\.gz)?|txt)$", "", f) for f in files if f.startswith("bench-")}
    # bench/callgrind_cost.py runs: callgrind-<date>-<label>.json.gz, and the page
    # callgrind-<date>.md whose tables bench/callgrind_table.py renders from them
    callgrind = {f for f in files if f.startswith("callgrind-")}
    import callgrind_table  # noqa: E402  (bench/)
    for page in sorted(f for f in callgrind if f.endswith(".md")):
        checked += 1
        text = (bench / page).read_text()
        named = {Path(spec.split("=", 1)[1]).name
                 for m in callgrind_table.MARK.finditer(text) for spec in m["runs"].split()}
        for f in sorted(named - callgrind):
            errors.append(f"bench/{page}: names a run that is not committed: {f}")
        callgrind -= named
        if not named or callgrind_table.render_page(text) != text:
            errors.append(f"bench/{page}: its tables are not the ones bench/callgrind_table.py "
                          f"renders from its runs")
    callgrind -= {f for f in callgrind if f.endswith(".md")}
    for f in sorted(callgrind):
        errors.append(f"bench/{f}: a callgrind run no callgrind-<date>.md page shows")
    for f in sorted(files - {f for f in files if f.startswith(("bench-", "callgrind-"))}):
        errors.append(f"bench/{f}: not a bench result (bench-<time>.json(.gz) / .txt, "
                      f"callgrind-<date>[-<label>.json.gz | .md])")
    for stem in sorted(stems):
        js = [f for f in (stem + ".json", stem + ".json.gz") if f in files]
        txt = stem + ".txt" if stem + ".txt" in files else None
        if not js or not txt:
            for f in js + ([txt] if txt else []):
                if f not in BENCH_LEGACY:
                    errors.append(f"bench/{f}: no {'table' if not txt else 'JSON'} beside it "
                                  f"(or list it in BENCH_LEGACY)")
            continue
        raw = (bench / js[0]).read_bytes()
        data = json.loads(gzip.decompress(raw) if js[0].endswith(".gz") else raw)
        text = (bench / txt).read_text()
        try:
            tables = [run_bench.format_table(data["summary"])]
            side = run_bench.format_side_by_side(data["summary"])
            families = run_bench.format_families(data["summary"])
        except (KeyError, TypeError) as e:
            errors.append(f"bench/{js[0]}: cannot render its table ({e!r})")
            continue
        tables += [t for t in (side, families) if t]
        for tab in tables:
            checked += 1
            if tab not in text:
                errors.append(f"bench/{txt}: does not hold the table bench/run_bench.py prints "
                              f"from {js[0]}: {_first_difference(text, tab)}")
    return errors, checked


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


def _result_rows(body: str, names: "Iterable[str]" = ALGORITHMS) -> list[tuple[str, str, str]]:
    """(kind, algorithm, normalised row) of the result rows of one section."""
    names = set(names)
    rows, fenced = [], False
    for line in body.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        cells = line.split()
        if fenced and cells and cells[0] in names and len(cells) > 5:
            rows.append(("comparison", cells[0], _norm(line)))
        m = re.match(r"^\|\s*mmaqm\s+([A-Z0-9_]+)\s*\|(.*)\|\s*$", line)
        if m and m.group(1) in names:
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
    names = set(ALGORITHMS).union(*(r.summaries for r in runs.values()))
    for page, text in _pages(pages):
        for heading, body in _sections(text):
            linked = [runs[n] for n in linked_runs(body, page, results) if n in runs]
            for kind, algorithm, row in _result_rows(body, names):
                if not linked:
                    unbacked.append(f"{_name(page)} {heading}: {row}")
                    continue
                checked += 1
                candidates = [getattr(r, kind).get(algorithm) for r in linked]
                if kind == "comparison":     # or a row of a dual-stack run's dual_stack.txt
                    candidates += [x for r in linked for x in r.dual_stack.get(algorithm, [])]
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
    for a in sorted(p.name for p in run_dir.iterdir() if p.is_dir()):
        if not has_file(run_dir / a / "summary.json"):
            continue
        missing += [f"{a}/{n}" for n in REQUIRED_ALGORITHM_FILES if not has_file(run_dir / a / n)]
        counters = run_dir / a / "counters.jsonl"
        if has_file(counters):
            bad = _counter_mismatches(_file_key(run_dir / a / "summary.json"),
                                      _file_key(counters))
            missing += [f"{a}/counters.jsonl recomputing {b}" for b in bad]
    return missing


def _file_key(path: Path) -> tuple[str, int, int]:
    """(the stored file's real path, its mtime in ns, its size): path or path.gz."""
    stored = path if path.is_file() else path.with_name(path.name + ".gz")
    st = stored.stat()
    return str(stored.resolve()), st.st_mtime_ns, st.st_size


@functools.lru_cache(maxsize=1024)
def _counter_mismatches(summary_key: tuple[str, int, int],
                        counters_key: tuple[str, int, int]) -> tuple[str, ...]:
    """switch_deltas_match of one algorithm folder, once per content: the key changes
    when either file is rewritten (tests call main() many times on the same runs)."""
    def text(key: tuple[str, int, int]) -> str:
        raw = Path(key[0]).read_bytes()
        return (gzip.decompress(raw) if key[0].endswith(".gz") else raw).decode()
    summary = json.loads(text(summary_key))
    samples = [json.loads(line) for line in text(counters_key).splitlines() if line.strip()]
    return tuple(switch_deltas_match(summary, samples))


def check_evidence(pages: "list[tuple[Path, str]] | str", results: Path, runs: dict[str, Run],
                   legacy: dict[str, str] = LEGACY_RUNS) -> tuple[list[str], list[str]]:
    """Every run folder must hold the archive (tools/archive_run.py), and every run
    folder the pages link must exist. -> (errors, notes on the LEGACY_RUNS that still
    lack files)."""
    errors, notes = [], []
    linked: dict[str, Path] = {}
    for page, text in _pages(pages):
        for name in linked_runs(text, page, results):
            linked.setdefault(name, page)
    for name, page in linked.items():
        if not (results / name).is_dir():
            errors.append(f"{_name(page)} links docs/results/{name}/, which does not exist")
    for name in runs:
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
    scanned, errors = scan_results(a.results)
    runs = load_runs(a.results)
    errors += check_table_files(a.results, runs)
    bench_errors, bench_checked = check_bench(a.results)
    errors += bench_errors
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
    print(f"check-results: {len(runs)} runs, {checked} recomputed rows, {bench_checked} bench "
          f"tables, {len(pages)} pages, "
          f"{doc_checked} documentation rows checked, {len(errors)} mismatches, "
          f"{len(unbacked)} unbacked documentation rows, "
          f"{len(legacy_notes)} legacy runs with incomplete evidence")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
