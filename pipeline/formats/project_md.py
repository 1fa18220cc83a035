"""project.md (DESIGN §4): summary, key points, file index, update log.

The file is parsed into its sections once per session and rendered back on
commit; user-written text in 概述 and 关键信息 (and any extra section) is kept
verbatim. The file index is one row per document keyed by the 文件名 cell,
held in memory as the row's rendered line (UTF-8 bytes), not as a list of
cells: a service keeps every project's project.md as long as it runs
(issue 12, the soak); ``rows`` decodes cells when asked.
:func:`one_line_summary` gives a row's 摘要 (the ``project_md`` stage and the
built-in summariser both use it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kbwatch.pipeline import confine
from kbwatch.pipeline.errors import BAD_PROJECT_MD, PermanentError
from kbwatch.pipeline.formats.parsed import strip_header

HEADINGS = {
    "zh": {
        "overview": "概述",
        "key_points": "关键信息",
        "index": "文件索引",
        "log": "更新记录",
        "columns": ("文件名", "解析文件", "最新归档", "摘要"),
        "overview_placeholder": "（高度总结的项目信息）",
        "key_points_placeholder": "（从所有文档中提炼的核心要点）",
    },
    "en": {
        "overview": "Overview",
        "key_points": "Key information",
        "index": "File index",
        "log": "Update log",
        "columns": ("File", "Parsed", "Latest archive", "Summary"),
        "overview_placeholder": "(A high-level summary of the project.)",
        "key_points_placeholder": "(The key points drawn from all documents.)",
    },
}

LOG_VERBS = {
    "zh": {
        "new": "解析 {file}",
        "version": "更新 {file}（新版本）",
        "duplicate": "重复 {file}：与最新归档相同，未新增版本",
        "conflict": "冲突 {file}：{message}",
        "failed": "失败 {file}：{message}",
        "removed": "移除 {file}（归档保留）",
        "rebuild": "重建 project.md（{count} 个文档）",
    },
    "en": {
        "new": "parsed {file}",
        "version": "new version of {file}",
        "duplicate": "duplicate {file}: identical to the latest archive, no version added",
        "conflict": "conflict {file}: {message}",
        "failed": "failed {file}: {message}",
        "removed": "removed {file} (archive kept)",
        "rebuild": "rebuilt project.md ({count} documents)",
    },
}

_ALL_INDEX_HEADINGS = {h["index"] for h in HEADINGS.values()}
_ALL_LOG_HEADINGS = {h["log"] for h in HEADINGS.values()}


def escape_cell(text: str) -> str:
    """A table cell: no newline, ``|`` escaped, trimmed."""
    text = re.sub(r"\s+", " ", text.replace("\r", " ").replace("\n", " ")).strip()
    return text.replace("\\", "\\\\").replace("|", "\\|")


def _split_row(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    if "\\" not in body:  # the common case: nothing escaped
        return [c.strip() for c in body.split("|")]
    cells, cur, i = [], [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            cur.append(body[i + 1])
            i += 2
            continue
        if ch == "|":
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    cells.append("".join(cur).strip())
    return cells


def _row_line(cells: list[str]) -> bytes:
    """A file-index row as project.md holds it."""
    return ("| " + " | ".join(escape_cell(c) for c in cells) + " |").encode("utf-8", "surrogatepass")


class _Rows(Mapping):
    """The file index as name -> its 4 cells (decoded from the rendered lines on access)."""

    def __init__(self, lines: dict[str, bytes]):
        self._lines = lines

    def __getitem__(self, name: str) -> list[str]:
        return _split_row(self._lines[name].decode("utf-8", "surrogatepass"))

    def __iter__(self) -> Iterator[str]:
        return iter(self._lines)

    def __len__(self) -> int:
        return len(self._lines)

    def __contains__(self, name: object) -> bool:
        return name in self._lines


@dataclass
class Section:
    heading: str
    lines: list[str] = field(default_factory=list)


class ProjectMd:
    """In-memory project.md."""

    def __init__(self, title: str, language: str):
        self.language = language
        self.h = HEADINGS[language]
        self.title = title
        self.preamble: list[str] = []
        self.sections: list[Section] = []
        self._lines: dict[str, bytes] = {}  # name -> its file-index row, rendered
        self.log: list[str] = []

    @property
    def rows(self) -> Mapping[str, list[str]]:
        """The file index: name -> 4 cells (unescaped), in file order (read-only view)."""
        return _Rows(self._lines)

    @rows.setter
    def rows(self, rows: dict[str, list[str]]) -> None:
        self._lines = {name: _row_line(list(cells)) for name, cells in rows.items()}

    # -- construction ------------------------------------------------------
    @classmethod
    def new(cls, title: str, language: str) -> "ProjectMd":
        pm = cls(title, language)
        h = pm.h
        pm.sections = [
            Section(h["overview"], ["", h["overview_placeholder"], ""]),
            Section(h["key_points"], ["", h["key_points_placeholder"], ""]),
            Section(h["index"]),
            Section(h["log"]),
        ]
        return pm

    @classmethod
    def parse(cls, text: str, title: str, language: str) -> "ProjectMd":
        pm = cls(title, language)
        current: Section | None = None
        for line in text.splitlines():
            if line.startswith("# ") and current is None and not pm.preamble:
                pm.title = line[2:].strip() or title
                continue
            if line.startswith("## "):
                current = Section(line[3:].strip())
                pm.sections.append(current)
                continue
            if current is None:
                pm.preamble.append(line)
                continue
            if current.heading in _ALL_INDEX_HEADINGS:
                stripped = line.strip()
                if stripped.startswith("|"):
                    cells = _split_row(stripped)
                    if set("".join(cells)) <= set("-: ") or cells[:1] in ([c] for c in ("文件名", "File")):
                        continue
                    while len(cells) < 4:
                        cells.append("")
                    pm._lines[cells[0]] = _row_line(cells[:4])
                    continue
                if stripped:
                    current.lines.append(line)
                continue
            if current.heading in _ALL_LOG_HEADINGS:
                if line.strip():
                    pm.log.append(line.strip())
                continue
            current.lines.append(line)
        names = {s.heading for s in pm.sections}
        for lang, h in HEADINGS.items():  # the file's own headings decide its language
            if h["index"] in names:
                pm.language, pm.h = lang, h
                break
        h = pm.h
        for key in ("overview", "key_points", "index", "log"):
            if h[key] not in names and not (key == "index" and names & _ALL_INDEX_HEADINGS) and not (
                key == "log" and names & _ALL_LOG_HEADINGS
            ):
                pm.sections.append(Section(h[key], ["", h.get(f"{key}_placeholder", ""), ""] if key in ("overview", "key_points") else []))
        return pm

    @classmethod
    def load(cls, path: Path, title: str, language: str) -> "ProjectMd":
        if not path.exists():
            return cls.new(title, language)
        return cls.parse(_read_own(path), title, language)

    # -- updates -----------------------------------------------------------
    def upsert_row(self, name: str, parsed: str, archived: str, summary: str) -> None:
        self._lines[name] = _row_line([name, parsed, archived, summary])

    def remove_row(self, name: str) -> None:
        self._lines.pop(name, None)

    def add_log(self, when: str, event: str, **fields) -> None:
        text = LOG_VERBS[self.language][event].format(**fields)
        self.log.append(f"- {when}: {escape_cell(text).replace(chr(92) + '|', '|')}")

    def ingests_since_rebuild(self) -> int:
        """Ingest events (new documents and versions) logged after the last rebuild line."""
        prefixes = {v[key].split("{")[0] for v in LOG_VERBS.values() for key in ("new", "version")}
        rebuild = {v["rebuild"].split("{")[0].strip() for v in LOG_VERBS.values()}
        count = 0
        for line in reversed(self.log):
            text = line.split(": ", 1)[1] if ": " in line else line
            if any(text.startswith(r) for r in rebuild):
                break
            if any(text.startswith(p) for p in prefixes):
                count += 1
        return count

    def set_section(self, key: str, lines: list[str]) -> None:
        heading = self.h[key]
        for s in self.sections:
            if s.heading == heading:
                s.lines = ["", *lines, ""]
                return
        self.sections.insert(0 if key == "overview" else 1, Section(heading, ["", *lines, ""]))

    def section_text(self, key: str) -> str:
        heading = self.h[key]
        for s in self.sections:
            if s.heading == heading:
                return "\n".join(s.lines).strip()
        return ""

    # -- rendering ---------------------------------------------------------
    def render(self) -> str:
        out = [f"# {self.title}"]
        out.extend(self.preamble if self.preamble else [""])
        if out[-1] != "":
            out.append("")
        cols = self.h["columns"]
        for s in self.sections:
            out.append(f"## {s.heading}")
            if s.heading in _ALL_INDEX_HEADINGS:
                out.append("")
                out.extend(l for l in s.lines if l.strip())
                out.append("| " + " | ".join(cols) + " |")
                out.append("|" + "|".join("-" * max(6, len(c) * 2 + 2) for c in cols) + "|")
                if self._lines:
                    out.append(b"\n".join(self._lines.values()).decode("utf-8", "surrogatepass"))
                out.append("")
            elif s.heading in _ALL_LOG_HEADINGS:
                out.extend(self.log)
                out.append("")
            else:
                lines = list(s.lines)
                if not lines or lines[0] != "":
                    lines.insert(0, "")
                while len(lines) > 1 and lines[-1] == "" and lines[-2] == "":
                    lines.pop()
                if lines[-1] != "":
                    lines.append("")
                out.extend(lines)
        return "\n".join(out).rstrip("\n") + "\n"


def session_project_md(session) -> ProjectMd:
    """The project's project.md, parsed once per session and shared by stages."""
    language = session.settings["project"]["language"]
    return session.cached_file(
        "project.md", lambda: ProjectMd.load(session.path / "project.md", session.name, language)
    )


