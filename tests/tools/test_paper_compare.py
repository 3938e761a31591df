"""paper_compare: the docs' paper/mmaqm tables are rendered from committed runs."""

from pathlib import Path

import pytest
import yaml

import paper_compare as pc  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EXPERIMENTS = REPO / "docs" / "experiments"


def spec() -> dict:
    return yaml.safe_load(pc.SPEC.read_text())


def page_of(name: str) -> Path:
    by_page, problems = pc.locate({name: spec()[name]},
                                  {p: p.read_text() for p in pc.default_pages()})
    assert problems == []
    return next(iter(by_page))


def test_every_committed_paper_table_matches_its_data() -> None:
    assert pc.main([]) == 0
    by_page, problems = pc.locate(spec(), {p: p.read_text() for p in pc.default_pages()})
    assert problems == []
    for page, part in by_page.items():
        _, problems = pc.process(page.read_text(), part, pc.RESULTS, write=False,
                                 base=pc.link_base(page))
        assert problems == [], page


def test_each_paper_table_is_on_its_experiment_page() -> None:
    for name in spec():
        page = page_of(name)
        assert page.parent == EXPERIMENTS, (name, page)
        assert page.stem == name.split("-")[0], (name, page)
    assert "paper-compare:" not in (REPO / "README.md").read_text()


def test_data_links_are_relative_to_the_page() -> None:
    name, paper = next(iter(spec().items()))
    table = pc.render(paper, base=pc.link_base(page_of(name)))
    first = paper["runs"][0]
    assert table.startswith(f"Data: [docs/results/{first}/](../results/{first}/)")
    assert pc.link_base(REPO / "README.md") == "docs/results"


def test_a_hand_edited_mmaqm_cell_is_caught_and_write_restores_it(tmp_path) -> None:
    name, paper = next(iter(spec().items()))
    page = page_of(name)
    text = page.read_text()
    base = pc.link_base(page)
    table = pc.render(paper, base=base)
    row = next(line for line in table.splitlines()[4:] if "{" not in line)
    cells = row.split(" | ")
    cells[2] = cells[2] + "0"                      # the mmaqm column
    edited = text.replace(row, " | ".join(cells), 1)
    assert edited != text
    _, problems = pc.process(edited, {name: paper}, pc.RESULTS, write=False, base=base)
    assert len(problems) == 1 and "differs from its data" in problems[0]
    fixed, problems = pc.process(edited, {name: paper}, pc.RESULTS, write=True, base=base)
    assert problems == [] and fixed == text
    # the same through main(), on a copy of the page at the same depth
    copy = tmp_path / "docs" / "experiments" / page.name
    copy.parent.mkdir(parents=True)
    (tmp_path / "docs" / "results").symlink_to(pc.RESULTS)
    copy.write_text(edited)
    args = ["--pages", str(copy), "--results", str(tmp_path / "docs" / "results")]
    assert pc.main(args + ["--spec", str(_spec_file(tmp_path, name))]) == 1
    assert pc.main(args + ["--spec", str(_spec_file(tmp_path, name)), "--write"]) == 0
    assert copy.read_text() == text


def _spec_file(tmp_path: Path, name: str) -> Path:
    f = tmp_path / "spec.yaml"
    f.write_text(yaml.safe_dump({name: spec()[name]}, allow_unicode=True))
    return f


def test_a_missing_block_and_a_bad_metric_are_problems() -> None:
    name, paper = next(iter(spec().items()))
    text = page_of(name).read_text()
    _, problems = pc.process("no markers here", {name: paper}, pc.RESULTS, write=False,
                             page="p.md")
    assert problems == [f"{name}: p.md has no <!-- paper-compare:{name} --> block"]
    _, problems = pc.locate({name: paper}, {Path("a.md"): "none", Path("b.md"): "none"})
    assert problems == [f"{name}: <!-- paper-compare:{name} --> must be in exactly one page, "
                        f"found in no page"]
    marker = f"<!-- paper-compare:{name} -->"
    _, problems = pc.locate({name: paper}, {Path("/x/a.md"): marker, Path("/x/b.md"): marker})
    assert len(problems) == 1 and "/x/a.md, /x/b.md" in problems[0]
    row = {"id": "q", "quantity": "q", "paper": "1", "kind": "none", "source": "none"}
    bad = {**paper, "rows": [{**row, "mmaqm": {"fn": "nope"}}]}
    _, problems = pc.process(text, {name: bad}, pc.RESULTS, write=False)
    assert "unknown metric 'nope'" in problems[0]
    bad = {**paper, "rows": [{**row, "mmaqm": {"fn": "class_kbps", "algorithm": "NOPE",
                                               "phase": "blast", "cls": "TCP"}}]}
    _, problems = pc.process(text, {name: bad}, pc.RESULTS, write=False)
    assert "no summary for NOPE" in problems[0]


