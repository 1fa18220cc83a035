"""``kbwatch ask NAME "question"``: a fenced, cited context pack for a model (DESIGN §9).

Progressive as in the seeds: project.md's summary and file index first, then
ranked snippets from the search index (explicit ``[[parsed/x.md]]``
references always first), each cited ``parsed/x.md#L12-L40`` plus
page/slide/sheet. Documents with pending (or rejected) review findings are
left out unless ``--include-flagged``; the answer then names them.

The command goes through :class:`kbwatch.pipeline.api.Knowledge` like the MCP
server; this plugin answers the ``kb_query`` and ``kb_read_document`` hooks it
calls. ``--json`` prints the context-resolution record (DESIGN §12), ``--answer`` the
answer the MCP tool returns (its structured result, the same record under ``record``);
the context-resolution record inside it goes to the journal always and to
``runs/<run_id>.json`` only with ``--record`` (or ``[ask] record_runs``).
``--batch FILE.jsonl`` answers many queries in one process (records are not
saved then).
"""

from __future__ import annotations

import json
from pathlib import Path

from kbwatch.pipeline import __version__, confine, hookimpl
from kbwatch.pipeline.context_record import pack_labels
from kbwatch.pipeline.formats.knowledge_md import read_frontmatter
from kbwatch.pipeline.fsutil import show_hidden
from kbwatch.plugins.retrieval.navigation import open_index


class Asker:
    """Everything needed to answer questions about one project, opened once."""

    def __init__(self, kb, project: Path, include_flagged: bool = False, project_md: str | None = None):
        self.kb, self.project = kb, project
        self.readonly = bool(getattr(kb, "readonly", False))
        self.index = open_index(kb.settings, readonly=self.readonly)
        if not self.readonly:
            self._healing(lambda: self._sync_if_lost(project))
        else:  # a read-only base without its index: an index in memory, built from parsed/ now
            import sqlite3

            try:
                self._sync_if_lost(project)
            except sqlite3.OperationalError:  # an index file that is there but cannot be written: use it as is
                pass
        try:
            front = read_frontmatter(confine.read_text(project / "KNOWLEDGE.md"))
        except OSError:
            front = {}
        self.pending_reviews = len(kb.journal.pending_findings(project.name))
        self.status, self.trust, self.grounding = pack_labels(front, self.pending_reviews, kb.settings)
        self.flagged = kb.journal.held_documents(project.name)
        self.include_flagged = include_flagged
        if project_md is not None:  # vetted by the core (a placeholder overview taken out)
            self.project_md = project_md
        else:
            try:
                self.project_md = confine.read_text(project / "project.md")
            except OSError:
                self.project_md = ""

    def _sync_if_lost(self, project: Path) -> None:
        if not self.index.stats(project.name)["documents"] and any((project / "parsed").rglob("*.md")):
            self.index.sync_project(project.name, project)  # first ask after an index loss

    def _healing(self, fn):
        """``fn()``; if the index turns out damaged mid-use, rebuild it from parsed/ and try once more."""
        import sqlite3

        from kbwatch.pipeline.heal import is_corrupt
        from kbwatch.plugins.retrieval.navigation import heal_index

        try:
            return fn()
        except sqlite3.DatabaseError as exc:
            if not is_corrupt(exc) or self.readonly:
                raise
            self.index = heal_index(self.kb.settings, exc)
            return fn()

    def read_document(self, rel: str) -> str | None:
        try:
            path = (self.project / rel).resolve()
            if self.project.resolve() not in path.parents or not path.is_file():
                return None
        except OSError:  # a name too long to be a file (a [[...]] reference can be anything)
            return None
        try:  # by the unresolved path, following no link (one swapped in since the check is refused)
            return confine.read_text(self.project / rel, errors="replace")
        except OSError:
            return None

    def ask(self, question: str, max_files: int, budget: int):
        from kbwatch.plugins.retrieval import build_pack

        return self._healing(lambda: build_pack(
            self.index, self.project.name, question, project_md=self.project_md, status=self.status,
            trust=self.trust, grounding=self.grounding, max_files=max_files, budget=budget,
            flagged=self.flagged, include_flagged=self.include_flagged, read_document=self.read_document,
            tool_version=__version__,
        ))


@hookimpl
def kb_query(kb, projects, query, options):
    """Answer for :meth:`kbwatch.pipeline.api.Knowledge.query` (``ask`` and the MCP tool)."""
    from kbwatch.plugins.retrieval.answer import answer_from_packs

    packs = []
    for project in projects:
        asker = Asker(kb, project, options.get("include_flagged", False),
                      project_md=options.get("project_md", {}).get(project.name))
        packs.append((project.name, asker.ask(query, options["max_files"], options["budget_chars"])))
    return answer_from_packs(packs, query, options["budget_chars"], options.get("extra_warnings"))


