"""The learned injection detectors: logistic models over word unigrams and bigrams (English) or Han
character unigrams and bigrams (Chinese), scored on token windows of a document (rule ``injection.model``).

Owns loading the models from package data (``data/injection-model-{en,zh}.json``, written by
``bench/train_injection_model.py``; no numpy or scikit-learn at run time) and scoring a text.

Features of a window of ``n`` tokens: the count of each known unigram and bigram, divided by
``sqrt(n)``. So a window's score is ``bias + (sum of its tokens' weights) / sqrt(n)``, where a
token's weight is its unigram's plus the bigram it ends; one prefix sum over the document scores
every window in O(1). Windows are ``window`` tokens long, every ``stride`` tokens (the whole text
when it is shorter); windows shorter than ``min_tokens`` are not scored, nor windows without one of
the ``gate`` words (an AI, a bot, a prompt, a reply: whom or what a jailbreak addresses; ``gate_except`` names
next words that cancel a gate word, "response to"), when the model has a gate,
or, when the model names ``gate_signals``, one of the rules' weak jailbreak signals of those names (the caller
passes where they start: ``gate_at``), nor windows made of one line repeated (fewer distinct tokens than
``MIN_DISTINCT`` of their length),
nor windows in another language (fewer tokens with a weight than ``MIN_KNOWN`` of their length).
The tokens are those of the scanner's matching view (lower case, NFKC, confusables folded), so the offsets the caller maps back
are the view's.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from bisect import bisect_left
from functools import lru_cache
from itertools import accumulate, chain, islice, repeat
from operator import add
from pathlib import Path

__all__ = ["TOKEN", "Model", "load", "load_zh", "tokens", "features", "token_indices"]

TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
MIN_DISTINCT = 0.2  # a window with fewer distinct tokens than this share of its length is not scored
MIN_KNOWN = 0.4  # nor a window where fewer tokens than this share have a weight (another language)
SMALL_TOKENS = 20_000  # above this many tokens the per-token sums are arrays, not lists (issue 12)
MODEL_FILE = Path(__file__).resolve().parent / "data" / "injection-model-en.json"
MODEL_FILE_ZH = Path(__file__).resolve().parent / "data" / "injection-model-zh.json"
ZH_TOKEN = r"[\u4e00-\u9fff]|[a-z0-9]+"  # the Chinese model's tokens: Han characters, ASCII words


def tokens(text: str) -> list[str]:
    """The model's tokens of a (lower-case view) text."""
    return TOKEN.findall(text)


def features(toks: list[str]) -> list[str]:
    """Unigrams and bigrams of a token list."""
    return toks + [a + " " + b for a, b in zip(toks, toks[1:])]


