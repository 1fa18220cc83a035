#!/usr/bin/env python3
"""Benchmark the ``kbwatch watch`` service (issue 3), against a real subprocess.

In one run it prints:

1. latency: for ``--latency-files`` text files dropped one at a time (each
   written in two parts 0.2 s apart), the time from the file's last write to
   its ``parsed/<name>.md`` appearing, with ``settle_seconds = 1`` (target
   p50 <= 1.5 s; the settle wait itself is 1 s of it);
2. drain: a ``--burst`` of small text files (default 1,000; 300 B .. 2 KB,
   some in sub-folders) written at once into a running service, timed from
   the first write until sources/ is empty and every file is in the manifest,
   against one-shot ``kbwatch ingest --root R`` (a subprocess, wall time with
   interpreter start) of the same files in a fresh root (target <= 1.2x);
3. idle cost: RSS (max of 1 s samples) and CPU (user+system over the window,
   as % of one core) of the service process and its children (psutil),
   over ``--idle`` seconds (default 60), with native events and with
   ``polling = true``, ``poll_interval_seconds = 10``, over a tree of
   ``--idle-files`` (default 10,000) files in sources/ (targets: RSS <= 150 MB;
   CPU <= 2% native, <= 10% polling). The files carry the ``*.part`` ignore
   pattern so that the service leaves them alone (an idle service over 10,000
   documents waiting to be ingested is not idle); the observers still see and
   stat every one of them, which is the cost measured.

    python bench/watch_latency.py            # full run (about 6 minutes)
    python bench/watch_latency.py --quick    # about 1.5 minutes, smaller sizes
    python bench/watch_latency.py --out bench/results-watch-raw.md

Timings are printed, never asserted. The machine may be shared: compare runs.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
PROJECT = "bench"

WORDS = ("alpha beta gamma delta service watcher archive manifest project parsed sources "
         "知识 文档 解析 归档 项目 版本 检索").split()


def toml(settle: float = 1.0, polling="false", poll_interval: float = 10.0, extra: str = "") -> str:
    pol = polling if polling in ("true", "false") else f'"{polling}"'
    return (f"[service]\nsettle_seconds = {settle}\npolling = {pol}\npoll_interval_seconds = {poll_interval}\n"
            f"{extra}\n")


def make_root(base: Path, name: str, config: str) -> Path:
    root = base / name
    root.mkdir()
    (root / "kbwatch.toml").write_text(config, encoding="utf-8")
    subprocess.run([sys.executable, str(REPO / "run.py"), "init", PROJECT, "--root", str(root)],
                   check=True, capture_output=True)
    return root


def text(rng: random.Random, i: int) -> str:
    n = rng.randint(300, 2000)
    out = [f"# Document {i}\n\n"]
    size = len(out[0])
    while size < n:
        line = " ".join(rng.choice(WORDS) for _ in range(12)) + "\n"
        out.append(line)
        size += len(line.encode())
    return "".join(out)


class Service:
    def __init__(self, root: Path, log: Path):
        self.root, self.logpath = root, log
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "Service":
        with open(self.logpath, "wb") as fh:
            self.proc = subprocess.Popen([sys.executable, str(REPO / "run.py"), "watch", "--root", str(self.root)],
                                         stdout=fh, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while "kbwatch watching" not in self.logpath.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the service did not start:\n{self.logpath.read_text(errors='replace')[-2000:]}")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


# --------------------------------------------------------------------------
# 1. latency
# --------------------------------------------------------------------------


def bench_latency(base: Path, n: int, rng: random.Random) -> dict:
    root = make_root(base, "latency", toml(settle=1.0))
    src, parsed = root / PROJECT / "sources", root / PROJECT / "parsed"
    lat: list[float] = []
    with Service(root, base / "latency.log"):
        for i in range(n):
            body = text(rng, i)
            path = src / f"lat{i:03d}.md"
            half = len(body) // 2
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(body[:half])
            time.sleep(0.2)
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(body[half:])
            last = time.monotonic()
            target = parsed / f"lat{i:03d}.md"
            deadline = last + 30
            while not target.exists():
                if time.monotonic() > deadline:
                    raise SystemExit(f"lat{i:03d}.md never parsed")
                time.sleep(0.005)
            lat.append(time.monotonic() - last)
            time.sleep(rng.uniform(0.1, 0.4))
    return {"n": n, "p50": statistics.median(lat), "p95": pct(lat, 0.95), "min": min(lat), "max": max(lat)}


# --------------------------------------------------------------------------
# 2. drain vs ingest
# --------------------------------------------------------------------------


def burst_files(n: int, rng: random.Random) -> list[tuple[str, str]]:
    out = []
    for i in range(n):
        rel = f"b{i:04d}.md" if i % 10 else f"sub{i % 7}/b{i:04d}.txt"
        out.append((rel, text(rng, i)))
    return out


def write_files(src: Path, files: list[tuple[str, str]]) -> None:
    for rel, body in files:
        p = src / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body, encoding="utf-8")


def manifest_count(project: Path) -> int:
    import json

    try:
        return len(json.loads((project / "manifest.json").read_text(encoding="utf-8"))["files"])
    except (OSError, ValueError, KeyError):
        return -1


def count_files(folder: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(folder))


def bench_drain(base: Path, n: int, rng: random.Random) -> dict:
    files = burst_files(n, rng)
    # one-shot ingest
    root_i = make_root(base, "ingest", toml(settle=1.0))
    write_files(root_i / PROJECT / "sources", files)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, str(REPO / "run.py"), "ingest", "--root", str(root_i)],
                       capture_output=True, text=True)
    ingest_s = time.monotonic() - t0
    if r.returncode != 0 or manifest_count(root_i / PROJECT) != n:
        raise SystemExit(f"ingest failed ({r.returncode}): {r.stdout[-500:]} {r.stderr[-1500:]}")
    # the service
    root_w = make_root(base, "watch", toml(settle=1.0))
    src = root_w / PROJECT / "sources"
    with Service(root_w, base / "drain.log"):
        t0 = time.monotonic()
        write_files(src, files)
        t_written = time.monotonic()
        deadline = t0 + max(300, ingest_s * 10)
        while count_files(src) or manifest_count(root_w / PROJECT) != n:
            if time.monotonic() > deadline:
                raise SystemExit(f"the service did not drain: {count_files(src)} left")
            time.sleep(0.05)
        drain_s = time.monotonic() - t0
        after_write = time.monotonic() - t_written
    return {"n": n, "ingest": ingest_s, "drain": drain_s, "after_last_write": after_write,
            "write": t_written - t0, "ratio": drain_s / ingest_s}


# --------------------------------------------------------------------------
# 3. idle cost
# --------------------------------------------------------------------------


def tree(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return [proc]


def cpu_seconds(procs: dict[int, psutil.Process], last: dict[int, float]) -> None:
    for pid, p in procs.items():
        try:
            t = p.cpu_times()
            last[pid] = t.user + t.system
        except psutil.NoSuchProcess:
            pass


def bench_idle(base: Path, mode: str, nfiles: int, seconds: float, warmup: float) -> dict:
    polling = "true" if mode == "polling" else "false"
    root = make_root(base, f"idle-{mode}", toml(settle=1.0, polling=polling, poll_interval=10.0))
    src = root / PROJECT / "sources"
    per_dir = 100
    for d in range(max(1, nfiles // per_dir)):
        folder = src / f"batch{d:03d}"
        folder.mkdir()
        for k in range(per_dir):
            (folder / f"f{k:03d}.part").write_bytes(b"partial download\n")
    with Service(root, base / f"idle-{mode}.log") as svc:
        main = psutil.Process(svc.proc.pid)
        time.sleep(warmup)  # the first snapshot / inotify watches
        start: dict[int, float] = {}
        end: dict[int, float] = {}
        procs = {p.pid: p for p in tree(main)}
        cpu_seconds(procs, start)
        t0 = time.monotonic()
        rss_max = 0
        nproc = len(procs)
        while time.monotonic() - t0 < seconds:
            now = {p.pid: p for p in tree(main)}
            for pid, p in now.items():
                if pid not in procs:  # a child started during the window: count it from 0
                    procs[pid] = p
                    start[pid] = 0.0
            nproc = max(nproc, len(now))
            rss = 0
            for p in now.values():
                try:
                    rss += p.memory_info().rss
                except psutil.NoSuchProcess:
                    pass
            rss_max = max(rss_max, rss)
            cpu_seconds(procs, end)  # keep the last reading of children that exit
            time.sleep(1.0)
        cpu_seconds(procs, end)
        wall = time.monotonic() - t0
        used = sum(end.get(pid, start[pid]) - start[pid] for pid in start)
    return {"mode": mode, "files": nfiles, "seconds": wall, "rss_mb": rss_max / 2**20,
            "cpu_pct": 100.0 * used / wall, "processes": nproc}


# --------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes and shorter idle windows")
    ap.add_argument("--latency-files", type=int, default=None)
    ap.add_argument("--burst", type=int, default=None)
    ap.add_argument("--idle", type=float, default=None, help="seconds of each idle window")
    ap.add_argument("--idle-files", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None, help="also write the table as Markdown to this file")
    args = ap.parse_args()
    n_lat = args.latency_files or (10 if args.quick else 40)
    burst = args.burst or (300 if args.quick else 1000)
    idle = args.idle or (15.0 if args.quick else 60.0)
    warmup = 5.0 if args.quick else 12.0
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="kbwatch-bench-"))
    rows = []
    try:
        print(f"cores: {os.cpu_count()}, load before: {os.getloadavg()[0]:.2f}", flush=True)
        lat = bench_latency(base, n_lat, rng)
        print(f"latency (settle 1 s, {lat['n']} files): p50 {lat['p50']:.3f} s, p95 {lat['p95']:.3f} s "
              f"(min {lat['min']:.3f}, max {lat['max']:.3f})", flush=True)
        rows.append(("latency p50, last write -> parsed/ (settle 1 s)", "<= 1.5 s", f"{lat['p50']:.2f} s",
                     lat["p50"] <= 1.5))
        rows.append(("latency p95", "-", f"{lat['p95']:.2f} s", None))
        dr = bench_drain(base, burst, rng)
        print(f"drain {dr['n']} files: service {dr['drain']:.2f} s from the first write "
              f"({dr['after_last_write']:.2f} s after the last, writing took {dr['write']:.2f} s); "
              f"one-shot ingest {dr['ingest']:.2f} s; ratio {dr['ratio']:.2f}x", flush=True)
        rows.append((f"drain a {dr['n']}-file burst vs one-shot ingest", "<= 1.2x",
                     f"{dr['drain']:.2f} s vs {dr['ingest']:.2f} s = {dr['ratio']:.2f}x", dr["ratio"] <= 1.2))
        for mode, cpu_target in (("native", 2.0), ("polling", 10.0)):
            r = bench_idle(base, mode, args.idle_files, idle, warmup)
            print(f"idle {mode} over {r['files']} files, {r['seconds']:.0f} s: RSS max {r['rss_mb']:.1f} MB, "
                  f"CPU {r['cpu_pct']:.2f}% of one core ({r['processes']} process(es))", flush=True)
            rows.append((f"idle RSS, {mode}, {r['files']} files", "<= 150 MB", f"{r['rss_mb']:.1f} MB",
                         r["rss_mb"] <= 150))
            rows.append((f"idle CPU, {mode}{', 10 s interval' if mode == 'polling' else ''}, {r['seconds']:.0f} s",
                         f"<= {cpu_target:g}%", f"{r['cpu_pct']:.2f}%", r["cpu_pct"] <= cpu_target))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    table = ["| measure | target | measured | met? |", "|---|---|---|---|"]
    for what, target, got, ok in rows:
        table.append(f"| {what} | {target} | {got} | {'-' if ok is None else ('yes' if ok else '**no**')} |")
    print("\n" + "\n".join(table))
    if args.out:
        args.out.write_text("\n".join(table) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
