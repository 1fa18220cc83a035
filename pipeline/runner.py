"""The runner: one event = one file = one run, through the configured stages.

``Runner.submit(project, source)`` queues a file (never twice at once);
worker threads take jobs, run the stages (concurrent stages outside the
project lock, the rest serially per project under it) and park the finished
run on its project session. A commit then makes the project's files durable,
and only after that are sources removed, run records written and the journal
updated, for a whole batch of runs at once.

The watcher and ``kbwatch ingest`` both drive this class.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import tenacity
from loguru import logger

from pipeline import confine, intake
from pipeline.config import state_dir
from pipeline.errors import StageError, StopRun, TransientError
from pipeline.formats.run_record import build_record
from pipeline.fsutil import atomic_write, display_path, new_run_id, utc_iso
from pipeline.journal import Journal
from pipeline.lanes import is_large_text
from pipeline.model import RunRecord
from pipeline.parsing import worker_warmup
from pipeline.plugins import PluginSet
from pipeline.project import ProjectSession, project_refusal
from pipeline.sources import LINK_REFUSAL, classify, name_problem, split_name
from pipeline.stage import RunContext
from pipeline.workers import WorkerPool

RETRYABLE_IN_RUN = 3  # quick attempts inside one run before the journal takes over
REFUSAL_RECHECK_SECONDS = 1.0
_CHECKPOINT_SEEN: dict[str, int] = {}
_PAUSE_AT = os.environ.get("KBWATCH_TEST_PAUSE")  # read once: checkpoints sit on the hot path
_PAUSE_SECONDS = float(os.environ.get("KBWATCH_TEST_PAUSE_SECONDS") or 0)
_PAUSE_LOCK = threading.Lock()


def checkpoint(point: str, detail: str = "") -> None:
    """Test hook: pause forever at ``point`` when ``KBWATCH_TEST_PAUSE`` names it.

    ``KBWATCH_TEST_PAUSE="commit:after#2"`` pauses the second time the runner
    passes that point and creates ``KBWATCH_TEST_PAUSE_FILE`` so a test knows
    when to SIGKILL the process. Unset (always, outside tests) it costs a dict
    lookup (the variable is read when the module is imported).

    With ``KBWATCH_TEST_PAUSE_SECONDS`` the pause repeats at every pass from
    the n-th on, one thread at a time: the flag file gets ``point`` and
    ``detail`` (e.g. the source), and the run goes on when the test deletes
    the flag or after that many seconds.
    """
    wanted = _PAUSE_AT
    if not wanted:
        return
    name, _, nth = wanted.partition("#")
    if name != point:
        return
    if _PAUSE_SECONDS:
        _timed_pause(point, detail, int(nth or 1))
        return
    _CHECKPOINT_SEEN[point] = _CHECKPOINT_SEEN.get(point, 0) + 1
    if _CHECKPOINT_SEEN[point] != int(nth or 1):
        return
    flag = os.environ.get("KBWATCH_TEST_PAUSE_FILE")
    if flag:
        Path(flag).write_text(point)
    time.sleep(3600)


def _timed_pause(point: str, detail: str, first: int) -> None:
    with _PAUSE_LOCK:
        _CHECKPOINT_SEEN[point] = _CHECKPOINT_SEEN.get(point, 0) + 1
        if _CHECKPOINT_SEEN[point] < first:
            return
        flag = Path(os.environ["KBWATCH_TEST_PAUSE_FILE"])
        flag.write_text(f"{point}\n{detail}\n", encoding="utf-8")
        deadline = time.monotonic() + _PAUSE_SECONDS
        while flag.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        flag.unlink(missing_ok=True)


@dataclass
class Job:
    project: Path
    rel: str  # relative to sources/
    attempt: int = 1
    queued_at: float = field(default_factory=time.monotonic)

    @property
    def key(self) -> tuple[str, str]:
        return (str(self.project), self.rel)


@dataclass
class FinishedRun:
    ctx: RunContext | None
    job: Job
    run_id: str
    outcome: str
    message: str
    error: str | None
    reason: str | None
    retryable: bool
    blocked_by: list[str]
    stage_rows: list[dict]
    started_at: str
    sha256: str | None
    size: int
    mtime_ns: int
    name: str
    device: int | None = None  # identity of the file that was taken (None: nothing was opened)
    inode: int | None = None


def backoff_seconds(settings: dict, attempt: int) -> float:
    r = settings["retry"]
    base = min(r["backoff_max_seconds"], r["backoff_initial_seconds"] * (2 ** max(0, attempt - 1)))
    return base * (0.5 + random.random() / 2)


class Runner:
    def __init__(self, root: Path, settings: dict, plugins: PluginSet, journal: Journal):
        self.root = root
        self.settings = settings
        self.plugins = plugins
        self.journal = journal
        self.stages = plugins.configured_stages()
        self._refusals: dict[str, tuple[float, str | None]] = {}
        self.intake = state_dir(settings) / "intake"  # private snapshots of the files being run
        self._sessions: dict[str, ProjectSession] = {}
        self._sessions_lock = threading.Lock()
        self._committing: set[str] = set()  # projects a timed commit thread is committing
        self._queue: queue.Queue[Job | None] = queue.Queue()
        self._large_queue: queue.Queue[Job | None] = queue.Queue()  # pipeline.lanes: one large text at a time
        self._keys: set[tuple[str, str]] = set()
        self._keys_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._pool: WorkerPool | None = None
        # fork parse workers from a warmed template process (one-shot ingest);
        # the service spawns them, so no template process stays resident
        self.fork_workers = False
        self._pool_lock = threading.Lock()
        self._stopping = threading.Event()
        self._idle = threading.Condition()
        self._in_flight = 0
        self.on_finished: list[Callable[[FinishedRun], None]] = []
        self.totals: dict[str, int] = {}

    # -- sessions and pool -------------------------------------------------
    def session(self, project: Path) -> ProjectSession:
        key = str(project)
        with self._sessions_lock:
            s = self._sessions.get(key)
            if s is None:
                s = self._sessions[key] = ProjectSession(project, self.settings, state_dir(self.settings))
            return s

    def _worker_pool(self) -> WorkerPool:
        with self._pool_lock:
            if self._pool is None:
                parse = self.settings["stages"]["parse"]
                preload = None
                if self.fork_workers:
                    preload = sorted({m for mods in self.plugins.hook.kb_worker_preload(settings=self.settings)
                                      for m in (mods or [])})
                self._pool = WorkerPool(
                    self.settings["service"]["workers"], memory_mb=parse.get("memory_mb", 0),
                    warmup=functools.partial(worker_warmup, self.settings), preload=preload,
                )
            return self._pool

    def prestart_workers(self) -> None:
        """Start (and warm up) the parse workers now rather than on the first file."""
        self._worker_pool().prestart()

    def reap_idle_workers(self, max_idle: float) -> int:
        with self._pool_lock:
            pool = self._pool
        return pool.reap(max_idle) if pool is not None else 0

    def offload(self, fn: Callable, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        return self._worker_pool().call(fn, *args, timeout=timeout, **kwargs)

    # -- queue -------------------------------------------------------------
    def queue_length(self) -> int:
        return self._queue.qsize() + self._large_queue.qsize()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def is_queued(self, project: Path, rel: str) -> bool:
        with self._keys_lock:
            return (str(project), rel) in self._keys

    def submit(self, project: Path, rel: str, attempt: int = 1) -> bool:
        job = Job(project, rel, attempt)
        with self._keys_lock:
            if job.key in self._keys:
                return False
            self._keys.add(job.key)
        s = self.session(project)
        with s.count_lock:
            s.active += 1
        with self._idle:
            self._in_flight += 1
        large = is_large_text(self.plugins, self.settings, project / "sources" / rel)
        (self._large_queue if large else self._queue).put(job)
        return True

    def start(self, threads: int | None = None) -> None:
        # one thread more than parse workers: while every worker parses, one
        # thread runs the in-process stages (scan, archive, commit) of a file
        # whose parse is done, so the two overlap instead of taking turns
        n = threads or self.settings["service"]["workers"] + 1
        for i in range(max(1, n)):
            t = threading.Thread(target=self._loop, name=f"kbwatch-run-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        t = threading.Thread(target=self._loop, args=(self._large_queue,), name="kbwatch-run-large", daemon=True)
        t.start()
        self._threads.append(t)

    def wait_idle(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            while self._in_flight:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._idle.wait(timeout=0.2 if remaining is None else min(0.2, remaining))
        return True

    def stop(self, wait: float = 8.0) -> None:
        """Stop taking jobs; let runs in progress finish (or abandon them cleanly)."""
        self._stopping.set()
        for jobs in (self._queue, self._large_queue):
            while True:  # drop queued jobs: they stay in sources/ and are found at next start
                try:
                    job = jobs.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    self._release(job)
        for t in self._threads:
            (self._large_queue if t.name == "kbwatch-run-large" else self._queue).put(None)
        deadline = time.monotonic() + wait
        for t in self._threads:
            t.join(timeout=max(0.1, deadline - time.monotonic()))
        if self._pool is not None:
            self._pool.close()
        for t in self._threads:
            t.join(timeout=2)
        self.flush_all()

    def _release(self, job: Job, processed: bool = True) -> None:
        """A job is over: it was committed, or it ended without a run to commit.

        The file's queue key is held until then, so a rescan or an event
        cannot queue a file whose run is parked but not yet committed.
        """
        with self._keys_lock:
            self._keys.discard(job.key)
        if not processed:  # never reached process(): it still counts as active
            s = self.session(job.project)
            with s.count_lock:
                s.active -= 1
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()

    def _loop(self, jobs: "queue.Queue[Job | None] | None" = None) -> None:
        jobs = self._queue if jobs is None else jobs
        while True:
            job = jobs.get()
            if job is None:
                return
            if self._stopping.is_set():
                self._release(job, processed=False)
                continue
            parked = False
            try:
                parked = self.process(job)
            except Exception:  # the last line of defence: never kill the thread
                logger.exception("unexpected error while processing {}", job.rel)
            finally:
                if not parked:
                    session = self.session(job.project)
                    with session.lock:
                        with session.count_lock:
                            session.active -= 1
                            idle = session.active == 0
                        if idle and session.pending_runs:
                            self.flush(session)
                        session.release_files()  # a run that ended without a commit
                    self._release(job)

    # -- one run -----------------------------------------------------------
    def _project_refusal(self, project: Path) -> str | None:
        """``project_refusal``, looked at most every ``REFUSAL_RECHECK_SECONDS`` per project.

        It is a courtesy check (a clear reason, once, for a linked project
        folder); containment itself never depends on it: every read, write and
        unlink below the root walks its folders without following links.
        """
        now = time.monotonic()
        key = str(project)
        hit = self._refusals.get(key)
        if hit is None or now - hit[0] >= REFUSAL_RECHECK_SECONDS:
            hit = self._refusals[key] = (now, project_refusal(project))
        return hit[1]

    def process(self, job: Job) -> bool:
        """Run the stages for one file; True when a run was parked for commit."""
        session = self.session(job.project)
        project = job.project
        source = project / "sources" / job.rel
        source_rel = f"sources/{display_path(job.rel)}"
        name, ext = split_name(display_path(job.rel))
        run_id = new_run_id("ingest")
        started = utc_iso()
        refused_project = self._project_refusal(project)
        if refused_project:  # containment: nothing is read or written in a refused project
            self.journal.event(project.name, source_rel, "refused", f"project refused: {refused_project}")
            return False
        reason, st = classify(source)
        if reason == "vanished":
            self.journal.event(project.name, source_rel, "vanished", "the file disappeared before it was taken")
            return False
        refusal = reason or name_problem(job.rel)
        size = st.st_size if st else 0
        mtime_ns = st.st_mtime_ns if st else 0
        base = dict(ctx=None, job=job, run_id=run_id, started_at=started, size=size, mtime_ns=mtime_ns, name=name)
        if refusal:
            self._park(session, FinishedRun(
                outcome="failed", message=refusal, error=refusal, reason="refused", retryable=False,
                blocked_by=[], stage_rows=[], sha256=None, **base))
            return True
        # one snapshot folder per runner thread (a thread runs one file at a time): no folder
        # is made and removed per file, which costs more than the copy on a busy disk
        snapshot_dir = self.intake / f"thread-{threading.get_ident()}"
        try:
            taken = _retry_transient(lambda: _take(source, snapshot_dir), self.settings)
        except FileNotFoundError:
            self.journal.event(project.name, source_rel, "vanished", "the file disappeared while it was read")
            return False
        except confine.LinkedFile:
            refusal = LINK_REFUSAL
        except confine.Escape as exc:  # a folder on the way became a link: do nothing through it
            logger.warning("{}/{} not taken: {}", project.name, source_rel, exc.strerror)
            self.journal.event(project.name, source_rel, "refused", f"not taken: {exc.strerror}")
            return False
        except intake.NotRegular as exc:
            refusal = str(exc)
        except StageError as exc:
            self._park(session, FinishedRun(
                outcome="failed", message=exc.message, error=exc.message, reason=exc.reason,
                retryable=exc.transient, blocked_by=[], stage_rows=[], sha256=None, **base))
            return True
        if refusal:  # swapped for a link or a special file after it was listed
            self._park(session, FinishedRun(
                outcome="failed", message=refusal, error=refusal, reason="refused", retryable=False,
                blocked_by=[], stage_rows=[], sha256=None, **base))
            return True
        checkpoint("run:opened", source_rel)
        digest, size, mtime_ns = taken.sha256, taken.size, taken.mtime_ns
        self.journal.start_run({
            "run_id": run_id, "project": project.name, "source": source_rel, "name": name,
            "sha256": digest, "size": size, "mtime_ns": mtime_ns, "status": "running",
            "attempts": job.attempt, "started_at": started, "retryable": 0,
            "device": taken.device, "inode": taken.inode,
        })
        ctx = RunContext(
            run_id=run_id, project=session, source=source, source_rel=source_rel, name=name, ext=ext,
            sha256=digest, size=size, mtime_ns=mtime_ns, settings=self.settings, started_at=started,
            offload=self.offload, plugins=self.plugins, journal=self.journal, content=taken.snapshot,
        )
        outcome, message, error, reason_word, retryable, blocked = "done", "", None, None, False, []
        stage_rows: list[dict] = []
        held = False
        ran: list[Any] = []
        try:
            for stage in self.stages:
                concurrent = bool(getattr(stage, "concurrent", False))
                if not concurrent and not held:
                    session.lock.acquire()
                    held = True
                    session.hold_files()  # held until the commit: no one writes the project meanwhile
                elif concurrent and held:
                    session.lock.release()
                    held = False
                able = getattr(stage, "able_to_run", None)
                if able is not None and not able(ctx):
                    stage_rows.append(_stage_row(run_id, stage.name, "skipped", 0.0, None))
                    continue
                t0 = time.perf_counter()
                ran.append(stage)
                checkpoint(f"stage:{stage.name}:before")
                try:
                    note = _retry_transient(lambda: stage.run(ctx), self.settings)
                except StopRun as stop:
                    stage_rows.append(_stage_row(run_id, stage.name, stop.outcome.value, _ms(t0), stop.message))
                    raise
                except StageError as exc:
                    stage_rows.append(_stage_row(run_id, stage.name, "failed", _ms(t0), exc.message))
                    raise
                except Exception as exc:
                    stage_rows.append(_stage_row(run_id, stage.name, "error", _ms(t0), f"{type(exc).__name__}: {exc}"))
                    raise
                stage_rows.append(_stage_row(run_id, stage.name, "ok", _ms(t0), note))
                checkpoint(f"stage:{stage.name}:after")
            message = _done_message(ctx)
        except StopRun as stop:
            outcome, message, blocked = stop.outcome.value, stop.message, stop.blocked_by
            if outcome == "conflict":  # the file stays refused: say why (a duplicate is no error)
                error = message
        except StageError as exc:
            outcome, message, error, reason_word, retryable = "failed", exc.message, exc.message, exc.reason, exc.transient
        except Exception as exc:
            logger.opt(exception=True).error("stage crashed on {}: {}", source_rel, exc)
            outcome, reason_word = "failed", "internal error"
            message = error = f"internal error: {type(exc).__name__}: {exc} (see the service log)"
        finally:
            for stage in ran:
                cleanup = getattr(stage, "cleanup", None)
                if cleanup is not None:
                    try:
                        cleanup(ctx)
                    except Exception:
                        logger.exception("cleanup of stage {} failed", stage.name)
            if held:
                session.lock.release()
            intake.discard(snapshot_dir, keep_folder=True)
        if reason_word == "shutdown":  # abandoned cleanly: nothing was written, the file stays
            self.journal.delete_run(run_id)
            return False
        if outcome == "failed" and retryable and job.attempt >= self.settings["retry"]["max_attempts"]:
            message = f"{message} (gave up after {job.attempt} attempts; `kbwatch retry` tries again)"
            error = message
        self._park(session, FinishedRun(
            ctx=ctx, job=job, run_id=run_id, outcome=outcome, message=message, error=error,
            reason=reason_word, retryable=retryable, blocked_by=blocked, stage_rows=stage_rows,
            started_at=started, sha256=digest, size=size, mtime_ns=mtime_ns, name=name,
            device=taken.device, inode=taken.inode))
        return True

    # -- commit ------------------------------------------------------------
    def _park(self, session: ProjectSession, run: FinishedRun) -> bool:
        """Hand the finished run to its project; commit when the batch is due."""
        with session.lock:
            session.hold_files()
            if run.ctx is None:
                run.ctx = _bare_context(run, session, self.settings, self.plugins, self.journal)
            for stage in self.stages:
                finish = getattr(stage, "finish", None)
                if finish is not None:
                    try:
                        finish(run.ctx, run.outcome, run.message)
                    except Exception:
                        logger.exception("finish of stage {} failed", stage.name)
            session.pending_runs.append(run)
            with session.count_lock:
                session.active -= 1
                idle = session.active == 0
            if session.first_pending_at is None:
                session.first_pending_at = time.monotonic()
            svc = self.settings["service"]
            # a commit costs O(project size): space them so they stay a small share of the time
            interval = max(svc["commit_interval_seconds"], 4 * session.last_commit_seconds)
            due = (
                idle
                or len(session.pending_runs) >= svc["commit_batch"]
                or time.monotonic() - session.first_pending_at >= interval
                or self._stopping.is_set()
            )
            if due:
                self.flush(session)
        return True

    def flush_due(self) -> None:
        """Commit batches that waited longer than the commit interval (a timer's job).

        Never waits and never commits in the calling thread (the service's main loop, which
        also beats the heartbeat and takes new files): a due batch is committed by a
        short-lived thread, one per project at a time; a project held by a long stage or
        commit is committed by its holder when it parks or finishes.
        """
        with self._sessions_lock:
            sessions = list(self._sessions.values())
        for s in sessions:
            if not s.lock.acquire(blocking=False):
                continue
            try:
                due = self._batch_due(s)
            finally:
                s.lock.release()
            if due:
                self._flush_in_background(s)

    def _batch_due(self, s: ProjectSession) -> bool:
        svc = self.settings["service"]
        interval = max(svc["commit_interval_seconds"], 4 * s.last_commit_seconds)
        return bool(s.pending_runs) and s.first_pending_at is not None and time.monotonic() - s.first_pending_at >= interval

    def _flush_in_background(self, s: ProjectSession) -> None:
        with self._sessions_lock:
            if s.name in self._committing:
                return
            self._committing.add(s.name)

        def commit() -> None:
            try:
                with s.lock:
                    if self._batch_due(s):
                        self.flush(s)
            except Exception:
                logger.exception("timed commit of {} failed", s.name)
            finally:
                with self._sessions_lock:
                    self._committing.discard(s.name)

        threading.Thread(target=commit, name=f"kbwatch-commit-{s.name}", daemon=True).start()

    def flush_all(self) -> None:
        with self._sessions_lock:
            sessions = list(self._sessions.values())
        for s in sessions:
            with s.lock:
                if s.has_pending():
                    self.flush(s)

    def flush(self, session: ProjectSession) -> None:
        """Commit a project's pending runs (call under ``session.lock``)."""
        session.hold_files()
        runs, session.pending_runs = session.pending_runs, []
        session.first_pending_at = None
        try:
            self._commit_runs(session, runs)
        finally:
            session.release_files()  # written: a waiting command may change the project now
            for run in runs:
                self._release(run.job)  # committed (or given up): the file may be queued again

    def _commit_runs(self, session: ProjectSession, runs: list[FinishedRun]) -> None:
        checkpoint("commit:before")
        t0 = time.monotonic()
        try:
            _retry_transient(lambda: _commit(session), self.settings)
            session.last_commit_seconds = time.monotonic() - t0
            logger.debug("committed {} run(s) of {} in {:.0f} ms", len(runs), session.name,
                         session.last_commit_seconds * 1000)
        except Exception as exc:
            logger.error("commit of {} failed: {}", session.name, exc)
            session.discard()
            for run in runs:
                if run.outcome in ("done", "duplicate"):
                    run.outcome, run.retryable, run.reason = "failed", True, "commit failed"
                    run.message = run.error = f"could not write the project's files: {exc}"
        checkpoint("commit:after")
        rows, stage_rows, finding_rows = [], [], []
        pending = None
        for run in runs:
            ctx = run.ctx
            if run.outcome in ("done", "duplicate"):
                _remove_source(ctx, run)
                checkpoint("source:removed")
            if pending is None:
                pending = _pending_count(self.journal, session.name, runs)
            record = build_record(
                run.run_id, run.outcome, run.message, ctx.source_rel, run.sha256, ctx.outputs,
                ctx.diagnostics, ctx.findings if run.outcome == "done" else [], ctx.parsed_path, pending,
            )
            rec_rel = f"runs/{run.run_id}.json"
            try:
                atomic_write(session.path / rec_rel, json.dumps(record, ensure_ascii=False) + "\n", fsync=False)
            except OSError as exc:
                logger.error("cannot write {}: {}", rec_rel, exc)
            finished = utc_iso()
            attempts = run.job.attempt
            rows.append({
                "run_id": run.run_id, "project": session.name, "source": ctx.source_rel, "name": run.name,
                "sha256": run.sha256, "size": run.size, "mtime_ns": run.mtime_ns, "outcome": run.outcome,
                "status": record["status"], "error": run.error, "reason": run.reason,
                "retryable": int(run.retryable), "attempts": attempts,
                "next_attempt_at": (time.time() + backoff_seconds(self.settings, attempts)) if run.retryable else None,
                "started_at": run.started_at, "finished_at": finished, "record_path": f"{session.name}/{rec_rel}",
                "blocked_by": json.dumps(run.blocked_by, ensure_ascii=False) if run.blocked_by else None,
            })
            stage_rows.extend(run.stage_rows)
            if run.outcome == "done":
                for f in ctx.findings:
                    finding_rows.append(_finding_row(run, session.name, f))
            self.totals[run.outcome] = self.totals.get(run.outcome, 0) + 1
        # run records are history, written after the sources left: the kernel flushes them
        # (DESIGN §2 requires durability of archive, parsed, manifest and project.md only)
        checkpoint("records:written")
        try:
            if any(r["outcome"] == "done" for r in rows):
                with self.journal.transaction() as db:
                    for run in runs:
                        if run.outcome == "done":
                            db.execute(
                                "update findings set current = 0 where project = ? and document = ?",
                                [session.name, run.name],
                            )
            self.journal.finish_runs(rows, stage_rows, finding_rows)
        except Exception as exc:  # the runs/ files are the truth; the journal can be rebuilt
            logger.error("journal update failed ({}); run `kbwatch journal rebuild`", exc)
        try:
            session.run_after_commit()
        except Exception as exc:
            logger.error("post-commit update of {} failed: {}", session.name, exc)
        for run, row in zip(runs, rows):
            for cb in self.on_finished:
                try:
                    cb(run)
                except Exception:
                    logger.exception("on_finished callback failed")
            rec = RunRecord(
                run_id=run.run_id, project=session.name, source=row["source"], name=run.name,
                outcome=run.outcome, status=row["status"], error=run.error, started_at=run.started_at,
                finished_at=row["finished_at"], record_path=row["record_path"],
                findings=list(run.ctx.findings) if run.ctx else [],
            )
            try:
                self.plugins.hook.kb_run_finished(run=rec)
            except Exception:
                logger.exception("a kb_run_finished hook failed")
            level = "INFO" if run.outcome in ("done", "duplicate") else "WARNING"
            logger.log(level, "{} {}: {} {}", run.outcome, session.name, row["source"], run.message)


# -- helpers -----------------------------------------------------------------


def _take(path: Path, snapshot_dir: Path) -> intake.Taken:
    """Open the source once and snapshot it (pipeline.intake); transient errors retried."""
    try:
        return intake.take(path, snapshot_dir)
    except (FileNotFoundError, confine.Escape, intake.NotRegular):
        raise
    except intake.Changed as exc:
        raise TransientError(str(exc), reason="changed") from exc
    except PermissionError as exc:
        raise TransientError(f"cannot read the file yet: {exc.strerror}", reason="locked") from exc
    except OSError as exc:
        raise TransientError(f"cannot read the file: {exc.strerror}", reason="io") from exc


def _retry_transient(fn: Callable[[], Any], settings: dict) -> Any:
    """Call ``fn``; on a TransientError retry it with exponential backoff and jitter."""
    try:
        return fn()  # the common case costs nothing
    except TransientError:
        pass
    r = settings["retry"]
    attempts = min(RETRYABLE_IN_RUN, r["max_attempts"])
    if attempts <= 1:
        return fn()
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(TransientError),
        wait=tenacity.wait_exponential_jitter(multiplier=min(0.2, r["backoff_initial_seconds"]), max=min(5.0, r["backoff_max_seconds"])),
        stop=tenacity.stop_after_attempt(attempts - 1),
        reraise=True,
    )
    return retrying(fn)


