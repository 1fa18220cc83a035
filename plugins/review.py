"""``kbwatch review NAME``: list pending risk findings; approve or reject them.

Decisions are keyed by a finding's fingerprint (rule + matched text) and
kept in ``<project>/reviews.json`` (the journal mirrors them), so the same
content re-ingested later is not asked about again. Approving means the text
may be used; rejecting means it is confirmed unsafe: the document stays
excluded from ``ask`` unless ``--include-flagged``. Each decision announces
``kb_project_changed(reason="review")``, so KNOWLEDGE.md returns to ``ready``
once nothing is pending.

The listing groups findings per document and rule, one line each with a count,
the lines they are on and every finding ID (ranges compressed: ``12-17,20``);
``--each`` lists one line per finding. ``--approve``/``--reject`` take IDs and
ranges as listed.
"""

from __future__ import annotations

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.fsutil import printable
from kbwatch.pipeline.model import location
from kbwatch.pipeline.reviews import decide, heal

_SEVERITY = {"low": 0, "medium": 1, "high": 2}


def parse_ids(values: tuple[str, ...]) -> list[int]:
    """``("12", "14-16,20")`` -> ``[12, 14, 15, 16, 20]``; ValueError naming a bad item."""
    out: list[int] = []
    for value in values:
        for item in str(value).replace(" ", "").split(","):
            if not item:
                continue
            first, sep, last = item.partition("-")
            if not first.isdigit() or (sep and not last.isdigit()):
                raise ValueError(f"not a finding ID or range: {item!r} (use 12, 12-17 or 12,14)")
            lo, hi = int(first), int(last) if sep else int(first)
            if hi < lo or hi - lo > 100_000:
                raise ValueError(f"not a finding ID range: {item!r}")
            out.extend(range(lo, hi + 1))
    return out


def id_ranges(ids: list[int]) -> str:
    """``[12, 13, 14, 20]`` -> ``"12-14,20"``."""
    ids = sorted(set(ids))
    parts: list[str] = []
    start = prev = None
    for i in ids + [None]:
        if start is not None and (i is None or i != prev + 1):
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = None
        if i is not None and start is None:
            start = i
        prev = i
    return ",".join(parts)


def group_rows(rows: list[dict]) -> list[dict]:
    """Pending findings per (document path, rule), in listing order: the first row, how many,
    the highest severity, the lines and the IDs."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:  # findings in the file's name (line 0) are a group of their own
        groups.setdefault((r["path"], r["kind"], r["rule"], r["line"] == 0), []).append(r)
    out = []
    for (path, kind, rule, _), rs in groups.items():
        out.append({
            "first": rs[0], "path": path, "kind": kind, "rule": rule, "count": len(rs),
            "severity": max((r["severity"] for r in rs), key=lambda s: _SEVERITY.get(s, 0)),
            "lines": sorted({r["line"] for r in rs}), "ids": [r["id"] for r in rs],
        })
    return out


def group_line(g: dict) -> str:
    r = g["first"]
    lines = g["lines"]
    if g["count"] == 1:
        where = location(g["path"], r["line"], r["column"])
    elif lines == [0]:
        where = f"{printable(g['path'])} ×{g['count']} (in the file name)"
    else:
        where = f"{printable(g['path'])} ×{g['count']} (line{'s' if len(lines) > 1 else ''} " \
            f"{', '.join(map(str, lines[:6]))}{', …' if len(lines) > 6 else ''})"
    return f"{id_ranges(g['ids']):>9}  {g['severity']:<6} {g['kind']}/{g['rule']}  {where}  {r['excerpt']}"


@hookimpl
def kb_register_commands(cli):
    import json

    import click

    from kbwatch.pipeline.cli import json_option, open_kb, root_options

    @cli.command("review")
    @click.argument("name")
    @click.option("--approve", "approve", multiple=True, metavar="IDS",
                  help="Approve these findings: an ID, a range 12-17 or a list 12,14 (repeatable).")
    @click.option("--reject", "reject", multiple=True, metavar="IDS",
                  help="Reject these findings (IDs as for --approve; repeatable).")
    @click.option("--all", "approve_all", is_flag=True, help="Approve every pending finding.")
    @click.option("--each", is_flag=True, help="List one line per finding instead of one per document and rule.")
    @json_option
    @root_options
    def review_command(name, approve, reject, approve_all, each, as_json, root, config_file):
        """List a project's pending risk findings, or approve/reject them.

        Example: kbwatch review 技术方案 --approve 12-14 --reject 15
        """
        try:
            approve, reject = parse_ids(approve), parse_ids(reject)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        kb = open_kb(root, config_file, log_files=False)
        project = kb.project(name)
        kb.catch_up()
        changed = []
        if approve or approve_all:
            changed += decide(kb, project, list(approve), "approved", all_pending=approve_all)
        if reject:
            changed += decide(kb, project, list(reject), "rejected")
        if changed:
            for row in changed:
                click.echo(printable(f"{row['id']}: {row['rule']} in {row['document']} -> "
                                     f"{'rejected' if row['id'] in reject else 'approved'}"))
            left = len(kb.journal.pending_findings(project.name))
            click.echo(f"{left} finding(s) still pending in {name}")
            kb.close()
            return
        if not kb.readonly:
            heal(kb, project)  # a review killed part-way: the journal and KNOWLEDGE.md follow reviews.json
        rows = kb.journal.pending_findings(project.name)
        if as_json:
            click.echo(json.dumps([
                {k: r[k] for k in ("id", "document", "path", "kind", "rule", "severity", "line", "column",
                                   "excerpt", "fingerprint")}
                for r in rows
            ], ensure_ascii=False))
        elif not rows:
            click.echo(f"{name}: nothing pending review")
        elif each:
            for r in rows:
                click.echo(f"{r['id']:>5}  {r['severity']:<6} {r['kind']}/{r['rule']}  {location(r['path'], r['line'], r['column'])}  "
                           f"{r['excerpt']}  [{r['fingerprint']}]")
            click.echo(f"{len(rows)} pending; approve with --approve ID or --all, reject with --reject ID")
        else:
            groups = group_rows(rows)
            for g in groups:
                click.echo(group_line(g))
            click.echo(f"{len(rows)} pending in {len(groups)} group(s) (one line per document and rule; --each lists "
                       f"them one by one); approve with --approve IDS (e.g. 12-17) or --all, reject with --reject IDS")
        kb.close()
