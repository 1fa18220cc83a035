"""Large texts are looked at a window at a time, with the same answers as a whole-text pass.

A C call over all of a 100 MB text (a regex, ``replace``, a slice) holds the GIL
for 0.1-0.6 s, several times that on a loaded machine, and the service's heartbeat
waits behind it (issue 12, Deliver 4). These check that the windowed versions in
kbwatch.pipeline.bigtext, kbwatch.pipeline.text_presence, the text parser and the
parsed-file renderer give what the whole-text ones give, that windows are what they
are handed, and that a large text is not copied to drop its final newline.
Window sizes are made small here so that the texts, and the tests, stay small.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbwatch.pipeline import bigtext, text_presence
from kbwatch.pipeline.formats.parsed import render_parsed_parts

# Markers and notes the "no text" rule sets aside, letters, and pieces of markup that
# can open or close a comment on another line.
_PIECES = ["<!-- page: 3 -->", "<!--", "-->", "*[Page 4 is a scanned image]*", "*(empty sheet)*",
           "## Sheet: Sheet1", "```", "```python", "| | |", "|---|", " ", "-", "!", "<", ">", "word", "7", "中"]


@st.composite
def _documents(draw):
    # lines shorter than half a window: the cuts fall at line breaks, as in any text that has
    # them (a single line longer than a window is cut anywhere; a note cut in half then reads
    # as text, so such a document can only be kept, never failed as "no text")
    line = st.lists(st.sampled_from(_PIECES), max_size=4).map("".join).filter(lambda l: len(l) < 32)
    lines = draw(st.lists(line, max_size=60))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n"]))


@pytest.fixture
def small_windows(monkeypatch):
    """Windows of 64 characters; a text of over 64 characters is large."""
    monkeypatch.setattr(bigtext, "LARGE_CHARS", 64)
    monkeypatch.setattr(bigtext, "WINDOW_CHARS", 64)
    monkeypatch.setattr(text_presence, "_WINDOW", 64)


@settings(max_examples=400, deadline=None)
@given(doc=_documents())
def test_the_no_text_rule_by_window_agrees_with_the_whole_text_rule(doc):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(text_presence, "_WINDOW", 64)
        windowed = text_presence.has_text(doc)
    whole = bool(doc) and not doc.isspace() and text_presence._letters_outside_markup(doc)
    assert windowed == whole, doc


@pytest.mark.parametrize("doc", [
    # a comment joins a note's line to what follows its close two lines down: not a note any more
    "\n*(empty sheet)*<!--<!--\n<!-- page: 3 --><!--\n<!-- page: 3 -->-->",
    "\n*(empty sheet)*<!--<!--\n<!-- page: 3 --><!--\n<!-- page: 3 -->\n" + "-\n" * 10,
    "*[Page 1<!-- a comment\nover two lines of the first window -->\n" + "-\n" * 40 + "]*",
    # a line longer than half a window is cut inside it, here inside the "-->" that closes
    # its comment; a letter follows
    "<!--" + "a" * 58 + "-->" + "b\n" + "-\n" * 40,
    "<!--" + "a" * 58 + "-->" + "-\n" + "-\n" * 40,
    # the window's last "<!--" stands inside a comment opened before it, whose "-->" it holds
    # ("<!-->"): nothing is left open at the cut, and the next window's word is text
    "<!-- page: 3 -->\n<!-- page: 3 --><!--<!--\n*(empty sheet)*<!-->\nword",
    "<!-- page: 3 -->\n<!-- page: 3 --><!--<!--\n*(empty sheet)*<!---->\nword",
    # and one that opens there, with nothing open before it, stays open: its "-->" overlaps it
    "<!-- page: 3 -->\n<!-- page: 3 -->\n*(empty sheet)*\n-----<!-->\nword-->\n",
])
def test_the_no_text_rule_by_window_on_lines_joined_by_comments_and_cut_comments(doc, small_windows):
    assert len(doc) > 64
    assert text_presence.has_text(doc) == text_presence._letters_outside_markup(doc)


def test_a_comment_open_across_several_windows_hides_its_letters(small_windows):
    body = "<!-- a comment\n" + "with words on many lines\n" * 20 + "-->\n"
    assert not text_presence.has_text(body + "---\n" * 30)
    assert text_presence.has_text(body + "---\n" * 30 + "x\n")
    assert text_presence.has_text("---\n" * 30 + "x\n" + body)


def test_a_large_text_is_handed_to_the_regexes_a_window_at_a_time(monkeypatch):
    seen = []
    inner = text_presence._letters_outside_lines

    def spy(text):
        seen.append(len(text))
        return inner(text)

    monkeypatch.setattr(text_presence, "_letters_outside_lines", spy)
    window = text_presence._WINDOW
    markers = "".join(f"<!-- page: {i} -->\n" for i in range(200_000))  # ~4 Mi characters, no text
    assert not text_presence.has_text(markers)
    assert max(seen) <= 2 * window and len(seen) >= len(markers) // window
    seen.clear()
    assert text_presence.has_text(markers + "the one line of text\n")
    assert max(seen) <= 2 * window
    seen.clear()
    assert text_presence.has_text("the first line\n" + markers)
    assert len(seen) == 1  # a document with text says so after its first window
    seen.clear()
    one_line = "-" * (3 * window) + "x"  # no line break to cut at
    assert text_presence.has_text(one_line) and not text_presence.has_text(one_line[:-1])
    assert max(seen) <= 2 * window


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(["\r\n", "\r", "\n", "a", "bc", "中", "\r\r\n"]), max_size=80).map("".join))
def test_newlines_normalised_by_window_as_by_whole_text_replace(text):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bigtext, "LARGE_CHARS", 8)
        mp.setattr(bigtext, "WINDOW_CHARS", 8)
        assert bigtext.normalise_newlines(text) == text.replace("\r\n", "\n").replace("\r", "\n")
        for sub in ("\r", "\r\n", "bc\r"):
            assert bigtext.contains(text, sub) == (sub in text)


def test_a_large_text_without_a_carriage_return_is_not_copied(small_windows):
    text = "line of text\n" * 40
    assert bigtext.normalise_newlines(text) is text


@pytest.mark.parametrize("body", ["text", "text\n", "text\n\n", "\ntext\n", "# Title\nbody\n", "# Title\nbody", "\n\n", ""])
def test_the_parsed_file_is_the_same_whether_the_body_keeps_its_final_newline(body):
    def rendered(b):
        return "".join(render_parsed_parts("a.md", "archive/a.md", "2026-12-05 10:00", "A", b))

    stripped = body.strip("\n")
    expected = rendered(stripped)
    assert rendered(body) == expected
    assert expected.endswith("\n") and not expected.endswith("\n\n")


def test_a_large_body_with_one_final_newline_is_written_without_a_copy():
    body = "# Title\n" + "a line of the body\n" * 100_000
    parts = render_parsed_parts("a.md", "archive/a.md", "2026-12-05 10:00", "A", body)
    assert any(p is body for p in parts)
    assert "".join(parts).endswith("a line of the body\n")


def test_the_text_parser_keeps_a_large_file_whole_and_its_parsed_file_unchanged(tmp_path):
    from kbwatch.plugins import parse_text

    text = "# Big\n\n" + "一行中文 and an English line\n" * 60_000  # over 1 Mi characters
    assert len(text) > bigtext.LARGE_CHARS
    for name, data in (("lf.md", text), ("crlf.md", text.replace("\n", "\r\n")), ("extra.md", text + "\n\n")):
        path = tmp_path / name
        path.write_bytes(data.encode("utf-8"))
        doc = parse_text.kb_parse(path=path, ext=".md", settings={})
        assert doc.markdown.strip("\n") == text.strip("\n")
        assert doc.title == "Big"
        out = "".join(render_parsed_parts(name, f"archive/{name}", "2026-12-05 10:00", "Big", doc.markdown))
        assert out.endswith("English line\n") and not out.endswith("\n\n")
