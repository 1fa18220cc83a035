#!/usr/bin/env python3
"""What a command costs to start: wall and CPU of ``kbwatch --help``, ``status``, ``ask`` and ``scan``.

Every CLI command, the MCP server and each parse worker register every built-in plugin, so
whatever a plugin does at import is paid by each of them. This runs the real CLI
(``python -m kbwatch.run``) in subprocesses on a small root, for one or more checkouts
given as ``PYTHONPATH`` folders (a folder holding a ``kbwatch`` link to the checkout; ``-``
for the installed one), alternated round by round, and prints the median wall and CPU
(user + system of the child) per command and checkout, and the ratios to the first.

    python bench/cli_start.py --rounds 8 /work/wt/pre.path -

Figures are printed, never asserted; the machine may be shared: read the load average.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "--help": ["--help"],
    "status": ["status", "--root", "{root}"],
    "ask": ["ask", "demo", "backup snapshots", "--root", "{root}"],
    # one small file: the injection engine's build is most of it (see plugins/scanning/build_cache.py)
    "scan": ["scan", "{probe}", "--root", "{root}"],
}


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(pythonpath: str, args: list[str]) -> tuple[float, float]:
    env = dict(os.environ)
    if pythonpath == "-":
        env.pop("PYTHONPATH", None)
    else:
        env["PYTHONPATH"] = pythonpath
    c0, t0 = children_cpu(), time.perf_counter()
    subprocess.run([sys.executable, "-m", "kbwatch.run", *args], env=env, capture_output=True, check=True)
    return time.perf_counter() - t0, children_cpu() - c0


def make_root(pythonpath: str, where: Path) -> Path:
    root = where / "kb"
    root.mkdir()
    run(pythonpath, ["init", "demo", "--root", str(root)])
    (root / "demo" / "sources" / "notes.md").write_text(
        "# Backups\n\nThe backup job keeps thirty daily snapshots.\n", encoding="utf-8")
    run(pythonpath, ["ingest", "--root", str(root)])
    (where / "probe.md").write_text("# Minutes\n\nWe agreed to move the review to Friday.\n", encoding="utf-8")
    return root


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", help="PYTHONPATH folder per checkout ('-' = the installed kbwatch)")
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = make_root(args.paths[-1], Path(tmp))
        res = {p: {c: [] for c in COMMANDS} for p in args.paths}
        for rnd in range(args.rounds):
            order = args.paths if rnd % 2 == 0 else list(reversed(args.paths))
            for p in order:
                for name, cmd in COMMANDS.items():
                    res[p][name].append(run(p, [a.format(root=root, probe=Path(tmp) / "probe.md") for a in cmd]))
    load = os.getloadavg()
    print(f"command start-up, median of {args.rounds} alternated rounds (load average {load[0]:.2f} {load[1]:.2f})")
    print("| checkout | " + " | ".join(f"{c} wall / CPU" for c in COMMANDS) + " |")
    print("|---|" + "---|" * len(COMMANDS))
    base = args.paths[0]
    for p in args.paths:
        cells = []
        for c in COMMANDS:
            wall = statistics.median(x[0] for x in res[p][c])
            cpu = statistics.median(x[1] for x in res[p][c])
            bcpu = statistics.median(x[1] for x in res[base][c])
            cells.append(f"{wall:.2f} / {cpu:.2f} s" + ("" if p == base else f" ({cpu / bcpu:.2f}×)"))
        print(f"| {p} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
