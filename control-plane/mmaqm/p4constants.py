"""Constants of the P4 program: sizes from defines.p4, enums from the P4Info.

Two sources, each the single source of truth for what it holds:

* ``p4src/shared/defines.p4``: every line of the form ``const bit<N> NAME = VALUE;``
  (VALUE decimal or 0x hex, ``//`` and ``/* */`` comments ignored) becomes a
  module attribute, e.g. ``p4constants.NUM_PORTS == 64``, and an entry of
  :data:`CONSTANTS`: table and register sizes, fixed-point widths and the
  ingress discard reasons; and the members of ``enum bit<8> drop_reason_t``
  give :data:`DROP_REASONS`. Both are counter indexes, which no P4Info
  carries.
* the P4Info of the compiled program: the serializable enum ``traffic_class_t``
  (``type_info.serializable_enums``; the type of the classifier's action
  parameter) gives :data:`CLASSES`. The P4Info is the golden copy committed at
  ``p4src/v1model/main.p4info.txtpb``, which ``make build`` keeps equal to the
  compiler's output, so the controller and its tests need no compiler.

Neither file is read at import: ``tools/gen_p4constants.py`` (``make
gen-constants``) extracts both, with the parsers of this module, into the
generated module :mod:`mmaqm.p4generated`, and a test fails when that module
and the P4 sources differ. So an installed package works outside the checkout.
``MMAQM_DEFINES_P4`` and ``MMAQM_P4INFO`` name another defines.p4 or P4Info to
parse instead, at import time.

Counter index helpers mirror the index arithmetic of aqm.p4, occupancy.p4 and
main.p4, so that no other module repeats it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from . import p4generated as _generated

ENV_DEFINES_P4 = "MMAQM_DEFINES_P4"
ENV_P4INFO = "MMAQM_P4INFO"
# The checkout this module sits in when it is not installed elsewhere. The two paths
# below name the generated values' sources there (messages, tests reading the golden
# P4Info); nothing is read from them at import.
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DEFINES_P4 = REPO_ROOT / _generated.SOURCES["defines"]
GOLDEN_P4INFO = REPO_ROOT / _generated.SOURCES["p4info"]

_CONST_RE = re.compile(
    r"^const\s+bit\s*<\s*(?P<width>\d+)\s*>\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*"
    r"(?P<value>0[xX][0-9a-fA-F_]+|\d[\d_]*)\s*;$"
)


def _strip_comments(text: str) -> str:
    """Remove /* */ blocks (keeping line breaks) and // line comments."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def parse_constants(text: str, *, source: str = "<text>") -> dict[str, int]:
    """All ``const bit<N> NAME = VALUE;`` of a P4 source text, in file order.

    Raises ValueError on a ``const bit<`` line that does not have that form, on
    a value that does not fit in N bits and on a name defined twice.
    """
    constants: dict[str, int] = {}
    for lineno, line in enumerate(_strip_comments(text).splitlines(), start=1):
        stripped = line.strip()
        if not stripped.startswith("const bit"):
            continue
        match = _CONST_RE.match(stripped)
        if match is None:
            raise ValueError(f"{source}:{lineno}: cannot parse constant: {stripped!r}")
        name = match["name"]
        width = int(match["width"])
        value = int(match["value"].replace("_", ""), 0)
        if value >= 1 << width:
            raise ValueError(f"{source}:{lineno}: {name} = {value} does not fit in bit<{width}>")
        if name in constants:
            raise ValueError(f"{source}:{lineno}: {name} defined twice")
        constants[name] = value
    return constants


_ENUM_RE = re.compile(r"enum\s+bit\s*<\s*(?P<width>\d+)\s*>\s+(?P<name>\w+)\s*\{(?P<body>[^}]*)\}")
_MEMBER_RE = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<value>0[xX][0-9a-fA-F_]+|\d[\d_]*)\s*$")


def parse_enums(text: str, *, source: str = "<text>") -> dict[str, dict[str, int]]:
    """{name: {member: value}} of every ``enum bit<N> name { A = 1, ... }`` in a P4 text.

    Every member needs an explicit value; raises ValueError otherwise, on a
    value that does not fit N bits, and on a repeated member or value.
    """
    enums: dict[str, dict[str, int]] = {}
    for match in _ENUM_RE.finditer(_strip_comments(text)):
        width, name = int(match["width"]), match["name"]
        members: dict[str, int] = {}
        for item in filter(str.strip, match["body"].split(",")):
            member = _MEMBER_RE.match(item)
            if member is None:
                raise ValueError(f"{source}: enum {name}: cannot parse member {item.strip()!r}")
            value = int(member["value"].replace("_", ""), 0)
            if value >= 1 << width or member["name"] in members or value in members.values():
                raise ValueError(f"{source}: enum {name}: bad or repeated member {item.strip()!r}")
            members[member["name"]] = value
        enums[name] = members
    return enums


