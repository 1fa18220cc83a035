"""Containment through ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` (kbwatch.pipeline.confine).

One ``openat2`` call now resolves a whole path below the root; the
component-by-component walk is the fallback. Both must refuse the same
things: a folder or file that is a symbolic link, and a folder that another
process swaps for a link (or moves out of the root) between two calls. The
swap test runs the swapper as a real separate process and checks both ways of
reaching a folder; it also checks the fast path really answered (a test of
the walk alone would pass without it).
"""

from __future__ import annotations

import ctypes
import errno
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbwatch.pipeline import confine
from kbwatch.pipeline.fsutil import atomic_write

needs_openat2 = pytest.mark.skipif(confine._OPENAT2 is None,
                                   reason="openat2(2) is not available here (not Linux 5.6+, or turned off)")


def _count_walks(monkeypatch) -> list[int]:
    walks = [0]
    real = confine._walk_each

    def counted(*args):
        walks[0] += 1
        return real(*args)

    monkeypatch.setattr(confine, "_walk_each", counted)
    return walks


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "kb"
    (root / "p" / "parsed" / "notes").mkdir(parents=True)
    (root / "p" / "sources").mkdir()
    outside = tmp_path / "outside"
    (outside / "runs").mkdir(parents=True)
    (outside / "secret.md").write_text("SECRET\n", encoding="utf-8")
    (outside / "runs" / "r.json").write_text("SECRET\n", encoding="utf-8")
    confine.register_root(root)
    return root, outside


@needs_openat2
def test_openat2_answers_and_refuses_every_link(tmp_path, monkeypatch):
    root, outside = _tree(tmp_path)
    walks = _count_walks(monkeypatch)
    notes = root / "p" / "parsed" / "notes"
    fd = confine.open_dir(notes)
    try:
        assert os.fstat(fd).st_ino == notes.stat().st_ino
    finally:
        os.close(fd)
    (root / "p" / "sources" / "a.md").write_text("A\n", encoding="utf-8")
    fd = confine.open_file(root / "p" / "sources" / "a.md")
    try:
        assert os.read(fd, 10) == b"A\n"
    finally:
        os.close(fd)
    atomic_write(notes / "n.md", "N\n", fsync=False)
    assert walks[0] == 0  # all three answered by openat2, no walk

    (root / "p" / "linked").symlink_to(outside, target_is_directory=True)
    (root / "p" / "sources" / "s.md").symlink_to(outside / "secret.md")
    with pytest.raises(confine.Escape):
        confine.open_dir(root / "p" / "linked")
    with pytest.raises(confine.Escape):
        confine.open_dir(root / "p" / "linked" / "runs")
    with pytest.raises(confine.Escape):
        atomic_write(root / "p" / "linked" / "runs" / "x.json", "{}", fsync=False)
    with pytest.raises(confine.Escape):
        confine.open_file(root / "p" / "linked" / "secret.md")
    with pytest.raises(confine.LinkedFile):
        confine.open_file(root / "p" / "sources" / "s.md")
    with pytest.raises(FileNotFoundError):
        confine.open_dir(root / "p" / "missing")
    with pytest.raises(ValueError):  # never cut at the NUL (``p`` would be opened): refused as os.open does
        confine.open_dir(root / "p" / "\0parsed")
    assert walks[0] == 6  # refused by openat2, then the walk said why (the linked file: its folder, by openat2)
    assert sorted(p.name for p in outside.rglob("*")) == ["r.json", "runs", "secret.md"]


def test_an_unavailable_openat2_falls_back_to_the_walk(tmp_path, monkeypatch):
    """ENOSYS (an old kernel) or a seccomp filter's EPERM: the walk takes over for good."""
    root, outside = _tree(tmp_path)

    def missing(*_args):
        ctypes.set_errno(errno.ENOSYS)
        return -1

    monkeypatch.setattr(confine, "_OPENAT2", (437, missing))
    walks = _count_walks(monkeypatch)
    atomic_write(root / "p" / "parsed" / "notes" / "n.md", "N\n", fsync=False)
    assert confine._OPENAT2 is None and walks[0] == 1
    (root / "p" / "linked").symlink_to(outside, target_is_directory=True)
    with pytest.raises(confine.Escape):
        atomic_write(root / "p" / "linked" / "runs" / "x.json", "{}", fsync=False)
    assert walks[0] == 2
    assert sorted(p.name for p in (outside / "runs").iterdir()) == ["r.json"]


