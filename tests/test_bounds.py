"""Parse bounds enforced by the core: timeout (worker killed and replaced), memory cap, size."""

from __future__ import annotations

import os
import signal
import time

from conftest import ingest, process_running, read_manifest

SLOW_PLUGIN = '''
import time
from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.model import ParsedDocument, ParserInfo

@hookimpl
def kb_parser_info():
    return [ParserInfo(name="slow", extensions=(".slow",)), ParserInfo(name="hog", extensions=(".hog",)),
            ParserInfo(name="crash", extensions=(".crash",)), ParserInfo(name="helper", extensions=(".helper",))]

@hookimpl
def kb_parse(path, ext, settings):
    if ext == ".slow":
        if b"forever" in path.read_bytes():
            time.sleep(600)
        return ParsedDocument(markdown="quick enough", parser="slow")
    if ext == ".hog":
        blob = bytearray(3 * 1024 * 1024 * 1024)  # 3 GB: over the cap
        return ParsedDocument(markdown=str(len(blob)), parser="hog")
    if ext == ".crash":
        import os, signal
        os.kill(os.getpid(), signal.SIGSEGV)
    if ext == ".helper":  # a parser whose helper program hangs (pandoc, tesseract, soffice …)
        import pathlib, subprocess
        helper = subprocess.Popen(["sleep", "600"])
        pathlib.Path(path.read_text().strip()).write_text(str(helper.pid))
        helper.wait()
    return None
'''


def _setup(project, extra=""):
    (project.parent / "bounds_plugin.py").write_text(SLOW_PLUGIN, encoding="utf-8")
    (project.parent / "kbwatch.toml").write_text(
        '[pipeline]\nplugins = ["bounds_plugin.py"]\n'
        f'[stages.parse]\ntimeout_seconds = 3.0\nmemory_mb = 1024\n{extra}', encoding="utf-8")


def test_timeout_kills_the_worker_and_the_next_file_still_parses(project):
    _setup(project)
    (project / "sources" / "stuck.slow").write_text("forever")
    (project / "sources" / "fine.slow").write_text("ok")
    totals, runs = ingest(project.parent)
    assert totals == {"failed": 1, "done": 1}
    failed = next(r for r in runs if r["outcome"] == "failed")
    assert failed["source"] == "sources/stuck.slow"
    assert "longer than 3 s" in failed["error"] and "killed" in failed["error"]
    assert (project / "sources" / "stuck.slow").exists()
    assert (project / "parsed" / "fine.md").read_text().endswith("quick enough\n")


def test_a_timeout_kills_the_helper_programs_the_parser_started(project, tmp_path):
    _setup(project)
    pid_file = tmp_path / "helper.pid"
    (project / "sources" / "hangs.helper").write_text(str(pid_file))
    totals, runs = ingest(project.parent)
    assert totals == {"failed": 1}
    assert "longer than 3 s" in runs[0]["error"]
    pid = int(pid_file.read_text())
    try:
        for _ in range(50):  # SIGKILL is delivered at once; the process may take a moment to go
            if not process_running(pid):
                break
            time.sleep(0.1)
        assert not process_running(pid), "the parser's helper program outlived the worker that was killed"
    finally:
        if process_running(pid):
            os.kill(pid, signal.SIGKILL)


def test_memory_cap_and_crash_fail_cleanly(project):
    _setup(project)
    (project / "sources" / "big.hog").write_text("x")
    (project / "sources" / "boom.crash").write_text("x")
    (project / "sources" / "after.slow").write_text("ok")
    totals, runs = ingest(project.parent)
    assert totals == {"failed": 2, "done": 1}
    errors = {r["source"]: r["error"] for r in runs}
    assert "out of memory" in errors["sources/big.hog"]
    assert "crashed" in errors["sources/boom.crash"]
    assert [f["name"] for f in read_manifest(project)["files"]] == ["after"]


def test_max_file_mb(project):
    _setup(project, extra="max_file_mb = 1\n")
    (project / "sources" / "huge.txt").write_bytes(b"a" * (1024 * 1024 + 10))
    totals, runs = ingest(project.parent)
    assert totals == {"failed": 1} and "over the 1 MB limit" in runs[0]["error"]
