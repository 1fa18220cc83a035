"""The journal: a SQLite mirror of runs/ (runs, stage results, findings, events).

It drives retries (attempts, next attempt time) and answers ``status``,
``runs``, ``retry`` and ``review``. It is never the only copy of anything:
``kbwatch journal rebuild`` recreates it from every project's runs/*.json.
All access goes through one connection guarded by a lock (WAL mode, so the
CLI can read while the service writes).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from kbwatch.pipeline.heal import adoptable, copy_live, file_identity, move_aside, quick_check, use_wal


def _import_sqlite_utils():
    """``sqlite_utils``, without the numpy and pandas it imports only to add their scalar types to
    its column-type table (the journal never stores either). numpy alone was ~0.28 s of CPU, a
    quarter of what ``kbwatch status`` cost to start; ``ask`` and the index still import it
    when they need it. A name mapped to None in ``sys.modules`` makes its import fail
    (``ModuleNotFoundError``, which sqlite_utils catches); the entries are removed at once, and
    only while no other thread runs (an import elsewhere meanwhile would fail too)."""
    import sys

    blocked = [name for name in ("numpy", "pandas") if name not in sys.modules]
    if threading.active_count() > 1 or "sqlite_utils" in sys.modules:
        blocked = []
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        import sqlite_utils as module
    finally:
        for name in blocked:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]
    return module


sqlite_utils = _import_sqlite_utils()

SCHEMA_VERSION = 1


def connect_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection to a SQLite file that may sit on a read-only disk.

    ``mode=ro`` first (it sees a writer's later commits); when SQLite cannot
    open the WAL index there (no -shm and a read-only folder), ``immutable=1``.
    A missing file gives an empty in-memory database."""
    from urllib.parse import quote

    if not path.exists():
        return sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    uri = "file:" + quote(str(path))
    try:
        conn = sqlite3.connect(uri + "?mode=ro", uri=True, timeout=30, check_same_thread=False, isolation_level=None)
        conn.execute("select count(*) from sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        return sqlite3.connect(uri + "?immutable=1", uri=True, check_same_thread=False, isolation_level=None)


class Journal:
    def __init__(self, path: Path, readonly: bool = False):
        self.path = path
        self.readonly = readonly
        self._lock = threading.RLock()
        if readonly:  # a knowledge base on a read-only share: read what is there, write nothing
            conn = connect_readonly(path)
            self.db = sqlite_utils.Database(conn)
            if not path.exists():  # nothing recorded yet: an empty journal in memory
                self._ensure_schema()
            self._identity = file_identity(path)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), timeout=30, check_same_thread=False, isolation_level=None)
        try:
            self._configure(conn)
            quick_check(conn)  # a damaged file is caught here, where it can be healed (KnowledgeBase.journal)
            self.db = sqlite_utils.Database(conn)
            self._ensure_schema()
        except BaseException:
            conn.close()
            raise
        self._identity = file_identity(path)

    @staticmethod
    def _configure(conn: sqlite3.Connection) -> None:
        use_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=30000")

    def start_fresh(self) -> Path:
        """Move the damaged file aside and go on with a fresh empty journal (the caller
        rebuilds it from runs/); returns where the damaged one went."""
        with self._lock:
            try:
                self.db.conn.close()
            except sqlite3.Error:
                pass
            aside = move_aside(self.path)
            conn = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False, isolation_level=None)
            self._configure(conn)
            self.db = sqlite_utils.Database(conn)
            self._ensure_schema()
            self._identity = file_identity(self.path)
            return aside

    def restore_file(self) -> str | None:
        """If the journal file was deleted or replaced under this open journal, put it back.

        Returns None when nothing changed; ``"copied"`` when the live journal
        was written back to its path; ``"adopted"`` when a usable journal now
        at the path (e.g. one another process healed) is used instead;
        ``"empty"`` when the live journal was unusable too and a fresh empty
        one was created (the caller rebuilds it from runs/). A replaced file
        SQLite cannot use is moved aside as ``*.replaced-<stamp>``.
        """
        with self._lock:
            now = file_identity(self.path)
            if now == self._identity:
                return None
            outcome = None
            if now is not None:
                if adoptable(self.path):
                    conn = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False, isolation_level=None)
                    outcome = "adopted"
                else:
                    move_aside(self.path, "replaced")
            if outcome is None:
                try:
                    conn = copy_live(self.db.conn, self.path)
                    outcome = "copied"
                except sqlite3.DatabaseError:
                    conn = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False, isolation_level=None)
                    outcome = "empty"
            self._configure(conn)
            try:
                self.db.conn.close()
            except sqlite3.Error:
                pass
            self.db = sqlite_utils.Database(conn)
            self._ensure_schema()
            self._identity = file_identity(self.path)
            return outcome

    def follow_replacement(self) -> bool:
        """A reader's side of :meth:`restore_file`: when another owner (the service's state
        guard) has put a new, usable journal file at the path, read that one from now on.
        Never writes, moves or creates a file; True when it switched."""
        with self._lock:
            now = file_identity(self.path)
            if now is None or now == self._identity or not adoptable(self.path):
                return False
            conn = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False, isolation_level=None)
            self._configure(conn)
            old, self.db, self._identity = self.db.conn, sqlite_utils.Database(conn), now
            try:
                old.close()
            except sqlite3.Error:
                pass
            return True

    def close(self) -> None:
        with self._lock:
            self.db.conn.close()

    def locked(self) -> threading.RLock:
        """Hold every other thread's journal access off (``with journal.locked(): ...``)."""
        return self._lock

    @contextmanager
    def transaction(self) -> Iterator[sqlite_utils.Database]:
        with self._lock:
            self.db.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.conn.execute("ROLLBACK")
                raise
            else:
                self.db.conn.execute("COMMIT")

    def _ensure_schema(self) -> None:
        """Create what is missing, in one write transaction: the first commands on a fresh root
        (a service starting while someone runs ``status``) each found no table and created them
        at once, and one ended in "database is locked" (the service died at start). ``BEGIN
        IMMEDIATE`` waits its turn (the busy timeout), then sees what the first one made."""
        if self.readonly or self.db.conn.in_transaction:
            self._create_schema()
            return
        if self._schema_complete():  # the usual case: no write lock taken (status beside a busy service)
            return
        conn = self.db.conn
        with self._lock:
            for attempt in range(5):
                try:
                    conn.execute("BEGIN IMMEDIATE")
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) and "busy" not in str(exc) or attempt == 4:
                        raise
                    time.sleep(0.2 * (attempt + 1))
                    continue
                try:
                    self._create_schema()
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                return

    def _schema_complete(self) -> bool:
        db = self.db
        with self._lock:
            if not {"runs", "stages", "findings", "events", "context_runs", "service"} <= set(db.table_names()):
                return False
            return {"device", "inode"} <= set(db["runs"].columns_dict) and "executor" in db["service"].columns_dict

    def _create_schema(self) -> None:
        db = self.db
        with self._lock:
            if "runs" not in db.table_names():
                db["runs"].create(
                    {
                        "run_id": str, "project": str, "source": str, "name": str,
                        "sha256": str, "size": int, "mtime_ns": int,
                        "outcome": str, "status": str, "error": str, "reason": str,
                        "retryable": int, "attempts": int, "next_attempt_at": float,
                        "started_at": str, "finished_at": str, "record_path": str,
                        "blocked_by": str,
                    },
                    pk="run_id",
                )
                db["runs"].create_index(["project", "source"])
                db["runs"].create_index(["outcome", "retryable"])
                db["runs"].create_index(["outcome"])
                db["runs"].create_index(["started_at"])
            # the taken file's identity (containment: recovery unlinks only that file); nullable
            columns = db["runs"].columns_dict
            for col in ("device", "inode"):
                if col not in columns:
                    db["runs"].add_column(col, int)
            if "stages" not in db.table_names():
                db["stages"].create(
                    {"id": int, "run_id": str, "stage": str, "status": str, "duration_ms": float, "error": str},
                    pk="id",
                )
                db["stages"].create_index(["run_id"])
            if "findings" not in db.table_names():
                db["findings"].create(
                    {
                        "id": int, "run_id": str, "project": str, "document": str, "path": str,
                        "kind": str, "rule": str, "severity": str, "line": int, "column": int,
                        "offset": int, "excerpt": str, "fingerprint": str, "decision": str,
                        "decided_at": str, "current": int,
                    },
                    pk="id",
                )
                db["findings"].create_index(["project", "decision"])
                db["findings"].create_index(["project", "document"])
            if "events" not in db.table_names():
                db["events"].create(
                    {"id": int, "at": str, "project": str, "path": str, "kind": str, "detail": str},
                    pk="id",
                )
            if "context_runs" not in db.table_names():  # kbwatch ask / query_knowledge_base (DESIGN §9)
                db["context_runs"].create(
                    {"run_id": str, "project": str, "query": str, "status": str, "answer": str,
                     "created_at": str, "record_path": str, "record": str},
                    pk="run_id",
                )
                db["context_runs"].create_index(["created_at"])
            if "service" not in db.table_names():
                db["service"].create(
                    {"id": int, "pid": int, "started_at": float, "heartbeat": float,
                     "queue": int, "in_flight": int, "stopped_at": float},
                    pk="id",
                )
            if "executor" not in db["service"].columns_dict:  # where parses run (JSON), for kbwatch status
                db["service"].add_column("executor", str)

    # -- context runs (ask) ------------------------------------------------
    def record_context_run(self, run_id: str, projects: str, query: str, status: str, answer: str,
                           record: dict, record_path: str | None, created_at: str) -> None:
        with self._lock:
            self.db.conn.execute(
                "insert or replace into context_runs (run_id, project, query, status, answer, created_at, "
                "record_path, record) values (?, ?, ?, ?, ?, ?, ?, ?)",
                [run_id, projects, query, status, answer, created_at, record_path,
                 json.dumps(record, ensure_ascii=False)],
            )

    def context_run(self, run_id: str) -> dict | None:
        with self._lock:
            try:
                row = self.db.conn.execute("select record from context_runs where run_id = ?", [run_id]).fetchone()
            except sqlite3.OperationalError:  # a read-only journal from before context runs were kept
                return None
        return json.loads(row[0]) if row else None

    # -- runs --------------------------------------------------------------
    def start_run(self, row: dict[str, Any]) -> None:
        row = {**row, "outcome": "running"}
        cols = ", ".join(f"[{k}]" for k in row)
        marks = ", ".join("?" for _ in row)
        with self._lock:  # plain SQL: this runs once per file on the hot path
            self.db.conn.execute(f"insert or replace into runs ({cols}) values ({marks})", list(row.values()))

    def finish_runs(self, rows: list[dict[str, Any]], stages: list[dict], findings: list[dict],
                    replace_all: bool = False, keep_projects: Iterable[str] = (),
                    replace_projects: Iterable[str] = ()) -> None:
        """Write many finished runs in one transaction (plain SQL: the hot path). ``replace_all``:
        in the same transaction, everything the journal held before is deleted first (``journal
        rebuild``: killed part-way, it leaves the old journal, never a part of the new one), except
        the rows of ``keep_projects`` (projects the rebuild could not read: refused ones).
        ``replace_projects``: only these projects' rows are deleted first."""
        with self.transaction() as db:
            drop = None
            if replace_all:
                keep = sorted(set(keep_projects))
                drop = (f"project not in ({', '.join('?' for _ in keep)})", keep) if keep else ("1", [])
            elif replace_projects:
                names = sorted(set(replace_projects))
                drop = (f"project in ({', '.join('?' for _ in names)})", names)
            if drop is not None:
                where, params = drop
                db.conn.execute(f"delete from stages where run_id in (select run_id from runs where {where})", params)
                for table in ("findings", "runs", "events"):
                    db.conn.execute(f"delete from {table} where {where}", params)
                if replace_all:  # stage rows of no run at all (none are written without one)
                    db.conn.execute("delete from stages where run_id not in (select run_id from runs)")
            for table, items, verb in (("runs", rows, "insert or replace"), ("stages", stages, "insert"),
                                       ("findings", findings, "insert")):
                if not items:
                    continue
                cols = list(items[0])
                sql = (f"{verb} into {table} ({', '.join(f'[{c}]' for c in cols)}) "
                       f"values ({', '.join('?' for _ in cols)})")
                db.conn.executemany(sql, [[item.get(c) for c in cols] for item in items])

    def runs(self, project: str | None = None, outcome: str | None = None, limit: int = 50) -> list[dict]:
        where, params = [], []
        if project:
            where.append("project = ?")
            params.append(project)
        if outcome:
            where.append("outcome = ?")
            params.append(outcome)
        sql = "select * from runs"
        if where:
            sql += " where " + " and ".join(where)
        sql += " order by started_at desc, rowid desc limit ?"
        params.append(limit)
        with self._lock:
            return list(self.db.query(sql, params))

    def get_run(self, run_id: str) -> dict | None:
        with self._lock:
            rows = list(self.db.query("select * from runs where run_id = ?", [run_id]))
        return rows[0] if rows else None

    def latest_for_sources(self, project: str) -> dict[str, dict]:
        """The most recent run of each source path of a project."""
        sql = (
            "select * from runs where project = ? and rowid in "
            "(select max(rowid) from runs where project = ? group by source)"
        )
        with self._lock:
            return {r["source"]: r for r in self.db.query(sql, [project, project])}

    def latest_failed(self, project: str) -> list[dict]:
        """The most recent run of each source of a project, where that run failed or conflicted
        (the filter in SQL: a project of 10,000 documents has few failures)."""
        sql = (
            "select * from runs where project = ? and outcome in ('failed', 'conflict') and rowid in "
            "(select max(rowid) from runs where project = ? group by source)"
        )
        with self._lock:
            return list(self.db.query(sql, [project, project]))

    def latest_for_source(self, project: str, source: str) -> dict | None:
        with self._lock:
            rows = list(self.db.query(
                "select * from runs where project = ? and source = ? order by rowid desc limit 1", [project, source]
            ))
        return rows[0] if rows else None

    def due_retries(self, now: float, max_attempts: int, unlimited: tuple[str, ...] = ()) -> list[dict]:
        """Latest runs that failed transiently (or that ``retry`` marked) and whose backoff has passed,
        under ``max_attempts`` tries unless their reason is one of ``unlimited``."""
        marks = ", ".join("?" * len(unlimited)) or "null"
        sql = (
            "select * from runs where rowid in (select max(rowid) from runs group by project, source) "
            "and outcome in ('failed', 'conflict') and retryable = 1 and coalesce(next_attempt_at, 0) <= ? "
            f"and (coalesce(attempts, 0) < ? or reason in ({marks}))"
        )
        with self._lock:
            return list(self.db.query(sql, [now, max_attempts, *unlimited]))

    def running_runs(self) -> list[dict]:
        with self._lock:
            return list(self.db.query("select * from runs where outcome in ('running', 'queued')"))

    def update_run(self, run_id: str, **fields) -> None:
        with self._lock:
            self.db["runs"].update(run_id, fields)

    def delete_run(self, run_id: str) -> None:
        with self.transaction() as db:
            db.execute("delete from stages where run_id = ?", [run_id])
            db.execute("delete from findings where run_id = ?", [run_id])
            db.execute("delete from runs where run_id = ?", [run_id])

    def counts(self, project: str) -> dict[str, int]:
        sql = (
            "select outcome, count(*) as n from runs where project = ? and rowid in "
            "(select max(rowid) from runs where project = ? group by source) group by outcome"
        )
        with self._lock:
            return {r["outcome"]: r["n"] for r in self.db.query(sql, [project, project])}

    # -- findings ----------------------------------------------------------
    def pending_findings(self, project: str) -> list[dict]:
        with self._lock:
            return list(
                self.db.query(
                    "select * from findings where project = ? and current = 1 and decision = 'pending' order by id",
                    [project],
                )
            )

    def held_documents(self, project: str) -> dict[str, str]:
        """parsed path -> why, for the documents of ``project`` whose current findings are
        pending or were rejected in review: what is held back from a model (``ask``, MCP,
        the overview ``rebuild`` writes) unless asked for."""
        with self._lock:
            rows = list(self.db.query(
                "select path, decision, count(*) as n from findings where project = ? and current = 1 "
                "and decision in ('pending', 'rejected') group by path, decision order by path, decision",
                [project],
            ))
        out: dict[str, str] = {}
        for r in rows:
            if r["path"]:
                what = "pending review" if r["decision"] == "pending" else "rejected in review"
                out[r["path"]] = (out[r["path"]] + "; " if r["path"] in out else "") + f"{r['n']} finding(s) {what}"
        return out

    def supersede_findings(self, project: str, document: str) -> None:
        """Findings of older versions of a document stop counting."""
        with self._lock:
            self.db.execute(
                "update findings set current = 0 where project = ? and document = ?", [project, document]
            )

    def supersede_documents(self, project: str, documents: list[str]) -> None:
        """Findings of older versions of these documents stop counting (one transaction)."""
        if not documents:
            return
        with self.transaction() as db:
            for document in documents:
                db.execute("update findings set current = 0 where project = ? and document = ?", [project, document])

    def keep_findings_of(self, project: str, documents: set[str]) -> int:
        """Findings of the project's other documents stop counting (their folder is gone);
        returns how many documents lost theirs."""
        with self._lock:
            held = {r["document"] for r in self.db.query(
                "select distinct document from findings where project = ? and current = 1", [project])}
        gone = sorted(held - documents)
        self.supersede_documents(project, gone)
        return len(gone)

    # -- events and service ------------------------------------------------
    def event(self, project: str, path: str, kind: str, detail: str = "") -> None:
        with self._lock:
            self.db["events"].insert(
                {"at": time.strftime("%Y-%m-%dT%H:%M:%S"), "project": project, "path": path, "kind": kind, "detail": detail}
            )

    def set_service(self, **fields) -> None:
        with self._lock:
            self.db["service"].upsert({"id": 1, **fields}, pk="id")

    def service(self) -> dict | None:
        with self._lock:
            rows = list(self.db.query("select * from service where id = 1"))
        return rows[0] if rows else None

    # -- rebuild -----------------------------------------------------------

def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
