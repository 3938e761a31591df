// Exact queue occupancy per egress port and per class, and the queue counters.
// Top-level registers are shared by ingress and egress on BMv2: ingress
// increments when it admits a packet, egress decrements when the packet
// leaves the traffic manager. Every port_policy action (aqm.p4) starts with
// queue_arrival and ends with queue_admit_or_drop, so the read and the write
// of the occupancy happen inside one action, which BMv2 executes atomically
// with respect to the registers it touches.
// The TNA port replaces this file (Tofino cannot share a register between
// ingress and egress).
#ifndef MMAQM_OCCUPANCY_P4
#define MMAQM_OCCUPANCY_P4

#include <v1model.p4>
#include "headers.p4"

register<pkts_t>(NUM_PORTS) queue_pkts;
register<pkts_t>(NUM_PORTS * CLASS_SLOTS) class_queue_pkts;

// Per egress port and class (index port * CLASS_SLOTS + class).
counter(NUM_PORTS * CLASS_SLOTS, CounterType.packets_and_bytes) queue_arrivals;
counter(NUM_PORTS * CLASS_SLOTS, CounterType.packets_and_bytes) queue_admits;
// Packets that left the queue: occupancy is also admits - departures, which
// P4Runtime can read (registers it cannot, on BMv2).
counter(NUM_PORTS * CLASS_SLOTS, CounterType.packets_and_bytes) queue_departures;
// Index (port * CLASS_SLOTS + class) * NUM_DROP_REASONS + reason.
counter(NUM_PORTS * CLASS_SLOTS * NUM_DROP_REASONS, CounterType.packets_and_bytes) queue_drops;

// First step of every port_policy action: count the arrival and read the
// occupancy it sees.
action queue_arrival(inout local_metadata_t meta, in shift_t flow_epoch_shift) {
    meta.class_index = meta.port_index * CLASS_SLOTS + (bit<32>)(bit<8>)meta.class_id;
    meta.flow_epoch_shift = flow_epoch_shift;
    meta.aqm_applied = true;
    meta.aqm_drop = false;
    queue_arrivals.count(meta.class_index);
    queue_pkts.read(meta.occupancy.queue_pkts, meta.port_index);
    class_queue_pkts.read(meta.occupancy.class_pkts, meta.class_index);
}

// The AQM decided to drop the packet.
action aqm_drop(inout local_metadata_t meta, in drop_reason_t reason) {
    meta.aqm_drop = true;
    meta.drop_reason = reason;
}

// Last step of every port_policy action: the physical queue limit, then admit
// (occupancy + 1) or drop. Ingress is the only place that drops, because the
// traffic manager's queue depth is set above queue_limit_pkts. The controller
// caps queue_limit_pkts at 65535 so every threshold scaled by 2^AVG_FRAC_BITS
// fits in bit<32>.
action queue_admit_or_drop(inout local_metadata_t meta,
                           inout standard_metadata_t standard_metadata,
                           in pkts_t queue_limit_pkts) {
    if (!meta.aqm_drop && meta.occupancy.queue_pkts >= queue_limit_pkts) {
        aqm_drop(meta, drop_reason_t.QUEUE_LIMIT);
    }
    if (meta.aqm_drop) {
        mark_to_drop(standard_metadata);
        queue_drops.count(meta.class_index * NUM_DROP_REASONS + (bit<32>)(bit<8>)meta.drop_reason);
    } else {
        queue_pkts.write(meta.port_index, meta.occupancy.queue_pkts + 1);
        class_queue_pkts.write(meta.class_index, meta.occupancy.class_pkts + 1);
        queue_admits.count(meta.class_index);
        meta.admitted = true;
    }
}

// Egress: the packet left the traffic manager's queue.
action queue_departure(in local_metadata_t meta) {
    pkts_t total;
    pkts_t per_class;
    queue_pkts.read(total, meta.port_index);
    queue_pkts.write(meta.port_index, total - 1);
    class_queue_pkts.read(per_class, meta.class_index);
    class_queue_pkts.write(meta.class_index, per_class - 1);
    queue_departures.count(meta.class_index);
}

#endif
