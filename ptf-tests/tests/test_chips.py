"""ChIPS (dcbt §3.2) on top of D-CBT, algorithm DCBT_CHIPS (p4src/v1model/chips.p4).

Every test builds a frozen FIFO (mmaqm_base: one departure per 1/FREEZE_RATE_PPS
s) and sends the tagged packet under test last, so the decisions before it do
not depend on when a cut-in packet leaves. A cut-in packet leaves at once
through the cut-in queue (priority 1), ahead of every queued FIFO packet; its
clone keeps its place in the FIFO and is dropped in egress when its turn comes.
"""

import time

import ptf.testutils as tu
from scapy.layers.inet import IP

from mmaqm import p4constants as C
from mmaqm.config import parse_policy
from mmaqm.encoding import policy_action
from mmaqm_oracle import fixedpoint_model as fpm
from mmaqm_base import OUT_PORT, QueueTest, burst_packet, no_early_drop_max_p, predict

TCP_IN_QUEUE = 8
DCBT_CHIPS = {"algorithm": "DCBT_CHIPS", "queue_limit_pkts": 200, "min_th_pkts": 6,
              "max_th_pkts": 100, "max_p": no_early_drop_max_p(6, 100), "ewma_weight": 0.5,
              "chips_max_tagged_ratio": 0.5, "chips_ewma_weight": 2.0**-9}
TAGGED_ID = TCP_IN_QUEUE + 1
SLOT_WIRE_TIMEOUT_S = 0.5       # egress to the wire is milliseconds


class ChipsTest(QueueTest):
    """8 TCP packets into the frozen FIFO, then one tagged packet (id 9)."""

    def burst_tcp_then_tagged(self, action, cut_ins: int):
        kinds = ["tcp"] * TCP_IN_QUEUE + ["tagged"]
        pkts = [burst_packet(k, seq=i + 1) for i, k in enumerate(kinds)]
        sacrificial = burst_packet("tcp", seq=self.SACRIFICIAL_ID)
        before, delta_in = self.frozen_burst(action, OUT_PORT, pkts, sacrificial, cut_ins=cut_ins)
        return kinds, before, delta_in

    def drain(self, before, expected_ids):
        """Receive the FIFO's packets (at the freeze rate), then wait for every
        cut-in slot to leave; returns the ids and the counter delta."""
        got = self.collect(OUT_PORT, len(expected_ids))
        delta = self.wait_counter(lambda c: (
            c.minus(before).cut_ins(OUT_PORT)
            == c.minus(before).chips_events(OUT_PORT).get("slot_departed", 0))).minus(before)
        # The slots leave after the FIFO's packets; a slot that was sent instead of
        # dropped would be on the wire now.
        tu.verify_no_other_packets(self, timeout=SLOT_WIRE_TIMEOUT_S)
        return got, delta


class ChipsCutInTest(ChipsTest):
    """Cut-in on transient congestion (queue above the RED average, dcbt §3.2).

    Weight 1/2, so the RED average lags a growing queue: after the packets at
    q = 0..7 it is 0, .5, 1.25, 2.125, 3.0625, 4.03125, 5.015625, 6.0078125.
    The tagged packet arrives at q = 8: red_avg = (6.0078125 + 8) / 2 =
    7.00390625 > min_th 6, tagged share 1 (threshold = red_avg) and tagged_avg
    (1/2)(0) = 0 pass; p_b = 0 (slope 1): admitted. The tagged share of
    enqueues becomes 2^16 * 2^-9 = 128 <= limit 21845 (ratio 0.5 = share 1/3):
    ChIPS on. q = 8 > 7.0039: cut in.

    So the tagged packet leaves first (right behind the sacrificial packet),
    the 8 TCP packets then leave in order at the freeze rate, and only after
    them does its FIFO slot leave. Counters: cut_in 1, on_admits 10 (every
    packet, the sacrificial one included), slot_departed 1 once drained,
    tagged departures 1."""

    def runTest(self):
        action = self.set_policy(OUT_PORT, DCBT_CHIPS, share_tagged=1.0, share_untagged=1.0)
        kinds = ["tcp"] * TCP_IN_QUEUE + ["tagged"]
        expected = ["ADMIT"] * TCP_IN_QUEUE + [fpm.CUT_IN]
        self.assertEqual(predict(action, kinds), expected)
        _, before, delta_in = self.burst_tcp_then_tagged(action, cut_ins=1)
        # Right after the burst: the tagged packet has left, its slot has not.
        tagged = C.class_index(OUT_PORT, C.CLASS_TAGGED)
        self.assertEqual(delta_in.departures.get(tagged, 0), 1, "the cut-in packet left at once")
        self.assertEqual(delta_in.chips_events(OUT_PORT).get("slot_departed", 0), 0,
                         "its FIFO slot must still be queued behind the TCP packets")
        got, delta = self.drain(before, list(range(1, TCP_IN_QUEUE + 1)))
        self.assertEqual(got, list(range(1, TCP_IN_QUEUE + 1)), "TCP leaves in FIFO order")
        self.assertEqual(delta.chips_events(OUT_PORT),
                         {"on_admits": TCP_IN_QUEUE + 2, "cut_in": 1, "slot_departed": 1})
        self.assertEqual(delta.per_class(delta.departures, OUT_PORT),
                         {"TCP": TCP_IN_QUEUE + 1, "TAGGED": 1})

    def collect(self, out_port, expected_count):
        # The cut-in packet came out before the FIFO: it is the first one received.
        first = self.receive_ids(out_port, 1, timeout_s=1.0)
        self.assertEqual(first, [TAGGED_ID], "the tagged packet must leave first (cut in)")
        return super().collect(out_port, expected_count)


