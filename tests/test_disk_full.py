"""A full disk under a running ``kbwatch watch``: nothing lost, the service stays up, and the
files are taken by themselves once there is room again.

A real service on a real small file system (a 6 MB tmpfs, mounted for the test: it needs root,
and skips with that reason without it). Found by an adversarial review (twenty-second
session), on 2467783's successors:

- files that failed on ENOSPC used up ``[retry] max_attempts`` within a minute and were given
  up on ("it is taken again later (gave up after 5 attempts …)"): only ``kbwatch retry`` took
  them after the space came back;
- with the state dir on the full disk, the heartbeat's journal write raised "database or disk
  is full" out of the service's loop, and the service died (exit 1).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from conftest import kbwatch
from test_watch import Service, wait_for

FILES = 12


def _mount(where: Path, size: str = "6m") -> None:
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root")
    got = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                         capture_output=True, text=True)
    if got.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {got.stderr.strip()}")


def _umount(where: Path) -> None:
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _fill(path: Path) -> None:
    """Write ``path`` until the file system has no room left."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for size in (65536, 4096, 512, 1):  # down to the last bytes
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError:
                    break
    finally:
        os.close(fd)


def _latest(state: Path) -> dict[str, dict]:
    db = sqlite3.connect(f"file:{state / 'journal.sqlite3'}?mode=ro", uri=True, timeout=5)
    db.row_factory = sqlite3.Row
    try:
        rows = db.execute("select source, outcome, reason, attempts, error from runs order by started_at").fetchall()
    finally:
        db.close()
    return {r["source"]: dict(r) for r in rows}


def _docs(staging: Path) -> dict[str, bytes]:
    staging.mkdir()
    out = {}
    for i in range(FILES):
        data = (f"# Note {i}\n\n" + f"Paragraph {i} about the harbour crane schedule. " * 300 + "\n").encode()
        (staging / f"n{i:02d}.md").write_bytes(data)
        out[f"n{i:02d}.md"] = data
    return out


TOML = """\
[service]
settle_seconds = 0.3
heartbeat_seconds = 0.5
rescan_seconds = 0
state_dir = "{state}"

[retry]
max_attempts = 2
backoff_initial_seconds = 0.2
backoff_max_seconds = 1.0
"""


@pytest.mark.timeout(300)
def test_files_that_meet_a_full_disk_wait_for_room_and_are_never_given_up(tmp_path):
    disk = tmp_path / "disk"
    _mount(disk)
    try:
        root = disk / "kb"
        root.mkdir()
        state = tmp_path / "state"  # on another disk: this test is about the files' writes
        (root / "kbwatch.toml").write_text(TOML.format(state=state), encoding="utf-8")
        kbwatch("init", "p", root=root, check=True)
        docs = _docs(disk / "staging")  # on the small disk: moved into sources/ by rename
        _fill(disk / "filler")
        svc = Service(root, tmp_path).start()
        try:
            for name in docs:
                os.rename(disk / "staging" / name, root / "p" / "sources" / name)
            wait_for(lambda: sum(r["reason"] == "disk full" for r in _latest(state).values()) >= FILES // 2, 60,
                     "runs failed for want of room", proc=svc)
            # well past max_attempts (2) at a backoff of at most 1 s: still waiting, never given up
            time.sleep(6)
            latest = _latest(state)
            waiting = [r for r in latest.values() if r["outcome"] == "failed"]
            assert waiting and all(r["reason"] == "disk full" for r in waiting), waiting
            assert any(r["attempts"] > 2 for r in waiting), waiting
            assert not any("gave up" in (r["error"] or "") for r in waiting), waiting
            for r in waiting:  # the source stays where it was dropped
                assert (root / "p" / r["source"]).exists(), r
            assert svc.proc.poll() is None

            (disk / "filler").unlink()  # room again: taken by themselves, no retry, no restart
            wait_for(lambda: all((_latest(state).get(f"sources/{n}") or {}).get("outcome") == "done" for n in docs),
                     90, "every file done once there is room", proc=svc)
        finally:
            code, _ = svc.terminate()
        assert code == 0
        manifest = json.loads((root / "p" / "manifest.json").read_text(encoding="utf-8"))
        names = {f["name"] + f["ext"] for f in manifest["files"] if not f.get("removed")}
        assert names == set(docs)
        assert not any((root / "p" / "sources").iterdir())
        archived = sorted((root / "p" / "archive").rglob("*.md"))
        assert sorted(p.read_bytes() for p in archived) == sorted(docs.values())  # the copies are whole
    finally:
        _umount(disk)


@pytest.mark.timeout(300)
def test_the_service_survives_its_state_dir_on_a_full_disk(tmp_path):
    disk = tmp_path / "disk"
    _mount(disk, "12m")
    try:
        root = disk / "kb"
        root.mkdir()
        state = disk / "state"  # the journal, the logs and the private copies on the disk that fills
        # the runs' journal rows cannot be written either: the periodic rescan finds what is left
        (root / "kbwatch.toml").write_text(TOML.format(state=state).replace("rescan_seconds = 0", "rescan_seconds = 3"),
                                           encoding="utf-8")
        kbwatch("init", "p", root=root, check=True)
        docs = _docs(disk / "staging")
        svc = Service(root, tmp_path).start()
        try:
            _fill(disk / "filler")
            for name in docs:
                os.rename(disk / "staging" / name, root / "p" / "sources" / name)
            time.sleep(8)  # ~16 heartbeats that the journal refuses
            assert svc.proc.poll() is None, f"the service died on a full disk\n{svc.log()[-3000:]}"
            for name in docs:  # nothing lost: each file still in sources/ or recorded with its copy
                assert (root / "p" / "sources" / name).exists() or any(
                    p.read_bytes() == docs[name] for p in (root / "p" / "archive").rglob(name.replace(".md", "*"))), name
            (disk / "filler").unlink()
            wait_for(lambda: all((_latest(state).get(f"sources/{n}") or {}).get("outcome") == "done" for n in docs),
                     120, "every file done once there is room", proc=svc)
        finally:
            code, _ = svc.terminate()
        assert code == 0
        # the log file on the full disk: one line said so, not loguru's traceback for each line dropped
        said = svc.log()
        assert "Logging error in Loguru" not in said and "Traceback" not in said, said[-3000:]
        assert 1 <= said.count("cannot write the log file") <= 2, said[-3000:]
        assert "the log file takes lines again" in said
        logged = (state / "logs" / "kbwatch.log").read_text(encoding="utf-8")
        assert "kbwatch stopping" in logged  # written once there was room
    finally:
        _umount(disk)
