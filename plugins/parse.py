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
calling thread. With ``[stages.parse] executor`` naming a Dask cluster, the stage
note and an ``info`` diagnostic of the run record say where the file was
parsed, and a journal event ``worker-death`` counts workers that died under it.
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
        where = doc.metadata.pop("parsed_on", None)
        if where:  # parsed on a cluster (or here in its stead): the run and the journal say so
            said = _placement_words(where)
            ctx.diagnose("info", f"parsed {said}")
            if where.get("worker_deaths") and ctx.journal is not None:
                ctx.journal.event(ctx.project.name, ctx.source_rel, "worker-death",
                                  f"{where['worker_deaths']} parse worker(s) died under this parse; it ran again {said}")
            return f"{doc.parser}: {len(doc.markdown)} chars, {said}"
        return f"{doc.parser}: {len(doc.markdown)} chars"


def _placement_words(where: dict) -> str:
    if where.get("executor") == "local":
        return f"locally ({where.get('fallback') or 'local pool'})"
    deaths = where.get("worker_deaths") or 0
    again = f", after {deaths} worker death(s)" if deaths else ""
    took = f", {where['seconds']:.2f} s" if where.get("seconds") is not None else ""
    return (f"on {where.get('executor')} worker {where.get('worker')} (host {where.get('host')}, "
            f"scheduler {where.get('address')}{took}{again})")


@hookimpl
def kb_stages():
    return [ParseStage()]
