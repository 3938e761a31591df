// upta sections 6-7 (Fig. 1) in ns-3: the seven-router chain R1 ... R7, a greedy TCP
// flow s1 -> d1 and the video s2 -> d2 (CBR UDP) from R1 to R7, and the ON-OFF background
// s3 -> d3 (CBR UDP while ON) from R2 to R6, with the same queue disc (ns-3's drop-tail,
// RED, FQ-CoDel, or FQ = FQ-CoDel's DRR with CoDel off; or our FAIR_SHARE scheme rebuilt
// in ns-3, FairShareQueueDisc below) at every router's egress toward the next router. An independent reference for the BMv2 experiments upta-s1 ... upta-s6
// (topologies/topos/upta-fig1.json, scenarios/upta-sK.yaml, policies/upta.yaml):
// tools/ns3_upta.py passes those files' numbers as the arguments below.
//
// Writes raw counts as JSON (the runner computes the metrics with the project's
// definitions): per counted egress (the chain's forward ports and the routers' ports to
// d1, d2, d3) and per flow (tcp, video, bg): arrivals at the queue disc, departures onto
// the link, drops by ns-3 reason; TCP's IP bytes received at d1 in 0.1 s bins; packets
// received at d2 and d3; the TCP sender's congestion-state changes and largest cwnd.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/ppp-header.h"
#include "ns3/traffic-control-module.h"

#include "mmaqm_ns3.h"

