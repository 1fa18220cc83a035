"""Containment: reaching folders and files under a knowledge-base root by descriptor.

Anyone who can write to the shared root can replace a folder or a file with a
symbolic link between two of kbwatch's steps. Paths are therefore never
resolved by the kernel in one go below a registered root: :func:`open_dir`
opens the root (the administrator's choice; followed as given) and then each
component with ``O_NOFOLLOW | O_DIRECTORY`` relative to its parent's
descriptor, so a component that is (or just became) a symlink or a
non-directory fails with ``ELOOP``/``ENOTDIR`` instead of being followed.
Work then happens relative to the folder's descriptor (``dir_fd=``).

On Linux 5.6+ the same walk is one system call: ``openat2(2)`` relative to the
root's descriptor with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`` resolves the
whole path below the root and fails (``ELOOP``/``ENOTDIR``/``EXDEV``) when any
component is a symbolic link or leads out of the root, atomically in the kernel.
Whenever it fails, or is not there (``ENOSYS``, a seccomp filter's ``EPERM``,
another platform), the component-by-component walk runs instead: it makes
missing folders (``create``) and raises the exceptions described below.
``KBWATCH_NO_OPENAT2=1`` keeps the walk only.

The root's descriptor is kept open between calls (checked against the root's path
at most once a second, so a root made anew is followed as before): the walks
start from it instead of opening the root each time.

``KnowledgeBase`` registers its root (:func:`register_root`); paths outside
every registered root (a state dir configured elsewhere, tests working on
bare folders) are reached by path as before (:func:`confined` is False).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import hashlib
import os
import stat
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO swapped in for a file must not hang the open
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# a descriptor that names a file without opening it (see open_file); O_PATH is Linux's
PATH_FLAGS = getattr(os, "O_PATH", os.O_RDONLY | os.O_NONBLOCK) | os.O_NOFOLLOW | os.O_CLOEXEC
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


# -- openat2(2): the whole path below the root in one call ---------------------

_SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437, "riscv64": 437, "ppc64le": 437, "s390x": 437}
RESOLVE_NO_SYMLINKS = 0x04  # no component may be a symlink (magic links included)
RESOLVE_BENEATH = 0x08  # no component may lead out of the starting folder ("..", absolute)


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _load_openat2():
    """libc's ``syscall`` bound to openat2's number, or None (not Linux, unknown machine, turned off)."""
    if (not sys.platform.startswith("linux") or os.environ.get("KBWATCH_NO_OPENAT2") == "1"):
        return None
    number = _SYS_OPENAT2.get(os.uname().machine)
    if number is None:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.syscall
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_long
    fn.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(_OpenHow), ctypes.c_size_t]
    if ctypes.sizeof(_OpenHow) != 24:  # struct open_how, version 0 (OPEN_HOW_SIZE_VER0)
        return None
    return number, fn


_OPENAT2 = _load_openat2()
_HOW: dict[int, _OpenHow] = {}  # open flags -> its (never changed) open_how
# the call itself is missing or forbidden: stop trying (E2BIG/EINVAL: a kernel without these flags)
_UNAVAILABLE = (errno.ENOSYS, errno.EPERM, errno.E2BIG, errno.EINVAL)


def _beneath(root_fd: int, rel: str, flags: int) -> int | None:
    """``openat2(root_fd, rel, flags, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)``: a descriptor,
    or None when the call failed for any reason (the caller then walks, which makes
    missing folders and raises the right exception) or is not available."""
    global _OPENAT2
    if _OPENAT2 is None:
        return None
    raw = os.fsencode(rel)
    if b"\0" in raw:  # a C string would end there: let os.open refuse it (ValueError) in the walk
        return None
    number, fn = _OPENAT2
    how = _HOW.get(flags)
    if how is None:
        how = _HOW[flags] = _OpenHow(flags, 0, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
    fd = fn(number, root_fd, raw, how, 24)
    if fd >= 0:
        return fd
    if ctypes.get_errno() in _UNAVAILABLE:
        _OPENAT2 = None
    return None


def _open_root(root: str) -> int:
    return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


# -- the roots' descriptors, kept open -----------------------------------------
# Every confined open starts at a registered root. Opening the root anew for each one (an open
# and a close more: about ten system calls a file, each a moment another runner thread takes the
# GIL) is replaced by one descriptor kept per root. It is checked against the root's path at
# most every ROOT_RECHECK_SECONDS (one stat): a root renamed away, or deleted and made anew, is
# opened again, as each open did before. At most KEPT_ROOTS are kept; a dropped descriptor is
# closed once no thread is using it (a descriptor number is never reused under a running open).

ROOT_RECHECK_SECONDS = 1.0
KEPT_ROOTS = 8


class _KeptRoot:
    __slots__ = ("fd", "dev", "ino", "checked", "users", "dropped")

    def __init__(self, fd: int, st: os.stat_result, now: float):
        self.fd, self.dev, self.ino, self.checked = fd, st.st_dev, st.st_ino, now
        self.users, self.dropped = 0, False


_kept: dict[str, _KeptRoot] = {}
_kept_lock = threading.Lock()


def _drop(kept: _KeptRoot) -> None:
    """Forget ``kept`` (call under ``_kept_lock``): closed now, or by its last user."""
    kept.dropped = True
    if kept.users == 0:
        os.close(kept.fd)


def _acquire_root(root: str) -> _KeptRoot:
    """The kept descriptor of ``root`` (opened, or checked, when due), counted as in use."""
    now = time.monotonic()
    with _kept_lock:
        kept = _kept.get(root)
        if kept is not None and now - kept.checked < ROOT_RECHECK_SECONDS:
            kept.users += 1
            return kept
    if kept is not None:  # due for a check: is the root's path still that folder?
        try:
            st = os.stat(root)
        except OSError:
            st = None
        if st is not None and (st.st_dev, st.st_ino) == (kept.dev, kept.ino):
            with _kept_lock:
                if not kept.dropped:
                    kept.checked = now
                    kept.users += 1
                    return kept
    fd = _open_root(root)
    try:
        fresh = _KeptRoot(fd, os.fstat(fd), now)
    except BaseException:
        os.close(fd)
        raise
    with _kept_lock:
        old = _kept.pop(root, None)
        if old is not None and not old.dropped:
            _drop(old)
        _kept[root] = fresh
        fresh.users += 1
        while len(_kept) > KEPT_ROOTS:  # the least recently opened goes
            _drop(_kept.pop(next(iter(_kept))))
    return fresh


def _release_root(kept: _KeptRoot) -> None:
    with _kept_lock:
        kept.users -= 1
        if kept.dropped and kept.users == 0:
            os.close(kept.fd)


def _forget_kept_roots() -> None:
    """In a forked child: its own lock, no descriptor shared with the parent's bookkeeping."""
    global _kept_lock
    _kept_lock = threading.Lock()
    for kept in _kept.values():
        try:
            os.close(kept.fd)
        except OSError:
            pass
    _kept.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_kept_roots)


