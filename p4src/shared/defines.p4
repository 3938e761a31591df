// mmaqm constants and types: the single source of truth.
// The controller (control-plane/mmaqm/p4constants.py) parses every
// `const bit<N> NAME = VALUE;` line and the drop_reason_t enum of this file
// (sizes and counter indexes, which no P4Info can carry), so keep those forms.
// traffic_class_t reaches the controller through the P4Info, as the type of
// the classifier's action parameter.
#ifndef MMAQM_DEFINES_P4
#define MMAQM_DEFINES_P4

#include "selection.p4"   // which algorithms' constants this program has

// ---- types (fabric-tna style): what a value holds, and in which unit
typedef bit<9>  port_t;         // v1model port number
typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<128> ipv6_addr_t;
typedef bit<16> l4_port_t;
typedef bit<32> pkts_t;         // whole packets
typedef bit<8>  shift_t;        // a right-shift amount (p4c limits bmv2 shifts to 8 bits)
typedef bit<48> timestamp_us_t; // v1model global timestamps, microseconds since the switch started
// The algorithms' parameter and average types; a BMv2 profile may use none of them.
@noWarn("unused") typedef bit<32> scaled_t;       // packets * 2^AVG_FRAC_BITS (averages, thresholds)
@noWarn("unused") typedef bit<32> q16_t;          // a fraction in [0, 1] * 2^PROB_FRAC_BITS
@noWarn("unused") typedef bit<32> q24_t;          // RED slope: per packet * 2^SLOPE_FRAC_BITS
@noWarn("unused") typedef bit<32> policy_epoch_t; // a new value resets a port's averages (averages.p4)
@noWarn("unused") typedef bit<32> q32_t;          // a rate in halvings per microsecond * 2^32 (RED idle decay)
@noWarn("unused") typedef bit<1>  flag_t;         // a per-policy on/off option (P4Runtime action parameters are bit<W>)

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
    CLASS_THRESHOLD = 3,  // CBT / D-CBT / MCDT class threshold (cbt §3, dcbt §3.1, mcdt §II.2)
    FRED_MAXQ = 4,        // FRED: the flow holds maxq packets (fred.p4 R1)
    FRED_TWICE_AVGCQ = 5, // FRED: avg >= max_th and the flow holds > 2 avgcq (R2)
    FRED_STRIKE = 6,      // FRED: a flow with strikes holds >= avgcq (R3)
    UPTA_USELESS = 7,     // UPTA: the flow's drop probability exceeds its loss threshold (upta Fig. 7)
    UPTA_FAIR_SHARE = 8,  // UPTA: an I flow's drop, drop_prob = max(0, 1 - fs/rate) > unif_rand (Fig. 7)
    TAG_GUARD = 9         // tagged flow over its part of the tagged class's threshold (tag_guard.p4)
}

// ---- ChIPS events (chips_events counter, index port * NUM_CHIPS_EVENTS + event; dcbt §3.2)
#ifdef MMAQM_USES_CHIPS
const bit<32> CHIPS_ON_ADMITS = 0;         // packet admitted while ChIPS is on (tagged share <= limit)
const bit<32> CHIPS_OFF_ADMITS = 1;        // packet admitted while ChIPS is off (tagged share > limit)
const bit<32> CHIPS_CUT_IN = 2;            // tagged packet cut in (on, queue > average)
const bit<32> CHIPS_NO_CONGESTION = 3;     // tagged packet, ChIPS on, queue <= average: FIFO
const bit<32> CHIPS_SLOT_DEPARTED = 4;     // egress: a cut-in packet's virtual FIFO slot left
const bit<32> NUM_CHIPS_EVENTS = 5;
#endif

