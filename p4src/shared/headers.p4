// Packet headers, metadata and the flow digest.
#ifndef MMAQM_HEADERS_P4
#define MMAQM_HEADERS_P4

#include "defines.p4"

header ethernet_t {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header ipv4_t {
    bit<4>      version;
    bit<4>      ihl;
    bit<6>      dscp;
    bit<2>      ecn;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

#ifdef MMAQM_HAS_IPV6
// IPv6 fixed header (RFC 8200 §3); the traffic class split as DSCP and ECN
// (RFC 2474, RFC 3168) like the IPv4 TOS byte.
header ipv6_t {
    bit<4>      version;
    bit<6>      dscp;
    bit<2>      ecn;
    bit<20>     flow_label;
    bit<16>     payload_len;
    bit<8>      next_hdr;
    bit<8>      hop_limit;
    ipv6_addr_t src_addr;
    ipv6_addr_t dst_addr;
}

// The first 8 bytes of an extension header the parser skips (RFC 8200
// §4.3-4.6: hop-by-hop, routing, destination options; §4.5 fragment, all of
// it). The fragment fields are a fragment header's; in the others they are the
// first option bytes, opaque. Kept whole and emitted again.
header ipv6_ext_t {
    bit<8>  next_hdr;
    bit<8>  hdr_ext_len;      // a fragment header's reserved byte
    bit<13> frag_offset;
    bit<3>  frag_flags;
    bit<32> frag_id;
}

// The rest of a hop-by-hop, routing or destination options header:
// 8 * hdr_ext_len bytes, opaque.
header ipv6_ext_rest_t {
    varbit<IPV6_EXT_MAX_REST_BITS> rest;
}
#endif

// P-UPTA's loss threshold (upta §4, eq. 17; docs/upta-plan.md §1.5): an IPv4
// option of 4 bytes, type UPTA_OPTION_TYPE, length 4, q in units of 2^-16.
header upta_option_t {
    bit<8>  opt_type;
    bit<8>  opt_len;
    bit<16> q16;
}

header tcp_t {
    l4_port_t src_port;
    l4_port_t dst_port;
    bit<32>   seq_no;
    bit<32>   ack_no;
    bit<4>    data_offset;
    bit<4>    res;
    bit<8>    flags;
    bit<16>   window;
    bit<16>   checksum;
    bit<16>   urgent_ptr;
}

header udp_t {
    l4_port_t src_port;
    l4_port_t dst_port;
    bit<16>   length;
    bit<16>   checksum;
}

header icmp_t {
    bit<8>  icmp_type;
    bit<8>  icmp_code;
    bit<16> checksum;
}

// BFD QoS Probe / Report (upta §5.3, Fig. 8; plan §1.7) after icmp_t (type 20 or 21,
// code, checksum): 12 more bytes; fair shares in the rate unit of upta.p4.
header bfd_t {
    bit<16> identifier;   // the BFD path id (< BFD_PATHS)
    bit<16> sequence;
    bit<32> fs_u;         // Path Minimum Fairshare (U Flows): alpha_min (eq. 23)
    bit<32> fs_i;         // Path Minimum Fairshare (I Flows): alpha'_min (eq. 24)
}

// A probe's Flow Spec (§5.3.2; the layout is ours): flags bit 7 = S (1 I, 0 U).
header bfd_spec_t {
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
    l4_port_t   src_port;
    l4_port_t   dst_port;
    bit<8>      protocol;
    bit<8>      flags;
    bit<16>     reserved;
}

// C-UPTA core (upta §5.3.2: the Flow Specs' S bits are "necessary for fairshare
// estimation at intermediate routers", eqs. 18-19): the specs of a QoS Probe that
// left through a mode-C port, for that router's controller to count the U flows
// in N and M although the ingress edge drops their packets. spec_count specs (1..4)
// in spec 0..spec_count-1 (the parser fills the stack from 0); the other spec
// members are unspecified. Plain bit<> fields, as flow_digest_t.
struct bfd_spec_digest_t {
    port_t      egress_port;
    bit<16>     identifier;   // the probe's BFD path id
    bit<16>     sequence;
    bit<8>      spec_count;
    ipv4_addr_t src_addr0;
    ipv4_addr_t dst_addr0;
    l4_port_t   src_port0;
    l4_port_t   dst_port0;
    bit<8>      protocol0;
    bit<8>      flags0;       // bit 7: S (1 I flow, 0 U flow)
    ipv4_addr_t src_addr1;
    ipv4_addr_t dst_addr1;
    l4_port_t   src_port1;
    l4_port_t   dst_port1;
    bit<8>      protocol1;
    bit<8>      flags1;       // bit 7: S (1 I flow, 0 U flow)
    ipv4_addr_t src_addr2;
    ipv4_addr_t dst_addr2;
    l4_port_t   src_port2;
    l4_port_t   dst_port2;
    bit<8>      protocol2;
    bit<8>      flags2;       // bit 7: S (1 I flow, 0 U flow)
    ipv4_addr_t src_addr3;
    ipv4_addr_t dst_addr3;
    l4_port_t   src_port3;
    l4_port_t   dst_port3;
    bit<8>      protocol3;
    bit<8>      flags3;       // bit 7: S (1 I flow, 0 U flow)
}

// C-UPTA ingress edge (upta §5.3.3): a QoS Report it accepted, whose path minima
// (eqs. 23-24) upta_path now applies: for the controller's log (the path registers
// cannot be read over BMv2's P4Runtime).
struct bfd_report_digest_t {
    bit<16>     identifier;   // the BFD path id
    bit<16>     sequence;
    bit<32>     fs_u;         // alpha_min
    bit<32>     fs_i;         // alpha'_min
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    upta_option_t upta_option;
#ifdef MMAQM_HAS_IPV6
    ipv6_t     ipv6;
    ipv6_ext_t ipv6_ext1;     // IPV6_EXT_MAX_DEPTH extension headers (parser.p4)
    ipv6_ext_rest_t ipv6_ext1_rest;
    ipv6_ext_t ipv6_ext2;
    ipv6_ext_rest_t ipv6_ext2_rest;
#endif
    tcp_t      tcp;
    udp_t      udp;
    icmp_t     icmp;
    bfd_t      bfd;
    bfd_spec_t[4] bfd_specs;  // BFD_MAX_SPECS (upta.BFD_MAX_SPECS)
}

// Exact occupancy of the egress port when the packet arrives (occupancy.p4);
// on v1model, once admitted, with the packet counted in (occupancy_steps.p4).
struct occupancy_t {
    pkts_t queue_pkts;   // every class
    pkts_t class_pkts;   // the packet's own class
}

#ifdef MMAQM_USES_RED_STEPS
// The RED family's working values (v1model red_steps.p4): one set, whatever the
// algorithm, so that the all-in-one program pays for one (BMv2 resets every
// metadata field of every packet).
struct red_work_t {
    policy_epoch_t stored_epoch;      // the port's last policy epoch (red_on_policy_epoch)
#ifdef MMAQM_USES_RED_AVERAGE
    timestamp_us_t idle_since_us;
    bool           idled;             // this arrival ended an idle period (idle decay)
    bit<64>        idle_halvings_q32; // that period's decay: halvings * 2^32
#endif
#ifdef MMAQM_USES_CLASS_AVERAGES
    scaled_t       class_avg_scaled;  // the class average class_average_update left
#endif
#if defined(MMAQM_USES_RED_OPTIONS) || defined(MMAQM_USES_FRED)
    bit<32>        count;             // the drop cycle's count, this arrival included
    bit<32>        rand_q16;          // the drop cycle's R
    bit<64>        p_b_q16;
#endif
}
#endif

// The port's policy, loaded by its port_policy action (aqm.p4). Each algorithm
// reads only its own parameters; the others stay 0.
struct policy_params_t {
    pkts_t         queue_limit_pkts;    // every algorithm
#ifdef MMAQM_USES_POLICY_EPOCH
    policy_epoch_t policy_epoch;        // RED family: a new value resets the averages
#endif
#ifdef MMAQM_USES_RED_AVERAGE
    shift_t        ewma_shift;          // RED family: weight w = 2^-ewma_shift
    scaled_t       min_th_scaled;       // RED family
    scaled_t       max_th_scaled;       // RED family
    q24_t          red_slope_q24;       // RED family: max_p / (max_th - min_th)
#endif
#ifdef MMAQM_USES_CBT
    scaled_t       tagged_th_scaled;    // CBT
#endif
#ifdef MMAQM_USES_CLASS_AVERAGES
    scaled_t       untagged_th_scaled;  // CBT, D-CBT
#endif
#ifdef MMAQM_USES_DCBT
    q16_t          tagged_share_q16;    // D-CBT
#endif
    // RED options (red.p4), tc-red's names where tc has the option
#ifdef MMAQM_USES_RED_AVERAGE
    q32_t          idle_decay_q32;      // halvings of the average per idle us * 2^32; 0 = off
#endif
#ifdef MMAQM_USES_RED_OPTIONS
    flag_t         gentle;              // gentle RED: max_th..2*max_th ramp instead of forced drop
    q16_t          max_p_q16;           // gentle RED: p_b at max_th
    q24_t          gentle_slope_q24;    // gentle RED: (1 - max_p) / max_th per packet
    flag_t         ecn;                 // mark ECN-capable packets CE instead of dropping them
    flag_t         harddrop;            // with ecn: still drop in the forced zone
    flag_t         wait;                // ns-2 wait_: no early drop while count * p_b <= 1
#endif
    // Tag guard (tag_guard.p4): a flow's interval between packets at its allowed
    // rate, n_all / (tolerance * link_pps), in microseconds; 0 = off
#ifdef MMAQM_USES_TAG_GUARD
    bit<32>        tag_guard_interval_us;
#endif
    // ChIPS (dcbt §3.2, chips.p4)
#ifdef MMAQM_USES_CHIPS
    shift_t        chips_ewma_shift;    // weight 2^-k of the tagged share of enqueues
    q16_t          chips_tagged_share_limit_q16;  // ChIPS is on while that share <= this
#endif
    // MCDT (mcdt §II.2, mcdt.p4): per-class thresholds, whole packets, set each period
#ifdef MMAQM_USES_MCDT
    pkts_t         tcp_th_pkts;
    pkts_t         tagged_th_pkts;
    pkts_t         untagged_th_pkts;
    bit<8>         mcdt_mode;           // 0 = mode A, MCDT_MODE_B, MCDT_MODE_C
#endif
    // FRED (fred.p4); also the RED family's thresholds, slope, weight and idle decay
#ifdef MMAQM_USES_FRED
    pkts_t         minq_pkts;           // a flow below max(minq, avgcq) is never dropped early
    bit<32>        fred_slot_mask;      // flow slots on the port - 1 (2^k - 1 < FRED_SLOTS_PER_PORT)
#endif
    // UPTA (upta.p4; docs/upta-plan.md §1.8)
#ifdef MMAQM_USES_UPTA
    bit<8>         upta_mode;           // UPTA_MODE_B, _P or _C
    shift_t        upta_k_shift;        // the estimator's K = 2^k us
    bit<32>        upta_slot_mask;      // flow slots on the port - 1 (2^k - 1 < UPTA_SLOTS_PER_PORT)
    bit<32>        upta_fs_i_scaled;    // fs_I = alpha' (eq. 19), bytes per K * 16; UPTA_FS_NONE
    bit<32>        upta_fs_u_scaled;    // fs_U = alpha (eq. 18)
    bit<32>        upta_inv_fs_i_mant;  // round(2^(16 + s) / fs_I); 0: no eq. 17 rewrite
    bit<32>        upta_inv_fs_u_mant;
    shift_t        upta_inv_fs_i_shift; // s
    shift_t        upta_inv_fs_u_shift;
    bit<16>        upta_tagged_q16;     // loss threshold of tagged packets without the option
#endif
}

struct local_metadata_t {
    traffic_class_t class_id;
    bool            routed;           // an ipv4_lpm entry matched
    port_t          routed_port;      // set by the route, before any AQM drop (flow reports)
    @field_list(CHIPS_SLOT_FIELD_LIST)
    bit<32>         port_index;       // routed_port as a register index
    @field_list(CHIPS_SLOT_FIELD_LIST)
    bit<32>         class_index;      // port_index * CLASS_SLOTS + class_id
#ifdef MMAQM_HAS_IPV6
    // Family-independent copies (parser.p4): the classifier's keys, and the
    // protocol after IPv6's extension headers (the flow's 5-tuple).
    bit<8>          ip_proto;
    bit<6>          dscp;
#endif
    l4_port_t       l4_src_port;
    l4_port_t       l4_dst_port;
    bit<32>         flow_signature;   // crc32 of the 5-tuple, once per packet (v1model flow_signature.p4)
    bool            aqm_applied;      // the egress port has a port_policy entry
    shift_t         flow_epoch_shift; // from the port's policy; 0 = no flow reports
    policy_params_t policy;
    occupancy_t     occupancy;
#ifdef MMAQM_USES_RED_STEPS
    red_work_t      red;
#endif
#ifdef MMAQM_USES_RED_AVERAGE
    scaled_t        red_avg_scaled;   // RED average after this packet's update
#endif
    bit<32>         discard_index;    // v1model: ingress_discards index of this packet's discard
    bool            aqm_drop;
    drop_reason_t   drop_reason;      // why the AQM dropped, or why RED marked (ecn_mark)
    bool            ecn_mark;         // RED marked this ECN-capable packet CE instead of dropping
    bool            admitted;         // set in ingress, read in egress to release occupancy
    // ChIPS: a cut-in packet goes to the cut-in queue; its clone holds its place
    // in the FIFO (the virtual FIFO slot, chips.p4) and keeps the fields
    // annotated @field_list(CHIPS_SLOT_FIELD_LIST): cut_in, port_index, class_index.
#ifdef MMAQM_USES_CHIPS
    @field_list(CHIPS_SLOT_FIELD_LIST)
    bool            cut_in;
#endif
    // Tag guard: the packet's flow slot (tag_guard.p4), 0 = not tested;
    // tag_guard_tat_us: that slot's theoretical arrival time (working value).
#ifdef MMAQM_USES_TAG_GUARD
    bit<32>         tag_guard_slot;
    bit<48>         tag_guard_tat_us;
#endif
    // FRED: ingress admitted the packet under FRED; egress releases its flow slot.
#ifdef MMAQM_USES_FRED
    bool            fred_admitted;
    bit<32>         fred_slot_index;  // port * FRED_SLOTS_PER_PORT + slot
#endif
    // UPTA, C-UPTA (upta.p4): the packet came in on an edge port (its ingress edge),
    // and then the path minima BFD reported for its path (UPTA_FS_NONE: no report).
#ifdef MMAQM_USES_UPTA
    bool            upta_from_edge;
    bool            upta_from_cpu;    // came in on the controller's port (BFD probe origin)
    bit<32>         upta_path_fs_u;
    bit<32>         upta_path_fs_i;
#endif
    // BFD (upta.p4): every flow spec the IPv4 length announces was parsed (so the
    // ICMP checksum can be verified); the message was consumed here (dropped).
    bool            bfd_complete;
#ifndef MMAQM_PROFILE_P4
    // Tofino's UPTA build routes a packet to this router on this address
    // (routing.p4 MMAQM_ROUTE_ANSWERS): the parser sets a QoS Probe's source
    // (its answer's), else the destination; otherwise unused.
    ipv4_addr_t     route_dst_addr;
#endif
#ifdef MMAQM_ROUTE_ANSWERS
    bool            bfd_to_local;     // to this router (routing.p4 upta_local_addr)
#endif
#ifdef MMAQM_USES_UPTA
    bool            bfd_consumed;
#endif
}

// Active-flow report: one per flow per epoch (dcbt §3.1 active flow counting).
// egress_port is the routed port, whatever the AQM decided: a class whose
// packets are all dropped stays counted (dcbt §3.1 counts arrivals).
// Plain bit<> fields only: BMv2's P4Runtime server (PI) sends every digest
// member as a bitstring, which a client decoding by the P4Info type (an enum
// or bool) would misread.
struct flow_digest_t {
    port_t      egress_port;
    bit<8>      class_id;     // a traffic_class_t value
#ifdef MMAQM_HAS_IPV6
    // Either family's flow in one digest: an IPv4 address zero-extended, the
    // family in ip_version (4 or 6), so that the two never share a key.
    ipv6_addr_t src_addr;
    ipv6_addr_t dst_addr;
#else
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
#endif
    bit<8>      protocol;     // IPv6: the next header after the extension headers
    l4_port_t   src_port;
    l4_port_t   dst_port;
    // When the reporting packet arrived: BMv2's ingress_global_timestamp, us since
    // the switch started (flow_report.p4); the controller maps it to its own clock.
    bit<48>     ingress_ts_us;
#ifdef MMAQM_HAS_IPV6
    bit<8>      ip_version;
#endif
}

#endif
