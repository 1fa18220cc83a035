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
    kb_run_finished(run)             after the run record is durable

``kb_summarize`` is called by ``kbwatch rebuild`` (and the ``rebuild`` stage).
``kb_register_commands`` is called once when the CLI starts.

Commands that change a project outside an ingest run (``review``, ``rebuild``,
``remove``) do not import the plugins that keep derived files; they announce
the change and each plugin reacts::

    kb_document_removed(project, name, parsed, ...)   `kbwatch remove`, after
                                                      manifest.json and project.md
    kb_project_changed(project, reason, ...)          after any such change

Both are called with the project's file lock held (one writer per project,
``pipeline.project_lock``); an implementation writes only the files it owns
and never takes that lock again. A plugin that is disabled simply does not
react, so its files are left as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

from pipeline import PROJECT_NAME

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    import click

    from pipeline.model import Finding, ParsedDocument, RunRecord, Settings

hookspec = pluggy.HookspecMarker(PROJECT_NAME)

# --------------------------------------------------------------------------
# Stages
# --------------------------------------------------------------------------


@hookspec
def kb_stages() -> list[Any]:
    """Contribute pipeline stages.

    Each stage object SHALL have a ``name`` (str) and a ``run(ctx)`` method and
    MAY have ``able_to_run(ctx) -> bool``, ``cleanup(ctx)`` and
    ``concurrent: bool`` (see :class:`pipeline.stage.Stage`). The TOML list
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

    Stops at first non-None result. kbwatch calls implementations in order of
    the priority their plugin declares for ``ext`` (``kb_parser_info``; higher
    first, ties go to third-party plugins), so a plugin takes over an extension
    by claiming it with a higher priority than the built-in parser.

    :param path: the file to read (a regular file inside the KB root).
    :param ext: its lower-cased extension including the dot (``".pdf"``).
    :param settings: the resolved configuration.
    :returns: a :class:`pipeline.model.ParsedDocument`, or None for "not mine".
        Raise :class:`pipeline.errors.PermanentError` (corrupt, encrypted, not
        text...) or :class:`pipeline.errors.TransientError` (locked...) to fail.
    """


@hookspec
def kb_parser_info() -> list[Any]:
    """Declare the parsers a plugin provides.

    :returns: a list of :class:`pipeline.model.ParserInfo` (name, extensions,
        priority). Used to order ``kb_parse`` calls and by ``kbwatch plugins``.
    """


@hookspec
def kb_worker_started(settings: Settings) -> None:
    """Called once in each parse worker process when it starts.

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

    :param settings: the resolved configuration.
    """


# --------------------------------------------------------------------------
# Risk scan
# --------------------------------------------------------------------------


@hookspec
def kb_scan(document: ParsedDocument, settings: Settings) -> list[Finding] | None:
    """Scan parsed text for risks. Every scanner contributes.

    :param document: the parsed document (``document.markdown`` is the text
        that will be published to ``parsed/``).
    :param settings: the resolved configuration.
    :returns: a list of :class:`pipeline.model.Finding` (or None / empty).
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
        ``{"name", "parsed", "archived", "text"}``.
    :param settings: the resolved configuration.
    :returns: ``{"overview": str, "key_points": [str], "summaries": {name: str}}``
        or None to defer.
    """


# --------------------------------------------------------------------------
# Observers and CLI
# --------------------------------------------------------------------------


@hookspec
def kb_run_finished(run: RunRecord) -> None:
    """Called after each run's record is durable (notifications, metrics).

    Exceptions raised here are logged and never fail the run.

    :param run: the finished run (outcome, status, paths, findings).
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
    :param journal: the :class:`pipeline.journal.Journal`.
    :returns: project-relative paths written (for the run record), or None.
    """


@hookspec
def kb_project_changed(project: Path, reason: str, settings: Settings, journal: Any) -> list[str] | None:
    """A command changed ``project`` outside an ingest run; refresh derived files.

    ``reason`` is ``"review"`` (a finding approved or rejected), ``"rebuild"``
    (project.md regenerated) or ``"remove"`` (a document removed). The
    built-in ``knowledge`` plugin rewrites KNOWLEDGE.md (its status and
    description). During ingest runs the stages keep their files current
    themselves; this hook is not called then.

    :param project: the project folder.
    :param reason: what changed (see above).
    :param settings: the resolved configuration.
    :param journal: the :class:`pipeline.journal.Journal` (pending findings).
    :returns: project-relative paths written (for the run record), or None.
    """


@hookspec
def kb_register_commands(cli: click.Group) -> None:
    """Add commands to the ``kbwatch`` CLI (called once at start-up)."""
