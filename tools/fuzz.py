#!/usr/bin/env python3
"""Fuzz the mmaqm pipeline on a real BMv2 with malformed and random frames.

A bounded, seeded run (`make fuzz`; a short one is in `make test`):

  1. A test bed made with topologies/mmaqm_exp/lab.py (the project's one namespace
     lifecycle): namespace mmaqm-fuzz, veth pairs swN <-> hN (N = 1..4; raw ports: IPv6,
     checksum, segmentation and GRO offloads off; MTU 9000 for jumbo frames),
     simple_switch_grpc with sw1..sw4 as ports 1..4, configured with the project's
     controller CLI (mmaqm-ctl): routes 10.0.N.0/24 -> port N, and a different
     algorithm on each port (RED, DROP_TAIL, DCBT_CHIPS, FRED) so that fuzzed packets
     that reach the AQM go through several admission paths; ports 1 and 4 are slowed
     down (SLOW_PORTS_PPS) so that their queues fill and the AQM drops too.
     While the frames flow, the controller runs (`mmaqm-ctl run`: it receives the flow
     digests of every fuzzed packet that reaches the AQM); --no-controller only installs.
  2. `count` frames, built beforehand from `seed` (same seed, same bytes): scapy's
     fuzz() of Ethernet, IPv4 and TCP/UDP/ICMP headers, truncated frames, bad
     checksums, IHL and total-length lies, IPv4 options, fragments, TTL 0/1/2, non-IPv4
     ethertypes, 802.3 length frames, jumbo frames (to 9014 bytes), random bytes, bit
     flips of valid frames, and valid packets (about 10 %) carrying a sequence number.
  3. Sent from h1 and h3 with raw AF_PACKET sockets, paced at --rate-pps (below the
     switch's capacity, so that nothing is lost before the pipeline; scapy's sendp is
     far slower: tools/fuzz.py --measure-send), while every frame leaving the switch is
     captured on h1..h4.

Verdicts (each one is a line of the JSON report, and the run fails unless all hold):
  * the switch is alive at the end and P4Runtime answers a read;
  * accounting: ingress discards (all reasons, all ports) + AQM arrivals == frames sent,
    exactly; and per reason and per port, the counts equal this file's model of the
    P4 program (`expected_fate`, written from parser.p4 and main.p4);
  * every frame that left the switch is the expected rewrite (MACs, TTL - 1, new
    checksum) of a frame the model says reaches that port, and their number equals
    the program's queue_departures; every valid packet came out, byte-exact;
  * afterwards every queue is empty: queue_admits == queue_departures per port and class;
  * no frame was lost before the pipeline (the capture sockets dropped nothing).

Usage: sudo tools/fuzz.py [--count N] [--seed S] [--rate-pps R] [--out report.json]
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import logging
import os
import random
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

NETNS = os.environ.get("MMAQM_FUZZ_NETNS", "mmaqm-fuzz")   # a unique one per concurrent run
NUM_PORTS = 4
SEND_PORTS = (1, 3)                 # frames enter from h1 and h3
VALID_PORT = 2                      # valid packets go to the host behind port 2
GRPC_PORT = 9559
THRIFT_PORT = 9090
DEVICE_ID = 1
MTU = 9000
MAX_FRAME = MTU + 14                # the largest frame a veth with this MTU carries
TM_DEPTH_PKTS = 1024                # above every queue_limit_pkts below: only the AQM drops
TAGGED_DSCP = (46, 34)
# Ports slowed down (BMv2 queue rate, packets/s) so that queues build and the AQM drops:
# the fuzzed packets also go through RED's and FRED's drop decisions.
SLOW_PORTS_PPS = {1: 150, 4: 100}
DEFAULT_COUNT = 5000
DEFAULT_SEED = 1
DEFAULT_RATE_PPS = 4000
MARK = b"MMAQMFZ!"                  # starts a valid packet's payload, then its sequence number

# Per port: its algorithm (every one a different admission path). Port 2 takes the
# valid packets: a limit no burst reaches, so every valid packet must come out.
POLICIES = {
    1: {"algorithm": "RED", "queue_limit_pkts": 60, "min_th_pkts": 15, "max_th_pkts": 30,
        "max_p": 0.1, "ewma_weight": 0.001953125},
    2: {"algorithm": "DROP_TAIL", "queue_limit_pkts": 1000},
    3: {"algorithm": "DCBT_CHIPS", "queue_limit_pkts": 60, "min_th_pkts": 15, "max_th_pkts": 30,
        "max_p": 0.1, "ewma_weight": 0.001953125, "chips_max_tagged_ratio": 0.5},
    4: {"algorithm": "FRED", "queue_limit_pkts": 60, "min_th_pkts": 15, "max_th_pkts": 30,
        "max_p": 0.1, "ewma_weight": 0.001953125, "fred_minq_pkts": 2, "fred_flow_slots": 4096},
}

# The program's constants (p4src/shared/defines.p4), read as the controller reads them.
ETHERTYPE_IPV4 = 0x0800
IPV4_MIN_IHL = 5
L4_HEADER_BYTES = {6: 20, 17: 8, 1: 4}      # TCP, UDP, ICMP as parser.p4 extracts them
UPTA_OPTION_TYPE, UPTA_OPTION_LEN, UPTA_OPTION_IHL = 0x9E, 4, 6   # P-UPTA's IPv4 option
ICMP_QOS_PROBE, ICMP_QOS_REPORT = 20, 21    # BFD (upta.p4)
BFD_HEADER_BYTES = 12                       # bfd_t after the ICMP header (headers.p4)
BFD_IP_LEN, BFD_SPEC_BYTES = 36, 16
ETHERTYPE_IPV6 = 0x86DD
IPV6_EXT_HEADERS = (0, 43, 60, 44)          # hop-by-hop, routing, destination options, fragment
IPV6_EXT_MAX_DEPTH = 2                      # parser.p4's ipv6_ext1, ipv6_ext2 states
L6_HEADER_BYTES = {6: 20, 17: 8, 58: 4}     # TCP, UDP, ICMPv6 after IPv6


def ipv6_prefix(port: int) -> str:
    """The IPv6 network behind a port: 2001:db8:<port>::/64."""
    return f"2001:db8:{port:x}::/64"


def router_mac(port: int) -> bytes:
    return bytes([2, 0, 0, 0, 0, port])


def host_mac(port: int) -> bytes:
    return bytes([2, 0, 0, 0, port, 1])


def mac_str(mac: bytes) -> str:
    return ":".join(f"{b:02x}" for b in mac)


def config_yaml() -> str:
    lines = ["classifier:", f"  tagged_dscp: [{', '.join(map(str, TAGGED_DSCP))}]",
             "switches:", "  fuzz:", f"    p4runtime_addr: 127.0.0.1:{GRPC_PORT}",
             f"    device_id: {DEVICE_ID}", "    ports:"]
    lines += [f"      {p}: {{mac: \"{mac_str(router_mac(p))}\"}}" for p in range(1, NUM_PORTS + 1)]
    lines.append("    routes:")
    lines += [f"      - {{prefix: 10.0.{p}.0/24, port: {p}, next_hop_mac: \"{mac_str(host_mac(p))}\"}}"
              for p in range(1, NUM_PORTS + 1)]
    lines += [f"      - {{prefix: \"{ipv6_prefix(p)}\", port: {p}, next_hop_mac: \"{mac_str(host_mac(p))}\"}}"
              for p in range(1, NUM_PORTS + 1)]
    lines.append("    policies:")
    lines += [f"      {p}: {json.dumps(pol)}" for p, pol in POLICIES.items()]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the model
def ipv4_checksum(header: bytes) -> int:
    """The IPv4 header checksum of a header of 20 or more bytes, its options included
    (its checksum field is ignored)."""
    words = struct.unpack(f"!{len(header) // 2}H", header[:10] + b"\0\0" + header[12:])
    s = sum(words)
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


@dataclass(frozen=True)
class Fate:
    """What the program does with a frame: a discard reason (DISCARD_REASONS names) on
    the ingress port, or an arrival at the AQM of (port, class)."""

    discard: str | None = None
    port: int | None = None
    traffic_class: str | None = None


def expected_fate(frame: bytes) -> Fate:
    """The P4 program's verdict on a frame, from parser.p4 and MmaqmIngress (main.p4)."""
    n = len(frame)
    ethertype = struct.unpack("!H", frame[12:14])[0]
    if ethertype == ETHERTYPE_IPV6:
        return expected_fate_ipv6(frame)
    if ethertype != ETHERTYPE_IPV4:
        return Fate("NOT_IPV4")                 # parser accepts: neither IPv4 nor IPv6
    if n < 34:
        return Fate("MALFORMED")                # PacketTooShort on the IPv4 header
    version, ihl = frame[14] >> 4, frame[14] & 0xF
    if version != 4 or ihl < IPV4_MIN_IHL:
        return Fate("MALFORMED")                # verify(): IPv4BadVersion / HeaderTooShort
    total_len, = struct.unpack("!H", frame[16:18])
    frag_offset = struct.unpack("!H", frame[20:22])[0] & 0x1FFF
    ttl, proto = frame[22], frame[23]
    # P-UPTA's option (parser.p4 parse_ipv4_option): IHL 6 looks ahead at the option's
    # type and length, and extracts the option when it is exactly 0x9E, 4
    upta_option = False
    if ihl == UPTA_OPTION_IHL:
        if n < 36:
            return Fate("MALFORMED")            # PacketTooShort on the lookahead
        if frame[34:36] == bytes((UPTA_OPTION_TYPE, UPTA_OPTION_LEN)):
            if n < 38:
                return Fate("MALFORMED")        # PacketTooShort on the option
            upta_option = True
    l4 = 14 + 4 * ihl
    if (ihl == IPV4_MIN_IHL or upta_option) and frag_offset == 0 and proto in L4_HEADER_BYTES:
        if n < l4 + L4_HEADER_BYTES[proto]:
            return Fate("MALFORMED")            # PacketTooShort on the L4 header
        # an ICMP QoS Probe (20) or Report (21): parse_bfd extracts the BFD header, and
        # a probe's flow specs when the IPv4 length says 1..4 of them
        if proto == 1 and frame[l4] in (ICMP_QOS_PROBE, ICMP_QOS_REPORT):
            need = l4 + 4 + BFD_HEADER_BYTES
            specs = (total_len - BFD_IP_LEN) // BFD_SPEC_BYTES
            if frame[l4] == ICMP_QOS_PROBE and total_len >= BFD_IP_LEN \
                    and (total_len - BFD_IP_LEN) % BFD_SPEC_BYTES == 0 and 1 <= specs <= 4:
                need += specs * BFD_SPEC_BYTES
            if n < need:
                return Fate("MALFORMED")        # PacketTooShort on the BFD header or specs
    if ihl != IPV4_MIN_IHL and not upta_option:
        return Fate("IPV4_OPTIONS")
    if ipv4_checksum(frame[14:l4]) != struct.unpack("!H", frame[24:26])[0]:
        return Fate("BAD_CHECKSUM")
    if total_len < 20 or total_len + 14 > n:
        return Fate("MALFORMED")
    if ttl <= 1:
        return Fate("TTL_EXPIRED")
    dst = frame[30:34]
    if not (dst[0] == 10 and dst[1] == 0 and 1 <= dst[2] <= NUM_PORTS):
        return Fate("NO_ROUTE")
    dscp = frame[15] >> 2
    cls = "TCP" if proto == 6 else "TAGGED" if proto == 17 and dscp in TAGGED_DSCP else "UNTAGGED"
    return Fate(port=dst[2], traffic_class=cls)


