"""Stage ``project_md``: keep project.md's file index and update log current (DESIGN §4).

Incremental only: a new document appends a row, a new version updates its row
in place, every event (including conflicts, duplicates and failures, through
``finish``) appends one 更新记录 line. 概述 and 关键信息 are left alone; the
``rebuild`` command regenerates them.
"""

from __future__ import annotations

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.formats.archive_names import parsed_path
from kbwatch.pipeline.formats.project_md import defer_project_md_write, one_line_summary, session_project_md
from kbwatch.pipeline.fsutil import human_minute, now_local
from kbwatch.pipeline.stage import RunContext, Stage

class ProjectMdStage(Stage):
    name = "project_md"

    def able_to_run(self, ctx: RunContext) -> bool:
        return ctx.archived is not None

    def run(self, ctx: RunContext) -> str | None:
        pm = session_project_md(ctx.project)
        when = human_minute(now_local(ctx.settings["stages"]["archive"]["timezone"]))
        summary = ctx.summary or (one_line_summary(ctx.parsed.markdown) if ctx.parsed else "")
        parsed = ctx.parsed_path or parsed_path(ctx.name, ctx.ext)
        pm.upsert_row(ctx.name, parsed, ctx.archived, summary)
        pm.add_log(when, "version" if ctx.event == "version" else "new", file=ctx.source_rel.removeprefix("sources/"))
        existed = (ctx.project.path / "project.md").exists()
        defer_project_md_write(ctx.project)
        ctx.output("project.md", "updated" if existed else "created")
        ctx.stash["project_md.logged"] = True
        return None

    def finish(self, ctx: RunContext, outcome: str, message: str) -> None:
        """Log conflicts, duplicates and failures (done runs were logged by run)."""
        if outcome == "done" or ctx.stash.get("project_md.logged"):
            return
        pm = session_project_md(ctx.project)
        when = human_minute(now_local(ctx.settings["stages"]["archive"]["timezone"]))
        pm.add_log(when, outcome, file=ctx.source_rel.removeprefix("sources/"), message=message)
        defer_project_md_write(ctx.project)


@hookimpl
def kb_stages():
    return [ProjectMdStage()]


@hookimpl
def kb_project_changed(project, reason, settings, journal):
    """After a crash (``reason="recovered"``): the file index follows manifest.json again.

    A commit renames manifest.json and then project.md into place; a service killed between the
    two left a document listed in the manifest and missing from (or stale in) the file index, and
    nothing later repaired it (the index is kept incrementally). Rows are added or updated for the
    manifest's documents (one log line each, as the run would have written) and dropped for names
    it no longer lists. Nothing is written when they agree."""
    if reason != "recovered":
        return None
    from kbwatch.pipeline import confine
    from kbwatch.pipeline.config import state_dir
    from kbwatch.pipeline.formats.manifest import Manifest
    from kbwatch.pipeline.formats.project_md import ProjectMd
    from kbwatch.pipeline.fsutil import atomic_write
    from kbwatch.pipeline.project_lock import project_file_lock

    with project_file_lock(project, state_dir(settings)):
        manifest = Manifest.load(project / "manifest.json", project.name, "")
        pm = ProjectMd.load(project / "project.md", project.name, settings["project"]["language"])
        when = human_minute(now_local(settings["stages"]["archive"]["timezone"]))
        active = manifest.active_files()
        changed = False
        for entry in active:
            archived = entry["versions"][-1]["archived"] if entry["versions"] else ""
            row = pm.rows.get(entry["name"])
            if row is not None and row[1:3] == [entry["parsed"], archived]:
                continue
            try:  # never through a link planted in parsed/
                text = confine.read_text(project / entry["parsed"], errors="replace", limit=65536)
            except OSError:
                text = ""
            pm.upsert_row(entry["name"], entry["parsed"], archived, one_line_summary(text) if text else "")
            pm.add_log(when, "new" if row is None and len(entry["versions"]) <= 1 else "version",
                       file=entry["name"] + entry.get("ext", ""))
            changed = True
        for name in set(pm.rows) - {entry["name"] for entry in active}:
            pm.remove_row(name)
            changed = True
        if not changed:
            return None
        atomic_write(project / "project.md", pm.render())
    return ["project.md"]
