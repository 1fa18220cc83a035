"""Hidden-Unicode scanner, kind ``hidden-unicode``.

Owns the rules:

- ``hidden-unicode.tag-chars``        runs of U+E0000–E007F (ASCII smuggling), decoded
  into the excerpt; subdivision-flag emoji (🏴 + tags + U+E007F) are legitimate. High.
- ``hidden-unicode.bidi-control``     U+202A–202E and U+2066–2069 (Trojan Source): high;
  U+200E/200F/061C: medium, not reported next to Arabic/Hebrew/RTL text.
- ``hidden-unicode.zero-width``       U+200B/200C/200D/2060/FEFF (not at offset 0)/180E,
  invisible operators U+2061–2064 (Sneaky Bits), CGJ U+034F, Mongolian FVS…
  ZWJ/ZWNJ are legitimate inside emoji sequences and in Indic, Arabic,
  Persian and other joining scripts. Runs of ≥ 8 carriers are decoded.
- ``hidden-unicode.variation-selector`` runs of ≥ 2 variation selectors, or a single
  VS17–256 (U+E0100–E01EF) that does not follow a Han ideograph (ideographic
  variation sequences are legitimate); single VS1–16 after a character is legitimate.
- ``hidden-unicode.invisible-filler`` Hangul fillers U+115F/1160/3164/FFA0, Braille blank U+2800,
  Khmer U+17B4/17B5 (characters that render as nothing).
- ``hidden-unicode.control-char``     C0/C1 control characters other than TAB, LF, CR, FF;
  ANSI escape sequences are reported as one finding.
- ``hidden-unicode.private-use``      private-use characters (low).
- ``hidden-unicode.confusable-word``  one word mixing Latin with Cyrillic letters, or with Greek
  letters drawn like Latin ones (UTS #39 mixed-script), e.g. ``pаypal``; or a short word made only
  of such look-alikes between Latin words (``How can Ι make``). Medium. ``μm``/``βcell`` are not.
- soft hyphen U+00AD: a lone one is reported as ``zero-width`` (low); a text using three or more
  between letters is treated as hyphenation hints. A single invisible maths operator
  (U+2061–2064) between two alphanumerics (``2\u2062x``) is legitimate; runs are Sneaky Bits.
"""

from __future__ import annotations

import bisect
import re
import unicodedata

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.model import Finding
from kbwatch.plugins.scanning import LineIndex, decode_invisible_runs, make_finding, scan_options, visible

KIND = "hidden-unicode"

SUSPECT = re.compile(
    "[\x00-\x08\xad\x0b\x0e-\x1f\x7f-\x9f\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u206a-\u206f\u2066-\u2069\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0\ue000-\uf8ff"
    "\U000e0000-\U000e0fff\U000f0000-\U0010ffff]+")
ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])|[\x80-\x9f]")
_RTL = re.compile(r"[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")
_JOINING = re.compile(r"[\u0600-\u08ff\u0900-\u0dff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u1800-\u18af\ua980-\ua9df"
                      r"\ufb50-\ufdff\ufe70-\ufeff]")
_MIXED_CAND = re.compile(r"[\u0370-\u03ff\u0400-\u052f\u1d00-\u1dbf]")
# Greek and Cyrillic letters drawn identically to a Latin letter (UTS #39 confusables, strict subset)
_LATIN_TWINS = set("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧοаеорсухіјѕԁԛԝһӏАВЕКМНОРСТХІЈЅ")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
_WORD = re.compile(r"[^\W\d_]+")


def _is_emoji(ch: str) -> bool:
    if len(ch) != 1:
        return False
    cp = ord(ch)
    return (0x1F000 <= cp <= 0x1FAFF or 0x2600 <= cp <= 0x27BF or 0x2300 <= cp <= 0x23FF or 0x2B00 <= cp <= 0x2BFF
            or cp in (0xFE0F, 0x20E3, 0x00A9, 0x00AE, 0x203C, 0x2049, 0x2122, 0x2139, 0x3030, 0x303D, 0x3297, 0x3299)
            or 0x2190 <= cp <= 0x21FF or 0x1F3FB <= cp <= 0x1F3FF or 0xE0020 <= cp <= 0xE007F)


def _is_han(ch: str) -> bool:
    if len(ch) != 1:  # "" before the first character of the text
        return False
    cp = ord(ch)
    return 0x3400 <= cp <= 0x9FFF or 0xF900 <= cp <= 0xFAFF or 0x20000 <= cp <= 0x3FFFF


def _script(ch: str) -> str:
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return ""
    return name.split(" ", 1)[0]