def expected_fate_ipv6(frame: bytes) -> Fate:
    """parser.p4's IPv6 states and MmaqmIngress's IPv6 checks (docs/ipv6.md)."""
    n = len(frame)
    if n < 54:
        return Fate("MALFORMED")                # PacketTooShort on the IPv6 header
    if frame[14] >> 4 != 6:
        return Fate("MALFORMED")                # ipv6_bad_version: IPv6BadVersion
    payload_len, = struct.unpack("!H", frame[18:20])
    proto, hop_limit = frame[20], frame[21]
    off, l4 = 54, True
    for depth in range(IPV6_EXT_MAX_DEPTH + 1):
        if proto not in IPV6_EXT_HEADERS:
            break
        if depth == IPV6_EXT_MAX_DEPTH:
            return Fate("IPV6_EXT_LIMIT")       # verify(false): IPv6ExtensionLimit
        if proto == 44:                         # fragment: its 8 bytes, then its offset
            if n < off + 8:
                return Fate("MALFORMED")
            frag_offset = struct.unpack("!H", frame[off + 2:off + 4])[0] >> 3
            proto, off = frame[off], off + 8
            if frag_offset != 0:
                l4 = False                      # a non-first fragment: no L4 header
                break
        else:                                   # 8 bytes, then 8 * len more
            if n < off + 8:
                return Fate("MALFORMED")
            length = 8 + 8 * frame[off + 1]
            if n < off + length:
                return Fate("MALFORMED")
            proto, off = frame[off], off + length
    if l4 and proto in L6_HEADER_BYTES and n < off + L6_HEADER_BYTES[proto]:
        return Fate("MALFORMED")                # PacketTooShort on the L4 header
    if payload_len + 54 > n:
        return Fate("MALFORMED")                # payload length beyond the frame
    if hop_limit <= 1:
        return Fate("TTL_EXPIRED")
    dst = frame[38:54]
    if not (dst[:4] == bytes((0x20, 0x01, 0x0d, 0xb8)) and dst[4:6] in
            {p.to_bytes(2, "big") for p in range(1, NUM_PORTS + 1)} and dst[6:8] == b"\0\0"):
        return Fate("NO_ROUTE")
    dscp = ((frame[14] & 0xF) << 2) | (frame[15] >> 6)
    cls = "TCP" if proto == 6 else "TAGGED" if proto == 17 and dscp in TAGGED_DSCP else "UNTAGGED"
    return Fate(port=int.from_bytes(dst[4:6], "big"), traffic_class=cls)


