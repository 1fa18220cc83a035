"""One-shot ingest forks parse workers from a warmed template process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pipeline.workers import WorkerPool

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
    from pipeline.config import load_settings
    from pipeline.plugins import build_plugin_manager

    settings = load_settings(tmp_path)
    mods = [m for lst in build_plugin_manager(settings).hook.kb_worker_preload(settings=settings) for m in lst or []]
    assert "plugins._unstructured_warm" in mods
    code = ("import sys, plugins._unstructured_warm; "
            "assert 'unstructured.partition.docx' in sys.modules; print('warm')")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "warm"


def test_rich_parsers_preload_their_libraries_into_forked_workers(tmp_path):
    """PDF, PowerPoint and Excel libraries are imported once in the template, not once per worker."""
    from pipeline.config import load_settings
    from pipeline.plugins import build_plugin_manager

    settings = load_settings(tmp_path)
    mods = sorted({m for lst in build_plugin_manager(settings).hook.kb_worker_preload(settings=settings)
                   for m in lst or []})
    for lib in ("pypdfium2", "pdfplumber", "pptx", "openpyxl", "xlrd"):
        assert lib in mods
    # in a fresh interpreter: the forkserver's preload is fixed by the first pool of a process
    code = ("import sys; from pipeline.workers import WorkerPool\n"
            f"pool = WorkerPool(1, preload={[m for m in mods if m != 'plugins._unstructured_warm']!r})\n"
            "print(pool.call(eval, \"sorted(m for m in ('pdfplumber', 'pptx', 'openpyxl') "
            "if m in __import__('sys').modules)\", timeout=120)); pool.close()")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "['openpyxl', 'pdfplumber', 'pptx']"
