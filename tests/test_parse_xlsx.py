"""Golden tests for plugins/parse_xlsx.py."""

from __future__ import annotations

import datetime as dt
import zipfile

import pytest

from _parse_util import FIXTURES, PermanentError, parse


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "汇总"
    ws["B3"], ws["C3"], ws["D3"] = "项目", "金额", "合计"
    ws["B4"], ws["C4"], ws["D4"] = "服务器", 411.0, "=C4*2"
    ws["B5"], ws["C5"] = "a|b", 0.1 + 0.2
    ws["B6"], ws["C6"] = "日期", dt.datetime(2026, 3, 2)
    ws["B8"] = "合并单元格"
    ws.merge_cells("B8:C8")
    wb.create_sheet("Empty")
    other = wb.create_sheet("Data")
    other.append(["k", "v"])
    other.append(["x", 1])
    path = tmp_path_factory.mktemp("xlsx") / "book.xlsx"
    wb.save(path)
    # give the formula a cached value, as Excel would have written it
    patched = path.with_name("book-cached.xlsx")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(patched, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "xl/worksheets/sheet1.xml":
                data = data.replace(b"<f>C4*2</f><v></v>", b"<f>C4*2</f><v>822</v>").replace(
                    b"<f>C4*2</f><v />", b"<f>C4*2</f><v>822</v>"
                )
                assert b"<v>822</v>" in data
            dst.writestr(item, data)
    return patched


def test_xlsx_golden(book):
    doc = parse(book)
    lines = doc.markdown.splitlines()
    assert lines[0] == "## Sheet: 汇总"
    assert "| 项目 | 金额 | 合计 |" in lines  # empty row 1-2 and column A trimmed
    assert "| 服务器 | 411 | 822 |" in lines  # int, not 411.0; formula as its value
    assert "| a\\|b | 0.3 |  |" in lines
    assert "| 日期 | 2026-03-02 |  |" in lines
    assert "| 合并单元格 |  |  |" in lines
    assert "## Sheet: Empty" in lines and "## Sheet: Data" in lines
    assert "| x | 1 |" in lines
    assert doc.locations == "sheet"


def test_xls_fixture():
    md = parse(FIXTURES / "tests-example.xls").markdown
    assert "## Sheet: Example Test" in md
    assert "| MC | What is 2+2? | 4 | correct | 3 | incorrect |" in md


def test_encrypted_xlsx(book, tmp_path):
    from msoffcrypto.format.ooxml import OOXMLFile

    out = tmp_path / "locked.xlsx"
    with open(book, "rb") as src, open(out, "wb") as dst:
        OOXMLFile(src).encrypt("pw", dst)
    with pytest.raises(PermanentError) as err:
        parse(out)
    assert err.value.reason == "encrypted"
