"""mmaqm.memory: the controller limits glibc's malloc arenas and fixes its mmap
threshold, so native memory freed by one thread or one large block is reused or
returned (docs/reliability.md, the one-hour soak).

Both are read back from glibc itself in a fresh interpreter: the arena count from
malloc_stats (one "Arena N:" block per arena) with eight threads alive at once,
each having allocated; the mmapped bytes from mallinfo2 after a 4 MiB block was
freed and another allocated. Each has its control: glibc's defaults, where the
setting's effect is absent."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys

import pytest

from mmaqm import memory

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc",
                                reason="the settings are glibc's (mallopt)")

THREADS = 8
ARENA_PROBE = f"""
import ctypes, ctypes.util, json, sys, threading
from mmaqm.memory import limit_malloc_growth
done = limit_malloc_growth() if sys.argv[1] == "limit" else None
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
print(json.dumps(done))
"""
BLOCK_BYTES = 4 << 20
MMAP_PROBE = f"""
import ctypes, ctypes.util, json, sys
from mmaqm.memory import limit_malloc_growth
done = limit_malloc_growth() if sys.argv[1] == "limit" else None
libc = ctypes.CDLL(ctypes.util.find_library("c"))
class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena ordblks smblks hblks hblkhd usmblks "
                                                "fsmblks uordblks fordblks keepcost").split()]
libc.mallinfo2.restype = MallInfo2
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)
libc.free(libc.malloc({BLOCK_BYTES}))    # mmapped, freed: glibc raises its threshold
libc.malloc({BLOCK_BYTES})                # mmapped again only if the threshold is fixed
print(json.dumps({{"set": done, "mmapped_bytes": libc.mallinfo2().hblkhd}}))
"""


def probe(script: str, mode: str, env_extra: dict[str, str] | None = None
          ) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in (memory.ENV_MALLOC_ARENA_MAX, memory.ENV_MALLOC_MMAP_THRESHOLD)}
    env.update(env_extra or {})
    result = subprocess.run([sys.executable, "-c", script, mode], capture_output=True,
                            text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    return result


def arenas(result: subprocess.CompletedProcess) -> int:
    found = set(re.findall(r"^Arena (\d+):", result.stderr, re.MULTILINE))
    assert found, result.stderr
    return len(found)


def test_without_a_limit_each_thread_gets_its_own_arena() -> None:
    # The control: glibc's default (8 per core) lets all eight threads have one.
    assert arenas(probe(ARENA_PROBE, "none")) > THREADS // 2


def test_the_limit_holds_the_process_to_two_arenas() -> None:
    result = probe(ARENA_PROBE, "limit")
    assert '"arena_max": true' in result.stdout
    assert arenas(result) <= memory.MALLOC_ARENA_MAX


def test_the_operators_arena_variable_wins() -> None:
    result = probe(ARENA_PROBE, "limit", {memory.ENV_MALLOC_ARENA_MAX: "3"})
    assert '"arena_max": false' in result.stdout    # left to glibc, which read it
    assert 2 < arenas(result) <= 3


def mmapped_bytes(mode: str, env_extra: dict[str, str] | None = None) -> tuple[int, str]:
    import json
    out = json.loads(probe(MMAP_PROBE, mode, env_extra).stdout)
    return out["mmapped_bytes"], json.dumps(out["set"])


def test_by_default_a_large_block_after_a_freed_one_comes_from_the_heap() -> None:
    # The control: glibc's dynamic threshold moved up to 4 MiB when the first block
    # was freed, so the second is not mmapped (and will not be returned on free).
    assert mmapped_bytes("none")[0] < BLOCK_BYTES


def test_the_fixed_threshold_keeps_large_blocks_mmapped() -> None:
    mmapped, done = mmapped_bytes("limit")
    assert '"mmap_threshold": true' in done
    assert mmapped >= BLOCK_BYTES


def test_the_operators_mmap_variable_wins() -> None:
    # MALLOC_MMAP_THRESHOLD_ set: glibc fixed the threshold itself (at 8 MiB here,
    # above the block), the call leaves it alone.
    mmapped, done = mmapped_bytes("limit", {memory.ENV_MALLOC_MMAP_THRESHOLD: str(8 << 20)})
    assert '"mmap_threshold": false' in done
    assert mmapped < BLOCK_BYTES


@pytest.mark.parametrize("kwargs", [{"max_arenas": 0}, {"max_arenas": True},
                                    {"max_arenas": 2.0}, {"max_arenas": "2"},
                                    {"mmap_threshold_bytes": 0}, {"mmap_threshold_bytes": -1}])
def test_a_bad_setting_is_refused(kwargs: dict) -> None:
    with pytest.raises(ValueError, match="must be a positive integer"):
        memory.limit_malloc_growth(**kwargs)
