"""MCDT (mcdt §II.2, Fig. 2's modes A, B, C): per-packet class threshold test on
the class's logical queue, then the queue limit. Mode A: the class's own count;
mode B: the whole queue; mode C: A's test, only while the queue holds at least
the three thresholds' sum (mmaqm.algorithms.mcdt). The thresholds are installed
directly (the controller's per-period arithmetic, eqs. 5-10, has its unit
tests; McdtPeriodUpdateTest runs one period against this switch); every
expected outcome is worked out by hand and cross-checked with two
reference models: mmaqm_oracle.fixedpoint_model.PortModel (via predict) and
mmaqm_oracle.mcdt_reference.decide."""

import dataclasses

from mmaqm import p4constants as C
from mmaqm.algorithms import mcdt
from mmaqm.config import parse_policy
from mmaqm.controller import SwitchController
from mmaqm_oracle.fixedpoint_model import Occupancy
from mmaqm_oracle import mcdt_reference

from mmaqm_base import CLASS_OF, CONFIG, SWITCH, QueueTest, admitted, burst_packet, predict

TCP, TAGGED, UNTAGGED = C.CLASS_TCP, C.CLASS_TAGGED, C.CLASS_UNTAGGED


def decide_all(th_pkts: dict[int, int], limit: int, kinds: list[str],
               mode: str = "A") -> list[str]:
    """mcdt.decide over a frozen burst after the sacrificial TCP packet (which left)."""
    counts = {TCP: 0, TAGGED: 0, UNTAGGED: 0}
    out = []
    for kind in kinds:
        cls = C.CLASSES[CLASS_OF[kind]]
        occ = Occupancy(queue_pkts=sum(counts.values()), tcp_pkts=counts[TCP],
                        tagged_pkts=counts[TAGGED], untagged_pkts=counts[UNTAGGED])
        decision = mcdt_reference.decide(cls, occ, th_pkts, limit, mode)
        if admitted(decision):
            counts[cls] += 1
        out.append(decision)
    return out


class McdtMixin(QueueTest):
    def check(self, th_pkts: dict[int, int], limit: int, kinds: list[str],
              expected: list[str], mode: str = "A") -> None:
        action = self.set_policy(2, {"algorithm": "MCDT", "queue_limit_pkts": limit,
                                     "mcdt_mode": mode}, mcdt_th_pkts=th_pkts)
        self.assertEqual(action.params["tcp_th_pkts"], th_pkts[TCP])
        self.assertEqual(action.params["mcdt_mode"], mcdt.MODE_NAMES[mode])
        self.assertEqual(predict(action, kinds), expected, "PortModel")
        self.assertEqual(decide_all(th_pkts, limit, kinds, mode), expected, "mcdt.decide")
        self.run_burst(action, kinds, expected=expected)


class McdtClassThresholdTest(McdtMixin):
    """Thresholds TCP 1, tagged 3, untagged 0 packets; limit 100 (never reached).
    A class whose count before the packet equals its threshold admits; one above
    drops with CLASS_THRESHOLD (mcdt §II.2: "exceeds").
    6 tagged: counts 0, 1, 2, 3 admitted, 4, 4 -> 2 CLASS_THRESHOLD.
    Then, with tagged over its threshold, TCP and untagged alternate:
      TCP counts 0, 1 admitted, then 2, 2 > 1 -> 2 CLASS_THRESHOLD;
      untagged count 0 admitted, then 1, 1 > 0 -> 2 CLASS_THRESHOLD.
    A last tagged: count 4 > 3 -> CLASS_THRESHOLD.
    Per class: TCP 2 admitted (+ the sacrificial one) 2 dropped, tagged 4 / 3,
    untagged 1 / 2; the queue holds 7 packets."""

    def runTest(self):
        kinds = ["tagged"] * 6 + ["tcp", "untagged"] * 3 + ["tcp", "tagged"]
        a, d = "ADMIT", "CLASS_THRESHOLD"
        expected = [a, a, a, a, d, d] + [a, a, a, d, d, d] + [d, d]
        self.check({TCP: 1, TAGGED: 3, UNTAGGED: 0}, 100, kinds, expected)


class McdtOtherClassesUnaffectedTest(McdtMixin):
    """Thresholds TCP 0, tagged 0, untagged 5; limit 100. TCP and tagged are
    capped at one packet each (count 0 admitted, count 1 > 0 dropped), while
    untagged at counts 0..5 is admitted and only its 7th (count 6 > 5) drops:
    a class's threshold judges only its own logical count, not the queue
    (at the 7th untagged the queue holds 8 > 5).
    (untagged, tcp, tagged) x 3 then untagged x 4:
      untagged: counts 0, 1, 2, then 3, 4, 5, 6 -> 6 admitted, 1 CLASS_THRESHOLD;
      TCP and tagged: 1 admitted, 2 CLASS_THRESHOLD each."""

    def runTest(self):
        kinds = ["untagged", "tcp", "tagged"] * 3 + ["untagged"] * 4
        a, d = "ADMIT", "CLASS_THRESHOLD"
        expected = [a, a, a] + [a, d, d] * 2 + [a, a, a, d]
        self.check({TCP: 0, TAGGED: 0, UNTAGGED: 5}, 100, kinds, expected)


