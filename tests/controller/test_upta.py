"""UPTA and BFD (Wu & Hassan 2002; algorithms.upta): every formula on the paper's
own numbers where it has them (Table 1 losses, Table 2 thresholds, the l5 fair
shares of §6, Tables 3-5 improvement factors), the data plane's fixed-point
forms against hand-computed values and against the float forms, Fig. 7 on the
reference port model, BFD messages and checksums, and input validation.

Units of the fixed-point tests: rates and fair shares in bytes per K * 16
(RATE_FRAC_BITS = 4), thresholds and draws in Q16. A flow's first packet (or a
packet >= K after the previous one) restarts the estimate at l * 16, so those
rates are exact: l = 200 bytes -> R = 3200; l = 220 (the paper's video packet)
-> R = 3520.
"""

from __future__ import annotations

import math
import random
import struct

import pytest

from mmaqm.algorithms import bfd_codec as B
from mmaqm.algorithms import upta as U
from mmaqm.algorithms.upta import STATE_I, STATE_U
from mmaqm_oracle.upta_model import ADMIT, QUEUE_LIMIT, UPTA_FAIR_SHARE, UPTA_USELESS
from mmaqm_oracle import upta_model as UM
from mmaqm_oracle import upta_theory as UT
from conftest import RandSequence

ONE = 65536
Q012 = 7864                       # floor(0.12 * 2^16): the video's threshold as encoded


# ------------------------------------------------------------ §3, Table 1
TABLE1_RATES = [1.76, 1.76, 1.60, 1.43, 1.30, 1.17, 1.17, 1.17]   # R1 arrival, departures R1..R7


def test_table1_local_losses() -> None:
    losses = [UT.local_loss(a, d) for a, d in zip(TABLE1_RATES, TABLE1_RATES[1:])]
    # Table 1: 0, 9.1, 10, 9.1, 10, 0, 0 % (R3: 1 - 1.43/1.60 = 10.6 %, printed 10)
    assert [round(100 * p, 1) for p in losses] == [0.0, 9.1, 10.6, 9.1, 10.0, 0.0, 0.0]


def test_table1_end_to_end_loss_eq6() -> None:
    # the product of mu_k / lambda_k telescopes: 1 - 1.17 / 1.76 = 33.5 % (Table 1, D2)
    losses = [UT.local_loss(a, d) for a, d in zip(TABLE1_RATES, TABLE1_RATES[1:])]
    assert UT.cumulative_loss(losses) == pytest.approx(1 - 1.17 / 1.76)
    assert round(100 * UT.cumulative_loss(losses), 1) == 33.5
    # with the table's rounded losses: 1 - 0.909 * 0.9 * 0.909 * 0.9 = 33.07 %
    assert UT.cumulative_loss([0, 0.091, 0.10, 0.091, 0.10, 0, 0]) \
        == pytest.approx(0.33071239, abs=1e-8)


def test_eq7_every_small_loss_exceeds_12_percent_beyond_4_hops() -> None:
    # §3, Fig. 3: for LPLRs up to 12 %, P_e > 12 % once n > 4 (smallest plotted LPLR: 3 %?)
    assert UT.cumulative_loss([0.03] * 5) > 0.12
    assert UT.cumulative_loss([0.03] * 4) < 0.12
    assert UT.cumulative_loss([]) == 0.0


# ------------------------------------------------------------ §4: P-UPTA, Table 2
def test_eq17_hand_values() -> None:
    assert U.threshold_update(0.12, 0.0) == 0.12                       # R1 loses nothing
    assert U.threshold_update(0.12, 0.091) == pytest.approx(0.029 / 0.909)   # 3.19 %
    assert U.threshold_update(0.5, 0.5) == 0.0
    assert U.threshold_update(0.1, 0.2) == pytest.approx(-0.125)       # p > q: already U


def test_table2_chain() -> None:
    # Table 2: thresholds 12 %, 12 %, 3.2 % at R1-R3; R3's 10 % loss > 3.2 %: dropped there
    chain = UT.threshold_chain(0.12, [0.0, 0.091, 0.10, 0.091, 0.10, 0.0, 0.0])
    assert [round(100 * q, 1) for q in chain] == [12.0, 12.0, 3.2]
    # the same with the exact local losses of Table 1's rates
    exact = [UT.local_loss(a, d) for a, d in zip(TABLE1_RATES, TABLE1_RATES[1:])]
    assert [round(100 * q, 1) for q in UT.threshold_chain(0.12, exact)] == [12.0, 12.0, 3.2]


def test_eq17_equals_eq15_closed_form() -> None:
    # q_k = 1 - (1 - q0) / prod_{i<k} (1 - p_i) (eq. 15) for any losses below the thresholds
    ps = [0.01, 0.02, 0.015, 0.03]
    q = 0.12
    for k, p in enumerate(ps, start=1):
        q = U.threshold_update(q, p)
        prod = math.prod(1 - x for x in ps[:k])
        assert q == pytest.approx(1 - (1 - 0.12) / prod)


def test_option_encoding() -> None:
    assert U.encode_q(0.12) == Q012                # floor(7864.32)
    assert U.encode_q(0.0) == 0
    assert U.encode_q(1.0) == U.Q_FIELD_MAX        # 1 is not representable: 65535 = "none"
    assert U.option_bytes(0.12) == bytes([0x9E, 4, 0x1E, 0xB8])   # 7864 = 0x1EB8
    assert U.parse_option(bytes([0x9E, 4, 0x1E, 0xB8])) == Q012
    with pytest.raises(ValueError, match="not the UPTA option"):
        U.parse_option(bytes([0x94, 4, 0, 0]))     # router alert, not ours
    with pytest.raises(ValueError, match="data must be 4 bytes"):
        U.parse_option(b"\x9e\x04\x00")


def test_reciprocal_hand_values() -> None:
    # 2^(16+27) / 3200 = 2748779069.44, in [2^31, 2^32)
    assert U.reciprocal(3200) == (2748779069, 27)
    # 1.75 Mbit/s = 458752 = 7 * 2^16: 2^34 / 7 = 2454267026.3
    assert U.reciprocal(458752) == (2454267026, 34)
    assert U.reciprocal(1) == (2147483648, 15)     # 2^31 = 2^(16+15) / 1
    assert U.reciprocal(U.FS_INFINITE) == (0, 0)
    assert U.reciprocal(0) == (0, 0)


