"""``kbwatch watch``: the long-running service over the whole root.

Events are hints; correctness comes from the stability wait, a scan of every
sources/ at start (after recovering runs a crash left in flight), a full
rescan every ``rescan_seconds``, retries due from the journal, and commits
that remove a source only after its copies are durable. One service per
root (an flock in the state dir: a killed service leaves no stale lock).
SIGTERM/SIGINT: stop taking files, let runs in flight finish or abandon them
cleanly (nothing half-moved), exit 0.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import threading
import time
from pathlib import Path

from loguru import logger
from watchdog.events import (
    DirCreatedEvent, DirDeletedEvent, DirMovedEvent, FileClosedEvent, FileCreatedEvent, FileDeletedEvent, FileMovedEvent,
)
from watchdog.observers.polling import PollingObserver

from pipeline.errors import ConfigError
from pipeline.fsutil import display_path
from pipeline.kb import KnowledgeBase
from pipeline.project import discover_projects
from pipeline.runner import Runner
from pipeline.sources import project_of
from pipeline.watcher import SourceEvents, StabilityTracker, choose_observer

LOCK_NAME = "watch.lock"


class ServiceLock:
    """An exclusive flock on ``<state>/watch.lock`` holding the owner's pid."""

    def __init__(self, state: Path):
        state.mkdir(parents=True, exist_ok=True)
        self.path = state / LOCK_NAME
        self.fd: int | None = None

    def acquire(self, busy_message: str = "kbwatch watch is already running on this root (pid {pid}); stop it first") -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                pid = os.read(fd, 32).decode().strip() or "unknown"
            finally:
                os.close(fd)
            raise ConfigError(busy_message.format(pid=pid)) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            try:
                os.ftruncate(self.fd, 0)
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            finally:
                os.close(self.fd)
                self.fd = None


