"""Golden tests for plugins/parse_pdf.py (PDFs written by _parse_util: no tool needed)."""

from __future__ import annotations

import shutil

import pytest

from _parse_util import PermanentError, cjk, make_pdf, parse, text_line


def _ruled_table(x0, y0, cells, cw=120, rh=24) -> bytes:
    out = b"0.5 w\n"
    rows, cols = len(cells), len(cells[0])
    for r in range(rows + 1):
        out += b"%d %d m %d %d l S\n" % (x0, y0 - r * rh, x0 + cols * cw, y0 - r * rh)
    for c in range(cols + 1):
        out += b"%d %d m %d %d l S\n" % (x0 + c * cw, y0, x0 + c * cw, y0 - rows * rh)
    for r, row in enumerate(cells):
        for c, text in enumerate(row):
            out += text_line(x0 + c * cw + 5, y0 - (r + 1) * rh + 8, text)
    return out


@pytest.fixture(scope="module")
def report_pdf(tmp_path_factory):
    page1 = (
        text_line(72, 760, "Annual Report 2026")
        + text_line(72, 730, cjk("技术方案：系统架构设计"), "F2")
        + text_line(72, 700, cjk("新 鲜 甘 草"), "F2")
        + text_line(72, 670, "# not a heading")
    )
    page2 = (
        text_line(72, 760, "Intro above the table")
        + _ruled_table(72, 700, [["Region", "Q1", "Q2"], ["North", "411", "7|8"], ["South", "12", "13"]])
        + text_line(72, 560, "Text below the table")
    )
    path = tmp_path_factory.mktemp("pdf") / "report.pdf"
    path.write_bytes(make_pdf([page1, page2]))
    return path


def test_pdf_pages_and_cjk(report_pdf):
    doc = parse(report_pdf)
    md = doc.markdown
    assert doc.locations == "page" and doc.parser == "pdf"
    assert md.startswith("<!-- page: 1 -->")
    assert md.index("Annual Report 2026") < md.index("<!-- page: 2 -->") < md.index("Intro above the table")
    assert "技术方案：系统架构设计" in md
    assert "新鲜甘草" in md  # spaces between CJK characters collapsed
    assert "\\# not a heading" in md.splitlines()


def test_pdf_table(report_pdf):
    md = parse(report_pdf).markdown
    lines = md.splitlines()
    assert "| Region | Q1 | Q2 |" in lines
    assert "| North | 411 | 7\\|8 |" in lines
    assert md.index("Intro above the table") < md.index("| Region") < md.index("Text below the table")


@pytest.fixture(scope="module")
def scanned_pdf(tmp_path_factory):
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (1240, 600), "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=48)
    draw.text((60, 200), "Scanned invoice 4711", fill="black", font=font)
    path = tmp_path_factory.mktemp("scan") / "scan.pdf"
    img.save(path, "PDF", resolution=150)
    return path


def test_scanned_pdf_without_ocr_gets_note(scanned_pdf):
    doc = parse(scanned_pdf, {"stages": {"parse": {"ocr": False}}})
    assert "scanned image without a text layer" in doc.markdown
    assert doc.warnings and "OCR is disabled" in doc.warnings[0]


@pytest.mark.skipif(not shutil.which("tesseract"), reason="tesseract is not installed (apt-get install tesseract-ocr)")
def test_scanned_pdf_ocr(scanned_pdf):
    doc = parse(scanned_pdf, {"stages": {"parse": {"ocr_languages": "eng"}}})
    assert "4711" in doc.markdown and "<!-- ocr: tesseract -->" in doc.markdown


def test_encrypted_pdf(report_pdf, tmp_path):
    pypdf = pytest.importorskip("pypdf", reason="pypdf (an unstructured dependency) writes the encrypted PDF")
    writer = pypdf.PdfWriter(clone_from=str(report_pdf))
    writer.encrypt(user_password="secret", owner_password="owner")
    out = tmp_path / "locked.pdf"
    with open(out, "wb") as fh:
        writer.write(fh)
    with pytest.raises(PermanentError) as err:
        parse(out)
    assert err.value.reason == "encrypted"


def test_not_a_pdf(tmp_path):
    f = tmp_path / "x.pdf"
    f.write_bytes(b"<html>not a pdf</html>")
    with pytest.raises(PermanentError) as err:
        parse(f)
    assert err.value.reason == "corrupt"
