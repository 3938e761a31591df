"""MM_APP sender/receiver: wire format and flow-control logic (unit), then a real
run between two network namespaces (root only)."""

from __future__ import annotations

import json
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

import mmt_testenv

from mmaqm_exp import metrics, samples
from mmaqm_exp.mmapp import (
    DATA_HDR,
    DEFAULT_SIZE,
    IP_UDP_OVERHEAD,
    DataHeader,
    Feedback,
    FlowControl,
    RecvFlowState,
)
from mmaqm_exp.netns import missing_prereqs, ns_pair

# --------------------------------------------------------------------------- unit


def test_wire_format_roundtrip_and_sizes():
    h = DataHeader(flow_id=7, seq=2**40 + 3, send_ts_ns=1_700_000_000_123_456_789, scale=4,
                   rate_kbps=1100, srtt_us=60000, flags=0)
    buf = h.pack()
    assert len(buf) == DATA_HDR.size == 36
    assert DataHeader.unpack(buf + bytes(100)) == h
    assert DataHeader.unpack(b"XXXX" + buf[4:]) is None  # wrong magic
    fb = Feedback(7, 99, 90, 9, 97, 123, 456)
    assert Feedback.unpack(fb.pack()) == fb
    assert DataHeader.unpack(fb.pack()) is None  # a feedback is not data
    # a 1000-byte IPv4 datagram carries 972 bytes of UDP payload
    assert DEFAULT_SIZE - IP_UDP_OVERHEAD == 972


def test_flow_control_up_one_per_rtt_and_cut_half_on_loss():
    fc = FlowControl(n_scales=5, scale=0, now=0.0)
    # first feedback: srtt := 0.05; 0.1 s since the last change >= srtt -> up
    assert fc.on_feedback(0.10, next_seq=5, rtt_sample=0.05, last_lost_seq=-1) == "up"
    assert fc.scale == 1 and fc.srtt == pytest.approx(0.05)
    # 0.02 s later: less than one RTT since the change -> no increase
    assert fc.on_feedback(0.12, 6, 0.05, -1) == "fb"
    assert fc.scale == 1
    # one RTT later each time -> up by one, capped at the top scale (4)
    for t, want in ((0.16, 2), (0.22, 3), (0.28, 4), (0.34, 4)):
        fc.on_feedback(t, 10, 0.05, -1)
        assert fc.scale == want
    # loss of seq 7 (sent after the initial cut_seq 0) -> halve 4 -> 2
    assert fc.on_feedback(0.35, next_seq=20, rtt_sample=0.05, last_lost_seq=7) == "cut"
    assert fc.scale == 2 and fc.cut_seq == 20
    # another loss from before the cut (seq 15 < 20): same congestion event, ignored
    assert fc.on_feedback(0.36, 21, 0.05, 15) == "fb"
    assert fc.scale == 2
    # a loss of a packet sent after the cut -> halve again 2 -> 1, then 1 -> 0, 0 -> 0
    assert fc.on_feedback(0.37, 30, 0.05, 20) == "cut" and fc.scale == 1
    assert fc.on_feedback(0.38, 40, 0.05, 35) == "cut" and fc.scale == 0
    assert fc.on_feedback(0.39, 50, 0.05, 45) == "cut" and fc.scale == 0
    # RTT smoothing: srtt = 7/8 srtt + 1/8 sample
    fc2 = FlowControl(5, 0, 0.0)
    fc2.on_feedback(0.0, 0, 0.08, -1)
    fc2.on_feedback(0.0, 0, 0.16, -1)
    assert fc2.srtt == pytest.approx(0.875 * 0.08 + 0.125 * 0.16)  # 0.09


def test_flow_control_feedback_silence_counts_as_loss():
    fc = FlowControl(n_scales=5, scale=4, now=0.0, fb_timeout_s=1.0)
    assert not fc.check_timeout(0.99, 10)
    assert fc.check_timeout(1.0, 10) and fc.scale == 2
    assert not fc.check_timeout(1.5, 10)  # timer restarted at 1.0
    assert fc.check_timeout(2.0, 10) and fc.scale == 1


def test_receiver_loss_accounting():
    st = RecvFlowState()
    assert [st.update(s) for s in (0, 1, 2)] == [False, False, False]
    assert st.update(5) is True  # 3 and 4 missing
    assert (st.lost, st.last_lost_seq, st.highest) == (2, 4, 5)
    assert st.update(3) is False  # late packet: no longer lost
    assert (st.lost, st.received, st.highest) == (1, 5, 5)


# --------------------------------------------------------------------------- namespaces

SKIP = missing_prereqs()
if SKIP is None:
    import shutil

    if shutil.which("iptables") is None:
        SKIP = "needs the 'iptables' command"

LOSSY_PORT = 5002
CLEAN_PORT = 5001
SEND_S = 3.0


@pytest.fixture
def net():
    with ns_pair("mmapp") as pair:
        # 20 % random loss of the lossy flow's data, in the receiver's namespace
        pair.run(pair.ns_b, ["iptables", "-A", "INPUT", "-p", "udp", "--dport", str(LOSSY_PORT),
                             "-m", "statistic", "--mode", "random", "--probability", "0.2",
                             "-j", "DROP"])
        yield pair
    # the namespaces (and the iptables rule inside) are gone
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert pair.ns_a not in out and pair.ns_b not in out


def _wait_ready(p: subprocess.Popen, timeout: float = 5.0) -> None:
    r, _, _ = select.select([p.stderr], [], [], timeout)
    assert r, "receiver did not become ready"
    line = p.stderr.readline()
    assert "ready" in line, line


def _read_recv(path: Path) -> dict[int, list[samples.RecvSample]]:
    return samples.by_flow(samples.read_recv_csv(path))


