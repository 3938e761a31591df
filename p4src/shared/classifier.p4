// Traffic classifier (cbt §3, dcbt §3.1): (IP protocol, DSCP), IPv4 or IPv6, -> TCP / TAGGED / UNTAGGED.
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
#ifdef MMAQM_HAS_IPV6
            // either family's: IPv4 protocol and TOS DSCP, or IPv6's next
            // header after its extension headers and traffic class DSCP
            meta.ip_proto     : ternary @name("ip_proto");
            meta.dscp         : ternary @name("dscp");
#else
            hdr.ipv4.protocol : ternary @name("ip_proto");
            hdr.ipv4.dscp     : ternary @name("dscp");
#endif
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
