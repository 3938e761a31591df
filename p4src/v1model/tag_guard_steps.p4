// The tag guard's admission steps (tag_guard.p4), included inside the CBT,
// D-CBT and ChIPS controls. meta.flow_signature is set: the Aqm control
// (aqm.p4) hashes every tagged packet at one call site, since each call site
// of compute_flow_signature costs five PHV fields. The including file
// defines TAG_GUARD_CLASS_TH_SCALED, the tagged class threshold the packet
// faced (an expression on meta: no parameter, which would cost a PHV field).
// No include guard: each including control gets its own copy of the actions.

// Every tagged packet while the guard is on: its flow's slot and queued
// packets. Each admitted one is counted (tag_guard_admit), whether or not the
// class test applied to it (D-CBT tests only while red_avg > min_th).
@hidden
action tag_guard_arrival() {
    meta.tag_guard_slot = 1 + meta.port_index * TAG_GUARD_SLOTS_PER_PORT
                          + (meta.flow_signature & TAG_GUARD_SLOT_MASK);
    tag_guard_qlen.read(meta.tag_guard_qlen_pkts, meta.tag_guard_slot);
}

// A tagged packet that passed its class test (after tag_guard_arrival): drop
// it early (TAG_GUARD) when its flow holds its part of the class threshold.
@hidden
action tag_guard_test() {
    if (meta.tag_guard_qlen_pkts >= TAG_GUARD_MIN_PKTS
        && (bit<64>)meta.tag_guard_qlen_pkts << 32
           >= (bit<64>)(TAG_GUARD_CLASS_TH_SCALED) * (bit<64>)meta.policy.tag_guard_flow_q16) {
        meta.aqm_drop = true;
        meta.drop_reason = drop_reason_t.TAG_GUARD;
    }
}

// After queue_admit_or_drop, for a packet tag_guard_arrival saw: an admitted
// one is counted in its flow's slot (released in egress).
@hidden
action tag_guard_admit() {
    if (meta.admitted) {
        meta.tag_guard_qlen_pkts = meta.tag_guard_qlen_pkts + 1;
        tag_guard_qlen.write(meta.tag_guard_slot, meta.tag_guard_qlen_pkts);
    } else {
        meta.tag_guard_slot = 0;
    }
}
