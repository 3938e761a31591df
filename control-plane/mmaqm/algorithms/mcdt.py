"""Multiple-Class Dynamic Threshold, MCDT (mcdt §II.2, eqs. 5-10; the modes A, B, C of Fig. 2).

The paper's three classes (mcdt Table 1, §II.2) are this project's three:
TCP (FTP, e-mail) = ``CLASS_TCP``; tagged UDP, the paper's "MMU" class
(MM_APP streaming) = ``CLASS_TAGGED``; untagged UDP, the paper's "UDP" class
(CBR, "the others") = ``CLASS_UNTAGGED``.

Once per period, from the packets of each class that *arrived* in the period:
  alpha_tcp = tcp + 0.2 mmu + 0.4 udp,  alpha_mmu = 0.8 mmu,  alpha_udp = 0.6 udp   (eqs. 6-8)
  T5_c  = alpha_c (B - Q) / (1 + sum alpha)                                        (eq. 5)
  R     = (B - sum_c T5_c) / S,  S = number of active classes                      (eq. 9)
  T_c   = 0.7 (T5_c + R) + 0.3 T_c,last                                            (eq. 10)
Per packet (one FIFO, §II.2 list): count the arrival, drop it when the class's
logical queue exceeds T_c, else enqueue. Packets leave in arrival order in every
mode ("no additional processes in deque procedure", §II.2); Fig. 2's modes differ
in "the mechanism of logical queue". Fig. 2 itself is not in the paper's text, so
the three are our reading of what the text says of them (docs/algorithms/mcdt.md):
  * mode A: the class's own packets in the FIFO: drop when q_c > T_c;
  * mode B: the FIFO the packet joins, all classes: drop when Q > T_c. A class is
    cut by the others' backlog as well as its own (§III: B cuts MM-UDP most, "the
    duplicated 'cut scale by half' effects");
  * mode C: mode A's test, binding only once Q >= T_tcp + T_mmu + T_udp: below
    that a class may use buffer the others leave free (the wastage Θ of eq. 4 that
    eq. 9 hands out by the period, here at once).
The thresholds are the same eqs. 5-10 in every mode.

Split (docs/mcdt-fred-plan.md): the controller reads the per-class arrival
counters (queue_arrivals, which count dropped packets too, as the paper's
"Counting" step precedes its "Threshold Test") and Q(t) = admits - departures,
runs :func:`period_update` and installs whole-packet thresholds in the port's
policy entry; the data plane compares the class's logical count with them.

Choices where the paper is silent or ambiguous (each repeated where it applies):
  * **Q(t)** in eqs. 5 and 10 is the total queue occupancy at the update
    instant: the paper updates "periodically" (§II.2), so Q is sampled then.
  * **Active class** (S of eq. 9): a class with at least one arrival in the
    period ("active" read as the paper's per-period counting). R goes to those
    S classes only, so the unsmoothed targets always sum to exactly B:
    sum_c T5_c + S R = B. (The alternative, alpha_c > 0, would make TCP active
    whenever tagged or untagged packets arrive, through eq. 6.)
  * **No arrival at all** (S = 0, R undefined): the thresholds stay as they are.
  * **Before the first update** every class's threshold is B (every mode is then
    drop-tail) and that B is the T_c,last of the first update.
  * **"Exceeds"**: a packet is dropped when the class's logical queue length
    before it (the paper tests before "Enque") is > T_c, so a class holds at
    most floor(T_c) + 1 packets.
  * **Period**: the paper gives none ("during a certain period", §II.2); see
    DEFAULT_PERIOD_MS.

Encoding. The thresholds are packets (B and Q count packets, §III: a
100-packet queue) but fractional. The data plane compares an integer count q
with T: q > T  <=>  q > floor(T) for integer q, so the whole-packet floor is an
exact encoding, and the P4 compares two pkts_t values without a shift. The
controller keeps the smoothed T_c (eq. 10's memory) on the finer
packets * 2^AVG_FRAC_BITS grid (``th_scaled``), computed in exact rational
arithmetic and rounded down once per period, so that the floor does not bias
the next period and every result is reproducible bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from fractions import Fraction
from typing import ClassVar, Union

from .. import p4constants as C
from .base import MIN_LOOP_INTERVAL_MS, Algorithm, Param, PortInputs, PortPolicy
from ..fixedpoint import check_int

Number = Union[int, float, Fraction]

DEFAULT_BUFFER_PKTS = 100   # mcdt §III: "a 100-packet long physical outbound queue"
# Not in the paper (§II.2: "number of arrived packet during a certain period").
# 100 ms: two of the controller's D-CBT update intervals (50 ms); at the paper's
# rates (1 Mbit/s CBR of 1 KB packets = 122 pkt/s) a period still sees about a
# dozen packets of a class, so alpha is not decided by single packets.
DEFAULT_PERIOD_MS = 100.0
AVG_ONE = 1 << C.AVG_FRAC_BITS
MAX_BUFFER_PKTS = (1 << (32 - C.AVG_FRAC_BITS)) - 1   # B * 2^16 must fit bit<32>
MAX_COUNT = (1 << 64) - 1                            # P4Runtime counters are 64-bit

TCP = C.CLASS_TCP
MMU = C.CLASS_TAGGED       # the paper's MMU class: tagged UDP
UDP = C.CLASS_UNTAGGED     # the paper's UDP class: untagged UDP
MCDT_CLASSES = (TCP, MMU, UDP)
_CLASS_FIELD = {TCP: "tcp", MMU: "tagged", UDP: "untagged"}


@dataclass(frozen=True)
class Weights:
    """The paper's coefficients. TCP's own arrivals count 1 in eq. 6 (no coefficient)."""

    mmu_to_tcp: Number = 0.2    # eq. 6: 0.2 x mmu_count
    udp_to_tcp: Number = 0.4    # eq. 6: 0.4 x udp_count
    mmu: Number = 0.8           # eq. 7: 0.8 x mmu_count
    udp: Number = 0.6           # eq. 8: 0.6 x udp_count
    new: Number = 0.7           # eq. 10: 0.7 x (T5_c + R)
    last: Number = 0.3          # eq. 10: 0.3 x T_c,last ("the weighting factor (we set 0.3)")

    def validated(self) -> "Weights":
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)) \
                    or not math.isfinite(value) or not 0 <= value <= 1:
                raise ValueError(f"weights.{f.name} must be a number in [0, 1], got {value!r}")
        if _exact(self.new) + _exact(self.last) != 1:
            raise ValueError(f"weights.new + weights.last must be 1 (eq. 10 is a weighted mean), "
                             f"got {self.new!r} + {self.last!r}")
        return self

    def exact(self) -> "Weights":
        """The same weights as Fractions (0.2 -> 1/5: decimal literals, not binary floats)."""
        return Weights(**{f.name: _exact(getattr(self, f.name)) for f in fields(self)})


PAPER_WEIGHTS = Weights()


def _exact(value: Number) -> Fraction:
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int):
        return Fraction(value)
    return Fraction(repr(value))   # shortest decimal that round-trips: 0.2 -> 1/5


# ------------------------------------------------- the equations (float references)
def alpha_tcp(tcp_count: Number, mmu_count: Number, udp_count: Number,
              weights: Weights = PAPER_WEIGHTS) -> Number:
    """eq. 6: alpha_tcp = tcp_count + 0.2 mmu_count + 0.4 udp_count."""
    return tcp_count + weights.mmu_to_tcp * mmu_count + weights.udp_to_tcp * udp_count


def alpha_mmu(mmu_count: Number, weights: Weights = PAPER_WEIGHTS) -> Number:
    """eq. 7: alpha_mmu = 0.8 mmu_count."""
    return weights.mmu * mmu_count


def alpha_udp(udp_count: Number, weights: Weights = PAPER_WEIGHTS) -> Number:
    """eq. 8: alpha_udp = 0.6 udp_count."""
    return weights.udp * udp_count


def class_threshold(alpha_c: Number, sum_alpha: Number, buffer_pkts: Number,
                    queue_pkts: Number) -> Number:
    """eq. 5: T_c = alpha_c (B - Q(t)) / (1 + sum alpha), packets."""
    return alpha_c * (buffer_pkts - queue_pkts) / (1 + sum_alpha)


def residue(buffer_pkts: Number, class_thresholds: list[Number], active_classes: int) -> Number:
    """eq. 9: R = (B - sum_c T_c) / S, the eq.-5 thresholds' leftover per active class.

    The sum runs over every class (an inactive class's eq.-5 threshold is
    alpha-weighted like the others); S must be >= 1."""
    if active_classes < 1:
        raise ValueError(f"active_classes must be >= 1, got {active_classes!r}")
    return (buffer_pkts - sum(class_thresholds)) / active_classes


def smoothed_threshold(class_th: Number, residue_pkts: Number, last_th: Number,
                       weights: Weights = PAPER_WEIGHTS) -> Number:
    """eq. 10: T_c = 0.7 (T5_c + R) + 0.3 T_c,last; pass residue 0 for an inactive class."""
    return weights.new * (class_th + residue_pkts) + weights.last * last_th


# ------------------------------------------------- the period update
def _check_buffer(buffer_pkts: object) -> int:
    return check_int("buffer_pkts", buffer_pkts, 1, MAX_BUFFER_PKTS)


def _check_counts(arrivals: Mapping[int, int]) -> dict[int, int]:
    if not isinstance(arrivals, Mapping):
        raise ValueError(f"arrivals must be a mapping class id -> packets, got {arrivals!r}")
    for key in arrivals:
        if key not in MCDT_CLASSES:
            raise ValueError(f"arrivals: unknown class id {key!r} (classes {MCDT_CLASSES})")
    return {c: check_int(f"arrivals[{C.CLASS_NAMES[c]}]", arrivals.get(c, 0), 0, MAX_COUNT)
            for c in MCDT_CLASSES}


def initial_th_scaled(buffer_pkts: int = DEFAULT_BUFFER_PKTS) -> dict[int, int]:
    """Every class's threshold before the first update: B (a choice; the paper is silent)."""
    return {c: _check_buffer(buffer_pkts) << C.AVG_FRAC_BITS for c in MCDT_CLASSES}


