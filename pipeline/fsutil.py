"""Durable file operations: atomic writes, fsync'd copies, the state folder, clocks."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
import time
import unicodedata
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO, Callable

from kbwatch.pipeline import confine

CHUNK = 1024 * 1024


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


TEMP_NAME_MAX = 255 - len(".") - len(".0123abcd.tmp")  # room for a target's name in its temp name


def _temp_for(path: Path) -> Path:
    """A hidden temp name next to ``path`` (its folder created), swept after a crash.

    ``.<name>.<8 hex>.tmp`` (``kbwatch.pipeline.kb.TEMP_RE``); a name too long for the
    255-byte limit is cut between UTF-8 characters (the hex keeps it unique).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.with_name(_temp_name(path.name))


def _temp_name(name: str) -> str:
    """The temp file's name for a target named ``name`` (see :func:`_temp_for`)."""
    raw = name.encode("utf-8", "surrogateescape")
    if len(raw) > TEMP_NAME_MAX:
        name = raw[:TEMP_NAME_MAX].decode("utf-8", "ignore") or "x"
    return f".{name}.{secrets.token_hex(4)}.tmp"


def _discard(tmp: Path, dfd: int | None = None) -> None:
    try:
        if dfd is None:
            tmp.unlink()
        else:
            os.unlink(tmp.name, dir_fd=dfd)
    except OSError:
        pass


def _confined_folder(path: Path) -> int | None:
    """A descriptor of ``path``'s folder (created) reached without following links
    when ``path`` is below a registered root (see kbwatch.pipeline.confine), else None."""
    return confine.open_dir_if_confined(path.parent, create=True)


def write_all(fd: int, data) -> None:
    """Write all of ``data`` (bytes-like) to the descriptor ``fd`` (``os.write`` may write less)."""
    with memoryview(data) as view:
        while view:
            view = view[os.write(fd, view):]


class RawOut:
    """A new file's descriptor with what the fills use of a binary file (``write``, ``flush``,
    ``fileno``, ``close``, ``with``), without what ``open``/``os.fdopen`` add on every open: an
    ``fstat``, an ``isatty`` and a ``seek`` (three system calls a file written, each one a moment
    the calling thread lets go of the GIL). Writes smaller than ``BUFFER`` are gathered."""

    BUFFER = 64 * 1024

    def __init__(self, fd: int):
        self._fd = fd
        self._buf = bytearray()
        self.closed = False

    def write(self, data) -> int:
        n = len(data)
        if len(self._buf) + n < self.BUFFER:
            self._buf += data
        else:
            self.flush()
            write_all(self._fd, data)
        return n

    def flush(self) -> None:
        if self._buf:
            write_all(self._fd, self._buf)
            self._buf.clear()

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.flush()
        finally:
            os.close(self._fd)

    def __enter__(self) -> "RawOut":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_all(path: Path | str) -> bytes:
    """``Path(path).read_bytes()`` with one ``fstat`` and no ``isatty``/``seek`` (see :class:`RawOut`)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        data = os.read(fd, size + 1) if size else b""
        if len(data) <= size:  # short (or grown): read on to the end, as read_bytes does
            rest = [data]
            while chunk := os.read(fd, CHUNK):
                rest.append(chunk)
            data = b"".join(rest)
        return data
    finally:
        os.close(fd)


def _temp_in(dfd: int, path: Path) -> tuple[Path, RawOut]:
    """(temp path, open file) for a new temp file next to ``path`` in the folder ``dfd``."""
    # the temp name only depends on the file name: nothing is created by path
    tmp = path.with_name(_temp_name(path.name))
    fd = os.open(tmp.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dfd)
    return tmp, RawOut(fd)


def _close(dfd: int | None) -> None:
    if dfd is not None:
        os.close(dfd)


def _replace(tmp: Path, path: Path, dfd: int | None) -> None:
    if dfd is None:
        os.replace(tmp, path)
    else:
        os.replace(tmp.name, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)


def _write_temp(path: Path, data: str | bytes, fsync: bool, dfd: int | None = None) -> Path:
    """Write ``data`` to a new temp file next to ``path`` (in the folder ``dfd``
    when given); returns the temp path."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return _fill_temp(path, lambda fh: fh.write(raw), fsync, dfd)[0]


def _fill_temp(path: Path, fill: Callable[[BinaryIO], int], fsync: bool, dfd: int | None) -> tuple[Path, int]:
    """A new temp file next to ``path`` (in the folder ``dfd`` when given) that ``fill``
    writes; returns the temp path and what ``fill`` returned."""
    if dfd is None:
        tmp = _temp_for(path)
        fh = open(tmp, "wb")
    else:
        tmp, fh = _temp_in(dfd, path)
    try:
        with fh:
            written = fill(fh)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
    except BaseException:
        _discard(tmp, dfd)
        raise
    return tmp, written