def defines_path() -> Path:
    """defines.p4 the constants come from: $MMAQM_DEFINES_P4 (parsed at import) or
    the repository's copy (its values generated into mmaqm.p4generated)."""
    override = os.environ.get(ENV_DEFINES_P4)
    return Path(override) if override else DEFAULT_DEFINES_P4


def load_constants(path: Path) -> dict[str, int]:
    """Constants of one defines.p4 file."""
    return parse_constants(path.read_text(), source=str(path))


def _with_prefix(constants: dict[str, int], prefix: str) -> dict[str, int]:
    """{NAME without prefix: value} for every constant named prefix + NAME."""
    return {name[len(prefix):]: value for name, value in constants.items() if name.startswith(prefix)}


DEFINES_P4: Path = defines_path()
CONSTANTS: dict[str, int]
DEFINES_ENUMS: dict[str, dict[str, int]]
if os.environ.get(ENV_DEFINES_P4):
    CONSTANTS = load_constants(DEFINES_P4)
    DEFINES_ENUMS = parse_enums(DEFINES_P4.read_text(), source=str(DEFINES_P4))
else:
    CONSTANTS = dict(_generated.DEFINES_CONSTANTS)
    DEFINES_ENUMS = {name: dict(members) for name, members in _generated.DEFINES_ENUMS.items()}
globals().update(CONSTANTS)

# Names the rest of the package relies on; a missing one is a broken defines.p4.
_REQUIRED = (
    "NUM_PORTS", "CLASS_SLOTS", "NUM_DROP_REASONS", "NUM_DISCARD_REASONS",
    "AVG_FRAC_BITS", "PROB_FRAC_BITS", "SLOPE_FRAC_BITS", "PROB_ONE", "NUM_CHIPS_EVENTS",
)
_missing = [name for name in _REQUIRED if name not in CONSTANTS]
if _missing:
    raise ImportError(f"{DEFINES_P4}: missing constants {_missing}")

# Typed aliases of the constants every module uses (also set by globals() above).
NUM_PORTS: int = CONSTANTS["NUM_PORTS"]
CLASS_SLOTS: int = CONSTANTS["CLASS_SLOTS"]
NUM_DROP_REASONS: int = CONSTANTS["NUM_DROP_REASONS"]
NUM_DISCARD_REASONS: int = CONSTANTS["NUM_DISCARD_REASONS"]
AVG_FRAC_BITS: int = CONSTANTS["AVG_FRAC_BITS"]
PROB_FRAC_BITS: int = CONSTANTS["PROB_FRAC_BITS"]
SLOPE_FRAC_BITS: int = CONSTANTS["SLOPE_FRAC_BITS"]
PROB_ONE: int = CONSTANTS["PROB_ONE"]

DISCARD_REASONS: dict[str, int] = _with_prefix(CONSTANTS, "DISCARD_")
DISCARD_REASON_NAMES: dict[int, str] = {v: k for k, v in DISCARD_REASONS.items()}


def p4info_path() -> Path:
    """P4Info the enums come from: $MMAQM_P4INFO (parsed at import) or the golden
    copy (its enums generated into mmaqm.p4generated)."""
    override = os.environ.get(ENV_P4INFO)
    return Path(override) if override else GOLDEN_P4INFO


def load_serializable_enums(path: Path) -> dict[str, dict[str, int]]:
    """{enum type name: {member: value}} of a P4Info text file."""
    from google.protobuf import text_format
    from finsy.proto import p4i

    info = p4i.P4Info()
    try:
        text_format.Parse(path.read_text(), info)
    except (OSError, text_format.ParseError) as exc:
        raise ImportError(f"cannot read the P4Info {path}: {exc}") from exc
    enums: dict[str, dict[str, int]] = {}
    for name, spec in info.type_info.serializable_enums.items():
        enums[name] = {m.name: int.from_bytes(m.value, "big") for m in spec.members}
    return enums


P4INFO: Path = p4info_path()
ENUMS: dict[str, dict[str, int]]
if os.environ.get(ENV_P4INFO):
    ENUMS = load_serializable_enums(P4INFO)
else:
    ENUMS = {name: dict(members) for name, members in _generated.P4INFO_ENUMS.items()}
if "traffic_class_t" not in ENUMS:
    raise ImportError(f"{P4INFO}: no serializable enum traffic_class_t")