def _beneath_root(root: str, rel: str, flags: int) -> int | None:
    """:func:`_beneath` from ``root``'s kept descriptor."""
    kept = _acquire_root(root)
    try:
        return _beneath(kept.fd, rel, flags)
    finally:
        _release_root(kept)


# -- anchors: a project folder reached through the descriptor its session keeps ----
# While a thread holds a project's session lock and writes into the project, the project
# folder is reached through the descriptor the session keeps open (ProjectSession.anchored),
# not through its name: a folder deleted and made again under the same name meanwhile
# (rm -rf p; mkdir p) never receives what was meant for the old one. Writes into a deleted
# folder fail (ENOENT) instead.

_local = threading.local()


@contextmanager
def anchored(path: Path | str, fd: int | None) -> Iterator[None]:
    """Within the block, in this thread, paths below ``path`` (a folder directly below a
    registered root) start at ``fd`` instead of at ``path``'s name."""
    where = split_under_root(path)
    if fd is None or where is None or len(where[1]) != 1:
        yield
        return
    anchors = getattr(_local, "anchors", None)
    if anchors is None:
        anchors = _local.anchors = {}
    key = (where[0], where[1][0])
    before = anchors.get(key)
    anchors[key] = fd
    try:
        yield
    finally:
        if before is None:
            del anchors[key]
        else:
            anchors[key] = before


