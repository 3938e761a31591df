"""The short multi-switch run of `make test` for UPTA: seven BMv2s in the
upta Fig. 1 chain, ONE controller process driving all of them, the controller's
per-interval fair shares (eqs. 18-19, mmaqm.algorithms.upta_loop) enforced by each router's
per-flow drops (upta.p4), on real UDP traffic (topologies/scenarios/upta-chain-smoke.yaml:
the video across R1 ... R7, the 10 Mbit/s background across R2 ... R6).

Asserted, per router, from the counters the controller logged:
  1. every switch kept up (else the numbers measure BMv2; the test is skipped);
  2. R2, where the background enters at 10 Mbit/s, drops it with UPTA_FAIR_SHARE to
     its share: alpha = 4.8 - 1.76 = 3.04 Mbit/s (the video is unconstrained, S = 1),
     so a local loss of 1 - 3.04/10 ~ 0.70 (accepted 0.55 .. 0.85: the share follows
     the measured rates every T = 131 ms);
  3. no router makes anything useless (FAIR_SHARE has no loss threshold: no
     UPTA_USELESS anywhere) and the video, below every link's fair share but l5's
     (1.76 vs 1.75 Mbit/s), loses less than 25 % at every hop (measured 0-4 % quiet,
     15 % at one hop in one CI run; the bound catches shares never applied, ~59 %:
     at l5 the shared 100-packet FIFO overflows now and then, QUEUE_LIMIT, while
     the admitted rates sum to about the link's), under 3 % to UPTA_FAIR_SHARE;
  4. the background reaches d3 at about l5's remaining share, 3.5 - 1.76 = 1.74
     Mbit/s (accepted 1.3 .. 2.15; measured 1.88-2.05 over 9 runs: the video loses ~7 % at l5,
     and 2.10 on 2026-11-27, the video having lost 6 % to R2's FIFO while the first shares
     lagged; l5 as a plain FIFO would give the background about 3.5 * 3.04 / 4.8 = 2.2);
     skipped when the run carries validity warnings (CPU saturated, UDP lost before
     R2): the rate would measure the machine.
The same traffic under C-UPTA (policy C_UPTA; BFD, upta §5.3, docs/upta-plan.md
§1.6-1.7), asserted from the controller's "upta_bfd" events (upta_events per port):
  5. QoS Probes crossed the chain: every ingress edge (R1, R2, R6) sent probes as
     P4Runtime PacketOuts through BMv2's CPU port, every upta port on the way lowered
     them (eqs. 25-26), the egress edges (R2, R6, R7) answered each with one report,
     and the ingress edges accepted reports; nothing was malformed or from an edge port;
  6. only the ingress edge makes a flow useless: no UPTA_USELESS at any core (R3-R6,
     and R2 for the video, whose ingress is R1);
  7. the cores drop only to their local fair share (WFQ, emulated by per-flow
     UPTA_FAIR_SHARE drops; upta §5: C-UPTA's cores still run WFQ), not like an edge:
     at most 20 % of the background's arrivals at R3-R6 and 6 % of the video's at R2-R6
     (measured over 9 runs: 3.0-9.7 % of the background at R3-R5, 0-3.4 % of the video,
     the most at R5; the ingress edge R2 drops 67-76 % of the background). They do drop:
     the ingress edge enforces path minima up to a probe interval old, while the cores'
     shares move every interval with the measured rates.
  8. the reports' field values (eqs. 23-26): every report an ingress edge accepted
     (its bfd_report_digest_t, logged as an "upta_report" event) carries, for U and
     I, a path minimum that is one of the shares the path's upta ports had within the
     2 s before it (their "upta_interval" events; a probe and its report take up to
     about a second on the loaded chain), no larger than the smallest share any of
     them kept over that time and no smaller than the smallest they had; alpha_min <=
     alpha'_min; and some report carried a share below "none" (the path's shares
     reached the ingress while the traffic ran). PTF test_bfd checks eqs. 25-26
     byte-exact per hop.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from mmt_testenv import TOPO, require_kept_up

from mmaqm_exp import upta_tables
from mmaqm_exp.experiment import DEFAULT_BMV2_JSON, run_experiment
from mmaqm_exp.network import missing_prereqs
from mmaqm_exp.topology import bfd_plan, load_topology
from mmaqm.algorithms.upta import FS_INFINITE

TOPOLOGY = TOPO / "topos" / "upta-fig1.json"
SCENARIO = TOPO / "scenarios" / "upta-chain-smoke.yaml"
POLICIES = TOPO / "policies" / "upta.yaml"


def _has_upta() -> bool:
    p4info = DEFAULT_BMV2_JSON.with_name("main.p4info.txtpb")
    return p4info.exists() and 'name: "upta"' in p4info.read_text()


pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or missing_prereqs() is not None or not DEFAULT_BMV2_JSON.exists()
    or not _has_upta(),
    reason="needs root, BMv2 and build/main.json with the upta action (make build)")


def _run_chain(tmp_path_factory, policy: str):
    """The chain scenario under one policy: (its run directory, its summary);
    skipped (require_kept_up) when a switch did not keep up."""
    out = tmp_path_factory.mktemp(f"upta-chain-{policy}")
    summaries = run_experiment(TOPOLOGY, SCENARIO, POLICIES, [policy], out,
                               stream=sys.stdout, register_samples=False)
    require_kept_up({a: s["switch_keepup"] for a, s in summaries.items()})
    return out / policy, summaries[policy]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return _run_chain(tmp_path_factory, "FAIR_SHARE")


def _class_counts(run_dir, switch, port, cls):
    samples = upta_tables._samples(run_dir / "counters.jsonl")[switch]
    a = upta_tables._reading(samples[0], port, cls)
    b = upta_tables._reading(samples[-1], port, cls)
    drops = {r: b["drops"][r]["packets"] - a.get("drops", {}).get(r, {}).get("packets", 0)
             for r in b.get("drops", {})}
    return upta_tables._pk(b, "arrivals") - upta_tables._pk(a, "arrivals"), drops


def test_every_router_reported_and_the_controller_computed_shares(run):
    run_dir, _ = run
    topo = load_topology(TOPOLOGY)
    samples = upta_tables._samples(run_dir / "counters.jsonl")
    assert set(samples) == set(topo.switches)
    with upta_tables._open(run_dir / "share_events.jsonl") as f:
        events = [json.loads(line) for line in f]
    shares = [e for e in events if e.get("event") == "upta_interval"]
    # every router with a shaped port ran the loop (r1 ... r6; r7 has none)
    assert {e["switch"] for e in shares} == {"r1", "r2", "r3", "r4", "r5", "r6"}
    r2 = [e for e in shares if e["switch"] == "r2" and e["n"] == 2]
    assert r2, "r2 never saw both flows"


def test_r2_drops_the_background_to_its_fair_share(run):
    run_dir, _ = run
    arrivals, drops = _class_counts(run_dir, "r2", 3, "UNTAGGED")
    assert arrivals > 0
    loss = sum(drops.values()) / arrivals
    assert drops.get("UPTA_FAIR_SHARE", 0) > 0
    assert 0.55 <= loss <= 0.85, (loss, drops)


def test_nothing_useless_and_the_video_passes_every_hop(run):
    run_dir, _ = run
    topo = load_topology(TOPOLOGY)
    for sw in topo.shaped:
        for cls in ("TAGGED", "UNTAGGED"):
            _, drops = _class_counts(run_dir, sw.switch, sw.port, cls)
            assert drops.get("UPTA_USELESS", 0) == 0, (sw.switch, cls, drops)
    for hop in upta_tables.per_hop(run_dir, topo):
        # UPTA's own drops of the video stay small at every hop
        assert hop["arrivals"] and hop["drops"].get("UPTA_FAIR_SHARE", 0) < 0.03 * hop["arrivals"], hop
        # Its loss in all, QUEUE_LIMIT included: the shared 100-packet FIFOs
        # overflow while the controller's shares lag the rates (the first ones
        # come an interval after the traffic starts, later on a loaded host; at
        # l5 the admitted rates sum to the link's 3.5 Mbit/s). Measured 0-4 % per
        # hop in quiet runs and 15 % at one hop in one CI run (2026-11-25). With
        # no shares applied at all the video would lose about 59 % at R2 (10 +
        # 1.76 Mbit/s into 4.8): the bound still catches that.
        assert hop["loss"] < 0.25, hop


def test_background_gets_what_l5_leaves(run):
    _, summary = run
    # The rate needs a valid run, not only switches that kept up (the fixture checks
    # that): a saturated CPU, UDP lost between the sender and R2 or in a delay element
    # (the experiment's validity warnings) make it measure the machine.
    if summary["warnings"]:
        pytest.skip(f"PRECONDITION MISSED (the run is not valid, the rate would measure "
                    f"the machine): {summary['warnings']}")
    bg = [f for f in summary["flows"].values() if f["src"] == "s3"]
    rate = sum(f["received_bytes_ip"] for f in bg) * 8 / 4.0
    assert 1.3e6 <= rate <= 2.15e6, rate     # a plain FIFO at l5: about 2.2e6


# ---------------------------------------------------------------- C-UPTA (BFD)
EDGE_ROUTERS = ("r1", "r2", "r6")        # routers with host ports that probe (C-UPTA)
CPU_PORT = "63"                          # mmaqm_exp.topology.BFD_CPU_PORT
BAD_EVENTS = ("PROBE_MALFORMED", "REPORT_MALFORMED", "PROBE_FROM_EDGE", "REPORT_FROM_EDGE")


@pytest.fixture(scope="module")
def c_run(tmp_path_factory):
    return _run_chain(tmp_path_factory, "C_UPTA")


def _bfd_events(run_dir):
    """Each switch's last upta_bfd event: {switch: {port: {event: packets}}}."""
    last = {}
    with upta_tables._open(run_dir / "share_events.jsonl") as f:
        for line in f:
            e = json.loads(line)
            if e.get("event") == "upta_bfd":
                last[e["switch"]] = e["events"]
    return last


