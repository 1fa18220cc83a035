#!/usr/bin/env python3
"""The agent door (issue 14): ``query_knowledge_base`` through a warm ``kbwatch mcp`` against
``kbwatch ask`` as a process, on the same queries, in one run.

1. A knowledge base of ~5,000 documents: the SciFact corpus of
   ../shared/bench-data/retrieval (5,183 abstracts, one ``sources/<id>.md``
   each, ``# <title>`` + text), or, when ../shared is absent, 5,000 synthetic
   documents; ingested once through the real pipeline (``run_ingest``) and
   kept in ``--dir`` (default ``$TMPDIR/kbwatch-bench-mcp``) for the next run.
2. Queries: SciFact claims (or words drawn from the synthetic documents).
3. ``kbwatch mcp --root DIR`` started as a subprocess and driven by the SDK's
   own client over stdio, and over streamable HTTP on 127.0.0.1: a few
   warm-up calls, then one timed ``call_tool("query_knowledge_base")`` per
   query (client-side wall time: JSON-RPC round trip included).
4. ``kbwatch ask NAME "q" --json`` as a process (interpreter start included)
   on the first ``--ask-queries`` of the same queries.

Prints p50/p95 of each and the ratio ask / MCP. Nothing is asserted; the box
is shared, read the figures as upper bounds.

    python bench/mcp.py                     # ~2-4 min the first time (ingest), ~1 min after
    python bench/mcp.py --queries 100 --ask-queries 20
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# run as a script, this file's folder is sys.path[0] and this very file would shadow the SDK's ``mcp``
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
SHARED = REPO.parent / "shared" / "bench-data" / "retrieval" / "scifact"
PROJECT = "bench"


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(p / 100 * (len(s) - 1)))))
    return s[k]


def kb_cmd() -> list[str]:
    return [sys.executable, "-m", "kbwatch"]


def child_env() -> dict:
    return {"PYTHONPATH": os.environ.get("PYTHONPATH", ""), "KBWATCH_DISABLE_ENTRYPOINTS": "1",
            "HOME": os.environ.get("HOME", "/tmp"), "PATH": os.environ.get("PATH", "")}


def corpus(n_synthetic: int) -> tuple[list[tuple[str, str]], list[str], str]:
    """[(file name, markdown)], queries, what it is."""
    if (SHARED / "corpus.jsonl").exists():
        docs = []
        for line in (SHARED / "corpus.jsonl").open(encoding="utf-8"):
            d = json.loads(line)
            name = re.sub(r"[^A-Za-z0-9_.-]", "_", d["_id"])
            docs.append((f"{name}.md", f"# {d.get('title') or name}\n\n{d['text']}\n"))
        queries = [json.loads(line)["text"] for line in (SHARED / "queries.jsonl").open(encoding="utf-8")]
        random.Random(14).shuffle(queries)
        return docs, queries, f"SciFact corpus ({len(docs)} abstracts), SciFact claims as queries"
    rng = random.Random(14)
    vocab = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ra", "so", "ti", "vu", "ze") for b in
             ("bar", "cen", "dol", "fim", "gus", "hon", "jet", "kor", "lum", "mav", "nix", "por", "quil", "rest")]
    docs, queries = [], []
    for i in range(n_synthetic):
        words = [rng.choice(vocab) for _ in range(80)]
        docs.append((f"doc{i:05d}.md", f"# Note {i} {' '.join(words[:4])}\n\n{' '.join(words)}\n"))
        if i % 37 == 0:
            queries.append(" ".join(rng.sample(words, 3)))
    return docs, queries, f"{n_synthetic} synthetic documents (../shared absent)"


def build(root: Path, docs: list[tuple[str, str]]) -> float:
    """Ingest the documents once; returns seconds (0 when the KB was already there)."""
    manifest = root / PROJECT / "manifest.json"
    if manifest.exists():
        files = json.loads(manifest.read_text(encoding="utf-8")).get("files", [])
        if len(files) >= len(docs):
            return 0.0
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run([*kb_cmd(), "init", PROJECT, "--root", str(root)], check=True, capture_output=True)
    src = root / PROJECT / "sources"
    for name, text in docs:
        (src / name).write_text(text, encoding="utf-8")
    from kbwatch.pipeline.ingest import run_ingest
    from kbwatch.pipeline.kb import KnowledgeBase
    from kbwatch.pipeline.logs import setup_logging

    kb = KnowledgeBase(root)
    setup_logging(kb.settings, None, quiet=True)
    t0 = time.perf_counter()
    totals, _ = run_ingest(kb, [PROJECT])
    kb.close()
    print(f"ingested: {totals} in {time.perf_counter() - t0:.0f} s", flush=True)
    return time.perf_counter() - t0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def time_mcp(transport_cm_factory, queries: list[str], warm: int) -> tuple[list[float], dict]:
    import anyio
    from mcp import ClientSession

    times: list[float] = []
    statuses: dict[str, int] = {}

    async def main():
        async with transport_cm_factory() as streams, ClientSession(streams[0], streams[1],
                                                                     read_timeout_seconds=300) as s:
            await s.initialize()
            for q in queries[:warm]:
                await s.call_tool("query_knowledge_base", {"query": q, "name": PROJECT})
            for q in queries:
                t0 = time.perf_counter()
                r = await s.call_tool("query_knowledge_base", {"query": q, "name": PROJECT})
                times.append((time.perf_counter() - t0) * 1000)
                st = "error" if r.is_error else r.structured_content["status"]
                statuses[st] = statuses.get(st, 0) + 1

    anyio.run(main)
    return times, statuses


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "kbwatch-bench-mcp")
    ap.add_argument("--queries", type=int, default=100, help="queries timed through the server")
    ap.add_argument("--ask-queries", type=int, default=15, help="of those, how many as `kbwatch ask` processes")
    ap.add_argument("--synthetic", type=int, default=5000, help="documents when ../shared is absent")
    ap.add_argument("--no-http", action="store_true")
    args = ap.parse_args()

    docs, queries, what = corpus(args.synthetic)
    root = args.dir / "kb"
    build(root, docs)
    queries = queries[: args.queries]
    print(f"knowledge base: {what}; {root}")
    print(f"queries: {len(queries)} through the server (after 5 warm-up calls), {min(args.ask_queries, len(queries))} "
          "as processes", flush=True)

    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "kbwatch", "mcp", "--root", str(root)],
                                   env=child_env(), cwd=str(REPO))
    t0 = time.perf_counter()
    mcp_ms, statuses = time_mcp(lambda: stdio_client(params), queries, warm=5)
    print(f"  (stdio session incl. start-up and warm-up: {time.perf_counter() - t0:.1f} s; statuses {statuses})")
    rows = [("MCP stdio query_knowledge_base (warm server)", mcp_ms)]

    if not args.no_http:
        from mcp.client.streamable_http import streamable_http_client

        port = free_port()
        proc = subprocess.Popen([*kb_cmd(), "mcp", "--root", str(root), "--http", f"127.0.0.1:{port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=child_env(), cwd=str(REPO))
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise SystemExit("kbwatch mcp --http did not start")
                    time.sleep(0.1)
            http_ms, _ = time_mcp(lambda: streamable_http_client(f"http://127.0.0.1:{port}/mcp"), queries, warm=5)
            rows.append(("MCP streamable HTTP query_knowledge_base", http_ms))
        finally:
            proc.terminate()
            proc.wait(timeout=10)

    ask_ms = []
    for q in queries[: args.ask_queries]:
        t0 = time.perf_counter()
        subprocess.run([*kb_cmd(), "ask", PROJECT, q, "--json", "--root", str(root)], check=True,
                       capture_output=True, env=child_env(), cwd=str(REPO))
        ask_ms.append((time.perf_counter() - t0) * 1000)
    rows.append(("`kbwatch ask NAME q --json` process", ask_ms))
    # the same first queries through the server, for a like-for-like ratio
    same = mcp_ms[: len(ask_ms)]

    print()
    print(f"| path | queries | p50 ms | p95 ms | mean ms |")
    print(f"|---|---:|---:|---:|---:|")
    for label, ms in rows:
        print(f"| {label} | {len(ms)} | {pct(ms, 50):.1f} | {pct(ms, 95):.1f} | {statistics.mean(ms):.1f} |")
    print()
    print(f"ratio ask process / warm MCP stdio, p50 on the same {len(ask_ms)} queries: "
          f"{pct(ask_ms, 50) / pct(same, 50):.0f}x ({pct(ask_ms, 50):.0f} ms vs {pct(same, 50):.1f} ms); "
          f"target p50 <= 25 ms through the server: {'met' if pct(mcp_ms, 50) <= 25 else 'NOT met'} "
          f"({pct(mcp_ms, 50):.1f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