def atomic_write(path: Path, data: str | bytes, fsync: bool = True) -> None:
    """Write ``data`` to ``path`` through a temp file + fsync + rename.

    Below a registered root the folder is reached without following links
    and the temp file is written and renamed relative to its descriptor.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    atomic_write_with(path, lambda fh: fh.write(raw), fsync)


def atomic_write_with(path: Path, fill: Callable[[BinaryIO], int], fsync: bool = True) -> int:
    """:func:`atomic_write` of what ``fill`` writes to the open temp file (for content
    written in pieces); returns what ``fill`` returned."""
    dfd = _confined_folder(path)
    try:
        tmp, written = _fill_temp(path, fill, fsync, dfd)
        try:
            _replace(tmp, path, dfd)
        except BaseException:
            _discard(tmp, dfd)
            raise
        if fsync:
            _sync_folder(path.parent, dfd)
    finally:
        _close(dfd)
    return written


def _sync_folder(folder: Path, dfd: int | None) -> None:
    """Make a rename in ``folder`` durable: through its descriptor when it was reached confined."""
    if dfd is None:
        fsync_dir(folder)
    else:
        os.fsync(dfd)


def atomic_write_many(items: list[tuple[Path, str | bytes]], also_durable=()) -> None:
    """Atomically replace several files, all made durable in one round.

    Every new content goes to a temp file first; then the temp files and
    ``also_durable`` (files written earlier without fsync) are synced in one
    round (``fsync_paths``); only then is each temp file renamed over its
    target, and the folders are synced. A crash leaves every target either
    old or new, and no target is replaced before all the new data is on disk.
    """
    temps: list[tuple[Path, Path, int | None]] = []
    folders: dict[Path, int | None] = {}
    try:
        for path, data in items:
            if path.parent not in folders:
                folders[path.parent] = _confined_folder(path)
            dfd = folders[path.parent]
            temps.append((_write_temp(path, data, fsync=False, dfd=dfd), path, dfd))
        fsync_paths([*also_durable, *(tmp for tmp, _, _ in temps)])
        while temps:
            _replace(*temps[0])
            temps.pop(0)
    except BaseException:
        for tmp, _, dfd in temps:
            _discard(tmp, dfd)
        raise
    finally:
        for dfd in folders.values():
            _close(dfd)
    fsync_dirs({p.parent for p, _ in items})


def kept_mode(mode: int) -> int:
    """The permission bits a copy kept for the service (archive/, a snapshot) gets from its source:
    the source's, without set-user-ID, set-group-ID and sticky bits and without write for group and
    others, and readable by the service. The copy belongs to the service's account: a dropped file
    with mode 4755 kept as such became a program anyone runs as that account (root, often)."""
    return (stat.S_IMODE(mode) & 0o755) | stat.S_IRUSR


def copy_file(src: Path, dst: Path, fsync: bool = False) -> None:
    """Copy ``src`` to ``dst`` through a temp file + rename, keeping mtime.

    Without ``fsync`` the caller makes it durable later (see
    ``ProjectSession.durable``), so many files share one round of fsyncs.
    """
    dfd = _confined_folder(dst)
    try:
        if dfd is None:
            tmp = _temp_for(dst)
            fout = open(tmp, "wb")
        else:
            tmp, fout = _temp_in(dfd, dst)
        try:
            with open(src, "rb") as fin, fout:
                shutil.copyfileobj(fin, fout, CHUNK)
                if fsync:
                    fout.flush()
                    os.fsync(fout.fileno())
                if dfd is not None:  # copystat by descriptor: mode bits and times
                    st = os.fstat(fin.fileno())
                    os.chmod(fout.fileno(), kept_mode(st.st_mode))
                    os.utime(fout.fileno(), ns=(st.st_atime_ns, st.st_mtime_ns))
            if dfd is None:
                shutil.copystat(src, tmp, follow_symlinks=False)
                os.chmod(tmp, kept_mode(os.stat(tmp).st_mode))
            _replace(tmp, dst, dfd)
        except BaseException:
            _discard(tmp, dfd)
            raise
        if fsync:
            _sync_folder(dst.parent, dfd)
    finally:
        _close(dfd)


def link_or_copy(src: Path, dst: Path) -> None:
    """Publish ``src`` (a private file no one writes again) as ``dst``: a hard link
    when both are on one filesystem, else a copy; through a temp name + rename,
    relative to ``dst``'s folder reached without following links when confined."""
    dfd = _confined_folder(dst)
    if dfd is None:
        copy_file(src, dst)
        return
    try:
        tmp = dst.with_name(_temp_name(dst.name))
        try:
            os.link(src, tmp.name, dst_dir_fd=dfd, follow_symlinks=False)
        except OSError:  # another filesystem (EXDEV), or links not supported
            copy_file(src, dst)
            return
        try:
            _replace(tmp, dst, dfd)
        except BaseException:
            _discard(tmp, dfd)
            raise
    finally:
        _close(dfd)


