"""check_results: the README's result tables are recomputed from committed run data."""

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import check_results  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
RESULTS = REPO / "docs" / "results"
LATEST = "dcbt-fig7-20261124"


def run(capsys, readme: Path = README, results: Path = RESULTS) -> tuple[int, str]:
    rc = check_results.main(["--readme", str(readme), "--results", str(results)])
    return rc, capsys.readouterr().out


def test_the_committed_readme_and_tables_match_their_data(capsys) -> None:
    rc, out = run(capsys)
    assert rc == 0, out
    # the five-algorithm table and the two Tables 1-2 rows of "Latest results" at least
    readme_checked = int(out.split(" README rows checked")[0].rsplit(", ", 1)[1])
    assert readme_checked >= 7, out
    assert LATEST in check_results.load_runs(RESULTS)


def test_a_changed_readme_number_is_a_mismatch(tmp_path, capsys) -> None:
    text = README.read_text()
    row = next(line for line in text.splitlines() if line.startswith("DCBT_CHIPS     639"))
    changed = tmp_path / "README.md"
    changed.write_text(text.replace(row, row.replace(" 639 ", " 640 ", 1)))
    rc, out = run(capsys, readme=changed)
    assert rc == 1 and "MISMATCH README" in out and "DCBT_CHIPS" in out, out


def test_a_changed_tables_1_2_cell_is_a_mismatch(tmp_path, capsys) -> None:
    text = README.read_text()
    changed = tmp_path / "README.md"
    changed.write_text(text.replace("| mmaqm DCBT | 59 592 |", "| mmaqm DCBT | 59 593 |"))
    assert changed.read_text() != text
    rc, out = run(capsys, readme=changed)
    assert rc == 1 and "accounting row 'DCBT 59593" in out, out


def test_a_table_file_that_disagrees_with_its_summaries_is_a_mismatch(tmp_path, capsys) -> None:
    results = tmp_path / "results"
    shutil.copytree(RESULTS / LATEST, results / LATEST)
    table = results / LATEST / "table.txt"
    table.write_text(table.read_text().replace("0.990  0.976", "0.991  0.976", 1))
    rc, out = run(capsys, results=results)
    assert rc == 1 and f"{LATEST}/table.txt comparison row DCBT" in out, out


def test_a_section_without_linked_data_is_reported_unbacked(tmp_path, capsys) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("## Results\n\n```\nRED  1 2 3 4 5 6\n```\n")
    rc, out = run(capsys, readme=readme)
    assert rc == 0 and "unbacked" in out and "RED 1 2 3 4 5 6" in out, out
