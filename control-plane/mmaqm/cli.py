"""mmaqm-ctl: drive mmaqm switches from a YAML config.

  mmaqm-ctl check   -c cfg.yaml [--json]  validate the config only; contacts no switch
  mmaqm-ctl install -c cfg.yaml           install every switch (pipeline, tables,
                                          policies) and exit
  mmaqm-ctl run     -c cfg.yaml           install, then keep D-CBT shares and MCDT
                                          thresholds current until Ctrl-C/SIGTERM
      [--stats-out FILE.jsonl [--stats-interval-ms 100]]   and log counter samples
      [--events-out FILE.jsonl]           and log each D-CBT share push with its flow
                                          counts, each MCDT threshold push with its
                                          inputs, and each connection step (installed,
                                          connection_lost, reconnected, backup_waiting,
                                          became_primary, primary_lost)
      [--reconnect-timeout-s S]           give a lost switch up after S s without a
                                          working connection [never: retry forever]
      [--enforce-interval-s 2]            read each switch this often and repair any
                                          difference from the config (0: only when
                                          the primary role is regained)
  mmaqm-ctl stats   -c cfg.yaml [--json]  per-port, per-class counters as a table, or
                                          one JSON line per switch (with ingress
                                          discards); reads without arbitrating: works
                                          beside a running controller, never primary
  install, run, stats: [--switch NAME]... [--p4info FILE] [--timeout-s 20] [--role NAME]
                       [--ca-cert FILE] [--cert FILE --key FILE] [--tls-server-name NAME]
  install, run:        [--bmv2-json FILE|DIR]  the pipeline to push
                       [--election-id N]  (P4Runtime arbitration, default 10; the only
                       id the controller bids)

A subcommand is required: a bare `mmaqm-ctl` prints the help and exits 2. Options
may also come before the subcommand (`mmaqm-ctl --config cfg.yaml --p4info P
install`); one that does not apply to the subcommand is an error there too.

The config is validated completely before any switch is contacted; an invalid
config (or flag) prints every error with its field path and exits 2. A switch
that cannot be reached, or fails a request, is one line naming it and exit 1.
`run` survives its switch going away: it reconnects (first attempt after 0.1 s,
then doubling to one per second, each attempt logged), the pipeline is pushed
again if the switch lost it, tables and policies are reinstalled and the loops
resume; with --reconnect-timeout-s a switch away that long is given up (exit 1
once no switch is left; the others go on meanwhile). A `run` whose election id
is below another controller's waits as its backup and takes over (installs)
when that one goes; `install` beside a primary exits 1. `run` enforces its
config: after any moment as a backup, and every --enforce-interval-s, it reads
the switch and repairs what differs. Ctrl-C exits 130, SIGTERM 143.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import errno
import importlib.metadata
import json
import logging
import math
import os
import re
import signal
import stat
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import finsy as fy

from . import validation as V
from .config import MIN_LOOP_INTERVAL_MS, ConfigError, load_config
from .targets.base import TargetRefusal
from .memory import limit_malloc_growth
from .supervisor import ReconnectPolicy, jsonl_sink, run_switches
from .controller import ENFORCE_INTERVAL_S
from .driver import (CONNECT_TIMEOUT_S, CONTROLLER_ELECTION_ID, DEFAULT_BMV2_JSON,
                     DEFAULT_P4INFO, SwitchConnectionError, SwitchDriver, TlsConfig,
                     describe_error)
from .supervisor import switch_tls
from .stats import (CHIPS_COUNTER, OTHER_PIPE_COUNTER, QUEUE_COUNTERS, chips_summary,
                    counter_sample, format_chips, format_other_pipe, format_table,
                    other_pipe_discards, readings_from_counters, sample_indexes)

EXIT_CONFIG = 2                        # invalid config or flags: nothing was contacted
EXIT_SWITCH = 1                        # a switch unreachable, or a request failed
MAX_ELECTION_ID = 2**128 - 1           # P4Runtime's Uint128
MAX_REPORTED_ERRORS = 50               # of an invalid config; then "... and N more"
MIN_TIMEOUT_S = 0.001
# --p4info and --bmv2-json are read whole by the P4Runtime client: a regular file
# of at most this size (a P4Info is ~20 kB, BMv2's JSON a few MB), never a FIFO
# or a device, which could block or never end.
MAX_P4INFO_BYTES = 16 << 20
MAX_DEVICE_CONFIG_BYTES = 256 << 20
OUTPUT_MODE = 0o644                    # a new --stats-out / --events-out file


class OutputFileError(OSError):
    """An output path refused before anything was written (a symbolic link, a FIFO)."""


def open_output(path: Path, flag: str) -> TextIO:
    """path opened to append text, created OUTPUT_MODE if absent. Never through a
    symbolic link (O_NOFOLLOW: a link planted at the path, in /tmp say, cannot
    redirect a root controller's writes; nor a file with a second hard link), never
    waiting for a FIFO's reader; only a regular file or a character device
    (/dev/null) is written."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | \
        os.O_NONBLOCK | os.O_NOCTTY
    shown = V.escape(str(path))
    try:
        fd = os.open(path, flags, OUTPUT_MODE)
    except OSError as err:
        if os.path.islink(path):
            raise OutputFileError(f"{flag} {shown}: a symbolic link: refused (outputs are "
                                  f"never written through a link; give the real path)") from None
        if err.errno == errno.ENXIO:           # O_NONBLOCK: a FIFO nobody reads
            raise OutputFileError(f"{flag} {shown}: a FIFO without a reader: refused "
                                  f"(it would block the controller)") from None
        raise OutputFileError(f"{flag} {shown}: {err.strerror}") from None
    st = os.fstat(fd)
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISCHR(st.st_mode)):
        os.close(fd)
        raise OutputFileError(f"{flag} {shown}: not a regular file")
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:     # a hard link planted at the path
        os.close(fd)
        raise OutputFileError(f"{flag} {shown}: has {st.st_nlink} hard links: refused "
                              f"(outputs are never written through a link)")
    os.set_blocking(fd, True)
    return open(fd, "a", encoding="utf-8")


