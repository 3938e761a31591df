"""DROP_TAIL: the P4 queue limit is the only drop; the TM never drops (its depth is larger)."""

from mmaqm_base import QueueTest, predict


class DropTailQueueLimitTest(QueueTest):
    """queue_limit 8: of 12 back-to-back packets at a frozen port, 8 are queued
    (occupancy 0..7 at arrival) and 4 are dropped as QUEUE_LIMIT."""

    def runTest(self):
        action = self.set_policy(2, {"algorithm": "DROP_TAIL", "queue_limit_pkts": 8})
        kinds = ["untagged"] * 6 + ["tcp"] * 6
        expected = ["ADMIT"] * 8 + ["QUEUE_LIMIT"] * 4
        self.assertEqual(predict(action, kinds), expected)
        self.run_burst(action, kinds, expected=expected)
