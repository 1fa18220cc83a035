"""parsed/<name>.md (DESIGN §5): three header comments, then the Markdown body."""

from __future__ import annotations

import re

from kbwatch.pipeline.bigtext import first_lines, newline_bounds

HEADER_RE = re.compile(r"^<!-- (source|archived|parsed_at): (.*) -->$")


def comment_safe(text: str) -> str:
    """``text`` as a header comment holds it."""
    return text.replace("-->", "--&gt;").replace("\n", " ")


def render_parsed_parts(source_name: str, archived: str, parsed_at: str, title: str, body: str) -> list[str]:
    """The parsed file as parts to write one after the other (``"".join`` is the file):
    header comments, a ``# title`` unless the body starts with one, the body and one final
    newline. A large body is passed through without a copy unless it has surrounding newlines
    to strip beyond one final newline (which is then the file's own)."""
    head = (
        f"<!-- source: {comment_safe(source_name)} -->\n"
        f"<!-- archived: {comment_safe(archived)} -->\n"
        f"<!-- parsed_at: {comment_safe(parsed_at)} -->\n\n"
    )
    start, end = newline_bounds(body)
    tail = "\n"
    if start == 0 and end == len(body) - 1:
        tail = ""  # body[:end] + "\n" is the body itself
    elif start or end < len(body):
        body = body[start:end]
    first = next((l for l in first_lines(body) if l.strip() and not l.startswith("<!--")), "")
    if not first.startswith("# "):
        return [head, f"# {title}\n\n", body, tail] if body else [head, f"# {title}", "\n"]
    return [head, body, tail]


def render_parsed(source_name: str, archived: str, parsed_at: str, title: str, body: str) -> str:
    """The parsed file: header comments, a ``# title`` unless the body starts with one, the body."""
    return "".join(render_parsed_parts(source_name, archived, parsed_at, title, body))


def body_line_offset(title: str, body: str) -> int:
    """How many lines of the rendered parsed file precede the first body line."""
    start, end = newline_bounds(body)
    parts = render_parsed_parts("x", "x", "x", title, body[start:end] if end - start <= 65536 else body[start:start + 65536])
    if start == end:
        return "".join(parts).count("\n")
    return sum(p.count("\n") for p in parts[:-2])


def read_header(text: str) -> dict[str, str]:
    """The header comments of a parsed file's text (its first lines; split at ``\n`` only: a
    name in a header may hold U+2028 or U+0085, which ``splitlines`` would break at)."""
    out: dict[str, str] = {}
    for line in text.split("\n", 5)[:5]:
        m = HEADER_RE.match(line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def strip_header(text: str) -> str:
    lines = text.splitlines()
    i = 0
    while i < len(lines) and (HEADER_RE.match(lines[i]) or (i < 4 and not lines[i].strip())):
        i += 1
    return "\n".join(lines[i:])
