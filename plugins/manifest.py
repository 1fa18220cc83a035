"""Stage ``manifest``: record the version in manifest.json (DESIGN §3).

The manifest is held in memory for the project session and written once per
commit (atomically), before any source leaves sources/.
"""

from __future__ import annotations

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.formats.archive_names import parsed_path
from kbwatch.pipeline.formats.manifest import defer_manifest_write, session_manifest
from kbwatch.pipeline.fsutil import iso_minute, now_local
from kbwatch.pipeline.stage import RunContext, Stage


class ManifestStage(Stage):
    name = "manifest"

    def able_to_run(self, ctx: RunContext) -> bool:
        return ctx.archived is not None

    def run(self, ctx: RunContext) -> str | None:
        manifest = session_manifest(ctx.project)
        when = iso_minute(now_local(ctx.settings["stages"]["archive"]["timezone"]))
        existed = (ctx.project.path / "manifest.json").exists()
        event = manifest.add_version(
            ctx.name, ctx.ext, ctx.parsed_path or parsed_path(ctx.name, ctx.ext), ctx.archived, ctx.sha256, when
        )
        if event in ("new", "version"):
            ctx.event = event
        defer_manifest_write(ctx.project)
        ctx.output("manifest.json", "updated" if existed else "created")
        return event


@hookimpl
def kb_stages():
    return [ManifestStage()]
