"""``kbwatch watch``: the long-running service over the whole root.

Events are hints; correctness comes from the stability wait, a scan of every
sources/ at start (after recovering runs a crash left in flight), a full
rescan every ``rescan_seconds``, retries due from the journal, and commits
that remove a source only after its copies are durable. One service per
root (an flock on the root directory and in the state dir: a killed service
leaves no stale lock, a deleted state dir lets no second one start and is
restored at the next heartbeat, see kbwatch.pipeline.state_guard).
SIGTERM/SIGINT: stop taking files, let runs in flight finish or abandon them
cleanly (nothing half-moved), exit 0. With ``[service] http`` (``watch --http``)
the status page (kbwatch.pipeline.web) is served from a thread of its own and
stopped with the service.
"""

from __future__ import annotations

import faulthandler
import fcntl
import json
import os
import signal
import sqlite3
import threading
import time
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent, DirDeletedEvent, DirMovedEvent, FileClosedEvent, FileCreatedEvent, FileDeletedEvent, FileMovedEvent,
)
from watchdog.observers.polling import PollingObserver

from kbwatch.pipeline.config import root_config_exposure
from kbwatch.pipeline.errors import ConfigError
from kbwatch.pipeline.fsutil import display_path, make_state_dir
from kbwatch.pipeline.heap import trim as trim_heap
from kbwatch.pipeline.heap import tune as tune_heap
from kbwatch.pipeline.lazylog import logger
from kbwatch.pipeline.logs import Trouble
from kbwatch.pipeline.kb import KnowledgeBase
from kbwatch.pipeline.project import (discover_projects, folder_identity, is_project, loose_files, no_projects_hint,
                                      noted_refused, refusal_news, refused_projects)
from kbwatch.pipeline.retry_policy import NEVER_GIVEN_UP
from kbwatch.pipeline.runner import Runner
from kbwatch.pipeline.sources import folder_too_deep, project_of
from kbwatch.pipeline.watcher import SourceEvents, StabilityTracker, choose_observer

LOCK_NAME = "watch.lock"


INGEST_BUSY = ("kbwatch ingest is running on this root (pid {pid}); it stops by itself when sources/ "
               "is drained: wait for it, or stop it first")


def _busy(message: str, pid: str) -> str:
    """``message`` for the holder ``pid``; the ingest message when the holder is a ``kbwatch
    ingest`` (the messages name watch, the usual holder)."""
    from kbwatch.pipeline.lock_owner import holder_command

    return (INGEST_BUSY if holder_command(pid) == "ingest" else message).format(pid=pid)


