"""Stage ``conflict``: the cheap preflight checks before any parsing.

- Two files in one sources/ folder with the same name and different
  extensions are both refused (``conflict``), until one is renamed.
- A file whose name is already in the manifest with another extension is
  refused (``conflict``), until it is renamed or the old document removed.
- A file whose shortened parsed name (see ``kbwatch.pipeline.formats.archive_names``)
  is already another document's is refused (``conflict``): names ending in
  ``~<8 hex>`` are the only ones that can meet that way.
- Names that differ only in how their characters are encoded (``café`` with
  a composed ``é``, U+00E9, and with ``e`` + U+0301: macOS writes the one,
  Windows and Linux tools the other) look identical everywhere they are shown:
  two such files in one folder are both refused, and a file whose name is such
  a twin of a document already in the manifest is refused, until renamed.
- A file whose parsed path (``parsed/X.md``) a folder needs (``sources/X.md/``), or that
  lies in a folder whose parsed path is another document's file, is refused (``conflict``):
  the folder keeps its name.
- A file named ``data_structure.*`` is refused: that name is kbwatch's
  navigation file in every parsed/ folder.
- A file whose SHA-256 equals the latest archived version of its name is a
  ``duplicate``: no version is added and the source is removed.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from pathlib import Path

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.errors import Outcome, StopRun
from kbwatch.pipeline.formats.archive_names import SHORTENED_RE, NameTooLong, parsed_path
from kbwatch.pipeline.formats.manifest import session_manifest
from kbwatch.pipeline.sources import is_ignored, split_name
from kbwatch.pipeline.stage import RunContext, Stage


RESERVED_NAME = "data_structure"  # parsed/**/data_structure.md are navigation files


def _nfc(text: str) -> str:
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def _twins_in_folder(ctx: RunContext, stem: str) -> list[str]:
    """Files in the source's folder whose stem is ``stem`` written with other code points."""
    if stem.isascii():
        return []
    by_stem = _siblings(ctx)
    twins = _listing(ctx)[2].get(_nfc(stem), ())
    return sorted(n for other in twins if other != stem for n in by_stem.get(other, ()))


def _manifest_twin(ctx: RunContext, manifest) -> dict | None:
    """The document whose name is ``ctx.name`` written with other code points, if any.

    The index (NFC form -> names, non-ASCII names only) is built once per manifest
    the session loads and kept current as names pass this stage; a name in it is
    confirmed against the manifest (a run that failed later left no document)."""
    if ctx.name.isascii():
        return None
    cache = ctx.project.cached("conflict.nfc", dict)
    if cache.get("manifest") is not manifest:
        index: dict[str, set[str]] = {}
        for name in manifest.names():
            if not name.isascii():
                index.setdefault(_nfc(name), set()).add(name)
        cache["manifest"], cache["index"] = manifest, index
    names = cache["index"].setdefault(_nfc(ctx.name), set())
    twin = None
    for other in sorted(names):
        if other != ctx.name:
            entry = manifest.get(other)
            if entry is not None and not entry.get("removed"):
                twin = entry
                break
    names.add(ctx.name)
    return twin


def _siblings(ctx: RunContext) -> dict[str, list[str]]:
    """stem -> file names in the source's folder (cached per folder mtime)."""
    return _listing(ctx)[1]


def _listing(ctx: RunContext) -> tuple[int, dict[str, list[str]], dict[str, list[str]]]:
    """(the folder's mtime, stem -> file names, NFC form -> the non-ASCII stems written so)."""
    folder = ctx.source.parent
    try:
        mtime = os.stat(folder).st_mtime_ns
    except FileNotFoundError:
        return 0, {}, {}
    cache = ctx.project.cached("conflict.listing", dict)
    hit = cache.get(folder)
    if hit and hit[0] == mtime:
        return hit
    patterns = ctx.settings["ignore"]["patterns"]
    by_stem: dict[str, list[str]] = {}
    for entry in os.scandir(folder):
        if is_ignored(entry.name, patterns) or not entry.is_file(follow_symlinks=False):
            continue
        stem, _ = split_name(entry.name)
        by_stem.setdefault(stem, []).append(entry.name)
    by_nfc: dict[str, list[str]] = {}
    for stem in by_stem:
        if not stem.isascii():
            by_nfc.setdefault(_nfc(stem), []).append(stem)
    hit = cache[folder] = (mtime, by_stem, by_nfc)
    return hit


def _refuse_taken_parsed_name(ctx: RunContext, manifest, parsed: str) -> None:
    """Refuse a name whose (shortened) parsed path another document already has."""
    if not SHORTENED_RE.search(parsed.removesuffix(".md")):
        return
    for other in manifest.active_files():
        if other["parsed"] == parsed and other["name"] != ctx.name:
            raise StopRun(
                Outcome.CONFLICT,
                f"{ctx.filename} would become {parsed}, which already holds the document "
                f"{other['name']!r}; rename {ctx.filename}",
                blocked_by=[parsed],
            )


