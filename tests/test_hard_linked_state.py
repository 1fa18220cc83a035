"""Second names of files the service must not open to read, and sizes checked before a copy.

Real ``kbwatch watch`` processes on real folders: a hard link to the service's own journal or
search index dropped into sources/ (SQLite's locks are POSIX locks, which a process drops for a
file as soon as it closes *any* descriptor of it), a hard link to another project's
manifest.json, and a sparse file far over ``max_file_mb``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from conftest import kbwatch
from test_watch import journal_rows, make_root, manifest_files, service, wait_for  # noqa: F401 (fixture)

pytestmark = pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks")


def _locks(pid: int, path: Path) -> int:
    """POSIX locks process ``pid`` holds on ``path``'s inode (/proc/locks)."""
    st = os.stat(path)
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    n = 0
    for line in Path("/proc/locks").read_text(encoding="ascii").splitlines():
        fields = line.split()
        if "->" in fields:  # a waiter: "1: -> POSIX ..."
            continue
        if len(fields) >= 6 and fields[1] == "POSIX" and fields[4] == str(pid) and fields[5] == dev:
            n += 1
    return n


def _last(root: Path, source: str):
    rows = journal_rows(root, "select outcome, error, sha256 from runs where source = ? order by rowid desc limit 1",
                        (source,))
    return rows[0] if rows and rows[0][0] != "running" else None


def test_hard_links_to_the_live_databases_leave_their_locks_and_files_alone(tmp_path, service):
    """The journal and the search index hard-linked into sources/ are refused as hard links, and
    the service still holds SQLite's locks on both afterwards: its write-ahead logs survive the
    next command, and what it ingests later is in ``runs`` and answers ``ask``. Before, the
    refusal opened and closed the link (the watcher's "can it be opened yet?" test), which
    dropped the locks; the next ``kbwatch`` command then deleted the live WAL files."""
    root = make_root(tmp_path, projects=("p",))
    sources, state = root / "p" / "sources", root / ".kbwatch"
    svc = service(root).start()
    pid = svc.proc.pid
    (sources / "first.md").write_text("# Giraffes\n\nzebra alpha notes about giraffes\n", encoding="utf-8")
    wait_for(lambda: "first" in manifest_files(root / "p"), 60, "first.md", proc=svc)
    journal, index = state / "journal.sqlite3", state / "search.sqlite3"
    held = wait_for(lambda: _locks(pid, journal) or None, 30, "the service's lock on its journal", proc=svc)
    os.link(journal, sources / "j.txt")
    os.link(index, sources / "s.txt")
    wait_for(lambda: _last(root, "sources/j.txt") and _last(root, "sources/s.txt"), 60, "both links refused",
             proc=svc)
    for name in ("j.txt", "s.txt"):
        outcome, error, digest = _last(root, f"sources/{name}")
        assert outcome == "failed" and "hard link" in error and digest is None, (name, outcome, error)
    time.sleep(1.5)  # the watcher's settle time and a heartbeat: every look at the links has happened
    assert _locks(pid, journal) >= held, "the service dropped its SQLite locks on the journal"
    status = kbwatch("status", "--json", root=root)  # before the fix, this command deleted the live WAL
    assert status.returncode == 0, status.stderr
    live = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    assert not [p for p in live if p.endswith("(deleted)") and ".sqlite3" in p], live
    (sources / "second.md").write_text("# Platypus\n\nthe platypus migration report\n", encoding="utf-8")
    wait_for(lambda: "second" in manifest_files(root / "p") and (_last(root, "sources/second.md") or ("",))[0] == "done",
             60, "second.md recorded", proc=svc)
    runs = json.loads(kbwatch("runs", "--json", root=root, check=True).stdout)
    assert "sources/second.md" in {r["source"] for r in runs}
    ask = kbwatch("ask", "p", "platypus migration", root=root)
    assert ask.returncode == 0 and "parsed/second.md" in ask.stdout, ask.stdout + ask.stderr
    code, _ = svc.terminate()
    assert code == 0
    db = sqlite3.connect(journal)
    try:
        assert db.execute("pragma integrity_check").fetchone()[0] == "ok"
        assert db.execute("select count(*) from runs where source = 'sources/second.md'").fetchone()[0] >= 1
    finally:
        db.close()
    assert os.stat(journal).st_nlink == 2 and (sources / "j.txt").exists()  # the link is left where it was put


