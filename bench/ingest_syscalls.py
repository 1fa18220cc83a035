#!/usr/bin/env python3
"""System calls per file of ``bench/ingest_text.py``'s in-process ingest, counted by ``strace -f -c``.

Wall time on this shared machine swings by a third from run to run; the number of system calls
a file costs does not. Each one that Python makes lets go of the GIL, and while the runner
threads are busy every such release is a hand-over between threads (the ``futex`` calls), so
the count is the part of the ingest's cost that contention multiplies. This script runs a child
that ingests ``--files`` small Markdown files (after a warm-up ingest of 100, not counted: it
loads the scanners) under ``strace -f -c`` and prints the calls per file, the busiest kinds
first, for any checkout:

    PYTHONPATH=/work/wt/x.path python bench/ingest_syscalls.py --checkout /work/wt/x
    PYTHONPATH= python bench/ingest_syscalls.py --checkout /work/wt/base-2467783 --legacy

``futex`` varies with scheduling (a few percent between runs); the other counts barely move.
Needs ``strace`` (exits 2 without it). Never asserts.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r'''
import importlib.util, os, sys, tempfile, pathlib, shutil
repo, files, legacy = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
if legacy:
    sys.path.insert(0, str(repo))
spec = importlib.util.spec_from_file_location("_it", repo / "bench" / "ingest_text.py")
it = importlib.util.module_from_spec(spec); spec.loader.exec_module(it)
work = pathlib.Path(tempfile.mkdtemp(prefix="ingest-syscalls-"))
roots = []
for n, seed in ((100, 2000), (files, 2001)):
    root = work / f"r{seed}"
    it.write_docs(it.init_root(root) / "sources", n, seed=seed)
    roots.append(root)
it.ingest_inprocess(roots[0])
mark = work / "mark"
os.open(str(mark), os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600)  # the counted part starts here
res = it.ingest_inprocess(roots[1])
os.open(str(mark), os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600)  # ... and ends here
it.check_totals(res["totals"], files, "in-process ingest")
shutil.rmtree(work, ignore_errors=True)
'''


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkout", type=Path, required=True)
    ap.add_argument("--legacy", action="store_true", help="top-level pipeline/ package (before the kbwatch name)")
    ap.add_argument("--files", type=int, default=500)
    ap.add_argument("--top", type=int, default=16)
    args = ap.parse_args(argv)
    strace = shutil.which("strace")
    if strace is None:
        print("strace is not installed (apt-get install strace)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "trace"
        # every call with its thread, so that only those between the two marks are counted
        cmd = [strace, "-f", "-qq", "-o", str(out), "-e", "trace=all", "-e", "signal=none",
               sys.executable, "-c", CHILD, str(args.checkout.resolve()), str(args.files), "1" if args.legacy else "0"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        counts: dict[str, int] = {}
        inside = False
        with open(out, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.split(None, 1)
                if len(parts) < 2:
                    continue
                body = parts[1]
                if '/mark"' in body and body.startswith("openat("):
                    inside = not inside
                    continue
                if not inside or body.startswith(("<...", "+++", "---")):
                    continue
                name = body.split("(", 1)[0]
                if name.isidentifier():
                    counts[name] = counts.get(name, 0) + 1
    total = sum(counts.values())
    futex = counts.get("futex", 0)
    print(f"{args.checkout}: {total / args.files:.1f} system calls per file, of which futex {futex / args.files:.1f} "
          f"and the rest {(total - futex) / args.files:.1f} ({args.files} files)")
    for name, n in sorted(counts.items(), key=lambda x: -x[1])[: args.top]:
        print(f"  {name:18s} {n / args.files:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
