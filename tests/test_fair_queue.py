"""Projects take turns: a burst in one project does not hold back a file dropped into another.

A real ``kbwatch watch`` starts on a root whose first project holds 1,500 small files; once
it is working through them, one file is dropped into the second project. With one queue in
arrival order it waited for the whole burst; now the projects' jobs are taken in turn
(``run_queue.FairQueue``), so it is committed while most of the burst still waits.
"""

from __future__ import annotations

from pathlib import Path

from test_watch import make_root, manifest_files, service, wait_for  # noqa: F401  (service: fixture)

BURST = 1500


def test_a_file_in_a_quiet_project_is_not_queued_behind_another_projects_burst(tmp_path, service):
    root = make_root(tmp_path, projects=("busy", "quiet"))
    busy = root / "busy" / "sources"
    for i in range(BURST):
        (busy / f"n{i:05d}.md").write_text(f"# Note {i}\n\nsmall note number {i} zq{i}\n", encoding="utf-8")
    svc = service(root).start(wait_ready=False)
    wait_for(lambda: len(manifest_files(root / "busy")) >= 20, 180, "the burst's first commits", proc=svc)
    (root / "quiet" / "sources" / "urgent.md").write_text("# Urgent\n\nthe quiet project's note\n", encoding="utf-8")
    left = []

    def committed():
        if "urgent" in manifest_files(root / "quiet"):
            left.append(sum(1 for _ in busy.iterdir()))
            return True
        return False

    wait_for(committed, 180, "the quiet project's file", interval=0.05, proc=svc)
    assert left[0] > BURST // 3, f"only {left[0]} of {BURST} burst files were still waiting: it queued behind them"
