"""UPTA's controller side, pure (no switch): the per-interval fair shares of every
``upta`` port (upta §5.1 eqs. 18-19, Fig. 7 "On est_timer expiration") and the
C-UPTA edge's BFD bookkeeping (§5.3: probes, paths, the U flows cores must count).

Design: docs/upta-plan.md §2. The algorithm's arithmetic is
:mod:`mmaqm.algorithms.upta`, the BFD message format
:mod:`mmaqm.algorithms.bfd_codec`; this module turns what the controller
reads (counter values, state reports, probe digests) into what it writes (the
``upta`` action parameters, QoS Probes). :mod:`mmaqm.algorithms.upta_loop` moves the data.

Per interval T (= K, §5.3.3) and per port:

1. lambda_i of every known flow from the ``upta_flow_bytes`` counter (one entry
   per flow slot, packets_and_bytes, counting every arrival, dropped or not):
   IP bytes = delta bytes - 14 * delta packets (the counter counts Ethernet frames,
   the estimator IP datagrams); a slot with no arrival is idle and not counted;
2. the U flows: slots the data plane reported in state U, plus (C-UPTA core) the
   U flows listed by the probes of the last REMOTE_USELESS_INTERVALS T whose packets
   no longer arrive (the data plane digests a passing probe's specs, bfd_spec_digest_t);
3. alpha, alpha' by :func:`upta.interval_shares` (N, S, M as Fig. 7 counts them);
4. the action parameters (:func:`upta.action_params`) with fs_U = alpha,
   fs_I = alpha'.
"""

from __future__ import annotations

import ipaddress
import math
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..fixedpoint import check_int
from . import bfd_codec, upta

ETH_HEADER_BYTES = 14          # the counter counts frames; lambda counts IP bytes (plan §2)
ROUTER_ADDR_FMT = "10.255.0.{k}"   # plan §1.7: one /32 per router, k = switch index + 1
# Probes go out every PROBE_EVERY_INTERVALS intervals, not every T (the paper's T = K,
# §5.3.3): the data plane accepts only the report of a path's LAST probe (upta.p4
# accept_report), and on the Fig. 1 chain a probe queues behind four full 100-packet
# queues (l2-l5: 85 + 95 + 105 + 117 ms), so with one probe per T = 131 ms every report
# under load came back after the next probe and was refused (REPORT_STALE), and the
# ingress edges never learnt a path minimum while the traffic ran (measured, R2's
# upta_path registers over Thrift). 4 T = 524 ms exceeds that round trip.
PROBE_EVERY_INTERVALS = 4
# A probe's U flow counts at a core for two probe intervals after the probe passed
# (§5.3.2's S bit; the paper's probes come every T, ours every PROBE_EVERY_INTERVALS T:
# one late or lost probe does not drop the flow from N and M).
REMOTE_USELESS_INTERVALS = 2 * PROBE_EVERY_INTERVALS
PROBE_TTL = 64
IPV4_HEADER_BYTES = 20
IP_PROTO_ICMP = 1


# ---------------------------------------------------------------- slots and counters
def slot_index(port: int, slot: int) -> int:
    """Index of the per-slot registers and of upta_flow_bytes: port * UPTA_SLOTS_PER_PORT + slot."""
    check_int("port", port, 0, 63)
    check_int("slot", slot, 0, upta.UPTA_SLOTS_PER_PORT - 1)
    return port * upta.UPTA_SLOTS_PER_PORT + slot


def flow_slot(flow_key: Sequence[int], table_slots: int) -> int:
    """The data plane's slot of a 5-tuple (src, dst, protocol, sport, dport): crc32 & mask."""
    src, dst, proto, sport, dport = flow_key
    return upta.flow_hash(src, dst, proto, sport, dport) & (table_slots - 1)


