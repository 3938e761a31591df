"""FRED (Lin & Morris 1997; cbt §2.3): every drop rule of fred.p4 on the real switch.

FRED's average moves only at departures (D1) and at arrivals to an empty
queue (A1), so a frozen port (mmaqm_base) holds avg still while a stage of
packets arrives. A test is a sequence of stages: "release k" lets exactly k
queued packets leave (each departure runs D1 and D2 in egress), then the
stage's packets are sent within one departure slot. Every expected decision is
worked out by hand in the docstring and must equal the prediction of the
reference model, mmaqm_oracle.fred_model.FredPortModel (driven through the same
arrivals and departures, for R = 0 and R = 2^16 - 1, so no outcome depends on
the random draw). The switch must then forward exactly the predicted packets
in order, count exactly the predicted drops per reason in each stage, and, once
the queue has drained, hold no per-flow state (fred_nactive, fred_qlen and
fred_strike read back 0 through BMv2's Thrift register_read).

Flows are TCP flows 10.0.1.2 -> 10.0.2.2, destination port 2000, one source
port per flow letter; the sacrificial packet that opens the freeze is its own
flow. Unless stated: w = 1 (avg = the queue left by the last departure),
min_th 4, max_th 8, minq 2, queue limit 60, 4096 flow slots, no idle decay.
"""

from __future__ import annotations

import time

import ptf.testutils as tu
from scapy.layers.inet import IP, TCP

from mmaqm import bmv2_tm
from mmaqm import p4constants as C
from mmaqm.algorithms import fred
from mmaqm.encoding import PolicyAction
from mmaqm_oracle import fred_model

from mmaqm_base import (MIN_FREEZE_RATE_PPS, OUT_PORT, SRC_HOST_PORT, MmaqmTest, host_ip,
                        packet)

ADMIT = fred_model.ADMIT
MAXQ, TWICE, STRIKE = fred_model.FRED_MAXQ, fred_model.FRED_TWICE_AVGCQ, fred_model.FRED_STRIKE
EARLY, FORCED, LIMIT = "RED_EARLY", "RED_FORCED", "QUEUE_LIMIT"
SACRIFICIAL = "sacrificial"
BASE_SPORT = 20000
SACRIFICIAL_SPORT = 19999
DPORT = 2000
BASE_POLICY = {"algorithm": "FRED", "queue_limit_pkts": 60, "min_th_pkts": 4,
               "max_th_pkts": 8, "max_p": 0.1, "ewma_weight": 1, "fred_minq_pkts": 2}
ALL = -1   # release every queued packet


def flow_sport(flow: str) -> int:
    """A flow name -> its TCP source port: letters A, B, ... and F0, F1, ... ."""
    if flow == SACRIFICIAL:
        return SACRIFICIAL_SPORT
    if len(flow) == 1:
        return BASE_SPORT + ord(flow) - ord("A")
    return BASE_SPORT + 100 + int(flow[1:])


SRC_IP = host_ip(SRC_HOST_PORT)


def flow_source(flow: str) -> tuple[str, int]:
    """A flow name -> (source address, TCP source port)."""
    return SRC_IP, flow_sport(flow)


def flow_slot(source: tuple[str, int], table_slots: int) -> int:
    src_ip, sport = source
    return fred.flow_slot(src_ip, host_ip(OUT_PORT), C.IP_PROTO_TCP, sport, DPORT,
                          table_slots=table_slots)


