"""One writer per project: commands run while ``watch`` commits a burst are never undone.

A real ``kbwatch watch`` subprocess ingests bursts of 200 small files into one
project while ``kbwatch remove``, ``kbwatch rebuild`` and ``kbwatch review``
(real CLI subprocesses) change the same project. After each burst the
command's effect must still be in the project's files: the service may not
write an older in-memory copy of manifest.json / project.md over them
(issue #12, Found 3). Three rounds each.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO, kbwatch
from test_watch import SLOW_PLUGIN, journal_rows, make_root, manifest_files, service, sources_left, wait_for  # noqa: F401

BURST = 200
ROUNDS = 3
PLACEHOLDER = "（高度总结的项目信息）"
# Small text files parse in a few milliseconds, so 200 of them commit in one
# batch before a CLI process has even started. The test parser (a real
# plugin in a real parse worker) takes PARSE_SECONDS per ``.slow`` file, so a
# burst takes several seconds and several commits, like one of office files.
PARSE_SECONDS = 0.03


def _write(project: Path, rel: str, text: str) -> None:
    path = project / "sources" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _active(project: Path) -> set[str]:
    return {name for name, f in manifest_files(project).items() if not f.get("removed")}


def _rows(project: Path) -> list[str]:
    from kbwatch.pipeline.formats.project_md import ProjectMd

    pm = ProjectMd.parse((project / "project.md").read_text(encoding="utf-8"), project.name, "zh")
    return list(pm.rows)


def _overview(project: Path) -> str:
    from kbwatch.pipeline.formats.project_md import ProjectMd

    pm = ProjectMd.parse((project / "project.md").read_text(encoding="utf-8"), project.name, "zh")
    return " ".join(pm.section_text("overview").split())


def _parsed_docs(project: Path) -> set[str]:
    base = project / "parsed"
    return {p.relative_to(base).as_posix()[:-3] for p in base.rglob("*.md") if p.name != "data_structure.md"}


def _done_runs(root: Path) -> int:
    return journal_rows(root, "select count(*) from runs where outcome = 'done'")[0][0]


def _ingest_and_wait(root: Path, svc, docs: dict[str, str]) -> None:
    project = root / "p"
    before = _done_runs(root)
    for rel, text in docs.items():
        _write(project, rel, text)
    names = {rel.rsplit(".", 1)[0] for rel in docs}
    wait_for(lambda: names <= _active(project) and not sources_left(project), 300, f"{len(docs)} documents", proc=svc)
    wait_for(lambda: _done_runs(root) >= before + len(docs), 60, "the journal to record the runs", proc=svc)


def _during_burst(root: Path, svc, round_no: int, command: list[str]) -> subprocess.CompletedProcess:
    """Drop a 200-file burst; once the service has committed part of it, run ``command``
    (a real CLI process) while the rest of the burst keeps arriving and committing."""
    project = root / "p"
    before = _done_runs(root)
    names = [f"b{round_no}/doc{i:03d}" for i in range(BURST)]
    for name in names:
        _write(project, f"{name}.slow", f"{PARSE_SECONDS} burst text of {name} in round {round_no}\n")
    wait_for(lambda: any(n in _active(project) for n in names), 120, "the first burst commit", interval=0.02, proc=svc)
    result = subprocess.run([sys.executable, str(REPO / "run.py"), *command, "--root", str(root)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{command} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    OVERLAPPED.append(bool(sources_left(project)))  # the burst was still arriving when the command ended
    wait_for(lambda: set(names) <= _active(project) and not sources_left(project), 300,
             f"burst {round_no} to be committed", proc=svc)
    wait_for(lambda: _done_runs(root) >= before + BURST, 60, "the journal to record the burst", proc=svc)
    return result


def _assert_consistent(root: Path) -> None:
    """status, manifest, project.md rows and parsed/ all name the same documents."""
    project = root / "p"
    active = _active(project)
    assert sorted(_rows(project)) == sorted(active), "project.md rows differ from the manifest"
    assert _parsed_docs(project) == active, "parsed/ differs from the manifest"
    status = json.loads(kbwatch("status", "--json", root=root, check=True).stdout)
    (p,) = [x for x in status["projects"] if x["name"] == "p"]
    assert p["documents"] == len(active)


OVERLAPPED: list[bool] = []


def _start(tmp_path: Path, service) -> tuple[Path, object]:
    root = make_root(tmp_path, projects=("p",), extra="commit_interval_seconds = 0.5")
    (root / "slowparse.py").write_text(SLOW_PLUGIN, encoding="utf-8")
    with open(root / "kbwatch.toml", "a", encoding="utf-8") as fh:
        fh.write('\n[pipeline]\nplugins = ["slowparse.py"]\n')
    OVERLAPPED.clear()
    svc = service(root).start()
    return root, svc


def _assert_overlapped() -> None:
    """Guard against a vacuous pass: at least one command ran inside a burst."""
    assert any(OVERLAPPED), "no command ran while its burst was still being committed (machine too fast?)"


def test_remove_during_a_burst_stays_removed(tmp_path, service):
    root, svc = _start(tmp_path, service)
    project = root / "p"
    known = {f"known{i}.md": f"# known {i}\n\nA document that will be removed in round {i}.\n" for i in range(ROUNDS)}
    _ingest_and_wait(root, svc, known)
    for r in range(ROUNDS):
        victim = f"known{r}"
        assert victim in _active(project)
        _during_burst(root, svc, r, ["remove", "p", victim])
        entry = manifest_files(project)[victim]
        assert entry.get("removed"), f"round {r}: the removal of {victim} was undone in manifest.json"
        assert victim not in _rows(project), f"round {r}: {victim}'s row came back in project.md"
        assert not (project / "parsed" / f"{victim}.md").exists(), f"round {r}: parsed/{victim}.md came back"
        assert f"移除 {victim}.md" in (project / "project.md").read_text(encoding="utf-8")
        _assert_consistent(root)
    _assert_overlapped()
    svc.terminate()


def test_rebuild_during_a_burst_is_kept(tmp_path, service):
    root, svc = _start(tmp_path, service)
    project = root / "p"
    _ingest_and_wait(root, svc, {"intro.md": "# 项目介绍\n\n本项目建设一个共享的知识库，自动解析文档。\n"})
    assert _overview(project) == PLACEHOLDER
    for r in range(ROUNDS):
        result = _during_burst(root, svc, r, ["rebuild", "p"])
        count = int(re.search(r"from (\d+) document", result.stdout).group(1))
        text = (project / "project.md").read_text(encoding="utf-8")
        assert f"重建 project.md（{count} 个文档）" in text, f"round {r}: the rebuild's log line was overwritten"
        assert _overview(project) != PLACEHOLDER, f"round {r}: the rebuilt overview was overwritten"
        _assert_consistent(root)
    _assert_overlapped()
    svc.terminate()


def test_review_during_a_burst_is_kept(tmp_path, service):
    root, svc = _start(tmp_path, service)
    project = root / "p"
    tokens = [hashlib.sha256(f"round {i}".encode()).hexdigest()[:36] for i in range(ROUNDS)]
    risky = {f"risky{i}.md": f"# risky {i}\n\nthe deploy token is ghp_{tokens[i]} for round {i}\n"
             for i in range(ROUNDS)}
    _ingest_and_wait(root, svc, risky)
    for r in range(ROUNDS):
        pending = json.loads(kbwatch("review", "p", "--json", root=root, check=True).stdout)
        mine = [f for f in pending if f["document"] == f"risky{r}"]
        assert mine, f"round {r}: no pending finding in risky{r}: {pending}"
        _during_burst(root, svc, r, ["review", "p", *sum((["--approve", str(f["id"])] for f in mine), [])])
        decisions = json.loads((project / "reviews.json").read_text(encoding="utf-8"))
        body = decisions.get("decisions", decisions)
        for f in mine:
            assert body[f["fingerprint"]]["decision"] == "approved"
        left = json.loads(kbwatch("review", "p", "--json", root=root, check=True).stdout)
        assert not [f for f in left if f["document"] == f"risky{r}"], f"round {r}: approval undone"
        knowledge = (project / "KNOWLEDGE.md").read_text(encoding="utf-8")
        expected = "needs-review" if left else "ready"
        assert re.search(rf"^status: {expected}$", knowledge, re.M), knowledge[:400]
        _assert_consistent(root)
    _assert_overlapped()
    svc.terminate()


HOLDER = """\
import fcntl, json, os, sys, time
from pathlib import Path
from kbwatch.pipeline.project_lock import ProjectFileLock

