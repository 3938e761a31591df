"""tools/ns3_mcdt.py: the ns-3 reference of the mcdt scenarios 2 and 3 (docs/ns3/mcdt.md).

The committed results (docs/ns3/mcdt.json) must agree with their table, with their own
per-run summaries and with the archived BMv2 runs; the metrics must be paper_compare's
mcdt rows' definitions; the compiled scenario must run (skipped when the ns3 wheel or g++
is absent).
"""
from __future__ import annotations

import copy
import json
import shutil
import subprocess

import pytest
import yaml

import ns3_mcdt
import ns3common
import paper_compare as pc

RESULTS = json.loads(ns3_mcdt.OUT_JSON.read_text())


def _ns3_or_skip():
    try:
        ns3_mcdt.ns3_dirs()
    except ns3_mcdt.ConfigError as e:
        pytest.skip(f"ns-3 not installed ({e}); `make ns3-deps` installs it")
    if shutil.which("g++") is None:
        pytest.skip("g++ not found: the ns-3 scenario is compiled C++")


def _groups(runs):
    """The committed ns-3 summaries of a scenario, as paper_compare's runs: per (TCP
    model, seed) {queue: summary}."""
    by = {}
    for s in runs:
        by.setdefault((s["tcp"], s["seed"]), {})[s["algorithm"]] = s
    return by


def test_page_table_is_the_rendering_of_the_json():
    page = ns3_mcdt.DOC_PAGE.read_text()
    assert ns3common.marked_table(page, "mcdt") == ns3_mcdt.render_table(RESULTS).strip()


def test_a_changed_number_changes_the_table():
    bad = copy.deepcopy(RESULTS)
    bad["scenarios"]["mcdt-s3"]["ns3"]["NewReno"]["RED"]["total_loss_pct/run"]["median"] += 0.1
    assert ns3_mcdt.render_table(bad) != ns3_mcdt.render_table(RESULTS)


@pytest.mark.parametrize("scen", ns3_mcdt.SCENARIOS)
def test_ns3_aggregate_recomputes_from_the_committed_runs(scen):
    r = RESULTS["scenarios"][scen]
    names = [p["name"] for p in r["scenario"]["phases"]]
    # every run's metrics from its summary (and its seed's other queues), then the spread
    assert ns3_mcdt.per_run_metrics(r["runs"], names) == r["run_metrics"]
    assert ns3_mcdt.ns3_aggregate(r["run_metrics"], names) == r["ns3"]
    assert len(r["runs"]) == len(ns3_mcdt.QUEUES) * len(ns3_mcdt.TCP_MODELS) * RESULTS["seeds"]
    assert RESULTS["seeds"] >= 3


@pytest.mark.parametrize("scen", ns3_mcdt.SCENARIOS)
def test_bmv2_column_recomputes_from_the_archived_runs(scen):
    r = RESULTS["scenarios"][scen]
    assert r["bmv2"]["runs"] == ns3_mcdt.comparison_runs(scen)
    names = [p["name"] for p in r["scenario"]["phases"]]
    assert ns3_mcdt.bmv2_aggregate(r["bmv2"]["runs"], names) == r["bmv2"]


def _pc_rendering(fn: str, v: float) -> str:
    if fn in ("class_total_kbps", "class_kbps"):
        return f"{v:,.0f}".replace(",", " ") + " kbit/s"
    return f"{v:.1f} " + ("%" if fn.endswith("_pct") else "ms")


def _pc_cases(scen):
    """(paper_compare function name, algorithms, args) of the scenario's mcdt rows."""
    spec = yaml.safe_load(ns3_mcdt.COMPARISON.read_text())[scen]
    for row in spec["rows"]:
        m = dict(row["mmaqm"])
        fn = m.pop("fn")
        if fn not in ns3_mcdt.FUNCTIONS:
            continue
        algos = m.pop("algorithms", None) or [m.pop("algorithm")]
        phases = m.pop("phases", None) or [m.pop("phase")]
        for ph in phases:
            yield fn, algos, (ph, *([m["cls"]] if "cls" in m else []))


