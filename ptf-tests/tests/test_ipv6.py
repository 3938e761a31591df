"""IPv6 (docs/ipv6.md): routing with the hop-limit decrement, classification by
the traffic class's DSCP and the next header after extension headers, every
algorithm's admission path (counters per class), RED's ECN mark in the IPv6
ECN bits, and the discards: hop limit 0/1, no route, truncated, payload length
beyond the frame, extension chain over the limit, wrong version."""

import asyncio
import ipaddress
import time

import ptf.testutils as tu
from scapy.layers.inet import TCP, UDP
from scapy.layers.inet6 import (IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,
                                IPv6ExtHdrHopByHop, IPv6ExtHdrRouting)
from scapy.layers.l2 import Ether

import test_fred
from mmaqm import bmv2_tm
from mmaqm import p4constants as C
from mmaqm.algorithms import fred
from mmaqm.algorithms.fred import flow_hash
from mmaqm.flows import ActiveFlowTable
from mmaqm_base import (CONFIG, MmaqmTest, OUT_PORT, PROFILE, QueueTest, SRC_HOST_PORT,
                        burst_packet, forwarded6, ip6, no_early_drop_max_p, packet6, predict,
                        host_mac, router_mac)

FLOW_SLOTS = C.CONSTANTS["FLOW_SLOTS"]
SLOTS_REGISTER = "MmaqmIngress.flow_report.flow_slots"


class Ipv6Test(MmaqmTest):
    def send_and_count(self, pkt: Ether, key: str) -> "object":
        before = self.counters()
        self.send(pkt)
        return self.wait_counter(
            lambda c: getattr(c.minus(before), key)).minus(before)


class Ipv6ForwardTest(Ipv6Test):
    """Each packet is routed to port 2 (2001:db8:2::/64), its hop limit 64 -> 63 and
    MACs rewritten, and counted as one arrival and one admit of its class under
    the baseline DROP_TAIL: TCP (also behind hop-by-hop + destination options, and
    behind a first fragment), tagged UDP (DSCP 46 and 34 in the traffic class),
    untagged UDP (DSCP 0, and 46 over ICMPv6: only UDP is tagged)."""

    CASES = [
        ("tcp", {}, "TCP"),
        ("tcp", {"ext": (IPv6ExtHdrHopByHop(), IPv6ExtHdrDestOpt())}, "TCP"),
        ("tcp", {"ext": (IPv6ExtHdrFragment(offset=0, m=1, id=7),)}, "TCP"),
        ("udp", {"dscp": 46}, "TAGGED"),
        ("udp", {"dscp": 34, "ext": (IPv6ExtHdrRouting(addresses=["2001:db8::9"]),)}, "TAGGED"),
        ("udp", {}, "UNTAGGED"),
        ("icmp", {"dscp": 46}, "UNTAGGED"),
    ]

    def runTest(self):
        for seq, (kind, kw, cls) in enumerate(self.CASES, 1):
            pkt = packet6(kind, seq=seq, **kw)
            before = self.counters()
            self.send(pkt)
            tu.verify_packet(self, forwarded6(pkt), OUT_PORT)
            delta = self.wait_counter(lambda c: c.minus(before).departures).minus(before)
            self.assertEqual(delta.per_class(delta.arrivals, OUT_PORT), {cls: 1}, (kind, kw))
            self.assertEqual(delta.per_class(delta.admits, OUT_PORT), {cls: 1}, (kind, kw))
            self.assertEqual(delta.discards, {}, (kind, kw))
        tu.verify_no_other_packets(self)


