"""mmaqm-topo: check, configure, bring up and clean topologies.

  mmaqm-topo check FILE                       validate; print addresses, bottleneck, RTTs
  mmaqm-topo config FILE --policy JSON [-o F] controller YAML for FILE with that bottleneck policy
  mmaqm-topo up FILE [--policy JSON] [--run-dir D] [--prefix P]
                                              bring up; with --policy also push the pipeline and
                                              tables (mmaqm-ctl install); wait for Ctrl-C/SIGTERM;
                                              logs and controller.yaml in D (0700, only yours)
                                              [a fresh mkdtemp directory]
  mmaqm-topo clean [--prefix P]               remove namespaces and processes of a killed run

Exit status: 0 ok, 1 failure, 2 invalid input; `up` stopped by a signal (Ctrl-C, SIGTERM,
SIGHUP): 128 + its number, after the teardown.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from .lab import StopRequested, catch_stop_signals
from .private_dir import private_dir
from .topology import TopologyError, controller_config, describe, dump_controller_config, load_topology


def _policy(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"--policy must be a JSON object: {exc}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("--policy must be a JSON object")
    return value


def _ctl() -> str:
    exe = Path(sys.executable).with_name("mmaqm-ctl")
    return str(exe) if exe.exists() else (shutil.which("mmaqm-ctl") or "mmaqm-ctl")


def _config_yaml(topo: Any, policy: dict[str, Any]) -> str:
    return dump_controller_config(controller_config(topo, policy))


def _up(args: argparse.Namespace, topo: Any, yaml_text: str | None) -> int:
    from .network import Network

    catch_stop_signals(interrupt=True)        # raises StopRequested: unwinds through Network.__exit__
    sys.stdout.reconfigure(line_buffering=True)   # status lines reach a pipe at once
    try:
        # never a fixed /tmp path (root installs the yaml it writes there)
        run_dir = private_dir(args.run_dir, prefix=f"mmaqm-topo-{topo.name}-")
    except OSError as err:
        print(f"mmaqm-topo: --run-dir: {err}", file=sys.stderr)
        return 2
    try:
        with Network(topo, run_dir, args.bmv2_json, name_prefix=args.prefix) as net:
            print(describe(topo))
            print(f"run directory (logs): {run_dir}")
            if yaml_text is not None:
                cfg = run_dir / "controller.yaml"
                cfg.write_text(yaml_text)
                argv = [_ctl(), "--config", str(cfg)]
                if args.bmv2_json:
                    argv += ["--bmv2-json", str(args.bmv2_json)]
                r = net.run_switch_ns(argv + ["install"], timeout=120)
                if r.returncode != 0:
                    print(f"mmaqm-topo: mmaqm-ctl install failed:\n{r.stdout}{r.stderr}",
                          file=sys.stderr)
                    return 1
                net.configure_bottleneck()
                print(f"pipeline and tables installed ({cfg})")
            else:
                print(f"switches run without a pipeline: ip netns exec {net.switch_ns} "
                      f"mmaqm-ctl --config CFG install")
            print(f"up in {net.timings['up_s']:.2f} s; run in a host: ip netns exec "
                  f"{next(iter(net.hosts.values())).ns} CMD; Ctrl-C stops")
            while True:
                time.sleep(3600)
    except StopRequested as stop:
        return stop.exit_status
    finally:
        print("torn down")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mmaqm-topo", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("check")
    p.add_argument("file", type=Path)
    p = sub.add_parser("config")
    p.add_argument("file", type=Path)
    p.add_argument("--policy", type=_policy, required=True)
    p.add_argument("-o", "--output", type=Path)
    p = sub.add_parser("up")
    p.add_argument("file", type=Path)
    p.add_argument("--policy", type=_policy)
    p.add_argument("--run-dir", type=Path)
    p.add_argument("--prefix", default="mmx")
    p.add_argument("--bmv2-json", type=Path)
    p = sub.add_parser("clean")
    p.add_argument("--prefix", default="mmx")
    args = parser.parse_args(argv)

    if args.command == "clean":
        from .network import clean_leftovers

        removed = clean_leftovers(args.prefix)
        print(f"removed {len(removed)} namespaces" + (f": {' '.join(removed)}" if removed else ""))
        return 0
    try:
        topo = load_topology(args.file)
        text = _config_yaml(topo, args.policy) if getattr(args, "policy", None) else None
    except TopologyError as err:
        print(f"mmaqm-topo: {err}", file=sys.stderr)
        return 2
    except ValueError as err:               # mmaqm.config.ConfigError: the policy
        lines = getattr(err, "errors", None) or str(err).splitlines()
        print("mmaqm-topo: invalid policy:\n  " + "\n  ".join(lines), file=sys.stderr)
        return 2
    if args.command == "check":
        print(describe(topo))
        return 0
    if args.command == "config":
        assert text is not None
        if args.output:
            args.output.write_text(text)
        else:
            sys.stdout.write(text)
        return 0
    return _up(args, topo, text)


if __name__ == "__main__":
    sys.exit(main())
