"""config.FIELDS and config.COMMON_POLICY_PARAMS, the tables docs/configuration.md
is generated from, describe exactly the keys config.py's readers accept: every
allowed-key tuple (the named _*_KEYS and the literal ones passed as
``V.mapping(..., allowed=...)``) has its entries in the table and every entry
of the table is accepted, with the documented defaults and bounds."""

from __future__ import annotations

import ast
import copy
import re
from pathlib import Path
from typing import Any

import pytest

from mmaqm import algorithms as A
from mmaqm import config as CFG
from mmaqm import validation as V

POLICY = "<policy>"      # the parent of the policy keys in these tests


def _parent(path: str) -> tuple[str, str]:
    parent, _, key = path.rpartition(".")
    return parent, key


def _children() -> dict[str, list[str]]:
    """parent path -> the keys FIELDS lists below it ("" is the top level)."""
    children: dict[str, list[str]] = {}
    for field in CFG.FIELDS:
        parent, key = _parent(field.path)
        children.setdefault(parent, []).append(key)
    return children


def _fixed_parents() -> dict[str, frozenset[str]]:
    """The mappings whose keys are fixed (none the user chooses) -> their keys, and
    POLICY -> the policy's keys (the common ones and every plug-in's)."""
    fixed = {parent: frozenset(keys) for parent, keys in _children().items()
             if not any(key.startswith("<") for key in keys)}
    fixed[POLICY] = frozenset(p.key for p in CFG.COMMON_POLICY_PARAMS) | frozenset(A.all_keys())
    return fixed


def _allowed_tuples() -> list[tuple[str, frozenset[str]]]:
    """(where, keys) of every ``allowed=`` argument in config.py's source."""
    source = Path(CFG.__file__).read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg != "allowed":
                continue
            if isinstance(keyword.value, ast.Name):
                value = getattr(CFG, keyword.value.id)
                where = keyword.value.id
            else:
                value = ast.literal_eval(keyword.value)
                where = f"line {node.lineno}"
            found.append((where, frozenset(value)))
    return found


def test_field_paths_are_unique_and_their_parents_are_documented() -> None:
    paths = [f.path for f in CFG.FIELDS]
    assert len(paths) == len(set(paths))
    for path in paths:
        parent, _ = _parent(path)
        parent = parent.removesuffix("[]")
        assert parent == "" or parent in paths, f"{path}: its parent {parent} has no entry"


def test_fields_describe_the_mappings_the_readers_check() -> None:
    children = _children()
    assert set(children) >= {"", "classifier", "active_flows", "switches.<name>",
                             "switches.<name>.ports.<port>", "switches.<name>.routes[]",
                             "switches.<name>.bfd", "switches.<name>.bfd.paths[]"}


def test_every_named_key_tuple_has_its_keys_in_the_table() -> None:
    fixed = _fixed_parents()
    names = sorted(n for n in vars(CFG) if re.fullmatch(r"_[A-Z_]*KEYS", n))
    assert {"_SWITCH_KEYS", "_ROUTE_KEYS", "_BFD_KEYS", "_BFD_PATH_KEYS",
            "_COMMON_POLICY_KEYS", "_POLICY_KEYS"} <= set(names)
    for name in names:
        keys = frozenset(getattr(CFG, name))
        if name == "_COMMON_POLICY_KEYS":
            assert keys == {p.key for p in CFG.COMMON_POLICY_PARAMS}
            continue
        matches = [parent for parent, documented in fixed.items() if documented == keys]
        assert matches, f"config.{name} {sorted(keys)}: no FIELDS entries list exactly these"


def test_every_allowed_key_set_is_documented_and_every_documented_mapping_is_checked() -> None:
    fixed = _fixed_parents()
    allowed = _allowed_tuples()
    assert len(allowed) >= 8
    documented = set(fixed.values())
    for where, keys in allowed:
        assert keys in documented, (f"config.py {where}: allowed keys {sorted(keys)} are not "
                                    f"the keys of one FIELDS mapping")
    checked = {keys for _, keys in allowed}
    for parent, keys in fixed.items():
        assert keys in checked, (f"FIELDS lists {sorted(keys)} under {parent or 'the top level'}"
                                 f" but no allowed= tuple in config.py accepts exactly these")


