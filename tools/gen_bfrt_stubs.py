#!/usr/bin/env python3
"""Generate the Python stubs of BfRt's gRPC API (the controller's Lpf writes on
Tofino, mmaqm.p4rt.bfrt) from the committed .proto:

  control-plane/mmaqm/p4rt/proto/bfruntime.proto
    -> bfruntime_pb2.py, bfruntime_pb2_grpc.py (same directory)

with grpcio-tools as pinned in requirements.in (its protoc and gRPC plug-in),
so the stubs match the protobuf and grpcio runtimes the lock pins for finsy.
The .proto imports google/rpc/status.proto: it is finsy's copy (finsy/proto),
and the stubs import finsy's module of it, so that the descriptor pool holds
that file once. Two rewrites after protoc, both of imports only: that one, and
the gRPC stub's import of its messages made relative (a module of a package).

  .venv/bin/python tools/gen_bfrt_stubs.py            # rewrite the stubs
  .venv/bin/python tools/gen_bfrt_stubs.py --out DIR  # write them to DIR instead

tests/controller/test_bfrt_stubs.py regenerates them and compares.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "control-plane" / "mmaqm" / "p4rt" / "proto"
PROTO = "bfruntime.proto"
STUBS = ("bfruntime_pb2.py", "bfruntime_pb2_grpc.py")
_STATUS_IMPORT = "from google.rpc import status_pb2 as"
_FINSY_STATUS_IMPORT = "from finsy.proto.google.rpc import status_pb2 as"


def generate(out_dir: Path) -> list[Path]:
    """Run protoc on PROTO into out_dir (a directory); return the stubs' paths."""
    import finsy.proto
    from grpc_tools import protoc
    import grpc_tools

    finsy_protos = Path(finsy.proto.__file__).parent
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        # protoc names the stubs after the .proto's path under its include root
        shutil.copy(PROTO_DIR / PROTO, Path(tmp) / PROTO)
        code = protoc.main(["grpc_tools.protoc", f"-I{tmp}", f"-I{finsy_protos}",
                            f"-I{well_known}", f"--python_out={out_dir}",
                            f"--grpc_python_out={out_dir}", str(Path(tmp) / PROTO)])
    if code != 0:
        raise SystemExit(f"gen_bfrt_stubs: protoc failed ({code})")
    pb2, grpc_stub = (out_dir / name for name in STUBS)
    text = pb2.read_text()
    if _STATUS_IMPORT not in text:
        raise SystemExit(f"gen_bfrt_stubs: {pb2.name} has no '{_STATUS_IMPORT}'")
    pb2.write_text(text.replace(_STATUS_IMPORT, _FINSY_STATUS_IMPORT))
    text = grpc_stub.read_text()
    text, count = re.subn(r"^import bfruntime_pb2 as", "from . import bfruntime_pb2 as",
                          text, flags=re.MULTILINE)
    if count != 1:
        raise SystemExit(f"gen_bfrt_stubs: {grpc_stub.name}: the messages' import not found")
    grpc_stub.write_text(text)
    return [pb2, grpc_stub]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=PROTO_DIR,
                        help="where to write the stubs (default: beside the .proto)")
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
