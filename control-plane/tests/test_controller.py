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
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from fake_p4rt import run_async
from mmaqm.algorithms import fred, mcdt
from mmaqm.config import Config, ConfigError, parse_config
from mmaqm.controller import SwitchController, jsonl_sink
from mmaqm.driver import CounterValue, FlowReport
from mmaqm.encoding import PolicyAction

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
                                    "tagged_share_q16": 65536, "untagged_th_scaled": 6 << 16})
# Port 3: 10 + 0.2 * 20 = 14 pkts; slope round(0.2 / 20 * 2^24) = 167772.
DCBT_3_IDLE = PolicyAction("dcbt", {**COMMON, "queue_limit_pkts": 100, "ewma_shift": 9,
                                    "min_th_scaled": 10 << 16, "max_th_scaled": 30 << 16,
                                    "red_slope_q24": 167772, **RED_OPTIONS_OFF, "policy_epoch": EPOCH[3],
                                    "tagged_share_q16": 65536, "untagged_th_scaled": 14 << 16})
INSTALLED = {
    1: PolicyAction("drop_tail", {**COMMON, "queue_limit_pkts": 64}),
    2: DCBT_2_IDLE,
    3: DCBT_3_IDLE,
    4: PolicyAction("red", {**RED_PARAMS, "policy_epoch": EPOCH[4]}),
    # round(2.9 * 65536) = 190054, round(0.6 * 65536) = 39322
    5: PolicyAction("cbt_red_all", {**RED_PARAMS, "policy_epoch": EPOCH[5],
                                    "tagged_th_scaled": 190054, "untagged_th_scaled": 39322}),
}


class FakeDriver:
    """Records every call; serves flow reports and counter values from lists."""

    def __init__(self, reports: Iterable[list[FlowReport]] = (),
                 counters: Mapping[str, Mapping[int, CounterValue]] | None = None,
                 reports_end: bool = True) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.reports = list(reports)
        self.reports_end = reports_end
        self.counters = counters or {}

    async def clear(self) -> None:
        self.calls.append(("clear",))

    async def install_classifier(self, tagged_dscp: Iterable[int]) -> None:
        self.calls.append(("install_classifier", tuple(tagged_dscp)))

    async def install_route(self, prefix: str, port: int, src_mac: str, next_hop_mac: str) -> None:
        self.calls.append(("install_route", prefix, port, src_mac, next_hop_mac))

    async def next_policy_epoch(self, port: int) -> int:
        self.calls.append(("next_policy_epoch", port))
        return EPOCH[port]

    async def write_port_policy(self, port: int, action: PolicyAction) -> None:
        self.calls.append(("write_port_policy", port, action))

    async def enable_flow_reports(self) -> None:
        self.calls.append(("enable_flow_reports",))

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
def test_install_clears_then_writes_classifier_routes_policies_and_enables_reports() -> None:
    driver = FakeDriver()
    controller = make(driver)
    run_async(controller.install())
    assert driver.calls == [
        ("clear",),
        ("install_classifier", (46, 34)),
        ("install_route", "10.0.1.0/24", 1, "02:00:00:00:00:01", "02:00:00:01:00:01"),
        ("install_route", "10.0.2.0/24", 2, "02:00:00:00:00:02", "02:00:00:02:00:01"),
        *[call for port in (1, 2, 3, 4, 5)
          for call in (("next_policy_epoch", port), ("write_port_policy", port, INSTALLED[port]))],
        ("enable_flow_reports",),
    ]
    assert controller.pushed == INSTALLED
    assert controller.epochs == {p: EPOCH[p] for p in (1, 2, 3, 4, 5)}


def test_install_stops_at_the_first_failed_write() -> None:
    class FailingDriver(FakeDriver):
        async def write_port_policy(self, port: int, action: PolicyAction) -> None:
            await super().write_port_policy(port, action)
            if port == 2:
                raise RuntimeError("switch refused")

    driver = FailingDriver()
    controller = make(driver)
    with pytest.raises(RuntimeError, match="switch refused"):
        run_async(controller.install())
    assert [w[0] for w in driver.writes()] == [1, 2]
    assert ("enable_flow_reports",) not in driver.calls
    assert controller.pushed == {1: INSTALLED[1]}       # only what the switch accepted


