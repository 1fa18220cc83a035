"""Golden tests for plugins/parse_unstructured.py and the element renderer."""

from __future__ import annotations

import shutil
import zipfile
from email.message import EmailMessage

import pytest

from _parse_util import FIXTURES, PermanentError, parse


@pytest.fixture(scope="module")
def report_docx(tmp_path_factory):
    import docx

    d = docx.Document()
    d.sections[0].header.paragraphs[0].text = "HEADER-TEXT"
    d.sections[0].footer.paragraphs[0].text = "FOOTER-TEXT"
    d.add_heading("技术方案", level=0)
    d.add_heading("系统架构", level=1)
    d.add_paragraph("本文档描述了系统的总体架构和关键设计。")
    d.add_heading("Details", level=2)
    d.add_paragraph("First point", style="List Bullet")
    d.add_paragraph("Nested point", style="List Bullet 2")
    t = d.add_table(rows=2, cols=3)
    for i, v in enumerate(["名称", "a|b", "多行"]):
        t.rows[0].cells[i].text = v
    for i, v in enumerate(["北京", "411", "line1\nline2"]):
        t.rows[1].cells[i].text = v
    d.add_page_break()
    d.add_paragraph("Second page text is here.")
    path = tmp_path_factory.mktemp("docx") / "report.docx"
    d.save(path)
    return path


def test_docx_golden(report_docx):
    doc = parse(report_docx)
    md = doc.markdown
    lines = md.splitlines()
    assert "# 技术方案" in lines
    assert "## 系统架构" in lines
    assert "### Details" in lines
    assert "本文档描述了系统的总体架构和关键设计。" in md
    assert "- First point" in lines and "  - Nested point" in lines
    assert "| 名称 | a\\|b | 多行 |" in lines
    assert "| 北京 | 411 | line1 line2 |" in lines
    assert "HEADER-TEXT" not in md and "FOOTER-TEXT" not in md
    assert "Second page text is here." in md
    assert doc.title == "技术方案"


def test_docx_page_markers_from_rendered_breaks():
    doc = parse(FIXTURES / "page-breaks.docx")
    md = doc.markdown
    assert doc.locations == "page"
    assert md.index("<!-- page: 1 -->") < md.index("First page") < md.index("<!-- page: 2 -->") < md.index("Text on second page")


def test_html_golden(tmp_path):
    html = (
        "<html><head><meta charset='gbk'><title>t</title><script>var secret='SCRIPT';</script></head><body>"
        "<h1>项目概述</h1><h2>范围</h2><p>正文段落。</p><ul><li>一<ul><li>二</li></ul></li></ul>"
        "<img src='x.png' alt='架构图'><table><tr><th>k|1</th><th>v</th></tr><tr><td>a<br>b</td><td>2</td></tr></table>"
        "</body></html>"
    )
    f = tmp_path / "page.html"
    f.write_bytes(html.encode("gbk"))
    md = parse(f).markdown
    lines = md.splitlines()
    assert "# 项目概述" in lines and "## 范围" in lines
    assert "- 一" in lines and "  - 二" in lines
    assert "[Image: 架构图]" in lines
    assert "| k\\|1 | v |" in lines and "| a b | 2 |" in lines
    assert "SCRIPT" not in md and "x.png" not in md


def test_eml_headers_and_attachment_not_parsed(tmp_path):
    msg = EmailMessage()
    msg["From"] = "张三 <zhang@example.com>"
    msg["To"] = "li@example.com"
    msg["Subject"] = "季度报告"
    msg["Date"] = "Mon, 02 Mar 2026 10:00:00 +0800"
    msg.set_content("请查收附件。\n\nRegards")
    msg.add_alternative("<p>请查收<b>附件</b>。</p>", subtype="html")
    msg.add_attachment(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, maintype="image", subtype="png", filename="chart.png")
    f = tmp_path / "m.eml"
    f.write_bytes(bytes(msg))
    doc = parse(f)
    md = doc.markdown
    assert md.startswith("# 季度报告\n")
    assert "- **From:** 张三 <zhang@example.com>" in md
    assert "- **To:** li@example.com" in md
    assert "- **Date:** Mon, 02 Mar 2026 10:00:00 +0800" in md
    assert "请查收附件。" in md.replace("**", "")
    assert "chart.png" in md and doc.title == "季度报告"


def test_utf16_eml_fixture():
    md = parse(FIXTURES / "fake-email-utf-16-le.eml").markdown
    assert "# Test Email" in md and "- Roses are red" in md and "\x00" not in md


def test_msg_fixture():
    md = parse(FIXTURES / "fake-email.msg").markdown
    assert "# Test Email" in md and "mrobinson@unstructured.io" in md and "- Roses are red" in md


def test_odt_and_rtf_fixtures():
    assert "| Color | Blue | Red | Green |" in parse(FIXTURES / "fake.odt").markdown
    assert "# My First Heading" in parse(FIXTURES / "fake-doc.rtf").markdown


