"""Chunker: line ranges (1-based, in the file on disk), headings, anchors."""

from kbwatch.plugins.retrieval import chunk_markdown, document_title

PARSED = """<!-- source: 技术方案.pdf -->
<!-- archived: archive/技术方案_202602181725.pdf -->
<!-- parsed_at: 2026-02-18 17:25 -->

# 技术方案
<!-- page: 1 -->
概述段落，介绍网关。

## 架构
网关负责鉴权。
<!-- page: 2 -->
限流使用令牌桶。

## Sheet: Summary
| 指标 | 值 |
|---|---|
| QPS | 1000 |

<!-- slide: 4 -->
第四张幻灯片的内容。
"""


def lines_of(text, c):
    return text.split("\n")[c.start_line - 1 : c.end_line]


def test_header_comments_are_not_content():
    chunks = chunk_markdown(PARSED)
    assert chunks[0].start_line == 5  # "# 技术方案"
    assert all("source:" not in c.text and "parsed_at" not in c.text for c in chunks)


def test_line_ranges_match_the_file():
    chunks = chunk_markdown(PARSED)
    for c in chunks:
        assert "\n".join(lines_of(PARSED, c)) == c.text
        assert c.start_line <= c.end_line
    # ranges do not overlap and go forward
    for a, b in zip(chunks, chunks[1:]):
        assert a.end_line < b.start_line


def test_headings_and_anchors():
    chunks = chunk_markdown(PARSED)
    by_first = {c.text.split("\n")[0]: c for c in chunks}
    intro = by_first["# 技术方案"]
    assert intro.heading == "技术方案" and intro.anchor == "page 1"
    arch = by_first["## 架构"]
    assert arch.heading == "技术方案 > 架构"
    assert arch.anchor == "pages 1-2"  # crosses a page marker
    sheet = by_first["## Sheet: Summary"]
    assert sheet.anchor == "sheet Summary"
    assert "QPS" in sheet.text
    slide = next(c for c in chunks if "第四张" in c.text)
    assert slide.anchor == "slide 4"
    assert slide.cite("parsed/技术方案.md") == f"parsed/技术方案.md#L{slide.start_line}-L{slide.end_line} (slide 4)"


def test_heading_only_prefix_stays_with_first_section():
    text = "# Title\n## Intro\nhello world\n"
    chunks = chunk_markdown(text)
    assert len(chunks) == 1 and chunks[0].start_line == 1 and chunks[0].end_line == 3
    assert chunks[0].heading == "Title > Intro"


def test_long_section_split_at_paragraphs():
    paras = [f"paragraph {i} " + "word " * 60 for i in range(20)]
    text = "# Doc\n\n" + "\n\n".join(paras) + "\n"
    chunks = chunk_markdown(text, max_chars=800, min_chars=100)
    assert len(chunks) > 3
    for c in chunks:
        assert len(c.text) <= 800 or "\n" not in c.text
        assert "\n".join(lines_of(text, c)) == c.text
        assert c.heading == "Doc"
    covered = set()
    for c in chunks:
        covered.update(range(c.start_line, c.end_line + 1))
    content = {i + 1 for i, ln in enumerate(text.split("\n")) if ln.strip()}
    assert content <= covered


def test_headings_in_code_fences_ignored():
    text = "# Doc\nintro\n```\n# not a heading\n```\nafter\n"
    chunks = chunk_markdown(text)
    assert len(chunks) == 1
    assert chunks[0].heading == "Doc"


def test_page_marker_is_a_soft_boundary_for_long_text():
    text = "# D\n<!-- page: 1 -->\n" + "a " * 200 + "\n<!-- page: 2 -->\n" + "b " * 200 + "\n"
    chunks = chunk_markdown(text, min_chars=100)
    assert [c.anchor for c in chunks] == ["page 1", "page 2"]


def test_index_text_drops_markers_and_title():
    c = chunk_markdown(PARSED)[0]
    assert "page:" not in c.index_text
    assert document_title(PARSED) == "技术方案"
    assert document_title("no heading", "fallback") == "fallback"


def test_crlf_and_empty():
    assert chunk_markdown("") == []
    chunks = chunk_markdown("# T\r\nline one\r\n")
    assert chunks[0].text == "# T\nline one"