SYNCFS_MIN_FILES = 8  # from this many files on, one syncfs(2) beats a round of fsyncs


def _load_syncfs():
    """libc's ``syncfs(fd)`` (Linux), or None."""
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fn = libc.syncfs
        fn.argtypes = [ctypes.c_int]
        fn.restype = ctypes.c_int
        return fn
    except (OSError, AttributeError):
        return None


_SYNCFS = _load_syncfs() if os.environ.get("KBWATCH_NO_SYNCFS") != "1" else None


def _syncfs_all(paths: list) -> bool:
    """Make every file in ``paths`` (and its folder entry) durable with one
    ``syncfs`` per filesystem. False when syncfs is unavailable or failed
    (the caller then fsyncs file by file)."""
    if _SYNCFS is None:
        return False
    # a file lives on its folder's filesystem: one stat per folder, not per file
    by_dev: dict[int, str] = {}
    for folder in {os.path.dirname(os.fspath(path)) or "." for path in paths}:
        try:
            by_dev.setdefault(os.stat(folder).st_dev, folder)
        except FileNotFoundError:
            continue
    for path in by_dev.values():
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            continue
        try:
            if _SYNCFS(fd) != 0:
                return False
        finally:
            os.close(fd)
    return True


def fsync_dirs(dirs) -> None:
    """Make the entries of these folders durable (one syncfs when there are many)."""
    dirs = sorted(set(map(Path, dirs)))
    if len(dirs) >= SYNCFS_MIN_FILES and _syncfs_all(dirs):
        return
    for d in dirs:
        fsync_dir(d)


def fsync_paths(paths) -> None:
    """Make many new files and their folder entries durable.

    Many files at once: one ``syncfs(2)`` of their filesystem, which flushes
    all of them and their directories in a single pass (Linux; several times
    faster than per-file fsyncs, and it spares the kernel and the GIL
    thousands of calls). Few files, or no syncfs: fsync each file and then
    its folder, several at a time (a disk serves parallel fsyncs far faster
    than a serial chain).
    """
    from concurrent.futures import ThreadPoolExecutor

    def one(path):
        try:  # no link followed; a file of the state dir under another name is not opened to read
            fd = confine.open_file(Path(path), hard_links=True)
        except FileNotFoundError:
            return None
        except confine.Escape:  # swapped for a link since it was written: nothing of ours to sync there
            return os.path.dirname(path)
        try:
            if not confine.is_path_descriptor(fd):
                os.fsync(fd)
        finally:
            os.close(fd)
        return os.path.dirname(path)

    paths = list(paths)
    if len(paths) >= SYNCFS_MIN_FILES and _syncfs_all(paths):
        return
    if len(paths) <= 2:
        dirs = {d for d in map(one, paths) if d}
    else:
        with ThreadPoolExecutor(max_workers=min(16, len(paths))) as pool:
            dirs = {d for d in pool.map(one, paths) if d}
    for d in dirs:
        fsync_dir(Path(d))


def linked_state_dir(root: Path, state: Path) -> str | None:
    """Why the state folder may not be used when it lies below the root and it, or a folder on the
    way to it, is a symbolic link (anyone who can write to the shared root could plant one, and
    the journal, the lock, the index and the snapshots would be written where it points); else
    None. A state folder set outside the root (an absolute ``[service] state_dir``) is the
    administrator's: not checked."""
    try:
        rel = state.relative_to(root)
    except ValueError:
        return None
    path = root
    for part in rel.parts:
        path = path / part
        if os.path.islink(path):
            try:
                target = os.readlink(path)
            except OSError:
                target = "?"
            return (f"the state dir {display_path(state)} is reached through the symbolic link "
                    f"{display_path(path)} (to {display_path(target)}): kbwatch writes no state through a link "
                    "in the shared root; remove the link, or set [service] state_dir to the real folder "
                    "(an absolute path)")
    return None


