#!/usr/bin/env python3
"""Benchmark parsing (issue 4): per format, and the batch through kbwatch vs direct.

Over every parseable file of ``../shared/corpus`` (files no parser claims, or
that fail as unsupported/encrypted/corrupt, are listed and left out):

1. per format, in the real parse worker pool (``kbwatch.pipeline.workers.WorkerPool``,
   one fresh worker per format, called exactly as the parse stage calls it:
   ``pool.call(parse_in_worker, path, ext, settings)``): median time per file
   (each file parsed ``--repeat`` times in the warm worker), the first parse
   of the format in a fresh worker, and the worker's peak RSS (psutil sampling
   of the worker pid every 5 ms during each call);
2. the warm-up of a fresh worker: spawn + ``kbwatch.pipeline.parsing.worker_warmup`` (the ``kb_worker_started`` hook) (first trivial
   call), then the first parse vs the same parse warm;
3. the batch: the parseable corpus copied ``--copies`` times (unique names,
   so no two files share a stem) and
   (a) direct: ``parse_file(plugins, path, ext, settings)`` serially in one
       fresh process (cold pass: including the first-use imports, as the
       pipeline pays them; warm pass: the same files again);
   (b) ``run_ingest`` of a fresh project holding the same files, in a fresh
       process, with ``[service] workers = 1`` and ``workers = 2``; the peak
       RSS of every parse worker is sampled from outside with psutil.
   Printed: pipeline overhead (ingest, 1 worker) vs direct serial; 2-worker
   wall time vs direct serial; peak RSS of a parse worker.

Targets (issue 4): overhead <= 10 % of direct single-worker time; 2 workers
<= 0.6x serial direct; peak RSS of a parse worker <= 600 MB.

    python bench/parse.py                 # full run (a few minutes)
    python bench/parse.py --quick         # < 60 s
    python bench/parse.py --copies 4 --repeat 3
    python bench/parse.py --formats .docx,.pdf --max-per-format 5
    python bench/parse.py --batch-only --exclude-formats .jpg,.jpeg,.png,.tiff,.bmp   # the batch without images

``--executor dask-local:2`` (issue 16) replaces parts 1-3 by the same batch through
the local pool and through that executor, alternated in one run
(:func:`executor_compare`): the wall-time ratio, the per-task overhead (tiny
tasks, one at a time) and the serial fraction measured on the coordinator per
file (its CPU time per file against the parse time on the workers), with the
speed-up Amdahl's law allows at 4, 8 and 16 workers; then a real ``kbwatch
ingest`` of the batch each way (cluster start-up included), whose coordinator
CPU per file (every stage but the parse stays there) gives the whole-pipeline
serial fraction.

    python bench/parse.py --executor dask-local:2 --copies 2 --repeat 3

``--quick``: two files per format, one shared worker for the per-format
table (its RSS column is then cumulative), one repeat, one copy.

Timings are printed, never asserted. Exits 0 with a message when the shared
corpus is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPUS = SHARED / "corpus"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# the same offline environment the service sets (parse workers inherit it)
for _k in ("DO_NOT_TRACK", "SCARF_NO_ANALYTICS", "UNSTRUCTURED_DISABLE_NOTICE", "HF_HUB_OFFLINE"):
    os.environ.setdefault(_k, "1")

MB = 1024 * 1024


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def fmt_ext(path: Path) -> str:
    from kbwatch.pipeline.sources import split_name

    return split_name(path.name)[1].lower()


def ext_set(arg: str) -> set[str]:
    """``".docx,pdf"`` -> ``{".docx", ".pdf"}``."""
    return {e if e.startswith(".") else "." + e for e in arg.split(",") if e}


def table(rows: list[list], header: list[str]) -> str:
    rows = [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths)), "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(out)


def summary(values: list[float]) -> dict:
    best, med, worst = min(values), statistics.median(values), max(values)
    return {"best": best, "median": med, "worst": worst, "spread_pct": (worst - best) / best * 100 if best else 0.0,
            "all": values}


class RssSampler:
    """Sample the RSS of some processes every ``interval`` s; keep the peak per pid."""

    def __init__(self, pids_fn, interval: float = 0.005):
        import psutil

        self.psutil = psutil
        self.pids_fn = pids_fn
        self.interval = interval
        self.peak: dict[int, int] = {}
        self.names: dict[int, str] = {}
        self.parents: dict[int, int] = {}
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for p in self.pids_fn():
                try:
                    rss = p.memory_info().rss
                except (self.psutil.NoSuchProcess, self.psutil.AccessDenied):
                    continue
                if rss > self.peak.get(p.pid, 0):
                    self.peak[p.pid] = rss
                if p.pid not in self.parents:
                    try:
                        self.parents[p.pid] = p.ppid()
                    except (self.psutil.NoSuchProcess, self.psutil.AccessDenied):
                        pass
                old = self.names.get(p.pid)
                if old is None or "spawn_main" in old or "forkserver" in old:
                    # re-read while it looks like a worker: a parser's helper (tesseract)
                    # shows its parent's command line between fork and exec
                    try:
                        name = " ".join(p.cmdline())
                    except (self.psutil.NoSuchProcess, self.psutil.AccessDenied):
                        name = ""
                    if name or old is None:
                        self.names[p.pid] = name or "?"
            self._stop.wait(self.interval)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def settings_for(root: Path, workers: int | None = None) -> dict:
    from kbwatch.pipeline.config import load_settings

    s = load_settings(root)
    if workers:
        s["service"]["workers"] = workers
    return s


# --------------------------------------------------------------------------
# corpus selection
# --------------------------------------------------------------------------

def select_files(work: Path, max_per_format: int = 0) -> tuple[list[Path], list[tuple[str, str]]]:
    """Files a parser claims and that parse to non-empty Markdown; and the rest with reasons."""
    from kbwatch.pipeline.errors import StageError
    from kbwatch.pipeline.parsing import parse_file
    from kbwatch.pipeline.plugins import build_plugin_manager

    settings = settings_for(work)
    plugins = build_plugin_manager(settings)
    ok, skipped = [], []
    for path in sorted(p for p in CORPUS.rglob("*") if p.is_file() and not p.name.startswith(".")):
        ext = fmt_ext(path)
        rel = str(path.relative_to(CORPUS))
        if max_per_format and sum(1 for f in ok if fmt_ext(f) == ext) >= max_per_format:
            continue
        if not plugins.parsers_for(ext):
            skipped.append((rel, f"unsupported {ext or '(none)'}: no parser claims it"))
            continue
        try:
            doc = parse_file(plugins, path, ext, settings)
        except StageError as exc:
            skipped.append((rel, f"{exc.reason}: {exc.message[:90]}"))
            continue
        except Exception as exc:  # a parser bug: report, do not benchmark
            skipped.append((rel, f"parser crashed: {type(exc).__name__}: {str(exc)[:80]}"))
            continue
        if not doc.markdown.strip():
            skipped.append((rel, "no text"))
            continue
        ok.append(path)
    return ok, skipped


# --------------------------------------------------------------------------
# 1. per format in the real worker pool
# --------------------------------------------------------------------------

def per_format(files: list[Path], work: Path, repeat: int, shared_worker: bool = False) -> dict:
    import psutil

    from kbwatch.pipeline.parsing import parse_in_worker
    import functools

    from kbwatch.pipeline.parsing import worker_warmup
    from kbwatch.pipeline.workers import WorkerPool

    settings = settings_for(work)
    opts = settings["stages"]["parse"]
    by_ext: dict[str, list[Path]] = {}
    for f in files:
        by_ext.setdefault(fmt_ext(f), []).append(f)
    results = {}
    where = "one shared parse worker (RSS cumulative)" if shared_worker else "a fresh parse worker per format"
    print(f"\n## 1. per format, in {where} (WorkerPool, memory cap {opts['memory_mb']} MB), each file x{repeat}")
    shared = WorkerPool(1, memory_mb=opts["memory_mb"], max_tasks=10**9, warmup=functools.partial(worker_warmup, settings)) if shared_worker else None
    for ext in sorted(by_ext):
        group = by_ext[ext]
        pool = shared or WorkerPool(1, memory_mb=opts["memory_mb"], max_tasks=10**9, warmup=functools.partial(worker_warmup, settings))
        try:
            t0 = time.perf_counter()
            pid = pool.call(os.getpid)
            spawn = time.perf_counter() - t0
            proc = psutil.Process(pid)
            base_rss = proc.memory_info().rss
            per_file, peaks, first = [], [], None
            for i, f in enumerate(group):
                times = []
                for r in range(repeat + (1 if i == 0 else 0)):
                    with RssSampler(lambda: [proc]) as s:
                        t = time.perf_counter()
                        pool.call(parse_in_worker, str(f), ext, settings, timeout=opts["timeout_seconds"] or None)
                        dt = time.perf_counter() - t
                    peaks.append(s.peak.get(pid, 0))
                    if i == 0 and r == 0:
                        first = dt  # the first parse of this format in a fresh worker: imports included
                        continue
                    times.append(dt)
                per_file.append(statistics.median(times))
        finally:
            if shared is None:
                pool.close()
        results[ext] = {
            "files": len(group), "median_ms": statistics.median(per_file) * 1000,
            "min_ms": min(per_file) * 1000, "max_ms": max(per_file) * 1000,
            "first_ms": first * 1000, "spawn_ms": spawn * 1000,
            "base_rss_mb": base_rss / MB, "peak_rss_mb": max(peaks) / MB,
            "median_peak_rss_mb": statistics.median(peaks) / MB,
            "sum_ms": sum(per_file) * 1000,
        }
        r = results[ext]
        print(f"  {ext:6} {len(group):3} files  median {r['median_ms']:8.1f} ms  first {r['first_ms']:8.0f} ms  "
              f"peak RSS {r['peak_rss_mb']:6.0f} MB")
    if shared is not None:
        shared.close()
    rows = [[ext, r["files"], f"{r['median_ms']:.1f}", f"{r['min_ms']:.1f}", f"{r['max_ms']:.1f}",
             f"{r['first_ms']:.0f}", f"{r['base_rss_mb']:.0f}", f"{r['median_peak_rss_mb']:.0f}",
             f"{r['peak_rss_mb']:.0f}"]
            for ext, r in results.items()]
    print()
    print(table(rows, ["format", "files", "median ms", "min ms", "max ms", "1st parse ms",
                       "idle RSS MB", "median peak MB", "peak RSS MB"]))
    print("  (median ms = median over files of each file's median warm time; 1st parse = the first file of the format\n"
          "   in a fresh worker, imports included; idle RSS = worker after spawn + warm-up; peak = max sampled RSS\n"
          "   of the worker during a parse of this format. ru_maxrss is not used: Linux carries it over\n"
          "   fork+exec, so a spawned worker reports its parent's high-water mark)")
    return results


def warmup_cost(files: list[Path], work: Path, formats=(".docx", ".pdf", ".pptx", ".xlsx")) -> dict:
    """Spawn + warm-up of a fresh worker, and its first parse vs the same parse warm."""
    from kbwatch.pipeline.parsing import parse_in_worker
    import functools

    from kbwatch.pipeline.parsing import worker_warmup
    from kbwatch.pipeline.workers import WorkerPool

    settings = settings_for(work)
    opts = settings["stages"]["parse"]
    rich = [f for f in files if fmt_ext(f) in formats]
    out = {}
    print("\n## 2. warm-up of a fresh parse worker")
    for ext in formats:
        sample = next((f for f in rich if fmt_ext(f) == ext), None)
        if sample is None:
            continue
        t0 = time.perf_counter()
        pool = WorkerPool(1, memory_mb=opts["memory_mb"], warmup=functools.partial(worker_warmup, settings))
        try:
            pool.call(os.getpid)
            t1 = time.perf_counter()
            pool.call(parse_in_worker, str(sample), ext, settings)
            t2 = time.perf_counter()
            pool.call(parse_in_worker, str(sample), ext, settings)
            t3 = time.perf_counter()
        finally:
            pool.close()
        out[ext] = {"spawn_ms": (t1 - t0) * 1000, "first_ms": (t2 - t1) * 1000, "warm_ms": (t3 - t2) * 1000,
                    "file": sample.name}
        print(f"  {ext:6} spawn+warm-up {out[ext]['spawn_ms']:6.0f} ms, first parse {out[ext]['first_ms']:6.0f} ms, "
              f"same file warm {out[ext]['warm_ms']:6.1f} ms  ({sample.name})")
    return out


# --------------------------------------------------------------------------
# 3. batch: children doing the timed work in fresh processes
# --------------------------------------------------------------------------

def vm_hwm_mb() -> float:
    """Peak RSS of this process (VmHWM: per address space, reset by exec, unlike ru_maxrss)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def child_direct(listfile: Path, root: Path) -> None:
    t_imp = time.perf_counter()
    from kbwatch.pipeline.parsing import parse_file
    from kbwatch.pipeline.plugins import build_plugin_manager

    settings = settings_for(root)
    plugins = build_plugin_manager(settings)
    setup = time.perf_counter() - t_imp
    items = [(Path(p), e) for p, e in json.loads(listfile.read_text())]
    passes = []
    for _ in range(2):  # cold (first-use imports included), then warm
        t0 = time.perf_counter()
        for path, ext in items:
            parse_file(plugins, path, ext, settings)
        passes.append(time.perf_counter() - t0)
    print(json.dumps({"setup": setup, "cold": passes[0], "warm": passes[1],
                      "maxrss_mb": vm_hwm_mb()}))


