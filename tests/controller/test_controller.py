"""controller: SwitchController over a fake driver (install order, D-CBT share
updates, flow expiry, MCDT period updates, stats samples, run loop). Values
worked out by hand."""

from __future__ import annotations

import asyncio
import copy
import io
import json
import math
import time
from dataclasses import replace
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from mmaqm.targets.v1model import TARGET as V1MODEL_TARGET

from fake_p4rt import run_async
from mmaqm.algorithms import fred, mcdt
from mmaqm.config import Config, ConfigError, parse_config
from mmaqm.controller import SwitchController
from mmaqm.supervisor import jsonl_sink
from mmaqm.driver import CounterValue, FlowReport
from mmaqm.encoding import PolicyAction
from mmaqm import reconcile as R
from mmaqm_oracle import mcdt_reference

TCP, TAGGED, UNTAGGED = 0, 1, 2          # traffic_class_t (defines.p4)
RED_5_15 = {"min_th_pkts": 5, "max_th_pkts": 15, "max_p": 0.1, "queue_limit_pkts": 60}
CONFIG: dict[str, Any] = {
    "switches": {
        "s1": {
            "p4runtime_addr": "127.0.0.1:9559",
            "ports": {p: {"mac": f"02:00:00:00:00:0{p}"} for p in (1, 2, 3, 4, 5)},
            "routes": [
                {"prefix": "10.0.1.0/24", "port": 1, "next_hop_mac": "02:00:00:01:00:01"},
                {"prefix": "10.0.2.0/24", "port": 2, "next_hop_mac": "02:00:00:02:00:01"},
            ],
            "policies": {
                "default": {"algorithm": "DROP_TAIL"},
                2: {"algorithm": "DCBT", **RED_5_15},
                3: {"algorithm": "DCBT", "min_th_pkts": 10, "max_th_pkts": 30, "max_p": 0.2,
                    "queue_limit_pkts": 100},
                4: {"algorithm": "RED", **RED_5_15},
                5: {"algorithm": "CBT_RED_ALL", **RED_5_15, "tagged_th_pkts": 2.9,
                    "untagged_th_pkts": 0.6},
            },
        }
    }
}
# expiry 300 ms -> 2^17 us <= 150 ms < 2^18 us; default ewma_weight 2^-9.
COMMON = {"flow_epoch_shift": 17}
# RED options off (no bandwidth_pps: no idle decay; no gentle, ECN, harddrop, wait)
RED_OPTIONS_OFF = {"idle_decay_q32": 0, "gentle": 0, "max_p_q16": 0, "gentle_slope_q24": 0, "ecn": 0, "harddrop": 0,
                   "wait": 0}
RED_PARAMS = {**COMMON, "queue_limit_pkts": 60, "ewma_shift": 9, "min_th_scaled": 5 << 16,
              "max_th_scaled": 15 << 16, "red_slope_q24": 167772,   # round(0.01 * 2^24)
              **RED_OPTIONS_OFF}
EPOCH = {p: 1000 + p for p in range(64)}                            # FakeDriver.next_policy_epoch
# No active flow: shares (1, 1) -> tagged 1.0; untagged 5 + 0.1 * 10 = 6 pkts.
DCBT_2_IDLE = PolicyAction("dcbt", {**RED_PARAMS, "policy_epoch": EPOCH[2],
                                    "tagged_share_q16": 65536, "untagged_th_scaled": 6 << 16,
                                    "tag_guard_interval_us": 0})
# Port 3: 10 + 0.2 * 20 = 14 pkts; slope round(0.2 / 20 * 2^24) = 167772.
DCBT_3_IDLE = PolicyAction("dcbt", {**COMMON, "queue_limit_pkts": 100, "ewma_shift": 9,
                                    "min_th_scaled": 10 << 16, "max_th_scaled": 30 << 16,
                                    "red_slope_q24": 167772, **RED_OPTIONS_OFF, "policy_epoch": EPOCH[3],
                                    "tagged_share_q16": 65536, "untagged_th_scaled": 14 << 16,
                                    "tag_guard_interval_us": 0})
INSTALLED = {
    1: PolicyAction("drop_tail", {**COMMON, "queue_limit_pkts": 64}),
    2: DCBT_2_IDLE,
    3: DCBT_3_IDLE,
    4: PolicyAction("red", {**RED_PARAMS, "policy_epoch": EPOCH[4]}),
    # round(2.9 * 65536) = 190054, round(0.6 * 65536) = 39322
    5: PolicyAction("cbt_red_all", {**RED_PARAMS, "policy_epoch": EPOCH[5],
                                    "tagged_th_scaled": 190054, "untagged_th_scaled": 39322,
                                    "tag_guard_interval_us": 0}),
}


class FakeDriver:
    """Records every call; serves flow reports and counter values from lists."""

    flow_digest = R.DIGEST_FLOW
    primary_changes = 0           # the primary role never changes hands here
    target = V1MODEL_TARGET        # a v1model program

    def clone_sessions(self, cut_in_ports) -> list:      # a v1model program
        return [R.cut_in_slot_session(p) for p in cut_in_ports]

    def range_entries(self, port, action) -> list:   # a v1model program
        return []

    def route_entries(self, route) -> list:          # a v1model program: no copy
        return [route]

    def __init__(self, reports: Iterable[list[FlowReport]] = (),
                 counters: Mapping[str, Mapping[int, CounterValue]] | None = None,
                 reports_end: bool = True) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.reports = list(reports)
        self.reports_end = reports_end
        self.counters = counters or {}
        self.state = R.SwitchState()
        self.fail_on: R.Entity | None = None

    async def read_state(self) -> R.SwitchState:
        self.calls.append(("read_state",))
        return self.state

    async def apply_writes(self, plan: R.WritePlan) -> None:
        """Applies each write to `state` as a switch would (INSERT of an existing key,
        MODIFY or DELETE of a missing one fail), recording each batch."""
        for batch in plan.batches:
            self.calls.append(("write", batch))
            for write in batch:
                if self.fail_on is not None and write.entity == self.fail_on:
                    raise RuntimeError("switch refused")
                self.state = apply_write(self.state, write)

    async def reset_defaults(self) -> int:
        return 0

    def new_policy_epoch(self, port: int, installed: int | None) -> int:
        self.calls.append(("new_policy_epoch", port, installed))
        return EPOCH[port]

    async def write_port_policy(self, port: int, action: PolicyAction,
                                policy: Any = None) -> None:
        # the controller hands the driver the port's policy, for the target's check
        assert policy is not None and policy.algorithm, (port, action)
        self.calls.append(("write_port_policy", port, action))
        entry = R.policy_entry(port, action)
        exists = any(e.key == entry.key for e in self.state.entries)
        self.state = apply_write(self.state, R.Write(R.MODIFY if exists else R.INSERT, entry))

    async def flow_reports(self) -> AsyncIterator[list[FlowReport]]:
        for reports in self.reports:
            yield reports
        if not self.reports_end:
            await asyncio.Event().wait()

    async def read_counter_indexes(
            self, wanted: Mapping[str, Iterable[int]]) -> dict[str, dict[int, CounterValue]]:
        wanted = {name: list(indexes) for name, indexes in wanted.items()}
        self.calls.append(("read_counter_indexes", wanted))
        return {name: {i: v for i, v in self.counters.get(name, {}).items() if i in indexes}
                for name, indexes in wanted.items()}

    def writes(self) -> list[tuple[int, PolicyAction]]:
        return [(c[1], c[2]) for c in self.calls if c[0] == "write_port_policy"]

    def check_connected(self) -> None:
        pass


