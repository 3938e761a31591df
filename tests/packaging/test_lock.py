"""The Python dependency lock: requirements.in (the direct dependencies) and
requirements.txt (the lock `make lock` generates with pip-compile --generate-hashes)
must agree, and the lock must be installable with `pip install --require-hashes`."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO_ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS_IN = REPO_ROOT / "requirements.in"
LOCK = REPO_ROOT / "requirements.txt"
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


def logical_lines(path: Path) -> list[str]:
    """The file's requirement lines: comments dropped, backslash continuations joined."""
    lines: list[str] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            lines.append(line)
    assert not pending, f"{path.name} ends in a continuation line"
    return lines


def direct_requirements() -> dict[str, Requirement]:
    reqs: dict[str, Requirement] = {}
    for line in logical_lines(REQUIREMENTS_IN):
        assert not line.startswith("-"), f"requirements.in: options belong in `make lock`: {line}"
        req = Requirement(line)
        reqs[canonicalize_name(req.name)] = req
    return reqs


def lock_entries(lock: Path = LOCK) -> dict[str, tuple[str, list[str]]]:
    """{name: (pinned version, [hashes])} from the lock."""
    entries: dict[str, tuple[str, list[str]]] = {}
    for line in logical_lines(lock):
        requirement, *options = line.split(" --")
        options = ["--" + o.strip() for o in options]
        assert not requirement.startswith("-"), (
            f"requirements.txt: unexpected option line {line!r} (the lock holds "
            "only hashed pins; run `make lock`)")
        req = Requirement(requirement.strip())
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == "==", (
            f"requirements.txt: {req} is not pinned with == (run `make lock`)")
        hashes = [o for o in options if HASH.fullmatch(o)]
        others = [o for o in options if not HASH.fullmatch(o)]
        assert not others, f"requirements.txt: {req.name}: unexpected options {others}"
        name = canonicalize_name(req.name)
        assert name not in entries, f"requirements.txt: {req.name} appears twice"
        entries[name] = (specs[0].version, hashes)
    return entries


def test_every_lock_entry_is_pinned_and_hashed(lock: Path = LOCK) -> None:
    entries = lock_entries(lock)
    assert entries, "requirements.txt pins nothing"
    unhashed = sorted(name for name, (_, hashes) in entries.items() if not hashes)
    assert not unhashed, f"requirements.txt: no --hash for {unhashed} (run `make lock`)"


def test_every_direct_requirement_is_locked_at_a_matching_version() -> None:
    entries = lock_entries()
    problems = []
    for name, req in direct_requirements().items():
        if name not in entries:
            problems.append(f"{req.name} is in requirements.in but not in the lock")
        elif not req.specifier.contains(entries[name][0], prereleases=True):
            problems.append(f"{req.name}: requirements.in wants {req.specifier}, "
                            f"the lock pins {entries[name][0]}")
    assert not problems, "; ".join(problems) + " (run `make lock`)"


@pytest.mark.parametrize("project", ["control-plane", "oracle", "topologies"])
def test_local_packages_dependencies_are_locked(project: str) -> None:
    """make deps installs the local packages --no-deps: the lock must carry what they need."""
    meta = tomllib.loads((REPO_ROOT / project / "pyproject.toml").read_text())["project"]
    local = {"mmaqm", "mmaqm-exp", "mmaqm-oracle"}
    entries = lock_entries()
    missing = [dep for dep in meta.get("dependencies", [])
               if canonicalize_name(Requirement(dep).name) not in local | set(entries)]
    assert not missing, f"{project}/pyproject.toml needs {missing}, not in requirements.txt"


def test_make_deps_installs_the_lock_with_hashes() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert re.search(r"pip install .*--require-hashes -r requirements\.txt", makefile)
    assert re.search(r"pip-compile .*--generate-hashes", makefile.replace("\\\n", " "))


# ---- the parser itself, on small made-up files
def test_parser_joins_continuations_and_reads_hashes(tmp_path: Path) -> None:
    lock = tmp_path / "requirements.txt"
    lock.write_text("# header\n"
                    "abc==1.0 \\\n    --hash=sha256:" + "a" * 64 + " \\\n"
                    "    --hash=sha256:" + "b" * 64 + "\n    # via x\n"
                    "Def_Pkg==2.0 \\\n    --hash=sha256:" + "c" * 64 + "\n")
    assert lock_entries(lock) == {"abc": ("1.0", ["--hash=sha256:" + "a" * 64,
                                              "--hash=sha256:" + "b" * 64]),
                              "def-pkg": ("2.0", ["--hash=sha256:" + "c" * 64])}


@pytest.mark.parametrize("text, message", [
    ("abc>=1.0 \\\n    --hash=sha256:" + "a" * 64 + "\n", "not pinned"),
    ("--find-links /opt/wheels\nabc==1.0 \\\n    --hash=sha256:" + "a" * 64 + "\n",
     "unexpected option line"),
])
def test_parser_rejects_unpinned_and_option_lines(tmp_path: Path, text: str,
                                                  message: str) -> None:
    lock = tmp_path / "requirements.txt"
    lock.write_text(text)
    with pytest.raises(AssertionError, match=message):
        lock_entries(lock)


def test_an_unhashed_pin_is_reported(tmp_path: Path) -> None:
    lock = tmp_path / "requirements.txt"
    lock.write_text("abc==1.0\n")
    with pytest.raises(AssertionError, match=r"no --hash for \['abc'\]"):
        test_every_lock_entry_is_pinned_and_hashed(lock)
