"""Benchmark the retrieval library (plugins/_retrieval) directly.

Indexes every corpus document of ../shared/bench-data/retrieval/<set> as one
document, runs every query of the given split, and prints nDCG@10, recall@100,
index build time and per-query latency p50/p95; then replicates the SciFact
corpus to >= 50,000 chunks and measures query latency there.

    python bench/retrieval_core.py                 # all sets, both layouts
    python bench/retrieval_core.py --sets scifact --layout pipeline
    python bench/retrieval_core.py --no-scale

Layouts:
  plain     upsert_document(title=<title>, text="<title>\\n\\n<text>")
  pipeline  what ingest produces for a file <id>.txt holding "<title>\\n\\n<text>":
            header comments, "# <id>", then the text; title=<id>
Both are the "title + text as one document" setting of BEIR.

Single process, single thread. Exits 0 with a message when ../shared is absent.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KBWATCH_SHARED") or Path(__file__).resolve().parents[2] / "shared")
DATA = SHARED / "bench-data" / "retrieval"
sys.path.insert(0, str(REPO))

SETS = {"scifact": "train", "cmrc2018": "trial", "cmrc2018-sent": "trial"}
TARGETS = {"scifact": 0.69, "cmrc2018": 0.985, "cmrc2018-sent": 0.76}


def load(name: str, split: str):
    corpus = [json.loads(line) for line in (DATA / name / "corpus.jsonl").open(encoding="utf-8")]
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with (DATA / name / "qrels" / f"{split}.tsv").open(encoding="utf-8") as f:
        next(f)
        for line in f:
            q, d, s = line.rstrip("\n").split("\t")
            qrels[q][d] = int(s)
    queries = {}
    for line in (DATA / name / "queries.jsonl").open(encoding="utf-8"):
        q = json.loads(line)
        if q["_id"] in qrels:
            queries[q["_id"]] = q["text"]
    return corpus, queries, qrels


def ndcg_at(ranked: list[str], rel: dict[str, int], k: int = 10) -> float:
    dcg = sum((2 ** rel.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((v for v in rel.values() if v > 0), reverse=True)[:k]
    idcg = sum((2**v - 1) / math.log2(i + 2) for i, v in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], rel: dict[str, int], k: int = 100) -> float:
    rset = {d for d, v in rel.items() if v > 0}
    return len(rset & set(ranked[:k])) / len(rset) if rset else 0.0


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def as_document(doc: dict, layout: str) -> tuple[str, str, str]:
    """(doc_path, title, text) for one corpus document."""
    did, title, text = doc["_id"], doc.get("title") or "", doc.get("text") or ""
    body = f"{title}\n\n{text}" if title else text
    if layout == "plain":
        return f"parsed/{did}.md", title or did, body
    parsed = (
        f"<!-- source: {did}.txt -->\n"
        f"<!-- archived: archive/{did}_202601010000.txt -->\n"
        f"<!-- parsed_at: 2026-01-01 00:00 -->\n\n"
        f"# {did}\n\n{body}\n"
    )
    return f"parsed/{did}.md", did, parsed


def run_set(name: str, layout: str, workdir: Path, **index_kw) -> dict:
    from kbwatch.plugins.retrieval import SearchIndex

    split = SETS[name]
    corpus, queries, qrels = load(name, split)
    db = workdir / f"{name}-{layout}.sqlite3"
    idx = SearchIndex(db, **index_kw)
    t0 = time.perf_counter()
    with idx.batch():
        for doc in corpus:
            idx.upsert_document(name, *as_document(doc, layout))
    build = time.perf_counter() - t0
    stats = idx.stats(name)
    nd, rc, lat = [], [], []
    for qid, text in queries.items():
        t = time.perf_counter()
        hits = idx.search_documents(name, text, limit=100, chunks_per_doc=1, with_text=False)
        lat.append((time.perf_counter() - t) * 1000)
        ranked = [h.doc_path[len("parsed/") : -len(".md")] for h in hits]
        nd.append(ndcg_at(ranked, qrels[qid]))
        rc.append(recall_at(ranked, qrels[qid]))
    # the whole ask path: build_pack with its defaults (6 files, 4000 characters)
    from kbwatch.plugins.retrieval import build_pack

    pack_lat = []
    for text in list(queries.values())[:200]:
        t = time.perf_counter()
        build_pack(idx, name, text)
        pack_lat.append((time.perf_counter() - t) * 1000)
    idx.close()
    return {
        "pack_p50_ms": pct(pack_lat, 50),
        "pack_p95_ms": pct(pack_lat, 95),
        "set": name,
        "split": split,
        "layout": layout,
        "docs": len(corpus),
        "chunks": stats["chunks"],
        "queries": len(queries),
        "ndcg@10": sum(nd) / len(nd),
        "recall@100": sum(rc) / len(rc),
        "build_s": build,
        "p50_ms": pct(lat, 50),
        "p95_ms": pct(lat, 95),
        "target": TARGETS[name],
    }


def run_scale(workdir: Path, name: str = "scifact", min_chunks: int = 50_000, n_queries: int = 300,
              **index_kw) -> dict:
    """Replicate a corpus until the index holds >= min_chunks chunks; time top-10 chunk queries."""
    from kbwatch.plugins.retrieval import SearchIndex

    corpus, queries, _ = load(name, SETS[name])
    idx = SearchIndex(workdir / f"scale-{name}.sqlite3", **index_kw)
    t0 = time.perf_counter()
    copy = 0
    while idx.stats("scale")["chunks"] < min_chunks:
        with idx.batch():
            for doc in corpus:
                path, title, text = as_document(doc, "plain")
                idx.upsert_document("scale", path.replace(".md", f"-{copy}.md"), title, text)
        copy += 1
    build = time.perf_counter() - t0
    chunks = idx.stats("scale")["chunks"]
    lat = []
    for text in list(queries.values())[:n_queries]:
        t = time.perf_counter()
        idx.search("scale", text, limit=10)
        lat.append((time.perf_counter() - t) * 1000)
    # incremental update cost at that size: one new document, one replaced, one removed
    path, title, text = as_document(corpus[0], "plain")
    t = time.perf_counter()
    idx.upsert_document("scale", "parsed/new-doc.md", title, text)
    idx.upsert_document("scale", path.replace(".md", "-0.md"), title, text + "\n\nedited")
    idx.remove_document("scale", path.replace(".md", "-1.md"))
    upd = (time.perf_counter() - t) * 1000 / 3
    idx.close()
    return {"chunks": chunks, "copies": copy, "build_s": build, "p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95),
            "update_ms": upd}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", nargs="*", default=list(SETS), choices=list(SETS))
    ap.add_argument("--layout", choices=["plain", "pipeline", "both"], default="both")
    ap.add_argument("--no-scale", action="store_true", help="skip the 50,000-chunk latency run")
    ap.add_argument("--title-weight", type=float, default=None, help="override the title-field weight (tuning)")
    ap.add_argument("--k1-word", type=float, default=None)
    ap.add_argument("--b-word", type=float, default=None)
    ap.add_argument("--k1-cjk", type=float, default=None)
    ap.add_argument("--b-cjk", type=float, default=None)
    args = ap.parse_args()
    index_kw = {k: v for k, v in {"title_weight": args.title_weight, "k1_word": args.k1_word, "b_word": args.b_word,
                                  "k1_cjk": args.k1_cjk, "b_cjk": args.b_cjk}.items() if v is not None}
    if not DATA.is_dir():
        print(f"retrieval bench skipped: {DATA} not found (needs ../shared/bench-data/retrieval)")
        return 0
    layouts = ["plain", "pipeline"] if args.layout == "both" else [args.layout]
    ok = True
    with tempfile.TemporaryDirectory(prefix="kbwatch-bench-") as tmp:
        work = Path(tmp)
        print(f"{'set':<14} {'split':<6} {'layout':<9} {'docs':>6} {'chunks':>6} {'q':>5} "
              f"{'nDCG@10':>8} {'R@100':>6} {'build s':>8} {'p50 ms':>7} {'p95 ms':>7} {'pack p50/p95':>13}  target")
        for name in args.sets:
            for layout in layouts:
                r = run_set(name, layout, work, **index_kw)
                hit = r["ndcg@10"] >= r["target"]
                ok &= hit
                print(f"{r['set']:<14} {r['split']:<6} {r['layout']:<9} {r['docs']:>6} {r['chunks']:>6} "
                      f"{r['queries']:>5} {r['ndcg@10']:>8.4f} {r['recall@100']:>6.4f} {r['build_s']:>8.2f} "
                      f"{r['p50_ms']:>7.2f} {r['p95_ms']:>7.2f} {r['pack_p50_ms']:>6.1f}/{r['pack_p95_ms']:<6.1f}  >= {r['target']} {'ok' if hit else 'MISSED'}",
                      flush=True)
        if not args.no_scale:
            for name in ("scifact", "cmrc2018-sent"):
                s = run_scale(work, name, **index_kw)
                hit = s["p50_ms"] <= 50
                print(f"scale: {s['chunks']} chunks ({name} x{s['copies']}), build {s['build_s']:.1f} s, "
                      f"top-10 query p50 {s['p50_ms']:.2f} ms, p95 {s['p95_ms']:.2f} ms "
                      f"(target p50 <= 50 ms {'ok' if hit else 'MISSED'}); "
                      f"single-document update {s['update_ms']:.1f} ms", flush=True)
    print("all targets met" if ok else "some quality targets missed (see above)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
