"""Opt-in memory diagnostics for a running ``kbwatch watch``.

Set ``KBWATCH_DEBUG_MEMORY=<seconds>`` in the service's environment and a
daemon thread logs, every that many seconds, one ``memory:`` line with the
process's resident and anonymous size, glibc's heap (``mallinfo2``: in use,
free but held, mmapped), SQLite's own heap (``sqlite3_memory_used``), the
number of live pymalloc blocks, pymalloc's arenas (held, bytes used, bytes free in them)
and the number of gc-tracked objects, then the 20 object
types whose counts grew most since the previous line. When the service is
started with ``PYTHONTRACEMALLOC=<frames>`` it also logs the 10 allocation
sites that grew most. Everything is read in process (ctypes, ``gc``,
``tracemalloc``); nothing is changed. Off by default: walking every object
costs a few tens of ms per report.
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import gc
import os
import re
import sys
import threading
import tracemalloc

from kbwatch.pipeline.lazylog import logger

ENV = "KBWATCH_DEBUG_MEMORY"


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def _libc_mallinfo():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.mallinfo2
        fn.restype = _MallInfo2
        return fn
    except (OSError, AttributeError):
        return None


def _sqlite_memory_used():
    import _sqlite3

    for name in (_sqlite3.__file__, ctypes.util.find_library("sqlite3"), "libsqlite3.so.0"):
        if not name:
            continue
        try:
            fn = ctypes.CDLL(name).sqlite3_memory_used
            fn.restype = ctypes.c_int64
            return fn
        except (OSError, AttributeError):
            continue
    return None


def _proc_status() -> dict[str, int]:
    out = {}
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "RssAnon", "RssFile", "Threads"):
                    out[key] = int(rest.split()[0])
    except OSError:
        pass
    return out


_ARENA_KEYS = {"# arenas allocated current": "arenas", "# bytes in allocated blocks": "used",
               "# bytes in available blocks": "free-blocks", "# bytes in pools of empty arenas": "empty-pools"}


# every line shape ``_debugmallocstats`` writes: blank, "… = n", table rows, headers
_STATS_LINE = re.compile(r"\s*$|.*=|\s*\d|class |-----|arena map counts|Small block")


def _pymalloc_arenas() -> dict[str, int]:
    """pymalloc's own counters (``sys._debugmallocstats``, which only writes to C ``stderr``):
    arenas held (1 MiB each: an arena goes back to the OS only when every block in it is free),
    bytes in live blocks, bytes in free blocks of partly used pools. Read by pointing fd 2 at a
    temporary file for the call; anything another thread wrote meanwhile is written back to stderr."""
    import tempfile

    if not hasattr(sys, "_debugmallocstats"):
        return {}
    out: dict[str, int] = {}
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        try:
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass
        saved = os.dup(2)
        try:
            os.dup2(tmp.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        other = []
        for raw in tmp.read().decode("utf-8", "replace").splitlines(keepends=True):
            key, sep, value = raw.partition("=")
            name = _ARENA_KEYS.get(key.strip())
            if name and sep:
                out[name] = int(value.strip().replace(",", "") or 0)
            elif not _STATS_LINE.match(raw):
                other.append(raw)
        if other:  # another thread's output that landed in the file meanwhile
            try:
                os.write(2, "".join(other).encode())
            except OSError:
                pass
    return out


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f}"


class MemoryReporter(threading.Thread):
    """Logs a ``memory:`` line every ``every`` seconds until ``stop`` is set."""

    def __init__(self, every: float):
        super().__init__(name="kbwatch-memdebug", daemon=True)
        self.every = every
        self.stop_event = threading.Event()
        self._mallinfo = _libc_mallinfo()
        self._sqlite = _sqlite_memory_used()
        self._types: collections.Counter = collections.Counter()
        self._snapshot = None

    def line(self) -> str:
        st = _proc_status()
        parts = [f"rss {st.get('VmRSS', 0) / 1024:.1f} MB", f"anon {st.get('RssAnon', 0) / 1024:.1f}",
                 f"threads {st.get('Threads', 0)}"]
        if self._mallinfo is not None:
            mi = self._mallinfo()
            parts.append(f"glibc in-use {_mb(mi.uordblks)} free {_mb(mi.fordblks)} mmap {_mb(mi.hblkhd)}"
                         f" arena {_mb(mi.arena)}")
        if self._sqlite is not None:
            parts.append(f"sqlite {_mb(self._sqlite())}")
        parts.append(f"pyblocks {sys.getallocatedblocks()}")
        arenas = _pymalloc_arenas()
        if arenas:
            parts.append("pymalloc " + " ".join(f"{k} {_mb(v) if k != 'arenas' else v}" for k, v in arenas.items()))
        types = collections.Counter(type(o).__name__ for o in gc.get_objects())
        parts.append(f"gc-objects {sum(types.values())}")
        grown = (types - self._types).most_common(20) if self._types else []
        self._types = types
        text = "memory: " + ", ".join(parts)
        if grown:
            text += "\n  grew: " + ", ".join(f"{name} +{n} ({types[name]})" for name, n in grown)
        if tracemalloc.is_tracing():
            snap = tracemalloc.take_snapshot().filter_traces((
                tracemalloc.Filter(False, tracemalloc.__file__),
                tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
            ))
            if self._snapshot is not None:
                for stat in snap.compare_to(self._snapshot, "traceback")[:10]:
                    if stat.size_diff <= 0:
                        break
                    frames = " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno}" for f in stat.traceback[:6])
                    text += f"\n  +{stat.size_diff / 1024:.0f} KiB ({stat.count_diff:+d} blocks) {frames}"
            self._snapshot = snap
        return text

    def run(self) -> None:
        while not self.stop_event.wait(self.every):
            try:
                logger.info(self.line())
            except Exception as exc:  # a diagnostic never takes the service down
                logger.warning("memory report failed: {}", exc)


def start_from_env() -> MemoryReporter | None:
    """Start a reporter when ``KBWATCH_DEBUG_MEMORY`` names a positive number of seconds."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return None
    try:
        every = float(raw)
    except ValueError:
        logger.warning("{}={!r} is not a number of seconds; no memory reports", ENV, raw)
        return None
    if every <= 0:
        return None
    reporter = MemoryReporter(every)
    reporter.start()
    logger.info("memory reports every {} s ({})", every, ENV)
    return reporter
