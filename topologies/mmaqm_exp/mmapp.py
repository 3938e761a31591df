"""MM_APP: a flow-controlled multimedia sender/receiver over UDP (dcbt section 5).

dcbt section 5 runs 10 "flow-controlled multimedia traffic generator[s] called
MM_APP" that "react to congestion using 5 discrete media scales with a 'cut
scale by half at frame loss, up scale by one at RTT' flow control mechanism,
used 300, 500, 700, 900 and 1,100Kbps for scale 0 to 4 transmission rates,
with a fixed packet size of 1Kbyte", and 2 unresponsive 5 Mbit/s CBR sources.
This module implements both as real UDP programs:

    python -m mmaqm_exp.mmapp send --dst 10.0.0.2 --duration 30 --log s.csv
    python -m mmaqm_exp.mmapp recv --duration 32 --out r.csv
    python -m mmaqm_exp.mmapp send --dst 10.0.0.2 --cbr-kbps 5000   # CBR blast

(``mmapp-send`` / ``mmapp-recv`` after ``pip install -e topologies``.)

Packets. Every data packet is one UDP datagram whose IPv4 datagram is
``--size`` bytes (default 1000: 20 B IPv4 header + 8 B UDP header + 972 B
payload), the payload starting with ``DATA`` (network byte order)::

    magic "MMA1" | type=1 u8 | flags u8 | scale u8 | reserved u8 |
    flow_id u32 | seq u64 | send_ts_ns u64 (CLOCK_REALTIME) |
    rate_kbps u32 | srtt_us u32 (sender's smoothed RTT, 0 = unknown)

flags bit 0 (NO_FEEDBACK) marks CBR packets; their scale field is 255. The
DSCP goes in the IPv4 TOS byte through the IP_TOS socket option, or to an IPv6
``--dst`` in the traffic class through IPV6_TCLASS (default EF, 46, for MM_APP;
0, untagged, for CBR). Either family: the socket's is its address's
(``--dst``; the receiver's ``--bind ::`` takes both).

Feedback. The receiver answers a flow-controlled flow with a ``FEEDBACK``
datagram (to the data packet's source address)::

    magic "MMA1" | type=2 u8 | flags u8 | pad u16 | flow_id u32 |
    highest_seq i64 | received u64 | lost u64 | last_lost_seq i64 |
    echo_ts_ns u64 | echo_hold_ns u64

It sends one (a) at once when a data packet reveals a sequence gap (loss), and
(b) otherwise on the first data packet arriving at least
max(sender's srtt, --fb-min-ms, default 10 ms) after the previous feedback of
that flow: one feedback per RTT, at most one per 10 ms and at most one per data
packet. echo_ts_ns is the send timestamp of the packet that triggered the
feedback and echo_hold_ns how long the receiver held it, so the sender's RTT
sample is ``now - echo_ts_ns - echo_hold_ns`` (one clock: CLOCK_REALTIME).
"lost" counts packets missing in sequence gaps (a late packet decrements it);
last_lost_seq is the highest sequence number declared lost (-1 = none).

Flow control (sender, class FlowControl):
  * loss: when a feedback reports last_lost_seq >= the first sequence number
    sent after the previous cut, the scale index is halved (4 -> 2 -> 1 -> 0,
    integer division). Losses of packets sent before the previous cut belong
    to the same congestion event and are ignored (once per RTT, like TCP).
  * increase: on a feedback without new loss, if at least one smoothed RTT
    has passed since the last scale change, scale += 1 (up to the top scale).
  * RTT: srtt = 7/8 srtt + 1/8 sample (RFC 6298 gain), first sample taken as is.
  * silence: with no feedback for max(--fb-timeout, 4 srtt) (default 1 s)
    the sender treats it as a loss and halves the scale (and again after each
    further such period).
  Pacing follows a monotonic-clock schedule: packet k of a scale period leaves
  at t_start + k * interval, so sleep overshoot does not accumulate. After a
  stall of more than 50 ms the schedule is reset rather than bursting.

Files written at exit (also on SIGTERM/SIGINT):
  receiver --out CSV: flow_id,seq,send_ts_ns,recv_ts_ns,bytes,scale,dscp
    one row per data packet in arrival order; recv_ts_ns is CLOCK_REALTIME
    read in userspace right after the datagram was dequeued; bytes is the
    IP packet length (UDP payload + 28, from an IPv6 sender + 48).
  sender --log CSV: t_ns,event,scale,rate_kbps,srtt_us,rtt_sample_us,sent,
    fb_highest_seq,fb_received,fb_lost
    events: start, fb (feedback, no change), up, cut, timeout, end.
  Both print a one-line JSON summary on stdout at exit.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import select
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

from .inet import family_of, is_ipv6_peer, set_dscp, udp_overhead_bytes
from .lab import catch_stop_signals

MAGIC = b"MMA1"
T_DATA = 1
T_FEEDBACK = 2
F_NO_FEEDBACK = 0x01
CBR_SCALE = 255

DATA_HDR = struct.Struct("!4sBBBBIQQII")  # 36 bytes
FB_HDR = struct.Struct("!4sBBHIqQQqQQ")  # 60 bytes
IP_UDP_OVERHEAD = 28  # IPv4 header without options (20) + UDP header (8)
IPV6_UDP_OVERHEAD = 48  # IPv6 fixed header (40) + UDP header (8)

DEFAULT_SCALES_KBPS = (300, 500, 700, 900, 1100)
DEFAULT_SIZE = 1000  # IPv4 datagram bytes
DEFAULT_PORT = 5001
DEFAULT_FB_DSCP = 46  # feedback datagrams: EF, the tagged class (the experiments check it)
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
MAX_LAG_S = 0.05


# ---------------------------------------------------------------------------
# Wire format
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DataHeader:
    flow_id: int
    seq: int
    send_ts_ns: int
    scale: int
    rate_kbps: int
    srtt_us: int
    flags: int = 0

    def pack(self) -> bytes:
        return DATA_HDR.pack(
            MAGIC, T_DATA, self.flags, self.scale, 0, self.flow_id, self.seq,
            self.send_ts_ns, self.rate_kbps, self.srtt_us,
        )

    @staticmethod
    def unpack(buf: bytes) -> Optional["DataHeader"]:
        if len(buf) < DATA_HDR.size:
            return None
        magic, typ, flags, scale, _r, fid, seq, ts, rate, srtt = DATA_HDR.unpack_from(buf)
        if magic != MAGIC or typ != T_DATA:
            return None
        return DataHeader(fid, seq, ts, scale, rate, srtt, flags)


@dataclass(frozen=True)
class Feedback:
    flow_id: int
    highest_seq: int
    received: int
    lost: int
    last_lost_seq: int
    echo_ts_ns: int
    echo_hold_ns: int

    def pack(self) -> bytes:
        return FB_HDR.pack(
            MAGIC, T_FEEDBACK, 0, 0, self.flow_id, self.highest_seq, self.received,
            self.lost, self.last_lost_seq, self.echo_ts_ns, self.echo_hold_ns,
        )

    @staticmethod
    def unpack(buf: bytes) -> Optional["Feedback"]:
        if len(buf) < FB_HDR.size:
            return None
        magic, typ, _f, _p, fid, hi, rcv, lost, lls, ets, hold = FB_HDR.unpack_from(buf)
        if magic != MAGIC or typ != T_FEEDBACK:
            return None
        return Feedback(fid, hi, rcv, lost, lls, ets, hold)


# ---------------------------------------------------------------------------
# Flow control (pure logic, no I/O)
# ---------------------------------------------------------------------------


@dataclass
class FlowControl:
    """MM_APP's "cut scale by half at frame loss, up scale by one at RTT".

    Times are monotonic seconds. See the module docstring for the rules.
    """

    n_scales: int
    scale: int
    now: float
    fb_timeout_s: float = 1.0
    srtt: Optional[float] = None
    last_change: float = 0.0
    last_fb: float = 0.0
    cut_seq: int = 0  # losses of seq >= cut_seq are a new congestion event
    cuts: int = 0
    ups: int = 0
    timeouts: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.scale < self.n_scales:
            raise ValueError("initial scale out of range")
        self.last_change = self.now
        self.last_fb = self.now

    def _cut(self, now: float, next_seq: int) -> None:
        self.scale //= 2
        self.cut_seq = next_seq
        self.last_change = now
        self.cuts += 1

    def on_feedback(
        self, now: float, next_seq: int, rtt_sample: Optional[float], last_lost_seq: int
    ) -> str:
        """Process one feedback; returns the event: "cut", "up" or "fb"."""
        self.last_fb = now
        if rtt_sample is not None and rtt_sample >= 0:
            self.srtt = rtt_sample if self.srtt is None else 0.875 * self.srtt + 0.125 * rtt_sample
        if last_lost_seq >= self.cut_seq:
            self._cut(now, next_seq)
            return "cut"
        if (
            self.scale < self.n_scales - 1
            and self.srtt is not None
            and now - self.last_change >= self.srtt
        ):
            self.scale += 1
            self.last_change = now
            self.ups += 1
            return "up"
        return "fb"

    def timeout_due(self, now: float) -> float:
        """Monotonic time at which silence counts as loss."""
        return self.last_fb + max(self.fb_timeout_s, 4.0 * (self.srtt or 0.0))

    def check_timeout(self, now: float, next_seq: int) -> bool:
        """Halve the scale if no feedback came for the timeout period."""
        if now >= self.timeout_due(now):
            self._cut(now, next_seq)
            self.timeouts += 1
            self.last_fb = now
            return True
        return False


# ---------------------------------------------------------------------------
# Sender
# ---------------------------------------------------------------------------


def _interval_s(size: int, rate_kbps: float) -> float:
    return size * 8.0 / (rate_kbps * 1000.0)


def _write_csv(path: str, header: Sequence[str], rows) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    os.replace(tmp, path)


SEND_LOG_HEADER = (
    "t_ns", "event", "scale", "rate_kbps", "srtt_us", "rtt_sample_us", "sent",
    "fb_highest_seq", "fb_received", "fb_lost",
)


def run_sender(args: argparse.Namespace) -> dict:
    size = args.size
    family = family_of(args.dst)
    # the IP packet is --size bytes in either family: an IPv6 datagram's payload is 20 less
    overhead = udp_overhead_bytes(family)
    if size < overhead + DATA_HDR.size:
        raise SystemExit(f"--size must be >= {overhead + DATA_HDR.size}")
    cbr = args.cbr_kbps is not None
    scales = [float(x) for x in args.scales.split(",")]
    dscp = args.dscp if args.dscp is not None else (0 if cbr else 46)
    option = bytes.fromhex(args.ip_option) if args.ip_option else b""
    if len(option) % 4 or len(option) > 40:
        raise SystemExit(f"--ip-option must be a multiple of 4 bytes, at most 40: {args.ip_option}")
    if option and family == socket.AF_INET6:
        raise SystemExit("--ip-option is an IPv4 option: not with an IPv6 --dst")
    if size < overhead + len(option) + DATA_HDR.size:
        raise SystemExit(f"--size must be >= {overhead + len(option) + DATA_HDR.size}")
    # the datagram stays --size bytes: the option takes its bytes from the payload
    pad = bytes(size - overhead - len(option) - DATA_HDR.size)

    sock = socket.socket(family, socket.SOCK_DGRAM)
    set_dscp(sock, family, dscp)
    if option:   # P-UPTA's loss threshold (upta §4; docs/upta-plan.md §1.5): needs CAP_NET_RAW
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_OPTIONS, option)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    sock.bind(("::" if family == socket.AF_INET6 and args.bind == "0.0.0.0" else args.bind,
               args.sport))
    sock.connect((args.dst, args.port))
    sock.setblocking(False)

    stop = catch_stop_signals(interrupt=False)
    start = time.monotonic()
    end = start + args.duration if args.duration > 0 else float("inf")
    fc = None if cbr else FlowControl(len(scales), args.initial_scale, start, args.fb_timeout)

    def rate() -> float:
        return float(args.cbr_kbps) if fc is None else scales[fc.scale]

    log: list[tuple] = []

    def logrow(event: str, rtt_us: int = -1, fb: Optional[Feedback] = None) -> None:
        if args.log is None:
            return
        srtt_us = int(fc.srtt * 1e6) if fc and fc.srtt is not None else -1
        log.append((
            time.time_ns(), event, CBR_SCALE if fc is None else fc.scale, rate(), srtt_us,
            rtt_us, seq, fb.highest_seq if fb else -1, fb.received if fb else -1,
            fb.lost if fb else -1,
        ))

    seq = 0
    send_errors = 0
    interval = _interval_s(size, rate())
    last_sched = start - interval
    next_t = start
    flags = F_NO_FEEDBACK if cbr else 0
    logrow("start")

    def reschedule() -> None:
        nonlocal interval, next_t
        interval = _interval_s(size, rate())
        next_t = last_sched + interval

    while not stop.requested:
        now = time.monotonic()
        if now >= end:
            break
        if now >= next_t:
            srtt_us = int(fc.srtt * 1e6) if fc and fc.srtt is not None else 0
            hdr = DataHeader(
                args.flow_id, seq, time.time_ns(), CBR_SCALE if fc is None else fc.scale,
                int(rate()), min(srtt_us, 0xFFFFFFFF), flags,
            ).pack()
            try:
                sock.send(hdr + pad)
            except OSError:  # ENOBUFS/EAGAIN, ICMP-refused, ...
                send_errors += 1  # still consumes the seq: the receiver sees a loss
            seq += 1
            last_sched = next_t
            next_t += interval
            if now - next_t > MAX_LAG_S:  # stalled: do not burst to catch up
                last_sched = now - interval
                next_t = now
            continue
        wake = min(next_t, end)
        if fc is not None:
            wake = min(wake, fc.timeout_due(now))
        try:
            readable, _, _ = select.select([sock], [], [], max(0.0, wake - now))
        except InterruptedError:
            continue
        if readable:
            while True:
                try:
                    buf = sock.recv(2048)
                except (BlockingIOError, InterruptedError):
                    break
                except ConnectionRefusedError:
                    continue  # ICMP port unreachable from an absent receiver
                fb = Feedback.unpack(buf)
                if fb is None or fc is None or fb.flow_id != args.flow_id:
                    continue
                rtt_ns = time.time_ns() - fb.echo_ts_ns - fb.echo_hold_ns
                old = fc.scale
                ev = fc.on_feedback(time.monotonic(), seq, rtt_ns / 1e9, fb.last_lost_seq)
                logrow(ev, rtt_ns // 1000, fb)
                if fc.scale != old:
                    reschedule()
        if fc is not None:
            old = fc.scale
            if fc.check_timeout(time.monotonic(), seq):
                logrow("timeout")
                if fc.scale != old:
                    reschedule()

    elapsed = time.monotonic() - start
    logrow("end")
    if args.log:
        _write_csv(args.log, SEND_LOG_HEADER, log)
    sock.close()
    return {
        "role": "send",
        "flow_id": args.flow_id,
        "mode": "cbr" if cbr else "mmapp",
        "sent": seq,
        "send_errors": send_errors,
        "duration_s": round(elapsed, 6),
        "ip_bytes": seq * size,
        "rate_kbps": round(seq * size * 8 / 1000 / elapsed, 3) if elapsed > 0 else 0.0,
        "final_scale": None if fc is None else fc.scale,
        "cuts": 0 if fc is None else fc.cuts,
        "ups": 0 if fc is None else fc.ups,
        "timeouts": 0 if fc is None else fc.timeouts,
        "srtt_us": None if fc is None or fc.srtt is None else round(fc.srtt * 1e6, 1),
    }


# ---------------------------------------------------------------------------
# Receiver
# ---------------------------------------------------------------------------


@dataclass
class RecvFlowState:
    highest: int = -1
    received: int = 0
    lost: int = 0
    last_lost_seq: int = -1
    last_fb: float = field(default=-1e18)

    def update(self, seq: int) -> bool:
        """Account one data packet; True if it revealed a new gap (loss)."""
        self.received += 1
        if self.highest < 0:
            self.highest = seq  # packets before the first one seen are not counted
            return False
        if seq > self.highest + 1:
            self.lost += seq - self.highest - 1
            self.last_lost_seq = seq - 1
            self.highest = seq
            return True
        if seq == self.highest + 1:
            self.highest = seq
        elif self.lost > 0:
            self.lost -= 1  # a late (reordered) packet was counted as lost
        return False


RECV_CSV_HEADER = ("flow_id", "seq", "send_ts_ns", "recv_ts_ns", "bytes", "scale", "dscp")


def run_receiver(args: argparse.Namespace) -> dict:
    # --bind :: : one dual-stack socket for both families (IPv4 senders appear as
    # ::ffff:a.b.c.d); the IPv4 options still apply to their packets
    family = family_of(args.bind)
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, args.rcvbuf)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.rcvbuf)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, (args.fb_dscp << 2) & 0xFC)
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVTCLASS, 1)
        set_dscp(sock, family, args.fb_dscp)
    sock.bind((args.bind, args.port))
    sock.setblocking(False)
    stop = catch_stop_signals(interrupt=False)
    print(f"mmapp-recv: ready {args.bind}:{args.port}", file=sys.stderr, flush=True)

    start = time.monotonic()
    end = start + args.duration if args.duration > 0 else float("inf")
    fb_min = args.fb_min_ms / 1000.0
    rows: list[tuple[int, int, int, int, int, int, int]] = []
    flows: dict[tuple, RecvFlowState] = {}
    fb_sent = 0
    bad = 0
    ancsize = socket.CMSG_SPACE(4) * 2

    while not stop.requested:
        now = time.monotonic()
        if now >= end:
            break
        try:
            readable, _, _ = select.select([sock], [], [], min(0.2, end - now))
        except InterruptedError:
            continue
        if not readable:
            continue
        while True:
            try:
                data, anc, _fl, addr = sock.recvmsg(65535, ancsize)
            except (BlockingIOError, InterruptedError):
                break
            except ConnectionRefusedError:
                continue
            t_rx = time.time_ns()
            h = DataHeader.unpack(data)
            if h is None:
                bad += 1
                continue
            tos = 0
            for level, typ, cdata in anc:
                if level == socket.IPPROTO_IP and typ == socket.IP_TOS and cdata:
                    tos = cdata[0]
                elif level == socket.IPPROTO_IPV6 and typ == socket.IPV6_TCLASS and cdata:
                    tos = int.from_bytes(cdata[:4], sys.byteorder)   # an int (RFC 3542 §6.5)
            overhead = IPV6_UDP_OVERHEAD if is_ipv6_peer(addr) else IP_UDP_OVERHEAD
            rows.append(
                (h.flow_id, h.seq, h.send_ts_ns, t_rx, len(data) + overhead, h.scale, tos >> 2)
            )
            st = flows.setdefault((addr, h.flow_id), RecvFlowState())
            gap = st.update(h.seq)
            if h.flags & F_NO_FEEDBACK:
                continue
            mono = time.monotonic()
            if gap or mono - st.last_fb >= max(fb_min, h.srtt_us / 1e6):
                st.last_fb = mono
                fb = Feedback(
                    h.flow_id, st.highest, st.received, st.lost, st.last_lost_seq,
                    h.send_ts_ns, time.time_ns() - t_rx,
                )
                try:
                    sock.sendto(fb.pack(), addr)
                    fb_sent += 1
                except OSError:
                    pass

    if args.out:
        _write_csv(args.out, RECV_CSV_HEADER, rows)
    sock.close()
    per_flow = {
        str(fid): {"src": f"{a[0]}:{a[1]}", "received": s.received, "highest_seq": s.highest, "lost": s.lost}
        for (a, fid), s in flows.items()
    }
    return {
        "role": "recv",
        "packets": len(rows),
        "feedback_sent": fb_sent,
        "malformed": bad,
        "duration_s": round(time.monotonic() - start, 6),
        "flows": per_flow,
    }


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------


def _add_send_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dst", required=True, help="receiver address, IPv4 or IPv6 (the socket's family)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="receiver UDP port (default %(default)s)")
    p.add_argument("--flow-id", type=int, default=1, help="flow id carried in every packet (default 1)")
    p.add_argument("--duration", type=float, default=10.0, help="seconds to send (0 = until SIGTERM/SIGINT)")
    p.add_argument("--scales", default=",".join(str(s) for s in DEFAULT_SCALES_KBPS),
                   help="comma-separated scale rates in kbit/s, scale 0 first (default %(default)s)")
    p.add_argument("--initial-scale", type=int, default=0, help="scale index to start at (default 0)")
    p.add_argument("--size", type=int, default=DEFAULT_SIZE,
                   help="IP packet size in bytes; UDP payload = size - 28 (IPv6: - 48) (default %(default)s)")
    p.add_argument("--dscp", type=int, default=None,
                   help="DSCP for the IP TOS byte (default 46 = EF; 0 with --cbr-kbps)")
    p.add_argument("--ip-option", default=None,
                   help="IPv4 option bytes in hex on every data packet (e.g. 9e041eb8: P-UPTA's "
                        "loss threshold 0.12); they come out of the payload, not on top of --size")
    p.add_argument("--cbr-kbps", type=float, default=None,
                   help="unresponsive constant bit rate in kbit/s (IP level): no flow control, no feedback")
    p.add_argument("--fb-timeout", type=float, default=1.0,
                   help="seconds without feedback that count as a loss (floor; default 1.0)")
    p.add_argument("--log", default=None, help="sender CSV log written at exit")
    p.add_argument("--bind", default="0.0.0.0", help="local address (default any)")
    p.add_argument("--sport", type=int, default=0, help="local UDP port (default ephemeral)")


def _add_recv_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bind", default="0.0.0.0",
                   help="address to listen on (default any IPv4; :: for both families)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="UDP port (default %(default)s)")
    p.add_argument("--duration", type=float, default=0.0, help="seconds to run (0 = until SIGTERM/SIGINT)")
    p.add_argument("--out", default=None, help="per-packet CSV written at exit")
    p.add_argument("--fb-min-ms", type=float, default=10.0,
                   help="minimum feedback spacing per flow when no loss is seen (default 10 ms)")
    p.add_argument("--fb-dscp", type=int, default=DEFAULT_FB_DSCP,
                   help=f"DSCP of feedback datagrams (default {DEFAULT_FB_DSCP})")
    p.add_argument("--rcvbuf", type=int, default=8 << 20, help="socket receive buffer bytes (default 8 MiB)")


def _check_send(p: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    try:
        scales = [float(x) for x in a.scales.split(",")]
    except ValueError:
        p.error("--scales must be comma-separated numbers")
    if not scales or any(s <= 0 for s in scales):
        p.error("--scales must be positive")
    if not 0 <= a.initial_scale < len(scales):
        p.error("--initial-scale out of range")
    if a.cbr_kbps is not None and a.cbr_kbps <= 0:
        p.error("--cbr-kbps must be positive")
    if a.dscp is not None and not 0 <= a.dscp < 64:
        p.error("--dscp must be 0..63")


def send_main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="mmapp-send", description="MM_APP / CBR UDP sender (dcbt section 5)")
    _add_send_args(p)
    a = p.parse_args(argv)
    _check_send(p, a)
    print(json.dumps(run_sender(a)), flush=True)
    return 0


def recv_main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="mmapp-recv", description="MM_APP receiver: records packets, sends feedback")
    _add_recv_args(p)
    a = p.parse_args(argv)
    print(json.dumps(run_receiver(a)), flush=True)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("send", "recv"):
        print("usage: python -m mmaqm_exp.mmapp {send|recv} [options]  (--help after the mode)",
              file=sys.stderr)
        return 2
    return send_main(argv[1:]) if argv[0] == "send" else recv_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