def test_share_params_hand_values() -> None:
    # reciprocal's formula, by hand: mant = round(2^(16 + shift) / FS) in [2^31, 2^32)
    #   FS_I = 3200: 2^43 / 3200 = 2748779069.44 (2^42 / 3200 < 2^31), shift 27
    #   FS_U = 2880: 2^43 / 2880 = 3054198966.04 (2^42 / 2880 < 2^31), shift 27
    assert U.share_params(3200, 2880) == {
        "fs_i_scaled": 3200, "fs_u_scaled": 2880,
        "inv_fs_i_mant": 2748779069, "inv_fs_i_shift": 27,
        "inv_fs_u_mant": 3054198966, "inv_fs_u_shift": 27}
    #   FS_I = 458752 = 7 * 2^16: 2^50 / 458752 = 2^34 / 7 = 2454267026.29, shift 34;
    #   no U share (FS_INFINITE): no reciprocal, (0, 0)
    assert U.share_params(458752, U.FS_INFINITE) == {
        "fs_i_scaled": 458752, "fs_u_scaled": U.FS_INFINITE,
        "inv_fs_i_mant": 2454267026, "inv_fs_i_shift": 34,
        "inv_fs_u_mant": 0, "inv_fs_u_shift": 0}
    # every key is one of the upta action's parameters
    assert set(U.share_params(1, 1)) <= set(UM.PARAM_BITS)


def test_threshold_update_fixed_table2_hop() -> None:
    # R2 of Table 2 with the video's first packet: R = 3520, FS = 3200 (1.6 / 1.76 of it):
    # ratio_q16 = 3520 * 2748779069 >> 27 = 72089 (exact 72089.6);
    # margin = (65536 - 7864) * 72089 >> 16 = 63438; q = 65536 - 63438 = 2098 (3.20 %)
    mant, shift = U.reciprocal(3200)
    assert UM.threshold_update_fixed(Q012, 3520, 3200, mant, shift) == 2098
    exact = U.threshold_update(Q012 / ONE, 1 - 3200 / 3520) * ONE     # 2096.8
    assert 0 <= 2098 - exact <= 2
    # R1: R <= FS (p = 0): unchanged
    assert UM.threshold_update_fixed(Q012, 3520, 3520, *U.reciprocal(3520)) == Q012
    # p = 0.1 at R = 3200, FS = 2880: (0.11999 - 0.1) / 0.9 * 2^16 = 1456.0 -> 1457
    assert UM.threshold_update_fixed(Q012, 3200, 2880, *U.reciprocal(2880)) == 1457
    # p > q: margin >= 2^16 -> 0
    assert UM.threshold_update_fixed(Q012, 6400, 2880, *U.reciprocal(2880)) == 0


def test_threshold_update_fixed_vs_float() -> None:
    rnd = random.Random(17)
    for _ in range(2000):
        fs = rnd.randint(100, 2_000_000)
        rate = rnd.randint(fs, int(fs * 1.5))
        q16 = rnd.randint(0, U.Q_FIELD_MAX)
        p = 1 - fs / rate
        if p > q16 / ONE:
            continue
        got = UM.threshold_update_fixed(q16, rate, fs, *U.reciprocal(fs))
        want = U.threshold_update(q16 / ONE, p) * ONE
        # truncating the ratio and the margin only ever raises q, by < 2 LSB
        assert -1e-6 <= got - want < 2.0 + want * 1e-6, (q16, rate, fs)


# ------------------------------------------------------------ rate estimator
def test_estimate_rate_hand_values() -> None:
    # one 220-byte packet after 1 ms with K = 100 ms: (1 - e^-0.01) * 220 / 1
    assert UT.estimate_rate(0, 220, 1, 100) == pytest.approx((1 - math.exp(-0.01)) * 220)
    assert UT.estimate_rate(5.0, 220, 0, 100) == pytest.approx(5.0 + 2.2)     # dt = 0 limit
    r = 0.0
    for _ in range(3000):                  # CBR converges to l / dt
        r = UT.estimate_rate(r, 220, 1, 100)
    assert r == pytest.approx(220, rel=1e-9)


def test_rate_step_fixed_hand_values() -> None:
    k = 17                                   # K = 131072 us
    assert UM.rate_step_fixed(0, 220, 1000, k) == 3520          # 220 * 16
    # decay = 1000 * 3520 >> 17 = 26 (26.9): 3520 - 26 + 3520
    assert UM.rate_step_fixed(3520, 220, 1000, k) == 7014
    assert UM.rate_step_fixed(7014, 220, 0, k) == 7014 + 3520   # same microsecond: no decay
    assert UM.rate_step_fixed(999_999, 200, 1 << k, k) == 3200  # dt >= K: restart at l * 16
    assert UM.rate_step_fixed(U.MASK32, 1500, 0, k) == U.MASK32  # saturates


def test_rate_step_fixed_cbr_steady_state_is_exact_rate() -> None:
    # the paper's video: 220-byte packets every 1 ms = 1.76 Mbit/s
    r = 0
    for _ in range(5000):
        r = UM.rate_step_fixed(r, 220, 1000, 17)
    # fixed point of floor(1000 R / 2^17) = 3520: R in [461374, 461504]
    assert 461374 <= r <= 461504
    assert U.rate_scaled_to_bps(r) == pytest.approx(1.76e6, rel=3e-4)
    assert U.bps_to_rate_scaled(1.76e6) == 461373             # 461373.44


def test_rate_fixed_vs_float_jittered() -> None:
    # 220/512-byte packets 0.5-1.5 ms apart, 3000 packets: within 0.2 % (measured 0.03 %)
    for seed in range(3):
        rnd = random.Random(seed)
        fixed, flt = 0, 0.0
        for _ in range(3000):
            dt, length = rnd.randint(500, 1500), rnd.choice([220, 512])
            fixed = UM.rate_step_fixed(fixed, length, dt, 17)
            flt = UT.estimate_rate(flt, length, dt, 1 << 17)
        assert fixed / 16 == pytest.approx(flt * (1 << 17), rel=2e-3)