if "drop_reason_t" not in DEFINES_ENUMS:
    raise ImportError(f"{DEFINES_P4}: no enum drop_reason_t")

CLASSES: dict[str, int] = dict(ENUMS["traffic_class_t"])
DROP_REASONS: dict[str, int] = dict(DEFINES_ENUMS["drop_reason_t"])
CLASS_TCP: int = CLASSES["TCP"]
CLASS_TAGGED: int = CLASSES["TAGGED"]
CLASS_UNTAGGED: int = CLASSES["UNTAGGED"]
CLASS_NAMES: dict[int, str] = {v: k for k, v in CLASSES.items()}
DROP_REASON_NAMES: dict[int, str] = {v: k for k, v in DROP_REASONS.items()}
for _source, _name, _members, _limit in (
        (P4INFO, "traffic_class_t", CLASSES, CLASS_SLOTS),
        (DEFINES_P4, "drop_reason_t", DROP_REASONS, NUM_DROP_REASONS)):
    if any(not 0 <= v < _limit for v in _members.values()):
        raise ImportError(f"{_source}: {_name} values {_members} exceed the counter slots {_limit}")


def _check_range(what: str, value: int, limit: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < limit:
        raise ValueError(f"{what} must be an int in 0..{limit - 1}, got {value!r}")


def class_index(port: int, class_id: int) -> int:
    """Index of queue_arrivals/queue_admits/queue_departures: port * CLASS_SLOTS + class (aqm.p4)."""
    _check_range("port", port, NUM_PORTS)
    _check_range("class_id", class_id, CLASS_SLOTS)
    return port * CLASS_SLOTS + class_id


def drop_index(port: int, class_id: int, reason: int) -> int:
    """Index of queue_drops: class_index * NUM_DROP_REASONS + reason (aqm.p4)."""
    _check_range("reason", reason, NUM_DROP_REASONS)
    return class_index(port, class_id) * NUM_DROP_REASONS + reason


def discard_index(port: int, reason: int) -> int:
    """Index of ingress_discards: ingress port * NUM_DISCARD_REASONS + reason (main.p4)."""
    _check_range("port", port, NUM_PORTS)
    _check_range("reason", reason, NUM_DISCARD_REASONS)
    return port * NUM_DISCARD_REASONS + reason


# chips_events counter (chips.p4), event name -> offset; port * NUM_CHIPS_EVENTS + offset
CHIPS_EVENTS: dict[str, int] = {
    name.removeprefix("CHIPS_").lower(): value for name, value in CONSTANTS.items()
    if name.startswith("CHIPS_") and name not in ("CHIPS_CLONE_SESSION_BASE",
                                                  "CHIPS_SLOT_FIELD_LIST")
}
if sorted(CHIPS_EVENTS.values()) != list(range(NUM_CHIPS_EVENTS)):
    raise ImportError(f"{DEFINES_P4}: CHIPS_* events {CHIPS_EVENTS} are not 0..NUM_CHIPS_EVENTS-1")


def chips_index(port: int, event: int) -> int:
    """Index of chips_events: port * NUM_CHIPS_EVENTS + event (chips.p4)."""
    _check_range("port", port, NUM_PORTS)
    _check_range("event", event, NUM_CHIPS_EVENTS)
    return port * NUM_CHIPS_EVENTS + event


# upta_events counter (upta.p4), event name -> offset; port * NUM_UPTA_EVENTS + offset.
# Names as the UPTA model (mmaqm_oracle.upta_model.EVENTS) spells them (upper case).
UPTA_EVENTS: dict[str, int] = _with_prefix(CONSTANTS, "UPTA_EVENT_")
NUM_UPTA_EVENTS: int = CONSTANTS.get("NUM_UPTA_EVENTS", 0)
if sorted(UPTA_EVENTS.values()) != list(range(NUM_UPTA_EVENTS)):
    raise ImportError(f"{DEFINES_P4}: UPTA_EVENT_* {UPTA_EVENTS} are not 0..NUM_UPTA_EVENTS-1")


def upta_event_index(port: int, event: int) -> int:
    """Index of upta_events: port * NUM_UPTA_EVENTS + event (upta.p4)."""
    _check_range("port", port, NUM_PORTS)
    _check_range("event", event, NUM_UPTA_EVENTS)
    return port * NUM_UPTA_EVENTS + event


def __getattr__(name: str) -> Any:  # pragma: no cover - only for a clear error
    raise AttributeError(f"{DEFINES_P4} defines no constant {name!r} (enums: {P4INFO})")
