// Packet headers and metadata.
#ifndef MMAQM_HEADERS_P4
#define MMAQM_HEADERS_P4

#include "defines.p4"


header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
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

header tcp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq_no;
    bit<32> ack_no;
    bit<4>  data_offset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent_ptr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

header icmp_t {
    bit<8>  icmp_type;
    bit<8>  icmp_code;
    bit<16> checksum;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    tcp_t      tcp;
    udp_t      udp;
    icmp_t     icmp;
}

// Per-egress-port AQM policy, filled from the port_policy table.
// Averages and thresholds are in packets * 2^AVG_FRAC_BITS ("_scaled").
struct policy_t {
    bit<8>  algorithm;
    bit<32> queue_limit_pkts;
    bit<32> min_th_scaled;
    bit<32> max_th_scaled;
    bit<32> red_slope_q24;          // max_p / (max_th - min_th) per packet, * 2^24
    bit<8>  ewma_shift;             // EWMA weight w = 2^-ewma_shift
    bit<32> tagged_th_scaled;       // CBT static tagged threshold
    bit<32> untagged_th_scaled;     // CBT static / D-CBT dynamic untagged threshold
    bit<32> dcbt_tagged_share_q16;  // D-CBT n_tagged / n_all, * 2^16
    bit<32> policy_epoch;           // new value => reset this port's averages
    bit<8>  flow_epoch_shift;       // active-flow epoch = 2^shift us; 0 = no reports
}

// Exact queue occupancy of the egress port at this packet's arrival.
struct occupancy_t {
    bit<32> queue_pkts;
    bit<32> tcp_pkts;
    bit<32> tagged_pkts;
    bit<32> untagged_pkts;
}

struct local_metadata_t {
    bit<8>      class_id;
    bit<32>     port_index;     // egress port as a register index
    bit<32>     class_index;    // port_index * CLASS_SLOTS + class_id
    bit<16>     l4_src_port;
    bit<16>     l4_dst_port;
    policy_t    policy;
    occupancy_t occupancy;
    bool        aqm_drop;
    bit<8>      drop_reason;
    bool        admitted;       // set in ingress, read in egress to release occupancy
}

// Active-flow report: one per flow per epoch (dcbt §3.1 active flow counting).
struct flow_digest_t {
    bit<9>  egress_port;
    bit<8>  class_id;
    bit<32> src_addr;
    bit<32> dst_addr;
    bit<8>  protocol;
    bit<16> src_port;
    bit<16> dst_port;
}

#endif