@pytest.mark.parametrize("scen", ns3_mcdt.SCENARIOS)
def test_metrics_are_paper_compares_definitions(scen):
    # on the archived BMv2 runs and on the committed ns-3 summaries alike: the same
    # value as the paper-comparison table computes (to its printed digits)
    groups = [ns3_mcdt.load_bmv2_run(run) for run in ns3_mcdt.comparison_runs(scen)]
    groups += list(_groups(RESULTS["scenarios"][scen]["runs"]).values())
    checked = 0
    for fn, algos, args in _pc_cases(scen):
        for runs in groups:
            for algo in algos:
                if algo not in runs:
                    continue
                ours = ns3_mcdt.FUNCTIONS[fn](runs, algo, *args)
                theirs = getattr(pc, f"m_{fn}")(runs, algo, *args)
                assert _pc_rendering(fn, ours) == theirs, (fn, algo, args)
                checked += 1
    assert checked > 50


def test_scenario_arguments_come_from_the_bmv2_experiment_files():
    per, common, phases = ns3_mcdt.scenario_args("mcdt-s3")
    assert per["DROP_TAIL"] == {"queue": "fifo", "limitPkts": 100}
    assert per["RED"] == {"queue": "red", "limitPkts": 100, "minThPkts": 5, "maxThPkts": 15,
                          "maxP": 0.1, "qW": 0.001953125, "gentle": "false", "wait": "false",
                          "idleDecay": "false"}
    assert per["FQ_CODEL"] == {"queue": "fqcodel", "limitPkts": 100}
    assert (common["tcpFlows"], common["durationS"], common["bottleneckMbps"]) == (10, 50, 10)
    assert (common["accessDelayMs"], common["bottleneckDelayMs"], common["maxWindowPkts"]) == (5, 20, 20)
    assert common["udp"].startswith("cbr,2,0,50,1000;mmapp,6,0,50,160/170/180/190/200;mmapp,6,10,50,")
    assert [p["name"] for p in phases] == ["mm6", "mm12", "mm18", "mm24", "mm30"]
    for scen in ns3_mcdt.SCENARIOS:
        per, common, phases = ns3_mcdt.scenario_args(scen)
        assert RESULTS["scenarios"][scen]["scenario"]["queues"] == per
        assert RESULTS["scenarios"][scen]["scenario"]["common"] == common
        assert RESULTS["scenarios"][scen]["scenario"]["phases"] == phases


def _raw():
    """Two phases of 1 s, 0.1 s bins: one TCP flow, one MM_APP flow from 1 s, one CBR."""
    return {
        "queue": "fifo", "tcp": "NewReno", "seed": 1, "duration_s": 2.0, "bin_s": 0.1,
        "segment_bytes": 960, "params": {"bottleneck_mbps": 10, "packet_bytes": 1000},
        "flows": [
            # 1000 B every bin: 80 kbit/s in both phases
            {"kind": "tcp", "class": "TCP", "start_s": 0, "stop_s": 2, "rx_bytes_ip": [1000] * 20},
            # from 1 s: 2000 B every bin = 160 kbit/s; not active in phase a
            {"kind": "mmapp", "class": "TAGGED", "start_s": 1, "stop_s": 2,
             "rx_bytes_ip": [0] * 10 + [2000] * 10},
            # 3 packets in phase a (24 kbit/s), none in b
            {"kind": "cbr", "class": "UNTAGGED", "start_s": 0, "stop_s": 2,
             "rx_bytes_ip": [1000] * 3 + [0] * 17},
        ],
        "classes": {
            "TCP": {"arrivals": [10] * 20, "drops": {"Queue disc limit exceeded": [1] + [0] * 19}},
            "TAGGED": {"arrivals": [0] * 10 + [2] * 10, "drops": {},
                       "udp_sent": [0] * 10 + [2] * 10, "udp_received": [0] * 10 + [2] * 10,
                       "udp_delay_sum_s": [0] * 10 + [0.08] * 10,
                       "udp_delay_min_s": [-1] * 10 + [0.031] * 9 + [0.035]},
            "UNTAGGED": {"arrivals": [1] * 10 + [0] * 10,
                         "drops": {"Unforced drop": [0] * 9 + [7] + [0] * 10},
                         "udp_sent": [1] * 10 + [0] * 10, "udp_received": [1] * 3 + [0] * 17,
                         "udp_delay_sum_s": [0.05] * 3 + [0] * 17,
                         "udp_delay_min_s": [0.05] * 3 + [-1] * 17},
        },
        "unclassified": 0, "queue_pkts": [4] * 10 + [10] * 10,
        "bottleneck": {"arrivals": 230, "drops_total": 8,
                       "drops": {"Queue disc limit exceeded": 1, "Unforced drop": 7}},
    }


