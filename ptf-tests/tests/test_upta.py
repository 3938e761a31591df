"""UPTA (Wu & Hassan 2002; upta.p4, docs/upta-plan.md §3): every per-packet rule on
the real switch, against the reference model mmaqm_oracle.upta_model.UptaPortModel.

Common setting (plan §3): port OUT_PORT runs the `upta` action with k_shift 10
(K = 1.024 ms) and packets at least 5 ms apart, each sent only after the
switch has counted the previous one, so every packet restarts the estimate
and R = 16 l exactly (l = IPv4 total length): every decision is a
hand-computable function of FS and q, independent of timing. Packets are UDP
10.0.1.2 -> 10.0.2.2 of 200 IPv4 bytes (R = 3 200) unless stated; tagged =
DSCP 46 (a multimedia DSCP of the baseline classifier), tagged_q16 7 864
(0.12); 4 096 slots per port. Registers persist across tests, so every test
picks flows (UDP source ports) whose slot has never been used (upta_last_us
reads 0 through Thrift). Fair shares are written as scaled action parameters
(bytes per K * 16) with their reciprocals (upta.reciprocal), as the
controller's loop will.

Each test asserts, per packet, forward or drop and the drop reason (queue_drops
by reason), the upta_events deltas, the exact bytes of every forwarded packet,
and ends with verify_no_other_packets. Expected values come from the
reference model and are worked by hand in the docstrings.
"""

from __future__ import annotations

import time

import ptf.testutils as tu
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import Ether

from mmaqm import bmv2_tm
from mmaqm import p4constants as C
from mmaqm.algorithms import fred, upta
from mmaqm.config import parse_policy
from mmaqm.encoding import PolicyAction, policy_action
from mmaqm_oracle import upta_model

from mmaqm_base import (OUT_PORT, SRC_HOST_PORT, MmaqmTest, forwarded, host_ip, host_mac,
                        router_mac)

SRC_IP, DST_IP = host_ip(SRC_HOST_PORT), host_ip(OUT_PORT)
DPORT = 5000
TAGGED_DSCP = 46
K_SHIFT = 10                 # K = 1.024 ms: packets >= 5 ms apart restart the estimate
GAP_S = 0.005
SLOTS = upta.UPTA_SLOTS_PER_PORT
Q12 = 7864                   # 0.12 in Q16 (floor(0.12 * 2^16))
NONE = upta.FS_INFINITE
ADMIT, USELESS, FAIR = upta_model.ADMIT, upta_model.UPTA_USELESS, upta_model.UPTA_FAIR_SHARE
_used_sports: set[int] = set()


def option(q16: int, opt_type: int = upta.OPTION_TYPE) -> bytes:
    return bytes([opt_type, upta.OPTION_LEN, q16 >> 8, q16 & 0xFF])


def udp_packet(sport: int, *, length: int = 200, tagged: bool = False,
               opt: bytes | None = None, seq: int = 0) -> Ether:
    """A UDP packet of `length` IPv4 bytes (option included) from the host behind
    SRC_HOST_PORT; IPv4 id = seq."""
    header = 20 + (len(opt) if opt else 0)
    ip = IP(src=SRC_IP, dst=DST_IP, ttl=64, tos=(TAGGED_DSCP if tagged else 0) << 2,
            id=seq & 0xFFFF, options=opt or [])
    return (Ether(src=host_mac(SRC_HOST_PORT), dst=router_mac(SRC_HOST_PORT)) / ip
            / UDP(sport=sport, dport=DPORT) / bytes(length - header - 8))


def flow_hash(sport: int) -> int:
    return fred.flow_hash(SRC_IP, DST_IP, C.IP_PROTO_UDP, sport, DPORT)


def slot_index(sport: int, port: int = OUT_PORT) -> int:
    return port * C.UPTA_SLOTS_PER_PORT + (flow_hash(sport) & (SLOTS - 1))


