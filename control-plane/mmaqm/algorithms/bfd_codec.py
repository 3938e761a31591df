"""The BFD wire format (Wu & Hassan 2002, upta §5.3, Fig. 8): QoS Probe / Report
ICMP messages (types 20 / 21) with their flow specs and RFC 1071 checksums.

The controller builds its probes with it and reads the reports (upta_control);
what a router does to a probe (eqs. 25-26 with the RFC 1624 incremental checksum
update) and the egress edge's answer are the test oracle's model of upta.p4
(mmaqm_oracle.upta_model.lower_probe, report_for). Moved out of
:mod:`mmaqm.algorithms.upta`, which keeps the algorithm.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .. import p4constants as C
from ..fixedpoint import MASK32, check_int
# The same crc32 of the 5-tuple (flow_report.p4's field list) as FRED's slots.
from .fred import flow_hash

# BFD (upta §5.3, Fig. 8).
ICMP_QOS_PROBE: int = C.ICMP_QOS_PROBE
ICMP_QOS_REPORT: int = C.ICMP_QOS_REPORT
CODE_BANDWIDTH = 0
BFD_HEADER_BYTES = 16             # type, code, checksum, identifier, sequence, 2 fair shares
FLOW_SPEC_BYTES = 16              # src(4) dst(4) sport(2) dport(2) proto(1) flags(1) reserved(2)
FLOW_SPEC_S_BIT = 0x80            # flags bit 7: S = 1 I flow, 0 U flow (§5.3.2)
BFD_MAX_SPECS = 4                 # flow specs the P4 parses / digests per probe


def internet_checksum(data: bytes) -> int:
    """RFC 1071 one's-complement checksum (an odd length is padded with a zero byte)."""
    if not isinstance(data, (bytes, bytearray)):
        raise ValueError(f"data must be bytes, got {data!r}")
    if len(data) % 2:
        data = bytes(data) + b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


@dataclass(frozen=True)
class FlowSpec:
    """One Flow Spec of a QoS Probe (§5.3.2) with its S bit (True = I flow)."""

    src_addr: int
    dst_addr: int
    src_port: int
    dst_port: int
    protocol: int
    intelligible: bool

    def pack(self) -> bytes:
        check_int("src_addr", self.src_addr, 0, MASK32)
        check_int("dst_addr", self.dst_addr, 0, MASK32)
        check_int("src_port", self.src_port, 0, 0xFFFF)
        check_int("dst_port", self.dst_port, 0, 0xFFFF)
        check_int("protocol", self.protocol, 0, 0xFF)
        flags = FLOW_SPEC_S_BIT if self.intelligible else 0
        return struct.pack("!IIHHBBH", self.src_addr, self.dst_addr, self.src_port,
                           self.dst_port, self.protocol, flags, 0)

    @classmethod
    def unpack(cls, data: bytes) -> FlowSpec:
        if len(data) != FLOW_SPEC_BYTES:
            raise ValueError(f"a flow spec is {FLOW_SPEC_BYTES} bytes, got {len(data)}")
        src, dst, sport, dport, proto, flags, _ = struct.unpack("!IIHHBBH", data)
        return cls(src, dst, sport, dport, proto, bool(flags & FLOW_SPEC_S_BIT))

    def slot(self, table_slots: int) -> int:
        return flow_hash(self.src_addr, self.dst_addr, self.protocol, self.src_port,
                         self.dst_port) & (table_slots - 1)


@dataclass(frozen=True)
class BfdMessage:
    """A QoS Probe (type 20) or Report (type 21), Fig. 8; fs fields in the data
    plane's rate unit (bytes per K * 2^RATE_FRAC_BITS, K domain-wide)."""

    icmp_type: int
    identifier: int          # the ingress router's output port (§5.3.1)
    sequence: int
    fs_u: int                # Path Minimum Fairshare (U Flows): alpha_min
    fs_i: int                # Path Minimum Fairshare (I Flows): alpha'_min
    specs: tuple[FlowSpec, ...] = ()
    code: int = CODE_BANDWIDTH

    def pack(self) -> bytes:
        if self.icmp_type not in (ICMP_QOS_PROBE, ICMP_QOS_REPORT):
            raise ValueError(f"icmp_type must be 20 or 21, got {self.icmp_type!r}")
        if self.icmp_type == ICMP_QOS_REPORT and self.specs:
            raise ValueError("a QoS Report carries no flow specs (Fig. 8b)")
        check_int("code", self.code, 0, 0xFF)
        check_int("identifier", self.identifier, 0, 0xFFFF)
        check_int("sequence", self.sequence, 0, 0xFFFF)
        check_int("fs_u", self.fs_u, 0, MASK32)
        check_int("fs_i", self.fs_i, 0, MASK32)
        body = struct.pack("!HHII", self.identifier, self.sequence, self.fs_u, self.fs_i) \
            + b"".join(s.pack() for s in self.specs)
        unsummed = struct.pack("!BBH", self.icmp_type, self.code, 0) + body
        return struct.pack("!BBH", self.icmp_type, self.code,
                           internet_checksum(unsummed)) + body

    @classmethod
    def unpack(cls, data: bytes, *, verify: bool = True) -> BfdMessage:
        if not isinstance(data, (bytes, bytearray)) or len(data) < BFD_HEADER_BYTES:
            raise ValueError(f"data must be >= {BFD_HEADER_BYTES} bytes, got {data!r}")
        typ, code, _csum, ident, seq, fs_u, fs_i = struct.unpack("!BBHHHII",
                                                                 data[:BFD_HEADER_BYTES])
        if typ not in (ICMP_QOS_PROBE, ICMP_QOS_REPORT):
            raise ValueError(f"ICMP type {typ} is not a QoS Probe (20) or Report (21)")
        rest = data[BFD_HEADER_BYTES:]
        if len(rest) % FLOW_SPEC_BYTES or (typ == ICMP_QOS_REPORT and rest):
            raise ValueError(f"bad payload length {len(rest)} for ICMP type {typ}")
        if verify and internet_checksum(data) != 0:
            raise ValueError("ICMP checksum is wrong")
        specs = tuple(FlowSpec.unpack(rest[i:i + FLOW_SPEC_BYTES])
                      for i in range(0, len(rest), FLOW_SPEC_BYTES))
        return cls(typ, ident, seq, fs_u, fs_i, specs, code)
