"""``kbwatch review NAME``: list pending risk findings; approve or reject them.

Decisions are keyed by a finding's fingerprint (rule + matched text) and
kept in ``<project>/reviews.json`` (the journal mirrors them), so the same
content re-ingested later is not asked about again. Approving means the text
may be used; rejecting means it is confirmed unsafe: the document stays
excluded from ``ask`` unless ``--include-flagged``. Each decision announces
``kb_project_changed(reason="review")``, so KNOWLEDGE.md returns to ``ready``
once nothing is pending.
"""

from __future__ import annotations

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.fsutil import utc_iso
from kbwatch.pipeline.reviews import load_decisions, save_decisions


def decide(kb, project, ids: list[int], decision: str, all_pending: bool = False) -> list[dict]:
    """Record ``decision`` for findings (by journal id) of ``project``; returns them.

    reviews.json, the journal and KNOWLEDGE.md change under the project's
    file lock (one writer per project)."""
    from kbwatch.pipeline.config import state_dir
    from kbwatch.pipeline.project_lock import project_file_lock, say_waiting

    with project_file_lock(project, state_dir(kb.settings), on_wait=say_waiting(project)):
        return _decide_locked(kb, project, ids, decision, all_pending)


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
    with journal.transaction() as db:
        for row in chosen:
            decisions[row["fingerprint"]] = {
                "decision": decision, "rule": row["rule"], "excerpt": row["excerpt"],
                "document": row["document"], "decided_at": when,
            }
            db.execute(
                "update findings set decision = ?, decided_at = ? where project = ? and fingerprint = ?",
                [decision, when, project.name, row["fingerprint"]],
            )
    save_decisions(project, decisions)
    # KNOWLEDGE.md's status follows (the knowledge plugin reacts)
    kb.plugins.hook.kb_project_changed(project=project, reason="review", settings=kb.settings, journal=kb.journal)
    return chosen


@hookimpl
def kb_register_commands(cli):
    import json

    import click

    from kbwatch.pipeline.cli import json_option, open_kb, root_options

    @cli.command("review")
    @click.argument("name")
    @click.option("--approve", "approve", multiple=True, type=int, metavar="ID", help="Approve finding ID (repeatable).")
    @click.option("--reject", "reject", multiple=True, type=int, metavar="ID", help="Reject finding ID (repeatable).")
    @click.option("--all", "approve_all", is_flag=True, help="Approve every pending finding.")
    @json_option
    @root_options
    def review_command(name, approve, reject, approve_all, as_json, root, config_file):
        """List a project's pending risk findings, or approve/reject them.

        Example: kbwatch review 技术方案 --approve 12 --reject 13
        """
        kb = open_kb(root, config_file, log_files=False)
        project = kb.project(name)
        changed = []
        if approve or approve_all:
            changed += decide(kb, project, list(approve), "approved", all_pending=approve_all)
        if reject:
            changed += decide(kb, project, list(reject), "rejected")
        if changed:
            for row in changed:
                click.echo(f"{row['id']}: {row['rule']} in {row['document']} -> "
                           f"{'rejected' if row['id'] in reject else 'approved'}")
            left = len(kb.journal.pending_findings(project.name))
            click.echo(f"{left} finding(s) still pending in {name}")
            kb.close()
            return
        rows = kb.journal.pending_findings(project.name)
        if as_json:
            click.echo(json.dumps([
                {k: r[k] for k in ("id", "document", "path", "kind", "rule", "severity", "line", "column",
                                   "excerpt", "fingerprint")}
                for r in rows
            ], ensure_ascii=False))
        elif not rows:
            click.echo(f"{name}: nothing pending review")
        else:
            for r in rows:
                click.echo(f"{r['id']:>5}  {r['severity']:<6} {r['kind']}/{r['rule']}  {r['path']}:{r['line']}:{r['column']}  "
                           f"{r['excerpt']}  [{r['fingerprint']}]")
            click.echo(f"{len(rows)} pending; approve with --approve ID or --all, reject with --reject ID")
        kb.close()
