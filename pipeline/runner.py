"""The runner: one event = one file = one run, through the configured stages.

``Runner`` is the facade the watcher (:mod:`kbwatch.pipeline.service`) and
``kbwatch ingest`` (:mod:`kbwatch.pipeline.ingest`) drive; it owns only the wiring of
the parts below, the parse executor (:mod:`kbwatch.pipeline.executors`: the
local worker pool, or a Dask cluster; the runner does not know which) and the compute
pool (plain local workers that stages may hand CPU-bound work on large texts,
``RunContext.compute``). One job, top-down:

1. :meth:`Runner.submit` queues a file, never twice at once
   (:mod:`kbwatch.pipeline.run_queue`: jobs, keys, threads, the large-text lane,
   idle and stop); the project's session counts it as active
   (``ProjectSession.enter``);
2. a runner thread calls :meth:`Runner.handle`, which runs the stages of that
   one run (:mod:`kbwatch.pipeline.execute`: take the source, the stage loop,
   cleanup, one ``FinishedRun``);
3. the finished run is parked on its project session and committed with its
   batch (:mod:`kbwatch.pipeline.commit`: the project's files made durable, then
   sources removed, run records written (:mod:`kbwatch.pipeline.run_records`) and the
   journal updated), after which its job is released.

Transient failures follow :mod:`kbwatch.pipeline.retry_policy`; tests pause a run at
named points through :mod:`kbwatch.pipeline.checkpoints`.
"""

from __future__ import annotations

import functools
import threading
import time
from pathlib import Path
from typing import Any, Callable

from kbwatch.pipeline.checkpoints import checkpoint
from kbwatch.pipeline.commit import Committer
from kbwatch.pipeline.config import state_dir
from kbwatch.pipeline.execute import REFUSAL_RECHECK_SECONDS, FinishedRun, RunExecutor
from kbwatch.pipeline.executors import make_executor
from kbwatch.pipeline.journal import Journal
from kbwatch.pipeline.lanes import is_large_text
from kbwatch.pipeline.lazylog import logger
from kbwatch.pipeline.parsing import compute_pool, worker_warmup
from kbwatch.pipeline.plugins import PluginSet
from kbwatch.pipeline.project import ProjectSession
from kbwatch.pipeline.retry_policy import RETRYABLE_IN_RUN, backoff_seconds
from kbwatch.pipeline.run_queue import Job, RunQueue
from kbwatch.pipeline.workers import WorkerPool

# this many runs waiting make a backlog: each run queued behind it is announced (kb_run_queued)
BURST_RUNS = 32

__all__ = [
    "Runner", "Job", "FinishedRun", "checkpoint", "backoff_seconds",
    "RETRYABLE_IN_RUN", "REFUSAL_RECHECK_SECONDS",
]


