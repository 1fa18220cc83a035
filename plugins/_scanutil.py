"""Shared helpers for the ``kb_scan`` plugins (not a plugin: the leading
underscore keeps it out of plugin discovery).

- :func:`scan_options` reads ``[stages.scan]`` settings defensively (defaults from
  config/default.toml); :func:`allowed` is the one allowlist rule (fnmatch on rule
  ids, exact fingerprints), used by the scanners and by the scan stage alike.
- :class:`LineIndex` turns 0-based offsets into 1-based line/column.
- :func:`mask_value` / :func:`mask_runs` build excerpts that never show more than 6 characters of a
  secret (first 4 + last 2 at most; fewer for short values).
- :func:`normalize` builds a matching view of a text (NFKC, lower case,
  confusable folding, default-ignorable characters dropped, letter-spacing
  collapsed) with a map back to original offsets.
- :func:`make_finding` builds a :class:`kbwatch.pipeline.model.Finding` honouring
  ``allow_rules`` / ``allow_fingerprints``.
"""

from __future__ import annotations

import bisect
import fnmatch
import math
import re
import unicodedata
from collections import Counter
from typing import Any, Iterable

from kbwatch.pipeline.config import stage_options
from kbwatch.pipeline.model import Finding

# --------------------------------------------------------------------------
# settings
# --------------------------------------------------------------------------

def scan_options(settings: Any) -> dict[str, Any]:
    """``[stages.scan]`` over its defaults (declared once, in config/default.toml); a
    ``[scan]`` table, if a caller passes one, is read last."""
    out = stage_options(settings, "scan")
    if isinstance(settings, dict) and isinstance(settings.get("scan"), dict):
        out.update(settings["scan"])
    return out


def rule_allowed(opts: dict[str, Any], rule: str) -> bool:
    """True when ``allow_rules`` names ``rule``: the one allowlist rule of kbwatch.

    Each entry is an fnmatch pattern matched case-sensitively against the whole rule
    id: ``"pii.email"`` names one rule, ``"format.*"`` a family, ``"*.email"`` any family's."""
    return any(fnmatch.fnmatchcase(rule, pattern) for pattern in opts.get("allow_rules") or ())


def fingerprint_allowed(opts: dict[str, Any], fingerprint: str) -> bool:
    """True when ``allow_fingerprints`` lists ``fingerprint``."""
    return fingerprint in set(opts.get("allow_fingerprints") or ())


def allowed(opts: dict[str, Any], finding: Finding) -> bool:
    """True when the config allowlists ``finding`` (its rule or its fingerprint)."""
    return rule_allowed(opts, finding.rule) or fingerprint_allowed(opts, finding.fingerprint)


# --------------------------------------------------------------------------
# positions and excerpts
# --------------------------------------------------------------------------


class LineIndex:
    """Offset → (line, column), both 1-based, computed by bisection."""

    def __init__(self, text: str):
        self._text = text
        self._starts: list[int] | None = None  # built on the first lookup: most texts have no finding

    @property
    def starts(self) -> list[int]:
        if self._starts is None:
            self._starts = [0] + [m.end() for m in re.finditer("\n", self._text)]
        return self._starts

    def position(self, offset: int) -> tuple[int, int]:
        i = bisect.bisect_right(self.starts, offset) - 1
        return i + 1, offset - self.starts[i] + 1


def mask_value(value: str, keep: int = 6) -> str:
    """Mask a secret: at most ``keep`` (≤ 6) characters are kept.

    ≥ 12 characters: first 4 + ``…`` + last 2; 7–11: first 2 + ``…`` + last
    1; shorter: first character + ``…``; a 1-character value becomes ``…``.
    """
    keep = min(keep, 6)
    n = len(value)
    if n >= 12 and keep >= 6:
        return value[:4] + "…" + value[-2:]
    if n >= 7 and keep >= 3:
        return value[:2] + "…" + value[-1:]
    if n >= 2 and keep >= 1:
        return value[:1] + "…"
    return "…"


_LONG_RUN = re.compile(r"\S{7,}")


