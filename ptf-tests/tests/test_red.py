"""RED (Floyd & Jacobson 1993): no drop below min_th, forced drop at or above
max_th, early drops in between at the rate count-spreading gives."""

import random
import statistics

import ptf.testutils as tu

from mmaqm import fixedpoint as fp
from mmaqm import p4constants as C
from mmaqm_oracle import fixedpoint_model as fpm
from mmaqm_base import OUT_PORT, QueueTest, burst_packet, no_early_drop_max_p, predict


class RedNoDropBelowMinThTest(QueueTest):
    """weight 1 (avg = instantaneous queue), min_th 20: 20 packets arrive at
    occupancy 0..19 < min_th and are all queued; no RED drop is counted."""

    def runTest(self):
        action = self.set_policy(2, {"algorithm": "RED", "queue_limit_pkts": 100, "min_th_pkts": 20,
                                     "max_th_pkts": 40, "max_p": 1.0, "ewma_weight": 1.0})
        kinds = ["tcp"] * 20
        expected = ["ADMIT"] * 20
        self.assertEqual(predict(action, kinds), expected)
        self.run_burst(action, kinds, expected=expected)


class RedForcedDropTest(QueueTest):
    """weight 1/2, min_th 2, max_th 6, max_p such that the slope is 1
    (p_b always 0: no early drops). avg after each arrival, with q = packets queued before it:
      q=0: 0, 1: .5, 2: 1.25, 3: 2.125, 4: 3.0625, 5: 4.03125, 6: 5.015625,
      q=7: 6.0078125 >= max_th -> forced; q stays 7 and avg only rises.
    So 7 are queued and the other 13 are RED_FORCED drops."""

    def runTest(self):
        action = self.set_policy(2, {"algorithm": "RED", "queue_limit_pkts": 100, "min_th_pkts": 2,
                                     "max_th_pkts": 6, "max_p": no_early_drop_max_p(2, 6),
                                     "ewma_weight": 0.5})
        self.assertEqual(action.params["red_slope_q24"], 1)
        kinds = ["tcp"] * 20
        expected = ["ADMIT"] * 7 + ["RED_FORCED"] * 13
        self.assertEqual(predict(action, kinds), expected)
        self.run_burst(action, kinds, expected=expected)


class RedForcedAtExactlyMaxThTest(QueueTest):
    """The forced drop starts AT max_th (avg >= max_th), not above it.
    Weight 1 (avg = q, packets queued before the arrival), min_th 2, max_th 6,
    slope 1: p_b = (avg - min_th) * 1 >> 24 = 0 below max_th, no early drops.
    q = 0..5: admitted; q = 6: avg = 6 = max_th -> RED_FORCED, and q stays 6:
    6 queued, 6 forced drops. With '>' the q = 6 packet would enter the early
    zone (p_b 0), be admitted, and only q = 7 would be forced: 7 queued."""

    def runTest(self):
        action = self.set_policy(2, {"algorithm": "RED", "queue_limit_pkts": 100, "min_th_pkts": 2,
                                     "max_th_pkts": 6, "max_p": no_early_drop_max_p(2, 6),
                                     "ewma_weight": 1.0})
        kinds = ["tcp"] * 12
        expected = ["ADMIT"] * 6 + ["RED_FORCED"] * 6
        self.assertEqual(predict(action, kinds), expected)
        self.run_burst(action, kinds, expected=expected)


