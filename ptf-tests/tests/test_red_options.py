"""RED options with Linux tc-red's semantics (red.p4): idle-time decay of the
average (tc-red bandwidth; Floyd & Jacobson §11), gentle RED, ECN marking,
harddrop and ns-2's wait. Expected decisions are computed by hand in each
docstring and by the reference model (mmaqm_oracle.fixedpoint_model.PortModel)."""

import time

import ptf.testutils as tu
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from mmaqm import bmv2_tm
from mmaqm import fixedpoint as fp
from mmaqm import p4constants as C
from mmaqm_oracle import fixedpoint_model as fpm
from mmaqm_base import (OUT_PORT, QueueTest, admitted, burst_packet, no_early_drop_max_p,
                        predict)

ECT0 = 0b10
NOT_ECT = 0b00


def ecn_packet(seq: int, ecn: int) -> Ether:
    pkt = burst_packet("tcp", seq=seq)
    pkt[IP].tos = (pkt[IP].tos & ~0b11) | ecn
    return pkt


class EcnBurstTest(QueueTest):
    """Sends TCP packets with the given ECN fields into a frozen queue; returns
    ({id: ECN field as received} of the forwarded packets, counter delta)."""

    def ecn_burst(self, action, ecns):
        pkts = [ecn_packet(i + 1, e) for i, e in enumerate(ecns)]
        sacrificial = burst_packet("tcp", seq=self.SACRIFICIAL_ID)
        before, _ = self.frozen_burst(action, OUT_PORT, pkts, sacrificial)
        # The queued packets keep the departure times they got when queued: they
        # trickle out at the freeze rate.
        received = {}
        deadline = time.monotonic() + len(pkts) / self.freeze_rate_pps + 3
        while time.monotonic() < deadline:
            res = self.dataplane.poll(port_number=OUT_PORT,
                                      timeout=1.0 / self.freeze_rate_pps + 0.5)
            if not isinstance(res, self.dataplane.PollSuccess):
                if received:
                    break
                continue
            ip = Ether(res.packet)[IP]
            received[ip.id] = ip.tos & 0b11
        bmv2_tm.set_queue_rate(self.thrift_port, OUT_PORT, 0)
        tu.verify_no_other_packets(self)
        delta = self.wait_counter(lambda c: sum(c.minus(before).departures.values())
                                  >= len(received) + 1).minus(before)
        return received, delta


class RedEcnMarksInsteadOfDropsTest(EcnBurstTest):
    """ecn: an ECN-capable packet RED would drop is marked CE and queued; a
    Not-ECT packet is still dropped (tc-red ecn; RFC 3168).

    Weight 1 (avg = q), min_th 2, max_th 10, max_p 1 (p_b = (q - 2) / 8).
    14 ECT(0) packets: every one is admitted, so q = 0..13 exactly. q = 0, 1:
    below min_th, not marked. q = 2..9: early zone; the marks are random, but
    count * p_b reaches 1 by q = 5 when nothing was marked before (count 4 *
    3/8 = 1.5 > any R < 1), so at least one is marked, and a mark is never a
    drop. q = 10..13: forced zone, all four marked CE (RED_FORCED marks 4).
    Then 2 Not-ECT packets at q = 14: forced drops (RED_FORCED drops 2).
    Without the ecn option the first packet at q >= 10 would be dropped and q
    would stop growing."""

    def runTest(self):
        action = self.set_policy(OUT_PORT, {"algorithm": "RED", "queue_limit_pkts": 100,
                                            "min_th_pkts": 2, "max_th_pkts": 10, "max_p": 1.0,
                                            "ewma_weight": 1.0, "ecn": True})
        ecns = [ECT0] * 14 + [NOT_ECT] * 2
        decisions = predict(action, ["tcp"] * 16, lambda: 65535, ecn_capable=[e != 0 for e in ecns])
        self.assertEqual(decisions[10:], ["MARK_RED_FORCED"] * 4 + ["RED_FORCED"] * 2)
        received, delta = self.ecn_burst(action, ecns)
        self.assertEqual(sorted(received), list(range(1, 15)), "every ECT packet is forwarded")
        self.assertEqual([received[i] for i in (1, 2)], [ECT0, ECT0], "below min_th: unmarked")
        self.assertEqual([received[i] for i in range(11, 15)], [fp_ce()] * 4, "forced zone: CE")
        early_marked = [i for i in range(3, 11) if received[i] == fp_ce()]
        self.assertGreaterEqual(len(early_marked), 1)
        self.assertEqual(delta.mark_reasons(OUT_PORT, C.CLASS_TCP),
                         {"RED_EARLY": len(early_marked), "RED_FORCED": 4})
        self.assertEqual(delta.drop_reasons(OUT_PORT, C.CLASS_TCP), {"RED_FORCED": 2})


