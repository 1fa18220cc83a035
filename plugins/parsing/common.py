"""Helpers shared by the parser plugins (no hooks here).

The core checks the extension claim and the size bound before a parser runs
(:mod:`kbwatch.pipeline.parsing`); nothing here repeats them.

Owns: reading parse options from the settings dict, container
checks done *before* a library opens a file (zip-bomb limits, DTD/entity
rejection in OOXML/ODF/EPUB parts, encrypted or legacy OLE files under an
OOXML name), text decoding with BOM / strict UTF-8 / charset-normalizer, and
the small Markdown utilities every renderer needs (escaped table cells, CJK
space collapsing).
"""

from __future__ import annotations

import codecs
import re
import zipfile
from pathlib import Path
from typing import Any

from kbwatch.pipeline.config import stage_defaults, stage_options
from kbwatch.pipeline.errors import PermanentError

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
ZIP_MAGIC = b"PK\x03\x04"

def option(settings: Any, key: str) -> Any:
    """``[stages.parse] <key>``, its default declared in config/default.toml; tolerant of odd settings."""
    default = stage_defaults("parse")[key]
    value = stage_options(settings, "parse").get(key, default)
    if isinstance(default, bool):
        return bool(value)
    if isinstance(default, (int, float)) and not isinstance(value, (int, float)):
        return default
    return value


def head(path: Path, n: int = 8) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(n)


def check_ole_named_ooxml(path: Path, kind: str) -> None:
    """An OOXML name on an OLE file: either encrypted OOXML or a legacy binary file."""
    if head(path) != OLE_MAGIC:
        return
    encrypted = False
    try:
        import msoffcrypto

        with open(path, "rb") as fh:
            encrypted = bool(msoffcrypto.OfficeFile(fh).is_encrypted())
    except Exception:  # not an Office OLE file msoffcrypto knows: treat as legacy binary
        encrypted = False
    if encrypted:
        raise PermanentError(f"{Path(path).name} is password-protected (encrypted {kind})", reason="encrypted")
    raise PermanentError(
        f"{Path(path).name} is a legacy binary Office file, not {kind}; save it in the new format",
        reason="unsupported",
    )


def check_zip_container(path: Path, settings: Any, kind: str) -> None:
    """Refuse non-ZIP, zip-bomb and DTD-carrying OOXML/ODF/EPUB containers."""
    name = Path(path).name
    check_ole_named_ooxml(path, kind)
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise PermanentError(f"{name} is not a valid {kind} file (not a ZIP container: {exc})", reason="corrupt")
    with zf:
        infos = zf.infolist()
        if len(infos) > option(settings, "max_zip_members"):
            raise PermanentError(f"{name} has {len(infos)} parts, too many for a {kind}", reason="too large")
        total = sum(i.file_size for i in infos)
        packed = sum(i.compress_size for i in infos) or 1
        limit = option(settings, "max_uncompressed_mb") * 1024 * 1024
        ratio = option(settings, "max_compression_ratio")
        if total > limit:
            raise PermanentError(
                f"{name} unpacks to {total / 1048576:.0f} MB, above max_uncompressed_mb", reason="too large"
            )
        if total > 10 * 1024 * 1024 and total / packed > ratio:
            raise PermanentError(
                f"{name} has a compression ratio of {total / packed:.0f}:1 (possible zip bomb)", reason="too large"
            )
        for info in infos:
            if not info.filename.lower().endswith((".xml", ".rels", ".opf", ".ncx", ".xhtml", ".htm", ".html")):
                continue
            try:
                with zf.open(info) as member:
                    found = prolog_declaration(member, doctype_allowed=kind not in ("docx", "pptx", "xlsx"))
            except PrologTooLong:
                raise PermanentError(f"{name}: part {info.filename} has over {PROLOG_MAX_CHARS // 1024} K characters "
                                     "before its first element (refused: a declaration could hide there)",
                                     reason="corrupt") from None
            except Exception as exc:
                raise PermanentError(f"{name}: part {info.filename} cannot be read ({exc})", reason="corrupt")
            if found:
                raise PermanentError(
                    f"{name}: part {info.filename} {found} (refused: entity-expansion risk)", reason="corrupt")


# An XML part declares entities only in its prolog (before the root element), inside a DOCTYPE's
# internal subset. The prolog is read as XML reads it (its encoding from the BOM or the first bytes;
# comments and processing instructions skipped whole), not as a fixed number of bytes: a long
# comment before the DOCTYPE, or a part in UTF-16, got past a look at the first 4 KB for "<!ENTITY".
PROLOG_MAX_CHARS = 1 << 20


