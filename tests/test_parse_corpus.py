"""Every file of ../shared/corpus parses to Markdown with known text, or fails with a clear reason.

Expectations were written by reading the documents. Nothing but PermanentError may escape.
"""

from __future__ import annotations

import shutil

import pytest

from _parse_util import SHARED, PermanentError, parse

CORPUS = SHARED / "corpus"
HAS_SOFFICE = bool(shutil.which("soffice") or shutil.which("libreoffice"))
UDHR = "All human beings are born free and equal in dignity and rights"

# relative path -> expected substrings (all must appear), or ("fail", reason)
EXPECT: dict[str, object] = {
    "2023-half-year-analyses-by-segment.xlsx": ["## Sheet: OS-Rev.and results 30 06 2023", "| Zone NA | 12553 | 2713 |"],
    "README-w-include.org": ["# Example Docs", "## XBRL 10-K"],
    "README-w-include.rst": ["# Example Docs", "## XBRL 10-K"],
    "README.md": ["# Real documents written by others, for parsing tests"],
    "README.org": ["# Example Docs", "layout-parser-paper.pdf"],
    "arbitrary-records.json": ["```json"],
    "codeblock.md": ["## HTML Example"],
    "csv-with-escaped-commas.csv": ["| A | A | A | A,A | A |"],
    "csv-with-line-delimiter.csv": ["| col1 | col2 | col3 |", "| g | h | i |"],
    "docx-hdrftr.docx": ["Main document"],
    "docx-shapes.docx": ["Paragraph with floating shape attached."],
    "docx-tables.docx": ["| Header Col 1 | Header Col 2 |", "| Lorem ipsum | A link example |"],
    "duplicate-paragraphs.doc": ["fail-unless-soffice", "# This document contains duplicates", "some text"],
    "eml/email-equals-attachment-filename.eml": ["# Odd filename example", "odd=file=name.txt"],
    "eml/email-inline-content-disposition.eml": ["# Testing Inline", "This is a test of inline"],
    "eml/email-no-utf8-2008-07-16.062410.eml": ["# RE: שלום", "Tamir Erez"],
    "eml/email-no-utf8-2014-03-17.111517.eml": ["# Google Account password changed", "slatest@gmail.com"],
    "eml/email-replace-mime-encodings-error-1.eml": ["45 Minute Meeting"],
    "eml/email-replace-mime-encodings-error-2.eml": ["# RE: Random Expo Expo 2023", "Did you get a chance to review"],
    "eml/email-replace-mime-encodings-error-4.eml": ["# Intellectual Property Protection for startups"],
    "eml/empty.eml": ["(no headers)"],
    "eml/fake-email-attachment.eml": ["# Fake email with attachment", "- Lots of whitespace"],
    "eml/fake-email-header.eml": ["# Test Email", "- **Cc:** Fake Email <fake-email@unstructured.io>"],
    "eml/fake-email-image-embedded.eml": ["This is a test email to use for unit tests.", "[Image: unstructured_logo.png]"],
    "eml/fake-email-utf-16-le.eml": ["# Test Email", "- Roses are red"],
    "eml/fake-email.eml": ["# Test Email", "- **To:** NotMatthew <NotMatthew@notunstructured.com>", "- Violets are blue"],
    "eml/fake-email.txt": ["Subject: Test Email"],
    "eml/mime-attach-mp3.eml": ["This is an email with an MP3 attachment.", "sample-3s.mp3"],
    "eml/mime-different-plain-html.eml": ["This is the text/html part.", "Ray Tomlinson"],
    "eml/mime-html-only.eml": ["This is a text/html part.", "Scott Fahlman"],
    "eml/mime-multi-to-cc-bcc.eml": ["- **To:** Bob <bob@example.com>, Sue <sue@example.com>", "This is a plain-text message."],
    "eml/mime-multipart-digest.eml": ["# Example Multipart Digest Email", "alice@example.com"],
    "eml/mime-no-body.eml": ["# Image Only Email", "image.jpg"],
    "eml/mime-no-subject.eml": ["This is a simple email message without a subject."],
    "eml/mime-no-to.eml": ["- **Cc:** Tom <tom@example.com>, Alice <alice@example.com>"],
    "eml/mime-word-encoded-subject.eml": ["# Simple email with ☸☿ Unicode subject"],
    "eml/simple-rfc-822.eml": ["# Example RFC 822 Email", "This is an RFC 822 email message."],
    "eml/test-invalid-date.eml": ["- **Date:** INVALID-DATE-FORMAT"],
    "emoji.xlsx": ["## Sheet: Sheet1", "🤠😅"],
    "example-10k-1p.html": ["TRANSITION REPORT PURSUANT TO SECTION 13", "Galaxy Gaming, Inc."],
    "example-list-items-multiple.docx": ["- This is simply dummy text of the printing and typesetting industry.", "  - a) The quick brown fox"],
    "example-with-scripts.html": ["# Russian Offensive Campaign Assessment, December 13"],
    "factbook-utf-16.xml": ["```xml", "<capital>Washington, DC</capital>"],
    "fake-doc-emphasized-text.docx": ["I am a bold italic bold-italic text."],
    "fake-doc.rtf": ["# My First Heading", "My first paragraph."],
    "fake-email-with-cc-and-bcc.msg": ["# Fake email with cc and bcc recipients", "This is a test email. Please ignore."],
    "fake-email.msg": ["# Test Email", "- Roses are red"],
    "fake-email.txt": ["Subject: Test Email"],
    "fake-power-point-malformed.pptx": ["<!-- slide: 1 -->", "## Test Slide"],
    "fake-power-point-many-pages.pptx": ["<!-- slide: 2 -->", "## Page 2"],
    "fake-power-point-table.pptx": ["## A Slide with a Table", "| Red | Green | Blue |"],
    "fake-text-utf-16-le.txt": ["This is a test document to use for unit tests.", "Doylestown, PA 18901"],
    "fake-text.txt": ["This is a test document to use for unit tests.", "Dogs are the best"],
    "fake.odt": ["Lorem ipsum dolor sit amet.", "| Color | Blue | Red | Green |"],
    "fake_table.docx": ["| Lorem ipsum | A Link example |", "Dolor sit amet"],
    "grid_offset_error.docx": ["Merged B1-B3"],
    "language-docs/UDHR_first_article_all.txt": ["Universal Declaration of Human Right"],
    "language-docs/eng_afr_spa.txt": [UDHR],
    "language-docs/eng_spa.xlsx": ["## Sheet: English", "## Sheet: Spanish", "Todos los seres humanos nacen libres"],
    "language-docs/eng_spa_mult.doc": [UDHR],  # a .docx saved under .doc: read as docx
    "language-docs/eng_spa_mult.epub": [UDHR],
    "language-docs/eng_spa_mult.html": [UDHR],
    "language-docs/eng_spa_mult.odt": [UDHR],
    "language-docs/eng_spa_mult.org": [UDHR],
    "language-docs/eng_spa_mult.rst": [UDHR],
    "language-docs/eng_spa_mult.txt": [UDHR],
    "language-docs/eng_spa_mult.xml": ["```xml"],
    "norwich-city.txt": ["Iwan Roberts", "Norwich City"],
    "page-breaks.docx": ["<!-- page: 2 -->", "Text on second page"],
    "pdf/a1977-backus-p21.pdf": ["<!-- page: 1 -->", "definition of new functional"],
    "pdf/all-number-table.pdf": ["1600.01"],
    "pdf/chevron-page.pdf": ["Eastern Mediterranean"],
    "pdf/embedded-images.pdf": ["HANDS-FREE"],
    "pdf/embedded-link.pdf": ["This is the link."],
    "pdf/fake-bold-sample.pdf": ["Fake Bold PDF Test Document"],
    "pdf/figure-overlay-text.pdf": ["Printed Name: Jane Doe"],
    "pdf/interface-config-guide-p93.pdf": ["Interface Configuration Guide"],
    "pdf/invalid-pdf-structure-pdfminer-one-page.pdf": ["Leadership in Cybersecurity"],
    "pdf/layout-parser-paper-fast.pdf": ["LayoutParser: A Unified Toolkit for Deep", "<!-- page: 2 -->"],
    "pdf/layout-parser-paper-with-empty-pages.pdf": ["LayoutParser: A Unified Toolkit for Deep"],
    "pdf/list-item-example.pdf": ["Module One - Introduction to Product"],
    "pdf/multi-column-2p.pdf": ["Dense Passage Retrieval for Open-Domain Question Answering"],
    "pdf/multi-column.pdf": ["Dense Passage Retrieval for Open-Domain Question Answering"],
    "pdf/negative-coords.pdf": ["Comprehensive Carbon Footprint Letter of Assurance"],
    "pdf/pdf-bad-color-space.pdf": ["2023 Environmental Report"],
    "pdf/reliance.pdf": ["<!-- page: 1 -->", "Corporate"],
    "pdf/single_table.pdf": ["<!-- page: 1 -->"],  # image only: OCR text, or a note without tesseract
    "picture.pptx": ["[Image: python-powered.png]"],
    "rotated-page-90.pdf": ["Rotated page fixture"],
    "sample-presentation.pptx": ["## This is the first content slide", "  - With a sub-bullet", "| 1 | A1 | B1 | C1 |"],
    "simple.doc": ["fail-unless-soffice", "# These are a few of my favorite things:", "- Parrots",
                   "This is my third thought."],
    "simple.docx": ["# These are a few of my favorite things:", "- Parrots"],
    "simple.json": ["```json"],
    "simple.ndjson": ["```json", "element_id"],
    "simple.odt": ["# These are a few of my favorite things:", "- Hockey"],
    "simple.pptx": ["## Things to think about", "- How much is enough?"],
    "simple.zip": ("fail", "unsupported"),
    "single-column.csv": ["| Lorem | ipsum |"],
    "single-line-object.json": ["Garden Trowel"],
    "spring-weather.html.json": ["```json"],
    "spring-weather.html.ndjson": ["News Around NOAA"],
    "stanley-cups-utf-16.csv": ["| Maple Leafs | TOR | 13 |"],
    "stanley-cups-with-emoji.csv": ["Stanley Cups"],
    "stanley-cups-with-emoji.tsv": ["Stanley Cups"],
    "stanley-cups.tsv": ["| Maple Leafs | TOR | 13 |"],
    "table-multi-row-column-cells-actual.csv": ["| Disability Category | Participants |", "| Blind | 5 | 1 | 4 |"],
    "tests-example.xls": ["## Sheet: Example Test", "What is 2+2?"],
    "umlauts-non-utf8.md": ["## können", "äöüß"],
    "umlauts-utf8.md": ["## können"],
    "unsupported/factbook.xsl": ("fail", "unsupported"),
    "vodafone.xlsx": ["## Sheet: Index", "| Quarterly revenue | Nine quarters to 30 June 2023 |"],
    "zho_md_partition.md": ["## 春节放假通知", "庆祝春节假期。", "-   一组1"],
}
# images are read by OCR (plugins/parse_image.py); expectations read off the images themselves
IMAGES = {
    "img/DA-1p.jpg": ["CREATURES", "Abomination", "We arrived in the dead of night."],
    "img/double-column-A.jpg": ["SUBCHAPTER A", "CIVIL SERVICE RULES", "Extent of the competitive service."],
    "img/embedded-images-tables.jpg": ["Data in Brief"],
    "img/english-and-korean.png": ["RULES AND INSTRUCTIONS", "Use all your accounts."],
    "img/chi_sim_image.jpeg": ["甘草黄酮", "适用人群"],
    "img/layout-parser-paper-fast.tiff": ["LayoutParser: A Unified Toolkit for Deep", "Document Image Analysis"],
    "img/layout-parser-paper-with-table.jpg": ["Table 1: Current layout detection models in the LayoutParser model zoo"],
    "img/bmp_24.bmp": ("fail", "no text"),  # three coloured triangles
    "img/example.jpg": ("fail", "no text"),  # a photo of a flower
    "img/jpn-vert.jpeg": ("fail", "no text"),  # vertical Japanese: no jpn in ocr_languages, unreadable
}
HAS_OCR = bool(shutil.which("tesseract"))
if HAS_OCR:
    EXPECT.update(IMAGES)
