"""Pattern sets with literal anchors: a regex is skipped on text that cannot match it; chunking of long texts."""

from __future__ import annotations

import heapq
import re
from array import array
from itertools import compress

from .required import required_literals

# above this many characters, candidate positions are kept in arrays of ints (no int object per
# position of a large text, issue 12); below it in lists, which are quicker to make
_ARRAY_MIN = 100_000


def _list(_typecode: str) -> list:
    return []

__all__ = ['PatternSet', 'chunks', 'exact_anchors', 'literal_anchors', 'may_match']

# --------------------------------------------------------------------------
# literal anchors: skip a regex on text that cannot match it
# --------------------------------------------------------------------------

try:  # Python 3.11+
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
    from re import _constants as _sre_c  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_constants as _sre_c  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]


# every character ``\s`` matches (all are below U+3001): a prefix may end in any one of them
_SPACES = tuple(ch for ch in map(chr, range(0x3001)) if re.match(r"\s", ch))
_REPEATS = tuple(getattr(_sre_c, n) for n in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_sre_c, n))


def _is_space(op, av) -> bool:
    r"""True for ``\s`` or ``\s+`` (one or more): the next character is a white space."""
    if op in _REPEATS and av[0] >= 1 and len(av[2]) == 1:
        op, av = list(av[2])[0]
    return op is _sre_c.IN and list(av) == [(_sre_c.CATEGORY, _sre_c.CATEGORY_SPACE)]


def _prefixes(items, acc: str, out: set, limit: int = 4, min_len: int = 2, space: bool = False) -> bool:
    r"""Collect the literal prefixes (≤ limit chars) every match must start with. ``space``: a
    prefix followed by ``\s``/``\s+`` ends with each white-space character (``i\s+am`` gives
    ``"i "``, ``"i\n"``, ...), so a word that merely starts with ``i`` is not a candidate."""
    for i, (op, av) in enumerate(items):
        if len(acc) >= limit:
            out.add(acc)
            return True
        if op is _sre_c.AT or op is _sre_c.ASSERT or op is _sre_c.ASSERT_NOT:
            continue  # zero-width: the literal prefix still follows
        if op is _sre_c.LITERAL:
            acc += chr(av).lower()
            continue
        if op is _sre_c.IN and 1 <= len(av) <= 8 and all(o is _sre_c.LITERAL for o, _ in av):
            rest = list(items[i + 1:])  # (?:a|b) compiled to a character set
            return all(_prefixes([(_sre_c.LITERAL, c)] + rest, acc, out, limit, min_len, space) for _, c in av)
        if op is _sre_c.SUBPATTERN:
            rest = list(items[i + 1:])
            return _prefixes(list(av[-1]) + rest, acc, out, limit, min_len, space)
        if op is _sre_c.BRANCH:
            rest = list(items[i + 1:])
            return all(_prefixes(list(alt) + rest, acc, out, limit, min_len, space) for alt in av[1])
        if space and acc and _is_space(op, av):
            out.update(acc + ws for ws in _SPACES)
            return True
        if space and acc and op in _REPEATS and av[0] == 0 and _is_space(_REPEATS[0], (1, av[1], av[2])):
            out.update(acc + ws for ws in _SPACES)  # \s*: a white space, or what follows it
            return _prefixes(list(items[i + 1:]), acc, out, limit, min_len, space)
        break
    if len(acc) >= min_len or (acc and ord(acc[0]) >= 0x2E80):
        out.add(acc)
        return True
    return False


def _parsed(pattern: re.Pattern) -> list | None:
    try:
        parsed = _sre_parse.parse(pattern.pattern, pattern.flags)
    except Exception:  # pragma: no cover
        return None
    return list(parsed.data if hasattr(parsed, "data") else parsed)


def literal_anchors(pattern: re.Pattern, min_len: int = 2, space: bool = False) -> tuple[str, ...] | None:
    r"""Lower-case literal prefixes one of which every match starts with; None if unknown.
    ``space``: prefixes may end with the white-space character a ``\s`` matches."""
    data = _parsed(pattern)
    out: set[str] = set()
    if data is None or not _prefixes(data, "", out, min_len=min_len, space=space):
        return None
    return tuple(sorted(out))


def _starts_at_boundary(items) -> bool:
    """True when every match of the parsed pattern must start at a ``\\b`` word boundary."""
    if not items:
        return False
    op, av = items[0]
    if op is _sre_c.AT:
        return av is _sre_c.AT_BOUNDARY
    if op is _sre_c.SUBPATTERN:
        return _starts_at_boundary(list(av[-1]))
    if op is _sre_c.BRANCH:
        return all(_starts_at_boundary(list(alt)) for alt in av[1])
    return False


def may_match(anchors: tuple[str, ...] | None, text: str) -> bool:
    return anchors is None or any(a in text for a in anchors)


def exact_anchors(pattern: re.Pattern) -> tuple[str, ...] | None:
    """:func:`literal_anchors` when they are exact, i.e. the pattern is case-sensitive and has no
    upper-case letter (so lower-casing its literals changed nothing): ``may_match(anchors,
    text)`` False then proves ``pattern`` has no match in ``text``. None otherwise."""
    if pattern.flags & re.IGNORECASE or pattern.pattern != pattern.pattern.lower():
        return None
    return literal_anchors(pattern, min_len=1)


_WORD_START = re.compile(r"[a-z]+")


