"""Prompt-injection scanner (English and Chinese), kind ``injection``.

Owns the rules ``injection.*``:

- ``override``            ignore/override previous, system or safety rules
- ``new-instructions``    replacement instructions / re-assigned role or task
- ``persona``             role/persona overrides, jailbreak modes
- ``jailbreak``           several weak jailbreak signals close together
- ``disclosure``          system/hidden prompt disclosure requests
- ``template``            chat-template and role delimiters (``<|im_start|>``, ``[INST]``, ``### System:``)
- ``exfiltration``        send data to an address/URL, markdown-image exfiltration
- ``tool-call``           instructions to call tools / execute actions
- ``concealment``         hide an action from the user
- ``addressed-to-ai``     text addressed to an AI reading the document
- ``memory``              persist instructions for future tasks
- ``authority``           claimed developer/admin authority issuing orders
- ``obfuscated-instruction`` "decode this and do what it says"
- ``encoded``             base64/base32/hex/binary/percent/\\u/morse, invisible
                          (tag, variation selector, Sneaky Bits), leetspeak or
                          reversed text that decodes to an injection
- ``remote-code``, ``sensitive-path``

Matching runs on a normalised view (see ``_scanutil.normalize``: NFKC,
confusable folding, ignorables dropped, spaced letters joined; plus
Traditional→Simplified folding for Chinese) and maps spans back to the
original text. Patterns live in ``_injection_rules``.
"""

from __future__ import annotations

import re

from pipeline import hookimpl
from pipeline.model import Finding
from plugins import _injection_rules as R
from plugins._scanutil import (ENCODED_GATES, ENCODED_PATTERNS, _apply, chunks, literal_anchors, may_match, LineIndex, View, decode_encoded, decode_invisible_runs,
                               make_finding, normalize, scan_options)

KIND = "injection"
_LEET = str.maketrans("013457@$8", "oieastasb")
_LEET_TOKEN = re.compile(r"\b(?=[a-z0-9@$]*[a-z])(?=[a-z0-9@$]*[0-9@$])[a-z0-9@$]{2,}\b")
_INWORD_HYPHEN = re.compile(r"(?<=[a-z])-{1,4}(?=[a-z])")
_REVERSED_HINT = re.compile(r"snoitcurtsni|erongi|tpmorp|suoiverp|drager")


_EN = [(rule, sev, msg, pat, literal_anchors(pat)) for rule, sev, msg, pat in R.EN_STRONG]
_ZH = [(rule, sev, msg, pat, literal_anchors(pat)) for rule, sev, msg, pat in R.ZH_STRONG]
_SIG = [(name, pat, literal_anchors(pat)) for name, pat in R.SIGNALS]
_OVERLAP = 600  # matches may run this far past a chunk end


def _gated(pat, anchors, vt: str, spans) -> list:
    """finditer restricted to chunks that contain one of the rule's literal anchors."""
    if len(spans) == 1:
        return list(pat.finditer(vt)) if may_match(anchors, vt) else []
    out, last_end = [], -1
    for cs, ce in spans:
        if not may_match(anchors, vt[cs:min(len(vt), ce + _OVERLAP)]):
            continue
        for m in pat.finditer(vt, cs, min(len(vt), ce + _OVERLAP)):
            if m.start() >= ce or m.start() < last_end:
                continue
            out.append(m)
            last_end = m.end()
    return out


def _strong_hits(vt: str, cjk: bool) -> list[tuple[str, str, str, int, int]]:
    """(rule, severity, message, start, end) for every strong rule match in a view text."""
    spans = chunks(vt)
    hits = []
    for rule, sev, msg, pat, anchors in _EN + (_ZH if cjk else []):
        for m in _gated(pat, anchors, vt, spans):
            hits.append((rule, sev, msg, m.start(), m.end()))
    for m in R.TEMPLATE.finditer(vt):
        hits.append(("injection.template", "high" if "|" in m.group() or "[" in m.group() or "<" in m.group()
                     else "medium", "chat-template / role delimiter", m.start(), m.end()))
    return hits


