"""check_results: the documented result tables are recomputed from committed run data."""

import json
import shutil
from pathlib import Path

import check_results  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "docs" / "results"
DCBT_PAGE = REPO / "docs" / "experiments" / "dcbt.md"   # holds the D-CBT run's tables
LATEST = "dcbt-fig7-20261124-2117"


def run(capsys, pages: "list[Path] | None" = None, results: Path = RESULTS) -> tuple[int, str]:
    args = ["--results", str(results)] + (["--docs", *map(str, pages)] if pages else [])
    rc = check_results.main(args)
    return rc, capsys.readouterr().out


def _checked(out: str) -> int:
    return int(out.split(" documentation rows checked")[0].rsplit(", ", 1)[1])


def _edited_copy(tmp_path: Path, old: str, new: str) -> tuple[Path, Path]:
    """(docs/experiments/dcbt.md with one edit, its results folder): the copy sits at the
    same depth in a tree whose docs/results is the committed data, so its relative run
    links resolve as they do in the repository."""
    page = tmp_path / "docs" / "experiments" / "dcbt.md"
    page.parent.mkdir(parents=True)
    results = tmp_path / "docs" / "results"
    results.symlink_to(RESULTS)
    text = DCBT_PAGE.read_text()
    assert old in text, old
    page.write_text(text.replace(old, new, 1))
    return page, results


def test_the_committed_docs_and_tables_match_their_data(capsys) -> None:
    rc, out = run(capsys)
    assert rc == 0, out
    # every table the README held before the docs were split: 43 rows
    assert _checked(out) >= 43, out
    assert LATEST in check_results.load_runs(RESULTS)


def test_the_tables_live_on_the_experiment_pages(capsys) -> None:
    rc, out = run(capsys, pages=[DCBT_PAGE])
    assert rc == 0 and _checked(out) >= 7, out     # the five-algorithm table and Tables 1-2
    rc, out = run(capsys, pages=[REPO / "README.md"])
    assert rc == 0 and _checked(out) == 0, out


def test_a_changed_documented_number_is_a_mismatch(tmp_path, capsys) -> None:
    row = next(line for line in DCBT_PAGE.read_text().splitlines()
               if line.startswith("DCBT_CHIPS     659"))
    page, results = _edited_copy(tmp_path, row, row.replace(" 659 ", " 660 ", 1))
    rc, out = run(capsys, pages=[page], results=results)
    assert rc == 1 and "MISMATCH" in out and "DCBT_CHIPS" in out, out
    assert "Five algorithms" in out, out


def test_a_changed_tables_1_2_cell_is_a_mismatch(tmp_path, capsys) -> None:
    page, results = _edited_copy(tmp_path, "| mmaqm DCBT | 62 326 |", "| mmaqm DCBT | 62 327 |")
    rc, out = run(capsys, pages=[page], results=results)
    assert rc == 1 and "accounting row 'DCBT 62327" in out, out


def test_a_table_file_that_disagrees_with_its_summaries_is_a_mismatch(tmp_path, capsys) -> None:
    results = tmp_path / "results"
    shutil.copytree(RESULTS / LATEST, results / LATEST)
    table = results / LATEST / "table.txt"
    table.write_text(table.read_text().replace("0.993  0.987", "0.994  0.987", 1))
    rc, out = run(capsys, results=results)
    assert rc == 1 and f"{LATEST}/table.txt differs from its recomputation" in out, out
    assert "0.994 0.987" in out, out


def test_a_section_without_linked_data_is_reported_unbacked(tmp_path, capsys) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("## Results\n\n```\nRED  1 2 3 4 5 6\n```\n")
    rc, out = run(capsys, pages=[readme])
    assert rc == 0 and "unbacked" in out and "RED 1 2 3 4 5 6" in out, out


def test_runs_are_linked_relative_to_their_page(tmp_path) -> None:
    results = tmp_path / "docs" / "results"
    for name in ("a", "b", "c"):
        (results / name).mkdir(parents=True)
    (results / "notes.md").write_text("x")
    page = tmp_path / "docs" / "experiments" / "p.md"
    text = ("[a](../results/a/) [b table](../results/b/table.txt#x) [notes](../results/notes.md) "
            "[elsewhere](../../other/c/) `docs/results/c/` [web](https://example.org/results/x/)")
    assert check_results.linked_runs(text, page, results) == ["a", "b", "c"]


# ------------------------------------------------------------ the evidence of linked runs
def _complete_run(results: Path, name: str = "new-run") -> Path:
    """A run folder with every file tools/archive_run.py writes; its counters (one TCP
    arrival per 100 ms at r1 port 4) recompute its summary's deltas."""
    from types import SimpleNamespace

    from mmaqm_exp import analysis

    d = results / name
    (d / "RED").mkdir(parents=True)
    for f in check_results.REQUIRED_TOP_FILES:
        (d / f).write_text("x\n")
    t0 = 1_700_000_000_000_000_000
    counters = [{"t_ns": t0 + i * 100_000_000, "switch": "r1", "readings": [
        {"port": 4, "class": "TCP", "arrivals": {"packets": i}}]} for i in range(-5, 25)]
    phases = [{"name": "a", "start_s": 0, "end_s": 2}]
    sc = SimpleNamespace(duration_s=2, phases=[SimpleNamespace(**p) for p in phases])
    summary = {"t0_ns": t0, "scenario": {"duration_s": 2, "phases": phases},
               "switch": analysis.switch_metrics(counters, t0, sc, ("r1", 4))}
    (d / "RED" / "summary.json").write_text(json.dumps(summary))
    (d / "RED" / "flows.csv").write_text("x\n")
    (d / "RED" / "counters.jsonl").write_text("".join(json.dumps(c) + "\n" for c in counters))
    return d


