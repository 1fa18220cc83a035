"""Literals a regex cannot match without: a pattern with no usable prefix is skipped on text
that holds none of them.

``PatternSet`` runs a pattern whose matches can start anywhere (``^[ \\t]*#{2,}…``,
``[\\[{]{1,2}\\s*(?:topic|keyword…)``) with ``finditer`` over the whole text.
:func:`required_literals` reads, from the parsed pattern, a set of literal strings one of which
every match contains (``"##"``, ``"system"`` …; for an alternation, one literal per branch), so
``any(lit in text ...)`` False proves there is no match and the scan is skipped. Only
case-sensitive parts count; a pattern it cannot read gives None (always scanned).
"""

from __future__ import annotations

import re

try:  # Python 3.11+
    from re import _constants as _c  # type: ignore[attr-defined]
    from re import _parser as _p  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

__all__ = ["required_literals"]

_REPEATS = tuple(getattr(_c, n) for n in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_c, n))


def _best(reqs: list[set[str]]) -> set[str]:
    """The requirement cheapest to test and likeliest to fail: longest shortest literal, then fewest."""
    return max(reqs, key=lambda r: (min(map(len, r)), -len(r)))


def _walk(items) -> list[set[str]]:
    """Requirements of a sequence: each a set of literals one of which every match contains."""
    reqs: list[set[str]] = []
    run: list[str] = []  # the literal characters matched one after the other so far

    def flush():
        if run:
            reqs.append({"".join(run)})
            run.clear()

    for op, av in items:
        if op is _c.LITERAL:
            run.append(chr(av))
            continue
        if op in _REPEATS and av[0] >= 1 and len(av[2]) == 1 and list(av[2])[0][0] is _c.LITERAL:
            run.append(chr(list(av[2])[0][1]) * av[0])  # "#{2,}": at least "##"
            if av[1] != av[0]:
                flush()
            continue
        flush()
        if op is _c.SUBPATTERN:
            if not av[1] & _c.SRE_FLAG_IGNORECASE:
                reqs.extend(_walk(av[-1]))
        elif op in _REPEATS:
            if av[0] >= 1:
                reqs.extend(_walk(av[2]))
        elif getattr(_c, "ATOMIC_GROUP", None) is not None and op is _c.ATOMIC_GROUP:
            reqs.extend(_walk(av))
        elif op is _c.BRANCH:
            alts = [_walk(alt) for alt in av[1]]
            if all(alts):
                reqs.append(set().union(*(_best(r) for r in alts)))
        elif op is _c.IN and 1 <= len(av) <= 8 and all(o is _c.LITERAL for o, _ in av):
            reqs.append({chr(c) for _, c in av})
    flush()
    return reqs


def required_literals(pattern: re.Pattern) -> tuple[str, ...] | None:
    """Literals one of which every match of ``pattern`` contains; None when none is known
    (a case-insensitive pattern, or no literal every match needs)."""
    if pattern.flags & re.IGNORECASE:
        return None
    try:
        parsed = _p.parse(pattern.pattern, pattern.flags)
    except Exception:  # pragma: no cover - a compiled pattern parses
        return None
    reqs = _walk(list(parsed.data if hasattr(parsed, "data") else parsed))
    return tuple(sorted(_best(reqs))) if reqs else None