class RedEarlyDropRateTest(QueueTest):
    """Statistical: 120 TCP packets at a frozen port, weight 1, min_th 5,
    max_th 305, max_p 1 (p_b rises 1/300 per queued packet).

    The reference model, run MC_RUNS times with independent random draws,
    gives the distribution of the number of RED_EARLY drops; the switch's
    count must lie within mean +- 4.5 sd (two-sided false-failure probability
    about 7e-6 under a normal approximation). The bound excludes "no early
    drops" and the mean of "p_b without count spreading".

    The count alone has little power against the latter (a switch dropping
    with p_b alone lands inside the bound in about a third of runs), so the
    sequence is checked too. The frozen queue makes every packet's q, hence
    p_b, known, and which packets were dropped is known from the forwarded
    ids. Exact consequences of "drop when count * p_b > R, R in [0, 2^16)":
      - a packet is never admitted with count * p_b >= 2^16 (the gap between
        drops is at most 1/p_b; with p_b alone it is geometric, unbounded);
      - a packet is never dropped with count * p_b == 0 (strict '>');
      - R is redrawn after every drop: the R values that each gap allows
        (admitted: R >= count * p_b; the drop: R < count * p_b) have no
        common value (they do if R is never redrawn)."""

    N = 120
    MC_RUNS = 3000
    Z = 4.5

    @staticmethod
    def early_drops(decisions):
        return sum(1 for d in decisions if d == "RED_EARLY")

    def no_spreading_mean(self, action, runs, rng):
        """Mean drop count if each packet were dropped with p_b alone (a bug)."""
        totals = []
        for _ in range(runs):
            q, drops = 1 - 1, 0  # the sacrificial packet left: q starts at 0
            for _ in range(self.N):
                p_b = ((max(q * 65536 - action.params["min_th_scaled"], 0)) * action.params["red_slope_q24"]) >> 24
                if q * 65536 >= action.params["min_th_scaled"] and rng.randrange(65536) < p_b:
                    drops += 1
                else:
                    q += 1
            totals.append(drops)
        return statistics.fmean(totals)

    def runTest(self):
        action = self.set_policy(2, {"algorithm": "RED", "queue_limit_pkts": 1000, "min_th_pkts": 5,
                                     "max_th_pkts": 305, "max_p": 1.0, "ewma_weight": 1.0})
        kinds = ["tcp"] * self.N
        rng = random.Random(20261121)
        samples = [self.early_drops(predict(action, kinds, lambda: rng.randrange(65536)))
                   for _ in range(self.MC_RUNS)]
        mean, sd = statistics.fmean(samples), statistics.pstdev(samples)
        low, high = mean - self.Z * sd, mean + self.Z * sd
        self.assertGreater(low, 0, "the bound must exclude 'no early drops'")
        buggy = self.no_spreading_mean(action, 500, rng)
        self.assertFalse(low <= buggy <= high, f"bound [{low:.1f}, {high:.1f}] must exclude "
                         f"the no-count-spreading mean {buggy:.1f}")

        pkts = [burst_packet("tcp", seq=i + 1, flow=i % 4) for i in range(self.N)]
        before, delta = self.frozen_burst(action, OUT_PORT, pkts,
                                          burst_packet("tcp", seq=self.SACRIFICIAL_ID))
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
        forwarded_ids = set(got)
        self.check_sequence(action, [i + 1 in forwarded_ids for i in range(self.N)])

    def check_sequence(self, action, admitted):
        """admitted[i]: packet i + 1 of the burst was forwarded (see class doc)."""
        q = count = 0         # weight 1: avg = q, packets queued at the arrival
        r_low, r_allowed = 0, []
        for i, ok in enumerate(admitted):
            avg = fpm.p4_to_scaled(q)
            if avg < action.params["min_th_scaled"]:
                self.assertTrue(ok, f"packet {i + 1} dropped below min_th")
                count, r_low = 0, 0
                q += 1
                continue
            count += 1
            level = count * fpm.red_p_b_q16(avg, action.params["min_th_scaled"],
                                            action.params["red_slope_q24"])
            if ok:
                self.assertLess(level, fp.PROB_ONE, f"packet {i + 1} admitted with count * p_b "
                                f"= {level} >= 2^16: early drops are not spread by count")
                r_low = max(r_low, level)
                q += 1
            else:
                self.assertGreater(level, 0, f"packet {i + 1} dropped with count * p_b = 0")
                r_allowed.append((r_low, level - 1))
                count, r_low = 0, 0
        self.assertGreater(len(r_allowed), 1)
        self.assertGreater(max(lo for lo, _ in r_allowed), min(hi for _, hi in r_allowed),
                           "one R explains every gap between drops: R is not redrawn after a drop")


class RedAverageFallsTest(QueueTest):
    """The average also falls when the queue is below it: avg -= (avg - q) * w.
    (Every other test fills a queue from empty, so only the rising branch runs.)
    Weight 1/8, min_th 2, max_th 4, no early drops (slope 1).
    Phase 1, frozen burst of 20 TCP: 9 queued, then 11 RED_FORCED; avg ends
    at 7.71 packets. Phase 2, after the queue drained: single TCP packets,
    each at an empty queue, so avg *= 7/8: 6.75, 5.90, 5.17, 4.52 are >= 4
    (4 RED_FORCED), then 3.96 < 4: admitted from then on. An average that
    does not fall, or falls at w/2, drops all 8; one falling at 2w drops 2."""

    PHASE2 = 8

    def single(self, seq):
        """One TCP packet to an idle port 2 (rate unlimited): its decision."""
        idx = C.class_index(OUT_PORT, C.CLASS_TCP)
        before = self.counters()
        self.send(burst_packet("tcp", seq=seq))

        def settled(c):
            d = c.minus(before)
            return d.arrivals.get(idx) == 1 and (bool(d.drops) or d.departures.get(idx) == 1)

        delta = self.wait_counter(settled).minus(before)
        self.assertTrue(settled(self.counters()), f"packet {seq} neither dropped nor departed")
        reasons = delta.drop_reasons(OUT_PORT, C.CLASS_TCP)
        if reasons:
            self.assertEqual(sum(reasons.values()), 1)
            return next(iter(reasons))
        self.assertEqual(self.receive_ids(OUT_PORT, 1, timeout_s=2.0), [seq])
        return "ADMIT"

    def runTest(self):
        action = self.set_policy(2, {"algorithm": "RED", "queue_limit_pkts": 100, "min_th_pkts": 2,
                                     "max_th_pkts": 4, "max_p": no_early_drop_max_p(2, 4),
                                     "ewma_weight": 0.125})
        kinds = ["tcp"] * 20
        phase1 = ["ADMIT"] * 9 + ["RED_FORCED"] * 11
        phase2 = ["RED_FORCED"] * 4 + ["ADMIT"] * (self.PHASE2 - 4)
        # The reference model, continued from the burst's end with q = 0.
        model = fpm.PortModel(action, lambda: 0)
        model.arrive(C.CLASS_TCP, fpm.Occupancy())  # the sacrificial packet
        q, modelled = 0, []
        for _ in kinds:
            modelled.append(model.arrive(C.CLASS_TCP, fpm.Occupancy(queue_pkts=q, tcp_pkts=q)))
            q += modelled[-1] == "ADMIT"
        self.assertEqual(modelled, phase1)
        self.assertEqual([model.arrive(C.CLASS_TCP, fpm.Occupancy()) for _ in range(self.PHASE2)],
                         phase2)

        self.run_burst(action, kinds, expected=phase1)  # returns with the queue drained
        got = [self.single(100 + i) for i in range(self.PHASE2)]
        self.assertEqual(got, phase2, "the average did not fall as avg -= (avg - q) * w")
        tu.verify_no_other_packets(self)
