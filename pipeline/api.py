"""The Python API of a knowledge-base root: what ``kbwatch ask`` and ``kbwatch mcp`` both call.

    from kbwatch.pipeline import Knowledge
    kn = Knowledge("/srv/kb")
    answer = kn.query("限流算法是什么？", name="技术方案")
    print(answer["text"])                 # the fenced, cited pack
    kn.read_document(answer["snippets"][0]["citation"], "技术方案")

It owns the seed-001 runtime methods (list, read, source import, status update,
context resolve, context-run validate), the seed-003 ``shouldUseKnowledgeBase``
rule, overview honesty and where context records go. Searching and reading
parsed documents are the retrieval plugin's: the core asks through the
``kb_query`` and ``kb_read_document`` hooks and never imports a plugin, so the
dependency stays one-way (plugins → core). Every answer is read from the files
and the index as they are on disk when it is asked, so a document a running
``watch`` just ingested is found without a restart.

Errors a caller can act on raise :class:`kbwatch.pipeline.errors.ConfigError`
(bad argument: unknown project, bad citation…) or :class:`KbwatchError`, each
with one sentence.
"""

from __future__ import annotations

import base64
import json
import os
import re
import sqlite3
from pathlib import Path, PurePosixPath
from typing import Any

from kbwatch.pipeline import confine
from kbwatch.pipeline.errors import ConfigError, KbwatchError
from kbwatch.pipeline.context_record import pack_labels
from kbwatch.pipeline.lazylog import logger
from kbwatch.pipeline.fsutil import show_hidden, unshow_hidden
from kbwatch.pipeline.overview import overview_state, vetted_project_md
from kbwatch.pipeline.should_use import should_use_knowledge_base

__all__ = ["Knowledge", "should_use_knowledge_base", "overview_state", "KNOWLEDGE_STATUSES"]

KNOWLEDGE_STATUSES = ("draft", "ready", "needs-review", "stale", "disputed", "archived")
# the longest query searched: a question, or a paragraph pasted with it. Every query is kept in the
# journal (and echoed in its record): without a bound one read-only call could write megabytes
MAX_QUERY_CHARS = 4000
NAME_SHOWN = 80  # characters of an unknown name repeated in an error


def _shown(name: str) -> str:
    """``name`` for an error message: at most ``NAME_SHOWN`` characters, quoted."""
    return repr(name if len(name) <= NAME_SHOWN else name[:NAME_SHOWN] + "…")


