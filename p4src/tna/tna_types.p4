// TNA-only headers, metadata and constants (p4src/tna). Everything the two
// targets share stays in p4src/shared (defines.p4, headers.p4).
#ifndef MMAQM_TNA_TYPES_P4
#define MMAQM_TNA_TYPES_P4

#include "../shared/defines.p4"
#include "../shared/headers.p4"

// ---- the algorithm this build carries (docs/tofino.md: one program per algorithm)
#if !defined(MMAQM_TNA_DROP_TAIL) && !defined(MMAQM_TNA_RED) && !defined(MMAQM_TNA_CBT_RED_ALL) \
    && !defined(MMAQM_TNA_CBT_RED_TCP_ONLY) && !defined(MMAQM_TNA_DCBT) \
    && !defined(MMAQM_TNA_DCBT_CHIPS) && !defined(MMAQM_TNA_MCDT) && !defined(MMAQM_TNA_FRED) \
    && !defined(MMAQM_TNA_UPTA)
#error "define one of MMAQM_TNA_{DROP_TAIL,RED,CBT_RED_ALL,CBT_RED_TCP_ONLY,DCBT,DCBT_CHIPS,MCDT,FRED,UPTA}"
#endif
#if defined(MMAQM_TNA_DCBT_CHIPS)
#define MMAQM_TNA_DCBT
#endif
// The algorithms with RED's per-arrival average and drop test (red_tna.p4).
#if defined(MMAQM_TNA_RED) || defined(MMAQM_TNA_CBT_RED_ALL) \
    || defined(MMAQM_TNA_CBT_RED_TCP_ONLY) || defined(MMAQM_TNA_DCBT)
#define MMAQM_TNA_RED_FAMILY
#endif

// FRED and UPTA read no per-class occupancy (occupancy_tna.p4 keeps none)
#if defined(MMAQM_TNA_FRED) || defined(MMAQM_TNA_UPTA)
#define MMAQM_TNA_NO_CLASS_OCCUPANCY
#endif

// Register indexes. AQM state exists for NUM_PORTS ports: on Tofino, the dev
// ports 0..63 of pipe 0 (v1model: ports 0..63).
typedef bit<32> tna_index_t;
// queue_drops / queue_ecn_marks: index reason * 256 + class_index, the low 12 bits
// of an identity hash of {reason, class_index} (v1model: class_index *
// NUM_DROP_REASONS + reason). 16 reasons' room.
const bit<32> TNA_DROP_REASON_SLOTS = 16;

// UPTA (upta_tna.p4): flow slots per port, index port * TNA_UPTA_SLOTS_PER_PORT
// + (crc32 & slot_mask). A quarter of v1model's UPTA_SLOTS_PER_PORT: the
// per-slot rate filter, registers and counter fit a stage each (docs/tofino.md).
const bit<32> TNA_UPTA_SLOTS_PER_PORT = 512;
// FRED (fred_tna.p4): flow slots per port, index port * TNA_FRED_SLOTS_PER_PORT
// + (crc32 & (TNA_FRED_SLOTS_PER_PORT - 1)). Half of v1model's FRED_SLOTS_PER_PORT:
// a slot holds {qlen, epoch} (32 bits), and 4096 of them a port do not fit a stage.
const bit<32> TNA_FRED_SLOTS_PER_PORT = 2048;
// A FRED slot: the flow's qlen and the port's empty-epoch when it was last
// written (a qlen of an older epoch reads as 0: docs/tofino.md, "Counts that heal").
struct tna_fred_slot_t {
    bit<16> qlen;
    bit<16> epoch;
}

// upta_bfd_events: index ingress port * TNA_BFD_EVENT_SLOTS + event (the BFD
// endpoint's UPTA_EVENT_* values); the per-flow events have counters of their own.
const bit<32> TNA_BFD_EVENT_SLOTS = 16;

// Tofino 1's pipes (dev port bits 8..7): every register is per pipe, and the
// AQM state is pipe 0's (docs/tofino.md, "State on every pipe"). A frame from
// another pipe's port is discarded and counted in other_pipe_discards, indexed
// by its pipe (main.p4), except the controller's PacketOut (UPTA build).
const bit<32> TNA_PIPES = 4;

