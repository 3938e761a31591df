// What every mmaqm ns-3 reference scenario shares (docs/ns3.md): the two TCP models,
// the queue discs at the bottleneck, and the JSON of a queue disc's counters.
// A scenario (tools/ns3sim/<paper>.cc) includes this header; tools/ns3common.py
// compiles it against the ns3 wheel.
#pragma once

#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
#include <ostream>
#include <string>

namespace mmaqm
{
using namespace ns3;

// Configure the TCP model for every socket created after this call and return the
// segment size that fills a packetBytes IP packet.
//   LinuxReno: the Linux-like model: Reno as Linux counts it, SACK, timestamps (12
//     option bytes), initial window 10, delayed ACKs every 2nd segment with Linux's 40 ms
//     minimum delayed-ACK timeout (TCP_ATO_MIN; ns-3's default of 200 ms starves flows
//     under RED, docs/ns3.md).
//   NewReno: the papers' ns-2 kind: NewReno, no SACK, no timestamps, initial window 1,
//     an ACK for every segment (ns-2's TCPSink).
// Both: 200 ms minimum RTO; the advertised window capped at maxWindowPkts segments
// (ns-2's window_, the BMv2 harness's receive-window clamp; 0 = no cap) with a large
// receive buffer.
// Returns 0 for an unknown model.
inline uint32_t
ApplyTcpModel(const std::string& tcp, uint32_t packetBytes, uint32_t maxWindowPkts)
{
    uint32_t segBytes;
    if (tcp == "LinuxReno")
    {
        Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpLinuxReno"));
        Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
        Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
        Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
        Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
        Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(40)));
        segBytes = packetBytes - 20 - 20 - 12;
    }
    else if (tcp == "NewReno")
    {
        Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpNewReno"));
        Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(false));
        Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
        Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(1));
        Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
        segBytes = packetBytes - 20 - 20;
    }
    else
    {
        return 0;
    }
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segBytes));
    if (maxWindowPkts > 0)
    {
        Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(false));
        Config::SetDefault("ns3::TcpSocketBase::MaxWindowSize",
                           UintegerValue(std::min<uint32_t>(maxWindowPkts * segBytes, 65535)));
    }
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 20));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 20));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
    return segBytes;
}

// The bottleneck's queue disc, with the BMv2 policy's numbers:
//   fifo    drop-tail of limitPkts packets (FifoQueueDisc);
//   red     RED (Floyd & Jacobson 1993): max_p = 1/LInterm, w_q, no gentle, no wait, hard
//           drops, idle decay at the link rate (as ns's RED);
//   fqcodel FQ-CoDel with ns-3's defaults (1024 flows, 5 ms target, 100 ms interval) and
//           limitPkts packets in all: the flow-queuing baseline a user would pick instead.
// Returns false for an unknown kind.
struct QueueSpec
{
    std::string kind = "fifo";
    uint32_t limitPkts = 100;
    double minThPkts = 5;
    double maxThPkts = 15;
    double maxP = 0.1;
    double qW = 0.002;
    bool gentle = false;
    bool wait = false;
    uint32_t meanPktBytes = 1000;
    double linkMbps = 10;
    double linkDelayMs = 1;
};

inline bool
SetRootQueueDisc(TrafficControlHelper& tch, const QueueSpec& q)
{
    std::string limit = std::to_string(q.limitPkts) + "p";
    if (q.kind == "fifo")
    {
        tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue(limit));
    }
    else if (q.kind == "red")
    {
        tch.SetRootQueueDisc("ns3::RedQueueDisc",
                             "MaxSize", StringValue(limit),
                             "MinTh", DoubleValue(q.minThPkts),
                             "MaxTh", DoubleValue(q.maxThPkts),
                             "LInterm", DoubleValue(1.0 / q.maxP),
                             "QW", DoubleValue(q.qW),
                             "Gentle", BooleanValue(q.gentle),
                             "Wait", BooleanValue(q.wait),
                             "UseEcn", BooleanValue(false),
                             "UseHardDrop", BooleanValue(true),
                             "MeanPktSize", UintegerValue(q.meanPktBytes),
                             "LinkBandwidth", DataRateValue(DataRate(q.linkMbps * 1e6)),
                             "LinkDelay", TimeValue(MilliSeconds(q.linkDelayMs)));
    }
    else if (q.kind == "fqcodel")
    {
        tch.SetRootQueueDisc("ns3::FqCoDelQueueDisc", "MaxSize", StringValue(limit));
    }
    else
    {
        return false;
    }
    return true;
}

inline bool
ValidQueueSpec(const QueueSpec& q)
{
    if (q.limitPkts == 0)
    {
        return false;
    }
    if (q.kind == "red")
    {
        return q.minThPkts < q.maxThPkts && q.maxThPkts <= q.limitPkts && q.maxP > 0 &&
               q.maxP <= 1 && q.qW > 0 && q.qW < 1;
    }
    return q.kind == "fifo" || q.kind == "fqcodel";
}

// "arrivals": …, "drops_total": …, "drops": {reason: count}: a queue disc's counters as
// JSON members (tools/ns3common.py drop_counts names the reasons).
inline void
WriteQueueDiscStats(std::ostream& f, Ptr<QueueDisc> qd)
{
    const QueueDisc::Stats& st = qd->GetStats();
    f << "\"arrivals\": " << st.nTotalReceivedPackets
      << ", \"drops_total\": " << st.nTotalDroppedPackets << ", \"drops\": {";
    bool first = true;
    for (const auto& [reason, n] : st.nDroppedPacketsBeforeEnqueue)
    {
        f << (first ? "" : ", ") << "\"" << reason << "\": " << n;
        first = false;
    }
    for (const auto& [reason, n] : st.nDroppedPacketsAfterDequeue)
    {
        f << (first ? "" : ", ") << "\"" << reason << "\": " << n;
        first = false;
    }
    f << "}";
}
} // namespace mmaqm
