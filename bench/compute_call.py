#!/usr/bin/env python3
"""What sending a scan to a compute worker costs the service's own process (issue 12).

Scans ``--docs`` small Markdown texts (``bench/ingest_text.py``'s generator) with every
built-in scanner three ways and prints CPU per text: in process (``call_scanners``), and
through a real :func:`kbwatch.pipeline.parsing.compute_pool` worker (``scan_in_worker``),
split into the calling process's CPU (pickling, pipes, the pool's bookkeeping) and the
worker's. Run it once per checkout with ``PYTHONPATH`` pointing at it to compare them.

    PYTHONPATH=/work/wt/x.path python bench/compute_call.py --docs 400

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=400)
    args = ap.parse_args()

    import psutil

    import ingest_text
    from kbwatch.pipeline.config import load_settings
    from kbwatch.pipeline.model import ParsedDocument
    try:
        from kbwatch.pipeline.parsing import compute_pool
    except ImportError:  # a checkout from before compute_pool (bb0eec6 and earlier): the runner's pool
        import functools

        from kbwatch.pipeline.parsing import compute_warmup
        from kbwatch.pipeline.workers import WorkerPool

        def compute_pool(settings):
            return WorkerPool(settings["service"]["compute_workers"], memory_mb=settings["stages"]["parse"]["memory_mb"],
                              warmup=functools.partial(compute_warmup, settings))
    from kbwatch.pipeline.plugins import build_plugin_manager
    from kbwatch.plugins.scan import call_scanners, scan_in_worker

    settings = load_settings(Path(tempfile.mkdtemp(prefix="compute-call-")))
    settings["service"]["compute_workers"] = 1
    plugins = build_plugin_manager(settings)
    rng = random.Random(1)
    docs = [ParsedDocument(markdown=ingest_text.make_doc(rng, i)) for i in range(args.docs)]
    for d in docs[:20]:  # the engine's first build
        call_scanners(plugins, d, settings)
    c0 = time.process_time()
    for d in docs:
        call_scanners(plugins, d, settings)
    here = (time.process_time() - c0) / len(docs) * 1000

    pool = compute_pool(settings)
    try:
        for d in docs[:20]:  # start and warm the worker
            pool.call(scan_in_worker, d, settings)
        worker = psutil.Process(next(iter(pool._idle.queue)).proc.pid)
        k0, c0, w0 = sum(worker.cpu_times()[:2]), time.process_time(), time.perf_counter()
        for d in docs:
            pool.call(scan_in_worker, d, settings)
        caller = (time.process_time() - c0) / len(docs) * 1000
        wall = (time.perf_counter() - w0) / len(docs) * 1000
        theirs = (sum(worker.cpu_times()[:2]) - k0) / len(docs) * 1000
    finally:
        pool.close()
    import kbwatch.pipeline as pkg

    print(f"{Path(pkg.__file__).resolve().parents[1]}: {len(docs)} texts; CPU ms per text: in process {here:.2f}; "
          f"through a compute worker: caller {caller:.2f}, worker {theirs:.2f} (wall {wall:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
