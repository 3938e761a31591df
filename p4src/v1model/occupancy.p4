// Exact queue occupancy per egress port and per class, and the queue counters.
// Top-level registers are shared by ingress and egress on BMv2: ingress
// increments when it admits a packet, egress decrements when the packet
// leaves the traffic manager. Every algorithm's admission action starts with
// queue_arrival and ends with queue_admit_or_drop, so the read and the write
// of the occupancy happen inside one action, which BMv2 executes atomically
// with respect to the registers it touches.
// The steps take scalars, not the metadata struct: p4c copies a struct
// argument of a nested action call in and out field by field, which cost BMv2
// 96-310 primitives per packet (bench/README.md).
// The TNA port replaces this file (Tofino cannot share a register between
// ingress and egress).
#ifndef MMAQM_OCCUPANCY_P4
#define MMAQM_OCCUPANCY_P4

#include <v1model.p4>
#include "../shared/headers.p4"

register<pkts_t>(NUM_PORTS) queue_pkts;
// Per class, on the virtual FIFO (chips.p4): a packet that cut in is counted
// until its FIFO slot leaves, not when it leaves. Without ChIPS the two are
// the same moment.
register<pkts_t>(NUM_PORTS * CLASS_SLOTS) class_queue_pkts;
// When the port's queue last became empty (egress), for RED's idle-time decay.
register<timestamp_us_t>(NUM_PORTS) queue_idle_since_us;

// Per egress port and class (index port * CLASS_SLOTS + class).
counter(NUM_PORTS * CLASS_SLOTS, CounterType.packets_and_bytes) queue_arrivals;
counter(NUM_PORTS * CLASS_SLOTS, CounterType.packets_and_bytes) queue_admits;
// Packets that left the queue: occupancy is also admits - departures, which
// P4Runtime can read (registers it cannot, on BMv2).
counter(NUM_PORTS * CLASS_SLOTS, CounterType.packets_and_bytes) queue_departures;
// Index (port * CLASS_SLOTS + class) * NUM_DROP_REASONS + reason.
counter(NUM_PORTS * CLASS_SLOTS * NUM_DROP_REASONS, CounterType.packets_and_bytes) queue_drops;
// Packets RED marked CE instead of dropping (ecn), same index as queue_drops
// with reason RED_EARLY or RED_FORCED. They are admitted, and counted in queue_admits.
counter(NUM_PORTS * CLASS_SLOTS * NUM_DROP_REASONS, CounterType.packets_and_bytes) queue_ecn_marks;

// First step of every admission action: count the arrival and read the
// occupancy it sees.
action queue_arrival(in bit<32> port_index, in bit<32> class_index,
                     out pkts_t queue_pkts_seen, out pkts_t class_pkts_seen) {
    queue_arrivals.count(class_index);
    queue_pkts.read(queue_pkts_seen, port_index);
    class_queue_pkts.read(class_pkts_seen, class_index);
}

// Last step of every admission action: the physical queue limit, then admit
// (occupancy + 1) or count the drop; the caller marks a dropped packet.
// Ingress is the only place that drops, because the traffic manager's queue
// depth is set above queue_limit_pkts. The controller caps queue_limit_pkts at
// 65535 so every threshold scaled by 2^AVG_FRAC_BITS fits in bit<32>.
action queue_admit_or_drop(in bit<32> port_index, in bit<32> class_index,
                           in pkts_t queue_pkts_seen, in pkts_t class_pkts_seen,
                           in pkts_t queue_limit_pkts,
                           inout bool aqm_drop, inout drop_reason_t drop_reason,
                           inout bool ecn_mark, out bool admitted) {
    if (!aqm_drop && queue_pkts_seen >= queue_limit_pkts) {
        aqm_drop = true;
        drop_reason = drop_reason_t.QUEUE_LIMIT;
    }
    if (aqm_drop) {
        ecn_mark = false;
        queue_drops.count(class_index * NUM_DROP_REASONS + (bit<32>)(bit<8>)drop_reason);
        admitted = false;
    } else {
        queue_pkts.write(port_index, queue_pkts_seen + 1);
        class_queue_pkts.write(class_index, class_pkts_seen + 1);
        queue_admits.count(class_index);
        if (ecn_mark) {
            queue_ecn_marks.count(class_index * NUM_DROP_REASONS + (bit<32>)(bit<8>)drop_reason);
        }
        admitted = true;
    }
}

// Egress: an admitted packet left the traffic manager's queue. Its class count
// drops now unless it cut in: then its FIFO slot clone releases it
// (chips_slot_departure). An emptied queue starts an idle period (RED).
action queue_departure(in bit<32> port_index, in bit<32> class_index, in bool cut_in,
                       in timestamp_us_t now_us) {
    pkts_t total;
    queue_pkts.read(total, port_index);
    queue_pkts.write(port_index, total - 1);
    if (total == 1) {
        queue_idle_since_us.write(port_index, now_us);
    }
    if (!cut_in) {
        pkts_t per_class;
        class_queue_pkts.read(per_class, class_index);
        class_queue_pkts.write(class_index, per_class - 1);
    }
    queue_departures.count(class_index);
}

#endif
