// feng section 3.1 (Fig. 1, Figs. 2-3(a)) in ns-3: N TCP connections n0 -> n5 over
// a 10 Mbit/s bottleneck r1 -> r2, with ns-3's drop-tail (FifoQueueDisc), RED
// (RedQueueDisc) or FQ-CoDel (FqCoDelQueueDisc) at r1's egress. An independent
// reference for the BMv2 experiment
// (topologies/topos/feng-fig1.json, scenarios/feng-fig2.yaml, policies/feng.yaml):
// tools/ns3_feng.py passes those files' numbers as the arguments below.
//
// Writes raw data as JSON (the runner computes the metrics with the project's own
// definitions): per flow, the IP bytes received at n5 in consecutive bin_s bins;
// the queue disc's length sampled every bin_s; the bottleneck's arrivals and drops.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/ppp-header.h"
#include "ns3/traffic-control-module.h"

#include "mmaqm_ns3.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <vector>

using namespace ns3;

namespace
{
constexpr double kBinS = 0.1; // receive and queue sampling bins (the smallest smoothing window)
constexpr uint16_t kBasePort = 5000;

std::vector<std::vector<uint64_t>> g_rxBytes; // [flow][bin]: IP bytes received at n5
std::vector<uint32_t> g_queuePkts;            // queue disc length every kBinS
uint32_t g_nBins = 0;

void
MacRx(Ptr<const Packet> p)
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
    if (ip.GetProtocol() != TcpL4Protocol::PROT_NUMBER)
    {
        return;
    }
    TcpHeader tcp;
    c->PeekHeader(tcp);
    int flow = int(tcp.GetDestinationPort()) - kBasePort;
    if (flow < 0 || flow >= int(g_rxBytes.size()))
    {
        return;
    }
    auto bin = uint32_t(std::floor(Simulator::Now().GetSeconds() / kBinS + 1e-9));
    if (bin < g_nBins)
    {
        g_rxBytes[flow][bin] += ip.GetSerializedSize() + ip.GetPayloadSize(); // IP bytes
    }
}

void
SampleQueue(Ptr<QueueDisc> q)
{
    if (g_queuePkts.size() < g_nBins)
    {
        g_queuePkts.push_back(q->GetNPackets());
        Simulator::Schedule(Seconds(kBinS), &SampleQueue, q);
    }
}
} // namespace

