// mmaqm: multimedia-aware active queue management, BMv2 v1model top file.
// Wires the shared controls of p4src/shared and the v1model ones here; see docs/architecture.md.
#include <core.p4>
#include <v1model.p4>

#include "profile.p4"          // before headers.p4: which metadata the program carries
#include "../shared/defines.p4"
#include "../shared/headers.p4"
#include "parser.p4"
#include "../shared/routing.p4"
#include "../shared/classifier.p4"
#include "aqm.p4"
#include "flow_report.p4"

// Discards before the AQM, index ingress_port * NUM_DISCARD_REASONS + reason.
counter(NUM_PORTS * NUM_DISCARD_REASONS, CounterType.packets_and_bytes) ingress_discards;

control MmaqmIngress(inout headers_t hdr,
                     inout local_metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    Routing() routing;
    Classifier() classifier;
    Aqm() aqm;
    FlowReport() flow_report;
#ifdef MMAQM_HAS_UPTA
    UptaEdge() upta_edge;
    BfdEndpoint() bfd_endpoint;
#endif

    // A discard drops the packet and leaves its counter index in meta.discard_index;
    // count_discard, a separate action at the end of apply, counts it. Counted
    // where it is computed, p4c would give each call's index expression a PHV
    // field of its own, which BMv2 resets on every packet.
    action discard(bit<8> reason) {
        mark_to_drop(standard_metadata);
        meta.discard_index = (bit<32>)standard_metadata.ingress_port * NUM_DISCARD_REASONS
                          + (bit<32>)reason;
    }

    // Frames from port numbers >= NUM_PORTS (outside the counter) are dropped uncounted.
    @hidden
    action count_discard() {
        if ((bit<32>)standard_metadata.ingress_port < NUM_PORTS) {
            ingress_discards.count(meta.discard_index);
        }
    }

    apply {
        // Every branch ends in a discard (mark_to_drop) or in the AQM's
        // decision on a routed packet: no packet leaves on v1model's default
        // egress_spec 0 (one table apply per packet fewer than a mark_to_drop here).
        // IPv6 (docs/ipv6.md): the same outcomes by the same reasons, plus
        // DISCARD_IPV6_EXT_LIMIT; the IPv4-only checks guard on hdr.ipv4.
        if (standard_metadata.parser_error != error.NoError) {
            if (standard_metadata.parser_error == error.IPv6ExtensionLimit) {
                discard(DISCARD_IPV6_EXT_LIMIT);
            } else {
                discard(DISCARD_MALFORMED);
            }
        } else if (!hdr.ipv4.isValid() && !hdr.ipv6.isValid()) {
            discard(DISCARD_NOT_IPV4);
        } else if (hdr.ipv4.isValid() && hdr.ipv4.ihl != IPV4_MIN_IHL
                   && !hdr.upta_option.isValid()) {
            discard(DISCARD_IPV4_OPTIONS);
        } else if (standard_metadata.checksum_error == 1) {
            discard(DISCARD_BAD_CHECKSUM);
        } else if (hdr.ipv4.isValid() && (hdr.ipv4.total_len < IPV4_MIN_HEADER_BYTES
                   || (bit<32>)hdr.ipv4.total_len + ETHERNET_HEADER_BYTES
                      > standard_metadata.packet_length)) {
            // IPv4 length field claims more than the frame carries: truncated.
            discard(DISCARD_MALFORMED);
        } else if (hdr.ipv4.isValid() && hdr.ipv4.ttl <= 1) {
            discard(DISCARD_TTL_EXPIRED);
        } else if (hdr.ipv6.isValid() && ((bit<32>)hdr.ipv6.payload_len + IPV6_HEADER_BYTES
                      + ETHERNET_HEADER_BYTES > standard_metadata.packet_length
                   || hdr.ipv6.hop_limit <= 1)) {
            // IPv6's two checks, one conditional for an IPv4 packet. A payload
            // length beyond the frame (truncated) wins over the hop limit.
            if ((bit<32>)hdr.ipv6.payload_len + IPV6_HEADER_BYTES
                + ETHERNET_HEADER_BYTES > standard_metadata.packet_length) {
                discard(DISCARD_MALFORMED);
            } else {
                discard(DISCARD_TTL_EXPIRED);
            }
        } else {
#ifdef MMAQM_HAS_UPTA
            upta_edge.apply(hdr, meta, standard_metadata);   // C-UPTA and BFD (upta.p4)
            if (hdr.bfd.isValid()) {                         // a QoS Probe or Report
                bfd_endpoint.apply(hdr, meta, standard_metadata);
            }
            if (meta.bfd_consumed) {
                mark_to_drop(standard_metadata);   // counted in upta_events by the endpoint
            } else
#endif
            {
                routing.apply(hdr, meta, standard_metadata);
                if (!meta.routed) {
                    discard(DISCARD_NO_ROUTE);
                } else if (meta.port_index >= NUM_PORTS) {
                    discard(DISCARD_NO_POLICY);
                } else {
                    classifier.apply(hdr, meta);
                    aqm.apply(hdr, meta, standard_metadata);
                    if (!meta.aqm_applied) {
                        discard(DISCARD_NO_POLICY);
#ifdef MMAQM_HAS_UPTA
                    } else if (hdr.bfd.isValid()) {
                        // A QoS Probe or Report (upta §5.3): the routers' control
                        // traffic, classified UNTAGGED like any ICMP, counted apart
                        // (the hosts' UNTAGGED arrivals = the class's minus these).
                        // No flow report: it is no flow, and a C-UPTA core digests a
                        // probe's specs (upta.p4; BMv2 sends one digest per packet).
                        bfd_arrivals.count(meta.port_index);
#endif
                    } else {
                        flow_report.apply(hdr, meta, standard_metadata);
                    }
                }
            }
        }
        // Every packet the AQM did not decide on was discarded, except a BFD
        // message the endpoint consumed.
#ifdef MMAQM_HAS_UPTA
        if (!meta.aqm_applied && !meta.bfd_consumed) {
#else
        if (!meta.aqm_applied) {
#endif
            count_discard();
        }
    }
}

control MmaqmEgress(inout headers_t hdr,
                    inout local_metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    // A packet the AQM admitted left the traffic manager's queue (occupancy.p4).
    // Its class count drops now unless it cut in: then its FIFO slot clone
    // releases it (chips_slot_departure). An emptied queue starts an idle period
    // (RED). meta.occupancy held what ingress saw; the reads reuse it.
    // FRED's departure rules (fred.p4 D1, D2) run in the same action, on the
    // occupancy left behind.
    @hidden
    action release_departure() {
        // Decremented in place: an expression argument would cost a PHV field.
        queue_pkts.read(meta.occupancy.queue_pkts, meta.port_index);
        meta.occupancy.queue_pkts = meta.occupancy.queue_pkts - 1;
        queue_pkts.write(meta.port_index, meta.occupancy.queue_pkts);
        if (meta.occupancy.queue_pkts == 0) {
            queue_idle_since_us.write(meta.port_index,
                                      standard_metadata.egress_global_timestamp);
        }
#ifdef MMAQM_HAS_DCBT_CHIPS
        if (!meta.cut_in)
#endif
        {
            class_queue_pkts.read(meta.occupancy.class_pkts, meta.class_index);
            meta.occupancy.class_pkts = meta.occupancy.class_pkts - 1;
            class_queue_pkts.write(meta.class_index, meta.occupancy.class_pkts);
        }
        queue_departures.count(meta.class_index);
#ifdef MMAQM_HAS_FRED
        if (meta.fred_admitted) {
            fred_departure(meta.port_index, meta.fred_slot_index, meta.policy.ewma_shift);
        }
#endif
    }

#ifdef MMAQM_HAS_DCBT_CHIPS
    // The FIFO slot of a cut-in packet (its clone, chips.p4) left: release the
    // packet's virtual FIFO place, and drop the clone.
    @hidden
    action release_cut_in_slot() {
        chips_slot_departure(meta.port_index, meta.class_index);
        mark_to_drop(standard_metadata);
    }
#endif

    apply {
        if (meta.admitted) {
            release_departure();
        }
#ifdef MMAQM_HAS_DCBT_CHIPS
        else if (meta.cut_in) {  // only the clone has cut_in without admitted
            release_cut_in_slot();
        }
#endif
    }
}

// A profile's P4Info names it (pkg_info.name "mmaqm-<NAME>"; the controller
// reads it); the all-in-one program's names none.
#ifdef MMAQM_PROFILE_NAME
@pkginfo(name = MMAQM_PROFILE_NAME)
#endif
V1Switch(MmaqmParser(),
         MmaqmVerifyChecksum(),
         MmaqmIngress(),
         MmaqmEgress(),
         MmaqmComputeChecksum(),
         MmaqmDeparser()) main;
