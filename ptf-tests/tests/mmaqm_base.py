"""Shared fixtures of the mmaqm PTF suite (not a test module: no runTest here).

Every test starts from the baseline of ptf-tests/ptf-config.yaml, written with
the project's controller library: tables cleared, classifier and routes
installed, every port DROP_TAIL with a fresh policy epoch (which resets the
port's averages on its next packet), queue rates unlimited, TM depth large.

Queue states are built with real packets only (BMv2 has no P4Runtime register
writes). `burst()` freezes a port: BMv2 fixes each packet's departure time when
it is enqueued (QueueingLogicRL), so after one "sacrificial" packet leaves a
port limited to FREEZE_RATE_PPS, nothing else leaves for 1/FREEZE_RATE_PPS s;
a burst sent inside that window sees exactly the occupancy the reference
model (mmaqm_oracle.fixedpoint_model.PortModel) predicts. The precondition is checked, not
assumed: one ReadRequest, made right after the burst, must show every arrival
and only the sacrificial departure.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import ptf
import ptf.testutils as tu
from ptf.base_tests import BaseTest
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6
from scapy.layers.l2 import Ether

from mmaqm import bmv2_tm
from mmaqm.algorithms import fred
from mmaqm import p4constants as C
from mmaqm.blocking import BlockingSwitch
from mmaqm.config import Config, PortPolicy, load_config, parse_policy
from mmaqm.driver import SwitchDriver
from mmaqm.encoding import PolicyAction, policy_action
from mmaqm.targets import tna
from mmaqm_oracle.fixedpoint_model import Occupancy, PortModel
from mmaqm_profiles import in_program
import mmaqm_tofino as tofino
from mmaqm_oracle import fixedpoint_model as fpm


REPO = Path(__file__).resolve().parents[2]
# A per-algorithm BMv2 profile under test (run_ptf.py --profile sets it), else None:
# its pipeline (its algorithm and DROP_TAIL, the suite's baseline policy).
PROFILE = os.environ.get("MMAQM_PTF_PROFILE") or None
CONFIG: Config = load_config(REPO / "ptf-tests" / "ptf-config.yaml")
SWITCH = CONFIG.switches["ptf"]
PORTS = sorted(SWITCH.ports)
FREEZE_RATE_PPS = 4       # a frozen port lets one packet out per 250 ms: room for the
                          # burst (< 125 ms, asserted) and one counter read (< 50 ms)
MIN_FREEZE_RATE_PPS = 1   # a machine too slow to send a burst in half a slot gets longer
                          # slots (halved rate per miss), down to this
TM_DEPTH_PKTS = 1024      # above every queue_limit_pkts used in the suite
SRC_HOST_PORT = 1         # tests send from the host behind port 1 ...
OUT_PORT = 2              # ... towards the host behind port 2, unless stated


class Bmv2Target:
    """What the suite needs from the switch beyond P4Runtime, on BMv2 (v1model):
    the traffic manager's per-port rate and depth over Thrift (bmv2_tm), and the
    pipeline files of make build. The tests reach the target only through this
    object (self.target), except the v1model-only register reads (over BMv2's
    Thrift) of test_fred and test_upta: their TNA registers differ (fred_tna.p4,
    upta_tna.p4) and are not P4Runtime-readable in the same layout."""

    name = "bmv2"
    # ChIPS events: one counter on v1model (chips.p4)
    CHIPS_COUNTERS = ("chips_events",)

    def __init__(self, params: dict) -> None:
        self.thrift_port = int(params["thrift_port"])
        self.profile = PROFILE

    def pipeline(self) -> dict[str, Path]:
        if self.profile:
            d = REPO / "build" / self.profile.lower()
            return {"p4info": d / "main.p4info.txtpb", "bmv2_json": d / "main.json"}
        return {"p4info": REPO / "build" / "main.p4info.txtpb",
                "bmv2_json": REPO / "build" / "main.json"}

    def set_queue_rate(self, port: int, pps: int) -> None:
        bmv2_tm.set_queue_rate(self.thrift_port, port, pps)

    def set_queue_depth(self, port: int, pkts: int) -> None:
        bmv2_tm.set_queue_depth(self.thrift_port, port, pkts)

    def set_queues(self, rates_pps: dict[int, int],
                   depths_pkts: dict[int, int] | None = None) -> None:
        """Several ports at once (one Thrift CLI process)."""
        bmv2_tm.set_queues(self.thrift_port, rates_pps=rates_pps, depths_pkts=depths_pkts)


class TnaTarget(Bmv2Target):
    """Tofino (p4src/tna, docs/tofino.md) on open-p4studio's model or a switch:
    test params target=tna, tna_variant=<variant of make build-tna>, device_id
    (0 on the model), p4rt_server (bf_switchd: its own P4Runtime server, which takes
    PI's device data; stratum: Stratum's BfPipelineConfig) and bfrt_addr (bf_switchd's
    BF Runtime gRPC server). What P4Runtime does not carry goes over BF Runtime
    (mmaqm_tofino.BfRtSession, the controller's BfRt client): the port shapers and
    the register reads. A queue's
    depth is not set: the TM's default buffer is left as it is (test_tna's queue
    limits are 12 packets at most). ChIPS's events are four per-event counters on
    TNA, which the driver reads and reports as v1model's chips_events (as UPTA's
    upta_events and upta_flow_bytes): the tests ask for the same name. Not run
    here (docs/tofino-model.md)."""

    name = "tna"
    CHIPS_COUNTERS = ("chips_events",)

    def __init__(self, params: dict) -> None:
        self.variant = str(params.get("tna_variant", "drop_tail")).lower()
        self.p4rt_server = str(params.get("p4rt_server", tofino.P4RT_SERVERS[0]))
        if self.p4rt_server not in tofino.P4RT_SERVERS:
            raise ValueError(f"p4rt_server {self.p4rt_server!r}: one of {tofino.P4RT_SERVERS}")
        self.device_id = int(params.get("device_id", tofino.DEVICE_ID))
        self.bfrt_addr = str(params.get("bfrt_addr", f"127.0.0.1:{tofino.BFRT_GRPC_PORT}"))
        self.build = tofino.build_dir(REPO, self.variant)
        self._bfrt: tofino.BfRtSession | None = None

    def pipeline(self) -> dict[str, Path]:
        """The build's P4Info and what is pushed with it: for bf_switchd, PI's device
        data (targets.tna.pi_device_config) written beside the build; for Stratum,
        the build directory, which the driver packs as a BfPipelineConfig."""
        if not (self.build / tna.TNA_PIPE_NAME / "tofino.bin").is_file():
            raise FileNotFoundError(f"{self.build}: no Tofino build of {self.variant}; run "
                                    f"'make build-tna TNA_VARIANTS={self.variant.upper()}'")
        p4info = self.build / "p4info.txtpb"
        if self.p4rt_server == "stratum":
            return {"p4info": p4info, "bmv2_json": self.build}
        path = self.build / tofino.DEVICE_CONFIG_FILE
        path.write_bytes(tna.pi_device_config(self.build, tofino.program_name(self.variant)))
        return {"p4info": p4info, "bmv2_json": path}

    def bfrt(self) -> tofino.BfRtSession:
        if self._bfrt is None:
            self._bfrt = tofino.BfRtSession(self.bfrt_addr, self.build,
                                            tofino.program_name(self.variant), self.device_id)
        return self._bfrt

    def set_queue_rate(self, port: int, pps: int) -> None:
        self.bfrt().apply(tofino.port_rate_writes(port, pps))

    def set_queue_depth(self, port: int, pkts: int) -> None:
        raise NotImplementedError(f"TNA: a queue's depth is BF Runtime {tofino.TM_QUEUE_BUFFER}, "
                                  f"in 80-byte cells, not packets; not set by the suite")

    def set_queues(self, rates_pps: dict[int, int],
                   depths_pkts: dict[int, int] | None = None) -> None:
        if depths_pkts:
            self.set_queue_depth(*next(iter(depths_pkts.items())))
        self.bfrt().apply([w for port, pps in rates_pps.items()
                           for w in tofino.port_rate_writes(port, pps)])

    def read_register(self, register: str, index: int) -> dict[str, int]:
        """{field: value} of a register's index in pipe 0, over BF Runtime."""
        return self.bfrt().read_register(register, index)

    def close(self) -> None:
        if self._bfrt is not None:
            self._bfrt.close()
            self._bfrt = None