def arrival_ip_bytes(previous: Mapping[int, tuple[int, int]],
                     current: Mapping[int, tuple[int, int]]) -> dict[int, int]:
    """slot -> IP bytes that arrived between two reads of upta_flow_bytes, from
    (packets, bytes) per slot. A slot missing from ``previous`` started at 0 (a new
    slot's counter); a counter that went backwards was reset (a pipeline push): its
    current value is the interval's. Only slots in ``current`` are returned."""
    out: dict[int, int] = {}
    for slot, (packets, nbytes) in current.items():
        check_int(f"packets[{slot}]", packets, 0, 1 << 62)
        check_int(f"bytes[{slot}]", nbytes, 0, 1 << 62)
        p0, b0 = previous.get(slot, (0, 0))
        dp, db = packets - p0, nbytes - b0
        if dp < 0 or db < 0:
            dp, db = packets, nbytes
        out[slot] = max(0, db - ETH_HEADER_BYTES * dp)
    return out


# ---------------------------------------------------------------- a port's interval
@dataclass(frozen=True)
class PortSettings:
    """One ``upta`` port as the controller runs it (from its policy)."""

    capacity_bps: float            # C of eqs. 18-19: the port's link rate
    mode: int = upta.MODE_B
    table_slots: int = 1024
    k_shift: int = upta.DEFAULT_K_SHIFT
    tagged_q: float = upta.PAPER_LOSS_THRESHOLD
    queue_limit_pkts: int = upta.PAPER_BUFFER_PKTS

    @property
    def interval_s(self) -> float:
        """T = K (§5.3.3)."""
        return upta.k_us(self.k_shift) / 1e6


@dataclass(frozen=True)
class IntervalResult:
    shares: upta.FairShares
    rates_bps: Mapping[int, float]     # slot -> lambda_i of the active slots
    params: Mapping[str, int]          # the upta action's parameters (without the epochs)


def port_interval(settings: PortSettings, arrivals: Mapping[int, int], useless: Iterable[int],
                  *, interval_s: float | None = None, remote_useless: int = 0) -> IntervalResult:
    """One est_timer step of a port: arrivals = slot -> IP bytes in the interval (see
    arrival_ip_bytes); useless = the slots in state U; remote_useless = U flows that only
    probes told about. interval_s defaults to T = K; pass the measured time between the
    two counter reads to turn bytes into the rate that really arrived."""
    t = settings.interval_s if interval_s is None else interval_s
    useless_set = set(useless)
    shares = upta.interval_shares(settings.capacity_bps, t, arrivals, useless_set,
                                  remote_useless)
    params = upta.action_params(settings.mode, shares.alpha_prime, shares.alpha,
                                table_slots=settings.table_slots, k_shift=settings.k_shift,
                                tagged_q=settings.tagged_q,
                                queue_limit_pkts=settings.queue_limit_pkts)
    rates = {slot: nbytes * 8 / t for slot, nbytes in arrivals.items() if nbytes}
    return IntervalResult(shares, rates, params)


def initial_params(settings: PortSettings) -> dict[str, int]:
    """Before the first interval: no constraint (fs = none), as with no flows."""
    return upta.action_params(settings.mode, math.inf, math.inf,
                              table_slots=settings.table_slots, k_shift=settings.k_shift,
                              tagged_q=settings.tagged_q,
                              queue_limit_pkts=settings.queue_limit_pkts)


# ---------------------------------------------------------------- remote U flows (C-UPTA core)
@dataclass
class RemoteUseless:
    """U flows named by the probes a core router saw (§5.3.2: the S bit lets core
    routers count flows whose packets the ingress now drops). A flow counts for
    REMOTE_USELESS_INTERVALS * T after its last probe, and never while its own packets
    still arrive here (it is then counted from the counters already)."""

    window_s: float
    last_seen: dict[tuple[int, int, int, int, int], float] = field(default_factory=dict)

    def observe(self, spec: bfd_codec.FlowSpec, now_s: float) -> None:
        key = (spec.src_addr, spec.dst_addr, spec.protocol, spec.src_port, spec.dst_port)
        if spec.intelligible:
            self.last_seen.pop(key, None)   # an I spec: its packets are seen, nothing to add
        else:
            self.last_seen[key] = now_s

    def count(self, now_s: float, active_slots: Iterable[int] = (),
              table_slots: int = 1024) -> int:
        """U flows to add to N and M: seen within the window, not arriving here."""
        active = set(active_slots)
        for key, t in list(self.last_seen.items()):
            if now_s - t > self.window_s:
                del self.last_seen[key]
        return sum(1 for key in self.last_seen if flow_slot(key, table_slots) not in active)


