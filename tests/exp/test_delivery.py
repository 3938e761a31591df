"""Did every packet get where the run says it went? The UDP arrival check (senders'
counts against the first switch's AQM arrivals) and the delay elements' kernel drops,
on hand-built inputs whose every number is worked out here.

The dumbbell (topologies/topos/dcbt-dumbbell.json): mm1, cbr1 on r1 (ports 2, 3),
r1 port 4 -> r2 (the bottleneck), mm2, cbr2 on r2 (ports 3, 4), r2 port 1 -> r1.
"""

from __future__ import annotations

import json
from pathlib import Path

from mmt_testenv import TOPO

from mmaqm_exp import analysis
from mmaqm_exp.analysis import UdpStream
from mmaqm_exp.network import parse_nfnetlink_queue, parse_snmp
from mmaqm_exp.scenario import parse_scenario
from mmaqm_exp.topology import load_topology
from mmaqm_exp.traffic import TrafficResult, UdpSenderFiles, UdpSinkFiles

DUMBBELL = load_topology(TOPO / "topos" / "dcbt-dumbbell.json")
T0 = 1_700_000_000_000_000_000
S = 1_000_000_000


def test_switch_hops_follow_the_routes():
    assert DUMBBELL.switch_hops("mm1", "mm2") == (("r1", 4), ("r2", 3))
    assert DUMBBELL.switch_hops("mm2", "mm1") == (("r2", 1), ("r1", 2))
    assert DUMBBELL.switch_hops("mm1", "cbr1") == (("r1", 3),)     # same switch: one hop
    assert DUMBBELL.switch_hops("mm1", "mm1") == ()


def _stream(label, cls, packets, first, later=(), errors=0):
    return UdpStream(label, cls, packets, errors, frozenset(first), frozenset(later))


def test_expected_arrivals_are_per_first_hop_and_class():
    streams = [
        _stream("flow 1", "TAGGED", 100, [("r1", 4)], [("r2", 3)], errors=2),
        _stream("flow 2", "TAGGED", 50, [("r1", 4)], [("r2", 3)]),
        _stream("flow 3", "UNTAGGED", 700, [("r1", 4)], [("r2", 4)]),
        _stream("feedback of mm2", "TAGGED", 30, [("r2", 1)], [("r1", 2)]),
    ]
    assert analysis.udp_expected_arrivals(streams) == {
        ("r1", 4, "TAGGED"): {"sent_pkts": 150, "send_errors_pkts": 2,
                              "streams": ["flow 1", "flow 2"]},
        ("r1", 4, "UNTAGGED"): {"sent_pkts": 700, "send_errors_pkts": 0, "streams": ["flow 3"]},
        ("r2", 1, "TAGGED"): {"sent_pkts": 30, "send_errors_pkts": 0,
                              "streams": ["feedback of mm2"]},
    }


def test_a_first_hop_reached_from_further_away_or_with_an_unknown_count_is_not_checked():
    streams = [
        _stream("flow 1", "TAGGED", 100, [("r1", 4)], [("r2", 3)]),
        # a remote tagged stream also crosses r1 port 4: r1's count there is not flow 1's alone
        _stream("flow 9", "TAGGED", 10, [("r0", 1)], [("r1", 4)]),
        # an untagged one does not matter for the tagged class, but its count is unknown
        _stream("flow 3", "UNTAGGED", None, [("r1", 4)], [("r2", 4)]),
        # one receiver answering senders behind two ports: its total cannot be split
        _stream("feedback of h", "TAGGED", 40, [("r2", 1), ("r2", 5)]),
    ]
    assert analysis.udp_expected_arrivals(streams) == {
        ("r0", 1, "TAGGED"): {"sent_pkts": 10, "send_errors_pkts": 0, "streams": ["flow 9"]}}


def _sample(switch, t_s, arrivals, discards=0):
    """arrivals: {(port, class): packets}; the ingress discards on port 1."""
    return {"switch": switch, "t_ns": T0 + int(t_s * S),
            "readings": [{"port": p, "class": c, "arrivals": {"packets": n, "bytes": 1000 * n}}
                         for (p, c), n in sorted(arrivals.items())],
            "ingress_discards": {"1": discards}}


