"""The run queue: jobs, their keys, the runner threads, the two lanes, idle and stop.

Owns which files are waiting or running and the threads that take them:

- a :class:`Job` is one file of one project; its key ``(project, rel)`` is
  held from :meth:`RunQueue.submit` until :meth:`RunQueue.release`, so a file
  is never queued twice at once (nor while its run waits for its commit);
- jobs are taken round-robin across projects (:class:`FairQueue`): a burst of
  thousands of files in one project does not hold back a file dropped into
  another, which waits for at most one job of each other busy project;
- two lanes: the ordinary one, served by several threads, and the large-text
  one (:mod:`kbwatch.pipeline.lanes`), served by one thread, so large texts never
  occupy every thread;
- ``in_flight`` counts jobs from submit to release; :meth:`RunQueue.wait_idle`
  waits for it to reach zero;
- :meth:`RunQueue.stop_taking` drops the jobs still queued (their files stay
  in ``sources/`` and are found at next start) and ends the threads once
  their current job is over.

What a thread does with a job is the ``handle`` callback (the runner's
:meth:`kbwatch.pipeline.runner.Runner.handle`); a job dropped without being handled
is passed to ``dropped`` before it is released.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

LARGE_THREAD = "kbwatch-run-large"


@dataclass
class Job:
    project: Path
    rel: str  # relative to sources/
    attempt: int = 1
    queued_at: float = field(default_factory=time.monotonic)

    @property
    def key(self) -> tuple[str, str]:
        return (str(self.project), self.rel)


class FairQueue:
    """The jobs of a lane, taken round-robin across projects, first in first out within one.

    The part of :class:`queue.Queue` the run queue uses (``put``, ``get``, ``get_nowait``,
    ``qsize``); ``None`` (a thread's signal to end) is handed out once no job is left.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._jobs: dict[str, deque[Job]] = {}  # project -> its queued jobs
        self._turns: deque[str] = deque()  # projects with queued jobs, the next one first
        self._size = 0
        self._ends = 0  # None items put

    def put(self, job: Job | None) -> None:
        with self._cond:
            if job is None:
                self._ends += 1
            else:
                key = str(job.project)
                jobs = self._jobs.get(key)
                if jobs is None:
                    jobs = self._jobs[key] = deque()
                    self._turns.append(key)
                jobs.append(job)
                self._size += 1
            self._cond.notify()

    def _take(self) -> tuple[Job | None, bool]:
        if self._size:
            key = self._turns.popleft()
            jobs = self._jobs[key]
            job = jobs.popleft()
            self._size -= 1
            if jobs:
                self._turns.append(key)
            else:
                del self._jobs[key]
            return job, True
        if self._ends:
            self._ends -= 1
            return None, True
        return None, False

    def get(self) -> Job | None:
        with self._cond:
            while True:
                item, taken = self._take()
                if taken:
                    return item
                self._cond.wait()

    def get_nowait(self) -> Job | None:
        with self._cond:
            item, taken = self._take()
            if not taken:
                raise queue.Empty
            return item

    def qsize(self) -> int:
        return self._size


class RunQueue:
    def __init__(self, handle: Callable[[Job], None], dropped: Callable[[Job], None]):
        self._handle = handle
        self._dropped = dropped
        self._queue = FairQueue()
        self._large_queue = FairQueue()  # kbwatch.pipeline.lanes: one large text at a time
        self._keys: set[tuple[str, str]] = set()
        self._keys_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.stopping = threading.Event()
        self._idle = threading.Condition()
        self._in_flight = 0

    # -- jobs --------------------------------------------------------------
    def __len__(self) -> int:
        return self._queue.qsize() + self._large_queue.qsize()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def is_queued(self, project: Path, rel: str) -> bool:
        with self._keys_lock:
            return (str(project), rel) in self._keys

    def submit(self, job: Job, admitted: Callable[[], None], large: Callable[[], bool]) -> bool:
        """Queue ``job`` unless its file is already queued or running.

        ``admitted()`` is called once the key is held, before the job counts
        as in flight; ``large()`` then picks the lane.
        """
        with self._keys_lock:
            if job.key in self._keys:
                return False
            self._keys.add(job.key)
        admitted()
        with self._idle:
            self._in_flight += 1
        (self._large_queue if large() else self._queue).put(job)
        return True

    def release(self, job: Job, dropped: bool = False) -> None:
        """A job is over: it was committed, or it ended without a run to commit.

        The file's queue key is held until then, so a rescan or an event
        cannot queue a file whose run is parked but not yet committed.
        ``dropped``: the job was never handled (``dropped(job)`` is called).
        """
        with self._keys_lock:
            self._keys.discard(job.key)
        if dropped:
            self._dropped(job)
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()

    # -- threads -----------------------------------------------------------
    def start(self, n: int) -> None:
        """``n`` threads for the ordinary lane, one for the large-text lane."""
        for i in range(max(1, n)):
            t = threading.Thread(target=self._loop, args=(self._queue,), name=f"kbwatch-run-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        t = threading.Thread(target=self._loop, args=(self._large_queue,), name=LARGE_THREAD, daemon=True)
        t.start()
        self._threads.append(t)

    def _loop(self, jobs: FairQueue) -> None:
        while True:
            job = jobs.get()
            if job is None:
                return
            if self.stopping.is_set():
                self.release(job, dropped=True)
                continue
            self._handle(job)

    def wait_idle(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            while self._in_flight:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._idle.wait(timeout=0.2 if remaining is None else min(0.2, remaining))
        return True

    def stop_taking(self) -> None:
        """Take no more jobs: drop the queued ones and tell every thread to end."""
        self.stopping.set()
        for jobs in (self._queue, self._large_queue):
            while True:  # drop queued jobs: they stay in sources/ and are found at next start
                try:
                    job = jobs.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    self.release(job, dropped=True)
        for t in self._threads:
            (self._large_queue if t.name == LARGE_THREAD else self._queue).put(None)

    def join(self, deadline: float | None = None, each: float | None = None) -> None:
        """Wait for the threads to end: until ``deadline`` (monotonic), or ``each`` seconds per thread."""
        for t in self._threads:
            t.join(timeout=each if deadline is None else max(0.1, deadline - time.monotonic()))
