"""kbwatch.pipeline.heap.trim gives freed heap memory back (the soak's main-process RSS high-water mark)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import REPO


def test_trim_returns_freed_small_objects_to_the_os():
    # a fresh interpreter, so nothing else in the test process shapes the heap
    code = textwrap.dedent("""
        import psutil
        from kbwatch.pipeline.heap import trim
        p = psutil.Process()
        blocks = [str(i) * 300 for i in range(200_000)]  # ~1-2 KB each: glibc's heap, not pymalloc's arenas
        keep = blocks[::100]  # a few survivors pin the heap, as a service's caches do
        del blocks
        freed = p.memory_info().rss
        ok = trim()
        print(ok, freed // 2**20, p.memory_info().rss // 2**20)
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    ok, before, after = out.stdout.split()
    assert ok == "True"  # glibc here
    assert int(before) - int(after) >= 40, out.stdout  # MB given back
