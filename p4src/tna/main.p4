// mmaqm: multimedia-aware active queue management, Tofino (TNA) top file.
// Wires the shared controls of p4src/shared (Routing, Classifier, the types
// of defines.p4 and headers.p4) and the TNA-specific ones of this directory
// where Tofino cannot do what BMv2 does; docs/tofino.md lists every
// difference. One build carries one algorithm: compile with
// -DMMAQM_TNA_<ALGORITHM> (make build-tna builds them all).
#include <core.p4>
#include <tna.p4>

// bf-p4c: metadata fields a packet's path does not write read as 0, as
// v1model's do (the parser sets the flags it tests explicitly anyway).
@pa_auto_init_metadata

// Routing (p4src/shared/routing.p4) writes Tofino's unicast egress port.
#define MMAQM_FORWARD_MD_T ingress_intrinsic_metadata_for_tm_t
#define MMAQM_EGRESS_PORT(md) md.ucast_egress_port
#ifdef MMAQM_TNA_UPTA
// The UPTA build's routing (routing.p4) holds this router's addresses
// (upta_local_addr): a packet to one is routed on the parser's route_dst_addr
// (a QoS Probe's source, where its answer goes) by ipv4_answer_lpm, a copy of
// ipv4_lpm's entries, in the same stage.
#define MMAQM_ROUTE_ANSWERS
#endif

// IPv6 as on v1model (docs/ipv6.md): headers, ipv6_lpm, the classifier's
// family-independent keys, the two-family digest. An extension header's
// opaque rest is parsed up to IPV6_EXT_MAX_REST_BITS here (v1model: 255 * 8
// bytes): a Tofino parser extracts a varbit through one state per length,
// into PHV. A longer one: expected a parser error (MALFORMED), not verified
// on a run. Not in the FRED and UPTA builds, which with IPv6 needed 13 and 14
// stages (docs/ipv6.md, "On Tofino"): they stay IPv4-only, an IPv6 frame
// discarded as NOT_IPV4 (md.is_ipv6 stays false).
#if !defined(MMAQM_TNA_FRED) && !defined(MMAQM_TNA_UPTA)
#define MMAQM_HAS_IPV6
#define IPV6_EXT_MAX_REST_BITS 128
#endif

#include "../shared/defines.p4"
#include "../shared/headers.p4"
#include "../shared/routing.p4"
#include "../shared/classifier.p4"
#include "tna_types.p4"
#include "aqm_tna.p4"
#include "flow_report_tna.p4"
#ifdef MMAQM_TNA_UPTA
#include "upta_tna.p4"
#endif

// ---------------------------------------------------------------- ingress
// The header states of parser.p4; verify() becomes discards in ingress, and
// the IPv4 checksum is the parser's Checksum extern (fed in the extracting state).
parser TnaIngressParser(packet_in pkt, out tna_ingress_headers_t hdr,
                        out tna_ingress_metadata_t md,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    Checksum() ipv4_checksum;
#ifdef MMAQM_TNA_UPTA
    Checksum() icmp_checksum;
#endif

    state start {
        pkt.extract(ig_intr_md);
        md.is_report = false;
        md.other_pipe = false;
        md.checksum_error = false;
        md.ipv4_too_short = false;
        md.ttl_expired = false;
        md.is_ipv6 = false;
        md.ipv6_ext_limit = false;
        md.ipv6_bad_version = false;
        md.ipv6_hop_expired = false;
        md.ip_ecn = 0;
#ifdef MMAQM_TNA_UPTA
        md.bfd_event = BFD_NO_EVENT;
        md.base.bfd_to_local = false;
        md.bfd_checksum_error = false;
        md.base.bfd_complete = false;
#endif
        md.excess = 0;
        md.chips_sample_q16 = 0;
        md.one_bit = 1;
        md.base.routed = false;
        md.base.aqm_applied = false;
        md.base.aqm_drop = false;
        md.base.ecn_mark = false;
        md.base.admitted = false;
        md.base.cut_in = false;
        md.base.flow_epoch_shift = 0;
        md.base.l4_src_port = 0;
        md.base.l4_dst_port = 0;
        transition select(ig_intr_md.resubmit_flag) {
            1: parse_cancel;
            default: parse_port_metadata;
        }
    }

    // A resubmitted packet is a cancel: its 64 bits replace the port metadata.
    state parse_cancel {
        pkt.extract(hdr.report);
        md.is_report = true;
        transition accept;
    }

    state parse_port_metadata {
        pkt.advance(PORT_METADATA_SIZE);
        transition select(ig_intr_md.ingress_port) {
            TNA_RECIRC_PORT: parse_departure_report;
#ifdef MMAQM_TNA_UPTA
            // pipe 0's dev ports 0..63 (NUM_PORTS, the ports under AQM, the
            // hosts') send no PacketOut: a host cannot pass for the controller
            0 &&& 0x1C0: parse_ethernet;
            0 &&& 0x180: check_packet_out;         // pipe 0's other ports (64..127)
            default: check_packet_out_other_pipe;  // the CPU port is in pipe 1 or 2
#else
            0 &&& 0x180: parse_ethernet;           // pipe 0 (bits 8..7 of the dev port)
            default: other_pipe;
#endif
        }
    }

    // A frame from a port of pipes 1..3: the AQM's registers are pipe 0's
    // (docs/tofino.md, "State on every pipe"), and this pipe's copy would count
    // its arrival and never see its departure. Parsed no further: without an
    // IPv4 header it is neither routed nor given to the AQM, ingress_checks
    // discards it, and main's other_pipe_discards counts it by its pipe.
    state other_pipe {
        md.other_pipe = true;
        transition accept;
    }

#ifdef MMAQM_TNA_UPTA
    // fabric-tna's check_ethernet: a PacketOut header carries its ether type
    // where an Ethernet header does (tna_packet_out_h), on a port other than
    // 0..63 (the CPU port: 192 or 320 on Tofino 1). A probe behind one is
    // the controller's: upta_from_cpu, as an upta_cpu entry of upta_edge_port
    // marks a frame from the CPU port on v1model.
    state check_packet_out {
        transition select(pkt.lookahead<tna_packet_out_h>().ether_type) {
            TNA_ETHERTYPE_PACKET_OUT: parse_packet_out;
            default: parse_ethernet;
        }
    }

    // The same on another pipe's port: only a PacketOut passes
    state check_packet_out_other_pipe {
        transition select(pkt.lookahead<tna_packet_out_h>().ether_type) {
            TNA_ETHERTYPE_PACKET_OUT: parse_packet_out;
            default: other_pipe;
        }
    }

    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        md.base.upta_from_cpu = true;
        transition parse_ethernet;
    }
