"""The committed BfRt stubs (control-plane/mmaqm/p4rt/proto) are what
tools/gen_bfrt_stubs.py makes from the committed bfruntime.proto with the
pinned grpcio-tools, and they load with the protobuf and grpcio the lock pins."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROTO_DIR = ROOT / "control-plane" / "mmaqm" / "p4rt" / "proto"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_bfrt_stubs",
                                                  ROOT / "tools" / "gen_bfrt_stubs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_bfrt_stubs", module)
    spec.loader.exec_module(module)
    return module


def test_regenerating_the_bfrt_stubs_gives_the_committed_files(tmp_path: Path) -> None:
    gen = _generator()
    made = gen.generate(tmp_path)
    assert [p.name for p in made] == list(gen.STUBS)
    for path in made:
        assert path.read_text() == (PROTO_DIR / path.name).read_text(), (
            f"{path.name} differs from its regeneration: run tools/gen_bfrt_stubs.py")


def test_the_stubs_load_and_carry_the_upstream_proto() -> None:
    from mmaqm.p4rt.proto import bfruntime_pb2 as pb, bfruntime_pb2_grpc as pb_grpc
    proto = (PROTO_DIR / "bfruntime.proto").read_text()
    assert "SPDX-License-Identifier: Apache-2.0" in proto and "open-p4studio" in proto
    assert pb.DESCRIPTOR.package == "bfrt_proto"
    assert pb.DataField.DESCRIPTOR.fields_by_name["float_val"].number == 3
    assert {m.name for m in pb.DESCRIPTOR.services_by_name["BfRuntime"].methods} == {
        "Write", "Read", "SetForwardingPipelineConfig", "GetForwardingPipelineConfig",
        "StreamChannel"}
    assert hasattr(pb_grpc, "BfRuntimeStub")
