"""check_links: every relative link and #anchor of the docs resolves."""

from pathlib import Path

import check_links

REPO = Path(__file__).resolve().parents[2]


def test_the_repository_docs_have_no_broken_links(capsys) -> None:
    rc = check_links.main([])
    out = capsys.readouterr().out
    assert rc == 0, out
    pages = int(out.split("check-links: ")[1].split(" pages")[0])
    assert pages >= 20, out          # README.md, docs/**, topologies/README*.md, bench/README.md


def _tree(tmp_path: Path, page: str) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Page A\n\n## Second part: the `x_y` (§2)\n\ntext\n")
    (tmp_path / "docs" / "results").mkdir()
    (tmp_path / "README.md").write_text(page)
    return tmp_path


def _check(root: Path) -> tuple[list[str], list[str]]:
    return check_links.check(check_links.default_files(root), root)


def test_good_links_pass(tmp_path) -> None:
    root = _tree(tmp_path, "# Top\n\n[a](docs/a.md) [part](docs/a.md#second-part-the-x_y-2) "
                           "[self](#top) [folder](docs/results/) ![img](docs/a.md) "
                           "[web](https://example.org/nowhere) `[code](nowhere.md)`\n"
                           "```\n[fenced](nowhere.md)\n```\n")
    assert _check(root) == ([], [])


def test_a_broken_link_is_caught(tmp_path) -> None:
    root = _tree(tmp_path, "# Top\n\nsee [gone](docs/gone.md)\n")
    errors, _ = _check(root)
    assert len(errors) == 1 and "README.md:3" in errors[0] and "docs/gone.md" in errors[0]
    assert check_links.main(["--root", str(root)]) == 1


def test_a_broken_anchor_is_caught(tmp_path) -> None:
    root = _tree(tmp_path, "# Top\n\n[a](docs/a.md#no-such-part) [self](#nowhere)\n")
    errors, _ = _check(root)
    assert len(errors) == 2, errors
    assert "no heading #no-such-part in docs/a.md" in errors[0]
    assert "no heading #nowhere in README.md" in errors[1]


def test_a_link_out_of_the_repository_is_caught(tmp_path) -> None:
    (tmp_path / "repo").mkdir()
    root = _tree(tmp_path / "repo", "# Top\n\n[shared](../shared/notes.md)\n")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "notes.md").write_text("x\n")
    errors, _ = _check(root)
    assert len(errors) == 1 and "leaves the repository" in errors[0]


def test_pages_under_docs_results_are_not_checked(tmp_path) -> None:
    root = _tree(tmp_path, "# Top\n")
    (root / "docs" / "results" / "run.md").write_text("[gone](nowhere.md)\n")
    assert _check(root) == ([], [])


def test_the_generated_configuration_page_may_be_missing_until_it_exists(tmp_path) -> None:
    root = _tree(tmp_path, "# Top\n\n[keys](docs/configuration.md) "
                           "[one key](docs/configuration.md#queue_limit_pkts)\n")
    errors, notes = _check(root)
    assert errors == [] and len(notes) == 2 and "does not exist yet" in notes[0]
    (root / "docs" / "configuration.md").write_text("# Configuration\n\n## `queue_limit_pkts`\n")
    assert _check(root) == ([], [])
    (root / "docs" / "configuration.md").write_text("# Configuration\n")
    errors, _ = _check(root)
    assert len(errors) == 1 and "no heading #queue_limit_pkts" in errors[0]


def test_github_anchors() -> None:
    assert check_links.slug("UPTA on the upta paper's seven-router chain (upta §6–7, Fig. 1)") \
        == "upta-on-the-upta-papers-seven-router-chain-upta-67-fig-1"
    assert check_links.slug("The controller: `mmaqm-ctl`") == "the-controller-mmaqm-ctl"
    assert check_links.slug("[Linked](x.md) heading") == "linked-heading"
    text = "# A\n## Notes\n## Notes\n```\n## Not a heading\n```\n"
    assert check_links.anchors(text) == {"a", "notes", "notes-1"}