def defer_project_md_write(session) -> None:
    pm = session_project_md(session)
    session.defer_write("project.md", pm.render)


SUMMARY_CHARS = 80  # a file-index row's summary
_SKIP = re.compile(r"^\s*(#|<!--|\||```|[-*_]{3,}\s*$|!\[)")


def one_line_summary(markdown: str, limit: int = SUMMARY_CHARS) -> str:
    """The first sentence-like line of the body (looked for in its first 64K characters),
    cut to ``limit`` characters."""
    markdown = markdown[:65536]  # a large body is not split into all its lines
    for line in strip_header(markdown).splitlines():
        if not line.strip() or _SKIP.match(line):
            continue
        text = re.sub(r"[*_`>\[\]]", "", line).strip(" -\t")
        text = re.sub(r"\s+", " ", text)
        if len(text) < 2:
            continue
        return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
    for line in strip_header(markdown).splitlines():  # a table-only document: its first data row
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.lstrip().startswith("|") else []
        cells = [c for c in cells if c and not set(c) <= set("-: ")]
        if cells:
            text = ", ".join(cells)
            return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
    return ""


def _read_own(path: Path) -> str:
    """project.md's text, never through a link planted in its place (:func:`kbwatch.pipeline.confine.read_text`)."""
    try:
        return confine.read_text(path, errors="replace")
    except (confine.Escape, confine.NotRegularFile) as exc:
        raise PermanentError(f"{path}: {exc.strerror}; move it aside and kbwatch writes a new one",
                             reason=BAD_PROJECT_MD) from None
