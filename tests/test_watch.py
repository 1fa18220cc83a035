"""The watch service, end to end: a real ``kbwatch watch`` subprocess on a real folder.

Every test starts the service with ``python run.py watch --root ROOT`` and a
small ``kbwatch.toml`` in the root, drops files the way users and their tools
do, and polls the project's files (manifest.json, parsed/, sources/) with a
deadline. Every process a test starts is killed in a ``finally``.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, kbwatch

BASE_TOML = """\
[service]
settle_seconds = 0.5
workers = 1
heartbeat_seconds = 1.0
{extra}
"""


# -- helpers -------------------------------------------------------------------


def wait_for(pred, timeout: float, what: str, interval: float = 0.1, proc: "Service | None" = None):
    """Poll ``pred`` until it returns a truthy value; fail with ``what`` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if proc is not None and proc.proc is not None and proc.proc.poll() is not None:
            raise AssertionError(f"the service exited ({proc.proc.returncode}) while waiting for {what}\n{proc.log()}")
        if time.monotonic() > deadline:
            tail = proc.log()[-3000:] if proc is not None else ""
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{tail}")
        time.sleep(interval)


class Service:
    """One ``kbwatch watch`` subprocess with its stderr in a log file."""

    def __init__(self, root: Path, logdir: Path):
        self.root = root
        self.logdir = logdir
        self.proc: subprocess.Popen | None = None
        self.logfile: Path | None = None
        self._n = 0

    def start(self, wait_ready: bool = True, env: dict | None = None) -> "Service":
        self._n += 1
        self.logfile = self.logdir / f"watch-{self._n}.log"
        with open(self.logfile, "wb") as fh:
            self.proc = subprocess.Popen(
                [sys.executable, str(REPO / "run.py"), "watch", "--root", str(self.root)],
                stdout=fh, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}, cwd=str(REPO),
            )
        if wait_ready:
            wait_for(lambda: "kbwatch watching" in self.log(), 60, "the service to start", proc=self)
        return self

    def log(self) -> str:
        try:
            return self.logfile.read_text(encoding="utf-8", errors="replace") if self.logfile else ""
        except OSError:
            return ""

    def terminate(self, timeout: float = 30.0) -> tuple[int, float]:
        """SIGTERM; (exit code, seconds it took)."""
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGUSR1)  # the service prints every thread's stack
            time.sleep(1.0)
            raise AssertionError(f"no exit within {timeout} s of SIGTERM\n{self.log()[-8000:]}") from None
        return code, time.monotonic() - t0

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def ensure_dead(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


@pytest.fixture
def service(tmp_path):
    """A factory of services; every one started is killed at the end of the test."""
    started: list[Service] = []

    def make(root: Path) -> Service:
        s = Service(root, tmp_path)
        started.append(s)
        return s

    yield make
    for s in started:
        s.ensure_dead()


def make_root(tmp_path: Path, projects=("p",), extra: str = "") -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "kbwatch.toml").write_text(BASE_TOML.format(extra=extra), encoding="utf-8")
    if projects:
        kbwatch("init", *projects, root=root, check=True)
    return root


