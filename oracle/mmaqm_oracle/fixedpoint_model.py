"""Bit-exact reference model of the P4 AQM (the test oracle; moved from mmaqm.fixedpoint).

Units (defines.p4), as in :mod:`mmaqm.fixedpoint`:
  * ``*_scaled``: packets * 2^AVG_FRAC_BITS, in bit<32>;
  * ``*_q16``:    probabilities / shares * 2^PROB_FRAC_BITS;
  * ``*_q24``:    RED slope max_p / (max_th - min_th) per packet * 2^SLOPE_FRAC_BITS.

The reference model (``p4_to_scaled``, ``ewma``, ``red_p_b_q16``,
``red_decide``, ``PortModel``) follows occupancy.p4, averages.p4,
red.p4, cbt.p4, dcbt.p4, mcdt.p4 and aqm.p4 line by line, with the same bit widths,
wraparound and ``>>`` truncation, so switch tests can predict exact outcomes.
The controller's conversions (``to_scaled``, ``red_slope_q24`` ...) stay in
:mod:`mmaqm.fixedpoint`; the product never imports this package.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Union

from mmaqm import p4constants as C
from mmaqm.fixedpoint import MASK32, MASK64, PROB_ONE
MASK48 = (1 << 48) - 1   # the ingress timestamp and the tag guard's TAT (bit<48>)

if TYPE_CHECKING:  # for the annotations only
    from mmaqm.encoding import PolicyAction

ADMIT = "ADMIT"
CUT_IN = "CUT_IN"          # admitted, and ChIPS sent it to the cut-in queue (chips.p4)
MARK_PREFIX = "MARK_"      # admitted with ECN CE: "MARK_RED_EARLY" / "MARK_RED_FORCED"
# Drop reason names (members of drop_reason_t in the P4Info), as returned by the model.
QUEUE_LIMIT = "QUEUE_LIMIT"
RED_EARLY = "RED_EARLY"
RED_FORCED = "RED_FORCED"
CLASS_THRESHOLD = "CLASS_THRESHOLD"
FRED_MAXQ = "FRED_MAXQ"                  # FRED R1 (mmaqm.algorithms.fred)
FRED_TWICE_AVGCQ = "FRED_TWICE_AVGCQ"    # FRED R2
FRED_STRIKE = "FRED_STRIKE"              # FRED R3
UPTA_USELESS = "UPTA_USELESS"            # UPTA: the flow is U (mmaqm.algorithms.upta, Fig. 7)
UPTA_FAIR_SHARE = "UPTA_FAIR_SHARE"      # UPTA: an I flow's probabilistic drop (Fig. 7)
TAG_GUARD = "TAG_GUARD"                  # the tag guard (tag_guard.p4)
if {QUEUE_LIMIT, RED_EARLY, RED_FORCED, CLASS_THRESHOLD, FRED_MAXQ, FRED_TWICE_AVGCQ,
        FRED_STRIKE, UPTA_USELESS, UPTA_FAIR_SHARE, TAG_GUARD} != set(C.DROP_REASONS):
    raise ImportError(f"drop_reason_t members {sorted(C.DROP_REASONS)} differ from the model's")

RandSource = Callable[[], int]


# ------------------------------------------------ bit-exact P4 arithmetic
def _check_bits(what: str, value: int, bits: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << bits:
        raise ValueError(f"{what} must be an int in 0..2^{bits}-1, got {value!r}")


def p4_to_scaled(pkts: int) -> int:
    """averages.p4 to_scaled: pkts << AVG_FRAC_BITS in bit<32> (wraps at 65536 packets)."""
    _check_bits("pkts", pkts, 32)
    return (pkts << C.AVG_FRAC_BITS) & MASK32


def ewma(avg_scaled: int, sample_scaled: int, shift: int) -> int:
    """averages.p4 ewma(): avg += (sample - avg) >> shift, truncating toward avg."""
    _check_bits("avg_scaled", avg_scaled, 32)
    _check_bits("sample_scaled", sample_scaled, 32)
    _check_bits("shift", shift, 8)
    # A bit<32> shifted by >= 32 is 0 in P4, as in Python for values < 2^32.
    if sample_scaled >= avg_scaled:
        return (avg_scaled + ((sample_scaled - avg_scaled) >> shift)) & MASK32
    return (avg_scaled - ((avg_scaled - sample_scaled) >> shift)) & MASK32


def red_p_b_q16(avg_scaled: int, min_th_scaled: int, red_slope_q24: int) -> int:
    """red.p4: p_b_q16 = (bit<64>)(avg - min_th) * slope >> SLOPE_FRAC_BITS.

    avg - min_th is bit<32> and wraps when avg < min_th (RedDrop never asks then).
    """
    _check_bits("avg_scaled", avg_scaled, 32)
    _check_bits("min_th_scaled", min_th_scaled, 32)
    _check_bits("red_slope_q24", red_slope_q24, 32)
    excess_scaled = (avg_scaled - min_th_scaled) & MASK32
    return ((excess_scaled * red_slope_q24) & MASK64) >> C.SLOPE_FRAC_BITS


def dcbt_tagged_th_scaled(red_avg_scaled: int, tagged_share_q16: int) -> int:
    """dcbt.p4: tagged_th = (bit<32>)((bit<64>)red_avg * share_q16 >> PROB_FRAC_BITS) (dcbt §3.1)."""
    _check_bits("red_avg_scaled", red_avg_scaled, 32)
    _check_bits("tagged_share_q16", tagged_share_q16, 32)
    return (((red_avg_scaled * tagged_share_q16) & MASK64) >> C.PROB_FRAC_BITS) & MASK32


def tag_guard_drops(tat_us: int, now_us: int, interval_us: int) -> bool:
    """tag_guard_steps.p4 tag_guard_test (ITU-T I.371 virtual scheduling): the
    flow's theoretical arrival time is more than TAG_GUARD_BURST_PKTS intervals
    ahead of now, TAT > now + T * burst (bit<48>)."""
    _check_bits("tat_us", tat_us, 48)
    _check_bits("now_us", now_us, 48)
    _check_bits("interval_us", interval_us, 32)
    return tat_us > (now_us + interval_us * C.CONSTANTS["TAG_GUARD_BURST_PKTS"]) & MASK48


def tag_guard_next_tat(tat_us: int, now_us: int, interval_us: int) -> int:
    """tag_guard_steps.p4 tag_guard_admit: max(TAT, now) + T (bit<48>)."""
    return (max(tat_us, now_us) + interval_us) & MASK48


def idle_decay(avg_scaled: int, halvings_q32: int) -> int:
    """averages.p4 idle_decay(): avg * 2^-h with h = halvings_q32 / 2^32; whole
    halvings shift, the fraction f uses 1 - f/2 (truncating like the P4)."""
    _check_bits("avg_scaled", avg_scaled, 32)
    _check_bits("halvings_q32", halvings_q32, 64)
    if halvings_q32 >= C.IDLE_DECAY_MAX_HALVINGS << 32:
        return 0
    whole = (halvings_q32 >> 32) & 0xFF
    frac_q16 = (halvings_q32 >> 16) & 0xFFFF
    halved = avg_scaled >> whole
    return (halved - (((halved * frac_q16) & MASK64) >> 17)) & MASK32


def idle_halvings_q32(idle_us: int, idle_decay_q32: int) -> int:
    """red.p4: (bit<64>)min(idle_us, MAX_IDLE_US) * idle_decay_q32."""
    _check_bits("idle_us", idle_us, 48)
    _check_bits("idle_decay_q32", idle_decay_q32, 32)
    return (min(idle_us, C.MAX_IDLE_US) * idle_decay_q32) & MASK64


@dataclass(frozen=True)
class RedState:
    """Registers red_count and red_rand_q16 of one port (red.p4). Power-up: both 0.

    count == 0 means "restarted": R is drawn by the next early-zone packet.
    """

    count: int = 0
    rand_q16: int = 0


def _draw(rand_source: RandSource) -> int:
    """random(r, 0, PROB_ONE - 1)."""
    value = rand_source()
    _check_bits("rand_source()", value, C.PROB_FRAC_BITS)
    return value


def red_decide(
    avg_scaled: int,
    params: Mapping[str, int],
    state: RedState,
    rand_source: RandSource,
    ecn_capable: bool = False,
) -> tuple[str | None, bool, RedState]:
    """red_drop_test (red.p4) on an already updated average
    -> (reason RED acted for or None, True if it marks instead of drops, new state).

    Uses params min_th_scaled, max_th_scaled, red_slope_q24 and the options
    gentle, max_p_q16, gentle_slope_q24, ecn, harddrop, wait (absent = off).
    rand_source() plays random(0, PROB_ONE - 1) and is called exactly when the
    P4 calls random(): by the first early-zone packet after a restart.
    """
    _check_bits("avg_scaled", avg_scaled, 32)
    min_th = params["min_th_scaled"]
    max_th = params["max_th_scaled"]
    gentle = params.get("gentle", 0) == 1
    ecn = params.get("ecn", 0) == 1
    harddrop = params.get("harddrop", 0) == 1
    wait = params.get("wait", 0) == 1
    forced_zone = avg_scaled >= max_th and (not gentle or avg_scaled >= max_th << 1)
    if avg_scaled < min_th:                       # below min_th: enqueue, restart
        return None, False, RedState(0, state.rand_q16)
    if forced_zone:                               # forced drop (or mark), restart
        return RED_FORCED, ecn and not harddrop and ecn_capable, RedState(0, state.rand_q16)
    rand_q16 = _draw(rand_source) if state.count == 0 else state.rand_q16
    count = (state.count + 1) & MASK32
    if avg_scaled < max_th:
        p_b_q16 = red_p_b_q16(avg_scaled, min_th, params["red_slope_q24"])
    else:                                         # gentle ramp, max_th <= avg < 2 max_th
        ramp_q16 = ((((avg_scaled - max_th) & MASK32) * params["gentle_slope_q24"]) & MASK64) \
            >> C.SLOPE_FRAC_BITS
        p_b_q16 = (params["max_p_q16"] + ramp_q16) & MASK64
    # Drop when count * p_b > R (the uniform-gap form of p_a = p_b / (1 - count p_b));
    # wait (ns-2 wait_): when count * p_b > 1 + R, the form of p_b / (2 - count p_b).
    threshold_q16 = rand_q16 + (PROB_ONE if wait else 0)
    if (count * p_b_q16) & MASK64 > threshold_q16:  # strict: P(drop) = count * p_b / 2^16 (- 1)
        return RED_EARLY, ecn and ecn_capable, RedState(0, rand_q16)
    return None, False, RedState(count, rand_q16)


# ------------------------------------------------------- one port's AQM
@dataclass(frozen=True)
class Occupancy:
    """occupancy_t: the port's exact queue occupancy when the packet arrives."""

    queue_pkts: int = 0
    tcp_pkts: int = 0
    tagged_pkts: int = 0
    untagged_pkts: int = 0


