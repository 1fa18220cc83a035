"""Fault injection: SIGKILL a real ``kbwatch watch`` at random moments during a burst.

300 files arrive across 3 projects over the first kill cycles (some while the
service is down, some during its startup scan, some while it runs); the
service is SIGKILLed at a random moment at least 20 times and restarted each
time; some documents get a second version along the way. A final clean run
drains what is left and stops on SIGTERM. Then: every file content is either
archived with a manifest version carrying its sha256 or still in sources/; no
duplicate versions; every manifest.json valid; no run left ``running``; no
orphan archive copies; every run record valid JSON.

The seed is printed (``-s`` shows it) and ``KBWATCH_FAULT_SEED`` replays it.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import time
from pathlib import Path

from conftest import kbwatch
from test_watch import Service, sources_left, wait_for

PROJECTS = ("red", "green", "blue")
FILES = 300
KILLS = 22
CHUNKS = 10  # the burst arrives over the first CHUNKS cycles

TOML = """\
[service]
settle_seconds = 0.3
workers = 1
heartbeat_seconds = 0.5
rescan_seconds = 3.0
commit_batch = 16
"""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _manifest(project: Path) -> dict:
    return json.loads((project / "manifest.json").read_text(encoding="utf-8"))  # must be valid JSON


def _versions(project: Path) -> dict[str, list[str]]:
    return {f["name"]: [v["hash"] for v in f["versions"]] for f in _manifest(project)["files"]}


def _drained(root: Path) -> bool:
    """Nothing queued or in flight, and what is left in sources/ is waiting for a reason."""
    if all(not sources_left(root / p) for p in PROJECTS):
        return True
    db = sqlite3.connect(root / ".kbwatch" / "journal.sqlite3", timeout=5)
    try:
        row = db.execute("select queue, in_flight, heartbeat from service where id = 1").fetchone()
        if not row or row[0] or row[1] or time.time() - (row[2] or 0) > 3:
            return False
        for p in PROJECTS:
            for rel in sources_left(root / p):
                last = db.execute(
                    "select outcome, retryable, next_attempt_at, attempts from runs where project = ? and source = ? "
                    "order by rowid desc limit 1", (p, f"sources/{rel}")).fetchone()
                if last is None or last[0] not in ("failed", "conflict"):
                    return False
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        db.close()


def test_sigkill_at_random_moments_during_a_burst(tmp_path):
    seed = int(os.environ.get("KBWATCH_FAULT_SEED", time.time_ns() % 2**32))
    print(f"\nfault-injection seed: {seed} (KBWATCH_FAULT_SEED={seed} replays it)")
    rng = random.Random(seed)
    root = tmp_path / "kb"
    root.mkdir()
    (root / "kbwatch.toml").write_text(TOML, encoding="utf-8")
    kbwatch("init", *PROJECTS, root=root, check=True)

    files = []  # (project, rel under sources/, content)
    for i in range(FILES):
        project = PROJECTS[i % len(PROJECTS)]
        rel = f"d{i:03d}.md" if i % 5 else f"sub{i % 4}/d{i:03d}.txt"
        body = "".join(f"line {j} of document {i}\n" for j in range(rng.randint(1, 400)))
        files.append((project, rel, f"# Document {i}\n{body}"))
    chunks = [files[k::CHUNKS] for k in range(CHUNKS)]
    expected: list[tuple[str, str, str]] = []  # every content that was ever dropped

    def drop(batch):
        for project, rel, content in batch:
            path = root / project / "sources" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
            expected.append((project, rel, content))

    svc = Service(root, tmp_path)
    kill_log = []
    try:
        for cycle in range(KILLS):
            svc.start(wait_ready=False)
            t0 = time.monotonic()
            if cycle < CHUNKS:
                if rng.random() < 0.3:
                    drop(chunks[cycle])  # dropped while the service is starting
                else:
                    time.sleep(rng.uniform(0.0, 1.5))
                    drop(chunks[cycle])
            if cycle == CHUNKS // 2:
                # second versions of documents already in the manifest
                for project, rel, content in list(expected)[:60]:
                    name = rel.rsplit(".", 1)[0]
                    if f"sha256:{_digest(content)}" in _versions(root / project).get(name, []) \
                            and not (root / project / "sources" / rel).exists():
                        drop([(project, rel, content + "second version\n")])
            delay = rng.uniform(0.2, 3.5)
            time.sleep(max(0.0, delay - (time.monotonic() - t0)))
            assert svc.proc.poll() is None, f"the service died by itself in cycle {cycle}\n{svc.log()[-3000:]}"
            svc.kill()
            kill_log.append(round(time.monotonic() - t0, 2))
        print(f"killed {len(kill_log)} times after {kill_log} s")
        # the final clean run drains what is left
        svc.start(wait_ready=True)
        wait_for(lambda: _drained(root), 120, "the final run to drain", interval=0.5, proc=svc)
        code, took = svc.terminate(timeout=10.0)
        assert code == 0, svc.log()[-3000:]
    finally:
        svc.ensure_dead()

    ingested = left = 0
    for project in PROJECTS:
        path = root / project
        versions = _versions(path)
        for name, hashes in versions.items():
            assert len(hashes) == len(set(hashes)), f"duplicate version of {project}/{name}: {hashes}"
        archived = [p.relative_to(path).as_posix() for p in (path / "archive").rglob("*")
                    if p.is_file() and not _is_temp(p)]
        listed = {v["archived"] for f in _manifest(path)["files"] for v in f["versions"]}
        assert sorted(archived) == sorted(listed), "orphan or missing archive copies"
        for rec in (path / "runs").glob("ingest-*.json"):
            json.loads(rec.read_text(encoding="utf-8"))
    for project, rel, content in expected:
        path = root / project
        name = rel.rsplit(".", 1)[0]
        digest = _digest(content)
        hashes = _versions(path).get(name, [])
        src = path / "sources" / rel
        if f"sha256:{digest}" in hashes:
            f = next(f for f in _manifest(path)["files"] if f["name"] == name)
            v = next(v for v in f["versions"] if v["hash"] == f"sha256:{digest}")
            assert hashlib.sha256((path / v["archived"]).read_bytes()).hexdigest() == digest
            ingested += 1
        else:
            assert src.is_file() and _digest(src.read_text(encoding="utf-8")) == digest, f"{project}/{rel} lost"
            left += 1
    db = sqlite3.connect(root / ".kbwatch" / "journal.sqlite3")
    try:
        assert db.execute("select count(*) from runs where outcome in ('running', 'queued')").fetchone()[0] == 0
    finally:
        db.close()
    recovered = sum(p.read_text(errors="replace").count("recovered run ") for p in tmp_path.glob("watch-*.log"))
    print(f"{len(expected)} contents dropped: {ingested} archived, {left} still in sources/; "
          f"{recovered} interrupted run(s) recovered at restarts")
    assert ingested >= len(expected) * 0.9, "the final clean run should have ingested nearly everything"
    # temp files of writes a SIGKILL interrupted (atomic_write/durable_copy: ".<name>.<hex>.tmp")
    # must not pile up in archive/, parsed/, runs/ or the project folder
    leftovers = [p.relative_to(root).as_posix() for project in PROJECTS for p in (root / project).rglob("*")
                 if _is_temp(p) and "sources" not in p.relative_to(root / project).parts[:1]]
    assert not leftovers, f"temp files left by interrupted writes, never cleaned up: {leftovers}"


def _is_temp(path: Path) -> bool:
    return path.is_file() and path.name.startswith(".") and path.name.endswith(".tmp")