# r1 before the traffic (t = -1 s: 3 tagged packets of an earlier run), during it, and
# after the drain (t = 11 s). r2 has no sample after the drain.
SAMPLES = [
    _sample("r1", -1.0, {(4, "TAGGED"): 3, (4, "UNTAGGED"): 0}, discards=1),
    _sample("r2", -1.0, {(1, "TAGGED"): 0}),
    _sample("r1", 5.0, {(4, "TAGGED"): 80, (4, "UNTAGGED"): 300}, discards=1),
    _sample("r1", 10.0, {(4, "TAGGED"): 150, (4, "UNTAGGED"): 699}, discards=1),
    _sample("r1", 11.0, {(4, "TAGGED"): 153, (4, "UNTAGGED"): 699}, discards=2),
    _sample("r2", 9.0, {(1, "TAGGED"): 30}),
]
EXPECTED = {
    ("r1", 4, "TAGGED"): {"sent_pkts": 150, "send_errors_pkts": 0, "streams": ["flow 1", "flow 2"]},
    ("r1", 4, "UNTAGGED"): {"sent_pkts": 700, "send_errors_pkts": 0, "streams": ["flow 3"]},
    ("r2", 1, "TAGGED"): {"sent_pkts": 30, "send_errors_pkts": 0, "streams": ["feedback of mm2"]},
}


