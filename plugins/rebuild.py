"""``kbwatch rebuild NAME`` and the optional ``rebuild`` stage: regenerate project.md.

概述, 关键信息 and 文件索引 are regenerated from all of parsed/ through
``kb_summarize`` (the built-in summariser is extractive and deterministic);
更新记录 is kept and gets one line, stamped with the project's last ingest,
and not repeated when nothing changed, so rebuilding twice with the same
inputs gives a byte-identical project.md. ``kb_project_changed(reason="rebuild")``
lets KNOWLEDGE.md's description be refreshed and ``runs/compile-<stamp>.json`` records the rebuild (a valid
compile-run record). The stage runs a rebuild once
``[stages.rebuild] every_n_ingests`` documents (or versions) were logged in
project.md since the last rebuild line.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from kbwatch.pipeline import confine, hookimpl
from kbwatch.pipeline.config import stage_options, state_dir
from kbwatch.pipeline.formats.manifest import Manifest
from kbwatch.pipeline.formats.project_md import LOG_VERBS, ProjectMd, session_project_md
from kbwatch.pipeline.fsutil import atomic_write, new_run_id
from kbwatch.pipeline.lazylog import logger
from kbwatch.pipeline.project_lock import project_file_lock, say_waiting
from kbwatch.pipeline.stage import RunContext, Stage


def rebuild_project(project: Path, settings: dict, plugins, journal) -> dict:
    """Regenerate project.md under the project's file lock; returns the compile-run record written."""
    with project_file_lock(project, state_dir(settings), on_wait=say_waiting(project)):
        return rebuild_project_locked(project, settings, plugins, journal)


def rebuild_project_locked(project: Path, settings: dict, plugins, journal) -> dict:
    """:func:`rebuild_project` for a caller that holds the project's file lock (the service's session)."""
    manifest = Manifest.load(project / "manifest.json", project.name, "")
    pm = ProjectMd.load(project / "project.md", project.name, settings["project"]["language"])
    documents, inputs = [], []
    held = journal.held_documents(project.name) if journal is not None else {}
    for entry in manifest.active_files():
        path = project / entry["parsed"]
        try:  # never through a link planted in parsed/ (it could lead to any file the service can read)
            data = confine.read_bytes(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            logger.warning("rebuild of {}: {} left out ({})", project.name, entry["parsed"], exc.strerror or exc)
            continue
        documents.append({
            "name": entry["name"], "ext": entry["ext"], "parsed": entry["parsed"],
            "archived": entry["versions"][-1]["archived"] if entry["versions"] else "",
            "text": data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n"),
            "held": held.get(entry["parsed"]),
        })
        inputs.append({"path": entry["parsed"], "sha256": hashlib.sha256(data).hexdigest()})
        del data
    result = plugins.hook.kb_summarize(project=project.name, documents=documents,
                                       settings={**settings, "project": {**settings["project"], "language": pm.language}})
    pm.set_section("overview", [result["overview"]])
    pm.set_section("key_points", [f"- {p}" for p in result["key_points"]] or ["-"])
    pm.rows = {}
    for d in documents:
        pm.upsert_row(d["name"], d["parsed"], d["archived"], result["summaries"].get(d["name"], ""))
    when = (manifest.head.get("last_ingest") or manifest.head.get("created_at") or "").replace("T", " ")
    line = "- " + when + ": " + LOG_VERBS[pm.language]["rebuild"].format(count=len(documents))
    if not pm.log or pm.log[-1] != line:
        pm.log.append(line)
    atomic_write(project / "project.md", pm.render())
    pending = len(journal.pending_findings(project.name)) if journal is not None else 0
    # KNOWLEDGE.md's description follows (the knowledge plugin reacts)
    written = [p for batch in plugins.hook.kb_project_changed(
        project=project, reason="rebuild", settings=settings, journal=journal) for p in batch or []]
    run_id = new_run_id("compile")
    record = {
        "run_id": run_id, "trigger": "manual", "status": "needs-review" if pending else "passed",
        "compiler": {"tool": "kbwatch", "version": _version()}, "inputs": inputs,
        "outputs": [{"path": p, "operation": "updated"} for p in ["project.md", *written]],
        "diagnostics": [], "review": {"required": bool(pending), "reason": f"{pending} finding(s) pending review" if pending else "no pending findings"},
        "profile": "document-first", "runtime_mode": "data", "primary_document": "project.md",
    }
    atomic_write(project / "runs" / f"{run_id}.json", json.dumps(record, ensure_ascii=False, indent=2) + "\n")
    return record


def _version() -> str:
    from kbwatch.pipeline import __version__

    return __version__


class RebuildStage(Stage):
    name = "rebuild"

    def run(self, ctx: RunContext) -> str | None:
        every = int(stage_options(ctx.settings, "rebuild")["every_n_ingests"] or 0)
        if every <= 0:
            return "disabled"
        done = session_project_md(ctx.project).ingests_since_rebuild()  # counted in the plain file
        if done < every or ctx.project.cached_work("rebuild.scheduled", lambda: [False])[0]:
            return f"{done}/{every}"
        session, settings, plugins, journal = ctx.project, ctx.settings, ctx.plugins, ctx.journal
        flag = session.cached_work("rebuild.scheduled", lambda: [False])
        flag[0] = True

        def later():
            flag[0] = False
            session.forget("file:project.md")
            rebuild_project_locked(session.path, settings, plugins, journal)  # the session holds the lock

        session.after_commit("rebuild", later)
        return "rebuild after commit"


@hookimpl
def kb_stages():
    return [RebuildStage()]


@hookimpl
def kb_register_commands(cli):
    import click

    from kbwatch.pipeline.cli import open_kb, root_options

    @cli.command("rebuild")
    @click.argument("name")
    @root_options
    def rebuild_command(name, root, config_file):
        """Regenerate project.md's summary, key points and file index from parsed/.

        Example: kbwatch rebuild 技术方案
        """
        kb = open_kb(root, config_file, log_files=False)
        record = rebuild_project(kb.project(name), kb.settings, kb.plugins, kb.journal)
        click.echo(f"{name}: project.md rebuilt from {len(record['inputs'])} document(s); runs/{record['run_id']}.json")
        kb.close()
