"""Committing: each project's session, its batch of finished runs, and the commit.

Owns the project sessions (:class:`kbwatch.pipeline.project.ProjectSession`, one per
project, made on first use) and what happens to a finished run
(:class:`kbwatch.pipeline.execute.FinishedRun`) from the moment its thread hands it
over until its job is released:

1. :meth:`Committer.park`: every stage's ``finish`` sees the run (under the
   project's lock, its file lock held), the run joins the project's pending
   batch, and the batch is committed at once when it is due (the project went
   idle, the batch is full, it waited ``commit_interval_seconds`` (at least 4x
   the last commit's time), or the runner is stopping);
2. :meth:`Committer.flush`: the project's files are made durable
   (``ProjectSession.commit``, transient errors retried), then, in this order,
   the sources of done and duplicate runs are removed (only if still the file
   that was taken), ``runs/*.json`` written (:mod:`kbwatch.pipeline.run_records`), the
   journal updated in one transaction per step (``Journal.supersede_documents``,
   ``Journal.finish_runs``), the session's after-commit callbacks run, and the
   observers (``on_finished`` callbacks, ``kb_run_finished``) told;
3. the jobs are released (``release``, the run queue's), so their files may be
   queued again.

A batch that waits too long while no run parks is committed by
:meth:`Committer.flush_due` (the service's timer) in a short-lived thread.
Every journal write goes through :class:`kbwatch.pipeline.journal.Journal` methods
and every project write through :class:`ProjectSession` methods.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

from kbwatch.pipeline import confine
from kbwatch.pipeline.checkpoints import checkpoint
from kbwatch.pipeline.config import state_dir
from kbwatch.pipeline.errors import DISK_FULL, PROJECT_REPLACED, TransientError, is_disk_full
from kbwatch.pipeline.execute import FinishedRun
from kbwatch.pipeline.formats.manifest import session_manifest
from kbwatch.pipeline.fsutil import atomic_write, display_path, utc_iso
from kbwatch.pipeline.journal import Journal
from kbwatch.pipeline.lazylog import logger
from kbwatch.pipeline.project import ProjectReplaced, ProjectSession
from kbwatch.pipeline.retry_policy import retry_transient
from kbwatch.pipeline.run_queue import Job
from kbwatch.pipeline.run_records import file_record, finding_row, journal_row, observed, pending_count
from kbwatch.pipeline.sources import split_name
from kbwatch.pipeline.stage import RunContext


class Committer:
    def __init__(self, settings: dict, plugins: Any, journal: Journal, stages: list[Any],
                 release: Callable[[Job], None], stopping: threading.Event):
        self.settings = settings
        self.plugins = plugins
        self.journal = journal
        self.stages = stages
        self._release = release  # the run queue's: the job is over
        self._stopping = stopping
        self._sessions: dict[str, ProjectSession] = {}
        self._sessions_lock = threading.Lock()
        self._committing: set[str] = set()  # projects a timed commit thread is committing
        self.on_finished: list[Callable[[FinishedRun], None]] = []
        self.totals: dict[str, int] = {}

    # -- sessions ----------------------------------------------------------
    def session(self, project: Path) -> ProjectSession:
        key = str(project)
        with self._sessions_lock:
            s = self._sessions.get(key)
            if s is None:
                s = self._sessions[key] = ProjectSession(project, self.settings, state_dir(self.settings))
                s.on_replaced = lambda: self._replaced(s)
            return s

    def _replaced(self, session: ProjectSession) -> None:
        """The project folder was deleted and made again, or replaced, under the service
        (call under ``session.lock``): the old folder's batch ends (its commit refuses
        it), then the plugins forget what they derived from the old folder."""
        if session.has_pending():
            self.flush(session)
            session.hold_files()  # the commit let the files go: the plugins below run under the lock
        logger.warning("project {}: its folder was deleted or replaced; continuing with the folder there now",
                       session.name)
        try:
            self.journal.keep_findings_of(session.name, set(session_manifest(session).names()))
        except Exception as exc:  # a broken manifest in the new folder: its own runs say so
            logger.warning("findings of the old {} folder kept: {}", session.name, exc)
        try:
            self.plugins.hook.kb_project_changed(project=session.path, reason="replaced",
                                                 settings=self.settings, journal=self.journal)
        except Exception:
            logger.exception("a kb_project_changed hook failed for {}", session.name)

    def _all_sessions(self) -> list[ProjectSession]:
        with self._sessions_lock:
            return list(self._sessions.values())

    # -- a run is handed over ------------------------------------------------
    def park(self, session: ProjectSession, run: FinishedRun) -> None:
        """Hand the finished run to its project; commit when the batch is due."""
        with session.lock:
            session.hold_files()
            if run.folder is not None and session.folder is not None and run.folder != session.folder:
                # its stages wrote into a folder that is gone (hold_files just refused its batch)
                _replaced(run, ProjectReplaced(session.name))
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
            idle = session.leave()
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

    def ended_without_run(self, session: ProjectSession) -> None:
        """A run of ``session`` ended with nothing to commit: commit the batch if the project
        went idle, and let other writers in."""
        with session.lock:
            idle = session.leave()
            if idle and session.pending_runs:
                self.flush(session)
            session.release_files()  # a run that ended without a commit

    # -- when a batch is due ---------------------------------------------------
    def flush_due(self) -> None:
        """Commit batches that waited longer than the commit interval (a timer's job).

        Never waits and never commits in the calling thread (the service's main loop, which
        also beats the heartbeat and takes new files): a due batch is committed by a
        short-lived thread, one per project at a time; a project held by a long stage or
        commit is committed by its holder when it parks or finishes.
        """
        for s in self._all_sessions():
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
        for s in self._all_sessions():
            with s.lock:
                if s.has_pending():
                    self.flush(s)

    def close(self) -> None:
        """Commit what is pending and let every project folder go (the runner stopped)."""
        self.flush_all()
        for s in self._all_sessions():
            with s.lock:
                s.close()

    # -- the commit ----------------------------------------------------------
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
        self._make_durable(session, runs)
        with session.anchored():  # the folder the batch was written to, even if replaced meanwhile
            rows, stage_rows, finding_rows = self._write_records(session, runs)
        self._record_in_journal(session, runs, rows, stage_rows, finding_rows)
        try:
            session.run_after_commit()
        except Exception as exc:
            logger.error("post-commit update of {} failed: {}", session.name, exc)
        self._announce(session, runs, rows)

    def _make_durable(self, session: ProjectSession, runs: list[FinishedRun]) -> None:
        """The project's files (archive, parsed, manifest, project.md...); a failure fails the done runs."""
        checkpoint("commit:before")
        t0 = time.monotonic()
        try:
            retry_transient(lambda: _commit(session), self.settings)
            session.last_commit_seconds = time.monotonic() - t0
            logger.debug("committed {} run(s) of {} in {:.0f} ms", len(runs), session.name,
                         session.last_commit_seconds * 1000)
        except ProjectReplaced as exc:
            logger.warning("{}: {} run(s) dropped, nothing written", exc, len(runs))
            session.discard()
            for run in runs:
                _replaced(run, exc)
        except Exception as exc:
            logger.error("commit of {} failed: {}", session.name, exc)
            session.discard()
            for run in runs:
                if run.outcome in ("done", "duplicate"):
                    run.outcome, run.retryable = "failed", True
                    run.reason = DISK_FULL if is_disk_full(exc) else "commit failed"
                    run.message = run.error = f"could not write the project's files: {exc}"
        checkpoint("commit:after")

    def _write_records(self, session: ProjectSession,
                       runs: list[FinishedRun]) -> tuple[list[dict], list[dict], list[dict]]:
        """Remove the sources of done runs, write every run's ``runs/*.json``; the journal rows."""
        rows, stage_rows, finding_rows = [], [], []
        pending = gone = None
        for run in runs:
            ctx = run.ctx
            if run.outcome in ("done", "duplicate"):
                _remove_source(ctx, run)
                checkpoint("source:removed")
            if pending is None:
                pending = pending_count(self.journal, session.name, runs)
            record = file_record(run, pending)
            rec_rel = f"runs/{run.run_id}.json"
            if gone is None:  # deleted or replaced: the folder there now is not these runs' project
                gone = not os.path.isdir(session.path) or session.replaced()
            if not gone and not _of_old_folder(run):
                try:
                    atomic_write(session.path / rec_rel, json.dumps(record, ensure_ascii=False) + "\n", fsync=False)
                except OSError as exc:
                    if session.replaced():  # deleted under the batch: its records went with it
                        gone = True
                    elif isinstance(exc, FileNotFoundError):  # runs/ deleted meanwhile
                        logger.warning("cannot write {}: {}", rec_rel, exc.strerror)
                    else:
                        logger.error("cannot write {}: {}", rec_rel, exc)
            rows.append(journal_row(run, session.name, record, rec_rel, utc_iso(), self.settings))
            stage_rows.extend(run.stage_rows)
            if run.outcome == "done":
                for f in ctx.findings:
                    finding_rows.append(finding_row(run, session.name, f))
            self.totals[run.outcome] = self.totals.get(run.outcome, 0) + 1
        # run records are history, written after the sources left: the kernel flushes them
        # (DESIGN §2 requires durability of archive, parsed, manifest and project.md only)
        checkpoint("records:written")
        return rows, stage_rows, finding_rows

    def _record_in_journal(self, session: ProjectSession, runs: list[FinishedRun], rows: list[dict],
                           stage_rows: list[dict], finding_rows: list[dict]) -> None:
        try:
            self.journal.supersede_documents(session.name, [run.name for run in runs if run.outcome == "done"])
            self.journal.finish_runs(rows, stage_rows, finding_rows)
        except Exception as exc:  # the runs/ files are the truth; the journal can be rebuilt
            logger.error("journal update failed ({}); run `kbwatch journal rebuild`", exc)

    def _announce(self, session: ProjectSession, runs: list[FinishedRun], rows: list[dict]) -> None:
        """Tell the observers: ``on_finished`` callbacks, ``kb_run_finished``, the log."""
        for run, row in zip(runs, rows):
            for cb in self.on_finished:
                try:
                    cb(run)
                except Exception:
                    logger.exception("on_finished callback failed")
            rec = observed(run, session.name, row)
            try:
                self.plugins.hook.kb_run_finished(run=rec, settings=self.settings)
            except Exception:
                logger.exception("a kb_run_finished hook failed")
            level = "INFO" if run.outcome in ("done", "duplicate") else "WARNING"
            logger.log(level, "{} {}: {} {}{}", run.outcome, session.name, row["source"], run.message,
                       _pending_note(run, session.name))


def _pending_note(run: FinishedRun, project: str) -> str:
    """``; 3 finding(s) wait for review (kbwatch review NAME)`` when the run left findings pending."""
    findings = getattr(run.ctx, "findings", None) or []
    pending = sum(1 for f in findings if getattr(f, "decision", "pending") == "pending")
    if not pending or run.outcome != "done":
        return ""
    return f"; {pending} finding(s) wait for review (kbwatch review {project})"


def _replaced(run: FinishedRun, exc: ProjectReplaced) -> None:
    """A run whose project folder went away before its commit: nothing of it was kept.
    Taken again if its source is still there, the same file (the folder was replaced
    around it); otherwise it left with the old folder."""
    if run.outcome not in ("done", "duplicate"):
        return
    ctx = run.ctx
    try:
        st = os.lstat(ctx.source) if ctx is not None else None
    except OSError:
        st = None
    still = st is not None and confine.same_file(st, run.device, run.inode, run.size, run.mtime_ns)
    run.outcome, run.retryable, run.reason = "failed", still, PROJECT_REPLACED
    run.message = run.error = (f"{exc}; nothing of it was kept"
                               + ("; it is taken again" if still else "; the file left with the old folder"))


def _of_old_folder(run: FinishedRun) -> bool:
    """A run of a project folder that is gone: its record is kept in the journal only
    (the folder now at the project's path is another one)."""
    return run.reason == PROJECT_REPLACED and not run.retryable


def _commit(session: ProjectSession) -> None:
    try:
        session.commit()
    except OSError as exc:
        raise TransientError(f"{exc.strerror or exc}", reason="io") from exc


def _bare_context(run: FinishedRun, session: ProjectSession, settings: dict, plugins=None, journal=None) -> RunContext:
    """A context for a run that never got one (refused before its stages), so ``finish`` sees it."""
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
    except FileNotFoundError:  # gone already (its folder too)
        return
    except OSError as exc:
        logger.warning("could not remove {}: {}", ctx.source_rel, exc)
        ctx.diagnose("warning", f"ingested, but the source could not be removed: {exc.strerror}")
        return
    if removed:
        ctx.output(ctx.source_rel, "deleted")
    elif removed is False:
        logger.info("{} changed while it was ingested; left in sources/ for the next run", ctx.source_rel)
