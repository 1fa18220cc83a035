"""Where offloaded work (parsing) runs: the executor ``[stages.parse] executor`` names.

Owns:

- :func:`make_executor`: the runner asks for "an executor" and gets one of
  ``"local"`` (:class:`LocalExecutor`, the local worker pool of
  :mod:`kbwatch.pipeline.workers`, the default), ``"dask://HOST:PORT"`` (an
  existing Dask scheduler) or ``"dask-local:N"`` (a Dask LocalCluster of N
  workers on this machine); the Dask ones live in
  :mod:`kbwatch.pipeline.dask_executor`, imported only when configured.
- :class:`ShippedFile`: how a caller marks the argument that is a file the
  task reads (a ``str`` path, so the local pool sees a plain path); a remote
  executor ships its bytes, or its path on a shared mount, or runs the call
  here when it can do neither.
- :func:`last_placement`: where the calling thread's last offloaded call ran
  (``{"executor", "address", "worker", "worker_deaths", ...}``); the parse
  path puts it on the parsed document so the run says where it was parsed.

Every executor has the same small interface: ``call(fn, *args, timeout=,
**kwargs)`` (blocks the calling thread; raises the ``StageError`` the work
raised), ``prestart()``, ``reap(max_idle)``, ``close()`` and ``status()``
(``kind``, ``address``, ``workers``, ``in_flight``; what ``kbwatch status``
shows).
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from kbwatch.pipeline.workers import WorkerPool

_placement = threading.local()


class ShippedFile(str):
    """A path argument naming a file the offloaded function reads (see the module docstring)."""

    __slots__ = ()


def set_placement(where: dict | None) -> None:
    _placement.value = where


def last_placement() -> dict | None:
    """Where the calling thread's last offloaded call ran (None: not offloaded yet)."""
    return getattr(_placement, "value", None)


def parse_spec(value: str) -> tuple[str, Any]:
    """``"local"`` -> ("local", None); ``"dask://h:p"`` -> ("dask", "tcp://h:p"); ``"dask-local:N"`` -> ("dask-local", N).

    Raises ValueError with the words saying what is allowed.
    """
    value = (value or "").strip()
    if value == "local":
        return "local", None
    if value.startswith("dask://"):
        rest = value[len("dask://"):]
        host, _, port = rest.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError('expected "dask://HOST:PORT" with a port between 1 and 65535')
        return "dask", f"tcp://{rest}"
    if value.startswith("dask-local:"):
        n = value[len("dask-local:"):]
        if not n.isdigit() or int(n) < 1:
            raise ValueError('expected "dask-local:N" with N at least 1')
        return "dask-local", int(n)
    raise ValueError('expected "local", "dask://HOST:PORT" or "dask-local:N"')


class LocalExecutor:
    """The local worker pool (:class:`~kbwatch.pipeline.workers.WorkerPool`), started on first use."""

    kind = "local"

    def __init__(self, make_pool: Callable[[], WorkerPool]):
        self._make_pool = make_pool
        self._pool: WorkerPool | None = None
        self._lock = threading.Lock()

    def pool(self) -> WorkerPool:
        with self._lock:
            if self._pool is None:
                self._pool = self._make_pool()
            return self._pool

    def call(self, fn: Callable, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        result = self.pool().call(fn, *args, timeout=timeout, **kwargs)
        set_placement({"executor": "local"})
        return result

    def prestart(self) -> None:
        self.pool().prestart()

    def reap(self, max_idle: float) -> int:
        with self._lock:
            pool = self._pool
        return pool.reap(max_idle) if pool is not None else 0

    def close(self) -> None:
        with self._lock:
            pool = self._pool
        if pool is not None:
            pool.close()

    def status(self) -> dict:
        with self._lock:
            pool = self._pool
        return {
            "kind": "local", "address": None,
            "workers": pool.size if pool is not None else 0,
            "in_flight": len(pool._busy) if pool is not None else 0,
        }


def make_executor(settings: dict, make_pool: Callable[[], WorkerPool]):
    """The executor ``[stages.parse] executor`` names; ``make_pool`` builds the local pool
    (the Dask executors keep one too: files they cannot ship, and the fallback)."""
    local = LocalExecutor(make_pool)
    kind, arg = parse_spec(settings["stages"]["parse"].get("executor", "local"))
    if kind == "local":
        return local
    from kbwatch.pipeline.dask_executor import DaskExecutor

    return DaskExecutor(kind, arg, settings, local)
