"""SearchIndex: ranking basics, incremental updates, removal, segments, persistence."""

import sqlite3

import pytest

from kbwatch.plugins.retrieval import SearchIndex
from kbwatch.plugins.retrieval.index import MERGE_FACTOR


def parsed(name, body):
    return (f"<!-- source: {name}.txt -->\n<!-- archived: archive/{name}_202601010000.txt -->\n"
            f"<!-- parsed_at: 2026-01-01 00:00 -->\n\n# {name}\n\n{body}\n")


DOCS = {
    "parsed/gateway.md": ("gateway", "The API gateway handles authentication and rate limiting for every request."),
    "parsed/billing.md": ("billing", "Invoices are generated monthly. Billing disputes go to the finance team."),
    "parsed/oncall.md": ("oncall", "The on-call engineer rotates weekly and answers pages within 15 minutes."),
    "parsed/人物.md": ("人物", "王沈，字处道，太原晋阳人。三国时期曹魏至西晋初年官员。"),
    "parsed/网关.md": ("网关", "网关负责鉴权和限流，限流算法使用令牌桶。"),
}


@pytest.fixture
def idx(tmp_path):
    ix = SearchIndex(tmp_path / "search.sqlite3")
    with ix.batch():
        for path, (name, body) in DOCS.items():
            ix.upsert_document("p", path, name, parsed(name, body))
    yield ix
    ix.close()


def paths(hits):
    return [h.doc_path for h in hits]


def test_best_match_first(idx):
    hits = idx.search("p", "how is rate limiting done by the gateway?", limit=3)
    assert hits[0].doc_path == "parsed/gateway.md"
    assert hits[0].score > 0
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
    assert idx.search("p", "billing invoices")[0].doc_path == "parsed/billing.md"


def test_chinese_two_character_name(idx):
    hits = idx.search("p", "王沈是哪里人？")
    assert hits and hits[0].doc_path == "parsed/人物.md"
    assert idx.search("p", "限流算法")[0].doc_path == "parsed/网关.md"


def test_hit_carries_lines_and_citation(idx):
    h = idx.search("p", "on-call rotation weekly")[0]
    assert h.doc_path == "parsed/oncall.md"
    assert h.start_line == 5 and h.end_line == 7  # "# oncall" .. body, header comments excluded
    assert h.citation == "parsed/oncall.md#L5-L7"
    assert "on-call engineer" in h.text


def test_no_match_and_unknown_project(idx):
    assert idx.search("p", "zebra xylophone") == []
    assert idx.search("p", "the of and") == []  # only stop words
    assert idx.search("nope", "gateway") == []


def test_title_and_file_name_boost(tmp_path):
    ix = SearchIndex(tmp_path / "s.sqlite3")
    body = "Notes about deployment. " * 3
    ix.upsert_document("p", "parsed/kubernetes.md", "kubernetes", "# Notes\n\n" + body + "Kubernetes is mentioned once.")
    ix.upsert_document("p", "parsed/misc.md", "misc", "# Misc\n\n" + body + "Kubernetes is mentioned once.")
    assert paths(ix.search("p", "kubernetes"))[0] == "parsed/kubernetes.md"
    ix.close()


def test_header_comments_not_indexed(idx):
    assert idx.search("p", "archived parsed_at 202601010000") == []
    assert idx.search("p", "txt source") == []


def test_upsert_replaces_chunks(idx):
    assert not idx.upsert_document("p", "parsed/billing.md", "billing",
                                   parsed("billing", DOCS["parsed/billing.md"][1]))  # unchanged
    assert idx.upsert_document("p", "parsed/billing.md", "billing", parsed("billing", "Refunds take ten days."))
    assert idx.search("p", "invoices monthly") == []
    assert paths(idx.search("p", "refunds"))[0] == "parsed/billing.md"
    assert idx.stats("p")["documents"] == 5


def test_remove_document(idx):
    assert idx.remove_document("p", "parsed/gateway.md")
    assert not idx.remove_document("p", "parsed/gateway.md")
    assert "parsed/gateway.md" not in paths(idx.search("p", "gateway authentication"))
    assert idx.stats("p")["documents"] == 4
    assert [d["path"] for d in idx.documents("p")] == sorted(p for p in DOCS if p != "parsed/gateway.md")


def test_rename_document(idx):
    assert idx.rename_document("p", "parsed/oncall.md", "parsed/team/oncall.md")
    hits = idx.search("p", "on-call engineer")
    assert hits[0].doc_path == "parsed/team/oncall.md"
    assert hits[0].start_line == 5


