"""mmaqm controller configuration: YAML loading and complete validation.

Everything is validated before anything is written to a switch, and only
here: the result is a tree of frozen dataclasses that the rest of the
controller trusts. Errors are collected, not raised one at a time:
:class:`ConfigError` carries them all in ``.errors``, each starting with the
path of the offending field (mapping keys dotted, list indices in brackets;
:mod:`mmaqm.validation`), e.g.
``switches.s1.policies.2.min_th_pkts: must be < max_th_pkts (15), got 20``.
Unknown keys are errors everywhere (they are usually typos), and so are
duplicate keys in one YAML mapping (PyYAML would silently keep the last one).
A config file is UTF-8, at most MAX_CONFIG_BYTES, MAX_YAML_NODES values and
MAX_YAML_DEPTH levels deep; lists and mappings longer than the tables they fill
are one error each (input bounds: a wrong or hostile file costs neither memory
nor time).

Schema (defaults in brackets)::

  classifier:                      # optional
    tagged_dscp: [46, 34]          # [46, 34] = EF, AF41. DSCPs of tagged UDP
                                   # (cbt §3); ints 0..63, no duplicates; may be []
  active_flows:                    # optional; D-CBT active-flow counting (dcbt §3.1)
    expiry_interval_ms: 300        # [300] a flow is active if a packet of it
                                   # arrived in the last interval; >= 0.004
    update_interval_ms: 50         # [50] how often the controller recomputes
                                   # shares; >= 1 and <= expiry_interval_ms
    max_flows: 262144              # [262144] flows the controller tracks at most;
                                   # 1..16777216; reports of new flows beyond it
                                   # are refused and counted (stats "controller")
  switches:                        # required, 1..MAX_SWITCHES (64)
    s1:                            # switch name: [A-Za-z0-9_-]+
      p4runtime_addr: 127.0.0.1:9559   # required; host:port ([v6addr]:port for IPv6);
                                   # no two switches on one address and device_id
                                   # (localhost = 127.0.0.1 = [::1], names in any case)
      device_id: 1                 # [1] P4Runtime device id, >= 0
      ports:                       # required, non-empty; keys are ints 0..NUM_PORTS-1
        1: {mac: "02:00:00:00:00:01"}  # required mac: the router's own MAC on this
                                       # port, unicast, not all-zero, one per port; quote it
      routes:                      # [[]] list of
        - prefix: 10.0.1.0/24      #   required IPv4 network, no host bits set, unique
          port: 1                  #   required, must be in ports and have a policy
          next_hop_mac: "02:00:00:01:00:01"   # required unicast MAC
      policies:                    # [{}]
        default: {...policy...}    # applied to every port in ports without its own entry
        2: {...policy...}          # per port; the port must be in ports
      bfd:                         # optional; C-UPTA's BFD (upta §5.3, upta.p4)
        router_addr: 10.255.0.1    #   required: this router's own address (probes
                                   #   to it are answered, reports to it accepted)
        edge_ports: [1, 2]         #   [[]] ports facing hosts/other domains, in ports
        cpu_port: 63               #   [none] BMv2's --cpu-port (PacketOut probes
                                   #   enter there); 1..NUM_PORTS-1, not in ports
        paths:                     #   [[]] this router's BFD paths as ingress edge
          - {id: 0, port: 3, egress_addr: 10.255.0.7, prefixes: [10.0.4.1/32]}
                                   #   id < BFD_PATHS unique, port in ports

Policy keys:

  algorithm           required: DROP_TAIL | RED | CBT_RED_ALL | CBT_RED_TCP_ONLY | DCBT |
                      DCBT_CHIPS | MCDT | FRED | UPTA
  queue_limit_pkts    [64] int 1..65535 (the P4 queue limit; see MAX_QUEUE_LIMIT_PKTS)
  min_th_pkts         RED thresholds, numbers, 0 <= min_th_pkts < max_th_pkts <= queue_limit_pkts;
  max_th_pkts         required unless DROP_TAIL or MCDT, not allowed for those
  max_p               RED max_p in (0, 1]; required unless DROP_TAIL or MCDT, not allowed for those
  ewma_weight         [2^-9 = 0.001953125] must be 2^-k, k in 0..31 (the data plane
                      shifts); not allowed for DROP_TAIL or MCDT
  tagged_th_pkts      CBT static class thresholds (cbt §3), numbers in 0..queue_limit_pkts;
  untagged_th_pkts    required for CBT_RED_ALL / CBT_RED_TCP_ONLY, not allowed otherwise

RED options, every algorithm but DROP_TAIL and MCDT (README "RED options" maps them to tc-red;
FRED takes burst_pkts and bandwidth_pps only):

  burst_pkts          tc-red burst: derive the weight as tc does (instead of ewma_weight;
                      not both); a number >= min_th_pkts
  bandwidth_pps       tc-red bandwidth (in packets/s): turns on idle-time decay of the
                      average (F&J §11); > 0. Absent: the average does not decay while idle
  gentle              [false] gentle RED: a p_b ramp max_p..1 between max_th and 2 * max_th
  ecn                 [false] tc-red ecn: mark ECN-capable packets CE instead of dropping
  harddrop            [false] tc-red harddrop: with ecn, drop in the forced zone anyway
  wait                [false] ns-2 wait_ (true there, as in dcbt's simulations): no early
                      drop while count * p_b <= 1, so the gap between early drops is
                      uniform on 1/p_b + 1..2/p_b packets instead of 1..1/p_b
  adaptive            [false] tc-red adaptive: not implemented; true is an error

ChIPS keys (dcbt §3.2), DCBT_CHIPS only:

  chips_max_tagged_ratio  [0.5] ChIPS is on while tagged / other enqueues <= this; > 0
  chips_ewma_weight       [2^-9] weight of that average per enqueue, 2^-k

MCDT keys (mcdt §II.2), MCDT only; the buffer B of eqs. 5 and 9 is queue_limit_pkts:

  mcdt_period_ms      [100] how often the controller recomputes the class thresholds
                      from the period's arrivals (eqs. 5-10); >= 1 (the paper gives no period)

FRED keys (Lin & Morris 1997; cbt §2.3), FRED only (it also takes the RED keys):

  fred_minq_pkts      [2] int 0..65535: a flow holding fewer packets than max(minq, avgcq)
                      is never dropped early (FRED's minq: 2 for small buffers, 4 for large)
  fred_flow_slots     [4096] per-flow slots of the port, a power of two 1..FRED_SLOTS_PER_PORT
                      (4096, defines.p4); flows that hash to one slot share its state

UPTA keys (Wu & Hassan 2002, upta.p4; docs/upta-plan.md), UPTA only (it takes no RED key);
the fair shares fs_I, fs_U are not configuration: the controller computes them (eqs. 18-19)
and writes them into the port's entry; until then there is none (nothing is dropped for
fairness):

  upta_mode           [B] B (every router decides alone), P (P-UPTA: the loss threshold
                      travels in an IPv4 option, rewritten per eq. 17), C (C-UPTA: the
                      ingress edge decides with the path minima BFD discovers)
  upta_flow_slots     [4096] per-flow slots of the port, a power of two 1..UPTA_SLOTS_PER_PORT
                      (4096, defines.p4); flows that hash to one slot share its state
  upta_k_shift        [17] the rate estimator's K = 2^k microseconds, 0..24 (2^17 us =
                      131 ms, CSFQ's 100 ms to the nearest power of two; plan §1.3)
  capacity_mbps       C of eqs. 18-19 in Mbit/s (the port's link rate): the controller's
                      fair-share loop (upta_loop) computes the port's shares from it every
                      T = K; absent: no loop, the entry keeps "none" (PTF tests set shares)
  upta_tagged_loss_threshold  [none] loss threshold q in [0, 1] of tagged packets that
                      carry no UPTA option (the paper's video: 0.12); absent: such
                      packets have none and are never made U

The BMv2 traffic manager's queue depth and rate are not controller settings:
whoever starts simple_switch sets them (topologies: mmaqm_exp.network, from
the topology file). Every port that a route uses must end up with a policy
(its own or default). In the result every port's effective policy is
resolved; :func:`mmaqm.encoding.policy_action` turns a policy into its P4
action of table ``port_policy`` (aqm.p4). Code that builds a policy from a
mapping (tests, PTF) uses :func:`parse_policy`, the same checks.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from . import p4constants as C
from . import validation as V
from .algorithms import (ALGORITHMS, CBT_ALGORITHMS, FRED_UNSUPPORTED_RED_OPTIONS,
                         NON_RED_ALGORITHMS, chips, fred, mcdt, red, upta)
from .fixedpoint import MASK32, ewma_shift_from_weight
from .flows import DEFAULT_MAX_FLOWS

DEFAULT_TAGGED_DSCP: tuple[int, ...] = (46, 34)      # EF, AF41
DEFAULT_EXPIRY_INTERVAL_MS = 300.0                   # dcbt §3.1
DEFAULT_UPDATE_INTERVAL_MS = 50.0
MAX_MAX_FLOWS = 1 << 24          # active_flows.max_flows: ~5 GB of flow entries at most
DEFAULT_DEVICE_ID = 1
DEFAULT_QUEUE_LIMIT_PKTS = 64
DEFAULT_EWMA_WEIGHT = 2.0**-9                        # cbt §2.1 "typical weighting of 1/512"
# to_scaled() in averages.p4 is pkts << 16 in bit<32>: occupancies of 65536
# packets and more wrap, so the queue (and every threshold) stays below that.
MAX_QUEUE_LIMIT_PKTS = MASK32 >> C.AVG_FRAC_BITS     # 65535
MAX_FLOW_EPOCH_SHIFT = 40
MIN_EXPIRY_INTERVAL_MS = 2 * 2**1 / 1000             # flow_epoch_shift_for() >= 1
MAX_DEVICE_ID = 2**64 - 1
# Input bounds (README "Configuration reference"): a config is a few kB; these stop
# a wrong or hostile file before it costs memory or time. PyYAML needs ~0.7 kB and
# ~20 us per value; a full switch (NUM_PORTS ports, ROUTE_TABLE_SIZE routes, a
# policy per port) is ~10k values.
MAX_CONFIG_BYTES = 1 << 20                           # 1 MiB
MAX_YAML_NODES = 100_000                             # scalars, lists and mappings
MAX_YAML_DEPTH = 32                                  # a config nests 6 levels
MAX_YAML_INT_BITS = 128                              # device_id is the largest: 64 bits
MAX_SWITCHES = 64                                    # switches in one config (one process)
# The fastest controller loop (update_interval_ms, mcdt_period_ms, --stats-interval-ms):
# shorter than a P4Runtime read + write round trip, a loop only spins (and starves the rest).
MIN_LOOP_INTERVAL_MS = 1.0

LOCALHOST_ADDRESSES = ("127.0.0.1", "::1")

_SWITCH_NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")


class ConfigError(ValueError):
    """Invalid configuration. ``errors`` lists every problem, "<field path>: <message>"."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(self.errors))


