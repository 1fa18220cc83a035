"""Healing the SQLite files of the state dir (the journal and the search index).

Both are rebuildable mirrors: the journal of every project's runs/, the index
of parsed/. A file SQLite cannot use ("file is not a database", "database disk
image is malformed", a failing ``PRAGMA quick_check``) is moved aside as
``<file>.corrupt-<UTC stamp>`` (its -wal/-shm with it), a fresh one is created
and rebuilt, and ONE warning line says so. Healing is serialised across
processes by an flock in the state dir, and a process that finds the file
already healed by another simply uses it.

A running service also keeps its live copy: when the file is deleted or
replaced under it (``rm -rf .kbwatch``), :func:`copy_live` writes the open
database back to its path (SQLite's online backup), so nothing is lost.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
import weakref
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from kbwatch.pipeline.lazylog import logger

T = TypeVar("T")

SQLITE_CORRUPT, SQLITE_NOTADB = 11, 26
HEAL_LOCK = "heal.lock"

_LIVE: "weakref.WeakSet" = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


class CorruptDatabase(sqlite3.DatabaseError):
    """``PRAGMA quick_check`` did not answer ``ok``."""


def is_corrupt(exc: BaseException) -> bool:
    """True for SQLite errors that mean the file itself is unusable (not 'locked' or 'busy')."""
    if isinstance(exc, CorruptDatabase):
        return True
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in (SQLITE_CORRUPT, SQLITE_NOTADB)
    text = str(exc).lower()
    return "not a database" in text or "malformed" in text


def quick_check(conn: sqlite3.Connection) -> None:
    """Raise :class:`CorruptDatabase` unless ``PRAGMA quick_check`` says ``ok``."""
    rows = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
    if rows != ["ok"]:
        raise CorruptDatabase(f"quick_check: {'; '.join(str(r) for r in rows[:3])}")


def file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of ``path``, or None when it does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino)


def move_aside(path: Path, why: str = "corrupt") -> Path:
    """Rename ``path`` (and its -wal/-shm) to ``<name>.<why>-<UTC stamp>``; returns the new main path."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.{why}-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.{why}-{stamp}-{n}")
    for suffix in ("", "-wal", "-shm"):
        try:
            os.replace(f"{path}{suffix}", f"{target}{suffix}")
        except FileNotFoundError:
            pass
    return target


@contextmanager
def heal_lock(state: Path) -> Iterator[None]:
    """One healer at a time per state dir (across processes)."""
    from kbwatch.pipeline.project_lock import exclusive

    with exclusive(state / HEAL_LOCK):
        yield


def open_healing(path: Path, open_fn: Callable[[], T], rebuild: Callable[[T], str], what: str) -> T:
    """``open_fn()``; if SQLite cannot use the file, move it aside, open a fresh one and ``rebuild`` it.

    ``open_fn`` must close what it opened before raising. ``rebuild`` fills the
    fresh object and returns a short summary for the one warning line.
    """
    try:
        return open_fn()
    except sqlite3.DatabaseError as exc:
        if not is_corrupt(exc):
            raise
    with heal_lock(path.parent):
        try:
            return open_fn()  # another process may have healed it meanwhile
        except sqlite3.DatabaseError as exc:
            if not is_corrupt(exc):
                raise
            reason = str(exc)
        aside = move_aside(path)
        fresh = open_fn()
        summary = rebuild(fresh)
        logger.warning("{} {} could not be used by SQLite ({}): moved aside as {} and rebuilt {}",
                       what, path, reason, aside.name, summary)
        return fresh


def use_wal(conn: sqlite3.Connection, patience: float = 30.0) -> None:
    """Put the file in WAL mode. Switching a fresh file takes an exclusive lock and SQLite
    answers "database is locked" at once, without the busy handler, when another opener
    holds any lock (the service starting while someone runs ``status``: 10 rounds in 300 of
    six threads opening a fresh journal; the index the same). Already WAL (every open but
    the first): nothing to do; otherwise try again, with jitter, for ``patience`` seconds."""
    deadline = time.monotonic() + patience
    while True:
        try:
            if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
                return
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() > deadline:
                raise
            time.sleep(random.uniform(0.01, 0.1))


def copy_live(conn: sqlite3.Connection, path: Path) -> sqlite3.Connection:
    """Write the open database ``conn`` to ``path`` (a file deleted or replaced under it);
    returns a connection to the new file. Raises sqlite3.DatabaseError if ``conn`` is unusable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    try:
        conn.backup(fresh)
        use_wal(fresh)
    except BaseException:
        fresh.close()
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(f"{path}{suffix}")
            except FileNotFoundError:
                pass
        raise
    return fresh


def adoptable(path: Path) -> bool:
    """True if ``path`` is a database SQLite can use (quick_check passes)."""
    try:
        conn = sqlite3.connect(f"{Path(path).absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return False
    try:
        quick_check(conn)
        return True
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def register_live(db) -> None:
    """Let a running service write ``db`` (an object with ``restore_file() -> bool``, e.g. the
    search index) back to its path when its file is deleted or replaced (kbwatch.pipeline.state_guard)."""
    with _LIVE_LOCK:
        _LIVE.add(db)


def restore_live() -> bool:
    """``restore_file()`` of every registered database; True if any was written back."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    return any([db.restore_file() for db in live])
