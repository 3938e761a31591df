"""RED (Floyd & Jacobson 1993): no drop below min_th, forced drop at or above
max_th, early drops in between at the rate count-spreading gives."""

import random
import statistics

import ptf.testutils as tu

from mmaqm import p4constants as C
from mmaqm_base import OUT_PORT, QueueTest, burst_packet, no_early_drop_max_p, predict


class RedNoDropBelowMinThTest(QueueTest):
    """weight 1 (avg = instantaneous queue), min_th 20: 20 packets arrive at
    occupancy 0..19 < min_th and are all queued; no RED drop is counted."""

    def runTest(self):
        params = self.set_policy(2, {"algorithm": "RED", "queue_limit_pkts": 100, "min_th_pkts": 20,
                                     "max_th_pkts": 40, "max_p": 1.0, "ewma_weight": 1.0})
        kinds = ["tcp"] * 20
        expected = ["ADMIT"] * 20
        self.assertEqual(predict(params, kinds), expected)
        self.run_burst(params, kinds, expected=expected)


class RedForcedDropTest(QueueTest):
    """weight 1/2, min_th 2, max_th 6, max_p such that the slope is 1
    (p_b always 0: no early drops). avg after each arrival, with q = packets queued before it:
      q=0: 0, 1: .5, 2: 1.25, 3: 2.125, 4: 3.0625, 5: 4.03125, 6: 5.015625,
      q=7: 6.0078125 >= max_th -> forced; q stays 7 and avg only rises.
    So 7 are queued and the other 13 are RED_FORCED drops."""

    def runTest(self):
        params = self.set_policy(2, {"algorithm": "RED", "queue_limit_pkts": 100, "min_th_pkts": 2,
                                     "max_th_pkts": 6, "max_p": no_early_drop_max_p(2, 6),
                                     "ewma_weight": 0.5})
        self.assertEqual(params["red_slope_q24"], 1)
        kinds = ["tcp"] * 20
        expected = ["ADMIT"] * 7 + ["RED_FORCED"] * 13
        self.assertEqual(predict(params, kinds), expected)
        self.run_burst(params, kinds, expected=expected)


class RedEarlyDropRateTest(QueueTest):
    """Statistical: 120 TCP packets at a frozen port, weight 1, min_th 5,
    max_th 305, max_p 1 (p_b rises 1/300 per queued packet).

    The reference model, run MC_RUNS times with independent random draws,
    gives the distribution of the number of RED_EARLY drops; the switch's
    count must lie within mean +- 4.5 sd (two-sided false-failure probability
    about 7e-6 under a normal approximation). The bound excludes both "no early
    drops" and "p_b without count spreading", so either bug fails the test."""

    N = 120
    MC_RUNS = 3000
    Z = 4.5

    @staticmethod
    def early_drops(decisions):
        return sum(1 for d in decisions if d == "RED_EARLY")

    def no_spreading_mean(self, params, runs, rng):
        """Mean drop count if each packet were dropped with p_b alone (a bug)."""
        totals = []
        for _ in range(runs):
            q, drops = 1 - 1, 0  # the sacrificial packet left: q starts at 0
            for _ in range(self.N):
                p_b = ((max(q * 65536 - params["min_th_scaled"], 0)) * params["red_slope_q24"]) >> 24
                if q * 65536 >= params["min_th_scaled"] and rng.randrange(65536) < p_b:
                    drops += 1
                else:
                    q += 1
            totals.append(drops)
        return statistics.fmean(totals)

    def runTest(self):
        params = self.set_policy(2, {"algorithm": "RED", "queue_limit_pkts": 1000, "min_th_pkts": 5,
                                     "max_th_pkts": 305, "max_p": 1.0, "ewma_weight": 1.0})
        kinds = ["tcp"] * self.N
        rng = random.Random(20261121)
        samples = [self.early_drops(predict(params, kinds, lambda: rng.randrange(65536)))
                   for _ in range(self.MC_RUNS)]
        mean, sd = statistics.fmean(samples), statistics.pstdev(samples)
        low, high = mean - self.Z * sd, mean + self.Z * sd
        self.assertGreater(low, 0, "the bound must exclude 'no early drops'")
        buggy = self.no_spreading_mean(params, 500, rng)
        self.assertFalse(low <= buggy <= high, f"bound [{low:.1f}, {high:.1f}] must exclude "
                         f"the no-count-spreading mean {buggy:.1f}")

        pkts = [burst_packet("tcp", seq=i + 1, flow=i % 4) for i in range(self.N)]
        before = self.counters()
        self.burst(OUT_PORT, pkts, burst_packet("tcp", seq=self.SACRIFICIAL_ID))
        after = self.wait_counter(lambda c: sum(c.minus(before).arrivals.values()) >= self.N + 1)
        delta = after.minus(before)
        self.assertEqual(sum(delta.arrivals.values()), self.N + 1, "not every packet reached the AQM")
        self.assertEqual(sum(delta.departures.values()), 1, "frozen-queue precondition failed")
        reasons = delta.drop_reasons(OUT_PORT, C.CLASS_TCP)
        early = reasons.pop("RED_EARLY", 0)
        self.assertEqual(reasons, {}, "only early drops are possible below max_th")
        print(f"RED early drops: {early}; model mean {mean:.1f} sd {sd:.1f}, "
              f"bound [{low:.1f}, {high:.1f}], no-spreading mean {buggy:.1f}")
        self.assertTrue(low <= early <= high, f"{early} early drops outside [{low:.1f}, {high:.1f}]")
        admitted = self.N - early
        got = self.collect(OUT_PORT, admitted)
        self.assertEqual(len(got), admitted)
        self.assertEqual(got, sorted(got), "forwarded out of order")
        tu.verify_no_other_packets(self)