def rewrite(frame: bytes, port: int) -> bytes:
    """The frame as the router emits it on `port`: MACs, TTL - 1, checksum (routing.p4),
    over the IPv4 header with P-UPTA's option when it carries one (no port here runs
    UPTA, so the option itself passes unchanged)."""
    if struct.unpack("!H", frame[12:14])[0] == ETHERTYPE_IPV6:     # hop limit - 1
        return (host_mac(port) + router_mac(port) + frame[12:21] + bytes((frame[21] - 1,))
                + frame[22:])
    end = 14 + 4 * (frame[14] & 0xF)
    hdr = bytearray(frame[14:end])
    hdr[8] -= 1
    hdr[10:12] = struct.pack("!H", ipv4_checksum(bytes(hdr)))
    return host_mac(port) + router_mac(port) + frame[12:14] + bytes(hdr) + frame[end:]


# ------------------------------------------------------------- the frames
KINDS = {   # kind: weight (per cent of the frames)
    "valid": 10, "ttl": 5, "bad_checksum": 5, "ihl_lie": 5, "length_lie": 7, "options": 5,
    "fragment": 5, "truncated": 8, "non_ipv4": 8, "jumbo": 4, "scapy_fuzz_ip": 10,
    "scapy_fuzz_l4": 8, "bit_flip": 10, "random_bytes": 5, "tiny_l4": 5, "ipv6": 10,
}


