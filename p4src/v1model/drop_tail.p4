// Drop-tail: only the physical queue limit (the baseline every paper compares with).
#ifndef MMAQM_DROP_TAIL_P4
#define MMAQM_DROP_TAIL_P4

#include <v1model.p4>
#include "occupancy.p4"

control DropTail(inout headers_t hdr, inout local_metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
#include "occupancy_steps.p4"

    @hidden  // applied by the control, never by the controller: not in the P4Info
    action drop_tail_admission() {
        queue_arrival();
        queue_admit_or_drop();
        if (meta.aqm_drop) {
            mark_to_drop(standard_metadata);
        }
    }

    apply {
        drop_tail_admission();
    }
}

#endif
