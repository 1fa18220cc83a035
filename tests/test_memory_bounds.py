"""What keeps a long-running service's resident memory flat (issue 12, the soak):
the search index's SQLite page cache is bounded by ``[stages.index] cache_mb``,
glibc's mmap threshold is pinned (:func:`kbwatch.pipeline.heap.tune`), and the
opt-in ``KBWATCH_DEBUG_MEMORY`` report reads real counters."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from conftest import REPO


def _cache_size(idx) -> int:
    return idx._db.execute("PRAGMA cache_size").fetchone()[0]


def test_the_search_index_page_cache_is_bounded_by_the_setting(tmp_path):
    from kbwatch.pipeline.config import load_settings
    from kbwatch.plugins.retrieval.navigation import close_indexes, open_index

    (tmp_path / "kbwatch.toml").write_text("[stages.index]\ncache_mb = 3\n", encoding="utf-8")
    settings = load_settings(tmp_path)
    close_indexes()
    try:
        assert _cache_size(open_index(settings)) == -3 * 1024  # negative: KiB, not pages
        assert _cache_size(open_index(settings, readonly=True)) == -3 * 1024
    finally:
        close_indexes()
    (tmp_path / "kbwatch.toml").write_text("", encoding="utf-8")
    try:
        assert _cache_size(open_index(load_settings(tmp_path))) == -8 * 1024  # the default, 8 MB
    finally:
        close_indexes()


def test_tune_pins_the_mmap_threshold_so_large_buffers_go_back():
    # a fresh interpreter: allocate, touch and free a 16 MB block twice. With glibc's
    # dynamic threshold the first free raises it, so the second block comes from the
    # heap and its pages stay resident; pinned, both are mmapped and unmapped on free
    code = textwrap.dedent("""
        import ctypes, sys
        from kbwatch.pipeline.heap import tune
        def anon():  # resident anonymous memory only: file pages come and go with the page cache
            with open("/proc/self/status") as f:
                return int(f.read().split("RssAnon:")[1].split()[0]) << 10
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc.restype = ctypes.c_void_p
        libc.malloc.argtypes = [ctypes.c_size_t]
        libc.free.argtypes = [ctypes.c_void_p]
        ok = tune() if sys.argv[1] == "tune" else True
        ctypes.memset(ctypes.create_string_buffer(16), 0, 16)  # ctypes' first call paid before measuring
        before = anon()
        for _ in range(2):
            a = libc.malloc(16 << 20)
            ctypes.memset(a, 1, 16 << 20)
            libc.free(a)
        print(ok, (anon() - before) >> 20)
    """)
    kept = {}
    # glibc's own defaults: a Dask nanny started earlier in this process (the dask-local
    # tests) puts MALLOC_TRIM_THRESHOLD_ in os.environ, which pins the threshold as well
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    for mode in ("tune", "default"):
        out = subprocess.run([sys.executable, "-c", code, mode], cwd=REPO, capture_output=True, text=True,
                             timeout=120, env=env)
        assert out.returncode == 0, out.stderr
        ok, grown = out.stdout.split()
        assert ok == "True"
        kept[mode] = int(grown)
    assert kept["default"] >= 15, kept  # what the pinning prevents (glibc here)
    assert kept["tune"] <= 2, kept  # MB still resident after the frees


def test_memory_report_reads_real_counters():
    from kbwatch.pipeline.memdebug import MemoryReporter

    rep = MemoryReporter(60)
    first = rep.line()
    held = [[i] for i in range(50_000)]  # 50,000 more lists between two reports
    second = rep.line()
    assert first.startswith("memory: rss ") and "glibc in-use" in first and "sqlite" in first
    grew = second.split("grew: ", 1)[1]
    assert grew.split(",")[0].startswith("list +"), second  # the type that grew most comes first
    assert int(grew.split(",")[0].split("+")[1].split()[0]) >= 45_000  # (net of lists freed meanwhile)
    del held


def test_the_tokenizer_word_cache_is_bounded_and_starts_over_when_full():
    from kbwatch.plugins.retrieval import tokenizer

    before = tokenizer.tokenize("Reports reporting servers")
    words = " ".join(f"w{i}zq" for i in range(tokenizer.WORD_CACHE_MAX + 10))  # all distinct
    tokenizer.tokenize(words)
    assert 0 < len(tokenizer._words) <= tokenizer.WORD_CACHE_MAX
    assert tokenizer.tokenize("Reports reporting servers") == before  # same tokens after a start-over