// ---- sizes
const bit<32> NUM_PORTS = 64;          // ports 0..63 carry AQM state
const bit<32> CLASS_SLOTS = 4;         // per-port class index = port * 4 + class
const bit<32> NUM_DROP_REASONS = 10;    // members of drop_reason_t
const bit<32> NUM_DISCARD_REASONS = 8;
const bit<32> FLOW_SLOTS = 65536;      // active-flow table; a power of two (index = crc32 mod it)
const bit<32> ROUTE_TABLE_SIZE = 1024;     // ipv4_lpm entries
const bit<32> ROUTE6_TABLE_SIZE = 1024;    // ipv6_lpm entries
const bit<32> CLASSIFIER_TABLE_SIZE = 64;  // classifier entries: 1 (TCP) + one per tagged DSCP
// FRED per-flow state (fred.p4): each port owns FRED_SLOTS_PER_PORT slots, index
// port * FRED_SLOTS_PER_PORT + (crc32(5-tuple) & fred_slot_mask); a power of two.
#ifdef MMAQM_USES_FRED
const bit<32> FRED_SLOTS_PER_PORT = 4096;
#endif

// Tag guard (tag_guard.p4): each port owns TAG_GUARD_SLOTS_PER_PORT per-flow
// theoretical arrival times, index 1 + port * TAG_GUARD_SLOTS_PER_PORT +
// (crc32(5-tuple) & TAG_GUARD_SLOT_MASK); index 0 is never used
// (meta.tag_guard_slot 0 = none).
#ifdef MMAQM_USES_TAG_GUARD
const bit<32> TAG_GUARD_SLOTS_PER_PORT = 4096;
const bit<32> TAG_GUARD_SLOT_MASK = 4095;     // TAG_GUARD_SLOTS_PER_PORT - 1
const bit<16> TAG_GUARD_BURST_PKTS = 4;       // a flow may run this many packets ahead of its rate
#endif

// ---- protocols and header lengths
const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8> IP_PROTO_ICMP = 1;
const bit<8> IP_PROTO_TCP = 6;
const bit<8> IP_PROTO_UDP = 17;
const bit<16> ETHERTYPE_IPV6 = 0x86DD;
const bit<8> IP_PROTO_ICMPV6 = 58;
// IPv6 extension headers the parser skips (RFC 8200 §4.1), at most
// IPV6_EXT_MAX_DEPTH of them; a longer chain is discarded (DISCARD_IPV6_EXT_LIMIT).
const bit<8> IPV6_EXT_HOP_BY_HOP = 0;
const bit<8> IPV6_EXT_ROUTING = 43;
const bit<8> IPV6_EXT_FRAGMENT = 44;
const bit<8> IPV6_EXT_DEST_OPTS = 60;
// IPV6_EXT_MAX_DEPTH = 2: the parser's ipv6_ext1 and ipv6_ext2 states.
const bit<32> IPV6_HEADER_BYTES = 40;
// An IPv6 address folded to 32 bits for the flow signature (flow_signature.p4):
// (w0 * MUL0 + w1 * MUL1 + w2 * MUL2 + w3) mod 2^32 over its big-endian words;
// odd multipliers, so that addresses differing in one or two words (a subnet and
// a host number) do not fold alike (mmaqm.algorithms.fred.fold_ipv6).
const bit<32> FLOW_FOLD_MUL0 = 0x9E3779B1;
const bit<32> FLOW_FOLD_MUL1 = 0x85EBCA77;
const bit<32> FLOW_FOLD_MUL2 = 0xC2B2AE3D;
#define FLOW_FOLD(a) ((a)[127:96] * FLOW_FOLD_MUL0 + (a)[95:64] * FLOW_FOLD_MUL1 \
                      + (a)[63:32] * FLOW_FOLD_MUL2 + (a)[31:0])
// An extension header past its first 8 bytes: at most 255 * 8 bytes (a target
// top file may define a smaller bound first: p4src/tna/main.p4).
#ifndef IPV6_EXT_MAX_REST_BITS
#define IPV6_EXT_MAX_REST_BITS 16320
#endif
const bit<32> ETHERNET_HEADER_BYTES = 14;
const bit<16> IPV4_MIN_HEADER_BYTES = 20;  // IHL 5; options are discarded
const bit<4> IPV4_MIN_IHL = 5;

