// Parser, checksum and deparser (v1model).
// Ethernet -> IPv4 (IHL 5, or IHL 6 with exactly the P-UPTA option; other options
// are discarded in ingress) -> TCP/UDP/ICMP.
// Non-first fragments carry no L4 header and are not parsed past IPv4.
#ifndef MMAQM_PARSER_P4
#define MMAQM_PARSER_P4

#include <core.p4>
#include <v1model.p4>
#include "../shared/headers.p4"

error { IPv4BadVersion, IPv4HeaderTooShort }

parser MmaqmParser(packet_in packet,
                   out headers_t hdr,
                   inout local_metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4, error.IPv4BadVersion);
        verify(hdr.ipv4.ihl >= IPV4_MIN_IHL, error.IPv4HeaderTooShort);
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
        packet.emit(hdr.tcp);
        packet.emit(hdr.udp);
        packet.emit(hdr.icmp);
        packet.emit(hdr.bfd);
        packet.emit(hdr.bfd_specs);
    }
}

#endif