class ServiceLock:
    """The one-service-per-root lock: an exclusive flock on an open descriptor of the
    root directory itself (which users cannot delete from under the service) and on
    ``<state>/watch.lock``, which holds the owner's pid for ``status``.

    The state-dir lock alone used to vanish with ``rm -rf .kbwatch``; the root's
    lock lasts as long as the process. File systems that refuse flock on a
    directory fall back to the state-dir lock alone.
    """

    def __init__(self, state: Path, root: Path | None = None):
        make_state_dir(state)
        self.path = state / LOCK_NAME
        self.root = root
        self.fd: int | None = None
        self.root_fd: int | None = None

    def acquire(self, busy_message: str = "kbwatch watch is already running on this root (pid {pid}); stop it first") -> None:
        if self.root is not None:
            self.root_fd = self._lock_root(busy_message)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                try:
                    pid = os.read(fd, 32).decode().strip() or "unknown"
                finally:
                    os.close(fd)
                raise ConfigError(_busy(busy_message, pid)) from None
        except BaseException:
            self._release_root()
            raise
        self._write_pid(fd)
        self.fd = fd

    def _lock_root(self, busy_message: str) -> int | None:
        from kbwatch.pipeline.lock_owner import flock_holder

        rfd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(rfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(rfd)
            raise ConfigError(_busy(busy_message, self._pid_from_file() or flock_holder(self.root) or "unknown")) from None
        except OSError as exc:  # e.g. a network file system without flock on directories
            os.close(rfd)
            logger.debug("no lock on the root directory ({}); the state-dir lock alone guards it", exc)
            return None
        return rfd

    def _pid_from_file(self) -> str | None:
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return text if text.isdigit() else None

    @staticmethod
    def _write_pid(fd: int) -> None:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        os.fsync(fd)

    def restore_pid_file(self) -> bool:
        """Recreate ``watch.lock`` with our pid if it was deleted or replaced; True if it did."""
        if self.fd is None:
            return False
        held = os.fstat(self.fd)
        try:
            st = os.stat(self.path)
            if (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino):
                return False
        except FileNotFoundError:
            pass
        make_state_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            pass  # the root's lock is what keeps a second service out
        self._write_pid(fd)
        os.close(self.fd)
        self.fd = fd
        return True

    def _release_root(self) -> None:
        if self.root_fd is not None:
            os.close(self.root_fd)  # closing the descriptor releases its flock
            self.root_fd = None

    def release(self) -> None:
        try:
            if self.fd is not None:
                try:
                    os.ftruncate(self.fd, 0)
                    fcntl.flock(self.fd, fcntl.LOCK_UN)
                finally:
                    os.close(self.fd)
                    self.fd = None
        finally:
            self._release_root()


class WatchService:
    def __init__(self, kb: KnowledgeBase):
        self.kb = kb
        self.root = kb.root
        self.settings = kb.settings
        self.stop_event = threading.Event()
        self.stop_signal: int | None = None  # what request_stop (the signal handler) saw; the loop acts on it
        self._journal_trouble = Trouble()  # the journal refusing the service's heartbeat
        self.runner = Runner(kb.root, kb.settings, kb.plugins, kb.journal)
        self.tracker = StabilityTracker(kb.settings["service"]["settle_seconds"], self._submit,
                                        kb.settings["service"]["locked_patience_seconds"])
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
        self._watches: dict[str, tuple[object, tuple[int, int] | None]] = {}  # key -> (watch, its folder)
        # inotify: ask the kernel only for what the tracker needs. A file's writes
        # end with a close (IN_CLOSE_WRITE); growing files are re-checked by the
        # tracker itself, so per-write "modified" events are only cost. The
        # polling observer has no close events and keeps its default set.
        self._event_filter = None if isinstance(self.observer, PollingObserver) else [
            FileCreatedEvent, FileMovedEvent, FileClosedEvent, DirCreatedEvent, DirMovedEvent,
            FileDeletedEvent, DirDeletedEvent,  # a file leaving may end a conflict
        ]
        self._watch_lock = threading.Lock()
        self._refused: dict[str, str] = {}  # project -> reason, logged once each
        self.started_at = time.time()
        self.state_guard = None  # set by run_service (kbwatch.pipeline.state_guard.StateGuard)

    # -- watches ---------------------------------------------------------------
    def _schedule(self, path: Path, recursive: bool) -> bool:
        """Watch ``path``; True when a new watch was made.

        A watch belongs to the folder it was made on, not to its name: a folder
        deleted and made again (``rm -rf p`` then ``mkdir -p p/sources``) has lost
        its kernel watch. Its creation event says so (:meth:`_new_dir`); a missed one
        is caught here when the folder's (device, inode) changed.
        """
        key = f"{path}|{recursive}"
        ident = folder_identity(path)
        with self._watch_lock:
            held = self._watches.get(key)
            if held is not None:
                if held[1] == ident:
                    return False
                self._unwatch(key)
            try:
                self._watches[key] = (self.observer.schedule(
                    self.handler, str(path), recursive=recursive, event_filter=self._event_filter
                ), ident)
            except (OSError, FileNotFoundError) as exc:
                logger.warning("cannot watch {}: {}", path, exc)
                return False
            return True

    def _unwatch(self, key: str) -> None:
        """Stop and forget one watch (call under ``_watch_lock``)."""
        try:
            self.observer.unschedule(self._watches.pop(key)[0])
        except Exception:  # its emitter already stopped with its folder
            pass

    def _drop_watches(self, path: Path) -> None:
        """Forget the watches of ``path`` and of the folders below it."""
        prefix = f"{path}/"
        with self._watch_lock:
            for key in list(self._watches):
                watched = key.rsplit("|", 1)[0]
                if watched == str(path) or watched.startswith(prefix):
                    self._unwatch(key)

    def _unschedule_missing(self) -> None:
        with self._watch_lock:
            for key in list(self._watches):
                if not os.path.isdir(key.rsplit("|", 1)[0]):
                    self._unwatch(key)

    def refresh_projects(self) -> list[Path]:
        """Watch every project (and every new folder at the root, which may become one)."""
        return self._refresh()[0]

    def _refresh(self) -> tuple[list[Path], list[Path]]:
        """(the projects, the sources/ folders watched anew)."""
        self._unschedule_missing()
        self._schedule(self.root, recursive=False)
        for entry in os.scandir(self.root):
            if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                self._schedule(Path(entry.path), recursive=False)
        projects = discover_projects(self.root)
        self._note_refused()
        added = [p / "sources" for p in projects
                 if (p / "sources").is_dir() and self._schedule(p / "sources", recursive=True)]
        return projects, added

    def _note_refused(self) -> None:
        """Log (once per project and reason) and record the projects refused for containment."""
        current = dict(refused_projects(self.root))
        for name, reason in current.items():
            if self._refused.get(name) != reason:
                if refusal_news(self.root / name, reason):  # (the runner may have logged it already)
                    logger.warning("project {} refused: {}", name, reason)
                self.kb.journal.event(name, "", "refused", reason)
        # (a project that turned refused while running was seen by the runner, maybe not by a refresh)
        for name in sorted((set(self._refused) | noted_refused(self.root)) - set(current)):
            if refusal_news(self.root / name, None) and is_project(self.root / name):  # (not deleted)
                logger.info("project {} is no longer refused; its files are taken again", name)
                self.runner.forget_refusal(self.root / name)
                self._read_again(name)  # a journal rebuild meanwhile could not read its runs/
                if (self.root / name / "sources").is_dir():  # what waited in it while it was refused
                    self._scan_tree(self.root / name / "sources")
        self._refused = current

    def _read_again(self, name: str) -> None:
        from kbwatch.pipeline.rebuild_journal import read_again

        with self.runner.session(self.root / name).lock:  # no commit of it in between (its rows are replaced)
            read_again(self.kb, only=name)

    def check_refused(self) -> None:
        """While a project is refused, look again at every heartbeat: being put right (a link
        removed) need not make a folder event."""
        if self._refused or noted_refused(self.root):
            self._note_refused()

    def _new_dir(self, path: Path) -> None:
        """A folder appeared at the root or in a project: watch and scan new sources/.

        It is a new folder even where one of the same name was watched before
        (``rm -rf p; mkdir -p p/sources`` often gets the old inode back): the
        watches held for that path and below belong to the old folder and are
        made anew."""
        self._drop_watches(path)
        for folder in self._refresh()[1]:
            logger.info("watching new folder {}", display_path(folder))
            self._scan_tree(Path(folder))

    def _scan_tree(self, folder: Path) -> None:
        """A folder moved into sources/ raises no events for its files: walk it (not the
        folders nested too deep to enter, kbwatch.pipeline.sources.MAX_FOLDER_BYTES)."""
        try:
            parts = folder.relative_to(self.root).parts
        except ValueError:
            return
        if len(parts) < 2 or parts[1] != "sources":
            return
        sources = self.root / parts[0] / "sources"
        for dirpath, dirs, files in os.walk(folder):
            sub = Path(dirpath).relative_to(sources).as_posix()
            dirs[:] = [d for d in dirs if not folder_too_deep(d if sub == "." else f"{sub}/{d}")]
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
            # its run is under way: an edit saved meanwhile is looked at again once that run ends
            # (the commit leaves a changed file in sources/; it used to wait for the full rescan,
            # never with rescan_seconds = 0). A file the commit removed is forgotten by the tracker.
            self.tracker.touch(path)
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
        for row in self.kb.journal.due_retries(time.time(), self.settings["retry"]["max_attempts"], NEVER_GIVEN_UP):
            path = self.root / row["project"] / row["source"]
            if os.path.lexists(path):
                self.tracker.touch(path)

    def heartbeat(self) -> None:
        self._journal_write(lambda: self.kb.journal.set_service(
            pid=os.getpid(), started_at=self.started_at, heartbeat=time.time(),
            queue=self.runner.queue_length() + len(self.tracker), in_flight=self.runner.in_flight,
            stopped_at=None, executor=json.dumps(self.runner.executor_status()),
        ))

    def _journal_write(self, write) -> None:
        """A write of the service's own row: a journal that refuses it (the state dir's disk full,
        the file locked for long) is warned about, at most once a minute, and the service goes on
        (it died of "database or disk is full"); the runs' own rows are the commit's business."""
        try:
            write()
        except sqlite3.Error as exc:
            if self._journal_trouble.failed():
                logger.warning("the journal refused the service's heartbeat ({}); `kbwatch status` may call the "
                               "service stale until it takes writes again", exc)
        else:
            if self._journal_trouble.ended():
                logger.info("the journal takes the service's heartbeat again")

    # -- main loop -------------------------------------------------------------
    def run(self) -> None:
        svc = self.settings["service"]
        recovered = self.kb.recover()
        if recovered:
            logger.info("recovered {} interrupted run(s)", recovered)
        self.runner.start(svc["workers"] + 1)
        self.load_conflicts()
        projects = self.refresh_projects()
        self.observer.start()
        logger.info("kbwatch watching {} with {}", self.root, self.observer_kind)
        if not projects and not self._refused:
            # it keeps watching (a project made later is taken), but a plain folder of documents is not one
            logger.warning("{}", no_projects_hint(self.root, loose_files(self.root)))
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
                if self.stop_signal is not None:
                    logger.info("received {}, shutting down", signal.Signals(self.stop_signal).name)
                    self.stop_event.set()
                    break
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
                    if self.state_guard is not None:
                        self.state_guard.check_soon()  # the state dir deleted or replaced: put it back
                    self.heartbeat()
                    self.check_refused()
                    trim_heap()  # memory freed after a large document goes back to the OS
                    next_beat = now + svc["heartbeat_seconds"]
                    # parse workers hold ~250 MB each: an idle service gives that back
                    self.runner.reap_idle_workers(svc["worker_idle_seconds"])
                self.stop_event.wait(tick)
        finally:
            self.shutdown()

    def request_stop(self, signum: int, _frame=None) -> None:
        """The SIGTERM/SIGINT handler: remember the signal, nothing more; the loop stops within a tick.

        A handler runs in the main thread between two of its bytecodes, possibly while that thread
        holds ``stop_event``'s lock inside ``Event.wait`` (or a log handler's lock): setting the event
        or logging from here would wait, forever, for the very thread it interrupted. Seen in CI: a
        SIGTERM left unanswered for 30 s, the main thread in ``Event.set`` under ``Event.wait``."""
        self.stop_signal = signum

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
        self._journal_write(lambda: self.kb.journal.set_service(pid=os.getpid(), heartbeat=time.time(), queue=0,
                                                                in_flight=0, stopped_at=time.time()))
        logger.info("kbwatch stopped")


def run_service(kb: KnowledgeBase) -> int:
    from kbwatch.pipeline.state_guard import StateGuard

    # glibc: large buffers mmapped and returned on free, two heap arenas for all
    # threads: less of the heap is kept fragmented in a service that runs for weeks
    tune_heap(arena_max=2)
    lock = ServiceLock(kb.state, kb.root)
    lock.acquire()
    exposure = root_config_exposure(kb.root)
    if exposure:  # not refused (teams may manage it together), but said once (kbwatch doctor says how to fix it)
        logger.warning("configuration: {} (see kbwatch doctor)", exposure)
    page = None
    try:
        if kb.settings["service"]["http"]:
            from kbwatch.pipeline.web import start_page

            page = start_page(kb, kb.settings["service"]["http"])  # a bad address or no token: exit 2 now
        service = WatchService(kb)
    except BaseException:
        if page is not None:
            page.stop()
        lock.release()
        raise
    service.state_guard = StateGuard(kb, lock)

    signal.signal(signal.SIGTERM, service.request_stop)
    signal.signal(signal.SIGINT, service.request_stop)
    # `kill -USR1 <pid>` prints every thread's stack to stderr: what a service that seems stuck is doing
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    from kbwatch.pipeline.memdebug import start_from_env

    start_from_env()  # KBWATCH_DEBUG_MEMORY=<seconds>: periodic memory lines in the log (off by default)
    try:
        service.run()
        kb.end_work()
    finally:
        try:
            if page is not None:
                page.stop()
        finally:
            lock.release()
    return 0