PHASES = [{"name": "a", "start_s": 0, "end_s": 1}, {"name": "b", "start_s": 1, "end_s": 2}]


def test_summarize_hand_worked():
    s = ns3_mcdt.summarize(_raw(), PHASES)
    a, b, run = s["phases"]["a"], s["phases"]["b"], s["run"]
    assert a["class_total_kbps"] == {"TCP": 80.0, "TAGGED": 0.0, "UNTAGGED": 24.0}
    assert a["class_avg_per_flow_kbps"]["TAGGED"] is None and a["udp_class"]["TAGGED"] is None
    assert b["class_total_kbps"] == {"TCP": 80.0, "TAGGED": 160.0, "UNTAGGED": 0.0}
    # the run: the MM_APP flow's own span is 1 s, so 160 kbit/s over it; CBR 3 kB in 2 s
    assert run["class_avg_per_flow_kbps"] == {"TCP": 80.0, "TAGGED": 160.0, "UNTAGGED": 12.0}
    # UDP by send time: phase a sent 10 CBR packets, 3 arrived, 50 ms each
    ua = a["udp_class"]["UNTAGGED"]
    assert (ua["sent"], ua["received"], ua["loss"], ua["mean_ms"], ua["min_ms"]) == (10, 3, 0.7, 50.0, 50.0)
    # phase b: 20 MM packets, 0.8 s of delay in all: 40 ms mean; 31 ms the least
    ub = b["udp_class"]["TAGGED"]
    assert (ub["sent"], ub["received"], ub["loss"], ub["mean_ms"], ub["min_ms"]) == (20, 20, 0.0, 40.0, 31.0)
    port = s["switch"]["ports"][ns3_mcdt.BOTTLENECK_NAME]
    assert port["phases"]["a"]["TCP"] == {"arrivals": 100, "drops": {"QUEUE_LIMIT": 1},
                                          "drops_total": 1, "loss": 0.01}
    assert port["phases"]["a"]["UNTAGGED"]["drops"] == {"RED_EARLY": 7}
    assert port["run"]["TAGGED"] == {"arrivals": 20, "drops": {}, "drops_total": 0, "loss": 0.0}
    assert s["switch"]["occupancy"]["mean_pkts_by_phase"]["b"]["total"] == 10.0
    runs = {"DROP_TAIL": s}
    # 10 packets over 1 250 packets/s: 8 ms
    assert ns3_mcdt.queue_delay_ms(runs, "DROP_TAIL", "b") == pytest.approx(8.0)
    # phase a: (1 + 7) / (100 + 10) of all arrivals
    assert ns3_mcdt.total_loss_pct(runs, "DROP_TAIL", "a") == pytest.approx(800 / 110)
    assert ns3_mcdt.class_loss_pct(runs, "DROP_TAIL", "run", "UNTAGGED") == pytest.approx(70.0)
    assert ns3_mcdt.class_loss_pct(runs, "DROP_TAIL", "a", "TAGGED") is None
    # the run's tagged mean 40 ms, the floor the least UDP delay: 31 ms
    assert ns3_mcdt.udp_queueing_ms(runs, "DROP_TAIL", "run", "TAGGED") == pytest.approx(9.0)
    assert ns3_mcdt.class_kbps(runs, "DROP_TAIL", "a", "UNTAGGED") == 24.0


