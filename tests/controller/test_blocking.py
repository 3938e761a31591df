"""blocking: BlockingSwitch over real gRPC against the fake switch, which runs
on its own event loop in another thread (fake_p4rt.serve_in_thread)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fake_p4rt import FakeP4RuntimeServer, ThreadedServer, WrittenEntry, serve_in_thread
from mmaqm.blocking import BlockingSwitch, background_loop
from mmaqm.driver import CounterValue, SwitchDriver
from mmaqm.encoding import PolicyAction

DROP_TAIL = PolicyAction("drop_tail", {"queue_limit_pkts": 64, "flow_epoch_shift": 17})


def blocking_switch(server: FakeP4RuntimeServer, p4info: Path, device_config: Path,
                    **kwargs: object) -> BlockingSwitch:
    return BlockingSwitch(SwitchDriver("s1", server.address, p4info=p4info,
                                       bmv2_json=device_config, **kwargs))  # type: ignore[arg-type]


def test_calls_block_until_the_switch_answered(
        fake_switch: ThreadedServer, p4info_path: Path, device_config: Path) -> None:
    server = fake_switch.server
    switch = blocking_switch(server, p4info_path, device_config)
    try:
        assert server.primary_election_id == 10 and len(server.pipeline_pushes) == 1
        assert switch.name == "s1"                     # a plain attribute passes through
        assert switch.read_port_policy(5) is None
        switch.write_port_policy(5, DROP_TAIL)
        # the write is on the switch when the call returns
        assert server.table_entries("port_policy") == [WrittenEntry(
            "port_policy", {"port": 5}, "drop_tail",
            {"queue_limit_pkts": 64, "flow_epoch_shift": 17})]
        assert switch.read_port_policy(5) == DROP_TAIL
        fake_switch.call(server.counters.update, {"queue_departures": {21: (3, 180)}})
        assert switch.read_counter_indexes({"queue_departures": [21]}) == {
            "queue_departures": {21: CounterValue(3, 180)}}
        with pytest.raises(ValueError, match="port 64 outside 0..63"):
            switch.write_port_policy(64, DROP_TAIL)   # errors surface in the caller's thread
    finally:
        switch.close()
    # the process's one background loop goes on, for the next switch
    assert switch._thread.is_alive() and not switch._loop.is_closed()


def test_close_ends_the_p4runtime_stream(
        fake_switch: ThreadedServer, p4info_path: Path, device_config: Path) -> None:
    server = fake_switch.server
    blocking_switch(server, p4info_path, device_config).close()
    # The server takes a new stream only after the old one closed: a second
    # controller connects and becomes primary.
    second = blocking_switch(server, p4info_path, device_config, election_id=11)
    try:
        assert server.primary_election_id == 11
        assert [a.election_id.low for a in server.arbitrations] == [10, 11]
    finally:
        second.close()


def test_run_gives_up_after_its_timeout(
        fake_switch: ThreadedServer, p4info_path: Path, device_config: Path) -> None:
    switch = blocking_switch(fake_switch.server, p4info_path, device_config)
    try:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            switch.run(asyncio.sleep(5), timeout_s=0.1)
        assert time.monotonic() - started < 1
    finally:
        switch.close()


def test_a_refused_connection_raises_in_the_constructor(
        p4info_path: Path, device_config: Path) -> None:
    with serve_in_thread(FakeP4RuntimeServer(other_primary_election_id=100)) as threaded:
        with pytest.raises(RuntimeError, match="s1: another controller is primary"):
            blocking_switch(threaded.server, p4info_path, device_config)


def test_a_refused_connection_leaves_no_thread(p4info_path: Path, device_config: Path) -> None:
    with serve_in_thread(FakeP4RuntimeServer(other_primary_election_id=100)) as threaded:
        background_loop()                    # the shared loop is not the switch's thread
        before = set(threading.enumerate())
        with pytest.raises(RuntimeError):
            blocking_switch(threaded.server, p4info_path, device_config)
        assert set(threading.enumerate()) - before == set()


def test_every_switch_shares_one_loop_and_a_timed_out_call_is_cancelled(
        fake_switch: ThreadedServer, p4info_path: Path, device_config: Path) -> None:
    first = blocking_switch(fake_switch.server, p4info_path, device_config)
    first.close()
    second = blocking_switch(fake_switch.server, p4info_path, device_config)
    try:
        assert second._loop is first._loop
        started: list[asyncio.Task] = []

        async def slow() -> None:
            started.append(asyncio.current_task())  # type: ignore[arg-type]
            await asyncio.sleep(5)

        with pytest.raises(TimeoutError):
            second.run(slow(), timeout_s=0.1)
        deadline = time.monotonic() + 2
        while not started[0].done() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert started[0].cancelled()         # nothing of it runs on in the shared loop
    finally:
        second.close()


OPEN_CLOSE_CYCLES = 30
OPEN_CLOSE_SCRIPT = f"""
import sys
from pathlib import Path
from fake_p4rt import FakeP4RuntimeServer, serve_in_thread
from mmaqm.blocking import BlockingSwitch
from mmaqm.driver import SwitchDriver
p4info, device_config = Path(sys.argv[1]), Path(sys.argv[2])
with serve_in_thread(FakeP4RuntimeServer()) as threaded:
    for _ in range({OPEN_CLOSE_CYCLES}):
        switch = BlockingSwitch(SwitchDriver("s1", threaded.server.address, p4info=p4info,
                                             bmv2_json=device_config))
        switch.read_port_policy(5)
        switch.close()
print("done")
"""


def test_opening_and_closing_switches_logs_no_traceback(
        p4info_path: Path, device_config: Path) -> None:
    # With a loop per switch, closed with it, 30 cycles logged about 8 "Event loop is
    # closed" tracebacks and 6 "Task was destroyed but it is pending" (2026-11-27).
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-c", OPEN_CLOSE_SCRIPT, str(p4info_path),
                             str(device_config)], capture_output=True, text=True, timeout=120,
                            env=env)
    assert result.returncode == 0 and result.stdout.strip() == "done", result.stderr
    for text in ("Traceback", "Event loop is closed", "Task was destroyed"):
        assert text not in result.stderr, result.stderr
