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
from kbwatch.pipeline.reviews import decide


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
