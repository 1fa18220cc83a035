"""Record shaping: what a committed run becomes.

Owns the three shapes of a finished run (:class:`kbwatch.pipeline.execute.FinishedRun`)
after its commit, all built from the same fields:

- its run record, ``runs/<run_id>.json`` (:func:`file_record`, through
  :mod:`kbwatch.pipeline.formats.run_record`), with the project's pending findings
  count (:func:`pending_count`);
- its journal rows: the run (:func:`journal_row`) and its findings
  (:func:`finding_row`; stage rows are made by :mod:`kbwatch.pipeline.execute`);
- the :class:`kbwatch.pipeline.model.RunRecord` that ``kb_run_finished`` observers
  get (:func:`observed`).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from kbwatch.pipeline.formats.run_record import build_record
from kbwatch.pipeline.journal import Journal
from kbwatch.pipeline.model import RunRecord
from kbwatch.pipeline.retry_policy import backoff_seconds

if TYPE_CHECKING:  # pragma: no cover
    from kbwatch.pipeline.execute import FinishedRun


def file_record(run: "FinishedRun", pending: int) -> dict:
    """The content of ``runs/<run_id>.json``."""
    ctx = run.ctx
    return build_record(
        run.run_id, run.outcome, run.message, ctx.source_rel, run.sha256, ctx.outputs,
        ctx.diagnostics, ctx.findings if run.outcome == "done" else [], ctx.parsed_path, pending,
    )


def journal_row(run: "FinishedRun", project: str, record: dict, rec_rel: str, finished: str,
                settings: dict) -> dict:
    """The run's row in the journal's ``runs`` table (when it is due again, if retryable)."""
    attempts = run.job.attempt
    return {
        "run_id": run.run_id, "project": project, "source": run.ctx.source_rel, "name": run.name,
        "sha256": run.sha256, "size": run.size, "mtime_ns": run.mtime_ns, "outcome": run.outcome,
        "status": record["status"], "error": run.error, "reason": run.reason,
        "retryable": int(run.retryable), "attempts": attempts,
        "next_attempt_at": (time.time() + backoff_seconds(settings, attempts)) if run.retryable else None,
        "started_at": run.started_at, "finished_at": finished, "record_path": f"{project}/{rec_rel}",
        "blocked_by": json.dumps(run.blocked_by, ensure_ascii=False) if run.blocked_by else None,
    }


def finding_row(run: "FinishedRun", project: str, f) -> dict:
    return {
        "run_id": run.run_id, "project": project, "document": run.name, "path": run.ctx.parsed_path,
        "kind": f.kind, "rule": f.rule, "severity": f.severity, "line": f.line, "column": f.column,
        "offset": f.offset, "excerpt": f.excerpt, "fingerprint": f.fingerprint,
        "decision": getattr(f, "decision", "pending"), "decided_at": None, "current": 1,
    }


def recorded_finding_row(run_id: str, project: str, document: str, f: dict, decisions: dict,
                         current: int) -> dict:
    """The journal row of a finding read back from a run record (``read_record``), with the
    decision ``reviews.json`` (``decisions``) holds for its fingerprint: ``journal rebuild`` and
    the recovery of a run a crash cut after its commit."""
    decided = decisions.get(f["fingerprint"]) or {}
    known = decided.get("decision") in ("approved", "rejected")
    return {
        "run_id": run_id, "project": project, "document": document, "path": f["path"],
        "kind": f["kind"], "rule": f["rule"], "severity": f["severity"], "line": f["line"],
        "column": f["column"], "offset": f["offset"], "excerpt": f["excerpt"], "fingerprint": f["fingerprint"],
        "decision": decided["decision"] if known else "pending",
        "decided_at": decided.get("decided_at") if known else None, "current": current,
    }


def observed(run: "FinishedRun", project: str, row: dict) -> RunRecord:
    """The finished run as ``kb_run_finished`` observers see it."""
    return RunRecord(
        run_id=run.run_id, project=project, source=row["source"], name=run.name,
        outcome=run.outcome, status=row["status"], error=run.error, started_at=run.started_at,
        finished_at=row["finished_at"], record_path=row["record_path"],
        findings=list(run.ctx.findings) if run.ctx else [],
    )


def pending_count(journal: Journal, project: str, runs: list["FinishedRun"]) -> int:
    """Findings awaiting review once this batch is recorded (the older versions' findings replaced)."""
    try:
        existing = len(journal.pending_findings(project))
    except Exception:
        existing = 0
    replaced = {r.name for r in runs if r.outcome == "done"}
    if replaced and existing:
        rows = journal.pending_findings(project)
        existing = sum(1 for row in rows if row["document"] not in replaced)
    new = sum(
        1 for r in runs if r.outcome == "done" and r.ctx
        for f in r.ctx.findings if getattr(f, "decision", "pending") == "pending"
    )
    return existing + new
