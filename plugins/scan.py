"""Stage ``scan``: risk-scan the parsed text before anything is published.

Every ``kb_scan`` scanner contributes findings. Findings never block a
document: the run goes on to archive it, the run record carries the
findings, and the project's KNOWLEDGE.md turns ``needs-review`` until
``kbwatch review`` decides. With ``[stages.scan] redact`` (the default) the
text published to parsed/ has secrets replaced by ``[REDACTED:<rule>]`` and
tag/bidi characters removed; archive/ keeps the original. Only the TOML
config (``allow_rules``, ``allow_fingerprints``) and review decisions can
allowlist; nothing inside a document can.

The file's name (its path under sources/, extension included) is scanned too,
by the same scanners in a call of its own (:func:`name_text`): it is published
in the manifest, project.md, KNOWLEDGE.md and every citation. Its findings have
``line`` 0 and are reviewed like the text's; the name itself is never changed
(it is how the document is addressed).
"""

from __future__ import annotations

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.bigtext import LARGE_CHARS, newline_bounds, windows
from kbwatch.pipeline.formats.parsed import body_line_offset
from kbwatch.pipeline.model import Finding, ParsedDocument, location
from kbwatch.pipeline.reviews import load_decisions
from kbwatch.pipeline.stage import RunContext, Stage
from kbwatch.plugins.scanning.sanitize import mask_values, redacted_values, sanitize
from kbwatch.plugins.scanning import allowed, group_findings, scan_options, scrub_findings
from kbwatch.plugins.scanning.ahead import announce, prepared


# rules that judge the whole document: reported once, whichever window saw them first
DOCUMENT_RULES = frozenset({"format.repeated-line", "format.replacement-chars", "format.oversized",
                            "format.scanner-error"})


# texts longer than this are scanned in the runner's compute workers (RunContext.compute)
OFFLOAD_CHARS = 256 * 1024


def run_scanners(plugins, document, settings, compute=None, name: str | None = None, ahead=None) -> list:
    """All findings of all scanners, minus what the config allowlists, in text order.

    A text over ``LARGE_CHARS`` is scanned in ~1 MB windows (see :func:`_scan_windows`).
    With ``compute`` (a pool of worker processes: ``call(fn, *args)``, ``size``), a text
    over ``OFFLOAD_CHARS`` is scanned there, up to ``compute.size`` windows at once;
    the findings are the same.

    With ``name`` (the file's path under sources/, extension included) the name is
    scanned too (:func:`name_text`); its findings come first, with ``line`` 0 and
    ``column``/``offset`` counting characters of the name (:func:`in_name`).

    ``ahead``: ``(batches, name batches)`` these scanners gave for this very document and
    name in a compute worker (:mod:`kbwatch.plugins.scanning.ahead`), used instead of scanning.
    """
    opts = scan_options(settings)
    text = document.markdown or ""
    if ahead is not None:
        batches = list(ahead[0])
    elif len(text) > LARGE_CHARS:
        batches = [_scan_windows(plugins, document, text, settings, compute)]
    elif compute is not None and len(text) > OFFLOAD_CHARS:
        batches = scan_elsewhere(compute, plugins, document, settings)
    else:
        batches = call_scanners(plugins, document, settings)
    if name is not None:  # a scan of its own: the name in front of the text changed the text's excerpts
        shown = name_text(name)
        named = ahead[1] if ahead is not None else call_scanners(plugins, ParsedDocument(markdown=shown), settings)
        batches += [_name_findings(batch, len(name), len(shown)) for batch in named]
    findings = []
    for batch in batches:
        for f in batch or []:
            if allowed(opts, f):  # the same rule the scanners apply (kbwatch.plugins.scanning)
                continue
            findings.append(f)
    findings.sort(key=lambda f: (f.line != 0, f.offset, f.rule))
    return scrub_findings(findings)


# separators a file's name uses for spaces: ``ignore_all_previous-instructions.txt`` reads as words
_NAME_SEPARATORS = str.maketrans({c: " " for c in "_+.-~/\\\n\r\t"})


def name_text(name: str) -> str:
    """What a file's name is scanned as (DESIGN §8 scans text "before anything is published",
    and the name is published: manifest, project.md, KNOWLEDGE.md, every citation). The name
    (line breaks in it read as spaces), and when it has separators a second line with them
    as spaces. Both lines have the name's length, so a column is the same character in either."""
    plain = name.replace("\n", " ").replace("\r", " ")
    spoken = name.translate(_NAME_SEPARATORS)
    return plain if spoken == plain else f"{plain}\n{spoken}"


