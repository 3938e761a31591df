#!/usr/bin/env python3
"""The TNA build's departure reports against the recirculation port's rate.

Every packet that leaves a port under AQM makes egress mirror one report of
TNA_REPORT_COPY_BYTES to the recirculation port (dev port 68, pipe 0), which
ingress consumes (docs/tofino.md, "Departure reports"). On the wire a frame
also costs a preamble and an inter-frame gap (20 bytes). The table is the share
of the recirculation port's rate the reports take, by the number of ports
under AQM at line rate and their packet size; above 100 % reports are lost
(and the counts they carry are wrong until they heal).

  .venv/bin/python tools/tna_recirc_budget.py            # the markdown table
  .venv/bin/python tools/tna_recirc_budget.py --check docs/tofino.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "control-plane"))
from mmaqm.targets.tna import TNA_REPORT_COPY_BYTES  # noqa: E402

WIRE_OVERHEAD_BYTES = 20          # preamble 8 + inter-frame gap 12
PORT_RATE_GBPS = 100.0            # a Tofino 1 port, and the recirculation port
MIN_FRAME_BYTES = 64
PACKET_BYTES = (64, 256, 512, 1500)
PORTS = (1, 4, 8, 16, 32)
BEGIN = "<!-- tna_recirc_budget -->"
END = "<!-- end tna_recirc_budget -->"


def pps(frame_bytes: int, rate_gbps: float = PORT_RATE_GBPS) -> float:
    """Frames per second at rate_gbps."""
    return rate_gbps * 1e9 / ((max(frame_bytes, MIN_FRAME_BYTES) + WIRE_OVERHEAD_BYTES) * 8)


def share(ports: int, packet_bytes: int) -> float:
    """Reports' share of the recirculation port: ports at line rate of packet_bytes."""
    return ports * pps(packet_bytes) / pps(TNA_REPORT_COPY_BYTES)


def table() -> str:
    head = "| ports at 100 Gbit/s | " + " | ".join(f"{b}-byte packets" for b in PACKET_BYTES)
    rows = [head + " |", "|---|" + "---:|" * len(PACKET_BYTES)]
    for n in PORTS:
        rows.append(f"| {n} | " + " | ".join(f"{100 * share(n, b):.0f} %" for b in PACKET_BYTES)
                    + " |")
    limit = ", ".join(f"{b} B: {int(pps(TNA_REPORT_COPY_BYTES) // pps(b))}" for b in PACKET_BYTES)
    return "\n".join(rows) + f"\n\nPorts at line rate one recirculation port serves: {limit}.\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", type=Path, help="a page whose table must be this one")
    a = ap.parse_args(argv)
    if a.check is None:
        sys.stdout.write(table())
        return 0
    text = a.check.read_text()
    try:
        got = text.split(BEGIN, 1)[1].split(END, 1)[0]
    except IndexError:
        print(f"tna_recirc_budget: {a.check} has no {BEGIN} ... {END} block", file=sys.stderr)
        return 1
    if got.strip() != table().strip():
        print(f"tna_recirc_budget: {a.check}'s table differs; its block should read:\n{table()}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
