"""Test helpers for the parser plugins: pick a parser by extension, write tiny PDFs.

Not a conftest (that belongs to the core); imported by tests/test_parse_*.py.
"""

from __future__ import annotations

import functools
import importlib
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kbwatch.pipeline.errors import PermanentError  # noqa: E402

PARSER_MODULES = ("parse_text", "parse_unstructured", "parse_pptx", "parse_xlsx", "parse_pdf", "parse_image")
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "corpus"
SHARED = Path(__file__).resolve().parents[2] / "shared"


def modules():
    return [importlib.import_module(f"plugins.{name}") for name in PARSER_MODULES]


@functools.lru_cache(maxsize=1)
def parsers():
    """A plugin set holding only the built-in parsers (no stages, scanners or entry points)."""
    import pluggy

    from kbwatch.pipeline import PROJECT_NAME, hookspecs
    from kbwatch.pipeline.plugins import PluginSet

    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    ps = PluginSet(pm=pm, settings={})
    for mod in modules():
        pm.register(mod, name=mod.__name__)
        ps.builtin.append(mod.__name__)
    return ps


def parse(path, settings=None, ext=None):
    """What the core does (kbwatch.pipeline.parsing.parse_file): the size bound, then kb_parse of
    the parsers claiming the extension by priority, first non-None."""
    from kbwatch.pipeline.parsing import parse_file

    path = Path(path)
    return parse_file(parsers(), path, (ext or path.suffix).lower(), settings or {})


def _pdf(objects: list[bytes]) -> bytes:
    """Assemble a PDF from object bodies (object i+1 = objects[i]); catalog must be object 1."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def _stream(data: bytes) -> bytes:
    packed = zlib.compress(data)
    return b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + b"\nendstream"


def make_pdf(pages: list[bytes]) -> bytes:
    """A PDF whose pages have the given content streams.

    Fonts: /F1 Helvetica (WinAnsi), /F2 STSong-Light with the UniGB-UCS2-H CMap
    (a standard Adobe-GB1 CJK font that viewers and pdfium know without embedding);
    write Chinese with :func:`cjk`.
    """
    n = len(pages)
    first_page = 5
    kids = b" ".join(b"%d 0 R" % (first_page + 2 * i) for i in range(n))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, n),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Type /Font /Subtype /Type0 /BaseFont /STSong-Light /Encoding /UniGB-UCS2-H "
        b"/DescendantFonts [<< /Type /Font /Subtype /CIDFontType0 /BaseFont /STSong-Light "
        b"/CIDSystemInfo << /Registry (Adobe) /Ordering (GB1) /Supplement 4 >> "
        b"/FontDescriptor << /Type /FontDescriptor /FontName /STSong-Light /Flags 6 "
        b"/FontBBox [-25 -254 1000 880] /ItalicAngle 0 /Ascent 880 /Descent -120 /CapHeight 880 /StemV 93 >> "
        b"/DW 1000 >>] >>",
    ]
    for i, content in enumerate(pages):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
            b"/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents %d 0 R >>" % (first_page + 2 * i + 1)
        )
        objects.append(_stream(content))
    return _pdf(objects)


def cjk(text: str) -> bytes:
    """A hex string operand for /F2 (UCS-2 big-endian codes)."""
    return b"<" + text.encode("utf-16-be").hex().upper().encode() + b">"


def text_line(x: float, y: float, text: str | bytes, font: str = "F1", size: int = 12) -> bytes:
    operand = text if isinstance(text, bytes) else b"(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("cp1252") + b")"
    return b"BT /%s %d Tf %.1f %.1f Td %s Tj ET\n" % (font.encode(), size, x, y, operand)
