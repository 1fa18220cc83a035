"""Stage ``index``: keep the search index and the data_structure.md files current.

The search index (``<state_dir>/search.sqlite3``) holds heading-aware chunks
of every parsed file with line ranges and page/slide/sheet anchors; it is
updated once per commit for the whole batch and can be rebuilt from parsed/
at any time (``kbwatch index rebuild``): it is never a source of truth. Only
the first ``[stages.index] max_chars`` characters of a document are indexed
(a warning in the run record says when a document was cut): this bounds the
memory and time a huge document costs. The navigation files
(data_structure.md at the root and in parsed/ folders, kb-retriever
convention) are refreshed after the same commit. The text comes from the
``archive`` stage through typed fields of the run context (``parsed_text``,
``parsed_parts``, ``parsed_bytes``); ``kbwatch remove`` reaches this plugin
through ``kb_document_removed``.
"""

from __future__ import annotations

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.formats.manifest import session_manifest
from kbwatch.pipeline.formats.project_md import session_project_md
from kbwatch.pipeline.stage import RunContext, Stage
from kbwatch.plugins.retrieval.navigation import index_max_chars, open_index, project_purpose, remember_project, write_folder_files, write_root_file


def _flush(session, settings) -> None:
    pending = session.cached_work("index.pending", dict)
    if not pending:
        return
    manifest = session_manifest(session)
    idx = open_index(settings)
    with idx.batch():
        for rel, prepared in pending.items():
            entry = manifest.get(rel.removeprefix("parsed/").removesuffix(".md"))
            if entry is not None and entry.get("removed"):  # `kbwatch remove` ran since it was prepared
                continue
            idx.upsert_prepared(session.name, prepared)
    pending.clear()


def _navigation(session, settings) -> None:
    folders = session.cached_work("index.folders", set)
    manifest, pm = session_manifest(session), session_project_md(session)
    sizes = session.cached("index.sizes", dict)
    write_folder_files(session.path, set(folders), manifest, project_purpose(pm, manifest), sizes)
    folders.clear()
    remember_project(session.path, pm, manifest)
    write_root_file(session.path.parent, settings)


class IndexStage(Stage):
    """Chunks and tokenises the parsed text outside the project lock (it is
    pure CPU work); the commit then stores the whole batch in one transaction."""

    name = "index"
    concurrent = True

    def able_to_run(self, ctx: RunContext) -> bool:
        return bool(ctx.parsed_path and (ctx.parsed_text or ctx.parsed_parts))

    def run(self, ctx: RunContext) -> str | None:
        from kbwatch.plugins.retrieval import document_title

        settings = ctx.settings
        rel = ctx.parsed_path
        limit = index_max_chars(settings)
        text = ctx.parsed_text
        if text is None:  # a large document: only the prefix that is indexed is joined
            text, total = _prefix(ctx.parsed_parts, limit)
        else:
            total = len(text)
        if limit and total > limit:
            ctx.diagnose("warning", f"only the first {limit:,} of {total:,} characters of {rel} are indexed "
                                    "for search ([stages.index] max_chars)")
        prepared = open_index(settings).prepare_document(rel, document_title(text, rel.rsplit("/", 1)[-1][:-3]), text)
        size = ctx.parsed_bytes
        # handed to the project at park (finish, under the project's lock): no second wait for
        # the lock here, and only a run that ended done reaches the index
        ctx.stash["index.prepared"] = (rel, prepared, size if size is not None else len(text.encode("utf-8")))
        return None

    def finish(self, ctx: RunContext, outcome, message: str) -> None:
        """Under the project's lock, when the run parks: a run that ended ``done`` hands its
        prepared text to the batch the commit stores; any other leaves nothing for the index."""
        prepared = ctx.stash.pop("index.prepared", None)
        if prepared is None or getattr(outcome, "value", outcome) != "done":
            return
        session, settings = ctx.project, ctx.settings
        rel, doc, size = prepared
        session.cached_work("index.pending", dict)[rel] = doc
        session.cached("index.sizes", dict)[rel] = size
        session.cached_work("index.folders", set).add(ctx.name.rpartition("/")[0])
        session.defer("index", lambda: _flush(session, settings))
        session.after_commit("index.navigation", lambda: _navigation(session, settings))