else:
    EXPECT.update({name: ("fail", "missing program") for name in IMAGES})

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"shared corpus not found at {CORPUS}")


def _files():
    if not CORPUS.is_dir():
        return []
    return sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*") if p.is_file())


def test_every_corpus_file_has_an_expectation():
    missing = [f for f in _files() if f not in EXPECT]
    assert not missing, f"write expectations for: {missing}"


@pytest.mark.parametrize("rel", _files())
def test_corpus_file(rel):
    path = CORPUS / rel
    expect = EXPECT.get(rel)
    assert expect is not None
    if expect[:1] == ["fail-unless-soffice"]:  # legacy binary formats go through LibreOffice
        if HAS_SOFFICE:
            md = parse(path).markdown
            for needle in expect[1:]:
                assert needle in md, f"{rel}: {needle!r} missing"
        else:
            with pytest.raises(PermanentError) as err:
                parse(path)
            assert err.value.reason == "missing program" and "LibreOffice" in err.value.message
        return
    if isinstance(expect, tuple):
        with pytest.raises(PermanentError) as err:
            parse(path)
        assert err.value.reason == expect[1] and err.value.message
        return
    doc = parse(path)
    assert doc.markdown.strip(), rel
    assert "\x00" not in doc.markdown and "(cid:" not in doc.markdown
    for needle in expect:
        assert needle in doc.markdown, f"{rel}: {needle!r} missing"