def child_ingest(root: Path) -> None:
    from kbwatch.pipeline.ingest import run_ingest
    from kbwatch.pipeline.kb import KnowledgeBase
    from kbwatch.pipeline.logs import setup_logging

    kb = KnowledgeBase(root)
    setup_logging(kb.settings, kb.state, quiet=True)
    kb.plugins, kb.journal  # noqa: B018
    t0 = time.perf_counter()
    totals, runs = run_ingest(kb, [])
    dt = time.perf_counter() - t0
    bad = [f"{r['source']}: {r['outcome']}: {r['error'] or r['message']}" for r in runs
           if r["outcome"] != "done"]
    stages = {row["stage"]: row["ms"] / 1000 for row in kb.journal.db.query(
        "select stage, sum(duration_ms) as ms from stages group by stage")}
    kb.close()
    print(json.dumps({"ingest": dt, "totals": totals, "bad": bad[:20], "workers": kb.settings["service"]["workers"],
                      "stages": stages}))


# --------------------------------------------------------------------------
# issue 16: the local pool against another executor (Dask)
# --------------------------------------------------------------------------

def _cpu_self() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _identity(x):
    return x


def child_executors(spec: str, listfile: Path, root: Path, repeat: int) -> None:
    """In one process: the batch through the local pool and through ``spec``, alternated."""
    import functools
    from concurrent.futures import ThreadPoolExecutor

    from kbwatch.pipeline.errors import StageError
    from kbwatch.pipeline.executors import last_placement, make_executor
    from kbwatch.pipeline.parsing import parse_document, worker_warmup
    from kbwatch.pipeline.plugins import build_plugin_manager
    from kbwatch.pipeline.workers import WorkerPool

    settings = settings_for(root, workers=2)
    plugins = build_plugin_manager(settings)
    items = [(Path(p), e) for p, e in json.loads(listfile.read_text())]

    def pool(s=settings):
        return WorkerPool(2, memory_mb=s["stages"]["parse"]["memory_mb"], warmup=functools.partial(worker_warmup, s))

    def with_executor(spec_: str, s: dict) -> dict:
        return {**s, "stages": {**s["stages"], "parse": {**s["stages"]["parse"], "executor": spec_}}}

    executors = {"local": make_executor(with_executor("local", settings), pool),
                 spec: make_executor(with_executor(spec, settings), pool)}

    def one(ex, item):
        path, ext = item
        try:
            parse_document(plugins, path, ext, settings, offload=ex.call)
        except StageError:  # "no text" (parse_document's rule, not select_files'): parsed all the same
            pass
        where = last_placement() or {}
        return where.get("seconds", 0.0)

    def batch(ex) -> tuple[float, float, float]:
        t0, c0 = time.perf_counter(), _cpu_self()
        with ThreadPoolExecutor(3) as tp:  # the runner's threads: workers + 1
            secs = list(tp.map(lambda it: one(ex, it), items))
        return time.perf_counter() - t0, _cpu_self() - c0, sum(secs)

    # warm every worker of both (each format once per worker), untimed
    firsts = list({e: (p, e) for p, e in items}.values())
    t0 = time.perf_counter()
    for ex in executors.values():
        with ThreadPoolExecutor(2) as tp:
            list(tp.map(lambda it, ex=ex: one(ex, it), firsts * 2))
    warmup = time.perf_counter() - t0
    out = {"n": len(items), "warmup": warmup, "runs": {k: [] for k in executors}}
    for r in range(repeat):
        order = list(executors) if r % 2 == 0 else list(executors)[::-1]
        for name in order:
            wall, cpu, remote = batch(executors[name])
            out["runs"][name].append({"wall": wall, "cpu": cpu, "remote": remote})
    # per-task overhead: tiny isolated parses, one at a time
    tiny = root / "tiny.md"
    tiny.write_text("# tiny\n\nsome words\n")
    iso = {**settings, "stages": {**settings["stages"], "parse": {**settings["stages"]["parse"], "isolate": True}}}
    n_tiny = 100
    out["tiny_ms"] = {k: [] for k in executors}
    for r in range(max(2, repeat)):
        order = list(executors) if r % 2 == 0 else list(executors)[::-1]
        for name in order:
            ex = executors[name]
            t0 = time.perf_counter()
            for _ in range(n_tiny):
                parse_document(plugins, tiny, ".md", iso, offload=ex.call)
            out["tiny_ms"][name].append((time.perf_counter() - t0) * 1000 / n_tiny)
    # the bare Dask round trip on the same cluster (no kbwatch around it), for scale
    client = getattr(executors[spec], "_client", None)
    if client is not None:
        out["bare_ms"] = []
        for _ in range(max(2, repeat)):
            t0 = time.perf_counter()
            for i in range(n_tiny):
                client.submit(_identity, i, pure=False).result()
            out["bare_ms"].append((time.perf_counter() - t0) * 1000 / n_tiny)
    out["status"] = executors[spec].status()
    for ex in executors.values():
        ex.close()
    print(json.dumps(out))


