"""The matching view of a text: NFKC, lower case, confusables folded, default-ignorable characters dropped, spaced-out letters joined, with a map back to original offsets."""

from __future__ import annotations

import re
import unicodedata
from array import array as OffsetMap
from itertools import repeat



__all__ = ['gated_line_matches', 'apply_rewrite', 'CONFUSABLES', 'View', 'is_default_ignorable', 'join_split_words', 'normalize']

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


# An offset map is a C array of 64-bit integers, not a list of ints: a list holds an int object
# (32 bytes, from pymalloc's small-object arenas) per position of the text above 256, tens of MB
# for a large document, freed again a moment later; the arenas that held them stay pinned by
# whatever long-lived objects were made meanwhile, so a long-running service's heap grew with
# every large document it scanned (issue 12, the soak). An array is one block of 8 bytes per position.
_OFFSET = "q"


def identity_map(n: int) -> OffsetMap:
    """The offset map of a text that was not rewritten: position i is offset i."""
    return OffsetMap(_OFFSET, range(n))


class View:
    """A normalised string plus a map from its positions to original offsets."""

    __slots__ = ("text", "omap", "orig_len")

    def __init__(self, text: str, omap: OffsetMap | None, orig_len: int):
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
# separators inserted between CJK characters: "忽 略", "忽*略", "忽丨略" (丨 is a CJK stroke used as a
# divider), "「忽」「略」" (each character quoted: a closing mark right before an opening one)
# (CJK character first, so that re's first-character scan applies; group 1 is removed)
_CJK_GAP = re.compile(r"[\u3400-\u9fff]([ \t*_\-.·|/~^`'+=#@•・‧∙⋅丨]{1,3}|[」』”’】〕）)\]][「『“‘【〔（(\[])"
                      r"(?=[\u3400-\u9fff])")
_ASCII_PRINT = re.compile(r"[\t\n\r -~]*")


def apply_rewrite(view_text: str, omap: OffsetMap | None, pattern: re.Pattern, repl, matches=None,
           group: int = 0) -> tuple[str, OffsetMap | None]:
    """Rewrite ``view_text`` at ``pattern``'s matches (or the given ``matches``), replacing
    group ``group`` of each by ``repl(match)``, keeping the offset map."""
    ms = list(pattern.finditer(view_text)) if matches is None else matches
    if not ms:
        return view_text, omap
    base = omap if omap is not None else identity_map(len(view_text))
    parts: list[str] = []
    newmap = OffsetMap(_OFFSET)
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


def _specials(text: str, piece: int = 65536) -> set[str]:
    """The distinct characters of ``text`` that ``_MAYBE_SPECIAL`` matches (one character each, so
    the text is searched a piece at a time: a list of every match of a large text is not built)."""
    found: set[str] = set()
    for i in range(0, len(text), piece):
        found.update(_MAYBE_SPECIAL.findall(text, i, i + piece))
    return found


def normalize(text: str, *, despace: bool = True) -> View:
    """NFKC + lower case + confusable folding + ignorables dropped (+ de-spacing)."""
    if text.isascii():
        out, omap = text.lower(), None
    else:
        specials = _specials(text)
        table = {}
        for ch in specials:
            r = _norm_char(ch)
            if r != ch:
                table[ch] = r
        if not table:
            out, omap = text.lower(), None
        elif all(len(v) == 1 for v in table.values()):
            # C-level passes (``re.sub`` with a function made two small objects per special
            # character: tens of thousands for a large Chinese text's punctuation)
            out = _translate_1to1(text, table).lower()
            omap = None
        else:
            out, omap = _mapped_norm(text, table)
        if omap is None and len(out) != len(text):  # lower() expanded something (e.g. 'İ')
            out, omap = _slow_norm(text)
    if despace:
        if _SPACED_GATE.search(out):
            out, omap = apply_rewrite(out, omap, _SPACED, lambda mm: re.sub(r"[ \t.\-_*·|/]", "", mm.group()),
                               matches=_line_matches(_SPACED, _SPACED_GATE, out))
        if _HAS_HAN.search(out):
            out, omap = apply_rewrite(out, omap, _CJK_GAP, lambda mm: "", group=1)
            if "丨" in out:  # the divider left at the ends of a run ("丨忽略规则丨") reads as a bar
                out = out.replace("丨", "|")
    return View(out, omap, len(text))


