"""Containment (DESIGN §2): nothing outside the root is read, written or deleted.

Real processes on real folders: ``kbwatch ingest``/``init``/``status`` and a
live ``kbwatch watch``. A project whose folder, sources/, parsed/, archive/ or
runs/ is a symlink is refused with its reason; a file swapped for a link to an
outside file after the service took it never brings that file's text into the
knowledge base (the swap race, 100+ times, held at the ``run:opened``
checkpoint and at random delays); the source is removed only if it is still
the file that was committed; sub-folders of sources/ are kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import threading
import time
from pathlib import Path

import pytest

from conftest import kbwatch
from test_watch import journal_rows, make_root, manifest_files, service, sha, wait_for  # noqa: F401 (fixture)

BAD = {
    "linked_sources": "sources",
    "linked_archive": "archive",
    "linked_parsed": "parsed",
    "linked_runs": "runs",
}


def tree(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder`` (links not followed) with its bytes and mtime."""
    out = {}
    for dirpath, dirs, files in os.walk(folder):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
            path = Path(dirpath) / name
            st = os.lstat(path)
            data = os.readlink(path).encode() if os.path.islink(path) else path.read_bytes()
            out[path.relative_to(folder).as_posix()] = (data, st.st_mtime_ns)
    return out


def linked_layout(tmp_path: Path) -> tuple[Path, Path]:
    """A root with a good project ``ok`` and one refused project per kind of link.

    Every link points into ``outside/``, which holds files of its own.
    """
    root = make_root(tmp_path, projects=("ok", *BAD))
    outside = tmp_path / "outside"
    for project, folder in BAD.items():
        target = outside / project
        target.mkdir(parents=True)
        (target / "keep-me.md").write_text(f"# outside file of {project}\n", encoding="utf-8")
        real = root / project / folder
        for child in real.iterdir():
            child.unlink()
        real.rmdir()
        real.symlink_to(target, target_is_directory=True)
        if folder != "sources":  # something the refused project would otherwise take
            (root / project / "sources" / "inside.md").write_text(f"# inside {project}\n", encoding="utf-8")
    # a project folder that is itself a link to a complete project outside
    elsewhere = outside / "project_elsewhere"
    (elsewhere / "sources").mkdir(parents=True)
    for folder in ("parsed", "archive", "runs"):
        (elsewhere / folder).mkdir()
    (elsewhere / "sources" / "report.md").write_text("# a report outside the root\n", encoding="utf-8")
    (root / "linked_project").symlink_to(elsewhere, target_is_directory=True)
    (root / "ok" / "sources" / "fine.md").write_text("# fine\n\nan ordinary document\n", encoding="utf-8")
    return root, outside


REFUSED = {*BAD, "linked_project"}