def child_ingest_cpu(root: Path) -> None:
    """``run_ingest`` of ``root`` with the coordinator's own CPU time and the workers' parse seconds."""
    import re

    from kbwatch.pipeline.ingest import run_ingest
    from kbwatch.pipeline.kb import KnowledgeBase
    from kbwatch.pipeline.logs import setup_logging

    kb = KnowledgeBase(root)
    setup_logging(kb.settings, kb.state, quiet=True)
    kb.plugins, kb.journal  # noqa: B018
    t0, c0 = time.perf_counter(), _cpu_self()
    totals, runs = run_ingest(kb, [])
    dt, cpu = time.perf_counter() - t0, _cpu_self() - c0
    notes = [row["error"] or "" for row in kb.journal.db.query("select error from stages where stage = 'parse'")]
    remote = [float(m.group(1)) for n in notes for m in [re.search(r", ([0-9.]+) s[,)]", n)] if m]
    kb.close()
    print(json.dumps({"ingest": dt, "cpu": cpu, "totals": totals, "remote_n": len(remote), "remote_s": sum(remote)}))


def amdahl(s: float, n: int) -> float:
    return 1.0 / (s + (1.0 - s) / n)


def executor_compare(files: list[Path], work: Path, spec: str, copies: int, repeat: int) -> None:
    batch = [f for _ in range(copies) for f in files]
    direct_dir = work / "exec-files"
    direct_dir.mkdir(exist_ok=True)
    items = []
    for i, f in enumerate(batch):
        dst = direct_dir / f"{i:04d}-{f.name}"
        shutil.copy2(f, dst)
        items.append((str(dst), fmt_ext(dst)))
    listfile = work / "exec-list.json"
    listfile.write_text(json.dumps(items))
    print(f"\n## executor {spec} vs the local pool: {len(batch)} files ({len(files)} parseable corpus files x{copies}), "
          f"{repeat} repeat(s) alternated, load avg {os.getloadavg()[0]:.1f}")
    d, _ = run_child(["--_child", "executors", spec, str(listfile), str(work), str(repeat)])
    n = d["n"]
    loc, rem = d["runs"]["local"], d["runs"][spec]
    ratios = [b["wall"] / a["wall"] for a, b in zip(loc, rem)]
    print(f"  warm-up of both (untimed in the batch): {d['warmup']:.1f} s")
    for i, (a, b) in enumerate(zip(loc, rem)):
        print(f"  repeat {i + 1}: local {a['wall']:.2f} s, {spec} {b['wall']:.2f} s  -> {b['wall'] / a['wall']:.2f}x")
    med_ratio = statistics.median(ratios)
    print(f"  batch wall time {spec} / local: median {med_ratio:.2f}x (range {min(ratios):.2f}-{max(ratios):.2f})"
          f"   (target <= 1.10x)")
    tl, tr = statistics.median(d["tiny_ms"]["local"]), statistics.median(d["tiny_ms"][spec])
    print(f"  per task, tiny parse one at a time: local {tl:.2f} ms, {spec} {tr:.2f} ms -> overhead {tr - tl:+.2f} ms/task")
    if d.get("bare_ms"):
        print(f"  (bare Dask round trip on the same cluster, client.submit(identity).result(): "
              f"{statistics.median(d['bare_ms']):.2f} ms/task)")
    # serial fraction: what the coordinator spends per file against the parse time on the workers
    c = statistics.median(b["cpu"] for b in rem) / n
    p = statistics.median(b["remote"] for b in rem) / n
    s = c / (c + p) if c + p else 0.0
    print(f"  coordinator CPU per file (parse step only, {spec}): {c * 1000:.1f} ms; parse on a worker per file: "
          f"{p * 1000:.1f} ms -> serial fraction {s:.3f}; Amdahl speed-up "
          + ", ".join(f"{k} workers {amdahl(s, k):.1f}x" for k in (4, 8, 16)))
    # the whole pipeline: a real ingest each way (start-up included), coordinator CPU per file
    ing = {"local": [], spec: []}
    for r in range(repeat):
        order = ["local", spec] if r % 2 == 0 else [spec, "local"]
        for name in order:
            root = make_ingest_root(work, f"x{r}-{name.replace(':', '_')}", batch, 2)
            with open(root / "kbwatch.toml", "a", encoding="utf-8") as fh:
                fh.write(f'\n[stages.parse]\nexecutor = "{name}"\n')
            g, _ = run_child(["--_child", "ingest-cpu", str(root)])
            if g["totals"].get("done", 0) != len(batch):
                print(f"  !! ingest {name}: {g['totals']}", file=sys.stderr)
            ing[name].append(g)
            shutil.rmtree(root, ignore_errors=True)
    li = statistics.median(g["ingest"] for g in ing["local"])
    ri = statistics.median(g["ingest"] for g in ing[spec])
    ir = statistics.median(b["ingest"] / a["ingest"] for a, b in zip(ing["local"], ing[spec]))
    print(f"  kbwatch ingest of the batch: local {li:.2f} s, {spec} {ri:.2f} s (cluster start-up included) "
          f"-> median {ir:.2f}x")
    cc = statistics.median(g["cpu"] for g in ing[spec]) / n
    pp = statistics.median(g["remote_s"] for g in ing[spec]) / n
    ss = cc / (cc + pp) if cc + pp else 0.0
    off = statistics.median(g["remote_n"] for g in ing[spec])
    print(f"  whole pipeline, coordinator CPU per file (every stage but the parse, scheduler in-process): {cc * 1000:.1f} ms; "
          f"parse on workers per file: {pp * 1000:.1f} ms ({off:.0f} of {n} files offloaded) -> serial fraction {ss:.3f}; "
          "Amdahl speed-up " + ", ".join(f"{k} workers {amdahl(ss, k):.1f}x" for k in (4, 8, 16)))


