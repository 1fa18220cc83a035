"""``kbwatch journal rebuild``: recreate the journal's runs and findings from runs/*.json.

Findings take their review decisions from ``reviews.json`` (the source of
truth) and stop counting for documents the manifest marks removed; each
project's KNOWLEDGE.md status is then rewritten from the rebuilt pending
findings (by the stages' ``refresh``), so it never says ``ready`` while
findings wait for review. Also
used to fill a journal that replaced a corrupt one (``KnowledgeBase.journal``).
"""

from __future__ import annotations

import json
import os
import re
from contextlib import contextmanager, nullcontext
from datetime import datetime, timezone
from typing import Iterator

from kbwatch.pipeline import confine
from kbwatch.pipeline.checkpoints import checkpoint
from kbwatch.pipeline.formats.manifest import Manifest
from kbwatch.pipeline.formats.run_record import read_record
from kbwatch.pipeline.fsutil import atomic_write
from kbwatch.pipeline.kb import KnowledgeBase
from kbwatch.pipeline.lazylog import logger
from kbwatch.pipeline.project import is_project, project_refusal, refused_projects
from kbwatch.pipeline.project_lock import exclusive
from kbwatch.pipeline.reviews import load_decisions
from kbwatch.pipeline.run_records import recorded_finding_row
from kbwatch.pipeline.sources import split_name

STAMP_RE = re.compile(r"^ingest-(\d{8}T\d{6}Z)-")


