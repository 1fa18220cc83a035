"""Positions, excerpts and findings: LineIndex (offsets to line/column), masking that never shows more than 6 characters of a secret, excerpts, make_finding, dedupe, Shannon entropy."""

from __future__ import annotations

import bisect
import math
import re
import unicodedata
from array import array
from collections import Counter
from typing import Any, Iterable

from kbwatch.pipeline.fsutil import printable
from kbwatch.pipeline.model import Finding

from .options import fingerprint_allowed, rule_allowed

__all__ = ['LineIndex', 'dedupe', 'excerpt', 'group_findings', 'one_line', 'scrub_findings', 'make_finding', 'mask_runs', 'mask_value', 'shannon', 'visible']

# --------------------------------------------------------------------------
# positions and excerpts
# --------------------------------------------------------------------------


class LineIndex:
    """Offset → (line, column), both 1-based, computed by bisection."""

    def __init__(self, text: str):
        self._text = text
        self._starts: array | None = None  # built on the first lookup: most texts have no finding

    @property
    def starts(self) -> array:
        """Offsets where the lines start (an ``array`` of ints: no int object per line of a large text)."""
        if self._starts is None:
            starts = array("q", [0])
            starts.extend(m.end() for m in re.finditer("\n", self._text))
            self._starts = starts
        return self._starts

    def position(self, offset: int) -> tuple[int, int]:
        i = bisect.bisect_right(self.starts, offset) - 1
        return i + 1, offset - self.starts[i] + 1


def mask_value(value: str, keep: int = 6) -> str:
    """Mask a secret: at most ``keep`` (≤ 6) characters are kept.

    ≥ 12 characters: first 4 + ``…`` + last 2; 7–11: first 2 + ``…`` + last
    1; shorter: first character + ``…``; a 1-character value becomes ``…``.
    """
    keep = min(keep, 6)
    n = len(value)
    if n >= 12 and keep >= 6:
        return value[:4] + "…" + value[-2:]
    if n >= 7 and keep >= 3:
        return value[:2] + "…" + value[-1:]
    if n >= 2 and keep >= 1:
        return value[:1] + "…"
    return "…"


_LONG_RUN = re.compile(r"\S{7,}")


def mask_runs(s: str) -> str:
    """Mask every run of ≥ 7 non-space characters with :func:`mask_value`.

    For excerpts of text that was not matched as a secret but may contain one
    (format findings: long lines, blobs, repeated lines): whatever the run is,
    at most 6 of its characters are shown.
    """
    return _LONG_RUN.sub(lambda m: mask_value(m.group()), s)


_EXCERPT_CLEAN = str.maketrans({"\n": "⏎", "\r": " ", "\t": " "})


def visible(s: str) -> str:
    """Make invisible/control characters printable as ``<U+XXXX>`` (line breaks and tabs stay)."""
    return printable(s, keep="\n\r\t")


def one_line(s: str) -> str:
    """An excerpt on one line: invisible characters as ``<U+XXXX>``, line breaks as ``⏎``."""
    return visible(s).translate(_EXCERPT_CLEAN)


def excerpt(text: str, start: int, end: int, *, secret: bool = False, context: int = 20,
            max_match: int = 80) -> str:
    """A one-line excerpt around ``text[start:end]``.

    With ``secret=True`` the matched part is masked by :func:`mask_value` and
    the surrounding context is cut at the match (context never contains the
    secret itself, so the excerpt shows ≤ 6 of its characters).
    """
    before = text[max(0, start - context):start]
    after = text[end:end + context]
    body = text[start:end]
    if secret:
        body = mask_value(body)
    elif len(body) > max_match:
        body = body[: max_match - 1] + "…"
    s = visible(before).translate(_EXCERPT_CLEAN) + "[" + visible(body).translate(_EXCERPT_CLEAN) + "]" + visible(after).translate(_EXCERPT_CLEAN)
    return s.strip()


