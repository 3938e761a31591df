// The flow's signature, included inside each control that needs it (flow
// reports, FRED's and UPTA's flow slots): crc32 over {src, dst, protocol, l4
// src, l4 dst} (ports 0 without TCP/UDP), taken over 2^32 = zlib.crc32 of the 13
// big-endian bytes (mmaqm.algorithms.fred.flow_hash), in meta.flow_signature.
// Hashed once per packet: a control that finds it non-zero reuses it (a
// signature that is 0 is hashed again, to the same 0). As a top-level action
// with parameters it would cost a PHV field and a copy per input, per packet.
// An IPv6 flow: the same 13 bytes with each address folded to 32 bits,
// fold(a) = (w0 * FLOW_FOLD_MUL0 + w1 * FLOW_FOLD_MUL1 + w2 * FLOW_FOLD_MUL2 + w3)
// mod 2^32 over its big-endian words w0..w3 (mmaqm.algorithms.fred.fold_ipv6),
// and the next header after the extension headers as the protocol. One hash for
// both families: p4c copies every hash input into a PHV field, so a second,
// IPv6-only hash would cost every IPv4 packet five more fields to reset. Each
// ?: costs one field more, but an IPv4 packet evaluates only its own side (a
// selection by multiplying with the headers' validity costs no field, but
// evaluates the fold for IPv4 too: about 11 000 instructions per packet more
// under callgrind, docs/ipv6.md). The
// flow label is not hashed (a host may change it within one connection, RFC
// 6437 §3). An IPv4 flow's signature is what it was before IPv6.
// No include guard: each including control gets its own copy of the action.
@hidden
action compute_flow_signature() {
    if (meta.flow_signature == 0) {
        // one call site for both families (a second would cost its five
        // copies again); ?: picks the family, evaluating only that side
        hash(meta.flow_signature, HashAlgorithm.crc32, (bit<32>)0,
             { hdr.ipv6.isValid() ? FLOW_FOLD(hdr.ipv6.src_addr) : hdr.ipv4.src_addr,
               hdr.ipv6.isValid() ? FLOW_FOLD(hdr.ipv6.dst_addr) : hdr.ipv4.dst_addr,
               meta.ip_proto, meta.l4_src_port, meta.l4_dst_port }, (bit<64>)0x100000000);
    }
}
