"""How worker processes meet signals and end (kbwatch.pipeline.workers).

Real spawned worker processes, real helper programs (``sleep`` standing in for a hung pandoc,
tesseract or soffice). A worker leads a process group of its own, so a signal sent to the
service's group (a terminal's Ctrl-C) does not reach it, and a worker that ends under its task,
killed for a timeout or stopped by someone, takes the programs its task started with it, and its
private temporary folder (tests/test_bounds.py shows the timeout end to end). A worker that
someone stops with SIGTERM, SIGINT or SIGHUP fails its task as transient, to be run again, not
as a crash that blames the file.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest

from kbwatch.pipeline.errors import PermanentError, TransientError
from kbwatch.pipeline.workers import WorkerPool
from conftest import process_running

# run in a worker: start a helper program, leave a file in a temporary folder, then hang
HANGS = """
import json, os, subprocess, tempfile, time
helper = subprocess.Popen(["sleep", "600"])
left = tempfile.mkdtemp(prefix="page-")
open(os.path.join(left, "page.png"), "wb").write(b"x" * 1024)
open({out!r}, "w").write(json.dumps([helper.pid, left, os.environ.get("TMPDIR", "")]))
time.sleep(120)
"""


def _when_written(out, then) -> threading.Thread:
    def wait():
        deadline = time.monotonic() + 60
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        then()

    t = threading.Thread(target=wait, daemon=True)
    t.start()
    return t


def _gone(helper: int, left: str, private: str) -> None:
    assert private and os.path.basename(private).startswith("kbwatch-worker-")
    assert left.startswith(private + os.sep), (left, private)  # the task's temporary files were in it
    for _ in range(50):
        if not process_running(helper):
            break
        time.sleep(0.1)
    try:
        assert not process_running(helper), "the helper program outlived its worker"
    finally:
        if process_running(helper):
            os.kill(helper, signal.SIGKILL)
    assert not os.path.exists(private), "the worker's temporary folder was left behind"


def test_a_worker_leads_a_process_group_of_its_own():
    pool = WorkerPool(1)
    try:
        pid = pool.call(os.getpid, timeout=60)
        assert pool.call(os.getpgid, 0, timeout=60) == pid
        assert os.getpgid(pid) != os.getpgid(0)
    finally:
        pool.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_a_worker_someone_stops_fails_its_task_as_transient_and_takes_its_helpers(tmp_path, sig):
    # a worker inherits what the service ignores (under `nohup` SIGHUP is ignored, and stays so in
    # its workers, as it should): this worker starts from the default
    before = signal.signal(sig, signal.SIG_DFL) if sig != signal.SIGINT else None
    pool = WorkerPool(1)
    try:
        try:
            worker = pool.call(os.getpid, timeout=60)  # started (spawned now) and warm
        finally:
            if before is not None:
                signal.signal(sig, before)
        out = tmp_path / "started.json"
        stopper = _when_written(out, lambda: os.kill(worker, sig))
        with pytest.raises(TransientError) as caught:
            pool.call(exec, HANGS.format(out=str(out)), timeout=60)
        stopper.join()
        assert caught.value.reason == "stopped"
        assert sig.name in caught.value.message
        _gone(*json.loads(out.read_text()))
        assert pool.call(sum, [1, 2, 3], timeout=60) == 6  # a new worker takes the next task
    finally:
        pool.close()


def test_a_timeout_kills_the_helpers_and_removes_the_temporary_folder(tmp_path):
    pool = WorkerPool(1)
    try:
        pool.call(os.getpid, timeout=60)
        out = tmp_path / "started.json"
        with pytest.raises(PermanentError) as caught:
            pool.call(exec, HANGS.format(out=str(out)), timeout=3)
        assert caught.value.reason == "timeout"
        _gone(*json.loads(out.read_text()))
    finally:
        pool.close()


def test_a_worker_killed_by_sigkill_is_still_a_crash_and_its_helpers_go_too(tmp_path):
    pool = WorkerPool(1)
    try:
        worker = pool.call(os.getpid, timeout=60)
        out = tmp_path / "started.json"
        stopper = _when_written(out, lambda: os.kill(worker, signal.SIGKILL))
        with pytest.raises(PermanentError) as caught:
            pool.call(exec, HANGS.format(out=str(out)), timeout=60)
        stopper.join()
        assert caught.value.reason == "crashed" and "SIGKILL" in caught.value.message
        _gone(*json.loads(out.read_text()))
    finally:
        pool.close()


def test_a_stopped_worker_removes_its_temporary_folder():
    pool = WorkerPool(1, max_tasks=2)  # replaced after its second task: stopped, not killed
    try:
        private = pool.call(os.getenv, "TMPDIR", timeout=60)
        assert os.path.isdir(private)
        pool.call(os.getpid, timeout=60)  # its second task: stopped after it
        assert not os.path.exists(private)
    finally:
        pool.close()


# a service in a terminal: its process group gets a Ctrl-C (SIGINT to the group) while a worker starts
STARTING = """
import os, signal, sys
from kbwatch.pipeline.workers import WorkerPool
said = []
signal.signal(signal.SIGINT, lambda *_: said.append(1))  # the service survives it (its own handler)
pool = WorkerPool(1, preload={preload!r})
print("starting", flush=True)
try:
    pid = pool.call(os.getpid, timeout=120)
    print("worker", pid, os.getpgid(pid), "interrupts", len(said), flush=True)
    sys.stdin.readline()  # until the test has stopped sending
