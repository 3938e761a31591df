"""Tofino (TNA): the target, and its encodings of a port policy (docs/tofino.md).

p4src/tna cannot multiply two run-time values or shift a register by a
run-time amount, so what v1model computes per packet from the port_policy
parameters, the controller precomputes here, from the same PolicyAction (and
so from the same YAML):

* ``red_zone`` (red_tna.p4): per port, ranges of the average -> below min_th,
  early with p_b, or forced. p_b is v1model's red_p_b_q16 at each segment's
  lower end (and the gentle ramp's, red.p4 red_drop_test);
* ``dcbt_tagged_threshold`` (aqm_tna.p4): ranges of the RED average -> the
  class thresholds: none up to min_th, then tagged red_avg * tagged_share
  (dcbt §3.1) at the lower end and untagged as configured;
* the ``Lpf`` time constant that makes Tofino's time-based filter weigh one
  packet like the per-packet EWMA with w = 2^-ewma_shift at a packet time s,
  and the limits of the filters a policy needs (``check_lpf_limits``: a time
  constant the driver's 5-bit exponent cannot hold, a share the filter would
  sample too sparsely), refused before any write.

Pure functions; writing the range entries over P4Runtime is the driver's
(driver.write_port_policy), the Lpf specs are tna_lpf's, written over BfRt
by the controller (p4rt.bfrt). Also
here: the P4Runtime device config of a TNA build (bf_pipeline_config), the
counters a TNA build lays out differently, its clone sessions and the value
set of the router's addresses, and ``Tna``, the target that uses them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from collections.abc import Callable, Mapping

from typing import ClassVar

from .. import algorithms as A
from .. import p4constants as C
from .. import p4generated
from .. import reconcile as R
from ..encoding import PolicyAction
from . import tna_lpf
from .base import Target, TargetRefusal

# red_tna.p4's constants, generated at build time (tools/gen_p4constants.py)
_TNA_CONSTANTS = p4generated.TNA_RED_CONSTANTS
RED_ZONE_SEGMENTS = _TNA_CONSTANTS["RED_ZONE_SEGMENTS"]   # entries a port, each table
AVG_MAX = (1 << 32) - 1                                   # scaled_t
# A Tofino range key fits in 5 PHV nibbles: the tables match avg_scaled[27:8]
# (red_tna.p4 AVG_KEY_SHIFT), the average in 1/256 packet, up to 4096 packets.
AVG_KEY_SHIFT = _TNA_CONSTANTS["AVG_KEY_SHIFT"]
AVG_KEY_BITS = 20
AVG_KEY_MAX = (1 << AVG_KEY_BITS) - 1
# The average never exceeds the queue limit (occupancy counts below it only),
# so a limit below 2^(20 + 8 - 16) packets keeps every average inside the key.
TNA_MAX_QUEUE_LIMIT_PKTS = (1 << (AVG_KEY_BITS + AVG_KEY_SHIFT - 16)) - 1
SLOPE_FRAC_BITS = 24
PROB_FRAC_BITS = 16


@dataclass(frozen=True)
class RangeEntry:
    """avg key (avg_scaled >> AVG_KEY_SHIFT) in [low, high] (inclusive) -> action(params)."""

    low: int
    high: int
    action: str
    params: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))


def _segments(low: int, high: int, count: int) -> list[tuple[int, int]]:
    """[low, high] cut into at most count contiguous ranges of near-equal width."""
    if high < low:
        return []
    count = max(1, min(count, high - low + 1))
    bounds = [low + (high - low + 1) * i // count for i in range(count + 1)]
    return [(bounds[i], bounds[i + 1] - 1) for i in range(count)]


def _key_ceil(avg_scaled: int) -> int:
    """The first key whose every average is >= avg_scaled (a threshold rounded
    up to 1/256 packet)."""
    return min(-(-avg_scaled >> AVG_KEY_SHIFT), AVG_KEY_MAX + 1)


def _check_queue_limit(action: PolicyAction) -> None:
    limit = action.params["queue_limit_pkts"]
    if limit > TNA_MAX_QUEUE_LIMIT_PKTS:
        raise ValueError(f"queue_limit_pkts {limit} is above the TNA range tables' "
                         f"{TNA_MAX_QUEUE_LIMIT_PKTS} (the average key is avg_scaled[27:8])")


def red_zone_entries(action: PolicyAction,
                     segments: int = RED_ZONE_SEGMENTS) -> list[RangeEntry]:
    """red_zone's entries for one port, covering every avg key once.
    A RED-family or FRED action (FRED has no gentle option)."""
    _check_queue_limit(action)
    p = action.params
    min_th, max_th, slope = p["min_th_scaled"], p["max_th_scaled"], p["red_slope_q24"]
    gentle = p.get("gentle", 0) == 1
    min_k, max_k = _key_ceil(min_th), _key_ceil(max_th)
    entries = []
    if min_k > 0:
        entries.append(RangeEntry(0, min_k - 1, "red_below"))
    early = _segments(min_k, max_k - 1, segments // 2 if gentle else segments)
    for lo, hi in early:
        p_b = (((lo << AVG_KEY_SHIFT) - min_th) * slope) >> SLOPE_FRAC_BITS
        entries.append(RangeEntry(lo, hi, "red_early_p_b", {"p_b_q16": min(p_b, AVG_MAX)}))
    forced_k = max_k
    if gentle:
        forced_k = _key_ceil(2 * max_th)
        for lo, hi in _segments(max_k, forced_k - 1, segments - len(early)):
            p_b = p["max_p_q16"] + ((((lo << AVG_KEY_SHIFT) - max_th)
                                     * p["gentle_slope_q24"]) >> SLOPE_FRAC_BITS)
            entries.append(RangeEntry(lo, hi, "red_early_p_b", {"p_b_q16": min(p_b, AVG_MAX)}))
    if forced_k <= AVG_KEY_MAX:
        entries.append(RangeEntry(forced_k, AVG_KEY_MAX, "red_forced"))
    return entries


NEVER_SCALED = AVG_MAX      # a class threshold no average exceeds


def dcbt_tagged_threshold_entries(action: PolicyAction,
                                  segments: int = RED_ZONE_SEGMENTS) -> list[RangeEntry]:
    """dcbt_tagged_threshold's entries for one port (action set_class_thresholds):
    up to min_th both class thresholds are NEVER (dcbt.p4 tests the classes only
    once red_avg > min_th); above, the tagged threshold red_avg * share at each
    segment's lower end and the untagged one as configured. The average can reach
    queue_limit_pkts at most: segments up to there, the rest one entry."""
    _check_queue_limit(action)
    p = action.params
    share, untagged = p["tagged_share_q16"], p["untagged_th_scaled"]

    def entry(lo: int, hi: int) -> RangeEntry:
        return RangeEntry(lo, hi, "set_class_thresholds",
                          {"tagged_th_scaled": ((lo << AVG_KEY_SHIFT) * share) >> PROB_FRAC_BITS,
                           "untagged_th_scaled": untagged})

    above_k = _key_ceil(p["min_th_scaled"] + 1)          # red_avg > min_th
    top = max(_key_ceil(p["queue_limit_pkts"] << 16), above_k)
    entries = []
    if above_k > 0:
        entries.append(RangeEntry(0, above_k - 1, "set_class_thresholds",
                                  {"tagged_th_scaled": NEVER_SCALED,
                                   "untagged_th_scaled": NEVER_SCALED}))
    entries += [entry(lo, hi) for lo, hi in _segments(above_k, top - 1, segments - 2)]
    if top <= AVG_KEY_MAX:
        entries.append(entry(top, AVG_KEY_MAX))
    return entries


# queue_drops / queue_ecn_marks on TNA: index reason * 256 + class_index (an
# identity hash of {reason, class_index}; main.p4), v1model's class_index *
# NUM_DROP_REASONS + reason. The driver reads and reports v1model's indexes.
_TNA_CLASS_INDEX_SLOTS = 256


def tna_drop_counter_index(v1_index: int) -> int:
    """The TNA index of v1model's queue_drops / queue_ecn_marks index."""
    if not 0 <= v1_index < C.NUM_PORTS * C.CLASS_SLOTS * C.NUM_DROP_REASONS:
        raise ValueError(f"drop counter index {v1_index} out of range")
    class_index, reason = divmod(v1_index, C.NUM_DROP_REASONS)
    return reason * _TNA_CLASS_INDEX_SLOTS + class_index


