"""Sanitise parsed Markdown before it is written to ``parsed/``.

``sanitize(markdown, findings)``:

- every finding with ``redact=True`` (all ``secret`` findings) has its span
  ``[offset, offset + length)`` replaced by ``[REDACTED:<rule>]``;
- in every ``hidden-unicode.tag-chars`` or ``hidden-unicode.bidi-control``
  finding span, the tag characters (U+E0000–E007F) and bidi controls
  (U+202A–202E, U+2066–2069, U+200E, U+200F, U+061C) are removed and the spot
  is marked once with :data:`MARKER` (``[hidden-unicode removed]``).

Edits are chosen right to left; an edit that overlaps one already chosen (to
its right) is skipped; the result is built in one pass. The original stays
untouched in ``archive/``. Not a plugin (leading underscore).
"""

from __future__ import annotations

from typing import Iterable

from kbwatch.pipeline.model import Finding

MARKER = "[hidden-unicode removed]"
_STRIP_RULES = ("hidden-unicode.tag-chars", "hidden-unicode.bidi-control")


def _strippable(ch: str) -> bool:
    cp = ord(ch)
    return 0xE0000 <= cp <= 0xE007F or 0x202A <= cp <= 0x202E or 0x2066 <= cp <= 0x2069 or cp in (0x200E, 0x200F, 0x061C)


def sanitize(markdown: str, findings: Iterable[Finding]) -> str:
    edits: list[tuple[int, int, str]] = []
    for f in findings:
        start, end = f.offset, f.offset + max(f.length, 0)
        if not (0 <= start <= end <= len(markdown)):
            continue
        if f.redact:
            edits.append((start, end, f"[REDACTED:{f.rule}]"))
        elif f.rule in _STRIP_RULES:
            seg = markdown[start:end]
            kept = "".join(c for c in seg if not _strippable(c))
            if kept != seg:
                edits.append((start, end, MARKER + kept))
    if not edits:
        return markdown
    # right to left; on overlap keep the edit that starts later (already applied)
    edits.sort(key=lambda e: (e[0], e[1]), reverse=True)
    kept: list[tuple[int, int, str]] = []
    limit = len(markdown) + 1
    for start, end, rep in edits:
        if end > limit:
            continue
        kept.append((start, end, rep))
        limit = start
    # one new string (a large text is not copied once per edit)
    parts: list[str] = []
    pos = 0
    for start, end, rep in reversed(kept):
        parts.append(markdown[pos:start])
        parts.append(rep)
        pos = end
    parts.append(markdown[pos:])
    return "".join(parts)