def test_projects_are_separate(idx):
    idx.upsert_document("q", "parsed/gateway.md", "gw", "# gw\n\nA completely different gateway text about ports.")
    assert paths(idx.search("q", "authentication")) == []
    assert paths(idx.search("q", "ports")) == ["parsed/gateway.md"]
    assert idx.projects() == ["p", "q"]
    assert idx.remove_project("q")
    assert idx.projects() == ["p"]


def test_batch_rollback_on_error(tmp_path):
    ix = SearchIndex(tmp_path / "s.sqlite3")
    with pytest.raises(RuntimeError):
        with ix.batch():
            ix.upsert_document("p", "parsed/a.md", "a", "# a\n\nalpha text")
            raise RuntimeError("boom")
    assert ix.search("p", "alpha") == []
    assert ix.documents("p") == []
    ix.close()


def test_persistent_and_reopened(tmp_path):
    db = tmp_path / "s.sqlite3"
    with SearchIndex(db) as ix:
        ix.upsert_document("p", "parsed/a.md", "a", "# a\n\nalpha beta")
    with SearchIndex(db) as ix:
        assert paths(ix.search("p", "alpha")) == ["parsed/a.md"]


def test_incremental_segments_merge_and_stay_correct(tmp_path):
    ix = SearchIndex(tmp_path / "s.sqlite3")
    n = MERGE_FACTOR * 6
    for i in range(n):  # one transaction (segment) per document, as in the watch service
        ix.upsert_document("p", f"parsed/d{i}.md", f"d{i}", f"# d{i}\n\ncommon words plus unique{i}token")
    for i in range(0, n, 3):
        ix.remove_document("p", f"parsed/d{i}.md")
    st = ix.stats("p")
    assert st["documents"] == n - len(range(0, n, 3))
    assert st["segments"] < n // 2  # tiered merging kept the segment count low
    for i in range(n):
        hits = ix.search("p", f"unique{i}token")
        assert (hits[0].doc_path == f"parsed/d{i}.md") if i % 3 else hits == []
    assert len(ix.search("p", "common words", limit=100)) == st["documents"]
    ix.optimize("p")
    st2 = ix.stats("p")
    assert st2["segments"] == 1 and st2["deleted"] == 0
    assert len(ix.search("p", "common words", limit=100)) == st["documents"]
    ix.close()


def test_scores_match_a_fresh_index(tmp_path):
    """Incremental updates (tombstones + segments) rank exactly like a rebuild."""
    a = SearchIndex(tmp_path / "a.sqlite3")
    for i in range(12):
        a.upsert_document("p", f"parsed/d{i}.md", f"d{i}", f"# d{i}\n\nshared text {'x' * i} v1 alpha{i % 4}")
    for i in range(0, 12, 2):
        a.upsert_document("p", f"parsed/d{i}.md", f"d{i}", f"# d{i}\n\nshared text v2 alpha{i % 3} beta")
    a.remove_document("p", "parsed/d3.md")
    b = SearchIndex(tmp_path / "b.sqlite3")
    with b.batch():
        for d in a.documents("p"):
            text = "\n".join(h.text for h in a.document_chunks("p", d["path"]))
            b.upsert_document("p", d["path"], d["title"], text)
    for q in ("shared text", "alpha1 beta", "alpha2", "v1 v2"):
        ra = [(h.doc_path, round(h.score, 5)) for h in a.search("p", q, limit=20)]
        rb = [(h.doc_path, round(h.score, 5)) for h in b.search("p", q, limit=20)]
        assert sorted(ra) == sorted(rb)
    a.close()
    b.close()


def test_search_documents_groups_chunks(tmp_path):
    ix = SearchIndex(tmp_path / "s.sqlite3")
    long = "# Guide\n\n" + "\n\n".join(f"## Part {i}\nrouter configuration step {i} " + "filler " * 40 for i in range(6))
    ix.upsert_document("p", "parsed/guide.md", "guide", long)
    ix.upsert_document("p", "parsed/other.md", "other", "# other\n\nrouter")
    docs = ix.search_documents("p", "router configuration", limit=5, chunks_per_doc=2)
    assert [d.doc_path for d in docs][0] == "parsed/guide.md"
    assert len(docs[0].chunks) == 2 and len({c.start_line for c in docs[0].chunks}) == 2
    assert len(docs) == 2
    ix.close()


def test_index_is_plain_sqlite(idx, tmp_path):
    con = sqlite3.connect(idx.path)
    assert con.execute("SELECT count(*) FROM docs").fetchone()[0] == 5
    con.close()


