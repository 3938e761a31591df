// Multiple-Class Dynamic Threshold, MCDT (mcdt §II.2; the three modes of Fig. 2).
// One FIFO; each class (TCP, tagged UDP = the paper's MMU, untagged UDP = its
// UDP) has a logical queue count, class_queue_pkts (occupancy.p4), and a
// threshold in whole packets. An arriving packet is counted ("Counting"), then
// dropped when its class's logical queue before it exceeds the class's threshold
// ("Threshold Test"), else it faces the queue limit and is enqueued ("Enque").
// Packets leave in arrival order in every mode (§II.2: "no additional processes
// in deque procedure"); the modes differ in the logical queue (Fig. 2's caption).
// The paper's text does not describe Fig. 2; our reading (docs/algorithms/mcdt.md):
//   mode A: the class's own packets in the FIFO (class_pkts > T_c);
//   mode B: the FIFO the packet joins, every class's packets (queue_pkts > T_c);
//   mode C: mode A's test, binding only while the queue holds at least the sum
//           of the three thresholds (the logical buffers are full; below that a
//           class may use space the others leave free, eqs. 4 and 9's wastage).
// The thresholds follow eqs. 5-10 once per period in every mode: the controller
// computes them from the per-class arrival counters and the queue occupancy
// (mmaqm.algorithms.mcdt) and modifies this port's policy entry. Nothing here
// averages; the policy epoch is still recorded, so a new MCDT policy resets the
// port's averaged state as every policy with an epoch does.
#ifndef MMAQM_MCDT_P4
#define MMAQM_MCDT_P4

#include <v1model.p4>
#include "occupancy.p4"
#include "red.p4"

control Mcdt(inout headers_t hdr, inout local_metadata_t meta,
             inout standard_metadata_t standard_metadata) {
#include "occupancy_steps.p4"
#include "red_steps.p4"

    @hidden  // applied by the control, never by the controller: not in the P4Info
    action mcdt_admission() {
        queue_arrival();
        red_on_policy_epoch();
        pkts_t threshold = meta.policy.untagged_th_pkts;
        if (meta.class_id == traffic_class_t.TCP) {
            threshold = meta.policy.tcp_th_pkts;
        } else if (meta.class_id == traffic_class_t.TAGGED) {
            threshold = meta.policy.tagged_th_pkts;
        }
        // mcdt §II.2: the class's logical queue (before this packet) exceeds T_c.
        // T_c is fractional; q > T_c <=> q > floor(T_c) for whole packets q.
        pkts_t logical_pkts = meta.occupancy.class_pkts;        // modes A and C
        if (meta.policy.mcdt_mode == MCDT_MODE_B) {
            logical_pkts = meta.occupancy.queue_pkts;           // mode B: the whole FIFO
        }
        bool over_threshold = logical_pkts > threshold;
        if (meta.policy.mcdt_mode == MCDT_MODE_C) {
            // mode C: no class is cut while the queue is below the thresholds' sum
            pkts_t logical_buffers_pkts = meta.policy.tcp_th_pkts
                                          + meta.policy.tagged_th_pkts
                                          + meta.policy.untagged_th_pkts;
            if (meta.occupancy.queue_pkts < logical_buffers_pkts) {
                over_threshold = false;
            }
        }
        if (over_threshold) {
            meta.aqm_drop = true;
            meta.drop_reason = drop_reason_t.CLASS_THRESHOLD;
        }
        queue_admit_or_drop();
        if (meta.aqm_drop) {
            mark_to_drop(standard_metadata);
        }
    }

    apply {
        mcdt_admission();
    }
}

#endif
