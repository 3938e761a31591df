"""p4src/tna/main.p4's ingress_checks: v1model's chain of ingress discard tests
as one ternary decision list (the first matching entry wins), and the
stage-0 ipv4_forwardable flag that, with routing and the policy, gates the
AQM. Both tables' const entries are read from main.p4 (preprocessed for a
build: the UPTA build's ipv4_forwardable reads the TTL itself) and looked up
as the switch would, for every combination of the tests' inputs, against the
chain of p4src/v1model/main.p4 (whose parser verify()s make a bad version or
IHL a parser error; IHL 6 with the P-UPTA option is parsed and passes)."""

import itertools
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAIN_SOURCE = (REPO / "p4src" / "tna" / "main.p4").read_text()


def preprocess(text: str, defines: set[str]) -> str:
    """The lines a build sees: #ifdef / #ifndef / #if defined(..) / #else /
    #endif, for the given defines (the other directives are kept)."""
    out, stack = [], []
    for line in text.split("\n"):
        word = line.strip().split(" ", 1)
        keep = all(stack)
        if word[0] == "#ifdef":
            stack.append(word[1].strip() in defines)
        elif word[0] == "#ifndef":
            stack.append(word[1].strip() not in defines)
        elif word[0] == "#if":
            expr = re.sub(r"defined\((\w+)\)", lambda m: str(m.group(1) in defines), word[1])
            stack.append(eval(expr.replace("&&", " and ").replace("||", " or ")
                              .replace("!", " not ")))
        elif word[0] == "#else":
            stack[-1] = not stack[-1]
        elif word[0] == "#endif":
            stack.pop()
        elif keep:
            out.append(line)
    assert not stack
    return "\n".join(out)


MAIN = preprocess(MAIN_SOURCE, {"MMAQM_TNA_RED"})
MAIN_UPTA = preprocess(MAIN_SOURCE, {"MMAQM_TNA_UPTA"})
DEFINES = (REPO / "p4src" / "shared" / "defines.p4").read_text()
CONSTS = {m.group(1): int(m.group(2), 0)
          for m in re.finditer(r"const bit<\d+> (\w+) = (\w+);", DEFINES)}
REASONS = {name: value for name, value in CONSTS.items() if name.startswith("DISCARD_")}
PASS = "pass"
# the keys of both tables, in ingress_checks' order
INPUTS = ("parser_err", "valid", "version", "ihl", "option", "checksum_error", "too_short",
          "ttl_expired", "routed", "port_hi", "aqm_applied")


def table(name: str, main: str = MAIN) -> tuple[list[tuple[list, str]], str]:
    body = main[main.index(f"table {name} {{"):]
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
    m = re.fullmatch(r"(\d+)w(\w+) &&& \d+w(\w+)", key)
    if m:
        return value & int(m.group(3), 0) == int(m.group(2), 0)
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


def v1model_chain(parser_err, valid, version, ihl, option, checksum_error, too_short,
                  ttl_expired, routed, port_hi, aqm_applied) -> str:
    if parser_err or (valid and (version != 4 or ihl < CONSTS["IPV4_MIN_IHL"])):
        return "DISCARD_MALFORMED"      # v1model: verify() in the parser
    if not valid:
        return "DISCARD_NOT_IPV4"
    if ihl != CONSTS["IPV4_MIN_IHL"] and not option:
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
    # an option only where the parser extracts it (IHL 6)
    for values in itertools.product((0, 1, 0x8000), (0, 1), (0, 3, 4, 6, 15),
                                    (0, 4, 5, 6, 7, 8, 12, 15), (0, 1),
                                    (0, 1), (0, 1), (0, 1), (0, 1), range(8), (0, 1)):
        if values[4] == 0 or (values[1] == 1 and values[3] == 6):
            yield values


def test_ingress_checks_decides_as_v1models_chain_for_every_input() -> None:
    entries, default = table("ingress_checks")
    assert len(entries) == 16
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
    """ipv4_forwardable (its 8 keys) and the gate's routed, port and policy
    tests pass exactly the packets ingress_checks passes; a BFD message the
    endpoint consumed (UPTA's build) never reaches the AQM."""
    entries, default = table("ingress_checks")
    flag_entries, flag_default = table("ipv4_forwardable")
    gate = re.search(r"if \(md\.is_report \|\| \((md\.ipv4_forwardable[^{]*)\)\) \{", MAIN)
    assert gate and re.sub(r"\s+", " ", gate.group(1)) == (
        "md.ipv4_forwardable && md.base.routed && md.base.port_index[8:6] == 0 "
        "&& md.base.aqm_applied && !md.base.bfd_consumed")
    for values in every_input():
        forwardable = verdict(lookup(flag_entries, flag_default, values[:8])) == PASS
        gated = forwardable and values[8] == 1 and values[9] == 0 and values[10] == 1
        assert gated == (verdict(lookup(entries, default, values)) == PASS), values


def test_the_upta_builds_flag_reads_the_ttl_as_the_parser_test_does() -> None:
    """The UPTA build's ipv4_forwardable keys on the TTL (its parser has no TTL
    state): for every TTL class it flags what the other builds' flag does."""
    flag_entries, flag_default = table("ipv4_forwardable")
    upta_entries, upta_default = table("ipv4_forwardable", MAIN_UPTA)
    assert len(upta_entries) == 3
    for values in every_input():
        for ttl in (0, 1, 2, 64, 255):
            if values[7] != (ttl <= 1):
                continue
            plain = verdict(lookup(flag_entries, flag_default, values[:8]))
            upta = verdict(lookup(upta_entries, upta_default, values[:7] + (ttl,)))
            assert plain == upta, (values, ttl)
