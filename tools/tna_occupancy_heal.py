"""Replica of the Tofino build's occupancy arithmetic (p4src/tna/occupancy_tna.p4)
with its healing, and a one-port traffic-manager model to replay packet traces.

Ingress owns the counts (scaled: AVG_ONE a packet): +1 at an admitted arrival,
-1 (saturating at 0) when a departure report, a ChIPS FIFO slot's report or a
cancel comes back. Egress flags a report whose departure left the FIFO (qid 0)
empty (deq_qdepth == 0, a cut-in packet's never); ingress applying a flagged
report sets the port's queue, class and virtual-FIFO counts to 0. The model's
deq_qdepth is the depth the departure leaves behind (docs/tofino.md,
"Counts that heal").

FRED's build (p4src/tna/fred_tna.p4) also counts per flow slot (qlen, at every
arrival; a departure or cancel report undoes one) and per port (nactive, the
slots with qlen > 0). A flagged report cannot clear every slot of its port in
one pass: it advances the port's empty-epoch (16 bits, wrapping) and sets
nactive to 0; each slot keeps the epoch of its last access beside its qlen, and
a slot of another epoch reads as qlen 0 (and is rewritten at that access).
``FredFlows`` replicates that; ``Port(fred=True)`` drives it with the same
trace as the occupancy counts.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "control-plane"))
from mmaqm.fixedpoint import AVG_ONE  # noqa: E402

CLASSES = ("tcp", "tagged", "untagged")
DEPARTURE, SLOT, CANCEL = "departure", "slot", "cancel"   # tna_types.p4 TNA_PKT_*


FRED_EPOCH_BITS = 16      # fred_tna.p4: tna_fred_slot_t.epoch, fred_port_epoch
FRED_QLEN_MAX = (1 << 16) - 1


@dataclass
class Report:
    """tna_report_h, the fields occupancy and FRED read."""
    kind: str
    class_id: str
    cut_in: bool = False
    counted: bool = True
    queue_empty: bool = False
    flow: int | None = None        # fred_slot_index (FRED's build)


@dataclass
class FredFlows:
    """One port's FRED state of fred_tna.p4: fred_port_epoch, fred_nactive and
    the fred_qlen slots ({slot: [qlen, epoch]}). heal=False is the build before
    healing (no epoch: the slots and nactive only count)."""
    heal: bool = True
    epoch: int = 0
    nactive: int = 0
    slots: dict = field(default_factory=dict)

    def qlen(self, slot: int) -> int:
        """What the slot reads as: its qlen in the port's epoch, else 0."""
        qlen, epoch = self.slots.get(slot, (0, 0))
        return qlen if epoch == self.epoch else 0

    def packets(self) -> dict:
        """{slot: qlen} of the slots that read above 0, and nactive."""
        flows = {slot: self.qlen(slot) for slot in self.slots if self.qlen(slot)}
        return {"flows": flows, "nactive": self.nactive}

    def arrive(self, slot: int) -> int:
        """TnaFredEpoch's read, qlen_arrive, fred_nactive_count's join / read;
        the qlen the arrival saw."""
        seen = self.qlen(slot)
        self.slots[slot] = [min(seen + 1, FRED_QLEN_MAX), self.epoch]
        if seen == 0:
            self.nactive += 1                               # join (A3)
        return seen

    def report(self, slot: int, queue_empty: bool) -> int:
        """A departure or cancel report: TnaFredEpoch (a flagged report advances
        the epoch but is itself handled in the old one), qlen_leave, then nactive
        (heal before part). The qlen before it: 1 for a flow's last packet, when
        D2 clears its strike count."""
        empty = self.heal and queue_empty
        before = self.qlen(slot)
        self.slots[slot] = [max(before - 1, 0), self.epoch]
        if empty:
            self.epoch = (self.epoch + 1) % (1 << FRED_EPOCH_BITS)
            self.nactive = 0                                # nactive_heal
        elif before == 1 and self.nactive != 0:
            self.nactive -= 1                               # part (D2)
        return before


