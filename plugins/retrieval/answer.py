"""The answer of ``query_knowledge_base`` / ``kbwatch ask --json``, and reading a citation back.

``answer_from_packs`` turns the packs of one or more projects (``build_pack``)
into the one answer both the CLI and the MCP server return: the fenced text,
``status`` ``ok`` or ``no_match``, the selected files and snippets with their
text and scores, warnings, missing references, and the context-resolution
record (one activated pack per project that answered).

``read_citation`` resolves ``parsed/x.md``, ``parsed/x.md#L12-L40`` and
page/sheet/slide anchors (``#page=3``, ``(page 3)``) to the lines they name,
fenced like a query result.
"""

from __future__ import annotations

import math
import re
from pathlib import Path, PurePosixPath

from kbwatch.pipeline import confine

from .chunker import ANCHOR_HINTS, iter_chunks
from .pack import PREAMBLE_EN, PREAMBLE_ZH, escape_attr, neutralize_fence, new_run_id, run_status_for

NOT_FOUND = ("当前知识库未找到相关内容。请据此回答“未找到”，不要编造，也不要要求用户提供文章。\n"
             "Nothing relevant in this knowledge base. Say so; do not invent an answer.")
# nothing could be given, but documents that matched were held back for review: "not found" would be
# untrue, and a model told so says the knowledge base has no answer
HELD_BACK = ("可提供的文档中未找到相关内容；以下文件与问题相关，但有待审核的风险发现，暂不提供：\n"
             "Nothing relevant among the documents that can be given. These documents matched but are held back "
             "until their findings are reviewed:")
HELD_BACK_END = ("请告诉用户答案可能在这些待审核的文件中；不要编造，也不要猜测其内容。\n"
                 "Say that the answer may be in a document awaiting review; do not invent an answer or guess its content.")
MAX_READ_LINES = 400
MAX_READ_CHARS = 20000


def _no_match(pack) -> bool:
    """Whether a pack found nothing worth giving (the relevance gate's ``no_match``, or no snippet)."""
    if any(getattr(s, "hit_reason", "") == "explicit" for s in pack.snippets):
        return False  # an explicit [[...]] reference always answers, whatever the ranked search found
    relevance = getattr(pack, "relevance", None)  # plugins.retrieval.relevance.Relevance
    if relevance is not None and getattr(relevance, "status", None) == "no_match":
        return True
    return bool(pack.nothing_found) or not pack.snippets


# lines inside a document that imitate the pack's own structure: a snippet header
# ("### [2] parsed/x.md#L1-L9 — …"), a read_document header, or a section of the pack
_FAKE_HEAD_RE = re.compile(
    r"^(\s*)(#{1,6}\s*(?:\[\s*\d+\s*\]|parsed/\S*#L\d|(?:片段|警告|文件索引|结果|提示|项目概述|状态)\s*/))", re.M)


def inert(text: str) -> str:
    """Document text made unable to pass for the pack's structure: fence tags are
    neutralised, and lines imitating a snippet header or a pack section get a
    backslash before their ``#`` (Markdown shows them as plain text)."""
    return _FAKE_HEAD_RE.sub(lambda m: m.group(1) + "\\" + m.group(2), neutralize_fence(text))


def _inert_snippets(text: str, pack) -> str:
    """Rewrite each snippet body of a built pack's text through :func:`inert`."""
    for n, sn in enumerate(pack.snippets, 1):
        head = neutralize_fence(f"### [{n}] {sn.citation} — {sn.title} (hit: {sn.hit_reason})\n")
        body = neutralize_fence(sn.text)
        safe = inert(sn.text)
        if safe != body:
            text = text.replace(head + body, head + safe, 1)
    return text


def _held_back(packs, multi: bool) -> list[str]:
    """The documents each pack left out because findings wait for review although they were
    referenced or would have answered (:attr:`Pack.held_back`), each with why:
    ``parsed/x.md (1 finding(s) pending review)``."""
    return [f"{n}: {path} ({why})" if multi else f"{path} ({why})"
            for n, p in packs for path, why in getattr(p, "held_back", {}).items()]