def test_linked_project_folders_are_refused_by_ingest_init_and_status(tmp_path):
    root, outside = linked_layout(tmp_path)
    before = tree(outside)
    inside_before = {p: tree(root / p / "sources") for p in BAD if p != "linked_sources"}

    proc = kbwatch("ingest", root=root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for name in REFUSED:
        assert f"refused project {name}: " in proc.stderr, proc.stderr
    assert "refused project linked_sources: sources/ is a symbolic link" in proc.stderr
    assert "refused project linked_project: the project folder is a symbolic link" in proc.stderr
    assert "1 done" in proc.stdout
    assert "fine" in manifest_files(root / "ok")

    by_name = kbwatch("ingest", "linked_archive", root=root)
    assert by_name.returncode == 1 and "project linked_archive is refused: archive/ is a symbolic link" in by_name.stderr

    init = kbwatch("init", "linked_project", root=root)
    assert init.returncode == 1 and "refused" in init.stderr, init.stderr

    status = json.loads(kbwatch("status", "--json", root=root, check=True).stdout)
    assert {r["name"] for r in status["refused_projects"]} == REFUSED
    assert all(r["reason"] for r in status["refused_projects"])
    assert {p["name"] for p in status["projects"]} == {"ok"}
    text = kbwatch("status", root=root, check=True).stdout
    assert "refused project linked_runs: runs/ is a symbolic link" in text

    # nothing outside was read into the root, written, or deleted
    assert tree(outside) == before
    for p, files in inside_before.items():
        assert tree(root / p / "sources") == files  # a refused project's own sources stay untouched
    for p in REFUSED:
        assert not list((root / p).glob("runs/*.json")) or p == "linked_runs"


def test_live_watch_refuses_linked_projects_and_a_project_that_turns_linked(tmp_path, service):
    root, outside = linked_layout(tmp_path)
    kbwatch("init", "turns", root=root, check=True)
    svc = service(root).start()
    wait_for(lambda: "fine" in manifest_files(root / "ok"), 60, "the good project's file", proc=svc)
    refused_events = lambda: {r[0] for r in journal_rows(root, "select project from events where kind = 'refused'")}
    wait_for(lambda: refused_events() >= REFUSED, 30, "a refusal event per linked project", proc=svc)
    for name in BAD:
        assert f"project {name} refused: {BAD[name]}/ is a symbolic link" in svc.log()
    assert svc.log().count("project linked_sources refused") == 1  # logged once, not at every rescan

    # files arriving in the link targets while the service runs are not taken either
    (outside / "linked_sources" / "late.md").write_text("# late\n", encoding="utf-8")
    (outside / "project_elsewhere" / "sources" / "late.md").write_text("# late\n", encoding="utf-8")
    before = tree(outside)

    # a project whose archive/ becomes a link while the service runs: nothing is written through it
    target = outside / "turned_archive"
    target.mkdir()
    (root / "turns" / "archive").rename(tmp_path / "old_archive")
    (root / "turns" / "archive").symlink_to(target, target_is_directory=True)
    (root / "turns" / "sources" / "drop.md").write_text("# dropped after the swap\n", encoding="utf-8")
    wait_for(lambda: "turns" in refused_events(), 30, "the project that turned linked to be refused", proc=svc)

    # a barrier: a later file in the good project is done, so the earlier events were handled
    (root / "ok" / "sources" / "barrier.md").write_text("# barrier\n", encoding="utf-8")
    wait_for(lambda: "barrier" in manifest_files(root / "ok"), 60, "the barrier file", proc=svc)
    code, _ = svc.terminate()
    assert code == 0
    assert tree(outside) == before
    assert list(target.iterdir()) == []
    assert (root / "turns" / "sources" / "drop.md").exists()
    assert "drop" not in manifest_files(root / "turns")
    status = json.loads(kbwatch("status", "--json", root=root, check=True).stdout)
    assert {r["name"] for r in status["refused_projects"]} == REFUSED | {"turns"}


@pytest.mark.parametrize("put_right", ["unlink", "real folder back"])
def test_a_project_that_turns_linked_under_watch_is_logged_and_taken_again_once_put_right(tmp_path, service, put_right):
    """archive/ swapped for a link while ``watch`` runs: a file dropped then waits (nothing is written
    through the link), and the log said nothing about why. Now one warning line names the project
    and the reason; once archive/ is a real folder again, one line says so and the waiting file is
    taken at once (it used to wait for the next full rescan, 300 s by default). Removing the link
    makes no folder event: the service looks again at every heartbeat while a project is refused."""
    root = make_root(tmp_path, ("p",))
    svc = service(root).start()
    (root / "p" / "sources" / "first.md").write_text("# first\n", encoding="utf-8")
    wait_for(lambda: "first" in manifest_files(root / "p"), 60, "the first file", proc=svc)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "p" / "archive").rename(tmp_path / "old_archive")
    (root / "p" / "archive").symlink_to(outside, target_is_directory=True)
    (root / "p" / "sources" / "drop.md").write_text("# dropped after the swap\n", encoding="utf-8")
    wait_for(lambda: "project p refused: archive/ is a symbolic link" in svc.log(), 30, "the refusal logged", proc=svc)
    assert "drop" not in manifest_files(root / "p") and list(outside.iterdir()) == []
    (root / "p" / "archive").unlink()  # put right with no folder event: archive/ is made when needed
    if put_right == "real folder back":  # a folder event, at once: the runner's look a moment ago is stale
        (tmp_path / "old_archive").rename(root / "p" / "archive")
    wait_for(lambda: "drop" in manifest_files(root / "p"), 60, "the waiting file taken once put right", proc=svc)
    code, _ = svc.terminate()
    assert code == 0
    log = svc.log()
    assert log.count("project p refused") == 1, log
    assert "project p is no longer refused" in log
    assert list(outside.iterdir()) == [] and not (root / "p" / "sources" / "drop.md").exists()


def test_sources_subfolders_are_kept(tmp_path, service):
    root = make_root(tmp_path, projects=("p",))
    sources = root / "p" / "sources"
    files = {"合同/a.md": "# 合同 a\n", "standing/deep/b.md": "# b\n", "c.md": "# c\n"}
    for rel, text in files.items():
        (sources / rel).parent.mkdir(parents=True, exist_ok=True)
        (sources / rel).write_text(text, encoding="utf-8")
    svc = service(root).start()
    wait_for(lambda: len(manifest_files(root / "p")) == 3 and not any(sources.rglob("*.md")), 60,
             "the three files", proc=svc)
    code, _ = svc.terminate()
    assert code == 0
    assert (sources / "合同").is_dir() and (sources / "standing" / "deep").is_dir()


