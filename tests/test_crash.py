"""Crash safety: a real `kbwatch ingest` is SIGKILLed at many points, then run again.

The runner pauses at a named checkpoint when KBWATCH_TEST_PAUSE says so; the
test waits for the pause, SIGKILLs the process and re-runs ingest. Whatever
the point, the end state must be the same: nothing lost, no duplicate
version, a valid manifest, every run terminal.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from conftest import REPO, kbwatch, read_manifest

POINTS = [
    "stage:conflict:before",
    "stage:parse:after",
    "stage:archive:after",
    "stage:manifest:after",
    "stage:project_md:after",
    "stage:knowledge:after",
    "commit:before",
    "commit:after",
    "commit:after#2",
    "source:removed",
    "source:removed#3",
    "records:written",
    "records:written#2",
]


def _setup(root):
    subprocess.run([sys.executable, str(REPO / "run.py"), "init", "p", "--root", str(root)], check=True,
                   capture_output=True)
    (root / "kbwatch.toml").write_text("[service]\nworkers = 1\ncommit_batch = 2\n", encoding="utf-8")
    project = root / "p"
    # one document already ingested, so the burst also carries a new version
    (project / "sources" / "old.md").write_text("# Old\nfirst version\n", encoding="utf-8")
    kbwatch("ingest", root=root, check=True)
    contents = {"old.md": "# Old\nsecond version\n"}
    for i in range(5):
        contents[f"doc{i}.md"] = f"# Doc {i}\nbody {i}\n"
    contents["sub/nested.txt"] = "nested text\n"
    for rel, text in contents.items():
        path = project / "sources" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return project, {rel: hashlib.sha256(t.encode()).hexdigest() for rel, t in contents.items()}


def _check(project, hashes):
    manifest = read_manifest(project)  # valid JSON
    by_name = {f["name"]: f for f in manifest["files"]}
    for rel, digest in hashes.items():
        name = rel.rsplit(".", 1)[0]
        entry = by_name.get(name)
        versions = [v["hash"] for v in entry["versions"]] if entry else []
        assert len(versions) == len(set(versions)), f"duplicate version of {name}: {versions}"
        in_archive = f"sha256:{digest}" in versions
        in_sources = (project / "sources" / rel).exists()
        assert in_archive or in_sources, f"{rel} lost"
        if in_archive:
            v = next(v for v in entry["versions"] if v["hash"] == f"sha256:{digest}")
            assert hashlib.sha256((project / v["archived"]).read_bytes()).hexdigest() == digest
    # after the re-run everything is ingested
    assert not any(p.is_file() for p in (project / "sources").rglob("*"))
    assert "second version" in (project / "parsed" / "old.md").read_text(encoding="utf-8")
    assert len(by_name["old"]["versions"]) == 2
    archived = [p for p in (project / "archive").rglob("*") if p.is_file()]
    assert len(archived) == sum(len(f["versions"]) for f in manifest["files"]), "orphan archive copies"
    rows = [l for l in (project / "project.md").read_text(encoding="utf-8").splitlines() if l.startswith("| ")]
    assert len(rows) == len(manifest["files"]) + 1  # + header row
    db = sqlite3.connect(project.parent / ".kbwatch" / "journal.sqlite3")
    assert db.execute("select count(*) from runs where outcome in ('running', 'queued')").fetchone()[0] == 0
    for rec in (project / "runs").glob("ingest-*.json"):
        json.loads(rec.read_text(encoding="utf-8"))


@pytest.mark.parametrize("point", POINTS)
def test_sigkill_then_ingest_again(tmp_path, point):
    root = tmp_path / "kb"
    root.mkdir()
    project, hashes = _setup(root)
    flag = tmp_path / "paused"
    env = {**os.environ, "KBWATCH_TEST_PAUSE": point, "KBWATCH_TEST_PAUSE_FILE": str(flag)}
    proc = subprocess.Popen([sys.executable, str(REPO / "run.py"), "ingest", "--root", str(root)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not flag.exists():
        assert proc.poll() is None, f"ingest exited ({proc.returncode}) before reaching {point}"
        assert time.monotonic() < deadline, f"never reached {point}"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    result = kbwatch("ingest", root=root)
    assert result.returncode == 0, result.stdout + result.stderr
    _check(project, hashes)


@pytest.mark.parametrize("then", ["edited", "deleted"])
def test_copy_of_an_interrupted_run_is_removed_when_no_retry_will_reuse_it(tmp_path, then):
    """SIGKILL between the archive copy and the commit; the file is then edited (or deleted) before
    the next start, so no retry of that content comes to reuse the copy. The next start's recovery
    removes it: archive/ holds what manifest.json lists (a file that gives up after
    retry.max_attempts interrupted tries ends the same way)."""
    root = tmp_path / "kb"
    root.mkdir()
    subprocess.run([sys.executable, str(REPO / "run.py"), "init", "p", "--root", str(root)], check=True,
                   capture_output=True)
    project = root / "p"
    src = project / "sources" / "sub" / "note.md"
    src.parent.mkdir(parents=True)
    src.write_text("# Note\nfirst words\n", encoding="utf-8")
    flag = tmp_path / "paused"
    env = {**os.environ, "KBWATCH_TEST_PAUSE": "stage:archive:after", "KBWATCH_TEST_PAUSE_FILE": str(flag)}
    proc = subprocess.Popen([sys.executable, str(REPO / "run.py"), "ingest", "--root", str(root)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not flag.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "never reached stage:archive:after"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    left = [p.name for p in (project / "archive").rglob("*") if p.is_file()]
    assert len(left) == 1 and left[0].startswith("note_"), left  # the copy the killed run made
    if then == "edited":
        src.write_text("# Note\nother words\n", encoding="utf-8")
    else:
        src.unlink()
    result = kbwatch("ingest", root=root)
    assert result.returncode == 0, result.stdout + result.stderr
    manifest = read_manifest(project)
    listed = sorted(v["archived"] for f in manifest["files"] for v in f["versions"])
    archived = sorted(p.relative_to(project).as_posix() for p in (project / "archive").rglob("*") if p.is_file())
    assert archived == listed, "orphan archive copies"
    assert len(listed) == (1 if then == "edited" else 0)
    parsed = sorted(p.relative_to(project).as_posix() for p in (project / "parsed").rglob("*.md")
                    if p.name != "data_structure.md")
    assert parsed == sorted(f["parsed"] for f in manifest["files"]), "parsed text of a document the manifest does not list"
    if then == "edited":
        path = project / listed[0]
        assert path.read_text(encoding="utf-8") == "# Note\nother words\n"
