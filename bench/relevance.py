#!/usr/bin/env python3
"""Relevance and ranking bench (issue 14 items 2 and 6), library level, one run.

Prints, on the tuning splits of ../shared/bench-data/retrieval (SciFact train,
CMRC 2018 trial paragraphs and sentences; never the hidden test splits):

1. **Ranking CV**: k-fold cross-validation (``--folds`` 5, queries shuffled
   with a fixed seed) of the ranking parameters on SciFact train over the grid
   lead bonus for words x title weight x k1 x b. Per fold: the configuration
   best on the other folds and its held-out nDCG@10; the fold spread (min,
   max, standard deviation); the mean held-out score of every configuration
   and the simplest one within one standard error of the best (the choice).
2. **nDCG@10 before / after** on the three sets: "before" is the ranking as it
   was (lead bonus 3 for words too), "after" the library's defaults.
3. **Relevance gate**: the IDF-weighted coverage of every query's best chunk
   (``kbwatch.plugins.retrieval.relevance``) in its own project (answerable)
   and in the other language's project (SciFact claims asked of CMRC, CMRC
   questions asked of SciFact); the threshold chosen by k-fold CV (highest
   threshold with the widest margin to both targets on the training folds)
   with held-out rates per fold; then the rates of the library's
   ``MIN_COVERAGE`` measured through the real ``build_pack``: cross-source
   no_match (target >= 95%), answerable wrongly no_match (target <= 2%), and
   the independent no-answer set (TREC-10 questions, when found).

Independent no-answer sets: 500 questions sampled (seed 14) from the DRCD
test file (Delta Reading Comprehension Dataset, traditional-Chinese Wikipedia,
CC BY-SA 3.0; articles whose title is a CMRC title left out), read from
``--drcd``, ``$KBWATCH_DRCD`` or ``../shared/bench-data/no-answer/DRCD_test.json``;
and the 500 TREC-10 question-classification test
questions (Li & Roth 2002, TREC 2001 QA track questions), read from
``--trec`` or ``$KBWATCH_TREC`` (a CSV ``id,text,label``), else from
``../shared/bench-data/no-answer/trec10-test.csv``; skipped when absent.

    python bench/relevance.py              # everything, ~5-8 min on 2 shared cores
    python bench/relevance.py --no-cv      # skip the ranking grid (~2 min)

Exits 0 with a message when ../shared is absent (``$KBWATCH_SHARED`` overrides
where it is looked for).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from retrieval_core import DATA, SHARED, as_document, load, ndcg_at  # noqa: E402

SETS = {"scifact": "train", "cmrc2018": "trial", "cmrc2018-sent": "trial"}
BEFORE = {"lead_weight_word": 3.0}  # the ranking before issue 14 (lead bonus for words too)
GRID = {
    "lead_weight_word": [0.0, 1.0, 3.0],
    "title_weight": [0.0, 0.5],
    "k1_word": [0.9, 1.2, 1.5, 2.0],
    "b_word": [0.6, 0.75, 0.9],
}
QUERY_TIME = ("k1_word", "b_word")  # changed on an open index; the others need a rebuild
SEED = 14


def build(name: str, workdir: Path, tag: str, **kw):
    from kbwatch.plugins.retrieval import SearchIndex

    corpus, queries, qrels = load(name, SETS[name])
    idx = SearchIndex(workdir / f"{name}-{tag}.sqlite3", **kw)
    with idx.batch():
        for doc in corpus:
            idx.upsert_document(name, *as_document(doc, "plain"))
    return idx, queries, qrels


def per_query_ndcg(idx, name: str, queries: dict, qrels: dict, qids: list[str]) -> list[float]:
    out = []
    for q in qids:
        hits = idx.search_documents(name, queries[q], limit=10, chunks_per_doc=1, with_text=False)
        out.append(ndcg_at([h.doc_path[len("parsed/"):-len(".md")] for h in hits], qrels[q]))
    return out


def folds_of(items: list, k: int) -> list[list[int]]:
    order = list(range(len(items)))
    random.Random(SEED).shuffle(order)
    return [sorted(order[i::k]) for i in range(k)]


def mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def complexity(cfg: dict) -> tuple:
    """Simpler first: no lead bonus for words, then k1/b nearest the Lucene/bm25s
    values (1.5, 0.75), then the title field at its product weight 0.5 (file
    names and headings are the title of a real note; SciFact cannot judge it)."""
    return (cfg["lead_weight_word"] != 0, cfg["lead_weight_word"],
            abs(cfg["k1_word"] - 1.5) + abs(cfg["b_word"] - 0.75), abs(cfg["title_weight"] - 0.5))


def ranking_cv(workdir: Path, k: int) -> dict:
    name = "scifact"
    corpus_q = None
    scores: dict[tuple, list[float]] = {}
    t0 = time.perf_counter()
    rebuild_keys = [g for g in GRID if g not in QUERY_TIME]
    for values in itertools.product(*(GRID[g] for g in rebuild_keys)):
        kw = dict(zip(rebuild_keys, values))
        idx, queries, qrels = build(name, workdir, "cv", **kw)
        if corpus_q is None:
            corpus_q = (list(queries), queries, qrels)
        qids = corpus_q[0]
        for k1, b in itertools.product(GRID["k1_word"], GRID["b_word"]):
            idx.k1_word, idx.b_word = k1, b
            cfg = dict(kw, k1_word=k1, b_word=b)
            scores[tuple(sorted(cfg.items()))] = per_query_ndcg(idx, name, queries, qrels, qids)
        idx.close()
        (workdir / f"{name}-cv.sqlite3").unlink(missing_ok=True)
    qids = corpus_q[0]
    fold_idx = folds_of(qids, k)
    fold_rows = []
    for f, held in enumerate(fold_idx):
        held_set = set(held)
        train = [i for i in range(len(qids)) if i not in held_set]
        best = max(scores, key=lambda c: (mean(scores[c][i] for i in train), [-x for x in map(float, complexity(dict(c)))]))
        fold_rows.append((f, dict(best), mean(scores[best][i] for i in train), mean(scores[best][i] for i in held)))
    # mean held-out score of each configuration across folds, and its fold spread
    per_cfg = {c: [mean(v[i] for i in held) for held in fold_idx] for c, v in scores.items()}
    best_cfg = max(per_cfg, key=lambda c: mean(per_cfg[c]))
    sd = statistics.stdev(per_cfg[best_cfg])
    se = sd / math.sqrt(k)
    within = [c for c in per_cfg if mean(per_cfg[c]) >= mean(per_cfg[best_cfg]) - se]
    chosen = min(within, key=lambda c: complexity(dict(c)))
    return {"folds": fold_rows, "per_cfg": per_cfg, "best": best_cfg, "sd": sd, "se": se, "chosen": chosen,
            "n_cfg": len(scores), "seconds": time.perf_counter() - t0, "queries": len(qids)}


def fmt_cfg(cfg) -> str:
    d = dict(cfg)
    return (f"lead(words)={d['lead_weight_word']:g} title={d['title_weight']:g} "
            f"k1={d['k1_word']:g} b={d['b_word']:g}")


def load_trec(path: Path | None) -> list[str]:
    cands = [path] if path else []
    if os.environ.get("KBWATCH_TREC"):
        cands.append(Path(os.environ["KBWATCH_TREC"]))
    cands.append(SHARED / "bench-data" / "no-answer" / "trec10-test.csv")
    for p in cands:
        if p and p.is_file():
            with p.open(encoding="utf-8") as f:
                return [row["text"].strip() for row in csv.DictReader(f) if row.get("text", "").strip()]
    return []


def load_drcd(path: Path | None, exclude_titles: set[str], n: int = 500) -> list[str]:
    """n questions (seeded sample) of DRCD's test file, from articles whose title is
    not a title of the CMRC corpus."""
    import json

    cands = [path] if path else []
    if os.environ.get("KBWATCH_DRCD"):
        cands.append(Path(os.environ["KBWATCH_DRCD"]))
    cands.append(SHARED / "bench-data" / "no-answer" / "DRCD_test.json")
    for p in cands:
        if p and p.is_file():
            data = json.loads(p.read_text(encoding="utf-8"))["data"]
            qs = sorted(qa["question"].strip() for a in data if a["title"] not in exclude_titles
                        for para in a["paragraphs"] for qa in para["qas"] if qa["question"].strip())
            return random.Random(SEED).sample(qs, min(n, len(qs)))
    return []


def coverages(idx, project: str, questions: list[str]) -> list[float]:
    """The gate's measure for each question, as build_pack computes it (the 8 documents
    it asks for with 6 files, 3 chunks each)."""
    from kbwatch.plugins.retrieval.relevance import judge

    out = []
    for q in questions:
        t0 = time.perf_counter()
        docs = idx.search_documents(project, q, limit=8, chunks_per_doc=3)
        t1 = time.perf_counter()
        out.append(judge(idx, project, q, docs, min_coverage=0.0).coverage if docs else 0.0)
        TIMES["search"].append((t1 - t0) * 1000)
        TIMES["judge"].append((time.perf_counter() - t1) * 1000)
    return out


TIMES: dict[str, list[float]] = {"search": [], "judge": []}


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))] if s else float("nan")


def rate(xs, pred) -> float:
    xs = list(xs)
    return sum(1 for x in xs if pred(x)) / len(xs) if xs else float("nan")


def gate_cv(answerable: dict[str, list[float]], noanswer: dict[str, list[float]], k: int):
    """Per fold, on the training folds: the threshold with the widest margin to both
    targets, min((2% - worst answerable miss) / 2%, (worst cross no_match - 95%) / 5%)
    (ties: the middle of the tied range); its held-out rates."""
    grid = [i / 100 for i in range(1, 61)]
    folds = {s: folds_of(v, k) for s, v in {**answerable, **noanswer}.items()}
    rows = []
    for f in range(k):
        def part(s, vals, held):
            idxs = set(folds[s][f])
            return [v for i, v in enumerate(vals) if (i in idxs) == held]

        def margin(t):
            miss = max(rate(part(s, v, False), lambda x: x < t) for s, v in answerable.items())
            nm = min(rate(part(s, v, False), lambda x: x < t) for s, v in noanswer.items())
            return round(min((0.02 - miss) / 0.02, (nm - 0.95) / 0.05), 6)

        scored = [(margin(t), t) for t in grid]
        top = max(m for m, _ in scored)
        tied = [t for m, t in scored if m == top]
        t = tied[len(tied) // 2]
        held_miss = {s: rate(part(s, v, True), lambda x: x < t) for s, v in answerable.items()}
        held_nm = {s: rate(part(s, v, True), lambda x: x < t) for s, v in noanswer.items()}
        rows.append((f, t, held_miss, held_nm))
    return rows


def pack_rates(idx, project: str, questions: list[str]) -> float:
    """Share of questions that build_pack (library defaults) answers with no_match."""
    from kbwatch.plugins.retrieval import build_pack

    n = 0
    for q in questions:
        p = build_pack(idx, project, q)
        n += bool(p.relevance is not None and p.relevance.no_match)
    return n / len(questions) if questions else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--no-cv", action="store_true", help="skip the ranking grid")
    ap.add_argument("--trec", type=Path, default=None, help="TREC-10 questions CSV (id,text,label)")
    ap.add_argument("--drcd", type=Path, default=None, help="DRCD_test.json (traditional Chinese questions)")
    args = ap.parse_args()
    if not DATA.is_dir():
        print(f"relevance bench skipped: {DATA} not found (needs ../shared/bench-data/retrieval)")
        return 0
    from kbwatch.plugins.retrieval import relevance

    with tempfile.TemporaryDirectory(prefix="kbwatch-relevance-") as tmp:
        work = Path(tmp)
        # ---- 1. ranking CV
        if not args.no_cv:
            cv = ranking_cv(work, args.folds)
            print(f"== ranking: {args.folds}-fold CV on SciFact train ({cv['queries']} queries, {cv['n_cfg']} configurations, "
                  f"{cv['seconds']:.0f} s)")
            for f, cfg, tr, held in cv["folds"]:
                print(f"  fold {f}: best on the other folds {fmt_cfg(cfg)} (train {tr:.4f}) -> held-out {held:.4f}")
            held = [r[3] for r in cv["folds"]]
            print(f"  held-out nDCG@10 of the per-fold choice: mean {mean(held):.4f}, min {min(held):.4f}, "
                  f"max {max(held):.4f}, sd {statistics.stdev(held):.4f}")
            pc = cv["per_cfg"]
            ranked = sorted(pc, key=lambda c: -mean(pc[c]))
            print(f"  mean held-out score by configuration (best 5 of {len(pc)}; fold sd of the best {cv['sd']:.4f}, "
                  f"one standard error {cv['se']:.4f}):")
            for c in ranked[:5]:
                print(f"    {mean(pc[c]):.4f}  folds {' '.join(f'{x:.3f}' for x in pc[c])}  {fmt_cfg(c)}")
            old = tuple(sorted({"lead_weight_word": 3.0, "title_weight": 0.5, "k1_word": 1.5, "b_word": 0.75}.items()))
            base = tuple(sorted({"lead_weight_word": 0.0, "title_weight": 0.0, "k1_word": 1.5, "b_word": 0.75}.items()))
            for label, c in (("before (as shipped)", old), ("plain BM25, no title field", base), ("chosen", cv["chosen"])):
                print(f"    {mean(pc[c]):.4f}  folds {' '.join(f'{x:.3f}' for x in pc[c])}  {label}: {fmt_cfg(c)}")
            print(f"  chosen (simplest within one standard error of the best): {fmt_cfg(cv['chosen'])}", flush=True)

        # ---- 2. nDCG before / after
        print("== nDCG@10 on the tuning splits, before (lead bonus for words) / after (library defaults)")
        built = {}
        for name in SETS:
            before, queries, qrels = build(name, work, "before", **BEFORE)
            qids = list(queries)
            nb = mean(per_query_ndcg(before, name, queries, qrels, qids))
            before.close()
            after, _, _ = build(name, work, "after")
            na = mean(per_query_ndcg(after, name, queries, qrels, qids))
            built[name] = (after, queries)
            print(f"  {name:<14} {SETS[name]:<6} {len(qids):>5} q  before {nb:.4f}  after {na:.4f}  ({na - nb:+.4f})",
                  flush=True)

        # ---- 3. relevance gate
        sci_q = [q for q in built["scifact"][1].values() if q.strip()]
        cm_q = [q for q in built["cmrc2018"][1].values() if q.strip()]
        answerable = {n: coverages(built[n][0], n, [q for q in built[n][1].values() if q.strip()]) for n in SETS}
        noanswer = {
            "scifact->cmrc2018": coverages(built["cmrc2018"][0], "cmrc2018", sci_q),
            "scifact->cmrc2018-sent": coverages(built["cmrc2018-sent"][0], "cmrc2018-sent", sci_q),
            "cmrc2018->scifact": coverages(built["scifact"][0], "scifact", cm_q),
        }
        print(f"== relevance gate: IDF-weighted coverage of the question's content words by the best chunk; "
              f"{args.folds}-fold CV of the threshold (widest margin to both targets on the training folds); "
              f"at least {relevance.MIN_MATCHED} content words in one passage")
        rows = gate_cv(answerable, noanswer, args.folds)
        for f, t, miss, nm in rows:
            print(f"  fold {f}: threshold {t:.2f} -> held-out wrongly no_match "
                  + ", ".join(f"{s} {v:.1%}" for s, v in miss.items())
                  + "; no_match " + ", ".join(f"{s} {v:.1%}" for s, v in nm.items()))
        ts = [r[1] for r in rows]
        print(f"  fold thresholds: {', '.join(f'{t:.2f}' for t in ts)} (median {statistics.median(ts):.2f}); "
              f"library MIN_COVERAGE = {relevance.MIN_COVERAGE}")
        print("  threshold sweep (answerable wrongly no_match | no-answer no_match):")
        for t in (0.1, 0.15, 0.2, 0.25, 0.3, 0.35):
            print(f"    {t:.2f}: " + ", ".join(f"{s} {rate(v, lambda x: x < t):.2%}" for s, v in answerable.items())
                  + " | " + ", ".join(f"{s} {rate(v, lambda x: x < t):.2%}" for s, v in noanswer.items()))
        t = relevance.MIN_COVERAGE
        for s, v in answerable.items():
            print(f"  answerable {s:<22} wrongly no_match at {t}: {rate(v, lambda x: x < t):.2%}  "
                  f"(coverage p1 {sorted(v)[len(v) // 100]:.2f}, p5 {sorted(v)[len(v) // 20]:.2f})")
        for s, v in noanswer.items():
            print(f"  no-answer  {s:<22} no_match at {t}: {rate(v, lambda x: x < t):.2%}  "
                  f"(coverage p95 {sorted(v)[len(v) * 95 // 100]:.2f})")
        # through the real build_pack (library defaults)
        print(f"  cost per query in the same runs, ms p50/p95: search_documents(8 docs, 3 chunks) "
              f"{pct(TIMES['search'], 50):.2f}/{pct(TIMES['search'], 95):.2f}, relevance judge "
              f"{pct(TIMES['judge'], 50):.2f}/{pct(TIMES['judge'], 95):.2f}")
        print("== through build_pack (6 files, 4,000 characters, library defaults)")
        res = {
            "answerable scifact (wrongly no_match)": pack_rates(built["scifact"][0], "scifact", sci_q),
            "answerable cmrc2018 (wrongly no_match)": pack_rates(built["cmrc2018"][0], "cmrc2018", cm_q),
            "answerable cmrc2018-sent (wrongly no_match)": pack_rates(
                built["cmrc2018-sent"][0], "cmrc2018-sent", [q for q in built["cmrc2018-sent"][1].values() if q.strip()]),
            "scifact -> cmrc2018 (no_match)": pack_rates(built["cmrc2018"][0], "cmrc2018", sci_q),
            "scifact -> cmrc2018-sent (no_match)": pack_rates(built["cmrc2018-sent"][0], "cmrc2018-sent", sci_q),
            "cmrc2018 -> scifact (no_match)": pack_rates(built["scifact"][0], "scifact", cm_q),
        }
        trec = load_trec(args.trec)
        if trec:
            res["independent: TREC-10 -> scifact (no_match)"] = pack_rates(built["scifact"][0], "scifact", trec)
            res["independent: TREC-10 -> cmrc2018 (no_match)"] = pack_rates(built["cmrc2018"][0], "cmrc2018", trec)
        import json as _json

        cmrc_titles = {_json.loads(line).get("title") for line in (DATA / "cmrc2018" / "corpus.jsonl").open(encoding="utf-8")}
        drcd = load_drcd(args.drcd, cmrc_titles)
        if drcd:
            res["independent: DRCD -> cmrc2018 (no_match)"] = pack_rates(built["cmrc2018"][0], "cmrc2018", drcd)
            res["independent: DRCD -> cmrc2018-sent (no_match)"] = pack_rates(
                built["cmrc2018-sent"][0], "cmrc2018-sent", drcd)
            res["independent: DRCD -> scifact (no_match)"] = pack_rates(built["scifact"][0], "scifact", drcd)
        for label, v in res.items():
            target = ("<= 2%", v <= 0.02) if "wrongly" in label else ((">= 95%", v >= 0.95) if "independent" not in label
                                                                      else ("reported", True))
            print(f"  {label:<48} {v:7.2%}   target {target[0]}: {'ok' if target[1] else 'MISSED'}")
        if not drcd:
            print("  Chinese independent set skipped: DRCD_test.json not found (--drcd, $KBWATCH_DRCD or "
                  "../shared/bench-data/no-answer/DRCD_test.json)")
        if not trec:
            print("  independent set skipped: TREC-10 questions not found (--trec, $KBWATCH_TREC or "
                  "../shared/bench-data/no-answer/trec10-test.csv)")
        for name in SETS:
            built[name][0].close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
