"""BFD, Bandwidth Fairshare Discovery (Wu & Hassan 2002 §5.3, Fig. 8; upta.p4,
docs/upta-plan.md §1.6-1.7): QoS Probes (ICMP 20) and Reports (ICMP 21) on the
real switch, against the test oracle's mmaqm_oracle.upta_model (lower_probe,
report_for, BfdEndpoint, UptaPortModel).

Setting: the switch owns 10.255.0.1 (upta_local_addr); port 1 is an edge port
(its host is outside the UPTA domain), port 4 the controller's port (upta_cpu:
the only origin of probes), ports 2 and 3 domain ports. Port 2 runs `upta`
(mode B unless stated) with FS_U 2 700, FS_I 2 900 (bytes per K * 16). Every
expected frame is built with scapy around the model's ICMP bytes and compared
byte for byte (so every ICMP and IPv4 checksum is checked); every test counts
the upta_events deltas and ends with verify_no_other_packets.
"""

from __future__ import annotations

import asyncio
import time

import ptf.testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from mmaqm import bmv2_tm
from mmaqm import p4constants as C
from mmaqm.algorithms import bfd_codec
from mmaqm.algorithms import upta
from mmaqm.algorithms import upta_control
from mmaqm.algorithms.bfd_codec import BfdMessage, FlowSpec
from mmaqm.config import parse_policy
from mmaqm.encoding import PolicyAction, policy_action
from mmaqm_oracle import upta_model

from mmaqm_base import CONFIG, MmaqmTest, host_ip, host_mac, router_mac

LOCAL = "10.255.0.1"
EDGE_PORT, UPTA_PORT, DOMAIN_PORT, CPU_PORT = 1, 2, 3, 4
FS_U, FS_I = 2700, 2900
NONE = upta.FS_INFINITE
SPECS = (FlowSpec(0x0A000102, 0x0A000202, 1000, 2000, 17, False),
         FlowSpec(0x0A000103, 0x0A000202, 1001, 2000, 17, True),
         FlowSpec(0x0A000104, 0x0A000202, 1002, 2000, 6, True))


def bfd_frame(in_port: int, src: str, dst: str, icmp: bytes, *, ttl: int = 64,
              ident: int = 7) -> Ether:
    return (Ether(src=host_mac(in_port), dst=router_mac(in_port))
            / IP(src=src, dst=dst, ttl=ttl, id=ident, proto=C.IP_PROTO_ICMP) / Raw(icmp))


def routed(frame: Ether, out_port: int, icmp: bytes | None = None) -> Ether:
    """What leaves out_port: MACs rewritten, TTL - 1, IPv4 checksum recomputed, and
    the ICMP bytes replaced by `icmp` when given."""
    ip = frame[IP]
    out = (Ether(src=router_mac(out_port), dst=host_mac(out_port))
           / IP(src=ip.src, dst=ip.dst, ttl=ip.ttl - 1, id=ip.id, tos=ip.tos,
                proto=C.IP_PROTO_ICMP)
           / Raw(icmp if icmp is not None else bytes(ip.payload)))
    return Ether(bytes(out))


