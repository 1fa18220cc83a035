"""The relevance gate of build_pack (issue 14 item 2): a weak best match is
``no_match`` with the seed's line instead of filler snippets; function words
never count as matches. Real SQLite indexes built from the notes in
tests/fixtures/relevance; the bench-data check runs when ../shared is present."""

import json
import os
import random
from pathlib import Path

import pytest

from kbwatch.plugins.retrieval import SearchIndex, build_pack
from kbwatch.plugins.retrieval.relevance import (
    MIN_COVERAGE,
    NOT_FOUND_EN,
    NOT_FOUND_ZH,
    content_terms,
    judge,
)

HERE = Path(__file__).resolve().parent
FIX = HERE / "fixtures" / "relevance"
SHARED = Path(os.environ.get("KBWATCH_SHARED") or HERE.parents[1] / "shared")
BENCH = SHARED / "bench-data" / "retrieval"


def parsed(name: str, body: str) -> str:
    return (f"<!-- source: {name}.md -->\n<!-- archived: archive/{name}_202601010000.md -->\n"
            f"<!-- parsed_at: 2026-01-01 00:00 -->\n\n{body}")


@pytest.fixture(scope="module")
def idx(tmp_path_factory):
    ix = SearchIndex(tmp_path_factory.mktemp("relevance") / "search.sqlite3")
    with ix.batch():
        for lang in ("en", "zh"):
            for f in sorted((FIX / lang).glob("*.md")):
                text = f.read_text(encoding="utf-8")
                ix.upsert_document(lang, f"parsed/{f.name}", text.splitlines()[0].lstrip("# "), parsed(f.stem, text))
        ix.upsert_document("lorem", "parsed/lorem.md", "lorem", (FIX / "lorem.md").read_text(encoding="utf-8"))
    yield ix
    ix.close()


def questions(lang: str) -> list[str]:
    return [q for q in (FIX / lang / "questions.txt").read_text(encoding="utf-8").splitlines() if q.strip()]


def test_english_question_against_lorem_ipsum_csv_is_no_match(idx):
    q = "How do I reset my password?"
    hits = idx.search_documents("lorem", q)
    assert hits, "the ranking alone matches the CSV (on 'do'): the gate must catch it"
    pack = build_pack(idx, "lorem", q)
    assert pack.relevance.status == "no_match"
    assert pack.snippets == [] and pack.selected_files == []
    assert pack.nothing_found
    assert NOT_FOUND_EN in pack.text
    assert "lorem.md#L" not in pack.text  # no filler snippet
    assert any("nothing found" in w["message"] and pack.relevance.reason in w["message"] for w in pack.warnings)
    assert "content words" in pack.relevance.reason


def test_chinese_question_against_lorem_ipsum_csv_is_no_match(idx):
    pack = build_pack(idx, "lorem", "如何重置我的密码？")
    assert pack.relevance.status == "no_match"
    assert pack.snippets == []
    assert NOT_FOUND_ZH in pack.text
    assert pack.relevance.line == NOT_FOUND_ZH


def test_answerable_questions_are_ok_with_snippets(idx):
    pack = build_pack(idx, "en", "How do I reset my password?")
    assert pack.relevance.status == "ok", pack.relevance.reason
    assert pack.selected_files[0] == "parsed/password-reset.md"
    assert "self-service portal" in pack.text
    assert NOT_FOUND_EN not in pack.text
    zh = build_pack(idx, "zh", "报销单要在多少天内提交？")
    assert zh.relevance.status == "ok", zh.relevance.reason
    assert zh.selected_files[0] == "parsed/reimbursement.md"
    assert NOT_FOUND_ZH not in zh.text


@pytest.mark.parametrize("q", ["How do you do?", "what is it and how does it do what it does", "Do you know what it is?"])
def test_function_word_only_queries_are_no_match(idx, q):
    assert content_terms(q) == []
    for project in ("lorem", "en"):
        pack = build_pack(idx, project, q)
        assert pack.relevance.status == "no_match"
        assert "no content words" in pack.relevance.reason
        assert pack.snippets == []


def test_chinese_function_words_do_not_count(idx):
    assert content_terms("请问这个是什么？") == []
    pack = build_pack(idx, "zh", "请问你们这个是什么？")
    assert pack.relevance.status == "no_match"


def test_explicit_reference_still_shown_when_the_search_is_no_match(idx):
    pack = build_pack(idx, "lorem", "[[parsed/lorem.md]] how do I reset my password?")
    assert pack.relevance.status == "no_match"
    assert pack.selected_files == ["parsed/lorem.md"]
    assert pack.snippets[0].hit_reason == "explicit"