class ChipsNoCongestionTest(ChipsTest):
    """No cut-in when the queue is not above its average. Weight 1: red_avg =
    q after every update, so the tagged packet at q = 8 finds red_avg = 8 and
    8 > 8 is false: ChIPS is on (share 128 <= 21845) but the packet stays in
    the FIFO, behind the 8 TCP packets. Counters: no_congestion 1, no cut_in."""

    def runTest(self):
        action = self.set_policy(OUT_PORT, {**DCBT_CHIPS, "ewma_weight": 1.0})
        kinds = ["tcp"] * TCP_IN_QUEUE + ["tagged"]
        self.assertEqual(predict(action, kinds), ["ADMIT"] * (TCP_IN_QUEUE + 1))
        _, before, _ = self.burst_tcp_then_tagged(action, cut_ins=0)
        got, delta = self.drain(before, list(range(1, TAGGED_ID + 1)))
        self.assertEqual(got, list(range(1, TAGGED_ID + 1)), "FIFO order, tagged last")
        self.assertEqual(delta.chips_events(OUT_PORT),
                         {"on_admits": TCP_IN_QUEUE + 2, "no_congestion": 1})


class ChipsOffAboveRatioTest(ChipsTest):
    """ChIPS turns off above its tagged/other enqueue ratio (dcbt §3.2, §5).
    As ChipsCutInTest (the queue is above its average), but
    chips_max_tagged_ratio 0.001: limit round(0.001 / 1.001 * 2^16) = 65. The
    tagged packet raises the share to 128 > 65: ChIPS off, no cut-in, FIFO
    order. Counters: on_admits 9 (the TCP packets, share 0), off_admits 1."""

    def runTest(self):
        action = self.set_policy(OUT_PORT, {**DCBT_CHIPS, "chips_max_tagged_ratio": 0.001},
                                 share_tagged=1.0, share_untagged=1.0)
        self.assertEqual(action.params["chips_tagged_share_limit_q16"], 65)
        kinds = ["tcp"] * TCP_IN_QUEUE + ["tagged"]
        self.assertEqual(predict(action, kinds), ["ADMIT"] * (TCP_IN_QUEUE + 1))
        _, before, _ = self.burst_tcp_then_tagged(action, cut_ins=0)
        got, delta = self.drain(before, list(range(1, TAGGED_ID + 1)))
        self.assertEqual(got, list(range(1, TAGGED_ID + 1)), "FIFO order: ChIPS is off")
        self.assertEqual(delta.chips_events(OUT_PORT),
                         {"on_admits": TCP_IN_QUEUE + 1, "off_admits": 1})


