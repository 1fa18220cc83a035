"""Review decisions: ``<project>/reviews.json``, keyed by finding fingerprint.

A fingerprint is a hash of (rule, matched text), so re-ingesting the same
content does not ask again. The file is the source of truth; the journal's
``findings.decision`` column mirrors it. :func:`decide` records decisions under the
project's file lock; ``kbwatch review`` and the status page both call it.
"""

from __future__ import annotations

import json
from pathlib import Path

from kbwatch.pipeline import confine
from kbwatch.pipeline.fsutil import atomic_write, utc_iso

REVIEWS_FILE = "reviews.json"


def load_decisions(project: Path) -> dict[str, dict]:
    path = project / REVIEWS_FILE
    try:
        data = json.loads(confine.read_text(path))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return {}
    return data.get("decisions", {}) if isinstance(data, dict) else {}


def save_decisions(project: Path, decisions: dict[str, dict]) -> None:
    body = {"decisions": dict(sorted(decisions.items()))}
    atomic_write(project / REVIEWS_FILE, json.dumps(body, ensure_ascii=False, indent=2) + "\n")


def decide(kb, project, ids: list[int], decision: str, all_pending: bool = False, on_wait=None) -> list[dict]:
    """Record ``decision`` for findings (by journal id) of ``project``; returns them.

    reviews.json, the journal and KNOWLEDGE.md change under the project's
    file lock (one writer per project). ``on_wait``: called once the wait for the
    lock gets noticeable (default: a line on stderr, as a command says it)."""
    from kbwatch.pipeline.config import state_dir
    from kbwatch.pipeline.project_lock import project_file_lock, say_waiting

    with project_file_lock(project, state_dir(kb.settings), on_wait=on_wait or say_waiting(project)):
        _heal_locked(kb, project)
        return _decide_locked(kb, project, ids, decision, all_pending)


def sync_decisions(journal, project: Path) -> int:
    """Make the journal's findings of ``project`` carry reviews.json's decisions (the file is the
    truth): a decided fingerprint the journal has otherwise, and a decision the journal has that
    the file does not (back to ``pending``). Returns how many findings changed."""
    decided = {fp: d for fp, d in load_decisions(project).items()
               if isinstance(d, dict) and d.get("decision") in ("approved", "rejected")}
    changed = 0
    with journal.transaction() as db:
        for fingerprint, d in decided.items():
            changed += db.execute(
                "update findings set decision = ?, decided_at = ? where project = ? and fingerprint = ? "
                "and decision != ?", [d["decision"], d.get("decided_at"), project.name, fingerprint, d["decision"]],
            ).rowcount
        rows = db.execute("select distinct fingerprint from findings where project = ? and decision != 'pending'",
                          [project.name]).fetchall()
        for (fingerprint,) in rows:
            if fingerprint not in decided:
                changed += db.execute("update findings set decision = 'pending', decided_at = null "
                                      "where project = ? and fingerprint = ?", [project.name, fingerprint]).rowcount
    return changed


def heal(kb, project: Path) -> bool:
    """After a ``review`` that was killed part-way: the journal follows reviews.json again, and
    KNOWLEDGE.md is rewritten when its status says otherwise than the pending findings
    (``needs-review`` with nothing pending, ``ready`` with findings waiting). Under the
    project's file lock; returns whether anything was rewritten."""
    from kbwatch.pipeline.config import state_dir
    from kbwatch.pipeline.project_lock import project_file_lock

    with project_file_lock(project, state_dir(kb.settings)):
        return _heal_locked(kb, project)


def _heal_locked(kb, project: Path) -> bool:
    from kbwatch.pipeline.formats.knowledge_md import read_frontmatter

    changed = sync_decisions(kb.journal, project)
    try:
        status = read_frontmatter(confine.read_text(project / "KNOWLEDGE.md")).get("status")
    except OSError:
        status = None
    pending = bool(kb.journal.pending_findings(project.name))
    if changed or (status == "needs-review" and not pending) or (status == "ready" and pending):
        kb.plugins.hook.kb_project_changed(project=project, reason="review", settings=kb.settings, journal=kb.journal)
        return True
    return False


def _decide_locked(kb, project, ids: list[int], decision: str, all_pending: bool) -> list[dict]:
    from kbwatch.pipeline.errors import ConfigError

    journal = kb.journal
    pending = {row["id"]: row for row in journal.pending_findings(project.name)}
    chosen = list(pending.values()) if all_pending else []
    for fid in ids:
        rows = list(journal.db.query("select * from findings where id = ? and project = ?", [fid, project.name]))
        if not rows:
            raise ConfigError(f"no finding {fid} in project {project.name} (kbwatch review {project.name} lists them)")
        chosen.append(rows[0])
    decisions = load_decisions(project)
    when = utc_iso()
    for row in chosen:
        decisions[row["fingerprint"]] = {
            "decision": decision, "rule": row["rule"], "excerpt": row["excerpt"],
            "document": row["document"], "decided_at": when,
        }
    # the file first (the truth), then its mirror, then KNOWLEDGE.md: a command killed between
    # two of these leaves what :func:`heal` puts right (never a journal ahead of the file)
    save_decisions(project, decisions)
    with journal.transaction() as db:
        for row in chosen:
            db.execute(
                "update findings set decision = ?, decided_at = ? where project = ? and fingerprint = ?",
                [decision, when, project.name, row["fingerprint"]],
            )
    # KNOWLEDGE.md's status follows (the knowledge plugin reacts)
    kb.plugins.hook.kb_project_changed(project=project, reason="review", settings=kb.settings, journal=kb.journal)
    return chosen
