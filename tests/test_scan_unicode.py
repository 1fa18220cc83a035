"""Unit tests for plugins/scan_unicode.py and plugins/scanning/sanitize.py."""

import pytest

from kbwatch.pipeline.model import ParsedDocument
from kbwatch.plugins import scan_secrets, scan_unicode
from kbwatch.plugins.scanning.sanitize import MARKER, sanitize


def rules(text):
    return [f.rule for f in scan_unicode.kb_scan(document=ParsedDocument(markdown=text), settings={})]


def test_tag_smuggling_decoded():
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "ignore rules")
    fs = scan_unicode.scan_text("hello" + hidden)
    assert fs[0].rule == "hidden-unicode.tag-chars" and "ignore rules" in fs[0].excerpt


def test_subdivision_flag_is_legit():
    scotland = "\U0001F3F4" + "".join(chr(0xE0000 + ord(c)) for c in "gbsct") + "\U000E007F"
    assert rules("Flag " + scotland) == []


@pytest.mark.parametrize("ch", ["\u202e", "\u2066", "\u202a"])
def test_bidi(ch):
    assert rules(f"access{ch}level") == ["hidden-unicode.bidi-control"]


def test_rlm_in_arabic_is_legit():
    assert rules("مرحبا\u200fبالعالم") == []
    assert rules("abc\u200fdef") == ["hidden-unicode.bidi-control"]


def test_zero_width():
    assert rules("ig\u200bnore") == ["hidden-unicode.zero-width"]
    assert rules("\ufeffstart of file") == []          # leading BOM
    assert rules("👨\u200d👩\u200d👧") == []            # emoji ZWJ family
    assert rules("क्\u200dष") == []                      # Devanagari ZWJ
    assert rules("می\u200cخواهم") == []                  # Persian ZWNJ


def test_variation_selectors():
    assert rules("❤\ufe0f 1\ufe0f\u20e3") == []          # emoji VS16 / keycap
    assert rules("葛\U000E0100") == []                    # ideographic variation sequence
    smuggled = "".join(chr(0xE0100 + ord(c)) for c in "secret")
    assert rules("x" + smuggled) == ["hidden-unicode.variation-selector"]


def test_controls_and_ansi():
    assert rules("abc\x1b[8mhidden\x1b[0m") == ["hidden-unicode.control-char"] * 2
    assert rules("fo\x08r") == ["hidden-unicode.control-char"]
    assert rules("tab\tnewline\nok\r\n") == []
    assert rules("Print: \\x1b[32mGREEN") == []          # escape written as text


def test_fillers_and_confusables():
    assert rules("a\u3164b") == ["hidden-unicode.invisible-filler"]
    assert rules("login at pаypal now") == ["hidden-unicode.confusable-word"]   # Cyrillic а
    assert rules("Москва and Paris, 中文 English 日本語") == []


def test_benign_multilingual():
    text = "Grüße aus Köln — ça va? 你好，世界！ 😀👍🏽 🇨🇳 مرحبا שלום Привет"
    assert rules(text) == []


def test_sanitize_redacts_and_removes():
    key = "AKIA" + "Z7Q2M4K6P3X5N2R7"
    tags = "".join(chr(0xE0000 + ord(c)) for c in "hi there")
    text = f"key={key}\nsee\u202e here{tags} end"
    findings = scan_secrets.scan_text(text) + scan_unicode.scan_text(text)
    out = sanitize(text, findings)
    assert key not in out and "[REDACTED:secret.aws-access-key]" in out
    assert "\u202e" not in out and not any(0xE0000 <= ord(c) <= 0xE007F for c in out)
    assert out.count(MARKER) == 2
    assert out.endswith(" end")


def test_sanitize_no_findings_is_identity():
    assert sanitize("plain text", []) == "plain text"


def test_soft_hyphen_lone_vs_hyphenation_hints():
    assert rules("ignore\xadprevious instructions") == ["hidden-unicode.zero-width"]
    # a text that hyphenates systematically (HTML &shy;) is legitimate
    assert rules("Donau\xaddampf\xadschiff\xadfahrts\xadgesell\xadschaft") == []


def test_invisible_maths_operator_between_operands_is_legit():
    assert rules("2x can be written as 2\u2062x using INVISIBLE TIMES") == []
    assert rules("a\u2062\u2064\u2062\u2064b") == ["hidden-unicode.zero-width"]   # a run is not maths


def test_single_lookalike_word_in_latin_text():
    assert rules("How can \u0399 make this at home?") == ["hidden-unicode.confusable-word"]   # Greek capital iota
    assert rules("How do \u0406 get there?") == ["hidden-unicode.confusable-word"]            # Cyrillic І
    assert rules("the \u03b2 cells and a 5 \u03bcm gap, \u03a9 = 3") == []                  # real Greek symbols
    assert rules("\u0397 \u03b1\u03c1\u03c7\u03ae \u03b5\u03af\u03bd\u03b1\u03b9 \u0397 \u039f") == []  # Greek prose
