"""The committed parsed text of a listed document, kept while a new version of it is written.

The archive stage writes ``parsed/<name>.md`` before the commit. For a document the manifest
already lists, that replaced the committed version's text: a run killed before its commit (or
failed in a later stage), whose source then left ``sources/``, left the new version's text in
``parsed/`` for good, under the old version's manifest entry. ``ask`` cited it as the archived
version, and its findings were never recorded (KNOWLEDGE.md said ``ready`` over an injection).

So before the stage replaces a listed document's text, :func:`keep` copies it to a hidden
``.<name>.<8 hex>.prev`` beside it (a copy, not a hard link: readers refuse a parsed file with
two names). The copy is dropped (:func:`drop`) once the commit is recorded, put back
(:func:`put_back`) when the run does not end ``done``, and at the next start :func:`settle`
keeps whichever of the file and its copies holds the manifest's latest version (the
``archived`` line of its header). Every step goes through the folder's descriptor, reached
without following links (:mod:`kbwatch.pipeline.confine`).
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from pathlib import Path

from kbwatch.pipeline import confine
from kbwatch.pipeline.formats.parsed import comment_safe, read_header
from kbwatch.pipeline.fsutil import atomic_write_with
from kbwatch.pipeline.lazylog import logger

PREV_RE = re.compile(r"^\..+\.[0-9a-f]{8}\.prev$")
_NAME_MAX = 255 - len(".") - len(".0123abcd.prev")
_CHUNK = 1 << 20
_HEAD_BYTES = 4096


def _prev_name(name: str) -> str:
    raw = name.encode("utf-8")
    if len(raw) > _NAME_MAX:  # cut between UTF-8 characters; the hex keeps it unique
        name = raw[:_NAME_MAX].decode("utf-8", "ignore") or "x"
    return f".{name}.{secrets.token_hex(4)}.prev"


def keep(target: Path) -> Path | None:
    """Copy ``target`` (a regular file with one name) to a new hidden ``.prev`` beside it; its
    path, or None when there is nothing to keep (no file there, or not one kbwatch would read)."""
    try:
        fd = confine.open_regular(target)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a link or a hard link planted there: nothing of ours to keep
        logger.debug("{} not kept before its new version: {}", target, exc)
        return None
    backup = target.with_name(_prev_name(target.name))
    try:
        def fill(fh) -> int:
            n = 0
            while chunk := os.read(fd, _CHUNK):
                n += fh.write(chunk)
            return n
        atomic_write_with(backup, fill)  # durable before the text it keeps is replaced
    finally:
        os.close(fd)
    return backup


def put_back(backup: Path, target: Path) -> None:
    """The kept text back in place of what the run wrote (one rename)."""
    with confine.folder(target.parent) as dfd:
        os.rename(backup.name, target.name, src_dir_fd=dfd, dst_dir_fd=dfd)


def drop(backup: Path) -> None:
    try:
        with confine.folder(backup.parent) as dfd:
            os.unlink(backup.name, dir_fd=dfd)
    except FileNotFoundError:
        pass


def archived_of(path: Path) -> str | None:
    """The ``archived`` line of a parsed file's header, as written (None: no such file, or no such
    line)."""
    try:
        fd = confine.open_regular(path)
    except (OSError, ValueError):
        return None
    try:
        head = os.read(fd, _HEAD_BYTES).decode("utf-8", "replace")
    finally:
        os.close(fd)
    return read_header(head).get("archived")


def settle(project: Path, manifest) -> tuple[int, int]:
    """After a start: for each ``.prev`` copy a run left in ``parsed/``, keep whichever of its
    document's parsed file and the copy holds the manifest's latest version; drop the copy.
    Returns (texts put back, copies dropped). Call before any run starts (under the service lock)."""
    parsed = project / "parsed"
    if not parsed.is_dir() or parsed.is_symlink():
        return 0, 0
    # the header's form of an archived path (comment_safe) -> (the document's parsed path, latest's header form)
    by_archived: dict[str, tuple[str, str]] = {}
    for name in manifest.names():
        entry = manifest.get(name) or {}
        versions = entry.get("versions") or []
        where = entry.get("parsed")
        if entry.get("removed") or not versions or not isinstance(where, str) or not where.startswith("parsed/"):
            continue
        latest = comment_safe(str(versions[-1].get("archived") or ""))
        for v in versions:
            if v.get("archived"):
                by_archived[comment_safe(str(v["archived"]))] = (where, latest)
    restored = dropped = 0
    for path in sorted(parsed.rglob(".*.prev")):
        if not PREV_RE.match(path.name):
            continue
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            holds = archived_of(path)
            doc = by_archived.get(holds) if holds else None
            if doc is not None and holds == doc[1]:
                target = project / doc[0]
                if target.parent == path.parent and archived_of(target) != doc[1]:
                    put_back(path, target)
                    restored += 1
                    logger.warning("{}: the text of its last committed version was put back (a new version was "
                                   "interrupted before its commit)", doc[0])
                    continue
            drop(path)
            dropped += 1
        except (OSError, ValueError) as exc:  # (a NUL or a lone surrogate in a planted name: ValueError)
            logger.warning("could not settle {}: {}", path, exc)
    return restored, dropped