def scan_text(text: str, settings=None) -> list[Finding]:
    opts = scan_options(settings or {})
    index = LineIndex(text)
    out: list[Finding] = []

    repeats: dict[tuple[str, str], Finding] = {}  # a repeat of the same characters: counted, not rebuilt
    extra_lines: dict[int, list[int]] = {}

    def add(rule, sev, s, e, msg, ex=None):
        key = (rule, text[s:e] if rule != "hidden-unicode.confusable-word" else text[s:e].lower())
        if rule in GROUPED and key in repeats:
            first = repeats[key]
            extra_lines.setdefault(id(first), []).append(index.position(s)[0])
            return
        f = make_finding(text, index, opts, kind=KIND, rule=rule, severity=sev, start=s, end=e, message=msg,
                         excerpt_text=ex)
        if f is not None:
            out.append(f)
            if rule in GROUPED:
                repeats[key] = f

    shy_count = text.count("\xad")
    decoded = {s: (e, ch, dec) for s, e, ch, dec in decode_invisible_runs(text)}
    ansi_spans = [(m.start(), m.end()) for m in ANSI.finditer(text)] if re.search("[\x1b\x80-\x9f]", text) else []
    ansi_starts = [a for a, _ in ansi_spans]
    for s, e in ansi_spans:
        first = repeats.get(("hidden-unicode.control-char", text[s:e]))
        if first is not None:  # a repeat: counted without building its excerpt
            extra_lines.setdefault(id(first), []).append(index.position(s)[0])
            continue
        add("hidden-unicode.control-char", "high", s, e, "ANSI escape / C1 control sequence",
            visible(text[max(0, s - 15):e + 15]))

    for m in SUSPECT.finditer(text):
        run_start, run = m.start(), m.group()
        i = 0
        while i < len(run):
            s = run_start + i
            ch = run[i]
            cp = ord(ch)
            # group consecutive characters of the same class
            cls = _class(cp)
            j = i + 1
            while j < len(run) and _class(ord(run[j])) == cls:
                j += 1
            e = run_start + j
            seg = run[i:j]
            i = j
            prev = text[s - 1] if s > 0 else ""
            nxt = text[e] if e < len(text) else ""
            if cls == "control":
                k = bisect.bisect_right(ansi_starts, s) - 1
                if k >= 0 and ansi_spans[k][0] <= s < ansi_spans[k][1]:
                    continue
                add("hidden-unicode.control-char", "high", s, e, "control character(s) " + _cps(seg))
            elif cls == "tag":
                if prev == "\U0001F3F4" and seg.endswith("\U000E007F") and len(seg) <= 8:
                    continue  # subdivision flag
                info = decoded.get(s)
                ex = f"tags: {info[2][:60]!r}" if info else None
                add("hidden-unicode.tag-chars", "high", s, e, f"{len(seg)} Unicode tag characters (ASCII smuggling)", ex)
            elif cls == "bidi":
                add("hidden-unicode.bidi-control", "high", s, e, "bidi control(s) " + _cps(seg))
            elif cls == "mark":
                ctx = text[max(0, s - 3):e + 3]
                if _RTL.search(ctx):
                    continue
                add("hidden-unicode.bidi-control", "medium", s, e, "bidi mark(s) outside RTL text " + _cps(seg))
            elif cls == "zw":
                if len(seg) == 1 and 0x2061 <= cp <= 0x2064 and prev.isalnum() and nxt.isalnum():
                    continue  # one invisible maths operator between operands (2\u2062x); runs are Sneaky Bits
                if len(seg) == 1 and cp in (0x200D, 0x200C):
                    if (_is_emoji(prev) and _is_emoji(nxt)) or _JOINING.match(prev or " ") or _JOINING.match(nxt or " "):
                        continue
                if cp == 0xFEFF and s == 0 and len(seg) == 1:
                    continue
                if cp == 0xFEFF and len(seg) == 1 and prev == "\n":
                    continue  # BOM at the start of a concatenated file
                info = decoded.get(s)
                ex = f"sneaky-bits: {info[2][:60]!r}" if info else None
                add("hidden-unicode.zero-width", "high" if len(seg) > 1 or info else "medium", s, e,
                    "zero-width/invisible character(s) " + _cps(seg), ex)
            elif cls == "vs":
                if len(seg) == 1:
                    if cp < 0xE0100 and prev and not _is_vs(prev):
                        continue  # standard/emoji variation sequence
                    if cp >= 0xE0100 and _is_han(prev):
                        continue  # ideographic variation sequence
                info = decoded.get(s)
                ex = f"variation-selectors: {info[2][:60]!r}" if info else None
                add("hidden-unicode.variation-selector", "high" if len(seg) >= 4 else "medium", s, e,
                    f"{len(seg)} variation selector(s) outside an emoji/ideographic sequence", ex)
            elif cls == "shy":
                # soft hyphens as hyphenation hints are legitimate in a text that uses them
                # repeatedly; a lone one between letters is how words are split invisibly
                if shy_count >= 3 and prev.isalpha() and nxt.isalpha():
                    continue
                add("hidden-unicode.zero-width", "low", s, e, "soft hyphen(s) " + _cps(seg))
            elif cls == "filler":
                add("hidden-unicode.invisible-filler", "medium", s, e, "invisible filler character(s) " + _cps(seg))
            elif cls == "pua":
                add("hidden-unicode.private-use", "low", s, e, "private-use character(s) " + _cps(seg))

    if _MIXED_CAND.search(text):
        for m in _candidate_words(text):
            w = m.group()
            scripts = {_script(c) for c in w}
            if "LATIN" in scripts and ("CYRILLIC" in scripts or any(
                    c in _LATIN_TWINS for c in w if _script(c) == "GREEK")):
                # Cyrillic inside a Latin word is always suspect; Greek only when the letter is a
                # Latin twin (not "μm", "βcell": units and symbols in scientific text)
                add("hidden-unicode.confusable-word", "medium", m.start(), m.end(), "word mixes Latin with Cyrillic/Greek letters")
            elif len(w) <= 3 and all(c in _LATIN_TWINS for c in w) and _latin_neighbours(text, m.start(), m.end()):
                # a short all-look-alike Greek/Cyrillic word inside Latin prose ("How can Ι make")
                add("hidden-unicode.confusable-word", "medium", m.start(), m.end(),
                    "Greek/Cyrillic look-alike word inside Latin text")
    out.sort(key=lambda f: f.offset)
    return _group_repeats(out, text, extra_lines)


