"""Parser for spreadsheets: .xlsx/.xlsm with openpyxl, .xls with xlrd.

Owns .xlsx .xlsm .xls. Each sheet becomes ``## Sheet: NAME`` followed by one
Markdown table (first non-empty row as header). openpyxl runs with
``read_only=True, data_only=True``: formulas appear as their cached values
(a workbook never recalculated by Excel shows them empty). Empty rows and
columns are trimmed; a merged range keeps its value in its top-left cell and
the other cells blank (read-only mode reports merged cells that way); whole
numbers are shown without ``.0``, dates as ISO dates. Sheets above
``max_table_rows`` rows are cut with a note and a warning.

Encrypted workbooks (OLE container under .xlsx, or xlrd's "encrypted") fail
with ``reason="encrypted"``; an .xls that is really a ZIP workbook is read
with openpyxl.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.errors import PermanentError
from kbwatch.pipeline.model import ParsedDocument, ParserInfo

from kbwatch.plugins.parsing.common import OLE_MAGIC, check_zip_container, head, md_table, option

EXTENSIONS = (".xlsx", ".xlsm", ".xls")


@hookimpl
def kb_parser_info():
    return [
        ParserInfo(
            name="xlsx",
            extensions=EXTENSIONS,
            priority=100,
            description="openpyxl (xlsx, values not formulas) / xlrd (xls): one '## Sheet: NAME' table per sheet",
        )
    ]


@hookimpl
def kb_worker_preload(settings):
    """Forked parse workers inherit these libraries imported (one import, not one per worker)."""
    return ["openpyxl", "xlrd"]


@hookimpl
def kb_parse(path, ext, settings):
    limit = option(settings, "max_table_rows")
    magic = head(path, 8)
    if ext == ".xls" and magic == OLE_MAGIC:
        sheets = _xls_sheets(path, limit)
    else:
        check_zip_container(path, settings, "xlsx")
        sheets = _xlsx_sheets(path, limit)
    blocks: list[str] = []
    warnings: list[str] = []
    for name, rows, cut in sheets:
        blocks.append(f"## Sheet: {name}")
        table = md_table(_trim(rows))
        blocks.append(table or "*(empty sheet)*")
        if cut:
            blocks.append(f"*(sheet cut at {limit} rows: max_table_rows)*")
            warnings.append(f"sheet {name!r} has more than {limit} rows; the rest was not parsed")
    return ParsedDocument(
        markdown="\n\n".join(blocks).strip() + "\n", parser="xlsx", title=None, locations="sheet", warnings=warnings
    )


def fmt(value) -> str:
    """One cell value as a reader expects to see it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.15g}"
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0):
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec="seconds")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return str(value).strip()


def _trim(rows: list[list[str]]) -> list[list[str]]:
    rows = [r for r in rows if any(c for c in r)]
    if not rows:
        return []
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    keep = [j for j in range(width) if any(r[j] for r in rows)]
    return [[r[j] for j in keep] for r in rows]


def _xlsx_sheets(path: Path, limit: int):
    import openpyxl

    try:
        wb = openpyxl.load_workbook(str(path), read_only=True, data_only=True)
    except MemoryError:
        raise
    except Exception as exc:
        raise PermanentError(f"{path.name} could not be opened as a workbook: {type(exc).__name__}: {exc}", reason="corrupt")
    try:
        for ws in wb.worksheets:
            rows, cut = [], False
            try:
                for row in ws.iter_rows(values_only=True):
                    if len(rows) >= limit:
                        cut = True
                        break
                    rows.append([fmt(v) for v in row])
            except MemoryError:
                raise  # the worker reports it as "ran out of memory", not as an unreadable sheet
            except Exception as exc:
                raise PermanentError(f"{path.name}: sheet {ws.title!r} is unreadable: {type(exc).__name__}: {exc}",
                                     reason="corrupt")
            yield ws.title, rows, cut
        for ws in getattr(wb, "chartsheets", []):
            yield ws.title, [], False
    finally:
        wb.close()


def _xls_sheets(path: Path, limit: int):
    import xlrd

    try:
        book = xlrd.open_workbook(str(path), on_demand=True)
    except xlrd.XLRDError as exc:
        if "encrypt" in str(exc).lower():
            raise PermanentError(f"{path.name} is password-protected", reason="encrypted")
        raise PermanentError(f"{path.name} could not be read as .xls: {exc}", reason="corrupt")
    except Exception as exc:
        raise PermanentError(f"{path.name} could not be read as .xls: {type(exc).__name__}: {exc}", reason="corrupt")
    try:
        for index in range(book.nsheets):
            sheet = book.sheet_by_index(index)
            rows, cut = [], False
            for r in range(sheet.nrows):
                if len(rows) >= limit:
                    cut = True
                    break
                row = []
                for c in range(sheet.ncols):
                    cell = sheet.cell(r, c)
                    value = cell.value
                    if cell.ctype == xlrd.XL_CELL_DATE:
                        try:
                            value = xlrd.xldate_as_datetime(value, book.datemode)
                        except Exception:
                            pass
                    elif cell.ctype == xlrd.XL_CELL_BOOLEAN:
                        value = bool(value)
                    elif cell.ctype == xlrd.XL_CELL_ERROR:
                        value = xlrd.error_text_from_code.get(value, "#ERR")
                    row.append(fmt(value))
                rows.append(row)
            yield sheet.name, rows, cut
            book.unload_sheet(index)
    finally:
        book.release_resources()
