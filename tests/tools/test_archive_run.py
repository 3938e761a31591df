"""archive_run: a run's evidence goes to docs/results/<name>/, small and still exact."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import archive_run  # noqa: E402
from archive_run import ArchiveError, keep_times_ns, thin_samples  # noqa: E402
from mmaqm_exp import analysis

REPO = Path(__file__).resolve().parents[2]
T0 = 1_700_000_000_000_000_000
MS = 1_000_000
S = 1_000_000_000


def test_thin_samples_keeps_one_per_period_and_both_neighbours_of_each_keep_time():
    # r1 every 100 ms from 0 to 2.5 s; r2 every 100 ms from 50 ms
    samples = [{"switch": "r1", "t_ns": i * 100 * MS, "n": i} for i in range(26)]
    samples += [{"switch": "r2", "t_ns": 50 * MS + i * 100 * MS} for i in range(3)]
    kept = thin_samples(samples, keep_t_ns=[1_250 * MS, 2_000 * MS], period_ns=S)
    r1 = [s["t_ns"] // MS for s in kept if s["switch"] == "r1"]
    # first of each 1 s window (0, 1000, 2000), around 1250 (1200, 1300), around 2000
    # (exactly a sample: only that one), and the last (2500)
    assert r1 == [0, 1000, 1200, 1300, 2000, 2500]
    assert [s["t_ns"] // MS for s in kept if s["switch"] == "r2"] == [50, 250]
    assert [s["t_ns"] for s in kept] == sorted(s["t_ns"] for s in kept)
    with pytest.raises(ValueError):
        thin_samples(samples, [], 0)


def test_keep_times_are_phase_boundaries_and_the_udp_checks_instants():
    summary = {"t0_ns": T0, "scenario": {"duration_s": 3, "phases": [
        {"name": "a", "start_s": 0, "end_s": 1.5}, {"name": "b", "start_s": 1.5, "end_s": 3}]},
        "udp_arrivals": {"baseline_t_ns": T0 - S, "final_t_ns": T0 + 4 * S}}
    assert keep_times_ns(summary) == [T0 - S, T0, T0 + 1_500 * MS, T0 + 3 * S, T0 + 4 * S]


# ------------------------------------------------------------------ a synthetic run
SCENARIO = {"name": "syn", "duration_s": 3, "phases": [
    {"name": "a", "start_s": 0, "end_s": 1.5}, {"name": "b", "start_s": 1.5, "end_s": 3}]}


def _counters() -> list[dict]:
    """r1 and r2 every 100 ms from -1 s to 4 s; r1 port 4 counts 7 TCP and 3 TAGGED
    arrivals per sample (1 TCP dropped) from 0 to 3 s, so every sample differs."""
    out = []
    for i in range(51):
        t = -1.0 + i * 0.1
        n = max(0, min(30, round((t + 1e-9) * 10)))
        for sw in ("r1", "r2"):
            rd = [{"port": 4, "class": c,
                   "arrivals": {"packets": k * n, "bytes": 1000 * k * n},
                   "admits": {"packets": (k - d) * n, "bytes": 0},
                   "departures": {"packets": (k - d) * n, "bytes": 0},
                   "drops": {"RED_EARLY": {"packets": d * n, "bytes": 0}}}
                  for c, k, d in (("TCP", 7, 1), ("TAGGED", 3, 0))]
            out.append({"t_ns": T0 + int(round(t * 1e9)), "switch": sw, "readings": rd,
                        "ingress_discards": {"1": 0}, "pad": "x" * 400})
    return out


def _summary(counters: list[dict]) -> dict:
    sc = SimpleNamespace(duration_s=3, phases=[SimpleNamespace(**p) for p in SCENARIO["phases"]])
    return {"t0_ns": T0, "scenario": SCENARIO,
            "switch": analysis.switch_metrics(counters, T0, sc, ("r1", 4)),
            "udp_arrivals": {"baseline_t_ns": T0 - 550 * MS, "final_t_ns": T0 + 3_420 * MS}}


@pytest.fixture
def results(tmp_path: Path) -> Path:
    run = tmp_path / "results" / "syn-1"
    (run / "RED").mkdir(parents=True)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "syn.yaml").write_text("name: syn\n")
    (inputs / "pol.yaml").write_text("RED: {}\n")
    (inputs / "topo.json").write_text("{}\n")
    (run / "experiment.json").write_text(json.dumps({
        "topology": "inputs/topo.json", "scenario": "inputs/syn.yaml", "policies": str(inputs / "pol.yaml"),
        "algorithms": ["RED"], "duration_s": 3, "started": "2026-11-24T20:00:00+0000", "nproc": 2,
        "command": "mmaqm-exp --scenario inputs/syn.yaml --algorithms RED", "cwd": str(tmp_path),
        "git": {"commit": "abc123", "uncommitted_files": 2}}))
    for name in ("table.txt", "cpu.txt", "bandwidth_variation.txt"):
        (run / name).write_text(f"{name}\n")
    (run / "fig8_class_throughput.png").write_bytes(b"\x89PNG....")
    (run / "network").mkdir()                      # raw folders stay behind
    (run / "network" / "bmv2-r1.out").write_text("log\n")
    counters = _counters()
    (run / "RED" / "counters.jsonl").write_text("".join(json.dumps(c) + "\n" for c in counters))
    (run / "RED" / "summary.json").write_text(json.dumps(_summary(counters)))
    (run / "RED" / "flows.csv").write_text("phase,start_s\n")
    (run / "RED" / "controller.yaml").write_text("switches: {}\n")
    (run / "RED" / "registers.jsonl").write_text(json.dumps({"t_ns": T0, "switch": "r1"}) + "\n")
    (run / "RED" / "share_events.jsonl").write_text(json.dumps({"t_ns": T0, "port": 4}) + "\n")
    (run / "RED" / "traffic").mkdir()
    (run / "RED" / "traffic" / "udp-recv-mm2.csv").write_text("big\n")
    return run


def test_archive_copies_the_evidence_thins_the_counters_and_keeps_them_exact(results, tmp_path,
                                                                            monkeypatch):
    monkeypatch.setattr(archive_run, "THIN_ABOVE_BYTES", 10_000)
    dest = tmp_path / "docs" / "results" / "syn"
    files = {str(p.relative_to(dest)) for p in archive_run.archive(results, dest)}
    assert files == {"COMMAND.txt", "experiment.json", "table.txt", "cpu.txt",
                     "bandwidth_variation.txt", "fig8_class_throughput.png", "scenario.yaml",
                     "policies.yaml", "topology.json", "RED/summary.json", "RED/flows.csv",
                     "RED/controller.yaml", "RED/counters.jsonl", "RED/registers.jsonl",
                     "RED/share_events.jsonl"}
    assert (dest / "scenario.yaml").read_text() == "name: syn\n"
    kept = analysis.read_counters(dest / "RED" / "counters.jsonl")
    # per switch: -1, 0, 1, 2, 3, 4 s (period starts), the neighbours of -0.55 and 3.42 s,
    # 1.5 s (a phase boundary, exactly a sample)
    r1 = [round((s["t_ns"] - T0) / 1e8) for s in kept if s["switch"] == "r1"]
    assert r1 == [-10, -6, -5, 0, 10, 15, 20, 30, 34, 35, 40]
    assert archive_run.switch_deltas_match(json.loads((dest / "RED" / "summary.json").read_text()),
                                           kept) == []
    command = (dest / "COMMAND.txt").read_text()
    assert "command: mmaqm-exp --scenario inputs/syn.yaml --algorithms RED" in command
    assert "git commit: abc123 (2 files uncommitted at run time)" in command
    assert "scenario: inputs/syn.yaml (copied here as scenario.yaml)" in command
    assert "thinned: RED/counters.jsonl: 22 of 102 samples" in command


def test_archive_main_prints_the_total_size(results, tmp_path, capsys):
    dest = tmp_path / "syn"
    assert archive_run.main([str(results), str(dest)]) == 0
    out = capsys.readouterr().out
    total = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    assert f"archive_run: 15 files, {total / 1e6:.2f} MB in {dest}" in out
    # small counters are copied whole
    assert archive_run.read_text(dest / "RED" / "counters.jsonl") == (results / "RED" / "counters.jsonl").read_text()


def test_bad_input_is_a_clear_error_and_writes_nothing(results, tmp_path, capsys):
    dest = tmp_path / "out" / "syn"
    dest.mkdir(parents=True)
    with pytest.raises(ArchiveError, match="exists"):
        archive_run.archive(results, dest)
    dest.rmdir()
    with pytest.raises(ArchiveError, match="no experiment.json"):
        archive_run.archive(results / "RED", dest)
    exp = json.loads((results / "experiment.json").read_text())
    del exp["command"]
    (results / "experiment.json").write_text(json.dumps(exp))
    with pytest.raises(ArchiveError, match="pass --command"):
        archive_run.archive(results, dest)
    assert archive_run.main([str(results), str(dest), "--command", "make run"]) == 0
    assert "command: make run" in (dest / "COMMAND.txt").read_text()
    # a summary that the counters do not back: nothing is left behind
    dest2 = tmp_path / "out" / "syn2"
    summary = json.loads((results / "RED" / "summary.json").read_text())
    summary["switch"]["ports"]["r1:4"]["phases"]["b"]["TCP"]["arrivals"] += 1
    (results / "RED" / "summary.json").write_text(json.dumps(summary))
    assert archive_run.main([str(results), str(dest2), "--command", "x"]) == 1
    assert "do not recompute summary.json's deltas for r1:4 phases" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["syn"]
    (results / "cpu.txt").unlink()
    with pytest.raises(ArchiveError, match="missing cpu.txt"):
        archive_run.archive(results, dest2)


def test_large_data_files_are_stored_gzipped_and_read_back(tmp_path):
    big = tmp_path / "a" / "summary.json"
    big.parent.mkdir()
    text = '{"x": "' + "y" * (archive_run.GZIP_ABOVE_BYTES + 1) + '"}'
    big.write_text(text)
    small = tmp_path / "a" / "flows.csv"
    small.write_text("id,kbps\n1,2\n")
    png = tmp_path / "plot.png"
    png.write_bytes(b"x" * (archive_run.GZIP_ABOVE_BYTES + 1))
    assert archive_run.compress_large_files(tmp_path) == ["a/summary.json"]
    assert not big.exists() and (tmp_path / "a" / "summary.json.gz").is_file()
    assert archive_run.has_file(big) and archive_run.read_text(big) == text
    assert small.is_file() and png.is_file()          # small data and images stay as they are
    assert not archive_run.has_file(tmp_path / "a" / "absent.json")
