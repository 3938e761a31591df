"""UPTA's paper form in floats (the test oracle; moved from mmaqm.algorithms.upta).

Wu & Hassan 2002 (design: docs/upta-plan.md), each function in the paper's form:

  * loss over a path: eqs. 5-6;
  * the arrival-rate estimator, CSFQ's exponential average (upta's [14], Stoica et
    al. 1998 eq. 3; see :mod:`mmaqm.algorithms.upta` for why this one):
        r_new = (1 - e^(-dt/K)) l/dt + e^(-dt/K) r_old;
  * drop_prob = max(0, 1 - fs/rate) and the I/U rules of Fig. 7;
  * the P-UPTA threshold chain (eq. 17 at each router, Fig. 4);
  * the TCP gain rho (eqs. 20-22);
  * BFD's path minima (eqs. 23-26).

What the controller computes (eq. 17's update, the fair shares of eqs. 18-19,
the encodings) stays in :mod:`mmaqm.algorithms.upta`; the bit-exact data plane
models are in :mod:`mmaqm_oracle.upta_model`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mmaqm.algorithms.upta import (FS_INFINITE, STATE_I, STATE_U, _nonneg, _positive, _prob,
                                   threshold_update)
from mmaqm.fixedpoint import MASK32, check_int

from .fixedpoint_model import UPTA_FAIR_SHARE, UPTA_USELESS

# The paper's scenario (upta §2, §6).
PAPER_ACCESS_LINK_BPS = 10_000_000
PAPER_VIDEO_PAYLOAD_BYTES = 188   # MPEG-2 TS packet (upta §6)
PAPER_VIDEO_IP_BYTES = 188 + 4 + 8 + 20   # + TS, UDP, IP headers (upta §2): 220 bytes
PAPER_VIDEO_BPS = 1_500_000       # encoded rate; 1.76 Mbit/s with headers (upta §2)
PAPER_OTHER_PACKET_BYTES = 512    # TCP and ON-OFF source (upta §6)
PAPER_ONOFF_BPS = 10_000_000      # S3 while ON (upta §6)
PAPER_DURATION_S = 15.0

ADMIT = "ADMIT"                   # Fig. 7 admits (its drops: fixedpoint_model.UPTA_*)


# ---------------------------------------------------------------- §3: loss over a path
def cumulative_loss(local_losses: Iterable[float]) -> float:
    """P_k = 1 - prod (1 - p_i) (eqs. 5, 6): the loss after routers with local losses p_i."""
    kept = 1.0
    for i, p in enumerate(local_losses):
        kept *= 1 - _prob(f"local_losses[{i}]", p)
    return 1 - kept


def local_loss(arrival_rate: float, departure_rate: float) -> float:
    """p_k = 1 - mu_k / lambda_k (upta §3)."""
    lam = _positive("arrival_rate", arrival_rate)
    mu = _nonneg("departure_rate", departure_rate)
    if mu > lam:
        raise ValueError(f"departure_rate ({departure_rate!r}) exceeds arrival_rate ({lam!r})")
    return 1 - mu / lam


# ---------------------------------------------------------------- rate estimator
def estimate_rate(rate_old: float, length: float, dt: float, k: float) -> float:
    """CSFQ's exponential average (upta's [14], Stoica et al. eq. 3; upta's own
    estimator is in its [16], not in our text, see docs/upta-plan.md §1.3):
    r_new = (1 - e^(-dt/K)) l/dt + e^(-dt/K) r_old, in length units per time unit
    of dt and K. dt = 0 (two packets at once) is its limit, r_old + l/K."""
    r = _nonneg("rate_old", rate_old)
    ln = _nonneg("length", length)
    t = _nonneg("dt", dt)
    kk = _positive("k", k)
    if t == 0:
        return r + ln / kk
    w = math.exp(-t / kk)
    return (1 - w) * ln / t + w * r


# ---------------------------------------------------------------- drop probability, I/U
def drop_probability(fair_share: float, rate: float) -> float:
    """drop_prob = max(0, 1 - fs / rate) (Fig. 7); 0 for a rate of 0."""
    fs = _nonneg("fair_share", fair_share)
    r = _nonneg("rate", rate)
    if r == 0:
        return 0.0
    return max(0.0, 1 - fs / r)


@dataclass(frozen=True)
class Decision:
    """One arrival's outcome under Fig. 7."""

    decision: str            # ADMIT, UPTA_USELESS or UPTA_FAIR_SHARE
    state: int               # the flow's state afterwards (STATE_I / STATE_U)
    drop_prob: float         # the p the router computed (eq. 17's p_{k})


