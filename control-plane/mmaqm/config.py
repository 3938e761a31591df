"""mmaqm controller configuration: YAML loading and complete validation.

Everything is validated before anything is written to a switch. Errors are
collected, not raised one at a time: :class:`ConfigError` carries them all in
``.errors``, each starting with the dotted path of the offending field, e.g.
``switches.s1.policies.2.min_th_pkts: must be < max_th_pkts (15), got 20``.
Unknown keys are errors everywhere (they are usually typos), and so are
duplicate keys in one YAML mapping (PyYAML would silently keep the last one).

Schema (defaults in brackets)::

  classifier:                      # optional
    tagged_dscp: [46, 34]          # [46, 34] = EF, AF41. DSCPs of tagged UDP
                                   # (cbt §3); ints 0..63, no duplicates; may be []
  active_flows:                    # optional; D-CBT active-flow counting (dcbt §3.1)
    expiry_interval_ms: 300        # [300] a flow is active if a packet of it
                                   # arrived in the last interval; >= 0.004
    update_interval_ms: 50         # [50] how often the controller recomputes
                                   # shares; > 0 and <= expiry_interval_ms
  switches:                        # required, at least one
    s1:                            # switch name: [A-Za-z0-9_-]+
      p4runtime_addr: 127.0.0.1:9559   # required; host:port ([v6addr]:port for IPv6)
      device_id: 1                 # [1] P4Runtime device id, >= 0
      ports:                       # required, non-empty; keys are ints 0..NUM_PORTS-1
        1: {mac: "02:00:00:00:00:01"}  # required mac: the router's own MAC on this
                                       # port, unicast, not all-zero; quote it
      routes:                      # [[]] list of
        - prefix: 10.0.1.0/24      #   required IPv4 network, no host bits set, unique
          port: 1                  #   required, must be in ports and have a policy
          next_hop_mac: "02:00:00:01:00:01"   # required unicast MAC
      policies:                    # [{}]
        default: {...policy...}    # applied to every port in ports without its own entry
        2: {...policy...}          # per port; the port must be in ports

Policy keys:

  algorithm           required: DROP_TAIL | RED | CBT_RED_ALL | CBT_RED_TCP_ONLY | DCBT
  queue_limit_pkts    [64] int 1..65535 (the P4 queue limit; see MAX_QUEUE_LIMIT_PKTS)
  min_th_pkts         RED thresholds, numbers, 0 <= min_th_pkts < max_th_pkts <= queue_limit_pkts;
  max_th_pkts         required unless DROP_TAIL, not allowed for DROP_TAIL
  max_p               RED max_p in (0, 1]; required unless DROP_TAIL, not allowed for DROP_TAIL
  ewma_weight         [2^-9 = 0.001953125] must be 2^-k, k in 0..31 (the data plane
                      shifts); not allowed for DROP_TAIL
  tagged_th_pkts      CBT static class thresholds (cbt §3), numbers in 0..queue_limit_pkts;
  untagged_th_pkts    required for CBT_RED_ALL / CBT_RED_TCP_ONLY, not allowed otherwise
  tm_queue_depth_pkts optional int > queue_limit_pkts: the BMv2 traffic-manager queue
                      depth, which must never drop behind the P4 program (DESIGN §1)
  link_rate_pps       optional int >= 1, informational for runners: the BMv2 queue
                      rate of that port

Every port that a route uses must end up with a policy (its own or default).
The result is a tree of frozen dataclasses (:class:`Config`) in which every
port's effective policy is resolved; :func:`policy_action_params` turns a
policy into the parameters of the P4 action ``set_port_policy`` (aqm.p4).
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
from .algorithms import cbt, dcbt, red
from .fixedpoint import (
    MASK32,
    POLICY_PARAM_BITS,
    check_policy_params,
    ewma_shift_from_weight,
    to_scaled,
)

DEFAULT_TAGGED_DSCP: tuple[int, ...] = (46, 34)      # EF, AF41
DEFAULT_EXPIRY_INTERVAL_MS = 300.0                   # dcbt §3.1
DEFAULT_UPDATE_INTERVAL_MS = 50.0
DEFAULT_DEVICE_ID = 1
DEFAULT_QUEUE_LIMIT_PKTS = 64
DEFAULT_EWMA_WEIGHT = 2.0**-9                        # cbt §2.1 "typical weighting of 1/512"
# to_scaled() in averages.p4 is pkts << 16 in bit<32>: occupancies of 65536
# packets and more wrap, so the queue (and every threshold) stays below that.
MAX_QUEUE_LIMIT_PKTS = MASK32 >> C.AVG_FRAC_BITS     # 65535
MAX_FLOW_EPOCH_SHIFT = 40
MIN_EXPIRY_INTERVAL_MS = 2 * 2**1 / 1000             # flow_epoch_shift_for() >= 1

CBT_ALGORITHMS = frozenset({"CBT_RED_ALL", "CBT_RED_TCP_ONLY"})
_SWITCH_NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")
_MAC_RE = re.compile(r"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$")
_HOSTNAME_RE = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                          r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
_MISSING: Any = object()


class ConfigError(ValueError):
    """Invalid configuration. ``errors`` lists every problem, "<dotted.path>: <message>"."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(self.errors))


