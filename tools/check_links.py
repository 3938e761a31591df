#!/usr/bin/env python3
"""Check the relative links of the project's Markdown pages.

Every relative link and image in README.md, docs/**/*.md (not docs/results/**,
which holds run data), topologies/README*.md and bench/README.md must point at
a file or folder inside the repository, and a `#anchor` must name a heading of
the target page (GitHub's anchors: lower case, punctuation removed, spaces
become hyphens, a repeated heading gets -1, -2, ...). Links with a scheme
(https:, mailto:) are not checked. Links inside code blocks and code spans are
not links.

docs/configuration.md is generated from the controller's code by another
tool. While it does not exist yet, links to it are reported as a note, not an
error; once it exists they are checked like any other.

  python tools/check_links.py [--root DIR] [FILE ...]

Exit status 1 when a link is broken (each is printed as file:line: ...).
"""

from __future__ import annotations

import argparse
import re
import sys
import unicodedata
from pathlib import Path
from urllib.parse import unquote

REPO = Path(__file__).resolve().parents[1]
# Generated pages that may not exist yet: a link to one is a note until it does.
ALLOWED_MISSING = ("docs/configuration.md",)

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# [text](target) and ![alt](target); the target may be <...> and may carry a "title".
_INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
_REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
_HTML_ID = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.I)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def default_files(root: Path) -> list[Path]:
    files = [root / "README.md"]
    docs = root / "docs"
    if docs.is_dir():
        files += sorted(p for p in docs.rglob("*.md")
                        if (docs / "results") not in p.parents)
    files += sorted((root / "topologies").glob("README*.md"))
    files += [p for p in (root / "bench" / "README.md",) if p.is_file()]
    return [p for p in files if p.is_file()]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading's text (markup removed first)."""
    text = _CODE_SPAN.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)       # links: their text
    text = re.sub(r"<[^>]+>", "", text)                           # inline HTML
    out = []
    for ch in text.lower():
        cat = unicodedata.category(ch)
        if ch in " -" or cat[0] in "LMN" or cat == "Pc":
            out.append("-" if ch == " " else ch)
    return "".join(out)


def _lines_outside_code(text: str):
    """(line number, line) of the lines outside fenced code blocks."""
    fenced = None
    for n, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if m:
            if fenced is None:
                fenced = m.group(1)
            elif m.group(1) == fenced:
                fenced = None
            continue
        if fenced is None:
            yield n, line


def anchors(text: str) -> set[str]:
    """Every anchor a page defines: its headings' slugs (with GitHub's -N suffixes for
    repeated ones) and explicit <a name/id="..."> targets."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in _lines_outside_code(text):
        found.update(_HTML_ID.findall(line))
        m = _HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(text: str):
    """(line number, target) of every link and image outside code."""
    for n, line in _lines_outside_code(text):
        bare = _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
        for m in _INLINE.finditer(bare):
            yield n, m.group(1)
        m = _REFDEF.match(bare)
        if m:
            yield n, m.group(1)


def check_file(path: Path, root: Path, cache: dict[Path, set[str]]) -> tuple[list[str], list[str]]:
    """-> (errors, notes) of one page."""
    errors, notes = [], []
    root = root.resolve()
    text = path.read_text(encoding="utf-8")
    rel = path.resolve().relative_to(root) if path.resolve().is_relative_to(root) else path
    for line, raw in links(text):
        target = raw[1:-1] if raw.startswith("<") else raw
        if _SCHEME.match(target) or target.startswith("//"):
            continue                                  # external: not checked here
        part, _, anchor = target.partition("#")
        part, anchor = unquote(part), unquote(anchor)
        where = f"{rel}:{line}: link {target!r}"
        if part:
            dest = (path.parent / part).resolve() if not part.startswith("/") \
                else (root / part.lstrip("/")).resolve()
            if not dest.is_relative_to(root):
                errors.append(f"{where} leaves the repository")
                continue
            dest_rel = dest.relative_to(root).as_posix()
            if not dest.exists():
                if dest_rel in ALLOWED_MISSING:
                    notes.append(f"{where}: {dest_rel} does not exist yet (generated; allowed)")
                else:
                    errors.append(f"{where}: no such file or folder {dest_rel}")
                continue
        else:
            dest = path.resolve()
        if not anchor:
            continue
        if dest.is_dir() or dest.suffix.lower() != ".md":
            errors.append(f"{where}: an anchor into {dest.name}, which is not a Markdown page")
            continue
        if dest not in cache:
            cache[dest] = anchors(dest.read_text(encoding="utf-8"))
        if anchor not in cache[dest] and anchor.lower() not in cache[dest]:
            errors.append(f"{where}: no heading #{anchor} in "
                          f"{dest.relative_to(root).as_posix()}")
    return errors, notes


def check(files: list[Path], root: Path) -> tuple[list[str], list[str]]:
    errors, notes, cache = [], [], {}
    for f in files:
        e, n = check_file(f, root, cache)
        errors += e
        notes += n
    return errors, notes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, default=REPO, help="the repository (default: this one)")
    p.add_argument("files", nargs="*", type=Path,
                   help="pages to check (default: README.md, docs/**/*.md but docs/results, "
                        "topologies/README*.md, bench/README.md)")
    a = p.parse_args(argv)
    files = a.files or default_files(a.root)
    errors, notes = check(files, a.root)
    for line in notes:
        print(f"note: {line}")
    for line in errors:
        print(f"BROKEN {line}")
    print(f"check-links: {len(files)} pages, {len(errors)} broken links, {len(notes)} notes")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
