"""What a data-plane target is to the controller: how its program lays out
what v1model lays out one way (counters, range tables, clone sessions, value
sets, timestamps), so that everything above the driver speaks v1model's layout.

One subclass per target (``v1model.V1model``, ``tna.Tna``); ``targets.for_p4info``
picks it from a P4Info. Nothing else names a target.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from .. import reconcile as R
from ..algorithms.base import PortPolicy
from ..encoding import PolicyAction


class TargetRefusal(ValueError):
    """A configuration the target cannot hold, found before the switch is
    contacted (the CLI exits 2, as for an invalid configuration)."""


class Target:
    """The v1model layout; a target that differs overrides what differs."""

    name: ClassVar[str]
    # The P4Info pkg_info.arch of the target's programs.
    arch: ClassVar[str]
    # One program carries every algorithm (its port_policy has every plug-in's
    # action); False: a program per algorithm, which needs only its own.
    every_algorithm_in_one_program: ClassVar[bool] = True

    # The occupancy registers (port-indexed packet counts) whose counts can be left
    # too high by a lost departure, which the controller audits on an idle port
    # (docs/tofino.md "Counts that heal"); the first is the port's total. None on
    # v1model: egress decrements the counts in the same pipeline, so they are exact.
    occupancy_registers: ClassVar[tuple[str, ...]] = ()
    # The pipe whose copy of those (per-pipe) registers holds the counts the audit
    # judges, when the target's registers are per pipe (Tofino); None: one copy.
    occupancy_pipe: ClassVar[int | None] = None

    @property
    def audits_occupancy(self) -> bool:
        """Whether the controller audits this target's occupancy registers."""
        return bool(self.occupancy_registers)

    def check_action(self, action: PolicyAction) -> None:
        """Refuse, before any write, an action the target cannot hold (ValueError)."""

    def check_policy(self, port: int, policy: PortPolicy, action: PolicyAction) -> None:
        """Refuse (TargetRefusal) a port's policy (its configuration and its
        port_policy action) whose state the target cannot hold as configured
        (Tofino: its Lpf filters, whose time constants come from the policy's
        bandwidth_pps); called before the switch is contacted and again before
        the driver writes the policy with it."""

    def check_ports(self, ports: Mapping[int, str]) -> None:
        """Refuse, before the switch is contacted, configured ports the target
        cannot hold (TargetRefusal). ports: each port -> where the configuration
        names it."""

    @property
    def range_tables(self) -> tuple[str, ...]:
        """The range tables the target fills from port policies (none on v1model)."""
        return ()

    def range_entries(self, port: int, action: PolicyAction) -> list[R.TableEntry]:
        """The range-table entries of one port's policy (none on v1model)."""
        R.check_port(port)
        return []

    def lpf_specs(self, port: int, policy: PortPolicy, action: PolicyAction) -> list[Any]:
        """The filter settings (targets.tna_lpf.LpfSpec) the port's policy needs on
        a target that keeps its averages in time-based filters outside the P4Info
        (Tofino's Lpf, written over BfRt); none on v1model, whose averages are the
        action's own arithmetic. Raises tna_lpf.LpfRefusal when they cannot be set."""
        R.check_port(port)
        return []

    def lpf_spec_holds(self, desired: Any, held: Any) -> bool:
        """Whether a filter setting read back from the switch (held) is the one
        written (desired, of lpf_specs)."""
        return bool(desired == held)

    def clone_sessions(self, cut_in_ports: Iterable[int]) -> list[R.CloneSession]:
        """The clone sessions the program needs: ChIPS's slot sessions of these ports."""
        return [R.cut_in_slot_session(p) for p in cut_in_ports]

    def packet_out_metadata(self, port: int) -> dict[str, int]:
        """The values of a controller PacketOut's packet_out header (P4Info field
        names) for a packet that leaves through `port`: none on v1model, whose
        program has no such header (BMv2 injects the payload on its --cpu-port)."""
        R.check_port(port)
        return {}

    # ---- counters: (program counter, program index) <-> v1model's (name, index)
    def counter_reads(self, name: str, index: int | None,
                      have: frozenset[str]) -> list[tuple[str, int | None]]:
        """What to read in the program for v1model's counter `name` at `index`
        (None: every index); counters the program lacks are left out."""
        return [(name, index)] if name in have else []

    def counter_position(self, counter: str, index: int) -> tuple[str, int | None]:
        """v1model's (name, index) of a read program counter entry (index None:
        an entry v1model has no place for). Several entries of one position add up."""
        return counter, index

    def ts_to_us(self, ts: int) -> int:
        """A flow report's ingress timestamp in microseconds."""
        return ts

    # Where a flow report's timestamp, in microseconds (ts_to_us), wraps to 0:
    # BMv2's ingress_global_timestamp is 48 bits of microseconds (8.9 years).
    report_ts_modulus_us: ClassVar[float] = float(1 << 48)

    def __repr__(self) -> str:
        return f"<target {self.name}>"