TARGETS = {"bmv2": Bmv2Target, "tna": TnaTarget}


def router_mac(port: int) -> str:
    return SWITCH.ports[port].mac


def host_mac(port: int) -> str:
    return f"02:00:00:00:{port:02x}:01"


def host_ip(port: int, host: int = 2) -> str:
    return f"10.0.{port}.{host}"


def packet(kind: str, *, out_port: int = OUT_PORT, in_port: int = SRC_HOST_PORT,
           dscp: int = 0, sport: int = 1000, dport: int = 2000, seq: int = 0,
           ttl: int = 64, payload_len: int = 64, dst_host: int = 2) -> Ether:
    """A packet from the host behind in_port to a host behind out_port.

    kind: "tcp", "udp", "icmp" or "gre" (other IP). `seq` goes into the IPv4
    identification field, so every packet of a burst is distinguishable.
    """
    ip = IP(src=host_ip(in_port), dst=host_ip(out_port, dst_host), ttl=ttl,
            tos=dscp << 2, id=seq & 0xFFFF)
    payload = bytes(payload_len)
    if kind == "tcp":
        l4 = TCP(sport=sport, dport=dport, flags="A") / payload
    elif kind == "udp":
        l4 = UDP(sport=sport, dport=dport) / payload
    elif kind == "icmp":
        l4 = ICMP() / payload
    elif kind == "gre":
        ip.proto = 47
        l4 = payload
    else:
        raise ValueError(kind)
    return Ether(src=host_mac(in_port), dst=router_mac(in_port)) / ip / l4


