// AQM admission of one packet on its egress port: the port_policy table.
// The per-port policy entry selects the algorithm at run time, so one compiled
// program serves every algorithm. Each algorithm is one action with only its
// own parameters (the P4Info lists them); the action does the whole per-packet
// work (arrival, averages, drop test, queue limit, admit or drop), so the AQM
// costs BMv2 one table apply whatever the algorithm.
#ifndef MMAQM_AQM_P4
#define MMAQM_AQM_P4

#include <v1model.p4>
#include "occupancy.p4"
#include "red.p4"
#include "cbt.p4"
#include "dcbt.p4"

// port_policy action: drop-tail, only the physical queue limit.
action drop_tail(inout local_metadata_t meta, inout standard_metadata_t standard_metadata,
                 pkts_t queue_limit_pkts, shift_t flow_epoch_shift) {
    queue_arrival(meta, flow_epoch_shift);
    queue_admit_or_drop(meta, standard_metadata, queue_limit_pkts);
}

// Sets meta.aqm_applied when the port has a policy (queue_arrival does).
control Aqm(inout local_metadata_t meta,
            inout standard_metadata_t standard_metadata) {
    action no_policy() {}

    table port_policy {
        key = { meta.routed_port : exact @name("port"); }
        actions = {
            drop_tail(meta, standard_metadata);
            red(meta, standard_metadata);
            cbt_red_all(meta, standard_metadata);
            cbt_red_tcp_only(meta, standard_metadata);
            dcbt(meta, standard_metadata);
            @defaultonly no_policy;
        }
        const default_action = no_policy();
        size = NUM_PORTS;
    }

    apply {
        port_policy.apply();
    }
}

#endif
