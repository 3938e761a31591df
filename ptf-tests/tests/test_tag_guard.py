"""The tag guard (tag_guard.p4; docs/algorithms/tag-guard.md): a tagged flow may
send tolerance times the per-flow fair share, and run TAG_GUARD_BURST_PKTS = 4
packets ahead of it; more is dropped early (TAG_GUARD). Off, CBT and D-CBT are
as published.

Flows are 5-tuples: burst_packet's flow f is UDP source port 3000 + f. Each test
class has its own abuser A and honest flow H (FLOWS), all eight slots distinct
(checked): a flow's TAT stays seconds ahead after a test, and the all-in-one
program runs every class on one switch. A burst whose timing precondition
failed is repeated with its flows' TAT zeroed first (before_burst_retry).

Every test's interval is 1 s (tolerance 1, tag_guard_link_pps 2, 2 active
flows: T = 2 * 10^6 / (1 * 2) us), far longer than a burst, so the burst
arrives "at once" as the model assumes (predict: every arrival at time 0). A
flow's first packet finds TAT <= now; each admitted one moves TAT to
max(TAT, now) + T. Packets 1..5 of a flow find TAT = t0 + (k - 1) T <= now + 4 T
and pass; the 6th finds t0 + 5 T > now + 4 T (now - t0 < 1 s): TAG_GUARD."""

from mmaqm import bmv2_tm
from mmaqm import p4constants as C
from mmaqm_base import OUT_PORT, QueueTest, no_early_drop_max_p, predict, tag_guard_slot

INTERVAL_US = 1_000_000
ALL_FLOWS = (0, 1, 2, 3, 4, 5, 6, 7)


class TagGuardRule:
    """What the CBT and D-CBT rules share: the guard's options and the slots check."""

    ALGORITHM = ""      # a mixin of QueueTest: the subclasses name the algorithm
    FLOWS = (0, 1)      # (abuser, honest)

    def guard_options(self, guard: bool) -> dict:
        return {"tag_guard": guard, "tag_guard_tolerance": 1.0,
                **({"tag_guard_link_pps": 2} if guard else {})}

    def before_burst_retry(self) -> None:
        """A discarded attempt moved its flows' TAT seconds ahead; the policy epoch
        does not reset it, so zero it (BMv2's Thrift) before the burst is repeated."""
        base = 1 + OUT_PORT * C.CONSTANTS["TAG_GUARD_SLOTS_PER_PORT"]
        bmv2_tm.register_write(self.thrift_port, [
            ("tag_guard_tat", base + tag_guard_slot("tagged", f), 0) for f in self.FLOWS])

    def check_slots(self) -> None:
        slots = {tag_guard_slot("tagged", f) for f in ALL_FLOWS}
        self.assertEqual(len(slots), len(ALL_FLOWS))


class TagGuardCbtRule(TagGuardRule):
    """CBT, weight 1 (the tagged average is the tagged occupancy), RED idle
    (min_th 100), tagged_th 8: a tagged packet that finds more than 8 tagged
    packets queued is dropped (CLASS_THRESHOLD).
    Burst: 6 of A, then 4 of H.
    Guard off: A all 6 queued; H at tagged occupancy 6, 7, 8 queued, then 9 > 8:
               CLASS_THRESHOLD (the abuser took H's room in the class).
    Guard on : A's packets 1..5 queued, the 6th TAG_GUARD (5 = 1 + the burst of
               4 at a rate of one packet a second); H at occupancy 5..8 and 4
               packets of its own: all queued."""

    def policy(self, guard: bool) -> dict:
        return {"algorithm": self.ALGORITHM, "queue_limit_pkts": 200, "ewma_weight": 1.0,
                "min_th_pkts": 100, "max_th_pkts": 110, "max_p": no_early_drop_max_p(100, 110),
                "tagged_th_pkts": 8, "untagged_th_pkts": 50, **self.guard_options(guard)}

    def runTest(self):
        self.check_slots()
        abuser, honest = self.FLOWS
        kinds = ["tagged"] * 10
        flows = [abuser] * 6 + [honest] * 4
        action = self.set_policy(2, self.policy(False), active_flows=2)
        self.assertEqual(action.params["tag_guard_interval_us"], 0)
        expected = ["ADMIT"] * 6 + ["ADMIT"] * 3 + ["CLASS_THRESHOLD"]
        self.assertEqual(predict(action, kinds, flows=flows), expected)
        self.run_burst(action, kinds, expected=expected, flows=flows)

        action = self.set_policy(2, self.policy(True), active_flows=2)
        self.assertEqual(action.params["tag_guard_interval_us"], INTERVAL_US)
        expected = ["ADMIT"] * 5 + ["TAG_GUARD"] + ["ADMIT"] * 4
        self.assertEqual(predict(action, kinds, flows=flows), expected)
        _, delta = self.run_burst(action, kinds, expected=expected, flows=flows)
        self.assertEqual(delta.drop_reasons(2, 1), {"TAG_GUARD": 1})