def check_pipeline_files(p4info: Path, bmv2_json: Path | None) -> None:
    """V.InputFileError if --p4info or --bmv2-json (a file; a Tofino build is a
    directory) is not a regular file or is too large."""
    V.check_regular_file(p4info, MAX_P4INFO_BYTES, what="a P4Info (--p4info)")
    if bmv2_json is not None and not Path(bmv2_json).is_dir():
        V.check_regular_file(bmv2_json, MAX_DEVICE_CONFIG_BYTES,
                             what="a BMv2 JSON (--bmv2-json)")


async def _read_stats(cfg, names, p4info: Path, as_json: bool = False, *, role: str = "",
                      timeout_s: float = CONNECT_TIMEOUT_S,
                      tls: dict[str, TlsConfig] | None = None) -> str:
    """A table per switch; as_json: one JSON line per switch, a --stats-out sample's
    counters (stats.counter_sample). Reads without arbitrating (P4Runtime serves
    Reads to any client): never bids to be primary, never pushes, never writes."""
    from .driver import wait_for_grpc
    out = []
    for name in names:
        sw = cfg.switches[name]
        ports = sorted(sw.ports)
        await wait_for_grpc(sw.p4runtime_addr, timeout_s=timeout_s, name=name)
        async with SwitchDriver(name, sw.p4runtime_addr, device_id=sw.device_id,
                                p4info=p4info, push_pipeline=False, read_only=True,
                                role=role, require_primary=False, connect_timeout_s=timeout_s,
                                request_timeout_s=timeout_s,
                                tls=(tls or {}).get(name, switch_tls(sw))) as d:
            try:
                values = await d.read_counter_indexes(sample_indexes(ports))
            except fy.P4ClientError as err:
                raise SwitchConnectionError(f"{name}: P4Runtime at {sw.p4runtime_addr} "
                                            f"failed: {d.explain_error(err)}") from None
        if as_json:
            out.append(json.dumps(counter_sample(time.time_ns(), name, ports, values),
                                  separators=(",", ":")))
        else:
            rows = readings_from_counters(
                ports, **{key: values[counter] for counter, key in QUEUE_COUNTERS.items()})
            chips = format_chips(chips_summary(values[CHIPS_COUNTER], rows, ports))
            other = format_other_pipe(other_pipe_discards(values.get(OTHER_PIPE_COUNTER, {})))
            out.append(f"switch {name}\n{format_table(rows)}{chips}{other}")
    return "\n".join(out)


