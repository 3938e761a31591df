#!/usr/bin/env python3
"""Copy one experiment run into the repository as commit-ready evidence.

    .venv/bin/python tools/archive_run.py results/dcbt-fig7-20261124-114100 \\
        docs/results/dcbt-fig7-20261124

RESULTS_DIR is what mmaqm-exp wrote (results/<run>/); DEST (docs/results/<name>/) must
not exist yet. DEST gets, and tools/check_results.py requires of every run the docs
link:

  COMMAND.txt                 the exact command line, its working directory, the git
                              commit (and how many files were uncommitted), the inputs
  scenario.yaml, policies.yaml, topology.json   copies of the run's input files
  experiment.json, table.txt, cpu.txt           as written by the run
  *.txt, *.png                the run's other report tables and its plots
  <ALGORITHM>/summary.json, flows.csv, controller.yaml
  <ALGORITHM>/counters.jsonl  the controller's counter samples, thinned when larger than
                              THIN_ABOVE_BYTES (see thin_samples: every number
                              summary.json derives from counters stays recomputable)
  <ALGORITHM>/registers.jsonl (+ registers.meta.json)   if present, thinned likewise
  <ALGORITHM>/share_events.jsonl   if present, whole (events, not samples)

The raw per-packet and per-flow logs stay behind (tens of MB): summary.json and flows.csv
hold what the docs quote, and tools/check_results.py recomputes the documented tables from
them. Before anything is written the thinned counters are checked: the per-port, per-class
deltas over the run and each phase recomputed from them must equal summary.json's. Then the
total size is printed. Bad input: a clear error and nothing written.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterable, Mapping, Optional, Sequence

REPO = Path(__file__).resolve().parents[1]
from mmaqm_exp import analysis, report, samples  # noqa: E402

COMMAND_FILE = "COMMAND.txt"
INPUT_COPIES = {"scenario": "scenario.yaml", "policies": "policies.yaml", "topology": "topology.json"}
REQUIRED_TOP_FILES = ("experiment.json", "table.txt", "cpu.txt", COMMAND_FILE, *INPUT_COPIES.values())
REQUIRED_ALGORITHM_FILES = ("summary.json", "flows.csv", "counters.jsonl")
OPTIONAL_ALGORITHM_FILES = ("controller.yaml", "registers.meta.json", "share_events.jsonl")
THINNED_FILES = ("counters.jsonl", "registers.jsonl")     #: time series of samples (events are kept)
THIN_ABOVE_BYTES = 200_000      #: a time series larger than this is thinned
THIN_PERIOD_S = 1.0             #: ... to one sample per switch per this many seconds (+ kept ones)


class ArchiveError(RuntimeError):
    pass


# ------------------------------------------------------------------ thinning (pure)
def keep_times_ns(summary: Mapping[str, Any]) -> list[int]:
    """The instants whose counter values summary.json uses: scenario time 0, every phase
    boundary and the end (analysis.switch_metrics: the last sample at or before each), the
    UDP check's baseline and final instants (the last sample at or before the baseline,
    which is also switch_keepup's, and the first at or after the final one)."""
    t0 = int(summary["t0_ns"])
    sc = summary["scenario"]
    secs = {0.0, float(sc["duration_s"])}
    for p in sc["phases"]:
        secs.update((float(p["start_s"]), float(p["end_s"])))
    out = {t0 + int(round(s * 1e9)) for s in secs}
    udp = summary.get("udp_arrivals") or {}
    out.update(int(udp[k]) for k in ("baseline_t_ns", "final_t_ns") if udp.get(k) is not None)
    return sorted(out)


def thin_samples(samples: Sequence[Mapping[str, Any]], keep_t_ns: Iterable[int],
                 period_ns: int) -> list[Mapping[str, Any]]:
    """Per switch (the "switch" key; one group if absent): its first and last sample, the
    first sample in each period_ns window from its first, and around each keep time the
    last sample at or before it and the first at or after it. Cumulative counters read at
    any kept instant are unchanged. Returns the kept samples sorted by t_ns."""
    if period_ns <= 0:
        raise ValueError(f"period_ns must be > 0, got {period_ns}")
    keep_t = sorted(keep_t_ns)
    by_switch: dict[Any, list[Mapping[str, Any]]] = {}
    for s in sorted(samples, key=lambda s: s["t_ns"]):
        by_switch.setdefault(s.get("switch"), []).append(s)
    kept: list[Mapping[str, Any]] = []
    for mine in by_switch.values():
        ts = [int(s["t_ns"]) for s in mine]
        idx = {0, len(mine) - 1}
        window = None
        for i, t in enumerate(ts):
            w = (t - ts[0]) // period_ns
            if w != window:
                idx.add(i)
                window = w
        j = 0
        for t in keep_t:
            while j < len(ts) and ts[j] <= t:
                j += 1
            if j > 0:
                idx.add(j - 1)                          # last at or before t
            k = j - 1 if j > 0 and ts[j - 1] == t else j
            if k < len(ts):
                idx.add(k)                              # first at or after t
        kept += [mine[i] for i in sorted(idx)]
    return sorted(kept, key=lambda s: s["t_ns"])


