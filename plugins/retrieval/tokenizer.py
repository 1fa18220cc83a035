"""Mixed Latin/CJK tokeniser for BM25 retrieval, with no dictionary download.

* Text is NFKC-normalised (full-width Latin and digits become ASCII) and
  case-folded.
* Latin-script (and any other non-CJK) words: runs of letters/digits, single
  characters dropped (except a digit written directly against CJK text, as in
  6月 or 第3名), stop words dropped, Snowball-stemmed (PyStemmer,
  ``english``).
* CJK (Han, kana, Hangul) runs: overlapping character bigrams plus unigrams,
  in text order. ``tokenize("王沈是哪里人")`` gives ``王 王沈 沈 沈是 人``
  (see the tests). Question words (什么 为什么 怎么 怎样 如何 多少 哪 哪些
  哪里 哪个 哪位 哪种 哪儿 谁 吗 呢) and the particle 的 split a run: no bigram
  spans them and they give no unigram. "什么是X" is tokenised as "X是" (the
  same question as "X是什么"). A handful of further interrogative bigrams
  (哪里, 是否 ...) are dropped, and so are the unigrams of the most frequent
  function characters (了 是 在 和 ...), which still take part in bigrams.

The same function is used for documents and queries, so both sides always
agree. ``TOKENIZER_VERSION`` is stored in the search index; changing the rules
must bump it (the index is then rebuilt).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import Stemmer

TOKENIZER_VERSION = "3"

_CJK_RANGES = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK ext A
    "\u4e00-\u9fff"  # CJK unified
    "\uac00-\ud7af"  # hangul syllables
    "\uf900-\ufaff"  # CJK compatibility
    "\U00020000-\U0002ebef"  # CJK ext B-F
    "\U00030000-\U0003134f"  # CJK ext G
)
_CJK_CHAR_RE = re.compile(f"[{_CJK_RANGES}]")

# Lucene / Elasticsearch English stop set plus a few very frequent function words.
ENGLISH_STOP_WORDS = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their then
    there these they this to was will with""".split()
)

# Bigrams that are pure question words: frequent in questions, near-absent from
# the declarative text being searched, so they only add noise.
CJK_STOP_BIGRAMS = frozenset(
    """什么 哪里 哪个 哪些 哪位 哪一 哪年 多少 为什 怎么 怎样 如何 是否 是什 是哪 是谁 是多 有哪 有多 有什
    叫什 了什 在哪 的是 是在 的什 么时 么样 么人 么地 么名 么原 么是 么的""".split()
)

# Single characters dropped as unigrams (they still form bigrams): question
# particles and the most frequent function characters.
CJK_STOP_UNIGRAMS = frozenset("什么哪谁吗呢的了是在和")

# PyStemmer keeps a cache of its own (10,000 words by default, ~2.3 MB as 50,000 small objects);
# _WordCache below already caches every word's stem, so PyStemmer's is turned off (size 0)
_stemmer = Stemmer.Stemmer("english", 0)


def normalize(text: str) -> str:
    """NFKC + casefold, the normalisation applied before tokenising."""
    return unicodedata.normalize("NFKC", text).casefold()


_has_digit = re.compile(r"\d").search
WORD_CACHE_MAX = 20_000  # ~4 MB of words and their stems at most (~185 bytes each)


class _WordCache(dict):
    """word -> token ("" when dropped); filled on first sight.

    Bounded: a long-running service meets new words for ever (numbers, IDs,
    random tags, names), and an unbounded cache was a steady part of its
    resident growth in the soak. When full it starts over; the frequent words
    are back after a few documents (stemming a word costs ~1 µs). Words with a
    digit (amounts, dates, IDs, phone numbers, row numbers of a table) are
    stemmed but not kept: they are rarely seen twice, and a number-heavy
    document filled the cache with them, starting it over again and again."""

    def __missing__(self, word: str) -> str:
        if len(word) < 2 or word in ENGLISH_STOP_WORDS:
            tok = ""
        else:
            tok = _stemmer.stemWord(word)
            if _has_digit(word) is not None:
                return tok
        if len(self) >= WORD_CACHE_MAX:
            self.clear()
        self[word] = tok
        return tok


