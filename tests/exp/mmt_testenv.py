"""Test helper imported first by every test module here.

Paths of the experiment tooling (``mmaqm_exp`` is installed into the
virtualenv by ``make deps``) and the environment for ``python -m mmaqm_exp...``
child processes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

TOPO = Path(__file__).resolve().parents[2] / "topologies"


def py_env() -> dict[str, str]:
    """os.environ with topologies/ prepended to PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(TOPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


NFQ_HEADERS = ("/usr/include/libnetfilter_queue/libnetfilter_queue.h", "/usr/include/libmnl/libmnl.h")


def nfq_delay_build_missing() -> str | None:
    """Why topologies/delay/nfq_delay cannot be built here, or None."""
    for hdr in NFQ_HEADERS:
        if not os.path.exists(hdr):
            return f"needs {hdr} (apt-get install libnetfilter-queue-dev libmnl-dev) for nfq_delay"
    return None


def require_kept_up(keepups: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> None:
    """{run label: analysis.switch_keepup(...)}. Fails when a switch could not be checked
    (the check's plumbing broke); skips, as a missed precondition, when a switch lost
    packets before its AQM: the run then measured BMv2, not the AQM (docs/experiments/README.md,
    "Did the switch keep up?")."""
    import pytest
    from mmaqm_exp import analysis

    unchecked = {run: sw for run, keepup in keepups.items()
                 for sw, k in keepup.items() if not k.get("checked")}
    assert not unchecked, f"keep-up check not done: {unchecked}"
    behind = {run: analysis.keepup_problem(keepup) for run, keepup in keepups.items()
              if analysis.fell_behind(keepup)}
    if behind:
        pytest.skip(f"PRECONDITION MISSED (the switch did not keep up; see docs/install.md "
                    f"for BMv2's build options): {behind}")
