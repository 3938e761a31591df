// Traffic classifier (cbt §3, dcbt §3.1): (IP protocol, DSCP) -> TCP / TAGGED / UNTAGGED.
// Which DSCP values mark multimedia is configuration: the controller fills the table.
// Anything that matches no entry is UNTAGGED ("everything else that is not TCP").
#ifndef MMAQM_CLASSIFIER_P4
#define MMAQM_CLASSIFIER_P4

#include "headers.p4"

control Classifier(in headers_t hdr, inout local_metadata_t meta) {
    action set_class(traffic_class_t class_id) {
        meta.class_id = class_id;
    }

    table classifier {
        key = {
            hdr.ipv4.protocol : ternary @name("ip_proto");
            hdr.ipv4.dscp     : ternary @name("dscp");
        }
        actions = { set_class; }
        const default_action = set_class(traffic_class_t.UNTAGGED);
        size = CLASSIFIER_TABLE_SIZE;
    }

    apply {
        classifier.apply();
    }
}

#endif