class FrameFactory:
    """Seeded frame builder: the same seed gives the same frames (scapy's fuzz() draws
    from the global `random`, which is seeded too)."""

    def __init__(self, seed: int) -> None:
        from scapy.config import conf
        conf.verb = 0
        self.rng = random.Random(seed)
        random.seed(seed)
        # Fields scapy would fill from the clock (ICMP timestamps) or from this host's
        # routes (source addresses), drawn from their own generator instead.
        self.clock_rng = random.Random(seed + 0x5EED)
        self.valid_seq = 0

    # helpers
    def src_port(self) -> int:
        return self.rng.choice(SEND_PORTS)

    def routed_dst(self) -> str:
        r = self.rng.random()
        if r < 0.75:
            return f"10.0.{self.rng.randint(1, NUM_PORTS)}.{self.rng.randint(1, 254)}"
        if r < 0.85:
            return f"10.0.{self.rng.randint(5, 255)}.{self.rng.randint(0, 255)}"
        return ".".join(str(self.rng.randint(0, 255)) for _ in range(4))

    def eth(self, in_port: int, ethertype: int | None = None):
        from scapy.layers.l2 import Ether
        e = Ether(src=mac_str(host_mac(in_port)), dst=mac_str(router_mac(in_port)))
        if ethertype is not None:
            e.type = ethertype
        return e

    def ip_packet(self, in_port: int, dst: str | None = None, *, proto: str | None = None,
                  payload_len: int | None = None, ttl: int | None = None, dscp: int | None = None,
                  options: bytes | None = None, mark: bool = False) -> bytes:
        from scapy.layers.inet import ICMP, IP, TCP, UDP
        proto = proto or self.rng.choice(("tcp", "udp", "udp", "icmp", "gre"))
        if dscp is None:
            dscp = self.rng.choice((0, 0, 46, 34, self.rng.randint(0, 63)))
        ip = IP(src=f"10.0.{in_port}.2", dst=dst or self.routed_dst(),
                ttl=ttl if ttl is not None else self.rng.randint(2, 255),
                tos=(dscp << 2) | self.rng.choice((0, 0, 1, 2)),
                id=self.rng.randint(0, 0xFFFF))
        if options is not None:
            ip.options = options
        if payload_len is None:
            payload_len = self.rng.choice((0, 18, 64, 200, self.rng.randint(0, 1400)))
        payload = self.rng.randbytes(payload_len)
        if mark:
            payload = MARK + struct.pack("!I", self.valid_seq) + payload
            self.valid_seq += 1
        sport, dport = self.rng.randint(1, 65535), self.rng.randint(1, 65535)
        if proto == "tcp":
            l4 = TCP(sport=sport, dport=dport, flags="A", seq=self.rng.getrandbits(32)) / payload
        elif proto == "udp":
            l4 = UDP(sport=sport, dport=dport) / payload
        elif proto == "icmp":
            l4 = ICMP(type=self.rng.choice((0, 8, 3, 11))) / payload
        else:
            ip.proto = self.rng.choice((47, 50, 132, 255, 0))
            l4 = payload
        return bytes(self.eth(in_port) / ip / l4)

    @staticmethod
    def fix_checksum(frame: bytes) -> bytes:
        b = bytearray(frame)
        if len(b) >= 34:
            b[24:26] = struct.pack("!H", ipv4_checksum(bytes(b[14:34])))
        return bytes(b)

    # the kinds
    def valid(self, p: int) -> bytes:
        size = self.rng.choice((None, None, None, self.rng.randint(1401, MTU - 60)))
        return self.ip_packet(p, f"10.0.{VALID_PORT}.{self.rng.randint(1, 254)}",
                              proto=self.rng.choice(("tcp", "udp", "icmp", "gre")),
                              payload_len=size, mark=True)

    def ttl(self, p: int) -> bytes:
        return self.ip_packet(p, ttl=self.rng.choice((0, 1, 2)))

    def bad_checksum(self, p: int) -> bytes:
        b = bytearray(self.ip_packet(p))
        b[24 + self.rng.randint(0, 1)] ^= 1 << self.rng.randint(0, 7)
        return bytes(b)

    def ihl_lie(self, p: int) -> bytes:
        b = bytearray(self.ip_packet(p))
        b[14] = 0x40 | self.rng.randint(0, 15)
        return self.fix_checksum(bytes(b)) if self.rng.random() < 0.8 else bytes(b)

    def length_lie(self, p: int) -> bytes:
        b = bytearray(self.ip_packet(p))
        real = len(b) - 14
        b[16:18] = struct.pack("!H", self.rng.choice((
            0, 19, 20, real - 1, real + 1, real + 100, 0xFFFF, self.rng.randint(0, 0xFFFF))) & 0xFFFF)
        return self.fix_checksum(bytes(b))

    def options(self, p: int) -> bytes:
        n = self.rng.choice((4, 8, 12, 40))
        opts = self.rng.choice((b"\x01" * (n - 1) + b"\x00", b"\x07\x07\x04" + bytes(n - 3),
                                self.rng.randbytes(n)))
        return self.ip_packet(p, options=opts)

    def fragment(self, p: int) -> bytes:
        b = bytearray(self.ip_packet(p))
        flags_off = self.rng.choice((0x2000, 0x2000 | self.rng.randint(1, 0x1FFF),
                                     self.rng.randint(1, 0x1FFF), 0x4000, 0x8000))
        b[20:22] = struct.pack("!H", flags_off)
        return self.fix_checksum(bytes(b))

    def truncated(self, p: int) -> bytes:
        b = self.ip_packet(p)
        return b[:self.rng.randint(14, len(b) - 1)]

    def non_ipv4(self, p: int) -> bytes:
        from scapy.layers.inet import IP, UDP
        from scapy.layers.inet6 import IPv6
        from scapy.layers.l2 import ARP, Dot1Q, LLC
        choice = self.rng.randint(0, 6)
        if choice == 0:
            return bytes(self.eth(p) / ARP(pdst=self.routed_dst(), psrc=self.src_ip(),
                                           hwsrc=mac_str(host_mac(p))))
        if choice == 1:
            return bytes(self.eth(p) / IPv6(src="2001:db8::2", dst="2001:db8::1") / UDP()
                         / self.rng.randbytes(30))
        if choice == 2:
            return bytes(self.eth(p) / Dot1Q(vlan=self.rng.randint(0, 4095))
                         / IP(src=self.src_ip(), dst=self.routed_dst()) / UDP())
        if choice == 3:
            return bytes(self.eth(p, 0x88CC) / self.rng.randbytes(40))       # LLDP
        if choice == 4:
            return bytes(self.eth(p) / LLC() / self.rng.randbytes(40))        # 802.3 length
        if choice == 5:
            t = self.rng.choice((self.rng.randint(0, 0xFFFF), 0x0806, 0x86DD, 0x8847, 0x0801))
            return bytes(self.eth(p, t if t != ETHERTYPE_IPV4 else 0x0801)) + self.rng.randbytes(
                self.rng.randint(0, 100))
        return bytes(self.eth(p, 0x0800)) + bytes([0x60]) + self.rng.randbytes(50)   # IPv6 in 0x0800

    def ipv6(self, p: int) -> bytes:
        """IPv6: valid or not, 0..3 extension headers, fragments, hop limits 0..255,
        payload length lies, truncations, routed or not."""
        from scapy.layers.inet import TCP, UDP
        from scapy.layers.inet6 import (ICMPv6EchoRequest, IPv6, IPv6ExtHdrDestOpt,
                                        IPv6ExtHdrFragment, IPv6ExtHdrHopByHop,
                                        IPv6ExtHdrRouting)
        r = self.rng.random()
        dst = (f"2001:db8:{self.rng.randint(1, NUM_PORTS):x}::{self.rng.randint(1, 0xFFFF):x}"
               if r < 0.8 else f"2001:db8:{self.rng.randint(5, 0xFFFF):x}::1")
        dscp = self.rng.choice((0, 46, 34, self.rng.randint(0, 63)))
        ip = IPv6(src=f"2001:db8:{p:x}::2", dst=dst, tc=(dscp << 2) | self.rng.randint(0, 3),
                  fl=self.rng.randint(0, 0xFFFFF),
                  hlim=self.rng.choice((0, 1, 2, 64, 64, 64, self.rng.randint(0, 255))))
        pkt = ip
        for _ in range(self.rng.choice((0, 0, 1, 2, 3))):
            pkt = pkt / self.rng.choice((
                IPv6ExtHdrHopByHop(), IPv6ExtHdrDestOpt(),
                IPv6ExtHdrRouting(addresses=["2001:db8::9"] * self.rng.randint(0, 2)),
                IPv6ExtHdrFragment(offset=self.rng.choice((0, 0, 5)), m=self.rng.randint(0, 1),
                                   id=self.rng.getrandbits(32))))
        payload = self.rng.randbytes(self.rng.choice((0, 18, 64, self.rng.randint(0, 1400))))
        sport, dport = self.rng.randint(1, 65535), self.rng.randint(1, 65535)
        l4 = self.rng.choice(("tcp", "udp", "udp", "icmp", "other"))
        if l4 == "tcp":
            pkt = pkt / TCP(sport=sport, dport=dport, flags="A") / payload
        elif l4 == "udp":
            pkt = pkt / UDP(sport=sport, dport=dport) / payload
        elif l4 == "icmp":
            pkt = pkt / ICMPv6EchoRequest() / payload
        else:
            pkt = pkt / payload          # next header 59 (No Next Header) from scapy
        b = bytearray(bytes(self.eth(p) / pkt))
        r = self.rng.random()
        if r < 0.1:                      # payload length beyond the frame
            b[18:20] = struct.pack("!H", len(b) - 54 + self.rng.randint(1, 100))
        elif r < 0.2:                    # truncated anywhere
            b = b[:self.rng.randint(14, len(b) - 1)]
        elif r < 0.25:                   # not version 6
            b[14] = (b[14] & 0x0F) | (self.rng.randint(0, 15) << 4)
        return bytes(b)

    def jumbo(self, p: int) -> bytes:
        size = self.rng.randint(1500, MTU - 60)
        r = self.rng.random()
        if r < 0.5:
            return self.ip_packet(p, payload_len=size)
        if r < 0.75:
            b = bytearray(self.ip_packet(p, payload_len=size))
            b[16:18] = struct.pack("!H", self.rng.randint(0, 0xFFFF))
            return self.fix_checksum(bytes(b))
        return bytes(self.eth(p, 0x0800)) + self.rng.randbytes(self.rng.randint(1500, MAX_FRAME - 14))

    def src_ip(self) -> str:
        return ".".join(str(self.clock_rng.randint(0, 255)) for _ in range(4))

    def icmp(self):
        """ICMP whose timestamp fields (types 13, 14) are seeded, not scapy's clock."""
        from scapy.layers.inet import ICMP
        return ICMP(**{f: self.clock_rng.getrandbits(32) for f in ("ts_ori", "ts_rx", "ts_tx")})

    def scapy_fuzz_ip(self, p: int) -> bytes:
        from scapy.layers.inet import IP, TCP, UDP
        from scapy.packet import fuzz
        l4 = self.rng.choice((TCP, UDP, self.icmp))()
        ip = IP(dst=self.routed_dst()) if self.rng.random() < 0.5 else IP()
        ip.src = self.src_ip()
        if self.rng.random() < 0.2:                    # Ethernet fuzzed too (mostly not IPv4)
            frame = bytes(fuzz(self.eth(p) / ip / l4))
        else:
            frame = bytes(self.eth(p, ETHERTYPE_IPV4)) + bytes(fuzz(ip / l4))
        if self.rng.random() < 0.4:                    # past the checksum and length checks
            b = bytearray(frame)
            if len(b) >= 34:
                b[14] = 0x45
                b[16:18] = struct.pack("!H", len(b) - 14)
                if self.rng.random() < 0.7:
                    b[22] = max(b[22], 2)
            frame = self.fix_checksum(bytes(b))
        return frame[:MAX_FRAME]

    def scapy_fuzz_l4(self, p: int) -> bytes:
        from scapy.layers.inet import IP, TCP, UDP
        from scapy.packet import fuzz
        l4 = fuzz(self.rng.choice((TCP, UDP, self.icmp))()) / self.rng.randbytes(self.rng.randint(0, 60))
        ip = IP(src=f"10.0.{p}.2", dst=self.routed_dst(), ttl=64,
                tos=self.rng.choice((0, 46 << 2, 34 << 2)))
        return bytes(self.eth(p) / ip / l4)

    def bit_flip(self, p: int) -> bytes:
        b = bytearray(self.ip_packet(p))
        for _ in range(self.rng.randint(1, 8)):
            i = self.rng.randint(0, min(len(b), 60) - 1)
            b[i] ^= 1 << self.rng.randint(0, 7)
        return bytes(b)

    def random_bytes(self, p: int) -> bytes:
        b = bytearray(self.rng.randbytes(self.rng.randint(14, 1514)))
        if self.rng.random() < 0.5:
            b[12:14] = b"\x08\x00"
        return bytes(b)

    def tiny_l4(self, p: int) -> bytes:
        """IPv4 header consistent with a frame whose TCP/UDP/ICMP header is cut short."""
        from scapy.layers.inet import IP
        proto = self.rng.choice((6, 17, 1))
        l4 = self.rng.randbytes(self.rng.randint(0, L4_HEADER_BYTES[proto] - 1))
        ip = IP(src=f"10.0.{p}.2", dst=self.routed_dst(), proto=proto, ttl=64)
        return bytes(self.eth(p) / ip / l4)

    def frames(self, count: int) -> list[tuple[int, str, bytes]]:
        """count frames as (ingress port, kind, bytes)."""
        kinds, weights = zip(*KINDS.items())
        out = []
        for _ in range(count):
            kind = self.rng.choices(kinds, weights)[0]
            port = self.src_port()
            frame = getattr(self, kind)(port)
            out.append((port, kind, frame[:MAX_FRAME]))
        return out


