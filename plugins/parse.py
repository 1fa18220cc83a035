"""Stage ``parse``: turn the source into Markdown through the ``kb_parse`` parsers.

The stage hands the run's private snapshot (``ctx.content``, never the live
source) to :func:`kbwatch.pipeline.parsing.parse_document`, the one parse path that
``kbwatch scan`` uses too. Bounds, checked there once for every parser: files
over ``[stages.parse] max_file_mb`` fail as ``too large`` without being
opened; empty files fail as ``empty``; a parse that holds no text (only page
markers, notes, empty tables: :mod:`kbwatch.pipeline.text_presence`), after OCR where
it ran, fails as ``no text``. Rich formats are parsed in a worker process
(``isolate = "auto"``) with ``timeout_seconds`` and ``memory_mb`` enforced by
killing the worker; plain-text parsers that declare ``inprocess`` run in the
calling thread.
"""

from __future__ import annotations

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.parsing import parse_document
from kbwatch.pipeline.stage import RunContext, Stage


class ParseStage(Stage):
    name = "parse"
    concurrent = True

    def run(self, ctx: RunContext) -> str | None:
        path = ctx.content or ctx.source  # the snapshot taken when the run opened the source
        doc = parse_document(ctx.plugins, path, ctx.ext, ctx.settings, size=ctx.size, offload=ctx.offload)
        ctx.parsed = doc
        for w in doc.warnings:
            ctx.diagnose("warning", w)
        return f"{doc.parser}: {len(doc.markdown)} chars"


@hookimpl
def kb_stages():
    return [ParseStage()]
