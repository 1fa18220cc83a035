"""What keeps a long-running service's resident memory flat (issue 12, the soak):
the search index's SQLite page cache is bounded by ``[stages.index] cache_mb``,
glibc's mmap threshold is pinned (:func:`kbwatch.pipeline.heap.tune`), a document
prepared for the search index is a few large blocks (bursts of larger texts leave the
heap where it was), and the opt-in ``KBWATCH_DEBUG_MEMORY`` report reads real counters."""

from __future__ import annotations

import gc
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

    # garbage earlier tests left in this process is collected first, not while the lists are made
    # (a collection there freed ~14,000 lists when the tests ran in another order)
    gc.collect()
    gc.disable()
    try:
        rep = MemoryReporter(60)
        first = rep.line()
        held = [[i] for i in range(50_000)]  # 50,000 more lists between two reports
        second = rep.line()
    finally:
        gc.enable()
    assert first.startswith("memory: rss ") and "glibc in-use" in first and "sqlite" in first
    grew = second.split("grew: ", 1)[1]
    assert grew.split(",")[0].startswith("list +"), second  # the type that grew most comes first
    assert int(grew.split(",")[0].split("+")[1].split()[0]) >= 45_000  # (net of lists freed meanwhile)
    # pymalloc's counters: 50,000 one-item lists and their ints (~4-5 MB of small blocks) are live bytes
    # (free blocks of arenas already held may take part of them, so the arena count need not rise much)
    arenas = lambda line: int(line.split("pymalloc arenas ", 1)[1].split()[0])  # noqa: E731
    used = lambda line: float(line.split("pymalloc arenas ", 1)[1].split()[2])  # noqa: E731
    assert used(second) >= used(first) + 2.0 and arenas(second) >= arenas(first), (first, second)
    del held