class UptaTest(MmaqmTest):
    """A `upta` port (module docstring) and per-packet checks."""

    MODE = "B"

    def setUp(self) -> None:
        super().setUp()
        self.now_us = 0          # model time: every packet 10 K after the previous one

    def install(self, fs_i: int = NONE, fs_u: int = NONE, *, mode: str | None = None,
                k_shift: int = K_SHIFT, tagged_q: float | None = 0.12,
                port: int = OUT_PORT) -> PolicyAction:
        raw = {"algorithm": "UPTA", "queue_limit_pkts": 64, "upta_mode": mode or self.MODE,
               "upta_flow_slots": SLOTS, "upta_k_shift": k_shift}
        if tagged_q is not None:
            raw["upta_tagged_loss_threshold"] = tagged_q
        action = policy_action(parse_policy(raw), policy_epoch=self.sw.next_policy_epoch(port),
                               flow_epoch_shift=0).with_params(**upta.share_params(fs_i, fs_u))
        self.sw.write_port_policy(port, action)
        return action

    def modify(self, action: PolicyAction, fs_i: int, fs_u: int,
               port: int = OUT_PORT) -> PolicyAction:
        """The controller's interval update: new shares, same policy epoch."""
        action = action.with_params(**upta.share_params(fs_i, fs_u))
        self.sw.write_port_policy(port, action)
        return action

    def fresh_sports(self, n: int, start: int = 20000, port: int = OUT_PORT) -> list[int]:
        """n UDP source ports whose slots differ and have never been used."""
        out: list[int] = []
        slots: set[int] = set()
        sport = start
        while len(out) < n:
            candidates = []
            while len(candidates) < 8:
                if sport not in _used_sports and slot_index(sport, port) not in slots:
                    candidates.append(sport)
                    slots.add(slot_index(sport, port))
                sport += 1
            values = bmv2_tm.register_read(
                self.thrift_port, [("upta_last_us", slot_index(s, port)) for s in candidates])
            for s in candidates:
                if values[("upta_last_us", slot_index(s, port))] == 0 and len(out) < n:
                    out.append(s)
                    _used_sports.add(s)
        return out

    def events(self, port: int = OUT_PORT) -> dict[str, int]:
        idx = {C.upta_event_index(port, e): name for name, e in C.UPTA_EVENTS.items()}
        values = self.sw.read_counter_indexes({"upta_events": list(idx)})["upta_events"]
        return {name: values[i].packets for i, name in idx.items() if values[i].packets}

    def state(self, sport: int) -> int:
        index = slot_index(sport)
        return bmv2_tm.register_read(self.thrift_port, [("upta_state", index)])[("upta_state",
                                                                                 index)]

    def rate(self, sport: int) -> int:
        index = slot_index(sport)
        return bmv2_tm.register_read(self.thrift_port, [("upta_rate", index)])[("upta_rate",
                                                                               index)]

    def drain(self, port: int) -> list[int]:
        """IPv4 ids of the packets already received on port."""
        ids = []
        while True:
            res = self.dataplane.poll(port_number=port, timeout=0)
            if not isinstance(res, self.dataplane.PollSuccess):
                return ids
            ids.append(Ether(res.packet)[IP].id)

    def model(self, action: PolicyAction, rand: int = 0) -> upta_model.UptaPortModel:
        return upta_model.UptaPortModel(dict(action.params), lambda: rand)

    def predict(self, model: upta_model.UptaPortModel, pkt: Ether) -> upta_model.Outcome:
        """The model's outcome for pkt, 10 K after the previous packet."""
        self.now_us += 10 << model.params["k_shift"]
        raw = bytes(pkt[IP])
        opt = raw[20:(raw[0] & 0xF) * 4]
        option_q16 = upta.parse_option(opt) if opt[:2] == option(0)[:2] else None
        return model.arrive(flow_hash(pkt[UDP].sport), len(raw), self.now_us,
                            option_q16=option_q16, tagged=pkt[IP].tos >> 2 == TAGGED_DSCP)

    def send_one(self, pkt: Ether, want: str, expected_out: Ether | None = None,
                 class_name: str | None = None) -> None:
        """Send pkt, wait until the switch counted it, check forward/drop and reason."""
        class_name = class_name or ("TAGGED" if pkt[IP].tos >> 2 == TAGGED_DSCP else "UNTAGGED")
        cid = C.CLASSES[class_name]
        before = self.counters()
        self.send(pkt)
        after = self.wait_counter(
            lambda c: sum(c.minus(before).arrivals.values()) >= 1).minus(before)
        self.assertEqual(after.arrivals, {C.class_index(OUT_PORT, cid): 1}, "arrival")
        if want == ADMIT:
            tu.verify_packet(self, expected_out if expected_out is not None else forwarded(pkt),
                             OUT_PORT)
            self.assertEqual(after.drop_reasons(OUT_PORT, cid), {}, "no drop")
        else:
            self.assertEqual(after.drop_reasons(OUT_PORT, cid), {want: 1}, "drop reason")
        time.sleep(GAP_S)

    def run_sequence(self, action: PolicyAction, model: upta_model.UptaPortModel,
                     pkts: list[Ether], expected: list[str]) -> None:
        """The model must predict `expected`; the switch must do it."""
        got = [self.predict(model, p).decision for p in pkts]
        self.assertEqual(got, expected, "reference model")
        for pkt, want in zip(pkts, expected):
            self.send_one(pkt, want)


