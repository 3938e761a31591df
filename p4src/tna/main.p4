// mmaqm: multimedia-aware active queue management, Tofino (TNA) top file.
// Wires the shared controls of p4src/include (Routing, Classifier, the types
// of defines.p4 and headers.p4) and the TNA-specific ones of this directory
// where Tofino cannot do what BMv2 does; README.md "Tofino (TNA)" lists every
// difference. One build carries one algorithm: compile with
// -DMMAQM_TNA_<ALGORITHM> (make build-tna builds them all).
#include <core.p4>
#include <tna.p4>

// bf-p4c: metadata fields a packet's path does not write read as 0, as
// v1model's do (the parser sets the flags it tests explicitly anyway).
@pa_auto_init_metadata

// Routing (p4src/include/routing.p4) writes Tofino's unicast egress port.
#define MMAQM_FORWARD_MD_T ingress_intrinsic_metadata_for_tm_t
#define MMAQM_EGRESS_PORT(md) md.ucast_egress_port

#include "../include/defines.p4"
#include "../include/headers.p4"
#include "../include/routing.p4"
#include "../include/classifier.p4"
#include "tna_types.p4"
#include "aqm_tna.p4"
#include "flow_report_tna.p4"

// ---------------------------------------------------------------- ingress
// The header states of parser.p4; verify() becomes discards in ingress, and
// the IPv4 checksum is the parser's Checksum extern (fed in the extracting state).
parser TnaIngressParser(packet_in pkt, out tna_ingress_headers_t hdr,
                        out tna_ingress_metadata_t md,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    Checksum() ipv4_checksum;

    state start {
        pkt.extract(ig_intr_md);
        md.is_report = false;
        md.checksum_error = false;
        md.counted = false;
        md.base.routed = false;
        md.base.aqm_applied = false;
        md.base.aqm_drop = false;
        md.base.ecn_mark = false;
        md.base.admitted = false;
        md.base.cut_in = false;
        md.base.fred_admitted = false;
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
            default: parse_ethernet;
        }
    }

    state parse_departure_report {
        pkt.extract(hdr.report);
        md.is_report = true;
        transition accept;
    }

    state parse_ethernet {
        pkt.extract(hdr.pkt.ethernet);
        transition select(hdr.pkt.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.pkt.ipv4);
        ipv4_checksum.add(hdr.pkt.ipv4);
        md.checksum_error = ipv4_checksum.verify();
        transition select(hdr.pkt.ipv4.ihl, hdr.pkt.ipv4.frag_offset, hdr.pkt.ipv4.protocol) {
            (IPV4_MIN_IHL, 0, IP_PROTO_TCP): parse_tcp;
            (IPV4_MIN_IHL, 0, IP_PROTO_UDP): parse_udp;
            (IPV4_MIN_IHL, 0, IP_PROTO_ICMP): parse_icmp;
            default: accept;
        }
    }

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
        transition accept;
    }
}