def apply_write(state: R.SwitchState, write: R.Write) -> R.SwitchState:
    kind = {R.TableEntry: "entries", R.CloneSession: "clone_sessions",
            R.MulticastGroup: "multicast_groups", R.DigestConfig: "digests"}[type(write.entity)]
    have = {e.key: e for e in getattr(state, kind)}
    exists = write.entity.key in have
    if exists != (write.type != R.INSERT):
        raise RuntimeError(f"{write.type} of {'an existing' if exists else 'a missing'} "
                           f"{write.entity!r}")
    if write.type == R.DELETE:
        del have[write.entity.key]
    else:
        have[write.entity.key] = write.entity
    return replace(state, **{kind: tuple(have.values())})


class Clock:
    def __init__(self, now_ms: float = 0.0) -> None:
        self.now_ms = now_ms

    def __call__(self) -> float:
        return self.now_ms


def config() -> Config:
    return parse_config(CONFIG)


def make(driver: FakeDriver, clock: Clock | None = None, **kwargs: Any) -> SwitchController:
    cfg = config()
    return SwitchController(cfg, cfg.switches["s1"], driver,  # type: ignore[arg-type]
                            clock_ms=clock or Clock(), **kwargs)


def report(port: int, class_id: int, n: int) -> FlowReport:
    return FlowReport(egress_port=port, class_id=class_id, flow_key=(n, 2, 17, 1000 + n, 5004))


async def installed(driver: FakeDriver, clock: Clock | None = None,
                    **kwargs: Any) -> SwitchController:
    controller = make(driver, clock, **kwargs)
    await controller.install()
    del driver.calls[:]
    return controller


async def run_until(controller: SwitchController, done: Callable[[], bool]) -> None:
    """Run the controller's loops until done() holds, then cancel them: run() must
    end only by cancellation."""
    task = asyncio.create_task(controller.run())
    while not done():
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# ------------------------------------------------------------------ install
CLASSIFIER = R.classifier_entries([46, 34])
ROUTES = [R.route_entry("10.0.1.0/24", 1, "02:00:00:00:00:01", "02:00:00:01:00:01"),
          R.route_entry("10.0.2.0/24", 2, "02:00:00:00:00:02", "02:00:00:02:00:01")]
DIGEST = R.DigestConfig("flow_digest_t", 64, 10_000_000, 1_000_000_000)


def test_install_on_an_empty_switch_reads_it_then_inserts_everything_in_order() -> None:
    driver = FakeDriver()
    controller = make(driver)
    plan = run_async(controller.install())
    assert driver.calls == [
        ("read_state",),
        *[("new_policy_epoch", port, None) for port in (1, 2, 3, 4, 5)],
        ("write", (R.Write(R.INSERT, DIGEST),)),
        ("write", tuple(R.Write(R.INSERT, e) for e in [
            *CLASSIFIER, *ROUTES, *[R.policy_entry(p, INSTALLED[p]) for p in (1, 2, 3, 4, 5)]])),
    ]
    assert plan.count(R.INSERT) == 1 + 3 + 2 + 5 and len(plan.writes) == 11
    assert controller.pushed == INSTALLED
    assert controller.epochs == {p: EPOCH[p] for p in (1, 2, 3, 4, 5)}


def test_reinstalling_an_unchanged_config_writes_nothing_and_keeps_the_epochs() -> None:
    """The same controller again, then a new one (another mmaqm-ctl install): one read,
    no write, and every port keeps its installed policy epoch (its averages survive)."""
    driver = FakeDriver()
    first = make(driver)
    run_async(first.install())
    installed_state = driver.state
    for controller in (first, first, make(driver)):
        del driver.calls[:]
        plan = run_async(controller.install())
        assert driver.calls == [("read_state",)] and plan.writes == []
        assert controller.pushed == INSTALLED
        assert {p: controller.epochs[p] for p in (2, 3, 4, 5)} == {p: EPOCH[p] for p in (2, 3, 4, 5)}
    assert driver.state == installed_state


def test_a_changed_route_next_hop_is_one_modify_and_a_new_policy_gets_a_new_epoch() -> None:
    driver = FakeDriver()
    run_async(make(driver).install())
    changed = copy.deepcopy(CONFIG)
    sw = changed["switches"]["s1"]
    sw["routes"][1]["next_hop_mac"] = "02:00:00:02:00:99"
    sw["policies"][4] = {"algorithm": "RED", **RED_5_15, "max_p": 0.2}
    cfg = parse_config(changed)
    controller = SwitchController(cfg, cfg.switches["s1"], driver,  # type: ignore[arg-type]
                                  clock_ms=Clock())
    del driver.calls[:]
    run_async(controller.install())
    red_4 = PolicyAction("red", {**RED_PARAMS, "policy_epoch": EPOCH[4],
                                 "red_slope_q24": 335544})   # round(0.02 * 2^24)
    assert driver.calls == [
        ("read_state",),
        ("new_policy_epoch", 4, EPOCH[4]),        # port 4 only: never the installed epoch
        ("write", (R.Write(R.MODIFY, R.route_entry("10.0.2.0/24", 2, "02:00:00:00:00:02",
                                                   "02:00:00:02:00:99")),
                   R.Write(R.MODIFY, R.policy_entry(4, red_4)))),
    ]


def test_install_stops_at_the_first_failed_write() -> None:
    driver = FakeDriver()
    driver.fail_on = R.policy_entry(2, INSTALLED[2])
    controller = make(driver)
    with pytest.raises(RuntimeError, match="switch refused"):
        run_async(controller.install())
    assert driver.calls[-1][0] == "write"
    assert controller.pushed == {}          # nothing it could vouch for
    assert R.policy_entry(1, INSTALLED[1]) in driver.state.entries       # the same batch's
    assert not any(e.table == "port_policy" and dict(e.match)["port"] == 3
                   for e in driver.state.entries)                       # never sent


# ------------------------------------------------------------ share updates
async def _observe(controller: SwitchController, driver: FakeDriver,
                   reports: list[list[FlowReport]]) -> None:
    driver.reports = reports
    await controller.receive_flow_reports()


def timed(port: int, class_id: int, n: int, ts_us: int) -> FlowReport:
    return FlowReport(egress_port=port, class_id=class_id,
                      flow_key=(n, 2, 17, 1000 + n, 5004), ingress_ts_us=ts_us)


