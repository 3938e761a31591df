"""Drop-tail: a packet is dropped only when the port's P4 queue holds
queue_limit_pkts packets (aqm.p4). The baseline every paper compares with."""

from __future__ import annotations

from typing import ClassVar

from .base import Algorithm, PortInputs, PortPolicy


class DropTail(Algorithm):
    name: ClassVar[str] = "DROP_TAIL"
    p4_action: ClassVar[str] = "drop_tail"
    summary: ClassVar[str] = "drop only at the queue limit (the papers' baseline)"
    doc_page: ClassVar[str] = "docs/algorithms/droptail.md"

    def action_params(self, policy: PortPolicy, inputs: PortInputs,
                      policy_epoch: int) -> dict[str, int]:
        return {}


PLUGIN = DropTail()
