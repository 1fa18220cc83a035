"""Running one run: take the source, run the stages, clean up, say how it ended.

Owns everything between a runner thread taking a :class:`~kbwatch.pipeline.run_queue.Job`
and handing its :class:`FinishedRun` to the commit (:mod:`kbwatch.pipeline.commit`):

1. checks that may end the job with no run at all (a refused project, a file
   that vanished or was swapped for a link on the way): a journal event, and
   :meth:`RunExecutor.run` returns None;
2. refusals of the file itself (a link, a special file, a bad name): a failed
   run with no stages;
3. taking the source once into a private snapshot (:mod:`kbwatch.pipeline.intake`),
   transient errors retried (:mod:`kbwatch.pipeline.retry_policy`);
4. the stage loop: ``concurrent`` stages run outside the project's lock, the
   others serially per project under it (the project's file lock is then
   held until the commit); each stage's status and duration becomes a stage
   row; ``cleanup`` of every stage that ran, the lock released and the
   snapshot discarded, whatever happened;
5. the run's ending (done, duplicate, conflict, failed, with the give-up
   message after the last attempt), built into ONE :class:`FinishedRun` by
   :func:`finished_run`. A run abandoned at shutdown is deleted from the
   journal and returns None: its file stays for the next start.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from kbwatch.pipeline import confine, intake
from kbwatch.pipeline.checkpoints import checkpoint
from kbwatch.pipeline.errors import CANNOT_OPEN, DISK_FULL, PROJECT_REPLACED, StageError, StopRun, TransientError, is_disk_full
from kbwatch.pipeline.fsutil import display_path, new_run_id, utc_iso
from kbwatch.pipeline.journal import Journal
from kbwatch.pipeline.lazylog import logger
from kbwatch.pipeline.parsing import check_size
from kbwatch.pipeline.project import ProjectReplaced, ProjectSession, project_refusal, refusal_news
from kbwatch.pipeline.retry_policy import gave_up, give_up_message, retry_transient
from kbwatch.pipeline.run_queue import Job
from kbwatch.pipeline.sources import LINK_REFUSAL, TOO_DEEP, classify, folder_too_deep, name_problem, split_name
from kbwatch.pipeline.stage import RunContext

REFUSAL_RECHECK_SECONDS = 1.0


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
    folder: tuple[int, int] | None = None  # the project folder it was taken from (ProjectSession.pin_folder)


@dataclass
class _Start:
    """What a run knows before it opens the source."""

    job: Job
    run_id: str
    started_at: str
    name: str
    size: int  # from the listing; replaced by the taken file's
    mtime_ns: int


@dataclass
class _Ending:
    """How the stage loop ended."""

    outcome: str = "done"
    message: str = ""
    error: str | None = None
    reason: str | None = None
    retryable: bool = False
    blocked_by: list[str] | None = None


def finished_run(start: _Start, ending: _Ending, *, ctx: RunContext | None = None,
                 taken: intake.Taken | None = None, stage_rows: list[dict] | None = None) -> FinishedRun:
    """The one place a :class:`FinishedRun` is built (``taken`` None: the file was never opened)."""
    return FinishedRun(
        ctx=ctx, job=start.job, run_id=start.run_id, outcome=ending.outcome, message=ending.message,
        error=ending.error, reason=ending.reason, retryable=ending.retryable,
        blocked_by=ending.blocked_by if ending.blocked_by is not None else [],
        stage_rows=stage_rows if stage_rows is not None else [], started_at=start.started_at,
        sha256=taken.sha256 if taken else None, size=taken.size if taken else start.size,
        mtime_ns=taken.mtime_ns if taken else start.mtime_ns, name=start.name,
        device=taken.device if taken else None, inode=taken.inode if taken else None,
    )


def _replaced_ending(session: ProjectSession) -> _Ending:
    message = f"{ProjectReplaced(session.name)}; nothing of it was kept"
    return _Ending(outcome="failed", message=message, error=message, reason=PROJECT_REPLACED)


def _refused(message: str, reason: str = "refused", retryable: bool = False) -> _Ending:
    return _Ending(outcome="failed", message=message, error=message, reason=reason, retryable=retryable)


class RunExecutor:
    """Runs the configured stages for one job at a time (one per runner thread)."""

    def __init__(self, settings: dict, plugins: Any, journal: Journal, stages: list[Any],
                 intake_dir: Path, offload: Callable[..., Any], compute: Any = None):
        self.settings = settings
        self.plugins = plugins
        self.journal = journal
        self.stages = stages
        self.intake = intake_dir  # private snapshots of the files being run
        self.offload = offload
        self.compute = compute  # plain worker processes (WorkerPool) for CPU-bound work on large texts
        self._refusals: dict[str, tuple[float, str | None]] = {}

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
            # turned refused while running: said once (being put right is the service's to say: it
            # then takes the files that waited); a deleted project is no refusal to report
            if hit[1] is not None and os.path.lexists(project) and refusal_news(project, hit[1]):
                logger.warning("project {} refused: {}; its files wait until it is put right", project.name, hit[1])
        return hit[1]

    def forget_refusal(self, project: Path) -> None:
        """The project was put right: look again at its next file (not up to a second later)."""
        self._refusals.pop(str(project), None)

    def run(self, job: Job, session: ProjectSession) -> FinishedRun | None:
        """Run the stages for one file; the finished run to commit, or None (nothing to commit)."""
        project = job.project
        source = project / "sources" / job.rel
        source_rel = f"sources/{display_path(job.rel)}"
        name, ext = split_name(display_path(job.rel))
        run_id = new_run_id("ingest")
        started = utc_iso()
        refused_project = self._project_refusal(project)
        if refused_project:  # containment: nothing is read or written in a refused project
            self.journal.event(project.name, source_rel, "refused", f"project refused: {refused_project}")
            return None
        if folder_too_deep(job.rel.rpartition("/")[0]):  # its path may be too long to even look at
            return finished_run(_Start(job, run_id, started, name, 0, 0), _refused(TOO_DEEP))
        folder = session.pin_folder()  # the folder the file is taken from (see _run_stages)
        reason, st = classify(source)
        if reason == "vanished":
            self.journal.event(project.name, source_rel, "vanished", "the file disappeared before it was taken")
            return None
        refusal = reason or name_problem(job.rel)
        start = _Start(job, run_id, started, name, st.st_size if st else 0, st.st_mtime_ns if st else 0)
        if refusal:
            return finished_run(start, _refused(refusal))
        try:  # [stages.parse] max_file_mb before the file is copied: a sparse 1 TB file costs no disk
            check_size(st.st_size if st else 0, self.settings)  # in sources/, but would be copied whole
        except StageError as exc:
            return finished_run(start, _refused(exc.message, exc.reason))
        checkpoint("run:listed", source_rel)
        # one snapshot folder per runner thread (a thread runs one file at a time): no folder
        # is made and removed per file, which costs more than the copy on a busy disk
        snapshot_dir = self.intake / f"thread-{threading.get_ident()}"
        try:
            taken = retry_transient(lambda: _take(source, snapshot_dir, self.settings), self.settings)
        except FileNotFoundError:
            self.journal.event(project.name, source_rel, "vanished", "the file disappeared while it was read")
            return None
        except confine.LinkedFile:
            refusal = LINK_REFUSAL
        except confine.Escape as exc:  # a folder on the way became a link: do nothing through it
            logger.warning("{}/{} not taken: {}", project.name, source_rel, exc.strerror)
            self.journal.event(project.name, source_rel, "refused", f"not taken: {exc.strerror}")
            return None
        except intake.NotRegular as exc:
            refusal = str(exc)
        except StageError as exc:  # a file that will not open waits for it to open (KnowledgeBase.decide)
            return finished_run(start, _refused(exc.message, exc.reason, exc.transient and exc.reason != CANNOT_OPEN))
        if refusal:  # swapped for a link or a special file after it was listed
            return finished_run(start, _refused(refusal))
        checkpoint("run:opened", source_rel)
        self.journal.start_run({
            "run_id": run_id, "project": project.name, "source": source_rel, "name": name,
            "sha256": taken.sha256, "size": taken.size, "mtime_ns": taken.mtime_ns, "status": "running",
            "attempts": job.attempt, "started_at": started, "retryable": 0,
            "device": taken.device, "inode": taken.inode,
        })
        ctx = RunContext(
            run_id=run_id, project=session, source=source, source_rel=source_rel, name=name, ext=ext,
            sha256=taken.sha256, size=taken.size, mtime_ns=taken.mtime_ns, settings=self.settings,
            started_at=started, offload=self.offload, compute=self.compute, plugins=self.plugins, journal=self.journal,
            content=taken.snapshot,
        )
        stage_rows: list[dict] = []
        try:
            ending = self._run_stages(ctx, session, stage_rows, folder)
        finally:
            intake.discard(snapshot_dir, keep_folder=True, only=taken.snapshot)
        if ending.reason == "shutdown":  # abandoned cleanly: nothing was written, the file stays
            self.journal.delete_run(run_id)
            return None
        if ending.outcome == "failed" and ending.retryable and gave_up(job.attempt, self.settings, ending.reason):
            ending.message = ending.error = give_up_message(ending.message, job.attempt)
        run = finished_run(start, ending, ctx=ctx, taken=taken, stage_rows=stage_rows)
        run.folder = folder
        return run

    def _run_stages(self, ctx: RunContext, session: ProjectSession, stage_rows: list[dict],
                    folder: tuple[int, int] | None = None) -> _Ending:
        """The stage loop; appends one row per stage to ``stage_rows``; always cleans up.

        ``folder`` is the project folder's identity when the file was taken: a run whose
        project folder was deleted or replaced since then writes nothing (the folder now
        at that path is another project)."""
        run_id = ctx.run_id
        held = False
        anchor = None  # while held: the project folder is reached through the session's descriptor
        ran: list[Any] = []
        try:
            for stage in self.stages:
                concurrent = bool(getattr(stage, "concurrent", False))
                if not concurrent and not held:
                    session.lock.acquire()
                    held = True
                    session.hold_files()  # held until the commit: no one writes the project meanwhile
                    if folder is not None and session.folder is not None and folder != session.folder:
                        return _replaced_ending(session)
                    anchor = session.anchored()
                    anchor.__enter__()
                elif concurrent and held:
                    anchor.__exit__(None, None, None)
                    anchor = None
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
                    note = retry_transient(lambda: stage.run(ctx), self.settings)
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
            return _Ending(message=_done_message(ctx))
        except StopRun as stop:
            # a conflict keeps the file refused: say why (a duplicate is no error)
            return _Ending(outcome=stop.outcome.value, message=stop.message, blocked_by=stop.blocked_by,
                           error=stop.message if stop.outcome.value == "conflict" else None)
        except StageError as exc:
            if exc.reason != PROJECT_REPLACED and session.replaced():
                return _replaced_ending(session)
            return _Ending(outcome="failed", message=exc.message, error=exc.message, reason=exc.reason,
                           retryable=exc.transient)
        except Exception as exc:
            if session.replaced():  # its folder went away under a write: no crash of ours
                return _replaced_ending(session)
            if is_disk_full(exc):
                message = f"the disk is full ({getattr(exc, 'strerror', None) or exc}); it is taken again once there is room"
                logger.warning("{}: {}", ctx.source_rel, message)
                return _Ending(outcome="failed", message=message, error=message, reason=DISK_FULL, retryable=True)
            if isinstance(exc, OSError) and exc.errno is not None:
                # the file system refused (a folder deleted under the write): no fault of the
                # file's; taken again later
                where = f" {display_path(exc.filename)}" if exc.filename else ""
                message = f"file system error on{where or ' a file'}: {exc.strerror}; it is taken again later"
                logger.warning("{}: {}", ctx.source_rel, message)
                return _Ending(outcome="failed", message=message, error=message, reason="io", retryable=True)
            logger.opt(exception=True).error("stage crashed on {}: {}", ctx.source_rel, exc)
            message = f"internal error: {type(exc).__name__}: {exc} (see the service log)"
            return _Ending(outcome="failed", message=message, error=message, reason="internal error")
        finally:
            for stage in ran:
                cleanup = getattr(stage, "cleanup", None)
                if cleanup is not None:
                    try:
                        cleanup(ctx)
                    except Exception:
                        logger.exception("cleanup of stage {} failed", stage.name)
            if anchor is not None:
                anchor.__exit__(None, None, None)
            if held:
                session.lock.release()


def _take(path: Path, snapshot_dir: Path, settings: dict) -> intake.Taken:
    """Open the source once and snapshot it (kbwatch.pipeline.intake); transient errors retried.
    The size bound is checked again on what was opened (it may have grown since it was listed)."""
    try:
        return intake.take(path, snapshot_dir, check=lambda size: check_size(size, settings))
    except (FileNotFoundError, confine.Escape, intake.NotRegular):
        raise
    except intake.Changed as exc:
        raise TransientError(str(exc), reason="changed") from exc
    except PermissionError as exc:
        raise TransientError(f"cannot open the file: {exc.strerror} (a writer's lock or no read permission); "
                             "it is taken again when it opens, or with `kbwatch retry`", reason=CANNOT_OPEN) from exc
    except OSError as exc:
        if is_disk_full(exc):  # the service's private copy (state dir) found no room: not the file's fault
            raise TransientError(f"the disk is full: no room for the service's private copy of the file "
                                 f"({exc.strerror}); it is taken again once there is room", reason=DISK_FULL) from exc
        raise TransientError(f"cannot read the file: {exc.strerror}", reason="io") from exc


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def _stage_row(run_id: str, stage: str, status: str, ms: float, error: str | None) -> dict:
    return {"run_id": run_id, "stage": stage, "status": status, "duration_ms": ms, "error": error}


def _done_message(ctx: RunContext) -> str:
    what = "new version" if ctx.event == "version" else "ingested"
    where = f" as {ctx.archived}" if ctx.archived else ""
    return f"{what}{where}"
