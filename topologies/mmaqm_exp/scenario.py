"""Experiment scenarios: a YAML schedule of flow groups and named phases.

The reference scenario is dcbt section 5 / Fig. 7 (``topologies/scenarios/
dcbt-fig7.yaml``): 25 TCP + 10 MM_APP flows for 0-10 s, 2 CBR blasts join at
10 s, 30 more TCP flows at 20 s; the metrics are computed per phase
[start_s, end_s) as in dcbt section 6 (0-10, 10-20, 20-30 s).

    sc = load_scenario("topologies/scenarios/dcbt-fig7.yaml", hosts=net_hosts)
    for f in sc.flows: ...            # one Flow per flow, unique flow_id, class
    short = sc.with_duration(6.0)     # every time scaled by 6/30

A flow group ``{kind, count, src, dst, start_s, stop_s, ...params}`` expands
to ``count`` flows. The class is what the switch's classifier will decide
(docs/algorithms/cbt.md: (proto, DSCP) -> class): tcp -> TCP; a UDP kind
(mmapp, cbr) -> TAGGED if its DSCP is in ``tagged_dscp`` (default 46, 34, the
classifier's default), else UNTAGGED. An optional ``class`` key states the
intended class and must agree. Every validation error names its field, e.g.
``flows[2].stop_s: must be > start_s (10.0), got 5``; all errors are reported
at once; unknown keys are errors (readers and messages: :mod:`mmaqm.validation`,
shared with the controller config and the topology files). See
topologies/README-tools.md "Scenarios" for the table of fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from os import PathLike
from pathlib import Path
from typing import Any, Collection, Mapping, Optional, Sequence, Union

import yaml

from mmaqm import validation as V

# ---------------------------------------------------------------------------
# Constants (single place)
# ---------------------------------------------------------------------------

KINDS = ("tcp", "mmapp", "cbr")
CLASSES = ("TCP", "TAGGED", "UNTAGGED")
#: dcbt section 5: every packet in the network is 1 KB; we make it the IPv4 datagram.
PACKET_BYTES = 1000
#: The switch classifier's default tagged DSCPs (docs/configuration.md).
DEFAULT_TAGGED_DSCP = (46, 34)
#: TCP/IP header bytes of a data segment: 20 IPv4 + 20 TCP + 12 timestamp option.
TCP_IP_HDR_BYTES = 40
TCP_TIMESTAMP_BYTES = 12
#: A flow's address family (``family:`` of a group); IPv6's fixed header (RFC 8200 §3)
#: is 20 bytes longer than IPv4's without options, so an IPv6 flow's payloads are
#: that much shorter for the same packet_bytes (the IP packet, either family).
FAMILIES = ("ipv4", "ipv6")
DEFAULT_FAMILY = "ipv4"
IPV6_EXTRA_HDR_BYTES = 20
TCP_DEFAULTS: dict[str, Any] = {
    "cc": "reno",              # dcbt section 5: "FTP used TCP Reno"
    "packet_bytes": PACKET_BYTES,
    "max_window_pkts": 20,     # dcbt section 5: "maximum congestion window size of 20 packets"
    "start_spread_s": 0.0,     # flow i of n starts at start_s + i * spread / n
    # Linux's initial congestion window for this group's connections, segments
    # (`ip route ... initcwnd` toward dst in the src namespace); None: the kernel's (10)
    "initcwnd_pkts": None,
    "dscp": 0,
}
INITCWND_MAX_PKTS = 100
MMAPP_DEFAULTS: dict[str, Any] = {
    "scales_kbps": [300, 500, 700, 900, 1100],  # dcbt section 5
    "initial_scale": 0,
    "packet_bytes": PACKET_BYTES,
    "fb_timeout_s": 1.0,
    "dscp": 46,
}
CBR_DEFAULTS: dict[str, Any] = {
    "rate_kbps": None,                  # exactly one of these two
    "rate_fraction_of_bottleneck": None,
    "packet_bytes": PACKET_BYTES,
    "dscp": 0,
    # P-UPTA (upta §4): the loss threshold q in [0, 1) carried in every packet's
    # IPv4 option 0x9E (docs/upta-plan.md §1.5); None: no option
    "upta_loss_threshold": None,
}
KIND_DEFAULTS = {"tcp": TCP_DEFAULTS, "mmapp": MMAPP_DEFAULTS, "cbr": CBR_DEFAULTS}
GROUP_COMMON_KEYS = ("kind", "count", "src", "dst", "start_s", "stop_s", "class", "family")
TOP_KEYS = ("name", "description", "paper", "duration_s", "phases", "flows", "tagged_dscp",
            "blast_phase")
PHASE_KEYS = ("name", "start_s", "end_s")
CC_AVAILABLE_PATH = "/proc/sys/net/ipv4/tcp_available_congestion_control"
_EPS = 1e-9

PathLike_ = Union[str, PathLike]


class ScenarioError(ValueError):
    """A scenario failed validation; ``errors`` lists 'field: message' strings."""

    def __init__(self, errors: Sequence[str], source: str = "scenario") -> None:
        self.errors = list(errors)
        super().__init__(f"{source}: " + ("; ".join(self.errors) if len(self.errors) == 1
                                          else "\n  " + "\n  ".join(self.errors)))


# ---------------------------------------------------------------------------
# Data model
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Phase:
    """A named measurement period [start_s, end_s) (dcbt section 6: 0-10, 10-20, 20-30 s)."""

    name: str
    start_s: float
    end_s: float

    @property
    def length_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class FlowGroup:
    """One ``flows:`` entry: ``count`` identical flows. ``params`` holds the kind's
    parameters with defaults filled in (keys of TCP_DEFAULTS / MMAPP_DEFAULTS /
    CBR_DEFAULTS except ``dscp``, which is a field)."""

    index: int
    kind: str
    count: int
    src: str
    dst: str
    start_s: float
    stop_s: float
    cls: str
    dscp: int
    first_flow_id: int
    params: Mapping[str, Any] = field(default_factory=dict)
    family: str = DEFAULT_FAMILY

    @property
    def flow_ids(self) -> list[int]:
        return list(range(self.first_flow_id, self.first_flow_id + self.count))

    @property
    def protocol(self) -> str:
        return "tcp" if self.kind == "tcp" else "udp"

    # -- TCP helpers (dcbt section 5: 1 KB packets, 20-packet window) --------

    @property
    def tcp_mss_option(self) -> int:
        """TCP_MAXSEG / iperf3 -M value: IP packet bytes - 40 (IPv6: - 60). Linux
        counts the 12-byte timestamp option inside it, so the IP packet is
        packet_bytes with or without timestamps (IPv4 payload 948 or 960 bytes at 1000)."""
        extra = IPV6_EXTRA_HDR_BYTES if self.family == "ipv6" else 0
        return int(self.params["packet_bytes"]) - TCP_IP_HDR_BYTES - extra

    @property
    def tcp_payload_bytes(self) -> int:
        """Segment payload with timestamps on (the Linux default)."""
        return self.tcp_mss_option - TCP_TIMESTAMP_BYTES

    @property
    def tcp_window_bytes(self) -> int:
        """Receive-window clamp: max_window_pkts full segments."""
        return int(self.params["max_window_pkts"]) * self.tcp_payload_bytes

    def cbr_rate_kbps(self, bottleneck_rate_kbps: Optional[float] = None) -> float:
        """The CBR rate, resolving ``rate_fraction_of_bottleneck``."""
        r = self.params.get("rate_kbps")
        if r is not None:
            return float(r)
        frac = self.params.get("rate_fraction_of_bottleneck")
        if frac is None:
            raise ScenarioError([f"flows[{self.index}]: not a CBR group"])
        if bottleneck_rate_kbps is None or not bottleneck_rate_kbps > 0:
            raise ScenarioError([f"flows[{self.index}].rate_fraction_of_bottleneck: needs the "
                                 "bottleneck rate (pass bottleneck_rate_kbps)"])
        return float(frac) * float(bottleneck_rate_kbps)


@dataclass(frozen=True)
class Flow:
    """One flow of an expanded group."""

    flow_id: int
    group: int
    kind: str
    cls: str
    src: str
    dst: str
    start_s: float
    stop_s: float
    dscp: int
    family: str = DEFAULT_FAMILY

    def active_in(self, t0: float, t1: float) -> bool:
        """True if the flow's scheduled activity [start_s, stop_s) overlaps [t0, t1)."""
        return self.start_s < t1 - _EPS and self.stop_s > t0 + _EPS


