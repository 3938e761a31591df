// cbt section 4 (Fig. 4; Table 1, Figs. 5-7) in ns-3: on the two-LAN network, 6 tagged
// CBR flows (ProShare, 210 kbit/s each) from mm1 to mm2, TCP bulk transfers from tcp1
// to tcp2 and one untagged UDP blast from udp1 to udp2, all through r1 -> r2, the
// 10 Mbit/s backbone, with ns-3's drop-tail (FifoQueueDisc), RED (RedQueueDisc) or
// FQ-CoDel at r1's egress. An independent reference for the BMv2 experiment
// (topologies/topos/cbt-two-lan.json, scenarios/cbt-fig4.yaml, policies/cbt-fig4.yaml):
// tools/ns3_cbt.py passes those files' numbers (and the schedule, scaled) as arguments.
//
// Writes raw data as JSON; the runner computes the metrics with the project's own
// functions (mmaqm_exp.analysis / metrics):
//   - per TCP flow, the payload bytes its receiving application got, in bin_s bins;
//   - per UDP packet received: flow, sequence number, send and receive time, IP bytes;
//     per UDP flow the first send time, the last, and the packets sent;
//   - at the bottleneck, per class (by destination host) and bin_s bin: arrivals and
//     drops by ns-3's reason; the queue disc's length and a RED average (the EWMA of
//     the queue length at each arrival, weight qW, no idle decay: RED's estimator, F&J
//     section 4) sampled every bin_s; the queue disc's own counters.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/ppp-header.h"
#include "ns3/traffic-control-module.h"

#include "mmaqm_ns3.h"

#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

using namespace ns3;

