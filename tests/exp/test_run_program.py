"""mmaqm-exp picks the program a run loads (experiment.run_program): the BMv2 profile
of the run's one algorithm family, else the all-in-one program."""

from __future__ import annotations

import json
import shutil

import pytest

from mmaqm_exp.experiment import DEFAULT_BMV2_JSON, DEFAULT_P4INFO, REPO, run_program

POLICIES = {
    "DROP_TAIL": {"algorithm": "DROP_TAIL", "queue_limit_pkts": 60},
    "RED": {"algorithm": "RED", "queue_limit_pkts": 60},
    "RED_50KB": {"algorithm": "RED", "queue_limit_pkts": 50},
    "DCBT": {"algorithm": "DCBT", "queue_limit_pkts": 60},
}
needs_p4c = pytest.mark.skipif(shutil.which("p4c-bm2-ss") is None, reason="no p4c-bm2-ss")


def test_two_families_load_the_all_in_one_program():
    bmv2_json, p4info, why = run_program(["RED", "DCBT"], POLICIES)
    assert (bmv2_json, p4info) == (DEFAULT_BMV2_JSON, DEFAULT_P4INFO)
    assert "2 algorithm families" in why


def test_the_all_in_one_flag_wins_over_one_family():
    bmv2_json, _, why = run_program(["DCBT"], POLICIES, all_in_one=True)
    assert bmv2_json == DEFAULT_BMV2_JSON and "forced" in why


@needs_p4c
def test_one_family_loads_its_profile_built_if_needed():
    # RED and RED_50KB are one family (the policy's algorithm, not the run's name);
    # DROP_TAIL, which every profile carries, does not count as a second one
    bmv2_json, p4info, why = run_program(["DROP_TAIL", "RED", "RED_50KB"], POLICIES)
    assert bmv2_json == REPO / "build" / "red" / "main.json"
    assert p4info == REPO / "build" / "red" / "main.p4info.txtpb"
    assert why == "the RED profile"
    program = json.loads(bmv2_json.read_text())
    assert program["program"].endswith("main.p4") and p4info.exists()
    assert 'name: "mmaqm-RED"' in p4info.read_text()


@needs_p4c
def test_drop_tail_alone_loads_the_drop_tail_profile():
    bmv2_json, _, why = run_program(["DROP_TAIL"], POLICIES)
    assert bmv2_json == REPO / "build" / "drop_tail" / "main.json" and why == "the DROP_TAIL profile"