#endif

    state parse_departure_report {
        pkt.extract(hdr.report);
        md.is_report = true;
#ifdef MMAQM_TNA_FRED
        // fred_tna.p4's epoch table keys on it: hdr.report's own bit is written
        // by an arrival's record (a dependency that would cost a stage)
        md.report_empty = hdr.report.queue_empty;
#endif
        transition accept;
    }

    state parse_ethernet {
        pkt.extract(hdr.pkt.ethernet);
        transition select(hdr.pkt.ethernet.ether_type) {
#ifdef MMAQM_TNA_UPTA
            ETHERTYPE_IPV4: parse_ipv4_probe_check;
#else
            ETHERTYPE_IPV4: parse_ipv4;
#endif
#ifdef MMAQM_HAS_IPV6
            ETHERTYPE_IPV6: parse_ipv6;
#endif
            default: accept;
        }
    }

#ifdef MMAQM_TNA_UPTA
    // A QoS Probe (IHL 5, ICMP, the ICMP type: the byte after the header),
    // looked ahead before the IPv4 header is extracted, leaves its source in
    // route_dst_addr: if routing's upta_local_addr finds its destination to be
    // this router's, it is routed on it, where the answer goes (a Tofino parser
    // writes a field once on a path, and reads a header's bytes only while
    // extracting it). Lookahead bits: version and IHL 167:160, protocol 95:88,
    // the next byte 7:0 (three of the parser's match registers; a non-first
    // fragment is not told apart).
    state parse_ipv4_probe_check {
        transition select(pkt.lookahead<bit<168>>()[167:160], pkt.lookahead<bit<168>>()[95:88],
                          pkt.lookahead<bit<168>>()[7:0]) {
            (0x45, IP_PROTO_ICMP, ICMP_QOS_PROBE): parse_ipv4_probe;
            default: parse_ipv4;
        }
    }

    state parse_ipv4_probe {
        pkt.extract(hdr.pkt.ipv4);
        ipv4_checksum.add(hdr.pkt.ipv4);
        md.base.route_dst_addr = hdr.pkt.ipv4.src_addr;
        transition parse_ipv4_length;
    }
#endif

    state parse_ipv4 {
        pkt.extract(hdr.pkt.ipv4);
        ipv4_checksum.add(hdr.pkt.ipv4);
#ifdef MMAQM_TNA_UPTA
        md.base.route_dst_addr = hdr.pkt.ipv4.dst_addr;
#endif
        transition parse_ipv4_length;
    }

    // total_len < IPV4_MIN_HEADER_BYTES (20), decided here: the ingress
    // gateways cannot range-compare a 16-bit field (0..15, then 16..19)
    state parse_ipv4_length {
        transition select(hdr.pkt.ipv4.total_len) {
            0x0000 &&& 0xFFF0: ipv4_too_short;
            0x0010 &&& 0xFFFC: ipv4_too_short;
            default: parse_ipv4_options;
        }
    }

    state ipv4_too_short {
        md.ipv4_too_short = true;
        md.checksum_error = ipv4_checksum.verify();
        transition accept;
    }

    // ttl <= 1 is not a parser test: Tofino 1's parser has three match
    // registers (one 16-bit, two 8-bit), which the UPTA build's BFD parsing
    // and, with IPv6's states, every build's IPv4 states need. The first
    // stage's ttl_check table and ipv4_forwardable read the TTL before
    // routing's stage writes it.

    // The header checksum is verified once on each path, after the header's
    // last parsed byte: IHL 5; IHL 6 with exactly P-UPTA's option (parser.p4:
    // the checksum covers it); any other IHL, left unparsed (discarded in
    // ingress, ingress_checks).
    state parse_ipv4_options {
        transition select(hdr.pkt.ipv4.ihl) {
            IPV4_MIN_IHL: parse_ipv4_l4;
            UPTA_OPTION_IHL: parse_ipv4_option;
            default: ipv4_options_unparsed;
        }
    }

    state parse_ipv4_option {
        // the type byte only (one of Tofino 1's three parser match registers,
        // parse_ipv4_l4): the option fills IHL 6's 4 bytes, so its length byte
        // is 4 or the option is malformed (parser.p4 also tests the length)
        transition select(pkt.lookahead<bit<8>>()) {
            UPTA_OPTION_TYPE: parse_upta_option;
            default: ipv4_options_unparsed;
        }
    }

    state ipv4_options_unparsed {
        md.checksum_error = ipv4_checksum.verify();
        transition accept;
    }

    state parse_upta_option {
        pkt.extract(hdr.pkt.upta_option);
        ipv4_checksum.add(hdr.pkt.upta_option);
        transition parse_ipv4_l4;
    }

    // Non-first fragments carry no L4 header (parser.p4). The UPTA build cannot
    // test the offset here: Tofino 1's parser has 32 bits of match registers
    // (one 16-bit, two 8-bit), and its BFD parsing holds the total length in
    // the 16-bit one until the flow specs; its ingress tests the offset
    // before the endpoint or a probe's lowering reads the BFD fields.
    state parse_ipv4_l4 {
        md.checksum_error = ipv4_checksum.verify();
#ifdef MMAQM_TNA_UPTA
        transition select(hdr.pkt.ipv4.protocol) {
            IP_PROTO_TCP: parse_tcp;
            IP_PROTO_UDP: parse_udp;
            IP_PROTO_ICMP: parse_icmp;
            default: accept;
        }
#else
        transition select(hdr.pkt.ipv4.frag_offset, hdr.pkt.ipv4.protocol) {
            (0, IP_PROTO_TCP): parse_tcp;
            (0, IP_PROTO_UDP): parse_udp;
            (0, IP_PROTO_ICMP): parse_icmp;
            default: accept;
        }
#endif
    }