class PrologTooLong(ValueError):
    """More than PROLOG_MAX_CHARS characters before an XML part's first element."""


def _xml_codec(head: bytes) -> tuple[str, int]:
    """The encoding an XML parser reads ``head`` in (XML 1.0 appendix F), and the length of its BOM:
    a BOM (the text decoder's table, ``_BOMS``), or the pattern of the first ``<``; anything else is
    read as Latin-1, in which every ASCII-compatible encoding's markup characters are themselves."""
    for bom, codec in _BOMS:
        if head.startswith(bom):
            return codec, len(bom)
    for start, codec in ((b"<\0\0\0", "utf-32-le"), (b"\0\0\0<", "utf-32-be"), (b"<\0", "utf-16-le"), (b"\0<", "utf-16-be")):
        if head.startswith(start):
            return codec, 0
    return "latin-1", 0


def prolog_declaration(stream, doctype_allowed: bool) -> str | None:
    """What an XML part's prolog declares that kbwatch refuses, or None: a DOCTYPE (unless
    ``doctype_allowed``: EPUB's XHTML has ``<!DOCTYPE html>``), and any DOCTYPE with an internal
    subset (``[…]``: where entities are declared). Reads ``stream`` (a binary file) only up to the
    root element's ``<``; raises :class:`PrologTooLong` past ``PROLOG_MAX_CHARS``. A prolog that is
    not well-formed is left to the parser, which refuses it."""
    first = stream.read(4096)
    codec, bom = _xml_codec(first)
    decoder = codecs.getincrementaldecoder(codec)("replace")
    buf = decoder.decode(first[bom:])
    done = not first
    i = 0

    def more() -> bool:
        nonlocal buf, done
        if done:
            return False
        if len(buf) > PROLOG_MAX_CHARS:
            raise PrologTooLong()
        chunk = stream.read(65536)
        buf += decoder.decode(chunk, final=not chunk)
        done = not chunk
        return True

    while True:
        while i < len(buf) and buf[i] in " \t\r\n":
            i += 1
        if len(buf) - i < 9 and more():
            continue
        if buf.startswith("<?", i) or buf.startswith("<!--", i):
            end = buf.find("?>" if buf[i + 1] == "?" else "-->", i + 2)
            if end < 0:
                if more():
                    continue
                return None
            i = end + (2 if buf[i + 1] == "?" else 3)
        elif buf[i:i + 9].upper() == "<!DOCTYPE":
            j, quote = i + 9, ""
            while True:  # to the DOCTYPE's end: ">" or "[" outside its quoted literals
                if j >= len(buf):
                    if more():
                        continue
                    return None
                c = buf[j]
                if quote:
                    quote = "" if c == quote else quote
                elif c in "'\"":
                    quote = c
                elif c == "[":
                    return "declares XML entities (a DOCTYPE with an internal subset)"
                elif c == ">":
                    break
                j += 1
            if not doctype_allowed:
                return "declares a DOCTYPE"
            i = j + 1
        else:
            return None  # the root element (or something no parser accepts)