int
main(int argc, char* argv[])
{
    std::string queue = "fifo"; // fifo | red
    std::string tcp = "LinuxReno"; // LinuxReno | NewReno
    std::string out = "feng.json";
    uint32_t flows = 4;
    uint32_t limitPkts = 20;
    double minThPkts = 5;
    double maxThPkts = 15;
    double maxP = 0.1;
    double qW = 0.001953125;
    double durationS = 64;
    double bottleneckMbps = 10;
    double accessMbps = 45;
    double accessDelayMs = 2;
    double bottleneckDelayMs = 1;
    uint32_t packetBytes = 1000;
    uint32_t maxWindowPkts = 20;
    double startSpreadMs = 10;
    uint32_t seed = 1;

    CommandLine cmd(__FILE__);
    cmd.AddValue("queue", "fifo (drop-tail), red or fqcodel", queue);
    cmd.AddValue("tcp", "LinuxReno or NewReno (see the runner for each profile)", tcp);
    cmd.AddValue("out", "output JSON path", out);
    cmd.AddValue("flows", "TCP connections n0 -> n5", flows);
    cmd.AddValue("limitPkts", "queue limit, packets", limitPkts);
    cmd.AddValue("minThPkts", "RED min_th, packets", minThPkts);
    cmd.AddValue("maxThPkts", "RED max_th, packets", maxThPkts);
    cmd.AddValue("maxP", "RED max_p", maxP);
    cmd.AddValue("qW", "RED EWMA weight w_q", qW);
    cmd.AddValue("durationS", "simulated seconds", durationS);
    cmd.AddValue("bottleneckMbps", "r1 -> r2 rate", bottleneckMbps);
    cmd.AddValue("accessMbps", "n0 - r1 and r2 - n5 rate", accessMbps);
    cmd.AddValue("accessDelayMs", "n0 - r1 and r2 - n5 one-way delay", accessDelayMs);
    cmd.AddValue("bottleneckDelayMs", "r1 - r2 one-way delay", bottleneckDelayMs);
    cmd.AddValue("packetBytes", "IP packet size of a full segment", packetBytes);
    cmd.AddValue("maxWindowPkts", "receiver window, segments (ns-2 window_)", maxWindowPkts);
    cmd.AddValue("startSpreadMs", "flows start uniformly in [0, this)", startSpreadMs);
    cmd.AddValue("seed", "RngRun", seed);
    cmd.Parse(argc, argv);

    if ((queue != "fifo" && queue != "red" && queue != "fqcodel") ||
        (tcp != "LinuxReno" && tcp != "NewReno") ||
        flows == 0 || limitPkts == 0 || durationS <= 0 ||
        (queue == "red" && !(minThPkts < maxThPkts && maxThPkts <= limitPkts && maxP > 0 &&
                             maxP <= 1 && qW > 0 && qW < 1)))
    {
        std::cerr << "feng: invalid arguments (queue fifo|red|fqcodel, tcp LinuxReno|NewReno, "
                     "0 < min_th < max_th <= limit, 0 < max_p <= 1, 0 < qW < 1)\n";
        return 2;
    }
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    // The TCP model (mmaqm_ns3.h): both send packetBytes IP packets, capped at
    // maxWindowPkts segments by the receiver window.
    uint32_t segBytes = mmaqm::ApplyTcpModel(tcp, packetBytes, maxWindowPkts);

    // Parse again so that explicit --ns3::Class::Attribute=value overrides win over
    // the profile (used to isolate which difference matters).
    cmd.Parse(argc, argv);

    NodeContainer nodes;
    nodes.Create(4); // n0, r1, r2, n5
    Ptr<Node> n0 = nodes.Get(0);
    Ptr<Node> r1 = nodes.Get(1);
    Ptr<Node> r2 = nodes.Get(2);
    Ptr<Node> n5 = nodes.Get(3);

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", DataRateValue(DataRate(accessMbps * 1e6)));
    access.SetChannelAttribute("Delay", TimeValue(MilliSeconds(accessDelayMs)));
    access.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    PointToPointHelper bottle;
    bottle.SetDeviceAttribute("DataRate", DataRateValue(DataRate(bottleneckMbps * 1e6)));
    bottle.SetChannelAttribute("Delay", TimeValue(MilliSeconds(bottleneckDelayMs)));
    // One packet in the device: the queue disc holds the rest (no hidden buffer).
    bottle.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));

    NetDeviceContainer d01 = access.Install(n0, r1);
    NetDeviceContainer d12 = bottle.Install(r1, r2);
    NetDeviceContainer d25 = access.Install(r2, n5);

    InternetStackHelper stack;
    stack.Install(nodes);

    // The queue disc with policies/feng.yaml's numbers (mmaqm_ns3.h): RED with no
    // gentle and no wait, as our RED there; idle decay at the link rate (ns's RED).
    mmaqm::QueueSpec qs;
    qs.kind = queue;
    qs.limitPkts = limitPkts;
    qs.minThPkts = minThPkts;
    qs.maxThPkts = maxThPkts;
    qs.maxP = maxP;
    qs.qW = qW;
    qs.meanPktBytes = packetBytes;
    qs.linkMbps = bottleneckMbps;
    qs.linkDelayMs = bottleneckDelayMs;
    TrafficControlHelper tch;
    mmaqm::SetRootQueueDisc(tch, qs);
    // Only r1's egress toward r2 is the bottleneck queue.
    QueueDiscContainer qdiscs = tch.Install(d12.Get(0));
    Ptr<QueueDisc> qd = qdiscs.Get(0);

    Ipv4AddressHelper addr;
    addr.SetBase("10.0.1.0", "255.255.255.0");
    addr.Assign(d01);
    addr.SetBase("10.0.2.0", "255.255.255.0");
    addr.Assign(d12);
    addr.SetBase("10.0.3.0", "255.255.255.0");
    Ipv4InterfaceContainer i25 = addr.Assign(d25);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    g_nBins = uint32_t(std::llround(durationS / kBinS));
    g_rxBytes.assign(flows, std::vector<uint64_t>(g_nBins, 0));

    Ptr<UniformRandomVariable> start = CreateObject<UniformRandomVariable>();
    std::vector<double> startS;
    for (uint32_t i = 0; i < flows; ++i)
    {
        uint16_t port = kBasePort + i;
        PacketSinkHelper sink("ns3::TcpSocketFactory",
                              InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer sa = sink.Install(n5);
        sa.Start(Seconds(0));
        BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(i25.GetAddress(1), port));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        src.SetAttribute("SendSize", UintegerValue(segBytes));
        ApplicationContainer ca = src.Install(n0);
        double s = start->GetValue(0, startSpreadMs / 1000.0);
        startS.push_back(s);
        ca.Start(Seconds(s));
        ca.Stop(Seconds(durationS));
    }
    d25.Get(1)->TraceConnectWithoutContext("MacRx", MakeCallback(&MacRx));
    Simulator::Schedule(Seconds(kBinS / 2), &SampleQueue, qd);

    Simulator::Stop(Seconds(durationS));
    Simulator::Run();

    std::ofstream f(out);
    f.precision(9);
    f << "{\n  \"schema\": \"mmaqm-ns3-feng-raw/1\",\n";
    f << "  \"ns3_version\": \"3.44\",\n";
    f << "  \"queue\": \"" << queue << "\", \"tcp\": \"" << tcp << "\", \"seed\": " << seed
      << ",\n";
    f << "  \"duration_s\": " << durationS << ", \"bin_s\": " << kBinS
      << ", \"segment_bytes\": " << segBytes << ",\n";
    f << "  \"params\": {\"flows\": " << flows << ", \"limit_pkts\": " << limitPkts
      << ", \"min_th_pkts\": " << minThPkts << ", \"max_th_pkts\": " << maxThPkts
      << ", \"max_p\": " << maxP << ", \"ewma_weight\": " << qW
      << ", \"bottleneck_mbps\": " << bottleneckMbps << ", \"access_mbps\": " << accessMbps
      << ", \"access_delay_ms\": " << accessDelayMs
      << ", \"bottleneck_delay_ms\": " << bottleneckDelayMs
      << ", \"packet_bytes\": " << packetBytes << ", \"max_window_pkts\": " << maxWindowPkts
      << "},\n";
    f << "  \"start_s\": [";
    for (uint32_t i = 0; i < flows; ++i)
    {
        f << (i ? ", " : "") << startS[i];
    }
    f << "],\n  \"rx_bytes_ip\": [\n";
    for (uint32_t i = 0; i < flows; ++i)
    {
        f << "    [";
        for (uint32_t b = 0; b < g_nBins; ++b)
        {
            f << (b ? "," : "") << g_rxBytes[i][b];
        }
        f << "]" << (i + 1 < flows ? "," : "") << "\n";
    }
    f << "  ],\n  \"queue_pkts\": [";
    for (size_t b = 0; b < g_queuePkts.size(); ++b)
    {
        f << (b ? "," : "") << g_queuePkts[b];
    }
    f << "],\n  \"bottleneck\": {";
    mmaqm::WriteQueueDiscStats(f, qd);
    f << "}\n}\n";
    f.close();
    Simulator::Destroy();
    return f ? 0 : 1;
}
