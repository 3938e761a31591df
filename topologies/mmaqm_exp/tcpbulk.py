"""tcpbulk: pre-connected bulk TCP flows with exact start times (dcbt section 5 "FTP").

dcbt section 5 runs 55 FTP sources over TCP Reno with a maximum congestion
window of 20 packets and 1 KB packets, 25 of them from 0 s and 30 more joining
at exactly 20 s. iperf3 cannot start a group on time: its client opens the -P
streams one after another with a blocking connect, so a group of 30 streams
over a 60 ms RTT starts sending ~2 s after launch (measured: 2.07 s), and a SYN
lost at a congested bottleneck adds a 1 s retransmission timeout. Here the
sender opens every connection while the path is idle (before the scenario),
then waits and starts writing at the scheduled CLOCK_REALTIME instant.

    python -m mmaqm_exp.tcpbulk recv --port 5201 --window-clamp-bytes 18960 --out r.csv
    python -m mmaqm_exp.tcpbulk send --dst 10.0.0.2 --port 5201 --flow-ids 1,2,3 \\
        --cc reno --mss 960 --start-s 0 --stop-s 30 --go-stdin --out s.json
    (then write "go <t0_ns>" on the sender's stdin)

Per connection the sender first writes an 8-byte hello ``"TCB1" | flow_id u32``
(network byte order; not counted as data), then writes zeros as fast as the
socket accepts them from ``t0 + start_s`` to ``t0 + stop_s``, where it aborts
the connection (SO_LINGER 0: RST, so data still queued in the send buffer does
not keep flowing after the stop).

Socket options (sender, before connect): TCP_CONGESTION (``--cc``, default
reno), TCP_MAXSEG (``--mss``: the MSS *including* TCP options, as iperf3 -M;
Linux takes the 12-byte timestamp option out of it, so ``--mss 960`` gives
948-byte segments and 1000-byte IPv4 packets with timestamps on, 960 + 40 =
1000 without; an IPv6 flow needs 20 less for the same packet), IP_TOS or, to an
IPv6 ``--dst``, IPV6_TCLASS (``--dscp``). The socket's family is the address's:
``--dst`` for the sender, ``--bind`` (``::`` for IPv6) for the receiver. Receiver: TCP_WINDOW_CLAMP on the
listening socket (inherited by accepted ones): the advertised window never
exceeds ``--window-clamp-bytes``, so a flow has at most that many bytes in
flight -- the paper's 20-packet maximum window with 20 x 948 bytes (ns-2's
``window_`` is the same receiver-window bound).

Receiver output (written at exit, also on SIGTERM/SIGINT), ``--out`` CSV::

    t_ns,flow_id,bytes
    1795270043123456789,3,2844

one row per flow per wake-up that read data: ``bytes`` = TCP payload bytes read
since that flow's previous row, ``t_ns`` = CLOCK_REALTIME when the wake-up
began (data arrived at most one ``--tick-ms`` earlier). The receiver wakes at
most once per ``--tick-ms`` (default 2 ms), which bounds its CPU use at any rate;
with the 20-packet window that adds at most the tick to a flow's RTT.
Every ``--live-s`` it prints ``{"live": true, "t_ns": .., "bytes": total}`` on
stdout; the final line is a JSON summary with per-flow totals and TCP_INFO.
Sender: one JSON summary line on stdout (and ``--out``): per flow the source
port, actual first-write time, bytes accepted by the kernel and TCP_INFO at
the stop (snd_mss, snd_cwnd, rtt, total_retrans). Both print
``tcpbulk-<role>: ready ...`` on stderr when set up.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import selectors
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

from .inet import family_of, set_dscp
from .lab import StopSignals, catch_stop_signals

HELLO = struct.Struct("!4sI")
MAGIC = b"TCB1"
RECV_CSV_HEADER = ("t_ns", "flow_id", "bytes")
CHUNK = 64 * 1024
RECV_CHUNK = 256 * 1024
TCP_INFO_LEN = 104
#: SO_RCVBUF = this x the window clamp (the kernel doubles it again): room for the
#: clamped window plus data the receiver has not read yet.
RCVBUF_PER_CLAMP = 4
#: Byte offsets in struct tcp_info (linux/tcp.h); all u32.
TCPI_OFFSETS = {"snd_mss": 16, "rcv_mss": 20, "rtt_us": 68, "rttvar_us": 72,
                "snd_ssthresh": 76, "snd_cwnd": 80, "total_retrans": 100}


def tcp_info(sock: socket.socket) -> dict[str, int]:
    """Selected TCP_INFO fields of a socket ({} if unavailable)."""
    try:
        buf = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN)
    except OSError:
        return {}
    return {k: struct.unpack_from("=I", buf, off)[0] for k, off in TCPI_OFFSETS.items()
            if off + 4 <= len(buf)}


def _sleep_until_ns(t_ns: int, stop: StopSignals) -> None:
    while not stop.requested:
        d = t_ns - time.time_ns()
        if d <= 0:
            return
        time.sleep(min(d / 1e9, 0.2))


def _write_csv(path: str, header: Sequence[str], rows) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------
# Receiver
# ---------------------------------------------------------------------------


@dataclass
class _Conn:
    src: str
    hello: bytes = b""
    flow_id: Optional[int] = None
    bytes: int = 0
    pending: int = 0
    first_ns: int = 0
    last_ns: int = 0
    info: dict = field(default_factory=dict)


def run_receiver(args: argparse.Namespace) -> dict:
    ls = socket.socket(family_of(args.bind), socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if args.window_clamp_bytes:
        # A fixed SO_RCVBUF turns receive-buffer autotuning off; without it the
        # autotuner raises window_clamp along with the buffer ("make the window
        # clamp follow along", tcp_rcv_space_adjust) and the clamp is lost.
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF,
                      max(args.window_clamp_bytes * RCVBUF_PER_CLAMP, 65536))
        ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP, args.window_clamp_bytes)
    ls.bind((args.bind, args.port))
    ls.listen(1024)
    ls.setblocking(False)
    stop = catch_stop_signals(interrupt=False)
    sel = selectors.DefaultSelector()
    sel.register(ls, selectors.EVENT_READ, None)
    print(f"tcpbulk-recv: ready {args.bind}:{args.port}", file=sys.stderr, flush=True)

    tick = args.tick_ms / 1000.0
    start = time.monotonic()
    end = start + args.duration if args.duration > 0 else float("inf")
    next_live = start + args.live_s if args.live_s > 0 else float("inf")
    rows: list[tuple[int, int, int]] = []
    conns: dict[socket.socket, _Conn] = {}
    done: list[_Conn] = []
    total = 0
    anonymous = 0

    while not stop.requested:
        now = time.monotonic()
        if now >= end:
            break
        try:
            events = sel.select(max(0.0, min(next_live, end) - now))
        except InterruptedError:
            continue
        t_ns = time.time_ns()
        woke = time.monotonic()
        active: list[_Conn] = []
        for key, _ in events:
            if key.fileobj is ls:
                while True:
                    try:
                        s, addr = ls.accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    if args.window_clamp_bytes:
                        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP, args.window_clamp_bytes)
                    s.setblocking(False)
                    conns[s] = _Conn(src=f"{addr[0]}:{addr[1]}")
                    sel.register(s, selectors.EVENT_READ, None)
                continue
            s = key.fileobj
            c = conns[s]
            closed = False
            for _ in range(8):  # bounded: other sockets get their turn
                try:
                    data = s.recv(RECV_CHUNK)
                except (BlockingIOError, InterruptedError):
                    break
                except ConnectionError:
                    closed = True
                    break
                if not data:
                    closed = True
                    break
                n = len(data)
                if c.flow_id is None:
                    need = HELLO.size - len(c.hello)
                    c.hello += data[:need]
                    n -= min(need, len(data))
                    if len(c.hello) == HELLO.size:
                        magic, fid = HELLO.unpack(c.hello)
                        if magic != MAGIC:
                            closed = True
                            break
                        c.flow_id = fid
                if n > 0:
                    c.pending += n
                if len(data) < RECV_CHUNK:
                    break
            if c.pending:
                active.append(c)
            if closed:
                c.info = tcp_info(s)
                sel.unregister(s)
                s.close()
                del conns[s]
                done.append(c)
        for c in active:
            if c.flow_id is None:
                anonymous += c.pending
                c.pending = 0
                continue
            rows.append((t_ns, c.flow_id, c.pending))
            c.bytes += c.pending
            total += c.pending
            if not c.first_ns:
                c.first_ns = t_ns
            c.last_ns = t_ns
            c.pending = 0
        if woke >= next_live:
            print(json.dumps({"live": True, "t_ns": t_ns, "bytes": total}), flush=True)
            next_live += args.live_s * max(1, int((woke - next_live) // args.live_s) + 1)
        rest = tick - (time.monotonic() - woke)
        if rest > 0:
            time.sleep(rest)

    for s, c in list(conns.items()):
        c.info = tcp_info(s)
        s.close()
        done.append(c)
    ls.close()
    if args.out:
        _write_csv(args.out, RECV_CSV_HEADER, rows)
    flows = {}
    for c in done:
        if c.flow_id is None:
            continue
        flows[str(c.flow_id)] = {"src": c.src, "bytes": c.bytes, "first_ns": c.first_ns,
                                 "last_ns": c.last_ns, "rcv_mss": c.info.get("rcv_mss")}
    return {"role": "tcp-recv", "port": args.port, "bytes": total, "rows": len(rows),
            "connections": len(done), "unidentified_bytes": anonymous,
            "window_clamp_bytes": args.window_clamp_bytes, "flows": flows}


# ---------------------------------------------------------------------------
# Sender
# ---------------------------------------------------------------------------


@dataclass
class _Flow:
    flow_id: int
    sock: socket.socket
    start_ns: int
    sport: int = 0
    first_send_ns: int = 0
    sent: int = 0
    send_errors: int = 0
    info: dict = field(default_factory=dict)
    running: bool = False


def _connect_all(args: argparse.Namespace, flow_ids: list[int]) -> list[socket.socket]:
    """Open one connection per flow id, all connects in flight at once."""
    socks = []
    for _ in flow_ids:
        family = family_of(args.dst)
        s = socket.socket(family, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, args.cc.encode())
        if args.mss:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, args.mss)
        set_dscp(s, family, args.dscp)
        s.setblocking(False)
        err = s.connect_ex((args.dst, args.port))
        if err not in (0, 115):  # EINPROGRESS
            raise SystemExit(f"tcpbulk-send: connect {args.dst}:{args.port}: {os.strerror(err)}")
        socks.append(s)
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_WRITE)
    deadline = time.monotonic() + args.connect_timeout
    left = len(socks)
    while left:
        if time.monotonic() > deadline:
            raise SystemExit(f"tcpbulk-send: {left} of {len(socks)} connections not established "
                             f"within {args.connect_timeout} s")
        for key, _ in sel.select(0.1):
            s = key.fileobj
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                raise SystemExit(f"tcpbulk-send: connect {args.dst}:{args.port}: {os.strerror(err)}")
            sel.unregister(s)
            left -= 1
    sel.close()
    return socks


def run_sender(args: argparse.Namespace) -> dict:
    flow_ids = [int(x) for x in args.flow_ids.split(",") if x]
    if not flow_ids:
        raise SystemExit("tcpbulk-send: --flow-ids is empty")
    stop = catch_stop_signals(interrupt=False)
    t_conn = time.monotonic()
    socks = _connect_all(args, flow_ids)
    connect_s = time.monotonic() - t_conn
    for fid, s in zip(flow_ids, socks):
        s.setblocking(True)
        s.sendall(HELLO.pack(MAGIC, fid))
        s.setblocking(False)
    print(f"tcpbulk-send: ready {len(socks)} connections in {connect_s:.3f} s", file=sys.stderr, flush=True)

    if args.go_stdin:
        line = sys.stdin.readline().split()
        if len(line) != 2 or line[0] != "go":
            raise SystemExit(f"tcpbulk-send: expected 'go <t0_ns>' on stdin, got {line!r}")
        t0_ns = int(line[1])
    else:
        t0_ns = args.t0_ns if args.t0_ns is not None else time.time_ns()
    n = len(flow_ids)
    base = t0_ns + int(args.start_s * 1e9)
    stop_ns = t0_ns + int(args.stop_s * 1e9)
    flows = [_Flow(fid, s, base + int(args.spread_s * 1e9 * i / n), sport=s.getsockname()[1])
             for i, (fid, s) in enumerate(zip(flow_ids, socks))]
    pending = sorted(flows, key=lambda f: f.start_ns)
    by_sock = {f.sock: f for f in flows}
    sel = selectors.DefaultSelector()
    buf = memoryview(bytes(CHUNK))
    tick = args.tick_ms / 1000.0

    def pump(f: _Flow) -> None:
        for _ in range(4):
            try:
                k = f.sock.send(buf)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                f.send_errors += 1
                f.running = False
                sel.unregister(f.sock)
                return
            if not f.first_send_ns:
                f.first_send_ns = time.time_ns()
            f.sent += k
            if k < CHUNK:
                return

    while not stop.requested:
        now = time.time_ns()
        if now >= stop_ns:
            break
        while pending and pending[0].start_ns <= now:
            f = pending.pop(0)
            f.running = True
            sel.register(f.sock, selectors.EVENT_WRITE)
            pump(f)
        nxt = min(stop_ns, pending[0].start_ns) if pending else stop_ns
        if not sel.get_map():
            _sleep_until_ns(nxt, stop)
            continue
        woke = time.monotonic()
        try:
            events = sel.select(max(0.0, (nxt - time.time_ns()) / 1e9))
        except InterruptedError:
            continue
        for key, _ in events:
            f = by_sock[key.fileobj]
            if f.running:
                pump(f)
        rest = tick - (time.monotonic() - woke)
        if rest > 0 and events:
            time.sleep(min(rest, max(0.0, (nxt - time.time_ns()) / 1e9)))

    stopped_ns = time.time_ns()
    for f in flows:
        f.info = tcp_info(f.sock)
        try:
            f.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        f.sock.close()
    out = {
        "role": "tcp-send", "dst": f"{args.dst}:{args.port}", "cc": args.cc, "mss_opt": args.mss,
        "dscp": args.dscp, "t0_ns": t0_ns, "stop_ns": stop_ns, "stopped_ns": stopped_ns,
        "connect_s": round(connect_s, 6),
        "flows": {str(f.flow_id): {"sport": f.sport, "scheduled_start_ns": f.start_ns,
                                   "first_send_ns": f.first_send_ns, "sent_bytes": f.sent,
                                   "send_errors": f.send_errors, **f.info} for f in flows},
    }
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(out, fh, indent=1)
        os.replace(tmp, args.out)
    return out


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tcpbulk", description="pre-connected bulk TCP flows")
    sub = p.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("recv", help="accept connections, log received bytes per flow")
    r.add_argument("--bind", default="0.0.0.0")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--out", default=None, help="CSV t_ns,flow_id,bytes written at exit")
    r.add_argument("--window-clamp-bytes", type=int, default=0,
                   help="TCP_WINDOW_CLAMP on every connection (0 = none)")
    r.add_argument("--tick-ms", type=float, default=2.0, help="minimum time between wake-ups")
    r.add_argument("--live-s", type=float, default=1.0, help="live total line period (0 = off)")
    r.add_argument("--duration", type=float, default=0.0, help="seconds (0 = until SIGTERM)")
    s = sub.add_parser("send", help="connect, wait for the start time, send until the stop time")
    s.add_argument("--dst", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--flow-ids", required=True, help="comma-separated flow ids, one connection each")
    s.add_argument("--cc", default="reno", help="TCP congestion control (default reno)")
    s.add_argument("--mss", type=int, default=0, help="TCP_MAXSEG incl. options (0 = kernel default)")
    s.add_argument("--dscp", type=int, default=0)
    s.add_argument("--start-s", type=float, default=0.0, help="start, seconds after t0")
    s.add_argument("--stop-s", type=float, required=True, help="stop, seconds after t0")
    s.add_argument("--spread-s", type=float, default=0.0,
                   help="flow i of n starts at start + i*spread/n (default 0: all at once)")
    s.add_argument("--t0-ns", type=int, default=None, help="CLOCK_REALTIME origin (default: now)")
    s.add_argument("--go-stdin", action="store_true", help="read 'go <t0_ns>' from stdin after connecting")
    s.add_argument("--connect-timeout", type=float, default=10.0)
    s.add_argument("--tick-ms", type=float, default=1.0, help="minimum time between wake-ups")
    s.add_argument("--out", default=None, help="JSON summary file")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    a = _parser().parse_args(argv)
    res = run_receiver(a) if a.mode == "recv" else run_sender(a)
    print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
