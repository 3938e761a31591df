#!/usr/bin/env python3
"""Generate control-plane/mmaqm/p4generated.py: every value the controller
takes from the P4 program, extracted from the P4 sources at build time so that
the installed package reads no file of the repository when imported.

Sources (paths relative to the repository root):

* p4src/shared/defines.p4: every ``const bit<N> NAME = VALUE;`` (in file order)
  and every ``enum bit<N> name { ... }`` (mmaqm.p4constants.parse_constants /
  parse_enums, the parsers the package also uses for $MMAQM_DEFINES_P4);
* p4src/v1model/main.p4info.txtpb, the golden P4Info: its serializable enums
  (``type_info.serializable_enums``, mmaqm.p4constants.load_serializable_enums);
* p4src/tna/red_tna.p4: its ``const bit<N>`` constants (mmaqm.targets.tna);
* p4src/tna/tna_types.p4: every ``const TYPE NAME = INTEGER;`` (typed with a
  TNA type such as MirrorId_t; constants with an expression value are skipped).

  tools/gen_p4constants.py                 rewrite the module (make gen-constants)
  tools/gen_p4constants.py --check         exit 1, with a diff, when it is stale
  tools/gen_p4constants.py --root DIR --output FILE   other sources / target

tests/tools/test_gen_p4constants.py fails when the committed module differs
from the sources (make build runs --check, make golden-p4info regenerates).
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from pathlib import Path

from mmaqm.p4constants import load_serializable_enums, parse_constants, parse_enums

REPO = Path(__file__).resolve().parents[1]
OUTPUT = Path("control-plane/mmaqm/p4generated.py")
SOURCES = {
    "defines": "p4src/shared/defines.p4",
    "p4info": "p4src/v1model/main.p4info.txtpb",
    "tna_red": "p4src/tna/red_tna.p4",
    "tna_types": "p4src/tna/tna_types.p4",
}

# `const TYPE NAME = VALUE;` with an integer literal VALUE, TYPE any type name
# (bit<N>, PortId_t, MirrorId_t, ...); a line with an expression is not one.
_TYPED_CONST_RE = re.compile(
    r"^const\s+[\w<>]+\s+(?P<name>[A-Za-z_]\w*)\s*=\s*"
    r"(?P<value>0[xX][0-9a-fA-F_]+|\d[\d_]*)\s*;", re.M)


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def parse_typed_constants(text: str, *, source: str = "<text>") -> dict[str, int]:
    """{NAME: value} of every ``const TYPE NAME = INTEGER;`` line, in file order."""
    constants: dict[str, int] = {}
    for match in _TYPED_CONST_RE.finditer(_strip_comments(text)):
        name = match["name"]
        if name in constants:
            raise ValueError(f"{source}: {name} defined twice")
        constants[name] = int(match["value"].replace("_", ""), 0)
    return constants


def extract(root: Path) -> dict[str, object]:
    """The values the generated module holds, read from the sources under root."""
    paths = {key: root / rel for key, rel in SOURCES.items()}
    defines = paths["defines"].read_text()
    values: dict[str, object] = {
        "DEFINES_CONSTANTS": parse_constants(defines, source=SOURCES["defines"]),
        "DEFINES_ENUMS": parse_enums(defines, source=SOURCES["defines"]),
        "P4INFO_ENUMS": dict(sorted(load_serializable_enums(paths["p4info"]).items())),
        "TNA_RED_CONSTANTS": parse_constants(paths["tna_red"].read_text(),
                                             source=SOURCES["tna_red"]),
        "TNA_TYPES_CONSTANTS": parse_typed_constants(paths["tna_types"].read_text(),
                                                     source=SOURCES["tna_types"]),
    }
    return values


def _render_value(value: object, indent: int) -> str:
    """Deterministic Python literal: dicts one entry a line, in their order."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        pad = " " * (indent + 4)
        items = [f"{pad}{json.dumps(key)}: {_render_value(val, indent + 4)},"
                 for key, val in value.items()]
        return "{\n" + "\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(value, int) and not isinstance(value, bool):
        return repr(value)
    raise TypeError(f"cannot render {value!r}")


COMMENTS = {
    "DEFINES_CONSTANTS": "defines.p4: every `const bit<N> NAME = VALUE;`, in file order.",
    "DEFINES_ENUMS": "defines.p4: every `enum bit<N> name { MEMBER = VALUE, ... }`.",
    "P4INFO_ENUMS": "The golden P4Info's serializable enums (type_info.serializable_enums).",
    "TNA_RED_CONSTANTS": "red_tna.p4: every `const bit<N> NAME = VALUE;`.",
    "TNA_TYPES_CONSTANTS": "tna_types.p4: every `const TYPE NAME = INTEGER;`.",
}
TYPES = {
    "DEFINES_CONSTANTS": "dict[str, int]",
    "DEFINES_ENUMS": "dict[str, dict[str, int]]",
    "P4INFO_ENUMS": "dict[str, dict[str, int]]",
    "TNA_RED_CONSTANTS": "dict[str, int]",
    "TNA_TYPES_CONSTANTS": "dict[str, int]",
}


def render(values: dict[str, object]) -> str:
    lines = [
        "# Generated by tools/gen_p4constants.py from the P4 sources below; do not edit.",
        "# Regenerate with `make gen-constants`; tests/tools/test_gen_p4constants.py",
        "# fails when this file and the sources differ.",
        '"""The P4 program\'s constants for mmaqm.p4constants and mmaqm.targets.tna,',
        "extracted at build time (the package reads no P4 file when imported).\"\"\"",
        "",
        "from __future__ import annotations",
        "",
        "# Where each group comes from (relative to the repository root).",
        f"SOURCES: dict[str, str] = {_render_str_dict(SOURCES)}",
    ]
    for name, value in values.items():
        lines += ["", f"# {COMMENTS[name]}", f"{name}: {TYPES[name]} = {_render_value(value, 0)}"]
    return "\n".join(lines) + "\n"


def _render_str_dict(mapping: dict[str, str]) -> str:
    return "{\n" + "".join(f"    {json.dumps(k)}: {json.dumps(v)},\n" for k, v in mapping.items()) + "}"


def generate(root: Path = REPO) -> str:
    return render(extract(root))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=REPO,
                        help="repository root holding the P4 sources (default: this checkout)")
    parser.add_argument("--output", type=Path, default=None,
                        help=f"module to write or check (default: ROOT/{OUTPUT})")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 with a diff when the module is stale")
    args = parser.parse_args(argv)
    output = args.output if args.output is not None else args.root / OUTPUT
    text = generate(args.root)
    current = output.read_text() if output.exists() else ""
    if args.check:
        if current == text:
            return 0
        sys.stderr.writelines(difflib.unified_diff(
            current.splitlines(keepends=True), text.splitlines(keepends=True),
            str(output), "generated from the P4 sources"))
        print(f"mmaqm: {output} is stale (the P4 sources changed); run 'make gen-constants'",
              file=sys.stderr)
        return 1
    if current != text:
        output.write_text(text)
        print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
