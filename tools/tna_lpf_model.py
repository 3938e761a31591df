"""Replica of Tofino 1's Lpf extern: the driver's spec -> hardware conversion and
the filter's update per sample, in integer arithmetic on a clock in cycles.

Read from open-p4studio's sources (Apache-2.0), re-expressed here:

* bf-drivers ``src/pipe_mgr/pipe_mgr_meter_drv_workflows.c``:
  ``pipe_mgr_meter_tof_encode_lpf_spec`` turns the spec's time constant(s) in
  nanoseconds into cycles (ns * clock / 1e9, in double) and
  ``pipe_mgr_lpf_get_exponent_mantissa`` into exponent e and a 9-bit mantissa m,
  tau = 2^e * (1 + m / 512) cycles (halve until below 2, then the fraction's
  first 9 bits, truncated). A gain (rise) and a decay (fall) time constant share
  the mantissa (the driver refuses two that do not); the scale-down factor is
  5 bits; sample or rate mode is one bit. ``pipe_mgr_lpf_red_encode_entry`` /
  ``meter_set_val`` write each field masked to its width: the 5-bit exponent of
  a tau of 2^32 cycles or more wraps (e & 31), silently.
* bf-drivers ``src/pipe_mgr/pipe_mgr_rmt_cfg.c`` ``pipe_mgr_get_sp_clock_speed``
  and ``src/dvm/dvm.c`` ``bf_drv_get_clock_speed``: the clock of that
  conversion. A Tofino 1 of the full-speed SKU reports 1.22 GHz, the software
  model 1.271 GHz (``mmaqm.targets.tna.TOFINO1_CLOCK_HZ``, ``TOFINO_MODEL_CLOCK_HZ``).
* tofino-model ``src/shared/mau-lpf-meter.cpp`` ``MauLpfMeter::calculate_output``
  and ``include/shared/mau-lpf-meter.h`` (the model's source, shipped in
  open-p4studio's pkgsrc/tofino-model; read from the copy in
  vgurevich/open-p4studio at b6f6fca): the 128-bit word holds the value V (32
  bits) and a 28-bit timestamp. A sample D at time t (cycles, the meter ALU's
  tick; bf-asm's ``meter.cpp`` sets no time scale for an LPF):

  - dt = (t - timestamp) mod 2^28; the exponent is the rise one when D > V, else
    the fall one (sample mode; rate mode has one);
  - L = floor(log2 dt), SL = L - e; the filter advances its timestamp by
    delta = (1.m << L) >> 9 cycles, about tau * 2^SL (one step less if that
    would pass t), so the time it does not use is kept for the next sample;
  - SL <= -8 (dt below 2^(e-7) cycles) or dt == 0: sample mode keeps V (the
    sample is not used), rate mode adds D; the timestamp stays;
  - -7 <= SL < 0: V moves towards D by 2^SL - 2^(2 SL - 1) (1 - e^-x to second
    order, x = 2^SL), as shifts: sample V - V>>a + V>>b + D>>a - D>>b, rate
    V - V>>a + V>>b + D, a = -SL, b = 2a + 1;
  - 0 <= SL <= 3: V keeps 2^-a + 2^-b of itself, (a, b) = (2, 3), (3, 7),
    (6, 9), (12, 14) (e^-1, e^-2, e^-4, e^-8): sample V>>a + V>>b + D - D>>a -
    D>>b, rate V>>a + V>>b + D;
  - SL >= 4: V = D;
  - V is computed in 33 bits and saturates at 2^32 - 1; the action's output is
    V >> scale-down. (The model's one-cycle forwarding cases and the
    saturation "snap" of the timestamp, off unless meter_lpf_sat_ctl, which
    bf-asm does not set, are not replicated: they change no value here.)

The driver writes V = 0 and timestamp 0 with a spec (an all-zero word but for
the configuration fields).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "control-plane"))
from mmaqm.targets.tna import (  # noqa: E402
    LPF_EXPONENT_BITS, LPF_MANTISSA_BITS, LPF_MIN_STEP_SHIFT, LPF_TIMESTAMP_BITS,
    LPF_VALUE_MAX, TOFINO1_CLOCK_HZ)

EXPONENT_MASK = (1 << LPF_EXPONENT_BITS) - 1
MANTISSA_MASK = (1 << LPF_MANTISSA_BITS) - 1
TIMESTAMP_MASK = (1 << LPF_TIMESTAMP_BITS) - 1
SCALE_DOWN_MASK = 0x1F
VALUE_33_MASK = (1 << 33) - 1
# 0 <= SL <= 3: the shifts whose 2^-a + 2^-b stand for e^-(2^SL)
LONG_GAP_SHIFTS = {0: (2, 3), 1: (3, 7), 2: (6, 9), 3: (12, 14)}
FULL_STEP_SL = 4                       # SL >= 4: V = D
MIN_SL = -(LPF_MIN_STEP_SHIFT + 1)     # SL <= -8: the sample is not used


def exponent_mantissa(tau_cycles: float) -> tuple[int, int]:
    """pipe_mgr_lpf_get_exponent_mantissa: (e, m) with tau ~ 2^e * (1 + m/512),
    before the fields are masked to their widths."""
    x = float(tau_cycles)
    e = 0
    while x >= 2.0:
        e += 1
        x /= 2
    return e, int((x - 1.0) * 512)


@dataclass(frozen=True)
class LpfSpec:
    """The configuration fields of one Lpf word, as the driver writes them."""

    rise_exponent: int           # the gain time constant's
    fall_exponent: int           # the decay time constant's
    mantissa: int
    scale_down: int = 0
    rate_mode: bool = False

    def tau_cycles(self, rising: bool = True) -> float:
        """The time constant the word holds (pipe_mgr_meter_tof_decode_lpf_spec)."""
        e = self.rise_exponent if rising else self.fall_exponent
        return (1 + self.mantissa / 512) * 2.0 ** e


def spec_from_ns(tau_ns: float, *, clock_hz: float = TOFINO1_CLOCK_HZ,
                 decay_tau_ns: float | None = None, scale_down: int = 0,
                 rate_mode: bool = False) -> LpfSpec:
    """pipe_mgr_meter_tof_encode_lpf_spec: $LPF_SPEC_GAIN_TIME_CONSTANT_NS (and
    $LPF_SPEC_DECAY_TIME_CONSTANT_NS when separate), $LPF_SPEC_OUT_SCALE_DOWN_FACTOR,
    $LPF_SPEC_TYPE -> the word's fields (exponents masked to 5 bits, as written)."""
    e, m = exponent_mantissa(tau_ns * clock_hz / 1e9)
    fall = e
    if decay_tau_ns is not None:
        fall, m_decay = exponent_mantissa(decay_tau_ns * clock_hz / 1e9)
        if m_decay != m:
            raise ValueError(f"gain {tau_ns} ns and decay {decay_tau_ns} ns do not share a "
                             "mantissa (the driver refuses them)")
    return LpfSpec(e & EXPONENT_MASK, fall & EXPONENT_MASK, m & MANTISSA_MASK,
                   scale_down & SCALE_DOWN_MASK, rate_mode)