class FredTest(MmaqmTest):
    """Runs a FRED stage sequence on port OUT_PORT and checks it (module docstring)."""

    source_of = staticmethod(flow_source)
    # Half the suite's freeze rate: a stage waits for a departure, sends, then confirms with
    # a second counter read (each read of the seven counters takes tens of ms), all
    # inside one departure slot.
    FRED_FREEZE_RATE_PPS = 2

    def setUp(self) -> None:
        super().setUp()
        self.freeze_rate_pps = self.FRED_FREEZE_RATE_PPS

    def slot_of(self, source: tuple[str, int], table_slots: int) -> int:
        """The flow slot of a source (test_ipv6 overrides it for IPv6 flows)."""
        return flow_slot(source, table_slots)

    def predict(self, action: PolicyAction, stages, rand_q16: int):
        """Reference model decisions per stage, and the FIFO order of admitted ids."""
        slots = action.params["fred_slot_mask"] + 1
        model = fred_model.FredPortModel(action.params, lambda: rand_q16)
        assert model.arrive(self.slot_of(self.source_of(SACRIFICIAL), slots)) == (ADMIT, None)
        model.depart()
        decisions = []
        for release, flows in stages:
            for _ in range(len(model.fifo) if release == ALL else release):
                model.depart()
            decisions.append([model.arrive(self.slot_of(self.source_of(f), slots))[1] or ADMIT
                              for f in flows])
        return decisions

    def check_stages(self, policy: dict, stages: list[tuple[int, list[str]]],
                     expected: list[list[str]]) -> None:
        action = self.set_policy(OUT_PORT, {**BASE_POLICY, **policy})
        for rand_q16 in (0, C.PROB_ONE - 1):
            self.assertEqual(self.predict(action, stages, rand_q16), expected,
                             f"reference model, R = {rand_q16}")
        for attempt in range(1, self.BURST_ATTEMPTS + 1):
            missed = self.run_stages(action, stages, expected)
            if missed is None:
                return
            print(f"frozen-queue precondition missed ({missed}); attempt {attempt}/"
                  f"{self.BURST_ATTEMPTS}", flush=True)
            bmv2_tm.set_queue_rate(self.thrift_port, OUT_PORT, 0)
            if self.freeze_rate_pps > MIN_FREEZE_RATE_PPS:
                self.freeze_rate_pps //= 2
            self.wait_queues_empty(timeout_s=60)
            action = action.with_params(policy_epoch=self.sw.next_policy_epoch(OUT_PORT))
            self.sw.write_port_policy(OUT_PORT, action)
        self.skipTest(f"PRECONDITION MISSED: the frozen-queue timing failed {self.BURST_ATTEMPTS} "
                      f"times; this machine is too slow or loaded to build the queue state")

    def port_total(self, table: dict[int, int]) -> int:
        return sum(table.get(C.class_index(OUT_PORT, cid), 0) for cid in C.CLASSES.values())

    def run_stages(self, action: PolicyAction, stages, expected) -> str | None:
        """One attempt; None when done (assertions failed or passed), else why the
        timing precondition was missed (then nothing was judged)."""
        seq = 0
        admitted_ids: list[int] = []
        queued = 0
        start = self.counters()
        bmv2_tm.set_queue_rate(self.thrift_port, OUT_PORT, self.freeze_rate_pps)
        time.sleep(1.0 / self.freeze_rate_pps + 0.05)
        sac = packet("tcp", sport=SACRIFICIAL_SPORT, dport=DPORT, seq=0xFFFF)
        self.send(sac)
        self.assertEqual(self.receive_ids(OUT_PORT, 1, timeout_s=2.0), [0xFFFF],
                         "sacrificial packet did not pass")
        departed = 1
        prev = self.wait_counter(lambda c: self.port_total(c.minus(start).departures) >= 1)
        for (release, flows), want in zip(stages, expected):
            k = queued if release == ALL else release
            if k:
                departed += k
                queued -= k
                prev = self.wait_counter(
                    lambda c: self.port_total(c.minus(start).departures) >= departed,
                    timeout_s=k / self.freeze_rate_pps + 5)
                self.assertEqual(self.port_total(prev.minus(start).departures), departed,
                                 "departures before the stage")
            pkts = []
            for flow in flows:
                seq += 1
                pkts.append(bytes(self.flow_packet(flow, seq)))
            started = time.monotonic()
            for frame in pkts:
                tu.send_packet(self, SRC_HOST_PORT, frame)
            sent_s = time.monotonic() - started
            arrived = self.port_total(prev.minus(start).arrivals) + len(pkts)
            now = self.wait_counter(lambda c: self.port_total(c.minus(start).arrivals) >= arrived,
                                    timeout_s=10)
            self.assertEqual(self.port_total(now.minus(start).arrivals), arrived,
                             "not every packet reached the AQM")
            # Nothing of the queue may leave while the stage arrives (a lone packet
            # at an empty queue may: nothing after it in the stage depends on it).
            if queued or len(pkts) > 1:
                if sent_s >= 0.5 / self.freeze_rate_pps:
                    return f"stage of {len(pkts)} took {sent_s * 1e3:.1f} ms to send"
                if self.port_total(now.minus(start).departures) != departed:
                    return f"a departure during stage {flows}"
            delta = now.minus(prev)
            want_drops: dict[str, int] = {}
            for d in want:
                if d != ADMIT:
                    want_drops[d] = want_drops.get(d, 0) + 1
            self.assertEqual(delta.drop_reasons(OUT_PORT, C.CLASS_TCP), want_drops,
                             f"drops of stage {flows}")
            first = seq - len(flows) + 1
            new_ids = [first + i for i, d in enumerate(want) if d == ADMIT]
            admitted_ids += new_ids
            queued += len(new_ids)
            prev = now
        got = self.receive_ids(OUT_PORT, len(admitted_ids),
                               timeout_s=len(admitted_ids) / self.freeze_rate_pps + 5)
        bmv2_tm.set_queue_rate(self.thrift_port, OUT_PORT, 0)
        self.assertEqual(got, admitted_ids, "forwarded packets differ from the prediction")
        tu.verify_no_other_packets(self)
        self.wait_queues_empty()
        self.assert_no_flow_state(action, [f for _, flows in stages for f in flows])
        return None

    def flow_packet(self, flow: str, seq: int):
        """A TCP packet of the flow (its source address and port), IPv4 id = seq."""
        src_ip, sport = self.source_of(flow)
        pkt = packet("tcp", sport=sport, dport=DPORT, seq=seq)
        if src_ip != SRC_IP:
            pkt[IP].src = src_ip
            del pkt[IP].chksum
            del pkt[TCP].chksum
        return pkt

    def assert_no_flow_state(self, action: PolicyAction, flows: list[str]) -> None:
        """D2 left nothing behind: nactive 0, and every used slot's qlen and strike 0."""
        slots = action.params["fred_slot_mask"] + 1
        base = OUT_PORT * C.FRED_SLOTS_PER_PORT
        reads = [("fred_nactive", OUT_PORT)]
        for flow in sorted(set(flows) | {SACRIFICIAL}):
            index = base + self.slot_of(self.source_of(flow), slots)
            reads += [("fred_qlen", index), ("fred_strike", index)]
        values = bmv2_tm.register_read(self.thrift_port, reads)
        self.assertEqual({k: v for k, v in values.items() if v}, {},
                         "per-flow state left after the queue drained")


