"""UPTA and BFD bit-exact with upta.p4 (the test oracle; moved from mmaqm.algorithms.upta).

  * the data plane arithmetic (fixed point): the rate estimator's first-order form
    (``rate_step_fixed``), Fig. 7's cross-multiplied tests (``exceeds_fixed``,
    ``fair_drop_count_q16``), eq. 17 with the controller's reciprocal
    (``threshold_update_fixed``);
  * a router's rewrite of a QoS Probe (eqs. 25-26, RFC 1624 incremental checksum
    update) and the egress edge's Report;
  * ``UptaPortModel``: one egress port's per-flow registers, as the P4 keeps them
    (like ``fred_model.FredPortModel``); ``BfdEndpoint``: a switch's BFD state as
    ingress and egress edge; ``FloatFlow``: one flow in floats (the paper's form);
  * the registers, their memory, and the upta_events counter's events.

The algorithm the controller runs (encodings, fair shares, action parameters) is
:mod:`mmaqm.algorithms.upta`; the wire format :mod:`mmaqm.algorithms.bfd_codec`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from mmaqm import p4constants as C
from mmaqm.algorithms.bfd_codec import (BFD_HEADER_BYTES, FLOW_SPEC_S_BIT, ICMP_QOS_PROBE,
                                        ICMP_QOS_REPORT,
                                        BfdMessage, FlowSpec)
from mmaqm.algorithms.upta import (BFD_PATHS, FS_INFINITE, MAX_K_SHIFT, MODE_C, MODE_P, MODES,
                                   Q16_ONE, Q_FIELD_MAX, RATE_FRAC_BITS, STATE_I, STATE_U,
                                   UPTA_SLOTS_PER_PORT, _nonneg, _positive)
from mmaqm.fixedpoint import MASK32, MASK64, check_int

from .fixedpoint_model import QUEUE_LIMIT, UPTA_FAIR_SHARE, UPTA_USELESS
from .upta_theory import ADMIT, Decision, estimate_rate, fig7_decide, path_min_update

RATE_BITS = 32
# Registers (upta.p4; the BFD ones are planned): name -> (bits per entry, entries).
# Per flow slot (each port owns UPTA_SLOTS_PER_PORT of them, index port *
# UPTA_SLOTS_PER_PORT + slot) and per BFD path (identifier) of the switch.
REGISTERS: dict[str, tuple[int, int]] = {
    "upta_rate": (RATE_BITS, UPTA_SLOTS_PER_PORT),
    "upta_last_us": (48, UPTA_SLOTS_PER_PORT),
    "upta_state": (1, UPTA_SLOTS_PER_PORT),
    "upta_sig": (32, UPTA_SLOTS_PER_PORT),
    "upta_probe_seq": (17, BFD_PATHS),     # BFD_SEQ_VALID | sequence; 0 = no probe sent
    "upta_path_fs_u": (32, BFD_PATHS),
    "upta_path_fs_i": (32, BFD_PATHS),
}
PER_SLOT_REGISTERS = ("upta_rate", "upta_last_us", "upta_state", "upta_sig")
# upta_events counter (per port; index port * len(EVENTS) + position).
EVENTS = ("FLOW_COLLISION", "I_TO_U", "PROBE_SENT", "PROBE_LOWERED", "PROBE_ANSWERED",
          "PROBE_FROM_EDGE", "PROBE_MALFORMED", "REPORT_ACCEPTED", "REPORT_FROM_EDGE",
          "REPORT_STALE", "REPORT_MALFORMED")
# upta.p4's events (defines.p4 UPTA_EVENT_*), in this order.
if tuple(C.UPTA_EVENTS) != EVENTS or list(C.UPTA_EVENTS.values()) != list(range(len(EVENTS))):
    raise ImportError(f"defines.p4 UPTA_EVENT_* {C.UPTA_EVENTS} differ from EVENTS {EVENTS}")


def register_bits_per_slot() -> int:
    """Per-flow register bits per slot: rate 32 + last arrival 48 + state 1 + signature 32."""
    return sum(REGISTERS[name][0] for name in PER_SLOT_REGISTERS)


def register_bytes_per_1000_flows(slots_per_flow: float = 1.0) -> float:
    """Per-flow register bytes for 1000 flows at slots_per_flow slots each."""
    spf = _positive("slots_per_flow", slots_per_flow)
    return 1000 * spf * register_bits_per_slot() / 8

# Drop reasons UPTA adds (drop_reason_t members, defines.p4): UPTA_USELESS, the flow
# is U: drop at once (Fig. 7); UPTA_FAIR_SHARE, an I flow's probabilistic drop.
UPTA_DROP_REASONS = (UPTA_USELESS, UPTA_FAIR_SHARE)


# ---------------------------------------------------------------- data plane arithmetic
def rate_step_fixed(rate_scaled: int, length_bytes: int, dt_us: int, k_shift: int) -> int:
    """The data plane estimator (upta.p4), rate in bytes per K * 2^RATE_FRAC_BITS:
        dt < K:  R += (l << F) - (dt * R >> k)      (first-order e^(-dt/K) = 1 - dt/K)
        dt >= K: R = l << F                         (the old rate has decayed; restart)
    bit<64> product, bit<32> result saturating at 2^32 - 1. Steady state under a
    constant packet rate is the exact rate, R = l K / dt, as for the paper's form."""
    check_int("rate_scaled", rate_scaled, 0, MASK32)
    check_int("length_bytes", length_bytes, 0, 0xFFFF)
    check_int("dt_us", dt_us, 0, (1 << 48) - 1)
    k = check_int("k_shift", k_shift, 0, MAX_K_SHIFT)
    sample = length_bytes << RATE_FRAC_BITS
    if dt_us >= 1 << k:
        return sample
    decay = ((dt_us * rate_scaled) & MASK64) >> k
    return min(MASK32, rate_scaled - decay + sample)


