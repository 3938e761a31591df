"""Malformed, truncated and non-IP frames: dropped and counted by reason on the
ingress port; the switch keeps forwarding afterwards."""

import ptf.testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Ether

from mmaqm_base import MmaqmTest, OUT_PORT, SRC_HOST_PORT, forwarded, packet, router_mac


def eth() -> Ether:
    return Ether(src="02:00:00:00:01:01", dst=router_mac(SRC_HOST_PORT))


class MalformedTest(MmaqmTest):
    def frames(self):
        good = bytes(packet("udp"))
        ip_start = 14
        cases = []
        # Ethernet header alone with the IPv4 ethertype: parser error (PacketTooShort).
        # (A frame shorter than 14 bytes cannot be sent: AF_PACKET refuses it.)
        cases.append(("ethernet header only", good[:ip_start], "MALFORMED"))
        # IPv4 header cut after 10 bytes: parser error.
        cases.append(("truncated ipv4", good[:ip_start + 10], "MALFORMED"))
        # UDP header cut after 4 bytes, IPv4 length consistent with the frame.
        ip = IP(bytes(packet("udp"))[ip_start:])
        short = IP(src=ip.src, dst=ip.dst, proto=17, len=24) / bytes(4)
        cases.append(("truncated udp", bytes(eth() / short), "MALFORMED"))
        # IPv4 total length larger than the frame carries.
        lie = IP(src=ip.src, dst=ip.dst, len=1000) / UDP(sport=1, dport=2) / bytes(20)
        cases.append(("length beyond frame", bytes(eth() / lie), "MALFORMED"))
        # IPv4 total length below the header size.
        tiny = IP(src=ip.src, dst=ip.dst, len=12) / UDP() / bytes(20)
        cases.append(("length below header", bytes(eth() / tiny), "MALFORMED"))
        # IHL 4 (header shorter than the minimum).
        bad_ihl = bytearray(good)
        bad_ihl[ip_start] = 0x44
        cases.append(("ihl 4", bytes(bad_ihl), "MALFORMED"))
        # Version 6 in an IPv4 ethertype.
        bad_version = bytearray(good)
        bad_version[ip_start] = 0x65
        cases.append(("version 6 in ipv4", bytes(bad_version), "MALFORMED"))
        # Wrong header checksum.
        bad_sum = bytearray(good)
        bad_sum[ip_start + 10] ^= 0xFF
        cases.append(("bad checksum", bytes(bad_sum), "BAD_CHECKSUM"))
        # IPv4 options (IHL 6): not forwarded.
        opts = IP(src=ip.src, dst=ip.dst, options=b"\x01\x01\x01\x00") / UDP() / bytes(20)
        cases.append(("ipv4 options", bytes(eth() / opts), "IPV4_OPTIONS"))
        # Non-IPv4 frames.
        cases.append(("arp", bytes(eth() / ARP(pdst="10.0.1.1")), "NOT_IPV4"))
        # IPv6 is routed (test_ipv6): 2001:db8::/64 has no route.
        cases.append(("ipv6 without a route", bytes(eth() / IPv6(dst="2001:db8::1") / UDP()),
                      "NO_ROUTE"))
        return cases

    def runTest(self):
        for name, frame, reason in self.frames():
            before = self.counters()
            tu.send_packet(self, SRC_HOST_PORT, frame)
            delta = self.wait_counter(lambda c: c.minus(before).discards).minus(before)
            self.assertEqual(delta.discard_reasons(SRC_HOST_PORT), {reason: 1}, name)
            self.assertEqual(delta.arrivals, {}, f"{name} reached the AQM")
        tu.verify_no_other_packets(self)
        # Still forwarding.
        pkt = packet("udp")
        self.send(pkt)
        tu.verify_packet(self, forwarded(pkt), OUT_PORT)
        tu.verify_no_other_packets(self)