control TnaIngress(inout tna_ingress_headers_t hdr,
                   inout tna_ingress_metadata_t md,
                   in ingress_intrinsic_metadata_t ig_intr_md,
                   in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Routing() routing;
    Classifier() classifier;
    TnaAqm() aqm;
    TnaFlowReport() flow_report;

    // main.p4's counters; indexes as on v1model.
    Counter<bit<64>, tna_index_t>(NUM_PORTS * NUM_DISCARD_REASONS,
                                  CounterType_t.PACKETS_AND_BYTES) ingress_discards;
    Counter<bit<64>, tna_index_t>(NUM_PORTS * CLASS_SLOTS,
                                  CounterType_t.PACKETS_AND_BYTES) queue_admits;
    Counter<bit<64>, tna_index_t>(NUM_PORTS * CLASS_SLOTS * NUM_DROP_REASONS,
                                  CounterType_t.PACKETS_AND_BYTES) queue_drops;
    Counter<bit<64>, tna_index_t>(NUM_PORTS * CLASS_SLOTS * NUM_DROP_REASONS,
                                  CounterType_t.PACKETS_AND_BYTES) queue_ecn_marks;

    bit<8> discard_reason = 0;
    bool discarded = false;

    action discard(bit<8> reason) {
        ig_dprsr_md.drop_ctl = 1;
        discarded = true;
        discard_reason = reason;
    }

    apply {
        if (md.is_report) {
            // A cancel (resubmitted) or a departure report (recirculation port).
            md.report_md = hdr.report;
            md.base.port_index = (tna_index_t)hdr.report.port_index;
            md.base.class_index = ((tna_index_t)hdr.report.port_index << 2)
                                  + (tna_index_t)hdr.report.class_id;
            aqm.apply(hdr.pkt, md, ig_tm_md);
            ig_dprsr_md.drop_ctl = 1;
        } else if (ig_prsr_md.parser_err != 0) {
            discard(DISCARD_MALFORMED);
        } else if (!hdr.pkt.ipv4.isValid()) {
            discard(DISCARD_NOT_IPV4);
        } else if (hdr.pkt.ipv4.version != 4 || hdr.pkt.ipv4.ihl < IPV4_MIN_IHL) {
            discard(DISCARD_MALFORMED);      // parser.p4's verify()s
        } else if (hdr.pkt.ipv4.ihl != IPV4_MIN_IHL) {
            discard(DISCARD_IPV4_OPTIONS);
        } else if (md.checksum_error) {
            discard(DISCARD_BAD_CHECKSUM);
        } else if (hdr.pkt.ipv4.total_len < IPV4_MIN_HEADER_BYTES) {
            // The frame-length half of v1model's test needs the packet length,
            // which Tofino's ingress does not have: egress checks it.
            discard(DISCARD_MALFORMED);
        } else if (hdr.pkt.ipv4.ttl <= 1) {
            discard(DISCARD_TTL_EXPIRED);
        } else {
            routing.apply(hdr.pkt, md.base, ig_tm_md);
            if (!md.base.routed) {
                discard(DISCARD_NO_ROUTE);
            } else if (md.base.port_index >= NUM_PORTS) {
                discard(DISCARD_NO_POLICY);
            } else {
                classifier.apply(hdr.pkt, md.base);
                aqm.apply(hdr.pkt, md, ig_tm_md);
                if (!md.base.aqm_applied) {
                    discard(DISCARD_NO_POLICY);
                } else {
                    tna_index_t drop_index = (md.base.class_index << 3) - md.base.class_index
                                             + (tna_index_t)(bit<8>)md.base.drop_reason;
                    md.report_md.setValid();
                    md.report_md.port_index = (bit<6>)md.base.port_index;
                    md.report_md.class_id = (bit<2>)(bit<8>)md.base.class_id;
                    md.report_md.cut_in = (bit<1>)md.base.cut_in;
                    md.report_md.fred_admitted = (bit<1>)md.base.fred_admitted;
                    md.report_md.fred_slot_index = md.base.fred_slot_index;
                    if (md.base.aqm_drop) {
                        queue_drops.count(drop_index);
                        if (md.counted) {
                            // occupancy_tna.p4: undo the arrival's increments
                            md.report_md.pkt_type = TNA_PKT_CANCEL;
                            ig_dprsr_md.resubmit_type = TNA_RESUBMIT_CANCEL;
                        } else {
                            ig_dprsr_md.drop_ctl = 1;
                        }
                    } else {
                        queue_admits.count(md.base.class_index);
                        if (md.base.ecn_mark) {
                            queue_ecn_marks.count(drop_index);
                            hdr.pkt.ipv4.ecn = ECN_CE;
                        }
                        // to egress, which reports the departure
                        md.report_md.pkt_type = TNA_PKT_BRIDGED;
                        md.report_md.admitted = 1;
                        hdr.report = md.report_md;
                        if (md.base.cut_in) {
                            // chips.p4: the clone that holds the FIFO slot
                            md.report_md.pkt_type = TNA_PKT_SLOT;
                            md.mirror_session = (MirrorId_t)(CHIPS_CLONE_SESSION_BASE
                                                             + md.base.port_index);
                            ig_dprsr_md.mirror_type = TNA_MIRROR_SLOT;
                        }
                    }
                    flow_report.apply(hdr.pkt, md, ig_prsr_md.global_tstamp, ig_dprsr_md);
                }
            }
        }
        if (discarded && ig_intr_md.ingress_port < (PortId_t)NUM_PORTS) {
            ingress_discards.count(((tna_index_t)ig_intr_md.ingress_port << 3)
                                   + (tna_index_t)discard_reason);
        }
    }
}