# ------------------------------------------------------------- result types
@dataclass(frozen=True)
class PortPolicy:
    """One port's AQM policy. Fields not used by the algorithm are None.

    ``ewma_weight`` defaults to 2^-9 for every algorithm but DROP_TAIL;
    ``ewma_shift`` is computed from it (w = 2^-ewma_shift; 0 for DROP_TAIL,
    which keeps no average). Constructing an invalid policy raises
    ConfigError with paths relative to the policy.
    """

    algorithm: str
    queue_limit_pkts: int = DEFAULT_QUEUE_LIMIT_PKTS
    min_th_pkts: float | None = None
    max_th_pkts: float | None = None
    max_p: float | None = None
    ewma_weight: float | None = None
    tagged_th_pkts: float | None = None
    untagged_th_pkts: float | None = None
    tm_queue_depth_pkts: int | None = None
    link_rate_pps: int | None = None
    ewma_shift: int = field(init=False)

    def __post_init__(self) -> None:
        uses_average = _is_algorithm(self.algorithm) and self.algorithm != "DROP_TAIL"
        if uses_average and self.ewma_weight is None:
            object.__setattr__(self, "ewma_weight", DEFAULT_EWMA_WEIGHT)
        problems = _policy_problems(_policy_values(self))
        if problems:
            raise ConfigError([f"{key}: {message}" for key, message in problems])
        shift = 0 if self.ewma_weight is None else ewma_shift_from_weight(self.ewma_weight)
        object.__setattr__(self, "ewma_shift", shift)

    @property
    def algorithm_id(self) -> int:
        return C.ALGORITHMS[self.algorithm]


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


@dataclass(frozen=True)
class ClassifierConfig:
    tagged_dscp: tuple[int, ...] = DEFAULT_TAGGED_DSCP


@dataclass(frozen=True)
class ActiveFlowsConfig:
    expiry_interval_ms: float = DEFAULT_EXPIRY_INTERVAL_MS
    update_interval_ms: float = DEFAULT_UPDATE_INTERVAL_MS

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


def policy_epoch_from_clock(now_ns: int, installed: int | None) -> int:
    """A new policy epoch (driver.next_policy_epoch): wall-clock milliseconds mod 2^32, skipping 0 and the installed epoch."""
    epoch = now_ns // 1_000_000 % 2**32
    while epoch == 0 or epoch == installed:
        epoch = (epoch + 1) % 2**32
    return epoch


