// The UDP sources of the mcdt scenarios (mcdt section III) in ns-3, both the harness's
// application (topologies/mmaqm_exp/mmapp.py) as mm_app.h ports it: MM_APP (tagged,
// flow-controlled) and the unresponsive CBR (`mmapp send --cbr-kbps`, untagged), each
// with its own receiver.
#pragma once

#include "mm_app.h"

#include "ns3/core-module.h"
#include "ns3/network-module.h"

#include <ostream>
#include <vector>

namespace mmaqm
{
using namespace ns3;

// One flow from src to dst:port, sending between start and stop: MM_APP with the
// given scales (kbit/s, scale 0 first; DSCP 46) or, with cbrKbps > 0, CBR at that rate
// (DSCP 0). Its receiver (feedback for MM_APP) runs on dst for the whole simulation.
// Returns the sender.
inline Ptr<MmAppSender>
InstallUdpFlow(Ptr<Node> src, Ptr<Node> dst, Address dstAddr, uint16_t port, uint32_t flowId,
               const std::vector<double>& scalesKbps, double cbrKbps, uint32_t packetBytes,
               Time start, Time stop)
{
    Ptr<MmAppReceiver> rx = CreateObject<MmAppReceiver>();
    MmAppRecvConfig rc;
    rc.port = port;
    rx->Setup(rc);
    dst->AddApplication(rx);
    rx->SetStartTime(Seconds(0));
    MmAppConfig cfg;
    cfg.flowId = flowId;
    if (!scalesKbps.empty())
    {
        cfg.scalesKbps = scalesKbps;
    }
    cfg.packetBytes = packetBytes;
    cfg.cbrKbps = cbrKbps;
    Ptr<MmAppSender> tx = CreateObject<MmAppSender>();
    tx->Setup(cfg, dstAddr);
    src->AddApplication(tx);
    tx->SetStartTime(start);
    tx->SetStopTime(stop);
    return tx;
}
} // namespace mmaqm
