#!/usr/bin/env python3
"""kbwatch's one-shot ingest vs LlamaIndex's ingestion pipeline + BM25 index, alternated (issue 12).

Issue 12: "today 2,000 small Markdown files take about as long as LlamaIndex's ingestion
pipeline with a BM25 index, which does far less — fsync, scan, archive and index included;
don't lose that". This script measures that comparison side by side in one run.

Every round builds a fresh temp root with ``--files`` small Markdown files (``write_docs`` of
``bench/ingest_text.py``: 300 B .. ~2 KB, English and Chinese, some in sub-folders; seed
1000 + round) and a copy of the same files for LlamaIndex, then runs, in alternated order
(A first in rounds 1, 3, ..., B first in rounds 2, 4, ...):

A. ``kbwatch ingest`` as a user runs it, a subprocess of kbwatch's venv:
   ``python run.py ingest --root ROOT`` (parse, risk scan, durable archive with fsync,
   manifest, project.md/KNOWLEDGE.md, search index). Checked: exit 0, the summary line says
   N done, manifest.json lists N files, archive/ holds N copies.
B. ``bench/llamaindex_runner.py`` as a subprocess of the LlamaIndex venv (``--li-python``):
   SimpleDirectoryReader(recursive) -> IngestionPipeline([SentenceSplitter()]) (``--markdown``:
   MarkdownNodeParser first) -> BM25Retriever.from_defaults(nodes) -> retriever.persist(dir),
   so both sides end with a searchable index on disk (LlamaIndex's: no fsync, no archive,
   no scan, no manifest). Checked: N documents read.

The figure is the subprocess wall time of each, interpreter start and imports included on
both sides: files/s of each and the ratio kbwatch/LlamaIndex (> 1 means kbwatch is faster),
per round and the median of the per-round values. Also printed: LlamaIndex's in-process time
for its work (imports excluded, as the runner reports it) and, unless ``--no-inprocess``,
kbwatch's in-process ``run_ingest`` on a third fresh root with the same files (as
``bench/ingest_text.py`` times it: knowledge base opened outside the timed part), so the two
"work only" figures can be compared too.

Offline: the LlamaIndex side must fetch nothing. SentenceSplitter counts tokens with tiktoken
``cl100k_base`` and LlamaIndex loads NLTK ``stopwords``/``punkt_tab``; both would be
downloaded on first use, but llama-index-core ships them inside its wheel
(``llama_index/core/_static/tiktoken_cache`` and ``.../nltk_cache`` in the venv). The runner
sets ``TIKTOKEN_CACHE_DIR`` and ``NLTK_DATA`` to those folders before importing LlamaIndex and
makes every outgoing TCP connect raise; both subprocesses also run with
``HTTP_PROXY``/``HTTPS_PROXY`` pointing at a closed port (127.0.0.1:9). A check run on a few
files (reloading the persisted index and querying it) precedes the rounds.

Install LlamaIndex in its own venv, never in kbwatch's:

    python3 -m venv /work/li-venv
    /work/li-venv/bin/pip install llama-index-core llama-index-retrievers-bm25

Run with kbwatch's venv:

    /work/main/.venv/bin/python bench/llamaindex_ingest.py --li-python /work/li-venv/bin/python
    /work/main/.venv/bin/python bench/llamaindex_ingest.py --files 2000 --rounds 3 --markdown

Exit 2 with a one-line message if the LlamaIndex python is missing or lacks the packages.
Timings are printed, never asserted. The machine is shared: read the per-round values.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RUNNER = HERE / "llamaindex_runner.py"
DONE = re.compile(r"ingest: (\d+) done")
# no file may be fetched: any HTTP(S) client that honours the proxy variables hits a closed port
OFFLINE_ENV = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
               "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9"}


def load_ingest_text():
    spec = importlib.util.spec_from_file_location("_ingest_text", HERE / "ingest_text.py")
    it = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(it)
    return it


def child_env() -> dict:
    env = dict(os.environ)
    for k in ("NO_PROXY", "no_proxy"):
        env.pop(k, None)
    env.update(OFFLINE_ENV)
    return env


def fail(msg: str) -> None:
    print(f"llamaindex_ingest: {msg}", file=sys.stderr)
    raise SystemExit(2)


def run_li(li_python: str, src: Path, out: Path, markdown: bool, check: bool = False) -> tuple[float, dict]:
    """(subprocess wall seconds, the runner's JSON) of one LlamaIndex ingest of ``src``."""
    cmd = [li_python, str(RUNNER), str(src), str(out)] + (["--markdown"] if markdown else []) + \
          (["--check"] if check else [])
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), timeout=3600)
    wall = time.perf_counter() - t0
    lines = p.stdout.strip().splitlines()
    try:
        res = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        res = {}
    if p.returncode != 0 or "error" in res or "work" not in res:
        err = res.get("error") or (p.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"LlamaIndex runner exit {p.returncode}: {err}")
    if "NLTK download error" in p.stdout or "network access attempted" in p.stdout + p.stderr:
        raise RuntimeError("LlamaIndex runner tried to download a file")
    return wall, res