def make_finding(text: str, index: LineIndex, opts: dict[str, Any], *, kind: str, rule: str,
                 severity: str, start: int, end: int, message: str = "", secret: bool = False,
                 redact: bool = False, excerpt_text: str | None = None) -> Finding | None:
    """Build a Finding for ``text[start:end]``; None when config allowlists it."""
    if rule_allowed(opts, rule):
        return None
    line, col = index.position(start)
    match = text[start:end]
    f = Finding(
        kind=kind, rule=rule, severity=severity, line=line, column=col, offset=start,
        excerpt=one_line(excerpt_text) if excerpt_text is not None else excerpt(
            text, start, end, secret=secret, context=int(opts["excerpt_context"])),
        length=end - start, match=match, redact=redact, message=message,
    )
    if fingerprint_allowed(opts, f.fingerprint):
        return None
    return f


GRAM = 7  # never more than 6 characters of a secret: any 7 in a row are hidden


def _grams(values: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for v in values:
        for form in {v, visible(v).translate(_EXCERPT_CLEAN)}:
            out.update(form[i:i + GRAM] for i in range(len(form) - GRAM + 1))
    return out


def _scrub(s: str, grams: set[str]) -> str:
    """``s`` with every stretch covered by a 7-character piece of a hidden value replaced by ``…``."""
    if len(s) < GRAM:
        return s
    hidden = bytearray(len(s))
    hit = False
    for i in range(len(s) - GRAM + 1):
        if s[i:i + GRAM] in grams:
            hidden[i:i + GRAM] = b"\x01" * GRAM
            hit = True
    if not hit:
        return s
    out, i = [], 0
    while i < len(s):
        if hidden[i]:
            while i < len(s) and hidden[i]:
                i += 1
            out.append("…")
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def scrub_findings(findings: list[Finding]) -> list[Finding]:
    """Hide every detected secret or personal value from every finding's excerpt and message.

    Each scanner masks its own match, but an excerpt's context can hold a value another
    scanner found (a PII finding's excerpt carrying the password on the line above), and a
    format or hidden-Unicode excerpt can cut through a key. Every run of 7 characters that
    also occurs in a detected ``secret`` or ``pii`` value (or in a redacted one) is replaced,
    so no excerpt shows more than 6 characters of any of them.
    """
    values = [f.match for f in findings if f.match and len(f.match) >= GRAM and (f.redact or f.kind in ("secret", "pii"))]
    if not values:
        return findings
    grams = _grams(values)
    for f in findings:
        f.excerpt = _scrub(f.excerpt, grams)
        f.message = _scrub(f.message, grams)
    return findings


_SEVERITY = {"low": 0, "medium": 1, "high": 2}


def group_findings(findings: Iterable[Finding]) -> list[tuple[Finding, int, list[int], str]]:
    """Findings grouped per rule, for people to read: ``(first, count, lines, severity)`` in
    the order each rule first occurs; ``severity`` is the group's highest."""
    groups: dict[tuple[str, bool], list[Finding]] = {}
    for f in findings:  # findings in the file's name (line 0) are a group of their own
        groups.setdefault((f.rule, f.line == 0), []).append(f)
    out = []
    for fs in groups.values():
        sev = max((f.severity for f in fs), key=lambda s: _SEVERITY.get(s, 0))
        out.append((fs[0], len(fs), sorted({f.line for f in fs}), sev))
    return out


def dedupe(findings: Iterable[Finding]) -> list[Finding]:
    """Drop findings whose span lies inside an earlier-kept span of the same rule family."""
    out: list[Finding] = []
    seen: set[tuple[str, int, int]] = set()
    for f in sorted(findings, key=lambda f: (f.offset, -f.length)):
        key = (f.rule, f.offset, f.length)
        if key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out


# --------------------------------------------------------------------------
# entropy
# --------------------------------------------------------------------------


def shannon(s: str) -> float:
    if not s:
        return 0.0
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