def test_reports_count_from_when_their_packet_arrived_not_when_handled() -> None:
    """A backlog of reports handled seconds late must not count flows whose
    packets are older than the expiry interval, nor keep them for another interval."""
    async def body() -> None:
        driver = FakeDriver()
        clock = Clock(1000.0)
        controller = await installed(driver, clock)
        # switch time 0.5 s arrives at 1000 ms: the offset is 500 ms
        await _observe(controller, driver, [[timed(2, TCP, 1, 500_000)]])
        clock.now_ms = 5000.0
        # handled 4 s late: flows 2, 3 were seen at 1100 and 1200 ms (switch 0.6, 0.7 s),
        # flow 4 at 4900 ms; the offset may have risen by 1000 ppm * 4000 ms = 4 ms
        await _observe(controller, driver, [[timed(2, TAGGED, 2, 600_000),
                                             timed(2, TAGGED, 3, 700_000)],
                                            [timed(2, UNTAGGED, 4, 4_400_000)]])
        assert controller.flows.entry(2, (2, 2, 17, 1002, 5004)).last_seen_ms == 1104.0
        assert controller.flows.entry(2, (4, 2, 17, 1004, 5004)).last_seen_ms == 4904.0
        assert controller.report_age_max_ms == 5000.0 - 1104.0
        assert controller.flow_reports == 4
        # The reports lag 3896 ms behind the switch: the flows are judged as of
        # 5000 - 3896 = 1104 ms, when all four were active (a report made after
        # 1104 ms may still be on its way).
        assert controller.report_lag_ms(5000.0) == 3896.0
        await controller.update_shares()
        assert controller.flows.counts(2) == {TCP: 1, TAGGED: 2, UNTAGGED: 1}
        # The backlog is gone: one fresh report at 5900 ms (switch 5.396 s + offset 504).
        clock.now_ms = 5900.0
        await _observe(controller, driver, [[timed(2, UNTAGGED, 4, 5_396_000)]])
        assert controller.report_lag_ms(5900.0) == 3896.0      # still within the 1 s window
        clock.now_ms = 6001.0                                  # now it is not: lag 0
        assert controller.report_lag_ms(6001.0) == 0.0
        # as of 6001 ms only flow 4 (last seen 5900) is younger than 300 ms
        await controller.update_shares()
        assert controller.flows.counts(2) == {TCP: 0, TAGGED: 0, UNTAGGED: 1}
        assert len(controller.flows) == 1
    run_async(body())


def test_a_backlog_of_reports_yields_to_the_other_loops() -> None:
    """10 lists of 64 reports waiting at once: the report task yields after every
    REPORT_BATCH (256) reports, so another task runs between batches."""
    async def body() -> list[int]:
        lists = [[report(2, UNTAGGED, 64 * i + k) for k in range(64)] for i in range(10)]
        driver = FakeDriver(reports=lists)
        controller = await installed(driver, Clock(0.0))
        seen: list[int] = []

        async def watch() -> None:
            while True:
                seen.append(len(controller.flows))
                await asyncio.sleep(0)

        watcher = asyncio.create_task(watch())
        await asyncio.sleep(0)
        await controller.receive_flow_reports()
        watcher.cancel()
        return seen

    seen = run_async(body())
    assert sorted(set(seen)) == [0, 256, 512]


def test_the_flow_table_cap_comes_from_the_config_and_refusals_are_sampled() -> None:
    cfg_dict = copy.deepcopy(CONFIG)
    cfg_dict["active_flows"] = {"max_flows": 2}
    cfg = parse_config(cfg_dict)

    async def body() -> dict[str, Any]:
        driver = FakeDriver()
        controller = SwitchController(cfg, cfg.switches["s1"], driver,  # type: ignore[arg-type]
                                      clock_ms=Clock(0.0))
        await controller.install()
        await _observe(controller, driver, [[report(2, TCP, 1), report(2, TCP, 2),
                                             report(2, TCP, 3)], [report(4, TCP, 4)]])
        return controller.controller_sample()

    sample = run_async(body())
    assert sample == {"flow_reports": 4, "flows_refused": 2, "flows": 2,
                      "report_age_max_ms": 0.0, "report_lag_ms": 0.0, "clock_restarts": 0,
                      "digest_lists_dropped": 0, "dropped_from_switch": {}, "repairs": 0,
                      "occupancy_resets": 0, "lateness_ms": {"update": [], "stats": []}}


def test_update_shares_without_flows_pushes_nothing() -> None:
    async def body() -> None:
        driver = FakeDriver()
        controller = await installed(driver)
        assert await controller.update_shares() == []
        assert driver.calls == []
    run_async(body())


def test_update_shares_pushes_only_the_dcbt_port_whose_shares_changed() -> None:
    async def body() -> None:
        driver = FakeDriver()
        clock = Clock(1000.0)
        controller = await installed(driver, clock)
        # Port 2 (D-CBT): 1 TCP, 1 tagged, 2 untagged. Port 4 (RED), 5 (CBT): flows
        # that change nothing. Port 3 (D-CBT): none.
        await _observe(controller, driver, [
            [report(2, TCP, 1), report(2, TAGGED, 2)],
            [report(2, UNTAGGED, 3), report(2, UNTAGGED, 4), report(4, UNTAGGED, 5),
             report(5, TAGGED, 6)],
        ])
        assert await controller.update_shares() == [2]
        # shares 1/4, 2/4: tagged round(0.25 * 65536) = 16384; untagged 0.5 * 6 = 3 pkts.
        # The policy epoch stays: a share update must not reset the averages.
        expected = DCBT_2_IDLE.with_params(tagged_share_q16=16384, untagged_th_scaled=3 << 16)
        assert driver.writes() == [(2, expected)]
        assert controller.pushed[2] == expected
        assert await controller.update_shares() == []      # nothing changed since
        assert len(driver.writes()) == 1
    run_async(body())


def test_flows_expire_after_the_expiry_interval_and_the_shares_return() -> None:
    async def body() -> None:
        driver = FakeDriver()
        clock = Clock(1000.0)
        controller = await installed(driver, clock)
        await _observe(controller, driver, [[report(3, TAGGED, 1), report(3, UNTAGGED, 2)]])
        assert await controller.update_shares() == [3]
        # shares 1/2, 1/2: tagged 32768; untagged 0.5 * 14 = 7 pkts
        assert driver.writes()[-1] == (3, DCBT_3_IDLE.with_params(
            tagged_share_q16=32768, untagged_th_scaled=7 << 16))
        clock.now_ms = 1300.0          # exactly 300 ms old: still active (dcbt §3.1)
        assert await controller.update_shares() == []
        clock.now_ms = 1300.5
        assert await controller.update_shares() == [3]
        assert driver.writes()[-1] == (3, DCBT_3_IDLE)
        assert len(controller.flows) == 0
    run_async(body())


def test_each_share_push_is_logged_with_its_flow_counts_and_shares() -> None:
    """The event sink gets one share_push line per pushed D-CBT port, none without a
    push: the data the experiments time the active-flow lag from."""
    async def body() -> None:
        driver = FakeDriver()
        clock = Clock(1000.0)
        events: list[dict[str, Any]] = []
        controller = await installed(driver, clock, event_sink=events.append)
        await _observe(controller, driver, [[report(3, TAGGED, 1), report(3, UNTAGGED, 2),
                                             report(3, TCP, 7)]])
        await controller.update_shares()
        assert len(events) == 1
        ev = events[0]
        assert ev["event"] == "share_push" and ev["port"] == 3
        assert ev["active_flows"] == {"TCP": 1, "TAGGED": 1, "UNTAGGED": 1}
        # shares 1/3: tagged round(65536 / 3) = 21845; untagged (1/3) * 14 pkts
        assert ev["tagged_share_q16"] == 21845
        assert ev["untagged_th_scaled"] == round(14 / 3 * 65536)
        assert isinstance(ev["t_ns"], int) and ev["switch"] == controller.switch.name
        await controller.update_shares()      # nothing changed: no push, no event
        assert len(events) == 1
        clock.now_ms = 1400.0                 # all three expired: shares return
        await controller.update_shares()
        assert events[-1]["active_flows"] == {"TCP": 0, "TAGGED": 0, "UNTAGGED": 0}
        assert len(events) == 2
    run_async(body())


def test_a_report_refreshes_a_flow() -> None:
    async def body() -> None:
        driver = FakeDriver()
        clock = Clock(1000.0)
        controller = await installed(driver, clock)
        await _observe(controller, driver, [[report(2, TAGGED, 1)]])
        assert await controller.update_shares() == [2]
        clock.now_ms = 1250.0
        await _observe(controller, driver, [[report(2, TAGGED, 1)]])
        clock.now_ms = 1500.0          # 500 ms after the first report, 250 after the second
        assert await controller.update_shares() == []
        assert controller.flows.counts(2) == {TCP: 0, TAGGED: 1, UNTAGGED: 0}
    run_async(body())


