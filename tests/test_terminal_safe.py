"""File names never drive the terminal: what the CLI and the logs print is escaped.

Anyone who can write to the shared folder names files. A name with an ESC
(``\\x1b[31m``, or an OSC sequence that retitles the window) or a U+202E
(right-to-left override: ``inv\\u202egpj.md`` shows as ``invdm.jpg``) was
printed raw by ``status``, ``runs``, ``ingest``, ``kbwatch scan`` and in the log
lines; a name written like rich markup (``[bold red]…``) was styled. Real CLI
subprocesses on a real root; every output is checked byte for byte.
"""

from __future__ import annotations

from pathlib import Path

from conftest import kbwatch

ESC_NAME = "a\x1b[31mred.md"
RLO_NAME = "inv\u202egpj.md"
MARKUP_NAME = "[bold red]loud.md"
RAW = ("\x1b", "\u202e", "\x07")


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    kbwatch("init", "p", root=root, check=True)
    for name in (ESC_NAME, RLO_NAME, MARKUP_NAME):
        (root / "p" / "sources" / name).write_text("# A note\n\nNothing to see here.\n", encoding="utf-8")
    return root


def _clean(text: str, what: str) -> None:
    for ch in RAW:
        assert ch not in text, f"{what} printed {ch!r} raw:\n{text!r}"


def test_cli_output_and_logs_show_hostile_names_escaped(tmp_path):
    root = _root(tmp_path)
    ingest = kbwatch("ingest", root=root)
    assert ingest.returncode == 1  # the ESC name is refused (a control character)
    _clean(ingest.stdout + ingest.stderr, "ingest")
    assert "a<U+001B>[31mred.md" in ingest.stderr

    status = kbwatch("status", root=root, check=True)
    _clean(status.stdout, "status")
    assert "inv<U+202E>gpj.md" in status.stdout and "a<U+001B>[31mred.md" in status.stdout

    runs = kbwatch("runs", root=root, env={"COLUMNS": "400"}, check=True)
    _clean(runs.stdout, "runs")
    assert "inv<U+202E>gpj.md" in runs.stdout
    assert "[bold red]loud.md" in runs.stdout  # shown as written, not as markup

    scan = kbwatch("scan", str(root / "p"), root=root)
    _clean(scan.stdout + scan.stderr, "kbwatch scan")

    review = kbwatch("review", "p", root=root)
    _clean(review.stdout + review.stderr, "review")
    assert "<U+202E>" in review.stdout  # the name's finding, with the name escaped

    log = (root / ".kbwatch" / "logs" / "kbwatch.log").read_text(encoding="utf-8")
    _clean(log, "the log file")
    assert "inv<U+202E>gpj.md" in log


FORGED = "2001-01-01 00:00:00.000 | ERROR   | 1 | forged record"


def test_a_name_with_a_line_break_cannot_forge_a_log_line(tmp_path):
    """A name may hold a line break; in the log every line after a message's first is
    indented, so the name cannot start a line that reads as a record of its own."""
    root = tmp_path / "kb"
    root.mkdir()
    kbwatch("init", "p", root=root, check=True)
    (root / "p" / "sources" / f"note\n{FORGED}.md").write_text("# A note\n", encoding="utf-8")
    ingest = kbwatch("ingest", root=root)
    assert ingest.returncode == 1, ingest.stderr  # refused: a control character in the name
    log = (root / ".kbwatch" / "logs" / "kbwatch.log").read_text(encoding="utf-8")
    assert "forged record" in log  # the name is logged ...
    for where, text in (("the log file", log), ("the terminal", ingest.stderr)):
        starts = [line for line in text.splitlines() if line.startswith("2001-01-01")]
        assert not starts, f"{where} has a forged line: {starts}"  # ... but never as a line of its own


def test_a_tab_in_a_name_is_shown_escaped_in_the_log_and_on_the_terminal(tmp_path):
    """A TAB is a control character a name may hold: it is refused like the others, and the
    log line and the terminal show it as <U+0009>, so nobody reading them as tab-separated
    fields gets a column the name made up."""
    root = tmp_path / "kb"
    root.mkdir()
    kbwatch("init", "p", root=root, check=True)
    (root / "p" / "sources" / "left\tright.md").write_text("# A note\n", encoding="utf-8")
    ingest = kbwatch("ingest", root=root)
    assert ingest.returncode == 1, ingest.stderr
    log = (root / ".kbwatch" / "logs" / "kbwatch.log").read_text(encoding="utf-8")
    for where, text in (("the log file", log), ("the terminal", ingest.stdout + ingest.stderr)):
        assert "left<U+0009>right.md" in text, f"{where}:\n{text}"
        assert "\t" not in text, f"{where} printed a TAB raw:\n{text!r}"