class WatchService:
    def __init__(self, kb: KnowledgeBase):
        self.kb = kb
        self.root = kb.root
        self.settings = kb.settings
        self.stop_event = threading.Event()
        self.runner = Runner(kb.root, kb.settings, kb.plugins, kb.journal)
        self.tracker = StabilityTracker(kb.settings["service"]["settle_seconds"], self._submit)
        self.observer, self.observer_kind = choose_observer(kb.root, kb.settings)
        self.handler = SourceEvents(
            kb.root, kb.settings["ignore"]["patterns"], self.tracker.touch, self._scan_tree, self._new_dir,
            on_gone=self._gone,
        )
        # a file refused as a conflict -> the files it blocks: when it leaves sources/
        # (deleted, renamed away, committed), they are looked at again at once
        self._blocking: dict[Path, set[Path]] = {}
        self._blocking_lock = threading.Lock()
        self.runner.on_finished.append(self._note_conflict)
        self._watches: dict[str, object] = {}
        # inotify: ask the kernel only for what the tracker needs. A file's writes
        # end with a close (IN_CLOSE_WRITE); growing files are re-checked by the
        # tracker itself, so per-write "modified" events are only cost. The
        # polling observer has no close events and keeps its default set.
        self._event_filter = None if isinstance(self.observer, PollingObserver) else [
            FileCreatedEvent, FileMovedEvent, FileClosedEvent, DirCreatedEvent, DirMovedEvent,
            FileDeletedEvent, DirDeletedEvent,  # a file leaving may end a conflict
        ]
        self._watch_lock = threading.Lock()
        self.started_at = time.time()

    # -- watches ---------------------------------------------------------------
    def _schedule(self, path: Path, recursive: bool) -> None:
        key = f"{path}|{recursive}"
        with self._watch_lock:
            if key in self._watches:
                return
            try:
                self._watches[key] = self.observer.schedule(
                    self.handler, str(path), recursive=recursive, event_filter=self._event_filter
                )
            except (OSError, FileNotFoundError) as exc:
                logger.warning("cannot watch {}: {}", path, exc)

    def _unschedule_missing(self) -> None:
        with self._watch_lock:
            for key, watch in list(self._watches.items()):
                path = key.rsplit("|", 1)[0]
                if not os.path.isdir(path):
                    try:
                        self.observer.unschedule(watch)
                    except Exception:
                        pass
                    del self._watches[key]

    def refresh_projects(self) -> list[Path]:
        """Watch every project (and every new folder at the root, which may become one)."""
        self._unschedule_missing()
        self._schedule(self.root, recursive=False)
        for entry in os.scandir(self.root):
            if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                self._schedule(Path(entry.path), recursive=False)
        projects = discover_projects(self.root)
        for p in projects:
            if (p / "sources").is_dir():
                self._schedule(p / "sources", recursive=True)
        return projects

    def _new_dir(self, path: Path) -> None:
        """A folder appeared at the root or in a project: watch and scan new sources/."""
        with self._watch_lock:
            before = set(self._watches)
        self.refresh_projects()
        with self._watch_lock:
            added = [k.rsplit("|", 1)[0] for k in set(self._watches) - before if k.endswith("|True")]
        for folder in added:
            logger.info("watching new folder {}", display_path(folder))
            self._scan_tree(Path(folder))

    def _scan_tree(self, folder: Path) -> None:
        """A folder moved into sources/ raises no events for its files: walk it."""
        for dirpath, _dirs, files in os.walk(folder):
            for name in files:
                self.tracker.touch(Path(dirpath) / name)

    # -- conflicts ---------------------------------------------------------------
    def _block(self, source: Path, blockers: list[Path]) -> None:
        """Remember that ``source`` waits for ``blockers``; look again now if one already left."""
        with self._blocking_lock:
            for b in blockers:
                self._blocking.setdefault(b, set()).add(source)
        gone = [b for b in blockers if not os.path.lexists(b)]
        for b in gone:
            self._gone(b, False)

    def _note_conflict(self, run) -> None:
        if run.outcome == "conflict" and run.blocked_by:
            project = run.job.project
            self._block(project / "sources" / run.job.rel, [project / b for b in run.blocked_by])

    def load_conflicts(self) -> None:
        """The conflicts the journal holds (a restart must not forget who waits for whom)."""
        for project in discover_projects(self.root):
            for row in self.kb.journal.latest_for_sources(project.name).values():
                if row["outcome"] == "conflict" and row.get("blocked_by"):
                    self._block(project / row["source"], [project / b for b in json.loads(row["blocked_by"])])

    def _gone(self, path: Path, is_dir: bool) -> None:
        """A file (or folder) left sources/: the files in conflict with it are looked at again."""
        with self._blocking_lock:
            if is_dir:
                keys = [k for k in self._blocking if path in k.parents]
            else:
                keys = [path] if path in self._blocking else []
            waiting = set().union(*(self._blocking.pop(k) for k in keys)) if keys else set()
        for source in waiting:
            if os.path.lexists(source):
                self.tracker.touch(source)

    # -- queueing --------------------------------------------------------------
    def _submit(self, path: Path) -> bool:
        found = project_of(self.root, path)
        if found is None:
            return False
        project, rel = found
        if self.runner.is_queued(project, rel):
            return False
        attempt = self.kb.attempt_for(project, rel)
        if attempt is None:
            return False
        return self.runner.submit(project, rel, attempt=attempt)

    def full_scan(self) -> int:
        n = 0
        for project in self.refresh_projects():
            todo, _ = self.kb.pending(project, in_flight=self.runner.is_queued)
            for item in todo:
                self.tracker.touch(item.entry.path)
                n += 1
        return n

    def due_retries(self) -> None:
        for row in self.kb.journal.due_retries(time.time(), self.settings["retry"]["max_attempts"]):
            path = self.root / row["project"] / row["source"]
            if os.path.lexists(path):
                self.tracker.touch(path)

    def heartbeat(self) -> None:
        self.kb.journal.set_service(
            pid=os.getpid(), started_at=self.started_at, heartbeat=time.time(),
            queue=self.runner.queue_length() + len(self.tracker), in_flight=self.runner.in_flight,
            stopped_at=None,
        )

    # -- main loop -------------------------------------------------------------
    def run(self) -> None:
        svc = self.settings["service"]
        recovered = self.kb.recover()
        if recovered:
            logger.info("recovered {} interrupted run(s)", recovered)
        self.runner.start(svc["workers"] + 1)
        self.load_conflicts()
        self.refresh_projects()
        self.observer.start()
        logger.info("kbwatch watching {} with {}", self.root, self.observer_kind)
        found = self.full_scan()
        if found:
            logger.info("startup scan: {} file(s) waiting in sources/", found)
        self.heartbeat()
        now = time.monotonic()
        next_rescan = now + svc["rescan_seconds"] if svc["rescan_seconds"] else float("inf")
        next_retry = now + 2.0
        next_beat = now + svc["heartbeat_seconds"]
        next_flush = now + svc["commit_interval_seconds"]
        tick = max(0.05, min(0.25, svc["settle_seconds"] / 8 or 0.05))
        try:
            while not self.stop_event.is_set():
                self.tracker.check()
                now = time.monotonic()
                if now >= next_rescan:
                    self.full_scan()
                    next_rescan = now + svc["rescan_seconds"]
                if now >= next_retry:
                    self.due_retries()
                    next_retry = now + 2.0
                if now >= next_flush:
                    # runs commit when their batch is due as they park; this timer commits a batch
                    # that became due by time alone while no other run parked
                    self.runner.flush_due()
                    next_flush = now + svc["commit_interval_seconds"]
                if now >= next_beat:
                    self.heartbeat()
                    next_beat = now + svc["heartbeat_seconds"]
                    # parse workers hold ~250 MB each: an idle service gives that back
                    self.runner.reap_idle_workers(svc["worker_idle_seconds"])
                self.stop_event.wait(tick)
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        logger.info("kbwatch stopping")
        try:
            self.observer.stop()
        except Exception:
            pass
        self.runner.stop(wait=7.0)
        try:
            self.observer.join(timeout=1.0)
        except Exception:
            pass
        self.kb.journal.set_service(pid=os.getpid(), heartbeat=time.time(), queue=0, in_flight=0, stopped_at=time.time())
        logger.info("kbwatch stopped")


def run_service(kb: KnowledgeBase) -> int:
    lock = ServiceLock(kb.state)
    lock.acquire()
    service = WatchService(kb)

    def on_signal(signum, _frame):
        logger.info("received {}, shutting down", signal.Signals(signum).name)
        service.stop_event.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        service.run()
        kb.end_work()
    finally:
        lock.release()
    return 0
