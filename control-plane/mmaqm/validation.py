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
import os
import re
import stat
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

TOP_LEVEL = "(top level)"
# Matched with fullmatch: "$" would also match before a final newline.
MAC_RE = re.compile(r"[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}")
HOSTNAME_RE = re.compile(r"(?=.{1,253}\Z)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                         r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")
PORT_RE = re.compile(r"[0-9]{1,5}")          # ASCII digits only: str.isdigit() takes "²"
# What a message shows of one value the user wrote (a key, a string): at most this
# many characters, then an ellipsis; control characters escaped (shown()).
MAX_SHOWN_CHARS = 80
# A whole message line at most (a safety net behind shown(): every line is also
# escaped, so no value can start a line of its own).
MAX_MESSAGE_CHARS = 1000
# Unknown keys of one mapping reported one by one (with a suggestion each); the
# rest are counted in one line: 20 000 typos would cost seconds of difflib.
MAX_UNKNOWN_KEYS = 20
YAML_EXPONENT_HINT = "YAML 1.1 reads exponents without a dot as text: write 1.0e-3"

Syntax = Literal["yaml", "json"]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final[Any] = _Missing()      # an absent required key, already reported


class NonDecimal:
    """A number the YAML file wrote in a form YAML 1.1 reads but a reader would
    not expect: base 60 (1:00 is 60), binary 0b111111, octal 0777 or 010, hex 0x3f.
    The config loader (mmaqm.config) makes one of these instead of the int or
    float, so every reader refuses it ("must be an integer, got 0b111111 ...");
    hashable, so that it can be a mapping key (a port number)."""

    __slots__ = ("text", "value")

    def __init__(self, text: str, value: int | float) -> None:
        self.text = text
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NonDecimal) and self.text == other.text

    def __hash__(self) -> int:
        return hash(("NonDecimal", self.text))

    def __repr__(self) -> str:
        return self.text

    def describe(self) -> str:
        text = shown(self.text)[1:-1]
        if ":" in self.text:
            form = "base 60"
        elif self.text.lstrip("+-").lower().startswith("0b"):
            form = "binary"
        elif self.text.lstrip("+-").lower().startswith("0x"):
            form = "hexadecimal"
        else:
            form = "octal (a leading 0)"
        value = fmt(self.value) if abs(self.value) < 10**20 else "a large number"
        return (f"{text}, which YAML 1.1 reads as {form} = {value}: write numbers in "
                f"decimal (or quote the text)")