class BfdTest(MmaqmTest):
    def setUp(self) -> None:
        super().setUp()
        self.sw.install_upta_local_addr(LOCAL)
        self.sw.install_upta_edge_port(EDGE_PORT)
        self.sw.install_upta_edge_port(CPU_PORT, cpu=True)
        self.upta_policy(FS_I, FS_U)

    def upta_policy(self, fs_i: int, fs_u: int, mode: str = "B",
                    flow_epoch_shift: int = 0) -> PolicyAction:
        raw = {"algorithm": "UPTA", "queue_limit_pkts": 64, "upta_mode": mode,
               "upta_flow_slots": 4096, "upta_k_shift": 10, "upta_tagged_loss_threshold": 0.12}
        action = policy_action(parse_policy(raw),
                               policy_epoch=self.sw.next_policy_epoch(UPTA_PORT),
                               flow_epoch_shift=flow_epoch_shift).with_params(
                                   **upta.share_params(fs_i, fs_u))
        self.sw.write_port_policy(UPTA_PORT, action)
        return action

    def events(self) -> dict[tuple[int, str], int]:
        idx = {C.upta_event_index(p, e): (p, name) for p in (1, 2, 3, 4)
               for name, e in C.UPTA_EVENTS.items()}
        values = self.sw.read_counter_indexes({"upta_events": list(idx)})["upta_events"]
        return {k: values[i].packets for i, k in idx.items()}

    def event_delta(self, before: dict, after: dict) -> dict[tuple[int, str], int]:
        return {k: after[k] - before[k] for k in after if after[k] != before[k]}

    def send_and_count(self, frame: Ether, in_port: int,
                       want_events: dict[tuple[int, str], int]) -> None:
        """Send; wait until the events counted it; the delta must be want_events."""
        before = self.events()
        tu.send_packet(self, in_port, frame)
        deadline = time.monotonic() + 5
        while True:
            delta = self.event_delta(before, self.events())
            if sum(delta.values()) >= sum(want_events.values()) or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        time.sleep(0.1)
        self.assertEqual(self.event_delta(before, self.events()), want_events)

    def path_registers(self, path: int) -> tuple[int, int, int]:
        v = bmv2_tm.register_read(self.thrift_port, [("upta_path_fs_u", path),
                                                    ("upta_path_fs_i", path),
                                                    ("upta_probe_seq", path)])
        return (v[("upta_path_fs_u", path)], v[("upta_path_fs_i", path)],
                v[("upta_probe_seq", path)])


class BfdProbeTransitTest(BfdTest):
    """Eqs. 25-26 in transit: a probe from a domain port to a host behind the upta
    port, fields (5 000, 5 000), 3 specs: out with U = min(5 000, 2 700) = 2 700,
    I = min(5 000, 2 900) = 2 900, the ICMP checksum updated incrementally (RFC
    1624) equal to a full recompute, specs unchanged; PROBE_LOWERED 1 on port 2.
    A probe with fields (1 000, 1 000), below both shares, leaves unchanged byte for
    byte (but TTL, MACs, IPv4 checksum); it is still counted as lowered (it passed
    the min). A probe through a non-upta port (3, DROP_TAIL) is untouched, no event."""

    def runTest(self) -> None:
        probe = BfdMessage(bfd_codec.ICMP_QOS_PROBE, 5, 9, 5000, 5000, SPECS).pack()
        lowered = upta_model.lower_probe(probe, FS_U, FS_I)
        self.assertEqual(lowered, BfdMessage(bfd_codec.ICMP_QOS_PROBE, 5, 9, FS_U, FS_I,
                                             SPECS).pack(), "incremental = full checksum")
        frame = bfd_frame(DOMAIN_PORT, host_ip(DOMAIN_PORT, 9), host_ip(UPTA_PORT, 9), probe)
        self.send_and_count(frame, DOMAIN_PORT, {(UPTA_PORT, "PROBE_LOWERED"): 1})
        tu.verify_packet(self, routed(frame, UPTA_PORT, lowered), UPTA_PORT)
        low = BfdMessage(bfd_codec.ICMP_QOS_PROBE, 5, 10, 1000, 1000, SPECS).pack()
        self.assertEqual(upta_model.lower_probe(low, FS_U, FS_I), low)
        frame = bfd_frame(DOMAIN_PORT, host_ip(DOMAIN_PORT, 9), host_ip(UPTA_PORT, 9), low)
        self.send_and_count(frame, DOMAIN_PORT, {(UPTA_PORT, "PROBE_LOWERED"): 1})
        tu.verify_packet(self, routed(frame, UPTA_PORT), UPTA_PORT)
        # the non-upta port (the suite's baseline; a UPTA profile has none: skipped there)
        self.set_policy(DOMAIN_PORT, {"algorithm": "DROP_TAIL", "queue_limit_pkts": 64})
        frame = bfd_frame(UPTA_PORT, host_ip(UPTA_PORT, 9), host_ip(DOMAIN_PORT, 9), probe)
        self.send_and_count(frame, UPTA_PORT, {})
        tu.verify_packet(self, routed(frame, DOMAIN_PORT), DOMAIN_PORT)
        tu.verify_no_other_packets(self)