# cheap test before the (slower, look-behind first) spaced-letters rewrite: three single
# letters each followed by a separator, i.e. (?:[^\W\d_][ \t.\-_*·|/]{1,2}){3}[^\W\d_], written
# to start at the first separator (a character class: the search skips letters in C). It
# holds on the same lines as that pattern, which is all its callers use it for.
_SPACED_GATE = re.compile(r"[ \t.\-_*·|/](?<=[^\W\d_][ \t.\-_*·|/])[ \t.\-_*·|/]?[^\W\d_]"
                          r"[ \t.\-_*·|/]{1,2}[^\W\d_][ \t.\-_*·|/]{1,2}[^\W\d_]")


_HAS_HAN = re.compile(r"[\u3400-\u9fff]")


def _line_matches(pattern: re.Pattern, gate: re.Pattern, text: str, whole_max: int = 20_000):
    """``pattern``'s matches, searched only on lines where ``gate`` matches when ``text`` is long
    (``pattern`` must not match across a line break); None = search the whole text."""
    if len(text) <= whole_max:
        return None
    return gated_line_matches(pattern, gate, text)


def gated_line_matches(pattern: re.Pattern, gate: re.Pattern, text: str) -> list[re.Match]:
    """``pattern``'s matches on the lines of ``text`` where ``gate`` matches (each line once)."""
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


def _mapped_norm(text: str, table: dict[str, str]) -> tuple[str, OffsetMap]:
    """Apply ``table`` (some replacements not 1:1) and build the offset map segment by segment."""
    parts: list[str] = []
    omap = OffsetMap(_OFFSET)
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
            omap.extend(repeat(i, len(r)))
        pos = i + 1
    parts.append(text[pos:])
    omap.extend(range(pos, len(text)))
    out = "".join(parts)
    low = out.lower()
    if len(low) != len(out):
        return _slow_norm(text)
    return low, omap


_REPLACE_MAX = 64


def _translate_1to1(text: str, one: dict[str, str], limit: int | None = None) -> str:
    """``text.translate`` by ``one`` (character -> one character; the characters of ``text`` it
    changes). With at most ``limit`` keys (default ``_REPLACE_MAX``), none of them a value, one
    ``str.replace`` per key: the same string (each character is replaced at most once), and much
    quicker on a large non-ASCII text, where ``translate`` looks up every character in a dict.
    Also the confusable skeleton's (:func:`.fence.skeleton`)."""
    if not one:
        return text
    if len(one) > (_REPLACE_MAX if limit is None else limit) or not one.keys().isdisjoint(one.values()):
        return text.translate({ord(k): v for k, v in one.items()})
    for k, v in one.items():
        text = text.replace(k, v)
    return text


def _slow_norm(text: str) -> tuple[str, OffsetMap]:
    parts: list[str] = []
    omap = OffsetMap(_OFFSET)
    for i, ch in enumerate(text):
        r = _norm_char(ch) if (ord(ch) > 0x7E or ord(ch) < 0x20) else ch.lower()
        if r:
            parts.append(r)
            omap.extend(repeat(i, len(r)))
    return "".join(parts), omap




# two word fragments split by one inserted space or separator: "ig nore", "instruc-tions"
_AZ_RUN = re.compile(r"[a-z]+")
_SPLIT_PAIR = re.compile(r"\b([a-z]{1,9})[ \t.\-_*·|/]{1,2}([a-z]{1,10})\b")


def join_split_words(view: View, words: frozenset) -> View:
    """Join two adjacent fragments whose concatenation is one of ``words`` ("ig nore" → "ignore"),
    keeping the offset map. Fragments that are words of their own stay apart unless joined they
    form a listed word, so ordinary prose is left alone."""
    text = view.text
    # every pair the search below can join is two consecutive runs of a-z (a pair's fragments
    # are whole runs with only separators between them): when no two consecutive runs join
    # into a listed word, nothing is joined (one C-level pass instead of a search per pair)
    runs = _AZ_RUN.findall(text)
    if words.isdisjoint(map("".join, zip(runs, runs[1:]))):
        return view
    ms = []
    pos = 0
    while True:
        m = _SPLIT_PAIR.search(text, pos)
        if m is None:
            break
        if m.group(1) + m.group(2) in words:
            ms.append(m)
            pos = m.end()
        else:
            pos = m.start(2)  # the second fragment may start the next pair
    if not ms:
        return view
    t2, m2 = apply_rewrite(text, view.omap, _SPLIT_PAIR, lambda m: m.group(1) + m.group(2), matches=ms)
    return View(t2, m2, view.orig_len)
