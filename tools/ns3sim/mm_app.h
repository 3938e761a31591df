// MM_APP in ns-3: the harness's flow-controlled multimedia sender and its receiver
// (topologies/mmaqm_exp/mmapp.py), ported rule for rule so that an ns-3 scenario runs
// the same application as the BMv2 experiments.
//
// dcbt section 5: 10 "flow-controlled multimedia traffic generator[s] called MM_APP"
// that "react to congestion using 5 discrete media scales with a 'cut scale by half at
// frame loss, up scale by one at RTT' flow control mechanism, used 300, 500, 700, 900
// and 1,100Kbps for scale 0 to 4 transmission rates, with a fixed packet size of
// 1Kbyte"; and 2 unresponsive 5 Mbit/s CBR sources (the same sender with cbrKbps > 0).
//
// Wire format (as mmapp.py, network byte order): a data packet is one UDP datagram
// whose IPv4 datagram is packetBytes (1000: 972 bytes of UDP payload) starting with
//   "MMA1" | type=1 u8 | flags u8 | scale u8 | 0 u8 | flow_id u32 | seq u64 |
//   send_ts_ns u64 | rate_kbps u32 | srtt_us u32                          (36 bytes)
// flags bit 0 (NO_FEEDBACK) marks CBR packets (scale 255). A feedback datagram is
//   "MMA1" | type=2 u8 | 0 u8 | 0 u16 | flow_id u32 | highest_seq i64 | received u64 |
//   lost u64 | last_lost_seq i64 | echo_ts_ns u64 | echo_hold_ns u64      (60 bytes)
// Timestamps are the simulator clock in ns (one clock, as CLOCK_REALTIME there).
//
// Receiver: feedback (a) at once when a data packet reveals a sequence gap, (b) else on
// the first data packet at least max(sender's srtt, fbMinMs) after the previous
// feedback of that flow. "lost" counts packets missing in gaps (a late packet
// decrements it); last_lost_seq is the highest sequence number declared lost.
//
// Sender flow control (FlowControl below, mmapp.py's FlowControl):
//   loss: a feedback with last_lost_seq >= the first seq sent after the previous cut
//     halves the scale index (4 -> 2 -> 1 -> 0); older losses are the same event;
//   increase: a feedback without new loss, at least one srtt after the last change,
//     raises the scale by one (up to the top);
//   RTT: srtt = 7/8 srtt + 1/8 sample (RFC 6298 gain), the first sample as is;
//   silence: no feedback for max(fbTimeoutS, 4 srtt) halves the scale (and again
//     after each further such period).
// Pacing: packet k of a scale period leaves at t_start + k * interval; a rate change
// re-times the next packet to the last scheduled send + the new interval.
//
// Interface (kept stable: other scenarios copy this file):
//   MmAppConfig cfg; cfg.flowId = 26; ...          // defaults = the harness's defaults
//   Ptr<MmAppSender> s = CreateObject<MmAppSender>();
//   s->Setup(cfg, InetSocketAddress(dst, port)); node->AddApplication(s);
//   s->SetStartTime(...); s->SetStopTime(...);
//   Ptr<MmAppReceiver> r = CreateObject<MmAppReceiver>(); r->Setup(MmAppRecvConfig{port});
//   after the run: s->Log() (t_ns, event, scale, rate, srtt, sent ...: the --log CSV),
//   s->Summary(), r->Rows() (flow, seq, send_ts, recv_ts, bytes, scale, dscp: the --out CSV).
#pragma once

#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace mmaqm
{
using namespace ns3;

constexpr uint8_t kMmT_DATA = 1;
constexpr uint8_t kMmT_FEEDBACK = 2;
constexpr uint8_t kMmF_NO_FEEDBACK = 0x01;
constexpr uint8_t kMmCBR_SCALE = 255;
constexpr uint32_t kMmDataHdrBytes = 36;
constexpr uint32_t kMmFbHdrBytes = 60;
constexpr uint32_t kMmIpUdpOverhead = 28; // IPv4 header (20) + UDP header (8)
constexpr double kMmMaxLagS = 0.05;       // a stalled schedule is reset, not burst

namespace detail
{
inline void
Put(uint8_t*& p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; --i)
    {
        *p++ = uint8_t(v >> (8 * i));
    }
}

inline uint64_t
Get(const uint8_t*& p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i)
    {
        v = (v << 8) | *p++;
    }
    return v;
}
} // namespace detail

