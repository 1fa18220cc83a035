"""Golden tests for plugins/parse_text.py: encodings, tables, code blocks, headings."""

from __future__ import annotations

import pytest

from _parse_util import FIXTURES, PermanentError, parse

ZH = "技术方案：本文档描述了系统的总体架构和关键设计。"


@pytest.mark.parametrize(
    "encoding,text",
    [
        ("utf-8", ZH),
        ("utf-8-sig", ZH),
        ("utf-16", ZH),  # with BOM
        ("utf-16-le", ZH),  # no BOM, mostly CJK
        ("utf-16-be", "Plain ASCII in UTF-16 BE without a BOM."),
        ("utf-32", ZH),
        ("gbk", ZH * 3),
        ("gb18030", ZH + "𠀀"),
        ("big5", "這是一個測試文件，包含繁體中文字符。我們的資料庫系統。"),
        ("cp1252", "Café naïve — résumé, Grüße aus München."),
    ],
)
def test_encodings(tmp_path, encoding, text):
    f = tmp_path / "doc.txt"
    f.write_bytes(text.encode(encoding))
    doc = parse(f)
    assert doc.markdown.strip() == text
    assert doc.parser == "text"


def test_binary_with_text_extension_is_not_text(tmp_path):
    f = tmp_path / "photo.txt"
    f.write_bytes(bytes(range(256)) * 40)
    with pytest.raises(PermanentError) as err:
        parse(f)
    assert err.value.reason == "not text"


def test_markdown_as_is_with_title():
    doc = parse(FIXTURES / "zho_md_partition.md")
    assert "## 春节放假通知" in doc.markdown
    assert "### 标题 3" in doc.markdown
    assert "-   一组1" in doc.markdown


def test_cp1252_markdown_fixture():
    assert "können" in parse(FIXTURES / "umlauts-non-utf8.md").markdown


def test_utf16_text_fixture():
    md = parse(FIXTURES / "fake-text-utf-16-le.txt").markdown
    assert "This is a test document to use for unit tests." in md
    assert "\x00" not in md


def test_csv_ragged_pipes_and_quoted_newlines(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text('name;note;n\n"a|b";"line1\nline2";1\nshort\n', encoding="utf-8")
    md = parse(f).markdown.strip().splitlines()
    assert md[0] == "| name | note | n |"
    assert md[1] == "|---|---|---|"
    assert md[2] == "| a\\|b | line1 line2 | 1 |"
    assert md[3] == "| short |  |  |"


def test_csv_utf16_fixture():
    md = parse(FIXTURES / "stanley-cups-utf-16.csv").markdown
    assert "| Maple Leafs | TOR | 13 |" in md


def test_tsv(tmp_path):
    f = tmp_path / "t.tsv"
    f.write_text("城市\t人口\n北京\t2189\n", encoding="utf-8")
    assert parse(f).markdown.strip().splitlines() == ["| 城市 | 人口 |", "|---|---|", "| 北京 | 2189 |"]


@pytest.mark.parametrize("ext,lang", [(".json", "json"), (".ndjson", "json"), (".yaml", "yaml"), (".xml", "xml")])
def test_code_formats_fenced(tmp_path, ext, lang):
    f = tmp_path / f"d{ext}"
    body = 'key: "```"\n名称: 值' if ext == ".yaml" else '{"a": "```", "名称": "值"}'
    f.write_text(body, encoding="utf-8")
    md = parse(f).markdown
    assert md.startswith("````" + lang + "\n")
    assert body in md
    assert md.rstrip().endswith("````")


def test_rst_and_org_headings(tmp_path):
    rst = tmp_path / "a.rst"
    rst.write_text("Title\n=====\n\n.. include:: /etc/passwd\n\nSection\n-------\n\nText.\n", encoding="utf-8")
    md = parse(rst).markdown
    assert "# Title" in md and "## Section" in md
    assert "root:" not in md  # directives are never followed
    org = tmp_path / "a.org"
    org.write_text("#+TITLE: Doc\n* One\n** Two\ntext\n", encoding="utf-8")
    md = parse(org).markdown
    assert md.splitlines()[:3] == ["# Doc", "## One", "### Two"]


def test_empty_file(tmp_path):
    f = tmp_path / "empty.txt"
    f.write_bytes(b"")
    doc = parse(f)
    assert doc.markdown == "" and doc.warnings


def test_too_large(tmp_path):
    f = tmp_path / "big.txt"
    f.write_bytes(b"a" * (1024 * 1024 + 10))
    with pytest.raises(PermanentError) as err:
        parse(f, {"stages": {"parse": {"max_file_mb": 1}}})
    assert err.value.reason == "too large"


def test_a_small_csv_describing_a_huge_table_is_not_padded_to_it(tmp_path):
    """A 200,000-field header over 20,000 one-field rows (1.2 MB) describes a table of 4 billion
    cells: padding every row to the widest grew the service past 5 GB. Past PAD_CELLS only the
    header is padded; the output grows with the input, and every value is still there."""
    from kbwatch.plugins.parsing.common import PAD_CELLS

    f = tmp_path / "wide.csv"
    header = ",".join(f"c{i}" for i in range(200_000))
    f.write_text(header + "\n" + "".join(f"v{i}\n" for i in range(20_000)), encoding="utf-8")
    doc = parse(f)
    assert doc.parser == "table"
    lines = doc.markdown.splitlines()
    assert len(lines) == 2 + 20_000 and lines[2] == "| v0 |" and lines[-1] == "| v19999 |"
    assert len(doc.markdown) < 5 * f.stat().st_size
    # a table under the bound is padded as before
    small = tmp_path / "ragged.csv"
    small.write_text("a,b,c\n1\n2,3\n", encoding="utf-8")
    assert parse(small).markdown.splitlines()[2:] == ["| 1 |  |  |", "| 2 | 3 |  |"]
    assert 3 * 3 <= PAD_CELLS
