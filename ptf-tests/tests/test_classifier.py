"""Classification (cbt §3): TCP, tagged UDP (configured DSCPs), untagged (all else)."""

import ptf.testutils as tu

from mmaqm_base import MmaqmTest, OUT_PORT, forwarded, packet


class ClassifyTest(MmaqmTest):
    """Each packet is forwarded and counted in exactly its class."""

    CASES = [
        ("tcp", 0, "TCP"),
        ("tcp", 46, "TCP"),        # TCP stays TCP whatever its DSCP
        ("udp", 46, "TAGGED"),     # EF
        ("udp", 34, "TAGGED"),     # AF41
        ("udp", 0, "UNTAGGED"),
        ("udp", 10, "UNTAGGED"),   # a DSCP that is not configured as tagged
        ("icmp", 46, "UNTAGGED"),  # other IP protocols are untagged
        ("gre", 0, "UNTAGGED"),
    ]

    def runTest(self):
        for i, (kind, dscp, cls) in enumerate(self.CASES):
            before = self.counters()
            pkt = packet(kind, dscp=dscp, seq=i)
            self.send(pkt)
            tu.verify_packet(self, forwarded(pkt), OUT_PORT)
            delta = self.counters().minus(before)
            self.assertEqual(delta.per_class(delta.arrivals, OUT_PORT), {cls: 1},
                             f"{kind} dscp {dscp}")
            self.assertEqual(delta.per_class(delta.admits, OUT_PORT), {cls: 1})
        tu.verify_no_other_packets(self)


class ClassifierIsConfigTest(MmaqmTest):
    """Tagged DSCPs come from the controller: re-installing with [10] moves 46 out."""

    def runTest(self):
        self.sw.clear()
        self.sw.install_classifier([10])
        self.sw.install_route("10.0.2.0/24", 2, "02:00:00:00:00:02", "02:00:00:00:02:01")
        self.set_policy(2, {"algorithm": "DROP_TAIL", "queue_limit_pkts": 64})
        before = self.counters()
        for i, dscp in enumerate((46, 10)):
            pkt = packet("udp", dscp=dscp, seq=i)
            self.send(pkt)
            tu.verify_packet(self, forwarded(pkt), OUT_PORT)
        tu.verify_no_other_packets(self)
        delta = self.counters().minus(before)
        self.assertEqual(delta.per_class(delta.arrivals, OUT_PORT), {"TAGGED": 1, "UNTAGGED": 1})
