"""The long-running controller's native memory: glibc malloc settings that keep the
resident set from growing while the Python heap stays flat.

Two glibc behaviours make a process that runs for hours grow:

- **Arenas.** glibc gives each thread that allocates its own malloc arena, up to
  8 per core, and memory freed in one arena is not reused by another. The
  controller's gRPC core and executor threads allocate from many threads.
- **The dynamic mmap threshold.** A block of at least 128 KiB is mmapped and
  returned to the system when freed; but freeing one raises the threshold to its
  size (up to 32 MiB), so the next blocks that large come from the heap, which
  grows and, fragmented, does not shrink. The controller handles multi-megabyte
  blocks: the BMv2 JSON it pushes (about 2.8 MB), its protobuf encoding, gRPC's
  buffers. Setting the threshold fixes it, and every such block stays mmapped.

The one-hour soak measured the Python heap flat at about 19 MB while the RSS
floor rose 4 MB with glibc's defaults (docs/reliability.md).

``limit_malloc_growth`` is what ``mmaqm-ctl run`` calls first. Each setting is
left alone when the operator chose it with glibc's environment variable
(``MALLOC_ARENA_MAX``, ``MALLOC_MMAP_THRESHOLD_``), and everything is a no-op
where the C library has no ``mallopt`` (musl, macOS).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

MALLOC_ARENA_MAX = 2                        # arenas (glibc's default: 8 per core)
MALLOC_MMAP_THRESHOLD_BYTES = 128 * 1024    # glibc's initial value, kept fixed
ENV_MALLOC_ARENA_MAX = "MALLOC_ARENA_MAX"
ENV_MALLOC_MMAP_THRESHOLD = "MALLOC_MMAP_THRESHOLD_"
_M_MMAP_THRESHOLD = -3                      # mallopt parameter numbers, glibc <malloc.h>
_M_ARENA_MAX = -8


def _mallopt():
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return None
    mallopt = getattr(ctypes.CDLL(libc_name), "mallopt", None)
    if mallopt is not None:
        mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
        mallopt.restype = ctypes.c_int
    return mallopt


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, not {value!r}")
    return value


def limit_malloc_growth(max_arenas: int = MALLOC_ARENA_MAX,
                        mmap_threshold_bytes: int = MALLOC_MMAP_THRESHOLD_BYTES
                        ) -> dict[str, bool]:
    """Limit this process to max_arenas malloc arenas and fix its mmap threshold,
    before threads start. Returns, per setting ("arena_max", "mmap_threshold"),
    whether it was set here (False: its environment variable is set, or the C
    library has no mallopt)."""
    _positive_int("max_arenas", max_arenas)
    _positive_int("mmap_threshold_bytes", mmap_threshold_bytes)
    mallopt = _mallopt()
    done = {}
    for key, env, param, value in (("arena_max", ENV_MALLOC_ARENA_MAX, _M_ARENA_MAX, max_arenas),
                                   ("mmap_threshold", ENV_MALLOC_MMAP_THRESHOLD,
                                    _M_MMAP_THRESHOLD, mmap_threshold_bytes)):
        done[key] = bool(mallopt is not None and not os.environ.get(env)
                         and mallopt(param, value) == 1)
    return done
