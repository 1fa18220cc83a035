"""Retry policy: when and how often a failed step or run is tried again.

Owns the three rules a transient failure (:class:`kbwatch.pipeline.errors.TransientError`)
meets, from the shortest to the longest time scale:

- inside one run, :func:`retry_transient` retries the failing step (taking the
  source, a stage, the commit) a few quick times (``RETRYABLE_IN_RUN``) with
  exponential backoff and jitter;
- across runs, :func:`backoff_seconds` says when the journal makes a failed,
  retryable run due again (``runs.next_attempt_at``);
- after ``[retry] max_attempts`` runs, :func:`gave_up` is true and
  :func:`give_up_message` says so in the run's message;
- a user's ``retry`` (the command, or the status page's button) makes failed runs
  due again at once: :func:`retryable_latest` and :func:`request_retry`.
"""

from __future__ import annotations

import random
from typing import Any, Callable

from kbwatch.pipeline.errors import DISK_FULL, TransientError

RETRYABLE_IN_RUN = 3  # quick attempts inside one run before the journal takes over


def backoff_seconds(settings: dict, attempt: int) -> float:
    """Seconds until a run that failed at ``attempt`` is due again (exponential, with jitter)."""
    r = settings["retry"]
    base = min(r["backoff_max_seconds"], r["backoff_initial_seconds"] * (2 ** max(0, attempt - 1)))
    return base * (0.5 + random.random() / 2)


def retry_transient(fn: Callable[[], Any], settings: dict) -> Any:
    """Call ``fn``; on a TransientError retry it with exponential backoff and jitter."""
    try:
        return fn()  # the common case costs nothing
    except TransientError:
        pass
    r = settings["retry"]
    attempts = min(RETRYABLE_IN_RUN, r["max_attempts"])
    if attempts <= 1:
        return fn()
    import tenacity  # (here, not at import: a command that meets no transient failure never needs it)

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(TransientError),
        wait=tenacity.wait_exponential_jitter(multiplier=min(0.2, r["backoff_initial_seconds"]), max=min(5.0, r["backoff_max_seconds"])),
        stop=tenacity.stop_after_attempt(attempts - 1),
        reraise=True,
    )
    return retrying(fn)


# failures that are no fault of the file's and pass by themselves: retried on the backoff timer
# for as long as they last, never given up after ``max_attempts``
NEVER_GIVEN_UP = (DISK_FULL,)


def gave_up(attempt: int, settings: dict, reason: str | None = None) -> bool:
    """Whether a retryable failure at ``attempt`` is the last one (the journal stops retrying)."""
    return reason not in NEVER_GIVEN_UP and attempt >= settings["retry"]["max_attempts"]


def give_up_message(message: str, attempt: int) -> str:
    return f"{message} (gave up after {attempt} attempts; `kbwatch retry` tries again)"


RETRYABLE_OUTCOMES = ("failed", "conflict")


def retryable_latest(journal, projects: list[str]) -> list[dict]:
    """The latest run of each source of ``projects`` that ended failed or conflict."""
    rows: list[dict] = []
    for name in projects:
        rows += [r for r in journal.latest_for_sources(name).values() if r["outcome"] in RETRYABLE_OUTCOMES]
    return rows


def request_retry(journal, row: dict) -> bool:
    """Make a failed run eligible again (False when it did not fail: nothing to retry).

    The outcome and its reason stay as recorded (a conflict stays a conflict); the
    file is simply eligible again, and its next run records what happens then: the
    next ``ingest``, or a running service within two seconds."""
    if row["outcome"] not in RETRYABLE_OUTCOMES:
        return False
    journal.update_run(row["run_id"], retryable=1, attempts=0, next_attempt_at=0.0)
    return True