# ------------------------------------------------------------- behaviour
def _every_key_config() -> dict[str, Any]:
    """A valid config that sets every key FIELDS lists."""
    return {
        "classifier": {"tagged_dscp": [46]},
        "active_flows": {"expiry_interval_ms": 200, "update_interval_ms": 20, "max_flows": 10},
        "switches": {"s1": {
            "p4runtime_addr": "127.0.0.1:9559",
            "device_id": 2,
            "occupancy_audit_interval_s": 0.5,
            "bfrt_address": "127.0.0.1:50052",
            "ports": {1: {"mac": "02:00:00:00:00:01"}, 2: {"mac": "02:00:00:00:00:02"}},
            "routes": [{"prefix": "10.0.1.0/24", "port": 1, "next_hop_mac": "02:00:00:01:00:01"}],
            "policies": {"default": {"algorithm": "DROP_TAIL"},
                         2: {"algorithm": "DROP_TAIL", "queue_limit_pkts": 9}},
            "bfd": {"router_addr": "10.255.0.1", "edge_ports": [1], "cpu_port": 63,
                    "paths": [{"id": 0, "port": 2, "egress_addr": "10.255.0.2",
                               "prefixes": ["10.0.2.0/24"]}]},
            # existing files (their contents are read only when connecting)
            "tls": {"ca_cert": __file__, "cert": __file__, "key": __file__,
                    "server_name": "s1.example"},
        }},
    }


def _paths_of(value: Any, path: str, documented: set[str]) -> set[str]:
    """The FIELDS paths a config tree uses (user-chosen keys as their placeholder)."""
    used: set[str] = set()
    if isinstance(value, list):
        for item in value:
            used |= _paths_of(item, f"{path}[]", documented)
        return used
    if not isinstance(value, dict):
        return used
    for key, item in value.items():
        candidates = [f"{path}.{key}" if path else str(key)]
        candidates += [f"{path}.<name>", f"{path}.<port>"]
        child = next((c for c in candidates if c in documented), None)
        assert child is not None, f"{path}.{key} has no FIELDS entry"
        used.add(child)
        kind = next(f.kind for f in CFG.FIELDS if f.path == child)
        if kind != "policy":
            used |= _paths_of(item, child, documented)
    return used


def test_a_config_with_every_documented_key_is_accepted() -> None:
    raw = _every_key_config()
    documented = {f.path for f in CFG.FIELDS}
    assert _paths_of(raw, "", documented) == documented
    config = CFG.parse_config(raw)
    assert config.switches["s1"].bfd is not None


@pytest.mark.parametrize("path", [f.path for f in CFG.FIELDS
                                  if _parent(f.path)[0] in _fixed_parents()])
def test_a_misspelt_key_beside_each_documented_key_is_refused(path: str) -> None:
    raw = _every_key_config()
    parent, key = _parent(path)
    node: Any = raw
    for part in re.findall(r"[^.\[\]]+|\[\]", parent):
        if part == "[]":
            node = node[0]
        else:
            node = node[{"<name>": "s1", "<port>": 1}.get(part, part)]
    node[key[:-1]] = 1
    with pytest.raises(CFG.ConfigError, match=rf"{re.escape(key[:-1])}: unknown key \("
                                              rf"allowed: .*; did you mean '{key}'\?"):
        CFG.parse_config(raw)


def test_documented_defaults_are_the_readers_defaults() -> None:
    minimal = copy.deepcopy(_every_key_config())
    del minimal["classifier"], minimal["active_flows"], minimal["switches"]["s1"]["device_id"]
    config = CFG.parse_config(minimal)
    default = {f.path: f.default for f in CFG.FIELDS}
    assert default["classifier.tagged_dscp"] == str(list(config.classifier.tagged_dscp))
    flows = config.active_flows
    assert default["active_flows.expiry_interval_ms"] == V.fmt(flows.expiry_interval_ms)
    assert default["active_flows.update_interval_ms"] == V.fmt(flows.update_interval_ms)
    assert default["active_flows.max_flows"] == V.fmt(flows.max_flows)
    assert default["switches.<name>.device_id"] == V.fmt(config.switches["s1"].device_id)
    assert default["switches"] == "required"


def test_common_policy_params_match_the_policy_reader() -> None:
    algorithm, limit = CFG.COMMON_POLICY_PARAMS
    assert (algorithm.key, limit.key) == CFG._COMMON_POLICY_KEYS
    assert algorithm.required and algorithm.choices == tuple(A.REGISTRY)
    with pytest.raises(CFG.ConfigError, match=r"policy\.algorithm: required"):
        CFG.parse_policy({"queue_limit_pkts": 5})
    assert CFG.parse_policy({"algorithm": "DROP_TAIL"}).queue_limit_pkts == limit.default
    assert CFG.parse_policy({"algorithm": "DROP_TAIL", "queue_limit_pkts": limit.hi}) \
        .queue_limit_pkts == limit.hi
    assert CFG.parse_policy({"algorithm": "DROP_TAIL", "queue_limit_pkts": limit.lo}) \
        .queue_limit_pkts == limit.lo
    for bad in (limit.lo - 1, limit.hi + 1):
        with pytest.raises(CFG.ConfigError, match=r"policy\.queue_limit_pkts: must be"):
            CFG.parse_policy({"algorithm": "DROP_TAIL", "queue_limit_pkts": bad})
