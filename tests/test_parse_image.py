"""Golden tests for plugins/parse_image.py (images drawn here; OCR by the real tesseract)."""

from __future__ import annotations

import shutil
import struct
import zlib

import pytest

from _parse_util import PermanentError, parse

needs_tesseract = pytest.mark.skipif(not shutil.which("tesseract"),
                                     reason="tesseract is not installed (apt-get install tesseract-ocr)")
ENG = {"stages": {"parse": {"ocr_languages": "eng"}}}


def _failure(path, settings=None) -> PermanentError:
    """The PermanentError parsing ``path`` must raise."""
    with pytest.raises(PermanentError) as err:
        parse(path, settings)
    return err.value


def _page(text: str, size=(1400, 500), font_size=56):
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", size, "white")
    ImageDraw.Draw(img).text((60, size[1] // 3), text, fill="black", font=ImageFont.load_default(size=font_size))
    return img


@needs_tesseract
@pytest.mark.parametrize("fmt", ["png", "jpeg", "bmp", "webp", "gif"])
def test_each_image_format_is_read_by_ocr(tmp_path, fmt):
    path = tmp_path / f"scan.{fmt}"
    _page("Delivery note 8815").save(path)
    doc = parse(path, ENG)
    assert doc.markdown.startswith("<!-- ocr: tesseract -->")
    assert "8815" in doc.markdown and "Delivery" in doc.markdown


@needs_tesseract
def test_multi_page_tiff_gets_page_markers(tmp_path):
    path = tmp_path / "fax.tiff"
    first, second = _page("First page 1111"), _page("Second page 2222")
    first.save(path, save_all=True, append_images=[second])
    md = parse(path, ENG).markdown
    assert md.index("<!-- page: 1 -->") < md.index("1111") < md.index("<!-- page: 2 -->") < md.index("2222")


@needs_tesseract
def test_exif_orientation_is_applied_before_ocr(tmp_path):
    from PIL import Image

    # a phone photo stored sideways, with EXIF orientation 8 (rotate 90 degrees clockwise to view)
    img = _page("Rotated receipt 5150").transpose(Image.Transpose.ROTATE_270)
    exif = Image.Exif()
    exif[0x0112] = 8
    path = tmp_path / "photo.jpg"
    img.save(path, exif=exif)
    assert "5150" in parse(path, ENG).markdown


@needs_tesseract
def test_transparent_png_is_flattened_on_white(tmp_path):
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGBA", (1400, 500), (0, 0, 0, 0))  # black, fully transparent
    ImageDraw.Draw(img).text((60, 160), "Overlay label 6060", fill=(0, 0, 0, 255),
                             font=ImageFont.load_default(size=56))
    path = tmp_path / "label.png"
    img.save(path)
    assert "6060" in parse(path, ENG).markdown


@needs_tesseract
def test_an_image_without_text_fails_as_no_text(tmp_path):
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (600, 600), "red")
    ImageDraw.Draw(img).polygon([(0, 0), (600, 0), (600, 600)], fill="blue")
    path = tmp_path / "flag.png"
    img.save(path)
    err = _failure(path, ENG)
    assert err.reason == "no text" and "OCR found no text in flag.png" in err.message


def test_without_tesseract_images_fail_naming_the_program(tmp_path, monkeypatch):
    from kbwatch.plugins.parsing import ocr as _ocr

    path = tmp_path / "scan.png"
    _page("x").save(path)
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH on which there is no tesseract
    _ocr.tesseract_langs.cache_clear()
    try:
        err = _failure(path)
    finally:
        _ocr.tesseract_langs.cache_clear()
    assert err.reason == "missing program" and "tesseract is not installed" in err.message


def test_ocr_disabled_images_are_unsupported(tmp_path):
    path = tmp_path / "scan.png"
    _page("x").save(path)
    err = _failure(path, {"stages": {"parse": {"ocr": False}}})
    assert err.reason == "unsupported" and "OCR is disabled" in err.message


@needs_tesseract
def test_decompression_bomb_is_refused_before_decoding(tmp_path):
    # a valid PNG header announcing 40,000 x 40,000 pixels (1.6 G), with almost no data
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 40000, 40000, 8, 0, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(b"\x00" * 100)) + chunk(b"IEND", b""))
    path = tmp_path / "bomb.png"
    path.write_bytes(png)
    err = _failure(path, ENG)
    assert err.reason == "too large"


@needs_tesseract
def test_not_an_image(tmp_path):
    path = tmp_path / "fake.jpg"
    path.write_bytes(b"this is text with a .jpg name\n" * 20)
    err = _failure(path, ENG)
    assert err.reason == "corrupt"


