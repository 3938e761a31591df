"""tna_resources: the Tofino resource table from bf-p4c's resources.json / metrics.json.

The fixture under fixtures/tna is hand-written from the schemas of p4c's
backends/tofino/compiler_interfaces/schemas (resources_schema.py, metrics_schema.py);
docs/tofino.md says when it was last checked against real compiler output.
"""

import copy
import json
import shutil
import sys
from pathlib import Path

import pytest

import tna_resources  # noqa: E402

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "tna"


def test_a_compiled_variant_sums_its_stages() -> None:
    row = tna_resources.summarize_variant(FIXTURE / "red")
    assert row["compiled"]
    assert row["stages"] == 4 and row["stages_available"] == 12  # stage 4 has no table
    assert row["srams"] == 6          # 4 + 1 + 1
    assert row["tcams"] == 6
    assert row["map_rams"] == 1
    assert row["salus"] == 1
    assert row["hash_bits"] == 16
    assert row["hash_units"] == 1
    assert row["logical_tables"] == 5
    assert row["phv_containers"] == 28 and row["phv_bits"] == 540
    assert row["phv_by_width"] == {8: 10, 16: 6, 32: 12}


def test_a_variant_without_the_assemblers_binary_does_not_fit(tmp_path) -> None:
    shutil.copytree(FIXTURE / "red", tmp_path / "red")
    (tmp_path / "red" / "pipe" / "tofino.bin").unlink()
    row = tna_resources.summarize_variant(tmp_path / "red")
    assert row["compiled"] and not row["fits"]
    assert "| red | 4 / 12 (does not fit) |" in tna_resources.markdown([row])
    assert tna_resources.main([str(tmp_path)]) == 1


def test_without_metrics_json_the_phv_comes_from_phv_json(tmp_path) -> None:
    shutil.copytree(FIXTURE / "red", tmp_path / "red")
    (tmp_path / "red" / "pipe" / "logs" / "metrics.json").unlink()
    slices = lambda *widths: [{"slice_info": {"lsb": 0, "msb": w - 1}} for w in widths]
    (tmp_path / "red" / "pipe" / "logs" / "phv.json").write_text(json.dumps({"containers": [
        {"bit_width": 32, "slices": slices(16, 12)},
        {"bit_width": 8, "slices": slices(8)},
        {"bit_width": 32, "slices": slices(32)}]}))
    row = tna_resources.summarize_variant(tmp_path / "red")
    assert row["phv_containers"] == 3 and row["phv_bits"] == 68
    assert row["phv_by_width"] == {8: 1, 32: 2}


def test_a_variant_without_resources_json_is_not_compiled() -> None:
    assert tna_resources.summarize_variant(FIXTURE / "fred") == {"variant": "fred", "compiled": False}


def test_the_table_has_a_row_per_variant_and_fails_when_one_did_not_compile(tmp_path, capsys) -> None:
    out = tmp_path / "tna"
    shutil.copytree(FIXTURE, out)
    assert tna_resources.main(["--write", str(out)]) == 1  # fred did not compile
    table = capsys.readouterr().out
    assert "| red | 4 / 12 | 6 | 1 | 6 | 1 | 16 | 1 | 5 | 28 | 540 |" in table
    assert "| fred | not compiled |" in table
    assert (out / "resources.md").read_text() == table
    assert [r["variant"] for r in json.loads((out / "resources.json").read_text())] == ["fred", "red"]
    shutil.rmtree(out / "fred")
    assert tna_resources.main([str(out)]) == 0


def test_metrics_totals_that_disagree_with_the_stages_are_an_error(tmp_path) -> None:
    out = tmp_path / "red"
    shutil.copytree(FIXTURE / "red", out)
    metrics_file = out / "pipe" / "logs" / "metrics.json"
    metrics = json.loads(metrics_file.read_text())
    metrics["mau"]["srams"] = 7
    metrics_file.write_text(json.dumps(metrics))
    with pytest.raises(tna_resources.ReportError, match="srams 6"):
        tna_resources.summarize_variant(out)


def test_a_resources_json_without_the_mau_section_is_an_error() -> None:
    doc = json.loads((FIXTURE / "red" / "pipe" / "logs" / "resources.json").read_text())
    broken = copy.deepcopy(doc)
    del broken["resources"]["mau"]
    with pytest.raises(tna_resources.ReportError):
        tna_resources.summarize_resources(broken)


def test_the_readme_status_table_quotes_the_resource_tables_stages() -> None:
    """README's 'Tofino 1' column (N of 12) is the stage count of docs/tofino.md's
    resource table (the compiler's figures, tna_resources.py) for every variant."""
    import re
    repo = Path(__file__).resolve().parents[2]
    tofino = (repo / "docs" / "tofino.md").read_text()
    header = tofino.index("| algorithm | MAU stages used |")
    stages = {m.group(1): int(m.group(2)) for m in re.finditer(
        r"^\| (\w+) \| (\d+) / 12 \|", tofino[header:].split("\n\n")[0], re.M)}
    assert len(stages) == 9, stages
    quoted = {}
    for line in (repo / "README.md").read_text().splitlines():
        m = re.match(r"^\| \[(\w+)\]\(docs/algorithms/[\w-]+\.md\)[^|]*\| yes \| [^|]*?(\d+) of 12",
                     line)
        if m:
            quoted[m.group(1).lower()] = int(m.group(2))
    assert quoted and all(stages[v] == n for v, n in quoted.items()), (quoted, stages)
    assert set(quoted) == set(stages), set(stages) ^ set(quoted)


def test_the_docs_resource_table_is_the_committed_builds() -> None:
    """docs/tofino.md's resource table, recomputed from the compiler's reports of
    every variant kept in docs/results/tna-build (tna_resources.py --evidence)."""
    repo = Path(__file__).resolve().parents[2]
    evidence = repo / "docs" / "results" / "tna-build"
    rows = tna_resources.summarize(evidence)
    assert len(rows) == 9 and all(r["compiled"] and r["fits"] for r in rows), rows
    table = tna_resources.markdown(rows)
    assert table in (repo / "docs" / "tofino.md").read_text()


def test_the_evidence_form_reads_as_the_build(tmp_path) -> None:
    """--evidence keeps what the row needs: the fixture's row is the same from it."""
    tna_resources.write_evidence(FIXTURE, tmp_path)
    for name in ("red",):
        assert tna_resources.summarize_variant(tmp_path / name) == \
            tna_resources.summarize_variant(FIXTURE / name)
