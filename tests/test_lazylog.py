"""loguru is imported at the first log call, not at every command's start (pipeline/lazylog.py).

Importing it imports asyncio: ~0.1 s of CPU, a fifth of the start-up of a command that logs
nothing. These run real processes: the module table of a fresh interpreter is what is checked."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from conftest import REPO


def _run(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def test_commands_that_log_nothing_never_import_loguru(tmp_path):
    root = tmp_path / "kb"
    root.mkdir()
    code = """
        import runpy, sys
        sys.argv = ["kbwatch", *sys.argv[1:]]
        code = None
        try:
            runpy.run_module("kbwatch", run_name="__main__")
        except SystemExit as exc:
            code = exc.code
        print("loguru" in sys.modules, "asyncio" in sys.modules, code, file=sys.stderr)
    """
    out = _run(code, "init", "demo", "--root", str(root))
    assert out.stderr.split()[-3:] == ["False", "False", "0"], out.stderr
    (root / "demo" / "sources" / "a.md").write_text("# A\n\nSome text.\n", encoding="utf-8")
    for args in (["status"], ["runs"], ["ask", "demo", "text"], ["--help"]):
        out = _run(code, *args, *(["--root", str(root)] if args != ["--help"] else []))
        assert out.stderr.split()[-3:] in (["False", "False", "0"], ["False", "False", "None"]), (args, out.stderr)


def test_the_first_log_call_gets_the_sinks_set_up_before_it_once(tmp_path):
    """Set up twice before anything logs, then log: one terminal line and one file line per
    message, in kbwatch's formats; set up again once loaded: still one of each."""
    code = """
        import sys
        from pathlib import Path
        from kbwatch.pipeline.logs import setup_logging, current_log_file
        from kbwatch.pipeline.lazylog import logger
        state = Path(sys.argv[1])
        setup_logging({}, state)
        setup_logging({}, state)
        before = ["loguru" in sys.modules, (state / "logs").exists()]
        logger.warning("first {}", "message")
        setup_logging({}, state)
        logger.warning("second message")
        print(before, current_log_file(), file=sys.stderr)
    """
    state = tmp_path / "state"
    out = _run(code, str(state))
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert lines[:2] == ["WARNING first message", "WARNING second message"], lines
    assert lines[2] == f"[False, False] {state / 'logs' / 'kbwatch.log'}", lines
    logged = (state / "logs" / "kbwatch.log").read_text(encoding="utf-8").splitlines()
    assert [line.split(" | ")[1:2] + line.split(" | ")[3:] for line in logged] == [
        ["WARNING", "first message"], ["WARNING", "second message"]], logged


def test_an_internal_error_names_the_log_file_its_traceback_went_to(tmp_path):
    """Nothing logged before the crash: the log file is still set up and named."""
    code = """
        import sys
        from pathlib import Path
        from kbwatch.pipeline.logs import setup_logging, log_internal_error
        state = Path(sys.argv[1])
        setup_logging({}, state)
        try:
            raise RuntimeError("boom")
        except RuntimeError as exc:
            print(log_internal_error(exc, "a test"))
    """
    state = tmp_path / "state"
    out = _run(code, str(state))
    assert out.returncode == 0, out.stderr
    path = state / "logs" / "kbwatch.log"
    assert out.stdout.strip() == str(path)
    text = path.read_text(encoding="utf-8")
    assert text.count("internal error in a test: RuntimeError: boom") == 1 and "Traceback" in text, text
    assert "boom" not in out.stderr, out.stderr  # the traceback went to the file only