class Stopped(Exception):
    """SIGINT (Ctrl-C) or SIGTERM: exit 128 + the signal's number (130, 143)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


def _stop_on_signal(signum: int, _frame: object) -> None:
    raise Stopped(signum)     # before or after the event loop: nothing runs yet


async def _until_signal(coro: Any) -> Any:
    """Await coro; SIGINT or SIGTERM (to the process or its whole group) cancels it,
    so every switch's connection is closed by its own finally (no task left pending),
    then Stopped."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []

    def stop(signum: int) -> None:
        if not received:
            received.append(signum)
            task.cancel()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop, signum)
    try:
        return await coro
    except asyncio.CancelledError:
        if received:
            raise Stopped(received[0]) from None
        raise
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
            signal.signal(signum, _stop_on_signal)


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
    if not re.fullmatch(r"[0-9]{1,39}", text) or int(text) > MAX_ELECTION_ID:
        raise argparse.ArgumentTypeError(f"must be an integer 0..2^128-1, got {text!r}")
    return int(text)


def _print_config_errors(path: Path, errors: list[str]) -> None:
    print(f"mmaqm-ctl: invalid config {V.escape(str(path))}:", file=sys.stderr)
    for line in errors[:MAX_REPORTED_ERRORS]:
        print(f"  {line}", file=sys.stderr)
    if len(errors) > MAX_REPORTED_ERRORS:
        print(f"  ... and {len(errors) - MAX_REPORTED_ERRORS} more", file=sys.stderr)


def package_version() -> str:
    """The installed mmaqm distribution's version, else the package's __version__."""
    try:
        return importlib.metadata.version("mmaqm")
    except importlib.metadata.PackageNotFoundError:
        import mmaqm
        return str(getattr(mmaqm, "__version__", "unknown"))


# ------------------------------------------------------------ the command line
@dataclass(frozen=True)
class Command:
    summary: str                       # one line: the subcommand's description
    examples: tuple[str, ...]
    exit_status: str


COMMANDS: dict[str, Command] = {
    "check": Command(
        "Validate the config completely and print every error with its field path; "
        "contacts no switch.",
        ("mmaqm-ctl check -c examples/dumbbell.yaml",
         "mmaqm-ctl check -c examples/dumbbell.yaml --json"),
        "0 valid, 2 invalid (or unreadable)"),
    "install": Command(
        "Install every switch (pipeline, routes, classifier, port policies), then exit.",
        ("mmaqm-ctl install -c examples/dumbbell.yaml --bmv2-json build/main.json",),
        "0 installed, 1 a switch unreachable or a request failed (or another controller "
        "is primary), 2 invalid config or flags (no switch contacted)"),
    "run": Command(
        "Install every switch, then keep D-CBT shares and MCDT thresholds current until "
        "Ctrl-C or SIGTERM.",
        ("mmaqm-ctl run -c examples/dumbbell.yaml --stats-out counters.jsonl "
         "--events-out events.jsonl",),
        "130 stopped by Ctrl-C, 143 by SIGTERM, 1 a switch unreachable (or given up after "
        "--reconnect-timeout-s) or a request failed, 2 invalid config or flags (no switch "
        "contacted). A switch that goes away is reconnected: its pipeline, tables and "
        "policies are reinstalled"),
    "stats": Command(
        "Print per-port, per-class counters of each switch; reads as a backup, so it "
        "works beside a running controller.",
        ("mmaqm-ctl stats -c examples/dumbbell.yaml",
         "mmaqm-ctl stats -c examples/dumbbell.yaml --switch s1 --json"),
        "0 printed, 1 a switch unreachable or a request failed, 2 invalid config or flags"),
}
CONNECTED = ("install", "run", "stats")


