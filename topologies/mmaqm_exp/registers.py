"""RED and class averages of the bottleneck port over time, read from BMv2's registers.

dcbt §6.1 (Fig. 10) explains CBT's unfairness by its *unsynchronised* averages:
a CBT class average moves only when a packet of that class arrives, RED's on
every packet that reaches the RED unit, so "whoever updates its weighted
average more often will get less bandwidth". To see this on the switch, an
experiment samples the registers that hold the averages (averages.p4:
``red_avg_scaled`` per port, ``class_avg_scaled`` per port x CLASS_SLOTS, in
packets x 2^AVG_FRAC_BITS) and the exact occupancy (occupancy.p4:
``queue_pkts``, ``class_queue_pkts``).

BMv2's P4Runtime server cannot read registers (docs/design.md §1.1), so the
channel is BMv2's Thrift debug interface: one ``simple_switch_CLI`` process per
run, started in the switch namespace (the only place its Thrift port is
reachable), fed ``register_read <name> <index>`` lines on stdin; ``greet``
("hello") closes each sample. Experiments only: the controller never depends
on it. The CLI runs under this interpreter (the project venv, where ``thrift``
is pinned), like mmaqm.bmv2_tm.

    sampler = RegisterSampler(net.popen_switch_ns, thrift_port, port=4).start()
    ... traffic ...
    sampler.stop()
    sampler.write(out / "registers.jsonl", t0_ns)

Then :func:`summary_block` turns the file into summary.json's ``registers``:
a 10 Hz series and, per phase and UDP class, the numbers that test the
paper's diagnosis (see its docstring).
"""

from __future__ import annotations

import json
import math
import os
import re
import selectors
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from mmaqm import p4constants as C
from mmaqm.fixedpoint import from_scaled

from .samples import read_jsonl

REGISTERS_FILE = "registers.jsonl"
META_FILE = "registers.meta.json"
SAMPLE_PERIOD_MS = 50           #: target period; the achieved one is reported
SERIES_HZ = 10                  #: the series kept in summary.json
START_TIMEOUT_S = 15.0          #: the CLI's start (imports, JSON from the switch) + first sample
READ_TIMEOUT_S = 2.0            #: one sample's round trip; longer = the switch is gone
STOP_TIMEOUT_S = 3.0
AVG_CLASSES = ("TAGGED", "UNTAGGED")        #: classes with a class average (CBT, D-CBT)
OCC_CLASSES = ("TCP", "TAGGED", "UNTAGGED")
SENTINEL_CMD = "greet"          #: runtime_CLI's do_greet prints "hello": end of a sample
SENTINEL_OUT = "hello"

_VALUE_RE = re.compile(r"([A-Za-z_][\w.]*)\[(\d+)\]=\s*(-?\d+)")
_ERROR_RE = re.compile(r"(Error:.*|Invalid .*|Traceback.*)")


class RegisterReadError(RuntimeError):
    """The CLI answered a register_read with an error (unknown name, bad index)."""


# ---------------------------------------------------------------------------
# Pure parts: which registers, parsing the CLI's output, one sample
# ---------------------------------------------------------------------------


def register_reads(port: int) -> list[tuple[str, int]]:
    """(register, index) read per sample for one egress port, in order."""
    reads = [("red_avg_scaled", port)]
    reads += [("class_avg_scaled", C.class_index(port, C.CLASSES[c])) for c in AVG_CLASSES]
    reads.append(("queue_pkts", port))
    reads += [("class_queue_pkts", C.class_index(port, C.CLASSES[c])) for c in OCC_CLASSES]
    return reads


def commands(reads: Sequence[tuple[str, int]]) -> str:
    """stdin text for one sample: the reads, then the sentinel."""
    return "".join(f"register_read {name} {index}\n" for name, index in reads) + SENTINEL_CMD + "\n"


def parse_register_output(text: str) -> dict[tuple[str, int], int]:
    """{(register, index): value} from simple_switch_CLI output such as
    ``RuntimeCmd: red_avg_scaled[4]= 131072``. Raises RegisterReadError on an
    error line (``Error: ...``, ``Invalid register operation (...)``)."""
    err = _ERROR_RE.search(text)
    if err:
        raise RegisterReadError(err.group(1).strip())
    return {(m.group(1), int(m.group(2))): int(m.group(3)) for m in _VALUE_RE.finditer(text)}


