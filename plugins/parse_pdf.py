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

import functools
import itertools
import os
import re
import shutil
import subprocess
import tempfile

from pipeline import hookimpl
from pipeline.errors import PermanentError
from pipeline.model import ParsedDocument, ParserInfo

from plugins._common import claim, collapse_cjk_spaces, head, md_table, option

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")


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
    claimed = claim(path, ext, (".pdf",), settings)
    if claimed is None:
        return None
    path, ext = claimed
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
                ocr_text, why = _ocr(page, settings)
                if ocr_text is not None:
                    text = ocr_text
                    blocks.append("<!-- ocr: tesseract -->")
                elif not text.strip():
                    not_ocred.append(index + 1)
                    text = f"*[Page {index + 1} is a scanned image without a text layer; no OCR: {why}]*"
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
        pages = ", ".join(map(str, not_ocred[:20])) + ("..." if len(not_ocred) > 20 else "")
        warnings.append(f"scanned page(s) without text were not OCRed (pages {pages}): {_ocr_missing(settings)}")
    if title and title.lower().startswith("microsoft word - "):
        title = title[17:].strip() or None
    return ParsedDocument(
        markdown="\n\n".join(blocks).strip() + "\n", parser="pdf", title=title, locations="page", warnings=warnings
    )


def clean(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x02", "")
    text = _CONTROL.sub("", text)
    text = collapse_cjk_spaces(text)
    lines = [line.rstrip() for line in text.split("\n")]
    lines = ["\\" + line if line.lstrip().startswith(("#", "<!--")) else line for line in lines]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


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


@functools.lru_cache(maxsize=1)
def _tesseract_langs() -> frozenset[str]:
    exe = shutil.which("tesseract")
    if not exe:
        return frozenset()
    try:
        out = subprocess.run([exe, "--list-langs"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(line.strip() for line in (out.stdout + out.stderr).splitlines()[1:] if line.strip())


def _ocr_missing(settings) -> str:
    if not option(settings, "ocr"):
        return "OCR is disabled ([stages.parse] ocr = false)"
    if not shutil.which("tesseract"):
        return "tesseract is not installed (install tesseract-ocr and tesseract-ocr-chi-sim)"
    return "tesseract has none of the languages " + str(option(settings, "ocr_languages"))


def _ocr(page, settings) -> tuple[str | None, str]:
    """OCR one page with tesseract; (text, "") or (None, why not)."""
    wanted = [lang for lang in str(option(settings, "ocr_languages")).split("+") if lang]
    langs = [lang for lang in wanted if lang in _tesseract_langs()]
    if not option(settings, "ocr") or not shutil.which("tesseract") or not langs:
        return None, _ocr_missing(settings)
    image = page.render(scale=option(settings, "ocr_dpi") / 72).to_pil()
    with tempfile.TemporaryDirectory(prefix="kbwatch-ocr-") as tmp:
        png = os.path.join(tmp, "page.png")
        image.save(png)
        env = dict(os.environ, OMP_THREAD_LIMIT="1")
        try:
            out = subprocess.run(
                ["tesseract", png, "stdout", "-l", "+".join(langs)],
                capture_output=True, text=True, timeout=option(settings, "ocr_timeout_seconds"), env=env,
            )
        except subprocess.TimeoutExpired:
            return None, "tesseract timed out"
    if out.returncode != 0:
        return None, f"tesseract failed: {out.stderr.strip()[:200]}"
    return clean("\n".join(line.strip() for line in out.stdout.splitlines())), ""