def run_kb(it, root: Path, n: int) -> float:
    """Subprocess wall seconds of ``kbwatch ingest --root ROOT`` (the CLI of ``bench/ingest_text.py``,
    module ``it``); checks all ``n`` were ingested."""
    cmd = it.kb_cmd() + ["ingest", "--root", str(root)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), timeout=3600)
    wall = time.perf_counter() - t0
    m = DONE.search(p.stdout)
    proj = next(d for d in root.iterdir() if d.is_dir() and (d / "manifest.json").exists())
    listed = len(json.loads((proj / "manifest.json").read_text(encoding="utf-8"))["files"])
    archived = sum(1 for f in (proj / "archive").rglob("*") if f.is_file())
    if p.returncode != 0 or not m or int(m.group(1)) != n or listed != n or archived != n:
        print(f"  !! kbwatch ingest: exit {p.returncode}, '{p.stdout.strip()}', manifest {listed}, "
              f"archive {archived}, expected {n}", file=sys.stderr)
    return wall


def med(values: list[float]) -> float:
    return statistics.median(values)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=2000, help="Markdown files per round (default 2000)")
    ap.add_argument("--rounds", type=int, default=3, help="alternated rounds (default 3)")
    ap.add_argument("--li-python", default="/work/li-venv/bin/python",
                    help="python of the venv holding llama-index-core and llama-index-retrievers-bm25")
    ap.add_argument("--markdown", action="store_true", help="LlamaIndex: MarkdownNodeParser before the splitter")
    ap.add_argument("--no-inprocess", action="store_true", help="skip kbwatch's in-process run_ingest")
    ap.add_argument("--workdir", type=Path, default=None, help="where temp roots go (default: system temp)")
    ap.add_argument("--keep", action="store_true", help="keep the temp directory")
    args = ap.parse_args(argv)

    li = shutil.which(args.li_python) or args.li_python
    if not (os.path.isfile(li) and os.access(li, os.X_OK)):
        fail(f"LlamaIndex python {args.li_python} not found; create it with: python3 -m venv /work/li-venv && "
             f"/work/li-venv/bin/pip install llama-index-core llama-index-retrievers-bm25")
    probe = subprocess.run([li, "-c", "import llama_index.core, llama_index.retrievers.bm25"],
                           capture_output=True, text=True, env=child_env())
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["import failed"])[-1]
        fail(f"{li} lacks llama-index-core / llama-index-retrievers-bm25 ({last}); "
             f"install them with: {li} -m pip install llama-index-core llama-index-retrievers-bm25")

    it = load_ingest_text()
    n = args.files
    work = Path(tempfile.mkdtemp(prefix="kbwatch-bench-llamaindex-", dir=args.workdir))
    try:
        # check run: a few files, index reloaded from disk and queried, nothing downloaded
        chk = work / "check"
        it.write_docs(chk / "src", 20, seed=7)
        try:
            _, res = run_li(li, chk / "src", chk / "index", args.markdown, check=True)
        except RuntimeError as e:
            fail(str(e))
        shutil.rmtree(chk, ignore_errors=True)
        kb_version = subprocess.run(it.kb_cmd() + ["--version"], capture_output=True,
                                    text=True).stdout.strip().replace("kbwatch, version ", "")
        v = res["versions"]
        print(f"kbwatch: {kb_version} ({REPO}), Python {sys.version.split()[0]}")
        print(f"LlamaIndex: llama-index-core {v['llama-index-core']}, llama-index-retrievers-bm25 "
              f"{v['llama-index-retrievers-bm25']}, bm25s {v['bm25s']}, PyStemmer {v['PyStemmer']}, "
              f"tiktoken {v['tiktoken']}, nltk {v['nltk']}, Python {v['python']} ({li})")
        print(f"LlamaIndex pipeline: SimpleDirectoryReader -> "
              f"{'MarkdownNodeParser + ' if args.markdown else ''}SentenceSplitter -> BM25Retriever -> persist; "
              f"check run: index reloaded from disk, query -> {res['check_hits']} hits, no download")
        print(f"{n} files a round, {args.rounds} rounds, order alternated; wall time of each subprocess "
              f"(start + imports included); kbwatch/LlamaIndex > 1 means kbwatch is faster; {os.cpu_count()} CPUs")

        kb_t, li_t, li_work, li_imp, kb_inproc, ratio, ratio_work = [], [], [], [], [], [], []
        nbytes = 0
        for r in range(args.rounds):
            rd = work / f"r{r}"
            proj = it.init_root(rd / "kb")
            nbytes = it.write_docs(proj / "sources", n, seed=1000 + r)
            shutil.copytree(proj / "sources", rd / "li-src")
            if not args.no_inprocess:
                shutil.copytree(proj / "sources", it.init_root(rd / "kb-inproc") / "sources", dirs_exist_ok=True)
            a_first = r % 2 == 0
            for side in ("A", "B") if a_first else ("B", "A"):
                if side == "A":
                    kb_t.append(run_kb(it, rd / "kb", n))
                    if not args.no_inprocess:
                        res_in = it.ingest_inprocess(rd / "kb-inproc")
                        it.check_totals(res_in["totals"], n, "in-process ingest")
                        kb_inproc.append(res_in["ingest"])
                else:
                    wall, res = run_li(li, rd / "li-src", rd / "li-index", args.markdown)
                    if res["docs"] != n:
                        print(f"  !! LlamaIndex read {res['docs']} documents, expected {n}", file=sys.stderr)
                    li_t.append(wall)
                    li_work.append(res["work"])
                    li_imp.append(res["imports"])
            ratio.append(li_t[-1] / kb_t[-1])
            line = (f"round {r + 1} ({'kbwatch' if a_first else 'LlamaIndex'} first): "
                    f"kbwatch {kb_t[-1]:.2f} s = {n / kb_t[-1]:.0f} files/s | "
                    f"LlamaIndex {li_t[-1]:.2f} s = {n / li_t[-1]:.0f} files/s "
                    f"(work {li_work[-1]:.2f} s = {n / li_work[-1]:.0f} files/s: read {res['read']:.2f}, "
                    f"pipeline {res['pipeline']:.2f}, bm25 {res['bm25']:.2f}, persist {res['persist']:.2f}; "
                    f"imports {li_imp[-1]:.2f} s; {res['nodes']} nodes) | kbwatch/LlamaIndex {ratio[-1]:.2f}")
            if kb_inproc:
                ratio_work.append(li_work[-1] / kb_inproc[-1])
                line += (f" | in-process: kbwatch run_ingest {kb_inproc[-1]:.2f} s = {n / kb_inproc[-1]:.0f} files/s, "
                         f"kbwatch/LlamaIndex work {ratio_work[-1]:.2f}")
            print(line, flush=True)
            if not args.keep:
                shutil.rmtree(rd, ignore_errors=True)

        load = os.getloadavg()
        print(f"\nmedians over {args.rounds} rounds ({n} files, {nbytes / 1024:.0f} KiB in the last round):")
        print(f"  subprocess wall: kbwatch ingest {n / med(kb_t):.0f} files/s ({med(kb_t):.2f} s), "
              f"LlamaIndex {n / med(li_t):.0f} files/s ({med(li_t):.2f} s); "
              f"kbwatch/LlamaIndex {med(ratio):.2f} (per round: {', '.join(f'{x:.2f}' for x in ratio)})")
        print(f"  LlamaIndex work only (imports excluded): {n / med(li_work):.0f} files/s ({med(li_work):.2f} s), "
              f"imports {med(li_imp):.2f} s")
        if kb_inproc:
            print(f"  kbwatch in-process run_ingest: {n / med(kb_inproc):.0f} files/s ({med(kb_inproc):.2f} s); "
                  f"kbwatch/LlamaIndex work {med(ratio_work):.2f} (per round: "
                  f"{', '.join(f'{x:.2f}' for x in ratio_work)})")
        print(f"  load average {load[0]:.2f}")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
