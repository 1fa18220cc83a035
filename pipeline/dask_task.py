"""The worker side of a parse task sent to Dask (:mod:`kbwatch.pipeline.dask_executor`).

Owns what runs inside a Dask worker process: :func:`remote_call` refuses a
kbwatch version other than the watcher's (checked before anything else is
imported, and only plain values cross the wire, so a worker with another
version can still say so), writes shipped bytes (:class:`Shipped`) to a
private temporary file, and runs the function in that worker's own local
:class:`~kbwatch.pipeline.workers.WorkerPool` (one child per worker thread,
started at connect time by :func:`prestart_pool`), so every parse keeps its
hard timeout and memory cap: Dask cannot stop a running task, the pool kills
its child. A pool child exits by itself when its Dask worker dies. Before it
parses, a task tells the scheduler it has started (:data:`STARTED_TOPIC`,
confirmed by the scheduler before the parse begins), so the coordinator knows
which parse was running, not just queued, on a worker that dies.
:func:`set_allowed_failures` runs on the scheduler.
"""

from __future__ import annotations

import functools
import importlib
import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from kbwatch.pipeline import __version__
from kbwatch.pipeline.errors import StageError


class Shipped:
    """A file's bytes, sent with the task (its name keeps the extension parsers look at)."""

    __slots__ = ("name", "data")

    def __init__(self, name: str, data: bytes):
        self.name, self.data = name, data


_POOLS: dict[tuple, Any] = {}
_POOLS_LOCK = threading.Lock()


def _watched_warmup(settings: dict) -> None:
    """A pool child's warm-up on a Dask worker: exit when that worker dies (a SIGKILLed
    worker cannot kill its children), then the usual plugin warm-up."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="kbwatch-parent-watch", daemon=True).start()
    from kbwatch.pipeline.parsing import worker_warmup

    worker_warmup(settings)


def _worker_pool(settings: dict, memory_mb: int):
    """This Dask worker process's parse pool, one child per worker thread."""
    import multiprocessing as mp

    from kbwatch.pipeline.workers import WorkerPool

    key = (memory_mb, repr((settings.get("_root"), settings["pipeline"]["plugins"], settings["pipeline"].get("disable"))))
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            # a nanny starts its worker as a daemonic process, and multiprocessing refuses
            # children to those; the children here are daemonic themselves and watch us
            mp.current_process()._config["daemon"] = False
            try:
                from distributed import get_worker

                size = get_worker().state.nthreads
            except Exception:
                size = 1
            pool = _POOLS[key] = WorkerPool(size, memory_mb=memory_mb,
                                            warmup=functools.partial(_watched_warmup, settings))
        return pool


def prestart_pool(settings: dict) -> None:
    """On each worker at connect time: start its parse pool's children (they warm up meanwhile)."""
    _worker_pool(settings, settings["stages"]["parse"].get("memory_mb", 0)).prestart()


STARTED_TOPIC = "kbwatch-parse-started"  # the scheduler event a parse task sends as it starts


def _say_started(where: dict) -> None:
    """Tell the scheduler (a round trip it answers) that this task now runs on this worker.

    The scheduler publishes it to the coordinator on the same stream as a later
    ``remove-worker`` event, so the coordinator sees it first. Best effort: a task
    that cannot say so still runs (the coordinator then counts it as queued).
    """
    try:
        from distributed import get_worker
        from distributed.utils import sync

        worker = get_worker()
        sync(worker.loop, worker.scheduler.log_event, topic=STARTED_TOPIC,
             msg={"key": worker.get_current_task(), "worker": worker.address})
    except Exception:
        pass


def _scratch_dir() -> str | None:
    """This Dask worker's own scratch folder (``local_directory``), where a shipped file is
    written: a worker killed mid-parse (a poison document) cannot remove it, and Dask
    clears a dead worker's folder when the next worker starts on the same scratch space.
    ``None`` (the system's temp folder) outside a worker."""
    try:
        from distributed import get_worker

        return get_worker().local_directory
    except Exception:
        return None


def _where() -> dict:
    try:
        from distributed import get_worker

        address = get_worker().address
    except Exception:
        address = None
    return {"worker": address, "host": socket.gethostname(), "pid": os.getpid()}


def remote_call(version: str, target: str, args: tuple, kwargs: dict, timeout: float | None,
                settings: dict) -> tuple:
    """Run ``target`` ("module:function") in this worker's parse pool; a tagged tuple back.

    ``("ok", result, where)``, ``("stage", class name, message, reason, where)``
    or ``("version", this worker's version, where)``. Plain values only cross
    the wire, so a worker with another kbwatch can still say so.
    """
    where = _where()
    if version != __version__:
        return ("version", __version__, where)
    _say_started(where)
    tmp = None
    try:
        real_args = []
        for a in args:
            if isinstance(a, Shipped):
                if tmp is None:
                    tmp = tempfile.mkdtemp(prefix="kbwatch-parse-", dir=_scratch_dir())
                path = Path(tmp) / a.name
                path.write_bytes(a.data)
                a = str(path)
            real_args.append(a)
        module, _, name = target.partition(":")
        fn = getattr(importlib.import_module(module), name)
        pool = _worker_pool(settings, settings["stages"]["parse"].get("memory_mb", 0))
        t0 = time.perf_counter()
        result = pool.call(fn, *real_args, timeout=timeout, **kwargs)
        where["seconds"] = round(time.perf_counter() - t0, 4)
        return ("ok", result, where)
    except StageError as exc:
        return ("stage", type(exc).__name__, exc.message, exc.reason, where)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def set_allowed_failures(n: int, dask_scheduler=None) -> int:
    """On the scheduler: a task errs as ``KilledWorker`` after ``n + 1`` worker deaths under it."""
    dask_scheduler.allowed_failures = n
    return n