class Ipv6DiscardTest(Ipv6Test):
    """Each frame is discarded on the ingress port with its reason, nothing else counted."""

    def frames(self):
        good = bytes(packet6("udp"))
        cases = [
            ("hop limit 1", packet6("udp", hlim=1), "TTL_EXPIRED"),
            ("hop limit 0", packet6("udp", hlim=0), "TTL_EXPIRED"),
            ("no route", Ether(src=host_mac(SRC_HOST_PORT), dst=router_mac(SRC_HOST_PORT))
             / IPv6(src=ip6(1), dst="2001:db8:99::1") / UDP(), "NO_ROUTE"),
            ("truncated header", good[:14 + 30], "MALFORMED"),
            ("truncated udp", good[:14 + 40 + 4], "MALFORMED"),
            ("version 4 in 86dd", bytes([*good[:14], 0x40 | (good[14] & 0x0F)]) + good[15:],
             "MALFORMED"),
            ("three extension headers",
             packet6("tcp", ext=(IPv6ExtHdrHopByHop(), IPv6ExtHdrDestOpt(),
                                 IPv6ExtHdrRouting())), "IPV6_EXT_LIMIT"),
            ("truncated extension header",
             bytes(packet6("tcp", ext=(IPv6ExtHdrDestOpt(options=[]),)))[:14 + 40 + 4],
             "MALFORMED"),
        ]
        lie = bytearray(good)
        lie[18:20] = (len(good) - 54 + 1).to_bytes(2, "big")   # one byte beyond the frame
        cases.append(("payload length beyond the frame", bytes(lie), "MALFORMED"))
        return cases

    def runTest(self):
        for name, frame, reason in self.frames():
            before = self.counters()
            tu.send_packet(self, SRC_HOST_PORT, bytes(frame))
            delta = self.wait_counter(lambda c: c.minus(before).discards).minus(before)
            self.assertEqual(delta.discard_reasons(SRC_HOST_PORT), {reason: 1}, name)
            self.assertEqual((delta.arrivals, delta.admits), ({}, {}), name)
        tu.verify_no_other_packets(self)


RED_BASE = {"queue_limit_pkts": 100, "min_th_pkts": 5, "max_th_pkts": 50, "max_p": 0.1,
            "ewma_weight": 0.001953125}
POLICIES = {
    "DROP_TAIL": {"algorithm": "DROP_TAIL", "queue_limit_pkts": 100},
    "RED": {"algorithm": "RED", **RED_BASE},
    "CBT_RED_ALL": {"algorithm": "CBT_RED_ALL", **RED_BASE, "tagged_th_pkts": 10,
                    "untagged_th_pkts": 10},
    "CBT_RED_TCP_ONLY": {"algorithm": "CBT_RED_TCP_ONLY", **RED_BASE, "tagged_th_pkts": 10,
                         "untagged_th_pkts": 10},
    "DCBT": {"algorithm": "DCBT", **RED_BASE},
    "DCBT_CHIPS": {"algorithm": "DCBT_CHIPS", **RED_BASE, "chips_max_tagged_ratio": 0.5},
    "MCDT": {"algorithm": "MCDT", "queue_limit_pkts": 100},
    "FRED": {"algorithm": "FRED", **RED_BASE, "fred_minq_pkts": 2, "fred_flow_slots": 4096},
    "UPTA": {"algorithm": "UPTA", "queue_limit_pkts": 100, "upta_mode": "B"},
}


class Ipv6EveryAlgorithmTest(Ipv6Test):
    """Under each algorithm on port 2 (its own profile's only, on a profile), an
    empty queue admits IPv6 TCP, tagged UDP and untagged UDP: one arrival, one admit
    and one departure per class, forwarded unchanged but for MACs and hop limit.
    UPTA's rule for IPv6 (queue limit only) is checked by the same counts."""

    def runTest(self):
        ran = 0
        for algorithm in self.algorithms_here(*POLICIES):
            raw = POLICIES[algorithm]
            try:
                self.set_policy(OUT_PORT, raw)
            except Exception as err:           # a policy this build's validation rejects
                self.fail(f"{algorithm}: {err}")
            ran += 1
            for seq, (kind, dscp, cls) in enumerate(
                    (("tcp", 0, "TCP"), ("udp", 46, "TAGGED"), ("udp", 0, "UNTAGGED")), 1):
                pkt = packet6(kind, dscp=dscp, seq=seq)
                before = self.counters()
                self.send(pkt)
                tu.verify_packet(self, forwarded6(pkt), OUT_PORT)
                delta = self.wait_counter(lambda c: c.minus(before).departures).minus(before)
                self.assertEqual(delta.per_class(delta.arrivals, OUT_PORT), {cls: 1}, algorithm)
                self.assertEqual(delta.per_class(delta.admits, OUT_PORT), {cls: 1}, algorithm)
                self.assertEqual(delta.per_class(delta.departures, OUT_PORT), {cls: 1}, algorithm)
                self.assertEqual(delta.drops, {}, algorithm)
            self.wait_queues_empty()
        self.assertGreater(ran, 0)
        tu.verify_no_other_packets(self)


