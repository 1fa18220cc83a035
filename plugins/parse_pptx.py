"""Parser for PowerPoint .pptx with python-pptx (unstructured misreads bullets as titles).

Owns .pptx (and .pptm). Per slide: ``<!-- slide: N -->``, the slide title as
``## title``, then shapes in reading order (top to bottom, left to right,
groups flattened): body text with bullets at their real indent level
(``paragraph.level``), tables as Markdown tables (merged cells blank), picture
alt text as ``[Image: ...]``, chart titles, and the speaker notes as a
``> **Notes:**`` block quote. The container is checked first (zip bomb,
entities, encrypted OLE file → ``encrypted``).
"""

from __future__ import annotations


from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.errors import PermanentError
from kbwatch.pipeline.model import ParsedDocument, ParserInfo

from kbwatch.plugins.parsing.common import check_zip_container, md_table

EXTENSIONS = (".pptx", ".pptm")
_GENERIC_TITLES = {"", "powerpoint presentation", "presentation", "powerpoint-präsentation", "演示文稿", "幻灯片 1"}
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"


@hookimpl
def kb_parser_info():
    return [
        ParserInfo(
            name="pptx",
            extensions=EXTENSIONS,
            priority=100,
            description="python-pptx: slide markers, titles, bullet levels, tables, speaker notes",
        )
    ]


@hookimpl
def kb_worker_preload(settings):
    """Forked parse workers inherit these libraries imported (one import, not one per worker)."""
    return ["pptx"]


@hookimpl
def kb_parse(path, ext, settings):
    check_zip_container(path, settings, "pptx")
    from pptx import Presentation

    try:
        prs = Presentation(str(path))
    except Exception as exc:
        raise PermanentError(f"{path.name} could not be opened as .pptx: {type(exc).__name__}: {exc}", reason="corrupt")
    blocks: list[str] = []
    warnings: list[str] = []
    first_title = None
    for number, slide in enumerate(prs.slides, 1):
        blocks.append(f"<!-- slide: {number} -->")
        try:
            title, body = _slide(slide)
        except Exception as exc:  # one broken slide must not lose the others
            warnings.append(f"slide {number} could not be read: {type(exc).__name__}: {exc}")
            continue
        if title:
            blocks.append("## " + title)
            first_title = first_title or title
        blocks.extend(body)
    doc_title = first_title
    if not doc_title:
        try:
            core = (prs.core_properties.title or "").strip()
        except Exception:
            core = ""
        doc_title = core if core.lower() not in _GENERIC_TITLES else None
    return ParsedDocument(
        markdown="\n\n".join(blocks).strip() + "\n",
        parser="pptx",
        title=doc_title,
        locations="slide",
        warnings=warnings,
    )


def _flat(shapes):
    """Shapes in reading order, group shapes flattened."""
    items = []
    for shape in shapes:
        if shape.shape_type is not None and int(shape.shape_type) == 6:  # MSO_SHAPE_TYPE.GROUP
            items.extend(_flat(shape.shapes))
        else:
            items.append(shape)
    return sorted(items, key=lambda s: ((s.top or 0) // 50000, s.left or 0))


def _is_title(shape) -> bool:
    if not shape.is_placeholder:
        return False
    try:
        return int(shape.placeholder_format.type) in (1, 3)  # TITLE, CENTER_TITLE
    except Exception:
        return False


def _placeholder_type(shape) -> int | None:
    if not shape.is_placeholder:
        return None
    try:
        return int(shape.placeholder_format.type)
    except Exception:
        return None


def _slide(slide) -> tuple[str | None, list[str]]:
    title = None
    body: list[str] = []
    for shape in _flat(slide.shapes):
        ptype = _placeholder_type(shape)
        if ptype in (13, 15, 16):  # slide number, footer, date placeholders
            continue
        if _is_title(shape) and title is None and shape.has_text_frame:
            title = " ".join(shape.text_frame.text.split()) or None
            continue
        if getattr(shape, "has_table", False) and shape.has_table:
            rows = [[("" if c.is_spanned else c.text) for c in row.cells] for row in shape.table.rows]
            table = md_table(rows)
            if table:
                body.append(table)
        elif getattr(shape, "has_chart", False) and shape.has_chart:
            chart = shape.chart
            name = chart.chart_title.text_frame.text if chart.has_title else shape.name
            body.append(f"[Chart: {' '.join(name.split())}]")
        elif shape.has_text_frame:
            text = _text_frame(shape.text_frame, bulleted=ptype in (2, 7))  # BODY, OBJECT
            if text:
                body.append(text)
        else:
            alt = shape._element.xpath("./*[1]/p:cNvPr/@descr") if hasattr(shape, "_element") else []
            if alt and alt[0].strip():
                body.append(f"[Image: {' '.join(alt[0].split())}]")
    notes = _notes(slide)
    if notes:
        body.append(notes)
    return title, body


def _text_frame(frame, bulleted: bool) -> str:
    lines: list[str] = []
    for para in frame.paragraphs:
        text = " ".join("".join(run.text for run in para.runs).split()) or " ".join(para.text.split())
        if not text:
            continue
        ppr = para._p.pPr
        explicit = ppr is not None and (ppr.find(_A + "buChar") is not None or ppr.find(_A + "buAutoNum") is not None)
        none = ppr is not None and ppr.find(_A + "buNone") is not None
        if (bulleted and not none) or explicit:
            lines.append("  " * para.level + "- " + text)
        else:
            lines.append(text)
    # consecutive bullets form one list; plain paragraphs are separated by blank lines
    out: list[str] = []
    for line in lines:
        if out and line.lstrip().startswith("- ") and out[-1].split("\n")[-1].lstrip().startswith("- "):
            out[-1] += "\n" + line
        else:
            out.append(line)
    return "\n\n".join(out)


def _notes(slide) -> str:
    if not slide.has_notes_slide:
        return ""
    frame = slide.notes_slide.notes_text_frame
    if frame is None:
        return ""
    lines = [" ".join(p.text.split()) for p in frame.paragraphs]
    lines = [line for line in lines if line]
    if not lines:
        return ""
    return "> **Notes:**\n" + "\n".join("> " + line for line in lines)
