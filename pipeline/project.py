"""Projects: discovery under the root, and the per-project commit session.

A :class:`ProjectSession` holds a project's in-memory state between commits
(the manifest, project.md, anything a stage caches) and the writes stages
deferred. ``commit()`` makes them durable (temp + fsync + rename), in
registration order, after fsync'ing the new archive and parsed files. Only
then does the runner remove sources. Many runs can share one commit, so a
project with 10,000 documents does not rewrite manifest.json per file.

The session holds the project's file lock (:mod:`kbwatch.pipeline.project_lock`)
from ``hold_files()`` (the runner calls it when a run enters its serial
stages, or parks) until ``release_files()`` after the commit. Whenever it
re-takes the lock after someone else held it, what it cached from the
project's files is dropped and read again (``cached_work`` state, the
session's own pending work, is kept).

The session also keeps the project folder itself open (``pin_folder``): runs
note the folder they took their file from, the serial stages and the commit
reach the folder through that descriptor (``anchored``), and a folder deleted
and made again at the same path (``rm -rf p; mkdir -p p/sources``), or moved
away, is seen as another project: the old folder's pending work is refused
(:class:`ProjectReplaced`, reason ``project replaced``), nothing of it is
written into the new folder, and the plugins are told (``on_replaced``).
"""

from __future__ import annotations

import os
import re
import stat
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from kbwatch.pipeline import confine
from kbwatch.pipeline.fsutil import atomic_write_many, display_path
from kbwatch.pipeline.project_lock import ProjectFileLock, project_file_lock  # noqa: F401  (project_file_lock: re-exported)
from kbwatch.pipeline.sources import CONTROL_CHARS, text_fault

SOURCES = "sources"
PROJECT_DIRS = ("sources", "parsed", "archive", "runs")


PROJECT_FILES = ("manifest.json", "project.md", "KNOWLEDGE.md")


def _looks_like_project(path: Path) -> bool:
    return os.path.lexists(path / SOURCES) or os.path.lexists(path / "manifest.json")


def project_refusal(path: Path) -> str | None:
    """Why the project at ``path`` is refused, or None (DESIGN §2, containment).

    The project folder and its sources/, parsed/, archive/ and runs/ must be
    real folders on the root's side (missing ones are created when needed);
    its manifest.json, project.md and KNOWLEDGE.md must be regular files (no links, FIFOs, folders).
    Nothing is read, written or deleted in a refused project.
    A name with a line break or another control character, or that is not UTF-8, is refused
    too: the name is printed in project.md, KNOWLEDGE.md and the answers agents read, where a
    line break would start a line of the name's author's choosing.
    """
    problem = project_name_problem(path.name)
    if problem:
        return problem
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "the project folder does not exist"
    if stat.S_ISLNK(st.st_mode):
        return f"the project folder is a symbolic link (to {os.readlink(path)}); use a real folder inside the root"
    if not stat.S_ISDIR(st.st_mode):
        return "the project is not a folder"
    for d in PROJECT_DIRS:
        try:
            st = os.lstat(path / d)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            return (f"{d}/ is a symbolic link (to {os.readlink(path / d)}); kbwatch reads and writes only "
                    f"real folders inside the root: make {d}/ a real folder")
        if not stat.S_ISDIR(st.st_mode):
            return f"{d} is not a folder; make it a real folder"
    for f in PROJECT_FILES:
        try:
            st = os.lstat(path / f)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            return f"{f} is a symbolic link; replace it with the real file"
        if not stat.S_ISREG(st.st_mode):  # a FIFO would hang every reader; a folder is no file
            return f"{f} is not a regular file (a FIFO, a device, a socket or a folder); replace it with the real file"
    return None


# a source's name's control characters, and C1 controls and the Unicode line and paragraph separators
# (a project's name is printed on lines of their own in what agents read)
_CONTROL = re.compile(f"[{CONTROL_CHARS}\x80-\x9f\u2028\u2029]")


def project_name_problem(name: str) -> str | None:
    """Why a project folder's name cannot be used, or None (as a source file's name: UTF-8, no control
    characters, no C1 controls or Unicode line and paragraph separators either)."""
    fault = text_fault(name, _CONTROL)
    if fault == "utf-8":
        return "the project folder's name is not valid UTF-8; rename the folder"
    if fault == "control":
        return "the project folder's name contains a line break or control character; rename the folder"
    return None


def is_project(path: Path) -> bool:
    """A folder at the root holding sources/ or manifest.json that is not refused."""
    return not path.name.startswith(".") and _looks_like_project(path) and project_refusal(path) is None


