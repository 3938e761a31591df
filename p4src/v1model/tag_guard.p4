// The per-flow guard inside the tagged class (docs/algorithms/tag-guard.md), for
// CBT, D-CBT and D-CBT with ChIPS. Off unless the policy's tag_guard_flow_q16
// is non-zero; then the papers' algorithms are unchanged except for this rule.
//
// CBT and D-CBT protect the tagged class as a whole (cbt §3, dcbt §3.1); a
// sender sets its own DSCP, so one unresponsive flow marked tagged takes the
// class's allowance from the honest ones. The guard gives each tagged flow its
// part of the class threshold:
//   allowance = class threshold * tolerance / n_tagged
// (n_tagged: the tagged active flows the controller counts, dcbt §3.1), and
// drops a tagged packet early (TAG_GUARD) when its flow already holds that many
// packets in the queue, and at least TAG_GUARD_MIN_PKTS. The class threshold is
// tagged_th (CBT) or red_avg * share_tagged (D-CBT), the one the packet faced;
// the guard runs where the class test does (D-CBT: only while red_avg > min_th).
// The controller sends tolerance / n_tagged as tag_guard_flow_q16, so the test
// is one cross-multiplication, exact in bit<64>:
//   qlen << 32 >= class_th_scaled * tag_guard_flow_q16.
// Per-flow state: one bit<16> count of queued packets per hashed slot (FRED's
// qlen, fred.p4), +1 on admission, -1 on departure (egress, tag_guard_departure).
// A packet admitted while the guard is off carries no slot and is not counted.
#ifndef MMAQM_TAG_GUARD_P4
#define MMAQM_TAG_GUARD_P4

#include <v1model.p4>

// Index 1 + port * TAG_GUARD_SLOTS_PER_PORT + slot; index 0 is unused.
register<bit<16>>(NUM_PORTS * TAG_GUARD_SLOTS_PER_PORT + 1) tag_guard_qlen;

// Egress (main.p4, release_departure): a counted packet left; its flow's
// count drops, never below 0.

#endif
