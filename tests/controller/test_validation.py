"""validation: the shared readers of config, topology and scenario files, one at a time."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

import pytest

from mmaqm import validation as V


def read(reader: Callable[..., Any], value: object, *, syntax: V.Syntax = "yaml",
         **kwargs: Any) -> tuple[Any, list[str]]:
    """(what reader returns for value at path "f", the errors it reported)."""
    errs = V.Errors(syntax)
    return reader(value, "f", errs, **kwargs), errs.items


# ------------------------------------------------------------------ collector, paths
def test_errors_are_path_first_and_the_root_is_named() -> None:
    errs = V.Errors()
    errs.add("a.b[2].c", "must be > 0, got 0")
    errs.add("", "must be a mapping, got a list")
    assert errs.items == ["a.b[2].c: must be > 0, got 0",
                          "(top level): must be a mapping, got a list"]
    assert len(errs) == 2


def test_errors_know_only_yaml_and_json() -> None:
    with pytest.raises(ValueError, match="syntax"):
        V.Errors("toml")  # type: ignore[arg-type]


def test_paths_dot_keys_and_bracket_indices() -> None:
    assert V.join("", "switches") == "switches"
    assert V.join("switches.s1.policies", 2) == "switches.s1.policies.2"
    assert V.index("links", 3) == "links[3]"
    assert V.join(V.index("switches.s1.routes", 0), "prefix") == "switches.s1.routes[0].prefix"


@pytest.mark.parametrize("value, text", [
    (None, "nothing (null)"), (True, "boolean true"), (False, "boolean false"),
    ("15", "string '15'"), ({}, "a mapping"), ([1], "a list"), (6.5, "6.5"), (7, "7"),
])
def test_describe(value: object, text: str) -> None:
    assert V.describe(value) == text


def test_describe_says_object_in_json() -> None:
    assert V.Errors("json").describe({}) == "an object"
    assert V.Errors("yaml").describe({}) == "a mapping"


@pytest.mark.parametrize("value, text", [(50.0, "50"), (0.1, "0.1"), (3, "3"), (-1.0, "-1")])
def test_fmt_writes_numbers_as_a_user_would(value: float, text: str) -> None:
    assert V.fmt(value) == text


# ------------------------------------------------------------------ require / MISSING
def test_missing_key_is_reported_once() -> None:
    errs = V.Errors()
    value = V.require({"b": 1}, "a", "top", errs, note="seconds")
    assert value is V.MISSING
    # every reader passes MISSING through without a second message
    for reader in (V.mapping, V.sequence, V.integer, V.number, V.string, V.mac,
                   V.ipv4_network, V.host_port):
        assert reader(value, "top.a", errs) is None
    assert V.one_of(value, "top.a", errs, ("x",)) is None
    assert errs.items == ["top.a: required (seconds)"]
    assert V.require({"a": None}, "a", "top", errs) is None      # present, even if null
    assert len(errs) == 1


# ------------------------------------------------------------------ containers
def test_mapping() -> None:
    assert read(V.mapping, {"a": 1}, allowed=("a", "b")) == ({"a": 1}, [])
    assert read(V.mapping, [1]) == (None, ["f: must be a mapping, got a list"])
    assert read(V.mapping, [1], syntax="json") == (None, ["f: must be an object, got a list"])
    assert read(V.mapping, {"c": 1, "a": 2}, allowed=("a", "b"))[1] == [
        "f.c: unknown key (allowed: a, b)"]
    assert read(V.mapping, {"c": 1}, allowed=())[1] == ["f.c: unknown key (no keys are allowed)"]
    assert read(V.mapping, {}, at_least_one="switch") == ({}, ["f: must list at least one switch"])


def test_unknown_keys_at_the_top_level_have_no_leading_dot() -> None:
    errs = V.Errors()
    V.check_keys({"x": 1}, "", errs, ("y",))
    assert errs.items == ["x: unknown key (allowed: y)"]


POLICY_LIKE = ("algorithm", "queue_limit_pkts", "min_th_pkts", "max_th_pkts", "max_p")


@pytest.mark.parametrize("key, meant", [
    ("min_th", "min_th_pkts"),            # the unit suffix forgotten
    ("max_th", "max_th_pkts"),            # begins max_th_pkts: before max_p, though closer
    ("queue_limit", "queue_limit_pkts"),
    ("maxp", "max_p"),
    ("algoritm", "algorithm"),            # a typo
    ("Algorithm", "algorithm"),           # case
])
def test_an_unknown_key_names_the_allowed_key_meant(key: str, meant: str) -> None:
    assert read(V.mapping, {key: 1}, allowed=POLICY_LIKE)[1] == [
        f"f.{key}: unknown key (allowed: {', '.join(POLICY_LIKE)}); did you mean {meant!r}?"]


@pytest.mark.parametrize("key, shown", [("colour", "colour"), ("x", "x"), (2, "2"),
                                        (None, "None"), ("", "''")])
def test_an_unknown_key_close_to_none_gets_no_suggestion(key: object, shown: str) -> None:
    assert read(V.mapping, {key: 1}, allowed=POLICY_LIKE)[1] == [
        f"f.{shown}: unknown key (allowed: {', '.join(POLICY_LIKE)})"]


def test_did_you_mean() -> None:
    assert V.did_you_mean("instal", ("check", "install", "run")) == "; did you mean 'install'?"
    assert V.did_you_mean("zzz", ("check", "install", "run")) == ""
    assert V.did_you_mean(3, ("check",)) == ""
    assert V.did_you_mean("check", ()) == ""


def test_sequence() -> None:
    assert read(V.sequence, [1, 2]) == ([1, 2], [])
    assert read(V.sequence, "1, 2") == (None, ["f: must be a list, got string '1, 2'"])
    assert read(V.sequence, [], at_least_one="phase") == ([], ["f: must list at least one phase"])
    # too long is reported, and the first max_items items are returned to be checked
    assert read(V.sequence, [1, 2, 3], max_items=2, item="route",
                capacity="the ipv4_lpm table size") == (
        [1, 2], ["f: 3 routes exceed the ipv4_lpm table size 2"])
    assert read(V.sequence, [1, 2, 3], max_items=2)[1] == ["f: 3 items exceed the maximum 2"]


# ------------------------------------------------------------------ scalars
@pytest.mark.parametrize("value, kwargs, message", [
    (True, {}, "must be an integer, got boolean true"),
    ("64", {}, "must be an integer, got string '64'"),
    (6.0, {}, "must be an integer, got 6.0"),
    (None, {}, "must be an integer, got nothing (null)"),
    (0, {"lo": 1, "hi": 9}, "must be in 1..9, got 0"),
    (10, {"lo": 1, "hi": 9, "note": "why"}, "must be in 1..9 (why), got 10"),
    (0, {"lo": 1}, "must be >= 1, got 0"),
    (10, {"hi": 9}, "must be <= 9, got 10"),
])
def test_integer_errors(value: object, kwargs: dict, message: str) -> None:
    assert read(V.integer, value, **kwargs) == (None, [f"f: {message}"])


def test_integer_accepts_its_bounds() -> None:
    assert read(V.integer, 1, lo=1, hi=9) == (1, [])
    assert read(V.integer, 9, lo=1, hi=9) == (9, [])
    assert read(V.integer, -5) == (-5, [])


@pytest.mark.parametrize("value, kwargs, message", [
    (False, {}, "must be a number, got boolean false"),
    ("fast", {}, "must be a number, got string 'fast'"),
    ("15", {}, "must be a number, got string '15'"),                  # no exponent: no hint
    ("1e-3", {}, "must be a number, got string '1e-3' (YAML 1.1 reads exponents without a "
                 "dot as text: write 1.0e-3)"),
    (float("inf"), {}, "must be finite, got inf"),
    (float("nan"), {}, "must be finite, got nan"),
    (0, {"gt": 0}, "must be > 0, got 0"),
    (-0.5, {"ge": 0}, "must be >= 0, got -0.5"),
    (0.003, {"ge": 0.004, "note": "two 2 us flow epochs"},
     "must be >= 0.004 (two 2 us flow epochs), got 0.003"),
    (12.0, {"gt": 0, "le": 10}, "must be <= 10, got 12"),
])
def test_number_errors(value: object, kwargs: dict, message: str) -> None:
    assert read(V.number, value, **kwargs) == (None, [f"f: {message}"])


def test_number_hint_is_for_yaml_only() -> None:
    assert read(V.number, "1e-3", syntax="json")[1] == ["f: must be a number, got string '1e-3'"]


def test_number_returns_the_value_as_given() -> None:
    value, errors = read(V.number, 5, gt=0, le=5)
    assert (value, type(value), errors) == (5, int, [])
    assert read(V.number, 0.25, ge=0) == (0.25, [])


def test_string_and_one_of() -> None:
    assert read(V.string, "") == ("", [])
    assert read(V.string, "", non_empty=True) == (
        None, ["f: must be a non-empty string, got string ''"])
    assert read(V.string, 5) == (None, ["f: must be a string, got 5"])
    assert read(V.one_of, "RED", choices=("RED", "DCBT")) == ("RED", [])
    assert read(V.one_of, "red", choices=("RED", "DCBT")) == (
        None, ["f: must be one of RED, DCBT, got string 'red'"])


# ------------------------------------------------------------------ network values
@pytest.mark.parametrize("value, message", [
    ("02:00:00:00:00", 'must be a MAC like "02:00:00:00:00:01", got string \'02:00:00:00:00\''),
    ("01:00:5e:00:00:01", "must be a unicast MAC (first octet even), got '01:00:5e:00:00:01'"),
    ("00:00:00:00:00:00", "must not be the all-zero MAC, got '00:00:00:00:00:00'"),
    (9783936001, "must be a quoted string: YAML read the unquoted MAC as the number 9783936001"),
])
def test_mac_errors(value: object, message: str) -> None:
    assert read(V.mac, value) == (None, [f"f: {message}"])


def test_mac_is_lower_cased_and_json_gets_no_yaml_hint() -> None:
    assert read(V.mac, "02:AB:00:00:00:01") == ("02:ab:00:00:00:01", [])
    assert read(V.mac, 9783936001, syntax="json")[1] == [
        'f: must be a MAC like "02:00:00:00:00:01", got 9783936001']


def test_ipv4_network() -> None:
    assert read(V.ipv4_network, "10.0.1.0/24") == (ipaddress.IPv4Network("10.0.1.0/24"), [])
    assert read(V.ipv4_network, "10.0.1.1/24")[1] == [
        "f: host bits set in '10.0.1.1/24' (the network is 10.0.1.0/24)"]
    assert read(V.ipv4_network, "10.0.1.0")[1] == [
        "f: must be an IPv4 network like 10.0.1.0/24, got string '10.0.1.0'"]
    errors = read(V.ipv4_network, "fd00::/64")[1]
    assert len(errors) == 1 and errors[0].startswith(
        "f: must be an IPv4 network like 10.0.1.0/24, got 'fd00::/64' (")


@pytest.mark.parametrize("value", ["127.0.0.1:9559", "[::1]:9559", "s1.example:50001"])
def test_host_port_accepts(value: str) -> None:
    assert read(V.host_port, value) == (value, [])


@pytest.mark.parametrize("value, message", [
    (9559, "must be a string host:port, got 9559"),
    ("localhost", "must be host:port, got 'localhost'"),
    ("localhost:0", "port must be 1..65535, in ASCII decimal digits, got 'localhost:0'"),
    ("::1:9559", "an IPv6 address must be in brackets: [addr]:port, got '::1:9559'"),
    ("[::1:9559", "bad IPv6 address '[::1', got '[::1:9559'"),
    ("bad_host:9559", "bad host 'bad_host', got 'bad_host:9559'"),
])
def test_host_port_errors(value: object, message: str) -> None:
    assert read(V.host_port, value) == (None, [f"f: {message}"])


# ------------------------------------------------------------------ files
def test_read_utf8_caps_the_size_and_names_the_encoding_problem(tmp_path) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(b"\xef\xbb\xbf{}\n")                    # a UTF-8 BOM is dropped
    assert V.read_utf8(path, 6) == "{}\n"
    with pytest.raises(V.InputFileError, match=f"^{path}: larger than 5 bytes: not a topology$"):
        V.read_utf8(path, 5, what="a topology")
    path.write_bytes("{}".encode("utf-16"))
    with pytest.raises(V.InputFileError, match=r"UTF-16 text \(byte order mark fffe\)"):
        V.read_utf8(path, 100)
    path.write_bytes(b"{}\n\x80")
    with pytest.raises(V.InputFileError, match=r"line 2: not UTF-8 text \(byte 0x80 at offset 3\)"):
        V.read_utf8(path, 100)
    with pytest.raises(V.InputFileError, match="not an input file"):
        V.read_utf8("/dev/zero", 1000)                       # reads 1001 bytes, no more
