// Exact queue occupancy per egress port and per class, and the queue counters.
// Top-level registers are shared by ingress and egress on BMv2: ingress
// increments when it admits a packet, egress decrements when the packet
// leaves the traffic manager. Every algorithm's admission action starts with
// queue_arrival and ends with queue_admit_or_drop, so the read and the write
// of the occupancy happen inside one action, which BMv2 executes atomically
// with respect to the registers it touches.
// The steps themselves (occupancy_steps.p4) are included inside each control
// that runs them.
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

#endif