_words = _WordCache()
_WORD_RE = re.compile(f"[^\\W_{_CJK_RANGES}]+")
_CJK_SPLIT_RE = re.compile(f"([{_CJK_RANGES}]+)")
_CJK_STOP = CJK_STOP_UNIGRAMS | CJK_STOP_BIGRAMS


# Question words and the particle 的 break a CJK run: no n-gram spans them, and
# the question words leave no unigram either (的 is a stop unigram). A bigram
# across them ("有什", "么用", "由谁", "谁创", "松的", "的树") pairs a content
# character with a function word and matches unrelated text; measured on the
# tuning splits: CMRC sentences +0.0013, paragraphs +0.0013 nDCG@10.
# "哪" + a classifier/suffix (哪些 哪里 哪个 ...) is one question word: split on
# the whole word, else its second character is left behind as a unigram and
# bigram (些 / 些发) that matches 一些, 这些 ... (tokenizer 3).
CJK_BREAK_WORDS = ("为什么", "什么", "怎么", "怎样", "如何", "多少", "哪些", "哪里", "哪个", "哪位", "哪种", "哪儿",
                   "哪", "谁", "吗", "呢", "的")
_CJK_BREAK_RE = re.compile("|".join(map(re.escape, sorted(CJK_BREAK_WORDS, key=len, reverse=True))))


def _grams(run: str) -> list[str]:
    n = len(run)
    grams = [run[i : i + 2] if j else run[i] for i in range(n) for j in (0, 1) if not j or i + 1 < n]
    return [g for g in grams if g not in _CJK_STOP]


def _cjk_grams(run: str) -> list[str]:
    if _CJK_BREAK_RE.search(run) is None:
        return _grams(run)
    out: list[str] = []
    pos, prev = 0, ""
    for m in _CJK_BREAK_RE.finditer(run):
        piece = run[pos : m.start()]
        if piece:
            out.extend(_grams(_copula_first(prev, piece)))
        pos, prev = m.end(), m.group()
    piece = run[pos:]
    if piece:
        out.extend(_grams(_copula_first(prev, piece)))
    return out


def _copula_first(prev: str, piece: str) -> str:
    """The piece after 什么 in 什么是X: returned as X是. 什么是X asks the same as
    X是什么 (what is X) and the answer reads X是...; both forms then give the
    bigram of X's last character + 是, not 是 + X's first character, which only
    matches ...就是X... (tokenizer 3)."""
    if prev == "什么" and len(piece) > 1 and piece[0] == "是":
        return piece[1:] + "是"
    return piece


def tokenize(text: str) -> list[str]:
    """Return the index/query tokens of ``text`` in text order (duplicates kept)."""
    if not text:
        return []
    norm = normalize(text)
    get = _words.__getitem__
    if _CJK_CHAR_RE.search(norm) is None:
        return [t for t in map(get, _WORD_RE.findall(norm)) if t]
    out: list[str] = []
    parts = _CJK_SPLIT_RE.split(norm)
    last = len(parts) - 1
    for i, part in enumerate(parts):
        if not part:
            continue
        if i % 2:
            out.extend(_cjk_grams(part))
            continue
        for m in _WORD_RE.finditer(part):
            w = m.group()
            tok = get(w)
            if tok:
                out.append(tok)
            elif w.isdigit() and ((m.start() == 0 and i > 0) or (m.end() == len(part) and i < last)):
                out.append(w)  # a single digit written against CJK text: 6月, 第3名
    return out


@lru_cache(maxsize=4096)
def tokenize_query(text: str) -> tuple[str, ...]:
    """Tokens of a query (cached: the same question is often asked twice)."""
    return tuple(tokenize(text))


def has_cjk(text: str) -> bool:
    return _CJK_CHAR_RE.search(text) is not None
