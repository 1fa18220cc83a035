"""Alternations regrouped by first character, so a search tries only the branches that can start.

Python's ``re`` tries every branch of ``a|b|c|...`` at every position of a search; a keyword
list of thirty branches costs thirty tests per character. :func:`by_first_char` rewrites
``passwd|pwd|secret|token|...`` as ``p(?:asswd|wd)|secret|token|...``: the search then skips
positions whose character starts no branch (one set test, done in C) and tries only the
branches that start with it. Branches with different first characters never match at the same
position, and branches with the same one keep their order, so every search, match and
``finditer`` gives the same result as the original. Anything the rewrite cannot prove safe
(capturing or named groups, inline flags, a branch starting with an escape, a class, a group
or an optional character) leaves the source unchanged.
"""

from __future__ import annotations

import re

__all__ = ["by_first_char", "longest_first"]


def longest_first(words) -> list[str]:
    """``words`` longest first, equal lengths in code-point order: an alternation built from a set
    is then the same text in every process (sorting by length alone left ties in the set's
    hash order, which changes with each process; :mod:`.build_cache` finds a pattern by its text)."""
    return sorted(words, key=lambda w: (-len(w), w))

_SPECIAL = set("\\()[]{}.*+?^$|")
_QUANT = set("*+?{")


def _split(src: str) -> list[str] | None:
    """The top-level branches of ``src``; None when it holds a construct not handled here."""
    out, cur, depth, i, n = [], [], 0, 0, len(src)
    while i < n:
        c = src[i]
        if c == "\\":
            cur.append(src[i:i + 2])
            i += 2
            continue
        if c == "[":  # a class: copied whole ("]" right after "[" or "[^" is literal)
            j = i + 1
            if j < n and src[j] == "^":
                j += 1
            if j < n and src[j] == "]":
                j += 1
            while j < n and src[j] != "]":
                j += 2 if src[j] == "\\" else 1
            if j >= n:
                return None
            cur.append(src[i:j + 1])
            i = j + 1
            continue
        if c == "(":
            if not src.startswith(("(?:", "(?=", "(?!", "(?<=", "(?<!"), i):
                return None  # capturing/named groups, inline flags, conditionals: keep as is
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                return None
        if c == "|" and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    if depth:
        return None
    out.append("".join(cur))
    return out


def _flat(src: str) -> list[str] | None:
    """Branches of ``src``, with a branch that is one whole ``(?:...)`` group opened up."""
    branches = _split(src)
    if branches is None:
        return None
    out: list[str] = []
    for b in branches:
        if b.startswith("(?:") and b.endswith(")") and _split(b[3:-1]) is not None and _closes_at_end(b):
            inner = _flat(b[3:-1])
            if inner is None:
                return None
            out.extend(inner)
        else:
            out.append(b)
    return out


def _closes_at_end(b: str) -> bool:
    """True when the ``(`` at 0 is closed by the last character (``(?:a)|(?:b)`` is not one group)."""
    depth, i = 0, 0
    while i < len(b):
        c = b[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            j = i + 1 + (b[i + 1:i + 2] == "^")
            j += b[j:j + 1] == "]"
            while j < len(b) and b[j] != "]":
                j += 2 if b[j] == "\\" else 1
            i = j + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i == len(b) - 1
        i += 1
    return False


def by_first_char(src: str) -> str:
    """``src`` (an alternation, no flags) with its branches grouped by their first character;
    ``src`` itself when a branch does not start with a plain character."""
    branches = _flat(src)
    if not branches or len(branches) < 2:
        return src
    groups: dict[str, list[str]] = {}
    for b in branches:
        if len(b) < 2 or b[0] in _SPECIAL or b[0].isspace() or b[1] in _QUANT:
            return src
        groups.setdefault(b[0], []).append(b[1:])
    out = "|".join(re.escape(c) + (f"(?:{'|'.join(rest)})" if len(rest) > 1 else rest[0])
                   for c, rest in groups.items())
    try:
        re.compile(out)
    except re.error:  # pragma: no cover - a regrouped valid alternation compiles
        return src
    return out