class UptaNoConstraintTest(UptaTest):
    """FS none (no controller interval yet): 20 untagged packets of one flow are all
    forwarded unchanged (but TTL, MACs, checksum); the flow ends in state I (its
    first packet is a new flow's admission, Fig. 7's U branch), no event."""

    def runTest(self) -> None:
        action = self.install()
        model = self.model(action)
        sport, = self.fresh_sports(1)
        ev0 = self.events()
        pkts = [udp_packet(sport, seq=i) for i in range(20)]
        self.run_sequence(action, model, pkts, [ADMIT] * 20)
        self.assertEqual(self.state(sport), upta.STATE_I)
        self.assertEqual(self.events(), ev0)
        tu.verify_no_other_packets(self)


class UptaEstimatorRestartTest(UptaTest):
    """Rate estimator, restart branch (dt >= K): packets 5 ms apart at K = 1.024 ms
    leave R = l << 4: 200 bytes -> 3 200, then 500 bytes -> 8 000, then 64 -> 1 024."""

    def runTest(self) -> None:
        action = self.install()
        model = self.model(action)
        sport, = self.fresh_sports(1)
        for length, want in ((200, 3200), (500, 8000), (64, 1024)):
            pkt = udp_packet(sport, length=length)
            self.assertEqual(self.predict(model, pkt).decision, ADMIT)
            self.assertEqual(model.slots[flow_hash(sport) & (SLOTS - 1)].rate_scaled, want)
            self.send_one(pkt, ADMIT)
            self.assertEqual(self.rate(sport), want, f"upta_rate after {length} bytes")
        tu.verify_no_other_packets(self)


class UptaEstimatorAverageTest(UptaTest):
    """Rate estimator, averaging branch (dt < K): k_shift 24 (K = 16.8 s); 10 packets
    of 200 bytes within t < 1 s. Each step is R <- R + 3 200 - (dt R >> 24), so R
    stays below 10 * 3 200 = 32 000 and loses at most R dt / K per step: with the
    whole burst lasting t, 32 000 (1 - t/K) - 10 <= R <= 32 000 (each >> truncates
    by < 1). No fair share: all forwarded."""

    def runTest(self) -> None:
        self.install(k_shift=24)
        sport, = self.fresh_sports(1)
        start = time.monotonic()
        for i in range(10):
            pkt = udp_packet(sport, seq=i)
            self.send(pkt)
            tu.verify_packet(self, forwarded(pkt), OUT_PORT)
        burst_s = time.monotonic() - start
        r = self.rate(sport)
        self.assertLessEqual(r, 32000)
        self.assertGreaterEqual(r, 32000 * (1 - burst_s / (2**24 / 1e6)) - 10,
                                f"burst of {burst_s:.3f} s")
        self.assertLess(r, 32000, "dt > 0 must decay the estimate a little")  # dt >= 1 us
        tu.verify_no_other_packets(self)


