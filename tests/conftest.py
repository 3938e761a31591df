"""Shared helpers for the control-plane unit tests (no switch needed)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from fake_p4rt import ThreadedServer

REPO_ROOT = Path(__file__).resolve().parents[1]
P4_SHARED = REPO_ROOT / "p4src" / "shared"


class RandSequence:
    """rand_source for the reference model: returns the given values, counts calls."""

    def __init__(self, values: Iterable[int]) -> None:
        self.values = list(values)
        self.calls = 0

    def __call__(self) -> int:
        value = self.values[min(self.calls, len(self.values) - 1)]
        self.calls += 1
        return value


# ---- P4Runtime tests (fake_p4rt.py): the compiled P4Info, a device config, a fake switch.
# Imported inside the fixtures: the other tests need neither grpc nor the P4Info.
@pytest.fixture
def p4info_path() -> Path:
    """The P4Info the package uses (the golden copy, or $MMAQM_P4INFO); skips while
    it is the enums-only placeholder (before the first p4c compile)."""
    from fake_p4rt import p4info_has_tables
    from mmaqm import p4constants

    if not p4info_has_tables(p4constants.P4INFO):
        pytest.skip(f"{p4constants.P4INFO} has no tables yet (placeholder until p4c runs)")
    return p4constants.P4INFO


@pytest.fixture
def device_config(tmp_path: Path) -> Path:
    """The pipeline's device config: any bytes do for the fake switch."""
    path = tmp_path / "main.json"
    path.write_bytes(b'{"fake": "bmv2 json"}')
    return path


@pytest.fixture
def fake_switch() -> Iterator[ThreadedServer]:
    """A FakeP4RuntimeServer on 127.0.0.1, on its own event loop in a thread."""
    from fake_p4rt import FakeP4RuntimeServer, serve_in_thread

    with serve_in_thread(FakeP4RuntimeServer()) as threaded:
        yield threaded
