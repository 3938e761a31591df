"""mmaqm_exp.tag_guard_report: shares of the fair share per phase, hand-computed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mmt_testenv  # noqa: F401  (puts topologies/ on the path)
from mmaqm_exp import tag_guard_report as T
from mmaqm_exp.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]


def summary(abuser_kbps: float, honest_kbps: tuple[float, float]) -> dict:
    """Two phases: before (2 MM_APP + 1 TCP), abuser-2x (+ the tagged CBR)."""
    flows = {"0": {"kind": "tcp", "class": "TCP"},
             "1": {"kind": "mmapp", "class": "TAGGED"},
             "2": {"kind": "mmapp", "class": "TAGGED"},
             "3": {"kind": "cbr", "class": "TAGGED"}}
    return {
        "flows": flows,
        "scenario": {"phases": [{"name": "before"}, {"name": "abuser-2x"}]},
        "phases": {
            "before": {"fair_share_kbps": 3000.0, "jain": 1.0,
                       "per_flow_kbps": {"0": 3000.0, "1": 3000.0, "2": 3000.0}},
            "abuser-2x": {"fair_share_kbps": 2500.0, "jain": 0.8,
                          "per_flow_kbps": {"0": 2000.0, "1": honest_kbps[0],
                                            "2": honest_kbps[1], "3": abuser_kbps}},
        },
        "warnings": ["r1 fell behind"],
    }


def test_shares_and_targets_hand_computed() -> None:
    rows = T.phase_rows(summary(3750.0, (2000.0, 2500.0)))
    before, abused = rows
    assert before["abuser_share"] is None and before["targets_met"] is None
    assert before["honest_min_share"] == 1.0 and before["tcp_mean_share"] == 1.0
    # 3750 / 2500 = 1.5 (at the limit), honest 2000 / 2500 = 0.8 (at the limit), 1.0
    assert abused["abuser_share"] == 1.5
    assert abused["honest_share"] == {"1": 0.8, "2": 1.0}
    assert abused["honest_min_share"] == 0.8 and abused["honest_mean_share"] == 0.9
    assert abused["tcp_mean_share"] == 0.8 and abused["jain"] == 0.8
    assert abused["targets_met"] is True


@pytest.mark.parametrize("abuser, honest", [(3760.0, (2000.0, 2500.0)),
                                            (3750.0, (1990.0, 2500.0))])
def test_a_target_missed(abuser: float, honest: tuple[float, float]) -> None:
    assert T.phase_rows(summary(abuser, honest))[1]["targets_met"] is False


def test_two_abusers_in_a_phase_are_refused() -> None:
    s = summary(3750.0, (2000.0, 2500.0))
    s["flows"]["4"] = {"kind": "cbr", "class": "TAGGED"}
    s["phases"]["abuser-2x"]["per_flow_kbps"]["4"] = 10.0
    with pytest.raises(ValueError, match="2 tagged CBR flows"):
        T.phase_rows(s)


def test_main_writes_the_report_and_keeps_the_validity_warnings(tmp_path: Path) -> None:
    run = tmp_path / "DCBT_GUARD"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps(summary(3750.0, (2000.0, 2500.0))))
    out = tmp_path / "out"
    assert T.main(["--run", f"DCBT_GUARD={run}", "--out", str(out)]) == 0
    rep = json.loads((out / T.OUT_JSON).read_text())
    assert rep["DCBT_GUARD"]["validity_warnings"] == ["r1 fell behind"]
    text = (out / T.OUT_TEXT).read_text()
    assert "VALIDITY: r1 fell behind" in text and " met" in text
    assert (out / T.OUT_PLOT).stat().st_size > 0


def test_main_refuses_bad_input(tmp_path: Path) -> None:
    assert T.main(["--run", "nodir", "--out", str(tmp_path / "o")]) == 2
    assert T.main(["--run", f"X={tmp_path}", "--out", str(tmp_path / "o")]) == 2   # no summary
    assert not (tmp_path / "o").exists()


def test_the_scenario_rates_are_1_2_4_8_times_the_fair_share() -> None:
    sc = load_scenario(REPO / "topologies" / "scenarios" / "tag-guard-abuse.yaml")
    cbr = [g for g in sc.groups if g.kind == "cbr"]
    fractions = [g.params["rate_fraction_of_bottleneck"] for g in cbr]
    n_flows = sum(g.count for g in sc.groups if g.kind != "cbr") + 1      # 10 + the abuser
    assert n_flows == 11
    assert [round(f * n_flows, 4) for f in fractions] == [1.0, 2.0, 4.0, 8.0]
    assert all(g.cls == "TAGGED" for g in cbr)


def test_the_tag_guard_experiment_is_registered_and_a_run_can_have_its_own_prefix() -> None:
    from mmaqm_exp import experiment
    from mmaqm_exp.experiments import load_registry
    from mmaqm_exp.network import DEFAULT_PREFIX
    reg = load_registry()
    plan = experiment.resolve_plan(
        experiment.build_parser(reg).parse_args(["--experiment", "tag-guard"]), reg, "S")
    assert plan.algorithms == ["RED", "DCBT", "DCBT_GUARD", "FRED"]
    assert plan.scenario.name == "tag-guard-abuse.yaml"
    parser = experiment.build_parser(reg)
    assert parser.parse_args([]).prefix == DEFAULT_PREFIX
    assert parser.parse_args(["--prefix", "tagg"]).prefix == "tagg"
