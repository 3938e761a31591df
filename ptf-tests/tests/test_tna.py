"""The Tofino (TNA) builds' own mechanisms, on open-p4studio's Tofino model or a
Tofino switch (docs/tofino-model.md; docs/tofino.md for the design):

  TnaReportRoundTripTest           departure reports take every count back to 0
  TnaCancelPathTest                a packet counted, then dropped by the AQM, is undone
  TnaCountersAtV1modelIndexesTest  drops and discards read at v1model's indexes
  TnaFlowReportDigestTest          flow digests, the 1.024 us clock and the flow slots
  TnaIpv4ChecksumTest              the deparser's IPv4 checksum after TTL - 1
  TnaBfdChecksumTest               BFD answers and lowered probes, IPv4 and ICMP checksums
  IPv6 (docs/ipv6.md, "On Tofino"; the builds with IPv6, FRED's and UPTA's for the last):
  TnaIpv6RoutingTest               ipv6_lpm: port, MACs, hop limit - 1, v1model's indexes
  TnaIpv6HopLimitTest              hop limit 1 and 0: TTL_EXPIRED
  TnaIpv6ExtensionLimitTest        a third extension header: IPV6_EXT_LIMIT (reason 7)
  TnaIpv6TaggedTest                the traffic class's DSCP (ip_keys): TAGGED, also behind a header
  TnaIpv6FlowReportDigestTest      an IPv6 flow's digest (ip_version 6, the addresses), its slot
  TnaIpv6NotIpv4Test               FRED and UPTA builds (IPv4-only): an IPv6 frame is NOT_IPV4

They reach the switch only through P4Runtime (the driver) and self.target
(mmaqm_base.TnaTarget: port shapers and register reads over BF Runtime), never
BMv2's Thrift. Run with run_ptf.py --target tna (test params target=tna and
tna_variant=<the build the switch runs>); each test names the builds it needs and
is skipped on another. On BMv2 (the normal suite) every test is skipped: they test
what only the TNA build has (reports, cancels, its counter layout, its clock).
None of them has run here: no Tofino model is built on this machine.

Queue states are built as on BMv2 (mmaqm_base.QueueTest.frozen_burst): one packet
per slot leaves a shaped port, and the precondition is checked, so a model whose
traffic manager does not hold packets skips with PRECONDITION MISSED rather than
passing. The slots are 1 s long (the model forwards tens of packets per second).
Registers are pipe 0's (every port here is in pipe 0; the reports return there).
The IPv6 packets are test_ipv6's (mmaqm_base.packet6, forwarded6).
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
import zlib

import ptf
import ptf.testutils as tu
from ptf.base_tests import BaseTest
from scapy.layers.inet import IP
from scapy.layers.inet6 import (IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop,
                                IPv6ExtHdrRouting)
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from mmaqm import p4constants as C
from mmaqm import reconcile as R
from mmaqm.algorithms import bfd_codec, upta
from mmaqm.algorithms.bfd_codec import BfdMessage, FlowSpec
from mmaqm.algorithms.fred import flow_hash
from mmaqm.blocking import BlockingSwitch
from mmaqm.config import parse_policy
from mmaqm.driver import SwitchDriver
from mmaqm.encoding import policy_action
from mmaqm.p4rt.codec import to_finsy
from mmaqm.targets import tna
from mmaqm_oracle import upta_model

import mmaqm_tofino as tofino
from mmaqm_base import (CONFIG, OUT_PORT, PORTS, SRC_HOST_PORT, SWITCH, Counters, QueueTest,
                        TnaTarget, burst_packet, forwarded, forwarded6, host_ip, host_mac, ip6,
                        no_early_drop_max_p, packet, packet6, predict, router_mac)

SKIP_ON_BMV2 = ("needs the Tofino model or a Tofino switch (run_ptf.py --target tna, "
                "docs/tofino-model.md): it tests the TNA build's own mechanisms")
TNA_FREEZE_RATE_PPS = 1
ONE = 1 << 16                   # a packet in the occupancy registers (scaled_t)

# Each build's baseline policy for every port (a TNA program has its algorithm's
# action only, so ptf-config.yaml's DROP_TAIL fits the DROP_TAIL build alone):
# policies that drop nothing the tests send.
BASELINES = {
    "drop_tail": None,                              # ptf-config.yaml's own
    "red": {"algorithm": "RED", "queue_limit_pkts": 64, "min_th_pkts": 62, "max_th_pkts": 63,
            "max_p": no_early_drop_max_p(62, 63), "ewma_weight": 1.0},
    "upta": {"algorithm": "UPTA", "queue_limit_pkts": 64, "upta_mode": "B",
             "upta_flow_slots": tna.TNA_UPTA_SLOTS_PER_PORT, "upta_k_shift": 10,
             "upta_tagged_loss_threshold": 0.12},
    "fred": {"algorithm": "FRED", "queue_limit_pkts": 64, "min_th_pkts": 62, "max_th_pkts": 63,
             "max_p": no_early_drop_max_p(62, 63), "ewma_weight": 1.0},
}
# The builds without IPv6 (p4src/tna/main.p4 defines MMAQM_HAS_IPV6 in every other
# one; docs/ipv6.md, "On Tofino"): no IPv6 parser states and no ipv6_lpm table.
IPV4_ONLY_VARIANTS = ("fred", "upta")
IPV6_VARIANTS = tuple(v for v in BASELINES if v not in IPV4_ONLY_VARIANTS)


def baseline_routes(table_aliases) -> list:
    """ptf-config.yaml's routes that the loaded program can take: its IPv6 ones
    only when the program has ipv6_lpm (not on the FRED and UPTA builds, where
    the controller refuses them; docs/ipv6.md)."""
    return [route for route in SWITCH.routes
            if route.prefix.version == 4 or R.TABLE_ROUTES6 in table_aliases]


class TnaTest(QueueTest):
    """Connects to the TNA build named by tna_variant and restores its baseline; a
    test lists the builds it runs on in VARIANTS."""

    VARIANTS: tuple[str, ...] = tuple(BASELINES)

    def setUp(self) -> None:
        params = tu.test_params_get()
        if params.get("target", "bmv2") != "tna":
            self.skipTest(SKIP_ON_BMV2)
        variant = str(params.get("tna_variant", "drop_tail")).lower()
        if variant not in self.VARIANTS:
            self.skipTest(f"needs the {' or '.join(self.VARIANTS)} build (tna_variant=...); "
                          f"this run loads {variant}")
        BaseTest.setUp(self)
        self.variant = variant
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        self.freeze_rate_pps = TNA_FREEZE_RATE_PPS
        self.target = TnaTarget(params)
        self.thrift_port = None
        self.sw = BlockingSwitch(SwitchDriver("ptf", params["grpc_addr"],
                                              device_id=self.target.device_id,
                                              **self.target.pipeline()))
        self.wait_queues_empty()
        self.sw.clear()
        self.sw.install_classifier(CONFIG.classifier.tagged_dscp)
        # the departure reports' mirror session (and ChIPS's, none here): targets.tna
        self.sw.write([+to_finsy(s) for s in self.sw.clone_sessions(())])
        for route in baseline_routes(self.sw.table_aliases):
            self.sw.install_route(route.prefix, route.port, router_mac(route.port),
                                  route.next_hop_mac)
        self.target.set_queues(rates_pps={port: 0 for port in PORTS})
        for port in PORTS:
            self.set_policy(port, BASELINES[variant] or SWITCH.policies[port])

    def tearDown(self) -> None:
        try:
            self.target.set_queues(rates_pps={port: 0 for port in PORTS})
        finally:
            self.target.close()
            self.sw.close()
            BaseTest.tearDown(self)

    # ---- occupancy, read over BF Runtime --------------------------------------
    @staticmethod
    def departures_in(counters: Counters, port: int) -> int:
        return sum(counters.departures.get(C.class_index(port, cid), 0)
                   for cid in C.CLASSES.values())

    def port_departures(self, port: int) -> int:
        return self.departures_in(self.counters(), port)

    def occupancy(self, port: int) -> tuple[int, dict[str, int]]:
        """(departures of the port, {occupancy register: value}) with no departure
        between the two counter reads around the register reads."""
        for _ in range(3):
            departed = self.port_departures(port)
            values = {name: self.target.read_register(tofino.OCCUPANCY_REGISTER_PREFIX + name,
                                                      port)["f1"]
                      for name in self.sw.occupancy_register_names}
            if self.port_departures(port) == departed:
                return departed, values
        self.fail("departures kept coming during the register reads")

    def check_occupancy(self, port: int, fifo: list[str], departed_before: int) -> None:
        """The registers hold what is still queued: fifo (the classes queued after the
        sacrificial packet left, in order) minus the departures counted since
        departed_before (the sacrificial packet's among them)."""
        departed, values = self.occupancy(port)
        self.assertGreaterEqual(departed - departed_before, 1, "the sacrificial packet left")
        left = fifo[departed - departed_before - 1:]
        want = {"queue_pkts": len(left) * ONE, "tcp_pkts": left.count("TCP") * ONE,
                "tagged_pkts": left.count("TAGGED") * ONE,
                "untagged_pkts": left.count("UNTAGGED") * ONE}
        self.assertEqual(values, {name: want[name] for name in values},
                         f"{departed - departed_before - 1} of {len(fifo)} queued packets left")

    def departures_reach(self, port: int, count: int, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.port_departures(port) < count:
            if time.monotonic() > deadline:
                self.fail(f"port {port}: {self.port_departures(port)} departures, "
                          f"expected {count}")
            time.sleep(0.05)

    # ---- one packet, its counters ---------------------------------------------
    def check_routed6(self, pkt: Ether, cls: str) -> None:
        """pkt leaves port 2 as routed6_bytes says (and as forwarded6, test_ipv6's),
        counted as one arrival, admit and departure of class cls at v1model's
        index (port * 4 + class), no drop, no discard."""
        want = routed6_bytes(bytes(pkt))
        self.assertEqual(bytes(forwarded6(pkt)), want, "the hand-worked rewrite")
        before = self.counters()
        self.send(pkt)
        tu.verify_packet(self, Ether(want), OUT_PORT)
        delta = self.wait_counter(lambda c: c.minus(before).departures).minus(before)
        one = {C.class_index(OUT_PORT, C.CLASSES[cls]): 1}
        self.assertEqual((delta.arrivals, delta.admits, delta.departures), (one, one, one), cls)
        self.assertEqual((delta.drops, delta.discards), ({}, {}), cls)

    def check_discarded(self, frame: Ether, reason: str, index: int) -> None:
        """frame, sent from port 1, is one ingress discard of reason at index (the
        hand-worked port * 8 + reason, checked against p4constants), nothing else
        counted."""
        self.assertEqual(C.discard_index(SRC_HOST_PORT, C.DISCARD_REASONS[reason]), index)
        before = self.counters()
        self.send(frame)
        delta = self.wait_counter(lambda c: c.discards != before.discards).minus(before)
        self.assertEqual(delta.discards, {index: 1}, reason)
        self.assertEqual((delta.arrivals, delta.admits, delta.drops), ({}, {}, {}), reason)


class TnaReportRoundTripTest(TnaTest):
    """Departure reports take every count back to 0 (occupancy_tna.p4).

    DROP_TAIL, queue limit 8, port 2 frozen. The sacrificial TCP packet is counted
    at 0 and leaves; its report finds the queue empty and heals the port to 0.
    The burst, 6 untagged then 6 TCP: untagged 1-6 arrive at 0..5 and TCP 7, 8 at
    6, 7 (counted: 8 < limit only while below it); TCP 9-12 arrive at 8 and the
    limit is decided inside the arrival's RegisterAction: QUEUE_LIMIT, never
    counted, no cancel. So while frozen: queue_pkts 8, untagged_pkts 6, tcp_pkts 2,
    tagged_pkts 0 (in 2^16 units). After 3 departures (1, 2, 3: untagged, the
    queue not empty, so each report decrements and none heals): 5, 3, 2, 0. After
    all 8: 0, 0, 0, 0. The same burst then decides the same way again (8 admitted,
    4 QUEUE_LIMIT): nothing was left counted."""

    VARIANTS = ("drop_tail",)

    def runTest(self) -> None:
        action = self.set_policy(OUT_PORT, {"algorithm": "DROP_TAIL", "queue_limit_pkts": 8})
        kinds = ["untagged"] * 6 + ["tcp"] * 6
        expected = ["ADMIT"] * 8 + ["QUEUE_LIMIT"] * 4
        self.assertEqual(predict(action, kinds), expected)
        fifo = ["UNTAGGED"] * 6 + ["TCP"] * 2
        pkts = [burst_packet(k, seq=i + 1) for i, k in enumerate(kinds)]
        before, _ = self.frozen_burst(action, OUT_PORT, pkts,
                                      burst_packet("tcp", seq=self.SACRIFICIAL_ID))
        departed_before = self.departures_in(before, OUT_PORT)    # of the attempt judged
        self.check_occupancy(OUT_PORT, fifo, departed_before)
        self.assertEqual(self.receive_ids(OUT_PORT, 3, timeout_s=3 / self.freeze_rate_pps + 3),
                         [1, 2, 3])
        self.departures_reach(OUT_PORT, departed_before + 1 + 3)
        self.check_occupancy(OUT_PORT, fifo, departed_before)
        self.assertEqual(self.collect(OUT_PORT, 5), [4, 5, 6, 7, 8])
        tu.verify_no_other_packets(self)
        self.departures_reach(OUT_PORT, departed_before + 1 + 8)
        self.check_occupancy(OUT_PORT, fifo, departed_before)
        self.run_burst(action, kinds, expected=expected)


class TnaCancelPathTest(TnaTest):
    """A packet that occupancy counted and the AQM then dropped is resubmitted as a
    CANCEL that undoes its +1 (main.p4, occupancy_tna.p4).

    RED, queue limit 100, min_th 2, max_th 6, slope 1 (p_b 0: no early drop),
    weight 1. TCP 1-6 arrive at 0..5 (average = the sample: v1model's weight 1, and
    the TNA filter's default sample mode) and are queued. TCP 7-12 each arrive at
    6: below the limit, so counted (7), then RED_FORCED (6 >= max_th), then the
    cancel takes queue_pkts and tcp_pkts back to 6. Expected while frozen:
    queue_pkts = tcp_pkts = 6 (without the cancel: 12); 6 RED_FORCED drops of
    class TCP; after the drain, 0."""

    VARIANTS = ("red",)

    def runTest(self) -> None:
        action = self.set_policy(OUT_PORT, {
            "algorithm": "RED", "queue_limit_pkts": 100, "min_th_pkts": 2, "max_th_pkts": 6,
            "max_p": no_early_drop_max_p(2, 6), "ewma_weight": 1.0})
        kinds = ["tcp"] * 12
        expected = ["ADMIT"] * 6 + ["RED_FORCED"] * 6
        self.assertEqual(predict(action, kinds), expected)
        pkts = [burst_packet(k, seq=i + 1) for i, k in enumerate(kinds)]
        before, _ = self.frozen_burst(action, OUT_PORT, pkts,
                                      burst_packet("tcp", seq=self.SACRIFICIAL_ID))
        departed_before = self.departures_in(before, OUT_PORT)    # of the attempt judged
        self.check_occupancy(OUT_PORT, ["TCP"] * 6, departed_before)
        delta = self.counters().minus(before)
        self.assertEqual(delta.drop_reasons(OUT_PORT, C.CLASSES["TCP"]), {"RED_FORCED": 6})
        self.assertEqual(self.collect(OUT_PORT, 6), [1, 2, 3, 4, 5, 6])
        tu.verify_no_other_packets(self)
        self.departures_reach(OUT_PORT, departed_before + 1 + 6)
        self.check_occupancy(OUT_PORT, ["TCP"] * 6, departed_before)


class TnaCountersAtV1modelIndexesTest(TnaTest):
    """The drop counters (TNA index reason * 256 + class_index) are read at
    v1model's indexes (class_index * NUM_DROP_REASONS (10) + reason), and the
    ingress discards
    (port * 8 + reason on both) at theirs.

    DROP_TAIL, queue limit 2, port 2 frozen: TCP and untagged arrive at 0 and 1
    and are queued; untagged, tagged, TCP, tagged arrive at 2: QUEUE_LIMIT. The
    drops, every index: (port 2, TCP, QUEUE_LIMIT) 1, (2, TAGGED, QUEUE_LIMIT) 2,
    (2, UNTAGGED, QUEUE_LIMIT) 1, i.e. v1model indexes 80, 90, 100, which the
    switch keeps at 8, 9, 10. A UDP packet with TTL 1 from port 1: one
    TTL_EXPIRED discard at index 1 * 8 + 4 = 12, nothing forwarded."""

    VARIANTS = ("drop_tail",)

    def runTest(self) -> None:
        action = self.set_policy(OUT_PORT, {"algorithm": "DROP_TAIL", "queue_limit_pkts": 2})
        kinds = ["tcp", "untagged", "untagged", "tagged", "tcp", "tagged"]
        expected = ["ADMIT", "ADMIT"] + ["QUEUE_LIMIT"] * 4
        self.assertEqual(predict(action, kinds), expected)
        _, delta = self.run_burst(action, kinds, expected=expected)
        ql = C.DROP_REASONS["QUEUE_LIMIT"]
        want = {C.drop_index(OUT_PORT, C.CLASSES["TCP"], ql): 1,
                C.drop_index(OUT_PORT, C.CLASSES["TAGGED"], ql): 2,
                C.drop_index(OUT_PORT, C.CLASSES["UNTAGGED"], ql): 1}
        self.assertEqual(sorted(want), [80, 90, 100])
        self.assertEqual(sorted(tna.tna_drop_counter_index(i) for i in want), [8, 9, 10])
        self.assertEqual(delta.drops, want)

        before = self.counters()
        self.send(packet("udp", ttl=1))
        after = self.wait_counter(lambda c: c.discards != before.discards)
        self.assertEqual(after.minus(before).discards,
                         {C.discard_index(SRC_HOST_PORT, C.DISCARD_REASONS["TTL_EXPIRED"]): 1})
        self.assertEqual(C.discard_index(SRC_HOST_PORT, C.DISCARD_REASONS["TTL_EXPIRED"]), 12)
        tu.verify_no_other_packets(self)


def raw_clock_values(ts_us: int) -> list[int]:
    """The TNA clock values (1.024 us units) whose report the driver gives as ts_us
    (targets.tna.tna_ts_to_us rounds down: one or two values)."""
    r0 = ts_us * 1000 // tna.TNA_TS_UNIT_NS
    return [r for r in range(r0, r0 + 3) if tna.tna_ts_to_us(r) == ts_us]


class FlowReportCollector:
    """Gathers the driver's flow reports (a TnaTest mixin)."""

    async def gather(self, reports: list) -> None:
        async for batch in self.sw.driver.flow_reports():
            reports.extend(batch)

    def wait_reports(self, reports: list, count: int, timeout_s: float) -> list:
        deadline = time.monotonic() + timeout_s
        while len(reports) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return list(reports)


class TnaFlowReportDigestTest(FlowReportCollector, TnaTest):
    """Flow reports (flow_report_tna.p4): the digest, the TNA clock in 1.024 us
    units, and the {signature, epoch} slots.

    DROP_TAIL, flow reports with flow_epoch_shift k (ptf-config.yaml: 17, an epoch
    of 2^17 * 1.024 us = 134 ms). Flow 0 and flow 1 (untagged UDP to port 2):
    two reports, naming port 2, class UNTAGGED, the two flow keys. Flow 0 again,
    once every 100 ms (at most 6 s): no report within its epoch, then a third report, of flow 0,
    whose epoch (its clock >> k) is the first report's epoch + 1 or more (the
    switch's clock, not the wall clock, decides when; a model's clock may be
    slower). Exact: each flow's slot (the CRC32 signature's low 16 bits) holds
    {signature: the CRC32 of its 13 bytes (zlib's, as on v1model), epoch: the
    clock of its last report >> k}, the clock recovered from the report's us
    (the driver's scaling by 1.024; unscaled, the epoch would differ)."""

    VARIANTS = ("drop_tail",)
    MAX_SENT = 62          # 6 s of flow 0 at one packet per 100 ms

    def runTest(self) -> None:
        shift = CONFIG.active_flows.flow_epoch_shift
        self.set_policy(OUT_PORT, {"algorithm": "DROP_TAIL", "queue_limit_pkts": 100},
                        flow_epoch_shift=shift)
        self.sw.enable_flow_reports()
        reports: list = []
        collector = asyncio.run_coroutine_threadsafe(self.gather(reports), self.sw._loop)
        sent = 0
        try:
            self.send(burst_packet("untagged", seq=1, flow=0))
            self.send(burst_packet("untagged", seq=2, flow=1))
            sent = 2
            first = self.wait_reports(reports, 2, timeout_s=5)
            self.assertEqual(len(first), 2, f"expected 2 reports, got {first}")
            self.assertEqual({r.egress_port for r in first}, {OUT_PORT})
            self.assertEqual({r.class_id for r in first}, {C.CLASSES["UNTAGGED"]})
            while len(reports) < 3 and sent < self.MAX_SENT:   # under ptf's queue of 100
                sent += 1
                self.send(burst_packet("untagged", seq=sent, flow=0))
                time.sleep(0.1)
            got = list(reports)
            self.assertEqual(len(got), 3, f"expected 3 reports, got {got}")
            self.assertEqual(got[2].flow_key, got[0].flow_key)
            self.assertNotEqual(got[0].flow_key, got[1].flow_key)
            epochs = [{r >> shift for r in raw_clock_values(rep.ingress_ts_us)} for rep in got]
            self.assertGreater(min(epochs[2]), max(epochs[0]), "a new epoch, a new report")
            last = {rep.flow_key: rep for rep in got}
            for key, rep in last.items():
                sig = flow_hash(*key)
                slot = self.target.read_register(tofino.FLOW_SLOTS_REGISTER,
                                                 sig & (C.CONSTANTS["FLOW_SLOTS"] - 1))
                self.assertEqual(slot["signature"], sig, key)
                self.assertIn(slot["epoch"],
                              {r >> shift for r in raw_clock_values(rep.ingress_ts_us)}, key)
        finally:
            collector.cancel()
        self.assertEqual(len(self.receive_ids(OUT_PORT, sent, timeout_s=5)), sent)
        tu.verify_no_other_packets(self)


def ones_complement_sum(data: bytes) -> int:
    total = 0
    for i in range(0, len(data), 2):
        total += int.from_bytes(data[i:i + 2].ljust(2, b"\0"), "big")
        total = (total & 0xFFFF) + (total >> 16)
    return total


class TnaIpv4ChecksumTest(TnaTest):
    """The ingress deparser's Checksum extern writes the IPv4 checksum of the
    routed header (main.p4). TCP TTL 64, UDP TTL 2, ICMP TTL 17 from port 1 to
    port 2: each leaves with TTL - 1, MACs rewritten, and a header whose
    ones-complement sum is 0xFFFF; the frame is compared byte for byte with
    scapy's recomputation. By hand, for TTL 64 -> 63 (RFC 1624, eq. 3):
    HC' = ~(~HC + ~m + m'), m = ttl << 8 | proto: the TTL byte falls by 1, so the
    checksum rises by 0x0100 (end-around carry), which the test checks too."""

    VARIANTS = ("drop_tail", "red", "upta")

    def runTest(self) -> None:
        for i, (kind, ttl) in enumerate((("tcp", 64), ("udp", 2), ("icmp", 17))):
            pkt = packet(kind, ttl=ttl, seq=i + 1)
            want = forwarded(pkt)
            self.assertEqual(ones_complement_sum(bytes(want[IP])[:20]), 0xFFFF)
            sent_sum = Ether(bytes(pkt))[IP].chksum
            hand = (sent_sum + 0x0100) & 0xFFFF
            hand = (hand + ((sent_sum + 0x0100) >> 16)) & 0xFFFF
            self.assertEqual(want[IP].chksum, hand, f"RFC 1624 by hand, {kind}")
            self.send(pkt)
            tu.verify_packet(self, want, OUT_PORT)
        tu.verify_no_other_packets(self)


# BFD (upta_tna.p4): this router's address and three flow specs, as test_bfd.py
BFD_LOCAL = "10.255.0.1"
BFD_DOMAIN_PORT = 3
BFD_FS_U, BFD_FS_I = 2700, 2900
BFD_SPECS = (FlowSpec(0x0A000102, 0x0A000202, 1000, 2000, 17, False),
             FlowSpec(0x0A000103, 0x0A000202, 1001, 2000, 17, True),
             FlowSpec(0x0A000104, 0x0A000202, 1002, 2000, 6, True))


def bfd_frame(in_port: int, dst: str, icmp: bytes, ident: int) -> Ether:
    return (Ether(src=host_mac(in_port), dst=router_mac(in_port))
            / IP(src=host_ip(in_port, 9), dst=dst, ttl=64, id=ident, proto=C.IP_PROTO_ICMP)
            / Raw(icmp))


class TnaBfdChecksumTest(TnaTest):
    """UPTA build, BFD (Wu & Hassan 2002 §5.3): the deparser recomputes the ICMP
    checksum of an answer and of a lowered probe, and the IPv4 checksum of both
    (upta_tna.p4; v1model's expectations, test_bfd.py).

    1. A probe to 10.255.0.1 from domain port 3, fields (2 700, 2 800), 3 specs:
       one answer out of port 3, 10.255.0.1 -> 10.0.3.9, TTL 63, ICMP type 21 with
       the probe's identifier, sequence and fields and no specs (36 bytes of
       IPv4); the model's (BfdEndpoint) bytes, whose ICMP sum is 0xFFFF.
    2. Port 2 under UPTA with FS_U 2 700, FS_I 2 900: a probe (5 000, 5 000) from
       port 3 to a host behind port 2 leaves port 2 with U = 2 700, I = 2 900
       (eqs. 25-26), its ICMP checksum the full recomputation, TTL 63."""

    VARIANTS = ("upta",)

    def setUp(self) -> None:
        super().setUp()
        self.sw.install_upta_local_addr(BFD_LOCAL)

    def runTest(self) -> None:
        probe = BfdMessage(bfd_codec.ICMP_QOS_PROBE, 2, 44, 2700, 2800, BFD_SPECS).pack()
        report = upta_model.BfdEndpoint().answer_probe(probe, from_edge_port=False)
        self.assertEqual(report, BfdMessage(bfd_codec.ICMP_QOS_REPORT, 2, 44, 2700, 2800).pack())
        self.assertEqual(ones_complement_sum(report), 0xFFFF)
        self.send(bfd_frame(BFD_DOMAIN_PORT, BFD_LOCAL, probe, ident=3), BFD_DOMAIN_PORT)
        want = (Ether(src=router_mac(BFD_DOMAIN_PORT), dst=host_mac(BFD_DOMAIN_PORT))
                / IP(src=BFD_LOCAL, dst=host_ip(BFD_DOMAIN_PORT, 9), ttl=63, id=3,
                     proto=C.IP_PROTO_ICMP) / Raw(report))
        tu.verify_packet(self, Ether(bytes(want)), BFD_DOMAIN_PORT)

        raw = dict(BASELINES["upta"])
        action = policy_action(parse_policy(raw), policy_epoch=self.sw.next_policy_epoch(OUT_PORT),
                               flow_epoch_shift=0).with_params(
                                   **upta.share_params(BFD_FS_I, BFD_FS_U))
        self.sw.write_port_policy(OUT_PORT, action)
        probe = BfdMessage(bfd_codec.ICMP_QOS_PROBE, 5, 9, 5000, 5000, BFD_SPECS).pack()
        lowered = upta_model.lower_probe(probe, BFD_FS_U, BFD_FS_I)
        self.assertEqual(lowered, BfdMessage(bfd_codec.ICMP_QOS_PROBE, 5, 9, BFD_FS_U, BFD_FS_I,
                                             BFD_SPECS).pack())
        self.assertEqual(ones_complement_sum(lowered), 0xFFFF)
        frame = bfd_frame(BFD_DOMAIN_PORT, host_ip(OUT_PORT, 2), probe, ident=4)
        self.send(frame, BFD_DOMAIN_PORT)
        want = (Ether(src=router_mac(OUT_PORT), dst=host_mac(OUT_PORT))
                / IP(src=host_ip(BFD_DOMAIN_PORT, 9), dst=host_ip(OUT_PORT, 2), ttl=63, id=4,
                     proto=C.IP_PROTO_ICMP) / Raw(lowered))
        tu.verify_packet(self, Ether(bytes(want)), OUT_PORT)
        tu.verify_no_other_packets(self)


# ---------------------------------------------------------------- IPv6
# docs/ipv6.md, "On Tofino". Packets from the host behind port 1 (2001:db8:1::2)
# to the one behind port 2 (2001:db8:2::2), which ptf-config.yaml's
# 2001:db8:2::/64 routes to port 2; packet6 builds them, as for test_ipv6 (its flow
# label and payload carry seq; destination port DPORT6).
DPORT6 = 2000
IPV6_HOP_LIMIT_OFFSET = 14 + 7      # byte 7 of the fixed header (RFC 8200 §3)


def mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def next_hop6(out_port: int) -> str:
    """The next-hop MAC of ptf-config.yaml's IPv6 route to out_port."""
    [mac] = [r.next_hop_mac for r in SWITCH.routes if r.prefix.version == 6 and r.port == out_port]
    return mac


def routed6_bytes(frame: bytes, out_port: int = OUT_PORT) -> bytes:
    """What route6 makes of an IPv6 frame, by hand: destination MAC the route's
    next hop, source MAC the router's on out_port, the hop limit one less; every
    other byte as sent (IPv6 has no header checksum, and the hop limit is outside
    the upper-layer checksums' pseudo-header, RFC 8200 §8.1)."""
    out = bytearray(frame)
    out[0:6] = mac_bytes(next_hop6(out_port))
    out[6:12] = mac_bytes(router_mac(out_port))
    out[IPV6_HOP_LIMIT_OFFSET] -= 1
    return bytes(out)


def tna_flow_signature6(src, dst, protocol: int, src_port: int, dst_port: int) -> int:
    """flow_report_tna.p4's IPv6 flow signature: the CRC32 (zlib's, as for IPv4)
    of the 37 bytes src(16) dst(16) protocol(1) src_port(2) dst_port(2), with the
    full addresses (v1model hashes them folded to 4 bytes: fred.flow_key_bytes)."""
    key = (ipaddress.IPv6Address(src).packed + ipaddress.IPv6Address(dst).packed
           + protocol.to_bytes(1, "big") + src_port.to_bytes(2, "big")
           + dst_port.to_bytes(2, "big"))
    return zlib.crc32(key)


class TnaIpv6RoutingTest(TnaTest):
    """IPv6 routed by ipv6_lpm (routing.p4's route6) and counted at v1model's
    indexes, on the IPv6 builds.

    2001:db8:2::/64 -> port 2, next hop 02:00:00:00:02:01; the router's MAC on
    port 2 is 02:00:00:00:00:02. From 2001:db8:1::2 on port 1 to 2001:db8:2::2,
    under the build's baseline (which drops nothing here):
      1. TCP, hop limit 64, no extension header: class TCP;
      2. UDP, traffic class 0, hop limit 2 (the lowest that is forwarded):
         class UNTAGGED;
      3. TCP behind hop-by-hop and destination options (8 bytes each, Hdr Ext
         Len 0): the parser's depth limit of 2; ip_keys' ipv6_keys2 takes the
         protocol from the second header's next header: class TCP.
    Each leaves port 2 byte for byte as sent, except bytes 0-11 (the MACs
    above) and byte 21, the hop limit: 63, 1, 63 (routed6_bytes; test_ipv6's
    forwarded6 agrees). Counters: one arrival, one admit and one departure at
    port * 4 + class: TCP 2 * 4 + 0 = 8, UNTAGGED 2 * 4 + 2 = 10; no drop,
    no discard."""

    VARIANTS = IPV6_VARIANTS

    @staticmethod
    def frames() -> list[tuple[Ether, str]]:
        return [(packet6("tcp", seq=1), "TCP"),
                (packet6("udp", hlim=2, seq=2), "UNTAGGED"),
                (packet6("tcp", ext=(IPv6ExtHdrHopByHop(), IPv6ExtHdrDestOpt()), seq=3), "TCP")]

    def runTest(self) -> None:
        self.assertEqual([C.class_index(OUT_PORT, C.CLASSES[c]) for c in ("TCP", "UNTAGGED")],
                         [8, 10])
        for pkt, cls in self.frames():
            self.check_routed6(pkt, cls)
        tu.verify_no_other_packets(self)


class TnaIpv6HopLimitTest(TnaTest):
    """Hop limit 1, then 0 (the parser's look-ahead at byte 7 of the fixed
    header, state ipv6_hop_expired; RFC 8200 §3: a packet is discarded if its
    hop limit was 0 or is decremented to 0): UDP to 2001:db8:2::2, which
    ipv6_lpm routes, so the discard is the hop limit's and not NO_ROUTE's. Each:
    one TTL_EXPIRED discard on port 1 at v1model's index 1 * 8 + 4 = 12, no
    arrival, nothing forwarded."""

    VARIANTS = IPV6_VARIANTS

    @staticmethod
    def frames() -> list[Ether]:
        return [packet6("udp", hlim=1, seq=1), packet6("udp", hlim=0, seq=2)]

    def runTest(self) -> None:
        for frame in self.frames():
            self.check_discarded(frame, "TTL_EXPIRED", 12)
        tu.verify_no_other_packets(self)


class TnaIpv6ExtensionLimitTest(TnaTest):
    """A third skippable extension header is beyond the parser's depth of 2
    (state ipv6_extension_limit; ingress_checks' first entry): TCP to
    2001:db8:2::2 behind
      1. hop-by-hop, destination options, routing (8 bytes each, Hdr Ext Len 0);
      2. hop-by-hop, routing, a first fragment (offset 0, M 1, id 7).
    Each: one IPV6_EXT_LIMIT discard (reason 7) on port 1 at 1 * 8 + 7 = 15, no
    arrival, nothing forwarded. (Two headers are routed: TnaIpv6RoutingTest.)"""

    VARIANTS = IPV6_VARIANTS

    @staticmethod
    def frames() -> list[Ether]:
        return [packet6("tcp", seq=1, ext=(IPv6ExtHdrHopByHop(), IPv6ExtHdrDestOpt(),
                                           IPv6ExtHdrRouting())),
                packet6("tcp", seq=2, ext=(IPv6ExtHdrHopByHop(), IPv6ExtHdrRouting(),
                                           IPv6ExtHdrFragment(offset=0, m=1, id=7)))]

    def runTest(self) -> None:
        for frame in self.frames():
            self.check_discarded(frame, "IPV6_EXT_LIMIT", 15)
        tu.verify_no_other_packets(self)


class TnaIpv6TaggedTest(TnaTest):
    """The classifier's IPv6 keys, copied by the stage-0 table ip_keys: the DSCP
    (the traffic class's upper six bits) and the protocol after the extension
    headers. ptf-config.yaml tags DSCP 46 and 34, UDP only (cbt §3). From port 1
    to 2001:db8:2::2, hop limit 64:
      1. UDP, traffic class 0xB8 (DSCP 46, ECN 0): TAGGED, index 2 * 4 + 1 = 9;
      2. UDP behind a routing header with one address (Hdr Ext Len 2: 24 bytes,
         a rest of 16, the most the TNA parser takes), traffic class 0x88 (DSCP
         34): TAGGED (ipv6_keys1), index 9;
      3. ICMPv6 echo request, traffic class 0xB8: UNTAGGED (not UDP), index 10.
    Each is routed as in TnaIpv6RoutingTest (hop limit 63) and counted once
    (arrival, admit, departure) at its index."""

    VARIANTS = IPV6_VARIANTS

    @staticmethod
    def frames() -> list[tuple[Ether, str]]:
        return [(packet6("udp", dscp=46, seq=1), "TAGGED"),
                (packet6("udp", dscp=34, seq=2,
                         ext=(IPv6ExtHdrRouting(addresses=["2001:db8::9"]),)), "TAGGED"),
                (packet6("icmp", dscp=46, seq=3), "UNTAGGED")]

    def runTest(self) -> None:
        self.assertEqual([C.class_index(OUT_PORT, C.CLASSES[c]) for c in ("TAGGED", "UNTAGGED")],
                         [9, 10])
        self.assertTrue({46, 34} <= set(CONFIG.classifier.tagged_dscp))
        for pkt, cls in self.frames():
            self.check_routed6(pkt, cls)
        tu.verify_no_other_packets(self)


# the digest test's two flows: (kind, DSCP, source port, class)
DIGEST_FLOWS6 = (("tcp", 0, 1000, "TCP"), ("udp", 46, 3000, "TAGGED"))


class TnaIpv6FlowReportDigestTest(FlowReportCollector, TnaTest):
    """An IPv6 flow's report (flow_report_tna.p4): the one digest with
    ip_version 6 and the 128-bit addresses, and its {signature, epoch} slot.

    DROP_TAIL, flow reports with flow_epoch_shift k = 17 (ptf-config.yaml). One
    packet each of two flows 2001:db8:1::2 -> 2001:db8:2::2: TCP 1000 -> 2000,
    and UDP 3000 -> 2000 with DSCP 46. Exactly two reports, naming port 2, class
    TCP and TAGGED, and the keys (IPv6Address(2001:db8:1::2),
    IPv6Address(2001:db8:2::2), 6 or 17, source port, 2000): the driver gives
    IPv6Address addresses only for ip_version 6 (4 gives integers, and an
    IPv4 report with an address above 32 bits, like any other version, is
    dropped as malformed, which the test counts too). Each flow's slot
    (signature & 0xFFFF; the two differ) holds {signature: the CRC32 of the 37
    bytes of tna_flow_signature6, not v1model's folded one; epoch: the clock of
    its report >> k}. Both packets leave port 2, routed."""

    VARIANTS = ("drop_tail",)

    @staticmethod
    def frames() -> list[Ether]:
        return [packet6(kind, dscp=dscp, sport=sport, seq=i + 1)
                for i, (kind, dscp, sport, _) in enumerate(DIGEST_FLOWS6)]

    @staticmethod
    def flow_keys() -> dict[tuple, str]:
        """{the flow key the driver reports: class} of each flow."""
        src = ipaddress.IPv6Address(ip6(SRC_HOST_PORT))
        dst = ipaddress.IPv6Address(ip6(OUT_PORT))
        proto = {"tcp": C.IP_PROTO_TCP, "udp": C.IP_PROTO_UDP}
        return {(src, dst, proto[kind], sport, DPORT6): cls
                for kind, _, sport, cls in DIGEST_FLOWS6}

    def runTest(self) -> None:
        shift = CONFIG.active_flows.flow_epoch_shift
        self.set_policy(OUT_PORT, {"algorithm": "DROP_TAIL", "queue_limit_pkts": 100},
                        flow_epoch_shift=shift)
        self.sw.enable_flow_reports()
        keys = self.flow_keys()
        slots = {key: tna_flow_signature6(*key) & (C.CONSTANTS["FLOW_SLOTS"] - 1) for key in keys}
        self.assertEqual(len(set(slots.values())), len(keys), "one slot each")
        malformed_before = self.sw.malformed.total
        reports: list = []
        collector = asyncio.run_coroutine_threadsafe(self.gather(reports), self.sw._loop)
        try:
            for pkt in self.frames():
                self.send(pkt)
            self.wait_reports(reports, len(keys), timeout_s=5)
            time.sleep(0.5)                       # no third report may follow
            got = list(reports)
            self.assertEqual(len(got), len(keys), f"expected {len(keys)} reports, got {got}")
            by_key = {r.flow_key: r for r in got}
            self.assertEqual(set(by_key), set(keys))
            for key, cls in keys.items():
                rep = by_key[key]
                self.assertIsInstance(rep.flow_key[0], ipaddress.IPv6Address, "ip_version 6")
                self.assertEqual((rep.egress_port, rep.class_id), (OUT_PORT, C.CLASSES[cls]), key)
                slot = self.target.read_register(tofino.FLOW_SLOTS_REGISTER, slots[key])
                self.assertEqual(slot["signature"], tna_flow_signature6(*key), key)
                self.assertIn(slot["epoch"],
                              {r >> shift for r in raw_clock_values(rep.ingress_ts_us)}, key)
            self.assertEqual(self.sw.malformed.total, malformed_before, "malformed reports")
        finally:
            collector.cancel()
        for pkt in self.frames():
            tu.verify_packet(self, Ether(routed6_bytes(bytes(pkt))), OUT_PORT)
        tu.verify_no_other_packets(self)


class TnaIpv6NotIpv4Test(TnaTest):
    """The FRED and UPTA builds are IPv4-only (no IPv6 parser states, no
    ipv6_lpm; docs/ipv6.md): the frames the IPv6 builds route, UDP and TCP from
    2001:db8:1::2 to 2001:db8:2::2 with hop limit 64, are each one NOT_IPV4
    discard on port 1 at 1 * 8 + 0 = 8 (ingress_checks' last entry), no arrival,
    nothing forwarded. The setup wrote the IPv4 routes only (baseline_routes)."""

    VARIANTS = IPV4_ONLY_VARIANTS

    @staticmethod
    def frames() -> list[Ether]:
        return [packet6("udp", seq=1), packet6("tcp", seq=2)]

    def runTest(self) -> None:
        self.assertNotIn(R.TABLE_ROUTES6, self.sw.table_aliases, "an IPv4-only build")
        for frame in self.frames():
            self.check_discarded(frame, "NOT_IPV4", 8)
        tu.verify_no_other_packets(self)