namespace
{
constexpr double kBinS = 0.1; // bins of receive bytes and counters; queue sampling interval
constexpr uint16_t kTcpPort = 5000;
constexpr uint16_t kUdpPort = 9000; // tagged i: kUdpPort + i; the blast after them
enum Cls
{
    TCP = 0,
    TAGGED = 1,
    UNTAGGED = 2,
    N_CLS = 3
};
const char* kClsName[N_CLS] = {"TCP", "TAGGED", "UNTAGGED"};

uint32_t g_nBins = 0;
std::vector<std::vector<uint64_t>> g_tcpRx; // [flow][bin]: payload bytes delivered

struct UdpRow
{
    uint32_t flow;
    uint32_t seq;
    int64_t sendNs;
    int64_t recvNs;
    uint32_t bytes;
};

std::vector<UdpRow> g_udpRx;
struct UdpTx
{
    int64_t firstNs = -1;
    int64_t lastNs = -1;
    uint64_t sent = 0;
};

std::vector<UdpTx> g_udpTx;

// bottleneck counters: [class][bin]
std::array<std::vector<uint64_t>, N_CLS> g_arrivals;
std::array<std::map<std::string, std::vector<uint64_t>>, N_CLS> g_drops;
Ipv4Address g_dst[N_CLS]; // the receiving host of each class
std::vector<uint32_t> g_queuePkts;
std::vector<double> g_redAvgPkts;
double g_avg = 0;
double g_qW = 0.001953125;
Ptr<QueueDisc> g_qd;
uint32_t g_bottleneckIf = 0;

uint32_t
BinNow()
{
    return uint32_t(std::floor(Simulator::Now().GetSeconds() / kBinS + 1e-9));
}

int
ClassOf(const Ipv4Header& ip)
{
    for (int c = 0; c < N_CLS; ++c)
    {
        if (ip.GetDestination() == g_dst[c])
        {
            return c;
        }
    }
    return -1; // ACKs and the like: not toward a receiving host
}

void
TcpAppRx(uint32_t flow, Ptr<const Packet> p, const Address&)
{
    uint32_t b = BinNow();
    if (b < g_nBins)
    {
        g_tcpRx[flow][b] += p->GetSize();
    }
}

void
UdpTxTrace(uint32_t flow, Ptr<const Packet>)
{
    int64_t now = Simulator::Now().GetNanoSeconds();
    UdpTx& t = g_udpTx[flow];
    if (t.firstNs < 0)
    {
        t.firstNs = now;
    }
    t.lastNs = now;
    ++t.sent;
}

void
UdpMacRx(Ptr<const Packet> p)
{
    // PointToPointNetDevice MacRx passes the frame with its PPP header.
    Ptr<Packet> c = p->Copy();
    PppHeader ppp;
    c->RemoveHeader(ppp);
    if (ppp.GetProtocol() != 0x0021) // IPv4
    {
        return;
    }
    Ipv4Header ip;
    c->RemoveHeader(ip);
    if (ip.GetProtocol() != UdpL4Protocol::PROT_NUMBER)
    {
        return;
    }
    UdpHeader udp;
    c->RemoveHeader(udp);
    int flow = int(udp.GetDestinationPort()) - kUdpPort;
    if (flow < 0 || flow >= int(g_udpTx.size()))
    {
        return;
    }
    SeqTsHeader st;
    c->PeekHeader(st);
    g_udpRx.push_back({uint32_t(flow), st.GetSeq(), st.GetTs().GetNanoSeconds(),
                       Simulator::Now().GetNanoSeconds(),
                       uint32_t(ip.GetSerializedSize() + ip.GetPayloadSize())});
}

// Every packet r1 forwards: an arrival at the bottleneck if it leaves toward r2. The
// queue disc's length now is the length the arrival finds (RED's nQueued), so the RED
// average is updated here as RED updates it: avg <- (1 - qW) avg + qW q (no idle decay).
void
Forward(const Ipv4Header& ip, Ptr<const Packet>, uint32_t iface)
{
    if (iface != g_bottleneckIf)
    {
        return;
    }
    g_avg = (1 - g_qW) * g_avg + g_qW * g_qd->GetNPackets();
    int c = ClassOf(ip);
    uint32_t b = BinNow();
    if (c >= 0 && b < g_nBins)
    {
        ++g_arrivals[c][b];
    }
}

void
CountDrop(Ptr<const QueueDiscItem> item, const char* reason)
{
    Ptr<const Ipv4QueueDiscItem> ipi = DynamicCast<const Ipv4QueueDiscItem>(item);
    if (!ipi)
    {
        return;
    }
    int c = ClassOf(ipi->GetHeader());
    uint32_t b = BinNow();
    if (c < 0 || b >= g_nBins)
    {
        return;
    }
    auto& v = g_drops[c][reason];
    if (v.empty())
    {
        v.assign(g_nBins, 0);
    }
    ++v[b];
}

void
Sample()
{
    if (g_queuePkts.size() < g_nBins)
    {
        g_queuePkts.push_back(g_qd->GetNPackets());
        g_redAvgPkts.push_back(g_avg);
        Simulator::Schedule(Seconds(kBinS), &Sample);
    }
}

template <typename T>
void
WriteArray(std::ostream& f, const std::vector<T>& v)
{
    f << "[";
    for (size_t i = 0; i < v.size(); ++i)
    {
        f << (i ? "," : "") << v[i];
    }
    f << "]";
}
} // namespace