class ChipsVirtualFifoTest(ChipsTest):
    """Virtual FIFO accounting (dcbt §3.2): a tagged packet that cut in and
    left still counts in the tagged class until its FIFO slot leaves, so
    D-CBT's tagged threshold sees it.

    Part 1 is ChipsCutInTest: the tagged packet (id 9) cuts in and leaves.
    Then the policy is modified in place (same epoch: averages kept) to weight 1
    and tagged share 0.1, and a second tagged packet (id 10) arrives while the
    8 TCP packets and the slot are still queued: physical q = 8 (the cut-in
    packet left), virtual tagged count 1. red_avg = 8 > min_th 6; tagged
    threshold 8 * 0.1 = 0.8 packets; tagged_avg = 1 > 0.8: CLASS_THRESHOLD
    drop. Had the tagged count dropped when the packet left (no virtual FIFO),
    tagged_avg would be 0 and the packet admitted."""

    def runTest(self):
        action = self.set_policy(OUT_PORT, DCBT_CHIPS, share_tagged=1.0, share_untagged=1.0)
        model = fpm.PortModel(action, lambda: 0)
        kinds = ["tcp"] * TCP_IN_QUEUE + ["tagged"]
        self.assertEqual(predict(action, kinds, model=model),
                         ["ADMIT"] * TCP_IN_QUEUE + [fpm.CUT_IN])
        second = policy_action(parse_policy({**DCBT_CHIPS, "ewma_weight": 1.0}),
                               policy_epoch=action.params["policy_epoch"], flow_epoch_shift=0,
                               share_tagged=0.1, share_untagged=1.0)
        model.set_policy(second)
        self.assertEqual(model.arrive(C.CLASS_TAGGED, fpm.Occupancy(
            queue_pkts=TCP_IN_QUEUE, tcp_pkts=TCP_IN_QUEUE, tagged_pkts=1)), fpm.CLASS_THRESHOLD)

        _, before, _ = self.burst_tcp_then_tagged(action, cut_ins=1)
        self.assertEqual(self.receive_ids(OUT_PORT, 1, timeout_s=1.0), [TAGGED_ID])
        self.sw.write_port_policy(OUT_PORT, second)
        self.send(burst_packet("tagged", seq=TAGGED_ID + 1, flow=1))
        mid = self.wait_counter(lambda c: sum(c.minus(before).arrivals.values())
                                >= TCP_IN_QUEUE + 3
                                and sum(c.minus(before).departures.values())
                                >= 1 + c.minus(before).cut_ins(OUT_PORT)).minus(before)
        # Only the sacrificial packet may have left the FIFO (cut-ins leave at once).
        if sum(mid.departures.values()) - mid.cut_ins(OUT_PORT) != 1:
            self.skipTest("PRECONDITION MISSED: the FIFO moved before the second tagged packet "
                          "arrived (machine too slow for the frozen queue)")
        self.assertEqual(mid.cut_ins(OUT_PORT), 1, "the second tagged packet must not cut in")
        got = super().collect(OUT_PORT, TCP_IN_QUEUE)
        tu.verify_no_other_packets(self)
        self.assertEqual(got, list(range(1, TCP_IN_QUEUE + 1)))
        delta = self.wait_counter(lambda c: c.minus(before).chips_events(OUT_PORT).get(
            "slot_departed", 0) == 1).minus(before)
        self.assertEqual(delta.drop_reasons(OUT_PORT, C.CLASS_TAGGED), {"CLASS_THRESHOLD": 1})
        self.assertEqual(delta.chips_events(OUT_PORT).get("slot_departed"), 1)


class ChipsEpochRestartTest(ChipsTest):
    """A new policy epoch restarts the tagged share of enqueues along with the
    averages (red_on_policy_epoch, red.p4). chips_ewma_weight 1/2 and ratio
    0.001 (share limit round(0.001 / 1.001 * 2^16) = 65); the queue is not
    frozen (rate unlimited), so every packet arrives at an empty queue and
    leaves at once.
      policy A: one tagged packet: share 0 + (65536 - 0) / 2 = 32768 > 65: off.
      policy B, same parameters, a new epoch: one TCP packet. The share
      restarts at 0 and stays 0 <= 65: on. Had it been kept, 32768 / 2 =
      16384 > 65: off again.
    Counters: off_admits 1, on_admits 1."""

    def runTest(self):
        policy = {**DCBT_CHIPS, "chips_max_tagged_ratio": 0.001, "chips_ewma_weight": 0.5}
        before = self.counters()
        action_a = self.set_policy(OUT_PORT, policy)
        model = fpm.PortModel(action_a, lambda: 0)
        self.assertEqual(model.arrive(C.CLASS_TAGGED, fpm.Occupancy()), "ADMIT")
        self.send(burst_packet("tagged", seq=1))
        self.assertEqual(self.receive_ids(OUT_PORT, 1, timeout_s=2.0), [1])
        action_b = self.set_policy(OUT_PORT, policy)
        self.assertNotEqual(action_a.params["policy_epoch"], action_b.params["policy_epoch"])
        model.set_policy(action_b)
        self.assertEqual(model.arrive(C.CLASS_TCP, fpm.Occupancy()), "ADMIT")
        self.assertEqual(dict(model.chips_events),
                         {"CHIPS_OFF_ADMITS": 1, "CHIPS_ON_ADMITS": 1})
        self.send(burst_packet("tcp", seq=2))
        self.assertEqual(self.receive_ids(OUT_PORT, 1, timeout_s=2.0), [2])
        tu.verify_no_other_packets(self)
        delta = self.wait_counter(
            lambda c: sum(c.minus(before).chips_events(OUT_PORT).values()) >= 2).minus(before)
        self.assertEqual(delta.chips_events(OUT_PORT), {"off_admits": 1, "on_admits": 1})
