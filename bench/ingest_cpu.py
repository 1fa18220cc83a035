#!/usr/bin/env python3
"""Process CPU per file of ``bench/ingest_text.py``'s in-process ingest, for any checkout.

Wall time on a shared machine swings with the other tenants; the CPU the ingest itself burns
(user + system, all threads, ``resource.getrusage``) swings much less. This script loads the
named checkout's own ``bench/ingest_text.py`` (its documents, its ``init``, its
``ingest_inprocess``) and wraps that checkout's ``run_ingest`` to read ``getrusage`` just
before and after it, so only the ingest is counted (not interpreter start, imports or opening
the knowledge base). The checkout's package must be the one imported: run it with
``PYTHONPATH`` pointing at that checkout (``/work/wt/<name>.path`` for a worktree, unset for
the installed one); a checkout from before the ``kbwatch`` package name (e.g. 2467783) needs
``--legacy`` (its top-level ``pipeline`` package is imported from the checkout itself).

    PYTHONPATH=/work/wt/x.path python bench/ingest_cpu.py --checkout /work/wt/x
    PYTHONPATH= python bench/ingest_cpu.py --checkout /work/wt/base-2467783 --legacy

Prints, per repeat, files/s (wall) and CPU ms per file (user and system apart), then the medians. Never asserts.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _cpu() -> tuple[float, float]:
    """(user, system) CPU seconds of this process and its children so far."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + c.ru_utime, s.ru_stime + c.ru_stime


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkout", type=Path, required=True, help="the checkout whose bench/ingest_text.py runs")
    ap.add_argument("--legacy", action="store_true", help="top-level pipeline/ package (before the kbwatch name)")
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    repo = args.checkout.resolve()
    spec = importlib.util.spec_from_file_location("_ingest_text", repo / "bench" / "ingest_text.py")
    it = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(it)  # inserts the checkout into sys.path (what --legacy relies on)
    ingest_mod = importlib.import_module(("" if args.legacy else "kbwatch.") + "pipeline.ingest")
    origin = Path(ingest_mod.__file__).resolve().parents[1]
    real = ingest_mod.run_ingest
    cpu: list[tuple[float, float]] = []

    def timed(*a, **kw):
        c0 = _cpu()
        try:
            return real(*a, **kw)
        finally:
            c1 = _cpu()
            cpu.append((c1[0] - c0[0], c1[1] - c0[1]))

    ingest_mod.run_ingest = timed
    rates, per_file, user, system = [], [], [], []
    work = Path(tempfile.mkdtemp(prefix="ingest-cpu-"))
    try:
        for r in range(args.repeat):
            root = work / f"r{r}"
            proj = it.init_root(root)
            it.write_docs(proj / "sources", args.files, seed=1000 + r)
            res = it.ingest_inprocess(root)
            it.check_totals(res["totals"], args.files, "in-process ingest")
            rates.append(args.files / res["ingest"])
            user.append(cpu[-1][0] / args.files * 1000)
            system.append(cpu[-1][1] / args.files * 1000)
            per_file.append(user[-1] + system[-1])
            print(f"  repeat {r + 1}: {rates[-1]:.0f} files/s, CPU {per_file[-1]:.2f} ms/file "
                  f"(user {user[-1]:.2f}, system {system[-1]:.2f})")
            shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()
    print(f"{origin}: median {statistics.median(rates):.0f} files/s, CPU {statistics.median(per_file):.2f} ms/file "
          f"(best {min(per_file):.2f}; user {statistics.median(user):.2f}, system {statistics.median(system):.2f}); load average {load[0]:.2f} at {time.strftime('%H:%M:%S', time.gmtime())} UTC")
    return 0


if __name__ == "__main__":
    sys.exit(main())
