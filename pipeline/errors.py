"""Exceptions that carry an outcome: how a stage stops or fails a run.

Only the runner has a catch-all; everything else raises one of these.
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """What happened to one file (``runs --json`` ``outcome``)."""

    DONE = "done"
    DUPLICATE = "duplicate"
    CONFLICT = "conflict"
    FAILED = "failed"
    RUNNING = "running"
    QUEUED = "queued"


class KbwatchError(Exception):
    """Base class of kbwatch's own errors."""


class ConfigError(KbwatchError):
    """The configuration or a command-line argument is wrong (exit 2)."""


class StopRun(KbwatchError):
    """A stage ends the run early with an outcome (conflict, duplicate)."""

    def __init__(self, outcome: Outcome, message: str, blocked_by: list[str] | None = None):
        super().__init__(message)
        self.outcome = Outcome(outcome)
        self.message = message
        # project-relative paths: an unchanged file is not retried while any exists
        self.blocked_by = list(blocked_by or [])


class StageError(KbwatchError):
    """A stage failed; ``reason`` is a short machine-friendly word."""

    transient = False

    def __init__(self, message: str, reason: str = "error"):
        super().__init__(message)
        self.message = message
        self.reason = reason


# reasons the retry rules treat apart (KnowledgeBase.decide)
CANNOT_OPEN = "cannot-open"  # the file would not open: taken again once it opens, not on a timer
BAD_MANIFEST = "bad manifest"  # the project's manifest.json, not the file: taken again once it changes
BAD_PROJECT_MD = "bad project.md"  # the same for project.md
PROJECT_REPLACED = "project replaced"  # the project folder was deleted or replaced during the run
DISK_FULL = "disk full"  # no room to write: taken again on the backoff timer, never given up


def is_disk_full(exc: BaseException) -> bool:
    """A write refused for want of room (ENOSPC, EDQUOT, SQLite's "database or disk is full")."""
    import errno
    import sqlite3

    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return isinstance(exc, sqlite3.OperationalError) and "disk is full" in str(exc)


class TransientError(StageError):
    """Retry later with backoff: file locked, permission flapping, disk busy."""

    transient = True


class PermanentError(StageError):
    """Will fail again until the file changes: corrupt, encrypted, unsupported."""