def forwarded(pkt: Ether, out_port: int = OUT_PORT) -> Ether:
    """What the router must emit for `pkt`: MACs rewritten, TTL - 1, new checksum."""
    out = pkt.copy()
    out[Ether].src = router_mac(out_port)
    out[Ether].dst = host_mac(out_port)
    out[IP].ttl -= 1
    del out[IP].chksum
    return Ether(bytes(out))


def ip6(port: int, host: int = 2) -> str:
    return f"2001:db8:{port:x}::{host:x}"


def packet6(kind: str, *, out_port: int = OUT_PORT, in_port: int = SRC_HOST_PORT,
            dscp: int = 0, ecn: int = 0, hlim: int = 64, ext=(), seq: int = 0,
            sport: int = 1000) -> Ether:
    """An IPv6 packet from the host behind in_port (ip6) to one behind out_port; seq
    in the flow label and the payload (to tell packets apart). test_ipv6 and
    test_tna (its IPv6 cases) send these."""
    pkt = IPv6(src=ip6(in_port), dst=ip6(out_port), tc=(dscp << 2) | ecn, hlim=hlim, fl=seq)
    for header in ext:
        pkt = pkt / header
    payload = seq.to_bytes(4, "big") + bytes(60)
    if kind == "tcp":
        pkt = pkt / TCP(sport=sport, dport=2000, flags="A") / payload
    elif kind == "udp":
        pkt = pkt / UDP(sport=sport, dport=2000) / payload
    elif kind == "icmp":
        pkt = pkt / ICMPv6EchoRequest() / payload
    else:
        raise ValueError(kind)
    return Ether(src=host_mac(in_port), dst=router_mac(in_port)) / pkt


def forwarded6(pkt: Ether, out_port: int = OUT_PORT, *, ecn: int | None = None) -> Ether:
    """What the router emits: MACs rewritten, hop limit - 1 (RFC 8200 §3), nothing else
    (no IPv6 header checksum; the L4 checksums do not cover the hop limit or ECN)."""
    out = Ether(bytes(pkt))
    out[Ether].src = router_mac(out_port)
    out[Ether].dst = host_mac(out_port)
    out[IPv6].hlim -= 1
    if ecn is not None:
        out[IPv6].tc = (out[IPv6].tc & ~0b11) | ecn
    return out


