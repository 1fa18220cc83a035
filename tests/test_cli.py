"""CLI shapes (DESIGN §12), init, journal rebuild, retry, KNOWLEDGE.md names."""

from __future__ import annotations

import json
import sqlite3

from conftest import ingest, kbwatch

RUN_KEYS = {"run_id", "project", "source", "name", "outcome", "status", "attempts", "error", "started_at", "finished_at"}


def test_init_is_idempotent_and_never_clobbers(root, cli):
    assert cli("init", "p").exit_code == 0
    (root / "p" / "project.md").write_text("# p\n\n## 概述\n\nMy own words.\n", encoding="utf-8")
    result = cli("init", "p")
    assert result.exit_code == 0 and "nothing (already complete)" in result.output
    assert "My own words." in (root / "p" / "project.md").read_text(encoding="utf-8")
    for d in ("sources", "parsed", "archive", "runs"):
        assert (root / "p" / d).is_dir()


def test_chinese_project_gets_valid_knowledge_name(root, cli):
    from kbwatch.pipeline.formats.knowledge_md import NAME_RE, read_frontmatter

    cli("init", "技术方案")
    cli("init", "Q3 Report (final)")
    (root / "技术方案" / "sources" / "说明.md").write_text("# 说明\n内容。\n", encoding="utf-8")
    ingest(root)
    zh = read_frontmatter((root / "技术方案" / "KNOWLEDGE.md").read_text(encoding="utf-8"))
    en = read_frontmatter((root / "Q3 Report (final)" / "KNOWLEDGE.md").read_text(encoding="utf-8"))
    assert NAME_RE.match(zh["name"]) and len(zh["name"]) <= 64
    assert en["name"] == "q3-report-final" and en["status"] == "draft"
    assert zh["status"] == "ready" and "技术方案" in (root / "技术方案" / "KNOWLEDGE.md").read_text(encoding="utf-8")


def test_runs_and_status_json_shapes(root, cli):
    cli("init", "p")
    (root / "p" / "sources" / "a.md").write_text("# A\n")
    (root / "p" / "sources" / "bad.qqq").write_text("?")
    totals, _ = ingest(root)
    assert totals == {"done": 1, "failed": 1}
    runs = json.loads(cli("runs", "--json").output)
    assert len(runs) == 2 and all(set(r) == RUN_KEYS for r in runs)
    assert {r["outcome"] for r in runs} == {"done", "failed"}
    assert runs[0]["started_at"] >= runs[1]["started_at"]  # newest first
    failed = json.loads(cli("runs", "--json", "--outcome", "failed").output)
    assert [r["source"] for r in failed] == ["sources/bad.qqq"] and "unsupported" in failed[0]["error"]
    status = json.loads(cli("status", "--json").output)
    assert status == {
        "running": False, "state": "stopped", "pid": None, "queue": 0, "in_flight": 0,
        "projects": [{"name": "p", "status": "ready", "documents": 1, "failed": 1, "pending_reviews": 0}],
    }


def test_ingest_exit_code_and_summary_line(root):
    kbwatch("init", "p", root=root, check=True)
    (root / "p" / "sources" / "a.md").write_text("# A\n")
    ok = kbwatch("ingest", root=root)
    assert ok.returncode == 0 and ok.stdout.strip() == "ingest: 1 done, 0 duplicate, 0 conflict, 0 failed"
    (root / "p" / "sources" / "a.md").write_text("# A\n")
    (root / "p" / "sources" / "z.unknown").write_text("?")
    bad = kbwatch("ingest", root=root)
    assert bad.returncode == 1
    assert bad.stdout.strip() == "ingest: 0 done, 1 duplicate, 0 conflict, 1 failed"
    assert "failed: p/sources/z.unknown: unsupported file type .unknown" in bad.stderr


def test_ingest_or_watch_on_a_plain_folder_of_documents_says_where_documents_go(tmp_path):
    # a new user's first try: `kbwatch ingest --root` on the folder that holds the documents
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "report.md").write_text("# Report\n\nquarterly figures\n", encoding="utf-8")
    (plain / "notes.txt").write_text("notes\n", encoding="utf-8")
    (plain / ".hidden").write_text("x", encoding="utf-8")
    got = kbwatch("ingest", root=plain)
    assert got.returncode == 1, got.stderr  # two files not taken: not "all well"
    assert got.stdout.strip() == "ingest: 0 done, 0 duplicate, 0 conflict, 0 failed"
    assert f"no projects under {plain}; the 2 files directly in it were not taken" in got.stderr, got.stderr
    assert f"documents go in {plain}/NAME/sources/" in got.stderr and f"kbwatch init NAME --root {plain}" in got.stderr
    assert (plain / "report.md").exists() and (plain / "notes.txt").exists()  # nothing moved
    as_json = json.loads(kbwatch("ingest", "--json", root=plain).stdout)
    assert as_json["no_projects"]["loose_files"] == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    got = kbwatch("ingest", root=empty)
    assert got.returncode == 0 and f"no projects under {empty}: documents go in" in got.stderr, got.stderr
    # once a project exists the note is gone (files at the root are the user's own business then)
    kbwatch("init", "p", root=plain, check=True)
    got = kbwatch("ingest", root=plain)
    assert got.returncode == 0 and "no projects" not in got.stderr, got.stderr


