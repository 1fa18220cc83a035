"""Pattern sets with literal anchors: a regex is skipped on text that cannot match it; chunking of long texts."""

from __future__ import annotations

import heapq
import re
import sys
from array import array
from itertools import compress

from . import required
from .build_cache import remember, source_digest
from .required import required_literals

# above this many characters, candidate positions are kept in arrays of ints (no int object per
# position of a large text, issue 12); below it in lists, which are quicker to make
_ARRAY_MIN = 100_000


_NONE: tuple = ()  # "no positions" / "no matches": one shared empty sequence, not a list per pattern


def _list(_typecode: str) -> list:
    return []

__all__ = ['PatternSet', 'chunks', 'exact_anchors', 'literal_anchors', 'may_match']

# what a kept plan (build_cache.remember) depends on besides its patterns: the code that made it
_ANALYSIS = source_digest(sys.modules[__name__], required)

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
_SPACES = tuple(re.findall(r"\s", "".join(map(chr, range(0x3001)))))  # one scan, not 12,289 matches
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

# --------------------------------------------------------------------------
# longer anchors, found by one C-level regex per set
# --------------------------------------------------------------------------

# In a symbol anchor (below), this character stands for a run of white space: one or more of the
# characters ``\s`` matches (the anchor regexes write it ``\s++``, possessive: a run is taken whole).
WS = "\x00"
_WS_ONE = re.compile(r"\s")
_WS_RUN = re.compile(r"\s+")
_STOP = object()  # an item in a walk: the anchor ends here
_ANCHOR_LIMIT = 10  # symbols of an anchor
_ANCHOR_MAX = 300  # anchors of one pattern; more: shorter ones


def _ws_item(op, av) -> bool:
    r"""True for a one-character item that matches white space only (``\s``, ``[ \t]``, a literal space)."""
    if op is _sre_c.LITERAL:
        return bool(_WS_ONE.match(chr(av)))
    if op is _sre_c.IN and av:
        return all((o is _sre_c.LITERAL and _WS_ONE.match(chr(a))) or (o is _sre_c.CATEGORY and a is _sre_c.CATEGORY_SPACE)
                   for o, a in av)
    return False


def _sym_walk(frames, acc: str, w: int, out: set, limit: int, cap: int) -> bool:
    """Like :func:`_prefixes`, with longer prefixes that go on past white space.

    Collects in ``out`` *symbol anchors*: strings of characters and ``WS`` (a run of white space),
    one of which every match starts with. A white-space item other than the first character of a
    match becomes ``WS`` (any run of white space: more than the item allows, never less), so
    ``ignore\\s+all`` gives ``"ignore" WS "all"``; an optional item (``x?``) gives the anchors with and
    without it; ``x{2,}`` gives ``"xx"`` and ends the anchor. An anchor ends at weight ``limit`` (a
    character or WS weighs 1, a CJK character 2). ``frames``: what is left to match, ``(items,
    index, frames after them)`` (no list copied per branch). False when some match need not start
    with a known symbol, or when more than ``cap`` anchors were found."""
    if len(out) > cap:
        return False
    while frames is not None:
        items, i, nxt = frames
        if i >= len(items):
            frames = nxt
            continue
        if w >= limit:
            out.add(acc)
            return True
        op, av = items[i]
        after = (items, i + 1, nxt)
        if op is _sre_c.LITERAL and not (acc and _WS_ONE.match(chr(av))):
            c = chr(av).lower()  # (white space: only as the first character; after it, WS below)
            acc += c
            w += 2 if c >= "\u2e80" else 1
            frames = after
            continue
        if op is _sre_c.AT or op is _sre_c.ASSERT or op is _sre_c.ASSERT_NOT:
            frames = after  # zero-width: the literal prefix still follows
            continue
        if op is _STOP:
            break
        if acc and _ws_item(op, av):
            if acc[-1] != WS:
                acc += WS
                w += 1
            frames = after
            continue
        if op in _REPEATS:
            body = av[2]
            lo, hi = av[0], av[1]
            if acc and len(body) == 1 and _ws_item(*body[0]):  # \s+, \s*, [ \t]{0,3}: a run (if any) is one WS
                if lo >= 1 or acc[-1] == WS:
                    if acc[-1] != WS:
                        acc += WS
                        w += 1
                    frames = after
                    continue
                return (_sym_walk(after, acc, w, out, limit, cap)
                        and _sym_walk(after, acc + WS, w + 1, out, limit, cap))
            if lo == 0 and hi == 1:  # x?: the anchors without it and with it
                return (_sym_walk(after, acc, w, out, limit, cap)
                        and _sym_walk((body, 0, after), acc, w, out, limit, cap))
            if 1 <= lo <= limit:  # x{2,}: x, x, then the anchor ends (unless it is exactly x{2})
                return _sym_walk((body * lo + (() if hi == lo else ((_STOP, None),)), 0, after), acc, w, out, limit, cap)
            break
        if op is _sre_c.IN and 1 <= len(av) <= 8 and all(o is _sre_c.LITERAL for o, _ in av):
            return all(_sym_walk((((_sre_c.LITERAL, c),), 0, after), acc, w, out, limit, cap) for _, c in av)
        if op is _sre_c.SUBPATTERN:
            frames = (av[-1], 0, after)
            continue
        if op is _sre_c.BRANCH:
            return all(_sym_walk((alt, 0, after), acc, w, out, limit, cap) for alt in av[1])
        break
    if len(acc) >= 2 or (acc and ord(acc[0]) >= 0x2E80):
        out.add(acc)
        return True
    return False