def frames_digest(frames) -> str:
    h = hashlib.sha256()
    for port, kind, frame in frames:
        h.update(bytes([port]) + kind.encode() + len(frame).to_bytes(4, "big") + frame)
    return h.hexdigest()[:16]


# ------------------------------------------------------ inside the namespace
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SOL_PACKET = 263
PACKET_STATISTICS = 6


class Capture:
    """Every frame arriving on h1..hN (not the ones sent from there), in a thread."""

    def __init__(self, ports) -> None:
        self.socks = {}
        for p in ports:
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.setsockopt(socket.SOL_SOCKET, 33, 256 << 20)   # SO_RCVBUFFORCE
            s.bind((f"h{p}", 0))
            s.setblocking(False)
            self.socks[s.fileno()] = (p, s)
        self.frames: dict[int, list[bytes]] = {p: [] for p in ports}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        poller = select.poll()
        for fd in self.socks:
            poller.register(fd, select.POLLIN)
        while not self._stop.is_set():
            for fd, _ in poller.poll(50):
                port, s = self.socks[fd]
                while True:
                    try:
                        data, addr = s.recvfrom(65535)
                    except BlockingIOError:
                        break
                    if addr[2] != PACKET_OUTGOING:
                        self.frames[port].append(data)

    def stop(self) -> dict[int, int]:
        """Stop; the frames each socket dropped (PACKET_STATISTICS tp_drops)."""
        self._stop.set()
        self._thread.join()
        drops = {}
        for port, s in self.socks.values():
            _, dropped = struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
            drops[port] = dropped
            s.close()
        return drops


