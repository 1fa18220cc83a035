"""``kbwatch remove NAME DOC``: take a document out of the knowledge base; the archive stays.

DOC is the document's name (``sub/技术方案``), its parsed path
(``parsed/sub/技术方案.md``) or its file name (``技术方案.pdf``). The parsed
file is deleted; the manifest entry is marked ``removed`` with its versions
kept; the project.md row goes and 更新记录 gets a line; the document's
findings stop counting; then ``kb_document_removed`` and
``kb_project_changed(reason="remove")`` let the plugins that keep derived
files react (``index``: the search index and data_structure.md files;
``knowledge``: KNOWLEDGE.md); ``runs/remove-<stamp>-<id>.json`` records it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.config import state_dir
from kbwatch.pipeline.errors import ConfigError
from kbwatch.pipeline.formats.manifest import Manifest
from kbwatch.pipeline.formats.project_md import ProjectMd
from kbwatch.pipeline.fsutil import atomic_write, human_minute, iso_minute, new_run_id, now_local, printable
from kbwatch.pipeline.project_lock import project_file_lock, say_waiting


def _resolve(manifest: Manifest, doc: str) -> dict:
    doc = doc.strip().removeprefix("./")
    candidates = [doc, doc.removeprefix("parsed/").removesuffix(".md"), os.path.splitext(doc)[0]]
    for c in candidates:
        entry = manifest.get(c)
        if entry is not None and not entry.get("removed"):
            return entry
    raise ConfigError(f"no document {doc!r} in this project (kbwatch status / project.md list them)")


def remove_document(kb, project: Path, doc: str) -> dict:
    """Remove ``doc`` holding the project's file lock for the whole change (one writer per project)."""
    with project_file_lock(project, state_dir(kb.settings), on_wait=say_waiting(project)):
        return _remove_locked(kb, project, doc)


def _remove_locked(kb, project: Path, doc: str) -> dict:
    settings = kb.settings
    manifest = Manifest.load(project / "manifest.json", project.name, iso_minute(now_local()))
    entry = _resolve(manifest, doc)
    name = entry["name"]
    manifest.mark_removed(name, iso_minute(now_local()))
    outputs = []
    parsed = project / entry["parsed"]
    if parsed.exists():
        parsed.unlink()
        outputs.append({"path": entry["parsed"], "operation": "deleted"})
        folder = parsed.parent
        while folder != project / "parsed" and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent
    pm = ProjectMd.load(project / "project.md", project.name, settings["project"]["language"])
    pm.remove_row(name)
    pm.add_log(human_minute(now_local()), "removed", file=f"{name}{entry['ext']}")
    atomic_write(project / "manifest.json", manifest.dumps())
    atomic_write(project / "project.md", pm.render())
    outputs += [{"path": "manifest.json", "operation": "updated"}, {"path": "project.md", "operation": "updated"}]
    kb.journal.supersede_findings(project.name, name)
    hook = kb.plugins.hook
    for batch in [*hook.kb_document_removed(project=project, name=name, parsed=entry["parsed"],
                                            settings=settings, journal=kb.journal),
                  *hook.kb_project_changed(project=project, reason="remove", settings=settings, journal=kb.journal)]:
        outputs += [{"path": p, "operation": "updated"} for p in batch or []]
    run_id = new_run_id("remove")
    record = {
        "run_id": run_id, "trigger": "manual", "status": "passed",
        "compiler": {"tool": "kbwatch", "version": _version()},
        "inputs": [{"path": entry["parsed"]}], "outputs": outputs,
        "diagnostics": [{"severity": "info", "path": entry["parsed"],
                         "message": f"removed {name}{entry['ext']}; {len(entry['versions'])} archived version(s) kept"}],
        "review": {"required": False, "reason": "removal"},
    }
    atomic_write(project / "runs" / f"{run_id}.json", json.dumps(record, ensure_ascii=False, indent=2) + "\n")
    return {"name": name, "ext": entry["ext"], "versions": len(entry["versions"]), "record": record}


def _version() -> str:
    from kbwatch.pipeline import __version__

    return __version__


@hookimpl
def kb_register_commands(cli):
    import click

    from kbwatch.pipeline.cli import open_kb, root_options

    @cli.command("remove")
    @click.argument("name")
    @click.argument("doc")
    @root_options
    def remove_command(name, doc, root, config_file):
        """Remove document DOC from project NAME (parsed, index, project.md); archive kept.

        Example: kbwatch remove 技术方案 需求文档
        """
        kb = open_kb(root, config_file, log_files=False)
        result = remove_document(kb, kb.project(name), doc)
        click.echo(printable(f"removed {result['name']}{result['ext']} from {name}; "
                             f"{result['versions']} archived version(s) kept in archive/"))
        kb.close()
