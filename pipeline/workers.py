"""Worker processes for bounded work (parsing): timeout, memory cap, kill, replace.

``WorkerPool.call(fn, *args, timeout=...)`` runs a picklable function in one
of N long-lived worker processes (started lazily, or all at once in the
background by ``prestart``) and blocks the calling thread until it returns.
A call that overruns its timeout gets its worker killed (SIGKILL) and
replaced, and raises :class:`PermanentError` ``reason="timeout"``; a worker
that dies (segfault, out of memory) raises ``reason="crashed"``, and one that
someone stopped (SIGTERM, SIGINT, SIGHUP) a :class:`TransientError`
``reason="stopped"`` (the task runs again). Each worker leads a process group
of its own: killing it kills the programs its task started (pandoc, tesseract,
soffice), and a signal to the service's group (Ctrl-C) does not reach it (it starts with SIGINT
blocked, until it has left that group). Each worker
caps its address space (``RLIMIT_AS``) and is recycled after ``max_tasks``
calls or when its memory grows past 3/4 of the cap. Workers are spawned (the
parent runs threads), or forked from a forkserver template that imported the
parsers once (``preload``); each warms up once and then freezes its warm heap
out of the garbage collector's sight.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import multiprocessing as mp
import os
import queue
import shutil
import signal
import tempfile
import threading
import time
import traceback
from typing import Any, Callable

from kbwatch.pipeline.errors import PermanentError, StageError, TransientError
from kbwatch.pipeline.lazylog import logger

_CTX = mp.get_context("spawn")


# what a pool's messages call its workers and their work: "parse" (the parsers) or "compute"
_KINDS = {"parse": ("parse worker", "parser"), "compute": ("compute worker", "compute task")}


def ended(proc) -> str:
    """How a worker process that closed its pipe ended: its exit code, read after reaping it
    (read at once it was often still ``None``: "exit code None"), with the signal named."""
    proc.join(timeout=2)
    code = proc.exitcode
    if code is None:
        return "it closed its pipe and is still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        why = " (the kernel's out-of-memory killer, or someone, killed it)" if -code == signal.SIGKILL else ""
        return f"killed by {name}{why}"
    return f"exit code {code}"


# signals that stop a process rather than report a fault in it (someone stopping everything, a
# terminal's Ctrl-C reaching the group it was started in)
_STOP_SIGNALS = frozenset({-signal.SIGTERM, -signal.SIGINT, -signal.SIGHUP})


def _kill_group(pid: int | None) -> None:
    """SIGKILL the process group a worker leads: what its task started (pandoc, soffice, tesseract).
    Called before the worker is reaped, or when it was reaped with members of its group left: the
    kernel gives no process a pid still in use as a group's id. A worker that had not made its
    group yet leaves none to find (ESRCH)."""
    if pid is None:
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _died(w: "_Worker", starting: bool = False) -> StageError:
    """The error of a task whose worker ended under it (or, ``starting``, before it was ready): a
    worker that was stopped by a signal (someone stopping everything: systemd's stop reaches workers
    still starting up too) is a transient failure, the task runs again in another worker; any other
    end is a crash (the file is at fault: a segfault, the memory cap, the kernel's OOM killer).
    Either way the programs its task started go with it."""
    _kill_group(w.proc.pid)
    how = ended(w.proc)
    when = " while starting" if starting else ""
    if w.proc.exitcode in _STOP_SIGNALS:
        logger.warning("the {} was stopped{} ({}); its task is taken again", w.name, when, how)
        return TransientError(f"the {w.name} was stopped{when} ({how}); its task is taken again", reason="stopped")
    return PermanentError(f"the {w.name} crashed{when} ({how})", reason="crashed")


def _log_warning(message, category, filename, lineno, file=None, line=None) -> None:
    logger.debug("{}: {} ({}:{})", category.__name__, message, os.path.basename(filename), lineno)


def _worker_main(conn, memory_mb: int, warmup: Callable[[], None] | None, kind: str = "parse",
                 tmp: str | None = None) -> None:
    # a process group of its own, which the programs a parser starts (pandoc, tesseract, soffice)
    # join: a worker killed for overrunning its timeout takes them with it (_Worker.kill), where
    # killing the worker alone left a hung helper running for ever, one more with each such file
    try:
        os.setpgid(0, 0)
    except OSError:  # pragma: no cover - not permitted here (already a session leader)
        pass
    # SIGINT ends a worker as SIGTERM does (no KeyboardInterrupt: exit code 1 read as a crash, and
    # a traceback on the terminal): the pool reads either as "stopped" and runs the task again
    # (the pool started it with SIGINT blocked, _started_without_sigint: a Ctrl-C while it started up
    # is pending, and SIG_IGN discards it before it is unblocked)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if tmp:  # its temporary files, and its helper programs', in a folder removed when it ends
        os.environ["TMPDIR"] = tmp
        tempfile.tempdir = tmp
    if memory_mb > 0:
        try:
            import resource

            limit = memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ValueError, OSError):  # pragma: no cover - platform dependent
            pass
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    # a library's warning (Pillow's DecompressionBombWarning …) goes to the log, not raw onto the
    # terminal the service shares with its workers
    import warnings

    warnings.showwarning = _log_warning
    if warmup is not None:
        try:
            warmup()
        except Exception:  # warm-up is an optimisation only
            pass
    # what is alive now (imported modules, warmed parsers) lives as long as the
    # worker: move it out of the collector's sight, or every full collection a
    # parser's garbage triggers walks the whole warm heap again (measured: a
    # pdfminer-heavy PDF took 0.70 s instead of 0.54 s on about half its parses)
    gc.freeze()
    try:
        _serve(conn, kind)
    finally:  # the service gone (even SIGKILLed: nobody else removes it), or told to stop
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _serve(conn, kind: str) -> None:
    """Say ready, then run the tasks ``conn`` brings until it brings None or closes."""
    try:
        conn.send(("ready",))  # task timeouts start counting after this
    except (OSError, EOFError):  # the service is gone already
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        fn, args, kwargs = msg
        try:
            result = ("ok", fn(*args, **kwargs))
        except StageError as exc:
            result = ("stage", (type(exc).__name__, exc.message, exc.reason))
        except MemoryError:
            result = ("stage", ("PermanentError", f"the {_KINDS[kind][1]} ran out of memory (stages.parse.memory_mb)",
                                "memory"))
        except Exception as exc:
            result = ("error", f"{type(exc).__name__}: {exc}", traceback.format_exc())
        try:
            conn.send(result)
        except Exception as exc:  # unpicklable result
            conn.send(("error", f"result could not be sent back: {exc}", ""))


def _forkserver_context(preload: list[str]):
    """multiprocessing's forkserver with ``preload`` imported in its template process.

    The forkserver is one per process: the first pool that asks sets its
    preload list; later pools share that server.
    """
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["kbwatch.pipeline.parsing", *preload])
    return ctx


# the private temporary folders of this process's workers not yet removed: whatever is left when the
# service exits (a second Ctrl-C while a worker was still starting) is removed at exit
_LIVE_TMPS: set[str] = set()
_LIVE_TMPS_LOCK = threading.Lock()


def _remove_tmps_left() -> None:
    with _LIVE_TMPS_LOCK:
        left = list(_LIVE_TMPS)
        _LIVE_TMPS.clear()
    for tmp in left:
        shutil.rmtree(tmp, ignore_errors=True)


atexit.register(_remove_tmps_left)


def _started_without_sigint(proc) -> None:
    """``proc.start()`` with SIGINT blocked in this thread, a mask the new process inherits (across
    the spawn's exec, and through a forkserver started here). Until the worker has made its own
    process group (~1 s into a spawned interpreter's start-up) it is in the service's, where a
    terminal's Ctrl-C reaches it: it then died with a KeyboardInterrupt traceback. Blocked, the
    signal waits, and ``_worker_main`` discards it once the worker is out of that group."""
    with sigint_blocked():
        proc.start()


@contextlib.contextmanager
def sigint_blocked():
    """SIGINT blocked in the calling thread meanwhile: the processes it starts inherit the mask (across
    the spawn's exec), as do the threads it starts, and what those start in turn (a Dask LocalCluster's
    event-loop thread, which starts the nanny processes). A terminal's Ctrl-C goes to the service's
    whole process group; the service stops on it in its own order, and a child that kept the default
    handler died mid-task with a KeyboardInterrupt traceback on the terminal."""
    from multiprocessing import resource_tracker

    # (started first: multiprocessing starts its resource tracker with SIGINT blocked, and then
    # unblocks it, whatever the mask was; once running, start() only checks it is alive)
    resource_tracker.ensure_running()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class _Worker:
    def __init__(self, memory_mb: int, warmup, ctx=None, kind: str = "parse"):
        ctx = ctx or _CTX
        self.name = _KINDS[kind][0]
        self.conn, child = ctx.Pipe()
        # a private temporary folder (0700, a random name): what a killed task leaves there (an OCR
        # page image, soffice's output folder) is removed with the worker (_forget_tmp)
        self.tmp = tempfile.mkdtemp(prefix="kbwatch-worker-")
        with _LIVE_TMPS_LOCK:
            _LIVE_TMPS.add(self.tmp)
        self.proc = ctx.Process(target=_worker_main, args=(child, memory_mb, warmup, kind, self.tmp), daemon=True)
        try:
            _started_without_sigint(self.proc)
        except BaseException:
            self._forget_tmp()
            raise
        child.close()
        self.tasks = 0
        self.ready = False
        self.last_used = time.monotonic()
        self.size_read = 0.0  # when WorkerPool._too_big last read this worker's RSS

    def wait_ready(self, limit: float = 300.0) -> None:
        """Wait until the worker finished its warm-up (not counted in task timeouts)."""
        deadline = time.monotonic() + limit
        while not self.ready:
            if self.conn.poll(0.5):
                try:
                    msg = self.conn.recv()
                except (EOFError, OSError):
                    raise _died(self, starting=True) from None
                self.ready = msg == ("ready",)
            elif not self.proc.is_alive():
                raise _died(self, starting=True)
            elif time.monotonic() > deadline:
                raise PermanentError(f"the {self.name} did not start in time", reason="crashed")

    def kill(self) -> None:
        """SIGKILL the worker and its process group: the programs its task started go with it."""
        _kill_group(self.proc.pid)
        try:
            self.proc.kill()
        except Exception:
            pass
        self.proc.join(timeout=5)
        try:
            self.conn.close()
        except Exception:
            pass
        self._forget_tmp()

    def _forget_tmp(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)
        with _LIVE_TMPS_LOCK:
            _LIVE_TMPS.discard(self.tmp)

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except Exception:
            pass
        self.proc.join(timeout=2)
        if self.proc.is_alive():
            self.kill()
        else:
            self._forget_tmp()


class WorkerPool:
    def __init__(self, size: int, memory_mb: int = 0, max_tasks: int = 1000, warmup: Callable[[], None] | None = None,
                 preload: list[str] | None = None, kind: str = "parse"):
        """``preload``: fork workers from a template process that imported these
        modules (forkserver) instead of spawning each from scratch. ``kind`` ("parse" or
        "compute") names the workers and their work in messages."""
        self.kind = kind
        self.name = _KINDS[kind][0]
        self._ctx = _forkserver_context(preload) if preload else _CTX
        self.size = max(1, size)
        self.memory_mb = memory_mb
        self.max_tasks = max_tasks
        self.warmup = warmup
        self._idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        self._lock = threading.Lock()
        self._started = 0
        self._closed = False
        self._busy: set[_Worker] = set()
        # starts in progress: close() waits for them, or a process that exits right after
        # close() leaves a child half-started, which then prints "EOFError: Ran out of input"
        # (it found its parent gone before it was sent its task)
        self._starting = 0
        self._starts_done = threading.Condition(self._lock)

    def prestart(self) -> None:
        """Start every worker now, from a background thread, and return at once.

        Starting a worker can block for seconds (a forkserver answers only
        once its template process has imported the parsers); meanwhile the
        caller's threads go on with work that needs no worker, and a call
        that does need one waits for the first to come up.
        """
        with self._lock:
            n = 0 if self._closed else self.size - self._started
            self._started += max(0, n)
        if n > 0:
            threading.Thread(target=self._start_workers, args=(n,), name="kbwatch-worker-start", daemon=True).start()

    def _start_workers(self, n: int) -> None:
        for i in range(n):
            with self._lock:
                if self._closed:  # give back the slots not started
                    self._started -= n - i
                    return
            try:
                self._start_worker(self._idle.put)
            except Exception as exc:  # a call that needs a worker starts its own
                logger.warning("could not start a {}: {}", self.name, exc)

    def _new_worker(self) -> _Worker:
        """Start a worker for a slot already counted in ``_started`` (given back if the start fails).

        Called outside the lock: with a forkserver, starting blocks until its
        template process has imported the parsers.
        """
        try:
            return _Worker(self.memory_mb, self.warmup, self._ctx, self.kind)
        except Exception:
            with self._lock:
                self._started -= 1
            raise

    def _start_worker(self, keep: Callable[[_Worker], Any]) -> _Worker | None:
        """Start a worker (slot counted in ``_started``) and hand it to ``keep``; None
        if the pool closed meanwhile (it was killed). close() waits for this to end."""
        with self._lock:
            self._starting += 1
        try:
            w = self._new_worker()
            return w if self._admit(w, keep) else None
        finally:
            with self._lock:
                self._starting -= 1
                self._starts_done.notify_all()

    def _admit(self, w: _Worker, keep: Callable[[_Worker], Any]) -> bool:
        """Hand a started worker to ``keep`` (the idle queue, the busy set) under the
        lock, unless the pool closed meanwhile: then kill it and give its slot back.
        close() drains and kills under the same lock, so no worker escapes it."""
        with self._lock:
            if not self._closed:
                keep(w)
                return True
            self._started -= 1
        w.kill()
        return False

    def reap(self, max_idle: float) -> int:
        """Stop workers idle for longer than ``max_idle`` seconds (an idle service
        gives their memory back; the next rich file starts one again)."""
        stopped, keep = 0, []
        with self._lock:
            while True:
                try:
                    w = self._idle.get_nowait()
                except queue.Empty:
                    break
                if time.monotonic() - w.last_used > max_idle:
                    w.stop()
                    self._started -= 1
                    stopped += 1
                else:
                    keep.append(w)
            for w in reversed(keep):
                self._idle.put(w)
        return stopped

    def _too_big(self, w: _Worker, task_seconds: float) -> bool:
        """Recycle a worker whose memory grew past 3/4 of its cap (or 1.5 GB uncapped).

        The RSS is read after a task of a quarter second or more (a large document) and
        otherwise at most once a second per worker: reading it costs ~0.3 ms of the caller's
        CPU, as much as sending a small scan to a compute worker."""
        now = time.monotonic()
        if task_seconds < 0.25 and now - w.size_read < 1.0:
            return False
        w.size_read = now
        try:
            import psutil

            rss = psutil.Process(w.proc.pid).memory_info().rss
        except Exception:
            return False
        limit = (self.memory_mb * 0.75 if self.memory_mb > 0 else 1536) * 1024 * 1024
        return rss > limit

    def _acquire(self) -> _Worker:
        while True:
            with self._lock:
                if self._closed:
                    raise TransientError("the service is shutting down", reason="shutdown")
                start = self._idle.empty() and self._started < self.size
                if start:
                    self._started += 1
            if start:
                w = self._start_worker(self._busy.add)
            else:
                try:  # a worker comes back, or one prestart is starting comes up
                    w = self._idle.get(timeout=0.5)
                except queue.Empty:
                    continue  # re-check: a failed start or a stopped worker frees a slot
                if not self._admit(w, self._busy.add):
                    w = None
            if w is None:
                raise TransientError("the service is shutting down", reason="shutdown")
            return w

    def _release(self, w: _Worker, healthy: bool, task_seconds: float = 0.0) -> None:
        with self._lock:
            self._busy.discard(w)
            if not healthy or self._closed or w.tasks >= self.max_tasks or self._too_big(w, task_seconds):
                if healthy:
                    w.stop()
                else:
                    w.kill()
                self._started -= 1
                return
            self._idle.put(w)  # under the lock: close() drains _idle under it

    def call(self, fn: Callable, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        w = self._acquire()
        healthy = False
        try:
            try:
                w.wait_ready()
            except PermanentError:
                if self._closed:
                    raise TransientError("the service is shutting down", reason="shutdown") from None
                raise
            if self._closed:  # closed while this worker warmed up
                raise TransientError("the service is shutting down", reason="shutdown")
            sent = time.monotonic()
            try:
                w.conn.send((fn, args, kwargs))
            except (OSError, EOFError, BrokenPipeError):
                raise PermanentError(f"the {w.name} died before it started the task", reason="crashed")
            deadline = None if not timeout else time.monotonic() + timeout
            while True:
                wait = 0.5 if deadline is None else max(0.0, min(0.5, deadline - time.monotonic()))
                if w.conn.poll(wait):
                    try:
                        status, *payload = w.conn.recv()
                    except (EOFError, OSError):
                        if self._closed:
                            raise TransientError("the service is shutting down", reason="shutdown") from None
                        raise _died(w) from None
                    break
                if not w.proc.is_alive():
                    if self._closed:
                        raise TransientError("the service is shutting down", reason="shutdown")
                    raise _died(w)
                if self._closed:
                    raise TransientError("the service is shutting down", reason="shutdown")
                if deadline is not None and time.monotonic() >= deadline:
                    raise PermanentError(
                        f"parsing took longer than {timeout:g} s (stages.parse.timeout_seconds); the worker was killed",
                        reason="timeout",
                    )
            healthy = True
            w.tasks += 1
            w.last_used = time.monotonic()
        finally:
            self._release(w, healthy, w.last_used - sent if healthy else 0.0)
        if status == "ok":
            return payload[0]
        if status == "stage":
            cls_name, message, reason = payload[0]
            cls = TransientError if cls_name == "TransientError" else PermanentError
            raise cls(message, reason=reason)
        message, tb = payload
        logger.debug("worker error: {}", tb)
        raise PermanentError(f"{_KINDS[self.kind][1]} error: {message}", reason=f"{_KINDS[self.kind][1]} error")

    def close(self, start_wait: float = 60.0) -> None:
        """Stop idle workers, kill busy ones, and wait (up to ``start_wait`` s: a
        forkserver start waits for its template's imports) for starts in progress,
        which end by killing what they started."""
        with self._lock:
            self._closed = True
            busy = list(self._busy)
        while True:
            try:
                self._idle.get_nowait().stop()
            except queue.Empty:
                break
        for w in busy:
            w.kill()
        with self._lock:
            if not self._starts_done.wait_for(lambda: self._starting == 0, timeout=start_wait):
                logger.warning("a {} was still starting {:g} s after shutdown began", self.name, start_wait)
