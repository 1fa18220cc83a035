"""runs/ingest-<stamp>-<id>.json: a compile-run record (DESIGN §6), and back.

The record has exactly the keys of the Agent Knowledge compile-run schema.
Outcome and findings travel in ``diagnostics`` in a fixed, parseable form so
``kbwatch journal rebuild`` can recreate the journal from runs/ alone:

- first diagnostic: ``outcome=<done|duplicate|conflict|failed>: <message>``
- one per finding: ``finding <kind>/<rule> (<severity>) at line L, column C,
  offset O [<fingerprint>]: <masked excerpt>``
"""

from __future__ import annotations

import re
from typing import Any

from kbwatch.pipeline import __version__

OUTCOME_RE = re.compile(r"^outcome=(done|duplicate|conflict|failed): ?(.*)$", re.S)
FINDING_RE = re.compile(
    r"^finding (?P<kind>[\w-]+)/(?P<rule>[\w.:-]+) \((?P<severity>low|medium|high)\) "
    r"at line (?P<line>\d+), column (?P<column>\d+), offset (?P<offset>\d+) "
    r"\[(?P<fingerprint>[0-9a-f]+)\]: (?P<excerpt>.*)$",
    re.S,
)
OUTCOME_STATUS = {"done": "passed", "duplicate": "passed", "conflict": "failed", "failed": "failed"}


def finding_message(f) -> str:
    return (
        f"finding {f.kind}/{f.rule} ({f.severity}) at line {f.line}, column {f.column}, "
        f"offset {f.offset} [{f.fingerprint}]: {f.excerpt}"
    )


def build_record(
    run_id: str,
    outcome: str,
    message: str,
    source_rel: str,
    sha256: str | None,
    outputs: dict[str, str],
    diagnostics: list[dict],
    findings: list,
    parsed_rel: str | None,
    pending: int,
) -> dict[str, Any]:
    status = OUTCOME_STATUS[outcome]
    if status == "passed" and pending:
        status = "needs-review"
    severity = "info" if outcome in ("done", "duplicate") else "error"
    diags = [{"severity": severity, "path": source_rel, "message": f"outcome={outcome}: {message}"}]
    diags += [
        {"severity": d["severity"], "path": d["path"], "message": d["message"]}
        for d in diagnostics
    ]
    for f in findings:
        diags.append(
            {
                "severity": "warning" if f.severity != "low" else "info",
                "path": parsed_rel or source_rel,
                "message": finding_message(f),
            }
        )
    inp: dict[str, Any] = {"path": source_rel}
    if sha256:
        inp["sha256"] = sha256
    record: dict[str, Any] = {
        "run_id": run_id,
        "trigger": "ingest",
        "status": status,
        "compiler": {"tool": "kbwatch", "version": __version__},
        "inputs": [inp],
        "outputs": [{"path": p, "operation": op} for p, op in outputs.items()],
        "diagnostics": diags,
        "review": {
            "required": bool(pending),
            "reason": (
                f"{pending} risk finding(s) need review (kbwatch review)"
                if pending
                else "no pending findings"
            ),
        },
        "profile": "document-first",
        "runtime_mode": "data",
    }
    return record


def read_record(record: dict) -> dict[str, Any]:
    """Recover outcome, message, source, hash and findings from a record."""
    outcome, message = "failed", ""
    findings = []
    for d in record.get("diagnostics", []):
        m = OUTCOME_RE.match(d.get("message", ""))
        if m and outcome == "failed" and not message:
            outcome, message = m.group(1), m.group(2)
            continue
        m = FINDING_RE.match(d.get("message", ""))
        if m:
            item = m.groupdict()
            for k in ("line", "column", "offset"):
                item[k] = int(item[k])
            item["path"] = d.get("path")
            findings.append(item)
    inputs = record.get("inputs") or [{}]
    return {
        "run_id": record.get("run_id"),
        "outcome": outcome,
        "message": message,
        "status": record.get("status"),
        "source": inputs[0].get("path"),
        "sha256": inputs[0].get("sha256"),
        "findings": findings,
    }
