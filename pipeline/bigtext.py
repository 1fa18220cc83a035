"""Large texts in bounded pieces: no whole-text copies, no whole-text C calls.

A parsed document is one ``str``; a 100 MB text file makes one of ~130 MB.
The stages that touch it must not multiply that (``strip``, concatenation,
``encode``, ``splitlines``), and must not hold the GIL for long in one C
call (a regex, a ``replace`` or a slice over the whole text: 0.1-0.6 s for
100 MB here, several times that on a loaded machine), or the service's
heartbeat and the other runner threads stop. This module owns the pieces they use instead:

- :data:`LARGE_CHARS`: above this size a text takes the bounded paths
  (smaller texts keep the plain ones: their copies are cheap);
- :func:`newline_bounds`: where the text is once its surrounding newlines
  are stripped, without copying it;
- :func:`windows`: ~1 MB windows with overlap, cut at line breaks when the
  text has them (anywhere for single-line text);
- :func:`first_lines`: the lines of a bounded prefix;
- :func:`contains` and :func:`normalise_newlines`: a search and the ``\r\n`` → ``\n``
  rewrite a window at a time (no copy at all when there is no ``\r``);
- :func:`write_parts_atomic`: write str parts through a temp file + rename,
  encoding ~1 MB at a time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator, NamedTuple

from kbwatch.pipeline.fsutil import atomic_write_with

LARGE_CHARS = 1 << 20  # 1 Mi characters
WINDOW_CHARS = 1 << 20
WINDOW_OVERLAP = 4096
ENCODE_CHARS = 1 << 20


def newline_bounds(text: str, chars: str = "\n") -> tuple[int, int]:
    """``(start, end)`` such that ``text[start:end] == text.strip(chars)``, without a copy."""
    n = len(text)
    start = 0
    while start < n and text[start] in chars:
        start += 1
    end = n
    while end > start and text[end - 1] in chars:
        end -= 1
    return start, end


class Window(NamedTuple):
    """``text[scan_start:scan_end]`` is scanned; findings starting in ``[own_start, own_end)`` are kept."""

    own_start: int
    own_end: int
    scan_start: int
    scan_end: int


def _cut(text: str, pos: int, lo: int) -> int:
    """A cut near ``pos`` just after a line break in ``(lo, pos]``, else ``pos`` itself."""
    nl = text.rfind("\n", lo, pos)
    return nl + 1 if nl >= 0 else pos


def windows(text: str, start: int = 0, end: int | None = None, size: int | None = None,
            overlap: int | None = None) -> Iterator[Window]:
    """Windows covering ``text[start:end]``: each owns ~``size`` characters (default
    :data:`WINDOW_CHARS`, read at each call) cut after a line break when one lies in its
    second half, and is scanned with ``overlap`` characters (:data:`WINDOW_OVERLAP`) of
    context on both sides (cut at line breaks when possible)."""
    size = WINDOW_CHARS if size is None else size
    overlap = WINDOW_OVERLAP if overlap is None else overlap
    end = len(text) if end is None else end
    pos = start
    while pos < end:
        own_end = end if end - pos <= size else _cut(text, pos + size, pos + size // 2)
        scan_start = start
        if pos > start:  # context before: from a line start when one is near, never none
            lo = max(start, pos - overlap)
            nl = text.find("\n", lo, pos - 1)
            scan_start = nl + 1 if nl >= 0 else lo
        scan_end = end
        if own_end < end:  # context after, to the last line break in reach
            scan_end = min(end, own_end + overlap)
            nl = text.rfind("\n", own_end, scan_end)
            if nl >= 0 and scan_end < end:
                scan_end = nl + 1
        yield Window(pos, own_end, scan_start, scan_end)
        pos = own_end


def contains(text: str, sub: str) -> bool:
    """``sub in text``, one :data:`WINDOW_CHARS` span per C call for a large text."""
    if len(text) <= LARGE_CHARS:
        return sub in text
    step = WINDOW_CHARS
    reach = len(sub) - 1  # a match straddling two spans is found by the first
    return any(text.find(sub, i, i + step + reach) >= 0 for i in range(0, len(text), step))


def normalise_newlines(text: str) -> str:
    """``\r\n`` and lone ``\r`` as ``\n``. A large text is searched a window at a time and,
    when it has a ``\r``, rewritten ~1 MB at a time (one join at the end); without one it is
    returned as is."""
    if len(text) <= LARGE_CHARS:
        return text.replace("\r\n", "\n").replace("\r", "\n")
    if not contains(text, "\r"):
        return text
    parts, pos, n = [], 0, len(text)
    while pos < n:
        end = min(n, pos + WINDOW_CHARS)
        if end < n and text[end - 1] == "\r" and text[end] == "\n":
            end += 1  # "\r\n" stays in one piece
        parts.append(text[pos:end].replace("\r\n", "\n").replace("\r", "\n"))
        pos = end
    return "".join(parts)


def first_lines(text: str, limit: int = 65536) -> list[str]:
    """``text.splitlines()`` of the first ``limit`` characters (the whole text when shorter)."""
    return (text if len(text) <= limit else text[:limit]).splitlines()


def write_parts_atomic(path: Path, parts: Iterable[str], fsync: bool = False) -> int:
    """Write the UTF-8 encoding of ``parts`` to ``path`` atomically (temp file + rename),
    encoding at most ~1 MB of text at a time. Returns the number of bytes written.

    Below a registered root the folder is reached without following links and the
    temp file is written and renamed relative to its descriptor (kbwatch.pipeline.confine)."""
    def fill(fh) -> int:
        written = 0
        for part in parts:
            for i in range(0, len(part), ENCODE_CHARS):
                written += fh.write(part[i:i + ENCODE_CHARS].encode("utf-8"))
        return written

    return atomic_write_with(path, fill, fsync)