class FredMaxqStrikeTest(FredTest):
    """R1, R3, R5 and D2 (avg < min_th throughout, so no RED drop).
    Stage 1 (avg 0, maxq = min_th = 4): A x 6, B x 1. A's qlen 0..3 admitted,
    qlen 4 >= 4 twice -> 2 FRED_MAXQ (R1; strike 2); B admitted. Queue A A A A B,
    nactive 2.
    Stage 2, after 2 departures (A, A; avg = queue left = 3, A qlen 2, avgcq =
    3 / 2 = 1.5): A -> qlen 2 < maxq 4, but 2 >= 1.5 with strike 2 > 1 ->
    FRED_STRIKE (R3; strike 3). Then C x 2: qlen 0 and 1 (1 >= avgcq 3/3 = 1, but
    strike 0) -> both admitted (R5: avg 3 < min_th 4).
    Stage 3, after the queue drained (avg 0): A x 1 at an empty queue. D2 freed
    A's slot when its qlen reached 0, strike included, so A is admitted; a
    strike kept would make qlen 0 >= avgcq 0 a FRED_STRIKE."""

    def runTest(self):
        a = ADMIT
        self.check_stages({}, [
            (0, ["A"] * 6 + ["B"]),
            (2, ["A", "C", "C"]),
            (ALL, ["A"]),
        ], [
            [a, a, a, a, MAXQ, MAXQ, a],
            [STRIKE, a, a],
            [a],
        ])


