"""Shared by the index stage and the remove/rebuild commands: the search index
handle and the data_structure.md files."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from kbwatch.pipeline.config import stage_options, state_dir
from kbwatch.pipeline.formats.data_structure import FILE_NAME, folder_tree, render_folder, render_root
from kbwatch.pipeline.formats.manifest import Manifest
from kbwatch.pipeline.formats.project_md import HEADINGS, ProjectMd
from kbwatch.pipeline.fsutil import atomic_write, human_minute, now_local
from kbwatch.pipeline.project import discover_projects

_INDEXES: dict[str, object] = {}
_LOCK = threading.Lock()
_ROOT_LOCK = threading.Lock()


def open_index(settings: dict, readonly: bool = False):
    """The process-wide SearchIndex of this root (``<state_dir>/search.sqlite3``).

    An index file SQLite cannot use is moved aside (``*.corrupt-<stamp>``) and
    rebuilt from every project's parsed/ (kbwatch.pipeline.heal), with one warning line.
    ``readonly``: opened for reading only (a read-only knowledge base), never healed.
    """
    from kbwatch.pipeline.heal import open_healing, register_live
    from kbwatch.plugins.retrieval import SearchIndex

    path = str(state_dir(settings) / "search.sqlite3")
    if readonly:
        with _LOCK:
            idx = _INDEXES.get(path + "?ro")
            if idx is None:
                idx = _INDEXES[path + "?ro"] = SearchIndex(path, readonly=True)
            idx.max_document_chars = index_max_chars(settings)
            idx.set_cache_mb(stage_options(settings, "index")["cache_mb"])
            return idx
    with _LOCK:
        idx = _INDEXES.get(path)
        if idx is None:
            idx = _INDEXES[path] = open_healing(
                Path(path), lambda: _capped(SearchIndex(path), settings), lambda fresh: _reindex_all(fresh, settings),
                "search index",
            )
            register_live(idx)  # a running service writes it back if the state dir is deleted
        idx.max_document_chars = index_max_chars(settings)
        return idx


def index_max_chars(settings: dict) -> int | None:
    """``[stages.index] max_chars``: how much of each document is indexed (0 = all)."""
    value = stage_options(settings, "index")["max_chars"]
    return int(value) if value else None


def _capped(idx, settings: dict):
    idx.max_document_chars = index_max_chars(settings)
    idx.set_cache_mb(stage_options(settings, "index")["cache_mb"])
    return idx


def heal_index(settings: dict, reason: BaseException):
    """The index failed mid-use (e.g. "database disk image is malformed" in a query):
    move it aside, rebuild it from parsed/, return the fresh one (one warning line)."""
    from kbwatch.pipeline.heal import heal_lock, move_aside, register_live
    from kbwatch.plugins.retrieval import SearchIndex

    path = Path(state_dir(settings) / "search.sqlite3")
    with _LOCK:
        old = _INDEXES.pop(str(path), None)
        if old is not None:
            old.close()
        with heal_lock(path.parent):
            aside = move_aside(path)
            fresh = _INDEXES[str(path)] = _capped(SearchIndex(path), settings)
            summary = _reindex_all(fresh, settings)
            register_live(fresh)
    from kbwatch.pipeline.lazylog import logger

    logger.warning("search index {} could not be used by SQLite ({}): moved aside as {} and rebuilt {}",
                   path, reason, aside.name, summary)
    return fresh


def _reindex_all(idx, settings: dict) -> str:
    """Fill a fresh index from every project's parsed/ (the ``index rebuild`` path)."""
    n = 0
    for project in discover_projects(Path(settings["_root"])):
        n += idx.sync_project(project.name, project).get("indexed", 0)
    return f"from parsed/ ({n} documents)"


def close_indexes() -> None:
    with _LOCK:
        for idx in _INDEXES.values():
            idx.close()
        _INDEXES.clear()


def project_purpose(pm: ProjectMd, manifest: Manifest) -> str:
    placeholders = {h["overview_placeholder"] for h in HEADINGS.values()}
    text = " ".join(pm.section_text("overview").split())
    if text and text not in placeholders:
        return text
    names = manifest.active_names()
    return ("Documents: " + ", ".join(names[:5]) + ("…" if len(names) > 5 else "")) if names else "No documents yet."


def write_folder_files(project: Path, folders: set[str], manifest: Manifest, purpose: str,
                       sizes: dict[str, int] | None = None) -> None:
    """Rewrite parsed/<folder>/data_structure.md for the given folders and their ancestors.

    ``sizes`` maps parsed paths to byte sizes already known (kept by the
    caller across commits); the others are stat'ed once and added to it.
    """
    sizes = {} if sizes is None else sizes
    entries = []
    for rel, ext in manifest.active_paths():
        if rel not in sizes:
            try:
                sizes[rel] = os.stat(os.path.join(project, rel)).st_size
            except OSError:
                continue
        entries.append((rel, ext, sizes[rel]))
    tree = folder_tree(entries)
    todo: set[str] = set()
    for folder in folders:
        parts = [p for p in folder.split("/") if p]
        for i in range(len(parts) + 1):
            todo.add("/".join(parts[:i]))
    when = human_minute(now_local())
    for folder in sorted(todo):
        path = project / "parsed" / folder if folder else project / "parsed"
        if not path.is_dir():
            continue
        subdirs, files = tree.get(folder, ({}, []))
        title = f"{project.name}/parsed/{folder}" if folder else f"{project.name}/parsed"
        text = purpose if not folder else f"Documents of {project.name} under {folder}/."
        atomic_write(path / FILE_NAME, render_folder(title, text, sorted(subdirs.items()), files, when), fsync=False)


_SUMMARIES: dict[str, tuple[tuple, tuple[str, str, int, str]]] = {}


def _stamps(p: Path) -> tuple:
    """(inode, mtime_ns, size) of manifest.json and project.md: what a project's row depends on."""
    out = []
    for name in ("manifest.json", "project.md"):
        try:
            st = (p / name).stat()
            out.append((st.st_ino, st.st_mtime_ns, st.st_size))
        except FileNotFoundError:
            out.append(None)
    return tuple(out)


def _project_row(p: Path, settings: dict) -> tuple[str, str, int, str] | None:
    """(name, purpose, documents, last update) of a project, re-read only when its files changed."""
    stamps = _stamps(p)
    key = str(p)
    hit = _SUMMARIES.get(key)
    if hit and hit[0] == stamps:
        return hit[1]
    try:
        manifest = Manifest.load(p / "manifest.json", p.name, "")
    except Exception:
        return None
    pm = ProjectMd.load(p / "project.md", p.name, settings["project"]["language"])
    last = (manifest.head.get("last_ingest") or "").replace("T", " ")
    row = (p.name, project_purpose(pm, manifest), len(manifest.active_names()), last)
    _SUMMARIES[key] = (stamps, row)
    return row


def remember_project(p: Path, pm: ProjectMd, manifest: Manifest) -> None:
    """Record a project's row from the in-memory files a session just committed."""
    last = (manifest.head.get("last_ingest") or "").replace("T", " ")
    _SUMMARIES[str(p)] = (_stamps(p), (p.name, project_purpose(pm, manifest), len(manifest.active_names()), last))


def write_root_file(root: Path, settings: dict) -> None:
    """Rewrite <root>/data_structure.md from every project's files."""
    rows = [r for r in (_project_row(p, settings) for p in discover_projects(root)) if r is not None]
    with _ROOT_LOCK:
        atomic_write(root / FILE_NAME, render_root(root.name, rows, human_minute(now_local())), fsync=False)