def _stamp_iso(run_id: str) -> str | None:
    m = STAMP_RE.match(run_id)
    if not m:
        return None
    dt = datetime.strptime(m.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def rebuild_journal(kb: KnowledgeBase) -> tuple[int, int]:
    """Read every project's runs/ first, then replace the journal's content in one transaction,
    then let KNOWLEDGE.md follow: a rebuild killed part-way leaves the journal as it was (it
    used to empty the journal and fill it project by project, so a kill left the later projects
    with no runs and no findings, and their KNOWLEDGE.md could then be written ``ready``).

    A refused project (containment: nothing is read through a link) keeps the rows the journal
    held for it, with a warning, and is listed in ``<state>/journal-unread.json``: its runs/ are
    read again once it is put right (:func:`read_again`). Dropping its rows made its next commit
    write KNOWLEDGE.md ``ready`` while its findings waited."""
    journal = kb.journal
    refused = dict(refused_projects(kb.root))
    for name, reason in sorted(refused.items()):
        logger.warning("journal rebuild: project {} is refused ({}); its runs are read once it is put right",
                       name, reason)
    all_rows: list[dict] = []
    all_findings: list[dict] = []
    projects = kb.projects()
    for project in projects:
        rows, findings = _project_rows(project)
        all_rows += rows
        all_findings += findings
    journal.finish_runs(all_rows, [], all_findings, replace_all=True, keep_projects=refused)
    with _unread_lock(kb):
        _note_unread(kb, sorted(refused))
    for project in projects:
        _refresh_knowledge(kb, project)
    return len(all_rows), len(all_findings)


UNREAD = "journal-unread.json"  # in the state dir: projects whose runs/ the last rebuild could not read


@contextmanager
def _unread_lock(kb: KnowledgeBase) -> Iterator[None]:
    """Held around each read-modify-write of :data:`UNREAD` (a rebuild that writes the list, and
    every :func:`read_again` that takes the projects it read off it, may run in several processes
    at once: a command's read written back after a rebuild's dropped what the rebuild listed)."""
    with exclusive(kb.state / "locks" / "journal-unread.lock"):
        yield


def _unread(kb: KnowledgeBase) -> list[str]:
    try:
        names = json.loads(confine.read_text(kb.state / UNREAD)).get("projects", [])
    except FileNotFoundError:
        return []
    except (OSError, ValueError, AttributeError) as exc:
        logger.warning("{} is unreadable ({}); kbwatch journal rebuild reads every project again", UNREAD, exc)
        return []
    return [n for n in names if isinstance(n, str)]


def _note_unread(kb: KnowledgeBase, names: list[str]) -> None:
    path = kb.state / UNREAD
    try:
        if names:
            atomic_write(path, json.dumps({"projects": names}, ensure_ascii=False) + "\n")
        else:
            path.unlink(missing_ok=True)
    except OSError as exc:
        logger.warning("could not note the projects the journal rebuild could not read in {}: {}", path, exc)


def read_again(kb: KnowledgeBase, only: str | None = None, lock: bool = False) -> list[str]:
    """Read again the runs/ of the projects a journal rebuild could not read (refused then) that
    are put right now (or of ``only``, if it is one of them): their journal rows are replaced by
    what runs/ holds and KNOWLEDGE.md follows. Returns their names; cheap when there are none.
    Never raises for a project: one that cannot be read is said in a warning and tried again
    at the next call. With ``lock`` (a command, which holds no project's lock) each project is
    read and written under its file lock, so a running service's commit cannot fall between."""
    names = _unread(kb)
    if not names or (only is not None and only not in names):
        return []
    checkpoint("unread:read", ",".join(names))
    done = []
    for name in names:
        project = kb.root / name
        if (only is not None and name != only) or project_refusal(project) is not None:
            continue
        if is_project(project):
            held = kb.project_lock(project) if lock else nullcontext()
            try:
                with held:
                    rows, findings = _project_rows(project)
                    kb.journal.finish_runs(rows, [], findings, replace_projects=[name])
                    _refresh_knowledge(kb, project)
            except Exception as exc:  # noqa: BLE001 - the caller (a start, the service) goes on; tried again next time
                logger.warning("project {}: its runs/ could not be read into the journal again: {} "
                               "(kbwatch journal rebuild does)", name, exc)
                continue
            logger.info("project {} is put right: its journal was read again from its runs/ ({} runs)", name, len(rows))
        done.append(name)  # (a project deleted since keeps its old rows, as any deleted project does)
    if done:
        with _unread_lock(kb):  # the list as it is now (a rebuild may have written it since): less what was read
            _note_unread(kb, [n for n in _unread(kb) if n not in done])
    return done


def _project_rows(project) -> tuple[list[dict], list[dict]]:
    """The journal rows (runs, findings) of one project's runs/*.json."""
    runs_dir = project / "runs"
    if not runs_dir.is_dir():
        return [], []
    rows, findings = [], []
    decisions = load_decisions(project)
    files = sorted(p for p in runs_dir.glob("ingest-*.json"))
    latest_done: dict[str, str] = {}
    for path in files:
        try:
            record = json.loads(confine.read_text(path))
        except (OSError, ValueError) as exc:
            logger.warning("skipping unreadable {}: {}", path, exc)
            continue
        info = read_record(record)
        source = info["source"] or ""
        name, _ = split_name(source.removeprefix("sources/"))
        started = _stamp_iso(info["run_id"] or path.stem) or ""
        finished = datetime.fromtimestamp(os.path.getmtime(path), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        failed = info["outcome"] in ("failed", "conflict")
        rows.append({
            "run_id": info["run_id"], "project": project.name, "source": source, "name": name,
            "sha256": info["sha256"], "size": None, "mtime_ns": None, "outcome": info["outcome"],
            "status": info["status"], "error": info["message"] if failed else None, "reason": None,
            "retryable": 0, "attempts": 1, "next_attempt_at": None, "started_at": started,
            "finished_at": finished, "record_path": f"{project.name}/runs/{path.name}", "blocked_by": None,
        })
        if info["outcome"] == "done":
            latest_done[name] = info["run_id"]
        findings += [recorded_finding_row(info["run_id"], project.name, name, f, decisions, 0)
                     for f in info["findings"]]
    removed = _removed_documents(project)
    for f in findings:
        f["current"] = int(latest_done.get(f["document"]) == f["run_id"] and f["document"] not in removed)
    return rows, findings


def _removed_documents(project) -> set[str]:
    try:
        manifest = Manifest.load(project / "manifest.json", project.name, "")
    except Exception:  # an unreadable manifest: count every document's findings
        return set()
    return {f["name"] for f in manifest.files() if f.get("removed")}


def _refresh_knowledge(kb: KnowledgeBase, project) -> None:
    """Let enabled stages that keep files derived from the journal (the knowledge stage's
    KNOWLEDGE.md status) rewrite them from the rebuilt findings: stages with a
    ``refresh(project, journal, settings)`` method."""
    try:
        stages = kb.plugins.configured_stages()
    except Exception as exc:  # a broken pipeline config is reported by the commands that run it
        logger.debug("no stage refresh after the journal rebuild: {}", exc)
        return
    for stage in stages:
        refresh = getattr(stage, "refresh", None)
        if refresh is None:
            continue
        try:
            refresh(project, kb.journal, kb.settings)
        except Exception as exc:  # a broken project.md/manifest must not stop the rebuild
            logger.warning("{}: {} not refreshed after the journal rebuild: {}", project.name, stage.name, exc)
