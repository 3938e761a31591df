#!/usr/bin/env python3
"""How far the Tofino build's Lpf averages drift from v1model's per-packet EWMA.

One packet trace per scenario drives three filters: v1model's arithmetic (the
oracle's ``PortModel``: avg += (q - avg) >> ewma_shift per arrival, F&J §11 idle
decay with bandwidth_pps), the Lpf replica (tools/tna_lpf_model.py, tau =
-s / ln(1 - w) from ``mmaqm.targets.tna.lpf_time_constant_ns``, converted by the
driver's arithmetic at Tofino 1's 1.22 GHz), and the exact time-based filter
that tau is derived for (floating point). So the report separates what the
time-based form changes (exact vs v1model) from what the hardware's arithmetic
changes (Lpf vs exact).

The trace is a FIFO served at the link rate with 1500-byte packets and Poisson
arrivals in phases (in time constants tau: 5 at 0.8 of the link, 3 at 1.3 (the
queue fills to its limit), 3 at 0.7, 2 idle, 3 at 1.1), the queue limit the only
drop (every filter sees the same queue). At each arrival it compares the
averages and what the RED zone table (``red_zone_entries`` / ``lookup``, the
same table for all) makes of them; CBT scenarios also the tagged and untagged
class averages (updated on their class's arrivals; 30 % tagged, 20 % untagged)
and the class test (average > threshold). Two sweeps over the weight: RED's
average at 100 Gbit/s, and an average of independent samples (ChIPS's tagged
share), where the samples the Lpf ignores show.

  .venv/bin/python tools/tna_lpf_drift.py            # print the report
  .venv/bin/python tools/tna_lpf_drift.py --write    # docs/results/tna-lpf-drift.md
  .venv/bin/python tools/tna_lpf_drift.py --check    # exit 1 if that file is stale
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "control-plane"))
sys.path.insert(0, str(REPO / "oracle"))
sys.path.insert(0, str(REPO / "tools"))
from mmaqm import p4constants as C  # noqa: E402
from mmaqm.config import PortPolicy, parse_config  # noqa: E402
from mmaqm.encoding import PolicyAction, policy_action  # noqa: E402
from mmaqm.targets import tna as T  # noqa: E402
from mmaqm_oracle.fixedpoint_model import PortModel, ewma, p4_to_scaled  # noqa: E402
import tna_lpf_model as M  # noqa: E402

REPORT = REPO / "docs" / "results" / "tna-lpf-drift.md"
PACKET_BYTES = 1500
QUEUE_LIMIT_PKTS = 60
MIN_TH_PKTS, MAX_TH_PKTS = 15, 30            # the CBT experiment's (cbt-fig4.yaml)
TAGGED_TH_PKTS, UNTAGGED_TH_PKTS = 10, 2
TAGGED_SHARE, UNTAGGED_SHARE = 0.3, 0.2
# (offered load as a fraction of the link, duration in time constants); 0: idle
PHASES = ((0.8, 5), (1.3, 3), (0.7, 3), (0.0, 2), (1.1, 3))
ERROR_FLOOR_PKTS = 1          # relative errors where v1model's average is >= 1 packet
SEED = 20261127
AVG_ONE = 1 << C.AVG_FRAC_BITS


@dataclass(frozen=True)
class Scenario:
    name: str
    algorithm: str                # RED or CBT_RED_ALL
    link_bps: float
    ewma_shift: int

    @property
    def packet_time_ns(self) -> float:
        return PACKET_BYTES * 8 / self.link_bps * 1e9

    @property
    def tau_ns(self) -> float:
        return T.lpf_time_constant_ns(self.ewma_shift, self.packet_time_ns)


def scenarios() -> list[Scenario]:
    out = []
    for algorithm in ("RED", "CBT_RED_ALL"):
        for rate_name, bps in (("10 Mbit/s", 10e6), ("100 Gbit/s", 100e9)):
            for k in (9, 12):
                out.append(Scenario(f"{algorithm} {rate_name} w=2^-{k}", algorithm, bps, k))
    return out


def sweep() -> list[Scenario]:
    """RED at 100 Gbit/s over the weights, for the smallest-weight limit."""
    return [Scenario(f"RED 100 Gbit/s w=2^-{k}", "RED", 100e9, k) for k in range(5, 16)]


def policy_of(s: Scenario) -> PortPolicy:
    policy = {"algorithm": s.algorithm, "queue_limit_pkts": QUEUE_LIMIT_PKTS,
              "min_th_pkts": MIN_TH_PKTS, "max_th_pkts": MAX_TH_PKTS, "max_p": 0.1,
              "ewma_weight": 2.0 ** -s.ewma_shift,
              "bandwidth_pps": s.link_bps / (PACKET_BYTES * 8)}
    if s.algorithm == "CBT_RED_ALL":
        policy.update(tagged_th_pkts=TAGGED_TH_PKTS, untagged_th_pkts=UNTAGGED_TH_PKTS)
    cfg = parse_config({"switches": {"s1": {
        "p4runtime_addr": "127.0.0.1:9559", "ports": {2: {"mac": "02:00:00:00:00:02"}},
        "policies": {2: policy}}}})
    return cfg.switches["s1"].policies[2]


def action_of(s: Scenario) -> PolicyAction:
    return policy_action(policy_of(s), policy_epoch=1, flow_epoch_shift=0)


@dataclass(frozen=True)
class Arrival:
    t_ns: float
    class_id: int
    counts: dict            # the queue's packets by class before the arrival
    queue_pkts: int
    emptied_at_ns: float | None   # the queue emptied since the last arrival, at


def trace(s: Scenario) -> list[Arrival]:
    """Poisson arrivals in PHASES into a FIFO at the link rate, limit QUEUE_LIMIT_PKTS."""
    rng = random.Random(f"{SEED}-{s.name}")
    service = s.packet_time_ns
    tau = s.tau_ns
    queue: deque[tuple[float, int]] = deque()     # (departure time, class)
    counts = {C.CLASS_TCP: 0, C.CLASS_TAGGED: 0, C.CLASS_UNTAGGED: 0}
    out: list[Arrival] = []
    t = 0.0
    busy_until = 0.0
    for load, length in PHASES:
        end = t + length * tau
        if load == 0:
            t = end
            continue
        while True:
            t += rng.expovariate(load / service)
            if t >= end:
                t = end
                break
            emptied = None
            while queue and queue[0][0] <= t:
                done, cls = queue.popleft()
                counts[cls] -= 1
                if not queue:
                    emptied = done
            u = rng.random()
            cls = C.CLASS_TAGGED if u < TAGGED_SHARE else \
                C.CLASS_UNTAGGED if u < TAGGED_SHARE + UNTAGGED_SHARE else C.CLASS_TCP
            out.append(Arrival(t, cls, dict(counts), len(queue), emptied))
            if len(queue) < QUEUE_LIMIT_PKTS:
                busy_until = max(busy_until, t) + service
                queue.append((busy_until, cls))
                counts[cls] += 1
    return out


@dataclass
class Drift:
    """Errors of one average over a trace, and its decisions' disagreement."""

    compared: int = 0
    rel_sum: float = 0.0
    rel_max: float = 0.0
    abs_max_pkts: float = 0.0
    decisions: int = 0
    disagree: int = 0

    def add(self, v1_scaled: int, lpf_scaled: int, same_decision: bool) -> None:
        self.decisions += 1
        self.disagree += not same_decision
        err = abs(lpf_scaled - v1_scaled) / AVG_ONE
        self.abs_max_pkts = max(self.abs_max_pkts, err)
        if v1_scaled >= ERROR_FLOOR_PKTS * AVG_ONE:
            rel = err * AVG_ONE / v1_scaled
            self.compared += 1
            self.rel_sum += rel
            self.rel_max = max(self.rel_max, rel)

    @property
    def rel_mean(self) -> float:
        return self.rel_sum / self.compared if self.compared else 0.0

    @property
    def disagreement(self) -> float:
        return self.disagree / self.decisions if self.decisions else 0.0


