// IPv4 LPM routing: next-hop MAC, egress port, TTL decrement.
// The IPv4 checksum is recomputed in MmaqmComputeChecksum.
// Neighbours are static: the controller writes the next-hop MAC into each route.
#ifndef MMAQM_ROUTING_P4
#define MMAQM_ROUTING_P4

#include "headers.p4"

control Routing(inout headers_t hdr,
                inout local_metadata_t meta,
                inout standard_metadata_t standard_metadata,
                out bool hit) {
    action route(bit<9> port, bit<48> src_mac, bit<48> dst_mac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    action route_miss() {}

    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr : lpm @name("ipv4_dst"); }
        actions = { route; @defaultonly route_miss; }
        const default_action = route_miss();
        size = ROUTE_TABLE_SIZE;
    }

    apply {
        hit = ipv4_lpm.apply().hit;
    }
}

#endif
