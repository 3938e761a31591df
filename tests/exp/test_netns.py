"""The lifecycle (mmaqm_exp.lab) and the two-namespace test bed built on it (mmaqm_exp.netns).

Without root: stopping processes (SIGTERM, deadline, SIGKILL of the whole group, reap),
the stop-signal helpers and the simple_switch_grpc command line. As root: veths get IPv6
and the offloads off by kind; a Lab and ns_pair clean up after an exception; a run that
was SIGKILLed leaves namespaces and processes the next run with the prefix removes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import mmt_testenv

from mmaqm_exp import lab
from mmaqm_exp.netns import missing_prereqs, ns_pair

SKIP = missing_prereqs()
needs_root = pytest.mark.skipif(SKIP is not None, reason=SKIP or "")

IGNORE_TERM = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
               "print('ready', flush=True); time.sleep(60)")
# ignores SIGTERM and has a child in its process group that ignores it too
STUBBORN_PARENT = ("import signal, subprocess, sys, time; "
                   "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                   f"c = subprocess.Popen([sys.executable, '-c', {IGNORE_TERM!r}], "
                   "stdout=subprocess.PIPE, text=True); c.stdout.readline(); "
                   "print('ready', c.pid, flush=True); time.sleep(60)")


def _start(code: str) -> tuple[subprocess.Popen, list[str]]:
    """code in its own session; returns it and the words after 'ready' on its first line."""
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    assert p.stdout is not None
    words = p.stdout.readline().split()
    assert words[:1] == ["ready"], words
    return p, words[1:]


# ------------------------------------------------------------ without root
def test_stop_processes_terms_then_kills_the_whole_group():
    polite, _ = _start("import time; print('ready', flush=True); time.sleep(60)")
    stubborn, [child] = _start(STUBBORN_PARENT)
    child_pid = int(child)
    assert os.getpgid(child_pid) == stubborn.pid
    exited_before_reap = []
    t0 = time.monotonic()
    problems = lab.stop_processes([polite, stubborn], timeout_s=0.5,
                                  on_exit=lambda p: exited_before_reap.append(
                                      (p.pid, lab.alive(p.pid), Path(f"/proc/{p.pid}").exists())))
    took_s = time.monotonic() - t0
    assert polite.returncode == -signal.SIGTERM
    # the stubborn one ignores SIGTERM (its child too) -> SIGKILL after the 0.5 s deadline
    assert stubborn.returncode == -signal.SIGKILL
    assert 0.5 <= took_s < 3.0
    assert len(problems) == 1 and "after SIGTERM, killed" in problems[0]
    # on_exit saw each one exited (a zombie: not alive, /proc entry still there), unreaped
    assert sorted(exited_before_reap) == sorted([(polite.pid, False, True),
                                                 (stubborn.pid, False, True)])
    deadline = time.monotonic() + 5
    while lab.alive(child_pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not lab.alive(child_pid)          # SIGKILL went to the group, not just the leader
    assert lab.stop_processes([polite, stubborn]) == []   # already reaped: nothing to do


@pytest.fixture
def restore_signal_handlers():
    saved = {sig: signal.getsignal(sig) for sig in lab.STOP_SIGNALS}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def test_catch_stop_signals_flag_and_interrupt(restore_signal_handlers):
    state = lab.catch_stop_signals(interrupt=False)
    assert not state.requested
    signal.raise_signal(signal.SIGTERM)
    assert state.requested and state.signum == signal.SIGTERM

    state = lab.catch_stop_signals(interrupt=True)
    with pytest.raises(lab.StopRequested) as info:
        signal.raise_signal(signal.SIGHUP)
        time.sleep(1)                        # the handler raises here at the latest
    assert info.value.signum == signal.SIGHUP and info.value.exit_status == 129
    assert isinstance(info.value, KeyboardInterrupt)
    signal.raise_signal(signal.SIGINT)       # a second signal is only noted: no raise
    assert state.signum == signal.SIGHUP


def test_stop_signals_deferred_until_the_block_ends(restore_signal_handlers):
    state = lab.catch_stop_signals(interrupt=False)
    with lab.stop_signals_deferred():
        signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGTERM)
        assert not state.requested           # held
    assert state.signum == signal.SIGTERM    # delivered after the block


def test_exit_on_stop_maps_a_stop_or_a_lab_error_to_the_exit_status(capsys):
    with lab.ExitOnStop("tool") as end:
        pass
    assert end.exit_status is None
    with lab.ExitOnStop("tool") as end:
        raise lab.StopRequested(signal.SIGTERM)
    assert end.exit_status == 143
    assert capsys.readouterr().err == "tool: interrupted; cleaned up\n"
    with lab.ExitOnStop("tool") as end:
        raise lab.LabError("veth h1 exists")
    assert end.exit_status == 2
    assert capsys.readouterr().err == "tool: veth h1 exists\n"
    with pytest.raises(ValueError), lab.ExitOnStop("tool") as end:
        raise ValueError("not ours")
    assert end.exit_status is None


def test_switch_argv():
    spec = lab.SwitchSpec({2: "sw2", 1: "sw1"}, device_id=1, grpc_port=9559, thrift_port=9090,
                          out_path=Path("/tmp/out"))
    assert spec.argv() == ["simple_switch_grpc", "--device-id", "1", "--thrift-port", "9090",
                           "-i", "1@sw1", "-i", "2@sw2", "--log-level", "off", "--no-p4",
                           "--", "--grpc-server-addr", "127.0.0.1:9559",
                           "--priority-queues", "2"]
    logged = lab.SwitchSpec({1: "r1-p1"}, device_id=3, grpc_port=9560, thrift_port=9091,
                            out_path=Path("/tmp/out"), log_file=Path("/tmp/bmv2-r1"),
                            log_level="warn")
    assert logged.argv() == ["simple_switch_grpc", "--device-id", "3", "--thrift-port", "9091",
                             "-i", "1@r1-p1", "--log-file", "/tmp/bmv2-r1", "--log-flush",
                             "--log-level", "warn", "--no-p4",
                             "--", "--grpc-server-addr", "127.0.0.1:9560",
                             "--priority-queues", "2"]
    with pytest.raises(ValueError, match="log_level must be one of"):
        lab.SwitchSpec({}, device_id=1, grpc_port=1, thrift_port=2, out_path=Path("/tmp/o"),
                       log_level="loud").argv()


def test_bad_names_are_refused_before_anything_exists():
    with pytest.raises(ValueError, match="prefix must match"):
        lab.Lab("bad/prefix")
    with pytest.raises(ValueError, match=r"pairs\[0\]\[1\]\.ifname must match"):
        lab.VethEnd("x", "a-much-too-long-name", lab.RAW_PORT).check("pairs[0][1]")
    with pytest.raises(ValueError, match=r"pairs\[0\]\[0\]\.kind must be one of raw, host"):
        lab.VethEnd("x", "v0", "switch").check("pairs[0][0]")


# --------------------------------------------------------------- as root
def _ethtool_off(run, ns: str, ifname: str) -> set[str]:
    out = run(ns, ["ethtool", "-k", ifname]).stdout
    return {line.split(":")[0].strip() for line in out.splitlines()
            if line.strip().endswith(": off") or ": off [" in line}


@needs_root
def test_veths_ipv6_and_offloads_by_kind(tmp_path):
    prefix = f"mml{os.getpid()}"
    with lab.Lab(prefix) as bed:
        ns = bed.add_namespace(f"{prefix}-x")
        bed.add_veths([(lab.VethEnd(ns, "v-raw", lab.RAW_PORT, mac="02:00:00:00:00:11", mtu=1400),
                        lab.VethEnd(ns, "v-host", lab.HOST_PORT))])
        for ifname in ("v-raw", "v-host"):
            assert bed.run(ns, ["sysctl", "-n", f"net.ipv6.conf.{ifname}.disable_ipv6"]
                           ).stdout.strip() == "1"
        raw = _ethtool_off(bed.run, ns, "v-raw")
        assert {"tx-checksumming", "rx-checksumming", "tcp-segmentation-offload",
                "generic-segmentation-offload", "generic-receive-offload"} <= raw
        host = _ethtool_off(bed.run, ns, "v-host")
        assert {"tx-checksumming", "tcp-segmentation-offload",
                "generic-segmentation-offload"} <= host
        link = bed.run(ns, ["ip", "-o", "link", "show", "v-raw"]).stdout
        assert "mtu 1400" in link and "02:00:00:00:00:11" in link and "state UP" in link
        with pytest.raises(ValueError, match="must be 'mml"):
            bed.add_namespace("elsewhere")
    assert lab.namespaces(prefix) == []


@needs_root
def test_ns_pair_cleans_up_on_exception():
    seen = {}
    with pytest.raises(RuntimeError, match="boom"):
        with ns_pair("cln") as net:
            seen["names"] = (net.ns_a, net.ns_b)
            # the pair is configured: IPv6 off, a route to the peer
            assert net.run(net.ns_a, ["sysctl", "-n", f"net.ipv6.conf.{net.if_a}.disable_ipv6"]).stdout.strip() == "1"
            net.run(net.ns_a, ["ip", "route", "get", net.ip_b])
            seen["proc"] = net.popen(net.ns_b, ["sleep", "60"])
            assert set(seen["names"]) <= set(lab.namespaces(f"mmt-cln-{os.getpid()}"))
            raise RuntimeError("boom")
    assert seen["proc"].poll() is not None  # the started process was stopped
    assert lab.namespaces(f"mmt-cln-{os.getpid()}") == []


_CRASH = """
import sys, time
from mmaqm_exp import lab
bed = lab.Lab({prefix!r})
bed.open()
ns = bed.add_namespace({prefix!r} + "-a")
bed.add_veths([(lab.VethEnd(ns, "c0", lab.RAW_PORT), lab.VethEnd(ns, "c1", lab.HOST_PORT))])
bed.popen(ns, ["sleep", "300"])
print("up", flush=True)
time.sleep(300)
"""


@needs_root
def test_next_run_removes_what_a_killed_run_left():
    prefix = f"mmk{os.getpid()}"
    crashed = subprocess.Popen([sys.executable, "-c", _CRASH.format(
        topo=str(mmt_testenv.TOPO), prefix=prefix)], stdout=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        assert crashed.stdout is not None and crashed.stdout.readline() == "up\n"
    finally:
        os.killpg(crashed.pid, signal.SIGKILL)   # no teardown at all
        crashed.wait(10)
        crashed.stdout.close()
    assert lab.namespaces(prefix) == [f"{prefix}-a"]
    deadline = time.monotonic() + 5              # `ip netns exec` enters, then execs sleep
    while not (left := lab.namespace_pids([f"{prefix}-a"])[f"{prefix}-a"]):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert len(left) == 1                        # the sleep, now an orphan
    with lab.Lab(prefix) as bed:
        assert bed.leftovers_removed == [f"{prefix}-a"]
        assert not lab.alive(left[0])
        ns = bed.add_namespace(f"{prefix}-a")    # the same names work again
        bed.add_veths([(lab.VethEnd(ns, "c0", lab.RAW_PORT), lab.VethEnd(ns, "c1", lab.HOST_PORT))])
    assert lab.namespaces(prefix) == []


@needs_root
def test_ns_pair_removes_only_pairs_of_dead_processes():
    dead_pid = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1   # no process has it
    dead, live = f"mmt-gone-{dead_pid}-a", f"mmt-other-{os.getpid()}-b"
    for name in (dead, live):
        subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        with ns_pair("fresh"):
            left = lab.namespaces("mmt")
            assert dead not in left and live in left
    finally:
        lab.remove_namespaces([dead, live])
    assert not {dead, live} & set(lab.namespaces("mmt"))