def _insert_warnings(text: str, lines: list[str]) -> str:
    """Put extra warning lines right after the fence's preamble."""
    if not lines:
        return text
    marker = f"{PREAMBLE_ZH}\n{PREAMBLE_EN}\n"
    note = "\n## 提示 / Notes\n" + "\n".join(f"- {neutralize_fence(line)}" for line in lines) + "\n"
    return text.replace(marker, marker + note, 1) if marker in text else text


def answer_from_packs(packs: list[tuple[str, object]], query: str, budget: int,
                      extra_warnings: dict[str, list[dict]] | None = None) -> dict:
    """One answer from ``[(project name, Pack)]`` (see the module docstring)."""
    extra_warnings = extra_warnings or {}
    run_id = new_run_id()
    matched = [(n, p) for n, p in packs if not _no_match(p)]
    matched.sort(key=lambda np_: -max((s.score for s in np_[1].snippets), default=0.0))
    # with several projects, whole packs in order of their best snippet while the budget lasts
    chosen, used = [], 0
    for n, p in matched:
        if chosen and used + len(p.text) > budget * 1.2 + 600:
            continue
        chosen.append((n, p))
        used += len(p.text)
    multi = len(packs) > 1
    selected, snippets, anchors, warnings, missing, texts, record_packs = [], [], [], [], [], [], []
    for n, p in (chosen if chosen else packs[:1] if not multi else []):
        extra = extra_warnings.get(n, [])
        entry = dict(p.record["activated_packs"][0])
        entry["warnings"] = list(entry.get("warnings", [])) + [dict(w) for w in extra]
        record_packs.append(entry)
        for w in entry["warnings"]:
            warnings.append({"name": n, **w})
        best: dict[str, float] = {}
        for s in p.snippets:
            best[s.path] = max(best.get(s.path, 0.0), float(s.score))
        if chosen:
            selected += [{"name": n, "path": f, "score": round(best.get(f, 0.0), 4)} for f in p.selected_files]
            for s in p.snippets:
                snippets.append({
                    "name": n, "path": s.path, "anchor": f"L{s.start_line}-L{s.end_line}", "location": s.anchor,
                    "citation": s.citation, "title": s.title, "start_line": s.start_line, "end_line": s.end_line,
                    "text": neutralize_fence(s.text), "score": round(float(s.score), 4), "hit": s.hit_reason,
                })
            anchors += [s.citation for s in p.snippets]
        missing += [m for m in p.missing if m.startswith("parsed/")]
        texts.append(_insert_warnings(_inert_snippets(p.text, p), [w["message"] for w in extra]))
    if not chosen:
        # nothing relevant anywhere: no filler, the seed's line (and the reason)
        names = ", ".join(n for n, _ in packs)
        refs_missing = [m for n, p in packs for m in p.missing if m.startswith("parsed/")]
        if not record_packs:
            n, p = packs[0]
            entry = dict(p.record["activated_packs"][0])
            record_packs = [entry]
        for entry in record_packs:
            entry["selected_files"], entry["source_anchors"] = [], []
        held = _held_back(packs, multi)
        body = NOT_FOUND if not held else HELD_BACK + "\n" + "\n".join(f"- {h}" for h in held) + "\n" + HELD_BACK_END
        if refs_missing:
            body += "\n" + "\n".join(f"用户引用了 {m}，但该文件不存在 / {m} was referenced but does not exist"
                                      for m in refs_missing)
        # the same attributes as a pack with snippets (one value shared by every project asked, or "mixed")
        attrs = {"name": names, "status": record_packs[0].get("status", "ready")}
        for key in ("trust", "grounding"):
            values = {e.get(key) for e in record_packs} - {None}
            if values:
                attrs[key] = values.pop() if len(values) == 1 else "mixed"
        attrs.update({"mode": "data", "selected_files": ""})
        opening = "<knowledge_pack " + " ".join(f'{k}="{escape_attr(v)}"' for k, v in attrs.items()) + ">"
        notes = [w["message"] for ws in extra_warnings.values() for w in ws]
        text = _insert_warnings(f"{opening}\n{PREAMBLE_ZH}\n{PREAMBLE_EN}\n\n## 结果 / Result\n{neutralize_fence(body)}\n"
                                "</knowledge_pack>", notes)
        texts = [text]
        missing = sorted(set(missing) | set(refs_missing))
        reason = "nothing relevant in this knowledge base" if len(packs) == 1 else \
            "nothing relevant in any knowledge base"
        gate = [p.relevance.reason for _, p in packs
                if getattr(p, "relevance", None) is not None and p.relevance.status == "no_match" and p.relevance.reason]
        if held:  # the gate judged only what could be given: its reason would say nothing matched
            reason = (f"nothing relevant that can be given: {len(held)} matching document(s) held back until "
                      "their findings are reviewed")
        elif gate:
            reason += f" ({gate[0]})"
        status = "no_match"
    else:
        reason, status = None, "ok"
        for _, p in packs:  # a reference to a missing file is said even when others answered
            missing += [m for m in p.missing if m.startswith("parsed/") and m not in missing]
    text = "\n\n".join(texts)
    statuses = [run_status_for(e.get("status", "ready"), e.get("warnings", [])) for e in record_packs]
    order = ["failed", "disputed", "stale", "needs-review", "passed"]
    record = {
        "run_id": run_id,
        "query": query,
        "status": next((s for s in order if s in statuses), "passed"),
        "resolver": dict(packs[0][1].record["resolver"]),
        "activated_packs": record_packs,
        "missing": missing if status == "ok" else (missing or [query.strip()]),
        "token_estimate": int(math.ceil(len(text) / 4)),
    }
    out = {
        "run_id": run_id, "status": status, "reason": reason, "selected_files": selected,
        "source_anchors": anchors, "snippets": snippets, "warnings": warnings, "missing": missing,
        "token_estimate": record["token_estimate"], "text": text, "record": record,
    }
    if multi:
        out["names"] = [n for n, _ in chosen]  # the projects that answered, best first
    return out


