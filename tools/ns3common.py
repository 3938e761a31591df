"""What every ns-3 reference run shares (docs/ns3.md): finding the ns3 wheel, compiling a
scenario of tools/ns3sim/ against it, running it, the median [range] over seeds, and the
generated tables' cells and markers. One scenario per paper lives in
tools/ns3sim/<paper>.cc, with its runner tools/ns3_<paper>.py.

The TCP models and the queue discs are the same in every scenario; their C++ side is
tools/ns3sim/mmaqm_ns3.h, their descriptions are TCP_MODELS and QUEUE_DISCS below.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

REPO = Path(__file__).resolve().parents[1]
SIM_DIR = REPO / "tools" / "ns3sim"
BUILD_DIR = REPO / "build" / "ns3"
COMMON_HEADER = SIM_DIR / "mmaqm_ns3.h"
NS3_VERSION = "3.44"
NS3_LIBS = ("applications", "internet", "traffic-control", "point-to-point", "network", "core")

#: the two TCP models every scenario runs (mmaqm_ns3.h ApplyTcpModel)
TCP_MODELS = {
    "LinuxReno": "TcpLinuxReno, SACK, timestamps, initial window 10, delayed ACK "
                 "(2 segments, 40 ms), min RTO 200 ms",
    "NewReno": "TcpNewReno, no SACK, no timestamps, initial window 1, an ACK per "
               "segment, min RTO 200 ms",
}

#: ns-3 queue-disc drop reasons -> the project's counter names
DROP_REASONS = {"Queue disc limit exceeded": "QUEUE_LIMIT", "Dropped by internal queue": "QUEUE_LIMIT",
                "Unforced drop": "RED_EARLY", "Forced drop": "RED_FORCED",
                "Overlimit drop": "QUEUE_LIMIT", "Target exceeded drop": "CODEL",
                "Unclassified drop": "QUEUE_LIMIT"}


class ConfigError(Exception):
    """A configuration problem (exit 2)."""


def ns3_dirs() -> tuple[Path, Path]:
    """The installed ns3 wheel's include and lib directories (ConfigError if absent)."""
    spec = importlib.util.find_spec("ns3")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("the ns3 wheel is not installed in this Python (make ns3-deps)")
    for loc in spec.submodule_search_locations:
        inc, lib = Path(loc) / "include", Path(loc) / "lib64"
        if (inc / "ns3" / "core-module.h").is_file() and \
                (lib / f"libns{NS3_VERSION}-core.so").is_file():
            return inc, lib
    raise ConfigError(f"ns3 package at {list(spec.submodule_search_locations)} has no "
                      f"include/ns3/core-module.h or lib64/libns{NS3_VERSION}-core.so")


def build(name: str, force: bool = False) -> Path:
    """Compile tools/ns3sim/<name>.cc into build/ns3/<name> (only if it or a header of
    tools/ns3sim is newer than the binary)."""
    inc, lib = ns3_dirs()
    source, binary = SIM_DIR / f"{name}.cc", BUILD_DIR / name
    if not source.is_file():
        raise ConfigError(f"no scenario {source}")
    # the scenario and every header of tools/ns3sim (mmaqm_ns3.h, mm_app.h, ...)
    newest = max(p.stat().st_mtime for p in (source, *SIM_DIR.glob("*.h")))
    if not force and binary.is_file() and binary.stat().st_mtime >= newest:
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["g++", "-std=c++20", "-O2", "-Wall", f"-I{inc}", f"-I{SIM_DIR}", str(source),
           "-o", str(binary), f"-L{lib}", f"-Wl,-rpath,{lib}",
           *[f"-lns{NS3_VERSION}-{m}" for m in NS3_LIBS]]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"build failed: {' '.join(cmd)}\n{r.stderr[-4000:]}")
    return binary


def run_binary(binary: Path, args: Mapping[str, Any]) -> dict[str, Any]:
    """Run a compiled scenario once with --key=value arguments; return its raw JSON."""
    with tempfile.TemporaryDirectory() as td:
        out = Path(td) / "raw.json"
        cmd = [str(binary), *[f"--{k}={v}" for k, v in args.items()], f"--out={out}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr[-2000:]}")
        return json.loads(out.read_text())


#: how ns-3 prefixes a reason reported by a child queue disc (FQ-CoDel's per-flow CoDel)
CHILD_PREFIX = "(Dropped by child queue disc) "