// ---- discards before the AQM (ingress_discards counter, per ingress port)
const bit<8> DISCARD_NOT_IPV4 = 0;      // neither IPv4 nor IPv6 (ARP, ...)
const bit<8> DISCARD_MALFORMED = 1;     // parser error, truncated, bad IHL/version/length (both families)
const bit<8> DISCARD_BAD_CHECKSUM = 2;  // IPv4 header checksum wrong
const bit<8> DISCARD_IPV4_OPTIONS = 3;  // IHL > 5: options are not forwarded
const bit<8> DISCARD_TTL_EXPIRED = 4;   // TTL <= 1, IPv6 hop limit <= 1
const bit<8> DISCARD_NO_ROUTE = 5;      // LPM miss
const bit<8> DISCARD_NO_POLICY = 6;     // egress port has no port_policy entry
const bit<8> DISCARD_IPV6_EXT_LIMIT = 7; // more than IPV6_EXT_MAX_DEPTH IPv6 extension headers

// ---- ECN field of the IPv4 header and of IPv6's traffic class (RFC 3168)
#ifdef MMAQM_USES_RED_OPTIONS
const bit<2> ECN_NOT_ECT = 0;
const bit<2> ECN_CE = 3;
#endif

// ---- traffic-manager queues and clone sessions (ChIPS, chips.p4)
// BMv2 runs with --priority-queues 2; the higher priority is served first.
// Every packet starts at priority 0 (the FIFO), v1model's default.
#ifdef MMAQM_USES_CHIPS
const bit<3> PRIORITY_CUT_IN = 1;
const bit<32> CHIPS_CLONE_SESSION_BASE = 100;  // clone session of port p: 100 + p
#endif
const bit<8> CHIPS_SLOT_FIELD_LIST = 1;        // metadata a cut-in packet's slot clone keeps

// ---- RED idle-time decay (Floyd & Jacobson §11; Linux red_calc_qavg_from_idle_time)
#ifdef MMAQM_USES_AVERAGES
const bit<32> MAX_IDLE_US = 0xFFFFFFFF;        // idle time is capped at 2^32 - 1 us (71 min)
const bit<8> IDLE_DECAY_MAX_HALVINGS = 32;     // a bit<32> average halved 32 times is 0
#endif

// ---- fixed point
#ifdef MMAQM_USES_AVERAGES
const bit<8> AVG_FRAC_BITS = 16;       // averages and thresholds: packets * 2^16
const bit<8> SLOPE_FRAC_BITS = 24;     // RED slope max_p / (max_th - min_th): per packet * 2^24
#endif
#ifdef MMAQM_USES_RED_OPTIONS
const bit<8> PROB_FRAC_BITS = 16;      // probabilities: [0, 1) * 2^16
#endif
@noWarn("unused")                      // not used by DROP_TAIL and MCDT
const bit<32> PROB_ONE = 65536;        // 1.0 in 2^PROB_FRAC_BITS

// ---- MCDT (mcdt §II.2, Fig. 2; mcdt.p4): mcdt_mode 0 = mode A, the class's own
// logical queue against its threshold.
#ifdef MMAQM_USES_MCDT
const bit<8> MCDT_MODE_B = 1;   // the whole FIFO ahead of the packet against the class's threshold
const bit<8> MCDT_MODE_C = 2;   // mode A's test, binding once the queue fills the thresholds' sum
#endif

// ---- FRED (Lin & Morris 1997, their algorithm figure; fred.p4)
#ifdef MMAQM_USES_FRED
const bit<32> FRED_MAXQ_CONGESTED_PKTS = 2;  // maxq while avg >= max_th (A2)
const bit<8> FRED_STRIKE_LIMIT = 1;          // R3 applies to flows with strike > 1
const bit<8> FRED_STRIKE_MAX = 255;          // fred_strike saturates (bit<8>)
#endif

