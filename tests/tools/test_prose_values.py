"""Measured numbers in prose: value spans are rendered from the committed runs like the
tables (a changed digit fails the check, changed data change the rendering), and every
number with a unit in the experiment pages' prose is in a span, a paper value, or on the
reviewed allowlist (docs/prose-numbers.yaml)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
import yaml

import paper_compare as pc

REPO = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parent / "fixtures" / "prose_numbers.md"
RUN = "dcbt-fig7-20261125-all"
TABLE = {"runs": [RUN], "corner": "c",
         "columns": [{"header": "DCBT", "args": {"algorithm": "DCBT"}}],
         "rows": [{"label": "Jain", "args": {"fn": "jain", "phase": "blast"}},
                  {"label": "tagged loss", "args": {"fn": "class_loss_pct", "phase": "blast",
                                                    "cls": "TAGGED"}}]}


@pytest.fixture(scope="module")
def rows() -> dict:
    return pc.evaluated_rows(yaml.safe_load(pc.SPEC.read_text()))


def test_span_forms_of_a_paper_row(rows) -> None:
    key = "dcbt/s63-tcp-ratio"             # 5 runs: "median [lo–hi] %"
    cell = pc.span_text(key, [], rows, {})
    med, rng = pc.span_text(key, ["median"], rows, {}), pc.span_text(key, ["range"], rows, {})
    assert rows[key]["cell"].startswith(cell + " (")
    lo_hi = cell.split("[")[1].split("]")[0]
    assert med == cell.split(" [")[0] + " %" and rng == lo_hi + " %"
    assert pc.span_text(key, ["range", ".0"], rows, {}).count(".") == 0
    assert pc.span_text(key, ["median", "bare"], rows, {}) == cell.split(" [")[0]
    with pytest.raises(pc.CompareError, match="no such row"):
        pc.span_text("dcbt/no-such-row", [], rows, {})
    with pytest.raises(pc.CompareError, match="unknown option"):
        pc.span_text(key, ["mean"], rows, {})


def test_span_forms_of_a_run_table_cell() -> None:
    tables = {"t": {**TABLE, "runs": [RUN, RUN]}}     # one value per run: "a / a"
    jain = pc.span_text("run-table/t/1/1", ["#1"], {}, tables)
    assert pc.span_text("run-table/t/1/1", [], {}, tables) == f"{jain} / {jain}"
    assert pc.span_text("run-table/t/1/1", ["range"], {}, tables) == f"{jain}–{jain}"
    loss = pc.span_text("run-table/t/2/1", ["median"], {}, tables)
    assert loss.endswith(" %")
    with pytest.raises(pc.CompareError, match="rows of"):
        pc.span_text("run-table/t/3/1", [], {}, tables)
    with pytest.raises(pc.CompareError, match="not run-table/NAME/ROW/COL"):
        pc.span_text("run-table/nope/1/1", [], {}, tables)


def test_one_changed_digit_in_a_span_fails_and_write_restores_it(rows) -> None:
    key = "dcbt/s63-tcp-ratio"
    good = f"TCP got <!-- value:{key} range -->{pc.span_text(key, ['range'], rows, {})}" \
           "<!-- /value --> of D-CBT's.\n"
    assert pc.check_values(good, "p.md", rows, {}) == (good, [])
    digit = next(i for i, ch in enumerate(good) if ch.isdigit() and i > good.index("-->"))
    bad = good[:digit] + str((int(good[digit]) + 1) % 10) + good[digit + 1:]
    _, problems = pc.check_values(bad, "p.md", rows, {})
    assert len(problems) == 1 and f"value span {key} range says" in problems[0]
    fixed, problems = pc.check_values(bad, "p.md", rows, {}, write=True)
    assert problems == [] and fixed == good


def test_changed_data_under_a_span_change_its_rendering(tmp_path) -> None:
    shutil.copytree(pc.RESULTS / RUN / "DCBT", tmp_path / RUN / "DCBT")
    tables = {"t": TABLE}
    before = pc.span_text("run-table/t/1/1", [], {}, tables, tmp_path)
    page = f"Jain <!-- value:run-table/t/1/1 -->{before}<!-- /value -->.\n"
    assert pc.check_values(page, "p.md", {}, tables, tmp_path)[1] == []
    gz = tmp_path / RUN / "DCBT" / "summary.json.gz"
    plain = tmp_path / RUN / "DCBT" / "summary.json"
    s = json.loads(gzip.decompress(gz.read_bytes()) if gz.is_file() else plain.read_text())
    s["phases"]["blast"]["jain"] = 0.123
    gz.unlink(missing_ok=True)
    plain.write_text(json.dumps(s))
    assert pc.span_text("run-table/t/1/1", [], {}, tables, tmp_path) == "0.123" != before
    _, problems = pc.check_values(page, "p.md", {}, tables, tmp_path)
    assert problems == [f"p.md: value span run-table/t/1/1 says {before!r}, the data give "
                        "'0.123'"]


def test_an_unmarked_run_number_in_prose_fails() -> None:
    text = FIXTURE.read_text()
    found = pc.unmarked_numbers(text, {"25 Mbit/s": "the bottleneck rate"})
    # the fixture's one unmarked run number; the span, the paper value, the marked paper
    # value, the allowed parameter, the table and the code block pass
    assert found == [(5, "14.0 %")]
    assert pc.unmarked_numbers(text, {"25 Mbit/s": "x", "14.0 %": "y"}) == []
    assert pc.unmarked_numbers(text, {})[0] == (3, "25 Mbit/s")


def test_the_prose_check_covers_the_listed_pages_and_wants_reasons(tmp_path) -> None:
    page = REPO / "docs" / "experiments" / "feng.md"
    problems = pc.check_prose({page: "TCP lost 3.5 % here.\n"}, {})
    assert len(problems) == 1 and "docs/experiments/feng.md:1: '3.5 %'" in problems[0]
    assert pc.check_prose({page: "TCP lost 3.5 % here.\n"},
                          {"docs/experiments/feng.md": {"3.5 %": "a reason"}}) == []
    assert "has no reason" in pc.check_prose({}, {"docs/experiments/feng.md": {"3.5 %": ""}})[0]
    assert "not one of the checked pages" in pc.check_prose({}, {"docs/x.md": {"1 %": "r"}})[0]
    # a run number may not wait on the list: "unchecked" is no reason
    left = pc.check_prose({page: "TCP lost 3.5 % here.\n"},
                          {"docs/experiments/feng.md": {"3.5 %": "unchecked: a run number"}})
    assert left == ["prose-numbers.yaml: docs/experiments/feng.md: '3.5 %' is a run number "
                    "left unchecked; put it in a value span, or do not quote it"]
    stale = pc.check_prose({page: "TCP lost 3.5 % here.\n"},
                           {"docs/experiments/feng.md": {"3.5 %": "r", "7 ms": "r"}})
    assert stale == ["prose-numbers.yaml: docs/experiments/feng.md: '7 ms' is no longer in "
                     "the page's prose; remove the entry"]
    # a page off the list is not scanned
    assert pc.check_prose({tmp_path / "other.md": "TCP lost 3.5 % here.\n"}, {}) == []


def test_the_committed_pages_pass_the_prose_check() -> None:
    allow = yaml.safe_load(pc.PROSE_NUMBERS.read_text())
    texts = {REPO / name: (REPO / name).read_text() for name in pc.PROSE_PAGES}
    assert pc.check_prose(texts, allow) == []


def test_a_check_with_part_of_the_spec_skips_the_other_papers_spans(rows) -> None:
    dcbt_only = {k: r for k, r in rows.items() if k.startswith("dcbt/")}
    text = "x <!-- value:cbt/t1-red range -->1 %<!-- /value -->\n"
    assert pc.check_values(text, "p.md", dcbt_only, {}, partial=True)[1] == []
    _, problems = pc.check_values(text, "p.md", dcbt_only, {})
    assert problems == ["p.md: value span cbt/t1-red: cbt/t1-red: no such row in "
                        "docs/paper-comparison.yaml"]


def test_cpu_metric() -> None:
    runs = {"RED": {"cpu": {"machine": {"mean_pct": 135.4, "max_pct": 151.0}}}}
    assert pc.m_cpu_pct(runs, "RED") == "135 %"
    assert pc.m_cpu_pct(runs, "RED", stat="max_pct") == "151 %"
    with pytest.raises(pc.CompareError, match="no CPU samples of 'controller'"):
        pc.m_cpu_pct(runs, "RED", process="controller")
    runs["RED"]["cpu"].update({"bmv2 r1": {"mean_pct": 40.4}, "bmv2 r2": {"mean_pct": 35.4}})
    assert pc.m_cpu_pct(runs, "RED", process="bmv2 *") == "76 %"


def test_flow_lag_metric() -> None:
    lag = {"changes": [{"class": "TCP", "direction": "start", "t_s": 20.0, "lag_ms": 149.9},
                       {"class": "TCP", "direction": "stop", "t_s": 30.0, "lag_ms": 588.4}]}
    runs = {"DCBT": {"active_flow_lag": lag}}
    assert pc.m_flow_lag_ms(runs, "DCBT", "TCP", "start", 20) == "150 ms"
    assert pc.m_flow_lag_ms(runs, "DCBT", "TCP", "stop", 30) == "588 ms"
    with pytest.raises(pc.CompareError, match="no single TCP start at 10"):
        pc.m_flow_lag_ms(runs, "DCBT", "TCP", "start", 10)


def test_tcp_queue_metric() -> None:
    runs = {"CBT": {"red_queue_limit": {"measured_tcp_max_pkts": 55,
                                        "measured_tcp_max_blast_pkts": 41}}}
    assert pc.m_tcp_queue_pkts(runs, "CBT", "max") == "55 pkts"
    assert pc.m_tcp_queue_pkts(runs, "CBT", "max_blast") == "41 pkts"
    with pytest.raises(pc.CompareError, match="no measured_tcp_mean_blast_pkts"):
        pc.m_tcp_queue_pkts(runs, "CBT", "mean_blast")


def test_idle_metric() -> None:
    runs = {"RED": {"phases": {"cbr0": {"utilization": 0.853}, "cbr2": {}}}}
    assert pc.m_idle_pct(runs, "RED", "cbr0") == "14.7 %"
    with pytest.raises(pc.CompareError, match="no utilization"):
        pc.m_idle_pct(runs, "RED", "cbr2")


def test_udp_delay_metric() -> None:
    tagged = {"max_ms": 386.089, "jitter_ms_mean": 16.44, "delay_cdf_ms": list(range(101))}
    runs = {"DROP_TAIL": {"phases": {"mm30": {"udp_class": {"TAGGED": tagged}}}}}
    assert pc.m_udp_delay_ms(runs, "DROP_TAIL", "mm30", "TAGGED", "max_ms") == "386.1 ms"
    assert pc.m_udp_delay_ms(runs, "DROP_TAIL", "mm30", "TAGGED", "p99") == "99.0 ms"
    with pytest.raises(pc.CompareError, match="no UNTAGGED packets"):
        pc.m_udp_delay_ms(runs, "DROP_TAIL", "mm30", "UNTAGGED", "max_ms")


NS3_KEY = "ns3/feng/ns3/LinuxReno/RED/var_1s_kbps"    # a spread over the seeds


def test_ns3_span_forms_render_the_reference_json(tmp_path) -> None:
    data = json.loads((pc.NS3_DIR / "feng.json").read_text())
    sp = data["ns3"]["LinuxReno"]["RED"]["var_1s_kbps"]
    cell = pc.span_text(NS3_KEY, [], {}, {})
    # the ns-3 table's cell (tools/ns3common.cell), so span and table say the same
    assert cell == f"{sp['median']:.0f} [{sp['min']:.0f}–{sp['max']:.0f}] kbit/s"
    assert cell in (pc.NS3_DIR / "feng.md").read_text()
    assert pc.span_text(NS3_KEY, ["median"], {}, {}) == f"{sp['median']:.0f} kbit/s"
    assert pc.span_text(NS3_KEY, ["range", "bare"], {}, {}) == \
        f"{sp['min']:.0f}–{sp['max']:.0f}"
    assert pc.span_text(NS3_KEY + "/max", [".1"], {}, {}) == f"{sp['max']:.1f} kbit/s"
    assert pc.span_text("ns3/feng/seeds", [], {}, {}) == str(data["seeds"])
    # any docs/ns3/<paper>.json: units from the key names, list indices, plain numbers
    (tmp_path / "x.json").write_text(json.dumps(
        {"a": {"delay_ms": 12.345, "runs": [{"loss_pct": {"median": 1.25, "min": 1.0,
                                                          "max": 2.0, "n": 3}}],
               "label": "text", "flows": 4}}))
    assert pc.span_text("ns3/x/a/delay_ms", [], {}, {}, ns3_dir=tmp_path) == "12.3 ms"
    assert pc.span_text("ns3/x/a/runs/0/loss_pct", ["range"], {}, {}, ns3_dir=tmp_path) \
        == "1.0–2.0 %"
    assert pc.span_text("ns3/x/a/flows", [], {}, {}, ns3_dir=tmp_path) == "4"
    for key, msg in (("ns3/x/a/nope", "has no 'nope' at /a"), ("ns3/x/a/runs/1", "no '1'"),
                     ("ns3/x/a/label", "not a number"), ("ns3/y/a", "no y.json"),
                     ("ns3/x", "not ns3/PAPER/KEY")):
        with pytest.raises(pc.CompareError, match=msg):
            pc.span_text(key, [], {}, {}, ns3_dir=tmp_path)


def test_a_changed_ns3_reference_number_makes_its_span_stale(tmp_path) -> None:
    shutil.copy(pc.NS3_DIR / "feng.json", tmp_path / "feng.json")
    before = pc.span_text(NS3_KEY, ["median"], {}, {}, ns3_dir=tmp_path)
    page = f"RED <!-- value:{NS3_KEY} median -->{before}<!-- /value -->.\n"
    assert pc.check_values(page, "p.md", {}, {}, ns3_dir=tmp_path) == (page, [])
    data = json.loads((tmp_path / "feng.json").read_text())
    data["ns3"]["LinuxReno"]["RED"]["var_1s_kbps"]["median"] = 838.0
    (tmp_path / "feng.json").write_text(json.dumps(data))
    _, problems = pc.check_values(page, "p.md", {}, {}, ns3_dir=tmp_path)
    assert problems == [f"p.md: value span {NS3_KEY} median says {before!r}, the data give "
                        "'838 kbit/s'"]
    fixed, problems = pc.check_values(page, "p.md", {}, {}, write=True, ns3_dir=tmp_path)
    assert problems == [] and "-->838 kbit/s<!--" in fixed
    # a check with part of the spec still checks the ns-3 spans
    assert pc.check_values(page, "p.md", {}, {}, partial=True, ns3_dir=tmp_path)[1] != []


def test_a_span_over_a_whole_run_table_row() -> None:
    tables = {"t": {**TABLE, "columns": [{"header": "DCBT", "args": {"algorithm": "DCBT"}},
                                         {"header": "RED", "args": {"algorithm": "RED"}}]}}
    a = pc.span_text("run-table/t/1/1", [], {}, tables)
    b = pc.span_text("run-table/t/1/2", [], {}, tables)
    assert pc.span_text("run-table/t/1/*", [], {}, tables) == f"{a} / {b}"
    lo, hi = sorted([a, b], key=float)
    assert pc.span_text("run-table/t/1/*", ["range"], {}, tables) == f"{lo}–{hi}"
    with pytest.raises(pc.CompareError, match="rows of"):
        pc.span_text("run-table/t/3/*", [], {}, tables)
    page = "Jain <!-- value:run-table/t/1/* range -->0.1–0.2<!-- /value -->\n"
    _, problems = pc.check_values(page, "p.md", {}, tables)
    assert problems == [f"p.md: value span run-table/t/1/* range says '0.1–0.2', the data "
                        f"give '{lo}–{hi}'"]


def test_fred_slots_metric() -> None:
    fs = {"peak_flows": 247, "peak_sharing": 50, "sharing_fraction": 0.1189, "samples": 469}
    runs = {"FRED": {"switch": {"fred_slots": fs}}, "RED": {"switch": {}}}
    assert pc.m_fred_slots(runs, "FRED", "sharing_pct") == "11.89 %"
    assert pc.m_fred_slots(runs, "FRED", "peak_sharing") == "50"
    assert pc.m_fred_slots(runs, "FRED", "samples") == "469"
    with pytest.raises(pc.CompareError, match="no fred_slots"):
        pc.m_fred_slots(runs, "RED", "samples")
    with pytest.raises(pc.CompareError, match="unknown fred_slots field"):
        pc.m_fred_slots(runs, "FRED", "flows")


def test_tcp_end_and_class_drops_metrics() -> None:
    tcp = {"snd_mss": 460, "snd_cwnd": 30, "rtt_us": 168468}
    runs = {"FS": {"flows": {"1": {"kind": "tcp", "tcp": tcp}, "2": {"kind": "cbr"}},
                   "switch": {"ports": {
                       "r2:3": {"switch": "r2", "run": {"TCP": {"drops": {"QUEUE_LIMIT": 179}}}},
                       "r2:1": {"switch": "r2", "run": {"TCP": {"drops": {"QUEUE_LIMIT": 1}}}},
                       "r5:3": {"switch": "r5", "run": {"TCP": {"drops": {"QUEUE_LIMIT": 3}}}}}}}}
    assert pc.m_tcp_end(runs, "FS", "rtt_ms") == "168 ms"
    assert pc.m_tcp_end(runs, "FS", "cwnd_pkts") == "30 pkts"
    assert pc.m_tcp_end(runs, "FS", "window_mbps") == "0.66 Mbit/s"   # 30 x 460 B / 168 ms
    with pytest.raises(pc.CompareError, match="unknown tcp_end field"):
        pc.m_tcp_end(runs, "FS", "rto_ms")
    assert pc.m_class_drops_pkts(runs, "FS", "TCP", "QUEUE_LIMIT", "r2") == "180 pkts"
    assert pc.m_class_drops_pkts(runs, "FS", "TCP", "QUEUE_LIMIT") == "183 pkts"
    assert pc.m_class_drops_pkts(runs, "FS", "TCP", "UPTA_FAIR_SHARE") == "0 pkts"
    with pytest.raises(pc.CompareError, match="no counters of switch 'r9'"):
        pc.m_class_drops_pkts(runs, "FS", "TCP", "QUEUE_LIMIT", "r9")


def test_upta_interval_and_mcdt_threshold_sum_metrics(tmp_path) -> None:
    events = [{"event": "upta_interval", "switch": "r2", "port": 3, "n": 0, "s": 0,
               "alpha_bps": None},                              # no flows: left out
              {"event": "upta_interval", "switch": "r2", "port": 3, "n": 3, "s": 1,
               "alpha_bps": 1.9e6},
              {"event": "upta_interval", "switch": "r2", "port": 3, "n": 3, "s": 2,
               "alpha_bps": 2.1e6},
              {"event": "upta_interval", "switch": "r2", "port": 3, "n": 3, "s": 2,
               "alpha_bps": 1.5e6},
              {"event": "upta_interval", "switch": "r3", "port": 3, "n": 2, "s": 1,
               "alpha_bps": 1.0e6},
              {"event": "mcdt_push", "t_ns": 1_500_000_000, "th_pkts": {"TCP": 60, "TAGGED": 39}},
              {"event": "mcdt_push", "t_ns": 2_500_000_000, "th_pkts": {"TCP": 50, "TAGGED": 50}},
              {"event": "mcdt_push", "t_ns": 12_000_000_000, "th_pkts": {"TCP": 1, "TAGGED": 1}}]
    (tmp_path / "share_events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    runs = {"A": {"_run_dir": str(tmp_path), "t0_ns": 0,
                  "scenario": {"phases": [{"name": "p1", "start_s": 0, "end_s": 10}]}}}
    assert pc.m_upta_interval(runs, "A", "r2", 3, "alpha_bps") == "1.90 Mbit/s"
    assert pc.m_upta_interval(runs, "A", "r2", 3, "s", "mean") == "1.67"
    assert pc.m_upta_interval(runs, "A", ["r2", "r3"], 3, "s", "mean") == "1.67 / 1.00"
    with pytest.raises(pc.CompareError, match="no upta_interval alpha_bps at r4:3"):
        pc.m_upta_interval(runs, "A", "r4", 3, "alpha_bps")
    assert pc.m_mcdt_threshold_pkts(runs, "A", "p1", "ALL") == "99.5 pkts"
    assert pc.m_mcdt_threshold_pkts(runs, "A", "p1", "TCP") == "55.0 pkts"
