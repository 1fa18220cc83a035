"""Stage ``project_md``: keep project.md's file index and update log current (DESIGN §4).

Incremental only: a new document appends a row, a new version updates its row
in place, every event (including conflicts, duplicates and failures, through
``finish``) appends one 更新记录 line. 概述 and 关键信息 are left alone; the
``rebuild`` command regenerates them.
"""

from __future__ import annotations

import re

from pipeline import hookimpl
from pipeline.formats.archive_names import parsed_path
from pipeline.formats.parsed import strip_header
from pipeline.formats.project_md import defer_project_md_write, session_project_md
from pipeline.fsutil import human_minute, now_local
from pipeline.stage import RunContext, Stage

SUMMARY_CHARS = 80
_SKIP = re.compile(r"^\s*(#|<!--|\||```|[-*_]{3,}\s*$|!\[)")


def one_line_summary(markdown: str, limit: int = SUMMARY_CHARS) -> str:
    """The first sentence-like line of the body (looked for in its first 64K characters),
    cut to ``limit`` characters."""
    markdown = markdown[:65536]  # a large body is not split into all its lines
    for line in strip_header(markdown).splitlines():
        if not line.strip() or _SKIP.match(line):
            continue
        text = re.sub(r"[*_`>\[\]]", "", line).strip(" -\t")
        text = re.sub(r"\s+", " ", text)
        if len(text) < 2:
            continue
        return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
    for line in strip_header(markdown).splitlines():  # a table-only document: its first data row
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.lstrip().startswith("|") else []
        cells = [c for c in cells if c and not set(c) <= set("-: ")]
        if cells:
            text = ", ".join(cells)
            return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
    return ""


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
