// dcbt section 5 (Fig. 7) in ns-3: TCP, MM_APP (tagged) and CBR (untagged) flows over
// a dumbbell r1 -> r2 with ns-3's drop-tail (FifoQueueDisc), RED (RedQueueDisc) or
// FQ-CoDel at r1's egress. An independent reference for the BMv2 experiment dcbt-fig7
// (topologies/topos/dcbt-dumbbell.json, scenarios/dcbt-fig7.yaml,
// policies/dcbt-fig7.yaml): tools/ns3_dcbt.py passes those files' numbers below.
//
// --groups: the scenario's flow groups in flow-id order (ids from 1), ';'-separated
//   kind:count:start_s:stop_s:src:dst, kind tcp | mmapp | cbr. Every src host hangs off
//   r1, every dst host off r2 (one node per host name, as the BMv2 harness's hosts).
//
// Writes raw data as JSON; the runner computes the metrics with the project's own
// definitions: per TCP flow the payload bytes its sink read in bin_s bins; per UDP flow the
// receiver's rows and the sender's log (mm_app.h); at the bottleneck per class
// (TCP / TAGGED / UNTAGGED) and bin the arrivals and drops by reason; the queue
// disc's length every queue_sample_s.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include "mm_app.h"
#include "mmaqm_ns3.h"

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

using namespace ns3;

namespace
{
constexpr double kBinS = 0.1;         // TCP receive bins and bottleneck counter bins
constexpr double kQueueSampleS = 0.01; // queue length samples
constexpr uint16_t kTcpBasePort = 5000;
constexpr uint16_t kUdpPort = 6000;
const char* const kClasses[] = {"TCP", "TAGGED", "UNTAGGED"};

struct Group
{
    std::string kind;
    uint32_t count;
    double startS;
    double stopS;
    std::string src;
    std::string dst;
};

uint32_t g_nBins = 0;
uint8_t g_taggedDscp = 46;
std::map<uint32_t, std::vector<uint64_t>> g_rxBytes; // flow id -> payload bytes read per bin
// [class][bin] arrivals; [class][reason][bin] drops
std::vector<std::vector<uint64_t>> g_arrivals(3);
std::vector<std::map<std::string, std::vector<uint64_t>>> g_drops(3);
std::vector<uint32_t> g_queuePkts;
uint32_t g_nQueueSamples = 0;

std::vector<Group>
ParseGroups(const std::string& s)
{
    std::vector<Group> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ';'))
    {
        std::vector<std::string> f;
        std::stringstream is(item);
        std::string x;
        while (std::getline(is, x, ':'))
        {
            f.push_back(x);
        }
        if (f.size() != 6)
        {
            return {};
        }
        out.push_back({f[0], uint32_t(std::stoul(f[1])), std::stod(f[2]), std::stod(f[3]), f[4],
                       f[5]});
        const Group& g = out.back();
        if ((g.kind != "tcp" && g.kind != "mmapp" && g.kind != "cbr") || g.count == 0 ||
            !(g.stopS > g.startS) || g.startS < 0)
        {
            return {};
        }
    }
    return out;
}

std::vector<double>
ParseList(const std::string& s)
{
    std::vector<double> out;
    std::stringstream ss(s);
    std::string x;
    while (std::getline(ss, x, ','))
    {
        out.push_back(std::stod(x));
    }
    return out;
}

uint32_t
Bin()
{
    return uint32_t(std::floor(Simulator::Now().GetSeconds() / kBinS + 1e-9));
}

int
ClassOf(const Ipv4Header& ip)
{
    if (ip.GetProtocol() == TcpL4Protocol::PROT_NUMBER)
    {
        return 0;
    }
    return (ip.GetTos() >> 2) == g_taggedDscp ? 1 : 2;
}

int
ClassOfItem(Ptr<const QueueDiscItem> item)
{
    Ptr<const Ipv4QueueDiscItem> ip = DynamicCast<const Ipv4QueueDiscItem>(item);
    return ip ? ClassOf(ip->GetHeader()) : 2;
}

void
OnEnqueue(Ptr<const QueueDiscItem> item)
{
    uint32_t b = Bin();
    if (b < g_nBins)
    {
        g_arrivals[ClassOfItem(item)][b]++;
    }
}

void
CountDrop(Ptr<const QueueDiscItem> item, const char* reason, bool beforeEnqueue)
{
    uint32_t b = Bin();
    if (b >= g_nBins)
    {
        return;
    }
    int c = ClassOfItem(item);
    if (beforeEnqueue)
    {
        g_arrivals[c][b]++; // an arrival that never entered the queue
    }
    auto& v = g_drops[c][reason];
    if (v.empty())
    {
        v.assign(g_nBins, 0);
    }
    v[b]++;
}

