"""Logging with loguru: human lines to stderr, rotated files under <state_dir>/logs/.

The terminal gets one line per message, never a traceback: a logged
exception shows as its message plus where the traceback went. Tracebacks go
to the log file only, without the values of variables (``diagnose=False``)
unless ``--verbose`` asks for them; with ``--verbose`` the terminal shows
tracebacks too. :func:`log_internal_error` is how the CLI records a crash.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from kbwatch.pipeline.fsutil import printable
from kbwatch.pipeline.lazylog import logger, loguru_logger, when_loaded

_configured: list[int] = []
_last_setup: list[tuple] = []


def reopen_log_file() -> None:
    """Set logging up again as last time (the log file was deleted with the state dir)."""
    if _last_setup:
        setup_logging(*_last_setup[-1])


_log_file: list[Path] = []  # the file sink's path, when there is one
_verbose: list[bool] = [False]
_settings: list[dict | None] = [None]  # the settings logging was set up with

LOG_NAME = "kbwatch.log"
# messages are printed through fsutil.printable: a file name with an ESC or a U+202E in it
# (anyone can name a file in the shared folder) must not drive the terminal reading the log;
# and every line after a message's first is indented (CONTINUATION), so a name holding a line
# break cannot start a line that reads as a record of its own ("\n2026-… | ERROR | …")
CONTINUATION = "\n    "
FILE_FORMAT = "{time:YYYY-MM-DD HH:mm:ss.SSS} | {level: <7} | {process} | {extra[_shown]}"  # loguru adds the traceback


def _shown(record) -> None:
    record["extra"]["_shown"] = printable(record["message"], keep="\n").replace("\n", CONTINUATION)


def _file_format(record) -> str:
    _shown(record)
    return FILE_FORMAT + "\n{exception}"


def _terminal_format(record) -> str:
    """One line: the message, and where its traceback is when one was logged."""
    _shown(record)
    fmt = "<level>{level: <7}</level> {extra[_shown]}"
    if record["exception"] is not None:
        if _verbose[0]:
            return fmt + "\n{exception}"
        where = _log_file[0] if _log_file else None
        record["extra"]["_traceback_in"] = f" (traceback in {where})" if where else ""
        fmt += "{extra[_traceback_in]}"
    return fmt + "\n"


def _to_terminal(record) -> bool:
    return not record["extra"].get("file_only")


def current_log_file() -> Path | None:
    """The log file this process writes, if any (its sinks are added now if they were waiting)."""
    loguru_logger()
    return _log_file[0] if _log_file else None


def log_file_for(settings: dict | None) -> Path:
    """``<state_dir>/logs/kbwatch.log`` of these settings, or a file in the temp folder without them."""
    if settings and "_root" in settings:
        from kbwatch.pipeline.config import state_dir

        return state_dir(settings) / "logs" / LOG_NAME
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"kbwatch-{uid}" / LOG_NAME


class Trouble:
    """A trouble that goes on (a full disk, a journal refusing writes), said at most once every
    ``every`` seconds while it lasts and once more when it ends: :meth:`failed` and :meth:`ended`
    answer whether to say so now."""

    def __init__(self, every: float = 60.0):
        self.every = every
        self._said_at: float | None = None  # when it was last said; None while there is no trouble

    def failed(self) -> bool:
        now = time.monotonic()
        if self._said_at is None or now - self._said_at >= self.every:
            self._said_at = now
            return True
        return False

    def ended(self) -> bool:
        if self._said_at is None:
            return False
        self._said_at = None
        return True


class QuietFile:
    """loguru's own file sink (the configured rotation and retention), which says so once when it
    cannot write, instead of loguru printing a traceback to stderr for every line it drops: on a
    full disk that was a traceback a line, thousands of them, in the journal of the service's
    unit. It says so again at most once a minute while the trouble lasts, and once more when the
    log file takes lines again."""

    def __init__(self, sink):
        self._sink = sink
        self._trouble = Trouble()
        self._dropped = 0

    @classmethod
    def open(cls, path: Path, rotation, retention) -> "QuietFile | None":
        """One over loguru's ``FileSink``, or None when this loguru has no such class (then the
        path itself is the sink, as loguru documents)."""
        try:
            from loguru._file_sink import FileSink  # not public: checked, with a fallback
        except ImportError:  # pragma: no cover - another loguru
            return None
        return cls(FileSink(str(path), rotation=rotation, retention=retention, encoding="utf-8"))

    def write(self, message) -> None:
        try:
            self._sink.write(message)
        except OSError as exc:
            self._dropped += 1
            if self._trouble.failed():
                sys.stderr.write(f"kbwatch: cannot write the log file: {exc.strerror or exc}; "
                                 f"its lines are dropped until it can ({self._dropped} so far)\n")
            return
        if self._trouble.ended():
            sys.stderr.write(f"kbwatch: the log file takes lines again ({self._dropped} dropped)\n")
            self._dropped = 0

    def stop(self) -> None:
        try:
            self._sink.stop()
        except OSError:
            pass


def _file_sink(path: Path, level: str | int, rotation, retention, verbose: bool) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    sink = QuietFile.open(path, rotation, retention)
    options = dict(level=level, enqueue=False, format=_file_format, backtrace=verbose, diagnose=verbose)
    if sink is None:
        return logger.add(path, rotation=rotation, retention=retention, encoding="utf-8", **options)
    return logger.add(sink, colorize=False, **options)


def setup_logging(settings: dict | None, state: Path | None, verbose: bool = False, quiet: bool = False) -> None:
    """Log to the terminal and (with ``state``) to ``<state>/logs/kbwatch.log``. The sinks are
    added when something first logs (see :mod:`kbwatch.pipeline.lazylog`): a command that logs
    nothing never imports loguru."""
    _last_setup[:] = [(settings, state, verbose, quiet)]
    _verbose[0] = verbose
    _settings[0] = settings
    when_loaded("setup", lambda _: _add_sinks(settings, state, verbose, quiet))


def _add_sinks(settings: dict | None, state: Path | None, verbose: bool, quiet: bool) -> None:
    for handler_id in _configured:
        try:
            logger.remove(handler_id)
        except ValueError:
            pass
    _configured.clear()
    _log_file.clear()
    try:
        logger.remove(0)
    except ValueError:
        pass
    opts = (settings or {}).get("logging", {})
    level = "DEBUG" if verbose else ("ERROR" if quiet else opts.get("level", "INFO"))
    _configured.append(
        logger.add(sys.stderr, level=level, format=_terminal_format, filter=_to_terminal, colorize=None,
                   backtrace=verbose, diagnose=verbose)
    )
    if state is not None:
        path = state / "logs" / LOG_NAME
        try:
            _configured.append(_file_sink(path, opts.get("file_level", "DEBUG"), opts.get("rotation", "10 MB"),
                                          opts.get("retention", 10), verbose))
            _log_file.append(path)
        except OSError as exc:
            logger.warning("cannot write logs under {}: {}", state, exc)


def log_internal_error(exc: BaseException, what: str, settings: dict | None = None) -> Path | None:
    """Write ``exc``'s traceback (no variable values) to the log file only; returns the file.

    Uses this process's log file, else ``<state_dir>/logs/kbwatch.log`` of
    ``settings``, else one in the temp folder. None if no file could be written.
    """
    path = current_log_file()
    extra_sink = None
    if path is None:
        path = log_file_for(settings or _settings[0])
        try:
            extra_sink = _file_sink(path, "ERROR", "10 MB", 10, _verbose[0])
        except (OSError, ValueError):
            return None
    try:
        logger.bind(file_only=True).opt(exception=exc).error("internal error in {}: {}: {}", what,
                                                            type(exc).__name__, exc)
    finally:
        if extra_sink is not None:
            logger.remove(extra_sink)
    return path