def test_summarize_rejects_an_unknown_drop_reason_and_strays():
    raw = _raw()
    raw["classes"]["TCP"]["drops"] = {"Mystery": [1] * 20}
    with pytest.raises(RuntimeError, match="unknown ns-3 drop reason"):
        ns3_mcdt.summarize(raw, PHASES)
    raw = _raw()
    raw["unclassified"] = 3
    with pytest.raises(RuntimeError, match="from no known host"):
        ns3_mcdt.summarize(raw, PHASES)
    raw = _raw()
    raw["bottleneck"]["arrivals"] = 100
    with pytest.raises(RuntimeError, match="class arrivals"):
        ns3_mcdt.summarize(raw, PHASES)


def test_compiled_scenario_short_run():
    _ns3_or_skip()
    binary = ns3_mcdt.build()
    per, common, _phases = ns3_mcdt.scenario_args("mcdt-s3")
    raw = ns3_mcdt.run_one(binary, {**common, **per["RED"]}, "LinuxReno", 1, duration_s=3.0)
    s = ns3_mcdt.summarize(raw, [{"name": "all", "start_s": 0, "end_s": 3}])
    run = s["run"]
    # 10 TCP, 2 CBR, 6 MM_APP active (the scenario's first step)
    assert run["n_flows_by_class"] == {"TCP": 10, "TAGGED": 6, "UNTAGGED": 2}
    assert 0.6 * 10000 < run["total_kbps"] <= 10000 * 1.001
    # CBR sends its 1 000 kbit/s: 125 packets/s per flow
    cbr = run["udp_class"]["UNTAGGED"]
    assert abs(cbr["sent"] - 2 * 125 * 3) <= 2 and cbr["received"] <= cbr["sent"]
    # MM_APP between its lowest and top scale: 20-25 packets/s per flow
    mm = run["udp_class"]["TAGGED"]
    assert 6 * 20 * 3 * 0.9 <= mm["sent"] <= 6 * 25 * 3 + 6
    # the propagation floor: 5 + 20 + 5 ms, plus a packet's transmissions
    assert 30.0 < mm["min_ms"] < 32.0
    port = s["switch"]["ports"][ns3_mcdt.BOTTLENECK_NAME]["run"]
    assert sum(c["arrivals"] for c in port.values()) > 2000
    assert set().union(*(c["drops"] for c in port.values())) <= {"RED_EARLY", "RED_FORCED", "QUEUE_LIMIT"}
    assert max(raw["queue_pkts"]) <= 100
    # every flow of the scenario is installed; in 3 s only the first step's have sent
    modes = [u["summary"]["mode"] for u in raw["udp_senders"] if u["summary"]["sent"] > 0]
    assert sorted(modes) == ["cbr"] * 2 + ["mmapp"] * 6 and len(raw["udp_senders"]) == 32
    # the senders' own count against the packets seen leaving mm1 (the last may leave after 3 s)
    assert s["mmapp"]["flows"] == 30 and 0 <= s["mmapp"]["sent"] - mm["sent"] <= 6


def test_compiled_scenario_rejects_bad_arguments():
    _ns3_or_skip()
    binary = ns3_mcdt.build()
    for bad in (["--queue=red", "--minThPkts=15", "--maxThPkts=5"], ["--udp=video,1,0,1,5"],
                ["--queue=pie"]):
        r = subprocess.run([str(binary), *bad, "--durationS=1", "--out=/dev/null"],
                           capture_output=True, text=True)
        assert r.returncode == 2 and "invalid arguments" in r.stderr, bad


def test_a_simulation_that_does_not_finish_is_an_error():
    _ns3_or_skip()
    binary = ns3_mcdt.build()
    per, common, _phases = ns3_mcdt.scenario_args("mcdt-s2")
    with pytest.raises(RuntimeError, match="did not finish"):
        ns3_mcdt.run_one(binary, {**common, **per["DROP_TAIL"]}, "NewReno", 1, timeout_s=0.05)
