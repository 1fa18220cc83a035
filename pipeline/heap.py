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