def policy_action_params(
    policy: PortPolicy,
    *,
    policy_epoch: int,
    flow_epoch_shift: int,
    share_tagged: float = 1.0,
    share_untagged: float = 1.0,
) -> dict[str, int]:
    """Parameters of action set_port_policy (aqm.p4), in declaration order.

    policy_epoch (32 bits): a value the port's packets have not carried before
    resets the port's averages and RED state (see policy_epoch_from_clock);
    keep it for shares-only updates. The registers power up at epoch 0, so
    epoch 0 never resets. flow_epoch_shift: 0 = no flow reports, else 1..40.
    D-CBT: untagged_th_scaled and dcbt_tagged_share_q16 come from the shares
    (dcbt §3.1); CBT: the static thresholds (cbt §3). Unused parameters are 0.
    """
    _check_int("policy_epoch", policy_epoch, 0, (1 << POLICY_PARAM_BITS["policy_epoch"]) - 1)
    _check_int("flow_epoch_shift", flow_epoch_shift, 0, MAX_FLOW_EPOCH_SHIFT)
    for name, share in (("share_tagged", share_tagged), ("share_untagged", share_untagged)):
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
            raise ValueError(f"{name} must be in [0, 1], got {share!r}")
    params = dict.fromkeys(POLICY_PARAM_BITS, 0)
    params.update(
        algorithm=policy.algorithm_id,
        queue_limit_pkts=policy.queue_limit_pkts,
        policy_epoch=policy_epoch,
        flow_epoch_shift=flow_epoch_shift,
    )
    if policy.algorithm != "DROP_TAIL":
        assert policy.min_th_pkts is not None and policy.max_th_pkts is not None
        assert policy.max_p is not None
        params.update(red.action_params(policy.min_th_pkts, policy.max_th_pkts, policy.max_p))
        params["ewma_shift"] = policy.ewma_shift
    if policy.algorithm in CBT_ALGORITHMS:
        assert policy.tagged_th_pkts is not None and policy.untagged_th_pkts is not None
        params.update(cbt.action_params(policy.tagged_th_pkts, policy.untagged_th_pkts))
    elif policy.algorithm == "DCBT":
        assert policy.min_th_pkts is not None and policy.max_th_pkts is not None
        assert policy.max_p is not None
        params.update(dcbt.action_params(share_tagged, share_untagged, policy.min_th_pkts,
                                         policy.max_th_pkts, policy.max_p))
    return check_policy_params(params)


