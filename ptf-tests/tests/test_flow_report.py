"""Active-flow reports (flow_report.p4; dcbt §3.1 "active flow counting unit").

D-CBT counts active flows from arrivals, so a flow is reported whatever the
AQM then does with its packets, and on the port its packets were routed to.
"""

import asyncio
import time

from mmaqm import bmv2_tm
from mmaqm import p4constants as C
from mmaqm.algorithms.fred import flow_hash
from mmaqm.flows import ActiveFlowTable
from mmaqm_base import CONFIG, OUT_PORT, QueueTest, burst_packet, predict

FLOW_SLOTS = C.CONSTANTS["FLOW_SLOTS"]
SLOTS_REGISTER = "MmaqmIngress.flow_report.flow_slots"


class StarvedClassStaysActiveTest(QueueTest):
    """Lockout regression: a class whose every packet is dropped stays counted.

    DROP_TAIL with queue limit 1 and flow reports on, port 2 frozen. The
    sacrificial TCP packet leaves; the first burst packet (TCP) is queued, so
    the 10 tagged packets that follow (4 flows: source ports 3001, 3002, 3003,
    3000, ...) all arrive at occupancy 1 and are dropped as QUEUE_LIMIT.
    Every tagged flow must still be reported, naming port 2, class TAGGED:
    4 active tagged flows on port 2. mark_to_drop sets egress_spec to the drop
    port 511, so a report built from egress_spec after the drop named port 511
    and the starved class vanished from port 2's count, its D-CBT share went
    to 0, and it never came back."""

    TAGGED_FLOWS = 4

    async def gather_reports(self, reports: list) -> None:
        async for batch in self.sw.driver.flow_reports():
            reports.extend(batch)

    def runTest(self):
        action = self.set_policy(OUT_PORT, {"algorithm": "DROP_TAIL", "queue_limit_pkts": 1},
                                 flow_epoch_shift=CONFIG.active_flows.flow_epoch_shift)
        self.sw.enable_flow_reports()
        reports: list = []
        collector = asyncio.run_coroutine_threadsafe(self.gather_reports(reports), self.sw._loop)
        try:
            kinds = ["tcp"] + ["tagged"] * 10
            expected = ["ADMIT"] + ["QUEUE_LIMIT"] * 10
            self.assertEqual(predict(action, kinds), expected)
            _, delta = self.run_burst(action, kinds, expected=expected)
            self.assertEqual(delta.admits.get(C.class_index(OUT_PORT, C.CLASS_TAGGED), 0), 0)

            deadline = time.monotonic() + 3.0
            tagged = []
            while time.monotonic() < deadline:
                tagged = [r for r in list(reports) if r.class_id == C.CLASS_TAGGED]
                if len({r.flow_key for r in tagged}) >= self.TAGGED_FLOWS:
                    break
                time.sleep(0.05)
            self.assertEqual({r.egress_port for r in tagged}, {OUT_PORT},
                             "reports of dropped packets must name the routed port")
            table = ActiveFlowTable()
            for r in list(reports):
                table.observe(r.egress_port, r.class_id, r.flow_key, now_ms=0.0)
            self.assertEqual(table.counts(OUT_PORT)[C.CLASS_TAGGED], self.TAGGED_FLOWS,
                             "every starved tagged flow stays active on its port")
            self.assertEqual(table.counts(OUT_PORT)[C.CLASS_TCP], 1)
        finally:
            collector.cancel()


class ReportCarriesItsPacketsArrivalTimeTest(QueueTest):
    """A report carries when its packet arrived (ingress_global_timestamp,
    us since the switch started), so the controller counts the flow from then.

    Flow 0, then flow 1, then flow 0 again 0.3 s later (more than one 2^17 us epoch):
    three reports, in that order, with non-decreasing times; the two reports of
    flow 0 are 0.3 s to 0.8 s apart. Exact: the flow slot of each flow holds
    crc32 << 32 | (its last report's time >> flow_epoch_shift), the epoch the data
    plane computed from the very timestamp it reported."""

    GAP_S = 0.3

    async def gather_reports(self, reports: list) -> None:
        async for batch in self.sw.driver.flow_reports():
            reports.extend(batch)

    def wait_reports(self, reports: list, count: int) -> list:
        deadline = time.monotonic() + 3.0
        while len(reports) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return list(reports)

    def runTest(self):
        shift = CONFIG.active_flows.flow_epoch_shift
        self.assertGreater(self.GAP_S * 1e6, 2 ** shift)
        self.set_policy(OUT_PORT, {"algorithm": "DROP_TAIL", "queue_limit_pkts": 100},
                        flow_epoch_shift=shift)
        self.sw.enable_flow_reports()
        reports: list = []
        collector = asyncio.run_coroutine_threadsafe(self.gather_reports(reports), self.sw._loop)
        try:
            self.send(burst_packet("untagged", seq=1, flow=0))
            self.send(burst_packet("untagged", seq=2, flow=1))
            first = self.wait_reports(reports, 2)
            time.sleep(self.GAP_S)
            self.send(burst_packet("untagged", seq=3, flow=0))
            got = self.wait_reports(reports, 3)
            self.assertEqual(len(got), 3, f"expected 3 reports, got {got}")
            self.assertEqual(len(first), 2)
            keys = [r.flow_key for r in got]
            self.assertEqual(keys[0], keys[2])
            self.assertNotEqual(keys[0], keys[1])
            times = [r.ingress_ts_us for r in got]
            self.assertTrue(all(isinstance(t, int) and 0 < t < 2 ** 48 for t in times), times)
            self.assertLessEqual(times[0], times[1])
            self.assertGreaterEqual(times[2] - times[0], self.GAP_S * 1e6)
            self.assertLess(times[2] - times[0], (self.GAP_S + 0.5) * 1e6)
            self.assertGreater(times[2] >> shift, times[0] >> shift)
            last = {r.flow_key: r for r in got}
            reads = {key: flow_hash(*key) for key in last}
            values = bmv2_tm.register_read(
                self.thrift_port, [(SLOTS_REGISTER, sig & (FLOW_SLOTS - 1))
                                   for sig in reads.values()])
            for key, sig in reads.items():
                self.assertEqual(values[(SLOTS_REGISTER, sig & (FLOW_SLOTS - 1))],
                                 sig << 32 | (last[key].ingress_ts_us >> shift), key)
            for _ in range(3):
                self.dataplane.poll(port_number=OUT_PORT, timeout=1)
        finally:
            collector.cancel()