def _prefix(parts: list[str], limit: int | None) -> tuple[str, int]:
    """The first ``limit + 1`` characters of the concatenated ``parts`` (all without a limit)
    and the total length, without joining more than that."""
    total = sum(len(p) for p in parts)
    if not limit:
        return "".join(parts), total
    out, room = [], limit + 1
    for p in parts:
        if room <= 0:
            break
        out.append(p if len(p) <= room else p[:room])
        room -= len(out[-1])
    return "".join(out), total


@hookimpl
def kb_stages():
    return [IndexStage()]


@hookimpl
def kb_document_removed(project, name, parsed, settings):
    """``kbwatch remove``: drop the document from the search index, rewrite the navigation files."""
    from kbwatch.pipeline.formats.manifest import Manifest
    from kbwatch.pipeline.formats.project_md import ProjectMd

    open_index(settings).remove_document(project.name, parsed)
    manifest = Manifest.load(project / "manifest.json", project.name, "")
    pm = ProjectMd.load(project / "project.md", project.name, settings["project"]["language"])
    folder = name.rpartition("/")[0]
    write_folder_files(project, {folder, ""}, manifest, project_purpose(pm, manifest))
    write_root_file(project.parent, settings)
    return None


@hookimpl
def kb_project_changed(project, reason, settings):
    """The service found the project folder deleted and made again (or replaced), or runs a
    crash interrupted were recovered (their commit may have stopped before the index was
    updated): the index is brought in line with the parsed/ of the folder there now."""
    if reason not in ("replaced", "recovered"):
        return None
    open_index(settings).sync_project(project.name, project)
    if reason == "recovered":  # a commit or a `remove` cut short: the navigation files follow too
        _rewrite_navigation(project, settings)
        return ["parsed/data_structure.md"]
    return None


def _rewrite_navigation(project, settings) -> None:
    """Every ``data_structure.md`` of the project (under its file lock), then the root's."""
    from kbwatch.pipeline.config import state_dir
    from kbwatch.pipeline.project_lock import project_file_lock

    with project_file_lock(project, state_dir(settings)):
        _write_folder_files(project, settings)
    write_root_file(project.parent, settings)


def _write_folder_files(project, settings) -> None:
    """Rewrite the ``data_structure.md`` of every folder of ``parsed/`` that holds a ``.md`` file
    (a folder whose last document was removed keeps its navigation file, rewritten empty);
    call with the project's file lock held."""
    from kbwatch.pipeline.formats.manifest import Manifest
    from kbwatch.pipeline.formats.project_md import ProjectMd

    manifest = Manifest.load(project / "manifest.json", project.name, "")
    pm = ProjectMd.load(project / "project.md", project.name, settings["project"]["language"])
    folders = {p.parent.relative_to(project / "parsed").as_posix().strip(".")
               for p in (project / "parsed").rglob("*.md")}  # (rglob follows no link to a folder)
    write_folder_files(project, folders | {""}, manifest, project_purpose(pm, manifest))


@hookimpl
def kb_register_commands(cli):
    import click

    from kbwatch.pipeline.cli import open_kb, root_options

    @cli.group("index")
    def index_group():
        """The search index: a rebuildable cache of parsed/."""

    @index_group.command("rebuild")
    @click.argument("names", nargs=-1)
    @root_options
    def index_rebuild(names, root, config_file):
        """Recreate the search index (and data_structure.md files) from parsed/.

        Example: kbwatch index rebuild
        """
        from kbwatch.pipeline.config import state_dir
        from kbwatch.pipeline.project_lock import project_file_lock, say_waiting

        kb = open_kb(root, config_file, log_files=False)
        idx = open_index(kb.settings)
        for project in kb.projects(list(names) or None):
            with project_file_lock(project, state_dir(kb.settings), on_wait=say_waiting(project)):
                counts = idx.rebuild_project(project.name, project)
                _write_folder_files(project, kb.settings)
            click.echo(f"{project.name}: {counts['indexed']} document(s) indexed")
        write_root_file(kb.root, kb.settings)
        kb.close()
