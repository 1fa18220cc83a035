"""Issue #12, Found 10: the smaller things users hit, each checked with the real CLI or a real ``watch``.

- ``status --json`` says ``state`` (running / stopped / dead) and keeps the dead service's pid;
- a conflict's reason is in ``error`` (``runs``, ``status``), a duplicate's is not;
- a conflict is looked at again as soon as the file it waits for leaves sources/ (deleted or
  renamed away), long before the 300 s rescan;
- a document without text (a blank many-page PDF, with or without OCR; an empty deck or
  workbook) fails as "no text";
- the ``runs`` table never cuts a run id, however narrow the terminal;
- no child process prints ``EOFError: Ran out of input`` when a pool closes while starting workers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, kbwatch
from test_watch import make_root, manifest_files, service, wait_for  # noqa: F401  (service: fixture)


def runs_json(root: Path, *args: str) -> list[dict]:
    return json.loads(kbwatch("runs", "--json", *args, root=root, check=True).stdout)


def latest_outcomes(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for r in reversed(runs_json(root, "--limit", "500")):  # oldest first: the newest wins
        out[r["source"]] = r["outcome"]
    return out


# -- status --json --------------------------------------------------------------


def test_status_json_says_dead_with_the_last_pid_after_sigkill_and_stopped_after_sigterm(tmp_path, service):
    root = make_root(tmp_path)
    svc = service(root).start()
    status = json.loads(kbwatch("status", "--json", root=root, check=True).stdout)
    assert (status["running"], status["state"], status["pid"]) == (True, "running", svc.proc.pid)
    pid = svc.proc.pid
    svc.kill()
    status = json.loads(kbwatch("status", "--json", root=root, check=True).stdout)
    assert (status["running"], status["state"], status["pid"]) == (False, "dead", pid)
    assert status["queue"] == 0 and status["in_flight"] == 0
    text = kbwatch("status", root=root, check=True).stdout
    assert "DEAD" in text and str(pid) in text
    svc2 = service(root).start()
    code, _ = svc2.terminate()
    assert code == 0
    status = json.loads(kbwatch("status", "--json", root=root, check=True).stdout)
    assert (status["running"], status["state"], status["pid"]) == (False, "stopped", None)


# -- conflict reasons -------------------------------------------------------------


def test_a_conflict_says_why_in_error_and_a_duplicate_has_none(tmp_path):
    root = make_root(tmp_path)
    src = root / "p" / "sources"
    (src / "plan.md").write_text("# plan in markdown\n", encoding="utf-8")
    (src / "plan.txt").write_text("plan in text\n", encoding="utf-8")
    (src / "same.md").write_text("# same\n", encoding="utf-8")
    kbwatch("ingest", root=root)
    (src / "same.md").write_text("# same\n", encoding="utf-8")  # identical again: a duplicate
    kbwatch("ingest", root=root)
    rows = {r["source"]: r for r in reversed(runs_json(root))}  # newest wins
    for me, other in (("plan.md", "plan.txt"), ("plan.txt", "plan.md")):
        row = rows[f"sources/{me}"]
        assert row["outcome"] == "conflict"
        assert row["error"] and other in row["error"] and "rename one of them" in row["error"], row
    assert rows["sources/same.md"]["outcome"] == "duplicate" and rows["sources/same.md"]["error"] is None
    status = kbwatch("status", root=root, check=True).stdout
    assert "p/sources/plan.md: conflict: " in status and "rename one" in " ".join(status.split())
    conflicts = runs_json(root, "--outcome", "conflict")
    assert all(r["error"] for r in conflicts) and len(conflicts) == 2


# -- a conflict ends when the other file leaves -------------------------------------


def test_conflict_is_reexamined_as_soon_as_the_other_file_is_deleted_or_renamed(tmp_path, service):
    # rescan_seconds stays at its default (300 s): only the deletion events can be this quick
    root = make_root(tmp_path)
    project = root / "p"
    src = project / "sources"
    svc = service(root).start()
    (src / "x.md").write_text("# x in markdown\n", encoding="utf-8")
    (src / "x.txt").write_text("x in text\n", encoding="utf-8")
    (src / "y.md").write_text("# y in markdown\n", encoding="utf-8")
    (src / "y.txt").write_text("y in text\n", encoding="utf-8")
    want = {f"sources/{n}": "conflict" for n in ("x.md", "x.txt", "y.md", "y.txt")}
    wait_for(lambda: all(latest_outcomes(root).get(k) == v for k, v in want.items()), 60,
             "all four files refused as conflicts", interval=0.5, proc=svc)
    (src / "x.txt").unlink()  # the user deletes one of the pair
    os.rename(src / "y.txt", src / "y-notes.txt")  # and renames one of the other pair
    wait_for(lambda: {"x", "y", "y-notes"} <= set(manifest_files(project)), 60,
             "x.md, y.md and y-notes.txt ingested once the conflicts ended (not at the 300 s rescan)",
             interval=0.5, proc=svc)
    # the sources leave only after the commit that wrote the manifest (durable first)
    wait_for(lambda: not (src / "x.md").exists() and not (src / "y.md").exists(), 30,
             "x.md and y.md removed from sources/ after their commit", interval=0.2, proc=svc)
    code, _ = svc.terminate()
    assert code == 0


# -- the runs table -------------------------------------------------------------------


def test_runs_table_keeps_whole_run_ids_in_a_narrow_terminal(tmp_path):
    root = make_root(tmp_path)
    src = root / "p" / "sources"
    (src / "a-long-file-name-for-the-table.md").write_text("# a\n", encoding="utf-8")
    (src / "b.qqq").write_text("?", encoding="utf-8")  # fails: a long error message to fold
    kbwatch("ingest", root=root)
    ids = [r["run_id"] for r in runs_json(root)]
    assert len(ids) == 2
    for columns in ("80", "60", "40"):
        out = kbwatch("runs", root=root, env={"COLUMNS": columns}, check=True).stdout
        for run_id in ids:
            assert any(run_id in line for line in out.splitlines()), (columns, run_id, out)
        assert "…" not in out, (columns, out)  # nothing cut ("sourc…", "outco…" at 80 columns before)
        flat = " ".join(line.strip() for line in out.splitlines())
        assert "p/sources/a-long-file-name-for-the-table.md" in flat.replace(" ", "").replace("\n", ""), out
        assert "unsupported file type .qqq" in flat, (columns, out)
    wide = kbwatch("runs", root=root, env={"COLUMNS": "200"}, check=True).stdout
    assert "┃ run" in wide and all(run_id in wide for run_id in ids)  # a wide terminal still gets the table
    # what was printed can be pasted into retry
    assert kbwatch("retry", ids[0], root=root).returncode == 0


# -- documents without text -------------------------------------------------------------


def _blank_pdf(path: Path, pages: int) -> None:
    from pypdf import PdfWriter

    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=595, height=842)
    with open(path, "wb") as fh:
        writer.write(fh)


def _white_scan_pdf(path: Path, pages: int) -> None:
    """A 'scanned' PDF: every page one white image, no text layer."""
    from PIL import Image

    images = [Image.new("RGB", (850, 1100), "white") for _ in range(pages)]
    images[0].save(path, "PDF", resolution=100.0, save_all=True, append_images=images[1:])


def _failed_runs(root: Path) -> dict[str, dict]:
    return {r["source"]: r for r in reversed(runs_json(root, "--limit", "500"))}


def test_documents_without_text_fail_as_no_text(tmp_path):
    from openpyxl import Workbook
    from pptx import Presentation

    root = make_root(tmp_path)
    src = root / "p" / "sources"
    _blank_pdf(src / "blank.pdf", 300)  # page markers only
    deck = Presentation()
    for _ in range(3):
        deck.slides.add_slide(deck.slide_layouts[6])  # the blank layout: slide markers only
    deck.save(src / "empty-deck.pptx")
    book = Workbook()
    book.active.title = "Budget"
    book.create_sheet("Plan")
    book.save(src / "empty-book.xlsx")  # sheet labels and "(empty sheet)" notes only
    (src / "real.md").write_text("# real text\n", encoding="utf-8")
    proc = kbwatch("ingest", root=root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    runs = _failed_runs(root)
    for name in ("blank.pdf", "empty-deck.pptx", "empty-book.xlsx"):
        row = runs[f"sources/{name}"]
        assert row["outcome"] == "failed" and "no text" in row["error"], row
        assert (src / name).exists()  # a failed file stays where the user put it
    assert runs["sources/real.md"]["outcome"] == "done"
    assert sorted(p.name for p in (root / "p" / "parsed").glob("*.md") if p.name != "data_structure.md") == ["real.md"]
    assert set(manifest_files(root / "p")) == {"real"}


def test_scanned_pdf_without_text_fails_as_no_text_with_and_without_ocr(tmp_path):
    root = make_root(tmp_path)
    src = root / "p" / "sources"
    _white_scan_pdf(src / "white.pdf", 3)
    empty_path = tmp_path / "no-programs"
    empty_path.mkdir()
    kbwatch("ingest", root=root, env={"PATH": str(empty_path)})  # no tesseract on PATH
    row = _failed_runs(root)["sources/white.pdf"]
    assert row["outcome"] == "failed" and "no text" in row["error"] and "tesseract is not installed" in row["error"], row
    if shutil.which("tesseract") is None:
        pytest.skip("tesseract is not installed: the OCR half cannot run here")
    os.utime(src / "white.pdf")  # a change: tried again, now with OCR
    kbwatch("ingest", root=root)
    row = _failed_runs(root)["sources/white.pdf"]
    assert row["outcome"] == "failed" and "OCR found no text" in row["error"], row
    assert (src / "white.pdf").exists()


# -- no half-started worker left behind ----------------------------------------------------

# A process that closes its pool while a worker is being started, then exits. The start is
# slowed between spawning the child and sending it its task, as a thread that loses the CPU on a
# busy machine is (the delay is injected; the processes are real). A pool whose close() did not
# wait for that start let the process exit first, and the orphaned child printed
# "EOFError: Ran out of input" after the parent was gone (after pytest's summary, in the suite).
_CLOSE_WHILE_STARTING = """
import sys, time
import multiprocessing.util as mpu
from kbwatch.pipeline.workers import WorkerPool

