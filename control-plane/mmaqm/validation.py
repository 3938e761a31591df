"""One validation layer for every input file: controller config, topologies, scenarios.

Errors are collected, not raised one at a time: an :class:`Errors` gathers
every problem as ``"<field path>: <message>"`` and the caller raises its own
exception (ConfigError, TopologyError, ScenarioError) with all of them, before
anything is used. Field paths join mapping keys with dots and list indices in
brackets: ``switches.s1.routes[0].prefix``, ``links[3].rate_mbps``; the
document itself is ``(top level)``.

Each reader checks one value, reports what is wrong at its path and returns
the value, or None when it reported a problem. :func:`require` returns
:data:`MISSING` for an absent required key (after reporting it); every reader
passes MISSING through as None without a second message, so
``integer(require(raw, "port", path, errs), join(path, "port"), errs)`` reports
either "required" or what is wrong with the value, never both.

Readers know the file syntax (``Errors(syntax="json")``): JSON says "object"
where YAML says "mapping", and only YAML gets YAML 1.1's hints (an exponent
without a dot is text; an unquoted MAC is a sexagesimal number).

Only the standard library: the experiment tooling (topologies/) imports this.
"""

from __future__ import annotations

import difflib
import ipaddress
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

TOP_LEVEL = "(top level)"
MAC_RE = re.compile(r"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$")
HOSTNAME_RE = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                         r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
YAML_EXPONENT_HINT = "YAML 1.1 reads exponents without a dot as text: write 1.0e-3"

Syntax = Literal["yaml", "json"]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final[Any] = _Missing()      # an absent required key, already reported


class Errors:
    """Collects "<field path>: <message>" strings; ``items`` in the order found."""

    def __init__(self, syntax: Syntax = "yaml") -> None:
        if syntax not in ("yaml", "json"):
            raise ValueError(f"syntax must be 'yaml' or 'json', got {syntax!r}")
        self.syntax: Syntax = syntax
        self.items: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(f"{path or TOP_LEVEL}: {message}")

    def __len__(self) -> int:
        return len(self.items)

    def describe(self, value: object) -> str:
        """A value as the message's "got ...": its kind, in this file syntax's words."""
        if isinstance(value, Mapping):
            return "an object" if self.syntax == "json" else "a mapping"
        return describe(value)


# ------------------------------------------------------------------ files
class InputFileError(ValueError):
    """A file that is too large or not UTF-8 text; the message names it and the cause."""


