"""Decoders for smuggled or encoded text (base64/32, hex, percent, unicode escapes, Morse, binary, invisible tag/variation-selector runs), used by the injection and hidden-Unicode scanners."""

from __future__ import annotations

import re
from typing import Any



from .normalise import gated_line_matches

__all__ = ['ENCODED_GATES', 'ENCODED_PATTERNS', 'decode_encoded', 'decode_invisible_runs', 'encoded_matches', 'gate_open', 'longest_token']

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
    # regex gates: a necessary sub-pattern that scans faster than the full pattern; each starts
    # with a character class (X{n} written XX{n-1}), so a search skips other characters in C
    "morse": re.compile(r"[.\-][.\-]{0,5}[ /][.\-]{1,6}[ /][.\-]{1,6}"),
    "binary": re.compile(r"[01][01]{7}"),
    "base32": re.compile(r"[A-Z2-7][A-Z2-7]{23}"),
    # 16+ hex pairs: one 32-char run, or ≥ 4 runs, or a 12+-char run next to a separator
    "hex": re.compile(r"[0-9A-Fa-f]{32}|(?:[0-9A-Fa-f]{2,}+[ :]){3}[0-9A-Fa-f]{2}|[0-9A-Fa-f]{12}[ :][0-9A-Fa-f]{2}"
                      r"|[0-9A-Fa-f]{2}[ :][0-9A-Fa-f]{12}|\\x[0-9A-Fa-f]{2}"),
}


# shortest whitespace-free token each kind needs (hex with separators is handled by its gate)
_MIN_TOKEN = {"base64": 20, "base32": 24}


_SPLIT_PIECE = 65536
_WHITESPACE = re.compile(r"\s")  # the same characters ``str.split()`` splits at


def longest_token(text: str) -> int:
    """Length of the longest whitespace-delimited token (``str.split`` runs in C).

    A long text is split ~64 k characters at a time, each piece cut at a whitespace character, so
    no token is cut and at most one piece's token strings are alive at once (a list of every
    word of a 2 MB text is ~300,000 small objects in a long-lived process's heap)."""
    n = len(text)
    if n <= _SPLIT_PIECE:
        return max(map(len, text.split()), default=0)
    best, i = 0, 0
    while i < n:
        j = i + _SPLIT_PIECE
        if j < n:
            m = _WHITESPACE.search(text, j)
            j = m.start() if m else n
        else:
            j = n
        best = max(best, max(map(len, text[i:j].split()), default=0))
        i = j
    return best


def encoded_matches(kind: str, pattern: re.Pattern, text: str, whole_max: int = 20_000,
                    longest: int | None = None) -> list[re.Match]:
    """``pattern.finditer(text)`` restricted to lines where the kind's gate matches.

    Encoded payloads (base64, hex, binary, morse, ...) never span a line break, so on long
    texts only the lines holding a gate hit are searched; short texts are searched whole.
    """
    if longest is not None and longest < _MIN_TOKEN.get(kind, 0):
        return []
    if kind == "hex" and "\\x" not in text and not _HEX_RUN.search(text):
        return []  # neither a \x escape nor 32 characters of hex digits and separators in a row
    if kind == "hex" and longest is not None and longest < 12:
        if not _HEX_SHORT_RUNS.search(text):  # no 32-run or 12-run possible: only ≥ 4 short runs
            return []
    elif not gate_open(kind, text):
        return []
    if len(text) <= whole_max:
        return list(pattern.finditer(text))
    gate = ENCODED_GATES.get(kind) or _B64_GATE
    gate_re = re.compile(re.escape(gate)) if isinstance(gate, str) else gate
    return gated_line_matches(pattern, gate_re, text)


# every match of the hex pattern's first branch is ≥ 32 characters of [0-9A-Fa-f :] in a row (16+
# digit pairs, at most one separator between pairs); the second branch holds "\x". Much cheaper
# to search than the gate below, which it precedes.
_HEX_RUN = re.compile(r"[0-9A-Fa-f :][0-9A-Fa-f :]{31}")
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


# each written as "one carrier, then the rest" (c+ as cc*, c{4,} as cc{3,}: the same matches): a pattern that
# begins with a character class is searched in C, one that begins with a repeat is tried at every position
_TAG = "[\U000E0000-\U000E007F]"
_VS = "[\uFE00-\uFE0F\U000E0100-\U000E01EF]"
_SNEAKY = "[\u2062\u2064\u200B]"
_TAG_RUN = re.compile(_TAG + _TAG + "*")
_VS_RUN = re.compile(_VS + _VS + "{3,}")
_SNEAKY_RUN = re.compile(_SNEAKY + _SNEAKY + "{7,}")


