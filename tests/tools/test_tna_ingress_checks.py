"""p4src/tna/main.p4's ingress_checks: v1model's chain of ingress discard tests
as one ternary decision list (the first matching entry wins), and the
stage-0 ipv4_forwardable flag that, with routing and the policy, gates the
AQM. Both tables' const entries are read from main.p4 (preprocessed for a
build; ipv4_forwardable reads the TTL itself, ingress_checks ttl_check's flag) and looked up
as the switch would, for every combination of the tests' inputs, against the
chain of p4src/v1model/main.p4 (whose parser verify()s make a bad version or
IHL a parser error; IHL 6 with the P-UPTA option is parsed and passes), IPv6
included: a third extension header, a version other than 6 and a hop limit of
0 or 1 are the parser's flags on Tofino, v1model's parser errors and test
(docs/ipv6.md). An IPv6 frame's IPv4 fields are an invalid header's, any value."""

import itertools
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAIN_SOURCE = (REPO / "p4src" / "tna" / "main.p4").read_text()


def preprocess(text: str, defines: set[str]) -> str:
    """The lines a build sees: #ifdef / #ifndef / #if defined(..) / #else /
    #endif, for the given defines and those a kept #define adds (the other
    directives are kept)."""
    defines = set(defines)
    out, stack = [], []
    for line in text.split("\n"):
        word = line.strip().split(" ", 1)
        keep = all(stack)
        if word[0] == "#define" and keep:
            defines.add(word[1].split()[0].split("(")[0])
            out.append(line)
        elif word[0] == "#ifdef":
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
          "ttl_expired", "routed", "port_hi", "aqm_applied",
          "v6", "ext_limit", "v6_bad_version", "hop_expired")
IPV6_KEYS = slice(11, 15)
TTLS = (0, 1, 2, 64, 255)


def flag_keys(values, ttl: int) -> tuple:
    """ipv4_forwardable's keys: ingress_checks' first 7, the TTL (ttl_check's
    flag is ttl <= 1), then the 4 IPv6 ones."""
    return values[:7] + (ttl,) + values[IPV6_KEYS]


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
                  ttl_expired, routed, port_hi, aqm_applied,
                  v6=0, ext_limit=0, v6_bad_version=0, hop_expired=0) -> str:
    if ext_limit:
        return "DISCARD_IPV6_EXT_LIMIT"  # v1model: error.IPv6ExtensionLimit
    if parser_err or v6_bad_version or (valid and (version != 4
                                                   or ihl < CONSTS["IPV4_MIN_IHL"])):
        return "DISCARD_MALFORMED"      # v1model: verify() in the parser
    if not valid and not v6:
        return "DISCARD_NOT_IPV4"
    if v6:
        # (the payload length against the frame: egress's on Tofino, as IPv4's)
        if hop_expired:
            return "DISCARD_TTL_EXPIRED"
        if not routed:
            return "DISCARD_NO_ROUTE"
        if port_hi != 0 or not aqm_applied:
            return "DISCARD_NO_POLICY"
        return PASS
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
            yield values + (0, 0, 0, 0)
    # IPv6: the IPv4 header invalid (its fields any value: an invalid header's
    # container; the UPTA build's TTL flag then reads it too), the parser's flags
    for values in itertools.product((0, 1, 0x8000), (0,), (0, 4, 6), (0, 5, 6), (0,),
                                    (0,), (0,), (0, 1), (0, 1), range(8), (0, 1),
                                    (1,), (0, 1), (0, 1), (0, 1)):
        yield values


def test_ingress_checks_decides_as_v1models_chain_for_every_input() -> None:
    entries, default = table("ingress_checks")
    assert len(entries) == 22
    seen = set()
    for values in every_input():
        got = verdict(lookup(entries, default, values))
        assert got == v1model_chain(*values), dict(zip(INPUTS, values))
        seen.add(got)
    assert seen == {PASS, "DISCARD_MALFORMED", "DISCARD_NOT_IPV4", "DISCARD_IPV4_OPTIONS",
                    "DISCARD_BAD_CHECKSUM", "DISCARD_TTL_EXPIRED", "DISCARD_NO_ROUTE",
                    "DISCARD_NO_POLICY", "DISCARD_IPV6_EXT_LIMIT"}
    assert seen == {PASS} | set(REASONS)


