"""Parser for PDF: pypdfium2 text, pdfplumber tables, tesseract OCR for scanned pages.

Owns .pdf. unstructured's ``fast`` strategy is not used: it merges headings
into paragraphs, flattens tables, inserts spaces inside Chinese and silently
returns nothing for a PDF with one graphics-heavy page (research §5–6).

- ``<!-- page: N -->`` before each page; text per page in pdfium's reading
  order; spaces between two CJK characters collapsed; control characters
  dropped; a line starting with ``#`` or ``<!--`` is escaped so PDF text
  cannot forge a heading or a page marker.
- Pages with ruling lines are offered to pdfplumber; tables it finds (≥ 2×2)
  become Markdown tables placed where they stand, with the rest of the page's
  text around them.
- A page with images but (almost) no text layer is OCRed with ``tesseract``
  (``ocr_languages``, default ``chi_sim+eng``) when the binary is on PATH;
  otherwise the page gets a visible note and the document a warning.
- A PDF that needs a password fails with ``reason="encrypted"``.
"""

from __future__ import annotations

import itertools
import re

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.errors import PermanentError
from kbwatch.pipeline.model import ParsedDocument, ParserInfo

from kbwatch.plugins.parsing.common import head, md_table, option
from kbwatch.plugins.parsing.ocr import clean_text as clean
from kbwatch.plugins.parsing.ocr import ocr_image


@hookimpl
def kb_parser_info():
    return [
        ParserInfo(
            name="pdf",
            extensions=(".pdf",),
            priority=100,
            description="pypdfium2 text with page markers, pdfplumber tables, tesseract OCR for scanned pages",
        )
    ]


@hookimpl
def kb_worker_preload(settings):
    """Forked parse workers inherit these libraries imported (one import, not one per worker)."""
    return ["pypdfium2", "pdfplumber"]


@hookimpl
def kb_parse(path, ext, settings):
    if b"%PDF" not in head(path, 1024):
        raise PermanentError(f"{path.name} is not a PDF (no %PDF header)", reason="corrupt")
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise PermanentError(f"{path.name} is password-protected", reason="encrypted")
        raise PermanentError(f"{path.name} could not be opened as a PDF: {exc}", reason="corrupt")
    warnings: list[str] = []
    blocks: list[str] = []
    plumber = None
    not_ocred: list[int] = []
    try:
        total = len(pdf)
        limit = option(settings, "max_pages")
        for index in range(min(total, limit)):
            page = pdf[index]
            blocks.append(f"<!-- page: {index + 1} -->")
            text = _pdfium_text(page)
            if len(re.sub(r"\s", "", text)) < option(settings, "ocr_min_chars") and _count(page, 3, 1):
                ocr = ocr_image(lambda: page.render(scale=option(settings, "ocr_dpi") / 72).to_pil(), settings)
                if ocr.text is not None:
                    text = ocr.text
                    blocks.append("<!-- ocr: tesseract -->")
                elif not text.strip():
                    not_ocred.append((index + 1, ocr.why))
                    text = f"*[Page {index + 1} is a scanned image without a text layer; no OCR: {ocr.why}]*"
            elif _count(page, 2, 4):
                if plumber is None:
                    import pdfplumber

                    plumber = pdfplumber.open(str(path))
                text = _with_tables(plumber.pages[index], text) or text
            page.close()
            if text.strip():
                blocks.append(text.strip())
        if total > limit:
            blocks.append(f"*[Only the first {limit} of {total} pages were parsed: max_pages]*")
            warnings.append(f"PDF has {total} pages; only the first {limit} were parsed")
        title = (pdf.get_metadata_dict().get("Title") or "").strip() or None
    except PermanentError:
        raise
    except pdfium.PdfiumError as exc:
        raise PermanentError(f"{path.name}: PDF page could not be read: {exc}", reason="corrupt")
    finally:
        if plumber is not None:
            plumber.close()
        pdf.close()
    if not_ocred:
        pages = ", ".join(str(n) for n, _ in not_ocred[:20]) + ("..." if len(not_ocred) > 20 else "")
        whys = "; ".join(dict.fromkeys(why for _, why in not_ocred))
        warnings.append(f"scanned page(s) without a text layer have no OCR text kept (pages {pages}): {whys}")
    if title and title.lower().startswith("microsoft word - "):
        title = title[17:].strip() or None
    return ParsedDocument(
        markdown="\n\n".join(blocks).strip() + "\n", parser="pdf", title=title, locations="page", warnings=warnings
    )


def _pdfium_text(page) -> str:
    textpage = page.get_textpage()
    try:
        return clean(textpage.get_text_range())
    finally:
        textpage.close()


def _count(page, kind: int, at_least: int) -> bool:
    """Whether the page has at least N objects of a kind (2 = path, 3 = image); bounded scan."""
    objs = page.get_objects(filter=[kind], max_depth=2)
    return sum(1 for _ in itertools.islice(objs, at_least)) >= at_least


def _with_tables(ppage, fallback: str) -> str | None:
    try:
        found = ppage.find_tables()
        extracted = [(t, t.extract()) for t in found if len(t.rows) >= 2 and len(t.columns) >= 2]
    except Exception:
        return None
    # a ruled box around running text is layout, not a table
    tables = [t for t, rows in extracted if not any(len(c or "") > 300 for row in rows for c in row)]
    data = {id(t): rows for t, rows in extracted}
    if not tables:
        return None
    tables.sort(key=lambda t: t.bbox[1])
    boxes = [t.bbox for t in tables]

    def outside(obj) -> bool:
        cx, cy = (obj["x0"] + obj["x1"]) / 2, (obj["top"] + obj["bottom"]) / 2
        return not any(b[0] <= cx <= b[2] and b[1] <= cy <= b[3] for b in boxes)

    def band(y0: float, y1: float) -> str:
        def keep(obj) -> bool:
            if obj.get("object_type") != "char":
                return True
            cy = (obj["top"] + obj["bottom"]) / 2
            return y0 <= cy < y1 and outside(obj)

        return clean(ppage.filter(keep).extract_text() or "")

    parts: list[str] = []
    y = float("-inf")
    for table in tables:
        parts.append(band(y, table.bbox[1]))
        parts.append(md_table([[c or "" for c in row] for row in data[id(table)]]))
        y = table.bbox[3]
    parts.append(band(y, float("inf")))
    text = "\n\n".join(p for p in parts if p)
    if "(cid:" in text:  # pdfminer could not map the glyphs: keep pdfium's text, add the tables
        return fallback + "\n\n" + "\n\n".join(p for p in parts if p.startswith("|"))
    return text
