"""The lockout, on a real network: an unresponsive tagged CBR joins two
responsive tagged MM_APP flows under D-CBT (scenario tagged-blast.yaml, the
10 Mbit/s dumbbell, real BMv2, real kernel TCP).

While the tagged flows are active, in every second of the blast:
  1. the controller counts at least the three tagged flows as active on the
     bottleneck port (every counter sample), and
  2. tagged packets leave the bottleneck queue (departures > 0): the tagged
     class keeps a non-zero share, and some of the blast is dropped at the class
     threshold (the situation that used to lock the class out).
The PTF test test_flow_report.StarvedClassStaysActiveTest checks the mechanism
(a dropped packet's report names its routed port) packet by packet.
"""

from __future__ import annotations

import os
import sys

import pytest

from mmt_testenv import TOPO, require_kept_up

from mmaqm_exp import analysis
from mmaqm_exp.experiment import DEFAULT_BMV2_JSON, DEFAULT_POLICIES, run_experiment
from mmaqm_exp.network import missing_prereqs

SCENARIO = TOPO / "scenarios" / "tagged-blast.yaml"
TOPOLOGY = TOPO / "topos" / "dcbt-dumbbell-10mbit.json"
BLAST_START_S, BLAST_END_S = 4.0, 12.0
TAGGED_FLOWS = 3          # 2 MM_APP + 1 CBR
SETTLE_S = 0.5            # the first report of the CBR reaches the controller
WINDOW_S = 1.0

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or missing_prereqs() is not None or not DEFAULT_BMV2_JSON.exists(),
    reason="needs root, BMv2 and build/main.json (make build)")


@pytest.fixture(scope="module")
def dcbt_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("lockout")
    summary = run_experiment(TOPOLOGY, SCENARIO, DEFAULT_POLICIES, ["DCBT"], out,
                             stream=sys.stdout)["DCBT"]
    require_kept_up({"DCBT": summary["switch_keepup"]})
    bn = summary["bottleneck"]
    samples = [s for s in analysis.read_counters(out / "DCBT" / "counters.jsonl")
               if s["switch"] == bn["switch"]]
    return summary, samples, bn["port"], summary["t0_ns"]


def _tagged(sample: dict, port: int) -> dict:
    [row] = [r for r in sample["readings"] if r["port"] == port and r["class"] == "TAGGED"]
    return row


def test_tagged_flows_stay_counted_while_active(dcbt_run):
    summary, samples, port, t0_ns = dcbt_run
    during = [s for s in samples
              if BLAST_START_S + SETTLE_S <= (s["t_ns"] - t0_ns) / 1e9 <= BLAST_END_S]
    assert len(during) >= 10
    counts = [s["active_flows"][str(port)]["TAGGED"] for s in during]
    print(f"tagged active flows during the blast: min {min(counts)}, max {max(counts)}")
    assert min(counts) >= TAGGED_FLOWS, counts


def test_tagged_class_keeps_a_share_every_second(dcbt_run):
    summary, samples, port, t0_ns = dcbt_run
    t = BLAST_START_S + SETTLE_S
    departed_per_s, dropped = [], 0
    while t + WINDOW_S <= BLAST_END_S:
        a = [s for s in samples if (s["t_ns"] - t0_ns) / 1e9 <= t][-1]
        b = [s for s in samples if (s["t_ns"] - t0_ns) / 1e9 <= t + WINDOW_S][-1]
        departed_per_s.append(_tagged(b, port)["departures"]["packets"]
                              - _tagged(a, port)["departures"]["packets"])
        dropped += (_tagged(b, port)["drops"]["CLASS_THRESHOLD"]["packets"]
                    - _tagged(a, port)["drops"]["CLASS_THRESHOLD"]["packets"])
        t += WINDOW_S
    print(f"tagged departures per second during the blast: {departed_per_s}; "
          f"class-threshold drops {dropped}")
    assert dropped > 0, "the blast must meet the tagged threshold (else nothing is tested)"
    assert min(departed_per_s) > 0, departed_per_s