# ------------------------------------------------------------- result types
@dataclass(frozen=True)
class PortPolicy:
    """One port's validated AQM policy (build it with :func:`parse_policy`).

    Fields not used by the algorithm are None. ``ewma_weight`` is None only
    for DROP_TAIL and MCDT, which keep no average; ``ewma_shift`` is derived
    from it (w = 2^-ewma_shift; 0 for those two).
    """

    algorithm: str
    queue_limit_pkts: int
    min_th_pkts: float | None = None
    max_th_pkts: float | None = None
    max_p: float | None = None
    ewma_weight: float | None = None
    tagged_th_pkts: float | None = None
    untagged_th_pkts: float | None = None
    # RED options (README "RED options"); ewma_weight is derived from burst_pkts when given
    burst_pkts: float | None = None
    bandwidth_pps: float | None = None
    gentle: bool = False
    ecn: bool = False
    harddrop: bool = False
    wait: bool = False
    # ChIPS (DCBT_CHIPS only)
    chips_max_tagged_ratio: float | None = None
    chips_ewma_weight: float | None = None
    # MCDT only
    mcdt_period_ms: float | None = None
    # FRED only
    fred_minq_pkts: int | None = None
    fred_flow_slots: int | None = None
    # UPTA only
    upta_mode: str | None = None
    upta_flow_slots: int | None = None
    upta_k_shift: int | None = None
    upta_tagged_loss_threshold: float | None = None
    capacity_mbps: float | None = None     # UPTA's C (eqs. 18-19); None: no fair-share loop
    ewma_shift: int = field(init=False)

    def __post_init__(self) -> None:
        shift = 0 if self.ewma_weight is None else ewma_shift_from_weight(self.ewma_weight)
        object.__setattr__(self, "ewma_shift", shift)