def test_rate_units() -> None:
    # 1.75 Mbit/s = 218750 B/s * 0.131072 s * 16 = 458752 exactly
    assert U.bps_to_rate_scaled(1.75e6) == 458752
    assert U.rate_scaled_to_bps(458752) == pytest.approx(1.75e6)
    assert U.fs_to_scaled(math.inf) == U.FS_INFINITE
    assert U.k_us(17) == 131072


# ------------------------------------------------------------ drop probability, Fig. 7
def test_drop_probability() -> None:
    # §2/§6: the video (1.76) at l5's fair share 1.17 (ON): 33.5 %; 1.75 (OFF): 0.57 %
    assert UT.drop_probability(1.17, 1.76) == pytest.approx(0.33523, abs=1e-5)
    assert UT.drop_probability(1.75, 1.76) == pytest.approx(0.005682, abs=1e-6)
    assert UT.drop_probability(2.0, 1.76) == 0.0                 # max(0, .)
    assert UT.drop_probability(1.0, 0) == 0.0


def test_exceeds_fixed_is_cross_multiplied_exactly() -> None:
    # R = 3200, FS = 2880: p = 0.1 = 6553.6 / 2^16; exceeds q16 iff q16 < 6553.6
    assert UM.exceeds_fixed(3200, 2880, 6553)                   # 3200 * 58983 > 2880 * 2^16
    assert not UM.exceeds_fixed(3200, 2880, 6554)
    assert not UM.exceeds_fixed(3200, 2880, Q012)               # 0.1 <= 0.12
    assert not UM.exceeds_fixed(2880, 2880, 0)                  # p = 0 never exceeds
    assert UM.exceeds_fixed(1, 0, U.Q_FIELD_MAX)                # FS 0: p = 1


def test_fair_drop_count_matches_all_draws() -> None:
    for rate, fs in ((3200, 2880), (3520, 3200), (1000, 1), (7, 3), (5, 5), (4, 9)):
        brute = sum(UM.exceeds_fixed(rate, fs, u) for u in range(ONE))
        assert UM.fair_drop_count_q16(rate, fs) == brute
    assert UM.fair_drop_count_q16(3200, 2880) == 6554            # ceil(6553.6)


def test_fig7_paper_video_on_l5() -> None:
    # bg ON, N = 3, nobody U: fs_I = fs_U = 3.5/3. The video's p = 0.337 > 0.12 -> U, dropped.
    d = UT.fig7_decide(STATE_I, 1.76, 3.5 / 3, 3.5 / 3, 0.12, 0.9)
    assert (d.decision, d.state) == (UPTA_USELESS, STATE_U)
    assert d.drop_prob == pytest.approx(1 - 3.5 / 3 / 1.76)
    # it stays U while ON (fs_U = alpha = 3.5 / 3 with M = 1)
    assert UT.fig7_decide(STATE_U, 1.76, 1.75, 3.5 / 3, 0.12, 0.9).decision == UPTA_USELESS
    # bg OFF: N = 2, alpha = 1.75: p = 0.0057 <= 0.12 -> admitted, I again
    d = UT.fig7_decide(STATE_U, 1.76, 1.75, 1.75, 0.12, 0.0)
    assert (d.decision, d.state) == (ADMIT, STATE_I)           # no random drop on this branch
    # an I flow below its threshold: dropped iff p > u
    assert UT.fig7_decide(STATE_I, 1.76, 1.75, 1.75, 0.12, 0.005).decision == UPTA_FAIR_SHARE
    assert UT.fig7_decide(STATE_I, 1.76, 1.75, 1.75, 0.12, 0.006).decision == ADMIT


def test_fig7_p_equal_q_is_not_useless() -> None:
    # "drop_prob > loss_threshold": p = q keeps the flow I
    d = UT.fig7_decide(STATE_I, 2.0, 1.5, 1.5, 0.25, 0.99)
    assert (d.decision, d.state) == (ADMIT, STATE_I)


def test_float_flow_follows_on_off() -> None:
    flow = UM.FloatFlow()
    decisions = []
    for i in range(400):               # 220 B every 1 ms; K = 100 ms
        fs = 3.5e6 / 3 / 8 / 1e3 if 100 <= i < 300 else 1.75e6 / 8 / 1e3   # bytes per ms
        decisions.append(flow.arrive(220, i, fs, fs, 0.12, 0.99, 100).decision)
    assert UPTA_USELESS not in decisions[:100]
    assert decisions[250] == UPTA_USELESS and flow.history[250].state == STATE_U
    assert decisions[-1] == ADMIT and flow.state == STATE_I


# ------------------------------------------------------------ eqs. 18-22
def test_fairshares_paper_l5() -> None:
    # §6: l5 = 3.5 Mbit/s; bg ON (10), TCP (1.17, not < C/N = 1.1667), video 1.76
    fs = U.fairshares(3.5, [1.17, 1.76, 10.0], [False, False, False])
    assert (fs.n, fs.s, fs.m) == (3, 0, 0)
    assert fs.alpha == pytest.approx(3.5 / 3) and fs.alpha_prime == pytest.approx(3.5 / 3)
    # the video is U: alpha' = 3.5 / 2 = 1.75 for the rest (TCP gets 1.75, Table 4: 1.72)
    fs = U.fairshares(3.5, [1.17, 1.76, 10.0], [False, True, False])
    assert (fs.n, fs.s, fs.m) == (3, 0, 1)
    assert fs.alpha == pytest.approx(3.5 / 3) and fs.alpha_prime == pytest.approx(1.75)


def test_fairshares_unconstrained_flows() -> None:
    # C = 10, N = 4, C/N = 2.5: flows 1 and 2 are unconstrained (S = 2, sum 3)
    fs = U.fairshares(10, [1, 2, 5, 8], [False, False, False, True])
    assert (fs.s, fs.m, fs.unconstrained_sum) == (2, 1, 3)
    assert fs.alpha == pytest.approx(7 / 2)            # (10 - 3) / (4 - 2)
    assert fs.alpha_prime == pytest.approx(7 / 1)      # (10 - 3) / (4 - 2 - 1)
    # a U flow below C/N is counted in M only
    fs = U.fairshares(10, [1, 9], [True, False])
    assert (fs.s, fs.m) == (0, 1) and fs.alpha == 5 and fs.alpha_prime == 10
    # everyone unconstrained / everyone U: no share to compute
    assert U.fairshares(10, [1, 1], [False, False]).alpha == math.inf
    assert U.fairshares(10, [6, 6], [True, True]).alpha_prime == math.inf


