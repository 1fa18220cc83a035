#!/usr/bin/env python3
"""What each ingested document leaves in ``watch``'s main process (issue 12, the soak).

One long-lived :class:`kbwatch.pipeline.runner.Runner` (the object ``kbwatch
watch`` drives, with the same plugins, stages, journal and commit path) on a
fresh root with 3 projects is fed small Markdown files (300 B – 2 KB, English
and Chinese, some in sub-folders, as ``bench/ingest_text.py`` makes them) in
batches until ``--steps`` documents have been ingested (default 500, 1000,
2000). After each step: ``gc.collect()``, glibc ``malloc_trim`` (the
service's heartbeat does the same), then it prints

- ``RssAnon`` of this process (``/proc/self/status``),
- the memory Python traces (``tracemalloc``) and the live pymalloc blocks,
- the deep size of the state the project sessions keep (their caches: the
  manifest, project.md, listings, ...),

and at the end bytes per document between the first and the last step, and
the ``--top`` allocation sites (tracemalloc, by line) that grew most between
them. Figures are printed, never asserted.

    python bench/per_doc_memory.py                    # 500, 1000, 2000
    python bench/per_doc_memory.py --steps 200,400 --top 10
    python bench/per_doc_memory.py --steps 500,1500,3000 --frames 0   # RSS without tracing
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

PROJECTS = ("alpha", "beta", "gamma")


def rss_anon() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


def trim() -> None:
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


def deep_size(obj, seen: set[int] | None = None) -> int:
    """Bytes of ``obj`` and everything it references (containers, instances' __dict__/__slots__),
    each object once; callables, modules and classes are not followed."""
    if seen is None:
        seen = set()
    stack, total = [obj], 0
    while stack:
        o = stack.pop()
        if id(o) in seen or callable(o) or isinstance(o, type(sys)):
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        else:
            d = getattr(o, "__dict__", None)
            if d is not None:
                stack.append(d)
            for slot in getattr(type(o), "__slots__", ()):
                if hasattr(o, slot):
                    stack.append(getattr(o, slot))
    return total


def session_state(runner) -> dict[str, int]:
    """Deep size of what the sessions keep between commits, by cache key."""
    out: dict[str, int] = {}
    seen: set[int] = set()
    for s in runner._commits._all_sessions():
        for key, value in s._cache.items():
            out[key] = out.get(key, 0) + deep_size(value, seen)
    return out


def make_files(root: Path, start: int, count: int, rng: random.Random) -> list[tuple[Path, str]]:
    from ingest_text import EN, ZH

    out = []
    for i in range(start, start + count):
        project = root / PROJECTS[i % len(PROJECTS)]
        lines = rng.sample(ZH if i % 3 == 0 else EN, k=rng.randint(2, 8))
        sub = f"team-{i % 7}/" if i % 4 == 0 else ""
        rel = f"{sub}note-{i:05d}.md"
        path = project / "sources" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note {i}\n\n" + "\n\n".join(lines) + f"\n\nid {i}-{rng.random():.6f}\n", encoding="utf-8")
        out.append((project, rel))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", default="500,1000,2000", help="cumulative document counts to measure at")
    ap.add_argument("--batch", type=int, default=100, help="files dropped at a time")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--frames", type=int, default=1, help="tracemalloc frames per site (0: no tracing, for RSS figures without tracemalloc's own tables)")
    args = ap.parse_args()
    steps = [int(x) for x in args.steps.split(",")]

    from loguru import logger

    logger.remove()
    import kbwatch.pipeline as pipeline_pkg
    from kbwatch.pipeline import heap, memdebug
    from kbwatch.pipeline.kb import KnowledgeBase
    from kbwatch.pipeline.runner import Runner

    print(f"kbwatch code: {Path(pipeline_pkg.__file__).parent.parent.resolve()}")
    heap.tune()  # as the service does at start
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="kbw-perdoc-") as tmp:
        root = Path(tmp) / "kb"
        root.mkdir()
        (root / "kbwatch.toml").write_text("[service]\nsettle_seconds = 0.2\n", encoding="utf-8")
        kb = KnowledgeBase(root)
        for p in PROJECTS:
            kb.init_project(p)
        runner = Runner(root, kb.settings, kb.plugins, kb.journal)
        runner.start()
        if args.frames > 0:  # --frames 0: no tracing (tracemalloc's own tables grow with every live block)
            tracemalloc.start(args.frames)
        done, rows, snaps, lowlevel = 0, [], [], []
        mallinfo, sqlite_used = memdebug._libc_mallinfo(), memdebug._sqlite_memory_used()
        t0 = time.monotonic()
        for step in steps:
            while done < step:
                n = min(args.batch, step - done)
                for project, rel in make_files(root, done, n, rng):
                    runner.submit(project, rel)
                runner.wait_idle()
                done += n
            gc.collect()
            trim()
            traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
            state = session_state(runner)
            rows.append((step, rss_anon(), traced, sys.getallocatedblocks(), state))
            mi = mallinfo() if mallinfo else None
            lowlevel.append((mi.uordblks if mi else 0, mi.fordblks if mi else 0, sqlite_used() if sqlite_used else 0))
            snaps.append(tracemalloc.take_snapshot() if tracemalloc.is_tracing() else None)
            print(f"{step:>6} docs  RssAnon {rows[-1][1] / 2**20:7.1f} MB  traced {traced / 2**20:6.1f} MB  "
                  f"blocks {rows[-1][3]:>9,}  glibc in use {lowlevel[-1][0] / 2**20:5.1f} free {lowlevel[-1][1] / 2**20:5.1f} "
                  f"sqlite {lowlevel[-1][2] / 2**20:4.1f} MB  session state {sum(state.values()) / 2**20:5.2f} MB  "
                  f"({time.monotonic() - t0:.0f} s, totals {dict(runner.totals)})", flush=True)
        runner.stop()
        kb.close()

    (n0, a0, t0_, b0, s0), (n1, a1, t1, b1, s1) = rows[0], rows[-1]
    dn = n1 - n0
    print(f"\nper document, {n0} -> {n1} documents (in bytes):")
    print(f"  RssAnon            {(a1 - a0) / dn:8.0f}")
    print(f"  traced by Python   {(t1 - t0_) / dn:8.0f}")
    (g0, f0, q0), (g1, f1, q1) = lowlevel[0], lowlevel[-1]
    print(f"  glibc in use       {(g1 - g0) / dn:8.0f}   (free but held {(f1 - f0) / dn:+.0f})")
    print(f"  SQLite's heap      {(q1 - q0) / dn:8.0f}")
    print(f"  pymalloc blocks    {(b1 - b0) / dn:8.1f} blocks")
    print(f"  session state      {(sum(s1.values()) - sum(s0.values())) / dn:8.0f}")
    for key in sorted(s1, key=lambda k: -(s1[k] - s0.get(k, 0))):
        print(f"    {key:<22} {(s1[key] - s0.get(key, 0)) / dn:8.0f}   ({s1[key] / 2**10:.0f} KB at {n1})")
    print(f"\ntop {args.top} allocation sites growing {n0} -> {n1} (bytes per document, live blocks):")
    if snaps[-1] is None:
        return 0
    diff = snaps[-1].compare_to(snaps[0], "lineno")
    for st in diff[: args.top]:
        frame = st.traceback[0]
        where = f"{frame.filename.replace(str(REPO) + '/', '')}:{frame.lineno}"
        print(f"  {st.size_diff / dn:8.0f}  {st.count_diff:+8d}  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