def _check_int(name: str, value: int, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{name} must be an int in {lo}..{hi}, got {value!r}")


# ------------------------------------------------------------ validation
class _Errors:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(f"{path}: {message}")


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def _describe(value: object) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _fmt(value: float) -> str:
    """A number as the user would write it: 50.0 -> "50", 0.1 -> "0.1"."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


def _mapping(value: object, path: str, errs: _Errors) -> Mapping[Any, Any] | None:
    if not isinstance(value, Mapping):
        errs.add(path or "(root)", f"must be a mapping, got {_describe(value)}")
        return None
    return value


def _unknown_keys(raw: Mapping[Any, Any], path: str, allowed: tuple[str, ...], errs: _Errors) -> None:
    for key in raw:
        if key not in allowed:
            errs.add(_join(path, key), f"unknown key (allowed: {', '.join(allowed)})")


def _section(raw: Mapping[Any, Any], key: str, default: Any) -> Any:
    """An optional section; absent or empty (YAML null) means the default."""
    value = raw.get(key)
    return default if value is None else value


def _get(raw: Mapping[Any, Any], key: str, path: str, errs: _Errors, default: Any) -> Any:
    """raw[key], or default; a missing key without default is reported as required."""
    if key in raw:
        return raw[key]
    if default is _MISSING:
        errs.add(_join(path, key), "required")
    return default


def _int(raw: Mapping[Any, Any], key: str, path: str, errs: _Errors, *, default: Any = _MISSING,
         lo: int | None = None, hi: int | None = None) -> int | None:
    value = _get(raw, key, path, errs, default)
    if value is _MISSING or value is None and default is None:
        return None
    return _as_int(value, _join(path, key), errs, lo=lo, hi=hi)


def _as_int(value: object, path: str, errs: _Errors, *, lo: int | None = None,
            hi: int | None = None) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        errs.add(path, f"must be an integer, got {_describe(value)}")
        return None
    if lo is not None and hi is not None and not lo <= value <= hi:
        errs.add(path, f"must be in {lo}..{hi}, got {value}")
        return None
    if lo is not None and value < lo:
        errs.add(path, f"must be >= {lo}, got {value}")
        return None
    if hi is not None and value > hi:
        errs.add(path, f"must be <= {hi}, got {value}")
        return None
    return value


def _number(raw: Mapping[Any, Any], key: str, path: str, errs: _Errors, *,
            default: Any = _MISSING) -> float | None:
    """A finite int or float (YAML 1.1 reads 1e-3 as a string: say so)."""
    value = _get(raw, key, path, errs, default)
    if value is _MISSING or value is None and default is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        hint = ""
        if isinstance(value, str):
            try:
                float(value)
                hint = " (YAML 1.1 reads exponents without a dot as text: write 1.0e-3)"
            except ValueError:
                pass
        errs.add(_join(path, key), f"must be a number, got {_describe(value)}{hint}")
        return None
    if not math.isfinite(value):
        errs.add(_join(path, key), f"must be finite, got {value!r}")
        return None
    return value


def _parse_mac(value: object, path: str, errs: _Errors) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        errs.add(path, f"must be a quoted string: YAML read the unquoted MAC as the number {value}")
        return None
    if not isinstance(value, str) or not _MAC_RE.match(value):
        errs.add(path, f"must be a MAC like \"02:00:00:00:00:01\", got {_describe(value)}")
        return None
    octets = [int(part, 16) for part in value.split(":")]
    if octets[0] & 1:
        errs.add(path, f"must be a unicast MAC (first octet even), got {value!r}")
        return None
    if not any(octets):
        errs.add(path, f"must not be the all-zero MAC, got {value!r}")
        return None
    return value.lower()


def _parse_prefix(value: object, path: str, errs: _Errors) -> ipaddress.IPv4Network | None:
    if not isinstance(value, str) or "/" not in value:
        errs.add(path, f"must be an IPv4 network like 10.0.1.0/24, got {_describe(value)}")
        return None
    try:
        return ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        if "host bits set" in str(exc):
            network = ipaddress.IPv4Network(value, strict=False)
            errs.add(path, f"host bits set in {value!r} (the network is {network})")
        else:
            errs.add(path, f"must be an IPv4 network like 10.0.1.0/24, got {value!r} ({exc})")
        return None


def _parse_addr(value: object, path: str, errs: _Errors) -> str | None:
    """host:port, host = IPv4 address, hostname or [IPv6 address]."""
    if not isinstance(value, str):
        errs.add(path, f"must be a string host:port, got {_describe(value)}")
        return None
    host, sep, port = value.rpartition(":")
    problem = None
    if not sep or not host:
        problem = "must be host:port"
    elif not port.isdigit() or not 1 <= int(port) <= 65535:
        problem = f"port must be 1..65535, got {port!r}"
    elif host.startswith("["):
        try:
            if not host.endswith("]"):
                raise ValueError(host)
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            problem = f"bad IPv6 address {host!r}"
    elif ":" in host:
        problem = "an IPv6 address must be in brackets: [addr]:port"
    elif not _HOSTNAME_RE.match(host):
        problem = f"bad host {host!r}"
    if problem:
        errs.add(path, f"{problem}, got {value!r}")
        return None
    return value


# --- policy
_POLICY_KEYS = ("algorithm", "queue_limit_pkts", "min_th_pkts", "max_th_pkts", "max_p",
                "ewma_weight", "tagged_th_pkts", "untagged_th_pkts", "tm_queue_depth_pkts",
                "link_rate_pps")
_RED_KEYS = ("min_th_pkts", "max_th_pkts", "max_p")
_CBT_KEYS = ("tagged_th_pkts", "untagged_th_pkts")


def _policy_values(policy: PortPolicy) -> dict[str, Any]:
    return {key: getattr(policy, key) for key in _POLICY_KEYS}


def _is_algorithm(value: object) -> bool:
    return isinstance(value, str) and value in C.ALGORITHMS


def _policy_problems(v: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Semantic checks of a policy whose fields have the right types (None = absent)."""
    problems: list[tuple[str, str]] = []
    algorithm = v["algorithm"]
    if not _is_algorithm(algorithm):
        return [("algorithm", f"must be one of {', '.join(C.ALGORITHMS)}, got {_describe(algorithm)}")]
    limit = v["queue_limit_pkts"]
    if not 1 <= limit <= MAX_QUEUE_LIMIT_PKTS:
        problems.append(("queue_limit_pkts", f"must be in 1..{MAX_QUEUE_LIMIT_PKTS} (averages are "
                                             f"bit<32> packets * 2^{C.AVG_FRAC_BITS}), got {limit}"))
        limit = None
    uses_red = algorithm != "DROP_TAIL"
    for key in _RED_KEYS:
        if uses_red and v[key] is None:
            problems.append((key, f"required for {algorithm}"))
        elif not uses_red and v[key] is not None:
            problems.append((key, "not used by DROP_TAIL"))
    if not uses_red and v["ewma_weight"] is not None:
        problems.append(("ewma_weight", "not used by DROP_TAIL"))
    for key in _CBT_KEYS:
        if algorithm in CBT_ALGORITHMS and v[key] is None:
            problems.append((key, f"required for {algorithm}"))
        elif algorithm not in CBT_ALGORITHMS and v[key] is not None:
            problems.append((key, "only for CBT_RED_ALL and CBT_RED_TCP_ONLY"))

    min_th, max_th, max_p = v["min_th_pkts"], v["max_th_pkts"], v["max_p"]
    if min_th is not None and min_th < 0:
        problems.append(("min_th_pkts", f"must be >= 0, got {_fmt(min_th)}"))
        min_th = None
    if min_th is not None and max_th is not None and min_th >= max_th:
        problems.append(("min_th_pkts", f"must be < max_th_pkts ({_fmt(max_th)}), got {_fmt(min_th)}"))
    elif min_th is not None and max_th is not None and to_scaled(max_th) - to_scaled(min_th) < 1:
        problems.append(("max_th_pkts", f"must exceed min_th_pkts by at least 2^-{C.AVG_FRAC_BITS} "
                                        f"packets, got {_fmt(max_th)} vs {_fmt(min_th)}"))
    if max_th is not None and limit is not None and max_th > limit:
        problems.append(("max_th_pkts", f"must be <= queue_limit_pkts ({limit}), got {_fmt(max_th)}"))
    if max_p is not None and not 0 < max_p <= 1:
        problems.append(("max_p", f"must be in (0, 1], got {_fmt(max_p)}"))
    elif (max_p is not None and min_th is not None and max_th is not None
          and 0 <= min_th < max_th <= MAX_QUEUE_LIMIT_PKTS):
        slope = max_p / (max_th - min_th) * (1 << C.SLOPE_FRAC_BITS)
        if round(slope) < 1 or round(slope) > MASK32:
            problems.append(("max_p", f"max_p / (max_th_pkts - min_th_pkts) = {slope:.6g} * 2^-"
                                      f"{C.SLOPE_FRAC_BITS} does not fit red_slope_q24 (1..2^32-1)"))
    weight = v["ewma_weight"]
    if weight is not None:
        try:
            ewma_shift_from_weight(weight)
        except ValueError as exc:
            problems.append(("ewma_weight", str(exc)))
    for key in _CBT_KEYS:
        th = v[key]
        if th is not None and th < 0:
            problems.append((key, f"must be >= 0, got {_fmt(th)}"))
        elif th is not None and limit is not None and th > limit:
            problems.append((key, f"must be <= queue_limit_pkts ({limit}), got {_fmt(th)}"))
    depth = v["tm_queue_depth_pkts"]
    if depth is not None and limit is not None and depth <= limit:
        problems.append(("tm_queue_depth_pkts",
                         f"must be > queue_limit_pkts ({limit}) so the traffic manager never "
                         f"drops behind the P4 program, got {depth}"))
    rate = v["link_rate_pps"]
    if rate is not None and rate < 1:
        problems.append(("link_rate_pps", f"must be >= 1, got {rate}"))
    return problems


def _parse_policy(value: object, path: str, errs: _Errors) -> PortPolicy | None:
    raw = _mapping(value, path, errs)
    if raw is None:
        return None
    _unknown_keys(raw, path, _POLICY_KEYS, errs)
    before = len(errs.items)
    algorithm = _get(raw, "algorithm", path, errs, _MISSING)
    values: dict[str, Any] = {
        "algorithm": algorithm,
        "queue_limit_pkts": _int(raw, "queue_limit_pkts", path, errs,
                                 default=DEFAULT_QUEUE_LIMIT_PKTS),
        "tm_queue_depth_pkts": _int(raw, "tm_queue_depth_pkts", path, errs, default=None),
        "link_rate_pps": _int(raw, "link_rate_pps", path, errs, default=None),
    }
    for key in _RED_KEYS + _CBT_KEYS:
        values[key] = _number(raw, key, path, errs, default=None)
    values["ewma_weight"] = _number(raw, "ewma_weight", path, errs, default=None)
    if algorithm is _MISSING or len(errs.items) > before:
        # Type errors or no algorithm: the semantic checks would only echo them.
        if algorithm is not _MISSING and not _is_algorithm(algorithm):
            errs.add(_join(path, "algorithm"),
                     f"must be one of {', '.join(C.ALGORITHMS)}, got {_describe(algorithm)}")
        return None
    problems = _policy_problems(values)
    for key, message in problems:
        errs.add(_join(path, key), message)
    return None if problems else PortPolicy(**values)


# --- switch
_SWITCH_KEYS = ("p4runtime_addr", "device_id", "ports", "routes", "policies")


def _parse_ports(value: object, path: str, errs: _Errors) -> dict[int, PortConfig] | None:
    raw = _mapping(value, path, errs)
    if raw is None:
        return None
    if not raw:
        errs.add(path, "must list at least one port")
    ports: dict[int, PortConfig] = {}
    for key, port_raw in raw.items():
        port_path = _join(path, key)
        port = _as_int(key, port_path, errs, lo=0, hi=C.NUM_PORTS - 1)
        body = _mapping(port_raw, port_path, errs)
        if body is None:
            continue
        _unknown_keys(body, port_path, ("mac",), errs)
        mac_value = _get(body, "mac", port_path, errs, _MISSING)
        mac = None if mac_value is _MISSING else _parse_mac(mac_value, _join(port_path, "mac"), errs)
        if port is not None and mac is not None:
            ports[port] = PortConfig(port=port, mac=mac)
    return ports


def _parse_routes(value: object, path: str, ports_path: str, known_ports: set[int] | None,
                  errs: _Errors) -> list[tuple[str, Route]]:
    if not isinstance(value, list):
        errs.add(path, f"must be a list, got {_describe(value)}")
        return []
    routes: list[tuple[str, Route]] = []
    seen: dict[ipaddress.IPv4Network, str] = {}
    for index, item in enumerate(value):
        route_path = _join(path, index)
        raw = _mapping(item, route_path, errs)
        if raw is None:
            continue
        _unknown_keys(raw, route_path, ("prefix", "port", "next_hop_mac"), errs)
        prefix_value = _get(raw, "prefix", route_path, errs, _MISSING)
        prefix = None
        if prefix_value is not _MISSING:
            prefix = _parse_prefix(prefix_value, _join(route_path, "prefix"), errs)
        if prefix is not None:
            if prefix in seen:
                errs.add(_join(route_path, "prefix"), f"duplicate prefix {prefix} (also {seen[prefix]})")
                prefix = None
            else:
                seen[prefix] = route_path
        port = _int(raw, "port", route_path, errs, lo=0, hi=C.NUM_PORTS - 1)
        if port is not None and known_ports is not None and port not in known_ports:
            errs.add(_join(route_path, "port"), f"unknown port {port} (not in {ports_path})")
            port = None
        mac_value = _get(raw, "next_hop_mac", route_path, errs, _MISSING)
        mac = None
        if mac_value is not _MISSING:
            mac = _parse_mac(mac_value, _join(route_path, "next_hop_mac"), errs)
        if prefix is not None and port is not None and mac is not None:
            routes.append((route_path, Route(prefix=prefix, port=port, next_hop_mac=mac)))
    if len(value) > C.ROUTE_TABLE_SIZE:
        errs.add(path, f"{len(value)} routes exceed the ipv4_lpm table size {C.ROUTE_TABLE_SIZE}")
    return routes


def _parse_policies(value: object, path: str, ports_path: str, known_ports: set[int] | None,
                    errs: _Errors) -> tuple[dict[int, PortPolicy], PortPolicy | None, set[int]]:
    """(own policies, default policy, ports whose policy is invalid)."""
    raw = _mapping(value, path, errs)
    own: dict[int, PortPolicy] = {}
    default: PortPolicy | None = None
    broken: set[int] = set()
    if raw is None:
        return own, None, broken
    for key, policy_raw in raw.items():
        policy_path = _join(path, key)
        if key == "default":
            default = _parse_policy(policy_raw, policy_path, errs)
            if default is None:
                broken.add(-1)
            continue
        if isinstance(key, bool) or not isinstance(key, int):
            errs.add(policy_path, "must be 'default' or a port number")
            continue
        port = _as_int(key, policy_path, errs, lo=0, hi=C.NUM_PORTS - 1)
        if port is not None and known_ports is not None and port not in known_ports:
            errs.add(policy_path, f"unknown port {port} (not in {ports_path})")
        policy = _parse_policy(policy_raw, policy_path, errs)
        if port is not None:
            if policy is None:
                broken.add(port)
            else:
                own[port] = policy
    return own, default, broken


def _parse_switch(name: object, value: object, path: str, errs: _Errors) -> SwitchConfig | None:
    if not isinstance(name, str) or not _SWITCH_NAME_RE.match(name):
        errs.add(path, f"switch name must match [A-Za-z0-9_-]+, got {_describe(name)}")
    raw = _mapping(value, path, errs)
    if raw is None:
        return None
    before = len(errs.items)
    _unknown_keys(raw, path, _SWITCH_KEYS, errs)
    addr_value = _get(raw, "p4runtime_addr", path, errs, _MISSING)
    addr = None if addr_value is _MISSING else _parse_addr(addr_value, _join(path, "p4runtime_addr"), errs)
    device_id = _int(raw, "device_id", path, errs, default=DEFAULT_DEVICE_ID, lo=0, hi=2**64 - 1)

    ports_path = _join(path, "ports")
    before_ports = len(errs.items)
    ports_value = _get(raw, "ports", path, errs, _MISSING)
    ports = None if ports_value is _MISSING else _parse_ports(ports_value, ports_path, errs)
    # Membership checks only against a port list without errors (no cascades).
    known_ports = set(ports) if ports is not None and len(errs.items) == before_ports else None

    routes = _parse_routes(_section(raw, "routes", []), _join(path, "routes"), ports_path,
                           known_ports, errs)
    own, default, broken = _parse_policies(_section(raw, "policies", {}), _join(path, "policies"),
                                           ports_path, known_ports, errs)

    effective: dict[int, PortPolicy] = {}
    for port in sorted(ports or {}):
        policy = own.get(port, default)
        if policy is not None:
            effective[port] = policy
    reported: set[int] = set()
    for route_path, route in routes:
        if route.port in effective or route.port in reported:
            continue
        if route.port in broken or (-1 in broken and route.port not in own):
            continue  # its policy is invalid: already reported
        reported.add(route.port)
        errs.add(_join(route_path, "port"),
                 f"port {route.port} has no policy (add policies.{route.port} or policies.default)")
    if len(errs.items) > before or addr is None or device_id is None or ports is None:
        return None
    return SwitchConfig(
        name=str(name),
        p4runtime_addr=addr,
        device_id=device_id,
        ports=MappingProxyType(dict(sorted(ports.items()))),
        routes=tuple(route for _, route in routes),
        policies=MappingProxyType(effective),
        default_policy=default,
    )


# --- top level
def _parse_classifier(value: object, errs: _Errors) -> ClassifierConfig:
    raw = _mapping(value, "classifier", errs)
    if raw is None:
        return ClassifierConfig()
    _unknown_keys(raw, "classifier", ("tagged_dscp",), errs)
    dscps = raw.get("tagged_dscp", list(DEFAULT_TAGGED_DSCP))
    if not isinstance(dscps, list):
        errs.add("classifier.tagged_dscp", f"must be a list, got {_describe(dscps)}")
        return ClassifierConfig()
    first_index: dict[int, int] = {}
    for index, dscp in enumerate(dscps):
        item_path = f"classifier.tagged_dscp.{index}"
        if _as_int(dscp, item_path, errs, lo=0, hi=63) is None:
            continue
        if dscp in first_index:
            errs.add(item_path, f"duplicate DSCP {dscp} (also at index {first_index[dscp]})")
        else:
            first_index[dscp] = index
    if 1 + len(first_index) > C.CLASSIFIER_TABLE_SIZE:  # + the TCP entry
        errs.add("classifier.tagged_dscp", f"{len(first_index)} DSCPs + the TCP entry exceed the "
                 f"classifier table size {C.CLASSIFIER_TABLE_SIZE}")
    return ClassifierConfig(tagged_dscp=tuple(first_index))


def _parse_active_flows(value: object, errs: _Errors) -> ActiveFlowsConfig:
    path = "active_flows"
    raw = _mapping(value, path, errs)
    if raw is None:
        return ActiveFlowsConfig()
    _unknown_keys(raw, path, ("expiry_interval_ms", "update_interval_ms"), errs)
    expiry = _number(raw, "expiry_interval_ms", path, errs, default=DEFAULT_EXPIRY_INTERVAL_MS)
    update = _number(raw, "update_interval_ms", path, errs, default=DEFAULT_UPDATE_INTERVAL_MS)
    if expiry is not None and expiry < MIN_EXPIRY_INTERVAL_MS:
        errs.add(f"{path}.expiry_interval_ms",
                 f"must be >= {MIN_EXPIRY_INTERVAL_MS!r} (two 2 us flow epochs), got {_fmt(expiry)}")
        expiry = None
    if update is not None and update <= 0:
        errs.add(f"{path}.update_interval_ms", f"must be > 0, got {_fmt(update)}")
    elif update is not None and expiry is not None and update > expiry:
        errs.add(f"{path}.update_interval_ms",
                 f"must be <= expiry_interval_ms ({_fmt(expiry)}), got {_fmt(update)}")
    return ActiveFlowsConfig(
        expiry_interval_ms=float(expiry if expiry is not None else DEFAULT_EXPIRY_INTERVAL_MS),
        update_interval_ms=float(update if update is not None else DEFAULT_UPDATE_INTERVAL_MS),
    )


def parse_config(data: object) -> Config:
    """Validate a config tree (as loaded from YAML); raise ConfigError listing every problem."""
    errs = _Errors()
    raw = _mapping(data, "", errs)
    if raw is None:
        raise ConfigError(errs.items)
    _unknown_keys(raw, "", ("classifier", "active_flows", "switches"), errs)
    classifier = _parse_classifier(_section(raw, "classifier", {}), errs)
    active_flows = _parse_active_flows(_section(raw, "active_flows", {}), errs)
    switches: dict[str, SwitchConfig] = {}
    switches_raw: Mapping[Any, Any] | None = None
    if "switches" not in raw:
        errs.add("switches", "required")
    else:
        switches_raw = _mapping(raw["switches"], "switches", errs)
        if switches_raw is not None and not switches_raw:
            errs.add("switches", "must list at least one switch")
    endpoints: dict[tuple[str, int], str] = {}
    for name, switch_raw in (switches_raw or {}).items():
        path = _join("switches", name)
        switch = _parse_switch(name, switch_raw, path, errs)
        if switch is None:
            continue
        endpoint = (switch.p4runtime_addr, switch.device_id)
        if endpoint in endpoints:
            errs.add(_join(path, "p4runtime_addr"),
                     f"{switch.p4runtime_addr} device_id {switch.device_id} is also switch "
                     f"{endpoints[endpoint]}")
        endpoints[endpoint] = switch.name
        switches[switch.name] = switch
    if errs.items:
        raise ConfigError(errs.items)
    return Config(switches=MappingProxyType(switches), classifier=classifier,
                  active_flows=active_flows)


# --- YAML
class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that records duplicate keys instead of keeping the last one."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[str] = []


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


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(text: str, *, source: str = "<config>") -> object:
    loader = _StrictLoader(text)
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        raise ConfigError([f"{source}: invalid YAML: {exc}"]) from exc
    finally:
        loader.dispose()
    if loader.duplicates:
        raise ConfigError([f"{source}: {message}" for message in loader.duplicates])
    return data


def load_config(path: str | Path) -> Config:
    """Read and validate a YAML config file."""
    path = Path(path)
    return parse_config(load_yaml(path.read_text(), source=str(path)))

