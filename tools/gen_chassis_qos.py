#!/usr/bin/env python3
"""Generate the traffic-manager part of a Stratum chassis config for the TNA
programs: a text-format ChassisConfig fragment (vendor_config.tofino_config,
field names of Stratum's stratum/hal/lib/common/common.proto) that a deployer
merges into the switch's chassis config.

For each AQM port (a dev port of pipe 0, 0..63) it configures the two queues
the TNA programs use (tna_types.p4):
- qid TNA_QID_FIFO (0), the FIFO, at PRIO_0;
- qid TNA_QID_CUT_IN (1), ChIPS's cut-in queue, at PRIO_1. Queues of different
  priority levels are served in strict priority, so qid 1 goes before qid 0
  (ChIPS: the cut-in packet leaves before the FIFO).
Buffer limits: the AQM counts packets (queue_limit_pkts, as on BMv2, where the
queue depth is packets too); Tofino's buffer is 80-byte cells. Each queue gets
base_use_limit = queue_limit_pkts x ceil(frame_bytes / 80) cells with the
buffer absorption factor disabled (a static limit), so the TM's tail drop
never comes before the AQM's verdict for frames up to frame_bytes: the P4
program decides the drops. Pool sizes are not set (the SDK's defaults).
No deflect-on-drop: the programs do not use it (no node_id_to_deflect_on_drop_configs).
The recirculation port (dev port 68, departure reports) keeps its default queue.

  tools/gen_chassis_qos.py --ports 1-4 > docs/tofino-chassis-qos.pb.txt

Bad arguments (a port outside pipe 0's 0..63, a duplicate, a limit out of
range): a message on stderr and exit 2, nothing written.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

from mmaqm import p4generated
from mmaqm.algorithms import DEFAULT_QUEUE_LIMIT_PKTS
from mmaqm.targets.tna import TNA_MAX_QUEUE_LIMIT_PKTS, TNA_PIPE_SHIFT, TNA_STATE_PIPE

TNA_QID_FIFO = p4generated.TNA_TYPES_CONSTANTS["TNA_QID_FIFO"]
TNA_QID_CUT_IN = p4generated.TNA_TYPES_CONSTANTS["TNA_QID_CUT_IN"]
TNA_RECIRC_PORT = p4generated.TNA_TYPES_CONSTANTS["TNA_RECIRC_PORT"]

# Tofino's buffer cell (the value fabric-tna's util/gen-qos-config.py uses).
CELL_BYTES = 80
# Largest frame the limit is sized for: 1500-byte MTU + Ethernet header, VLAN tag, FCS.
DEFAULT_FRAME_BYTES = 1522
# Pipe 0's dev ports under AQM: 0..63 (64..67 are its Ethernet CPU ports, 68 the
# recirculation port; docs/tofino.md, "State on every pipe").
AQM_DEV_PORT_FIRST = TNA_STATE_PIPE << TNA_PIPE_SHIFT
AQM_DEV_PORT_LAST = AQM_DEV_PORT_FIRST + 63
# Stratum's node id (1-based), the key of node_id_to_qos_config.
DEFAULT_NODE_ID = 1

# Scheduling priority of each queue (TofinoQosConfig.SchedulingPriority):
# different levels are served in strict priority, higher first.
PRIO_FIFO = "PRIO_0"
PRIO_CUT_IN = "PRIO_1"
APP_POOL = "EGRESS_APP_POOL_0"

STRATUM_PROTO_COMMIT = "f8f71301cb602ac663818f2b185d57771b27d8e2"


class ConfigError(ValueError):
    """A bad argument: exit 2, nothing written."""


def parse_ports(text: str) -> list[int]:
    """'1-4,8' -> [1, 2, 3, 4, 8]; every port in pipe 0's AQM range, no duplicates."""
    ports: list[int] = []
    for item in text.split(","):
        item = item.strip()
        lo_s, sep, hi_s = item.partition("-")
        try:
            lo = int(lo_s)
            hi = int(hi_s) if sep else lo
        except ValueError:
            raise ConfigError(f"--ports: {item!r} is not a dev port or a range a-b") from None
        if hi < lo:
            raise ConfigError(f"--ports: range {item!r} is empty")
        ports.extend(range(lo, hi + 1))
    check_ports(ports)
    return ports


def check_ports(ports: Sequence[int]) -> None:
    if not ports:
        raise ConfigError("no ports given")
    outside = [p for p in ports if not AQM_DEV_PORT_FIRST <= p <= AQM_DEV_PORT_LAST]
    if outside:
        raise ConfigError(
            f"dev port(s) {', '.join(map(str, outside))} outside pipe {TNA_STATE_PIPE}'s AQM ports "
            f"{AQM_DEV_PORT_FIRST}..{AQM_DEV_PORT_LAST}: the TNA programs keep AQM state in pipe "
            f"{TNA_STATE_PIPE} only (docs/tofino.md, 'State on every pipe')")
    dups = sorted({p for p in ports if ports.count(p) > 1})
    if dups:
        raise ConfigError(f"dev port(s) {', '.join(map(str, dups))} given twice")


def cells_per_queue(queue_limit_pkts: int, frame_bytes: int) -> int:
    return queue_limit_pkts * math.ceil(frame_bytes / CELL_BYTES)