def test_same_document_twice_in_one_batch(tmp_path):
    ix = SearchIndex(tmp_path / "s.sqlite3")
    with ix.batch():
        ix.upsert_document("p", "parsed/a.md", "a", "# a\n\nfirst version apples")
        ix.upsert_document("p", "parsed/b.md", "b", "# b\n\nbananas")
        ix.upsert_document("p", "parsed/a.md", "a", "# a\n\nsecond version cherries")
        ix.remove_document("p", "parsed/b.md")
    assert ix.search("p", "apples") == [] and ix.search("p", "bananas") == []
    assert paths(ix.search("p", "cherries")) == ["parsed/a.md"]
    assert ix.stats("p")["chunks"] == 1 and ix.stats("p")["deleted"] == 0
    ix.close()


def test_large_single_batch_is_one_segment(tmp_path):
    ix = SearchIndex(tmp_path / "s.sqlite3")
    n = ix.upsert_documents("p", ((f"parsed/d{i}.md", f"d{i}", f"# d{i}\n\nitem {i} text") for i in range(200)))
    assert n == 200
    assert ix.stats("p")["segments"] == 1
    assert paths(ix.search("p", "item 137"))[0] == "parsed/d137.md"
    ix.close()


def test_sync_project_from_parsed_folder(tmp_path):
    proj = tmp_path / "demo"
    (proj / "parsed" / "sub").mkdir(parents=True)
    (proj / "parsed" / "a.md").write_text(parsed("a", "alpha gateway"), encoding="utf-8")
    (proj / "parsed" / "sub" / "b.md").write_text(parsed("b", "beta billing"), encoding="utf-8")
    (proj / "parsed" / "notes.txt").write_text("not markdown", encoding="utf-8")
    ix = SearchIndex(tmp_path / "state" / "search.sqlite3")
    assert ix.sync_project("demo", proj) == {"indexed": 2, "unchanged": 0, "removed": 0, "skipped": 0}
    assert paths(ix.search("demo", "billing")) == ["parsed/sub/b.md"]
    assert ix.documents("demo")[0]["title"] == "a"
    (proj / "parsed" / "a.md").unlink()
    (proj / "parsed" / "c.md").write_text(parsed("c", "gamma"), encoding="utf-8")
    assert ix.sync_project("demo", proj) == {"indexed": 1, "unchanged": 1, "removed": 1, "skipped": 0}
    assert ix.search("demo", "alpha") == []
    ix.close()


def test_undecodable_text_and_nul_bytes_are_stored(tmp_path):
    ix = SearchIndex(tmp_path / "s.sqlite3")
    text = "# t\n\nbroken \udcff bytes and a nul \x00 here, still searchable marmalade"
    assert ix.upsert_document("p", "parsed/t.md", "t\udcfe", text)
    assert paths(ix.search("p", "marmalade")) == ["parsed/t.md"]
    assert not ix.upsert_document("p", "parsed/t.md", "t\udcfe", text)  # same input -> unchanged
    ix.close()


def test_huge_query_is_handled(idx):
    q = " ".join(f"word{i}" for i in range(3000)) + " gateway"
    assert idx.search("p", q)[0].doc_path == "parsed/gateway.md"


def test_reader_sees_committed_state_only(tmp_path):
    db = tmp_path / "s.sqlite3"
    writer, reader = SearchIndex(db), SearchIndex(db)
    writer.upsert_document("p", "parsed/a.md", "a", "# a\n\nolive oil")
    with writer.batch():
        writer.upsert_document("p", "parsed/b.md", "b", "# b\n\nolive tree")
        assert paths(reader.search("p", "olive")) == ["parsed/a.md"]  # uncommitted batch invisible
    assert sorted(paths(reader.search("p", "olive"))) == ["parsed/a.md", "parsed/b.md"]
    writer.close()
    reader.close()


def test_search_documents_text_fetched_for_kept_chunks_only(tmp_path):
    ix = SearchIndex(tmp_path / "s.sqlite3")
    long = "# Guide\n\n" + "\n\n".join(f"## Part {i}\nrouter configuration step {i} " + "filler " * 40 for i in range(6))
    ix.upsert_document("p", "parsed/guide.md", "guide", long)
    with_text = ix.search_documents("p", "router configuration", limit=5, chunks_per_doc=2)
    bare = ix.search_documents("p", "router configuration", limit=5, chunks_per_doc=2, with_text=False)
    assert [c.chunk_id for c in with_text[0].chunks] == [c.chunk_id for c in bare[0].chunks]
    assert all(c.text.startswith("## Part") and "router" in c.text for c in with_text[0].chunks)
    assert all(c.text == "" for c in bare[0].chunks)
    by_id = {h.chunk_id: h.text for h in ix.document_chunks("p", "parsed/guide.md")}
    assert all(by_id[c.chunk_id] == c.text for c in with_text[0].chunks)
    ix.close()


