"""A worker that holds most of its memory cap after a task is replaced (kbwatch.pipeline.workers).

Real spawned worker processes; the task that grows one is a plain ``exec`` in it.
"""

from __future__ import annotations

import os

from kbwatch.pipeline.workers import WorkerPool

GROW = "import builtins, time; builtins.kept = b'\\x01' * (800 << 20); time.sleep(0.3)"


def test_a_worker_left_holding_most_of_its_cap_is_replaced_after_the_task():
    pool = WorkerPool(1, memory_mb=1024)  # recycled above 3/4 of the cap: 768 MB
    try:
        first = pool.call(os.getpid, timeout=60)
        assert [pool.call(os.getpid, timeout=60) for _ in range(20)] == [first] * 20  # small tasks: kept
        pool.call(exec, GROW, timeout=120)  # leaves ~810 MB resident in the worker
        assert pool.call(os.getpid, timeout=60) != first
        assert not os.path.exists(f"/proc/{first}")  # stopped and reaped, not left running
    finally:
        pool.close()
