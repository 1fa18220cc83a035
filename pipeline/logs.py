"""Logging with loguru: human lines to stderr, rotated files under <state_dir>/logs/."""

from __future__ import annotations

import sys
from pathlib import Path

from loguru import logger

_configured: list[int] = []
_last_setup: list[tuple] = []


def reopen_log_file() -> None:
    """Set logging up again as last time (the log file was deleted with the state dir)."""
    if _last_setup:
        setup_logging(*_last_setup[-1])


def setup_logging(settings: dict | None, state: Path | None, verbose: bool = False, quiet: bool = False) -> None:
    _last_setup[:] = [(settings, state, verbose, quiet)]
    for handler_id in _configured:
        try:
            logger.remove(handler_id)
        except ValueError:
            pass
    _configured.clear()
    try:
        logger.remove(0)
    except ValueError:
        pass
    opts = (settings or {}).get("logging", {})
    level = "DEBUG" if verbose else ("ERROR" if quiet else opts.get("level", "INFO"))
    _configured.append(
        logger.add(sys.stderr, level=level, format="<level>{level: <7}</level> {message}", colorize=None)
    )
    if state is not None:
        try:
            (state / "logs").mkdir(parents=True, exist_ok=True)
            _configured.append(
                logger.add(
                    state / "logs" / "kbwatch.log",
                    level=opts.get("file_level", "DEBUG"),
                    rotation=opts.get("rotation", "10 MB"),
                    retention=opts.get("retention", 10),
                    enqueue=False,
                    encoding="utf-8",
                    format="{time:YYYY-MM-DD HH:mm:ss.SSS} | {level: <7} | {process} | {message}",
                )
            )
        except OSError as exc:
            logger.warning("cannot write logs under {}: {}", state, exc)
