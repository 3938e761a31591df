"""What every algorithm plug-in is made of: its parameters, its validated
settings, the port policy that carries them, and the plug-in interface.

A plug-in (one module of this package) declares

* ``name`` (the configuration's ``algorithm:`` value) and ``p4_action`` (its action
  of the P4 table ``port_policy``);
* ``params``: every policy key it takes, each a :class:`Param` with its type, unit,
  range, default and one line of doc (the configuration reference is generated
  from these: ``tools/gen_config_reference.py``);
* ``check``: the rules between its parameters, and the values it derives;
* ``action_params``: its settings as the P4 action's parameters;
* what the controller runs for it (``follows_flow_shares``, ``period_ms``,
  ``needs_cut_in_sessions``, ``fair_share_loop``);
* what a target without run-time multiplies and shifts (Tofino) keeps for it
  instead: ``range_tables`` and ``lpf_averages`` (:class:`LpfAverage`).

Nothing here imports the configuration or the switch: the configuration imports
this, and so does the runtime. Only the standard library and the validation
readers are used.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .. import p4constants as C
from .. import validation as V

REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()
# The fastest controller loop (update_interval_ms, mcdt_period_ms, --stats-interval-ms):
# shorter than a P4Runtime read + write round trip, a loop only spins.
MIN_LOOP_INTERVAL_MS = 1.0
# Every algorithm's queue_limit_pkts. to_scaled() in averages.p4 is pkts << 16 in
# bit<32>: occupancies of 65536 packets and more wrap, so the queue (and every
# threshold) stays below that.
DEFAULT_QUEUE_LIMIT_PKTS = 64
MAX_QUEUE_LIMIT_PKTS = (1 << 32) - 1 >> C.AVG_FRAC_BITS     # 65535


@dataclass(frozen=True)
class Param:
    """One policy key of a plug-in.

    kind: "number" (int or float), "int", "bool" or "choice". default: the value
    when the key is absent; REQUIRED: it must be given; None: absent means none.
    lo/hi: inclusive bounds, gt: an exclusive lower bound; power_of_two: an int
    that is 2^k; choices: for "choice"; note: why a bound is what it is.
    """

    key: str
    kind: str
    unit: str
    doc: str
    default: Any = None
    lo: float | None = None
    hi: float | None = None
    gt: float | None = None
    power_of_two: bool = False
    choices: tuple[str, ...] = ()
    note: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("number", "int", "bool", "choice"):
            raise ValueError(f"{self.key}: unknown kind {self.kind!r}")
        if self.kind == "choice" and not self.choices:
            raise ValueError(f"{self.key}: a choice needs choices")

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def read(self, value: object, path: str, errs: V.Errors) -> Any:
        """The value checked against this parameter, or None (reported in errs)."""
        if self.kind == "bool":
            return V.boolean(value, path, errs)
        if self.kind == "choice":
            return V.one_of(value, path, errs, self.choices)
        if self.kind == "int":
            got = V.integer(value, path, errs,
                            lo=None if self.lo is None else int(self.lo),
                            hi=None if self.hi is None else int(self.hi), note=self.note)
        else:
            got = V.number(value, path, errs, ge=self.lo, gt=self.gt, le=self.hi, note=self.note)
        if got is not None and self.power_of_two and got & (got - 1):
            errs.add(path, f"must be a power of two, got {got}")
            return None
        return got

    def range_text(self) -> str:
        """The allowed values in words, for the configuration reference."""
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            return " | ".join(self.choices)
        parts = []
        if self.gt is not None:
            parts.append(f"> {V.fmt(self.gt)}")
        if self.lo is not None:
            parts.append(f">= {V.fmt(self.lo)}")
        if self.hi is not None:
            parts.append(f"<= {V.fmt(self.hi)}")
        text = ", ".join(parts) or "any"
        if self.power_of_two:
            text += ", a power of two"
        return ("an integer " if self.kind == "int" else "a number ") + text

    def default_text(self) -> str:
        if self.required:
            return "required"
        if self.default is None:
            return "none"
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        if isinstance(self.default, float) and self.default > 0 and \
                math.log2(self.default).is_integer() and self.default < 1:
            return f"2^{int(math.log2(self.default))} = {V.fmt(self.default)}"
        return V.fmt(self.default) if isinstance(self.default, (int, float)) else str(self.default)


class Settings(Mapping[str, Any]):
    """A plug-in's validated parameter values by key (defaults filled in), read
    as ``settings["min_th_pkts"]`` or ``settings.min_th_pkts``. Immutable, hashable."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any] | None = None, **more: Any) -> None:
        object.__setattr__(self, "_values", {**(values or {}), **more})

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            raise AttributeError(f"no setting {key!r} (has {sorted(self._values)})") from None

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Settings are immutable")

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._values.items())))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Settings) and self._values == other._values

    def __repr__(self) -> str:
        return f"Settings({self._values!r})"


@dataclass(frozen=True)
class PortPolicy:
    """One port's validated AQM policy: the algorithm's name, the P4 queue limit
    every algorithm has, and the plug-in's settings (build it with
    ``mmaqm.config.parse_policy``)."""

    algorithm: str
    queue_limit_pkts: int
    settings: Settings = field(default_factory=Settings)

    @property
    def plugin(self) -> "Algorithm":
        from . import get
        return get(self.algorithm)