@dataclass
class Counters:
    """All counters of the program, by index."""

    arrivals: dict[int, int] = field(default_factory=dict)
    admits: dict[int, int] = field(default_factory=dict)
    departures: dict[int, int] = field(default_factory=dict)
    drops: dict[int, int] = field(default_factory=dict)
    discards: dict[int, int] = field(default_factory=dict)
    ecn_marks: dict[int, int] = field(default_factory=dict)
    chips: dict[int, int] = field(default_factory=dict)

    def minus(self, before: "Counters") -> "Counters":
        def sub(a: dict[int, int], b: dict[int, int]) -> dict[int, int]:
            keys = set(a) | set(b)
            return {k: a.get(k, 0) - b.get(k, 0) for k in keys if a.get(k, 0) != b.get(k, 0)}
        return Counters(sub(self.arrivals, before.arrivals), sub(self.admits, before.admits),
                        sub(self.departures, before.departures), sub(self.drops, before.drops),
                        sub(self.discards, before.discards), sub(self.ecn_marks, before.ecn_marks),
                        sub(self.chips, before.chips))

    # Friendly views of a delta -------------------------------------------
    def per_class(self, table: dict[int, int], port: int) -> dict[str, int]:
        return {name: table.get(C.class_index(port, cid), 0)
                for name, cid in C.CLASSES.items() if table.get(C.class_index(port, cid), 0)}

    def drop_reasons(self, port: int, class_id: int) -> dict[str, int]:
        return {name: self.drops.get(C.drop_index(port, class_id, r), 0)
                for name, r in C.DROP_REASONS.items() if self.drops.get(C.drop_index(port, class_id, r), 0)}

    def mark_reasons(self, port: int, class_id: int) -> dict[str, int]:
        return {name: self.ecn_marks.get(C.drop_index(port, class_id, r), 0)
                for name, r in C.DROP_REASONS.items()
                if self.ecn_marks.get(C.drop_index(port, class_id, r), 0)}

    def cut_ins(self, port: int) -> int:
        """ChIPS cut-ins at port (chips_events CHIPS_CUT_IN)."""
        return self.chips.get(C.chips_index(port, C.CHIPS_CUT_IN), 0)

    def chips_events(self, port: int) -> dict[str, int]:
        return {name: self.chips.get(C.chips_index(port, e), 0)
                for name, e in C.CHIPS_EVENTS.items() if self.chips.get(C.chips_index(port, e), 0)}

    def discard_reasons(self, port: int) -> dict[str, int]:
        return {name: self.discards.get(C.discard_index(port, r), 0)
                for name, r in C.DISCARD_REASONS.items() if self.discards.get(C.discard_index(port, r), 0)}