def test_line_initial_terms_weigh_more(tmp_path):
    """A note that is about a subject (names it at the start of a line) ranks
    above one that mentions it in passing, all else equal: by default for CJK
    n-grams only (issue 14 item 6: for Latin words the bonus did not
    generalise), for words too when ``lead_weight_word`` is set."""
    ix = SearchIndex(tmp_path / "s.sqlite3")
    with ix.batch():
        ix.upsert_document("p", "parsed/a.md", "a", parsed("a", "我们的集群运行网关"))
        ix.upsert_document("p", "parsed/b.md", "b", parsed("b", "网关运行我们的集群"))  # same characters
        ix.upsert_document("p", "parsed/c.md", "c", parsed("c", "our clusters run kubernetes"))
        ix.upsert_document("p", "parsed/d.md", "d", parsed("d", "kubernetes runs our clusters"))
    hits = ix.search_documents("p", "网关")
    assert [h.doc_path for h in hits] == ["parsed/b.md", "parsed/a.md"]
    assert hits[0].score > hits[1].score * 1.1
    words = ix.search_documents("p", "kubernetes")
    assert words[0].score == words[1].score  # no position bonus for words by default
    ix.close()
    iw = SearchIndex(tmp_path / "w.sqlite3", lead_weight_word=3.0)
    with iw.batch():
        iw.upsert_document("p", "parsed/c.md", "c", parsed("c", "our clusters run kubernetes"))
        iw.upsert_document("p", "parsed/d.md", "d", parsed("d", "kubernetes runs our clusters"))
    hits = iw.search_documents("p", "kubernetes")
    assert [h.doc_path for h in hits] == ["parsed/d.md", "parsed/c.md"]
    assert hits[0].score > hits[1].score * 1.1
    iw.close()


def test_prepared_documents_index_exactly_like_upsert(tmp_path):
    """prepare_document (run outside the project lock) + upsert_prepared == upsert_document."""
    a, b = SearchIndex(tmp_path / "a.sqlite3"), SearchIndex(tmp_path / "b.sqlite3")
    with a.batch(), b.batch():
        for path, (name, body) in DOCS.items():
            a.upsert_document("p", path, name, parsed(name, body))
            assert b.upsert_prepared("p", b.prepare_document(path, name, parsed(name, body)))
    assert not b.upsert_prepared("p", b.prepare_document("parsed/网关.md", "网关", parsed("网关", DOCS["parsed/网关.md"][1])))
    for q in ("rate limiting", "王沈是哪里人", "限流算法", "finance team"):
        ha = [(h.doc_path, round(h.score, 9)) for h in a.search_documents("p", q)]
        hb = [(h.doc_path, round(h.score, 9)) for h in b.search_documents("p", q)]
        assert ha == hb and ha, q


def test_ties_rank_by_path_whatever_the_ingest_order(tmp_path):
    """Equal scores are ordered by document path, not by ingest order or segment layout."""
    body = "The backup job runs nightly at two."
    names = ["zeta", "alpha", "mid", "beta"]
    orders = []
    for k, seq in enumerate((names, list(reversed(names)))):
        ix = SearchIndex(tmp_path / f"{k}.sqlite3")
        for name in seq:  # one batch (segment) per document
            with ix.batch():
                ix.upsert_document("p", f"parsed/{name}.md", "note", parsed("note", body))
        orders.append(([h.doc_path for h in ix.search_documents("p", "backup nightly")],
                       [h.doc_path for h in ix.search("p", "backup nightly", limit=2)]))
    assert orders[0] == orders[1]
    assert orders[0][0] == [f"parsed/{n}.md" for n in sorted(names)]
    assert orders[0][1] == ["parsed/alpha.md", "parsed/beta.md"]


def _postings(ix, project="p"):
    pid = ix._project_id(project, create=False)
    return [(term, bytes(ids), bytes(tfs), bytes(lens)) for term, ids, tfs, lens in ix._db.execute(
        "SELECT term, ids, tfs, lens FROM postings WHERE project_id=? ORDER BY term", (pid,))]