def make_state_dir(state: Path) -> None:
    """Create the state folder (and its parents) when missing, never writable by group or others
    whatever the umask (the systemd unit's ``UMask=0002`` is for the shared root): the journal, the
    index, the locks and the private snapshots (``intake/``) of the files being taken live there,
    and "what was read is what is published" holds only if nobody else can swap those. A folder that
    already exists is left as it is (``kbwatch doctor`` warns when others can write to it)."""
    if state.is_dir():
        return
    state.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(state, 0o755)  # the umask can only take bits away
    except FileExistsError:
        pass


def now_local(tz: str = "local") -> datetime:
    if tz == "utc":
        return datetime.now(timezone.utc)
    return datetime.now().astimezone()


def iso_minute(dt: datetime) -> str:
    """``2026-02-18T16:00`` as in manifest.json."""
    return dt.strftime("%Y-%m-%dT%H:%M")


def human_minute(dt: datetime) -> str:
    """``2026-02-18 16:00`` as in project.md and parsed headers."""
    return dt.strftime("%Y-%m-%d %H:%M")


def utc_stamp() -> str:
    """``20260218T162500Z``: sortable UTC stamp for run ids."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def utc_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id(kind: str = "ingest") -> str:
    return f"{kind}-{utc_stamp()}-{secrets.token_hex(4)}"


def display_path(path: str | os.PathLike) -> str:
    """A printable form of a path whose bytes may not be valid UTF-8."""
    text = os.fspath(path)
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _is_variation_selector(ch: str) -> bool:
    return 0xFE00 <= ord(ch) <= 0xFE0F or 0xE0100 <= ord(ch) <= 0xE01EF


def printable(text: str, keep: str = "") -> str:
    """``text`` safe to print on a terminal: control characters (an ESC starts a terminal
    escape sequence; a line break in a name would start a line that reads as a record of its
    own), bidirectional and other format characters (U+202E reverses what follows),
    private-use, unassigned and variation-selector ones shown as ``<U+XXXX>``; the characters
    in ``keep`` and spaces stay. File names come from anyone who can write to the shared
    folder. Text that may span lines passes ``keep="\n"`` (the log indents its continuation
    lines; a TAB, which a name may hold, is shown as ``<U+0009>`` so a log read as
    tab-separated fields keeps its columns); finding excerpts keep ``\n\r\t``."""
    if text.isascii() and (text.isprintable() or not any(ch < " " and ch not in keep or ch == "\x7f" for ch in text)):
        return text
    out = []
    for ch in text:
        if (ch.isprintable() and not _is_variation_selector(ch)) or ch in keep or unicodedata.category(ch) == "Zs":
            out.append(ch)
        else:
            out.append(f"<U+{ord(ch):04X}>")
    return "".join(out)


# characters that change what a reader sees or hide text from people but not from a model: tag
# characters (U+E0000-E007F, "ASCII smuggling") and bidirectional embeddings, overrides and
# isolates (U+202A-202E, U+2066-2069). parsed/ has them removed where the scanner found them;
# a file's name keeps them (it is how the file is addressed), so what a model is given shows
# them as <U+XXXX> (show_hidden) and what it gives back is read either way (unshow_hidden)
_HIDDEN_RE = re.compile("[\U000E0000-\U000E007F\u202A-\u202E\u2066-\u2069]")
_SHOWN_RE = re.compile(r"<U\+(E00[0-7][0-9A-F]|202[A-E]|206[6-9])>")


def show_hidden(value):
    """``value`` (a string, or dicts and lists of them) with every hidden character as ``<U+XXXX>``."""
    if isinstance(value, str):
        return _HIDDEN_RE.sub(lambda m: f"<U+{ord(m.group()):04X}>", value) if _HIDDEN_RE.search(value) else value
    if isinstance(value, dict):
        return {k: show_hidden(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [show_hidden(v) for v in value]
    return value


def unshow_hidden(text: str) -> str:
    """The reverse of :func:`show_hidden` for a string a model sends back (a citation, a name)."""
    return _SHOWN_RE.sub(lambda m: chr(int(m.group(1), 16)), text) if "<U+" in text else text


def monotonic() -> float:
    return time.monotonic()


def opens(path: Path) -> bool:
    """Whether the runner could open ``path`` for reading now. Only a regular file with one
    name is tried (never a FIFO or a device: opening one can block or act; never a hard link:
    closing a readable descriptor of the service's journal under another name drops its SQLite
    locks, see :func:`kbwatch.pipeline.confine.open_file`), without following a link; anything
    else, a link or a vanished file counts as yes: the runner refuses or records it without
    reading it."""
    try:
        fd = confine.open_file(Path(path))
    except (FileNotFoundError, confine.Escape):
        return True
    except OSError:
        return False
    os.close(fd)
    return True
