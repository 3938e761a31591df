"""What docs/experiments/upta.md says of the two sets of C-UPTA runs of 2026-11-27,
recomputed from the archived runs: the first set (-r1 … -r3) ran before the ingress
edge inferred U states with its path minima, the second (-r4 … -r6, the Table 4/5
rows) after. Before, no core digested a probe spec and TCP's gain ρ was smaller in
scenarios 3–6 (scenario 6: under a fifth); after, the cores counted the video."""
from __future__ import annotations

import copy
import gzip
import json
import statistics

import pytest
import yaml

import paper_compare as pc

UPTA = yaml.safe_load(pc.SPEC.read_text())["upta"]
ROWS = {r["id"]: r for r in UPTA["rows"]}


def _runs(scenario: int, rounds: tuple[int, ...]) -> list[str]:
    return [f"upta-s{scenario}-cupta-20261127-r{r}" for r in rounds]


def _rho_median(scenario: int, rounds: tuple[int, ...]) -> float:
    row = copy.deepcopy(ROWS[f"t5-c-s{scenario}"])
    row["runs"] = _runs(scenario, rounds)
    [evaluated] = pc.evaluate({"runs": [], "rows": [row]})
    return statistics.median(v for per in evaluated["per_run"] for v in per)


def _spec_digests(run: str) -> int:
    path = pc.RESULTS / run / "C_UPTA" / "share_events.jsonl.gz"
    most: dict[str, int] = {}
    with gzip.open(path, "rt") as f:
        for line in f:
            e = json.loads(line)
            if e.get("event") == "upta_bfd":
                most[e["switch"]] = max(most.get(e["switch"], 0), e.get("spec_digests", 0))
    return sum(most.values())


def test_the_rows_use_the_second_set() -> None:
    for n in range(1, 7):
        assert ROWS[f"t5-c-s{n}"]["runs"] == _runs(n, (4, 5, 6))
        assert ROWS[f"t4-wfq-plus-s{n}"]["runs"] == _runs(n, (4, 5, 6))


@pytest.mark.parametrize("scenario", [3, 4, 5, 6])
def test_the_gain_was_smaller_before_the_inference_change(scenario: int) -> None:
    before, after = _rho_median(scenario, (1, 2, 3)), _rho_median(scenario, (4, 5, 6))
    assert before < after, (before, after)
    if scenario == 6:
        assert before < after / 5, (before, after)


def test_no_core_digested_a_spec_before_and_the_cores_did_after() -> None:
    assert all(_spec_digests(r) == 0 for n in range(1, 7) for r in _runs(n, (1, 2, 3)))
    assert all(_spec_digests(r) > 0 for n in range(2, 7) for r in _runs(n, (4, 5, 6)))