struct MmDataHeader
{
    uint32_t flowId = 0;
    uint64_t seq = 0;
    int64_t sendTsNs = 0;
    uint8_t scale = 0;
    uint32_t rateKbps = 0;
    uint32_t srttUs = 0;
    uint8_t flags = 0;

    void Write(uint8_t* buf) const
    {
        uint8_t* p = buf;
        std::memcpy(p, "MMA1", 4);
        p += 4;
        detail::Put(p, kMmT_DATA, 1);
        detail::Put(p, flags, 1);
        detail::Put(p, scale, 1);
        detail::Put(p, 0, 1);
        detail::Put(p, flowId, 4);
        detail::Put(p, seq, 8);
        detail::Put(p, uint64_t(sendTsNs), 8);
        detail::Put(p, rateKbps, 4);
        detail::Put(p, srttUs, 4);
    }

    bool Read(const uint8_t* buf, uint32_t len)
    {
        if (len < kMmDataHdrBytes || std::memcmp(buf, "MMA1", 4) != 0 || buf[4] != kMmT_DATA)
        {
            return false;
        }
        const uint8_t* p = buf + 5;
        flags = uint8_t(detail::Get(p, 1));
        scale = uint8_t(detail::Get(p, 1));
        detail::Get(p, 1);
        flowId = uint32_t(detail::Get(p, 4));
        seq = detail::Get(p, 8);
        sendTsNs = int64_t(detail::Get(p, 8));
        rateKbps = uint32_t(detail::Get(p, 4));
        srttUs = uint32_t(detail::Get(p, 4));
        return true;
    }
};

struct MmFeedback
{
    uint32_t flowId = 0;
    int64_t highestSeq = -1;
    uint64_t received = 0;
    uint64_t lost = 0;
    int64_t lastLostSeq = -1;
    int64_t echoTsNs = 0;
    int64_t echoHoldNs = 0;

    void Write(uint8_t* buf) const
    {
        uint8_t* p = buf;
        std::memcpy(p, "MMA1", 4);
        p += 4;
        detail::Put(p, kMmT_FEEDBACK, 1);
        detail::Put(p, 0, 1);
        detail::Put(p, 0, 2);
        detail::Put(p, flowId, 4);
        detail::Put(p, uint64_t(highestSeq), 8);
        detail::Put(p, received, 8);
        detail::Put(p, lost, 8);
        detail::Put(p, uint64_t(lastLostSeq), 8);
        detail::Put(p, uint64_t(echoTsNs), 8);
        detail::Put(p, uint64_t(echoHoldNs), 8);
    }

    bool Read(const uint8_t* buf, uint32_t len)
    {
        if (len < kMmFbHdrBytes || std::memcmp(buf, "MMA1", 4) != 0 || buf[4] != kMmT_FEEDBACK)
        {
            return false;
        }
        const uint8_t* p = buf + 8;
        flowId = uint32_t(detail::Get(p, 4));
        highestSeq = int64_t(detail::Get(p, 8));
        received = detail::Get(p, 8);
        lost = detail::Get(p, 8);
        lastLostSeq = int64_t(detail::Get(p, 8));
        echoTsNs = int64_t(detail::Get(p, 8));
        echoHoldNs = int64_t(detail::Get(p, 8));
        return true;
    }
};

// MM_APP's "cut scale by half at frame loss, up scale by one at RTT" (dcbt section 5),
// mmapp.py FlowControl line for line. Times in seconds.
struct FlowControl
{
    uint32_t nScales = 5;
    uint32_t scale = 0;
    double fbTimeoutS = 1.0;
    bool hasSrtt = false;
    double srtt = 0;
    double lastChange = 0;
    double lastFb = 0;
    int64_t cutSeq = 0; // losses of seq >= cutSeq are a new congestion event
    uint32_t cuts = 0;
    uint32_t ups = 0;
    uint32_t timeouts = 0;

    FlowControl() = default;