def test_threshold_is_applied_and_reported(idx):
    docs = idx.search_documents("en", "password portal rollback", limit=6, chunks_per_doc=3)
    loose = judge(idx, "en", "password portal rollback", docs, min_coverage=0.0)
    assert loose.status == "ok" and 0 < loose.coverage < 1
    strict = judge(idx, "en", "password portal rollback", docs, min_coverage=min(1.0, loose.coverage + 0.01))
    assert strict.status == "no_match" and "needed" in strict.reason
    assert 0 < MIN_COVERAGE < 1


def test_cross_source_no_answer_on_fixtures(idx):
    """Each project's own questions are answered; the other language's are no_match."""
    en, zh = questions("en"), questions("zh")
    for lang, own, other, other_lang in (("en", en, zh, "zh"), ("zh", zh, en, "en")):
        for q in own:
            p = build_pack(idx, lang, q)
            assert p.relevance.status == "ok", (lang, q, p.relevance.reason)
        for q in other:
            p = build_pack(idx, lang, q)
            assert p.relevance.status == "no_match", (lang, q, p.relevance.reason)
            assert p.snippets == []


def _load(name, split, n, n_docs, seed=14):
    """n sampled questions of the split, and their relevant documents plus others up to n_docs."""
    corpus = [json.loads(line) for line in (BENCH / name / "corpus.jsonl").open(encoding="utf-8")]
    rel: dict[str, set[str]] = {}
    with (BENCH / name / "qrels" / f"{split}.tsv").open(encoding="utf-8") as f:
        next(f)
        for line in f:
            q, d, _ = line.rstrip("\n").split("\t")
            rel.setdefault(q, set()).add(d)
    qs = sorted((q["_id"], q["text"]) for q in map(json.loads, (BENCH / name / "queries.jsonl").open(encoding="utf-8"))
                if q["_id"] in rel and q["text"].strip())
    rnd = random.Random(seed)
    picked = rnd.sample(qs, n)
    keep = set().union(*(rel[q] for q, _ in picked))
    others = [d for d in corpus if d["_id"] not in keep]
    docs = [d for d in corpus if d["_id"] in keep] + rnd.sample(others, max(0, min(len(others), n_docs - len(keep))))
    return docs, [t for _, t in picked]


@pytest.mark.skipif(not BENCH.is_dir(), reason="../shared/bench-data/retrieval absent (steering repo not checked "
                    "out beside this one): the full cross-source check runs in bench/relevance.py")
def test_cross_source_on_bench_data(tmp_path):
    """A sample of the tuning splits: SciFact claims asked of CMRC and CMRC questions
    asked of SciFact are no_match >= 95%; their own projects answer >= 95% of this
    sample (bench/relevance.py checks the 2% target on every query of the splits)."""
    ix = SearchIndex(tmp_path / "s.sqlite3")
    sets = {"scifact": _load("scifact", "train", 80, 400), "cmrc2018": _load("cmrc2018", "trial", 80, 250)}
    with ix.batch():
        for name, (corpus, _) in sets.items():
            for d in corpus:
                title = d.get("title") or d["_id"]
                ix.upsert_document(name, f"parsed/{d['_id']}.md", title, f"# {title}\n\n{d['text']}\n")
    for name, other in (("scifact", "cmrc2018"), ("cmrc2018", "scifact")):
        own = [build_pack(ix, name, q).relevance.no_match for q in sets[name][1]]
        cross = [build_pack(ix, name, q).relevance.no_match for q in sets[other][1]]
        assert sum(own) / len(own) <= 0.05, (name, sum(own))
        assert sum(cross) / len(cross) >= 0.95, (name, sum(cross))
    ix.close()


def test_a_document_updated_several_times_still_answers_an_exact_question(tmp_path):
    """The earlier versions' chunks wait for a merge as tombstones: term_stats counted them in
    df but not in the number of chunks, so df > n, every idf turned negative and the exact
    question was judged "no match" (until `kbwatch index rebuild`)."""
    from kbwatch.plugins.retrieval.relevance import idf_weights

    with SearchIndex(tmp_path / "s.sqlite3") as ix:
        ix.upsert_document("p", "parsed/other.md", "other", parsed("other", "# Other\n\nThe canteen opens at noon."))
        for version in range(1, 7):
            ix.upsert_document("p", "parsed/doc.md", "doc",
                               parsed("doc", f"# Doc\n\nThe widget frobnication level is {version}.\n"))
            n, df = ix.term_stats("p", ["widget", "frobnic", "level", "canteen"])
            assert n == 2 and set(df.values()) <= {1}, (version, n, df)
            assert all(w > 0 for w in idf_weights(ix, "p", content_terms("widget frobnication level")).values())
            question = "widget frobnication level"
            verdict = judge(ix, "p", question, ix.search_documents("p", question))
            assert verdict.status == "ok", (version, verdict)
