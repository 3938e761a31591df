"""Data-plane encoding: a validated port policy -> the P4 action of table port_policy.

Each algorithm has its own action in aqm.p4, with only its own parameters:

  drop_tail        (queue_limit_pkts, flow_epoch_shift)
  red              (queue_limit_pkts, flow_epoch_shift, policy_epoch, ewma_shift,
                    min_th_scaled, max_th_scaled, red_slope_q24, idle_decay_q32,
                    gentle, max_p_q16, gentle_slope_q24, ecn, harddrop, wait)
  cbt_red_all,
  cbt_red_tcp_only (... red's ..., tagged_th_scaled, untagged_th_scaled)
  dcbt             (... red's ..., tagged_share_q16, untagged_th_scaled)
  dcbt_chips       (... dcbt's ..., chips_ewma_shift, chips_tagged_share_limit_q16)
  mcdt             (queue_limit_pkts, flow_epoch_shift, policy_epoch,
                    tcp_th_pkts, tagged_th_pkts, untagged_th_pkts)
  fred             (queue_limit_pkts, flow_epoch_shift, policy_epoch, ewma_shift,
                    min_th_scaled, max_th_scaled, red_slope_q24, idle_decay_q32,
                    minq_pkts, fred_slot_mask)
  upta             (queue_limit_pkts, flow_epoch_shift, policy_epoch, upta_mode, k_shift,
                    slot_mask, fs_i_scaled, fs_u_scaled, inv_fs_i_mant, inv_fs_u_mant,
                    inv_fs_i_shift, inv_fs_u_shift, tagged_q16)

Validation happens once, in :mod:`mmaqm.config`; this module only converts
units (packets -> packets * 2^16, probabilities -> Q16/Q24). The driver then
checks names and bit widths against the switch's P4Info. Nothing here talks
to a switch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from .algorithms import (ALGORITHMS, CBT_ALGORITHMS, DCBT_ALGORITHMS, NON_RED_ALGORITHMS, cbt,
                         chips, dcbt, fred, mcdt, red, upta)

if TYPE_CHECKING:  # the schema is only a type here: the driver never imports it
    from .algorithms import upta_control
    from .config import PortPolicy

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
    policy: "PortPolicy",
    *,
    policy_epoch: int,
    flow_epoch_shift: int,
    share_tagged: float = 1.0,
    share_untagged: float = 1.0,
    mcdt_th_pkts: Mapping[int, int] | None = None,
    upta_shares_bps: tuple[float, float] | None = None,
) -> PolicyAction:
    """The port_policy action for a validated policy.

    policy_epoch: a value the port's packets have not carried before resets the
    port's averages and RED state (see policy_epoch_from_clock); keep it for
    shares-only updates. flow_epoch_shift: 0 = no flow reports, else 1..40.
    D-CBT: tagged_share_q16 and untagged_th_scaled come from the active-flow
    shares (dcbt §3.1); CBT: the static thresholds (cbt §3). MCDT: the class
    thresholds (class id -> whole packets) of the last period update (mcdt §II.2),
    None before the first: every class at B = queue_limit_pkts. UPTA: the port's
    fair shares (fs_I = alpha', fs_U = alpha; eqs. 19, 18) in bit/s, math.inf for
    none; None before the controller's first interval: none.
    """
    params: dict[str, int] = {
        "queue_limit_pkts": policy.queue_limit_pkts,
        "flow_epoch_shift": flow_epoch_shift,
    }
    if policy.algorithm == "MCDT":
        params["policy_epoch"] = policy_epoch
        th_pkts = mcdt_th_pkts if mcdt_th_pkts is not None else \
            dict.fromkeys(mcdt.MCDT_CLASSES, policy.queue_limit_pkts)  # T_c = B at first
        params.update(mcdt.action_params(th_pkts, policy.queue_limit_pkts))
    elif policy.algorithm == "FRED":
        assert policy.min_th_pkts is not None and policy.max_th_pkts is not None
        assert policy.max_p is not None and policy.ewma_weight is not None
        assert policy.fred_minq_pkts is not None and policy.fred_flow_slots is not None
        params["policy_epoch"] = policy_epoch
        params.update(fred.action_params(policy.min_th_pkts, policy.max_th_pkts, policy.max_p,
                                         minq_pkts=policy.fred_minq_pkts,
                                         ewma_weight=policy.ewma_weight,
                                         table_slots=policy.fred_flow_slots))
        params["idle_decay_q32"] = red.option_params(policy)["idle_decay_q32"]
    elif policy.algorithm == "UPTA":
        assert policy.upta_mode is not None and policy.upta_flow_slots is not None
        assert policy.upta_k_shift is not None
        fs_i, fs_u = upta_shares_bps if upta_shares_bps is not None else (math.inf, math.inf)
        params["policy_epoch"] = policy_epoch
        q = policy.upta_tagged_loss_threshold
        params.update(upta.action_params(upta.MODE_NAMES[policy.upta_mode], fs_i, fs_u,
                                         table_slots=policy.upta_flow_slots,
                                         k_shift=policy.upta_k_shift,
                                         tagged_q=1.0 if q is None else q,
                                         queue_limit_pkts=policy.queue_limit_pkts))
    elif policy.algorithm not in NON_RED_ALGORITHMS:
        assert policy.min_th_pkts is not None and policy.max_th_pkts is not None
        assert policy.max_p is not None
        params["policy_epoch"] = policy_epoch
        params["ewma_shift"] = policy.ewma_shift
        params.update(red.action_params(policy.min_th_pkts, policy.max_th_pkts, policy.max_p))
        params.update(red.option_params(policy))
    if policy.algorithm in CBT_ALGORITHMS:
        assert policy.tagged_th_pkts is not None and policy.untagged_th_pkts is not None
        params.update(cbt.action_params(policy.tagged_th_pkts, policy.untagged_th_pkts))
    elif policy.algorithm in DCBT_ALGORITHMS:
        assert policy.min_th_pkts is not None and policy.max_th_pkts is not None
        assert policy.max_p is not None
        params.update(dcbt.action_params(share_tagged, share_untagged, policy.min_th_pkts,
                                         policy.max_th_pkts, policy.max_p))
    if policy.algorithm == "DCBT_CHIPS":
        assert policy.chips_max_tagged_ratio is not None and policy.chips_ewma_weight is not None
        params.update(chips.action_params(policy.chips_max_tagged_ratio, policy.chips_ewma_weight))
    return PolicyAction(ALGORITHMS[policy.algorithm], params)


def upta_port_settings(policy: "PortPolicy") -> "upta_control.PortSettings":
    """A validated UPTA policy with capacity_mbps as the controller loop's per-port
    settings (the same mode, table size, K, threshold and limit as the action's)."""
    from .algorithms import upta_control
    assert policy.algorithm == "UPTA" and policy.capacity_mbps is not None
    assert policy.upta_mode is not None and policy.upta_flow_slots is not None
    assert policy.upta_k_shift is not None
    q = policy.upta_tagged_loss_threshold
    return upta_control.PortSettings(capacity_bps=policy.capacity_mbps * 1e6,
                                     mode=upta.MODE_NAMES[policy.upta_mode],
                                     table_slots=policy.upta_flow_slots,
                                     k_shift=policy.upta_k_shift,
                                     tagged_q=1.0 if q is None else q,
                                     queue_limit_pkts=policy.queue_limit_pkts)