def mask_runs(s: str) -> str:
    """Mask every run of ≥ 7 non-space characters with :func:`mask_value`.

    For excerpts of text that was not matched as a secret but may contain one
    (format findings: long lines, blobs, repeated lines): whatever the run is,
    at most 6 of its characters are shown.
    """
    return _LONG_RUN.sub(lambda m: mask_value(m.group()), s)


_EXCERPT_CLEAN = str.maketrans({"\n": "⏎", "\r": " ", "\t": " "})


_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def visible(s: str) -> str:
    """Make invisible/control characters printable as ``<U+XXXX>``."""
    if s.isascii() and not _ASCII_CONTROL.search(s):
        return s
    out = []
    for ch in s:
        cat = unicodedata.category(ch)
        if ch in "\n\r\t":
            out.append(ch)
        elif cat in ("Cc", "Cf", "Co", "Cn", "Zl", "Zp") or 0xFE00 <= ord(ch) <= 0xFE0F or 0xE0100 <= ord(ch) <= 0xE01EF:
            out.append(f"<U+{ord(ch):04X}>")
        else:
            out.append(ch)
    return "".join(out)


def excerpt(text: str, start: int, end: int, *, secret: bool = False, context: int = 20,
            max_match: int = 80) -> str:
    """A one-line excerpt around ``text[start:end]``.

    With ``secret=True`` the matched part is masked by :func:`mask_value` and
    the surrounding context is cut at the match (context never contains the
    secret itself, so the excerpt shows ≤ 6 of its characters).
    """
    before = text[max(0, start - context):start]
    after = text[end:end + context]
    body = text[start:end]
    if secret:
        body = mask_value(body)
    elif len(body) > max_match:
        body = body[: max_match - 1] + "…"
    s = visible(before).translate(_EXCERPT_CLEAN) + "[" + visible(body).translate(_EXCERPT_CLEAN) + "]" + visible(after).translate(_EXCERPT_CLEAN)
    return s.strip()


def make_finding(text: str, index: LineIndex, opts: dict[str, Any], *, kind: str, rule: str,
                 severity: str, start: int, end: int, message: str = "", secret: bool = False,
                 redact: bool = False, excerpt_text: str | None = None) -> Finding | None:
    """Build a Finding for ``text[start:end]``; None when config allowlists it."""
    if rule_allowed(opts, rule):
        return None
    line, col = index.position(start)
    match = text[start:end]
    f = Finding(
        kind=kind, rule=rule, severity=severity, line=line, column=col, offset=start,
        excerpt=excerpt_text if excerpt_text is not None else excerpt(
            text, start, end, secret=secret, context=int(opts["excerpt_context"])),
        length=end - start, match=match, redact=redact, message=message,
    )
    if fingerprint_allowed(opts, f.fingerprint):
        return None
    return f


def dedupe(findings: Iterable[Finding]) -> list[Finding]:
    """Drop findings whose span lies inside an earlier-kept span of the same rule family."""
    out: list[Finding] = []
    seen: set[tuple[str, int, int]] = set()
    for f in sorted(findings, key=lambda f: (f.offset, -f.length)):
        key = (f.rule, f.offset, f.length)
        if key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out


# --------------------------------------------------------------------------
# entropy
# --------------------------------------------------------------------------


def shannon(s: str) -> float:
    if not s:
        return 0.0
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


# --------------------------------------------------------------------------
# normalisation with an offset map
# --------------------------------------------------------------------------

# Latin look-alikes from Cyrillic, Greek and a few other blocks (UTS #39
# confusables, the single-letter subset that matters for English keywords).
CONFUSABLES = {
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "ԁ": "d",
    "ԛ": "q", "ԝ": "w", "ӏ": "l", "һ": "h", "ɡ": "g", "ɑ": "a", "ı": "i", "ɩ": "i", "ο": "o",
    "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x", "γ": "y", "ω": "w", "ѵ": "v", "ց": "g", "օ": "o", "ս": "u", "ᴀ": "a", "ʀ": "r",
    "ꜱ": "s", "ᴛ": "t", "ɪ": "i", "ɴ": "n", "ᴏ": "o", "ᴇ": "e", "ʟ": "l", "ᴄ": "c", "ᴜ": "u",
    "ᴍ": "m", "ᴅ": "d", "ɢ": "g", "ʜ": "h", "ᴋ": "k", "ᴘ": "p", "ᴡ": "w", "ʏ": "y", "ᴢ": "z",
    "ℓ": "l", "ⅰ": "i", "ǀ": "l", "∣": "l", "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-",
    "‘": "'", "’": "'", "“": '"', "”": '"', "„": '"', "。": "。",
}


