"""The relevance decision of a pack: is the best match strong enough to show?

BM25 always ranks something first, even for a question the knowledge base
cannot answer (an English question used to match "do" in a Lorem-ipsum CSV).
``judge`` looks at the chunks the ranking selected and returns ``ok`` or
``no_match`` with a one-line reason; ``build_pack`` then shows the seed's
"not found" line instead of filler snippets.

The measure is the **IDF-weighted coverage** of the question's content terms
by the best selected chunk (its text plus its title field: document title,
file name, heading path, as the index ranks them)::

    coverage = sum(idf(t) for content terms t in the chunk) / sum(idf(t) for all content terms)

with ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` over the project's
chunks (a term the project never uses gets ``df = 0``, the highest weight).
It is a fraction in [0, 1], comparable across projects of any size and
across query lengths, unlike a raw BM25 score. Function words never count:
the question words and auxiliaries of ``FUNCTION_WORDS`` (how, do, what,
does, is...) and the Chinese function terms of ``CJK_FUNCTION_TERMS`` are
left out of both sums (the tokenizer already drops the stop words it knows).
A question made only of function words is ``no_match`` ("no content words"),
and so is a question of two or more content terms whose best chunk holds
fewer than ``MIN_MATCHED`` (2) of them: one shared word is not an answer.

``MIN_COVERAGE`` was chosen by cross-validation on the tuning splits of
../shared/bench-data/retrieval (``bench/relevance.py`` prints the figures and
BENCHMARKS.md records them); the ranking itself is untouched.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Iterable, Sequence

from .tokenizer import CJK_STOP_UNIGRAMS, has_cjk, tokenize, tokenize_query

# Chosen by 5-fold cross-validation (bench/relevance.py); see the module doc.
MIN_COVERAGE = 0.2
# A question of two or more content terms needs at least this many of them in
# the best chunk: one shared word ("state", "do", a name in parentheses) is not
# an answer.
MIN_MATCHED = 2
# How many of the ranked documents are looked at (the default pack asks for 8).
DEPTH = 8

NOT_FOUND_ZH = "当前知识库未找到相关内容"
NOT_FOUND_EN = "nothing relevant in this knowledge base"

# English words that carry the form of a question, not its subject. They are
# stemmed through the tokenizer below, so "does" -> "doe", "doing" -> "do".
# Words that are often a subject in technical text (use, type, mean, value)
# are not listed.
FUNCTION_WORDS = """
how what why when where which who whom whose whats hows do does did done doing can could would should shall
may might must have has had having am were been being get gets got i me my mine we us our ours you your yours
he him his she her hers its they them theirs one ones someone something anything any some all each every
more most much many very also just only so than too about tell know explain describe show give find please
want need there here way ways thing things like make makes made between
other another same kind lot lots really actually ever yes ok okay hi hello thanks thank
work works worked happen happens happened exist exists
""".split()

# Chinese function terms (unigrams and bigrams as the tokenizer makes them):
# pronouns, demonstratives, modal and request words. They still take part in
# ranking; they only do not count as evidence that a chunk answers the question.
# A bigram of two function characters (问这, 个是) is a function term too.
CJK_FUNCTION_TERMS = frozenset(
    """我 你 您 他 她 它 们 这 那 个 有 请 问 能 可 以 会 要 想 吧 啊 呀 么 一 下 些 样 知 道 告 诉 给 说 讲 怎 为 是 的 吗 呢 什 哪 谁
    我们 你们 他们 她们 它们 这个 那个 这些 那些 这样 那样 可以 能够 知道 请问 告诉 一下 一些 有没 没有 是不
    不是 关于 介绍 解释 说明 怎么 为何 需要 应该 相关 内容 问题""".split()
)


@lru_cache(maxsize=1)
def function_terms() -> frozenset[str]:
    """Every index token that is a function word (English stems + Chinese terms)."""
    out: set[str] = set(CJK_FUNCTION_TERMS)
    for w in FUNCTION_WORDS:
        out.update(tokenize(w))
    return frozenset(out)


@dataclass(frozen=True)
class Relevance:
    """The verdict on one question: ``status`` is ``ok`` or ``no_match``."""

    status: str
    reason: str
    coverage: float  # IDF-weighted coverage of the content terms by the best chunk, 0..1
    matched: tuple[str, ...] = ()  # content terms found in the best chunk
    line: str = ""  # the "not found" line to show (no_match only)

    @property
    def no_match(self) -> bool:
        return self.status == "no_match"


def not_found_line(question: str) -> str:
    """The seed's line in the question's language."""
    return NOT_FOUND_ZH if has_cjk(question) else NOT_FOUND_EN


@lru_cache(maxsize=1)
def _function_chars() -> frozenset[str]:
    return frozenset(t for t in CJK_FUNCTION_TERMS if len(t) == 1) | CJK_STOP_UNIGRAMS


def is_function_term(term: str) -> bool:
    """A function word, or a CJK bigram made of two function characters (问这, 个是)."""
    if term in function_terms():
        return True
    fc = _function_chars()
    return len(term) == 2 and term[0] in fc and term[1] in fc


def content_terms(question: str) -> list[str]:
    """The question's tokens that can count as a match (function words removed), deduplicated."""
    seen: dict[str, None] = {}
    for t in tokenize_query(question):
        if not is_function_term(t):
            seen.setdefault(t, None)
    return list(seen)