def manifest_files(project: Path) -> dict[str, dict]:
    try:
        data = json.loads((project / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {f["name"]: f for f in data.get("files", [])}


def sources_left(project: Path) -> list[str]:
    """Files still in sources/ (os.walk: the service may prune a sub-folder while we list it)."""
    base = project / "sources"
    return sorted((Path(d) / f).relative_to(base).as_posix() for d, _, files in os.walk(base) for f in files)


def sha(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return "sha256:" + hashlib.sha256(data).hexdigest()


def ingested(project: Path, names: dict[str, str]):
    """True once every ``name -> content`` is the latest manifest version and out of sources/."""
    files = manifest_files(project)
    for name, content in names.items():
        entry = files.get(name)
        if entry is None or entry["versions"][-1]["hash"] != sha(content):
            return False
    return not sources_left(project)


def journal_rows(root: Path, sql: str, params=()) -> list[tuple]:
    db = sqlite3.connect(root / ".kbwatch" / "journal.sqlite3")
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


def assert_one_version_each(project: Path, names: dict[str, str]) -> None:
    files = manifest_files(project)
    for name, content in names.items():
        versions = [v["hash"] for v in files[name]["versions"]]
        assert versions == [sha(content)], f"{project.name}/{name}: {versions}"


# -- tests ---------------------------------------------------------------------


def test_burst_of_200_files_across_3_projects(tmp_path, service):
    root = make_root(tmp_path, projects=("alpha", "beta", "gamma"))
    svc = service(root).start()
    expected: dict[str, dict[str, str]] = {p: {} for p in ("alpha", "beta", "gamma")}
    for i in range(200):
        project = ("alpha", "beta", "gamma")[i % 3]
        rel = f"doc{i:03d}.md" if i % 4 else f"sub{i % 5}/doc{i:03d}.txt"
        content = f"# Document {i}\n\nbody of document {i} in {project}\n"
        path = root / project / "sources" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        expected[project][rel.rsplit(".", 1)[0]] = content
    for project, names in expected.items():
        wait_for(lambda: ingested(root / project, names), 120, f"{len(names)} files of {project}", proc=svc)
    for project, names in expected.items():
        assert_one_version_each(root / project, names)
        assert len(manifest_files(root / project)) == len(names)
        for name in names:
            assert (root / project / "parsed" / f"{name}.md").is_file()
    # one run per file: nothing was queued twice (the journal is written just after the sources go)
    wait_for(lambda: journal_rows(root, "select count(*) from runs where outcome = 'done'")[0][0] >= 200, 15,
             "the journal to record 200 runs", proc=svc)
    dup = journal_rows(root, "select project, source, count(*) from runs group by project, source having count(*) > 1")
    assert dup == []
    assert journal_rows(root, "select count(*) from runs where outcome = 'done'")[0][0] == 200
    code, took = svc.terminate()
    assert code == 0


def test_slow_writer_is_ingested_once_and_complete(tmp_path, service):
    root = make_root(tmp_path)
    project = root / "p"
    svc = service(root).start()
    path = project / "sources" / "growing.log"
    lines = []
    deadline = time.monotonic() + 5.0
    i = 0
    with open(path, "w", encoding="utf-8") as fh:
        while time.monotonic() < deadline:  # appends every 0.1 s, well inside settle_seconds
            line = f"line {i:04d} written at {time.time():.3f}\n"
            fh.write(line)
            fh.flush()
            lines.append(line)
            i += 1
            time.sleep(0.1)
    content = "".join(lines)
    wait_for(lambda: ingested(project, {"growing": content}), 30, "the slow writer's file", proc=svc)
    time.sleep(1.0)  # give a wrong second run the chance to show up
    assert_one_version_each(project, {"growing": content})
    parsed = (project / "parsed" / "growing.md").read_text(encoding="utf-8")
    assert lines[0].strip() in parsed and lines[-1].strip() in parsed
    runs = journal_rows(root, "select outcome from runs where source = 'sources/growing.log'")
    wait_for(lambda: journal_rows(root, "select outcome from runs where source = 'sources/growing.log'"), 10,
             "the journal row", proc=svc)
    runs = journal_rows(root, "select outcome from runs where source = 'sources/growing.log'")
    assert runs == [("done",)], runs


def test_files_dropped_while_down_are_ingested_at_start(tmp_path, service):
    root = make_root(tmp_path, projects=("p", "q"))
    names = {}
    for project in ("p", "q"):
        for i in range(5):
            content = f"offline {project} {i}\n"
            (root / project / "sources" / f"off{i}.txt").write_text(content, encoding="utf-8")
            names.setdefault(project, {})[f"off{i}"] = content
    svc = service(root).start()
    for project, want in names.items():
        wait_for(lambda: ingested(root / project, want), 60, f"the startup scan of {project}", proc=svc)
    assert "startup scan: 5 file(s)" in svc.log() or "startup scan: 10 file(s)" in svc.log()


def test_file_and_folder_moved_into_sources(tmp_path, service):
    root = make_root(tmp_path)
    project = root / "p"
    outside = tmp_path / "outside"  # same filesystem: a rename raises a moved event, not created
    outside.mkdir()
    svc = service(root).start()
    (outside / "moved.md").write_text("# Moved\nmoved in\n", encoding="utf-8")
    os.rename(outside / "moved.md", project / "sources" / "moved.md")
    folder = outside / "batch"
    (folder / "inner").mkdir(parents=True)
    want = {"moved": "# Moved\nmoved in\n"}
    for i in range(3):
        (folder / f"f{i}.txt").write_text(f"folder file {i}\n", encoding="utf-8")
        want[f"batch/f{i}"] = f"folder file {i}\n"
    (folder / "inner" / "deep.txt").write_text("deep file\n", encoding="utf-8")
    want["batch/inner/deep"] = "deep file\n"
    time.sleep(1.0)  # the files are old (settled) when the folder is moved in
    os.rename(folder, project / "sources" / "batch")
    wait_for(lambda: ingested(project, want), 30, "the moved file and folder", proc=svc)
    assert_one_version_each(project, want)


def test_editor_atomic_save(tmp_path, service):
    root = make_root(tmp_path)
    project = root / "p"
    svc = service(root).start()
    target = project / "sources" / "notes.md"

    def atomic_save(text: str, temp_name: str) -> None:
        tmp = project / "sources" / temp_name
        tmp.write_text(text, encoding="utf-8")
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)

    v1 = "# Notes\nfirst draft\n"
    atomic_save(v1, ".goutputstream-ABC123")  # gedit/GIO style
    wait_for(lambda: ingested(project, {"notes": v1}), 30, "the first atomic save", proc=svc)
    v2 = "# Notes\nsecond draft, saved over\n"
    target.write_text("placeholder that the save replaces\n", encoding="utf-8")
    atomic_save(v2, "notes.md.tmp")  # rename over an existing file
    wait_for(lambda: ingested(project, {"notes": v2}), 30, "the second atomic save", proc=svc)
    files = manifest_files(project)
    assert set(files) == {"notes"}, "a temp file was ingested"
    hashes = [v["hash"] for v in files["notes"]["versions"]]
    assert hashes[0] == sha(v1) and hashes[-1] == sha(v2)
    assert sha("placeholder that the save replaces\n") not in hashes or len(hashes) == 3
    assert "second draft" in (project / "parsed" / "notes.md").read_text(encoding="utf-8")


def test_project_created_while_running_is_watched(tmp_path, service):
    root = make_root(tmp_path)
    svc = service(root).start()
    kbwatch("init", "fresh", root=root, check=True)
    # dropped at once: the file may arrive before the new sources/ is watched
    (root / "fresh" / "sources" / "first.md").write_text("# First\n", encoding="utf-8")
    wait_for(lambda: ingested(root / "fresh", {"first": "# First\n"}), 30, "the file in the new project", proc=svc)
    time.sleep(0.3)
    (root / "fresh" / "sources" / "second.md").write_text("# Second\n", encoding="utf-8")
    wait_for(lambda: ingested(root / "fresh", {"second": "# Second\n"}), 30, "a later file in the new project", proc=svc)
    # a project made by hand (mkdir -p x/sources) is a project too
    (root / "byhand" / "sources").mkdir(parents=True)
    (root / "byhand" / "sources" / "h.txt").write_text("by hand\n", encoding="utf-8")
    wait_for(lambda: ingested(root / "byhand", {"h": "by hand\n"}), 30, "the file in the hand-made project", proc=svc)
    # a whole project folder moved into the root, files already in its sources/
    staged = tmp_path / "staged"
    (staged / "sources" / "deep").mkdir(parents=True)
    (staged / "sources" / "m.md").write_text("# moved project\n", encoding="utf-8")
    (staged / "sources" / "deep" / "n.txt").write_text("nested in a moved project\n", encoding="utf-8")
    os.rename(staged, root / "movedin")
    want = {"m": "# moved project\n", "deep/n": "nested in a moved project\n"}
    wait_for(lambda: ingested(root / "movedin", want), 30, "the files of a project moved in", proc=svc)


def test_sigterm_exits_0_within_10s_and_status(tmp_path, service):
    root = make_root(tmp_path)
    project = root / "p"
    svc = service(root).start()
    status = json.loads(kbwatch("status", "--json", root=root, check=True).stdout)
    assert status["running"] is True and status["pid"] == svc.proc.pid
    contents = {}
    for i in range(60):
        contents[f"t{i:02d}.md"] = f"# T{i}\n" + "text line\n" * 200
        (project / "sources" / f"t{i:02d}.md").write_text(contents[f"t{i:02d}.md"], encoding="utf-8")
    wait_for(lambda: manifest_files(project), 30, "the first commit", interval=0.02, proc=svc)
    code, took = svc.terminate(timeout=10.0)  # while busy
    assert code == 0, svc.log()[-2000:]
    assert took <= 10.0
    assert "kbwatch stopped" in svc.log()
    status = json.loads(kbwatch("status", "--json", root=root, check=True).stdout)
    assert status["running"] is False and status["pid"] is None
    # nothing half-moved: every file is archived with its hash, or still in sources/
    files = manifest_files(project)
    for rel, text in contents.items():
        entry = files.get(rel[:-3])
        in_manifest = entry is not None and [v["hash"] for v in entry["versions"]] == [sha(text)]
        assert in_manifest or (project / "sources" / rel).is_file(), f"{rel} lost"
        if in_manifest:
            assert (project / entry["versions"][0]["archived"]).is_file()
    assert journal_rows(root, "select count(*) from runs where outcome in ('running', 'queued')")[0][0] == 0


def test_second_instance_is_refused_naming_the_pid(tmp_path, service):
    root = make_root(tmp_path)
    svc = service(root).start()
    second = kbwatch("watch", root=root, timeout=60)
    assert second.returncode == 2, second.stdout + second.stderr
    assert str(svc.proc.pid) in second.stderr
    assert svc.proc.poll() is None  # the first one is untouched
    (root / "p" / "sources" / "still.md").write_text("# still working\n", encoding="utf-8")
    wait_for(lambda: ingested(root / "p", {"still": "# still working\n"}), 30, "the first service to keep working", proc=svc)


def test_stale_lock_after_sigkill_does_not_block_restart(tmp_path, service):
    root = make_root(tmp_path)
    first = service(root).start()
    first.kill()
    status = json.loads(kbwatch("status", "--json", root=root, check=True).stdout)
    assert status["running"] is False  # the pid in the journal is dead
    (root / "p" / "sources" / "after.md").write_text("# after the kill\n", encoding="utf-8")
    second = service(root).start()
    wait_for(lambda: ingested(root / "p", {"after": "# after the kill\n"}), 30, "ingest after a restart", proc=second)
    status = json.loads(kbwatch("status", "--json", root=root, check=True).stdout)
    assert status["running"] is True and status["pid"] == second.proc.pid
    code, _ = second.terminate()
    assert code == 0


def _inotify_fds(pid: int) -> int:
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if "inotify" in os.readlink(f"/proc/{pid}/fd/{fd}"):
                n += 1
        except OSError:
            pass
    return n


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_polling_mode_ingests_without_native_events(tmp_path, service):
    root = make_root(tmp_path, extra="polling = true\npoll_interval_seconds = 0.3\nrescan_seconds = 0.0")
    project = root / "p"
    svc = service(root).start()
    assert "polling every 0.3 s" in svc.log()
    assert _inotify_fds(svc.proc.pid) == 0, "polling mode must not open an inotify instance"
    (project / "sources" / "polled.md").write_text("# polled\n", encoding="utf-8")
    (project / "sources" / "sub").mkdir()
    (project / "sources" / "sub" / "deep.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    want = {"polled": "# polled\n", "sub/deep": "a,b\n1,2\n"}
    wait_for(lambda: ingested(project, want), 30, "polled files", proc=svc)
    kbwatch("init", "later", root=root, check=True)
    (root / "later" / "sources" / "x.txt").write_text("later\n", encoding="utf-8")
    wait_for(lambda: ingested(root / "later", {"x": "later\n"}), 30, "a polled new project", proc=svc)


def test_native_mode_uses_inotify(tmp_path, service):
    """The counterpart of the polling test: the default on a local disk is native events."""
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc")
    root = make_root(tmp_path, extra="rescan_seconds = 0.0")
    svc = service(root).start()
    assert "native events" in svc.log()
    assert _inotify_fds(svc.proc.pid) >= 1


def test_rescan_catches_a_file_the_events_missed(tmp_path, service):
    """A file whose events were lost (inotify overflow, a network share) is found by the rescan.

    A polling observer that polls once an hour sees nothing during the test:
    only the periodic rescan can find the file.
    """
    root = make_root(tmp_path, extra="polling = true\npoll_interval_seconds = 3600.0\nrescan_seconds = 1.5")
    project = root / "p"
    svc = service(root).start()
    (project / "sources" / "missed.txt").write_text("missed\n", encoding="utf-8")
    wait_for(lambda: ingested(project, {"missed": "missed\n"}), 30, "the rescan", proc=svc)
    code, took = svc.terminate()
    assert code == 0 and took < 10


SLOW_PLUGIN = '''\
"""A parser for .slow files that takes as long as the file says (seconds), in a worker process."""
import time

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.model import ParsedDocument, ParserInfo


@hookimpl
def kb_parser_info():
    return [ParserInfo(name="slow", extensions=(".slow",), priority=100, inprocess=False,
                       description="test parser that sleeps")]


@hookimpl
def kb_parse(path, ext, settings):
    if ext != ".slow":
        return None
    text = path.read_text(encoding="utf-8")
    time.sleep(float(text.split()[0]))
    return ParsedDocument(markdown="# slow\\n\\n" + text, parser="slow")
'''


def _slow_root(tmp_path: Path, extra: str = "") -> Path:
    root = make_root(tmp_path, extra=extra)
    (root / "slowparse.py").write_text(SLOW_PLUGIN, encoding="utf-8")
    with open(root / "kbwatch.toml", "a", encoding="utf-8") as fh:
        fh.write('\n[pipeline]\nplugins = ["slowparse.py"]\n')
    return root


def test_sigterm_during_a_long_parse_abandons_it_cleanly(tmp_path, service):
    root = _slow_root(tmp_path)
    project = root / "p"
    svc = service(root).start()
    (project / "sources" / "long.slow").write_text("120 a parse that takes two minutes\n", encoding="utf-8")
    wait_for(lambda: journal_rows(root, "select 1 from runs where outcome = 'running'"), 30, "the parse to start", proc=svc)
    code, took = svc.terminate(timeout=10.0)
    assert code == 0 and took <= 10.0, (code, took)
    assert (project / "sources" / "long.slow").is_file(), "an abandoned run must leave the file in sources/"
    assert not manifest_files(project)
    assert journal_rows(root, "select count(*) from runs where outcome in ('running', 'queued')")[0][0] == 0
    # abandoned, not failed: the next start takes it again
    (project / "sources" / "long.slow").write_text("0.1 now quick\n", encoding="utf-8")
    svc2 = service(root).start()
    wait_for(lambda: ingested(project, {"long": "0.1 now quick\n"}), 30, "the file at the next start", proc=svc2)


def test_parse_timeout_fails_the_run_and_replaces_the_worker(tmp_path, service):
    root = _slow_root(tmp_path)
    with open(root / "kbwatch.toml", "a", encoding="utf-8") as fh:
        fh.write("\n[stages.parse]\ntimeout_seconds = 1.5\n")
    project = root / "p"
    svc = service(root).start()
    (project / "sources" / "stuck.slow").write_text("600 never finishes\n", encoding="utf-8")
    wait_for(lambda: journal_rows(root, "select error from runs where source = 'sources/stuck.slow' and outcome = 'failed'"),
             30, "the run to fail on its timeout", proc=svc)
    (error,), = journal_rows(root, "select error from runs where source = 'sources/stuck.slow'")
    assert "timeout_seconds" in error, error
    assert (project / "sources" / "stuck.slow").is_file()
    # the worker was replaced: the next slow-format file parses in a fresh worker
    (project / "sources" / "next.slow").write_text("0.1 fine\n", encoding="utf-8")
    (project / "sources" / "plain.md").write_text("# plain\n", encoding="utf-8")
    wait_for(lambda: manifest_files(project).keys() >= {"next", "plain"}, 30, "files after the timeout", proc=svc)
    assert (project / "sources" / "stuck.slow").is_file()  # a permanent failure is not retried until it changes


def test_an_edit_saved_while_the_file_is_ingested_is_taken_after_that_run(tmp_path, service):
    """The watcher dropped events for a file whose run was under way; the commit then left the
    edited file in sources/ ("changed while it was ingested") and it waited for the full rescan,
    never taken with rescan_seconds = 0. The run is held at run:opened while the edit is saved."""
    root = make_root(tmp_path, extra="rescan_seconds = 0.0")
    sources = root / "p" / "sources"
    flag = tmp_path / "opened"
    svc = service(root).start(env={"KBWATCH_TEST_PAUSE": "run:opened", "KBWATCH_TEST_PAUSE_SECONDS": "30",
                                   "KBWATCH_TEST_PAUSE_FILE": str(flag)})
    (sources / "notes.md").write_text("# Notes\n\nversion one of the notes\n", encoding="utf-8")
    wait_for(lambda: flag.exists(), 30, "the run of version one to open the file", proc=svc)
    time.sleep(0.2)
    (sources / "notes.md").write_text("# Notes\n\nversion two of the notes, saved during the run\n", encoding="utf-8")
    time.sleep(2.5)  # the edit's events arrive and settle while the first run is still held
    flag.unlink()  # the first run goes on (it read version one)
    wait_for(lambda: flag.exists(), 30, "the run of version two", proc=svc)
    flag.unlink()
    wait_for(lambda: len(manifest_files(root / "p").get("notes", {}).get("versions", [])) == 2, 30,
             "version two in the manifest", proc=svc)
    wait_for(lambda: not (sources / "notes.md").exists(), 30, "the source to leave sources/", proc=svc)
    parsed = (root / "p" / manifest_files(root / "p")["notes"]["parsed"]).read_text(encoding="utf-8")
    assert "version two" in parsed
    code, _ = svc.terminate()
    assert code == 0
