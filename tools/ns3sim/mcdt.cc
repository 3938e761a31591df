// mcdt section III, scenarios 2 and 3 (Kim, Lee & Ham 2005) in ns-3: FTP over TCP,
// tagged MM_APP and untagged CBR over a 10 Mbit/s dumbbell r1 -> r2 with a 100-packet
// queue, with ns-3's drop-tail (FifoQueueDisc), RED (RedQueueDisc) or FQ-CoDel at r1's
// egress. An independent reference for the BMv2 experiments mcdt-s2 / mcdt-s3
// (topologies/topos/mcdt-dumbbell.json, scenarios/mcdt-scenario{2,3}.yaml,
// policies/mcdt.yaml): tools/ns3_mcdt.py passes those files' numbers as the arguments.
//
// Hosts as in the BMv2 topology: tcp1, mm1, cbr1 -> r1 -> r2 -> tcp2, mm2, cbr2. Only
// the bottleneck is rate-limited (the BMv2 harness shapes only its bottleneck port; the
// other ports are veths): access links run at accessMbps with the topology's delays.
//
// Writes raw data as JSON; the runner computes the metrics with the project's own
// definitions. In bins of kBinS: per flow the IP bytes received; per class the packets
// arriving at the bottleneck queue disc and its drops by reason; per UDP class, by the
// bin its packets were sent in, the packets sent, received, and their one-way delays'
// sum and minimum; the queue disc's length every kBinS.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/ppp-header.h"
#include "ns3/traffic-control-module.h"

#include "mcdt_apps.h"
#include "mmaqm_ns3.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <vector>

using namespace ns3;

namespace
{
constexpr double kBinS = 0.1; // every series' bin: the phases' boundaries are multiples of it
constexpr uint16_t kTcpPort = 5000;   // TCP flow i: tcp2:5000+i
constexpr uint16_t kMmPort = 6000;    // MM_APP flow i: mm2:6000+i
constexpr uint16_t kCbrPort = 7000;   // CBR flow i: cbr2:7000+i

enum Cls
{
    TCP = 0,
    TAGGED = 1,
    UNTAGGED = 2,
    N_CLS = 3
};
const char* const kClsName[N_CLS] = {"TCP", "TAGGED", "UNTAGGED"};

// The project's drop-reason names (tools/ns3common.py DROP_REASONS, plus the prefix a
// classful queue disc such as FQ-CoDel puts before its child queue discs' reasons).
std::string
ReasonName(std::string reason)
{
    const std::string child = QueueDisc::CHILD_QUEUE_DISC_DROP;
    if (reason.rfind(child, 0) == 0)
    {
        reason = reason.substr(child.size());
    }
    return reason;
}

// Send time of a UDP data packet, stamped where it leaves its host (the mmapp receiver
// takes the sender's timestamp from the packet in the same way).
class SendTimeTag : public Tag
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("mmaqm::SendTimeTag").SetParent<Tag>().AddConstructor<SendTimeTag>();
        return tid;
    }

    TypeId GetInstanceTypeId() const override
    {
        return GetTypeId();
    }

    uint32_t GetSerializedSize() const override
    {
        return 8;
    }

    void Serialize(TagBuffer i) const override
    {
        i.WriteU64(uint64_t(m_ns));
    }

    void Deserialize(TagBuffer i) override
    {
        m_ns = int64_t(i.ReadU64());
    }

    void Print(std::ostream& os) const override
    {
        os << "send=" << m_ns << "ns";
    }

    int64_t m_ns = 0;
};

struct UdpBin
{
    uint64_t sent = 0;
    uint64_t received = 0;
    double delaySumS = 0;
    double delayMinS = std::numeric_limits<double>::infinity();
};

uint32_t g_nBins = 0;
uint32_t g_nTcp = 0, g_nMm = 0, g_nCbr = 0;
std::vector<std::vector<uint64_t>> g_rxBytes;                  // [flow][bin] IP bytes at the receiver
std::vector<std::vector<uint64_t>> g_arrivals;                 // [class][bin] at the queue disc
std::vector<std::map<std::string, std::vector<uint64_t>>> g_drops; // [class][reason][bin]
std::vector<std::vector<UdpBin>> g_udp;                        // [class][send bin]
std::vector<uint32_t> g_queuePkts;
Ipv4Address g_src[N_CLS];
uint64_t g_unclassified = 0;