def link_stats(ifname: str) -> dict[str, int]:
    base = Path("/sys/class/net") / ifname / "statistics"
    return {k: int((base / k).read_text()) for k in ("rx_packets", "tx_packets", "rx_dropped",
                                                     "tx_dropped")}


COUNTERS = ("ingress_discards", "queue_arrivals", "queue_admits", "queue_departures", "queue_drops")


def read_counters(sw) -> dict[str, dict[int, int]]:
    values = sw.read_counters(COUNTERS)
    return {name: {i: v.packets for i, v in values[name].items() if v.packets} for name in COUNTERS}


def delta(after, before):
    return {name: {i: n - before[name].get(i, 0) for i, n in after[name].items()
                   if n != before[name].get(i, 0)} for name in after}


def inside(args: argparse.Namespace) -> int:
    """Generate, send, capture, read and judge (runs inside the namespace)."""
    from mmaqm import p4constants as C
    from mmaqm.blocking import BlockingSwitch
    from mmaqm.driver import SwitchDriver

    report: dict = {"count": args.count, "seed": args.seed, "rate_pps_target": args.rate_pps}
    t = time.monotonic()
    frames = FrameFactory(args.seed).frames(args.count)
    report["generate_s"] = round(time.monotonic() - t, 2)
    report["frames_sha256_16"] = frames_digest(frames)
    report["kinds"] = dict(sorted(collections.Counter(k for _, k, _ in frames).items()))
    fates = [expected_fate(f) for _, _, f in frames]
    sizes = [len(f) for _, _, f in frames]
    report["frame_bytes"] = {"min": min(sizes), "max": max(sizes), "jumbo_over_1514":
                             sum(s > 1514 for s in sizes)}

    logging.getLogger("finsy").setLevel(logging.ERROR)
    # A reader beside the controller (P4Runtime serves reads to any client: no arbitration).
    sw = BlockingSwitch(SwitchDriver("fuzz", f"127.0.0.1:{GRPC_PORT}", device_id=DEVICE_ID,
                                     p4info=REPO / "build" / "main.p4info.txtpb",
                                     read_only=True, push_pipeline=False,
                                     require_primary=False))
    try:
        before = read_counters(sw)
        links_before = {p: link_stats(f"h{p}") for p in range(1, NUM_PORTS + 1)}
        links_before.update({f"sw{p}": link_stats(f"sw{p}") for p in range(1, NUM_PORTS + 1)})
        capture = Capture(range(1, NUM_PORTS + 1))
        senders = {}
        for p in SEND_PORTS:
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            s.bind((f"h{p}", 0))
            senders[p] = s
        # Paced: frame i leaves at start + i / rate.
        start = time.monotonic()
        interval = 1.0 / args.rate_pps
        send_errors = 0
        for i, (port, _, frame) in enumerate(frames):
            due = start + i * interval
            now = time.monotonic()
            if due > now + 0.001:
                time.sleep(due - now)
            try:
                senders[port].send(frame)
            except OSError:
                send_errors += 1
        send_s = time.monotonic() - start
        report["send_s"] = round(send_s, 2)
        report["rate_pps_achieved"] = round(args.count / send_s)
        report["send_errors"] = send_errors
        # Wait until every frame is accounted for and the slow ports have drained (or
        # nothing moves for 5 s).
        deadline = time.monotonic() + 5.0
        last = None
        while True:
            now_c = read_counters(sw)
            d = delta(now_c, before)
            seen = sum(d["ingress_discards"].values()) + sum(d["queue_arrivals"].values())
            queued = sum(d["queue_admits"].values()) - sum(d["queue_departures"].values())
            if seen >= args.count and queued == 0:
                break
            if (seen, queued) != last:
                last, deadline = (seen, queued), time.monotonic() + 5.0
            elif time.monotonic() > deadline:
                break
            time.sleep(0.1)
        time.sleep(0.5)                         # the last departures reach the capture
        drops = capture.stop()
        final = read_counters(sw)               # P4Runtime answers at the end
        d = delta(final, before)
        for s in senders.values():
            s.close()
        links = {k: {f: link_stats(f"h{k}" if isinstance(k, int) else k)[f] - v[f]
                     for f in v} for k, v in links_before.items()}
    finally:
        sw.close()

    # ---- accounting
    discard_names = {v: k for k, v in C.DISCARD_REASONS.items()}
    class_names = {v: k for k, v in C.CLASSES.items()}
    observed_discards = collections.Counter()
    for idx, n in d["ingress_discards"].items():
        port, reason = divmod(idx, C.NUM_DISCARD_REASONS)
        observed_discards[f"port{port}:{discard_names.get(reason, reason)}"] += n
    observed_arrivals = collections.Counter()
    for idx, n in d["queue_arrivals"].items():
        port, cls = divmod(idx, C.CLASS_SLOTS)
        observed_arrivals[f"port{port}:{class_names.get(cls, cls)}"] += n
    expected_discards = collections.Counter(f"port{port}:{f.discard}"
                                            for (port, _, _), f in zip(frames, fates) if f.discard)
    expected_arrivals = collections.Counter(f"port{f.port}:{f.traffic_class}"
                                            for f in fates if f.port is not None)
    drop_names = {v: k for k, v in C.DROP_REASONS.items()}
    aqm_drops = collections.Counter()
    for idx, n in d["queue_drops"].items():
        class_index, reason = divmod(idx, C.NUM_DROP_REASONS)
        aqm_drops[f"port{class_index // C.CLASS_SLOTS}:{drop_names.get(reason, reason)}"] += n
    total_discards = sum(observed_discards.values())
    total_arrivals = sum(observed_arrivals.values())
    by_reason = collections.Counter()
    for key, n in observed_discards.items():
        by_reason[key.split(":")[1]] += n
    report["accounting"] = {
        "frames_sent": args.count, "ingress_discards": total_discards,
        "queue_arrivals": total_arrivals, "unaccounted": args.count - total_discards - total_arrivals,
        "discards_by_reason": dict(sorted(by_reason.items())),
        "arrivals_by_port_class": dict(sorted(observed_arrivals.items())),
        "aqm_drops": sum(d["queue_drops"].values()),
        "aqm_drops_by_port_reason": dict(sorted(aqm_drops.items())),
        "queue_admits": sum(d["queue_admits"].values()),
        "queue_departures": sum(d["queue_departures"].values()),
    }
    model_diff = {k: {"observed": observed_discards.get(k, 0) + observed_arrivals.get(k, 0),
                      "model": expected_discards.get(k, 0) + expected_arrivals.get(k, 0)}
                  for k in set(observed_discards) | set(expected_discards)
                  | set(observed_arrivals) | set(expected_arrivals)
                  if observed_discards.get(k, 0) + observed_arrivals.get(k, 0)
                  != expected_discards.get(k, 0) + expected_arrivals.get(k, 0)}

    # ---- what left the switch
    expected_out: dict[int, collections.Counter] = {p: collections.Counter()
                                                    for p in range(1, NUM_PORTS + 1)}
    for (_, kind, frame), f in zip(frames, fates):
        if f.port is not None:
            expected_out[f.port][rewrite(frame, f.port)] += 1
    valid_expected = {rewrite(frame, VALID_PORT) for (_, kind, frame) in frames if kind == "valid"}
    unexpected = 0
    unexpected_examples = []
    captured_total = 0
    for port, got in capture.frames.items():
        remaining = expected_out[port]
        for frame in got:
            captured_total += 1
            if remaining[frame] > 0:
                remaining[frame] -= 1
            else:
                unexpected += 1
                if len(unexpected_examples) < 3:
                    unexpected_examples.append(f"port {port}: {frame[:64].hex()}")
    captured_valid = {f for f in capture.frames[VALID_PORT] if f in valid_expected}
    n_valid = sum(k == "valid" for _, k, _ in frames)
    report["egress"] = {"captured": captured_total, "unexpected": unexpected,
                        "unexpected_examples": unexpected_examples,
                        "valid_sent": n_valid, "valid_forwarded_exact": len(captured_valid),
                        "capture_drops": drops}
    report["links"] = links
    occupancy = {i: n - d["queue_departures"].get(i, 0) for i, n in d["queue_admits"].items()
                 if n != d["queue_departures"].get(i, 0)}

    checks = {
        "every frame sent": send_errors == 0,
        "discards + arrivals == frames sent": total_discards + total_arrivals == args.count,
        "per reason and port as the model": not model_diff,
        "every frame out is an expected rewrite": unexpected == 0,
        "frames out == queue_departures": captured_total == report["accounting"]["queue_departures"],
        "every valid packet forwarded byte-exact": len(captured_valid) == n_valid,
        "queues empty (admits == departures)": not occupancy,
        "capture lost nothing": not any(drops.values()),
        "veths lost nothing": all(links[p]["tx_packets"] == links[f"sw{p}"]["rx_packets"]
                                  and links[p]["rx_packets"] == links[f"sw{p}"]["tx_packets"]
                                  for p in range(1, NUM_PORTS + 1)),
    }
    report["model_diff"] = model_diff
    report["occupancy_left"] = occupancy
    report["checks"] = checks
    report["passed"] = all(checks.values())
    Path(args.report).write_text(json.dumps(report, indent=1, default=str) + "\n")
    return 0 if report["passed"] else 1


