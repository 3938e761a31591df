#!/usr/bin/env python3
"""The Tofino compiler's resource report as one table row per algorithm variant.

make build-tna compiles p4src/tna/main.p4 once per algorithm into
build/tna/<variant>/ with bf-p4c's -g, which writes, per pipe, <pipe>/logs/:
  resources.json  (p4c backends/tofino compiler_interfaces/schemas/resources_schema.py):
                  resources.mau.nStages and resources.mau.mau_stages[], each with
                  logical_tables.ids, rams.srams, map_rams.maprams, tcams.tcams,
                  hash_bits.bits, hash_distribution_units.units, meter_alus.meters
                  (a register's stateful ALU is a meter ALU on Tofino);
  metrics.json    (metrics_schema.py, written by the driver's summary logging):
                  phv.normal[] {bit_width, containers_occupied, bits_occupied},
                  mau.srams / mau.tcams (totals, used to cross-check).
This reads them (no compiler needed) and prints or writes a Markdown table:
  tools/tna_resources.py build/tna            print the table
  tools/tna_resources.py --write build/tna    also write build/tna/resources.{md,json}
A variant directory without resources.json is reported as not compiled.

  tools/tna_resources.py --evidence DIR build/tna
                                         write the committed evidence of a build:
                                         per variant resources.json.gz, phv.json.gz
                                         (the containers' widths and slices only) and
                                         tofino.bin.sha256; the table reads them too.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
from pathlib import Path

COLUMNS = [
    ("variant", "algorithm"),
    ("stages", "MAU stages used"),
    ("srams", "SRAM blocks"),
    ("map_rams", "map RAMs"),
    ("tcams", "TCAM blocks"),
    ("salus", "stateful ALUs"),
    ("hash_bits", "hash bits"),
    ("hash_units", "hash dist. units"),
    ("logical_tables", "logical tables"),
    ("phv_containers", "PHV containers"),
    ("phv_bits", "PHV bits"),
]


class ReportError(ValueError):
    """A log file does not have the documented schema."""


def _entries(stage: dict, resource: str, key: str) -> int:
    """How many elements of one kind a stage lists as used."""
    block = stage.get(resource)
    if block is None:
        return 0
    items = block.get(key)
    if not isinstance(items, list):
        raise ReportError(f"stage {stage.get('stage_number')}: {resource}.{key} is not a list")
    return len(items)


def summarize_resources(resources: dict) -> dict:
    """Totals over the MAU stages of one resources.json document."""
    try:
        mau = resources["resources"]["mau"]
        stages = mau["mau_stages"]
        n_stages = mau["nStages"]
    except (KeyError, TypeError) as err:
        raise ReportError(f"resources.json lacks resources.mau.{{nStages,mau_stages}}: {err}") from err
    used = [s for s in stages if _entries(s, "logical_tables", "ids")]
    return {
        "stages": len(used),
        "stages_available": n_stages,
        "srams": sum(_entries(s, "rams", "srams") for s in stages),
        "map_rams": sum(_entries(s, "map_rams", "maprams") for s in stages),
        "tcams": sum(_entries(s, "tcams", "tcams") for s in stages),
        "salus": sum(_entries(s, "meter_alus", "meters") for s in stages),
        "hash_bits": sum(_entries(s, "hash_bits", "bits") for s in stages),
        "hash_units": sum(_entries(s, "hash_distribution_units", "units") for s in stages),
        "logical_tables": sum(_entries(s, "logical_tables", "ids") for s in stages),
    }


def summarize_metrics(metrics: dict) -> dict:
    """PHV occupancy (and the MAU totals, to cross-check) of one metrics.json."""
    try:
        normal = metrics["phv"]["normal"]
    except (KeyError, TypeError) as err:
        raise ReportError(f"metrics.json lacks phv.normal: {err}") from err
    out = {
        "phv_containers": sum(int(t["containers_occupied"]) for t in normal),
        "phv_bits": sum(int(t["bits_occupied"]) for t in normal),
        "phv_by_width": {int(t["bit_width"]): int(t["containers_occupied"]) for t in normal},
    }
    mau = metrics.get("mau") or {}
    for key in ("srams", "tcams"):
        if key in mau:
            out[f"metrics_{key}"] = int(mau[key])
    return out


def summarize_phv(phv: dict) -> dict:
    """PHV occupancy from phv.json (the allocation itself), when the compiler
    wrote no metrics.json (p4c v1.2.5.16's driver stops before it)."""
    try:
        containers = phv["containers"]
        bits = sum(s["slice_info"]["msb"] - s["slice_info"]["lsb"] + 1
                   for c in containers for s in c["slices"])
    except (KeyError, TypeError) as err:
        raise ReportError(f"phv.json lacks containers/slices: {err}") from err
    by_width: dict[int, int] = {}
    for c in containers:
        by_width[int(c["bit_width"])] = by_width.get(int(c["bit_width"]), 0) + 1
    return {"phv_containers": len(containers), "phv_bits": bits,
            "phv_by_width": dict(sorted(by_width.items()))}


def _find(directory: Path, name: str) -> list[Path]:
    """name under directory, or its committed form name.gz (--evidence)."""
    return sorted(directory.rglob(name)) or sorted(directory.rglob(name + ".gz"))


def _load(path: Path) -> dict:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def _assembled(directory: Path) -> bool:
    """The assembler wrote tofino.bin (or the evidence kept its digest)."""
    return any(directory.rglob("tofino.bin")) or any(directory.rglob("tofino.bin.sha256"))


def summarize_variant(directory: Path) -> dict:
    """One variant's row; {'variant', 'compiled': False} without resources.json."""
    row: dict = {"variant": directory.name}
    resources = _find(directory, "resources.json")
    if not resources:
        row["compiled"] = False
        return row
    row["compiled"] = True
    row.update(summarize_resources(_load(resources[0])))
    if row["stages"] == 0 and not _assembled(directory):
        return {"variant": directory.name, "compiled": False}   # an empty report: it failed
    # the compiler writes resources.json for a program that needs more than the
    # pipeline's stages too; only the assembler's tofino.bin says it fits
    row["fits"] = _assembled(directory) and row["stages"] <= row["stages_available"]
    metrics = _find(directory, "metrics.json")
    if metrics:
        row.update(summarize_metrics(_load(metrics[0])))
        for key in ("srams", "tcams"):
            if f"metrics_{key}" in row and row[f"metrics_{key}"] != row[key]:
                raise ReportError(f"{directory.name}: {key} {row[key]} in resources.json but "
                                  f"{row[f'metrics_{key}']} in metrics.json")
    else:
        phv = _find(directory, "phv.json")
        if phv:
            row.update(summarize_phv(_load(phv[0])))
    return row


def _gzip_json(data: dict, path: Path) -> None:
    """Deterministic gzip (no name, mtime 0) of data as JSON."""
    path.write_bytes(gzip.compress(json.dumps(data, sort_keys=True).encode(), mtime=0))


def write_evidence(build_dir: Path, out: Path) -> list[str]:
    """Per compiled variant of build_dir, what the table is computed from, small
    enough to commit: resources.json and metrics.json (gzipped), phv.json cut to
    the containers' widths and slices (gzipped), tofino.bin's SHA-256. -> the
    variants written."""
    written = []
    for directory in sorted(p for p in build_dir.iterdir() if p.is_dir()):
        resources = _find(directory, "resources.json")
        if not resources:
            continue
        dest = out / directory.name
        dest.mkdir(parents=True, exist_ok=True)
        _gzip_json(_load(resources[0]), dest / "resources.json.gz")
        metrics = _find(directory, "metrics.json")
        if metrics:
            _gzip_json(_load(metrics[0]), dest / "metrics.json.gz")
        phv = _find(directory, "phv.json")
        if phv:
            full = _load(phv[0])
            _gzip_json({"compiler_version": full.get("compiler_version"),
                        "build_date": full.get("build_date"),
                        "containers": [{"bit_width": c["bit_width"],
                                        "slices": [{"slice_info": {
                                            "msb": sl["slice_info"]["msb"],
                                            "lsb": sl["slice_info"]["lsb"]}}
                                            for sl in c["slices"]]}
                                       for c in full["containers"]]},
                       dest / "phv.json.gz")
        binary = sorted(directory.rglob("tofino.bin"))
        if binary:
            data = binary[0].read_bytes()
            (dest / "tofino.bin.sha256").write_text(
                f"{hashlib.sha256(data).hexdigest()}  {len(data)} bytes  "
                f"{binary[0].relative_to(directory)}\n")
        written.append(directory.name)
    return written


def summarize(build_dir: Path) -> list[dict]:
    return [summarize_variant(d) for d in sorted(p for p in build_dir.iterdir() if p.is_dir())]


def markdown(rows: list[dict]) -> str:
    lines = ["| " + " | ".join(title for _, title in COLUMNS) + " |",
             "|" + "|".join("---" if key == "variant" else "---:" for key, _ in COLUMNS) + "|"]
    for row in rows:
        if not row.get("compiled"):
            cells = [row["variant"]] + ["not compiled"] + [""] * (len(COLUMNS) - 2)
        else:
            cells = []
            for key, _ in COLUMNS:
                value = row.get(key, "n/a")
                if key == "stages":
                    value = f"{value} / {row['stages_available']}"
                    if not row.get("fits"):
                        value += " (does not fit)"
                cells.append(str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build_dir", type=Path)
    parser.add_argument("--write", action="store_true",
                        help="also write resources.md and resources.json into build_dir")
    parser.add_argument("--evidence", type=Path, metavar="DIR",
                        help="also write each variant's evidence (the committed form) to DIR")
    args = parser.parse_args(argv)
    if not args.build_dir.is_dir():
        print(f"tna_resources: {args.build_dir} is not a directory", file=sys.stderr)
        return 1
    try:
        rows = summarize(args.build_dir)
    except (ReportError, json.JSONDecodeError) as err:
        print(f"tna_resources: {err}", file=sys.stderr)
        return 1
    table = markdown(rows)
    print(table, end="")
    if args.evidence:
        write_evidence(args.build_dir, args.evidence)
    if args.write:
        (args.build_dir / "resources.md").write_text(table)
        (args.build_dir / "resources.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(r.get("compiled") and r.get("fits") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
