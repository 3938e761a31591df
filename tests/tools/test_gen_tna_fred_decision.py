"""gen_tna_fred_decision: FRED's R1-R4 tests as one ternary decision list on
Tofino (p4src/tna/fred_decision_tna.p4), and the whole TNA test arithmetic
(saturating differences, Q4 logs, the list) against fred.p4's exact rules."""

import random
import subprocess
import sys
from pathlib import Path

import gen_tna_fred_decision as gen  # noqa: E402
import gen_tna_log2  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DECISION_LIST = gen.decision_list()
ONE = 1 << 16            # AVG_ONE: one packet in scaled_t
MAXQ_CONGESTED = 2       # defines.p4 FRED_MAXQ_CONGESTED_PKTS
STRIKE_LIMIT = 1         # defines.p4 FRED_STRIKE_LIMIT


def test_the_list_gives_every_input_the_rules_decision() -> None:
    entries = DECISION_LIST
    checked = 0
    for bits in range(1 << len(gen.NAMES)):
        holds = frozenset(n for i, n in enumerate(gen.NAMES) if bits >> i & 1)
        assert gen.first_match(entries, holds) == gen.decide({n: n in holds for n in gen.NAMES}), holds
        checked += 1
    assert checked == 256
    assert len(entries) < 64     # minimised: one TCAM block deep, with room


def test_hand_worked_rules() -> None:
    """A few of fred.p4's cases, worked by hand from the rules (not from decide)."""
    none = {n: False for n in gen.NAMES}
    # not congested, qlen >= min_th: R1 (maxq = min_th), a sure strike
    d = gen.decide({**none, "qlen_at_maxq": True})
    assert (d.code, d.reason) == (2, "FRED_MAXQ")
    # congested: maxq is 2 packets, min_th no longer counts
    assert gen.decide({**none, "congested": True, "qlen_at_maxq": True}).code == 0
    assert gen.decide({**none, "congested": True, "qlen_at_maxq_congested": True}).reason == "FRED_MAXQ"
    # congested and qlen > 2 avgcq: R2
    d = gen.decide({**none, "congested": True, "over_twice": True})
    assert (d.code, d.reason) == (2, "FRED_TWICE_AVGCQ")
    # ... but an empty flow is never over 2 avgcq
    assert gen.decide({**none, "congested": True, "over_twice": True, "qlen_zero": True}).code == 0
    # qlen >= avgcq: an R3 candidate (strike > 1 drops), robust when also >= minq
    d = gen.decide({**none, "share_reaches_avg": True, "qlen_at_minq": True})
    assert (d.code, d.r3_threshold, d.reason, d.robust) == (1, "FRED_STRIKE_LIMIT", "FRED_STRIKE", 1)
    # avg == 0: every flow is at avgcq (fred.p4: avgcq = avg / n = 0)
    assert gen.decide({**none, "avg_zero": True, "qlen_zero": True}).code == 1
    # below everything: R4's non-robust flow, no strike possible
    assert gen.decide(none) == gen.Decision(0, "255", "FRED_STRIKE", 0)


def lg(width: int, x: int) -> int:
    return gen_tna_log2.lg_of(width, x)


def tna_decision(qlen: int, n: int, avg_scaled: int, min_th: int, max_th: int,
                 minq: int) -> gen.Decision:
    """What fred_tna.p4 computes, field by field, then the decision list."""
    sat = lambda a, b: max(a - b, 0)   # noqa: E731  (|-|)
    qlen_scaled = qlen * ONE
    share = lg(16, qlen) + lg(16, n) + gen_tna_log2.SHARE_OFFSET   # TnaLog2Q4W16Share
    lg_avg = lg(32, avg_scaled)
    fields = {                                                     # 0: the test holds
        "avg_zero": avg_scaled,
        "qlen_zero": qlen,
        "share_reaches_avg": sat(lg_avg, share),                   # TnaLog2Q4W32Compare
        "over_twice": sat(lg_avg + gen_tna_log2.TWICE_OFFSET + 1, share),
        "congested": sat(max_th * ONE, avg_scaled),
        "qlen_at_maxq": sat(min_th * ONE, qlen_scaled),
        "qlen_at_maxq_congested": sat(MAXQ_CONGESTED * ONE, qlen_scaled),
        "qlen_at_minq": sat(minq * ONE, qlen_scaled),
    }
    holds = frozenset(name for name, value in fields.items() if value == 0)
    return gen.first_match(DECISION_LIST, holds)


def exact_decision(qlen: int, n: int, avg_scaled: int, min_th: int, max_th: int,
                   minq: int) -> gen.Decision:
    """fred.p4's rules with exact arithmetic (avgcq = avg / max(n, 1))."""
    flows = max(n, 1)
    at_avgcq = avg_scaled == 0 or (qlen > 0 and qlen * flows * ONE >= avg_scaled)
    over_twice = qlen > 0 and qlen * flows * ONE > 2 * avg_scaled
    congested = avg_scaled >= max_th * ONE
    maxq = MAXQ_CONGESTED if congested else min_th
    r1 = qlen >= maxq
    r2 = congested and over_twice
    robust = int(qlen >= minq and at_avgcq)
    if r1:
        return gen.Decision(2, "255", "FRED_MAXQ", robust)
    if r2:
        return gen.Decision(2, "255", "FRED_TWICE_AVGCQ", robust)
    if at_avgcq:
        return gen.Decision(1, "FRED_STRIKE_LIMIT", "FRED_STRIKE", robust)
    return gen.Decision(0, "255", "FRED_STRIKE", robust)


def test_tna_arithmetic_matches_the_exact_rules_away_from_the_log_error() -> None:
    """Random states: where qlen * n is more than 12 % from avg and from 2 avg
    (the logs are each within 7 %: three of them within 1.5 Q4 steps each),
    the TNA fields and list decide exactly as fred.p4."""
    rng = random.Random(20261125)
    compared = 0
    for _ in range(20000):
        min_th = rng.randint(2, 40)
        max_th = rng.randint(min_th + 1, 3 * min_th + 2)
        minq = rng.choice([1, 2, 4])
        qlen = rng.choice([0, 0, 1, 2, 3]) if rng.random() < 0.3 else rng.randint(0, 60)
        n = rng.randint(0, 40)
        avg_scaled = 0 if rng.random() < 0.05 else rng.randint(1, 4 * max_th * ONE)
        product = qlen * max(n, 1) * ONE
        if avg_scaled and (abs(product - avg_scaled) < 0.12 * avg_scaled
                           or abs(product - 2 * avg_scaled) < 0.24 * avg_scaled):
            continue
        assert tna_decision(qlen, n, avg_scaled, min_th, max_th, minq) == \
            exact_decision(qlen, n, avg_scaled, min_th, max_th, minq), \
            (qlen, n, avg_scaled, min_th, max_th, minq)
        compared += 1
    assert compared > 10000


def test_the_committed_p4_file_is_the_generators_output() -> None:
    out = subprocess.run([sys.executable, str(REPO / "tools" / "gen_tna_fred_decision.py")],
                         capture_output=True, text=True, check=True).stdout
    assert (REPO / "p4src" / "tna" / "fred_decision_tna.p4").read_text() == out