@dataclass(frozen=True)
class PortConfig:
    port: int
    mac: str                       # lower case, "02:00:00:00:00:01"


@dataclass(frozen=True)
class Route:
    prefix: ipaddress.IPv4Network
    port: int
    next_hop_mac: str              # lower case


@dataclass(frozen=True)
class SwitchConfig:
    name: str
    p4runtime_addr: str
    device_id: int
    ports: Mapping[int, PortConfig]
    routes: tuple[Route, ...]
    policies: Mapping[int, PortPolicy]        # effective policy of every port that has one
    default_policy: PortPolicy | None = None
    bfd: "BfdConfig | None" = None


@dataclass(frozen=True)
class BfdPathConfig:
    path_id: int
    port: int
    egress_addr: str
    prefixes: tuple[ipaddress.IPv4Network, ...]


@dataclass(frozen=True)
class BfdConfig:
    """C-UPTA's BFD settings of one switch (topology.bfd_plan writes them)."""

    router_addr: str
    edge_ports: tuple[int, ...] = ()
    cpu_port: int | None = None
    paths: tuple[BfdPathConfig, ...] = ()


@dataclass(frozen=True)
class ClassifierConfig:
    tagged_dscp: tuple[int, ...] = DEFAULT_TAGGED_DSCP


@dataclass(frozen=True)
class ActiveFlowsConfig:
    expiry_interval_ms: float = DEFAULT_EXPIRY_INTERVAL_MS
    update_interval_ms: float = DEFAULT_UPDATE_INTERVAL_MS
    max_flows: int = DEFAULT_MAX_FLOWS

    @property
    def flow_epoch_shift(self) -> int:
        return flow_epoch_shift_for(self.expiry_interval_ms)


@dataclass(frozen=True)
class Config:
    switches: Mapping[str, SwitchConfig]
    classifier: ClassifierConfig = ClassifierConfig()
    active_flows: ActiveFlowsConfig = ActiveFlowsConfig()


# ---------------------------------------------------------- derived values
def flow_epoch_shift_for(expiry_interval_ms: float) -> int:
    """Largest k with 2^k us <= expiry_interval_ms * 1000 / 2, capped at 40.

    flow_report.p4 reports a flow on its first packet of each 2^k us epoch, so a
    continuously active flow is reported at least twice per expiry interval.
    """
    if isinstance(expiry_interval_ms, bool) or not isinstance(expiry_interval_ms, (int, float)):
        raise ValueError(f"expiry_interval_ms must be a number, got {expiry_interval_ms!r}")
    half_us = expiry_interval_ms * 1000 / 2
    if not half_us >= 2:
        raise ValueError(f"expiry_interval_ms must be >= {MIN_EXPIRY_INTERVAL_MS!r}, "
                         f"got {expiry_interval_ms!r}")
    if math.isinf(half_us):
        return MAX_FLOW_EPOCH_SHIFT
    _, exponent = math.frexp(half_us)          # half_us = m * 2^exponent, 0.5 <= m < 1: exact
    return min(exponent - 1, MAX_FLOW_EPOCH_SHIFT)


