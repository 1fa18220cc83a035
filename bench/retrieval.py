#!/usr/bin/env python3
"""Retrieval benchmark through the real pipeline: files → ingest → ``kbwatch ask --batch``.

For each data set of ../shared/bench-data/retrieval/ (SciFact ``train``,
CMRC 2018 ``trial`` paragraphs and sentences):

1. a fresh KB root and project (``kbwatch init``);
2. every corpus document written as one file ``sources/<name>.md``
   holding ``# <title>\\n\\n<text>`` (no heading when the document has no
   title, as the CMRC sentences). Markdown rather than ``.txt`` so the title
   becomes the parsed file's ``# `` heading and thus the index's title field,
   as for a real note; a ``.txt`` file gets ``# <file name>`` as its heading
   and the title would be body text only (the library bench measured both
   layouts within 0.0004 nDCG). File names: the corpus id when it is made of
   ``[A-Za-z0-9_.-]`` and unique case-insensitively, else a sanitised id
   plus 8 hex of its sha1; the bench keeps the name → id map;
3. ingest in-process with ``kbwatch.pipeline.ingest.run_ingest`` (what
   ``kbwatch ingest`` calls; workers = ``[service] workers`` = CPU cores),
   wall time measured, and the ``index`` stage's flushes timed separately by
   wrapping ``kbwatch.plugins.index._flush``;
4. ``kbwatch ask NAME --batch queries.jsonl --max-files 100 --budget B
   --include-flagged`` as a subprocess of the real CLI; ``selected_files``
   of each record mapped back to corpus ids → nDCG@10, recall@100.
   ``--budget`` is raised so that 100 files fit (with the default 4,000
   characters the pack holds only a handful of files), ``--include-flagged``
   so that documents the risk scan flags (e-mail addresses, numbers that look
   like phone numbers...) are still ranked; how many were flagged is printed;
5. latency: in-process per query around ``Asker.ask`` (= ``build_pack``, the
   whole ask path without interpreter start) with ``--max-files 100`` and the
   default 6 files, and around ``SearchIndex.search_documents`` (ranking only);
   the CLI batch wall time per query; and the wall time of single
   ``kbwatch ask NAME "q" --json`` processes (interpreter start included).

Then the scale run: the SciFact corpus written ``--copies`` (10) times under
distinct file names, ingested through the pipeline (51,830 chunks), and the
same latency measurements there. By default ten documents share a file, each
under its own ``## <title>`` heading (one chunk each), so the pipeline ingests
~5,200 files instead of ~52,000 (at ~60 files/s on this box that is 90 s, not
15 min); ``--per-file 1`` writes one file per document (``<id>-c<k>.md``).

    python bench/retrieval.py            # everything (~15-25 min on 2 cores)
    python bench/retrieval.py --quick    # a subset, < 2 minutes
    python bench/retrieval.py --sets cmrc2018-sent --no-scale

Exits 0 with a message when ../shared is absent. Timings are printed, never
asserted; the machine is shared, so read them as upper bounds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared"
DATA = SHARED / "bench-data" / "retrieval"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from retrieval_core import SETS, TARGETS, load, ndcg_at, pct, recall_at  # noqa: E402

PROJECT = "bench"
SAFE_RE = re.compile(r"[A-Za-z0-9_.-]+")
ASK_BUDGET = 100_000  # characters: room for 100 files (the default 4,000 holds a handful)


def kb_cmd() -> list[str]:
    """The CLI of this checkout (``python run.py`` = ``kbwatch``)."""
    return [sys.executable, str(REPO / "run.py")]


def file_names(ids: list[str]) -> dict[str, str]:
    """corpus id -> unique, safe file stem (also unique case-insensitively)."""
    out: dict[str, str] = {}
    seen: set[str] = set()
    for did in ids:
        stem = did
        if not SAFE_RE.fullmatch(did) or did.startswith(".") or did.lower() in seen or len(did) > 100:
            base = re.sub(r"[^A-Za-z0-9_.-]+", "_", did).strip("._")[:60] or "doc"
            stem = f"{base}-{hashlib.sha1(did.encode('utf-8')).hexdigest()[:8]}"
        assert stem.lower() not in seen, f"file name collision for {did!r}"
        seen.add(stem.lower())
        out[did] = stem
    return out


def doc_markdown(doc: dict) -> str:
    title = " ".join((doc.get("title") or "").split())
    text = doc.get("text") or ""
    return f"# {title}\n\n{text}\n" if title else f"{text}\n"


def init_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(kb_cmd() + ["init", PROJECT, "--root", str(root)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return root / PROJECT


def write_sources(project: Path, corpus: list[dict], names: dict[str, str], suffix: str = "") -> int:
    src = project / "sources"
    for doc in corpus:
        (src / f"{names[doc['_id']]}{suffix}.md").write_text(doc_markdown(doc), encoding="utf-8")
    return len(corpus)


def ingest(root: Path) -> dict:
    """In-process run_ingest (what ``kbwatch ingest`` runs), index flushes timed apart."""
    import kbwatch.plugins.index as index_plugin
    from kbwatch.pipeline.ingest import run_ingest
    from kbwatch.pipeline.kb import KnowledgeBase
    from kbwatch.pipeline.logs import setup_logging

    kb = KnowledgeBase(root)
    setup_logging(kb.settings, kb.state, quiet=True)
    kb.plugins, kb.journal  # noqa: B018 - opened outside the timed part
    spent = {"index": 0.0, "flushes": 0}
    orig = index_plugin._flush

    def timed_flush(session, settings):
        t = time.perf_counter()
        try:
            return orig(session, settings)
        finally:
            spent["index"] += time.perf_counter() - t
            spent["flushes"] += 1

    index_plugin._flush = timed_flush
    try:
        t0 = time.perf_counter()
        totals, _ = run_ingest(kb, [])
        wall = time.perf_counter() - t0
    finally:
        index_plugin._flush = orig
        from kbwatch.plugins.retrieval.navigation import close_indexes

        close_indexes()
        kb.close()
    return {"wall_s": wall, "index_s": spent["index"], "flushes": spent["flushes"], "totals": totals,
            "workers": kb.settings["service"]["workers"] or os.cpu_count()}


def ask_batch(root: Path, queries: dict[str, str], work: Path, max_files: int = 100) -> tuple[dict, float]:
    qfile = work / "queries.jsonl"
    with qfile.open("w", encoding="utf-8") as f:
        for qid, text in queries.items():
            if not text.strip():
                continue  # `kbwatch ask` rejects an empty question (scored 0 below, as no result)
            f.write(json.dumps({"id": qid, "query": text}, ensure_ascii=False) + "\n")
    t0 = time.perf_counter()
    p = subprocess.run(kb_cmd() + ["ask", PROJECT, "--batch", str(qfile), "--max-files", str(max_files),
                                   "--budget", str(ASK_BUDGET), "--include-flagged", "--root", str(root)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8")
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"ask --batch failed ({p.returncode}): {p.stderr[-2000:]}")
    records = {}
    for line in p.stdout.splitlines():
        if line.strip():
            item = json.loads(line)
            records[item["id"]] = item["record"]
    return records, wall


def cli_single(root: Path, queries: list[str], max_files: int = 100) -> list[float]:
    lat = []
    for q in queries:
        t0 = time.perf_counter()
        subprocess.run(kb_cmd() + ["ask", PROJECT, q, "--json", "--max-files", str(max_files),
                                   "--budget", str(ASK_BUDGET), "--include-flagged", "--root", str(root)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lat.append((time.perf_counter() - t0) * 1000)
    return lat


def inprocess_latency(root: Path, queries: list[str]) -> dict:
    """Per-query ms around Asker.ask (build_pack) at 100 and 6 files, and around search_documents."""
    from kbwatch.pipeline.kb import KnowledgeBase
    from kbwatch.plugins.retrieval.navigation import close_indexes
    from kbwatch.plugins.ask import Asker

    kb = KnowledgeBase(root)
    asker = Asker(kb, kb.project(PROJECT), include_flagged=True)
    out: dict[str, list[float]] = {"ask100": [], "ask6": [], "search100": []}
    for q in queries[:20]:  # warm the page cache and the caches of sqlite
        asker.ask(q, 100, ASK_BUDGET)
    for q in queries:
        t = time.perf_counter()
        asker.ask(q + " ", 100, ASK_BUDGET)  # trailing space: bypass the query-token cache
        out["ask100"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        asker.ask(q + "  ", 6, 4000)
        out["ask6"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        asker.index.search_documents(PROJECT, q + "   ", limit=100, chunks_per_doc=1, with_text=False)
        out["search100"].append((time.perf_counter() - t) * 1000)
    stats = asker.index.stats(PROJECT)
    close_indexes()
    kb.close()
    res = {k: (pct(v, 50), pct(v, 95)) for k, v in out.items()}
    res["stats"] = stats
    return res


def fmt_pair(p: tuple[float, float]) -> str:
    return f"{p[0]:.1f} / {p[1]:.1f}"


def run_set(name: str, work: Path, quick: bool, n_single: int) -> dict:
    split = SETS[name]
    corpus, queries, qrels = load(name, split)
    if quick:
        rng = random.Random(7)
        qids = sorted(rng.sample(sorted(queries), min(len(queries), 100)))
        queries = {q: queries[q] for q in qids}
        # every relevant document of the sampled queries + a random share of the rest
        need = {d for q in qids for d in qrels[q]}
        rest = [d for d in corpus if d["_id"] not in need]
        keep = min(len(rest), 700 if name != "cmrc2018-sent" else 1200)
        corpus = [d for d in corpus if d["_id"] in need] + rng.sample(rest, keep)
    root = work / name
    project = init_project(root)
    names = file_names([d["_id"] for d in corpus])
    back = {f"parsed/{stem}.md": did for did, stem in names.items()}
    t0 = time.perf_counter()
    write_sources(project, corpus, names)
    write_s = time.perf_counter() - t0
    ing = ingest(root)
    if ing["totals"].get("done", 0) != len(corpus):
        print(f"  !! {name}: ingest totals {ing['totals']} for {len(corpus)} files", file=sys.stderr)
    records, batch_wall = ask_batch(root, queries, work)
    nd, rc, flagged, short = [], [], set(), 0
    empty = 0
    for qid in queries:
        rec = records.get(qid)
        if rec is None:  # empty query text: nothing asked, nothing found
            empty += 1
            nd.append(0.0)
            rc.append(0.0)
            continue
        pack = rec["activated_packs"][0]
        ranked = [back.get(p, p) for p in pack["selected_files"]]
        if len(ranked) < 100:
            short += 1
        for w in pack["warnings"]:
            if "pending findings" in w["message"] or "pending review" in w["message"]:
                flagged.add(w.get("path"))
        nd.append(ndcg_at(ranked, qrels[qid]))
        rc.append(recall_at(ranked, qrels[qid]))
    qlist = [q for q in queries.values() if q.strip()]
    lat = inprocess_latency(root, qlist if not quick else qlist[:100])
    single = cli_single(root, qlist[:n_single]) if n_single else []
    return {
        "set": name, "split": split, "docs": len(corpus), "chunks": lat["stats"]["chunks"],
        "queries": len(queries), "ndcg@10": sum(nd) / len(nd), "recall@100": sum(rc) / len(rc),
        "target": TARGETS[name], "write_s": write_s, **{f"ingest_{k}": v for k, v in ing.items()},
        "batch_wall_s": batch_wall, "batch_ms_per_q": batch_wall * 1000 / len(queries),
        "lat": lat, "single": (pct(single, 50), pct(single, 95)) if single else None,
        "flagged_seen": len(flagged), "short_lists": short, "empty_queries": empty,
    }


def run_scale(work: Path, copies: int, per_file: int, n_queries: int, n_single: int) -> dict:
    """SciFact written ``copies`` times under distinct names; ``per_file`` documents per file, each
    under its own ``## <title>`` heading (a heading starts a chunk, so chunks = documents x copies)."""
    corpus, queries, _ = load("scifact", SETS["scifact"])
    root = work / "scale"
    project = init_project(root)
    names = file_names([d["_id"] for d in corpus])
    t0 = time.perf_counter()
    n_files = 0
    for k in range(copies):
        if per_file <= 1:
            n_files += write_sources(project, corpus, names, suffix=f"-c{k}")
            continue
        for g in range(0, len(corpus), per_file):
            part = corpus[g : g + per_file]
            text = f"# scifact part {g // per_file} copy {k}\n\n" + "\n\n".join(
                f"## {' '.join((d.get('title') or names[d['_id']]).split())}\n\n{d.get('text') or ''}" for d in part)
            (project / "sources" / f"scifact-p{g // per_file:04d}-c{k}.md").write_text(text + "\n", encoding="utf-8")
            n_files += 1
    write_s = time.perf_counter() - t0
    ing = ingest(root)
    qlist = list(queries.values())[:n_queries]
    lat = inprocess_latency(root, qlist)
    records, batch_wall = ask_batch(root, dict(list(queries.items())[:n_queries]), work)
    single = cli_single(root, qlist[:n_single]) if n_single else []
    return {"docs": len(corpus) * copies, "files": n_files, "chunks": lat["stats"]["chunks"],
            "segments": lat["stats"]["segments"], "write_s": write_s, **{f"ingest_{k}": v for k, v in ing.items()},
            "lat": lat, "batch_ms_per_q": batch_wall * 1000 / len(qlist),
            "single": (pct(single, 50), pct(single, 95)) if single else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", nargs="*", default=list(SETS), choices=list(SETS))
    ap.add_argument("--quick", action="store_true", help="a subset of each set (100 queries, their relevant documents + "
                    "700 others, 1,200 for the sentences), no scale run; ~1.5 min")
    ap.add_argument("--no-scale", action="store_true", help="skip the >= 50,000-chunk run")
    ap.add_argument("--copies", type=int, default=10, help="SciFact copies for the scale run (10 -> 51,830 chunks)")
    ap.add_argument("--per-file", type=int, default=10,
                    help="SciFact documents per file in the scale run (1 = one file each: ~52k files to ingest)")
    ap.add_argument("--single", type=int, default=20, help="single `kbwatch ask` processes timed per set")
    ap.add_argument("--keep", type=Path, default=None, help="build the KB roots here and keep them")
    args = ap.parse_args()
    if not DATA.is_dir():
        print(f"retrieval bench skipped: {DATA} not found (needs ../shared/bench-data/retrieval)")
        return 0
    n_single = min(args.single, 3) if args.quick else args.single
    tmp = None
    if args.keep:
        work = args.keep.resolve()
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="kbwatch-rbench-")
        work = Path(tmp.name)
    ok = True
    try:
        print(f"{'set':<14} {'split':<6} {'docs':>6} {'chunks':>6} {'q':>5} {'nDCG@10':>8} {'R@100':>6} "
              f"{'ingest s':>8} {'index s':>7}  target")
        results = []
        for name in args.sets:
            r = run_set(name, work, args.quick, n_single)
            results.append(r)
            hit = r["ndcg@10"] >= r["target"]
            ok &= hit
            verdict = "n/a (subset)" if args.quick else ("ok" if hit else "MISSED")
            print(f"{r['set']:<14} {r['split']:<6} {r['docs']:>6} {r['chunks']:>6} {r['queries']:>5} "
                  f"{r['ndcg@10']:>8.4f} {r['recall@100']:>6.4f} {r['ingest_wall_s']:>8.1f} {r['ingest_index_s']:>7.1f}  "
                  f">= {r['target']} {verdict}", flush=True)
            lat = r["lat"]
            print(f"    latency ms p50/p95: Asker.ask 100 files {fmt_pair(lat['ask100'])}; 6 files {fmt_pair(lat['ask6'])}; "
                  f"search_documents {fmt_pair(lat['search100'])}; CLI --batch {r['batch_ms_per_q']:.1f}/query (amortised)"
                  + (f"; single CLI process {fmt_pair(r['single'])}" if r["single"] else ""), flush=True)
            if r["docs"] >= 5000:
                a = lat["ask100"]
                print(f"    latency target at >= 5,000 documents (Asker.ask, 100 files): p50 {a[0]:.1f} <= 20 ms "
                      f"{'ok' if a[0] <= 20 else 'MISSED'}, p95 {a[1]:.1f} <= 100 ms {'ok' if a[1] <= 100 else 'MISSED'}",
                      flush=True)
            print(f"    ingest: {r['docs']} files in {r['ingest_wall_s']:.1f} s ({r['docs'] / r['ingest_wall_s']:.0f} files/s, "
                  f"{r['ingest_workers']} workers), index stage {r['ingest_index_s']:.1f} s in {r['ingest_flushes']} flushes; "
                  f"flagged documents seen in packs: {r['flagged_seen']}; lists shorter than 100: {r['short_lists']}; "
                  f"empty queries (scored 0): {r['empty_queries']}",
                  flush=True)
        if not (args.quick or args.no_scale):
            s = run_scale(work, args.copies, args.per_file, 300, n_single)
            hit = s["lat"]["ask100"][0] <= 50 and s["chunks"] >= 50_000
            print(f"scale: {s['chunks']} chunks in {s['segments']} segment(s) (scifact x{args.copies} = {s['docs']} documents "
                  f"in {s['files']} files): "
                  f"ingest {s['ingest_wall_s']:.0f} s (index stage {s['ingest_index_s']:.0f} s); latency ms p50/p95: "
                  f"Asker.ask 100 files {fmt_pair(s['lat']['ask100'])}, 6 files {fmt_pair(s['lat']['ask6'])}, "
                  f"search_documents {fmt_pair(s['lat']['search100'])}; CLI --batch {s['batch_ms_per_q']:.1f}/query"
                  + (f"; single CLI process {fmt_pair(s['single'])}" if s["single"] else "")
                  + f"  (target p50 <= 50 ms {'ok' if hit else 'MISSED'})", flush=True)
        if args.quick:
            print("quick mode: a smaller corpus is an easier task; these nDCG figures are not comparable with the targets")
        else:
            print("all quality targets met" if ok else "some quality targets missed (see above)")
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