@dataclass(frozen=True)
class SpecDigest:
    """One bfd_spec_digest_t (upta.p4): the specs of a probe that left through a
    mode-C port of this router (§5.3.2)."""

    egress_port: int
    identifier: int
    sequence: int
    specs: tuple[bfd_codec.FlowSpec, ...]


SPEC_DIGEST_FIELDS = ("src_addr", "dst_addr", "src_port", "dst_port", "protocol", "flags")


def decode_spec_digest(members: Mapping[str, int]) -> SpecDigest:
    """A bfd_spec_digest_t's members (name -> value) as a SpecDigest: spec_count
    (1..BFD_MAX_SPECS) specs from spec 0; ValueError when a member is missing or out
    of its range (a malformed digest changes nothing)."""
    def get(name: str, hi: int) -> int:
        if name not in members:
            raise ValueError(f"bfd_spec_digest_t has no member {name!r}")
        return check_int(name, members[name], 0, hi)
    count = get("spec_count", 0xFF)
    if not 1 <= count <= bfd_codec.BFD_MAX_SPECS:
        raise ValueError(f"spec_count must be 1..{bfd_codec.BFD_MAX_SPECS}, got {count}")
    specs = []
    for i in range(count):
        v = {f: get(f"{f}{i}", {"src_addr": 0xFFFFFFFF, "dst_addr": 0xFFFFFFFF,
                                "src_port": 0xFFFF, "dst_port": 0xFFFF}.get(f, 0xFF))
             for f in SPEC_DIGEST_FIELDS}
        specs.append(bfd_codec.FlowSpec(v["src_addr"], v["dst_addr"], v["src_port"],
                                        v["dst_port"], v["protocol"],
                                        bool(v["flags"] & bfd_codec.FLOW_SPEC_S_BIT)))
    return SpecDigest(get("egress_port", 0x1FF), get("identifier", 0xFFFF),
                      get("sequence", 0xFFFF), tuple(specs))


# ---------------------------------------------------------------- BFD at the ingress edge
def router_address(switch_index: int) -> str:
    """Each router's own address (plan §1.7): 10.255.0.(index + 1)."""
    check_int("switch_index", switch_index, 0, 253)
    return ROUTER_ADDR_FMT.format(k=switch_index + 1)


@dataclass(frozen=True)
class BfdPath:
    """One BFD path of an ingress edge: (output port, egress router), id = the probes'
    Identifier (< BFD_PATHS; the paper's output port breaks when one port leads to
    several egress routers, plan §1.7)."""

    path_id: int
    port: int
    egress_addr: str


def assign_bfd_paths(port_egress: Iterable[tuple[int, str]]) -> list[BfdPath]:
    """Ids 0, 1, ... for the distinct (output port, egress router address) pairs, sorted."""
    pairs = sorted(set(port_egress), key=lambda pe: (pe[0], ipaddress.IPv4Address(pe[1])))
    if len(pairs) > upta.BFD_PATHS:
        raise ValueError(f"{len(pairs)} BFD paths, the data plane has {upta.BFD_PATHS}")
    return [BfdPath(i, port, addr) for i, (port, addr) in enumerate(pairs)]


def ipv4_header(src: str, dst: str, payload_len: int, *, ttl: int = PROBE_TTL,
                protocol: int = IP_PROTO_ICMP, identification: int = 0) -> bytes:
    """A 20-byte IPv4 header (no options, DF clear) with its checksum."""
    total = IPV4_HEADER_BYTES + check_int("payload_len", payload_len, 0, 0xFFFF - 20)
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, identification & 0xFFFF, 0,
                      check_int("ttl", ttl, 1, 255), protocol, 0,
                      ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed)
    return hdr[:10] + struct.pack("!H", bfd_codec.internet_checksum(hdr)) + hdr[12:]


