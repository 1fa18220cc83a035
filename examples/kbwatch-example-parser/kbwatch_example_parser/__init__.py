"""An example kbwatch plugin package.

It shows the two things a parser plugin usually does:

1. claim a new extension: ``.vtt`` (WebVTT subtitles) become Markdown with one
   ``<!-- cue: 00:01:02 -->`` marker per cue, so answers can cite the time;
2. take over an existing extension: ``.log`` is claimed with priority 150,
   above the built-in text parser's 100, and rendered as a fenced block with
   a summary of its levels.

Install it (``pip install ./examples/kbwatch-example-parser``) and
``kbwatch plugins`` lists it; no configuration is needed.
"""

from __future__ import annotations

import re
from collections import Counter

# only the public plugin API: names exported by kbwatch.pipeline
from kbwatch.pipeline import ParsedDocument, ParserInfo, PermanentError, hookimpl

CUE_RE = re.compile(r"^(\d\d:)?\d\d:\d\d[.,]\d{3}\s+-->\s+")
LEVEL_RE = re.compile(r"\b(DEBUG|INFO|WARN(?:ING)?|ERROR|CRITICAL|FATAL)\b")


@hookimpl
def kb_parser_info():
    return [
        ParserInfo(name="webvtt", extensions=(".vtt",), priority=100, inprocess=True,
                   description="WebVTT subtitles, one marker per cue"),
        ParserInfo(name="log-summary", extensions=(".log",), priority=150, inprocess=True,
                   description="log files as a fenced block with a level summary (takes over .log)"),
    ]


def _text(path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PermanentError("not UTF-8 text", reason="not text") from exc


@hookimpl
def kb_parse(path, ext, settings):
    if ext == ".vtt":
        return _parse_vtt(_text(path))
    if ext == ".log":
        return _parse_log(_text(path))
    return None  # not mine: let the next parser try


def _parse_vtt(text: str) -> ParsedDocument:
    if not text.lstrip("\ufeff").startswith("WEBVTT"):
        raise PermanentError("not a WebVTT file (no WEBVTT header)", reason="corrupt")
    out, cue = [], None
    for line in text.splitlines():
        if CUE_RE.match(line):
            cue = line.split("-->")[0].strip()
            out.append(f"\n<!-- cue: {cue} -->\n")
        elif cue and line.strip():
            out.append(line.strip())
    return ParsedDocument(markdown="\n".join(out).strip() + "\n", parser="webvtt", locations="cue")


def _parse_log(text: str) -> ParsedDocument:
    levels = Counter(m.group(1) for m in LEVEL_RE.finditer(text))
    summary = ", ".join(f"{n} {lvl}" for lvl, n in levels.most_common()) or "no levels found"
    fence = "````" if "```" in text else "```"
    body = f"Log summary: {summary}.\n\n{fence}text\n{text.rstrip()}\n{fence}\n"
    return ParsedDocument(markdown=body, parser="log-summary")