def switch_deltas_match(summary: Mapping[str, Any], samples: Sequence[Mapping[str, Any]]) -> list[str]:
    """Differences between summary.json's per-port, per-class counter deltas (over the run
    and each phase) and the ones recomputed from these samples; [] when equal."""
    sw = summary.get("switch") or {}
    if not sw.get("ports"):
        return []
    sc = summary["scenario"]
    scenario = SimpleNamespace(duration_s=sc["duration_s"], phases=[
        SimpleNamespace(name=p["name"], start_s=p["start_s"], end_s=p["end_s"]) for p in sc["phases"]])
    bn = sw.get("bottleneck") or {}
    again = analysis.switch_metrics(samples, int(summary["t0_ns"]), scenario,
                                    (bn["switch"], int(bn["port"])) if bn else None)
    out = []
    for key, port in sw["ports"].items():
        mine = again["ports"].get(key)
        for part in ("run", "phases"):
            if mine is None or mine[part] != port[part]:
                out.append(f"{key} {part}")
    return out


# ------------------------------------------------------------------ files
# Archived data files larger than this are stored gzip-compressed (name + ".gz"): the
# JSON of a run compresses about tenfold, and docs/results must stay a few MB.
GZIP_ABOVE_BYTES = 64 * 1024
GZIP_SUFFIXES = (".json", ".jsonl", ".csv")


def has_file(path: Path) -> bool:
    """path, or its gzip-compressed archive copy path.gz, exists."""
    return path.is_file() or path.with_name(path.name + ".gz").is_file()


def read_text(path: Path) -> str:
    """The text of path, or of its archive copy path.gz (gunzipped)."""
    if path.is_file():
        return path.read_text()
    gz = path.with_name(path.name + ".gz")
    if gz.is_file():
        return gzip.decompress(gz.read_bytes()).decode()
    raise FileNotFoundError(f"{path} (nor {gz.name})")


def compress_large_files(root: Path, above_bytes: int = GZIP_ABOVE_BYTES) -> list[str]:
    """gzip (deterministically: no name, mtime 0) every data file under root larger
    than above_bytes; returns their names relative to root."""
    done = []
    for f in sorted(root.rglob("*")):
        if f.is_file() and f.suffix in GZIP_SUFFIXES and f.stat().st_size > above_bytes:
            f.with_name(f.name + ".gz").write_bytes(gzip.compress(f.read_bytes(), mtime=0))
            f.unlink()
            done.append(str(f.relative_to(root)))
    return done


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        return samples.parse_jsonl(read_text(path), path)
    except ValueError as err:
        raise ArchiveError(str(err)) from None


def _write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))


def _input_path(recorded: str, experiment: Mapping[str, Any], results: Path) -> Path:
    """A run's input file as experiment.json names it: absolute, or relative to the run's
    working directory, the repository or the results folder (first that exists)."""
    p = Path(recorded)
    bases = [Path(experiment["cwd"])] if experiment.get("cwd") else []
    candidates = [p] if p.is_absolute() else [b / p for b in (*bases, REPO, results)]
    for c in candidates:
        if c.is_file():
            return c
    raise ArchiveError(f"input file {recorded!r} named in experiment.json not found "
                       f"(looked at {', '.join(map(str, candidates))})")


