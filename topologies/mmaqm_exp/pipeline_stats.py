#!/usr/bin/env python3
"""How much BMv2 pipeline a compiled program has: tables, conditionals and
actions per pipeline, read from the BMv2 JSON that p4c-bm2-ss writes.

Every `if` in a P4 apply block outside an action becomes a BMv2 conditional
node, and every action call there a one-action table ("tbl_..."), so these
counts track the per-packet interpretation work (bench/README.md). BMv2 also
resets and copies every PHV field of every packet, and executes an action one
primitive at a time (an `if` inside an action is a jump primitive), so the
field count and the primitives per action are printed too.

  python -m mmaqm_exp.pipeline_stats build/main.json [--json] [--actions]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def pipeline_stats(bmv2_json: dict) -> dict[str, dict[str, int]]:
    """{pipeline name: {"tables": n, "conditionals": n, "actions": n}}."""
    stats = {}
    for pipeline in bmv2_json.get("pipelines", []):
        action_ids = {i for t in pipeline.get("tables", []) for i in t.get("action_ids", [])}
        stats[pipeline["name"]] = {
            "tables": len(pipeline.get("tables", [])),
            "conditionals": len(pipeline.get("conditionals", [])),
            "actions": len(action_ids),
        }
    return stats


def phv_fields(bmv2_json: dict) -> int:
    """Fields of every header and metadata instance (the scalars of p4c's temporaries too)."""
    widths = {t["name"]: len(t["fields"]) for t in bmv2_json.get("header_types", [])}
    return sum(widths[h["header_type"]] for h in bmv2_json.get("headers", []))


def action_primitives(bmv2_json: dict) -> dict[str, int]:
    """{action name: primitives in its body}; an upper bound on what one call executes."""
    counts: dict[str, int] = {}
    for action in bmv2_json.get("actions", []):
        counts[action["name"]] = max(counts.get(action["name"], 0), len(action["primitives"]))
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bmv2_json", type=Path)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--actions", action="store_true", help="also primitives per action")
    args = parser.parse_args()
    try:
        data = json.loads(args.bmv2_json.read_text())
    except (OSError, ValueError) as exc:
        print(f"pipeline_stats: cannot read {args.bmv2_json}: {exc}", file=sys.stderr)
        return 2
    stats = pipeline_stats(data)
    if args.json:
        print(json.dumps({"pipelines": stats, "phv_fields": phv_fields(data),
                          "action_primitives": action_primitives(data)}, sort_keys=True))
        return 0
    total = sum(s["tables"] for s in stats.values())
    parts = ", ".join(f"{name} {s['tables']} tables / {s['conditionals']} conditionals"
                      for name, s in stats.items())
    print(f"{args.bmv2_json}: {total} BMv2 tables ({parts}), {phv_fields(data)} PHV fields")
    if args.actions:
        for name, count in sorted(action_primitives(data).items()):
            print(f"  {count:4d} primitives  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
