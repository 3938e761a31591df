"""D-CBT (dcbt §3.1): threshold tests only while red_avg > min_th; thresholds
follow the controller's active-flow shares as flows appear and expire."""

import asyncio
import time

from mmaqm import fixedpoint as fp
from mmaqm.config import Config, SwitchConfig, parse_policy
from mmaqm.controller import SwitchController
from mmaqm_base import CONFIG, OUT_PORT, SWITCH, QueueTest, burst_packet, no_early_drop_max_p, predict

DCBT = {"algorithm": "DCBT", "queue_limit_pkts": 200, "min_th_pkts": 6, "max_th_pkts": 100,
        "max_p": no_early_drop_max_p(6, 100), "ewma_weight": 1.0}


class DcbtThresholdActivationTest(QueueTest):
    """Weight 1: red_avg = queue, tagged_avg = tagged occupancy. share_tagged 1/4.
    12 tagged: q = 0..6 -> red_avg <= min_th (6): test inactive, all queued
    (although tagged_avg > red_avg/4); q = 7 -> 7 > 6, threshold 7/4 = 1.75 < 7:
    CLASS_THRESHOLD, and q stays 7: 7 queued, 5 dropped."""

    def runTest(self):
        action = self.set_policy(2, DCBT, share_tagged=0.25, share_untagged=0.25)
        kinds = ["tagged"] * 12
        expected = ["ADMIT"] * 7 + ["CLASS_THRESHOLD"] * 5
        self.assertEqual(predict(action, kinds), expected)
        self.run_burst(action, kinds, expected=expected)


class DcbtTaggedShareTest(QueueTest):
    """Above min_th a tagged packet passes while tagged_avg <= red_avg * share.
    8 TCP (q 0..7), then tagged at q = 8, 9, 10, 11 with tagged occupancy 0..3:
    0 <= 2, 1 <= 2.25, 2 <= 2.5 pass; 3 > 2.75 dropped. Untagged: share 1/4 of
    (6 + 94 * 2^-24 * 94), 1.5 packets after rounding: untagged occupancy 0, 1 pass, 2 > 1.5 dropped."""

    def runTest(self):
        action = self.set_policy(2, DCBT, share_tagged=0.25, share_untagged=0.25)
        self.assertEqual(action.params["untagged_th_scaled"], fp.to_scaled(0.25 * (6 + DCBT["max_p"] * 94)))
        kinds = ["tcp"] * 8 + ["tagged"] * 4 + ["untagged"] * 3
        expected = ["ADMIT"] * 8 + ["ADMIT"] * 3 + ["CLASS_THRESHOLD"] + ["ADMIT"] * 2 + ["CLASS_THRESHOLD"]
        self.assertEqual(predict(action, kinds), expected)
        self.run_burst(action, kinds, expected=expected)


class DcbtSharesFollowFlowsTest(QueueTest):
    """The controller counts flows from digests and pushes shares (dcbt §3.1):
    3 TCP + 1 tagged flow -> share_tagged 1/4, untagged threshold 0;
    + 1 untagged flow -> 1/5 and 1/5 * (min_th + max_p * (max_th - min_th));
    all flows silent for longer than the 300 ms expiry -> no flows: shares 1."""

    def wait_entry(self, want_share_q16: int, want_untagged_th: int, timeout_s: float = 2.0):
        deadline = time.monotonic() + timeout_s
        while True:
            entry = self.sw.read_port_policy(OUT_PORT)
            got = (entry.params["tagged_share_q16"], entry.params["untagged_th_scaled"])
            if got == (want_share_q16, want_untagged_th) or time.monotonic() > deadline:
                return got, time.monotonic()
            time.sleep(0.01)

    def runTest(self):
        policy = parse_policy(DCBT)
        switch = SwitchConfig(name=SWITCH.name, p4runtime_addr=SWITCH.p4runtime_addr,
                              device_id=SWITCH.device_id, ports=SWITCH.ports, routes=SWITCH.routes,
                              policies={**SWITCH.policies, OUT_PORT: policy})
        config = Config(switches={SWITCH.name: switch}, classifier=CONFIG.classifier,
                        active_flows=CONFIG.active_flows)
        controller = SwitchController(config, switch, self.sw.driver)
        self.sw.run(controller.install())
        loop_task = asyncio.run_coroutine_threadsafe(controller.run(), self.sw._loop)
        try:
            base_th = 6 + DCBT["max_p"] * 94
            self.assertEqual(self.wait_entry(65536, fp.to_scaled(base_th))[0],
                             (65536, fp.to_scaled(base_th)), "no flows: shares 1")
            for flow in range(3):
                self.send(burst_packet("tcp", seq=flow, flow=flow))
            self.send(burst_packet("tagged", seq=10, flow=0))
            got, _ = self.wait_entry(16384, 0)
            self.assertEqual(got, (16384, 0), "3 TCP + 1 tagged")
            # A new 5-tuple: the data plane identifies flows by 5-tuple, not DSCP, so
            # the tagged flow 0 re-marked untagged would count as already reported.
            self.send(burst_packet("untagged", seq=11, flow=4))
            sent_untagged = time.monotonic()
            got, _ = self.wait_entry(13107, fp.to_scaled(0.2 * base_th))
            self.assertEqual(got, (13107, fp.to_scaled(0.2 * base_th)), "+1 untagged")
            # Then every flow expires: expiry_interval after the controller saw its
            # (only) report, which came after its one packet was sent; the controller
            # checks every update_interval, and a report may wait for the next epoch
            # boundary (2^flow_epoch_shift us) at most.
            got, expired_at = self.wait_entry(65536, fp.to_scaled(base_th))
            self.assertEqual(got, (65536, fp.to_scaled(base_th)), "flows did not expire")
            expiry_s = CONFIG.active_flows.expiry_interval_ms / 1000
            epoch_s = 2 ** CONFIG.active_flows.flow_epoch_shift / 1e6
            self.assertGreaterEqual(expired_at - sent_untagged, expiry_s, "expired too early")
            self.assertLess(expired_at - sent_untagged, expiry_s + epoch_s + 0.5,
                            "expired too late")
            # Drain the 5 single packets (queue rate is unlimited here).
            for _ in range(5):
                self.dataplane.poll(port_number=OUT_PORT, timeout=1)
        finally:
            loop_task.cancel()