@lru_cache(maxsize=2048)
def _chunk_terms(text: str, meta: str) -> frozenset[str]:
    """A chunk's terms, cached for the next questions: keyed on whole chunk texts (~2 KB
    each, ~10 KB with the set), so the bound stays small for a long-lived MCP server or
    page (a question looks at tens of chunks)."""
    return frozenset(tokenize(text)) | frozenset(tokenize(meta))


def coverage(terms: Sequence[str], chunk_terms: Iterable[frozenset[str]], idf: dict[str, float],
             min_hits: int = 1) -> tuple[float, tuple[str, ...]]:
    """Best IDF-weighted coverage of ``terms`` over the chunks holding at least
    ``min_hits`` of them, and the terms it matched (``0.0, ()`` when none does)."""
    total = sum(idf[t] for t in terms)
    if total <= 0:
        return 0.0, ()
    best, best_terms = 0.0, ()
    for ct in chunk_terms:
        hit = tuple(t for t in terms if t in ct)
        if len(hit) < min_hits:
            continue
        cov = sum(idf[t] for t in hit) / total
        if cov > best:
            best, best_terms = cov, hit
    return best, best_terms


def idf_weights(index, project: str, terms: Sequence[str]) -> dict[str, float]:
    """Lucene idf of each term over the project's chunks (df = 0 for an unknown term)."""
    n, df = index.term_stats(project, terms)
    n = max(n, 1)
    return {t: math.log(1.0 + (n - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)) for t in terms}


def judge(index, project: str, question: str, doc_hits: Sequence, *, min_coverage: float | None = None) -> Relevance:
    """Decide whether the ranked documents ``doc_hits`` (``DocHit`` with their
    chunks' text; the first ``DEPTH`` are looked at) answer ``question``. ``min_coverage`` defaults to ``MIN_COVERAGE``."""
    threshold = MIN_COVERAGE if min_coverage is None else min_coverage
    line = not_found_line(question)
    terms = content_terms(question)
    if not terms:
        return Relevance("no_match", "the question has no content words (only function words such as how, do, what)",
                         0.0, (), line)
    if not doc_hits:
        return Relevance("no_match", "no document contains any word of the question", 0.0, (), line)
    idf = idf_weights(index, project, terms)
    chunks = []
    for d in doc_hits[:DEPTH]:
        stem = PurePosixPath(d.doc_path).stem
        for h in d.chunks:
            chunks.append(_chunk_terms(h.text, f"{d.title}\n{stem}\n{h.heading}"))
    need = min(MIN_MATCHED, len(terms))
    cov, matched = coverage(terms, chunks, idf, min_hits=need)
    if not matched:
        best = max((sum(1 for t in terms if t in ct) for ct in chunks), default=0)
        return Relevance("no_match", f"no passage holds {need} of the question's {len(terms)} content words "
                         f"(at most {best})", 0.0, (), line)
    if cov < threshold:
        return Relevance("no_match", f"best match covers {cov:.0%} of the question's content words "
                         f"(weighted by rarity; at least {threshold:.0%} needed; matched: {', '.join(matched)})",
                         cov, matched, line)
    return Relevance("ok", f"best match covers {cov:.0%} of the question's content words", cov, matched, "")
