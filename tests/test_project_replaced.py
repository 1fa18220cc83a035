"""A project folder deleted or moved away under a running ``watch``, mid-burst.

Someone with write access to the root runs ``rm -rf p`` (or ``mv p p_old``) while
the service is ingesting a burst into ``p``, then makes ``p/sources/`` again and
drops more files into it. A real ``kbwatch watch`` subprocess, real files:

- the new folder is watched at once (the kernel's watches went with the old
  folder; before, nothing dropped into it was taken until the 300 s rescan,
  which these tests switch off);
- nothing the service held for the old folder is written into the new one: every
  archive copy and parsed file the new manifest names exists, and every
  document in it is one of the files dropped into it (before, the commit wrote
  the cached manifest, listing copies that went with the old folder);
- a moved-away folder is a project of its own and its files are ingested there.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

from test_watch import journal_rows, make_root, manifest_files, service, sources_left, wait_for  # noqa: F401

NO_RESCAN = "rescan_seconds = 0"


def _burst(project: Path, names: range, pause: float = 0.002) -> None:
    for i in names:
        (project / "sources").mkdir(parents=True, exist_ok=True)
        (project / "sources" / f"f{i:04d}.md").write_text(f"# document {i}\n\nbody of document {i}\n", encoding="utf-8")
        time.sleep(pause)


def _delete(project: Path) -> None:
    """``rm -rf`` until the folder is gone (the service may be writing into it meanwhile:
    ENOTEMPTY, or ENOENT for an entry it renamed away)."""
    for _ in range(50):
        try:
            shutil.rmtree(project)
        except OSError:
            pass
        if not os.path.lexists(project):
            return
    raise AssertionError(f"could not delete {project}")


def _consistent(project: Path) -> dict[str, dict]:
    """The manifest's documents; every archive copy and parsed file they name exists."""
    files = manifest_files(project)
    for name, f in files.items():
        assert (project / f["parsed"]).is_file(), f"{project.name}: {name}'s parsed file {f['parsed']} is missing"
        for v in f["versions"]:
            assert (project / v["archived"]).is_file(), f"{project.name}: {name}'s archive copy {v['archived']} is missing"
    return files


def _indexed(root: Path) -> set[str]:
    """The documents of project p in the search index."""
    with sqlite3.connect(root / ".kbwatch" / "search.sqlite3") as db:
        return {path for (path,) in db.execute(
            "select d.path from docs d join projects p on p.id = d.project_id where p.name = 'p'")}


def _records(project: Path) -> list[dict]:
    return [json.loads(f.read_text(encoding="utf-8")) for f in (project / "runs").glob("*.json")]


def _settled(root: Path, svc, *projects: Path) -> None:
    wait_for(lambda: all(not sources_left(p) for p in projects), 90, "every sources/ to empty", proc=svc)
    time.sleep(2.0)  # a commit that was under way when the last file left
    assert "Traceback" not in svc.log(), svc.log()[-3000:]


def test_a_project_deleted_and_made_again_mid_burst(tmp_path, service):
    root = make_root(tmp_path, extra=NO_RESCAN)
    svc = service(root).start()
    p = root / "p"
    for round_no, delay in enumerate((0.0, 0.4, 0.9)):
        first = range(round_no * 1000, round_no * 1000 + 150)
        again = range(round_no * 1000 + 500, round_no * 1000 + 650)
        _burst(p, first)
        time.sleep(delay)  # the first files are in flight, parked, or committed
        _delete(p)
        _burst(p, again)
        _settled(root, svc, p)
        files = _consistent(p)
        wanted = {f"f{i:04d}" for i in again}
        assert set(files) == wanted, (
            f"round {round_no}: missing {sorted(wanted - set(files))[:5]}, "
            f"from the old folder {sorted(set(files) - wanted)[:5]}")
        assert len(os.listdir(p / "archive")) == len(wanted)
        indexed = _indexed(root)
        assert indexed <= {f"parsed/{n}.md" for n in wanted}, f"round {round_no}: the index keeps the old folder's {sorted(indexed)[:3]}"
    # the runs cut off by the deletion are recorded with their reason (in the journal only:
    # runs/ of the new folder holds none of the old one's), none as an internal error
    recorded = {i["path"] for r in _records(p) for i in r["inputs"]}
    assert recorded and recorded <= {f"sources/f{i:04d}.md" for i in again}, sorted(recorded)[:5]
    reasons = {r for (r,) in journal_rows(root, "select distinct coalesce(reason, '') from runs where outcome = 'failed'")}
    # ("io": a write into a sub-folder the deletion had just removed, the project folder not yet)
    assert reasons <= {"project replaced", "io"}, reasons
    assert svc.terminate()[0] == 0


def test_a_project_moved_away_mid_burst_is_ingested_where_it_went(tmp_path, service):
    root = make_root(tmp_path, extra=NO_RESCAN)
    svc = service(root).start()
    p, moved = root / "p", root / "p_old"
    first, again = range(0, 150), range(500, 650)
    _burst(p, first)
    time.sleep(0.6)  # some files are in flight when the folder moves
    os.rename(p, moved)
    _burst(p, again)
    _settled(root, svc, p, moved)
    new_docs, old_docs = set(_consistent(p)), set(_consistent(moved))
    assert new_docs == {f"f{i:04d}" for i in again}
    # every file of the first burst is a document of one of the two projects, once
    # (those committed before the move went with p_old; the rest are taken there anew)
    assert old_docs == {f"f{i:04d}" for i in first}, sorted(old_docs ^ {f"f{i:04d}" for i in first})[:5]
    assert svc.terminate()[0] == 0
