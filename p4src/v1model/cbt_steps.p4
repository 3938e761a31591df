// CBT's class threshold test, included inside both CBT controls (cbt.p4); it
// reads and writes the control's own `meta`. No include guard.

// The class threshold test of a UDP packet (cbt §3): its own class average,
// updated with its class occupancy, against its class threshold. CBT decays no
// class average for idle time: red_average_update, which sets meta.red.idled,
// has not run for this packet. A tagged packet that passes faces the tag guard
// when it is on (tag_guard_steps.p4).
@hidden
action cbt_class_test() {
    class_average_update(meta.class_id, meta.occupancy.class_pkts);
    scaled_t threshold = meta.class_id == traffic_class_t.TAGGED ? meta.policy.tagged_th_scaled
                                                                 : meta.policy.untagged_th_scaled;
    if (meta.red.class_avg_scaled > threshold) {
        meta.aqm_drop = true;
        meta.drop_reason = drop_reason_t.CLASS_THRESHOLD;
    } else if (meta.class_id == traffic_class_t.TAGGED
               && meta.policy.tag_guard_interval_us != 0) {
        tag_guard_test();
    }
}
