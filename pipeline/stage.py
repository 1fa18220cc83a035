"""The stage contract and the one context object every stage receives.

A stage (contributed through ``kb_stages``):

- SHALL have a ``name``; ``[pipeline] stages`` orders stages by that name.
- SHALL implement ``run(ctx) -> str | None``; the optional string is a short
  note for the log.
- MAY implement ``able_to_run(ctx) -> bool``; a stage that cannot run is
  skipped with a log line and recorded as ``skipped``.
- MAY implement ``cleanup(ctx)``; it is ALWAYS called once ``run`` was called.
- MAY implement ``finish(ctx, outcome, message)``: the place to act on how a
  run ended, whatever stage ended it (see "finish" below).
- MAY set ``concurrent = True`` when ``run`` only reads the source and writes
  to ``ctx`` (parse, scan); such stages run outside the per-project commit
  lock, so several files are parsed at once. Other stages run serially per
  project under the lock.
- SHALL stop a run with :class:`kbwatch.pipeline.errors.StopRun` (conflict,
  duplicate) and fail it with :class:`kbwatch.pipeline.errors.TransientError` or
  :class:`kbwatch.pipeline.errors.PermanentError`.
- SHALL NOT delete or move the source: the runner removes it only after the
  project's files are durable.

The runner:

- calls stages in configured order; stops at the first StopRun or error;
- calls ``cleanup`` in ``finally``;
- records per stage: status, duration in ms and error, in the journal.

Threads: one stage object serves every run. ``concurrent`` stages run for
several files at once, of the same project too; the others run one file at
a time per project (under the project's lock, with the project's file lock
held until the commit), but for several projects at once. Keep per-run state
on ``ctx`` (``ctx.stash``) and per-project state on the session
(``ctx.project.cached``...), never on the stage object.

finish: when a run is over and handed to its project's commit
(:meth:`kbwatch.pipeline.commit.Committer.park`), ``finish(ctx, outcome, message)``
of EVERY configured stage that has one is called, in configured order, under
the project's lock with its file lock held, before the run joins the batch.
It is called for every run that will be committed, whatever ended it:
``done``, ``duplicate``, ``conflict`` or ``failed``, including a stage that
did not run or was skipped, and a file refused before any stage ran (its
``ctx`` then has no ``content`` and no ``offload``). It is not called when
nothing is committed (the project refused, the file vanished, a run
abandoned at shutdown). ``message`` is the run's message (for ``failed``,
the error). What ``finish`` defers on the session (``defer_write``,
``after_commit``) goes into the same commit as the run: ``project_md`` logs
conflicts and failures there, ``knowledge`` refreshes KNOWLEDGE.md once the
batch is in the journal. Exceptions are logged and ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # pragma: no cover
    from kbwatch.pipeline.model import Finding, ParsedDocument
    from kbwatch.pipeline.project import ProjectSession


class Stage:
    """Convenience base class; duck-typed objects work as well."""

    name: str = ""
    concurrent: bool = False

    def able_to_run(self, ctx: "RunContext") -> bool:
        return True

    def run(self, ctx: "RunContext") -> str | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def cleanup(self, ctx: "RunContext") -> None:
        return None


@dataclass
class RunContext:
    """Everything one run knows. Stages read and fill it in order.

    ``name`` is the document name: the path under ``sources/`` without the
    extension, with ``/`` separators (``sub/技术方案``). ``ext`` is the original
    extension as written (``.PDF`` stays ``.PDF``); ``ext_lower`` is for
    matching. ``outputs`` maps project-relative paths to
    created/updated/deleted/unchanged; ``diagnostics`` holds compile-run
    diagnostics; ``stash`` is plugin-private state keyed by plugin name (one
plugin's own notes between its calls). Data one stage hands to another is a
typed field here (``parsed``, ``findings``, ``archived``, ``parsed_path``,
``parsed_text``/``parsed_parts``/``parsed_bytes``), never a ``stash`` key.
    """

    run_id: str
    project: "ProjectSession"
    source: Path  # absolute path of the file in sources/
    source_rel: str  # project-relative: "sources/sub/x.pdf"
    name: str
    ext: str
    sha256: str
    size: int
    mtime_ns: int
    settings: dict
    started_at: str
    offload: Callable[..., Any] | None = None  # run a picklable callable in a worker process
    # plain worker processes for CPU-bound work on a large text (``compute.call(fn, *args)``,
    # ``compute.size`` of them; no parser warmed up there, the plugins loaded): the service's
    # own threads keep the GIL meanwhile. None outside the runner: do the work here
    compute: Any = None
    plugins: Any = None  # the PluginSet (hooks, parsers, stages)
    journal: Any = None  # the Journal (findings, review decisions)
    parsed: "ParsedDocument | None" = None
    findings: list["Finding"] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    diagnostics: list[dict] = field(default_factory=list)
    archived: str | None = None  # project-relative archive path of this version
    parsed_path: str | None = None  # project-relative parsed path
    # what the archive stage published at ``parsed_path`` (header comments included), for the
    # stages after it (index): the whole text when small (None for a large document), its
    # parts always, and its size in bytes
    parsed_text: str | None = None
    parsed_parts: list[str] | None = None
    parsed_bytes: int | None = None
    event: str = "new"  # "new" | "version": set by the manifest stage
    summary: str = ""  # one-line summary for the file index
    stash: dict[str, Any] = field(default_factory=dict)
    # the private snapshot of the source (kbwatch.pipeline.intake) that stages read: opened once,
    # without following links, and hashed as read; None only outside the runner
    content: Path | None = None

    @property
    def ext_lower(self) -> str:
        return self.ext.lower()

    @property
    def filename(self) -> str:
        return self.source.name

    def output(self, relpath: str, operation: str) -> None:
        """Record that this run created/updated/deleted/left unchanged a file."""
        self.outputs[relpath] = operation

    def diagnose(self, severity: str, message: str, path: str | None = None) -> None:
        self.diagnostics.append(
            {"severity": severity, "path": path or self.source_rel, "message": message}
        )
