"""Sanitise parsed Markdown before it is written to ``parsed/`` (and so before the index sees it).

``sanitize(markdown, findings)``:

- every finding with ``redact=True`` (all ``secret`` findings) has its span replaced by
  ``[REDACTED:<rule>]``, and so has **every other occurrence of the same value** in the
  text (a password detected once on a ``password =`` line is masked where it is repeated
  in prose or a table too). Values shorter than 7 characters are masked only where they
  were detected: the promise is never more than 6 characters of a secret;
- in every ``hidden-unicode.tag-chars`` or ``hidden-unicode.bidi-control`` finding span,
  the tag characters (U+E0000–E007F) and bidi controls (U+202A–202E, U+2066–2069, U+200E,
  U+200F, U+061C) are removed and the spot is marked once with :data:`MARKER`
  (``[hidden-unicode removed]``).

Overlapping redactions are merged into one (no part of a longer secret stays in clear
because a shorter one overlapped it); a strip edit that overlaps a redaction is dropped
(the redaction covers it). The result is built in one pass. :func:`mask_values` applies the
same value masking to a short string (the document title). The original stays untouched in
``archive/``.
"""

from __future__ import annotations

from typing import Iterable

from kbwatch.pipeline.model import Finding

__all__ = ["MARKER", "MIN_VALUE", "mask_values", "redacted_values", "sanitize"]

MARKER = "[hidden-unicode removed]"
MIN_VALUE = 7  # values this long are masked wherever they occur
_STRIP_RULES = ("hidden-unicode.tag-chars", "hidden-unicode.bidi-control")


def _strippable(ch: str) -> bool:
    cp = ord(ch)
    return 0xE0000 <= cp <= 0xE007F or 0x202A <= cp <= 0x202E or 0x2066 <= cp <= 0x2069 or cp in (0x200E, 0x200F, 0x061C)


def redacted_values(findings: Iterable[Finding]) -> dict[str, str]:
    """value → rule for every redacted finding whose value is at least :data:`MIN_VALUE` long."""
    out: dict[str, str] = {}
    for f in findings:
        v = f.match
        if f.redact and v and len(v) >= MIN_VALUE and not v.isspace():
            out.setdefault(v, f.rule)
    return out


def _occurrences(text: str, values: dict[str, str]) -> list[tuple[int, int, str]]:
    spans = []
    for v, rule in values.items():
        i = text.find(v)
        while i >= 0:
            spans.append((i, i + len(v), rule))
            i = text.find(v, i + 1)
    return spans


def _merge(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Union of overlapping spans; the merged span takes the rule of its first part."""
    out: list[tuple[int, int, str]] = []
    for s, e, rule in sorted(spans):
        if out and s < out[-1][1]:
            ps, pe, prule = out[-1]
            out[-1] = (ps, max(pe, e), prule)
        else:
            out.append((s, e, rule))
    return out


def mask_values(text: str, values: dict[str, str]) -> str:
    """``text`` with every occurrence of every value replaced by ``[REDACTED:<rule>]``."""
    if not text or not values:
        return text
    return _apply(text, [(s, e, f"[REDACTED:{r}]") for s, e, r in _merge(_occurrences(text, values))])


def sanitize(markdown: str, findings: Iterable[Finding]) -> str:
    findings = list(findings)
    redact: list[tuple[int, int, str]] = []
    strip: list[tuple[int, int, str]] = []
    for f in findings:
        start, end = f.offset, f.offset + max(f.length, 0)
        if not (0 <= start <= end <= len(markdown)):
            continue
        if f.redact and end > start:
            redact.append((start, end, f.rule))
        elif f.rule in _STRIP_RULES:
            seg = markdown[start:end]
            kept = "".join(c for c in seg if not _strippable(c))
            if kept != seg:
                strip.append((start, end, MARKER + kept))
    redact.extend(_occurrences(markdown, redacted_values(findings)))
    merged = _merge(redact)
    edits = [(s, e, f"[REDACTED:{r}]") for s, e, r in merged]
    if strip:
        import bisect

        starts = [s for s, _, _ in merged]
        for s, e, rep in strip:
            i = bisect.bisect_right(starts, s) - 1
            if (i >= 0 and merged[i][1] > s) or (i + 1 < len(merged) and merged[i + 1][0] < e):
                continue  # inside or across a redaction: the redaction covers it
            edits.append((s, e, rep))
    if not edits:
        return markdown
    edits.sort()
    kept: list[tuple[int, int, str]] = []
    for s, e, rep in edits:  # strip edits never overlap each other (one finding per run)
        if kept and s < kept[-1][1]:
            continue
        kept.append((s, e, rep))
    return _apply(markdown, kept)


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    """One new string from sorted, non-overlapping edits (a large text is not copied per edit)."""
    parts: list[str] = []
    pos = 0
    for start, end, rep in edits:
        parts.append(text[pos:start])
        parts.append(rep)
        pos = end
    parts.append(text[pos:])
    return "".join(parts)