@pytest.mark.parametrize("page", [1, 3, 50])
def test_a_merge_read_in_pages_writes_what_a_merge_in_one_read_writes(tmp_path, monkeypatch, page):
    """The merge reads the merged segments a page of rows at a time (bounded memory, issue 12):
    pages that end inside a term, a term filling a page, removed chunks: the same postings."""
    import kbwatch.plugins.retrieval.index as index_mod

    def build(where, page_rows):
        monkeypatch.setattr(index_mod, "MERGE_PAGE_ROWS", page_rows)
        ix = SearchIndex(where)
        for i in range(MERGE_FACTOR * 3):  # one segment a batch; shared terms in every one
            with ix.batch():
                ix.upsert_document("p", f"parsed/d{i}.md", f"d{i}",
                                   parsed(f"d{i}", f"gateway billing term{i} term{i % 3} 网关 限流 {i}"))
        with ix.batch():
            ix.remove_document("p", "parsed/d2.md")
            ix.upsert_document("p", "parsed/d5.md", "d5", parsed("d5", "rewritten gateway text"))
        ix.optimize("p")
        got = _postings(ix), [paths(ix.search("p", q, limit=20)) for q in ("gateway", "term1", "网关", "rewritten")]
        segs = ix._db.execute("SELECT count(*) FROM segments").fetchone()[0]
        ix.close()
        return got, segs

    paged, segs = build(tmp_path / "paged.sqlite3", page)
    whole, _ = build(tmp_path / "whole.sqlite3", 10**9)
    assert segs == 1
    assert paged == whole
    assert "parsed/d2.md" not in paged[1][0] and "parsed/d5.md" in paged[1][3]


def test_a_merge_holds_a_page_of_postings_not_all_of_them(tmp_path):
    """A merge of ~44,000 posting rows (three segments of 50 documents, 300 mostly distinct
    terms each) once peaked at ~20 MB of Python objects, all rows and all merged rows held at
    once; read a page at a time it stays under a few MB."""
    import random
    import tracemalloc

    ix = SearchIndex(tmp_path / "s.sqlite3")
    rng = random.Random(1)
    for b in range(MERGE_FACTOR - 1):  # one short of an automatic merge: optimize() merges them
        with ix.batch():
            for i in range(50):
                words = " ".join(f"w{rng.randrange(200_000)}" for _ in range(300))
                ix.upsert_document("p", f"parsed/b{b}d{i}.md", f"d{i}", f"# d{i}\n\n{words}\n")
    assert ix.stats("p")["segments"] == MERGE_FACTOR - 1
    rows = ix._db.execute("SELECT count(*) FROM postings").fetchone()[0]
    assert rows > 40_000
    tracemalloc.start()
    try:
        ix.optimize("p")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ix.stats("p")["segments"] == 1
    assert ix._db.execute("SELECT count(*) FROM postings").fetchone()[0] < rows
    assert peak < 8_000_000, f"merge peak {peak / 1e6:.1f} MB"
    ix.close()


def test_several_opening_a_fresh_index_at_once_all_succeed(tmp_path):
    """The service and an `ask` opening a root's index for the first time together: reading
    the schema and then writing it deadlocked, and SQLite answered "database is locked"
    without waiting (137 rounds of 200 with six threads). All six open, and it works."""
    from conftest import open_at_once

    for round_ in range(20):
        path = tmp_path / f"r{round_}" / "index.sqlite3"
        errors = open_at_once(lambda: SearchIndex(path).close())
        assert not errors, (round_, errors)
    with SearchIndex(path) as idx:
        idx.upsert_document("p", "parsed/a.md", "A", "# A\n\nwidgets and gears\n")
        assert paths(idx.search("p", "gears")) == ["parsed/a.md"]


def test_opening_a_current_index_writes_nothing(tmp_path):
    """`ask` beside a busy service: opening an index made with the same settings takes no write
    lock, so it does not wait behind the service's write (it used to rewrite the fingerprint)."""
    path = tmp_path / "index.sqlite3"
    SearchIndex(path).close()
    writer = sqlite3.connect(str(path), isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # the service in the middle of a write
    try:
        idx = SearchIndex(path)
        assert idx.search("p", "anything") == []
        idx.close()
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_changed_settings_still_start_the_index_over(tmp_path):
    path = tmp_path / "index.sqlite3"
    with SearchIndex(path) as idx:
        idx.upsert_document("p", "parsed/a.md", "A", "# A\n\nwidgets and gears\n")
    with SearchIndex(path, title_weight=7.0) as idx:  # another fingerprint: the cache is dropped
        assert idx.search("p", "gears") == []
    with SearchIndex(path, title_weight=7.0) as idx:  # and stays dropped, not rebuilt each open
        idx.upsert_document("p", "parsed/a.md", "A", "# A\n\nwidgets and gears\n")
    with SearchIndex(path, title_weight=7.0) as idx:
        assert paths(idx.search("p", "gears")) == ["parsed/a.md"]