// Tofino 1 recirculation port of pipe 0 (dev port 68); departure reports come
// back through it (occupancy_tna.p4). Reports from any other port are discarded.
const PortId_t TNA_RECIRC_PORT = 68;
// Mirror session that carries departure reports to TNA_RECIRC_PORT (the controller
// creates it as a P4Runtime clone session, each copy truncated:
// tna_encoding.TNA_REPORT_COPY_BYTES).
const MirrorId_t TNA_REPORT_SESSION = 1;
// ChIPS slot clones of port p use mirror session TNA_CHIPS_SESSION_BASE + p
// (aqm_tna.p4; v1model's clone sessions: CHIPS_CLONE_SESSION_BASE + p)
const MirrorId_t TNA_CHIPS_SESSION_BASE = 64;
// The cut-in queue of every port (ChIPS): the traffic manager serves qid 1 at
// strict priority over qid 0, the FIFO (the controller configures both).
const QueueId_t TNA_QID_FIFO = 0;
const QueueId_t TNA_QID_CUT_IN = 1;

// occupancy_tna.p4: the queue_arrive output's flag for an arrival at the limit
const scaled_t TNA_NOT_COUNTED = 1;   // bit 0: a count is a multiple of AVG_ONE
const scaled_t AVG_ONE = 1 << 16;     // one packet in scaled_t (2^AVG_FRAC_BITS)

// What a packet is, in the first byte of the bridged, mirrored or resubmitted header.
const bit<8> TNA_PKT_BRIDGED = 1;     // ingress -> egress, in front of a data packet
const bit<8> TNA_PKT_DEPARTURE = 2;   // egress mirror: an admitted packet left its queue
const bit<8> TNA_PKT_SLOT = 3;        // egress mirror: a cut-in packet's FIFO slot left (ChIPS)
const bit<8> TNA_PKT_CANCEL = 4;      // resubmit: ingress counted an arrival, then dropped it

const MirrorType_t TNA_MIRROR_REPORT = 1;  // egress: departure report
const MirrorType_t TNA_MIRROR_SLOT = 2;    // ingress: a cut-in packet's FIFO slot (ChIPS)
const ResubmitType_t TNA_RESUBMIT_CANCEL = 1;
const DigestType_t TNA_DIGEST_FLOW = 1;

// The accounting record that ingress bridges to egress and egress reports back:
// exactly what the v1model egress reads from meta (queue_departure, fred_departure,
// chips_slot_departure). 64 bits: Tofino 1 resubmits carry exactly 64.
header tna_report_h {
    bit<8>  pkt_type;
    bit<6>  port_index;
    bit<2>  class_id;
    bit<1>  admitted;
    bit<1>  cut_in;
    bit<1>  fred_admitted;
    bit<1>  chips_on;         // ChIPS (dcbt §3.2) was on / off when the packet was
    bit<1>  chips_off;        // admitted; a tagged one found the queue congested
    bit<1>  chips_congested;  // (cut in) or not: chips_events, counted at departure
    bit<1>  counted;          // a cancel: occupancy counted the arrival (undo it)
    bit<1>  queue_empty;      // a FIFO departure left the port empty: heal (occupancy_tna.p4)
    bit<8>  _pad2;
    bit<32> fred_slot_index;   // port * TNA_FRED_SLOTS_PER_PORT + slot
}

#ifdef MMAQM_TNA_UPTA
// The controller's PacketOut header (UPTA build: C-UPTA's QoS Probes, which the
// controller sends through the switch's CPU port). fabric-tna's
// packet_out_header_t cut to what a probe needs: 14 bytes, so that the parser
// finds TNA_ETHERTYPE_PACKET_OUT where an Ethernet header has its type, on any
// ingress port. That leaves the CPU port's number (Tofino 1's PCIe port: dev
// port 192 on two pipes, 320 on four) out of the program, without a parser
// value set, which Stratum does not serve. Stratum puts the P4Info's
// packet_out metadata in front of the payload in this order; the ingress
// deparser does not emit the header.
const bit<16> TNA_ETHERTYPE_PACKET_OUT = 0xBF01;   // fabric-tna's ETHERTYPE_PACKET_OUT
@controller_header("packet_out")
header tna_packet_out_h {
    @padding bit<7>  _pad0;
    PortId_t         egress_port;   // the probe's path port (routing decides: docs/tofino.md)
    @padding bit<80> _pad1;
    bit<16>          ether_type;    // TNA_ETHERTYPE_PACKET_OUT
}
#endif

struct tna_ingress_headers_t {
#ifdef MMAQM_TNA_UPTA
    tna_packet_out_h packet_out;   // a PacketOut from the controller (never emitted)
#endif
    tna_report_h report;   // a departure report (recirculated) or a cancel (resubmitted)
    headers_t    pkt;
}

struct tna_egress_headers_t {
    tna_report_h bridged;  // from ingress, or the mirror header of a report copy
    headers_t    pkt;
}

