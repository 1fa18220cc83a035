"""Scanning ahead: the small texts of a burst scanned in the compute workers before their runs
reach the scan stage.

While many runs wait (an ingest, a folder copied in), the service's own process is the
bottleneck: every stage of every run shares its one interpreter lock, and the risk scan is the
largest part of a small text's run. The runner announces each run queued behind a backlog
(``kb_run_queued``); :class:`Ahead` keeps those whose file a plain-text parser takes in this
process, and a feeder thread sends them in batches to the runner's compute workers (the other
cores). There the scan plugin's ``scan_files`` takes each file as a run does (opened once, no link followed,
confined to the root, copied to the worker's private folder: ``kbwatch.pipeline.intake.take``),
parses it with the same parsers and scans its text and its name with the same scanners. The
results come back keyed by a digest of exactly what the scan stage scans: the name and the parsed
document (text, title, parser, locations, warnings, metadata).

The scan stage looks its own document up (:func:`prepared`). When the file changed between the
worker's read and the run's, or anything gave the stage another text, the digests differ and the
stage scans the text itself; the same when the worker's scanners are not the stage's (a plugin
registered in the service only). So a result is used only for the very text and name it was
computed on, and the findings are those the stage would have found. A file the stage reaches
before the feeder sent it is taken off the list (no work done twice); one in a batch being
scanned is waited for (at most :data:`WAIT_SECONDS`).

Bounded: at most :data:`MAX_PENDING` files wait and :data:`MAX_RESULTS` results are kept (the
oldest dropped: a run that never reached its scan leaves nothing behind for long); files over
:data:`MAX_BYTES` are not taken. On one CPU nothing is announced: the worker would only take turns
with the service. The workers only read: nothing in ``sources/`` is changed.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import threading
import weakref
from collections import OrderedDict
from pathlib import Path

from kbwatch.pipeline.lazylog import logger

BATCH = 8  # files per trip to a worker: small enough that a run rarely waits for its batch
MAX_BYTES = 64 * 1024  # larger files are scanned by their runs (a batch stays well under a second of work)
MAX_PENDING = 10_000
MAX_RESULTS = 2_048
WAIT_SECONDS = 5.0  # a run whose file is in a batch being scanned waits this long at most, then scans it itself

_CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
_AHEAD: "weakref.WeakKeyDictionary[object, Ahead]" = weakref.WeakKeyDictionary()
_AHEAD_LOCK = threading.Lock()


def digest(shown: str | None, document) -> bytes:
    """What a scan's findings depend on: the name's text (``kbwatch.plugins.scan.name_text``) and
    every field of the parsed document."""
    return hashlib.sha256(pickle.dumps(
        (shown, document.markdown, document.parser, document.title, document.locations, document.warnings,
         document.metadata), protocol=5)).digest()


class Ahead:
    """The files announced for one runner's compute workers, the feeder that sends them, and the
    results that came back."""

    def __init__(self, compute, settings: dict, worker):
        self._compute = weakref.ref(compute)  # (the pool is this object's key in _AHEAD: no strong reference back)
        self.settings = settings
        self.worker = worker  # what a compute worker runs on a batch (kbwatch.plugins.scan.scan_files)
        self._lock = threading.Condition()
        self._pending: OrderedDict[str, str] = OrderedDict()  # source path -> name scanned (rel)
        self._flight: dict[str, threading.Event] = {}  # source path -> its batch's "done"
        self._results: OrderedDict[bytes, tuple] = OrderedDict()  # digest -> (scanners, body, name)
        self._feeder: threading.Thread | None = None
        self._closed = False
        self.used = 0  # results a scan stage used (bench and tests read it)

    def add(self, source: Path, rel: str) -> None:
        with self._lock:
            if self._closed or len(self._pending) >= MAX_PENDING:
                return
            self._pending[str(source)] = rel
            if self._feeder is None:  # its first call starts one worker (not the whole pool: one keeps up)
                self._feeder = threading.Thread(target=self._feed, name="kbwatch-scan-ahead", daemon=True)
                self._feeder.start()

    def _feed(self) -> None:
        """Send batches until nothing is announced (the thread ends; the next announcement starts another)."""
        from kbwatch.pipeline.errors import PermanentError, TransientError

        while True:
            with self._lock:
                if not self._pending or self._closed:
                    self._feeder = None
                    return
                batch = []
                while self._pending and len(batch) < BATCH:
                    batch.append(self._pending.popitem(last=False))
                done = threading.Event()
                for source, _ in batch:
                    self._flight[source] = done
            compute = self._compute()
            try:
                if compute is None:
                    raise TransientError("the runner is gone", reason="shutdown")
                scanners, results, said = compute.call(self.worker, batch, self.settings)
                del compute
            except TransientError:  # the service is stopping
                self.close()
                results, scanners, said = [], (), []
            except PermanentError as exc:  # the worker died under the batch: its runs scan their files
                logger.debug("scanning ahead: a compute worker failed ({})", exc.message)
                results, scanners, said = [], (), []
            for level, message in said:
                logger.log(level, "{} (in a compute worker)", message)
            with self._lock:
                for key, body, name in results:
                    self._results[key] = (scanners, body, name)
                while len(self._results) > MAX_RESULTS:
                    self._results.popitem(last=False)
                for source, _ in batch:
                    self._flight.pop(source, None)
            done.set()

    def take(self, source: Path, key: bytes, scanners: tuple) -> tuple | None:
        """``(body batches, name batches)`` scanned ahead for this digest, by these scanners; None
        when there are none (the file is taken off the list: its run scans it)."""
        with self._lock:
            self._pending.pop(str(source), None)
            done = self._flight.get(str(source))
        if done is not None:
            done.wait(WAIT_SECONDS)
        with self._lock:
            found = self._results.get(key)
            if found is None or found[0] != scanners:
                return None
            del self._results[key]
            self.used += 1
        return found[1], found[2]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._pending.clear()


def ahead_for(compute, settings: dict | None = None, worker=None) -> Ahead | None:
    """The :class:`Ahead` of a runner's compute pool (made on first use when ``worker`` is given)."""
    with _AHEAD_LOCK:
        found = _AHEAD.get(compute)
        if found is None and worker is not None:
            found = _AHEAD[compute] = Ahead(compute, settings, worker)
        return found


def announce(project: Path, rel: str, settings: dict, plugins, compute, worker) -> None:
    """``kb_run_queued``: keep a file a plain-text parser takes here (by its extension), for
    ``worker`` (a picklable ``fn(batch, settings)``) to scan in ``compute``."""
    if compute is None or not settings["stages"]["scan"].get("ahead", True) or not hasattr(compute, "call") \
            or _CPUS < 2:  # one core: the worker would only take turns with the service
        return
    from kbwatch.pipeline.parsing import choose_parser, isolated
    from kbwatch.pipeline.sources import split_name

    info = choose_parser(plugins, split_name(rel)[1])
    if info is None or isolated(info, settings):
        return
    ahead_for(compute, settings, worker).add(project / "sources" / rel, rel)


def prepared(compute, source: Path, shown: str | None, document, scanners: tuple) -> tuple | None:
    """The scan stage's lookup: ``(body batches, name batches)`` of this very name and document when
    they were scanned ahead by the same scanners, else None."""
    ahead = ahead_for(compute) if compute is not None else None
    if ahead is None:
        return None
    return ahead.take(source, digest(shown, document), scanners)
