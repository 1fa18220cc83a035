"""Provider secret rules generated from gitleaks' rule set, applied as data.

``data/gitleaks-rules.json`` is written by ``bench/gitleaks_import.py`` from gitleaks'
``config/gitleaks.toml`` (github.com/gitleaks/gitleaks, MIT licence, Copyright (c) 2019
Zachary Rice; the commit is recorded in the file). Each rule has a regex, the group that
holds the secret, a Shannon-entropy floor, keywords (a rule runs only where one occurs) and
allowlists (regexes on the secret, the match or the line; stopwords); the global allowlist
applies to every rule. This module owns loading, compiling and running them:
:func:`matches` yields ``(rule_id, start, end)`` of each secret that passes.

How they are run: one scan over the lower-cased text finds every keyword (a single regex
alternation, so the cost does not grow with the number of rules times the text); a rule's
regex then runs only on the lines (at most :data:`WINDOW` characters either side of the
keyword) that hold one of its keywords.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

__all__ = ["matches", "public_values", "rule_ids", "source"]

DATA = Path(__file__).with_name("data") / "gitleaks-rules.json"
WINDOW = 1000  # characters either side of a keyword searched on a very long line


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values()) if n else 0.0


class _Rule:
    __slots__ = ("id", "rx", "group", "entropy", "keywords", "allow")

    def __init__(self, d: dict):
        self.id = d["id"]
        self.rx = re.compile(d["regex"])
        self.group = int(d.get("secret_group") or 0)
        self.entropy = float(d.get("entropy") or 0)
        self.keywords = tuple(d.get("keywords") or ())
        self.allow = [(a["target"], a.get("condition", "OR"), [re.compile(r) for r in a["regexes"]], tuple(a["stopwords"]))
                      for a in d.get("allowlists") or ()]


@lru_cache(maxsize=1)
def _data() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _load():
    """The rules compiled (~0.15 s: done on the first scan, not when a process imports the scanner)."""
    data = _data()
    rules = [_Rule(d) for d in data["rules"]]
    glob = data.get("global_allowlist") or {}
    glob_rx = [re.compile(r) for r in glob.get("regexes") or ()]
    glob_stop = tuple(glob.get("stopwords") or ())
    by_kw: dict[str, list[_Rule]] = {}
    always: list[_Rule] = []
    for r in rules:
        if not r.keywords:
            always.append(r)
        for k in r.keywords:
            by_kw.setdefault(k, []).append(r)
    try:  # one C pass for all keywords (pyahocorasick); else a regex alternation
        import ahocorasick

        kw_rx = ahocorasick.Automaton()
        for k in by_kw:
            kw_rx.add_word(k, k)
        kw_rx.make_automaton()
    except ImportError:  # pragma: no cover - the dependency is declared
        kw_rx = re.compile("|".join(re.escape(k) for k in sorted(by_kw, key=len, reverse=True)))
    return data, rules, glob_rx, glob_stop, by_kw, always, kw_rx


def _keyword_hits(kw, low: str):
    """``(start, end, keyword)`` of every keyword occurrence in ``low``."""
    if isinstance(kw, re.Pattern):
        for m in kw.finditer(low):
            yield m.start(), m.end(), m.group()
        return
    for end, k in kw.iter(low):
        yield end + 1 - len(k), end + 1, k


_LITERAL = re.compile(r"[A-Za-z0-9_\-]{16,}")


@lru_cache(maxsize=1)
def public_values() -> frozenset[str]:
    """Values gitleaks allowlists by value (literal allowlist regexes of at least 16 token
    characters, e.g. Google API keys that are public by design and published in SDKs)."""
    data = _data()  # the JSON only: no rule compiled
    out = set()
    for d in data["rules"]:
        for a in d.get("allowlists") or ():
            out.update(r for r in a["regexes"] if _LITERAL.fullmatch(r))
    return frozenset(out)


def source() -> str:
    data = _load()[0]
    return f"{data['source']} @ {data['commit']} ({data['licence']})"


def rule_ids() -> list[str]:
    return [r.id for r in _load()[1]]


def _secret(m: re.Match, group: int) -> tuple[int, int]:
    if group and group <= (m.re.groups or 0) and m.group(group):
        return m.span(group)
    for g in range(1, (m.re.groups or 0) + 1):
        if m.group(g):
            return m.span(g)
    return m.span()


def _allowed(rule: _Rule, secret: str, match: str, line: str, glob_rx, glob_stop) -> bool:
    low = secret.lower()
    if any(rx.search(secret) for rx in glob_rx) or any(w in low for w in glob_stop):
        return True
    for target, condition, rxs, stops in rule.allow:
        hay = {"match": match, "line": line}.get(target, secret)
        hits = [any(rx.search(hay) for rx in rxs)] if rxs else []
        if stops:
            hits.append(any(w in low for w in stops))
        if hits and (all(hits) if condition == "AND" else any(hits)):
            return True
    return False


def load() -> None:
    """Compile the rules now (the secrets plugin does it inside its build-cache block)."""
    _load()


@lru_cache(maxsize=1)
def _rules_by_id() -> dict[str, _Rule]:
    return {r.id: r for r in _load()[1]}


def matches(text: str, low: str | None = None):
    """``(rule_id, start, end)`` of every secret a gitleaks rule finds in ``text``.

    ``low``: ``text.lower()`` when the caller has it (same length as ``text``)."""
    _, _, glob_rx, glob_stop, by_kw, always, kw_rx = _load()
    low = text.lower() if low is None or len(low) != len(text) else low
    spans: dict[str, list[tuple[int, int]]] = {}
    line_of: dict[int, tuple[int, int]] = {}
    for ks, ke, k in _keyword_hits(kw_rx, low):
        span = line_of.get(ks)
        if span is None:
            ls = max(text.rfind("\n", 0, ks) + 1, ks - WINDOW)
            le = text.find("\n", ke)
            span = line_of[ks] = (ls, min(len(text) if le < 0 else le, ke + WINDOW))
        for r in by_kw[k]:
            spans.setdefault(r.id, []).append(span)
    rules = _rules_by_id()
    todo = [(rules[rid], sp) for rid, sp in spans.items()] + [(r, [(0, len(text))]) for r in always]
    for rule, sp in todo:
        last = -1
        for ls, le in sorted(set(sp)):
            if le <= last:
                continue
            ls = max(ls, last)
            for m in rule.rx.finditer(text, ls, le):
                s, e = _secret(m, rule.group)
                secret = text[s:e]
                if not secret or (rule.entropy and _entropy(secret) < rule.entropy):
                    continue
                line_s = text.rfind("\n", 0, m.start()) + 1
                line_e = text.find("\n", m.end())
                line = text[line_s:line_e if line_e >= 0 else len(text)]
                if _allowed(rule, secret, m.group(), line, glob_rx, glob_stop):
                    continue
                yield rule.id, s, e
            last = le