# --------------------------------------------------------------------------- citations
# each optional part starts with the white space before it, so white space is never split between
# parts (three ``\s*`` in a row made a citation of a name and thousands of spaces take minutes)
_CITATION_RE = re.compile(
    r"^(?P<path>[^#()\n]+?\.md)(?:\s*#(?P<frag>[^\s()]+))?(?:\s*\((?P<loc>[^()\n]*)\))?\s*$")
MAX_CITATION_CHARS = 8192  # a parsed path (≤ 4,096 bytes) and its anchor fit with room to spare
_LINES_RE = re.compile(r"^L(\d+)(?:-L?(\d+))?$", re.IGNORECASE)
_FRAG_LOC_RE = re.compile(r"^(page|pages|sheet|slide)[=:\-_]?(.+)$", re.IGNORECASE)


class CitationError(ValueError):
    """A citation that names nothing readable (the message is one sentence)."""


def _shown(citation: str, limit: int = 200) -> str:
    """``citation`` quoted for a message, cut to ``limit`` characters (an argument may be megabytes)."""
    return repr(citation if len(citation) <= limit else citation[:limit] + "…")


def _location_matches(anchor: str, kind: str, value: str) -> bool:
    """Whether a chunk anchor ("page 3", "pages 3-4", "sheet Summary") covers kind/value."""
    if not anchor:
        return False
    a_kind, _, a_value = anchor.partition(" ")
    a_kind = a_kind.rstrip("s").lower()
    if a_kind != kind.rstrip("s").lower():
        return False
    if a_kind in ("page", "slide"):
        try:
            want = int(value.strip())
        except ValueError:
            return a_value.strip() == value.strip()
        m = re.match(r"^(\d+)(?:-(\d+))?$", a_value.strip())
        if not m:
            return False
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        return lo <= want <= hi
    return a_value.strip().casefold() == value.strip().casefold()


