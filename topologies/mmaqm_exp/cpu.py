"""CPU use of processes and of the whole machine, sampled from /proc.

BMv2 on 2 cores must never be the bottleneck itself, so every
experiment records each switch's CPU (and the delay elements' and the
machine's) while traffic runs. Percent of ONE core: a process using both
cores fully reads 200 %.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def process_stat(pid: int) -> tuple[str, float] | None:
    """(state letter, utime + stime in seconds) of a process, or None if it is
    gone. A zombie keeps its totals until it is reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Fields after the parenthesised command name (which may hold spaces).
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[0], (int(fields[11]) + int(fields[12])) / CLOCK_TICKS_PER_S


def process_cpu_s(pid: int) -> float | None:
    """utime + stime of a process in seconds, or None if it is gone."""
    stat = process_stat(pid)
    return None if stat is None else stat[1]


def machine_busy_idle_s() -> tuple[float, float]:
    """(busy, idle) CPU seconds of the whole machine since boot, all cores."""
    parts = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(x) for x in parts]
    idle = ticks[3] + ticks[4]            # idle + iowait
    busy = sum(ticks[:8]) - idle          # user nice system idle iowait irq softirq steal
    return busy / CLOCK_TICKS_PER_S, idle / CLOCK_TICKS_PER_S


@dataclass
class CpuSampler:
    """Samples named pids every interval_s in a thread; rows are
    (t_s since start, name, percent of one core); name "machine" is all cores."""

    pids: dict[str, int]
    interval_s: float = 1.0
    rows: list[tuple[float, str, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> "CpuSampler":
        self._thread = threading.Thread(target=self._loop, name="cpu-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        t0 = time.monotonic()
        last_t = t0
        last = {name: process_cpu_s(pid) for name, pid in self.pids.items()}
        last_machine = machine_busy_idle_s()
        while not self._stop.wait(self.interval_s):
            now = time.monotonic()
            wall = now - last_t
            for name, pid in self.pids.items():
                cpu = process_cpu_s(pid)
                if cpu is not None and last[name] is not None:
                    self.rows.append((now - t0, name, 100.0 * (cpu - last[name]) / wall))
                last[name] = cpu
            busy, idle = machine_busy_idle_s()
            d_busy, d_idle = busy - last_machine[0], idle - last_machine[1]
            if d_busy + d_idle > 0:
                ncpu = os.cpu_count() or 1
                self.rows.append((now - t0, "machine", 100.0 * ncpu * d_busy / (d_busy + d_idle)))
            last_machine = (busy, idle)
            last_t = now

    def summary(self) -> dict[str, dict[str, float]]:
        """Mean and max percent per name."""
        out: dict[str, dict[str, float]] = {}
        for name in {row[1] for row in self.rows}:
            values = [pct for _, n, pct in self.rows if n == name]
            out[name] = {"mean_pct": sum(values) / len(values), "max_pct": max(values),
                         "samples": len(values)}
        return out

    def write_csv(self, path: Path) -> None:
        with open(path, "w") as f:
            f.write("t_s,name,cpu_pct_of_one_core\n")
            for t_s, name, pct in self.rows:
                f.write(f"{t_s:.3f},{name},{pct:.2f}\n")