# --------------------------------------------------------------------------- text


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def _bomless_utf16_32(data: bytes) -> str | None:
    """UTF-16/32 without a BOM: recognised by the pattern of NUL bytes in ASCII text."""
    sample = data[:4096]
    if len(sample) < 4:
        return None
    n = len(sample) - len(sample) % 4
    if sample[1:n:4].count(0) + sample[2:n:4].count(0) + sample[3:n:4].count(0) >= 0.9 * 3 * (n // 4):
        return "utf-32-le"
    if sample[0:n:4].count(0) + sample[1:n:4].count(0) + sample[2:n:4].count(0) >= 0.9 * 3 * (n // 4):
        return "utf-32-be"
    m = len(sample) - len(sample) % 2
    odd, even = sample[1:m:2].count(0), sample[0:m:2].count(0)
    if odd >= 0.6 * (m // 2) and even == 0:
        return "utf-16-le"
    if even >= 0.6 * (m // 2) and odd == 0:
        return "utf-16-be"
    return None


_LATIN_SINGLE_BYTE = frozenset(
    "cp1250 cp1252 cp1254 cp1257 latin_1 iso8859_2 iso8859_4 iso8859_9 iso8859_10 iso8859_13 "
    "iso8859_14 iso8859_15 iso8859_16 mac_latin2 mac_roman mac_iceland mac_turkish cp850 cp437".split()
)


def _plausible(text: str) -> bool:
    """Decoded text made of assigned, printable characters (not random bytes)."""
    import unicodedata

    sample = text[:20000]
    if not sample:
        return False
    bad = sum(1 for ch in sample if unicodedata.category(ch) in ("Cn", "Co", "Cs", "Cc") and ch not in "\t\n\r\f")
    return bad <= len(sample) // 200


def decode_bytes(data: bytes, name: str = "file") -> tuple[str, str]:
    """Decode document bytes: BOM, strict UTF-8, BOM-less UTF-16/32, charset-normalizer.

    Raises ``PermanentError(reason="not text")`` for binary content.
    """
    for bom, enc in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom):].decode(enc), enc
            except UnicodeDecodeError as exc:
                raise PermanentError(f"{name} starts with a {enc} BOM but is not valid {enc}: {exc}", reason="not text")
    if not data:
        return "", "utf-8"
    if b"\x00" not in data[:65536]:  # NULs are valid UTF-8 but never in UTF-8 text
        try:
            return data.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            pass
    wide = _bomless_utf16_32(data)
    if wide:
        try:
            return data.decode(wide), wide
        except UnicodeDecodeError:
            pass
    from charset_normalizer import from_bytes

    has_nul = b"\x00" in data[:65536]
    if has_nul and len(data) % 2 == 0:
        for enc in ("utf-32-le", "utf-32-be", "utf-16-le", "utf-16-be"):
            if enc.startswith("utf-32") and len(data) % 4:
                continue
            try:
                text = data.decode(enc)
            except UnicodeDecodeError:
                continue
            if _plausible(text):
                return text, enc
    best = from_bytes(data[: 4 * 1024 * 1024]).best()
    if has_nul and (best is None or not best.encoding.startswith(("utf_16", "utf_32"))):
        raise PermanentError(f"{name} contains binary data (NUL bytes); it is not a text file", reason="not text")
    if best is None:
        for enc in ("gb18030", "big5"):  # short CJK files charset-normalizer will not call
            try:
                text = data.decode(enc)
            except UnicodeDecodeError:
                continue
            if _plausible(text):
                return text, enc
        raise PermanentError(f"{name} is not text in any known encoding", reason="not text")
    enc = best.encoding
    if enc in _LATIN_SINGLE_BYTE:
        try:  # Western European first: cp1250/latin-2 guesses mangle é, ï, ß...
            return data.decode("cp1252"), "cp1252"
        except UnicodeDecodeError:
            pass
    if enc in ("gb2312", "gbk"):
        enc = "gb18030"  # superset: never lose a character GBK-labelled files carry
    try:
        text = data.decode(enc)
    except (UnicodeDecodeError, LookupError):
        text = str(best)
    bad = sum(1 for ch in text[:65536] if ch < " " and ch not in "\t\n\r\f\v\x1b")
    if bad > max(8, len(text[:65536]) // 100):
        raise PermanentError(f"{name} contains binary control characters; it is not a text file", reason="not text")
    return text, enc


# ----------------------------------------------------------------------- markdown

_CJK = r"\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_CJK_SPACE = re.compile(rf"(?<=[{_CJK}])[ \t\u00a0\u3000]+(?=[{_CJK}])")


def collapse_cjk_spaces(text: str) -> str:
    """Remove spaces a layout engine put between two CJK characters."""
    return _CJK_SPACE.sub("", text)


def cell(value: Any) -> str:
    """One Markdown table cell: no newline, pipes and backslashes escaped."""
    if value is None:
        return ""
    text = re.sub(r"\\(?=\|)", r"\\\\", str(value)).replace("|", "\\|")
    return " ".join(text.split())


# a ragged table is padded to its widest row only while that stays under this many cells: a small
# file can describe a huge padded table (a 200,000-field header over 20,000 one-field rows is
# 4 billion cells); past it only the header is padded, and a short row stays short (Markdown
# readers show the missing cells empty), so the output grows with the input, not with its shape
PAD_CELLS = 2_000_000


def md_table(rows: list[list[Any]]) -> str:
    """Rows (first = header) to a Markdown table; ragged rows padded (up to :data:`PAD_CELLS`
    cells in all), empty columns kept."""
    rows = [[cell(v) for v in r] for r in rows]
    rows = [r for r in rows if any(r)]
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    if width * len(rows) <= PAD_CELLS:
        rows = [r + [""] * (width - len(r)) for r in rows]
    else:
        rows[0] = rows[0] + [""] * (width - len(rows[0]))
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
    out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(out)


def fenced(text: str, lang: str) -> str:
    """A fenced block the content cannot close (fence longer than any backtick run)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"
