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