@hookimpl
def kb_read_document(kb, project, citation):
    """The lines a citation names, fenced (the MCP tool ``read_document``)."""
    from kbwatch.pipeline.errors import ConfigError
    from kbwatch.plugins.retrieval import neutralize_fence
    from kbwatch.plugins.retrieval.answer import CitationError, fence_document, read_citation

    try:
        doc = read_citation(project, citation)
    except CitationError as exc:
        raise ConfigError(str(exc)) from None
    try:
        front = read_frontmatter(confine.read_text(project / "KNOWLEDGE.md"))
    except OSError:
        front = {}
    try:
        flagged = kb.journal.held_documents(project.name)
        pending = len(kb.journal.pending_findings(project.name))
    except Exception:  # a journal that cannot be read: no flags known
        flagged, pending = {}, 0
    warnings = []
    if doc["path"] in flagged:
        warnings.append(f"{doc['path']} has {flagged[doc['path']]}: verify before relying on it")
    status, trust, grounding = pack_labels(front, pending, kb.settings)
    text = fence_document(project.name, doc, status, trust, grounding, warnings)
    return {"name": project.name, "path": doc["path"], "anchor": doc["anchor"], "start_line": doc["start_line"],
            "end_line": doc["end_line"], "total_lines": doc["total_lines"], "truncated": doc["truncated"],
            "text": text, "lines": neutralize_fence(doc["lines"]), "warnings": warnings}


def public_answer(answer: dict) -> dict:
    """The answer as ``ask --json`` prints it and the MCP tool returns it (the text is the content)."""
    return {k: v for k, v in answer.items() if k != "text"}


@hookimpl
def kb_register_commands(cli):
    import sys

    import click

    from kbwatch.pipeline.cli import json_option, root_options
    from kbwatch.pipeline.errors import ConfigError, KbwatchError

    @cli.command("ask")
    @click.argument("name", required=False)
    @click.argument("question", required=False)
    @click.option("--max-files", type=click.IntRange(min=1), default=6, show_default=True, help="Files in the pack.")
    @click.option("--budget", type=click.IntRange(min=300), default=4000, show_default=True,
                  help="Characters of context inside the fence.")
    @click.option("--include-flagged", is_flag=True, help="Also use documents with pending or rejected findings.")
    @click.option("--all", "all_projects", is_flag=True, help="Search every project (NAME is then the question).")
    @click.option("--auto", is_flag=True,
                  help="Skip messages that are no question for the knowledge base (slash commands, greetings, "
                       "fewer than 3 characters, questions about the assistant); [[...]] always searches.")
    @click.option("--record/--no-record", default=None,
                  help="Also save the context record as runs/<run_id>.json (default: [ask] record_runs).")
    @click.option("--batch", "batch_file", type=click.File("r", encoding="utf-8"), default=None,
                  help='JSONL file of {"id", "query"}: one {"id", "record"} line per query.')
    @click.option("--answer", "as_answer", is_flag=True,
                  help="Print the answer as JSON, as the MCP tool query_knowledge_base returns it: status "
                       "ok/no_match/skipped, snippets with text and scores, the record under \"record\".")
    @json_option
    @root_options
    def ask_command(name, question, max_files, budget, include_flagged, all_projects, auto, record, batch_file,
                    as_answer, as_json, root, config_file):
        """Print a fenced, cited context pack answering QUESTION from project NAME.

        With --json, the Agent Knowledge context-resolution record (valid under v0.5 and the
        current schema; DESIGN §12). With --answer, the answer the MCP tool query_knowledge_base
        returns (status, snippets with text and scores, and that same record under "record").

        Example: kbwatch ask 技术方案 "限流算法是什么？" --max-files 4
        """
        from kbwatch.pipeline.api import Knowledge
        from kbwatch.pipeline.logs import setup_logging

        kn = Knowledge(root or ".", config_file)
        setup_logging(kn.settings, None, quiet=True)
        kb = kn.kb
        if "index" not in kb.plugins.stages():  # the search index is the index plugin's
            raise KbwatchError("search is disabled: the index plugin is not loaded "
                               "([pipeline] disable names it, or it failed to load: kbwatch plugins --all)")
        if all_projects:
            question = question or name
            projects = kb.projects()
        else:
            if not name:
                raise ConfigError("give a project NAME (or --all)")
            projects = [kb.project(name)]
        if batch_file is not None:
            if len(projects) != 1:
                raise ConfigError("--batch needs one project NAME")
            from kbwatch.pipeline.overview import overview_state, vetted_project_md

            ov = overview_state(projects[0], kb.settings)  # a placeholder overview is never a summary
            asker = Asker(kb, projects[0], include_flagged, project_md=vetted_project_md(projects[0], ov))
            failed = 0
            for lineno, line in enumerate(batch_file, 1):
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                    qid, query = str(item["id"]), str(item["query"])
                except (ValueError, KeyError, TypeError):
                    raise ConfigError(f"--batch line {lineno}: expected {{\"id\": str, \"query\": str}}") from None
                if not query.strip():  # one bad line must not sink the batch
                    failed += 1
                    click.echo(json.dumps({"id": qid, "record": None, "error": "empty query"}, ensure_ascii=False))
                    continue
                pack = asker.ask(query, max_files, budget)
                click.echo(json.dumps({"id": qid, "record": show_hidden(pack.record)}, ensure_ascii=False))
            kb.close()
            sys.exit(1 if failed else 0)
        if not question or not question.strip():
            raise ConfigError("give a QUESTION")
        answer = kn.query(question, name=None if all_projects else projects[0].name, max_files=max_files,
                          budget_chars=budget, include_flagged=include_flagged, auto=auto, record=record)
        if as_answer:
            click.echo(json.dumps(public_answer(answer), ensure_ascii=False))
        elif as_json:  # DESIGN §12: one context-resolution record (a skipped message has none: its answer)
            click.echo(json.dumps(answer.get("record") or public_answer(answer), ensure_ascii=False))
        else:
            click.echo(answer["text"])
        kn.close()
        sys.exit(0)