def in_name(finding: Finding) -> bool:
    """A finding in the file's name rather than its text (``line`` 0)."""
    return finding.line == 0


def _name_findings(batch, name_len: int, width: int) -> list:
    """The findings of a scan of :func:`name_text` (``width`` characters, for a name of
    ``name_len``), with ``line`` 0 and the column in the name. One on the second line that the
    first also has is dropped, as is one across the two lines; format findings (the shape of a
    "document" that is one short line) say nothing of the file."""
    out, seen = [], set()
    for f in batch or []:
        if f.kind == "format" and f.rule != "format.scanner-error":
            continue
        end = f.offset + f.length
        if f.offset < name_len and end <= name_len:
            column = f.offset
        elif name_len < f.offset and end <= width:
            column = f.offset - name_len - 1
        else:
            continue
        if (f.rule, column) in seen:
            continue
        seen.add((f.rule, column))
        f.line, f.column, f.offset = 0, column + 1, column
        out.append(f)
    return out


def call_scanners(plugins, document, settings) -> list[list]:
    """Every ``kb_scan`` implementation, each guarded (issue 15, isolation).

    The implementations are called one by one in pluggy's order, as the hook call would;
    an exception in one becomes a ``format.scanner-error`` finding (severity low) for
    this document and the other scanners' findings stand. Neither the finding nor the
    log line carries the exception's message (it may quote the document's text): only
    the scanner's name, the exception type and the code location.
    """
    kwargs = {"document": document, "settings": settings}
    out = []
    for impl in reversed(plugins.hook.kb_scan.get_hookimpls()):
        if impl.hookwrapper or getattr(impl, "wrapper", False):
            continue
        try:
            out.append(impl.function(*[kwargs[a] for a in impl.argnames]) or [])
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - any scanner bug is isolated to a finding
            out.append([scanner_error(impl.plugin_name, exc)])
    return out


def scanner_error(scanner: str, exc: BaseException) -> Finding:
    """The finding that stands for a scanner that raised: kind ``format``, severity ``low``."""
    import traceback

    from kbwatch.pipeline.lazylog import logger

    where = ""
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        where = f" at {last.filename.rsplit('/', 1)[-1]}:{last.lineno}"
    short = scanner.removesuffix(".py").replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[-1]
    logger.warning("scanner {} failed: {}{} (its findings for this document are missing)",
                   short, type(exc).__name__, where)
    text = f"scanner {short} failed: {type(exc).__name__}{where}"
    return Finding(kind="format", rule="format.scanner-error", severity="low", line=1, column=1, offset=0,
                   excerpt=text, length=0, match=f"{short}:{type(exc).__name__}", message=text)


def scan_in_worker(document, settings) -> tuple[list[list], list[tuple[str, str]]]:
    """In a compute worker: :func:`call_scanners` with the plugins these settings load, and
    the ``(level, message)`` of what was logged meanwhile at WARNING or above (a scanner that
    failed), for the service to log in its own log file (the worker writes none)."""
    from kbwatch.pipeline.parsing import worker_plugins

    said = _worker_said()
    said.clear()
    try:
        return call_scanners(worker_plugins(settings), document, settings), list(said)
    finally:
        said.clear()


_SAID: list[tuple[str, str]] | None = None  # a compute worker's warnings of the task it runs


def _worker_said() -> list[tuple[str, str]]:
    """The list a loguru sink added once per worker process fills with WARNING-or-above
    messages (adding a sink costs ~8 ms: once per task made a small text's scan 4x dearer)."""
    global _SAID
    if _SAID is None:
        from kbwatch.pipeline.lazylog import logger

        said: list[tuple[str, str]] = []
        logger.add(lambda m: said.append((m.record["level"].name, m.record["message"])),
                   level="WARNING", format="{message}", catch=True)
        _SAID = said
    return _SAID


def trim_edges(document: ParsedDocument) -> ParsedDocument:
    """The document the scan stage scans: its text without blank lines at either end (a copy only
    when there are some: parsers of large texts return them stripped)."""
    start, end = newline_bounds(document.markdown)
    if start or end < len(document.markdown):
        document.markdown = document.markdown[start:end]
    return document


def scanner_names(plugins) -> tuple[str, ...]:
    """The ``kb_scan`` implementations :func:`call_scanners` calls, by plugin name, in that order."""
    return tuple(impl.plugin_name for impl in reversed(plugins.hook.kb_scan.get_hookimpls())
                 if not (impl.hookwrapper or getattr(impl, "wrapper", False)))


