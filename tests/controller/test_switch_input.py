"""Nothing a switch sends crashes the controller, and every wait has its deadline:
against the fake switch (fake_p4rt.py).

* malformed flow reports (too few members, not a struct, class_id 255, a 400-byte
  ingress_ts_us), read answers with an unknown table id or counter id, forged
  arbitration updates (unknown status, another device id, OK for another election
  id) and unasked stream messages (errors, packet-ins, idle timeouts): each dropped,
  counted per kind and logged at most once a second per kind; the loop goes on;
* a fuzzed stream (bounded in count and time) under `run`: the controller still
  follows flow reports afterwards;
* a device id the switch does not have: one line naming the switch, exit 1;
* a switch that accepts the connection and never answers a Write or a Read:
  install and stats exit after --timeout-s saying so; run counts it toward
  --reconnect-timeout-s;
* the desired state is enforced every interval: a foreign change is repaired;
* SIGTERM to the whole process group: exit 143, no traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import yaml
from finsy.proto import U128, p4d, p4r, rpc_status

from fake_p4rt import FakeP4RuntimeServer, ipv4_int, run_async, serve_in_thread
from mmaqm.config import parse_config
from mmaqm.driver import SwitchDriver

TAGGED = 1
GOOD = {"egress_port": 2, "class_id": TAGGED, "src_addr": ipv4_int("10.0.1.10"),
        "dst_addr": ipv4_int("10.0.2.10"), "protocol": 17, "src_port": 5000,
        "dst_port": 5004, "ingress_ts_us": 1000, "ip_version": 4}
DCBT_2 = {"algorithm": "DCBT", "min_th_pkts": 5, "max_th_pkts": 15, "max_p": 0.1,
          "queue_limit_pkts": 60}
FUZZ_MESSAGES = 3000
FUZZ_TIME_BOUND_S = 20.0


def _config_data(address: str, device_id: int = 1) -> dict[str, Any]:
    return {"switches": {"s1": {
        "p4runtime_addr": address, "device_id": device_id,
        "ports": {1: {"mac": "02:00:00:00:00:01"}, 2: {"mac": "02:00:00:00:00:02"}},
        "routes": [{"prefix": "10.0.2.0/24", "port": 2, "next_hop_mac": "02:00:00:02:00:01"}],
        "policies": {"default": {"algorithm": "DROP_TAIL"}, 2: DCBT_2}}}}


def _members(server: FakeP4RuntimeServer, item: dict[str, int],
             widths: dict[str, int] | None = None) -> list[p4d.P4Data]:
    """A flow digest item's members in the struct's order, each as wide as
    widths[name] bytes if given (else its bit width's)."""
    digest = server._digest("flow_digest_t")
    struct = server.p4info.type_info.structs[digest.type_spec.struct.name]
    members = []
    for member in struct.members:
        width = (widths or {}).get(member.name,
                                   (member.type_spec.bitstring.bit.bitwidth + 7) // 8)
        members.append(p4d.P4Data(bitstring=int(item[member.name]).to_bytes(width, "big")))
    return members


def _digest_list(server: FakeP4RuntimeServer, data: list[p4d.P4Data],
                 list_id: int) -> p4r.StreamMessageResponse:
    digest = server._digest("flow_digest_t")
    return p4r.StreamMessageResponse(digest=p4r.DigestList(
        digest_id=digest.preamble.id, list_id=list_id, data=data, timestamp=time.time_ns()))


@contextlib.asynccontextmanager
async def _run_switches(server: FakeP4RuntimeServer, p4info_path: Path, device_config: Path,
                        events: list[dict[str, Any]], enforce_interval_s: float,
                        wait_for_installed: bool = True) -> AsyncIterator[asyncio.Task]:
    """`mmaqm-ctl run`'s run_switches on the fake switch, as a task that is
    cancelled on the way out; by default, entered once it reported `installed`."""
    from mmaqm.supervisor import run_switches

    task = asyncio.create_task(run_switches(
        parse_config(_config_data(server.address)), p4info=p4info_path,
        bmv2_json=device_config, event_sink=events.append,
        enforce_interval_s=enforce_interval_s))
    try:
        while wait_for_installed and not any(e["event"] == "installed" for e in events):
            assert not task.done(), task.result()
            await asyncio.sleep(0.01)
        yield task
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def _malformed_digests(server: FakeP4RuntimeServer) -> dict[str, p4r.StreamMessageResponse]:
    good = _members(server, GOOD)
    return {
        "too few members": _digest_list(server, [p4d.P4Data(
            struct=p4d.P4StructLike(members=good[:3]))], 101),
        "not a struct": _digest_list(server, [p4d.P4Data(bitstring=b"\x01\x02")], 102),
        "class_id 255": _digest_list(server, [p4d.P4Data(struct=p4d.P4StructLike(
            members=_members(server, {**GOOD, "class_id": 255})))], 103),
        "400-byte ingress_ts_us": _digest_list(server, [p4d.P4Data(struct=p4d.P4StructLike(
            members=_members(server, {**GOOD, "ingress_ts_us": 2**3000},
                             {"ingress_ts_us": 400})))], 104),
        "a member that is a struct": _digest_list(server, [p4d.P4Data(
            struct=p4d.P4StructLike(members=[p4d.P4Data(struct=p4d.P4StructLike())]
                                    + good[1:]))], 105),
    }


def test_each_malformed_flow_report_is_dropped_counted_and_the_good_ones_go_on(
        p4info_path: Path, device_config: Path, caplog: pytest.LogCaptureFixture) -> None:
    """One list holds a bad item beside a good one: the good one is reported."""
    async def body() -> tuple[list, dict[str, int]]:
        server = FakeP4RuntimeServer()
        async with server.run():
            async with SwitchDriver("s1", server.address, p4info=p4info_path,
                                    bmv2_json=device_config) as d:
                await d.enable_flow_reports()
                reports = d.flow_reports()
                first = asyncio.ensure_future(anext(reports))
                await asyncio.sleep(0.05)
                received = []
                for message in _malformed_digests(server).values():
                    good = p4d.P4Data(struct=p4d.P4StructLike(members=_members(server, GOOD)))
                    message.digest.data.append(good)
                    server.send_stream(message)
                received.append(await first)
                for _ in range(4):
                    received.append(await asyncio.wait_for(anext(reports), 2))
                await reports.aclose()
                return received, dict(d.malformed.counts)

    caplog.set_level(logging.WARNING, logger="mmaqm.driver")
    received, counts = run_async(body())
    assert [len(reports) for reports in received] == [1] * 5
    assert all(r.class_id == TAGGED for reports in received for r in reports)
    assert counts == {"malformed flow report": 5}
    lines = [r.message for r in caplog.records if "malformed flow report" in r.message]
    assert len(lines) == 1 and "s1: dropped from the switch: malformed flow report" in lines[0]


def test_read_answers_with_unknown_ids_are_counted_and_left_out(
        p4info_path: Path, device_config: Path) -> None:
    async def body() -> tuple[Any, Any, dict[str, int]]:
        server = FakeP4RuntimeServer()
        async with server.run():
            async with SwitchDriver("s1", server.address, p4info=p4info_path,
                                    bmv2_json=device_config) as d:
                server.extra_read_entities = [
                    p4r.Entity(table_entry=p4r.TableEntry(table_id=0x0BAD0BAD)),
                    p4r.Entity(counter_entry=p4r.CounterEntry(
                        counter_id=0x0BAD0BAD, index=p4r.Index(index=1),
                        data=p4r.CounterData(packet_count=1))),
                    p4r.Entity()]
                state = await d.read_state()
                counters = await d.read_counters(["queue_arrivals"])
                return state, counters, dict(d.malformed.counts)

    state, counters, counts = run_async(body())
    assert state.entries == () and counters["queue_arrivals"] != {}
    assert counts["read table_entry"] >= 2 and counts["read counter_entry"] >= 1
    assert counts["read entity"] >= 2


def test_forged_arbitration_and_unasked_stream_messages_change_nothing(
        p4info_path: Path, device_config: Path, caplog: pytest.LogCaptureFixture) -> None:
    def arbitration(device_id: int, election_id: int, code: int) -> p4r.StreamMessageResponse:
        return p4r.StreamMessageResponse(arbitration=p4r.MasterArbitrationUpdate(
            device_id=device_id, election_id=U128.encode(election_id),
            status=rpc_status.Status(code=code)))

    async def body() -> tuple[bool, dict[str, int]]:
        server = FakeP4RuntimeServer()
        async with server.run():
            async with SwitchDriver("s1", server.address, p4info=p4info_path,
                                    bmv2_json=device_config) as d:
                for message in (
                        arbitration(1, 10, 999),                    # unknown status
                        arbitration(7, 11, 6),                      # another device
                        arbitration(1, 11, 0),                      # OK for another id
                        p4r.StreamMessageResponse(error=p4r.StreamError(
                            canonical_code=13, message="\x1b[31mred\n" * 100)),
                        p4r.StreamMessageResponse(packet=p4r.PacketIn(payload=b"x" * 9000)),
                        p4r.StreamMessageResponse(
                            idle_timeout_notification=p4r.IdleTimeoutNotification()),
                        p4r.StreamMessageResponse()):
                    server.send_stream(message)
                await asyncio.sleep(0.2)
                d.check_connected()          # still up and primary
                return d.switch.is_primary and d.primary_changes == 0, dict(d.malformed.counts)

    caplog.set_level(logging.WARNING, logger="mmaqm.driver")
    unchanged, counts = run_async(body())
    assert unchanged
    assert counts == {"arbitration": 3, "stream error": 1, "stream message (packet)": 1,
                      "stream message (idle_timeout_notification)": 1,
                      "stream message (empty)": 1}
    assert not any("\x1b" in r.getMessage() or "\n" in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------- fuzz
def _fuzzed(rng: random.Random, server: FakeP4RuntimeServer) -> p4r.StreamMessageResponse:
    """One random stream message: mostly flow digests with random members, and
    arbitrations, errors, packet-ins with random fields."""
    kind = rng.choice(["digest", "digest", "digest", "arbitration", "error", "packet",
                       "idle", "bytes"])
    if kind == "digest":
        def member() -> p4d.P4Data:
            choice = rng.random()
            if choice < 0.8:
                return p4d.P4Data(bitstring=rng.randbytes(rng.choice([0, 1, 2, 4, 6, 400])))
            if choice < 0.9:
                return p4d.P4Data(struct=p4d.P4StructLike())
            return p4d.P4Data(bool=True)
        items = [p4d.P4Data(struct=p4d.P4StructLike(
                     members=[member() for _ in range(rng.choice([0, 3, 8, 8, 8, 20]))]))
                 if rng.random() < 0.9 else p4d.P4Data(bitstring=rng.randbytes(3))
                 for _ in range(rng.randint(0, 8))]
        message = _digest_list(server, items, rng.getrandbits(64))
        if rng.random() < 0.2:
            message.digest.digest_id = rng.getrandbits(32)
        return message
    if kind == "arbitration":
        # never a valid demotion (ALREADY_EXISTS for this device): that one is legitimate
        return p4r.StreamMessageResponse(arbitration=p4r.MasterArbitrationUpdate(
            device_id=rng.choice([0, 2, 2**64 - 1]), election_id=U128.encode(
                rng.getrandbits(128)), status=rpc_status.Status(code=rng.randint(0, 2**31))))
    if kind == "error":
        return p4r.StreamMessageResponse(error=p4r.StreamError(
            canonical_code=rng.randint(-5, 2**31 - 1), message=rng.randbytes(50).decode(
                "latin-1")))
    if kind == "packet":
        return p4r.StreamMessageResponse(packet=p4r.PacketIn(payload=rng.randbytes(
            rng.randint(0, 2000)), metadata=[p4r.PacketMetadata(
                metadata_id=rng.getrandbits(32), value=rng.randbytes(4))]))
    if kind == "idle":
        return p4r.StreamMessageResponse(idle_timeout_notification=p4r.IdleTimeoutNotification(
            table_entry=[p4r.TableEntry(table_id=rng.getrandbits(32))]))
    message = p4r.StreamMessageResponse()
    try:
        message.ParseFromString(rng.randbytes(rng.randint(1, 200)))
    except Exception:     # noqa: BLE001 - random bytes rarely parse
        pass
    return message


def test_a_fuzzed_stream_under_run_leaves_the_controller_following_flow_reports(
        p4info_path: Path, device_config: Path) -> None:
    events: list[dict[str, Any]] = []

    def tagged_share(server: FakeP4RuntimeServer) -> int | None:
        for entry in server.table_entries("port_policy"):
            if entry.match == {"port": 2}:
                return entry.params["tagged_share_q16"]
        return None

    async def body() -> float:
        server = FakeP4RuntimeServer()
        async with server.run(), _run_switches(server, p4info_path, device_config, events,
                                               enforce_interval_s=0.5,
                                               wait_for_installed=False) as task:
            while tagged_share(server) is None:
                assert not task.done(), task.result()
                await asyncio.sleep(0.01)
            rng = random.Random(27)
            started = time.monotonic()
            for i in range(FUZZ_MESSAGES):
                server.send_stream(_fuzzed(rng, server))
                if i % 50 == 0:
                    await asyncio.sleep(0.005)
                    assert not task.done(), task.result()
            fuzz_s = time.monotonic() - started
            server.notify_arbitration()       # the truth: this controller is primary
            # one TCP flow and one tagged: the tagged share becomes 1/2
            flows = [GOOD, {**GOOD, "class_id": 0, "protocol": 6, "src_port": 5001}]
            deadline = time.monotonic() + 10
            while tagged_share(server) != 32768:
                assert time.monotonic() < deadline, "flow reports not followed"
                assert not task.done(), task.result()
                server.send_digest("flow_digest_t", flows, list_id=7)
                await asyncio.sleep(0.05)
            assert not task.done()
            return fuzz_s

    fuzz_s = run_async(body(), timeout_s=FUZZ_TIME_BOUND_S + 20)
    assert fuzz_s < FUZZ_TIME_BOUND_S
    print(f"{FUZZ_MESSAGES} fuzzed stream messages in {fuzz_s:.2f} s; the controller went on")


# ---------------------------------------------------------------- device id
@pytest.mark.parametrize("command", ["install", "stats"])
def test_a_device_id_the_switch_does_not_have_is_one_line_naming_the_switch(
        tmp_path: Path, p4info_path: Path, device_config: Path, command: str) -> None:
    with serve_in_thread(FakeP4RuntimeServer(device_id=1)) as threaded:
        path = tmp_path / "cfg.yaml"
        path.write_text(yaml.safe_dump(_config_data(threaded.server.address, device_id=2)))
        flags = ["--bmv2-json", str(device_config)] if command == "install" else []
        result = _cli([command, "-c", str(path), "--p4info", str(p4info_path), *flags,
                       "--timeout-s", "3"])
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("mmaqm-ctl: s1: ") and "check device_id" in last, result.stderr
    assert "Traceback" not in result.stderr and "CancelledError" not in result.stderr


# ---------------------------------------------------------------- waits
def _cli(args: list[str], timeout_s: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mmaqm.cli", *args], capture_output=True,
                          text=True, timeout=timeout_s)


def _start_run(args: list[str], **popen: Any) -> subprocess.Popen[str]:
    """`mmaqm-ctl run` with args, its output piped."""
    return subprocess.Popen([sys.executable, "-m", "mmaqm.cli", "run", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


@pytest.mark.parametrize("command, rpc", [("install", "Write"), ("install", "Read"),
                                          ("stats", "Read")])
def test_a_switch_that_never_answers_fails_after_the_timeout_saying_so(
        tmp_path: Path, p4info_path: Path, device_config: Path, command: str,
        rpc: str) -> None:
    server = FakeP4RuntimeServer()
    with serve_in_thread(server) as threaded:
        server.stalled_rpcs = {rpc}
        path = tmp_path / "cfg.yaml"
        path.write_text(yaml.safe_dump(_config_data(threaded.server.address)))
        flags = ["--bmv2-json", str(device_config)] if command == "install" else []
        started = time.monotonic()
        result = _cli([command, "-c", str(path), "--p4info", str(p4info_path), *flags,
                       "--timeout-s", "1"])
        elapsed = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last == (f"mmaqm-ctl: s1: the switch at {server.address} did not answer a {rpc} "
                    f"within 1 s (--timeout-s); its connection is up"), result.stderr
    assert 1.0 <= elapsed < 8.0, elapsed      # finsy alone: 10.3 s, whatever the flag
    print(f"{command} against a switch that never answers a {rpc}: exit 1 after "
          f"{elapsed:.2f} s (--timeout-s 1)")


def test_run_counts_a_wedged_switch_toward_the_reconnect_timeout(
        tmp_path: Path, p4info_path: Path, device_config: Path) -> None:
    """Each reconnect succeeds (the stream answers), each Read never does: the
    switch is given up after --reconnect-timeout-s, not retried for ever."""
    server = FakeP4RuntimeServer()
    with serve_in_thread(server) as threaded:
        path = tmp_path / "cfg.yaml"
        path.write_text(yaml.safe_dump(_config_data(threaded.server.address)))
        proc = _start_run(["-c", str(path), "--p4info", str(p4info_path), "--bmv2-json",
                           str(device_config), "--timeout-s", "0.5",
                           "--reconnect-timeout-s", "2", "--enforce-interval-s", "0.2"])
        try:
            deadline = time.monotonic() + 10
            while not server.digest_configs:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)
            time.sleep(0.3)
            server.stalled_rpcs = {"Read"}       # wedged from now on
            wedged_at = time.monotonic()
            _, stderr = proc.communicate(timeout=20)
            elapsed = time.monotonic() - wedged_at
        finally:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, stderr
    assert "did not answer a Read within 0.5 s" in stderr
    assert "reconnected to" in stderr                  # the connection itself came back
    last = stderr.strip().splitlines()[-1]
    assert "giving up (--reconnect-timeout-s 2)" in last and last.startswith("mmaqm-ctl: s1:")
    assert 2.0 <= elapsed < 10.0, elapsed     # before: never given up
    print(f"run given up {elapsed:.2f} s after its switch wedged (--reconnect-timeout-s 2)")


# ---------------------------------------------------------------- enforced state
def test_run_repairs_a_foreign_change_within_the_enforce_interval(
        p4info_path: Path, device_config: Path) -> None:
    """A change no arbitration announced (here: the fake's table changed directly,
    as a switch-local tool would): found by the periodic read and written back."""
    events: list[dict[str, Any]] = []

    async def body() -> float:
        server = FakeP4RuntimeServer()
        async with server.run(), _run_switches(server, p4info_path, device_config, events,
                                               enforce_interval_s=0.3) as task:
            await asyncio.sleep(0.7)             # periodic checks: nothing to repair
            assert not any(e["event"] == "repaired" for e in events)
            key, entry = next((k, e) for k, e in server.entries.items()
                              if server.decode_entry(e).table == "port_policy"
                              and server.decode_entry(e).match == {"port": 2})
            action = server._action(entry.action.action.action_id)
            limit_id = next(p.id for p in action.params if p.name == "queue_limit_pkts")
            for param in entry.action.action.params:
                if param.param_id == limit_id:
                    param.value = (7).to_bytes(2, "big")
            changed_at = time.monotonic()
            while not any(e["event"] == "repaired" for e in events):
                assert time.monotonic() - changed_at < 3, "not repaired"
                await asyncio.sleep(0.01)
            latency = time.monotonic() - changed_at
            params = server.decode_entry(server.entries[key]).params
            assert params["queue_limit_pkts"] == 60
            return latency

    latency = run_async(body(), timeout_s=15)
    [repair] = [e for e in events if e["event"] == "repaired"]
    assert repair["reason"] == "periodic"
    assert repair["writes"] == [{"type": "MODIFY", "table": "port_policy", "match": {"port": 2},
                             "changed": {"queue_limit_pkts": [7, 60]}}]
    assert latency < 0.3 + 1.0                # an interval, a Read and a Write
    print(f"a foreign change repaired {latency:.3f} s later (--enforce-interval-s 0.3)")


# ---------------------------------------------------------------- signals
def test_sigterm_to_the_process_group_exits_143_without_a_traceback(
        tmp_path: Path, p4info_path: Path, device_config: Path) -> None:
    """As `timeout` and service managers do: the signal reaches every process of
    the group at once."""
    server = FakeP4RuntimeServer()
    with serve_in_thread(server) as threaded:
        path = tmp_path / "cfg.yaml"
        path.write_text(yaml.safe_dump(_config_data(threaded.server.address)))
        proc = _start_run(["-c", str(path), "--p4info", str(p4info_path), "--bmv2-json",
                           str(device_config), "--stats-out", str(tmp_path / "stats.jsonl"),
                           "--stats-interval-ms", "20"], start_new_session=True)
        try:
            deadline = time.monotonic() + 10
            while not (tmp_path / "stats.jsonl").exists() \
                    or (tmp_path / "stats.jsonl").stat().st_size == 0:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)
            started = time.monotonic()
            os.killpg(proc.pid, signal.SIGTERM)
            _, stderr = proc.communicate(timeout=10)
            elapsed = time.monotonic() - started
        finally:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr and "was destroyed but it is pending" not in stderr, stderr
    assert elapsed < 5
    print(f"SIGTERM to the group: exit 143 after {elapsed:.2f} s")


# ---------------------------------------------------------------- small parts
def test_an_election_id_in_use_is_one_line_naming_the_switch_not_a_lower_bid(
        tmp_path: Path, p4info_path: Path, device_config: Path) -> None:
    """finsy bid one lower, up to five times, and then held an id nobody chose."""
    server = FakeP4RuntimeServer()
    with serve_in_thread(server) as threaded:
        path = tmp_path / "cfg.yaml"
        path.write_text(yaml.safe_dump(_config_data(threaded.server.address)))
        common = ["-c", str(path), "--p4info", str(p4info_path), "--bmv2-json",
                  str(device_config), "--timeout-s", "3"]
        proc = _start_run(common)
        try:
            deadline = time.monotonic() + 10
            while not server.digest_configs:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)
            result = _cli(["install", *common])
        finally:
            proc.terminate()
            proc.communicate(timeout=10)
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "mmaqm-ctl: s1: election id 10 is in use by another client of the switch; choose "
        "another (--election-id)"), result.stderr
    assert "Traceback" not in result.stderr
    assert [a.election_id.low for a in server.arbitrations] == [10, 10]


def test_malformed_messages_are_logged_at_most_once_a_second_per_kind(
        caplog: pytest.LogCaptureFixture) -> None:
    from mmaqm.p4rt.guard import MalformedCounter

    now = [100.0]
    counter = MalformedCounter("s1", clock=lambda: now[0])
    caplog.set_level(logging.WARNING, logger="mmaqm.driver")
    for step in range(30):                     # 3 s, two kinds, every 0.1 s
        counter.add("flow report", f"bad {step}")
        counter.add("arbitration", "\x1b[2J" + "x" * 1000)
        now[0] += 0.1
    lines = [r.getMessage() for r in caplog.records]
    assert counter.counts == {"flow report": 30, "arbitration": 30}
    assert sum("flow report" in line for line in lines) == 3
    assert sum("arbitration" in line for line in lines) == 3
    assert all("\x1b" not in line and len(line) < 400 for line in lines)
    assert re.search(r"; 2\d so far$", lines[-1]), lines[-1]     # the count so far


def test_share_pushes_are_not_taken_for_foreign_writes(
        p4info_path: Path, device_config: Path) -> None:
    """Flows come and go while the periodic check runs every 0.1 s: the D-CBT share
    pushes are the controller's own, never repaired."""
    events: list[dict[str, Any]] = []

    async def body() -> None:
        server = FakeP4RuntimeServer()
        async with server.run(), _run_switches(server, p4info_path, device_config, events,
                                               enforce_interval_s=0.1) as task:
            started = time.monotonic()
            list_id = 0
            while time.monotonic() - started < 2.0:
                list_id += 1
                flows = [{**GOOD, "class_id": list_id % 3, "protocol": 17,
                          "src_port": 6000 + (list_id % 7)}]
                server.send_digest("flow_digest_t", flows, list_id=list_id)
                await asyncio.sleep(0.01)
            assert not task.done()

    run_async(body(), timeout_s=15)
    assert sum(e["event"] == "share_push" for e in events) >= 3
    assert [e for e in events if e["event"] == "repaired"] == []
