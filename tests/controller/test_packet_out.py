"""A BFD probe's PacketOut (driver.send_probe): on Tofino it carries the P4Info's
packet_out header (tna_types.p4 tna_packet_out_h: the egress port and the
PacketOut ether type by which the parser finds it), on v1model no metadata.
The fake switch with Stratum's rules refuses a PacketOut whose metadata is not
the P4Info's packet_out header."""

from __future__ import annotations

from pathlib import Path

import pytest

from fake_p4rt import FakeP4RuntimeServer, load_p4info, run_async
from finsy.proto import p4r
from mmaqm.driver import SwitchDriver
from mmaqm.p4rt.codec import packet_out_metadata
from mmaqm.targets import tna as T

TNA_UPTA_P4INFO = Path(__file__).resolve().parent / "fixtures" / "tna-upta.p4info.txtpb"
DATAGRAM = bytes(range(40))


def _packet_out_fields(p4info_path: Path) -> dict[str, tuple[int, int]]:
    """{name: (id, bitwidth)} of the P4Info's packet_out header."""
    [header] = [c for c in load_p4info(p4info_path).controller_packet_metadata
                if c.preamble.name == "packet_out"]
    return {m.name: (m.id, m.bitwidth) for m in header.metadata}


def _send_probe(p4info_path: Path, device_config: Path, port: int,
                **server_args) -> FakeP4RuntimeServer:
    async def body():
        server = FakeP4RuntimeServer(**server_args)
        async with server.run():
            async with SwitchDriver("r1", server.address, p4info=p4info_path,
                                    bmv2_json=device_config) as d:
                await d.send_probe(port, DATAGRAM)
                await d.read_state()          # a round trip: the stream message arrived
        return server
    return run_async(body())


def test_a_tofino_probe_carries_the_p4infos_packet_out_header(device_config: Path) -> None:
    """Every field of the P4Info's packet_out header, by id, in its width: the
    egress port the probe's path names, the PacketOut ether type, padding 0; the
    switch with Stratum's rules takes it, and the payload is the probe's frame."""
    fields = _packet_out_fields(TNA_UPTA_P4INFO)
    assert fields["egress_port"][1] == 9 and fields["ether_type"][1] == 16
    server = _send_probe(TNA_UPTA_P4INFO, device_config, 3, stratum_rules=True)
    assert server.refused_packets_out == []
    [packet] = server.packets_out
    got = {m.metadata_id: m.value for m in packet.metadata}
    assert sorted(got) == sorted(i for i, _ in fields.values())
    for name, (mid, width) in fields.items():
        assert len(got[mid]) == (width + 7) // 8, name
    assert int.from_bytes(got[fields["egress_port"][0]], "big") == 3
    assert int.from_bytes(got[fields["ether_type"][0]], "big") == T.TNA_ETHERTYPE_PACKET_OUT \
        == 0xBF01
    assert int.from_bytes(got[fields["_pad0"][0]], "big") == 0
    assert int.from_bytes(got[fields["_pad1"][0]], "big") == 0
    assert packet.payload.endswith(DATAGRAM) and packet.payload[12:14] == b"\x08\x00"


def test_a_v1model_probe_carries_no_metadata(p4info_path: Path, device_config: Path) -> None:
    """v1model's program has no packet_out header: the PacketOut has no metadata,
    and the switch with Stratum's rules takes it."""
    assert not [c for c in load_p4info(p4info_path).controller_packet_metadata
                if c.preamble.name == "packet_out"]
    server = _send_probe(p4info_path, device_config, 3, stratum_rules=True)
    assert server.refused_packets_out == []
    [packet] = server.packets_out
    assert list(packet.metadata) == [] and packet.payload.endswith(DATAGRAM)


def test_the_fake_switch_refuses_a_tofino_probe_without_its_metadata() -> None:
    """A PacketOut without the packet_out header's fields (what the controller
    sent before the header existed) is refused by the switch with Stratum's rules."""
    server = FakeP4RuntimeServer(p4info=load_p4info(TNA_UPTA_P4INFO), stratum_rules=True)
    server._packet_out(p4r.PacketOut(payload=b"\x00" * 14 + DATAGRAM))
    assert server.packets_out == []
    [(_, problem)] = server.refused_packets_out
    assert "packet_out" in problem


def test_packet_out_metadata_refuses_what_the_p4info_does_not_declare(
        p4info_path: Path) -> None:
    """Checked before anything is sent: a missing or unknown field, a value too
    wide, or metadata for a program without the header."""
    p4info = load_p4info(TNA_UPTA_P4INFO)
    with pytest.raises(ValueError, match="fields"):
        packet_out_metadata(p4info, {"egress_port": 3})
    with pytest.raises(ValueError, match="fields"):
        packet_out_metadata(p4info, {"egress_port": 3, "ether_type": 1, "queue_id": 0})
    with pytest.raises(ValueError, match="9 bits"):
        packet_out_metadata(p4info, {"egress_port": 512, "ether_type": 1})
    with pytest.raises(ValueError, match="no packet_out header"):
        packet_out_metadata(load_p4info(p4info_path), {"egress_port": 3})
    assert packet_out_metadata(load_p4info(p4info_path), {}) == []


def test_concurrent_stream_writes_all_arrive(p4info_path: Path, device_config: Path) -> None:
    """gRPC allows one write in flight on a stream: tasks that send at once (a C-UPTA
    edge's probes and its digest acknowledgements) must be serialized by the driver,
    or a write fails with INTERNAL ("Internal error from Core") and ends the switch's
    controller. 50 tasks send 4 probes each, all at once: all 200 arrive."""
    import asyncio

    async def body():
        server = FakeP4RuntimeServer()
        async with server.run():
            async with SwitchDriver("r1", server.address, p4info=p4info_path,
                                    bmv2_json=device_config) as d:
                async def burst(k: int) -> None:
                    for i in range(4):
                        await d.send_probe(3, DATAGRAM + bytes([k, i]))
                await asyncio.gather(*(burst(k) for k in range(50)))
                await d.read_state()
        return server
    server = run_async(body())
    got = sorted(p.payload[-2:] for p in server.packets_out)
    assert got == sorted(bytes([k, i]) for k in range(50) for i in range(4))