class MmaqmTest(BaseTest):
    """Base class: connects, restores the baseline, offers counters and bursts."""

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        self.freeze_rate_pps = FREEZE_RATE_PPS
        params = tu.test_params_get()
        self.target = TARGETS[params.get("target", "bmv2")](params)
        self.thrift_port = getattr(self.target, "thrift_port", None)  # v1model-only tests
        self.sw = BlockingSwitch(SwitchDriver(
            "ptf", params["grpc_addr"], device_id=int(params["device_id"]),
            **self.target.pipeline()))
        self.wait_queues_empty()
        self.sw.clear()
        self.sw.install_classifier(CONFIG.classifier.tagged_dscp)
        for port in PORTS:
            self.sw.install_cut_in_slot_session(port)
        for route in SWITCH.routes:
            self.sw.install_route(route.prefix, route.port, router_mac(route.port), route.next_hop_mac)
        self.target.set_queues(rates_pps={port: 0 for port in PORTS},
                               depths_pkts={port: TM_DEPTH_PKTS for port in PORTS})
        for port in PORTS:
            self.set_policy(port, SWITCH.policies[port])

    def tearDown(self) -> None:
        try:
            self.target.set_queues(rates_pps={port: 0 for port in PORTS})
        finally:
            self.sw.close()
            BaseTest.tearDown(self)

    # ---- policies ---------------------------------------------------------
    def algorithms_here(self, *algorithms: str) -> tuple[str, ...]:
        """Those of algorithms the program under test has (on a profile: its own and
        DROP_TAIL); the test is skipped when none is."""
        here = in_program(algorithms, PROFILE)
        if not here:
            self.skipTest(f"none of {', '.join(algorithms)} is in the profile {PROFILE}")
        return here

    def set_policy(self, port: int, policy: PortPolicy | dict, *, flow_epoch_shift: int = 0,
                   share_tagged: float = 1.0, share_untagged: float = 1.0,
                   mcdt_th_pkts: dict[int, int] | None = None,
                   active_flows: int = 0) -> PolicyAction:
        """Install a policy (a dict is validated like a config entry) with a new epoch.
        mcdt_th_pkts: MCDT's class thresholds (class id -> packets; None: B each);
        active_flows: the port's active flows (the tag guard's interval)."""
        if isinstance(policy, dict):
            policy = parse_policy(policy)
        if PROFILE and policy.algorithm not in (PROFILE, "DROP_TAIL"):
            self.skipTest(f"algorithm {policy.algorithm} is not in the profile {PROFILE}")
        action = policy_action(
            policy, policy_epoch=self.sw.next_policy_epoch(port),
            flow_epoch_shift=flow_epoch_shift,
            share_tagged=share_tagged, share_untagged=share_untagged, mcdt_th_pkts=mcdt_th_pkts,
            active_flows=active_flows)
        self.sw.write_port_policy(port, action)
        return action

    # ---- counters -----------------------------------------------------------
    COUNTER_NAMES = ("queue_arrivals", "queue_admits", "queue_departures", "queue_drops",
                     "ingress_discards", "queue_ecn_marks")

    def counters(self) -> Counters:
        """All counters, packets, from ONE P4Runtime ReadRequest; the target's
        ChIPS counters (disjoint events, one index space) merged into .chips."""
        chips_names = self.target.CHIPS_COUNTERS
        values = self.sw.read_counters(self.COUNTER_NAMES + chips_names)
        chips = {i: v.packets for name in chips_names for i, v in values[name].items()
                 if v.packets}
        return Counters(*({i: v.packets for i, v in values[name].items() if v.packets}
                          for name in self.COUNTER_NAMES), chips)

    def wait_queues_empty(self, timeout_s: float = 30.0) -> None:
        """Start from empty queues: a failed earlier test may have left packets in a
        frozen queue (their departure times are fixed), which would otherwise come
        out during this test. Then forget anything already received."""
        deadline = time.monotonic() + timeout_s
        while True:
            c = self.counters()
            queued = {i: c.admits.get(i, 0) - c.departures.get(i, 0) for i in c.admits}
            # A cut-in packet's FIFO slot (chips.p4) may still be queued after it left.
            for port in PORTS:
                slots = c.cut_ins(port) - c.chips.get(C.chips_index(port, C.CHIPS_SLOT_DEPARTED), 0)
                if slots:
                    queued[f"port {port} cut-in slots"] = slots
            if not any(queued.values()):
                break
            if time.monotonic() > deadline:
                self.fail(f"queues did not drain within {timeout_s} s: {queued}")
            time.sleep(0.1)
        self.dataplane.flush()

    def wait_counter(self, pred, timeout_s: float = 5.0) -> Counters:
        deadline = time.monotonic() + timeout_s
        while True:
            now = self.counters()
            if pred(now) or time.monotonic() > deadline:
                return now
            time.sleep(0.02)

    # ---- packets ------------------------------------------------------------
    def send(self, pkt: Ether, port: int = SRC_HOST_PORT) -> None:
        tu.send_packet(self, port, pkt)

    def receive_ids(self, port: int, count: int, timeout_s: float) -> list[int]:
        """IPv4 ids (IPv6 flow labels) of the next `count` packets on `port` (fewer on timeout)."""
        ids: list[int] = []
        deadline = time.monotonic() + timeout_s
        while len(ids) < count and time.monotonic() < deadline:
            res = self.dataplane.poll(port_number=port, timeout=0.2)
            if isinstance(res, self.dataplane.PollSuccess):
                pkt = Ether(res.packet)
                # an IPv6 test packet carries its sequence number in the flow label
                ids.append(pkt[IP].id if IP in pkt else pkt[IPv6].fl)
        return ids

    BURST_ATTEMPTS = 3

    def before_burst_retry(self) -> None:
        """Undo, before a discarded burst is repeated, state of the rule under test
        that the policy epoch does not reset (test_tag_guard: its flows' TAT)."""

    def frozen_burst(self, action: PolicyAction, out_port: int, pkts: Sequence[Ether],
                     sacrificial: Ether, cut_ins: int = 0) -> tuple[Counters, Counters]:
        """burst() and check its timing precondition; returns (counters before,
        delta once every packet has arrived).

        The precondition (the burst was sent within half a slot, and one read
        right after it shows every arrival and only the sacrificial departure)
        is about this machine's timing, not about the rule under test. When a
        slow or loaded machine misses it, the attempt is discarded, not judged:
        the queue drains, the departure slots double in length, the policy is
        reinstalled with a fresh epoch (averages and RED state start from zero
        again), and the burst is repeated, at most BURST_ATTEMPTS times; then
        the test is skipped with a PRECONDITION MISSED message. A packet
        missing from the arrivals is a failure at once.

        cut_ins: packets the caller expects ChIPS to cut in (chips.p4). They
        leave at once through the cut-in queue, so the timing precondition is
        on the FIFO's departures (all departures minus the cut-ins, which only
        the sacrificial packet may have made), and the number of cut-ins is a
        verdict on the rule under test: a different count fails the test."""
        n = len(pkts) + 1
        for attempt in range(1, self.BURST_ATTEMPTS + 1):
            before = self.counters()
            slow = self.burst(out_port, pkts, sacrificial)
            after_in = self.wait_counter(
                lambda c: sum(c.minus(before).arrivals.values()) >= n
                and sum(c.minus(before).departures.values())
                >= 1 + c.minus(before).cut_ins(out_port), timeout_s=10)
            delta_in = after_in.minus(before)
            self.assertEqual(sum(delta_in.arrivals.values()), n, "not every packet reached the AQM")
            fifo_departed = sum(delta_in.departures.values()) - delta_in.cut_ins(out_port)
            if slow is None and fifo_departed == 1:
                self.assertEqual(delta_in.cut_ins(out_port), cut_ins, "ChIPS cut-ins in the burst")
                return before, delta_in
            why = slow or f"{fifo_departed} FIFO departures by the time every arrival was counted"
            print(f"frozen-queue precondition missed ({why}); attempt {attempt}/"
                  f"{self.BURST_ATTEMPTS}", flush=True)
            self.target.set_queue_rate(out_port, 0)
            if self.freeze_rate_pps > MIN_FREEZE_RATE_PPS:
                self.freeze_rate_pps //= 2  # a slow or loaded machine: longer slots
            self.wait_queues_empty(timeout_s=n / MIN_FREEZE_RATE_PPS + 10)
            self.before_burst_retry()
            if "policy_epoch" in action.params:
                self.sw.write_port_policy(out_port, action.with_params(
                    policy_epoch=self.sw.next_policy_epoch(out_port)))
        # Not a verdict on the rule under test: say so, and do not count it as a pass.
        self.skipTest(f"PRECONDITION MISSED: the frozen-queue timing failed {self.BURST_ATTEMPTS} "
                      f"times down to {self.freeze_rate_pps} pkt/s slots; this machine is too "
                      f"slow or loaded to build the queue state")

    def burst(self, out_port: int, pkts: Sequence[Ether], sacrificial: Ether) -> str | None:
        """Freeze out_port, then send `pkts` back to back.

        The sacrificial packet is sent first and must come out before the
        burst starts; the caller's model must include it (an arrival at
        occupancy 0 that departs at once).
        """
        self.target.set_queue_rate(out_port, self.freeze_rate_pps)
        time.sleep(1.0 / self.freeze_rate_pps + 0.05)  # the previous slot has passed
        self.send(sacrificial)
        got = self.receive_ids(out_port, 1, timeout_s=2.0)
        self.assertEqual(got, [sacrificial[IP].id], "sacrificial packet did not pass")
        frames = [bytes(p) for p in pkts]
        started = time.monotonic()
        for frame in frames:
            tu.send_packet(self, SRC_HOST_PORT, frame)
        sent_s = time.monotonic() - started
        # All of the burst must be in before the next departure slot (see module doc).
        if sent_s >= 0.5 / self.freeze_rate_pps:
            return f"burst of {len(frames)} took {sent_s * 1e3:.1f} ms to send"
        return None

    def collect(self, out_port: int, expected_count: int) -> list[int]:
        """Packets of a frozen port trickle out at the freeze rate; gather them."""
        ids = self.receive_ids(out_port, expected_count,
                               timeout_s=expected_count / self.freeze_rate_pps + 3.0)
        self.target.set_queue_rate(out_port, 0)
        return ids