@dataclass(frozen=True)
class Scenario:
    name: str
    duration_s: float
    phases: tuple[Phase, ...]
    groups: tuple[FlowGroup, ...]
    tagged_dscp: tuple[int, ...] = DEFAULT_TAGGED_DSCP
    blast_phase: Optional[str] = None
    description: str = ""
    paper: str = ""
    time_scale: float = 1.0  #: product of the scalings applied since loading
    source: str = ""

    @property
    def flows(self) -> list[Flow]:
        """Every flow, in flow-id order."""
        out = []
        for g in self.groups:
            n = g.count
            spread = float(g.params.get("start_spread_s", 0.0) or 0.0)
            for i, fid in enumerate(g.flow_ids):
                start = g.start_s + spread * i / n
                out.append(Flow(fid, g.index, g.kind, g.cls, g.src, g.dst, start, g.stop_s, g.dscp,
                                g.family))
        return out

    def flow(self, flow_id: int) -> Flow:
        for f in self.flows:
            if f.flow_id == flow_id:
                return f
        raise KeyError(flow_id)

    def hosts(self) -> set[str]:
        return {h for g in self.groups for h in (g.src, g.dst)}

    def families(self) -> set[str]:
        """The address families the flows use ({"ipv4"} for every paper's scenario)."""
        return {g.family for g in self.groups}

    def phase(self, name: str) -> Phase:
        for p in self.phases:
            if p.name == name:
                return p
        raise KeyError(name)

    def phase_at(self, t_s: float) -> Optional[Phase]:
        for p in self.phases:
            if p.start_s <= t_s < p.end_s:
                return p
        return None

    def blast(self) -> Optional[Phase]:
        """The phase the report calls "the blast": ``blast_phase`` if given, else the
        first phase in which an UNTAGGED flow is active (dcbt section 5: 10-20 s)."""
        if self.blast_phase:
            return self.phase(self.blast_phase)
        for p in self.phases:
            if any(f.cls == "UNTAGGED" and f.active_in(p.start_s, p.end_s) for f in self.flows):
                return p
        return None

    def scaled(self, factor: float) -> "Scenario":
        """Every time (phases, starts, stops, spreads, duration) multiplied by factor.
        Rates and packet sizes stay; so do MM_APP's feedback timeout and the
        bandwidth-variation windows (absolute time scales)."""
        if not factor > 0:
            raise ScenarioError([f"time_scale: must be > 0, got {factor}"], self.source or "scenario")
        phases = tuple(Phase(p.name, p.start_s * factor, p.end_s * factor) for p in self.phases)
        groups = []
        for g in self.groups:
            params = dict(g.params)
            if "start_spread_s" in params:
                params["start_spread_s"] = float(params["start_spread_s"]) * factor
            groups.append(replace(g, start_s=g.start_s * factor, stop_s=g.stop_s * factor,
                                  params=params))
        return replace(self, duration_s=self.duration_s * factor, phases=phases,
                       groups=tuple(groups), time_scale=self.time_scale * factor)

    def with_duration(self, duration_s: float) -> "Scenario":
        """Shortened (or stretched) proportionally to a total of duration_s."""
        return self.scaled(duration_s / self.duration_s)

    def check_hosts(self, hosts: Collection[str]) -> None:
        """Raise ScenarioError if a group names a host not in ``hosts``."""
        errs = []
        known = set(hosts)
        for g in self.groups:
            for key in ("src", "dst"):
                h = getattr(g, key)
                if h not in known:
                    errs.append(f"flows[{g.index}].{key}: unknown host {h!r} "
                                f"(topology hosts: {', '.join(sorted(known))})")
        if errs:
            raise ScenarioError(errs, self.source or "scenario")

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (with defaults filled in and flows expanded)."""
        return {
            "name": self.name, "description": self.description, "paper": self.paper,
            "duration_s": self.duration_s, "time_scale": self.time_scale, "source": self.source,
            "tagged_dscp": list(self.tagged_dscp), "blast_phase": self.blast_phase,
            "phases": [{"name": p.name, "start_s": p.start_s, "end_s": p.end_s} for p in self.phases],
            "groups": [{"index": g.index, "kind": g.kind, "count": g.count, "src": g.src,
                        "dst": g.dst, "start_s": g.start_s, "stop_s": g.stop_s, "class": g.cls,
                        "dscp": g.dscp, "first_flow_id": g.first_flow_id, "params": dict(g.params),
                        "family": g.family}
                       for g in self.groups],
        }


# ---------------------------------------------------------------------------
# Parsing and validation (readers and messages: mmaqm.validation)
# ---------------------------------------------------------------------------


def _classify(kind: str, dscp: int, tagged: Collection[int]) -> str:
    if kind == "tcp":
        return "TCP"
    return "TAGGED" if dscp in tagged else "UNTAGGED"


def _as_float(value: Optional[float]) -> Optional[float]:
    """A reader's number as a float (ints stay exact: YAML 10 -> 10.0); None stays None."""
    return None if value is None else float(value)


