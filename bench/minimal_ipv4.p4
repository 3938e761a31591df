// bench baseline: the smallest useful v1model IPv4 router.
//
// Parse Ethernet + IPv4, one LPM table whose action sets the egress port,
// rewrites both MACs and decrements the TTL; the IPv4 checksum is verified
// and recomputed. Nothing else: no classifier, no registers, no counters, no
// digests. bench/run_bench.py measures BMv2's packet rate through this
// program and through the mmaqm program side by side (see bench/README.md).
//
// The table, action and parameter names equal those of p4src/shared/routing.p4
// (ipv4_lpm / ipv4_dst / route(port, src_mac, dst_mac)), so the project's
// SwitchDriver.install_route writes routes into both programs.
#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_IPV4 = 0x0800;

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
}

struct metadata_t {}

parser BenchParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
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
        transition accept;
    }
}

control BenchVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control BenchIngress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
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
        size = 1024;
    }

    apply {
        // v1model leaves egress_spec at 0: drop unless a route says otherwise.
        mark_to_drop(standard_metadata);
        if (hdr.ipv4.isValid() && standard_metadata.checksum_error == 0 && hdr.ipv4.ttl > 1) {
            ipv4_lpm.apply();
        }
    }
}

control BenchEgress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    apply {}
}

control BenchComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control BenchDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(BenchParser(), BenchVerifyChecksum(), BenchIngress(), BenchEgress(),
         BenchComputeChecksum(), BenchDeparser()) main;
