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