def v1_drop_counter_index(tna_index: int) -> int | None:
    """v1model's index of a TNA queue_drops / queue_ecn_marks index; None for a
    slot no reason uses (reasons 9..15)."""
    reason, class_index = divmod(tna_index, _TNA_CLASS_INDEX_SLOTS)
    if reason >= C.NUM_DROP_REASONS or class_index >= C.NUM_PORTS * C.CLASS_SLOTS:
        return None
    return class_index * C.NUM_DROP_REASONS + reason


@dataclass(frozen=True)
class TnaEventCounters:
    """A v1model event counter (index port * num_events + event) as a TNA build
    keeps it: a counter per event indexed by port (per_port: counter -> event),
    and optionally one counter indexed port * shared_slots + event for
    shared_events. Two sources of one event add up (the driver sums them)."""

    name: str
    num_events: int
    per_port: Mapping[str, int]
    shared: str | None = None
    shared_slots: int = 0
    shared_events: tuple[int, ...] = ()

    @property
    def counters(self) -> tuple[str, ...]:
        return (*self.per_port, *((self.shared,) if self.shared else ()))

    def sources(self, v1_index: int) -> list[tuple[str, int]]:
        """(TNA counter, index) of each source of v1model's index; [] for an
        event the TNA build does not count."""
        if not 0 <= v1_index < C.NUM_PORTS * self.num_events:
            raise ValueError(f"{self.name} index {v1_index} out of range")
        port, event = divmod(v1_index, self.num_events)
        out = [(counter, port) for counter, counted in self.per_port.items()
               if counted == event]
        if event in self.shared_events:
            out.append((self.shared, port * self.shared_slots + event))
        return out

    def v1_index(self, tna_counter: str, index: int) -> int | None:
        """v1model's index of a TNA counter's index; None for a slot of the
        shared counter that no event uses."""
        if tna_counter == self.shared:
            port, event = divmod(index, self.shared_slots)
            if event not in self.shared_events or port >= C.NUM_PORTS:
                return None
        else:
            port, event = index, self.per_port[tna_counter]
        return port * self.num_events + event