    FlowControl(uint32_t n, uint32_t initial, double now, double fbTimeout)
        : nScales(n),
          scale(initial),
          fbTimeoutS(fbTimeout),
          lastChange(now),
          lastFb(now)
    {
    }

    void Cut(double now, int64_t nextSeq)
    {
        scale /= 2;
        cutSeq = nextSeq;
        lastChange = now;
        ++cuts;
    }

    // One feedback: "cut", "up" or "fb". rttSample < 0: none.
    std::string OnFeedback(double now, int64_t nextSeq, double rttSample, int64_t lastLostSeq)
    {
        lastFb = now;
        if (rttSample >= 0)
        {
            srtt = hasSrtt ? 0.875 * srtt + 0.125 * rttSample : rttSample;
            hasSrtt = true;
        }
        if (lastLostSeq >= cutSeq)
        {
            Cut(now, nextSeq);
            return "cut";
        }
        if (scale + 1 < nScales && hasSrtt && now - lastChange >= srtt)
        {
            ++scale;
            lastChange = now;
            ++ups;
            return "up";
        }
        return "fb";
    }

    // The time at which silence counts as loss.
    double TimeoutDue() const
    {
        return lastFb + std::max(fbTimeoutS, 4.0 * (hasSrtt ? srtt : 0.0));
    }

    bool CheckTimeout(double now, int64_t nextSeq)
    {
        if (now >= TimeoutDue())
        {
            Cut(now, nextSeq);
            ++timeouts;
            lastFb = now;
            return true;
        }
        return false;
    }
};

// The sender's parameters, with mmapp.py's (and the scenarios') defaults.
struct MmAppConfig
{
    uint32_t flowId = 1;
    std::vector<double> scalesKbps = {300, 500, 700, 900, 1100};
    uint32_t initialScale = 0;
    uint32_t packetBytes = 1000; // IPv4 datagram bytes
    double fbTimeoutS = 1.0;
    int dscp = -1;       // -1: 46 (EF) for MM_APP, 0 for CBR
    double cbrKbps = 0;  // > 0: unresponsive CBR at this IP-level rate, no flow control
};

// One row of the sender's --log CSV (t_ns,event,scale,rate_kbps,srtt_us,rtt_sample_us,
// sent,fb_highest_seq,fb_received,fb_lost).
struct MmSendLogRow
{
    int64_t tNs;
    std::string event;
    uint32_t scale;
    double rateKbps;
    int64_t srttUs;
    int64_t rttSampleUs;
    uint64_t sent;
    int64_t fbHighestSeq;
    int64_t fbReceived;
    int64_t fbLost;
};