def period_arrivals(previous_total: Mapping[int, int], current_total: Mapping[int, int]
                    ) -> dict[int, int]:
    """Arrivals per class in one period from two readings of the cumulative
    queue_arrivals counters. A counter that went backwards (a pipeline push
    reset it) is a ValueError: the caller restarts from fresh readings."""
    before, now = _check_counts(previous_total), _check_counts(current_total)
    for c in MCDT_CLASSES:
        if now[c] < before[c]:
            raise ValueError(f"current_total[{C.CLASS_NAMES[c]}] ({now[c]}) is below "
                             f"previous_total ({before[c]}): the counters were reset")
    return {c: now[c] - before[c] for c in MCDT_CLASSES}


@dataclass(frozen=True)
class PeriodResult:
    """One period's update. th_scaled is the controller's state (T_c * 2^16,
    rounded down); th_pkts = th_scaled >> 16 is what the data plane gets."""

    th_scaled: dict[int, int]
    th_pkts: dict[int, int]
    active: frozenset[int]
    alpha: dict[int, Fraction]
    class_th: dict[int, Fraction]          # eq. 5, packets (empty when nothing arrived)
    residue_pkts: Fraction | None          # eq. 9 (None when nothing arrived)


def period_update(arrivals: Mapping[int, int], queue_pkts: int,
                  last_th_scaled: Mapping[int, int] | None = None, *,
                  buffer_pkts: int = DEFAULT_BUFFER_PKTS,
                  weights: Weights = PAPER_WEIGHTS) -> PeriodResult:
    """eqs. 5-10 for one period, exactly, from the packets of each class that
    arrived in it (class id -> count; a missing class counts 0), the queue
    occupancy Q(t) at the update, and the last thresholds (None: before the
    first update, every class at B).

    Active classes are those with arrivals; with none, the thresholds stay.
    """
    buffer_pkts = _check_buffer(buffer_pkts)
    counts = _check_counts(arrivals)
    queue_pkts = check_int("queue_pkts", queue_pkts, 0, buffer_pkts)
    if last_th_scaled is None:
        last_th_scaled = initial_th_scaled(buffer_pkts)
    if not isinstance(last_th_scaled, Mapping) or set(last_th_scaled) != set(MCDT_CLASSES):
        raise ValueError(f"last_th_scaled must map each class {MCDT_CLASSES} to a threshold, "
                         f"got {last_th_scaled!r}")
    last = {c: check_int(f"last_th_scaled[{C.CLASS_NAMES[c]}]", last_th_scaled[c], 0,
                          buffer_pkts << C.AVG_FRAC_BITS) for c in MCDT_CLASSES}
    w = weights.validated().exact()

    active = frozenset(c for c in MCDT_CLASSES if counts[c] > 0)
    alpha = {TCP: Fraction(alpha_tcp(counts[TCP], counts[MMU], counts[UDP], w)),
             MMU: Fraction(alpha_mmu(counts[MMU], w)),
             UDP: Fraction(alpha_udp(counts[UDP], w))}
    if not active:                       # S = 0: eq. 9 undefined; keep the thresholds
        return PeriodResult(dict(last), {c: last[c] >> C.AVG_FRAC_BITS for c in MCDT_CLASSES},
                            active, alpha, {}, None)
    sum_alpha = sum(alpha.values())
    class_th = {c: Fraction(class_threshold(alpha[c], sum_alpha, buffer_pkts, queue_pkts))
                for c in MCDT_CLASSES}                                     # eq. 5
    r = Fraction(residue(buffer_pkts, list(class_th.values()), len(active)))  # eq. 9
    th_scaled: dict[int, int] = {}
    for c in MCDT_CLASSES:
        t = smoothed_threshold(class_th[c], r if c in active else 0,
                               Fraction(last[c], AVG_ONE), w)              # eq. 10
        th_scaled[c] = min(math.floor(t * AVG_ONE), buffer_pkts << C.AVG_FRAC_BITS)
    return PeriodResult(th_scaled, {c: v >> C.AVG_FRAC_BITS for c, v in th_scaled.items()},
                        active, alpha, class_th, r)


