"""tools/tna_lpf_model.py and tools/tna_lpf_drift.py: the Lpf replica against
cases worked by hand from open-p4studio's driver (pipe_mgr_lpf_get_exponent_mantissa,
pipe_mgr_meter_tof_encode_lpf_spec) and model (MauLpfMeter::calculate_output);
the drift from v1model's EWMA bounded over the supported parameters; the
committed report docs/results/tna-lpf-drift.md is the computed one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import tna_lpf_drift as D  # noqa: E402
import tna_lpf_model as M  # noqa: E402
from mmaqm.targets import tna as T  # noqa: E402

D_SAMPLE = 1 << 20
TAU_1000 = M.LpfSpec(9, 9, 488)          # 1000 cycles: 2^9 * (1 + 488/512)


# ---- (a) the replica, case by case
def test_exponent_and_mantissa_as_the_driver_computes_them() -> None:
    assert M.exponent_mantissa(1000) == (9, 488)            # 1000/512 = 1.953125
    assert M.exponent_mantissa(1.5) == (0, 256)
    # 1 ms at 1.22 GHz: 1.22e6 cycles = 2^20 * 1.16348 -> mantissa int(83.70) = 83
    assert M.spec_from_ns(1e6, clock_hz=1.22e9) == M.LpfSpec(20, 20, 83)
    spec = M.spec_from_ns(1e6, clock_hz=1.22e9)
    assert spec.tau_cycles() == pytest.approx(1.22e6, rel=1 / 512)


def test_a_time_constant_of_2_32_cycles_wraps_the_5_bit_exponent() -> None:
    tau_ns = (1 << 32) / 1.22                   # exactly 2^32 cycles at 1.22 GHz
    assert M.exponent_mantissa(1 << 32) == (32, 0)
    wrapped = M.spec_from_ns(tau_ns, clock_hz=1.22e9)
    assert (wrapped.rise_exponent, wrapped.mantissa) == (0, 0)
    assert wrapped.tau_cycles() == 1.0          # a filter of one cycle
    assert M.spec_from_ns(tau_ns * (1 - 1e-6), clock_hz=1.22e9).rise_exponent == 31


def test_separate_gain_and_decay_must_share_the_mantissa() -> None:
    spec = M.spec_from_ns(1000, clock_hz=1e9, decay_tau_ns=8000)    # 8000 = 2^12 * 1.953
    assert (spec.rise_exponent, spec.fall_exponent, spec.mantissa) == (9, 12, 488)
    with pytest.raises(ValueError, match="mantissa"):
        M.spec_from_ns(1000, clock_hz=1e9, decay_tau_ns=3000)       # 2^11 * 1.465


def test_samples_within_2_to_the_e_minus_7_cycles_are_not_used() -> None:
    s = M.LpfState()
    s, out = M.update(TAU_1000, s, D_SAMPLE, 3)        # dt 3: SL = 1 - 9 = -8
    assert (s, out) == (M.LpfState(0, 0), 0)
    # dt 4: SL = -7, but delta = (1000 << 2) >> 9 = 7 cycles would pass now: one
    # step less, SL = -8: still not used, and the timestamp stays
    s, out = M.update(TAU_1000, s, D_SAMPLE, 4)
    assert (s, out) == (M.LpfState(0, 0), 0)
    # dt 8: SL = -6, delta 15 > 8 -> SL = -7, delta 7: V += D (2^-7 - 2^-15)
    s, out = M.update(TAU_1000, s, D_SAMPLE, 8)
    assert s == M.LpfState(8192 - 32, 7) and out == 8160


def test_a_long_gap_uses_the_table_shifts_and_a_full_step_sets_the_sample() -> None:
    # dt 10000: L = 13, SL = 4, delta 16000 > 10000 -> SL = 3, delta 8000:
    # V keeps 2^-12 + 2^-14 of itself: 1 + 0 + D - 256 - 64
    s, out = M.update(TAU_1000, M.LpfState(8160, 7), D_SAMPLE, 10007)
    assert s == M.LpfState(1048257, 8007) and out == 1048257
    # with the output scaled down by 2^4
    scaled = M.LpfSpec(9, 9, 488, scale_down=4)
    assert M.update(scaled, M.LpfState(8160, 7), D_SAMPLE, 10007)[1] == 1048257 >> 4
    # dt 20000: SL = 5, delta 32000 -> SL = 4, delta 16000: V = D
    s, _ = M.update(TAU_1000, M.LpfState(8160, 7), 12345, 20007)
    assert s == M.LpfState(12345, 16007)
    # dt 0: nothing changes
    assert M.update(TAU_1000, M.LpfState(8160, 7), D_SAMPLE, 7)[0] == M.LpfState(8160, 7)


def test_rise_and_fall_exponents_by_the_samples_direction() -> None:
    spec = M.LpfSpec(rise_exponent=9, fall_exponent=12, mantissa=488)
    # falling (D < V): e = 12, dt 8 -> SL = -9: not used
    assert M.update(spec, M.LpfState(D_SAMPLE, 0), 0, 8)[0] == M.LpfState(D_SAMPLE, 0)
    # rising (D > V): e = 9, as above: V += (D - V)(2^-7 - 2^-15)
    s, _ = M.update(spec, M.LpfState(D_SAMPLE, 0), 2 * D_SAMPLE, 8)
    assert s.value == D_SAMPLE + 8160 and s.timestamp == 7


def test_rate_mode_adds_undecayed_samples_and_saturates_at_32_bits() -> None:
    rate = M.LpfSpec(9, 9, 488, rate_mode=True)
    assert M.update(rate, M.LpfState(100, 0), 50, 3)[0] == M.LpfState(150, 0)
    # dt 8, SL = -7: V - V>>7 + V>>15 + D = 150 - 1 + 0 + 50
    assert M.update(rate, M.LpfState(150, 0), 50, 8)[0] == M.LpfState(199, 7)
    full = M.LpfState(T.LPF_VALUE_MAX, 0)
    assert M.update(rate, full, 1000, 1)[0].value == T.LPF_VALUE_MAX
    with pytest.raises(ValueError, match="one time constant"):
        M.update(M.LpfSpec(9, 12, 0, rate_mode=True), M.LpfState(), 1, 8)


def test_the_28_bit_timestamp_wraps() -> None:
    near_wrap = M.LpfState(0, (1 << 28) - 4)
    s, _ = M.update(TAU_1000, near_wrap, D_SAMPLE, (1 << 28) + 4)   # dt 8 across the wrap
    assert s == M.LpfState(8160, 3)
    # a gap of 2^28 cycles and 8 looks like 8 cycles
    s, _ = M.update(TAU_1000, M.LpfState(0, 0), D_SAMPLE, (1 << 28) + 8)
    assert s == M.LpfState(8160, 7)


# ---- (b) the drift, bounded over the supported parameters
@pytest.fixture(scope="module")
def measured() -> D.Measured:
    return D.measure()


def _accepted(m: D.Measured):
    return [r for r in m.scenarios if r.refusal is None]


def test_the_hardware_arithmetic_stays_near_the_exact_filter(measured: D.Measured) -> None:
    """Lpf against the exact time-based filter, every accepted scenario and average:
    mean relative error <= 5 %, decisions differ <= 1.5 % (the largest: 10 Mbit/s,
    where an idle gap of more than 2^28 cycles is seen modulo 2^28)."""
    for r in _accepted(measured):
        for name, c in r.averages.items():
            assert c.lpf_exact.rel_mean <= 0.05, (r.scenario.name, name)
            assert c.lpf_exact.disagreement <= 0.015, (r.scenario.name, name)
    for r in measured.sweep:            # RED at 100 Gbit/s, w = 2^-5 .. 2^-15
        h = r.averages["RED"].lpf_exact
        assert h.rel_mean <= 0.03 and h.disagreement <= 0.01, r.scenario.name


def test_the_drift_from_v1model(measured: D.Measured) -> None:
    """Lpf against v1model's per-arrival EWMA (mostly the time-based form's own
    difference, as the exact filter's row shows): RED zone decisions differ <= 10 %
    for RED, <= 20 % for CBT; mean relative error <= 25 % for RED's average,
    <= 80 % for the CBT class averages (tau = s / w takes every packet for one of
    the class, whose average v1model moves on its class's arrivals only)."""
    for r in _accepted(measured):
        cbt = r.scenario.algorithm == "CBT_RED_ALL"
        red = r.averages["RED"].lpf_v1
        assert red.disagreement <= (0.20 if cbt else 0.10), r.scenario.name
        assert red.rel_mean <= 0.25, r.scenario.name
        for name in ("CBT tagged", "CBT untagged"):
            if cbt:
                d = r.averages[name].lpf_v1
                assert d.rel_mean <= 0.80 and d.disagreement <= 0.20, (r.scenario.name, name)
        exact = r.averages["RED"].exact_v1
        assert abs(exact.disagreement - red.disagreement) <= 0.015, r.scenario.name


def test_what_the_refusal_prevents(measured: D.Measured) -> None:
    """The refused scenarios (tau >= 2^32 cycles) are those whose exponent wrapped,
    and their filter is far from the exact one."""
    refused = [r for r in measured.scenarios if r.refusal]
    assert {r.scenario.name for r in refused} == {"RED 10 Mbit/s w=2^-12",
                                                  "CBT_RED_ALL 10 Mbit/s w=2^-12"}
    for r in refused:
        assert r.spec.rise_exponent == 0 and "2^32 cycles" in r.refusal
        assert r.averages["RED"].lpf_exact.rel_mean >= 0.5


def test_the_share_limit_is_where_the_lpfs_noise_passes_twice_v1models(
        measured: D.Measured) -> None:
    ratio = {r.ewma_shift: r.sd_lpf / r.sd_v1 for r in measured.shares}
    assert all(ratio[k] <= 2.0 for k in ratio if k <= T.LPF_MAX_SHARE_EWMA_SHIFT)
    assert all(ratio[k] > 2.0 for k in ratio if k > T.LPF_MAX_SHARE_EWMA_SHIFT)


# ---- (c) the committed report
def test_the_committed_report_is_the_computed_one(measured: D.Measured,
                                                  tmp_path: Path) -> None:
    text = D.render(measured)
    assert D.is_current(D.REPORT, text), "run tools/tna_lpf_drift.py --write"
    stale = tmp_path / "tna-lpf-drift.md"
    stale.write_text(D.REPORT.read_text().replace("| RED 100 Gbit/s w=2^-9 | RED |",
                                                  "| RED 100 Gbit/s w=2^-9 | red |", 1))
    assert not D.is_current(stale, text)
    assert not D.is_current(tmp_path / "missing.md", text)
