"""What is waiting in a project's sources/: walking, ignoring, naming.

Only regular files with one name are taken. Symlinks, hard links, FIFOs,
sockets and devices are reported as refused (never followed or opened). Names
with bytes that are not UTF-8 or with control characters are refused with a
message asking for a rename; ignore patterns and dot-files are skipped
silently. Folders nested so deep that their path under sources/ is longer
than :data:`MAX_FOLDER_BYTES` are not entered (their files would have paths
the system calls refuse), with one warning per folder.
"""

from __future__ import annotations

import collections
import fnmatch
import functools
import os
import re
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from kbwatch.pipeline.lazylog import logger

# A folder in sources/ whose path under sources/ is longer than this (UTF-8 bytes) is not entered.
# With the project's name (at most 255 bytes), "archive/" and a file name (255) this keeps every
# path kbwatch makes well inside Linux's PATH_MAX (4,096 bytes) for a root path of up to ~2,400
# bytes; anyone who can write to sources/ can nest folders without end (`mkdir -p` 450 levels
# made the walk fail with "File name too long" and stopped `ingest` and `watch` for everyone).
MAX_FOLDER_BYTES = 1024
TOO_DEEP = (f"its folder's path under sources/ is longer than {MAX_FOLDER_BYTES:,} bytes "
            "(folders nested too deep); move the file up")


@dataclass
class SourceEntry:
    path: Path  # absolute
    rel: str  # relative to sources/, "/"-separated
    refused: str | None = None  # reason when the entry cannot be taken
    size: int = 0
    mtime_ns: int = 0


@functools.lru_cache(maxsize=32)
def _ignore_matcher(patterns: tuple[str, ...]):
    """One regex for all the patterns: ``fnmatchcase(name, p)`` is ``re.match(translate(p), name)``
    (each translation ends in ``\\Z``), so the alternation matches when any pattern does."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match


def is_ignored(name: str, patterns: list[str]) -> bool:
    if name.startswith("."):
        return True
    if not patterns:
        return False
    return _ignore_matcher(tuple(patterns))(name) is not None


CONTROL_CHARS = "\x00-\x1f\x7f"  # (a regex class's body) what no name kbwatch takes may hold
_CONTROL = re.compile(f"[{CONTROL_CHARS}]")


def text_fault(name: str, control: re.Pattern = _CONTROL) -> str | None:
    """What keeps a name from being printed as it is: ``"utf-8"`` (it is not valid UTF-8: a
    byte the file system gave Python undecoded), ``"control"`` (it holds a character of
    ``control``), or None."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "utf-8"
    return "control" if control.search(name) else None


def name_problem(rel: str) -> str | None:
    """Why a file name cannot be used, or None."""
    fault = text_fault(rel)
    if fault == "utf-8":
        return "the file name is not valid UTF-8; rename it"
    if fault == "control":
        return "the file name contains a newline or control character; rename it"
    if folder_too_deep(rel.rpartition("/")[0]):
        return TOO_DEEP
    return None


def folder_too_deep(folder_rel: str) -> bool:
    """Whether a folder (its path under sources/, no trailing slash) is too deep to enter."""
    return len(folder_rel) > MAX_FOLDER_BYTES // 4 and len(
        folder_rel.encode("utf-8", "surrogateescape")) > MAX_FOLDER_BYTES


_warned: collections.OrderedDict[str, None] = collections.OrderedDict()  # bounded: the last 256 folders
_warned_lock = threading.Lock()  # walks run in the service's loop and in runner threads


def _warn_once(folder: Path, why: str) -> None:
    """One warning per folder the walk does not enter (the service walks every 5 minutes)."""
    key = str(folder)
    with _warned_lock:
        if key in _warned:
            return
        _warned[key] = None
        if len(_warned) > 256:
            _warned.popitem(last=False)
    logger.warning("{}: not entered: {}", key[:200] + ("…" if len(key) > 200 else ""), why)


def split_name(rel: str) -> tuple[str, str]:
    """``sub/技术方案.pdf`` → (``sub/技术方案``, ``.pdf``)."""
    head, _, base = rel.rpartition("/")
    stem, ext = os.path.splitext(base)
    if not stem:  # ".pdf" alone
        stem, ext = base, ""
    return (f"{head}/{stem}" if head else stem), ext


def classify(path: Path) -> tuple[str | None, os.stat_result | None]:
    """(refusal reason or None, lstat) for a path in sources/."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "vanished", None
    return file_refusal(st), st


LINK_REFUSAL = "symbolic links are not followed; copy the file itself into sources/"
HARD_LINK_REFUSAL = ("a hard link (the same file has another name, possibly outside this folder) is not taken; "
                     "copy the file itself into sources/")


def file_refusal(st: os.stat_result) -> str | None:
    """Why the file of this ``lstat``/``fstat`` is not taken, or None.

    Besides its type (:func:`mode_refusal`): a regular file with more than one name.
    A hard link needs no permission on the folders of its other name, so anyone who can
    write to sources/ could otherwise bring in (and have published) a file that lives
    elsewhere on the same file system; the service would read it with its own rights."""
    return mode_refusal(st.st_mode) or (HARD_LINK_REFUSAL if st.st_nlink > 1 else None)


def mode_refusal(mode: int) -> str | None:
    """Why a file of this type (``st_mode``) is not taken, or None for a regular file."""
    if stat.S_ISLNK(mode):
        return LINK_REFUSAL
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe) is not a document"
    if stat.S_ISSOCK(mode):
        return "a socket is not a document"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device is not a document"
    if not stat.S_ISREG(mode):
        return "not a regular file"
    return None


def walk_sources(project: Path, patterns: list[str]) -> list[SourceEntry]:
    """Every candidate under ``<project>/sources/``, sorted by relative path."""
    base = project / "sources"
    out: list[SourceEntry] = []
    stack = [(base, "")]  # (folder, its path relative to sources/ with a trailing "/")
    while stack:
        folder, prefix = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:  # unreadable (permissions, I/O): the other folders are still walked
            _warn_once(folder, exc.strerror or str(exc))
            continue
        for entry in entries:
            name = entry.name
            if is_ignored(name, patterns):
                continue
            path = Path(entry.path)
            rel = prefix + name  # path.relative_to(base).as_posix(), without the Path arithmetic
            if entry.is_dir(follow_symlinks=False):
                if folder_too_deep(rel):
                    _warn_once(path, f"its path under sources/ is longer than {MAX_FOLDER_BYTES:,} bytes")
                else:
                    stack.append((path, rel + "/"))
                continue
            reason, st = classify(path)
            if reason == "vanished":
                continue
            if reason is None:
                reason = name_problem(rel)
            out.append(
                SourceEntry(
                    path=path,
                    rel=rel,
                    refused=reason,
                    size=st.st_size if st else 0,
                    mtime_ns=st.st_mtime_ns if st else 0,
                )
            )
    out.sort(key=lambda e: e.rel)
    return out


def project_of(root: Path, path: Path) -> tuple[Path, str] | None:
    """(project dir, rel under sources/) for a path inside some ``<root>/<p>/sources/``."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return None
    if len(parts) < 3 or parts[1] != "sources":
        return None
    return root / parts[0], "/".join(parts[2:])
