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