# ------------------------------------------------------------------- stats
COUNTERS = {
    # port 2, TCP: class index 2 * 4 + 0 = 8; RED_EARLY (1) drop index 8 * 10 + 1 = 81
    "queue_arrivals": {8: CounterValue(10, 15000)},
    "queue_admits": {8: CounterValue(9, 13500)},
    "queue_departures": {8: CounterValue(7, 10500)},
    "queue_drops": {81: CounterValue(1, 1500)},
    # ingress port 3: discard index 3 * 8 + reason; NOT_IPV4 (0) twice, NO_ROUTE (5) once
    "ingress_discards": {24: CounterValue(2, 120), 29: CounterValue(1, 60)},
}


def _zero() -> dict[str, int]:
    return {"packets": 0, "bytes": 0}


def test_sample_stats_reads_every_port_in_one_request_and_has_this_shape() -> None:
    async def body() -> None:
        driver = FakeDriver(counters=COUNTERS)
        controller = await installed(driver, Clock(0.0))
        await _observe(controller, driver, [[report(2, TCP, 1), report(2, UNTAGGED, 2)]])
        await controller.update_shares()
        del driver.calls[:]
        before_ns = time.time_ns()
        sample = await controller.sample_stats()
        after_ns = time.time_ns()
        return driver, sample, before_ns, after_ns

    driver, sample, before_ns, after_ns = run_async(body())
    # ports 1..5 x classes 0..2: class index port * 4 + class; drops class index * 10 + reason
    # (10 drop reasons in defines.p4)
    per_class = [p * 4 + c for p in (1, 2, 3, 4, 5) for c in (0, 1, 2)]
    drops = [i * 10 + r for i in per_class for r in range(10)]
    discards = [p * 8 + r for p in (1, 2, 3, 4, 5) for r in range(8)]   # 8 reasons in defines.p4
    # ECN marks exist for RED's two reasons only (RED_EARLY 1, RED_FORCED 2);
    # chips_events: port * 5 + event, 5 events (defines.p4)
    ecn_marks = [i * 10 + r for i in per_class for r in (1, 2)]
    chips_events = [p * 5 + e for p in (1, 2, 3, 4, 5) for e in range(5)]
    assert driver.calls == [("read_counter_indexes", {
        "queue_arrivals": per_class, "queue_admits": per_class,
        "queue_departures": per_class, "queue_drops": drops, "queue_ecn_marks": ecn_marks,
        "ingress_discards": discards, "chips_events": chips_events,
        "other_pipe_discards": [1, 2, 3],                  # TNA: pipes 1..3 (TNA_PIPES 4)
        "bfd_arrivals": [1, 2, 3, 4, 5]})]                 # UPTA's BFD messages per port
    assert "bfd_arrivals" not in sample       # the fake returns no such counter
    assert sample["ingress_discards"] == {"1": 0, "2": 0, "3": 3, "4": 0, "5": 0}
    assert sample["other_pipe_discards"] == {}   # this program has no such counter

    assert before_ns <= sample["t_ns"] <= after_ns
    assert sample["switch"] == "s1"
    rows = sample["readings"]
    assert [(r["port"], r["class"]) for r in rows] == [
        (p, c) for p in (1, 2, 3, 4, 5) for c in ("TCP", "TAGGED", "UNTAGGED")]
    reasons = ("QUEUE_LIMIT", "RED_EARLY", "RED_FORCED", "CLASS_THRESHOLD", "FRED_MAXQ",
               "FRED_TWICE_AVGCQ", "FRED_STRIKE", "UPTA_USELESS", "UPTA_FAIR_SHARE", "TAG_GUARD")
    assert rows[3] == {
        "port": 2, "class": "TCP",
        "arrivals": {"packets": 10, "bytes": 15000},
        "admits": {"packets": 9, "bytes": 13500},
        "departures": {"packets": 7, "bytes": 10500},
        "drops": {**{r: _zero() for r in reasons}, "RED_EARLY": {"packets": 1, "bytes": 1500}},
        "ecn_marks": {"RED_EARLY": _zero(), "RED_FORCED": _zero()},
    }
    assert rows[0] == {"port": 1, "class": "TCP", "arrivals": _zero(), "admits": _zero(),
                       "departures": _zero(), "drops": {r: _zero() for r in reasons},
                       "ecn_marks": {"RED_EARLY": _zero(), "RED_FORCED": _zero()}}
    assert sample["chips"] == {}              # no DCBT_CHIPS port: no ChIPS events
    idle = {"TCP": 0, "TAGGED": 0, "UNTAGGED": 0}
    assert sample["active_flows"] == {"1": idle, "2": {"TCP": 1, "TAGGED": 0, "UNTAGGED": 1},
                                      "3": idle, "4": idle, "5": idle}
    # shares 1/2 TCP, 0 tagged, 1/2 untagged: tagged 0; untagged 0.5 * 6 = 3 pkts
    assert sample["policies"] == {
        "1": {"algorithm": "DROP_TAIL"},
        "2": {"algorithm": "DCBT", "tagged_share_q16": 0, "untagged_th_scaled": 3 << 16,
              "tag_guard_interval_us": 0},
        "3": {"algorithm": "DCBT", "tagged_share_q16": 65536, "untagged_th_scaled": 14 << 16,
              "tag_guard_interval_us": 0},
        "4": {"algorithm": "RED"},
        "5": {"algorithm": "CBT_RED_ALL", "tagged_th_scaled": 190054, "tag_guard_interval_us": 0,
              "untagged_th_scaled": 39322},
    }


def test_jsonl_sink_writes_one_json_line_per_sample() -> None:
    driver = FakeDriver(counters=COUNTERS)

    async def body() -> dict[str, Any]:
        controller = await installed(driver)
        return await controller.sample_stats()

    sample = run_async(body())
    out = io.StringIO()
    sink = jsonl_sink(out)
    sink(sample)
    sink({"t_ns": 1})
    lines = out.getvalue().split("\n")
    assert lines[2] == "" and len(lines) == 3
    assert json.loads(lines[0]) == sample
    assert json.loads(lines[1]) == {"t_ns": 1}


# ---------------------------------------------------------------------- run
def test_run_updates_shares_and_samples_stats_until_cancelled() -> None:
    samples: list[dict[str, Any]] = []

    async def body() -> FakeDriver:
        driver = FakeDriver(reports=[[report(2, TAGGED, 1)]], reports_end=False)
        controller = await installed(driver, Clock(0.0), stats_sink=samples.append,
                                     stats_interval_ms=5)
        await run_until(controller, lambda: len(samples) >= 3 and bool(driver.writes()))
        return driver

    driver = run_async(body())
    # only tagged flows: tagged share 1 (65536), untagged share 0 -> threshold 0
    assert driver.writes() == [(2, DCBT_2_IDLE.with_params(untagged_th_scaled=0))]
    assert all(s["switch"] == "s1" and len(s["readings"]) == 15 for s in samples)
    # the controller's own load: the one report, one flow; every loop wake-up timed
    assert [s["controller"]["flow_reports"] for s in samples][-1] == 1
    assert samples[-1]["controller"]["flows"] == 1
    assert samples[-1]["controller"]["flows_refused"] == 0
    assert all(len(s["controller"]["lateness_ms"]["stats"]) == 1 for s in samples[1:])
    assert all(v >= 0 for s in samples for v in s["controller"]["lateness_ms"]["update"])