def _anchor(root: str, parts: list[str]) -> int | None:
    anchors = getattr(_local, "anchors", None)
    if not anchors or not parts:
        return None
    return anchors.get((root, parts[0]))


def _walk(root: str, parts: list[str], create: bool) -> int:
    """A descriptor of ``root/parts...`` reached without following a link below the root:
    one ``openat2`` when it can, else component by component (:func:`_walk_each`)."""
    anchor = _anchor(root, parts)
    if anchor is not None:
        return _walk_from(anchor, parts[1:], create)
    if parts and _OPENAT2 is not None and "." not in parts and ".." not in parts:
        fd = _beneath_root(root, "/".join(parts), DIR_FLAGS)
        if fd is not None:
            return fd
    return _walk_each(root, parts, create)


def _walk_from(start: int, parts: list[str], create: bool) -> int:
    """:func:`_walk` below an anchored project folder's descriptor."""
    if parts and _OPENAT2 is not None and "." not in parts and ".." not in parts:
        fd = _beneath(start, "/".join(parts), DIR_FLAGS)
        if fd is not None:
            return fd
    return _walk_each("", parts, create, start=os.open(".", DIR_FLAGS, dir_fd=start))


def _walk_each(root: str, parts: list[str], create: bool, start: int | None = None) -> int:
    fd = _open_root(root) if start is None else start
    below = 0 if start is None else 1  # components below the root already passed
    try:
        for i, name in enumerate(parts, below):
            if name in (".", ".."):
                raise Escape(errno.EPERM, f"'{name}' is not allowed in a path below the root", name)
            try:
                # a project folder is never made by a write into it: one deleted under a
                # running service stays deleted (its pending work is refused, see
                # ProjectSession.check_folder); `init` makes projects. Hidden folders
                # (the state dir) are made as needed.
                nxt = _open_component(fd, name, create and (i > 0 or name.startswith(".")))
            except OSError as exc:  # from either open: a link can appear between the two
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