_MARKER_RE = re.compile(r"^\s*(?:<!--\s*(page|slide)\s*:\s*([^>]*?)\s*-->|#{1,6}\s*(Sheet)\s*:\s*(.+?)\s*)$",
                        re.IGNORECASE)


def _marker_spans(lines: list[str], kind: str, value: str) -> list[tuple[int, int]]:
    """(first, last) line numbers of the page/slide/sheet whose marker (``<!-- page: 3 -->``,
    ``<!-- slide: 4 -->``, ``## Sheet: Summary``) says ``value``: up to the next marker of that kind."""
    kind = kind.rstrip("s").lower()
    marks = []
    for i, line in enumerate(lines, 1):
        m = _MARKER_RE.match(line)
        if m:
            k = (m.group(1) or m.group(3)).lower()
            if k == kind:
                marks.append((i, (m.group(2) or m.group(4)).strip()))
    spans = []
    for j, (i, v) in enumerate(marks):
        if v.casefold() == value.strip().casefold():
            end = marks[j + 1][0] - 1 if j + 1 < len(marks) else len(lines)
            spans.append((i, max(i, end)))
    return spans


def read_citation(project: Path, citation: str) -> dict:
    """``{"path", "anchor", "start_line", "end_line", "lines", "truncated"}`` of a citation in ``project``;
    raises :class:`CitationError` for anything outside the project's parsed files."""
    if len(citation) > MAX_CITATION_CHARS:
        raise CitationError(f"citation of {len(citation):,} characters is too long (at most {MAX_CITATION_CHARS:,})")
    m = _CITATION_RE.match(citation.strip().replace("\\", "/"))
    if not m:
        raise CitationError(f"citation {_shown(citation)} is not parsed/<file>.md, parsed/<file>.md#L12-L40 "
                            "or parsed/<file>.md#page=3")
    rel = m.group("path").strip()
    if "\x00" in rel:  # no file name holds one (the OS would refuse the path with its own words)
        raise CitationError(f"{_shown(rel)} is not a document of {project.name} (a NUL character is in the name)")
    parts = PurePosixPath(rel).parts
    if rel.startswith("/") or ".." in parts or not parts or parts[0] != "parsed" or len(parts) < 2:
        raise CitationError(f"citation {_shown(citation)} is outside the parsed files of {project.name}")
    parsed = (project / "parsed").resolve()
    path = (project / rel)
    try:
        real = path.resolve()
    except OSError:
        real = path
    try:
        usable = parsed in real.parents and not path.is_symlink() and real.is_file()
        missing = not usable and parsed in real.parents and not path.exists()
    except OSError:  # a name too long for the file system, a folder that cannot be read …
        usable = missing = False
        if parsed in real.parents:
            raise CitationError(f"{_shown(rel)} is not a document of {project.name}") from None
    if not usable:
        if missing:
            raise CitationError(f"{_shown(rel)} is not a document of {project.name}")
        raise CitationError(f"citation {_shown(citation)} is outside the parsed files of {project.name}")
    try:  # the checks above by path; the read itself follows no link (a swap since then is refused)
        text = confine.read_text(path, errors="replace")
    except OSError:
        raise CitationError(f"citation {_shown(citation)} is outside the parsed files of {project.name}") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    n = len(lines)
    frag, loc = m.group("frag"), (m.group("loc") or "").strip()
    start, end, anchor = 1, n, ""
    lm = _LINES_RE.match(frag) if frag else None
    if frag and not lm:
        fm = _FRAG_LOC_RE.match(frag)
        if not fm:
            raise CitationError(f"citation {_shown(citation)}: unknown anchor #{frag} (use #L12-L40 or #page=3)")
        loc = f"{fm.group(1)} {fm.group(2)}"
    if lm:
        start = int(lm.group(1))
        end = int(lm.group(2) or lm.group(1))
        if start < 1 or end < start:
            raise CitationError(f"citation {_shown(citation)}: the line range is empty")
        if start > n:
            raise CitationError(f"citation {_shown(citation)}: {rel} has only {n} lines")
        end = min(end, n)
        anchor = loc
    elif loc:
        lm2 = re.match(r"^(\w+)\s+(.+)$", loc)
        if not lm2:
            raise CitationError(f"citation {_shown(citation)}: unknown location ({loc})")
        kind, value = lm2.group(1), lm2.group(2)
        spans = _marker_spans(lines, kind, value)
        hint = ANCHOR_HINTS.get(kind.rstrip("s").lower())
        if not spans and hint is not None and hint.search(text):
            # the chunker's anchors (page ranges, sheet headings the markers above miss); a chunk
            # anchor of a kind needs a marker of that kind, so a document without one (a 50 MB text
            # asked for #page=3) is not chunked at all, and the chunks are not kept
            spans = [(c.start_line, c.end_line) for c in iter_chunks(text) if _location_matches(c.anchor, kind, value)]
        if not spans:
            raise CitationError(f"{rel} has no {kind} {value}")
        start, end, anchor = min(s for s, _ in spans), max(e for _, e in spans), f"{kind} {value}"
    truncated = False
    if end - start + 1 > MAX_READ_LINES:
        end, truncated = start + MAX_READ_LINES - 1, True
    body = "\n".join(lines[start - 1:end])
    if len(body) > MAX_READ_CHARS:
        body = body[:MAX_READ_CHARS]
        end = start + body.count("\n")
        truncated = True
    return {"path": rel, "anchor": anchor, "start_line": start, "end_line": end, "lines": body,
            "truncated": truncated, "total_lines": n}


