"""mmaqm-ctl: drive mmaqm switches from a YAML config.

  mmaqm-ctl --config cfg.yaml [run]   install every switch, then keep D-CBT shares and
                                      MCDT thresholds current
      [--stats-out FILE.jsonl [--stats-interval-ms 100]]   and log counter samples
      [--events-out FILE.jsonl]       and log each D-CBT share push with its flow counts
                                      and each MCDT threshold push with its inputs,
                                      and each connection step (installed, connection_lost,
                                      reconnected, backup_waiting, became_primary, primary_lost)
  mmaqm-ctl --config cfg.yaml install install and exit
  mmaqm-ctl --config cfg.yaml check   validate the config only; writes nothing
  mmaqm-ctl --config cfg.yaml stats   per-port, per-class counters as a table
      [--json]                        or one JSON line per switch (with ingress discards);
                                      a backup reader: works beside a running controller
  [--election-id N] [--role NAME]     P4Runtime arbitration (defaults: run/install 10,
                                      stats 1: a backup of the controller)
  [--timeout-s 20]                    deadline of each connection step
  [--reconnect-timeout-s S]           run: give a lost switch up after S s without a
                                      connection [never: retry forever]

The config is validated completely before any switch is contacted; an invalid
config (or flag) prints every error with its field path and exits 2. A switch
that cannot be reached, or fails a request, is one line naming it and exit 1.
`run` survives its switch going away: it reconnects (first attempt after 0.1 s,
then doubling to one per second, each attempt logged), the pipeline is pushed
again if the switch lost it, tables and policies are reinstalled and the loops
resume; with --reconnect-timeout-s a switch away that long is given up (exit 1
once no switch is left; the others go on meanwhile). A `run` whose election id
is below another controller's waits as its backup and takes over (installs)
when that one goes; `install` beside a primary exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import math
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import finsy as fy

from .config import MIN_LOOP_INTERVAL_MS, ConfigError, load_config
from .controller import ReconnectPolicy, jsonl_sink, run_switches
from .driver import (CONNECT_TIMEOUT_S, CONTROLLER_ELECTION_ID, DEFAULT_BMV2_JSON,
                     DEFAULT_P4INFO, READER_ELECTION_ID, SwitchDriver, describe_error)
from .stats import (CHIPS_COUNTER, QUEUE_COUNTERS, chips_summary, counter_sample, format_chips,
                    format_table, readings_from_counters, sample_indexes)

EXIT_CONFIG = 2                        # invalid config or flags: nothing was contacted
EXIT_SWITCH = 1                        # a switch unreachable, or a request failed
MAX_ELECTION_ID = 2**128 - 1           # P4Runtime's Uint128
MAX_REPORTED_ERRORS = 50               # of an invalid config; then "... and N more"
MIN_TIMEOUT_S = 0.001


async def _read_stats(cfg, names, p4info: Path, as_json: bool = False, *,
                      election_id: int = READER_ELECTION_ID, role: str = "",
                      timeout_s: float = CONNECT_TIMEOUT_S) -> str:
    """A table per switch; as_json: one JSON line per switch, a --stats-out sample's
    counters (stats.counter_sample). Reads as a backup when a controller is primary
    (P4Runtime serves Reads to any client): never pushes, never writes."""
    out = []
    for name in names:
        sw = cfg.switches[name]
        ports = sorted(sw.ports)
        async with SwitchDriver(name, sw.p4runtime_addr, device_id=sw.device_id,
                                p4info=p4info, push_pipeline=False, election_id=election_id,
                                role=role, require_primary=False,
                                connect_timeout_s=timeout_s) as d:
            values = await d.read_counter_indexes(sample_indexes(ports))
        if as_json:
            out.append(json.dumps(counter_sample(time.time_ns(), name, ports, values),
                                  separators=(",", ":")))
        else:
            rows = readings_from_counters(
                ports, **{key: values[counter] for counter, key in QUEUE_COUNTERS.items()})
            chips = format_chips(chips_summary(values[CHIPS_COUNTER], rows, ports))
            out.append(f"switch {name}\n{format_table(rows)}{chips}")
    return "\n".join(out)


def _sigterm_as_interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")  # same clean shutdown as Ctrl-C


def _number_flag(minimum: float) -> Callable[[str], float]:
    """argparse type: a finite float >= minimum (float() takes "nan" and "inf")."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < minimum:
            raise argparse.ArgumentTypeError(f"must be a number >= {minimum:g}, got {text!r}")
        return value
    return parse


def _election_id_flag(text: str) -> int:
    if not text.isdigit() or int(text) > MAX_ELECTION_ID:
        raise argparse.ArgumentTypeError(f"must be an integer 0..2^128-1, got {text!r}")
    return int(text)


