"""tools/tna_occupancy_heal.py: the Tofino build's occupancy counts heal. A trace
with lost reports and traffic-manager drops leaves the counts too high for ever
without the queue-empty flag, and back at the truth after the next departure
that empties the FIFO with it (p4src/tna/occupancy_tna.p4, docs/tofino.md).
FRED's per-flow counts (p4src/tna/fred_tna.p4) heal through the port's
empty-epoch: the same traces, with a flow slot per packet."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import tna_occupancy_heal as H  # noqa: E402

TRACE_CLASSES = ["tcp", "tagged", "untagged", "tcp", "untagged", "tagged", "tcp", "tcp"]


def lossy_busy_period(port: H.Port) -> None:
    """8 arrivals; 2 reports lost, one admitted packet dropped by the TM; the
    queue is not drained yet (3 packets left)."""
    for c in TRACE_CLASSES:
        port.arrive(c)
    port.depart(lost=True)        # tcp's report lost (mirror buffer full)
    port.depart()
    port.tm_drop()                # the TM drops the tail (tcp): no report
    port.depart(lost=True)        # untagged's report lost (recirculation overflow)
    port.depart()


@pytest.mark.parametrize("heal", [True, False])
def test_lost_reports_and_tm_drops_heal_at_the_next_empty_departure(heal: bool) -> None:
    port = H.Port(heal=heal)
    lossy_busy_period(port)
    # 3 packets still queued; the counts are 3 too high (2 lost reports, 1 TM drop)
    assert port.truth()["queue"] == 3
    assert port.counts.packets()["queue"] == 6
    for _ in range(3):
        port.depart()
    assert port.truth() == {"queue": 0, "fifo": 0, "tcp": 0, "tagged": 0, "untagged": 0}
    if heal:
        assert port.counts.packets() == port.truth()
    else:
        # the build before healing: wrong for ever
        assert port.counts.packets() == {"queue": 3, "fifo": 3, "tcp": 2, "tagged": 0,
                                         "untagged": 1}
    # and they stay so through more traffic that drains between packets
    for c in TRACE_CLASSES:
        port.arrive(c)
        port.depart()
    assert (port.counts.packets() == port.truth()) is heal


def test_counts_stay_exact_while_the_queue_does_not_empty() -> None:
    # without losses the flag never changes a count: reset to 0 only where -1 gives 0
    healed, plain = H.Port(heal=True), H.Port(heal=False)
    for port in (healed, plain):
        for i, c in enumerate(TRACE_CLASSES * 4):
            port.arrive(c)
            if i % 3 == 2:
                port.depart()
                port.depart()
            assert port.counts.packets() == port.truth()
        while port.fifo_q:
            port.depart()
            assert port.counts.packets() == port.truth()
    assert healed.counts == plain.counts


def test_arrivals_in_the_reports_window_are_an_undercount_that_heals_by_saturation() -> None:
    # Ingress counts 2 arrivals that have not reached the TM when the departure
    # that empties the FIFO is dequeued; its report resets the count to 0: 2 too low
    # (the bound: arrivals in the window, docs/tofino.md).
    port = H.Port()
    port.arrive("tcp")
    port.depart(delayed=True)                 # the FIFO is empty: flagged
    port.arrive("tagged", reach_tm=False)
    port.arrive("tagged", reach_tm=False)
    port.deliver()
    assert port.truth()["queue"] == 2 and port.counts.packets()["queue"] == 0
    assert port.counts.packets()["tagged"] == 0
    port.enter_tm()
    port.arrive("untagged")
    assert port.counts.packets()["queue"] == 1 < port.truth()["queue"] == 3
    # the undercount never exceeds those 2 packets, and the drain absorbs it:
    # departures at 0 saturate, and the last one resets
    while port.fifo_q:
        port.depart()
        assert port.truth()["queue"] - port.counts.packets()["queue"] in (0, 1, 2)
    assert port.counts.packets() == port.truth()


def test_chips_cut_in_departures_never_heal_their_fifo_slots_do() -> None:
    # A cut-in packet (qid 1) leaving its queue empty says nothing of the FIFO:
    # no flag. Its slot's departure from an empty FIFO heals (strict priority:
    # qid 1 is empty whenever qid 0 is served).
    port = H.Port()
    port.arrive("tcp")
    port.arrive("tagged", cut_in=True)
    port.depart()                              # the cut-in packet, qid 1 now empty
    assert port.counts.packets() == port.truth() == {"queue": 1, "fifo": 2, "tcp": 1,
                                                     "tagged": 1, "untagged": 0}
    port.counts.queue += 5 * H.AVG_ONE         # reports lost earlier
    port.counts.classes["tcp"] += 5 * H.AVG_ONE
    port.depart()                              # tcp, the slot is still behind it
    assert port.counts.packets()["queue"] == 5
    port.depart()                              # the slot empties the FIFO: heals
    assert port.counts.packets() == port.truth()
    assert port.truth()["queue"] == 0


def test_replica_matches_the_p4_source() -> None:
    # the flag and the resets the replica models are those of the P4 program
    occ = (REPO / "p4src" / "tna" / "occupancy_tna.p4").read_text()
    main = (REPO / "p4src" / "tna" / "main.p4").read_text()
    types = (REPO / "p4src" / "tna" / "tna_types.p4").read_text()
    assert "bit<1>  queue_empty;" in types
    assert main.count("eg_intr_md.deq_qdepth == 0") == 2
    assert "eg_intr_md.deq_qdepth == 0 && md.report.cut_in == 0" in main
    for reg in ("queue_heal", "tcp_pkts_heal", "tagged_pkts_heal", "untagged_pkts_heal",
                "fifo_pkts_heal"):
        assert f"{reg}.execute(port)" in occ


def test_a_port_flush_heals_when_traffic_resumes_and_drains() -> None:
    port = H.Port()
    for c in TRACE_CLASSES:
        port.arrive(c)
    port.fifo_q.clear()                        # a flush: no departures, no reports
    assert port.counts.packets()["queue"] == 8 and port.truth()["queue"] == 0
    port.arrive("tcp")                         # resumes: counted on top of the stale 8
    assert port.counts.packets()["queue"] == 9
    port.depart()                              # the FIFO is empty again: heals
    assert port.counts.packets() == port.truth()


def test_a_stale_count_at_the_limit_never_heals_in_the_data_plane() -> None:
    # The idle case the controller audit is for (docs/tofino.md): the count is at
    # the limit with the queue empty, every arrival is refused, nothing departs.
    port = H.Port(queue_limit_pkts=4)
    for c in TRACE_CLASSES[:4]:
        port.arrive(c)
    for _ in range(4):
        port.depart(lost=True)                 # the emptying report lost as well
    assert port.truth()["queue"] == 0 and port.counts.packets()["queue"] == 4
    for c in TRACE_CLASSES:
        port.arrive(c)
        assert not port.fifo_q
    assert port.counts.packets()["queue"] == 4


# ---- FRED's per-flow counts (p4src/tna/fred_tna.p4): qlen per flow slot, nactive
# per port, healed by the port's empty-epoch
FLOWS = [1, 2, 1, 3, 2, 1, 1, 3]           # a flow slot per arrival, as TRACE_CLASSES


def fred_port(heal: bool = True, **kw) -> H.Port:
    return H.Port(heal=heal, fred=H.FredFlows(), **kw)


def fred_arrive(port: H.Port, i: int, **kw) -> None:
    port.arrive(TRACE_CLASSES[i % len(TRACE_CLASSES)], flow=FLOWS[i % len(FLOWS)], **kw)


@pytest.mark.parametrize("heal", [True, False])
def test_fred_flow_counts_heal_at_the_next_empty_departure(heal: bool) -> None:
    port = fred_port(heal)
    for i in range(len(FLOWS)):
        fred_arrive(port, i)
    port.depart(lost=True)        # flow 1's report lost
    port.depart()
    port.tm_drop()                # flow 3's tail dropped by the TM: no report
    port.depart(lost=True)        # flow 1's second report lost
    assert port.fred.packets() != port.fred_truth()
    while port.fifo_q:
        port.depart()
    assert port.fred_truth() == {"flows": {}, "nactive": 0}
    if heal:
        assert port.fred.packets() == port.fred_truth()
    else:
        # the build before healing: flow 1 keeps 2 packets and flow 3 one for ever,
        # and nactive counts them (fred.p4's avgcq = avg / nactive is then too small)
        assert port.fred.packets() == {"flows": {1: 2, 3: 1}, "nactive": 2}
    # more traffic that drains between packets: flow 1's next arrival sees an empty
    # flow only with the epoch
    for i in range(len(FLOWS)):
        fred_arrive(port, i)
        assert (port.fred.packets() == port.fred_truth()) is heal
        port.depart()
        assert (port.fred.packets() == port.fred_truth()) is heal


def test_fred_counts_are_exact_with_or_without_the_epoch_when_nothing_is_lost() -> None:
    healed, plain = fred_port(True), fred_port(False)
    for port in (healed, plain):
        for i in range(4 * len(FLOWS)):
            fred_arrive(port, i)
            if i % 3 == 2:
                port.depart()
                port.depart()
            assert port.fred.packets() == port.fred_truth()
        while port.fifo_q:
            port.depart()
            assert port.fred.packets() == port.fred_truth()
    assert healed.fred.packets() == plain.fred.packets()
    assert healed.fred.epoch > 0 and plain.fred.epoch == 0


def test_fred_an_arrival_the_queue_limit_refuses_is_cancelled_in_its_flow() -> None:
    port = fred_port(queue_limit_pkts=2)
    for _ in range(3):
        port.arrive("tcp", flow=7)              # the third is refused: counted, cancelled
    assert port.fred.packets() == port.fred_truth() == {"flows": {7: 2}, "nactive": 1}


def test_fred_arrivals_in_the_reports_window_are_forgotten_then_absorbed() -> None:
    # flow 5 arrives (counted) while the report of the departure that emptied the
    # FIFO is in flight: the report's epoch forgets it (undercount of 1 in its
    # flow, nactive 0), its own report later finds the slot stale and reads 0
    port = fred_port()
    port.arrive("tcp", flow=4)
    port.depart(delayed=True)                   # flagged: the FIFO is empty
    port.arrive("tcp", flow=5, reach_tm=False)
    port.deliver()
    assert port.fred_truth() == {"flows": {5: 1}, "nactive": 1}
    assert port.fred.packets() == {"flows": {}, "nactive": 0}
    port.enter_tm()
    port.arrive("tcp", flow=5)                  # reads 0: joins again
    assert port.fred.packets() == {"flows": {5: 1}, "nactive": 1}
    assert port.fred_truth() == {"flows": {5: 2}, "nactive": 1}
    port.depart()                               # the forgotten packet: its flow's 1 -> 0
    assert port.fred.packets() == {"flows": {}, "nactive": 0}
    port.depart()                               # flagged: stale slot reads 0, stays 0
    assert port.fred.packets() == port.fred_truth() == {"flows": {}, "nactive": 0}


def test_fred_a_stale_slot_reads_again_only_after_2_16_empties_and_heals_at_the_next() -> None:
    # The epoch is 16 bits: a slot a lost report left at 1 reads 0 from the next
    # empty departure on, except in the epoch that wraps onto its own (every 2^16
    # empties), and a later empty departure clears it again.
    port = fred_port()
    port.arrive("tcp", flow=9)
    port.depart(lost=True)                      # the emptying report itself is lost
    assert port.fred.qlen(9) == 1 and port.fred_truth()["flows"] == {}
    stale = []
    for n in range(1, (1 << H.FRED_EPOCH_BITS) + 2):
        port.arrive("tcp", flow=10)
        port.depart()                           # empties: the epoch advances
        if port.fred.qlen(9):
            stale.append(n)
    assert stale == [1 << H.FRED_EPOCH_BITS]
    assert port.fred.qlen(9) == 0


def test_fred_replica_matches_the_p4_source() -> None:
    fred = (REPO / "p4src" / "tna" / "fred_tna.p4").read_text()
    main = (REPO / "p4src" / "tna" / "main.p4").read_text()
    types = (REPO / "p4src" / "tna" / "tna_types.p4").read_text()
    # the slot: {qlen, epoch}, 16 bits each; the port's epoch register
    slot = types[types.index("struct tna_fred_slot_t {"):]
    assert slot[:slot.index("}")].split()[3:] == ["bit<16>", "qlen;", "bit<16>", "epoch;"]
    assert H.FRED_EPOCH_BITS == 16
    assert "Register<bit<16>, tna_index_t>(NUM_PORTS, 0) fred_port_epoch;" in fred
    # (the flagged report reads the epoch before the +1: it is handled in the old one)
    assert "void apply(inout bit<16> value, out bit<16> epoch) { epoch = value; value = value + 1; }" in fred
    # the epoch advances on a flagged report (the parser's copy of its queue_empty)
    assert re.search(r"0 : read_epoch\(\);\s*1 : advance_epoch\(\);", fred)
    assert "md.report_empty = hdr.report.queue_empty;" in main
    # a slot of another epoch reads 0: at an arrival (then 1) and at a report (then 0)
    arrive = fred[fred.index("qlen_arrive = {"):fred.index("qlen_leave = {")]
    leave = fred[fred.index("qlen_leave = {"):fred.index("fred_nactive) nactive_join")]
    for body, fresh in ((arrive, "value.qlen = 1;"), (leave, "value.qlen = 0;")):
        assert "if (value.epoch == md.fred_epoch) {" in body
        assert re.search(r"\} else \{\s*\w+ = 0;[^\n]*\n\s*" + re.escape(fresh), body)
        assert "value.epoch = md.fred_epoch;" in body
    # nactive: a flagged report sets it to 0, before a report's part (D2)
    entries = re.findall(r"^\s*\((\w+), (\w+), (\w+), (\w+)\) : (\w+)\(\);", fred, re.M)
    assert entries == [("false", "_", "0", "_", "join"), ("false", "_", "_", "_", "read"),
                       ("true", "1", "_", "_", "heal"), ("true", "_", "_", "1", "part")]
    assert "void apply(inout bit<16> value) { value = 0; }" in fred
    # the epoch is read beside the slot's hash, before the AQM (qlen's stage after it)
    assert main.index("fred_epoch.apply(md);") < main.index("aqm.apply(")
    assert main.index("fred_slot.apply();") < main.index("fred_epoch.apply(md);")


def test_fred_the_flows_last_packet_that_empties_the_queue_still_ends_the_flow() -> None:
    # The flagged report is handled in the epoch its packet was counted in: the
    # flow's qlen before it is 1, so D2 clears the flow's strike count (fred.p4),
    # as it does for a last packet that leaves other packets behind.
    flows = H.FredFlows()
    assert flows.arrive(3) == 0 and flows.arrive(3) == 1
    assert flows.report(3, queue_empty=False) == 2
    assert flows.report(3, queue_empty=True) == 1          # D2: strike cleared
    assert flows.packets() == {"flows": {}, "nactive": 0} and flows.epoch == 1
    # and a stale slot never passes for a flow's last packet: it reads 0
    flows.arrive(4)
    flows.epoch += 1                                        # emptied, its report lost
    assert flows.report(4, queue_empty=False) == 0
