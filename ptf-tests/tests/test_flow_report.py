"""Active-flow reports (flow_report.p4; dcbt §3.1 "active flow counting unit").

D-CBT counts active flows from arrivals, so a flow is reported whatever the
AQM then does with its packets, and on the port its packets were routed to.
"""

import asyncio
import time

from mmaqm import p4constants as C
from mmaqm.flows import ActiveFlowTable
from mmaqm_base import CONFIG, OUT_PORT, QueueTest, predict


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
