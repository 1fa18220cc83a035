"""Golden tests for plugins/parse_pptx.py."""

from __future__ import annotations

import pytest

from _parse_util import PermanentError, parse


@pytest.fixture(scope="module")
def deck(tmp_path_factory):
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    s1 = prs.slides.add_slide(prs.slide_layouts[0])
    s1.shapes.title.text = "季度汇报"
    s1.placeholders[1].text = "2026 年第一季度"
    s2 = prs.slides.add_slide(prs.slide_layouts[1])
    s2.shapes.title.text = "进展"
    body = s2.placeholders[1].text_frame
    body.text = "完成架构设计"
    for text, level in (("数据库选型", 1), ("PostgreSQL", 2), ("上线计划", 0)):
        p = body.add_paragraph()
        p.text, p.level = text, level
    s2.notes_slide.notes_text_frame.text = "强调进度风险\nSecond line"
    s3 = prs.slides.add_slide(prs.slide_layouts[5])
    s3.shapes.title.text = "Numbers"
    table = s3.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(2)).table
    for r, row in enumerate([["Region", "Sales"], ["North|East", "411"], ["南方", "12"]]):
        for c, v in enumerate(row):
            table.cell(r, c).text = v
    path = tmp_path_factory.mktemp("pptx") / "deck.pptx"
    prs.save(path)
    return path


def test_pptx_golden(deck):
    doc = parse(deck)
    lines = doc.markdown.splitlines()
    for n in (1, 2, 3):
        assert f"<!-- slide: {n} -->" in lines
    assert "## 季度汇报" in lines and "## 进展" in lines and "## Numbers" in lines
    assert "2026 年第一季度" in lines
    assert "- 完成架构设计" in lines
    assert "  - 数据库选型" in lines
    assert "    - PostgreSQL" in lines
    assert "- 上线计划" in lines
    assert "> **Notes:**" in lines and "> 强调进度风险" in lines and "> Second line" in lines
    assert "| Region | Sales |" in lines and "| North\\|East | 411 |" in lines and "| 南方 | 12 |" in lines
    assert doc.markdown.index("<!-- slide: 2 -->") < doc.markdown.index("## 进展") < doc.markdown.index("<!-- slide: 3 -->")
    assert doc.locations == "slide" and doc.title == "季度汇报"


def test_encrypted_pptx(deck, tmp_path):
    from msoffcrypto.format.ooxml import OOXMLFile

    out = tmp_path / "locked.pptx"
    with open(deck, "rb") as src, open(out, "wb") as dst:
        OOXMLFile(src).encrypt("pw", dst)
    with pytest.raises(PermanentError) as err:
        parse(out)
    assert err.value.reason == "encrypted"
