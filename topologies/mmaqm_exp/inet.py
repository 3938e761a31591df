"""Address-family helpers of the traffic generators (tcpbulk, mmapp): one socket
per flow, of the family its address names. Standard library only.

DSCP: IPv4 carries it in the TOS byte (IP_TOS), IPv6 in the traffic class
(IPV6_TCLASS, RFC 8200 §7); both are the upper 6 bits of that byte, which is
what the switch classifies (docs/ipv6.md, "Classification").
"""

from __future__ import annotations

import ipaddress
import socket

#: IP header bytes without options / extension headers: IPv4 20, IPv6 40 (RFC 8200 §3)
IP_HDR_BYTES = {socket.AF_INET: 20, socket.AF_INET6: 40}
UDP_HDR_BYTES = 8


def family_of(addr: str) -> socket.AddressFamily:
    """AF_INET6 for an IPv6 address ("::", "2001:db8::1"), else AF_INET (an IPv4
    address or a name); ValueError for neither."""
    if ":" in addr:
        ipaddress.IPv6Address(addr.split("%")[0])
        return socket.AF_INET6
    return socket.AF_INET


def set_dscp(sock: socket.socket, family: int, dscp: int) -> None:
    """Mark every packet sock sends with dscp (IP_TOS or IPV6_TCLASS)."""
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, (dscp << 2) & 0xFC)
    else:
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, (dscp << 2) & 0xFC)


def udp_overhead_bytes(family: int) -> int:
    """IP + UDP header bytes of a datagram of family (IPv4 28, IPv6 48)."""
    return IP_HDR_BYTES[family] + UDP_HDR_BYTES


def is_ipv6_peer(addr: tuple) -> bool:
    """A peer address from recvfrom on an AF_INET6 socket is IPv6 unless it is an
    IPv4-mapped one (::ffff:a.b.c.d: an IPv4 packet on a dual-stack socket); a
    2-tuple is an AF_INET socket's."""
    if len(addr) != 4:
        return False
    return ipaddress.IPv6Address(addr[0].split("%")[0]).ipv4_mapped is None
