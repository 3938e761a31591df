#!/usr/bin/env python3
"""Switch-side steps of bench/run_bench.py, run inside the bench namespace.

run_bench.py stays in the root namespace and never imports finsy; it runs
this helper with `ip netns exec mmb-… .venv/bin/python bench/bench_ctl.py …`
so that P4Runtime (127.0.0.1 inside the namespace) and the veths are local.
Every subcommand prints one JSON object on stdout.

  push-baseline --grpc A --p4info P --bmv2-json J --routes JSON
      push bench/minimal_ipv4.p4 (or minimal_ipv6.p4) with mmaqm.driver.SwitchDriver and
      write the routes with SwitchDriver.install_route (same table/action names)
  install-aqm --config YAML [--p4info P --bmv2-json J]
      push build/main.json (or a profile's, build/<name>/) and install the config with
      mmaqm.controller.SwitchController.install (what `mmaqm-ctl install` does)
  aqm-counters --config YAML [--p4info P]
      totals of the mmaqm program's counters (arrivals, admits, departures,
      AQM drops per reason, ingress discards per reason)
  verify --tx-if IF --rx-if IF --frame-hex HEX --expect JSON
      send a few copies of the bench frame (IPv4 or IPv6), check one forwarded copy
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import time
from pathlib import Path

DEVICE_ID = 1


async def _push_baseline(args: argparse.Namespace) -> dict:
    from mmaqm.driver import SwitchDriver, wait_for_grpc

    await wait_for_grpc(args.grpc, timeout_s=30)
    routes = json.loads(args.routes)
    started = time.monotonic()
    async with SwitchDriver("bench", args.grpc, device_id=DEVICE_ID, p4info=Path(args.p4info),
                            connect_timeout_s=args.connect_timeout_s,
                            bmv2_json=Path(args.bmv2_json)) as driver:
        await driver.clear()
        for r in routes:
            await driver.install_route(r["prefix"], r["port"], r["src_mac"], r["next_hop_mac"])
    return {"routes": len(routes), "install_s": round(time.monotonic() - started, 3)}


def _load_switch(config_path: str):
    from mmaqm.config import load_config

    cfg = load_config(config_path)
    if len(cfg.switches) != 1:
        raise SystemExit("bench_ctl: the bench config has exactly one switch")
    return cfg, next(iter(cfg.switches.values()))


def _program(args: argparse.Namespace) -> dict:
    """The program's files when given (a profile); else the driver's defaults (build/main.*)."""
    out = {"connect_timeout_s": args.connect_timeout_s}
    if getattr(args, "p4info", None):
        out["p4info"] = Path(args.p4info)
    if getattr(args, "bmv2_json", None):
        out["bmv2_json"] = Path(args.bmv2_json)
    return out


async def _install_aqm(args: argparse.Namespace) -> dict:
    from mmaqm.controller import SwitchController
    from mmaqm.driver import SwitchDriver, wait_for_grpc

    cfg, sw = _load_switch(args.config)
    await wait_for_grpc(sw.p4runtime_addr, timeout_s=30)
    started = time.monotonic()
    async with SwitchDriver(sw.name, sw.p4runtime_addr, device_id=sw.device_id,
                            **_program(args)) as driver:
        controller = SwitchController(cfg, sw, driver)
        await controller.install()
        pushed = {str(port): {"action": action.name, "params": dict(action.params)}
                  for port, action in controller.pushed.items()}
    return {"install_s": round(time.monotonic() - started, 3), "port_policy_params": pushed}


async def _aqm_counters(args: argparse.Namespace) -> dict:
    from mmaqm import p4constants as C
    from mmaqm.driver import SwitchDriver

    _, sw = _load_switch(args.config)
    out: dict = {}
    async with SwitchDriver(sw.name, sw.p4runtime_addr, device_id=sw.device_id,
                            push_pipeline=False, election_id=5,
                            **_program(args)) as driver:
        counters = await driver.read_counters(("queue_arrivals", "queue_admits", "queue_departures",
                                               "queue_drops", "ingress_discards"))
        for name in ("queue_arrivals", "queue_admits", "queue_departures"):
            out[name] = sum(v.packets for v in counters[name].values())
        drops = counters["queue_drops"]
        out["queue_drops"] = {reason: sum(v.packets for i, v in drops.items()
                                          if i % C.NUM_DROP_REASONS == rid)
                              for reason, rid in sorted(C.DROP_REASONS.items())}
        discards = counters["ingress_discards"]
        out["ingress_discards"] = {reason: sum(v.packets for i, v in discards.items()
                                               if i % C.NUM_DISCARD_REASONS == rid)
                                   for reason, rid in sorted(C.DISCARD_REASONS.items())}
    return out


ETHERTYPE_IPV4, ETHERTYPE_IPV6 = 0x0800, 0x86DD
IPV6_UDP = 14 + 40          # offset of the UDP header after Ethernet and IPv6's fixed header
IPV6_HOP_LIMIT = 14 + 7


def check_forwarded6(frame: bytes, got: bytes, expect: dict) -> list[str]:
    """What is wrong with got, the switch's copy of the IPv6/UDP frame: both MACs as
    expected, hop limit - 1, every other byte unchanged (no IPv6 header checksum; the hop
    limit is outside the UDP pseudo-header, RFC 8200 §8.1)."""
    problems = []
    if got[0:6] != bytes.fromhex(expect["dst_mac"].replace(":", "")):
        problems.append(f"dst MAC {got[0:6].hex(':')}")
    if got[6:12] != bytes.fromhex(expect["src_mac"].replace(":", "")):
        problems.append(f"src MAC {got[6:12].hex(':')}")
    if len(got) != len(frame):
        problems.append(f"length {len(got)} (sent {len(frame)})")
    elif got[IPV6_HOP_LIMIT] != frame[IPV6_HOP_LIMIT] - 1:
        problems.append(f"hop limit {got[IPV6_HOP_LIMIT]} (sent {frame[IPV6_HOP_LIMIT]})")
    if got[12:IPV6_HOP_LIMIT] != frame[12:IPV6_HOP_LIMIT] \
            or got[IPV6_HOP_LIMIT + 1:IPV6_UDP] != frame[IPV6_HOP_LIMIT + 1:IPV6_UDP]:
        problems.append("IPv6 header differs beyond the hop limit")
    if got[IPV6_UDP:] != frame[IPV6_UDP:]:
        problems.append("UDP part differs")
    return problems


def _forwarded(args: argparse.Namespace, frame: bytes, ethertype: int, ours) -> "bytes | None":
    """Send frame on tx-if until a frame of ethertype that ours(data) accepts arrives on
    rx-if (outgoing copies ignored), or args.timeout passes: the frame, or None."""
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ethertype))
    rx.bind((args.rx_if, 0))
    rx.settimeout(0.2)
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    tx.bind((args.tx_if, 0))
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        tx.send(frame)
        try:
            while True:
                data, addr = rx.recvfrom(65535)
                if addr[2] != socket.PACKET_OUTGOING and ours(data):
                    return data
        except TimeoutError:
            continue
    return None


def _verify(args: argparse.Namespace) -> dict:
    """Send the bench frame and check what the switch forwards on rx-if."""
    frame = bytes.fromhex(args.frame_hex)
    expect = json.loads(args.expect)
    if int.from_bytes(frame[12:14], "big") == ETHERTYPE_IPV6:
        return _verify6(args, frame, expect)
    got = _forwarded(args, frame, ETHERTYPE_IPV4,
                     lambda d: len(d) >= 34 and d[23] == 17 and d[26:34] == frame[26:34])
    if got is None:
        return {"ok": False, "why": f"nothing forwarded to {args.rx_if} in {args.timeout} s"}
    problems = []
    if got[0:6] != bytes.fromhex(expect["dst_mac"].replace(":", "")):
        problems.append(f"dst MAC {got[0:6].hex(':')}")
    if got[6:12] != bytes.fromhex(expect["src_mac"].replace(":", "")):
        problems.append(f"src MAC {got[6:12].hex(':')}")
    if got[22] != frame[22] - 1:
        problems.append(f"TTL {got[22]} (sent {frame[22]})")
    total = 0
    for i in range(14, 34, 2):
        total += got[i] << 8 | got[i + 1]
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    if total != 0xFFFF:
        problems.append("bad IPv4 checksum")
    if got[34:] != frame[34:len(got)] or len(got) != len(frame):
        problems.append(f"UDP part differs (len {len(got)} vs {len(frame)})")
    return {"ok": not problems, "why": "; ".join(problems), "ttl_out": got[22]}


def _verify6(args: argparse.Namespace, frame: bytes, expect: dict) -> dict:
    """_verify for an IPv6/UDP frame (next header UDP, no extension header)."""
    got = _forwarded(args, frame, ETHERTYPE_IPV6,
                     lambda d: len(d) >= IPV6_UDP + 8 and d[20] == 17
                     and d[IPV6_UDP:IPV6_UDP + 8] == frame[IPV6_UDP:IPV6_UDP + 8])
    if got is None:
        return {"ok": False, "why": f"nothing forwarded to {args.rx_if} in {args.timeout} s"}
    problems = check_forwarded6(frame, got, expect)
    return {"ok": not problems, "why": "; ".join(problems), "hop_limit_out": got[IPV6_HOP_LIMIT]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("push-baseline")
    p.add_argument("--connect-timeout-s", type=float, default=20.0)
    p.add_argument("--grpc", required=True)
    p.add_argument("--p4info", required=True)
    p.add_argument("--bmv2-json", required=True)
    p.add_argument("--routes", required=True)
    for name in ("install-aqm", "aqm-counters"):
        p = sub.add_parser(name)
        p.add_argument("--config", required=True)
        p.add_argument("--connect-timeout-s", type=float, default=20.0,
                       help="connect + pipeline push deadline (valgrind: minutes)")
        p.add_argument("--p4info")
        if name == "install-aqm":
            p.add_argument("--bmv2-json")
    p = sub.add_parser("verify")
    p.add_argument("--tx-if", required=True)
    p.add_argument("--rx-if", required=True)
    p.add_argument("--frame-hex", required=True)
    p.add_argument("--expect", required=True)
    p.add_argument("--timeout", type=float, default=5.0)
    args = parser.parse_args()
    if getattr(args, "connect_timeout_s", 20.0) > 20.0:
        # a switch under valgrind (callgrind_cost.py): finsy's per-RPC deadline (10 s,
        # a module constant with no option) also bounds the pipeline push
        import finsy.p4client
        finsy.p4client._DEFAULT_RPC_TIMEOUT = args.connect_timeout_s
    if args.cmd == "push-baseline":
        result = asyncio.run(_push_baseline(args))
    elif args.cmd == "install-aqm":
        result = asyncio.run(_install_aqm(args))
    elif args.cmd == "aqm-counters":
        result = asyncio.run(_aqm_counters(args))
    else:
        result = _verify(args)
    print(json.dumps(result))
    return 0 if result.get("ok", True) else 1


if __name__ == "__main__":
    sys.exit(main())