_LINE_BREAKS = str.maketrans({"\r": "\\r", "\n": "\\n", "\x0b": "\\v", "\x0c": "\\f", "\x1c": " ", "\x1d": " ",
                              "\x1e": " ", "\x85": " ", "\u2028": " ", "\u2029": " "})


def _one_line(text: str) -> str:
    """``text`` (a name, an anchor, a warning naming them) on one line, with no fence tag."""
    return neutralize_fence(text.translate(_LINE_BREAKS))


def fence_document(project: str, doc: dict, status: str, trust: str, grounding: str, warnings: list[str]) -> str:
    """The lines of a citation inside a ``<knowledge_pack>`` fence, as a query result shows them."""
    # the path and anchor are a document's name and text: written on one line, with no fence tag
    # ("sources/</knowledge_pack>.md" is a valid path: a folder "<" holding "knowledge_pack>.md")
    ref = f"{doc['path']}#L{doc['start_line']}-L{doc['end_line']}" + (f" ({doc['anchor']})" if doc["anchor"] else "")
    attrs = {"name": project, "status": status, "trust": trust, "grounding": grounding, "mode": "data",
             "selected_files": doc["path"]}
    opening = "<knowledge_pack " + " ".join(f'{k}="{escape_attr(v)}"' for k, v in attrs.items()) + ">"
    parts = [opening, PREAMBLE_ZH, PREAMBLE_EN, ""]
    if warnings:
        parts.append("## 警告 / Warnings\n" + "\n".join(f"- {_one_line(w)}" for w in warnings) + "\n")
    tail = ("\n" + _one_line(f"（截断；续读 / truncated; continue with {doc['path']}#L{doc['end_line'] + 1}-"
                             f"L{doc['end_line'] + MAX_READ_LINES}）") if doc["truncated"] else "")
    parts.append(f"### {_one_line(ref)}\n{inert(doc['lines'])}{tail}")
    parts.append("</knowledge_pack>")
    return "\n".join(parts)
