"""The flow reports and the shares they give (dcbt §3.1): every report is counted
at the time its packet arrived at the switch, flows expire, and the ports whose
algorithm follows the active-flow shares get their action pushed again when the
shares change (a mixin of controller.SwitchController)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from . import p4constants as C
from .algorithms import dcbt
from .encoding import PolicyAction

LOG = logging.getLogger("mmaqm.controller")
# Flow reports handled before the report task yields to the other loops (a backlog
# of digests would otherwise stall the share and stats loops for seconds).
REPORT_BATCH = 256
# How far back the report lag is remembered (report_lag_ms).
REPORT_LAG_WINDOW_MS = 1000.0
# The action parameters that follow the active-flow counts (share_push events).
SHARE_PARAMS = ("tagged_share_q16", "untagged_th_scaled", "tag_guard_interval_us")


class FlowReportLoop:
    """Uses the controller's flows, switch_clock, driver, clock_ms, policy_action,
    _push and event_sink."""

    def flow_shares(self, port: int) -> tuple[float, float]:
        """(share_tagged, share_untagged) of the port's active flows (dcbt §3.1)."""
        counts = self.flows.counts(port)
        return dcbt.class_shares(counts[C.CLASS_TCP], counts[C.CLASS_TAGGED],
                                 counts[C.CLASS_UNTAGGED])

    def report_lag_ms(self, now_ms: float) -> float:
        """How far behind the switch the reports are: the age of the oldest report in
        any list handled in the last REPORT_LAG_WINDOW_MS (0 when none was). A report
        made now may take that long to arrive (BMv2 batches digests, a backlog
        delays them), so the flows are judged as of now minus the lag: judged at
        now, a flow whose next report is still on its way would expire early."""
        ages = self._report_ages
        while ages and now_ms - ages[0][0] > REPORT_LAG_WINDOW_MS:
            ages.popleft()
        return max((age for _, age in ages), default=0.0)

    async def update_shares(self) -> list[int]:
        """Expire flows (as of now minus the report lag), recompute D-CBT shares,
        push the ports whose params changed."""
        now_ms = self.clock_ms()
        self.flows.expire(now_ms - self.report_lag_ms(now_ms),
                          self.config.active_flows.expiry_interval_ms)
        changed = []
        for port, policy in sorted(self.switch.policies.items()):
            if not policy.plugin.follows_flow_counts(policy):
                continue
            action = self.policy_action(port)
            if action != self.pushed.get(port):
                await self._push(port, action)
                changed.append(port)
                if self.event_sink is not None:
                    self.event_sink(self.share_push_event(port, action))
                LOG.debug("%s port %d: flows %s -> %s", self.switch.name, port,
                          self.flows.counts(port),
                          {k: v for k, v in action.params.items() if k in SHARE_PARAMS})
        return changed

    def share_push_event(self, port: int, action: PolicyAction) -> dict[str, Any]:
        """One share_push event: when (CLOCK_REALTIME, after the write returned) the
        switch got D-CBT shares from which active-flow counts. It times how far the
        shares lag behind flows that start or stop (README "Active-flow counting")."""
        return {"event": "share_push", "t_ns": time.time_ns(), "switch": self.switch.name,
                "port": port,
                "active_flows": {C.CLASS_NAMES[c]: n for c, n in self.flows.counts(port).items()},
                **{k: v for k, v in action.params.items() if k in SHARE_PARAMS}}

    async def receive_flow_reports(self) -> None:
        """Count each report at the time its packet arrived at the switch (mapped
        by switch_clock; a report without one at the time it is handled), and
        yield to the other loops after every REPORT_BATCH reports."""
        observe = self.flows.observe
        to_local_ms = self.switch_clock.to_local_ms
        handled = 0
        async for reports in self.driver.flow_reports():
            now_ms = self.clock_ms()
            oldest_ms = now_ms
            for report in reports:
                ts_us = report.ingress_ts_us
                made_ms = now_ms if ts_us is None else to_local_ms(ts_us, now_ms)
                oldest_ms = min(oldest_ms, made_ms)
                observe(report.egress_port, report.class_id, report.flow_key, made_ms)
            self.flow_reports += len(reports)
            self.report_age_max_ms = max(self.report_age_max_ms, now_ms - oldest_ms)
            self._report_ages.append((now_ms, now_ms - oldest_ms))
            handled += len(reports)
            if handled >= REPORT_BATCH:
                handled = 0
                await asyncio.sleep(0)
