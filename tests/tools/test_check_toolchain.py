"""tools/check-toolchain.sh: whether simple_switch_grpc serves Thrift is judged by what
it does (started briefly, asked `show_ports` with simple_switch_CLI), not by how BMv2 was
linked; the switch it starts is stopped whatever happens.

Most tests run the script against fake tools in a temporary prefix
(P4_TOOLCHAIN_PREFIX): a fake simple_switch_grpc that serves a stand-in for Thrift on
127.0.0.1 (or not, or exits at once), and a fake simple_switch_CLI that asks it. The
last test runs the script against the real BMv2, when it is installed."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "tools" / "check-toolchain.sh"

# The fake switch: --version like BMv2; otherwise records its pid and argv, then (mode
# "thrift") answers every connection on 127.0.0.1:<--thrift-port> with one line, (mode
# "silent") serves nothing, (mode "exit") exits at once, (mode "stubborn") serves
# nothing and ignores SIGTERM.
FAKE_SWITCH = '''
import signal, socket, sys, time
from pathlib import Path
if "--version" in sys.argv:
    print("1.15.5-693e69e6")
    sys.exit(0)
here = Path(__file__).resolve().parent
mode = (here / "mode").read_text().strip()
(here / "switch.pid").write_text(str(__import__("os").getpid()))
(here / "switch.argv").write_text("\\n".join(sys.argv[1:]))
if mode == "exit":
    print("fake: cannot start", file=sys.stderr)
    sys.exit(3)
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if mode == "thrift":
    port = int(sys.argv[sys.argv.index("--thrift-port") + 1])
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen()
    while True:
        conn, _ = srv.accept()
        conn.sendall(b"ports\\n")
        conn.close()
while True:
    time.sleep(1)
'''

# The fake CLI: like simple_switch_CLI, "Could not connect" when nothing listens.
FAKE_CLI = '''
import socket, sys
ip = sys.argv[sys.argv.index("--thrift-ip") + 1] if "--thrift-ip" in sys.argv else "localhost"
if "--help" in sys.argv:
    print("usage: simple_switch_CLI [--thrift-port THRIFT_PORT] [--thrift-ip THRIFT_IP]")
    sys.exit(0)
port = int(sys.argv[sys.argv.index("--thrift-port") + 1])
try:
    with socket.create_connection((ip, port), timeout=2) as conn:
        conn.recv(16)
except OSError:
    print(f"Could not connect to thrift client on port {port}")
    print("Make sure the switch is running and that you have the right port")
    sys.exit(1)
command = sys.stdin.read().strip()
print("Obtaining JSON from switch...\\nDone\\nControl utility for runtime P4 table manipulation")
if command == "show_ports":
    print("RuntimeCmd: port # | iface name | status | extra info")
    print("=" * 50)
'''


def fake_prefix(tmp_path: Path, mode: str) -> Path:
    prefix = tmp_path / "prefix"
    bindir = prefix / "bin"
    bindir.mkdir(parents=True)
    (bindir / "mode").write_text(mode)
    tools = {
        "p4c-bm2-ss": "import sys\nprint('p4c 1.2.5.16 (SHA: fake BUILD: RELEASE)')\n",
        "simple_switch_grpc": FAKE_SWITCH,
        "simple_switch_CLI": FAKE_CLI,
    }
    for name, body in tools.items():
        path = bindir / name
        path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
        path.chmod(0o755)
    return prefix


def run_script(prefix: Path, wait_s: float = 5, **popen) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "P4_TOOLCHAIN_PREFIX": str(prefix), "MMAQM_PYTHON": sys.executable,
           "MMAQM_THRIFT_WAIT_S": str(wait_s)}
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True,
                          timeout=60, **popen)


def switch_gone(prefix: Path) -> bool:
    pid = int((prefix / "bin" / "switch.pid").read_text())
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a zombie whose parent (the script) is gone is reaped by init shortly
        time.sleep(0.1)
    return False


def test_a_switch_that_answers_over_thrift_passes_and_is_stopped(tmp_path: Path) -> None:
    prefix = fake_prefix(tmp_path, "thrift")
    result = run_script(prefix)
    assert "ok: simple_switch_grpc 1.15.5 (" in result.stdout
    assert "ok: simple_switch_grpc serves Thrift (simple_switch_CLI show_ports answered on " \
           "127.0.0.1:" in result.stdout, result.stdout + result.stderr
    assert "Thrift" not in result.stderr
    assert result.returncode == 0, result.stdout + result.stderr
    assert switch_gone(prefix)
    argv = (prefix / "bin" / "switch.argv").read_text().splitlines()
    # no interfaces, no program, gRPC on 127.0.0.1 only
    assert "--no-p4" in argv and "-i" not in argv and "--interface" not in argv
    assert argv[argv.index("--grpc-server-addr") + 1].startswith("127.0.0.1:")
    assert argv[argv.index("--thrift-port") + 1].isdigit()


def test_a_switch_without_thrift_fails_plainly_and_is_stopped(tmp_path: Path) -> None:
    prefix = fake_prefix(tmp_path, "silent")
    started = time.monotonic()
    result = run_script(prefix, wait_s=1)
    assert result.returncode == 1
    assert time.monotonic() - started < 20
    assert "does not answer Thrift" in result.stderr
    assert "Could not connect to thrift client" in result.stderr    # what the CLI said
    assert "--with-thrift" in result.stderr and "WITH_THRIFT" in result.stderr
    assert "serves Thrift" not in result.stdout
    assert switch_gone(prefix)


def test_a_switch_that_exits_at_once_is_reported_with_its_output(tmp_path: Path) -> None:
    prefix = fake_prefix(tmp_path, "exit")
    result = run_script(prefix, wait_s=3)
    assert result.returncode == 1
    assert "exited (3)" in result.stderr and "fake: cannot start" in result.stderr


def test_a_switch_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    prefix = fake_prefix(tmp_path, "stubborn")
    result = run_script(prefix, wait_s=1)
    assert result.returncode == 1 and "does not answer Thrift" in result.stderr
    assert switch_gone(prefix)


def test_the_switch_is_stopped_when_the_script_is_interrupted(tmp_path: Path) -> None:
    prefix = fake_prefix(tmp_path, "silent")
    env = {**os.environ, "P4_TOOLCHAIN_PREFIX": str(prefix), "MMAQM_PYTHON": sys.executable,
           "MMAQM_THRIFT_WAIT_S": "60"}
    proc = subprocess.Popen(["bash", str(SCRIPT)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        pid_file = prefix / "bin" / "switch.pid"
        deadline = time.monotonic() + 20
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pid_file.exists(), "the script never started the switch"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == 143
    assert switch_gone(prefix)


def test_missing_tools_keep_their_messages(tmp_path: Path) -> None:
    prefix = tmp_path / "empty"
    (prefix / "bin").mkdir(parents=True)
    env = {"PATH": f"{prefix / 'bin'}:/usr/bin:/bin", "MMAQM_PYTHON": sys.executable,
           "P4_TOOLCHAIN_PREFIX": str(prefix)}
    result = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 1
    if shutil.which("p4c-bm2-ss", path=env["PATH"]) is None:
        assert "mmaqm: p4c-bm2-ss not found" in result.stderr
    if shutil.which("simple_switch_grpc", path=env["PATH"]) is None:
        assert "simple_switch_grpc not found (BMv2 must be built with --with-pi)" in result.stderr
        assert "simple_switch_CLI not found (installed with BMv2)" in result.stderr
    assert "The P4 toolchain is a prerequisite" in result.stderr


@pytest.mark.skipif(shutil.which("simple_switch_grpc") is None
                    or shutil.which("simple_switch_CLI") is None,
                    reason="BMv2 (simple_switch_grpc, simple_switch_CLI) is not installed")
def test_the_installed_bmv2_serves_thrift() -> None:
    """The real switch: the script starts it, asks it over Thrift, stops it."""
    env = {**os.environ, "MMAQM_PYTHON": sys.executable}
    result = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True,
                            timeout=120)
    match = re.search(r"ok: simple_switch_grpc serves Thrift \(simple_switch_CLI show_ports "
                      r"answered on 127\.0\.0\.1:(\d+)\)", result.stdout)
    assert match, result.stdout + result.stderr
    assert "Thrift" not in result.stderr
    left = [pid for pid in os.listdir("/proc") if pid.isdigit()
            and f"--thrift-port\0{match[1]}\0".encode() in cmdline(pid)]
    assert not left, f"the script left its switch running: pids {left}"


def cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
