"""How far D-CBT's shares lag behind flows that start or stop (dcbt §3.1).

The paper's active-flow counting unit sees a packet's flow before the packet's
threshold test. Here the switch reports flows by digest (flow_report.p4) and the
controller recomputes the shares every update_interval_ms, so the switch applies
shares computed from counts that lag the truth. The controller logs every share
push (``mmaqm-ctl run --events-out``: time, port, active-flow counts); this module
compares those counts with the scenario's schedule of flows.

For each change of a class's true flow count at the bottleneck port (flows that
start or stop within GROUP_S of each other form one change), the lag is the time
from the change's last start (or stop) to the first share push whose count for
that class has reached the new truth. Expected bounds (docs/experiments/dcbt.md,
"Active-flow counting"): a start is seen after the digest's max_timeout (10 ms), any wait for
the previous digest list's ack, the controller's next update tick (<= 50 ms) and
the write; a stop only after the flow's last report has aged past the expiry
interval (300 ms): between expiry - epoch and expiry after the last packet, plus
the update tick.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from .samples import read_jsonl

CLASSES = ("TCP", "TAGGED", "UNTAGGED")
GROUP_S = 1.0          # starts (stops) of one class closer than this are one change


def read_events(path: Union[str, Path]) -> list[dict[str, Any]]:
    """The share_push events of an --events-out file, sorted by time ([] if absent)."""
    if not Path(path).exists():
        return []
    return [e for e in read_jsonl(path) if e.get("event") == "share_push"]


def truth_steps(flows: Mapping[str, Mapping[str, Any]]) -> dict[str, list[tuple[float, int]]]:
    """{class: [(time_s since traffic start, +1 start / -1 stop)]}, sorted by time.

    A flow starts at start_s + start_late_ms (when its sender really began) and
    stops at stop_s."""
    steps: dict[str, list[tuple[float, int]]] = {c: [] for c in CLASSES}
    for f in flows.values():
        cls = f["class"]
        if cls not in steps:
            continue
        start_s = float(f["start_s"]) + float(f.get("start_late_ms") or 0) / 1000
        steps[cls].append((start_s, +1))
        steps[cls].append((float(f["stop_s"]), -1))
    for cls in steps:
        steps[cls].sort()
    return steps


def changes(steps: Sequence[tuple[float, int]], group_s: float = GROUP_S) -> list[dict[str, Any]]:
    """Group same-direction steps closer than group_s: [{direction, first_s, last_s,
    from, to}] with the true count before the first and after the last step."""
    out: list[dict[str, Any]] = []
    count = 0
    for t_s, delta in steps:
        cur = out[-1] if out else None
        if cur and cur["direction"] == delta and t_s - cur["last_s"] < group_s:
            cur["last_s"] = t_s
        else:
            cur = {"direction": delta, "first_s": t_s, "last_s": t_s, "from": count}
            out.append(cur)
        count += delta
        cur["to"] = count
    return out


def _reached(count: int, change: Mapping[str, Any]) -> bool:
    return count >= change["to"] if change["direction"] > 0 else count <= change["to"]


def class_lags(events: Sequence[Mapping[str, Any]], flows: Mapping[str, Mapping[str, Any]],
               t0_ns: int, switch: str, port: int) -> list[dict[str, Any]]:
    """One row per change of a class's true count at (switch, port):
    {class, direction: start|stop, t_s, from, to, lag_ms, first_step_lag_ms}.

    lag_ms: from the change's last step to the first push whose count reached the
    new truth; first_step_lag_ms: from its first step to the first push that moved
    the count toward it. None when no push observed it (the controller stopped first)."""
    mine = [e for e in events if e.get("switch") == switch and int(e.get("port", -1)) == port]
    rows = []
    for cls, steps in truth_steps(flows).items():
        for ch in changes(steps):
            first_ns = t0_ns + round(ch["first_s"] * 1e9)
            last_ns = t0_ns + round(ch["last_s"] * 1e9)
            lag_ms = first_lag_ms = None
            for e in mine:
                n = int(e["active_flows"].get(cls, 0))
                if first_lag_ms is None and e["t_ns"] >= first_ns and (
                        n > ch["from"] if ch["direction"] > 0 else n < ch["from"]):
                    first_lag_ms = (e["t_ns"] - first_ns) / 1e6
                if e["t_ns"] >= first_ns and _reached(n, ch):
                    lag_ms = max(0.0, (e["t_ns"] - last_ns) / 1e6)
                    break
            rows.append({"class": cls, "direction": "start" if ch["direction"] > 0 else "stop",
                         "t_s": round(ch["first_s"], 3), "from": ch["from"], "to": ch["to"],
                         "lag_ms": None if lag_ms is None else round(lag_ms, 1),
                         "first_step_lag_ms": None if first_lag_ms is None
                         else round(first_lag_ms, 1)})
    rows.sort(key=lambda r: (r["t_s"], r["class"]))
    return rows


def lag_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Optional[float]]:
    """Largest observed start and stop lag, and how many changes went unobserved."""
    def worst(direction: str) -> Optional[float]:
        lags = [r["lag_ms"] for r in rows if r["direction"] == direction and r["lag_ms"] is not None]
        return max(lags) if lags else None
    return {"start_lag_ms_max": worst("start"), "stop_lag_ms_max": worst("stop"),
            "unobserved": sum(1 for r in rows if r["lag_ms"] is None)}