def test_watch_on_a_root_without_projects_says_where_documents_go_and_keeps_watching(tmp_path):
    from test_watch import Service, wait_for

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "report.md").write_text("# Report\n\nquarterly figures\n", encoding="utf-8")
    svc = Service(plain, tmp_path).start()
    try:
        assert f"no projects under {plain}; the 1 file directly in it was not taken" in svc.log()
        kbwatch("init", "p", root=plain, check=True)  # a project made later is taken
        (plain / "p" / "sources" / "a.md").write_text("# A\n\nzeppelin\n", encoding="utf-8")
        wait_for(lambda: (plain / "p" / "parsed" / "a.md").exists(), 60, "a.md to be parsed", proc=svc)
    finally:
        svc.terminate()


def test_journal_rebuild_matches_runs(root, cli):
    cli("init", "p")
    src = root / "p" / "sources"
    (src / "a.md").write_text("# A\n")
    (src / "b.md").write_text(f"key = {'AKIA' + 'Z7QX4M2PLR6VWN3B'}\n")
    (src / "c.nope").write_text("?")
    ingest(root)
    (src / "a.md").write_text("# A\n")  # duplicate
    ingest(root)
    db_path = root / ".kbwatch" / "journal.sqlite3"

    def snapshot():
        db = sqlite3.connect(db_path)
        runs = sorted(db.execute("select run_id, project, source, outcome, status, sha256 from runs").fetchall())
        findings = sorted(db.execute("select run_id, rule, line, fingerprint, current from findings").fetchall())
        db.close()
        return runs, findings

    before = snapshot()
    assert len(before[0]) == 4 and before[1]
    db_path.unlink()
    result = cli("journal", "rebuild")
    assert result.exit_code == 0 and "4 runs" in result.output
    assert snapshot() == before


def test_retry_makes_a_failed_file_eligible(root, cli):
    cli("init", "p")
    (root / "p" / "sources" / "x.md").write_text("")
    assert ingest(root)[0] == {"failed": 1}
    assert ingest(root)[0] == {}
    [run] = json.loads(cli("runs", "--json").output)
    result = cli("retry", run["run_id"])
    assert result.exit_code == 0 and "1 run(s) marked for retry" in result.output
    assert ingest(root)[0] == {"failed": 1}  # tried again (still empty)
    assert cli("retry", "--failed").exit_code == 0
    (root / "p" / "sources" / "x.md").write_text("now with text\n")
    assert ingest(root)[0] == {"done": 1}
    assert cli("retry", "ingest-nope").exit_code == 2


def test_retry_keeps_a_conflict_a_conflict_with_its_reason(root, cli):
    """`retry --failed` once turned conflicts into reason-less failures (found by bench/soak.py)."""
    cli("init", "p")
    (root / "p" / "sources" / "x.md").write_text("one\n")
    (root / "p" / "sources" / "x.txt").write_text("two\n")
    assert ingest(root)[0] == {"conflict": 2}
    assert cli("retry", "--failed").exit_code == 0
    rows = json.loads(cli("runs", "--json").output)
    assert {r["outcome"] for r in rows} == {"conflict"}
    assert all("rename one of them" in (r["error"] or "") for r in rows)
    assert ingest(root)[0] == {"conflict": 2}  # looked at again; still a conflict, recorded as one
    latest = json.loads(cli("runs", "--json", "--limit", "2").output)
    assert {r["outcome"] for r in latest} == {"conflict"} and all(r["error"] for r in latest)
    assert ingest(root)[0] == {}  # and not retried again until something changes
    (root / "p" / "sources" / "x.txt").unlink()
    assert ingest(root)[0] == {"done": 1}
    done = [r for r in json.loads(cli("runs", "--json").output) if r["outcome"] == "done"][0]
    result = cli("retry", done["run_id"])
    assert result.exit_code == 0 and "nothing to retry" in result.output and "0 run(s) marked" in result.output


def test_init_creates_a_missing_root_and_only_init_does(tmp_path):
    root = tmp_path / "new" / "kb"
    other = tmp_path / "typo"
    got = kbwatch("status", root=other)
    assert got.returncode == 2 and "no such directory" in got.stderr and not other.exists()
    made = kbwatch("init", "p", root=root)
    assert made.returncode == 0, made.stderr
    assert f"created the root folder {root}" in made.stdout
    assert (root / "p" / "sources").is_dir() and (root / "p" / "KNOWLEDGE.md").is_file()
    again = kbwatch("init", "p", root=root)
    assert again.returncode == 0 and "created the root folder" not in again.stdout
    (tmp_path / "file").write_text("x")
    blocked = kbwatch("init", "p", root=tmp_path / "file" / "kb")
    assert blocked.returncode == 2 and "cannot be created" in blocked.stderr and "Traceback" not in blocked.stderr
