"""Data-plane targets: BMv2 (v1model) and Tofino (TNA). Each is one module with
one ``Target``; ``for_p4info`` picks the target of a compiled program and
``device_config`` packs what is pushed to it. Nothing outside this package
names a target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import tna, v1model
from .base import Target

TARGETS: dict[str, Target] = {t.arch: t for t in (v1model.TARGET, tna.TARGET)}


def for_p4info(p4info: Any) -> Target:
    """The target of a program, by its P4Info's pkg_info.arch (finsy's P4Schema or
    the protobuf); a program that names none (the bench's router) is v1model."""
    info = getattr(p4info, "p4info", p4info)       # P4Schema -> p4info protobuf
    arch = info.pkg_info.arch or v1model.TARGET.arch
    try:
        return TARGETS[arch]
    except KeyError:
        raise ValueError(f"unknown P4 architecture {arch!r}; known: "
                         f"{', '.join(TARGETS)}") from None


def device_config(path: Path) -> Path | bytes:
    """What SetForwardingPipelineConfig pushes: BMv2's JSON file as is, or a
    Tofino build directory (make build-tna) packed as a BfPipelineConfig."""
    return tna.bf_pipeline_config(path) if tna.is_tna_build_dir(path) else Path(path)


def bfrt_schema(path: Path) -> tuple[Path, str] | None:
    """The BfRt schema (bfrt.json) of a device config and the program name BfRt
    knows it by: a Tofino build directory's (make build-tna); None for BMv2's JSON."""
    if not tna.is_tna_build_dir(path):
        return None
    return Path(path) / tna.TNA_BFRT_JSON, tna.pipeline_p4_name(path)


__all__ = ["TARGETS", "Target", "bfrt_schema", "device_config", "for_p4info", "tna",
           "v1model"]