#ifdef MMAQM_HAS_IPV6
    // ---- IPv6 (v1model parser.p4; RFC 8200): the fixed header, at most two
    // extension headers (hop-by-hop, routing, destination options, fragment),
    // then TCP, UDP or ICMPv6, in v1model's states. A Tofino parser writes a
    // field once on a path, so the protocol after the extension headers and
    // the traffic class are copied in ingress (ip_keys). The hop limit is tested in a
    // look-ahead before the header's extraction (byte 7 of the header).
    state parse_ipv6 {
        transition select(pkt.lookahead<bit<64>>()[7:0]) {
            0: ipv6_hop_expired;
            1: ipv6_hop_expired;
            default: parse_ipv6_header;
        }
    }

    // hop limit 0 or 1 (DISCARD_TTL_EXPIRED; routing decrements it in ingress)
    state ipv6_hop_expired {
        md.ipv6_hop_expired = true;
        transition parse_ipv6_header;
    }

    state parse_ipv6_header {
        pkt.extract(hdr.pkt.ipv6);
        md.is_ipv6 = true;
        transition select(hdr.pkt.ipv6.version, hdr.pkt.ipv6.next_hdr) {
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

    // version != 6: MALFORMED (v1model: error.IPv6BadVersion)
    state ipv6_bad_version {
        md.ipv6_bad_version = true;
        transition accept;
    }

    // Extension header 1 of IPV6_EXT_MAX_DEPTH (2): 8 bytes, then 8 *
    // hdr_ext_len more
    state parse_ipv6_ext1 {
        pkt.extract(hdr.pkt.ipv6_ext1);
        transition select(hdr.pkt.ipv6_ext1.hdr_ext_len) {
            0: ipv6_after_ext1;
            default: parse_ipv6_ext1_rest;
        }
    }

    state parse_ipv6_ext1_rest {
        pkt.extract(hdr.pkt.ipv6_ext1_rest, (bit<32>)hdr.pkt.ipv6_ext1.hdr_ext_len << 6);
        transition ipv6_after_ext1_rest;
    }

    // A fragment header (8 bytes): a non-first fragment (offset != 0) has no
    // upper-layer header
    state parse_ipv6_frag1 {
        pkt.extract(hdr.pkt.ipv6_ext1);
        transition select(hdr.pkt.ipv6_ext1.frag_offset) {
            0: ipv6_after_frag1;
            default: accept;
        }
    }

    // (one copy of the next header's dispatch per way in: bf-p4c v1.2.5.16
    // merged one shared state into two of the same name, which bfas refused)
    state ipv6_after_ext1 {
        transition select(hdr.pkt.ipv6_ext1.next_hdr) {
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

    state ipv6_after_ext1_rest {
        transition select(hdr.pkt.ipv6_ext1.next_hdr) {
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

    state ipv6_after_frag1 {
        transition select(hdr.pkt.ipv6_ext1.next_hdr) {
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

    // Extension header 2, the last one skipped
    state parse_ipv6_ext2 {
        pkt.extract(hdr.pkt.ipv6_ext2);
        transition select(hdr.pkt.ipv6_ext2.hdr_ext_len) {
            0: ipv6_after_ext2;
            default: parse_ipv6_ext2_rest;
        }
    }

    state parse_ipv6_ext2_rest {
        pkt.extract(hdr.pkt.ipv6_ext2_rest, (bit<32>)hdr.pkt.ipv6_ext2.hdr_ext_len << 6);
        transition ipv6_after_ext2_rest;
    }

    state parse_ipv6_frag2 {
        pkt.extract(hdr.pkt.ipv6_ext2);
        transition select(hdr.pkt.ipv6_ext2.frag_offset) {
            0: ipv6_after_frag2;
            default: accept;
        }
    }

    state ipv6_after_ext2 {
        transition select(hdr.pkt.ipv6_ext2.next_hdr) {
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

    state ipv6_after_ext2_rest {
        transition select(hdr.pkt.ipv6_ext2.next_hdr) {
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

    state ipv6_after_frag2 {
        transition select(hdr.pkt.ipv6_ext2.next_hdr) {
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

    // a third skippable extension header: beyond IPV6_EXT_MAX_DEPTH
    // (DISCARD_IPV6_EXT_LIMIT; v1model error.IPv6ExtensionLimit)
    state ipv6_extension_limit {
        md.ipv6_ext_limit = true;
        transition accept;
    }

    // ICMPv6 (RFC 4443): type, code, checksum, in the ICMP header; never BFD
    state parse_icmpv6 {
        pkt.extract(hdr.pkt.icmp);
        transition accept;
    }

#endif

    state parse_tcp {
        pkt.extract(hdr.pkt.tcp);
        md.base.l4_src_port = hdr.pkt.tcp.src_port;
        md.base.l4_dst_port = hdr.pkt.tcp.dst_port;
        transition accept;
    }

    state parse_udp {
        pkt.extract(hdr.pkt.udp);
        md.base.l4_src_port = hdr.pkt.udp.src_port;
        md.base.l4_dst_port = hdr.pkt.udp.dst_port;
        transition accept;
    }

    state parse_icmp {
        pkt.extract(hdr.pkt.icmp);
#ifdef MMAQM_TNA_UPTA
        icmp_checksum.add(hdr.pkt.icmp);
        transition select(hdr.pkt.icmp.icmp_type) {
            ICMP_QOS_PROBE: parse_bfd;
            ICMP_QOS_REPORT: parse_bfd;
            default: accept;
        }
#else
        transition accept;
#endif
    }
#ifdef MMAQM_TNA_UPTA

    // BFD (parser.p4): the flow specs the IPv4 length announces, each added to
    // the ICMP checksum, which a complete message verifies
    state parse_bfd {
        pkt.extract(hdr.pkt.bfd);
        icmp_checksum.add(hdr.pkt.bfd);
        transition select(hdr.pkt.icmp.icmp_type, hdr.pkt.ipv4.total_len) {
            (ICMP_QOS_REPORT, BFD_IP_LEN): bfd_complete;
            (ICMP_QOS_PROBE, BFD_IP_LEN): bfd_complete;
            (ICMP_QOS_PROBE, BFD_IP_LEN + BFD_SPEC_BYTES): parse_bfd_spec0;
            (ICMP_QOS_PROBE, BFD_IP_LEN + 2 * BFD_SPEC_BYTES): parse_bfd_spec0;
            (ICMP_QOS_PROBE, BFD_IP_LEN + 3 * BFD_SPEC_BYTES): parse_bfd_spec0;
            (ICMP_QOS_PROBE, BFD_IP_LEN + 4 * BFD_SPEC_BYTES): parse_bfd_spec0;
            default: accept;
        }
    }

    state parse_bfd_spec0 {
        pkt.extract(hdr.pkt.bfd_specs[0]);
        icmp_checksum.add(hdr.pkt.bfd_specs[0]);
        transition select(hdr.pkt.ipv4.total_len) {
            BFD_IP_LEN + BFD_SPEC_BYTES: bfd_complete;
            default: parse_bfd_spec1;
        }
    }

    state parse_bfd_spec1 {
        pkt.extract(hdr.pkt.bfd_specs[1]);
        icmp_checksum.add(hdr.pkt.bfd_specs[1]);
        transition select(hdr.pkt.ipv4.total_len) {
            BFD_IP_LEN + 2 * BFD_SPEC_BYTES: bfd_complete;
            default: parse_bfd_spec2;
        }
    }

    state parse_bfd_spec2 {
        pkt.extract(hdr.pkt.bfd_specs[2]);
        icmp_checksum.add(hdr.pkt.bfd_specs[2]);
        transition select(hdr.pkt.ipv4.total_len) {
            BFD_IP_LEN + 3 * BFD_SPEC_BYTES: bfd_complete;
            default: parse_bfd_spec3;
        }
    }

    state parse_bfd_spec3 {
        pkt.extract(hdr.pkt.bfd_specs[3]);
        icmp_checksum.add(hdr.pkt.bfd_specs[3]);
        transition bfd_complete;
    }

    state bfd_complete {
        md.base.bfd_complete = true;
        md.bfd_checksum_error = icmp_checksum.verify();
        transition accept;
    }
#endif
}

control TnaIngress(inout tna_ingress_headers_t hdr,
                   inout tna_ingress_metadata_t md,
                   in ingress_intrinsic_metadata_t ig_intr_md,
                   in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Routing() routing;
    Classifier() classifier;
    TnaPortPolicy() policy;
    TnaAqm() aqm;
    TnaFlowSignature() flow_signature;
#ifdef MMAQM_TNA_UPTA
    TnaUptaLookup() upta_lookup;
    TnaBfdEndpoint() bfd_endpoint;
    TnaUptaPath() upta_path;
    TnaUptaSlot() upta_slot;
    TnaUptaFlow() upta_flow;
#endif
#ifdef MMAQM_TNA_FRED
    TnaFredEpoch() fred_epoch;
#endif

    // main.p4's counters; indexes as on v1model.
    Counter<bit<64>, tna_index_t>(NUM_PORTS * NUM_DISCARD_REASONS,
                                  CounterType_t.PACKETS_AND_BYTES) ingress_discards;
    Counter<bit<64>, tna_index_t>(NUM_PORTS * CLASS_SLOTS,
                                  CounterType_t.PACKETS_AND_BYTES) queue_admits;
    Counter<bit<64>, bit<12>>(NUM_PORTS * CLASS_SLOTS * TNA_DROP_REASON_SLOTS,
                              CounterType_t.PACKETS_AND_BYTES) queue_drops;
    Counter<bit<64>, bit<12>>(NUM_PORTS * CLASS_SLOTS * TNA_DROP_REASON_SLOTS,
                              CounterType_t.PACKETS_AND_BYTES) queue_ecn_marks;

    // A counter or register index must be a PHV field or a hash unit's output:
    // the concatenations below are identity hashes (docs/tofino.md).
    Hash<tna_index_t>(HashAlgorithm_t.IDENTITY) report_class_index_hash;
    // reason * 256 + class_index: the 12 low bits of {reason, class_index[7:0]}
    Hash<bit<12>>(HashAlgorithm_t.IDENTITY) drop_index_hash;
    Hash<bit<12>>(HashAlgorithm_t.IDENTITY) ecn_index_hash;
    Hash<tna_index_t>(HashAlgorithm_t.IDENTITY) discard_index_hash;
    // Frames from a port outside pipe 0 (the parser's other_pipe state), by
    // their pipe (dev port bits 8..7; index 0 stays 0). ingress_discards has
    // no reason left (NUM_DISCARD_REASONS: all 8 used) and no index for such a
    // port (port * 8 + reason, ports 0..63): its own counter.
    Counter<bit<64>, tna_index_t>(TNA_PIPES, CounterType_t.PACKETS_AND_BYTES) other_pipe_discards;
    Hash<tna_index_t>(HashAlgorithm_t.IDENTITY) other_pipe_index_hash;

    // The parser-decided half of ingress_checks' pass entry, in stage 0: one
    // flag for the AQM's gateway (with routed, the port and aqm_applied), so
    // that the AQM does not wait for ingress_checks' own stage.
    action set_forwardable() { md.ipv4_forwardable = true; }
    action not_forwardable() { md.ipv4_forwardable = false; }
    @hidden table ipv4_forwardable {
        key = {
            ig_prsr_md.parser_err : ternary;
            hdr.pkt.ipv4.isValid() : ternary;
            hdr.pkt.ipv4.version : ternary;
            hdr.pkt.ipv4.ihl : ternary;
            hdr.pkt.upta_option.isValid() : ternary;   // IHL 6 with P-UPTA's option only
            md.checksum_error : ternary;
            md.ipv4_too_short : ternary;
            // the TTL itself, read in routing's stage before its decrement
            // (ttl_check's flag would cost the AQM's gate a stage)
            hdr.pkt.ipv4.ttl : ternary;
            // IPv6: a parsed fixed header of version 6, at most two extension
            // headers, hop limit > 1 (the parser's flags)
            md.is_ipv6 : ternary;          // hdr.pkt.ipv6 parsed (never without MMAQM_HAS_IPV6)
            md.ipv6_ext_limit : ternary;
            md.ipv6_bad_version : ternary;
            md.ipv6_hop_expired : ternary;
        }
        actions = { set_forwardable; not_forwardable; }
        const entries = {
            (0, false, _, _, _, _, _, _, true, false, false, false) : set_forwardable();   // IPv6
            (_, _, _, _, _, _, _, 8w0x0 &&& 8w0xFE, _, _, _, _) : not_forwardable();   // ttl <= 1
            (0, true, 4, IPV4_MIN_IHL, _, false, false, _, _, _, _, _) : set_forwardable();
            (0, true, 4, _, true, false, false, _, _, _, _, _) : set_forwardable();
        }
        const default_action = not_forwardable();
        size = 4;
    }
    // ttl <= 1 (v1model's ingress test), in routing's stage: a table reads
    // the stage's input, before routing's decrement. (An IPv6 frame's flag is
    // an invalid header's: no IPv6 entry of ingress_checks reads it.)
    action set_ttl_expired() { md.ttl_expired = true; }
    @hidden table ttl_check {
        key = { hdr.pkt.ipv4.ttl : ternary; }
        actions = { set_ttl_expired; NoAction; }
        const entries = {
            8w0 &&& 8w0xFE : set_ttl_expired();   // 0, 1
        }
        const default_action = NoAction();
        size = 1;
    }
#ifdef MMAQM_TNA_FRED
    // fred_tna.p4's slot: port * TNA_FRED_SLOTS_PER_PORT + (crc32 & 0x7FF), the
    // concatenation as an identity hash, beside routing's stage
    Hash<tna_index_t>(HashAlgorithm_t.IDENTITY) fred_slot_hash;
    action take_fred_slot() {
        md.base.fred_slot_index = fred_slot_hash.get({ md.base.port_index[5:0],
                                                       md.flow_signature[10:0] });
    }
    @hidden table fred_slot {
        actions = { take_fred_slot; }
        const default_action = take_fred_slot();
        size = 1;
    }
#endif
    // The classifier's family-independent keys (v1model's meta.ip_proto and
    // meta.dscp, which its parser sets) and the ECN bits, copied in stage 0:
    // a Tofino parser writes a field once on a path (IPv6's protocol is the
    // next header of the last extension header parsed), and a parser copy
    // keeps the bits' place in their byte (IPv6's traffic class sits
    // elsewhere than IPv4's TOS).
    action ipv4_keys() {
#ifdef MMAQM_HAS_IPV6
        md.base.ip_proto = hdr.pkt.ipv4.protocol;
        md.base.dscp = hdr.pkt.ipv4.dscp;
#endif
        md.ip_ecn = hdr.pkt.ipv4.ecn;
    }
#ifdef MMAQM_HAS_IPV6
    action ipv6_keys0() {
        md.base.ip_proto = hdr.pkt.ipv6.next_hdr;
        md.base.dscp = hdr.pkt.ipv6.dscp;
        md.ip_ecn = hdr.pkt.ipv6.ecn;
    }
    action ipv6_keys1() {
        md.base.ip_proto = hdr.pkt.ipv6_ext1.next_hdr;
        md.base.dscp = hdr.pkt.ipv6.dscp;
        md.ip_ecn = hdr.pkt.ipv6.ecn;
    }
    action ipv6_keys2() {
        md.base.ip_proto = hdr.pkt.ipv6_ext2.next_hdr;
        md.base.dscp = hdr.pkt.ipv6.dscp;
        md.ip_ecn = hdr.pkt.ipv6.ecn;
    }
#endif
#ifdef MMAQM_HAS_IPV6
    @hidden table ip_keys {
        key = {
            hdr.pkt.ipv4.isValid() : exact;
            hdr.pkt.ipv6.isValid() : exact;
            hdr.pkt.ipv6_ext1.isValid() : exact;
            hdr.pkt.ipv6_ext2.isValid() : exact;
        }
        actions = { ipv4_keys; ipv6_keys0; ipv6_keys1; ipv6_keys2; NoAction; }
        const entries = {
            (true, false, false, false) : ipv4_keys();
            (false, true, false, false) : ipv6_keys0();
            (false, true, true, false) : ipv6_keys1();
            (false, true, true, true) : ipv6_keys2();
        }
        const default_action = NoAction();
        size = 4;
    }
#else
    @hidden table ip_keys {
        actions = { ipv4_keys; }
        const default_action = ipv4_keys();
        size = 1;
    }
#endif

    bit<8> discard_reason = 0;
    bool discarded = false;

    action discard(bit<8> reason) {
        ig_dprsr_md.drop_ctl = 1;
        discarded = true;
        discard_reason = reason;
    }
    action pass() {}

    // parser.p4's verify()s and main.p4's ingress discards, in v1model's order,
    // as one decision list (the first entry that matches wins; each entry
    // tests what the ones above it let through): a chain of gateways would
    // hold the stages that the AQM's tables come after.
    @hidden table ingress_checks {
        key = {
            ig_prsr_md.parser_err : ternary;
            hdr.pkt.ipv4.isValid() : ternary;
            hdr.pkt.ipv4.version : ternary;
            hdr.pkt.ipv4.ihl : ternary;
            hdr.pkt.upta_option.isValid() : ternary;   // IHL 6 with P-UPTA's option only
            md.checksum_error : ternary;
            md.ipv4_too_short : ternary;     // total_len < IPV4_MIN_HEADER_BYTES (parser)
            md.ttl_expired : ternary;        // ttl <= 1 (ttl_check)
            md.base.routed : ternary;
            md.base.port_index[8:6] : ternary;   // port_index < NUM_PORTS (a 9-bit port)
            md.base.aqm_applied : ternary;
            // IPv6 (v1model main.p4's IPv6 tests; the payload length against the
            // frame is egress's, as IPv4's total length)
            md.is_ipv6 : ternary;          // hdr.pkt.ipv6 parsed (never without MMAQM_HAS_IPV6)
            md.ipv6_ext_limit : ternary;
            md.ipv6_bad_version : ternary;
            md.ipv6_hop_expired : ternary;
        }
        actions = { discard; pass; }
        const entries = {
            // a third IPv6 extension header (the parser stops there)
            (_, _, _, _, _, _, _, _, _, _, _, _, true, _, _) : discard(DISCARD_IPV6_EXT_LIMIT);
            // IPv6, in v1model's order (pass, then each reason outward)
            (0, false, _, _, _, _, _, _, true, 0, true, true, false, false, false) : pass();
            (0, false, _, _, _, _, _, _, true, _, _, true, false, false, false) : discard(DISCARD_NO_POLICY);
            (0, false, _, _, _, _, _, _, _, _, _, true, false, false, false) : discard(DISCARD_NO_ROUTE);
            (0, false, _, _, _, _, _, _, _, _, _, true, false, false, _) : discard(DISCARD_TTL_EXPIRED);
            (0, false, _, _, _, _, _, _, _, _, _, true, false, _, _) : discard(DISCARD_MALFORMED);   // version != 6
            (0, true, 4, IPV4_MIN_IHL, _, false, false, false, true, 0, true, _, _, _, _) : pass();
            (0, true, 4, _, true, false, false, false, true, 0, true, _, _, _, _) : pass();
            (0, true, 4, IPV4_MIN_IHL, _, false, false, false, true, _, _, _, _, _, _) : discard(DISCARD_NO_POLICY);
            (0, true, 4, _, true, false, false, false, true, _, _, _, _, _, _) : discard(DISCARD_NO_POLICY);
            (0, true, 4, IPV4_MIN_IHL, _, false, false, false, _, _, _, _, _, _, _) : discard(DISCARD_NO_ROUTE);
            (0, true, 4, _, true, false, false, false, _, _, _, _, _, _, _) : discard(DISCARD_NO_ROUTE);
            (0, true, 4, IPV4_MIN_IHL, _, false, false, _, _, _, _, _, _, _, _) : discard(DISCARD_TTL_EXPIRED);
            (0, true, 4, _, true, false, false, _, _, _, _, _, _, _, _) : discard(DISCARD_TTL_EXPIRED);
            // The frame-length half of v1model's test needs the packet length,
            // which Tofino's ingress does not have: egress checks it.
            (0, true, 4, IPV4_MIN_IHL, _, false, _, _, _, _, _, _, _, _, _) : discard(DISCARD_MALFORMED);
            (0, true, 4, _, true, false, _, _, _, _, _, _, _, _, _) : discard(DISCARD_MALFORMED);
            (0, true, 4, IPV4_MIN_IHL, _, _, _, _, _, _, _, _, _, _, _) : discard(DISCARD_BAD_CHECKSUM);
            (0, true, 4, _, true, _, _, _, _, _, _, _, _, _, _) : discard(DISCARD_BAD_CHECKSUM);
            (0, true, 4, 4w0x6 &&& 4w0xE, _, _, _, _, _, _, _, _, _, _, _) : discard(DISCARD_IPV4_OPTIONS);  // 6, 7
            (0, true, 4, 4w0x8 &&& 4w0x8, _, _, _, _, _, _, _, _, _, _, _) : discard(DISCARD_IPV4_OPTIONS);  // 8..15
            (0, true, _, _, _, _, _, _, _, _, _, _, _, _, _) : discard(DISCARD_MALFORMED);  // version, ihl < 5
            (0, _, _, _, _, _, _, _, _, _, _, _, _, _, _) : discard(DISCARD_NOT_IPV4);
        }
        const default_action = discard(DISCARD_MALFORMED);                  // a parser error
        size = 22;
    }

    apply {
        // A frame from another pipe's port: counted here, discarded by
        // ingress_checks (no IPv4 header parsed). First in the control: it
        // depends on the parser only, and no table waits for it.
        if (md.other_pipe) {
            other_pipe_discards.count(other_pipe_index_hash.get({ ig_intr_md.ingress_port[8:7] }));
        }
        // TnaAqm is applied at one place only: Tofino places each table once, so
        // a second apply (one for reports, one for packets) cannot compile.
        // The classifier reads headers only: applied to every packet, it shares a
        // stage with routing instead of following it (Tofino stages, docs/tofino.md).
        ip_keys.apply();
        classifier.apply(hdr.pkt, md.base);
        ttl_check.apply();
        ipv4_forwardable.apply();
        flow_signature.apply(hdr.pkt, md, ig_prsr_md.global_tstamp);
#ifdef MMAQM_TNA_UPTA
        upta_lookup.apply(hdr.pkt, md, ig_intr_md.ingress_port);   // C-UPTA and BFD (upta_tna.p4)
#endif
        if (md.is_report) {
            // A cancel (resubmitted) or a departure report (recirculation port).
            md.base.port_index = (tna_index_t)hdr.report.port_index;
            // port * CLASS_SLOTS + class
            md.base.class_index = report_class_index_hash.get({ hdr.report.port_index,
                                                                hdr.report.class_id });
            ig_dprsr_md.drop_ctl = 1;
#ifdef MMAQM_TNA_FRED
            md.base.fred_slot_index = hdr.report.fred_slot_index;
#endif
        } else if (hdr.pkt.ipv4.isValid() || md.is_ipv6) {
            // Routing (ipv4_lpm or ipv6_lpm) and the port's policy for every IP packet, before the
            // discard tests are decided (ingress_checks): a packet they discard
            // is dropped whatever routing wrote.
            routing.apply(hdr.pkt, md.base, ig_tm_md);
#ifdef MMAQM_TNA_FRED
            fred_slot.apply();
#endif
        }
#ifdef MMAQM_TNA_FRED
        // the port's empty-epoch (fred_tna.p4), beside the slot's hash: the
        // per-flow qlen in the next stage reads it
        if (md.is_report || md.base.port_index[8:6] == 0) {
            fred_epoch.apply(md);
        }
#endif
#ifdef MMAQM_TNA_UPTA
        // The BFD endpoint's decision (a QoS Probe or Report that passes the
        // parser's ingress tests; v1model: after the ingress discards, before
        // routing), beside the policy
        if (!md.is_report && md.ipv4_forwardable && hdr.pkt.bfd.isValid()
                && hdr.pkt.ipv4.frag_offset == 0) {
            bfd_endpoint.apply(hdr.pkt, md, ig_dprsr_md);
        }
#endif
        if (md.base.routed && md.base.port_index[8:6] == 0) {   // port_index < NUM_PORTS
            policy.apply(md);
        }
#ifdef MMAQM_TNA_UPTA
        // upta_tna.p4's stages before the AQM's: applied here, in the order of
        // their stages (Tofino 1 keeps the control's order), the AQM's part
        // under the AQM's gate (below)
        // (IPv4 only: an IPv6 packet on a UPTA port gets the queue limit only,
        // v1model upta.p4's upta_ipv6_fifo)
        if (!md.is_report && md.ipv4_forwardable && md.base.routed
                && md.base.port_index[8:6] == 0 && md.base.aqm_applied
                && hdr.pkt.ipv4.isValid()) {
            upta_slot.apply(hdr.pkt, md);
        }
        // (after the slot's tables in the control: they share its stage)
        if (!md.is_report && hdr.pkt.ipv4.isValid()) {
            upta_path.apply(hdr.pkt, md, ig_intr_md.ingress_port);
        }
        if (!md.is_report && md.ipv4_forwardable && md.base.routed
                && md.base.port_index[8:6] == 0 && md.base.aqm_applied
                && hdr.pkt.ipv4.isValid()) {
            upta_flow.apply(hdr.pkt, md);
        }
#endif
        // The ingress discards and their reasons (a table of its own stage, beside
        // the AQM's first tables; counted below, after the AQM)
        if (!md.is_report) {
            ingress_checks.apply();
        }
        // A packet that passes every ingress test (ingress_checks' pass entry, as
        // one gateway on the stage-0 flag and the two tables' outputs)
        if (!md.is_report && md.ipv4_forwardable && md.base.routed
                && md.base.port_index[8:6] == 0 && md.base.aqm_applied) {
            // the accounting record's fixed fields (tna_types.p4), set while
            // the AQM runs; the decision fills in the rest below
            bit<8> class_bits = (bit<8>)md.base.class_id;
            hdr.report.setValid();
            hdr.report.port_index = md.base.port_index[5:0];
            hdr.report.class_id = class_bits[1:0];
            hdr.report.admitted = 0;
            hdr.report.cut_in = 0;
            hdr.report.fred_admitted = 0;
            hdr.report.chips_on = 0;
            hdr.report.chips_off = 0;
            hdr.report.chips_congested = 0;
            hdr.report.counted = 0;
            hdr.report.queue_empty = 0;
            hdr.report._pad2 = 0;
#ifdef MMAQM_TNA_FRED
            // fred_tna.p4 counts every arrival in its flow's slot: every report
            // (a departure or a cancel) undoes one
            hdr.report.fred_admitted = 1;
            hdr.report.fred_slot_index = md.base.fred_slot_index;
#else
            hdr.report.fred_slot_index = 0;
#endif
        }
        // (a BFD message the endpoint consumed is dropped there: no AQM)
        if (md.is_report || (md.ipv4_forwardable && md.base.routed
                             && md.base.port_index[8:6] == 0 && md.base.aqm_applied
                             && !md.base.bfd_consumed)) {
            // (TnaAqm applies the flow report too: see there)
            aqm.apply(hdr.pkt, hdr.report, md, ig_dprsr_md, ig_tm_md);
        }
        // The ingress discards, counted as on v1model; after the AQM in the
        // control (Tofino 1 places tables in its order; nothing of the AQM
        // reads them)
        if (!md.is_report) {
            // (v1model's endpoint consumes a BFD message before routing)
            if (discarded && ig_intr_md.ingress_port < (PortId_t)NUM_PORTS
                    && !md.base.bfd_consumed) {
                // port * NUM_DISCARD_REASONS (8) + reason, as on v1model
                ingress_discards.count(discard_index_hash.get({ ig_intr_md.ingress_port[5:0],
                                                                discard_reason[2:0] }));
            }
        }

        if (!md.is_report && hdr.report.isValid()) {   // a packet the AQM decided
            // The accounting record, decided: a cancel, a drop, or the bridged
            // header of an admitted packet (its fixed fields were set above).
            if (md.base.aqm_drop) {
                // reason * 256 + class_index (v1model: class_index * NUM_DROP_REASONS
                // + reason): tna_types.p4 TNA_DROP_REASON_SLOTS
                queue_drops.count(drop_index_hash.get({ md.base.drop_reason,
                                                        md.base.class_index[7:0] }));
                if (md.queue_scaled[0:0] == 0) {   // occupancy counted it (TNA_NOT_COUNTED)
                    // occupancy_tna.p4: undo the arrival's increments
                    hdr.report.pkt_type = TNA_PKT_CANCEL;
                    hdr.report.counted = 1;
                    ig_dprsr_md.resubmit_type = TNA_RESUBMIT_CANCEL;
                } else {
#ifdef MMAQM_TNA_FRED
                    // fred_tna.p4 counted the flow's qlen all the same
                    hdr.report.pkt_type = TNA_PKT_CANCEL;
                    ig_dprsr_md.resubmit_type = TNA_RESUBMIT_CANCEL;
#else
                    ig_dprsr_md.drop_ctl = 1;
#endif
                }
            } else {
                queue_admits.count(md.base.class_index);
                if (md.base.ecn_mark) {
                    queue_ecn_marks.count(ecn_index_hash.get({ md.base.drop_reason,
                                                               md.base.class_index[7:0] }));
#ifdef MMAQM_HAS_IPV6
                    if (hdr.pkt.ipv6.isValid()) {
                        hdr.pkt.ipv6.ecn = ECN_CE;
                    } else
#endif
                    {
                        hdr.pkt.ipv4.ecn = ECN_CE;
                    }
                }
                // to egress, which reports the departure (the flag bits share a
                // container: written by one action or the other, not in sequence)
                if (md.base.cut_in) {
                    // chips.p4: the clone that holds the FIFO slot
                    hdr.report.pkt_type = TNA_PKT_BRIDGED;
                    hdr.report.admitted = 1;
                    hdr.report.cut_in = 1;
                    md.slot_pkt_type = TNA_PKT_SLOT;
                    ig_dprsr_md.mirror_type = TNA_MIRROR_SLOT;
                    ig_tm_md.qid = TNA_QID_CUT_IN;     // the cut-in queue
                } else {
                    hdr.report.pkt_type = TNA_PKT_BRIDGED;
                    hdr.report.admitted = 1;
                }
            }
        }
    }
}

control TnaIngressDeparser(packet_out pkt, inout tna_ingress_headers_t hdr,
                           in tna_ingress_metadata_t md,
                           in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_checksum;
#ifdef MMAQM_TNA_UPTA
    Checksum() icmp_checksum;
#endif
    Digest<flow_digest_t>(TNA_DIGEST_FLOW) flow_digest;
    // Mirror() with the mirror_type test in the deparser, and the field list
    // spelled out: bf-p4c (v1.2.5.16) takes a mirror header's fields only from a
    // list expression, and its session id only from a PHV field.
    Mirror() slot_mirror;
    Resubmit(TNA_RESUBMIT_CANCEL) cancel;

    apply {
        if (hdr.pkt.ipv4.isValid()) {
            hdr.pkt.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.pkt.ipv4.version, hdr.pkt.ipv4.ihl, hdr.pkt.ipv4.dscp, hdr.pkt.ipv4.ecn,
                hdr.pkt.ipv4.total_len, hdr.pkt.ipv4.identification, hdr.pkt.ipv4.flags,
                hdr.pkt.ipv4.frag_offset, hdr.pkt.ipv4.ttl, hdr.pkt.ipv4.protocol,
                hdr.pkt.ipv4.src_addr, hdr.pkt.ipv4.dst_addr,
                // the P-UPTA option, when parsed (an invalid header adds nothing)
                hdr.pkt.upta_option.opt_type, hdr.pkt.upta_option.opt_len,
                hdr.pkt.upta_option.q16 });
        }
#ifdef MMAQM_TNA_UPTA
        // BFD: a lowered probe or an answer (upta_tna.p4); the specs an answer
        // invalidated add nothing
        if (md.bfd_rewritten) {
            hdr.pkt.icmp.checksum = icmp_checksum.update({
                hdr.pkt.icmp.icmp_type, hdr.pkt.icmp.icmp_code,
                hdr.pkt.bfd.identifier, hdr.pkt.bfd.sequence, hdr.pkt.bfd.fs_u, hdr.pkt.bfd.fs_i,
                hdr.pkt.bfd_specs[0], hdr.pkt.bfd_specs[1],
                hdr.pkt.bfd_specs[2], hdr.pkt.bfd_specs[3] });
        }
#endif
        if (ig_dprsr_md.digest_type == TNA_DIGEST_FLOW) {
            flow_digest.pack(md.digest);
        }
        if (ig_dprsr_md.mirror_type == TNA_MIRROR_SLOT) {
            slot_mirror.emit<tna_report_h>(md.mirror_session,
                {md.slot_pkt_type, hdr.report.port_index, hdr.report.class_id,
                 hdr.report.admitted, hdr.report.cut_in, hdr.report.fred_admitted,
                 hdr.report.chips_on, hdr.report.chips_off, hdr.report.chips_congested,
                 hdr.report.counted, hdr.report.queue_empty, hdr.report._pad2, hdr.report.fred_slot_index});
        }
        if (ig_dprsr_md.resubmit_type == TNA_RESUBMIT_CANCEL) {
            cancel.emit<tna_report_h>(hdr.report);
        }
        // every header but the controller's packet_out (UPTA build), which stays behind
        pkt.emit(hdr.report);
        pkt.emit(hdr.pkt);
    }
}

// ---------------------------------------------------------------- egress
// Three kinds of packet: a data packet (bridged header in front), a ChIPS slot
// clone (mirror header SLOT, on the data port), and a report copy on its way to
// the recirculation port (mirror header DEPARTURE or SLOT).
parser TnaEgressParser(packet_in pkt, out tna_egress_headers_t hdr,
                       out tna_egress_metadata_t md,
                       out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridged);
        transition select(hdr.bridged.pkt_type) {
            TNA_PKT_BRIDGED: parse_ethernet;
            default: accept;
        }
    }

    state parse_ethernet {
        pkt.extract(hdr.pkt.ethernet);
        transition select(hdr.pkt.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
#ifdef MMAQM_HAS_IPV6
            ETHERTYPE_IPV6: parse_ipv6;
#endif
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.pkt.ipv4);
        transition accept;
    }

#ifdef MMAQM_HAS_IPV6
    state parse_ipv6 {
        pkt.extract(hdr.pkt.ipv6);
        transition accept;
    }
#endif
}

control TnaEgress(inout tna_egress_headers_t hdr,
                  inout tna_egress_metadata_t md,
                  in egress_intrinsic_metadata_t eg_intr_md,
                  in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                  inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                  inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    // v1model discards a frame shorter than its IPv4 total length in ingress;
    // Tofino knows the length in egress only. Per egress port.
    Counter<bit<64>, tna_index_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) truncated_discards;
    // (Ethernet + total_len) - pkt_length, saturating: > 0 when the frame is
    // short. Two dependent operations: two actions, in two tables.
    bit<16> frame_expected_bytes;
    bit<16> frame_short_bytes;
    action take_frame_expected() {
        frame_expected_bytes = hdr.pkt.ipv4.total_len + (bit<16>)ETHERNET_HEADER_BYTES;
    }
#ifdef MMAQM_HAS_IPV6
    // IPv6: Ethernet + the fixed header + payload_len (v1model's test)
    action take_frame_expected6() {
        frame_expected_bytes = hdr.pkt.ipv6.payload_len
                               + (bit<16>)(IPV6_HEADER_BYTES + ETHERNET_HEADER_BYTES);
    }
#endif
    action take_frame_short() {
        frame_short_bytes = frame_expected_bytes |-| eg_intr_md.pkt_length;
    }
#ifdef MMAQM_HAS_IPV6
    @hidden table frame_expected {
        key = { hdr.pkt.ipv6.isValid() : exact; }
        actions = { take_frame_expected; take_frame_expected6; }
        const entries = { true : take_frame_expected6(); }
        const default_action = take_frame_expected();
        size = 2;
    }
#else
    @hidden table frame_expected {
        actions = { take_frame_expected; }
        const default_action = take_frame_expected();
        size = 1;
    }
#endif
    @hidden table frame_length_check {
        actions = { take_frame_short; }
        const default_action = take_frame_short();
        size = 1;
    }

    apply {
        if (eg_intr_md.egress_port == TNA_RECIRC_PORT) {
            // a report copy: leaves as it is (the session truncates it)
        } else if (hdr.bridged.pkt_type == TNA_PKT_SLOT) {
            // the FIFO slot of a cut-in packet left: report it, drop the clone
            md.report = hdr.bridged;
            md.mirror_session = TNA_REPORT_SESSION;
            eg_dprsr_md.mirror_type = TNA_MIRROR_REPORT;
            eg_dprsr_md.drop_ctl = 1;
            // the FIFO (qid 0) is empty behind it: the counts heal (occupancy_tna.p4)
            if (eg_intr_md.deq_qdepth == 0) {
                md.report.queue_empty = 1;
            }
        } else if (hdr.bridged.pkt_type == TNA_PKT_BRIDGED) {
            // main.p4's MmaqmEgress: an admitted packet left the queue
            md.report = hdr.bridged;
            md.report.pkt_type = TNA_PKT_DEPARTURE;
            md.mirror_session = TNA_REPORT_SESSION;
            eg_dprsr_md.mirror_type = TNA_MIRROR_REPORT;
            // a FIFO (qid 0) departure that leaves its queue empty: the counts
            // heal (occupancy_tna.p4). A cut-in packet's (qid 1) never does.
            if (eg_intr_md.deq_qdepth == 0 && md.report.cut_in == 0) {
                md.report.queue_empty = 1;
            }
            hdr.bridged.setInvalid();
            // frame shorter than Ethernet + total_len: a gateway compares a field
            // with a constant only, so the difference is taken first (saturating)
            frame_expected.apply();
            frame_length_check.apply();
#ifdef MMAQM_HAS_IPV6
            if ((hdr.pkt.ipv4.isValid() || hdr.pkt.ipv6.isValid()) && frame_short_bytes != 0) {
#else
            if (hdr.pkt.ipv4.isValid() && frame_short_bytes != 0) {
#endif
                eg_dprsr_md.drop_ctl = 1;
                truncated_discards.count((tna_index_t)md.report.port_index);
            }
        }
    }
}

control TnaEgressDeparser(packet_out pkt, inout tna_egress_headers_t hdr,
                          in tna_egress_metadata_t md,
                          in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Mirror() report_mirror;   // as in TnaIngressDeparser

    apply {
        if (eg_dprsr_md.mirror_type == TNA_MIRROR_REPORT) {
            report_mirror.emit<tna_report_h>(md.mirror_session,
                {md.report.pkt_type, md.report.port_index, md.report.class_id,
                 md.report.admitted, md.report.cut_in, md.report.fred_admitted,
                 md.report.chips_on, md.report.chips_off, md.report.chips_congested,
                 md.report.counted, md.report.queue_empty, md.report._pad2, md.report.fred_slot_index});
        }
        pkt.emit(hdr);
    }
}

Pipeline(TnaIngressParser(), TnaIngress(), TnaIngressDeparser(),
         TnaEgressParser(), TnaEgress(), TnaEgressDeparser()) pipe;
Switch(pipe) main;