class UptaNewToITest(UptaTest):
    """Fig. 7, U branch, then I branch and back (plan §3 rows new -> I, I -> U, U -> I).
    Tagged flow, q = tagged_q16 = 7 864 (0.12), R = 3 200.
      1. FS_U = 2 900: p = 1 - 2 900/3 200 = 0.094 <= 0.12: admitted, state I
         (check: 3 200 * (65 536 - 7 864) = 184 550 400 <= 2 900 * 65 536 = 190 054 400).
      2. FS_I = 2 700 (FS_U 2 900): p = 0.156 > 0.12: I -> U, UPTA_USELESS, I_TO_U 1
         (184 550 400 > 2 700 * 65 536 = 176 947 200).
      3. same shares: the U flow is tested with FS_U = 2 900: admitted, state I.
    The I flow's random drop in 1 and 3 cannot happen: an I flow's fair-share test
    is made only in the I branch (step 2 took the U exit), and U-branch admissions
    have none (Fig. 7)."""

    def runTest(self) -> None:
        action = self.install(NONE, 2900)
        model = self.model(action)
        sport, = self.fresh_sports(1)
        ev0 = self.events()
        self.run_sequence(action, model, [udp_packet(sport, tagged=True, seq=1)], [ADMIT])
        self.assertEqual(self.state(sport), upta.STATE_I)
        action = self.modify(action, 2700, 2900)
        model.set_policy(dict(action.params))
        self.run_sequence(action, model, [udp_packet(sport, tagged=True, seq=2)], [USELESS])
        self.assertEqual(self.state(sport), upta.STATE_U)
        self.assertEqual(model.events, {"I_TO_U": 1})
        ev = self.events()
        self.assertEqual(ev.get("I_TO_U", 0) - ev0.get("I_TO_U", 0), 1, "I_TO_U event")
        self.run_sequence(action, model, [udp_packet(sport, tagged=True, seq=3)], [ADMIT])
        self.assertEqual(self.state(sport), upta.STATE_I)
        tu.verify_no_other_packets(self)


class UptaNewToUTest(UptaTest):
    """A new tagged flow with FS_U = 2 700: p = 0.156 > 0.12 at once: every packet
    UPTA_USELESS, state stays U (0), and no I_TO_U event (it never was I).
    An untagged flow (no threshold) at the same shares is admitted."""

    def runTest(self) -> None:
        action = self.install(2700, 2700)
        model = self.model(action)
        tagged, untagged = self.fresh_sports(2)
        ev0 = self.events()
        self.run_sequence(action, model, [udp_packet(tagged, tagged=True, seq=i)
                                          for i in range(4)], [USELESS] * 4)
        self.assertEqual(self.state(tagged), upta.STATE_U)
        self.run_sequence(action, model, [udp_packet(untagged, seq=9)], [ADMIT])
        self.assertEqual(self.events(), ev0)
        tu.verify_no_other_packets(self)


class UptaThresholdEqualTest(UptaTest):
    """p = q is not "exceeds" (Fig. 7 uses >). The option carries q16 = 8 192
    (0.125); mode B uses it but does not rewrite it. FS_U = 2 800:
    p = 1 - 2 800/3 200 = 0.125: 3 200 * (65 536 - 8 192) = 183 500 800 = 2 800 * 65 536:
    admitted, option unchanged. A second new flow at FS_U = 2 799 (183 435 264 <
    183 500 800): UPTA_USELESS."""

    def runTest(self) -> None:
        action = self.install(NONE, 2800)
        model = self.model(action)
        a, b = self.fresh_sports(2)
        self.run_sequence(action, model, [udp_packet(a, opt=option(8192))], [ADMIT])
        action = self.modify(action, NONE, 2799)
        model.set_policy(dict(action.params))
        self.run_sequence(action, model, [udp_packet(b, opt=option(8192))], [USELESS])
        tu.verify_no_other_packets(self)


class UptaForcedFairShareTest(UptaTest):
    """Fig. 7's I-flow drop with forced outcomes. Untagged flow (no threshold):
    packet 1 is a new flow's admission (U branch, no random drop) -> I. Then
    FS_I = 0: drop_prob = 1 > every draw u/2^16 (3 200 (65 536 - u) > 0):
    4 x UPTA_FAIR_SHARE, never UPTA_USELESS, state stays I. Then FS_I = 3 200 = R:
    drop_prob 0: 3 x admitted."""

    def runTest(self) -> None:
        action = self.install(NONE, NONE)
        model = self.model(action, rand=upta.Q_FIELD_MAX)  # the worst draw for "drop"
        sport, = self.fresh_sports(1)
        self.run_sequence(action, model, [udp_packet(sport, seq=0)], [ADMIT])
        action = self.modify(action, 0, NONE)
        model.set_policy(dict(action.params))
        self.run_sequence(action, model, [udp_packet(sport, seq=i) for i in range(1, 5)],
                          [FAIR] * 4)
        self.assertEqual(self.state(sport), upta.STATE_I)
        action = self.modify(action, 3200, NONE)
        model.set_policy(dict(action.params))
        model.rand_source = lambda: 0                              # the best draw for "drop"
        self.run_sequence(action, model, [udp_packet(sport, seq=i) for i in range(5, 8)],
                          [ADMIT] * 3)
        tu.verify_no_other_packets(self)


