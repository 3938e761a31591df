"""paper_compare's verdicts: computed from each row's tolerance and its values over the
runs (docs/verdicts.md), never written by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import paper_compare as pc

REPO = Path(__file__).resolve().parents[2]


def _number(value: float, tol: dict, **extra) -> dict:
    return {"id": "r", "quantity": "q", "paper": "x", "source": "stated", "kind": "number",
            "expect": {"value": value}, "tolerance": tol, "mmaqm": {"fn": "jain"}, **extra}


def _ordering(expect: dict, margin: float, algorithms: list[str], phases=None) -> dict:
    mm = {"fn": "class_loss_pct", "algorithms": algorithms}
    if phases:
        mm["phases"] = phases
    return {"id": "o", "quantity": "o", "paper": "x", "source": "stated", "kind": "ordering",
            "expect": expect, "tolerance": {"abs": margin}, "mmaqm": mm}


def test_a_number_row_is_reproduced_only_when_median_and_every_run_are_within() -> None:
    row = _number(100, {"rel_pct": 10})
    assert pc.verdict(row, [[95.0], [100.0], [109.0]]) == "reproduced"
    assert pc.verdict(row, [[95.0], [100.0], [120.0]]) == "partly"        # one run outside
    assert pc.verdict(row, [[80.0], [85.0], [105.0]]) == "not reproduced"  # median outside
    assert pc.verdict(row, [[100.0], [100.0]]) == "not established (2 runs, held in 2)"
    assert pc.verdict(row, [[50.0]]) == "not established (1 run, held in 0)"
    absolute = _number(4.46, {"abs": 1})
    assert pc.verdict(absolute, [[5.4], [5.46], [3.5]]) == "reproduced"
    assert pc.verdict(absolute, [[5.5], [5.47], [5.6]]) == "not reproduced"


def test_several_values_in_a_row_each_get_a_verdict() -> None:
    row = _number(0, {"abs": 1})
    row["expect"] = {"values": [10, 20]}
    assert pc.verdict(row, [[10.0, 20.0]] * 3) == "reproduced"
    assert pc.verdict(row, [[10.0, 25.0]] * 3) == "partly"
    assert pc.verdict(row, [[15.0, 25.0]] * 3) == "not reproduced"
    with pytest.raises(pc.CompareError, match="one number per value"):
        pc.verdict(row, [[1.0]] * 3)


def test_an_ordering_must_hold_by_its_margin() -> None:
    # the mcdt s2 case: MCDT 4.5 against drop-tail 4.6 is not "lowest" by 0.5 points
    row = _ordering({"lowest": "MCDT"}, 0.5, ["DROP_TAIL", "RED", "MCDT"])
    assert pc.verdict(row, [[4.6, 8.2, 4.5]] * 3) == "not reproduced"
    assert pc.verdict(row, [[4.6, 8.2, 3.9]] * 3) == "reproduced"
    assert pc.verdict(row, [[4.6, 8.2, 3.9], [4.6, 8.2, 3.9], [4.6, 8.2, 4.5]]) == "partly"
    high = _ordering({"highest": "FRED"}, 0, ["RED", "FRED"])
    assert pc.verdict(high, [[29.7, 24.9]]) == "not established (1 run, held in 0)"
    greater = _ordering({"greater": ["RED", "DROP_TAIL"]}, 0, ["DROP_TAIL", "RED"])
    assert pc.verdict(greater, [[580.0, 426.0], [584.0, 418.0]]) == \
        "not established (2 runs, held in 0)"
    # per phase: algorithms outer, phases inner; MCDT highest in the second phase only
    steps = _ordering({"highest": "MCDT"}, 0, ["RED", "MCDT"], phases=["a", "b"])
    assert pc.verdict(steps, [[5.0, 5.0, 4.0, 6.0]] * 3) == "partly"


def test_shapes() -> None:
    below = {"id": "s", "quantity": "s", "paper": "< 40 ms", "source": "stated",
             "kind": "shape", "expect": {"below": 40}, "mmaqm": {"fn": "jain"}}
    assert pc.verdict(below, [[30.0, 39.0]] * 3) == "reproduced"
    assert pc.verdict(below, [[48.0, 64.0]] * 3) == "not reproduced"
    falling = {**below, "expect": {"decreasing": True}}
    assert pc.verdict(falling, [[0.96, 0.34, 0.23]] * 3) == "reproduced"
    assert pc.verdict(falling, [[0.96, 0.34, 0.40]] * 3) == "not reproduced"
    between = {**below, "expect": {"between": [187, 410]}}
    assert pc.verdict(between, [[355.0], [331.0], [357.0]]) == "reproduced"


def test_rows_without_a_comparison() -> None:
    assert pc.verdict({"kind": "none", "declined": "a scheduler"}, []) == "declined"
    assert pc.verdict({"kind": "none", "needs": "modes B and C"}, []) == \
        "needs runs: modes B and C"
    assert pc.verdict({"kind": "none", "quantity": "q"}, [[1.0]]) == "— (no paper value)"


def test_a_row_must_state_its_kind_source_and_tolerance_and_not_its_verdict() -> None:
    good = _number(1, {"abs": 0.05})
    assert pc.check_row(good) == []
    no_tol = {k: v for k, v in good.items() if k != "tolerance"}
    assert pc.check_row(no_tol) == ["'q': a number row states its tolerance"]
    assert "kind must be one of" in pc.check_row({**good, "kind": "vibe"})[0]
    assert "source must be one of" in pc.check_row({**good, "source": "memory"})[0]
    said = pc.check_row({**good, "why": "reproduced: the same"})
    assert said == ["'q': `why` says 'reproduced'; the verdict column is computed"]
    declined = {"id": "d", "quantity": "d", "paper": "0 %", "kind": "none", "source": "stated",
                "declined": "why not"}
    assert pc.check_row(declined) == []


def test_verdict_words_in_prose_must_be_computed_spans() -> None:
    computed = {"dcbt/a": "reproduced", "dcbt/b": "not established (2 runs, held in 2)"}
    ok = ("fairness <!-- verdict:dcbt/a -->reproduced<!-- /verdict -->\n"
          "<!-- paper-compare:dcbt -->\n| x | reproduced |\n<!-- /paper-compare:dcbt -->\n")
    assert pc.check_words(ok, "p.md", computed) == (ok, [])
    _, problems = pc.check_words("The shape of Fig. 8 is reproduced.\n", "p.md", computed)
    assert problems == ["p.md: says 'reproduced' outside a computed table or verdict span: "
                        "'The shape of Fig. 8 is reproduced.'"]
    stale = "x <!-- verdict:dcbt/b -->reproduced<!-- /verdict -->"
    _, problems = pc.check_words(stale, "p.md", computed)
    assert problems == ["p.md: verdict span dcbt/b says 'reproduced', computed "
                        "'not established (2 runs, held in 2)'"]
    fixed, problems = pc.check_words(stale, "p.md", computed, write=True)
    assert problems == [] and "-->not established (2 runs, held in 2)<!--" in fixed
    _, problems = pc.check_words("<!-- verdict:dcbt/zz -->x<!-- /verdict -->", "p.md", computed)
    assert problems == ["p.md: verdict span of unknown row dcbt/zz"]


# ------------------------------------------------------------ the committed comparison
def _spec() -> dict:
    return yaml.safe_load(pc.SPEC.read_text())


@pytest.fixture(scope="module")
def evaluated() -> dict:
    return {name: {r["row"]["id"]: r for r in pc.evaluate(paper)}
            for name, paper in _spec().items()}


def test_no_committed_row_is_reproduced_with_fewer_than_3_runs(evaluated) -> None:
    for name, rows in evaluated.items():
        for rid, r in rows.items():
            if r["verdict"] in ("reproduced", "partly", "not reproduced"):
                assert len(r["per_run"]) >= pc.MIN_RUNS, (name, rid)
            if r["verdict"] == "reproduced" and r["row"]["kind"] == "number":
                tol, exp = r["row"]["tolerance"], r["row"]["expect"]
                targets = exp.get("values") or [exp["value"]] * len(r["per_run"][0])
                for vals in r["per_run"]:     # every run inside the tolerance
                    assert all(pc._within(v, t, tol) for v, t in zip(vals, targets)), (name, rid)


def test_the_audit_findings_stay_fixed(evaluated) -> None:
    """The verdicts an audit found too generous: each is now computed to what the data say."""
    assert evaluated["dcbt"]["s63-tcp-ratio"]["verdict"] == "not reproduced"       # 105-111 %
    assert evaluated["dcbt"]["t2-chips-extra-drop"]["verdict"] == "not reproduced"
    assert evaluated["dcbt"]["cbt-untagged-20-30"]["verdict"] == "not reproduced"  # Fig. 8(b)
    assert evaluated["cbt"]["t1-order"]["verdict"] == "not reproduced"    # FRED not worst, 3 runs
    assert evaluated["cbt"]["t1-cbt-gain"]["verdict"] == "not reproduced"    # +2.5-4.2 of 6.2, 3 runs
    assert evaluated["feng"]["fig2-1s"]["verdict"] == "not reproduced"    # TCP, 3 runs, held in 0
    assert evaluated["feng"]["mm-1s"]["verdict"] == "reproduced"          # MM_APP, 3 runs
    assert evaluated["mcdt-s2"]["tcp-drop"]["verdict"] == "not reproduced"  # 4.7 vs 4.6, 3 runs
    assert evaluated["upta"]["t3-p-s6"]["verdict"] != "reproduced"                  # 0.07-1.01
    assert all("four statements" not in r["row"]["quantity"]
               for r in evaluated["mcdt-s3"].values())


def test_runs_with_validity_warnings_are_marked_in_the_rows_they_feed(evaluated) -> None:
    notes = " ".join(evaluated["upta"]["t4-wfq-s4"]["notes"])
    assert "⚠ upta-s4-20261125 FAIR_SHARE: 2 validity warnings" in notes
    assert any("upta-s5-p-20261125" in n for n in evaluated["upta"]["t3-p-s5"]["notes"])
    assert evaluated["upta"]["t4-wfq-s1"]["notes"] == []


def test_every_paper_table_and_measured_figure_has_a_row(evaluated) -> None:
    """The papers' tables and the figures that report measurements (docs/verdicts.md):
    each is compared or declined with a reason in some row."""
    expected = {
        "dcbt": ["Fig. 8", "Fig. 10", "Fig. 11", "Fig. 12", "Table 1", "Table 2"],
        "cbt": ["Table 1", "Fig. 5c", "Fig. 7", "CBQ"],
        "feng": ["Fig. 2", "Fig. 3(a)", "Fig. 3(b)"],
        "mcdt-s1": ["Fig. 4", "Fig. 5"],
        "mcdt-s2": ["Fig. 6"],
        "mcdt-s3": ["Fig. 7", "Fig. 8"],
        "upta": ["Table 1", "Table 2", "Table 3", "Table 4", "Table 5", "Table 6", "Table 7",
                 "Table 8", "Table 9", "Table 10", "Fig. 12", "Fig. 13", "Fig. 14",
                 "Figs. 3 and 5", "Figs. 10–11", "Fig. 15", "Figs. 16–17", "Fig. 18"],
    }
    for name, labels in expected.items():
        quantities = " ".join(r["row"]["quantity"] for r in evaluated[name].values())
        for label in labels:
            assert label in quantities, (name, label)
    for rows in evaluated.values():
        for r in rows.values():
            if r["verdict"] == "declined":
                assert len(r["row"]["declined"]) > 40, r["row"]["id"]   # a reason, not a word


# ------------------------------------------------------------ tables of run values
def test_the_run_tables_match_their_data_and_a_hand_edit_is_caught(tmp_path) -> None:
    tables = yaml.safe_load(pc.RUN_TABLES.read_text())
    assert {"headline", "dcbt-delay", "feng-4tcp", "feng-mm"} <= set(tables)
    readme = REPO / "README.md"
    text = readme.read_text()
    out, problems = pc.process_run_tables({readme: text}, {"headline": tables["headline"]},
                                          pc.RESULTS, write=False)
    assert problems == [] and out[readme] == text
    row = next(line for line in text.splitlines() if line.startswith("| Jain's fairness index"))
    edited = text.replace(row, row.replace("| 0.32 |", "| 0.33 |", 1))
    assert edited != text
    _, problems = pc.process_run_tables({readme: edited}, {"headline": tables["headline"]},
                                        pc.RESULTS, write=False)
    assert problems == ["run table headline: the table in README.md differs from its data; "
                        "run 'python tools/paper_compare.py --write'"]
    out, problems = pc.process_run_tables({readme: edited}, {"headline": tables["headline"]},
                                          pc.RESULTS, write=True)
    assert problems == [] and out[readme] == text
    _, problems = pc.process_run_tables({readme: "no markers"}, {"headline": tables["headline"]},
                                        pc.RESULTS, write=False)
    assert problems == ["run table headline: its markers must be in exactly one page, found in 0"]


def test_a_run_table_marks_the_runs_with_validity_warnings() -> None:
    table = {"runs": ["upta-s4-20261125", "upta-s1-20261125"], "corner": "",
             "columns": [{"header": "τ", "args": {"fn": "tcp_mbps"}}],
             "rows": [{"label": "fair share", "args": {"algorithm": "FAIR_SHARE"}}]}
    text = pc.render_run_table(table)
    assert "| fair share | 0.806 Mbit/s / 1.532 Mbit/s |" in text
    assert "⚠ upta-s4-20261125 FAIR_SHARE: 2 validity warnings." in text
    assert "upta-s1-20261125 FAIR_SHARE:" not in text


def test_mcdt_threshold_is_the_mean_of_the_pushes_within_the_phase(tmp_path) -> None:
    import json
    t0 = 1_000_000_000_000
    events = [{"event": "mcdt_push", "t_ns": t0 + int(s * 1e9), "th_pkts": {"TCP": th}}
              for s, th in ((0.5, 10), (1.5, 20), (2.5, 40), (3.5, 80))]
    events.append({"event": "other", "t_ns": t0 + int(2e9)})
    (tmp_path / "share_events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    s = {"t0_ns": t0, "_run_dir": str(tmp_path),
         "scenario": {"phases": [{"name": "a", "start_s": 0, "end_s": 2},
                                 {"name": "b", "start_s": 2, "end_s": 4}]}}
    runs = {"MCDT": s}
    assert pc.value(runs, {"fn": "mcdt_threshold_pkts", "algorithm": "MCDT", "phase": "a",
                           "cls": "TCP"}) == "15.0 pkts"
    assert pc.value(runs, {"fn": "mcdt_threshold_pkts", "algorithm": "MCDT",
                           "phases": ["a", "b"], "cls": "TCP"}) == "15.0 pkts / 60.0 pkts"


def test_a_row_may_not_pool_runs_of_different_scenarios() -> None:
    row = _number(0.98, {"abs": 0.05})
    row["mmaqm"] = {"fn": "jain", "algorithm": "RED", "phase": "blast"}
    pc.same_scenario(pc.RESULTS, row, ["dcbt-fig7-20261124-2117", "dcbt-fig7-20261125-all"])
    with pytest.raises(pc.CompareError, match="different scenarios"):
        pc.same_scenario(pc.RESULTS, row, ["dcbt-fig7-20261124-2117", "cbt-fig4-20261124"])
    # pairs: the FAIR_SHARE folders and the P-UPTA folders each of one scenario
    pc.same_scenario(pc.RESULTS, row, [["upta-s6-20261125", "upta-table2-20261125"],
                                       ["upta-s6-20261125-r1", "upta-s6-p-20261125-r1"]])
    with pytest.raises(pc.CompareError, match="different scenarios"):
        pc.same_scenario(pc.RESULTS, row, [["upta-s6-20261125", "upta-table2-20261125"],
                                           ["upta-s5-20261125", "upta-s5-p-20261125"]])
