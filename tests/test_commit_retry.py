"""A commit that fails part-way is retried with all of its work.

``ProjectSession.commit`` took its pending writes off the session before
writing them; when the write failed with an ``OSError`` (a transient I/O
error, retried by ``retry_transient``), the retry found nothing left to write,
"succeeded", and the runs' sources were then removed with their manifest and
project.md changes never written. A real session on a real folder; the
first render of manifest.json fails the way a full or flaky disk does.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from kbwatch.pipeline.project import ProjectSession


def test_a_failed_commit_keeps_its_writes_for_the_retry(tmp_path: Path):
    project = tmp_path / "p"
    project.mkdir()
    copy = project / "archive" / "a_202612060000.md"
    copy.parent.mkdir()
    copy.write_text("# a\n", encoding="utf-8")
    session = ProjectSession(project, {})
    failures = [OSError(errno.EIO, "Input/output error")]

    def manifest() -> str:
        if failures:
            raise failures.pop()
        return '{"files": []}\n'

    session.defer_write("manifest.json", manifest)
    session.defer_write("project.md", lambda: "# p\n")
    session.durable(copy)
    with pytest.raises(OSError):
        session.commit()
    assert not (project / "manifest.json").exists() and session.has_pending()
    assert sorted(session.commit()) == ["manifest.json", "project.md"]
    assert (project / "manifest.json").read_text(encoding="utf-8") == '{"files": []}\n'
    assert (project / "project.md").read_text(encoding="utf-8") == "# p\n"
    assert not session.has_pending()
    assert not [n for n in os.listdir(project) if n.endswith(".tmp")]
