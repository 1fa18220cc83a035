"""A helper process that runs the built-in scanners on small documents: a burst of small files
uses the second core.

An ingest of many small files is bound by one core: the runner threads share the interpreter
lock, and the scan stage is about a third of a file's CPU. During a burst (``BURST`` small
scans within ``BURST_SECONDS``) one helper process is started (``spawn``, as the parse
workers); from then on a runner thread hands its document's scan to the helper when the helper
is free, and waits for the result without holding the lock, so the other threads run their
stages meanwhile. When the helper is busy, not ready yet, or gone, the scan runs in the thread
as before. The helper is stopped after ``IDLE_SECONDS`` without work.

What the helper runs is exactly what :func:`kbwatch.plugins.scan.call_scanners` would run: the
same ``kb_scan`` functions (sent by reference: only when every one is a module-level function of
a ``kbwatch.plugins`` module, i.e. the built-in scanners), on the same document and settings,
in the same order; the batches come back and the stage goes on with them in this process
(allowlists, ordering, redaction, review decisions). When a scanner raises in the helper, the
helper answers "redo" and the document is scanned here, so a failing scanner gives the same
``format.scanner-error`` finding and log line as before. Only documents up to ``SMALL_CHARS``
go to the helper (larger ones are scanned in windows here, with bounded memory), so the helper
stays small (~70 MB). ``KBWATCH_SCAN_HELPER=0`` turns it off.
"""

from __future__ import annotations

import collections
import functools
import importlib
import multiprocessing as mp
import os
import threading
import time

__all__ = ["SMALL_CHARS", "enabled", "helper", "offloadable"]

SMALL_CHARS = 256 * 1024  # documents above this size are scanned in the runner thread
BURST = 32  # small scans ...
BURST_SECONDS = 5.0  # ... within this many seconds start the helper
IDLE_SECONDS = 60.0  # a helper without work this long is stopped
START_TIMEOUT = 120.0  # a helper not ready by then is given up (scans stay in-process)
WAIT_SECONDS = 0.05  # a thread waits this long for a busy helper, then scans in-process
MAX_STARTS = 5  # helpers that died or failed to start, after which this process stops trying

_CTX = mp.get_context("spawn")


def enabled() -> bool:
    return os.environ.get("KBWATCH_SCAN_HELPER", "1").strip().lower() not in ("0", "false", "no", "off")


@functools.lru_cache(maxsize=256)
def offloadable(fn) -> bool:
    """True for a module-level function of a ``kbwatch.plugins`` module (pickled by reference)."""
    mod = getattr(fn, "__module__", None) or ""
    if not mod.startswith("kbwatch.plugins.") or "<" in getattr(fn, "__qualname__", "<"):
        return False
    try:
        return getattr(importlib.import_module(mod), fn.__qualname__, None) is fn
    except Exception:  # pragma: no cover - the module was imported to make fn
        return False


def _helper_main(conn) -> None:
    """The helper's loop: ``(impls, document, settings)`` -> the batches, or None (redo it there)."""
    import kbwatch.plugins.scan  # noqa: F401 - imports the scanners before the first document
    try:
        conn.send(("ready",))
    except (OSError, EOFError):
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        impls, document, settings = msg
        kwargs = {"document": document, "settings": settings}
        out: list | None = []
        try:
            for fn, argnames in impls:
                out.append(fn(*[kwargs[a] for a in argnames]) or [])
        except BaseException:  # noqa: BLE001 - the caller scans it itself (same finding, same log line)
            out = None
        try:
            conn.send(out)
        except Exception:  # an unpicklable result
            conn.send(None)


