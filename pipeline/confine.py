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

:func:`folder` lends a descriptor each thread keeps between uses (a file's
run reaches the same few folders again and again: ``sources/``, ``archive/``,
``parsed/``, ``runs/``, its snapshot folder). A kept descriptor is lent only
after the whole chain was checked again, from the root down, with one
``fstatat(parent, name, AT_SYMLINK_NOFOLLOW)`` per component: each name must
still be a real folder with the device and inode of the descriptor kept for
it. That is what a fresh walk would find at that moment (a folder swapped for a
link, renamed away, or replaced by another folder fails the check and is
walked again, without following links, exactly as before), for half the
system calls and no descriptor opened and closed per use. An inode number
cannot be reused while its folder is held open.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections import OrderedDict
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


KEPT_MAX = 64  # folders (and their parents) whose descriptors a thread keeps


class _Kept:
    """One thread's kept folder descriptors: (root, components) -> (fd, device, inode)."""

    def __init__(self) -> None:
        self.fds: OrderedDict[tuple[str, tuple[str, ...]], tuple[int, int, int]] = OrderedDict()
        self.lent: dict[tuple[str, tuple[str, ...]], int] = {}  # keys in use by a with-block
        self.retired: dict[tuple[str, tuple[str, ...]], list[int]] = {}  # dropped while lent

    def drop(self, key: tuple[str, tuple[str, ...]]) -> None:
        held = self.fds.pop(key, None)
        if held is None:
            return
        if key in self.lent:  # a block still uses it: closed when that block ends
            self.retired.setdefault(key, []).append(held[0])
            return
        try:
            os.close(held[0])
        except OSError:
            pass

    def give_back(self, chain: list[tuple[str, tuple[str, ...]]]) -> None:
        for key in chain:
            n = self.lent.get(key, 0) - 1
            if n > 0:
                self.lent[key] = n
                continue
            self.lent.pop(key, None)
            for fd in self.retired.pop(key, ()):
                try:
                    os.close(fd)
                except OSError:
                    pass

    def trim(self) -> None:
        for key in [k for k in self.fds if k not in self.lent][: max(0, len(self.fds) - KEPT_MAX)]:
            self.drop(key)

    def clear(self) -> None:
        for key in [k for k in self.fds if k not in self.lent]:
            self.drop(key)

    def __del__(self) -> None:  # the thread ended: give its descriptors back
        fds = [fd for fd, _, _ in self.fds.values()] + [fd for fds in self.retired.values() for fd in fds]
        self.fds.clear()
        self.retired.clear()
        for fd in fds:
            try:
                os.close(fd)
            except Exception:
                pass


_local = threading.local()


def _kept() -> _Kept:
    kept = getattr(_local, "kept", None)
    if kept is None:
        kept = _local.kept = _Kept()
    return kept


def _forked() -> None:
    """In a forked child: start afresh (the inherited descriptors are left alone)."""
    kept = _local.__dict__.pop("kept", None)
    if kept is not None:
        kept.fds.clear()
        kept.retired.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def forget_kept() -> None:
    """Close the calling thread's kept descriptors (those not lent at the moment)."""
    kept = getattr(_local, "kept", None)
    if kept is not None:
        kept.clear()


def _still(kept: _Kept, key: tuple[str, tuple[str, ...]], st: os.stat_result) -> int | None:
    """The kept descriptor for ``key`` when ``st`` (what the name is now) is still its folder."""
    held = kept.fds.get(key)
    if held is None:
        return None
    if stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) == held[1:]:
        kept.fds.move_to_end(key)
        return held[0]
    kept.drop(key)
    return None


def _keep(kept: _Kept, key: tuple[str, tuple[str, ...]], fd: int) -> int:
    st = os.fstat(fd)
    kept.drop(key)
    kept.fds[key] = (fd, st.st_dev, st.st_ino)
    return fd


def _lend(root: str, parts: list[str], create: bool) -> tuple[int, list[tuple[str, tuple[str, ...]]]]:
    """The calling thread's descriptor of ``root/parts`` checked (or walked) right now,
    with the keys of the chain (to pin while it is lent)."""
    kept = _kept()
    key: tuple[str, tuple[str, ...]] = (root, ())
    chain = [key]
    try:
        st = os.stat(root)  # the root as the administrator gave it (followed)
    except FileNotFoundError:
        kept.drop(key)
        raise
    fd = _still(kept, key, st)
    if fd is None:
        fd = _keep(kept, key, os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
    for i, name in enumerate(parts):
        if name in (".", ".."):
            raise Escape(errno.EPERM, f"'{name}' is not allowed in a path below the root", name)
        key = (root, tuple(parts[: i + 1]))
        chain.append(key)
        nxt = None
        if key in kept.fds:
            try:
                nxt = _still(kept, key, os.stat(name, dir_fd=fd, follow_symlinks=False))
            except FileNotFoundError:
                kept.drop(key)
        if nxt is None:
            try:
                nxt = os.open(name, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(name, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                nxt = _open_step(name, fd)
            except OSError as exc:
                _raise_link(exc, name)
            nxt = _keep(kept, key, nxt)
        fd = nxt
    return fd, chain


def _open_step(name: str, fd: int) -> int:
    try:
        return os.open(name, DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        _raise_link(exc, name)
        raise


def _raise_link(exc: OSError, name: str) -> None:
    if exc.errno in LINK_ERRNOS:
        raise Escape(exc.errno, f"{name} is a symbolic link or not a folder; "
                                "kbwatch does not follow it", name) from None
    raise exc


@contextmanager
def folder_if_confined(path: Path | str, create: bool = False) -> Iterator[int | None]:
    """Like :func:`folder` below a registered root; None elsewhere (the caller works by path)."""
    where = split_under_root(path)
    if where is None:
        yield None
        return
    with _lent(where, create) as fd:
        yield fd


@contextmanager
def _lent(where: tuple[str, list[str]], create: bool) -> Iterator[int]:
    kept = _kept()
    fd, chain = _lend(where[0], where[1], create)
    for key in chain:
        kept.lent[key] = kept.lent.get(key, 0) + 1
    try:
        yield fd
    finally:
        kept.give_back(chain)
        kept.trim()


@contextmanager
def folder(path: Path | str, create: bool = False) -> Iterator[int]:
    """``with folder(p) as fd:`` — a descriptor of the folder ``p`` for the block.

    Below a registered root: the calling thread's kept descriptor, its whole chain
    checked again first (see the module's docstring), else walked without following
    links (:class:`Escape`); it stays open after the block, so the caller never
    closes it. Elsewhere: opened by path and closed at the end.
    """
    where = split_under_root(path)
    if where is None:
        fd = open_dir(path, create)
        try:
            yield fd
        finally:
            os.close(fd)
        return
    with _lent(where, create) as fd:
        yield fd


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
