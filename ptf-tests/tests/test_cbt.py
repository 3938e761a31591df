"""CBT (cbt §3, §4.1-4.2): class thresholds on per-class averages, both variants."""

from mmaqm_base import QueueTest, no_early_drop_max_p, predict

BASE = {"queue_limit_pkts": 200, "ewma_weight": 1.0}


class CbtClassThresholdTest(QueueTest):
    """RED for all, weight 1 (class avg = class occupancy), RED idle (min_th 100).
    tagged_th 3: tagged arrive at tagged occupancy 0,1,2,3 (<= 3, queued) then 4 > 3.
    untagged_th 1: occupancy 0,1 queued, then 2 > 1. TCP has no class threshold.
    Pattern (tagged, untagged, tcp) x 8 -> 4 + 2 + 8 queued."""

    def runTest(self):
        for algo in self.algorithms_here("CBT_RED_ALL", "CBT_RED_TCP_ONLY"):
            action = self.set_policy(2, dict(BASE, algorithm=algo, min_th_pkts=100, max_th_pkts=110,
                                             max_p=no_early_drop_max_p(100, 110),
                                             tagged_th_pkts=3, untagged_th_pkts=1))
            kinds = ["tagged", "untagged", "tcp"] * 8
            expected = []
            for i in range(8):
                expected += ["ADMIT" if i < 4 else "CLASS_THRESHOLD",
                             "ADMIT" if i < 2 else "CLASS_THRESHOLD", "ADMIT"]
            self.assertEqual(predict(action, kinds), expected, algo)
            self.run_burst(action, kinds, expected=expected)


class CbtRedVariantTest(QueueTest):
    """min_th 4, max_th 6, no early drops, generous class thresholds (50).
    Burst: 10 tagged, 8 TCP, then 4 tagged.
    RED for all: RED's average is the whole queue and UDP is RED-tested:
      tagged at q 0..5 queued, q=6 forced -> 6 tagged queued, 4 RED_FORCED;
      TCP arrives at q=6 -> all 8 RED_FORCED; so do the last 4 tagged.
    RED for TCP only: UDP is not RED-tested, RED's average counts TCP only:
      10 tagged queued; TCP at TCP-occupancy 0..5 queued, then 2 RED_FORCED;
      the last 4 tagged are queued although RED's average is at max_th."""

    def runTest(self):
        kinds = ["tagged"] * 10 + ["tcp"] * 8 + ["tagged"] * 4
        cases = {
            "CBT_RED_ALL": ["ADMIT"] * 6 + ["RED_FORCED"] * 4 + ["RED_FORCED"] * 8
                           + ["RED_FORCED"] * 4,
            "CBT_RED_TCP_ONLY": ["ADMIT"] * 10 + ["ADMIT"] * 6 + ["RED_FORCED"] * 2 + ["ADMIT"] * 4,
        }
        for algo in self.algorithms_here(*cases):
            expected = cases[algo]
            action = self.set_policy(2, dict(BASE, algorithm=algo, min_th_pkts=4, max_th_pkts=6,
                                             max_p=no_early_drop_max_p(4, 6),
                                             tagged_th_pkts=50, untagged_th_pkts=50))
            self.assertEqual(predict(action, kinds), expected, algo)
            self.run_burst(action, kinds, expected=expected)


class CbtClassAverageTest(QueueTest):
    """Weight 1/4 (every other CBT test uses weight 1, where an average is just
    the occupancy): a class average is an EWMA updated on arrivals of that class
    only (cbt §3). tagged_th = untagged_th = 1.5, RED idle (min_th 100).
    Pattern (tagged, untagged, tcp) x 8: each UDP class arrives at its own
    occupancy 0, 1, 2, 3, 4 -> average 0, .25, .69, 1.27, then 1.95 > 1.5, so
    the 5th tagged and the 5th untagged are dropped, and every later one
    (occupancy stays 4) -> 4 + 4 + 8 queued. Averages equal to the occupancy
    would drop the 3rd of each class; averages also updated on the other
    classes' arrivals would drop the 4th."""

    def runTest(self):
        for algo in self.algorithms_here("CBT_RED_ALL", "CBT_RED_TCP_ONLY"):
            action = self.set_policy(2, dict(BASE, algorithm=algo, min_th_pkts=100, max_th_pkts=110,
                                             max_p=no_early_drop_max_p(100, 110), ewma_weight=0.25,
                                             tagged_th_pkts=1.5, untagged_th_pkts=1.5))
            kinds = ["tagged", "untagged", "tcp"] * 8
            expected = []
            for i in range(8):
                udp = "ADMIT" if i < 4 else "CLASS_THRESHOLD"
                expected += [udp, udp, "ADMIT"]
            self.assertEqual(predict(action, kinds), expected, algo)
            self.run_burst(action, kinds, expected=expected)


class CbtTcpOnlyAverageTest(QueueTest):
    """RED for TCP only, weight 1/2: RED's average moves on TCP arrivals only
    (with weight 1 each update overwrites the last, so this needs w < 1).
    min_th 2, max_th 4, no early drops, class thresholds 50.
    10 tagged (queued, not RED-tested), then 8 TCP at TCP occupancy 0, 1, ...:
    average 0, .5, 1.25, 2.13, 3.06, then 4.03 >= max_th -> 5 TCP queued,
    3 RED_FORCED. Had the tagged arrivals moved RED's average towards the
    queue, the first TCP would meet an average of 4 and be dropped."""

    def runTest(self):
        action = self.set_policy(2, dict(BASE, algorithm="CBT_RED_TCP_ONLY", min_th_pkts=2,
                                         max_th_pkts=4, max_p=no_early_drop_max_p(2, 4),
                                         ewma_weight=0.5, tagged_th_pkts=50, untagged_th_pkts=50))
        kinds = ["tagged"] * 10 + ["tcp"] * 8
        expected = ["ADMIT"] * 10 + ["ADMIT"] * 5 + ["RED_FORCED"] * 3
        self.assertEqual(predict(action, kinds), expected)
        self.run_burst(action, kinds, expected=expected)