class Model:
    """Weights by term (unigram ``"word"`` or bigram ``"word word"``), a bias and the window shape."""

    def __init__(self, data: dict):
        self.weights: dict[str, float] = data["weights"]
        # English: words; Chinese: Han characters and ASCII words (so bigrams are character bigrams)
        self.token_re: re.Pattern = re.compile(data.get("token_pattern") or TOKEN.pattern)
        self.bias: float = float(data["bias"])
        self.window: int = int(data["window"])
        self.stride: int = int(data["stride"])
        self.min_tokens: int = int(data["min_tokens"])
        self.scales: tuple[int, ...] = tuple(int(x) for x in data.get("scales") or ())
        self.threshold: float = float(data["threshold"])  # probability, chosen by cross-validation
        self.meta: dict = data.get("meta", {})
        # a window is scored only when it holds one of these words (an AI, a bot, a prompt: whom the text
        # addresses); empty = every window
        self.gate: frozenset[str] = frozenset(data.get("gate") or ())
        self.gate_rx = _gate_pattern(self.gate) if self.gate and self.token_re.pattern == TOKEN.pattern else None
        # names of the rules' weak jailbreak signals (injection_rules.SIGNALS) that also open the gate where they
        # occur ("no-limits", "role-play" …): a persona prompt with no AI word is addressed through them
        self.gate_signals: frozenset[str] = frozenset(data.get("gate_signals") or ())
        # gate words that do not open the gate when the next token is one of these ("in response to a trigger":
        # a preposition, not a reply asked of someone)
        self.gate_except: dict[str, frozenset[str]] = {w: frozenset(n) for w, n in (data.get("gate_except") or {}).items()}
        # the bigram weights by first token, then second token: a pair's weight is looked up without making
        # its "a b" string (None: a token pattern not known to exclude white space; the strings are made)
        self._bigrams: dict[str, dict[str, float]] | None = (
            _bigram_table(self.weights) if self.token_re.pattern in (TOKEN.pattern, ZH_TOKEN) else None)

    def gate_flags(self, toks: list[str]) -> list[bool]:
        """Per token, whether it opens the gate (a gate word, unless followed by one of its exceptions)."""
        flags = list(map(self.gate.__contains__, toks))
        for w, nxt in self.gate_except.items():
            i = -1
            try:
                while True:
                    i = toks.index(w, i + 1)
                    if i + 1 < len(toks) and toks[i + 1] in nxt:
                        flags[i] = False
            except ValueError:
                pass
        return flags

    def token_weights(self, toks: list[str]) -> list[float]:
        """Per token, its unigram's weight plus the weight of the bigram it ends (C-level maps: no Python loop)."""
        g = self.weights.get
        w = list(map(g, toks, repeat(0.0)))
        if len(toks) > 1:
            w[1:] = map(add, w[1:], self._bigram_weights(toks))
        return w

    def _bigram_weights(self, toks: list[str]):
        """Per token pair (``toks[i]``, ``toks[i + 1]``), the weight of its bigram (0.0 when it has none):
        ``weights.get(a + " " + b, 0.0)``, the same floats."""
        table = self._bigrams
        if table is None:
            return map(self.weights.get, map(" ".join, zip(toks, islice(toks, 1, None))), repeat(0.0))
        return map(dict.get, map(table.get, toks, repeat(_NO_BIGRAMS)), islice(toks, 1, None), repeat(0.0))

    def window_spans(self, n: int) -> list[tuple[int, int]]:
        """Token index ranges [s, e) of the windows over ``n`` tokens: ``window`` tokens every ``stride``,
        and for each extra size in ``scales`` (shorter windows, so a short passage in a long document is not
        diluted) the same at a proportional stride."""
        return list(self._iter_spans(n))

    def _iter_spans(self, n: int):
        """:meth:`window_spans`, one at a time (a large document has tens of thousands of windows)."""
        if n < self.min_tokens:
            return
        if n <= self.window:
            yield 0, n
        else:
            last = 0
            for s in range(0, n - self.window + 1, self.stride):
                last = s + self.window
                yield s, last
            if last < n:
                yield n - self.window, n
        for size in self.scales:
            if size < n and size >= self.min_tokens:
                step = max(1, self.stride * size // self.window)
                for s in range(0, n - size + 1, step):
                    yield s, s + size

    def scores(self, toks: list[str], open_at=()) -> list[tuple[int, int, float]]:
        """(first token, end token, probability) of every window; ``open_at``: token indices where the gate is
        open besides the gate words (the rules' signals)."""
        return list(self.iter_scores(toks, open_at))

    def iter_scores(self, toks: list[str], open_at=()):
        """:meth:`scores`, one window at a time.

        The per-token sums are flat arrays (``array``: one buffer each, 8 bytes a token) and the windows
        are generated, not listed: on a large document (hundreds of thousands of Han-character tokens) the
        lists of Python floats, ints and tuples this used to build were tens of MB of small objects, which
        fragmented a long-lived process's heap (issue 12, the soak). The sums are the same additions in
        the same order, so every score is the same float."""
        n = len(toks)
        if n < self.min_tokens:
            return
        small = n <= SMALL_TOKENS
        spans = self._iter_spans(n)
        if self.gate:
            gate = self.gate
            if gate.isdisjoint(toks) and not open_at:
                return
            opened = self.gate_flags(toks)
            for i in open_at:
                opened[min(i, n - 1)] = True
            if small:
                gpre = [0, *accumulate(opened)]
            else:
                gpre = array("q", [0])
                gpre.extend(accumulate(opened))
            del opened
            spans = ((s, e) for s, e in spans if gpre[e] > gpre[s])
        # a window in another language (Malay, Malayalam …) is mostly words the model never saw: its
        # score rests on a few shared tokens, so it is not scored (English jailbreaks: ≥ 59% known)
        if small:  # a few thousand tokens: lists are quicker to make
            kpre = [0, *accumulate(map(self.weights.__contains__, toks))]
            pre = [0.0, *accumulate(self._iter_token_weights(toks))]
        else:
            kpre = array("q", [0])
            kpre.extend(accumulate(map(self.weights.__contains__, toks)))
            pre = array("d", [0.0])
            pre.extend(accumulate(self._iter_token_weights(toks)))  # (no per-token list or array in between)
        bias, exp, sqrt = self.bias, math.exp, math.sqrt
        for s, e in spans:
            if kpre[e] - kpre[s] < MIN_KNOWN * (e - s):
                continue
            z = bias + (pre[e] - pre[s]) / sqrt(e - s)
            p = 1.0 / (1.0 + exp(-z)) if z > -30 else 0.0
            if p >= 0.5 and len(set(toks[s:e])) < MIN_DISTINCT * (e - s):
                p = 0.0  # a line repeated over and over piles up counts: not a prompt
            yield s, e, p

    def _weights_array(self, toks: list[str]) -> array:
        """:meth:`token_weights` as one array of doubles (the same values, no float object per token)."""
        return array("d", self._iter_token_weights(toks))

    def _iter_token_weights(self, toks: list[str]):
        """:meth:`token_weights`, one value at a time (the same additions: unigram + bigram)."""
        uni = map(self.weights.get, toks, repeat(0.0))
        return chain(islice(uni, 1), map(add, uni, self._bigram_weights(toks)))

    def tokens(self, text: str) -> list[str]:
        return self.token_re.findall(text)

    def max_score(self, text: str, gate_at=()) -> float:
        """The highest window probability of a (view) text; 0 when no window is scored."""
        toks, chunks = _chunked_tokens(text, self.token_re)
        return max((p for _, _, p in self.iter_scores(toks, token_indices(text, chunks, gate_at, self.token_re))),
                   default=0.0)

    def hits(self, text: str, threshold: float | None = None, gate_at=()) -> list[tuple[int, int, float]]:
        """(start, end, probability) character spans of ``text`` whose window reaches the threshold;
        overlapping hit windows are merged (the highest probability kept). ``gate_at``: character offsets in
        ``text`` where a signal of ``gate_signals`` starts (the gate is open at the token there)."""
        thr = self.threshold if threshold is None else threshold
        if not gate_at and self.gate_rx is not None and self.gate_rx.search(text) is None:
            return []  # no gate word among the tokens and no signal: no window is scored (without tokenising)
        toks, chunks = _chunked_tokens(text, self.token_re)
        hit = [(s, e, p) for s, e, p in self.iter_scores(toks, token_indices(text, chunks, gate_at, self.token_re))
               if p >= thr]
        del toks
        if not hit:
            return []
        merged: list[list] = []
        for s, e, p in hit:
            if merged and s < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
                merged[-1][2] = max(merged[-1][2], p)
            else:
                merged.append([s, e, p])
        rx = self.token_re
        return [(_token_span(text, chunks, s, rx)[0], _token_span(text, chunks, e - 1, rx)[1], p) for s, e, p in merged]


_NO_BIGRAMS: dict[str, float] = {}


def _bigram_table(weights: dict[str, float]) -> dict[str, dict[str, float]] | None:
    """``{"a": {"b": w}}`` for every bigram ``"a b"`` of ``weights`` (None when a term has two spaces)."""
    out: dict[str, dict[str, float]] = {}
    for term, w in weights.items():
        if " " in term:
            a, sep, b = term.partition(" ")
            if " " in b:
                return None
            out.setdefault(a, {})[b] = w
    return out


def _gate_pattern(words) -> re.Pattern:
    """Where a ``TOKEN`` equal to one of ``words`` can be: the word with no letter or digit on either side
    (a token is a whole run of letters and digits, or ends in ``'letters``, which no gate word does; one
    can start right after a letter only with a digit, which no gate word does). Written to begin with the
    class of the words' first letters, so a search skips other characters in C; the look-behinds check what
    stood before that letter and which letter it was."""
    words = sorted(words, key=len, reverse=True)
    if not all(re.fullmatch(r"[a-z][a-z0-9]*", w) for w in words):
        return None
    return re.compile("[" + "".join(sorted({w[0] for w in words})) + "](?<![a-z0-9].)(?:"
                      + "|".join(f"(?<={w[0]}){w[1:]}" for w in words) + ")(?![a-z0-9])")


_CHUNK = 16384
_SPACE = re.compile(r"\s")


def _chunked_tokens(text: str, rx: re.Pattern = TOKEN) -> tuple[list[str], list[tuple[int, int, int]]]:
    """The tokens of ``text`` and its chunks (char start, char end, index of the chunk's first token), cut at
    whitespace every ~16 k characters, so a token's offsets are found by re-reading one chunk, not the text.

    Equal tokens are one ``str`` object (each chunk's tokens are looked up in the document's distinct ones):
    a large Chinese text is hundreds of thousands of one-character tokens, a new object each otherwise."""
    toks: list[str] = []
    distinct: dict[str, str] = {}
    one = distinct.setdefault
    chunks = []
    i, n = 0, len(text)
    while i < n:
        j = i + _CHUNK
        if j >= n:
            j = n
        else:
            m = _SPACE.search(text, j)
            j = m.start() if m else n
        chunks.append((i, j, len(toks)))
        part = rx.findall(text, i, j)
        if len(chunks) == 1 and j >= n:  # the whole text in one chunk: its tokens die with the list
            toks = part
        else:
            toks += map(one, part, part)
        del part
        i = j if j > i else n
    return toks, chunks


def token_indices(text: str, chunks: list[tuple[int, int, int]], positions, rx: re.Pattern = TOKEN) -> list[int]:
    """Index of the first token starting at or after each character offset (one pass over the chunks that hold
    an offset)."""
    if not positions:
        return []
    pos = sorted(positions)
    out: list[int] = []
    j = 0
    for c0, c1, t0 in chunks:
        if j >= len(pos):
            break
        if pos[j] >= c1:
            continue
        starts = [m.start() for m in rx.finditer(text, c0, c1)]
        while j < len(pos) and pos[j] < c1:
            out.append(t0 + bisect_left(starts, pos[j]))
            j += 1
    return out


def _token_span(text: str, chunks: list[tuple[int, int, int]], k: int, rx: re.Pattern = TOKEN) -> tuple[int, int]:
    """Character span of token ``k``."""
    c = next(c for c in reversed(chunks) if c[2] <= k)
    for idx, m in enumerate(rx.finditer(text, c[0], c[1]), c[2]):
        if idx == k:
            return m.span()
    raise IndexError(k)


@lru_cache(maxsize=4)
def load(path: str | None = None) -> Model | None:
    """The packaged model (or the one at ``path``); None when the file is absent or unreadable."""
    p = Path(path) if path else MODEL_FILE
    try:
        return Model(json.loads(p.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def load_zh() -> Model | None:
    """The packaged Chinese model (Han character unigrams and bigrams); None when absent."""
    return load(str(MODEL_FILE_ZH))
