#!/usr/bin/env python3
"""Run the mmaqm PTF conformance suite against a real simple_switch_grpc.

Everything lives in one network namespace made for the run: veth pairs
swN <-> ptfN (N = 1..NUM_PORTS, IPv6 off, TX checksum offload off), BMv2 with
sw1..swN as ports 1..N, P4Runtime on 127.0.0.1 and Thrift on its default port,
both reachable only inside the namespace. The pipeline is pushed with the
project's controller library, then `ptf` (never with --relax) runs the tests.
The namespace, its veths and the switch are removed on exit, on failure and
on Ctrl-C; a namespace left by a killed run is removed before starting.

Exit status: ptf's. With --xunit-dir, ptf writes JUnit XML there.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "ptf-tests" / "ptf-config.yaml"  # the tests' baseline; must match GRPC_ADDR
NETNS = os.environ.get("MMAQM_PTF_NETNS", "mmaqm-ptf")  # override to run two suites at once
NUM_PORTS = 4
GRPC_ADDR = "127.0.0.1:9559"
THRIFT_PORT = 9090
DEVICE_ID = 1  # switch and controller must agree (DESIGN §1)


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def in_ns(*argv: str) -> list[str]:
    return ["ip", "netns", "exec", NETNS, *argv]


def teardown(switch: subprocess.Popen[bytes] | None) -> None:
    if switch is not None and switch.poll() is None:
        os.killpg(switch.pid, signal.SIGTERM)
        try:
            switch.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(switch.pid, signal.SIGKILL)
            switch.wait()
    # Any process still inside the namespace (a crashed earlier run) goes too.
    pids = sh("ip", "netns", "pids", NETNS, check=False).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    if NETNS in sh("ip", "netns", "list", check=False).stdout.split():
        sh("ip", "netns", "delete", NETNS, check=False)  # also deletes its veths


def setup_namespace() -> None:
    sh("ip", "netns", "add", NETNS)
    sh(*in_ns("ip", "link", "set", "lo", "up"))
    sh(*in_ns("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"))
    sh(*in_ns("sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"))
    for n in range(1, NUM_PORTS + 1):
        sh(*in_ns("ip", "link", "add", f"sw{n}", "type", "veth", "peer", "name", f"ptf{n}"))
        for ifname in (f"sw{n}", f"ptf{n}"):
            sh(*in_ns("sysctl", "-qw", f"net.ipv6.conf.{ifname}.disable_ipv6=1"))
            # Checksum offload off: DESIGN §1. Segmentation/GRO offloads off as well:
            # with any of them on, libpcap (BMv2's port I/O) sizes its receive-ring
            # frames for 256 KiB packets, the default 2 MiB ring then holds only a
            # few dozen frames, and a line-rate burst loses packets before ingress
            # (measured: 47 of 121 back-to-back packets reached the pipeline).
            sh(*in_ns("ethtool", "-K", ifname, "tx", "off", "rx", "off", "tso", "off",
                      "gso", "off", "gro", "off"))
            sh(*in_ns("ip", "link", "set", ifname, "mtu", "1500", "up"))


def start_switch(log_dir: Path) -> subprocess.Popen[bytes]:
    log_dir.mkdir(parents=True, exist_ok=True)
    argv = [
        "simple_switch_grpc", "--device-id", str(DEVICE_ID), "--no-p4",
        "--thrift-port", str(THRIFT_PORT),
        "--log-file", str(log_dir / "bmv2"), "--log-flush",
        "--log-level", os.environ.get("MMAQM_BMV2_LOG_LEVEL", "info"),
    ]
    for n in range(1, NUM_PORTS + 1):
        argv += ["-i", f"{n}@sw{n}"]
    argv += ["--", "--grpc-server-addr", GRPC_ADDR]
    out = open(log_dir / "bmv2.stdout", "wb")
    return subprocess.Popen(in_ns(*argv), stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)


def push_pipeline(log_dir: Path) -> None:
    """Push the pipeline and the baseline config with the project's own CLI,
    run inside the namespace (gRPC listens on the namespace's loopback only)."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "control-plane"))
    with open(log_dir / "mmaqm-ctl.log", "w") as log:
        rc = subprocess.run(in_ns(sys.executable, "-m", "mmaqm.cli", "--config",
                                  str(CONFIG), "install"),
                            env=env, stdout=log, stderr=subprocess.STDOUT, timeout=120).returncode
    if rc != 0:
        raise RuntimeError(f"mmaqm-ctl install exited {rc}; see {log_dir / 'mmaqm-ctl.log'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tests", nargs="*", help="test names, e.g. test_red.RedForcedDropTest")
    parser.add_argument("--xunit-dir", type=Path)
    parser.add_argument("--log-dir", type=Path, default=REPO / "build" / "ptf")
    args = parser.parse_args()

    if os.geteuid() != 0:
        print("run_ptf: needs root (network namespaces, veths)", file=sys.stderr)
        return 2
    for tool in ("simple_switch_grpc", "simple_switch_CLI", "ptf"):
        if shutil.which(tool) is None and not (Path(sys.executable).parent / tool).exists():
            print(f"run_ptf: {tool} not found; run 'make deps'", file=sys.stderr)
            return 2

    switch = None

    def on_signal(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    try:
        teardown(None)  # leftovers of a killed run
        setup_namespace()
        switch = start_switch(args.log_dir)
        push_pipeline(args.log_dir)
        if switch.poll() is not None:
            print(f"run_ptf: simple_switch_grpc exited; see {args.log_dir}", file=sys.stderr)
            return 2
        ptf = str(Path(sys.executable).parent / "ptf")
        argv = [sys.executable, ptf, "--test-dir", str(REPO / "ptf-tests" / "tests"),
                "--test-params",
                f"grpc_addr='{GRPC_ADDR}';device_id={DEVICE_ID};thrift_port={THRIFT_PORT};"
                f"repo='{REPO}'",
                "--log-file", str(args.log_dir / "ptf.log")]
        for n in range(1, NUM_PORTS + 1):
            argv += ["-i", f"{n}@ptf{n}"]
        if args.xunit_dir:
            args.xunit_dir.mkdir(parents=True, exist_ok=True)
            argv += ["--xunit", "--xunit-dir", str(args.xunit_dir)]
        argv += args.tests
        env = dict(os.environ, PYTHONPATH=str(REPO / "control-plane"))
        started = time.monotonic()
        rc = subprocess.run(in_ns(*argv), env=env).returncode
        print(f"run_ptf: ptf exited {rc} after {time.monotonic() - started:.0f} s")
        if switch.poll() is not None:
            print("run_ptf: simple_switch_grpc died during the suite", file=sys.stderr)
            rc = rc or 1
        return rc
    except KeyboardInterrupt:
        print("run_ptf: interrupted; cleaning up", file=sys.stderr)
        return 130
    finally:
        teardown(switch)


if __name__ == "__main__":
    sys.exit(main())
