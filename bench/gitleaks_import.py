#!/usr/bin/env python3
"""Generate ``plugins/scanning/data/gitleaks-rules.json`` from gitleaks' rule set (MIT).

Usage: ``python bench/gitleaks_import.py PATH/TO/gitleaks.toml COMMIT``

Reads gitleaks' ``config/gitleaks.toml`` (github.com/gitleaks/gitleaks, MIT licence,
Copyright (c) 2019 Zachary Rice) and writes, as data, every rule whose Go RE2 regex compiles
under Python ``re``: id, regex, secret group, entropy threshold, keywords, and the rule's
allowlists (regexes on the secret/match/line, stopwords) plus the global allowlist regexes and
stopwords. Path allowlists are dropped (kbwatch scans documents, not repositories). Rules that
kbwatch's hand-written scanner already owns with its own placeholder and context filters are
left out (``SKIP``). Nothing is executed from gitleaks; the JSON records the commit and licence.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "plugins" / "scanning" / "data" / "gitleaks-rules.json"
# generic rules: kbwatch's own keyword/entropy rules (with placeholder and context filters) own these
SKIP = {"generic-api-key"}


def py_regex(rx: str) -> str:
    """RE2 → Python ``re``: the few spellings that differ."""
    rx = rx.replace(r"\z", r"\Z")
    if "(?i)" in rx[1:] and not rx.startswith("(?i)"):
        # RE2 allows a flag group mid-pattern (it applies from there on); Python only at the
        # start: the whole pattern becomes case-insensitive (slightly broader, never narrower)
        rx = "(?i)" + rx.replace("(?i)", "")
    rx = re.sub(r"\[\[:(alnum|alpha|digit|upper|lower|space|xdigit|word):\]\]", lambda m: {
        "alnum": "[A-Za-z0-9]", "alpha": "[A-Za-z]", "digit": "[0-9]", "upper": "[A-Z]", "lower": "[a-z]",
        "space": r"\s", "xdigit": "[0-9A-Fa-f]", "word": r"\w"}[m.group(1)], rx)
    return rx


def allowlist(a: dict) -> dict | None:
    out = {"target": a.get("regexTarget", "secret"), "condition": a.get("condition", "OR"),
           "regexes": [], "stopwords": [s.lower() for s in a.get("stopwords", [])]}
    for r in a.get("regexes", []):
        r = py_regex(r)
        try:
            re.compile(r)
        except re.error:
            continue
        out["regexes"].append(r)
    if a.get("paths") and not (out["regexes"] or out["stopwords"]):
        return None
    return out if out["regexes"] or out["stopwords"] else None


def main(argv: list[str]) -> int:
    src, commit = Path(argv[1]), argv[2]
    cfg = tomllib.loads(src.read_text(encoding="utf-8"))
    rules, dropped = [], []
    for r in cfg["rules"]:
        if r["id"] in SKIP or "regex" not in r:
            dropped.append((r["id"], "skipped" if r["id"] in SKIP else "no regex"))
            continue
        rx = py_regex(r["regex"])
        try:
            re.compile(rx)
        except re.error as exc:
            dropped.append((r["id"], f"regex: {exc}"))
            continue
        rules.append({
            "id": r["id"], "regex": rx, "secret_group": r.get("secretGroup", 0),
            "entropy": r.get("entropy", 0), "keywords": [k.lower() for k in r.get("keywords", [])],
            "allowlists": [x for x in (allowlist(a) for a in r.get("allowlists", [])) if x],
        })
    glob = allowlist(cfg.get("allowlist", {})) or {"regexes": [], "stopwords": []}
    data = {
        "source": "https://github.com/gitleaks/gitleaks config/gitleaks.toml",
        "commit": commit,
        "licence": "MIT, Copyright (c) 2019 Zachary Rice",
        "generated_by": "bench/gitleaks_import.py",
        "global_allowlist": {"regexes": glob["regexes"], "stopwords": glob["stopwords"]},
        "rules": rules,
        "dropped": dropped,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{len(rules)} rules written to {OUT}; dropped {len(dropped)}: {dropped}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