class MmAppSender : public Application
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("mmaqm::MmAppSender")
                                .SetParent<Application>()
                                .AddConstructor<MmAppSender>();
        return tid;
    }

    void Setup(const MmAppConfig& cfg, const Address& remote)
    {
        m_cfg = cfg;
        m_remote = remote;
        NS_ABORT_MSG_IF(m_cfg.scalesKbps.empty(), "MM_APP: no scales");
        NS_ABORT_MSG_IF(m_cfg.initialScale >= m_cfg.scalesKbps.size(),
                        "MM_APP: initial scale out of range");
        NS_ABORT_MSG_IF(m_cfg.packetBytes < kMmIpUdpOverhead + kMmDataHdrBytes,
                        "MM_APP: packetBytes below 64");
    }

    bool IsCbr() const
    {
        return m_cfg.cbrKbps > 0;
    }

    const std::vector<MmSendLogRow>& Log() const
    {
        return m_log;
    }

    const FlowControl& Fc() const
    {
        return m_fc;
    }

    uint64_t Sent() const
    {
        return m_seq;
    }

    uint64_t SendErrors() const
    {
        return m_sendErrors;
    }

    // The sender's one-line JSON summary (mmapp.py run_sender's keys).
    std::string Summary() const
    {
        double el = (m_endS > m_startS ? m_endS : Simulator::Now().GetSeconds()) - m_startS;
        char buf[512];
        std::snprintf(buf, sizeof buf,
                      "{\"role\": \"send\", \"flow_id\": %u, \"mode\": \"%s\", \"sent\": %llu, "
                      "\"send_errors\": %llu, \"duration_s\": %.6f, \"ip_bytes\": %llu, "
                      "\"final_scale\": %s, \"cuts\": %u, \"ups\": %u, \"timeouts\": %u, "
                      "\"srtt_us\": %s}",
                      m_cfg.flowId, IsCbr() ? "cbr" : "mmapp", (unsigned long long)m_seq,
                      (unsigned long long)m_sendErrors, el,
                      (unsigned long long)(m_seq * m_cfg.packetBytes),
                      IsCbr() ? "null" : std::to_string(m_fc.scale).c_str(),
                      IsCbr() ? 0 : m_fc.cuts, IsCbr() ? 0 : m_fc.ups,
                      IsCbr() ? 0 : m_fc.timeouts,
                      (IsCbr() || !m_fc.hasSrtt) ? "null"
                                                 : std::to_string(m_fc.srtt * 1e6).c_str());
        return buf;
    }

  private:
    double Rate() const
    {
        return IsCbr() ? m_cfg.cbrKbps : m_cfg.scalesKbps[m_fc.scale];
    }

    static double IntervalS(uint32_t size, double rateKbps)
    {
        return size * 8.0 / (rateKbps * 1000.0);
    }

    void LogRow(const std::string& ev, int64_t rttUs = -1, const MmFeedback* fb = nullptr)
    {
        int64_t srttUs = (!IsCbr() && m_fc.hasSrtt) ? int64_t(m_fc.srtt * 1e6) : -1;
        m_log.push_back({Simulator::Now().GetNanoSeconds(), ev,
                         IsCbr() ? kMmCBR_SCALE : m_fc.scale, Rate(), srttUs, rttUs, m_seq,
                         fb ? fb->highestSeq : -1, fb ? int64_t(fb->received) : -1,
                         fb ? int64_t(fb->lost) : -1});
    }

    void StartApplication() override
    {
        m_socket = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
        int dscp = m_cfg.dscp >= 0 ? m_cfg.dscp : (IsCbr() ? 0 : 46);
        m_socket->SetIpTos(uint8_t((dscp << 2) & 0xFC));
        m_socket->Bind();
        m_socket->Connect(m_remote);
        m_socket->SetRecvCallback(MakeCallback(&MmAppSender::HandleRead, this));
        double now = Simulator::Now().GetSeconds();
        m_startS = now;
        m_fc = FlowControl(uint32_t(m_cfg.scalesKbps.size()), m_cfg.initialScale, now,
                           m_cfg.fbTimeoutS);
        m_interval = IntervalS(m_cfg.packetBytes, Rate());
        m_lastSched = now - m_interval;
        m_nextT = now;
        m_pad.assign(m_cfg.packetBytes - kMmIpUdpOverhead, 0);
        LogRow("start");
        m_sendEvent = Simulator::ScheduleNow(&MmAppSender::SendOne, this);
        ArmTimeout();
    }

    void StopApplication() override
    {
        Simulator::Cancel(m_sendEvent);
        Simulator::Cancel(m_timeoutEvent);
        m_endS = Simulator::Now().GetSeconds();
        LogRow("end");
        if (m_socket)
        {
            m_socket->SetRecvCallback(MakeNullCallback<void, Ptr<Socket>>());
            m_socket->Close();
        }
    }

    void SendOne()
    {
        double now = Simulator::Now().GetSeconds();
        MmDataHeader h;
        h.flowId = m_cfg.flowId;
        h.seq = m_seq;
        h.sendTsNs = Simulator::Now().GetNanoSeconds();
        h.scale = IsCbr() ? kMmCBR_SCALE : uint8_t(m_fc.scale);
        h.rateKbps = uint32_t(Rate());
        int64_t srttUs = (!IsCbr() && m_fc.hasSrtt) ? int64_t(m_fc.srtt * 1e6) : 0;
        h.srttUs = uint32_t(std::min<int64_t>(srttUs, 0xFFFFFFFF));
        h.flags = IsCbr() ? kMmF_NO_FEEDBACK : 0;
        h.Write(m_pad.data());
        if (m_socket->Send(Create<Packet>(m_pad.data(), uint32_t(m_pad.size()))) < 0)
        {
            ++m_sendErrors; // still consumes the seq: the receiver sees a loss
        }
        ++m_seq;
        m_lastSched = m_nextT;
        m_nextT += m_interval;
        if (now - m_nextT > kMmMaxLagS) // stalled: do not burst to catch up
        {
            m_lastSched = now - m_interval;
            m_nextT = now;
        }
        m_sendEvent = Simulator::Schedule(Seconds(std::max(0.0, m_nextT - now)),
                                          &MmAppSender::SendOne, this);
    }

    // A rate change: the next packet at the last scheduled send + the new interval.
    void Reschedule()
    {
        m_interval = IntervalS(m_cfg.packetBytes, Rate());
        m_nextT = m_lastSched + m_interval;
        Simulator::Cancel(m_sendEvent);
        double now = Simulator::Now().GetSeconds();
        m_sendEvent = Simulator::Schedule(Seconds(std::max(0.0, m_nextT - now)),
                                          &MmAppSender::SendOne, this);
    }

    void ArmTimeout()
    {
        if (IsCbr())
        {
            return;
        }
        Simulator::Cancel(m_timeoutEvent);
        double now = Simulator::Now().GetSeconds();
        // Rounded up to whole nanoseconds: rounded down, the timeout fires just before
        // it is due, finds nothing to do and re-arms itself at 0 ns forever.
        double delayS = std::max(0.0, m_fc.TimeoutDue() - now);
        m_timeoutEvent = Simulator::Schedule(NanoSeconds(int64_t(std::ceil(delayS * 1e9))),
                                             &MmAppSender::OnTimeout, this);
    }

    void OnTimeout()
    {
        uint32_t old = m_fc.scale;
        if (m_fc.CheckTimeout(Simulator::Now().GetSeconds(), int64_t(m_seq)))
        {
            LogRow("timeout");
            if (m_fc.scale != old)
            {
                Reschedule();
            }
        }
        ArmTimeout();
    }

    void HandleRead(Ptr<Socket> socket)
    {
        Ptr<Packet> p;
        Address from;
        while ((p = socket->RecvFrom(from)))
        {
            if (IsCbr())
            {
                continue;
            }
            uint8_t buf[kMmFbHdrBytes];
            uint32_t n = p->CopyData(buf, kMmFbHdrBytes);
            MmFeedback fb;
            if (!fb.Read(buf, n) || fb.flowId != m_cfg.flowId)
            {
                continue;
            }
            int64_t nowNs = Simulator::Now().GetNanoSeconds();
            int64_t rttNs = nowNs - fb.echoTsNs - fb.echoHoldNs;
            uint32_t old = m_fc.scale;
            std::string ev = m_fc.OnFeedback(Simulator::Now().GetSeconds(), int64_t(m_seq),
                                             rttNs / 1e9, fb.lastLostSeq);
            LogRow(ev, rttNs / 1000, &fb);
            if (m_fc.scale != old)
            {
                Reschedule();
            }
            ArmTimeout();
        }
    }

    MmAppConfig m_cfg;
    Address m_remote;
    Ptr<Socket> m_socket;
    FlowControl m_fc;
    uint64_t m_seq = 0;
    uint64_t m_sendErrors = 0;
    double m_interval = 0;
    double m_lastSched = 0;
    double m_nextT = 0;
    double m_startS = 0;
    double m_endS = 0;
    std::vector<uint8_t> m_pad;
    EventId m_sendEvent;
    EventId m_timeoutEvent;
    std::vector<MmSendLogRow> m_log;
};

