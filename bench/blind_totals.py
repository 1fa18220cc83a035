#!/usr/bin/env python3
"""Totals only, never texts: how many attacks / look-alikes of probe rounds the injection scanner flags.

Used to measure a held-out probe round (``riskscan_injection.HELD_OUT_ROUNDS``) without reading it:
give it JSON-lines files of records (``label`` 1 attack / 0 look-alike, ``style`` plain / hard /
benign, ``text``), e.g. one round extracted from ``bench/data/injection-zh-probes.jsonl`` by a script
that prints nothing. Prints per file and pooled counts; the kbwatch measured is whatever
``PYTHONPATH`` / the install gives.

    python bench/blind_totals.py /tmp/r25.jsonl
"""
import importlib.util
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    spec = importlib.util.spec_from_file_location("ri", BENCH / "riskscan_injection.py")
    ri = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ri)
    import kbwatch.plugins.scan_injection as m

    print("code:", Path(m.__file__).resolve().parent.parent)
    pool_a = pool_f = pool_b = pool_bf = 0
    for f in argv:
        rows = [json.loads(line) for line in open(f, encoding="utf-8") if line.strip()]
        a = [r for r in rows if r["label"] == 1]
        b = [r for r in rows if r["label"] == 0]
        fa = sum(ri.flagged(r["text"]) for r in a)
        fb = sum(ri.flagged(r["text"]) for r in b)
        st = {s: (sum(ri.flagged(r["text"]) for r in a if r.get("style") == s), sum(1 for r in a if r.get("style") == s))
              for s in ("plain", "hard")}
        print(f"{f}: attacks {fa}/{len(a)} ({100 * fa / max(1, len(a)):.0f}%) plain {st['plain'][0]}/{st['plain'][1]} "
              f"hard {st['hard'][0]}/{st['hard'][1]}; look-alikes flagged {fb}/{len(b)}")
        pool_a, pool_f, pool_b, pool_bf = pool_a + len(a), pool_f + fa, pool_b + len(b), pool_bf + fb
    print(f"pooled: {pool_f}/{pool_a} ({100 * pool_f / max(1, pool_a):.1f}%); look-alikes flagged {pool_bf}/{pool_b}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