if __name__ == "__main__":
    real = mpu.spawnv_passfds

    def slow_spawn(path, args, passfds):
        pid = real(path, args, passfds)
        if "--multiprocessing-fork" in args:
            print("worker spawned", flush=True)
            time.sleep(1.0)
        return pid

    mpu.spawnv_passfds = slow_spawn
    pool = WorkerPool(1)
    pool.prestart()
    time.sleep(0.3)
    pool.close()
    print("closed", flush=True)
"""


def test_closing_a_pool_while_a_worker_starts_leaves_no_child_to_complain(tmp_path):
    proc = subprocess.run([sys.executable, "-c", _CLOSE_WHILE_STARTING], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    # capture_output waits for every holder of the pipes: the orphan too, had there been one
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["worker", "spawned", "closed"]
    assert "EOFError" not in proc.stderr and "Ran out of input" not in proc.stderr, proc.stderr[-3000:]


# -- who holds the root ----------------------------------------------------------


def test_a_busy_root_names_the_ingest_that_holds_it(tmp_path):
    """A ``watch`` or second ``ingest`` started while ``kbwatch ingest`` works says it is that
    ingest (to wait for), not a watch (to stop); exit 2 either way."""
    root = make_root(tmp_path)
    (root / "p" / "sources" / "a.md").write_text("# A\n\nheld at its listing\n", encoding="utf-8")
    flag = tmp_path / "paused"
    env = {**os.environ, "KBWATCH_TEST_PAUSE": "run:listed", "KBWATCH_TEST_PAUSE_FILE": str(flag)}
    holder = subprocess.Popen([sys.executable, str(REPO / "run.py"), "ingest", "--root", str(root)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(flag.exists, 60, "the ingest's pause at run:listed")
        for command in ("watch", "ingest"):
            busy = kbwatch(command, root=root, timeout=60)
            assert busy.returncode == 2, (command, busy.stdout, busy.stderr)
            assert f"kbwatch ingest is running on this root (pid {holder.pid})" in busy.stderr, busy.stderr
            assert "wait for it" in busy.stderr
    finally:
        os.killpg(holder.pid, 9)
        holder.wait(10)
    # and a watch holding it is still named as one
    svc = subprocess.Popen([sys.executable, str(REPO / "run.py"), "watch", "--root", str(root)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: json.loads(kbwatch("status", "--json", root=root).stdout)["state"] == "running", 60,
                 "the service's start")
        busy = kbwatch("ingest", root=root, timeout=60)
        assert busy.returncode == 2 and "kbwatch watch is running on this root" in busy.stderr, busy.stderr
    finally:
        os.killpg(svc.pid, 15)
        svc.wait(30)
