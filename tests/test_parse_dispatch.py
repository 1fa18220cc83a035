"""Parsing goes through the ``kb_parse`` hook, with bounds checked once by the core.

pipeline/parsing.py: hook wrappers see every parse, ``KBWATCH_TRACE_PLUGINS``
shows each call, the declared priority decides (not the registration order),
the size bound holds for a parser that checks nothing, ``kbwatch scan`` shares
the parse path and ``[stages.parse] isolate``, and a parser that breaks gives
a failed run with its reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from conftest import REPO, ingest, kbwatch

DOCX = REPO / "tests" / "fixtures" / "corpus" / "page-breaks.docx"

WRAPPER = '''
import json, os
from pathlib import Path
from kbwatch.pipeline import hookimpl

@hookimpl(hookwrapper=True)
def kb_parse(path, ext, settings):
    outcome = yield
    try:
        doc = outcome.get_result()
        parser = doc.parser if doc is not None else None
    except BaseException as exc:
        parser = "raised " + type(exc).__name__
    with open(Path(settings["_root"]) / "parses.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"name": Path(path).name, "ext": ext, "parser": parser, "pid": os.getpid()}) + "\\n")
'''

HIGH = '''
from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.model import ParsedDocument, ParserInfo

@hookimpl
def kb_parser_info():
    return [ParserInfo(name="high", extensions=(".md",), priority=150, inprocess=True)]

@hookimpl
def kb_parse(path, ext, settings):
    if b"pass" in path.read_bytes():
        return None  # not mine: the next parser by priority tries
    return ParsedDocument(markdown="high took it", parser="high")
'''

LOW = '''
from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.model import ParsedDocument, ParserInfo

@hookimpl
def kb_parser_info():
    return [ParserInfo(name="low", extensions=(".md", ".txt"), priority=50, inprocess=True)]

@hookimpl
def kb_parse(path, ext, settings):
    return ParsedDocument(markdown="low took it", parser="low")
'''

NO_CHECKS = '''
from pathlib import Path
from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.model import ParsedDocument, ParserInfo

@hookimpl
def kb_parser_info():
    return [ParserInfo(name="nochecks", extensions=(".big",), inprocess=True),
            ParserInfo(name="boom", extensions=(".boom",), inprocess=True)]

@hookimpl
def kb_parse(path, ext, settings):
    with open(Path(settings["_root"]) / "nochecks-called.txt", "a") as fh:
        fh.write(path.name + "\\n")
    if ext == ".boom":
        raise ValueError("the parser broke on purpose")
    return ParsedDocument(markdown=f"{path.stat().st_size} bytes read")
'''


def _config(root, plugins: dict[str, str], extra: str = "") -> None:
    for name, text in plugins.items():
        (root / f"{name}.py").write_text(text, encoding="utf-8")
    listed = ", ".join(f'"{name}.py"' for name in plugins)
    (root / "kbwatch.toml").write_text(f"[pipeline]\nplugins = [{listed}]\n{extra}", encoding="utf-8")


def _parses(root) -> list[dict]:
    path = root / "parses.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def test_a_hook_wrapper_sees_every_parse_in_process_and_in_workers(project):
    root = project.parent
    _config(root, {"wrap": WRAPPER})
    src = project / "sources"
    (src / "a.md").write_text("# A\n\nSome text.\n", encoding="utf-8")
    (src / "b.csv").write_text("x,y\n1,2\n", encoding="utf-8")
    shutil.copyfile(DOCX, src / "c.docx")
    totals, _ = ingest(root)
    assert totals == {"done": 3}
    seen = {p["name"]: p for p in _parses(root)}
    assert {n: p["parser"] for n, p in seen.items()} == {"a.md": "text", "b.csv": "table", "c.docx": "unstructured"}
    assert seen["a.md"]["pid"] == os.getpid()  # inprocess parser: this process
    assert seen["b.csv"]["pid"] != os.getpid()  # a table is built in a worker (under its memory cap and timeout)
    assert seen["c.docx"]["pid"] != os.getpid()  # rich format: a worker, and the wrapper ran there too


def test_trace_shows_kb_parse_with_only_the_claiming_parsers(root, cli):
    cli("init", "p")
    (root / "p" / "sources" / "a.md").write_text("# A\n\nSome text.\n", encoding="utf-8")
    result = kbwatch("ingest", root=root, env={"KBWATCH_TRACE_PLUGINS": "1"})
    assert result.returncode == 0, result.stderr
    calls = [line for line in result.stderr.splitlines() if "hook kb_parse ->" in line]
    assert calls == ["[kbwatch] hook kb_parse -> ['parse_text']"], result.stderr


def test_declared_priority_decides_not_registration_order(project):
    root = project.parent
    # "low" is registered last: by pluggy's own order (last registered first) it would run first
    _config(root, {"high": HIGH, "low": LOW, "wrap": WRAPPER})
    src = project / "sources"
    (src / "taken.md").write_text("# Taken\n\nanything\n", encoding="utf-8")
    (src / "handed-on.md").write_text("# Handed on\n\nplease pass this on\n", encoding="utf-8")
    (src / "plain.txt").write_text("plain words\n", encoding="utf-8")
    totals, _ = ingest(root)
    assert totals == {"done": 3}
    parsed = project / "parsed"
    assert "high took it" in (parsed / "taken.md").read_text(encoding="utf-8")
    handed_on = (parsed / "handed-on.md").read_text(encoding="utf-8")
    assert "please pass this on" in handed_on and "took it" not in handed_on  # the built-in, not "low"
    assert "plain words" in (parsed / "plain.md").read_text(encoding="utf-8")
    assert {p["name"]: p["parser"] for p in _parses(root)} == {
        "taken.md": "high", "handed-on.md": "text", "plain.txt": "text"}


def test_size_bound_is_checked_by_the_core_for_a_parser_that_checks_nothing(project):
    root = project.parent
    _config(root, {"nochecks": NO_CHECKS}, "[stages.parse]\nmax_file_mb = 1\n")
    src = project / "sources"
    (src / "huge.big").write_bytes(b"x" * (1024 * 1024 + 1))
    (src / "small.big").write_bytes(b"x" * 1000)
    totals, runs = ingest(root)
    assert totals == {"done": 1, "failed": 1}
    failed = next(r for r in runs if r["outcome"] == "failed")
    assert failed["source"] == "sources/huge.big" and "over the 1 MB limit" in failed["error"]
    assert (project / "parsed" / "small.md").read_text(encoding="utf-8").endswith("1000 bytes read\n")
    assert (root / "nochecks-called.txt").read_text() == "small.big\n"  # never opened the big one
    # the scan command: same path, same bound
    result = kbwatch("scan", str(src / "huge.big"), root=root)
    assert result.returncode == 1 and "over the 1 MB limit" in result.stderr, result.stderr
    assert (root / "nochecks-called.txt").read_text() == "small.big\n"


def test_a_parser_that_raises_gives_a_failed_run_with_a_reason(project):
    root = project.parent
    for isolate in ("false", "true"):
        _config(root, {"nochecks": NO_CHECKS}, f"[stages.parse]\nisolate = {isolate}\n")
        (project / "sources" / f"{isolate}.boom").write_text("x")
        totals, runs = ingest(root)
        assert totals == {"failed": 1}, isolate
        assert runs[0]["error"] == "parser error: ValueError: the parser broke on purpose", isolate
    result = kbwatch("scan", str(project / "sources" / "false.boom"), root=root)
    assert result.returncode == 1
    assert "not scanned: parser error: ValueError: the parser broke on purpose" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def _scan(root, path) -> tuple[int, subprocess.CompletedProcess]:
    proc = subprocess.Popen([sys.executable, str(REPO / "run.py"), "scan", str(path), "--root", str(root)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=300)
    return proc.pid, subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_scan_honours_isolate(root, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    shutil.copyfile(DOCX, inbox / "d.docx")
    (inbox / "t.md").write_text("# T\n\nSome text.\n", encoding="utf-8")
    for isolate, docx_in_worker, md_in_worker in (("true", True, True), ("false", False, False),
                                                   ('"auto"', True, False)):
        (root / "parses.jsonl").unlink(missing_ok=True)
        _config(root, {"wrap": WRAPPER}, f"[stages.parse]\nisolate = {isolate}\n")
        pid, result = _scan(root, inbox)
        assert result.returncode == 0, result.stderr
        assert result.stdout.count(": clean") == 2, result.stdout
        seen = {p["name"]: p for p in _parses(root)}
        assert seen["d.docx"]["parser"] == "unstructured" and seen["t.md"]["parser"] == "text"
        assert (seen["d.docx"]["pid"] != pid) is docx_in_worker, isolate
        assert (seen["t.md"]["pid"] != pid) is md_in_worker, isolate


def test_a_pptx_named_ppt_is_handed_over_through_the_core(tmp_path):
    from pptx import Presentation

    from _parse_util import parse

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Handed over"
    deck.save(tmp_path / "deck.ppt")  # a .pptx under the old name
    doc = parse(tmp_path / "deck.ppt")
    assert doc.parser == "pptx" and "## Handed over" in doc.markdown
    assert "parse_pptx" not in (REPO / "plugins" / "parse_unstructured.py").read_text(encoding="utf-8")