# ------------------------------------------------------------ share updates
async def _observe(controller: SwitchController, driver: FakeDriver,
                   reports: list[list[FlowReport]]) -> None:
    driver.reports = reports
    await controller.receive_flow_reports()


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
    # port 2, TCP: class index 2 * 4 + 0 = 8; RED_EARLY (1) drop index 8 * 9 + 1 = 73
    "queue_arrivals": {8: CounterValue(10, 15000)},
    "queue_admits": {8: CounterValue(9, 13500)},
    "queue_departures": {8: CounterValue(7, 10500)},
    "queue_drops": {73: CounterValue(1, 1500)},
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
    # ports 1..5 x classes 0..2: class index port * 4 + class; drops class index * 9 + reason
    # (9 drop reasons in defines.p4)
    per_class = [p * 4 + c for p in (1, 2, 3, 4, 5) for c in (0, 1, 2)]
    drops = [i * 9 + r for i in per_class for r in range(9)]
    discards = [p * 8 + r for p in (1, 2, 3, 4, 5) for r in range(7)]   # 7 reasons in defines.p4
    # ECN marks exist for RED's two reasons only (RED_EARLY 1, RED_FORCED 2);
    # chips_events: port * 5 + event, 5 events (defines.p4)
    ecn_marks = [i * 9 + r for i in per_class for r in (1, 2)]
    chips_events = [p * 5 + e for p in (1, 2, 3, 4, 5) for e in range(5)]
    assert driver.calls == [("read_counter_indexes", {
        "queue_arrivals": per_class, "queue_admits": per_class,
        "queue_departures": per_class, "queue_drops": drops, "queue_ecn_marks": ecn_marks,
        "ingress_discards": discards, "chips_events": chips_events})]
    assert sample["ingress_discards"] == {"1": 0, "2": 0, "3": 3, "4": 0, "5": 0}

    assert before_ns <= sample["t_ns"] <= after_ns
    assert sample["switch"] == "s1"
    rows = sample["readings"]
    assert [(r["port"], r["class"]) for r in rows] == [
        (p, c) for p in (1, 2, 3, 4, 5) for c in ("TCP", "TAGGED", "UNTAGGED")]
    reasons = ("QUEUE_LIMIT", "RED_EARLY", "RED_FORCED", "CLASS_THRESHOLD", "FRED_MAXQ",
               "FRED_TWICE_AVGCQ", "FRED_STRIKE", "UPTA_USELESS", "UPTA_FAIR_SHARE")
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
        "2": {"algorithm": "DCBT", "tagged_share_q16": 0, "untagged_th_scaled": 3 << 16},
        "3": {"algorithm": "DCBT", "tagged_share_q16": 65536, "untagged_th_scaled": 14 << 16},
        "4": {"algorithm": "RED"},
        "5": {"algorithm": "CBT_RED_ALL", "tagged_th_scaled": 190054,
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
                                       "tagged_th_pkts": 100, "untagged_th_pkts": 100})
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


def mcdt_controller(driver: FakeDriver, **kwargs: Any) -> SwitchController:
    cfg = parse_config(MCDT_CONFIG)
    return SwitchController(cfg, cfg.switches["s1"], driver,  # type: ignore[arg-type]
                            clock_ms=Clock(), **kwargs)


def test_mcdt_install_writes_thresholds_at_b_and_reads_the_period_start() -> None:
    driver = FakeDriver(counters=mcdt_counters((7, 3, 1), (6, 3, 1), (6, 3, 1)))
    controller = mcdt_controller(driver)
    run_async(controller.install())
    assert driver.calls == [
        ("clear",), ("install_classifier", (46, 34)),
        ("next_policy_epoch", 1),
        ("write_port_policy", 1, PolicyAction("drop_tail", {**COMMON, "queue_limit_pkts": 64})),
        ("next_policy_epoch", 2), ("write_port_policy", 2, MCDT_INSTALLED), MCDT_READ,
        ("enable_flow_reports",),
    ]
    assert controller.mcdt_arrivals[2] == {TCP: 7, TAGGED: 3, UNTAGGED: 1}
    assert controller.mcdt_th_scaled[2] == {c: 100 << 16 for c in (TCP, TAGGED, UNTAGGED)}


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
    p1 = mcdt.reference_period_update({TCP: 10, TAGGED: 20, UNTAGGED: 5}, 30)
    p3 = mcdt.reference_period_update({TAGGED: 10}, 0, p1)
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
    assert policy.mcdt_period_ms == 100.0 and policy.ewma_weight is None


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


def test_run_ends_when_the_switch_goes_away(p4info_path: Path, device_config: Path) -> None:
    """Issue 9: with nothing to write (DROP_TAIL, no stats) `run` waited for digests
    forever after the switch stopped; it now ends with the lost connection."""
    from fake_p4rt import FakeP4RuntimeServer
    from mmaqm.controller import run_switches
    from mmaqm.driver import SwitchConnectionError

    async def body() -> float:
        server = FakeP4RuntimeServer()
        serving = server.run()
        await serving.__aenter__()
        cfg = parse_config({"switches": {"s1": {
            "p4runtime_addr": server.address, "ports": {1: {"mac": "02:00:00:00:00:01"}},
            "policies": {"default": {"algorithm": "DROP_TAIL"}}}}})
        task = asyncio.create_task(run_switches(cfg, p4info=p4info_path,
                                                bmv2_json=device_config))
        while not server.digest_configs:           # installed, now in the loop
            assert not task.done()
            await asyncio.sleep(0.01)
        await serving.__aexit__(None, None, None)
        started = time.monotonic()
        with pytest.raises(SwitchConnectionError,
                           match=f"s1: lost the P4Runtime connection to {server.address}"):
            await task
        return time.monotonic() - started

    assert run_async(body()) < 1
