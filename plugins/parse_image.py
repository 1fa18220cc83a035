"""Parser for images (scans, photos of documents, screenshots): tesseract OCR.

Owns .png .jpg .jpeg .tif .tiff .bmp .gif .webp, and .heic .heif (phone
photos, through pillow-heif). The image is opened with Pillow (its
decompression-bomb limit applies: an image of more than ~179 M pixels fails
as ``too large``), turned upright by its EXIF orientation, flattened onto
white when it has transparency, stretched to 8 bits when it has 16 or 32,
enlarged 2× when its shorter side is under 1,000 pixels (tesseract reads
small print poorly), shrunk to tesseract's 32,767-pixel limit when a side is
longer, and read by ``tesseract`` with ``[stages.parse] ocr_languages``
(default ``chi_sim+eng``). A multi-page TIFF or HEIC gets ``<!-- page: N
-->`` before each page (up to ``max_pages``); a damaged page ends the
document with a note and a warning, the pages before it kept. Without
tesseract the file fails as ``missing program``; an image in which OCR finds
no text, or only text under ``ocr_min_confidence`` (a script without its
language, a photo), fails as ``no text``.
"""

from __future__ import annotations

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.errors import PermanentError
from kbwatch.pipeline.model import ParsedDocument, ParserInfo

from kbwatch.plugins.parsing.common import option
from kbwatch.plugins.parsing.ocr import Ocr, ocr_available, ocr_image, ocr_missing

EXTENSIONS = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".gif", ".webp", ".heic", ".heif")
MULTI_PAGE = (".tif", ".tiff", ".heic", ".heif")  # formats whose frames are pages, not animation
_SMALL = 1000  # shorter side, in pixels, under which the image is enlarged 2x for OCR
_TESSERACT_MAX = 32767  # tesseract refuses an image with a longer side


@hookimpl
def kb_parser_info():
    return [
        ParserInfo(
            name="image",
            extensions=EXTENSIONS,
            priority=100,
            description="tesseract OCR of images (Pillow: EXIF orientation, multi-page TIFF)",
        )
    ]


@hookimpl
def kb_worker_preload(settings):
    """Forked parse workers inherit Pillow imported."""
    return ["PIL.Image", "PIL.ImageOps"]


@hookimpl
def kb_parse(path, ext, settings):
    if not ocr_available(settings):
        reason = "unsupported" if not option(settings, "ocr") else "missing program"
        raise PermanentError(f"images are read with OCR, and {ocr_missing(settings)}", reason=reason)
    from PIL import Image, UnidentifiedImageError

    if ext in (".heic", ".heif"):
        _register_heif()
    unreadable = (UnidentifiedImageError, OSError, SyntaxError, ValueError, TypeError, EOFError, IndexError)
    try:
        image = Image.open(path)
        image.load()
    except Image.DecompressionBombError as exc:
        raise PermanentError(f"{path.name}: {exc}", reason="too large")
    except unreadable as exc:
        raise PermanentError(f"{path.name} could not be read as an image: {exc}", reason="corrupt")
    limit = option(settings, "max_pages")
    blocks: list[str] = []
    warnings: list[str] = []
    try:
        frames = getattr(image, "n_frames", 1) if ext in MULTI_PAGE else 1
    except unreadable as exc:  # a damaged page directory: the first page still reads
        frames = 1
        warnings.append(f"only the first page could be read; the page directory is damaged: {exc}")
    failed: list[Ocr] = []  # pages whose OCR gave nothing to keep, and why
    try:
        for index in range(min(frames, limit)):
            try:
                if index:
                    image.seek(index)
                prepared = _prepared(image)
            except unreadable as exc:  # a damaged page: keep the pages before it
                if index == 0:
                    raise PermanentError(f"{path.name} could not be read as an image: {exc}", reason="corrupt")
                blocks.append(f"*[Pages {index + 1}–{frames} could not be read: {exc}]*")
                warnings.append(f"pages {index + 1}-{frames} of {frames} could not be read: {exc}")
                break
            ocr = ocr_image(prepared, settings)
            if ocr.text is None and frames == 1:
                raise PermanentError(f"{path.name}: {ocr.why}", reason=ocr.reason or "parser error")
            if frames > 1:
                blocks.append(f"<!-- page: {index + 1} -->")
            if ocr.text is None:
                failed.append(ocr)
                blocks.append(f"*[Page {index + 1}: no text kept: {ocr.why}]*")
                warnings.append(f"page {index + 1}: {ocr.why}")
            elif ocr.text:
                blocks.append(ocr.text)
    finally:
        image.close()
    if frames > limit:
        blocks.append(f"*[Only the first {limit} of {frames} pages were read: max_pages]*")
        warnings.append(f"the image has {frames} pages; only the first {limit} were read")
    if not any(b and not b.startswith(("<!--", "*[")) for b in blocks):
        if failed:  # every page failed: say why (a timeout, tesseract failing, unreadable text)
            raise PermanentError(f"{path.name}: no page gave text; page 1: {failed[0].why}",
                                 reason=failed[0].reason or "parser error")
        raise PermanentError(f"OCR found no text in {path.name} (a photo or a drawing?)", reason="no text")
    return ParsedDocument(
        markdown="<!-- ocr: tesseract -->\n\n" + "\n\n".join(blocks).strip() + "\n",
        parser="image", locations="page" if frames > 1 else None, warnings=warnings,
    )


def _register_heif() -> None:
    try:
        from pillow_heif import register_heif_opener
    except ImportError:
        raise PermanentError("HEIC/HEIF images need the pillow-heif package (pip install pillow-heif)",
                             reason="missing program") from None
    register_heif_opener()


def _prepared(image):
    """Upright, opaque on white, 8-bit grey or RGB, and sized for tesseract."""
    from PIL import Image, ImageOps

    image = ImageOps.exif_transpose(image)
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        flat = Image.new("RGB", rgba.size, "white")
        flat.paste(rgba, mask=rgba.getchannel("A"))
        image = flat
    elif image.mode.startswith("I") or image.mode == "F":  # 16/32-bit or float: stretch to 8 bits
        wide = image.convert("F")
        lo, hi = wide.getextrema()
        image = (wide.point(lambda v: (v - lo) * (255.0 / (hi - lo))) if hi > lo else wide).convert("L")
    elif image.mode not in ("L", "RGB"):
        image = image.convert("RGB")
    # enlarge small images 2x, and keep both sides within tesseract's 32,767-pixel limit
    scale = 2.0 if min(image.size) < _SMALL else 1.0
    scale = min(scale, _TESSERACT_MAX / max(image.size))
    if scale != 1.0:
        size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        image = image.resize(size, Image.LANCZOS)
    return image
