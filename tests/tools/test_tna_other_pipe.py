"""p4src/tna/main.p4 discards and counts a frame from a port outside pipe 0
(docs/tofino.md, "State on every pipe"): the AQM's registers are pipe 0's, so
another pipe's copy would count the arrival and never see its departure.
Read from the committed P4, preprocessed for each build: the parser's port
select sends every port of pipes 1..3 to `other_pipe` (the UPTA build: to a
PacketOut check first, whose only way on is the controller's header), that
state parses nothing, ingress_checks discards a frame without IPv4 and the AQM
never sees it, and other_pipe_discards counts it by its pipe."""

from __future__ import annotations

import re

from mmaqm import p4generated
from test_tna_ingress_checks import (MAIN_SOURCE, REPO, every_input, lookup, preprocess,
                                     table, verdict)

BUILDS = ("DROP_TAIL", "RED", "CBT_RED_ALL", "CBT_RED_TCP_ONLY", "DCBT", "DCBT_CHIPS", "MCDT",
          "FRED", "UPTA")
TYPES = p4generated.TNA_TYPES_CONSTANTS
PORT_BITS = 9            # tna.p4's PortId_t (Tofino 1)
PIPE_SHIFT = 7           # a dev port's pipe: bits 8..7 (the SDE's DEV_PORT_TO_PIPE)


def build(variant: str) -> str:
    defines = {f"MMAQM_TNA_{variant}"}
    if variant == "DCBT_CHIPS":
        defines.add("MMAQM_TNA_DCBT")
    return preprocess(MAIN_SOURCE, defines)


def state(main: str, name: str) -> str:
    start = main.index(f"    state {name} {{")
    return main[start:main.index("\n    }\n", start)]


def select_cases(body: str) -> list[tuple[str, str]]:
    """(key set, next state) of a state's select, in order."""
    cases = body[body.index("transition select("):]
    return re.findall(r"^\s*([\w &]+?)\s*:\s*(\w+);", cases, re.M)


def next_state(cases: list[tuple[str, str]], value: int) -> str:
    for key, target in cases:
        if key == "default":
            return target
        m = re.fullmatch(r"(\w+) &&& (\w+)", key)
        if m:
            if value & int(m.group(2), 0) == int(m.group(1), 0):
                return target
        elif value == (TYPES[key] if key in TYPES else int(key, 0)):
            return target
    raise AssertionError("no default")


def test_every_port_outside_pipe_0_goes_to_other_pipe_in_every_build() -> None:
    recirc = TYPES["TNA_RECIRC_PORT"]
    assert recirc >> PIPE_SHIFT == 0                 # the reports return to pipe 0
    for variant in BUILDS:
        main = build(variant)
        cases = select_cases(state(main, "parse_port_metadata"))
        for port in range(1 << PORT_BITS):
            got = next_state(cases, port)
            if port == recirc:
                assert got == "parse_departure_report", (variant, port)
            elif port >> PIPE_SHIFT != 0 and variant == "UPTA":
                assert got == "check_packet_out_other_pipe", (variant, port)
            elif port >> PIPE_SHIFT != 0:
                assert got == "other_pipe", (variant, port)
            else:
                assert got in ("parse_ethernet", "check_packet_out"), (variant, port)


def test_on_another_pipe_only_the_controllers_packet_out_passes() -> None:
    """The UPTA build: the CPU port (dev port 192 or 320) is in pipe 1 or 2, so
    its PacketOut must pass; any other frame of those pipes goes to other_pipe."""
    main = build("UPTA")
    other = select_cases(state(main, "check_packet_out_other_pipe"))
    assert "lookahead<tna_packet_out_h>().ether_type" in state(main, "check_packet_out_other_pipe")
    packet_out = TYPES["TNA_ETHERTYPE_PACKET_OUT"]
    assert next_state(other, packet_out) == "parse_packet_out"
    for ether_type in (0x0800, 0x86DD, 0x0806, packet_out - 1, packet_out + 1):
        assert next_state(other, ether_type) == "other_pipe"
    # pipe 0's other ports (the Ethernet CPU ports 64..67) keep their PacketOut check
    assert next_state(select_cases(state(main, "check_packet_out")), 0x0800) == "parse_ethernet"


def test_the_other_pipe_state_parses_nothing_and_the_frame_is_discarded() -> None:
    for variant in BUILDS:
        main = build(variant)
        body = state(main, "other_pipe")
        assert "extract" not in body and "md.other_pipe = true;" in body
        assert body.rstrip().endswith("transition accept;")
        # set nowhere else (the start state clears it)
        assert main.count("md.other_pipe = true;") == 1
        assert "md.other_pipe = false;" in state(main, "start")
        # routing and the flow slot run on an IPv4 or IPv6 frame only; the AQM's gate
        # needs the stage-0 flag, which needs a valid IPv4 or IPv6 header
        assert re.search(r"\} else if \(hdr\.pkt\.ipv4\.isValid\(\) \|\| "
                         r"md\.is_ipv6\) \{\s*// Routing", main)
        flag_entries, flag_default = table("ipv4_forwardable", main)
        entries, default = table("ingress_checks", main)
        for values in every_input():
            if values[0] != 0 or values[1] != 0 or values[11] != 0:
                continue                        # other_pipe: no parser error, no IP header
            flag = values[:7] + (64,) + values[11:15]   # (an invalid header's TTL)
            assert verdict(lookup(flag_entries, flag_default, flag)) != "pass", variant
            assert verdict(lookup(entries, default, values)) == "DISCARD_NOT_IPV4", variant


def test_other_pipe_discards_counts_by_pipe_before_anything_else() -> None:
    for variant in BUILDS:
        main = build(variant)
        counter = re.search(r"Counter<bit<64>, tna_index_t>\((\w+),\s*CounterType_t\."
                            r"PACKETS_AND_BYTES\) other_pipe_discards;", main)
        assert counter and counter.group(1) == "TNA_PIPES"
        # one index per pipe: the dev port's bits 8..7
        assert TYPES["TNA_PIPES"] == 1 << (PORT_BITS - PIPE_SHIFT)
        apply = main[main.index("    apply {", main.index("control TnaIngress(")):]
        first = re.search(r"apply \{\s*(?://[^\n]*\n\s*)*if \(md\.other_pipe\) \{\s*"
                          r"other_pipe_discards\.count\(other_pipe_index_hash\.get\(\{ "
                          r"ig_intr_md\.ingress_port\[8:7\] \}\)\);", apply)
        assert first, variant
    # v1model has no pipes: no such counter there (the controller reads it as no values)
    assert "other_pipe" not in (REPO / "p4src" / "v1model" / "main.p4").read_text()
