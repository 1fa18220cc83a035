"""data_structure.md (kb-retriever convention): navigation files for agents.

One at the KB root (each project: purpose from its 概述, document count, last
update) and one in ``parsed/`` and each of its sub-folders (sub-folders
first, then files with their original format and size). Sections, in order:
``# <dir name>``, ``## Purpose``, ``## Files``, ``## Coverage``.
"""

from __future__ import annotations


FILE_NAME = "data_structure.md"
KINDS = {
    ".pdf": "PDF", ".docx": "Word", ".doc": "Word", ".odt": "OpenDocument text", ".rtf": "RTF",
    ".pptx": "PowerPoint", ".ppt": "PowerPoint", ".xlsx": "Excel", ".xls": "Excel", ".csv": "CSV",
    ".tsv": "TSV", ".html": "HTML", ".htm": "HTML", ".eml": "e-mail", ".msg": "e-mail", ".epub": "EPUB",
    ".md": "Markdown", ".txt": "text", ".json": "JSON", ".xml": "XML", ".yaml": "YAML", ".yml": "YAML",
}


def human_size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _one_line(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_folder(title: str, purpose: str, subdirs: list[tuple[str, int]], files: list[tuple[str, str, int]],
                  updated: str) -> str:
    """subdirs: (name, documents below); files: (file name, kind, size)."""
    lines = [f"# {title}", "", "## Purpose", "", _one_line(purpose), "", "## Files", ""]
    for name, count in subdirs:
        lines.append(f"- {name}/ — {count} document(s)")
    for name, kind, size in files:
        lines.append(f"- {name} — {kind}（{human_size(size)}）")
    if not subdirs and not files:
        lines.append("- (empty)")
    total = sum(c for _, c in subdirs) + len(files)
    lines += ["", "## Coverage", "", f"{total} document(s); last update {updated}.", ""]
    return "\n".join(lines)


def folder_tree(entries: list[tuple[str, str, int]]) -> dict[str, tuple[dict[str, int], list[tuple[str, str, int]]]]:
    """Folders of parsed/ from (parsed path, source ext, size) of every document.

    Returns ``folder -> ({sub-folder: documents below}, [(file, kind, size)])``
    with ``""`` for parsed/ itself; built from the manifest, so no file is
    stat'ed and a project with 10,000 documents costs milliseconds.
    """
    tree: dict[str, tuple[dict[str, int], list[tuple[str, str, int]]]] = {"": ({}, [])}
    for parsed, ext, size in sorted(entries):
        rel = parsed.removeprefix("parsed/")
        parts = rel.split("/")
        for i in range(len(parts) - 1):
            parent, child = "/".join(parts[:i]), parts[i]
            tree.setdefault(parent, ({}, []))
            tree[parent][0][child] = tree[parent][0].get(child, 0) + 1
            tree.setdefault("/".join(parts[: i + 1]), ({}, []))
        folder = "/".join(parts[:-1])
        tree.setdefault(folder, ({}, []))[1].append((parts[-1], f"{KINDS.get(ext.lower(), ext)} → Markdown", size))
    return tree


def render_root(root_name: str, projects: list[tuple[str, str, int, str]], updated: str) -> str:
    """projects: (name, purpose, documents, last update)."""
    lines = ["# " + root_name, "", "## Purpose", "",
             "Knowledge bases maintained by kbwatch: one folder per project; read its project.md first.",
             "", "## Files", ""]
    for name, purpose, count, last in projects:
        lines.append(f"- {name}/ — {_one_line(purpose, 100)}（{count} document(s), last update {last or 'never'}）")
    if not projects:
        lines.append("- (no projects yet)")
    total = sum(p[2] for p in projects)
    lines += ["", "## Coverage", "", f"{len(projects)} project(s), {total} document(s); last update {updated}.", ""]
    return "\n".join(lines)