# ------------------------------------------------- encoding
# mcdt_mode of the mcdt action (defines.p4): the logical queue of Fig. 2's modes.
MODE_A = 0
MODE_B: int = C.MCDT_MODE_B
MODE_C: int = C.MCDT_MODE_C
MODE_NAMES = {"A": MODE_A, "B": MODE_B, "C": MODE_C}   # the configuration's mcdt_mode
DEFAULT_MODE = "A"      # the paper's choice after scenario 1 (§III: "the best mode is Mode A")


def action_params(th_pkts: Mapping[int, int], buffer_pkts: int = DEFAULT_BUFFER_PKTS,
                  mode: str = DEFAULT_MODE) -> dict[str, int]:
    """The MCDT part of the ``mcdt`` port_policy action: tcp_th_pkts,
    tagged_th_pkts, untagged_th_pkts (whole packets, pkts_t) and mcdt_mode
    (MODE_NAMES). queue_limit_pkts (= B) comes with every policy already."""
    buffer_pkts = _check_buffer(buffer_pkts)
    if not isinstance(th_pkts, Mapping) or set(th_pkts) != set(MCDT_CLASSES):
        raise ValueError(f"th_pkts must map each class {MCDT_CLASSES} to packets, got {th_pkts!r}")
    if mode not in MODE_NAMES:
        raise ValueError(f"mode must be one of {', '.join(MODE_NAMES)}, got {mode!r}")
    return {**{f"{_CLASS_FIELD[c]}_th_pkts": check_int(f"th_pkts[{C.CLASS_NAMES[c]}]",
                                                        th_pkts[c], 0, buffer_pkts)
               for c in MCDT_CLASSES},
            "mcdt_mode": MODE_NAMES[mode]}


