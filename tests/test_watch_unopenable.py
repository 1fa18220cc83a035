"""Files `watch` cannot open or read as files: recorded once, never a queue that never empties.

Found by the nineteenth session's hostile-colleague review: a socket, or a file without read
permission, dropped into sources/ sat in the stability wait forever (the wait took any error
opening it for a writer's lock): `status` said `queue: 1` for good, and no run, log line or
reason ever said why. One-shot `ingest` recorded both.

Real processes: a `kbwatch watch` subprocess, a bound UNIX socket, a FIFO, and a file with
mode 000 that the service really cannot open (as root, the service runs without
CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH, dropped from its bounding set before exec).
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import subprocess
import sys
import time

from conftest import REPO, kbwatch
from test_watch import Service, make_root, service, wait_for  # noqa: F401 - service is a fixture

EXTRA = "rescan_seconds = 1.0\nlocked_patience_seconds = 2.0"


def _status(root) -> dict:
    return json.loads(kbwatch("status", "--json", root=root, check=True).stdout)


def _runs(project, source: str) -> list[str]:
    out = []
    for p in sorted((project / "runs").glob("ingest-*.json")):
        record = json.loads(p.read_text(encoding="utf-8"))
        if record["inputs"][0]["path"] == source:
            out.append(record["diagnostics"][0]["message"])
    return out


def _without_dac_override() -> None:
    """In the child before exec: as root, give up reading what file modes forbid."""
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
            if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                raise OSError(ctypes.get_errno(), "PR_CAPBSET_DROP")


def test_a_socket_and_a_fifo_are_refused_once_and_the_queue_empties(tmp_path, service):
    root = make_root(tmp_path, extra=EXTRA)
    svc = service(root).start()
    sources = root / "p" / "sources"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(sources / "socket.md"))
        os.mkfifo(sources / "pipe.md")
        (sources / "ok.md").write_text("# ok\n\nfine\n", encoding="utf-8")
        project = root / "p"
        for name in ("socket.md", "pipe.md"):
            wait_for(lambda: _runs(project, f"sources/{name}"), 60, f"a run of {name}", proc=svc)
        wait_for(lambda: _runs(project, "sources/ok.md"), 60, "ok.md", proc=svc)
        time.sleep(4)  # several rescans (rescan_seconds = 1): none takes them again
        for name in ("socket.md", "pipe.md"):
            [message] = _runs(project, f"sources/{name}")
            assert message.startswith("outcome=failed:") and "is not a document" in message, message
        status = _status(root)
        assert status["queue"] == 0 and status["in_flight"] == 0, status
        assert status["projects"][0]["documents"] == 1 and status["projects"][0]["failed"] == 2
    finally:
        sock.close()
        code, _ = svc.terminate()
    assert code == 0


def test_a_file_that_will_not_open_is_recorded_then_taken_when_it_opens(tmp_path):
    root = make_root(tmp_path, extra=EXTRA)
    project = root / "p"
    locked = project / "sources" / "locked.md"
    locked.write_text("# Locked\n\nThe plans are in the second drawer.\n", encoding="utf-8")
    locked.chmod(0)
    svc = Service(root, tmp_path)
    svc.logfile = tmp_path / "watch-nodac.log"
    with open(svc.logfile, "wb") as fh:
        svc.proc = subprocess.Popen([sys.executable, str(REPO / "run.py"), "watch", "--root", str(root)],
                                    stdout=fh, stderr=subprocess.STDOUT, cwd=str(REPO),
                                    preexec_fn=_without_dac_override)
    try:
        wait_for(lambda: "kbwatch watching" in svc.log(), 60, "the service to start", proc=svc)
        wait_for(lambda: _runs(project, "sources/locked.md"), 60, "a run of the unreadable file", proc=svc)
        time.sleep(4)  # several rescans: it is not taken again while it still will not open
        [message] = _runs(project, "sources/locked.md")
        assert message.startswith("outcome=failed: cannot open the file: Permission denied"), message
        assert "kbwatch retry" in message
        status = _status(root)
        assert status["queue"] == 0 and status["projects"][0]["failed"] == 1, status
        assert "cannot open the file" in svc.log()

        locked.chmod(0o644)  # the lock is gone: taken at once (its event, or the next rescan)
        wait_for(lambda: any(m.startswith("outcome=done") for m in _runs(project, "sources/locked.md")), 60,
                 "the file to be taken once it opens", proc=svc)
        assert not locked.exists()
        assert (project / "parsed" / "locked.md").read_text(encoding="utf-8").count("second drawer") == 1
        assert _status(root)["projects"][0]["failed"] == 0
    finally:
        code, _ = svc.terminate()
    assert code == 0


def test_locked_patience_seconds_is_checked(tmp_path):
    root = tmp_path / "kb"
    root.mkdir()
    (root / "kbwatch.toml").write_text("[service]\nlocked_patience_seconds = -1\n", encoding="utf-8")
    out = kbwatch("status", root=root)
    assert out.returncode == 2 and "locked_patience_seconds" in out.stderr
