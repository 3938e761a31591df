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
(README "Architecture": (proto, DSCP) -> class): tcp -> TCP; a UDP kind
(mmapp, cbr) -> TAGGED if its DSCP is in ``tagged_dscp`` (default 46, 34, the
classifier's default), else UNTAGGED. An optional ``class`` key states the
intended class and must agree. Every validation error names its field, e.g.
``flows[2].stop_s: must be > start_s (10.0), got 5``; all errors are reported
at once; unknown keys are errors. See topologies/README-tools.md "Scenarios"
for the table of fields.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from os import PathLike
from pathlib import Path
from typing import Any, Collection, Mapping, Optional, Sequence, Union

import yaml

# ---------------------------------------------------------------------------
# Constants (single place)
# ---------------------------------------------------------------------------

KINDS = ("tcp", "mmapp", "cbr")
CLASSES = ("TCP", "TAGGED", "UNTAGGED")
#: dcbt section 5: every packet in the network is 1 KB; we make it the IPv4 datagram.
PACKET_BYTES = 1000
#: The switch classifier's default tagged DSCPs (README "Configuration reference").
DEFAULT_TAGGED_DSCP = (46, 34)
#: TCP/IP header bytes of a data segment: 20 IPv4 + 20 TCP + 12 timestamp option.
TCP_IP_HDR_BYTES = 40
TCP_TIMESTAMP_BYTES = 12
TCP_DEFAULTS: dict[str, Any] = {
    "cc": "reno",              # dcbt section 5: "FTP used TCP Reno"
    "packet_bytes": PACKET_BYTES,
    "max_window_pkts": 20,     # dcbt section 5: "maximum congestion window size of 20 packets"
    "start_spread_s": 0.0,     # flow i of n starts at start_s + i * spread / n
    "dscp": 0,
}
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
}
KIND_DEFAULTS = {"tcp": TCP_DEFAULTS, "mmapp": MMAPP_DEFAULTS, "cbr": CBR_DEFAULTS}
GROUP_COMMON_KEYS = ("kind", "count", "src", "dst", "start_s", "stop_s", "class")
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

    @property
    def flow_ids(self) -> list[int]:
        return list(range(self.first_flow_id, self.first_flow_id + self.count))

    @property
    def protocol(self) -> str:
        return "tcp" if self.kind == "tcp" else "udp"

    # -- TCP helpers (dcbt section 5: 1 KB packets, 20-packet window) --------

    @property
    def tcp_mss_option(self) -> int:
        """TCP_MAXSEG / iperf3 -M value: IP packet bytes - 40. Linux counts the
        12-byte timestamp option inside it, so the IP packet is packet_bytes
        with or without timestamps (payload 948 or 960 bytes at 1000)."""
        return int(self.params["packet_bytes"]) - TCP_IP_HDR_BYTES

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
                out.append(Flow(fid, g.index, g.kind, g.cls, g.src, g.dst, start, g.stop_s, g.dscp))
        return out

    def flow(self, flow_id: int) -> Flow:
        for f in self.flows:
            if f.flow_id == flow_id:
                return f
        raise KeyError(flow_id)

    def hosts(self) -> set[str]:
        return {h for g in self.groups for h in (g.src, g.dst)}

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
                        "dscp": g.dscp, "first_flow_id": g.first_flow_id, "params": dict(g.params)}
                       for g in self.groups],
        }


# ---------------------------------------------------------------------------
# Parsing and validation
# ---------------------------------------------------------------------------


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class _Errors:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, msg: str) -> None:
        self.items.append(f"{path}: {msg}")

    def unknown(self, path: str, d: Mapping, allowed: Collection[str]) -> None:
        for k in d:
            if k not in allowed:
                self.add(f"{path}.{k}" if path else str(k),
                         f"unknown key (allowed: {', '.join(sorted(allowed))})")


def _num(errs: _Errors, d: Mapping, key: str, path: str, default: Any = None,
         minimum: Optional[float] = None, strict_min: bool = False) -> Any:
    if key not in d:
        return default
    v = d[key]
    fp = f"{path}.{key}" if path else key
    if not _is_num(v):
        errs.add(fp, f"must be a number, got {v!r}")
        return default
    if minimum is not None and (v < minimum or (strict_min and v <= minimum)):
        errs.add(fp, f"must be {'>' if strict_min else '>='} {minimum}, got {v}")
        return default
    return float(v)