def is_default_ignorable(cp: int) -> bool:
    """Unicode Default_Ignorable_Code_Point (hard-coded ranges, UCD 15)."""
    return (
        cp == 0x00AD or cp == 0x034F or cp == 0x061C or cp in (0x115F, 0x1160, 0x17B4, 0x17B5)
        or 0x180B <= cp <= 0x180F or 0x200B <= cp <= 0x200F or 0x202A <= cp <= 0x202E
        or 0x2060 <= cp <= 0x206F or cp == 0x3164 or 0xFE00 <= cp <= 0xFE0F or cp == 0xFEFF
        or cp == 0xFFA0 or 0x1BCA0 <= cp <= 0x1BCA3 or 0x1D173 <= cp <= 0x1D17A
        or 0xE0000 <= cp <= 0xE0FFF
    )


_NORM_CACHE: dict[str, str] = {}


def _norm_char(ch: str) -> str:
    r = _NORM_CACHE.get(ch)
    if r is not None:
        return r
    cp = ord(ch)
    if is_default_ignorable(cp) or cp == 0x2800:
        r = ""
    else:
        r = unicodedata.normalize("NFKC", ch)
        r = "".join(CONFUSABLES.get(c, c) for c in r).lower()
        r = "".join(CONFUSABLES.get(c, c) for c in r)
        if r and all(unicodedata.category(c) == "Mn" for c in r):
            r = ""  # stray combining marks (zalgo) are dropped
        elif len(r) > 1 and unicodedata.category(r[-1]) == "Mn":
            r = unicodedata.normalize("NFKD", r)
            r = "".join(c for c in r if unicodedata.category(c) != "Mn")
    _NORM_CACHE[ch] = r
    return r