def _nest(base: Path, name: str, levels: int, files_at=()) -> str:
    """``levels`` folders ``name`` inside each other below ``base`` (made relative to descriptors, as
    `mkdir -p` would, so no path is ever longer than one name); a small file at each level of
    ``files_at``. Returns the relative path of the deepest folder."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(1, levels + 1):
            os.mkdir(name, dir_fd=fd)
            nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
            if i in files_at:
                f = os.open(f"level{i}.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
                os.write(f, f"# level {i}\n\nnested quokka {i}\n".encode())
                os.close(f)
    finally:
        os.close(fd)
    return "/".join([name] * levels)


def test_folders_nested_without_end_stop_nothing(tmp_path, service):
    """`mkdir -p` 450 levels deep in sources/ (paths past PATH_MAX) made the walk fail with "File name
    too long": `ingest` exited with an internal error and `watch` died at start, for every project.
    Now a folder whose path under sources/ is longer than 1,024 bytes is not entered (one warning),
    files above it are taken, and a tree nested while the service runs changes nothing either."""
    from kbwatch.pipeline.sources import MAX_FOLDER_BYTES

    root = make_root(tmp_path, projects=("p", "q"))
    sources = root / "p" / "sources"
    per = len("dddddddddd/")
    inside = MAX_FOLDER_BYTES // per  # the deepest level whose folder path fits
    _nest(sources, "dddddddddd", 450, files_at=(3, inside, inside + 1, 449))
    (sources / "top.md").write_text("# top\n\nplain quokka\n", encoding="utf-8")
    ingest = kbwatch("ingest", root=root)
    assert ingest.returncode == 0, ingest.stderr
    assert "not entered" in ingest.stderr and "Traceback" not in ingest.stderr
    names = set(manifest_files(root / "p"))
    assert {"top", "dddddddddd/" * 2 + "dddddddddd/level3", "dddddddddd/" * (inside - 1) + "dddddddddd/level%d" % inside} <= names
    assert not any(n.endswith(("level%d" % (inside + 1), "level449")) for n in names)

    svc = service(root).start()
    wait_for(lambda: svc.log().count("startup scan") or "watching" in svc.log(), 30, "the service to start", proc=svc)
    _nest(root / "q" / "sources", "eeeeeeeeee", 450, files_at=(2, 200, 449))  # while it runs
    (root / "q" / "sources" / "after.md").write_text("# after\n\nplain quokka after\n", encoding="utf-8")
    wait_for(lambda: {"after", "eeeeeeeeee/eeeeeeeeee/level2"} <= set(manifest_files(root / "q")), 60,
             "the files above the deep folders", proc=svc)
    assert svc.proc.poll() is None
    code, _ = svc.terminate()
    assert code == 0
    assert not any("level200" in n or "level449" in n for n in manifest_files(root / "q"))
    status = kbwatch("status", root=root)
    assert status.returncode == 0, status.stderr


def test_recovery_unlinks_only_the_committed_file(tmp_path, service):
    """Killed after the commit, before the source left: the file now in its place has
    the same size and mtime but is another file (inode); recovery keeps it."""
    root = make_root(tmp_path, projects=("p",))
    flag = tmp_path / "paused"
    svc = service(root).start(env={"KBWATCH_TEST_PAUSE": "commit:after", "KBWATCH_TEST_PAUSE_FILE": str(flag)})
    src = root / "p" / "sources" / "doc.md"
    src.write_text("# first AAAA\n", encoding="utf-8")
    wait_for(flag.exists, 60, "the pause after the commit", proc=svc)
    st = os.lstat(src)
    other = src.with_name(".other")
    other.write_text("# other BBBB\n", encoding="utf-8")  # same size
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.rename(other, src)
    svc.kill()
    svc = service(root).start()
    # the other file is a new version of doc (ingested, not deleted by recovery)
    wait_for(lambda: [v["hash"] for v in manifest_files(root / "p").get("doc", {}).get("versions", [])]
             == [sha("# first AAAA\n"), sha("# other BBBB\n")], 60, "the replaced file as a second version", proc=svc)
    svc.terminate()


# -- the swap race -------------------------------------------------------------

def _swap_for_link(path: Path, target: Path) -> bool:
    """Replace ``path`` by a link to ``target`` in one rename (as an attacker would)."""
    tmp = path.with_name(f".swap-{random.getrandbits(32):08x}")
    os.symlink(target, tmp)
    try:
        os.rename(tmp, path)
        return True
    except OSError:
        os.unlink(tmp)
        return False


def test_swap_race_never_brings_an_outside_file_in(tmp_path, service):
    root = make_root(tmp_path, projects=("p",))
    project = root / "p"
    sources = project / "sources"
    token = f"TOPSECRET{random.getrandbits(48):012x}"
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.md"
    secret.write_text(f"# zebra quokka\n\n{token} zebra quokka ledger\n", encoding="utf-8")
    secret_before = tree(outside)

    held = {f"c{i:03d}": f"# zebra quokka {i}\n\nORIGINAL-c{i:03d} zebra quokka ledger\n" for i in range(110)}
    loose = {f"r{i:02d}": f"# zebra quokka r{i}\n\nORIGINAL-r{i:02d} zebra quokka ledger\n" for i in range(30)}
    flag = tmp_path / "opened"
    svc = service(root).start(env={
        "KBWATCH_TEST_PAUSE": "run:opened", "KBWATCH_TEST_PAUSE_SECONDS": "60",
        "KBWATCH_TEST_PAUSE_FILE": str(flag),
    })
    for name, text in held.items():
        (sources / f"{name}.md").write_text(text, encoding="utf-8")
    timers = []
    for name, text in loose.items():  # swapped at random moments, wherever their run is then
        (sources / f"{name}.md").write_text(text, encoding="utf-8")
        t = threading.Timer(random.uniform(0.0, 2.5), _swap_for_link, (sources / f"{name}.md", secret))
        t.start()
        timers.append(t)

    swapped_after_open: set[str] = set()
    deadline = time.monotonic() + 120
    while len(swapped_after_open) < len(held):
        assert time.monotonic() < deadline, f"only {len(swapped_after_open)} swaps\n{svc.log()[-3000:]}"
        assert svc.proc.poll() is None, svc.log()[-3000:]
        try:
            point, rel = flag.read_text(encoding="utf-8").splitlines()[:2]
        except (OSError, ValueError):
            time.sleep(0.005)
            continue
        name = rel.removeprefix("sources/").removesuffix(".md")
        if name in held and name not in swapped_after_open:
            assert _swap_for_link(sources / f"{name}.md", secret)
            swapped_after_open.add(name)
        flag.unlink()
    for t in timers:
        t.join()
    released = threading.Event()

    def release_later_runs():  # runs that open files from now on go on at once
        while not released.is_set():
            flag.unlink(missing_ok=True)
            time.sleep(0.01)

    releaser = threading.Thread(target=release_later_runs, daemon=True)
    releaser.start()

    def settled():
        for name in [*held, *loose]:
            rows = journal_rows(root, "select outcome from runs where source = ? order by rowid desc limit 1",
                                (f"sources/{name}.md",))
            if not rows or rows[0][0] == "running":
                return False
        return all(name in manifest_files(project) for name in held)

    try:
        wait_for(settled, 90, "every file's run to end", proc=svc)
    finally:
        released.set()
    code, _ = svc.terminate()
    assert code == 0
    assert len(swapped_after_open) >= 100

    # the outside file is untouched and its text is nowhere in the knowledge base
    assert tree(outside) == secret_before
    secret_hash = sha(secret.read_text(encoding="utf-8"))
    for path in project.rglob("*"):
        if path.is_file() and not path.is_symlink() and "sources" not in path.relative_to(project).parts:
            assert token.encode() not in path.read_bytes(), path
    files = manifest_files(project)
    for name, text in {**held, **loose}.items():
        entry = files.get(name)
        if entry is None:
            assert name in loose and (sources / f"{name}.md").is_symlink()  # swapped before it was taken
            continue
        for version in entry["versions"]:  # archive, parsed and the recorded hash agree
            assert version["hash"] == sha(text) != secret_hash, name
            assert "sha256:" + hashlib.sha256((project / version["archived"]).read_bytes()).hexdigest() == version["hash"]
        assert f"ORIGINAL-{name} " in (project / entry["parsed"]).read_text(encoding="utf-8")
    assert all((sources / f"{name}.md").is_symlink() for name in swapped_after_open)  # the links were not deleted
    ask = kbwatch("ask", "p", "zebra quokka ledger", "--include-flagged", "--max-files", "50", root=root)
    assert ask.returncode == 0, ask.stderr
    assert "ORIGINAL-" in ask.stdout and token not in ask.stdout


# -- hard links ----------------------------------------------------------------

def _swap_for_hard_link(path: Path, target: Path) -> None:
    """Replace ``path`` by a second name of ``target`` in one rename."""
    tmp = path.with_name(f".hl-{random.getrandbits(32):08x}")
    os.link(target, tmp)
    os.rename(tmp, path)


def test_hard_links_never_bring_an_outside_file_in(tmp_path, service):
    """A hard link needs no access to the folders of the file's other name: planted in sources/,
    or swapped in between the listing and the open (held at ``run:listed``), it is refused with
    its reason, and the file it names, outside the root, is neither read into the knowledge base
    nor touched; the link is left where it was put."""
    root = make_root(tmp_path, projects=("p",))
    project, sources = root / "p", root / "p" / "sources"
    token = f"HARDLINKED{random.getrandbits(48):012x}"
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.md"
    secret.write_text(f"# walrus ledger\n\n{token} walrus ledger\n", encoding="utf-8")
    secret_stat = os.stat(secret)
    os.link(secret, sources / "planted.md")  # there from the start
    (sources / "plain.md").write_text("# walrus ledger plain\n\nORIGINAL-plain walrus ledger\n", encoding="utf-8")
    raced = {f"s{i}": f"# walrus ledger {i}\n\nORIGINAL-s{i} walrus ledger\n" for i in range(5)}
    for name, text in raced.items():
        (sources / f"{name}.md").write_text(text, encoding="utf-8")
    flag = tmp_path / "listed"
    svc = service(root).start(env={
        "KBWATCH_TEST_PAUSE": "run:listed", "KBWATCH_TEST_PAUSE_SECONDS": "60",
        "KBWATCH_TEST_PAUSE_FILE": str(flag),
    })
    swapped: set[str] = set()
    deadline = time.monotonic() + 60
    while len(swapped) < len(raced):  # every raced file is listed as a plain file, then swapped
        assert time.monotonic() < deadline, f"only {sorted(swapped)} swapped\n{svc.log()[-3000:]}"
        assert svc.proc.poll() is None, svc.log()[-3000:]
        try:
            rel = flag.read_text(encoding="utf-8").splitlines()[1]
        except (OSError, IndexError):
            time.sleep(0.005)
            continue
        name = rel.removeprefix("sources/").removesuffix(".md")
        if name in raced and name not in swapped:
            _swap_for_hard_link(sources / f"{name}.md", secret)
            swapped.add(name)
        flag.unlink()
    released = threading.Event()

    def release_later_runs():
        while not released.is_set():
            flag.unlink(missing_ok=True)
            time.sleep(0.01)

    threading.Thread(target=release_later_runs, daemon=True).start()

    def outcome(name):
        rows = journal_rows(root, "select outcome, error from runs where source = ? order by rowid desc limit 1",
                            (f"sources/{name}.md",))
        return rows[0] if rows and rows[0][0] != "running" else None

    try:
        wait_for(lambda: all(outcome(n) for n in ["planted", "plain", *raced]), 60, "every run to end", proc=svc)
    finally:
        released.set()
    code, _ = svc.terminate()
    assert code == 0
    for name in ["planted", *raced]:
        result, error = outcome(name)
        assert result == "failed" and "hard link" in error, (name, result, error)
        assert os.lstat(sources / f"{name}.md").st_ino == secret_stat.st_ino  # left where it was put
    assert outcome("plain")[0] == "done"
    assert set(manifest_files(project)) == {"plain"}
    # the outside file: same content, same times, and only the names the test gave it
    assert secret.read_text(encoding="utf-8").startswith("# walrus ledger")
    assert os.stat(secret).st_mtime_ns == secret_stat.st_mtime_ns
    assert os.stat(secret).st_nlink == 1 + 1 + len(raced)
    for path in project.rglob("*"):
        if path.is_file() and "sources" not in path.relative_to(project).parts:
            assert token.encode() not in path.read_bytes(), path
    status = kbwatch("status", "--json", root=root)
    assert status.returncode == 0, status.stderr
    ask = kbwatch("ask", "p", "walrus ledger", "--include-flagged", root=root)
    assert ask.returncode == 0 and "ORIGINAL-plain" in ask.stdout and token not in ask.stdout


def test_writes_below_a_root_never_go_through_a_folder_swapped_for_a_link(tmp_path):
    """The step under the project checks: every write a stage or commit makes below a
    registered root reaches its folder without following links, so a folder replaced
    by a link between the check and the write makes the write fail, not escape."""
    import pytest

    from kbwatch.pipeline import confine
    from kbwatch.pipeline.fsutil import atomic_write, atomic_write_many, copy_file, link_or_copy

    root = tmp_path / "kb"
    (root / "p" / "archive").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "p" / "archive").rmdir()
    (root / "p" / "archive").symlink_to(outside, target_is_directory=True)
    src = tmp_path / "src.md"
    src.write_text("# content\n", encoding="utf-8")
    confine.register_root(root)
    writes = [
        lambda: atomic_write(root / "p" / "archive" / "a.md", "x"),
        lambda: atomic_write(root / "p" / "archive" / "sub" / "a.md", "x"),
        lambda: atomic_write_many([(root / "p" / "manifest.json", "{}"), (root / "p" / "archive" / "b.md", "x")]),
        lambda: copy_file(src, root / "p" / "archive" / "c.md"),
        lambda: link_or_copy(src, root / "p" / "archive" / "d.md"),
    ]
    for write in writes:
        with pytest.raises(confine.Escape):
            write()
    assert list(outside.iterdir()) == []
    assert not (root / "p" / "manifest.json").exists()  # nothing of a batch is written when one target escapes
    with pytest.raises(confine.LinkedFile):
        (root / "p" / "sources").mkdir()
        (root / "p" / "sources" / "s.md").symlink_to(src)
        confine.open_file(root / "p" / "sources" / "s.md")


def test_parsed_writes_never_go_through_a_linked_subfolder(tmp_path):
    """parsed/<sub>/ swapped for a link to an outside folder: the parsed file's write
    (``write_parts_atomic``) fails instead of landing outside the root."""
    import pytest

    from kbwatch.pipeline import confine
    from kbwatch.pipeline.bigtext import write_parts_atomic

    root = tmp_path / "kb"
    (root / "p" / "parsed").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "p" / "parsed" / "notes").symlink_to(outside, target_is_directory=True)
    confine.register_root(root)
    with pytest.raises(confine.Escape):
        write_parts_atomic(root / "p" / "parsed" / "notes" / "a.md", ["# a\n", "text\n"])
    assert list(outside.iterdir()) == []
    assert write_parts_atomic(root / "p" / "parsed" / "b.md", ["# b\n"]) == 4  # a real folder works
    assert (root / "p" / "parsed" / "b.md").read_text(encoding="utf-8") == "# b\n"


def test_writes_follow_the_folder_at_the_path_never_a_moved_one(tmp_path):
    """Every write reaches its folder afresh, without following links (no descriptor is
    kept from one write to the next): a folder swapped for a link makes the next write
    fail, a folder moved out of the root and replaced gets nothing more, a moved one not
    replaced is made again in place (create), and a parent swapped for a link is caught."""
    import pytest

    from kbwatch.pipeline import confine
    from kbwatch.pipeline.fsutil import atomic_write

    root = tmp_path / "kb"
    runs = root / "p" / "runs"
    runs.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    confine.register_root(root)

    atomic_write(runs / "1.json", "{}", fsync=False)
    runs.rename(outside / "runs-moved")  # moved out of the root, a link in its place
    runs.symlink_to(outside / "runs-moved", target_is_directory=True)
    with pytest.raises(confine.Escape):
        atomic_write(runs / "2.json", "{}", fsync=False)
    assert sorted(p.name for p in (outside / "runs-moved").iterdir()) == ["1.json"]

    runs.unlink()
    runs.mkdir()  # a real folder again, another inode
    atomic_write(runs / "3.json", "{}", fsync=False)
    assert sorted(p.name for p in runs.iterdir()) == ["3.json"]

    runs.rename(outside / "runs-moved-2")  # moved away, nothing in its place: made again
    atomic_write(runs / "4.json", "{}", fsync=False)
    assert sorted(p.name for p in runs.iterdir()) == ["4.json"]
    assert sorted(p.name for p in (outside / "runs-moved-2").iterdir()) == ["3.json"]

    project = root / "p"  # the parent this time: the project folder becomes a link
    project.rename(outside / "p-moved")
    project.symlink_to(outside / "p-moved", target_is_directory=True)
    with pytest.raises(confine.Escape):
        atomic_write(runs / "5.json", "{}", fsync=False)
    with pytest.raises(confine.Escape):
        confine.unlink_if_same(runs / "4.json", None, None, 2, 0)
    assert sorted(p.name for p in (outside / "p-moved" / "runs").iterdir()) == ["4.json"]



SECRET = "OUTSIDE-SECRET-7731 quarterly merger plan"


def _alpha_and_beta_ingested(tmp_path: Path) -> tuple[Path, Path, dict[str, dict]]:
    """A root whose project p holds two ingested documents: (root, project, manifest files)."""
    root = make_root(tmp_path)
    project = root / "p"
    (project / "sources" / "alpha.md").write_text("# Alpha\n\nAlpha notes about the garden.\n", encoding="utf-8")
    (project / "sources" / "beta.md").write_text("# Beta\n\nBeta notes about the harbour.\n", encoding="utf-8")
    kbwatch("ingest", root=root, check=True)
    return root, project, manifest_files(project)


def test_own_files_swapped_for_links_are_never_read_through(tmp_path):
    """A colleague who can write to the project folder replaces kbwatch's own files (a parsed
    document, manifest.json, KNOWLEDGE.md, a run record) with links to files elsewhere that the
    service can read and they cannot: ``rebuild``, ``index rebuild``, ``ask``, ``status``,
    ``journal rebuild``, an ingest and the MCP facade never read through them, and the files
    elsewhere stay as they were."""
    from kbwatch.pipeline.api import Knowledge

    root, project, files = _alpha_and_beta_ingested(tmp_path)
    assert set(files) == {"alpha", "beta"}

    outside = tmp_path / "outside"  # another team's knowledge base, readable by the service only
    (outside / "parsed").mkdir(parents=True)
    (outside / "parsed" / "plan.md").write_text(f"# Plan\n\n{SECRET}.\n\n{SECRET} in detail.\n", encoding="utf-8")
    other = json.loads((project / "manifest.json").read_text(encoding="utf-8"))
    other["files"][0]["name"] = "classified-" + SECRET.split()[0]
    (outside / "manifest.json").write_text(json.dumps(other, ensure_ascii=False, indent=2), encoding="utf-8")
    (outside / "KNOWLEDGE.md").write_text(f"---\nstatus: ready\ndescription: {SECRET}\n---\n", encoding="utf-8")
    record = next(t for f in sorted(project.glob("runs/ingest-*.json"))  # a real one, renamed
                  if "alpha" in (t := f.read_text(encoding="utf-8")))
    record = record.replace("alpha", "classified-" + SECRET.split()[0])
    record = re.sub(r'"run_id": "[^"]+"', '"run_id": "ingest-20260101-000000-deadbeef"', record)
    (outside / "run.json").write_text(record, encoding="utf-8")
    before = tree(outside)

    parsed_alpha = project / files["alpha"]["parsed"]
    parsed_alpha.unlink()
    parsed_alpha.symlink_to(outside / "parsed" / "plan.md")

    rebuild = kbwatch("rebuild", "p", root=root)
    assert rebuild.returncode == 0, rebuild.stdout + rebuild.stderr
    assert SECRET not in (project / "project.md").read_text(encoding="utf-8")
    assert "beta" in (project / "project.md").read_text(encoding="utf-8")

    kbwatch("index", "rebuild", root=root, check=True)
    ask = kbwatch("ask", "p", "quarterly merger plan", "--json", root=root)
    assert SECRET not in ask.stdout + ask.stderr
    with Knowledge(root) as kn:
        from kbwatch.pipeline.errors import KbwatchError

        with pytest.raises(KbwatchError):
            kn.read_document(files["alpha"]["parsed"], "p")
        assert SECRET not in json.dumps(kn.query("merger plan", "p"), ensure_ascii=False)

    # a run record planted as a link: the journal's rebuild from runs/ leaves it out
    (project / "runs" / "ingest-20260101-000000-deadbeef.json").symlink_to(outside / "run.json")
    journal = kbwatch("journal", "rebuild", root=root)
    assert journal.returncode == 0, journal.stdout + journal.stderr
    runs = kbwatch("runs", "--json", root=root, check=True).stdout
    assert SECRET.split()[0] not in runs and "beta" in runs

    # manifest.json and KNOWLEDGE.md swapped for links: the project is refused, and every reader
    # that gets past that check (a swap right after it) reads no link (kbwatch.pipeline.confine.read_text)
    (project / "manifest.json").rename(project / "manifest.real")
    (project / "manifest.json").symlink_to(outside / "manifest.json")
    (project / "KNOWLEDGE.md").rename(project / "KNOWLEDGE.real")
    (project / "KNOWLEDGE.md").symlink_to(outside / "KNOWLEDGE.md")
    status = json.loads(kbwatch("status", "--json", root=root, check=True).stdout)
    assert [r["name"] for r in status["refused_projects"]] == ["p"], status
    assert "symbolic link" in status["refused_projects"][0]["reason"]
    assert SECRET not in json.dumps(status, ensure_ascii=False) and SECRET not in kbwatch("status", root=root).stdout
    with Knowledge(root) as kn:
        assert SECRET.split()[0] not in json.dumps(kn.list(), ensure_ascii=False)
    from kbwatch.pipeline import confine
    from kbwatch.pipeline.api import _frontmatter, _manifest
    from kbwatch.pipeline.errors import PermanentError
    from kbwatch.pipeline.formats.knowledge_md import read_frontmatter
    from kbwatch.pipeline.formats.manifest import Manifest

    confine.register_root(root)
    assert _manifest(project) == {} and _frontmatter(project, read_frontmatter) == {}
    with pytest.raises(PermanentError, match="symbolic link"):
        Manifest.load(project / "manifest.json", "p", "")

    (project / "sources" / "gamma.md").write_text("# Gamma\n\nGamma notes.\n", encoding="utf-8")
    ingest = kbwatch("ingest", root=root)
    assert ingest.returncode == 1 and "refused project p" in ingest.stderr, ingest.stdout + ingest.stderr
    assert (project / "sources" / "gamma.md").exists()  # not taken while the manifest is a link
    assert (project / "manifest.json").is_symlink()  # neither written through nor replaced

    assert tree(outside) == before  # nothing elsewhere was written
    for path in project.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert SECRET.encode() not in path.read_bytes(), path


def test_own_files_replaced_by_hard_links_are_never_read(tmp_path):
    """A hard link planted in parsed/ (or in place of KNOWLEDGE.md) names a file elsewhere on the
    same file system: sources/ refuses such files, and kbwatch's own files are read the same way.
    Neither ``rebuild``, ``index rebuild``, ``ask`` nor the MCP facade passes its text on."""
    from kbwatch.pipeline.api import Knowledge
    from kbwatch.pipeline.errors import KbwatchError

    root, project, files = _alpha_and_beta_ingested(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "plan.md").write_text(f"# Plan\n\n{SECRET}.\n", encoding="utf-8")
    (outside / "KNOWLEDGE.md").write_text(f"---\nstatus: ready\ndescription: {SECRET}\n---\n", encoding="utf-8")
    parsed_alpha = project / files["alpha"]["parsed"]
    parsed_alpha.unlink()
    os.link(outside / "plan.md", parsed_alpha)
    (project / "parsed" / "extra.md").hardlink_to(outside / "plan.md")  # a name the manifest does not know

    rebuild = kbwatch("rebuild", "p", root=root)
    assert rebuild.returncode == 0, rebuild.stdout + rebuild.stderr
    assert SECRET not in (project / "project.md").read_text(encoding="utf-8")
    kbwatch("index", "rebuild", root=root, check=True)
    ask = kbwatch("ask", "p", "quarterly merger plan", "--json", root=root)
    assert SECRET not in ask.stdout + ask.stderr
    with Knowledge(root) as kn:
        for citation in (files["alpha"]["parsed"], "parsed/extra.md"):
            with pytest.raises(KbwatchError, match="outside the parsed files"):
                kn.read_document(citation, "p")
        assert "Beta notes" in json.dumps(kn.read_document(files["beta"]["parsed"], "p"), ensure_ascii=False)
        assert SECRET not in json.dumps(kn.query("merger plan", "p"), ensure_ascii=False)
    (project / "KNOWLEDGE.md").unlink()
    os.link(outside / "KNOWLEDGE.md", project / "KNOWLEDGE.md")
    status = kbwatch("status", "--json", root=root)
    assert SECRET not in status.stdout + status.stderr
    with Knowledge(root) as kn:
        assert SECRET not in json.dumps(kn.list(), ensure_ascii=False)
    assert (outside / "plan.md").read_text(encoding="utf-8").startswith("# Plan")


def test_the_state_dir_and_the_snapshots_are_not_writable_by_others(tmp_path):
    """Under the systemd unit's ``UMask=0002`` the state dir used to be made group-writable, so
    anyone in the team's group could swap a snapshot in ``intake/`` between its copy and its parse.
    Now the state dir is made 0755 whatever the umask, ``intake/`` 0700 at every start, and a take
    puts ``intake/`` right again when it finds it writable by others."""
    from kbwatch.pipeline import intake

    old = os.umask(0o002)
    try:
        root = make_root(tmp_path)
        (root / "p" / "sources" / "a.md").write_text("# A\n\ntext\n", encoding="utf-8")
        kbwatch("ingest", root=root, check=True)
    finally:
        os.umask(old)
    state = root / ".kbwatch"
    assert state.stat().st_mode & 0o022 == 0, oct(state.stat().st_mode)
    assert (state / "intake").stat().st_mode & 0o077 == 0, oct((state / "intake").stat().st_mode)
    assert (root / "p" / "parsed").stat().st_mode & 0o020  # the shared root keeps the umask the team chose

    os.chmod(state / "intake", 0o777)  # e.g. made again by hand, or under a looser umask
    (root / "p" / "sources" / "b.md").write_text("# B\n\ntext\n", encoding="utf-8")
    kbwatch("ingest", root=root, check=True)
    assert (state / "intake").stat().st_mode & 0o077 == 0

    os.chmod(state / "intake", 0o777)  # between two takes of a running service
    src = root / "p" / "sources" / "c.md"
    src.write_text("# C\n\ntext\n", encoding="utf-8")
    folder = state / "intake" / "thread-test"
    taken = intake.take(src, folder)
    assert taken.snapshot.read_bytes() == src.read_bytes()
    assert (state / "intake").stat().st_mode & 0o022 == 0
    intake.discard(folder)


def test_archive_copies_never_keep_set_id_or_world_write_bits(tmp_path, service):
    """The archive copy belongs to the service's account: a dropped file of mode 4755 was kept as
    such, a program anyone could run as that account (root, often: a polyglot ELF + docx ran with
    euid 0), and one of mode 0666 became a world-writable "original". The copy keeps the read and
    execute bits only, and the owner's write; the plain copy (across filesystems) does the same."""
    import stat as st_

    from kbwatch.pipeline.fsutil import copy_file

    root = make_root(tmp_path, projects=("p",))
    sources = root / "p" / "sources"
    modes = {"setuid.md": 0o4755, "setgid.md": 0o2775, "all.md": 0o6777, "shared.md": 0o666, "plain.md": 0o640}
    for name, mode in modes.items():
        (sources / name).write_text(f"# {name}\n\ntext\n", encoding="utf-8")
        os.chmod(sources / name, mode)
        assert st_.S_IMODE((sources / name).stat().st_mode) == mode  # the owner may set them
    svc = service(root).start()
    wait_for(lambda: len(manifest_files(root / "p")) == len(modes) and not any(sources.glob("*.md")), 60,
             "the files", proc=svc)
    code, _ = svc.terminate()
    assert code == 0
    kept = {p.name.split("_")[0]: st_.S_IMODE(p.stat().st_mode) for p in (root / "p" / "archive").glob("*.md")}
    assert kept == {"setuid": 0o755, "setgid": 0o755, "all": 0o755, "shared": 0o644, "plain": 0o640}, \
        {k: oct(v) for k, v in kept.items()}
    src = tmp_path / "x.md"
    src.write_text("x", encoding="utf-8")
    os.chmod(src, 0o6777)
    copy_file(src, tmp_path / "y.md")
    assert st_.S_IMODE((tmp_path / "y.md").stat().st_mode) == 0o755


