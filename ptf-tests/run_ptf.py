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

With --target tna the switch is not started here: bf_switchd and tofino-model of
open-p4studio, started by hand on a make build-tna variant (docs/tofino-model.md),
are reached at --grpc-addr (P4Runtime) and --bfrt-addr (BF Runtime), and ptf sends
and receives on the model's veths (dev port N: veth(2N+1)); the default tests are
test_tna's.

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
import mmaqm_tofino as tofino  # noqa: E402

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


TNA_VARIANTS = tuple(sorted(p.lower() for p in mmaqm_profiles.TESTS))  # make build-tna's
TNA_DEFAULT_TESTS = ("test_tna",)


def tna_test_params(args: argparse.Namespace) -> str:
    """ptf's --test-params for the TNA tests (mmaqm_base.TnaTarget reads them)."""
    return (f"target='tna';tna_variant='{args.tna_variant}';grpc_addr='{args.grpc_addr}';"
            f"device_id={args.device_id};bfrt_addr='{args.bfrt_addr}';"
            f"p4rt_server='{args.p4rt_server}';repo='{REPO}'")


def tna_ptf_argv(args: argparse.Namespace, ptf: str) -> list[str]:
    """The ptf command of a --target tna run: the model's veths as ports 1..4."""
    argv = [sys.executable, ptf, "--test-dir", str(REPO / "ptf-tests" / "tests"),
            "--test-params", tna_test_params(args),
            "--log-file", str(args.log_dir / "ptf.log")]
    for n in tofino.PTF_PORTS:
        argv += ["-i", f"{n}@{tofino.ptf_veth(n)}"]
    if args.xunit_dir:
        argv += ["--xunit", "--xunit-dir", str(args.xunit_dir)]
    return argv + list(args.tests or TNA_DEFAULT_TESTS)


def run_tna(args: argparse.Namespace) -> int:
    """The TNA tests against a switch already running (docs/tofino-model.md)."""
    build = tofino.build_dir(REPO, args.tna_variant)
    if not (build / "pipe" / "tofino.bin").is_file():
        print(f"run_ptf: {build} has no tofino.bin; run 'make build-tna "
              f"TNA_VARIANTS={args.tna_variant.upper()}'", file=sys.stderr)
        return 2
    missing = [tofino.ptf_veth(n) for n in tofino.PTF_PORTS
               if not Path("/sys/class/net", tofino.ptf_veth(n)).exists()]
    if missing:
        print(f"run_ptf: no interface {', '.join(missing)}; run "
              f"'sudo $SDE_INSTALL/bin/veth_setup.sh' (docs/tofino-model.md)", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("run_ptf: ptf needs root to send on the veths", file=sys.stderr)
        return 2
    args.log_dir.mkdir(parents=True, exist_ok=True)
    if args.xunit_dir:
        args.xunit_dir.mkdir(parents=True, exist_ok=True)
    # BF Runtime goes through the controller's client (mmaqm.p4rt.bfrt): no SDE module
    env = dict(os.environ, PYTHONPATH=f"{REPO / 'control-plane'}:{REPO / 'oracle'}")
    env.pop("MMAQM_PTF_PROFILE", None)
    started = time.monotonic()
    rc = subprocess.run(tna_ptf_argv(args, str(Path(sys.executable).parent / "ptf")),
                        env=env).returncode
    print(f"run_ptf: ptf exited {rc} after {time.monotonic() - started:.0f} s")
    return rc


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tests", nargs="*", help="test names, e.g. test_red.RedForcedDropTest")
    parser.add_argument("--xunit-dir", type=Path)
    parser.add_argument("--log-dir", type=Path, default=REPO / "build" / "ptf")
    parser.add_argument("--profile", type=str.upper, choices=sorted(mmaqm_profiles.TESTS),
                        help="run against this algorithm's BMv2 profile (make build "
                             "PROFILE=NAME) with its baseline; default tests: its modules "
                             "(ptf-tests/tests/mmaqm_profiles.py)")
    parser.add_argument("--target", choices=("bmv2", "tna"), default="bmv2",
                        help="tna: a Tofino model or switch already running "
                             "(docs/tofino-model.md); default tests: test_tna")
    parser.add_argument("--tna-variant", type=str.lower, choices=TNA_VARIANTS,
                        default="drop_tail",
                        help="--target tna: the make build-tna variant the switch runs")
    parser.add_argument("--grpc-addr", default=f"127.0.0.1:{tofino.P4RT_GRPC_PORT}",
                        help="--target tna: the P4Runtime server (bf_switchd --p4rt-server)")
    parser.add_argument("--bfrt-addr", default=f"127.0.0.1:{tofino.BFRT_GRPC_PORT}",
                        help="--target tna: bf_switchd's BF Runtime gRPC server")
    parser.add_argument("--device-id", type=int, default=tofino.DEVICE_ID,
                        help="--target tna: the P4Runtime device id (the model's: 0)")
    parser.add_argument("--p4rt-server", choices=tofino.P4RT_SERVERS,
                        default=tofino.P4RT_SERVERS[0],
                        help="--target tna: which server takes the pipeline (its device "
                             "config format)")
    return parser


TNA_FLAGS = ("tna_variant", "grpc_addr", "bfrt_addr", "device_id", "p4rt_server")


def main() -> int:
    parser = make_parser()
    args = parser.parse_args()
    if args.target == "bmv2" and any(getattr(args, f) != parser.get_default(f) for f in TNA_FLAGS):
        print("run_ptf: --tna-variant, --grpc-addr, --bfrt-addr, --device-id and "
              "--p4rt-server are --target tna's", file=sys.stderr)
        return 2
    if args.target == "tna":
        if args.profile:
            print("run_ptf: --profile is BMv2's; --target tna runs one TNA build "
                  "(--tna-variant)", file=sys.stderr)
            return 2
        if not (Path(sys.executable).parent / "ptf").exists():
            print("run_ptf: ptf not found next to this Python; run 'make deps'", file=sys.stderr)
            return 2
        return run_tna(args)
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