# ------------------------------------------------------------- the test bed
def outside(args: argparse.Namespace) -> int:
    from mmaqm import bmv2_tm
    from mmaqm_exp import lab

    why = lab.missing_prereqs(("simple_switch_grpc", "simple_switch_CLI"))
    if why:
        print(f"fuzz: {why}", file=sys.stderr)
        return 2
    for path in (REPO / "build" / "main.json", REPO / "build" / "main.p4info.txtpb"):
        if not path.exists():
            print(f"fuzz: {path} missing: run 'make build'", file=sys.stderr)
            return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    log_dir = Path(tempfile.mkdtemp(prefix="mmaqm-fuzz-"))
    lab.catch_stop_signals(interrupt=True)
    started = time.monotonic()
    report_path = log_dir / "inside.json"
    with lab.ExitOnStop("fuzz") as end:
        with lab.Lab(NETNS) as bed:
            bed.add_namespace(NETNS)
            bed.add_veths([(lab.VethEnd(NETNS, f"sw{n}", lab.RAW_PORT, mtu=MTU),
                            lab.VethEnd(NETNS, f"h{n}", lab.RAW_PORT, mtu=MTU))
                           for n in range(1, NUM_PORTS + 1)])
            spec = lab.SwitchSpec({n: f"sw{n}" for n in range(1, NUM_PORTS + 1)},
                                  device_id=DEVICE_ID, grpc_port=GRPC_PORT,
                                  thrift_port=THRIFT_PORT, out_path=log_dir / "bmv2.stdout")
            [switch] = bed.start_switches(NETNS, [spec])
            config = log_dir / "fuzz-config.yaml"
            config.write_text(config_yaml())
            env = dict(os.environ, PYTHONPATH=str(REPO / "control-plane"))
            ctl_log = log_dir / "mmaqm-ctl.log"
            with open(ctl_log, "w") as log:
                # The real controller: `run` installs, then receives the flow digests of
                # the fuzzed packets and runs its loops during the whole run.
                controller = bed.popen(NETNS, [sys.executable, "-m", "mmaqm.cli", "--config",
                                               str(config), "run" if args.controller else "install"],
                                       env=env, stdout=log, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + 120
            while "installed" not in ctl_log.read_text():
                if controller.poll() is not None and (args.controller or controller.returncode):
                    print(f"fuzz: mmaqm-ctl exited {controller.returncode}; see {ctl_log}",
                          file=sys.stderr)
                    return 2
                if time.monotonic() > deadline:
                    print(f"fuzz: mmaqm-ctl did not install within 120 s; see {ctl_log}",
                          file=sys.stderr)
                    return 2
                time.sleep(0.1)
            for port in range(1, NUM_PORTS + 1):
                bmv2_tm.set_queue_depth(THRIFT_PORT, port, TM_DEPTH_PKTS, netns=NETNS)
                bmv2_tm.set_queue_rate(THRIFT_PORT, port, SLOW_PORTS_PPS.get(port, 0), netns=NETNS)
            rc = bed.run(NETNS, [sys.executable, __file__, "--inside", "--count", args.count,
                                 "--seed", args.seed, "--rate-pps", args.rate_pps,
                                 "--report", report_path],
                         timeout_s=args.count / args.rate_pps * 3 + 600, check=False,
                         stdout=None, stderr=None).returncode
            alive = switch.poll() is None
            controller_alive = controller.poll() is None if args.controller else None
            if args.controller:
                bed.stop([controller])
    if end.exit_status is not None:
        return end.exit_status
    leftovers = lab.namespaces(NETNS)
    if not report_path.exists():
        print(f"fuzz: the run wrote no report (exit {rc}); logs in {log_dir}", file=sys.stderr)
        return 1
    report = json.loads(report_path.read_text())
    report["duration_s"] = round(time.monotonic() - started, 1)
    report["checks"]["switch alive at the end"] = alive
    if controller_alive is not None:
        report["checks"]["controller alive at the end"] = controller_alive
    report["checks"]["no namespace left"] = not leftovers
    report["passed"] = all(report["checks"].values())
    report["logs"] = str(log_dir)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print_summary(report)
    print(f"fuzz: report {args.out}")
    return 0 if report["passed"] else 1


def print_summary(r: dict) -> None:
    a = r["accounting"]
    print(f"fuzz: {r['count']} frames, seed {r['seed']} (sha256/16 {r['frames_sha256_16']}), "
          f"sent in {r['send_s']} s at {r['rate_pps_achieved']} frames/s; "
          f"run {r.get('duration_s')} s")
    print(f"  ingress discards {a['ingress_discards']} {a['discards_by_reason']}")
    print(f"  AQM arrivals {a['queue_arrivals']} (admits {a['queue_admits']}, AQM drops "
          f"{a['aqm_drops']}, departures {a['queue_departures']}); unaccounted {a['unaccounted']}")
    if a["aqm_drops"]:
        print(f"  AQM drops {a['aqm_drops_by_port_reason']}")
    e = r["egress"]
    print(f"  egress: {e['captured']} frames captured, {e['unexpected']} unexpected; valid "
          f"{e['valid_forwarded_exact']}/{e['valid_sent']} byte-exact")
    for name, ok in r["checks"].items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    if r.get("model_diff"):
        print(f"  model differences: {r['model_diff']}")


def measure_send(count: int) -> dict:
    """Frames/s of scapy's sendp against a raw socket, into a veth pair of a throwaway
    network namespace (main() runs this under `unshare -n`; needs root)."""
    from scapy.all import conf, sendp
    conf.verb = 0
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
    frames = [f for _, _, f in FrameFactory(1).frames(count)]
    subprocess.run(["ip", "link", "add", "fz0", "mtu", str(MTU), "type", "veth", "peer", "name",
                    "fz1", "mtu", str(MTU)], check=True)
    for dev in ("fz0", "fz1"):
        subprocess.run(["ip", "link", "set", dev, "up"], check=True)
    t = time.monotonic()
    for f in frames:
        sendp(f, iface="fz0", verbose=False)
    scapy_s = time.monotonic() - t
    t = time.monotonic()
    sendp(frames, iface="fz0", verbose=False)           # one socket for the whole list
    scapy_list_s = time.monotonic() - t
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind(("fz0", 0))
    t = time.monotonic()
    for f in frames:
        s.send(f)
    raw_s = time.monotonic() - t
    s.close()
    result = {"frames": count, "scapy_sendp_fps": round(count / scapy_s),
              "scapy_sendp_list_fps": round(count / scapy_list_s),
              "raw_socket_fps": round(count / raw_s)}
    print(json.dumps(result))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--rate-pps", type=float, default=DEFAULT_RATE_PPS)
    parser.add_argument("--out", type=Path, default=REPO / "build" / "fuzz" / "report.json")
    parser.add_argument("--no-controller", dest="controller", action="store_false",
                        help="only install the configuration (default: `mmaqm-ctl run` "
                             "receives the fuzzed flows' digests during the run)")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--report", help=argparse.SUPPRESS)
    parser.add_argument("--measure-send", type=int, metavar="N",
                        help="only measure scapy sendp vs a raw socket over N frames")
    args = parser.parse_args()
    if args.count < 1 or not 0 < args.rate_pps <= 1e6:
        parser.error("--count must be >= 1 and --rate-pps in (0, 1e6]")
    if args.measure_send:
        if args.inside:
            measure_send(args.measure_send)
            return 0
        return subprocess.run(["unshare", "-n", sys.executable, __file__, "--inside",
                               "--measure-send", str(args.measure_send)]).returncode
    return inside(args) if args.inside else outside(args)


if __name__ == "__main__":
    sys.exit(main())
