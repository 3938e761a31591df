"""blocking: BlockingSwitch over real gRPC against the fake switch, which runs
on its own event loop in another thread (fake_p4rt.serve_in_thread)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from fake_p4rt import FakeP4RuntimeServer, ThreadedServer, WrittenEntry, serve_in_thread
from mmaqm.blocking import BlockingSwitch
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
    assert not switch._thread.is_alive()
    assert switch._loop.is_closed()


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
        before = set(threading.enumerate())
        with pytest.raises(RuntimeError):
            blocking_switch(threaded.server, p4info_path, device_config)
        assert set(threading.enumerate()) - before == set()
