"""Parsing on a Dask cluster (issue 16): real schedulers, real workers, real ingests.

One ``dask scheduler`` plus two ``dask worker`` processes on 127.0.0.1 (free
ports, started here) serve the module; the LocalCluster test and the
scheduler-restart tests start their own. A test parser plugin (written into
each root) claims ``.slow`` (sleeps the seconds its first word says, leaves a
marker naming the Dask worker that runs it) and ``.poison`` (kills the Dask
worker that runs it; harmless outside a test worker).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, SHARED, free_port, ingest, kbwatch, process_running, run_records, schema

distributed = pytest.importorskip("distributed", reason="distributed is not installed (pip install 'kbwatch[cluster]')")

PLUGIN = '''
import os, signal, time
from pathlib import Path
from kbwatch.pipeline import ParsedDocument, ParserInfo, hookimpl

@hookimpl
def kb_parser_info():
    return [ParserInfo(name="testslow", extensions=(".slow", ".poison"), priority=100, inprocess=False,
                       description="test parser")]

@hookimpl
def kb_parse(path, ext, settings):
    text = Path(path).read_text(encoding="utf-8")
    marks = os.environ.get("KBWATCH_TEST_MARKS")
    if marks and os.environ.get("KBWATCH_TEST_DASK_WORKER"):
        Path(marks, f"{Path(path).stem}.{os.getpid()}").write_text(str(os.getppid()))
    if ext == ".poison" and os.environ.get("KBWATCH_TEST_DASK_WORKER"):
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(30)
    time.sleep(float(text.split()[0]))
    return ParsedDocument(markdown=f"# {Path(path).stem}\\n\\n{text}\\n", parser="testslow")
'''


class Cluster:
    """A real ``dask scheduler`` and ``dask worker`` processes, each in its own session."""

    def __init__(self, tmp: Path, workers: int = 2, port: int | None = None, nanny: bool = True):
        self.port = port or free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.marks = tmp / "marks"
        self.marks.mkdir(exist_ok=True)
        self.env = {**os.environ, "KBWATCH_TEST_DASK_WORKER": "1", "KBWATCH_TEST_MARKS": str(self.marks)}
        self.log = tmp / "dask.log"
        self.procs: list[subprocess.Popen] = []
        self.scheduler: subprocess.Popen | None = None
        self.start_scheduler()
        self.nanny = [] if nanny else ["--no-nanny"]  # no nanny: quicker to start, not restarted
        for _ in range(workers):
            self.start_worker()

    def start_worker(self) -> None:
        self._spawn("worker", self.address, "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1", *self.nanny)

    def _spawn(self, *args: str) -> subprocess.Popen:
        with open(self.log, "ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_" + args[0], *args[1:]],
                                    env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def start_scheduler(self, attempts: int = 5) -> None:
        """Start the scheduler and wait until it listens; a start that fails (the port not yet
        free after a kill) is tried again."""
        for _ in range(attempts):
            self.scheduler = self._spawn("scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard")
            deadline = time.monotonic() + 60
            while self.scheduler.poll() is None and time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    return
                except OSError:
                    time.sleep(0.1)
            if self.scheduler.poll() is None:
                break
            time.sleep(1.0)
        raise AssertionError(f"the Dask scheduler did not start:\n{self.log.read_text(errors='replace')[-3000:]}")

    def kill_scheduler(self) -> None:
        os.killpg(self.scheduler.pid, signal.SIGKILL)
        self.scheduler.wait(10)

    def wait_workers(self, n: int, timeout: float = 90) -> None:
        from distributed import Client

        deadline = time.monotonic() + timeout
        while True:
            try:
                with Client(self.address, timeout=5, set_as_default=False) as c:
                    c.wait_for_workers(n, timeout=max(1, deadline - time.monotonic()))
                    return
            except (OSError, TimeoutError):
                if time.monotonic() > deadline:
                    raise AssertionError(f"the Dask cluster did not come up:\n{self.log.read_text(errors='replace')[-3000:]}")
                time.sleep(0.5)

    def stop(self) -> None:
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("dask"))
    try:
        c.wait_workers(2)
        yield c
    finally:
        c.stop()


def make_root(tmp_path: Path, executor: str, projects=("p",), extra: str = "", all_parsers: bool = False) -> Path:
    """A root with the test parser; unstructured's parser is left out (its warm-up costs seconds
    in every new worker) unless ``all_parsers``."""
    root = tmp_path / "kb"
    root.mkdir()
    (root / "testplug.py").write_text(PLUGIN, encoding="utf-8")
    disable = "" if all_parsers else 'disable = ["parse_unstructured"]\n'
    (root / "kbwatch.toml").write_text(
        f'[pipeline]\nplugins = ["testplug.py"]\n{disable}\n[service]\nworkers = 2\n\n'
        f'[stages.parse]\nexecutor = "{executor}"\n{extra}', encoding="utf-8")
    kbwatch("init", *projects, root=root, check=True)
    return root


def drop_slow(project: Path, n: int, seconds: float, prefix: str = "f") -> list[str]:
    names = []
    for i in range(n):
        name = f"{prefix}{i:02d}.slow"
        (project / "sources" / name).write_text(f"{seconds} body of {project.name} {prefix}{i} words here\n")
        names.append(name)
    return names


def diagnostics(project: Path) -> list[str]:
    return [d["message"] for r in run_records(project) for d in r["diagnostics"]]


def archived(project: Path) -> list[str]:
    return sorted(p.name for p in (project / "archive").rglob("*") if p.is_file())


def journal_events(root: Path, kind: str) -> list[tuple]:
    import sqlite3

    with sqlite3.connect(root / ".kbwatch" / "journal.sqlite3") as db:
        return db.execute("select project, path, detail from events where kind = ?", (kind,)).fetchall()


def cli_in_process(root: Path, *args: str):
    from click.testing import CliRunner

    from kbwatch.pipeline.cli import get_cli

    return CliRunner().invoke(get_cli(), [*args, "--root", str(root)])


def journal_reason(root: Path, run_id: str) -> str:
    import sqlite3

    with sqlite3.connect(root / ".kbwatch" / "journal.sqlite3") as db:
        return db.execute("select reason from runs where run_id = ?", (run_id,)).fetchone()[0]


# -------------------------------------------------------------------- bursts


def test_burst_across_two_projects_on_a_local_cluster(tmp_path):
    """``dask-local:2``: a LocalCluster in the watcher; every run says which worker parsed it."""
    root = make_root(tmp_path, "dask-local:2", projects=("a", "b"))
    for p in ("a", "b"):
        drop_slow(root / p, 4, 0.05)
    totals, runs = ingest(root)
    assert totals["done"] == 8 and totals.get("failed", 0) == 0, runs
    validator = pytest.importorskip("jsonschema")
    compile_run = schema("compile-run.schema.json")
    for p in ("a", "b"):
        assert len(archived(root / p)) == 4
        parsed_on = [m for m in diagnostics(root / p) if m.startswith("parsed on dask-local worker tcp://127.0.0.1:")]
        assert len(parsed_on) == 4
        for record in run_records(root / p):
            validator.validate(record, compile_run)


def test_burst_across_two_projects_on_scheduler_and_two_workers(cluster, tmp_path):
    root = make_root(tmp_path, f"dask://127.0.0.1:{cluster.port}", projects=("a", "b"))
    for p in ("a", "b"):
        drop_slow(root / p, 5, 0.1)
    totals, runs = ingest(root)
    assert totals["done"] == 10 and totals.get("failed", 0) == 0, runs
    for p in ("a", "b"):
        assert len(archived(root / p)) == 5
        assert sum(f"scheduler {cluster.address}" in m for m in diagnostics(root / p)) == 5
    workers = {m.split(" worker ")[1].split(" ")[0] for p in ("a", "b") for m in diagnostics(root / p)
               if m.startswith("parsed on dask worker")}
    assert len(workers) == 2  # both workers took part


def _kill_first_worker_seen(cluster: Cluster, stop: threading.Event, killed: list[int]) -> None:
    while not stop.is_set():
        for mark in cluster.marks.iterdir():
            if mark.name.startswith("k"):
                pid = int(mark.read_text())
                os.kill(pid, signal.SIGKILL)  # the Dask worker process running this parse
                killed.append(pid)
                return
        time.sleep(0.05)


def test_worker_sigkilled_mid_burst_loses_nothing_and_duplicates_nothing(cluster, tmp_path):
    root = make_root(tmp_path, f"dask://127.0.0.1:{cluster.port}")
    project = root / "p"
    names = drop_slow(project, 5, 1.0, prefix="k")
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_first_worker_seen, args=(cluster, stop, killed))
    killer.start()
    try:
        totals, runs = ingest(root)
    finally:
        stop.set()
        killer.join()
    assert killed, "no parse reached a Dask worker"
    assert totals["done"] == 5 and totals.get("failed", 0) == 0, runs
    assert sorted(n.rsplit(".", 1)[0] for n in names) == sorted(a.split("_")[0] for a in archived(project))
    assert not any((project / "sources").iterdir())
    deaths = journal_events(root, "worker-death")
    assert len(deaths) >= 1 and all(d[0] == "p" for d in deaths)
    assert any("after 1 worker death(s)" in m for m in diagnostics(project))
    cluster.wait_workers(2)  # the nanny brought the killed worker back


def test_poison_document_fails_after_max_worker_deaths(cluster, tmp_path):
    root = make_root(tmp_path, f"dask://127.0.0.1:{cluster.port}", extra="max_worker_deaths = 2\n")
    project = root / "p"
    (project / "sources" / "bad.poison").write_text("0 poison\n")
    drop_slow(project, 2, 0.05, prefix="ok")
    totals, runs = ingest(root)
    by_source = {r["source"]: r for r in runs}
    bad = by_source["sources/bad.poison"]
    assert bad["outcome"] == "failed", bad
    assert journal_reason(root, bad["run_id"]) == "worker deaths"
    assert "killed 2 Dask workers" in bad["error"] and "max_worker_deaths = 2" in bad["error"]
    assert totals["done"] == 2 and totals.get("failed", 0) == 1
    assert (project / "sources" / "bad.poison").exists()  # a failed file stays where it was
    assert len([m for m in cluster.marks.iterdir() if m.name.startswith("bad.")]) == 2  # tried twice, not forever
    cluster.wait_workers(2)


def test_a_good_document_queued_beside_a_poison_one_is_not_failed(tmp_path):
    """One single-thread worker and two parses in flight: whenever the poison document runs,
    a good one is queued on the same worker, and the scheduler counts that worker's death
    against both. Only the poison document may fail; the good ones are submitted again."""
    own = Cluster(tmp_path, workers=1)
    try:
        own.wait_workers(1)
        root = make_root(tmp_path, f"dask://127.0.0.1:{own.port}", extra="max_worker_deaths = 2\n")
        project = root / "p"
        # the largest file of a batch goes first (ingest's order): the good ones queue beside it
        (project / "sources" / "a-bad.poison").write_text("0 poison\n" + "padding\n" * 200)
        drop_slow(project, 4, 0.3, prefix="ok")
        totals, runs = ingest(root)
        by_source = {r["source"]: r for r in runs}
        bad = by_source["sources/a-bad.poison"]
        assert bad["outcome"] == "failed" and "killed 2 Dask workers" in bad["error"], bad
        assert totals["done"] == 4 and totals.get("failed", 0) == 1, runs
        assert len([m for m in own.marks.iterdir() if m.name.startswith("a-bad.")]) == 2
        good = [m for m in diagnostics(project) if m.startswith("parsed on") and "worker death(s)" in m]
        assert good, "no good document was on a worker the poison one killed: the test proved nothing"
        assert len(archived(project)) == 4
    finally:
        own.stop()


# ------------------------------------------------------------ scheduler loss


def test_scheduler_killed_and_restarted_during_a_burst(tmp_path):
    """``cluster_unavailable = "local"``: parses caught by the loss run here; after the restart
    the cluster is used again; every file committed once."""
    own = Cluster(tmp_path, workers=1, nanny=False)
    try:
        own.wait_workers(1)
        root = make_root(tmp_path, f"dask://127.0.0.1:{own.port}")
        project = root / "p"
        drop_slow(project, 5, 0.6, prefix="s")
        restarted = threading.Event()

        def kill_and_restart():
            deadline = time.monotonic() + 60
            while not any(own.marks.iterdir()) and time.monotonic() < deadline:
                time.sleep(0.05)
            own.kill_scheduler()
            time.sleep(1.0)
            own.start_scheduler()
            restarted.set()

        chaos = threading.Thread(target=kill_and_restart)
        chaos.start()
        totals, runs = ingest(root)
        chaos.join()
        assert restarted.is_set()
        assert totals["done"] == 5 and totals.get("failed", 0) == 0, runs
        assert len(archived(project)) == 5
        assert len({r["source"] for r in runs}) == 5
        said = diagnostics(project)
        assert any(m.startswith("parsed locally (") for m in said), said
        assert not any((project / "sources").iterdir())
    finally:
        own.stop()


def test_wait_mode_waits_for_the_scheduler_then_parses_there(tmp_path):
    """``cluster_unavailable = "wait"``: nothing runs here; the parse waits (backoff) until a
    scheduler and worker come up."""
    port = free_port()
    root = make_root(tmp_path, f"dask://127.0.0.1:{port}", extra='cluster_unavailable = "wait"\n')
    project = root / "p"
    drop_slow(project, 1, 0.05)
    holder: list[Cluster] = []

    def start_later():
        time.sleep(1.0)
        holder.append(Cluster(tmp_path, workers=1, port=port, nanny=False))

    starter = threading.Thread(target=start_later)
    starter.start()
    try:
        totals, runs = ingest(root)
    finally:
        starter.join()
        for c in holder:
            c.stop()
    assert totals["done"] == 1, runs
    assert any(m.startswith("parsed on dask worker") and f"scheduler tcp://127.0.0.1:{port}" in m
               for m in diagnostics(project))


def test_a_lost_scheduler_means_local_parses_until_it_is_back(tmp_path, monkeypatch):
    """One executor (as the service keeps): on the cluster; the scheduler killed -> here; the
    scheduler and a worker back (a worker exits with its scheduler; systemd restarts it) ->
    on the cluster again."""
    from kbwatch.pipeline import dask_executor
    from kbwatch.pipeline.executors import ShippedFile, last_placement
    from kbwatch.pipeline.parsing import parse_in_worker

    monkeypatch.setattr(dask_executor, "RETRY_CLUSTER_AFTER", 0.5)
    own = Cluster(tmp_path, workers=1, nanny=False)
    try:
        own.wait_workers(1)
        root = make_root(tmp_path, f"dask://127.0.0.1:{own.port}")
        kb, settings = _settings(root, f"dask://127.0.0.1:{own.port}")
        remote, _ = _executors(kb, settings)
        src = tmp_path / "x.slow"
        src.write_text("0 some text\n")
        placements = []
        try:
            for step in ("up", "killed", "back"):
                if step == "killed":
                    own.kill_scheduler()
                elif step == "back":
                    own.start_scheduler()
                    own.start_worker()
                    own.wait_workers(1)
                    time.sleep(0.6)  # past RETRY_CLUSTER_AFTER
                doc = remote.call(parse_in_worker, ShippedFile(src), ".slow", settings, timeout=30)
                assert "some text" in doc.markdown
                placements.append(dict(last_placement()))
            status = remote.status()
        finally:
            remote.close()
            kb.close()
    finally:
        own.stop()
    assert [p["executor"] for p in placements] == ["dask", "local", "dask"], placements
    assert "Dask scheduler" in placements[1]["fallback"]
    assert status["remote"] == 2 and status["local"] == 1 and status["unavailable"] >= 1


# ------------------------------------------------------------- the executor itself


def _settings(root: Path, executor: str, **parse) -> dict:
    from kbwatch.pipeline.kb import KnowledgeBase

    kb = KnowledgeBase(root)
    settings = kb.settings
    settings["stages"]["parse"].update(executor=executor, **parse)
    return kb, settings


def _executors(kb, settings):
    import functools

    from kbwatch.pipeline.executors import make_executor
    from kbwatch.pipeline.parsing import worker_warmup
    from kbwatch.pipeline.workers import WorkerPool

    def pool():
        return WorkerPool(1, memory_mb=settings["stages"]["parse"]["memory_mb"],
                          warmup=functools.partial(worker_warmup, settings))

    return make_executor(settings, pool), make_executor({**settings, "stages": {
        **settings["stages"], "parse": {**settings["stages"]["parse"], "executor": "local"}}}, pool)


IMAGES = {".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".gif", ".webp", ".heic", ".heif"}


@pytest.fixture(scope="module")
def both_ways(cluster, tmp_path_factory):
    """A parse on the cluster and the same parse in the local pool, every parser loaded."""
    from kbwatch.pipeline.parsing import parse_document

    root = make_root(tmp_path_factory.mktemp("same"), f"dask://127.0.0.1:{cluster.port}", all_parsers=True)
    kb, settings = _settings(root, f"dask://127.0.0.1:{cluster.port}", isolate=True)
    remote, local = _executors(kb, settings)

    def parse(path: Path, where):
        return parse_document(kb.plugins, path, path.suffix, settings, offload=where.call)

    # warm the three parse pools (here, and one on each Dask worker) at once, not one by one
    local.prestart()
    warm = tmp_path_factory.mktemp("warm") / "warm.md"
    warm.write_text("# warm\n\nwarm-up text\n")
    threads = [threading.Thread(target=parse, args=(warm, remote)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        yield lambda path: parse(path, local), lambda path: parse(path, remote)
    finally:
        remote.close()
        local.close()
        kb.close()


def _compare(both_ways, files: list[Path]) -> int:
    from kbwatch.pipeline.errors import StageError
    from kbwatch.pipeline.executors import last_placement

    here_of, there_of = both_ways
    compared = 0
    for path in files:
        try:
            here = here_of(path)
        except StageError:
            continue  # does not parse (unsupported, no text...): nothing to compare
        there = there_of(path)
        assert last_placement()["executor"] == "dask", path
        assert there.markdown == here.markdown, path
        assert (there.title, there.locations, there.warnings) == (here.title, here.locations, here.warnings), path
        compared += 1
    return compared


def test_same_markdown_from_the_cluster_as_from_the_local_pool(both_ways):
    """Every fixture file that parses gives the same document on the cluster and in the local
    pool. Images are left out (OCR costs seconds each; the image parser takes the same path)."""
    files = sorted(p for d in ("ingest", "corpus") for p in (FIXTURES / d).iterdir()
                   if p.is_file() and p.name != "README.md" and p.suffix.lower() not in IMAGES)
    assert _compare(both_ways, files) >= 15


def test_same_markdown_for_the_shared_corpus(both_ways):
    """../shared/corpus (or ``KBWATCH_TEST_CORPUS``): one file per format (below 1 MB, no
    images) by default; ``KBWATCH_TEST_FULL_CORPUS=1`` compares every file that parses."""
    corpus = Path(os.environ.get("KBWATCH_TEST_CORPUS") or SHARED / "corpus")
    if not corpus.is_dir():
        pytest.skip(f"no corpus at {corpus} (../shared is absent; KBWATCH_TEST_CORPUS names another)")
    files = sorted(p for p in corpus.rglob("*") if p.is_file())
    if not os.environ.get("KBWATCH_TEST_FULL_CORPUS"):
        one_each: dict[str, Path] = {}
        for p in files:
            if p.stat().st_size < 1024 * 1024 and p.suffix.lower() not in IMAGES:
                one_each.setdefault(p.suffix.lower(), p)
        files = sorted(one_each.values())
    assert _compare(both_ways, files) >= 1


def test_a_stuck_parse_is_killed_inside_the_task_at_its_timeout(cluster, tmp_path):
    """Dask cannot stop a running task: the worker's own pool kills the parse at
    ``timeout_seconds``; the Dask worker lives on and parses the next file."""
    from kbwatch.pipeline.errors import PermanentError
    from kbwatch.pipeline.executors import ShippedFile, last_placement
    from kbwatch.pipeline.parsing import parse_in_worker

    root = make_root(tmp_path, f"dask://127.0.0.1:{cluster.port}")
    kb, settings = _settings(root, f"dask://127.0.0.1:{cluster.port}")
    remote, _ = _executors(kb, settings)
    stuck, fine = tmp_path / "stuck.slow", tmp_path / "fine.slow"
    stuck.write_text("600 never ends\n")
    fine.write_text("0 fine text\n")
    try:
        with pytest.raises(PermanentError) as err:
            remote.call(parse_in_worker, ShippedFile(stuck), ".slow", settings, timeout=1.0)
        doc = remote.call(parse_in_worker, ShippedFile(fine), ".slow", settings, timeout=30)
        where = last_placement()
        status = remote.status()
    finally:
        remote.close()
        kb.close()
    assert err.value.reason == "timeout" and "longer than 1 s" in err.value.message
    assert "fine text" in doc.markdown and where["executor"] == "dask"
    assert status["worker_deaths"] == 0  # the Dask workers were never in danger


def test_version_mismatch_is_refused_with_a_clear_message(cluster, tmp_path, monkeypatch):
    from kbwatch.pipeline import dask_executor
    from kbwatch.pipeline.errors import TransientError

    root = make_root(tmp_path, f"dask://127.0.0.1:{cluster.port}")
    kb, settings = _settings(root, f"dask://127.0.0.1:{cluster.port}")
    remote, _ = _executors(kb, settings)
    src = tmp_path / "x.slow"
    src.write_text("0 text\n")
    monkeypatch.setattr(dask_executor, "__version__", "0.0.0-other")
    from kbwatch.pipeline.executors import ShippedFile
    from kbwatch.pipeline.parsing import parse_in_worker
    try:
        with pytest.raises(TransientError) as err:
            remote.call(parse_in_worker, ShippedFile(src), ".slow", settings, timeout=30)
    finally:
        remote.close()
        kb.close()
    assert err.value.reason == "version mismatch"
    assert "but this watcher runs 0.0.0-other: refused" in err.value.message


def test_large_file_goes_by_path_only_on_a_shared_mount_else_parsed_here(cluster, tmp_path):
    from kbwatch.pipeline.executors import ShippedFile, last_placement
    from kbwatch.pipeline.parsing import parse_in_worker

    root = make_root(tmp_path, f"dask://127.0.0.1:{cluster.port}")
    src = tmp_path / "big.slow"
    src.write_text("0 " + "word " * 50000 + "\n")  # 250 kB, over a 0 MB ship limit
    for prefix, where in (("", "local"), (str(tmp_path), "dask")):
        kb, settings = _settings(root, f"dask://127.0.0.1:{cluster.port}", ship_max_mb=0, shared_path_prefix=prefix)
        remote, _ = _executors(kb, settings)
        try:
            doc = remote.call(parse_in_worker, ShippedFile(src), ".slow", settings, timeout=30)
        finally:
            remote.close()
            kb.close()
        assert "word word" in doc.markdown
        assert last_placement()["executor"] == where
        if where == "local":
            assert last_placement()["fallback"] == "too large to ship"


def test_status_shows_the_executor(cluster, tmp_path):
    root = make_root(tmp_path, f"dask://127.0.0.1:{cluster.port}")
    status = json.loads(cli_in_process(root, "status", "--json").output)
    assert status["executor"] == {"kind": "dask", "address": f"tcp://127.0.0.1:{cluster.port}", "workers": None,
                                  "in_flight": 0, "state": "not running"}
    text = cli_in_process(root, "status").output
    assert f"parse executor: dask at tcp://127.0.0.1:{cluster.port}" in text
    # a live executor reports its workers and tasks in flight
    kb, settings = _settings(root, f"dask://127.0.0.1:{cluster.port}")
    remote, _ = _executors(kb, settings)
    try:
        remote._connect()
        live = remote.status()
    finally:
        remote.close()
        kb.close()
    assert live["kind"] == "dask" and live["workers"] == 2 and live["in_flight"] == 0 and live["state"] == "connected"


def test_bad_executor_setting_is_refused(tmp_path):
    root = make_root(tmp_path, "local")
    (root / "kbwatch.toml").write_text('[stages.parse]\nexecutor = "dask://nowhere"\n', encoding="utf-8")
    result = cli_in_process(root, "status")
    assert result.exit_code != 0
    assert "stages.parse.executor" in result.output and "HOST:PORT" in result.output


def test_ctrl_c_to_the_terminal_stops_a_local_cluster_in_order(tmp_path):
    """A terminal's Ctrl-C is SIGINT to the service's whole process group, the ``dask-local``
    nanny and worker processes included: they died with KeyboardInterrupt tracebacks on the
    terminal. Now they never see it; the service stops in its own order (runs in flight
    finish), closes the cluster without the scheduler's CRITICAL line, and exits 0."""
    root = make_root(tmp_path, "dask-local:2")
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {**os.environ, "KBWATCH_TEST_DASK_WORKER": "1", "KBWATCH_TEST_MARKS": str(marks)}
    out = tmp_path / "watch.out"
    with open(out, "wb") as sink:
        proc = subprocess.Popen([sys.executable, str(REPO / "run.py"), "watch", "--root", str(root)], env=env,
                                stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)  # as a shell's job
    try:
        names = drop_slow(root / "p", 4, 2.0)
        deadline = time.monotonic() + 120
        while not any(marks.iterdir()):
            assert proc.poll() is None and time.monotonic() < deadline, out.read_text(errors="replace")[-3000:]
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    text = out.read_text(errors="replace")
    assert code == 0, text[-3000:]
    for bad in ("Traceback", "KeyboardInterrupt", "CRITICAL"):
        assert bad not in text, text[-3000:]
    assert "received SIGINT" in text
    # nothing lost: each file is ingested or still waiting in sources/
    manifest = json.loads((root / "p" / "manifest.json").read_text(encoding="utf-8"))
    done = {f["name"] + f["ext"] for f in manifest["files"]}
    assert done, text[-3000:]  # the parses in flight on the workers finished
    for name in names:
        assert name in done or (root / "p" / "sources" / name).exists(), name
    # and the cluster's worker processes are gone with the service
    workers = {int(m.name.rsplit(".", 1)[1]) for m in marks.iterdir()}
    deadline = time.monotonic() + 20
    while any(process_running(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(process_running(pid) for pid in workers)