def parse_scenario(
    data: Any,
    *,
    source: str = "scenario",
    hosts: Optional[Collection[str]] = None,
    time_scale: Optional[float] = None,
    duration_s: Optional[float] = None,
) -> Scenario:
    """Validate a scenario mapping (as loaded from YAML) and build a Scenario.

    ``hosts``: if given, every src/dst must be one of them. ``time_scale`` or
    ``duration_s`` (not both) rescale every time after validation.
    """
    errs = V.Errors()
    top = V.mapping(data, "", errs, allowed=TOP_KEYS)
    if top is None:
        raise ScenarioError(errs.items, source)

    name = V.string(V.require(top, "name", "", errs), "name", errs, non_empty=True) or ""
    description = V.string(top.get("description", ""), "description", errs) or ""
    paper = V.string(top.get("paper", ""), "paper", errs) or ""
    # 0.0: invalid (reported), so checks against the duration are skipped
    dur = _as_float(V.number(V.require(top, "duration_s", "", errs, note="seconds"),
                             "duration_s", errs, gt=0)) or 0.0

    tagged: list[int] = []
    tagged_raw = V.sequence(top.get("tagged_dscp", list(DEFAULT_TAGGED_DSCP)), "tagged_dscp", errs)
    for i, item in enumerate(tagged_raw or []):
        dscp = V.integer(item, V.index("tagged_dscp", i), errs, lo=0, hi=63)
        if dscp is not None:
            tagged.append(dscp)
    tagged_t = tuple(tagged)

    # -- phases ---------------------------------------------------------------
    phases: list[Phase] = []
    raw_phases = V.sequence(V.require(top, "phases", "", errs,
                                      note="a list of {name, start_s, end_s}"),
                            "phases", errs, at_least_one="phase")
    seen_names: set[str] = set()
    for i, item in enumerate(raw_phases or []):
        path = V.index("phases", i)
        p = V.mapping(item, path, errs, allowed=PHASE_KEYS)
        if p is None:
            continue
        pname = V.string(V.require(p, "name", path, errs), f"{path}.name", errs, non_empty=True)
        if pname is None:
            continue
        if pname in seen_names:
            errs.add(f"{path}.name", f"duplicate phase name {pname!r}")
        seen_names.add(pname)
        a = _as_float(V.number(V.require(p, "start_s", path, errs, note="seconds"),
                               f"{path}.start_s", errs, ge=0))
        b = _as_float(V.number(V.require(p, "end_s", path, errs, note="seconds"),
                               f"{path}.end_s", errs))
        if a is None or b is None:
            continue
        if not b > a:
            errs.add(f"{path}.end_s", f"must be > start_s ({a}), got {b}")
            continue
        if dur and b > dur + _EPS:
            errs.add(f"{path}.end_s", f"must be <= duration_s ({dur}), got {b}")
        if phases and a < phases[-1].end_s - _EPS:
            errs.add(f"{path}.start_s", f"phases must be in time order without overlap: "
                                        f"{a} < end of {phases[-1].name!r} ({phases[-1].end_s})")
        phases.append(Phase(pname, a, b))

    blast = top.get("blast_phase")
    if blast is not None and (not isinstance(blast, str) or blast not in seen_names):
        errs.add("blast_phase", f"must name a phase ({', '.join(sorted(seen_names))}), "
                                f"got {errs.describe(blast)}")
        blast = None

    # -- flow groups -------------------------------------------------------------
    groups: list[FlowGroup] = []
    raw_flows = V.sequence(V.require(top, "flows", "", errs, note="a list of flow groups"),
                           "flows", errs, at_least_one="flow group")
    next_id = 1
    known_hosts = set(hosts) if hosts is not None else None
    for i, item in enumerate(raw_flows or []):
        path = V.index("flows", i)
        g = V.mapping(item, path, errs)
        if g is None:
            continue
        kind = V.one_of(V.require(g, "kind", path, errs), f"{path}.kind", errs, KINDS)
        if kind is None:
            continue
        defaults = KIND_DEFAULTS[kind]
        V.check_keys(g, path, errs, (*GROUP_COMMON_KEYS, *defaults))
        count = V.integer(g.get("count", 1), f"{path}.count", errs, lo=1) or 1
        ends: dict[str, str] = {}
        for key in ("src", "dst"):
            h = V.string(V.require(g, key, path, errs, note="a host name"), f"{path}.{key}", errs,
                         non_empty=True)
            if h is None:
                continue
            if known_hosts is not None and h not in known_hosts:
                errs.add(f"{path}.{key}", f"unknown host {h!r} (topology hosts: "
                                          f"{', '.join(sorted(known_hosts))})")
            ends[key] = h
        if ends.get("src") is not None and ends.get("src") == ends.get("dst"):
            errs.add(f"{path}.dst", f"must differ from src ({ends['src']!r})")
        start = _as_float(V.number(g.get("start_s", 0.0), f"{path}.start_s", errs, ge=0))
        if "stop_s" in g:
            stop = _as_float(V.number(g["stop_s"], f"{path}.stop_s", errs))
        else:
            stop = dur or None
        if start is not None and stop is not None:
            if not stop > start:
                errs.add(f"{path}.stop_s", f"must be > start_s ({start}), got {stop}")
            elif dur and stop > dur + _EPS:
                errs.add(f"{path}.stop_s", f"must be <= duration_s ({dur}), got {stop}")
        params = {k: v for k, v in defaults.items() if k != "dscp"}
        dscp = V.integer(g.get("dscp", defaults["dscp"]), f"{path}.dscp", errs, lo=0, hi=63)
        if dscp is None:
            dscp = defaults["dscp"]
        _parse_params(errs, kind, g, path, params)
        family = V.one_of(g.get("family", DEFAULT_FAMILY), f"{path}.family", errs, FAMILIES)
        if family == "ipv6" and params.get("upta_loss_threshold") is not None:
            errs.add(f"{path}.upta_loss_threshold", "is an IPv4 option (upta section 4); "
                                                    "an ipv6 flow cannot carry it")
        if family == "ipv6" and params.get("initcwnd_pkts") is not None:
            errs.add(f"{path}.initcwnd_pkts", "is set on IPv4 routes only (traffic.set_initcwnd); "
                                              "not available for an ipv6 group")
        cls = _classify(kind, dscp, tagged_t)
        want = g.get("class")
        if want is not None:
            if not isinstance(want, str) or want.upper() not in CLASSES:
                errs.add(f"{path}.class", f"must be one of tcp, tagged, untagged, "
                                          f"got {errs.describe(want)}")
            elif want.upper() != cls:
                errs.add(f"{path}.class", f"says {want!r} but a {kind} flow with DSCP {dscp} is "
                                          f"classified {cls} (tagged_dscp: {list(tagged_t)})")
        groups.append(FlowGroup(i, kind, count, ends.get("src", ""), ends.get("dst", ""),
                                start or 0.0, stop if stop is not None else 0.0, cls, dscp,
                                next_id, params, family or DEFAULT_FAMILY))
        next_id += count

    _check_initcwnd(groups, errs)
    if errs.items:
        raise ScenarioError(errs.items, source)
    sc = Scenario(name=name, duration_s=dur, phases=tuple(phases), groups=tuple(groups),
                  tagged_dscp=tagged_t, blast_phase=blast, description=description,
                  paper=paper, source=source)
    if time_scale is not None and duration_s is not None:
        raise ScenarioError(["time_scale/duration: give one, not both"], source)
    if time_scale is not None:
        sc = sc.scaled(time_scale)
    elif duration_s is not None:
        if not duration_s > 0:
            raise ScenarioError([f"duration override: must be > 0, got {duration_s}"], source)
        sc = sc.with_duration(duration_s)
    return sc