def test_a_linked_run_must_hold_its_evidence(tmp_path) -> None:
    results = tmp_path / "results"
    d = _complete_run(results)
    (results / "bench").mkdir()
    runs = {"new-run": check_results.Run("new-run")}
    readme = "see docs/results/new-run/ and docs/results/bench/ and docs/results/new-run/table.txt"
    assert check_results.check_evidence(readme, results, runs, legacy={}) == ([], [])
    # the same runs linked from a page below docs/, relative to it
    page = results.parent / "experiments" / "p.md"
    linked = [(page, "[run](../results/new-run/) [bench](../results/bench/x.txt)")]
    assert check_results.check_evidence(linked, results, runs, legacy={}) == ([], [])
    (d / "RED" / "counters.jsonl").unlink()
    (d / "COMMAND.txt").unlink()
    errors, _ = check_results.check_evidence(readme, results, runs, legacy={})
    assert errors == ["new-run lacks COMMAND.txt, RED/counters.jsonl (archive runs with "
                      "tools/archive_run.py)"]
    # a legacy run only gets a note; a legacy entry for a complete run is stale
    errors, notes = check_results.check_evidence(readme, results, runs, legacy={"new-run": "old"})
    assert errors == [] and notes == ["new-run (old) lacks COMMAND.txt, RED/counters.jsonl"]
    _complete_run(results, "done")
    errors, _ = check_results.check_evidence("docs/results/done/ docs/results/gone/", results,
                                             {"done": check_results.Run("done")},
                                             legacy={"done": "old"})
    assert errors == ["README.md links docs/results/gone/, which does not exist",
                      "done is complete: remove it from LEGACY_RUNS"]


def test_counters_that_do_not_back_the_summary_are_an_error(tmp_path) -> None:
    d = _complete_run(tmp_path)
    summary = json.loads((d / "RED" / "summary.json").read_text())
    summary["switch"]["ports"]["r1:4"]["run"]["TCP"]["arrivals"] += 1
    (d / "RED" / "summary.json").write_text(json.dumps(summary))
    assert check_results.missing_evidence(d) == ["RED/counters.jsonl recomputing r1:4 run"]


def test_the_legacy_list_names_only_linked_runs_that_are_still_incomplete() -> None:
    linked = {n for page in check_results.default_pages()
              for n in check_results.linked_runs(page.read_text(), page, RESULTS)}
    for name in check_results.LEGACY_RUNS:
        assert name in linked, f"{name}: no longer linked from the docs; drop it from LEGACY_RUNS"
        assert check_results.missing_evidence(RESULTS / name), name


# ------------------------------------------------------------ a dual-stack run's table
def _dual_stack_copy(results: Path) -> Path:
    """The latest D-CBT run copied, its even flows made IPv6: a run with IPv6 flows,
    which must hold dual_stack.txt (mmaqm_exp.dual_stack_report)."""
    from archive_run import read_text

    d = results / LATEST
    shutil.copytree(RESULTS / LATEST, d)
    for a in check_results.scan_results(results)[0][LATEST]:
        path = d / a / "summary.json"
        stored = path if path.exists() else path.with_name("summary.json.gz")
        summary = json.loads(read_text(path))
        for fid, f in summary["flows"].items():
            f["family"] = "ipv6" if int(fid) % 2 == 0 else "ipv4"
        stored.unlink()
        path.write_text(json.dumps(summary))
    return d


def test_a_dual_stack_run_needs_its_table_recomputed_whole(tmp_path, capsys) -> None:
    from mmaqm_exp import dual_stack_report as D

    results = tmp_path / "docs" / "results"
    d = _dual_stack_copy(results)
    runs = check_results.load_runs(results)
    assert runs[LATEST].dual_stack["DCBT"]           # rows of both families
    errors = check_results.check_table_files(results, runs)
    assert errors == [f"{LATEST}: no dual_stack.txt beside the summaries of a run with IPv6 "
                      "flows"], errors
    summaries = runs[LATEST].summaries
    (d / D.OUT_TEXT).write_text(D.report_text(summaries))
    assert check_results.check_table_files(results, runs) == []
    row = next(line for line in (d / D.OUT_TEXT).read_text().splitlines()
               if line.startswith("DCBT") and " ipv6 " in line and " TCP " in line)
    # a documentation row quoting it, in a section that links the run, is checked
    page = tmp_path / "docs" / "experiments" / "dual-stack.md"
    page.parent.mkdir(parents=True)
    page.write_text(f"## Run\n\n[run](../results/{LATEST}/)\n\n```\n{row}\n```\n")
    rc, out = run(capsys, pages=[page], results=results)
    assert rc == 0 and _checked(out) == 1, out
    cells = row.split()
    cells[4] = str(int(cells[4]) + 1)                # the family's kbit/s, one more
    page.write_text(page.read_text().replace(row, "  ".join(cells)))
    rc, out = run(capsys, pages=[page], results=results)
    assert rc == 1 and "matches no recomputed row" in out, out
    # the table file itself, one digit changed
    text = (d / D.OUT_TEXT).read_text()
    (d / D.OUT_TEXT).write_text(text.replace(row, row.replace(cells[3], cells[3] + "0", 1), 1))
    assert any("dual_stack.txt differs" in e
               for e in check_results.check_table_files(results, runs))
