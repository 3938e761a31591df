"""The controller's time series (``run --stats-out``): counter samples of every
configured port, active flows, the pushed thresholds and shares, and the
controller's own load (a mixin of controller.SwitchController)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from . import algorithms as A
from . import p4constants as C
from .stats import counter_sample, sample_indexes

StatsSink = Callable[[dict[str, Any]], None]


class StatsLoop:
    async def sample_stats(self) -> dict[str, Any]:
        """One time-series sample: cumulative queue counters of every configured
        port (one ReadRequest), active-flow counts and the pushed D-CBT shares."""
        ports = sorted(self.switch.ports)
        t_ns = time.time_ns()  # CLOCK_REALTIME: namespaces and hosts share it
        values = await self.driver.read_counter_indexes(sample_indexes(ports))
        return {
            **counter_sample(t_ns, self.switch.name, ports, values),
            "active_flows": {str(p): {C.CLASS_NAMES[c]: n for c, n in self.flows.counts(p).items()}
                             for p in ports},
            # the same counts split by address family (the controller counts both)
            "active_flows_by_family": {
                str(p): {fam: {C.CLASS_NAMES[c]: n for c, n in counts.items()}
                         for fam, counts in self.flows.counts_by_family(p).items()}
                for p in ports},
            "policies": {str(p): {"algorithm": self.pushed[p].algorithm,
                                  **{k: v for k, v in self.pushed[p].params.items() if k in (
                                      "tagged_share_q16", "tagged_th_scaled",
                                      "untagged_th_scaled", "tcp_th_pkts", "tagged_th_pkts",
                                      "untagged_th_pkts", "tag_guard_interval_us")}}
                         for p in sorted(self.pushed)},
            **self.fred_slot_sample(),
            "controller": self.controller_sample(),
        }

    def controller_sample(self) -> dict[str, Any]:
        """The controller's own load: flow reports received and refused
        (table full), flows tracked, digest lists dropped (the driver's queue full),
        repairs and occupancy resets (the Tofino audit) since the start,
        the report lag the flows are judged with (report_lag_ms), the oldest report handled since the last
        sample (ms between its packet and its handling), and how late the share
        and stats loops woke up since the last sample (ms, one value per wake-up)."""
        age, self.report_age_max_ms = self.report_age_max_ms, 0.0
        return {"flow_reports": self.flow_reports, "flows_refused": self.flows.refused,
                "flows": len(self.flows), "report_age_max_ms": round(age, 3),
                "report_lag_ms": round(self.report_lag_ms(self.clock_ms()), 3),
                "clock_restarts": self.switch_clock.restarts,
                "digest_lists_dropped": getattr(self.driver, "digest_lists_dropped", 0),
                # messages from the switch dropped (malformed or not asked for), per kind
                "dropped_from_switch": dict(getattr(getattr(self.driver, "malformed", None),
                                                    "counts", {})),
                "repairs": self.repairs,
                "occupancy_resets": self.occupancy_resets,    # occupancy_audit (Tofino)
                "lateness_ms": {"update": self.update_lateness.take(),
                                "stats": self.stats_lateness.take()}}

    def fred_slot_sample(self) -> dict[str, Any]:
        """For ports whose algorithm keeps per-flow slots (FRED): the active flows (from
        the flow reports) and how many of them share a flow slot in the data plane,
        {"fred_slots": {port: {flows, sharing}}}."""
        out: dict[str, dict[str, Any]] = {}
        for port, action in sorted(self.pushed.items()):
            sample = A.of_action(action.name).slot_sample(action.params,
                                                          self.flows.flow_keys(port))
            if sample is not None:
                key, value = sample
                out.setdefault(key, {})[str(port)] = value
        return out

    async def _stats_loop(self) -> None:
        assert self.stats_sink is not None
        while True:
            self.stats_sink(await self.sample_stats())
            await self.stats_lateness.sleep(self.stats_interval_ms / 1000)
