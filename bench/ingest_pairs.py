#!/usr/bin/env python3
"""Small-file throughput of two checkouts, run in alternated pairs: the ratio per pair, then its median.

On a shared machine the speed of the whole machine drifts by a third within minutes, so two
checkouts measured a few minutes apart (``bench/ingest_text.py`` rotated round by round) can
differ by more than what separates them. Here each pair runs ``bench/ingest_cpu.py`` of
checkout A and of checkout B back to back (the order flipped every pair), each in its own
process: one ingest of ``--files`` small Markdown files to warm up (the engine's build, the
first commits), then a measured one. The ratio within a pair sees the same machine; the
median of the ratios over ``--pairs`` pairs is the figure, with the lower and upper quartile.

    python bench/ingest_pairs.py --pairs 12 --files 600 \\
        --a /work/wt/b246 --a-legacy --a-pythonpath '' --b /work/main

``--x-pythonpath`` is the ``PYTHONPATH`` that makes ``kbwatch`` that checkout (a folder holding a
``kbwatch`` link to it; empty for a legacy checkout or for the installed one). Prints each
pair and the summary; never asserts.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPEAT = re.compile(r"repeat 2: (\d+) files/s, CPU ([\d.]+) ms/file")


def run(checkout: Path, legacy: bool, pythonpath: str | None, files: int) -> tuple[float, float]:
    """(files/s, CPU ms per file) of the second of two ingests in a fresh process."""
    env = dict(os.environ)
    if pythonpath is None:
        pass
    elif pythonpath:
        env["PYTHONPATH"] = pythonpath
    else:
        env.pop("PYTHONPATH", None)
    cmd = [sys.executable, str(HERE / "ingest_cpu.py"), "--checkout", str(checkout), "--files", str(files),
           "--repeat", "2"] + (["--legacy"] if legacy else [])
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=checkout, timeout=3600)
    m = REPEAT.search(out.stdout)
    if out.returncode != 0 or not m:
        raise SystemExit(f"{checkout}: exit {out.returncode}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return float(m.group(1)), float(m.group(2))


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 4:
        return min(values), statistics.median(values), max(values)
    q = statistics.quantiles(values, n=4)
    return q[0], q[1], q[2]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for side in ("a", "b"):
        ap.add_argument(f"--{side}", type=Path, required=True, help=f"checkout {side.upper()}")
        ap.add_argument(f"--{side}-legacy", action="store_true", help="top-level pipeline/ (before the kbwatch name)")
        ap.add_argument(f"--{side}-pythonpath", default=None, help="PYTHONPATH for it ('' = unset)")
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--files", type=int, default=600)
    args = ap.parse_args(argv)
    a = (args.a.resolve(), args.a_legacy, args.a_pythonpath)
    b = (args.b.resolve(), args.b_legacy, args.b_pythonpath)
    speed, cpu = [], []
    print(f"A = {a[0]}, B = {b[0]}; {args.files} files a measured ingest; B/A > 1 means B is faster")
    for i in range(args.pairs):
        if i % 2 == 0:
            ra, rb = run(*a, args.files), run(*b, args.files)
        else:
            rb, ra = run(*b, args.files), run(*a, args.files)
        speed.append(rb[0] / ra[0])
        cpu.append(ra[1] / rb[1])
        print(f"pair {i + 1:2d}: A {ra[0]:.0f} files/s {ra[1]:.2f} ms CPU | B {rb[0]:.0f} files/s {rb[1]:.2f} ms CPU"
              f" | B/A speed {speed[-1]:.2f}, CPU {cpu[-1]:.2f}", flush=True)
    lo, mid, hi = quartiles(speed)
    clo, cmid, chi = quartiles(cpu)
    load = os.getloadavg()
    print(f"B/A files/s: median {mid:.2f} (quartiles {lo:.2f}–{hi:.2f}); A/B CPU per file: median {cmid:.2f} "
          f"(quartiles {clo:.2f}–{chi:.2f}); {args.pairs} pairs, load average {load[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
