"""What the status page shows and changes, through the same code the commands use.

Reads: ``kbwatch status`` (:func:`kbwatch.pipeline.status.collect_status`), the
journal's runs and pending findings. Writes: ``retry``
(:mod:`kbwatch.pipeline.retry_policy`) and ``review``
(:func:`kbwatch.pipeline.reviews.decide`, under the project's file lock).
The search box goes through :func:`search`: the query API that ``kbwatch ask``
and the MCP server call (:meth:`kbwatch.pipeline.api.Knowledge.query`).
"""

from __future__ import annotations

from kbwatch.pipeline.errors import ConfigError, KbwatchError

OUTCOMES = ("done", "duplicate", "conflict", "failed", "running", "queued")
RUN_LIMIT = 100


class NotFound(KbwatchError):
    """An unknown project, run or finding named by a request."""


def overview(kb) -> dict:
    from kbwatch.pipeline.status import collect_status

    data = collect_status(kb)
    data["recent"] = kb.journal.runs(limit=20)
    return data


def runs(kb, project: str | None, outcome: str | None, limit: int = RUN_LIMIT) -> list[dict]:
    return kb.journal.runs(project or None, outcome if outcome in OUTCOMES else None, limit)


def public_run(row: dict) -> dict:
    """A run as ``kbwatch runs --json`` prints it (DESIGN §12)."""
    return {
        "run_id": row["run_id"], "project": row["project"], "source": row["source"], "name": row["name"],
        "outcome": row["outcome"], "status": row["status"], "attempts": row["attempts"] or 1,
        "error": row["error"], "started_at": row["started_at"], "finished_at": row["finished_at"],
    }


def project_names(kb) -> list[str]:
    return [p.name for p in kb.projects()]


def _project(kb, name: str):
    if not isinstance(name, str) or not name:
        raise ConfigError("name the project")
    try:
        return kb.project(name)
    except ConfigError as exc:
        raise NotFound(str(exc)) from None


def pending(kb, project: str | None) -> list[dict]:
    names = [project] if project else project_names(kb)
    from kbwatch.pipeline.model import location

    out = []
    for name in names:
        out += [{**r, "where": location(r["path"], r["line"], r["column"])} for r in kb.journal.pending_findings(name)]
    return out


def retry(kb, project: str, ids: list[str], all_failed: bool) -> dict:
    """``kbwatch retry`` for one project's runs (ids) or every failed one (``all``)."""
    from kbwatch.pipeline.retry_policy import request_retry, retryable_latest

    proj = _project(kb, project)
    rows = retryable_latest(kb.journal, [proj.name]) if all_failed else []
    for rid in ids:
        row = kb.journal.get_run(str(rid))
        if row is None or row["project"] != proj.name:
            raise NotFound(f"no run {rid} in project {proj.name}")
        rows.append(row)
    retried, skipped = [], []
    for row in rows:
        (retried if request_retry(kb.journal, row) else skipped).append(row["run_id"])
    return {"project": proj.name, "retried": retried, "not_failed": skipped}


def review(kb, project: str, ids: list, all_pending: bool, decision: str) -> dict:
    """``kbwatch review --approve/--reject`` (``all`` approves or rejects every pending finding)."""
    from kbwatch.pipeline.reviews import decide

    proj = _project(kb, project)
    try:
        numbers = [int(i) for i in ids]
    except (TypeError, ValueError):
        raise ConfigError("finding ids are numbers") from None
    try:
        rows = decide(kb, proj, numbers, decision, all_pending=all_pending, on_wait=lambda: None)
    except ConfigError as exc:
        raise NotFound(str(exc)) from None
    return {"project": proj.name, decision: [r["id"] for r in rows],
            "pending": len(kb.journal.pending_findings(proj.name))}


def search(kb, project: str, question: str, max_files: int = 4, budget: int = 4000) -> dict | None:
    """The cited context ``kbwatch ask PROJECT QUESTION`` gives, as data (None: search is disabled).

    Goes through the same query API as ``ask`` and the MCP tool (the context run is journaled)."""
    from kbwatch.pipeline.api import Knowledge

    _project(kb, project)
    if "index" not in kb.plugins.stages():
        return None
    answer = Knowledge.of(kb).query(question, name=project, max_files=max_files, budget_chars=budget)
    excluded = sorted({w.get("path") for w in answer.get("warnings", [])
                       if isinstance(w, dict) and w.get("path") and "excluded" in str(w.get("message", ""))})
    return {"status": answer["status"], "text": answer["text"], "nothing_found": answer["status"] != "ok",
            "snippets": answer["snippets"], "excluded": excluded, "warnings": answer.get("warnings", [])}
