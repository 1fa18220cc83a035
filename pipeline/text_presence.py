"""Whether a parsed document holds any text: the one rule behind the ``no text`` outcome.

A parser's Markdown can be non-empty without a word of the document in it:
location markers (``<!-- page: 3 -->``, ``<!-- slide: 2 -->``), kbwatch's own
notes (``*[Page 4 is a scanned image ...]*``, ``*(empty sheet)*``), sheet
labels (``## Sheet: Sheet1``), empty table skeletons (``| | |`` and ``|---|``),
fence lines (a fence's language name is not the file's text). What is left
once those are set aside counts as text when it holds at least one letter or
digit, in any script; punctuation and Markdown syntax alone do not count.

A text longer than one window (64 Ki characters) is looked at a window at a
time, cut at line breaks, so that no regex runs over all of it at once (a 25 MB
single-line text held the GIL for 0.6 s here) and a document with text says so
after its first window. A comment left open at a cut goes on into the next
window, and a line is looked at once it is whole, as the whole-text rule sees it
once its comments are set aside. Where a cut must fall inside a line (one longer
than half a window) a comment's ``<!--`` can be cut in two, and a line longer
than a window is looked at in pieces, so that a note cut in half reads as text:
such a document is kept rather than failed as "no text", never the other way.
"""

from __future__ import annotations

import re

from kbwatch.pipeline import bigtext

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_NOTE_LINE = re.compile(r"^[ \t]*\*(?:\[.*\]|\(.*\))\*[ \t]*$", re.M)  # kbwatch's notes: *[...]* and *(...)*
_SHEET_LABEL = re.compile(r"^[ \t]*#{1,6}[ \t]+Sheet:.*$", re.M)  # one per worksheet, named or not
_FENCE_LINE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[^\n]*$", re.M)
_LETTER_OR_DIGIT = re.compile(r"[^\W_]")


_WINDOW = 65536  # most documents show text in their first lines: the first window says so


def has_text(markdown: str) -> bool:
    """True when ``markdown`` holds a letter or digit outside markers, notes and Markdown syntax."""
    if not markdown or markdown.isspace():
        return False
    if len(markdown) <= _WINDOW:
        return _letters_outside_markup(markdown)
    return _letters_outside_markup_by_window(markdown)


def _letters_outside_markup(markdown: str) -> bool:
    return _letters_outside_lines(_COMMENT.sub(" ", markdown))


def _letters_outside_lines(rest: str) -> bool:
    for pattern in (_NOTE_LINE, _SHEET_LABEL, _FENCE_LINE):
        rest = pattern.sub(" ", rest)
    return _LETTER_OR_DIGIT.search(rest) is not None


def _letters_outside_markup_by_window(markdown: str) -> bool:
    opened = -1  # where a comment still open at the last cut began
    line = ""  # what follows the last line break so far, comments set aside: a line not yet whole
    for w in bigtext.windows(markdown, size=_WINDOW, overlap=0):
        start = w.own_start
        if opened >= 0:  # its "-->" may straddle the cut: look from two characters before
            close = markdown.find("-->", max(opened + 4, start - 2), w.own_end)
            if close < 0:
                continue
            start, opened = close + 3, -1
        rest, left_open = _comments_set_aside(markdown[start:w.own_end])
        if left_open >= 0:
            opened = start + left_open
        lines, newline, line = (line + rest).rpartition("\n")
        if len(line) > _WINDOW:  # a line longer than a window: looked at in pieces
            lines, newline, line = lines + newline + line, "", ""
        if _letters_outside_lines(lines + newline):
            return True
    return bool(line) and _letters_outside_lines(line)


def _comments_set_aside(raw: str) -> tuple[str, int]:
    """``_COMMENT.sub(" ", raw)``, and where the comment left open at its end begins (-1: none).

    The open one is the last match when it did not end in its own ``-->``: a ``<!--`` after the
    last ``-->`` can stand inside a comment opened earlier (``<!--<!-- … <!-->``, whose ``-->``
    closes the first), so it is the matches, not a search back from the end, that say which."""
    parts, pos, last = [], 0, None
    for last in _COMMENT.finditer(raw):
        parts.append(raw[pos:last.start()])
        parts.append(" ")
        pos = last.end()
    if last is None:
        return raw, -1
    parts.append(raw[pos:])
    closed = last.end() - last.start() >= 7 and raw.startswith("-->", last.end() - 3)
    return "".join(parts), -1 if closed else last.start()
