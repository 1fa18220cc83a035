"""Shared fixtures: a KB root builder, CLI runners, paths to fixtures and ../shared."""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
FIXTURES = REPO / "tests" / "fixtures"
INGEST_FIXTURES = FIXTURES / "ingest"

os.environ.setdefault("KBWATCH_DISABLE_ENTRYPOINTS", "1")  # tests load plugins explicitly

# the scanner's build cache (kbwatch.plugins.scanning.build_cache) for this run only, shared by
# the xdist workers (they inherit the environment) and every subprocess; never the user's own
_MADE_CACHE = None
if "KBWATCH_CACHE_DIR" not in os.environ:
    _MADE_CACHE = os.environ["KBWATCH_CACHE_DIR"] = tempfile.mkdtemp(prefix="kbwatch-test-cache-")


def pytest_configure(config):
    """Compile kbwatch's modules once, in the controller (not in each xdist worker). Where
    ``PYTHONDONTWRITEBYTECODE`` is set (this sandbox, and CI images like it) nothing writes them
    otherwise, and every process the tests start (hundreds of CLI commands, services and their
    workers) compiled kbwatch from source: ~0.25 s of CPU each (bench/cli_start.py, 0.68 against
    0.45 s for ``kbwatch --help``). Python still reads what is compiled; up to date, this is a
    stat per file."""
    if hasattr(config, "workerinput"):
        return
    import compileall

    for folder in ("pipeline", "plugins"):
        compileall.compile_dir(str(REPO / folder), quiet=2)
    for name in ("run.py", "__main__.py"):
        if (REPO / name).exists():
            compileall.compile_file(str(REPO / name), quiet=2)
    if _MADE_CACHE:
        _fill_build_cache()


def _fill_build_cache() -> None:
    """Build the scanners' engines once, in a subprocess, before the xdist workers start: their
    build cache is this run's own, so otherwise each worker collecting the engine's tests and
    each early subprocess that scans built it cold (~3 s of CPU each, ~0.3 s from the cache).
    Best effort: a failure here leaves the cache cold, which the tests cope with."""
    code = ("from kbwatch.plugins.scan_injection import engine; engine(); "
            "from kbwatch.plugins.scan_secrets import engine; engine()")
    try:
        subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        pass


def pytest_sessionfinish(session, exitstatus):
    if _MADE_CACHE and not hasattr(session.config, "workerinput"):
        shutil.rmtree(_MADE_CACHE, ignore_errors=True)


def process_running(pid: int) -> bool:
    """True while ``pid`` is a process that has not ended (a zombie has ended: in a container,
    the init that inherits an orphan may never reap it)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def shared_or_skip(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared is absent ({path} not found); CI provides it")
    return path


def schema(name: str) -> dict:
    """A JSON schema from ../shared/schemas, else the copy in tests/fixtures/schemas."""
    for base in (SHARED / "schemas", FIXTURES / "schemas"):
        if (base / name).exists():
            return json.loads((base / name).read_text(encoding="utf-8"))
    pytest.skip(f"schema {name} not available")


def kbwatch(*args: str, root: Path, env: dict | None = None, timeout: float = 300, check: bool = False,
            input: str | None = None) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess (``python run.py``)."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [sys.executable, str(REPO / "run.py"), *args, "--root", str(root)],
        capture_output=True, text=True, env=full_env, timeout=timeout, input=input,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"kbwatch {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def paused_cli(*args: str, root: Path, point: str, flag: Path, **popen) -> subprocess.Popen:
    """Start the real CLI held at the test checkpoint ``point`` (the timed pause of
    ``kbwatch.pipeline.checkpoints``: it goes on when the test deletes ``flag``, or after 60 s);
    returns once it waits there. ``popen``: more ``subprocess.Popen`` arguments (default: text pipes)."""
    import time

    popen = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, **popen}
    proc = subprocess.Popen([sys.executable, str(REPO / "run.py"), *args, "--root", str(root)],
                            env={**os.environ, "KBWATCH_TEST_PAUSE": point, "KBWATCH_TEST_PAUSE_FILE": str(flag),
                                 "KBWATCH_TEST_PAUSE_SECONDS": "60"}, **popen)
    deadline = time.monotonic() + 120
    while not flag.exists():
        assert proc.poll() is None and time.monotonic() < deadline, (point, proc.communicate())
        time.sleep(0.05)
    return proc


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "kb"
    r.mkdir()
    return r


@pytest.fixture
def cli(root: Path):
    """In-process CLI call: returns (exit_code, stdout, stderr)."""
    from click.testing import CliRunner

    from kbwatch.pipeline.cli import get_cli

    group = get_cli()

    def run(*args: str, **kw):
        runner = CliRunner()
        result = runner.invoke(group, [*args, "--root", str(root)], catch_exceptions=False, **kw)
        return result
    return run


@pytest.fixture
def project(root: Path, cli) -> Path:
    result = cli("init", "demo")
    assert result.exit_code == 0, result.output
    return root / "demo"


def ingest(root: Path, *names: str):
    """One-shot ingest in process; returns (totals, runs)."""
    from kbwatch.pipeline.ingest import run_ingest
    from kbwatch.pipeline.kb import KnowledgeBase

    kb = KnowledgeBase(root)
    try:
        return run_ingest(kb, list(names))
    finally:
        kb.close()


def read_manifest(project: Path) -> dict:
    return json.loads((project / "manifest.json").read_text(encoding="utf-8"))


def index_rows(project: Path) -> list[list[str]]:
    from kbwatch.pipeline.formats.project_md import ProjectMd

    pm = ProjectMd.parse((project / "project.md").read_text(encoding="utf-8"), project.name, "zh")
    return list(pm.rows.values())


def run_records(project: Path) -> list[dict]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((project / "runs").glob("ingest-*.json"))]


def open_at_once(open_and_close, threads: int = 6) -> list[str]:
    """Call ``open_and_close()`` from ``threads`` threads released together (a barrier); the
    ``repr`` of every exception raised, for the assertion (fresh SQLite files opened at once)."""
    import threading

    errors: list[str] = []
    start = threading.Barrier(threads)

    def run():
        start.wait()
        try:
            open_and_close()
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(repr(exc))

    started = [threading.Thread(target=run) for _ in range(threads)]
    for t in started:
        t.start()
    for t in started:
        t.join(timeout=120)
    return errors


def free_port() -> int:
    """A free port below the kernel's ephemeral range: a scheduler restarted on it must find it
    free, and a port the kernel hands out for outgoing connections (another test's client) may be
    taken by one the moment the killed scheduler lets it go (CI saw "Scheduler failed to start")."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(min(20000, low - 1000), low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port below the ephemeral range")
