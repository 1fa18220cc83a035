"""A knowledge-base root opened for work: settings, plugins, journal, projects.

Holds what ``ingest`` and ``watch`` share: creating projects, deciding which
files in sources/ need a run (new, changed, due for retry), and recovering
runs a crash left in flight.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from kbwatch.pipeline import confine, previous_text
from kbwatch.pipeline.checkpoints import checkpoint
from kbwatch.pipeline.config import load_settings, state_dir
from kbwatch.pipeline.errors import BAD_MANIFEST, BAD_PROJECT_MD, CANNOT_OPEN, PROJECT_REPLACED, ConfigError, KbwatchError
from kbwatch.pipeline.formats.archive_names import ARCHIVE_RE, NameTooLong, fit_stem, parsed_path
from kbwatch.pipeline.formats.knowledge_md import render_knowledge
from kbwatch.pipeline.formats.manifest import Manifest
from kbwatch.pipeline.formats.project_md import ProjectMd
from kbwatch.pipeline.formats.run_record import build_record, read_record
from kbwatch.pipeline.fsutil import (atomic_write, display_path, iso_minute, linked_state_dir, make_state_dir, now_local,
                                     opens, utc_iso)
from kbwatch.pipeline.journal import Journal
from kbwatch.pipeline.lazylog import logger
from kbwatch.pipeline.plugins import PluginSet, build_plugin_manager
from kbwatch.pipeline.project import (PROJECT_DIRS, discover_projects, is_project, project_name_problem, project_refusal,
                                      refused_projects)
from kbwatch.pipeline.retry_policy import gave_up
from kbwatch.pipeline.sources import SourceEntry, split_name, walk_sources

INVALID_PROJECT_CHARS = set('/\\\0')
TEMP_RE = re.compile(r"^\..+\.[0-9a-f]{8}\.tmp$")


def _writable(state: Path) -> bool:
    """Whether the state folder (or, before it exists, the folder it goes in) can be written."""
    probe = state
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    return os.access(probe, os.W_OK)


@dataclass
class Pending:
    project: Path
    entry: SourceEntry
    attempt: int


# a temp file (``.<name>.<hex>.tmp``) this old is a leftover even when the last run ended cleanly: no
# command spends a minute between writing a temp file and renaming it into place
TEMP_FILE_MIN_AGE = 60.0

# failures that are the project's, not the file's (kbwatch.pipeline.formats): reason -> the file
PROJECT_FILE_FAILURES = {BAD_MANIFEST: "manifest.json", BAD_PROJECT_MD: "project.md"}


def _changed_since(path: Path, when: str | None) -> bool:
    """Whether ``path`` was modified (or removed) after the UTC time ``when`` (``utc_iso``,
    whole seconds: a change in the same second counts, at worst one more run)."""
    try:
        st = os.stat(path)
    except OSError:
        return True  # removed (a fresh one is made) or unreadable: let the run say which
    # the change time too: removing a hard link's other name, or a chmod, changes the file's
    # inode (ctime), not its content (mtime), and either can be what the failure was about
    mtime = max(st.st_mtime, st.st_ctime)
    try:
        return mtime >= datetime.fromisoformat(when).timestamp() if when else True
    except ValueError:
        return True


class KnowledgeBase:
    def __init__(self, root: Path, config_file: Path | None = None, readonly: bool | None = False):
        self.root = root
        confine.register_root(root)  # below the root, folders are reached without following links
        self.settings = load_settings(root, config_file)
        self.state = state_dir(self.settings)
        linked = linked_state_dir(root, self.state)
        if linked:
            raise ConfigError(linked)
        confine.register_state(self.state)  # its databases are never read under another name
        # readonly: the journal and the index are only read (``ask`` and ``kbwatch mcp`` on a
        # read-only share); None = decide from whether the state folder can be written
        self.readonly = (not _writable(self.state)) if readonly is None else readonly
        if not self.readonly:
            try:
                make_state_dir(self.state)
            except OSError:  # not creatable here: whatever needs it reports that when it opens it
                pass
        self._plugins: PluginSet | None = None
        self._journal: Journal | None = None

    @property
    def plugins(self) -> PluginSet:
        if self._plugins is None:
            self._plugins = build_plugin_manager(self.settings)
        return self._plugins

    @property
    def journal(self) -> Journal:
        if self._journal is None:
            from kbwatch.pipeline.heal import open_healing

            path = self.state / "journal.sqlite3"
            if self.readonly:
                self._journal = Journal(path, readonly=True)
                return self._journal
            self._journal = open_healing(path, lambda: Journal(path), self._rebuild_fresh_journal, "journal")
        return self._journal

    def _rebuild_fresh_journal(self, journal: Journal) -> str:
        """Fill a journal that replaced a corrupt one from runs/ (rebuild_journal uses self.journal)."""
        from kbwatch.pipeline.rebuild_journal import rebuild_journal

        self._journal = journal
        n_runs, n_findings = rebuild_journal(self)
        return f"from runs/ ({n_runs} runs, {n_findings} findings)"

    def catch_up(self) -> None:
        """For a command that reads the journal (``status``, ``runs``, ``review``), before it takes
        any project's lock: the runs/ of projects a journal rebuild could not read (refused then)
        and put right since are read into the journal now, under each one's file lock, rather than
        at the next start of the service. Cheap when there are none."""
        if self.readonly:
            return
        from kbwatch.pipeline.rebuild_journal import read_again

        read_again(self, lock=True)

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    # -- projects ------------------------------------------------------------
    def projects(self, names: list[str] | None = None) -> list[Path]:
        found = discover_projects(self.root)
        if not names:
            return found
        by_name = {p.name: p for p in found}
        missing = [n for n in names if n not in by_name]
        refused = dict(refused_projects(self.root))
        for n in missing:
            if n in refused:
                raise KbwatchError(f"project {n} is refused: {refused[n]}")
        if missing:
            raise ConfigError(f"no such project: {', '.join(missing)} (kbwatch init NAME creates one)")
        return [by_name[n] for n in names]

    def project(self, name: str) -> Path:
        return self.projects([name])[0]

    def init_project(self, name: str, language: str | None = None) -> tuple[Path, list[str]]:
        """Create a project (idempotent, never clobbers); returns what was created."""
        if not name or name in (".", "..") or set(name) & INVALID_PROJECT_CHARS or name.startswith("."):
            raise ConfigError(f"invalid project name {name!r}")
        problem = project_name_problem(name)
        if problem:
            raise ConfigError(f"invalid project name {name!r}: {problem.split('; ')[0]}")
        path = self.root / name
        created: list[str] = []
        if path.exists() and not path.is_dir():
            raise ConfigError(f"{path} exists and is not a directory")
        if os.path.lexists(path):
            refusal = project_refusal(path)
            if refusal:
                raise KbwatchError(f"project {name} is refused: {refusal}")
        if not os.path.lexists(path):
            os.mkdir(path)  # a write below the root never makes a project folder (confine)
            created.append(f"{name}/")
        for d in PROJECT_DIRS:
            if not (path / d).is_dir():
                os.close(confine.open_dir(path / d, create=True))
                created.append(f"{d}/")
        lang = language or self.settings["project"]["language"]
        now = now_local()
        if not (path / "manifest.json").exists():
            atomic_write(path / "manifest.json", Manifest.new(name, iso_minute(now)).dumps())
            created.append("manifest.json")
        if not (path / "project.md").exists():
            atomic_write(path / "project.md", ProjectMd.new(name, lang).render())
            created.append("project.md")
        if not (path / "KNOWLEDGE.md").exists():
            opts = self.settings["project"]
            atomic_write(
                path / "KNOWLEDGE.md",
                render_knowledge(name, f"Knowledge base {name} (no documents yet)", "draft",
                                 now.strftime("%Y-%m-%d"), lang, opts["type"], opts["trust"], opts["grounding"]),
            )
            created.append("KNOWLEDGE.md")
        return path, created

    # -- what needs a run ----------------------------------------------------
    def decide(self, project: Path, last: dict | None, size: int, mtime_ns: int, now: float) -> tuple[int | None, str]:
        """(attempt number, or None to wait; why) for a file given its latest run.

        A file that changed (size or mtime) always gets a fresh first attempt.
        Unchanged: a permanent failure waits for a change or ``retry``; a
        transient one waits for its backoff and ``retry.max_attempts``; a
        conflict waits while any file it conflicts with still exists.
        """
        if last is None or last["size"] != size or last["mtime_ns"] != mtime_ns:
            return 1, ""
        outcome = last["outcome"]
        if outcome == "failed" and last.get("reason") == PROJECT_REPLACED:
            return 1, ""  # that run's folder is gone: a file there now is in another folder
        if outcome == "failed" and last.get("reason") == CANNOT_OPEN:
            # it would not open (a writer's lock, no read permission): no timer, it is taken again
            # once it opens (a rescan, or its permissions' event) or when `retry` asks
            if last["retryable"] or opens(project / last["source"]):
                return 1, ""
            return None, "cannot be opened; taken again when it opens, or with `kbwatch retry`"
        if outcome == "failed" and last.get("reason") in PROJECT_FILE_FAILURES:
            # the file is fine, its project's manifest.json / project.md was not: taken again once
            # that file changed after the run (fixed, restored or removed), not only by `retry`
            held = PROJECT_FILE_FAILURES[last["reason"]]
            if last["retryable"] or _changed_since(project / held, last["finished_at"]):
                return 1, ""
            return None, f"failed earlier ({last['error']}); taken again once {held} is fixed"
        if outcome == "failed":
            if not last["retryable"]:
                return None, f"failed earlier ({last['error']}); unchanged"
            attempts = last["attempts"] or 1
            if gave_up(attempts, self.settings, last.get("reason")):
                return None, f"gave up after {attempts} attempts"
            if last["next_attempt_at"] and last["next_attempt_at"] > now:
                return None, f"retry due in {last['next_attempt_at'] - now:.0f} s"
            return attempts + 1, ""
        if outcome == "conflict":
            if last["retryable"]:  # `kbwatch retry` asked for another look
                return 1, ""
            blocked = json.loads(last["blocked_by"] or "[]")
            if not blocked or any(os.path.lexists(project / b) for b in blocked):
                return None, "conflict unresolved"
        return 1, ""

    def pending(self, project: Path, now: float | None = None, in_flight=None) -> tuple[list[Pending], list[str]]:
        """Files of ``project`` that need a run now, and why others wait."""
        now = time.time() if now is None else now
        latest = self.journal.latest_for_sources(project.name)
        todo: list[Pending] = []
        waiting: list[str] = []
        for entry in walk_sources(project, self.settings["ignore"]["patterns"]):
            if in_flight is not None and in_flight(project, entry.rel):
                continue
            last = latest.get(f"sources/{display_path(entry.rel)}")
            attempt, why = self.decide(project, last, entry.size, entry.mtime_ns, now)
            if attempt is None:
                waiting.append(f"{entry.rel}: {why}")
                continue
            todo.append(Pending(project, entry, attempt))
        return todo, waiting

    def attempt_for(self, project: Path, rel: str) -> int | None:
        """The attempt number for one file in sources/ now, or None to leave it."""
        path = project / "sources" / rel
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        last = self.journal.latest_for_source(project.name, f"sources/{display_path(rel)}")
        return self.decide(project, last, st.st_size, st.st_mtime_ns, time.time())[0]

    # -- crash recovery ------------------------------------------------------
    def remove_temp_files(self, min_age: float = 0.0) -> int:
        """Delete ``.<name>.<hex>.tmp`` files a killed writer left (call under the service lock),
        those last modified at least ``min_age`` seconds ago."""
        n = 0
        now = time.time()

        def old(st: os.stat_result) -> bool:
            return not min_age or now - st.st_mtime >= min_age
        for project in discover_projects(self.root):
            folders = [project] + [project / d for d in ("archive", "parsed", "runs")]
            for folder in folders:
                if not folder.is_dir():
                    continue
                found = folder.glob(".*.tmp") if folder == project else folder.rglob(".*.tmp")
                for path in found:
                    if TEMP_RE.match(path.name) and path.is_file() and not path.is_symlink():
                        try:
                            with confine.folder(path.parent) as dfd:
                                if not old(os.stat(path.name, dir_fd=dfd, follow_symlinks=False)):
                                    continue
                                os.unlink(path.name, dir_fd=dfd)
                            n += 1
                        except OSError:
                            pass
        for path in self.root.glob(".data_structure.md.*.tmp"):
            try:
                if path.is_symlink() or not old(path.stat()):
                    continue
                path.unlink()
                n += 1
            except OSError:
                pass
        return n

    def sweep_intake(self) -> None:
        """Delete snapshots a killed run left in ``<state>/intake/`` (call under the service lock)."""
        import shutil

        shutil.rmtree(self.state / "intake", ignore_errors=True)
        make_state_dir(self.state)
        try:  # the snapshots' folder: only this account may enter it
            os.mkdir(self.state / "intake", 0o700)
        except FileExistsError:  # left by another account (not removable): the takes check it
            pass

    def begin_work(self) -> bool:
        """Mark the root busy (under the service lock); True if the last worker did not end cleanly."""
        marker = self.state / "busy"
        crashed = marker.exists()
        self.state.mkdir(parents=True, exist_ok=True)
        marker.write_text(f"{os.getpid()}\n")
        return crashed

    def end_work(self) -> None:
        if linked_state_dir(self.root, self.state) is None:  # never a file where a planted link points
            (self.state / "busy").unlink(missing_ok=True)

    def recover(self) -> int:
        """Finish or fail runs a crash left ``running``; returns how many.

        After a crash (the busy marker was left behind) it also removes temp
        files of interrupted atomic writes. A run cut short by a crash counts
        as an attempt, so a file that crashes the service every time stops
        being retried after ``retry.max_attempts``.
        """
        self.sweep_intake()
        # after a crash of the service every temp file is a leftover; otherwise only old ones are (a
        # `remove`, `rebuild` or `review` killed mid-write left theirs; one running now may be writing)
        crashed = self.begin_work()
        removed = self.remove_temp_files(min_age=0.0 if crashed else TEMP_FILE_MIN_AGE)
        if removed:
            logger.info("removed {} temp file(s) left by an interrupted run or command", removed)
        self._settle_previous_texts()
        from kbwatch.pipeline.rebuild_journal import read_again

        read_again(self)  # projects a journal rebuild could not read (refused then) and put right since
        stale = self.journal.running_runs()
        for row in stale:
            project = self.root / row["project"]
            # under the project's file lock: a `remove`, `review` or `rebuild` run meanwhile waits, so
            # neither writes over the other's files (one writer per project)
            with self.project_lock(project):
                self._recover_run(row)
        self._heal_reviews()
        for project in sorted({self.root / row["project"] for row in stale} | set(self._listing_removed())):
            if not is_project(project):
                continue
            try:  # a commit cut between its renames: the derived files follow manifest.json again
                self.plugins.hook.kb_project_changed(project=project, reason="recovered", settings=self.settings,
                                                     journal=self.journal)
            except Exception as exc:  # noqa: BLE001 - the next run or `kbwatch rebuild` writes them too
                logger.warning("could not bring {}'s project files up to date after the crash: {}", project.name, exc)
        return len(stale)

    def project_lock(self, project: Path):
        """The project's file lock (kbwatch.pipeline.project_lock), or nothing for a folder that is
        not a project kbwatch may write (refused, or gone)."""
        from contextlib import nullcontext

        from kbwatch.pipeline.project_lock import project_file_lock

        return project_file_lock(project, state_dir(self.settings)) if is_project(project) else nullcontext()

    def _recover_run(self, row: dict) -> None:
        """Finish (committed) or fail (not committed) one run a crash left ``running``."""
        project = self.root / row["project"]
        manifest = None
        try:
            manifest = Manifest.load(project / "manifest.json", row["project"], iso_minute(now_local()))
        except Exception:
            manifest = None
        committed = manifest is not None and manifest.latest_hash(row["name"]) == f"sha256:{row['sha256']}"
        source = project / row["source"]
        outputs: dict[str, str] = {}
        if committed and is_project(project):
            try:  # only the very file that was taken (DESIGN §2, containment)
                if confine.unlink_if_same(source, row.get("device"), row.get("inode"), row["size"], row["mtime_ns"]):
                    outputs[row["source"]] = "deleted"
            except OSError as exc:
                logger.warning("could not remove {}: {}", row["source"], exc)
            outcome, message, retryable = "done", "completed after an interrupted run", 0
            # the commit may have written the run's record, findings and all, before the kill: it
            # stands (it used to be replaced by one without findings, and the review gate was lost)
            written = _committed_record(project, row)
            if written is None:  # killed before the record was written: the findings were in memory only
                findings, parsed_rel = self._rescan(project, row, manifest)
                pending = sum(1 for f in findings if getattr(f, "decision", "pending") == "pending")
                if findings:
                    message += f"; its text was scanned again ({len(findings)} finding(s), {pending} pending review)"
                record = build_record(row["run_id"], outcome, message, row["source"], row["sha256"], outputs, [],
                                      findings, parsed_rel, pending)
                atomic_write(project / "runs" / f"{row['run_id']}.json",
                             json.dumps(record, ensure_ascii=False, indent=2) + "\n")
                written = read_record(record)
            self._keep_findings(project, row, written["findings"])
            self.journal.update_run(
                row["run_id"], outcome="done", status=written["status"], error=None, reason=None, retryable=0,
                next_attempt_at=0.0, finished_at=utc_iso(), record_path=f"{row['project']}/runs/{row['run_id']}.json",
            )
            logger.warning("recovered run {} of {}: {}", row["run_id"], row["source"], message)
            return
        outcome, message, retryable = "failed", "interrupted before it was committed; it will be retried", 1
        if manifest is not None and is_project(project):
            for rel in drop_uncommitted_copies(project, row, manifest):
                outputs[rel] = "deleted"
        record = build_record(row["run_id"], outcome, message, row["source"], row["sha256"], outputs, [], [], None, 0)
        if is_project(project):
            atomic_write(project / "runs" / f"{row['run_id']}.json", json.dumps(record, ensure_ascii=False, indent=2) + "\n")
        self.journal.update_run(
            row["run_id"], outcome=outcome, status=record["status"], error=None if committed else message,
            reason=None if committed else "interrupted", retryable=retryable, next_attempt_at=0.0,
            finished_at=utc_iso(), record_path=f"{row['project']}/runs/{row['run_id']}.json",
        )
        logger.warning("recovered run {} of {}: {}", row["run_id"], row["source"], message)

    def _settle_previous_texts(self) -> None:
        """A new version interrupted before its commit left the committed text aside in parsed/:
        the manifest's latest version is what stays (kbwatch.pipeline.previous_text)."""
        for project in discover_projects(self.root):
            parsed = project / "parsed"
            try:
                if not is_project(project) or not parsed.is_dir() or not any(parsed.rglob(".*.prev")):
                    continue
                # the manifest read and the texts put back under the project's file lock: a `remove`
                # started meanwhile waits, and is not undone by a text put back after it
                with self.project_lock(project):
                    manifest = Manifest.load(project / "manifest.json", project.name, iso_minute(now_local()))
                    checkpoint("settle:read", project.name)
                    restored, dropped = previous_text.settle(project, manifest)
            except Exception as exc:  # noqa: BLE001 - a broken manifest is reported by the runs that read it
                logger.warning("{}: kept texts of interrupted versions not settled: {}", project.name, exc)
                continue
            if restored or dropped:
                logger.info("{}: {} committed text(s) put back, {} kept copy(ies) removed", project.name,
                            restored, dropped)

    def _rescan(self, project: Path, row: dict, manifest: Manifest) -> tuple[list, str | None]:
        """(findings, parsed path) of the committed document ``row`` ran: its parsed text scanned
        again by the configured stages that can (a ``rescan`` method: the built-in ``scan``)."""
        entry = manifest.get(row["name"])
        parsed_rel = entry.get("parsed") if entry else None
        if not parsed_rel:
            return [], None
        try:
            text = confine.read_text(project / parsed_rel, errors="replace")
        except OSError:
            return [], parsed_rel
        name = str(row["source"]).removeprefix("sources/")
        findings: list = []
        try:
            stages = self.plugins.configured_stages()
        except Exception as exc:  # noqa: BLE001 - a broken pipeline config is reported by the commands that run it
            logger.warning("{}: {} not scanned again after the crash: {}", project.name, parsed_rel, exc)
            return [], parsed_rel
        for stage in stages:
            rescan = getattr(stage, "rescan", None)
            if rescan is None:
                continue
            try:
                findings += rescan(project, name, text, self.plugins, self.settings)
            except Exception as exc:  # noqa: BLE001 - a scanner bug must not stop the recovery
                logger.warning("{}: {} could not scan {} again after the crash: {}", project.name, stage.name,
                               parsed_rel, exc)
        return findings, parsed_rel

    def _keep_findings(self, project: Path, row: dict, findings: list[dict]) -> None:
        """A committed run's findings (``read_record``'s) become its document's current findings in
        the journal, with reviews.json's decisions, as the interrupted commit would have recorded them."""
        from kbwatch.pipeline.reviews import load_decisions
        from kbwatch.pipeline.run_records import recorded_finding_row

        decisions = load_decisions(project)
        self.journal.supersede_documents(row["project"], [row["name"]])
        self.journal.finish_runs([], [], [recorded_finding_row(row["run_id"], row["project"], row["name"], f,
                                                               decisions, 1) for f in findings])

    def _listing_removed(self) -> list[Path]:
        """Projects whose project.md still lists a document manifest.json marks removed: a
        ``kbwatch remove`` killed between its writes (manifest.json is written first, project.md
        last). ``kb_project_changed(reason="recovered")`` finishes them."""
        out = []
        for project in self.projects():
            try:
                manifest = Manifest.load(project / "manifest.json", project.name, "")
                removed = set(manifest.names()) - set(manifest.active_names())
                if removed and removed & set(ProjectMd.load(project / "project.md", project.name,
                                                            self.settings["project"]["language"]).rows):
                    out.append(project)
            except Exception as exc:  # noqa: BLE001 - a broken project file is reported by the runs
                logger.debug("could not compare {}'s project files: {}", project.name, exc)
        return out

    def _heal_reviews(self) -> None:
        """Every project's journal findings and KNOWLEDGE.md status follow its reviews.json
        (a ``kbwatch review`` killed between its writes; kbwatch.pipeline.reviews.heal)."""
        from kbwatch.pipeline.reviews import heal

        for project in self.projects():
            try:
                if heal(self, project):
                    logger.warning("{}: review decisions and KNOWLEDGE.md brought in line with reviews.json "
                                   "(a review was interrupted)", project.name)
            except Exception as exc:  # noqa: BLE001 - the next review or ingest tries again
                logger.warning("could not check {}'s review decisions: {}", project.name, exc)


