"""ICMP echo probe (a small ``ping`` for machines without iputils-ping).

    python -m mmaqm_exp.probes DST [-c 20] [-i 0.05] [-W 1.0]

prints one JSON line: {"dst", "sent", "received", "rtts_ms": [... or null],
"min_ms", "avg_ms", "median_ms", "max_ms", "mdev_ms"}. Probes leave on a
monotonic schedule (probe k at start + k*interval); an RTT is the monotonic
time from just before sendto() to just after the matching reply was read.
Uses a raw socket, so it needs root (CAP_NET_RAW). IPv4 only.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import statistics
import struct
import sys
import time
from typing import Optional, Sequence


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def icmp_ping(dst: str, count: int = 20, interval: float = 0.05, timeout: float = 1.0,
              payload: int = 56) -> list[Optional[float]]:
    """Send ``count`` echo requests; return each RTT in seconds (None = no reply)."""
    ident = os.getpid() & 0xFFFF
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    sock.setblocking(False)
    sent_at: dict[int, float] = {}
    rtts: list[Optional[float]] = [None] * count
    body = bytes(range(payload % 256))[:payload].ljust(payload, b"\0")
    start = time.monotonic()
    k = 0
    try:
        while True:
            now = time.monotonic()
            if k < count and now >= start + k * interval:
                hdr = struct.pack("!BBHHH", 8, 0, 0, ident, k)
                pkt = struct.pack("!BBHHH", 8, 0, _checksum(hdr + body), ident, k) + body
                sent_at[k] = time.monotonic()
                sock.sendto(pkt, (dst, 0))
                k += 1
                continue
            if k >= count:
                last_deadline = sent_at[count - 1] + timeout
                if all(r is not None for r in rtts) or now >= last_deadline:
                    break
                wake = last_deadline
            else:
                wake = start + k * interval
            r, _, _ = select.select([sock], [], [], max(0.0, wake - now))
            if not r:
                continue
            while True:
                try:
                    data = sock.recv(65535)
                except BlockingIOError:
                    break
                t = time.monotonic()
                ihl = (data[0] & 0x0F) * 4
                if len(data) < ihl + 8:
                    continue
                typ, _code, _ck, rid, rseq = struct.unpack_from("!BBHHH", data, ihl)
                if typ == 0 and rid == ident and rseq in sent_at and rseq < count:
                    if rtts[rseq] is None and t - sent_at[rseq] <= timeout:
                        rtts[rseq] = t - sent_at[rseq]
    finally:
        sock.close()
    return rtts


def summarize(dst: str, rtts: Sequence[Optional[float]]) -> dict:
    ok = [r * 1000.0 for r in rtts if r is not None]
    out: dict = {"dst": dst, "sent": len(rtts), "received": len(ok),
                 "rtts_ms": [None if r is None else round(r * 1000.0, 4) for r in rtts]}
    if ok:
        mean = statistics.fmean(ok)
        out.update(min_ms=min(ok), avg_ms=mean, median_ms=statistics.median(ok), max_ms=max(ok),
                   mdev_ms=statistics.pstdev(ok))
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="mmaqm-ping", description="ICMP echo RTT probe (JSON output)")
    p.add_argument("dst")
    p.add_argument("-c", "--count", type=int, default=20)
    p.add_argument("-i", "--interval", type=float, default=0.05)
    p.add_argument("-W", "--timeout", type=float, default=1.0, help="seconds to wait for each reply")
    a = p.parse_args(argv)
    print(json.dumps(summarize(a.dst, icmp_ping(a.dst, a.count, a.interval, a.timeout))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
