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

from kbwatch.pipeline import confine, hookimpl
from kbwatch.pipeline.config import state_dir
from kbwatch.pipeline.errors import ConfigError
from kbwatch.pipeline.formats.manifest import Manifest
from kbwatch.pipeline.formats.project_md import ProjectMd
from kbwatch.pipeline.fsutil import (atomic_write, display_path, human_minute, iso_minute, new_run_id, now_local,
                                     printable)
from kbwatch.pipeline.lazylog import logger
from kbwatch.pipeline.project_lock import project_file_lock, say_waiting


def _resolve(manifest: Manifest, doc: str, pm: ProjectMd) -> tuple[dict, bool]:
    """(entry, unfinished): the document ``doc`` names, and whether it is one an interrupted
    ``remove`` already marked removed in manifest.json but did not finish (see :func:`unfinished`)."""
    doc = doc.strip().removeprefix("./")
    candidates = [doc, doc.removeprefix("parsed/").removesuffix(".md"), os.path.splitext(doc)[0]]
    for c in candidates:
        entry = manifest.get(c)
        if entry is None:
            continue
        if not entry.get("removed"):
            return entry, False
        if unfinished(entry, pm):
            return entry, True
    raise ConfigError(f"no document {doc!r} in this project (kbwatch status / project.md list them)")


def unfinished(entry: dict, pm: ProjectMd) -> bool:
    """A removed entry whose removal was cut short: project.md, written last, still lists it
    (the check ``KnowledgeBase.recover`` makes at every start)."""
    return entry["name"] in pm.rows


def remove_document(kb, project: Path, doc: str) -> dict:
    """Remove ``doc`` holding the project's file lock for the whole change (one writer per project)."""
    with project_file_lock(project, state_dir(kb.settings), on_wait=say_waiting(project)):
        return _remove_locked(kb, project, doc)


def _remove_locked(kb, project: Path, doc: str) -> dict:
    settings = kb.settings
    manifest = Manifest.load(project / "manifest.json", project.name, iso_minute(now_local()))
    pm = ProjectMd.load(project / "project.md", project.name, settings["project"]["language"])
    entry, resumed = _resolve(manifest, doc, pm)
    outputs = []
    if not resumed:
        # manifest.json first: from here on the document is removed, and a kill leaves it listed in
        # project.md, which the next `remove` of it or the next start of the service finishes
        manifest.mark_removed(entry["name"], iso_minute(now_local()))
        atomic_write(project / "manifest.json", manifest.dumps())
        outputs.append({"path": "manifest.json", "operation": "updated"})
    hook = kb.plugins.hook
    outputs += finish_removal(project, entry, pm, settings, kb.journal, resumed, extra=lambda: [
        *hook.kb_document_removed(project=project, name=entry["name"], parsed=entry["parsed"],
                                  settings=settings, journal=kb.journal),
        *hook.kb_project_changed(project=project, reason="remove", settings=settings, journal=kb.journal)])
    record = _write_record(project, entry, outputs, resumed)
    return {"name": entry["name"], "ext": entry["ext"], "versions": len(entry["versions"]), "record": record,
            "resumed": resumed}


def finish_removal(project: Path, entry: dict, pm: ProjectMd, settings, journal, resumed: bool,
                   extra=None) -> list[dict]:
    """Everything after manifest.json of removing ``entry``, in an order a kill can be finished
    from: its findings stop counting, its parsed file goes, the plugins that keep derived files
    react (``extra``), and project.md (its row gone, a line in 更新记录) is written last."""
    name = entry["name"]
    outputs = []
    journal.supersede_findings(project.name, name)
    if _delete_parsed(project, entry["parsed"]):
        outputs.append({"path": entry["parsed"], "operation": "deleted"})
    for batch in (extra() if extra is not None else []):
        outputs += [{"path": p, "operation": "updated"} for p in batch or []]
    if name in pm.rows or not resumed:
        pm.remove_row(name)
        pm.add_log(human_minute(now_local()), "removed", file=f"{name}{entry['ext']}")
        atomic_write(project / "project.md", pm.render())
        outputs.append({"path": "project.md", "operation": "updated"})
    return outputs


def _delete_parsed(project: Path, rel: str) -> bool:
    """Delete ``parsed/…`` and the folders it leaves empty, each relative to its parent's
    descriptor, reached without following links (a link planted there is removed itself, never
    followed; a folder on the way that became a link is left alone). True if it was there."""
    path = project / rel
    try:
        with confine.folder(path.parent) as dfd:
            os.unlink(path.name, dir_fd=dfd)
    except FileNotFoundError:
        return False
    except confine.Escape as exc:
        logger.warning("{}: not deleted ({})", display_path(path), exc)
        return False
    folder = path.parent
    while folder != project / "parsed" and project / "parsed" in folder.parents:
        try:
            with confine.folder(folder.parent) as dfd:
                os.rmdir(folder.name, dir_fd=dfd)
        except OSError:  # not empty (or not a folder): it stays
            break
        folder = folder.parent
    return True


def _write_record(project: Path, entry: dict, outputs: list[dict], resumed: bool) -> dict:
    run_id = new_run_id("remove")
    name = entry["name"]
    message = f"removed {name}{entry['ext']}; {len(entry['versions'])} archived version(s) kept"
    if resumed:
        message += " (an earlier removal of it was interrupted; this one finished it)"
    record = {
        "run_id": run_id, "trigger": "manual", "status": "passed",
        "compiler": {"tool": "kbwatch", "version": _version()},
        "inputs": [{"path": entry["parsed"]}], "outputs": outputs,
        "diagnostics": [{"severity": "info", "path": entry["parsed"], "message": message}],
        "review": {"required": False, "reason": "removal"},
    }
    atomic_write(project / "runs" / f"{run_id}.json", json.dumps(record, ensure_ascii=False, indent=2) + "\n")
    return record


@hookimpl(tryfirst=True)
def kb_project_changed(project, reason, settings, journal):
    """After a crash (``reason="recovered"``): finish the removals a killed ``kbwatch remove``
    left half done (manifest.json says removed, project.md still lists the document), before the
    other plugins bring project.md, the search index and KNOWLEDGE.md in line with the manifest."""
    if reason != "recovered" or journal is None:
        return None
    with project_file_lock(project, state_dir(settings)):
        manifest = Manifest.load(project / "manifest.json", project.name, "")
        pm = ProjectMd.load(project / "project.md", project.name, settings["project"]["language"])
        done = []
        for entry in manifest.files():
            if entry.get("removed") and unfinished(entry, pm):
                outputs = finish_removal(project, entry, pm, settings, journal, resumed=True)
                _write_record(project, entry, outputs, resumed=True)
                done.append(entry["name"])
    return ["project.md"] if done else None


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
        finished = " (it finishes a removal that was interrupted)" if result["resumed"] else ""
        click.echo(printable(f"removed {result['name']}{result['ext']} from {name}{finished}; "
                             f"{result['versions']} archived version(s) kept in archive/"))
        kb.close()