def test_the_aqm_gate_is_ingress_checks_pass_entry() -> None:
    """ipv4_forwardable (its 8 IPv4 and 4 IPv6 keys) and the gate's routed, port and policy
    tests pass exactly the packets ingress_checks passes; a BFD message the
    endpoint consumed (UPTA's build) never reaches the AQM."""
    entries, default = table("ingress_checks")
    flag_entries, flag_default = table("ipv4_forwardable")
    gate = re.search(r"if \(md\.is_report \|\| \((md\.ipv4_forwardable[^{]*)\)\) \{", MAIN)
    assert gate and re.sub(r"\s+", " ", gate.group(1)) == (
        "md.ipv4_forwardable && md.base.routed && md.base.port_index[8:6] == 0 "
        "&& md.base.aqm_applied && !md.base.bfd_consumed")
    for values in every_input():
        for ttl in TTLS:
            if values[7] != (ttl <= 1):    # ttl_check: the flag is ttl <= 1
                continue
            forwardable = verdict(lookup(flag_entries, flag_default,
                                         flag_keys(values, ttl))) == PASS
            gated = forwardable and values[8] == 1 and values[9] == 0 and values[10] == 1
            assert gated == (verdict(lookup(entries, default, values)) == PASS), (values, ttl)


def test_every_build_reads_the_ttl_in_the_first_stage() -> None:
    """No build tests the TTL in its parser (the parser's match registers): the
    UPTA build's tables are the others', ttl_check flags exactly TTL 0 and 1,
    and the flag table refuses those TTLs for IPv4 only."""
    assert "state parse_ipv4_ttl" not in MAIN_SOURCE
    flag_entries, flag_default = table("ipv4_forwardable")
    assert table("ipv4_forwardable", MAIN_UPTA) == (flag_entries, flag_default)
    assert len(flag_entries) == 4
    ttl_entries, ttl_default = table("ttl_check")
    assert ttl_default == "NoAction()"
    check = re.search(r"table ttl_check \{.*?const entries = \{\s*(\S+ &&& \S+) : "
                      r"set_ttl_expired\(\);", MAIN, re.S)
    assert check and all(key_matches(check.group(1), t) == (t <= 1) for t in range(256))
    for values in every_input():
        for ttl in TTLS:
            got = verdict(lookup(flag_entries, flag_default, flag_keys(values, ttl)))
            if values[IPV6_KEYS][0] == 0 and ttl <= 1:
                assert got != PASS, (values, ttl)


def test_every_build_but_fred_and_upta_parses_ipv6() -> None:
    """MMAQM_HAS_IPV6 in seven builds; FRED's and UPTA's stay IPv4-only (with
    IPv6 they need more than 12 stages, docs/ipv6.md): no IPv6 parser state,
    so md.is_ipv6 stays false and ingress_checks discards an IPv6 frame as
    NOT_IPV4 there."""
    for variant in ("DROP_TAIL", "RED", "CBT_RED_ALL", "CBT_RED_TCP_ONLY", "DCBT",
                    "DCBT_CHIPS", "MCDT", "FRED", "UPTA"):
        main = preprocess(MAIN_SOURCE, {f"MMAQM_TNA_{variant}"})
        ipv6 = variant not in ("FRED", "UPTA")
        assert ("#define MMAQM_HAS_IPV6" in main) == ipv6, variant
        assert ("state parse_ipv6_header {" in main) == ipv6, variant
        assert ("md.is_ipv6 = true;" in main) == ipv6, variant
    entries, default = table("ingress_checks", MAIN_UPTA)
    ipv6_frame = (0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0)   # is_ipv6 never set
    assert verdict(lookup(entries, default, ipv6_frame)) == "DISCARD_NOT_IPV4"
