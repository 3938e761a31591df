"""The Tofino target refuses, before any write, a port policy whose Lpf filters
the hardware cannot hold (mmaqm.targets.tna.check_lpf_limits; docs/tofino.md,
"How far the Lpf averages drift"): a time constant of 2^32 cycles or more (the
driver's 5-bit exponent wraps), a ChIPS share weight below 2^-9 (the filter
would ignore most of its independent samples), a rate filter that would
saturate. The refusal names the port, the filter, the parameter and the limit."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fake_p4rt import FakeP4RuntimeServer, run_async
from mmaqm.config import parse_config
from mmaqm.controller import SwitchController
from mmaqm.driver import SwitchDriver
from mmaqm.encoding import policy_action
from mmaqm.targets import tna as T
from mmaqm.targets.base import TargetRefusal
from mmaqm.targets.v1model import TARGET as V1MODEL_TARGET

TNA_RED_P4INFO = Path(__file__).resolve().parent / "fixtures" / "tna-red.p4info.txtpb"
PPS_10_MBITS = 10e6 / (1500 * 8)          # 833.3 packets/s: s = 1.2 ms


def config_with(policy: dict):
    return parse_config({"switches": {"s1": {
        "p4runtime_addr": "127.0.0.1:9559",
        "ports": {1: {"mac": "02:00:00:00:00:01"}, 2: {"mac": "02:00:00:00:00:02"}},
        "routes": [{"prefix": "10.0.2.0/24", "port": 2, "next_hop_mac": "02:00:00:02:00:01"}],
        "policies": {2: policy}}}})


def red(weight: float, bandwidth_pps: float | None = PPS_10_MBITS, **more) -> dict:
    policy = {"algorithm": "RED", "min_th_pkts": 5, "max_th_pkts": 15, "max_p": 0.1,
              "queue_limit_pkts": 60, "ewma_weight": weight, **more}
    if bandwidth_pps is not None:
        policy["bandwidth_pps"] = bandwidth_pps
    return policy


def policy_of(policy: dict):
    return config_with(policy).switches["s1"].policies[2]


def action_of(policy: dict):
    return policy_action(policy_of(policy), policy_epoch=1, flow_epoch_shift=0)


def both(policy: dict):
    """(the port's policy, its port_policy action): what Target.check_policy takes."""
    return policy_of(policy), action_of(policy)


def test_the_limits_in_cycles_and_nanoseconds() -> None:
    # 2^32 cycles: 3.379 s at the model's 1.271 GHz, 3.520 s at a Tofino 1's 1.22 GHz
    assert T.LPF_CHECK_CLOCK_HZ == T.TOFINO_MODEL_CLOCK_HZ == 1_271_000_000
    assert T.lpf_max_time_constant_ns() == pytest.approx(3.3792e9, rel=1e-4)
    assert T.lpf_max_time_constant_ns(T.TOFINO1_CLOCK_HZ) == pytest.approx(3.5204e9, rel=1e-4)
    assert T.lpf_time_constant_cycles(1e6, T.TOFINO1_CLOCK_HZ) == pytest.approx(1.22e6)


def test_the_check_and_the_written_spec_use_one_time_constant() -> None:
    """s = 1 / bandwidth_pps of the policy, tau = -s / ln(1 - w): the filter the
    early check sees (lpf_filters, Tna.check_policy) and the spec written over
    BfRt (tna_lpf.lpf_specs) hold the same float, for RED, CBT's class average
    and D-CBT's three; without bandwidth_pps no tau (nothing to check, and the
    spec is refused)."""
    from mmaqm.targets import tna_lpf
    assert tna_lpf.packet_time_ns(policy_of(red(2.0 ** -9))) == 1e9 / PPS_10_MBITS
    assert tna_lpf.packet_time_ns(policy_of(red(2.0 ** -9, bandwidth_pps=None))) is None
    for raw in (red(2.0 ** -9), red(2.0 ** -10, algorithm="CBT_RED_ALL", tagged_th_pkts=10,
                                      untagged_th_pkts=2),
                red(2.0 ** -9, algorithm="DCBT")):
        policy, action = both(raw)
        filters = T.lpf_filters(policy, action)
        specs = tna_lpf.lpf_specs(2, policy, action, T.TNA_UPTA_SLOTS_PER_PORT)
        by_name = {f.name: f.tau_ns for f in filters}
        assert {s.lpf for s in specs} == set(by_name)
        for spec in specs:
            assert spec.time_constant_ns == by_name[spec.lpf], (raw["algorithm"], spec)
        assert by_name["red_avg"] == T.lpf_time_constant_ns(action.params["ewma_shift"],
                                                            1e9 / PPS_10_MBITS)
    [f] = T.lpf_filters(*both(red(2.0 ** -9, bandwidth_pps=None)))
    assert f.tau_ns is None


def test_red_w_2_12_at_10_mbits_wraps_and_is_refused_naming_port_filter_and_limit() -> None:
    # tau = -1.2 ms / ln(1 - 2^-12) = 4.914 s > 3.379 s
    policy, action = both(red(2.0 ** -12))
    [f] = T.lpf_filters(policy, action)
    assert f.name == "red_avg" and f.tau_ns == pytest.approx(4.914e9, rel=1e-3)
    with pytest.raises(TargetRefusal) as err:
        T.TARGET.check_policy(2, policy, action)
    text = str(err.value)
    assert text.startswith("port 2: the Lpf red_avg: time constant tau_ns 4.91")
    assert "2^32 cycles" in text and "tau_ns < 3.3792e+09" in text
    T.TARGET.check_policy(2, *both(red(2.0 ** -9)))          # 0.614 s: held
    V1MODEL_TARGET.check_policy(2, policy, action)            # v1model has no Lpf
    # without bandwidth_pps the policy fixes no time constant: nothing to check here
    T.TARGET.check_policy(2, *both(red(2.0 ** -12, bandwidth_pps=None)))


def test_the_boundary_is_2_to_the_32_cycles() -> None:
    limit_ns = T.lpf_max_time_constant_ns()
    below = T.LpfFilter("red_avg", 9, limit_ns * (1 - 1e-9))
    T.check_lpf_filter(3, below)
    with pytest.raises(TargetRefusal, match="port 3: the Lpf red_avg"):
        T.check_lpf_filter(3, T.LpfFilter("red_avg", 9, limit_ns))
    # at a slower clock the same tau fits
    T.check_lpf_filter(3, T.LpfFilter("red_avg", 9, limit_ns), clock_hz=T.TOFINO1_CLOCK_HZ)


def test_cbt_and_dcbt_class_averages_share_reds_limit() -> None:
    cbt = both(red(2.0 ** -12, algorithm="CBT_RED_ALL", tagged_th_pkts=10,
                   untagged_th_pkts=2))
    assert [f.name for f in T.lpf_filters(*cbt)] == ["red_avg", "class_avg"]
    dcbt = both(red(2.0 ** -9, algorithm="DCBT"))
    assert [f.name for f in T.lpf_filters(*dcbt)] == ["red_avg", "tagged_avg", "untagged_avg"]
    with pytest.raises(TargetRefusal, match="red_avg"):
        T.TARGET.check_policy(2, *cbt)


@pytest.mark.parametrize("k, refused", [(9, False), (10, True)])
def test_a_chips_share_weight_below_2_9_is_refused(k: int, refused: bool) -> None:
    policy, action = both(red(2.0 ** -9, bandwidth_pps=None, algorithm="DCBT_CHIPS",
                              chips_ewma_weight=2.0 ** -k))
    if not refused:
        T.TARGET.check_policy(2, policy, action)
        return
    with pytest.raises(TargetRefusal) as err:
        T.TARGET.check_policy(2, policy, action)
    text = str(err.value)
    assert text.startswith("port 2: the Lpf chips_tagged_share: weight 2^-10")
    assert f"2^-{T.LPF_MAX_SHARE_EWMA_SHIFT}" in text
    # RED's average at the same weight is a queue average: held (measured drift)
    T.TARGET.check_policy(2, *both(red(2.0 ** -12, bandwidth_pps=None)))


@pytest.mark.parametrize("k_shift, refused", [(21, False), (22, True)])
def test_upta_rate_time_constant_wraps_at_k_shift_22(k_shift: int, refused: bool) -> None:
    # K = 2^21 us = 2.10 s fits; 2^22 us = 4.19 s is above 3.379 s
    policy, action = both({"algorithm": "UPTA", "queue_limit_pkts": 100,
                           "upta_flow_slots": 512, "upta_k_shift": k_shift})
    [f] = T.lpf_filters(policy, action)
    assert f.name == "upta_rate" and f.ewma_shift is None
    assert f.tau_ns == (1 << k_shift) * 1000
    if refused:
        with pytest.raises(TargetRefusal, match="port 2: the Lpf upta_rate: time constant"):
            T.TARGET.check_policy(2, policy, action)
    else:
        T.TARGET.check_policy(2, policy, action)


def test_a_rate_filter_that_would_saturate_is_refused() -> None:
    # 100 Gbit/s of samples total_len << 4: 200 a nanosecond; K = 2^17 us holds
    # 2.6e10 > 2^32 - 1; the largest tau that does not saturate: (2^32 - 1) / 200 ns
    per_ns = 100e9 / 8 / 1e9 * 16
    limit_ns = T.LPF_VALUE_MAX / per_ns
    T.check_lpf_filter(2, T.LpfFilter("upta_rate", None, limit_ns * (1 - 1e-12),
                                      max_value_per_ns=per_ns))
    with pytest.raises(TargetRefusal) as err:
        T.check_lpf_filter(2, T.LpfFilter("upta_rate", None, (1 << 17) * 1000.0,
                                          max_value_per_ns=per_ns))
    assert "port 2: the Lpf upta_rate: rate mode" in str(err.value)
    assert "saturates" in str(err.value) and math.isclose(limit_ns, 21474836.475)


def install(cfg, device_config: Path):
    """Construct the controller for the TNA RED build on a fake switch with
    Stratum's rules and install; (server, plan, the refusal or None)."""
    server = FakeP4RuntimeServer(stratum_rules=True)

    async def body():
        async with server.run():
            async with SwitchDriver("s1", server.address, p4info=TNA_RED_P4INFO,
                                    bmv2_json=device_config) as d:
                try:
                    ctl = SwitchController(cfg, cfg.switches["s1"], d, clock_ms=lambda: 0.0)
                except TargetRefusal as refusal:
                    return None, refusal
                return await ctl.install(), None

    plan, refusal = run_async(body())
    return server, plan, refusal


def test_on_tofino_a_policy_whose_lpf_wraps_is_refused_before_any_write(
        device_config: Path) -> None:
    server, plan, refusal = install(config_with(red(2.0 ** -12)), device_config)
    assert plan is None and refusal is not None
    assert "port 2: the Lpf red_avg: time constant" in str(refusal)
    assert server.write_requests == []
    assert server.table_entries() == [] and server.clone_sessions == {}


def test_the_specs_written_over_bfrt_pass_the_same_check() -> None:
    """tna_lpf.lpf_specs (what the BfRt client writes) refuses what check_policy
    refuses, from the policy's own bandwidth_pps; a policy that fits gives specs.
    (An install that writes them: tests/controller/test_bfrt.py.)"""
    from mmaqm.targets import tna_lpf
    for weight, fits in ((2.0 ** -12, False), (2.0 ** -9, True)):
        policy = config_with(red(weight)).switches["s1"].policies[2]
        action = action_of(red(weight))
        if fits:
            [spec] = tna_lpf.lpf_specs(2, policy, action, T.TNA_UPTA_SLOTS_PER_PORT)
            assert spec.lpf == "red_avg" and spec.index == 2
        else:
            with pytest.raises(tna_lpf.LpfRefusal, match="port 2: the Lpf red_avg: time const"):
                tna_lpf.lpf_specs(2, policy, action, T.TNA_UPTA_SLOTS_PER_PORT)


def test_write_port_policy_refuses_before_writing(device_config: Path) -> None:
    """The driver's single-policy write (write_port_policy, as the controller's
    loops call it: with the port's policy) checks the policy through the target
    too: refused with nothing written."""
    server = FakeP4RuntimeServer(stratum_rules=True)
    wrapped = both(red(2.0 ** -12))

    async def body():
        async with server.run():
            async with SwitchDriver("s1", server.address, p4info=TNA_RED_P4INFO,
                                    bmv2_json=device_config) as d:
                with pytest.raises(TargetRefusal, match="port 2: the Lpf red_avg"):
                    await d.write_port_policy(2, wrapped[1], wrapped[0])
                refused_writes = len(server.write_requests)
                policy, action = both(red(2.0 ** -9))
                await d.write_port_policy(2, action, policy)
                return refused_writes

    assert run_async(body()) == 0
    assert [e.match["port"] for e in server.table_entries("port_policy")] == [2]
    assert {e.match["port"] for e in server.table_entries("red_zone")} == {2}