class UptaFairShareRateTest(UptaTest):
    """drop_prob = max(0, 1 - FS/R) with FS_I = 2 400, R = 3 200: p = 0.25; the data
    plane drops when 3 200 (65 536 - u) > 2 400 * 65 536, i.e. for u < 16 384:
    exactly 16 384 of the 65 536 draws (upta.fair_drop_count_q16). An untagged I flow
    (no threshold: never U) sends 1 + 400 packets: the 400 see p = 0.25, mean 100
    drops, sigma 8.7: UPTA_FAIR_SHARE in [65, 135] (4 sigma), nothing else dropped."""

    N = 400

    def runTest(self) -> None:
        self.assertEqual(upta_model.fair_drop_count_q16(3200, 2400), 16384)
        action = self.install(NONE, NONE)
        sport, = self.fresh_sports(1)
        self.send_one(udp_packet(sport, seq=0), ADMIT)
        action = self.modify(action, 2400, NONE)
        before = self.counters()
        got: list[int] = []   # drained as they come: PTF keeps at most 100 per port
        for i in range(1, self.N + 1):
            self.send(udp_packet(sport, seq=i))
            time.sleep(GAP_S)
            got += self.drain(OUT_PORT)
        delta = self.wait_counter(lambda c: sum(c.minus(before).arrivals.values()) >= self.N,
                                  timeout_s=10).minus(before)
        cid = C.CLASSES["UNTAGGED"]
        self.assertEqual(delta.arrivals, {C.class_index(OUT_PORT, cid): self.N})
        drops = delta.drop_reasons(OUT_PORT, cid)
        self.assertEqual(set(drops) - {FAIR}, set(), f"only fair-share drops: {drops}")
        self.assertTrue(65 <= drops.get(FAIR, 0) <= 135, f"UPTA_FAIR_SHARE {drops}")
        admitted = self.N - drops.get(FAIR, 0)
        got += self.receive_ids(OUT_PORT, admitted - len(got), timeout_s=5.0)
        self.assertEqual(got, sorted(got), "forwarded in order")
        self.assertEqual(len(got), admitted, "forwarded packets")
        self.assertEqual(self.state(sport), upta.STATE_I)
        tu.verify_no_other_packets(self)


class UptaCollisionTest(UptaTest):
    """Two flows whose crc32 agree in the low 12 bits share a slot (4 096 slots);
    k_shift 24 (K = 16.8 s): the second arrives less than K after the first, with
    another signature: FLOW_COLLISION + 1. A third packet of the second flow is no
    collision (the slot's signature is now its own). The slot is shared, rates add
    up: three 200-byte packets within t << K give 9 600 (1 - t/K) < R <= 9 600."""

    def runTest(self) -> None:
        self.install(k_shift=24)
        by_slot: dict[int, int] = {}
        sport = 30000
        while True:
            s = flow_hash(sport) & (SLOTS - 1)
            if s in by_slot and sport not in _used_sports and by_slot[s] not in _used_sports:
                a, b = by_slot[s], sport
                index = slot_index(a)
                if bmv2_tm.register_read(self.thrift_port,
                                         [("upta_last_us", index)])[("upta_last_us", index)] == 0:
                    break
            by_slot[s] = sport
            sport += 1
        _used_sports.update((a, b))
        self.assertNotEqual(flow_hash(a), flow_hash(b))
        ev0 = self.events()
        for sport, seq in ((a, 1), (b, 2), (b, 3)):
            pkt = udp_packet(sport, seq=seq)
            self.send(pkt)
            tu.verify_packet(self, forwarded(pkt), OUT_PORT)
        ev = self.events()
        self.assertEqual(ev.get("FLOW_COLLISION", 0) - ev0.get("FLOW_COLLISION", 0), 1)
        r = self.rate(a)
        self.assertTrue(9000 < r <= 9600, f"upta_rate of the shared slot {r}")
        tu.verify_no_other_packets(self)