def no_early_drop_max_p(min_th_pkts: float, max_th_pkts: float) -> float:
    """max_p giving red_slope_q24 == 1: p_b = (avg - min_th) * 1 >> 24 is 0 for any
    avg below max_th when max_th - min_th < 256 packets, so RED never drops early
    and outcomes are deterministic."""
    return (max_th_pkts - min_th_pkts) / 2**24


CLASS_OF = {"tcp": "TCP", "tagged": "TAGGED", "untagged": "UNTAGGED"}


def burst_packet(kind: str, seq: int, out_port: int = OUT_PORT, flow: int = 0) -> Ether:
    """kind: "tcp", "tagged" (UDP, DSCP EF) or "untagged" (UDP, DSCP 0)."""
    if kind == "tcp":
        return packet("tcp", out_port=out_port, seq=seq, sport=1000 + flow)
    dscp = 46 if kind == "tagged" else 0
    return packet("udp", out_port=out_port, seq=seq, dscp=dscp, sport=3000 + flow)


def admitted(decision: str) -> bool:
    """ADMIT, CUT_IN (ChIPS) and MARK_* (ECN) packets are forwarded."""
    return decision in ("ADMIT", fpm.CUT_IN) or decision.startswith(fpm.MARK_PREFIX)


def burst_flows(kinds: Sequence[str], flows: Sequence[int] | None = None) -> list[int]:
    """Each packet's flow number (burst_packet's flow): `flows`, or i % 4."""
    return list(flows) if flows is not None else [i % 4 for i in range(len(kinds))]


