#!/usr/bin/env python3
"""Cut a Tofino build's bfrt.json (about 570 kB, mostly match tables and the
SDE's fixed tables) down to what the controller and the PTF harness read and
write over BfRt, as the tests use it (tests/controller/fixtures/tna-<variant>.bfrt.json):
the schema version, every table of table_type "Lpf" and the occupancy and flow
slot registers (REGISTERS_KEPT) as the compiler wrote them, and no learn filters.

  tools/strip_bfrt_json.py build/tna/red/bfrt.json > tests/controller/fixtures/tna-red.bfrt.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


# The registers read over BfRt (ptf-tests/tests/mmaqm_tofino.py's names), by prefix
REGISTERS_KEPT = ("pipe.TnaIngress.aqm.occupancy.", "pipe.TnaIngress.aqm.flow_report.flow_slots")


def kept(table: dict) -> bool:
    kind = table.get("table_type")
    return kind == "Lpf" or (kind == "Register" and table["name"].startswith(REGISTERS_KEPT))


def strip(doc: dict) -> dict:
    return {"schema_version": doc["schema_version"],
            "tables": [t for t in doc["tables"] if kept(t)],
            "learn_filters": []}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    doc = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    json.dump(strip(doc), sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