def _open_component(fd: int, name: str, create: bool) -> int:
    """The folder ``name`` in ``fd``, made first when missing and ``create``; never through a link."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
    try:
        os.mkdir(name, 0o777, dir_fd=fd)
    except FileExistsError:  # made meanwhile (by another thread, or as a link: the open below refuses that)
        pass
    return os.open(name, DIR_FLAGS, dir_fd=fd)


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


def open_file(path: Path, *, hard_links: bool = False) -> int:
    """Open a file without following a link at any step: a descriptor to read when it is a
    regular file with one name (any number with ``hard_links``, unless it is one of the state
    dir's files: :func:`_state_file`), else an ``O_PATH`` descriptor of what is there, which
    ``fstat`` reads and nothing else can (the caller checks ``fstat`` and refuses it).

    The file is first opened with ``O_PATH`` (no open of the file itself: a FIFO does not
    block, a device driver is not called) and read only through that very inode
    (``/proc/self/fd``). Closing a readable descriptor of a file drops every POSIX lock this
    process holds on it, and SQLite's locks are POSIX locks: a hard link to the service's
    journal or search index dropped into sources/ (or in place of manifest.json, an archive
    copy …), opened and closed to be refused, left the live databases unlocked for every other
    kbwatch command (the next one deleted the service's write-ahead log). An ``O_PATH``
    descriptor's close drops no lock. Without ``/proc`` the file is opened again by name, in
    its folder's descriptor, and kept only when it is the inode checked."""
    pfd = _open_path(path)
    try:
        st = os.fstat(pfd)
        if stat.S_ISLNK(st.st_mode):  # O_PATH | O_NOFOLLOW opens the link itself
            raise LinkedFile(errno.ELOOP, f"{path.name} is a symbolic link; kbwatch does not follow it", path.name)
        if not stat.S_ISREG(st.st_mode) or (st.st_nlink > 1 and (not hard_links or _state_file(st))):
            fd, pfd = pfd, -1
            return fd  # O_PATH: the caller's fstat refuses it
        return _reopen(pfd, path, st)
    finally:
        if pfd >= 0:
            os.close(pfd)


def _open_path(path: Path) -> int:
    """An ``O_PATH | O_NOFOLLOW`` descriptor of ``path``, reached as :func:`open_file` says."""
    where = split_under_root(path)
    if where is not None and len(where[1]) > 1 and _OPENAT2 is not None and path.name == where[1][-1] \
            and "." not in where[1] and ".." not in where[1] and _anchor(where[0], where[1]) is None:
        fd = _beneath_root(where[0], "/".join(where[1]), PATH_FLAGS)
        if fd is not None:
            return fd
    return _open_named(path, PATH_FLAGS)


def _open_named(path: Path, flags: int) -> int:
    """``path`` opened by its name in its folder's descriptor (reached without following links)."""
    with folder(path.parent) as dfd:
        try:
            return os.open(path.name, flags, dir_fd=dfd)
        except OSError as exc:
            if exc.errno in LINK_ERRNOS:
                raise LinkedFile(exc.errno, f"{path.name} is a symbolic link; kbwatch does not follow it",
                                 path.name) from None
            raise


def _reopen(pfd: int, path: Path, st: os.stat_result) -> int:
    """A readable descriptor of the inode ``pfd`` holds (``O_NONBLOCK``, as it always was)."""
    global _PROC_FD
    if _PROC_FD:
        try:
            return os.open(f"/proc/self/fd/{pfd}", FILE_FLAGS & ~os.O_NOFOLLOW)
        except FileNotFoundError:
            _PROC_FD = False  # no /proc mounted after all
    fd = _open_named(path, FILE_FLAGS)  # no /proc: by name again, kept only if it is that inode
    again = os.fstat(fd)
    if (again.st_dev, again.st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        raise FileNotFoundError(errno.ENOENT, f"{path.name} was replaced while it was opened", str(path))
    return fd


def is_path_descriptor(fd: int) -> bool:
    """Whether ``fd`` is an ``O_PATH`` descriptor (:func:`open_file` gave no readable one)."""
    o_path = getattr(os, "O_PATH", 0)
    return bool(o_path) and bool(fcntl.fcntl(fd, fcntl.F_GETFL) & o_path)


_PROC_FD = sys.platform.startswith("linux") and os.path.isdir("/proc/self/fd")
_STATE_DIRS: list[str] = []  # state dirs of the knowledge bases opened in this process


def register_state(state: Path) -> None:
    """The state dir of a knowledge base this process opened (its journal, index and locks)."""
    form = os.path.abspath(state)
    if form not in _STATE_DIRS:
        _STATE_DIRS.append(form)


def _state_file(st: os.stat_result) -> bool:
    """Whether the inode ``st`` describes is a file directly in a registered state dir (the
    journal, the search index, their -wal and -shm files, the lock files): such a file is never
    opened for reading under another name, or closing it would drop this process's SQLite locks."""
    for state in _STATE_DIRS:
        try:
            entries = list(os.scandir(state))
        except OSError:
            continue
        for entry in entries:
            try:
                est = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if (est.st_dev, est.st_ino) == (st.st_dev, st.st_ino):
                return True
    return False


class NotRegularFile(OSError):
    """The path names a FIFO, a device, a socket or a folder where kbwatch expects one of its files."""


class HardLinkedFile(Escape):
    """The file has another name (a hard link), possibly outside the root: it is not read."""


class OversizedFile(NotRegularFile):
    """One of kbwatch's own small files (manifest.json, project.md …) is far larger than kbwatch
    ever writes it: planted (a sparse file costs its maker no disk), it is not read."""


# kbwatch's own project files, read whole and parsed in memory: a sparse 1 GB project.md planted by
# anyone who can write to the project folder cost the service 5 GB of memory (and was written back
# as 1 GB of real data). 64 MB is a manifest of about 90,000 documents.
OWN_FILE_MAX_BYTES = 64 * 1024 * 1024
_OWN_FILE_NAMES = frozenset({"manifest.json", "project.md", "KNOWLEDGE.md", "reviews.json"})


def _own_file_bound(path: Path) -> int | None:
    """The size bound of ``path`` when it is one of the project files above or a run record."""
    if path.name in _OWN_FILE_NAMES or (path.suffix == ".json" and path.parent.name == "runs"):
        return OWN_FILE_MAX_BYTES
    return None


def open_regular(path: Path | str, *, hard_links: bool = False) -> int:
    """A blocking read-only descriptor of one of kbwatch's own files (manifest.json, project.md,
    KNOWLEDGE.md, parsed/…, runs/…, archive/…), opened like a source (:func:`open_file`): no
    symbolic link is followed at any step below the root, and only a regular file is accepted.
    Anyone who can write to the project folder can replace such a file with a link to a file
    elsewhere; kbwatch would otherwise read it with its own rights and pass it on (into project.md
    by ``rebuild``, into the index, to ``ask`` and the MCP door). The caller closes it.

    A file with another name (a hard link: ``st_nlink > 1``) is refused as sources/ refuses one
    (:data:`kbwatch.pipeline.sources.HARD_LINK_REFUSAL`): linked into parsed/ from a file elsewhere on
    the same file system, it would be served as a document. kbwatch writes these files by atomic
    replacement, so its own have one name; ``hard_links=True`` for archive/, whose copies may share
    the intake's snapshot.

    Raises :class:`LinkedFile` / :class:`Escape` (a link on the way), :class:`HardLinkedFile`,
    :class:`NotRegularFile` (:class:`OversizedFile`: a project file or run record over
    ``OWN_FILE_MAX_BYTES``), FileNotFoundError, or another OSError: all ``OSError``, so a caller that
    treats an unreadable file as missing does the same for a planted link.
    """
    path = Path(path)
    fd = open_file(path, hard_links=hard_links)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(errno.EINVAL, f"{path.name} is not a regular file; kbwatch does not read it",
                                 str(path))
        if st.st_nlink > 1 and not hard_links:
            raise HardLinkedFile(errno.EMLINK, f"{path.name} has another name (a hard link); kbwatch does not "
                                 "read it", str(path))
        bound = _own_file_bound(path)
        if bound is not None and st.st_size > bound:
            raise OversizedFile(errno.EFBIG, f"{path.name} is {st.st_size / 1048576:.0f} MB, far more than kbwatch "
                                f"writes there (at most {bound // 1048576} MB); kbwatch does not read it", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_text(path: Path | str, errors: str = "strict", limit: int = -1) -> str:
    """:func:`open_regular`'s file as text, read as ``Path.read_text(encoding="utf-8", errors=errors)``
    does (universal newlines); ``limit``: at most that many characters."""
    with open(open_regular(path), encoding="utf-8", errors=errors) as fh:
        return fh.read(limit)


def read_bytes(path: Path | str) -> bytes:
    """:func:`open_regular`'s file as bytes (for a hash of exactly what was read)."""
    with open(open_regular(path), "rb") as fh:
        return fh.read()


def sha256_hex(path: Path | str, *, hard_links: bool = False) -> str:
    """SHA-256 of :func:`open_regular`'s file, read in pieces (an archive copy may be large)."""
    with open(open_regular(path, hard_links=hard_links), "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


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