def _tree(items) -> tuple:
    """A parsed pattern as nested tuples (``re``'s SubPattern indexes through a Python method)."""
    out = []
    for op, av in items:
        if op is _sre_c.SUBPATTERN:
            av = (*av[:-1], _tree(av[-1]))
        elif op is _sre_c.BRANCH:
            av = (av[0], tuple(_tree(alt) for alt in av[1]))
        elif op in _REPEATS:
            av = (av[0], av[1], _tree(av[2]))
        out.append((op, av))
    return tuple(out)


def _cased_range(lo: int, hi: int, _seen: dict = {}) -> bool:
    """True when a character of ``lo``..``hi`` changes under ``str.lower``."""
    key = (lo, hi)
    if key not in _seen:
        _seen[key] = any(chr(c) != chr(c).lower() for c in range(lo, hi + 1))
    return _seen[key]


def _plain(items) -> bool:
    """No upper-case literal and no case-insensitive group: the lower-cased prefixes are the pattern's own."""
    for op, av in items:
        if op is _sre_c.LITERAL or op is _sre_c.NOT_LITERAL:
            if chr(av) != chr(av).lower():
                return False
        elif op is _sre_c.IN:
            if any(o is _sre_c.LITERAL and chr(a) != chr(a).lower() or o is _sre_c.RANGE and _cased_range(*a)
                   for o, a in av):
                return False
        elif op is _sre_c.SUBPATTERN:
            if av[1] & _sre_c.SRE_FLAG_IGNORECASE or not _plain(av[-1]):
                return False
        elif op is _sre_c.BRANCH:
            if not all(_plain(alt) for alt in av[1]):
                return False
        elif op in _REPEATS:
            if not _plain(av[2]):
                return False
        elif op is _sre_c.ASSERT or op is _sre_c.ASSERT_NOT:
            if not _plain(av[1]):
                return False
        elif getattr(_sre_c, "ATOMIC_GROUP", None) is not None and op is _sre_c.ATOMIC_GROUP:
            if not _plain(av):
                return False
    return True


def symbol_anchors(pattern: re.Pattern, limit: int = _ANCHOR_LIMIT) -> tuple[str, ...] | None:
    """The symbol anchors of ``pattern`` (see :func:`_sym_walk`); None when unknown, or when the
    pattern is case-insensitive or has an upper-case literal (its anchors would be lower-cased)."""
    if pattern.flags & re.IGNORECASE:
        return None
    data = _parsed(pattern)
    if data is None or not _plain(data):
        return None
    tree = _tree(data)
    for n in range(limit, 1, -1):  # the longest anchors that are not too many (alternatives times optional words)
        out: set[str] = set()
        if _sym_walk((tree, 0, None), "", 0, out, n, _ANCHOR_MAX):
            return tuple(sorted(out))
        if len(out) <= _ANCHOR_MAX:
            return None  # some match need not start with a known symbol
    return None


def _min_width(data) -> int:
    try:
        return _sre_parse.SubPattern(_sre_parse.State(), data).getwidth()[0]
    except Exception:  # pragma: no cover
        return 0