class ScanHelper:
    """One helper process for this process's runner threads (see the module docstring)."""

    def __init__(self) -> None:
        self._call = threading.Lock()  # one document at a time through the pipe
        self._state = threading.Lock()
        self._proc = None
        self._conn = None
        self._ready = False
        self._starting = False
        self._starts = 0
        self._recent: collections.deque[float] = collections.deque()
        self._last_used = 0.0
        self.calls = 0  # documents the helper scanned (tests, benchmarks)

    # -- the runner threads' side ------------------------------------------------------------

    def scan(self, impls, document, settings) -> list | None:
        """The scanners' batches for ``document``, or None: scan it in this thread."""
        if not self._ready:
            self._note_small_scan()
            return None
        if not self._call.acquire(timeout=WAIT_SECONDS):
            return None  # busy with other threads' documents: this one is scanned here
        try:
            conn = self._conn
            if conn is None or not self._ready:
                return None
            try:
                conn.send((impls, document, settings))
                out = conn.recv()
            except (EOFError, OSError):  # the helper died: scan it here, start another on the next burst
                self._stop(kill=True)
                return None
            except Exception:  # noqa: BLE001 - not picklable (pickled before anything is written): scan it here
                return None
            self._last_used = time.monotonic()
            if out is not None:
                self.calls += 1
            return out
        finally:
            self._call.release()

    def _note_small_scan(self) -> None:
        now = time.monotonic()
        with self._state:
            if self._starting or self._ready or self._starts >= MAX_STARTS:
                return
            recent = self._recent
            recent.append(now)
            while recent and recent[0] < now - BURST_SECONDS:
                recent.popleft()
            if len(recent) < BURST:
                return
            recent.clear()
            self._starting = True
            self._starts += 1
        threading.Thread(target=self._start, name="kbwatch-scan-helper-start", daemon=True).start()

    # -- starting and stopping -------------------------------------------------------------

    def start(self) -> bool:
        """Start the helper now and wait until it is ready (tests, benchmarks); True when it is."""
        with self._state:
            if self._ready or self._starting:
                busy = self._starting
            else:
                busy = None
                self._starting = True
                self._starts += 1
        if busy is None:
            self._start()
        else:
            deadline = time.monotonic() + START_TIMEOUT
            while self._starting and time.monotonic() < deadline:
                time.sleep(0.05)
        return self._ready

    def _start(self) -> None:
        conn = child = proc = None
        try:
            conn, child = _CTX.Pipe()
            proc = _CTX.Process(target=_helper_main, args=(child,), name="kbwatch-scan-helper", daemon=True)
            proc.start()
            child.close()
            ok = conn.poll(START_TIMEOUT) and conn.recv() == ("ready",)
        except Exception:  # noqa: BLE001 - the scans stay in the runner threads
            ok = False
        if not ok:
            self._kill(proc, conn)
            with self._state:
                self._starting = False
            return
        with self._state:
            self._proc, self._conn = proc, conn
            self._last_used = time.monotonic()
            self._ready = True
            self._starting = False
        threading.Thread(target=self._reap, name="kbwatch-scan-helper-reap", daemon=True).start()

    def _reap(self) -> None:
        """Stop the helper once it has been idle ``IDLE_SECONDS``."""
        while True:
            time.sleep(min(5.0, IDLE_SECONDS / 4))
            if not self._ready:
                return
            if time.monotonic() - self._last_used < IDLE_SECONDS:
                continue
            with self._call:  # no document in flight
                if time.monotonic() - self._last_used >= IDLE_SECONDS:
                    self._stop()
                    return

    def _stop(self, kill: bool = False) -> None:
        """Stop the helper (the caller holds ``_call`` or nothing is in flight)."""
        with self._state:
            proc, conn = self._proc, self._conn
            self._proc = self._conn = None
            self._ready = False
        if proc is None:
            return
        if not kill:
            try:
                conn.send(None)
                proc.join(2.0)
            except Exception:  # noqa: BLE001
                pass
        self._kill(proc, conn)

    @staticmethod
    def _kill(proc, conn) -> None:
        if proc is not None and proc.is_alive():
            proc.kill()
            proc.join(5.0)
        if conn is not None:
            try:
                conn.close()
            except OSError:  # pragma: no cover
                pass

    def close(self) -> None:
        with self._call:
            self._stop()

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None else None


_helper: ScanHelper | None = None
_helper_lock = threading.Lock()


def helper() -> ScanHelper:
    """This process's helper (made on first use; its process starts on the first burst)."""
    global _helper
    if _helper is None:
        with _helper_lock:
            if _helper is None:
                _helper = ScanHelper()
    return _helper