def _signal_hits(vt: str) -> list[tuple[int, int, str]]:
    """Windows whose distinct weak jailbreak signals reach the score: (start, end, names)."""
    events = []
    spans = chunks(vt)
    for name, pat, anchors in _SIG:
        for m in _gated(pat, anchors, vt, spans):
            events.append((m.start(), m.end(), name))
    names_all = {e[2] for e in events}
    if len(names_all) < R.SIGNAL_MIN or sum(R.SIGNAL_WEIGHT.get(n, 1) for n in names_all) < R.SIGNAL_SCORE:
        return []
    events.sort()
    out = []
    i, n = 0, len(events)
    while i < n:
        j = i
        while j + 1 < n and events[j + 1][0] - events[i][0] <= R.SIGNAL_WINDOW:
            j += 1
        names = {e[2] for e in events[i:j + 1]}
        if len(names) >= R.SIGNAL_MIN and sum(R.SIGNAL_WEIGHT.get(x, 1) for x in names) >= R.SIGNAL_SCORE:
            out.append((events[i][0], max(e[1] for e in events[i:j + 1]), ",".join(sorted(names))))
            i = j + 1
            continue
        i += 1
    return out


def _payload_is_injection(decoded: str) -> tuple[str, str] | None:
    v = normalize(decoded)
    vt = v.text
    cjk = bool(R.HAS_CJK.search(vt))
    if cjk:
        vt = vt.translate(R.T2S)
    hits = _strong_hits(vt, cjk)
    if hits:
        return hits[0][0], hits[0][2]
    if _signal_hits(vt):
        return "injection.jailbreak", "jailbreak signals"
    return None


def scan_text(text: str, settings=None) -> list[Finding]:
    opts = scan_options(settings or {})
    index = LineIndex(text)
    findings: list[Finding] = []
    view: View = normalize(text)
    if _INWORD_HYPHEN.search(view.text):  # "i-nstruction", "as-sistant"
        t2, m2 = _apply(view.text, view.omap, _INWORD_HYPHEN, lambda m: "")
        view = View(t2, m2, len(text))
    vt = view.text
    cjk = bool(R.HAS_CJK.search(vt))
    if cjk:
        vt = vt.translate(R.T2S)

    def add(rule, sev, msg, start, end, mapped=False, excerpt_text=None):
        s, e = (start, end) if mapped else view.span(start, end)
        f = make_finding(text, index, opts, kind=KIND, rule=rule, severity=sev, start=s, end=max(e, s + 1),
                         message=msg, excerpt_text=excerpt_text)
        if f is not None:
            findings.append(f)

    for rule, sev, msg, s, e in _strong_hits(vt, cjk):
        add(rule, sev, msg, s, e)
    for s, e, names in _signal_hits(vt):
        add("injection.jailbreak", "high", f"jailbreak signals: {names}", s, min(e, s + 200))

    # leetspeak view (same length as vt, so the same map applies)
    if _LEET_TOKEN.search(vt):
        leet = _LEET_TOKEN.sub(lambda m: m.group().translate(_LEET), vt)
        if leet != vt:
            for rule, sev, msg, s, e in _strong_hits(leet, False):
                if rule in ("injection.override", "injection.disclosure", "injection.persona",
                            "injection.new-instructions"):
                    add("injection.encoded", "high", f"leetspeak-obfuscated: {msg}", s, e)

    # reversed text
    if _REVERSED_HINT.search(vt):
        rev = vt[::-1]
        for rule, sev, msg, s, e in _strong_hits(rev, False):
            add("injection.encoded", "high", f"reversed text: {msg}", len(vt) - e, len(vt) - s)

    # encoded payloads on the original text
    for enc, pat in ENCODED_PATTERNS:
        gate = ENCODED_GATES.get(enc)
        if gate and gate not in text:
            continue
        for m in pat.finditer(text):
            dec = decode_encoded(enc, m.group())
            if not dec:
                continue
            hit = _payload_is_injection(dec)
            if hit:
                add("injection.encoded", "high", f"{enc}-encoded instruction ({hit[1]})", m.start(), m.end(),
                    mapped=True, excerpt_text=f"{enc}: {dec[:60]}")
    for s, e, channel, dec in decode_invisible_runs(text):
        hit = _payload_is_injection(dec) if dec else None
        if hit:
            add("injection.encoded", "high", f"instruction hidden in {channel}", s, e, mapped=True,
                excerpt_text=f"{channel}: {dec[:60]}")
    return _merge(findings)


def _merge(findings: list[Finding]) -> list[Finding]:
    """One finding per overlapping cluster of the same rule."""
    findings.sort(key=lambda f: (f.rule, f.offset))
    out: list[Finding] = []
    for f in findings:
        if out and out[-1].rule == f.rule and f.offset < out[-1].offset + max(out[-1].length, 1):
            continue
        out.append(f)
    out.sort(key=lambda f: f.offset)
    return out


@hookimpl
def kb_scan(document, settings):
    return scan_text(document.markdown or "", settings)
