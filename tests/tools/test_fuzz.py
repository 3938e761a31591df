"""tools/fuzz.py: its model of the program on hand-made frames, its seeded generator,
and the short fuzz run on a real BMv2 (5 000 frames; `make fuzz` runs 100 000)."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
import fuzz  # noqa: E402

from scapy.layers.inet import IP, TCP, UDP  # noqa: E402
from scapy.layers.inet6 import (ICMPv6EchoRequest, IPv6, IPv6ExtHdrDestOpt,  # noqa: E402
                                IPv6ExtHdrFragment, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting)
from scapy.layers.l2 import ARP, Ether  # noqa: E402


def frame(ip, in_port: int = 1) -> bytes:
    return bytes(Ether(src=fuzz.mac_str(fuzz.host_mac(in_port)),
                       dst=fuzz.mac_str(fuzz.router_mac(in_port))) / ip)


GOOD = IP(src="10.0.1.2", dst="10.0.2.9", ttl=64) / UDP(sport=1, dport=2) / bytes(30)


@pytest.mark.parametrize("data, fate", [
    (frame(GOOD), fuzz.Fate(port=2, traffic_class="UNTAGGED")),
    (frame(IP(src="10.0.1.2", dst="10.0.4.1", tos=46 << 2) / UDP() / b"x"),
     fuzz.Fate(port=4, traffic_class="TAGGED")),
    (frame(IP(src="10.0.1.2", dst="10.0.3.1", tos=46 << 2) / TCP()),
     fuzz.Fate(port=3, traffic_class="TCP")),
    (frame(GOOD)[:20], fuzz.Fate("MALFORMED")),                           # IPv4 header cut
    (frame(GOOD)[:38], fuzz.Fate("MALFORMED")),                           # UDP header cut
    (frame(IP(dst="10.0.2.1", len=1000) / UDP() / bytes(8)), fuzz.Fate("MALFORMED")),
    (frame(IP(dst="10.0.2.1", len=12) / UDP() / bytes(8)), fuzz.Fate("MALFORMED")),
    (frame(IP(dst="10.0.2.1", options=b"\x01\x01\x01\x00") / UDP()), fuzz.Fate("IPV4_OPTIONS")),
    (frame(IP(dst="10.0.2.1", ttl=1) / UDP()), fuzz.Fate("TTL_EXPIRED")),
    (frame(IP(dst="10.0.2.1", ttl=0) / UDP()), fuzz.Fate("TTL_EXPIRED")),
    (frame(IP(dst="192.0.2.1") / UDP()), fuzz.Fate("NO_ROUTE")),
    (frame(ARP()), fuzz.Fate("NOT_IPV4")),
    # A non-first fragment carries no UDP header: parsed to IPv4 only, forwarded.
    (frame(IP(dst="10.0.2.1", proto=17, frag=100) / b"ab"), fuzz.Fate(port=2, traffic_class="UNTAGGED")),
])
def test_model(data, fate):
    assert fuzz.expected_fate(data) == fate


GOOD6 = IPv6(src="2001:db8:1::2", dst="2001:db8:2::9", hlim=64) / UDP(sport=1, dport=2) / bytes(30)


@pytest.mark.parametrize("data, fate", [
    (frame(GOOD6), fuzz.Fate(port=2, traffic_class="UNTAGGED")),
    (frame(IPv6(dst="2001:db8:4::1", tc=46 << 2) / UDP() / b"x"),
     fuzz.Fate(port=4, traffic_class="TAGGED")),
    (frame(IPv6(dst="2001:db8:3::1", tc=46 << 2) / ICMPv6EchoRequest()),
     fuzz.Fate(port=3, traffic_class="UNTAGGED")),                       # only UDP is tagged
    (frame(IPv6(dst="2001:db8:3::1") / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() / TCP()),
     fuzz.Fate(port=3, traffic_class="TCP")),
    (frame(IPv6(dst="2001:db8:3::1") / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt()
           / IPv6ExtHdrRouting() / TCP()), fuzz.Fate("IPV6_EXT_LIMIT")),
    # a non-first fragment: no L4 header parsed, its protocol the fragment's next header
    (frame(IPv6(dst="2001:db8:2::1") / IPv6ExtHdrFragment(offset=5, nh=6) / b"ab"),
     fuzz.Fate(port=2, traffic_class="TCP")),
    (frame(GOOD6)[:14 + 39], fuzz.Fate("MALFORMED")),                    # IPv6 header cut
    (frame(GOOD6)[:14 + 40 + 7], fuzz.Fate("MALFORMED")),                # UDP header cut
    (frame(IPv6(dst="2001:db8:2::1", plen=100) / UDP() / bytes(8)), fuzz.Fate("MALFORMED")),
    (frame(IPv6(dst="2001:db8:2::1", hlim=1) / UDP()), fuzz.Fate("TTL_EXPIRED")),
    (frame(IPv6(dst="2001:db8:2::1", hlim=0) / UDP()), fuzz.Fate("TTL_EXPIRED")),
    (frame(IPv6(dst="2001:db8:9::1") / UDP()), fuzz.Fate("NO_ROUTE")),
    (frame(IPv6(dst="2001:db8:2:1::1") / UDP()), fuzz.Fate("NO_ROUTE")),   # outside the /64
])
def test_model_ipv6(data, fate):
    assert fuzz.expected_fate(data) == fate


def test_rewrite_ipv6_decrements_the_hop_limit_only():
    data = frame(GOOD6)
    want = Ether(data)
    want[Ether].src, want[Ether].dst = "02:00:00:00:00:02", "02:00:00:00:02:01"
    want[IPv6].hlim -= 1
    assert fuzz.rewrite(data, 2) == bytes(want)


def test_model_checksum_and_version():
    good = bytearray(frame(GOOD))
    bad_sum = bytearray(good)
    bad_sum[25] ^= 1
    assert fuzz.expected_fate(bytes(bad_sum)) == fuzz.Fate("BAD_CHECKSUM")
    v6 = bytearray(good)
    v6[14] = 0x65
    assert fuzz.expected_fate(bytes(v6)) == fuzz.Fate("MALFORMED")
    ihl4 = bytearray(good)
    ihl4[14] = 0x44
    assert fuzz.expected_fate(bytes(ihl4)) == fuzz.Fate("MALFORMED")


def test_rewrite_matches_scapy():
    data = frame(GOOD)
    out = Ether(fuzz.rewrite(data, 2))
    want = Ether(data)
    want[Ether].src, want[Ether].dst = "02:00:00:00:00:02", "02:00:00:00:02:01"
    want[IP].ttl -= 1
    del want[IP].chksum
    assert bytes(out) == bytes(Ether(bytes(want)))


def test_frames_are_seeded_and_cover_every_kind():
    a = fuzz.FrameFactory(7).frames(600)
    b = fuzz.FrameFactory(7).frames(600)
    assert fuzz.frames_digest(a) == fuzz.frames_digest(b)
    assert fuzz.frames_digest(a) != fuzz.frames_digest(fuzz.FrameFactory(8).frames(600))
    assert {k for _, k, _ in a} == set(fuzz.KINDS)
    assert all(14 <= len(f) <= fuzz.MAX_FRAME for _, _, f in a)
    fates = {fuzz.expected_fate(f).discard or "ARRIVAL" for _, _, f in a}
    assert fates == {"NOT_IPV4", "MALFORMED", "BAD_CHECKSUM", "IPV4_OPTIONS", "TTL_EXPIRED",
                     "NO_ROUTE", "IPV6_EXT_LIMIT", "ARRIVAL"}


def test_frames_do_not_depend_on_the_clock():
    """scapy's ICMP timestamp fields default to the time scapy was imported (ms since
    midnight): a generator that kept them made different bytes in every process."""
    from scapy.layers.inet import ICMP
    clock = ICMP(type=13).ts_ori.to_bytes(4, "big")
    frames = fuzz.FrameFactory(3).frames(3000)
    stamped = [f for _, _, f in frames if len(f) >= 54 and f[23] == 1 and f[14] == 0x45
               and f[34] in (13, 14)]
    assert stamped
    assert not [f for f in stamped if clock in f[42:54]]


def test_frames_do_not_depend_on_the_routes(monkeypatch):
    """scapy takes a missing source address from this host's routes: the fuzz builds
    its frames inside a namespace without any, this test outside."""
    from scapy.config import conf
    a = fuzz.FrameFactory(5).frames(2000)
    monkeypatch.setattr(conf.route, "route", lambda *_a, **_k: ("lo", "198.51.100.7", "0.0.0.0"))
    monkeypatch.setattr(conf.route6, "route", lambda *_a, **_k: ("lo", "2001:db8::77", "::"))
    b = fuzz.FrameFactory(5).frames(2000)
    assert fuzz.frames_digest(a) == fuzz.frames_digest(b)


def _network_ready() -> bool:
    return (os.geteuid() == 0 and shutil.which("simple_switch_grpc") is not None
            and (REPO / "build" / "main.json").exists())


@pytest.mark.skipif(not _network_ready(), reason="needs root, BMv2 and build/main.json (make build)")
def test_short_fuzz_run_on_bmv2(tmp_path):
    """5 000 frames through a real BMv2 under the controller: every check of tools/fuzz.py."""
    out = tmp_path / "report.json"
    r = subprocess.run([sys.executable, str(REPO / "tools" / "fuzz.py"), "--count", "5000",
                        "--seed", "1", "--out", str(out)], capture_output=True, text=True,
                       timeout=600)
    assert out.exists(), r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads(out.read_text())
    failed = [name for name, ok in report["checks"].items() if not ok]
    assert not failed, (failed, report.get("model_diff"), report["accounting"], report["egress"])
    assert r.returncode == 0
    a = report["accounting"]
    assert a["ingress_discards"] + a["queue_arrivals"] == 5000
    assert report["egress"]["valid_forwarded_exact"] == report["egress"]["valid_sent"] > 0