def test_interval_shares_from_counter_deltas() -> None:
    # 1 s interval on l5: TCP 146250 B (1.17 Mbit/s), video 220000 B (U), bg 1.25 MB;
    # one idle flow (0 bytes) is not counted; one remote U flow (probe) is
    fs = U.interval_shares(3.5e6, 1.0, {"tcp": 146250, "video": 220000, "bg": 1_250_000,
                                        "idle": 0}, useless={"video"}, remote_useless=1)
    assert (fs.n, fs.s, fs.m) == (4, 0, 2)             # C/N = 0.875 Mbit/s: nobody below
    assert fs.alpha == pytest.approx(3.5e6 / 4) and fs.alpha_prime == pytest.approx(3.5e6 / 2)
    assert U.interval_shares(3.5e6, 1.0, {}).alpha == math.inf


PHI = [0.133, 0.267, 0.4, 0.533, 0.667, 1.0]
TABLE3_5_THEORY = [0.067, 0.134, 0.2, 0.267, 0.334, 0.5]
TABLE4 = [(1.62, 1.72), (1.52, 1.72), (1.44, 1.72), (1.37, 1.72), (1.31, 1.72), (1.16, 1.72)]
TABLE5_SIM = [0.062, 0.132, 0.194, 0.256, 0.313, 0.483]


def test_eq22_tables_3_and_5_theory() -> None:
    # rho = 1 / (3 - 0 - 1) phi = 0.5 phi (eq. 22); the tables print it to 3 decimals
    for phi, want in zip(PHI, TABLE3_5_THEORY):
        assert UT.improvement_theory(1, 3, 0, phi) == pytest.approx(want, abs=6e-4)
    # phi = 2k/15: k ON periods of 2 s in 15 s (Fig. 9)
    assert [round(2 * k / 15, 3) for k in range(1, 6)] == PHI[:5]


def test_table5_simulation_column_is_table4_ratio() -> None:
    for (tau, tau_prime), want in zip(TABLE4, TABLE5_SIM):
        assert U.improvement_measured(tau, tau_prime) == pytest.approx(want, abs=6e-4)


def test_eq21_equals_eq20_of_eqs18_19() -> None:
    # C = 10, N = 5, S = 1 (rate 1), M = 2: alpha = 9/4, alpha' = 9/2, rho = (2 - 1) phi
    fs = U.fairshares(10, [1, 5, 5, 5, 5], [False, True, True, False, False])
    assert (fs.n, fs.s, fs.m) == (5, 1, 2)
    for phi in (0.0, 0.3, 1.0):
        assert (fs.alpha_prime / fs.alpha - 1) * phi == pytest.approx(
            UT.improvement_theory(2, 5, 1, phi))
    assert UT.tcp_throughput_with_upta(3.5 / 3, 1.75, 1.0) == pytest.approx(1.75)
    assert UT.tcp_throughput_with_upta(3.5 / 3, 1.75, 0.0) == pytest.approx(3.5 / 3)
    # Fig. 5: rho grows with M
    assert UT.improvement_theory(1, 10, 0, 1) < UT.improvement_theory(5, 10, 0, 1) \
        < UT.improvement_theory(9, 10, 0, 1) == 9.0


# ------------------------------------------------------------ BFD
def test_path_min_eqs_23_to_26() -> None:
    assert UT.path_min_update(5000, 7000, 6000, 4000) == (5000, 4000)
    assert UT.path_min_update(5000, 7000, 5000, 7000) == (5000, 7000)   # "if lower" only
    # the paper's chain, alpha per link in 1.76-Mbit/s units of Table 1
    shares = [(900, 950), (800, 850), (715, 760), (650, 700), (585, 875), (900, 900)]
    assert UT.path_min(shares) == (585, 700)
    with pytest.raises(ValueError, match="local_shares must not be empty"):
        UT.path_min([])


def test_internet_checksum_rfc1071_example() -> None:
    # RFC 1071 §3: 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2; the checksum is its complement
    assert B.internet_checksum(bytes.fromhex("0001f203f4f5f6f7")) == 0x220D
    assert B.internet_checksum(b"\x01") == ~0x0100 & 0xFFFF            # odd: zero padded


def test_checksum_update_rfc1624_example() -> None:
    # RFC 1624 §4: HC = 0xDD2F, m 0x5555 -> 0x3285: HC' = 0x0000
    assert UM.checksum_update(0xDD2F, 0x5555, 0x3285) == 0x0000


def spec(sport: int = 5004, intelligible: bool = False) -> B.FlowSpec:
    return B.FlowSpec(0x0A000101, 0x0A000701, sport, 5004, 17, intelligible)


def test_probe_layout_and_checksum() -> None:
    probe = B.BfdMessage(B.ICMP_QOS_PROBE, 3, 7, U.FS_INFINITE, U.FS_INFINITE,
                         (spec(),)).pack()
    assert len(probe) == 16 + 16
    assert probe[:2] == bytes([20, 0])
    assert struct.unpack("!HHII", probe[4:16]) == (3, 7, U.FS_INFINITE, U.FS_INFINITE)
    assert probe[16:] == bytes.fromhex("0a000101" "0a000701" "138c" "138c" "11" "00" "0000")
    assert B.internet_checksum(probe) == 0
    msg = B.BfdMessage.unpack(probe)
    assert msg.specs == (spec(),) and not msg.specs[0].intelligible
    assert B.FlowSpec.unpack(spec(intelligible=True).pack()).intelligible


def test_probe_checksum_matches_scapy() -> None:
    # scapy knows no id/seq for types 20/21: its 4-byte "unused" field holds them
    icmp = pytest.importorskip("scapy.layers.inet").ICMP
    probe = B.BfdMessage(B.ICMP_QOS_PROBE, 3, 7, 458752, 461373, (spec(), spec(6000))).pack()
    pkt = icmp(type=20, code=0, unused=(3 << 16) | 7) / probe[8:]
    assert bytes(pkt) == probe                         # scapy fills in the same checksum
    report = B.BfdMessage(B.ICMP_QOS_REPORT, 3, 7, 458752, 461373).pack()
    assert bytes(icmp(type=21, code=0, unused=(3 << 16) | 7) / report[8:]) == report