def sample_record(values: Mapping[tuple[str, int], int], port: int) -> dict[str, Any]:
    """One registers.jsonl record's values, in packets (averages: scaled / 2^AVG_FRAC_BITS).
    Raises RegisterReadError if a read is missing."""
    missing = [f"{n}[{i}]" for n, i in register_reads(port) if (n, i) not in values]
    if missing:
        raise RegisterReadError(f"no value for {', '.join(missing)}")
    ci = {c: C.class_index(port, C.CLASSES[c]) for c in OCC_CLASSES}
    return {
        "red_avg_pkts": from_scaled(values[("red_avg_scaled", port)]),
        "class_avg_pkts": {c: from_scaled(values[("class_avg_scaled", ci[c])]) for c in AVG_CLASSES},
        "queue_pkts": values[("queue_pkts", port)],
        "class_queue_pkts": {c: values[("class_queue_pkts", ci[c])] for c in OCC_CLASSES},
    }


# ---------------------------------------------------------------------------
# The sampler (a thread driving one simple_switch_CLI process)
# ---------------------------------------------------------------------------


def cli_argv(thrift_port: int) -> list[str]:
    """simple_switch_CLI under this interpreter, unbuffered (its output is read per sample)."""
    cli = shutil.which("simple_switch_CLI")
    if cli is None:
        raise FileNotFoundError("simple_switch_CLI not found: see docs/install.md")
    return [sys.executable, "-u", cli, "--thrift-port", str(thrift_port)]


