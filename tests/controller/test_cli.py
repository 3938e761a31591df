"""cli: exit codes and messages of mmaqm-ctl (in process through main(argv), and
one real process for the exit status and SIGTERM), against the fake switch."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fake_p4rt import FakeP4RuntimeServer, ThreadedServer, WrittenEntry, blackhole_address, \
    closed_port, http_listener, ipv4_int, mac_int, mute_tcp_listener, serve_in_thread
from mmaqm import cli, p4constants

SUBPROCESS_TIMEOUT_S = 10


def config(address: str, **policy_changes: Any) -> dict[str, Any]:
    return {
        "switches": {
            "s1": {
                "p4runtime_addr": address,
                "ports": {1: {"mac": "02:00:00:00:00:01"}, 2: {"mac": "02:00:00:00:00:02"}},
                "routes": [{"prefix": "10.0.2.0/24", "port": 2,
                            "next_hop_mac": "02:00:00:02:00:01"}],
                "policies": {"default": {"algorithm": "DROP_TAIL", "queue_limit_pkts": 50},
                             2: {"algorithm": "RED", "min_th_pkts": 5, "max_th_pkts": 15,
                                 "max_p": 0.1, "queue_limit_pkts": 60, **policy_changes}},
            }
        }
    }


def write_config(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(autouse=True)
def keep_sigterm_handler() -> Iterator[None]:
    """main() installs SIGTERM and SIGINT handlers: give pytest its own back."""
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    yield
    for signum, handler in handlers.items():
        signal.signal(signum, handler)


@pytest.fixture
def valid_config(tmp_path: Path) -> Path:
    return write_config(tmp_path, config(f"127.0.0.1:{closed_port()}"))


# ------------------------------------------------- argument and config errors
def test_invalid_config_exits_2_naming_the_field(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config(tmp_path, config("127.0.0.1:1", min_th_pkts=30))
    assert cli.main(["--config", str(path), "check"]) == 2
    err = capsys.readouterr().err
    assert f"invalid config {path}:" in err
    assert "  switches.s1.policies.2.min_th_pkts: must be < max_th_pkts (15), got 30\n" in err


def test_missing_config_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--config", str(tmp_path / "absent.yaml"), "check"]) == 2
    assert "absent.yaml" in capsys.readouterr().err


def test_unknown_switch_exits_2(valid_config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--config", str(valid_config), "--switch", "s9", "install"]) == 2
    assert "unknown switch ['s9']; config has ['s1']" in capsys.readouterr().err


# nan was accepted (nan <= 0 is false), and so was a busy-spinning 0.001
@pytest.mark.parametrize("interval_ms", ["0", "-5", "nan", "inf", "0.001", "ten"])
def test_stats_interval_must_be_a_number_of_at_least_1_ms(
        valid_config: Path, interval_ms: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--config", str(valid_config), f"--stats-interval-ms={interval_ms}",
                     "run"]) == 2
    assert (f"argument --stats-interval-ms: must be a number >= 1, got '{interval_ms}'"
            in capsys.readouterr().err)


@pytest.mark.parametrize("flag, value, message", [
    ("--election-id", "-1", "must be an integer 0..2^128-1, got '-1'"),
    ("--election-id", str(2**128), f"must be an integer 0..2^128-1, got '{2**128}'"),
    ("--timeout-s", "nan", "must be a number >= 0.001, got 'nan'"),
    ("--timeout-s", "0", "must be a number >= 0.001, got '0'"),
    ("--reconnect-timeout-s", "nan", "must be a number >= 0.001, got 'nan'"),
    ("--reconnect-timeout-s", "-1", "must be a number >= 0.001, got '-1'"),
])
def test_connection_flags_are_checked(valid_config: Path, flag: str, value: str, message: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--config", str(valid_config), f"{flag}={value}", "install"]) == 2
    assert f"argument {flag}: {message}" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["install", "check", "stats"])
def test_stats_out_only_with_run(valid_config: Path, tmp_path: Path, command: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "stats.jsonl"
    assert cli.main(["--config", str(valid_config), "--stats-out", str(out), command]) == 2
    assert "--stats-out only applies to 'run'" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("command", ["install", "check", "stats"])
def test_reconnect_timeout_only_with_run(valid_config: Path, command: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--config", str(valid_config), "--reconnect-timeout-s", "5",
                     command]) == 2
    assert "--reconnect-timeout-s only applies to 'run'" in capsys.readouterr().err


def test_check_of_a_valid_config_exits_0_and_contacts_no_switch(
        valid_config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    assert cli.main(["--config", str(valid_config), "check"]) == 0
    assert capsys.readouterr().out == f"{valid_config}: ok (1 switches)\n"
    assert time.monotonic() - started < 1      # no wait for the (closed) P4Runtime port


def test_process_exit_status_of_an_invalid_config(tmp_path: Path) -> None:
    path = write_config(tmp_path, config("127.0.0.1:1", algorithm="FOO"))
    result = subprocess.run([sys.executable, "-m", "mmaqm.cli", "-c", str(path), "check"],
                            capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S)
    assert result.returncode == 2
    assert "switches.s1.policies.2.algorithm: must be one of" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("command,calls", [("run", 1), ("install", 0)])
def test_run_limits_its_malloc_growth_and_install_does_not(
        valid_config: Path, device_config: Path, monkeypatch: pytest.MonkeyPatch,
        command: str, calls: int) -> None:
    # What limit_malloc_growth does is tested in test_memory.py; here, who calls it.
    called: list[str] = []
    monkeypatch.setattr(cli, "limit_malloc_growth", lambda: called.append(command) or {})
    argv = ["--config", str(valid_config), "--p4info", str(p4constants.P4INFO),
            "--bmv2-json", str(device_config), "--timeout-s", "0.2"]
    if command == "run":
        argv += ["--reconnect-timeout-s", "0.2"]
    assert cli.main(argv + [command]) == 1          # no switch listens
    assert called == [command] * calls


# ------------------------------------------------------ against a switch
def test_install_against_a_closed_port_fails_within_the_grpc_timeout(
        valid_config: Path, device_config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # wait_for_grpc waits 20 s by default (checked by hand: exit 1 after 20.3 s);
    # the same path with a 0.3 s deadline. It fails before the P4Info is read.
    address = yaml.safe_load(valid_config.read_text())["switches"]["s1"]["p4runtime_addr"]
    started = time.monotonic()
    assert cli.main(["--config", str(valid_config), "--p4info", str(p4constants.P4INFO),
                     "--bmv2-json", str(device_config), "--timeout-s", "0.3", "install"]) == 1
    assert time.monotonic() - started < 3
    assert f"mmaqm-ctl: s1: no P4Runtime server at {address} after 0.3 s" in capsys.readouterr().err


RED_PARAMS = {"queue_limit_pkts": 60, "flow_epoch_shift": 17, "ewma_shift": 9,
              "min_th_scaled": 5 << 16, "max_th_scaled": 15 << 16, "red_slope_q24": 167772,
              "idle_decay_q32": 0, "gentle": 0, "max_p_q16": 0, "gentle_slope_q24": 0, "ecn": 0, "harddrop": 0,
              "wait": 0}


def test_install_against_the_fake_switch_exits_0_and_writes_the_config(
        tmp_path: Path, p4info_path: Path, device_config: Path,
        fake_switch: ThreadedServer) -> None:
    server = fake_switch.server
    data = config(server.address)
    data["switches"]["s2"] = config(f"127.0.0.1:{closed_port()}")["switches"]["s1"]
    path = write_config(tmp_path, data)
    before_ms = time.time_ns() // 1_000_000
    # --switch s1: s2's closed port is never waited for
    assert cli.main(["--config", str(path), "--switch", "s1", "--p4info", str(p4info_path),
                     "--bmv2-json", str(device_config), "install"]) == 0
    after_ms = time.time_ns() // 1_000_000
    assert len(server.pipeline_pushes) == 1
    assert server.pipeline_pushes[0].config.p4_device_config == device_config.read_bytes()
    assert server.table_entries("ipv4_lpm") == [WrittenEntry(
        "ipv4_lpm", {"ipv4_dst": (ipv4_int("10.0.2.0"), 24)}, "route",
        {"port": 2, "src_mac": mac_int("02:00:00:00:00:02"),
         "dst_mac": mac_int("02:00:00:02:00:01")})]
    drop_tail, red = server.table_entries("port_policy")
    assert drop_tail == WrittenEntry("port_policy", {"port": 1}, "drop_tail",
                                     {"queue_limit_pkts": 50, "flow_epoch_shift": 17})
    epoch = red.params.pop("policy_epoch")
    assert (red.match, red.action, red.params) == ({"port": 2}, "red", RED_PARAMS)
    assert (epoch - before_ms) % 2**32 <= after_ms - before_ms     # wall-clock ms mod 2^32
    assert [e.match for e in server.table_entries("classifier")] == [
        {"ip_proto": (6, 0xFF)}, {"ip_proto": (17, 0xFF), "dscp": (46, 0x3F)},
        {"ip_proto": (17, 0xFF), "dscp": (34, 0x3F)}]
    assert len(server.digest_configs) == 1       # one flow report for both families


def test_stats_against_the_fake_switch_prints_the_counter_table(
        tmp_path: Path, p4info_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from fake_p4rt import load_p4info

    server = FakeP4RuntimeServer(p4info=load_p4info(p4info_path))   # a running program
    # port 2, TCP (class index 8): 10 arrived, 9 admitted, 7 departed, 1 dropped RED_EARLY
    # (drop index 8 * 9 + 1 = 73)
    server.counters = {"queue_arrivals": {8: (10, 15000)}, "queue_admits": {8: (9, 13500)},
                       "queue_departures": {8: (7, 10500)}, "queue_drops": {81: (1, 1500)}}
    with serve_in_thread(server):
        path = write_config(tmp_path, config(server.address))
        assert cli.main(["--config", str(path), "--p4info", str(p4info_path), "stats"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "switch s1"
    assert lines[1].split() == ["port", "class", "arrivals", "admitted", "departed", "queued",
                                "QUEUE_LIMIT", "RED_EARLY", "RED_FORCED", "CLASS_THRESHOLD",
                                "FRED_MAXQ", "FRED_TWICE_AVGCQ", "FRED_STRIKE",
                                "UPTA_USELESS", "UPTA_FAIR_SHARE", "TAG_GUARD", "ecn_marked", "loss%"]
    assert lines[5].split() == ["2", "TCP", "10", "9", "7", "2", "0", "1", "0", "0", "0", "0",
                                "0", "0", "0", "0", "0", "10.00"]
    assert lines[2 + 6:] == [""]      # 2 ports x 3 classes, then the table's own newline
    assert server.pipeline_pushes == []                    # stats never pushes a pipeline


def test_stats_json_has_the_sample_shape_with_ingress_discards(
        tmp_path: Path, p4info_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from fake_p4rt import load_p4info

    server = FakeP4RuntimeServer(p4info=load_p4info(p4info_path))
    # port 2, TCP: 10 arrivals; ingress port 1: 3 NOT_IPV4 (1 * 8 + 0) and 1 NO_ROUTE (1 * 8 + 5)
    server.counters = {"queue_arrivals": {8: (10, 15000)},
                       "ingress_discards": {8: (3, 180), 13: (1, 60)}}
    with serve_in_thread(server):
        path = write_config(tmp_path, config(server.address))
        before_ns = time.time_ns()
        assert cli.main(["--config", str(path), "--p4info", str(p4info_path), "stats",
                         "--json"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    sample = json.loads(line)
    assert sample["switch"] == "s1" and sample["t_ns"] >= before_ns
    assert sample["ingress_discards"] == {"1": 4, "2": 0}
    [row] = [r for r in sample["readings"] if r["port"] == 2 and r["class"] == "TCP"]
    assert row["arrivals"] == {"packets": 10, "bytes": 15000}
    assert len(sample["readings"]) == 6                     # 2 ports x 3 classes


def wait_until(condition: Callable[[], bool], proc: subprocess.Popen[str], what: str) -> None:
    deadline = time.monotonic() + SUBPROCESS_TIMEOUT_S
    while not condition():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_run_follows_flow_reports_writes_stats_and_exits_143_on_sigterm(
        tmp_path: Path, p4info_path: Path, device_config: Path,
        fake_switch: ThreadedServer) -> None:
    server = fake_switch.server
    path = write_config(tmp_path, config(server.address, algorithm="DCBT"))
    out = tmp_path / "stats.jsonl"
    flows = [{"egress_port": 2, "class_id": class_id, "src_addr": ipv4_int("10.0.1.10"),
              "dst_addr": ipv4_int("10.0.2.10"), "protocol": 17, "src_port": 5000 + class_id,
              "dst_port": 5004, "ingress_ts_us": 1000}
             for class_id in (0, 1)]                                 # one TCP, one tagged

    def tagged_share_q16() -> int | None:
        entries = [e for e in server.table_entries("port_policy") if e.match == {"port": 2}]
        return entries[0].params["tagged_share_q16"] if entries else None

    def shares_followed() -> bool:
        # resend until the controller's digest reader is up (a list before it is dropped)
        fake_switch.call(server.send_digest, "flow_digest_t", flows, list_id=1)
        time.sleep(0.05)
        return tagged_share_q16() == 32768                    # 1 of 2 flows tagged

    proc = subprocess.Popen(
        [sys.executable, "-m", "mmaqm.cli", "-c", str(path), "--p4info", str(p4info_path),
         "--bmv2-json", str(device_config), "--stats-out", str(out),
         "--stats-interval-ms", "20", "run"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: tagged_share_q16() == 65536, proc, "install (no flows: share 1)")
        wait_until(shares_followed, proc, "the D-CBT share update")
        lines = out.read_text().count("\n")
        wait_until(lambda: out.read_text().count("\n") >= lines + 2, proc,
                   "two stats lines after the share update")
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=SUBPROCESS_TIMEOUT_S)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert "Traceback" not in stderr and "destroyed" not in stderr, stderr
    assert server.digest_acks and {list_id for _, list_id in server.digest_acks} == {1}
    samples = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(s["switch"] == "s1" and len(s["readings"]) == 6 for s in samples)
    assert samples[-1]["active_flows"]["2"] == {"TCP": 1, "TAGGED": 1, "UNTAGGED": 0}
    assert samples[-1]["active_flows_by_family"]["2"] == {
        "ipv4": {"TCP": 1, "TAGGED": 1, "UNTAGGED": 0},
        "ipv6": {"TCP": 0, "TAGGED": 0, "UNTAGGED": 0}}
    assert samples[-1]["policies"]["2"] == {"algorithm": "DCBT", "tagged_share_q16": 32768,
                                            "untagged_th_scaled": 0, "tag_guard_interval_us": 0}


def test_run_gives_a_lost_switch_up_after_the_reconnect_timeout_and_exits_1(
        tmp_path: Path, p4info_path: Path, device_config: Path) -> None:
    """`run` reconnects when its switch goes away (it used to exit at once);
    --reconnect-timeout-s bounds that: exit 1, one line naming the switch, each
    attempt logged."""
    threaded = serve_in_thread(FakeP4RuntimeServer())
    fake = threaded.__enter__()
    try:
        server = fake.server
        path = write_config(tmp_path, config(server.address))
        proc = subprocess.Popen(
            [sys.executable, "-m", "mmaqm.cli", "-c", str(path), "--p4info", str(p4info_path),
             "--bmv2-json", str(device_config), "--reconnect-timeout-s", "1", "run"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: bool(server.digest_configs), proc, "installed")
        except BaseException:
            proc.kill()
            raise
    finally:
        # The switch goes away for good. The clock starts before the server stops:
        # on a loaded machine stopping it can take longer than the 1 s timeout.
        started = time.monotonic()
        threaded.__exit__(None, None, None)
    try:
        _, stderr = proc.communicate(timeout=SUBPROCESS_TIMEOUT_S)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 1, stderr
    assert 0.9 < time.monotonic() - started < 5
    last = stderr.splitlines()[-1]
    assert re.fullmatch(rf"mmaqm-ctl: s1: no working P4Runtime connection to {server.address} "
                        r"for 1\.\d s after it was lost \(or stopped answering\); giving up "
                        r"\(--reconnect-timeout-s 1\)",
                        last), stderr
    assert "s1: lost the P4Runtime connection" in stderr
    assert "s1: reconnect attempt 3 to" in stderr
    assert "Traceback" not in stderr


def pipeline_flags(command: str, device_config: Path) -> list[str]:
    """--bmv2-json for the subcommands that push a pipeline (stats rejects it)."""
    return ["--bmv2-json", str(device_config)] if command in ("install", "run") else []


def run_cli(args: list[str], timeout_s: float = SUBPROCESS_TIMEOUT_S
            ) -> subprocess.CompletedProcess[str]:
    """mmaqm-ctl as a process: a hang fails the test at timeout_s (TimeoutExpired)."""
    return subprocess.run([sys.executable, "-m", "mmaqm.cli", *args],
                          capture_output=True, text=True, timeout=timeout_s)


def test_install_against_a_mute_p4runtime_server_fails_within_a_deadline(
        tmp_path: Path, p4info_path: Path, device_config: Path) -> None:
    """finsy waits for the arbitration answer without a deadline; the
    driver bounds the whole connection at --timeout-s."""
    with serve_in_thread(FakeP4RuntimeServer(answer_arbitration=False)) as threaded:
        address = threaded.server.address
        path = write_config(tmp_path, config(address))
        result = run_cli(["-c", str(path), "--p4info", str(p4info_path), "--bmv2-json",
                          str(device_config), "--timeout-s", "0.5", "install"], timeout_s=3)
    assert result.returncode == 1, result.stderr
    assert result.stderr.endswith(
        f"mmaqm-ctl: s1: no P4Runtime answer from {address} within 0.5 s (connect, "
        f"arbitration, pipeline)\n"), result.stderr
    assert "Traceback" not in result.stderr


def test_stats_against_a_closed_port_exits_1_with_a_message(
        valid_config: Path, p4info_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    address = yaml.safe_load(valid_config.read_text())["switches"]["s1"]["p4runtime_addr"]
    assert cli.main(["--config", str(valid_config), "--p4info", str(p4info_path),
                     "--timeout-s", "0.3", "stats"]) == 1
    err = capsys.readouterr().err
    assert err == f"mmaqm-ctl: s1: no P4Runtime server at {address} after 0.3 s\n", err
    assert err.count("\n") == 1


@pytest.mark.parametrize("command", ["install", "stats"])
def test_a_switch_address_that_drops_syns_fails_within_the_deadline(
        tmp_path: Path, p4info_path: Path, device_config: Path, command: str) -> None:
    """One TCP connect to an address that drops SYNs took the kernel's ~130 s
    of retries (wait_for_grpc's 20 s were checked only between attempts), and gRPC's
    own connect has no deadline either."""
    with blackhole_address() as address:
        path = write_config(tmp_path, config(address))
        started = time.monotonic()
        result = run_cli([command, "-c", str(path), "--p4info", str(p4info_path),
                          *pipeline_flags(command, device_config), "--timeout-s", "0.5"],
                         timeout_s=5)
    assert time.monotonic() - started < 4
    assert result.returncode == 1, result.stderr
    expected = f"mmaqm-ctl: s1: no P4Runtime server at {address} after 0.5 s\n"
    assert result.stderr.endswith(expected), result.stderr


@pytest.mark.parametrize("command", ["install", "stats"])
@pytest.mark.parametrize("listener, cause", [
    (http_listener, {"install": "UNAVAILABLE: ", "stats": "UNAVAILABLE: "}),
    # install waits for the arbitration answer; stats, which does not arbitrate, for its Read
    (mute_tcp_listener, {"install": "no P4Runtime answer from",
                         "stats": "did not answer a Read within 0.5 s (--timeout-s)"}),
])
def test_a_tcp_listener_that_is_not_grpc_is_a_clear_error(
        tmp_path: Path, p4info_path: Path, device_config: Path, command: str,
        listener: Callable[[], Any], cause: dict[str, str]) -> None:
    """A web server or a stuck process on the P4Runtime port gave a finsy
    P4ClientError traceback (or a hang)."""
    with listener() as address:
        path = write_config(tmp_path, config(address))
        result = run_cli([command, "-c", str(path), "--p4info", str(p4info_path),
                          *pipeline_flags(command, device_config), "--timeout-s", "0.5"],
                         timeout_s=5)
    assert result.returncode == 1, result.stderr
    last = result.stderr.splitlines()[-1]             # after finsy's log lines
    assert last.startswith("mmaqm-ctl: s1: ") and cause[command] in last, result.stderr
    assert "Traceback" not in result.stderr


def test_invalid_mcdt_policy_exits_2_before_any_write(
        tmp_path: Path, p4info_path: Path, device_config: Path,
        fake_switch: ThreadedServer, capsys: pytest.CaptureFixture[str]) -> None:
    """A bad MCDT policy: every error named, and the switch never contacted."""
    server = fake_switch.server
    data = config(server.address)
    data["switches"]["s1"]["policies"][2] = {"algorithm": "MCDT", "queue_limit_pkts": 100,
                                             "mcdt_period_ms": 0, "max_p": 0.1}
    path = write_config(tmp_path, data)
    assert cli.main(["--config", str(path), "--p4info", str(p4info_path),
                     "--bmv2-json", str(device_config), "install"]) == 2
    err = capsys.readouterr().err
    assert "\n  switches.s1.policies.2.max_p: not used by MCDT" in err
    assert "  switches.s1.policies.2.mcdt_period_ms: must be >= 1, got 0\n" in err
    assert server.pipeline_pushes == []
    assert server.table_entries("port_policy") == []


def test_install_of_an_mcdt_policy_writes_thresholds_at_the_queue_limit(
        tmp_path: Path, p4info_path: Path, device_config: Path,
        fake_switch: ThreadedServer) -> None:
    """Against the compiled P4Info: the mcdt action and its parameters exist."""
    server = fake_switch.server
    data = config(server.address)
    data["switches"]["s1"]["policies"][2] = {"algorithm": "MCDT", "queue_limit_pkts": 100}
    path = write_config(tmp_path, data)
    assert cli.main(["--config", str(path), "--p4info", str(p4info_path),
                     "--bmv2-json", str(device_config), "install"]) == 0
    _, entry = server.table_entries("port_policy")
    entry.params.pop("policy_epoch")
    assert (entry.match, entry.action, entry.params) == ({"port": 2}, "mcdt", {
        "queue_limit_pkts": 100, "flow_epoch_shift": 17, "tcp_th_pkts": 100,
        "tagged_th_pkts": 100, "untagged_th_pkts": 100, "mcdt_mode": 0})


# ---------------------------------------------------- stats beside a running controller
def test_stats_reads_without_arbitrating_beside_the_primary_controller(
        tmp_path: Path, p4info_path: Path, device_config: Path, fake_switch: ThreadedServer,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`stats` used election id 5 and required primary, so it failed whenever `run`
    (election id 10) was connected; then it read as a backup with election id 1, which
    finsy turned into a bid for the primary role once the controller left. It now reads
    without a stream (P4Runtime serves Reads to any client): no arbitration at all;
    the controller stays primary and keeps writing."""
    from mmaqm.blocking import BlockingSwitch
    from mmaqm.driver import SwitchDriver
    from mmaqm.encoding import PolicyAction

    server = fake_switch.server
    path = write_config(tmp_path, config(server.address))
    controller_switch = BlockingSwitch(SwitchDriver("s1", server.address, p4info=p4info_path,
                                                    bmv2_json=device_config))
    try:
        server.counters = {"queue_arrivals": {8: (10, 15000)}}
        assert cli.main(["--config", str(path), "--p4info", str(p4info_path), "stats",
                         "--json"]) == 0
        assert [u.election_id.low for u in server.arbitrations] == [10]
        assert server.primary_election_id == 10
        controller_switch.write_port_policy(2, PolicyAction(
            "drop_tail", {"queue_limit_pkts": 64, "flow_epoch_shift": 17}))   # still primary
    finally:
        controller_switch.close()
    [line] = capsys.readouterr().out.splitlines()
    [row] = [r for r in json.loads(line)["readings"] if r["port"] == 2 and r["class"] == "TCP"]
    assert row["arrivals"] == {"packets": 10, "bytes": 15000}
    assert len(server.pipeline_pushes) == 1 and len(server.write_requests) > 0


def test_election_id_and_role_flags_reach_the_arbitration(
        tmp_path: Path, p4info_path: Path, device_config: Path, fake_switch: ThreadedServer,
        capsys: pytest.CaptureFixture[str]) -> None:
    server = fake_switch.server
    path = write_config(tmp_path, config(server.address))
    assert cli.main(["--config", str(path), "--p4info", str(p4info_path), "--bmv2-json",
                     str(device_config), "--election-id", "77", "--role", "aqm",
                     "install"]) == 0
    assert cli.main(["--config", str(path), "--p4info", str(p4info_path), "--bmv2-json",
                     str(device_config), "--election-id", str(2**64 + 3), "install"]) == 0
    first, second = server.arbitrations
    assert (first.election_id.low, first.role.name) == (77, "aqm")
    assert (second.election_id.high, second.election_id.low, second.role.name) == (1, 3, "")
    # stats does not arbitrate: it takes no election id
    assert cli.main(["--config", str(path), "--p4info", str(p4info_path),
                     "--election-id", "5", "stats"]) == 2
    assert "--election-id only applies to 'install' and 'run'" in capsys.readouterr().err
    assert len(server.arbitrations) == 2


def test_install_beside_a_controller_with_a_higher_election_id_exits_1(
        tmp_path: Path, p4info_path: Path, device_config: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A writer still needs primary: a lower --election-id than the running one is refused."""
    with serve_in_thread(FakeP4RuntimeServer(other_primary_election_id=10)) as threaded:
        path = write_config(tmp_path, config(threaded.server.address))
        assert cli.main(["--config", str(path), "--p4info", str(p4info_path), "--bmv2-json",
                         str(device_config), "--election-id", "5", "install"]) == 1
        assert threaded.server.write_requests == []
    assert capsys.readouterr().err == (
        "mmaqm-ctl: s1: another controller is primary (election id 10 > 5)\n")


# ------------------------------------------------------ bad input is exit 2, not a traceback
@pytest.mark.parametrize("data, message", [
    (lambda text: text.encode("utf-16"), "UTF-16 text (byte order mark fffe)"),
    (lambda text: text.encode() + b"# \xe9\n", "not UTF-8 text (byte 0xe9 at offset"),
    (lambda text: text.replace("max_th_pkts: 15", "max_th_pkts: 70000").encode(),
     "switches.s1.policies.2.max_th_pkts: must be <= queue_limit_pkts (60), got 70000"),
    (lambda text: text.replace("max_th_pkts: 15", "max_th_pkts: 1.0e+308").encode(),
     "switches.s1.policies.2.max_th_pkts: must be <= queue_limit_pkts (60), got 1e+308"),
    (lambda text: text.replace("max_p: 0.1", "max_p: 0.1, bandwidth_pps: 1.0e+308").encode(),
     "switches.s1.policies.2.bandwidth_pps: idle decay "),
    (lambda text: ("a: " + "[" * 300 + "]" * 300).encode(), "nested deeper than 32 levels"),
    (lambda text: ("a: [" + "0, " * 400_000 + "]").encode(), "larger than 1048576 bytes"),
], ids=["UTF-16", "Latin-1", "max_th 70000", "max_th 1e308", "bandwidth 1e308",
        "300 levels", "1.2 MB"])
def test_check_of_hostile_or_broken_input_exits_2_naming_the_cause(
        tmp_path: Path, data: Callable[[str], bytes], message: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    text = yaml.safe_dump(config("127.0.0.1:9559"), default_flow_style=True, width=10**6)
    path = tmp_path / "cfg.yaml"
    path.write_bytes(data(text))
    assert cli.main(["--config", str(path), "check"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mmaqm-ctl: invalid config {path}:\n  ") and message in err, err


def test_a_long_error_list_is_cut(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = config("127.0.0.1:9559")
    data["classifier"] = {"tagged_dscp": ["x"] * 64}
    path = write_config(tmp_path, data)
    assert cli.main(["--config", str(path), "check"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 + cli.MAX_REPORTED_ERRORS + 1
    assert lines[-1] == f"  ... and {64 - cli.MAX_REPORTED_ERRORS} more"


# ------------------------------------------------ the command line: subcommands, help
REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = REPO_ROOT / "examples"
# flags each subcommand's --help must list, and flags it must not (they do not work there)
SUBCOMMAND_FLAGS = {
    "check": (["--config", "--json", "--verbose"],
              ["--p4info", "--bmv2-json", "--switch", "--stats-out", "--election-id"]),
    "install": (["--config", "--switch", "--p4info", "--bmv2-json", "--election-id", "--role",
                 "--timeout-s", "--ca-cert", "--cert", "--key", "--tls-server-name"],
                ["--json", "--stats-out", "--events-out", "--reconnect-timeout-s",
                 "--enforce-interval-s"]),
    "run": (["--config", "--switch", "--p4info", "--bmv2-json", "--stats-out",
             "--stats-interval-ms", "--events-out", "--reconnect-timeout-s", "--election-id",
             "--role", "--timeout-s", "--enforce-interval-s", "--ca-cert", "--cert", "--key",
             "--tls-server-name"],
            ["--json"]),
    "stats": (["--config", "--switch", "--p4info", "--json", "--role", "--timeout-s",
               "--ca-cert", "--cert", "--key", "--tls-server-name"],
              ["--bmv2-json", "--stats-out", "--reconnect-timeout-s", "--election-id",
               "--enforce-interval-s"]),
}


def usage(help_text: str) -> str:
    return help_text.split("\n\n", 1)[0]


@pytest.mark.parametrize("command", sorted(SUBCOMMAND_FLAGS))
def test_each_subcommand_has_its_own_help_with_its_flags_and_an_example(
        command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: mmaqm-ctl {command} ")
    assert cli.COMMANDS[command].summary in " ".join(out.split())     # the description
    present, absent = SUBCOMMAND_FLAGS[command]
    assert set(present) <= set(re.findall(r"--[a-z0-9-]+", out)), out
    assert not set(absent) & set(re.findall(r"^  (--[a-z0-9-]+)", out, re.MULTILINE)), out
    assert not set(absent) & set(re.findall(r"--[a-z0-9-]+", usage(out))), out
    assert "example" in out and f"  mmaqm-ctl {command} -c examples/dumbbell.yaml" in out


def test_global_help_lists_the_subcommands_and_exits_0(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: mmaqm-ctl ")
    for command in cli.COMMANDS:
        assert re.search(rf"^    {command} +\S", out, re.MULTILINE), out
    assert "--stats-out" not in usage(out)     # a subcommand's flag: in that one's help


def test_help_texts_name_no_tracker_issues(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--help"], *([command, "--help"] for command in cli.COMMANDS)):
        assert cli.main(argv) == 0
        out = capsys.readouterr().out
        assert not re.search(r"(?i)\bissues?\b|#\d|\bgh-\d", out), (argv, out)


def test_a_bare_invocation_prints_the_help_and_exits_2_contacting_no_switch(
        tmp_path: Path, fake_switch: ThreadedServer,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`run` must be named: a config alone (once the old default `run`) does nothing."""
    server = fake_switch.server
    path = write_config(tmp_path, config(server.address))
    for argv in ([], ["-c", str(path)], ["--config", str(path), "-v"]):
        assert cli.main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("usage: mmaqm-ctl "), err
        assert "{check,install,run,stats}" in err
        assert err.rstrip().endswith("to run the controller: mmaqm-ctl run -c CONFIG")
    assert server.arbitrations == [] and server.pipeline_pushes == []


def test_a_bare_process_exits_2() -> None:
    result = run_cli([])
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("usage: mmaqm-ctl ")


def test_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.metadata

    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"mmaqm-ctl {importlib.metadata.version('mmaqm')}\n"


def test_version_falls_back_to_the_package_attribute(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    import mmaqm

    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    monkeypatch.setattr(mmaqm, "__version__", "9.8.7", raising=False)
    assert cli.package_version() == "9.8.7"


@pytest.mark.parametrize("typed, suggestion", [
    ("instal", "; did you mean 'install'?"), ("stat", "; did you mean 'stats'?"),
    ("chek", "; did you mean 'check'?"), ("rn", "; did you mean 'run'?"), ("zzz", ""),
])
def test_an_unknown_subcommand_is_an_error_with_the_closest_one(
        valid_config: Path, typed: str, suggestion: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["-c", str(valid_config), typed]) == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == (f"mmaqm-ctl: error: unknown subcommand {typed!r} (choose from check, "
                    f"install, run, stats){suggestion}")


def test_config_is_accepted_before_and_after_the_subcommand(
        valid_config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["check", "-c", str(valid_config)], ["-c", str(valid_config), "check"],
                 ["check", f"--config={valid_config}"]):
        assert cli.main(argv) == 0, argv
        assert capsys.readouterr().out == f"{valid_config}: ok (1 switches)\n"


def test_a_subcommand_without_a_config_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: mmaqm-ctl check ")
    assert "mmaqm-ctl check: error: the following arguments are required: -c/--config" in err


@pytest.mark.parametrize("argv, message", [
    (["install", "--stats-out", "x.jsonl"], "--stats-out only applies to 'run'"),
    (["check", "--p4info", "p4info.txtpb"],
     "--p4info only applies to 'install', 'run' and 'stats'"),
    (["--p4info", "p4info.txtpb", "check"],
     "--p4info only applies to 'install', 'run' and 'stats'"),
    (["stats", "--bmv2-json", "main.json"], "--bmv2-json only applies to 'install' and 'run'"),
    (["--device-config", "main.json", "stats"],
     "--bmv2-json only applies to 'install' and 'run'"),
    (["install", "--json"], "--json only applies to 'check' and 'stats'"),
    (["run", "--json"], "--json only applies to 'check' and 'stats'"),
    (["check", "--switch", "s1"], "--switch only applies to 'install', 'run' and 'stats'"),
    (["install", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_a_flag_is_accepted_only_by_the_subcommands_it_works_on(
        valid_config: Path, argv: list[str], message: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([*argv, "-c", str(valid_config)]) == 2
    err = capsys.readouterr().err
    command = next(a for a in argv if a in cli.COMMANDS)
    assert err.splitlines()[-1] == f"mmaqm-ctl {command}: error: {message}", err


def test_switch_given_before_and_after_the_subcommand_are_both_used(
        valid_config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--switch", "s8", "install", "-c", str(valid_config),
                     "--switch", "s9"]) == 2
    assert "unknown switch ['s8', 's9']; config has ['s1']" in capsys.readouterr().err


def test_a_flag_after_the_subcommand_wins(valid_config: Path) -> None:
    args = cli.parse_args(["--timeout-s", "3", "--role", "a", "stats", "-c",
                           str(valid_config), "--timeout-s", "4"])
    assert (args.command, args.timeout_s, args.role, args.json) == ("stats", 4.0, "a", False)
    assert args.config == valid_config and args.switch is None
    assert args.p4info == cli.DEFAULT_P4INFO and args.election_id is None


@pytest.mark.parametrize("argv, command, given", [
    # the shapes the repository's scripts use (tests/exp, topologies, tools, bench, ptf-tests)
    (["-c", "c", "--p4info", "P", "--bmv2-json", "B", "--events-out", "E", "--election-id",
      "5", "run"], "run", {"p4info": "P", "bmv2_json": "B", "events_out": "E", "election_id": 5}),
    (["--config", "c", "--p4info", "P", "--bmv2-json", "B", "run", "--stats-out", "S",
      "--stats-interval-ms", "50", "--events-out", "E"],
     "run", {"p4info": "P", "stats_out": "S", "stats_interval_ms": 50.0, "events_out": "E"}),
    (["--config", "c", "--bmv2-json", "B", "install"], "install", {"bmv2_json": "B"}),
    (["--config", "c", "stats", "--switch", "r1"], "stats", {"switch": ["r1"]}),
    (["--config", "c", "stats", "--json"], "stats", {"json": True}),
    (["--config", "c", "install"], "install", {}),
])
def test_the_repositorys_invocations_still_parse(argv: list[str], command: str,
                                                 given: dict[str, Any]) -> None:
    args = cli.parse_args(argv)
    assert (args.command, args.config) == (command, Path("c"))
    assert {key: getattr(args, key) for key in given} == {
        key: Path(value) if key in ("p4info", "bmv2_json", "stats_out", "events_out")
        else value for key, value in given.items()}


# ------------------------------------------------------------ check --json
def test_check_json_of_a_valid_config(valid_config: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", "-c", str(valid_config), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"config": str(valid_config), "valid": True,
                               "switches": ["s1"], "errors": []}
    assert out.count("\n") == 1 and err == ""


def test_check_json_of_an_invalid_config_lists_every_error_on_stdout(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = config("127.0.0.1:1", min_th_pkts=30)
    data["classifier"] = {"tagged_dscp": ["x"] * 64}
    path = write_config(tmp_path, data)
    assert cli.main(["check", "-c", str(path), "--json"]) == 2
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert err == ""
    assert (result["config"], result["valid"], result["switches"]) == (str(path), False, [])
    assert len(result["errors"]) == 65                     # not cut at MAX_REPORTED_ERRORS
    assert "switches.s1.policies.2.min_th_pkts: must be < max_th_pkts (15), got 30" \
        in result["errors"]


def test_check_json_of_a_missing_file(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "absent.yaml"
    assert cli.main(["check", "-c", str(path), "--json"]) == 2
    result = json.loads(capsys.readouterr().out)
    assert result["valid"] is False and len(result["errors"]) == 1
    assert "absent.yaml" in result["errors"][0]


def test_check_json_as_a_process(tmp_path: Path) -> None:
    path = write_config(tmp_path, config("127.0.0.1:1", algorithm="FOO"))
    result = run_cli(["check", "--json", "-c", str(path)])
    assert result.returncode == 2 and result.stderr == ""
    [error] = json.loads(result.stdout)["errors"]
    assert error.startswith("switches.s1.policies.2.algorithm: must be one of")


# ------------------------------------------------ did-you-mean for config keys
def test_check_suggests_the_key_meant(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    data = config("127.0.0.1:1")
    policy = data["switches"]["s1"]["policies"]["default"] = {
        "algorithm": "RED", "min_th": 5, "max_th_pkts": 15, "max_p": 0.1}
    data["switches"]["s1"]["p4runtime_adr"] = data["switches"]["s1"].pop("p4runtime_addr")
    path = write_config(tmp_path, data)
    assert cli.main(["check", "-c", str(path)]) == 2
    err = capsys.readouterr().err
    assert re.search(r"^  switches\.s1\.policies\.default\.min_th: unknown key \(allowed: "
                     r"[^)]*\); did you mean 'min_th_pkts'\?$", err, re.MULTILINE), err
    assert re.search(r"^  switches\.s1\.p4runtime_adr: unknown key \(allowed: [^)]*\); "
                     r"did you mean 'p4runtime_addr'\?$", err, re.MULTILINE), err
    assert policy["min_th"] == 5


# ------------------------------------------------------------ examples/
def example_configs() -> list[Path]:
    return sorted(EXAMPLES.glob("*.yaml")) + sorted(EXAMPLES.glob("*.yml"))


def test_the_dumbbell_example_checks_as_the_readme_says() -> None:
    """`mmaqm-ctl check -c examples/dumbbell.yaml` from the repository root: exit 0."""
    result = subprocess.run([sys.executable, "-m", "mmaqm.cli", "check", "-c",
                             "examples/dumbbell.yaml"], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=SUBPROCESS_TIMEOUT_S)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "examples/dumbbell.yaml: ok (1 switches)\n"


def test_there_are_examples() -> None:
    assert EXAMPLES / "dumbbell.yaml" in example_configs()


@pytest.mark.parametrize("path", example_configs(), ids=lambda p: p.name)
def test_every_example_config_validates(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", "-c", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["valid"] and result["errors"] == [] and result["switches"]


def test_the_dumbbell_example_is_what_the_walkthrough_needs() -> None:
    data = yaml.safe_load((EXAMPLES / "dumbbell.yaml").read_text())
    [(name, switch)] = data["switches"].items()
    assert (switch["p4runtime_addr"], switch["device_id"]) == ("127.0.0.1:9559", 1)
    assert sorted(switch["ports"]) == [1, 2] and all(p["mac"] for p in switch["ports"].values())
    assert sorted((r["prefix"], r["port"]) for r in switch["routes"]) == [
        ("10.0.1.0/24", 1), ("10.0.2.0/24", 2)]
    assert switch["policies"]["default"]["algorithm"] == "DCBT"


def test_stats_on_a_tofino_build_reports_frames_from_other_pipes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The compiler's P4Info of the TNA RED build has other_pipe_discards (frames
    from ports outside pipe 0, by pipe): stats prints a line for it after the
    table, and --json carries it per pipe."""
    from fake_p4rt import load_p4info

    tna_p4info = Path(__file__).resolve().parent / "fixtures" / "tna-red.p4info.txtpb"
    server = FakeP4RuntimeServer(p4info=load_p4info(tna_p4info))
    server.counters = {"other_pipe_discards": {1: (5, 320), 2: (1, 64)}}
    with serve_in_thread(server):
        path = write_config(tmp_path, config(server.address))
        assert cli.main(["--config", str(path), "--p4info", str(tna_p4info), "stats"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert cli.main(["--config", str(path), "--p4info", str(tna_p4info), "stats",
                         "--json"]) == 0
        [line] = capsys.readouterr().out.splitlines()
    assert lines[2 + 6:] == [
        "frames from ports outside pipe 0, discarded: 6 (pipe 1 5, pipe 2 1, pipe 3 0)", ""]
    assert json.loads(line)["other_pipe_discards"] == {"1": 5, "2": 1, "3": 0}
