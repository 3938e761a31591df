#!/usr/bin/env python3
"""Run the mmaqm PTF conformance suite against a real simple_switch_grpc.

Everything lives in one network namespace made for the run with
topologies/mmaqm_exp/lab.py (the project's one namespace lifecycle): veth pairs
swN <-> ptfN (N = 1..NUM_PORTS; both ends raw ports: IPv6 off, checksum,
segmentation and GRO offloads off), BMv2 with sw1..swN as ports 1..N,
P4Runtime on 127.0.0.1 and Thrift on its default port, both reachable only
inside the namespace. The pipeline is pushed with the project's controller
library, then `ptf` (never with --relax) runs the tests. The namespace, its
veths, the switch and ptf are removed on exit, on failure and on Ctrl-C or
SIGTERM; a namespace left by a killed run is removed before starting.

Exit status: ptf's; 2 if the test bed could not be set up; 128 + the signal
number when stopped by one. With --xunit-dir, ptf writes JUnit XML there.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
from mmaqm_exp import lab  # noqa: E402

sys.path.insert(0, str(REPO / "ptf-tests" / "tests"))
import mmaqm_profiles  # noqa: E402

CONFIG = REPO / "ptf-tests" / "ptf-config.yaml"  # the tests' baseline; must match GRPC_PORT
# Override to run two suites at once (e.g. mmaqm-ptf2: a run also removes leftovers named
# <its namespace>-*, so one suite's name must not be another's plus "-...").
NETNS = os.environ.get("MMAQM_PTF_NETNS", "mmaqm-ptf")
NUM_PORTS = 4
GRPC_PORT = 9559
THRIFT_PORT = 9090
DEVICE_ID = 1  # switch and controller must agree (docs/design.md §1.1)
PIPELINE_TIMEOUT_S = 120


def setup_namespace(bed: lab.Lab) -> None:
    bed.add_namespace(NETNS)
    bed.add_veths([(lab.VethEnd(NETNS, f"sw{n}", lab.RAW_PORT, mtu=1500),
                    lab.VethEnd(NETNS, f"ptf{n}", lab.RAW_PORT, mtu=1500))
                   for n in range(1, NUM_PORTS + 1)])


def start_switch(bed: lab.Lab, log_dir: Path) -> subprocess.Popen:
    spec = lab.SwitchSpec({n: f"sw{n}" for n in range(1, NUM_PORTS + 1)}, device_id=DEVICE_ID,
                          grpc_port=GRPC_PORT, thrift_port=THRIFT_PORT,
                          out_path=log_dir / "bmv2.stdout", log_file=log_dir / "bmv2",
                          log_level=os.environ.get("MMAQM_BMV2_LOG_LEVEL", "info"))
    [switch] = bed.start_switches(NETNS, [spec])
    return switch


def profile_files(profile: str) -> tuple[Path, Path]:
    """(BMv2 JSON, P4Info) of a profile build (make build PROFILE=<profile>)."""
    d = REPO / "build" / profile.lower()
    return d / "main.json", d / "main.p4info.txtpb"


def push_pipeline(bed: lab.Lab, log_dir: Path, profile: str | None = None) -> None:
    """Push the pipeline and the baseline config with the project's own CLI,
    run inside the namespace (gRPC listens on the namespace's loopback only).
    profile: that profile's program instead of the all-in-one's (same baseline)."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "control-plane"))
    argv = [sys.executable, "-m", "mmaqm.cli", "--config", str(CONFIG), "install"]
    if profile:
        json_path, p4info = profile_files(profile)
        argv = [sys.executable, "-m", "mmaqm.cli", "--config",
                str(CONFIG), "--p4info", str(p4info), "install",
                "--bmv2-json", str(json_path)]
    with open(log_dir / "mmaqm-ctl.log", "w") as log:
        rc = bed.run(NETNS, argv,
                     timeout_s=PIPELINE_TIMEOUT_S, check=False, env=env, stdout=log,
                     stderr=subprocess.STDOUT).returncode
    if rc != 0:
        raise lab.LabError(f"mmaqm-ctl install exited {rc}; see {log_dir / 'mmaqm-ctl.log'}")


def run_ptf(bed: lab.Lab, args: argparse.Namespace) -> int:
    args.log_dir.mkdir(parents=True, exist_ok=True)
    setup_namespace(bed)
    switch = start_switch(bed, args.log_dir)
    push_pipeline(bed, args.log_dir, args.profile)
    if switch.poll() is not None:
        print(f"run_ptf: simple_switch_grpc exited; see {args.log_dir}", file=sys.stderr)
        return 2
    ptf = str(Path(sys.executable).parent / "ptf")
    argv = [sys.executable, ptf, "--test-dir", str(REPO / "ptf-tests" / "tests"),
            "--test-params",
            f"grpc_addr='127.0.0.1:{GRPC_PORT}';device_id={DEVICE_ID};thrift_port={THRIFT_PORT};"
            f"repo='{REPO}'",
            "--log-file", str(args.log_dir / "ptf.log")]
    for n in range(1, NUM_PORTS + 1):
        argv += ["-i", f"{n}@ptf{n}"]
    if args.xunit_dir:
        args.xunit_dir.mkdir(parents=True, exist_ok=True)
        argv += ["--xunit", "--xunit-dir", str(args.xunit_dir)]
    argv += args.tests or (list(mmaqm_profiles.TESTS[args.profile]) if args.profile else [])
    # The tests check the switch against the test oracle of the same tree (mmaqm_oracle).
    env = dict(os.environ, PYTHONPATH=f"{REPO / 'control-plane'}:{REPO / 'oracle'}")
    env.pop("MMAQM_PTF_PROFILE", None)
    if args.profile:           # the tests' pipeline and baseline (mmaqm_base.PROFILE)
        env["MMAQM_PTF_PROFILE"] = args.profile
    started = time.monotonic()
    rc = bed.popen(NETNS, argv, env=env).wait()
    print(f"run_ptf: ptf exited {rc} after {time.monotonic() - started:.0f} s")
    if switch.poll() is not None:
        print("run_ptf: simple_switch_grpc died during the suite", file=sys.stderr)
        rc = rc or 1
    return rc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tests", nargs="*", help="test names, e.g. test_red.RedForcedDropTest")
    parser.add_argument("--xunit-dir", type=Path)
    parser.add_argument("--log-dir", type=Path, default=REPO / "build" / "ptf")
    parser.add_argument("--profile", type=str.upper, choices=sorted(mmaqm_profiles.TESTS),
                        help="run against this algorithm's BMv2 profile (make build "
                             "PROFILE=NAME) with its baseline; default tests: its modules "
                             "(ptf-tests/tests/mmaqm_profiles.py)")
    args = parser.parse_args()
    if args.profile and not all(p.exists() for p in profile_files(args.profile)):
        print(f"run_ptf: {profile_files(args.profile)[0]} not found; run "
              f"'make build PROFILE={args.profile}'", file=sys.stderr)
        return 2

    why = lab.missing_prereqs(("simple_switch_grpc", "simple_switch_CLI"))
    if why:
        print(f"run_ptf: {why}; see docs/install.md ('make deps')", file=sys.stderr)
        return 2
    if not (Path(sys.executable).parent / "ptf").exists():
        print("run_ptf: ptf not found next to this Python; run 'make deps'", file=sys.stderr)
        return 2

    lab.catch_stop_signals(interrupt=True)
    with lab.ExitOnStop("run_ptf") as end:
        with lab.Lab(NETNS) as bed:   # also removes a namespace left by a killed run
            return run_ptf(bed, args)
    return end.exit_status       # set: the block returns unless a stop or a LabError left it


if __name__ == "__main__":
    sys.exit(main())