#include <cmath>
#include <limits>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace
{
constexpr double kBinS = 0.1;     // TCP receive bins
constexpr int kFlows = 3;         // tcp, video, bg
const char* kFlowName[kFlows] = {"tcp", "video", "bg"};
constexpr uint16_t kTcpPort = 5000;
constexpr uint16_t kVideoPort = 6000;
constexpr uint16_t kBgPort = 7000;
constexpr uint32_t kPppBytes = 2; // the PPP header ns-3's point-to-point link adds

Ipv4Address g_src[kFlows];        // s1, s2, s3

struct FlowCounts
{
    uint64_t arrivals = 0;   // offered to the queue disc (enqueued or dropped before)
    uint64_t departures = 0; // handed to the link (MacTx)
    std::map<std::string, uint64_t> drops;
};

struct Port
{
    std::string sw, to;
    Ptr<QueueDisc> qd;
    FlowCounts flow[kFlows];
};

std::vector<std::unique_ptr<Port>> g_ports;
std::vector<uint64_t> g_tcpRxBins;
uint64_t g_rxPkts[kFlows] = {0, 0, 0};
uint32_t g_nBins = 0;
uint32_t g_maxCwndBytes = 0;
std::map<std::string, uint64_t> g_congStates; // entries into each TCP congestion state

int
FlowOf(Ipv4Address src)
{
    for (int i = 0; i < kFlows; ++i)
    {
        if (src == g_src[i])
        {
            return i;
        }
    }
    return -1;
}

int
FlowOfItem(Ptr<const QueueDiscItem> item)
{
    Ptr<const Ipv4QueueDiscItem> ip = DynamicCast<const Ipv4QueueDiscItem>(item);
    return ip ? FlowOf(ip->GetHeader().GetSource()) : -1;
}

void
OnEnqueue(Port* p, Ptr<const QueueDiscItem> item)
{
    int f = FlowOfItem(item);
    if (f >= 0)
    {
        p->flow[f].arrivals++;
    }
}

void
OnDropBefore(Port* p, Ptr<const QueueDiscItem> item, const char* reason)
{
    int f = FlowOfItem(item);
    if (f >= 0)
    {
        p->flow[f].arrivals++;
        p->flow[f].drops[reason]++;
    }
}

void
OnDropAfter(Port* p, Ptr<const QueueDiscItem> item, const char* reason)
{
    // dequeued for dropping (CoDel, FQ-CoDel's overlimit): it was enqueued, so it is
    // already counted as an arrival
    int f = FlowOfItem(item);
    if (f >= 0)
    {
        p->flow[f].drops[reason]++;
    }
}

// The IPv4 source of a point-to-point frame (MacTx and MacRx carry the PPP header).
int
FlowOfFrame(Ptr<const Packet> frame, uint32_t* ipBytes)
{
    Ptr<Packet> c = frame->Copy();
    PppHeader ppp;
    c->RemoveHeader(ppp);
    if (ppp.GetProtocol() != 0x0021)
    {
        return -1;
    }
    Ipv4Header ip;
    c->RemoveHeader(ip);
    if (ipBytes)
    {
        *ipBytes = ip.GetSerializedSize() + ip.GetPayloadSize();
    }
    return FlowOf(ip.GetSource());
}

void
OnMacTx(Port* p, Ptr<const Packet> frame)
{
    int f = FlowOfFrame(frame, nullptr);
    if (f >= 0)
    {
        p->flow[f].departures++;
    }
}

void
OnSinkRx(int expected, Ptr<const Packet> frame)
{
    uint32_t bytes = 0;
    int f = FlowOfFrame(frame, &bytes);
    if (f != expected)
    {
        return;
    }
    g_rxPkts[f]++;
    if (f == 0)
    {
        auto bin = uint32_t(std::floor(Simulator::Now().GetSeconds() / kBinS + 1e-9));
        if (bin < g_nBins)
        {
            g_tcpRxBins[bin] += bytes;
        }
    }
}

void
OnCwnd(uint32_t, uint32_t cwnd)
{
    g_maxCwndBytes = std::max(g_maxCwndBytes, cwnd);
}

// TCP's smoothed RTT, time-weighted over the run (from its first sample)
double g_srttWeighted = 0; // s * s
double g_srttSince = -1;   // s
double g_srttNow = 0;      // s
double g_srttMax = 0;      // s
double g_srttFirst = -1;   // s: the first sample's time

void
OnSrtt(Time, Time now)
{
    double t = Simulator::Now().GetSeconds();
    if (g_srttSince >= 0)
    {
        g_srttWeighted += g_srttNow * (t - g_srttSince);
    }
    else
    {
        g_srttFirst = t;
    }
    g_srttSince = t;
    g_srttNow = now.GetSeconds();
    g_srttMax = std::max(g_srttMax, g_srttNow);
}

void
OnCongState(TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now)
{
    g_congStates[TcpSocketState::TcpCongStateName[now]]++;
}

void
ConnectTcpTraces(uint32_t nodeId)
{
    std::string base = "/NodeList/" + std::to_string(nodeId) +
                       "/$ns3::TcpL4Protocol/SocketList/0/";
    Config::ConnectWithoutContext(base + "CongestionWindow", MakeCallback(&OnCwnd));
    Config::ConnectWithoutContext(base + "CongState", MakeCallback(&OnCongState));
    Config::ConnectWithoutContext(base + "RTT", MakeCallback(&OnSrtt));
}

// A constant-bit-rate UDP source (the BMv2 harness's cbr flows): one payloadBytes
// datagram every interval from start to stop.
struct Cbr
{
    Ptr<Socket> sock;
    Time interval;
    Time stop;
    uint32_t payloadBytes;
};

void
CbrSend(std::shared_ptr<Cbr> c)
{
    if (Simulator::Now() >= c->stop)
    {
        return;
    }
    c->sock->Send(Create<Packet>(c->payloadBytes));
    Simulator::Schedule(c->interval, &CbrSend, c);
}

void
StartCbr(Ptr<Node> src, Ipv4Address dst, uint16_t port, double kbps, uint32_t packetBytes,
         double startS, double stopS)
{
    auto c = std::make_shared<Cbr>();
    c->sock = Socket::CreateSocket(src, UdpSocketFactory::GetTypeId());
    c->sock->Bind();
    c->sock->Connect(InetSocketAddress(dst, port));
    c->interval = Seconds(packetBytes * 8.0 / (kbps * 1e3));
    c->stop = Seconds(stopS);
    c->payloadBytes = packetBytes - 20 - 8; // IPv4 + UDP headers
    Simulator::Schedule(Seconds(startS), &CbrSend, c);
}

std::vector<double>
ParseList(const std::string& s)
{
    std::vector<double> out;
    std::stringstream ss(s);
    std::string tok;
    while (std::getline(ss, tok, ','))
    {
        if (!tok.empty())
        {
            out.push_back(std::stod(tok));
        }
    }
    return out;
}

// "a-b,c-d" -> [(a, b), (c, d)]
std::vector<std::pair<double, double>>
ParsePeriods(const std::string& s)
{
    std::vector<std::pair<double, double>> out;
    std::stringstream ss(s);
    std::string tok;
    while (std::getline(ss, tok, ','))
    {
        auto dash = tok.find('-', 1);
        if (dash == std::string::npos)
        {
            throw std::invalid_argument("period without '-': " + tok);
        }
        out.emplace_back(std::stod(tok.substr(0, dash)), std::stod(tok.substr(dash + 1)));
    }
    return out;
}

// FAIR_SHARE as the BMv2 runs emulate the paper's WFQ (docs/algorithms/upta.md), rebuilt
// here to separate the scheme from the harness: ONE FIFO of limitPkts packets per port;
// each arriving packet of a flow is dropped with probability max(0, 1 - fs / R), R the
// flow's arrival rate by CSFQ's exponential average (K), fs = alpha of eq. 18 (N flows
// seen in the interval, S of them below C / N, alpha = (C - their sum) / (N - S)),
// recomputed every T = K from the bytes that arrived (dropped ones included), as the
// controller does but without its read latency. No U state (no loss threshold).
// A flow is its (source, destination, protocol): one flow per host pair here.
class FairShareQueueDisc : public QueueDisc
{
  public:
    static constexpr const char* FAIR_SHARE_DROP = "Fair share drop";
    static constexpr const char* LIMIT_DROP = "Queue disc limit exceeded";

    static TypeId GetTypeId()
    {
        static TypeId tid =
            TypeId("ns3::MmaqmFairShareQueueDisc")
                .SetParent<QueueDisc>()
                .SetGroupName("TrafficControl")
                .AddConstructor<FairShareQueueDisc>()
                .AddAttribute("MaxSize", "the FIFO's limit", QueueSizeValue(QueueSize("100p")),
                              MakeQueueSizeAccessor(&QueueDisc::SetMaxSize, &QueueDisc::GetMaxSize),
                              MakeQueueSizeChecker())
                .AddAttribute("CapacityBps", "C of eq. 18: the link's rate of IP bits",
                              DoubleValue(1e6), MakeDoubleAccessor(&FairShareQueueDisc::m_capacityBps),
                              MakeDoubleChecker<double>(1))
                .AddAttribute("K", "rate-estimation constant and share interval T = K",
                              TimeValue(MicroSeconds(131072)), MakeTimeAccessor(&FairShareQueueDisc::m_k),
                              MakeTimeChecker());
        return tid;
    }

    FairShareQueueDisc()
        : QueueDisc(QueueDiscSizePolicy::SINGLE_INTERNAL_QUEUE)
    {
        m_uniform = CreateObject<UniformRandomVariable>();
    }

  private:
    struct Flow
    {
        double rateBps = 0;
        Time last;
        bool seen = false;
        uint64_t intervalBytes = 0;
    };

    bool DoEnqueue(Ptr<QueueDiscItem> item) override
    {
        Ptr<Ipv4QueueDiscItem> ip = DynamicCast<Ipv4QueueDiscItem>(item);
        if (ip)
        {
            const Ipv4Header& h = ip->GetHeader();
            uint64_t key = (uint64_t(h.GetSource().Get()) << 32) ^ (uint64_t(h.GetDestination().Get()) << 8) ^
                           h.GetProtocol();
            Flow& f = m_flows[key];
            double bytes = item->GetSize();
            Time now = Simulator::Now();
            if (!f.seen)
            {
                f.seen = true;
                f.rateBps = 0;
            }
            else
            {
                double t = (now - f.last).GetSeconds();
                double k = m_k.GetSeconds();
                double e = std::exp(-t / k);
                // CSFQ (Stoica et al.): R = (1 - e^{-T/K}) l / T + e^{-T/K} R_old
                f.rateBps = t > 0 ? (1 - e) * bytes * 8 / t + e * f.rateBps : f.rateBps + bytes * 8 / k;
            }
            f.last = now;
            f.intervalBytes += uint64_t(bytes);
            if (std::isfinite(m_fs) && f.rateBps > m_fs && m_uniform->GetValue() < 1 - m_fs / f.rateBps)
            {
                DropBeforeEnqueue(item, FAIR_SHARE_DROP);
                return false;
            }
        }
        if (GetCurrentSize() + item > GetMaxSize())
        {
            DropBeforeEnqueue(item, LIMIT_DROP);
            return false;
        }
        return GetInternalQueue(0)->Enqueue(item);
    }

    Ptr<QueueDiscItem> DoDequeue() override
    {
        return GetInternalQueue(0)->Dequeue();
    }

    bool CheckConfig() override
    {
        if (GetNQueueDiscClasses() > 0 || GetNPacketFilters() > 0)
        {
            return false;
        }
        if (GetNInternalQueues() == 0)
        {
            AddInternalQueue(CreateObjectWithAttributes<DropTailQueue<QueueDiscItem>>(
                "MaxSize", QueueSizeValue(GetMaxSize())));
        }
        return GetNInternalQueues() == 1;
    }

    void InitializeParams() override
    {
        Simulator::Schedule(m_k, &FairShareQueueDisc::Interval, this);
    }

    // Fig. 7 "on est_timer expiration" with eq. 18 (mmaqm.algorithms.upta.fairshares).
    void Interval()
    {
        double t = m_k.GetSeconds();
        std::vector<double> rates;
        for (auto& [key, f] : m_flows)
        {
            if (f.intervalBytes)
            {
                rates.push_back(f.intervalBytes * 8.0 / t);
            }
            f.intervalBytes = 0;
        }
        double n = rates.size();
        double sum = 0;
        int s = 0;
        for (double r : rates)
        {
            if (r < m_capacityBps / n)
            {
                ++s;
                sum += r;
            }
        }
        m_fs = (n - s > 0) ? (m_capacityBps - sum) / (n - s) : std::numeric_limits<double>::infinity();
        Simulator::Schedule(m_k, &FairShareQueueDisc::Interval, this);
    }

    double m_capacityBps = 1e6;
    Time m_k;
    double m_fs = std::numeric_limits<double>::infinity();
    std::map<uint64_t, Flow> m_flows;
    Ptr<UniformRandomVariable> m_uniform;
};

NS_OBJECT_ENSURE_REGISTERED(FairShareQueueDisc);

// FQ: FQ-CoDel's flow queuing alone, the closest ns-3 has to the paper's WFQ: DRR over
// per-flow queues, CoDel never drops (target and interval far beyond the run), and on
// overflow one packet (not a batch of up to 64) from the longest queue.
void
SetFqDrr(TrafficControlHelper& tch, uint32_t limitPkts)
{
    tch.SetRootQueueDisc("ns3::FqCoDelQueueDisc", "MaxSize",
                         StringValue(std::to_string(limitPkts) + "p"), "Target",
                         StringValue("1000s"), "Interval", StringValue("10000s"),
                         "DropBatchSize", UintegerValue(1));
}
} // namespace