@dataclass
class Counts:
    """One port's registers of occupancy_tna.p4 (queue_pkts, the three class
    registers, D-CBT's fifo_pkts), in scaled_t."""
    queue: int = 0
    classes: dict = field(default_factory=lambda: {c: 0 for c in CLASSES})
    fifo: int = 0

    def packets(self) -> dict:
        out = {"queue": self.queue // AVG_ONE, "fifo": self.fifo // AVG_ONE}
        out.update({c: v // AVG_ONE for c, v in self.classes.items()})
        return out

    def arrive(self, class_id: str, queue_limit_pkts: int) -> bool:
        """queue_arrive and the class / FIFO arrive actions: counted below the limit."""
        if self.queue >= queue_limit_pkts * AVG_ONE:
            return False
        self.queue += AVG_ONE
        self.classes[class_id] += AVG_ONE
        self.fifo += AVG_ONE
        return True

    def apply(self, report: Report, heal: bool = True) -> None:
        """occupancy_tna.p4's report branch; heal=False is the build before healing."""
        if heal and report.queue_empty:
            self.queue = 0
            self.classes = {c: 0 for c in CLASSES}
            self.fifo = 0
            return
        total = report.kind == DEPARTURE or (report.kind == CANCEL and report.counted)
        per_class = (report.kind == SLOT or (report.kind == CANCEL and report.counted)
                     or (report.kind == DEPARTURE and not report.cut_in))
        if total:
            self.queue = max(0, self.queue - AVG_ONE)
        if per_class:
            self.classes[report.class_id] = max(0, self.classes[report.class_id] - AVG_ONE)
            self.fifo = max(0, self.fifo - AVG_ONE)


@dataclass
class Port:
    """One egress port: the TM's FIFO (qid 0) and cut-in queue (qid 1, strict
    priority), the reports in flight back to ingress, and ingress's counts.

    Entries of a queue are (class_id, kind) with kind "pkt" or "slot" (ChIPS's
    clone that holds a cut-in packet's FIFO place)."""
    heal: bool = True
    queue_limit_pkts: int = 1000
    counts: Counts = field(default_factory=Counts)
    fifo_q: list = field(default_factory=list)
    cut_in_q: list = field(default_factory=list)
    in_flight: list = field(default_factory=list)       # reports not yet applied
    to_tm: list = field(default_factory=list)           # counted, not yet enqueued
    fred: FredFlows | None = None                       # FRED's build: per-flow state

    def __post_init__(self) -> None:
        if self.fred is not None:
            self.fred.heal = self.heal

    def arrive(self, class_id: str, cut_in: bool = False, reach_tm: bool = True,
               flow: int | None = None) -> None:
        """An arrival (of flow slot `flow` in FRED's build); reach_tm=False leaves it
        between ingress and the TM (enter_tm() enqueues it). FRED's build counts
        every arrival's qlen, and a cancel undoes one the queue limit refused."""
        if self.fred is not None:
            self.fred.arrive(flow)
        if not self.counts.arrive(class_id, self.queue_limit_pkts):
            if self.fred is not None:
                self.fred.report(flow, queue_empty=False)    # the cancel (resubmit)
            return
        self.to_tm.append((class_id, cut_in, flow))
        if reach_tm:
            self.enter_tm()

    def enter_tm(self) -> None:
        for class_id, cut_in, flow in self.to_tm:
            if cut_in:
                self.cut_in_q.append((class_id, "pkt", flow))
                self.fifo_q.append((class_id, "slot", flow))
            else:
                self.fifo_q.append((class_id, "pkt", flow))
        self.to_tm = []

    def tm_drop(self) -> None:
        """The TM drops the FIFO's tail, an admitted packet: no report ever."""
        self.fifo_q.pop()

    def depart(self, lost: bool = False, delayed: bool = False) -> None:
        """The TM serves qid 1 first, then qid 0; egress reports the departure
        (lost: the mirror buffer or the recirculation port drops the report;
        delayed: it is applied only at deliver())."""
        if self.cut_in_q:
            class_id, _, flow = self.cut_in_q.pop(0)
            report = Report(DEPARTURE, class_id, cut_in=True, flow=flow)
        else:
            class_id, kind, flow = self.fifo_q.pop(0)
            # egress: deq_qdepth == 0 (the FIFO left empty), not a cut-in packet
            report = Report(SLOT if kind == "slot" else DEPARTURE, class_id,
                            cut_in=kind == "slot", queue_empty=not self.fifo_q, flow=flow)
        if lost:
            return
        self.in_flight.append(report)
        if not delayed:
            self.deliver()

    def deliver(self) -> None:
        for report in self.in_flight:
            self.counts.apply(report, heal=self.heal)
            if self.fred is not None and report.kind != SLOT:
                self.fred.report(report.flow, report.queue_empty)
        self.in_flight = []

    def truth(self) -> dict:
        """What the counts should be: packets ingress counted that have not left
        (the queue total), and the FIFO's entries per class (slots included)."""
        out = {"queue": len(self.cut_in_q) + sum(1 for _, k, _ in self.fifo_q if k == "pkt")
               + len(self.to_tm),
               "fifo": len(self.fifo_q) + len(self.to_tm)}
        for c in CLASSES:
            out[c] = (sum(1 for cl, _, _ in self.fifo_q if cl == c)
                      + sum(1 for cl, _, _ in self.to_tm if cl == c))
        return out

    def fred_truth(self) -> dict:
        """What FRED's state should be: per flow slot, its packets ingress counted
        that have not left, and nactive, the slots holding any."""
        flows: dict = {}
        for _, kind, flow in [*self.cut_in_q, *self.fifo_q, *self.to_tm]:
            if kind == "pkt" or isinstance(kind, bool):
                flows[flow] = flows.get(flow, 0) + 1
        return {"flows": flows, "nactive": len(flows)}