# chips_events on TNA: one counter per event, indexed by port (aqm_tna.p4, counted
# when the departure report returns). The slot-departure event has no TNA counter
# (a slot's report is occupancy's only).
TNA_CHIPS_EVENTS = TnaEventCounters("chips_events", C.NUM_CHIPS_EVENTS, MappingProxyType({
    "chips_on_admits": C.CHIPS_EVENTS["on_admits"],
    "chips_off_admits": C.CHIPS_EVENTS["off_admits"],
    "chips_cut_ins": C.CHIPS_EVENTS["cut_in"],
    "chips_no_congestion": C.CHIPS_EVENTS["no_congestion"],
}))


def tna_chips_counter(v1_index: int) -> tuple[str, int] | None:
    """(TNA counter, port) of v1model's chips_events index; None for an event
    the TNA build does not count."""
    sources = TNA_CHIPS_EVENTS.sources(v1_index)
    return sources[0] if sources else None


def v1_chips_index(tna_counter: str, port: int) -> int:
    """v1model's chips_events index of a TNA event counter's port."""
    return TNA_CHIPS_EVENTS.v1_index(tna_counter, port)


# The mirror sessions a TNA program uses (tna_types.p4; the switch's
# configuration, written by the controller as P4Runtime clone sessions):
# TNA_REPORT_SESSION carries each departure report from egress to the
# recirculation port, and ChIPS's slot clones of port p use
# TNA_CHIPS_SESSION_BASE + p, to the port itself. The values: tna_types.p4's,
# generated at build time into p4generated (tools/gen_p4constants.py).
def _typed_constant(name: str) -> int:
    if name not in p4generated.TNA_TYPES_CONSTANTS:
        raise ImportError(f"{p4generated.SOURCES['tna_types']}: no constant {name}")
    return p4generated.TNA_TYPES_CONSTANTS[name]


TNA_RECIRC_PORT = _typed_constant("TNA_RECIRC_PORT")
TNA_REPORT_SESSION = _typed_constant("TNA_REPORT_SESSION")
TNA_CHIPS_SESSION_BASE = _typed_constant("TNA_CHIPS_SESSION_BASE")
# A controller PacketOut's header (tna_types.p4 tna_packet_out_h, UPTA build) carries
# this in its ether_type field: the parser finds the header by it on any port.
TNA_ETHERTYPE_PACKET_OUT = _typed_constant("TNA_ETHERTYPE_PACKET_OUT")
# The report copy is truncated: the 8-byte report leads it and ingress reads
# nothing else. 64 bytes, a minimum Ethernet frame, is an assumption (not
# checked on a switch) that the recirculation path wants a full minimum frame.
TNA_REPORT_COPY_BYTES = 64


TNA_TS_UNIT_NS = 1024   # flow_report_tna.p4: ingress_ts_us counts bits 41..10 of the ns clock
TNA_TS_WIDTH_BITS = 32  # ... in a bit<32> (it wraps every 73.3 minutes)


def tna_ts_to_us(ts_1024ns: int) -> int:
    """A TNA flow report's ingress_ts_us (units of 1.024 us) in microseconds,
    as v1model reports it (rounded down)."""
    return ts_1024ns * TNA_TS_UNIT_NS // 1000


def lpf_time_constant_ns(ewma_shift: int, packet_time_ns: float) -> float:
    """tau of a filter y += (x - y)(1 - e^(-dt/tau)) that weighs one packet
    arriving every packet_time_ns like w = 2^-ewma_shift: 1 - e^(-s/tau) = w."""
    if ewma_shift <= 0:
        raise ValueError("ewma_shift must be >= 1 (w < 1)")
    w = 2.0 ** -ewma_shift
    return -packet_time_ns / math.log1p(-w)


