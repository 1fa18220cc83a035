"""Stage ``archive``: publish this version — the original to archive/, the text to parsed/.

The original (the run's snapshot of it, kbwatch.pipeline.intake) is hard-linked or
copied (never moved: the runner removes the source only after the commit,
which fsyncs the copy first) to ``archive/<sub>/<stem>_YYYYMMDDHHmm<ext>``, adding
seconds and then ``-2``, ``-3``… when taken (DESIGN §2). A copy left by a run
that crashed before its commit (same content, not in the manifest) is reused,
so a re-run adds no second archive file. ``parsed/<name>.md`` is written
atomically with its header comments (DESIGN §5), in parts: a large body is
never copied into one more whole-file string. A name too long to take the
timestamp is shortened for both (``kbwatch.pipeline.formats.archive_names``).
A listed document's committed text is kept aside until the new version is committed
(``kbwatch.pipeline.previous_text``): a run that does not end ``done`` puts it back.
"""

from __future__ import annotations

import os
from pathlib import Path

from kbwatch.pipeline import confine, hookimpl, previous_text
from kbwatch.pipeline.errors import PermanentError
from kbwatch.pipeline.formats.archive_names import (
    ARCHIVE_RE, NAME_MAX, NameTooLong, choose_archive_name, fit_stem, parsed_path,
)
from kbwatch.pipeline.formats.manifest import session_manifest
from kbwatch.pipeline.bigtext import LARGE_CHARS, write_parts_atomic
from kbwatch.pipeline.formats.parsed import render_parsed_parts
from kbwatch.pipeline.fsutil import copy_file, human_minute, link_or_copy, now_local
from kbwatch.pipeline.lazylog import logger
from kbwatch.pipeline.stage import RunContext, Stage


def _listing(ctx: RunContext, folder: Path) -> dict[str, tuple[str, ...]]:
    """Archived file names in ``folder`` by stem, read once per session and kept current.

    A stem's names are a tuple (56 bytes for one name; a set is 216): the service keeps
    this listing for as long as it runs, one stem per document."""
    cache = ctx.project.cached("archive.listing", dict)
    listing = cache.get(folder)
    if listing is None:
        listing = {}
        try:
            for entry in os.scandir(folder):
                m = ARCHIVE_RE.match(entry.name)
                if m:
                    listing[m.group(1)] = listing.get(m.group(1), ()) + (entry.name,)
        except FileNotFoundError:
            pass
        cache[folder] = listing
    return listing


def _reusable_copy(ctx: RunContext, folder: Path, stem: str, names: tuple[str, ...]) -> str | None:
    """An archive copy of exactly this content that no manifest version points at
    (left by a run that stopped before its commit)."""
    manifest = session_manifest(ctx.project)
    entry = manifest.get(ctx.name)
    known = {v["archived"] for v in entry["versions"]} if entry else set()
    for name in sorted(names):
        if not name.endswith(ctx.ext):
            continue
        path = folder / name
        rel = path.relative_to(ctx.project.path).as_posix()
        if rel in known:
            continue
        try:
            # never a link planted in archive/ (it would become this version's archive copy)
            if path.lstat().st_size == ctx.size and confine.sha256_hex(path, hard_links=True) == ctx.sha256:
                return rel
        except OSError:
            continue
    return None


def _parsed_rel(ctx: RunContext) -> str:
    """``parsed/<name>.md``, shortened when too long; a document recorded before names
    were shortened keeps its (fitting) full-length parsed file."""
    entry = session_manifest(ctx.project).get(ctx.name)
    legacy = f"parsed/{ctx.name}.md"
    fits = len(legacy.rpartition("/")[2].encode("utf-8", "surrogateescape")) <= NAME_MAX
    if fits and entry is not None and entry.get("parsed") == legacy:
        return legacy
    return parsed_path(ctx.name, ctx.ext)


