"""The reinstall gap, on a real BMv2 with real packets.

h1 (10.0.1.1) -- port 1 [BMv2 running the mmaqm program] port 2 -- h2 (10.0.2.1).
A UDP flow h1 -> h2 at a steady SEND_PPS; while it runs, the unchanged controller
config is installed REINSTALLS more times (each by a new SwitchController, as another
`mmaqm-ctl install` would), then once with the h1 route's next hop changed.

* every packet sent arrives: received == sent exactly, no ingress discard (NO_ROUTE,
  NO_POLICY), no AQM drop, and the switch kept up (its veth received every packet and
  its pipeline counted each one in queue_arrivals);
* an unchanged config writes nothing (0 updates, 0 Write RPCs);
* the changed next hop is exactly one MODIFY.

The old install (clear, then insert everything) lost packets here: see docs/reliability.md. Needs root and build/main.json; the test holds nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

import mmt_testenv

from mmaqm_exp import lab
from mmaqm_exp.network import parse_proc_net_dev_rx_packets

REPO = mmt_testenv.TOPO.parent
BMV2_JSON = REPO / "build" / "main.json"
P4INFO = REPO / "build" / "main.p4info.txtpb"
HELPER = Path(__file__).with_name("reinstall_helper.py")
SEND_PPS = 2000          # far below what BMv2 forwards here (make bench), so it keeps up
SEND_S = 6.0
REINSTALLS = 5
PAUSE_S = 0.4
UDP_PORT = 5001
PORT_MAC = {1: "02:00:00:00:00:01", 2: "02:00:00:00:00:02"}
HOST_MAC = {1: "02:00:00:01:00:01", 2: "02:00:00:02:00:01"}
NUM_DISCARD_REASONS = 8
DISCARD_NO_ROUTE, DISCARD_NO_POLICY = 5, 6


def _skip_reason() -> str | None:
    why = lab.missing_prereqs(["simple_switch_grpc"])
    if why:
        return why
    if not (BMV2_JSON.exists() and P4INFO.exists()):
        return f"{BMV2_JSON} or {P4INFO} missing: run 'make build'"
    return None


SKIP = _skip_reason()
pytestmark = pytest.mark.skipif(SKIP is not None, reason=SKIP or "")

SENDER = """
import json, socket, sys, time
dst, rate, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
n, sent, errors = int(rate * seconds), 0, 0
t0 = time.monotonic()
for i in range(n):
    wait = t0 + i / rate - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    try:
        s.sendto(i.to_bytes(8, "big") + bytes(92), (dst, %d))
        sent += 1
    except OSError:
        errors += 1
print(json.dumps({"sent": sent, "errors": errors, "seconds": time.monotonic() - t0}))
""" % UDP_PORT

RECEIVER = """
import json, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
s.bind(("0.0.0.0", %d))
print("ready", flush=True)
seen, packets = set(), 0
s.settimeout(30.0)                       # until the first packet
while True:
    try:
        data = s.recv(2048)
    except socket.timeout:
        break
    s.settimeout(2.0)                    # then until the flow has been quiet for 2 s
    packets += 1
    seen.add(int.from_bytes(data[:8], "big"))
print(json.dumps({"packets": packets, "distinct": len(seen),
                  "missing_first": sorted(set(range(max(seen) + 1)) - seen)[:20] if seen else []}))