# ---- the Lpf's limits (Tofino 1). What the hardware filter computes is replicated
# in tools/tna_lpf_model.py from open-p4studio's sources: the driver's spec
# conversion (bf-drivers src/pipe_mgr/pipe_mgr_meter_drv_workflows.c,
# pipe_mgr_meter_tof_encode_lpf_spec, pipe_mgr_lpf_get_exponent_mantissa) and the
# model's filter (tofino-model src/shared/mau-lpf-meter.cpp, MauLpfMeter::
# calculate_output); docs/tofino.md, "How far the Lpf averages drift".
#
# The clock the driver converts a spec's nanoseconds at (pipe_mgr_get_sp_clock_speed):
# a Tofino 1 of the full-speed SKU reports 1.22 GHz (dvm.c bf_drv_get_clock_speed,
# the "1.25 GHz" fuse setting), the model 1.271 GHz; slower SKUs 1.1 and 1.0 GHz.
# A limit in cycles is tightest at the fastest clock, so the checks use it.
TOFINO1_CLOCK_HZ = 1_220_000_000
TOFINO_MODEL_CLOCK_HZ = 1_271_000_000
LPF_CHECK_CLOCK_HZ = max(TOFINO1_CLOCK_HZ, TOFINO_MODEL_CLOCK_HZ)
# tau in cycles = 2^exponent * (1 + mantissa / 2^9), the exponent in 5 bits: the
# driver writes exponent & 31, so tau >= 2^32 cycles becomes a few cycles.
LPF_EXPONENT_BITS = 5
LPF_MANTISSA_BITS = 9
LPF_MAX_TIME_CONSTANT_CYCLES = 1 << (1 << LPF_EXPONENT_BITS)          # 2^32
# The filter's timestamp is 28 bits of cycles: a gap between two samples is seen
# modulo 2^28 cycles (0.21 s at 1.271 GHz).
LPF_TIMESTAMP_BITS = 28
# A sample less than 2^(exponent - 7) cycles after the filter's timestamp is not
# used (sample mode: the value stays; rate mode: it is added undecayed). The
# time is not lost: the timestamp stays, so the next sample sees the whole gap.
LPF_MIN_STEP_SHIFT = 7
# The filter's value saturates at 2^32 - 1 (rate mode: the sum of the samples of
# about one time constant).
LPF_VALUE_MAX = (1 << 32) - 1
# Sample mode with tau = -s / ln(1 - w), w = 2^-k, packets every s: the filter
# uses about one sample in 2^(k - 8), so it averages about 2^8 samples whatever k.
# A queue average loses little by it (a queue moves by one packet a sample); an
# average of independent samples (ChIPS's tagged share, 0 or 1 a packet) keeps
# the noise of 2^8 samples: beyond w = 2^-9 its noise is more than twice
# v1model's (docs/tofino.md, "How far the Lpf averages drift"). Refused beyond.
LPF_MAX_SHARE_EWMA_SHIFT = 9


def lpf_time_constant_cycles(tau_ns: float, clock_hz: float = LPF_CHECK_CLOCK_HZ) -> float:
    """tau in clock cycles, as the driver converts a spec (ns * clock_hz / 1e9)."""
    return tau_ns * clock_hz / 1e9


def lpf_max_time_constant_ns(clock_hz: float = LPF_CHECK_CLOCK_HZ) -> float:
    """The largest time constant (exclusive) the Lpf holds at clock_hz: 2^32 cycles."""
    return LPF_MAX_TIME_CONSTANT_CYCLES * 1e9 / clock_hz


@dataclass(frozen=True)
class LpfFilter:
    """One Lpf a port policy needs: its P4 name, the per-packet weight's shift
    (sample mode) or None (rate mode), tau_ns (None: the policy does not fix it),
    and in rate mode, where the caller knows it, the largest sum of samples per
    nanosecond it must hold (the filter holds about tau_ns times that)."""

    name: str
    ewma_shift: int | None
    tau_ns: float | None
    max_value_per_ns: float | None = None
    max_ewma_shift: int | None = None      # an average of independent samples


def lpf_filters(policy: A.PortPolicy, action: PolicyAction) -> list[LpfFilter]:
    """The Lpf filters of a port policy on the TNA build, one per average its
    plug-in declares (``lpf_averages``, in that order): sample mode with
    tau = -s / ln(1 - w), s the policy's packet time (tna_lpf.packet_time_ns:
    1 / bandwidth_pps; tau None without it), w = 2^-k of its action; rate mode
    (UPTA's rate) with tau = K = 2^k_shift us. The one derivation of tau: both
    the early check (check_lpf_limits) and what is written (tna_lpf.lpf_specs)
    use it. A rate filter's saturation at 2^32 - 1 is v1model's too (upta.p4's
    bit<32> R) and the fair shares' limit (capacity_mbps <=
    upta.max_capacity_mbps(k_shift), refused at validation): nothing more to
    refuse without the port's line rate."""
    s_ns = tna_lpf.packet_time_ns(policy)
    filters = []
    for average in policy.plugin.lpf_averages:
        if average.rate_k_shift_param is not None:
            tau_ns = float(1 << action.params[average.rate_k_shift_param]) * tna_lpf.NS_PER_US
            filters.append(LpfFilter(average.lpf, None, tau_ns))
            continue
        k = action.params[average.weight_param]
        filters.append(LpfFilter(
            average.lpf, k, None if s_ns is None else lpf_time_constant_ns(k, s_ns),
            max_ewma_shift=LPF_MAX_SHARE_EWMA_SHIFT if average.independent_samples else None))
    return filters