class View:
    """A normalised string plus a map from its positions to original offsets."""

    __slots__ = ("text", "omap", "orig_len")

    def __init__(self, text: str, omap: list[int] | None, orig_len: int):
        self.text = text
        self.omap = omap  # None = identity
        self.orig_len = orig_len

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Map a [start, end) span of the view back to the original text."""
        if self.omap is None:
            return start, end
        if start >= len(self.omap):
            return self.orig_len, self.orig_len
        s = self.omap[start]
        e = self.omap[end - 1] + 1 if end > start else s
        return s, e


# letters spaced out: "i g n o r e", "i.g.n.o.r.e", "i-g-n-o-r-e"
_SPACED = re.compile(r"(?<![^\W\d_])(?:[^\W\d_][ \t.\-_*·|/]{1,2}){3,}[^\W\d_](?![^\W\d_])")
# separators inserted between CJK characters: "忽 略", "忽*略"
# (CJK character first, so that re's first-character scan applies; group 1 is removed)
_CJK_GAP = re.compile(r"[\u3400-\u9fff]([ \t*_\-.·|/]{1,3})(?=[\u3400-\u9fff])")
_ASCII_PRINT = re.compile(r"[\t\n\r -~]*")


def _apply(view_text: str, omap: list[int] | None, pattern: re.Pattern, repl, matches=None,
           group: int = 0) -> tuple[str, list[int] | None]:
    """Rewrite ``view_text`` at ``pattern``'s matches (or the given ``matches``), replacing
    group ``group`` of each by ``repl(match)``, keeping the offset map."""
    ms = list(pattern.finditer(view_text)) if matches is None else matches
    if not ms:
        return view_text, omap
    base = omap if omap is not None else list(range(len(view_text)))
    parts: list[str] = []
    newmap: list[int] = []
    pos = 0
    for m in ms:
        s, e = m.span(group)
        parts.append(view_text[pos:s])
        newmap.extend(base[pos:s])
        rep = repl(m)
        if rep == view_text[s:e]:
            parts.append(rep)
            newmap.extend(base[s:e])
        else:
            # keep positions of the kept characters (letters), for spaced runs
            kept = [i for i in range(s, e) if view_text[i] in rep] if rep else []
            if len(kept) != len(rep):
                kept = [s] * len(rep)
            parts.append(rep)
            newmap.extend(base[i] for i in kept)
        pos = e
    parts.append(view_text[pos:])
    newmap.extend(base[pos:])
    return "".join(parts), newmap


# Characters that may change under normalisation. ASCII, CJK ideographs, Hangul syllables and
# ordinary kana never do (NFKC-stable, no case, no confusable), so they are skipped by one C-level
# scan and only the remaining characters are looked up (cached per character).
_MAYBE_SPECIAL = re.compile(r"[^\t\n\r -~\u3041-\u3096\u30a1-\u30fa\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3]")


def normalize(text: str, *, despace: bool = True) -> View:
    """NFKC + lower case + confusable folding + ignorables dropped (+ de-spacing)."""
    if text.isascii():
        out, omap = text.lower(), None
    else:
        specials = {ch for ch in set(_MAYBE_SPECIAL.findall(text))}
        table = {}
        for ch in specials:
            r = _norm_char(ch)
            if r != ch:
                table[ch] = r
        if not table:
            out, omap = text.lower(), None
        elif all(len(v) == 1 for v in table.values()):
            get = table.get
            out = _MAYBE_SPECIAL.sub(lambda m: get(m.group(), m.group()), text).lower()
            omap = None
        else:
            out, omap = _mapped_norm(text, table)
        if omap is None and len(out) != len(text):  # lower() expanded something (e.g. 'İ')
            out, omap = _slow_norm(text)
    if despace:
        if _SPACED_GATE.search(out):
            out, omap = _apply(out, omap, _SPACED, lambda mm: re.sub(r"[ \t.\-_*·|/]", "", mm.group()),
                               matches=_line_matches(_SPACED, _SPACED_GATE, out))
        if _HAS_HAN.search(out):
            out, omap = _apply(out, omap, _CJK_GAP, lambda mm: "", group=1)
    return View(out, omap, len(text))


# cheap test before the (slower, look-behind first) spaced-letters rewrite: three single
# letters each followed by a separator
_SPACED_GATE = re.compile(r"(?:[^\W\d_][ \t.\-_*·|/]{1,2}){3}[^\W\d_]")


_HAS_HAN = re.compile(r"[\u3400-\u9fff]")


def _line_matches(pattern: re.Pattern, gate: re.Pattern, text: str, whole_max: int = 20_000):
    """``pattern``'s matches, searched only on lines where ``gate`` matches when ``text`` is long
    (``pattern`` must not match across a line break); None = search the whole text."""
    if len(text) <= whole_max:
        return None
    out: list[re.Match] = []
    last = -1
    for g in gate.finditer(text):
        if g.start() < last:
            continue
        ls = text.rfind("\n", 0, g.start()) + 1
        le = text.find("\n", g.end())
        le = len(text) if le < 0 else le
        out.extend(pattern.finditer(text, ls, le))
        last = le
    return out


def _mapped_norm(text: str, table: dict[str, str]) -> tuple[str, list[int]]:
    """Apply ``table`` (some replacements not 1:1) and build the offset map segment by segment."""
    parts: list[str] = []
    omap: list[int] = []
    pos = 0
    for m in _MAYBE_SPECIAL.finditer(text):
        r = table.get(m.group())
        if r is None:
            continue
        i = m.start()
        if i > pos:
            parts.append(text[pos:i])
            omap.extend(range(pos, i))
        if r:
            parts.append(r)
            omap.extend([i] * len(r))
        pos = i + 1
    parts.append(text[pos:])
    omap.extend(range(pos, len(text)))
    out = "".join(parts)
    low = out.lower()
    if len(low) != len(out):
        return _slow_norm(text)
    return low, omap


def _slow_norm(text: str) -> tuple[str, list[int]]:
    parts: list[str] = []
    omap: list[int] = []
    for i, ch in enumerate(text):
        r = _norm_char(ch) if (ord(ch) > 0x7E or ord(ch) < 0x20) else ch.lower()
        if r:
            parts.append(r)
            omap.extend([i] * len(r))
    return "".join(parts), omap


# --------------------------------------------------------------------------
# decoders for smuggled / encoded text (used by injection and hidden-unicode)
# --------------------------------------------------------------------------

import base64 as _b64
import binascii as _binascii
import urllib.parse as _urlparse

_MORSE = {
    ".-": "a", "-...": "b", "-.-.": "c", "-..": "d", ".": "e", "..-.": "f", "--.": "g", "....": "h",
    "..": "i", ".---": "j", "-.-": "k", ".-..": "l", "--": "m", "-.": "n", "---": "o", ".--.": "p",
    "--.-": "q", ".-.": "r", "...": "s", "-": "t", "..-": "u", "...-": "v", ".--": "w", "-..-": "x",
    "-.--": "y", "--..": "z", "-----": "0", ".----": "1", "..---": "2", "...--": "3", "....-": "4",
    ".....": "5", "-....": "6", "--...": "7", "---..": "8", "----.": "9",
}

# cheap substring gates: skip a decoder when its marker cannot occur
ENCODED_GATES: dict[str, Any] = {
    "percent": "%", "unicode-escape": "\\u",
    # regex gates: a necessary sub-pattern that scans faster than the full pattern
    "morse": re.compile(r"[.\-]{1,6}[ /][.\-]{1,6}[ /][.\-]{1,6}"),
    "binary": re.compile(r"[01]{8}"),
    "base32": re.compile(r"[A-Z2-7]{24}"),
    # 16+ hex pairs: one 32-char run, or ≥ 4 runs, or a 12+-char run next to a separator
    "hex": re.compile(r"[0-9A-Fa-f]{32}|(?:[0-9A-Fa-f]{2,}+[ :]){3}[0-9A-Fa-f]{2}|[0-9A-Fa-f]{12}[ :][0-9A-Fa-f]{2}"
                      r"|[0-9A-Fa-f]{2}[ :][0-9A-Fa-f]{12}|\\x[0-9A-Fa-f]{2}"),
}


# shortest whitespace-free token each kind needs (hex with separators is handled by its gate)
_MIN_TOKEN = {"base64": 20, "base32": 24}


def longest_token(text: str) -> int:
    """Length of the longest whitespace-delimited token (``str.split`` runs in C)."""
    return max(map(len, text.split()), default=0)


def encoded_matches(kind: str, pattern: re.Pattern, text: str, whole_max: int = 20_000,
                    longest: int | None = None) -> list[re.Match]:
    """``pattern.finditer(text)`` restricted to lines where the kind's gate matches.

    Encoded payloads (base64, hex, binary, morse, ...) never span a line break, so on long
    texts only the lines holding a gate hit are searched; short texts are searched whole.
    """
    if longest is not None and longest < _MIN_TOKEN.get(kind, 0):
        return []
    if kind == "hex" and longest is not None and longest < 12:
        if not _HEX_SHORT_RUNS.search(text):  # no 32-run or 12-run possible: only ≥ 4 short runs
            return []
    elif not gate_open(kind, text):
        return []
    if len(text) <= whole_max:
        return list(pattern.finditer(text))
    gate = ENCODED_GATES.get(kind) or _B64_GATE
    gate_re = re.compile(re.escape(gate)) if isinstance(gate, str) else gate
    out: list[re.Match] = []
    last_end = -1
    for g in gate_re.finditer(text):
        if g.start() < last_end:
            continue
        ls = text.rfind("\n", 0, g.start()) + 1
        le = text.find("\n", g.end())
        le = len(text) if le < 0 else le
        out.extend(pattern.finditer(text, ls, le))
        last_end = le
    return out


_HEX_SHORT_RUNS = re.compile(r"(?:[0-9A-Fa-f]{2,}+[ :]){3}[0-9A-Fa-f]{2}")
_B64_GATE = re.compile(r"[A-Za-z0-9+/_-]{20}")


def gate_open(kind: str, text: str) -> bool:
    """False when the encoded-payload pattern ``kind`` cannot match ``text``."""
    gate = ENCODED_GATES.get(kind)
    if gate is None:
        return True
    if isinstance(gate, str):
        return gate in text
    return gate.search(text) is not None

ENCODED_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("base64", re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{20,}={0,2}(?![A-Za-z0-9+/=_-])")),
    ("base32", re.compile(r"(?<![A-Z2-7=])[A-Z2-7]{24,}={0,6}(?![A-Za-z0-9=])")),
    ("hex", re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}[ :]?){16,}(?![0-9A-Fa-f])|(?:\\x[0-9A-Fa-f]{2}){8,}")),
    ("binary", re.compile(r"(?<![01])(?:[01]{8}[ \t]?){6,}")),
    ("percent", re.compile(r"(?:[^\s%]{0,40}%[0-9A-Fa-f]{2}){4,}[^\s%]{0,40}")),
    ("unicode-escape", re.compile(r"(?:\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8}){4,}")),
    ("morse", re.compile(r"(?<![\w.-])(?:[.\-]{1,6}(?:[ ]/[ ]|[ ]{1,3}|/)){8,}[.\-]{1,6}")),
]


def _texty(s: str) -> bool:
    if len(s) < 8:
        return False
    printable = sum(1 for c in s if c.isprintable() or c in "\n\t")
    letters = sum(1 for c in s if c.isalpha())
    return printable / len(s) > 0.95 and letters / len(s) > 0.5 and (" " in s or len(s) < 40)


def decode_encoded(kind: str, raw: str) -> str | None:
    """Decode ``raw`` as ``kind``; return text only if it looks like prose."""
    try:
        if kind == "base64":
            s = raw.replace("-", "+").replace("_", "/")
            s += "=" * (-len(s.rstrip("=")) % 4)
            out = _b64.b64decode(s.rstrip("=") + "=" * (-len(s.rstrip("=")) % 4), validate=False).decode("utf-8")
        elif kind == "base32":
            s = raw.rstrip("=")
            out = _b64.b32decode(s + "=" * (-len(s) % 8)).decode("utf-8")
        elif kind == "hex":
            s = re.sub(r"\\x|[ :]", "", raw)
            out = _binascii.unhexlify(s[: len(s) // 2 * 2]).decode("utf-8")
        elif kind == "binary":
            bits = re.sub(r"\s", "", raw)
            out = bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits) // 8 * 8, 8)).decode("utf-8")
        elif kind == "percent":
            out = _urlparse.unquote(raw)
            if out == raw:
                return None
        elif kind == "unicode-escape":
            out = re.sub(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})",
                         lambda m: chr(int(m.group(1) or m.group(2), 16)), raw)
        elif kind == "morse":
            words = re.split(r" / |/|   ", raw)
            out = " ".join("".join(_MORSE.get(c, "") for c in w.split()) for w in words)
        else:
            return None
    except (ValueError, UnicodeDecodeError, _binascii.Error):
        return None
    return out if _texty(out) else None


def decode_invisible_runs(text: str) -> list[tuple[int, int, str, str]]:
    """Decode runs of tag characters, variation selectors and Sneaky Bits.

    Returns (start, end, channel, decoded) for each run of ≥ 4 carriers.
    Tag runs that form a subdivision flag (U+1F3F4 + tags + U+E007F) are skipped.
    """
    out = []
    if text.isascii():
        return out
    for m in _TAG_RUN.finditer(text):
        s = m.start()
        if s > 0 and text[s - 1] == "\U0001F3F4" and m.group().endswith("\U000E007F") and len(m.group()) <= 8:
            continue
        dec = "".join(chr(ord(c) - 0xE0000) for c in m.group() if 0xE0020 <= ord(c) <= 0xE007E)
        if len(m.group()) >= 4:
            out.append((m.start(), m.end(), "tags", dec))
    for m in _VS_RUN.finditer(text):
        cps = [ord(c) for c in m.group()]
        # garak: VS17-256 = 0xE0100 + ord(char); "emoji smuggling": byte<16 -> FE00+b, else E0100+b-16
        direct = "".join(chr(cp - 0xE0100) if cp >= 0xE0100 else chr(cp - 0xFE00) for cp in cps)
        packed = bytes((cp - 0xE0100 + 16) & 0xFF if cp >= 0xE0100 else cp - 0xFE00 for cp in cps)
        dec = direct if _texty(direct) else packed.decode("utf-8", "replace")
        out.append((m.start(), m.end(), "variation-selectors", dec))
    for m in _SNEAKY_RUN.finditer(text):
        bits = "".join("0" if c == "\u2062" else "1" if c == "\u2064" else " " for c in m.group())
        words = []
        for chunk in bits.split(" "):
            b = bytes(int(chunk[i:i + 8], 2) for i in range(0, len(chunk) // 8 * 8, 8)) if chunk else b""
            words.append(b.decode("utf-8", "replace"))
        out.append((m.start(), m.end(), "sneaky-bits", " ".join(words)))
    return out


_TAG_RUN = re.compile("[\U000E0000-\U000E007F]+")
_VS_RUN = re.compile("[\uFE00-\uFE0F\U000E0100-\U000E01EF]{4,}")
_SNEAKY_RUN = re.compile("[\u2062\u2064\u200B]{8,}")


# --------------------------------------------------------------------------
# literal anchors: skip a regex on text that cannot match it
# --------------------------------------------------------------------------

try:  # Python 3.11+
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
    from re import _constants as _sre_c  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_constants as _sre_c  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]


def _prefixes(items, acc: str, out: set, limit: int = 4, min_len: int = 2) -> bool:
    """Collect the literal prefixes (≤ limit chars) every match must start with."""
    for i, (op, av) in enumerate(items):
        if len(acc) >= limit:
            out.add(acc)
            return True
        if op is _sre_c.AT or op is _sre_c.ASSERT or op is _sre_c.ASSERT_NOT:
            continue  # zero-width: the literal prefix still follows
        if op is _sre_c.LITERAL:
            acc += chr(av).lower()
            continue
        if op is _sre_c.IN and 1 <= len(av) <= 8 and all(o is _sre_c.LITERAL for o, _ in av):
            rest = list(items[i + 1:])  # (?:a|b) compiled to a character set
            return all(_prefixes([(_sre_c.LITERAL, c)] + rest, acc, out, limit, min_len) for _, c in av)
        if op is _sre_c.SUBPATTERN:
            rest = list(items[i + 1:])
            return _prefixes(list(av[-1]) + rest, acc, out, limit, min_len)
        if op is _sre_c.BRANCH:
            rest = list(items[i + 1:])
            return all(_prefixes(list(alt) + rest, acc, out, limit, min_len) for alt in av[1])
        break
    if len(acc) >= min_len or (acc and ord(acc[0]) >= 0x2E80):
        out.add(acc)
        return True
    return False


def _parsed(pattern: re.Pattern) -> list | None:
    try:
        parsed = _sre_parse.parse(pattern.pattern, pattern.flags)
    except Exception:  # pragma: no cover
        return None
    return list(parsed.data if hasattr(parsed, "data") else parsed)


def literal_anchors(pattern: re.Pattern, min_len: int = 2) -> tuple[str, ...] | None:
    """Lower-case literal prefixes one of which every match starts with; None if unknown."""
    data = _parsed(pattern)
    out: set[str] = set()
    if data is None or not _prefixes(data, "", out, min_len=min_len):
        return None
    return tuple(sorted(out))


def _starts_at_boundary(items) -> bool:
    """True when every match of the parsed pattern must start at a ``\\b`` word boundary."""
    if not items:
        return False
    op, av = items[0]
    if op is _sre_c.AT:
        return av is _sre_c.AT_BOUNDARY
    if op is _sre_c.SUBPATTERN:
        return _starts_at_boundary(list(av[-1]))
    if op is _sre_c.BRANCH:
        return all(_starts_at_boundary(list(alt)) for alt in av[1])
    return False


def may_match(anchors: tuple[str, ...] | None, text: str) -> bool:
    return anchors is None or any(a in text for a in anchors)


_WORD_START = re.compile(r"[a-z]+")


class PatternSet:
    """Run many regexes on a lower-cased view, each only where it can start.

    Every pattern's literal prefixes are extracted once. Patterns that must
    start at a word boundary with an ASCII-letter prefix are tried (with
    ``pattern.match``) only at word starts whose first characters are one of
    their prefixes; other patterns with prefixes are tried only where one of
    their prefixes occurs (found by one character-class scan); patterns
    without a usable prefix run with ``finditer``. The result equals
    ``finditer`` for each pattern (leftmost, non-overlapping matches), but
    the cost no longer grows with the number of patterns times the text size.
    """

    def __init__(self, patterns: list[re.Pattern]):
        self.patterns = list(patterns)
        self.word: dict[str, list[int]] = {}
        self.char: dict[str, list[int]] = {}
        self.always: list[int] = []
        for i, pat in enumerate(self.patterns):
            data = _parsed(pat)
            word_mode = data is not None and _starts_at_boundary(data)
            anchors = literal_anchors(pat, min_len=1)
            if anchors is not None and not word_mode and any(len(a) == 1 and a.isascii() and a.isalnum() for a in anchors):
                anchors = None  # a one-letter prefix anywhere would gate nothing
            if anchors is None:
                self.always.append(i)
            elif word_mode:
                # letter prefixes are looked up at word starts, others by the character scan
                for a in anchors:
                    (self.word if "a" <= a[0] <= "z" else self.char).setdefault(a, []).append(i)
            else:
                for a in anchors:
                    self.char.setdefault(a, []).append(i)
        self._mixed = {i for ids in self.word.values() for i in ids} & {i for ids in self.char.values() for i in ids}
        self._word_lens = sorted({len(a) for a in self.word}, reverse=True)
        self._char_lens = sorted({len(a) for a in self.char}, reverse=True)
        self._char_scan = re.compile("[" + "".join(sorted({re.escape(a[0]) for a in self.char})) + "]") if self.char else None
        self._wcache: dict[str, tuple[int, ...]] = {}
        self._ccache: dict[str, tuple[int, ...]] = {}

    @staticmethod
    def _ids(key: str, table: dict[str, list[int]], lens: list[int], cache: dict) -> tuple[int, ...]:
        found: set[int] = set()
        for n in lens:
            found.update(table.get(key[:n], ()))
        ids = tuple(sorted(found))
        if len(cache) > 200_000:
            cache.clear()
        cache[key] = ids
        return ids

    def finditer_all(self, text: str, only: set[int] | None = None) -> list[list[re.Match]]:
        """Matches of every pattern (index-aligned with ``patterns``)."""
        n = len(self.patterns)
        cands: list[list[int]] = [[] for _ in range(n)]
        for table, lens, cache, scan in ((self.word, self._word_lens, self._wcache, _WORD_START),
                                         (self.char, self._char_lens, self._ccache, self._char_scan)):
            if not table:
                continue
            width = lens[0]
            get = cache.get
            for m in scan.finditer(text):
                p = m.start()
                key = text[p:p + width]
                ids = get(key)
                if ids is None:
                    ids = self._ids(key, table, lens, cache)
                for i in ids:
                    cands[i].append(p)
        out: list[list[re.Match]] = [[] for _ in range(n)]
        for i in range(n):
            if only is not None and i not in only:
                continue
            pat = self.patterns[i]
            if i in self.always:
                out[i] = list(pat.finditer(text))
                continue
            ps = cands[i]
            if not ps:
                continue
            if i in self._mixed and len(ps) > 1:
                ps = sorted(set(ps))  # prefixes from both scans: merge (each scan alone is ordered)
            last = -1
            res = out[i]
            match = pat.match
            for p in ps:
                if p < last:
                    continue
                m = match(text, p)
                if m is not None:
                    res.append(m)
                    last = m.end() if m.end() > p else p + 1
        return out


def chunks(text: str, size: int = 4000) -> list[tuple[int, int]]:
    """Split ``text`` into ~size-character spans ending at line breaks."""
    out = []
    pos, n = 0, len(text)
    while pos < n:
        end = min(n, pos + size)
        if end < n:
            nl = text.find("\n", end)
            end = n if nl < 0 or nl - end > size else nl + 1
        out.append((pos, end))
        pos = end
    return out or [(0, 0)]
