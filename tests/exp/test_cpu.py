"""cpu: /proc sampling against a process with a known load."""

from __future__ import annotations

import subprocess
import sys
import time


from mmaqm_exp.cpu import CpuSampler, process_cpu_s


def test_busy_process_reads_near_100_and_idle_near_0() -> None:
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    idle = subprocess.Popen(["sleep", "30"])
    try:
        sampler = CpuSampler({"busy": busy.pid, "idle": idle.pid}, interval_s=0.5).start()
        time.sleep(2.2)
        sampler.stop()
        s = sampler.summary()
        # A spinning process gets most of a core even with a compile running beside it.
        assert 40.0 <= s["busy"]["mean_pct"] <= 105.0, s
        assert s["idle"]["max_pct"] <= 5.0, s
        assert 0.0 <= s["machine"]["mean_pct"] <= 100.0 * 2 + 5, s
        assert s["busy"]["samples"] >= 3
    finally:
        busy.kill(); idle.kill(); busy.wait(); idle.wait()
    assert process_cpu_s(busy.pid) is None  # gone (reaped) reads None