project, state, hold, out = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4])
lock = ProjectFileLock(project, state)
lock.acquire()
Path(str(out) + ".held").write_text("held")
turn = os.open(lock._turn_path, os.O_RDWR)
deadline = time.monotonic() + 60
while time.monotonic() < deadline:  # until the command waits (holding the turnstile while it waits for the lock)
    try:
        fcntl.flock(turn, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(turn, fcntl.LOCK_UN)
        time.sleep(0.05)
    except BlockingIOError:
        break
time.sleep(hold)
lock.release()
lock.acquire()  # at once, as a service committing a burst does
manifest = json.loads((project / "manifest.json").read_text(encoding="utf-8"))
out.write_text(json.dumps({f["name"]: bool(f.get("removed")) for f in manifest["files"]}))
lock.release()
"""


def test_a_waiting_command_goes_before_the_holders_next_turn(tmp_path):
    """Another process (standing in for the service) holds the project's lock
    until ``kbwatch remove`` has waited 2.5 s, and re-takes it the moment it
    lets go: the command says once that it waits, and runs before the
    holder's next turn (the turnstile; plain flock lets the holder win)."""
    root = make_root(tmp_path, projects=("p",))
    project = root / "p"
    _write(project, "keep.md", "# keep\n\nkept\n")
    _write(project, "gone.md", "# gone\n\nto be removed\n")
    kbwatch("ingest", "p", root=root, check=True)
    script = tmp_path / "holder.py"
    script.write_text(HOLDER, encoding="utf-8")
    out = tmp_path / "holder.json"
    holder = subprocess.Popen([sys.executable, str(script), str(project), str(root / ".kbwatch"), "2.5", str(out)],
                              cwd=str(REPO), env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    try:
        wait_for(lambda: Path(str(out) + ".held").exists(), 60, "the holder to take the lock")
        result = kbwatch("remove", "p", "gone", root=root)
        assert result.returncode == 0, result.stderr
        assert holder.wait(timeout=60) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
    assert result.stderr.count("waiting for the running service to commit p…") == 1, result.stderr
    seen = json.loads(out.read_text(encoding="utf-8"))
    assert seen == {"keep": False, "gone": True}, "the holder's next turn came before the waiting command"


def test_index_rebuild_never_shows_an_emptied_project(tmp_path):
    """`kbwatch index rebuild` empties a project's index and fills it again. A search between the two
    (an agent over MCP, `ask`) found nothing and answered "no_match", which an agent is told to take as
    "the knowledge base holds nothing on this". Both now happen in one transaction: a reader sees the
    old index or the new one. Real rebuild processes, a reader polling the real index file meanwhile."""
    import threading

    from kbwatch.pipeline import Knowledge

    root = tmp_path / "kb"
    root.mkdir()
    kbwatch("init", "p", root=root, check=True)
    for i in range(120):
        (root / "p" / "sources" / f"doc{i:03d}.md").write_text(
            f"# Document {i}\n\nThe wombat ledger number {i} is filed under quartz.\n" + "Filler text. " * 200,
            encoding="utf-8")
    kbwatch("ingest", root=root, check=True)
    misses, answers, stop = [], [], threading.Event()

    def reader():
        with Knowledge(root) as kn:
            while not stop.is_set():
                a = kn.query("wombat ledger quartz", name="p", record=False)
                answers.append(a["status"])
                if a["status"] != "ok":
                    misses.append(a["status"])

    t = threading.Thread(target=reader)
    t.start()
    try:
        for _ in range(3):
            out = kbwatch("index", "rebuild", "p", root=root, check=True)
            assert "p: 120 document(s) indexed" in out.stdout, out.stdout
    finally:
        stop.set()
        t.join(timeout=60)
    assert len(answers) > 20, len(answers)
    assert not misses, f"{len(misses)} of {len(answers)} searches found nothing during a rebuild"
