#!/usr/bin/env python3
"""Thread CPU per file of each pipeline stage during ``bench/ingest_text.py``'s in-process ingest.

Where ``bench/ingest_cpu.py`` gives the process's CPU per file, this splits it: every stage's
``run`` and ``finish``, the taking of the source (``execute._take``; on a checkout from before
the intake snapshot, e.g. 2467783, its ``runner._hash``) and the commit (``Committer.flush``, or
the old ``Runner.flush``) are wrapped to add up ``time.thread_time()`` (user + system of the
calling thread). What is not in a wrapped call (the run queue, the journal's start of a run,
bookkeeping) is the gap between the sum and the process CPU. Like ``ingest_cpu.py`` it loads the
named checkout's own ``bench/ingest_text.py``; run it with ``PYTHONPATH`` pointing at that
checkout, and ``--legacy`` for a checkout from before the ``kbwatch`` package name:

    PYTHONPATH=/work/wt/x.path python bench/ingest_stages_cpu.py --checkout /work/wt/x
    PYTHONPATH= python bench/ingest_stages_cpu.py --checkout /work/wt/base-2467783 --legacy

One warm-up ingest of 100 files, then ``--repeat`` ingests of ``--files`` files (fresh roots);
prints ms per file. The file-system parts (take, archive, commit) swing with the disk and the
other tenants from run to run; the CPU-bound stages (scan, index, parse) are steadier. Never asserts.
"""

from __future__ import annotations

import argparse
import collections
import importlib
import importlib.util
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkout", type=Path, required=True)
    ap.add_argument("--legacy", action="store_true", help="top-level pipeline/ package (before the kbwatch name)")
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="cpu: the calling thread's CPU (default); wall: elapsed time in each call, waits "
                         "for locks, the GIL and the disk included (summed over the runner threads)")
    args = ap.parse_args(argv)
    repo = args.checkout.resolve()
    prefix = "" if args.legacy else "kbwatch."
    spec = importlib.util.spec_from_file_location("_ingest_text", repo / "bench" / "ingest_text.py")
    it = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(it)
    runner = importlib.import_module(prefix + "pipeline.runner")

    acc: collections.Counter = collections.Counter()
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    lock = threading.Lock()
    depth = threading.local()

    def wrap(name, fn):
        def timed(*a, **kw):
            d = getattr(depth, "d", 0)
            depth.d = d + 1
            t0 = clock()
            try:
                return fn(*a, **kw)
            finally:
                depth.d = d
                if d == 0 or name.startswith("stage "):  # a commit inside a stage's finish counts once
                    with lock:
                        acc[name] += clock() - t0
        return timed

    init = runner.Runner.__init__

    def wrapped_init(self, *a, **kw):
        init(self, *a, **kw)
        for stage in self.stages:
            for meth in ("run", "finish"):
                fn = getattr(stage, meth, None)
                if fn is not None:
                    setattr(stage, meth, wrap(f"stage {stage.name}.{meth}", fn))

    runner.Runner.__init__ = wrapped_init
    try:
        commit = importlib.import_module(prefix + "pipeline.commit")
        execute = importlib.import_module(prefix + "pipeline.execute")
        commit.Committer.flush = wrap("commit", commit.Committer.flush)
        execute._take = wrap("take (open, snapshot, hash)", execute._take)
    except ImportError:  # before the runner was split (2467783)
        runner.Runner.flush = wrap("commit", runner.Runner.flush)
        runner._hash = wrap("take (hash)", runner._hash)

    work = Path(tempfile.mkdtemp(prefix="ingest-stages-"))
    total = elapsed = 0.0
    try:
        for r in range(args.repeat + 1):
            n = args.files if r else 100
            root = work / f"r{r}"
            proj = it.init_root(root)
            it.write_docs(proj / "sources", n, seed=1000 + r)
            if r == 1:
                acc.clear()
            c0 = resource.getrusage(resource.RUSAGE_SELF)
            res = it.ingest_inprocess(root)
            c1 = resource.getrusage(resource.RUSAGE_SELF)
            it.check_totals(res["totals"], n, "in-process ingest")
            if r:
                total += c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime
                elapsed += res["ingest"]
            shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    k = args.files * args.repeat
    origin = Path(runner.__file__).resolve().parents[1]
    print(f"{origin}: process CPU {total / k * 1000:.3f} ms/file, elapsed {elapsed / k * 1000:.3f} ms/file "
          f"over {args.repeat} x {args.files} files; per call: {args.clock} "
          f"(load average {os.getloadavg()[0]:.2f} at {time.strftime('%H:%M:%S', time.gmtime())} UTC)")
    for name, v in sorted(acc.items(), key=lambda x: -x[1]):
        print(f"  {name:32s} {v / k * 1000:.3f}")
    print(f"  {'sum of the above':32s} {sum(acc.values()) / k * 1000:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