@dataclass(frozen=True)
class LpfAverage:
    """One of the algorithm's averages as a Tofino build keeps it: a time-based
    low-pass filter (TNA's ``Lpf`` extern) whose time constant the controller
    sets (targets.tna_lpf). lpf: the filter instance's name in the program (the
    last part of its BfRt table's name); index: "port" (the port), "class" (port
    * CLASS_SLOTS + each class of ``classes``) or "slot" (every flow slot of the
    port). Its time constant, one of: weight_param, the action parameter k of a
    per-packet EWMA weight w = 2^-k, which a sample-mode filter matches at the
    port's packet time; or rate_k_shift_param, the action parameter k of a
    rate-mode filter's time constant K = 2^k us."""

    lpf: str
    index: str = "port"
    weight_param: str | None = None
    rate_k_shift_param: str | None = None
    classes: tuple[int, ...] = ()
    # an average of independent 0/1 samples (ChIPS's share): the Lpf's skipped samples
    # leave it noisier, so its weight has a floor on Tofino (targets.tna)
    independent_samples: bool = False

    def __post_init__(self) -> None:
        if self.index not in ("port", "class", "slot"):
            raise ValueError(f"{self.lpf}: index {self.index!r}")
        if (self.weight_param is None) == (self.rate_k_shift_param is None):
            raise ValueError(f"{self.lpf}: one of weight_param, rate_k_shift_param")
        if (self.index == "class") != bool(self.classes):
            raise ValueError(f"{self.lpf}: classes go with index 'class'")


@dataclass(frozen=True)
class PortInputs:
    """What the controller feeds into a port's action besides its settings.

    share_tagged / share_untagged: the active-flow class shares n_c / n_all
    (dcbt §3.1); active_flows: all the port's active flows n_all (the tag guard,
    algorithms.tag_guard); mcdt_th_pkts: the class thresholds of the last MCDT period
    (mcdt §II.2), None before the first; upta_shares_bps: (fs_I, fs_U) of UPTA's
    fair-share loop (upta eqs. 18-19), None before its first interval.
    """

    share_tagged: float = 1.0
    share_untagged: float = 1.0
    mcdt_th_pkts: Mapping[int, int] | None = None
    upta_shares_bps: tuple[float, float] | None = None
    active_flows: int = 0


class Algorithm:
    """The plug-in interface. A plug-in is a subclass with its class attributes
    set and ``check``/``action_params`` implemented; ``algorithms.REGISTRY`` holds
    one instance of each."""

    name: ClassVar[str]
    p4_action: ClassVar[str]
    summary: ClassVar[str]                  # one line, with the paper's section
    doc_page: ClassVar[str]                 # docs/algorithms/<page>.md
    params: ClassVar[tuple[Param, ...]] = ()
    # The controller pushes the port's action again whenever the active-flow shares
    # change (dcbt §3.1).
    follows_flow_shares: ClassVar[bool] = False
    # The controller writes ChIPS's cut-in clone sessions for the port (dcbt §3.2).
    needs_cut_in_sessions: ClassVar[bool] = False
    # The range tables a target without run-time multiplication (Tofino) fills from
    # this algorithm's action instead of computing per packet (targets.tna).
    range_tables: ClassVar[tuple[str, ...]] = ()
    # The averages a Tofino build keeps in Lpf filters, whose time constants the
    # controller writes over BfRt (targets.tna_lpf, p4rt.bfrt).
    lpf_averages: ClassVar[tuple[LpfAverage, ...]] = ()
    # Notes added to "not used by <name>" for keys that other plug-ins take.
    unused_key_notes: ClassVar[Mapping[str, str]] = {}

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(p.key for p in self.params)

    def param(self, key: str) -> Param:
        for p in self.params:
            if p.key == key:
                return p
        raise KeyError(key)

    def check(self, values: dict[str, Any], given: frozenset[str], queue_limit_pkts: int | None,
              path: str, errs: V.Errors) -> None:
        """The rules between parameters. ``values`` holds every parameter: the given
        value, or its default when absent (None where it is invalid or REQUIRED and
        absent: both were reported); ``given`` names the keys the policy set.
        Derived values are written into ``values``."""

    def action_params(self, policy: PortPolicy, inputs: PortInputs,
                      policy_epoch: int) -> dict[str, int]:
        """The algorithm's parameters of its port_policy action (the common
        queue_limit_pkts and flow_epoch_shift are added by the caller)."""
        raise NotImplementedError

    def follows_flow_counts(self, policy: PortPolicy) -> bool:
        """Whether the port's action depends on the active-flow counts, so the
        controller pushes it again when they change (follows_flow_shares, or an
        option such as the tag guard)."""
        return self.follows_flow_shares

    def period_ms(self, policy: PortPolicy) -> float | None:
        """The period of the controller's per-port loop, if the algorithm has one."""
        return None

    def fair_share_loop(self, policy: PortPolicy) -> Any:
        """The per-port settings of a fair-share loop (UPTA), or None."""
        return None

    def switch_loop(self, host: Any, switch: Any) -> Any:
        """The loop this algorithm runs for a whole switch (host: the controller,
        switch: its validated configuration), or None. A loop has ``run()`` (a
        coroutine the controller runs beside its own loops) and ``port_inputs(port)``
        (its contribution to the port's PortInputs)."""
        return None

    def probes_bfd_paths(self, policy: PortPolicy) -> bool:
        """Whether the port is a C-UPTA ingress edge whose paths BFD probes."""
        return False

    def slot_sample(self, params: Mapping[str, int], flow_keys: Any
                    ) -> tuple[str, dict[str, int]] | None:
        """For algorithms with hashed per-flow slots: (stats key, {flows, sharing})
        of the port's active flows; None otherwise."""
        return None

    def __repr__(self) -> str:
        return f"<algorithm {self.name}>"