def _commit(session: ProjectSession) -> None:
    try:
        session.commit()
    except OSError as exc:
        raise TransientError(f"{exc.strerror or exc}", reason="io") from exc


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def _stage_row(run_id: str, stage: str, status: str, ms: float, error: str | None) -> dict:
    return {"run_id": run_id, "stage": stage, "status": status, "duration_ms": ms, "error": error}


def _done_message(ctx: RunContext) -> str:
    what = "new version" if ctx.event == "version" else "ingested"
    where = f" as {ctx.archived}" if ctx.archived else ""
    return f"{what}{where}"


def _bare_context(run: FinishedRun, session: ProjectSession, settings: dict, plugins=None, journal=None) -> RunContext:
    name, ext = split_name(display_path(run.job.rel))
    return RunContext(
        run_id=run.run_id, project=session, source=session.path / "sources" / run.job.rel,
        source_rel=f"sources/{display_path(run.job.rel)}", name=name, ext=ext, sha256=run.sha256 or "",
        size=run.size, mtime_ns=run.mtime_ns, settings=settings, started_at=run.started_at,
        plugins=plugins, journal=journal,
    )


def _remove_source(ctx: RunContext, run: FinishedRun) -> None:
    """Remove the ingested source only if it is still the file that was taken
    (device, inode, size, mtime), through its folder reached without following
    links. Its folder stays: sub-folders of sources/ are the users'."""
    try:
        removed = confine.unlink_if_same(ctx.source, run.device, run.inode, run.size, run.mtime_ns)
    except OSError as exc:
        logger.warning("could not remove {}: {}", ctx.source_rel, exc)
        ctx.diagnose("warning", f"ingested, but the source could not be removed: {exc.strerror}")
        return
    if removed:
        ctx.output(ctx.source_rel, "deleted")
    elif removed is False:
        logger.info("{} changed while it was ingested; left in sources/ for the next run", ctx.source_rel)


def _pending_count(journal: Journal, project: str, runs: list[FinishedRun]) -> int:
    try:
        existing = len(journal.pending_findings(project))
    except Exception:
        existing = 0
    replaced = {r.name for r in runs if r.outcome == "done"}
    if replaced and existing:
        rows = journal.pending_findings(project)
        existing = sum(1 for row in rows if row["document"] not in replaced)
    new = sum(
        1 for r in runs if r.outcome == "done" and r.ctx
        for f in r.ctx.findings if getattr(f, "decision", "pending") == "pending"
    )
    return existing + new


def _finding_row(run: FinishedRun, project: str, f) -> dict:
    return {
        "run_id": run.run_id, "project": project, "document": run.name, "path": run.ctx.parsed_path,
        "kind": f.kind, "rule": f.rule, "severity": f.severity, "line": f.line, "column": f.column,
        "offset": f.offset, "excerpt": f.excerpt, "fingerprint": f.fingerprint,
        "decision": getattr(f, "decision", "pending"), "decided_at": None, "current": 1,
    }