def _committed_record(project: Path, row: dict) -> dict | None:
    """What ``runs/<run id>.json`` says (``read_record``) when the interrupted commit wrote it as a
    ``done`` run of the committed content; else None."""
    try:
        info = read_record(json.loads(confine.read_text(project / "runs" / f"{row['run_id']}.json")))
    except (OSError, ValueError, AttributeError, TypeError):
        return None
    sha = str(info.get("sha256") or "").removeprefix("sha256:")
    if info.get("run_id") != row["run_id"] or info.get("outcome") != "done" or sha != row["sha256"]:
        return None
    return info


def drop_uncommitted_copies(project: Path, row: dict, manifest: Manifest) -> list[str]:
    """Remove what an interrupted run wrote before its commit: its document's archive names
    holding exactly the run's content that no manifest version lists, and, for a document the
    manifest does not list at all, its ``parsed/`` text (else ``ask`` would cite a document
    nothing archived). Its retry writes its own, so ``archive/`` and ``parsed/`` hold what
    manifest.json lists even when the file is edited or deleted meanwhile, or gives up after
    ``retry.max_attempts`` interrupted tries. (A new *version* of a listed document keeps its
    parsed text until its retry commits or replaces it.) Files are opened and removed through
    :mod:`kbwatch.pipeline.confine` (no link followed; only the very file that was read is
    unlinked). Returns the removed paths (project-relative)."""
    name, ext = split_name(str(row["source"]).removeprefix("sources/"))
    try:
        short = fit_stem(name.rpartition("/")[2], ext)
    except NameTooLong:
        return []
    entry = manifest.get(name)
    listed = {v.get("archived") for v in entry["versions"]} if entry else set()
    folder = (project / "archive" / name).parent
    try:
        with confine.folder(folder) as dfd:
            names = [n for n in os.listdir(dfd) if n.endswith(ext) and (m := ARCHIVE_RE.match(n)) and m.group(1) == short]
    except OSError:  # no such folder, or a link on the way (confine.Escape): nothing to do here
        names = []
    candidates = [folder / n for n in names if (folder / n).relative_to(project).as_posix() not in listed]
    if entry is None:  # a new document: the parsed text it wrote stands for nothing the manifest lists
        candidates += [project / rel for rel in dict.fromkeys((parsed_path(name, ext), f"parsed/{name}.md"))]
    removed: list[str] = []
    for path in candidates:
        rel = path.relative_to(project).as_posix()
        is_copy = rel.startswith("archive/")
        try:
            fd = confine.open_file(path, hard_links=True)
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode) or (is_copy and st.st_size != row["size"]):
                    continue
                if is_copy:
                    with open(fd, "rb", closefd=False) as fh:
                        if hashlib.file_digest(fh, "sha256").hexdigest() != row["sha256"]:
                            continue
            finally:
                os.close(fd)
            if not confine.unlink_if_same(path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns):
                continue
        except OSError:
            continue
        removed.append(rel)
        logger.info("removed {} in {}: written by an interrupted run, in no manifest version", rel, project.name)
    return removed
