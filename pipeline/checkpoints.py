"""Test checkpoints: named points in a run where a test can pause the runner.

Owns ``checkpoint(point, detail)`` and the two ways it pauses, both driven by
environment variables read once, when this module is imported (checkpoints
sit on the hot path; unset, as always outside tests, one costs a string
compare):

- ``KBWATCH_TEST_PAUSE="commit:after#2"`` pauses forever the second time a
  run passes ``commit:after`` and writes the point to
  ``KBWATCH_TEST_PAUSE_FILE``, so a test knows when to SIGKILL the process.
- with ``KBWATCH_TEST_PAUSE_SECONDS`` as well (the timed pause), the pause
  repeats at every pass from the n-th on, one thread at a time: the flag file
  gets the point and its detail (e.g. the source), and the run goes on when
  the test deletes the flag or after that many seconds.

The points: ``run:listed`` (checked, about to be opened), ``run:opened``,
``stage:<name>:before``, ``stage:<name>:after`` (:mod:`kbwatch.pipeline.execute`),
``commit:before``, ``commit:after``, ``source:removed``, ``records:written``
(:mod:`kbwatch.pipeline.commit`), ``settle:read`` (a start's manifest read before it settles the
kept texts of interrupted versions, :mod:`kbwatch.pipeline.kb`), ``unread:read`` (the projects a
journal rebuild could not read, read off their list, :mod:`kbwatch.pipeline.rebuild_journal`).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

_CHECKPOINT_SEEN: dict[str, int] = {}
_PAUSE_AT = os.environ.get("KBWATCH_TEST_PAUSE")  # read once: checkpoints sit on the hot path
_PAUSE_SECONDS = float(os.environ.get("KBWATCH_TEST_PAUSE_SECONDS") or 0)
_PAUSE_LOCK = threading.Lock()


def checkpoint(point: str, detail: str = "") -> None:
    """Test hook: pause forever at ``point`` when ``KBWATCH_TEST_PAUSE`` names it.

    ``KBWATCH_TEST_PAUSE="commit:after#2"`` pauses the second time the runner
    passes that point and creates ``KBWATCH_TEST_PAUSE_FILE`` so a test knows
    when to SIGKILL the process. Unset (always, outside tests) it costs a dict
    lookup (the variable is read when the module is imported).

    With ``KBWATCH_TEST_PAUSE_SECONDS`` the pause repeats at every pass from
    the n-th on, one thread at a time: the flag file gets ``point`` and
    ``detail`` (e.g. the source), and the run goes on when the test deletes
    the flag or after that many seconds.
    """
    wanted = _PAUSE_AT
    if not wanted:
        return
    name, _, nth = wanted.partition("#")
    if name != point:
        return
    if _PAUSE_SECONDS:
        _timed_pause(point, detail, int(nth or 1))
        return
    _CHECKPOINT_SEEN[point] = _CHECKPOINT_SEEN.get(point, 0) + 1
    if _CHECKPOINT_SEEN[point] != int(nth or 1):
        return
    flag = os.environ.get("KBWATCH_TEST_PAUSE_FILE")
    if flag:
        Path(flag).write_text(point)
    time.sleep(3600)


def _timed_pause(point: str, detail: str, first: int) -> None:
    with _PAUSE_LOCK:
        _CHECKPOINT_SEEN[point] = _CHECKPOINT_SEEN.get(point, 0) + 1
        if _CHECKPOINT_SEEN[point] < first:
            return
        flag = Path(os.environ["KBWATCH_TEST_PAUSE_FILE"])
        flag.write_text(f"{point}\n{detail}\n", encoding="utf-8")
        deadline = time.monotonic() + _PAUSE_SECONDS
        while flag.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        flag.unlink(missing_ok=True)