class RedEcnHarddropTest(EcnBurstTest):
    """harddrop: with ecn, the forced zone still drops (tc-red harddrop).
    As RedEcnMarksInsteadOfDropsTest with 14 ECT packets: q = 0..9 admitted
    (early zone: marks, never drops), q = 10: avg 10 >= max_th -> RED_FORCED
    drop, and q stays 10: 4 forced drops, no forced marks."""

    def runTest(self):
        action = self.set_policy(OUT_PORT, {"algorithm": "RED", "queue_limit_pkts": 100,
                                            "min_th_pkts": 2, "max_th_pkts": 10, "max_p": 1.0,
                                            "ewma_weight": 1.0, "ecn": True, "harddrop": True})
        decisions = predict(action, ["tcp"] * 14, lambda: 65535, ecn_capable=[True] * 14)
        self.assertEqual(decisions[10:], ["RED_FORCED"] * 4)
        received, delta = self.ecn_burst(action, [ECT0] * 14)
        self.assertEqual(sorted(received), list(range(1, 11)))
        self.assertEqual(delta.drop_reasons(OUT_PORT, C.CLASS_TCP), {"RED_FORCED": 4})
        self.assertNotIn("RED_FORCED", delta.mark_reasons(OUT_PORT, C.CLASS_TCP))


class RedGentleRampTest(EcnBurstTest):
    """gentle: between max_th and 2 * max_th RED drops early with
    p_b = max_p + (1 - max_p)(avg - max_th) / max_th, and the forced zone starts
    at 2 * max_th. ECN marks instead of drops keep every packet, so q = 0..15.

    Weight 1, min_th 2, max_th 6, max_p tiny (slope 1: p_b = 0 below max_th).
    q = 0..5: p_b 0, unmarked (q = 2..5 count). q = 6..11: the ramp,
    p_b_q16 = (q - 6) * 2^16 * gentle_slope_q24 >> 24 with gentle_slope_q24 =
    round((1 - max_p) / 6 * 2^24) = 2796202: 0 at q = 6, 10922 at q = 7,
    21845 at q = 8. Without a mark before, count is 7 at q = 8 and 7 * 21845 =
    152915 > any R < 2^16: at least one early mark by q = 8 (the model with the
    worst R, 65535, marks exactly there). q = 12..15: avg >= 2 * max_th: forced
    marks, exactly 4. Without gentle every packet from q = 6 would be a forced
    mark (10); with the ramp's slope lost (p_b = max_p ~ 0) none would be
    early-marked."""

    def runTest(self):
        action = self.set_policy(OUT_PORT, {"algorithm": "RED", "queue_limit_pkts": 100,
                                            "min_th_pkts": 2, "max_th_pkts": 6,
                                            "max_p": no_early_drop_max_p(2, 6), "ewma_weight": 1.0,
                                            "gentle": True, "ecn": True})
        self.assertEqual(action.params["gentle_slope_q24"], 2796202)
        worst = predict(action, ["tcp"] * 16, lambda: 65535, ecn_capable=[True] * 16)
        self.assertEqual(worst[:8], ["ADMIT"] * 8)
        self.assertEqual(worst[8], "MARK_RED_EARLY")
        self.assertEqual(worst[12:], ["MARK_RED_FORCED"] * 4)
        received, delta = self.ecn_burst(action, [ECT0] * 16)
        self.assertEqual(sorted(received), list(range(1, 17)))
        self.assertEqual([received[i] for i in range(1, 8)], [ECT0] * 7, "q <= 6: p_b 0")
        early = [i for i in range(8, 13) if received[i] == fp_ce()]
        self.assertTrue(early and early[0] <= 9, f"an early mark by q = 8 (id 9): {early}")
        self.assertEqual([received[i] for i in range(13, 17)], [fp_ce()] * 4)
        marks = delta.mark_reasons(OUT_PORT, C.CLASS_TCP)
        self.assertEqual(marks["RED_FORCED"], 4, "forced only from 2 * max_th")
        self.assertEqual(marks["RED_EARLY"], len(early))


def fp_ce() -> int:
    return C.ECN_CE


