"""Durable file operations: atomic writes, fsync'd copies, hashing, clocks."""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path

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


def atomic_write(path: Path, data: str | bytes, fsync: bool = True) -> None:
    """Write ``data`` to ``path`` through a temp file + fsync + rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(raw)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    if fsync:
        fsync_dir(path.parent)


def copy_file(src: Path, dst: Path, fsync: bool = False) -> None:
    """Copy ``src`` to ``dst`` through a temp file + rename, keeping mtime.

    Without ``fsync`` the caller makes it durable later (see
    ``ProjectSession.durable``), so many files share one round of fsyncs.
    """
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(src, "rb") as fin, open(tmp, "wb") as fout:
            shutil.copyfileobj(fin, fout, CHUNK)
            if fsync:
                fout.flush()
                os.fsync(fout.fileno())
        shutil.copystat(src, tmp, follow_symlinks=False)
        os.replace(tmp, dst)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    if fsync:
        fsync_dir(dst.parent)


def fsync_paths(paths) -> None:
    """fsync many files and then their folders, several at a time (a disk
    serves parallel fsyncs far faster than a serial chain)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(path):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return os.path.dirname(path)

    paths = list(paths)
    if len(paths) <= 2:
        dirs = {d for d in map(one, paths) if d}
    else:
        with ThreadPoolExecutor(max_workers=min(16, len(paths))) as pool:
            dirs = {d for d in pool.map(one, paths) if d}
    for d in dirs:
        fsync_dir(Path(d))


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


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


def monotonic() -> float:
    return time.monotonic()