def test_c_upta_probes_and_reports_cross_the_chain(c_run):
    run_dir, _ = c_run
    ev = _bfd_events(run_dir)
    assert set(ev) == {f"r{k}" for k in range(1, 8)}
    for sw in EDGE_ROUTERS:
        assert ev[sw].get(CPU_PORT, {}).get("PROBE_SENT", 0) > 0, (sw, ev[sw])
        assert ev[sw]["3"].get("REPORT_ACCEPTED", 0) > 0, (sw, ev[sw])
    # every R1 probe leaves on port 3 and is lowered there (R1 has only mode-C port 3)
    assert ev["r1"]["3"]["PROBE_LOWERED"] == ev["r1"][CPU_PORT]["PROBE_SENT"]
    for sw in ("r2", "r3", "r4", "r5", "r6"):
        assert ev[sw]["3"].get("PROBE_LOWERED", 0) > 0, (sw, ev[sw])
    # the egress edges answer: R2 (R1's path 0), R6 (paths to d3), R7 (to d1, d2)
    assert ev["r2"]["2"].get("PROBE_ANSWERED", 0) > 0
    assert ev["r6"]["2"].get("PROBE_ANSWERED", 0) > 0
    assert ev["r7"]["3"].get("PROBE_ANSWERED", 0) > 0
    # R7 answers probes of R1's path 2, R2's path 2 and R6's only: never more than sent
    sent = sum(ev[sw][CPU_PORT]["PROBE_SENT"] for sw in EDGE_ROUTERS)
    assert ev["r7"]["3"]["PROBE_ANSWERED"] <= sent
    for sw, ports in ev.items():
        for port, counts in ports.items():
            assert not any(counts.get(b, 0) for b in BAD_EVENTS), (sw, port, counts)
    # with a probe every 4 T the report of the last probe comes back in time (measured:
    # every report accepted; with a probe every T, about a third were REPORT_STALE
    # and none during the traffic, the probes queueing behind l2-l5's full buffers)
    for sw in EDGE_ROUTERS:
        assert ev[sw]["3"]["REPORT_ACCEPTED"] >= 0.5 * ev[sw][CPU_PORT]["PROBE_SENT"], ev[sw]


