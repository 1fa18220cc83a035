"""Parser for plain-text formats, read directly (never through unstructured).

Owns .md .markdown .txt .text .log .rst .org .csv .tsv .json .ndjson .jsonl
.xml .yaml .yml, and the configuration/shell files where secrets live: .env .ini
.cfg .conf .properties .toml .sh .bash .zsh and the dotfiles .npmrc .pypirc
.netrc .pgpass .git-credentials .htpasswd (``.env.local`` is read as ``.env``). unstructured's text partitioner is not used: it turns Chinese
paragraphs into headings. HTML is *not* here: it goes through unstructured
(``parse_unstructured``), which keeps headings, lists and tables.

- Encoding: BOM, then strict UTF-8, then BOM-less UTF-16/32, then
  charset-normalizer (GBK is read as GB18030); binary content under a text
  extension fails with ``reason="not text"``.
- .md as-is; .txt/.log as text; .rst/.org as text with their section titles
  turned into Markdown headings (directives such as ``include`` are never
  followed).
- .csv/.tsv as one Markdown table (delimiter sniffed, ragged rows padded while
  the table stays under ``common.PAD_CELLS`` cells, pipes escaped, quoted
  newlines flattened), parsed in a parse worker (parser ``table``: its memory
  cap and timeout apply).
- .json/.ndjson/.yaml/.xml and the configuration/shell files as a fenced code block,
  byte-for-byte content.
"""

from __future__ import annotations

import csv
import io
import re

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.bigtext import LARGE_CHARS, newline_bounds, normalise_newlines
from kbwatch.pipeline.errors import PermanentError
from kbwatch.pipeline.fsutil import read_all
from kbwatch.pipeline.model import ParsedDocument, ParserInfo

from kbwatch.plugins.parsing.common import decode_bytes, fenced, md_table

TEXT_EXTS = (".md", ".markdown", ".txt", ".text", ".log", ".rst", ".org")
TABLE_EXTS = (".csv", ".tsv")
CODE_EXTS = {".json": "json", ".ndjson": "json", ".jsonl": "json", ".xml": "xml", ".yaml": "yaml", ".yml": "yaml"}
# configuration and shell files, where secrets live (issue 15): fenced code, byte for byte.
# Dotfiles are named by their first dotted part (``.env.local`` → ``.env``, ``.npmrc``);
# see ``dotfile_ext``.
CONFIG_EXTS = {".env": "dotenv", ".ini": "ini", ".cfg": "ini", ".conf": "conf", ".properties": "properties",
               ".toml": "toml", ".sh": "sh", ".bash": "bash", ".zsh": "zsh", ".npmrc": "ini", ".pypirc": "ini",
               ".netrc": "text", ".pgpass": "text", ".git-credentials": "text", ".htpasswd": "text"}
CODE_EXTS.update(CONFIG_EXTS)
EXTENSIONS = TEXT_EXTS + TABLE_EXTS + tuple(CODE_EXTS)


@hookimpl
def kb_parser_info():
    return [
        ParserInfo(
            name="text",
            extensions=tuple(e for e in EXTENSIONS if e not in TABLE_EXTS),
            priority=100,
            inprocess=True,
            description="plain text read directly: md/txt/rst/org as text, "
            "json/yaml/xml and configuration files as code blocks (encoding detected)",
        ),
        # a table is built cell by cell (a small CSV can describe a huge one: a 200,000-field
        # header over 20,000 rows), so it is built in a parse worker, under its memory cap and
        # timeout, like the rich formats; the text parsers above stream large texts in process
        ParserInfo(
            name="table",
            extensions=TABLE_EXTS,
            priority=100,
            inprocess=False,
            description="csv/tsv as a Markdown table (delimiter sniffed), in a parse worker",
        ),
    ]


@hookimpl
def kb_parse(path, ext, settings):
    text, encoding = decode_bytes(read_all(path), path.name)  # the bytes are freed on return
    text = normalise_newlines(text).lstrip("\ufeff")  # no copy when nothing changes
    large = len(text) > LARGE_CHARS
    title = None
    if ext in TABLE_EXTS:
        body = csv_to_markdown(text, "\t" if ext == ".tsv" else None)
    elif ext in CODE_EXTS:
        body = fenced(text, CODE_EXTS[ext])
    elif ext == ".rst":
        body = rst_headings(text)
    elif ext == ".org":
        body = org_headings(text)
    else:
        start, end = newline_bounds(text)
        if start == 0 and end >= len(text) - (1 if large else 0):
            body = text  # a large text keeps its one final newline: no whole-text copy to cut it
        else:
            body = text[start:end]
    del text
    if ext not in CODE_EXTS:  # the first heading; in a large text, within its first 1 MB
        match = _HEADING.search(body, 0, LARGE_CHARS if large else len(body))
        if match:
            title = match.group(1).strip()
    # a large body is returned as is (no copy to add the final newline: parsed/ adds it or keeps its own)
    # (the core names the document after the parser that claimed the extension: "text" or "table")
    doc = ParsedDocument(markdown=body if large or not body else body + "\n", title=title)
    doc.metadata["encoding"] = encoding
    if not body or body.isspace():
        doc.warnings.append("the document has no text")
    return doc


_HEADING = re.compile(r"^# +(.+?)\s*#*\s*$", re.M)


def csv_to_markdown(text: str, delimiter: str | None = None) -> str:
    if not text.strip():
        return ""
    if delimiter is None:
        sample = text[:65536]
        try:
            delimiter = csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    csv.field_size_limit(64 * 1024 * 1024)
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    except csv.Error as exc:
        raise PermanentError(f"CSV cannot be read: {exc}", reason="corrupt")
    return md_table(rows)


_RST_ADORN = re.compile(r"^([=\-~^\"'`#*+<>:._])\1{2,}\s*$")


def rst_headings(text: str) -> str:
    """reStructuredText section titles (underlined, optionally overlined) to # headings."""
    lines = text.split("\n")
    out: list[str] = []
    levels: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        over = None
        if _RST_ADORN.match(line) and i + 2 < len(lines) and _RST_ADORN.match(lines[i + 2]) and lines[i + 1].strip():
            over, line, nxt, step = line[0], lines[i + 1], lines[i + 2], 3
        else:
            step = 2
        if line.strip() and not _RST_ADORN.match(line) and _RST_ADORN.match(nxt) and len(nxt.rstrip()) >= len(line.strip()):
            key = (over or "") + nxt[0]
            if key not in levels:
                levels.append(key)
            out.append("#" * min(levels.index(key) + 1, 6) + " " + line.strip())
            i += step
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out).strip("\n")


def org_headings(text: str) -> str:
    """Org-mode ``* Heading`` lines to Markdown headings; ``#+TITLE:`` to a title."""
    out = []
    shift = 1 if re.search(r"^#\+title:", text, re.I | re.M) else 0
    for line in text.split("\n"):
        m = re.match(r"^(\*+)\s+(.*)$", line)
        t = re.match(r"^#\+title:\s*(.+)$", line, re.I)
        if m:
            out.append("#" * min(len(m.group(1)) + shift, 6) + " " + m.group(2).strip())
        elif t:
            out.append("# " + t.group(1).strip())
        else:
            out.append(line)
    return "\n".join(out).strip("\n")