def _symbols(raw: str) -> str:
    """The symbol string a run of text spells: white space after the first character as ``WS``."""
    return raw[:1] + _WS_RUN.sub(WS, raw[1:]) if len(raw) > 1 else raw


def _trie_source(keys) -> str:
    """A regex matching, at a position, the longest of ``keys`` (symbol strings) the text starts
    with: a trie (each branch opens with a different symbol, so at most one goes on), children
    first, a key's own node matching the empty string last."""
    root: dict = {}
    for k in keys:
        node = root
        for ch in k:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict) -> str:
        alts = [(r"\s++" if ch == WS else re.escape(ch)) + emit(child) for ch, child in sorted(node.items()) if ch]
        if "" in node:
            alts.append("")
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return emit(root)


class AnchorScan:
    """Where in a text the keys of a table (symbol anchor -> pattern ids) occur, found by one
    C-level regex: the ids of every key that a position starts with, for each position that starts
    with one (ascending). ``word``: only at the start of a run of ``a``-``z`` (``_WORD_START``).

    The regex takes one character of the keys' first characters (a class: ``re`` skips the
    others in C), for ``word`` checks that no letter a-z comes before it, then reads the key from
    that position in a look-behind. The keys are split by first character into groups of about
    the square root of their number, each opened by its class: a trie whose root had hundreds of
    branches (the Chinese frames) tried them one by one at every Chinese character."""

    def __init__(self, table: dict[str, list[int]], word: bool):
        self.table = table
        source = remember("anchor-scan", [_ANALYSIS, word, list(table)], lambda: _anchor_source(table, word))
        self._rx = re.compile(source, re.S)
        self._cache: dict[str, tuple[int, ...]] = {}

    def ids(self, raw: str) -> tuple[int, ...]:
        """The ids of every key that ``raw`` (the longest key a position starts with) starts with."""
        got = self._cache.get(raw)
        if got is None:
            sym = _symbols(raw)
            found: set[int] = set()
            for n in range(1, len(sym) + 1):
                found.update(self.table.get(sym[:n], ()))
            got = tuple(sorted(found))
            if len(self._cache) > 200_000:
                self._cache.clear()
            self._cache[raw] = got
        return got

    def hits(self, text: str):
        """(position, ids) for each position of ``text`` that starts with a key, in order."""
        get, ids = self._cache.get, self.ids
        for m in self._rx.finditer(text):
            raw = m.group(m.lastindex)
            got = get(raw)
            yield m.start(), (got if got is not None else ids(raw))


def _anchor_source(table: dict[str, list[int]], word: bool) -> str:
    """The regex of an :class:`AnchorScan` over ``table``'s keys."""
    firsts = sorted({k[0] for k in table})
    size = max(8, round(len(firsts) ** 0.5))
    parts = []
    for j in range(0, len(firsts), size):
        group = set(firsts[j:j + size])
        trie = _trie_source([k for k in table if k[0] in group])
        parts.append(_char_class(group) + "(?<=(?=(" + trie + ")).)")
    lead = r"(?<![a-z].)" if word else ""
    return _char_class(firsts) + lead + "(?<=(?:" + "|".join(parts) + "))"


def _char_class(chars) -> str:
    return "[" + "".join(re.escape(c) for c in sorted(chars)) + "]"


def _plan(patterns: list[re.Pattern]) -> dict:
    """Which prefixes gate which pattern of a :class:`PatternSet` (see its docstring): ``word``
    and ``char`` map a prefix to the indexes of the patterns it opens, ``always`` lists the
    patterns run over the whole text and ``needs`` the literals each of those needs."""
    word: dict[str, list[int]] = {}
    char: dict[str, list[int]] = {}
    always: list[int] = []
    for i, pat in enumerate(patterns):
        data = _parsed(pat)
        word_mode = data is not None and _starts_at_boundary(data)
        # (a pattern that may match the empty string, or whose anchors stop at one letter,
        # keeps the short prefixes)
        anchors = symbol_anchors(pat) if data is not None and _min_width(data) > 0 else None
        if anchors is not None and any(len(a) == 1 and a.isascii() and a.isalnum() for a in anchors):
            anchors = None
        if anchors is None:  # the short prefixes, white space after the first character as WS
            short = literal_anchors(pat, min_len=1, space=True)
            anchors = None if short is None else tuple(sorted({_symbols(a) for a in short}))
        if anchors is not None and not word_mode and any(len(a) == 1 and a.isascii() and a.isalnum() for a in anchors):
            anchors = None  # a one-letter prefix anywhere would gate nothing
        if anchors is None:
            always.append(i)
        elif word_mode:
            # letter prefixes are looked up at word starts, others by the character scan
            for a in anchors:
                (word if "a" <= a[0] <= "z" else char).setdefault(a, []).append(i)
        else:
            for a in anchors:
                char.setdefault(a, []).append(i)
    return {"word": word, "char": char, "always": always,
            "needs": [required_literals(patterns[i]) for i in always]}