def run_child(argv: list[str], sample_rss: bool = False) -> tuple[dict, dict]:
    """Run this script as a child; returns its JSON and the peak RSS (MB) of it and its workers."""
    import psutil

    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, str(Path(__file__).resolve())] + argv,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peaks = {"main": 0.0, "workers": {}, "others": {}}
    if sample_rss:
        me = psutil.Process(p.pid)

        def procs():
            try:
                return [me] + me.children(recursive=True)
            except psutil.NoSuchProcess:
                return []
        with RssSampler(procs, interval=0.02) as s:
            out, err = p.communicate()
        for pid, rss in s.peak.items():
            if pid == p.pid:
                peaks["main"] = rss / MB
            elif "spawn_main" in s.names.get(pid, ""):  # a spawned parse worker
                peaks["workers"][pid] = rss / MB
            elif "forkserver" in s.names.get(pid, ""):
                if s.parents.get(pid) == p.pid:  # the template process workers are forked from
                    peaks["template"] = max(peaks.get("template", 0.0), rss / MB)
                else:  # a worker forked from it
                    peaks["workers"][pid] = rss / MB
            elif "multiprocessing" in s.names.get(pid, ""):  # the resource tracker
                continue
            else:  # helpers the parsers start (pandoc, tesseract, ...)
                name = os.path.basename(s.names.get(pid, "?").split(" ")[0])
                peaks["others"][name] = max(peaks["others"].get(name, 0.0), rss / MB)
                peaks["others_n"] = peaks.get("others_n", 0) + 1
    else:
        out, err = p.communicate()
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"child {argv[:2]} failed ({p.returncode}):\n{err[-3000:]}")
    data = json.loads(out.strip().splitlines()[-1])
    data["wall"] = wall
    return data, peaks


