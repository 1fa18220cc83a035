"""One writer per project: the cross-process lock on a project's files.

The rule: whoever changes a project's files (manifest.json, project.md,
KNOWLEDGE.md, reviews.json, parsed/, the data_structure.md files, runs/)
holds the project's lock from the moment it reads the project state it will
write back until its writes are durable. The service's commit session
(:class:`kbwatch.pipeline.project.ProjectSession`) holds it from the first serial
stage of a batch until the batch is committed and its after-commit updates
are written; ``remove``, ``rebuild``, ``review`` and ``index rebuild`` hold
it around their whole read-modify-write. So no in-memory copy of a project
file can be written over a newer one.

Mechanism: ``flock(2)`` on ``<state>/locks/<hex of name>.lock``. flock is not
fair (a service committing a continuous burst could starve a waiting
command), so every acquirer passes a turnstile: it takes ``<hex>.turn``, then
``<hex>.lock``, then releases ``.turn``. A command waiting for ``.lock``
holds ``.turn``, so the service's next acquisition queues behind it and the
command gets the lock at the service's next release.

The lock file holds a generation counter that every acquisition bumps. A
holder that finds another value than the one it left knows someone else held
the lock (and may have written) since its last release: the session then
drops what it cached from the project's files.

A lock belongs to the open file description, not to a thread: a
:class:`ProjectFileLock` taken by one thread may be released by another (the
service's session does that). It is not re-entrant: taking a project's lock
again in a process that holds it, even through another object, deadlocks;
code that runs while a session holds it (after-commit steps such as the
rebuild stage) must not take it again.

Lock order, everywhere, never the reverse:

    ProjectSession.lock (thread lock) → project file lock (turn, then lock) → journal / search index (SQLite)

Nothing waits for a session's thread lock or a project file lock while it
holds a SQLite write transaction, so a command and the service cannot
deadlock.
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

WAIT_NOTICE_SECONDS = 2.0  # a command says it waits only when the wait is noticeable
_GENERATION_BYTES = 8


class ProjectFileLock:
    """The exclusive, cross-process lock on one project's files (not re-entrant)."""

    def __init__(self, project: Path, state: Path):
        self.project = project.name
        self._locks = state / "locks"
        safe = project.name.encode("utf-8", "surrogateescape").hex()[:200]
        self._lock_path = self._locks / f"{safe}.lock"
        self._turn_path = self._locks / f"{safe}.turn"
        self._fd: int | None = None
        self._left: int | None = None  # the generation this object left at its last release

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, on_wait: Callable[[], None] | None = None) -> bool:
        """Block until this process holds the lock.

        ``on_wait`` is called (from a timer thread) once the wait has lasted
        :data:`WAIT_NOTICE_SECONDS`. Returns True when another holder had the
        lock since this object last released it (always on the first call).
        """
        if self._fd is not None:
            raise RuntimeError(f"the file lock of {self.project} is already held")
        self._locks.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
        timer = None
        turn = os.open(self._turn_path, flags, 0o644)
        fd = None
        try:
            fd = os.open(self._lock_path, flags, 0o644)
            for f in (turn, fd):
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    if timer is None and on_wait is not None:
                        timer = threading.Timer(WAIT_NOTICE_SECONDS, on_wait)
                        timer.daemon = True
                        timer.start()
                    fcntl.flock(f, fcntl.LOCK_EX)
        except BaseException:
            if fd is not None:
                os.close(fd)  # closing the descriptor drops the lock
            raise
        finally:
            if timer is not None:
                timer.cancel()
            os.close(turn)  # leave the turnstile to the next acquirer
        self._fd = fd
        return self._bump()

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def _bump(self) -> bool:
        raw = os.pread(self._fd, _GENERATION_BYTES, 0)
        found = int.from_bytes(raw, "little") if len(raw) == _GENERATION_BYTES else 0
        foreign = found != self._left
        self._left = (found + 1) % (1 << (8 * _GENERATION_BYTES))
        os.pwrite(self._fd, self._left.to_bytes(_GENERATION_BYTES, "little"), 0)
        return foreign


@contextmanager
def project_file_lock(project: Path, state: Path, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold ``project``'s file lock for the block (see the module docstring)."""
    lock = ProjectFileLock(project, state)
    lock.acquire(on_wait)
    try:
        yield
    finally:
        lock.release()


def say_waiting(project: Path) -> Callable[[], None]:
    """``on_wait`` for a command: one line on stderr when the wait gets noticeable."""

    def notice() -> None:
        print(f"waiting for the running service to commit {project.name}…", file=sys.stderr, flush=True)

    return notice


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on the file ``path`` (made if missing, never through a link) for the
    block: one holder at a time across processes, for state-dir files that are read-modify-written
    (the heal lock, ``journal-unread.json``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the flock
