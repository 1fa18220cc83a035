"""The built-in ``kb_summarize``: deterministic extractive summaries for ``rebuild``.

It runs last (``trylast``), so a plugin that calls a language model wins.
Same documents in, byte-identical text out: no clocks, no randomness, only
the documents' own titles, headings and first sentences, in file-index order.
"""

from __future__ import annotations

import re
from collections import Counter

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.formats.parsed import strip_header
from kbwatch.pipeline.formats.project_md import one_line_summary

MAX_OVERVIEW_DOCS = 3
MAX_KEY_POINTS = 12


def _headings(text: str, limit: int = 2) -> list[str]:
    out = []
    for line in strip_header(text).splitlines():
        m = re.match(r"^#{2,3}\s+(.+?)\s*#*$", line)
        if m and m.group(1).strip() and not m.group(1).startswith("Sheet:"):
            out.append(m.group(1).strip())
            if len(out) >= limit:
                break
    return out


def _title(text: str, fallback: str) -> str:
    for line in strip_header(text).splitlines():
        if line.startswith("# "):
            return line[2:].strip() or fallback
    return fallback


@hookimpl(trylast=True)
def kb_summarize(project, documents, settings):
    language = settings.get("project", {}).get("language", "zh")
    summaries = {d["name"]: one_line_summary(d["text"]) for d in documents}
    kinds = Counter(d.get("ext", "").lstrip(".").lower() or "?" for d in documents)
    kind_text = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    # the overview and key points are shown to models: nothing of a held document (findings wait
    # for review) is quoted in them; it counts, and the overview says it was left out
    shown = [d for d in documents if not d.get("held")]
    held = len(documents) - len(shown)
    highlights = []
    for d in shown[:MAX_OVERVIEW_DOCS]:
        s = summaries[d["name"]]
        title = _title(d["text"], d["name"])
        highlights.append(f"《{title}》：{s}" if language == "zh" else f"“{title}”: {s}")
    if language == "zh":
        overview = f"本项目包含 {len(documents)} 个文档（{kind_text}）。" if documents else "本项目尚无文档。"
        if highlights:
            overview += "主要内容：" + "；".join(highlights) + "。"
        if held:
            overview += f"另有 {held} 个文档的风险发现待审核，未纳入本概述。"
    else:
        overview = f"This project holds {len(documents)} document(s) ({kind_text})." if documents else "No documents yet."
        if highlights:
            overview += " Highlights: " + "; ".join(highlights) + "."
        if held:
            overview += f" {held} document(s) with findings awaiting review are left out of this overview."
    points = []
    for d in shown:
        for h in _headings(d["text"]):
            points.append(f"{h}（{d['parsed']}）" if language == "zh" else f"{h} ({d['parsed']})")
        if len(points) >= MAX_KEY_POINTS:
            break
    if not points:
        points = [f"{d['name']}：{summaries[d['name']]}" for d in shown[:MAX_KEY_POINTS] if summaries[d["name"]]]
    return {"overview": overview, "key_points": points[:MAX_KEY_POINTS], "summaries": summaries}