class BfdEgressAnswerTest(BfdTest):
    """The egress edge (§5.3.3): a probe to 10.255.0.1 from a domain port, fields
    (2 700, 2 800), 3 specs (84 bytes of IPv4) -> exactly one packet: the report
    back to the probe's source, out of the port that leads there (3): IPv4
    10.255.0.1 -> 10.0.3.9, TTL 64 - 1, length 36, ICMP type 21 with the probe's
    identifier, sequence and fields, no specs, checksum valid (= report_for). 0..4
    specs are all answered (0 and 4 tried too). PROBE_ANSWERED 1 on port 3 each.
    A probe with a wrong checksum, and one with 5 specs (not verifiable), are
    dropped: PROBE_MALFORMED, nothing out."""

    def runTest(self) -> None:
        model = upta_model.BfdEndpoint()
        for n in (3, 0, 4):
            specs = (SPECS * 2)[:n]
            probe = BfdMessage(bfd_codec.ICMP_QOS_PROBE, 2, 41 + n, 2700, 2800, specs).pack()
            report = model.answer_probe(probe, from_edge_port=False)
            self.assertEqual(report, BfdMessage(bfd_codec.ICMP_QOS_REPORT, 2, 41 + n, 2700,
                                                2800).pack())
            frame = bfd_frame(DOMAIN_PORT, host_ip(DOMAIN_PORT, 9), LOCAL, probe, ident=n)
            self.send_and_count(frame, DOMAIN_PORT, {(DOMAIN_PORT, "PROBE_ANSWERED"): 1})
            want = (Ether(src=router_mac(DOMAIN_PORT), dst=host_mac(DOMAIN_PORT))
                    / IP(src=LOCAL, dst=host_ip(DOMAIN_PORT, 9), ttl=63, id=n,
                         proto=C.IP_PROTO_ICMP) / Raw(report))
            tu.verify_packet(self, Ether(bytes(want)), DOMAIN_PORT)
        bad = bytearray(BfdMessage(bfd_codec.ICMP_QOS_PROBE, 2, 50, 2700, 2800, SPECS).pack())
        bad[2] ^= 0x01
        five = BfdMessage(bfd_codec.ICMP_QOS_PROBE, 2, 51, 2700, 2800, (SPECS * 2)[:5]).pack()
        # (the model answers any spec count; the P4 parses at most BFD_MAX_SPECS = 4 and
        # cannot verify a longer probe's checksum: plan §1.7 drops it)
        for probe in (bytes(bad), five):
            frame = bfd_frame(DOMAIN_PORT, host_ip(DOMAIN_PORT, 9), LOCAL, probe)
            self.send_and_count(frame, DOMAIN_PORT, {(DOMAIN_PORT, "PROBE_MALFORMED"): 1})
        self.assertIsNone(model.answer_probe(bytes(bad), from_edge_port=False))
        tu.verify_no_other_packets(self)


class BfdSpoofTest(BfdTest):
    """Security (plan §1.7): probes and reports that come in on an edge port are
    outside the UPTA domain: dropped and counted whatever their address, and no
    fair share changes. A valid-looking report for path 3 (which has a probe
    outstanding: sent from the controller's port, sequence 7) to 10.255.0.1 on
    edge port 1 -> REPORT_FROM_EDGE, path registers unchanged; a probe to
    10.255.0.1 on port 1 -> PROBE_FROM_EDGE, no report; a transit probe on port 1
    -> PROBE_FROM_EDGE, nothing forwarded. The same report from a domain port is
    then accepted (so the edge rule, not the report, made the difference)."""

    def runTest(self) -> None:
        model = upta_model.BfdEndpoint()
        out_probe = model.probe_template(3, 7)
        frame = bfd_frame(CPU_PORT, LOCAL, host_ip(UPTA_PORT, 9), out_probe)
        self.send_and_count(frame, CPU_PORT, {(CPU_PORT, "PROBE_SENT"): 1,
                                              (UPTA_PORT, "PROBE_LOWERED"): 1})
        tu.verify_packet(self, routed(frame, UPTA_PORT,
                                      upta_model.lower_probe(out_probe, FS_U, FS_I)),
                         UPTA_PORT)
        before = self.path_registers(3)
        report = BfdMessage(bfd_codec.ICMP_QOS_REPORT, 3, 7, 1000, 1100).pack()
        self.assertFalse(model.accept_report(report, from_edge_port=True))
        self.send_and_count(bfd_frame(EDGE_PORT, host_ip(EDGE_PORT, 9), LOCAL, report),
                            EDGE_PORT, {(EDGE_PORT, "REPORT_FROM_EDGE"): 1})
        self.assertEqual(self.path_registers(3), before, "a spoofed report set a fair share")
        probe = BfdMessage(bfd_codec.ICMP_QOS_PROBE, 3, 8, NONE, NONE, SPECS).pack()
        self.assertIsNone(model.answer_probe(probe, from_edge_port=True))
        self.send_and_count(bfd_frame(EDGE_PORT, host_ip(EDGE_PORT, 9), LOCAL, probe),
                            EDGE_PORT, {(EDGE_PORT, "PROBE_FROM_EDGE"): 1})
        self.send_and_count(bfd_frame(EDGE_PORT, host_ip(EDGE_PORT, 9), host_ip(UPTA_PORT, 9),
                                      probe), EDGE_PORT, {(EDGE_PORT, "PROBE_FROM_EDGE"): 1})
        self.assertEqual(model.events, {"PROBE_SENT": 1, "REPORT_FROM_EDGE": 1,
                                        "PROBE_FROM_EDGE": 1})
        self.assertTrue(model.accept_report(report, from_edge_port=False))
        self.send_and_count(bfd_frame(DOMAIN_PORT, host_ip(DOMAIN_PORT, 9), LOCAL, report),
                            DOMAIN_PORT, {(DOMAIN_PORT, "REPORT_ACCEPTED"): 1})
        self.assertEqual(self.path_registers(3), (1000, 1100, 0x10000 | 7))
        tu.verify_no_other_packets(self)


