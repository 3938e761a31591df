"""mmaqm.memory: the controller limits its malloc arenas, so native memory freed by one
thread is reused by the others (docs/reliability.md, the one-hour soak).

The arena count is read from glibc itself (malloc_stats prints one "Arena N:" block per
arena) in a fresh interpreter where eight threads are alive at once, each having
allocated: without a limit each gets its own arena."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys

import pytest

from mmaqm import memory

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc",
                                reason="arena limits are glibc's (mallopt M_ARENA_MAX)")

THREADS = 8
PROBE = f"""
import ctypes, ctypes.util, sys, threading
from mmaqm.memory import limit_malloc_arenas
limited = limit_malloc_arenas() if sys.argv[1] == "limit" else None
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = (ctypes.c_size_t,)
barrier = threading.Barrier({THREADS})
def work():
    libc.malloc(4096)          # this thread's arena is picked here
    barrier.wait()             # all {THREADS} alive at once: none hands its arena on
    if threading.current_thread().name == "t0":
        sys.stderr.flush()
        libc.malloc_stats()    # to stderr: one "Arena N:" block per arena
threads = [threading.Thread(target=work, name=f"t{{i}}") for i in range({THREADS})]
for t in threads: t.start()
for t in threads: t.join()
print(limited)
"""


def arenas_after_threads(mode: str, env_arena_max: str | None = None) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != memory.ENV_MALLOC_ARENA_MAX}
    if env_arena_max is not None:
        env[memory.ENV_MALLOC_ARENA_MAX] = env_arena_max
    result = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True,
                            text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    arenas = set(re.findall(r"^Arena (\d+):", result.stderr, re.MULTILINE))
    assert arenas, result.stderr
    return len(arenas), result.stdout.strip()


def test_without_a_limit_each_thread_gets_its_own_arena() -> None:
    # The control: glibc's default (8 per core) lets all eight threads have one.
    count, _ = arenas_after_threads("none")
    assert count > THREADS // 2, count


def test_the_limit_holds_the_process_to_two_arenas() -> None:
    count, limited = arenas_after_threads("limit")
    assert limited == "True"
    assert count <= memory.MALLOC_ARENA_MAX, count


def test_the_operators_environment_variable_wins() -> None:
    count, limited = arenas_after_threads("limit", env_arena_max="3")
    assert limited == "False"          # left to glibc, which read MALLOC_ARENA_MAX=3
    assert 2 < count <= 3, count


@pytest.mark.parametrize("bad", [0, -1, True, 2.0, "2"])
def test_a_bad_arena_count_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="max_arenas must be a positive integer"):
        memory.limit_malloc_arenas(bad)  # type: ignore[arg-type]