def test_doc_without_libreoffice_names_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH without soffice, whether or not it is installed
    f = tmp_path / "old.doc"
    f.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 1024)
    with pytest.raises(PermanentError) as err:
        parse(f)
    assert err.value.reason == "missing program" and "LibreOffice" in err.value.message


def test_encrypted_docx(report_docx, tmp_path):
    from msoffcrypto.format.ooxml import OOXMLFile

    out = tmp_path / "secret.docx"
    with open(report_docx, "rb") as src, open(out, "wb") as dst:
        OOXMLFile(src).encrypt("pw", dst)
    with pytest.raises(PermanentError) as err:
        parse(out)
    assert err.value.reason == "encrypted"


def test_zip_bomb_and_entities_refused(report_docx, tmp_path):
    bomb = tmp_path / "bomb.docx"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/media/zeros.bin", b"\x00" * (64 * 1024 * 1024))
    with pytest.raises(PermanentError) as err:
        parse(bomb)
    assert err.value.reason == "too large"

    evil = tmp_path / "evil.docx"
    with zipfile.ZipFile(report_docx) as src, zipfile.ZipFile(evil, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "word/document.xml":
                data = b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;">]>' + data.split(b"?>", 1)[1]
            dst.writestr(item, data)
    with pytest.raises(PermanentError) as err:
        parse(evil)
    assert err.value.reason == "corrupt" and "entit" in err.value.message


def _with_document_xml(src_docx, out, data: bytes):
    with zipfile.ZipFile(src_docx) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            dst.writestr(item, data if item.filename == "word/document.xml" else src.read(item))
    return out


@pytest.mark.parametrize("how", ["long-comment", "utf-16", "long-pi"])
def test_entities_hidden_past_the_first_4_kb_or_in_utf16_are_refused(report_docx, tmp_path, how):
    """The prolog is read as an XML parser reads it: a long comment or processing instruction before
    the DOCTYPE, or a part in UTF-16, got past the old look at the first 4 KB for b"<!ENTITY"."""
    with zipfile.ZipFile(report_docx) as z:
        body = z.read("word/document.xml").split(b"?>", 1)[1]
    dtd = b'<!DOCTYPE d [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
    if how == "long-comment":
        data = b'<?xml version="1.0"?><!--' + b"padding " * 2000 + b"-->" + dtd + body
    elif how == "long-pi":
        data = b'<?xml version="1.0"?><?pad ' + b"x" * 20000 + b"?>" + dtd + body
    else:
        data = ('<?xml version="1.0" encoding="UTF-16"?>' + dtd.decode() + body.decode("utf-8")).encode("utf-16")
    with pytest.raises(PermanentError) as err:
        parse(_with_document_xml(report_docx, tmp_path / f"{how}.docx", data))
    assert err.value.reason == "corrupt" and "entit" in err.value.message


def test_a_megabyte_before_the_first_element_is_refused(report_docx, tmp_path):
    with zipfile.ZipFile(report_docx) as z:
        body = z.read("word/document.xml").split(b"?>", 1)[1]
    data = b'<?xml version="1.0"?><!--' + b"x" * (2 << 20) + b"-->" + body
    with pytest.raises(PermanentError) as err:
        parse(_with_document_xml(report_docx, tmp_path / "padded.docx", data))
    assert err.value.reason == "corrupt" and "before its first element" in err.value.message


def test_not_a_zip_docx(tmp_path):
    f = tmp_path / "fake.docx"
    f.write_bytes(b"this is not a word file")
    with pytest.raises(PermanentError) as err:
        parse(f)
    assert err.value.reason == "corrupt"


def test_renderer_table_spans():
    from kbwatch.plugins.parsing.rendering import html_table_rows

    rows = html_table_rows('<table><tr><td rowspan="2">a</td><td colspan="2">b</td></tr><tr><td>c</td><td>d</td></tr></table>')
    assert rows == [["a", "b", ""], ["", "c", "d"]]


@pytest.mark.skipif(not (shutil.which("soffice") or shutil.which("libreoffice")),
                    reason="LibreOffice is not installed (apt-get install libreoffice-writer-nogui)")
def test_doc_through_libreoffice(report_docx, tmp_path):
    """A legacy .doc (written here by LibreOffice from a .docx) keeps its headings and lists."""
    import subprocess

    out = tmp_path / "legacy"
    subprocess.run(["soffice", "--headless", f"-env:UserInstallation=file://{tmp_path}/lo-profile",
                    "--convert-to", "doc", "--outdir", str(out), str(report_docx)],
                   check=True, capture_output=True, timeout=180)
    doc = next(out.glob("*.doc"))
    assert doc.read_bytes()[:8] == b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # an OLE file, not a renamed docx
    md = parse(doc).markdown
    assert "# 技术方案" in md and "## 系统架构" in md and "### Details" in md
    assert "- First point" in md and "| 北京 |" in md
    assert "HEADER-TEXT" not in md and "FOOTER-TEXT" not in md
