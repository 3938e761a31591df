// mmaqm constants and types: the single source of truth.
// The controller (control-plane/mmaqm/p4constants.py) parses every
// `const bit<N> NAME = VALUE;` line and the drop_reason_t enum of this file
// (sizes and counter indexes, which no P4Info can carry), so keep those forms.
// traffic_class_t reaches the controller through the P4Info, as the type of
// the classifier's action parameter.
#ifndef MMAQM_DEFINES_P4
#define MMAQM_DEFINES_P4

// ---- types (fabric-tna style): what a value holds, and in which unit
typedef bit<9>  port_t;         // v1model port number
typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<16> l4_port_t;
typedef bit<32> pkts_t;         // whole packets
typedef bit<32> scaled_t;       // packets * 2^AVG_FRAC_BITS (averages, thresholds)
typedef bit<32> q16_t;          // a fraction in [0, 1] * 2^PROB_FRAC_BITS
typedef bit<32> q24_t;          // RED slope: per packet * 2^SLOPE_FRAC_BITS
typedef bit<32> policy_epoch_t; // a new value resets a port's averages (averages.p4)
typedef bit<8>  shift_t;        // a right-shift amount (p4c limits bmv2 shifts to 8 bits)

// ---- traffic classes (all papers: TCP / tagged UDP / untagged = everything else)
enum bit<8> traffic_class_t {
    TCP = 0,
    TAGGED = 1,     // UDP with a DSCP the controller lists as multimedia (cbt §3)
    UNTAGGED = 2    // any other non-TCP packet
}

// ---- why the AQM dropped a packet (queue_drops counter index, per port and class)
enum bit<8> drop_reason_t {
    QUEUE_LIMIT = 0,      // the physical queue is full (queue_limit_pkts)
    RED_EARLY = 1,        // RED early drop, min_th <= avg < max_th
    RED_FORCED = 2,       // RED forced drop, avg >= max_th
    CLASS_THRESHOLD = 3   // CBT / D-CBT class threshold (cbt §3, dcbt §3.1)
}

// ---- sizes
const bit<32> NUM_PORTS = 64;          // ports 0..63 carry AQM state
const bit<32> CLASS_SLOTS = 4;         // per-port class index = port * 4 + class
const bit<32> NUM_DROP_REASONS = 4;    // members of drop_reason_t
const bit<32> NUM_DISCARD_REASONS = 8;
const bit<32> FLOW_SLOTS = 65536;      // active-flow table; a power of two (index = crc32 mod it)
const bit<32> ROUTE_TABLE_SIZE = 1024;     // ipv4_lpm entries
const bit<32> CLASSIFIER_TABLE_SIZE = 64;  // classifier entries: 1 (TCP) + one per tagged DSCP

// ---- protocols and header lengths
const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8> IP_PROTO_ICMP = 1;
const bit<8> IP_PROTO_TCP = 6;
const bit<8> IP_PROTO_UDP = 17;
const bit<32> ETHERNET_HEADER_BYTES = 14;
const bit<16> IPV4_MIN_HEADER_BYTES = 20;  // IHL 5; options are discarded
const bit<4> IPV4_MIN_IHL = 5;

// ---- discards before the AQM (ingress_discards counter, per ingress port)
const bit<8> DISCARD_NOT_IPV4 = 0;      // non-IPv4 frame (ARP, IPv6, ...)
const bit<8> DISCARD_MALFORMED = 1;     // parser error, truncated, bad IHL/version/length
const bit<8> DISCARD_BAD_CHECKSUM = 2;  // IPv4 header checksum wrong
const bit<8> DISCARD_IPV4_OPTIONS = 3;  // IHL > 5: options are not forwarded
const bit<8> DISCARD_TTL_EXPIRED = 4;   // TTL <= 1
const bit<8> DISCARD_NO_ROUTE = 5;      // LPM miss
const bit<8> DISCARD_NO_POLICY = 6;     // egress port has no port_policy entry

// ---- fixed point
const bit<8> AVG_FRAC_BITS = 16;       // averages and thresholds: packets * 2^16
const bit<8> PROB_FRAC_BITS = 16;      // probabilities: [0, 1) * 2^16
const bit<8> SLOPE_FRAC_BITS = 24;     // RED slope max_p / (max_th - min_th): per packet * 2^24
const bit<32> PROB_ONE = 65536;        // 1.0 in PROB_FRAC_BITS

// ---- digests
const bit<32> FLOW_DIGEST_RECEIVER = 1;

#endif