class PatternSet:
    """Run many regexes on a lower-cased view, each only where it can start.

    Every pattern's literal prefixes are extracted once. Patterns that must
    start at a word boundary with an ASCII-letter prefix are tried (with
    ``pattern.match``) only at word starts whose first characters are one of
    their prefixes; other patterns with prefixes are tried only where one of
    their prefixes occurs; patterns without a usable prefix run with
    ``finditer``. The result equals ``finditer`` for each pattern (leftmost,
    non-overlapping matches), but the cost no longer grows with the number of
    patterns times the text size.

    The prefixes are *symbol anchors* (:func:`symbol_anchors`: up to ten
    characters, white-space runs included, ``"ignore" WS "all"``), and the
    positions that start with one are found by one C-level regex per set and kind
    (:class:`AnchorScan`, a trie of the anchors): Python sees only the positions
    where some pattern's first words are present, not every word start, and a
    pattern is tried far less often (a four-character prefix such as ``"the "``
    held at most word starts of English prose). A pattern whose anchors are not
    known that way (case-insensitive, upper-case literals) keeps the short
    prefixes of :func:`literal_anchors`, its white space written as ``WS``.

    Several sets run on the same text can share one scan over its word starts
    (:class:`.wordscan.WordScan`).
    """

    def __init__(self, patterns: list[re.Pattern]):
        self.patterns = list(patterns)
        # worked out once and kept between processes (build_cache: ~1 s of the engine's build)
        plan = remember("pattern-set", [_ANALYSIS, [(p.pattern, p.flags) for p in self.patterns]],
                        lambda: _plan(self.patterns))
        self.word: dict[str, list[int]] = plan["word"]
        self.char: dict[str, list[int]] = plan["char"]
        self.always: list[int] = plan["always"]
        self._word_scan = AnchorScan(self.word, word=True) if self.word else None
        self._char_scan = AnchorScan(self.char, word=False) if self.char else None
        self.shared_scan = None  # (WordScan, index) when a WordScan walks the word starts for this set
        self._always = set(self.always)
        # a pattern run over the whole text is first looked for by the literals it needs
        self._needs = dict(zip(self.always, plan["needs"]))

    def _word_candidates(self, text: str) -> list:
        """Positions per pattern (index-aligned) where a word start holds one of its prefixes
        (for a large text arrays of ints: no int object per position)."""
        if self.shared_scan is not None:
            scan, k = self.shared_scan
            return scan.candidates(text, k)
        seq = array if len(text) > _ARRAY_MIN else _list
        cands: list = [_NONE] * len(self.patterns)  # one sequence made per pattern with a position
        for p, ids in self._word_scan.hits(text):
            for i in ids:
                got = cands[i]
                if got is _NONE:
                    got = cands[i] = seq("q")
                got.append(p)
        return cands

    def finditer_all(self, text: str, only: set[int] | None = None) -> list:
        """Matches of every pattern (index-aligned with ``patterns``): a list of matches, or an
        empty sequence shared by the patterns without one (read the entries, don't change them)."""
        n = len(self.patterns)
        # a pattern without a match keeps the shared empty tuple (most patterns, on most texts):
        # the entries are read, never changed
        out: list = [_NONE] * n
        cands = self._word_candidates(text) if self.word else None
        ccands: dict[int, list[int] | array] = {}
        seq = array if len(text) > _ARRAY_MIN else _list
        if self.char:
            for p, ids in self._char_scan.hits(text):
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
                    found = list(pat.finditer(text))
                    if found:
                        out[i] = found
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
            res = []
            match = pat.match
            for p in ps:
                if p < last:
                    continue
                m = match(text, p)
                if m is not None:
                    res.append(m)
                    last = m.end() if m.end() > p else p + 1
            if res:
                out[i] = res
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