class Runner:
    def __init__(self, root: Path, settings: dict, plugins: PluginSet, journal: Journal):
        self.root = root
        self.settings = settings
        self.plugins = plugins
        self.journal = journal
        self.stages = plugins.configured_stages()
        self.intake = state_dir(settings) / "intake"  # private snapshots of the files being run
        self._parse_executor = None  # made on first use (kbwatch.pipeline.executors)
        # plain worker processes (no parser warmed up) for CPU-bound work on large texts,
        # such as scanning them: the service's own threads and heartbeat keep the GIL
        self.compute = compute_pool(settings)
        # fork parse workers from a warmed template process (one-shot ingest);
        # the service spawns them, so no template process stays resident
        self.fork_workers = False
        self._pool_lock = threading.Lock()
        self._queue = RunQueue(handle=self.handle, dropped=self._dropped)
        self._executor = RunExecutor(settings, plugins, journal, self.stages, self.intake, self.offload,
                                     self.compute)
        self._commits = Committer(settings, plugins, journal, self.stages, release=self._queue.release,
                                  stopping=self._queue.stopping)

    # -- what callers see ----------------------------------------------------
    @property
    def on_finished(self) -> list[Callable[[FinishedRun], None]]:
        """Called with each run once it is committed (before ``kb_run_finished``)."""
        return self._commits.on_finished

    @property
    def totals(self) -> dict[str, int]:
        """Committed runs by outcome."""
        return self._commits.totals

    def session(self, project: Path) -> ProjectSession:
        return self._commits.session(project)

    # -- the parse executor ------------------------------------------------------
    def _worker_pool(self) -> WorkerPool:
        """A new local parse pool (the local executor's; a Dask executor keeps one as fallback)."""
        parse = self.settings["stages"]["parse"]
        preload = None
        if self.fork_workers:
            preload = sorted({m for mods in self.plugins.hook.kb_worker_preload(settings=self.settings)
                              for m in (mods or [])})
        return WorkerPool(
            self.settings["service"]["workers"], memory_mb=parse.get("memory_mb", 0),
            warmup=functools.partial(worker_warmup, self.settings), preload=preload,
        )

    def forget_refusal(self, project: Path) -> None:
        """A refused project was put right (:meth:`RunExecutor.forget_refusal`)."""
        self._executor.forget_refusal(project)

    def executor(self):
        """Where parses run: ``[stages.parse] executor`` (kbwatch.pipeline.executors)."""
        with self._pool_lock:
            if self._parse_executor is None:
                self._parse_executor = make_executor(self.settings, self._worker_pool)
            return self._parse_executor

    def executor_status(self) -> dict:
        """The executor's kind, address, workers and tasks in flight (``kbwatch status``)."""
        return self.executor().status()

    def prestart_workers(self) -> None:
        """Start (and warm up) the parse workers now rather than on the first file."""
        self.executor().prestart()

    def reap_idle_workers(self, max_idle: float) -> int:
        with self._pool_lock:
            executor = self._parse_executor
        stopped = self.compute.reap(max_idle)
        return stopped + (executor.reap(max_idle) if executor is not None else 0)

    def offload(self, fn: Callable, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        return self.executor().call(fn, *args, timeout=timeout, **kwargs)

    # -- 1. the queue ----------------------------------------------------------
    def queue_length(self) -> int:
        return len(self._queue)

    @property
    def in_flight(self) -> int:
        return self._queue.in_flight

    def is_queued(self, project: Path, rel: str) -> bool:
        return self._queue.is_queued(project, rel)

    def submit(self, project: Path, rel: str, attempt: int = 1) -> bool:
        queued = self._queue.submit(
            Job(project, rel, attempt),
            admitted=lambda: self.session(project).enter(),
            large=lambda: is_large_text(self.plugins, self.settings, project / "sources" / rel),
        )
        if queued and len(self._queue) >= BURST_RUNS:  # a backlog: work may start ahead of the run
            self.plugins.hook.kb_run_queued(project=project, rel=rel, settings=self.settings, plugins=self.plugins,
                                            compute=self.compute)
        return queued

    def start(self, threads: int | None = None) -> None:
        # one thread more than parse workers: while every worker parses, one
        # thread runs the in-process stages (scan, archive, commit) of a file
        # whose parse is done, so the two overlap instead of taking turns
        self._queue.start(threads or self.settings["service"]["workers"] + 1)

    def wait_idle(self, timeout: float | None = None) -> bool:
        return self._queue.wait_idle(timeout)

    def stop(self, wait: float = 8.0) -> None:
        """Stop taking jobs; let runs in progress finish (or abandon them cleanly)."""
        self._queue.stop_taking()
        self._queue.join(deadline=time.monotonic() + wait)
        with self._pool_lock:
            executor = self._parse_executor
        if executor is not None:
            executor.close()
        self.compute.close()
        self._queue.join(each=2)
        self._commits.close()  # what is pending is committed; the project folders are let go

    def _dropped(self, job: Job) -> None:
        """A queued job that never reached :meth:`process`: it no longer counts as active."""
        self.session(job.project).leave()

    # -- 2. one run ------------------------------------------------------------
    def handle(self, job: Job) -> None:
        """What a runner thread does with a job (never raises: the thread must live on)."""
        parked = False
        try:
            parked = self.process(job)
        except Exception:  # the last line of defence: never kill the thread
            logger.exception("unexpected error while processing {}", job.rel)
        finally:
            if not parked:
                self._commits.ended_without_run(self.session(job.project))
                self._queue.release(job)

    def process(self, job: Job) -> bool:
        """Run the stages for one file; True when a run was parked for commit."""
        session = self.session(job.project)
        run = self._executor.run(job, session)
        if run is None:
            return False
        self._commits.park(session, run)
        return True

    # -- 3. commit ---------------------------------------------------------------
    def flush_due(self) -> None:
        """Commit batches that waited longer than the commit interval (see :meth:`Committer.flush_due`)."""
        self._commits.flush_due()

    def flush_all(self) -> None:
        self._commits.flush_all()

    def flush(self, session: ProjectSession) -> None:
        """Commit a project's pending runs (call under ``session.lock``)."""
        self._commits.flush(session)