class McdtQueueLimitTest(McdtMixin):
    """The queue limit holds under MCDT, after the threshold test.
    Limit 5 = B, thresholds B each (their most, as before the first update):
    7 TCP -> queue 0..4 admitted, then TCP count 5 is not > 5 but queue 5 >= 5 ->
    2 QUEUE_LIMIT.
    Limit 5, tagged threshold 1 (TCP, untagged 5): tagged x 2 (counts 0, 1),
    TCP x 3 (queue 2, 3, 4) admitted; the queue is full (5). A tagged packet
    (count 2 > 1) is CLASS_THRESHOLD, not QUEUE_LIMIT: the class test comes
    first; then TCP and untagged -> QUEUE_LIMIT."""

    def runTest(self):
        self.check({TCP: 5, TAGGED: 5, UNTAGGED: 5}, 5, ["tcp"] * 7,
                   ["ADMIT"] * 5 + ["QUEUE_LIMIT"] * 2)
        kinds = ["tagged"] * 2 + ["tcp"] * 3 + ["tagged", "tcp", "untagged"]
        self.check({TCP: 5, TAGGED: 1, UNTAGGED: 5}, 5, kinds,
                   ["ADMIT"] * 5 + ["CLASS_THRESHOLD", "QUEUE_LIMIT", "QUEUE_LIMIT"])


class McdtModeBWholeQueueTest(McdtMixin):
    """Mode B: a class's threshold judges the whole queue before the packet.
    Thresholds TCP 5, tagged 2, untagged 3; limit 100 (never reached).
      tagged x 4: queue 0, 1, 2 admitted; queue 3 > 2 -> CLASS_THRESHOLD (queue 3);
      untagged x 2: queue 3 (not > 3) admitted; queue 4 > 3 -> CLASS_THRESHOLD;
      TCP x 4: queue 4, 5 admitted; queue 6, 6 > 5 -> 2 CLASS_THRESHOLD;
      tagged, untagged: queue 6 > 2, 6 > 3 -> CLASS_THRESHOLD, although the
      untagged class's own count (1) is under its threshold.
    Per class: tagged 3 admitted / 2 dropped, untagged 1 / 2, TCP 2 (+ the
    sacrificial one) / 2. Mode A on the same burst (second check) admits untagged
    at counts 0, 1, 2 and TCP at counts 0..3, and drops only tagged at count
    3 > 2, twice."""

    def runTest(self):
        kinds = ["tagged"] * 4 + ["untagged"] * 2 + ["tcp"] * 4 + ["tagged", "untagged"]
        a, d = "ADMIT", "CLASS_THRESHOLD"
        th = {TCP: 5, TAGGED: 2, UNTAGGED: 3}
        self.check(th, 100, kinds, [a, a, a, d] + [a, d] + [a, a, d, d] + [d, d], mode="B")
        self.check(th, 100, kinds, [a, a, a, d] + [a, a] + [a, a, a, a] + [d, a], mode="A")


class McdtModeCLogicalBuffersFullTest(McdtMixin):
    """Mode C: a class above its threshold is cut only while the queue holds at
    least the thresholds' sum. Thresholds TCP 2, tagged 1, untagged 1 (sum 4);
    limit 100.
      tagged x 5: queue 0..3 < 4 -> admitted (counts 2 and 3 exceed 1, the
      buffers are not full); queue 4 = 4, count 4 > 1 -> CLASS_THRESHOLD;
      TCP x 4: counts 0, 1, 2 admitted (queue 4..6, full, but not above 2);
      count 3 > 2 at queue 7 -> CLASS_THRESHOLD;
      untagged x 3: counts 0, 1 admitted; count 2 > 1 at queue 9 -> CLASS_THRESHOLD.
    Per class: tagged 4 admitted / 1 dropped, TCP 3 (+ the sacrificial one) / 1,
    untagged 2 / 1.
    Then the queue limit under mode C: thresholds 3 each (sum 9), limit 5, 7 TCP:
    queue 0..4 admitted; TCP count 5 > 3 but queue 5 < 9: no class drop, and
    queue 5 >= 5 -> 2 QUEUE_LIMIT (mode A would cut count 4 > 3 as CLASS_THRESHOLD)."""

    def runTest(self):
        kinds = ["tagged"] * 5 + ["tcp"] * 4 + ["untagged"] * 3
        a, d = "ADMIT", "CLASS_THRESHOLD"
        self.check({TCP: 2, TAGGED: 1, UNTAGGED: 1}, 100, kinds,
                   [a, a, a, a, d] + [a, a, a, d] + [a, a, d], mode="C")
        self.check({TCP: 3, TAGGED: 3, UNTAGGED: 3}, 5, ["tcp"] * 7,
                   [a] * 5 + ["QUEUE_LIMIT"] * 2, mode="C")
        self.check({TCP: 3, TAGGED: 3, UNTAGGED: 3}, 5, ["tcp"] * 7,
                   [a] * 4 + [d] * 3, mode="A")


