// mmaqm constants: the single source of truth.
// The controller (control-plane/mmaqm/p4constants.py) parses every
// `const bit<N> NAME = VALUE;` line of this file, so keep that form.
#ifndef MMAQM_DEFINES_P4
#define MMAQM_DEFINES_P4

// ---- sizes
const bit<32> NUM_PORTS = 64;          // ports 0..63 carry AQM state
const bit<32> CLASS_SLOTS = 4;         // per-port class index = port * 4 + class
const bit<32> NUM_DROP_REASONS = 4;
const bit<32> NUM_DISCARD_REASONS = 8;
const bit<32> FLOW_SLOTS = 65536;      // active-flow table (crc16 index)
const bit<32> ROUTE_TABLE_SIZE = 1024;     // ipv4_lpm entries
const bit<32> CLASSIFIER_TABLE_SIZE = 64;  // classifier entries: 1 (TCP) + one per tagged DSCP

// ---- protocols
const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8> IP_PROTO_ICMP = 1;
const bit<8> IP_PROTO_TCP = 6;
const bit<8> IP_PROTO_UDP = 17;

// ---- traffic classes (all papers: TCP / tagged UDP / untagged = everything else)
const bit<8> CLASS_TCP = 0;
const bit<8> CLASS_TAGGED = 1;
const bit<8> CLASS_UNTAGGED = 2;

// ---- algorithms selected per egress port by the port_policy table
@noWarn("unused")  // the controller uses it; aqm.p4 treats "no other algorithm" as drop-tail
const bit<8> ALGO_DROP_TAIL = 0;
const bit<8> ALGO_RED = 1;
const bit<8> ALGO_CBT_RED_ALL = 2;        // cbt §3 "CBT with RED for all"
const bit<8> ALGO_CBT_RED_TCP_ONLY = 3;   // cbt §3 "CBT with RED only for TCP"
const bit<8> ALGO_DCBT = 4;               // dcbt §3.1

// ---- AQM drop reasons (queue_drops counter, per egress port and class)
const bit<8> DROP_QUEUE_LIMIT = 0;
const bit<8> DROP_RED_EARLY = 1;
const bit<8> DROP_RED_FORCED = 2;
const bit<8> DROP_CLASS_THRESHOLD = 3;

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