class Errors:
    """Collects "<field path>: <message>" strings; ``items`` in the order found."""

    def __init__(self, syntax: Syntax = "yaml") -> None:
        if syntax not in ("yaml", "json"):
            raise ValueError(f"syntax must be 'yaml' or 'json', got {syntax!r}")
        self.syntax: Syntax = syntax
        self.items: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(safe_line(f"{path or TOP_LEVEL}: {message}"))

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
    """A file's text: a regular file (a FIFO, a device or a directory is refused
    without waiting for a writer or reading a byte), at most max_bytes (only that
    much is read), UTF-8 (a UTF-8 byte order mark is dropped). UTF-16, NUL bytes and
    other encodings raise InputFileError with the offset; OSError if unreadable."""
    path = Path(path)
    data = read_regular_file(path, max_bytes, what=what)
    if len(data) > max_bytes:
        raise InputFileError(f"{escape(str(path))}: larger than {max_bytes} bytes: not {what}")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputFileError(f"{escape(str(path))}: UTF-16 text (byte order mark "
                             f"{data[:2].hex()}): save it as UTF-8")
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputFileError(f"{escape(str(path))}: a NUL byte at offset {nul}: UTF-16 or "
                             f"binary, not UTF-8 text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InputFileError(f"{escape(str(path))}: line {line}: not UTF-8 text (byte "
                             f"0x{data[exc.start]:02x} at offset {exc.start}): save it as "
                             f"UTF-8") from None


def _kind_of_file(mode: int) -> str:
    for test, kind in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def read_regular_file(path: str | Path, max_bytes: int, *, what: str = "an input file") -> bytes:
    """At most max_bytes + 1 bytes of a regular file. The open does not block (a FIFO
    without a writer would block it for ever) and anything but a regular file is
    refused before a byte is read (/dev/zero never ends): InputFileError naming the
    kind. OSError if it cannot be opened."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    with os.fdopen(fd, "rb") as stream:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputFileError(f"{escape(str(path))}: {_kind_of_file(mode)}, not {what} "
                                 f"(only regular files are read)")
        return stream.read(max_bytes + 1)


def check_regular_file(path: str | Path, max_bytes: int, *, what: str = "an input file") -> None:
    """InputFileError if an existing path is not a regular file or is larger than
    max_bytes (for files another library reads: it would block on a FIFO or read
    /dev/zero for ever). A missing file is left to the reader's own message."""
    try:
        st = os.stat(path)
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise InputFileError(f"{escape(str(path))}: {_kind_of_file(st.st_mode)}, not {what} "
                             f"(only regular files are read)")
    if st.st_size > max_bytes:
        raise InputFileError(f"{escape(str(path))}: {st.st_size} bytes, larger than "
                             f"{max_bytes}: not {what}")


# ------------------------------------------------------------------ messages
def _escape_char(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


# Control characters (C0, DEL, C1), line and paragraph separators and format
# characters (bidi overrides, zero width): they could end a line, move the
# cursor or reorder what the terminal shows.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def escape(text: str) -> str:
    """text with every control, separator or format character as \\xNN / \\uNNNN."""
    if text.isprintable() and text.isascii():
        return text
    return "".join(_escape_char(c) if unicodedata.category(c) in _UNSAFE_CATEGORIES else c
                   for c in text)


def shown(value: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """A value the user wrote, as a message shows it: a string quoted (repr), other
    values as repr; control characters escaped; cut to about limit characters with
    an ellipsis and the full length."""
    text = escape(repr(value))
    if len(text) <= limit:
        return text
    full = len(value) if isinstance(value, str) else len(text)
    return f"{text[:limit - 1]}… ({full} characters)"


def shown_key(key: object) -> str:
    """A mapping key in a field path: as written if it is a short plain string or an
    int, else shown() (quoted, escaped, cut)."""
    if isinstance(key, str) and len(key) <= MAX_SHOWN_CHARS and key.isprintable() \
            and key.isascii() and not any(c in key for c in ".[]' ") and key:
        return key
    if isinstance(key, int) and not isinstance(key, bool) and abs(key) < 10**20:
        return str(key)
    return shown(key)


def safe_line(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """One message line: control characters escaped, at most limit characters."""
    text = escape(text)
    return text if len(text) <= limit else f"{text[:limit - 1]}…"


# ------------------------------------------------------------------ paths
def join(path: str, key: object) -> str:
    """The path of a mapping entry: "a.b" + "c" -> "a.b.c"."""
    key_text = shown_key(key)
    return f"{path}.{key_text}" if path else key_text


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
        return f"string {shown(value)}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, NonDecimal):
        return value.describe()
    return shown(value)


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
    unknown = [key for key in raw if key not in allowed]
    for key in unknown[:MAX_UNKNOWN_KEYS]:
        errs.add(join(path, key), f"unknown key ({hint}){did_you_mean(key, allowed)}")
    if len(unknown) > MAX_UNKNOWN_KEYS:
        errs.add(path, f"... and {len(unknown) - MAX_UNKNOWN_KEYS} more unknown keys")


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
    if isinstance(value, NonDecimal):               # 12:00:00:00:00:01 is base 60 to YAML
        value = value.value
    if errs.syntax == "yaml" and isinstance(value, int) and not isinstance(value, bool):
        errs.add(path, f"must be a quoted string: YAML read the unquoted MAC as the number {value}")
        return None
    if not isinstance(value, str) or not MAC_RE.fullmatch(value):
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
            errs.add(path, f"host bits set in {shown(value)} (the network is {network})")
        else:
            errs.add(path, f"must be an IPv4 network like 10.0.1.0/24, got {shown(value)} "
                           f"({shown(str(exc))[1:-1]})")
        return None


def ip_network(value: object, path: str, errs: Errors
               ) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """An IPv4 network "10.0.1.0/24" or an IPv6 one "2001:db8:1::/64", without
    host bits set (an IPv6 network is told by its colon)."""
    if value is MISSING:
        return None
    if isinstance(value, str) and ":" in value:
        if "/" not in value:
            errs.add(path, f"must be an IPv6 network like 2001:db8:1::/64, got {shown(value)} "
                           "(no prefix length)")
            return None
        try:
            return ipaddress.IPv6Network(value, strict=True)
        except ValueError as exc:
            if "host bits set" in str(exc):
                network = ipaddress.IPv6Network(value, strict=False)
                errs.add(path, f"host bits set in {shown(value)} (the network is {network})")
            else:
                errs.add(path, f"must be an IPv6 network like 2001:db8:1::/64, got {shown(value)} "
                               f"({shown(str(exc))[1:-1]})")
            return None
    return ipv4_network(value, path, errs)


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
    elif not PORT_RE.fullmatch(port) or not 1 <= int(port) <= 65535:
        problem = "port must be 1..65535, in ASCII decimal digits"
    elif host.startswith("["):
        try:
            if not host.endswith("]"):
                raise ValueError(host)
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            problem = f"bad IPv6 address {shown(host)}"
    elif ":" in host:
        problem = "an IPv6 address must be in brackets: [addr]:port"
    elif not HOSTNAME_RE.fullmatch(host):
        problem = f"bad host {shown(host)}"
    elif host.rsplit(".", 1)[-1].isdigit() and not _is_ipv4(host):
        # a numeric last label is no hostname (RFC 3696 §2): 999.1.1.1, 10.1, 1.2.3.04
        numeric = all(label.isdigit() for label in host.split("."))
        problem = (f"bad IPv4 address {shown(host)}" if numeric
                   else f"bad host {shown(host)} (a hostname's last label is not numeric)")
    if problem:
        errs.add(path, f"{problem}, got {shown(value)}")
        return None
    return value
