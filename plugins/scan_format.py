"""Format scanner, kind ``format``: structures that break a model's context.

Owns the rules:

- ``format.long-line``        a single line longer than ``max_line_chars`` (default 10 000)
- ``format.long-paragraph``   a paragraph (blank-line separated) longer than
  ``max_paragraph_chars`` (default 50 000)
- ``format.encoded-blob``     a base64/hex run longer than ``max_blob_chars`` (default 4 096),
  e.g. an inlined image or binary
- ``format.repeated-line``    one line (≥ 20 characters) repeated at least
  ``max_repeated_lines`` times (default 50): flooding
- ``format.char-run``         one character repeated ``max_char_run`` times in a row (default 1 000)
- ``format.replacement-chars`` U+FFFD making up more than 1% of the text (at least 10): a decoding failure
- ``format.oversized``        the whole document longer than ``max_document_chars`` (default 5 000 000)
- ``format.pack-imitation``   text that imitates the knowledge pack's own structure: a fence tag,
  also with look-alike letters (``</knowIedge_pack>``, Cyrillic), a pack section title
  (``## 片段 / Snippets``), a snippet header or citation (``### [1] parsed/x.md#L1-L3``), the pack's
  status line or preamble (:mod:`kbwatch.plugins.scanning.fence`; ``ask`` neutralises them)

A large document is scanned in ~1 MB windows (``kbwatch.plugins.scan``): line, paragraph, repeated-line
and replacement-character counts are then per window; ``format.oversized`` uses the
document's length.

All severities are ``medium`` except replacement characters (``low``).
Excerpts show at most the first 40 characters, with every run of seven or more
non-space characters masked (``_scanutil.mask_runs``): a blob or long line may
be a key, so never more than 6 characters of one are shown.
"""

from __future__ import annotations

import functools
import re
from collections import Counter

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.config import stage_defaults
from kbwatch.pipeline.model import Finding
from kbwatch.plugins.scanning import LineIndex, make_finding, mask_runs, scan_options
from kbwatch.plugins.scanning.fence import find_imitations

KIND = "format"


@functools.lru_cache(maxsize=1)
def _defaults() -> dict:
    """``[stages.scan]`` defaults, read once (``_opt`` only reads them)."""
    return stage_defaults("scan")


def _opt(opts: dict, key: str) -> int:
    """An integer ``[stages.scan]`` limit; its default is declared in config/default.toml."""
    default = _defaults()[key]
    try:
        return int(opts.get(key, default))
    except (TypeError, ValueError):
        return default


def scan_text(text: str, settings=None, document_chars: int | None = None) -> list[Finding]:
    """``document_chars``: the whole document's length when ``text`` is one window of it
    (the scan stage's windows over large texts); ``format.oversized`` judges that."""
    opts = scan_options(settings or {})
    index = LineIndex(text)
    out: list[Finding] = []

    def add(rule, sev, s, e, msg):
        f = make_finding(text, index, opts, kind=KIND, rule=rule, severity=sev, start=s, end=e, message=msg,
                         excerpt_text=_short(text, s, e))
        if f is not None:
            out.append(f)

    max_line = _opt(opts, "max_line_chars")
    max_par = _opt(opts, "max_paragraph_chars")
    max_blob = _opt(opts, "max_blob_chars")
    max_rep = _opt(opts, "max_repeated_lines")
    max_run = _opt(opts, "max_char_run")
    max_doc = _opt(opts, "max_document_chars")

    doc_chars = len(text) if document_chars is None else document_chars
    if doc_chars > max_doc:
        add("format.oversized", "medium", 0, 1, f"document has {doc_chars} characters (limit {max_doc})")
    if len(text) > max_line:
        # only line starts can begin a match ((?m)^): linear, not quadratic, on long lines
        for m in re.finditer(r"(?m)^[^\n]{%d,}" % (max_line + 1), text):
            add("format.long-line", "medium", m.start(), m.end(), f"line of {m.end() - m.start()} characters (limit {max_line})")
    if len(text) > max_par:
        pos = 0
        for m in re.finditer(r"\n[ \t]*\n|\Z", text):
            if m.start() - pos > max_par:
                add("format.long-paragraph", "medium", pos, m.start(),
                    f"paragraph of {m.start() - pos} characters (limit {max_par})")
            pos = m.end()
    if len(text) > max_blob:
        # the look-behind lets only run starts attempt a match (linear in the text length)
        for m in re.finditer(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/=_\-]{%d,}" % (max_blob + 1), text):
            add("format.encoded-blob", "medium", m.start(), m.end(), f"encoded blob of {m.end() - m.start()} characters")
    if len(text) > max_run:
        for s, e in _char_runs(text, max_run):
            add("format.char-run", "medium", s, e, f"{e - s} repeated characters")
    lines = text.split("\n")
    if len(lines) >= max_rep:
        counts = Counter(ln for ln in lines if len(ln.strip()) >= 20)
        for ln, c in counts.items():
            if c >= max_rep:
                s = text.find(ln)
                add("format.repeated-line", "medium", s, s + len(ln), f"line repeated {c} times")
    for s, e, what in find_imitations(text):
        add("format.pack-imitation", "medium", s, e, f"text imitates the knowledge pack's {what}")
    bad = text.count("\ufffd")
    if bad >= 10 and bad > len(text) * 0.01:
        s = text.find("\ufffd")
        add("format.replacement-chars", "low", s, s + 1, f"{bad} U+FFFD replacement characters (decoding failure?)")
    return out


def _char_runs(text: str, max_run: int) -> list[tuple[int, int]]:
    """Spans of more than ``max_run`` equal characters in a row.

    A run that long covers three sample points ``p``, ``p + k/2``, ``p + k`` (``p`` a multiple
    of ``k = max_run // 2``) holding the same character, so only the neighbourhoods of such
    samples are searched with the regex: linear with a tiny constant on large documents.
    """
    pat = re.compile(r"(.)\1{%d,}" % max_run, re.S)
    n = len(text)
    k = max(2, max_run // 2)
    if n < 8 * k:
        return [(m.start(), m.end()) for m in pat.finditer(text)]
    out: list[tuple[int, int]] = []
    for p in range(0, n - k, k):
        c = text[p]
        if text[p + k] != c or text[p + k // 2] != c or (out and p < out[-1][1]):
            continue
        # the run holding p starts less than k before p (else an earlier sample had fired)
        lo, hi = max(0, p - k - 1), min(n, p + k + max_run + 1)
        while hi < n and text[hi - 1] == text[hi]:  # never cut a run at the window end
            hi = min(n, hi + max_run)
        for m in pat.finditer(text, lo, hi):
            if not out or m.start() >= out[-1][1]:
                out.append((m.start(), m.end()))
    return out


def _short(text: str, s: int, e: int) -> str:
    """The first 40 characters of the span, with every run of ≥ 7 non-space characters
    masked (a long line or blob may be a key: never more than 6 of its characters shown)."""
    body = mask_runs(text[s:min(e, s + 40)]).replace("\n", "⏎")
    return body + ("…" if e - s > 40 else "") + f" ({e - s} chars)"


@hookimpl
def kb_scan(document, settings):
    window = (document.metadata or {}).get("scan_window") or {}
    found = scan_text(document.markdown or "", settings, window.get("document_chars"))
    if window.get("offset"):  # reported by the first window only
        found = [f for f in found if f.rule != "format.oversized"]
    return found
