// bench baseline for IPv6: the smallest useful v1model IPv6 router.
//
// Parse Ethernet + IPv6's fixed header (RFC 8200 §3), one LPM table on the
// destination whose action sets the egress port, rewrites both MACs and
// decrements the hop limit. IPv6 has no header checksum, and the hop limit is
// outside the UDP/TCP pseudo-header, so nothing is recomputed. No extension
// headers, no classifier, no registers, no counters, no digests: the IPv6
// counterpart of minimal_ipv4.p4. bench/run_bench.py measures BMv2's packet
// rate through this program and through the mmaqm program's IPv6 path side by
// side (see bench/README.md).
//
// The table, key, action and parameter names equal those of
// p4src/shared/routing.p4 (ipv6_lpm / ipv6_dst / route6(port, src_mac, dst_mac)),
// so the project's SwitchDriver.install_route writes IPv6 routes into both programs.
#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_IPV6 = 0x86DD;

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv6_t {
    bit<4>   version;
    bit<8>   traffic_class;
    bit<20>  flow_label;
    bit<16>  payload_len;
    bit<8>   next_hdr;
    bit<8>   hop_limit;
    bit<128> src_addr;
    bit<128> dst_addr;
}

struct headers_t {
    ethernet_t ethernet;
    ipv6_t     ipv6;
}

struct metadata_t {}

parser BenchParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }

    state parse_ipv6 {
        packet.extract(hdr.ipv6);
        transition accept;
    }
}

control BenchVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {}
}

control BenchIngress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    action route6(bit<9> port, bit<48> src_mac, bit<48> dst_mac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
    }

    action route_miss() {}

    table ipv6_lpm {
        key = { hdr.ipv6.dst_addr : lpm @name("ipv6_dst"); }
        actions = { route6; @defaultonly route_miss; }
        const default_action = route_miss();
        size = 1024;
    }

    apply {
        // v1model leaves egress_spec at 0: drop unless a route says otherwise.
        mark_to_drop(standard_metadata);
        if (hdr.ipv6.isValid() && hdr.ipv6.version == 6 && hdr.ipv6.hop_limit > 1) {
            ipv6_lpm.apply();
        }
    }
}

control BenchEgress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    apply {}
}

control BenchComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {}
}

control BenchDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv6);
    }
}

V1Switch(BenchParser(), BenchVerifyChecksum(), BenchIngress(), BenchEgress(),
         BenchComputeChecksum(), BenchDeparser()) main;
