"""Parsing on a Dask cluster: ``[stages.parse] executor = "dask://HOST:PORT"`` or ``"dask-local:N"``.

Owns the coordinator side of parsing on Dask (``distributed``, the optional
``kbwatch[cluster]`` extra); the worker side is :mod:`kbwatch.pipeline.dask_task`:

:class:`DaskExecutor` (the runner's executor, in the watcher's process)
connects to the scheduler (or starts a LocalCluster), ships each call's
:class:`~kbwatch.pipeline.executors.ShippedFile` as bytes (up to
``ship_max_mb``), by path when it lies under ``shared_path_prefix``, else
runs the call on the local pool; waits for the result; tells the runner where
it ran and how many workers died under it. Only the parse leaves the machine:
every result comes back here and the commit stays here.

Failures:

- a Dask worker that dies mid-task: the scheduler runs the task elsewhere;
  the deaths under it (the scheduler's ``remove-worker`` events, to which the
  client subscribes: no extra round trip per task) come back with the
  placement and the parse stage journals them;
- a document that kills every worker it lands on: it fails as
  ``worker deaths``, once, after ``max_worker_deaths`` workers died *while it
  ran on them*. The scheduler counts a death against every task it had sent
  to that worker, queued ones too (its ``allowed-failures`` is set to
  ``max_worker_deaths - 1`` on connect, so it gives up on a task by then);
  each task says when it starts (``dask_task.STARTED_TOPIC``), so a good
  document that was only queued beside a poison one, and was given up with
  it, is submitted again, not failed. ``DEATH_CAP`` times
  ``max_worker_deaths`` deaths of any kind under one document fail it too;
- the scheduler unreachable or lost (a call in flight is cancelled by the
  client), or left with no worker for ``NO_WORKERS_GRACE`` s: ``cluster_unavailable = "local"`` parses here meanwhile and tries
  the cluster again after a pause; ``"wait"`` retries with backoff until it
  is back (or the service stops). A parse has no side effect, so running it
  again is safe, and its one result is committed once.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from kbwatch.pipeline import __version__
from kbwatch.pipeline.dask_task import (
    STARTED_TOPIC,
    Shipped,
    prestart_pool,
    remote_call,
    set_allowed_failures,
)
from kbwatch.pipeline.errors import PermanentError, TransientError
from kbwatch.pipeline.executors import LocalExecutor, ShippedFile, set_placement
from kbwatch.pipeline.lazylog import logger

CONNECT_TIMEOUT = 5.0  # seconds to reach the scheduler
RETRY_CLUSTER_AFTER = 5.0  # "local" fallback: seconds before the cluster is tried again
WAIT_BACKOFF_MAX = 30.0  # "wait": longest pause between two tries
POLL = 0.5  # how often a waiting call looks at shutdown
NO_WORKERS_GRACE = 10.0  # a cluster left with no worker this long counts as unavailable
DEATH_CAP = 3  # this many times max_worker_deaths deaths under one document, running or queued, fail it


class _Unavailable(Exception):
    """The scheduler cannot be reached, or the connection was lost under a call."""


class _Killed(Exception):
    """The scheduler gave up on one submission (``KilledWorker``): deaths while it ran, while queued."""

    def __init__(self, ran: int, queued: int):
        super().__init__(ran, queued)
        self.ran, self.queued = ran, queued


class DaskExecutor:
    """Parse tasks on a Dask cluster (see the module docstring); the runner's executor."""

    def __init__(self, kind: str, arg: Any, settings: dict, local: LocalExecutor):
        self.kind = kind  # "dask" (an existing scheduler) or "dask-local"
        self.address = arg if kind == "dask" else None
        self.n_local = arg if kind == "dask-local" else 0
        self.settings = settings
        parse = settings["stages"]["parse"]
        self.ship_max = parse.get("ship_max_mb", 64) * 1024 * 1024
        self.shared_prefix = parse.get("shared_path_prefix", "")
        self.max_deaths = parse.get("max_worker_deaths", 3)
        self.when_unavailable = parse.get("cluster_unavailable", "local")
        self.local = local
        self._lock = threading.Lock()  # state only, never held over I/O
        self._connecting = threading.Lock()  # one connection attempt at a time
        self._client = None
        self._cluster = None
        self._down_until = 0.0
        self._closed = False
        self._in_flight = 0
        self._version_warned: set[str] = set()
        # task key -> [workers that died while it ran there, ... while it was only queued there]
        self._deaths: dict[str, list[int]] = {}
        self._started: dict[str, str] = {}  # task key -> the worker it said it started on
        self.counts = {"remote": 0, "local": 0, "worker_deaths": 0, "unavailable": 0}

    # -- the connection ---------------------------------------------------------
    def _ready_client(self):
        """The connected client, or why there is none now (under ``_lock``, no I/O)."""
        if self._closed:
            raise TransientError("the service is shutting down", reason="shutdown")
        if self._client is not None:
            return self._client
        if time.monotonic() < self._down_until:
            raise _Unavailable(f"the Dask scheduler {self.address} was unavailable moments ago")
        return None

    def _connect(self):
        """The client (connecting or starting the LocalCluster on first use); _Unavailable if not now.

        One connection attempt at a time (``_connecting``); ``_lock`` is never held over I/O:
        the client's event loop thread takes it too (:meth:`_scheduler_event`).
        """
        with self._lock:
            client = self._ready_client()
        if client is not None:
            return client
        with self._connecting:
            with self._lock:
                client = self._ready_client()
                cluster = self._cluster
            if client is not None:
                return client
            try:
                from distributed import Client
            except ImportError:
                raise PermanentError(
                    "[stages.parse] executor names Dask, but distributed is not installed "
                    "(pip install 'kbwatch[cluster]')", reason="cluster") from None
            try:
                if self.kind == "dask-local":
                    if cluster is None:
                        from distributed import LocalCluster

                        from kbwatch.pipeline.workers import sigint_blocked

                        # its loop thread and the nanny and worker processes it starts (now, and
                        # later in place of a dead one) never see a terminal's Ctrl-C: the service
                        # stops in its own order, closing the cluster last
                        with sigint_blocked():
                            cluster = LocalCluster(
                                n_workers=self.n_local, threads_per_worker=1, processes=True,
                                dashboard_address=None, scheduler_kwargs={"dashboard": False},
                                host="127.0.0.1", scheduler_port=0, silence_logs=40,
                            )
                        with self._lock:
                            self._cluster = cluster
                            self.address = cluster.scheduler_address
                    client = Client(cluster, timeout=CONNECT_TIMEOUT, set_as_default=False)
                else:
                    client = Client(self.address, timeout=CONNECT_TIMEOUT, set_as_default=False)
                if not _workers(client):  # a scheduler with no worker would hold every parse forever
                    client.wait_for_workers(1, timeout=CONNECT_TIMEOUT)
                client.run_on_scheduler(set_allowed_failures, max(0, self.max_deaths - 1))
                client.subscribe_topic(STARTED_TOPIC, self._task_started)
                client.subscribe_topic("all", self._scheduler_event)
                # every worker starts (and warms up) its parse pool now, in the background,
                # as the local pool's prestart does, not on its first file
                try:
                    client.run(prestart_pool, self.settings)
                except Exception as exc:  # an optimisation only: the first parse starts the pool
                    logger.warning("could not prestart the parse pools on the Dask workers: {}", exc)
            except Exception as exc:
                with self._lock:
                    self._down_until = time.monotonic() + RETRY_CLUSTER_AFTER
                if client is not None:
                    threading.Thread(target=_close_quietly, args=(client,), daemon=True).start()
                raise _Unavailable(f"cannot use the Dask scheduler {self.address}: {type(exc).__name__}: {exc}") from None
            with self._lock:
                closed = self._closed
                if not closed:
                    self._client = client
            if closed:  # close() ran meanwhile: what this attempt started goes too
                _close_quietly(client)
                with self._lock:
                    cluster, self._cluster = self._cluster, None
                if cluster is not None:
                    _close_quietly(cluster)
                raise TransientError("the service is shutting down", reason="shutdown")
            logger.info("parsing on the Dask cluster at {}", self.address)
            return client

    def _task_started(self, event) -> None:
        """A parse task's start notice (:data:`STARTED_TOPIC`): which worker runs it now."""
        try:
            msg = event[1]
            with self._lock:
                if msg["key"] in self._deaths:
                    self._started[msg["key"]] = msg["worker"]
        except Exception:  # an event of another shape: not ours to judge
            pass

    def _scheduler_event(self, event) -> None:
        """The scheduler's "all" topic: a worker that died (not retired) with parse tasks on it.

        A death counts as "ran" against the task that had said it started on that
        worker, as "queued" against the others the scheduler had sent there.
        """
        try:
            msg = event[1]
            if msg.get("action") != "remove-worker" or msg.get("expected"):
                return
            worker = msg.get("worker")
            with self._lock:
                ours = [k for k in msg.get("processing-tasks") or () if isinstance(k, str) and k in self._deaths]
                for key in ours:
                    self._deaths[key][0 if self._started.get(key) == worker else 1] += 1
                if ours:
                    self.counts["worker_deaths"] += 1
        except Exception:  # an event of another shape: not ours to judge
            pass

    def _lost(self, client, why: str) -> None:
        """Forget a client whose scheduler went away (once, whichever call saw it first)."""
        with self._lock:
            if self._client is not client:
                return
            self._client = None
            self._down_until = time.monotonic() + RETRY_CLUSTER_AFTER
        logger.warning("lost the Dask scheduler {}: {}", self.address, why)
        threading.Thread(target=_close_quietly, args=(client,), daemon=True).start()

    # -- one call -------------------------------------------------------------------
    def call(self, fn: Callable, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        shipped = self._ship(args)
        if shipped is None:  # a file neither shipped nor on a shared mount: parse it here
            return self._local(fn, args, kwargs, timeout, why="too large to ship")
        pause = 1.0
        while True:
            try:
                return self._remote(fn, shipped, kwargs, timeout)
            except _Unavailable as exc:
                with self._lock:
                    self.counts["unavailable"] += 1
                if self.when_unavailable == "local":
                    return self._local(fn, args, kwargs, timeout, why=str(exc))
                logger.warning("{}; trying again in {:.0f} s", exc, pause)
                self._sleep(pause)
                pause = min(WAIT_BACKOFF_MAX, pause * 2)

    def _ship(self, args: tuple) -> tuple | None:
        out = []
        for a in args:
            if isinstance(a, ShippedFile):
                size = os.stat(a).st_size
                if size <= self.ship_max:
                    a = Shipped(Path(a).name, Path(a).read_bytes())
                elif not (self.shared_prefix and os.path.abspath(a).startswith(self.shared_prefix)):
                    return None
                else:
                    a = str(a)
            out.append(a)
        return tuple(out)

    def _local(self, fn, args, kwargs, timeout, why: str) -> Any:
        with self._lock:
            self.counts["local"] += 1
        result = self.local.call(fn, *args, timeout=timeout, **kwargs)
        set_placement({"executor": "local", "fallback": why})
        return result

    def _remote(self, fn, args, kwargs, timeout) -> Any:
        """One parse on the cluster: submitted again while the workers that died under it
        died while it was only queued there (see the module docstring)."""
        client = self._connect()
        target = f"{fn.__module__}:{fn.__qualname__}"
        ran = queued = 0
        with self._lock:
            self._in_flight += 1
        try:
            while True:
                try:
                    reply, deaths = self._submit(client, target, args, kwargs, timeout)
                    break
                except _Killed as killed:
                    ran, queued = ran + killed.ran, queued + killed.queued
                    if ran >= self.max_deaths:
                        raise PermanentError(
                            f"the parse killed {ran} Dask workers "
                            f"(stages.parse.max_worker_deaths = {self.max_deaths}); not tried again",
                            reason="worker deaths") from None
                    if ran + queued >= DEATH_CAP * self.max_deaths:
                        raise PermanentError(
                            f"{ran + queued} Dask workers died under the parse ({ran} while it ran) "
                            f"(stages.parse.max_worker_deaths = {self.max_deaths}); not tried again",
                            reason="worker deaths") from None
                    logger.info("the Dask scheduler gave up on a parse after {} worker death(s), {} of them "
                                "while it was only queued there; submitting it again", killed.ran + killed.queued,
                                killed.queued)
                    client = self._connect()
        finally:
            with self._lock:
                self._in_flight -= 1
        status, *payload = reply
        deaths += ran + queued
        where = payload[-1]
        placement = {"executor": self.kind, "address": self.address, **where, "worker_deaths": deaths}
        with self._lock:
            self.counts["remote"] += 1
        set_placement(placement)
        if status == "ok":
            return payload[0]
        if status == "version":
            theirs = payload[0]
            message = (f"the Dask worker {where.get('worker')} runs kbwatch {theirs} but this watcher runs "
                       f"{__version__}: refused; install kbwatch {__version__} on every worker")
            if where.get("worker") not in self._version_warned:
                self._version_warned.add(where.get("worker"))
                logger.error(message)
            raise TransientError(message, reason="version mismatch")
        cls_name, message, reason = payload[0], payload[1], payload[2]
        cls = TransientError if cls_name == "TransientError" else PermanentError
        raise cls(message, reason=reason)

    def _submit(self, client, target: str, args, kwargs, timeout) -> tuple[tuple, int]:
        """Submit once and wait: the worker's tagged reply, and how many workers died under it.

        Raises :class:`_Killed` when the scheduler gave up on it, :class:`_Unavailable`
        when the scheduler went away.
        """
        from concurrent.futures import CancelledError
        from concurrent.futures import TimeoutError as FutureTimeout

        from distributed import KilledWorker

        key = f"kbwatch-parse-{uuid.uuid4().hex}"
        with self._lock:
            self._deaths[key] = [0, 0]
        try:
            try:
                future = client.submit(remote_call, __version__, target, args, kwargs, timeout, self.settings,
                                       key=key, pure=False, retries=0)
            except Exception as exc:
                self._lost(client, str(exc))
                raise _Unavailable(f"the Dask scheduler {self.address} did not take the task: {exc}") from None
            checked = time.monotonic()
            no_workers_since = None
            while True:
                if self._closed:
                    future.cancel()
                    raise TransientError("the service is shutting down", reason="shutdown")
                try:
                    reply = future.result(timeout=POLL)
                    break
                except FutureTimeout:
                    if client.status not in ("running", "connecting", "newly-created"):
                        self._lost(client, f"client {client.status}")
                        raise _Unavailable(f"lost the Dask scheduler {self.address}") from None
                    now = time.monotonic()
                    if now - checked >= 2.0:  # a cluster whose workers all went away holds the task forever
                        checked = now
                        if _workers(client) == 0:
                            no_workers_since = no_workers_since or now
                            if now - no_workers_since >= NO_WORKERS_GRACE:
                                future.cancel()
                                self._lost(client, f"no worker for {NO_WORKERS_GRACE:g} s")
                                raise _Unavailable(f"the Dask scheduler {self.address} has no worker") from None
                        else:
                            no_workers_since = None
                except KilledWorker:
                    with self._lock:
                        ran, queued = self._deaths.get(key) or (0, 0)
                    if not ran + queued:  # the scheduler's events never came: take its word for it
                        ran = self.max_deaths
                    raise _Killed(ran, queued) from None
                except CancelledError:
                    if self._closed:
                        raise TransientError("the service is shutting down", reason="shutdown") from None
                    self._lost(client, "the task was cancelled (connection lost)")
                    raise _Unavailable(f"lost the Dask scheduler {self.address} during a parse") from None
                except (OSError, ConnectionError) as exc:
                    self._lost(client, str(exc))
                    raise _Unavailable(f"lost the Dask scheduler {self.address}: {exc}") from None
                except Exception as exc:  # the task could not even run there (no kbwatch on the worker...)
                    raise TransientError(
                        f"the Dask worker could not run the parse task ({type(exc).__name__}: {exc}); "
                        f"is kbwatch {__version__} installed on every worker?", reason="cluster") from None
            future.release()
        finally:
            with self._lock:
                ran, queued = self._deaths.pop(key, (0, 0))
                self._started.pop(key, None)
        return reply, ran + queued

    def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self._closed:
                raise TransientError("the service is shutting down", reason="shutdown")
            time.sleep(min(POLL, deadline - time.monotonic()))

    # -- the executor interface ----------------------------------------------------------
    def prestart(self) -> None:
        """Connect (start the LocalCluster) in the background; the local pool starts on demand."""
        def go():
            try:
                self._connect()
            except Exception as exc:
                logger.warning("{}", exc)

        threading.Thread(target=go, name="kbwatch-dask-connect", daemon=True).start()

    def reap(self, max_idle: float) -> int:
        return self.local.reap(max_idle)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            client, cluster = self._client, self._cluster
            self._client = self._cluster = None
        if client is not None:
            # no longer a subscriber: the scheduler would tell it of its own removal, and on a
            # closed connection that is a CRITICAL line and a traceback on the terminal
            for topic in ("all", STARTED_TOPIC):
                try:
                    client.unsubscribe_topic(topic)
                except Exception:
                    pass
            _close_quietly(client)
        if cluster is not None:
            _close_quietly(cluster)
        self.local.close()

    def status(self) -> dict:
        with self._lock:
            client, in_flight = self._client, self._in_flight
            counts = dict(self.counts)
        workers = None
        state = "not connected"
        if client is not None:
            state = "connected" if client.status == "running" else client.status
            workers = _workers(client, cached=True)
        elif time.monotonic() < self._down_until:
            state = "unavailable"
        return {"kind": self.kind, "address": self.address, "workers": workers, "in_flight": in_flight,
                "state": state, "fallback": self.when_unavailable, **counts}


def _workers(client, cached: bool = False) -> int | None:
    """How many workers the scheduler has (None: it did not say). ``cached``: what the
    client last heard (it asks every 2 s by itself), without a round trip that could
    hang on a stalled scheduler (the service's heartbeat asks)."""
    try:
        if cached:
            n = (getattr(client, "_scheduler_identity", None) or {}).get("n_workers")
            if n is not None:
                return n
        return client.scheduler_info(n_workers=0).get("n_workers")
    except Exception:
        return None


def _close_quietly(obj) -> None:
    try:
        obj.close()
    except Exception:
        pass