def _classify(kind: str, dscp: int, tagged: Collection[int]) -> str:
    if kind == "tcp":
        return "TCP"
    return "TAGGED" if dscp in tagged else "UNTAGGED"


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
    errs = _Errors()
    if not isinstance(data, Mapping):
        raise ScenarioError([f"top level: must be a mapping, got {type(data).__name__}"], source)
    errs.unknown("", data, TOP_KEYS)

    name = data.get("name")
    if not isinstance(name, str) or not name:
        errs.add("name", f"required, a non-empty string (got {name!r})")
        name = ""
    description = data.get("description", "")
    if not isinstance(description, str):
        errs.add("description", "must be a string")
        description = ""
    paper = data.get("paper", "")
    if not isinstance(paper, str):
        errs.add("paper", "must be a string")
        paper = ""
    if "duration_s" not in data:
        errs.add("duration_s", "required (seconds)")
    dur = _num(errs, data, "duration_s", "", default=0.0, minimum=0.0, strict_min=True)

    tagged = data.get("tagged_dscp", list(DEFAULT_TAGGED_DSCP))
    if not isinstance(tagged, list) or not all(_is_int(x) and 0 <= x <= 63 for x in tagged):
        errs.add("tagged_dscp", f"must be a list of DSCPs 0..63, got {tagged!r}")
        tagged = list(DEFAULT_TAGGED_DSCP)
    tagged_t = tuple(tagged)

    # -- phases ---------------------------------------------------------------
    phases: list[Phase] = []
    raw_phases = data.get("phases")
    if not isinstance(raw_phases, list) or not raw_phases:
        errs.add("phases", "required, a non-empty list of {name, start_s, end_s}")
        raw_phases = []
    seen_names: set[str] = set()
    for i, p in enumerate(raw_phases):
        path = f"phases[{i}]"
        if not isinstance(p, Mapping):
            errs.add(path, "must be a mapping {name, start_s, end_s}")
            continue
        errs.unknown(path, p, PHASE_KEYS)
        pname = p.get("name")
        if not isinstance(pname, str) or not pname:
            errs.add(f"{path}.name", f"required, a non-empty string (got {pname!r})")
            continue
        if pname in seen_names:
            errs.add(f"{path}.name", f"duplicate phase name {pname!r}")
        seen_names.add(pname)
        for k in ("start_s", "end_s"):
            if k not in p:
                errs.add(f"{path}.{k}", "required (seconds)")
        a = _num(errs, p, "start_s", path, minimum=0.0)
        b = _num(errs, p, "end_s", path)
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

    blast = data.get("blast_phase")
    if blast is not None and (not isinstance(blast, str) or blast not in seen_names):
        errs.add("blast_phase", f"must name a phase ({', '.join(sorted(seen_names))}), got {blast!r}")
        blast = None

    # -- flow groups -------------------------------------------------------------
    groups: list[FlowGroup] = []
    raw_flows = data.get("flows")
    if not isinstance(raw_flows, list) or not raw_flows:
        errs.add("flows", "required, a non-empty list of flow groups")
        raw_flows = []
    next_id = 1
    known_hosts = set(hosts) if hosts is not None else None
    for i, g in enumerate(raw_flows):
        path = f"flows[{i}]"
        if not isinstance(g, Mapping):
            errs.add(path, "must be a mapping {kind, count, src, dst, start_s, stop_s, ...}")
            continue
        kind = g.get("kind")
        if kind not in KINDS:
            errs.add(f"{path}.kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
            continue
        defaults = KIND_DEFAULTS[kind]
        errs.unknown(path, g, (*GROUP_COMMON_KEYS, *defaults))
        count = g.get("count", 1)
        if not _is_int(count) or count < 1:
            errs.add(f"{path}.count", f"must be an integer >= 1, got {count!r}")
            count = 1
        ends: dict[str, str] = {}
        for key in ("src", "dst"):
            h = g.get(key)
            if not isinstance(h, str) or not h:
                errs.add(f"{path}.{key}", f"required, a host name (got {h!r})")
                continue
            if known_hosts is not None and h not in known_hosts:
                errs.add(f"{path}.{key}", f"unknown host {h!r} (topology hosts: "
                                          f"{', '.join(sorted(known_hosts))})")
            ends[key] = h
        if ends.get("src") is not None and ends.get("src") == ends.get("dst"):
            errs.add(f"{path}.dst", f"must differ from src ({ends['src']!r})")
        start = _num(errs, g, "start_s", path, default=0.0, minimum=0.0)
        stop = _num(errs, g, "stop_s", path, default=dur if dur else None)
        if start is not None and stop is not None:
            if not stop > start:
                errs.add(f"{path}.stop_s", f"must be > start_s ({start}), got {stop}")
            elif dur and stop > dur + _EPS:
                errs.add(f"{path}.stop_s", f"must be <= duration_s ({dur}), got {stop}")
        params = {k: v for k, v in defaults.items() if k != "dscp"}
        dscp = g.get("dscp", defaults["dscp"])
        if not _is_int(dscp) or not 0 <= dscp <= 63:
            errs.add(f"{path}.dscp", f"must be an integer 0..63, got {dscp!r}")
            dscp = defaults["dscp"]
        _parse_params(errs, kind, g, path, params)
        cls = _classify(kind, dscp, tagged_t)
        want = g.get("class")
        if want is not None:
            if not isinstance(want, str) or want.upper() not in CLASSES:
                errs.add(f"{path}.class", f"must be one of tcp, tagged, untagged, got {want!r}")
            elif want.upper() != cls:
                errs.add(f"{path}.class", f"says {want!r} but a {kind} flow with DSCP {dscp} is "
                                          f"classified {cls} (tagged_dscp: {list(tagged_t)})")
        groups.append(FlowGroup(i, kind, count, ends.get("src", ""), ends.get("dst", ""),
                                start or 0.0, stop if stop is not None else 0.0, cls, dscp,
                                next_id, params))
        next_id += count

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


def _parse_params(errs: _Errors, kind: str, g: Mapping, path: str, params: dict) -> None:
    """Fill ``params`` from the group mapping, checking each kind's fields."""
    pb = g.get("packet_bytes", params["packet_bytes"])
    min_pb = 100 if kind == "tcp" else 64
    if not _is_int(pb) or not min_pb <= pb <= 1500:
        errs.add(f"{path}.packet_bytes", f"must be an integer {min_pb}..1500 (IPv4 datagram), got {pb!r}")
    else:
        params["packet_bytes"] = pb
    if kind == "tcp":
        cc = g.get("cc", params["cc"])
        if not isinstance(cc, str) or not cc.isidentifier():
            errs.add(f"{path}.cc", f"must be a congestion-control name like reno, got {cc!r}")
        else:
            params["cc"] = cc
        w = g.get("max_window_pkts", params["max_window_pkts"])
        if not _is_int(w) or w < 2:
            errs.add(f"{path}.max_window_pkts", f"must be an integer >= 2, got {w!r}")
        else:
            params["max_window_pkts"] = w
        sp = _num(errs, g, "start_spread_s", path, default=0.0, minimum=0.0)
        params["start_spread_s"] = sp if sp is not None else 0.0
    elif kind == "mmapp":
        sc = g.get("scales_kbps", params["scales_kbps"])
        if (not isinstance(sc, list) or not sc or not all(_is_num(x) and x > 0 for x in sc)
                or any(b <= a for a, b in zip(sc, sc[1:]))):
            errs.add(f"{path}.scales_kbps", f"must be a non-empty increasing list of kbit/s, got {sc!r}")
        else:
            params["scales_kbps"] = [float(x) for x in sc]
        ini = g.get("initial_scale", params["initial_scale"])
        n = len(params["scales_kbps"])
        if not _is_int(ini) or not 0 <= ini < n:
            errs.add(f"{path}.initial_scale", f"must be an integer 0..{n - 1}, got {ini!r}")
        else:
            params["initial_scale"] = ini
        fb = _num(errs, g, "fb_timeout_s", path, default=params["fb_timeout_s"], minimum=0.0,
                  strict_min=True)
        params["fb_timeout_s"] = fb if fb is not None else MMAPP_DEFAULTS["fb_timeout_s"]
    else:  # cbr
        has_r = "rate_kbps" in g
        has_f = "rate_fraction_of_bottleneck" in g
        if has_r == has_f:
            errs.add(f"{path}.rate_kbps", "give exactly one of rate_kbps, rate_fraction_of_bottleneck")
        r = _num(errs, g, "rate_kbps", path, minimum=0.0, strict_min=True)
        f = _num(errs, g, "rate_fraction_of_bottleneck", path, minimum=0.0, strict_min=True)
        if f is not None and f > 10:
            errs.add(f"{path}.rate_fraction_of_bottleneck", f"must be a fraction (<= 10), got {f}")
        params["rate_kbps"] = r
        params["rate_fraction_of_bottleneck"] = f


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
                               int(g["first_flow_id"]), dict(g["params"])) for g in d["groups"]),
        tagged_dscp=tuple(d.get("tagged_dscp", DEFAULT_TAGGED_DSCP)),
        blast_phase=d.get("blast_phase"), description=d.get("description", ""),
        paper=d.get("paper", ""), time_scale=float(d.get("time_scale", 1.0)),
        source=d.get("source", ""),
    )