def fig7_decide(state: int, rate: float, fs_i: float, fs_u: float, loss_threshold: float,
                u: float) -> Decision:
    """Fig. 7 on one arrival (the paper's form). state: STATE_I, or STATE_U for U and
    new flows; rate: the flow's arrival-rate estimate including this packet; u: the
    unif_rand(0, 1) draw, used only by an I flow that is not made U."""
    check_int("state", state, 0, 1)
    q = _prob("loss_threshold", loss_threshold)
    uu = _prob("u", u, closed=False)
    if state == STATE_I:
        p = drop_probability(fs_i, rate)
        if p > q:
            return Decision(UPTA_USELESS, STATE_U, p)
        return Decision(UPTA_FAIR_SHARE if p > uu else ADMIT, STATE_I, p)
    p = drop_probability(fs_u, rate)
    if p > q:
        return Decision(UPTA_USELESS, STATE_U, p)
    return Decision(ADMIT, STATE_I, p)


# ---------------------------------------------------------------- P-UPTA (eq. 17)
def threshold_chain(q0: float, local_losses: Sequence[float]) -> list[float]:
    """[q_1, q_2, ...]: q_1 = q_0 and eq. 17 at each router; stops after the first
    router whose loss exceeds its threshold (Fig. 4: the packet is dropped there)."""
    q = _prob("q0", q0)
    out = [q]
    for i, p in enumerate(local_losses[:-1] if local_losses else []):
        if _prob(f"local_losses[{i}]", p, closed=False) > q:
            break
        q = threshold_update(q, p)
        out.append(q)
    return out


# ---------------------------------------------------------------- TCP gain (eqs. 20-22)
def improvement_theory(m: int, n: int, s: int, phi: float) -> float:
    """rho = M / (N - S - M) phi (eq. 21); eq. 22 is N = 3, M = 1, S = 0."""
    mm = check_int("m", m, 0, 1 << 31)
    nn = check_int("n", n, 1, 1 << 31)
    ss = check_int("s", s, 0, 1 << 31)
    ph = _prob("phi", phi)
    if nn - ss - mm <= 0:
        raise ValueError(f"n - s - m must be > 0, got n={n}, s={s}, m={m}")
    return mm / (nn - ss - mm) * ph


def tcp_throughput_with_upta(alpha: float, alpha_prime: float, phi: float) -> float:
    """tau' = (1 - phi) alpha + phi alpha' (§5.1)."""
    return (1 - _prob("phi", phi)) * _nonneg("alpha", alpha) + phi * _nonneg("alpha_prime",
                                                                           alpha_prime)


# ---------------------------------------------------------------- BFD path minima (§5.3)
def path_min_update(field_u: int, field_i: int, local_u: int, local_i: int) -> tuple[int, int]:
    """Eqs. 25-26 at one router: each field becomes the local share if that is lower."""
    fu = check_int("field_u", field_u, 0, MASK32)
    fi = check_int("field_i", field_i, 0, MASK32)
    lu = check_int("local_u", local_u, 0, MASK32)
    li = check_int("local_i", local_i, 0, MASK32)
    return (lu if lu < fu else fu), (li if li < fi else fi)


def path_min(local_shares: Iterable[tuple[int, int]]) -> tuple[int, int]:
    """Eqs. 23-24: (alpha_min, alpha'_min) over (alpha_l, alpha'_l) of the path's routers,
    as the probe accumulates it (the ingress starts from its own values)."""
    fields_ = (FS_INFINITE, FS_INFINITE)
    seen = False
    for i, (u, v) in enumerate(local_shares):
        check_int(f"local_shares[{i}][0]", u, 0, MASK32)
        check_int(f"local_shares[{i}][1]", v, 0, MASK32)
        fields_ = path_min_update(*fields_, u, v)
        seen = True
    if not seen:
        raise ValueError("local_shares must not be empty")
    return fields_