@dataclass(frozen=True)
class Option:
    """A flag, the subcommands it works on, and its help (per subcommand if a dict)."""
    flags: tuple[str, ...]
    commands: tuple[str, ...]
    help: str | dict[str, str]
    default: object = None
    kwargs: dict[str, object] = field(default_factory=dict)
    top_level_help: bool = False       # listed in the global help too (not only accepted)

    @property
    def name(self) -> str:
        """The long flag: --config for -c, --config."""
        return next(flag for flag in self.flags if flag.startswith("--"))

    @property
    def dest(self) -> str:
        return str(self.kwargs.get("dest") or self.name[2:].replace("-", "_"))

    def help_for(self, command: str) -> str:
        return self.help[command] if isinstance(self.help, dict) else self.help


OPTIONS: tuple[Option, ...] = (
    Option(("-c", "--config"), tuple(COMMANDS),
           "the controller config, a YAML file (see examples/dumbbell.yaml); required",
           kwargs={"type": Path, "metavar": "FILE"}, top_level_help=True),
    Option(("--switch",), CONNECTED, "only this switch (repeatable) [every switch]",
           kwargs={"action": "append", "metavar": "NAME"}),
    Option(("--p4info",), CONNECTED, f"the P4Info [{DEFAULT_P4INFO}]", DEFAULT_P4INFO,
           kwargs={"type": Path, "metavar": "FILE"}),
    Option(("--bmv2-json", "--device-config"), ("install", "run"),
           f"the pipeline to push: BMv2's JSON, or a make build-tna directory "
           f"(build/tna/<variant>) for a Tofino switch [{DEFAULT_BMV2_JSON}]",
           DEFAULT_BMV2_JSON, kwargs={"type": Path, "metavar": "PATH", "dest": "bmv2_json"}),
    Option(("--stats-out",), ("run",),
           "append one JSON line of cumulative per-port, per-class counters (and active "
           "flows, shares) per switch per sample",
           kwargs={"type": Path, "metavar": "FILE.jsonl"}),
    Option(("--stats-interval-ms",), ("run",),
           f"sampling interval of --stats-out, >= {MIN_LOOP_INTERVAL_MS:g} [100]", 100.0,
           kwargs={"type": _number_flag(MIN_LOOP_INTERVAL_MS), "metavar": "MS"}),
    Option(("--events-out",), ("run",),
           "append one JSON line per D-CBT share push (time, port, active-flow counts, "
           "shares): the active-flow lag's data; and per MCDT threshold push (arrivals, "
           "queue, thresholds); and per connection step (installed, connection_lost, "
           "reconnected, backup_waiting, became_primary, primary_lost)",
           kwargs={"type": Path, "metavar": "FILE.jsonl"}),
    Option(("--reconnect-timeout-s",), ("run",),
           "give a switch up after this long without a working P4Runtime connection "
           "once it was lost or stopped answering (exit 1 when no switch is left) "
           "[never: reconnect forever]",
           kwargs={"type": _number_flag(MIN_TIMEOUT_S), "metavar": "S"}),
    Option(("--json",), ("check", "stats"),
           {"check": 'print the result as one JSON object on stdout: {"config", "valid", '
                     '"switches", "errors"} (every error, not only the first '
                     f'{MAX_REPORTED_ERRORS}); the exit status is the same',
            "stats": "one JSON line per switch (a --stats-out sample, with ingress "
                     "discards) instead of a table"},
           False, kwargs={"action": "store_true"}),
    Option(("--election-id",), ("install", "run"),
           {command: f"P4Runtime election id [{CONTROLLER_ELECTION_ID}]; the highest "
                     f"connected id is primary; this id is the only one bid (never another "
                     f"client's)" + extra
            for command, extra in (
                ("install", ""),
                ("run", "; below another controller's, run waits as its backup"))},
           kwargs={"type": _election_id_flag, "metavar": "N"}),
    Option(("--enforce-interval-s",), ("run",),
           f"read every switch this often and repair any difference from the config "
           f"(a foreign write), logged as a repaired event; 0: only when primary is "
           f"regained [{ENFORCE_INTERVAL_S:g}]", ENFORCE_INTERVAL_S,
           kwargs={"type": _number_flag(0), "metavar": "S"}),
    Option(("--ca-cert",), CONNECTED,
           "TLS: the CA that signed the switches' certificates (PEM); with --cert/--key "
           "also mutual TLS. Any TLS flag replaces every selected switch's tls config",
           kwargs={"type": Path, "metavar": "FILE"}),
    Option(("--cert",), CONNECTED, "TLS: this client's certificate (PEM), with --key",
           kwargs={"type": Path, "metavar": "FILE"}),
    Option(("--key",), CONNECTED, "TLS: this client's private key (PEM), with --cert",
           kwargs={"type": Path, "metavar": "FILE"}),
    Option(("--tls-server-name",), CONNECTED,
           "TLS: the name to verify in the switch's certificate [the address's host]",
           kwargs={"metavar": "NAME"}),
    Option(("--role",), CONNECTED,
           "P4Runtime role name [the default role], sent with an empty role config; "
           "simple_switch_grpc ignores roles", "", kwargs={"metavar": "NAME"}),
    Option(("--timeout-s",), CONNECTED,
           f"deadline of each connection step (the switch listening, then the P4Runtime "
           f"connection with arbitration and pipeline) and of each Write and Read "
           f"[{CONNECT_TIMEOUT_S:g}]",
           CONNECT_TIMEOUT_S, kwargs={"type": _number_flag(MIN_TIMEOUT_S), "metavar": "S"}),
    Option(("-v", "--verbose"), tuple(COMMANDS), "log debug messages too", False,
           kwargs={"action": "store_true"}, top_level_help=True),
)
HELP_WIDTH = 79                        # descriptions and epilogs (argparse wraps the rest)
BEFORE = "before_"                     # dest prefix of an option given before the subcommand
_ABSENT = object()