def test_probe_lowered_per_hop_keeps_checksum_valid() -> None:
    probe = B.BfdMessage(B.ICMP_QOS_PROBE, 3, 7, U.FS_INFINITE, U.FS_INFINITE,
                         (spec(), spec(6000, True))).pack()
    hop1 = UM.lower_probe(probe, 2000, 3000)       # the ingress: fields = its own values
    hop2 = UM.lower_probe(hop1, 2500, 1000)        # a core router lowers only the I field
    msg = B.BfdMessage.unpack(hop2)               # verifies the checksum
    assert (msg.fs_u, msg.fs_i) == (2000, 1000)
    assert hop2 == B.BfdMessage(B.ICMP_QOS_PROBE, 3, 7, 2000, 1000,
                                (spec(), spec(6000, True))).pack()   # = a full recompute
    assert UM.lower_probe(hop2, 5000, 5000) == hop2                  # nothing lower: unchanged


def test_report_is_one_16_byte_message() -> None:
    probe = UM.lower_probe(B.BfdMessage(B.ICMP_QOS_PROBE, 3, 7, U.FS_INFINITE, U.FS_INFINITE,
                                        (spec(),)).pack(), 2000, 1000)
    report = UM.report_for(probe)
    assert len(report) == 16 and report[0] == 21 and B.internet_checksum(report) == 0
    msg = B.BfdMessage.unpack(report)
    assert (msg.identifier, msg.sequence, msg.fs_u, msg.fs_i, msg.specs) == (3, 7, 2000, 1000, ())
    with pytest.raises(ValueError, match="only a QoS Probe is answered"):
        UM.report_for(report)                      # a report never triggers another packet


def test_bfd_rejects_bad_messages() -> None:
    probe = bytearray(B.BfdMessage(B.ICMP_QOS_PROBE, 1, 1, 5, 5).pack())
    probe[12] ^= 1
    with pytest.raises(ValueError, match="checksum"):
        B.BfdMessage.unpack(bytes(probe))
    assert B.BfdMessage.unpack(bytes(probe), verify=False).fs_u == 5
    with pytest.raises(ValueError, match="not a QoS Probe"):
        B.BfdMessage.unpack(bytes([8, 0]) + bytes(14))       # an echo request
    with pytest.raises(ValueError, match="bad payload length"):
        B.BfdMessage.unpack(B.BfdMessage(B.ICMP_QOS_PROBE, 1, 1, 5, 5).pack() + b"\0")
    with pytest.raises(ValueError, match="carries no flow specs"):
        B.BfdMessage(B.ICMP_QOS_REPORT, 1, 1, 5, 5, (spec(),)).pack()
    with pytest.raises(ValueError, match="identifier"):
        B.BfdMessage(B.ICMP_QOS_PROBE, 70000, 1, 5, 5).pack()


# ------------------------------------------------------------ the port model
K10 = 10                               # K = 1024 us; packets >= K apart restart R at l * 16
GAP = 2000


def params(mode: int, fs_i: int, fs_u: int, *, tagged_q16: int = U.Q_FIELD_MAX,
           queue_limit: int = 100, slots: int = 16) -> dict[str, int]:
    mi, si = U.reciprocal(fs_i)
    mu, su = U.reciprocal(fs_u)
    return {"upta_mode": mode, "k_shift": K10, "slot_mask": slots - 1, "fs_i_scaled": fs_i,
            "fs_u_scaled": fs_u, "inv_fs_i_mant": mi, "inv_fs_i_shift": si,
            "inv_fs_u_mant": mu, "inv_fs_u_shift": su, "tagged_q16": tagged_q16,
            "queue_limit_pkts": queue_limit}


def test_action_params_hand_values() -> None:
    p = U.action_params(U.MODE_P, 1.75e6, 3.5e6 / 3, table_slots=1024, tagged_q=0.12)
    assert p == {"upta_mode": 1, "k_shift": 17, "slot_mask": 1023, "fs_i_scaled": 458752,
                 "fs_u_scaled": 305835,            # 305834.67
                 "inv_fs_i_mant": 2454267026, "inv_fs_i_shift": 34,
                 "inv_fs_u_mant": U.reciprocal(305835)[0],
                 "inv_fs_u_shift": U.reciprocal(305835)[1],
                 "tagged_q16": Q012, "queue_limit_pkts": 100}
    assert U.action_params(U.MODE_B, math.inf, math.inf)["fs_i_scaled"] == U.FS_INFINITE


def test_model_p_upta_rewrites_on_first_packet() -> None:
    # new flow (U branch), R = 3200, FS_U = 2880: p = 0.1 <= 0.12 -> admitted, I, q -> 1457
    port = UM.UptaPortModel(params(U.MODE_P, 2880, 2880), RandSequence([0]))
    out = port.arrive(0x1234, 200, 5000, option_q16=Q012)
    assert out == UM.Outcome(ADMIT, 1457, False)
    assert port.slots[0x4].state == STATE_I and port.slots[0x4].rate_scaled == 3200


def test_model_option_without_threshold_is_not_rewritten() -> None:
    # option 0xFFFF = no threshold: admitted (by the draw), passed on unchanged (None)
    port = UM.UptaPortModel(params(U.MODE_P, 1600, 1600), RandSequence([65535]))
    assert port.arrive(2, 200, 5000, option_q16=U.Q_FIELD_MAX) == UM.Outcome(ADMIT, None, False)


def test_paper_b_upta_misses_p_upta_catches_at_r3() -> None:
    # §7.1: with Table 1's rates every router sees p < 12 %, so B-UPTA never makes the
    # video U, although 33.5 % is lost end to end. §7.2: P-UPTA's q is 3.2 % at R3, where
    # p = 10.6 % > q: U at R3 (Table 2).
    hops = list(zip(TABLE1_RATES, TABLE1_RATES[1:]))          # R1..R7: (arrival, departure)
    for arrival, departure in hops:
        basic = UT.fig7_decide(STATE_I, arrival, departure, departure, 0.12, 0.999)
        assert basic.decision == ADMIT
    assert UT.cumulative_loss([UT.drop_probability(d, a) for a, d in hops]) > 0.33
    q = 0.12
    caught_at = None
    for router, (arrival, departure) in enumerate(hops, 1):
        partial = UT.fig7_decide(STATE_I, arrival, departure, departure, q, 0.999)
        if partial.decision == UPTA_USELESS:
            caught_at = router
            break
        q = U.threshold_update(q, partial.drop_prob)
    assert caught_at == 3 and round(100 * q, 1) == 3.2


