"""mmaqm-ctl: drive mmaqm switches from a YAML config.

  mmaqm-ctl --config cfg.yaml [run]   install every switch, then keep D-CBT shares and
                                      MCDT thresholds current
      [--stats-out FILE.jsonl [--stats-interval-ms 100]]   and log counter samples
      [--events-out FILE.jsonl]       and log each D-CBT share push with its flow counts
                                      and each MCDT threshold push with its inputs
  mmaqm-ctl --config cfg.yaml install install and exit
  mmaqm-ctl --config cfg.yaml check   validate the config only; writes nothing
  mmaqm-ctl --config cfg.yaml stats   per-port, per-class counters as a table
      [--json]                        or one JSON line per switch (with ingress discards)

The config is validated completely before any switch is contacted; an invalid
config prints every error with its field path and exits 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
import time
from pathlib import Path

from .config import ConfigError, load_config
from .controller import jsonl_sink, run_switches
from .driver import DEFAULT_BMV2_JSON, DEFAULT_P4INFO, SwitchDriver
from .stats import (CHIPS_COUNTER, QUEUE_COUNTERS, chips_summary, counter_sample, format_chips,
                    format_table, readings_from_counters, sample_indexes)


async def _read_stats(cfg, names, p4info: Path, as_json: bool = False) -> str:
    """A table per switch; as_json: one JSON line per switch, a --stats-out sample's
    counters (stats.counter_sample)."""
    out = []
    for name in names:
        sw = cfg.switches[name]
        ports = sorted(sw.ports)
        async with SwitchDriver(name, sw.p4runtime_addr, device_id=sw.device_id,
                                p4info=p4info, push_pipeline=False, election_id=5) as d:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mmaqm-ctl", description=__doc__.splitlines()[0])
    parser.add_argument("--config", "-c", type=Path, required=True)
    parser.add_argument("--switch", action="append", help="only this switch (repeatable)")
    parser.add_argument("--p4info", type=Path, default=DEFAULT_P4INFO)
    parser.add_argument("--bmv2-json", type=Path, default=DEFAULT_BMV2_JSON)
    parser.add_argument("--stats-out", type=Path,
                        help="run: append one JSON line of cumulative per-port, per-class "
                             "counters (and active flows, shares) per switch per sample")
    parser.add_argument("--stats-interval-ms", type=float, default=100.0,
                        help="run: sampling interval of --stats-out [100]")
    parser.add_argument("--events-out", type=Path,
                        help="run: append one JSON line per D-CBT share push (time, port, "
                             "active-flow counts, shares): the active-flow lag's data; and "
                             "per MCDT threshold push (arrivals, queue, thresholds)")
    parser.add_argument("--json", action="store_true",
                        help="stats: one JSON line per switch instead of a table")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("command", nargs="?", default="run",
                        choices=("run", "install", "check", "stats"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    try:
        cfg = load_config(args.config)
    except ConfigError as err:
        print(f"mmaqm-ctl: invalid config {args.config}:", file=sys.stderr)
        for line in err.errors:
            print(f"  {line}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"mmaqm-ctl: {err}", file=sys.stderr)
        return 2
    names = args.switch or sorted(cfg.switches)
    unknown = [n for n in names if n not in cfg.switches]
    if unknown:
        print(f"mmaqm-ctl: unknown switch {unknown}; config has {sorted(cfg.switches)}",
              file=sys.stderr)
        return 2

    if args.stats_interval_ms <= 0:
        print("mmaqm-ctl: --stats-interval-ms must be > 0", file=sys.stderr)
        return 2
    for flag, value in (("--stats-out", args.stats_out), ("--events-out", args.events_out)):
        if value is not None and args.command != "run":
            print(f"mmaqm-ctl: {flag} only applies to 'run'", file=sys.stderr)
            return 2

    if args.command == "check":
        print(f"{args.config}: ok ({len(cfg.switches)} switches)")
        return 0
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    try:
        if args.command == "stats":
            print(asyncio.run(_read_stats(cfg, names, args.p4info, as_json=args.json)))
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
                                         event_sink=event_sink))
    except KeyboardInterrupt:
        return 130
    except (FileNotFoundError, RuntimeError, TimeoutError) as err:
        print(f"mmaqm-ctl: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
