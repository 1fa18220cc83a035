"""Durable writes: one sync round for many files, temp files never left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kbwatch.pipeline import fsutil


def _temps(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith(".tmp")]


def test_atomic_write_many_replaces_every_target(tmp_path):
    (tmp_path / "a.json").write_text("old a")
    extra = tmp_path / "archive" / "x.md"
    extra.parent.mkdir()
    extra.write_text("a copy written earlier without fsync")
    items = [(tmp_path / "a.json", "new a"), (tmp_path / "sub" / "b.md", "新 b".encode("utf-8"))]
    fsutil.atomic_write_many(items, [extra])
    assert (tmp_path / "a.json").read_text() == "new a"
    assert (tmp_path / "sub" / "b.md").read_text(encoding="utf-8") == "新 b"
    assert _temps(tmp_path) == []


def test_atomic_write_many_leaves_targets_alone_when_a_write_fails(tmp_path):
    (tmp_path / "a.json").write_text("old a")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where a folder should be")
    items = [(tmp_path / "a.json", "new a"), (blocker / "b.md", "b")]
    with pytest.raises(OSError):
        fsutil.atomic_write_many(items)
    assert (tmp_path / "a.json").read_text() == "old a"  # nothing replaced before all data is written
    assert _temps(tmp_path) == []


@pytest.mark.parametrize("no_syncfs", ["0", "1"])
def test_fsync_paths_with_and_without_syncfs(tmp_path, no_syncfs):
    """Both routes (one syncfs, or a pool of fsyncs) run for real and skip vanished files."""
    files = []
    for i in range(fsutil.SYNCFS_MIN_FILES + 3):
        p = tmp_path / f"d{i % 3}" / f"f{i}.md"
        p.parent.mkdir(exist_ok=True)
        p.write_text(str(i))
        files.append(p)
    files.append(tmp_path / "gone.md")  # vanished before the sync: ignored
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from kbwatch.pipeline import fsutil
        assert (fsutil._SYNCFS is None) == ({no_syncfs!r} == "1"), fsutil._SYNCFS
        paths = [Path(p) for p in sys.argv[1:]]
        fsutil.fsync_paths(paths)
        fsutil.fsync_dirs({{p.parent for p in paths}})
        print("ok")
    """)
    env = {**os.environ, "KBWATCH_NO_SYNCFS": no_syncfs}
    out = subprocess.run([sys.executable, "-c", code, *map(str, files)], capture_output=True, text=True, env=env,
                         cwd=Path(__file__).resolve().parents[1], timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_raw_out_writes_small_and_large_pieces_in_order(tmp_path):
    from kbwatch.pipeline.fsutil import RawOut

    pieces = [b"a" * 10, b"b" * (RawOut.BUFFER - 5), b"c" * 3, b"d" * (3 * RawOut.BUFFER), b"", b"e"]
    target = tmp_path / "out.bin"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with RawOut(fd) as out:
        assert [out.write(p) for p in pieces] == [len(p) for p in pieces]
        out.flush()
        assert os.fstat(out.fileno()).st_size == sum(map(len, pieces))
    assert target.read_bytes() == b"".join(pieces)
    with pytest.raises(OSError):
        os.fstat(fd)  # closed by the with


def test_atomic_write_with_through_the_raw_writer_below_a_root(tmp_path):
    from kbwatch.pipeline import confine
    from kbwatch.pipeline.fsutil import atomic_write_with

    root = tmp_path / "kb"
    (root / "p").mkdir(parents=True)
    confine.register_root(root)
    parts = [("x" * 1000 + "\n").encode()] * 200
    assert atomic_write_with(root / "p" / "f.md", lambda fh: sum(fh.write(p) for p in parts)) == 200 * 1001
    assert (root / "p" / "f.md").read_bytes() == b"".join(parts)
    assert [p.name for p in (root / "p").iterdir()] == ["f.md"]  # no temp file left


@pytest.mark.parametrize("size", [0, 1, 4096, 3 * 1024 * 1024 + 7])
def test_read_all_reads_what_read_bytes_reads(tmp_path, size):
    from kbwatch.pipeline.fsutil import read_all

    path = tmp_path / "f.bin"
    path.write_bytes(os.urandom(size))
    assert read_all(path) == path.read_bytes()
    assert read_all(str(path)) == path.read_bytes()
