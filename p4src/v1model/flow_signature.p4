// The flow's signature, included inside each control that needs it (flow
// reports, FRED's and UPTA's flow slots): crc32 over {src, dst, protocol, l4
// src, l4 dst} (ports 0 without TCP/UDP), taken over 2^32 = zlib.crc32 of the 13
// big-endian bytes (mmaqm.algorithms.fred.flow_hash), in meta.flow_signature.
// Hashed once per packet: a control that finds it non-zero reuses it (a
// signature that is 0 is hashed again, to the same 0). As a top-level action
// with parameters it would cost a PHV field and a copy per input, per packet.
// An IPv6 flow: crc32 over {src, dst, next header after the extension headers,
// l4 src, l4 dst}, 37 bytes (flow_key_bytes with IPv6 addresses); the flow
// label is not hashed (a host may change it within one connection, RFC 6437 §3).
// No include guard: each including control gets its own copy of the action.
@hidden
action compute_flow_signature() {
    if (meta.flow_signature == 0) {
#ifdef MMAQM_HAS_IPV6
        if (hdr.ipv6.isValid()) {
            hash(meta.flow_signature, HashAlgorithm.crc32, (bit<32>)0,
                 { hdr.ipv6.src_addr, hdr.ipv6.dst_addr, meta.ip_proto,
                   meta.l4_src_port, meta.l4_dst_port }, (bit<64>)0x100000000);
        } else
#endif
        {
            hash(meta.flow_signature, HashAlgorithm.crc32, (bit<32>)0,
                 { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                   meta.l4_src_port, meta.l4_dst_port }, (bit<64>)0x100000000);
        }
    }
}
