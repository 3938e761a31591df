// The per-flow guard inside the tagged class (docs/algorithms/tag-guard.md), for
// CBT, D-CBT and D-CBT with ChIPS. Off unless the policy's tag_guard_interval_us
// is non-zero; then the papers' algorithms are unchanged except for this rule.
//
// CBT and D-CBT protect the tagged class as a whole (cbt §3, dcbt §3.1); a
// sender sets its own DSCP, so one unresponsive flow marked tagged takes the
// class's allowance from the honest ones. The guard holds each tagged flow to
// its part of the link's rate, tolerance times the per-flow fair share
// C / n_all (the tagged class's share n_tagged / n_all of C, over its n_tagged
// flows; dcbt §3.1 counts both), with a per-flow rate policer: the generic
// cell rate algorithm's virtual scheduling (ITU-T I.371), in packets, as the
// papers count them. The controller sends the interval between a flow's
// packets at that rate, T = n_all / (tolerance * link_pps), in microseconds.
// Each flow slot holds a theoretical arrival time TAT (bit<48> microseconds,
// the ingress timestamp's width: it does not wrap). A tagged packet that passed
// its class test at time t is dropped early (TAG_GUARD) when
//   TAT > t + TAG_GUARD_BURST_PKTS * T
// (its flow is more than that many packets ahead of its rate), and an admitted
// one moves its flow's TAT to max(TAT, t) + T. The guard tests every tagged
// packet that its class test did not drop, also while D-CBT's class test is
// off (red_avg <= min_th): an unresponsive flow must not get through while the
// average is low, and an honest flow under its rate never meets it.
// A queue-occupancy count per flow cannot do this: with RED's short queues a
// fair flow holds less than one packet (docs/algorithms/tag-guard.md).
#ifndef MMAQM_TAG_GUARD_P4
#define MMAQM_TAG_GUARD_P4

#include <v1model.p4>

// Index 1 + port * TAG_GUARD_SLOTS_PER_PORT + slot; index 0 is unused.
register<bit<48>>(NUM_PORTS * TAG_GUARD_SLOTS_PER_PORT + 1) tag_guard_tat;

#endif
