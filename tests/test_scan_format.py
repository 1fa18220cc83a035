"""Unit tests for plugins/scan_format.py."""

from kbwatch.pipeline.model import ParsedDocument
from kbwatch.plugins import scan_format


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


def _no_window(secret, s, n=7):
    return all(secret[i:i + n] not in s for i in range(len(secret) - n + 1))


def test_excerpts_never_show_more_than_6_chars_of_a_possible_secret():
    key = "Q7vX2mK9" + "pL4sT8wN" + "3bZ6yR1c"  # built by concatenation: no real-looking key in the repo
    blob = (key * 400)                          # one 9 600-char "word": long line, blob, paragraph
    for text, opts in ((blob, {"max_line_chars": 100, "max_blob_chars": 100, "max_paragraph_chars": 100}),
                       (("token=" + key + " tail of the line\n") * 60, {}),
                       ("x " + key + " " * 3 + "y" * 20, {"max_line_chars": 10})):
        fs = scan_format.kb_scan(document=ParsedDocument(markdown=text), settings={"scan": opts})
        assert fs
        for f in fs:
            assert _no_window(key, f.excerpt), f.excerpt
            assert "chars)" in f.excerpt


def test_excerpt_keeps_short_words_readable():
    fs = scan_format.kb_scan(document=ParsedDocument(markdown="a b cd " * 40), settings={"scan": {"max_line_chars": 50}})
    assert fs and fs[0].excerpt.startswith("a b cd a b cd")


def test_char_run_sampling_equals_regex():
    import random
    import re

    from kbwatch.plugins.scan_format import _char_runs
    rng = random.Random(7)
    for _ in range(60):
        parts = []
        while sum(map(len, parts)) < 20_000:
            r = rng.random()
            parts.append(rng.choice("ab= \n") * rng.randint(1, 3000) if r < 0.05 else
                         " " * rng.randint(1, 3) if r < 0.5 else "".join(rng.choice("ab ") for _ in range(40)))
        text = "".join(parts)
        for max_run in (10, 100, 1000):
            expected = [m.span() for m in re.finditer(r"(.)\1{%d,}" % max_run, text, re.S)]
            assert _char_runs(text, max_run) == expected
