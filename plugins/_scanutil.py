"""Shared helpers for the ``kb_scan`` plugins (not a plugin: the leading
underscore keeps it out of plugin discovery).

- :func:`scan_options` reads ``[scan]`` settings defensively.
- :class:`LineIndex` turns 0-based offsets into 1-based line/column.
- :func:`mask` builds excerpts that never show more than 6 characters of a
  secret (first 4 + last 2 at most; fewer for short values).
- :func:`normalize` builds a matching view of a text (NFKC, lower case,
  confusable folding, default-ignorable characters dropped, letter-spacing
  collapsed) with a map back to original offsets.
- :func:`make_finding` builds a :class:`pipeline.model.Finding` honouring
  ``allow_rules`` / ``allow_fingerprints``.
"""

from __future__ import annotations

import bisect
import math
import re
import unicodedata
from collections import Counter
from typing import Any, Iterable

from pipeline.model import Finding

# --------------------------------------------------------------------------
# settings
# --------------------------------------------------------------------------

DEFAULTS: dict[str, Any] = {
    "max_line_chars": 10_000,
    "max_paragraph_chars": 50_000,
    "allow_rules": [],
    "allow_fingerprints": [],
    "redact": True,
    "excerpt_context": 20,
    "entropy_min_length": 20,
}


def scan_options(settings: Any) -> dict[str, Any]:
    """``[scan]`` options merged over defaults (``[stages.scan]`` also read)."""
    out = dict(DEFAULTS)
    if isinstance(settings, dict):
        stages = settings.get("stages")
        if isinstance(stages, dict) and isinstance(stages.get("scan"), dict):
            out.update(stages["scan"])
        if isinstance(settings.get("scan"), dict):
            out.update(settings["scan"])
    return out


def rule_allowed(opts: dict[str, Any], rule: str) -> bool:
    """True when config disables ``rule`` (exact id or a ``family.*`` prefix)."""
    for allowed in opts.get("allow_rules") or ():
        if allowed == rule or (allowed.endswith("*") and rule.startswith(allowed[:-1])):
            return True
    return False


# --------------------------------------------------------------------------
# positions and excerpts
# --------------------------------------------------------------------------


class LineIndex:
    """Offset → (line, column), both 1-based, computed by bisection."""

    def __init__(self, text: str):
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

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


_EXCERPT_CLEAN = str.maketrans({"\n": "⏎", "\r": " ", "\t": " "})


def visible(s: str) -> str:
    """Make invisible/control characters printable as ``<U+XXXX>``."""
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
            text, start, end, secret=secret, context=int(opts.get("excerpt_context", 20))),
        length=end - start, match=match, redact=redact, message=message,
    )
    if f.fingerprint in set(opts.get("allow_fingerprints") or ()):
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
_CJK_GAP = re.compile(r"(?<=[\u3400-\u9fff])[ \t*_\-.·|/]{1,3}(?=[\u3400-\u9fff])")
_ASCII_PRINT = re.compile(r"[\t\n\r -~]*")


def _apply(view_text: str, omap: list[int] | None, pattern: re.Pattern, repl) -> tuple[str, list[int] | None]:
    """Rewrite ``view_text`` with ``pattern`` (repl(match) -> str), keeping the map."""
    if not pattern.search(view_text):
        return view_text, omap
    base = omap if omap is not None else list(range(len(view_text)))
    parts: list[str] = []
    newmap: list[int] = []
    pos = 0
    for m in pattern.finditer(view_text):
        parts.append(view_text[pos:m.start()])
        newmap.extend(base[pos:m.start()])
        rep = repl(m)
        if rep == m.group():
            parts.append(rep)
            newmap.extend(base[m.start():m.end()])
        else:
            # keep positions of the kept characters (letters), for spaced runs
            kept = [i for i in range(m.start(), m.end()) if view_text[i] in rep] if rep else []
            if len(kept) != len(rep):
                kept = [m.start()] * len(rep)
            parts.append(rep)
            newmap.extend(base[i] for i in kept)
        pos = m.end()
    parts.append(view_text[pos:])
    newmap.extend(base[pos:])
    return "".join(parts), newmap


def normalize(text: str, *, despace: bool = True) -> View:
    """NFKC + lower case + confusable folding + ignorables dropped (+ de-spacing)."""
    m = _ASCII_PRINT.match(text)
    if m and m.end() == len(text):
        out, omap = text.lower(), None
    else:
        special = {ch: _norm_char(ch) for ch in set(text) if ord(ch) > 0x7E or ord(ch) < 0x20}
        special = {k: v for k, v in special.items() if v != k}
        if all(len(v) == 1 for v in special.values()):
            out = text.translate({ord(k): v for k, v in special.items()}).lower()
            omap = None
            if len(out) != len(text):  # lower() expanded something (e.g. 'İ')
                out, omap = _slow_norm(text)
        else:
            out, omap = _slow_norm(text)
    if despace:
        out, omap = _apply(out, omap, _SPACED, lambda mm: re.sub(r"[ \t.\-_*·|/]", "", mm.group()))
        out, omap = _apply(out, omap, _CJK_GAP, lambda mm: "")
    return View(out, omap, len(text))


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
ENCODED_GATES = {"percent": "%", "unicode-escape": "\\u", "morse": "-", "binary": "0"}

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


def _prefixes(items, acc: str, out: set, limit: int = 4) -> bool:
    """Collect the literal prefixes (≤ limit chars) every match must start with."""
    for i, (op, av) in enumerate(items):
        if len(acc) >= limit:
            out.add(acc)
            return True
        if op is _sre_c.AT:
            continue
        if op is _sre_c.LITERAL:
            acc += chr(av).lower()
            continue
        if op is _sre_c.SUBPATTERN:
            rest = list(items[i + 1:])
            return _prefixes(list(av[-1]) + rest, acc, out, limit)
        if op is _sre_c.BRANCH:
            rest = list(items[i + 1:])
            return all(_prefixes(list(alt) + rest, acc, out, limit) for alt in av[1])
        break
    if len(acc) >= 2 or (acc and ord(acc[0]) >= 0x2E80):
        out.add(acc)
        return True
    return False


def literal_anchors(pattern: re.Pattern) -> tuple[str, ...] | None:
    """Lower-case literal prefixes one of which every match starts with; None if unknown."""
    try:
        parsed = _sre_parse.parse(pattern.pattern, pattern.flags)
    except Exception:  # pragma: no cover
        return None
    out: set[str] = set()
    data = list(parsed.data if hasattr(parsed, "data") else parsed)
    if not _prefixes(data, "", out):
        return None
    return tuple(sorted(out))


def may_match(anchors: tuple[str, ...] | None, text: str) -> bool:
    return anchors is None or any(a in text for a in anchors)


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
