"""One-shot ingest forks parse workers from a warmed template process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kbwatch.pipeline.workers import WorkerPool

REPO = Path(__file__).resolve().parents[1]


def test_pool_with_preload_forks_workers_from_a_template_process():
    pool = WorkerPool(2, preload=["json"])
    try:
        parents = {pool.call(os.getppid, timeout=60) for _ in range(4)}
    finally:
        pool.close()
    assert os.getpid() not in parents  # forked by the forkserver, not spawned by us
    assert len(parents) == 1


def test_spawned_pool_by_default():
    pool = WorkerPool(1)
    try:
        assert pool.call(os.getppid, timeout=60) == os.getpid()
    finally:
        pool.close()


def test_unstructured_plugin_preloads_a_warm_module(tmp_path):
    from kbwatch.pipeline.config import load_settings
    from kbwatch.pipeline.plugins import build_plugin_manager

    settings = load_settings(tmp_path)
    mods = [m for lst in build_plugin_manager(settings).hook.kb_worker_preload(settings=settings) for m in lst or []]
    assert "kbwatch.plugins.parsing.warm" in mods
    code = ("import sys, kbwatch.plugins.parsing.warm; "
            "assert 'unstructured.partition.docx' in sys.modules; print('warm')")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "warm"


def test_rich_parsers_preload_their_libraries_into_forked_workers(tmp_path):
    """PDF, PowerPoint and Excel libraries are imported once in the template, not once per worker."""
    from kbwatch.pipeline.config import load_settings
    from kbwatch.pipeline.plugins import build_plugin_manager

    settings = load_settings(tmp_path)
    mods = sorted({m for lst in build_plugin_manager(settings).hook.kb_worker_preload(settings=settings)
                   for m in lst or []})
    for lib in ("pypdfium2", "pdfplumber", "pptx", "openpyxl", "xlrd"):
        assert lib in mods
    # in a fresh interpreter: the forkserver's preload is fixed by the first pool of a process
    code = ("import sys; from kbwatch.pipeline.workers import WorkerPool\n"
            f"pool = WorkerPool(1, preload={[m for m in mods if m != 'kbwatch.plugins.parsing.warm']!r})\n"
            "print(pool.call(eval, \"sorted(m for m in ('pdfplumber', 'pptx', 'openpyxl') "
            "if m in __import__('sys').modules)\", timeout=120)); pool.close()")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "['openpyxl', 'pdfplumber', 'pptx']"


def test_prestart_returns_while_the_template_is_still_importing(tmp_path):
    """prestart() starts workers in the background: the caller goes on while the template imports."""
    gate = tmp_path / "gate"
    (tmp_path / "kb_slow_template.py").write_text(
        "import os, time\n"
        "deadline = time.monotonic() + 120  # never outlive a failed test\n"
        "while not os.path.exists(os.environ['KB_TEST_GATE']) and time.monotonic() < deadline:\n"
        "    time.sleep(0.02)\n")
    # the gate opens only after prestart() returned: a blocking prestart never gets there
    code = ("import os; from pathlib import Path; from kbwatch.pipeline.workers import WorkerPool\n"
            "pool = WorkerPool(2, preload=['kb_slow_template'])\n"
            "pool.prestart()\n"
            "print('prestart returned', flush=True)\n"
            "Path(os.environ['KB_TEST_GATE']).touch()\n"
            "pids = {pool.call(os.getpid, timeout=60) for _ in range(6)}\n"
            "print(len(pids), os.getpid() not in pids); pool.close()\n")
    env = dict(os.environ, KB_TEST_GATE=str(gate), PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]))
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=45, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "prestart returned"
    n, other = lines[-1].split()
    assert other == "True" and 1 <= int(n) <= 2  # at most the pool's two workers served the calls


def test_workers_freeze_their_warm_heap_out_of_the_collector():
    import gc

    pool = WorkerPool(1)
    try:
        assert pool.call(gc.get_freeze_count, timeout=60) > 1000
    finally:
        pool.close()
    assert gc.get_freeze_count() == 0  # the calling process is left alone


def test_one_shot_batch_runs_in_process_files_first_then_largest_first(tmp_path):
    from kbwatch.pipeline.ingest import _order_key
    from kbwatch.pipeline.kb import KnowledgeBase

    kb = KnowledgeBase(tmp_path)
    project, _ = kb.init_project("demo")
    sizes = {"notes.txt": 10, "big.pdf": 9000, "small.docx": 100, "mid.pptx": 4000, "data.csv": 5000}
    for name, size in sizes.items():
        (project / "sources" / name).write_bytes(b"x" * size)
    todo, _ = kb.pending(project)
    todo.sort(key=_order_key(kb))
    order = [item.entry.rel for item in todo]
    # text in process first; then what workers parse (a CSV table too), largest first
    assert order == ["notes.txt", "big.pdf", "data.csv", "mid.pptx", "small.docx"]
    kb.close()


def _live_workers(pids_before: set[int]) -> list:
    import psutil

    out = []
    for c in psutil.Process().children(recursive=True):
        try:
            if c.pid not in pids_before and c.status() != psutil.STATUS_ZOMBIE \
                    and "resource_tracker" not in " ".join(c.cmdline()):
                out.append(c)
        except psutil.NoSuchProcess:
            pass
    return out


def test_close_while_workers_start_leaves_no_worker_alive(monkeypatch):
    """close() during a slow start (a forkserver template importing, here a delay) kills what comes up."""
    import threading
    import time

    import psutil

    from kbwatch.pipeline import workers
    from kbwatch.pipeline.errors import TransientError

    before = {c.pid for c in psutil.Process().children(recursive=True)}
    real_init = workers._Worker.__init__

    def slow_init(self, *args, **kwargs):
        time.sleep(0.5)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(workers._Worker, "__init__", slow_init)
    # a caller starting its own worker
    pool = WorkerPool(1)
    outcome = {}

    def caller():
        try:
            outcome["result"] = pool.call(os.getpid, timeout=60)
        except TransientError as exc:
            outcome["result"] = exc.reason

    t = threading.Thread(target=caller)
    t.start()
    time.sleep(0.2)
    pool.close()
    t.join(timeout=60)
    assert outcome["result"] == "shutdown"
    # workers prestart is starting in the background
    pool2 = WorkerPool(2)
    pool2.prestart()
    time.sleep(0.7)  # the first is up (or nearly), the second not yet
    pool2.close()
    deadline = time.monotonic() + 10
    while _live_workers(before) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _live_workers(before)