def _commands_text(commands: Sequence[str]) -> str:
    quoted = [f"'{c}'" for c in commands]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"


class _Parser(argparse.ArgumentParser):
    """An unknown subcommand is named with the closest one: "did you mean 'install'?"."""

    def _check_value(self, action: argparse.Action, value: object) -> None:
        if (action.dest == "command" and action.choices is not None
                and value not in action.choices):
            names = ", ".join(action.choices)
            close = difflib.get_close_matches(str(value), list(action.choices), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise argparse.ArgumentError(
                None, f"unknown subcommand {value!r} (choose from {names}){hint}")
        super()._check_value(action, value)


GLOBAL_EPILOG = """\
examples:
  mmaqm-ctl check -c examples/dumbbell.yaml
  mmaqm-ctl run -c examples/dumbbell.yaml --stats-out counters.jsonl
  mmaqm-ctl run --help

Each subcommand's options are in its --help. They may also come before the
subcommand (mmaqm-ctl -c cfg.yaml --p4info FILE install). The config is
validated completely before any switch is contacted.

exit status: 0 ok; 1 a switch unreachable or a request failed; 2 invalid
config or flags (no switch contacted); 130 stopped by Ctrl-C, 143 by SIGTERM."""


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The global parser and one per subcommand. Every option's value is absent
    unless given (default SUPPRESS); given before the subcommand it lands under
    BEFORE + dest: :func:`_merge` tells the two apart and fills in defaults."""
    raw = argparse.RawDescriptionHelpFormatter
    top = _Parser(prog="mmaqm-ctl", description=__doc__.splitlines()[0],
                  epilog=GLOBAL_EPILOG, formatter_class=raw)
    top.add_argument("--version", action="version", version=f"mmaqm-ctl {package_version()}",
                     help="print the version and exit")
    for option in OPTIONS:
        top.add_argument(*option.flags, **{
            **option.kwargs, "dest": BEFORE + option.dest, "default": argparse.SUPPRESS,
            "help": option.help_for("run") if option.top_level_help else argparse.SUPPRESS})
    subparsers = top.add_subparsers(dest="command", title="subcommands",
                                    metavar="{check,install,run,stats}")
    parsers: dict[str, argparse.ArgumentParser] = {}
    for name, command in COMMANDS.items():
        epilog = ("example" + "s" * (len(command.examples) > 1) + ":\n"
                  + "".join(f"  {line}\n" for line in command.examples) + "\n"
                  + textwrap.fill(f"exit status: {command.exit_status}.", HELP_WIDTH))
        sub = subparsers.add_parser(name, help=command.summary,
                                    description=textwrap.fill(command.summary, HELP_WIDTH),
                                    epilog=epilog, formatter_class=raw)
        for option in OPTIONS:
            if name in option.commands:
                sub.add_argument(*option.flags, **{
                    **option.kwargs, "dest": option.dest, "default": argparse.SUPPRESS,
                    "help": option.help_for(name)})
        parsers[name] = sub
    return top, parsers


def _merge(args: argparse.Namespace, parser: argparse.ArgumentParser) -> argparse.Namespace:
    """One value per option: given after the subcommand, else before it, else the
    default; --switch given in both places is both lists. An option given before the
    subcommand that does not apply to it is an error (parser.error: exit 2)."""
    merged = argparse.Namespace(command=args.command)
    for option in OPTIONS:
        before = getattr(args, BEFORE + option.dest, _ABSENT)
        after = getattr(args, option.dest, _ABSENT)
        if args.command not in option.commands:
            if before is not _ABSENT:
                parser.error(f"{option.name} only applies to {_commands_text(option.commands)}")
            setattr(merged, option.dest, option.default)
            continue
        if option.kwargs.get("action") == "append" and before is not _ABSENT \
                and after is not _ABSENT:
            value = [*before, *after]
        else:
            value = next((v for v in (after, before) if v is not _ABSENT), option.default)
        setattr(merged, option.dest, value)
    return merged


def _reject_extras(extras: list[str], parser: argparse.ArgumentParser, command: str) -> None:
    """Arguments the subcommand does not take: a flag of another subcommand is named
    as such ("--stats-out only applies to 'run'"), anything else is unrecognized."""
    for arg in extras:
        flag = arg.split("=", 1)[0]
        for option in OPTIONS:
            if flag in option.flags and command not in option.commands:
                parser.error(f"{flag} only applies to {_commands_text(option.commands)}")
    parser.error(f"unrecognized arguments: {' '.join(extras)}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The merged arguments; SystemExit as argparse's (2 for an error, 0 for --help
    and --version), and 2 after printing the help when no subcommand is named."""
    top, parsers = build_parser()
    args, extras = top.parse_known_args(argv)
    if args.command is None:
        if extras:
            top.error(f"unrecognized arguments: {' '.join(extras)}")
        top.print_help(sys.stderr)
        print("\nmmaqm-ctl: name a subcommand (check, install, run, stats); to run the "
              "controller: mmaqm-ctl run -c CONFIG", file=sys.stderr)
        raise SystemExit(EXIT_CONFIG)
    parser = parsers[args.command]
    if extras:
        _reject_extras(extras, parser, args.command)
    merged = _merge(args, parser)
    if merged.config is None:
        parser.error("the following arguments are required: -c/--config")
    return merged


def _check(path: Path, as_json: bool) -> int:
    """check: load and validate; a line (or a JSON object) saying so. Exit 0 or 2."""
    switches: list[str] = []
    errors: list[str] = []
    unreadable = ""
    try:
        switches = sorted(load_config(path).switches)
    except ConfigError as err:
        errors = list(err.errors)
    except OSError as err:
        unreadable = V.escape(str(err))
        errors = [unreadable]
    if as_json:
        print(json.dumps({"config": str(path), "valid": not errors, "switches": switches,
                          "errors": errors}))
    elif unreadable:
        print(f"mmaqm-ctl: {unreadable}", file=sys.stderr)
    elif errors:
        _print_config_errors(path, errors)
    else:
        print(f"{V.escape(str(path))}: ok ({len(switches)} switches)")
    return EXIT_CONFIG if errors else 0


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
    except SystemExit as exit_:        # argparse printed the error; its status is 2 as ours
        return int(exit_.code or 0)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "check":
        return _check(args.config, args.json)

    try:
        cfg = load_config(args.config)
    except ConfigError as err:
        _print_config_errors(args.config, err.errors)
        return EXIT_CONFIG
    except OSError as err:
        print(f"mmaqm-ctl: {V.escape(str(err))}", file=sys.stderr)
        return EXIT_CONFIG
    names = args.switch or sorted(cfg.switches)
    unknown = [n for n in names if n not in cfg.switches]
    if unknown:
        print(f"mmaqm-ctl: unknown switch {V.escape(str(unknown))}; config has "
              f"{sorted(cfg.switches)}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        check_pipeline_files(args.p4info, args.bmv2_json if args.command != "stats" else None)
    except V.InputFileError as err:
        print(f"mmaqm-ctl: {err}", file=sys.stderr)
        return EXIT_CONFIG

    tls = None
    if any(v is not None for v in (args.ca_cert, args.cert, args.key, args.tls_server_name)):
        if (args.cert is None) != (args.key is None):
            print("mmaqm-ctl: --cert and --key go together (a client certificate and its "
                  "private key)", file=sys.stderr)
            return EXIT_CONFIG
        missing = [str(f) for f in (args.ca_cert, args.cert, args.key)
                   if f is not None and not f.is_file()]
        if missing:
            print(f"mmaqm-ctl: TLS file not found: {', '.join(missing)}", file=sys.stderr)
            return EXIT_CONFIG
        flags_tls = TlsConfig(ca_cert=args.ca_cert, cert=args.cert, key=args.key,
                              server_name=args.tls_server_name or "")
        tls = {name: flags_tls for name in names}

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _stop_on_signal)
    if args.command == "run":       # runs for days: keep native memory flat (mmaqm.memory)
        limit_malloc_growth()
    try:
        if args.command == "stats":
            print(asyncio.run(_until_signal(_read_stats(
                cfg, names, args.p4info, as_json=args.json, role=args.role,
                timeout_s=args.timeout_s, tls=tls))))
        else:
            with contextlib.ExitStack() as stack:
                sink = None
                event_sink = None
                try:
                    if args.stats_out is not None:
                        sink = jsonl_sink(stack.enter_context(
                            open_output(args.stats_out, "--stats-out")))
                    if args.events_out is not None:
                        event_sink = jsonl_sink(stack.enter_context(
                            open_output(args.events_out, "--events-out")))
                except OutputFileError as err:
                    print(f"mmaqm-ctl: {err}", file=sys.stderr)
                    return EXIT_CONFIG
                asyncio.run(_until_signal(run_switches(
                                         cfg, p4info=args.p4info, bmv2_json=args.bmv2_json,
                                         install_only=args.command == "install", names=names,
                                         stats_sink=sink,
                                         stats_interval_ms=args.stats_interval_ms,
                                         event_sink=event_sink,
                                         election_id=(CONTROLLER_ELECTION_ID
                                                      if args.election_id is None
                                                      else args.election_id),
                                         role=args.role, timeout_s=args.timeout_s,
                                         reconnect=ReconnectPolicy(
                                             give_up_s=args.reconnect_timeout_s),
                                         tls=tls,
                                         enforce_interval_s=args.enforce_interval_s)))
    except Stopped as stop:
        return 128 + stop.signum
    except KeyboardInterrupt:       # SIGINT where Python's own handler was in place
        return 128 + signal.SIGINT
    except TargetRefusal as err:     # the target cannot hold the config: nothing contacted
        print(f"mmaqm-ctl: {err}", file=sys.stderr)
        return EXIT_CONFIG
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
