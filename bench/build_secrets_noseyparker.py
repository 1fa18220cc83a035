#!/usr/bin/env python3
"""Build ``bench/data/secrets-noseyparker.jsonl``: a second independent secrets test set.

Source: praetorian-inc/noseyparker (GitHub, Apache-2.0, Copyright 2022 Praetorian Security,
Inc; licence and NOTICE in ``bench/data/licenses/noseyparker-*``), its built-in rules
``crates/noseyparker/data/default/builtin/rules/*.yml``. Every rule there carries the
maintainers' own test strings: ``examples`` (the rule must match) and ``negative_examples``
(it must not). Neither gitleaks nor detect-secrets (the sources of ``../shared/bench-data/risk``)
nor CredSweeper is involved.

- label 1: each distinct ``examples`` string of a rule whose ``categories`` name ``secret`` (or
  that has no categories); rules that only find identifiers (``[api, identifier]``) are left out;
- label 0: each distinct ``negative_examples`` string, except those listed under a ``FIXME``
  comment (the maintainers note there that the rule *should* match them: real credentials it
  misses) and those that contain a label-1 string of any rule (≥ 12 characters);
- strings also present verbatim in ``secrets.dev.jsonl`` are dropped (counted in the output).

``subtype``: ``noseyparker:<rule id>`` (label 1; ``noseyparker-hashed:<id>`` for password-hash
rules, reported apart) or ``noseyparker-n:<rule id>`` (label 0).

Usage: ``python bench/build_secrets_noseyparker.py GIT_DIR COMMIT`` (GIT_DIR: a clone or the
``fetch`` mirror of github.com/praetorian-inc/noseyparker).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

OUT = Path(__file__).resolve().parent / "data" / "secrets-noseyparker.jsonl"
RULES = "crates/noseyparker/data/default/builtin/rules/"
DEV = Path(__file__).resolve().parents[2] / "shared" / "bench-data" / "risk" / "secrets.dev.jsonl"


def git(gitdir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", gitdir, *args], capture_output=True, check=True, text=True).stdout


def fixme_negatives(raw: str, rule_id: str, negatives: list[str]) -> set[str]:
    """Negative examples of ``rule_id`` that come after a FIXME comment in the rule's text."""
    start = raw.find(f"id: {rule_id}\n")
    if start < 0:
        return set()
    nxt = raw.find("\n- name:", start)
    chunk = raw[start:nxt if nxt >= 0 else len(raw)]
    fix = [m.start() for m in re.finditer(r"(?m)^\s*#.*FIXME", chunk)]
    neg_at = chunk.find("negative_examples:")
    if not fix or neg_at < 0:
        return set()
    out = set()
    for n in negatives:
        probe = n.strip().splitlines()[0][:40] if n.strip() else n
        pos = chunk.find(probe, neg_at)
        if pos < 0:
            pos = chunk.find(json.dumps(probe)[1:-1], neg_at)
        # under a FIXME: one that sits after the negative_examples key, or just before it
        if pos >= 0 and any(f < pos and (f > neg_at or neg_at - f < 200) for f in fix):
            out.add(n)
    return out


def main(argv: list[str]) -> int:
    gitdir, commit = argv[1], argv[2]
    files = [f for f in git(gitdir, "ls-tree", "-r", "--name-only", commit, RULES).split() if f.endswith(".yml")]
    dev = set()
    if DEV.exists():
        dev = {json.loads(line)["text"].strip() for line in DEV.open(encoding="utf-8")}
    pos, neg, seen = [], [], set()
    dropped = {"fixme": 0, "identifier-rule": 0, "contains-positive": 0, "in-dev": 0, "duplicate": 0}
    for f in sorted(files):
        raw = git(gitdir, "show", f"{commit}:{f}")
        for rule in (yaml.safe_load(raw) or {}).get("rules") or ():
            cats = set(rule.get("categories") or ())
            rid = rule["id"]
            exs = [e for e in rule.get("examples") or () if isinstance(e, str) and e.strip()]
            negs = [e for e in rule.get("negative_examples") or () if isinstance(e, str) and e.strip()]
            if cats and "secret" not in cats:
                dropped["identifier-rule"] += len(exs)
            else:
                group = "noseyparker-hashed" if "hashed" in cats else "noseyparker"
                pos += [(e, rid, group, f) for e in exs]
            fixme = fixme_negatives(raw, rid, negs)
            dropped["fixme"] += len(fixme)
            neg += [(e, rid, "noseyparker-n", f) for e in negs if e not in fixme]
    positives = [p[0].strip() for p in pos]
    rows = []
    for label, items in ((1, pos), (0, neg)):
        for text, rid, group, f in items:
            key = text.strip()
            if key in seen:
                dropped["duplicate"] += 1
                continue
            if key in dev:
                dropped["in-dev"] += 1
                continue
            if label == 0 and any(len(p) >= 12 and p in key for p in positives):
                dropped["contains-positive"] += 1
                continue
            seen.add(key)
            h = hashlib.sha256(text.encode()).hexdigest()[:10]
            rows.append({"id": f"noseyparker:{rid}:{'p' if label else 'n'}{h}", "text": text.rstrip("\n"),
                         "label": label, "kind": "secret" if label else "benign", "lang": "en",
                         "source": f"praetorian-inc/noseyparker@{commit[:7]}:{f}", "subtype": f"{group}:{rid}"})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    n1 = sum(r["label"] for r in rows)
    print(f"wrote {OUT}: {len(rows)} rows, label 1: {n1}, label 0: {len(rows) - n1}; dropped {dropped}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
