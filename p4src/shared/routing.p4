// IPv4 LPM routing: next-hop MAC, egress port, TTL decrement; with
// MMAQM_HAS_IPV6, IPv6 LPM routing likewise (hop limit decrement, RFC 8200 §3).
// The IPv4 checksum is recomputed in MmaqmComputeChecksum.
// Neighbours are static: the controller writes the next-hop MAC into each route.
#ifndef MMAQM_ROUTING_P4
#define MMAQM_ROUTING_P4

#include "headers.p4"

// The target's forwarding metadata and its egress-port field. v1model's by
// default; a target top file defines both before including this file
// (p4src/tna/main.p4: ingress_intrinsic_metadata_for_tm_t.ucast_egress_port).
#ifndef MMAQM_FORWARD_MD_T
#define MMAQM_FORWARD_MD_T standard_metadata_t
#define MMAQM_EGRESS_PORT(md) md.egress_spec
#endif

// The address routed on: the IPv4 destination, unless the top file says
// otherwise (p4src/tna/main.p4's UPTA build: meta.route_dst_addr, so that the
// BFD endpoint's answer, decided after routing's stage, goes back to the probe's source).
#ifndef MMAQM_ROUTE_DST
#define MMAQM_ROUTE_DST(hdr, meta) hdr.ipv4.dst_addr
#endif

// Sets meta.routed on a match. (A flag in metadata, not an out parameter:
// p4c turns an assignment of the table's hit bit into a table of its own.)
control Routing(inout headers_t hdr,
                inout local_metadata_t meta,
                inout MMAQM_FORWARD_MD_T standard_metadata) {
    action route(port_t port, mac_addr_t src_mac, mac_addr_t dst_mac) {
        MMAQM_EGRESS_PORT(standard_metadata) = port;
        meta.routed = true;
        // Saved apart from egress_spec, which mark_to_drop overwrites with the
        // drop port: the flow report must name the routed port.
        meta.routed_port = port;
        meta.port_index = (bit<32>)port;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    action route_miss() {}

#ifdef MMAQM_HAS_IPV6
    action route6(port_t port, mac_addr_t src_mac, mac_addr_t dst_mac) {
        MMAQM_EGRESS_PORT(standard_metadata) = port;
        meta.routed = true;
        meta.routed_port = port;
        meta.port_index = (bit<32>)port;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
    }

    table ipv6_lpm {
        key = { hdr.ipv6.dst_addr : lpm @name("ipv6_dst"); }
        actions = { route6; @defaultonly route_miss; }
        const default_action = route_miss();
        size = ROUTE6_TABLE_SIZE;
    }
#endif

    table ipv4_lpm {
        key = { MMAQM_ROUTE_DST(hdr, meta) : lpm @name("ipv4_dst"); }
        actions = { route; @defaultonly route_miss; }
        const default_action = route_miss();
        size = ROUTE_TABLE_SIZE;
    }

    apply {
#ifdef MMAQM_HAS_IPV6
        if (hdr.ipv6.isValid()) {
            ipv6_lpm.apply();
        } else
#endif
        {
            ipv4_lpm.apply();
        }
    }
}

#endif
