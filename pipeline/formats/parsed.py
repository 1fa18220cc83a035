"""parsed/<name>.md (DESIGN §5): three header comments, then the Markdown body."""

from __future__ import annotations

import re

HEADER_RE = re.compile(r"^<!-- (source|archived|parsed_at): (.*) -->$")


def _comment_safe(text: str) -> str:
    return text.replace("-->", "--&gt;").replace("\n", " ")


def render_parsed(source_name: str, archived: str, parsed_at: str, title: str, body: str) -> str:
    """The parsed file: header comments, a ``# title`` unless the body starts with one, the body."""
    head = (
        f"<!-- source: {_comment_safe(source_name)} -->\n"
        f"<!-- archived: {_comment_safe(archived)} -->\n"
        f"<!-- parsed_at: {_comment_safe(parsed_at)} -->\n\n"
    )
    body = body.strip("\n")
    first = next((l for l in body.splitlines() if l.strip() and not l.startswith("<!--")), "")
    if not first.startswith("# "):
        body = f"# {title}\n\n{body}" if body else f"# {title}"
    return head + body + "\n"


def body_line_offset(title: str, body: str) -> int:
    """How many lines of the rendered parsed file precede the first body line."""
    rendered = render_parsed("x", "x", "x", title, body)
    stripped = body.strip("\n")
    if not stripped:
        return rendered.count("\n")
    return rendered[: rendered.index(stripped)].count("\n")


def read_header(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines()[:5]:
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