GROUP_MIN = 3  # the same control character(s) more often than this: one finding with a count
# rules whose repeats are one finding; tag characters and bidi controls keep one finding per
# span (the sanitiser removes them span by span)
GROUPED = frozenset({"hidden-unicode.control-char", "hidden-unicode.zero-width", "hidden-unicode.variation-selector",
                     "hidden-unicode.invisible-filler", "hidden-unicode.private-use", "hidden-unicode.confusable-word"})


def _group_repeats(found: list[Finding], text: str, extra_lines: dict[int, list[int]]) -> list[Finding]:
    """One finding per repeated control character (sequence) instead of one per occurrence.

    A mis-decoded file (Windows-1252 dashes read as Latin-1 give U+0096 at every dash) or a
    coloured log (``ESC[31m`` on every line) would otherwise give hundreds of findings. The
    first occurrence stands for the group; its message carries the count and the first lines.
    Lone C1 controls (U+0080–U+009F) with no ESC anywhere in the text are a decoding problem,
    not an attack: severity ``low``.
    """
    no_esc = "\x1b" not in text
    for f in found:
        if f.rule not in GROUPED:
            continue
        more = extra_lines.get(id(f), [])
        match = f.match
        misdecoded = (f.rule == "hidden-unicode.control-char" and no_esc and match
                      and all("\x80" <= c <= "\x9f" for c in match))
        if misdecoded:
            f.severity = "low"
        if not more and not misdecoded:
            continue
        count = 1 + len(more)
        lines = sorted({f.line, *more})
        shown = ", ".join(map(str, lines[:5])) + (" …" if len(lines) > 5 else "")
        what = f.message.split(" U+", 1)[0] if f.rule != "hidden-unicode.control-char" else "control character(s)"
        f.message = f"{what} {_cps(match)} ×{count} (line{'s' if len(lines) > 1 else ''} {shown})"
        if misdecoded:
            f.message = f"{_cps(match)} ×{count} (line{'s' if len(lines) > 1 else ''} {shown}): " \
                        "text probably mis-decoded (Windows-1252 read as Latin-1)"
    return found


def _candidate_words(text: str):
    """The words (``_WORD`` matches) that hold a Greek/Cyrillic letter, found from those letters
    (one character-class scan) instead of by walking every word of the text."""
    last = -1
    for c in _MIXED_CAND.finditer(text):
        if c.start() < last:
            continue
        s = c.start()
        while s > 0 and _WORD.match(text[s - 1]):
            s -= 1
        m = _WORD.match(text, s)
        if m is None or m.end() <= c.start():
            continue
        last = m.end()
        yield m


def _latin_neighbours(text: str, s: int, e: int) -> bool:
    """True when the words right before and after ``text[s:e]`` (same line) are Latin."""
    before = text[max(0, s - 30):s].rsplit("\n", 1)[-1].split()
    after = text[e:e + 30].split("\n", 1)[0].split()
    return bool(before and after and _LATIN_WORD.search(before[-1]) and _LATIN_WORD.search(after[0]))


def _is_vs(ch: str) -> bool:
    if len(ch) != 1:
        return False
    cp = ord(ch)
    return 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF


def _class(cp: int) -> str:
    if cp < 0x20 or 0x7F <= cp <= 0x9F:
        return "control"
    if 0xE0000 <= cp <= 0xE007F:
        return "tag"
    if 0x202A <= cp <= 0x202E or 0x2066 <= cp <= 0x2069:
        return "bidi"
    if cp in (0x200E, 0x200F, 0x061C):
        return "mark"
    if 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF:
        return "vs"
    if cp in (0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x17B4, 0x17B5):
        return "filler"
    if cp == 0xAD:
        return "shy"
    if 0xE000 <= cp <= 0xF8FF or cp >= 0xF0000:
        return "pua"
    return "zw"


def _cps(seg: str) -> str:
    shown = " ".join(f"U+{ord(c):04X}" for c in seg[:4])
    return shown + (f" … ({len(seg)})" if len(seg) > 4 else "")


@hookimpl
def kb_scan(document, settings):
    return scan_text(document.markdown or "", settings)