def test_metrics_on_a_small_hand_made_run() -> None:
    port = {"run": {"TCP": {"arrivals": 1000, "departures": 900, "drops_total": 100},
                    "TAGGED": {"arrivals": 400, "departures": 300, "drops_total": 100}}}
    s = {"scenario": {"duration_s": 10.0},
         "phases": {"p": {"class_avg_per_flow_kbps": {"TCP": 500.0, "TAGGED": 650.0,
                                                      "UNTAGGED": None},
                          "fair_share_kbps": 600.0, "jain": 0.98765,
                          "n_flows_by_class": {"TCP": 3, "TAGGED": 1, "UNTAGGED": 0}}},
         "switch": {"bottleneck": {"switch": "r1", "port": 4}, "ports": {"r1:4": port}}}
    runs = {"A": s}
    assert pc.value(runs, {"fn": "class_ratio_pct", "algorithm": "A", "phase": "p",
                           "num": "TAGGED", "den": "TCP"}) == "+30 %"
    assert pc.value(runs, {"fn": "class_share_of_fair_pct", "algorithm": "A", "phase": "p",
                           "cls": "TAGGED"}) == "108 % of fair"
    assert pc.value(runs, {"fn": "jain", "algorithm": "A", "phase": "p"}) == "0.988"
    assert pc.value(runs, {"fn": "flow_share_pct", "algorithm": "A", "phase": "p",
                           "cls": "TAGGED"}) == "25 %"
    # 900 packets of 1000 bytes in 10 s = 720 kbit/s; drops 100 / 1000 arrivals
    assert pc.value(runs, {"fn": "accounting", "algorithm": "A", "field": "tcp_kbps"}) == "720 kbit/s"
    assert pc.value(runs, {"fn": "accounting", "algorithm": "A", "field": "tcp_drop_pct"}) == "10.00 %"
    assert pc.value(runs, {"fn": "accounting", "algorithm": "A", "field": "tagged_delivered"}) == "300"
    assert pc.value(runs, {"text": "not measurable"}) == "not measurable"
    with pytest.raises(pc.CompareError, match="no UNTAGGED flow"):
        pc.value(runs, {"fn": "class_kbps", "algorithm": "A", "phase": "p", "cls": "UNTAGGED"})


def test_a_duplicated_paper_key_is_an_error_not_last_wins(tmp_path) -> None:
    # The spec once had two `cbt:` blocks; YAML's "last wins" hid the first one.
    spec = tmp_path / "spec.yaml"
    spec.write_text("cbt:\n  run: a\n  rows: []\ncbt:\n  run: b\n  rows: []\n")
    assert pc.main(["--spec", str(spec)]) == 2


def test_mcdt_metrics_on_a_small_hand_made_run() -> None:
    # mcdt Figs. 6-8: total drop rate, class totals, queueing delay of the FIFO and of a class
    counts = {"TCP": {"arrivals": 1000, "drops_total": 100},
              "TAGGED": {"arrivals": 400, "drops_total": 20},
              "UNTAGGED": {"arrivals": 600, "drops_total": 180}}
    s = {"phases": {"p": {"class_total_kbps": {"TCP": 7000.4, "TAGGED": 1000.0, "UNTAGGED": 0.0},
                          "udp_class": {"TAGGED": {"mean_ms": 42.5}, "UNTAGGED": None}}},
         "run": {"udp_class": {"TAGGED": {"min_ms": 30.75}, "UNTAGGED": None}},
         "bottleneck": {"rate_pps": 1250},
         "switch": {"bottleneck": {"switch": "r1", "port": 4},
                    "ports": {"r1:4": {"run": counts, "phases": {"p": counts}}},
                    "occupancy": {"mean_pkts_by_phase": {"p": {"total": 25.0}}}}}
    other = {"run": {"udp_class": {"TAGGED": {"min_ms": 31.0}, "UNTAGGED": {"min_ms": 30.25}}}}
    runs = {"A": s, "B": other}     # the propagation floor: B's untagged minimum
    # (100 + 20 + 180) / 2000 arrivals
    assert pc.value(runs, {"fn": "total_loss_pct", "algorithm": "A", "phase": "run"}) == "15.0 %"
    assert pc.value(runs, {"fn": "total_loss_pct", "algorithm": "A", "phase": "p"}) == "15.0 %"
    assert pc.value(runs, {"fn": "class_total_kbps", "algorithm": "A", "phase": "p",
                           "cls": "TCP"}) == "7 000 kbit/s"
    # 25 packets at 1250 packets/s = 20 ms; 42.5 - 30.25 ms
    assert pc.value(runs, {"fn": "queue_delay_ms", "algorithm": "A", "phase": "p"}) == "20.0 ms"
    assert pc.value(runs, {"fn": "udp_queueing_ms", "algorithm": "A", "phase": "p",
                           "cls": "TAGGED"}) == "12.2 ms"
    with pytest.raises(pc.CompareError, match="no UNTAGGED packets"):
        pc.value(runs, {"fn": "udp_queueing_ms", "algorithm": "A", "phase": "p", "cls": "UNTAGGED"})
    # several algorithms in one cell, in the order given
    runs2 = {"A": s, "B": s}
    assert pc.value(runs2, {"fn": "queue_delay_ms", "algorithms": ["B", "A"], "phase": "p"}) == \
        "20.0 ms / 20.0 ms"