// The receiver's parameters (mmapp.py recv's defaults).
struct MmAppRecvConfig
{
    uint16_t port = 5001;
    double fbMinMs = 10.0; // minimum feedback spacing per flow when no loss is seen
    int fbDscp = 46;       // feedback datagrams: EF, the tagged class
};

// One row of the receiver's --out CSV (flow_id,seq,send_ts_ns,recv_ts_ns,bytes,scale,dscp).
struct MmRecvRow
{
    uint32_t flowId;
    uint64_t seq;
    int64_t sendTsNs;
    int64_t recvTsNs;
    uint32_t bytes; // IP datagram length
    uint8_t scale;
    uint8_t dscp;
};

// mmapp.py RecvFlowState.
struct MmRecvFlowState
{
    int64_t highest = -1;
    uint64_t received = 0;
    uint64_t lost = 0;
    int64_t lastLostSeq = -1;
    double lastFb = -1e18;

    // Account one data packet; true if it revealed a new gap (loss).
    bool Update(int64_t seq)
    {
        ++received;
        if (highest < 0)
        {
            highest = seq; // packets before the first one seen are not counted
            return false;
        }
        if (seq > highest + 1)
        {
            lost += uint64_t(seq - highest - 1);
            lastLostSeq = seq - 1;
            highest = seq;
            return true;
        }
        if (seq == highest + 1)
        {
            highest = seq;
        }
        else if (lost > 0)
        {
            --lost; // a late (reordered) packet was counted as lost
        }
        return false;
    }
};