OccupancyLike = Union[Occupancy, Mapping[str, int]]
_SHORT_OCCUPANCY = {"queue": "queue_pkts", "tcp": "tcp_pkts",
                    "tagged": "tagged_pkts", "untagged": "untagged_pkts"}


def as_occupancy(value: OccupancyLike) -> Occupancy:
    """Occupancy from itself or a dict keyed queue_pkts.. (or queue/tcp/tagged/untagged)."""
    if isinstance(value, Occupancy):
        occupancy = value
    else:
        known = {f.name for f in fields(Occupancy)}
        kwargs: dict[str, int] = {}
        for key, count in value.items():
            name = _SHORT_OCCUPANCY.get(key, key)
            if name not in known:
                raise ValueError(f"occupancy: unknown key {key!r}")
            kwargs[name] = count
        occupancy = Occupancy(**kwargs)
    for f in fields(Occupancy):
        _check_bits(f"occupancy.{f.name}", getattr(occupancy, f.name), 32)
    return occupancy


class PortModel:
    """Reference model of one egress port's port_policy action (aqm.p4) with its registers.

    The caller supplies the occupancy at each arrival (it models departures)
    and applies the decision to its own occupancy. ``Occupancy.queue_pkts`` is
    the physical queue; the class counts are the virtual FIFO's (occupancy.p4),
    which differ only under ChIPS, after a cut-in packet left before its slot.
    Idle-time decay needs the arrival time (``now_us``, the switch's
    ingress_global_timestamp) and the time the queue last emptied
    (:meth:`queue_emptied`, egress). Register names follow the P4.
    """

    def __init__(self, action: "PolicyAction", rand_source: RandSource) -> None:
        self.action = action
        self.rand_source = rand_source
        # Registers at power-up: all zero.
        self.red_avg_scaled = 0
        self.class_avg_scaled = [0] * C.CLASS_SLOTS
        self.avg_policy_epoch = 0
        self.red_state = RedState()
        self.queue_idle_since_us = 0
        self.chips_tagged_share_q16 = 0
        # The tag guard's register (tag_guard.p4): slot -> TAT (µs); absent = 0.
        self.tag_guard_tat_us: dict[int, int] = {}
        self._guard_slot: int | None = None      # the slot tag_guard_test read, if it ran
        self._flow_slot = 0
        self._now_us = 0
        # Counters (packets): per class, and per (class, reason).
        self.arrivals: Counter[int] = Counter()
        self.admits: Counter[int] = Counter()
        self.drops: Counter[tuple[int, str]] = Counter()
        self.ecn_marks: Counter[tuple[int, str]] = Counter()
        self.chips_events: Counter[str] = Counter()

    def set_policy(self, action: "PolicyAction") -> None:
        """The controller modifies the port_policy entry (registers untouched)."""
        self.action = action

    def queue_emptied(self, now_us: int) -> None:
        """Egress: the last queued packet left at now_us (occupancy.p4 queue_departure)."""
        _check_bits("now_us", now_us, 48)
        self.queue_idle_since_us = now_us

    # -- the port_policy actions
    def arrive(self, class_id: int, occupancy: OccupancyLike, *, now_us: int = 0,
               ecn_capable: bool = False, flow_slot: int = 0) -> str:
        """One packet of class_id arrives -> ADMIT, CUT_IN, MARK_<reason> or a
        drop_reason_t name. ecn_capable: the packet's ECN field is not Not-ECT.
        flow_slot: its flow's tag guard slot (tag_guard.p4; the caller hashes the
        5-tuple); the model keeps each slot's TAT in tag_guard_tat_us."""
        if class_id not in C.CLASS_NAMES:
            raise ValueError(f"class_id {class_id!r} is not one of {C.CLASSES}")
        _check_bits("now_us", now_us, 48)
        _check_bits("flow_slot", flow_slot, 32)
        self._flow_slot = flow_slot
        self._now_us = now_us
        self._guard_slot = None
        occ = as_occupancy(occupancy)
        p = self.action.params
        self.arrivals[class_id] += 1                  # queue_arrival

        name = self.action.name
        reason: str | None = None
        mark = False
        self._idle = (False, 0)
        if name != "drop_tail":
            self._on_policy_epoch(p["policy_epoch"])  # red_on_policy_epoch
        if name == "red":
            reason, mark = self._red_test(
                self._update_red_avg(occ.queue_pkts, occ.queue_pkts, now_us), ecn_capable)
        elif name in ("cbt_red_all", "cbt_red_tcp_only"):
            reason, mark = self._cbt(class_id, occ, now_us, ecn_capable)
        elif name in ("dcbt", "dcbt_chips"):
            reason, mark = self._dcbt(class_id, occ, now_us, ecn_capable)
        elif name == "mcdt":
            reason = self._mcdt(class_id, occ)
        elif name != "drop_tail":
            raise ValueError(f"unknown port_policy action {name!r}")

        # queue_admit_or_drop: the physical limit, unless already dropped
        if (reason is None or mark) and occ.queue_pkts >= p["queue_limit_pkts"]:
            reason, mark = QUEUE_LIMIT, False
        if reason is not None and not mark:
            self.drops[(class_id, reason)] += 1
            return reason
        self.admits[class_id] += 1
        if self._guard_slot is not None:              # tag_guard_admit
            self.tag_guard_tat_us[self._guard_slot] = tag_guard_next_tat(
                self.tag_guard_tat_us.get(self._guard_slot, 0), now_us,
                p["tag_guard_interval_us"])
        decision = ADMIT
        if mark:
            assert reason is not None
            self.ecn_marks[(class_id, reason)] += 1
            decision = MARK_PREFIX + reason
        if name == "dcbt_chips" and self._chips_cut_in(class_id, occ):
            decision = CUT_IN
        return decision

    def _on_policy_epoch(self, policy_epoch: int) -> None:
        if self.avg_policy_epoch != policy_epoch:
            self.avg_policy_epoch = policy_epoch
            self.red_avg_scaled = 0
            for cls in (C.CLASS_TCP, C.CLASS_TAGGED, C.CLASS_UNTAGGED):
                self.class_avg_scaled[cls] = 0
            self.chips_tagged_share_q16 = 0
            self.red_state = RedState(0, self.red_state.rand_q16)

    def _red_test(self, avg_scaled: int, ecn_capable: bool) -> tuple[str | None, bool]:
        reason, mark, self.red_state = red_decide(avg_scaled, self.action.params, self.red_state,
                                                  self.rand_source, ecn_capable)
        return reason, mark

    def _update_red_avg(self, sample_pkts: int, queue_pkts: int, now_us: int) -> int:
        """red_average_update: EWMA, or idle-time decay on an arrival at an empty queue."""
        decay_rate = self.action.params.get("idle_decay_q32", 0)
        if queue_pkts == 0 and decay_rate != 0:
            idle_us = (now_us - self.queue_idle_since_us) & ((1 << 48) - 1)
            halvings = idle_halvings_q32(idle_us, decay_rate)
            self._idle = (True, halvings)
            self.red_avg_scaled = idle_decay(self.red_avg_scaled, halvings)
            self.queue_idle_since_us = now_us
        else:
            self.red_avg_scaled = ewma(self.red_avg_scaled, p4_to_scaled(sample_pkts),
                                       self.action.params["ewma_shift"])
        return self.red_avg_scaled

    def _update_class_avg(self, class_id: int, sample_pkts: int, synchronised: bool = False) -> int:
        idled, halvings = self._idle
        if synchronised and idled:                 # D-CBT: decayed like the RED average
            self.class_avg_scaled[class_id] = idle_decay(self.class_avg_scaled[class_id], halvings)
        else:
            self.class_avg_scaled[class_id] = ewma(self.class_avg_scaled[class_id],
                                                   p4_to_scaled(sample_pkts),
                                                   self.action.params["ewma_shift"])
        return self.class_avg_scaled[class_id]

    @staticmethod
    def _class_pkts(class_id: int, occ: Occupancy) -> int:
        return {C.CLASS_TCP: occ.tcp_pkts, C.CLASS_TAGGED: occ.tagged_pkts,
                C.CLASS_UNTAGGED: occ.untagged_pkts}[class_id]

    def _mcdt(self, class_id: int, occ: Occupancy) -> str | None:
        """mcdt.p4 (mcdt §II.2, Fig. 2's modes): the logical queue before the
        packet (mcdt_mode 0 = A and MCDT_MODE_C: the class's count; MCDT_MODE_B:
        the whole queue) > its whole-packet threshold -> CLASS_THRESHOLD; in mode
        C not while queue_pkts < the thresholds' sum (pkts_t, bit<32>)."""
        p = self.action.params
        field = {C.CLASS_TCP: "tcp_th_pkts", C.CLASS_TAGGED: "tagged_th_pkts",
                 C.CLASS_UNTAGGED: "untagged_th_pkts"}[class_id]
        mode = p.get("mcdt_mode", 0)
        logical_pkts = occ.queue_pkts if mode == C.MCDT_MODE_B \
            else self._class_pkts(class_id, occ)
        over_threshold = logical_pkts > p[field]
        if mode == C.MCDT_MODE_C:
            logical_buffers_pkts = (p["tcp_th_pkts"] + p["tagged_th_pkts"]
                                    + p["untagged_th_pkts"]) & 0xFFFFFFFF
            if occ.queue_pkts < logical_buffers_pkts:
                over_threshold = False
        return CLASS_THRESHOLD if over_threshold else None

    def _cbt(self, class_id: int, occ: Occupancy, now_us: int,
             ecn_capable: bool) -> tuple[str | None, bool]:
        """cbt.p4 (cbt §3): class average updated on that class's arrivals only."""
        p = self.action.params
        red_for_all = self.action.name == "cbt_red_all"
        if class_id != C.CLASS_TCP:                  # cbt_class_test
            threshold = p["tagged_th_scaled"] if class_id == C.CLASS_TAGGED \
                else p["untagged_th_scaled"]
            if self._update_class_avg(class_id, self._class_pkts(class_id, occ)) > threshold:
                return CLASS_THRESHOLD, False
            if class_id == C.CLASS_TAGGED and self._guard_drops():
                return TAG_GUARD, False
            if red_for_all:
                return self._red_test(self._update_red_avg(occ.queue_pkts, occ.queue_pkts,
                                                           now_us), ecn_capable)
            return None, False
        if red_for_all:
            return self._red_test(self._update_red_avg(occ.queue_pkts, occ.queue_pkts, now_us),
                                  ecn_capable)
        # RED for TCP only: RED's average counts TCP packets only (cbt §3).
        return self._red_test(self._update_red_avg(occ.tcp_pkts, occ.queue_pkts, now_us),
                              ecn_capable)

    def _dcbt(self, class_id: int, occ: Occupancy, now_us: int,
              ecn_capable: bool) -> tuple[str | None, bool]:
        """dcbt.p4 (dcbt §3.1): synchronised averages, thresholds while red_avg > min_th,
        the tag guard on every tagged packet the class test passes (when on), and the
        queue limit on the virtual FIFO too."""
        p = self.action.params
        red_avg = self._update_red_avg(occ.queue_pkts, occ.queue_pkts, now_us)
        tagged_avg = self._update_class_avg(C.CLASS_TAGGED, occ.tagged_pkts, synchronised=True)
        untagged_avg = self._update_class_avg(C.CLASS_UNTAGGED, occ.untagged_pkts,
                                              synchronised=True)
        reason: str | None = None
        mark = False
        congested = red_avg > p["min_th_scaled"]
        if class_id == C.CLASS_TAGGED:
            if congested and tagged_avg > dcbt_tagged_th_scaled(red_avg, p["tagged_share_q16"]):
                reason = CLASS_THRESHOLD
            elif self._guard_drops():             # congested or not (tag_guard.p4)
                reason = TAG_GUARD
        elif class_id == C.CLASS_UNTAGGED and congested:
            if untagged_avg > p["untagged_th_scaled"]:
                reason = CLASS_THRESHOLD
        if reason is None:
            reason, mark = self._red_test(red_avg, ecn_capable)
        virtual_pkts = (occ.tcp_pkts + occ.tagged_pkts + occ.untagged_pkts) & MASK32
        if (reason is None or mark) and virtual_pkts >= p["queue_limit_pkts"]:
            reason, mark = QUEUE_LIMIT, False
        return reason, mark

    def _guard_drops(self) -> bool:
        """The tag guard on a tagged packet that passed its class test (off: 0);
        tag_guard_admit moves the slot's TAT if the packet is then admitted."""
        interval_us = self.action.params.get("tag_guard_interval_us", 0)
        if interval_us == 0:
            return False
        self._guard_slot = self._flow_slot
        return tag_guard_drops(self.tag_guard_tat_us.get(self._flow_slot, 0), self._now_us,
                               interval_us)

    def _chips_cut_in(self, class_id: int, occ: Occupancy) -> bool:
        """chips.p4 chips_schedule, on an admitted packet (dcbt §3.2)."""
        p = self.action.params
        tagged = class_id == C.CLASS_TAGGED
        self.chips_tagged_share_q16 = ewma(self.chips_tagged_share_q16, PROB_ONE if tagged else 0,
                                           p["chips_ewma_shift"])
        if self.chips_tagged_share_q16 > p["chips_tagged_share_limit_q16"]:
            self.chips_events["CHIPS_OFF_ADMITS"] += 1
            return False
        self.chips_events["CHIPS_ON_ADMITS"] += 1
        if not tagged:
            return False
        if p4_to_scaled(occ.queue_pkts) > self.red_avg_scaled:
            self.chips_events["CHIPS_CUT_IN"] += 1
            return True
        self.chips_events["CHIPS_NO_CONGESTION"] += 1
        return False
