"""p4src/tna/main.p4's ingress_checks: v1model's chain of ingress discard tests
as one ternary decision list (the first matching entry wins), and the
stage-0 ipv4_forwardable flag that, with routing and the policy, gates the
AQM. Both tables' const entries are read from main.p4 and looked up as the
switch would, for every combination of the tests' inputs, against the chain
of p4src/v1model/main.p4 (whose parser verify()s make a bad version or IHL a
parser error)."""

import itertools
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAIN = (REPO / "p4src" / "tna" / "main.p4").read_text()
DEFINES = (REPO / "p4src" / "include" / "defines.p4").read_text()
CONSTS = {m.group(1): int(m.group(2), 0)
          for m in re.finditer(r"const bit<\d+> (\w+) = (\w+);", DEFINES)}
REASONS = {name: value for name, value in CONSTS.items() if name.startswith("DISCARD_")}
PASS = "pass"
# the keys of both tables, in ingress_checks' order
INPUTS = ("parser_err", "valid", "version", "ihl", "checksum_error", "too_short",
          "ttl_expired", "routed", "port_hi", "aqm_applied")


def table(name: str) -> tuple[list[tuple[list, str]], str]:
    body = MAIN[MAIN.index(f"table {name} {{"):]
    body = body[:body.index("\n    }\n")]
    entries = []
    for m in re.finditer(r"^\s*\(([^)]*)\) : (\w+\([^)]*\));", body, re.M):
        keys = [k.strip() for k in m.group(1).split(",")]
        entries.append((keys, m.group(2)))
    default = re.search(r"const default_action = (\w+\([^)]*\));", body).group(1)
    return entries, default


def key_matches(key: str, value: int) -> bool:
    if key == "_":
        return True
    m = re.fullmatch(r"(\d+)w(0x[0-9a-fA-F]+) &&& \d+w(0x[0-9a-fA-F]+)", key)
    if m:
        return value & int(m.group(3), 16) == int(m.group(2), 16)
    literal = {"true": 1, "false": 0}.get(key)
    if literal is None:
        literal = CONSTS[key] if key in CONSTS else int(key, 0)
    return value == literal


def lookup(entries, default, values) -> str:
    for keys, action in entries:
        assert len(keys) == len(values)
        if all(key_matches(k, v) for k, v in zip(keys, values)):
            return action
    return default


def verdict(action: str) -> str:
    if action.startswith("pass") or action.startswith("set_forwardable"):
        return PASS
    m = re.fullmatch(r"discard\((\w+)\)", action)
    return m.group(1) if m else action


def v1model_chain(parser_err, valid, version, ihl, checksum_error, too_short,
                  ttl_expired, routed, port_hi, aqm_applied) -> str:
    if parser_err or (valid and (version != 4 or ihl < CONSTS["IPV4_MIN_IHL"])):
        return "DISCARD_MALFORMED"      # v1model: verify() in the parser
    if not valid:
        return "DISCARD_NOT_IPV4"
    if ihl != CONSTS["IPV4_MIN_IHL"]:
        return "DISCARD_IPV4_OPTIONS"
    if checksum_error:
        return "DISCARD_BAD_CHECKSUM"
    if too_short:
        return "DISCARD_MALFORMED"
    if ttl_expired:
        return "DISCARD_TTL_EXPIRED"
    if not routed:
        return "DISCARD_NO_ROUTE"
    if port_hi != 0 or not aqm_applied:
        return "DISCARD_NO_POLICY"
    return PASS


def every_input():
    # every value that a key's entries tell apart: a parser error's bits, each
    # version class, every IHL around 5 and the masked ones, each port_index[8:6]
    return itertools.product((0, 1, 0x8000), (0, 1), (0, 3, 4, 6, 15), (0, 4, 5, 6, 7, 8, 12, 15),
                             (0, 1), (0, 1), (0, 1), (0, 1), range(8), (0, 1))


def test_ingress_checks_decides_as_v1models_chain_for_every_input() -> None:
    entries, default = table("ingress_checks")
    assert len(entries) == 10
    seen = set()
    for values in every_input():
        got = verdict(lookup(entries, default, values))
        assert got == v1model_chain(*values), dict(zip(INPUTS, values))
        seen.add(got)
    assert seen == {PASS, "DISCARD_MALFORMED", "DISCARD_NOT_IPV4", "DISCARD_IPV4_OPTIONS",
                    "DISCARD_BAD_CHECKSUM", "DISCARD_TTL_EXPIRED", "DISCARD_NO_ROUTE",
                    "DISCARD_NO_POLICY"}
    assert seen <= {PASS} | set(REASONS)


def test_the_aqm_gate_is_ingress_checks_pass_entry() -> None:
    """ipv4_forwardable (its 7 keys) and the gate's routed, port and policy
    tests pass exactly the packets ingress_checks passes."""
    entries, default = table("ingress_checks")
    flag_entries, flag_default = table("ipv4_forwardable")
    gate = re.search(r"if \(md\.is_report \|\| \((md\.ipv4_forwardable[^{]*)\)\) \{", MAIN)
    assert gate and re.sub(r"\s+", " ", gate.group(1)) == (
        "md.ipv4_forwardable && md.base.routed && md.base.port_index[8:6] == 0 "
        "&& md.base.aqm_applied")
    for values in every_input():
        forwardable = verdict(lookup(flag_entries, flag_default, values[:7])) == PASS
        gated = forwardable and values[7] == 1 and values[8] == 0 and values[9] == 1
        assert gated == (verdict(lookup(entries, default, values)) == PASS), values
