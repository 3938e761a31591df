"""The per-algorithm BMv2 profiles (tools/build_profiles.py, p4src/v1model/profile.p4):
every profile compiles with p4c-bm2-ss without warnings, its P4Info equals its golden
file, and it has exactly its own algorithm's port_policy action."""

from __future__ import annotations

import re

import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
from google.protobuf import text_format
from finsy.proto import p4i

import build_profiles as B
from mmaqm.algorithms import ALGORITHMS

needs_p4c = pytest.mark.skipif(shutil.which("p4c-bm2-ss") is None,
                                reason="p4c-bm2-ss (the P4 toolchain, docs/install.md) "
                                       "is not installed: the profiles cannot be compiled")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    build = tmp_path_factory.mktemp("profiles")
    with ThreadPoolExecutor(max_workers=2) as pool:   # p4c is single-threaded
        results = list(pool.map(lambda p: B.compile_profile(p, build), B.PROFILES))
    return {r.profile: r for r in results}


def test_the_profiles_are_the_tofino_builds_names_and_the_controllers_algorithms():
    tna = (B.REPO / "tools" / "build-tna.sh").read_text()
    assert f'VARIANTS=${{TNA_VARIANTS:-"{" ".join(B.PROFILES)}"}}' in tna
    assert set(B.PROFILES) == set(ALGORITHMS)


@needs_p4c
@pytest.mark.parametrize("profile", B.PROFILES)
def test_profile_compiles_without_warnings_and_matches_its_golden_p4info(compiled, profile):
    r = compiled[profile]
    assert r.returncode == 0, r.log
    assert not r.warnings, r.log
    assert B.golden_diff(r) == "", (f"{B.golden_path(profile).name} is stale; review, then "
                                    f"'make golden-p4info PROFILE={profile}'\n{B.golden_diff(r)}")


@pytest.mark.parametrize("profile", B.PROFILES)
def test_golden_profile_p4info_names_the_profile_and_has_its_action_and_drop_tail(profile):
    info = text_format.Parse(B.golden_path(profile).read_text(), p4i.P4Info())
    assert info.pkg_info.name == f"mmaqm-{profile}"
    actions = {a.preamble.id: a.preamble.name for a in info.actions}
    [table] = [t for t in info.tables if t.preamble.name.endswith(".port_policy")]
    policy = {actions[ref.id] for ref in table.action_refs} & set(ALGORITHMS.values())
    assert policy == {ALGORITHMS[profile], ALGORITHMS["DROP_TAIL"]}   # the other ports' FIFO
    tables = {t.preamble.name for t in info.tables}
    assert any(t.endswith(".upta_edge_port") for t in tables) == (profile == "UPTA")


def test_every_profile_has_ptf_modules_and_the_suite_baseline_runs_on_it():
    """run_ptf.py --profile: every profile has modules to run, and the suite's own
    baseline (ptf-config.yaml) uses only DROP_TAIL, which every profile carries."""
    import sys

    sys.path.insert(0, str(B.REPO / "ptf-tests"))
    try:
        import run_ptf
    finally:
        sys.path.remove(str(B.REPO / "ptf-tests"))
    from mmaqm.config import load_config

    assert set(run_ptf.mmaqm_profiles.TESTS) == set(B.PROFILES)
    for profile, specs in run_ptf.mmaqm_profiles.TESTS.items():
        assert specs, profile
        for spec in specs:                       # a module, or module.Class in it
            module, _, cls = spec.partition(".")
            source = (B.REPO / "ptf-tests" / "tests" / f"{module}.py").read_text()
            assert not cls or re.search(rf"^class {cls}\(", source, re.M), (profile, spec)
    cfg = load_config(run_ptf.CONFIG)
    assert {p.algorithm for sw in cfg.switches.values() for p in sw.policies.values()} \
        == {"DROP_TAIL"}