def scan_files(batch, settings) -> tuple[tuple[str, ...], list[tuple], list[tuple[str, str]]]:
    """In a compute worker (:mod:`kbwatch.plugins.scanning.ahead`): each ``(source path, name
    under sources/)`` of ``batch`` taken as a run takes it (``intake.take``: opened once, no link
    followed, confined to the root, copied into this worker's private folder), parsed as the
    parse stage parses a plain-text file and scanned as :class:`ScanStage` scans it, text and
    name. Returns this worker's scanners (:func:`scanner_names`), ``(digest, batches, name
    batches)`` for each file it could read and parse (the others are left to their runs), and
    what was logged meanwhile at WARNING or above."""
    import tempfile
    from pathlib import Path

    from kbwatch.pipeline import confine, intake
    from kbwatch.pipeline.fsutil import display_path
    from kbwatch.pipeline.parsing import choose_parser, isolated, parse_document, worker_plugins
    from kbwatch.pipeline.sources import split_name
    from kbwatch.plugins.scanning.ahead import MAX_BYTES, digest

    plugins = worker_plugins(settings)
    if settings.get("_root"):
        confine.register_root(Path(settings["_root"]))
    folder = Path(tempfile.gettempdir()) / "scan-ahead"  # the worker's private folder (kbwatch.pipeline.workers)
    said = _worker_said()
    said.clear()
    out = []

    def small(size: int) -> None:
        if size > MAX_BYTES or size == 0:
            raise ValueError("left to its run")

    try:
        for source, rel in batch:
            name, ext = split_name(display_path(rel))  # as the run names it (RunContext.name, .ext)
            info = choose_parser(plugins, ext)
            if info is None or isolated(info, settings):
                continue
            try:
                taken = intake.take(Path(source), folder, check=small)
            except (OSError, ValueError, confine.Escape, intake.NotRegular, intake.Changed):
                continue
            try:
                doc = parse_document(plugins, taken.snapshot, ext, settings, size=taken.size)  # as the parse stage
            except Exception:  # noqa: BLE001 - the run parses it again and says what went wrong
                continue
            finally:
                intake.discard(folder, keep_folder=True, only=taken.snapshot)
            trim_edges(doc)  # as ScanStage.run does
            shown = name_text(name + ext)
            out.append((digest(shown, doc), call_scanners(plugins, doc, settings),
                        call_scanners(plugins, ParsedDocument(markdown=shown), settings)))
        return scanner_names(plugins), out, list(said)
    finally:
        said.clear()


def scan_elsewhere(compute, plugins, document, settings) -> list[list]:
    """:func:`call_scanners` in a compute worker; here when the worker failed (crashed,
    out of memory), with a warning. The service shutting down propagates."""
    from kbwatch.pipeline.lazylog import logger

    from kbwatch.pipeline.errors import PermanentError

    try:
        batches, said = compute.call(scan_in_worker, document, settings)
    except PermanentError as exc:
        logger.warning("a scan worker failed ({}); scanning this text in the service instead", exc.message)
        return call_scanners(plugins, document, settings)
    for level, message in said:
        logger.log(level, "{} (in a compute worker)", message)
    return batches


def _window_batches(plugins, document, text: str, settings, compute):
    """``(window, batches)`` for each window of ``text``, in text order. With ``compute``,
    up to ``compute.size`` windows are scanned at once in its workers and at most one more
    is cut ahead, so the copies in flight stay bounded."""
    def piece(w):
        return ParsedDocument(
            markdown=text[w.scan_start:w.scan_end], parser=document.parser, title=document.title,
            locations=document.locations,
            metadata={**document.metadata, "scan_window": {"offset": w.scan_start, "document_chars": len(text)}},
        )

    if compute is None:
        for w in windows(text):
            yield w, call_scanners(plugins, piece(w), settings)
        return
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    slots = max(1, compute.size)
    pending: deque = deque()
    with ThreadPoolExecutor(max_workers=slots, thread_name_prefix="kbwatch-scan") as threads:
        try:
            for w in windows(text):
                pending.append((w, threads.submit(scan_elsewhere, compute, plugins, piece(w), settings)))
                if len(pending) > slots:
                    oldest, future = pending.popleft()
                    yield oldest, future.result()
            while pending:
                oldest, future = pending.popleft()
                yield oldest, future.result()
        finally:
            for _, future in pending:
                future.cancel()


