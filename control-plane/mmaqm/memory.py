"""The long-running controller's native memory: how many malloc arenas it may use.

glibc gives each thread that allocates its own malloc arena, up to 8 per core. The
controller's gRPC core and its executor threads allocate from many threads, and
memory freed in one arena is not reused by another, so a controller that runs for
hours grows its resident set slowly while its Python heap stays flat (the one-hour
soak measured the Python heap flat at about 19 MB while the RSS floor rose 4 MB;
docs/reliability.md). Two arenas keep that growth out at no measurable cost for a
process whose work is one asyncio loop.

``limit_malloc_arenas`` is what ``mmaqm-ctl run`` calls first. It is a no-op where
the C library has no ``mallopt`` (musl, macOS), and when the operator already chose
with the ``MALLOC_ARENA_MAX`` environment variable, which glibc reads at start-up.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

MALLOC_ARENA_MAX = 2          # arenas for the controller process (glibc's default: 8 per core)
ENV_MALLOC_ARENA_MAX = "MALLOC_ARENA_MAX"
_M_ARENA_MAX = -8             # mallopt parameter number, glibc <malloc.h>


def limit_malloc_arenas(max_arenas: int = MALLOC_ARENA_MAX) -> bool:
    """Limit this process to max_arenas malloc arenas, before threads start.

    Returns True when the limit was set here, False when it was left alone (the
    environment variable is set, or the C library has no mallopt)."""
    if isinstance(max_arenas, bool) or not isinstance(max_arenas, int) or max_arenas < 1:
        raise ValueError(f"max_arenas must be a positive integer, not {max_arenas!r}")
    if os.environ.get(ENV_MALLOC_ARENA_MAX):
        return False
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return False
    libc = ctypes.CDLL(libc_name)
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(_M_ARENA_MAX, max_arenas) == 1