class PatternSet:
    """Run many regexes on a lower-cased view, each only where it can start.

    Every pattern's literal prefixes are extracted once. Patterns that must
    start at a word boundary with an ASCII-letter prefix are tried (with
    ``pattern.match``) only at word starts whose first characters are one of
    their prefixes; other patterns with prefixes are tried only where one of
    their prefixes occurs (found by one character-class scan); patterns
    without a usable prefix run with ``finditer``. The result equals
    ``finditer`` for each pattern (leftmost, non-overlapping matches), but
    the cost no longer grows with the number of patterns times the text size.

    Several sets run on the same text can share one walk over its word starts
    (:class:`.wordscan.WordScan`).
    """

    def __init__(self, patterns: list[re.Pattern]):
        self.patterns = list(patterns)
        self.word: dict[str, list[int]] = {}
        self.char: dict[str, list[int]] = {}
        self.always: list[int] = []
        for i, pat in enumerate(self.patterns):
            data = _parsed(pat)
            word_mode = data is not None and _starts_at_boundary(data)
            anchors = literal_anchors(pat, min_len=1, space=True)
            if anchors is not None and not word_mode and any(len(a) == 1 and a.isascii() and a.isalnum() for a in anchors):
                anchors = None  # a one-letter prefix anywhere would gate nothing
            if anchors is None:
                self.always.append(i)
            elif word_mode:
                # letter prefixes are looked up at word starts, others by the character scan
                for a in anchors:
                    (self.word if "a" <= a[0] <= "z" else self.char).setdefault(a, []).append(i)
            else:
                for a in anchors:
                    self.char.setdefault(a, []).append(i)
        self._mixed = {i for ids in self.word.values() for i in ids} & {i for ids in self.char.values() for i in ids}
        self._word_lens = sorted({len(a) for a in self.word}, reverse=True)
        self._char_lens = sorted({len(a) for a in self.char}, reverse=True)
        self._char_scan = re.compile("[" + "".join(sorted({re.escape(a[0]) for a in self.char})) + "]") if self.char else None
        self._wcache: dict[str, tuple[int, ...]] = {}
        self._ccache: dict[str, tuple[int, ...]] = {}
        self.word_lens = self._word_lens
        self.word_width = self._word_lens[0] if self._word_lens else 0
        self.shared_scan = None  # (WordScan, index) when a WordScan walks the word starts for this set
        self._always = set(self.always)
        # a pattern run over the whole text is first looked for by the literals it needs
        self._needs = {i: required_literals(self.patterns[i]) for i in self.always}

    @staticmethod
    def _ids(key: str, table: dict[str, list[int]], lens: list[int], cache: dict) -> tuple[int, ...]:
        found: set[int] = set()
        for n in lens:
            found.update(table.get(key[:n], ()))
        ids = tuple(sorted(found))
        if len(cache) > 200_000:
            cache.clear()
        cache[key] = ids
        return ids

    def _word_candidates(self, text: str) -> list:
        """Positions per pattern (index-aligned) where a word start holds one of its prefixes
        (for a large text arrays of ints: no int object per position)."""
        if self.shared_scan is not None:
            scan, k = self.shared_scan
            return scan.candidates(text, k)
        seq = array if len(text) > _ARRAY_MIN else _list
        cands: list = [seq("q") for _ in self.patterns]
        lens, cache = self._word_lens, self._wcache
        width = lens[0]
        get = cache.get
        for m in _WORD_START.finditer(text):
            p = m.start()
            key = text[p:p + width]
            ids = get(key)
            if ids is None:
                ids = self._ids(key, self.word, lens, cache)
            for i in ids:
                cands[i].append(p)
        return cands

    def finditer_all(self, text: str, only: set[int] | None = None) -> list[list[re.Match]]:
        """Matches of every pattern (index-aligned with ``patterns``)."""
        n = len(self.patterns)
        out: list[list[re.Match]] = [[] for _ in range(n)]
        cands = self._word_candidates(text) if self.word else None
        ccands: dict[int, list[int] | array] = {}
        seq = array if len(text) > _ARRAY_MIN else _list
        if self.char:
            lens, cache = self._char_lens, self._ccache
            width = lens[0]
            get = cache.get
            for m in self._char_scan.finditer(text):
                p = m.start()
                key = text[p:p + width]
                ids = get(key)
                if ids is None:
                    ids = self._ids(key, self.char, lens, cache)
                for i in ids:
                    got = ccands.get(i)
                    if got is None:
                        got = ccands[i] = seq("q")
                    got.append(p)
        # only the patterns with a candidate position (or none to look for) are visited
        live = set(compress(range(n), cands)) if cands is not None else set()
        live.update(ccands)
        live.update(self._always)
        if only is not None:
            live &= only
        for i in live:
            pat = self.patterns[i]
            if i in self._always:
                needs = self._needs[i]
                if needs is None or any(lit in text for lit in needs):
                    out[i] = list(pat.finditer(text))
                continue
            ps = cands[i] if cands is not None else ()
            if i in ccands:
                if not ps:
                    ps = ccands[i]
                elif type(ps) is list:  # a small text: prefixes from both scans, merged
                    ps = sorted(set(ps + ccands[i]))
                else:
                    # a large one: merged lazily (each scan alone is ordered); a position found by
                    # both is tried twice, which finds nothing new (see ``last`` below)
                    ps = heapq.merge(ps, ccands[i])
            elif not ps:
                continue
            last = -1
            res = out[i]
            match = pat.match
            for p in ps:
                if p < last:
                    continue
                m = match(text, p)
                if m is not None:
                    res.append(m)
                    last = m.end() if m.end() > p else p + 1
        return out


def chunks(text: str, size: int = 4000) -> list[tuple[int, int]]:
    """Split ``text`` into ~size-character spans ending at line breaks."""
    out = []
    pos, n = 0, len(text)
    while pos < n:
        end = min(n, pos + size)
        if end < n:
            nl = text.find("\n", end)
            end = n if nl < 0 or nl - end > size else nl + 1
        out.append((pos, end))
        pos = end
    return out or [(0, 0)]