int
Bin(double t)
{
    auto b = int(std::floor(t / kBinS + 1e-9));
    return b >= 0 && b < int(g_nBins) ? b : -1;
}

int
ClassOf(Ipv4Address src)
{
    for (int c = 0; c < N_CLS; ++c)
    {
        if (src == g_src[c])
        {
            return c;
        }
    }
    return -1;
}

// A UDP packet leaves mm1 or cbr1 (the frame, with its PPP header): stamp its send
// time, count it sent.
void
SourceMacTx(int cls, Ptr<const Packet> p)
{
    Ptr<Packet> c = p->Copy();
    PppHeader ppp;
    c->RemoveHeader(ppp);
    Ipv4Header ip;
    if (ppp.GetProtocol() != 0x0021 || c->PeekHeader(ip) == 0 ||
        ip.GetProtocol() != UdpL4Protocol::PROT_NUMBER || ip.GetSource() != g_src[cls])
    {
        return;
    }
    SendTimeTag tag;
    tag.m_ns = Simulator::Now().GetNanoSeconds();
    ConstCast<Packet>(p)->AddPacketTag(tag);
    int b = Bin(Simulator::Now().GetSeconds());
    if (b >= 0)
    {
        g_udp[cls][b].sent++;
    }
}

// A packet reaches tcp2, mm2 or cbr2 (the frame, with its PPP header).
void
SinkMacRx(Ptr<const Packet> p)
{
    Ptr<Packet> c = p->Copy();
    PppHeader ppp;
    c->RemoveHeader(ppp);
    if (ppp.GetProtocol() != 0x0021)
    {
        return;
    }
    Ipv4Header ip;
    c->RemoveHeader(ip);
    int cls = ClassOf(ip.GetSource());
    int flow = -1;
    double now = Simulator::Now().GetSeconds();
    if (cls == TCP && ip.GetProtocol() == TcpL4Protocol::PROT_NUMBER)
    {
        TcpHeader tcp;
        c->PeekHeader(tcp);
        int i = int(tcp.GetDestinationPort()) - kTcpPort;
        flow = i >= 0 && i < int(g_nTcp) ? i : -1;
    }
    else if ((cls == TAGGED || cls == UNTAGGED) && ip.GetProtocol() == UdpL4Protocol::PROT_NUMBER)
    {
        UdpHeader udp;
        c->PeekHeader(udp);
        int i = int(udp.GetDestinationPort()) - (cls == TAGGED ? kMmPort : kCbrPort);
        int n = int(cls == TAGGED ? g_nMm : g_nCbr);
        flow = i >= 0 && i < n ? int(g_nTcp) + (cls == TAGGED ? 0 : int(g_nMm)) + i : -1;
        SendTimeTag tag;
        if (flow >= 0 && p->PeekPacketTag(tag))
        {
            double sentS = tag.m_ns / 1e9;
            int sb = Bin(sentS);
            if (sb >= 0)
            {
                UdpBin& u = g_udp[cls][sb];
                u.received++;
                u.delaySumS += now - sentS;
                u.delayMinS = std::min(u.delayMinS, now - sentS);
            }
        }
    }
    int b = Bin(now);
    if (flow >= 0 && b >= 0)
    {
        g_rxBytes[flow][b] += ip.GetSerializedSize() + ip.GetPayloadSize();
    }
}

// r1's IP layer hands a packet to the bottleneck interface (before its queue disc).
uint32_t g_bottleneckIf = 0;

void
RouterTx(Ptr<const Packet> p, Ptr<Ipv4>, uint32_t iface)
{
    if (iface != g_bottleneckIf)
    {
        return;
    }
    Ipv4Header ip;
    p->PeekHeader(ip);
    int cls = ClassOf(ip.GetSource());
    int b = Bin(Simulator::Now().GetSeconds());
    if (cls < 0)
    {
        g_unclassified++;
        return;
    }
    if (b >= 0)
    {
        g_arrivals[cls][b]++;
    }
}