def test_run_fails_when_the_flow_report_stream_ends() -> None:
    async def body() -> None:
        controller = await installed(FakeDriver(reports=[], reports_end=True))
        await controller.run()

    with pytest.raises(RuntimeError, match="s1: background task ended"):
        run_async(body())


def test_run_fails_with_the_flow_report_error() -> None:
    class BrokenReports(FakeDriver):
        async def flow_reports(self) -> AsyncIterator[list[FlowReport]]:
            yield [report(2, 7, 1)]          # class 7 is no traffic class

    async def body() -> None:
        controller = await installed(BrokenReports())
        await controller.run()

    with pytest.raises(ValueError, match="class_id 7"):
        run_async(body())


# --------------------------------------------------------------------- MCDT
MCDT_PORT = 2
MCDT_EPOCH = EPOCH[MCDT_PORT]
MCDT_CONFIG: dict[str, Any] = {
    "switches": {"s1": {
        "p4runtime_addr": "127.0.0.1:9559",
        "ports": {1: {"mac": "02:00:00:00:00:01"}, 2: {"mac": "02:00:00:00:00:02"}},
        "policies": {"default": {"algorithm": "DROP_TAIL"},
                     MCDT_PORT: {"algorithm": "MCDT", "queue_limit_pkts": 100,
                                 "mcdt_period_ms": 5}},
    }}
}
# Before the first update every class's threshold is B = 100 packets.
MCDT_INSTALLED = PolicyAction("mcdt", {**COMMON, "queue_limit_pkts": 100,
                                       "policy_epoch": MCDT_EPOCH, "tcp_th_pkts": 100,
                                       "tagged_th_pkts": 100, "untagged_th_pkts": 100,
                                       "mcdt_mode": 0})     # mode A, the default
# Port 2: class index 2 * 4 + class -> 8 (TCP), 9 (tagged), 10 (untagged).
MCDT_INDEXES = [8, 9, 10]
MCDT_READ = ("read_counter_indexes", {"queue_arrivals": MCDT_INDEXES,
                                      "queue_admits": MCDT_INDEXES,
                                      "queue_departures": MCDT_INDEXES})


def mcdt_counters(arrivals: tuple[int, int, int], admits: tuple[int, int, int],
                  departures: tuple[int, int, int]) -> dict[str, dict[int, CounterValue]]:
    """Cumulative counters of port 2's classes (TCP, tagged, untagged), 1000-byte packets."""
    return {name: {i: CounterValue(n, 1000 * n) for i, n in zip(MCDT_INDEXES, values)}
            for name, values in (("queue_arrivals", arrivals), ("queue_admits", admits),
                                 ("queue_departures", departures))}


def mcdt_controller(driver: FakeDriver, mode: str | None = None,
                    **kwargs: Any) -> SwitchController:
    raw = copy.deepcopy(MCDT_CONFIG)
    if mode is not None:
        raw["switches"]["s1"]["policies"][MCDT_PORT]["mcdt_mode"] = mode
    cfg = parse_config(raw)
    return SwitchController(cfg, cfg.switches["s1"], driver,  # type: ignore[arg-type]
                            clock_ms=Clock(), **kwargs)


def test_mcdt_install_writes_thresholds_at_b_and_reads_the_period_start() -> None:
    driver = FakeDriver(counters=mcdt_counters((7, 3, 1), (6, 3, 1), (6, 3, 1)))
    controller = mcdt_controller(driver)
    run_async(controller.install())
    assert driver.calls == [
        ("read_state",), ("new_policy_epoch", 1, None), ("new_policy_epoch", 2, None),
        ("write", (R.Write(R.INSERT, DIGEST),)),
        ("write", tuple(R.Write(R.INSERT, e) for e in [
            *CLASSIFIER,
            R.policy_entry(1, PolicyAction("drop_tail", {**COMMON, "queue_limit_pkts": 64})),
            R.policy_entry(2, MCDT_INSTALLED)])),
        MCDT_READ,
    ]
    assert controller.mcdt_arrivals[2] == {TCP: 7, TAGGED: 3, UNTAGGED: 1}
    assert controller.mcdt_th_scaled[2] == {c: 100 << 16 for c in (TCP, TAGGED, UNTAGGED)}


def test_mcdt_reinstall_keeps_the_thresholds_and_period_a_new_controller_starts_at_b() -> None:
    """The controller that moved the thresholds reinstalls: nothing written, eq. 10's
    memory and the running period kept. A new controller (no memory) starts at B again
    (mcdt §II.2, "before the first update"): one MODIFY, the policy epoch kept."""
    async def body() -> None:
        driver = FakeDriver(counters=mcdt_counters((100, 50, 20), (90, 45, 20), (90, 45, 20)))
        controller = mcdt_controller(driver)
        await controller.install()
        driver.counters = mcdt_counters((110, 70, 25), (98, 63, 25), (94, 45, 17))
        assert await controller.mcdt_update(2) is True
        memory, period = dict(controller.mcdt_th_scaled[2]), dict(controller.mcdt_arrivals[2])
        del driver.calls[:]
        assert (await controller.install()).writes == []
        assert driver.calls == [("read_state",)]
        assert controller.mcdt_th_scaled[2] == memory and controller.mcdt_arrivals[2] == period
        assert controller.pushed[2] == MCDT_INSTALLED.with_params(
            tcp_th_pkts=59, tagged_th_pkts=59, untagged_th_pkts=41)
        del driver.calls[:]
        fresh = mcdt_controller(driver)
        await fresh.install()
        assert driver.calls == [("read_state",),
                                ("write", (R.Write(R.MODIFY, R.policy_entry(2, MCDT_INSTALLED)),)),
                                MCDT_READ]
        # the switch lost its tables (a restart): the same controller starts over at B,
        # with a new epoch and a new period
        driver.state = R.SwitchState()
        del driver.calls[:]
        await controller.install()
        assert driver.calls[1:3] == [("new_policy_epoch", 1, None), ("new_policy_epoch", 2, None)]
        assert driver.calls[-1] == MCDT_READ
        assert controller.pushed[2] == MCDT_INSTALLED
        assert controller.mcdt_th_scaled[2] == {c: 100 << 16 for c in (TCP, TAGGED, UNTAGGED)}

    run_async(body())


