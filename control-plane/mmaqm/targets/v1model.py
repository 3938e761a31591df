"""BMv2's v1model: the layout the controller speaks (targets.base.Target as is)."""

from __future__ import annotations

from typing import ClassVar

from .base import Target


class V1model(Target):
    name: ClassVar[str] = "v1model"
    arch: ClassVar[str] = "v1model"


TARGET = V1model()
