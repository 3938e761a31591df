"""Data-plane encoding: a validated port policy -> the P4 action of table port_policy.

Each algorithm has its own action in aqm.p4, with only its own parameters; its
plug-in (``mmaqm.algorithms``) computes them. Every action also takes
queue_limit_pkts and flow_epoch_shift, which this module adds. Validation
happens once, in :mod:`mmaqm.config`; the plug-ins only convert units (packets
-> packets * 2^16, probabilities -> Q16/Q24). The driver then checks names and
bit widths against the switch's P4Info. Nothing here talks to a switch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from . import algorithms as A
from .algorithms import PortInputs, PortPolicy

MAX_FLOW_EPOCH_SHIFT = 40
POLICY_EPOCH_BITS = 32


@dataclass(frozen=True)
class PolicyAction:
    """One port_policy action: its P4 name and its parameters (ints, by name)."""

    name: str
    params: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def with_params(self, **changes: int) -> "PolicyAction":
        return PolicyAction(self.name, {**self.params, **changes})

    @property
    def algorithm(self) -> str:
        """The configuration name of the algorithm (DROP_TAIL, RED, ...)."""
        from .algorithms import ALGORITHM_OF_ACTION
        return ALGORITHM_OF_ACTION[self.name]


def policy_epoch_from_clock(now_ns: int, installed: int | None) -> int:
    """A new policy epoch: wall-clock milliseconds mod 2^32, skipping 0 and the installed epoch.

    The data plane remembers the epoch of the port's last packet in a register
    P4Runtime cannot read (averages.p4), and table entries (with the installed
    epoch) may have been cleared since. A counter restarting at 1 would repeat
    an old epoch and keep stale averages; the wall clock does not (it repeats
    after 49.7 days). 0 is the register's power-up value.
    """
    epoch = now_ns // 1_000_000 % 2**POLICY_EPOCH_BITS
    while epoch == 0 or epoch == installed:
        epoch = (epoch + 1) % 2**POLICY_EPOCH_BITS
    return epoch


def policy_action(
    policy: PortPolicy,
    *,
    policy_epoch: int,
    flow_epoch_shift: int,
    share_tagged: float = 1.0,
    share_untagged: float = 1.0,
    mcdt_th_pkts: Mapping[int, int] | None = None,
    upta_shares_bps: tuple[float, float] | None = None,
    active_flows: int = 0,
) -> PolicyAction:
    """The port_policy action for a validated policy.

    policy_epoch: a value the port's packets have not carried before resets the
    port's averages and RED state (see policy_epoch_from_clock); keep it for
    shares-only updates. flow_epoch_shift: 0 = no flow reports, else 1..40.
    The other inputs are what the controller measured (algorithms.PortInputs):
    the active-flow shares (D-CBT, dcbt §3.1), the last MCDT period's class
    thresholds (mcdt §II.2), UPTA's fair shares in bit/s (eqs. 19, 18), the
    port's active flows (the tag guard's interval, algorithms.tag_guard).
    """
    plugin = A.get(policy.algorithm)
    inputs = PortInputs(share_tagged=share_tagged, share_untagged=share_untagged,
                        mcdt_th_pkts=mcdt_th_pkts, upta_shares_bps=upta_shares_bps,
                        active_flows=active_flows)
    params: dict[str, int] = {
        "queue_limit_pkts": policy.queue_limit_pkts,
        "flow_epoch_shift": flow_epoch_shift,
        **plugin.action_params(policy, inputs, policy_epoch),
    }
    return PolicyAction(plugin.p4_action, params)