void
OnDropBeforeEnqueue(Ptr<const QueueDiscItem> item, const char* reason)
{
    CountDrop(item, reason, true);
}

void
OnDropAfterDequeue(Ptr<const QueueDiscItem> item, const char* reason)
{
    CountDrop(item, reason, false);
}

// A TCP sink's application received payload bytes (the BMv2 harness counts the bytes
// its receiver reads, and the runner scales them to IP bytes as it does).
void
SinkRx(uint32_t flow, Ptr<const Packet> p, const Address& /*from*/)
{
    uint32_t b = Bin();
    if (b < g_nBins)
    {
        g_rxBytes[flow][b] += p->GetSize();
    }
}

void
SampleQueue(Ptr<QueueDisc> q)
{
    if (g_queuePkts.size() < g_nQueueSamples)
    {
        g_queuePkts.push_back(q->GetNPackets());
        Simulator::Schedule(Seconds(kQueueSampleS), &SampleQueue, q);
    }
}

template <typename T>
void
WriteArray(std::ostream& f, const std::vector<T>& v)
{
    f << "[";
    for (size_t i = 0; i < v.size(); ++i)
    {
        f << (i ? "," : "") << +v[i];
    }
    f << "]";
}
} // namespace

int
main(int argc, char* argv[])
{
    std::string queue = "red"; // fifo | red | fqcodel
    std::string tcp = "LinuxReno";
    std::string out = "dcbt.json";
    std::string groups = "tcp:25:0:30:tcp1:tcp2;mmapp:10:0:30:mm1:mm2;cbr:2:10:30:cbr1:cbr2;"
                         "tcp:30:20:30:tcp1:tcp2";
    std::string scales = "300,500,700,900,1100";
    uint32_t mmInitialScale = 0;
    double mmFbTimeoutS = 1.0;
    double mmFbMinMs = 10.0;
    uint32_t taggedDscp = 46;
    uint32_t cbrDscp = 0;
    double cbrKbps = 5000;
    uint32_t limitPkts = 60;
    double minThPkts = 5;
    double maxThPkts = 15;
    double maxP = 0.1;
    double qW = 0.001953125;
    bool gentle = false;
    bool wait = false;
    bool idleDecay = false;
    double durationS = 30;
    double bottleneckMbps = 25;
    double bottleneckDelayMs = 20;
    double accessMbps = 1000;
    double accessDelayMs = 5;
    uint32_t packetBytes = 1000;
    uint32_t udpPacketBytes = 1000;
    uint32_t maxWindowPkts = 20;
    double startSpreadMs = 10;
    uint32_t seed = 1;

    CommandLine cmd(__FILE__);
    cmd.AddValue("queue", "fifo (drop-tail), red or fqcodel", queue);
    cmd.AddValue("tcp", "LinuxReno or NewReno (mmaqm_ns3.h)", tcp);
    cmd.AddValue("out", "output JSON path", out);
    cmd.AddValue("groups", "kind:count:start_s:stop_s:src:dst;... in flow-id order", groups);
    cmd.AddValue("scales", "MM_APP scale rates, kbit/s, scale 0 first", scales);
    cmd.AddValue("mmInitialScale", "MM_APP initial scale index", mmInitialScale);
    cmd.AddValue("mmFbTimeoutS", "MM_APP feedback timeout floor, s", mmFbTimeoutS);
    cmd.AddValue("mmFbMinMs", "MM_APP receiver's minimum feedback spacing, ms", mmFbMinMs);
    cmd.AddValue("taggedDscp", "DSCP of MM_APP packets (the tagged class)", taggedDscp);
    cmd.AddValue("cbrDscp", "DSCP of CBR packets", cbrDscp);
    cmd.AddValue("cbrKbps", "CBR rate, kbit/s (IP level)", cbrKbps);
    cmd.AddValue("limitPkts", "queue limit, packets", limitPkts);
    cmd.AddValue("minThPkts", "RED min_th, packets", minThPkts);
    cmd.AddValue("maxThPkts", "RED max_th, packets", maxThPkts);
    cmd.AddValue("maxP", "RED max_p", maxP);
    cmd.AddValue("qW", "RED EWMA weight w_q", qW);
    cmd.AddValue("gentle", "RED gentle", gentle);
    cmd.AddValue("wait", "RED wait between early drops", wait);
    cmd.AddValue("idleDecay", "RED decays its average over idle time at the link rate", idleDecay);
    cmd.AddValue("durationS", "simulated seconds", durationS);
    cmd.AddValue("bottleneckMbps", "r1 -> r2 rate", bottleneckMbps);
    cmd.AddValue("bottleneckDelayMs", "r1 - r2 one-way delay", bottleneckDelayMs);
    cmd.AddValue("accessMbps", "host links' rate", accessMbps);
    cmd.AddValue("accessDelayMs", "host links' one-way delay", accessDelayMs);
    cmd.AddValue("packetBytes", "TCP: IP packet size of a full segment", packetBytes);
    cmd.AddValue("udpPacketBytes", "MM_APP / CBR IP datagram size", udpPacketBytes);
    cmd.AddValue("maxWindowPkts", "receiver window, segments (ns-2 window_)", maxWindowPkts);
    cmd.AddValue("startSpreadMs", "each flow starts uniformly in [start, start + this)",
                 startSpreadMs);
    cmd.AddValue("seed", "RngRun", seed);
    cmd.Parse(argc, argv);

    std::vector<Group> gs = ParseGroups(groups);
    std::vector<double> scaleKbps = ParseList(scales);
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
    // ns-3's RED always decays its average over idle time at LinkBandwidth's packet rate;
    // with 1 bit/s the decay is nil for any idle period shorter than 8 000 s: "no idle
    // decay", as our RED without bandwidth_pps.
    qs.linkMbps = idleDecay ? bottleneckMbps : 1e-6;
    qs.linkDelayMs = bottleneckDelayMs;
    bool badScales = scaleKbps.empty() || mmInitialScale >= scaleKbps.size() ||
                     std::any_of(scaleKbps.begin(), scaleKbps.end(), [](double x) { return x <= 0; });
    if (gs.empty() || badScales || !mmaqm::ValidQueueSpec(qs) ||
        (tcp != "LinuxReno" && tcp != "NewReno") || durationS <= 0 || cbrKbps <= 0 ||
        taggedDscp > 63 || cbrDscp > 63 || udpPacketBytes < 64 || packetBytes < 100)
    {
        std::cerr << "dcbt: invalid arguments (groups kind:count:start:stop:src:dst;..., "
                     "queue fifo|red|fqcodel, tcp LinuxReno|NewReno, 0 < min_th < max_th <= "
                     "limit, 0 < max_p <= 1, 0 < qW < 1, scales > 0)\n";
        return 2;
    }
    g_taggedDscp = uint8_t(taggedDscp);
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    uint32_t segBytes = mmaqm::ApplyTcpModel(tcp, packetBytes, maxWindowPkts);
    cmd.Parse(argc, argv); // explicit --ns3::...=value overrides win over the profile

    // Nodes: r1, r2 and one node per host name (srcs on r1's side, dsts on r2's).
    Ptr<Node> r1 = CreateObject<Node>();
    Ptr<Node> r2 = CreateObject<Node>();
    std::map<std::string, Ptr<Node>> hosts;
    std::map<std::string, bool> leftSide;
    for (const Group& g : gs)
    {
        for (auto [name, left] : {std::pair{g.src, true}, std::pair{g.dst, false}})
        {
            auto it = leftSide.find(name);
            if (it != leftSide.end() && it->second != left)
            {
                std::cerr << "dcbt: host " << name << " is a source and a sink\n";
                return 2;
            }
            if (it == leftSide.end())
            {
                leftSide[name] = left;
                hosts[name] = CreateObject<Node>();
            }
        }
    }
    NodeContainer all(r1, r2);
    for (auto& [n, node] : hosts)
    {
        all.Add(node);
    }
    InternetStackHelper stack;
    stack.Install(all);

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", DataRateValue(DataRate(accessMbps * 1e6)));
    access.SetChannelAttribute("Delay", TimeValue(MilliSeconds(accessDelayMs)));
    PointToPointHelper bottle;
    bottle.SetDeviceAttribute("DataRate", DataRateValue(DataRate(bottleneckMbps * 1e6)));
    bottle.SetChannelAttribute("Delay", TimeValue(MilliSeconds(bottleneckDelayMs)));
    // One packet in the device: the queue disc holds the rest (no hidden buffer).
    bottle.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));

    NetDeviceContainer d12 = bottle.Install(r1, r2);
    TrafficControlHelper tch;
    mmaqm::SetRootQueueDisc(tch, qs);
    QueueDiscContainer qdiscs = tch.Install(d12.Get(0)); // only r1's egress toward r2
    Ptr<QueueDisc> qd = qdiscs.Get(0);

    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.255.0");
    addr.Assign(d12);
    std::map<std::string, Ipv4Address> hostAddr;
    uint32_t subnet = 1;
    for (auto& [name, node] : hosts)
    {
        NetDeviceContainer d = access.Install(node, leftSide[name] ? r1 : r2);
        std::string base = "10.0." + std::to_string(subnet++) + ".0";
        addr.SetBase(base.c_str(), "255.255.255.0");
        Ipv4InterfaceContainer ifc = addr.Assign(d);
        hostAddr[name] = ifc.GetAddress(0);
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    g_nBins = uint32_t(std::llround(durationS / kBinS));
    g_nQueueSamples = uint32_t(std::llround(durationS / kQueueSampleS));
    for (int c = 0; c < 3; ++c)
    {
        g_arrivals[c].assign(g_nBins, 0);
    }

    Ptr<UniformRandomVariable> jitter = CreateObject<UniformRandomVariable>();
    std::map<uint32_t, double> startS;
    std::map<uint32_t, std::string> kindOf;
    std::map<uint32_t, Ptr<mmaqm::MmAppSender>> senders;
    std::map<std::string, Ptr<mmaqm::MmAppReceiver>> receivers; // one per sink host
    uint32_t fid = 1;
    uint16_t tcpPort = kTcpBasePort;
    for (const Group& g : gs)
    {
        for (uint32_t i = 0; i < g.count; ++i, ++fid)
        {
            double s = g.startS + jitter->GetValue(0, startSpreadMs / 1000.0);
            startS[fid] = s;
            kindOf[fid] = g.kind;
            if (g.kind == "tcp")
            {
                uint16_t port = tcpPort++;
                g_rxBytes[fid].assign(g_nBins, 0);
                PacketSinkHelper sink("ns3::TcpSocketFactory",
                                      InetSocketAddress(Ipv4Address::GetAny(), port));
                ApplicationContainer sa = sink.Install(hosts[g.dst]);
                sa.Start(Seconds(0));
                sa.Get(0)->TraceConnectWithoutContext("Rx", MakeBoundCallback(&SinkRx, fid));
                BulkSendHelper src("ns3::TcpSocketFactory",
                                   InetSocketAddress(hostAddr[g.dst], port));
                src.SetAttribute("MaxBytes", UintegerValue(0));
                src.SetAttribute("SendSize", UintegerValue(segBytes));
                ApplicationContainer ca = src.Install(hosts[g.src]);
                ca.Start(Seconds(s));
                ca.Stop(Seconds(g.stopS));
                continue;
            }
            if (!receivers.count(g.dst))
            {
                Ptr<mmaqm::MmAppReceiver> r = CreateObject<mmaqm::MmAppReceiver>();
                mmaqm::MmAppRecvConfig rc;
                rc.port = kUdpPort;
                rc.fbMinMs = mmFbMinMs;
                rc.fbDscp = int(taggedDscp);
                r->Setup(rc);
                hosts[g.dst]->AddApplication(r);
                r->SetStartTime(Seconds(0));
                receivers[g.dst] = r;
            }
            mmaqm::MmAppConfig mc;
            mc.flowId = fid;
            mc.scalesKbps = scaleKbps;
            mc.initialScale = mmInitialScale;
            mc.packetBytes = udpPacketBytes;
            mc.fbTimeoutS = mmFbTimeoutS;
            mc.dscp = int(g.kind == "cbr" ? cbrDscp : taggedDscp);
            mc.cbrKbps = g.kind == "cbr" ? cbrKbps : 0;
            Ptr<mmaqm::MmAppSender> snd = CreateObject<mmaqm::MmAppSender>();
            snd->Setup(mc, InetSocketAddress(hostAddr[g.dst], kUdpPort));
            hosts[g.src]->AddApplication(snd);
            snd->SetStartTime(Seconds(s));
            snd->SetStopTime(Seconds(g.stopS));
            senders[fid] = snd;
        }
    }
    qd->TraceConnectWithoutContext("Enqueue", MakeCallback(&OnEnqueue));
    qd->TraceConnectWithoutContext("DropBeforeEnqueue", MakeCallback(&OnDropBeforeEnqueue));
    qd->TraceConnectWithoutContext("DropAfterDequeue", MakeCallback(&OnDropAfterDequeue));
    Simulator::Schedule(Seconds(kQueueSampleS / 2), &SampleQueue, qd);

    Simulator::Stop(Seconds(durationS + 0.5)); // the last packets still arrive
    Simulator::Run();

    std::ofstream f(out);
    f.precision(9);
    f << "{\n  \"schema\": \"mmaqm-ns3-dcbt-raw/1\",\n  \"ns3_version\": \"3.44\",\n";
    f << "  \"queue\": \"" << queue << "\", \"tcp\": \"" << tcp << "\", \"seed\": " << seed
      << ",\n";
    f << "  \"duration_s\": " << durationS << ", \"bin_s\": " << kBinS
      << ", \"queue_sample_s\": " << kQueueSampleS << ", \"segment_bytes\": " << segBytes
      << ", \"packet_bytes\": " << packetBytes << ",\n";
    f << "  \"start_s\": {";
    bool first = true;
    for (auto& [id, s] : startS)
    {
        f << (first ? "" : ", ") << "\"" << id << "\": " << s;
        first = false;
    }
    f << "},\n  \"tcp_rx_bytes_payload\": {\n";
    first = true;
    for (auto& [id, bins] : g_rxBytes)
    {
        f << (first ? "" : ",\n") << "    \"" << id << "\": ";
        WriteArray(f, bins);
        first = false;
    }
    f << "\n  },\n  \"udp\": {\n";
    // per UDP flow: the receiver's rows (columns) and the sender's log and summary
    std::map<uint32_t, std::vector<const mmaqm::MmRecvRow*>> rowsOf;
    for (auto& [host, r] : receivers)
    {
        for (const mmaqm::MmRecvRow& row : r->Rows())
        {
            rowsOf[row.flowId].push_back(&row);
        }
    }
    first = true;
    for (auto& [id, snd] : senders)
    {
        f << (first ? "" : ",\n") << "    \"" << id << "\": {\"kind\": \"" << kindOf[id]
          << "\", \"summary\": " << snd->Summary() << ",\n      \"log\": [";
        bool lf = true;
        for (const mmaqm::MmSendLogRow& l : snd->Log())
        {
            f << (lf ? "" : ",") << "[" << l.tNs << ",\"" << l.event << "\"," << l.scale << ","
              << l.rateKbps << "," << l.srttUs << "," << l.sent << "]";
            lf = false;
        }
        f << "],\n      \"rows\": {";
        const auto& rows = rowsOf[id];
        std::vector<uint64_t> seq;
        std::vector<int64_t> ts;
        std::vector<int64_t> tr;
        std::vector<uint32_t> by;
        std::vector<uint32_t> sc;
        std::vector<uint32_t> ds;
        for (const auto* r : rows)
        {
            seq.push_back(r->seq);
            ts.push_back(r->sendTsNs);
            tr.push_back(r->recvTsNs);
            by.push_back(r->bytes);
            sc.push_back(r->scale);
            ds.push_back(r->dscp);
        }
        f << "\"seq\": ";
        WriteArray(f, seq);
        f << ", \"send_ts_ns\": ";
        WriteArray(f, ts);
        f << ", \"recv_ts_ns\": ";
        WriteArray(f, tr);
        f << ", \"bytes\": ";
        WriteArray(f, by);
        f << ", \"scale\": ";
        WriteArray(f, sc);
        f << ", \"dscp\": ";
        WriteArray(f, ds);
        f << "}}";
        first = false;
    }
    f << "\n  },\n  \"receivers\": {";
    first = true;
    for (auto& [host, r] : receivers)
    {
        f << (first ? "" : ", ") << "\"" << host << "\": {\"packets\": " << r->Rows().size()
          << ", \"feedback_sent\": " << r->FeedbackSent() << ", \"malformed\": " << r->Malformed()
          << "}";
        first = false;
    }
    f << "},\n  \"bottleneck_bins\": {";
    for (int c = 0; c < 3; ++c)
    {
        f << (c ? ",\n    " : "\n    ") << "\"" << kClasses[c] << "\": {\"arrivals\": ";
        WriteArray(f, g_arrivals[c]);
        f << ", \"drops\": {";
        bool df = true;
        for (auto& [reason, v] : g_drops[c])
        {
            f << (df ? "" : ", ") << "\"" << reason << "\": ";
            WriteArray(f, v);
            df = false;
        }
        f << "}}";
    }
    f << "\n  },\n  \"queue_pkts\": ";
    WriteArray(f, g_queuePkts);
    f << ",\n  \"bottleneck\": {";
    mmaqm::WriteQueueDiscStats(f, qd);
    f << "}\n}\n";
    f.close();
    Simulator::Destroy();
    return f ? 0 : 1;
}
