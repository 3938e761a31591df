// A driver for mm_app.h's pure parts (FlowControl, MmRecvFlowState, the wire format),
// so that tests/tools/test_ns3_dcbt.py can feed the same events to them and to
// topologies/mmaqm_exp/mmapp.py and compare (the port must agree rule for rule).
//
// stdin, one command a line:
//   init <n_scales> <initial_scale> <now_s> <fb_timeout_s>
//   fb <now_s> <next_seq> <rtt_sample_s or -1> <last_lost_seq>
//   to <now_s> <next_seq>                      (check_timeout)
//   seq <seq>                                  (the receiver's state update)
//   wire <flow_id> <seq> <send_ts_ns> <scale> <rate_kbps> <srtt_us> <flags>
// stdout, one JSON object a line per command.
#include "mm_app.h"

#include <iomanip>
#include <iostream>
#include <sstream>

int
main()
{
    mmaqm::FlowControl fc;
    mmaqm::MmRecvFlowState st;
    std::string line;
    std::cout << std::setprecision(17);
    while (std::getline(std::cin, line))
    {
        std::istringstream is(line);
        std::string cmd;
        is >> cmd;
        if (cmd == "init")
        {
            uint32_t n, s;
            double now, to;
            is >> n >> s >> now >> to;
            fc = mmaqm::FlowControl(n, s, now, to);
            std::cout << "{\"scale\": " << fc.scale << "}\n";
        }
        else if (cmd == "fb" || cmd == "to")
        {
            double now, rtt = -1;
            int64_t next, lost = -1;
            is >> now >> next;
            std::string ev;
            if (cmd == "fb")
            {
                is >> rtt >> lost;
                ev = fc.OnFeedback(now, next, rtt, lost);
            }
            else
            {
                ev = fc.CheckTimeout(now, next) ? "timeout" : "none";
            }
            std::cout << "{\"event\": \"" << ev << "\", \"scale\": " << fc.scale
                      << ", \"srtt\": " << (fc.hasSrtt ? std::to_string(fc.srtt) : "null")
                      << ", \"srtt_exact\": " << (fc.hasSrtt ? fc.srtt : -1)
                      << ", \"cut_seq\": " << fc.cutSeq << ", \"cuts\": " << fc.cuts
                      << ", \"ups\": " << fc.ups << ", \"timeouts\": " << fc.timeouts
                      << ", \"timeout_due\": " << fc.TimeoutDue() << "}\n";
        }
        else if (cmd == "seq")
        {
            int64_t seq;
            is >> seq;
            bool gap = st.Update(seq);
            std::cout << "{\"gap\": " << (gap ? "true" : "false") << ", \"highest\": " << st.highest
                      << ", \"received\": " << st.received << ", \"lost\": " << st.lost
                      << ", \"last_lost_seq\": " << st.lastLostSeq << "}\n";
        }
        else if (cmd == "wire")
        {
            mmaqm::MmDataHeader h;
            uint64_t ts;
            uint32_t scale, flags;
            is >> h.flowId >> h.seq >> ts >> scale >> h.rateKbps >> h.srttUs >> flags;
            h.sendTsNs = int64_t(ts);
            h.scale = uint8_t(scale);
            h.flags = uint8_t(flags);
            uint8_t buf[mmaqm::kMmDataHdrBytes];
            h.Write(buf);
            std::cout << "{\"hex\": \"";
            for (uint8_t b : buf)
            {
                std::cout << std::hex << std::setw(2) << std::setfill('0') << int(b);
            }
            std::cout << std::dec << std::setfill(' ') << "\"}\n";
        }
        else
        {
            std::cerr << "mm_app_check: unknown command " << cmd << "\n";
            return 2;
        }
    }
    return 0;
}
