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


def durable_copy(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` (temp + fsync + rename), keeping mtime."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(src, "rb") as fin, open(tmp, "wb") as fout:
            shutil.copyfileobj(fin, fout, CHUNK)
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
    fsync_dir(dst.parent)


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