def test_the_tokenizer_word_cache_is_bounded_and_starts_over_when_full():
    from kbwatch.plugins.retrieval import tokenizer

    before = tokenizer.tokenize("Reports reporting servers")
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = " ".join("w" + letters[i // 676 % 26] + letters[i // 26 % 26] + letters[i % 26] + "zq"
                     for i in range(tokenizer.WORD_CACHE_MAX + 10))  # all distinct, letters only
    tokenizer.tokenize(words)
    assert 0 < len(tokenizer._words) <= tokenizer.WORD_CACHE_MAX
    assert tokenizer.tokenize("Reports reporting servers") == before  # same tokens after a start-over


def test_words_with_digits_are_tokenised_but_not_kept_in_the_word_cache():
    """Amounts, dates and IDs are rarely seen twice: caching them only churned the cache (issue 12, the soak)."""
    import Stemmer

    from kbwatch.plugins.retrieval import tokenizer

    tokenizer._words.clear()
    text = "Invoice INV2024x0001 paid 1,250.00 on 2024-03-01 for servers; ticket abc123s reopened"
    got = tokenizer.tokenize(text)
    stem = Stemmer.Stemmer("english").stemWord
    assert got == [t for t in (stem(w) for w in tokenizer._WORD_RE.findall(tokenizer.normalize(text))
                               if len(w) >= 2 and w not in tokenizer.ENGLISH_STOP_WORDS) if t]
    assert "inv2024x0001" in got and "2024" in got and "abc123" in got  # stemmed like any word
    assert {w for w in tokenizer._words if len(w) > 1} == {"invoice", "paid", "on", "for", "servers", "ticket", "reopened"}
    assert tokenizer.tokenize(text) == got


def test_stemming_new_words_keeps_no_second_cache():
    """PyStemmer keeps a cache of its own (10,000 words, ~50,000 small objects when full) unless it is
    made with size 0; the word cache above already holds every stem, so a second copy only grew the
    service's heap while it met new words (it showed in the soak)."""
    import gc
    import sys

    from kbwatch.plugins.retrieval import tokenizer

    tokenizer.tokenize(" ".join(f"warm{i}zq" for i in range(100)))
    gc.collect()
    start = sys.getallocatedblocks()
    for i in range(5_000):
        tokenizer._stemmer.stemWord(f"fresh{i}wordq")  # the stemmer alone, as the word cache's misses call it
    gc.collect()
    # with PyStemmer's cache on: ~25,000 more blocks for these 5,000 words (~5 per word)
    assert sys.getallocatedblocks() - start < 1_000


def _mixed_text(rng, chars: int) -> str:
    """English words with numbers and Chinese characters, with a heading now and then."""
    en = "The quarterly review covers revenue hiring and the migration of the billing service".split()
    zh = "本季度的重点工作是完成计费系统的迁移并保证对现有客户无感知"
    out, size = ["# big\n\n"], 0
    while size < chars:
        line = (" ".join(rng.choice(en) + str(rng.randint(0, 99)) for _ in range(10)) + " "
                + "".join(rng.choice(zh) for _ in range(20)) + "\n")
        if rng.random() < 0.1:
            line += "\n## part\n"
        out.append(line)
        size += len(line)
    return "".join(out)


def test_a_prepared_document_holds_a_few_large_blocks_not_an_object_per_term(tmp_path):
    # the service keeps a prepared document from its index stage until its batch commits,
    # several at once when larger texts arrive together; a dict and text per chunk (the
    # old form: ~215,000 blocks, 14 MB for these 500,000 characters) left the heap
    # fragmented after they were freed
    import random
    import tracemalloc

    from kbwatch.plugins.retrieval.index import SearchIndex

    rng = random.Random(1)
    idx = SearchIndex(tmp_path / "s.sqlite3")
    idx.prepare_document("parsed/warm.md", "warm", _mixed_text(rng, 20_000))  # caches filled before measuring
    text = _mixed_text(rng, 500_000)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        doc = idx.prepare_document("parsed/big.md", "big", text)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    diff = after.compare_to(before, "filename")
    blocks, size = sum(s.count_diff for s in diff), sum(s.size_diff for s in diff)
    assert blocks <= 15_000, blocks  # the distinct terms and one row per chunk
    assert size <= 6 * 2**20, size  # the chunk texts (2 bytes a character here) and the postings arrays
    assert doc.n_chunks > 250 and doc.tfs.size > 10 * doc.n_chunks
    idx.close()


def test_bursts_of_larger_texts_leave_the_heap_where_it_was():
    # a fresh interpreter with glibc's defaults, tuned as the service is: four threads prepare
    # four texts of ~1 MB side by side while rows a service keeps are allocated meanwhile,
    # the batch is stored, everything is freed and the heap trimmed (the heartbeat does).
    # Measured: +3 / +5 MB after each of two bursts; with a dict and text per chunk +47 / +76 MB
    code = textwrap.dedent("""
        import os, random, sys, tempfile, threading
        from kbwatch.pipeline.heap import trim, tune
        tune(arena_max=2)
        from kbwatch.plugins.retrieval.index import SearchIndex
        sys.path.insert(0, sys.argv[1])
        from test_memory_bounds import _mixed_text
        def anon():
            with open("/proc/self/status") as f:
                return int(f.read().split("RssAnon:")[1].split()[0]) >> 10
        rng = random.Random(1)
        idx = SearchIndex(os.path.join(tempfile.mkdtemp(), "s.sqlite3"))
        idx.set_cache_mb(1)
        kept = []
        def burst(n, chars):
            texts = [_mixed_text(rng, chars) for _ in range(4)]
            out = [None] * 4
            def prep(i):
                out[i] = idx.prepare_document(f"parsed/d{n}-{i}.md", f"d{i}", texts[i])
                kept.extend([f"row {n} {i} {j}", f"parsed/d{j}.md"] for j in range(2000))
            threads = [threading.Thread(target=prep, args=(i,)) for i in range(4)]
            for t in threads: t.start()
            for t in threads: t.join()
            with idx.batch():
                for d in out:
                    idx.upsert_prepared("p", d)
            del texts, out
            trim()
        burst(0, 20_000); burst(1, 20_000)
        base = anon()
        grown = []
        for n in (2, 3):
            burst(n, 1_000_000)
            grown.append(anon() - base)
        print(*grown)
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", code, str(REPO / "tests")], cwd=REPO, capture_output=True,
                         text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    grown = [int(x) for x in out.stdout.split()]
    assert max(grown) <= 20, grown  # MB of resident anonymous memory above the baseline
