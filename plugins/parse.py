"""Stage ``parse``: turn the source into Markdown through the ``kb_parse`` parsers.

Bounds: files over ``[stages.parse] max_file_mb`` fail as ``too large``
without being opened; empty files fail as ``empty``; a parse that holds no
text (only page markers, notes, empty tables: :mod:`pipeline.text_presence`),
after OCR where it ran, fails as ``no text``. Rich formats are parsed
in a worker process (``isolate = "auto"``) with ``timeout_seconds`` and
``memory_mb`` enforced by killing the worker; plain-text parsers that declare
``inprocess`` run in the calling thread.
"""

from __future__ import annotations

from pipeline import hookimpl
from pipeline.errors import PermanentError
from pipeline.parsing import choose_parser, isolated, parse_file, parse_in_worker
from pipeline.stage import RunContext, Stage
from pipeline.text_presence import has_text


class ParseStage(Stage):
    name = "parse"
    concurrent = True

    def run(self, ctx: RunContext) -> str | None:
        opts = ctx.settings["stages"]["parse"]
        limit = opts["max_file_mb"] * 1024 * 1024
        if ctx.size > limit:
            raise PermanentError(
                f"the file is {ctx.size / 1048576:.1f} MB, over the {opts['max_file_mb']} MB limit "
                "(stages.parse.max_file_mb)",
                reason="too large",
            )
        if ctx.size == 0:
            raise PermanentError("the file is empty", reason="empty")
        info = choose_parser(ctx.plugins, ctx.ext)
        if info is None:
            raise PermanentError(
                f"unsupported file type {ctx.ext or '(no extension)'}: no parser claims it",
                reason="unsupported",
            )
        path = ctx.content or ctx.source  # the snapshot taken when the run opened the source
        if ctx.offload is not None and isolated(info, ctx.settings):
            doc = ctx.offload(parse_in_worker, str(path), ctx.ext, ctx.settings,
                              timeout=opts["timeout_seconds"] or None)
        else:
            doc = parse_file(ctx.plugins, path, ctx.ext, ctx.settings)
        if not has_text(doc.markdown):
            raise PermanentError(_no_text_message(doc), reason="no text")
        ctx.parsed = doc
        for w in doc.warnings:
            ctx.diagnose("warning", w)
        return f"{doc.parser}: {len(doc.markdown)} chars"


def _no_text_message(doc) -> str:
    """Why nothing was kept: what OCR did (or why it could not run), in the parser's words."""
    why = [w for w in doc.warnings if w != "the document has no text"]
    if "<!-- ocr:" in doc.markdown:
        why.insert(0, "OCR found no text either")
    detail = f" ({'; '.join(why)})" if why else ""
    return f"no text could be extracted from the file{detail}"


@hookimpl
def kb_stages():
    return [ParseStage()]