class FredTwiceAvgcqTest(FredTest):
    """R2 and R6. min_th 1, max_th 2.
    Case 1, w = 1/4. Stage 1 (avg 0): F0..F9 x 1, all admitted (qlen 0 < maxq 1);
    nactive 10. Stage 2, after 1 departure (F0): avg = 0 + (9 - 0) / 4 = 2.25 >=
    max_th, so maxq = 2 (A2); nactive 9, avgcq = 0.25. F1 (qlen 1 < 2, not R1):
    1 > 2 avgcq = 0.5 -> FRED_TWICE_AVGCQ (R2). A new flow N (qlen 0: not R1-R3)
    -> RED_FORCED (R6: avg >= max_th).
    Case 2, w = 1/2: the bound is exactly twice avgcq. Stage 1: F0..F4 x 1;
    after 1 departure avg = 4 / 2 = 2 >= max_th, nactive 4, avgcq 0.5. F1: 1 > 2 *
    0.5 is false, so not R2 (nor R1: 1 < 2; nor R3: strike 0) -> RED_FORCED."""

    def runTest(self):
        flows = [f"F{i}" for i in range(10)]
        self.check_stages({"min_th_pkts": 1, "max_th_pkts": 2, "ewma_weight": 0.25}, [
            (0, flows),
            (1, ["F1", "N"]),
        ], [
            [ADMIT] * 10,
            [TWICE, FORCED],
        ])
        self.check_stages({"min_th_pkts": 1, "max_th_pkts": 2, "ewma_weight": 0.5}, [
            (0, flows[:5]),
            (1, ["F1"]),
        ], [
            [ADMIT] * 5,
            [FORCED],
        ])


class FredSingleStrikeTest(FredTest):
    """R3 needs strike > 1, and R4's robust test includes minq. min_th 2 (= maxq),
    max_th 4, max_p 1 (p_b = (avg - 2) / 2), minq 2.
    Stage 1 (avg 0): A, B, A, A, C, D. A's qlen 0, 1 admitted; qlen 2 >= maxq 2 ->
    FRED_MAXQ (strike 1). Queue A B A C D.
    Stage 2, after 2 departures (A, B): avg = 3, nactive 3 (A, C, D with one
    packet each), avgcq 1, p_b 0.5. E (new, qlen 0): R4, count 1, not robust ->
    admitted. A (qlen 1 >= avgcq 1, strike 1): not R3 (strike 1 is not > 1);
    R4 count 2, but qlen 1 < minq 2: not robust -> admitted. (Robust, count 2 *
    p_b = 1 would drop it whatever R.)"""

    def runTest(self):
        self.check_stages({"min_th_pkts": 2, "max_th_pkts": 4, "max_p": 1}, [
            (0, ["A", "B", "A", "A", "C", "D"]),
            (2, ["E", "A"]),
        ], [
            [ADMIT, ADMIT, ADMIT, MAXQ, ADMIT, ADMIT],
            [ADMIT, ADMIT],
        ])


class FredCongestedMaxqTest(FredTest):
    """A2: maxq falls to 2 packets while avg >= max_th. min_th 3, max_th 4.
    Stage 1 (avg 0, maxq 3): F0, G, G, F1..F5, all admitted (G's qlen 0, 1 < 3);
    queue 8, nactive 7.
    Stage 2, after 1 departure (F0): avg = 7 >= max_th 4, so maxq = 2. G (qlen 2
    >= 2) -> FRED_MAXQ (R1). With maxq still min_th = 3, G would pass R1 and R2
    (2 > 2 avgcq = 2 * 7 / 6 is false) and be RED_FORCED instead."""

    def runTest(self):
        self.check_stages({"min_th_pkts": 3, "max_th_pkts": 4}, [
            (0, ["F0", "G", "G", "F1", "F2", "F3", "F4", "F5"]),
            (1, ["G"]),
        ], [
            [ADMIT] * 8,
            [MAXQ],
        ])


class FredRobustEarlyDropTest(FredTest):
    """R4 and R5: only robust flows (qlen >= max(minq, avgcq)) are dropped early.
    max_p 1, so p_b = (avg - 4) / 4.
    Stage 1 (avg 0 < min_th: R5): F, A x 3, B, C, D all admitted although A
    becomes robust (qlen 2 >= max(2, 0)): below min_th nothing drops early.
    Stage 2, after 1 departure (F): avg = 6, p_b = 0.5, nactive 4.
    G (new, qlen 0): R4 counts it (count 1, R drawn) but G is not robust -> admitted.
    A (qlen 3 >= max(2, avgcq 6/5 = 1.2)): count 2, count * p_b = 1 > any R ->
    RED_EARLY (count restarts). H..M (6 new flows, qlen 0): never dropped early,
    whatever R: admitted (the queue, 12, stays below the limit)."""

    def runTest(self):
        self.check_stages({"max_p": 1}, [
            (0, ["F", "A", "A", "A", "B", "C", "D"]),
            (1, ["G", "A", "H", "I", "J", "K", "L", "M"]),
        ], [
            [ADMIT] * 7,
            [ADMIT, EARLY] + [ADMIT] * 6,
        ])


