"""Shared test setup: make ``mmaqm_exp`` importable and runnable in subprocesses."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TOPO = Path(__file__).resolve().parents[1]
if str(TOPO) not in sys.path:
    sys.path.insert(0, str(TOPO))


@pytest.fixture(scope="session")
def py_env() -> dict:
    """Environment for ``python -m mmaqm_exp...`` child processes."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(TOPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@pytest.fixture(scope="session")
def topo_dir() -> Path:
    return TOPO
