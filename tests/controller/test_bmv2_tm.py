"""bmv2_tm: the traffic-manager settings are checked against simple_switch.thrift's
argument types before simple_switch_CLI runs (no switch needed)."""

from __future__ import annotations

from typing import Any

import pytest

from mmaqm import bmv2_tm


@pytest.fixture
def cli_calls(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    calls: list[list[str]] = []
    monkeypatch.setattr(bmv2_tm, "_cli", lambda port, commands, netns=None: calls.append(commands))
    return calls


def test_valid_settings_reach_the_cli(cli_calls: list[list[str]]) -> None:
    bmv2_tm.set_queue_depth(9090, 2, 2**31 - 1)
    bmv2_tm.set_queue_rate(9090, 2, 2**63 - 1)
    bmv2_tm.set_queue_rate(9090, 2, 0)                     # 0: unlimited
    assert cli_calls == [[f"set_queue_depth {2**31 - 1} 2"], [f"set_queue_rate {2**63 - 1} 2"],
                         ["set_queue_rate 0 2"]]


def test_several_ports_are_set_in_one_cli_run(cli_calls: list[list[str]]) -> None:
    bmv2_tm.set_queues(9090, rates_pps={1: 0, 2: 4}, depths_pkts={1: 1024, 2: 64})
    assert cli_calls == [["set_queue_depth 1024 1", "set_queue_depth 64 2",
                          "set_queue_rate 0 1", "set_queue_rate 4 2"]]
    bmv2_tm.set_queues(9090)
    assert len(cli_calls) == 1                              # nothing to set: no CLI run


@pytest.mark.parametrize("kwargs, message", [
    ({"rates_pps": {1: 0, 2: -1}}, "rate_pps must be an integer"),
    ({"depths_pkts": {1: 64, 2: 0}}, "depth_pkts must be an integer in 1..2147483647"),
    ({"rates_pps": {-1: 0}}, "port must be an integer in 0..2147483647"),
])
def test_one_bad_value_sets_no_port(cli_calls: list[list[str]], kwargs: dict,
                                    message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bmv2_tm.set_queues(9090, **kwargs)
    assert cli_calls == []


# depth and rate were unbounded above (and floats passed), while Thrift
# takes an i32 depth and an i64 rate
@pytest.mark.parametrize("call, message", [
    (lambda: bmv2_tm.set_queue_depth(9090, 2, 2**31), r"depth_pkts must be an integer in "
                                                       r"1\.\.2147483647, got 2147483648"),
    (lambda: bmv2_tm.set_queue_depth(9090, 2, 0), "depth_pkts must be an integer in 1..2147483647"),
    (lambda: bmv2_tm.set_queue_depth(9090, 2, 64.5), "got 64.5"),
    (lambda: bmv2_tm.set_queue_rate(9090, 2, 2**63), "rate_pps must be an integer in "
                                                     "0..9223372036854775807"),
    (lambda: bmv2_tm.set_queue_rate(9090, 2, -1), "rate_pps must be an integer"),
    (lambda: bmv2_tm.set_queue_rate(9090, 2, float("inf")), "got inf"),
    (lambda: bmv2_tm.set_queue_rate(9090, 2, True), "got True"),
    (lambda: bmv2_tm.set_queue_rate(9090, -1, 100), "port must be an integer in 0..2147483647"),
])
def test_out_of_range_settings_are_refused_before_the_cli(
        cli_calls: list[list[str]], call: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()
    assert cli_calls == []


def test_register_writes_reach_the_cli_in_one_run(cli_calls: list[list[str]]) -> None:
    bmv2_tm.register_write(9090, [("tag_guard_tat", 8193, 0), ("fred_qlen", 3, 2**64 - 1)])
    assert cli_calls == [["register_write tag_guard_tat 8193 0",
                          f"register_write fred_qlen 3 {2**64 - 1}"]]


@pytest.mark.parametrize("writes, message", [
    ([("tag_guard_tat; reset", 1, 0)], "register name must be an identifier"),
    ([("tag_guard_tat", -1, 0)], "index must be an integer"),
    ([("tag_guard_tat", 1, 2**64)], "value must be an integer"),
    ([("tag_guard_tat", 1, 0), ("tag_guard_tat", 1, 0.5)], "got 0.5"),
])
def test_bad_register_writes_are_refused_before_the_cli(
        cli_calls: list[list[str]], writes: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bmv2_tm.register_write(9090, writes)
    assert cli_calls == []
