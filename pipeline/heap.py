"""Giving freed heap memory back to the operating system.

A long-running service that now and then handles a large document (a few
MB of text scanned, rendered and indexed) allocates and frees tens of MB at
a time. glibc keeps freed memory in its arenas, so the resident size stays at
the high-water mark of the largest document seen and looks like a leak in a
soak. ``malloc_trim(0)`` returns the free pages; the service calls
:func:`trim` at each heartbeat. Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util

_trim = None
_looked = False


def trim() -> bool:
    """Return free heap pages to the OS (glibc ``malloc_trim``); False when unavailable."""
    global _trim, _looked
    if not _looked:
        _looked = True
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _trim = libc.malloc_trim
            _trim.argtypes = [ctypes.c_size_t]
            _trim.restype = ctypes.c_int
        except (OSError, AttributeError):
            _trim = None
    if _trim is None:
        return False
    _trim(0)
    return True


# mallopt parameters (glibc malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8


def tune(mmap_threshold: int = 128 * 1024, arena_max: int = 0) -> bool:
    """Keep glibc from holding on to large freed buffers (call once, early, in the service).

    glibc serves a request of ``M_MMAP_THRESHOLD`` bytes or more (128 KiB at
    start) with its own ``mmap`` and gives it back on ``free``; but each time
    such a block is freed it *raises* the threshold to that block's size (up to
    32 MB), so after the first few large documents their buffers come from the
    heap arenas instead, where they are kept and fragment them. Setting the
    threshold (and the trim threshold) explicitly turns that adjustment off.
    ``arena_max`` > 0 also caps the number of per-thread heap arenas.
    False where glibc's ``mallopt`` is not available.
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = mallopt(_M_MMAP_THRESHOLD, mmap_threshold) == 1
    ok = mallopt(_M_TRIM_THRESHOLD, 2 * mmap_threshold) == 1 and ok
    if arena_max > 0:
        ok = mallopt(_M_ARENA_MAX, arena_max) == 1 and ok
    return ok