def _scan_windows(plugins, document, text: str, settings, compute=None) -> list:
    """Every scanner over bounded windows of a large text (kbwatch.pipeline.bigtext.windows).

    Each scanner sees ~1 MB plus a few KB of context on each side, so its regexes and
    normalised views stay small and other threads run between windows. A finding is kept
    by the window that owns its start; offsets, lines and columns are moved to the whole
    text. ``document.metadata["scan_window"]`` tells scanners the window's offset and the
    document's length (for whole-document rules such as ``format.oversized``).
    """
    out = []
    seen_document_rules: set[tuple[str, str]] = set()
    line_base, counted_to = 0, 0
    for w, batches in _window_batches(plugins, document, text, settings, compute):
        line_base += text.count("\n", counted_to, w.scan_start)
        counted_to = w.scan_start
        column_base = w.scan_start - (text.rfind("\n", 0, w.scan_start) + 1)
        for batch in batches:
            for f in batch or []:
                offset = f.offset + w.scan_start
                if f.rule in DOCUMENT_RULES:
                    key = (f.rule, f.fingerprint)
                    if key in seen_document_rules:
                        continue
                    seen_document_rules.add(key)
                elif not w.own_start <= offset < w.own_end:
                    continue
                f.offset = offset
                if f.line == 1:
                    f.column += column_base
                f.line += line_base
                out.append(f)
    return out


class ScanStage(Stage):
    name = "scan"
    concurrent = True

    def able_to_run(self, ctx: RunContext) -> bool:
        return ctx.parsed is not None

    def run(self, ctx: RunContext) -> str | None:
        doc = trim_edges(ctx.parsed)
        name = ctx.name + ctx.ext
        ahead = prepared(ctx.compute, ctx.source, name_text(name), doc, scanner_names(ctx.plugins))
        findings = run_scanners(ctx.plugins, doc, ctx.settings, ctx.compute, name=name, ahead=ahead)
        body = [f for f in findings if not in_name(f)]
        if body and scan_options(ctx.settings)["redact"]:
            doc.markdown = sanitize(doc.markdown, body)
            if doc.title:  # a heading holding a secret becomes the title: masked the same way
                doc.title = mask_values(doc.title, redacted_values(body))
        title = doc.title or ctx.name.rsplit("/", 1)[-1]
        shift = body_line_offset(title, doc.markdown)
        decisions = load_decisions(ctx.project.path) if findings else {}  # read only when needed
        for f in findings:
            if not in_name(f):  # a finding in the name keeps line 0 (the name is not masked: it is an address)
                f.line += shift
            f.decision = decisions.get(f.fingerprint, {}).get("decision", "pending")
        ctx.findings = findings
        pending = sum(1 for f in findings if f.decision == "pending")
        return f"{len(findings)} finding(s), {pending} pending review" if findings else "clean"

    def rescan(self, project, name: str, parsed_text: str, plugins, settings) -> list:
        """The findings of a committed document whose run was killed before its record kept them
        (``KnowledgeBase.recover``): its published text (``parsed/``, header and all, secrets
        already masked) and its name scanned again, each with the decision reviews.json holds."""
        findings = run_scanners(plugins, ParsedDocument(markdown=parsed_text), settings, name=name)
        decisions = load_decisions(project) if findings else {}
        for f in findings:
            f.decision = decisions.get(f.fingerprint, {}).get("decision", "pending")
        return findings


@hookimpl
def kb_stages():
    return [ScanStage()]


@hookimpl
def kb_run_queued(project, rel, settings, plugins, compute):
    announce(project, rel, settings, plugins, compute, scan_files)


# -- `kbwatch scan PATH...` ----------------------------------------------------

SEVERITY_RANK = {"low": 0, "medium": 1, "high": 2}


# dotfiles that hold credentials: `kbwatch scan DIR` reads them although the watcher
# ignores hidden files in sources/ (DESIGN §5); named on the command line, any file is read
SECRET_DOTFILES = (".env", ".npmrc", ".pypirc", ".netrc", ".pgpass", ".git-credentials", ".htpasswd")


def file_ext(path) -> str:
    """The extension a file is parsed as: its suffix, or for a dotfile the first dotted part of
    its name (``.env.local`` → ``.env``, ``.npmrc`` → ``.npmrc``)."""
    name = path.name
    if name.startswith(".") and len(name) > 1:
        return "." + name[1:].split(".", 1)[0].lower()
    return path.suffix