@needs_tesseract
def test_noise_gives_no_text(tmp_path):
    from PIL import Image, ImageDraw

    import random

    rnd = random.Random(7)
    img = Image.new("L", (900, 300), 255)
    draw = ImageDraw.Draw(img)
    for _ in range(400):
        x, y = rnd.randrange(900), rnd.randrange(300)
        draw.line((x, y, x + rnd.randrange(-30, 30), y + rnd.randrange(-30, 30)), fill=0, width=3)
    path = tmp_path / "scribble.png"
    img.save(path)
    err = _failure(path, ENG)
    assert err.reason == "no text"


@needs_tesseract
def test_sixteen_bit_scan_is_stretched_to_eight_bits(tmp_path):
    """Ink at 3,000 and paper at 40,000 of 65,535: a plain 8-bit conversion clips both to white."""
    from PIL import Image

    grey = _page("Archive scan 4242").convert("L")
    wide = Image.new("I;16", grey.size)
    pixels = grey.get_flattened_data() if hasattr(grey, "get_flattened_data") else grey.getdata()  # Pillow >= 12.1
    wide.putdata([3000 if v < 128 else 40000 for v in pixels])
    path = tmp_path / "scan16.png"
    wide.save(path)
    assert Image.open(path).mode.startswith("I")
    assert "4242" in parse(path, ENG).markdown


@needs_tesseract
def test_tall_receipt_stays_within_tesseract_limits(tmp_path):
    """900 px wide would be enlarged 2x; 20,000 px tall must not pass tesseract's 32,767."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("L", (900, 20000), 255)
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=48)
    for i, y in enumerate(range(200, 20000, 2500)):
        draw.text((40, y), f"Item {i} total {1000 + i}", fill=0, font=font)
    path = tmp_path / "receipt.png"
    img.save(path)
    md = parse(path, ENG).markdown
    assert "1000" in md and "1007" in md


@needs_tesseract
def test_truncated_multi_page_tiff_keeps_the_pages_before_the_damage(tmp_path):
    path = tmp_path / "fax.tiff"
    _page("First page 1111").save(path, save_all=True, append_images=[_page("Second page 2222")])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 3 // 4])  # cut inside the second page's pixels
    doc = parse(path, ENG)
    assert "1111" in doc.markdown and "2222" not in doc.markdown
    assert "could not be read" in doc.markdown and "pages 2-2 of 2 could not be read" in doc.warnings[0]
    path.write_bytes(data[: len(data) // 2])  # cut inside the second page's directory entry
    doc = parse(path, ENG)
    assert "1111" in doc.markdown and "page directory is damaged" in doc.warnings[0]


@needs_tesseract
def test_chinese_image_is_read_with_chi_sim(tmp_path):
    from _parse_util import FIXTURES
    from kbwatch.plugins.parsing.ocr import tesseract_langs

    if "chi_sim" not in tesseract_langs():
        pytest.skip("tesseract has no chi_sim data (apt-get install tesseract-ocr-chi-sim)")
    md = parse(FIXTURES / "chi_sim_image.jpeg").markdown  # default languages: chi_sim+eng
    assert "甘草黄酮" in md and "适用人群" in md
    assert "甘 草" not in md  # no spaces inserted inside Chinese text


@needs_tesseract
def test_a_script_without_its_language_is_not_kept_as_text():
    """Vertical Japanese read with chi_sim+eng comes out as confident-looking garbage."""
    from _parse_util import FIXTURES

    err = _failure(FIXTURES / "jpn-vert.jpeg")
    assert err.reason == "no text" and "ocr_min_confidence" in err.message
    # with the floor off, tesseract's garbage would be published
    doc = parse(FIXTURES / "jpn-vert.jpeg", {"stages": {"parse": {"ocr_min_confidence": 0}}})
    assert doc.markdown.strip()


@needs_tesseract
def test_heic_photos_through_pillow_heif(tmp_path):
    from pillow_heif import register_heif_opener

    register_heif_opener()  # to write the test files; the parser registers it itself
    one, multi = tmp_path / "photo.heic", tmp_path / "burst.heic"
    _page("Phone photo 7373").save(one, quality=90)
    _page("First image 1212").save(multi, save_all=True, append_images=[_page("Second image 8484")], quality=90)
    assert "7373" in parse(one, ENG).markdown
    md = parse(multi, ENG).markdown
    assert md.index("<!-- page: 1 -->") < md.index("1212") < md.index("<!-- page: 2 -->") < md.index("8484")
