"""Taking a source: open it once, copy it to a private snapshot while hashing.

A file in ``sources/`` belongs to whoever can write to the shared folder; it
can be replaced by a link to any file between two reads. So a run opens the
source exactly once, without following a link at any step
(:func:`kbwatch.pipeline.confine.open_file`), checks with ``fstat`` that it is a
regular file with one name (not a hard link to a file elsewhere), and copies
what it reads into ``<state>/intake/<folder>/<name>`` (one folder per runner
thread, which runs one file at a time) while hashing it, in one pass. Every
stage then works on that snapshot: what was hashed is what gets parsed and
archived (the archive stage hard-links it).
The source's identity (device, inode, size, mtime) is kept so that the
runner removes the source only if it is still that very file.

The snapshot is removed when the run ends; ``KnowledgeBase.recover``
sweeps ``<state>/intake/`` after a crash.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from kbwatch.pipeline import confine
from kbwatch.pipeline.fsutil import kept_mode, write_all
from kbwatch.pipeline.sources import file_refusal

CHUNK = 1024 * 1024


class NotRegular(Exception):
    """The opened source is not a regular file with one name (it was swapped after it was listed)."""


class Changed(Exception):
    """The source changed while it was read: the snapshot may be torn."""


@dataclass
class Taken:
    snapshot: Path  # the private copy every stage reads
    sha256: str
    size: int
    mtime_ns: int
    device: int
    inode: int


def take(source: Path, folder: Path, check: Callable[[int], None] | None = None) -> Taken:
    """Open ``source`` once (no links followed) and copy it to ``folder/<its name>``.

    ``check(size)`` is called with the opened file's size before anything is copied (the
    size bound: what it raises propagates). Raises FileNotFoundError (gone),
    :class:`kbwatch.pipeline.confine.Escape` (a link on the way;
    :class:`kbwatch.pipeline.confine.LinkedFile` for the file itself), :class:`NotRegular`,
    :class:`Changed` (also when it grew while it was copied: the copy stops one byte past the
    size it had when opened), or another OSError.
    """
    fd = confine.open_file(source)
    try:
        st = os.fstat(fd)
        refusal = file_refusal(st)  # a special file, or a hard link planted after the listing
        if refusal:
            raise NotRegular(refusal)
        if check is not None:
            check(st.st_size)
        os.set_blocking(fd, True)
        snapshot = folder / source.name
        try:
            digest, copied = _copy(fd, snapshot, st)
        except BaseException:
            discard(folder)
            raise
        after = os.fstat(fd)
        if copied != st.st_size or (after.st_size, after.st_mtime_ns) != (st.st_size, st.st_mtime_ns):
            discard(folder)
            raise Changed("the file changed while it was read")
        return Taken(snapshot, digest, st.st_size, st.st_mtime_ns, st.st_dev, st.st_ino)
    finally:
        os.close(fd)


def _private(folder: Path) -> None:
    """Keep ``<state>/intake`` writable by this account alone: whoever could write to it could swap a
    snapshot between its copy and its parse. It is made 0700 at start (``KnowledgeBase.sweep_intake``);
    this takes the group's and others' write bits away again when the state dir was made anew under a
    running service with a looser umask. One that others can write to and that belongs to another
    account is refused (PermissionError: the run fails with that reason)."""
    with confine.folder(folder) as dfd:  # no link followed (a swapped-in link is refused)
        st = os.fstat(dfd)
        if st.st_mode & 0o022:
            if st.st_uid != os.geteuid():
                raise PermissionError(errno.EPERM, f"{folder} belongs to another account and others can write "
                                                   "to it; kbwatch makes no snapshot there (make it the "
                                                   "service's own, mode 700)", str(folder))
            os.fchmod(dfd, stat.S_IMODE(st.st_mode) & ~0o022)


def _copy(fd: int, snapshot: Path, st: os.stat_result) -> tuple[str, int]:
    h = hashlib.sha256()
    copied = 0
    with confine.folder(snapshot.parent, create=True) as dfd:
        _private(snapshot.parent.parent)  # <state>/intake, made along with the folder when missing
        out = os.open(snapshot.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                      0o600, dir_fd=dfd)
        try:
            left = st.st_size + 1  # one byte more tells a file that grew meanwhile (Changed), no more
            while left > 0 and (chunk := os.read(fd, min(CHUNK, left))):
                h.update(chunk)
                write_all(out, chunk)
                copied += len(chunk)
                left -= len(chunk)
            # the archive copy is this file (hard link): give it the source's mode and times
            os.chmod(out, kept_mode(st.st_mode))
            os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(out)
    return h.hexdigest(), copied


def discard(folder: Path, keep_folder: bool = False, only: Path | None = None) -> None:
    """Remove a snapshot and its folder, or only the snapshot (never raises).

    The folder holds one file: unlink it (and remove the folder); anything
    unexpected falls back to ``rmtree``. ``only``: the snapshot's path when it is
    known (the folder kept): one unlink, no listing.
    """
    if only is not None and keep_folder:
        try:
            os.unlink(only)
            return
        except FileNotFoundError:
            return
        except OSError:
            pass
    try:
        for entry in os.scandir(folder):
            os.unlink(entry.path)
        if not keep_folder:
            os.rmdir(folder)
    except FileNotFoundError:
        pass
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)
