"""What one document costs a long-running service's memory (issue 12, the soak).

``kbwatch watch`` keeps every project's manifest and project.md in its project
session for as long as it runs, so a document's share of them must stay small:
each manifest entry is held as the bytes the file holds for it and each
file-index row as its rendered line (not a tree of dicts, lists and strings),
and the archive listing holds a tuple per stem. These tests measure what the
structures hold per document (``tracemalloc``, live objects) against bounds the
earlier dict form exceeded by 2–3x, and check that the files' bytes are what
DESIGN prescribes: ``json.dumps(data, ensure_ascii=False, indent=2)`` plus a
newline for manifest.json, unchanged project.md rows.
"""

from __future__ import annotations

import gc
import json
import random
import sys
import tracemalloc

import pytest

from kbwatch.pipeline.formats.manifest import Manifest
from kbwatch.pipeline.formats.project_md import ProjectMd

N = 2000


def _name(i: int) -> str:
    return (f"team-{i % 7}/周报-{i:05d}" if i % 3 == 0 else f"team-{i % 7}/quarterly-review-{i:05d}") if i % 4 else f"notes-{i:05d}"


def _held(build):
    """Bytes of the live objects ``build()`` returns (and keeps), as tracemalloc counts them."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = build()
        gc.collect()
        return kept, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def _fill_manifest():
    rng = random.Random(7)
    m = Manifest.new("p", "2026-12-03T10:00")
    for i in range(N):
        name = _name(i)
        m.add_version(name, ".md", f"parsed/{name}.md", f"archive/{name}_202612031{i % 10}{i % 60:02d}.md",
                      "%064x" % rng.getrandbits(256), "2026-12-03T11:00")
    m.dumps()  # what the session holds between commits: everything written once
    return m


def test_a_manifest_entry_costs_a_few_hundred_bytes_not_a_tree_of_dicts():
    manifest, held = _held(_fill_manifest)
    per_doc = held / N
    # dicts + versions list + version dict + 6 strings + the render cache was ~1.6 KB
    assert per_doc <= 700, f"{per_doc:.0f} bytes per manifest entry"
    # what the file holds is DESIGN's format, byte for byte, and survives a reload
    text = manifest.dumps()
    assert text == json.dumps(json.loads(text), ensure_ascii=False, indent=2) + "\n"
    again = Manifest(json.loads(text))
    assert again.dumps() == text
    assert again.get(_name(3))["versions"][0]["archived"].startswith(f"archive/{_name(3)}_")
    assert again.active_names() == [_name(i) for i in range(N)]


def test_a_manifest_entry_changed_after_a_write_is_written_again():
    m = Manifest.new("p", "2026-12-03T10:00")
    m.add_version("a", ".md", "parsed/a.md", "archive/a_1.md", "1" * 64, "2026-12-03T10:01")
    m.add_version("b", ".md", "parsed/b.md", "archive/b_1.md", "2" * 64, "2026-12-03T10:01")
    m.dumps()
    assert m.add_version("a", ".md", "parsed/a.md", "archive/a_1.md", "1" * 64, "2026-12-03T10:02") == "unchanged"
    assert m.add_version("a", ".md", "parsed/a.md", "archive/a_2.md", "3" * 64, "2026-12-03T10:03") == "version"
    assert m.mark_removed("b", "2026-12-03T10:04") and not m.mark_removed("b", "2026-12-03T10:05")
    data = json.loads(m.dumps())
    assert [v["archived"] for v in data["files"][0]["versions"]] == ["archive/a_1.md", "archive/a_2.md"]
    assert data["files"][1]["removed"] == "2026-12-03T10:04" and data["last_ingest"] == "2026-12-03T10:03"
    assert m.active_names() == ["a"] and [f["name"] for f in m.active_files()] == ["a"]
    assert m.get("b")["removed"] == "2026-12-03T10:04"


def _fill_project_md():
    rng = random.Random(8)
    pm = ProjectMd.new("p", "zh")
    words = ["季度", "迁移", "billing", "review", "发布时间", "schedule", "客户", "latency"]
    for i in range(N):
        name = _name(i)
        summary = " ".join(rng.choice(words) for _ in range(14))[:80]
        pm.upsert_row(name, f"parsed/{name}.md", f"archive/{name}_202612031100.md", summary)
    pm.render()
    return pm


def test_a_file_index_row_costs_its_rendered_line_not_a_list_of_cells():
    pm, held = _held(_fill_project_md)
    per_doc = held / N
    # 4 cell strings in a list + the (cells, line) render cache was ~1 KB
    assert per_doc <= 500, f"{per_doc:.0f} bytes per project.md row"
    text = pm.render()
    again = ProjectMd.parse(text, "p", "zh")
    assert again.render() == text
    assert list(again.rows) == [_name(i) for i in range(N)]
    cells = again.rows[_name(6)]
    assert cells[0] == _name(6) and cells[1] == f"parsed/{_name(6)}.md" and len(cells) == 4


def test_a_rendered_row_keeps_escaped_cells():
    pm = ProjectMd.new("p", "en")
    pm.upsert_row("a|b", "parsed/a|b.md", "archive/x\\y.md", "line one\nline  two |end")
    text = pm.render()
    assert "| a\\|b | parsed/a\\|b.md | archive/x\\\\y.md | line one line two \\|end |" in text
    assert ProjectMd.parse(text, "p", "en").rows["a|b"] == ["a|b", "parsed/a|b.md", "archive/x\\y.md",
                                                           "line one line two |end"]
    pm.remove_row("a|b")
    assert "a\\|b" not in pm.render() and len(pm.rows) == 0


def _deep_size(obj) -> int:
    seen, stack, total = set(), [obj], 0
    while stack:
        o = stack.pop()
        if id(o) in seen or callable(o) or isinstance(o, type(sys)):
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        elif hasattr(o, "__dict__"):
            stack.append(o.__dict__)
    return total


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    """A long-lived Runner (what ``watch`` drives) that ingested 100, then 400 small files."""
    from loguru import logger

    from kbwatch.pipeline.kb import KnowledgeBase
    from kbwatch.pipeline.runner import Runner

    logger.remove()
    root = tmp_path_factory.mktemp("perdoc") / "kb"
    root.mkdir()
    kb = KnowledgeBase(root)
    project, _ = kb.init_project("alpha")
    runner = Runner(root, kb.settings, kb.plugins, kb.journal)
    runner.start(2)
    sizes = []
    try:
        done = 0
        for upto in (100, 400):
            for i in range(done, upto):
                sub = f"team-{i % 5}/" if i % 2 else ""
                path = project / "sources" / f"{sub}note-{i:04d}.md"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(f"# Note {i}\n\nThe quarterly review covers item {i} and the billing migration.\n",
                                encoding="utf-8")
                runner.submit(project, path.relative_to(project / "sources").as_posix())
            assert runner.wait_idle(300)
            done = upto
            session = runner.session(project)
            with session.lock:
                sizes.append(_deep_size(session._cache))
        yield runner, project, sizes
    finally:
        runner.stop()
        kb.close()


def test_what_a_service_session_keeps_per_ingested_document_is_bounded(ingested):
    runner, project, sizes = ingested
    assert runner.totals.get("done") == 400, runner.totals
    per_doc = (sizes[1] - sizes[0]) / 300
    # manifest, project.md, archive listing and index sizes: ~2.9 KB a document as dicts, lists and sets
    assert per_doc <= 1800, f"{per_doc:.0f} bytes per document in the session's caches"
    data = json.loads((project / "manifest.json").read_text(encoding="utf-8"))
    assert len(data["files"]) == 400
    assert (project / "manifest.json").read_text(encoding="utf-8") == json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    rows = [line for line in (project / "project.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("| ") and "note-" in line]
    assert len(rows) == 400


def test_active_paths_follow_every_change_and_decode_a_written_entry_once(monkeypatch):
    """The navigation files are rewritten at every commit from ``active_paths``: it must say what
    ``active_files`` says after adds, new versions, removals and writes (dumps), while decoding
    an entry already written once only, not at every commit."""
    m = Manifest.new("p", "2026-01-01T00:00")

    def expected():
        return [(f["parsed"], f["ext"]) for f in m.active_files()]

    for i in range(30):
        m.add_version(f"d{i}.md", ".md", f"parsed/d{i}.md", f"archive/d{i}_202601010000.md", f"{i:064x}",
                      "2026-01-01T00:00")
    assert m.active_paths() == expected()
    m.dumps()  # every entry is bytes now
    assert m.active_paths() == expected()
    m.mark_removed("d3.md", "2026-01-01T00:01")
    m.add_version("d4.md", ".md", "parsed/d4.md", "archive/d4_202601010001.md", "f" * 64, "2026-01-01T00:01")
    assert m.active_paths() == expected() and ("parsed/d3.md", ".md") not in m.active_paths()
    m.dumps()
    assert m.active_paths() == expected()

    import kbwatch.pipeline.formats.manifest as manifest_mod

    decoded = []
    real = manifest_mod.json.loads
    monkeypatch.setattr(manifest_mod.json, "loads", lambda raw, *a, **k: decoded.append(raw) or real(raw, *a, **k))
    assert m.active_paths() == [(f"parsed/d{i}.md", ".md") for i in range(30) if i != 3]
    assert decoded == []  # nothing changed since the last call: nothing decoded