class MmAppReceiver : public Application
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("mmaqm::MmAppReceiver")
                                .SetParent<Application>()
                                .AddConstructor<MmAppReceiver>();
        return tid;
    }

    void Setup(const MmAppRecvConfig& cfg)
    {
        m_cfg = cfg;
    }

    const std::vector<MmRecvRow>& Rows() const
    {
        return m_rows;
    }

    uint64_t FeedbackSent() const
    {
        return m_fbSent;
    }

    uint64_t Malformed() const
    {
        return m_bad;
    }

  private:
    void StartApplication() override
    {
        m_socket = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
        m_socket->SetIpRecvTos(true);
        m_socket->SetIpTos(uint8_t((m_cfg.fbDscp << 2) & 0xFC));
        m_socket->Bind(InetSocketAddress(Ipv4Address::GetAny(), m_cfg.port));
        m_socket->SetRecvCallback(MakeCallback(&MmAppReceiver::HandleRead, this));
    }

    void StopApplication() override
    {
        if (m_socket)
        {
            m_socket->SetRecvCallback(MakeNullCallback<void, Ptr<Socket>>());
            m_socket->Close();
        }
    }

    void HandleRead(Ptr<Socket> socket)
    {
        Ptr<Packet> p;
        Address from;
        while ((p = socket->RecvFrom(from)))
        {
            int64_t tRx = Simulator::Now().GetNanoSeconds();
            uint8_t buf[kMmDataHdrBytes];
            uint32_t n = p->CopyData(buf, kMmDataHdrBytes);
            MmDataHeader h;
            if (!h.Read(buf, n))
            {
                ++m_bad;
                continue;
            }
            uint8_t tos = 0;
            SocketIpTosTag tag;
            if (p->PeekPacketTag(tag))
            {
                tos = tag.GetTos();
            }
            m_rows.push_back({h.flowId, h.seq, h.sendTsNs, tRx,
                              p->GetSize() + kMmIpUdpOverhead, h.scale, uint8_t(tos >> 2)});
            InetSocketAddress a = InetSocketAddress::ConvertFrom(from);
            auto key = std::make_tuple(a.GetIpv4().Get(), a.GetPort(), h.flowId);
            MmRecvFlowState& st = m_flows[key];
            bool gap = st.Update(int64_t(h.seq));
            if (h.flags & kMmF_NO_FEEDBACK)
            {
                continue;
            }
            double now = Simulator::Now().GetSeconds();
            if (gap || now - st.lastFb >= std::max(m_cfg.fbMinMs / 1000.0, h.srttUs / 1e6))
            {
                st.lastFb = now;
                MmFeedback fb;
                fb.flowId = h.flowId;
                fb.highestSeq = st.highest;
                fb.received = st.received;
                fb.lost = st.lost;
                fb.lastLostSeq = st.lastLostSeq;
                fb.echoTsNs = h.sendTsNs;
                fb.echoHoldNs = Simulator::Now().GetNanoSeconds() - tRx;
                uint8_t out[kMmFbHdrBytes];
                fb.Write(out);
                if (socket->SendTo(Create<Packet>(out, kMmFbHdrBytes), 0, from) >= 0)
                {
                    ++m_fbSent;
                }
            }
        }
    }

    MmAppRecvConfig m_cfg;
    Ptr<Socket> m_socket;
    std::vector<MmRecvRow> m_rows;
    std::map<std::tuple<uint32_t, uint16_t, uint32_t>, MmRecvFlowState> m_flows;
    uint64_t m_fbSent = 0;
    uint64_t m_bad = 0;
};
} // namespace mmaqm