def tag_guard_slot(kind: str, flow: int, out_port: int = OUT_PORT) -> int:
    """The tag guard's slot of burst_packet(kind, _, out_port, flow) on its port:
    crc32 of the 5-tuple & TAG_GUARD_SLOT_MASK (tag_guard_steps.p4)."""
    ip = burst_packet(kind, seq=0, out_port=out_port, flow=flow)[IP]
    l4 = ip.payload
    return fred.flow_hash(ip.src, ip.dst, ip.proto, l4.sport, l4.dport) \
        & C.CONSTANTS["TAG_GUARD_SLOT_MASK"]


def predict(action: PolicyAction, kinds: Sequence[str], rand_source=lambda: 0,
            model: PortModel | None = None, ecn_capable: Sequence[bool] | None = None,
            flows: Sequence[int] | None = None) -> list[str]:
    """Decisions of the reference model for: the sacrificial TCP packet at an
    empty queue (it leaves at once), then `kinds` arriving at a frozen queue.

    A CUT_IN packet (ChIPS) leaves at once through the cut-in queue: it leaves
    the physical queue but stays in its class's virtual FIFO count (occupancy.p4).
    Every packet arrives at time 0 (the tag guard, tag_guard.p4, sees the whole
    burst at once: a test's interval must be far longer than its burst); each
    tagged packet carries its flow's tag guard slot; flows: as burst_flows.
    Pass `model` to read its registers and counters afterwards."""
    model = model or PortModel(action, rand_source)
    assert admitted(model.arrive(C.CLASSES["TCP"], Occupancy()))
    occ = {"TCP": 0, "TAGGED": 0, "UNTAGGED": 0}
    physical = 0
    decisions = []
    for i, (kind, flow) in enumerate(zip(kinds, burst_flows(kinds, flows))):
        cls = CLASS_OF[kind]
        decision = model.arrive(C.CLASSES[cls], Occupancy(
            queue_pkts=physical, tcp_pkts=occ["TCP"],
            tagged_pkts=occ["TAGGED"], untagged_pkts=occ["UNTAGGED"]),
            ecn_capable=bool(ecn_capable and ecn_capable[i]),
            flow_slot=tag_guard_slot(kind, flow) if cls == "TAGGED" else 0)
        if admitted(decision):
            occ[cls] += 1
            physical += decision != fpm.CUT_IN
        decisions.append(decision)
    return decisions