class UptaPRewriteTest(UptaTest):
    """P-UPTA, eq. 17 (plan §3 "P rewrite"): 200-byte packet (IHL 6) with the option
    q16 = 7 864 (0.12), FS_I = FS_U = 2 880 (p = 1 - 2 880/3 200 = 0.1 <= 0.12:
    admitted). Exact: q' = (0.12 - 0.1)/(1 - 0.1) = 0.0222 = 1 456.4 / 2^16; fixed
    point: reciprocal(2 880) = (3 054 198 966, s 27), ratio = 3 200 * mant >> 27 =
    72 817, margin = (65 536 - 7 864) 72 817 >> 16 = 64 079, q' = 1 457. Out:
    IHL 6, option 9E 04 05 B1, IPv4 checksum valid (the whole expected frame is
    compared byte for byte). Then an option of 0xFFFF ("no threshold") and a
    packet without the option pass untouched."""

    MODE = "P"

    def runTest(self) -> None:
        action = self.install(2880, 2880)
        model = self.model(action)
        mant, shift = upta.reciprocal(2880)
        self.assertEqual((mant, shift), (3054198966, 27))
        self.assertEqual(upta_model.threshold_update_fixed(Q12, 3200, 2880, mant, shift), 1457)
        a, b, c = self.fresh_sports(3)
        pkt = udp_packet(a, opt=option(Q12), seq=1)
        out = self.predict(model, pkt)
        self.assertEqual((out.decision, out.q16_out), (ADMIT, 1457))
        self.send_one(pkt, ADMIT, forwarded(udp_packet(a, opt=option(1457), seq=1)))
        for sport, opt in ((b, option(upta.Q_FIELD_MAX)), (c, None)):
            pkt = udp_packet(sport, opt=opt, seq=2)
            out = self.predict(model, pkt)
            self.assertEqual(out.decision, ADMIT)
            self.assertIn(out.q16_out, (None, upta.Q_FIELD_MAX))
            self.send_one(pkt, ADMIT, forwarded(pkt))
        tu.verify_no_other_packets(self)


class UptaTable2Test(UptaTest):
    """The paper's Table 2 in fixed point (plan §1.5), one router per hop played by
    three fresh flows of 220 bytes (R = 3 520) on one P-UPTA port, each hop's q the
    previous hop's output:
      R1: FS 3 520 (1.76/1.76; p = 0): q 7 864 -> 7 864 (unchanged, R <= FS)
      R2: FS 3 200 (1.6/1.76; p = 0.0909): q 7 864 -> 2 098 (3.20 %; exact 2 096.8)
      R3: FS 3 146 (1.43/1.60): 3 520 (65 536 - 2 098) = 223 301 760 >
          3 146 * 65 536 = 206 176 256: UPTA_USELESS (the video is U at R3)."""

    MODE = "P"

    def runTest(self) -> None:
        q = Q12
        sports = self.fresh_sports(3)
        for hop, (fs, want_q, want) in enumerate(((3520, 7864, ADMIT), (3200, 2098, ADMIT),
                                                  (3146, None, USELESS))):
            action = self.install(fs, fs)
            model = self.model(action)
            pkt = udp_packet(sports[hop], length=220, tagged=True, opt=option(q), seq=hop)
            out = self.predict(model, pkt)
            self.assertEqual((out.decision, out.q16_out), (want, want_q), f"model, hop {hop + 1}")
            expected = forwarded(udp_packet(sports[hop], length=220, tagged=True,
                                            opt=option(want_q), seq=hop)) if want_q else None
            self.send_one(pkt, want, expected)
            if want_q is not None:
                q = want_q
        tu.verify_no_other_packets(self)


class UptaOtherOptionTest(UptaTest):
    """Only our option is parsed: IHL 6 with router alert (0x94 04 0000), or with
    type 0x9E but length 3, is DISCARD_IPV4_OPTIONS on the ingress port, as before;
    an ICMP echo and a UDP packet without options pass a P-UPTA port byte for byte
    (but TTL, MACs, checksum)."""

    MODE = "P"

    def runTest(self) -> None:
        self.install(2000, 2000)
        sport, = self.fresh_sports(1)
        for opt in (b"\x94\x04\x00\x00", b"\x9e\x03\x00\x01"):
            before = self.counters()
            self.send(udp_packet(sport, opt=opt))
            delta = self.wait_counter(lambda c: c.minus(before).discards).minus(before)
            self.assertEqual(delta.discard_reasons(SRC_HOST_PORT), {"IPV4_OPTIONS": 1}, opt.hex())
            self.assertEqual(delta.arrivals, {})
        echo = (Ether(src=host_mac(SRC_HOST_PORT), dst=router_mac(SRC_HOST_PORT))
                / IP(src=SRC_IP, dst=DST_IP, ttl=64) / ICMP() / bytes(32))
        self.send(echo)
        tu.verify_packet(self, forwarded(echo), OUT_PORT)
        tu.verify_no_other_packets(self)
