"""The hook specifications: the only place kbwatch hooks are declared.

Every hook is prefixed ``kb_``. Implementations may accept any subset of the
arguments named here (pluggy passes only the ones they ask for). Built-in
stages, parsers and scanners in ``plugins/`` implement these hooks exactly as a
third-party plugin does.

Lifecycle of one file (one event = one file = one run)::

    kb_stages()                      once, when the plugin manager is built
    for each stage in [pipeline] stages:
        stage.run(ctx)               the parse stage calls kb_parse,
                                     the scan stage calls kb_scan
    stage.finish(ctx, outcome, msg) every finished run, before its commit
    kb_run_finished(run)             after the run record is durable

``kb_summarize`` is called by ``kbwatch rebuild`` (and the ``rebuild`` stage).
``kb_register_commands`` is called once when the CLI starts.

Threads and processes (what an implementation must tolerate)::

    hook                  may run concurrently   may run in a worker process
    kb_stages             no (once per manager)  no
    kb_parser_info        no (once per manager)  yes (each worker builds its own manager)
    kb_parse              yes                    yes, when the parser is isolated
    kb_worker_started     no (once per worker)   only there
    kb_worker_preload     no                     no (its modules are imported there)
    kb_run_queued         yes                    no
    kb_scan               yes                    yes, in compute workers (large texts, a burst's small ones)
    kb_summarize          yes (other projects)   no
    kb_run_finished       yes (other projects)   no
    kb_register_commands  no                     no
    kb_document_removed   no (one writer)        no
    kb_project_changed    no (one writer)        no
    kb_query              no (kbwatch mcp        no
    kb_read_document      serialises its calls)  no

"Concurrently" means from several runner threads of one process at once
(``[service] workers`` + 1 threads and one large-text thread, plus short-lived
commit threads): stages marked ``concurrent`` (parse, scan, index) run
outside the project's lock, so their hooks may run for several files of the
same project at once; the other stages, and the commit that calls
``kb_run_finished``, run one at a time per project but for several projects
at once. Keep per-run state in the arguments (or the run context), not in
module globals. An isolated parser (``[stages.parse] isolate``, ``"auto"``:
every parser that is not ``inprocess``) runs in a parse worker process, which
loads the plugins itself from the same settings: there ``kb_parse`` gets a
path and settings only, and must return something picklable.

Commands that change a project outside an ingest run (``review``, ``rebuild``,
``remove``) do not import the plugins that keep derived files; they announce
the change and each plugin reacts::

    kb_document_removed(project, name, parsed, ...)   `kbwatch remove`, after
                                                      manifest.json and project.md
    kb_project_changed(project, reason, ...)          after any such change

Both are called with the project's file lock held (one writer per project,
``kbwatch.pipeline.project_lock``); an implementation writes only the files it owns
and never takes that lock again. A plugin that is disabled simply does not
react, so its files are left as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

from kbwatch.pipeline import PROJECT_NAME

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    import click

    from kbwatch.pipeline.model import Finding, ParsedDocument, RunRecord, Settings

hookspec = pluggy.HookspecMarker(PROJECT_NAME)

# --------------------------------------------------------------------------
# Stages
# --------------------------------------------------------------------------


@hookspec
def kb_stages() -> list[Any]:
    """Contribute pipeline stages.

    Each stage object SHALL have a ``name`` (str) and a ``run(ctx)`` method and
    MAY have ``able_to_run(ctx) -> bool``, ``cleanup(ctx)``,
    ``finish(ctx, outcome, message)`` and ``concurrent: bool`` (see
    :class:`kbwatch.pipeline.stage.Stage`; one stage object serves every run, from
    several threads at once). The TOML list
    ``[pipeline] stages`` picks and orders stages by name; a stage that is
    contributed but not listed never runs.

    :returns: a list of stage objects (may be empty).
    """


# --------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------


@hookspec(firstresult=True)
def kb_parse(path: Path, ext: str, settings: Settings) -> ParsedDocument | None:
    """Parse one file into Markdown.

    Called only for the plugins that claim ``ext`` in ``kb_parser_info``, in
    the order of the priority each declares for it (higher first, ties go to
    third-party plugins), so a plugin takes over an extension by claiming it
    with a higher priority than the built-in parser. Stops at the first
    non-None result. Before any parser runs, the core has checked the
    extension claim and the size bound (``[stages.parse] max_file_mb``); a
    parser need not check either. After it, the core applies the ``no text``
    rule (:mod:`kbwatch.pipeline.text_presence`). Hook wrappers (``hookwrapper`` or
    ``wrapper``) wrap every parse; ``tryfirst``/``trylast`` on a parser do not
    change its place (the declared priority does). The call runs in a parse
    worker process when ``[stages.parse] isolate`` says so (``"auto"``: unless
    the parser declares ``inprocess``), else in a runner thread, possibly
    concurrently with other parses.

    :param path: the file to read (a private snapshot of the source, or the
        file ``kbwatch scan`` was given); a :class:`pathlib.Path`.
    :param ext: its lower-cased extension including the dot (``".pdf"``).
    :param settings: the resolved configuration.
    :returns: a :class:`kbwatch.pipeline.model.ParsedDocument` (``parser`` defaults to
        the claiming ``ParserInfo.name``), or None for "not mine": the next
        claiming parser tries. Raise :class:`kbwatch.pipeline.errors.PermanentError`
        (corrupt, encrypted, not text...) or
        :class:`kbwatch.pipeline.errors.TransientError` (locked...) to fail; raise
        :class:`kbwatch.pipeline.parsing.ParseAs` (``".pptx"``) when the file is
        really of another format, and the core parses it again as that. Any
        other exception fails the file as ``parser error``.
    """


@hookspec
def kb_parser_info() -> list[Any]:
    """Declare the parsers a plugin provides.

    :returns: a list of :class:`kbwatch.pipeline.model.ParserInfo` (name, extensions,
        priority). Used to order ``kb_parse`` calls and by ``kbwatch plugins``.
    """


@hookspec
def kb_worker_started(settings: Settings) -> None:
    """Called once in each parse worker process when it starts (only there).

    Import heavy parser stacks (or parse a tiny sample) here so the first real
    file a worker gets does not pay for them. Exceptions are ignored: warming
    up is an optimisation only.

    :param settings: the resolved configuration.
    """


@hookspec
def kb_worker_preload(settings: Settings) -> list[str] | None:
    """Modules to import once in the template process parse workers are forked from.

    A one-shot ``kbwatch ingest`` forks its parse workers from one template
    process (multiprocessing's forkserver) that imported these modules first,
    so several workers share one warm-up instead of paying it each. Return
    module names whose import does the warm-up (they must not need settings).
    The long-running service spawns its workers instead (no template process
    stays resident); ``kb_worker_started`` runs in every worker either way.
    The hook itself is called once, in the runner's process, when the worker
    pool is made; the modules it names are imported in the template process.

    :param settings: the resolved configuration.
    """


@hookspec
def kb_run_queued(project: Path, rel: str, settings: Settings, plugins: Any, compute: Any) -> None:
    """A file's run was queued behind a backlog (``kbwatch.pipeline.runner.BURST_RUNS`` runs or
    more waiting): work on it may start ahead of its run, in ``compute`` (the runner's compute
    workers, ``call(fn, *args)``), while the service's own process runs the
    runs before it. Called in the runner's process, from the thread that queued the run; return
    at once. The file may change, vanish or be swapped before its run takes it: a stage that
    uses such work must check that it was done on the very content the run took (the scan stage
    keys it by a digest of the parsed text, :mod:`kbwatch.plugins.scanning.ahead`). Work ahead
    only reads; nothing in ``sources/`` may change.

    :param project: the project folder.
    :param rel: the file's path under ``sources/``.
    :param settings: the resolved configuration.
    :param plugins: the runner's plugin set.
    :param compute: the runner's compute worker pool.
    """


# --------------------------------------------------------------------------
# Risk scan
# --------------------------------------------------------------------------


@hookspec
def kb_scan(document: ParsedDocument, settings: Settings) -> list[Finding] | None:
    """Scan parsed text for risks. Every scanner contributes.

    Called by the ``scan`` stage, a ``concurrent`` stage: several runner
    threads may call it at once (for files of the same project too). A text
    over 256 Ki characters is scanned in the runner's compute worker processes
    (``[service] compute_workers``), a large one in ~1 MB windows
    (``document.metadata["scan_window"]``), and in a burst the small texts are
    scanned there ahead of their runs (``kb_run_queued``; only when the worker
    loaded the same scanners), so a scanner must depend on its
    arguments only, not on state of the service's process. What it logs there
    at WARNING or above comes back with its findings and is logged by the
    service (to its log file too), marked "(in a compute worker)".

    :param document: the parsed document (``document.markdown`` is the text
        that will be published to ``parsed/``).
    :param settings: the resolved configuration.
    :returns: a list of :class:`kbwatch.pipeline.model.Finding` (or None / empty).
    """


# --------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------


@hookspec(firstresult=True)
def kb_summarize(project: str, documents: list[dict], settings: Settings) -> dict | None:
    """Write the summaries of a project for ``rebuild``.

    Stops at first non-None result. The built-in extractive summariser is
    ``trylast`` so a plugin (for example one calling a language model) wins.

    :param project: the project name.
    :param documents: one dict per document, in file-index order:
        ``{"name", "parsed", "archived", "text", "held"}``. ``held`` says why a
        document is held back from models (findings pending or rejected in
        review), else None: the overview and key points are shown to models
        (``ask``, MCP), so leave a held document's text out of them (its
        ``summaries`` entry is for project.md's file index, which people read).
    :param settings: the resolved configuration.
    :returns: ``{"overview": str, "key_points": [str], "summaries": {name: str}}``
        or None to defer.
    """


# --------------------------------------------------------------------------
# Observers and CLI
# --------------------------------------------------------------------------


@hookspec
def kb_run_finished(run: RunRecord, settings: Settings) -> None:
    """Called after each run's record is durable (notifications, metrics).

    Exceptions raised here are logged and never fail the run. Called by the
    commit, in the thread that commits the run's batch (a runner thread, a
    timed commit thread or the main thread at stop): one batch at a time per
    project, but several projects may commit at once.

    :param run: the finished run (outcome, status, paths, findings).
    :param settings: the resolved configuration (an implementation may leave it out).
    """


@hookspec
def kb_document_removed(project: Path, name: str, parsed: str, settings: Settings, journal: Any) -> list[str] | None:
    """``kbwatch remove`` took document ``name`` out of ``project``.

    Called once manifest.json (entry marked ``removed``) and project.md (row
    gone) are written and the document's findings superseded, before
    :func:`kb_project_changed`. The built-in ``index`` plugin drops the
    document from the search index and rewrites the data_structure.md files.

    :param project: the project folder.
    :param name: the document name (``sub/技术方案``).
    :param parsed: its project-relative parsed path (``parsed/sub/技术方案.md``),
        already deleted.
    :param settings: the resolved configuration.
    :param journal: the :class:`kbwatch.pipeline.journal.Journal`.
    :returns: project-relative paths written (for the run record), or None.
    """


@hookspec
def kb_project_changed(project: Path, reason: str, settings: Settings, journal: Any) -> list[str] | None:
    """A command changed ``project`` outside an ingest run; refresh derived files.

    ``reason`` is ``"review"`` (a finding approved or rejected), ``"rebuild"``
    (project.md regenerated), ``"remove"`` (a document removed) or
    ``"replaced"`` (the running service found the project folder deleted and
    made again, or replaced by another folder: what was derived from the old
    folder no longer holds; the built-in ``index`` plugin re-reads parsed/) or
    ``"recovered"`` (runs a crash interrupted were recovered at start-up: a
    commit may have stopped between its renames of manifest.json and project.md;
    the built-in ``project_md`` plugin puts the file index in line again). The
    built-in ``knowledge`` plugin rewrites KNOWLEDGE.md (its status and
    description). During ingest runs the stages keep their files current
    themselves; this hook is not called then.

    :param project: the project folder.
    :param reason: what changed (see above).
    :param settings: the resolved configuration.
    :param journal: the :class:`kbwatch.pipeline.journal.Journal` (pending findings).
    :returns: project-relative paths written (for the run record), or None.
    """


@hookspec
def kb_register_commands(cli: click.Group) -> None:
    """Add commands to the ``kbwatch`` CLI (called once at start-up)."""


# --------------------------------------------------------------------------
# Retrieval for agents (kbwatch.pipeline.api.Knowledge calls these)
# --------------------------------------------------------------------------


@hookspec(firstresult=True)
def kb_query(kb: Any, projects: list[Path], query: str, options: dict) -> dict | None:
    """Answer ``query`` from ``projects`` with a fenced, cited context pack.

    Called by :meth:`kbwatch.pipeline.api.Knowledge.query` (``kbwatch ask`` and
    the MCP tool ``query_knowledge_base``); the built-in ``ask`` plugin
    answers. The core never imports the retrieval library: it asks here.

    :param kb: the open :class:`kbwatch.pipeline.kb.KnowledgeBase` (settings,
        journal, which may be read-only).
    :param projects: the project folders to search (one, or every project).
    :param query: the question (may hold ``[[parsed/x.md]]`` references).
    :param options: ``max_files``, ``budget_chars``, ``include_flagged``,
        ``project_md`` (name -> project.md text to use, the overview already
        vetted by the core) and ``extra_warnings`` (name -> warnings to add).
    :returns: ``{"text", "status" ("ok" | "no_match"), "reason",
        "selected_files", "source_anchors", "snippets", "warnings", "missing",
        "token_estimate", "record"}`` (``record`` a context-resolution record),
        or None when no plugin can search.
    """


@hookspec(firstresult=True)
def kb_read_document(kb: Any, project: Path, citation: str) -> dict | None:
    """The lines a citation names: ``parsed/x.md``, ``parsed/x.md#L12-L40``, or a
    page/sheet/slide anchor (``parsed/x.md#page=3``, ``parsed/x.md (page 3)``).

    :param kb: the open :class:`kbwatch.pipeline.kb.KnowledgeBase`.
    :param project: the project folder.
    :param citation: the citation as a query answer gave it, or typed by hand.
    :returns: ``{"path", "anchor", "start_line", "end_line", "text"}`` with
        ``text`` fenced as a query result, or None when no plugin reads
        documents. Raise :class:`kbwatch.pipeline.errors.ConfigError` with one
        sentence for a citation outside the project's parsed files.
    """
