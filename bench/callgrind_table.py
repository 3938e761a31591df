#!/usr/bin/env python3
"""Markdown tables from bench/callgrind_cost.py runs, one column per run.

  .venv/bin/python bench/callgrind_table.py before=A.json.gz after1=B.json.gz ...
  .venv/bin/python bench/callgrind_table.py --check docs/results/bench/callgrind-20261127.md

The page's tables sit between `<!-- callgrind_table: LABEL=FILE ... -->` and
`<!-- end callgrind_table -->`; --check regenerates them from the files the
marker names (relative to the repository) and fails on any difference, and
--write rewrites them. Nothing in the tables is typed by hand.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BASELINE = "minimal_ipv4"
BASELINE6, V6_TAG = "minimal_ipv6", "-v6"     # run_bench.py's IPv6 names


def baseline_of(variant: str) -> str:
    """The minimal router a variant's ratio is against: its own family's."""
    return BASELINE6 if variant == BASELINE6 or variant.endswith(V6_TAG) else BASELINE
MARK = re.compile(r"<!-- callgrind_table: (?P<runs>[^>]*?) -->\n.*?<!-- end callgrind_table -->",
                  re.S)


def load(path: Path) -> dict:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return json.loads(data)


def tables(runs: list[tuple[str, Path]]) -> str:
    loaded = [(label, {r["variant"]: r for r in load(path)["results"]}) for label, path in runs]
    variants = [v for v in loaded[0][1] if all(v in by for _, by in loaded)]
    labels = [label for label, _ in loaded]
    out = ["Instructions per packet (ratio minimal router / variant; PHV fields):", "",
           "| variant | " + " | ".join(labels) + " | change |",
           "|---|" + "---:|" * (len(labels) + 1)]
    for v in variants:
        cells = []
        for _, by in loaded:
            r = by[v]
            base = by[baseline_of(v)]["ir_per_packet"]
            fields = (r.get("cost") or {}).get("phv_fields", "-")
            cells.append(f"{r['ir_per_packet']:,} ({base / r['ir_per_packet']:.3f}; {fields})")
        first, last = loaded[0][1][v]["ir_per_packet"], loaded[-1][1][v]["ir_per_packet"]
        out.append(f"| {v} | " + " | ".join(cells) + f" | {100 * (last - first) / first:+.1f} % |")
    label, by = loaded[-1]
    parts = list(next(iter(by.values()))["parts_ir_per_packet"])
    out += ["", f"Where they go in `{label}`, instructions per packet (inclusive; the receive "
            "thread includes reset_metadata, the ingress thread the parser and the "
            "pipelines' ingress part):", "",
            "| variant | " + " | ".join(p.strip() for p in parts) + " |",
            "|---|" + "---:|" * len(parts)]
    for v in variants:
        got = by[v]["parts_ir_per_packet"]
        out.append(f"| {v} | " + " | ".join(f"{got[p]:,}" for p in parts) + " |")
    return "\n".join(out) + "\n"


def parse_runs(spec: list[str]) -> list[tuple[str, Path]]:
    runs = []
    for item in spec:
        label, sep, path = item.partition("=")
        if not sep or not label or not path:
            raise SystemExit(f"callgrind_table: expected LABEL=FILE, got {item!r}")
        runs.append((label, REPO / path if not Path(path).is_absolute() else Path(path)))
    return runs


def render_page(text: str) -> str:
    def sub(m: re.Match) -> str:
        runs = parse_runs(m["runs"].split())
        return (f"<!-- callgrind_table: {m['runs']} -->\n" + tables(runs)
                + "<!-- end callgrind_table -->")
    return MARK.sub(sub, text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*", help="LABEL=FILE (bench/callgrind_cost.py JSON, .gz ok)")
    ap.add_argument("--check", type=Path, help="a page whose tables must match their files")
    ap.add_argument("--write", type=Path, help="rewrite a page's tables from their files")
    a = ap.parse_args(argv)
    if a.check or a.write:
        page = a.check or a.write
        text = page.read_text()
        if not MARK.search(text):
            print(f"callgrind_table: {page} has no callgrind_table marker", file=sys.stderr)
            return 1
        new = render_page(text)
        if a.write:
            page.write_text(new)
            return 0
        if new != text:
            print(f"callgrind_table: {page}'s tables differ from their runs; "
                  f"run bench/callgrind_table.py --write {page}", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(tables(parse_runs(a.runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