@dataclass(frozen=True)
class LpfState:
    """The word's state: V (32 bits) and the 28-bit timestamp (cycles mod 2^28)."""

    value: int = 0
    timestamp: int = 0


def _delta_cycles(eff_mantissa: int, lead: int, sl: int) -> int:
    if lead < 0 or sl <= MIN_SL:
        return 0
    return (eff_mantissa << lead) >> LPF_MANTISSA_BITS


def update(spec: LpfSpec, state: LpfState, sample: int,
           now_cycles: int) -> tuple[LpfState, int]:
    """One execute(sample) at now_cycles -> (the new state, the action's output)."""
    if not 0 <= sample <= LPF_VALUE_MAX:
        raise ValueError(f"sample must be 32 bits, got {sample!r}")
    v, ts = state.value, state.timestamp
    now = now_cycles & TIMESTAMP_MASK
    dt = (now - ts) & TIMESTAMP_MASK
    if spec.rate_mode:
        if spec.rise_exponent != spec.fall_exponent:
            raise ValueError("a rate filter has one time constant")
        e = spec.rise_exponent
    else:
        e = spec.rise_exponent if sample > v else spec.fall_exponent
    lead = dt.bit_length() - 1 if dt else 0
    sl = lead - e if dt else 0
    # 1.m, without the bits that stand for less than a cycle
    eff = ((1 << LPF_MANTISSA_BITS) | spec.mantissa) & \
        ((1 << LPF_MANTISSA_BITS) | ((MANTISSA_MASK << LPF_MANTISSA_BITS) >> min(e, 9)))
    delta = _delta_cycles(eff, lead, sl)
    new_ts = ts + delta
    present = now + (1 << LPF_TIMESTAMP_BITS) if ts > now else now
    if new_ts > present:                   # one step less: never past the present
        sl -= 1
        lead -= 1
        delta = _delta_cycles(eff, lead, sl)
        new_ts = ts + delta
    if dt == 0 or sl <= MIN_SL:
        new_v = v + sample if spec.rate_mode else v
    elif sl >= FULL_STEP_SL:
        new_v = sample
    elif sl >= 0:
        a, b = LONG_GAP_SHIFTS[sl]
        new_v = (v >> a) + (v >> b) + sample
        if not spec.rate_mode:
            new_v -= (sample >> a) + (sample >> b)
    else:
        a = -sl
        b = 2 * a + 1
        new_v = v - (v >> a) + (v >> b)
        new_v += sample if spec.rate_mode else (sample >> a) - (sample >> b)
    new_v = min(new_v & VALUE_33_MASK, LPF_VALUE_MAX)
    return LpfState(new_v, new_ts & TIMESTAMP_MASK), new_v >> spec.scale_down


class Lpf:
    """One filter instance: a spec, a state, and execute(sample, now_cycles)."""

    def __init__(self, spec: LpfSpec) -> None:
        self.spec = spec
        self.state = LpfState()

    def execute(self, sample: int, now_cycles: int) -> int:
        self.state, out = update(self.spec, self.state, sample, now_cycles)
        return out


def cycles_at(t_ns: float, clock_hz: float = TOFINO1_CLOCK_HZ) -> int:
    """The cycle count at t_ns from a clock started at 0."""
    return int(t_ns * clock_hz / 1e9)
