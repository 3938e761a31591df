"""algorithms.dcbt (dcbt §3.1), plus the small red / cbt helpers."""

from __future__ import annotations

import math

import pytest

from mmaqm.algorithms import cbt, dcbt, red


@pytest.mark.parametrize("counts, shares", [
    ((2, 1, 1), (0.25, 0.25)),        # n_all = 4
    ((3, 0, 1), (0.0, 0.25)),
    ((0, 3, 0), (1.0, 0.0)),
    ((1, 1, 1), (1 / 3, 1 / 3)),
    ((0, 0, 0), (1.0, 1.0)),          # no flows known yet: no class restriction
])
def test_class_shares(counts: tuple[int, int, int], shares: tuple[float, float]) -> None:
    assert dcbt.class_shares(*counts) == shares


@pytest.mark.parametrize("counts", [(-1, 0, 0), (0, 1.5, 0), (0, 0, True)])
def test_class_shares_rejects(counts: tuple) -> None:
    with pytest.raises(ValueError):
        dcbt.class_shares(*counts)


@pytest.mark.parametrize("share, q16", [
    (0.25, 16384),        # 0.25 * 65536
    (1 / 3, 21845),       # 21845.33 -> 21845
    (2 / 3, 43691),       # 43690.67 -> 43691 (round, not truncate)
    (1.0, 65536),
    (0.0, 0),
    (1.5, 65536),         # clamped
    (-0.1, 0),            # clamped
])
def test_tagged_share_q16(share: float, q16: int) -> None:
    assert dcbt.tagged_share_q16(share) == q16


def test_tagged_share_q16_rejects_nan() -> None:
    with pytest.raises(ValueError):
        dcbt.tagged_share_q16(math.nan)


@pytest.mark.parametrize("share, scaled", [
    (0.5, 540672),        # 0.5 * (15 + 0.1 * 15) = 8.25 packets * 65536
    (1.0, 1081344),       # 16.5 packets: min_th plus the 10 % allowance of (max - min)
    (0.25, 270336),       # 4.125 packets
    (0.0, 0),
    (1 / 3, 360448),      # 5.5 packets = 360448 exactly
])
def test_untagged_threshold_scaled(share: float, scaled: int) -> None:
    assert dcbt.untagged_threshold_scaled(share, 15, 30, 0.1) == scaled


def test_untagged_threshold_uses_max_p_as_the_allowance() -> None:
    # max_p = 0.2: 1.0 * (10 + 0.2 * 10) = 12 packets
    assert dcbt.untagged_threshold_scaled(1.0, 10, 20, 0.2) == 12 * 65536


def test_untagged_threshold_rejects_share_outside_0_1() -> None:
    with pytest.raises(ValueError):
        dcbt.untagged_threshold_scaled(1.01, 15, 30, 0.1)


def test_dcbt_action_params() -> None:
    # dcbt §3.1: untagged 0.25 * (15 + 0.1 * (30 - 15)) = 4.125 packets * 65536 = 270336;
    # tagged share 0.5 * 65536 = 32768. Keys are the dcbt action's parameter names (dcbt.p4).
    assert dcbt.action_params(0.5, 0.25, 15, 30, 0.1) == {
        "untagged_th_scaled": 270336, "tagged_share_q16": 32768}
    with pytest.raises(ValueError):
        dcbt.action_params(1.5, 0.25, 15, 30, 0.1)      # share_tagged outside [0, 1]


def test_red_action_params() -> None:
    # 15 * 65536 = 983040, 30 * 65536 = 1966080, 0.1 / 15 * 2^24 = 111848.1 -> 111848
    assert red.action_params(15, 30, 0.1) == {
        "min_th_scaled": 983040, "max_th_scaled": 1966080, "red_slope_q24": 111848}
    with pytest.raises(ValueError):  # red_slope_q24 needs max_th > min_th (no division by <= 0)
        red.action_params(30, 15, 0.1)


def test_red_float_formulas() -> None:
    assert red.early_drop_probability(14.9, 15, 30, 0.1) == 0.0
    assert red.early_drop_probability(20, 15, 30, 0.1) == pytest.approx(0.1 * 5 / 15)
    assert red.early_drop_probability(30, 15, 30, 0.1) == 1.0
    assert red.spread_drop_probability(0.1, 0) == pytest.approx(0.1)
    assert red.spread_drop_probability(0.1, 5) == pytest.approx(0.2)    # 0.1 / (1 - 0.5)
    assert red.spread_drop_probability(0.1, 9) == 1.0                   # 1 - 0.9 = 0.1 <= p_b


def test_cbt_action_params() -> None:
    # cbt §4: tagged 10, untagged 2 packets
    assert cbt.action_params(10, 2) == {"tagged_th_scaled": 655360, "untagged_th_scaled": 131072}
    assert cbt.thresholds_scaled(0.5, 0) == (32768, 0)
