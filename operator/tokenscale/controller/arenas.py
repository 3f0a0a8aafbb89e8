"""Two malloc arenas for the operator process, not one per thread.

glibc gives each thread that allocates its own arena (up to eight per core): the operator's
16 handler threads, the event posters and the resync loop's threads each parse API answers
(a JSON body is allocated with malloc, beyond Python's small-object allocator), and the memory
freed in one thread's arena is not reused by another's. Measured with
``benchmarks/operator_load.py`` (docs/scale-out.md). Set before any thread starts; a C library
without ``mallopt`` (musl) or an explicit ``MALLOC_ARENA_MAX`` is left as it is.
"""

import ctypes
import ctypes.util
import logging
import os

log = logging.getLogger(__name__)
ARENAS = 2
M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameter (malloc.h)."""


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas; True when set."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    ok = bool(mallopt(M_ARENA_MAX, arenas))
    log.debug("malloc arenas capped at %d: %s", arenas, ok)
    return ok