int
main(int argc, char* argv[])
{
    std::string queue = "red"; // fifo | red | fqcodel
    std::string tcp = "LinuxReno";
    std::string out = "cbt.json";
    uint32_t limitPkts = 60;
    double minThPkts = 15;
    double maxThPkts = 30;
    double maxP = 0.1;
    double qW = 0.001953125;
    bool gentle = false;
    bool wait = false;
    double redIdleLinkMbps = 0; // RED's idle decay at this rate; 0: none (as our RED without bandwidth_pps)
    double durationS = 46;
    double bottleneckMbps = 10;
    double bottleneckDelayMs = 28;
    double lanMbps = 100;
    double lanDelayMs = 1;
    uint32_t packetBytes = 1000;
    uint32_t maxWindowPkts = 20;
    uint32_t initCwndPkts = 0; // 0: the TCP model's own
    uint32_t nTcp = 240;
    double tcpStartS = 8;
    double tcpStopS = 38;
    double tcpStartSpreadMs = 10;
    uint32_t nTagged = 6;
    double taggedKbps = 210;
    double taggedStartS = 0;
    double taggedStopS = 46;
    double blastKbps = 10000;
    double blastStartS = 20;
    double blastStopS = 38;
    uint32_t seed = 1;

    CommandLine cmd(__FILE__);
    cmd.AddValue("queue", "fifo (drop-tail), red or fqcodel", queue);
    cmd.AddValue("tcp", "LinuxReno or NewReno (mmaqm_ns3.h ApplyTcpModel)", tcp);
    cmd.AddValue("out", "output JSON path", out);
    cmd.AddValue("limitPkts", "queue limit, packets", limitPkts);
    cmd.AddValue("minThPkts", "RED min_th, packets", minThPkts);
    cmd.AddValue("maxThPkts", "RED max_th, packets", maxThPkts);
    cmd.AddValue("maxP", "RED max_p", maxP);
    cmd.AddValue("qW", "RED EWMA weight w_q (also the sampled RED average's)", qW);
    cmd.AddValue("gentle", "RED gentle", gentle);
    cmd.AddValue("wait", "RED wait (ns-2 wait_)", wait);
    cmd.AddValue("redIdleLinkMbps", "RED idle decay at this link rate; 0 = no idle decay",
                 redIdleLinkMbps);
    cmd.AddValue("durationS", "simulated seconds", durationS);
    cmd.AddValue("bottleneckMbps", "r1 -> r2 rate", bottleneckMbps);
    cmd.AddValue("bottleneckDelayMs", "r1 - r2 one-way delay", bottleneckDelayMs);
    cmd.AddValue("lanMbps", "host - router rate", lanMbps);
    cmd.AddValue("lanDelayMs", "host - router one-way delay", lanDelayMs);
    cmd.AddValue("packetBytes", "IP packet size of every data packet", packetBytes);
    cmd.AddValue("maxWindowPkts", "receiver window, segments", maxWindowPkts);
    cmd.AddValue("initCwndPkts", "TCP initial window, segments (0: the model's)", initCwndPkts);
    cmd.AddValue("nTcp", "TCP bulk transfers tcp1 -> tcp2", nTcp);
    cmd.AddValue("tcpStartS", "TCP start", tcpStartS);
    cmd.AddValue("tcpStopS", "TCP stop", tcpStopS);
    cmd.AddValue("tcpStartSpreadMs", "TCP flows start uniformly in [start, start + this)",
                 tcpStartSpreadMs);
    cmd.AddValue("nTagged", "tagged CBR flows mm1 -> mm2 (ProShare)", nTagged);
    cmd.AddValue("taggedKbps", "each tagged flow's rate, IP kbit/s", taggedKbps);
    cmd.AddValue("taggedStartS", "tagged start (each offset uniformly within one packet "
                                 "interval)", taggedStartS);
    cmd.AddValue("taggedStopS", "tagged stop", taggedStopS);
    cmd.AddValue("blastKbps", "the untagged blast's rate, IP kbit/s", blastKbps);
    cmd.AddValue("blastStartS", "blast start", blastStartS);
    cmd.AddValue("blastStopS", "blast stop", blastStopS);
    cmd.AddValue("seed", "RngRun", seed);
    cmd.Parse(argc, argv);

    mmaqm::QueueSpec qs;
    qs.kind = queue;
    qs.limitPkts = limitPkts;
    qs.minThPkts = minThPkts;
    qs.maxThPkts = maxThPkts;
    qs.maxP = maxP;
    qs.qW = qW;
    qs.gentle = gentle;
    qs.wait = wait;
    qs.meanPktBytes = packetBytes;
    // RED's idle decay: m = idle time x LinkBandwidth / (8 MeanPktSize) packets, rounded
    // down; at 1 bit/s it is 0 for any idle time below 8 000 s, so no decay.
    qs.linkMbps = redIdleLinkMbps > 0 ? redIdleLinkMbps : 1e-6;
    qs.linkDelayMs = bottleneckDelayMs;
    bool ok = mmaqm::ValidQueueSpec(qs) && (tcp == "LinuxReno" || tcp == "NewReno") &&
              durationS > 0 && nTcp > 0 && tcpStartS < tcpStopS && nTagged > 0 &&
              taggedKbps > 0 && taggedStartS < taggedStopS && blastKbps > 0 &&
              blastStartS < blastStopS && packetBytes > 100 && bottleneckMbps > 0 &&
              lanMbps > 0 && redIdleLinkMbps >= 0;
    if (!ok)
    {
        std::cerr << "cbt: invalid arguments (queue fifo|red|fqcodel, tcp LinuxReno|NewReno, "
                     "0 < min_th < max_th <= limit, 0 < max_p <= 1, 0 < qW < 1, "
                     "start < stop, rates > 0)\n";
        return 2;
    }
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);
    g_qW = qW;

    uint32_t segBytes = mmaqm::ApplyTcpModel(tcp, packetBytes, maxWindowPkts);
    if (initCwndPkts > 0)
    {
        Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(initCwndPkts));
    }
    // Explicit --ns3::Class::Attribute=value overrides win over the profile.
    cmd.Parse(argc, argv);

    // tcp1, mm1, udp1 - r1 - r2 - tcp2, mm2, udp2 (cbt Fig. 4)
    NodeContainer hosts1;
    hosts1.Create(3);
    NodeContainer hosts2;
    hosts2.Create(3);
    Ptr<Node> r1 = CreateObject<Node>();
    Ptr<Node> r2 = CreateObject<Node>();

    PointToPointHelper lan;
    lan.SetDeviceAttribute("DataRate", DataRateValue(DataRate(lanMbps * 1e6)));
    lan.SetChannelAttribute("Delay", TimeValue(MilliSeconds(lanDelayMs)));
    lan.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    PointToPointHelper bottle;
    bottle.SetDeviceAttribute("DataRate", DataRateValue(DataRate(bottleneckMbps * 1e6)));
    bottle.SetChannelAttribute("Delay", TimeValue(MilliSeconds(bottleneckDelayMs)));
    // One packet in the device: the queue disc holds the rest (no hidden buffer).
    bottle.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));

    std::vector<NetDeviceContainer> left, right;
    for (uint32_t i = 0; i < 3; ++i)
    {
        left.push_back(lan.Install(hosts1.Get(i), r1));
        right.push_back(lan.Install(r2, hosts2.Get(i)));
    }
    NetDeviceContainer d12 = bottle.Install(r1, r2);

    InternetStackHelper stack;
    stack.InstallAll();

    // Every other egress: a 1000-packet FIFO (the BMv2 switches' default limit), so the
    // bottleneck is the only place a packet is lost.
    TrafficControlHelper other;
    other.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue("1000p"));
    for (uint32_t i = 0; i < 3; ++i)
    {
        other.Install(left[i]);
        other.Install(right[i]);
    }
    other.Install(d12.Get(1));
    TrafficControlHelper tch;
    mmaqm::SetRootQueueDisc(tch, qs);
    g_qd = tch.Install(d12.Get(0)).Get(0);

    Ipv4AddressHelper addr;
    std::vector<Ipv4InterfaceContainer> rightIf;
    for (uint32_t i = 0; i < 3; ++i)
    {
        addr.SetBase(Ipv4Address((10u << 24) | ((1 + i) << 8)), "255.255.255.0");
        addr.Assign(left[i]);
        addr.SetBase(Ipv4Address((10u << 24) | ((4 + i) << 8)), "255.255.255.0");
        rightIf.push_back(addr.Assign(right[i]));
    }
    addr.SetBase("10.0.9.0", "255.255.255.0");
    addr.Assign(d12);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    g_dst[TCP] = rightIf[0].GetAddress(1);
    g_dst[TAGGED] = rightIf[1].GetAddress(1);
    g_dst[UNTAGGED] = rightIf[2].GetAddress(1);

    g_nBins = uint32_t(std::llround(durationS / kBinS));
    g_tcpRx.assign(nTcp, std::vector<uint64_t>(g_nBins, 0));
    for (int c = 0; c < N_CLS; ++c)
    {
        g_arrivals[c].assign(g_nBins, 0);
    }
    g_udpTx.assign(nTagged + 1, UdpTx{});

    Ptr<UniformRandomVariable> uv = CreateObject<UniformRandomVariable>();
    // TCP bulk transfers
    std::vector<double> tcpStart;
    for (uint32_t i = 0; i < nTcp; ++i)
    {
        uint16_t port = kTcpPort + i;
        PacketSinkHelper sink("ns3::TcpSocketFactory",
                              InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer sa = sink.Install(hosts2.Get(0));
        sa.Start(Seconds(0));
        sa.Get(0)->TraceConnectWithoutContext("Rx", MakeBoundCallback(&TcpAppRx, i));
        BulkSendHelper src("ns3::TcpSocketFactory",
                           InetSocketAddress(g_dst[TCP], port));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        src.SetAttribute("SendSize", UintegerValue(segBytes));
        ApplicationContainer ca = src.Install(hosts1.Get(0));
        double s = tcpStartS + uv->GetValue(0, tcpStartSpreadMs / 1000.0);
        tcpStart.push_back(s);
        ca.Start(Seconds(s));
        ca.Stop(Seconds(tcpStopS));
    }
    // UDP CBR flows: the tagged ones (ProShare) and the blast; SeqTsHeader carries the
    // sequence number and the send time; packetBytes IP packets.
    auto cbr = [&](uint32_t flow, Ptr<Node> src, Ptr<Node> dst, Ipv4Address to, double kbps,
                   double start, double stop, bool spreadStart) {
        uint16_t port = kUdpPort + flow;
        PacketSinkHelper sink("ns3::UdpSocketFactory",
                              InetSocketAddress(Ipv4Address::GetAny(), port));
        sink.Install(dst).Start(Seconds(0));
        double intervalS = packetBytes * 8.0 / (kbps * 1e3);
        UdpClientHelper cl(to, port);
        cl.SetAttribute("PacketSize", UintegerValue(packetBytes - 28));
        cl.SetAttribute("Interval", TimeValue(Seconds(intervalS)));
        cl.SetAttribute("MaxPackets", UintegerValue(uint32_t((stop - start) / intervalS) + 2));
        ApplicationContainer a = cl.Install(src);
        a.Get(0)->TraceConnectWithoutContext("Tx", MakeBoundCallback(&UdpTxTrace, flow));
        double s = start + (spreadStart ? uv->GetValue(0, intervalS) : 0.0);
        a.Start(Seconds(s));
        a.Stop(Seconds(stop));
    };
    for (uint32_t i = 0; i < nTagged; ++i)
    {
        cbr(i, hosts1.Get(1), hosts2.Get(1), g_dst[TAGGED], taggedKbps, taggedStartS,
            taggedStopS, true);
    }
    cbr(nTagged, hosts1.Get(2), hosts2.Get(2), g_dst[UNTAGGED], blastKbps, blastStartS,
        blastStopS, false);
    right[1].Get(1)->TraceConnectWithoutContext("MacRx", MakeCallback(&UdpMacRx));
    right[2].Get(1)->TraceConnectWithoutContext("MacRx", MakeCallback(&UdpMacRx));

    Ptr<Ipv4L3Protocol> ip1 = r1->GetObject<Ipv4L3Protocol>();
    g_bottleneckIf = ip1->GetInterfaceForDevice(d12.Get(0));
    ip1->TraceConnectWithoutContext("UnicastForward", MakeCallback(&Forward));
    g_qd->TraceConnectWithoutContext("DropBeforeEnqueue", MakeCallback(&CountDrop));
    g_qd->TraceConnectWithoutContext("DropAfterDequeue", MakeCallback(&CountDrop));
    Simulator::Schedule(Seconds(0), &Sample);
    // At the stop the BMv2 harness aborts every transfer (tcpbulk: SO_LINGER 0, an RST),
    // so data still in the send buffers never leaves; BulkSend's Stop closes gracefully
    // and would send it all. Here r1 drops whatever tcp1 sends from the stop on.
    Ptr<NetDevice> r1FromTcp1 = left[0].Get(1);
    Simulator::Schedule(Seconds(tcpStopS), [r1FromTcp1]() {
        Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
        em->SetAttribute("ErrorUnit", StringValue("ERROR_UNIT_PACKET"));
        em->SetAttribute("ErrorRate", DoubleValue(1.0));
        r1FromTcp1->SetAttribute("ReceiveErrorModel", PointerValue(em));
    });

    Simulator::Stop(Seconds(durationS));
    Simulator::Run();

    std::ofstream f(out);
    f.precision(9);
    f << "{\n  \"schema\": \"mmaqm-ns3-cbt-raw/1\",\n  \"ns3_version\": \"3.44\",\n";
    f << "  \"queue\": \"" << queue << "\", \"tcp\": \"" << tcp << "\", \"seed\": " << seed
      << ",\n";
    f << "  \"duration_s\": " << durationS << ", \"bin_s\": " << kBinS
      << ", \"segment_bytes\": " << segBytes << ", \"packet_bytes\": " << packetBytes
      << ", \"bottleneck_mbps\": " << bottleneckMbps << ",\n";
    f << "  \"tcp_start_s\": ";
    WriteArray(f, tcpStart);
    f << ",\n  \"tcp_rx_payload_bytes\": [\n";
    for (uint32_t i = 0; i < nTcp; ++i)
    {
        f << "    ";
        WriteArray(f, g_tcpRx[i]);
        f << (i + 1 < nTcp ? ",\n" : "\n");
    }
    f << "  ],\n  \"udp_tx\": [";
    for (size_t i = 0; i < g_udpTx.size(); ++i)
    {
        f << (i ? ", " : "") << "{\"first_ns\": " << g_udpTx[i].firstNs
          << ", \"last_ns\": " << g_udpTx[i].lastNs << ", \"sent\": " << g_udpTx[i].sent
          << "}";
    }
    f << "],\n  \"udp_rx\": [";
    for (size_t i = 0; i < g_udpRx.size(); ++i)
    {
        const UdpRow& r = g_udpRx[i];
        f << (i ? "," : "") << (i % 8 == 0 ? "\n    " : "") << "[" << r.flow << "," << r.seq
          << "," << r.sendNs << "," << r.recvNs << "," << r.bytes << "]";
    }
    f << "],\n  \"counters\": {";
    for (int c = 0; c < N_CLS; ++c)
    {
        f << (c ? ",\n    " : "\n    ") << "\"" << kClsName[c] << "\": {\"arrivals\": ";
        WriteArray(f, g_arrivals[c]);
        f << ", \"drops\": {";
        bool first = true;
        for (const auto& [reason, v] : g_drops[c])
        {
            f << (first ? "" : ", ") << "\"" << reason << "\": ";
            WriteArray(f, v);
            first = false;
        }
        f << "}}";
    }
    f << "},\n  \"queue_pkts\": ";
    WriteArray(f, g_queuePkts);
    f << ",\n  \"red_avg_pkts\": ";
    WriteArray(f, g_redAvgPkts);
    f << ",\n  \"bottleneck\": {";
    mmaqm::WriteQueueDiscStats(f, g_qd);
    f << "}\n}\n";
    f.close();
    Simulator::Destroy();
    return f ? 0 : 1;
}
