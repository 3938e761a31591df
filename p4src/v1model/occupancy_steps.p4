// The admission steps on occupancy.p4's registers and counters, included inside
// every algorithm's control (the egress control in main.p4 has the departure).
// They read and write the control's own `meta`. As top-level actions
// with parameters they cost BMv2 a copy in or out per parameter, and p4c a PHV
// field per copy, which BMv2 resets on every packet (docs/profiles.md, "Where
// the instructions go").
// No include guard: each including control gets its own copy of the actions.

// First step of every admission action: count the arrival and read the
// occupancy it sees.
@hidden
action queue_arrival() {
    queue_arrivals.count(meta.class_index);
    queue_pkts.read(meta.occupancy.queue_pkts, meta.port_index);
    class_queue_pkts.read(meta.occupancy.class_pkts, meta.class_index);
}

// Last step of every admission action: the physical queue limit, then admit
// (occupancy + 1, in meta.occupancy too: an expression argument would cost a
// PHV field) or count the drop; the caller marks a dropped packet.
// Ingress is the only place that drops, because the traffic manager's queue
// depth is set above queue_limit_pkts. The controller caps queue_limit_pkts at
// 65535 so every threshold scaled by 2^AVG_FRAC_BITS fits in bit<32>.
@hidden
action queue_admit_or_drop() {
    if (!meta.aqm_drop && meta.occupancy.queue_pkts >= meta.policy.queue_limit_pkts) {
        meta.aqm_drop = true;
        meta.drop_reason = drop_reason_t.QUEUE_LIMIT;
    }
    if (meta.aqm_drop) {
        meta.ecn_mark = false;
        queue_drops.count(meta.class_index * NUM_DROP_REASONS
                          + (bit<32>)(bit<8>)meta.drop_reason);
        meta.admitted = false;
    } else {
        meta.occupancy.queue_pkts = meta.occupancy.queue_pkts + 1;
        queue_pkts.write(meta.port_index, meta.occupancy.queue_pkts);
        meta.occupancy.class_pkts = meta.occupancy.class_pkts + 1;
        class_queue_pkts.write(meta.class_index, meta.occupancy.class_pkts);
        queue_admits.count(meta.class_index);
        if (meta.ecn_mark) {
            queue_ecn_marks.count(meta.class_index * NUM_DROP_REASONS
                                  + (bit<32>)(bit<8>)meta.drop_reason);
        }
        meta.admitted = true;
    }
}