def read_utf8(path: str | Path, max_bytes: int, *, what: str = "an input file") -> str:
    """A file's text: at most max_bytes (only that much is read: a FIFO or /dev/zero
    ends there), UTF-8 (a UTF-8 byte order mark is dropped). UTF-16, NUL bytes and
    other encodings raise InputFileError with the offset; OSError if unreadable."""
    path = Path(path)
    with open(path, "rb") as stream:
        data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputFileError(f"{path}: larger than {max_bytes} bytes: not {what}")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputFileError(f"{path}: UTF-16 text (byte order mark {data[:2].hex()}): "
                             f"save it as UTF-8")
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputFileError(f"{path}: a NUL byte at offset {nul}: UTF-16 or binary, not "
                             f"UTF-8 text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InputFileError(f"{path}: line {line}: not UTF-8 text (byte "
                             f"0x{data[exc.start]:02x} at offset {exc.start}): save it as "
                             f"UTF-8") from None


# ------------------------------------------------------------------ paths
def join(path: str, key: object) -> str:
    """The path of a mapping entry: "a.b" + "c" -> "a.b.c"."""
    return f"{path}.{key}" if path else str(key)


def index(path: str, i: int) -> str:
    """The path of a list item: "links" + 3 -> "links[3]"."""
    return f"{path}[{i}]"


# ------------------------------------------------------------- formatting
def describe(value: object) -> str:
    """A value for "got ...": strings, booleans and null say what they are."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def fmt(value: float) -> str:
    """A number as the user would write it: 50.0 -> "50", 0.1 -> "0.1"."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


def _note(note: str) -> str:
    return f" ({note})" if note else ""


# ---------------------------------------------------------------- readers
def require(raw: Mapping[Any, Any], key: str, path: str, errs: Errors, *, note: str = "") -> Any:
    """raw[key]; if absent, report "required" (with note) and return MISSING."""
    if key in raw:
        return raw[key]
    errs.add(join(path, key), f"required{_note(note)}")
    return MISSING


def mapping(value: object, path: str, errs: Errors, *, allowed: Sequence[str] | None = None,
            at_least_one: str = "", max_entries: int | None = None, entries: str = "entries",
            capacity: str = "the maximum") -> Mapping[Any, Any] | None:
    """A mapping; with allowed, its other keys are errors (:func:`check_keys`).

    at_least_one: the singular noun of an entry ("switch") if it must not be empty.
    More than max_entries is reported ("65 ports exceed NUM_PORTS 64"; entries:
    the plural noun) and None returned: its entries are not checked one by one.
    """
    if value is MISSING:
        return None
    if not isinstance(value, Mapping):
        errs.add(path, f"must be {'an object' if errs.syntax == 'json' else 'a mapping'}, "
                       f"got {errs.describe(value)}")
        return None
    if max_entries is not None and len(value) > max_entries:
        errs.add(path, f"{len(value)} {entries} exceed {capacity} {max_entries}")
        return None
    if allowed is not None:
        check_keys(value, path, errs, allowed)
    if at_least_one and not value:
        errs.add(path, f"must list at least one {at_least_one}")
    return value


def check_keys(raw: Mapping[Any, Any], path: str, errs: Errors, allowed: Sequence[str]) -> None:
    """Every key not in allowed is an error (a typo, usually): "unknown key (allowed:
    ...)", and "; did you mean 'min_th_pkts'?" when an allowed key is close to it."""
    hint = f"allowed: {', '.join(allowed)}" if allowed else "no keys are allowed"
    for key in raw:
        if key not in allowed:
            errs.add(join(path, key), f"unknown key ({hint}){did_you_mean(key, allowed)}")


def did_you_mean(word: object, choices: Sequence[str]) -> str:
    """"; did you mean 'x'?" naming the choice closest to word (difflib, ignoring
    case; a choice that word begins, as max_th begins max_th_pkts, comes first), or ""
    when none is close or word is not a string."""
    if not isinstance(word, str) or not word:
        return ""
    word = word.lower()
    by_lower = {choice.lower(): choice for choice in reversed(choices)}
    extended = [choice for choice in by_lower if choice.startswith(word)]
    close = (difflib.get_close_matches(word, extended, n=1, cutoff=0.6)
             or difflib.get_close_matches(word, list(by_lower), n=1, cutoff=0.6))
    return f"; did you mean {by_lower[close[0]]!r}?" if close else ""


def sequence(value: object, path: str, errs: Errors, *, at_least_one: str = "",
             max_items: int | None = None, item: str = "item",
             capacity: str = "the maximum") -> list[Any] | None:
    """A list. at_least_one: the singular noun of an item if it must not be empty.

    More than max_items is reported ("1025 routes exceed the ipv4_lpm table
    size 1024") and the first max_items items are returned, so that those get
    checked too (and no more: a list of millions would cost as many messages).
    """
    if value is MISSING:
        return None
    if not isinstance(value, list):
        errs.add(path, f"must be a list, got {errs.describe(value)}")
        return None
    if at_least_one and not value:
        errs.add(path, f"must list at least one {at_least_one}")
    if max_items is not None and len(value) > max_items:
        errs.add(path, f"{len(value)} {item}s exceed {capacity} {max_items}")
        return value[:max_items]
    return value


def integer(value: object, path: str, errs: Errors, *, lo: int | None = None,
            hi: int | None = None, note: str = "") -> int | None:
    """An int (not a bool) in lo..hi; note explains the bounds."""
    if value is MISSING:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        errs.add(path, f"must be an integer, got {errs.describe(value)}")
        return None
    if lo is not None and hi is not None and not lo <= value <= hi:
        errs.add(path, f"must be in {lo}..{hi}{_note(note)}, got {value}")
        return None
    if lo is not None and value < lo:
        errs.add(path, f"must be >= {lo}{_note(note)}, got {value}")
        return None
    if hi is not None and value > hi:
        errs.add(path, f"must be <= {hi}{_note(note)}, got {value}")
        return None
    return value


def number(value: object, path: str, errs: Errors, *, gt: float | None = None,
           ge: float | None = None, le: float | None = None, note: str = "") -> float | None:
    """A finite int or float (not a bool), returned as given; note explains the bounds."""
    if value is MISSING:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        hint = ""
        if errs.syntax == "yaml" and isinstance(value, str) and _is_exponent_text(value):
            hint = f" ({YAML_EXPONENT_HINT})"
        errs.add(path, f"must be a number, got {errs.describe(value)}{hint}")
        return None
    if not math.isfinite(value):
        errs.add(path, f"must be finite, got {value!r}")
        return None
    bound = None
    if gt is not None and not value > gt:
        bound = f"> {fmt(gt)}"
    elif ge is not None and not value >= ge:
        bound = f">= {fmt(ge)}"
    elif le is not None and not value <= le:
        bound = f"<= {fmt(le)}"
    if bound is not None:
        errs.add(path, f"must be {bound}{_note(note)}, got {fmt(value)}")
        return None
    return value


def boolean(value: object, path: str, errs: Errors) -> bool | None:
    """true or false (not 0/1, not "yes": a typo should not silently mean something)."""
    if value is MISSING:
        return None
    if not isinstance(value, bool):
        errs.add(path, f"must be true or false, got {errs.describe(value)}")
        return None
    return value


def _is_exponent_text(text: str) -> bool:
    """A number with an exponent, like 1e-3, which YAML 1.1 (PyYAML) leaves a string."""
    try:
        float(text)
    except ValueError:
        return False
    return "e" in text.lower() and "inf" not in text.lower()


def string(value: object, path: str, errs: Errors, *, non_empty: bool = False) -> str | None:
    if value is MISSING:
        return None
    if not isinstance(value, str) or (non_empty and not value):
        errs.add(path, f"must be a {'non-empty ' if non_empty else ''}string, "
                       f"got {errs.describe(value)}")
        return None
    return value


def one_of(value: object, path: str, errs: Errors, choices: Sequence[str]) -> str | None:
    if value is MISSING:
        return None
    if not isinstance(value, str) or value not in choices:
        errs.add(path, f"must be one of {', '.join(choices)}, got {errs.describe(value)}")
        return None
    return value


def mac(value: object, path: str, errs: Errors) -> str | None:
    """A unicast, non-zero MAC "02:00:00:00:00:01", returned in lower case."""
    if value is MISSING:
        return None
    if errs.syntax == "yaml" and isinstance(value, int) and not isinstance(value, bool):
        errs.add(path, f"must be a quoted string: YAML read the unquoted MAC as the number {value}")
        return None
    if not isinstance(value, str) or not MAC_RE.match(value):
        errs.add(path, f"must be a MAC like \"02:00:00:00:00:01\", got {errs.describe(value)}")
        return None
    octets = [int(part, 16) for part in value.split(":")]
    if octets[0] & 1:
        errs.add(path, f"must be a unicast MAC (first octet even), got {value!r}")
        return None
    if not any(octets):
        errs.add(path, f"must not be the all-zero MAC, got {value!r}")
        return None
    return value.lower()


def ipv4_network(value: object, path: str, errs: Errors) -> ipaddress.IPv4Network | None:
    """An IPv4 network "10.0.1.0/24" without host bits set."""
    if value is MISSING:
        return None
    if not isinstance(value, str) or "/" not in value:
        errs.add(path, f"must be an IPv4 network like 10.0.1.0/24, got {errs.describe(value)}")
        return None
    try:
        return ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        if "host bits set" in str(exc):
            network = ipaddress.IPv4Network(value, strict=False)
            errs.add(path, f"host bits set in {value!r} (the network is {network})")
        else:
            errs.add(path, f"must be an IPv4 network like 10.0.1.0/24, got {value!r} ({exc})")
        return None


def _is_ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def host_port(value: object, path: str, errs: Errors) -> str | None:
    """host:port, host = IPv4 address, hostname or [IPv6 address]; port 1..65535."""
    if value is MISSING:
        return None
    if not isinstance(value, str):
        errs.add(path, f"must be a string host:port, got {errs.describe(value)}")
        return None
    host, sep, port = value.rpartition(":")
    problem = None
    if not sep or not host:
        problem = "must be host:port"
    elif not port.isdigit() or not 1 <= int(port) <= 65535:
        problem = f"port must be 1..65535, got {port!r}"
    elif host.startswith("["):
        try:
            if not host.endswith("]"):
                raise ValueError(host)
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            problem = f"bad IPv6 address {host!r}"
    elif ":" in host:
        problem = "an IPv6 address must be in brackets: [addr]:port"
    elif not HOSTNAME_RE.match(host):
        problem = f"bad host {host!r}"
    elif host.rsplit(".", 1)[-1].isdigit() and not _is_ipv4(host):
        # a numeric last label is no hostname (RFC 3696 §2): 999.1.1.1, 10.1, 1.2.3.04
        numeric = all(label.isdigit() for label in host.split("."))
        problem = (f"bad IPv4 address {host!r}" if numeric
                   else f"bad host {host!r} (a hostname's last label is not numeric)")
    if problem:
        errs.add(path, f"{problem}, got {value!r}")
        return None
    return value