def check_lpf_filter(port: int, f: LpfFilter, clock_hz: float = LPF_CHECK_CLOCK_HZ) -> None:
    """TargetRefusal naming the port, the filter, the parameter and the limit when
    the Lpf cannot hold the filter: tau at or above 2^32 cycles (the driver's
    5-bit exponent wraps), an average of independent samples with a weight below
    2^-max_ewma_shift (it would ignore most samples), a rate filter whose value
    at the given rate would pass 2^32 - 1 (it saturates)."""
    where = f"port {port}: the Lpf {f.name}"
    if f.max_ewma_shift is not None and f.ewma_shift is not None \
            and f.ewma_shift > f.max_ewma_shift:
        raise TargetRefusal(
            f"{where}: weight 2^-{f.ewma_shift} is below its smallest on Tofino, "
            f"2^-{f.max_ewma_shift}: the filter ignores a sample within 2^(e - "
            f"{LPF_MIN_STEP_SHIFT}) cycles of its last (e: tau's exponent), so it would "
            f"use about one in 2^{f.ewma_shift - LPF_MIN_STEP_SHIFT - 1} and keep the noise "
            "of a weight of 2^-8 (docs/tofino.md, 'How far the Lpf averages drift')")
    if f.tau_ns is None:
        return
    tau_cycles = lpf_time_constant_cycles(f.tau_ns, clock_hz)
    if tau_cycles >= LPF_MAX_TIME_CONSTANT_CYCLES:
        raise TargetRefusal(
            f"{where}: time constant tau_ns {f.tau_ns:.6g} is {tau_cycles:.4g} cycles at "
            f"{clock_hz / 1e9:g} GHz, at or above the Lpf's limit of 2^32 cycles "
            f"(tau_ns < {lpf_max_time_constant_ns(clock_hz):.6g}); the driver's 5-bit "
            "exponent would wrap to a filter of a few cycles")
    if f.max_value_per_ns is not None:
        value = f.max_value_per_ns * f.tau_ns
        if value > LPF_VALUE_MAX:
            raise TargetRefusal(
                f"{where}: rate mode with tau_ns {f.tau_ns:.6g} reaches {value:.4g} "
                f"({f.max_value_per_ns:.6g} a nanosecond), above the Lpf's 2^32 - 1, where "
                f"it saturates (tau_ns <= {LPF_VALUE_MAX / f.max_value_per_ns:.6g})")


def check_lpf_limits(port: int, policy: A.PortPolicy, action: PolicyAction,
                     clock_hz: float = LPF_CHECK_CLOCK_HZ) -> None:
    """Refuse (TargetRefusal), before any write, a port policy one of whose Lpf
    filters the hardware cannot hold (check_lpf_filter)."""
    for f in lpf_filters(policy, action):
        check_lpf_filter(port, f, clock_hz)


def avg_key(avg_scaled: int) -> int:
    """What the range tables match: avg_scaled[27:8]."""
    return (avg_scaled >> AVG_KEY_SHIFT) & AVG_KEY_MAX


def lookup(entries: list[RangeEntry], avg_scaled: int) -> RangeEntry:
    """The entry matching avg_scaled (as the switch's range match would)."""
    key = avg_key(avg_scaled)
    hits = [e for e in entries if e.low <= key <= e.high]
    if len(hits) != 1:
        raise ValueError(f"{len(hits)} entries match {avg_scaled}")
    return hits[0]


# ---- the pipeline a TNA switch is given (P4Runtime SetForwardingPipelineConfig)
# A Tofino switch's P4Runtime server (Stratum's stratum_bfrt) takes as
# p4_device_config a serialized BfPipelineConfig (Stratum's
# stratum/hal/lib/barefoot/bf.proto): p4_name = 1 (string), bfruntime_info = 2
# (bytes: bfrt.json), profiles = 3 (repeated Profile: profile_name = 1, context
# = 2 (context.json), binary = 3 (tofino.bin), pipe_scope = 4 (repeated uint32;
# empty: every pipe)). The compiler writes those files into a build directory
# of make build-tna (build/tna/<variant>/: bfrt.json, pipe/context.json,
# pipe/tofino.bin); this packs them, protobuf wire format by hand (three
# length-delimited fields need no generated code).
TNA_PIPE_NAME = "pipe"      # main.p4's Pipeline instance, the compiler's directory