finally:
    pool.close()
"""


@pytest.mark.parametrize("preload", [None, ["json"]], ids=["spawned", "forkserver"])
def test_a_ctrl_c_while_a_worker_starts_up_does_not_reach_it(preload):
    # until the worker has made its own group (~1 s into a spawned interpreter on a slow machine) it
    # is in the service's, and a Ctrl-C there killed it ("crashed while starting", a traceback)
    import select
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", STARTING.format(preload=preload)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "starting"
        sent, line = 0, ""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)  # every 10 ms, from the worker's start to its first answer
            sent += 1
            if select.select([proc.stdout], [], [], 0.01)[0]:
                line = proc.stdout.readline()
                break
        out, err = proc.communicate("done\n", timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, (sent, line, err)
    assert "KeyboardInterrupt" not in err and "Traceback" not in err, err
    words = line.split()
    assert words[0] == "worker" and words[1] == words[2], line  # it came up, in a group of its own
    assert int(words[4]) >= 1 and sent >= 5, (line, sent)  # the service's group did get the signals


def test_a_worker_stopped_while_it_starts_fails_its_task_as_transient():
    # systemd stopping the unit sends SIGTERM to every process of it, workers still starting up
    # included: that is no fault of the file (it was "crashed while starting", a permanent failure)
    import functools

    pool = WorkerPool(1, warmup=functools.partial(time.sleep, 30))  # alive, not yet ready
    try:
        caught = []

        def call():
            try:
                pool.call(os.getpid, timeout=120)
            except Exception as exc:  # noqa: BLE001 - what the task got is the assertion
                caught.append(exc)

        t = threading.Thread(target=call)
        t.start()
        deadline = time.monotonic() + 60
        while not pool._busy and time.monotonic() < deadline:
            time.sleep(0.05)
        [worker] = list(pool._busy)
        time.sleep(1.0)  # well into its start-up
        os.kill(worker.proc.pid, signal.SIGTERM)
        t.join(60)
        assert len(caught) == 1 and isinstance(caught[0], TransientError), caught
        assert caught[0].reason == "stopped" and "SIGTERM" in caught[0].message
    finally:
        pool.close()


LEAVES = """
import sys, time
from kbwatch.pipeline.workers import WorkerPool
pool = WorkerPool(2, preload=["kbwatch.pipeline.parsing"])
pool.prestart()  # the workers start from a thread while the service goes on
time.sleep({pause})
sys.exit(1)  # a second Ctrl-C: the service leaves at once, its workers still starting
"""


@pytest.mark.parametrize("pause", [0.05, 0.5])
def test_a_service_that_leaves_while_its_workers_start_leaves_no_temporary_folder(tmp_path, pause):
    import subprocess
    import sys

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.run([sys.executable, "-c", LEAVES.format(pause=pause)], env={**os.environ, "TMPDIR": str(tmp)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    deadline = time.monotonic() + 30  # a worker that started removes its own folder once it finds the service gone
    while time.monotonic() < deadline and list(tmp.glob("kbwatch-worker-*")):
        time.sleep(0.2)
    assert not list(tmp.glob("kbwatch-worker-*")), sorted(p.name for p in tmp.iterdir())
