"""IPv4 LPM routing: MAC rewrite, TTL decrement, checksum update; misses dropped."""

import ptf.testutils as tu
from scapy.layers.inet import IP

from mmaqm_base import MmaqmTest, OUT_PORT, SRC_HOST_PORT, forwarded, packet


class ForwardRewriteTest(MmaqmTest):
    """A UDP and a TCP packet leave the routed port rewritten exactly."""

    def runTest(self):
        for out_port in (2, 3, 4):
            for kind in ("udp", "tcp"):
                pkt = packet(kind, out_port=out_port, ttl=64)
                exp = forwarded(pkt, out_port)
                self.assertEqual(exp[IP].ttl, 63)
                self.send(pkt)
                tu.verify_packet(self, exp, out_port)
        tu.verify_no_other_packets(self)


class ChecksumUpdatedTest(MmaqmTest):
    """The IPv4 checksum of the forwarded packet is the one for TTL - 1."""

    def runTest(self):
        pkt = packet("udp", ttl=17)
        before = self.counters()
        self.send(pkt)
        exp = forwarded(pkt)
        # forwarded() recomputes the checksum; it must differ from the input's.
        self.assertNotEqual(IP(bytes(pkt[IP])).chksum, IP(bytes(exp[IP])).chksum)
        tu.verify_packet(self, exp, OUT_PORT)
        tu.verify_no_other_packets(self)
        delta = self.counters().minus(before)
        self.assertEqual(delta.per_class(delta.admits, OUT_PORT), {"UNTAGGED": 1})


class RouteMissTest(MmaqmTest):
    """No route: dropped, counted as NO_ROUTE on the ingress port, nothing queued."""

    def runTest(self):
        pkt = packet("udp")
        pkt[IP].dst = "192.0.2.1"
        before = self.counters()
        self.send(pkt)
        tu.verify_no_other_packets(self)
        delta = self.wait_counter(lambda c: c.minus(before).discards).minus(before)
        self.assertEqual(delta.discard_reasons(SRC_HOST_PORT), {"NO_ROUTE": 1})
        self.assertEqual(delta.arrivals, {})


class TtlExpiredTest(MmaqmTest):
    """TTL 1 cannot be forwarded: dropped and counted; TTL 2 leaves with 1."""

    def runTest(self):
        before = self.counters()
        self.send(packet("udp", ttl=1))
        ok = packet("udp", ttl=2)
        self.send(ok)
        tu.verify_packet(self, forwarded(ok), OUT_PORT)
        tu.verify_no_other_packets(self)
        delta = self.counters().minus(before)
        self.assertEqual(delta.discard_reasons(SRC_HOST_PORT), {"TTL_EXPIRED": 1})
        self.assertEqual(delta.per_class(delta.admits, OUT_PORT), {"UNTAGGED": 1})


class LongestPrefixTest(MmaqmTest):
    """A more specific route wins over the /24."""

    def runTest(self):
        self.sw.install_route("10.0.2.128/25", 3, "02:00:00:00:00:03", "02:00:00:00:03:01")
        near = packet("udp", out_port=2, dst_host=5)
        far = packet("udp", out_port=2, dst_host=200)
        self.send(near)
        tu.verify_packet(self, forwarded(near, 2), 2)
        self.send(far)
        exp = forwarded(far, 3)  # rewritten for port 3 although addressed to 10.0.2.200
        tu.verify_packet(self, exp, 3)
        tu.verify_no_other_packets(self)
