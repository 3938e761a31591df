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


def test_a_skipped_test_makes_a_mutant_inconclusive_not_survived() -> None:
    """A test that skipped (a missed precondition) judged nothing: with no failure
    the mutant is INCONCLUSIVE, never SURVIVED; any failure still catches it."""
    assert mutants.verdict_of([], ["test_chips.ChipsVirtualFifoTest"]) == (
        "INCONCLUSIVE", "skipped: test_chips.ChipsVirtualFifoTest")
    assert mutants.verdict_of(["unit"], ["test_chips.ChipsVirtualFifoTest"]) == ("CAUGHT", "unit")
    assert mutants.verdict_of(["unit", "test_red.RedForcedDropTest"], []) == (
        "CAUGHT", "unit, test_red.RedForcedDropTest")
    assert mutants.verdict_of([], []) == ("SURVIVED", "")
