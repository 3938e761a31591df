"""The control-plane package installs and runs outside the checkout.

A fresh virtualenv in a temporary directory outside the repository gets a
non-editable `pip install` of (a copy of) control-plane/, with its runtime
dependencies taken from the lock (requirements.txt: the same pins and hashes as
`make deps`, installed with --require-hashes, so pip's cache serves them when
`make deps` ran before; PyPI otherwise). Then, from a directory outside the
repository, the installed `mmaqm-ctl`:

* imports every module without opening any file of the checkout;
* `check`s a config (and rejects a bad one with its field path);
* `install`s a switch: a simple_switch_grpc started briefly with no program and no
  interfaces on 127.0.0.1, given the P4Info and BMv2 JSON from build/ (skipped
  without BMv2 or without `make build`'s output).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import tomllib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import bmv2_switch

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTROL_PLANE = REPO_ROOT / "control-plane"
LOCK = REPO_ROOT / "requirements.txt"
BUILD = REPO_ROOT / "build"
PIP_TIMEOUT_S = 600

VALID_CONFIG = """\
switches:
  s1:
    p4runtime_addr: {address}
    device_id: 1
    ports:
      1: {{mac: "02:00:00:00:00:01"}}
      2: {{mac: "02:00:00:00:00:02"}}
    routes:
      - {{prefix: 10.0.1.0/24, port: 1, next_hop_mac: "02:00:00:01:00:01"}}
      - {{prefix: 10.0.2.0/24, port: 2, next_hop_mac: "02:00:00:02:00:01"}}
    policies:
      default: {{algorithm: DROP_TAIL, queue_limit_pkts: 50}}
      2: {{algorithm: RED, min_th_pkts: 5, max_th_pkts: 15, max_p: 0.1,
          queue_limit_pkts: 60}}
"""


def outside_env() -> dict[str, str]:
    """The environment without anything that points Python at the checkout."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")
           and not k.startswith("MMAQM_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run(argv: list[str | Path], cwd: Path, timeout: float = 120,
        check: bool = False) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(a) for a in argv], cwd=cwd, env=outside_env(),
                            capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        pytest.fail(f"{' '.join(map(str, argv))} exited {result.returncode}:\n"
                    f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result


def runtime_closure(requirements: list[str]) -> set[str]:
    """Canonical names of these requirements and everything they need, from the
    distributions installed in this interpreter (the venv `make deps` built from the lock)."""
    env = default_environment()
    env["extra"] = ""
    needed: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        name = canonicalize_name(req.name)
        if name in needed:
            continue
        needed.add(name)
        todo.extend(Requirement(r) for r in (metadata.requires(req.name) or []))
    return needed


def lock_blocks() -> dict[str, str]:
    """{canonical name: its whole block of the lock (pin, hashes)}."""
    blocks: dict[str, str] = {}
    for block in re.split(r"\n(?=\S)", LOCK.read_text()):
        first = block.split(None, 1)[0] if block.strip() else ""
        if "==" in first and not first.startswith(("#", "-")):
            lines = [ln for ln in block.splitlines() if not ln.lstrip().startswith("#")]
            blocks[canonicalize_name(first.split("==")[0])] = "\n".join(lines).rstrip(" \\")
    return blocks


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory outside the checkout."""
    path = tmp_path_factory.mktemp("outside")
    assert not path.resolve().is_relative_to(REPO_ROOT), f"{path} is inside {REPO_ROOT}"
    return path


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv outside the checkout with control-plane installed (not editable)."""
    root = tmp_path_factory.mktemp("mmaqm-install")
    assert not root.resolve().is_relative_to(REPO_ROOT)
    venv = root / "venv"
    base_python = getattr(sys, "_base_executable", sys.executable)
    run([base_python, "-m", "venv", venv], cwd=root, check=True)
    python = venv / "bin" / "python"

    # Runtime dependencies: the lock's pins and hashes for what the package needs.
    declared = tomllib.loads((CONTROL_PLANE / "pyproject.toml").read_text())["project"]
    needed = runtime_closure(declared.get("dependencies", []))
    blocks = lock_blocks()
    missing = sorted(needed - set(blocks))
    assert not missing, f"the lock has no pin for {missing}, which mmaqm needs (make lock)"
    deps = root / "runtime-requirements.txt"
    deps.write_text("\n".join(blocks[name] for name in sorted(needed)) + "\n")
    run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
         "--require-hashes", "-r", deps], cwd=root, timeout=PIP_TIMEOUT_S, check=True)

    # The package itself, from a copy: pip builds in the source tree, which stays clean.
    source = root / "src" / "control-plane"
    shutil.copytree(CONTROL_PLANE, source, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__", "*.pyc"))
    # Built as pip builds any project: setuptools>=61 in an isolated build environment
    # (from pip's cache, which `make deps` filled for the editable installs; PyPI otherwise).
    run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
         source], cwd=root, timeout=PIP_TIMEOUT_S, check=True)
    shutil.rmtree(source.parent)     # nothing of the source is left to import from
    return venv


