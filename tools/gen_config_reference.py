#!/usr/bin/env python3
"""Generate docs/configuration.md, the controller configuration's reference,
from the code that validates it, so that the two cannot disagree:

* the keys outside the policies: ``mmaqm.config.FIELDS`` (path, type, unit,
  allowed values, default, doc; its ranges are formatted from config.py's
  constants, and tests/controller/test_config_fields.py keeps it equal to the
  keys config.py's readers accept);
* the keys of every policy: ``mmaqm.config.COMMON_POLICY_PARAMS``;
* one section per algorithm, in ``mmaqm.algorithms.REGISTRY`` order: its
  summary, P4 action, doc page and parameters (``algorithms.base.Param``).

  tools/gen_config_reference.py            rewrite docs/configuration.md (make config-reference)
  tools/gen_config_reference.py --check    write nothing; exit 1, with a diff, when it is stale
  tools/gen_config_reference.py --output FILE   another target

tests/tools/test_config_reference.py fails when the committed page differs from
what the code generates.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from mmaqm import algorithms as A
from mmaqm import config as CFG
from mmaqm.algorithms.base import Algorithm, Param

REPO = Path(__file__).resolve().parents[1]
OUTPUT = Path("docs/configuration.md")
DOCS = PurePosixPath("docs")

# A complete, valid config (tests/tools/test_config_reference.py parses it).
EXAMPLE = """\
classifier:
  tagged_dscp: [46, 34]             # UDP with DSCP EF or AF41 is tagged (multimedia)
active_flows:
  expiry_interval_ms: 300
  update_interval_ms: 50
switches:
  s1:
    p4runtime_addr: 127.0.0.1:9559
    device_id: 1
    ports:                          # the router's own MAC on each port (quote MACs)
      1: {mac: "02:00:00:00:00:01"}
      2: {mac: "02:00:00:00:00:02"}
    routes:
      - {prefix: 10.0.1.0/24, port: 1, next_hop_mac: "02:00:00:01:00:01"}
      - {prefix: 10.0.2.0/24, port: 2, next_hop_mac: "02:00:00:02:00:01"}
    policies:
      default:                      # every port without its own entry
        algorithm: DCBT
        queue_limit_pkts: 60
        min_th_pkts: 5
        max_th_pkts: 15
        max_p: 0.1
      1:                            # port 1's own policy
        algorithm: DROP_TAIL
        queue_limit_pkts: 100
"""

_KIND = {"number": "number", "int": "int", "bool": "bool", "choice": "string"}
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")      # what Markdown would read as HTML


def cell(text: str) -> str:
    """Text for a table cell: pipes escaped, nothing read as an HTML tag."""
    return _TAG_START.sub("&lt;", text.replace("|", "\\|"))


def code(text: str) -> str:
    return f"`{text}`".replace("|", "\\|")


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def param_rows(params: Iterable[Param]) -> list[list[str]]:
    rows = []
    for p in params:
        allowed = p.range_text()
        # range_text() of an unbounded number is "a number any"
        allowed = allowed.replace("a number any", "any number").replace("an integer any",
                                                                         "any integer")
        allowed += f"; {p.note}" if p.note else ""
        rows.append([code(p.key), _KIND[p.kind], cell(p.unit), cell(allowed),
                     cell(p.default_text()), cell(p.doc)])
    return rows


def field_rows(fields: Iterable[CFG.FieldDoc]) -> list[list[str]]:
    return [[code(f.path), cell(f.kind), cell(f.unit), cell(f.allowed), cell(f.default),
             cell(f.doc)] for f in fields]


_HEADER = ["Key", "Type", "Unit", "Allowed", "Default", "Description"]


def doc_link(doc_page: str) -> str:
    """An algorithm's doc page (``docs/...``) as a link from docs/configuration.md."""
    page = PurePosixPath(doc_page)
    if DOCS not in page.parents:
        raise ValueError(f"doc_page {doc_page!r} is not under docs/")
    rel = page.relative_to(DOCS).as_posix()
    return f"[{rel}]({rel})"


def algorithm_section(plugin: Algorithm) -> list[str]:
    summary = plugin.summary[:1].upper() + plugin.summary[1:]
    lines = [f"### {plugin.name}", "",
             *paragraph(f"{summary}. P4 action {code(plugin.p4_action)} of the table "
                        f"`port_policy`; how it works: {doc_link(plugin.doc_page)}."), ""]
    if plugin.params:
        lines += table(_HEADER, param_rows(plugin.params))
    else:
        lines.append("No keys besides the common ones.")
    return lines + [""]


def _under(path: str, top: str) -> bool:
    return path.startswith(top + ".") or path.startswith(top + "[")