class RedIdleDecayTest(QueueTest):
    """Idle-time decay (F&J §11; tc-red bandwidth). Weight 1/16, min_th 2,
    max_th 19, slope 1 (no early drops), bandwidth_pps 1000: idle_decay_q32 =
    -log2(15/16) * 1000 / 1e6 * 2^32 = 399 902, i.e. 0.093 halvings per ms, so
    344 ms of idle time take >= 32 halvings and the average is exactly 0.

    A frozen burst of 40 TCP packets lifts the average: the model gives 33
    admitted, 7 RED_FORCED drops (avg >= 19) and avg 24.03 at the end. The queue then drains at once and
    stays empty for 0.5 s. One more TCP packet: decayed, its average is 0 and
    it is admitted. Without the decay (RedNoIdleDecayTest, the same policy
    without bandwidth_pps) it takes one EWMA step with sample 0: 24.03 * 15/16
    = 22.5 >= max_th 19: a RED_FORCED drop."""

    POLICY = {"algorithm": "RED", "queue_limit_pkts": 100, "min_th_pkts": 2,
              "max_th_pkts": 19, "max_p": no_early_drop_max_p(2, 19), "ewma_weight": 0.0625}
    IDLE_S = 0.5

    def after_idle(self, policy):
        action = self.set_policy(OUT_PORT, policy)
        model = fpm.PortModel(action, lambda: 0)
        kinds = ["tcp"] * 40
        decisions = predict(action, kinds, model=model)
        forced = decisions.count("RED_FORCED")
        self.assertGreater(forced, 0)
        avg_after_burst = model.red_avg_scaled
        pkts = [burst_packet("tcp", seq=i + 1) for i in range(len(kinds))]
        before, _ = self.frozen_burst(action, OUT_PORT, pkts, burst_packet("tcp", seq=self.SACRIFICIAL_ID))
        admitted_ids = [i + 1 for i, d in enumerate(decisions) if admitted(d)]
        self.assertEqual(self.collect(OUT_PORT, len(admitted_ids)), admitted_ids)
        time.sleep(self.IDLE_S)
        # The model: the queue emptied at t = 0 us, the packet arrives IDLE_S later.
        model.queue_emptied(0)
        decision = model.arrive(C.CLASS_TCP, fpm.Occupancy(), now_us=int(self.IDLE_S * 1e6))
        self.send(burst_packet("tcp", seq=100))
        forwarded = self.receive_ids(OUT_PORT, 1, timeout_s=1.0)
        tu.verify_no_other_packets(self)
        delta = self.wait_counter(lambda c: sum(c.minus(before).arrivals.values())
                                  >= len(kinds) + 2).minus(before)
        return avg_after_burst, decision, forwarded, delta, forced

    def runTest(self):
        avg, decision, forwarded, delta, forced = self.after_idle(
            {**self.POLICY, "bandwidth_pps": 1000})
        self.assertGreaterEqual(avg * 15 // 16, fp.to_scaled(19), "without decay: a drop")
        self.assertEqual(decision, "ADMIT")
        self.assertEqual(forwarded, [100], "after 0.5 s idle the average decayed to 0")
        self.assertEqual(delta.drop_reasons(OUT_PORT, C.CLASS_TCP), {"RED_FORCED": forced})


class RedNoIdleDecayTest(RedIdleDecayTest):
    """The control of RedIdleDecayTest: the same policy without bandwidth_pps
    has no idle decay, so the packet after 0.5 s idle meets avg * 15/16 >= 19 =
    max_th and is a RED_FORCED drop."""

    def runTest(self):
        avg, decision, forwarded, delta, forced = self.after_idle(self.POLICY)
        self.assertEqual(decision, "RED_FORCED")
        self.assertEqual(forwarded, [], "no decay: the average stays above max_th")
        self.assertEqual(delta.drop_reasons(OUT_PORT, C.CLASS_TCP), {"RED_FORCED": forced + 1})


class RedIdleDecayFromEmptyTest(RedIdleDecayTest):
    """Idle time counts from when the queue became empty (egress records it in
    queue_idle_since_us), not from the switch's start. bandwidth_pps 1:
    idle_decay_q32 = -log2(15/16) * 1 / 1e6 * 2^32 = 399.9 -> 400, 0.093
    halvings per second. After 0.5 s idle h = 0.0466, and the chord 1 - h/2 =
    0.977 takes the average from 24.03 to 23.47 >= max_th 19: a RED_FORCED
    drop. Counted from the switch's start (at least 8 s before: the 33
    admitted packets alone drain at 4 per second) it would be >= 0.75
    halvings, 24.03 * 2^-0.75 = 14.3 < 19: admitted."""

    def runTest(self):
        avg, decision, forwarded, delta, forced = self.after_idle(
            {**self.POLICY, "bandwidth_pps": 1})
        self.assertEqual(decision, "RED_FORCED")
        self.assertEqual(forwarded, [], "0.5 s at 1 pkt/s decays the average by 2 % only")
        self.assertEqual(delta.drop_reasons(OUT_PORT, C.CLASS_TCP), {"RED_FORCED": forced + 1})


class RedWaitTest(QueueTest):
    """wait (ns-2 wait_, red.p4): no early drop while count * p_b <= 1; drop
    when count * p_b_q16 > 2^16 + R, R uniform in [0, 2^16) drawn at the restart.

    The queue holds p_b at exactly 1/4: weight 1 (avg = the packets queued at
    the arrival), and the queue limit keeps the queue where p_b = 1/4, so every
    early-zone packet RED lets through is a QUEUE_LIMIT drop and the queue (so
    avg and p_b) does not move while RED's count runs 1, 2, 3, ... FILL packets
    arrive below min_th (admitted; count restarts); then the early packets,
    p_b_q16 = 16384 each (subclasses: where it comes from).
      wait, 4 early packets: count * 16384 <= 65536 < 65536 + R for count 1..4:
        no RED drop, 4 QUEUE_LIMIT.
      wait, 8 early packets: count 8 gives 131072 > 65536 + R for every R: one
        RED_EARLY, at early packet 5 + floor(R / 16384) (5..8); count restarts,
        and the rest (count <= 3) cannot drop: exactly 1 RED_EARLY, 7 QUEUE_LIMIT.
      no wait (RedNoWait*), 4 early packets: count 4 gives 65536 > R for every
        R: at least one RED_EARLY by packet 4 (1 to 4: R is redrawn after each
        drop), the others QUEUE_LIMIT.
    Each burst installs the policy anew (a fresh epoch: averages and count from 0)."""

    POLICY: dict = {}
    FILL: list = []
    R_AT_BOUNDS = (0, 1, 16383, 16384, 32767, 32768, 49151, 49152, 65534, 65535)

    def kinds(self, early):
        return self.FILL + ["tcp"] * early

    def check_model(self, action, early, first_drop):
        """The model, for R at every quarter's bounds: RED_EARLY at early packet
        first_drop(R) only (None: at none), the other early packets QUEUE_LIMIT."""
        for r in self.R_AT_BOUNDS:
            decisions = predict(action, self.kinds(early), lambda: r)
            self.assertEqual(decisions[:len(self.FILL)], ["ADMIT"] * len(self.FILL))
            want = ["QUEUE_LIMIT"] * early
            at = first_drop(r)
            if at is not None:
                want[at - 1] = "RED_EARLY"
            self.assertEqual(decisions[len(self.FILL):], want, f"R = {r}")

    def wait_bursts(self):
        self.assertTrue(self.POLICY, "a subclass sets POLICY and FILL")
        action = self.set_policy(OUT_PORT, {**self.POLICY, "wait": True})
        self.assertEqual(action.params["wait"], 1)
        self.check_model(action, 4, lambda r: None)
        self.run_burst(action, self.kinds(4), expected=predict(action, self.kinds(4)))
        action = self.set_policy(OUT_PORT, {**self.POLICY, "wait": True})
        self.check_model(action, 8, lambda r: 5 + r // 16384)
        _, delta = self.run_burst(action, self.kinds(8), expected=predict(action, self.kinds(8)))
        self.assertEqual(delta.drop_reasons(OUT_PORT, C.CLASS_TCP),
                         {"RED_EARLY": 1, "QUEUE_LIMIT": 7})

    def no_wait_burst(self):
        """Without wait: the number of RED_EARLY drops among 4 early packets is
        random but at least 1 (the model: 1 with R = 65535 at packet 4, 4 with R = 0)."""
        self.assertTrue(self.POLICY, "a subclass sets POLICY and FILL")
        action = self.set_policy(OUT_PORT, self.POLICY)
        self.assertEqual(action.params["wait"], 0)
        early_of = [predict(action, self.kinds(4), lambda: r)[len(self.FILL):].count("RED_EARLY")
                    for r in (0, 65535)]
        self.assertEqual(early_of, [4, 1])
        self.assertEqual(predict(action, self.kinds(4), lambda: 65535)[len(self.FILL):],
                         ["QUEUE_LIMIT"] * 3 + ["RED_EARLY"])
        kinds = self.kinds(4)
        pkts = [burst_packet(k, seq=i + 1, flow=i % 4) for i, k in enumerate(kinds)]
        before, _ = self.frozen_burst(action, OUT_PORT, pkts,
                                      burst_packet("tcp", seq=self.SACRIFICIAL_ID))
        fill_ids = list(range(1, len(self.FILL) + 1))
        self.assertEqual(self.collect(OUT_PORT, len(fill_ids)), fill_ids, "only FILL is queued")
        tu.verify_no_other_packets(self)
        delta = self.wait_counter(lambda c: sum(c.minus(before).departures.values())
                                  >= len(fill_ids) + 1).minus(before)
        tcp = C.class_index(OUT_PORT, C.CLASS_TCP)
        fill_tcp = self.FILL.count("tcp")
        self.assertEqual(delta.arrivals.get(tcp, 0), fill_tcp + 4 + 1, "TCP arrivals")
        self.assertEqual(delta.admits.get(tcp, 0), fill_tcp + 1, "TCP admits")
        self.assertEqual(delta.departures.get(tcp, 0), fill_tcp + 1, "TCP departures")
        drops = delta.drop_reasons(OUT_PORT, C.CLASS_TCP)
        early = drops.get("RED_EARLY", 0)
        print(f"no wait: {early} RED_EARLY of 4 early-zone packets")
        self.assertTrue(1 <= early <= 4, f"no RED drop by early packet 4: {drops}")
        self.assertEqual(drops, {"RED_EARLY": early,
                                 **({"QUEUE_LIMIT": 4 - early} if early < 4 else {})})
        untagged = self.FILL.count("untagged")
        self.assertEqual(delta.per_class(delta.admits, OUT_PORT).get("UNTAGGED", 0), untagged)
        self.assertEqual(delta.drop_reasons(OUT_PORT, C.CLASS_UNTAGGED), {})


class RedWaitGentleRampTest(RedWaitTest):
    """wait in RED's gentle ramp. Weight 1, queue_limit 4, min_th 3.5, max_th 4,
    max_p 1/4, gentle. FILL: 4 TCP at q = 0..3 < 3.5. Then q = 4 = the limit:
    avg 4 = max_th < 2 * max_th, the ramp's start, p_b_q16 = max_p_q16 +
    (4 - 4) * slope = round(0.25 * 2^16) = 16384. Outcomes: RedWaitTest."""

    POLICY = {"algorithm": "RED", "queue_limit_pkts": 4, "min_th_pkts": 3.5, "max_th_pkts": 4,
              "max_p": 0.25, "ewma_weight": 1.0, "gentle": True}
    FILL = ["tcp"] * 4

    def runTest(self):
        self.wait_bursts()


class RedNoWaitGentleRampTest(RedWaitGentleRampTest):
    """The control of RedWaitGentleRampTest, without wait: a RED drop by packet 4."""

    def runTest(self):
        self.no_wait_burst()


class RedWaitLinearZoneTest(RedWaitTest):
    """wait between min_th and max_th, with CBT_RED_TCP_ONLY, whose RED average
    is the TCP occupancy (cbt §3) while the queue limit counts every packet.
    Weight 1, queue_limit 6, min_th 3.5, max_th 5.5, max_p 1: red_slope_q24 =
    1 / 2 * 2^24 = 2^23. FILL: 4 TCP at TCP occupancy 0..3 < 3.5, then 2
    untagged UDP (class average 0, 1 <= untagged_th 6; UDP skips RED): q = 6 =
    the limit. Then TCP at TCP occupancy 4: p_b_q16 = (4 - 3.5) * 2^16 * 2^23
    >> 24 = 16384. Outcomes: RedWaitTest."""

    POLICY = {"algorithm": "CBT_RED_TCP_ONLY", "queue_limit_pkts": 6, "min_th_pkts": 3.5,
              "max_th_pkts": 5.5, "max_p": 1.0, "ewma_weight": 1.0, "tagged_th_pkts": 6,
              "untagged_th_pkts": 6}
    FILL = ["tcp"] * 4 + ["untagged"] * 2

    def runTest(self):
        self.wait_bursts()


class RedNoWaitLinearZoneTest(RedWaitLinearZoneTest):
    """The control of RedWaitLinearZoneTest, without wait: a RED drop by packet 4."""

    def runTest(self):
        self.no_wait_burst()
