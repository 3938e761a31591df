"""Run `mmaqm-ctl check` on every hostile config and check how each is refused.

Each config must give exit 2 (invalid config), no "Traceback" in the output, in
under MAX_WALL_S wall time and under MAX_RSS_MB peak memory (ru_maxrss of the
process that ran it). Besides the committed corpus (tests/controller/hostile_configs,
tools/gen_hostile_configs.py) it makes the cases that are too large to commit or
are no files at all: a file over the 1 MiB cap, a 1 MiB flow list, a 500 kB key and
value, 24 000 switches, 24 000 unknown keys, a FIFO without a writer, /dev/zero, a
directory, a link to /dev/zero.

    .venv/bin/python tools/run_hostile_configs.py            # the corpus + generated
    .venv/bin/python tools/run_hostile_configs.py --exe FILE...  # via the installed CLI

Two ways to run each case, both the CLI's own entry point (mmaqm.cli.main with
the argv "check -c FILE"): by default a child forked from this process after the
import (startup is ~0.2 s of a ~0.25 s run: the corpus takes seconds, not
a minute); with --exe a fresh `mmaqm-ctl` process each. One JSON line per case,
then a summary line; exit 0 when every case passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "controller" / "hostile_configs"
MAX_WALL_S = 2.0
MAX_RSS_MB = 200.0
KILL_AFTER_S = 20.0                   # a case still running then is killed (a hang)
EXIT_CONFIG = 2


def generated_cases(directory: Path) -> list[Path]:
    """The cases made at run time, in directory (which the caller removes)."""
    big = directory / "over-1MiB.yaml"
    big.write_bytes(b"# " + b"x" * (1 << 20) + b"\n")
    flat = directory / "flow-list-1MiB.yaml"
    flat.write_text("a: [" + "1," * ((1 << 20) // 2 - 8) + "1]\n")
    long_value = directory / "value-500kB.yaml"
    long_value.write_text('switches: {s1: {p4runtime_addr: "' + "a" * 500_000 + '"}}\n')
    long_key = directory / "key-500kB.yaml"
    long_key.write_text("switches: {" + "k" * 500_000 + ": 1}\n")
    keys = directory / "24000-switches.yaml"              # ~48 000 values: near the cap
    keys.write_text("switches:\n" + "".join(f"  s{i}: 1\n" for i in range(24_000)))
    typos = directory / "24000-unknown-policy-keys.yaml"   # one difflib each, were they all
    typos.write_text('switches:\n  s1:\n    p4runtime_addr: "127.0.0.1:9559"\n'
                     '    ports: {1: {mac: "02:00:00:00:00:01"}}\n'
                     '    policies:\n      default:\n        algorithm: RED\n'
                     + "".join(f"        max_th_pkts_{i}: 1\n" for i in range(24_000)))
    fifo = directory / "fifo-no-writer.yaml"
    os.mkfifo(fifo)
    subdir = directory / "a-directory.yaml"
    subdir.mkdir()
    zero_link = directory / "link-to-dev-zero.yaml"
    zero_link.symlink_to("/dev/zero")
    return [big, flat, long_value, long_key, keys, typos, fifo, subdir, zero_link,
            Path("/dev/zero")]


def _wait(pid: int, started: float) -> tuple[int, float, float]:
    """(exit status, wall s, peak RSS MB) of child pid, killed after KILL_AFTER_S:
    wait4 gives that child's own rusage."""
    deadline = started + KILL_AFTER_S
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            break
        time.sleep(0.002)
    wall = time.monotonic() - started
    return os.waitstatus_to_exitcode(status), wall, usage.ru_maxrss / 1024


def _forked(argv: list[str]) -> tuple[int, str, float, float]:
    """(exit status, stdout + stderr, wall s, peak RSS MB) of mmaqm.cli.main(argv) in
    a forked child."""
    from mmaqm import cli
    with tempfile.TemporaryFile() as out:
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:                                   # the child: the CLI, then exit
            code = 1
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(out.fileno(), 2)
                sys.stdout = open(1, "w", closefd=False)
                sys.stderr = open(2, "w", closefd=False)
                code = cli.main(argv)
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
            except BaseException:                      # noqa: BLE001 - shown as it would be
                import traceback
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        code, wall, rss = _wait(pid, started)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return code, text, wall, rss


def _exe(argv: list[str]) -> tuple[int, str, float, float]:
    """The same through a fresh `mmaqm-ctl` process (next to this Python)."""
    exe = Path(sys.executable).with_name("mmaqm-ctl")
    ctl = str(exe) if exe.exists() else (shutil.which("mmaqm-ctl") or "mmaqm-ctl")
    with tempfile.TemporaryFile() as out:
        started = time.monotonic()
        proc = subprocess.Popen([ctl, *argv], stdout=out, stderr=subprocess.STDOUT)
        code, wall, rss = _wait(proc.pid, started)
        proc.returncode = code                         # reaped here: Popen must not wait
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return code, text, wall, rss


def run_case(path: Path, *, exe: bool = False) -> dict[str, object]:
    argv = ["check", "-c", str(path)]
    code, text, wall, rss = (_exe if exe else _forked)(argv)
    problems = []
    if code != EXIT_CONFIG:
        problems.append(f"exit {code}, not {EXIT_CONFIG}")
    if "Traceback" in text:
        problems.append("a traceback")
    if wall >= MAX_WALL_S:
        problems.append(f"{wall:.2f} s >= {MAX_WALL_S} s")
    if rss >= MAX_RSS_MB:
        problems.append(f"{rss:.0f} MB >= {MAX_RSS_MB:.0f} MB")
    return {"config": path.name, "exit": code, "wall_s": round(wall, 3),
            "maxrss_mb": round(rss, 1), "ok": not problems, "problems": problems,
            "output": text[:300]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*", type=Path,
                        help=f"configs or directories [{CORPUS.relative_to(REPO)} and the "
                             f"generated cases]")
    parser.add_argument("--exe", action="store_true",
                        help="run each through a fresh mmaqm-ctl process")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mmaqm-hostile-") as tmp:
        paths: list[Path] = []
        for given in args.configs or [CORPUS]:
            paths += sorted(given.glob("*.yaml")) if given.is_dir() else [given]
        if not args.configs:
            paths += generated_cases(Path(tmp))
        results = [run_case(path, exe=args.exe) for path in paths]
    for result in results:
        print(json.dumps(result, ensure_ascii=True))
    failed = [r for r in results if not r["ok"]]
    print(json.dumps({"cases": len(results), "failed": len(failed),
                      "max_wall_s": max((r["wall_s"] for r in results), default=0),
                      "max_maxrss_mb": max((r["maxrss_mb"] for r in results), default=0)}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