// ---- UPTA and BFD (Wu & Hassan 2002, upta.p4; docs/upta-plan.md)
// Per-flow slots: index port * UPTA_SLOTS_PER_PORT + (crc32(5-tuple) & slot_mask); a power of two.
#ifdef MMAQM_USES_UPTA
const bit<32> UPTA_SLOTS_PER_PORT = 4096;
const bit<8> UPTA_RATE_FRAC_BITS = 4;          // rates: bytes per K * 2^4 (plan §1.3)
const bit<32> UPTA_Q16_ONE = 65536;            // loss thresholds and draws: [0, 1) * 2^16
const bit<16> UPTA_Q_NONE = 0xFFFF;            // "no loss threshold": never made U
// upta_mode: 0 = B-UPTA, every router decides alone (upta §2).
const bit<32> UPTA_FS_NONE = 0xFFFFFFFF;       // "no fair share": R (2^16 - x) never exceeds it
const bit<8> UPTA_MODE_P = 1;                  // P-UPTA: q travels in the packet (upta §4, eq. 17)
const bit<8> UPTA_MODE_C = 2;                  // C-UPTA: the ingress edge decides (upta §5)
const bit<1> UPTA_STATE_U = 0;                 // U or new (Fig. 7 treats both alike)
const bit<1> UPTA_STATE_I = 1;
#endif
// P-UPTA's field (plan §1.5): IPv4 option type 0x9E (copied, class 0, number 30), length 4.
const bit<8> UPTA_OPTION_TYPE = 0x9E;
const bit<8> UPTA_OPTION_LEN = 4;
const bit<4> UPTA_OPTION_IHL = 6;              // IHL of a packet carrying only the UPTA option
// upta_events counter, index port * NUM_UPTA_EVENTS + event (mmaqm.algorithms.upta.EVENTS)
#ifdef MMAQM_USES_UPTA
const bit<32> UPTA_EVENT_FLOW_COLLISION = 0;   // another flow used the slot less than K ago
const bit<32> UPTA_EVENT_I_TO_U = 1;           // an I flow became U (Fig. 7)
const bit<32> UPTA_EVENT_PROBE_SENT = 2;       // BFD: a probe left the ingress edge (from the controller port)
const bit<32> UPTA_EVENT_PROBE_LOWERED = 3;    // BFD: a probe left through a upta port (eqs. 25-26)
const bit<32> UPTA_EVENT_PROBE_ANSWERED = 4;   // BFD: the egress edge turned a probe into a report
const bit<32> UPTA_EVENT_PROBE_FROM_EDGE = 5;  // BFD: a probe arrived on an edge port: dropped
const bit<32> UPTA_EVENT_PROBE_MALFORMED = 6;  // BFD: a probe to this router failed its checks
const bit<32> UPTA_EVENT_REPORT_ACCEPTED = 7;  // BFD: a report set a path's fair shares
const bit<32> UPTA_EVENT_REPORT_FROM_EDGE = 8; // BFD: a report arrived on an edge port: dropped
const bit<32> UPTA_EVENT_REPORT_STALE = 9;     // BFD: wrong identifier or sequence: dropped
const bit<32> UPTA_EVENT_REPORT_MALFORMED = 10; // BFD: wrong checksum or length: dropped
const bit<32> NUM_UPTA_EVENTS = 11;
#endif
// BFD (upta §5.3, Fig. 8; plan §1.7): ICMP types, paths (identifiers) per switch,
// flow specs parsed (a header stack of 4), message sizes.
const bit<8> ICMP_QOS_PROBE = 20;
const bit<8> ICMP_QOS_REPORT = 21;
#ifdef MMAQM_USES_UPTA
const bit<32> BFD_PATHS = 64;
#endif
const bit<16> BFD_IP_LEN = 36;                 // IPv4 20 + BFD 16: a report, or a probe without specs
const bit<16> BFD_SPEC_BYTES = 16;
#ifdef MMAQM_USES_UPTA
const bit<32> BFD_REPORT_FRAME_BYTES = 50;     // Ethernet 14 + IPv4 20 + BFD 16
const bit<8> BFD_REPORT_TTL = 64;
const bit<17> BFD_SEQ_VALID = 0x10000;         // upta_probe_seq holds BFD_SEQ_VALID | sequence
#endif

// ---- digests
const bit<32> FLOW_DIGEST_RECEIVER = 1;
#ifdef MMAQM_USES_UPTA
const bit<32> BFD_SPEC_DIGEST_RECEIVER = 2;   // upta.p4: a probe's specs at a C-UPTA core
const bit<32> BFD_REPORT_DIGEST_RECEIVER = 3; // upta.p4: a report the ingress edge accepted
#endif

#endif
