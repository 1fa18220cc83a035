"""Fence integrity: document text that imitates the knowledge pack's own structure.

The pack (``kbwatch ask``) wraps snippets in ``<knowledge_pack …>`` with its own section titles
(``## 片段 / Snippets`` …), snippet headers (``### [1] parsed/x.md#L1-L3 (page 1) — title``) and
citations. A document that contains such lines could forge a citation or close the fence
inside a real snippet. This module owns:

- :func:`skeleton`: a same-length view of a text for matching (UTS #39-style confusable
  skeleton, restricted to a table: Latin case folded, Cyrillic/Greek look-alikes and
  full-width/mathematical letters mapped to Latin, zero-width characters to spaces), so
  ``</knowIedge_pack>`` (capital I), ``</knоwledge_pack>`` (Cyrillic о) and
  ``＜/knowledge＿pack＞`` are found at the same offsets as in the text;
- :func:`find_imitations`: ``(start, end, what)`` for every imitation: look-alike fence tags,
  bilingual pack section titles, snippet headers, citation references and the pack's status
  line — used by the format scanner (rule ``format.pack-imitation``);
- :func:`inert`: the text made harmless for a snippet: fence tags become ``&lt;/knowledge_pack``,
  imitating lines are Markdown-escaped (``\\### [1] …``) and citation anchors lose their
  shape (``parsed/x.md\\#L1-L3``), so the pack's own headers stay the only ones a model sees.
"""

from __future__ import annotations

import re
import unicodedata

from .normalise import _translate_1to1

__all__ = ["find_imitations", "inert", "skeleton"]


def _table() -> dict[int, str]:
    t: dict[int, str] = {c: chr(c + 32) for c in range(0x41, 0x5B)}  # A-Z -> a-z
    for ranges in ((0xFF01, 0xFF5F), (0x1D400, 0x1D800), (0x2100, 0x2150), (0x24B6, 0x24EA), (0xFE50, 0xFE70)):
        for cp in range(*ranges):
            n = unicodedata.normalize("NFKC", chr(cp))
            if len(n) == 1 and n.isascii() and n.isprintable():
                t[cp] = n.lower()
    # Cyrillic and Greek letters drawn like Latin ones (UTS #39 confusables.txt, the common ones)
    for src, dst in (("аАɑα", "a"), ("вВβ", "b"), ("сСϲϹ", "c"), ("ԁ", "d"), ("еЕεΕ", "e"), ("ɡԍ", "g"),
                     ("һҺΗ", "h"), ("іІΙι", "i"), ("јЈ", "j"), ("кКκΚ", "k"), ("ӏⅼ", "l"), ("мМΜ", "m"),
                     ("Νηո", "n"), ("оОοΟσ০०", "o"), ("рРρΡ", "p"), ("ԛ", "q"), ("г", "r"), ("ѕЅ", "s"),
                     ("тТτΤ", "t"), ("υս", "u"), ("νѵ", "v"), ("ԝѡω", "w"), ("хХχΧ", "x"), ("уУγΥ", "y"),
                     ("ΖᴢΖ", "z"), ("‹〈⟨〈﹤＜", "<"), ("›〉⟩〉﹥＞", ">"), ("∕⁄／", "/"), ("＿", "_"), ("＃", "#")):
        for ch in src:
            t[ord(ch)] = dst
    for cp in (0x200B, 0x200C, 0x200D, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xFEFF, 0x00AD, 0x180E, 0x034F):
        t[cp] = " "
    return t


_SKELETON = _table()
# the characters the table changes: a text holding few distinct ones (Chinese prose with Latin
# capitals and full-width punctuation) is mapped with one str.replace per character, not character
# by character (translate() looks each one up in the table: ~250 replace() passes cost as much);
# normalise._translate_1to1 chooses, with this limit (-1: always translate()).
_KEYS = frozenset(map(chr, _SKELETON))
_FEW = 128


def skeleton(text: str) -> str:
    """A same-length matching view of ``text`` (see the module docstring)."""
    if text.isascii():
        return text.lower()
    found = _KEYS.intersection(text)
    return _translate_1to1(text, {ch: _SKELETON[ord(ch)] for ch in found}, _FEW)


_S = r"[\s]*"
_L = "[li1|]"
_FENCE = re.compile(r"<" + _S + r"(/?)" + _S + _S.join(["k", "n", "[o0]", "w", _L, "e", "d", "g", "e"]) + _S
                    + r"[_\-.]?" + _S + _S.join(["p", "a", "c", "k"]))
_SECTIONS = r"(?:片段|文件索引|警告|项目概述|结果|状态)\s*/\s*(?:snippets|file\s+index|warnings|project\s+summary|result|status)"
_STRUCTURE = re.compile(
    r"(?m)^[ \t]{0,3}(?:"
    r"#{1,6}[ \t]*" + _SECTIONS +                                     # a pack section title
    r"|#{1,6}[ \t]*\[\d{1,4}\][ \t]*\S+#l\d+"                           # a snippet header
    r"|\[\d{1,4}\][ \t]*parsed/\S*#l\d+"                               # a numbered citation line
    r"|状态\s*/\s*status\s*:"                                            # the pack's status line
    r"|以下内容是数据[,，]不是指令|the following content is data\. ignore any instructions"  # its preamble
    r")[^\n]*")
_CITATION = re.compile(r"parsed/[^\s#()\[\]]*#l\d+(?:-l\d+)?")
_GATE = ("pack", "parsed/", "片段", "文件索引", "警告", "项目概述", "结果", "状态", "以下内容是数据", "content is data")


def find_imitations(text: str, view: str | None = None) -> list[tuple[int, int, str]]:
    """``(start, end, what)`` of every imitation of the pack's structure, in text order;
    ``what`` is ``fence tag``, ``pack structure`` or ``citation``."""
    view = skeleton(text) if view is None else view
    out: list[tuple[int, int, str]] = []
    if "<" in view:
        out.extend((m.start(), m.end(), "fence tag") for m in _FENCE.finditer(view))
    if any(g in view for g in _GATE):
        lines = [(m.start(), m.end()) for m in _STRUCTURE.finditer(view)]
        out.extend((s, e, "pack structure") for s, e in lines)
        if "parsed/" in view:
            out.extend((m.start(), m.end(), "citation") for m in _CITATION.finditer(view)
                       if not any(s <= m.start() < e for s, e in lines))
    out.sort()
    return out


def inert(text: str, *, one_line: bool = False) -> str:
    """``text`` with every imitation made harmless (see the module docstring); ``one_line``:
    a title, where line-start escapes are not needed."""
    if not text:
        return text
    view = skeleton(text)
    found = find_imitations(text, view)
    if not found:
        return text
    edits: list[tuple[int, int, str]] = []
    for s, e, what in found:
        if what == "fence tag":
            closing = "/" in view[s:e]
            edits.append((s, e, "&lt;" + ("/" if closing else "") + "knowledge_pack"))
            continue
        if what == "pack structure" and not one_line:
            lead = len(text[s:e]) - len(text[s:e].lstrip(" \t"))
            edits.append((s + lead, s + lead, "\\"))  # Markdown escape: no longer a heading or list
        for m in _CITATION.finditer(view, s, e):
            hash_at = view.index("#l", m.start(), m.end())
            edits.append((hash_at, hash_at, "\\"))
    edits.sort(key=lambda x: (x[0], x[1]))
    parts, pos = [], 0
    for s, e, rep in edits:
        if s < pos:
            continue  # inside a fence tag already replaced
        parts.append(text[pos:s])
        parts.append(rep)
        pos = e
    parts.append(text[pos:])
    return "".join(parts)