def _mode(path: Path) -> int:
    """``path``'s file type bits, the link itself (a link is no folder or file here); 0 when absent."""
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def _folder_clash(ctx: RunContext, own: str) -> str | None:
    """Why this file cannot have its parsed path because a folder needs it, or its folder's parsed
    path is another document's file, else None. ``sub.txt`` becomes ``parsed/sub.md`` and
    ``sources/sub.md/x.md`` needs a folder ``parsed/sub.md/``: whichever came second failed
    at its commit as a "file system error", was retried five times and given up, and left its
    archive copy behind. The folder is kept: a file that would take its name is refused.
    ``own`` is this file's parsed path."""
    folder = own.removeprefix("parsed/")
    if stat.S_ISDIR(_mode(ctx.project.path / own)) or stat.S_ISDIR(_mode(ctx.source.parent / folder.rsplit("/", 1)[-1])):
        return (f"{ctx.filename} would become {own}, which is the folder of the documents in sources/{folder}/; "
                f"rename {ctx.filename} (or that folder)")
    parts = ctx.name.split("/")[:-1]
    for i, part in enumerate(parts):
        if part.endswith(".md") and stat.S_ISREG(_mode(ctx.project.path / "parsed" / "/".join(parts[:i + 1]))):
            taken = "/".join(parts[:i + 1])
            return (f"{ctx.filename} is in the folder sources/{taken}/, but parsed/{taken} is the document "
                    f"{taken[:-3]!r}; rename the folder (or remove that document)")
    return None


class ConflictStage(Stage):
    name = "conflict"

    def run(self, ctx: RunContext) -> str | None:
        stem = ctx.name.rsplit("/", 1)[-1]
        if stem == RESERVED_NAME:
            raise StopRun(
                Outcome.CONFLICT,
                f"the name {RESERVED_NAME!r} is reserved for kbwatch's navigation files; rename {ctx.filename}",
            )
        others = [n for n in _siblings(ctx).get(stem, []) if n != ctx.filename and split_name(n)[1] != ctx.ext]
        if others:
            folder = str(Path(ctx.source_rel).parent)
            blocked = [f"{folder}/{n}" for n in others]
            names = ", ".join(sorted(others))
            raise StopRun(
                Outcome.CONFLICT,
                f"{ctx.filename} and {names} share the name {stem!r} and would both become "
                f"parsed/{ctx.name}.md; rename one of them",
                blocked_by=blocked,
            )
        twins = _twins_in_folder(ctx, stem)
        if twins:
            folder = str(Path(ctx.source_rel).parent)
            raise StopRun(
                Outcome.CONFLICT,
                f"{ctx.filename} and {', '.join(twins)} look the same but are written with different "
                "Unicode characters (composed and decomposed accents); rename one of them",
                blocked_by=[f"{folder}/{n}" for n in twins],
            )
        try:
            parsed = parsed_path(ctx.name, ctx.ext)
        except NameTooLong:
            parsed = None  # the archive stage reports it
        clash = _folder_clash(ctx, parsed) if parsed else None
        if clash:
            raise StopRun(Outcome.CONFLICT, clash)
        manifest = session_manifest(ctx.project)
        if parsed:
            _refuse_taken_parsed_name(ctx, manifest, parsed)
        twin = _manifest_twin(ctx, manifest)
        if twin is not None:
            raise StopRun(
                Outcome.CONFLICT,
                f"{ctx.filename} looks the same as the document {twin['name']!r} already in the knowledge base "
                "but is written with different Unicode characters (composed and decomposed accents); "
                f"rename {ctx.filename}, or save it under the document's own name",
                blocked_by=[twin["parsed"]],
            )
        entry = manifest.get(ctx.name)
        if entry is not None and not entry.get("removed"):
            if entry["ext"].lower() != ctx.ext.lower():
                raise StopRun(
                    Outcome.CONFLICT,
                    f"{ctx.name}{entry['ext']} is already in the knowledge base under the name "
                    f"{ctx.name!r}; rename {ctx.filename} (or `kbwatch remove` the old document)",
                    blocked_by=[entry["parsed"]],
                )
            latest = entry["versions"][-1] if entry["versions"] else None
            if latest and latest["hash"] == f"sha256:{ctx.sha256}":
                ctx.archived = latest["archived"]
                raise StopRun(Outcome.DUPLICATE, f"identical to {latest['archived']}; no version added")
        return None


@hookimpl
def kb_stages():
    return [ConflictStage()]