def test_mcdt_period_pushes_the_reference_models_thresholds_keeping_the_epoch() -> None:
    """Period 1: arrivals TCP 10, tagged 20, untagged 5; Q = 30 at the update; B = 100.
    eqs. 6-8: alpha = 10 + 4 + 2 = 16, 16, 3 (sum 35); eq. 5: T5 = alpha * 70 / 36 =
    280/9, 280/9, 35/6; eq. 9: R = (100 - 1225/18) / 3 = 575/54; eq. 10 with last = 100:
    0.7 (280/9 + 575/54) + 30 = 59.23, the same, 0.7 (35/6 + 575/54) + 30 = 41.54
    -> 59, 59, 41 packets.
    Period 2: no arrival -> nothing written (the thresholds stay).
    Period 3: tagged 10 only, Q = 0: alpha 2, 8, 0; T5 = 200/11, 800/11, 0; R = 100/11
    (S = 1, tagged); 0.7 * 200/11 + 0.3 * 59.23 = 30.50, 0.7 * 900/11 + 0.3 * 59.23 =
    75.04, 0.3 * 41.54 = 12.46 -> 30, 75, 12 (TCP and untagged get no R)."""
    async def body() -> tuple[FakeDriver, SwitchController, list[dict[str, Any]]]:
        driver = FakeDriver(counters=mcdt_counters((100, 50, 20), (90, 45, 20), (90, 45, 20)))
        events: list[dict[str, Any]] = []
        controller = mcdt_controller(driver, event_sink=events.append)
        await controller.install()
        del driver.calls[:]
        # arrivals +10, +20, +5 (2 tagged dropped); queued 4 + 18 + 8 = 30
        driver.counters = mcdt_counters((110, 70, 25), (98, 63, 25), (94, 45, 17))
        assert await controller.mcdt_update(2) is True
        period_1 = list(driver.calls)
        assert await controller.mcdt_update(2) is False         # period 2: no arrival
        del driver.calls[:]
        # tagged +10; admits = departures: Q = 0
        driver.counters = mcdt_counters((110, 80, 25), (98, 73, 25), (98, 73, 25))
        assert await controller.mcdt_update(2) is True
        return driver, controller, [*period_1, *driver.calls, events]  # type: ignore[list-item]

    driver, controller, calls = run_async(body())
    *calls, events = calls
    first = MCDT_INSTALLED.with_params(tcp_th_pkts=59, tagged_th_pkts=59, untagged_th_pkts=41)
    third = MCDT_INSTALLED.with_params(tcp_th_pkts=30, tagged_th_pkts=75, untagged_th_pkts=12)
    assert calls == [MCDT_READ, ("write_port_policy", 2, first),
                     MCDT_READ, ("write_port_policy", 2, third)]
    assert controller.pushed[2] == third and third.params["policy_epoch"] == MCDT_EPOCH
    # eq. 10's memory is the exact T_c * 2^16, rounded down once, as the float model says
    p1 = mcdt_reference.reference_period_update({TCP: 10, TAGGED: 20, UNTAGGED: 5}, 30)
    p3 = mcdt_reference.reference_period_update({TAGGED: 10}, 0, p1)
    assert {c: math.floor(v) for c, v in p1.items()} == {TCP: 59, TAGGED: 59, UNTAGGED: 41}
    assert {c: math.floor(v) for c, v in p3.items()} == {TCP: 30, TAGGED: 75, UNTAGGED: 12}
    assert all(abs(controller.mcdt_th_scaled[2][c] - p3[c] * 2**16) < 2 for c in p3)
    assert [(e["event"], e["port"], e["arrivals"], e["queue_pkts"], e["th_pkts"])
            for e in events] == [
        ("mcdt_push", 2, {"TCP": 10, "TAGGED": 20, "UNTAGGED": 5}, 30,
         {"TCP": 59, "TAGGED": 59, "UNTAGGED": 41}),
        ("mcdt_push", 2, {"TCP": 0, "TAGGED": 10, "UNTAGGED": 0}, 0,
         {"TCP": 30, "TAGGED": 75, "UNTAGGED": 12})]


def test_mcdt_counters_that_went_back_start_a_new_period_without_a_write() -> None:
    async def body() -> tuple[FakeDriver, SwitchController]:
        driver = FakeDriver(counters=mcdt_counters((100, 50, 20), (90, 45, 20), (90, 45, 20)))
        controller = mcdt_controller(driver)
        await controller.install()
        del driver.calls[:]
        driver.counters = mcdt_counters((3, 0, 0), (3, 0, 0), (3, 0, 0))   # pipeline pushed
        assert await controller.mcdt_update(2) is False
        driver.counters = mcdt_counters((13, 20, 5), (13, 20, 5), (13, 20, 5))
        assert await controller.mcdt_update(2) is True                    # from (3, 0, 0)
        return driver, controller

    driver, controller = run_async(body())
    assert controller.mcdt_arrivals[2] == {TCP: 13, TAGGED: 20, UNTAGGED: 5}
    expected = mcdt.period_update({TCP: 10, TAGGED: 20, UNTAGGED: 5}, 0)
    assert driver.writes() == [(2, MCDT_INSTALLED.with_params(
        **mcdt.action_params(expected.th_pkts, 100)))]


def test_run_updates_mcdt_every_period() -> None:
    async def body() -> FakeDriver:
        driver = FakeDriver(counters=mcdt_counters((0, 0, 0), (0, 0, 0), (0, 0, 0)),
                            reports_end=False)
        controller = mcdt_controller(driver)
        await controller.install()
        del driver.calls[:]
        driver.counters = mcdt_counters((10, 20, 5), (10, 20, 5), (10, 20, 5))
        await run_until(controller, lambda: sum(call == MCDT_READ for call in driver.calls) >= 3)
        return driver

    driver = run_async(body())
    first = mcdt.period_update({TCP: 10, TAGGED: 20, UNTAGGED: 5}, 0)
    # one write after the first period; later periods see no arrival
    assert driver.writes() == [(2, MCDT_INSTALLED.with_params(
        **mcdt.action_params(first.th_pkts, 100)))]


@pytest.mark.parametrize("policy, errors", [
    ({"algorithm": "MCDT", "min_th_pkts": 5, "max_th_pkts": 15, "max_p": 0.1},
     ["min_th_pkts: not used by MCDT", "max_th_pkts: not used by MCDT",
      "max_p: not used by MCDT"]),
    ({"algorithm": "MCDT", "mcdt_period_ms": 0.5},
     ["mcdt_period_ms: must be >= 1, got 0.5"]),
    ({"algorithm": "MCDT", "ewma_weight": 0.5, "gentle": True},
     ["ewma_weight: not used by MCDT", "gentle: not used by MCDT"]),
    ({"algorithm": "RED", "min_th_pkts": 5, "max_th_pkts": 15, "max_p": 0.1,
      "mcdt_period_ms": 100},
     ["mcdt_period_ms: only for MCDT"]),
])
def test_bad_mcdt_policy_is_rejected_with_every_error(policy: dict[str, Any],
                                                      errors: list[str]) -> None:
    cfg = copy.deepcopy(MCDT_CONFIG)
    cfg["switches"]["s1"]["policies"][2] = policy
    with pytest.raises(ConfigError) as info:
        parse_config(cfg)
    assert info.value.errors == [f"switches.s1.policies.2.{e}" for e in errors]


def test_mcdt_period_defaults_to_100_ms() -> None:
    cfg = copy.deepcopy(MCDT_CONFIG)
    del cfg["switches"]["s1"]["policies"][2]["mcdt_period_ms"]
    policy = parse_config(cfg).switches["s1"].policies[2]
    assert policy.settings.mcdt_period_ms == 100.0 and "ewma_weight" not in policy.settings


def test_stats_samples_carry_the_pushed_mcdt_thresholds() -> None:
    async def body() -> dict[str, Any]:
        driver = FakeDriver(counters=mcdt_counters((0, 0, 0), (0, 0, 0), (0, 0, 0)))
        controller = mcdt_controller(driver)
        await controller.install()
        driver.counters = mcdt_counters((10, 20, 5), (40, 20, 5), (10, 20, 5))   # Q = 30
        await controller.mcdt_update(2)
        return await controller.sample_stats()

    sample = run_async(body())
    assert sample["policies"] == {
        "1": {"algorithm": "DROP_TAIL"},
        "2": {"algorithm": "MCDT", "tcp_th_pkts": 59, "tagged_th_pkts": 59,
              "untagged_th_pkts": 41}}


