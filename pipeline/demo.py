"""``kbwatch demo DIR``: a knowledge base with sample documents, ingested once.

The samples are the small real documents kept under tests/fixtures/ingest
(from the Unstructured project's example-docs; see its README) plus a note
written here, so a first run shows every stage on real files.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from kbwatch.pipeline.kb import KnowledgeBase

SAMPLES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "ingest"

WELCOME = """# 欢迎使用 kbwatch

把文档放进项目的 `sources/` 文件夹，kbwatch 会把它解析成 Markdown，
扫描风险，按时间戳归档原件，并更新 manifest.json 与 project.md。

Drop documents into a project's `sources/` folder; kbwatch parses them to
Markdown, scans them for risks, archives the originals with a timestamp and
keeps manifest.json and project.md current.
"""


def make_demo(target: Path) -> tuple[KnowledgeBase, Path]:
    target.mkdir(parents=True, exist_ok=True)
    kb = KnowledgeBase(target.resolve())
    project, _ = kb.init_project("demo")
    sources = project / "sources"
    if SAMPLES.is_dir():
        for sample in sorted(SAMPLES.iterdir()):
            if sample.suffix.lower() in {".docx", ".pptx", ".xlsx", ".pdf", ".html", ".csv", ".txt"}:
                shutil.copy(sample, sources / sample.name)
    (sources / "welcome.md").write_text(WELCOME, encoding="utf-8")
    return kb, project
