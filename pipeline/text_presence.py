"""Whether a parsed document holds any text: the one rule behind the ``no text`` outcome.

A parser's Markdown can be non-empty without a word of the document in it:
location markers (``<!-- page: 3 -->``, ``<!-- slide: 2 -->``), kbwatch's own
notes (``*[Page 4 is a scanned image ...]*``, ``*(empty sheet)*``), sheet
labels (``## Sheet: Sheet1``), empty table skeletons (``| | |`` and ``|---|``),
fence lines (a fence's language name is not the file's text). What is left
once those are set aside counts as text when it holds at least one letter or
digit, in any script; punctuation and Markdown syntax alone do not count.
"""

from __future__ import annotations

import re

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_NOTE_LINE = re.compile(r"^[ \t]*\*(?:\[.*\]|\(.*\))\*[ \t]*$", re.M)  # kbwatch's notes: *[...]* and *(...)*
_SHEET_LABEL = re.compile(r"^[ \t]*#{1,6}[ \t]+Sheet:.*$", re.M)  # one per worksheet, named or not
_FENCE_LINE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[^\n]*$", re.M)
_LETTER_OR_DIGIT = re.compile(r"[^\W_]")


_HEAD = 65536  # most documents show text in their first lines: no need to look at all of a big one


def has_text(markdown: str) -> bool:
    """True when ``markdown`` holds a letter or digit outside markers, notes and Markdown syntax."""
    if not markdown or markdown.isspace():
        return False
    if len(markdown) > _HEAD:
        # whole lines only: a note cut in half would look like text (a comment cut in half
        # reads as a comment to the end, which can only say "no text" and send us on)
        head = markdown[:_HEAD].rpartition("\n")[0]
        if head and _letters_outside_markup(head):
            return True
    return _letters_outside_markup(markdown)


def _letters_outside_markup(markdown: str) -> bool:
    rest = _COMMENT.sub(" ", markdown)
    for pattern in (_NOTE_LINE, _SHEET_LABEL, _FENCE_LINE):
        rest = pattern.sub(" ", rest)
    return _LETTER_OR_DIGIT.search(rest) is not None
