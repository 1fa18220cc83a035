"""Render ``unstructured`` elements as citable Markdown.

Owns the element → Markdown mapping used by ``parse_unstructured``:

- ``Title`` → ``#`` × (category_depth + 1), capped at 6;
- ``ListItem`` → ``- item``, indented two spaces per level of depth (depths
  are made relative to the shallowest list item of the document);
- ``Table`` → Markdown table built from ``metadata.text_as_html`` (colspan /
  rowspan expanded, pipes escaped, newlines in cells flattened); plain text if
  the HTML is missing;
- ``Image`` → ``[Image: alt text]``, never embedded;
- ``CodeSnippet``/``Formula`` → fenced block;
- ``Header``, ``Footer``, ``PageNumber``, ``PageBreak`` dropped;
- ``<!-- page: N -->`` before the first element of each page when elements
  carry ``metadata.page_number``.

The built-in ``unstructured.staging.base.elements_to_md`` is not used: it
makes every title ``#``, emits raw HTML tables and drops list markers.
"""

from __future__ import annotations

from typing import Any, Iterable

from kbwatch.plugins.parsing.common import fenced, md_table

DROP = {"Header", "Footer", "PageNumber", "PageBreak"}


def html_table_rows(html: str) -> list[list[str]]:
    """``<table>`` HTML to a grid of cell texts, spans expanded (text in the first cell)."""
    import lxml.html

    try:
        root = lxml.html.fragment_fromstring(html, create_parent="div")
    except Exception:
        return []
    grid: dict[tuple[int, int], str] = {}
    r = 0
    for tr in root.iter("tr"):
        c = 0
        for td in tr:
            if td.tag not in ("td", "th"):
                continue
            while (r, c) in grid:
                c += 1
            text = " ".join(td.text_content().split())
            try:
                rs = max(1, min(int(td.get("rowspan", 1)), 1000))
                cs = max(1, min(int(td.get("colspan", 1)), 100))
            except ValueError:
                rs = cs = 1
            for dr in range(rs):
                for dc in range(cs):
                    grid[(r + dr, c + dc)] = text if (dr, dc) == (0, 0) else ""
            c += cs
        r += 1
    if not grid:
        return []
    nrows = max(k[0] for k in grid) + 1
    ncols = max(k[1] for k in grid) + 1
    return [[grid.get((i, j), "") for j in range(ncols)] for i in range(nrows)]


def render(elements: Iterable[Any]) -> tuple[str, str | None, bool]:
    """Elements → (markdown body, title or None, whether page markers were written)."""
    elements = [e for e in elements if getattr(e, "category", "") not in DROP]
    list_depths = [
        e.metadata.category_depth or 0 for e in elements if e.category == "ListItem"
    ]
    base = min(list_depths) if list_depths else 0
    # docx: "Title" style and "Heading 1" both have depth 0; the title keeps "#", headings move down
    styled_title = any(getattr(e.metadata, "style_name", None) == "Title" for e in elements)
    blocks: list[str] = []
    title = None
    page = None
    pages = False
    prev_list = False
    for el in elements:
        cat = el.category
        md = el.metadata
        text = (el.text or "").strip()
        pn = getattr(md, "page_number", None)
        if pn is not None and pn != page:
            page = pn
            pages = True
            blocks.append(f"<!-- page: {pn} -->")
            prev_list = False
        if cat == "Table":
            rows = html_table_rows(md.text_as_html) if md.text_as_html else []
            if len(rows) > 1 and len(rows[0]) > 1:
                block = md_table(rows)
            elif rows:  # a one-row or one-column (layout) table reads better as text
                block = "\n\n".join(" ".join(c for c in row if c) for row in rows if any(row))
            else:
                block = text
        elif cat == "Image":
            alt = " ".join(text.split())
            if not alt:  # nothing a reader could cite
                continue
            block = f"[Image: {alt}]"
        elif not text:
            continue
        elif cat == "Title":
            depth = md.category_depth or 0
            if styled_title:
                depth = 0 if getattr(md, "style_name", None) == "Title" else depth + 1
            if title is None and depth == 0:
                title = " ".join(text.split())
            block = "#" * min(depth + 1, 6) + " " + " ".join(text.split())
        elif cat == "ListItem":
            depth = max(0, (md.category_depth or 0) - base)
            line = "  " * depth + "- " + " ".join(text.split())
            if prev_list:
                blocks[-1] += "\n" + line
            else:
                blocks.append(line)
            prev_list = True
            continue
        elif cat in ("CodeSnippet", "Formula"):
            block = fenced(el.text or "", "")
        else:
            block = text
        if block:
            blocks.append(block)
        prev_list = False
    return "\n\n".join(blocks).strip() + "\n", title, pages