def test_model_table2_chain_one_router_per_hop() -> None:
    # the video's packet at R1 (p = 0), R2 (p = 1 - 3200/3520) and R3 (FS 3146 = 3520 * 1.43/1.6)
    q = Q012
    for hop, fs in enumerate((3520, 3200)):
        port = UM.UptaPortModel(params(U.MODE_P, fs, fs), RandSequence([0]))
        out = port.arrive(0xBEEF, 220, 5000, option_q16=q)
        assert out.decision == ADMIT
        q = out.q16_out
    assert q == 2098 and round(100 * q / ONE, 1) == 3.2
    r3 = UM.UptaPortModel(params(U.MODE_P, 3146, 3146), RandSequence([0]))
    assert r3.arrive(0xBEEF, 220, 5000, option_q16=q).decision == UPTA_USELESS


def test_model_p_equal_q_admits() -> None:
    # q16 = 8192 (0.125 exactly), R = 3200, FS_U = 2800: p = 0.125 = q -> admitted;
    # FS_U = 2799: 3200 * 57344 = 183500800 > 2799 * 65536 = 183435264 -> U
    port = UM.UptaPortModel(params(U.MODE_B, 2800, 2800), RandSequence([65535]))
    assert port.arrive(1, 200, 5000, option_q16=8192).decision == ADMIT
    port = UM.UptaPortModel(params(U.MODE_B, 2799, 2799), RandSequence([65535]))
    assert port.arrive(1, 200, 5000, option_q16=8192).decision == UPTA_USELESS


def test_model_useless_then_recovers() -> None:
    tagged = dict(tagged=True)
    port = UM.UptaPortModel(params(U.MODE_B, 2880, 2880, tagged_q16=Q012), RandSequence([65535]))
    t = 5000
    assert port.arrive(7, 200, t, **tagged).decision == ADMIT          # p 0.1: I
    port.set_policy(params(U.MODE_B, 2700, 2700, tagged_q16=Q012))     # p = 0.156 > 0.12
    t += GAP
    assert port.arrive(7, 200, t, **tagged).decision == UPTA_USELESS
    assert port.slots[7].state == STATE_U
    t += GAP                                                           # still U: dropped at once
    assert port.arrive(7, 200, t, **tagged).decision == UPTA_USELESS
    port.set_policy(params(U.MODE_B, 2700, 2900, tagged_q16=Q012))     # fs_U: p = 0.094
    t += GAP
    assert port.arrive(7, 200, t, **tagged).decision == ADMIT
    assert port.slots[7].state == STATE_I


def test_model_i_flow_random_drop_uses_the_draw() -> None:
    # I flow, R = 3200, FS = 2880 (p = 0.1), no threshold: drop iff u16 < 6553.6
    for u16, want in ((0, UPTA_FAIR_SHARE), (6553, UPTA_FAIR_SHARE), (6554, ADMIT),
                      (65535, ADMIT)):
        rand = RandSequence([u16])
        port = UM.UptaPortModel(params(U.MODE_B, 2880, 2880), rand)
        assert port.arrive(9, 200, 5000).decision == ADMIT              # new: U branch, no draw
        assert rand.calls == 0
        assert port.arrive(9, 200, 5000 + GAP).decision == want
        assert rand.calls == 1


def test_model_non_upta_packets_never_useless_nor_rewritten() -> None:
    port = UM.UptaPortModel(params(U.MODE_P, 100, 100, tagged_q16=Q012), RandSequence([65535]))
    out = port.arrive(3, 200, 5000)                       # untagged, no option: no threshold
    assert out == UM.Outcome(ADMIT, None, False)
    # p = 1 - 100/3200 = 0.97, far above 0.12, but no threshold: the draw decides
    # (u16 = 65535: 3200 * 1 <= 100 * 2^16, kept)
    assert port.arrive(3, 200, 5000 + GAP) == UM.Outcome(ADMIT, None, False)
    rand0 = RandSequence([0])
    port2 = UM.UptaPortModel(params(U.MODE_P, 100, 100), rand0)
    port2.arrive(3, 200, 5000)
    assert port2.arrive(3, 200, 5000 + GAP).decision == UPTA_FAIR_SHARE   # p = 0.97 > u
    assert port2.slots[3].state == STATE_I                # never U without a threshold


def test_model_c_core_never_useless() -> None:
    # mode C, packets from a domain port: fair-share drops only, whatever the threshold
    port = UM.UptaPortModel(params(U.MODE_C, 100, 100, tagged_q16=Q012), RandSequence([65535]))
    assert port.arrive(3, 200, 5000, option_q16=Q012, from_edge_port=False).decision == ADMIT
    assert port.arrive(3, 200, 5000 + GAP, tagged=True, from_edge_port=False).decision == ADMIT
    # the same packet from an edge port: p = 0.97 > 0.12 -> U
    assert port.arrive(3, 200, 5000 + 2 * GAP, tagged=True).decision == UPTA_USELESS


