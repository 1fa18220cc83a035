"""Helpers for the status-page and notification tests: a ``kbwatch watch`` subprocess
(optionally with ``--http``) on a real root, and a Chromium driven by Playwright."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, kbwatch

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-quic", "--disable-dev-shm-usage",
         "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"]


# the [project] and [service] tables every page/notify test service starts with
SERVICE_TOML = """\
[project]
language = "en"

[service]
settle_seconds = 0.3
workers = 1
heartbeat_seconds = 1.0
"""


def wait_for(pred, timeout: float, what: str, log=None, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{(log() if log else '')[-4000:]}")
        time.sleep(interval)


class Watch:
    """``kbwatch watch`` in a subprocess; stderr in a log file."""

    def __init__(self, root: Path, logfile: Path, args: tuple[str, ...] = (), env: dict | None = None):
        self.root, self.logfile = root, logfile
        with open(logfile, "wb") as fh:
            self.proc = subprocess.Popen([sys.executable, str(REPO / "run.py"), "watch", "--root", str(root), *args],
                                         stdout=fh, stderr=subprocess.STDOUT, cwd=str(REPO),
                                         env={**os.environ, **(env or {})})
        wait_for(lambda: "kbwatch watching" in self.log() or self.proc.poll() is not None, 60,
                 "the service to start", self.log)
        if self.proc.poll() is not None:
            raise AssertionError(f"the service exited {self.proc.returncode}\n{self.log()}")
        found = re.search(r"status page at (http://\S+/)", self.log())
        self.url = found.group(1) if found else None

    def log(self) -> str:
        try:
            return self.logfile.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                raise AssertionError(f"no exit within 20 s of SIGTERM\n{self.log()[-4000:]}") from None
        return self.proc.returncode


def make_root(base: Path, toml: str, projects=("docs",)) -> Path:
    root = base / "kb"
    root.mkdir()
    (root / "kbwatch.toml").write_text(toml, encoding="utf-8")
    kbwatch("init", *projects, root=root, check=True)
    return root


def playwright_or_skip():
    """``sync_playwright`` when Playwright and Debian's Chromium are both there, else skip."""
    if not (os.path.exists(CHROMIUM) and shutil.which(CHROMIUM)):
        pytest.skip(f"{CHROMIUM} is absent (apt-get install -y chromium); never `playwright install`")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install playwright)")
    return sync_playwright
