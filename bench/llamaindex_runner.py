#!/usr/bin/env python3
"""The LlamaIndex side of ``bench/llamaindex_ingest.py``: ingest a folder into a BM25 index on disk.

Runs in the LlamaIndex venv (``/work/li-venv/bin/python``), never in kbwatch's: it imports
nothing from kbwatch. Over ``INPUT`` (a folder of Markdown files):

    SimpleDirectoryReader(INPUT, recursive=True).load_data()
    -> IngestionPipeline(transformations=[SentenceSplitter()]).run(documents=...)
       (``--markdown``: [MarkdownNodeParser(), SentenceSplitter()])
    -> BM25Retriever.from_defaults(nodes=...)      (bm25s + PyStemmer, English stop words)
    -> retriever.persist(OUT)                      (bm25s arrays + corpus JSON; no fsync)

and prints one JSON line: the seconds of each step and their total (``work``, imports
excluded), the import time, the counts of documents and nodes, and the package versions.

Offline: SentenceSplitter counts tokens with tiktoken's ``cl100k_base`` and LlamaIndex reads
NLTK's ``stopwords``/``punkt_tab`` on first use; both would be downloaded unless found locally.
llama-index-core ships them inside the wheel (``llama_index/core/_static/tiktoken_cache`` and
``.../nltk_cache``); this runner points ``TIKTOKEN_CACHE_DIR`` and ``NLTK_DATA`` at those
folders in the venv before importing LlamaIndex (unless already set), and refuses any outgoing
TCP connection (``socket.connect`` raises), so a run that would fetch a file fails loudly
instead. bm25s's English stop words are built into bm25s (no download).

    /work/li-venv/bin/python bench/llamaindex_runner.py INPUT OUT [--markdown] [--check]

``--check`` also reloads the index from OUT with ``BM25Retriever.from_persist_dir`` and runs a
query (untimed), to show the index on disk is searchable.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import sys
import time
from pathlib import Path

T_START = time.perf_counter()


def _offline() -> None:
    """Point the download caches at the data shipped in llama-index-core; forbid TCP connects."""
    spec = importlib.util.find_spec("llama_index.core")
    if spec is None or not spec.submodule_search_locations:
        print(json.dumps({"error": "llama-index-core is not installed in " + sys.executable}))
        sys.exit(2)
    static = Path(list(spec.submodule_search_locations)[0]) / "_static"
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(static / "tiktoken_cache"))
    os.environ.setdefault("NLTK_DATA", str(static / "nltk_cache"))
    real_connect = socket.socket.connect

    def connect(self, address):  # noqa: ANN001
        if self.family in (socket.AF_INET, socket.AF_INET6):
            raise OSError(f"llamaindex_runner: network access attempted to {address!r} (offline run)")
        return real_connect(self, address)

    socket.socket.connect = connect


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for pkg in ("llama-index-core", "llama-index-retrievers-bm25", "bm25s", "PyStemmer", "tiktoken", "nltk"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input", type=Path, help="folder of Markdown files (read recursively)")
    ap.add_argument("out", type=Path, help="folder the BM25 index is persisted to")
    ap.add_argument("--markdown", action="store_true", help="MarkdownNodeParser before the SentenceSplitter")
    ap.add_argument("--check", action="store_true", help="reload the persisted index and query it (untimed)")
    args = ap.parse_args(argv)
    _offline()

    t_imp = time.perf_counter()
    try:
        from llama_index.core import SimpleDirectoryReader
        from llama_index.core.ingestion import IngestionPipeline
        from llama_index.core.node_parser import MarkdownNodeParser, SentenceSplitter
        from llama_index.retrievers.bm25 import BM25Retriever
    except ImportError as e:
        print(json.dumps({"error": f"{sys.executable}: {e}"}))
        return 2
    t0 = time.perf_counter()

    docs = SimpleDirectoryReader(str(args.input), recursive=True).load_data()
    t1 = time.perf_counter()
    transformations = ([MarkdownNodeParser()] if args.markdown else []) + [SentenceSplitter()]
    nodes = IngestionPipeline(transformations=transformations).run(documents=docs)
    t2 = time.perf_counter()
    retriever = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=5)
    t3 = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    retriever.persist(str(args.out))
    t4 = time.perf_counter()

    res = {
        "docs": len(docs), "nodes": len(nodes),
        "start_to_imports": t_imp - T_START, "imports": t0 - t_imp,
        "read": t1 - t0, "pipeline": t2 - t1, "bm25": t3 - t2, "persist": t4 - t3, "work": t4 - t0,
        "versions": _versions(),
    }
    if args.check:
        loaded = BM25Retriever.from_persist_dir(str(args.out))
        hits = loaded.retrieve("backup snapshots warranty")
        res["check_hits"] = len(hits)
        res["check_top"] = hits[0].node.metadata.get("file_name") if hits else None
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