class TagGuardCbtRedAllTest(TagGuardCbtRule, QueueTest):
    ALGORITHM = "CBT_RED_ALL"
    FLOWS = (0, 1)


class TagGuardCbtRedTcpOnlyTest(TagGuardCbtRule, QueueTest):
    ALGORITHM = "CBT_RED_TCP_ONLY"
    FLOWS = (2, 3)


class TagGuardDcbtRule(TagGuardRule):
    """D-CBT, weight 1 (red_avg = queue, tagged_avg = tagged occupancy), min_th 6,
    only tagged traffic: share_tagged 1, the tagged threshold red_avg itself, which
    the tagged average never exceeds.
    Burst: 14 of A, then 3 of H.
    Guard off: all 17 queued (the papers' D-CBT: the class is within its share).
    Guard on : the guard tests every tagged packet, also while red_avg <= min_th
               and D-CBT's class test is off: A's packets 1..5 at q 0..4 queued,
               its 6th..14th at q 5 (5 <= 6: only the guard could drop them):
               TAG_GUARD. H at q 5, 6, 7, its packets 1..3: queued (at q 7 > 6
               the class test runs first: tagged_avg 7 is not above 7 * 1).
    ChIPS (DCBT_CHIPS, 2^-9 weight: the tagged share stays below 1/3, ChIPS on):
    the queue a packet finds is never above red_avg = that queue, so no cut-in."""

    def policy(self, guard: bool) -> dict:
        return {"algorithm": self.ALGORITHM, "queue_limit_pkts": 200, "ewma_weight": 1.0,
                "min_th_pkts": 6, "max_th_pkts": 100, "max_p": no_early_drop_max_p(6, 100),
                **self.guard_options(guard)}

    def runTest(self):
        self.check_slots()
        abuser, honest = self.FLOWS
        kinds = ["tagged"] * 17
        flows = [abuser] * 14 + [honest] * 3
        action = self.set_policy(2, self.policy(False), share_tagged=1.0, share_untagged=0.0,
                                 active_flows=2)
        expected = ["ADMIT"] * 17
        self.assertEqual(predict(action, kinds, flows=flows), expected)
        self.run_burst(action, kinds, expected=expected, flows=flows)

        action = self.set_policy(2, self.policy(True), share_tagged=1.0, share_untagged=0.0,
                                 active_flows=2)
        self.assertEqual(action.params["tag_guard_interval_us"], INTERVAL_US)
        expected = ["ADMIT"] * 5 + ["TAG_GUARD"] * 9 + ["ADMIT"] * 3
        self.assertEqual(predict(action, kinds, flows=flows), expected)
        _, delta = self.run_burst(action, kinds, expected=expected, flows=flows)
        self.assertEqual(delta.drop_reasons(2, 1), {"TAG_GUARD": 9})


class TagGuardDcbtTest(TagGuardDcbtRule, QueueTest):
    ALGORITHM = "DCBT"
    FLOWS = (4, 5)


class TagGuardDcbtChipsTest(TagGuardDcbtRule, QueueTest):
    ALGORITHM = "DCBT_CHIPS"
    FLOWS = (6, 7)