def endpoint_keys(address: str, device_id: int) -> set[tuple[str, int, int]]:
    """The (host, port, device id) spellings of one validated P4Runtime endpoint that
    reach the same server: host names in lower case, IP addresses in their
    canonical form ([0:0::1] is ::1), port 09559 is 9559, and localhost is both
    127.0.0.1 and ::1 (it resolves to either). Without a DNS lookup: two different
    names of one host are not caught."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]").lower()
    try:
        hosts = {str(ipaddress.ip_address(host))}
    except ValueError:
        hosts = set(LOCALHOST_ADDRESSES) if host == "localhost" else {host}
    return {(h, int(port), device_id) for h in hosts}


# ------------------------------------------------------------ validation
def _section(raw: Mapping[Any, Any], key: str, default: Any) -> Any:
    """An optional section; absent or empty (YAML null) means the default."""
    value = raw.get(key)
    return default if value is None else value


# --- policy
_RED_KEYS = ("min_th_pkts", "max_th_pkts", "max_p")
_CBT_KEYS = ("tagged_th_pkts", "untagged_th_pkts")
_RED_OPTION_NUMBERS = ("burst_pkts", "bandwidth_pps")
_RED_OPTION_FLAGS = ("gentle", "ecn", "harddrop", "wait", "adaptive")
_CHIPS_KEYS = ("chips_max_tagged_ratio", "chips_ewma_weight")
_MCDT_KEYS = ("mcdt_period_ms",)
_FRED_KEYS = ("fred_minq_pkts", "fred_flow_slots")
_UPTA_KEYS = ("upta_mode", "upta_flow_slots", "upta_k_shift", "upta_tagged_loss_threshold",
              "capacity_mbps")
UPTA_MODES = upta.MODE_NAMES
MIN_MCDT_PERIOD_MS = MIN_LOOP_INTERVAL_MS
_NUMBER_KEYS = (*_RED_KEYS, "ewma_weight", *_CBT_KEYS, *_RED_OPTION_NUMBERS, *_CHIPS_KEYS,
                *_MCDT_KEYS)
_NON_NEGATIVE_KEYS = ("min_th_pkts", *_CBT_KEYS)
_POSITIVE_KEYS = ("bandwidth_pps", "chips_max_tagged_ratio")
_POLICY_KEYS = ("algorithm", "queue_limit_pkts", *_RED_KEYS, "ewma_weight", *_CBT_KEYS,
                *_RED_OPTION_NUMBERS, *_RED_OPTION_FLAGS, *_CHIPS_KEYS, *_MCDT_KEYS,
                *_FRED_KEYS, *_UPTA_KEYS)


def parse_policy(value: object, path: str = "policy") -> PortPolicy:
    """One policy mapping (as in a config's ``policies``) -> PortPolicy.

    Raises ConfigError listing every problem, with paths under ``path``.
    """
    errs = V.Errors()
    policy = _read_policy(value, path, errs)
    if errs.items:
        raise ConfigError(errs.items)
    assert policy is not None
    return policy


def _read_policy(value: object, path: str, errs: V.Errors) -> PortPolicy | None:
    raw = V.mapping(value, path, errs, allowed=_POLICY_KEYS)
    if raw is None:
        return None
    before = len(errs)
    algorithm = V.one_of(V.require(raw, "algorithm", path, errs), V.join(path, "algorithm"),
                         errs, tuple(ALGORITHMS))
    limit = V.integer(raw.get("queue_limit_pkts", DEFAULT_QUEUE_LIMIT_PKTS),
                      V.join(path, "queue_limit_pkts"), errs, lo=1, hi=MAX_QUEUE_LIMIT_PKTS,
                      note=f"averages are bit<32> packets * 2^{C.AVG_FRAC_BITS}")
    given = [key for key in (*_NUMBER_KEYS, *_RED_OPTION_FLAGS, *_FRED_KEYS, *_UPTA_KEYS)
             if raw.get(key) is not None]                                   # null = absent
    v: dict[str, Any] = dict.fromkeys(_NUMBER_KEYS)
    for key in given:
        if key in _RED_OPTION_FLAGS or key in _FRED_KEYS or key in _UPTA_KEYS:
            continue
        v[key] = V.number(raw[key], V.join(path, key), errs,
                          ge=MIN_MCDT_PERIOD_MS if key == "mcdt_period_ms"
                          else 0 if key in _NON_NEGATIVE_KEYS else None,
                          gt=0 if key in _POSITIVE_KEYS else None)
    flags = {key: V.boolean(raw[key], V.join(path, key), errs) if key in given else False
             for key in _RED_OPTION_FLAGS}
    if algorithm is not None:
        _check_policy_keys(algorithm, given, path, errs)
    _check_policy_values(v, limit, path, errs)
    weight = _check_red_options(v, flags, path, errs)
    fred_v = _read_fred_keys(raw, given, limit, path, errs)
    upta_v = _read_upta_keys(raw, given, path, errs)
    if len(errs) > before or algorithm is None or limit is None:
        return None
    if weight is None and algorithm not in NON_RED_ALGORITHMS:
        weight = DEFAULT_EWMA_WEIGHT
    period_ms = v["mcdt_period_ms"]
    if algorithm == "MCDT" and period_ms is None:
        period_ms = mcdt.DEFAULT_PERIOD_MS
    chips_ratio, chips_weight = v["chips_max_tagged_ratio"], v["chips_ewma_weight"]
    if algorithm == "DCBT_CHIPS":
        chips_ratio = chips.DEFAULT_MAX_TAGGED_RATIO if chips_ratio is None else chips_ratio
        chips_weight = chips.DEFAULT_EWMA_WEIGHT if chips_weight is None else chips_weight
    return PortPolicy(algorithm=algorithm, queue_limit_pkts=limit, min_th_pkts=v["min_th_pkts"],
                      max_th_pkts=v["max_th_pkts"], max_p=v["max_p"], ewma_weight=weight,
                      tagged_th_pkts=v["tagged_th_pkts"],
                      untagged_th_pkts=v["untagged_th_pkts"],
                      burst_pkts=v["burst_pkts"], bandwidth_pps=v["bandwidth_pps"],
                      gentle=bool(flags["gentle"]), ecn=bool(flags["ecn"]),
                      harddrop=bool(flags["harddrop"]), wait=bool(flags["wait"]),
                      chips_max_tagged_ratio=chips_ratio, chips_ewma_weight=chips_weight,
                      mcdt_period_ms=period_ms, **(fred_v if algorithm == "FRED" else {}),
                      **(upta_v if algorithm == "UPTA" else {}))


def _read_upta_keys(raw: Mapping[str, Any], given: list[str], path: str,
                    errs: V.Errors) -> dict[str, Any]:
    """The UPTA keys, with their defaults."""
    mode = "B"
    if "upta_mode" in given:
        mode = V.one_of(raw["upta_mode"], V.join(path, "upta_mode"), errs, tuple(UPTA_MODES))
    slots = upta.UPTA_SLOTS_PER_PORT
    if "upta_flow_slots" in given:
        slots = V.integer(raw["upta_flow_slots"], V.join(path, "upta_flow_slots"), errs, lo=1,
                          hi=upta.UPTA_SLOTS_PER_PORT,
                          note="UPTA_SLOTS_PER_PORT slots per port (defines.p4)")
        if slots is not None and slots & (slots - 1):
            errs.add(V.join(path, "upta_flow_slots"), f"must be a power of two, got {slots}")
    k_shift = upta.DEFAULT_K_SHIFT
    if "upta_k_shift" in given:
        k_shift = V.integer(raw["upta_k_shift"], V.join(path, "upta_k_shift"), errs, lo=0,
                            hi=upta.MAX_K_SHIFT)
    q = None
    if "upta_tagged_loss_threshold" in given:
        q = V.number(raw["upta_tagged_loss_threshold"],
                     V.join(path, "upta_tagged_loss_threshold"), errs, ge=0)
        if q is not None and q > 1:
            errs.add(V.join(path, "upta_tagged_loss_threshold"), f"must be <= 1, got {V.fmt(q)}")
    capacity = None
    if "capacity_mbps" in given:
        capacity = V.number(raw["capacity_mbps"], V.join(path, "capacity_mbps"), errs, gt=0)
    return {"upta_mode": mode, "upta_flow_slots": slots, "upta_k_shift": k_shift,
            "upta_tagged_loss_threshold": q,
            "capacity_mbps": capacity}


def _read_fred_keys(raw: Mapping[str, Any], given: list[str], limit: int | None, path: str,
                    errs: V.Errors) -> dict[str, int]:
    """fred_minq_pkts and fred_flow_slots, with their defaults."""
    minq = fred.DEFAULT_MINQ_PKTS
    if "fred_minq_pkts" in given:
        minq = V.integer(raw["fred_minq_pkts"], V.join(path, "fred_minq_pkts"), errs, lo=0,
                         hi=(1 << fred.QLEN_BITS) - 1, note="fred_qlen is bit<16>")
    slots = fred.DEFAULT_TABLE_SLOTS
    if "fred_flow_slots" in given:
        slots = V.integer(raw["fred_flow_slots"], V.join(path, "fred_flow_slots"), errs, lo=1,
                          hi=fred.MAX_TABLE_SLOTS,
                          note="FRED_SLOTS_PER_PORT slots per port (defines.p4)")
        if slots is not None and slots & (slots - 1):
            errs.add(V.join(path, "fred_flow_slots"), f"must be a power of two, got {slots}")
    return {"fred_minq_pkts": minq, "fred_flow_slots": slots}


def _check_red_options(v: Mapping[str, Any], flags: Mapping[str, bool | None], path: str,
                       errs: V.Errors) -> float | None:
    """The RED options' own rules; returns the EWMA weight (from burst_pkts or ewma_weight)."""
    weight = v["ewma_weight"]
    if v["burst_pkts"] is not None:
        if weight is not None:
            errs.add(V.join(path, "burst_pkts"),
                     "give burst_pkts or ewma_weight, not both (tc-red derives the weight "
                     "from burst)")
        elif v["min_th_pkts"] is not None:
            try:
                weight = red.ewma_weight_from_burst(v["burst_pkts"], v["min_th_pkts"])
            except ValueError as exc:
                errs.add(V.join(path, "burst_pkts"), str(exc))
    if flags["adaptive"]:
        errs.add(V.join(path, "adaptive"),
                 "adaptive RED (tc-red adaptive) is not implemented; remove it or set false")
    if flags["harddrop"] and not flags["ecn"]:
        errs.add(V.join(path, "harddrop"), "only with ecn: true (without ecn RED drops anyway)")
    max_th, max_p = v["max_th_pkts"], v["max_p"]
    if flags["gentle"] and max_th is not None and max_p is not None and 0 < max_p <= 1:
        try:
            red.gentle_slope_q24(max_th, max_p)
        except ValueError as exc:
            errs.add(V.join(path, "gentle"), str(exc))
    if v["bandwidth_pps"] is not None:
        try:
            red.idle_decay_q32(DEFAULT_EWMA_WEIGHT if weight is None else weight,
                               v["bandwidth_pps"])
        except ValueError as exc:
            errs.add(V.join(path, "bandwidth_pps"), str(exc))
    if v["chips_ewma_weight"] is not None:
        try:
            ewma_shift_from_weight(v["chips_ewma_weight"])
        except ValueError as exc:
            errs.add(V.join(path, "chips_ewma_weight"), str(exc))
    return weight


def _check_policy_keys(algorithm: str, given: list[str], path: str, errs: V.Errors) -> None:
    """Which keys the algorithm needs and which it does not use."""
    uses_red = algorithm not in NON_RED_ALGORITHMS
    for key in _RED_KEYS:
        if uses_red and key not in given:
            errs.add(V.join(path, key), f"required for {algorithm}")
        elif not uses_red and key in given:
            errs.add(V.join(path, key), f"not used by {algorithm}")
    for key in ("ewma_weight", *_RED_OPTION_NUMBERS, *_RED_OPTION_FLAGS):
        if not uses_red and key in given:
            errs.add(V.join(path, key), f"not used by {algorithm}")
    for key in _MCDT_KEYS:
        if algorithm != "MCDT" and key in given:
            errs.add(V.join(path, key), "only for MCDT")
    for key in _FRED_KEYS:
        if algorithm != "FRED" and key in given:
            errs.add(V.join(path, key), "only for FRED")
    for key in _UPTA_KEYS:
        if algorithm != "UPTA" and key in given:
            errs.add(V.join(path, key), "only for UPTA")
    if algorithm == "FRED":
        for key in FRED_UNSUPPORTED_RED_OPTIONS:
            if key in given:
                errs.add(V.join(path, key), "not used by FRED (its rules have no gentle ramp, "
                         "ECN marking or wait; burst_pkts and bandwidth_pps apply)")
    for key in _CHIPS_KEYS:
        if algorithm != "DCBT_CHIPS" and key in given:
            errs.add(V.join(path, key), "only for DCBT_CHIPS")
    for key in _CBT_KEYS:
        if algorithm in CBT_ALGORITHMS and key not in given:
            errs.add(V.join(path, key), f"required for {algorithm}")
        elif algorithm not in CBT_ALGORITHMS and key in given:
            errs.add(V.join(path, key), "only for CBT_RED_ALL and CBT_RED_TCP_ONLY")


def _check_policy_values(v: Mapping[str, Any], limit: int | None, path: str,
                         errs: V.Errors) -> None:
    """Relations between the numbers that passed their own checks (None: absent or invalid)."""
    min_th, max_th, max_p = v["min_th_pkts"], v["max_th_pkts"], v["max_p"]
    one_pkt_scaled = 1 << C.AVG_FRAC_BITS
    thresholds_ok = False
    if max_th is not None and max_th > (MAX_QUEUE_LIMIT_PKTS if limit is None else limit):
        errs.add(V.join(path, "max_th_pkts"), f"must be <= queue_limit_pkts "
                 f"({MAX_QUEUE_LIMIT_PKTS if limit is None else limit}), got {V.fmt(max_th)}")
    elif min_th is not None and max_th is not None:   # both in 0..65535 now: no overflow
        if min_th >= max_th:
            errs.add(V.join(path, "min_th_pkts"),
                     f"must be < max_th_pkts ({V.fmt(max_th)}), got {V.fmt(min_th)}")
        elif round(max_th * one_pkt_scaled) - round(min_th * one_pkt_scaled) < 1:
            errs.add(V.join(path, "max_th_pkts"),
                     f"must exceed min_th_pkts by at least 2^-{C.AVG_FRAC_BITS} packets, "
                     f"got {V.fmt(max_th)} vs {V.fmt(min_th)}")
        else:
            thresholds_ok = True
    if max_p is not None and not 0 < max_p <= 1:
        errs.add(V.join(path, "max_p"), f"must be in (0, 1], got {V.fmt(max_p)}")
    elif max_p is not None and thresholds_ok:
        slope = max_p / (max_th - min_th) * (1 << C.SLOPE_FRAC_BITS)   # red.p4's red_slope_q24
        if round(slope) < 1 or round(slope) > MASK32:
            errs.add(V.join(path, "max_p"),
                     f"max_p / (max_th_pkts - min_th_pkts) = {slope:.6g} * 2^-"
                     f"{C.SLOPE_FRAC_BITS} does not fit red_slope_q24 (1..2^32-1)")
    if v["ewma_weight"] is not None:
        try:
            ewma_shift_from_weight(v["ewma_weight"])
        except ValueError as exc:
            errs.add(V.join(path, "ewma_weight"), str(exc))
    for key in _CBT_KEYS:
        th = v[key]
        if th is not None and limit is not None and th > limit:
            errs.add(V.join(path, key), f"must be <= queue_limit_pkts ({limit}), got {V.fmt(th)}")


# --- switch
_SWITCH_KEYS = ("p4runtime_addr", "device_id", "ports", "routes", "policies", "bfd")
_BFD_KEYS = ("router_addr", "edge_ports", "cpu_port", "paths")
_BFD_PATH_KEYS = ("id", "port", "egress_addr", "prefixes")
_ROUTE_KEYS = ("prefix", "port", "next_hop_mac")
_MAX_PORT = C.NUM_PORTS - 1


def _read_ports(value: object, path: str, errs: V.Errors) -> dict[int, PortConfig] | None:
    raw = V.mapping(value, path, errs, at_least_one="port", max_entries=C.NUM_PORTS,
                    entries="ports", capacity="NUM_PORTS")
    if raw is None:
        return None
    ports: dict[int, PortConfig] = {}
    port_of_mac: dict[str, object] = {}
    for key, port_raw in raw.items():
        port_path = V.join(path, key)
        port = V.integer(key, port_path, errs, lo=0, hi=_MAX_PORT)
        body = V.mapping(port_raw, port_path, errs, allowed=("mac",))
        if body is None:
            continue
        mac_path = V.join(port_path, "mac")
        mac = V.mac(V.require(body, "mac", port_path, errs), mac_path, errs)
        if mac is not None and mac in port_of_mac:   # the router's own MAC: one per port
            errs.add(mac_path, f"duplicate MAC {mac} (also port {port_of_mac[mac]})")
            mac = None
        elif mac is not None:
            port_of_mac[mac] = key
        if port is not None and mac is not None:
            ports[port] = PortConfig(port=port, mac=mac)
    return ports


def _read_routes(value: object, path: str, ports_path: str, known_ports: set[int] | None,
                 errs: V.Errors) -> list[tuple[str, Route]]:
    items = V.sequence(value, path, errs, max_items=C.ROUTE_TABLE_SIZE, item="route",
                       capacity="the ipv4_lpm table size")
    routes: list[tuple[str, Route]] = []
    seen: dict[ipaddress.IPv4Network, str] = {}
    for i, item in enumerate(items or []):
        route_path = V.index(path, i)
        raw = V.mapping(item, route_path, errs, allowed=_ROUTE_KEYS)
        if raw is None:
            continue
        prefix_path = V.join(route_path, "prefix")
        prefix = V.ipv4_network(V.require(raw, "prefix", route_path, errs), prefix_path, errs)
        if prefix is not None and prefix in seen:
            errs.add(prefix_path, f"duplicate prefix {prefix} (also {seen[prefix]})")
            prefix = None
        elif prefix is not None:
            seen[prefix] = route_path
        port_path = V.join(route_path, "port")
        port = V.integer(V.require(raw, "port", route_path, errs), port_path, errs,
                         lo=0, hi=_MAX_PORT)
        if port is not None and known_ports is not None and port not in known_ports:
            errs.add(port_path, f"unknown port {port} (not in {ports_path})")
            port = None
        mac = V.mac(V.require(raw, "next_hop_mac", route_path, errs),
                    V.join(route_path, "next_hop_mac"), errs)
        if prefix is not None and port is not None and mac is not None:
            routes.append((route_path, Route(prefix=prefix, port=port, next_hop_mac=mac)))
    return routes


_DEFAULT_KEY = -1      # the default policy's entry in the set of broken policies


def _read_policies(value: object, path: str, ports_path: str, known_ports: set[int] | None,
                   errs: V.Errors) -> tuple[dict[int, PortPolicy], PortPolicy | None, set[int]]:
    """(own policies, default policy, ports whose policy is invalid)."""
    raw = V.mapping(value, path, errs, max_entries=C.NUM_PORTS + 1, entries="policies",
                    capacity="one per port (NUM_PORTS) and a default:")
    own: dict[int, PortPolicy] = {}
    default: PortPolicy | None = None
    broken: set[int] = set()
    if raw is None:           # reported: no "port has no policy" for the routes too
        return own, None, {_DEFAULT_KEY}
    for key, policy_raw in raw.items():
        policy_path = V.join(path, key)
        if key == "default":
            default = _read_policy(policy_raw, policy_path, errs)
            if default is None:
                broken.add(_DEFAULT_KEY)
            continue
        if isinstance(key, bool) or not isinstance(key, int):
            errs.add(policy_path, "must be 'default' or a port number")
            continue
        port = V.integer(key, policy_path, errs, lo=0, hi=_MAX_PORT)
        if port is not None and known_ports is not None and port not in known_ports:
            errs.add(policy_path, f"unknown port {port} (not in {ports_path})")
        policy = _read_policy(policy_raw, policy_path, errs)
        if port is not None:
            if policy is None:
                broken.add(port)
            else:
                own[port] = policy
    return own, default, broken


def _ipv4_address(value: object, path: str, errs: V.Errors) -> str | None:
    if not isinstance(value, str):
        errs.add(path, f"must be an IPv4 address, got {V.describe(value)}")
        return None
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        errs.add(path, f"must be an IPv4 address, got {V.describe(value)}")
        return None


def _read_bfd(value: object, path: str, known_ports: set[int] | None,
              errs: V.Errors) -> BfdConfig | None:
    """The switch's `bfd` section (C-UPTA, upta §5.3)."""
    raw = V.mapping(value, path, errs, allowed=_BFD_KEYS)
    if raw is None:
        return None
    before = len(errs)
    addr = _ipv4_address(V.require(raw, "router_addr", path, errs),
                         V.join(path, "router_addr"), errs)

    def port_of(item: object, item_path: str) -> int | None:
        port = V.integer(item, item_path, errs, lo=0, hi=_MAX_PORT)
        if port is not None and known_ports is not None and port not in known_ports:
            errs.add(item_path, f"unknown port {port} (not in ports)")
        return port

    edge_path = V.join(path, "edge_ports")
    edges = V.sequence(raw.get("edge_ports", []), edge_path, errs,
                       max_items=C.NUM_PORTS, item="port", capacity="NUM_PORTS") or []
    edge_ports = [port_of(item, V.index(edge_path, i)) for i, item in enumerate(edges)]
    cpu_port = None
    if raw.get("cpu_port") is not None:
        cpu_port = V.integer(raw["cpu_port"], V.join(path, "cpu_port"), errs, lo=1, hi=_MAX_PORT)
        if cpu_port is not None and known_ports is not None and cpu_port in known_ports:
            errs.add(V.join(path, "cpu_port"), f"port {cpu_port} is a switch port (in ports)")
    paths_path = V.join(path, "paths")
    items = V.sequence(raw.get("paths", []), paths_path, errs, max_items=C.BFD_PATHS,
                       item="path", capacity="BFD_PATHS") or []
    paths: list[BfdPathConfig] = []
    ids: set[int] = set()
    for i, item in enumerate(items):
        ipath = V.index(paths_path, i)
        praw = V.mapping(item, ipath, errs, allowed=_BFD_PATH_KEYS)
        if praw is None:
            continue
        pid = V.integer(V.require(praw, "id", ipath, errs), V.join(ipath, "id"), errs,
                        lo=0, hi=C.BFD_PATHS - 1)
        if pid is not None and pid in ids:
            errs.add(V.join(ipath, "id"), f"duplicate path id {pid}")
        port = port_of(V.require(praw, "port", ipath, errs), V.join(ipath, "port"))
        egress = _ipv4_address(V.require(praw, "egress_addr", ipath, errs),
                               V.join(ipath, "egress_addr"), errs)
        pre_path = V.join(ipath, "prefixes")
        prefixes = [V.ipv4_network(p, V.index(pre_path, j), errs)
                    for j, p in enumerate(V.sequence(praw.get("prefixes", []), pre_path, errs,
                                                     max_items=C.BFD_PATHS, item="prefix",
                                                     capacity="BFD_PATHS") or [])]
        if pid is not None and port is not None and egress is not None \
                and all(p is not None for p in prefixes):
            ids.add(pid)
            paths.append(BfdPathConfig(pid, port, egress, tuple(prefixes)))  # type: ignore[arg-type]
    if len(errs) > before or addr is None:
        return None
    return BfdConfig(router_addr=addr, edge_ports=tuple(sorted({p for p in edge_ports
                                                                  if p is not None})),
                     cpu_port=cpu_port, paths=tuple(paths))


def _read_switch(name: object, value: object, path: str, errs: V.Errors) -> SwitchConfig | None:
    if not isinstance(name, str) or not _SWITCH_NAME_RE.match(name):
        errs.add(path, f"switch name must match [A-Za-z0-9_-]+, got {V.describe(name)}")
    raw = V.mapping(value, path, errs, allowed=_SWITCH_KEYS)
    if raw is None:
        return None
    before = len(errs)
    addr = V.host_port(V.require(raw, "p4runtime_addr", path, errs),
                       V.join(path, "p4runtime_addr"), errs)
    device_id = V.integer(raw.get("device_id", DEFAULT_DEVICE_ID), V.join(path, "device_id"), errs,
                          lo=0, hi=MAX_DEVICE_ID)

    ports_path = V.join(path, "ports")
    before_ports = len(errs)
    ports = _read_ports(V.require(raw, "ports", path, errs), ports_path, errs)
    # Membership checks only against a port list without errors (no cascades).
    known_ports = set(ports) if ports is not None and len(errs) == before_ports else None

    routes = _read_routes(_section(raw, "routes", []), V.join(path, "routes"), ports_path,
                          known_ports, errs)
    own, default, broken = _read_policies(_section(raw, "policies", {}), V.join(path, "policies"),
                                          ports_path, known_ports, errs)
    bfd = None if raw.get("bfd") is None else \
        _read_bfd(raw["bfd"], V.join(path, "bfd"), known_ports, errs)

    effective: dict[int, PortPolicy] = {}
    for port in sorted(ports or {}):
        policy = own.get(port, default)
        if policy is not None:
            effective[port] = policy
    reported: set[int] = set()
    for route_path, route in routes:
        if route.port in effective or route.port in reported:
            continue
        if route.port in broken or (_DEFAULT_KEY in broken and route.port not in own):
            continue  # its policy is invalid: already reported
        reported.add(route.port)
        errs.add(V.join(route_path, "port"),
                 f"port {route.port} has no policy (add policies.{route.port} or policies.default)")
    if len(errs) > before or addr is None or device_id is None or ports is None:
        return None
    return SwitchConfig(
        name=str(name),
        p4runtime_addr=addr,
        device_id=device_id,
        ports=MappingProxyType(dict(sorted(ports.items()))),
        routes=tuple(route for _, route in routes),
        policies=MappingProxyType(effective),
        default_policy=default,
        bfd=bfd,
    )


# --- top level
def _read_classifier(value: object, errs: V.Errors) -> ClassifierConfig:
    path = "classifier"
    raw = V.mapping(value, path, errs, allowed=("tagged_dscp",))
    if raw is None:
        return ClassifierConfig()
    list_path = V.join(path, "tagged_dscp")
    before = len(errs)
    dscps = V.sequence(raw.get("tagged_dscp", list(DEFAULT_TAGGED_DSCP)), list_path, errs,
                       max_items=C.CLASSIFIER_TABLE_SIZE, item="DSCP",
                       capacity="the classifier table size")
    if dscps is None:
        return ClassifierConfig()
    too_long = len(errs) > before
    first_index: dict[int, int] = {}
    for i, item in enumerate(dscps):
        item_path = V.index(list_path, i)
        dscp = V.integer(item, item_path, errs, lo=0, hi=63)
        if dscp is None:
            continue
        if dscp in first_index:
            errs.add(item_path, f"duplicate DSCP {dscp} (also at index {first_index[dscp]})")
        else:
            first_index[dscp] = i
    if not too_long and 1 + len(first_index) > C.CLASSIFIER_TABLE_SIZE:  # + the TCP entry
        errs.add(list_path, f"{len(first_index)} DSCPs + the TCP entry exceed the "
                            f"classifier table size {C.CLASSIFIER_TABLE_SIZE}")
    return ClassifierConfig(tagged_dscp=tuple(first_index))


def _read_active_flows(value: object, errs: V.Errors) -> ActiveFlowsConfig:
    path = "active_flows"
    raw = V.mapping(value, path, errs,
                    allowed=("expiry_interval_ms", "update_interval_ms", "max_flows"))
    if raw is None:
        return ActiveFlowsConfig()
    expiry = V.number(raw.get("expiry_interval_ms", DEFAULT_EXPIRY_INTERVAL_MS),
                      V.join(path, "expiry_interval_ms"), errs, ge=MIN_EXPIRY_INTERVAL_MS,
                      note="two 2 us flow epochs")
    update_path = V.join(path, "update_interval_ms")
    update = V.number(raw.get("update_interval_ms", DEFAULT_UPDATE_INTERVAL_MS), update_path,
                      errs, ge=MIN_LOOP_INTERVAL_MS,
                      note="below a P4Runtime read and write the loop only spins")
    if update is not None and expiry is not None and update > expiry:
        errs.add(update_path,
                 f"must be <= expiry_interval_ms ({V.fmt(expiry)}), got {V.fmt(update)}")
    max_flows = V.integer(raw.get("max_flows", DEFAULT_MAX_FLOWS), V.join(path, "max_flows"),
                          errs, lo=1, hi=MAX_MAX_FLOWS)
    return ActiveFlowsConfig(
        expiry_interval_ms=float(expiry if expiry is not None else DEFAULT_EXPIRY_INTERVAL_MS),
        update_interval_ms=float(update if update is not None else DEFAULT_UPDATE_INTERVAL_MS),
        max_flows=max_flows if max_flows is not None else DEFAULT_MAX_FLOWS,
    )


def parse_config(data: object) -> Config:
    """Validate a config tree (as loaded from YAML); raise ConfigError listing every problem."""
    errs = V.Errors()
    raw = V.mapping(data, "", errs, allowed=("classifier", "active_flows", "switches"))
    if raw is None:
        raise ConfigError(errs.items)
    classifier = _read_classifier(_section(raw, "classifier", {}), errs)
    active_flows = _read_active_flows(_section(raw, "active_flows", {}), errs)
    switches_raw = V.mapping(V.require(raw, "switches", "", errs), "switches", errs,
                             at_least_one="switch", max_entries=MAX_SWITCHES,
                             entries="switches", capacity="the maximum")
    switches: dict[str, SwitchConfig] = {}
    endpoints: dict[tuple[str, int, int], SwitchConfig] = {}
    for name, switch_raw in (switches_raw or {}).items():
        path = V.join("switches", name)
        switch = _read_switch(name, switch_raw, path, errs)
        if switch is None:
            continue
        keys = endpoint_keys(switch.p4runtime_addr, switch.device_id)
        other = next((endpoints[key] for key in keys if key in endpoints), None)
        if other is not None:
            alias = "" if other.p4runtime_addr == switch.p4runtime_addr \
                else f" at {other.p4runtime_addr}"
            errs.add(V.join(path, "p4runtime_addr"),
                     f"{switch.p4runtime_addr} device_id {switch.device_id} is also switch "
                     f"{other.name}{alias}")
        endpoints.update(dict.fromkeys(keys, switch))
        switches[switch.name] = switch
    if errs.items:
        raise ConfigError(errs.items)
    return Config(switches=MappingProxyType(switches), classifier=classifier,
                  active_flows=active_flows)


# --- YAML
class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that records duplicate keys instead of keeping the last one, and
    stops at MAX_YAML_DEPTH levels of nesting or MAX_YAML_NODES nodes (before
    anything deeper or bigger is built: PyYAML recurses per level and keeps
    every node)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[str] = []
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        self._nodes += 1
        if self._depth >= MAX_YAML_DEPTH or self._nodes > MAX_YAML_NODES:
            what = (f"nested deeper than {MAX_YAML_DEPTH} levels" if self._depth >= MAX_YAML_DEPTH
                    else f"more than {MAX_YAML_NODES} values")
            raise yaml.composer.ComposerError(
                None, None, f"{what}: not an mmaqm config", self.peek_event().start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:
            continue  # unhashable key: construct_mapping reports it
        if duplicate:
            loader.duplicates.append(f"line {key_node.start_mark.line + 1}: duplicate key {key!r}")
    return loader.construct_mapping(node, deep=True)


def _construct_int(loader: _StrictLoader, node: yaml.ScalarNode) -> int:
    """An int below 2^MAX_YAML_INT_BITS: a longer one is no config value, and Python
    cannot even print one of more than 4300 digits (int_max_str_digits)."""
    text = str(node.value).replace("_", "").lstrip("+-")
    if len(text) > MAX_YAML_INT_BITS + 2:   # binary digits and "0b": longer is >= 2^128
        raise yaml.constructor.ConstructorError(
            None, None, f"integer of {len(text)} digits: too large", node.start_mark)
    value = loader.construct_yaml_int(node)
    if abs(value) >> MAX_YAML_INT_BITS:
        raise yaml.constructor.ConstructorError(
            None, None, f"integer >= 2^{MAX_YAML_INT_BITS}: too large", node.start_mark)
    return value


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def load_yaml(text: str, *, source: str = "<config>") -> object:
    loader = _StrictLoader(text)
    loader.name = source                 # in the marks of PyYAML's messages
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        raise ConfigError([f"{source}: invalid YAML: {exc}"]) from exc
    except ValueError as exc:          # a scalar PyYAML cannot convert, e.g. 2001-02-30
        raise ConfigError([f"{source}: invalid YAML value: {exc}"]) from exc
    except RecursionError as exc:      # a safety net: MAX_YAML_DEPTH stops nesting first
        raise ConfigError([f"{source}: invalid YAML: nested too deeply"]) from exc
    finally:
        loader.dispose()
    if loader.duplicates:
        raise ConfigError([f"{source}: {message}" for message in loader.duplicates])
    return data


def read_config_text(path: str | Path) -> str:
    """The file's text: at most MAX_CONFIG_BYTES, UTF-8 (V.read_utf8). Raises
    ConfigError naming the cause, OSError if it cannot be read."""
    try:
        return V.read_utf8(path, MAX_CONFIG_BYTES, what="an mmaqm config")
    except V.InputFileError as exc:
        raise ConfigError([str(exc)]) from None


def load_config(path: str | Path) -> Config:
    """Read and validate a YAML config file."""
    return parse_config(load_yaml(read_config_text(path), source=str(path)))
