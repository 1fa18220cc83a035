"""Overview honesty: project.md's overview as it may be shown to a model.

The template's placeholder (``（高度总结的项目信息）``) is never presented as a
summary (left out, with a warning, until ``kbwatch rebuild`` writes one), and an
overview is stale once ``[project] stale_after_documents`` documents arrived
after it was built. Used by :mod:`kbwatch.pipeline.api` and ``kbwatch ask --batch``.
"""

from __future__ import annotations

from pathlib import Path

from kbwatch.pipeline import confine

_OVERVIEW_CACHE: dict[str, tuple[tuple, dict]] = {}


def overview_state(project: Path, settings: dict) -> dict:
    """project.md's overview as it may be shown: ``{"overview", "key_points", "built", "stale",
    "documents_since", "warning"}``.

    The template's placeholder (``（高度总结的项目信息）``) is never an overview:
    ``built`` is False and ``warning`` says so until ``kbwatch rebuild`` writes one.
    ``stale`` once ``[project] stale_after_documents`` documents (or versions)
    were ingested after the last rebuild. Cached on project.md's identity."""
    from kbwatch.pipeline.formats.project_md import HEADINGS, ProjectMd

    path = project / "project.md"
    try:
        st = path.stat()
        stamp: tuple = (st.st_ino, st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = ()
    key = str(path)
    limit = int(settings["project"].get("stale_after_documents", 0) or 0)
    hit = _OVERVIEW_CACHE.get(key)
    if hit and hit[0] == (stamp, limit):
        return hit[1]
    pm = ProjectMd.load(path, project.name, settings["project"]["language"])
    placeholders = {h["overview_placeholder"] for h in HEADINGS.values()}
    kp_placeholders = {h["key_points_placeholder"] for h in HEADINGS.values()}
    overview = "\n".join(pm.section_text("overview").strip().splitlines()).strip()
    built = bool(overview) and " ".join(overview.split()) not in placeholders
    key_points = [ln.strip()[2:].strip() if ln.strip().startswith("- ") else ln.strip()
                  for ln in pm.section_text("key_points").splitlines()
                  if ln.strip() and ln.strip() not in kp_placeholders and ln.strip() != "-"]
    since = pm.ingests_since_rebuild()
    stale = built and limit > 0 and since >= limit
    warning = None
    if not built:
        overview, key_points = "", []
        warning = (f"the project overview of {project.name} was never built, so it is left out "
                   f"(kbwatch rebuild {project.name} writes it)")
    elif stale:
        warning = (f"the project overview of {project.name} is stale: {since} document(s) arrived after it was "
                   f"built (kbwatch rebuild {project.name} refreshes it)")
    state = {"overview": overview if built else "", "key_points": key_points, "built": built, "stale": stale,
             "documents_since": since, "warning": warning, "placeholders": placeholders}
    _OVERVIEW_CACHE[key] = ((stamp, limit), state)
    return state


def vetted_project_md(project: Path, state: dict) -> str:
    """project.md's text with a placeholder overview taken out (never shown as a summary).

    Kept with the cached overview state (same project.md identity): the very same
    string each time, so the retrieval's parse cache keyed on it hits at once."""
    text = state.get("vetted")
    if text is not None:
        return text
    try:
        text = confine.read_text(project / "project.md", errors="replace")
    except OSError:
        return ""
    if not state["built"]:
        for p in state["placeholders"]:
            text = text.replace(p, "")
    state["vetted"] = text
    return text
