// Queue occupancy on Tofino: the departure-report design (docs/tofino.md).
// v1model (occupancy.p4) shares one register between ingress (+1 on admit) and
// egress (-1 on departure). A Tofino register belongs to one stage of one
// gress, so here ingress owns every occupancy register and egress reports each
// departure back to it: egress mirrors a 64-bit report (tna_report_h: port,
// class, cut_in, FRED slot) to the recirculation port, and ingress applies it
// with the same arithmetic as v1model's queue_departure / chips_slot_departure /
// fred_departure. The count is exact; it lags a departure by the report's
// trip (egress deparser -> mirror buffer -> recirculation -> ingress, order of
// a microsecond), so an arrival can see a packet that has just left.
// One register access per stage per packet: the occupancy register is read and
// incremented by one RegisterAction at arrival, before the AQM has decided. A
// packet the AQM then drops is resubmitted as a CANCEL (64 bits of
// tna_report_h) that undoes its increments; the queue limit itself is decided
// inside the RegisterAction, so a packet above the limit is never counted.
#ifndef MMAQM_OCCUPANCY_TNA_P4
#define MMAQM_OCCUPANCY_TNA_P4

#include "tna_types.p4"

control TnaOccupancy(inout tna_ingress_metadata_t md, in tna_report_h report) {
    Register<scaled_t, tna_index_t>(NUM_PORTS, 0) queue_pkts;
#ifndef MMAQM_TNA_NO_CLASS_OCCUPANCY
    // Per class, on the virtual FIFO (chips.p4): one register per class, so
    // that D-CBT reads the three classes of a port in one pass. (FRED's build
    // keeps none, nor UPTA's: below.)
    Register<scaled_t, tna_index_t>(NUM_PORTS, 0) tcp_pkts;
    Register<scaled_t, tna_index_t>(NUM_PORTS, 0) tagged_pkts;
    Register<scaled_t, tna_index_t>(NUM_PORTS, 0) untagged_pkts;
#endif

    // The registers count in units of 2^-AVG_FRAC_BITS packet (+AVG_ONE a
    // packet): what they return is already an average's sample (scaled_t), with
    // no stage to scale it. The queue limit is below 4096 packets on TNA
    // (tna_encoding.py), so a count stays below 2^28.
    // arrival: the occupancy seen; +1 packet only below the queue limit
    // (occupancy.p4 queue_admit_or_drop's limit test, decided here). At the limit
    // the output carries TNA_NOT_COUNTED (bit 0, always 0 in a count) as well, so
    // the next stage's gateways read the decision from it, without a compare of
    // two fields of their own; as a sample it is 2^-16 packet off.
    RegisterAction<scaled_t, tna_index_t, scaled_t>(queue_pkts) queue_arrive = {
        void apply(inout scaled_t value, out scaled_t seen) {
            if (value < md.queue_limit_scaled) {
                // value itself (bit 0 is 0); spelled as an ALU operation because
                // both outputs must come from one ALU
                seen = value & ~TNA_NOT_COUNTED;
                value = value + AVG_ONE;
            } else {
                seen = value | TNA_NOT_COUNTED;
            }
        }
    };
    RegisterAction<scaled_t, tna_index_t, scaled_t>(queue_pkts) queue_leave = {
        void apply(inout scaled_t value, out scaled_t left) {
            if (value != 0) {
                value = value - AVG_ONE;
            }
            left = value;
        }
    };
    // Healing (docs/tofino.md, "Counts that heal"): a report whose departure left
    // the FIFO empty sets the port's counts to 0, whatever reports were lost.
    RegisterAction<scaled_t, tna_index_t, scaled_t>(queue_pkts) queue_heal = {
        void apply(inout scaled_t value, out scaled_t left) {
            value = 0;
            left = 0;
        }
    };

#ifndef MMAQM_TNA_NO_CLASS_OCCUPANCY
#define MMAQM_CLASS_ACTIONS(R) \
    RegisterAction<scaled_t, tna_index_t, scaled_t>(R) R##_arrive = { \
        void apply(inout scaled_t value, out scaled_t seen) { seen = value; value = value + AVG_ONE; } }; \
    RegisterAction<scaled_t, tna_index_t, scaled_t>(R) R##_read = { \
        void apply(inout scaled_t value, out scaled_t seen) { seen = value; } }; \
    RegisterAction<scaled_t, tna_index_t, scaled_t>(R) R##_leave = { \
        void apply(inout scaled_t value) { if (value != 0) { value = value - AVG_ONE; } } }; \
    RegisterAction<scaled_t, tna_index_t, scaled_t>(R) R##_heal = { \
        void apply(inout scaled_t value) { value = 0; } };
    MMAQM_CLASS_ACTIONS(tcp_pkts)
    MMAQM_CLASS_ACTIONS(tagged_pkts)
    MMAQM_CLASS_ACTIONS(untagged_pkts)
#ifdef MMAQM_TNA_DCBT
    // D-CBT's virtual FIFO (dcbt.p4: tcp + tagged + untagged on the class counts'
    // clock), kept as its own sum so that no stage adds the three up
    Register<scaled_t, tna_index_t>(NUM_PORTS, 0) fifo_pkts;
    MMAQM_CLASS_ACTIONS(fifo_pkts)