# ------------------------------------------------------------------ the plug-in
class Mcdt(Algorithm):
    """MCDT: per-class thresholds on a logical queue (mode A, B or C of Fig. 2),
    recomputed by the controller every period from the period's arrivals (mcdt §II.2)."""

    name: ClassVar[str] = "MCDT"
    p4_action: ClassVar[str] = "mcdt"
    summary: ClassVar[str] = "Multi-Class Dynamic Thresholds, modes A, B, C (mcdt §II.2, Fig. 2)"
    doc_page: ClassVar[str] = "docs/algorithms/mcdt.md"
    params: ClassVar[tuple[Param, ...]] = (
        Param("mcdt_period_ms", "number", "ms", "how often the controller recomputes the "
              "class thresholds from the period's arrivals (eqs. 5-10; the paper gives no "
              "period); the buffer B of eqs. 5 and 9 is queue_limit_pkts",
              DEFAULT_PERIOD_MS, lo=MIN_LOOP_INTERVAL_MS),
        Param("mcdt_mode", "choice", "", "the logical queue a class's threshold judges "
              "(mcdt Fig. 2; our reading, docs/algorithms/mcdt.md): A = the class's own "
              "packets in the FIFO; B = the whole FIFO the packet joins; C = A's test, "
              "binding only while the queue holds at least the thresholds' sum",
              DEFAULT_MODE, choices=tuple(MODE_NAMES)),
    )

    def action_params(self, policy: PortPolicy, inputs: PortInputs,
                      policy_epoch: int) -> dict[str, int]:
        limit = policy.queue_limit_pkts
        th_pkts = inputs.mcdt_th_pkts if inputs.mcdt_th_pkts is not None else \
            dict.fromkeys(MCDT_CLASSES, limit)              # T_c = B at first
        return {"policy_epoch": policy_epoch,
                **action_params(th_pkts, limit, policy.settings["mcdt_mode"])}

    def period_ms(self, policy: PortPolicy) -> float | None:
        return policy.settings["mcdt_period_ms"]


PLUGIN = Mcdt()