class BfdReportTest(BfdTest):
    """The ingress edge: the controller's probe on path 2, sequence 41, from the
    controller's port: PROBE_SENT, upta_probe_seq[2] = 0x10000 | 41, out of port 2
    with the fields lowered from 0xFFFFFFFF to the port's shares (U 2 700, I 2 900,
    "set to the local fairshare at the ingress router", §5.3.2). Reports to
    10.255.0.1 from a domain port: sequence 40 -> REPORT_STALE; identifier 70
    (>= BFD_PATHS) -> REPORT_STALE; a wrong checksum -> REPORT_MALFORMED; all
    consumed, registers untouched; then (2 700, 2 800) sequence 41 -> REPORT_ACCEPTED,
    upta_path_fs_u/i[2] = 2 700 / 2 800; nothing is forwarded.
    C-UPTA roles (plan §1.6) with that report: port 2 in mode C with local shares
    none, 10.0.2.0/24 on BFD path 2. A tagged flow (q 0.12, R 3 200) from the edge
    port is at its ingress edge: FS_U = min(none, 2 700): 3 200 (65 536 - 7 864) =
    184 550 400 > 2 700 * 65 536 = 176 947 200 -> UPTA_USELESS. The same from a
    domain port is in the core (never U; local share none): admitted."""

    def runTest(self) -> None:
        model = upta_model.BfdEndpoint()
        probe = model.probe_template(2, 41)
        frame = bfd_frame(CPU_PORT, LOCAL, host_ip(UPTA_PORT, 9), probe)
        self.send_and_count(frame, CPU_PORT, {(CPU_PORT, "PROBE_SENT"): 1,
                                              (UPTA_PORT, "PROBE_LOWERED"): 1})
        tu.verify_packet(self, routed(frame, UPTA_PORT, upta_model.lower_probe(probe, FS_U, FS_I)),
                         UPTA_PORT)
        regs = self.path_registers(2)
        self.assertEqual(regs[2], 0x10000 | 41)
        good = BfdMessage(bfd_codec.ICMP_QOS_REPORT, 2, 41, 2700, 2800).pack()
        bad_sum = bytearray(good)
        bad_sum[3] ^= 0x10
        for report, event in ((BfdMessage(bfd_codec.ICMP_QOS_REPORT, 2, 40, 2700, 2800).pack(),
                               "REPORT_STALE"),
                              (BfdMessage(bfd_codec.ICMP_QOS_REPORT, 70, 41, 2700, 2800).pack(),
                               "REPORT_STALE"),
                              (bytes(bad_sum), "REPORT_MALFORMED")):
            self.assertFalse(model.accept_report(report, from_edge_port=False))
            self.send_and_count(bfd_frame(DOMAIN_PORT, host_ip(DOMAIN_PORT, 9), LOCAL, report),
                                DOMAIN_PORT, {(DOMAIN_PORT, event): 1})
            self.assertEqual(self.path_registers(2), regs)
        self.assertTrue(model.accept_report(good, from_edge_port=False))
        self.assertEqual(model.path_shares(2), (2700, 2800))
        self.send_and_count(bfd_frame(DOMAIN_PORT, host_ip(DOMAIN_PORT, 9), LOCAL, good),
                            DOMAIN_PORT, {(DOMAIN_PORT, "REPORT_ACCEPTED"): 1})
        self.assertEqual(self.path_registers(2), (2700, 2800, 0x10000 | 41))

        # C-UPTA roles
        action = self.upta_policy(NONE, NONE, mode="C")
        self.sw.install_upta_bfd_path("10.0.2.0/24", 2)
        port_model = upta_model.UptaPortModel(dict(action.params), lambda: 0)
        for in_port, sport, want in ((EDGE_PORT, 40001, upta_model.UPTA_USELESS),
                                     (DOMAIN_PORT, 40002, upta_model.ADMIT)):
            pkt = (Ether(src=host_mac(in_port), dst=router_mac(in_port))
                   / IP(src=host_ip(in_port), dst=host_ip(UPTA_PORT), tos=46 << 2, id=sport & 0xFFFF)
                   / UDP(sport=sport, dport=5000) / bytes(200 - 28))
            h = upta.flow_hash(host_ip(in_port), host_ip(UPTA_PORT), 17, sport, 5000)
            out = port_model.arrive(h, 200, 10_000_000, tagged=True,
                                    from_edge_port=in_port == EDGE_PORT, path=(2700, 2800))
            self.assertEqual(out.decision, want, f"model, in port {in_port}")
            before = self.counters()
            tu.send_packet(self, in_port, pkt)
            delta = self.wait_counter(lambda c: c.minus(before).arrivals).minus(before)
            drops = delta.drop_reasons(UPTA_PORT, C.CLASSES["TAGGED"])
            if want == upta_model.ADMIT:
                self.assertEqual(drops, {})
                out_pkt = pkt.copy()
                out_pkt[Ether].src, out_pkt[Ether].dst = router_mac(UPTA_PORT), host_mac(UPTA_PORT)
                out_pkt[IP].ttl -= 1
                del out_pkt[IP].chksum
                tu.verify_packet(self, Ether(bytes(out_pkt)), UPTA_PORT)
            else:
                self.assertEqual(drops, {want: 1})
            time.sleep(0.01)
        tu.verify_no_other_packets(self)