def test_stats_samples_of_a_fred_port_count_the_active_flows_that_share_a_slot() -> None:
    """A FRED port with 2 flow slots: the controller slots the reported 5-tuples as the
    data plane does (fred.flow_slot) and samples how many active flows share a slot."""
    cfg = copy.deepcopy(CONFIG)
    cfg["switches"]["s1"]["policies"][4] = {"algorithm": "FRED", **RED_5_15,
                                            "fred_flow_slots": 2}

    async def body() -> dict[str, Any]:
        driver = FakeDriver(counters=COUNTERS)
        parsed = parse_config(cfg)
        controller = SwitchController(parsed, parsed.switches["s1"], driver,  # type: ignore[arg-type]
                                      clock_ms=Clock())
        await controller.install()
        await _observe(controller, driver, [[report(4, TCP, n) for n in (1, 2, 3)]])
        return await controller.sample_stats()

    sample = run_async(body())
    keys = [report(4, TCP, n).flow_key for n in (1, 2, 3)]
    slots = [fred.flow_hash(*k) & 1 for k in keys]
    # 3 flows in 2 slots: at least two share one; a slot holding k > 1 flows counts k
    sharing = sum(slots.count(s) for s in set(slots) if slots.count(s) > 1)
    assert sharing >= 2
    assert sample["fred_slots"] == {"4": {"flows": 3, "sharing": sharing}}
    assert sample["policies"]["4"] == {"algorithm": "FRED"}


# ------------------------------------------------ reconnect (SwitchSupervisor)
DCBT_2 = {"algorithm": "DCBT", **RED_5_15}
FLOW_TAGGED = {"egress_port": 2, "class_id": TAGGED, "src_addr": 1, "dst_addr": 2,
               "protocol": 17, "src_port": 1000, "dst_port": 5004, "ingress_ts_us": 1000}


def _one_switch_config(address: str) -> Config:
    return parse_config({"switches": {"s1": {
        "p4runtime_addr": address,
        "ports": {1: {"mac": "02:00:00:00:00:01"}, 2: {"mac": "02:00:00:00:00:02"}},
        "routes": [{"prefix": "10.0.2.0/24", "port": 2, "next_hop_mac": "02:00:00:02:00:01"}],
        "policies": {"default": {"algorithm": "DROP_TAIL"}, 2: DCBT_2}}}})