control TnaIngressDeparser(packet_out pkt, inout tna_ingress_headers_t hdr,
                           in tna_ingress_metadata_t md,
                           in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_checksum;
    Digest<flow_digest_t>(TNA_DIGEST_FLOW) flow_digest;
    Mirror(TNA_MIRROR_SLOT) slot_mirror;
    Resubmit(TNA_RESUBMIT_CANCEL) cancel;

    apply {
        if (hdr.pkt.ipv4.isValid()) {
            hdr.pkt.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.pkt.ipv4.version, hdr.pkt.ipv4.ihl, hdr.pkt.ipv4.dscp, hdr.pkt.ipv4.ecn,
                hdr.pkt.ipv4.total_len, hdr.pkt.ipv4.identification, hdr.pkt.ipv4.flags,
                hdr.pkt.ipv4.frag_offset, hdr.pkt.ipv4.ttl, hdr.pkt.ipv4.protocol,
                hdr.pkt.ipv4.src_addr, hdr.pkt.ipv4.dst_addr });
        }
        if (ig_dprsr_md.digest_type == TNA_DIGEST_FLOW) {
            flow_digest.pack(md.digest);
        }
        if (ig_dprsr_md.mirror_type == TNA_MIRROR_SLOT) {
            slot_mirror.emit<tna_report_h>(md.mirror_session, md.report_md);
        }
        if (ig_dprsr_md.resubmit_type == TNA_RESUBMIT_CANCEL) {
            cancel.emit<tna_report_h>(md.report_md);
        }
        pkt.emit(hdr);
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
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.pkt.ipv4);
        transition accept;
    }
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

    apply {
        if (eg_intr_md.egress_port == TNA_RECIRC_PORT) {
            // a report copy: leaves as it is (the session truncates it)
        } else if (hdr.bridged.pkt_type == TNA_PKT_SLOT) {
            // the FIFO slot of a cut-in packet left: report it, drop the clone
            md.report = hdr.bridged;
            eg_dprsr_md.mirror_type = TNA_MIRROR_REPORT;
            eg_dprsr_md.drop_ctl = 1;
        } else if (hdr.bridged.pkt_type == TNA_PKT_BRIDGED) {
            // main.p4's MmaqmEgress: an admitted packet left the queue
            md.report = hdr.bridged;
            md.report.pkt_type = TNA_PKT_DEPARTURE;
            eg_dprsr_md.mirror_type = TNA_MIRROR_REPORT;
            hdr.bridged.setInvalid();
            if (hdr.pkt.ipv4.isValid()
                    && hdr.pkt.ipv4.total_len + (bit<16>)ETHERNET_HEADER_BYTES
                       > eg_intr_md.pkt_length) {
                eg_dprsr_md.drop_ctl = 1;
                truncated_discards.count((tna_index_t)md.report.port_index);
            }
        }
    }
}

control TnaEgressDeparser(packet_out pkt, inout tna_egress_headers_t hdr,
                          in tna_egress_metadata_t md,
                          in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Mirror(TNA_MIRROR_REPORT) report_mirror;

    apply {
        if (eg_dprsr_md.mirror_type == TNA_MIRROR_REPORT) {
            report_mirror.emit<tna_report_h>(TNA_REPORT_SESSION, md.report);
        }
        pkt.emit(hdr);
    }
}

Pipeline(TnaIngressParser(), TnaIngress(), TnaIngressDeparser(),
         TnaEgressParser(), TnaEgress(), TnaEgressDeparser()) pipe;
Switch(pipe) main;