class FredQueueLimitTest(FredTest):
    """R7: the physical limit still holds. Limit 3, min_th 2, max_th 3 (avg 0):
    five single-packet flows -> 3 admitted, 2 QUEUE_LIMIT (none of R1-R6 applies)."""

    def runTest(self):
        self.check_stages({"queue_limit_pkts": 3, "min_th_pkts": 2, "max_th_pkts": 3}, [
            (0, ["A", "B", "C", "D", "E"]),
        ], [
            [ADMIT, ADMIT, ADMIT, LIMIT, LIMIT],
        ])


class FredIdleArrivalTest(FredTest):
    """A1: an arrival at an empty queue moves avg one EWMA step towards 0 (no
    idle-decay rate configured). w = 1/2, min_th 0.25, max_th 0.75.
    Stage 1 (avg 0): F0..F9 x 1 admitted. The 10 departures leave queues 9..0:
    avg = 4.5, 6.25, 6.625, 6.3125, 5.65625, 4.828125, 3.9140625, 2.95703125,
    1.978515625, 0.9892578125.
    Stage 2 (queue empty): X arrives; A1 halves avg to 0.49462890625 < max_th:
    R4 counts it, X (qlen 0) is not robust -> admitted. Without A1, avg 0.989 >=
    max_th would be a RED_FORCED drop."""

    def runTest(self):
        flows = [f"F{i}" for i in range(10)]
        self.check_stages({"min_th_pkts": 0.25, "max_th_pkts": 0.75, "ewma_weight": 0.5}, [
            (0, flows),
            (ALL, ["X"]),
        ], [
            [ADMIT] * 10,
            [ADMIT],
        ])


def colliding_sources(table_slots: int) -> tuple[tuple[str, int], ...]:
    """Two flows that share a slot although they differ in source address and port,
    and one that does not. (CRC-32 is linear: two flows that differ only in their
    source port keep sharing a slot under any change to the fields they have in
    common, such as swapping the addresses; these differ in two fields.)"""
    p = (SRC_IP, BASE_SPORT + 200)
    slot = flow_slot(p, table_slots)
    candidates = [(f"10.0.1.{h}", BASE_SPORT + 300 + k) for h in range(3, 60) for k in range(8)]
    q = next(c for c in candidates if flow_slot(c, table_slots) == slot)
    r = next(c for c in candidates if flow_slot(c, table_slots) != slot)
    return p, q, r


class FredSlotCollisionTest(FredTest):
    """The flow slot is BMv2's crc32 of the 5-tuple, masked (fred.flow_slot =
    zlib.crc32 of the 13 bytes src, dst, protocol, sport, dport). 64 slots: flows P
    and Q (from different source addresses and ports, chosen by that hash) share a
    slot, R has its own. avg 0, maxq = min_th 4.
    P, P, Q, Q admitted (the shared qlen 0..3), Q -> FRED_MAXQ (shared qlen 4);
    R admitted (its own slot, qlen 0). A hash other than the model's (another
    function, field or field order) would put P and Q apart, but for a 1 in 64
    chance, and the fifth packet would pass."""

    TABLE_SLOTS = 64

    def runTest(self):
        p, q, r = colliding_sources(self.TABLE_SLOTS)
        sources = {"P": p, "Q": q, "R": r}
        self.source_of = lambda flow: sources.get(flow) or flow_source(flow)
        self.check_stages({"fred_flow_slots": self.TABLE_SLOTS}, [
            (0, ["P", "P", "Q", "Q", "Q", "R"]),
        ], [
            [ADMIT, ADMIT, ADMIT, ADMIT, MAXQ, ADMIT],
        ])