def test_a_fifo_in_place_of_a_project_file_hangs_nothing(tmp_path):
    """A FIFO planted as KNOWLEDGE.md (or project.md, manifest.json) used to hang ``status``,
    ``ingest`` and the service on their first read of it (a blocking open with no writer). Now the
    project is refused with a reason, and the readers open no FIFO."""
    from kbwatch.pipeline import confine

    root = make_root(tmp_path, projects=("p", "ok"))
    (root / "ok" / "sources" / "a.md").write_text("# A\n\ntext\n", encoding="utf-8")
    for name in ("KNOWLEDGE.md", "project.md", "manifest.json"):
        path = root / "p" / name
        path.unlink(missing_ok=True)
        os.mkfifo(path)
        status = kbwatch("status", "--json", root=root, check=True, timeout=60)
        (refused,) = json.loads(status.stdout)["refused_projects"]
        assert refused["name"] == "p" and f"{name} is not a regular file" in refused["reason"], refused
        ingest = kbwatch("ingest", root=root, timeout=60)
        assert ingest.returncode == 1 and "refused project p" in ingest.stderr, ingest.stderr
        with pytest.raises(confine.NotRegularFile):
            confine.read_text(path)  # returns at once: O_NONBLOCK open, then fstat
        path.unlink()
    assert "a" in manifest_files(root / "ok")
    # a FIFO named like a run record: `journal rebuild` used to block on it forever
    os.mkfifo(root / "ok" / "runs" / "ingest-20260101-000000-deadbeef.json")
    journal = kbwatch("journal", "rebuild", root=root, timeout=60)
    assert journal.returncode == 0 and "not a regular file" in journal.stderr, journal.stdout + journal.stderr
    assert "a" in kbwatch("runs", "--json", root=root, check=True).stdout


def test_a_fifo_as_the_root_config_is_a_clear_error_not_a_hang(tmp_path):
    """A FIFO (or a folder, or a broken link) at the root's kbwatch.toml was taken for "no
    configuration" and the service ran on the defaults (and a FIFO swapped in between the check
    and the open hung it). Now it is a configuration error: exit 2 with one line, at once."""
    root = make_root(tmp_path)
    (root / "kbwatch.toml").unlink()
    os.mkfifo(root / "kbwatch.toml")
    for args in (("status",), ("ingest",), ("watch",)):
        proc = kbwatch(*args, root=root, timeout=60)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert "kbwatch.toml: not a regular file" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