SWAPPER = r"""
import os, sys, time
project, outside, stop = sys.argv[1:4]
runs, away, link = (os.path.join(project, n) for n in ("runs", ".runs-away", ".runs-link"))
swaps = 0
while not os.path.exists(stop):
    try:
        os.symlink(os.path.join(outside, "runs"), link)
        os.rename(runs, away)          # the real folder leaves ...
        os.rename(link, runs)          # ... and a link to an outside folder takes its place
        swaps += 1
        time.sleep(0.0005)
        os.rename(runs, link)          # then the real folder comes back
        os.rename(away, runs)
        os.unlink(link)
    except OSError:  # the other side made runs/ again while it was away: put things back
        try:
            for p in (link, runs):
                if os.path.islink(p):
                    os.unlink(p)
            if os.path.isdir(away):
                if os.path.isdir(runs):
                    os.rename(runs, os.path.join(project, ".trash-%d" % swaps))
                os.rename(away, runs)
        except OSError:
            pass
print(swaps)
"""


@pytest.mark.parametrize("way", ["openat2", "walk"])
def test_a_folder_swapped_by_another_process_between_calls_is_never_followed(tmp_path, monkeypatch, way):
    """Another process keeps swapping ``p/runs`` for a link to an outside folder (and back)
    while this one reads and writes through it: every call either reaches the real folder
    or fails; nothing outside is read, written or removed."""
    if way == "openat2" and confine._OPENAT2 is None:
        pytest.skip("openat2(2) is not available here")
    if way == "walk":
        monkeypatch.setattr(confine, "_OPENAT2", None)
    root, outside = _tree(tmp_path)
    project = root / "p"
    runs = project / "runs"
    runs.mkdir()
    (runs / "r.json").write_text("INSIDE\n", encoding="utf-8")
    outside_ino = (outside / "runs").stat().st_ino
    stop = tmp_path / "stop"
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(project), str(outside), str(stop)],
                               stdout=subprocess.PIPE, text=True)
    reached = refused = 0
    deadline = time.monotonic() + 30
    try:
        i = 0
        while (reached < 200 or refused < 50) and time.monotonic() < deadline:
            i += 1
            try:
                fd = confine.open_dir(runs)
            except (confine.Escape, FileNotFoundError):
                refused += 1
            else:
                try:
                    assert os.fstat(fd).st_ino != outside_ino  # the real folder (or one made again in place)
                finally:
                    os.close(fd)
                reached += 1
            try:
                fd = confine.open_file(runs / "r.json")
            except (confine.Escape, FileNotFoundError):
                pass
            else:
                try:
                    assert os.read(fd, 100) == b"INSIDE\n"
                finally:
                    os.close(fd)
            try:
                atomic_write(runs / f"w{i % 5}.json", "{}", fsync=False)
            except (confine.Escape, FileNotFoundError, FileExistsError):
                pass
            try:
                confine.unlink_if_same(runs / "r.json", None, None, 0, 0)  # never the same file: never removed
            except (confine.Escape, FileNotFoundError):
                pass
    finally:
        stop.touch()
        out, _ = swapper.communicate(timeout=30)
    assert int(out) > 0
    assert reached >= 200 and refused >= 50, (reached, refused, out)
    assert sorted(p.name for p in outside.rglob("*")) == ["r.json", "runs", "secret.md"]
    assert (outside / "runs" / "r.json").read_text(encoding="utf-8") == "SECRET\n"


def test_a_link_planted_between_the_walks_mkdir_and_open_is_refused(tmp_path, monkeypatch):
    """The walk makes a missing folder and opens it; a link planted at that name in between (the
    race the swap test above hit once in CI) is refused as an :class:`Escape`, and nothing is made
    or written outside."""
    monkeypatch.setattr(confine, "_OPENAT2", None)
    root, outside = _tree(tmp_path)
    real_mkdir = os.mkdir

    def plant_then_mkdir(name, mode=0o777, *, dir_fd=None):
        if name == "runs":  # another process gets there first, with a link
            os.symlink(outside / "runs", name, dir_fd=dir_fd)
        return real_mkdir(name, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", plant_then_mkdir)
    with pytest.raises(confine.Escape):
        confine.open_dir(root / "p" / "runs", create=True)
    with pytest.raises(confine.Escape):
        atomic_write(root / "p" / "runs" / "w.json", "{}", fsync=False)
    assert sorted(p.name for p in (outside / "runs").iterdir()) == ["r.json"]
    assert (root / "p" / "runs").is_symlink()
