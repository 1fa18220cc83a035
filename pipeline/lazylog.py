"""The ``logger`` every kbwatch module logs with: loguru's, imported when first used.

Importing loguru imports asyncio: ~0.1 s of CPU, a fifth of the start-up of a command such
as ``status``, ``runs`` or ``ask`` that usually logs nothing. :data:`logger` stands in for
loguru's logger and imports it at the first attribute read (``logger.info``, ``logger.add`` ...),
which then returns loguru's own bound method, so records name the caller as before.

:func:`when_loaded` defers work that needs loguru (the sinks
:func:`kbwatch.pipeline.logs.setup_logging` adds) to that moment; :func:`loguru_logger`
imports it now.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

_lock = threading.RLock()
_loaded: list[Any] = []  # loguru's logger, once imported
_pending: dict[str, Callable[[Any], None]] = {}  # what runs when it is, by key, in order
_loading: list[bool] = []  # set while that runs


def loguru_logger():
    """loguru's logger, imported (and the deferred set-up run) if it was not yet. Another thread
    logging meanwhile waits for the set-up; a set-up step that logs gets loguru as it is so far."""
    if _loaded:
        return _loaded[0]
    with _lock:
        if _loaded:
            return _loaded[0]
        from loguru import logger as real

        if _loading:  # called again from a set-up step below, in this thread
            return real
        _loading.append(True)
        try:
            while _pending:
                key = next(iter(_pending))
                _pending.pop(key)(real)
        finally:
            _loading.clear()
            _loaded.append(real)
    return real


def when_loaded(key: str, action: Callable[[Any], None]) -> None:
    """Run ``action(logger)`` now if loguru is imported, else when it is. A later action under
    the same ``key`` replaces one still waiting (logging set up twice before anything logged)."""
    with _lock:
        if not _loaded:
            _pending.pop(key, None)
            _pending[key] = action
            return
    action(_loaded[0])


class _Logger:
    """Reads every attribute from loguru's logger, importing it on the first read."""

    __slots__ = ()

    def __getattr__(self, name: str):
        return getattr(_loaded[0] if _loaded else loguru_logger(), name)

    def __repr__(self) -> str:
        return repr(_loaded[0]) if _loaded else "<kbwatch logger: loguru not imported yet>"


logger: Any = _Logger()