# --------------------------------------------------------------------------- the facade
class Knowledge:
    """One knowledge-base root, for agents and scripts (see the module docstring).

    ``readonly=None`` (default) decides from whether the state folder can be
    written: on a read-only knowledge base queries work and nothing is written
    (context records go nowhere; ``add_source`` and ``set_status`` refuse)."""

    def __init__(self, root: str | os.PathLike, config_file: str | os.PathLike | None = None,
                 readonly: bool | None = None):
        from kbwatch.pipeline.config import resolve_root
        from kbwatch.pipeline.kb import KnowledgeBase

        self.kb = KnowledgeBase(resolve_root(str(root)).resolve(), Path(config_file) if config_file else None,
                                readonly=readonly)

    @classmethod
    def of(cls, kb) -> "Knowledge":
        """The facade over a knowledge base already open in this process (the service's
        status page uses it); closing it is the owner's job."""
        self = cls.__new__(cls)
        self.kb = kb
        return self

    @property
    def root(self) -> Path:
        return self.kb.root

    @property
    def readonly(self) -> bool:
        return self.kb.readonly

    @property
    def settings(self) -> dict:
        return self.kb.settings

    def close(self) -> None:
        self.kb.close()

    def __enter__(self) -> "Knowledge":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- projects ----------------------------------------------------------
    def _project(self, name: str) -> Path:
        from kbwatch.pipeline.project import discover_projects, refused_projects

        if not isinstance(name, str) or not name.strip():
            raise ConfigError("give the name of a knowledge base (list_knowledge_bases shows them)")
        wanted = {name, unshow_hidden(name)}  # a name given back as it was shown (show_hidden)
        for p in discover_projects(self.root):
            if p.name in wanted:
                return p
        refused = dict(refused_projects(self.root))
        if name in refused:
            raise KbwatchError(f"knowledge base {name} is refused: {refused[name]}")
        raise ConfigError(f"unknown knowledge base {_shown(name)} (list_knowledge_bases shows the names)")

    def _pending(self, project: str) -> int:
        try:
            return len(self.kb.journal.pending_findings(project))
        except sqlite3.Error:
            return 0

    def list(self) -> list[dict]:
        """Catalog metadata of every project (never KNOWLEDGE.md bodies or absolute paths)."""
        from kbwatch.pipeline.formats.knowledge_md import read_frontmatter
        from kbwatch.pipeline.project import discover_projects

        out = []
        for p in discover_projects(self.root):
            front = _frontmatter(p, read_frontmatter)
            manifest = _manifest(p)
            pending = self._pending(p.name)
            status, trust, _ = pack_labels(front, pending, self.settings)
            out.append({
                "name": p.name,
                "description": front.get("description", ""),
                "type": front.get("type", self.settings["project"]["type"]),
                "status": status,
                "trust": trust,
                "documents": sum(1 for f in manifest.get("files", []) if not f.get("removed")),
                "pending_reviews": pending,
                "last_ingest": manifest.get("last_ingest") or None,
            })
        return show_hidden(out)

    def read(self, name: str) -> dict:
        """Status and why, the overview and key points of project.md, and the file index."""
        from kbwatch.pipeline.formats.knowledge_md import read_frontmatter
        from kbwatch.pipeline.formats.project_md import ProjectMd

        project = self._project(name)
        name = project.name  # given back as shown (show_hidden), the name may differ
        front = _frontmatter(project, read_frontmatter)
        pending = self._pending(name)
        status = pack_labels(front, pending, self.settings)[0]
        reasons = []
        if pending:
            reasons.append(f"{pending} risk finding(s) wait for review (kbwatch review {name})")
        ov = overview_state(project, self.settings)
        if ov["warning"]:
            reasons.append(ov["warning"])
        if status in ("stale", "disputed", "archived") and not reasons:
            reasons.append(f"marked {status} in KNOWLEDGE.md")
        if not reasons:
            reasons.append("no findings pending" if status == "ready" else f"KNOWLEDGE.md says {status}")
        pm = ProjectMd.load(project / "project.md", name, self.settings["project"]["language"])
        # a held document's summary is its own text (its first sentence): not shown to a model
        held = self._held(name)
        files = [{"name": cells[0], "parsed": cells[1], "summary": "" if cells[1] in held else cells[3],
                  **({"held_back": held[cells[1]]} if cells[1] in held else {})} for cells in pm.rows.values()]
        return show_hidden({
            "name": name, "status": status, "status_reason": "; ".join(reasons),
            "overview": ov["overview"], "overview_built": ov["built"], "overview_stale": ov["stale"],
            "documents_since_overview": ov["documents_since"], "key_points": ov["key_points"],
            "files": files, "pending_reviews": pending,
        })

    def _held(self, project: str) -> dict[str, str]:
        """parsed path -> why, for the documents held back from models (findings pending or rejected)."""
        try:
            return self.kb.journal.held_documents(project)
        except sqlite3.Error:  # no journal to ask (as _pending)
            return {}

    # -- query -------------------------------------------------------------
    def query(self, query: str, name: str | None = None, max_files: int = 6, budget_chars: int = 4000,
              include_flagged: bool = False, auto: bool = False, record: bool | None = None) -> dict:
        """Seed 003's ``query_knowledge_base``: the fenced context (``text``) and its structure.

        Returns ``{"run_id", "status": "ok" | "no_match" | "skipped", "reason", "selected_files":
        [{"name", "path", "score"}], "source_anchors", "snippets": [{"name", "path", "anchor",
        "citation", "text", "score", ...}], "warnings", "missing", "token_estimate", "text",
        "record"}``; ``record`` is the Agent Knowledge context-resolution record (valid under
        v0.5 and current), kept in the journal always and in ``runs/<run_id>.json`` when
        ``record`` (default ``[ask] record_runs``). ``name=None`` searches every project.
        ``auto=True`` applies the shouldUse blacklist first."""
        if not isinstance(query, str) or not query.strip():
            raise ConfigError("the query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise ConfigError(f"the query is {len(query):,} characters long; ask in at most {MAX_QUERY_CHARS:,} "
                              "(a question, or a paragraph with it)")
        if not _is_utf8(query):  # e.g. argv bytes of a terminal in another encoding (surrogate escapes)
            raise ConfigError("the query is not valid UTF-8 text (check the terminal's or the caller's encoding)")
        if int(budget_chars) < 300:
            raise ConfigError(f"budget_chars {budget_chars} is too small: give at least 300 characters")
        if int(max_files) < 1:
            raise ConfigError("max_files must be at least 1")
        if auto:
            use, why = should_use_knowledge_base(query)
            if not use:
                return _skipped(query, why)
        projects = [self._project(name)] if name is not None else self.kb.projects()
        if not projects:
            raise ConfigError("there is no knowledge base under this root yet (kbwatch init NAME creates one)")
        if "index" not in self.kb.plugins.stages():
            raise KbwatchError("search is disabled: the index plugin is not loaded")
        project_md, extra = {}, {}
        for p in projects:
            ov = overview_state(p, self.settings)
            project_md[p.name] = vetted_project_md(p, ov)
            if ov["warning"]:
                extra[p.name] = [{"severity": "info" if not ov["built"] else "warning", "message": ov["warning"]}]
        # a [[...]] reference given back as it was shown (show_hidden) names the file it showed
        answer = self.kb.plugins.hook.kb_query(kb=self.kb, projects=projects, query=unshow_hidden(query), options={
            "max_files": int(max_files), "budget_chars": int(budget_chars), "include_flagged": bool(include_flagged),
            "project_md": project_md, "extra_warnings": extra,
        })
        if answer is None:
            raise KbwatchError("no plugin answers queries (the ask plugin is disabled)")
        self._remember(answer, projects, record)  # the record kept as it is; what is returned shows hidden characters
        return show_hidden(answer)

    def _remember(self, answer: dict, projects: list[Path], record: bool | None) -> None:
        """The context record: always into the journal, into runs/ when asked; never on a read-only base."""
        from kbwatch.pipeline.fsutil import atomic_write, utc_iso

        rec = answer.get("record")
        if rec is None:
            return
        if record is None:
            record = bool(self.settings.get("ask", {}).get("record_runs", False))
        paths = []
        if record and not self.readonly:
            active = {p["name"] for p in rec["activated_packs"]}
            for p in projects:
                if p.name in active or len(projects) == 1:
                    try:
                        atomic_write(p / "runs" / f"{rec['run_id']}.json", json.dumps(rec, ensure_ascii=False, indent=2) + "\n")
                        paths.append(f"{p.name}/runs/{rec['run_id']}.json")
                    except OSError as exc:
                        answer["warnings"].append({"severity": "warning",
                                                   "message": f"the context record could not be saved: {exc.strerror}"})
        elif record:
            answer["warnings"].append({"severity": "info",
                                       "message": "the knowledge base is read-only: the context record was not saved"})
        answer["record_path"] = paths[0] if paths else None
        if self.readonly:
            return
        try:
            self.kb.journal.record_context_run(
                rec["run_id"], ",".join(p.name for p in projects), rec["query"], rec["status"], answer["status"],
                rec, paths[0] if paths else None, utc_iso())
        except sqlite3.Error as exc:  # the answer matters more than its trace
            logger.warning("context run {} not journaled: {}", rec["run_id"], exc)

    # -- documents -----------------------------------------------------------
    def read_document(self, citation: str, name: str) -> dict:
        """The lines a citation names, fenced like a query result: ``{"name", "path", "anchor",
        "start_line", "end_line", "text", "lines"}``."""
        if not isinstance(citation, str) or not citation.strip():
            raise ConfigError("the citation is empty: give parsed/<file>.md, optionally #L12-L40 or a page anchor")
        project = self._project(name)
        citation = citation.strip()
        try:
            result = self.kb.plugins.hook.kb_read_document(kb=self.kb, project=project, citation=citation)
        except (ValueError, KbwatchError):
            if unshow_hidden(citation) == citation:
                raise
            # a citation given back as it was shown (show_hidden): the file's name holds hidden characters
            result = self.kb.plugins.hook.kb_read_document(kb=self.kb, project=project, citation=unshow_hidden(citation))
        if result is None:
            raise KbwatchError("no plugin reads documents (the ask plugin is disabled)")
        return show_hidden(result)

    # -- writing -------------------------------------------------------------
    def add_source(self, name: str, filename: str, content: str | None = None,
                   content_base64: str | None = None) -> dict:
        """Write a file into ``sources/`` (a temporary name the watcher ignores, then a rename)
        and ingest it through the same conflict → parse → scan → archive path.

        Returns ``{"run_id", "outcome", "error", "source"}``; ``outcome`` is ``queued``
        when a running service takes it. Never writes ``parsed/``."""
        from kbwatch.pipeline.fsutil import atomic_write

        project = self._project(name)
        if self.readonly:
            raise KbwatchError(f"knowledge base {name} is read-only here: add_source cannot write")
        if (content is None) == (content_base64 is None):
            raise ConfigError("give exactly one of content (text) or content_base64")
        rel = _source_name(filename, self.settings["ignore"]["patterns"])
        limit = float(self.settings["stages"]["parse"]["max_file_mb"]) * 1024 * 1024
        # refuse what is surely too large before making a second copy of it in memory
        # (a character is at least one byte; four base64 characters are at least three bytes)
        least = len(content) if content is not None else (len(content_base64 or "") // 4) * 3 - 2
        if least > limit:
            raise ConfigError(f"the content is larger than [stages.parse] max_file_mb (at least {least} bytes)")
        if content is not None:
            data = content.encode("utf-8")
        else:
            try:
                data = base64.b64decode(content_base64, validate=True)
            except (ValueError, TypeError):
                raise ConfigError("content_base64 is not valid base64") from None
        if len(data) > limit:
            raise ConfigError(f"the content is larger than [stages.parse] max_file_mb ({len(data)} bytes)")
        target = project / "sources" / rel
        try:
            os.close(confine.open_dir(target.parent, create=True))
            atomic_write(target, data)
        except confine.Escape:
            raise ConfigError(f"filename {_shown(filename)} leaves sources/") from None
        except OSError as exc:
            raise KbwatchError(f"could not write {_shown('sources/' + rel)}: {exc.strerror or exc}") from None
        source = f"sources/{rel}"
        from kbwatch.pipeline.status import service_state

        if service_state(self.kb)["state"] == "running":
            return {"run_id": None, "outcome": "queued", "error": None, "source": source}
        from kbwatch.pipeline.ingest import run_ingest

        try:
            _, runs = run_ingest(self.kb, [name])
        except KbwatchError:  # a service started meanwhile: it takes the file
            return {"run_id": None, "outcome": "queued", "error": None, "source": source}
        for run in runs:
            if run["project"] == name and run["source"] == source:
                return {"run_id": run["run_id"], "outcome": run["outcome"],
                        "error": run["error"] or (run["message"] if run["outcome"] in ("failed", "conflict") else None),
                        "source": source}
        last = self.kb.journal.latest_for_source(name, source)
        if last is not None and last.get("outcome") in ("failed", "conflict"):
            return {"run_id": last["run_id"], "outcome": last["outcome"], "error": last.get("error"), "source": source}
        return {"run_id": None, "outcome": "queued", "error": None, "source": source}

    def set_status(self, name: str, status: str) -> dict:
        """Set KNOWLEDGE.md's status (draft, ready, needs-review, stale, disputed, archived).
        ``ready`` is refused while findings wait for review."""
        from kbwatch.pipeline.config import state_dir
        from kbwatch.pipeline.fsutil import atomic_write
        from kbwatch.pipeline.project_lock import project_file_lock

        project = self._project(name)
        name = project.name
        if status not in KNOWLEDGE_STATUSES:
            raise ConfigError(f"unknown status {_shown(status)}: use one of {', '.join(KNOWLEDGE_STATUSES)}")
        if self.readonly:
            raise KbwatchError(f"knowledge base {name} is read-only here: its status cannot be changed")
        pending = self._pending(name)
        if status == "ready" and pending:
            raise KbwatchError(f"{name} cannot be ready while {pending} finding(s) wait for review (kbwatch review {name})")
        path = project / "KNOWLEDGE.md"
        with project_file_lock(project, state_dir(self.settings)):
            try:
                text = confine.read_text(path)
            except OSError:
                raise KbwatchError(f"{name} has no KNOWLEDGE.md yet (kbwatch init {name} writes it)") from None
            new, n = re.subn(r"(?m)^status: *\S+ *$", f"status: {status}", text, count=1)
            if not n:
                raise KbwatchError(f"{name}/KNOWLEDGE.md has no status line in its frontmatter")
            if new != text:
                atomic_write(path, new)
        return show_hidden({"name": name, "status": status})

    # -- records -------------------------------------------------------------
    def validate_run(self, run_id: str | None = None, record: Any = None) -> dict:
        """A context-resolution record checked against Agent Knowledge v0.5 and current:
        ``{"valid", "errors", "versions"}``. ``run_id`` looks the record up (journal, then runs/)."""
        from kbwatch.pipeline import context_record

        if (run_id is None) == (record is None):
            raise ConfigError("give exactly one of run_id or record")
        if run_id is not None:
            record = self._find_record(str(run_id))
        elif isinstance(record, str):
            try:
                record = json.loads(record)
            except ValueError:
                raise ConfigError("record is not valid JSON") from None
        return context_record.validate(record)

    def _find_record(self, run_id: str) -> dict:
        from kbwatch.pipeline.project import discover_projects

        if not re.fullmatch(r"[A-Za-z0-9._-]{1,200}", run_id):  # a longer one is no file name
            raise ConfigError(f"no context run {_shown(run_id)}")
        try:
            found = self.kb.journal.context_run(run_id)
        except sqlite3.Error:
            found = None
        if found is not None:
            return found
        for p in discover_projects(self.root):
            path = p / "runs" / f"{run_id}.json"
            if path.is_file():
                try:
                    return json.loads(confine.read_text(path))
                except ValueError:
                    raise KbwatchError(f"runs/{run_id}.json of {p.name} is not valid JSON") from None
                except OSError as exc:  # a link or a FIFO planted in runs/
                    raise KbwatchError(f"runs/{run_id}.json of {p.name}: {exc.strerror or exc}") from None
        raise ConfigError(f"no context run {_shown(run_id)} (in the journal or any runs/ folder)")


# --------------------------------------------------------------------------- helpers
def _frontmatter(project: Path, reader) -> dict:
    try:
        return reader(confine.read_text(project / "KNOWLEDGE.md"))
    except OSError:
        return {}


def _manifest(project: Path) -> dict:
    try:
        return json.loads(confine.read_text(project / "manifest.json"))
    except (OSError, ValueError):
        return {}


def _is_utf8(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8 (no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _source_name(filename: str, patterns: list[str] = ()) -> str:
    """The path under sources/ for ``filename``; a name that would leave sources/ is refused."""
    if not isinstance(filename, str) or not filename.strip():
        raise ConfigError("give a filename")
    name = filename.replace("\\", "/")
    parts = PurePosixPath(name).parts
    if (name.startswith("/") or re.match(r"^[A-Za-z]:", name) or not parts or ".." in parts
            or any(p.startswith(".") for p in parts) or "\0" in name or "\n" in name):
        raise ConfigError(f"filename {_shown(filename)} leaves sources/ (give a plain relative name such as notes.md)")
    if not PurePosixPath(name).suffix:
        raise ConfigError(f"filename {_shown(filename)} has no extension (kbwatch picks the parser by it)")
    rel = "/".join(parts)
    # a name the watcher and ingest never take would sit in sources/ for good, reported "queued"
    from kbwatch.pipeline.sources import is_ignored, name_problem

    problem = name_problem(rel)
    if problem:
        raise ConfigError(f"filename {_shown(filename)} is not taken: {problem}")
    ignored = next((p for p in parts if is_ignored(p, patterns)), None)
    if ignored is not None:
        raise ConfigError(f"filename {_shown(filename)} is not taken: {ignored!r} matches [ignore] patterns "
                          "(temporary and lock files are never ingested)")
    return rel


def _skipped(query: str, why: str) -> dict:
    from kbwatch.pipeline.fsutil import new_run_id

    return {
        "run_id": new_run_id("context"), "status": "skipped", "reason": why, "selected_files": [],
        "source_anchors": [], "snippets": [], "warnings": [], "missing": [], "token_estimate": 0,
        "text": f"知识库检索已跳过 / knowledge base not searched: {why}.", "record": None, "record_path": None,
    }
