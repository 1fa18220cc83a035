"""DESIGN §2 rules: conflicts (both orders), duplicates, versions, names, failures."""

from __future__ import annotations

import os
import re
import shutil
import time

from conftest import INGEST_FIXTURES, index_rows, ingest, read_manifest, run_records


def write(project, rel, text="hello world\n", data=None):
    path = project / "sources" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if data is not None:
        path.write_bytes(data)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def outcomes(project):
    from kbwatch.pipeline.formats.run_record import read_record

    return [(read_record(r)["source"], read_record(r)["outcome"]) for r in run_records(project)]


def test_conflict_two_files_at_once_both_refused_until_renamed(project):
    write(project, "技术方案.md", "# 方案 A\n")
    write(project, "技术方案.txt", "方案 B\n")
    totals, _ = ingest(project.parent)
    assert totals == {"conflict": 2}
    assert sorted(p.name for p in (project / "sources").iterdir()) == ["技术方案.md", "技术方案.txt"]
    assert read_manifest(project)["files"] == []
    log = (project / "project.md").read_text(encoding="utf-8")
    assert log.count("冲突 技术方案.") == 2 and "rename" in log
    # not retried while the conflict stands
    totals, _ = ingest(project.parent)
    assert totals == {}
    # renaming one resolves it: both are then ingested
    os.rename(project / "sources" / "技术方案.txt", project / "sources" / "技术方案-b.txt")
    totals, _ = ingest(project.parent)
    assert totals == {"done": 2}
    assert {f["name"] for f in read_manifest(project)["files"]} == {"技术方案", "技术方案-b"}


def test_conflict_with_name_already_in_manifest(project):
    write(project, "plan.md", "# Plan\n")
    assert ingest(project.parent)[0] == {"done": 1}
    write(project, "plan.txt", "another plan\n")
    totals, runs = ingest(project.parent)
    assert totals == {"conflict": 1}
    assert "plan.md is already in the knowledge base" in runs[0]["message"]
    assert (project / "sources" / "plan.txt").exists()
    [entry] = read_manifest(project)["files"]
    assert entry["ext"] == ".md" and len(entry["versions"]) == 1
    assert ingest(project.parent)[0] == {}  # unchanged: not retried


def test_duplicate_adds_no_version_and_leaves_sources(project):
    write(project, "a.md", "# A\nsame\n")
    ingest(project.parent)
    write(project, "a.md", "# A\nsame\n")
    totals, runs = ingest(project.parent)
    assert totals == {"duplicate": 1}
    assert not (project / "sources" / "a.md").exists()
    [entry] = read_manifest(project)["files"]
    assert len(entry["versions"]) == 1
    assert len(list((project / "archive").iterdir())) == 1
    assert [o for _, o in outcomes(project)].count("duplicate") == 1


def test_new_version_updates_row_in_place(project):
    write(project, "spec.md", "# Spec\nversion one\n")
    ingest(project.parent)
    write(project, "spec.md", "# Spec\nversion two\n")
    totals, _ = ingest(project.parent)
    assert totals == {"done": 1}
    [entry] = read_manifest(project)["files"]
    assert len(entry["versions"]) == 2
    a1, a2 = (project / v["archived"] for v in entry["versions"])
    assert a1 != a2 and a1.exists() and a2.exists()
    assert a1.read_text() == "# Spec\nversion one\n" and a2.read_text() == "# Spec\nversion two\n"
    assert re.match(r"^spec_\d{12}(\d{2})?(-\d+)?\.md$", a2.name)
    rows = index_rows(project)
    assert len(rows) == 1 and rows[0][2] == entry["versions"][1]["archived"]
    assert "version two" in (project / "parsed" / "spec.md").read_text()
    log = (project / "project.md").read_text(encoding="utf-8")
    assert "解析 spec.md" in log and "更新 spec.md（新版本）" in log


def test_nested_folders_keep_their_path(project):
    write(project, "team/a/notes.md", "# Notes\ndeep\n")
    write(project, "team/b/notes.txt", "other notes\n")
    totals, _ = ingest(project.parent)
    assert totals == {"done": 2}
    assert (project / "parsed" / "team" / "a" / "notes.md").exists()
    assert (project / "parsed" / "team" / "b" / "notes.md").exists()
    names = {f["name"]: f for f in read_manifest(project)["files"]}
    assert set(names) == {"team/a/notes", "team/b/notes"}
    assert names["team/a/notes"]["versions"][0]["archived"].startswith("archive/team/a/notes_")
    assert (project / "sources" / "team" / "a").is_dir()  # sub-folders are the users': kept, even emptied
    assert not any(p.is_file() for p in (project / "sources").rglob("*"))


def test_unusual_file_names(project):
    names = ["中文 文件.md", "emoji 🎉 notes.txt", "with space.md", "-leading-dash.md", "--double.txt"]
    for n in names:
        write(project, n, f"# {n}\ncontent of {n}\n")
    totals, runs = ingest(project.parent)
    assert totals == {"done": len(names)}, runs
    for n in names:
        stem = n.rsplit(".", 1)[0]
        assert f"content of {n}" in (project / "parsed" / f"{stem}.md").read_text(encoding="utf-8")
    assert len(index_rows(project)) == len(names)


def test_name_with_newline_and_non_utf8_refused_not_crashed(project):
    write(project, "bad\nname.md", "x\n")
    raw = os.path.join(os.fsencode(project / "sources"), b"latin1-\xe9.md")
    with open(raw, "wb") as fh:
        fh.write(b"# hi\n")
    totals, runs = ingest(project.parent)
    assert totals == {"failed": 2}
    assert all("rename" in r["message"] for r in runs)
    assert ingest(project.parent)[0] == {}  # not retried while unchanged


def test_empty_unknown_and_corrupt_files_fail_and_stay(project):
    write(project, "empty.md", "")
    write(project, "data.xyz", "whatever")
    write(project, "broken.docx", data=b"PK\x03\x04 this is not really a zip file")
    totals, runs = ingest(project.parent)
    assert totals == {"failed": 3}
    reasons = {r["source"]: r["error"] for r in runs}
    assert "empty" in reasons["sources/empty.md"]
    assert "unsupported file type .xyz" in reasons["sources/data.xyz"]
    assert reasons["sources/broken.docx"]
    for n in ("empty.md", "data.xyz", "broken.docx"):
        assert (project / "sources" / n).exists()
    assert read_manifest(project)["files"] == []
    # not retried by the next ingest unless the file changed
    assert ingest(project.parent)[0] == {}
    time.sleep(0.01)
    shutil.copy(INGEST_FIXTURES / "simple.docx", project / "sources" / "broken.docx")
    totals, _ = ingest(project.parent)
    assert totals == {"done": 1}


def test_symlink_refused_never_followed(project, tmp_path):
    secret = tmp_path / "outside.md"
    secret.write_text("# outside the root\n")
    os.symlink(secret, project / "sources" / "link.md")
    totals, runs = ingest(project.parent)
    assert totals == {"failed": 1}
    assert "symbolic links are not followed" in runs[0]["message"]
    assert not (project / "parsed" / "link.md").exists()
    assert (project / "sources" / "link.md").is_symlink()


def test_ignored_and_dot_files_untouched(project):
    for n in ("~$draft.docx", ".hidden.md", "x.tmp", "download.part", "Thumbs.db"):
        write(project, n, "ignored")
    totals, _ = ingest(project.parent)
    assert totals == {}
    assert len(list((project / "sources").iterdir())) == 5