class BfdCoreSpecDigestTest(BfdTest):
    """A C-UPTA core's digest of a passing probe's Flow Specs (§5.3.2: the S bits are
    "necessary for fairshare estimation at intermediate routers", eqs. 18-19): port 2
    in mode C with FS_U 2 700, FS_I 2 900.
      1. a probe from a domain port (3) to a host behind port 2, path 5, sequence 12,
         fields (5 000, 5 000), the three SPECS (one U, two I) -> forwarded lowered to
         (2 700, 2 900), PROBE_LOWERED 1 on port 2, and exactly one bfd_spec_digest_t:
         egress_port 2, identifier 5, sequence 12, spec_count 3, each spec's 5-tuple
         and flags (0x00 U, 0x80 I) = upta_model.spec_digest;
      2. the switch's own probe (from the controller's port 4, path 6): PROBE_SENT,
         lowered, no digest (its controller wrote the specs);
      3. a probe without specs from port 3: lowered, no digest;
      4. port 2 back in mode B, the probe of 1 again: lowered, no digest.
    Nothing else is forwarded, the probes raise no flow report (one digest per
    packet on BMv2; a probe is no flow), and bfd_arrivals counts the four on port 2
    (the routers' control traffic, apart from the hosts' UNTAGGED arrivals)."""

    async def gather(self, out: list) -> None:
        async for batch in self.sw.driver.digest_items(self.sw.driver.bfd_spec_digest):
            out.extend(batch)

    def digests_after(self, frame: Ether, in_port: int, want_events: dict, out: list,
                      wait_s: float = 0.5) -> list:
        """Send; the events must be want_events; the digests that arrived meanwhile."""
        n = len(out)
        self.send_and_count(frame, in_port, want_events)
        time.sleep(wait_s)      # the digest's max_timeout is 10 ms
        return out[n:]

    def runTest(self) -> None:
        if self.sw.driver.bfd_spec_digest is None:
            self.fail("the program has no bfd_spec_digest_t")
        # flow reports on: a probe must not raise one
        shift = CONFIG.active_flows.flow_epoch_shift
        self.upta_policy(FS_I, FS_U, mode="C", flow_epoch_shift=shift)
        self.sw.enable_digest(self.sw.driver.bfd_spec_digest)
        self.sw.enable_flow_reports()
        flows: list = []
        got: list = []
        arrivals_before = self.bfd_arrivals()
        collector = asyncio.run_coroutine_threadsafe(self.gather(got), self.sw._loop)
        flow_collector = asyncio.run_coroutine_threadsafe(self.gather_flows(flows),
                                                          self.sw._loop)
        try:
            probe = BfdMessage(bfd_codec.ICMP_QOS_PROBE, 5, 12, 5000, 5000, SPECS).pack()
            frame = bfd_frame(DOMAIN_PORT, host_ip(DOMAIN_PORT, 9), host_ip(UPTA_PORT, 9), probe)
            want = upta_model.spec_digest(probe, UPTA_PORT, mode=upta.MODE_C)
            self.assertEqual(want["spec_count"], 3)
            self.assertEqual([want[f"flags{i}"] for i in range(3)], [0x00, 0x80, 0x80])
            digests = self.digests_after(frame, DOMAIN_PORT, {(UPTA_PORT, "PROBE_LOWERED"): 1}, got)
            tu.verify_packet(self, routed(frame, UPTA_PORT,
                                          upta_model.lower_probe(probe, FS_U, FS_I)), UPTA_PORT)
            self.assertEqual(len(digests), 1, digests)
            self.assertEqual({k: digests[0][k] for k in want}, want)
            self.assertEqual(upta_control.decode_spec_digest(digests[0]).specs, SPECS)

            self.assertIsNone(upta_model.spec_digest(
                BfdMessage(bfd_codec.ICMP_QOS_PROBE, 6, 3, NONE, NONE, SPECS).pack(), UPTA_PORT,
                mode=upta.MODE_C, from_cpu=True))
            own = BfdMessage(bfd_codec.ICMP_QOS_PROBE, 6, 3, NONE, NONE, SPECS).pack()
            frame = bfd_frame(CPU_PORT, LOCAL, host_ip(UPTA_PORT, 9), own)
            self.assertEqual(self.digests_after(frame, CPU_PORT, {
                (CPU_PORT, "PROBE_SENT"): 1, (UPTA_PORT, "PROBE_LOWERED"): 1}, got), [])
            tu.verify_packet(self, routed(frame, UPTA_PORT,
                                          upta_model.lower_probe(own, FS_U, FS_I)), UPTA_PORT)

            bare = BfdMessage(bfd_codec.ICMP_QOS_PROBE, 5, 13, 5000, 5000).pack()
            self.assertIsNone(upta_model.spec_digest(bare, UPTA_PORT, mode=upta.MODE_C))
            frame = bfd_frame(DOMAIN_PORT, host_ip(DOMAIN_PORT, 9), host_ip(UPTA_PORT, 9), bare)
            self.assertEqual(self.digests_after(frame, DOMAIN_PORT,
                                                {(UPTA_PORT, "PROBE_LOWERED"): 1}, got), [])
            tu.verify_packet(self, routed(frame, UPTA_PORT,
                                          upta_model.lower_probe(bare, FS_U, FS_I)), UPTA_PORT)

            self.upta_policy(FS_I, FS_U, mode="B", flow_epoch_shift=shift)
            self.assertIsNone(upta_model.spec_digest(probe, UPTA_PORT, mode=upta.MODE_B))
            frame = bfd_frame(DOMAIN_PORT, host_ip(DOMAIN_PORT, 9), host_ip(UPTA_PORT, 9), probe)
            self.assertEqual(self.digests_after(frame, DOMAIN_PORT,
                                                {(UPTA_PORT, "PROBE_LOWERED"): 1}, got), [])
            tu.verify_packet(self, routed(frame, UPTA_PORT,
                                          upta_model.lower_probe(probe, FS_U, FS_I)), UPTA_PORT)
            self.assertEqual(flows, [], "a probe raised a flow report")
            # the four probes reached port 2's AQM: counted apart from the hosts'
            # UNTAGGED arrivals (main.p4 bfd_arrivals, by egress port)
            after = self.bfd_arrivals()
            self.assertEqual({p: after[p] - arrivals_before[p] for p in after
                              if after[p] != arrivals_before[p]}, {UPTA_PORT: 4})
            tu.verify_no_other_packets(self)
        finally:
            collector.cancel()
            flow_collector.cancel()

    def bfd_arrivals(self) -> dict[int, int]:
        values = self.sw.read_counter_indexes({"bfd_arrivals": [0, 1, 2, 3, 4]})["bfd_arrivals"]
        return {p: values[p].packets if p in values else 0 for p in range(5)}

    async def gather_flows(self, out: list) -> None:
        async for batch in self.sw.driver.flow_reports():
            out.extend(batch)