def _wanted_dotfile(name: str) -> bool:
    return name.startswith(".") and "." + name[1:].split(".", 1)[0].lower() in SECRET_DOTFILES


def _iter_files(paths, patterns):
    import os
    from pathlib import Path

    from kbwatch.pipeline.sources import is_ignored

    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for dirpath, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not is_ignored(d, patterns))
                for name in sorted(files):
                    if not is_ignored(name, patterns) or _wanted_dotfile(name):
                        yield Path(dirpath) / name
        else:
            yield p


def scan_paths(kb, paths, offload=None, compute=None):
    """Yield ``(path, findings, error)`` for every file under ``paths``.

    Each file is parsed by :func:`kbwatch.pipeline.parsing.parse_document`, the parse
    path of ``ingest`` and ``watch`` (the same bounds, parsers and
    ``[stages.parse] isolate``: ``offload`` runs a parse in a worker process),
    except that an empty file or one without text is a clean result here; a large
    text is scanned in ``compute``'s workers as in the service (:func:`run_scanners`);
    the file's name is scanned too (findings with ``line`` 0).
    """
    import os

    from kbwatch.pipeline.errors import StageError
    from kbwatch.pipeline.model import ParsedDocument
    from kbwatch.pipeline.parsing import parse_document

    settings = kb.settings
    for path in _iter_files(paths, settings["ignore"]["patterns"]):
        if os.path.islink(path) or not path.is_file():
            yield path, [], "not a regular file (symbolic links are not followed)"
            continue
        try:
            doc = parse_document(kb.plugins, path, file_ext(path), settings, offload=offload, text_required=False)
        except StageError as exc:
            yield path, [], exc.message
            continue
        except OSError as exc:
            yield path, [], f"cannot read: {exc.strerror}"
            continue
        yield path, run_scanners(kb.plugins, ParsedDocument(markdown=doc.markdown), settings, compute, name=path.name), None


def _more(count: int, lines: list[int]) -> str:
    """`` ×3 (lines 4, 9, 12)`` for a group of findings, nothing for one."""
    if count == 1:
        return ""
    shown = ", ".join(map(str, lines[:6])) + (", …" if len(lines) > 6 else "")
    return f" ×{count} (line{'s' if len(lines) > 1 else ''} {shown})"


@hookimpl
def kb_register_commands(cli):
    import json
    import sys

    import click

    from kbwatch.pipeline.cli import EXIT_FAILED, EXIT_OK, open_kb, root_options

    @cli.command("scan")
    @click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
    @click.option("--fail-on", type=click.Choice(["low", "medium", "high"]), default="medium", show_default=True,
                  help="Exit 1 when any finding has at least this severity.")
    @click.option("--json", "as_json", is_flag=True, help="One JSON object per file (DESIGN §12).")
    @root_options
    def scan_command(paths, fail_on, as_json, root, config_file):
        """Risk-scan files or folders (any supported format) without ingesting them.

        Example: kbwatch scan ./inbox --fail-on high --json
        """
        from kbwatch.pipeline.fsutil import printable
        from kbwatch.pipeline.parsing import compute_pool
        from kbwatch.pipeline.workers import WorkerPool

        kb = open_kb(root, config_file, quiet=as_json, log_files=False)
        memory_mb = kb.settings["stages"]["parse"]["memory_mb"]
        pool = WorkerPool(1, memory_mb=memory_mb)  # both started on first use
        compute = compute_pool(kb.settings)
        worst, errors = -1, 0
        try:
            for path, findings, error in scan_paths(kb, paths, pool.call, compute):
                for f in findings:
                    worst = max(worst, SEVERITY_RANK[f.severity])
                errors += bool(error)
                if as_json:
                    obj = {"path": str(path), "findings": [f.public() for f in findings]}
                    if error:
                        obj["error"] = error
                    click.echo(json.dumps(obj, ensure_ascii=False))
                    continue
                if error:
                    click.echo(f"{printable(str(path))}: not scanned: {printable(str(error))}", err=True)
                elif not findings:
                    click.echo(f"{printable(str(path))}: clean")
                for f, count, lines, severity in group_findings(findings):
                    click.echo(f"{location(str(path), f.line, f.column)}: {severity} {f.kind}/{f.rule}{_more(count, lines)}: {f.excerpt}")
        finally:
            pool.close()
            compute.close()
            kb.close()
        failed = worst >= SEVERITY_RANK[fail_on] or errors
        sys.exit(EXIT_FAILED if failed else EXIT_OK)