""" % UDP_PORT


def _config(path: Path, h1_next_hop: str) -> Path:
    """Port 2 (the flow's egress) runs RED, port 1 DCBT_CHIPS (a clone session to keep)."""
    red = {"min_th_pkts": 5, "max_th_pkts": 15, "max_p": 0.1, "queue_limit_pkts": 60}
    path.write_text(yaml.safe_dump({"switches": {"s1": {
        "p4runtime_addr": "127.0.0.1:9559",
        "ports": {p: {"mac": mac} for p, mac in PORT_MAC.items()},
        "routes": [{"prefix": "10.0.1.0/24", "port": 1, "next_hop_mac": h1_next_hop},
                   {"prefix": "10.0.2.0/24", "port": 2, "next_hop_mac": HOST_MAC[2]}],
        "policies": {1: {"algorithm": "DCBT_CHIPS", **red}, 2: {"algorithm": "RED", **red}},
    }}}))
    return path


def _helper(bed: lab.Lab, ns: str, config: Path, *args: str) -> dict:
    r = bed.run(ns, [sys.executable, str(HELPER), str(config), str(BMV2_JSON), str(P4INFO),
                     *args], timeout_s=120, check=False, env=mmt_testenv.py_env())
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _udp_in_errors(bed: lab.Lab, ns: str) -> dict[str, int]:
    lines = [line.split() for line in bed.run(ns, ["cat", "/proc/net/snmp"]).stdout.splitlines()
             if line.startswith("Udp:")]
    return {k: int(v) for k, v in zip(lines[0][1:], lines[1][1:])
            if k in ("InErrors", "RcvbufErrors", "NoPorts")}


def test_reinstalling_under_a_running_flow_loses_no_packet(tmp_path: Path) -> None:
    prefix = f"rcn{os.getpid()}"
    same = _config(tmp_path / "same.yaml", HOST_MAC[1])
    changed = _config(tmp_path / "changed.yaml", "02:00:00:01:00:99")
    results: dict[str, object] = {}
    with lab.Lab(prefix) as bed:
        sw, h1, h2 = (bed.add_namespace(f"{prefix}-{n}") for n in ("sw", "h1", "h2"))
        bed.add_veths([(lab.VethEnd(sw, "r-p1", lab.RAW_PORT, mac=PORT_MAC[1]),
                        lab.VethEnd(h1, "eth0", lab.HOST_PORT, mac=HOST_MAC[1])),
                       (lab.VethEnd(sw, "r-p2", lab.RAW_PORT, mac=PORT_MAC[2]),
                        lab.VethEnd(h2, "eth0", lab.HOST_PORT, mac=HOST_MAC[2]))])
        for ns, port in ((h1, 1), (h2, 2)):
            bed.run(ns, ["sh", "-c", f"ip addr add 10.0.{port}.1/24 dev eth0 && "
                         f"ip neigh replace 10.0.{port}.254 lladdr {PORT_MAC[port]} dev eth0 "
                         f"nud permanent && ip route add default via 10.0.{port}.254"])
        bed.start_switches(sw, [lab.SwitchSpec({1: "r-p1", 2: "r-p2"}, device_id=1,
                                               grpc_port=9559, thrift_port=9090,
                                               out_path=tmp_path / "bmv2.out")])
        first = _helper(bed, sw, same)                        # pipeline push + install
        results["first_install"] = first["installs"]
        rx = bed.popen(h2, [sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE, text=True)
        assert rx.stdout is not None and rx.stdout.readline().strip() == "ready"
        udp0 = _udp_in_errors(bed, h2)
        dev0 = parse_proc_net_dev_rx_packets(bed.run(sw, ["cat", "/proc/net/dev"]).stdout)
        tx = bed.popen(h1, [sys.executable, "-c", SENDER, "10.0.2.1", str(SEND_PPS),
                            str(SEND_S)], stdout=subprocess.PIPE, text=True)
        time.sleep(1.0)
        again = _helper(bed, sw, same, "--times", str(REINSTALLS), "--pause-s", str(PAUSE_S))
        moved = _helper(bed, sw, changed)
        sent = json.loads(tx.communicate(timeout=SEND_S + 30)[0])
        received = json.loads(rx.communicate(timeout=60)[0])
        dev1 = parse_proc_net_dev_rx_packets(bed.run(sw, ["cat", "/proc/net/dev"]).stdout)
        udp1 = _udp_in_errors(bed, h2)
        final = _helper(bed, sw, changed)                     # counters after the flow
    counters = final["counters"]
    discards = {int(i): n for i, n in counters["ingress_discards"].items()}
    port1_discards = {r: discards.get(1 * NUM_DISCARD_REASONS + r, 0)
                      for r in range(NUM_DISCARD_REASONS)}
    port2_arrivals = sum(n for i, n in counters["queue_arrivals"].items() if int(i) // 4 == 2)
    results.update(reinstalls=again["installs"], changed=moved["installs"], sent=sent,
                   received=received, switch_rx=dev1.get("r-p1", 0) - dev0.get("r-p1", 0),
                   port2_queue_arrivals=port2_arrivals, port1_discards=port1_discards,
                   queue_drops=counters["queue_drops"], udp_errors=[udp0, udp1],
                   mmaqm=again["mmaqm"])
    (tmp_path / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results))

    assert sent["errors"] == 0 and sent["sent"] == int(SEND_PPS * SEND_S), results
    lost = sent["sent"] - received["distinct"]
    assert port1_discards[DISCARD_NO_ROUTE] == 0 and port1_discards[DISCARD_NO_POLICY] == 0, \
        f"lost {lost} packets: {results}"
    assert lost == 0 and received["packets"] == sent["sent"], results
    assert counters["queue_drops"] == {}, results
    # the switch kept up: its veth got every packet and its pipeline counted each one
    # (the flow only: the hosts send nothing else, IPv6 is off, the neighbours are static)
    assert results["switch_rx"] == sent["sent"] == port2_arrivals, results
    assert udp1 == udp0, results
    # an unchanged config: no update at all; the changed next hop: one MODIFY
    assert [i["updates"] for i in again["installs"]] == [{}] * REINSTALLS, results
    assert [i["write_rpcs"] for i in again["installs"]] == [0] * REINSTALLS, results
    assert [i["updates"] for i in moved["installs"]] == [{"MODIFY": 1}], results