def probe_datagrams(src: str, path: BfdPath, first_sequence: int,
                    specs: Sequence[bfd_codec.FlowSpec]) -> list[tuple[int, bytes]]:
    """The ingress edge's QoS Probes for one path and interval (§5.3.2): both fields
    FS_INFINITE (the first port lowers them to the ingress's own shares), the path's
    flow specs BFD_MAX_SPECS per probe (the P4 parses at most that many; plan §1.7),
    at least one probe. Returns (sequence, IPv4 datagram) in sending order; the
    sequence wraps at 2^16. The data plane accepts only the report of the last one."""
    check_int("first_sequence", first_sequence, 0, 0xFFFF)
    chunks = [specs[i:i + bfd_codec.BFD_MAX_SPECS]
              for i in range(0, len(specs), bfd_codec.BFD_MAX_SPECS)] or [()]
    out = []
    for n, chunk in enumerate(chunks):
        seq = (first_sequence + n) & 0xFFFF
        icmp = bfd_codec.BfdMessage(bfd_codec.ICMP_QOS_PROBE, path.path_id, seq,
                                    upta.FS_INFINITE, upta.FS_INFINITE, tuple(chunk)).pack()
        out.append((seq, ipv4_header(src, path.egress_addr, len(icmp)) + icmp))
    return out


def useless_specs(flows: Iterable[Sequence[int]]) -> list[bfd_codec.FlowSpec]:
    """U flows (5-tuples src, dst, protocol, sport, dport) as probe specs, S = 0, sorted."""
    return [bfd_codec.FlowSpec(src, dst, sport, dport, proto, False)
            for src, dst, proto, sport, dport in sorted(tuple(f) for f in flows)]


def longest_prefix(entries: Iterable[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, Any]],
                   addr: int | ipaddress.IPv4Address | ipaddress.IPv6Address) -> Any:
    """The value of the longest (prefix, value) entry whose prefix holds addr (an int is
    IPv4); None without one."""
    a = ipaddress.IPv4Address(addr) if isinstance(addr, int) else addr
    best: tuple[int, Any] | None = None
    for prefix, value in entries:
        if prefix.version == a.version and a in prefix \
                and (best is None or prefix.prefixlen > best[0]):
            best = (prefix.prefixlen, value)
    return None if best is None else best[1]


def route_port(routes: Iterable[object], addr: int | ipaddress.IPv4Address
               | ipaddress.IPv6Address) -> int | None:
    """The port of the longest route prefix (config.Route: prefix, port) holding addr (an
    int is IPv4); None without one."""
    return longest_prefix(((r.prefix, r.port) for r in routes), addr)  # type: ignore[attr-defined]


# ---------------------------------------------------------------- U states without register reads
def infer_useless(rates_bps: Mapping[int, float], thresholds: Mapping[int, float],
                  was_useless: Iterable[int], fs_i_bps: float, fs_u_bps: float) -> set[int]:
    """Fig. 7's I/U rule applied by the controller to the interval's measured rates, for
    switches whose data-plane states cannot be read (BMv2's P4Runtime server answers
    register reads UNIMPLEMENTED; the plan's state digests are not in the P4 yet).

    rates_bps: slot -> lambda_i; thresholds: slot -> the loss threshold q of the flow in
    that slot (slots without one are never U); was_useless: the slots U last interval.
    A slot that was I becomes U when drop_prob = 1 - fs_I/lambda > q; one that was U
    stays U while 1 - fs_U/lambda > q (Fig. 7: "p = q" does not exceed). The fair shares
    are those in force during the interval (the last ones written); math.inf: none.
    What it cannot know: a P-UPTA packet's rewritten q (eq. 17) downstream of the first
    hop: the caller passes the flow's configured q, so a downstream router may call a
    flow I that its data plane made U (only that router's M is then low by one)."""
    before = set(was_useless)
    out: set[int] = set()
    for slot, rate in rates_bps.items():
        q = thresholds.get(slot)
        if q is None or q >= 1 or rate <= 0:
            continue
        fs = fs_u_bps if slot in before else fs_i_bps
        if math.isinf(fs):
            continue
        if 1 - fs / rate > q:
            out.add(slot)
    return out
