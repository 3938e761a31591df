"""The UPTA build's controller packet-out header (p4src/tna/tna_types.p4
tna_packet_out_h, parsed in main.p4), read from the committed P4: its
ether type sits where an Ethernet header's does (the parser's lookahead finds
it there, as fabric-tna's check_ethernet), the ingress deparser never emits
it, and pipe 0's ports under AQM never parse one."""

from __future__ import annotations

import re
from pathlib import Path

from mmaqm import p4generated

REPO = Path(__file__).resolve().parents[2]
TYPES = (REPO / "p4src" / "tna" / "tna_types.p4").read_text()
MAIN = (REPO / "p4src" / "tna" / "main.p4").read_text()
WIDTHS = {"PortId_t": 9}       # tna.p4 (Tofino 1)


def _block(text: str, start: str) -> str:
    i = text.index(start)
    return text[i:text.index("\n}\n", i)]


def test_the_ether_type_is_where_an_ethernet_header_has_its_type() -> None:
    body = _block(TYPES, "header tna_packet_out_h {")
    fields = re.findall(r"(?:bit<(\d+)>|(\w+_t))\s+(\w+);", body)
    widths = [(int(n) if n else WIDTHS[t], name) for n, t, name in fields]
    assert [name for _, name in widths] == ["_pad0", "egress_port", "_pad1", "ether_type"]
    assert sum(w for w, _ in widths) == 14 * 8           # an Ethernet header's length
    assert widths[-1] == (16, "ether_type")               # its last 16 bits: the type
    assert '@controller_header("packet_out")' in TYPES
    assert p4generated.TNA_TYPES_CONSTANTS["TNA_ETHERTYPE_PACKET_OUT"] == 0xBF01


def test_the_ingress_deparser_never_emits_the_packet_out_header() -> None:
    deparser = _block(MAIN, "control TnaIngressDeparser(")
    emitted = re.findall(r"\bpkt\.emit\((hdr[\w.]*)\);", deparser)
    assert emitted == ["hdr.report", "hdr.pkt"]      # not hdr: it holds packet_out


def test_ports_under_aqm_never_parse_a_packet_out() -> None:
    state = MAIN[MAIN.index("state parse_port_metadata {"):MAIN.index("state check_packet_out {")]
    value, mask = (int(x, 0) for x in
                   re.search(r"(\w+) &&& (\w+): parse_ethernet;", state).groups())
    num_ports = p4generated.DEFINES_CONSTANTS["NUM_PORTS"]
    plain = [p for p in range(1 << WIDTHS["PortId_t"]) if p & mask == value]
    assert plain == list(range(num_ports))
    assert state.index("TNA_RECIRC_PORT") < state.index("&&&")   # reports first
