"""BMv2 traffic-manager settings over Thrift (simple_switch_CLI).

P4Runtime has no call for a port's queue rate or depth, so runners and tests
use BMv2's Thrift CLI for two commands: set_queue_rate (packets/s;
0 = unlimited) and set_queue_depth (packets). It is a second control channel:
used for building queues in tests and bottlenecks in topologies, never for
AQM state. Tests also read registers through it (register_read: BMv2's
P4Runtime server cannot), to check state the counters do not show. The Thrift server must be reachable only inside the switch's
network namespace (docs/design.md §1.5: no authentication).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

# simple_switch.thrift's argument types: set_egress_queue_depth(i32 port_num,
# i32 depth_pkts), set_egress_queue_rate(i32 port_num, i64 rate_pps). A value beyond
# them is refused here, before the CLI (which would wrap it or fail obscurely).
THRIFT_I32_MAX = 2**31 - 1
THRIFT_I64_MAX = 2**63 - 1

# simple_switch_CLI lives beside BMv2's own Python modules; it must run as its
# own process so that they never share an interpreter with finsy (docs/design.md §1.4).
# It runs under this interpreter (the project venv, where `thrift` is pinned):
# its `#!/usr/bin/env python3` line may find a Python without thrift.


def _cli(thrift_port: int, commands: list[str], netns: str | None = None) -> str:
    cli = shutil.which("simple_switch_CLI")
    if cli is None:
        raise FileNotFoundError("simple_switch_CLI not found: see README 'Install'")
    argv = [sys.executable, cli, "--thrift-port", str(thrift_port)]
    if netns:
        argv = ["ip", "netns", "exec", netns, *argv]
    proc = subprocess.run(
        argv, input="\n".join(commands) + "\n", capture_output=True, text=True, timeout=30
    )
    out = proc.stdout + proc.stderr
    if proc.returncode != 0 or "Error" in out or "Invalid" in out:
        raise RuntimeError(f"simple_switch_CLI {commands}: {out.strip()}")
    return out


def _check_int(name: str, value: object, lo: int, hi: int) -> None:
    """value is an int (not a bool, not a float) in lo..hi; else ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer in {lo}..{hi}, got {value!r}")


def set_queue_rate(thrift_port: int, port: int, rate_pps: int, netns: str | None = None) -> None:
    """Egress queue rate of one port in packets per second (0 = unlimited)."""
    _check_int("port", port, 0, THRIFT_I32_MAX)
    _check_int("rate_pps", rate_pps, 0, THRIFT_I64_MAX)
    _cli(thrift_port, [f"set_queue_rate {rate_pps} {port}"], netns)


def set_queue_depth(thrift_port: int, port: int, depth_pkts: int, netns: str | None = None) -> None:
    """Egress queue depth of one port in packets (BMv2 default 64)."""
    _check_int("port", port, 0, THRIFT_I32_MAX)
    _check_int("depth_pkts", depth_pkts, 1, THRIFT_I32_MAX)
    _cli(thrift_port, [f"set_queue_depth {depth_pkts} {port}"], netns)


def set_queues(thrift_port: int, *, rates_pps: dict[int, int] | None = None,
               depths_pkts: dict[int, int] | None = None, netns: str | None = None) -> None:
    """Several ports' depths (packets), then rates (packets/s; 0 = unlimited), in one
    simple_switch_CLI run (each run is a process: a test's setup took twelve). Every
    value is checked before any is set."""
    commands = []
    for port, depth in (depths_pkts or {}).items():
        _check_int("port", port, 0, THRIFT_I32_MAX)
        _check_int("depth_pkts", depth, 1, THRIFT_I32_MAX)
        commands.append(f"set_queue_depth {depth} {port}")
    for port, rate in (rates_pps or {}).items():
        _check_int("port", port, 0, THRIFT_I32_MAX)
        _check_int("rate_pps", rate, 0, THRIFT_I64_MAX)
        commands.append(f"set_queue_rate {rate} {port}")
    if commands:
        _cli(thrift_port, commands, netns)


_REGISTER_VALUE_RE = re.compile(r"([\w.]+)\[(\d+)\]\s*=\s*(\d+)")   # control.register[i]


def register_write(thrift_port: int, writes: list[tuple[str, int, int]],
                   netns: str | None = None) -> None:
    """Write each (register, index, value), in one CLI run (tests only: a switch's
    registers are its data plane's own state)."""
    for name, index, value in writes:
        if not isinstance(name, str) or not name.replace("_", "").replace(".", "").isalnum():
            raise ValueError(f"register name must be an identifier, got {name!r}")
        _check_int("index", index, 0, 2**32 - 1)
        _check_int("value", value, 0, 2**64 - 1)
    _cli(thrift_port, [f"register_write {n} {i} {v}" for n, i, v in writes], netns)


def register_read(thrift_port: int, reads: list[tuple[str, int]],
                  netns: str | None = None) -> dict[tuple[str, int], int]:
    """{(register, index): value} for each (register, index), in one CLI run."""
    out = _cli(thrift_port, [f"register_read {name} {index}" for name, index in reads], netns)
    values = {(m.group(1), int(m.group(2))): int(m.group(3))
              for m in _REGISTER_VALUE_RE.finditer(out)}
    missing = [f"{n}[{i}]" for n, i in reads if (n, i) not in values]
    if missing:
        raise RuntimeError(f"simple_switch_CLI register_read: no value for {missing}: {out.strip()}")
    return values