def _check_initcwnd(groups: Sequence[FlowGroup], errs: V.Errors) -> None:
    """One initial window per (src, dst): it is a route attribute toward dst in src's
    namespace, so every TCP group between the same two hosts shares it."""
    seen: dict[tuple[str, str], FlowGroup] = {}
    for g in groups:
        if g.kind != "tcp":
            continue
        first = seen.setdefault((g.src, g.dst), g)
        if first.params.get("initcwnd_pkts") != g.params.get("initcwnd_pkts"):
            errs.add(f"flows[{g.index}].initcwnd_pkts",
                     f"must equal flows[{first.index}]'s ({first.params.get('initcwnd_pkts')}): "
                     f"the initial window is a route attribute of {g.src} toward {g.dst}, "
                     f"shared by every TCP group between them, got {g.params.get('initcwnd_pkts')}")


def initcwnd_routes(scenario: "Scenario") -> dict[tuple[str, str], int]:
    """{(src host, dst host): initial window in segments} of the TCP groups that set one."""
    return {(g.src, g.dst): int(g.params["initcwnd_pkts"]) for g in scenario.groups
            if g.kind == "tcp" and g.params.get("initcwnd_pkts") is not None}


def _parse_params(errs: V.Errors, kind: str, g: Mapping, path: str, params: dict) -> None:
    """Fill ``params`` from the group mapping, checking each kind's fields."""
    min_pb = 100 if kind == "tcp" else 64
    pb = V.integer(g.get("packet_bytes", params["packet_bytes"]), f"{path}.packet_bytes", errs,
                   lo=min_pb, hi=1500, note="IP packet, either family")
    if pb is not None:
        params["packet_bytes"] = pb
    if kind == "tcp":
        cc = g.get("cc", params["cc"])
        if not isinstance(cc, str) or not cc.isidentifier():
            errs.add(f"{path}.cc", f"must be a congestion-control name like reno, "
                                   f"got {errs.describe(cc)}")
        else:
            params["cc"] = cc
        w = V.integer(g.get("max_window_pkts", params["max_window_pkts"]),
                      f"{path}.max_window_pkts", errs, lo=2)
        if w is not None:
            params["max_window_pkts"] = w
        sp = _as_float(V.number(g.get("start_spread_s", 0.0), f"{path}.start_spread_s", errs,
                                ge=0))
        params["start_spread_s"] = sp if sp is not None else 0.0
        if g.get("initcwnd_pkts") is not None:
            params["initcwnd_pkts"] = V.integer(g["initcwnd_pkts"], f"{path}.initcwnd_pkts", errs,
                                                lo=1, hi=INITCWND_MAX_PKTS, note="segments")
    elif kind == "mmapp":
        scales_path = f"{path}.scales_kbps"
        raw_scales = V.sequence(g.get("scales_kbps", params["scales_kbps"]), scales_path, errs,
                                at_least_one="scale")
        scales = [V.number(x, V.index(scales_path, j), errs, gt=0)
                  for j, x in enumerate(raw_scales or [])]
        if raw_scales and None not in scales:
            if any(b <= a for a, b in zip(scales, scales[1:])):
                errs.add(scales_path, f"must be increasing (kbit/s), got {raw_scales!r}")
            else:
                params["scales_kbps"] = [float(x) for x in scales]
        n = len(params["scales_kbps"])
        ini = V.integer(g.get("initial_scale", params["initial_scale"]), f"{path}.initial_scale",
                        errs, lo=0, hi=n - 1)
        if ini is not None:
            params["initial_scale"] = ini
        fb = _as_float(V.number(g.get("fb_timeout_s", params["fb_timeout_s"]),
                                f"{path}.fb_timeout_s", errs, gt=0))
        params["fb_timeout_s"] = fb if fb is not None else MMAPP_DEFAULTS["fb_timeout_s"]
    else:  # cbr
        if ("rate_kbps" in g) == ("rate_fraction_of_bottleneck" in g):
            errs.add(f"{path}.rate_kbps", "give exactly one of rate_kbps, rate_fraction_of_bottleneck")
        if "rate_kbps" in g:     # params start from CBR_DEFAULTS: both None
            params["rate_kbps"] = _as_float(V.number(g["rate_kbps"], f"{path}.rate_kbps", errs,
                                                     gt=0))
        if "rate_fraction_of_bottleneck" in g:
            params["rate_fraction_of_bottleneck"] = _as_float(V.number(
                g["rate_fraction_of_bottleneck"], f"{path}.rate_fraction_of_bottleneck", errs,
                gt=0, le=10, note="a fraction of the bottleneck rate"))
        if g.get("upta_loss_threshold") is not None:
            q = _as_float(V.number(g["upta_loss_threshold"], f"{path}.upta_loss_threshold",
                                   errs, ge=0))
            if q is not None and q >= 1:
                errs.add(f"{path}.upta_loss_threshold", f"must be < 1 (the option's bit<16> "
                                                        f"cannot hold 1), got {q:g}")
            else:
                params["upta_loss_threshold"] = q