class DcbtThresholdEqualityTest(QueueTest):
    """Both class tests are strict ('>'): a class average equal to its threshold passes.
    Weight 1, share_tagged = share_untagged = 1/2, min_th 7, max_th 4103 and
    max_p 2^-12, so the slope is 1 (no early drops) and the untagged threshold
    1/2 * (7 + 2^-12 * 4096) = 4 packets exactly.
    8 TCP (q 0..7), then 10 tagged at q = 8 + t, tagged occupancy t: threshold
    (8 + t) / 2; t = 8 equals 8 and passes, t = 9 > 8.5 is dropped.
    Then 6 untagged (q = 17): occupancy 0..4 pass (4 = 4), 5 > 4 is dropped."""

    def runTest(self):
        policy = {"algorithm": "DCBT", "queue_limit_pkts": 5000, "min_th_pkts": 7,
                  "max_th_pkts": 4103, "max_p": 2 ** -12, "ewma_weight": 1.0}
        action = self.set_policy(2, policy, share_tagged=0.5, share_untagged=0.5)
        self.assertEqual(action.params["red_slope_q24"], 1)
        self.assertEqual(action.params["untagged_th_scaled"], fp.to_scaled(4))
        kinds = ["tcp"] * 8 + ["tagged"] * 10 + ["untagged"] * 6
        expected = (["ADMIT"] * 8 + ["ADMIT"] * 9 + ["CLASS_THRESHOLD"]
                    + ["ADMIT"] * 5 + ["CLASS_THRESHOLD"])
        self.assertEqual(predict(action, kinds), expected)
        self.run_burst(action, kinds, expected=expected)


class DcbtAveragesTest(QueueTest):
    """Weight 1/4 (the other D-CBT tests use weight 1, where every average is
    just an occupancy): RED's and both class averages are EWMAs, all updated
    on every arrival (dcbt §3.1 "synchronised"). Shares 1/4, min_th 6.
    4 TCP, then (tagged, untagged) x 6. red_avg first exceeds min_th (6.23)
    at the 6th UDP packet, an untagged one (average 1.12 <= 1.50: passes);
    the next tagged packet has tagged_avg 1.94 > red_avg / 4 = 1.79 and is
    dropped, and so is every later UDP packet -> 4 + 3 + 3 queued.
    Class averages equal to the occupancy drop the 6th UDP packet already;
    class averages updated only on their own class's arrivals lag, and the
    first drop comes three packets later."""

    def runTest(self):
        policy = dict(DCBT, ewma_weight=0.25)
        action = self.set_policy(2, policy, share_tagged=0.25, share_untagged=0.25)
        kinds = ["tcp"] * 4 + ["tagged", "untagged"] * 6
        expected = ["ADMIT"] * 10 + ["CLASS_THRESHOLD"] * 6
        self.assertEqual(predict(action, kinds), expected)
        self.run_burst(action, kinds, expected=expected)
