"""End-to-end one-shot ingest over real documents (tests/fixtures/ingest, from ../shared/corpus)."""

from __future__ import annotations

import hashlib
import re
import shutil
import sqlite3

import jsonschema
import pytest

from conftest import INGEST_FIXTURES, index_rows, ingest, read_manifest, run_records, schema

ARCHIVE_RE = re.compile(r"^(.+)_(\d{12})(\d{2})?(-\d+)?(\.[^./]+)$")

# file in sources/ -> phrases its parsed Markdown must contain
EXPECTED = {
    "simple.docx": ["These are a few of my favorite things", "Parrots", "This is my third thought."],
    "sample-presentation.pptx": ["<!-- slide: 2 -->", "This is the first content slide", "This one is a sub-sub-bullet"],
    "vodafone.xlsx": ["## Sheet: Index", "Quarterly revenue", "| Topic | Period |"],
    "list-item-example.pdf": ["<!-- page: 1 -->", "Module One - Introduction to Product", "What are product types?"],
    "eng_spa_mult.html": ["All human beings are born free and equal in dignity and rights"],
    "single-column.csv": ["| Lorem | ipsum |", "adipiscing"],
    "fake-text-utf-16-le.txt": ["This is a test document to use for unit tests.", "Hamburgers are delicious"],
    "zho_md_partition.md": ["春节放假通知", "共计放假一个月。比法定假期长三周。"],
    "通知-gbk.txt": ["春节放假通知", "共计放假一个月。比法定假期长三周。"],
}


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    from kbwatch.pipeline.kb import KnowledgeBase

    root = tmp_path_factory.mktemp("kb")
    project, _ = KnowledgeBase(root).init_project("demo")
    sources = project / "sources"
    for name in EXPECTED:
        if name == "通知-gbk.txt":
            text = (INGEST_FIXTURES / "zho_md_partition.md").read_text(encoding="utf-8")
            (sources / name).write_bytes(text.encode("gbk"))
        else:
            shutil.copy(INGEST_FIXTURES / name, sources / name)
    hashes = {n: hashlib.sha256((sources / n).read_bytes()).hexdigest() for n in EXPECTED}
    totals, runs = ingest(project.parent)
    return project, totals, runs, hashes


def test_every_document_parsed_with_its_text(ingested):
    project, totals, runs, _ = ingested
    assert totals == {"done": len(EXPECTED)}, runs
    for name, phrases in EXPECTED.items():
        stem = name.rsplit(".", 1)[0]
        text = (project / "parsed" / f"{stem}.md").read_text(encoding="utf-8")
        assert text.startswith(f"<!-- source: {name} -->\n<!-- archived: archive/{stem}_")
        assert re.search(r"^<!-- parsed_at: \d{4}-\d\d-\d\d \d\d:\d\d -->$", text, re.M)
        assert re.search(r"^# .+", text, re.M), f"{name} has no title heading"
        for phrase in phrases:
            assert phrase in text, f"{phrase!r} missing from parsed {name}"
    assert list((project / "sources").iterdir()) == []


def test_archive_names_and_manifest(ingested):
    project, _, _, hashes = ingested
    manifest = read_manifest(project)
    assert set(manifest) >= {"project", "created_at", "last_ingest", "files"}
    assert manifest["project"] == "demo"
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d$", manifest["last_ingest"])
    by_name = {f["name"]: f for f in manifest["files"]}
    assert len(by_name) == len(EXPECTED) == len(manifest["files"])
    for name, digest in hashes.items():
        stem, ext = name.rsplit(".", 1)
        entry = by_name[stem]
        assert entry["ext"] == f".{ext}"
        assert entry["parsed"] == f"parsed/{stem}.md"
        [version] = entry["versions"]
        assert version["hash"] == f"sha256:{digest}"
        archived = project / version["archived"]
        assert archived.is_file()
        assert hashlib.sha256(archived.read_bytes()).hexdigest() == digest
        m = ARCHIVE_RE.match(archived.name)
        assert m and m.group(1) == stem and m.group(5) == f".{ext}"
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d$", version["ingested_at"])


def test_project_md_one_row_per_document(ingested):
    project, *_ = ingested
    rows = index_rows(project)
    assert sorted(r[0] for r in rows) == sorted(n.rsplit(".", 1)[0] for n in EXPECTED)
    text = (project / "project.md").read_text(encoding="utf-8")
    assert text.startswith("# demo\n")
    for heading in ("## 概述", "## 关键信息", "## 文件索引", "## 更新记录"):
        assert heading in text
    assert "| 文件名 | 解析文件 | 最新归档 | 摘要 |" in text
    log = [l for l in text.splitlines() if re.match(r"^- \d{4}-\d\d-\d\d \d\d:\d\d: ", l)]
    assert len(log) == len(EXPECTED)
    assert any(l.endswith(": 解析 simple.docx") for l in log)


def test_run_records_valid_and_journal_matches(ingested):
    project, _, runs, hashes = ingested
    validator = jsonschema.Draft202012Validator(schema("compile-run.schema.json"))
    records = run_records(project)
    assert len(records) == len(EXPECTED)
    for record in records:
        errors = list(validator.iter_errors(record))
        assert not errors, errors[0].message
        assert record["trigger"] == "ingest" and record["status"] == "passed"
        [inp] = record["inputs"]
        assert inp["sha256"] == hashes[inp["path"].removeprefix("sources/")]
        assert (project / "runs" / f"{record['run_id']}.json").exists()
        assert re.match(r"^ingest-\d{8}T\d{6}Z-[0-9a-f]{8}$", record["run_id"])
    db = sqlite3.connect(project.parent / ".kbwatch" / "journal.sqlite3")
    rows = {r[0]: r[1:] for r in db.execute("select run_id, outcome, source, sha256 from runs")}
    assert set(rows) == {r["run_id"] for r in records}
    for record in records:
        outcome, source, sha = rows[record["run_id"]]
        assert outcome == "done" and source == record["inputs"][0]["path"] and sha == record["inputs"][0]["sha256"]
    stages = db.execute("select stage, status, duration_ms from stages").fetchall()
    assert {s for s, *_ in stages} >= {"conflict", "parse", "archive", "manifest", "project_md", "knowledge"}
    assert all(status == "ok" and ms >= 0 for _, status, ms in stages)


def test_knowledge_md_ready_with_valid_name(ingested):
    from kbwatch.pipeline.formats.knowledge_md import NAME_RE, read_frontmatter

    project, *_ = ingested
    front = read_frontmatter((project / "KNOWLEDGE.md").read_text(encoding="utf-8"))
    assert front["status"] == "ready"
    assert NAME_RE.match(front["name"]) and front["name"] == "demo"
    assert 1 <= len(front["description"]) <= 1024
    assert front["type"]