class Ipv6FlowReportTest(MmaqmTest):
    """With flow reports on, an IPv6 TCP flow, an IPv6 tagged UDP flow (each sent
    twice in one epoch) and an IPv4 flow give exactly three reports, all of the one
    flow_digest_t: the IPv6 ones (ip_version 6) with IPv6Address addresses, the
    next header and the ports, on port 2, classes TCP and TAGGED. The flow slot of
    each holds crc32 << 32 | epoch with crc32 = flow_hash of the report's key: BMv2
    folds each IPv6 address to 32 bits and hashes 13 bytes as the controller (and
    FRED's slot model) does. The active-flow table counts three flows, two IPv6
    and one IPv4."""

    async def gather_reports(self, reports: list) -> None:
        async for batch in self.sw.driver.flow_reports():
            reports.extend(batch)

    def runTest(self):
        shift = CONFIG.active_flows.flow_epoch_shift
        self.set_policy(OUT_PORT, {"algorithm": "DROP_TAIL", "queue_limit_pkts": 100},
                        flow_epoch_shift=shift)
        self.sw.enable_flow_reports()
        reports: list = []
        collector = asyncio.run_coroutine_threadsafe(self.gather_reports(reports), self.sw._loop)
        v6 = ipaddress.IPv6Address
        src, dst = v6(ip6(SRC_HOST_PORT)), v6(ip6(OUT_PORT))
        # BMv2's Thrift register read is a signed i64: a slot is readable when its
        # signature is below 2^31; each flow's first source port giving one
        tcp_sport, udp_sport = (next(p for p in range(1000, 2000)
                                     if flow_hash(src, dst, proto, p, 2000) < 2 ** 31)
                                for proto in (C.IP_PROTO_TCP, C.IP_PROTO_UDP))
        try:
            pkts = [packet6("tcp", seq=1, sport=tcp_sport),
                    packet6("udp", dscp=46, seq=2, sport=udp_sport),
                    packet6("tcp", seq=3, sport=tcp_sport),
                    packet6("udp", dscp=46, seq=4, sport=udp_sport),
                    burst_packet("untagged", seq=5, flow=0)]
            for pkt in pkts:
                self.send(pkt)
            deadline = time.monotonic() + 3.0
            while len(reports) < 3 and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.2)                   # no fourth report may follow
            got = list(reports)
            self.assertEqual(len(got), 3, got)
            by_key = {r.flow_key: r for r in got}
            tcp_key = (src, dst, C.IP_PROTO_TCP, tcp_sport, 2000)
            udp_key = (src, dst, C.IP_PROTO_UDP, udp_sport, 2000)
            self.assertEqual(by_key[tcp_key].class_id, C.CLASS_TCP)
            self.assertEqual(by_key[udp_key].class_id, C.CLASS_TAGGED)
            self.assertEqual({r.egress_port for r in got}, {OUT_PORT})
            ipv4 = [k for k in by_key if isinstance(k[0], int)]
            self.assertEqual(len(ipv4), 1)
            reads = {key: flow_hash(*key) for key in by_key
                     if flow_hash(*key) < 2 ** 31}      # the IPv4 flow's may be higher
            self.assertIn(tcp_key, reads)
            self.assertIn(udp_key, reads)
            values = bmv2_tm.register_read(
                self.thrift_port, [(SLOTS_REGISTER, sig & (FLOW_SLOTS - 1))
                                   for sig in reads.values()])
            for key, sig in reads.items():
                self.assertEqual(values[(SLOTS_REGISTER, sig & (FLOW_SLOTS - 1))],
                                 sig << 32 | (by_key[key].ingress_ts_us >> shift), key)
            table = ActiveFlowTable()
            for r in got:
                table.observe(r.egress_port, r.class_id, r.flow_key, 0.0)
            self.assertEqual(table.counts(OUT_PORT), {C.CLASS_TCP: 1, C.CLASS_TAGGED: 1,
                                                      C.CLASS_UNTAGGED: 1})
            for _ in pkts:
                self.dataplane.poll(port_number=OUT_PORT, timeout=1)
        finally:
            collector.cancel()


