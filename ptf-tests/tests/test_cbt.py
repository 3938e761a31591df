"""CBT (cbt §3, §4.1-4.2): class thresholds on per-class averages, both variants."""

from mmaqm_base import QueueTest, no_early_drop_max_p, predict

BASE = {"queue_limit_pkts": 200, "ewma_weight": 1.0}


class CbtClassThresholdTest(QueueTest):
    """RED for all, weight 1 (class avg = class occupancy), RED idle (min_th 100).
    tagged_th 3: tagged arrive at tagged occupancy 0,1,2,3 (<= 3, queued) then 4 > 3.
    untagged_th 1: occupancy 0,1 queued, then 2 > 1. TCP has no class threshold.
    Pattern (tagged, untagged, tcp) x 8 -> 4 + 2 + 8 queued."""

    def runTest(self):
        for algo in ("CBT_RED_ALL", "CBT_RED_TCP_ONLY"):
            params = self.set_policy(2, dict(BASE, algorithm=algo, min_th_pkts=100, max_th_pkts=110,
                                             max_p=no_early_drop_max_p(100, 110),
                                             tagged_th_pkts=3, untagged_th_pkts=1))
            kinds = ["tagged", "untagged", "tcp"] * 8
            expected = []
            for i in range(8):
                expected += ["ADMIT" if i < 4 else "CLASS_THRESHOLD",
                             "ADMIT" if i < 2 else "CLASS_THRESHOLD", "ADMIT"]
            self.assertEqual(predict(params, kinds), expected, algo)
            self.run_burst(params, kinds, expected=expected)


class CbtRedVariantTest(QueueTest):
    """min_th 4, max_th 6, no early drops, generous class thresholds (50).
    Burst: 10 tagged then 8 TCP.
    RED for all: RED's average is the whole queue and UDP is RED-tested:
      tagged at q 0..5 queued, q=6 forced -> 6 tagged queued, 4 RED_FORCED;
      TCP arrives at q=6 -> all 8 RED_FORCED.
    RED for TCP only: UDP is not RED-tested, RED's average counts TCP only:
      10 tagged queued; TCP at TCP-occupancy 0..5 queued, then 2 RED_FORCED."""

    def runTest(self):
        kinds = ["tagged"] * 10 + ["tcp"] * 8
        cases = {
            "CBT_RED_ALL": ["ADMIT"] * 6 + ["RED_FORCED"] * 4 + ["RED_FORCED"] * 8,
            "CBT_RED_TCP_ONLY": ["ADMIT"] * 10 + ["ADMIT"] * 6 + ["RED_FORCED"] * 2,
        }
        for algo, expected in cases.items():
            params = self.set_policy(2, dict(BASE, algorithm=algo, min_th_pkts=4, max_th_pkts=6,
                                             max_p=no_early_drop_max_p(4, 6),
                                             tagged_th_pkts=50, untagged_th_pkts=50))
            self.assertEqual(predict(params, kinds), expected, algo)
            self.run_burst(params, kinds, expected=expected)