def _rate_kbps(rows: list[samples.RecvSample]) -> float:
    """Receive rate from first to last packet: (n-1) packets' bytes over the span."""
    t = [r.recv_ts_ns for r in rows]
    return sum(r.bytes for r in rows[1:]) * 8 / ((t[-1] - t[0]) / 1e9) / 1000


@pytest.mark.skipif(SKIP is not None, reason=SKIP or "")
def test_mmapp_between_namespaces(net, tmp_path):
    py = [sys.executable, "-m", "mmaqm_exp.mmapp"]
    recv_out = {p: tmp_path / f"recv{p}.csv" for p in (CLEAN_PORT, LOSSY_PORT)}
    receivers = {}
    for port, out in recv_out.items():
        receivers[port] = net.popen(net.ns_b, py + ["recv", "--port", str(port), "--out", str(out)],
                                    env=mmt_testenv.py_env())
    for p in receivers.values():
        _wait_ready(p)

    common = ["send", "--dst", net.ip_b, "--duration", str(SEND_S)]
    senders = {
        # flow 1: flow-controlled, starts at scale 0, no loss -> climbs to scale 4
        1: py + common + ["--port", str(CLEAN_PORT), "--flow-id", "1", "--log", str(tmp_path / "s1.csv")],
        # flow 2: flow-controlled, starts at scale 4, 20 % loss -> must cut
        2: py + common + ["--port", str(LOSSY_PORT), "--flow-id", "2", "--initial-scale", "4",
                          "--log", str(tmp_path / "s2.csv")],
        # flow 3: unresponsive CBR at 2 Mbit/s, untagged
        3: py + common + ["--port", str(CLEAN_PORT), "--flow-id", "3", "--cbr-kbps", "2000"],
    }
    procs = {f: net.popen(net.ns_a, argv, env=mmt_testenv.py_env()) for f, argv in senders.items()}
    summary = {}
    for f, p in procs.items():
        out, err = p.communicate(timeout=SEND_S + 10)
        assert p.returncode == 0, err
        summary[f] = json.loads(out.strip().splitlines()[-1])
    time.sleep(0.3)  # let the last packets land
    for port, p in receivers.items():  # SIGTERM: the receiver must still write its CSV
        assert net.stop(p) == 0, p.stderr.read()
    by_flow = {**_read_recv(recv_out[CLEAN_PORT]), **_read_recv(recv_out[LOSSY_PORT])}

    # --- flow 1: every packet arrives, in order, tagged EF, 1000-byte datagrams
    f1 = by_flow[1]
    seqs = [r.seq for r in f1]
    assert all(b > a for a, b in zip(seqs, seqs[1:])), "seq not increasing"
    assert len(f1) == summary[1]["sent"] and seqs == list(range(len(f1)))
    assert {r.dscp for r in f1} == {46}
    assert {r.bytes for r in f1} == {1000}
    # flow control without loss: up one scale per feedback/RTT, 0 -> 4, never cut
    log1 = samples.read_send_log(tmp_path / "s1.csv")
    assert summary[1]["ups"] == 4 and summary[1]["cuts"] == 0 and summary[1]["final_scale"] == 4
    assert log1[0].event == "start" and log1[-1].event == "end"
    t_top = next(r.t_ns for r in log1 if r.scale == 4)
    assert (t_top - log1[0].t_ns) / 1e9 < 0.5
    assert 0 < summary[1]["srtt_us"] < 20000
    # pacing at scale 4 (1100 kbit/s, 137.5 packets/s) measured at the receiver
    top = [r for r in f1 if r.scale == 4]
    assert len(top) > 250
    rate = _rate_kbps(top)
    assert abs(rate - 1100) / 1100 < 0.10, rate
    # the sender's own schedule (send timestamps, free of receive-side noise) keeps
    # the 8000 bit / 1100 kbit/s = 7.2727 ms spacing: sleep drift would show here
    ts = [r.send_ts_ns for r in top]
    spacing_ms = (ts[-1] - ts[0]) / (len(ts) - 1) / 1e6
    assert abs(spacing_ms - 8000 / 1100) / (8000 / 1100) < 0.02, spacing_ms
    # one-way delay is measurable (shared clock) and small on a bare veth
    d = metrics.delay_stats(samples.delay_pairs_s(f1, t0_ns=f1[0].send_ts_ns))
    assert 0 < d.min and d.mean < 0.02

    # --- flow 2: losses make the sender cut its scale
    f2 = by_flow[2]
    seqs2 = [r.seq for r in f2]
    assert all(b > a for a, b in zip(seqs2, seqs2[1:]))
    lost = summary[2]["sent"] - len(f2)
    assert 0.1 < lost / summary[2]["sent"] < 0.3  # about 20 %
    assert summary[2]["cuts"] >= 5
    log2 = samples.read_send_log(tmp_path / "s2.csv")
    assert any(r.event == "cut" for r in log2)
    assert min(r.scale for r in log2) <= 1

    def mean_scale(log: list[samples.SendLogRow]) -> float:
        t = [(r.t_ns - log[0].t_ns) / 1e9 for r in log]
        return metrics.time_weighted_mean(t, [r.scale for r in log], t[0], t[-1])

    assert mean_scale(log2) < mean_scale(log1) - 0.5
    assert _rate_kbps(f2) < 0.9 * 1100  # it spent time below the top scale

    # --- flow 3: CBR, untagged, accurate rate, no flow control
    f3 = by_flow[3]
    assert {r.dscp for r in f3} == {0} and {r.scale for r in f3} == {255}
    assert abs(_rate_kbps(f3) - 2000) / 2000 < 0.10
    assert summary[3]["mode"] == "cbr" and summary[3]["cuts"] == 0