int
main(int argc, char* argv[])
{
    std::string queue = "fifo"; // fifo | red | fqcodel | fq
    std::string tcp = "LinuxReno";
    std::string out = "upta.json";
    std::string chainMbpsS = "10,4.8,4.3,3.9,3.5,10";
    std::string chainDelayMsS = "1,1,1,1,1,1";
    double accessMbps = 10;
    double accessDelayMs = 0.001;
    uint32_t limitPkts = 100;
    double minThPkts = 25;
    double maxThPkts = 50;
    double maxP = 0.1;
    double qW = 0.002;
    uint32_t packetBytes = 512;
    uint32_t maxWindowPkts = 200;
    double durationS = 15;
    double tcpStartS = 0;
    double tcpStopS = 15;
    double videoKbps = 1760;
    double videoStartS = 0;
    double videoStopS = 15;
    double bgKbps = 10000;
    std::string bgOnS = "0-15";
    uint32_t bgInRouter = 2;
    uint32_t bgOutRouter = 6;
    double startJitterMs = 10;
    uint32_t seed = 1;

    CommandLine cmd(__FILE__);
    cmd.AddValue("queue", "fifo (drop-tail), red, fqcodel, fq (DRR, CoDel off) or fairshare "
                 "(our FAIR_SHARE scheme)", queue);
    cmd.AddValue("tcp", "LinuxReno or NewReno (mmaqm_ns3.h)", tcp);
    cmd.AddValue("out", "output JSON path", out);
    cmd.AddValue("chainMbps", "l1 ... l6 rates, Mbit/s of IP packets, comma-separated", chainMbpsS);
    cmd.AddValue("chainDelayMs", "l1 ... l6 one-way delays, ms", chainDelayMsS);
    cmd.AddValue("accessMbps", "host links, Mbit/s of IP packets", accessMbps);
    cmd.AddValue("accessDelayMs", "host links' one-way delay, ms", accessDelayMs);
    cmd.AddValue("limitPkts", "every router egress's buffer, packets", limitPkts);
    cmd.AddValue("minThPkts", "RED min_th, packets", minThPkts);
    cmd.AddValue("maxThPkts", "RED max_th, packets", maxThPkts);
    cmd.AddValue("maxP", "RED max_p", maxP);
    cmd.AddValue("qW", "RED EWMA weight w_q", qW);
    cmd.AddValue("packetBytes", "IP packet size of every flow", packetBytes);
    cmd.AddValue("maxWindowPkts", "TCP receiver window, segments", maxWindowPkts);
    cmd.AddValue("durationS", "simulated seconds", durationS);
    cmd.AddValue("tcpStartS", "TCP start", tcpStartS);
    cmd.AddValue("tcpStopS", "TCP stop", tcpStopS);
    cmd.AddValue("videoKbps", "video rate, kbit/s of IP packets", videoKbps);
    cmd.AddValue("videoStartS", "video start", videoStartS);
    cmd.AddValue("videoStopS", "video stop", videoStopS);
    cmd.AddValue("bgKbps", "background rate while ON, kbit/s of IP packets", bgKbps);
    cmd.AddValue("bgOn", "background ON periods, s: a-b,c-d (empty: none)", bgOnS);
    cmd.AddValue("bgInRouter", "router (1-7) where s3 attaches", bgInRouter);
    cmd.AddValue("bgOutRouter", "router (1-7) where d3 attaches", bgOutRouter);
    cmd.AddValue("startJitterMs", "each source starts up to this much late (seeded)", startJitterMs);
    cmd.AddValue("seed", "RngRun", seed);
    cmd.Parse(argc, argv);

    std::vector<double> chainMbps, chainDelayMs;
    std::vector<std::pair<double, double>> bgOn;
    try
    {
        chainMbps = ParseList(chainMbpsS);
        chainDelayMs = ParseList(chainDelayMsS);
        bgOn = ParsePeriods(bgOnS);
    }
    catch (const std::exception& e)
    {
        std::cerr << "upta: invalid arguments: " << e.what() << "\n";
        return 2;
    }
    const uint32_t nRouters = chainMbps.size() + 1;
    bool ok = (queue == "fifo" || queue == "red" || queue == "fqcodel" || queue == "fq" ||
               queue == "fairshare") &&
              (tcp == "LinuxReno" || tcp == "NewReno") && nRouters >= 3 &&
              chainDelayMs.size() == chainMbps.size() && limitPkts > 0 && durationS > 0 &&
              packetBytes > 60 && accessMbps > 0 && videoKbps > 0 && bgKbps > 0 &&
              bgInRouter >= 1 && bgInRouter < bgOutRouter && bgOutRouter <= nRouters &&
              startJitterMs >= 0;
    for (double r : chainMbps)
    {
        ok = ok && r > 0;
    }
    for (auto [a, b] : bgOn)
    {
        ok = ok && 0 <= a && a < b && b <= durationS;
    }
    mmaqm::QueueSpec qs;
    qs.kind = (queue == "fq" || queue == "fairshare") ? "fqcodel" : queue; // validated apart
    qs.limitPkts = limitPkts;
    qs.minThPkts = minThPkts;
    qs.maxThPkts = maxThPkts;
    qs.maxP = maxP;
    qs.qW = qW;
    qs.meanPktBytes = packetBytes;
    ok = ok && mmaqm::ValidQueueSpec(qs);
    if (!ok)
    {
        std::cerr << "upta: invalid arguments (queue fifo|red|fqcodel|fq|fairshare, tcp LinuxReno|NewReno, "
                     "chainMbps and chainDelayMs of equal length >= 2, rates > 0, "
                     "1 <= bgInRouter < bgOutRouter <= routers, ON periods within the run, "
                     "0 < min_th < max_th <= limit, 0 < max_p <= 1, 0 < qW < 1)\n";
        return 2;
    }
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    uint32_t segBytes = mmaqm::ApplyTcpModel(tcp, packetBytes, maxWindowPkts);
    cmd.Parse(argc, argv); // explicit --ns3::Class::Attribute=value overrides win

    // Nodes: routers R1 ... Rn, then s1 s2 s3 d1 d2 d3.
    NodeContainer routers;
    routers.Create(nRouters);
    NodeContainer hosts;
    hosts.Create(6);
    Ptr<Node> s1 = hosts.Get(0), s2 = hosts.Get(1), s3 = hosts.Get(2);
    Ptr<Node> d1 = hosts.Get(3), d2 = hosts.Get(4), d3 = hosts.Get(5);
    InternetStackHelper stack;
    stack.Install(routers);
    stack.Install(hosts);

    // A link carries its rate in IP packets of packetBytes, as BMv2's packets/s shaper
    // does: ns-3 counts the PPP header too, so the line rate is scaled by (ip + 2) / ip.
    const double frameScale = double(packetBytes + kPppBytes) / packetBytes;
    auto link = [&](double mbps, double delayMs) {
        PointToPointHelper h;
        h.SetDeviceAttribute("DataRate", DataRateValue(DataRate(uint64_t(mbps * 1e6 * frameScale))));
        h.SetChannelAttribute("Delay", TimeValue(MicroSeconds(int64_t(std::llround(delayMs * 1e3)))));
        // One packet in the device: the queue disc above it is the buffer.
        h.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
        return h;
    };

    // Queue discs: the studied one on each router's egress toward the next router;
    // drop-tail of the same buffer on the routers' host ports and the reverse (ACK)
    // direction; a large drop-tail at the hosts (the sources' own buffers).
    TrafficControlHelper studied;
    if (queue == "fq")
    {
        SetFqDrr(studied, limitPkts);
    }
    else
    {
        mmaqm::SetRootQueueDisc(studied, qs); // RED's idle decay: set per link below
    }
    TrafficControlHelper routerFifo;
    routerFifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
                                StringValue(std::to_string(limitPkts) + "p"));
    TrafficControlHelper hostFifo;
    hostFifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue("10000p"));

    Ipv4AddressHelper addr;
    uint32_t subnet = 0;
    auto assign = [&](NetDeviceContainer d) {
        std::ostringstream base;
        base << "10." << (1 + subnet / 250) << "." << (subnet % 250) << ".0";
        ++subnet;
        addr.SetBase(base.str().c_str(), "255.255.255.0");
        return addr.Assign(d);
    };
    auto countPort = [&](const std::string& sw, const std::string& to, Ptr<NetDevice> dev,
                         Ptr<QueueDisc> qd) {
        auto p = std::make_unique<Port>();
        p->sw = sw;
        p->to = to;
        p->qd = qd;
        qd->TraceConnectWithoutContext("Enqueue", MakeBoundCallback(&OnEnqueue, p.get()));
        qd->TraceConnectWithoutContext("DropBeforeEnqueue", MakeBoundCallback(&OnDropBefore, p.get()));
        qd->TraceConnectWithoutContext("DropAfterDequeue", MakeBoundCallback(&OnDropAfter, p.get()));
        dev->TraceConnectWithoutContext("MacTx", MakeBoundCallback(&OnMacTx, p.get()));
        g_ports.push_back(std::move(p));
    };
    auto rname = [](uint32_t i) { return "r" + std::to_string(i + 1); };

    // Host links: (host, router index, name).
    struct HostLink { Ptr<Node> host; uint32_t router; std::string name; };
    std::vector<HostLink> hostLinks = {{s1, 0, "s1"}, {s2, 0, "s2"}, {s3, bgInRouter - 1, "s3"},
                                       {d1, nRouters - 1, "d1"}, {d2, nRouters - 1, "d2"},
                                       {d3, bgOutRouter - 1, "d3"}};
    std::vector<Ipv4InterfaceContainer> hostIf;
    PointToPointHelper access = link(accessMbps, accessDelayMs);
    for (auto& hl : hostLinks)
    {
        NetDeviceContainer d = access.Install(hl.host, routers.Get(hl.router));
        hostFifo.Install(d.Get(0));
        QueueDiscContainer rq = routerFifo.Install(d.Get(1));
        if (hl.name[0] == 'd')
        {
            countPort(rname(hl.router), hl.name, d.Get(1), rq.Get(0));
        }
        hostIf.push_back(assign(d));
    }
    // The chain l1 ... l(n-1).
    for (uint32_t i = 0; i + 1 < nRouters; ++i)
    {
        PointToPointHelper h = link(chainMbps[i], chainDelayMs[i]);
        NetDeviceContainer d = h.Install(routers.Get(i), routers.Get(i + 1));
        if (queue == "fairshare")
        {
            studied = TrafficControlHelper();
            studied.SetRootQueueDisc("ns3::MmaqmFairShareQueueDisc", "MaxSize",
                                     StringValue(std::to_string(limitPkts) + "p"), "CapacityBps",
                                     DoubleValue(chainMbps[i] * 1e6));
        }
        if (queue == "red")
        {
            // RED's idle decay at this link's rate (mmaqm_ns3.h sets it from qs)
            qs.linkMbps = chainMbps[i];
            qs.linkDelayMs = chainDelayMs[i];
            studied = TrafficControlHelper();
            mmaqm::SetRootQueueDisc(studied, qs);
        }
        QueueDiscContainer fq = studied.Install(d.Get(0));
        routerFifo.Install(d.Get(1));
        countPort(rname(i), rname(i + 1), d.Get(0), fq.Get(0));
        assign(d);
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    for (int f = 0; f < kFlows; ++f)
    {
        g_src[f] = hostIf[f].GetAddress(0);
    }
    Ipv4Address d1a = hostIf[3].GetAddress(0), d2a = hostIf[4].GetAddress(0),
                d3a = hostIf[5].GetAddress(0);

    g_nBins = uint32_t(std::llround(durationS / kBinS));
    g_tcpRxBins.assign(g_nBins, 0);
    Ptr<UniformRandomVariable> jitter = CreateObject<UniformRandomVariable>();
    auto late = [&](double s) { return s + jitter->GetValue(0, startJitterMs / 1e3); };

    // S1: greedy TCP (bulk transfer).
    PacketSinkHelper tcpSink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), kTcpPort));
    tcpSink.Install(d1).Start(Seconds(0));
    BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(d1a, kTcpPort));
    bulk.SetAttribute("MaxBytes", UintegerValue(0));
    bulk.SetAttribute("SendSize", UintegerValue(segBytes));
    ApplicationContainer tcpApp = bulk.Install(s1);
    double tcpStart = late(tcpStartS);
    tcpApp.Start(Seconds(tcpStart));
    tcpApp.Stop(Seconds(tcpStopS));
    Simulator::Schedule(Seconds(tcpStart + 1e-6), &ConnectTcpTraces, s1->GetId());

    // S2: the video; S3: the background's ON periods.
    PacketSinkHelper vSink("ns3::UdpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), kVideoPort));
    vSink.Install(d2).Start(Seconds(0));
    PacketSinkHelper bSink("ns3::UdpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), kBgPort));
    bSink.Install(d3).Start(Seconds(0));
    StartCbr(s2, d2a, kVideoPort, videoKbps, packetBytes, late(videoStartS), videoStopS);
    for (auto [a, b] : bgOn)
    {
        StartCbr(s3, d3a, kBgPort, bgKbps, packetBytes, late(a), b);
    }

    // Receive counts at the destinations (their access device's MacRx).
    d1->GetDevice(1)->TraceConnectWithoutContext("MacRx", MakeBoundCallback(&OnSinkRx, 0));
    d2->GetDevice(1)->TraceConnectWithoutContext("MacRx", MakeBoundCallback(&OnSinkRx, 1));
    d3->GetDevice(1)->TraceConnectWithoutContext("MacRx", MakeBoundCallback(&OnSinkRx, 2));

    Simulator::Stop(Seconds(durationS));
    Simulator::Run();

    std::ofstream f(out);
    f.precision(9);
    f << "{\n  \"schema\": \"mmaqm-ns3-upta-raw/1\",\n  \"ns3_version\": \"3.44\",\n";
    f << "  \"queue\": \"" << queue << "\", \"tcp\": \"" << tcp << "\", \"seed\": " << seed << ",\n";
    f << "  \"duration_s\": " << durationS << ", \"bin_s\": " << kBinS
      << ", \"segment_bytes\": " << segBytes << ", \"tcp_start_s\": " << tcpStart << ",\n";
    f << "  \"params\": {\"routers\": " << nRouters << ", \"chain_mbps\": [" << chainMbpsS
      << "], \"limit_pkts\": " << limitPkts << ", \"packet_bytes\": " << packetBytes
      << ", \"max_window_pkts\": " << maxWindowPkts << ", \"video_kbps\": " << videoKbps
      << ", \"bg_kbps\": " << bgKbps << ", \"bg_on\": \"" << bgOnS << "\"},\n";
    f << "  \"tcp_rx_bytes_ip\": [";
    for (uint32_t b = 0; b < g_nBins; ++b)
    {
        f << (b ? "," : "") << g_tcpRxBins[b];
    }
    f << "],\n  \"rx_pkts\": {";
    for (int i = 0; i < kFlows; ++i)
    {
        f << (i ? ", " : "") << "\"" << kFlowName[i] << "\": " << g_rxPkts[i];
    }
    double srttEnd = Simulator::Now().GetSeconds();
    double srttMean = (g_srttFirst >= 0 && srttEnd > g_srttFirst)
                          ? (g_srttWeighted + g_srttNow * (srttEnd - g_srttSince)) / (srttEnd - g_srttFirst)
                          : 0;
    f << "},\n  \"tcp_sender\": {\"max_cwnd_bytes\": " << g_maxCwndBytes
      << ", \"srtt_mean_ms\": " << 1e3 * srttMean << ", \"srtt_max_ms\": " << 1e3 * g_srttMax
      << ", \"cong_state_entries\": {";
    bool first = true;
    for (const auto& [state, n] : g_congStates)
    {
        f << (first ? "" : ", ") << "\"" << state << "\": " << n;
        first = false;
    }
    f << "}},\n  \"ports\": [\n";
    for (size_t k = 0; k < g_ports.size(); ++k)
    {
        const Port& p = *g_ports[k];
        const QueueDisc::Stats& st = p.qd->GetStats();
        f << "    {\"switch\": \"" << p.sw << "\", \"to\": \"" << p.to << "\", \"sent\": "
          << st.nTotalSentPackets << ", ";
        mmaqm::WriteQueueDiscStats(f, p.qd);
        f << ", \"flows\": {";
        for (int i = 0; i < kFlows; ++i)
        {
            const FlowCounts& c = p.flow[i];
            f << (i ? ", " : "") << "\"" << kFlowName[i] << "\": {\"arrivals\": " << c.arrivals
              << ", \"departures\": " << c.departures << ", \"drops\": {";
            bool fd = true;
            for (const auto& [reason, n] : c.drops)
            {
                f << (fd ? "" : ", ") << "\"" << reason << "\": " << n;
                fd = false;
            }
            f << "}}";
        }
        f << "}}" << (k + 1 < g_ports.size() ? "," : "") << "\n";
    }
    f << "  ]\n}\n";
    f.close();
    Simulator::Destroy();
    return f ? 0 : 1;
}