def test_the_package_imports_from_the_venv_and_reads_no_checkout_file(
        venv: Path, outside: Path) -> None:
    probe = textwrap.dedent(f"""
        import importlib, json, pkgutil, sys
        opened = []
        repo = {str(REPO_ROOT)!r}
        def hook(event, args):
            if event == "open" and isinstance(args[0], str) and args[0].startswith(repo):
                opened.append(args[0])
        sys.addaudithook(hook)
        import mmaqm
        names = [m.name for m in pkgutil.walk_packages(mmaqm.__path__, "mmaqm.")]
        for name in names:
            importlib.import_module(name)
        print(json.dumps({{"file": mmaqm.__file__, "modules": names, "opened": opened}}))
    """)
    result = run([venv / "bin" / "python", "-c", probe], cwd=outside, check=True)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert Path(report["file"]).resolve().is_relative_to(venv.resolve()), report["file"]
    assert {"mmaqm.cli", "mmaqm.p4constants", "mmaqm.driver",
            "mmaqm.targets.tna"} <= set(report["modules"])
    assert report["opened"] == [], f"importing mmaqm opened checkout files: {report['opened']}"


def test_mmaqm_ctl_checks_a_config_outside_the_checkout(venv: Path, outside: Path) -> None:
    ctl = venv / "bin" / "mmaqm-ctl"
    assert ctl.exists(), "the console script mmaqm-ctl was not installed"
    config = outside / "cfg.yaml"
    config.write_text(VALID_CONFIG.format(address="127.0.0.1:9559"))
    result = run([ctl, "check", "-c", config.name], cwd=outside)
    assert result.returncode == 0, result.stdout + result.stderr

    bad = outside / "bad.yaml"
    bad.write_text(VALID_CONFIG.format(address="127.0.0.1:9559")
                   .replace("max_th_pkts: 15", "max_th_pkts: 3"))
    result = run([ctl, "check", "-c", bad.name], cwd=outside)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "switches.s1.policies.2." in result.stdout + result.stderr

    version = run([ctl, "--version"], cwd=outside)
    assert version.returncode == 0 and "0.1.0" in version.stdout + version.stderr


@pytest.fixture
def bmv2(outside: Path) -> Iterator[str]:
    """A simple_switch_grpc with no program and no interfaces; yields its gRPC address."""
    missing = [f for f in (BUILD / "main.json", BUILD / "main.p4info.txtpb") if not f.exists()]
    if shutil.which("simple_switch_grpc") is None:
        pytest.skip("simple_switch_grpc (BMv2 with PI) is not installed: "
                    "the P4 toolchain is a prerequisite (tools/check-toolchain.sh)")
    if missing:
        pytest.skip(f"{', '.join(map(str, missing))} missing: run `make build` first")
    with bmv2_switch.bmv2(outside) as address:
        yield address


def _switch_log(outside: Path) -> str:
    return "".join(log.read_text() for log in outside.glob("bmv2-*.log"))


def test_mmaqm_ctl_installs_a_switch_outside_the_checkout(
        venv: Path, outside: Path, bmv2: str) -> None:
    config = outside / "switch.yaml"
    config.write_text(VALID_CONFIG.format(address=bmv2))
    started = time.monotonic()
    result = run([venv / "bin" / "mmaqm-ctl", "install", "-c", config.name,
                  "--p4info", BUILD / "main.p4info.txtpb", "--bmv2-json", BUILD / "main.json",
                  "--timeout-s", "20"], cwd=outside, timeout=120)
    assert result.returncode == 0, (result.stdout + result.stderr
                                    + _switch_log(outside)[-2000:])
    assert time.monotonic() - started < 60
    # the controller's log line for the switch (routes and port policies written)
    assert re.search(r"s1: installed \d+ routes?, \d+ port polic", result.stderr + result.stdout), \
        result.stdout + result.stderr