def test_udp_arrival_check_counts_from_before_the_traffic_to_after_the_drain():
    check = analysis.udp_arrival_check(EXPECTED, SAMPLES, T0 - S // 2, T0 + 10 * S + S // 2)
    tagged, untagged, feedback = check["checks"]
    # 153 - 3 = 150 arrivals: exact, although the sample at 10 s (before the drain) also had 150
    assert (tagged["checked"], tagged["arrivals_pkts"], tagged["difference_pkts"]) == (True, 150, 0)
    assert tagged["samples_t_ns"] == [T0 - S, T0 + 11 * S]
    # 699 of 700 arrived; one packet of any class was discarded before the AQM meanwhile
    assert (untagged["arrivals_pkts"], untagged["difference_pkts"],
            untagged["discards_before_aqm_pkts"]) == (699, 1, 1)
    assert feedback == {"switch": "r2", "port": 1, "class": "TAGGED", **EXPECTED[("r2", 1, "TAGGED")],
                        "checked": False, "why": "no counter sample after the network drained"}
    assert check["tolerance_pkts"] == analysis.UDP_ARRIVAL_TOLERANCE_PKTS == 0
    warnings = analysis.udp_arrival_warnings(check)
    assert warnings == [
        "UDP packets sent toward r1 port 4 UNTAGGED (flow 3): 700, counted arriving there 699 "
        "(difference +1; 1 packets of any class discarded before the AQM at r1)",
        "UDP arrivals at r2 port 1 TAGGED not checked: no counter sample after the network drained",
    ]


def test_udp_arrival_check_without_a_sample_before_the_traffic():
    check = analysis.udp_arrival_check({("r1", 4, "TAGGED"): EXPECTED[("r1", 4, "TAGGED")]},
                                       SAMPLES, T0 - 2 * S, T0 + 10 * S)
    assert check["checks"][0]["why"] == "no counter sample before the traffic"


def test_send_errors_and_host_drops_are_warnings_too():
    exact = {("r1", 4, "TAGGED"): {**EXPECTED[("r1", 4, "TAGGED")], "send_errors_pkts": 4}}
    check = analysis.udp_arrival_check(exact, SAMPLES, T0 - S // 2, T0 + 10 * S + S // 2)
    assert check["checks"][0]["difference_pkts"] == 0
    assert analysis.udp_arrival_warnings(check, {"mm1": 0, "cbr1": 7}) == [
        "UDP senders to r1 port 4 TAGGED failed to send 4 packets (ENOBUFS etc.)",
        "host cbr1: the kernel dropped 7 UDP datagrams after the sender handed them over "
        "(Udp SndbufErrors)",
    ]


def test_udp_streams_from_the_programs_final_counts(tmp_path: Path):
    sc = parse_scenario({
        "name": "s", "duration_s": 10, "phases": [{"name": "a", "start_s": 0, "end_s": 10}],
        "flows": [{"kind": "mmapp", "count": 2, "src": "mm1", "dst": "mm2"},
                  {"kind": "cbr", "count": 1, "src": "cbr1", "dst": "cbr2", "rate_kbps": 1000}]})
    senders = [UdpSenderFiles(f.flow_id, f.group, f.kind, None, f"s{f.flow_id}.csv",
                              f"s{f.flow_id}.out") for f in sc.flows]
    sinks = [UdpSinkFiles("mm2", 5001, [1, 2], "r.csv", "mm2.out"),
             UdpSinkFiles("cbr2", 5002, [3], "r2.csv", "cbr2.out")]
    res = TrafficResult(tmp_path, T0, sc, None, [], sinks, senders)
    for us, (sent, errors) in zip(senders, [(100, 0), (60, 2), (900, 0)]):
        # a live line first: only the final JSON line counts
        (tmp_path / us.out_json).write_text(
            '{"live": true, "sent": 1}\n' + json.dumps({"sent": sent, "send_errors": errors}) + "\n")
    (tmp_path / "mm2.out").write_text(json.dumps({"role": "recv", "feedback_sent": 33}) + "\n")
    (tmp_path / "cbr2.out").write_text(json.dumps({"role": "recv", "feedback_sent": 0}) + "\n")
    streams = analysis.udp_streams(res, DUMBBELL.switch_hops, sc.tagged_dscp, 46)
    assert [(s.label, s.cls, s.packets, s.send_errors, set(s.first_hops), set(s.later_hops))
            for s in streams] == [
        ("flow 1", "TAGGED", 100, 0, {("r1", 4)}, {("r2", 3)}),
        ("flow 2", "TAGGED", 58, 2, {("r1", 4)}, {("r2", 3)}),
        ("flow 3", "UNTAGGED", 900, 0, {("r1", 4)}, {("r2", 4)}),
        ("feedback of mm2", "TAGGED", 33, 0, {("r2", 1)}, {("r1", 2)}),   # cbr2 sends none
    ]
    # feedback with a DSCP outside tagged_dscp is untagged
    assert analysis.udp_streams(res, DUMBBELL.switch_hops, sc.tagged_dscp, 0)[-1].cls == "UNTAGGED"


# ------------------------------------------------------------------ delay elements

NFQUEUE_TEXT = ("   10 3216721407     0 2 65531     0     0    48213  1\n"
                "   11 3216721408     3 2 65531    12     5     9000  1\n")


def test_parse_nfnetlink_queue():
    assert parse_nfnetlink_queue(NFQUEUE_TEXT) == {
        10: {"peer_portid": 3216721407, "queue_total": 0, "copy_mode": 2, "copy_range": 65531,
             "queue_dropped": 0, "user_dropped": 0, "id_sequence": 48213},
        11: {"peer_portid": 3216721408, "queue_total": 3, "copy_mode": 2, "copy_range": 65531,
             "queue_dropped": 12, "user_dropped": 5, "id_sequence": 9000},
    }
    assert parse_nfnetlink_queue("") == {}


def test_delay_drops_are_deltas_and_warn_only_when_they_grew():
    before = {"mm2-30ms": {"queue_dropped": 0, "user_dropped": 0, "id_sequence": 100},
              "tcp2-30ms": {"queue_dropped": 12, "user_dropped": 5, "id_sequence": 1000},
              "gone-1ms": {"queue_dropped": 0, "user_dropped": 0, "id_sequence": 0}}
    after = {"mm2-30ms": {"queue_dropped": 0, "user_dropped": 0, "id_sequence": 20100},
             "tcp2-30ms": {"queue_dropped": 15, "user_dropped": 5, "id_sequence": 61000},
             "new-1ms": {"queue_dropped": 9, "user_dropped": 0, "id_sequence": 9}}
    deltas = analysis.counter_deltas(before, after)
    assert deltas == {"mm2-30ms": {"queue_dropped": 0, "user_dropped": 0, "id_sequence": 20000},
                      "tcp2-30ms": {"queue_dropped": 3, "user_dropped": 0, "id_sequence": 60000}}
    assert analysis.delay_drop_warnings(deltas) == [
        "delay element tcp2-30ms lost packets in the kernel: queue_dropped 3 of 60000 queued"]


def test_parse_snmp():
    text = ("Ip: Forwarding DefaultTTL\nIp: 2 64\n"
            "Icmp: InMsgs OutMsgs OutDestUnreachs\nIcmp: 0 4 4\n"
            "IcmpMsg: OutType3\nIcmpMsg: 4\n"
            "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\n"
            "Udp: 57 0 0 58 0 3\n"
            "Tcp: RtoAlgorithm MaxConn\nTcp: 1 -1\n")
    assert parse_snmp(text) == {
        "Ip": {"Forwarding": 2, "DefaultTTL": 64},
        "Icmp": {"InMsgs": 0, "OutMsgs": 4, "OutDestUnreachs": 4},
        "IcmpMsg": {"OutType3": 4},
        "Udp": {"InDatagrams": 57, "NoPorts": 0, "InErrors": 0, "OutDatagrams": 58,
                "RcvbufErrors": 0, "SndbufErrors": 3},
        "Tcp": {"RtoAlgorithm": 1, "MaxConn": -1}}
    assert parse_snmp("") == {}


def test_icmp_is_an_untagged_stream_toward_the_hosts_udp_peers():
    sc = parse_scenario({
        "name": "s", "duration_s": 10, "phases": [{"name": "a", "start_s": 0, "end_s": 10}],
        "flows": [{"kind": "mmapp", "count": 1, "src": "mm1", "dst": "mm2"},
                  {"kind": "tcp", "count": 1, "src": "tcp1", "dst": "tcp2"}]})
    hosts = list(DUMBBELL.hosts)
    streams = analysis.icmp_streams({"mm1": 4, "mm2": 0, "tcp1": 2}, sc, hosts,
                                    DUMBBELL.switch_hops)
    # mm1 answers feedback from mm2 (port unreachable after its sender exited): r1 port 4
    assert (streams[0].label, streams[0].cls, streams[0].packets, set(streams[0].first_hops),
            set(streams[0].later_hops)) == ("ICMP of mm1", "UNTAGGED", 4, {("r1", 4)}, {("r2", 3)})
    # tcp1 has no UDP peer: any host, so its 2 messages cannot be placed
    assert streams[1].label == "ICMP of tcp1" and len(streams[1].first_hops) == 3
    assert len(streams) == 2                                   # mm2 sent none
    data = _stream("flow 1", "UNTAGGED", 100, [("r1", 4)], [("r2", 3)])
    assert analysis.udp_expected_arrivals([data, streams[0]]) == {
        ("r1", 4, "UNTAGGED"): {"sent_pkts": 104, "send_errors_pkts": 0,
                                "streams": ["flow 1", "ICMP of mm1"]}}
    assert analysis.udp_expected_arrivals([data, *streams]) == {}


def test_c_uptas_bfd_ports_leave_the_untagged_class_unchecked_and_the_tagged_checked():
    """C-UPTA's probes and reports (ICMP from the routers, UNTAGGED) cross the
    router-facing ports in numbers no host counts: the UNTAGGED arrivals there are
    not the streams' alone (a C_UPTA run used to warn of 32-40 packets too many)."""
    streams = [
        _stream("video", "TAGGED", 150, [("r2", 3)], [("r3", 2)]),
        _stream("background", "UNTAGGED", 700, [("r2", 3)], [("r3", 2)]),
        _stream("local", "UNTAGGED", 50, [("r2", 1)]),
    ]
    assert analysis.udp_expected_arrivals(streams, [("r2", 3), ("r3", 2)]) == {
        ("r2", 1, "UNTAGGED"): {"sent_pkts": 50, "send_errors_pkts": 0, "streams": ["local"]},
        ("r2", 3, "TAGGED"): {"sent_pkts": 150, "send_errors_pkts": 0, "streams": ["video"]},
    }
    assert ("r2", 3, "UNTAGGED") in analysis.udp_expected_arrivals(streams)


def test_bfd_probes_and_reports_are_not_counted_as_the_hosts_untagged_arrivals():
    """A program that counts the QoS Probes and Reports reaching each port's AQM
    (bfd_arrivals, upta §5.3) has them left out of the UNTAGGED arrivals: the
    background's 700 packets and 37 BFD messages at r2 port 3 (the class counter's
    737) check exactly (difference 0, bfd_pkts 37); the TAGGED class is untouched.
    Without the subtraction the same samples gave the false "37 packets too many"."""
    def sample(t_s, untagged, tagged, bfd):
        s = _sample("r2", t_s, {(3, "UNTAGGED"): untagged, (3, "TAGGED"): tagged})
        s["bfd_arrivals"] = {"3": bfd, "2": 5}
        return s
    samples = [sample(-1.0, 10, 0, 4), sample(11.0, 10 + 700 + 37, 150, 4 + 37)]
    assert analysis.samples_count_bfd(samples)
    assert not analysis.samples_count_bfd(SAMPLES)
    expected = {("r2", 3, "UNTAGGED"): {"sent_pkts": 700, "send_errors_pkts": 0,
                                        "streams": ["background"]},
                ("r2", 3, "TAGGED"): {"sent_pkts": 150, "send_errors_pkts": 0,
                                      "streams": ["video"]}}
    check = analysis.udp_arrival_check(expected, samples, T0, T0 + 10 * S)
    untagged, tagged = check["checks"]
    assert (untagged["arrivals_pkts"], untagged["difference_pkts"], untagged["bfd_pkts"]) \
        == (700, 0, 37)
    assert (tagged["arrivals_pkts"], tagged["difference_pkts"]) == (150, 0)
    assert "bfd_pkts" not in tagged
    assert analysis.udp_arrival_warnings(check) == []
    for s in samples:
        del s["bfd_arrivals"]
    old = analysis.udp_arrival_check(expected, samples, T0, T0 + 10 * S)
    assert old["checks"][0]["difference_pkts"] == -37
    assert analysis.udp_arrival_warnings(old)