class BfdReportDigestTest(BfdTest):
    """The ingress edge tells its controller which report it accepted (§5.3.3; the
    path registers cannot be read over BMv2's P4Runtime): the controller's probe on
    path 9, sequence 300, then reports to 10.255.0.1 from domain port 3: sequence 299
    (REPORT_STALE) and a wrong checksum (REPORT_MALFORMED) raise no digest; (2 650,
    2 880) with sequence 300 -> REPORT_ACCEPTED and exactly one bfd_report_digest_t
    {identifier 9, sequence 300, fs_u 2 650, fs_i 2 880} = the path registers."""

    async def gather(self, out: list) -> None:
        async for batch in self.sw.driver.digest_items(self.sw.driver.bfd_report_digest):
            out.extend(batch)

    def runTest(self) -> None:
        if self.sw.driver.bfd_report_digest is None:
            self.fail("the program has no bfd_report_digest_t")
        self.sw.enable_digest(self.sw.driver.bfd_report_digest)
        got: list = []
        collector = asyncio.run_coroutine_threadsafe(self.gather(got), self.sw._loop)
        try:
            model = upta_model.BfdEndpoint()
            probe = model.probe_template(9, 300)
            frame = bfd_frame(CPU_PORT, LOCAL, host_ip(UPTA_PORT, 9), probe)
            self.send_and_count(frame, CPU_PORT, {(CPU_PORT, "PROBE_SENT"): 1,
                                                  (UPTA_PORT, "PROBE_LOWERED"): 1})
            tu.verify_packet(self, routed(frame, UPTA_PORT,
                                          upta_model.lower_probe(probe, FS_U, FS_I)), UPTA_PORT)
            good = BfdMessage(bfd_codec.ICMP_QOS_REPORT, 9, 300, 2650, 2880).pack()
            bad = bytearray(good)
            bad[3] ^= 0x01
            for report, event in ((BfdMessage(bfd_codec.ICMP_QOS_REPORT, 9, 299, 2650,
                                              2880).pack(), "REPORT_STALE"),
                                  (bytes(bad), "REPORT_MALFORMED")):
                self.assertFalse(model.accept_report(report, from_edge_port=False))
                self.send_and_count(bfd_frame(DOMAIN_PORT, host_ip(DOMAIN_PORT, 9), LOCAL,
                                              report), DOMAIN_PORT, {(DOMAIN_PORT, event): 1})
            time.sleep(0.5)
            self.assertEqual(got, [])
            self.assertTrue(model.accept_report(good, from_edge_port=False))
            self.send_and_count(bfd_frame(DOMAIN_PORT, host_ip(DOMAIN_PORT, 9), LOCAL, good),
                                DOMAIN_PORT, {(DOMAIN_PORT, "REPORT_ACCEPTED"): 1})
            deadline = time.monotonic() + 3
            while not got and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.3)
            self.assertEqual(got, [{"identifier": 9, "sequence": 300, "fs_u": 2650,
                                    "fs_i": 2880}])
            self.assertEqual(self.path_registers(9), (2650, 2880, 0x10000 | 300))
            self.assertEqual(model.path_shares(9), (2650, 2880))
            tu.verify_no_other_packets(self)
        finally:
            collector.cancel()