def test_c_upta_only_the_ingress_edge_makes_flows_useless(c_run):
    run_dir, _ = c_run
    for sw, cls in [("r2", "TAGGED")] + [(f"r{k}", c) for k in (3, 4, 5, 6)
                                         for c in ("TAGGED", "UNTAGGED")]:
        arrivals, drops = _class_counts(run_dir, sw, 3, cls)
        assert arrivals > 0, (sw, cls)
        assert drops.get("UPTA_USELESS", 0) == 0, (sw, cls, drops)


# Bounds on the cores' fair-share drops (WFQ emulated by per-flow drops to the local share,
# upta §5: under C-UPTA the cores still run WFQ), per class, as fractions of the class's
# arrivals at the core. Measured on this 2-core machine over 9 runs (2 of them beside 1 and
# 2 busy loops): the background 3.0-9.7 % at R3-R5, the video 0-3.4 % (R5 the most; 0 at
# R2, R3, R6). For scale: the ingress edge R2 drops 67-76 % of the background, and with
# the FAIR_SHARE policy (no probes) R3-R5 drop 11-16 % of it.
CORE_FAIR_SHARE_MAX = {"UNTAGGED": 0.20, "TAGGED": 0.06}


def test_c_upta_cores_drop_only_to_their_local_fair_share(c_run):
    run_dir, _ = c_run
    over = {}
    for sw, cls in [("r2", "TAGGED")] + [(f"r{k}", c) for k in (3, 4, 5, 6)
                                         for c in ("TAGGED", "UNTAGGED")]:
        arrivals, drops = _class_counts(run_dir, sw, 3, cls)
        assert arrivals > 0, (sw, cls)
        fair = drops.get("UPTA_FAIR_SHARE", 0)
        if fair > CORE_FAIR_SHARE_MAX[cls] * arrivals:
            over[(sw, cls)] = f"{fair} of {arrivals} ({fair / arrivals:.1%})"
    assert not over, f"cores dropped beyond {CORE_FAIR_SHARE_MAX} of arrivals: {over}"