def test_a_hard_link_to_another_projects_manifest_holds_that_project_only_while_it_lasts(tmp_path, service):
    """b's manifest.json hard-linked into a's sources/: b's new file fails (its manifest has
    another name) with a reason that says what to do, and is taken by itself once the other name
    is gone (removing a name changes the file's ctime, not its mtime: no ``kbwatch retry``)."""
    root = make_root(tmp_path, projects=("a", "b"), extra="rescan_seconds = 1.0")
    svc = service(root).start()
    os.link(root / "b" / "manifest.json", root / "a" / "sources" / "m.json")
    wait_for(lambda: _last(root, "sources/m.json"), 60, "the link in a refused", proc=svc)
    (root / "b" / "sources" / "x.txt").write_text("a note for project b\n", encoding="utf-8")
    wait_for(lambda: _last(root, "sources/x.txt"), 60, "x.txt's run", proc=svc)
    outcome, error, _ = _last(root, "sources/x.txt")
    assert outcome == "failed" and "another name" in error and "remove its other name" in error, error
    time.sleep(1.1)  # the change time has whole-second resolution in the comparison
    os.unlink(root / "a" / "sources" / "m.json")
    # (the source leaves sources/ just after the commit that lists it)
    wait_for(lambda: "x" in manifest_files(root / "b") and not (root / "b" / "sources" / "x.txt").exists(), 60,
             "x.txt taken once the link is gone", proc=svc)
    code, _ = svc.terminate()
    assert code == 0


def test_a_sparse_file_over_the_size_bound_is_refused_before_it_is_copied(tmp_path):
    """A 4 GB sparse file costs its owner no disk; copied into the service's private snapshot
    before the parse stage checked ``max_file_mb``, it filled the state dir's disk. It is now
    refused as ``too large`` before it is opened: the run has no hash."""
    root = make_root(tmp_path, projects=("p",), extra="[stages.parse]\nmax_file_mb = 1")
    huge = root / "p" / "sources" / "huge.txt"
    with open(huge, "wb") as fh:
        fh.truncate(4 * 1024 ** 3)
    (root / "p" / "sources" / "small.txt").write_text("a small note\n", encoding="utf-8")
    res = kbwatch("ingest", root=root)
    assert res.returncode == 1, res.stdout + res.stderr  # one file failed
    outcome, error, digest = _last(root, "sources/huge.txt")
    assert outcome == "failed" and "over the 1 MB limit" in error and digest is None, (outcome, error, digest)
    assert huge.exists() and "small" in manifest_files(root / "p")
    intake = root / ".kbwatch" / "intake"
    assert sum(f.stat().st_blocks for f in intake.rglob("*") if f.is_file()) == 0


def _peak_kb(*args: str, root: Path) -> tuple[int, str]:
    """Exit status and peak RSS (KB) of ``kbwatch ARGS`` (os.wait4: that process alone)."""
    import subprocess
    import sys

    from conftest import REPO

    proc = subprocess.Popen([sys.executable, str(REPO / "run.py"), *args, "--root", str(root)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss, out


def test_planted_sparse_project_files_are_refused_not_read_whole(tmp_path):
    """manifest.json and project.md made 2 GB sparse files (no disk for whoever plants them): they
    used to be read whole, the service peaking at 5 GB for 1 GB of project.md and writing it back
    as 1 GB of real data. Now each is refused with its size, in a few tens of MB."""
    root = make_root(tmp_path, projects=("p", "q"))
    (root / "p" / "sources" / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    (root / "q" / "sources" / "b.md").write_text("# B\n\nbeta\n", encoding="utf-8")
    for path in (root / "p" / "manifest.json", root / "q" / "project.md"):
        with open(path, "r+b") as fh:
            fh.truncate(2 * 1024 ** 3)
    peak, out = _peak_kb("ingest", root=root)
    assert peak < 400_000, (peak, out)
    assert "manifest.json is 2048 MB" in out and "project.md is 2048 MB" in out, out
    for project in ("p", "q"):
        st = os.stat(root / project / ("manifest.json" if project == "p" else "project.md"))
        assert st.st_size == 2 * 1024 ** 3 and st.st_blocks < 64  # left as planted, never written back
    peak, out = _peak_kb("status", root=root)
    assert peak < 400_000, (peak, out)
