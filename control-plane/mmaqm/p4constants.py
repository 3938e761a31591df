"""Constants of the P4 program, parsed from p4src/include/defines.p4.

defines.p4 is the single source of truth: every line of the form
``const bit<N> NAME = VALUE;`` (VALUE decimal or 0x hex, ``//`` and ``/* */``
comments ignored) becomes a module attribute, e.g. ``p4constants.ALGO_RED == 1``,
and an entry of :data:`CONSTANTS`.

The file is found at ``<repo>/p4src/include/defines.p4``; the environment
variable ``MMAQM_DEFINES_P4`` overrides the path (read at import time).

Counter index helpers mirror the index arithmetic of aqm.p4, occupancy.p4 and
main.p4, so that no other module repeats it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

ENV_DEFINES_P4 = "MMAQM_DEFINES_P4"
DEFAULT_DEFINES_P4 = Path(__file__).resolve().parents[2] / "p4src/include/defines.p4"

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


def defines_path() -> Path:
    """defines.p4 to read: $MMAQM_DEFINES_P4 or the repository's copy."""
    override = os.environ.get(ENV_DEFINES_P4)
    return Path(override) if override else DEFAULT_DEFINES_P4


def load_constants(path: Path) -> dict[str, int]:
    """Constants of one defines.p4 file."""
    return parse_constants(path.read_text(), source=str(path))


def _with_prefix(constants: dict[str, int], prefix: str) -> dict[str, int]:
    """{NAME without prefix: value} for every constant named prefix + NAME."""
    return {name[len(prefix):]: value for name, value in constants.items() if name.startswith(prefix)}


DEFINES_P4: Path = defines_path()
CONSTANTS: dict[str, int] = load_constants(DEFINES_P4)
globals().update(CONSTANTS)

# Names the rest of the package relies on; a missing one is a broken defines.p4.
_REQUIRED = (
    "NUM_PORTS", "CLASS_SLOTS", "NUM_DROP_REASONS", "NUM_DISCARD_REASONS",
    "AVG_FRAC_BITS", "PROB_FRAC_BITS", "SLOPE_FRAC_BITS", "PROB_ONE",
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

ALGORITHMS: dict[str, int] = _with_prefix(CONSTANTS, "ALGO_")
CLASSES: dict[str, int] = _with_prefix(CONSTANTS, "CLASS_")
CLASSES.pop("SLOTS", None)  # CLASS_SLOTS is a size, not a class
DROP_REASONS: dict[str, int] = _with_prefix(CONSTANTS, "DROP_")
DISCARD_REASONS: dict[str, int] = _with_prefix(CONSTANTS, "DISCARD_")

# Reverse maps: id -> name.
ALGORITHM_NAMES: dict[int, str] = {v: k for k, v in ALGORITHMS.items()}
CLASS_NAMES: dict[int, str] = {v: k for k, v in CLASSES.items()}
DROP_REASON_NAMES: dict[int, str] = {v: k for k, v in DROP_REASONS.items()}
DISCARD_REASON_NAMES: dict[int, str] = {v: k for k, v in DISCARD_REASONS.items()}


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


def __getattr__(name: str) -> Any:  # pragma: no cover - only for a clear error
    raise AttributeError(f"{DEFINES_P4} defines no constant {name!r}")