void
QueueDrop(Ptr<const QueueDiscItem> item, const char* reason)
{
    auto ipItem = DynamicCast<const Ipv4QueueDiscItem>(item);
    int cls = ipItem ? ClassOf(ipItem->GetHeader().GetSource()) : -1;
    int b = Bin(Simulator::Now().GetSeconds());
    if (cls < 0)
    {
        g_unclassified++;
        return;
    }
    if (b >= 0)
    {
        auto& v = g_drops[cls][ReasonName(reason)];
        v.resize(g_nBins, 0);
        v[b]++;
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

// "kind,count,start_s,stop_s,rate" groups separated by ';' (rate: kbit/s for cbr, the
// scales "160/170/..." for mmapp).
struct UdpGroup
{
    std::string kind;
    uint32_t count = 0;
    double startS = 0, stopS = 0;
    std::string rate;
};

bool
ParseGroups(const std::string& spec, std::vector<UdpGroup>& out)
{
    std::stringstream ss(spec);
    std::string g;
    while (std::getline(ss, g, ';'))
    {
        if (g.empty())
        {
            continue;
        }
        std::stringstream gs(g);
        std::vector<std::string> f;
        std::string x;
        while (std::getline(gs, x, ','))
        {
            f.push_back(x);
        }
        if (f.size() != 5 || (f[0] != "mmapp" && f[0] != "cbr"))
        {
            return false;
        }
        UdpGroup u;
        u.kind = f[0];
        try
        {
            u.count = std::stoul(f[1]);
            u.startS = std::stod(f[2]);
            u.stopS = std::stod(f[3]);
            if (u.kind == "cbr" && std::stod(f[4]) <= 0)
            {
                return false;
            }
        }
        catch (const std::exception&)
        {
            return false;
        }
        if (u.count == 0 || u.stopS <= u.startS)
        {
            return false;
        }
        u.rate = f[4];
        out.push_back(u);
    }
    return true;
}

std::vector<double>
ParseScales(const std::string& s)
{
    std::vector<double> v;
    std::stringstream ss(s);
    std::string x;
    while (std::getline(ss, x, '/'))
    {
        v.push_back(std::stod(x));
    }
    return v;
}

template <class T>
void
WriteSeries(std::ostream& f, const std::vector<T>& v)
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
    std::string queue = "fifo"; // fifo | red | fqcodel
    std::string tcp = "LinuxReno";
    std::string out = "mcdt.json";
    std::string udp = "mmapp,10,0,50,160/170/180/190/200;cbr,2,10,50,1000";
    uint32_t tcpFlows = 10;
    double tcpStartS = 0, tcpStopS = 50;
    uint32_t limitPkts = 100;
    double minThPkts = 5, maxThPkts = 15, maxP = 0.1, qW = 0.001953125;
    bool gentle = false, wait = false, idleDecay = false;
    double durationS = 50;
    double bottleneckMbps = 10, bottleneckDelayMs = 20;
    double accessMbps = 1000, accessDelayMs = 5;
    uint32_t packetBytes = 1000;
    uint32_t maxWindowPkts = 20;
    double startSpreadMs = 10;
    uint32_t seed = 1;

    CommandLine cmd(__FILE__);
    cmd.AddValue("queue", "fifo (drop-tail), red or fqcodel", queue);
    cmd.AddValue("tcp", "LinuxReno or NewReno (mmaqm_ns3.h)", tcp);
    cmd.AddValue("out", "output JSON path", out);
    cmd.AddValue("udp", "UDP groups kind,count,start_s,stop_s,rate;... (mmapp rate: scales a/b/c)", udp);
    cmd.AddValue("tcpFlows", "FTP-TCP connections tcp1 -> tcp2", tcpFlows);
    cmd.AddValue("tcpStartS", "TCP start", tcpStartS);
    cmd.AddValue("tcpStopS", "TCP stop", tcpStopS);
    cmd.AddValue("limitPkts", "queue limit, packets", limitPkts);
    cmd.AddValue("minThPkts", "RED min_th, packets", minThPkts);
    cmd.AddValue("maxThPkts", "RED max_th, packets", maxThPkts);
    cmd.AddValue("maxP", "RED max_p", maxP);
    cmd.AddValue("qW", "RED EWMA weight w_q", qW);
    cmd.AddValue("gentle", "RED gentle", gentle);
    cmd.AddValue("wait", "RED wait (ns-2 wait_)", wait);
    cmd.AddValue("idleDecay", "RED: the average decays while the queue is idle", idleDecay);
    cmd.AddValue("durationS", "simulated seconds (senders stop here)", durationS);
    cmd.AddValue("bottleneckMbps", "r1 -> r2 rate", bottleneckMbps);
    cmd.AddValue("bottleneckDelayMs", "r1 - r2 one-way delay", bottleneckDelayMs);
    cmd.AddValue("accessMbps", "host - router rate", accessMbps);
    cmd.AddValue("accessDelayMs", "host - router one-way delay", accessDelayMs);
    cmd.AddValue("packetBytes", "IP packet size (TCP full segment, UDP datagram)", packetBytes);
    cmd.AddValue("maxWindowPkts", "TCP receiver window, segments (ns-2 window_)", maxWindowPkts);
    cmd.AddValue("startSpreadMs", "each group's flows start uniformly in [start, start + this)",
                 startSpreadMs);
    cmd.AddValue("seed", "RngRun", seed);
    cmd.Parse(argc, argv);

    std::vector<UdpGroup> groups;
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
    // RED's idle decay runs at LinkBandwidth / (8 MeanPktSize) packets per second of idle
    // time; our RED without bandwidth_pps has none: 8 bit/s makes it 0.001 packets/s,
    // which ns-3 truncates to no decay for any idle period under 1000 s.
    qs.linkMbps = idleDecay ? bottleneckMbps : 8e-6;
    qs.linkDelayMs = bottleneckDelayMs;
    if ((tcp != "LinuxReno" && tcp != "NewReno") || !mmaqm::ValidQueueSpec(qs) ||
        !ParseGroups(udp, groups) || durationS <= 0 || tcpStopS <= tcpStartS ||
        packetBytes < 100 || startSpreadMs < 0 || std::fmod(durationS / kBinS + 1e-9, 1.0) > 2e-9)
    {
        std::cerr << "mcdt: invalid arguments (queue fifo|red|fqcodel, tcp LinuxReno|NewReno, "
                     "0 < min_th < max_th <= limit, 0 < max_p <= 1, 0 < qW < 1, udp groups "
                     "kind,count,start_s,stop_s,rate with kind mmapp|cbr, duration a multiple "
                     "of 0.1 s)\n";
        return 2;
    }
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    uint32_t segBytes = mmaqm::ApplyTcpModel(tcp, packetBytes, maxWindowPkts);
    cmd.Parse(argc, argv); // explicit --ns3::... overrides win over the profile

    NodeContainer hosts1, hosts2, routers;
    hosts1.Create(N_CLS); // tcp1, mm1, cbr1
    hosts2.Create(N_CLS); // tcp2, mm2, cbr2
    routers.Create(2);    // r1, r2
    Ptr<Node> r1 = routers.Get(0);
    Ptr<Node> r2 = routers.Get(1);

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", DataRateValue(DataRate(accessMbps * 1e6)));
    access.SetChannelAttribute("Delay", TimeValue(MilliSeconds(accessDelayMs)));
    PointToPointHelper bottle;
    bottle.SetDeviceAttribute("DataRate", DataRateValue(DataRate(bottleneckMbps * 1e6)));
    bottle.SetChannelAttribute("Delay", TimeValue(MilliSeconds(bottleneckDelayMs)));
    // One packet in the device: the queue disc holds the rest (no hidden buffer).
    bottle.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));

    std::vector<NetDeviceContainer> d1(N_CLS), d2(N_CLS);
    for (int c = 0; c < N_CLS; ++c)
    {
        d1[c] = access.Install(hosts1.Get(c), r1);
        d2[c] = access.Install(r2, hosts2.Get(c));
    }
    NetDeviceContainer d12 = bottle.Install(r1, r2);

    InternetStackHelper stack;
    stack.Install(hosts1);
    stack.Install(hosts2);
    stack.Install(routers);

    TrafficControlHelper tch;
    mmaqm::SetRootQueueDisc(tch, qs);
    Ptr<QueueDisc> qd = tch.Install(d12.Get(0)).Get(0);

    Ipv4AddressHelper addr;
    std::vector<Ipv4InterfaceContainer> i1(N_CLS), i2(N_CLS);
    for (int c = 0; c < N_CLS; ++c)
    {
        addr.SetBase(("10.1." + std::to_string(c + 1) + ".0").c_str(), "255.255.255.0");
        i1[c] = addr.Assign(d1[c]);
        addr.SetBase(("10.2." + std::to_string(c + 1) + ".0").c_str(), "255.255.255.0");
        i2[c] = addr.Assign(d2[c]);
        g_src[c] = i1[c].GetAddress(0);
    }
    addr.SetBase("10.0.0.0", "255.255.255.0");
    addr.Assign(d12);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    g_bottleneckIf = r1->GetObject<Ipv4>()->GetInterfaceForDevice(d12.Get(0));

    // Flows in the BMv2 scenario's order: TCP, then the UDP groups.
    std::vector<std::string> flowKind;
    std::vector<double> flowStart, flowStop;
    Ptr<UniformRandomVariable> uni = CreateObject<UniformRandomVariable>();
    g_nTcp = tcpFlows;
    for (const auto& g : groups)
    {
        (g.kind == "mmapp" ? g_nMm : g_nCbr) += g.count;
    }
    g_nBins = uint32_t(std::llround(durationS / kBinS));
    g_rxBytes.assign(g_nTcp + g_nMm + g_nCbr, std::vector<uint64_t>(g_nBins, 0));
    g_arrivals.assign(N_CLS, std::vector<uint64_t>(g_nBins, 0));
    g_drops.assign(N_CLS, {});
    g_udp.assign(N_CLS, std::vector<UdpBin>(g_nBins));

    std::vector<double> startS;
    for (uint32_t i = 0; i < tcpFlows; ++i)
    {
        uint16_t port = kTcpPort + i;
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        sink.Install(hosts2.Get(TCP)).Start(Seconds(0));
        BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(i2[TCP].GetAddress(1), port));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        src.SetAttribute("SendSize", UintegerValue(segBytes));
        ApplicationContainer ca = src.Install(hosts1.Get(TCP));
        double s = tcpStartS + uni->GetValue(0, startSpreadMs / 1000.0);
        ca.Start(Seconds(s));
        ca.Stop(Seconds(std::min(tcpStopS, durationS)));
        flowKind.push_back("tcp");
        flowStart.push_back(tcpStartS);
        flowStop.push_back(tcpStopS);
        startS.push_back(s);
    }
    uint32_t mmIdx = 0, cbrIdx = 0;
    std::vector<std::pair<uint32_t, Ptr<mmaqm::MmAppSender>>> udpApps; // (flow, sender)
    for (int pass = 0; pass < 2; ++pass) // MM_APP flows first, then CBR (the flow order)
    {
        for (const auto& g : groups)
        {
            bool mm = g.kind == "mmapp";
            if (mm != (pass == 0))
            {
                continue;
            }
            for (uint32_t k = 0; k < g.count; ++k)
            {
                double s = g.startS + uni->GetValue(0, startSpreadMs / 1000.0);
                double stop = std::min(g.stopS, durationS);
                uint32_t flow = uint32_t(flowKind.size());
                uint16_t port = mm ? kMmPort + mmIdx++ : kCbrPort + cbrIdx++;
                Cls c = mm ? TAGGED : UNTAGGED;
                Ptr<mmaqm::MmAppSender> snd = mmaqm::InstallUdpFlow(
                    hosts1.Get(c), hosts2.Get(c), InetSocketAddress(i2[c].GetAddress(1), port),
                    port, flow + 1, mm ? ParseScales(g.rate) : std::vector<double>{},
                    mm ? 0.0 : std::stod(g.rate), packetBytes, Seconds(s), Seconds(stop));
                udpApps.emplace_back(flow, snd);
                flowKind.push_back(g.kind);
                flowStart.push_back(g.startS);
                flowStop.push_back(g.stopS);
                startS.push_back(s);
            }
        }
    }

    d1[TAGGED].Get(0)->TraceConnectWithoutContext("MacTx", MakeBoundCallback(&SourceMacTx, int(TAGGED)));
    d1[UNTAGGED].Get(0)->TraceConnectWithoutContext("MacTx",
                                                    MakeBoundCallback(&SourceMacTx, int(UNTAGGED)));
    for (int c = 0; c < N_CLS; ++c)
    {
        d2[c].Get(1)->TraceConnectWithoutContext("MacRx", MakeCallback(&SinkMacRx));
    }
    r1->GetObject<Ipv4L3Protocol>()->TraceConnectWithoutContext("Tx", MakeCallback(&RouterTx));
    qd->TraceConnectWithoutContext("DropBeforeEnqueue", MakeCallback(&QueueDrop));
    qd->TraceConnectWithoutContext("DropAfterDequeue", MakeCallback(&QueueDrop));
    Simulator::Schedule(Seconds(kBinS / 2), &SampleQueue, qd);

    // one second more for the packets in flight at the senders' stop (the BMv2 receivers
    // also outlast the senders); only the bins within durationS count
    Simulator::Stop(Seconds(durationS + 1));
    Simulator::Run();

    std::ofstream f(out);
    f.precision(9);
    f << "{\n  \"schema\": \"mmaqm-ns3-mcdt-raw/1\",\n  \"ns3_version\": \"3.44\",\n";
    f << "  \"queue\": \"" << queue << "\", \"tcp\": \"" << tcp << "\", \"seed\": " << seed << ",\n";
    f << "  \"duration_s\": " << durationS << ", \"bin_s\": " << kBinS
      << ", \"segment_bytes\": " << segBytes << ",\n";
    f << "  \"params\": {\"limit_pkts\": " << limitPkts << ", \"min_th_pkts\": " << minThPkts
      << ", \"max_th_pkts\": " << maxThPkts << ", \"max_p\": " << maxP << ", \"ewma_weight\": " << qW
      << ", \"gentle\": " << (gentle ? "true" : "false") << ", \"wait\": " << (wait ? "true" : "false")
      << ", \"idle_decay\": " << (idleDecay ? "true" : "false")
      << ", \"bottleneck_mbps\": " << bottleneckMbps << ", \"bottleneck_delay_ms\": " << bottleneckDelayMs
      << ", \"access_mbps\": " << accessMbps << ", \"access_delay_ms\": " << accessDelayMs
      << ", \"packet_bytes\": " << packetBytes << ", \"max_window_pkts\": " << maxWindowPkts
      << ", \"udp\": \"" << udp << "\"},\n";
    f << "  \"flows\": [\n";
    for (size_t i = 0; i < flowKind.size(); ++i)
    {
        const std::string& k = flowKind[i];
        f << "    {\"kind\": \"" << k << "\", \"class\": \""
          << (k == "tcp" ? "TCP" : k == "mmapp" ? "TAGGED" : "UNTAGGED") << "\", \"start_s\": "
          << flowStart[i] << ", \"stop_s\": " << flowStop[i] << ", \"started_s\": " << startS[i]
          << ", \"rx_bytes_ip\": ";
        WriteSeries(f, g_rxBytes[i]);
        f << "}" << (i + 1 < flowKind.size() ? "," : "") << "\n";
    }
    f << "  ],\n  \"udp_senders\": [";
    for (size_t i = 0; i < udpApps.size(); ++i)
    {
        f << (i ? ",\n    " : "\n    ") << "{\"flow\": " << udpApps[i].first
          << ", \"summary\": " << udpApps[i].second->Summary() << "}";
    }
    f << "],\n  \"classes\": {\n";
    for (int c = 0; c < N_CLS; ++c)
    {
        f << "    \"" << kClsName[c] << "\": {\"arrivals\": ";
        WriteSeries(f, g_arrivals[c]);
        f << ", \"drops\": {";
        bool first = true;
        for (auto& [reason, v] : g_drops[c])
        {
            v.resize(g_nBins, 0);
            f << (first ? "" : ", ") << "\"" << reason << "\": ";
            WriteSeries(f, v);
            first = false;
        }
        f << "}";
        if (c != TCP)
        {
            std::vector<uint64_t> sent, rcv;
            std::vector<double> dsum, dmin;
            for (const auto& u : g_udp[c])
            {
                sent.push_back(u.sent);
                rcv.push_back(u.received);
                dsum.push_back(u.delaySumS);
                dmin.push_back(std::isinf(u.delayMinS) ? -1 : u.delayMinS);
            }
            f << ", \"udp_sent\": ";
            WriteSeries(f, sent);
            f << ", \"udp_received\": ";
            WriteSeries(f, rcv);
            f << ", \"udp_delay_sum_s\": ";
            WriteSeries(f, dsum);
            f << ", \"udp_delay_min_s\": ";
            WriteSeries(f, dmin);
        }
        f << "}" << (c + 1 < N_CLS ? "," : "") << "\n";
    }
    f << "  },\n  \"unclassified\": " << g_unclassified << ",\n  \"queue_pkts\": ";
    WriteSeries(f, g_queuePkts);
    f << ",\n  \"bottleneck\": {";
    mmaqm::WriteQueueDiscStats(f, qd);
    f << "}\n}\n";
    f.close();
    Simulator::Destroy();
    return f ? 0 : 1;
}
