"""docs/tofino-model.md cannot rot silently: every command of its plan names make
targets, variables, run_ptf.py flags, files and variants that exist here, and
the files and ports it passes between steps are the ones the tools write and the
tests use. (The plan itself has not run: see the page.)"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "tofino-model.md"
sys.path.insert(0, str(REPO / "ptf-tests"))
sys.path.insert(0, str(REPO / "ptf-tests" / "tests"))
import run_ptf  # noqa: E402
import tofino_model_files  # noqa: E402
import mmaqm_tofino as tofino  # noqa: E402


def commands() -> list[str]:
    """The doc's shell commands, one per logical line (backslash continuations
    joined, comments dropped)."""
    text = DOC.read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    assert blocks, "no sh blocks in docs/tofino-model.md"
    out = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line:
                out.append(line)
    return out


def words_after(command: str, marker: str) -> list[str]:
    words = shlex.split(command)
    i = next(i for i, w in enumerate(words) if w.endswith(marker))
    return words[i + 1:]


def build_tna_variants() -> list[str]:
    script = (REPO / "tools" / "build-tna.sh").read_text()
    m = re.search(r'VARIANTS=\$\{TNA_VARIANTS:-"([^"]+)"\}', script)
    assert m, "tools/build-tna.sh no longer reads TNA_VARIANTS"
    return m.group(1).split()


def makefile_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z0-9_.-]+):", (REPO / "Makefile").read_text(), flags=re.M))


def test_every_make_command_names_a_target_and_variables_the_build_reads() -> None:
    makes = [c for c in commands() if re.search(r"(^|\s)make\s", c)]
    assert makes
    script = (REPO / "tools" / "build-tna.sh").read_text()
    for command in makes:
        words = shlex.split(command)
        env = [w for w in words[:words.index("make")] if "=" in w]
        args = words[words.index("make") + 1:]
        for target in (a for a in args if "=" not in a and not a.startswith("-")):
            assert target in makefile_targets(), f"{command}: no make target {target}"
        for assignment in env + [a for a in args if "=" in a]:
            name, _, value = assignment.partition("=")
            if "build-tna" in args:
                assert f"${{{name}" in script, f"{command}: build-tna.sh does not read {name}"
            if name == "TNA_VARIANTS":
                assert set(value.split()) <= set(build_tna_variants()), command


def plan_variant() -> str:
    [build] = [c for c in commands() if "make build-tna" in c]
    [value] = [w.partition("=")[2] for w in shlex.split(build) if w.startswith("TNA_VARIANTS=")]
    return value.lower()


def test_every_run_ptf_command_parses_with_run_ptfs_own_flags_for_the_built_variant() -> None:
    runs = [c for c in commands() if "ptf-tests/run_ptf.py" in c]
    assert runs
    for command in runs:
        args = run_ptf.make_parser().parse_args(words_after(command, "run_ptf.py"))
        assert args.target == "tna", command
        assert args.tna_variant == plan_variant(), command
        assert args.tna_variant in run_ptf.TNA_VARIANTS


def test_the_files_the_steps_pass_on_are_the_ones_the_tool_writes() -> None:
    [write] = [c for c in commands() if "tools/tofino_model_files.py" in c]
    [variant] = words_after(write, "tofino_model_files.py")
    assert variant == plan_variant() and variant in tofino_model_files.VARIANTS
    conf = "$MMAQM/" + str(tofino_model_files.conf_path(REPO, variant).relative_to(REPO))
    ports = "$MMAQM/" + str(tofino_model_files.ports_path(REPO).relative_to(REPO))
    [model] = [c for c in commands() if "run_tofino_model.sh" in c]
    words = shlex.split(model, posix=False)
    assert words[words.index("-c") + 1] == conf and words[words.index("-f") + 1] == ports
    assert words[words.index("-p") + 1] == tofino.program_name(variant)
    assert words[words.index("--arch") + 1] == "tofino"
    [switchd] = [c for c in commands() if "run_switchd.sh" in c]
    words = shlex.split(switchd, posix=False)
    assert words[words.index("-c") + 1] == conf
    text = DOC.read_text()
    for path in (conf, ports):
        assert f"`{path.removeprefix('$MMAQM/')}`" in text, path


def test_switchd_serves_p4runtime_where_run_ptf_connects() -> None:
    [switchd] = [c for c in commands() if "run_switchd.sh" in c]
    [server] = [w.partition("=")[2] for w in shlex.split(switchd)
                if w.startswith("--p4rt-server=")]
    defaults = run_ptf.make_parser().parse_args(["--target", "tna"])
    assert server == defaults.grpc_addr
    assert defaults.device_id == tofino.DEVICE_ID == 0


def test_the_sde_profile_enables_bf_switchds_p4runtime_server_for_tofino_1() -> None:
    [apply] = [c for c in commands() if "p4studio profile apply" in c]
    profile = words_after(apply, "p4studio")[-1]
    assert profile == "$MMAQM/tools/tofino-model-sde.yaml"
    raw = yaml.safe_load((REPO / "tools" / "tofino-model-sde.yaml").read_text())
    assert set(raw) == {"global-options", "features", "architectures"}   # p4studio's schema
    assert raw["architectures"] == ["tofino"]
    assert raw["features"]["drivers"] == {"bfrt": True, "grpc": True, "p4rt": True}


def test_every_repository_file_the_page_names_exists() -> None:
    named = set(re.findall(r"`((?:tools|ptf-tests|tests|control-plane|p4src|docs)/[^`\s]+)`",
                           DOC.read_text()))
    assert named
    for path in named:
        assert (REPO / path).exists(), path


def test_the_table_lists_test_tnas_tests_and_the_builds_each_runs_on() -> None:
    pytest.importorskip("ptf")
    import test_tna
    rows = dict(re.findall(r"^\| `(Tna\w+Test)` \| ([a-z_, ]+) \|", DOC.read_text(), flags=re.M))
    tests = {name: cls for name, cls in vars(test_tna).items()
             if isinstance(cls, type) and issubclass(cls, test_tna.TnaTest)
             and "runTest" in vars(cls)}
    assert set(rows) == set(tests)
    for name, cls in tests.items():
        assert set(rows[name].split(", ")) == set(cls.VARIANTS), name