def render(fields: Sequence[CFG.FieldDoc] | None = None,
           common: Sequence[Param] | None = None,
           registry: Mapping[str, Algorithm] | None = None) -> str:
    """The page's text for these declarations (None: the code's, read at the call)."""
    fields = CFG.FIELDS if fields is None else fields
    common = CFG.COMMON_POLICY_PARAMS if common is None else common
    registry = A.REGISTRY if registry is None else registry
    tops = [f for f in fields if "." not in f.path and "[" not in f.path]
    lines = [
        "<!-- Generated by tools/gen_config_reference.py from mmaqm.config (FIELDS,",
        "     COMMON_POLICY_PARAMS) and the algorithm plug-ins (mmaqm.algorithms);",
        "     do not edit. Regenerate with `make config-reference`. -->",
        "# Configuration reference",
        "",
        *paragraph(
            "The controller (`mmaqm-ctl check|install|run -c FILE`) reads one YAML file: the "
            "packet classifier, the active-flow counting and, per switch, its P4Runtime "
            "address, ports, routes and the AQM policy of each port. This page lists every "
            "key. It is generated from the code that validates the file "
            "(`mmaqm.config` and the algorithm plug-ins in `mmaqm.algorithms`): do not edit "
            "it; regenerate it with `make config-reference` "
            "(`tools/gen_config_reference.py --check` fails when it is stale)."),
        "",
        *paragraph(
            "The whole file is validated before anything is written to a switch, and every "
            "problem is reported at once, each error starting with the path of its field "
            "(mapping keys dotted, list indices in brackets), e.g. "
            "`switches.s1.policies.2.min_th_pkts: must be < max_th_pkts (15), got 20`. "
            "Unknown keys are errors everywhere (they are usually typos), with a suggestion "
            "when a known key is close (`did you mean 'max_th_pkts'?`); so are duplicate keys "
            "in one mapping. A file is a regular file of UTF-8 text, at most "
            f"{CFG.MAX_CONFIG_BYTES} bytes, {CFG.MAX_YAML_NODES} values (every alias and "
            f"merge key counted as the values it repeats) and {CFG.MAX_YAML_DEPTH} levels "
            "deep. Numbers are written in decimal: YAML 1.1's other forms (`1:00` is 60 "
            "in base 60, `0b111111`, `010`, `0x3f`) are errors wherever a number goes."),
        "",
        *paragraph(
            "In the tables, `<name>` and `<port>` stand for keys you choose, `[]` for every "
            "item of a list. A \"required\" key has no default; a default of \"none\" means "
            "that without the key nothing is set (no BFD, no idle decay, ...)."),
        "",
        "## Example",
        "",
        "```yaml",
        *EXAMPLE.rstrip("\n").split("\n"),
        "```",
        "",
        "## Top level",
        "",
        *table(_HEADER, field_rows(tops)),
        "",
    ]
    for top in tops:
        below = [f for f in fields if _under(f.path, top.path)]
        if below:
            lines += [f"## {code(top.path)}", "", *table(_HEADER, field_rows(below)), ""]
    lines += [
        "## Policies",
        "",
        *paragraph(
            "A policy (`switches.<name>.policies.default` or `switches.<name>.policies.<port>`) "
            "is a mapping: the common keys below, then the keys of its algorithm's section. "
            "A key that only other algorithms take is an error naming them. Every port that "
            "a route uses needs a policy, its own or the default."),
        "",
        "### Common keys",
        "",
        *table(_HEADER, param_rows(common)),
        "",
    ]
    for plugin in registry.values():
        lines += algorithm_section(plugin)
    return "\n".join(lines).rstrip("\n") + "\n"


def paragraph(text: str) -> list[str]:
    """A paragraph of prose, wrapped (never inside a word or a code span)."""
    glued = re.sub(r"`[^`]*`", lambda m: m.group(0).replace(" ", "\0"), text)
    return [line.replace("\0", " ") for line in
            textwrap.wrap(glued, width=88, break_long_words=False, break_on_hyphens=False)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=REPO / OUTPUT,
                        help=f"page to write or check (default: {OUTPUT})")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 with a diff when the page is stale")
    args = parser.parse_args(argv)
    text = render()
    current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
    if args.check:
        if current == text:
            return 0
        sys.stderr.writelines(difflib.unified_diff(
            current.splitlines(keepends=True), text.splitlines(keepends=True),
            str(args.output), "generated from the code"))
        print(f"mmaqm: {args.output} is stale (the configuration code changed); "
              f"run 'make config-reference'", file=sys.stderr)
        return 1
    if current != text:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