def test_bfd_c_upta_round_trip() -> None:
    # R1 (ingress, local shares 3200) probes path 2 -> R5 lowers to l5's (2700, 2800) ->
    # R7 (egress) answers -> R1 accepts and tests the video against fs_U = 2700.
    r1, r7 = UM.BfdEndpoint(), UM.BfdEndpoint()
    r1_port = UM.UptaPortModel(params(U.MODE_C, 3200, 3200, tagged_q16=Q012),
                               RandSequence([65535]))
    r5_port = UM.UptaPortModel(params(U.MODE_C, 2800, 2700), RandSequence([65535]))
    probe = r1_port.lower_probe(r1.probe_template(2, 41, [spec()]))
    assert B.BfdMessage.unpack(probe).fs_u == 3200          # set to the ingress's own shares
    report = r7.answer_probe(r5_port.lower_probe(probe), from_edge_port=False)
    assert report is not None and B.BfdMessage.unpack(report).fs_u == 2700
    # a report from a host (edge port), a stale one, a corrupted one: ignored and counted
    assert not r1.accept_report(report, from_edge_port=True)
    stale = UM.report_for(B.BfdMessage(B.ICMP_QOS_PROBE, 2, 40, 1, 1).pack())
    assert not r1.accept_report(stale, from_edge_port=False)
    assert not r1.accept_report(report[:-1] + bytes([report[-1] ^ 1]), from_edge_port=False)
    foreign = UM.report_for(B.BfdMessage(B.ICMP_QOS_PROBE, 64, 41, 1, 1).pack())
    assert not r1.accept_report(foreign, from_edge_port=False)     # no such path
    assert r1.path_shares(2) is None
    assert r1.accept_report(report, from_edge_port=False)
    assert r1.path_shares(2) == (2700, 2800)
    assert r1.events == {"PROBE_SENT": 1, "REPORT_FROM_EDGE": 1, "REPORT_STALE": 2,
                         "REPORT_MALFORMED": 1, "REPORT_ACCEPTED": 1}
    assert r1_port.shares(r1.path_shares(2)) == (2800, 2700)
    # R = 3200 against fs_U 2700: p = 0.156 > 0.12 -> the edge drops the video at once
    assert r1_port.arrive(5, 200, 5000, tagged=True,
                          path=r1.path_shares(2)).decision == UPTA_USELESS
    # without the path minima it would have passed (3200 <= 3200)
    assert r1_port.arrive(6, 200, 5000, tagged=True).decision == ADMIT


def test_bfd_egress_answers_at_most_one_packet() -> None:
    r7 = UM.BfdEndpoint()
    probe = B.BfdMessage(B.ICMP_QOS_PROBE, 1, 9, 10, 20, (spec(),) * 3).pack()
    assert r7.answer_probe(probe, from_edge_port=True) is None      # from a host: dropped
    report = r7.answer_probe(probe, from_edge_port=False)
    assert isinstance(report, bytes) and len(report) == 16          # one packet, no specs
    assert r7.answer_probe(report, from_edge_port=False) is None    # a report is not answered
    assert r7.events == {"PROBE_FROM_EDGE": 1, "PROBE_ANSWERED": 1, "PROBE_MALFORMED": 1}


def test_model_queue_limit_after_upta() -> None:
    port = UM.UptaPortModel(params(U.MODE_B, 3200, 3200, queue_limit=2), RandSequence([65535]))
    assert port.arrive(1, 200, 5000, queue_pkts=2).decision == QUEUE_LIMIT
    assert port.arrive(1, 200, 5000 + GAP, queue_pkts=1).decision == ADMIT


def test_model_rate_accumulates_within_k() -> None:
    port = UM.UptaPortModel(params(U.MODE_B, U.FS_INFINITE, U.FS_INFINITE), RandSequence([0]))
    port.arrive(1, 200, 5000)
    port.arrive(1, 200, 5100)                 # dt 100 < 1024: 3200 - (100*3200 >> 10) + 3200
    assert port.slots[1].rate_scaled == 3200 - 312 + 3200


def test_model_collision_counted() -> None:
    port = UM.UptaPortModel(params(U.MODE_B, U.FS_INFINITE, U.FS_INFINITE), RandSequence([0]))
    assert not port.arrive(0x00010005, 200, 5000).collision
    assert port.arrive(0x00020005, 200, 5100).collision        # same slot 5, within K
    assert not port.arrive(0x00010005, 200, 5100 + 5000).collision   # slot idle >= K: reuse
    assert port.events["FLOW_COLLISION"] == 1


def test_register_memory() -> None:
    # 32 + 48 + 1 + 32 = 113 bits per slot: 14125 bytes per 1000 flows at one slot each
    assert UM.register_bits_per_slot() == 113
    assert UM.register_bytes_per_1000_flows() == 14125
    assert UM.register_bytes_per_1000_flows(16) == 226000     # 16 slots/flow: 6 % shared


def test_shared_slot_flows() -> None:
    keys = [(0x0A000101, 0x0A000701, 17, 5000 + i, 5004) for i in range(64)]
    flows, shared = U.shared_slot_flows(keys, 16)
    assert flows == 64 and shared == 64                       # 64 flows in 16 slots
    assert U.shared_slot_flows(keys[:1], 16) == (1, 0)


