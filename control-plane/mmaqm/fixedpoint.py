"""Fixed-point conversions of the controller (units of defines.p4).

Units:
  * ``*_scaled``: packets * 2^AVG_FRAC_BITS, in bit<32>;
  * ``*_q16``:    probabilities / shares * 2^PROB_FRAC_BITS;
  * ``*_q24``:    RED slope max_p / (max_th - min_th) per packet * 2^SLOPE_FRAC_BITS.

The controller conversions (``to_scaled``, ``prob_to_q16``, ``red_slope_q24``,
``ewma_shift_from_weight``) turn configuration into action parameters. The
bit-exact reference model of the P4 AQM (``p4_to_scaled``, ``ewma``,
``red_p_b_q16``, ``red_decide``, ``PortModel``), which the tests use to predict
exact outcomes, is the test oracle's: ``mmaqm_oracle.fixedpoint_model`` (oracle/).
"""

from __future__ import annotations

import math

from . import p4constants as C

MASK32 = (1 << 32) - 1
MASK64 = (1 << 64) - 1
AVG_ONE = 1 << C.AVG_FRAC_BITS          # 1 packet, scaled
PROB_ONE = C.PROB_ONE                   # 1.0 in Q16
MAX_EWMA_SHIFT = 31


# ---------------------------------------------------------------- conversions
def _check_finite_nonneg(what: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be finite and >= 0, got {value!r}")


def to_scaled(pkts: float) -> int:
    """Packets -> packets * 2^AVG_FRAC_BITS, rounded; must fit bit<32>."""
    _check_finite_nonneg("pkts", pkts)
    scaled = round(pkts * AVG_ONE)
    if scaled > MASK32:
        raise ValueError(f"{pkts!r} packets * 2^{C.AVG_FRAC_BITS} does not fit in bit<32>")
    return scaled


def from_scaled(value_scaled: int) -> float:
    """packets * 2^AVG_FRAC_BITS -> packets."""
    return value_scaled / AVG_ONE


def prob_to_q16(p: float) -> int:
    """Probability or share in [0, 1] -> round(p * 2^PROB_FRAC_BITS)."""
    _check_finite_nonneg("p", p)
    if p > 1:
        raise ValueError(f"probability must be in [0, 1], got {p!r}")
    return round(p * PROB_ONE)


def q16_to_prob(value_q16: int) -> float:
    return value_q16 / PROB_ONE


def red_slope_q24(min_th_pkts: float, max_th_pkts: float, max_p: float) -> int:
    """round(max_p / (max_th - min_th) * 2^24): RED's p_b per packet above min_th (red.p4)."""
    _check_finite_nonneg("min_th_pkts", min_th_pkts)
    _check_finite_nonneg("max_th_pkts", max_th_pkts)
    _check_finite_nonneg("max_p", max_p)
    if max_th_pkts <= min_th_pkts:
        raise ValueError(f"max_th_pkts ({max_th_pkts!r}) must be > min_th_pkts ({min_th_pkts!r})")
    slope = round(max_p / (max_th_pkts - min_th_pkts) * (1 << C.SLOPE_FRAC_BITS))
    if slope > MASK32:
        raise ValueError(
            f"red_slope_q24 = {slope} does not fit in bit<32>: max_th - min_th "
            f"({max_th_pkts - min_th_pkts!r}) is too small for max_p {max_p!r}"
        )
    return slope


def ewma_shift_from_weight(weight: float) -> int:
    """EWMA weight w = 2^-k (k in 0..31) -> k, the ewma_shift of averages.p4.

    The data plane multiplies by w with a shift, so only powers of two exist.
    """
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise ValueError(f"weight must be a number, got {weight!r}")
    if not math.isfinite(weight) or weight <= 0:
        raise ValueError(f"weight must be > 0, got {weight!r}")
    k = round(-math.log2(weight))
    if 0 <= k <= MAX_EWMA_SHIFT and abs(weight - 2.0**-k) <= 1e-12 * 2.0**-k:
        return k
    if weight > 1:
        return _raise(f"{weight!r} is above the largest allowed weight 2^0 = 1.0")
    if weight < 2.0**-MAX_EWMA_SHIFT:
        return _raise(
            f"{weight!r} is below the smallest allowed weight "
            f"2^-{MAX_EWMA_SHIFT} = {2.0**-MAX_EWMA_SHIFT!r}"
        )
    upper_k = math.floor(-math.log2(weight))  # 2^-upper_k > weight
    lower_k = upper_k + 1                     # 2^-lower_k < weight
    return _raise(
        f"{weight!r} is not a power of two; nearest are "
        f"2^{-lower_k} = {2.0**-lower_k!r} and 2^{-upper_k} = {2.0**-upper_k!r}"
    )


def _raise(message: str) -> int:
    raise ValueError(message)


def weight_from_shift(shift: int) -> float:
    return 2.0**-shift


# ------------------------------------------------ checks
def check_int(what: str, value: object, low: int, high: int) -> int:
    """value if it is an int (not a bool) in low..high, else ValueError naming what."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{what} must be an int in {low}..{high}, got {value!r}")
    return value