class ArchiveStage(Stage):
    name = "archive"

    def run(self, ctx: RunContext) -> str | None:
        project = ctx.project.path
        sub, _, stem = ctx.name.rpartition("/")
        try:
            short = fit_stem(stem, ctx.ext)  # a name too long for a timestamp is shortened
        except NameTooLong as exc:
            raise PermanentError(str(exc), reason="name too long") from None
        folder = project / "archive" / sub if sub else project / "archive"
        when = now_local(ctx.settings["stages"]["archive"]["timezone"])
        listing = _listing(ctx, folder)
        names = listing.get(short, ())
        reused = _reusable_copy(ctx, folder, short, names)
        if reused:
            ctx.archived = reused
            ctx.output(reused, "unchanged")
        else:
            name = choose_archive_name(folder, short, ctx.ext, when, taken=names)
            # fsync'd with the commit, before any source leaves
            if ctx.content is not None:  # the snapshot that was hashed and parsed
                link_or_copy(ctx.content, folder / name)
            else:
                copy_file(ctx.source, folder / name)
            ctx.project.durable(folder / name)
            listing[short] = names + (name,)
            ctx.archived = (folder / name).relative_to(project).as_posix()
            ctx.output(ctx.archived, "created")
        if ctx.parsed is not None:
            parsed_rel = _parsed_rel(ctx)
            target = project / parsed_rel
            existed = target.exists()
            # the committed version's text, kept until this run is committed (or put back)
            previous = previous_text.keep(target) if existed else None
            if previous is not None:
                key = f"archive.previous:{previous}"
                ctx.stash["archive.previous"] = (previous, target)
                ctx.project.after_commit(key, lambda: _drop_previous(previous))
                # a commit that fails puts it back (unless manifest.json on disk lists this version)
                ctx.project.undo_unless_committed(key, lambda: _undo(previous, target, project, ctx.name, ctx.archived))
            parts = render_parsed_parts(
                source_name=ctx.source_rel.removeprefix("sources/"),
                archived=ctx.archived,
                parsed_at=human_minute(when),
                title=ctx.parsed.title or stem,
                body=ctx.parsed.markdown,
            )
            size = write_parts_atomic(target, parts)  # no whole-file copy of a large body
            ctx.project.durable(target)
            ctx.parsed_path = parsed_rel
            ctx.output(parsed_rel, "updated" if existed else "created")
            # for later stages (index): the file's text (small), or its parts and size (large:
            # the index takes a bounded prefix, see [stages.index] max_chars)
            if len(ctx.parsed.markdown) <= LARGE_CHARS:
                ctx.parsed_text = "".join(parts)
            ctx.parsed_parts = parts
            ctx.parsed_bytes = size
        return ctx.archived

    def finish(self, ctx: RunContext, outcome, message: str) -> None:
        """A run that will not be committed as ``done`` puts the committed text it replaced back,
        unless its version stands in the manifest anyway (a stage after ``manifest`` failed): the
        parsed text follows the manifest's latest version."""
        kept = ctx.stash.pop("archive.previous", None)
        if kept is None or getattr(outcome, "value", outcome) == "done":
            return
        entry = session_manifest(ctx.project).get(ctx.name)
        if entry and entry.get("versions") and entry["versions"][-1].get("archived") == ctx.archived:
            return  # committed with the batch; the copy is dropped after the commit
        backup, target = kept
        ctx.project.forget_undo(f"archive.previous:{backup}")
        _put_back(backup, target)


def _put_back(backup: Path, target: Path) -> None:
    try:
        previous_text.put_back(backup, target)
    except FileNotFoundError:  # its folder went away (the project folder was replaced): nothing to put right
        pass
    except OSError as exc:
        logger.warning("{}: the committed text could not be put back ({}); the next start does it",
                       target.name, exc.strerror or exc)


def _undo(backup: Path, target: Path, project: Path, name: str, archived: str | None) -> None:
    """After a failed commit: the kept text back, unless manifest.json on disk lists this run's
    version (the commit's renames stopped after it): the parsed text follows the manifest."""
    from kbwatch.pipeline.formats.manifest import Manifest
    from kbwatch.pipeline.fsutil import iso_minute

    try:
        entry = Manifest.load(project / "manifest.json", project.name, iso_minute(now_local())).get(name)
    except Exception:  # noqa: BLE001 - unreadable: it cannot list the new version
        entry = None
    if entry and entry.get("versions") and entry["versions"][-1].get("archived") == archived:
        _drop_previous(backup)
    else:
        _put_back(backup, target)


def _drop_previous(backup: Path) -> None:
    try:
        previous_text.drop(backup)
    except OSError as exc:  # the next start drops it
        logger.warning("could not remove {}: {}", backup.name, exc.strerror or exc)


@hookimpl
def kb_stages():
    return [ArchiveStage()]
