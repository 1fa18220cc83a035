"""OCR with the ``tesseract`` program, shared by the PDF and image parsers.

``ocr_image(image, settings)`` runs tesseract on one Pillow image with the
configured ``[stages.parse] ocr_languages`` that are installed, bounded by
``ocr_timeout_seconds``, one thread (parse workers run side by side), and
returns an :class:`Ocr`: the text, or why there is none (tesseract missing or
failed, or text too unsure to keep: ``ocr_min_confidence``). ``clean_text``
is the clean-up both parsers apply to the text they extract.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from typing import NamedTuple

from kbwatch.plugins.parsing.common import collapse_cjk_spaces, option

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")


def clean_text(text: str) -> str:
    """Newlines normalised, control characters dropped, spaces between CJK characters
    collapsed, and a line that starts with ``#`` or ``<!--`` escaped, so extracted
    text cannot forge a heading or a page marker."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x02", "")
    text = _CONTROL.sub("", text)
    text = collapse_cjk_spaces(text)
    lines = [line.rstrip() for line in text.split("\n")]
    lines = ["\\" + line if line.lstrip().startswith(("#", "<!--")) else line for line in lines]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


@functools.lru_cache(maxsize=1)
def tesseract_langs() -> frozenset[str]:
    exe = shutil.which("tesseract")
    if not exe:
        return frozenset()
    try:
        out = subprocess.run([exe, "--list-langs"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(line.strip() for line in (out.stdout + out.stderr).splitlines()[1:] if line.strip())


def ocr_missing(settings) -> str:
    """Why OCR cannot run here (when ``ocr_available`` is False)."""
    if not option(settings, "ocr"):
        return "OCR is disabled ([stages.parse] ocr = false)"
    if not shutil.which("tesseract"):
        return "tesseract is not installed (install tesseract-ocr and tesseract-ocr-chi-sim)"
    return "tesseract has none of the languages " + str(option(settings, "ocr_languages"))


def _languages(settings) -> list[str]:
    """The configured ``ocr_languages`` that tesseract has installed, in their order."""
    return [lang for lang in str(option(settings, "ocr_languages")).split("+") if lang and lang in tesseract_langs()]


def ocr_available(settings) -> bool:
    return bool(option(settings, "ocr")) and bool(shutil.which("tesseract")) and bool(_languages(settings))


class Ocr(NamedTuple):
    """What OCR of one image gave: ``text`` (None when there is none to keep),
    ``why`` not, a one-word ``reason`` for a failure, and the mean confidence."""

    text: str | None
    why: str = ""
    reason: str = ""
    confidence: float | None = None


def ocr_image(image, settings) -> Ocr:
    """OCR one Pillow image with tesseract (text and word confidences in one run).

    ``image`` may also be a function that returns the image (a PDF page to
    render): it is called only when OCR can run. Text whose mean word confidence (weighted by length) is under
    ``ocr_min_confidence`` is not kept: it is what tesseract reads from a
    script it has no language for, or from a photo, and a model would cite it.
    """
    if not ocr_available(settings):
        return Ocr(None, ocr_missing(settings), "missing program")
    langs = _languages(settings)
    if callable(image):
        image = image()
    with tempfile.TemporaryDirectory(prefix="kbwatch-ocr-") as tmp:
        png = os.path.join(tmp, "page.png")
        image.save(png)
        base = os.path.join(tmp, "out")
        env = dict(os.environ, OMP_THREAD_LIMIT="1")
        try:
            out = subprocess.run(
                ["tesseract", png, base, "-l", "+".join(langs), "txt", "tsv"],
                capture_output=True, text=True, timeout=option(settings, "ocr_timeout_seconds"), env=env,
            )
        except subprocess.TimeoutExpired:
            return Ocr(None, "tesseract timed out (ocr_timeout_seconds)", "timeout")
        if out.returncode != 0:
            return Ocr(None, f"tesseract failed: {out.stderr.strip()[:200]}", "parser error")
        try:
            with open(base + ".txt", encoding="utf-8", errors="replace") as fh:
                raw = fh.read()
            with open(base + ".tsv", encoding="utf-8", errors="replace") as fh:
                confidence = _mean_confidence(fh.read())
        except OSError as exc:
            return Ocr(None, f"tesseract wrote no output: {exc}", "parser error")
    text = clean_text("\n".join(line.strip() for line in raw.splitlines()))
    floor = float(option(settings, "ocr_min_confidence"))
    if text and confidence is not None and confidence < floor:
        return Ocr(None, f"the OCR text is unreadable (mean word confidence {confidence:.0f}%, under "
                         f"ocr_min_confidence {floor:g}%; is its script among ocr_languages "
                         f"{option(settings, 'ocr_languages')}?)", "no text", confidence)
    return Ocr(text, "", "", confidence)


def _mean_confidence(tsv: str) -> float | None:
    """Mean word confidence of tesseract's TSV output, weighted by word length."""
    total = weight = 0.0
    for line in tsv.splitlines()[1:]:
        cols = line.split("\t")
        if len(cols) < 12 or not cols[11].strip():
            continue
        try:
            conf = float(cols[10])
        except ValueError:
            continue
        if conf < 0:
            continue
        n = len(cols[11].strip())
        total += conf * n
        weight += n
    return total / weight if weight else None
