#!/usr/bin/env python3
"""What a burst of larger texts leaves in ``kbwatch watch``'s main process (issue 12, the soak).

Starts a real ``python run.py watch`` on a fresh root (one project,
``KBWATCH_DEBUG_MEMORY`` on), warms it with small Markdown files, then drops
``--rounds`` bursts of ``--burst`` larger texts (0.5–2 MB of English/Chinese
prose each, as ``bench/soak.py`` makes them) plus a few small files. After
each burst is committed it waits two heartbeats (the heartbeat trims the heap)
and prints the main process's resident anonymous memory (``RssAnon``: file
pages come and go with the page cache) and the service's last ``memory:``
report (glibc in use / free but held, SQLite, pymalloc blocks).

    python bench/burst.py                 # 6 bursts of 4
    python bench/burst.py --rounds 10 --burst 4 --seed 3

Figures are printed, never asserted. glibc's ``MALLOC_*`` variables are
removed from the service's environment so it runs with the library defaults.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from soak import prose  # noqa: E402  (the soak's own generator)


def anon_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


def smaps_top(pid: int, n: int = 8) -> str:
    """The largest resident anonymous mappings: [heap] (glibc's main arena), the other
    arenas' heaps (64 MB reservations), everything else (pymalloc arenas, mmapped blocks)."""
    rows, cur = [], None
    with open(f"/proc/{pid}/smaps") as fh:
        for line in fh:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                parts = line.split()
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                cur = {"name": parts[5] if len(parts) > 5 else "", "size": (hi - lo) >> 10, "anon": 0}
                rows.append(cur)
            elif line.startswith("Anonymous:") and cur is not None:
                cur["anon"] = int(line.split()[1])
    heap = sum(r["anon"] for r in rows if r["name"] == "[heap]")
    arenas = sum(r["anon"] for r in rows if not r["name"] and r["size"] in range(60_000, 65_537))
    other = sum(r["anon"] for r in rows if not r["name"] and r["size"] not in range(60_000, 65_537))
    top = sorted((r for r in rows if not r["name"]), key=lambda r: -r["anon"])[:n]
    return (f"[heap] {heap / 1024:.1f} thread-arenas {arenas / 1024:.1f} other-anon {other / 1024:.1f}; top "
            + " ".join(f"{r['anon'] >> 10}/{r['size'] >> 10}" for r in top))


def wait_drained(sources: Path, proc: subprocess.Popen, timeout: float = 600) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            raise SystemExit("the service died")
        if not any(p.is_file() for p in sources.rglob("*")):
            return time.monotonic() - t0
        time.sleep(0.2)
    raise SystemExit("not drained in time")


def last_report(log: Path) -> str:
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if "memory: rss" in ln]
    if not lines:
        return ""
    m = re.search(r"glibc in-use ([\d.]+) free ([\d.]+).*sqlite ([\d.]+), pyblocks (\d+)", lines[-1])
    return f"in-use {m.group(1)} free {m.group(2)} sqlite {m.group(3)} pyblocks {int(m.group(4)):,}" if m else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--burst", type=int, default=4, help="larger texts per burst")
    ap.add_argument("--warm", type=int, default=150, help="small files before the baseline")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--heartbeat", type=float, default=2.0)
    ap.add_argument("--toml", default="", help="extra kbwatch.toml text (e.g. to drop a stage)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="kbwatch-burst-"))
    root = base / "kb"
    root.mkdir()
    (root / "kbwatch.toml").write_text(
        f"[service]\nsettle_seconds = 0.5\nheartbeat_seconds = {args.heartbeat}\n{args.toml}\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    env["KBWATCH_DEBUG_MEMORY"] = str(args.heartbeat)
    subprocess.run([sys.executable, str(REPO / "run.py"), "init", "p", "--root", str(root)], check=True,
                   capture_output=True, env=env)
    sources = root / "p" / "sources"
    log = base / "service.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, str(REPO / "run.py"), "watch", "--root", str(root)],
                                stdout=fh, stderr=subprocess.STDOUT, env=env)
    n = 0

    def drop(size: int, stem: str) -> None:
        nonlocal n
        n += 1
        tmp = base / f".{n}.tmp"
        tmp.write_bytes(prose(rng, size, f"{stem} {n}").encode())
        os.rename(tmp, sources / f"{stem}-{n}.md")

    try:
        deadline = time.monotonic() + 120
        while "kbwatch watching" not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(log.read_text(errors="replace")[-2000:])
            time.sleep(0.1)
        for _ in range(args.warm):
            drop(int(rng.lognormvariate(7.5, 0.8)), "small")
        wait_drained(sources, proc)
        time.sleep(3 * args.heartbeat)
        base_kb = anon_kb(proc.pid)
        print(f"baseline after {args.warm} small files: anon {base_kb / 1024:.1f} MB  {last_report(log)}\n  {smaps_top(proc.pid)}")
        for r in range(1, args.rounds + 1):
            sizes = [rng.randint(500_000, 2_000_000) for _ in range(args.burst)]
            for s in sizes:
                drop(s, "large")
            for _ in range(10):
                drop(int(rng.lognormvariate(7.5, 0.8)), "small")
            took = wait_drained(sources, proc)
            time.sleep(3 * args.heartbeat)
            kb = anon_kb(proc.pid)
            print(f"burst {r}: {args.burst} texts {sum(sizes) / 1e6:.1f} MB in {took:.0f} s -> anon "
                  f"{kb / 1024:.1f} MB ({kb / base_kb:.2f}x)  {last_report(log)}\n  {smaps_top(proc.pid)}", flush=True)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
