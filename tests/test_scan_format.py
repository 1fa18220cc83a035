"""Unit tests for plugins/scan_format.py."""

from pipeline.model import ParsedDocument
from plugins import scan_format


def rules(text, **opts):
    return [f.rule for f in scan_format.kb_scan(document=ParsedDocument(markdown=text), settings={"scan": opts})]


def test_long_line_and_paragraph():
    assert "format.long-line" in rules("a " * 60, max_line_chars=100)
    assert "format.long-paragraph" in rules(("word " * 30 + "\n") * 10, max_paragraph_chars=500)
    assert rules("short line\n\nanother paragraph") == []


def test_blob_run_repeat_replacement():
    assert "format.encoded-blob" in rules("img: " + "QUJD" * 2000)
    assert "format.char-run" in rules("=" * 1500)
    assert "format.repeated-line" in rules("this line is repeated again and again\n" * 60)
    assert "format.replacement-chars" in rules("ok \ufffd" * 20)


def test_defaults_do_not_fire_on_normal_text():
    text = "# Title\n\n" + "".join(f"Paragraph {i}: " + "a normal sentence with some words. " * 20 + "\n\n"
                                   for i in range(50))
    assert rules(text) == []


def test_bad_option_types_fall_back_to_defaults():
    assert rules("x" * 200, max_line_chars="oops") == []
