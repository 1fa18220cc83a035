#!/usr/bin/env python3
"""Benchmark the memory and fairness of ``kbwatch watch`` on large text files (issue 12).

What it does: makes a fresh root with two projects, starts a real ``kbwatch
watch`` subprocess (``--repo`` chooses which checkout's run.py), moves a large
Markdown file (``--big-mb``, varied English and Chinese paragraphs under
headings) and a large single-line file (``--line-mb``) into project ``big``,
and, once the first of them has started its run, drops a small file into
project ``other``. Meanwhile it samples, every ``--interval`` seconds:

- the RSS of the whole process tree (the service and every child: parse
  workers, their forkserver), with psutil;
- the age of the service heartbeat in the journal (``service`` table).

It prints the peak RSS (tree, main process, children), the oldest heartbeat
seen against ``[service] heartbeat_seconds``, how long the small file waited
from its drop to ``done``, each big file's outcome and time to done.

    python bench/memory.py                         # 100 MB + 25 MB, this checkout
    python bench/memory.py --repo /work/main       # the same on another checkout
    python bench/memory.py --big-mb 24 --line-mb 0 # one file only

Figures are printed, never asserted (tests/test_bounded_memory.py asserts).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]

PHRASE_BIG = "amethyst lighthouse ledger"
PHRASE_LINE = "cobalt orchard manifest"

_EN = (
    "the quarterly review covers revenue hiring and the migration of the billing service "
    "each team lead should confirm release dates before friday so the schedule can be frozen "
    "we measured a median latency on the staging cluster after the cache change "
    "the supplier agreed to extend the warranty for all units shipped this year "
    "open questions are tracked in the issue board anything older than two weeks is escalated "
    "customer interviews showed that onboarding takes too long for larger teams "
    "the backup job keeps thirty daily and twelve monthly snapshots of every volume "
    "please read the safety instructions before operating the equipment in the workshop "
    "budget for the next phase is capped including contingency and travel "
    "risks include late delivery of hardware and the availability of key engineers"
).split()
_ZH = list(
    "本季度的重点工作是完成计费系统的迁移并保证对现有客户无感知项目组在周五之前确认各模块的发布时间以便冻结整体计划"
    "测试环境中缓存改造后的中位延迟较上月下降明显供应商同意将今年发货设备的保修期延长请在操作设备前阅读安全说明"
    "下一阶段预算上限包含不可预见费用风险包括硬件延迟交付以及关键工程师的可用性会议纪要与会人员同意在试点结束后再做决定"
)


def _sentence(rng: random.Random, n: int) -> str:
    """One sentence, every word drawn: English words or Chinese characters, numbered ``n``."""
    if rng.random() < 0.5:
        words = [rng.choice(_EN) for _ in range(rng.randint(8, 18))]
        return " ".join(words).capitalize() + f" ({n})."
    return "".join(rng.choice(_ZH) for _ in range(rng.randint(14, 40))) + f"{n}。"


_POOL_SIZE = 4096  # sentence bodies (a power of two: one draw of random bits picks one)


def _pool(rng: random.Random) -> list[str]:
    """Sentence bodies to draw from, each ending in ``{}`` for its number: drawing one per sentence
    writes the files ~7x faster than drawing every word (the large-file test writes 125 MB), and
    the numbers keep every sentence distinct."""
    pool = []
    for _ in range(_POOL_SIZE):
        s = _sentence(rng, 0)  # "... (0)." or "...0。"; the English words hold no braces
        pool.append(s[:-4] + "({})." if s.endswith("(0).") else s[:-2] + "{}。")
    return pool


def _sentences(pool: list[str], rng: random.Random, first: int, count: int) -> str:
    """``count`` sentences numbered from ``first``, joined by spaces."""
    bits = _POOL_SIZE.bit_length() - 1
    return " ".join(pool[rng.getrandbits(bits)].format(first + i) for i in range(count))


def write_markdown(path: Path, size: int, phrase: str, seed: int = 1) -> None:
    """``size`` bytes of Markdown: headings, paragraphs of mixed English/Chinese sentences."""
    rng = random.Random(seed)
    pool = _pool(rng)
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"# Large document\n\nThe {phrase} opens this document.\n\n")
        written = fh.tell()
        while written < size:
            parts = []
            if n % 40 == 0:
                parts.append(f"## Section {n // 40}\n\n")
            for _ in range(20):
                parts.append(_sentences(pool, rng, n, rng.randint(2, 6)) + "\n\n")
                n += 1
            block = "".join(parts)
            fh.write(block)
            written += len(block.encode("utf-8"))


def write_single_line(path: Path, size: int, phrase: str, seed: int = 2) -> None:
    """``size`` bytes on one line (no newline at all): mixed English/Chinese sentences."""
    rng = random.Random(seed)
    pool = _pool(rng)
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"The {phrase} opens this line. ")
        written = fh.tell()
        while written < size:
            block = _sentences(pool, rng, n, 200) + " "
            n += 200
            fh.write(block)
            written += len(block.encode("utf-8"))


_PAGE = os.sysconf("SC_PAGE_SIZE")
# Linux lists each thread's children in /proc/PID/task/TID/children: a few small reads per sample
# instead of psutil's walk over every process of the machine (~7 ms a sample, ~40 s of CPU over
# the large-file test's 20 samples a second)
_PROC_CHILDREN = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def _child_pids(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                out += map(int, fh.read().split())
        except (OSError, ValueError):
            pass  # the thread or the process ended meanwhile
    return out


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0  # ended meanwhile


def descendant_pids(pid: int) -> list[int]:
    """Every process below ``pid`` (children, theirs, …), read from /proc."""
    out, todo = [], [pid]
    while todo:
        kids = _child_pids(todo.pop())
        out += kids
        todo += kids
    return out


def tree_rss(proc: psutil.Process) -> tuple[int, int]:
    """(RSS of the process, RSS of all its descendants) in bytes."""
    if _PROC_CHILDREN:
        main = _rss(proc.pid)
        return main, (sum(map(_rss, descendant_pids(proc.pid))) if main else 0)
    try:
        main = proc.memory_info().rss
        kids = proc.children(recursive=True)
    except psutil.Error:
        return 0, 0
    total = 0
    for k in kids:
        try:
            total += k.memory_info().rss
        except psutil.Error:
            pass
    return main, total


class Sampler(threading.Thread):
    """Samples the tree's RSS and the journal heartbeat age until stopped."""

    def __init__(self, pid: int, journal: Path, interval: float):
        super().__init__(daemon=True)
        self.proc = psutil.Process(pid)
        self.journal = journal
        self.interval = interval
        self.stop = threading.Event()
        self.peak_tree = self.peak_main = self.peak_kids = 0
        self.max_heartbeat_age = 0.0
        self.samples = 0

    def heartbeat_age(self) -> float | None:
        if not self.journal.exists():
            return None
        try:
            db = sqlite3.connect(f"file:{self.journal}?mode=ro", uri=True, timeout=1)
            try:
                row = db.execute("select heartbeat, stopped_at from service where id = 1").fetchone()
            finally:
                db.close()
        except sqlite3.Error:
            return None
        if not row or row[0] is None or row[1] is not None:
            return None
        return time.time() - row[0]

    def run(self) -> None:
        last_hb = 0.0
        while not self.stop.is_set():
            main, kids = tree_rss(self.proc)
            self.peak_main = max(self.peak_main, main)
            self.peak_kids = max(self.peak_kids, kids)
            self.peak_tree = max(self.peak_tree, main + kids)
            self.samples += 1
            now = time.monotonic()
            if now - last_hb >= 0.25:
                age = self.heartbeat_age()
                if age is not None:
                    self.max_heartbeat_age = max(self.max_heartbeat_age, age)
                last_hb = now
            self.stop.wait(self.interval)


