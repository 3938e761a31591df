"""The committed mutant list stays applicable: every snippet is in its file exactly once."""

from pathlib import Path

import pytest

import mutants  # noqa: E402


def test_every_mutant_applies_exactly_once() -> None:
    loaded = mutants.load_mutants()
    assert len(loaded) >= 39
    for m in loaded:
        assert m.find != m.replace, m.id


def test_a_stale_snippet_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "mutants.yaml"
    bad.write_text("- {id: x, rule: r, file: p4src/v1model/red.p4, find: 'no such text',"
                   " replace: y, tests: ['ptf:test_red.RedForcedDropTest']}\n")
    with pytest.raises(ValueError, match="occurs 0 times"):
        mutants.load_mutants(bad)


def test_tests_must_name_their_kind(tmp_path: Path) -> None:
    bad = tmp_path / "mutants.yaml"
    bad.write_text("- {id: x, rule: r, file: p4src/v1model/red.p4, find: 'red_count.write',"
                   " replace: y, tests: ['test_red.RedForcedDropTest']}\n")
    with pytest.raises(ValueError, match="tests must be"):
        mutants.load_mutants(bad)