# ------------------------------------------------------------ validation
@pytest.mark.parametrize("call, name", [
    (lambda: U.threshold_update(1.2, 0), "q"),
    (lambda: U.threshold_update(0.1, 1.0), "p"),
    (lambda: UT.drop_probability(-1, 1), "fair_share"),
    (lambda: UT.drop_probability(1, math.nan), "rate"),
    (lambda: UT.estimate_rate(0, 100, 1, 0), "k"),
    (lambda: UM.rate_step_fixed(0, 100, 1, 25), "k_shift"),
    (lambda: UM.rate_step_fixed(-1, 100, 1, 10), "rate_scaled"),
    (lambda: U.encode_q(1.5), "q"),
    (lambda: U.decode_q(65536), "q16"),
    (lambda: U.fairshares(0, [1], [False]), "capacity"),
    (lambda: U.fairshares(1, [1, 2], [False]), "rates"),
    (lambda: U.fairshares(1, [1], [1]), r"useless\[0\]"),
    (lambda: UT.improvement_theory(2, 3, 1, 0.5), "n - s - m"),
    (lambda: UT.improvement_theory(1, 3, 0, 2), "phi"),
    (lambda: U.improvement_measured(0, 1), "tau"),
    (lambda: UT.cumulative_loss([0.1, True]), r"local_losses\[1\]"),
    (lambda: UT.local_loss(1, 2), "departure_rate"),
    (lambda: UT.path_min_update(-1, 0, 0, 0), "field_u"),
    (lambda: UM.checksum_update(0x10000, 0, 0), "checksum"),
    (lambda: UT.fig7_decide(2, 1, 1, 1, 0.1, 0.5), "state"),
    (lambda: UT.fig7_decide(0, 1, 1, 1, 0.1, 1.0), "u"),
    (lambda: U.action_params(7, 1, 1), "mode"),
    (lambda: U.action_params(0, 1, 1, table_slots=12), "table_slots"),
    (lambda: U.interval_shares(1e6, 0, {}), "interval_s"),
    (lambda: UM.UptaPortModel({"upta_mode": 0}, RandSequence([0])), "params lacks"),
    (lambda: UM.UptaPortModel(params(0, 1, 1), RandSequence([0])).arrive(1, 70000, 1),
     "length_bytes"),
    (lambda: UM.UptaPortModel(params(0, 1, 1), RandSequence([0])).arrive(1, 100, 1,
                                                                         path=(-1, 0)), r"path\[0\]"),
    (lambda: UM.BfdEndpoint().probe_template(64, 1), "path_id"),
    (lambda: UM.UptaPortModel({**params(0, 1, 1), "slot_mask": 12}, RandSequence([0])),
     "slot_mask"),
    (lambda: UM.UptaPortModel({**params(0, 1, 1), "tagged_q16": 65536}, RandSequence([0])),
     "tagged_q16"),
    (lambda: U.action_params(0, 1, 1, table_slots=8192), "table_slots"),
])
def test_validation_names_the_argument(call, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        call()


def test_registered_with_the_p4_constants() -> None:
    # the driver checks the P4Info has the action; the constants come from defines.p4
    from mmaqm import p4constants as C
    from mmaqm.algorithms import ALGORITHMS
    assert ALGORITHMS["UPTA"] == "upta"
    assert (U.UPTA_SLOTS_PER_PORT, U.RATE_FRAC_BITS, U.Q16_ONE, U.Q_FIELD_MAX) == \
        (4096, 4, 65536, 65535)
    assert (U.STATE_U, U.STATE_I, U.MODE_B, U.MODE_P, U.MODE_C) == (0, 1, 0, 1, 2)
    assert (U.OPTION_TYPE, U.OPTION_LEN) == (0x9E, 4)
    assert C.DROP_REASONS["UPTA_USELESS"] == 7 and C.DROP_REASONS["UPTA_FAIR_SHARE"] == 8
    assert list(C.UPTA_EVENTS) == list(UM.EVENTS[:C.NUM_UPTA_EVENTS])


def test_fixed_model_tracks_float_fig7_on_off() -> None:
    # The paper's video (220 B every 1 ms = 1.76 Mbit/s) for 2 s at l5 (K = 2^17 us),
    # bg ON in [1.0, 1.5) s: fs 3.5/3 Mbit/s, else 1.75. Both forms must make it U at
    # the first ON packet and I again at the first OFF packet, and agree everywhere.
    k_us = 1 << 17
    fs_on, fs_off = 3.5e6 / 3, 1.75e6
    port = UM.UptaPortModel(U.action_params(U.MODE_B, fs_off, fs_off, tagged_q=0.12),
                            RandSequence([65535]))
    flow = UM.FloatFlow()
    fixed, flt = [], []
    for i in range(2000):
        t_us = 1000 * (i + 1)
        fs = fs_on if 1000 <= i < 1500 else fs_off
        port.set_policy(U.action_params(U.MODE_B, fs, fs, tagged_q=0.12))
        fixed.append(port.arrive(0xABCD, 220, t_us, tagged=True).decision)
        fs_bytes_per_us = fs / 8 / 1e6
        flt.append(flow.arrive(220, t_us, fs_bytes_per_us, fs_bytes_per_us, 0.12, 0.999999,
                               k_us).decision)
    assert fixed == flt
    assert fixed[999] == ADMIT and fixed[1000] == UPTA_USELESS
    assert set(fixed[1000:1500]) == {UPTA_USELESS} and set(fixed[1500:]) == {ADMIT}


def test_config_keys_defaults_and_encoding() -> None:
    from mmaqm.config import ConfigError, parse_policy
    from mmaqm.encoding import policy_action
    p = parse_policy({"algorithm": "UPTA"})
    assert (p.settings.upta_mode, p.settings.upta_flow_slots, p.settings.upta_k_shift, p.settings.upta_tagged_loss_threshold) == \
        ("B", 4096, 17, None)
    a = policy_action(p, policy_epoch=5, flow_epoch_shift=0)
    # no interval yet: no fair share, no reciprocal, no threshold for tagged packets
    assert a.name == "upta" and dict(a.params) == {
        "queue_limit_pkts": 64, "flow_epoch_shift": 0, "policy_epoch": 5, "upta_mode": 0,
        "k_shift": 17, "slot_mask": 4095, "fs_i_scaled": U.FS_INFINITE,
        "fs_u_scaled": U.FS_INFINITE, "inv_fs_i_mant": 0, "inv_fs_i_shift": 0,
        "inv_fs_u_mant": 0, "inv_fs_u_shift": 0, "tagged_q16": 0xFFFF}
    p = parse_policy({"algorithm": "UPTA", "upta_mode": "P", "upta_flow_slots": 16,
                      "upta_k_shift": 10, "upta_tagged_loss_threshold": 0.12})
    a = policy_action(p, policy_epoch=5, flow_epoch_shift=0, upta_shares_bps=(1.75e6, 3.5e6 / 3))
    assert dict(a.params) == {"queue_limit_pkts": 64, "flow_epoch_shift": 0, "policy_epoch": 5,
                              **U.action_params(U.MODE_P, 1.75e6, 3.5e6 / 3, table_slots=16,
                                                k_shift=10, tagged_q=0.12, queue_limit_pkts=64)}
    assert a.params["tagged_q16"] == 7864 and a.params["slot_mask"] == 15
    with pytest.raises(ConfigError) as err:
        parse_policy({"algorithm": "UPTA", "upta_mode": "Q", "upta_flow_slots": 12,
                      "upta_k_shift": 25, "upta_tagged_loss_threshold": 1.5, "max_p": 0.1})
    assert sorted(e.split(":")[0] for e in err.value.errors) == [
        "policy.max_p", "policy.upta_flow_slots", "policy.upta_k_shift", "policy.upta_mode",
        "policy.upta_tagged_loss_threshold"]
    with pytest.raises(ConfigError, match="only for UPTA"):
        parse_policy({"algorithm": "DROP_TAIL", "upta_mode": "B"})