def _candidates(root: Path) -> list[Path]:
    """Direct sub-folders of the root (or links to folders) that look like projects."""
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except FileNotFoundError:
        return []
    return [Path(e.path) for e in entries
            if not e.name.startswith(".") and e.is_dir() and _looks_like_project(Path(e.path))]


def discover_projects(root: Path) -> list[Path]:
    """Every direct sub-directory holding sources/ or manifest.json (DESIGN §1),
    without the refused ones (:func:`refused_projects`); links are not followed."""
    return [p for p in _candidates(root) if project_refusal(p) is None]


_noted: dict[str, str | None] = {}  # project path -> the refusal last logged (None: none, or accepted again)
_noted_lock = threading.Lock()


def refusal_news(project: Path, reason: str | None) -> bool:
    """Whether ``reason`` (None: not refused) differs from what was last noted for ``project`` in
    this process, noting it: the service's folder refresh and its runner both see refusals, and each
    change is logged once, by whichever sees it first."""
    key = str(project)
    with _noted_lock:
        if _noted.get(key) == reason:
            return False
        _noted[key] = reason
        return True


def noted_refused(root: Path) -> set[str]:
    """Names of the projects at ``root`` whose last noted state (:func:`refusal_news`) is refused."""
    with _noted_lock:
        return {Path(k).name for k, v in _noted.items() if v is not None and Path(k).parent == root}


def refused_projects(root: Path) -> list[tuple[str, str]]:
    """(name, reason) of every folder at the root that looks like a project but is refused."""
    out = []
    for p in _candidates(root):
        reason = project_refusal(p)
        if reason is not None:
            out.append((p.name, reason))
    return out


def loose_files(root: Path) -> int:
    """How many files lie directly in the root, outside any project (never taken: a project's
    documents are in its sources/); hidden files and kbwatch.toml are not counted."""
    n = 0
    try:
        with os.scandir(root) as it:
            for e in it:
                if not e.name.startswith(".") and e.name != "kbwatch.toml" and e.is_file(follow_symlinks=False):
                    n += 1
    except OSError:
        pass
    return n


def no_projects_hint(root: Path, loose: int) -> str:
    """What to say of a root without projects (``ingest --root`` or ``watch --root`` on a plain
    folder of documents): where documents go, and how to make a project."""
    where = display_path(root)
    files = ""
    if loose:
        files = f"; the {loose} file{'s' if loose != 1 else ''} directly in it {'were' if loose != 1 else 'was'} not taken"
    return (f"no projects under {where}{files}: documents go in {where}/NAME/sources/, "
            f"and `kbwatch init NAME --root {where}` makes project NAME")


class ProjectReplaced(Exception):
    """The project folder was deleted or replaced by another folder since the session read it."""

    def __init__(self, project: str):
        super().__init__(f"the project folder {project} was deleted or replaced while the file was processed")


def folder_identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What tells a changed file: an atomic rename by another process always changes the inode."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


