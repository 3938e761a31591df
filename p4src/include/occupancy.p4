// Exact queue occupancy per egress port and per class.
// Top-level registers are shared by ingress and egress on BMv2 (DESIGN §1):
// ingress increments when it admits a packet, egress decrements when the
// packet leaves the traffic manager. Each read-modify-write lives in one
// action, which BMv2 executes atomically with respect to those registers.
// The TNA port replaces this file only (Tofino cannot share a register
// between ingress and egress).
#ifndef MMAQM_OCCUPANCY_P4
#define MMAQM_OCCUPANCY_P4

#include <v1model.p4>
#include "headers.p4"

register<bit<32>>(NUM_PORTS) queue_pkts;
register<bit<32>>(NUM_PORTS * CLASS_SLOTS) class_queue_pkts;

// Packets that left the queue, per port and class: occupancy is also
// admitted - departed, which P4Runtime can read.
counter(NUM_PORTS * CLASS_SLOTS, CounterType.packets_and_bytes) queue_departures;

control OccupancyRead(inout local_metadata_t meta) {
    apply {
        bit<32> base = meta.port_index * CLASS_SLOTS;
        queue_pkts.read(meta.occupancy.queue_pkts, meta.port_index);
        class_queue_pkts.read(meta.occupancy.tcp_pkts, base + (bit<32>)CLASS_TCP);
        class_queue_pkts.read(meta.occupancy.tagged_pkts, base + (bit<32>)CLASS_TAGGED);
        class_queue_pkts.read(meta.occupancy.untagged_pkts, base + (bit<32>)CLASS_UNTAGGED);
    }
}

control OccupancyAdmit(inout local_metadata_t meta) {
    action admit() {
        bit<32> total;
        bit<32> per_class;
        queue_pkts.read(total, meta.port_index);
        queue_pkts.write(meta.port_index, total + 1);
        class_queue_pkts.read(per_class, meta.class_index);
        class_queue_pkts.write(meta.class_index, per_class + 1);
        meta.admitted = true;
    }
    apply { admit(); }
}

control OccupancyRelease(inout local_metadata_t meta,
                         in standard_metadata_t standard_metadata) {
    action release() {
        bit<32> total;
        bit<32> per_class;
        queue_pkts.read(total, meta.port_index);
        queue_pkts.write(meta.port_index, total - 1);
        class_queue_pkts.read(per_class, meta.class_index);
        class_queue_pkts.write(meta.class_index, per_class - 1);
        queue_departures.count(meta.class_index);
    }
    apply { release(); }
}

#endif
