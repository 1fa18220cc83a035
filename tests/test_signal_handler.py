"""SIGTERM and SIGINT are answered without taking a lock in the signal handler.

CI caught a service that did not exit within 30 s of SIGTERM: the faulthandler dump showed the
main thread inside the handler, in ``stop_event.set()``, called from ``stop_event.wait(tick)`` of
the service's loop. A Python signal handler runs in the main thread between two bytecodes, so it
can land while that thread holds the event's lock inside ``Event.wait``; ``set()`` then waits for
the thread it interrupted. The handler now only records the signal and the loop stops within a tick.
"""

from __future__ import annotations

import signal
import threading
import time

from kbwatch.pipeline.kb import KnowledgeBase
from kbwatch.pipeline.service import WatchService


def _service(tmp_path) -> WatchService:
    root = tmp_path / "kb"
    root.mkdir()
    kb = KnowledgeBase(root)
    kb.init_project("p")
    return WatchService(kb)


def test_the_handler_takes_no_lock_the_interrupted_thread_may_hold(tmp_path):
    service = _service(tmp_path)
    held, release = threading.Event(), threading.Event()

    def hold_the_events_lock():  # what the main thread holds inside Event.wait when the signal lands
        with service.stop_event._cond:
            held.set()
            release.wait(5)

    holder = threading.Thread(target=hold_the_events_lock)
    holder.start()
    try:
        assert held.wait(5)
        t0 = time.monotonic()
        service.request_stop(signal.SIGTERM)  # the old handler blocked here until the lock came free
        took = time.monotonic() - t0
    finally:
        release.set()
        holder.join(5)
    assert took < 1.0, f"the handler waited {took:.1f} s for a lock"
    assert service.stop_signal == signal.SIGTERM


def test_the_loop_stops_on_the_recorded_signal(tmp_path):
    service = _service(tmp_path)
    service.request_stop(signal.SIGINT)
    runner = threading.Thread(target=service.run)
    runner.start()
    runner.join(60)
    assert not runner.is_alive(), "the service's loop did not stop on the recorded signal"
    assert service.stop_event.is_set()