def exceeds_fixed(rate_scaled: int, fs_scaled: int, q16: int) -> bool:
    """Data plane: drop_prob > q  <=>  R (2^16 - q16) > FS 2^16 (bit<64>, exact; for a
    U test q16 is the loss threshold, for Fig. 7's random drop it is the draw u16)."""
    check_int("rate_scaled", rate_scaled, 0, MASK32)
    check_int("fs_scaled", fs_scaled, 0, MASK32)
    check_int("q16", q16, 0, Q16_ONE)
    return rate_scaled * (Q16_ONE - q16) > fs_scaled * Q16_ONE


def fair_drop_count_q16(rate_scaled: int, fs_scaled: int) -> int:
    """How many of the 2^16 draws u16 drop a packet (exceeds_fixed true): the data
    plane's drop probability * 2^16. Equals ceil(2^16 (1 - FS/R)) clipped at 0."""
    check_int("rate_scaled", rate_scaled, 0, MASK32)
    check_int("fs_scaled", fs_scaled, 0, MASK32)
    if rate_scaled <= fs_scaled:
        return 0
    # exceeds_fixed(u) <=> u < 2^16 - FS 2^16 / R; the largest such integer u is
    # ceil(2^16 - FS 2^16 / R) - 1, so the count is ceil(2^16 (R - FS) / R).
    return -(-(Q16_ONE * (rate_scaled - fs_scaled)) // rate_scaled)


def threshold_update_fixed(q16: int, rate_scaled: int, fs_scaled: int, mant: int,
                           shift: int) -> int:
    """Data plane eq. 17: with p = 1 - FS/R, 1 - q_k = (1 - q_{k-1}) R / FS. When R <= FS
    (p = 0) q is unchanged. Else ratio_q16 = (R * mant) >> shift (bit<64>), margin =
    ((2^16 - q16) * ratio_q16) >> 16, q_k = 2^16 - margin, 0 when margin >= 2^16."""
    check_int("q16", q16, 0, Q_FIELD_MAX)
    check_int("rate_scaled", rate_scaled, 0, MASK32)
    check_int("fs_scaled", fs_scaled, 0, MASK32)
    check_int("mant", mant, 0, MASK32)
    check_int("shift", shift, 0, 63)
    if rate_scaled <= fs_scaled or mant == 0:
        return q16
    ratio_q16 = ((rate_scaled * mant) & MASK64) >> shift
    margin = (((Q16_ONE - q16) * ratio_q16) & MASK64) >> 16
    return 0 if margin >= Q16_ONE else Q16_ONE - margin


# ---------------------------------------------------- BFD (§5.3): a router, the egress edge
def checksum_update(checksum: int, old_word: int, new_word: int) -> int:
    """RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), for one changed 16-bit word; the P4
    applies it to the four words of the two fair-share fields."""
    hc = check_int("checksum", checksum, 0, 0xFFFF)
    m = check_int("old_word", old_word, 0, 0xFFFF)
    m2 = check_int("new_word", new_word, 0, 0xFFFF)
    total = (~hc & 0xFFFF) + (~m & 0xFFFF) + m2
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def checksum_update32(checksum: int, old: int, new: int) -> int:
    """checksum_update for a 32-bit field (its two words)."""
    check_int("old", old, 0, MASK32)
    check_int("new", new, 0, MASK32)
    hc = checksum_update(checksum, old >> 16, new >> 16)
    return checksum_update(hc, old & 0xFFFF, new & 0xFFFF)


def lower_probe(data: bytes, local_u: int, local_i: int) -> bytes:
    """A router's in-place update of a QoS Probe (eqs. 25-26), with the RFC 1624
    checksum update of the changed fields, as the P4 does it (it does not parse
    the flow specs for the checksum)."""
    if len(data) < BFD_HEADER_BYTES or data[0] != ICMP_QOS_PROBE:
        raise ValueError("data is not a QoS Probe")
    csum, = struct.unpack("!H", data[2:4])
    fs_u, fs_i = struct.unpack("!II", data[8:16])
    new_u, new_i = path_min_update(fs_u, fs_i, local_u, local_i)
    csum = checksum_update32(checksum_update32(csum, fs_u, new_u), fs_i, new_i)
    return data[:2] + struct.pack("!H", csum) + data[4:8] + struct.pack("!II", new_u, new_i) \
        + data[16:]


def report_for(probe: bytes) -> bytes:
    """The egress edge's answer (§5.3.3): one Report with the probe's identifier,
    sequence and path minima; the flow specs are not returned."""
    msg = BfdMessage.unpack(probe)
    if msg.icmp_type != ICMP_QOS_PROBE:
        raise ValueError("only a QoS Probe is answered")
    return BfdMessage(ICMP_QOS_REPORT, msg.identifier, msg.sequence, msg.fs_u, msg.fs_i).pack()


def spec_digest(probe: bytes, egress_port: int, *, mode: int,
                from_cpu: bool = False) -> dict[str, int] | None:
    """The bfd_spec_digest_t a probe leaving ``egress_port`` (a ``upta`` port in
    ``mode``) sends to the controller (upta §5.3.2: core routers need the specs' S
    bits for N and M, eqs. 18-19): only at a mode-C port, not for the ingress
    edge's own probe (from the controller's port), and only with 1..4 specs. The
    members the P4 fills; a member of an absent spec is left out (unspecified)."""
    msg = BfdMessage.unpack(probe)
    if msg.icmp_type != ICMP_QOS_PROBE:
        raise ValueError("only a QoS Probe carries specs")
    if mode != MODE_C or from_cpu or not msg.specs:
        return None
    out = {"egress_port": egress_port, "identifier": msg.identifier,
           "sequence": msg.sequence, "spec_count": len(msg.specs)}
    for i, spec in enumerate(msg.specs):
        flags = FLOW_SPEC_S_BIT if spec.intelligible else 0
        out.update({f"src_addr{i}": spec.src_addr, f"dst_addr{i}": spec.dst_addr,
                    f"src_port{i}": spec.src_port, f"dst_port{i}": spec.dst_port,
                    f"protocol{i}": spec.protocol, f"flags{i}": flags})
    return out


# ---------------------------------------------------------------- reference model
@dataclass
class FlowSlot:
    """Per-slot registers (upta.p4)."""

    rate_scaled: int = 0      # upta_rate, bit<32>
    last_us: int = 0          # upta_last_us, bit<48>
    state: int = STATE_U      # upta_state, bit<1>; 0 = new or U
    signature: int = 0        # upta_sig, bit<32>: the full crc32 of the last flow seen


@dataclass(frozen=True)
class Outcome:
    decision: str                 # ADMIT, UPTA_USELESS, UPTA_FAIR_SHARE, QUEUE_LIMIT
    q16_out: int | None           # P-UPTA: the rewritten option value, else None
    collision: bool


# The action's parameters and their bit widths (docs/upta-plan.md §1.8).
PARAM_BITS: dict[str, int] = {
    "upta_mode": 8, "k_shift": 8, "slot_mask": 32, "fs_i_scaled": 32, "fs_u_scaled": 32,
    "inv_fs_i_mant": 32, "inv_fs_i_shift": 8, "inv_fs_u_mant": 32, "inv_fs_u_shift": 8,
    "tagged_q16": 16, "queue_limit_pkts": 32,
}
REQUIRED_PARAMS = tuple(PARAM_BITS)


class UptaPortModel:
    """Reference model of one egress port under the ``upta`` action
    (docs/upta-plan.md "Per packet"), bit-exact with upta.p4.

    arrive() takes the packet's crc32 of the 5-tuple (the slot is its low bits),
    IP length, arrival time, its P-UPTA option value (None: no option), whether
    the classifier tagged it (multimedia DSCP), whether it came in on an edge
    (host-facing) port, the path minima BFD reported for its path (C-UPTA) and
    the queue occupancy. The loss threshold is the option's, else tagged_q16
    for tagged packets, else none (Q_FIELD_MAX: never U). In mode C only
    packets from an edge port can make a flow U, and they are tested against
    min(local, path) shares; packets from domain ports get fair-share drops only
    (the core runs the fair scheduler, not UPTA, §5.2). Slots with last_us 0
    count as never seen (registers power up at 0, timestamps start at 0 with the
    switch). rand_source() plays random(0, 2^16 - 1) and is called only for an
    I flow's probabilistic drop test.
    """

    def __init__(self, params: Mapping[str, int], rand_source: Callable[[], int]) -> None:
        self.params: dict[str, int] = {}
        self.set_policy(params)
        self.rand_source = rand_source
        self.slots: dict[int, FlowSlot] = {}
        self.events: dict[str, int] = {}

    def set_policy(self, params: Mapping[str, int]) -> None:
        """The controller modifies the port_policy entry (registers untouched)."""
        missing = [k for k in REQUIRED_PARAMS if k not in params]
        if missing:
            raise ValueError(f"params lacks {missing}")
        for name, bits in PARAM_BITS.items():
            check_int(f"params[{name!r}]", params[name], 0, (1 << bits) - 1)
        if params["upta_mode"] not in MODES:
            raise ValueError(f"params['upta_mode'] must be one of {MODES}")
        check_int("params['k_shift']", params["k_shift"], 0, MAX_K_SHIFT)
        mask = params["slot_mask"]
        if mask & (mask + 1) or mask >= UPTA_SLOTS_PER_PORT:
            raise ValueError(f"params['slot_mask'] must be 2^k - 1 < {UPTA_SLOTS_PER_PORT}, "
                             f"got {mask}")
        self.params = dict(params)

    def _count(self, name: str) -> None:
        assert name in EVENTS, name
        self.events[name] = self.events.get(name, 0) + 1

    def shares(self, path: tuple[int, int] | None = None) -> tuple[int, int]:
        """(fs_I, fs_U): the local shares, or with path = (alpha_min, alpha'_min) of a
        report the lower of each (eqs. 23-24 include this router; the report may be
        up to one probe interval old)."""
        fs_i, fs_u = self.params["fs_i_scaled"], self.params["fs_u_scaled"]
        if path is not None:
            path_u, path_i = path
            fs_i, fs_u = min(fs_i, path_i), min(fs_u, path_u)
        return fs_i, fs_u

    def arrive(self, flow_hash_value: int, length_bytes: int, now_us: int, *,
               option_q16: int | None = None, tagged: bool = False,
               from_edge_port: bool = True, path: tuple[int, int] | None = None,
               queue_pkts: int = 0) -> Outcome:
        check_int("flow_hash_value", flow_hash_value, 0, MASK32)
        check_int("length_bytes", length_bytes, 0, 0xFFFF)
        check_int("now_us", now_us, 0, (1 << 48) - 1)
        check_int("queue_pkts", queue_pkts, 0, MASK32)
        if option_q16 is not None:
            check_int("option_q16", option_q16, 0, Q_FIELD_MAX)
        if path is not None:
            check_int("path[0]", path[0], 0, MASK32)
            check_int("path[1]", path[1], 0, MASK32)
        p = self.params
        mode = p["upta_mode"]
        index = flow_hash_value & p["slot_mask"]
        slot = self.slots.setdefault(index, FlowSlot())
        k = p["k_shift"]
        dt = (now_us - slot.last_us) & ((1 << 48) - 1)
        fresh = slot.last_us != 0 and dt < 1 << k
        collision = fresh and slot.signature != flow_hash_value
        if collision:
            self._count("FLOW_COLLISION")
        if slot.last_us == 0:
            dt = 1 << k                      # never seen: restart the estimate
        slot.rate_scaled = rate_step_fixed(slot.rate_scaled, length_bytes, dt, k)
        slot.last_us = now_us
        slot.signature = flow_hash_value
        rate = slot.rate_scaled
        if option_q16 is not None:
            q16 = option_q16
        else:
            q16 = p["tagged_q16"] if tagged else Q_FIELD_MAX
        edge = mode == MODE_C and from_edge_port
        if mode == MODE_C and not from_edge_port:
            q16 = Q_FIELD_MAX                # the core never makes a flow U (§5.2)
        fs_i, fs_u = self.shares(path if edge else None)
        out_q: int | None = None
        if slot.state == STATE_I:
            fs = fs_i
            if q16 != Q_FIELD_MAX and exceeds_fixed(rate, fs, q16):
                slot.state = STATE_U
                self._count("I_TO_U")
                return Outcome(UPTA_USELESS, None, collision)
            if exceeds_fixed(rate, fs, self.rand_source()):
                return Outcome(UPTA_FAIR_SHARE, None, collision)
            mant, shift = p["inv_fs_i_mant"], p["inv_fs_i_shift"]
        else:
            fs = fs_u
            if q16 != Q_FIELD_MAX and exceeds_fixed(rate, fs, q16):
                return Outcome(UPTA_USELESS, None, collision)
            slot.state = STATE_I
            mant, shift = p["inv_fs_u_mant"], p["inv_fs_u_shift"]
        if queue_pkts >= p["queue_limit_pkts"]:
            return Outcome(QUEUE_LIMIT, None, collision)
        if mode == MODE_P and option_q16 is not None and option_q16 != Q_FIELD_MAX:
            # 0xFFFF ("no threshold") stays: lowering it would create a threshold
            out_q = threshold_update_fixed(option_q16, rate, fs, mant, shift)
        return Outcome(ADMIT, out_q, collision)

    def lower_probe(self, probe: bytes) -> bytes:
        """A probe leaving through this port: eqs. 25-26 with the local shares. The
        ingress's own probe starts at FS_INFINITE, so this also sets it to the local
        shares (§5.3.2)."""
        self._count("PROBE_LOWERED")
        return lower_probe(probe, self.params["fs_u_scaled"], self.params["fs_i_scaled"])


class BfdEndpoint:
    """A switch's BFD state (planned registers upta_probe_seq, upta_path_fs_u,
    upta_path_fs_i, indexed by path id = the messages' Identifier, < BFD_PATHS).

    As ingress edge: the controller's probe for a path goes out with a sequence
    number, which is remembered. A report sets the path's minima only if it came
    in on a domain port, has a correct checksum and length, and answers that
    path's last probe; otherwise it is ignored and counted (a spoofed report).
    As egress edge: a probe addressed to this switch from a domain port is turned
    into exactly one report; from an edge port it is dropped and counted.
    """

    def __init__(self, paths: int = 64) -> None:
        self.paths = check_int("paths", paths, 1, 1 << 16)
        self.probe_seq: dict[int, int] = {}
        self.path_fs: dict[int, tuple[int, int]] = {}
        self.events: dict[str, int] = {}

    def _count(self, name: str) -> None:
        assert name in EVENTS, name
        self.events[name] = self.events.get(name, 0) + 1

    def probe_template(self, path_id: int, sequence: int,
                       specs: Sequence[FlowSpec] = ()) -> bytes:
        """The controller's packet-out: fields FS_INFINITE, to be lowered by the
        first port (the ingress's own shares)."""
        check_int("path_id", path_id, 0, self.paths - 1)
        self.probe_seq[path_id] = check_int("sequence", sequence, 0, 0xFFFF)
        self._count("PROBE_SENT")
        return BfdMessage(ICMP_QOS_PROBE, path_id, sequence, FS_INFINITE, FS_INFINITE,
                          tuple(specs)).pack()

    def path_shares(self, path_id: int) -> tuple[int, int] | None:
        """(alpha_min, alpha'_min) of the path's last accepted report, or None."""
        return self.path_fs.get(check_int("path_id", path_id, 0, self.paths - 1))

    def answer_probe(self, probe: bytes, *, from_edge_port: bool) -> bytes | None:
        """Egress edge: at most one packet back, never for a report or from outside."""
        if from_edge_port:
            self._count("PROBE_FROM_EDGE")
            return None
        try:
            report = report_for(probe)
        except ValueError:
            self._count("PROBE_MALFORMED")
            return None
        self._count("PROBE_ANSWERED")
        return report

    def accept_report(self, report: bytes, *, from_edge_port: bool) -> bool:
        if from_edge_port:
            self._count("REPORT_FROM_EDGE")
            return False
        try:
            msg = BfdMessage.unpack(report)
        except ValueError:
            self._count("REPORT_MALFORMED")
            return False
        if msg.icmp_type != ICMP_QOS_REPORT or msg.identifier >= self.paths \
                or self.probe_seq.get(msg.identifier) != msg.sequence:
            self._count("REPORT_STALE")
            return False
        self.path_fs[msg.identifier] = (msg.fs_u, msg.fs_i)
        self._count("REPORT_ACCEPTED")
        return True


# ---------------------------------------------------------------- float reference flow
@dataclass
class FloatFlow:
    """The paper's form of one flow at one router: estimator and Fig. 7 in floats."""

    rate: float = 0.0
    last_t: float | None = None
    state: int = STATE_U
    history: list[Decision] = field(default_factory=list)

    def arrive(self, length: float, t: float, fs_i: float, fs_u: float, q: float, u: float,
               k: float) -> Decision:
        if self.last_t is None:           # first packet: l / K, as the data plane restarts
            self.rate = _nonneg("length", length) / _positive("k", k)
        else:
            self.rate = estimate_rate(self.rate, length, _nonneg("t - last_t", t - self.last_t), k)
        self.last_t = t
        d = fig7_decide(self.state, self.rate, fs_i, fs_u, q, u)
        self.state = d.state
        self.history.append(d)
        return d