REPORT_WINDOW_NS = 2_000_000_000     # a probe's round trip on the loaded chain, with margin


def _path_hops(topo, plans, switch, path):
    """The (switch, port)s a path's probe leaves through, from its ingress edge to the
    hop before its egress edge (which answers instead of routing it)."""
    addr = {name: p.router_addr for name, p in plans.items()}
    hops, cur, port = [], switch, path.port
    while True:
        hops.append((cur, port))
        cur = topo.switches[cur].ports[port].peer
        if addr[cur] == path.egress_addr:
            return hops
        port = plans[cur].router_routes[f"{path.egress_addr}/32"]


def _in_force(series, t0_ns, t1_ns):
    """A port's share values in force at some time in [t0, t1]: the last logged before
    t0 (FS_INFINITE before the first: initial_params) and every one logged in between."""
    before = [v for t, v in series if t <= t0_ns]
    return {before[-1] if before else FS_INFINITE} | {v for t, v in series if t0_ns < t <= t1_ns}


def test_c_upta_reports_carry_the_path_minima(c_run):
    run_dir, _ = c_run
    topo = load_topology(TOPOLOGY)
    plans = bfd_plan(topo)
    with upta_tables._open(run_dir / "share_events.jsonl") as f:
        events = [json.loads(line) for line in f]
    shares = {}          # (switch, port) -> {"u": [(t, fs_u)], "i": [(t, fs_i)]}
    for e in events:
        if e.get("event") == "upta_interval":
            s = shares.setdefault((e["switch"], int(e["port"])), {"u": [], "i": []})
            s["u"].append((e["t_ns"], e["fs_u_scaled"]))
            s["i"].append((e["t_ns"], e["fs_i_scaled"]))
    reports = [e for e in events if e.get("event") == "upta_report"]
    assert {e["switch"] for e in reports} == set(EDGE_ROUTERS), "an ingress edge logged no report"
    learnt = 0
    for r in reports:
        path = next(p for p in plans[r["switch"]].paths if p.path_id == r["path"])
        hops = [h for h in _path_hops(topo, plans, r["switch"], path) if h in shares]
        assert hops, r
        assert r["fs_u_scaled"] <= r["fs_i_scaled"], r      # alpha <= alpha' at every hop
        for field in ("u", "i"):
            got = r[f"fs_{field}_scaled"]
            vals = [_in_force(shares[h][field], r["t_ns"] - REPORT_WINDOW_NS, r["t_ns"])
                    for h in hops]
            assert got in set().union(*vals), (r, field, hops, vals)
            assert min(min(v) for v in vals) <= got <= min(max(v) for v in vals), \
                (r, field, hops, vals)
        learnt += r["fs_u_scaled"] < FS_INFINITE
    assert learnt > 0, "no report carried a share: the ingress edges never learnt a path minimum"