class ExactFilter:
    """The filter the Lpf approximates, in floating point: at each sample
    y += (x - y) (1 - e^(-dt / tau)) (what tau = -s / ln(1 - w) is derived for)."""

    def __init__(self, tau_ns: float) -> None:
        self.tau_ns = tau_ns
        self.y = 0.0
        self.t_ns = 0.0

    def execute(self, sample: int, t_ns: float) -> int:
        self.y += (sample - self.y) * -math.expm1(-(t_ns - self.t_ns) / self.tau_ns)
        self.t_ns = t_ns
        return int(self.y)


@dataclass
class Compared:
    """One average over a trace: the Lpf against v1model, the exact time-based
    filter against v1model (what tau = -s / ln(1 - w) itself changes), and the
    Lpf against the exact filter (what the hardware's arithmetic changes)."""

    lpf_v1: Drift = field(default_factory=Drift)
    exact_v1: Drift = field(default_factory=Drift)
    lpf_exact: Drift = field(default_factory=Drift)

    def add(self, v1: int, lpf: int, exact: int, decide) -> None:
        d_v1, d_lpf, d_exact = decide(v1), decide(lpf), decide(exact)
        self.lpf_v1.add(v1, lpf, d_v1 == d_lpf)
        self.exact_v1.add(v1, exact, d_v1 == d_exact)
        self.lpf_exact.add(exact, lpf, d_exact == d_lpf)