def _print_config_errors(path: Path, errors: list[str]) -> None:
    print(f"mmaqm-ctl: invalid config {path}:", file=sys.stderr)
    for line in errors[:MAX_REPORTED_ERRORS]:
        print(f"  {line}", file=sys.stderr)
    if len(errors) > MAX_REPORTED_ERRORS:
        print(f"  ... and {len(errors) - MAX_REPORTED_ERRORS} more", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mmaqm-ctl", description=__doc__.splitlines()[0])
    parser.add_argument("--config", "-c", type=Path, required=True)
    parser.add_argument("--switch", action="append", help="only this switch (repeatable)")
    parser.add_argument("--p4info", type=Path, default=DEFAULT_P4INFO)
    parser.add_argument("--bmv2-json", "--device-config", dest="bmv2_json", type=Path,
                        default=DEFAULT_BMV2_JSON,
                        help="the pipeline to push: BMv2's JSON, or a make build-tna "
                             "directory (build/tna/<variant>) for a Tofino switch")
    parser.add_argument("--stats-out", type=Path,
                        help="run: append one JSON line of cumulative per-port, per-class "
                             "counters (and active flows, shares) per switch per sample")
    parser.add_argument("--stats-interval-ms", type=_number_flag(MIN_LOOP_INTERVAL_MS),
                        default=100.0,
                        help=f"run: sampling interval of --stats-out, >= "
                             f"{MIN_LOOP_INTERVAL_MS:g} [100]")
    parser.add_argument("--events-out", type=Path,
                        help="run: append one JSON line per D-CBT share push (time, port, "
                             "active-flow counts, shares): the active-flow lag's data; and "
                             "per MCDT threshold push (arrivals, queue, thresholds); and per "
                             "connection step (installed, connection_lost, reconnected, "
                             "backup_waiting, became_primary, primary_lost)")
    parser.add_argument("--json", action="store_true",
                        help="stats: one JSON line per switch instead of a table")
    parser.add_argument("--election-id", type=_election_id_flag,
                        help=f"P4Runtime election id [run, install: {CONTROLLER_ELECTION_ID}; "
                             f"stats: {READER_ELECTION_ID}, below the controller's so that it "
                             f"reads as a backup]; the highest connected id is primary")
    parser.add_argument("--role", default="",
                        help="P4Runtime role name [the default role], sent with an empty "
                             "role config; simple_switch_grpc ignores roles")
    parser.add_argument("--timeout-s", type=_number_flag(MIN_TIMEOUT_S), default=CONNECT_TIMEOUT_S,
                        help=f"deadline of each connection step: the switch listening, then "
                             f"the P4Runtime connection with arbitration and pipeline "
                             f"[{CONNECT_TIMEOUT_S:g}]")
    parser.add_argument("--reconnect-timeout-s", type=_number_flag(MIN_TIMEOUT_S),
                        help="run: give a switch up after this long without a P4Runtime "
                             "connection once it was lost (exit 1 when no switch is "
                             "left) [never: reconnect forever]")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("command", nargs="?", default="run",
                        choices=("run", "install", "check", "stats"))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:        # argparse printed the error; its status is 2 as ours
        return int(exit_.code or 0)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    try:
        cfg = load_config(args.config)
    except ConfigError as err:
        _print_config_errors(args.config, err.errors)
        return EXIT_CONFIG
    except OSError as err:
        print(f"mmaqm-ctl: {err}", file=sys.stderr)
        return EXIT_CONFIG
    names = args.switch or sorted(cfg.switches)
    unknown = [n for n in names if n not in cfg.switches]
    if unknown:
        print(f"mmaqm-ctl: unknown switch {unknown}; config has {sorted(cfg.switches)}",
              file=sys.stderr)
        return EXIT_CONFIG

    for flag, value in (("--stats-out", args.stats_out), ("--events-out", args.events_out),
                        ("--reconnect-timeout-s", args.reconnect_timeout_s)):
        if value is not None and args.command != "run":
            print(f"mmaqm-ctl: {flag} only applies to 'run'", file=sys.stderr)
            return EXIT_CONFIG

    if args.command == "check":
        print(f"{args.config}: ok ({len(cfg.switches)} switches)")
        return 0
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    try:
        if args.command == "stats":
            election_id = READER_ELECTION_ID if args.election_id is None else args.election_id
            print(asyncio.run(_read_stats(cfg, names, args.p4info, as_json=args.json,
                                          election_id=election_id, role=args.role,
                                          timeout_s=args.timeout_s)))
        else:
            with contextlib.ExitStack() as stack:
                sink = None
                if args.stats_out is not None:
                    sink = jsonl_sink(stack.enter_context(open(args.stats_out, "a")))
                event_sink = None
                if args.events_out is not None:
                    event_sink = jsonl_sink(stack.enter_context(open(args.events_out, "a")))
                asyncio.run(run_switches(cfg, p4info=args.p4info, bmv2_json=args.bmv2_json,
                                         install_only=args.command == "install", names=names,
                                         stats_sink=sink,
                                         stats_interval_ms=args.stats_interval_ms,
                                         event_sink=event_sink,
                                         election_id=(CONTROLLER_ELECTION_ID
                                                      if args.election_id is None
                                                      else args.election_id),
                                         role=args.role, timeout_s=args.timeout_s,
                                         reconnect=ReconnectPolicy(
                                             give_up_s=args.reconnect_timeout_s)))
    except KeyboardInterrupt:
        return 130
    # TimeoutError, SwitchConnectionError, FileNotFoundError (P4Info, device config)
    except (OSError, RuntimeError) as err:
        print(f"mmaqm-ctl: {err}", file=sys.stderr)
        return EXIT_SWITCH
    except fy.P4ClientError as err:          # a request failed after connecting
        print(f"mmaqm-ctl: P4Runtime request failed: {describe_error(err)}", file=sys.stderr)
        return EXIT_SWITCH
    return 0


if __name__ == "__main__":
    sys.exit(main())
