"""nfq_delay: builds the element and checks it between two network namespaces.

* ICMP echo RTT grows by 20 ms +- 1 ms when the element delays the receiver's
  INPUT by 20 ms, and no reply comes back early;
* a 5000 packet/s UDP blast (1000-byte datagrams, 40 Mbit/s) for 2 s passes
  with < 1 % loss, every packet is delayed by at least 20 ms (one-way delay from
  the shared clock), and the element's own error statistics say mean |error|
  < 200 us.

Skipped (with the reason) when not root, or when the libnetfilter_queue / libmnl
headers, make, gcc or iptables are missing.
"""

from __future__ import annotations

import json
import select
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

import mmt_testenv

from mmaqm_exp import metrics, samples
from mmaqm_exp.netns import NsPair, missing_prereqs, ns_pair
from mmaqm_exp.network import nfqueue_counters

DELAY_DIR = Path(__file__).resolve().parents[2] / "topologies" / "delay"
QUEUE = 11
DELAY_MS = 20.0


def _skip_reason() -> str | None:
    why = missing_prereqs()
    if why:
        return why
    for tool in ("make", "gcc", "iptables"):
        if shutil.which(tool) is None:
            return f"needs the {tool!r} command"
    return mmt_testenv.nfq_delay_build_missing()


SKIP = _skip_reason()
pytestmark = pytest.mark.skipif(SKIP is not None, reason=SKIP or "")


@pytest.fixture(scope="module")
def nfq_delay_bin() -> Path:
    r = subprocess.run(["make", "-C", str(DELAY_DIR)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    b = DELAY_DIR / "nfq_delay"
    assert b.exists()
    return b


@pytest.fixture
def net():
    with ns_pair("nfq") as pair:
        yield pair


def _start_delay(net: NsPair, binary: Path, stats: Path) -> subprocess.Popen:
    """Start the element in the receiver namespace, then hook INPUT to it."""
    p = net.popen(net.ns_b, [str(binary), "--queue", str(QUEUE), "--delay-ms", str(DELAY_MS),
                             "--stats-file", str(stats)])
    r, _, _ = select.select([p.stdout], [], [], 5.0)
    assert r, "nfq_delay did not start"
    line = p.stdout.readline()
    assert line.startswith("nfq_delay: ready"), line + (p.stderr.read() if p.poll() is not None else "")
    net.run(net.ns_b, ["iptables", "-A", "INPUT", "-i", net.if_b, "-j", "NFQUEUE",
                       "--queue-num", str(QUEUE), "--queue-bypass"])
    return p


def _stop_delay(net: NsPair, p: subprocess.Popen, stats: Path) -> dict:
    net.run(net.ns_b, ["iptables", "-D", "INPUT", "-i", net.if_b, "-j", "NFQUEUE",
                       "--queue-num", str(QUEUE), "--queue-bypass"])
    assert net.stop(p) == 0, p.stderr.read()
    return json.loads(stats.read_text())


def _ping(net: NsPair) -> list[float]:
    out = net.run(net.ns_a, [sys.executable, "-m", "mmaqm_exp.probes", net.ip_b,
                             "-c", "20", "-i", "0.05"], env=mmt_testenv.py_env(), timeout=20).stdout
    res = json.loads(out)
    assert res["received"] == 20, res
    return res["rtts_ms"]


def test_ping_rtt_grows_by_delay(net, nfq_delay_bin, tmp_path):
    base = _ping(net)
    stats_path = tmp_path / "stats.json"
    el = _start_delay(net, nfq_delay_bin, stats_path)
    delayed = _ping(net)
    stats = _stop_delay(net, el, stats_path)

    added = statistics.median(delayed) - statistics.median(base)
    assert abs(added - DELAY_MS) < 1.0, (added, base, delayed)
    assert min(delayed) >= DELAY_MS  # nothing overtakes its delay
    assert stats["packets"] >= 20 and stats["verdicts"] == stats["packets"]


def test_udp_blast_5000pps(net, nfq_delay_bin, tmp_path):
    stats_path = tmp_path / "stats.json"
    recv_csv = tmp_path / "recv.csv"
    py = [sys.executable, "-m", "mmaqm_exp.mmapp"]
    el = _start_delay(net, nfq_delay_bin, stats_path)
    rx = net.popen(net.ns_b, py + ["recv", "--out", str(recv_csv)], env=mmt_testenv.py_env())
    r, _, _ = select.select([rx.stderr], [], [], 5.0)
    assert r and "ready" in rx.stderr.readline()
    # 40 000 kbit/s of 1000-byte IPv4 datagrams = 5000 packets/s, for 2 s
    tx = net.run(net.ns_a, py + ["send", "--dst", net.ip_b, "--duration", "2",
                                 "--cbr-kbps", "40000"], env=mmt_testenv.py_env(), timeout=30)
    sent = json.loads(tx.stdout.strip().splitlines()[-1])["sent"]
    time.sleep(DELAY_MS / 1000 + 0.3)  # held packets drain
    kernel = nfqueue_counters(el.pid, QUEUE)   # what the experiments read per delay element
    assert net.stop(rx) == 0
    stats = _stop_delay(net, el, stats_path)

    rows = samples.read_recv_csv(recv_csv)
    assert sent >= 9500  # the sender kept up with 5000 packets/s
    assert metrics.loss_rate(sent, len(rows)) < 0.01, (sent, len(rows))
    # every packet went through the element (+ a few stray ones at most)
    assert stats["packets"] >= len(rows)
    seqs = [r.seq for r in rows]
    assert all(b > a for a, b in zip(seqs, seqs[1:])), "the element reordered packets"
    owd = metrics.delay_stats([(r.send_ts_ns / 1e6, r.recv_ts_ns / 1e6) for r in rows])  # ms
    assert owd.min >= DELAY_MS - 0.01, owd
    assert owd.mean < DELAY_MS + 2.0, owd
    assert stats["mean_abs_err_us"] < 200, stats
    assert stats["enobufs"] == 0 and stats["verdict_errors"] == 0, stats
    # the kernel's side of the queue: nothing dropped, every packet handed to the element
    assert kernel is not None and kernel["queue_dropped"] == kernel["user_dropped"] == 0, kernel
    assert kernel["id_sequence"] >= len(rows) and kernel["queue_total"] == 0, kernel