struct tna_ingress_metadata_t {
    local_metadata_t base;        // the shared controls' metadata (headers.p4)
    bool             checksum_error;
    bool             is_report;   // a departure report or a cancel, not a packet to forward
    bool             other_pipe;  // the parser: a frame from a port outside pipe 0 (discarded)
    bit<8>           slot_pkt_type;   // TNA_PKT_SLOT, the ChIPS slot mirror's first byte
    MirrorId_t       mirror_session;
    flow_digest_t    digest;
    bit<32>          flow_signature;  // flow_report_tna.p4: CRC32 of the 5-tuple
    bit<32>          now_1024ns;      // the ingress timestamp in 1.024 us units
    bit<32>          flow_epoch;
    bit<32>          excess;             // a |-| b of a two-field compare (aqm_tna.p4)
    scaled_t         class_avg_scaled;     // CBT: the class's Lpf average
    scaled_t         tagged_avg_scaled;       // D-CBT: the classes' averages
    scaled_t         untagged_avg_scaled;
    scaled_t         dcbt_tagged_th_scaled;   // D-CBT: from dcbt_tagged_threshold
    scaled_t         dcbt_untagged_th_scaled;
    scaled_t         fifo_room_scaled;        // D-CBT: queue limit |-| virtual FIFO
    bit<1>           one_bit;                // 1 (the parser): a hash input
    q16_t            chips_sample_q16;       // ChIPS: 1 (PROB_ONE) for a tagged arrival
    q16_t            chips_share_q16;        // the tagged share's filter
    q16_t            chips_share_over_q16;   // share |-| limit: != 0, ChIPS is off
    scaled_t         chips_queue_over_avg;   // queue |-| RED average: != 0, congestion
    // RED family (red_tna.p4)
    bit<2>           red_zone;
    q16_t            red_p_b_q16;
    q16_t            red_rand_q16;
    bit<1>           red_early_hit;     // the budget register's verdict (early zone)
    bit<1>           red_mark_early;    // ECN may replace an early drop
    bit<1>           red_mark_forced;   // ... a forced drop (not with harddrop)
    // FRED (fred_tna.p4)
    bit<1>           report_empty;           // the parser: a report's queue_empty
    bit<16>          fred_epoch;             // the port's empty-epoch (TnaFredEpoch)
    bit<16>          fred_qlen_seen;         // the flow's qlen before this arrival
    bit<16>          fred_qlen_before;       // a report: the flow's qlen before it left
    bit<16>          fred_nactive_seen;      // nactive before this arrival
    scaled_t         fred_avg;               // the filter's output or its copy
    bit<16>          lg_qlen;                // log2 in Q4 (log2_tna.p4)
    bit<16>          fred_lg_share;          // lg qlen + lg n + 256 (Q4)
    scaled_t         fred_qlen_scaled;       // the flow's qlen << AVG_FRAC_BITS
    scaled_t         fred_minq_scaled;       // minq_pkts << AVG_FRAC_BITS
    // the decision's tests as saturating differences, 0 when the test holds
    bit<16>          fred_avgcq_short;       // lg avg |-| share: qlen >= avgcq
    bit<16>          fred_over_twice_short;  // lg 2 avg + 1 |-| share: qlen > 2 avgcq
    scaled_t         fred_congested_short;   // max_th |-| avg: avg >= max_th
    scaled_t         fred_maxq_short;        // min_th |-| qlen: qlen >= maxq (A2)
    scaled_t         fred_maxq_congested_short;  // 2 packets |-| qlen
    scaled_t         fred_minq_short;        // minq |-| qlen: qlen >= minq
    // fred_decision_tna.p4's outputs
    bit<8>           fred_code;         // 2: R1 or R2 holds; 1: qlen >= avgcq; 0: neither
    bit<8>           fred_r3_threshold; // strike above it drops (R3); 255: never
    drop_reason_t    fred_strike_reason;  // FRED_MAXQ (R1), FRED_TWICE_AVGCQ (R2), FRED_STRIKE (R3)
    bit<1>           fred_robust;       // R4: qlen >= max(minq, avgcq)
    bit<1>           fred_struck;       // the strike register's verdict (R1-R3)
    // UPTA (upta_tna.p4)
    bool             bfd_checksum_error;  // the parser: the ICMP checksum of a complete message
    bool             bfd_rewritten;       // the deparser recomputes the ICMP checksum
    bit<8>           bfd_event;           // the endpoint's UPTA_EVENT_*, counted when != 0xFF
    bit<32>          bfd_seq_key;         // BFD_SEQ_VALID | sequence
    bit<2>           bfd_seq_op;          // BFD_SEQ_STORE or _CHECK (upta_tna.p4)
    bit<32>          bfd_report_fs_u;     // a report's minima, 0 read as UPTA_FS_NONE
    bit<32>          bfd_report_fs_i;
    tna_index_t      upta_path_index;     // C-UPTA: the BFD path (upta_bfd_path), or the report's
    bool             upta_path_hit;
    bool             upta_path_read;      // C-UPTA: the path's minima were read
    bit<16>          upta_lg_path_fs_i_plus;   // lg of the path's minima + 256
    bit<16>          upta_lg_path_fs_u_plus;
    bit<16>          upta_slot_low;       // crc32 & slot_mask
    tna_index_t      upta_slot_index;     // port * TNA_UPTA_SLOTS_PER_PORT + slot
    bit<32>          upta_sample;         // total length << UPTA_RATE_FRAC_BITS
    bit<32>          upta_rate;           // R: the slot's filter
    bit<32>          upta_fs_i;           // fs_I, fs_U: the policy's or C-UPTA's minima
    bit<32>          upta_fs_u;
    bit<16>          upta_q_comp;         // 2^16 - 1 - q
    bit<16>          upta_draw;           // Random: 2^16 - 1 - u
    bit<16>          upta_lg_q_comp;
    bit<16>          upta_lg_draw;
    bit<16>          upta_lg_fs_i_plus;   // lg fs + 256 (log2_tna.p4 FairShare)
    bit<16>          upta_lg_fs_u_plus;
    bit<16>          upta_sum_q;          // lg R + lg(2^16 - q)
    bit<16>          upta_sum_u;          // lg R + lg(2^16 - u)
    bit<16>          upta_head_q_i;       // headrooms, 0: exceeded (Fig. 7)
    bit<16>          upta_head_q_u;
    bit<16>          upta_head_u_i;
    bit<32>          upta_rate_over_fs_i; // R |-| fs: != 0, eq. 17 rewrites q
    bit<32>          upta_rate_over_fs_u;
    bit<16>          upta_q_new_i;        // eq. 17's q' in state I, U
    bit<16>          upta_q_new_u;
    bit<8>           upta_code_if_i;      // the state register's new value, by old state
    bit<8>           upta_code_if_u;
    bit<8>           upta_code;           // what it wrote (UPTA_CODE_*)
    bit<1>           upta_sig_changed;
    bit<32>          upta_last;           // the slot's last arrival (1.024 us), 0 never
    bit<32>          upta_age;            // now - last
    bit<32>          upta_k_units;        // K = 2^k_shift, in the clock's units
    bit<32>          upta_k_short;        // K |-| age: != 0, within K
    bool             ipv4_forwardable;  // the parser: version 4, no options, length and ttl pass; or IPv6 that passes
    // IPv6 (docs/ipv6.md), the parser's tests: a third extension header, a
    // version that is not 6, hop limit <= 1; and either family's ECN bits
    bool             is_ipv6;          // the parser extracted an IPv6 header (MMAQM_HAS_IPV6)
    bool             ipv6_ext_limit;
    bool             ipv6_bad_version;
    bool             ipv6_hop_expired;
    bit<2>           ip_ecn;
    bool             ttl_expired;     // ttl <= 1 (the parser's test)
    bool             ipv4_too_short;  // total_len < IPV4_MIN_HEADER_BYTES (the parser's test)
    // occupancy_tna.p4's counts, in scaled_t (packets * 2^AVG_FRAC_BITS)
    scaled_t         queue_scaled;          // the port's queue (bit 0: TNA_NOT_COUNTED)
    scaled_t         class_scaled;          // the packet's class (not D-CBT)
    scaled_t         queue_limit_scaled;    // queue_limit_pkts << AVG_FRAC_BITS
    scaled_t         virtual_fifo_scaled;   // tcp + tagged + untagged (D-CBT)
    scaled_t         tcp_seen_scaled;       // the port's classes (D-CBT)
    scaled_t         tagged_seen_scaled;
    scaled_t         untagged_seen_scaled;
    scaled_t         mcdt_tcp_th_scaled;    // MCDT's T_c in the counts' unit
    scaled_t         mcdt_tagged_th_scaled;
    scaled_t         mcdt_untagged_th_scaled;
    pkts_t           mcdt_logical_buffers_pkts;    // mode C: the three thresholds' sum
    scaled_t         mcdt_logical_buffers_scaled;
    scaled_t         mcdt_room_scaled;             // sum |-| queue: 0 <=> queue >= sum
}

struct tna_egress_metadata_t {
    tna_report_h report;   // the departure report egress mirrors
    MirrorId_t   mirror_session;  // TNA_REPORT_SESSION (a deparser needs it in a PHV field)
}

#endif
