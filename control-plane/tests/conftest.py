"""Shared helpers for the control-plane unit tests (no switch needed)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
P4_INCLUDE = REPO_ROOT / "p4src" / "include"


class RandSequence:
    """rand_source for the reference model: returns the given values, counts calls."""

    def __init__(self, values: Iterable[int]) -> None:
        self.values = list(values)
        self.calls = 0

    def __call__(self) -> int:
        value = self.values[min(self.calls, len(self.values) - 1)]
        self.calls += 1
        return value


@pytest.fixture
def rand_const() -> Callable[[int], RandSequence]:
    return lambda value: RandSequence([value])