class ProjectSession:
    """One project's state between commits. Use under ``self.lock``."""

    def __init__(self, path: Path, settings: dict, state: Path | None = None):
        self.path = path
        self.state = state
        self.name = path.name
        self.settings = settings
        self.lock = threading.RLock()
        self._cache: dict[str, Any] = {}
        self._kept: set[str] = set()  # cache keys that are this session's own pending work
        self._file_lock = ProjectFileLock(path, state) if state is not None else None
        self._writes: dict[str, Callable[[], str | bytes]] = {}
        self._callbacks: dict[str, Callable[[], None]] = {}
        self._durable: set[Path] = set()
        self._after: dict[str, Callable[[], None]] = {}
        self._undo: dict[str, Callable[[], None]] = {}
        self.pending_runs: list[Any] = []  # runs whose stages finished, awaiting commit
        self.active = 0  # runs queued or in flight for this project (guarded by count_lock)
        self.count_lock = threading.Lock()  # never held long: submit must not wait for a commit
        self.first_pending_at: float | None = None
        self.last_commit_seconds = 0.0
        # the folder (device, inode) the cached state and the pending work belong to
        self._folder: tuple[int, int] | None = None
        self._folder_fd: int | None = None  # that folder, kept open (see pin_folder)
        self._pin_lock = threading.Lock()
        # commits the pending work of a folder that was replaced (set by the committer)
        self.on_replaced: Callable[[], None] | None = None
        self._replacing = False

    # -- runs in flight (the runner's bookkeeping) -----------------------------
    def enter(self) -> None:
        """A run of this project was queued (never waits for a commit: ``count_lock`` only)."""
        with self.count_lock:
            self.active += 1

    def leave(self) -> bool:
        """A run of this project ended or was parked; True when none is left (the project is idle)."""
        with self.count_lock:
            self.active -= 1
            return self.active == 0

    # -- cached state --------------------------------------------------------
    def cached(self, key: str, loader: Callable[[], Any]) -> Any:
        """Per-project state a stage keeps in memory until the next commit and beyond."""
        if key not in self._cache:
            self._cache[key] = loader()
        return self._cache[key]

    def cached_work(self, key: str, loader: Callable[[], Any]) -> Any:
        """Like :meth:`cached` for the session's own pending work (not read from
        the project's files): kept when another process wrote the project."""
        self._kept.add(key)
        return self.cached(key, loader)

    def cached_file(self, relpath: str, loader: Callable[[], Any]) -> Any:
        """Like :meth:`cached` for the in-memory form of a project file.

        Reloaded when another process changed the file on disk since this
        session last read or wrote it (and nothing is waiting to be written).
        """
        key = f"file:{relpath}"
        hit = self._cache.get(key)
        if hit is not None and relpath not in self._writes:
            if _stamp(self.path / relpath) != hit[0]:
                hit = None
        if hit is None:
            stamp = _stamp(self.path / relpath)
            hit = (stamp, loader())
            self._cache[key] = hit
        return hit[1]

    # -- the project's file lock ----------------------------------------------
    def hold_files(self) -> None:
        """Hold the project's file lock from now until :meth:`release_files` (call under ``self.lock``).

        Call it before reading project state that will be written back. If
        someone else held the lock since this session last did, everything
        cached from the project's files is dropped, to be read again.
        """
        self._take_files()
        self._bind_folder()
        self._take_files()  # a replaced folder's batch was committed meanwhile, which let the files go

    def _take_files(self) -> None:
        lock = self._file_lock
        if lock is not None and not lock.held and lock.acquire():
            for key in list(self._cache):
                if key not in self._kept and key.removeprefix("file:") not in self._writes:
                    del self._cache[key]

    def _bind_folder(self) -> None:
        """Note which folder this session works on. A project folder deleted, or replaced
        by another (``rm -rf``, a move), since the session last read it is a new project:
        the old folder's pending work is committed first, which refuses it
        (:meth:`commit`); then everything cached from the old folder is dropped."""
        now = folder_identity(self.path)
        if now == self._folder or now is None or self._replacing:
            return
        if self._folder is not None and self.on_replaced is not None:
            self._replacing = True
            try:
                # the old folder's pending work is committed, which refuses it (and records
                # why); what was derived from the old folder (the index) is brought in line
                self.on_replaced()
            finally:
                self._replacing = False
        if self._folder is not None and self.has_pending():
            return  # the commit refuses it, then discard() lets the next run bind anew
        if self._folder is not None:
            self._cache.clear()
            self._kept.clear()
        self._pin(rebind=True)

    def pin_folder(self) -> tuple[int, int] | None:
        """The project folder's (device, inode) now, for a run taking a file from it.

        The session keeps the folder it works on open, so that its inode cannot be
        given to a folder made later at the same path (ext4 hands a freed inode
        straight back to ``rm -rf p; mkdir p``): a (device, inode) that differs from
        the pinned one is then always another folder."""
        if self._folder is None:
            self._pin(rebind=False)
        return folder_identity(self.path)

    def _pin(self, rebind: bool) -> None:
        with self._pin_lock:
            if self._folder is not None and not rebind:
                return
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                return
            st = os.fstat(fd)
            old, self._folder_fd = self._folder_fd, fd
            self._folder = (st.st_dev, st.st_ino)
            if old is not None:
                os.close(old)

    def close(self) -> None:
        """Let the project folder go (the session is no longer used)."""
        with self._pin_lock:
            fd, self._folder_fd, self._folder = self._folder_fd, None, None
        if fd is not None:
            os.close(fd)

    def anchored(self):
        """Within the block (under ``self.lock``), this thread reaches the project folder
        through the descriptor the session keeps (:func:`kbwatch.pipeline.confine.anchored`):
        nothing written meanwhile lands in another folder made at the same path."""
        return confine.anchored(self.path, self._folder_fd)

    @property
    def folder(self) -> tuple[int, int] | None:
        """(device, inode) of the project folder this session works on (kept open)."""
        return self._folder

    def replaced(self) -> bool:
        """The project folder is no longer the one this session works on."""
        return self._folder is not None and folder_identity(self.path) != self._folder

    def check_folder(self) -> None:
        """Raise :class:`ProjectReplaced` when the project folder is not the one the
        session's pending work was made in (nothing is then written)."""
        if self.replaced():
            raise ProjectReplaced(self.name)

    def release_files(self) -> None:
        """Let other writers in, unless writes are still pending (call under ``self.lock``)."""
        if self._file_lock is not None and self._file_lock.held and not self.has_pending():
            self._file_lock.release()

    def forget(self, key: str | None = None) -> None:
        if key is None:
            self._cache.clear()
        else:
            self._cache.pop(key, None)

    # -- deferred writes -----------------------------------------------------
    def defer_write(self, relpath: str, render: Callable[[], str | bytes]) -> None:
        """Write ``relpath`` at commit time with what ``render()`` returns then.

        Registering the same path again keeps its original position; the
        latest ``render`` wins. Writes happen in first-registration order.
        """
        self._writes[relpath] = render

    def defer(self, key: str, callback: Callable[[], None]) -> None:
        """Call ``callback`` at commit, after the deferred writes (e.g. an index)."""
        self._callbacks[key] = callback

    def after_commit(self, key: str, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the batch's runs are recorded in the journal
        (derived views such as KNOWLEDGE.md's status, which count findings)."""
        self._after[key] = callback

    def undo_unless_committed(self, key: str, callback: Callable[[], None]) -> None:
        """Call ``callback`` if the batch's commit fails (:meth:`discard`): a stage that changed a
        project file ahead of the commit (the archive stage's ``parsed/`` text) undoes it there.
        Called newest first; forgotten once the commit wrote the project's files."""
        self._undo[key] = callback

    def forget_undo(self, key: str) -> None:
        self._undo.pop(key, None)

    def run_after_commit(self) -> None:
        """The :meth:`after_commit` callbacks, each guarded: one that fails does not keep the
        others from running."""
        callbacks, self._after = self._after, {}
        for key, cb in callbacks.items():
            try:
                cb()
            except Exception as exc:  # noqa: BLE001 - derived views; the next commit or start redoes them
                from kbwatch.pipeline.lazylog import logger

                logger.opt(exception=True).error("post-commit step {} of {} failed: {}", key, self.name, exc)

    def durable(self, path: Path) -> None:
        """Fsync this new file (and its folder) before the commit writes anything."""
        self._durable.add(path)

    def has_pending(self) -> bool:
        return bool(self._writes or self._callbacks or self._durable or self.pending_runs)

    def commit(self) -> list[str]:
        """Make everything durable; returns the written paths."""
        durable, self._durable = sorted(self._durable), set()
        written = []
        writes, self._writes = self._writes, {}
        took = self._file_lock is not None and not self._file_lock.held
        if took:  # a caller that did not hold the files: hold them for the write
            self._file_lock.acquire()
        try:
            self.check_folder()  # never write the old folder's state into a new one
            # new copies (archive, parsed) and the project files' new contents
            # are synced in one round; only then are the project files replaced
            try:
                with self.anchored():
                    atomic_write_many([(self.path / rel, render()) for rel, render in writes.items()], durable)
            except OSError:
                # put the work back: a retry of this commit must write it, not find nothing
                # to do (and let the runs' sources be removed with nothing kept)
                self._writes = {**writes, **self._writes}
                self._durable.update(durable)
                self.check_folder()  # the folder went away during the writes: say so
                raise
            self._undo.clear()  # the batch is on disk: nothing of it is undone any more
            for rel in writes:
                written.append(rel)
                key = f"file:{rel}"
                if key in self._cache:
                    self._cache[key] = (_stamp(self.path / rel), self._cache[key][1])
        finally:
            if took:
                self._file_lock.release()
        callbacks, self._callbacks = self._callbacks, {}
        for key, cb in callbacks.items():
            try:
                cb()
            except Exception as exc:  # derived data (an index) must not undo a durable commit
                from kbwatch.pipeline.lazylog import logger

                logger.opt(exception=True).error("post-write step {} of {} failed: {}", key, self.name, exc)
        return written

    def discard(self) -> None:
        """Drop deferred work and cached state (after a failed commit); undo what stages changed
        ahead of it (:meth:`undo_unless_committed`)."""
        undo, self._undo = self._undo, {}
        for key, cb in reversed(undo.items()):
            try:
                cb()
            except Exception as exc:  # noqa: BLE001 - the next start settles what is left
                from kbwatch.pipeline.lazylog import logger

                logger.warning("undoing {} of {} after a failed commit failed: {}", key, self.name, exc)
        self._writes.clear()
        self._callbacks.clear()
        self._after.clear()
        self._durable.clear()
        self._cache.clear()
        self._kept.clear()
        # the folder stays pinned: if it was replaced, the next run's hold_files() sees
        # that and tells the plugins (on_replaced) before binding to the folder there now


@contextmanager
def _nolock() -> Iterator[None]:
    yield
