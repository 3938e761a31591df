"""tools/build-tna.sh: without the Tofino compiler it says what is missing and
fails; with one (here a stand-in that writes the schema fixture) it compiles
every variant and writes the resource table."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tools" / "build-tna.sh"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "tna" / "red" / "pipe"


def run(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=120)


def bare_env(tmp_path: Path) -> dict:
    """PATH with python3 and the shell tools only: no p4c, no bf-p4c."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # the interpreter itself: a python3 on PATH may be a shim (pyenv) that needs more PATH
    (bin_dir / "python3").symlink_to(os.path.realpath(sys.executable))
    for tool in ("bash", "env", "dirname", "tr", "rm", "mkdir", "grep", "head",
                 "cat", "cp", "sort"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    env = {k: v for k, v in os.environ.items() if k not in ("BF_P4C", "P4_TOOLCHAIN_PREFIX")}
    env["PATH"] = str(bin_dir)
    return env


def test_without_the_compiler_it_says_what_is_missing_and_fails(tmp_path: Path) -> None:
    env = bare_env(tmp_path)
    result = run(env=env)
    assert result.returncode == 1
    for needed in ("bf-p4c", "p4c-barefoot", "-DENABLE_TOFINO=ON", "Z3 4.8.14 .. 4.11",
                   "spdlog", "RapidJSON", "jsonschema==2.6.0", "jsl", "pyinstaller", "pyyaml"):
        assert needed in result.stderr, needed
    check = run("--check", env=env)
    assert check.returncode == 1 and "not installed" in check.stdout


def test_with_a_compiler_every_variant_gets_a_row(tmp_path: Path) -> None:
    env = bare_env(tmp_path)
    fake = tmp_path / "bin" / "bf-p4c"
    fake.write_text(f"""#!/bin/bash
# stand-in for bf-p4c: -o DIR, writes the schema fixture as DIR/pipe
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
mkdir -p "$out" && cp -r {FIXTURE} "$out/pipe"
""")
    fake.chmod(0o755)
    out = tmp_path / "tna"
    env.update(TNA_VARIANTS="RED DCBT", TNA_BUILD_DIR=str(out))
    result = run(env=env)
    assert result.returncode == 0, result.stderr
    assert "ok: RED compiled" in result.stdout and "ok: DCBT compiled" in result.stdout
    table = (out / "resources.md").read_text()
    assert "| dcbt | 4 / 12 |" in table and "| red | 4 / 12 |" in table
    assert run("--check", env=env).returncode == 0


def fake_driver_that_stops_before_the_assembler(tmp_path: Path, bfas_body: str) -> dict:
    """A p4c driver as v1.2.5.16's: the compiler writes pipe/ with main.bfa, then
    the Python driver fails ('PosixPath' ... 'find'); and a stand-in bfas."""
    env = bare_env(tmp_path)
    fake = tmp_path / "bin" / "bf-p4c"
    fake.write_text(f"""#!/bin/bash
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
mkdir -p "$out" && cp -r {FIXTURE} "$out/pipe" && rm -f "$out/pipe/tofino.bin"
echo 'stage 0: tables' > "$out/pipe/main.bfa"
echo "AttributeError: 'PosixPath' object has no attribute 'find'" >&2
exit 1
""")
    fake.chmod(0o755)
    bfas = tmp_path / "bin" / "bfas"
    bfas.write_text("#!/bin/bash\n" + bfas_body)
    bfas.chmod(0o755)
    return env


def build_red_after_the_drivers_bug(tmp_path: Path, bfas_body: str):
    """make build-tna of RED into tmp_path/tna with that driver and this bfas."""
    env = fake_driver_that_stops_before_the_assembler(tmp_path, bfas_body)
    out = tmp_path / "tna"
    env.update(TNA_VARIANTS="RED", TNA_BUILD_DIR=str(out))
    return run(env=env), out


def test_after_the_drivers_assembler_bug_it_runs_bfas_itself(tmp_path: Path) -> None:
    result, out = build_red_after_the_drivers_bug(
        tmp_path, 'while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done\n'
                  'echo binary > "$out/tofino.bin"\n')
    assert result.returncode == 0, result.stderr
    assert "ok: RED compiled" in result.stdout
    assert "running" in (out / "red.compile.log").read_text()
    assert "| red | 4 / 12 |" in (out / "resources.md").read_text()


def test_a_program_over_the_stages_fails_with_the_assemblers_reason(tmp_path: Path) -> None:
    result, out = build_red_after_the_drivers_bug(
        tmp_path, 'echo "pipe/main.bfa:3966: error: tofino supports up to 12 stages, using 13" >&2\n'
                  'exit 1\n')
    assert result.returncode == 1
    assert "FAIL: RED does not compile for Tofino" in result.stderr
    assert "supports up to 12 stages, using 13" in result.stderr
    assert "| red | 4 / 12 (does not fit) |" in (out / "resources.md").read_text()