def command_text(experiment: Mapping[str, Any], results: Path, thinned: Mapping[str, str],
                 command: Optional[str], commit: Optional[str]) -> str:
    """COMMAND.txt: how to run this again, from what, and what the archive left out."""
    git = experiment.get("git") or {}
    command = command or experiment.get("command")
    commit = commit or git.get("commit")
    if not command:
        raise ArchiveError("experiment.json records no command line (a run before it did): "
                           "pass --command 'the exact command'")
    if not commit:
        raise ArchiveError("experiment.json records no git commit: pass --commit SHA")
    lines = [f"command: {command}",
             f"cwd: {experiment.get('cwd', '(not recorded)')}",
             f"git commit: {commit}"
             + (f" ({git['uncommitted_files']} files uncommitted at run time)"
                if git.get("uncommitted_files") else ""),
             f"started: {experiment.get('started')}, {experiment.get('nproc')} CPUs",
             f"algorithms: {', '.join(experiment.get('algorithms', []))}; "
             f"duration {experiment.get('duration_s')} s"]
    for key, name in INPUT_COPIES.items():
        lines.append(f"{key}: {experiment.get(key)} (copied here as {name})")
    lines.append(f"archived from {results} by tools/archive_run.py, "
                 f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; raw traffic logs not kept")
    lines += [f"thinned: {name}" for name in sorted(thinned.values())]
    return "\n".join(lines) + "\n"


def _copy_series(src: Path, dst: Path, summary: Mapping[str, Any], period_ns: int) -> Optional[str]:
    """Copy a JSONL time series, thinned if large; returns a note when thinned."""
    if src.stat().st_size <= THIN_ABOVE_BYTES:
        shutil.copyfile(src, dst)
        return None
    rows = _read_jsonl(src)
    if not all("t_ns" in r for r in rows):
        shutil.copyfile(src, dst)
        return None
    kept = thin_samples(rows, keep_times_ns(summary), period_ns)
    _write_jsonl(dst, kept)
    return (f"{dst.parent.name}/{dst.name}: {len(kept)} of {len(rows)} samples (one per "
            f"{period_ns / 1e9:g} s per switch, plus the samples at every phase boundary and "
            f"the UDP check's; every counter delta in summary.json recomputes exactly)")


def archive(results: Path, dest: Path, *, command: Optional[str] = None,
            commit: Optional[str] = None, period_s: float = THIN_PERIOD_S) -> list[Path]:
    """Build the archive in a temporary folder beside dest, check it, then rename it to
    dest. Returns the files written."""
    results, dest = Path(results), Path(dest)
    if not (results / "experiment.json").is_file():
        raise ArchiveError(f"{results} has no experiment.json: not an mmaqm-exp results folder")
    if dest.exists():
        raise ArchiveError(f"{dest} exists; choose a new name (nothing was changed)")
    if period_s <= 0:
        raise ArchiveError(f"--thin-period-s must be > 0, got {period_s}")
    experiment = json.loads((results / "experiment.json").read_text())
    algorithms = [a for a in experiment.get("algorithms", []) if (results / a / "summary.json").is_file()]
    if not algorithms:
        raise ArchiveError(f"{results}: no <ALGORITHM>/summary.json")
    missing = [f"{a}/{n}" for a in algorithms for n in REQUIRED_ALGORITHM_FILES
               if not (results / a / n).is_file()]
    missing += [n for n in REQUIRED_TOP_FILES if n not in (COMMAND_FILE, *INPUT_COPIES.values())
                and not (results / n).is_file()]
    if missing:
        raise ArchiveError(f"{results}: missing {', '.join(missing)}")
    inputs = {key: _input_path(str(experiment.get(key)), experiment, results)
              for key in INPUT_COPIES}
    period_ns = int(round(period_s * 1e9))

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        thinned: dict[str, str] = {}
        for f in sorted(results.iterdir()):
            if f.is_file() and (f.suffix in (".txt", ".png")
                                or f.name in ("experiment.json", report.CAPACITY_BENCH_FILE)):
                shutil.copyfile(f, tmp / f.name)
        for key, src in inputs.items():
            shutil.copyfile(src, tmp / INPUT_COPIES[key])
        for a in algorithms:
            (tmp / a).mkdir()
            summary = json.loads((results / a / "summary.json").read_text())
            for name in ("summary.json", "flows.csv", *OPTIONAL_ALGORITHM_FILES):
                if (results / a / name).is_file():
                    shutil.copyfile(results / a / name, tmp / a / name)
            for name in THINNED_FILES:
                if (results / a / name).is_file():
                    note = _copy_series(results / a / name, tmp / a / name, summary, period_ns)
                    if note:
                        thinned[f"{a}/{name}"] = note
            bad = switch_deltas_match(summary, _read_jsonl(tmp / a / "counters.jsonl"))
            if bad:
                raise ArchiveError(f"{a}: the archived counters do not recompute summary.json's "
                                   f"deltas for {', '.join(bad)} (was the summary made from "
                                   f"these counters?)")
        (tmp / COMMAND_FILE).write_text(command_text(experiment, results, thinned, command, commit))
        compress_large_files(tmp)
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return sorted(p for p in dest.rglob("*") if p.is_file())


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results_dir", type=Path, help="results/<run>/ as mmaqm-exp wrote it")
    p.add_argument("dest", type=Path, help="docs/results/<name>/ (must not exist)")
    p.add_argument("--command", help="the exact command line, if experiment.json has none")
    p.add_argument("--commit", help="the git commit, if experiment.json has none")
    p.add_argument("--thin-period-s", type=float, default=THIN_PERIOD_S,
                   help="keep one counter sample per switch per this many seconds [%(default)s]")
    a = p.parse_args(argv)
    try:
        files = archive(a.results_dir, a.dest, command=a.command, commit=a.commit,
                        period_s=a.thin_period_s)
    except (ArchiveError, OSError, ValueError, KeyError) as err:
        print(f"archive_run: {err}", file=sys.stderr)
        return 1
    total = sum(f.stat().st_size for f in files)
    for line in (a.dest / COMMAND_FILE).read_text().splitlines():
        if line.startswith("thinned: "):
            print(line)
    print(f"archive_run: {len(files)} files, {total / 1e6:.2f} MB in {a.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