def is_tna_build_dir(path: Path) -> bool:
    """A make build-tna output directory (rather than a BMv2 JSON file)."""
    return Path(path).is_dir()


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _length_delimited(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


TNA_BFRT_JSON = "bfrt.json"   # the build's BfRt schema (also the Lpf tables: tna_lpf)


def pipeline_p4_name(build_dir: Path) -> str:
    """The program name a build directory is pushed under (BfPipelineConfig p4_name),
    and so BfRt's name of it: the directory's name (the variant)."""
    return Path(build_dir).resolve().name


def bf_pipeline_config(build_dir: Path, p4_name: str | None = None) -> bytes:
    """The BfPipelineConfig bytes of a TNA build directory (one pipeline profile
    for every pipe). p4_name defaults to the directory's name (the variant)."""
    build_dir = Path(build_dir)
    parts = {"bfrt": build_dir / TNA_BFRT_JSON,
             "context": build_dir / TNA_PIPE_NAME / "context.json",
             "binary": build_dir / TNA_PIPE_NAME / "tofino.bin"}
    missing = [str(p) for p in parts.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"{build_dir}: not a compiled TNA build (missing "
                                f"{', '.join(missing)}): run 'make build-tna'")
    data = {k: p.read_bytes() for k, p in parts.items()}
    name = p4_name if p4_name is not None else pipeline_p4_name(build_dir)
    profile = (_length_delimited(1, TNA_PIPE_NAME.encode())
               + _length_delimited(2, data["context"])
               + _length_delimited(3, data["binary"]))
    return (_length_delimited(1, name.encode())
            + _length_delimited(2, data["bfrt"])
            + _length_delimited(3, profile))


# ---- the pipeline bf_switchd's own P4Runtime server takes (open-p4studio, built with
# the p4rt option, bf_switchd --p4rt-server): p4lang/PI's frontend hands the device
# data to the Tofino PI backend (bf-drivers src/pi/pi_imp.c _pi_update_device_start),
# which reads length-prefixed chunks, each a little-endian uint32 length and its
# bytes: the program name (<= 100 bytes), tofino.bin, context.json, the pipeline's
# name and bfrt.json. The data is wrapped in the legacy p4.tmp.P4DeviceConfig
# (device_data = 3), as the SDE's own p4runtime_update_config.py sends it: PI first
# tries to parse p4_device_config as that message, so raw chunks that happen to
# parse would be taken for an empty one and the program never loaded.
PI_MAX_PROGRAM_NAME_BYTES = 100
PI_DEVICE_DATA_FIELD = 3     # p4.tmp.P4DeviceConfig.device_data


def _pi_chunk(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "little") + payload


def pi_device_config(build_dir: Path, p4_name: str) -> bytes:
    """The p4_device_config bytes of a TNA build directory for bf_switchd's
    P4Runtime server (PI's Tofino backend; one pipeline for every pipe). p4_name:
    the program's name on the switch, as the bf_switchd conf file names it."""
    build_dir = Path(build_dir)
    name = p4_name.encode()
    if not 0 < len(name) <= PI_MAX_PROGRAM_NAME_BYTES:
        raise ValueError(f"program name {p4_name!r}: 1 to {PI_MAX_PROGRAM_NAME_BYTES} bytes")
    parts = {"binary": build_dir / TNA_PIPE_NAME / "tofino.bin",
             "context": build_dir / TNA_PIPE_NAME / "context.json",
             "bfrt": build_dir / "bfrt.json"}
    missing = [str(p) for p in parts.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"{build_dir}: not a compiled TNA build (missing "
                                f"{', '.join(missing)}): run 'make build-tna'")
    data = (_pi_chunk(name) + _pi_chunk(parts["binary"].read_bytes())
            + _pi_chunk(parts["context"].read_bytes()) + _pi_chunk(TNA_PIPE_NAME.encode())
            + _pi_chunk(parts["bfrt"].read_bytes()))
    return _length_delimited(PI_DEVICE_DATA_FIELD, data)


# ---- UPTA (upta_tna.p4)
# Flow slots per port: TNA_UPTA_SLOTS_PER_PORT (v1model: UPTA_SLOTS_PER_PORT). The
# controller keeps v1model's index port * UPTA_SLOTS_PER_PORT + slot; the driver
# translates for upta_flow_bytes, and a slot mask the TNA build cannot hold is
# refused before any write.
TNA_UPTA_SLOTS_PER_PORT = _typed_constant("TNA_UPTA_SLOTS_PER_PORT")
TNA_BFD_EVENT_SLOTS = _typed_constant("TNA_BFD_EVENT_SLOTS")
UPTA_SLOT_COUNTER = "upta_flow_bytes"
UPTA_EVENTS_COUNTER = "upta_events"


def check_tna_upta_slot_mask(slot_mask: int) -> None:
    """A upta action's slot_mask that the TNA build applies in full."""
    if not 0 <= slot_mask < TNA_UPTA_SLOTS_PER_PORT:
        raise ValueError(
            f"upta slot_mask {slot_mask}: a Tofino build has {TNA_UPTA_SLOTS_PER_PORT} flow "
            f"slots a port (upta_flow_slots <= {TNA_UPTA_SLOTS_PER_PORT}; v1model "
            f"{C.UPTA_SLOTS_PER_PORT})")


def tna_upta_slot_index(v1_index: int) -> int:
    """upta_flow_bytes: v1model's port * UPTA_SLOTS_PER_PORT + slot -> the TNA index."""
    if not 0 <= v1_index < C.NUM_PORTS * C.UPTA_SLOTS_PER_PORT:
        raise ValueError(f"upta_flow_bytes index {v1_index} out of range")
    port, slot = divmod(v1_index, C.UPTA_SLOTS_PER_PORT)
    if slot >= TNA_UPTA_SLOTS_PER_PORT:
        raise ValueError(f"upta_flow_bytes slot {slot} of port {port}: a Tofino build has "
                         f"{TNA_UPTA_SLOTS_PER_PORT} slots a port")
    return port * TNA_UPTA_SLOTS_PER_PORT + slot


def v1_upta_slot_index(tna_index: int) -> int:
    """upta_flow_bytes: the TNA index -> v1model's."""
    port, slot = divmod(tna_index, TNA_UPTA_SLOTS_PER_PORT)
    return port * C.UPTA_SLOTS_PER_PORT + slot


# upta_events on TNA: the per-flow events, a report's outcome and a probe's
# lowering are per-port counters; the endpoint's decisions one counter indexed
# port * TNA_BFD_EVENT_SLOTS + event. REPORT_STALE has two sources (an
# identifier out of range: the decision; an old sequence: the outcome).
TNA_UPTA_EVENTS = TnaEventCounters(
    UPTA_EVENTS_COUNTER, C.NUM_UPTA_EVENTS, MappingProxyType({
        "upta_flow_collisions": C.UPTA_EVENTS["FLOW_COLLISION"],
        "upta_i_to_u": C.UPTA_EVENTS["I_TO_U"],
        "upta_probes_lowered": C.UPTA_EVENTS["PROBE_LOWERED"],
        "upta_reports_accepted": C.UPTA_EVENTS["REPORT_ACCEPTED"],
        "upta_reports_stale": C.UPTA_EVENTS["REPORT_STALE"],
    }),
    shared="upta_bfd_events", shared_slots=TNA_BFD_EVENT_SLOTS,
    # the endpoint decision's events (upta_tna.p4 bfd_endpoint)
    shared_events=tuple(C.UPTA_EVENTS[name] for name in (
        "PROBE_SENT", "PROBE_ANSWERED", "PROBE_FROM_EDGE", "PROBE_MALFORMED",
        "REPORT_FROM_EDGE", "REPORT_STALE", "REPORT_MALFORMED")))

# v1model's event counters the driver reads from a TNA build's per-event ones
TNA_EVENT_COUNTERS: Mapping[str, TnaEventCounters] = MappingProxyType(
    {events.name: events for events in (TNA_CHIPS_EVENTS, TNA_UPTA_EVENTS)})
TNA_EVENT_SOURCE_OF: Mapping[str, str] = MappingProxyType(
    {counter: events.name for events in TNA_EVENT_COUNTERS.values()
     for counter in events.counters})

# Counters a TNA build lays out differently: v1model's index -> the TNA index,
# and back (None: a TNA slot v1model has no index for)
TNA_REINDEXED_COUNTERS: Mapping[str, tuple[Callable[[int], int],
                                           Callable[[int], int | None]]] = MappingProxyType({
    "queue_drops": (tna_drop_counter_index, v1_drop_counter_index),
    "queue_ecn_marks": (tna_drop_counter_index, v1_drop_counter_index),
    UPTA_SLOT_COUNTER: (tna_upta_slot_index, v1_upta_slot_index),
})


# ---- the range tables, per port (what the data plane reads instead of multiplying)
TABLE_RED_ZONE = "red_zone"
TABLE_DCBT_THRESHOLDS = "dcbt_tagged_threshold"
RANGE_TABLES = (TABLE_RED_ZONE, TABLE_DCBT_THRESHOLDS)
_RANGE_ENCODERS: dict[str, Callable[[PolicyAction], list[RangeEntry]]] = {
    TABLE_RED_ZONE: red_zone_entries,
    TABLE_DCBT_THRESHOLDS: dcbt_tagged_threshold_entries,
}


def range_entries(port: int, action: PolicyAction) -> list[R.TableEntry]:
    """The range-table entries of one port's policy: the tables its algorithm's
    plug-in names (red_zone, and for D-CBT dcbt_tagged_threshold); key (port,
    avg_key range), priority 1 (a range table's entries need one; they do not
    overlap). Empty for an algorithm without range tables."""
    R.check_port(port)
    return [R.TableEntry.make(table, {"port": port, "avg_key": (e.low, e.high)},
                              e.action, e.params, priority=1)
            for table in A.of_action(action.name).range_tables
            for e in _RANGE_ENCODERS[table](action)]


def report_session() -> R.CloneSession:
    """The departure reports' mirror session (main.p4's egress; occupancy_tna.p4):
    to the recirculation port, each copy truncated."""
    return R.CloneSession(TNA_REPORT_SESSION, ((TNA_RECIRC_PORT, R.CLONE_REPLICA_INSTANCE),),
                          packet_length_bytes=TNA_REPORT_COPY_BYTES)


def cut_in_slot_session(port: int) -> R.CloneSession:
    """ChIPS's FIFO slot clones of one port (aqm_tna.p4): session
    TNA_CHIPS_SESSION_BASE + port replicates to the port itself. Stratum refuses a
    clone session to dev port 0, so ChIPS cannot run on it (ValueError, before any
    write)."""
    R.check_port(port)
    if port == 0:
        raise ValueError("port 0: ChIPS's slot clone session would replicate to dev port 0, "
                         "which Stratum refuses in a clone session; put DCBT_CHIPS on "
                         "another port")
    return R.CloneSession(TNA_CHIPS_SESSION_BASE + port, ((port, R.CLONE_REPLICA_INSTANCE),))


# ---- pipes. A Tofino 1 dev port is {pipe: bits 8..7, port in the pipe: 6..0}
# (the SDE's DEV_PORT_TO_PIPE(x) = (x >> 7) & 7). Registers are per pipe: an
# arrival is counted in its ingress pipe's copy, and every departure report
# returns through TNA_RECIRC_PORT (pipe 0) to pipe 0's copy. So the counts are
# right only when every port that feeds a port under AQM is in pipe 0
# (docs/tofino.md, "State on every pipe"): the configured ports must be.
TNA_PIPE_SHIFT = 7
TNA_STATE_PIPE = TNA_RECIRC_PORT >> TNA_PIPE_SHIFT     # 0: where the reports return


def dev_port_pipe(port: int) -> int:
    """The pipe of a Tofino 1 dev port."""
    return port >> TNA_PIPE_SHIFT


def check_tna_ports(ports: Mapping[int, str]) -> None:
    """Every configured port (port -> where the configuration names it) in pipe
    TNA_STATE_PIPE; else TargetRefusal naming each port, its pipe and the rule."""
    outside = sorted(p for p in ports if dev_port_pipe(p) != TNA_STATE_PIPE)
    if outside:
        lo = TNA_STATE_PIPE << TNA_PIPE_SHIFT
        hi = lo + (1 << TNA_PIPE_SHIFT) - 1
        named = "; ".join(f"dev port {p} ({ports[p]}) is in pipe {dev_port_pipe(p)}"
                          for p in outside)
        raise TargetRefusal(
            f"{named}: on Tofino every configured port must be in pipe {TNA_STATE_PIPE} "
            f"(dev ports {lo}..{hi}), because an arrival is counted in its ingress pipe's "
            f"registers and its departure report returns to pipe {TNA_STATE_PIPE}'s (dev "
            f"port {TNA_RECIRC_PORT}); see docs/tofino.md, 'State on every pipe'")


class Tna(Target):
    """A Tofino 1 program of make build-tna: one program per algorithm."""

    name: ClassVar[str] = "tna"
    arch: ClassVar[str] = "tna"
    every_algorithm_in_one_program: ClassVar[bool] = False

    def check_action(self, action: PolicyAction) -> None:
        if "slot_mask" in action.params:            # UPTA: fewer flow slots than v1model
            check_tna_upta_slot_mask(action.params["slot_mask"])
        if action.params.get("tag_guard_interval_us", 0):
            raise ValueError(f"{action.name}: the tag guard (tag_guard: true) is not in the "
                             "Tofino build (docs/algorithms/tag-guard.md)")

    def check_ports(self, ports: Mapping[int, str]) -> None:
        check_tna_ports(ports)

    def check_policy(self, port: int, policy: A.PortPolicy, action: PolicyAction) -> None:
        check_lpf_limits(port, policy, action)

    @property
    def range_tables(self) -> tuple[str, ...]:
        return RANGE_TABLES

    def range_entries(self, port: int, action: PolicyAction) -> list[R.TableEntry]:
        return range_entries(port, action)

    def lpf_specs(self, port: int, policy: A.PortPolicy,
                  action: PolicyAction) -> list[tna_lpf.LpfSpec]:
        R.check_port(port)
        return tna_lpf.lpf_specs(port, policy, action, TNA_UPTA_SLOTS_PER_PORT)

    def lpf_spec_holds(self, desired: tna_lpf.LpfSpec, held: tna_lpf.LpfSpec) -> bool:
        return tna_lpf.lpf_spec_holds(desired, held)

    def packet_out_metadata(self, port: int) -> dict[str, int]:
        R.check_port(port)
        return {"egress_port": port, "ether_type": TNA_ETHERTYPE_PACKET_OUT}

    def clone_sessions(self, cut_in_ports) -> list[R.CloneSession]:
        return [report_session()] + [cut_in_slot_session(p) for p in cut_in_ports]

    # occupancy_tna.p4: the total, the three class counts and D-CBT's virtual FIFO
    # (the builds without D-CBT have no fifo_pkts: the driver reads what the
    # program has); indexed by the port, as the data plane's heal resets them.
    occupancy_registers: ClassVar[tuple[str, ...]] = (
        "queue_pkts", "tcp_pkts", "tagged_pkts", "untagged_pkts", "fifo_pkts")
    # the configured ports' arrivals and every report are counted in this pipe's copy
    occupancy_pipe: ClassVar[int | None] = TNA_STATE_PIPE

    def counter_reads(self, name: str, index: int | None,
                      have: frozenset[str]) -> list[tuple[str, int | None]]:
        if name in TNA_EVENT_COUNTERS:                     # a counter per event
            events = TNA_EVENT_COUNTERS[name]
            reads = ([(c, None) for c in events.counters] if index is None
                     else [(c, j) for c, j in events.sources(index)])
        elif name in TNA_REINDEXED_COUNTERS:
            reads = [(name, None if index is None else TNA_REINDEXED_COUNTERS[name][0](index))]
        else:
            reads = [(name, index)]
        return [(c, j) for c, j in reads if c in have]

    def counter_position(self, counter: str, index: int) -> tuple[str, int | None]:
        if counter in TNA_EVENT_SOURCE_OF:
            name = TNA_EVENT_SOURCE_OF[counter]
            return name, TNA_EVENT_COUNTERS[name].v1_index(counter, index)
        if counter in TNA_REINDEXED_COUNTERS:
            return counter, TNA_REINDEXED_COUNTERS[counter][1](index)
        return counter, index

    def ts_to_us(self, ts: int) -> int:
        return tna_ts_to_us(ts)

    # the report's bit<32> of 1.024 us units wraps every 2^32 * 1.024 us (73.3 min)
    report_ts_modulus_us: ClassVar[float] = (1 << TNA_TS_WIDTH_BITS) * TNA_TS_UNIT_NS / 1000


TARGET = Tna()
