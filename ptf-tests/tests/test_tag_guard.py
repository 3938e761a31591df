"""The tag guard (tag_guard.p4; docs/algorithms/tag-guard.md): a tagged flow
may queue its part of the tagged class threshold, tolerance / tagged flows of
it; more is dropped early (TAG_GUARD). Off, CBT and D-CBT are as published.

Flows are 5-tuples: burst_packet's flow f is UDP source port 3000 + f. A = flow
0 (the abuser), H = flow 1 (honest); their slots differ (checked)."""

from mmaqm_base import QueueTest, no_early_drop_max_p, predict, tag_guard_slot

ABUSER, HONEST = 0, 1


class TagGuardCbtRule:
    """CBT, weight 1 (the tagged average is the tagged occupancy), RED idle
    (min_th 100), tagged_th 8, tolerance 1, 2 tagged flows: tag_guard_flow_q16 =
    2^16 / 2 = 32768; a flow's part 8 * 1/2 = 4 packets: qlen << 32 >= (8 << 16)
    * 32768 = 2^34 <=> qlen >= 4.
    Burst: 6 of A, then 4 of H.
    Guard on : A at qlen 0..3 queued, then qlen 4, 4 >= 4: TAG_GUARD twice;
               H at tagged occupancy 4..7, qlen 0..3: all queued.
    Guard off: A all 6 queued; H at occupancy 6, 7, 8 queued, then 9 > 8:
               CLASS_THRESHOLD (the abuser took H's room in the class).
    The guard-on burst runs twice: the slots' counts went back to 0 when the
    first burst left (egress), or the second burst would lose more."""

    ALGORITHM = ""   # a mixin of QueueTest: the subclasses name the algorithm

    def policy(self, guard: bool) -> dict:
        return {"algorithm": self.ALGORITHM, "queue_limit_pkts": 200, "ewma_weight": 1.0,
                "min_th_pkts": 100, "max_th_pkts": 110, "max_p": no_early_drop_max_p(100, 110),
                "tagged_th_pkts": 8, "untagged_th_pkts": 50, "tag_guard": guard,
                "tag_guard_tolerance": 1.0}

    def runTest(self):
        self.assertNotEqual(tag_guard_slot("tagged", ABUSER), tag_guard_slot("tagged", HONEST))
        kinds = ["tagged"] * 10
        flows = [ABUSER] * 6 + [HONEST] * 4
        action = self.set_policy(2, self.policy(False), tagged_flows=2)
        self.assertEqual(action.params["tag_guard_flow_q16"], 0)
        expected = ["ADMIT"] * 6 + ["ADMIT"] * 3 + ["CLASS_THRESHOLD"]
        self.assertEqual(predict(action, kinds, flows=flows), expected)
        self.run_burst(action, kinds, expected=expected, flows=flows)

        action = self.set_policy(2, self.policy(True), tagged_flows=2)
        self.assertEqual(action.params["tag_guard_flow_q16"], 32768)
        expected = ["ADMIT"] * 4 + ["TAG_GUARD"] * 2 + ["ADMIT"] * 4
        self.assertEqual(predict(action, kinds, flows=flows), expected)
        for _ in range(2):
            _, delta = self.run_burst(action, kinds, expected=expected, flows=flows)
        self.assertEqual(delta.drop_reasons(2, 1), {"TAG_GUARD": 2})


class TagGuardCbtRedAllTest(TagGuardCbtRule, QueueTest):
    ALGORITHM = "CBT_RED_ALL"


class TagGuardCbtRedTcpOnlyTest(TagGuardCbtRule, QueueTest):
    ALGORITHM = "CBT_RED_TCP_ONLY"


class TagGuardDcbtRule:
    """D-CBT, weight 1 (red_avg = queue, tagged_avg = tagged occupancy), min_th 6,
    only tagged traffic: share_tagged 1, the tagged threshold red_avg itself, which
    the tagged average never exceeds. Tolerance 1, 2 tagged flows: q16 32768.
    Burst: 12 of A, then 3 of H.
    Guard on : A at q 0..6: red_avg <= min_th, no test; queued and counted
               (qlen 0..6). A at q 7: 7 > 6, class threshold 7 << 16, qlen 7:
               7 << 32 >= (7 << 16) * 32768 = 7 << 31: TAG_GUARD, and q stays 7:
               5 TAG_GUARD. H at q 7, 8, 9 with qlen 0, 1, 2: 0 and 1 are below
               TAG_GUARD_MIN_PKTS; 2 << 32 >= (9 << 16) * 32768 is 2 >= 4.5, no:
               all 3 queued.
    Guard off: all 15 queued (the papers' D-CBT: the class is within its share).
    ChIPS (DCBT_CHIPS, 2^-9 weight: the tagged share stays below 1/3, ChIPS on):
    the queue a packet finds is never above red_avg = that queue, so no cut-in."""

    ALGORITHM = ""   # a mixin of QueueTest: the subclasses name the algorithm

    def policy(self, guard: bool) -> dict:
        return {"algorithm": self.ALGORITHM, "queue_limit_pkts": 200, "ewma_weight": 1.0,
                "min_th_pkts": 6, "max_th_pkts": 100, "max_p": no_early_drop_max_p(6, 100),
                "tag_guard": guard, "tag_guard_tolerance": 1.0}

    def runTest(self):
        kinds = ["tagged"] * 15
        flows = [ABUSER] * 12 + [HONEST] * 3
        action = self.set_policy(2, self.policy(False), share_tagged=1.0, share_untagged=0.0,
                                 tagged_flows=2)
        expected = ["ADMIT"] * 15
        self.assertEqual(predict(action, kinds, flows=flows), expected)
        self.run_burst(action, kinds, expected=expected, flows=flows)

        action = self.set_policy(2, self.policy(True), share_tagged=1.0, share_untagged=0.0,
                                 tagged_flows=2)
        expected = ["ADMIT"] * 7 + ["TAG_GUARD"] * 5 + ["ADMIT"] * 3
        self.assertEqual(predict(action, kinds, flows=flows), expected)
        _, delta = self.run_burst(action, kinds, expected=expected, flows=flows)
        self.assertEqual(delta.drop_reasons(2, 1), {"TAG_GUARD": 5})


class TagGuardDcbtTest(TagGuardDcbtRule, QueueTest):
    ALGORITHM = "DCBT"


class TagGuardDcbtChipsTest(TagGuardDcbtRule, QueueTest):
    ALGORITHM = "DCBT_CHIPS"
