"""One changed digit in a committed result of any family fails `make check-results`.

For each family of committed results (dcbt, cbt, mcdt, feng, upta runs under
docs/results, and the bench tables) one number of one summary (or bench JSON) is
changed by one digit in a temporary copy of the docs; tools/check_results.py and
tools/paper_compare.py run on the copy exactly as `make check-results` runs them on the
repository, and at least one of them must fail. `make test` runs this file (tests/ is
the unit-test root, tools/run_tests.py).
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import check_results
import paper_compare

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "docs" / "results"

# family -> (file under docs/results, path of keys/indices to one number in it). Each
# is an algorithm folder the checker once skipped or a number a committed table shows.
SABOTAGE = {
    "dcbt": ("dcbt-fig7-20261124-2117/DCBT/summary.json",
             ("phases", "blast", "class_avg_per_flow_kbps", "TCP")),
    "cbt": ("cbt-fig4-20261125-all/FRED/summary.json",
            ("run", "udp_class", "TAGGED", "loss")),
    "mcdt": ("mcdt-s3-20261125/MCDT/summary.json",
             ("phases", "mm30", "class_avg_per_flow_kbps", "TCP")),
    "feng": ("feng-fig2-20261124/RED_50KB/summary.json",
             ("phases", "tcp", "class_avg_per_flow_kbps", "TCP")),
    "upta": ("upta-s6-20261125/FAIR_SHARE/summary.json",      # the audit's TCP 812.646
             ("phases", "bg-on1", "class_avg_per_flow_kbps", "TCP")),
    "tag": ("tag-guard-20261127-t1-r1/DCBT_GUARD_T1/summary.json",     # the tag guard's runs
            ("phases", "abuser-8x", "class_avg_per_flow_kbps", "TCP")),
    "dual": ("dual-stack-20261127-r1/DCBT/summary.json",     # flow 4: IPv6 TCP
             ("run", "per_flow_kbps", "4")),
    "bench": ("bench/bench-20261127-002546.json", ("summary", 1, "pps_median")),
}


def _stored(path: Path) -> Path:
    """path, or its .gz (tools/archive_run.py compresses large files)."""
    return path if path.exists() else path.with_name(path.name + ".gz")


def _read(path: Path) -> Any:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def _write(path: Path, data: Any) -> None:
    raw = json.dumps(data, indent=1).encode()
    path.write_bytes(gzip.compress(raw) if path.suffix == ".gz" else raw)


def _one_digit_changed(v: float) -> float:
    """v with its first non-zero digit moved by one (812.646 -> 912.646)."""
    text = repr(v)
    i = next(i for i, c in enumerate(text) if c in "123456789")
    new = text[:i] + str((int(text[i]) % 9) + 1) + text[i + 1:]
    return type(v)(new) if isinstance(v, int) else float(new)


def _copy_docs(tmp: Path, *sabotaged_folders: str) -> tuple[list[Path], Path]:
    """README.md and docs/**/*.md copied to tmp; docs/results as links to the committed
    folders, but sabotaged_folders copied (they will be edited)."""
    pages = []
    for page in check_results.default_pages():
        dst = tmp / page.relative_to(REPO)
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(page.read_text())
        pages.append(dst)
    results = tmp / "docs" / "results"
    results.mkdir(parents=True, exist_ok=True)
    for item in RESULTS.iterdir():
        if item.name in sabotaged_folders:
            (shutil.copytree if item.is_dir() else shutil.copy)(item, results / item.name)
        else:
            (results / item.name).symlink_to(item)
    return pages, results


def _check(pages: list[Path], results: Path, capsys) -> tuple[int, int, str]:
    rc1 = check_results.main(["--results", str(results), "--docs", *map(str, pages)])
    rc2 = paper_compare.main(["--results", str(results), "--pages", *map(str, pages)])
    cap = capsys.readouterr()
    return rc1, rc2, cap.out + cap.err


def test_the_unmodified_copy_passes(tmp_path: Path, capsys) -> None:
    """The copy the sabotage edits passes as it is, every sabotaged folder copied (not
    linked): what each family's test below changes is then the only difference. Once for
    all families: each full check takes several seconds."""
    pages, results = _copy_docs(tmp_path, *{rel.split("/")[0] for rel, _ in SABOTAGE.values()})
    rc1, rc2, out = _check(pages, results, capsys)
    assert (rc1, rc2) == (0, 0), f"the unmodified copy must pass:\n{out}"


@pytest.mark.parametrize("family", sorted(SABOTAGE))
def test_one_changed_digit_fails_the_check(family: str, tmp_path: Path, capsys) -> None:
    rel, keys = SABOTAGE[family]
    folder = rel.split("/")[0]
    pages, results = _copy_docs(tmp_path, folder)

    target = _stored(results / rel)
    data = _read(target)
    node = data
    for k in keys[:-1]:
        node = node[k]
    before = node[keys[-1]]
    assert isinstance(before, (int, float)) and before, (family, before)
    node[keys[-1]] = _one_digit_changed(before)
    _write(target, data)

    rc1, rc2, out = _check(pages, results, capsys)
    assert rc1 == 1 or rc2 == 1, f"{family}: {before} -> {node[keys[-1]]} in {rel} passed:\n{out}"
    assert folder in out, out


def test_the_sabotage_covers_every_family_of_committed_results() -> None:
    runs, errors = check_results.scan_results(RESULTS)
    assert errors == []
    families = {name.split("-")[0] for name in runs} | {"bench"}
    assert families == set(SABOTAGE), families


def test_an_unknown_algorithm_folder_is_an_error(tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(RESULTS / "upta-s6-20261125", results / "upta-s6-20261125")
    shutil.copytree(results / "upta-s6-20261125" / "B_UPTA", results / "upta-s6-20261125" / "X_UPTA")
    (results / "stray").mkdir()
    runs, errors = check_results.scan_results(results)
    assert runs == {"upta-s6-20261125": ["FAIR_SHARE", "B_UPTA"]}
    assert any("upta-s6-20261125/X_UPTA: an algorithm folder the checker does not know" in e
               for e in errors), errors
    assert any(e.startswith("stray: not a run") for e in errors), errors
    page = tmp_path / "none.md"
    page.write_text("")
    assert check_results.main(["--results", str(results), "--docs", str(page)]) == 1


def test_an_algorithm_experiment_json_lists_without_its_folder_is_an_error(tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(RESULTS / "upta-s6-20261125", results / "upta-s6-20261125")
    shutil.rmtree(results / "upta-s6-20261125" / "B_UPTA")
    _, errors = check_results.scan_results(results)
    assert errors == ["upta-s6-20261125: experiment.json lists B_UPTA, which has no summary"]


def test_a_changed_ns3_reference_number_fails_the_check(tmp_path: Path, capsys) -> None:
    """The ns-3 references' numbers the prose quotes (value spans ns3/PAPER/...) are
    checked too: one digit changed in docs/ns3/feng.json under a span fails the check."""
    pages, results = _copy_docs(tmp_path)
    ns3 = tmp_path / "docs" / "ns3"
    for data_file in (REPO / "docs" / "ns3").glob("*.json"):   # every page's spans resolve
        shutil.copy(data_file, ns3 / data_file.name)
    spread = (data := _read(ns3 / "feng.json"))["ns3"]["LinuxReno"]["RED"]["var_1s_kbps"]
    assert any("value:ns3/feng/ns3/LinuxReno/RED/var_1s_kbps" in p.read_text() for p in pages)
    rc = paper_compare.main(["--results", str(results), "--ns3", str(ns3),
                             "--pages", *map(str, pages)])
    assert rc == 0, capsys.readouterr().err
    spread["median"] = _one_digit_changed(spread["median"])
    _write(ns3 / "feng.json", data)
    rc = paper_compare.main(["--results", str(results), "--ns3", str(ns3),
                             "--pages", *map(str, pages)])
    err = capsys.readouterr().err
    assert rc == 1 and "value span ns3/feng/ns3/LinuxReno/RED/var_1s_kbps" in err, err