def make_ingest_root(work: Path, tag: str, batch: list[Path], workers: int) -> Path:
    """A fresh root (``kbwatch init bench``) with ``[service] workers`` set and the batch in sources/."""
    root = work / f"ingest-{tag}"
    root.mkdir(parents=True)
    subprocess.run([sys.executable, str(REPO / "run.py")] + ["init", "bench", "--root", str(root)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (root / "kbwatch.toml").write_text(f"[service]\nworkers = {workers}\n", encoding="utf-8")
    src = root / "bench" / "sources"
    for i, f in enumerate(batch):
        shutil.copy2(f, src / f"{i:04d}-{f.name}")
    return root


def batch_compare(files: list[Path], work: Path, copies: int, repeat: int) -> dict:
    batch = [f for _ in range(copies) for f in files]
    listfile = work / "direct-list.json"
    # direct parses the very files the ingest gets (same names/exts), from a copy of its own
    direct_dir = work / "direct-files"
    direct_dir.mkdir(exist_ok=True)
    items = []
    for i, f in enumerate(batch):
        dst = direct_dir / f"{i:04d}-{f.name}"
        shutil.copy2(f, dst)
        items.append((str(dst), fmt_ext(dst)))
    listfile.write_text(json.dumps(items))
    print(f"\n## 3. batch: {len(batch)} files ({len(files)} parseable corpus files x{copies}), {repeat} repeat(s)")
    res = {"direct_cold": [], "direct_warm": [], "direct_setup": [], "direct_rss": [],
           "w1": [], "w2": [], "w1_rss": [], "w2_rss": [], "main_rss": [], "w1_parse": [], "w2_parse": [],
           "w1_pids": [], "w2_pids": []}
    stage_sums: dict[int, dict[str, list[float]]] = {1: {}, 2: {}}
    for r in range(repeat):
        d, _ = run_child(["--_child", "direct", str(listfile), str(work)])
        res["direct_cold"].append(d["cold"])
        res["direct_warm"].append(d["warm"])
        res["direct_setup"].append(d["setup"])
        res["direct_rss"].append(d["maxrss_mb"])
        line = (f"  repeat {r + 1} (load avg {os.getloadavg()[0]:.1f}): direct serial cold {d['cold']:.2f} s, "
                f"warm {d['warm']:.2f} s")
        for w in (1, 2):
            root = make_ingest_root(work, f"{r}-w{w}", batch, w)
            g, peaks = run_child(["--_child", "ingest", str(root)], sample_rss=True)
            if g["totals"].get("done", 0) != len(batch):
                print(f"  !! ingest with {w} worker(s): {g['totals']}; " + "; ".join(g["bad"][:5]), file=sys.stderr)
            res[f"w{w}"].append(g["ingest"])
            res[f"w{w}_pids"].append(len(peaks["workers"]))
            for k, v in g["stages"].items():
                stage_sums[w].setdefault(k, []).append(v)
            res[f"w{w}_rss"].append(max(peaks["workers"].values(), default=0.0))
            res["main_rss"].append(peaks["main"])
            line += (f"; ingest {w}w {g['ingest']:.2f} s (worker peak {res[f'w{w}_rss'][-1]:.0f} MB, "
                     f"template {peaks.get('template', 0.0):.0f} MB, "
                     f"{len(peaks['workers'])} worker pids, {peaks.get('others_n', 0)} helper processes "
                     f"{sorted(peaks['others'])})")
            shutil.rmtree(root, ignore_errors=True)
        print(line)
    out = {k: summary(v) for k, v in res.items() if v}
    out["n"] = len(batch)
    out["stages"] = {w: {k: statistics.median(v) for k, v in st.items()} for w, st in stage_sums.items()}
    dc, dw, w1, w2 = (out[k]["median"] for k in ("direct_cold", "direct_warm", "w1", "w2"))
    rows = [
        ["direct serial, cold (imports in)", f"{dc:.2f}", f"{out['direct_cold']['best']:.2f}", f"{out['direct_cold']['spread_pct']:.0f}%", "1.00x", f"{out['direct_rss']['median']:.0f} MB (process)"],
        ["direct serial, warm", f"{dw:.2f}", f"{out['direct_warm']['best']:.2f}", f"{out['direct_warm']['spread_pct']:.0f}%", f"{dw / dc:.2f}x", ""],
        ["kbwatch ingest, workers = 1", f"{w1:.2f}", f"{out['w1']['best']:.2f}", f"{out['w1']['spread_pct']:.0f}%", f"{w1 / dc:.2f}x", f"{out['w1_rss']['worst']:.0f} MB (worker)"],
        ["kbwatch ingest, workers = 2", f"{w2:.2f}", f"{out['w2']['best']:.2f}", f"{out['w2']['spread_pct']:.0f}%", f"{w2 / dc:.2f}x", f"{out['w2_rss']['worst']:.0f} MB (worker)"],
    ]
    print()
    print(table(rows, ["path", "median s", "best s", "spread", "vs direct cold", "peak RSS"]))
    out["overhead_cold"] = w1 / dc - 1
    out["overhead_warm"] = w1 / dw - 1
    out["ratio2_cold"] = w2 / dc
    out["ratio2_warm"] = w2 / dw
    out["worker_rss"] = max(out["w1_rss"]["worst"], out["w2_rss"]["worst"])
    print(f"\n  pipeline overhead, ingest 1 worker vs direct serial: {out['overhead_cold'] * 100:+.0f}% vs cold, "
          f"{out['overhead_warm'] * 100:+.0f}% vs warm   (target <= +10%)")
    print(f"  2 workers vs direct serial: {out['ratio2_cold']:.2f}x cold, {out['ratio2_warm']:.2f}x warm   (target <= 0.6x)")
    print(f"  peak RSS of a parse worker: {out['worker_rss']:.0f} MB   (target <= 600 MB); "
          f"ingest main process {out['main_rss']['worst']:.0f} MB")
    for w in (1, 2):
        st = out["stages"][w]
        print(f"  ingest {w} worker(s): stage time summed over runs (median of repeats): "
              + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(st.items(), key=lambda kv: -kv[1]))
              + f"; parse worker processes started: {statistics.median(res[f'w{w}_pids']):.0f}")
    return out


def markdown(args, fmt: dict, warm: dict, batch: dict | None, skipped: list) -> str:
    L = ["### Parsing (bench/parse.py)", "",
         f"Machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; corpus ../shared/corpus; "
         f"per format: each file x{args.repeat} in a warm worker (median), "
         + ("one shared worker (RSS cumulative)." if args.quick else "a fresh worker per format."), "",
         "| format | files | median ms/file | 1st parse in fresh worker ms | worker peak RSS MB |", "|---|---|---|---|---|"]
    for ext, r in fmt.items():
        L.append(f"| {ext} | {r['files']} | {r['median_ms']:.1f} | {r['first_ms']:.0f} | {r['peak_rss_mb']:.0f} |")
    if warm:
        L += ["", "Fresh worker: spawn + warm-up " + ", ".join(f"{v['spawn_ms']:.0f} ms" for v in warm.values())
              + "; first parse vs warm: " + ", ".join(f"{k} {v['first_ms']:.0f} vs {v['warm_ms']:.1f} ms"
                                                       for k, v in warm.items()) + "."]
    if batch:
        b = batch
        L += ["", f"Batch of {b['n']} files, {args.repeat} repeat(s), medians (spread = (worst-best)/best):", "",
              "| measure | value | target |", "|---|---|---|",
              f"| direct serial (fresh process, imports in) | {b['direct_cold']['median']:.2f} s (spread {b['direct_cold']['spread_pct']:.0f}%) | |",
              f"| direct serial, warm second pass | {b['direct_warm']['median']:.2f} s | |",
              f"| ingest, workers = 1 | {b['w1']['median']:.2f} s (spread {b['w1']['spread_pct']:.0f}%) | |",
              f"| pipeline overhead (1 worker vs direct) | {b['overhead_cold'] * 100:+.0f}% vs cold, {b['overhead_warm'] * 100:+.0f}% vs warm | <= 10% "
              f"{'**met**' if b['overhead_cold'] <= 0.10 else '**missed**'} |",
              f"| ingest, workers = 2 | {b['w2']['median']:.2f} s (spread {b['w2']['spread_pct']:.0f}%) | |",
              f"| 2 workers / direct serial | {b['ratio2_cold']:.2f}x cold, {b['ratio2_warm']:.2f}x warm | <= 0.6x "
              f"{'**met**' if b['ratio2_cold'] <= 0.6 else '**missed**'} |",
              f"| peak RSS of a parse worker | {b['worker_rss']:.0f} MB (per-format max {max((r['peak_rss_mb'] for r in fmt.values()), default=0):.0f} MB) | <= 600 MB "
              f"{'**met**' if b['worker_rss'] <= 600 else '**missed**'} |"]
    if skipped:
        L += ["", f"Left out ({len(skipped)}): " + "; ".join(f"{n} ({r.split(':')[0]})" for n, r in skipped) + "."]
    return "\n".join(L)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--_child":
        if sys.argv[2] == "direct":
            child_direct(Path(sys.argv[3]), Path(sys.argv[4]))
        elif sys.argv[2] == "executors":
            child_executors(sys.argv[3], Path(sys.argv[4]), Path(sys.argv[5]), int(sys.argv[6]))
        elif sys.argv[2] == "ingest-cpu":
            child_ingest_cpu(Path(sys.argv[3]))
        else:
            child_ingest(Path(sys.argv[3]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=0, help="use at most this many corpus files (0 = all parseable)")
    ap.add_argument("--copies", type=int, default=0, help="corpus copies in the batch (0 = enough for >= --min-serial s)")
    ap.add_argument("--min-serial", type=float, default=10.0, help="target serial batch length in seconds (default 10)")
    ap.add_argument("--repeat", type=int, default=3, help="repeats (per-file parses and batch runs; default 3)")
    ap.add_argument("--quick", action="store_true", help="one repeat, one copy, < 60 s")
    ap.add_argument("--no-batch", action="store_true", help="skip the batch comparison")
    ap.add_argument("--batch-only", action="store_true",
                    help="only the batch comparison (parts 1 and 2 skipped; --copies defaults to 2)")
    ap.add_argument("--max-per-format", type=int, default=0, help="at most this many files per format (0 = all)")
    ap.add_argument("--formats", default="", help="comma-separated extensions to keep, e.g. .docx,.pdf (default all)")
    ap.add_argument("--exclude-formats", default="",
                    help="comma-separated extensions to leave out, e.g. .jpg,.png (the batch of sessions 7-10 had no images)")
    ap.add_argument("--executor", default="",
                    help='compare the local pool with this executor on the same batch, e.g. "dask-local:2" (issue 16)')
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    if not CORPUS.is_dir():
        print(f"no shared corpus at {CORPUS}; nothing to benchmark")
        return 0
    if args.quick:
        args.repeat, args.copies = 1, 1
        args.max_per_format = args.max_per_format or 2
    work = Path(tempfile.mkdtemp(prefix="kbwatch-bench-parse-", dir=args.workdir))
    print(f"kbwatch parse benchmark: {os.cpu_count()} cores, Python {sys.version.split()[0]}, corpus {CORPUS}")
    t_all = time.perf_counter()
    try:
        files, skipped = select_files(work, args.max_per_format)
        if args.formats:
            files = [f for f in files if fmt_ext(f) in ext_set(args.formats)]
        if args.exclude_formats:
            files = [f for f in files if fmt_ext(f) not in ext_set(args.exclude_formats)]
        if args.files:
            files = files[: args.files]
        print(f"\nparseable: {len(files)} files; left out: {len(skipped)}")
        for name, why in skipped:
            print(f"  - {name}: {why}")
        if args.executor:
            executor_compare(files, work, args.executor, args.copies or 1, args.repeat)
            return 0
        if args.batch_only:
            fmt, warm = {}, {}
            args.copies = args.copies or 2
        else:
            fmt = per_format(files, work, args.repeat, shared_worker=args.quick)
            warm = warmup_cost(files, work, (".docx",) if args.quick else (".docx", ".pdf", ".pptx", ".xlsx"))
        batch = None
        if not args.no_batch:
            copies = args.copies
            if not copies:
                est = sum(r["sum_ms"] for r in fmt.values()) / 1000 or 0.1
                copies = max(1, int(-(-args.min_serial // est)))
                print(f"\n(sum of warm per-file medians: {est:.2f} s per corpus pass -> {copies} copies for "
                      f">= {args.min_serial:g} s serial)")
            batch = batch_compare(files, work, copies, args.repeat)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n(total benchmark time {time.perf_counter() - t_all:.0f} s)\n")
    if not args.batch_only:
        print(markdown(args, fmt, warm, batch, skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