def burst_packet6(kind: str, seq: int, out_port: int = OUT_PORT, flow: int = 0,
                  ecn: int = 0) -> Ether:
    """burst_packet in IPv6: "tcp", "tagged" (UDP, DSCP EF in the traffic class) or
    "untagged" (UDP, DSCP 0); seq in the flow label."""
    if kind == "tcp":
        return packet6("tcp", out_port=out_port, seq=seq, sport=1000 + flow, ecn=ecn)
    return packet6("udp", out_port=out_port, seq=seq, sport=3000 + flow, ecn=ecn,
                   dscp=46 if kind == "tagged" else 0)


RED_DET = {"min_th_pkts": 2, "max_th_pkts": 4, "max_p": no_early_drop_max_p(2, 4),
           "ewma_weight": 1.0}


class Ipv6BurstTest(QueueTest):
    """Each algorithm's drop rule on a frozen burst of IPv6 packets, decisions and
    exact counter deltas per class (arrivals, admits, departures, drops by reason)
    as the reference model predicts them: the model is family-independent, so
    these are the IPv4 expectations, here met by IPv6 packets. Worked by hand:
      DROP_TAIL limit 3, 5 TCP: q = 0, 1, 2 admitted, q = 3, 3: QUEUE_LIMIT x2.
      RED weight 1 (avg = q), min_th 2, max_th 4, no early drops: q = 0..3
        admitted, then avg 4 >= max_th: RED_FORCED x2.
      CBT_RED_ALL tagged_th 1, untagged_th 1 (class averages weight 1): 4 tagged,
        then 4 untagged: each class admitted until its average passes its
        threshold, then CLASS_THRESHOLD (the model gives the exact sequence).
      DCBT / DCBT_CHIPS (shares 1.0: each class threshold = max_th 4; no tagged
        packet, so no ChIPS cut-in): 6 untagged: 4 admitted, then RED_FORCED
        (avg 4 >= max_th comes first).
      MCDT thresholds TCP 1, tagged 3, untagged 0 (test_mcdt's
        McdtClassThresholdTest): 6 tagged: 4 admitted, 2 CLASS_THRESHOLD; then
        TCP and untagged alternate: TCP 2 admitted then CLASS_THRESHOLD, untagged
        1 admitted then CLASS_THRESHOLD; a last tagged: CLASS_THRESHOLD."""

    CASES = {
        "DROP_TAIL": ({"algorithm": "DROP_TAIL", "queue_limit_pkts": 3}, ["tcp"] * 5, {}),
        "RED": ({"algorithm": "RED", "queue_limit_pkts": 100, **RED_DET}, ["tcp"] * 6, {}),
        "CBT_RED_ALL": ({"algorithm": "CBT_RED_ALL", "queue_limit_pkts": 100, **RED_DET,
                         "max_th_pkts": 50, "max_p": no_early_drop_max_p(2, 50),
                         "tagged_th_pkts": 1, "untagged_th_pkts": 1},
                        ["tagged"] * 4 + ["untagged"] * 4, {}),
        "DCBT": ({"algorithm": "DCBT", "queue_limit_pkts": 100, **RED_DET},
                 ["untagged"] * 6, {}),
        "DCBT_CHIPS": ({"algorithm": "DCBT_CHIPS", "queue_limit_pkts": 100, **RED_DET,
                        "chips_max_tagged_ratio": 0.5}, ["untagged"] * 6, {}),
        "MCDT": ({"algorithm": "MCDT", "queue_limit_pkts": 100},
                 ["tagged"] * 6 + ["tcp", "untagged"] * 3 + ["tcp", "tagged"],
                 {"mcdt_th_pkts": {C.CLASS_TCP: 1, C.CLASS_TAGGED: 3, C.CLASS_UNTAGGED: 0}}),
    }

    def runTest(self):
        ran = 0
        for algorithm in self.algorithms_here(*self.CASES):
            raw, kinds, extra = self.CASES[algorithm]
            action = self.set_policy(OUT_PORT, raw, **extra)
            expected = predict(action, kinds)
            self.assertTrue(any(d != "ADMIT" for d in expected), (algorithm, expected))
            decisions, _ = self.run_burst(action, kinds, make_packet=burst_packet6)
            self.assertEqual(decisions, expected, algorithm)
            self.wait_queues_empty()
            ran += 1
        self.assertGreater(ran, 0)


