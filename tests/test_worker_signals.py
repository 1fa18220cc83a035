"""How worker processes meet signals (kbwatch.pipeline.workers).

Real spawned worker processes. A worker leads a process group of its own, so a signal sent to
the service's group (a terminal's Ctrl-C) does not reach it, and a worker killed for a timeout
takes the programs its task started with it (tests/test_bounds.py shows that end to end). A
worker that someone stops with SIGTERM fails its task as transient, to be run again, not as a
crash that blames the file.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from kbwatch.pipeline.errors import PermanentError, TransientError
from kbwatch.pipeline.workers import WorkerPool


def test_a_worker_leads_a_process_group_of_its_own():
    pool = WorkerPool(1)
    try:
        pid = pool.call(os.getpid, timeout=60)
        assert pool.call(os.getpgid, 0, timeout=60) == pid
        assert os.getpgid(pid) != os.getpgid(0)
    finally:
        pool.close()


def _stop_when_busy(pool: WorkerPool, sig: int) -> threading.Thread:
    def stop():
        deadline = time.monotonic() + 60
        while not pool._busy and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # the task has started
        os.kill(next(iter(pool._busy)).proc.pid, sig)

    t = threading.Thread(target=stop, daemon=True)
    t.start()
    return t


def test_a_worker_stopped_by_sigterm_fails_its_task_as_transient_and_the_next_runs():
    pool = WorkerPool(1)
    try:
        pool.call(os.getpid, timeout=60)  # started and warm
        stopper = _stop_when_busy(pool, signal.SIGTERM)
        with pytest.raises(TransientError) as caught:
            pool.call(time.sleep, 30, timeout=60)
        stopper.join()
        assert caught.value.reason == "stopped"
        assert "SIGTERM" in caught.value.message
        assert pool.call(sum, [1, 2, 3], timeout=60) == 6
    finally:
        pool.close()


def test_a_worker_killed_by_sigkill_is_still_a_crash():
    pool = WorkerPool(1)
    try:
        pool.call(os.getpid, timeout=60)
        stopper = _stop_when_busy(pool, signal.SIGKILL)
        with pytest.raises(PermanentError) as caught:
            pool.call(time.sleep, 30, timeout=60)
        stopper.join()
        assert caught.value.reason == "crashed" and "SIGKILL" in caught.value.message
    finally:
        pool.close()
