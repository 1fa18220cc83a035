"""Heading-aware chunking of a parsed Markdown file (DESIGN §5).

A chunk is a run of whole lines with 1-based, inclusive ``start_line`` and
``end_line`` counted in the file as it is on disk (header comments included
in the numbering, so ``parsed/x.md#L12-L40`` points at the right lines).

Rules:
* The leading header comments (``<!-- source: ... -->``, ``<!-- archived: ... -->``,
  ``<!-- parsed_at: ... -->`` and any other ``<!-- key: value -->`` line before
  the first content line) are not content and belong to no chunk.
* A heading starts a new chunk, unless the current chunk holds nothing but
  headings (``# Title`` directly followed by ``## Intro`` stay together).
* ``<!-- slide: N -->`` and ``## Sheet: Name`` start a new chunk too;
  ``<!-- page: N -->`` does when the current chunk is already ``min_chars``
  long; otherwise the chunk records the page range (``pages 3-4``).
* A section longer than ``max_chars`` is cut at paragraph boundaries (blank
  lines), or at line boundaries inside a paragraph. A single line is never cut.
* Headings inside fenced code blocks are text, not headings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator

HEADER_COMMENT_RE = re.compile(r"^\s*<!--\s*[\w.-]+\s*:.*-->\s*$")
MARKER_RE = re.compile(r"^\s*<!--\s*(page|slide|sheet)\s*:\s*(.*?)\s*-->\s*$", re.IGNORECASE)
HEADING_RE = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
SHEET_HEADING_RE = re.compile(r"^sheet\s*[:：]\s*(.+)$", re.IGNORECASE)
# what must occur somewhere in a text for a chunk anchor of each kind (MARKER_RE, SHEET_HEADING_RE): a
# text without it has no chunk anchored on that kind, and need not be chunked to find one
ANCHOR_HINTS = {"page": re.compile(r"<!--\s*page", re.I), "slide": re.compile(r"<!--\s*slide", re.I),
                "sheet": re.compile(r"<!--\s*sheet|sheet\s*[:：]", re.I)}
FENCE_RE = re.compile(r"^ {0,3}(```|~~~)")
COMMENT_RE = re.compile(r"<!--.*?-->", re.DOTALL)

MAX_CHARS = 1800
MIN_CHARS = 400


@dataclass
class Chunk:
    ordinal: int
    start_line: int
    end_line: int
    heading: str  # heading path in effect, "Title > Section"
    anchor: str  # "page 3", "pages 3-4", "slide 4", "sheet Summary" or ""
    text: str  # the raw lines start..end, joined with "\n"

    @property
    def index_text(self) -> str:
        """The text to tokenise: HTML comments (location markers) removed."""
        return COMMENT_RE.sub(" ", self.text)

    def cite(self, doc_path: str) -> str:
        ref = f"{doc_path}#L{self.start_line}-L{self.end_line}"
        return f"{ref} ({self.anchor})" if self.anchor else ref


@dataclass
class _Open:
    start: int = 0
    end: int = 0
    lines: list[str] = field(default_factory=list)
    chars: int = 0
    content_chars: int = 0  # chars outside heading lines
    heading: str = ""
    anchors: list[tuple[str, str]] = field(default_factory=list)  # (kind, value) seen


def strip_header(lines: list[str]) -> int:
    """Index of the first line after the leading header comments and blanks."""
    i = 0
    while i < len(lines) and (not lines[i].strip() or HEADER_COMMENT_RE.match(lines[i])):
        if MARKER_RE.match(lines[i]):
            break  # a page/slide marker is content position, not a header
        i += 1
    return i


def _anchor_text(anchors: list[tuple[str, str]]) -> str:
    if not anchors:
        return ""
    kind = anchors[0][0]
    values = [v for k, v in anchors if k == kind]
    first, last = values[0], values[-1]
    if first == last:
        return f"{kind} {first}"
    return f"{kind}s {first}-{last}"


def chunk_markdown(text: str, *, max_chars: int = MAX_CHARS, min_chars: int = MIN_CHARS) -> list[Chunk]:
    """Split a parsed Markdown file into heading-aware chunks (see module doc)."""
    return list(iter_chunks(text, max_chars=max_chars, min_chars=min_chars))


def _lines(text: str) -> Iterator[str]:
    """``text``'s lines one at a time (no trailing empty line after a final newline, a
    final ``\\r`` dropped), without a list of all of them."""
    pos, n = 0, len(text)
    while pos < n:
        nl = text.find("\n", pos)
        if nl < 0:
            line, pos = text[pos:], n
        else:
            line, pos = text[pos:nl], nl + 1
        yield line[:-1] if line.endswith("\r") else line


def iter_chunks(text: str, *, max_chars: int = MAX_CHARS, min_chars: int = MIN_CHARS) -> Iterator[Chunk]:
    """:func:`chunk_markdown` one chunk at a time: a large document is never held as a
    list of all its lines or chunks (the index tokenises each chunk as it comes)."""
    ready: list[Chunk] = []
    count = 0
    heading_stack: list[tuple[int, str]] = []
    anchor: tuple[str, str] | None = None  # location in effect
    cur = _Open()
    in_fence = False

    def heading_path() -> str:
        return " > ".join(h for _, h in heading_stack)

    def flush() -> None:
        nonlocal cur, count
        # trim trailing blank lines
        while cur.lines and not cur.lines[-1].strip():
            cur.lines.pop()
            cur.end -= 1
        if cur.lines and any(ln.strip() for ln in cur.lines):
            ready.append(
                Chunk(
                    ordinal=count,
                    start_line=cur.start,
                    end_line=cur.end,
                    heading=cur.heading,
                    anchor=_anchor_text(cur.anchors),
                    text="\n".join(cur.lines),
                )
            )
            count += 1
        cur = _Open()

    def add(lineno: int, line: str, *, is_heading: bool = False) -> None:
        if not cur.lines:
            if not line.strip():
                return  # never start a chunk with blank lines
            cur.start = lineno
            cur.heading = heading_path()
            if anchor is not None:
                cur.anchors.append(anchor)
        cur.lines.append(line)
        cur.end = lineno
        cur.chars += len(line) + 1
        if not is_heading and not MARKER_RE.match(line):
            cur.content_chars += len(line.strip())

    header = True  # the leading header comments and blanks (strip_header) belong to no chunk
    for idx, line in enumerate(_lines(text)):
        if ready:
            yield from ready
            ready.clear()
        if header:
            if (not line.strip() or HEADER_COMMENT_RE.match(line)) and not MARKER_RE.match(line):
                continue
            header = False
        lineno = idx + 1
        if FENCE_RE.match(line):
            in_fence = not in_fence
        if not in_fence:
            m = MARKER_RE.match(line)
            if m:
                kind, value = m.group(1).lower(), m.group(2)
                anchor = (kind, value)
                if cur.lines and (kind != "page" or cur.content_chars >= min_chars):
                    if cur.content_chars > 0:
                        flush()
                if cur.lines and anchor not in cur.anchors:
                    cur.anchors.append(anchor)
                add(lineno, line, is_heading=True)
                continue
            h = HEADING_RE.match(line)
            if h and not FENCE_RE.match(line):
                level, title = len(h.group(1)), h.group(2).strip()
                sm = SHEET_HEADING_RE.match(title)
                if sm:
                    anchor = ("sheet", sm.group(1).strip())
                if cur.content_chars > 0:
                    flush()
                while heading_stack and heading_stack[-1][0] >= level:
                    heading_stack.pop()
                heading_stack.append((level, title))
                if cur.lines:
                    # a heading-only chunk so far: keep it, refresh its path/anchor
                    cur.heading = heading_path()
                    if anchor is not None and anchor not in cur.anchors:
                        cur.anchors.append(anchor)
                add(lineno, line, is_heading=True)
                continue
        # plain line
        if cur.lines and cur.chars + len(line) + 1 > max_chars and cur.content_chars >= min_chars:
            # prefer a paragraph boundary: cut at the last blank line if there is one late enough
            cut = None
            for j in range(len(cur.lines) - 1, 0, -1):
                if not cur.lines[j].strip():
                    cut = j
                    break
            if cut is not None and sum(len(x) + 1 for x in cur.lines[:cut]) >= min_chars and not in_fence:
                tail = cur.lines[cut + 1 :]
                tail_start = cur.start + cut + 1
                cur.lines = cur.lines[:cut]
                cur.end = cur.start + cut - 1
                flush()
                for k, tl in enumerate(tail):
                    add(tail_start + k, tl)
            else:
                flush()
        add(lineno, line)
    flush()
    yield from ready


def document_title(text: str, fallback: str = "") -> str:
    """The first ``# `` heading of a parsed file (after the header comments)."""
    lines = text.split("\n")
    for line in lines[strip_header(lines) :][:50]:
        m = HEADING_RE.match(line)
        if m and len(m.group(1)) == 1:
            return m.group(2).strip()
    return fallback