def journal_outcome(journal: Path, project: str, source: str) -> str | None:
    try:
        db = sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=1)
        try:
            row = db.execute(
                "select outcome from runs where project = ? and source = ? order by started_at desc limit 1",
                (project, source),
            ).fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return None
    return row[0] if row else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=REPO, help="checkout whose run.py is started (default: this one)")
    ap.add_argument("--big-mb", type=float, default=100, help="size of the Markdown file (0: none)")
    ap.add_argument("--line-mb", type=float, default=25, help="size of the single-line file (0: none)")
    ap.add_argument("--workers", type=int, default=1, help="[service] workers")
    ap.add_argument("--heartbeat", type=float, default=1.0, help="[service] heartbeat_seconds")
    ap.add_argument("--interval", type=float, default=0.05, help="sampling interval (s)")
    ap.add_argument("--timeout", type=float, default=900, help="give up after this many seconds")
    ap.add_argument("--extra-toml", default="", help="more kbwatch.toml lines")
    ap.add_argument("--keep", action="store_true", help="keep the temp root")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="kbmem-"))
    root = tmp / "kb"
    root.mkdir()
    (root / "kbwatch.toml").write_text(
        f"[service]\nsettle_seconds = 0.5\nworkers = {args.workers}\nheartbeat_seconds = {args.heartbeat}\n"
        f"{args.extra_toml}\n", encoding="utf-8")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "KBWATCH_DISABLE_ENTRYPOINTS": "1"}
    run_py = str(args.repo / "run.py")
    subprocess.run([sys.executable, run_py, "init", "big", "other", "--root", str(root)],
                   check=True, env=env, capture_output=True, cwd=str(args.repo))
    staging = tmp / "staging"
    staging.mkdir()
    bigs: dict[str, Path] = {}
    t0 = time.monotonic()
    if args.big_mb:
        bigs["large.md"] = staging / "large.md"
        write_markdown(bigs["large.md"], int(args.big_mb * 1048576), PHRASE_BIG)
    if args.line_mb:
        bigs["oneline.txt"] = staging / "oneline.txt"
        write_single_line(bigs["oneline.txt"], int(args.line_mb * 1048576), PHRASE_LINE)
    print(f"generated {', '.join(f'{n} {p.stat().st_size / 1048576:.0f} MB' for n, p in bigs.items())} "
          f"in {time.monotonic() - t0:.1f} s")

    log = open(tmp / "watch.log", "wb")
    proc = subprocess.Popen([sys.executable, run_py, "watch", "--root", str(root)], stdout=log,
                            stderr=subprocess.STDOUT, env=env, cwd=str(args.repo))
    journal = root / ".kbwatch" / "journal.sqlite3"
    try:
        deadline = time.monotonic() + 60
        while b"kbwatch watching" not in (tmp / "watch.log").read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                print((tmp / "watch.log").read_text(errors="replace")[-3000:])
                return 1
            time.sleep(0.1)
        idle_rss = tree_rss(psutil.Process(proc.pid))
        sampler = Sampler(proc.pid, journal, args.interval)
        sampler.start()
        start = time.monotonic()
        for name, path in bigs.items():
            os.rename(path, root / "big" / "sources" / name)
        # the small file goes in once a big one is being processed
        while bigs and not any(journal_outcome(journal, "big", f"sources/{n}") for n in bigs):
            if time.monotonic() - start > args.timeout:
                break
            time.sleep(0.05)
        small_at = time.monotonic()
        (root / "other" / "sources" / "note.md").write_text("# Note\n\nA small note in another project.\n",
                                                            encoding="utf-8")
        small_wait = None
        done_at: dict[str, float] = {}
        outcomes: dict[str, str | None] = {}
        while time.monotonic() - start < args.timeout:
            if small_wait is None and journal_outcome(journal, "other", "sources/note.md") in ("done", "failed"):
                small_wait = time.monotonic() - small_at
            for n in bigs:
                if n not in done_at:
                    out = journal_outcome(journal, "big", f"sources/{n}")
                    if out not in (None, "running"):
                        done_at[n], outcomes[n] = time.monotonic() - start, out
            if small_wait is not None and len(done_at) == len(bigs):
                break
            if proc.poll() is not None:
                print("the service exited:", proc.returncode)
                break
            time.sleep(0.1)
        sampler.stop.set()
        sampler.join()
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()
    mb = 1048576
    print(f"repo: {args.repo}")
    print(f"idle RSS before the drop: main {idle_rss[0] / mb:.0f} MB, children {idle_rss[1] / mb:.0f} MB")
    print(f"peak RSS: tree {sampler.peak_tree / mb:.0f} MB (main {sampler.peak_main / mb:.0f} MB, "
          f"children {sampler.peak_kids / mb:.0f} MB), {sampler.samples} samples")
    print(f"oldest heartbeat seen: {sampler.max_heartbeat_age:.1f} s (interval {args.heartbeat} s, "
          f"target <= {2 * args.heartbeat:.1f} s)")
    print(f"small file in another project: done after {small_wait:.1f} s" if small_wait is not None
          else "small file in another project: not done")
    for n in bigs:
        print(f"{n}: {outcomes.get(n, 'not finished')} after {done_at.get(n, float('nan')):.1f} s")
    if args.keep:
        print(f"kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