#endif
#undef MMAQM_CLASS_ACTIONS
#endif

    // Per egress port and class (index port * CLASS_SLOTS + class), as occupancy.p4.
    Counter<bit<64>, tna_index_t>(NUM_PORTS * CLASS_SLOTS, CounterType_t.PACKETS_AND_BYTES) queue_arrivals;
    Counter<bit<64>, tna_index_t>(NUM_PORTS * CLASS_SLOTS, CounterType_t.PACKETS_AND_BYTES) queue_departures;


    // Arrival of a data packet: md.base.occupancy, md.virtual_fifo_scaled (D-CBT),
    // md.queue_scaled bit 0 (TNA_NOT_COUNTED) 0 = below the queue limit, counted
    // (the AQM may still drop it: then a cancel).
    apply {
        tna_index_t port = md.base.port_index;
        if (md.is_report) {
            // A departure (D), a cut-in packet's slot (S) or a cancel (C).
            // D: the packet left (its class too, unless it cut in: its slot reports
            // that, S); C: undo an arrival the AQM dropped (occupancy.p4 never counted it).
            // (a cancel of an arrival occupancy did not count, above the queue
            // limit, only undoes FRED's qlen: report.counted is 0)
            bool total = report.pkt_type == TNA_PKT_DEPARTURE
                         || (report.pkt_type == TNA_PKT_CANCEL && report.counted == 1);
            bool per_class = report.pkt_type == TNA_PKT_SLOT
                             || (report.pkt_type == TNA_PKT_CANCEL && report.counted == 1)
                             || (report.pkt_type == TNA_PKT_DEPARTURE
                                 && report.cut_in == 0);
            // A departure or FIFO slot that left the FIFO (qid 0) empty: the cut-in
            // queue is empty too (strict priority serves qid 0 only then), so
            // the port holds nothing: every count of it is 0 (docs/tofino.md,
            // "Counts that heal"). A lost report or a TM drop is forgotten here.
            if (report.queue_empty == 1) {
                md.queue_scaled = queue_heal.execute(port);
            } else if (total) {
                md.queue_scaled = queue_leave.execute(port);
            }
#ifndef MMAQM_TNA_NO_CLASS_OCCUPANCY
            if (report.queue_empty == 1) {
                tcp_pkts_heal.execute(port);
                tagged_pkts_heal.execute(port);
                untagged_pkts_heal.execute(port);
#ifdef MMAQM_TNA_DCBT
                fifo_pkts_heal.execute(port);
#endif
            } else if (per_class) {
                if (report.class_id == (bit<2>)(bit<8>)traffic_class_t.TCP) {
                    tcp_pkts_leave.execute(port);
                } else if (report.class_id == (bit<2>)(bit<8>)traffic_class_t.TAGGED) {
                    tagged_pkts_leave.execute(port);
                } else {
                    untagged_pkts_leave.execute(port);
                }
#ifdef MMAQM_TNA_DCBT
                fifo_pkts_leave.execute(port);
#endif
            }
#endif
            if (report.pkt_type == TNA_PKT_DEPARTURE) {
                queue_departures.count(md.base.class_index);
            }
        } else {
            queue_arrivals.count(md.base.class_index);
            md.queue_scaled = queue_arrive.execute(port);
            // Bit 0 (TNA_NOT_COUNTED) is 0 when the arrival was counted; the
            // readers test the bit itself (a flag would cost a stage).
            // The class of the packet is counted when the total was (the limit test).
            // FRED's and UPTA's builds count no class: no rule of theirs reads one, and the
            // stage's stateful ALUs go to their per-flow state.
#if defined(MMAQM_TNA_NO_CLASS_OCCUPANCY)
#elif defined(MMAQM_TNA_DCBT)
            // D-CBT reads all three classes of the port (its virtual FIFO).
            if (md.base.class_id == traffic_class_t.TCP
                    && md.queue_scaled[0:0] == 0) {
                md.tcp_seen_scaled = tcp_pkts_arrive.execute(port);
            } else {
                md.tcp_seen_scaled = tcp_pkts_read.execute(port);
            }
            if (md.base.class_id == traffic_class_t.TAGGED
                    && md.queue_scaled[0:0] == 0) {
                md.tagged_seen_scaled = tagged_pkts_arrive.execute(port);
            } else {
                md.tagged_seen_scaled = tagged_pkts_read.execute(port);
            }
            if (md.base.class_id == traffic_class_t.UNTAGGED
                    && md.queue_scaled[0:0] == 0) {
                md.untagged_seen_scaled = untagged_pkts_arrive.execute(port);
            } else {
                md.untagged_seen_scaled = untagged_pkts_read.execute(port);
            }
            if (md.queue_scaled[0:0] == 0) {
                md.virtual_fifo_scaled = fifo_pkts_arrive.execute(port);
            } else {
                md.virtual_fifo_scaled = fifo_pkts_read.execute(port);
            }
            // (the virtual FIFO's sum is aqm_tna.p4's, after D-CBT's samples:
            // Tofino 1 keeps the order of tables)
#else
            // Every other algorithm reads the packet's own class only.
            if (md.base.class_id == traffic_class_t.TCP) {
                if (md.queue_scaled[0:0] == 0) {
                    md.class_scaled = tcp_pkts_arrive.execute(port);
                } else {
                    md.class_scaled = tcp_pkts_read.execute(port);
                }
            } else if (md.base.class_id == traffic_class_t.TAGGED) {
                if (md.queue_scaled[0:0] == 0) {
                    md.class_scaled = tagged_pkts_arrive.execute(port);
                } else {
                    md.class_scaled = tagged_pkts_read.execute(port);
                }
            } else {
                if (md.queue_scaled[0:0] == 0) {
                    md.class_scaled = untagged_pkts_arrive.execute(port);
                } else {
                    md.class_scaled = untagged_pkts_read.execute(port);
                }
            }
#endif
        }
    }
}

#endif
