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
        key = { hdr.ipv4.dst_addr : lpm @name("ipv4_dst"); }
        actions = { route; @defaultonly route_miss; }
        const default_action = route_miss();
        size = ROUTE_TABLE_SIZE;
    }

#ifdef MMAQM_ROUTE_ANSWERS
    // Tofino's UPTA build (p4src/tna/main.p4): this router's own addresses
    // (upta.p4's upta_local_addr: same name, key and action), looked up beside
    // routing. A packet to one is routed on route_dst_addr (the parser's: a QoS
    // Probe's source, where the answer goes; else the destination) by
    // ipv4_answer_lpm, which holds ipv4_lpm's entries (the controller writes
    // each route to both), so that routing stays in the first stage: a
    // table's hit predicates the next in its stage, a key written by a
    // table's action would wait a stage.
    action upta_local() { meta.bfd_to_local = true; }

    table upta_local_addr {
        key = { hdr.ipv4.dst_addr : exact @name("addr"); }
        actions = { upta_local; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 4;
    }

    table ipv4_answer_lpm {
        key = { meta.route_dst_addr : lpm @name("ipv4_dst"); }
        actions = { route; @defaultonly route_miss; }
        const default_action = route_miss();
        size = ROUTE_TABLE_SIZE;
    }
#endif

    apply {
#ifdef MMAQM_HAS_IPV6
        if (hdr.ipv6.isValid()) {
            ipv6_lpm.apply();
        } else
#endif
        {
#ifdef MMAQM_ROUTE_ANSWERS
            if (upta_local_addr.apply().hit) {
                ipv4_answer_lpm.apply();
            } else
#endif
            {
                ipv4_lpm.apply();
            }
        }
    }
}

#endif