@dataclass
class RegisterSampler:
    """Reads the port's averages and occupancy every period_ms through one CLI process.

    ``popen(argv, **kw)`` starts the CLI where the Thrift port is reachable
    (Network.popen_switch_ns). Never raises after start(): when the switch or
    the CLI goes away, sampling stops and ``error`` says why."""

    popen: Callable[..., subprocess.Popen]
    thrift_port: int
    port: int
    switch: str = "r1"
    period_ms: float = SAMPLE_PERIOD_MS
    samples: list[dict[str, Any]] = field(default_factory=list)
    error: Optional[str] = None
    proc: Optional[subprocess.Popen] = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: Optional[threading.Thread] = None
    _buf: bytes = b""
    _thread_cpu_s: float = 0.0
    _wall_s: float = 0.0
    _cli_cpu_s: Optional[float] = None
    _first: Optional[tuple[float, Optional[float]]] = None   #: (monotonic, CLI CPU s) at sample 1
    _last_t: float = 0.0

    @property
    def pid(self) -> Optional[int]:
        return None if self.proc is None else self.proc.pid

    def start(self) -> "RegisterSampler":
        self.proc = self.popen(cli_argv(self.thrift_port), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0)
        self._thread = threading.Thread(target=self._loop, name="register-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sampling and the CLI (EOF, then SIGTERM/SIGKILL)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=READ_TIMEOUT_S + 1)
        if self.proc is None:
            return
        from .cpu import process_cpu_s
        self._cli_cpu_s = process_cpu_s(self.proc.pid)
        self._last_t = time.monotonic()
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            from .lab import stop_processes
            stop_processes([self.proc], STOP_TIMEOUT_S)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def _loop(self) -> None:
        reads = register_reads(self.port)
        text = commands(reads).encode()
        t_wall0, t_cpu0 = time.monotonic(), time.thread_time()
        period_s = self.period_ms / 1000
        timeout_s = START_TIMEOUT_S
        next_t = time.monotonic()
        try:
            while not self._stop.is_set():
                t_a = time.time_ns()
                self.proc.stdin.write(text)
                out = self._read_until_sentinel(timeout_s)
                t_b = time.time_ns()
                timeout_s = READ_TIMEOUT_S
                rec = sample_record(parse_register_output(out), self.port)
                self.samples.append({"t_ns": (t_a + t_b) // 2, "read_ms": round((t_b - t_a) / 1e6, 3),
                                     **rec})
                if self._first is None:           # the CLI has started: its cost from here on
                    from .cpu import process_cpu_s
                    self._first = (time.monotonic(), process_cpu_s(self.proc.pid))
                next_t += period_s
                now = time.monotonic()
                if next_t < now:                  # late: skip the missed slots
                    next_t = now + period_s - (now - next_t) % period_s
                self._stop.wait(next_t - now)
        except (OSError, ValueError, TimeoutError, EOFError, RegisterReadError) as err:
            if not self._stop.is_set():
                self.error = f"{type(err).__name__}: {err}"
        finally:
            self._wall_s = time.monotonic() - t_wall0
            self._thread_cpu_s = time.thread_time() - t_cpu0

    def _read_until_sentinel(self, timeout_s: float) -> str:
        """The CLI's output up to and including the sentinel's line."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                k = self._buf.find(SENTINEL_OUT.encode())
                if k >= 0:
                    end = self._buf.find(b"\n", k)
                    end = len(self._buf) if end < 0 else end + 1
                    out, self._buf = self._buf[:end], self._buf[end:]
                    return out.decode(errors="replace")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no answer from simple_switch_CLI in {timeout_s:g} s")
                if not sel.select(left):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    tail = self._buf.decode(errors="replace").strip()[-500:]
                    raise EOFError(f"simple_switch_CLI exited ({self.proc.poll()}): {tail}")
                self._buf += chunk

    def meta(self) -> dict[str, Any]:
        """The sampler's own cost and achieved period (registers.meta.json)."""
        ts = [s["t_ns"] for s in self.samples]
        gaps_ms = sorted((b - a) / 1e6 for a, b in zip(ts, ts[1:]))
        reads_ms = sorted(s["read_ms"] for s in self.samples)
        wall = self._wall_s or float("nan")
        steady = None
        if self._first is not None and None not in (self._first[1], self._cli_cpu_s):
            span = self._last_t - self._first[0]
            steady = round(100 * (self._cli_cpu_s - self._first[1]) / span, 2) if span > 0 else None
        return {
            "switch": self.switch, "port": self.port, "thrift_port": self.thrift_port,
            "reads_per_sample": len(register_reads(self.port)),
            "period_ms_target": self.period_ms, "samples": len(self.samples),
            "period_ms": _dist(gaps_ms), "read_ms": _dist(reads_ms),
            "wall_s": round(self._wall_s, 3),
            "cli_cpu_s": self._cli_cpu_s,
            # percent of one core after its start-up (imports, the switch's JSON)
            "cli_startup_cpu_s": None if self._first is None else self._first[1],
            "cli_cpu_pct": steady,
            "thread_cpu_pct": round(100 * self._thread_cpu_s / wall, 2) if self._wall_s else None,
            "error": self.error,
        }

    def write(self, path: Union[str, Path], t0_ns: Optional[int] = None) -> Path:
        """registers.jsonl (one sample per line; t_s = time since traffic start when t0_ns
        is known) and registers.meta.json beside it."""
        p = Path(path)
        with open(p, "w") as f:
            for s in self.samples:
                rec = {"t_s": None if t0_ns is None else round((s["t_ns"] - t0_ns) / 1e9, 6),
                       "switch": self.switch, "port": self.port, **s}
                f.write(json.dumps(rec) + "\n")
        (p.parent / META_FILE).write_text(json.dumps(self.meta(), indent=1) + "\n")
        return p


def _dist(xs: Sequence[float]) -> Optional[dict[str, float]]:
    """mean / median / p95 / max of a sorted list."""
    if not xs:
        return None
    return {"mean": round(sum(xs) / len(xs), 3), "p50": round(xs[len(xs) // 2], 3),
            "p95": round(xs[min(len(xs) - 1, int(0.95 * len(xs)))], 3), "max": round(xs[-1], 3)}


# ---------------------------------------------------------------------------
# Statistics (pure): does a class average follow its class?
# ---------------------------------------------------------------------------


def read_samples(path: Union[str, Path]) -> list[dict[str, Any]]:
    """registers.jsonl records sorted by time (blank lines ignored)."""
    return read_jsonl(path)


def unchanged_while_red_moved(cls: Sequence[float], red: Sequence[float]) -> Optional[float]:
    """Of the consecutive sample pairs in which the RED average changed, the share in
    which the class average did not (None without a RED change)."""
    moved = [i for i in range(1, len(red)) if red[i] != red[i - 1]]
    if not moved:
        return None
    return sum(1 for i in moved if cls[i] == cls[i - 1]) / len(moved)


def ages_s(t_s: Sequence[float], values: Sequence[float]) -> list[float]:
    """Per sample, the time since the value last changed (at sample resolution; from
    the first sample until a change is seen)."""
    out, last = [], t_s[0] if t_s else 0.0
    for i, t in enumerate(t_s):
        if i and values[i] != values[i - 1]:
            last = t
        out.append(t - last)
    return out


def correlation(xs: Sequence[float], ys: Sequence[float]) -> Optional[float]:
    """Pearson correlation; None when either series is constant or too short."""
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / math.sqrt(sxx * syy)


def _mean(xs: Sequence[float]) -> Optional[float]:
    return sum(xs) / len(xs) if xs else None


def _r(x: Optional[float], nd: int = 4) -> Optional[float]:
    return None if x is None or not math.isfinite(x) else round(x, nd)


def threshold_at(policy_params: Mapping[str, Any], policy: Mapping[str, Any], cls: str,
                 red_avg_pkts: float) -> Optional[float]:
    """The class threshold (packets) in force for a sample, from the parameters the
    controller had pushed (counters.jsonl ``policies``), else from the policy:
    CBT (cbt §3) a static tagged_th / untagged_th; D-CBT (dcbt §3.1) the tagged one is
    red_avg * share_tagged, the untagged one share_untagged * (min_th + max_p (max_th - min_th))."""
    one = 1 << C.AVG_FRAC_BITS
    if cls == "TAGGED":
        if "tagged_share_q16" in policy_params:
            return red_avg_pkts * policy_params["tagged_share_q16"] / (1 << C.PROB_FRAC_BITS)
        if "tagged_th_scaled" in policy_params:
            return policy_params["tagged_th_scaled"] / one
        return policy.get("tagged_th_pkts")
    if "untagged_th_scaled" in policy_params:
        return policy_params["untagged_th_scaled"] / one
    return policy.get("untagged_th_pkts")


def pushed_params_series(counter_samples: Sequence[Mapping[str, Any]], switch: str,
                         port: int) -> tuple[list[int], list[dict[str, Any]]]:
    """(t_ns, pushed threshold parameters) of the port from the controller's counter JSONL."""
    ts, params = [], []
    for s in counter_samples:
        if s.get("switch") != switch:
            continue
        p = (s.get("policies") or {}).get(str(port))
        if p is not None:
            ts.append(int(s["t_ns"]))
            params.append(dict(p))
    return ts, params


def _params_at(ts: Sequence[int], params: Sequence[Mapping[str, Any]], t_ns: int) -> Mapping[str, Any]:
    import bisect
    if not ts:
        return {}
    i = bisect.bisect_right(ts, t_ns)
    return params[max(0, i - 1)]


def downsample(t_s: Sequence[float], hz: float) -> list[int]:
    """Indexes of the first sample in each 1/hz bin."""
    out, last_bin = [], None
    for i, t in enumerate(t_s):
        b = math.floor(t * hz)
        if b != last_bin:
            out.append(i)
            last_bin = b
    return out


def updates_per_red_update(algorithm: str, counts: Mapping[str, Mapping[str, Any]],
                           cls: str) -> Optional[float]:
    """How often the class average is updated per update of RED's average, from one phase's
    bottleneck counter deltas ({class: {"arrivals", "drops": {reason: n}}}) and each
    algorithm's update rule: CBT (cbt §3) updates a class average on that class's arrivals,
    RED's on every packet reaching the RED unit (RED for all: TCP and threshold survivors;
    RED for TCP only: TCP); D-CBT (dcbt §3.1) updates all of them on every arrival."""
    if algorithm.startswith("DCBT"):
        return 1.0
    arrivals = {c: int(v.get("arrivals", 0)) for c, v in counts.items()}
    if algorithm == "CBT_RED_ALL":
        class_drops = sum(int(v.get("drops", {}).get("CLASS_THRESHOLD", 0)) for v in counts.values())
        red_updates = sum(arrivals.values()) - class_drops
    elif algorithm == "CBT_RED_TCP_ONLY":
        red_updates = arrivals.get("TCP", 0)
    else:
        return None                     # no class averages
    return arrivals.get(cls, 0) / red_updates if red_updates > 0 else None


def phase_stats(rows: Sequence[Mapping[str, Any]], a_s: float, b_s: float,
                class_share: Mapping[str, Optional[float]],
                class_kbps_per_flow: Mapping[str, Optional[float]],
                class_flows: Mapping[str, int],
                update_ratio: Optional[Mapping[str, Optional[float]]] = None) -> dict[str, Any]:
    """The diagnosis numbers of one phase [a_s, b_s) from rows with t_s, red, class avgs,
    class occupancies and thresholds (see summary_block)."""
    ph = [r for r in rows if a_s <= r["t_s"] < b_s]
    out: dict[str, Any] = {"samples": len(ph)}
    if len(ph) < 2:
        return out
    red = [r["red"] for r in ph]
    red_mean = _mean(red)
    out["red_avg_mean_pkts"] = _r(red_mean)
    out["queue_mean_pkts"] = _r(_mean([r["queue"] for r in ph]))
    out["red_avg_changed_share"] = _r(sum(1 for i in range(1, len(red)) if red[i] != red[i - 1])
                                      / (len(red) - 1))
    t = [r["t_s"] for r in ph]
    for c in AVG_CLASSES:
        avg = [r["avg"][c] for r in ph]
        occ = [r["occ"][c] for r in ph]
        with_th = [r for r in ph if r["th"].get(c)]
        ths = [(r["avg"][c], r["th"][c]) for r in with_th]
        tested = [(r["avg"][c], r["th"][c]) for r in with_th if r["tested"]]
        avg_mean, occ_mean = _mean(avg), _mean(occ)
        share = class_share.get(c)
        avg_share = avg_mean / red_mean if red_mean else None
        n = class_flows.get(c, 0)
        out[c] = {
            "avg_mean_pkts": _r(avg_mean),
            "occupancy_mean_pkts": _r(occ_mean),
            # > 1: the class average overstates the class's real queue share (dcbt §6.1)
            "avg_over_occupancy": _r(avg_mean / occ_mean) if occ_mean else None,
            "unchanged_while_red_moved": _r(unchanged_while_red_moved(avg, red)),
            "updates_per_red_update": _r((update_ratio or {}).get(c)),
            # does the class average move with RED's (synchronised) or on its own?
            "corr_with_red": _r(correlation(avg, red), 3),
            "age_mean_ms": _r(1000 * _mean(ages_s(t, avg)), 1),
            "avg_share_of_red": _r(avg_share),
            "throughput_share": share,
            # 1 = the average's share of RED's average is the class's bandwidth share
            "avg_share_over_throughput_share": (_r(avg_share / share)
                                                if avg_share is not None and share else None),
            "avg_pkts_per_flow": _r(avg_mean / n) if n else None,
            "kbps_per_flow": class_kbps_per_flow.get(c),
            "threshold_mean_pkts": _r(_mean([th for _, th in ths])),
            "avg_over_threshold_mean": _r(_mean([a / th for a, th in ths])),
            # of the samples in which the class test applies (D-CBT: red_avg > min_th)
            "tested_share": _r(len(tested) / len(ths)) if ths else None,
            "above_threshold_share": _r(sum(1 for a, th in tested if a > th) / len(tested))
            if tested else None,
        }
    return out


def summary_block(reg_path: Union[str, Path], summary: Mapping[str, Any],
                  counters_path: Union[str, Path, None] = None) -> Optional[dict[str, Any]]:
    """summary.json's ``registers``: the sampler's cost, a SERIES_HZ series (packets) and
    per phase and UDP class the numbers that test dcbt §6.1's diagnosis:

    * ``unchanged_while_red_moved``: share of sample intervals in which RED's average
      changed and the class average did not (a class average not updated);
    * ``age_mean_ms``: mean time since the class average last changed (sample resolution);
    * ``updates_per_red_update``: class-average updates per RED-average update, from the
      counters and the algorithm's update rule (exact, unlike the 50 ms samples);
    * ``corr_with_red``: correlation of the class average with RED's average over the samples;
    * ``avg_over_occupancy``: mean class average / mean real class occupancy (occupancy.p4);
    * ``avg_share_over_throughput_share``: (class average / RED average) / the class's
      share of the delivered throughput; dcbt §6.1: 1 under synchronised averages;
    * ``avg_over_threshold_mean``, ``above_threshold_share``: the class average against
      the threshold in force (CBT static; D-CBT from the pushed shares).
    None if there is no registers.jsonl."""
    reg_path = Path(reg_path)
    if not reg_path.exists():
        return None
    samples = [s for s in read_samples(reg_path) if s.get("t_s") is not None]
    meta_path = reg_path.parent / META_FILE
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else None
    block: dict[str, Any] = {"file": reg_path.name, "sampler": meta, "series": None, "phases": {}}
    if not samples:
        return block
    policy = summary.get("policy") or {}
    switch, port = samples[0]["switch"], int(samples[0]["port"])
    ts_p, params = ([], [])
    if counters_path is not None and Path(counters_path).exists():
        from .analysis import read_counters
        ts_p, params = pushed_params_series(read_counters(counters_path), switch, port)
    dcbt = str(policy.get("algorithm", "")).startswith("DCBT")
    min_th = policy.get("min_th_pkts")
    rows = []
    for s in samples:
        pp = _params_at(ts_p, params, int(s["t_ns"]))
        rows.append({"t_s": s["t_s"], "red": s["red_avg_pkts"], "avg": s["class_avg_pkts"],
                     "occ": s["class_queue_pkts"], "queue": s["queue_pkts"],
                     "th": {c: threshold_at(pp, policy, c, s["red_avg_pkts"]) for c in AVG_CLASSES},
                     # dcbt §3.1: D-CBT tests a class only while red_avg > min_th; CBT always
                     "tested": not dcbt or (min_th is not None and s["red_avg_pkts"] > min_th)})
    duration = summary["scenario"]["duration_s"]
    kept = [r for r in rows if 0 <= r["t_s"] <= duration]
    idx = downsample([r["t_s"] for r in kept], SERIES_HZ)
    block["series"] = {
        "hz": SERIES_HZ,
        "t_s": [round(kept[i]["t_s"], 3) for i in idx],
        "red_avg_pkts": [_r(kept[i]["red"]) for i in idx],
        "queue_pkts": [kept[i]["queue"] for i in idx],
        **{f"{c.lower()}_avg_pkts": [_r(kept[i]["avg"][c]) for i in idx] for c in AVG_CLASSES},
        **{f"{c.lower()}_th_pkts": [_r(kept[i]["th"][c]) for i in idx] for c in AVG_CLASSES},
    }
    port_counts = (((summary.get("switch") or {}).get("ports") or {})
                   .get(f"{switch}:{port}") or {}).get("phases") or {}
    for p in summary["scenario"]["phases"]:
        ph = summary.get("phases", {}).get(p["name"], {})
        counts = port_counts.get(p["name"])
        ratio = ({c: updates_per_red_update(str(policy.get("algorithm", "")), counts, c)
                  for c in AVG_CLASSES} if counts else None)
        block["phases"][p["name"]] = phase_stats(
            rows, p["start_s"], p["end_s"], ph.get("class_share") or {},
            ph.get("class_avg_per_flow_kbps") or {}, ph.get("n_flows_by_class") or {}, ratio)
    return block


def start_sampler(net: Any, switch: str, port: int) -> RegisterSampler:
    """A started sampler of one switch port of a running Network (mmaqm_exp.network)."""
    return RegisterSampler(net.popen_switch_ns, net.thrift_port(switch), port, switch=switch).start()


def finish_sampler(sampler: RegisterSampler, out_dir: Union[str, Path], t0_ns: int,
                   stream: Any = sys.stdout) -> Path:
    """Write registers.jsonl (+ meta) after sampler.stop(); say so when sampling broke off."""
    path = sampler.write(Path(out_dir) / REGISTERS_FILE, t0_ns)
    if sampler.error:
        print(f"mmaqm-exp: register sampling stopped early ({len(sampler.samples)} samples): "
              f"{sampler.error}", file=stream, flush=True)
    return path