@dataclass
class Result:
    scenario: Scenario
    spec: M.LpfSpec
    refusal: str | None
    packets: int
    averages: dict          # "RED" / "CBT tagged" / "CBT untagged" -> Compared
    used_share: float       # the share of arrivals that moved the RED filter's timestamp


def run(s: Scenario, clock_hz: float = T.TOFINO1_CLOCK_HZ) -> Result:
    action = action_of(s)
    refusal = None
    try:
        T.check_lpf_limits(2, policy_of(s), action)
    except T.TargetRefusal as exc:
        refusal = str(exc)
    spec = M.spec_from_ns(s.tau_ns, clock_hz=clock_hz)
    zones = T.red_zone_entries(action)
    draws = random.Random(SEED)      # RED's R: the averages do not depend on it
    model = PortModel(action, rand_source=lambda: draws.randrange(C.PROB_ONE))
    cbt = s.algorithm == "CBT_RED_ALL"
    names = {C.CLASS_TAGGED: "CBT tagged", C.CLASS_UNTAGGED: "CBT untagged"} if cbt else {}
    filters = {name: (M.Lpf(spec), ExactFilter(s.tau_ns)) for name in ["RED", *names.values()]}
    averages = {name: Compared() for name in filters}
    thresholds = {C.CLASS_TAGGED: action.params.get("tagged_th_scaled"),
                  C.CLASS_UNTAGGED: action.params.get("untagged_th_scaled")}
    used = 0
    arrivals = trace(s)

    def zone(avg: int) -> str:
        return T.lookup(zones, avg).action

    for a in arrivals:
        if a.emptied_at_ns is not None:
            model.queue_emptied(int(a.emptied_at_ns // 1000))
        model.arrive(a.class_id, {"queue_pkts": a.queue_pkts,
                                  "tcp_pkts": a.counts[C.CLASS_TCP],
                                  "tagged_pkts": a.counts[C.CLASS_TAGGED],
                                  "untagged_pkts": a.counts[C.CLASS_UNTAGGED]},
                     now_us=int(a.t_ns // 1000))
        cycles = M.cycles_at(a.t_ns, clock_hz)
        lpf, exact = filters["RED"]
        before = lpf.state.timestamp
        sample = p4_to_scaled(a.queue_pkts)
        averages["RED"].add(model.red_avg_scaled, lpf.execute(sample, cycles),
                            exact.execute(sample, a.t_ns), zone)
        used += lpf.state.timestamp != before
        if a.class_id in names:
            lpf, exact = filters[names[a.class_id]]
            sample = p4_to_scaled(a.counts[a.class_id])
            th = thresholds[a.class_id]
            averages[names[a.class_id]].add(
                model.class_avg_scaled[a.class_id], lpf.execute(sample, cycles),
                exact.execute(sample, a.t_ns), lambda avg: avg > th)
    return Result(s, spec, refusal, len(arrivals), averages,
                  used / len(arrivals) if arrivals else 0.0)


# ---- an average of independent samples: ChIPS's tagged share (dcbt §3.2)
SHARE_TAGGED = 0.3
SHARE_LIMIT_Q16 = round(1 / 3 * C.PROB_ONE)      # chips_max_tagged_ratio 0.5
SHARE_SHIFTS = tuple(range(5, 12))


@dataclass(frozen=True)
class ShareResult:
    ewma_shift: int
    sd_v1: float            # the share's standard deviation around SHARE_TAGGED
    sd_lpf: float
    used_share: float
    disagreement: float     # share > limit differs


def share_run(k: int, link_bps: float = 100e9) -> ShareResult:
    """Poisson enqueues at 0.95 of the link, each tagged with SHARE_TAGGED; the
    share after a warm-up of 20 / w enqueues, over the next 20 000 + 20 / w."""
    rng = random.Random(f"{SEED}-share-{k}")
    s_ns = PACKET_BYTES * 8 / link_bps * 1e9
    lpf = M.Lpf(M.spec_from_ns(T.lpf_time_constant_ns(k, s_ns)))
    v1, t = 0, 0.0
    warm = 20 << k
    n = used = differ = 0
    se_v1 = se_lpf = 0.0
    for i in range(2 * warm + 20000):
        t += rng.expovariate(0.95 / s_ns)
        x = C.PROB_ONE if rng.random() < SHARE_TAGGED else 0
        v1 = ewma(v1, x, k)
        before = lpf.state.timestamp
        out = lpf.execute(x, M.cycles_at(t))
        if i >= warm:
            n += 1
            used += lpf.state.timestamp != before
            differ += (v1 > SHARE_LIMIT_Q16) != (out > SHARE_LIMIT_Q16)
            se_v1 += (v1 / C.PROB_ONE - SHARE_TAGGED) ** 2
            se_lpf += (out / C.PROB_ONE - SHARE_TAGGED) ** 2
    return ShareResult(k, math.sqrt(se_v1 / n), math.sqrt(se_lpf / n), used / n, differ / n)


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _row(r: Result, what: str, c: Compared) -> str:
    s = r.scenario
    refused = "refused" if r.refusal else "accepted"
    a, b, h = c.lpf_v1, c.exact_v1, c.lpf_exact
    return (f"| {s.name} | {what} | {s.tau_ns / 1e6:.4g} | {r.spec.rise_exponent}/"
            f"{r.spec.mantissa} | {refused} | {r.packets} | {_pct(a.rel_max)} | "
            f"{_pct(a.rel_mean)} | {a.abs_max_pkts:.2f} | {_pct(a.disagreement)} | "
            f"{_pct(b.rel_mean)} | {_pct(b.disagreement)} | {_pct(h.rel_max)} | "
            f"{_pct(h.rel_mean)} | {_pct(h.disagreement)} |")


HEAD = ("| scenario | average | tau (ms) | exponent/mantissa | TNA target | arrivals | "
        "Lpf vs v1model: max rel. error | mean rel. error | max abs. error (pkts) | "
        "decisions differ | exact filter vs v1model: mean rel. error | decisions differ | "
        "Lpf vs exact filter: max rel. error | mean rel. error | decisions differ |\n"
        "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


@dataclass(frozen=True)
class Measured:
    """Everything the report shows."""

    scenarios: list
    sweep: list
    shares: list


def measure() -> Measured:
    return Measured([run(s) for s in scenarios()], [run(s) for s in sweep()],
                    [share_run(k) for k in SHARE_SHIFTS])


def render(m: Measured) -> str:
    results = m.scenarios
    lines = [
        "# How far the Tofino build's Lpf averages drift from v1model's",
        "",
        "Generated by `tools/tna_lpf_drift.py --write` (checked by "
        "`tests/tools/test_tna_lpf_drift.py`); the method is in the tool's docstring and in",
        "[docs/tofino.md](../tofino.md), \"How far the Lpf averages drift\". The Lpf is the "
        "replica in `tools/tna_lpf_model.py` of open-p4studio's model and driver, at Tofino 1's "
        f"{T.TOFINO1_CLOCK_HZ / 1e9:g} GHz; the exact filter is y += (x - y)(1 - e^(-dt/tau)) "
        "in floating point, the filter tau is derived for.",
        "",
        f"Relative errors: |a - b| / b at the arrivals where b is at least "
        f"{ERROR_FLOOR_PKTS} packet. Decisions: the RED zone (below min_th / early / forced) "
        "from the same `red_zone` entries, and for a class average the class test "
        f"(average > threshold). Thresholds: min_th {MIN_TH_PKTS}, max_th {MAX_TH_PKTS}, "
        f"limit {QUEUE_LIMIT_PKTS} packets; CBT tagged {TAGGED_TH_PKTS}, untagged "
        f"{UNTAGGED_TH_PKTS}. \"refused\": the TNA target refuses the policy "
        "(`targets.tna.check_lpf_limits`); its row shows what the filter would do.",
        "",
        "## Scenarios",
        "",
        HEAD,
    ]
    for r in results:
        for name, c in r.averages.items():
            lines.append(_row(r, name, c))
    lines += ["", "Refusals:", ""]
    lines += [f"- {r.scenario.name}: {r.refusal}" for r in results if r.refusal]
    lines += [
        "",
        "## Queue averages over the weights (RED, 100 Gbit/s)",
        "",
        "The filter uses a sample only 2^(e - 7) cycles or more after its timestamp "
        "(e: tau's exponent): at a steady packet rate about one in 2^(k - 8) for w = 2^-k. "
        "\"samples used\": the share of arrivals that moved the filter's timestamp.",
        "",
        "| w | tau (ms) | samples used | Lpf vs v1model: mean rel. error | zone decisions "
        "differ | Lpf vs exact filter: max rel. error | mean rel. error | zone decisions "
        "differ |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in m.sweep:
        s = r.scenario
        a, h = r.averages["RED"].lpf_v1, r.averages["RED"].lpf_exact
        lines.append(f"| 2^-{s.ewma_shift} | {s.tau_ns / 1e6:.4g} | {_pct(r.used_share)} | "
                     f"{_pct(a.rel_mean)} | {_pct(a.disagreement)} | {_pct(h.rel_max)} | "
                     f"{_pct(h.rel_mean)} | {_pct(h.disagreement)} |")
    lines += [
        "",
        "## An average of independent samples (ChIPS's tagged share, 100 Gbit/s)",
        "",
        f"Each enqueue tagged with probability {SHARE_TAGGED}; the limit 1/3 "
        "(chips_max_tagged_ratio 0.5). The share's standard deviation around "
        f"{SHARE_TAGGED}: v1model's falls with w, the Lpf's stays near that of 2^8 samples.",
        "",
        "| w | samples used | v1model's sd | Lpf's sd | ratio | share > limit differs |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in m.shares:
        lines.append(f"| 2^-{r.ewma_shift} | {_pct(r.used_share)} | {r.sd_v1:.4f} | {r.sd_lpf:.4f} | "
                     f"{r.sd_lpf / r.sd_v1:.2f} | {_pct(r.disagreement)} |")
    return "\n".join(lines) + "\n"


def is_current(path: Path, text: str) -> bool:
    """Whether the report at path is the one computed (text)."""
    return path.exists() and path.read_text() == text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"write {REPORT.relative_to(REPO)}")
    mode.add_argument("--check", action="store_true",
                      help=f"exit 1 if {REPORT.relative_to(REPO)} is not what this computes")
    a = ap.parse_args(argv)
    text = render(measure())
    if a.write:
        REPORT.write_text(text)
        return 0
    if a.check:
        if not is_current(REPORT, text):
            print(f"tna_lpf_drift: {REPORT.relative_to(REPO)} is stale; run "
                  "tools/tna_lpf_drift.py --write", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
