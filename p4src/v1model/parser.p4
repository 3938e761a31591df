// Parser, checksum and deparser (v1model).
// Ethernet -> IPv4 (IHL 5, or IHL 6 with exactly the P-UPTA option; other options
// are discarded in ingress) -> TCP/UDP/ICMP.
// Non-first fragments carry no L4 header and are not parsed past IPv4.
// Ethernet -> IPv6 (RFC 8200) -> at most two extension headers (hop-by-hop,
// routing, destination options, fragment: kept opaque and emitted again) ->
// TCP/UDP/ICMPv6. A third extension header ends parsing with
// error.IPv6ExtensionLimit (discarded, DISCARD_IPV6_EXT_LIMIT); a non-first
// fragment is not parsed past its fragment header; any other next header
// (ESP, AH, No Next Header, ...) is the packet's protocol, its payload unparsed.
// meta.ip_proto and meta.dscp hold either family's protocol and DSCP.
#ifndef MMAQM_PARSER_P4
#define MMAQM_PARSER_P4

#include <core.p4>
#include <v1model.p4>
#include "../shared/headers.p4"

error { IPv4BadVersion, IPv4HeaderTooShort, IPv6BadVersion, IPv6ExtensionLimit }

parser MmaqmParser(packet_in packet,
                   out headers_t hdr,
                   inout local_metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4, error.IPv4BadVersion);
        verify(hdr.ipv4.ihl >= IPV4_MIN_IHL, error.IPv4HeaderTooShort);
        meta.ip_proto = hdr.ipv4.protocol;
        meta.dscp = hdr.ipv4.dscp;
        transition select(hdr.ipv4.ihl) {
            IPV4_MIN_IHL: parse_l4;
            UPTA_OPTION_IHL: parse_ipv4_option;
            default: accept;
        }
    }

    // P-UPTA's loss threshold (upta.p4): IHL 6 is parsed only when its one
    // option is exactly ours (type, length 4); anything else is left unparsed.
    state parse_ipv4_option {
        transition select(packet.lookahead<bit<16>>()) {
            UPTA_OPTION_TYPE ++ UPTA_OPTION_LEN: parse_upta_option;
            default: accept;
        }
    }

    state parse_upta_option {
        packet.extract(hdr.upta_option);
        transition parse_l4;
    }

    state parse_l4 {
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, IP_PROTO_TCP): parse_tcp;
            (0, IP_PROTO_UDP): parse_udp;
            (0, IP_PROTO_ICMP): parse_icmp;
            default: accept;
        }
    }

    // The version is checked by the transition (an unmatched version ends in
    // ipv6_bad_version): a verify() here would cost a PHV field per packet.
    state parse_ipv6 {
        packet.extract(hdr.ipv6);
        meta.ip_proto = hdr.ipv6.next_hdr;
        meta.dscp = hdr.ipv6.dscp;
        transition select(hdr.ipv6.version, hdr.ipv6.next_hdr) {
            (6, IPV6_EXT_HOP_BY_HOP): parse_ipv6_ext1;
            (6, IPV6_EXT_ROUTING): parse_ipv6_ext1;
            (6, IPV6_EXT_DEST_OPTS): parse_ipv6_ext1;
            (6, IPV6_EXT_FRAGMENT): parse_ipv6_frag1;
            (6, IP_PROTO_TCP): parse_tcp;
            (6, IP_PROTO_UDP): parse_udp;
            (6, IP_PROTO_ICMPV6): parse_icmpv6;
            (6, _): accept;
            default: ipv6_bad_version;
        }
    }

    state ipv6_bad_version {
        verify(false, error.IPv6BadVersion);
        transition accept;
    }

    // Extension header 1 of IPV6_EXT_MAX_DEPTH: its first 8 bytes, then
    // 8 * hdr_ext_len more (RFC 8200 §4.3-4.6). Read from the extracted length,
    // not by a lookahead (each lookahead costs PHV fields, per packet).
    state parse_ipv6_ext1 {
        packet.extract(hdr.ipv6_ext1);
        meta.ip_proto = hdr.ipv6_ext1.next_hdr;
        transition select(hdr.ipv6_ext1.hdr_ext_len) {
            0: ipv6_after_ext1;
            default: parse_ipv6_ext1_rest;
        }
    }

    state parse_ipv6_ext1_rest {
        packet.extract(hdr.ipv6_ext1_rest, (bit<32>)hdr.ipv6_ext1.hdr_ext_len << 6);
        transition ipv6_after_ext1;
    }

    // A fragment header (§4.5) is 8 bytes; a non-first fragment (offset != 0)
    // has no upper-layer header.
    state parse_ipv6_frag1 {
        packet.extract(hdr.ipv6_ext1);
        meta.ip_proto = hdr.ipv6_ext1.next_hdr;
        transition select(hdr.ipv6_ext1.frag_offset) {
            0: ipv6_after_ext1;
            default: accept;
        }
    }

    state ipv6_after_ext1 {
        transition select(hdr.ipv6_ext1.next_hdr) {
            IPV6_EXT_HOP_BY_HOP: parse_ipv6_ext2;
            IPV6_EXT_ROUTING: parse_ipv6_ext2;
            IPV6_EXT_DEST_OPTS: parse_ipv6_ext2;
            IPV6_EXT_FRAGMENT: parse_ipv6_frag2;
            IP_PROTO_TCP: parse_tcp;
            IP_PROTO_UDP: parse_udp;
            IP_PROTO_ICMPV6: parse_icmpv6;
            default: accept;
        }
    }

    // Extension header 2 of IPV6_EXT_MAX_DEPTH, the last one skipped.
    state parse_ipv6_ext2 {
        packet.extract(hdr.ipv6_ext2);
        meta.ip_proto = hdr.ipv6_ext2.next_hdr;
        transition select(hdr.ipv6_ext2.hdr_ext_len) {
            0: ipv6_after_ext2;
            default: parse_ipv6_ext2_rest;
        }
    }

    state parse_ipv6_ext2_rest {
        packet.extract(hdr.ipv6_ext2_rest, (bit<32>)hdr.ipv6_ext2.hdr_ext_len << 6);
        transition ipv6_after_ext2;
    }

    state parse_ipv6_frag2 {
        packet.extract(hdr.ipv6_ext2);
        meta.ip_proto = hdr.ipv6_ext2.next_hdr;
        transition select(hdr.ipv6_ext2.frag_offset) {
            0: ipv6_after_ext2;
            default: accept;
        }
    }

    state ipv6_after_ext2 {
        transition select(hdr.ipv6_ext2.next_hdr) {
            IPV6_EXT_HOP_BY_HOP: ipv6_extension_limit;
            IPV6_EXT_ROUTING: ipv6_extension_limit;
            IPV6_EXT_DEST_OPTS: ipv6_extension_limit;
            IPV6_EXT_FRAGMENT: ipv6_extension_limit;
            IP_PROTO_TCP: parse_tcp;
            IP_PROTO_UDP: parse_udp;
            IP_PROTO_ICMPV6: parse_icmpv6;
            default: accept;
        }
    }

    // A third skippable extension header: beyond IPV6_EXT_MAX_DEPTH.
    state ipv6_extension_limit {
        verify(false, error.IPv6ExtensionLimit);
        transition accept;
    }

    // ICMPv6 (RFC 4443): type, code, checksum, in the ICMP header; never BFD.
    state parse_icmpv6 {
        packet.extract(hdr.icmp);
        transition accept;
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        meta.l4_src_port = hdr.tcp.src_port;
        meta.l4_dst_port = hdr.tcp.dst_port;
        transition accept;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        meta.l4_src_port = hdr.udp.src_port;
        meta.l4_dst_port = hdr.udp.dst_port;
        transition accept;
    }

    state parse_icmp {
        packet.extract(hdr.icmp);
        transition select(hdr.icmp.icmp_type) {
            ICMP_QOS_PROBE: parse_bfd;
            ICMP_QOS_REPORT: parse_bfd;
            default: accept;
        }
    }

    // BFD (upta.p4): a report is 16 bytes; a probe's flow specs are extracted when the
    // IPv4 length says 0..4 of them (no parser arithmetic); otherwise bfd_complete
    // stays false and the egress edge drops the probe as PROBE_MALFORMED.
    state parse_bfd {
        packet.extract(hdr.bfd);
        transition select(hdr.icmp.icmp_type, hdr.ipv4.total_len) {
            (ICMP_QOS_REPORT, BFD_IP_LEN): bfd_complete;
            (ICMP_QOS_PROBE, BFD_IP_LEN): bfd_complete;
            (ICMP_QOS_PROBE, BFD_IP_LEN + BFD_SPEC_BYTES): parse_bfd_spec1;
            (ICMP_QOS_PROBE, BFD_IP_LEN + 2 * BFD_SPEC_BYTES): parse_bfd_spec2;
            (ICMP_QOS_PROBE, BFD_IP_LEN + 3 * BFD_SPEC_BYTES): parse_bfd_spec3;
            (ICMP_QOS_PROBE, BFD_IP_LEN + 4 * BFD_SPEC_BYTES): parse_bfd_spec4;
            default: accept;
        }
    }

    state parse_bfd_spec4 {
        packet.extract(hdr.bfd_specs.next);
        transition parse_bfd_spec3;
    }

    state parse_bfd_spec3 {
        packet.extract(hdr.bfd_specs.next);
        transition parse_bfd_spec2;
    }

    state parse_bfd_spec2 {
        packet.extract(hdr.bfd_specs.next);
        transition parse_bfd_spec1;
    }

    state parse_bfd_spec1 {
        packet.extract(hdr.bfd_specs.next);
        transition bfd_complete;
    }

    state bfd_complete {
        meta.bfd_complete = true;
        transition accept;
    }
}

control MmaqmVerifyChecksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == IPV4_MIN_IHL,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        verify_checksum(hdr.ipv4.isValid() && hdr.upta_option.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
              hdr.upta_option.opt_type, hdr.upta_option.opt_len, hdr.upta_option.q16 },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control MmaqmComputeChecksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == IPV4_MIN_IHL,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        update_checksum(hdr.ipv4.isValid() && hdr.upta_option.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
              hdr.upta_option.opt_type, hdr.upta_option.opt_len, hdr.upta_option.q16 },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control MmaqmDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.upta_option);
        packet.emit(hdr.ipv6);
        packet.emit(hdr.ipv6_ext1);
        packet.emit(hdr.ipv6_ext1_rest);
        packet.emit(hdr.ipv6_ext2);
        packet.emit(hdr.ipv6_ext2_rest);
        packet.emit(hdr.tcp);
        packet.emit(hdr.udp);
        packet.emit(hdr.icmp);
        packet.emit(hdr.bfd);
        packet.emit(hdr.bfd_specs);
    }
}

#endif
