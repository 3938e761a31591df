// Class-Based Threshold (cbt §3, §4.1-4.2): two algorithms, one control each.
// Static thresholds on the weighted average number of enqueued packets of the
// tagged and untagged UDP classes. A class average is updated on arrivals of
// that class only, as published (dcbt §6.1 calls this "unsynchronized").
// A UDP packet whose class average exceeds its threshold is dropped. Otherwise:
//   CBT with RED for all      : it goes on to the RED test; RED's average counts
//                               every packet that reaches the RED unit (TCP and
//                               threshold survivors);
//   CBT with RED for TCP only : it is enqueued; only TCP is RED-tested and
//                               RED's average counts TCP packets only.
#ifndef MMAQM_CBT_P4
#define MMAQM_CBT_P4

#include <v1model.p4>
#include "averages.p4"
#include "red.p4"
#include "tag_guard.p4"

#ifdef MMAQM_HAS_CBT_RED_ALL
// CBT with RED for all.
control CbtRedAll(inout headers_t hdr, inout local_metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
#include "occupancy_steps.p4"
#include "red_steps.p4"
#include "tag_guard_steps.p4"
#include "cbt_steps.p4"

    @hidden  // applied by the control, never by the controller: not in the P4Info
    action cbt_red_all_admission() {
        queue_arrival();
        red_on_policy_epoch();
        if (meta.class_id != traffic_class_t.TCP) {
            cbt_class_test();
        }
        if (!meta.aqm_drop) {
            red_average_update(meta.occupancy.queue_pkts);
            red_drop_test();
        }
        queue_admit_or_drop();
        if (meta.tag_guard_slot != 0) {
            tag_guard_admit();
        }
        if (meta.aqm_drop) {
            mark_to_drop(standard_metadata);
        }
        if (meta.ecn_mark) {
            hdr.ipv4.ecn = ECN_CE;   // the invalid family's write is never emitted
            hdr.ipv6.ecn = ECN_CE;
        }
    }

    apply {
        cbt_red_all_admission();
    }
}
#endif

#ifdef MMAQM_HAS_CBT_RED_TCP_ONLY
// CBT with RED for TCP only. A TCP packet's own class occupancy is the TCP
// occupancy RED averages here (cbt §3).
control CbtRedTcpOnly(inout headers_t hdr, inout local_metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
#include "occupancy_steps.p4"
#include "red_steps.p4"
#include "tag_guard_steps.p4"
#include "cbt_steps.p4"

    @hidden  // applied by the control, never by the controller: not in the P4Info
    action cbt_red_tcp_only_admission() {
        queue_arrival();
        red_on_policy_epoch();
        if (meta.class_id != traffic_class_t.TCP) {
            cbt_class_test();
        } else {
            red_average_update(meta.occupancy.class_pkts);
            red_drop_test();
        }
        queue_admit_or_drop();
        if (meta.tag_guard_slot != 0) {
            tag_guard_admit();
        }
        if (meta.aqm_drop) {
            mark_to_drop(standard_metadata);
        }
        if (meta.ecn_mark) {
            hdr.ipv4.ecn = ECN_CE;   // the invalid family's write is never emitted
            hdr.ipv6.ecn = ECN_CE;
        }
    }

    apply {
        cbt_red_tcp_only_admission();
    }
}
#endif

#endif