class McdtModesRandomBurstTest(McdtMixin):
    """Each mode on one seeded random burst (30 packets of random classes,
    thresholds 0..6, limit 12), the switch against the two reference models:
    the hand-worked tests above fix the rules, this one checks that nothing
    else differs on sequences nobody worked out. The bursts are fixed by the
    seed, chosen so that each mode's burst has a CLASS_THRESHOLD drop and an
    admit, and would end differently under either other mode."""

    def runTest(self):
        import random
        rng = random.Random(20261128)
        for mode in ("A", "B", "C"):
            th = {c: rng.randint(0, 6) for c in (TCP, TAGGED, UNTAGGED)}
            kinds = [rng.choice(["tcp", "tagged", "untagged"]) for _ in range(30)]
            expected = decide_all(th, 12, kinds, mode)
            self.assertIn("CLASS_THRESHOLD", expected, (mode, th))
            self.assertIn("ADMIT", expected, (mode, th))
            for other in {"A", "B", "C"} - {mode}:
                self.assertNotEqual(decide_all(th, 12, kinds, other), expected, (mode, other))
            self.check(th, 12, kinds, expected, mode=mode)


class McdtPeriodUpdateTest(QueueTest):
    """One controller period against the real switch (mcdt §II.2, eqs. 5-10).
    MCDT on port 2, B = 100, thresholds 100 each; 4 untagged pass; the
    controller's first mcdt_update only reads the period start. 10 TCP, 20 tagged, 5 untagged then
    pass an unfrozen port (the queue is empty again: Q = 0). The second update
    reads those arrivals from the counters and must modify the entry to
    alpha = 16, 16, 3 (sum 35); T5 = alpha * 100 / 36 = 44.44, 44.44, 8.33;
    R = (100 - 97.22) / 3 = 0.93; T = 0.7 (T5 + R) + 0.3 * 100 = 61.76, 61.76,
    36.48 -> 61, 61, 36 packets, with the same policy epoch. The new entry is
    live: a frozen burst of 38 untagged admits counts 0..36 and drops the 38th
    (count 37 > 36) as CLASS_THRESHOLD."""

    def pass_through(self, kinds: list[str], first_seq: int = 1):
        """Send through the unfrozen port 2; every packet leaves; the counter delta."""
        before = self.counters()
        seqs = list(range(first_seq, first_seq + len(kinds)))
        for seq, kind in zip(seqs, kinds):
            self.send(burst_packet(kind, seq=seq))
        self.assertEqual(self.receive_ids(2, len(kinds), timeout_s=5.0), seqs)
        return self.wait_counter(lambda c: sum(c.minus(before).departures.values())
                                 >= len(kinds)).minus(before)

    def runTest(self):
        policy = parse_policy({"algorithm": "MCDT", "queue_limit_pkts": 100})
        switch = dataclasses.replace(SWITCH, policies={**SWITCH.policies, 2: policy})
        controller = SwitchController(CONFIG, switch, self.sw.driver)
        installed = self.set_policy(2, policy)
        controller.epochs[2] = installed.params["policy_epoch"]
        controller.flow_epoch_shift = installed.params["flow_epoch_shift"]  # the suite's 0
        controller.pushed[2] = installed
        controller.mcdt_th_scaled[2] = mcdt.initial_th_scaled(100)
        # Earlier arrivals (4 untagged) must not count: the period starts at the first read.
        self.pass_through(["untagged"] * 4, first_seq=100)
        self.assertFalse(self.sw.run(controller.mcdt_update(2)), "the first update only reads")

        delta = self.pass_through(["tcp"] * 10 + ["tagged"] * 20 + ["untagged"] * 5)
        self.assertEqual(delta.per_class(delta.departures, 2),
                         {"TCP": 10, "TAGGED": 20, "UNTAGGED": 5})

        self.assertTrue(self.sw.run(controller.mcdt_update(2)))
        expected = mcdt.period_update({TCP: 10, TAGGED: 20, UNTAGGED: 5}, 0)
        self.assertEqual(expected.th_pkts, {TCP: 61, TAGGED: 61, UNTAGGED: 36})
        want = installed.with_params(tcp_th_pkts=61, tagged_th_pkts=61, untagged_th_pkts=36)
        self.assertEqual(self.sw.read_port_policy(2), want)
        self.assertEqual(controller.mcdt_th_scaled[2], expected.th_scaled)

        burst = ["untagged"] * 38
        decisions = ["ADMIT"] * 37 + ["CLASS_THRESHOLD"]
        self.assertEqual(predict(want, burst), decisions)
        self.run_burst(want, burst, expected=decisions)
