// The tag guard's steps (tag_guard.p4), included inside the CBT, D-CBT and
// ChIPS controls. meta.flow_signature is set: the Aqm control (aqm.p4) hashes
// every tagged packet at one call site, since each call site of
// compute_flow_signature costs five PHV fields.
// No include guard: each including control gets its own copy of the actions.

// A tagged packet that passed its class test, with the guard on: its flow's
// slot and theoretical arrival time, then drop it early (TAG_GUARD) when its
// flow is more than TAG_GUARD_BURST_PKTS packets ahead of its allowed rate.
@hidden
action tag_guard_test() {
    meta.tag_guard_slot = 1 + meta.port_index * TAG_GUARD_SLOTS_PER_PORT
                          + (meta.flow_signature & TAG_GUARD_SLOT_MASK);
    tag_guard_tat.read(meta.tag_guard_tat_us, meta.tag_guard_slot);
    if (meta.tag_guard_tat_us > standard_metadata.ingress_global_timestamp
            + (bit<48>)meta.policy.tag_guard_interval_us * (bit<48>)TAG_GUARD_BURST_PKTS) {
        meta.aqm_drop = true;
        meta.drop_reason = drop_reason_t.TAG_GUARD;
    }
}

// After queue_admit_or_drop, for a packet tag_guard_test saw: an admitted one
// moves its flow's TAT to max(TAT, now) + T.
@hidden
action tag_guard_admit() {
    if (meta.admitted) {
        if (meta.tag_guard_tat_us < standard_metadata.ingress_global_timestamp) {
            meta.tag_guard_tat_us = standard_metadata.ingress_global_timestamp;
        }
        meta.tag_guard_tat_us = meta.tag_guard_tat_us
                                + (bit<48>)meta.policy.tag_guard_interval_us;
        tag_guard_tat.write(meta.tag_guard_slot, meta.tag_guard_tat_us);
    }
}
