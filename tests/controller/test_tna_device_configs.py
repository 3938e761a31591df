"""The pipeline a TNA build is pushed as, to bf_switchd's own P4Runtime server
(open-p4studio's p4rt option, docs/tofino-model.md): p4lang/PI's legacy
p4.tmp.P4DeviceConfig whose device_data the Tofino PI backend reads as
length-prefixed chunks (bf-drivers src/pi/pi_imp.c _pi_update_device_start).
Decoded here independently of targets.tna's encoder: the message by the protobuf
runtime from its field numbers, the chunks as the backend reads them."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from fake_p4rt import load_p4info
from mmaqm.targets import tna as T
from test_p4info_by_name import TNA_RED_P4INFO, pushed_pipeline, tna_build_dir


def p4_device_config_class():
    """p4.tmp.P4DeviceConfig (p4lang/PI proto/p4/tmp/p4config.proto): reassign = 1,
    extras = 2 (a message of a string map), device_data = 3."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="test_p4config.proto", package="p4.tmp",
                                             syntax="proto3")
    msg = fdp.message_type.add(name="P4DeviceConfig")
    extras = msg.nested_type.add(name="Extras")
    entry = extras.nested_type.add(name="KvEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    extras.field.add(name="kv", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                     type_name=".p4.tmp.P4DeviceConfig.Extras.KvEntry")
    msg.field.add(name="reassign", number=1, type=F.TYPE_BOOL, label=F.LABEL_OPTIONAL)
    msg.field.add(name="extras", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                  type_name=".p4.tmp.P4DeviceConfig.Extras")
    msg.field.add(name="device_data", number=3, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("p4.tmp.P4DeviceConfig"))


def pi_chunks(device_data: bytes) -> list[bytes]:
    """The chunks in the order _pi_update_device_start reads them (uint32 length,
    host order: little-endian on x86, then the bytes)."""
    chunks, at = [], 0
    while at < len(device_data):
        (size,) = struct.unpack_from("<I", device_data, at)
        chunks.append(device_data[at + 4:at + 4 + size])
        at += 4 + size
    assert at == len(device_data), "a chunk runs past the end"
    return chunks


def test_a_tna_build_is_packed_as_pis_device_data_in_the_order_the_tofino_backend_reads(
        tmp_path: Path) -> None:
    build = tna_build_dir(tmp_path)
    config = p4_device_config_class().FromString(T.pi_device_config(build, "mmaqm_red"))
    assert not config.reassign and not config.extras.kv
    name, binary, context, pipeline, bfrt = pi_chunks(config.device_data)
    assert name == b"mmaqm_red"
    assert binary == (build / "pipe" / "tofino.bin").read_bytes()
    assert context == (build / "pipe" / "context.json").read_bytes()
    assert pipeline == b"pipe"          # a non-empty name: the backend then reads bfrt.json
    assert bfrt == (build / "bfrt.json").read_bytes()


def test_the_pi_device_config_reaches_the_switch_byte_for_byte_as_a_file(
        tmp_path: Path) -> None:
    """The file written from it is pushed as it is (like BMv2's JSON), over real gRPC."""
    build = tna_build_dir(tmp_path)
    path = tmp_path / "bf_switchd.device_config"
    path.write_bytes(T.pi_device_config(build, "mmaqm_red"))
    push = pushed_pipeline(path)
    assert push.config.p4_device_config == path.read_bytes()
    assert push.config.p4info == load_p4info(TNA_RED_P4INFO)


def test_a_directory_without_the_compilers_files_or_a_bad_name_is_refused(
        tmp_path: Path) -> None:
    build = tna_build_dir(tmp_path)
    with pytest.raises(ValueError, match="1 to 100 bytes"):
        T.pi_device_config(build, "x" * 101)
    with pytest.raises(ValueError, match="1 to 100 bytes"):
        T.pi_device_config(build, "")
    (build / "bfrt.json").unlink()
    with pytest.raises(FileNotFoundError, match="bfrt.json.*make build-tna"):
        T.pi_device_config(build, "mmaqm_red")