def load_scenario(
    path: PathLike_,
    *,
    hosts: Optional[Collection[str]] = None,
    time_scale: Optional[float] = None,
    duration_s: Optional[float] = None,
) -> Scenario:
    """Read and validate a scenario YAML file (see :func:`parse_scenario`)."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise ScenarioError([f"not valid YAML: {e}"], str(p)) from None
    return parse_scenario(data, source=str(p), hosts=hosts, time_scale=time_scale,
                          duration_s=duration_s)


def available_congestion_controls(path: str = CC_AVAILABLE_PATH) -> list[str]:
    try:
        with open(path) as f:
            return f.read().split()
    except OSError:
        return []


def check_congestion_control(scenario: Scenario, path: str = CC_AVAILABLE_PATH) -> None:
    """Raise ScenarioError if a TCP group's ``cc`` is not in the kernel's available list."""
    avail = available_congestion_controls(path)
    errs = []
    for g in scenario.groups:
        if g.kind == "tcp" and g.params["cc"] not in avail:
            errs.append(f"flows[{g.index}].cc: {g.params['cc']!r} is not in {path} "
                        f"({' '.join(avail) or 'unreadable'}); load tcp_{g.params['cc']} "
                        "(modprobe) or choose another")
    if errs:
        raise ScenarioError(errs, scenario.source or "scenario")


def parse_scenario_dict(d: Mapping[str, Any]) -> Scenario:
    """Rebuild a Scenario from :meth:`Scenario.to_dict` output (e.g. traffic.json).

    No validation beyond structure: the dict was produced from a validated one.
    """
    return Scenario(
        name=d["name"], duration_s=float(d["duration_s"]),
        phases=tuple(Phase(p["name"], float(p["start_s"]), float(p["end_s"])) for p in d["phases"]),
        groups=tuple(FlowGroup(int(g["index"]), g["kind"], int(g["count"]), g["src"], g["dst"],
                               float(g["start_s"]), float(g["stop_s"]), g["class"], int(g["dscp"]),
                               int(g["first_flow_id"]), dict(g["params"]),
                               g.get("family", DEFAULT_FAMILY)) for g in d["groups"]),
        tagged_dscp=tuple(d.get("tagged_dscp", DEFAULT_TAGGED_DSCP)),
        blast_phase=d.get("blast_phase"), description=d.get("description", ""),
        paper=d.get("paper", ""), time_scale=float(d.get("time_scale", 1.0)),
        source=d.get("source", ""),
    )