def drop_reason(reason: str, extra: Mapping[str, str] | None = None) -> str:
    """One ns-3 drop reason under the project's counter name (a child queue disc's
    reason under its own; extra: a scenario's own queue discs' reasons first)."""
    r = reason.removeprefix(CHILD_PREFIX)
    key = (extra or {}).get(r) or DROP_REASONS.get(r)
    if key is None:
        raise RuntimeError(f"unknown ns-3 drop reason {reason!r}")
    return key


def drop_counts(drops: Mapping[str, int], extra: Mapping[str, str] | None = None
                ) -> dict[str, int]:
    """A queue disc's drops by reason, under the project's counter names (drop_reason)."""
    out: dict[str, int] = {}
    for reason, n in drops.items():
        key = drop_reason(reason, extra)
        out[key] = out.get(key, 0) + int(n)
    return out


def spread(xs: Sequence[Optional[float]]) -> Optional[dict[str, float]]:
    """Median and range of a metric over runs (None if any run lacks it)."""
    if not xs or any(x is None for x in xs):
        return None
    return {"median": round(statistics.median(xs), 3), "min": round(min(xs), 3),
            "max": round(max(xs), 3), "n": len(xs)}


def num(v: float, nd: int) -> str:
    """A number as the docs write it: thin groups of three, nd decimals."""
    return f"{v:,.{nd}f}".replace(",", " ")


def cell(sp: Optional[Mapping[str, float]], nd: int, unit: str) -> str:
    """A table cell: median [min–max] unit, or the value alone when the range is one value."""
    if sp is None:
        return "—"
    med, lo, hi = (num(sp[k], nd) for k in ("median", "min", "max"))
    if sp["n"] == 1 or lo == hi:
        return f"{med} {unit}"
    return f"{med} [{lo}–{hi}] {unit}"


def table_markers(name: str) -> tuple[str, str]:
    return f"<!-- ns3-table:{name} -->", f"<!-- /ns3-table:{name} -->"


def marked_table(page_text: str, name: str) -> str:
    """The text between a page's ns3-table markers (ValueError if they are missing)."""
    begin, end = table_markers(name)
    a, b = page_text.find(begin), page_text.find(end)
    if a < 0 or b < a:
        raise ValueError(f"no {begin} … {end} in the page")
    return page_text[a + len(begin):b].strip()


def splice_table(page: Path, name: str, table: str) -> None:
    """Replace the table between the page's markers with `table`."""
    begin, end = table_markers(name)
    text = page.read_text()
    a, b = text.find(begin), text.find(end)
    if a < 0 or b < a:
        raise ConfigError(f"{page}: no {begin} … {end} markers")
    page.write_text(text[:a + len(begin)] + "\n" + table.rstrip("\n") + "\n" + text[b:])


def cli(name: str, doc: str, argv: Optional[Sequence[str]], *, build: Any, run: Any,
        render_table: Any, write_table: Any, out_json: Path, default_seeds: int,
        extra: Optional[Mapping[str, Any]] = None) -> int:
    """A reference runner's command line: build (compile), run (every configuration x
    --seeds; writes the JSON and, at its default path, the page's table), table
    (re-render the page's table from the JSON), and the runner's extra commands
    ({name: function of the results}: what it returns is written back and rendered).
    Exit 2: a configuration problem; 1: a build or a simulation failed."""
    ap = argparse.ArgumentParser(prog=f"ns3_{name}.py", description=doc.split("\n\n")[0])
    ap.add_argument("command", choices=("build", "run", *(extra or {}), "table"))
    ap.add_argument("--seeds", type=int, default=default_seeds, help="seeds per configuration")
    ap.add_argument("--out", type=Path, default=out_json, help="results JSON (run)")
    a = ap.parse_args(argv)
    try:
        if a.command == "build":
            print(build(force=True))
        elif a.command == "run":
            if a.seeds < 1:
                raise ConfigError("--seeds must be >= 1")
            res = run(a.seeds)
            a.out.parent.mkdir(parents=True, exist_ok=True)
            a.out.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
            if a.out == out_json:
                write_table(res)
            print(render_table(res))
        elif a.command == "table":
            write_table(json.loads(out_json.read_text()))
        else:
            res = extra[a.command](json.loads(out_json.read_text()))
            out_json.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
            write_table(res)
    except ConfigError as e:
        print(f"ns3-{name}: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"ns3-{name}: {e}", file=sys.stderr)
        return 1
    return 0
