#!/usr/bin/env python3
"""The scan stage alone: CPU per small document, and a findings dump to prove two checkouts agree.

Modes (the ``kbwatch`` imported is whatever ``PYTHONPATH`` / the install gives, so the
same script measures or dumps any checkout):

- ``time``: the small Markdown files ``bench/ingest_text.py`` ingests (``--files`` per
  seed, seeds 1000 and 1001: 2,000 by default) are scanned by every ``kb_scan``
  implementation of the default plugin set, as the scan stage calls them
  (``kbwatch.plugins.scan.run_scanners``). Prints thread CPU per file, per scanner and
  for the whole stage, best and median of ``--repeat`` passes.
- ``dump OUT``: every record of ``../shared/bench-data/risk/*.jsonl`` and
  ``bench/data/*.jsonl``, every UTF-8 text file of ``../shared/corpus`` and the 2,000
  generated files, scanned as above; one JSON line per input with its findings
  (``Finding.public()`` plus offset and length) written to ``OUT``.
- ``compare A B``: the inputs whose findings differ between two dumps (exit 1 if any).
- ``dump OUT --name NAME``: each input scanned with the file name NAME, as the scan stage
  scans name and text in one pass; the name's findings are left out, so ``compare``
  against a dump without ``--name`` shows whether the body's findings moved.

    python bench/scan_stage.py time --repeat 5
    PYTHONPATH= python bench/scan_stage.py dump /tmp/main.jsonl     # the installed checkout
    PYTHONPATH=/work/wt/x.path python bench/scan_stage.py dump /tmp/x.jsonl
    python bench/scan_stage.py compare /tmp/main.jsonl /tmp/x.jsonl

Figures are printed, never asserted; the machine may be shared: read the spread and the load.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
SHARED = REPO.parent / "shared"
if not SHARED.is_dir():
    SHARED = Path("/work/shared")


def _make_doc():
    spec = importlib.util.spec_from_file_location("_ingest_text", BENCH / "ingest_text.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.make_doc


def small_docs(files: int) -> list[str]:
    """The texts ``bench/ingest_text.py`` writes for seeds 1000 and 1001 (``files`` each)."""
    make_doc = _make_doc()
    out = []
    for seed in (1000, 1001):
        rng = random.Random(seed)
        for i in range(files):
            out.append(make_doc(rng, i))
            if rng.random() < 0.2:  # write_docs draws the file's name from the same generator
                rng.choice(range(6))
    return out


PREFIX = "kbwatch."  # "" with --legacy DIR: a checkout from before the kbwatch package name (e.g. 2467783)


def _imp(name: str):
    return importlib.import_module(PREFIX + name)


def scanners():
    """(settings, plugin set, [(name, function)]) of the default configuration."""
    load_defaults = _imp("pipeline.config").load_defaults
    build_plugin_manager = _imp("pipeline.plugins").build_plugin_manager

    settings = load_defaults()
    ps = build_plugin_manager(settings, load_entrypoints=False)
    pm = getattr(ps, "pm", ps)
    impls = [(i.plugin_name, i.function) for i in reversed(pm.hook.kb_scan.get_hookimpls())
             if not i.hookwrapper and not getattr(i, "wrapper", False)]
    return settings, pm, impls


def cmd_time(args) -> int:
    ParsedDocument = _imp("pipeline.model").ParsedDocument
    run_scanners = _imp("plugins.scan").run_scanners

    settings, pm, impls = scanners()
    docs = small_docs(args.files)
    n = len(docs)
    for d in docs[:50]:  # warm caches and lazy imports outside the timed part
        run_scanners(pm, ParsedDocument(markdown=d), settings)
    per: dict[str, list[float]] = {name: [] for name, _ in impls}
    stage: list[float] = []
    named: list[float] = []
    for _ in range(args.repeat):
        t0 = time.thread_time()
        for d in docs:
            run_scanners(pm, ParsedDocument(markdown=d), settings)
        stage.append((time.thread_time() - t0) / n * 1000)
        if "name" in inspect.signature(run_scanners).parameters:  # the file's name scanned too
            t0 = time.thread_time()
            for k, d in enumerate(docs):
                run_scanners(pm, ParsedDocument(markdown=d), settings, name=f"notes/meeting_{k:04d}.md")
            named.append((time.thread_time() - t0) / n * 1000)
        for name, fn in impls:
            t0 = time.thread_time()
            for d in docs:
                fn(document=ParsedDocument(markdown=d), settings=settings)
            per[name].append((time.thread_time() - t0) / n * 1000)
    load = os.getloadavg()
    print(f"scan stage over {n} small files, {args.repeat} passes, thread CPU ms/file "
          f"(load average {load[0]:.2f} {load[1]:.2f}); kbwatch from {_origin()}")
    print(f"  {'run_scanners (whole stage)':30s} best {min(stage):.3f}  median {statistics.median(stage):.3f}")
    if named:
        print(f"  {'  with the file name':30s} best {min(named):.3f}  median {statistics.median(named):.3f}")
    for name, vals in per.items():
        print(f"  {name:30s} best {min(vals):.3f}  median {statistics.median(vals):.3f}")
    return 0


def _origin() -> str:
    return str(Path(_imp("pipeline").__file__).resolve().parents[1])


def inputs(files: int):
    """(key, text) of every input the dump covers."""
    for folder in (SHARED / "bench-data" / "risk", REPO / "bench" / "data"):
        for path in sorted(folder.glob("*.jsonl")):
            with path.open(encoding="utf-8") as fh:
                for k, line in enumerate(fh):
                    if line.strip():
                        rec = json.loads(line)
                        yield f"{path.name}:{k}:{rec.get('id', '')}", rec.get("text") or ""
    corpus = SHARED / "corpus"
    for path in sorted(p for p in corpus.rglob("*") if p.is_file()):
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue
        if "\x00" not in text:
            yield f"corpus:{path.relative_to(corpus)}", text
    for k, text in enumerate(small_docs(files)):
        yield f"small:{k}", text


def cmd_dump(args) -> int:
    ParsedDocument = _imp("pipeline.model").ParsedDocument
    run_scanners = _imp("plugins.scan").run_scanners

    settings, pm, _ = scanners()
    count = found = named = 0
    t0 = time.process_time()
    with open(args.out, "w", encoding="utf-8") as out:
        for key, text in inputs(args.files):
            if args.name is None:
                findings = run_scanners(pm, ParsedDocument(markdown=text), settings)
            else:  # scanned with a file name, as the scan stage does: the body's findings must not change
                findings = run_scanners(pm, ParsedDocument(markdown=text), settings, name=args.name)
                named += sum(1 for f in findings if f.line == 0)
                findings = [f for f in findings if f.line != 0]
            rows = [{**f.public(), "offset": f.offset, "length": f.length} for f in findings]
            out.write(json.dumps({"key": key, "findings": rows}, ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
            found += len(rows)
    print(f"{count} inputs, {found} findings, {time.process_time() - t0:.1f} s CPU; kbwatch from {_origin()}"
          + (f"; {named} finding(s) in the name {args.name!r} left out" if args.name is not None else ""))
    return 0


def cmd_compare(args) -> int:
    def load(p):
        with open(p, encoding="utf-8") as fh:
            return {r["key"]: r["findings"] for r in map(json.loads, fh)}

    a, b = load(args.a), load(args.b)
    diff = [k for k in a.keys() | b.keys() if a.get(k) != b.get(k)]
    print(f"{len(a)} / {len(b)} inputs, {sum(map(len, a.values()))} / {sum(map(len, b.values()))} findings, "
          f"{len(diff)} input(s) differ")
    for k in sorted(diff)[:20]:
        print(f"  {k}: {json.dumps(a.get(k), ensure_ascii=False)[:300]}\n    vs {json.dumps(b.get(k), ensure_ascii=False)[:300]}")
    return 1 if diff else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    t = sub.add_parser("time", help="thread CPU per small file, per scanner")
    t.add_argument("--files", type=int, default=1000, help="files per seed (2 seeds)")
    t.add_argument("--repeat", type=int, default=3)
    d = sub.add_parser("dump", help="findings of every input as JSON lines")
    d.add_argument("out")
    d.add_argument("--files", type=int, default=1000, help="generated small files per seed (2 seeds)")
    d.add_argument("--name", help="scan each input with this file name (its findings left out of the dump)")
    c = sub.add_parser("compare", help="inputs whose findings differ between two dumps")
    c.add_argument("a")
    c.add_argument("b")
    ap.add_argument("--legacy", metavar="DIR", help="import top-level pipeline/plugins from this checkout")
    args = ap.parse_args(argv)
    if args.legacy:
        global PREFIX
        PREFIX = ""
        sys.path.insert(0, str(Path(args.legacy).resolve()))
    return {"time": cmd_time, "dump": cmd_dump, "compare": cmd_compare}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
