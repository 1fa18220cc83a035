"""``kbwatch status``: service state, queue, projects, failures, pending reviews."""

from __future__ import annotations

import json
import os
import time

from kbwatch.pipeline import confine
from kbwatch.pipeline.formats.knowledge_md import read_frontmatter
from kbwatch.pipeline.formats.manifest import validate as validate_manifest
from kbwatch.pipeline.kb import KnowledgeBase
from kbwatch.pipeline.project import refused_projects


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def service_state(kb: KnowledgeBase) -> dict:
    row = kb.journal.service() or {}
    pid = row.get("pid")
    alive = _pid_alive(pid) and not row.get("stopped_at")
    now = time.time()
    hb = row.get("heartbeat")
    hb_age = (now - hb) if hb else None
    stale = hb_age is not None and hb_age > max(30.0, 6 * kb.settings["service"]["heartbeat_seconds"])
    if alive and not stale:
        state = "running"
    elif pid and not row.get("stopped_at"):
        state = "dead"  # it never said it stopped
    else:
        state = "stopped"
    return {
        "state": state,
        # the last service's pid when it died (DESIGN §12); none for a clean stop
        "pid": pid if state in ("running", "dead") else None,
        "last_pid": pid,
        "uptime_seconds": (now - row["started_at"]) if state == "running" and row.get("started_at") else None,
        "heartbeat_age_seconds": hb_age,
        "queue": (row.get("queue") or 0) if state == "running" else 0,
        "in_flight": (row.get("in_flight") or 0) if state == "running" else 0,
    }


def executor_state(kb: KnowledgeBase, svc: dict) -> dict:
    """Where parses run: what the running service last reported (kind, address, workers,
    tasks in flight), else what ``[stages.parse] executor`` configures."""
    row = kb.journal.service() or {}
    if svc["state"] == "running" and row.get("executor"):
        try:
            return json.loads(row["executor"])
        except ValueError:
            pass
    from kbwatch.pipeline.executors import parse_spec

    kind, arg = parse_spec(kb.settings["stages"]["parse"].get("executor", "local"))
    workers = arg if kind == "dask-local" else (kb.settings["service"]["workers"] if kind == "local" else None)
    return {"kind": kind, "address": arg if kind == "dask" else None, "workers": workers, "in_flight": 0,
            "state": "not running"}


def collect_status(kb: KnowledgeBase) -> dict:
    svc = service_state(kb)
    projects = []
    for p in kb.projects():
        documents, problem, read = 0, None, False
        try:
            manifest, read = json.loads(confine.read_text(p / "manifest.json")), True
        except FileNotFoundError:  # nothing ingested yet
            pass
        except (OSError, ValueError) as exc:
            problem = f"manifest.json cannot be read ({getattr(exc, 'strerror', None) or exc})"
        if read:
            shape = validate_manifest(manifest)
            if shape:  # the shapes ingest refuses ([], null, "files": 5 …): this project's problem, not the command's
                problem = f"manifest.json: {shape[0]}; fix or restore it"
            else:
                documents = sum(1 for f in manifest["files"] if not f.get("removed"))
        try:
            front = read_frontmatter(confine.read_text(p / "KNOWLEDGE.md"))
        except OSError:
            front = {}
        failed = [r for r in kb.journal.latest_failed(p.name) if os.path.lexists(p / r["source"])]
        pending = len(kb.journal.pending_findings(p.name))
        projects.append({
            "name": p.name, "status": front.get("status", "draft"), "documents": documents,
            "failed": len(failed), "pending_reviews": pending, "_failures": failed,
            **({"problem": problem} if problem else {}),  # only then: DESIGN §12's shape stays for a healthy one
        })
    public = {
        "running": svc["state"] == "running", "state": svc["state"], "pid": svc["pid"], "queue": svc["queue"],
        "in_flight": svc["in_flight"],
        "projects": [{k: v for k, v in pr.items() if not k.startswith("_")} for pr in projects],
    }
    executor = executor_state(kb, svc)
    if executor["kind"] != "local":  # only then, as refused_projects: the DESIGN §12 shape stays for the default
        public["executor"] = executor
    refused = [{"name": n, "reason": r} for n, r in refused_projects(kb.root)]
    if refused:  # only then: the stable shape (DESIGN §12) stays as it is for a healthy root
        public["refused_projects"] = refused
    return {"public": public, "service": svc, "executor": executor, "projects": projects,
            "last_runs": kb.journal.runs(limit=5)}


def render_status(data: dict) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from kbwatch.pipeline.fsutil import printable

    console = Console()
    svc = data["service"]
    if svc["state"] == "running":
        console.print(
            f"service: running (pid {svc['pid']}, up {svc['uptime_seconds']:.0f} s, heartbeat "
            f"{svc['heartbeat_age_seconds']:.0f} s ago), queue {svc['queue']}, in flight {svc['in_flight']}"
        )
    elif svc["state"] == "dead":
        console.print(f"service: DEAD (pid {svc['last_pid']} stopped without a clean shutdown)")
    else:
        console.print("service: stopped")
    ex = data["executor"]
    where = f" at {ex['address']}" if ex.get("address") else ""
    workers = "?" if ex.get("workers") is None else ex["workers"]
    state = f", {ex['state']}" if ex.get("state") else ""
    console.print(f"parse executor: {ex['kind']}{where}, {workers} worker(s), {ex.get('in_flight', 0)} task(s) in flight{state}",
                  markup=False)
    table = Table("project", "status", "documents", "failed", "pending reviews")
    for p in data["projects"]:  # names and paths are anyone's: shown as text, never as markup or escapes
        table.add_row(Text(printable(p["name"])), p["status"], str(p["documents"]), str(p["failed"]),
                      str(p["pending_reviews"]))
    console.print(table)
    for r in data["public"].get("refused_projects", []):
        console.print(printable(f"refused project {r['name']}: {r['reason']}"), markup=False)
    for p in data["projects"]:
        if p.get("problem"):
            console.print(printable(f"project {p['name']}: {p['problem']}"), markup=False)
    for p in data["projects"]:
        for r in p["_failures"][:10]:
            console.print(printable(f"  {p['name']}/{r['source']}: {r['outcome']}: {r['error'] or ''}"), markup=False)
    if data["last_runs"]:
        console.print("last runs:")
        for r in data["last_runs"]:
            console.print(printable(f"  {r['finished_at'] or r['started_at']}  {r['outcome']:<9} {r['project']}/{r['source']}"),
                          markup=False)