async def _until(done: Callable[[], bool], what: str, timeout_s: float = 5.0,
                 task: asyncio.Task[Any] | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if task is not None and task.done():
            task.result()
            raise AssertionError(f"the controller ended before: {what}")
        assert time.monotonic() < deadline, f"timed out: {what}"
        await asyncio.sleep(0.01)


def _installed(server: Any) -> bool:
    """An install has written the switch: the digest config (its first step) and
    port 2's policy (with the routes, a later step of the reconciling install)."""
    return bool(server.digest_configs) and _policy_params(server, 2) is not None


def _policy_params(server: Any, port: int) -> dict[str, int] | None:
    for entry in server.table_entries("port_policy"):
        if entry.match == {"port": port}:
            return entry.params
    return None


def test_run_reconnects_repushes_reinstalls_and_resumes_after_a_switch_restart(
        p4info_path: Path, device_config: Path) -> None:
    """The switch goes away and comes back empty (no pipeline) on the same
    address: the controller reconnects, pushes the pipeline again, reinstalls the
    routes and policies and follows flow reports again (digest acknowledged, share
    pushed). Twice in a row, each step in the event log."""
    from fake_p4rt import FakeP4RuntimeServer
    from mmaqm.supervisor import ReconnectPolicy, run_switches

    events: list[dict[str, Any]] = []

    async def body() -> None:
        server = FakeP4RuntimeServer()
        serving = server.run()
        await serving.__aenter__()
        port = server.port
        task = asyncio.create_task(run_switches(
            _one_switch_config(server.address), p4info=p4info_path, bmv2_json=device_config,
            event_sink=events.append, reconnect=ReconnectPolicy(give_up_s=10)))
        try:
            await _until(lambda: _installed(server), "the first install", task=task)
            for restart in range(2):
                await serving.__aexit__(None, None, None)      # the switch dies
                await asyncio.sleep(0.3)                       # attempts fail meanwhile
                server = FakeP4RuntimeServer(port=port)        # and comes back empty
                serving = server.run()
                await serving.__aenter__()
                await _until(lambda: _installed(server), f"reinstall {restart}",
                             task=task)
                assert len(server.pipeline_pushes) == 1
                assert [e.match for e in server.table_entries("ipv4_lpm")] == \
                    [{"ipv4_dst": (0x0A000200, 24)}]
                params = _policy_params(server, 2)
                assert params is not None and params["tagged_share_q16"] == 65536

                def shared() -> bool:
                    server.send_digest("flow_digest_t", [FLOW_TAGGED], list_id=restart + 1)
                    params = _policy_params(server, 2)
                    return params is not None and params["tagged_share_q16"] == 65536 \
                        and bool(server.digest_acks)
                await _until(shared, f"flow reports followed after restart {restart}",
                             task=task)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await serving.__aexit__(None, None, None)

    run_async(body(), timeout_s=20)
    kinds = [e["event"] for e in events if e["event"] != "share_push"]
    assert kinds == ["installed", "connection_lost", "reconnected", "installed",
                     "connection_lost", "reconnected", "installed"]
    assert [e["install"] for e in events if e["event"] == "installed"] == [1, 2, 3]
    assert all(e["attempts"] >= 2 for e in events if e["event"] == "reconnected")


def test_a_broken_channel_to_a_switch_that_kept_its_pipeline_needs_no_push(
        p4info_path: Path, device_config: Path) -> None:
    """The gRPC channel breaks but the switch keeps its state (the same server object
    serves again): the controller reconnects, finsy finds the pipeline's cookie and
    pushes nothing, the controller installs again and follows flow reports."""
    from fake_p4rt import FakeP4RuntimeServer
    from mmaqm.supervisor import run_switches

    events: list[dict[str, Any]] = []

    async def body() -> None:
        server = FakeP4RuntimeServer()
        serving = server.run()
        await serving.__aenter__()
        task = asyncio.create_task(run_switches(
            _one_switch_config(server.address), p4info=p4info_path, bmv2_json=device_config,
            event_sink=events.append))
        try:
            await _until(lambda: _installed(server), "installed", task=task)
            await serving.__aexit__(None, None, None)          # the channel breaks
            await asyncio.sleep(0.2)
            serving = server.run()                             # same state, same port
            await serving.__aenter__()
            await _until(lambda: [e["event"] for e in events].count("installed") == 2,
                         "installed again", task=task)

            def followed() -> bool:
                server.send_digest("flow_digest_t", [FLOW_TAGGED], list_id=3)
                return 3 in {list_id for _, list_id in server.digest_acks}
            await _until(followed, "flow reports followed", task=task)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await serving.__aexit__(None, None, None)
        assert len(server.pipeline_pushes) == 1

    run_async(body(), timeout_s=15)


def test_run_gives_up_on_a_lost_switch_after_the_reconnect_timeout(
        p4info_path: Path, device_config: Path) -> None:
    """With a give-up bound the run ends with SwitchGivenUp once the switch stayed
    away that long (no bound: it retries forever)."""
    from fake_p4rt import FakeP4RuntimeServer
    from mmaqm.supervisor import ReconnectPolicy, SwitchGivenUp, run_switches

    async def body() -> float:
        server = FakeP4RuntimeServer()
        serving = server.run()
        await serving.__aenter__()
        task = asyncio.create_task(run_switches(
            _one_switch_config(server.address), p4info=p4info_path, bmv2_json=device_config,
            reconnect=ReconnectPolicy(give_up_s=0.5)))
        await _until(lambda: _installed(server), "installed", task=task)
        await serving.__aexit__(None, None, None)
        started = time.monotonic()
        with pytest.raises(SwitchGivenUp, match=r"s1: no working P4Runtime connection to "
                           r"127\.0\.0\.1:\d+ for 0\.\d s after it was lost \(or stopped "
                           r"answering\); giving up"):
            await task
        return time.monotonic() - started

    assert 0.45 < run_async(body()) < 1.5


def test_a_lost_switch_does_not_stop_the_others(p4info_path: Path, device_config: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    """Two switches: s1 goes away for good and is given up; s2 keeps being served
    (its flow reports followed after s1 was given up)."""
    from fake_p4rt import FakeP4RuntimeServer
    from mmaqm.supervisor import ReconnectPolicy, SwitchGivenUp, run_switches

    async def body() -> None:
        s1, s2 = FakeP4RuntimeServer(), FakeP4RuntimeServer()
        serving1, serving2 = s1.run(), s2.run()
        await serving1.__aenter__()
        await serving2.__aenter__()
        cfg = parse_config({"switches": {name: {
            "p4runtime_addr": server.address,
            "ports": {2: {"mac": "02:00:00:00:00:02"}},
            "policies": {"default": {"algorithm": "DROP_TAIL"}, 2: DCBT_2}}
            for name, server in (("s1", s1), ("s2", s2))}})
        task = asyncio.create_task(run_switches(
            cfg, p4info=p4info_path, bmv2_json=device_config,
            reconnect=ReconnectPolicy(give_up_s=0.3)))
        try:
            await _until(lambda: _installed(s1) and _installed(s2), "installed",
                         task=task)
            await serving1.__aexit__(None, None, None)
            await _until(lambda: "s1: stopped" in caplog.text, "s1 given up", task=task)

            def s2_followed() -> bool:
                s2.send_digest("flow_digest_t", [FLOW_TAGGED], list_id=7)
                return (7 in {list_id for _, list_id in s2.digest_acks})
            await _until(s2_followed, "s2 still served", task=task)
            assert not task.done()
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await serving2.__aexit__(None, None, None)

    caplog.set_level("INFO")
    run_async(body(), timeout_s=10)
    assert "s1: stopped: s1: no working P4Runtime connection" in caplog.text
    assert "reconnect attempt 1 to" in caplog.text
    del SwitchGivenUp


def test_a_backup_controller_waits_then_takes_over_when_the_primary_goes(
        p4info_path: Path, device_config: Path) -> None:
    """Two `run`s on one switch: the one with the lower election id waits as a
    backup and writes nothing; when the primary's connection goes, it becomes
    primary (finsy's arbitration), installs (reconciles: the unchanged policy keeps
    its epoch) and follows
    flow reports. On the fake (test_reconnect.py shows it on BMv2)."""
    from fake_p4rt import FakeP4RuntimeServer
    from mmaqm.supervisor import run_switches

    events: list[dict[str, Any]] = []

    async def body() -> None:
        server = FakeP4RuntimeServer()
        async with server.run():
            cfg = _one_switch_config(server.address)
            common = {"p4info": p4info_path, "bmv2_json": device_config}
            primary = asyncio.create_task(run_switches(cfg, **common))
            await _until(lambda: _installed(server), "primary installed",
                         task=primary)
            epoch = _policy_params(server, 2)["policy_epoch"]   # type: ignore[index]
            backup = asyncio.create_task(run_switches(cfg, **common, election_id=5,
                                                      event_sink=events.append))
            try:
                await _until(lambda: any(e["event"] == "backup_waiting" for e in events),
                             "backup waiting", task=backup)
                writes = len(server.write_requests)
                await asyncio.sleep(0.3)
                assert len(server.write_requests) == writes     # a backup writes nothing
                primary.cancel()                                # the primary goes
                await asyncio.gather(primary, return_exceptions=True)
                await _until(lambda: any(e["event"] == "installed" for e in events),
                             "the backup installed", task=backup)
                params = _policy_params(server, 2)   # reconciled: the same policy, epoch kept
                assert params is not None and params["policy_epoch"] == epoch

                def followed() -> bool:
                    server.send_digest("flow_digest_t", [FLOW_TAGGED], list_id=9)
                    return 9 in {list_id for _, list_id in server.digest_acks}
                await _until(followed, "flow reports followed by the new primary",
                             task=backup)
            finally:
                for task in (primary, backup):
                    task.cancel()
                await asyncio.gather(primary, backup, return_exceptions=True)

    run_async(body(), timeout_s=15)
    kinds = [e["event"] for e in events if e["event"] != "share_push"]
    assert kinds == ["backup_waiting", "became_primary", "installed"]


def test_a_primary_that_loses_the_role_waits_as_backup_and_takes_it_back(
        p4info_path: Path, device_config: Path) -> None:
    """A `run` with a higher election id joins: the first one stops writing
    (primary_lost) and waits as its backup; when the newcomer goes, it is primary
    again and installs."""
    from fake_p4rt import FakeP4RuntimeServer
    from mmaqm.supervisor import run_switches

    events: list[dict[str, Any]] = []

    async def body() -> None:
        server = FakeP4RuntimeServer()
        async with server.run():
            cfg = _one_switch_config(server.address)
            common = {"p4info": p4info_path, "bmv2_json": device_config}
            first = asyncio.create_task(run_switches(cfg, **common, event_sink=events.append))
            await _until(lambda: _installed(server), "first installed", task=first)
            second = asyncio.create_task(run_switches(cfg, **common, election_id=20))
            try:
                await _until(lambda: any(e["event"] == "backup_waiting" for e in events),
                             "the first waiting as backup", task=first)
                await _until(lambda: server.primary_election_id == 20
                             and _installed(server), "second primary", task=second)
                second.cancel()
                await asyncio.gather(second, return_exceptions=True)
                await _until(lambda: [e["event"] for e in events].count("installed") == 2,
                             "the first installed again", task=first)
            finally:
                for task in (first, second):
                    task.cancel()
                await asyncio.gather(first, second, return_exceptions=True)

    run_async(body(), timeout_s=15)
    kinds = [e["event"] for e in events if e["event"] != "share_push"]
    assert kinds == ["installed", "primary_lost", "backup_waiting", "became_primary",
                     "installed"]


@pytest.mark.parametrize("mode, code", [("B", 1), ("C", 2)])
def test_mcdt_period_keeps_the_mode(mode: str, code: int) -> None:
    """The modes share eqs. 5-10 (mcdt §II.2): a period of a mode-B or mode-C port
    pushes the same thresholds as mode A's first period (59, 59, 41, worked out
    above), with the port's mcdt_mode installed and kept."""
    async def body() -> tuple[FakeDriver, SwitchController]:
        driver = FakeDriver(counters=mcdt_counters((100, 50, 20), (90, 45, 20), (90, 45, 20)))
        controller = mcdt_controller(driver, mode=mode)
        await controller.install()
        del driver.calls[:]
        driver.counters = mcdt_counters((110, 70, 25), (98, 63, 25), (94, 45, 17))
        assert await controller.mcdt_update(2) is True
        return driver, controller

    driver, controller = run_async(body())
    want = MCDT_INSTALLED.with_params(tcp_th_pkts=59, tagged_th_pkts=59, untagged_th_pkts=41,
                                      mcdt_mode=code)
    assert driver.calls == [MCDT_READ, ("write_port_policy", 2, want)]
    assert controller.pushed[2] == want