class QueueTest(MmaqmTest):
    """Runs frozen bursts and checks them against the reference model."""

    SACRIFICIAL_ID = 0xFFFF

    def run_burst(self, action: PolicyAction, kinds: Sequence[str], out_port: int = OUT_PORT,
                  expected: Sequence[str] | None = None,
                  flows: Sequence[int] | None = None, make_packet=burst_packet
                  ) -> tuple[list[str], Counters]:
        """Send `kinds` as a frozen burst; return (observed decisions, counter delta).

        Observed decisions: "ADMIT" for a forwarded packet, else the drop reason
        taken from the per-reason counters (checked against `expected`, or the
        model's prediction when `expected` is None). make_packet: burst_packet's
        signature (test_ipv6's burst_packet6 sends IPv6; the sacrificial packet is IPv4).
        """
        if expected is None:
            expected = predict(action, kinds, flows=flows)
        pkts = [make_packet(k, seq=i + 1, out_port=out_port, flow=f)
                for i, (k, f) in enumerate(zip(kinds, burst_flows(kinds, flows)))]
        sacrificial = burst_packet("tcp", seq=self.SACRIFICIAL_ID, out_port=out_port)
        before, _ = self.frozen_burst(action, out_port, pkts, sacrificial)
        admitted_ids = [i + 1 for i, d in enumerate(expected) if admitted(d)]
        got = self.collect(out_port, len(admitted_ids))
        self.assertEqual(got, admitted_ids, "forwarded packets differ from the prediction")
        tu.verify_no_other_packets(self)
        delta = self.wait_counter(
            lambda c: sum(c.minus(before).departures.values()) >= len(admitted_ids) + 1).minus(before)
        # Exact counter deltas per class: arrivals, admits, departures, drops by reason.
        for cls, cid in C.CLASSES.items():
            idx = C.class_index(out_port, cid)
            want_arrivals = sum(1 for k in kinds if CLASS_OF[k] == cls) + (cls == "TCP")
            want_admits = sum(1 for k, d in zip(kinds, expected)
                              if CLASS_OF[k] == cls and admitted(d)) + (cls == "TCP")
            self.assertEqual(delta.arrivals.get(idx, 0), want_arrivals, f"{cls} arrivals")
            self.assertEqual(delta.admits.get(idx, 0), want_admits, f"{cls} admits")
            self.assertEqual(delta.departures.get(idx, 0), want_admits,
                             f"{cls} departures: occupancy must return to 0")
            want_drops = {}
            for k, d in zip(kinds, expected):
                if CLASS_OF[k] == cls and not admitted(d):
                    want_drops[d] = want_drops.get(d, 0) + 1
            self.assertEqual(delta.drop_reasons(out_port, cid), want_drops, f"{cls} drops")
        return list(expected), delta
