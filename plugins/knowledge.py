"""Stage ``knowledge``: keep the project's KNOWLEDGE.md (Agent Knowledge entry) current.

Its status is ``needs-review`` while risk findings wait for ``kbwatch review``
and ``ready`` otherwise (``draft`` before the first document); ``stale``,
``disputed`` and ``archived`` are set by people (``set_knowledge_status``) and
kept until changed. It is written
after each commit, once the batch's findings are in the journal, and
whenever a command announces a change (``kb_project_changed``: a review
decision, a rebuild, a removal).
"""

from __future__ import annotations

from kbwatch.pipeline import confine, hookimpl
from kbwatch.pipeline.formats.knowledge_md import render_knowledge
from kbwatch.pipeline.formats.manifest import session_manifest
from kbwatch.pipeline.formats.project_md import HEADINGS, session_project_md
from kbwatch.pipeline.fsutil import atomic_write, now_local
from kbwatch.pipeline.stage import RunContext, Stage


def describe(project: str, overview: str, names: list[str], language: str) -> str:
    placeholders = {h["overview_placeholder"] for h in HEADINGS.values()}
    text = " ".join(overview.split())
    if text and text not in placeholders:
        return text
    shown = ", ".join(names[:5]) + ("…" if len(names) > 5 else "")
    if language == "en":
        return f"Documents of project {project} ({len(names)}): {shown}" if names else f"Project {project} (no documents yet)"
    return f"项目 {project} 的文档（{len(names)} 个）：{shown}" if names else f"项目 {project}（尚无文档）"


# lifecycle states only a person (or an agent through set_knowledge_status) decides; ingests keep them
MANUAL_STATUSES = ("stale", "disputed", "archived")


def _current_status(project) -> str | None:
    from kbwatch.pipeline.formats.knowledge_md import read_frontmatter

    try:
        return read_frontmatter(confine.read_text(project / "KNOWLEDGE.md")).get("status")
    except OSError:
        return None


def write_knowledge(session, journal, settings) -> str:
    """Render and write KNOWLEDGE.md now; returns the status written."""
    manifest = session_manifest(session)
    pm = session_project_md(session)
    names = manifest.active_names()
    pending = len(journal.pending_findings(session.name)) if journal is not None else 0
    status = "needs-review" if pending else ("ready" if names else "draft")
    manual = _current_status(session.path)
    if manual in MANUAL_STATUSES:  # set by a person or an agent (set_knowledge_status): kept until changed
        status = manual
    opts = settings["project"]
    text = render_knowledge(
        project=session.name,
        description=describe(session.name, pm.section_text("overview"), names, pm.language),
        status=status,
        updated=now_local().strftime("%Y-%m-%d"),
        language=pm.language,
        type_=opts["type"],
        trust=opts["trust"],
        grounding=opts["grounding"],
        documents=len(names),
        pending_reviews=pending,
    )
    atomic_write(session.path / "KNOWLEDGE.md", text)
    return status


class KnowledgeStage(Stage):
    name = "knowledge"

    def run(self, ctx: RunContext) -> str | None:
        self.finish(ctx, "done", "")
        ctx.output("KNOWLEDGE.md", "updated" if (ctx.project.path / "KNOWLEDGE.md").exists() else "created")
        return None

    def refresh(self, project, journal, settings) -> str:
        """Rewrite KNOWLEDGE.md from the journal now (called after ``kbwatch journal rebuild``)."""
        from kbwatch.pipeline.project import ProjectSession

        return write_knowledge(ProjectSession(project, settings), journal, settings)

    def finish(self, ctx: RunContext, outcome: str, message: str) -> None:
        session, journal, settings = ctx.project, ctx.journal, ctx.settings
        session.after_commit("knowledge", lambda: write_knowledge(session, journal, settings))


@hookimpl
def kb_stages():
    return [KnowledgeStage()]


@hookimpl
def kb_project_changed(project, settings, journal):
    from kbwatch.pipeline.project import ProjectSession

    write_knowledge(ProjectSession(project, settings), journal, settings)
    return ["KNOWLEDGE.md"]
