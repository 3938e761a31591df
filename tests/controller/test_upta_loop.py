"""upta_loop: the controller's UPTA interval over a fake driver: counter deltas and
U states -> the written upta entry = upta_control.port_interval's parameters (eqs.
18-19), epochs kept, no rewrite when nothing changed, and the C-UPTA edge's probes.

Numbers as in test_upta_control: T = K = 0.131072 s; 512-byte packets; on l5 of Fig. 1
(C = 3.5 Mbit/s) TCP 40, video 56, background 300 packets per interval = 1.25, 1.75,
9.375 Mbit/s; the video U -> fs_U = 305 835, fs_I = 458 752 (bytes per K * 16).
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
from typing import Any

import pytest

from mmaqm.targets.v1model import TARGET as V1MODEL_TARGET

from fake_p4rt import run_async
from mmaqm.algorithms import bfd_codec as B
from mmaqm.algorithms import upta as U
from mmaqm.algorithms import upta_control as UC
from mmaqm.config import parse_config
from mmaqm.controller import SwitchController
from mmaqm.driver import CounterValue
from mmaqm.encoding import PolicyAction

T = 0.131072
PORT = 3
IP = lambda a: int(ipaddress.IPv4Address(a))   # noqa: E731
TCP_KEY = (IP("10.0.1.1"), IP("10.0.4.1"), 6, 45000, 5201)
VIDEO_KEY = (IP("10.0.2.1"), IP("10.0.5.1"), 17, 40000, 5001)
BG_KEY = (IP("10.0.3.1"), IP("10.0.6.1"), 17, 40001, 5002)
SLOTS = 1024


def config(mode: str = "B") -> Any:
    return parse_config({"switches": {"r5": {
        "p4runtime_addr": "127.0.0.1:9563",
        "ports": {p: {"mac": f"02:01:00:00:05:0{p}"} for p in (2, 3)},
        "routes": [{"prefix": "10.0.4.1/32", "port": 3, "next_hop_mac": "02:01:00:00:06:02"}],
        "policies": {"default": {"algorithm": "DROP_TAIL", "queue_limit_pkts": 1000},
                     PORT: {"algorithm": "UPTA", "capacity_mbps": 3.5, "upta_mode": mode,
                            "queue_limit_pkts": 100, "upta_flow_slots": SLOTS,
                            "upta_tagged_loss_threshold": 0.12}}}}})


class FakeDriver:
    primary_changes = 0           # the primary role never changes hands here
    target = V1MODEL_TARGET        # a v1model program

    def __init__(self) -> None:
        self.counters: dict[int, CounterValue] = {}
        self.states: dict[int, int] = {}
        self.writes: list[tuple[int, PolicyAction]] = []
        self.probes: list[tuple[int, bytes]] = []
        self.reads: list[list[int]] = []

    async def read_counter_indexes(self, wanted):
        [(name, idx)] = wanted.items()
        assert name == "upta_flow_bytes"
        self.reads.append(sorted(idx))
        return {name: {i: self.counters[i] for i in idx if i in self.counters}}

    async def read_register_indexes(self, name, idx):
        assert name == "upta_state"
        return {i: self.states.get(i, 1) for i in idx}

    async def write_port_policy(self, port, action, policy=None):
        self.writes.append((port, action))

    async def send_probe(self, port, datagram):
        self.probes.append((port, datagram))

    def add(self, key, packets: int, state: int = U.STATE_I) -> int:
        idx = UC.slot_index(PORT, UC.flow_slot(key, SLOTS))
        old = self.counters.get(idx, CounterValue())
        self.counters[idx] = CounterValue(old.packets + packets,
                                          old.bytes + packets * (512 + 14))
        self.states[idx] = state
        return idx


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def controller(mode: str = "B", **loop_kw):
    cfg = config(mode)
    drv = FakeDriver()
    ctl = SwitchController(cfg, cfg.switches["r5"], drv, clock_ms=lambda: 0.0)
    clock = Clock()
    assert "UPTA" in ctl.loops
    ctl.loops["UPTA"].clock_s = clock
    for k, v in loop_kw.items():
        setattr(ctl.loops["UPTA"], k, v)
    ctl.epochs[PORT] = 777
    for key in (TCP_KEY, VIDEO_KEY, BG_KEY):
        ctl.flows.observe(PORT, 2, key, 0.0)
    return ctl, drv, clock


def test_slots_are_distinct_for_these_flows():
    assert len({UC.flow_slot(k, SLOTS) for k in (TCP_KEY, VIDEO_KEY, BG_KEY)}) == 3


def test_no_upta_port_no_loop():
    cfg = parse_config({"switches": {"s1": {"p4runtime_addr": "127.0.0.1:9559",
                                            "ports": {1: {"mac": "02:00:00:00:00:01"}},
                                            "routes": [], "policies": {
                                                "default": {"algorithm": "DROP_TAIL"}}}}})
    ctl = SwitchController(cfg, cfg.switches["s1"], FakeDriver())
    assert "UPTA" not in ctl.loops and ctl.extra_tasks() == []


def test_initial_action_is_unconstrained():
    ctl, _, _ = controller()
    action = ctl.policy_action(PORT)
    assert action.name == "upta" and action.params["policy_epoch"] == 777
    assert action.params["fs_i_scaled"] == action.params["fs_u_scaled"] == U.FS_INFINITE
    assert action.params["queue_limit_pkts"] == 100 and action.params["slot_mask"] == SLOTS - 1


def test_interval_writes_eqs_18_19_and_keeps_the_epoch():
    ctl, drv, clock = controller("C")

    async def go():
        await ctl.loops["UPTA"].read_port(PORT)                 # first read: counts start
        drv.add(TCP_KEY, 40)
        drv.add(VIDEO_KEY, 56, U.STATE_U)
        drv.add(BG_KEY, 300)
        clock.t += T
        assert await ctl.loops["UPTA"].update_port(PORT) is True
        clock.t += T                                   # the same rates again: no rewrite
        drv.add(TCP_KEY, 40)
        drv.add(VIDEO_KEY, 56, U.STATE_U)
        drv.add(BG_KEY, 300)
        assert await ctl.loops["UPTA"].update_port(PORT) is False

    run_async(go())
    [(port, action)] = drv.writes
    assert port == PORT and action.name == "upta"
    assert action.params["policy_epoch"] == 777 and action.params["upta_mode"] == U.MODE_C
    assert (action.params["fs_u_scaled"], action.params["fs_i_scaled"]) == (305835, 458752)
    sh = ctl.loops["UPTA"].last[PORT].shares
    assert (sh.n, sh.s, sh.m) == (3, 0, 1)
    assert ctl.loops["UPTA"].useless[PORT] == {UC.flow_slot(VIDEO_KEY, SLOTS)}
    assert ctl.pushed[PORT] == action
    # one ReadRequest per port and interval, only the three slots
    assert all(len(r) == 3 for r in drv.reads)


def test_elapsed_time_not_t_turns_bytes_into_rates():
    """The loop divides by the measured time between its reads: a late interval (2 T)
    with twice the bytes gives the same shares."""
    ctl, drv, clock = controller()

    async def go():
        await ctl.loops["UPTA"].read_port(PORT)
        drv.add(TCP_KEY, 80)
        drv.add(BG_KEY, 600)
        clock.t += 2 * T
        await ctl.loops["UPTA"].update_port(PORT)

    run_async(go())
    assert ctl.loops["UPTA"].last[PORT].rates_bps == pytest.approx(
        {UC.flow_slot(TCP_KEY, SLOTS): 1_250_000, UC.flow_slot(BG_KEY, SLOTS): 9_375_000})
    # N = 2, C/N = 1.75 Mbit/s: TCP's 1.25 is unconstrained (S = 1), the background gets
    # alpha = (3.5 - 1.25)/1 = 2.25 Mbit/s = 589 824
    assert drv.writes[-1][1].params["fs_i_scaled"] == 589824


def test_core_counts_probe_specs_of_flows_that_no_longer_arrive():
    ctl, drv, clock = controller("C")

    async def go():
        await ctl.loops["UPTA"].read_port(PORT)
        assert ctl.loops["UPTA"].observe_probe_specs(PORT, [B.FlowSpec(
            VIDEO_KEY[0], VIDEO_KEY[1], VIDEO_KEY[3], VIDEO_KEY[4], 17, False)])
        drv.add(TCP_KEY, 40)
        drv.add(BG_KEY, 300)
        clock.t += T
        await ctl.loops["UPTA"].update_port(PORT)

    run_async(go())
    sh = ctl.loops["UPTA"].last[PORT].shares
    assert (sh.n, sh.s, sh.m) == (3, 0, 1)
    assert (drv.writes[-1][1].params["fs_u_scaled"],
            drv.writes[-1][1].params["fs_i_scaled"]) == (305835, 458752)


def video_digest(port: int = PORT, **override) -> dict[str, int]:
    """A bfd_spec_digest_t naming the video as U (its members as the driver yields them)."""
    d = {"egress_port": port, "identifier": 1, "sequence": 8, "spec_count": 1,
         "src_addr0": VIDEO_KEY[0], "dst_addr0": VIDEO_KEY[1], "src_port0": VIDEO_KEY[3],
         "dst_port0": VIDEO_KEY[4], "protocol0": 17, "flags0": 0}
    d.update(override)
    return d


class SpecDriver(FakeDriver):
    """A driver whose program digests probe specs: yields the given lists once."""

    bfd_spec_digest = "bfd_spec_digest_t"
    flow_digest = "flow_digest_t"

    def route_entries(self, entry):
        return [entry]

    def range_entries(self, port, action):
        return []

    def clone_sessions(self, ports):
        return []

    def __init__(self, lists) -> None:
        super().__init__()
        self.lists = lists

    async def digest_items(self, alias):
        assert alias == self.bfd_spec_digest
        for one in self.lists:
            yield one
        await asyncio.sleep(3600)


def test_core_reads_the_data_planes_spec_digests_per_port():
    """receive_probe_specs: a digest of a probe that left through the mode-C port 3
    puts the video in port 3's N and M (fs_U 305 835, fs_I 458 752 as above); one for
    port 2 (no upta port here) and a malformed one (spec_count 0) change nothing."""
    cfg = config("C")
    drv = SpecDriver([[video_digest(port=2), video_digest(spec_count=0)], [video_digest()]])
    ctl = SwitchController(cfg, cfg.switches["r5"], drv, clock_ms=lambda: 0.0)
    loop = ctl.loops["UPTA"]
    clock = Clock()
    loop.clock_s = clock
    ctl.epochs.update({2: 776, PORT: 777})
    for key in (TCP_KEY, VIDEO_KEY, BG_KEY):
        ctl.flows.observe(PORT, 2, key, 0.0)
    assert loop.digests() == ["bfd_spec_digest_t"]
    assert "bfd_spec_digest_t" in {d.digest for d in ctl.desired_state().digests}

    async def go():
        await loop.read_port(PORT)
        task = asyncio.create_task(loop.receive_probe_specs())
        await asyncio.sleep(0.01)
        task.cancel()
        drv.add(TCP_KEY, 40)
        drv.add(BG_KEY, 300)
        clock.t += T
        await loop.update_port(PORT)

    run_async(go())
    assert loop.spec_digests == 2          # the malformed one is not counted
    sh = loop.last[PORT].shares
    assert (sh.n, sh.s, sh.m) == (3, 0, 1)
    assert (drv.writes[-1][1].params["fs_u_scaled"],
            drv.writes[-1][1].params["fs_i_scaled"]) == (305835, 458752)


def test_remote_u_flow_lasts_two_probe_intervals_at_the_core():
    """A probe's U flow counts for REMOTE_USELESS_INTERVALS = 2 * 4 T after the probe
    (probes every 4 T): still in M at 8 T, gone after."""
    ctl, drv, clock = controller("C")
    loop = ctl.loops["UPTA"]
    assert UC.REMOTE_USELESS_INTERVALS == 2 * UC.PROBE_EVERY_INTERVALS == 8
    assert loop.remote[PORT].window_s == pytest.approx(8 * T)
    assert not loop.observe_probe_specs(2, [])          # not a mode-C port
    assert loop.digests() == []                         # FakeDriver: no spec digest

    async def go():
        await loop.read_port(PORT)
        loop.observe_probe_specs(PORT, [UC.useless_specs([VIDEO_KEY])[0]])
        ms = []
        for k in range(1, 10):
            drv.add(TCP_KEY, 40)
            drv.add(BG_KEY, 300)
            clock.t = 100.0 + k * T - 0.001
            await loop.update_port(PORT)
            ms.append(loop.last[PORT].shares.m)
        return ms

    assert run_async(go()) == [1] * 8 + [0]


def test_c_upta_infers_u_only_for_flows_entering_at_an_edge_port():
    """Without register reads the controller applies Fig. 7 itself (infer_useless); in
    mode C only to flows at their ingress edge (§5.2; upta.p4 tests only packets from
    edge ports): the video at 3.5 Mbit/s against fs_I 1.75 (p = 0.5 > q 0.12) is U
    when its source 10.0.2.1 is behind edge port 2, never when it is not (a core)."""
    for edge_ports, want in (([2], True), ([], False)):
        cfg = parse_config({"switches": {"r5": {
            "p4runtime_addr": "127.0.0.1:9563",
            "ports": {p: {"mac": f"02:01:00:00:05:0{p}"} for p in (2, 3)},
            "routes": [{"prefix": "10.0.4.1/32", "port": 3, "next_hop_mac": "02:01:00:00:06:02"},
                       {"prefix": "10.0.2.0/24", "port": 2, "next_hop_mac": "02:01:00:00:04:03"}],
            "bfd": {"router_addr": "10.255.0.5", "edge_ports": edge_ports},
            "policies": {"default": {"algorithm": "DROP_TAIL", "queue_limit_pkts": 1000},
                         PORT: {"algorithm": "UPTA", "capacity_mbps": 3.5, "upta_mode": "C",
                                "queue_limit_pkts": 100, "upta_flow_slots": SLOTS,
                                "upta_tagged_loss_threshold": 0.12}}}}})
        ctl = SwitchController(cfg, cfg.switches["r5"], FakeDriver(), clock_ms=lambda: 0.0)
        loop = ctl.loops["UPTA"]
        ctl.flows.observe(PORT, 1, VIDEO_KEY, 0.0)          # class 1: TAGGED
        loop.shares_bps[PORT] = (1.75e6, 1.75e6)
        slot = UC.flow_slot(VIDEO_KEY, SLOTS)
        assert loop.enters_at_edge(VIDEO_KEY) is want
        got = loop.infer_useless(PORT, {slot: round(3.5e6 * T / 8)}, T)
        assert got == ({slot} if want else set()), edge_ports
    assert UC.route_port(cfg.switches["r5"].routes, IP("10.0.2.7")) == 2
    assert UC.route_port(cfg.switches["r5"].routes, IP("10.0.9.1")) is None


def test_c_upta_edge_infers_u_with_its_paths_reported_minima():
    """At a C-UPTA ingress edge the data plane judges an edge flow against the smaller of
    the port's shares and its path's reported minima (upta.p4, eqs. 23-24), so the
    controller's inference must too: the video at 3.5 Mbit/s, no local share (the port
    is not congested), is I until a report of its path (10.0.5.0/24 -> path 1) brings
    fs 1.75 Mbit/s (p = 0.5 > q 0.12), then U; a report of the other path changes
    nothing; minima of 0 mean none."""
    cfg = parse_config({"switches": {"r1": {
        "p4runtime_addr": "127.0.0.1:9563",
        "ports": {p: {"mac": f"02:01:00:00:05:0{p}"} for p in (2, 3)},
        "routes": [{"prefix": "10.0.5.0/24", "port": 3, "next_hop_mac": "02:01:00:00:06:02"},
                   {"prefix": "10.0.6.0/24", "port": 3, "next_hop_mac": "02:01:00:00:06:02"},
                   {"prefix": "10.0.2.0/24", "port": 2, "next_hop_mac": "02:01:00:00:04:03"}],
        "bfd": {"router_addr": "10.255.0.1", "edge_ports": [2],
                "paths": [{"id": 0, "port": PORT, "egress_addr": "10.255.0.6",
                           "prefixes": ["10.0.6.0/24"]},
                          {"id": 1, "port": PORT, "egress_addr": "10.255.0.7",
                           "prefixes": ["10.0.5.0/24"]}]},
        "policies": {"default": {"algorithm": "DROP_TAIL", "queue_limit_pkts": 1000},
                     PORT: {"algorithm": "UPTA", "capacity_mbps": 10, "upta_mode": "C",
                            "queue_limit_pkts": 100, "upta_flow_slots": SLOTS,
                            "upta_tagged_loss_threshold": 0.12}}}}})
    ctl = SwitchController(cfg, cfg.switches["r1"], FakeDriver(), clock_ms=lambda: 0.0)
    loop = ctl.loops["UPTA"]
    ctl.flows.observe(PORT, 1, VIDEO_KEY, 0.0)          # class 1: TAGGED, to 10.0.5.1
    loop.shares_bps[PORT] = (math.inf, math.inf)
    slot = UC.flow_slot(VIDEO_KEY, SLOTS)
    arrivals = {slot: round(3.5e6 * T / 8)}
    assert loop.path_of(VIDEO_KEY) == 1 and loop.path_of(TCP_KEY) is None
    assert loop.infer_useless(PORT, arrivals, T) == set()
    fs = U.fs_to_scaled(1.75e6)
    loop.observe_report(0, fs, fs)                      # the other path
    assert loop.infer_useless(PORT, arrivals, T) == set()
    loop.observe_report(1, fs, fs)
    assert loop.path_minima_bps[1] == pytest.approx((1.75e6, 1.75e6), rel=1e-3)
    assert loop.infer_useless(PORT, arrivals, T) == {slot}
    loop.observe_report(1, 0, 0)                        # none
    assert loop.infer_useless(PORT, arrivals, T) == set()


def test_ingress_edge_sends_one_probe_per_path_with_its_u_flows():
    path = UC.BfdPath(0, PORT, "10.255.0.7")
    ctl, drv, clock = controller("C", router_addr="10.255.0.1", bfd_paths=[path])
    ctl.loops["UPTA"].probe_every = 1         # a probe every interval (default PROBE_EVERY_INTERVALS)

    async def go():
        await ctl.loops["UPTA"].read_port(PORT)
        drv.add(TCP_KEY, 40)
        drv.add(VIDEO_KEY, 56, U.STATE_U)
        drv.add(BG_KEY, 300)
        clock.t += T
        await ctl.loops["UPTA"].step()
        await ctl.loops["UPTA"].step()

    run_async(go())
    assert [p for p, _ in drv.probes] == [PORT, PORT]
    msgs = [B.BfdMessage.unpack(d[20:]) for _, d in drv.probes]
    assert [m.sequence for m in msgs] == [0, 1]
    assert msgs[0].specs == (B.FlowSpec(VIDEO_KEY[0], VIDEO_KEY[1], VIDEO_KEY[3], VIDEO_KEY[4],
                                        17, False),)
    assert msgs[1].specs == ()       # second interval: no arrival, nothing U any more
    assert all(d[16:20] == bytes([10, 255, 0, 7]) for _, d in drv.probes)


def test_run_cancels_cleanly():
    ctl, drv, clock = controller()
    ctl.loops["UPTA"].period_s = 0.001
    assert ctl.loops["UPTA"].interval_s == T

    async def go():
        task = asyncio.create_task(ctl.loops["UPTA"].run())
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run_async(go())
    assert len(drv.reads) >= 2


def test_unreadable_registers_fall_back_to_fig7_on_the_rates():
    """BMv2 answers register reads UNIMPLEMENTED: the loop infers the video's U state
    from its rate (tagged flow, q = 0.12) and the shares in force, once and for all."""
    ctl, drv, clock = controller()

    async def refuse(name, idx):
        raise RuntimeError("UNIMPLEMENTED: Register reads are not supported yet")
    drv.read_register_indexes = refuse
    ctl.flows.observe(PORT, 1, VIDEO_KEY, 0.0)      # class 1 = TAGGED

    async def go():
        await ctl.loops["UPTA"].read_port(PORT)
        for _ in range(2):                          # 1st: shares 3.5/3 each; 2nd: video U
            drv.add(TCP_KEY, 40)
            drv.add(VIDEO_KEY, 56)
            drv.add(BG_KEY, 300)
            clock.t += T
            await ctl.loops["UPTA"].update_port(PORT)

    run_async(go())
    assert ctl.loops["UPTA"].read_states is False
    assert ctl.loops["UPTA"].useless[PORT] == {UC.flow_slot(VIDEO_KEY, SLOTS)}
    assert (drv.writes[-1][1].params["fs_u_scaled"],
            drv.writes[-1][1].params["fs_i_scaled"]) == (305835, 458752)


def test_probes_go_out_every_probe_every_intervals():
    """PROBE_EVERY_INTERVALS (4): intervals 0, 4, 8 probe; the others only update the
    shares (a report is accepted only for the path's last probe, upta.p4)."""
    path = UC.BfdPath(0, PORT, "10.255.0.7")
    ctl, drv, clock = controller("C", router_addr="10.255.0.1", bfd_paths=[path])
    assert ctl.loops["UPTA"].probe_every == 4

    async def go():
        await ctl.loops["UPTA"].read_port(PORT)
        for _ in range(9):
            clock.t += T
            await ctl.loops["UPTA"].step()

    run_async(go())
    msgs = [B.BfdMessage.unpack(d[20:]) for _, d in drv.probes]
    assert [m.sequence for m in msgs] == [0, 1, 2]