class Ipv6RedEcnTest(QueueTest):
    """RED's ecn option marks the IPv6 ECN bits (the traffic class's low two).
    Weight 1 (avg = q), min_th 2, max_th 4, no early drops, ecn on: 6 ECT(0) TCP
    packets: q = 0..3 unmarked, q = 4, 5 forced zone: marked CE and admitted
    (RED_FORCED marks 2); then one Not-ECT packet at q = 6: RED_FORCED drop."""

    def runTest(self):
        if PROFILE and PROFILE != "RED":
            self.skipTest(f"RED is not in the profile {PROFILE}")
        action = self.set_policy(OUT_PORT, {"algorithm": "RED", "queue_limit_pkts": 100,
                                            **RED_DET, "ecn": True})
        ecns = [0b10] * 6 + [0b00]
        expected = predict(action, ["tcp"] * 7, ecn_capable=[e != 0 for e in ecns])
        self.assertEqual(expected, ["ADMIT"] * 4 + ["MARK_RED_FORCED"] * 2 + ["RED_FORCED"])
        pkts = [burst_packet6("tcp", seq=i + 1, ecn=e) for i, e in enumerate(ecns)]
        before, _ = self.frozen_burst(action, OUT_PORT, pkts,
                                      burst_packet("tcp", seq=self.SACRIFICIAL_ID))
        received = {}
        deadline = time.monotonic() + len(pkts) / self.freeze_rate_pps + 3
        while len(received) < 6 and time.monotonic() < deadline:
            res = self.dataplane.poll(port_number=OUT_PORT, timeout=0.5)
            if isinstance(res, self.dataplane.PollSuccess):
                ip = Ether(res.packet)[IPv6]
                received[ip.fl] = ip.tc & 0b11
        self.target.set_queue_rate(OUT_PORT, 0)
        self.assertEqual(received, {1: 0b10, 2: 0b10, 3: 0b10, 4: 0b10, 5: 0b11, 6: 0b11})
        delta = self.wait_counter(lambda c: sum(c.minus(before).departures.values()) >= 7
                                  ).minus(before)
        self.assertEqual(delta.mark_reasons(OUT_PORT, C.CLASS_TCP), {"RED_FORCED": 2})
        self.assertEqual(delta.drop_reasons(OUT_PORT, C.CLASS_TCP), {"RED_FORCED": 1})
        tu.verify_no_other_packets(self)


class Ipv6FredMaxqStrikeTest(test_fred.FredMaxqStrikeTest):
    """test_fred's FredMaxqStrikeTest (R1, R3, R5, D2; its docstring works every
    decision out) with IPv6 TCP flows 2001:db8:1::2 -> 2001:db8:2::2: the flow
    slots are the IPv6 5-tuple's crc32 (fred.flow_slot of IPv6 addresses), the
    drops by reason, the forwarded order and the per-flow state left (none) are
    the same. The sacrificial packet stays IPv4."""

    def source_of(self, flow: str) -> tuple[str, int]:
        if flow == test_fred.SACRIFICIAL:
            return test_fred.flow_source(flow)
        return ip6(SRC_HOST_PORT), test_fred.flow_sport(flow)

    def slot_of(self, source: tuple[str, int], table_slots: int) -> int:
        src, sport = source
        if ":" not in src:
            return test_fred.flow_slot(source, table_slots)
        return fred.flow_slot(src, ip6(OUT_PORT), C.IP_PROTO_TCP, sport, test_fred.DPORT,
                              table_slots=table_slots)

    def flow_packet(self, flow: str, seq: int):
        src, sport = self.source_of(flow)
        pkt = packet6("tcp", seq=seq, sport=sport)
        pkt[TCP].dport = test_fred.DPORT
        del pkt[TCP].chksum
        return pkt
