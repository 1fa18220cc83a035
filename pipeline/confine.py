"""Containment: reaching folders and files under a knowledge-base root by descriptor.

Anyone who can write to the shared root can replace a folder or a file with a
symbolic link between two of kbwatch's steps. Paths are therefore never
resolved by the kernel in one go below a registered root: :func:`open_dir`
opens the root (the administrator's choice; followed as given) and then each
component with ``O_NOFOLLOW | O_DIRECTORY`` relative to its parent's
descriptor, so a component that is (or just became) a symlink or a
non-directory fails with ``ELOOP``/``ENOTDIR`` instead of being followed.
Work then happens relative to the folder's descriptor (``dir_fd=``).

``KnowledgeBase`` registers its root (:func:`register_root`); paths outside
every registered root (a state dir configured elsewhere, tests working on
bare folders) are reached by path as before (:func:`confined` is False).
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO swapped in for a file must not hang the open
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
LINK_ERRNOS = (errno.ELOOP, errno.ENOTDIR)

_ROOTS: list[str] = []  # absolute root paths (as given and resolved), longest first


class Escape(OSError):
    """A folder on the way is a symbolic link or not a folder: nothing is done through it."""


class LinkedFile(Escape):
    """The file itself is a symbolic link: it is not followed."""


def register_root(root: Path) -> None:
    """Confine every later access below ``root`` (idempotent)."""
    for form in {os.path.abspath(root), os.path.realpath(root)}:
        if form not in _ROOTS and form != "/":
            _ROOTS.append(form)
    _ROOTS.sort(key=len, reverse=True)


def _normal(path: Path | str) -> str:
    """``os.path.abspath(path)``, without the work when the text is already absolute and normal."""
    full = os.fspath(path)
    if (full[:1] != "/" or "//" in full or "/./" in full or "/../" in full
            or full.endswith(("/", "/.", "/.."))):
        return os.path.abspath(full)
    return full


def split_under_root(path: Path | str) -> tuple[str, list[str]] | None:
    """(registered root, components below it) for ``path``, or None when outside every root."""
    full = _normal(path)
    for root in _ROOTS:
        if full.startswith(root + os.sep):
            return root, [p for p in full[len(root) + 1:].split(os.sep) if p]
    return None


def confined(path: Path | str) -> bool:
    return split_under_root(path) is not None


def _walk(root: str, parts: list[str], create: bool) -> int:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in parts:
            if name in (".", ".."):
                raise Escape(errno.EPERM, f"'{name}' is not allowed in a path below the root", name)
            try:
                nxt = os.open(name, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(name, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                nxt = os.open(name, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in LINK_ERRNOS:
                    raise Escape(exc.errno, f"{name} is a symbolic link or not a folder; "
                                            "kbwatch does not follow it", name) from None
                raise
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_dir(path: Path | str, create: bool = False) -> int:
    """A descriptor of the folder ``path`` (created with its parents when ``create``).

    Below a registered root every component is opened without following
    links (:class:`Escape` when one is a link or not a folder); elsewhere the
    path is opened as given. The caller closes the descriptor.
    """
    where = split_under_root(path)
    if where is None:
        if create:
            os.makedirs(path, exist_ok=True)
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    return _walk(where[0], where[1], create)


def open_dir_if_confined(path: Path | str, create: bool = False) -> int | None:
    """:func:`open_dir` below a registered root (the caller closes it); None elsewhere
    (the caller works by path). One look at the roots instead of :func:`confined` then
    :func:`open_dir`."""
    where = split_under_root(path)
    return None if where is None else _walk(where[0], where[1], create)


@contextmanager
def folder(path: Path | str, create: bool = False) -> Iterator[int]:
    """``with folder(p) as fd:`` — :func:`open_dir`, closed at the end."""
    fd = open_dir(path, create)
    try:
        yield fd
    finally:
        os.close(fd)


def open_file(path: Path) -> int:
    """Open a file for reading without following a link at any step (O_NONBLOCK, so
    a FIFO does not hang; the caller checks ``fstat`` is a regular file)."""
    with folder(path.parent) as dfd:
        try:
            return os.open(path.name, FILE_FLAGS, dir_fd=dfd)
        except OSError as exc:
            if exc.errno in LINK_ERRNOS:
                raise LinkedFile(exc.errno, f"{path.name} is a symbolic link; kbwatch does not follow it",
                                 path.name) from None
            raise


def same_file(st: os.stat_result, dev: int | None, ino: int | None, size: int, mtime_ns: int) -> bool:
    """Whether ``st`` (an lstat) is the regular file that was taken: device and inode
    (when known), size and mtime."""
    return (
        stat.S_ISREG(st.st_mode)
        and st.st_size == size and st.st_mtime_ns == mtime_ns
        and (dev is None or st.st_dev == dev) and (ino is None or st.st_ino == ino)
    )


def unlink_if_same(path: Path, dev: int | None, ino: int | None, size: int, mtime_ns: int) -> bool | None:
    """Unlink ``path`` only if it is still the same file; relative to its folder's
    descriptor, reached without following links.

    True: removed. False: it is another file now (left alone). None: gone already.
    Raises :class:`Escape` when a folder on the way became a link.
    """
    with folder(path.parent) as dfd:
        try:
            st = os.stat(path.name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if not same_file(st, dev, ino, size, mtime_ns):
            return False
        os.unlink(path.name, dir_fd=dfd)
        return True