def queue_mapping(qid: int, prio: str, what: str, limit_cells: int) -> str:
    return f"""          queue_mapping {{
            # {what}
            queue_id: {qid}
            priority: {prio}
            weight: 1
            minimum_guaranteed_cells: 0
            pool: {APP_POOL}
            base_use_limit: {limit_cells}
            baf: DISABLE_BAF
            hysteresis: 0
          }}
"""


def fragment(ports: Sequence[int], queue_limit_pkts: int = DEFAULT_QUEUE_LIMIT_PKTS,
             frame_bytes: int = DEFAULT_FRAME_BYTES, node_id: int = DEFAULT_NODE_ID,
             command: str = "") -> str:
    """The text-format ChassisConfig fragment (ConfigError on bad input)."""
    check_ports(ports)
    if not 1 <= queue_limit_pkts <= TNA_MAX_QUEUE_LIMIT_PKTS:
        raise ConfigError(f"queue limit {queue_limit_pkts} packets: must be 1.."
                          f"{TNA_MAX_QUEUE_LIMIT_PKTS} (the TNA programs' largest queue_limit_pkts)")
    if not 64 <= frame_bytes <= 16383:
        raise ConfigError(f"frame size {frame_bytes} bytes: must be 64..16383")
    if node_id < 1:
        raise ConfigError(f"node id {node_id}: Stratum's node ids start at 1")
    per_frame = math.ceil(frame_bytes / CELL_BYTES)
    limit_cells = cells_per_queue(queue_limit_pkts, frame_bytes)
    total_cells = 2 * len(ports) * limit_cells
    head = f"""# Stratum chassis-config fragment: the traffic manager's queues for mmaqm's TNA
# programs. Merge vendor_config into the switch's chassis config.
# Generated by: {command or 'tools/gen_chassis_qos.py'}
# NOT loaded on a switch: checked only by parsing it into ChassisConfig of
# Stratum's common.proto (commit {STRATUM_PROTO_COMMIT[:12]};
# tests/tools/test_chassis_qos.py).
#
# Per AQM dev port (pipe {TNA_STATE_PIPE}): qid {TNA_QID_FIFO} (FIFO) at {PRIO_FIFO}, qid {TNA_QID_CUT_IN} (ChIPS cut-in) at
# {PRIO_CUT_IN}: strict priority, qid {TNA_QID_CUT_IN} is served first.
# Buffer: the AQM's limit is {queue_limit_pkts} packets (queue_limit_pkts; on BMv2 the
# queue depth is packets too). Tofino counts 80-byte cells: a {frame_bytes}-byte frame
# takes {per_frame} cells, so each queue may hold {queue_limit_pkts} x {per_frame} = {limit_cells} cells
# (base_use_limit, BAF disabled: a static limit) and the TM never tail-drops
# before the AQM for frames up to {frame_bytes} bytes. All {2 * len(ports)} queues together: {total_cells}
# cells ({total_cells * CELL_BYTES} bytes) of pool {APP_POOL}, whose size is left at the
# SDK's default (check it holds them).
# Each queue holds at most queue_limit_pkts packets: the AQM's limit holds for
# the FIFO with ChIPS's slot clones and for the cut-in queue (docs/algorithms/
# chips.md). Assumed, not checked on a switch: the slot clones' mirror session
# (64 + port) queues them in qid 0, the mirror session's default queue.
# No deflect-on-drop (the programs do not use it). The recirculation port
# (dev port {TNA_RECIRC_PORT}, departure reports) keeps its default queue.
"""
    body = "".join(
        f"""        queue_configs {{
          sdk_port: {port}
{queue_mapping(TNA_QID_FIFO, PRIO_FIFO, "FIFO", limit_cells)}\
{queue_mapping(TNA_QID_CUT_IN, PRIO_CUT_IN, "ChIPS cut-in: strict priority over the FIFO", limit_cells)}\
        }}
""" for port in ports)
    return f"""{head}vendor_config {{
  tofino_config {{
    node_id_to_qos_config {{
      key: {node_id}
      value {{
{body}      }}
    }}
  }}
}}
"""


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ports", required=True,
                    help=f"AQM dev ports of pipe 0 ({AQM_DEV_PORT_FIRST}..{AQM_DEV_PORT_LAST}), e.g. 1-4,8")
    ap.add_argument("--queue-limit-pkts", type=int, default=DEFAULT_QUEUE_LIMIT_PKTS,
                    help="the largest queue_limit_pkts configured on these ports "
                         f"(default {DEFAULT_QUEUE_LIMIT_PKTS})")
    ap.add_argument("--frame-bytes", type=int, default=DEFAULT_FRAME_BYTES,
                    help=f"largest frame (default {DEFAULT_FRAME_BYTES})")
    ap.add_argument("--node-id", type=int, default=DEFAULT_NODE_ID,
                    help=f"Stratum node id (default {DEFAULT_NODE_ID})")
    args = ap.parse_args(argv)
    argv_text = " ".join(sys.argv[1:] if argv is None else argv)
    try:
        text = fragment(parse_ports(args.ports), args.queue_limit_pkts, args.frame_bytes,
                        args.node_id, command=f"tools/gen_chassis_qos.py {argv_text}")
    except ConfigError as e:
        print(f"gen_chassis_qos: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
